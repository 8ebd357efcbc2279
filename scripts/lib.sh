# scripts/lib.sh — what the fp8kv scripts share: the repo root, the build, a python with numpy.
# Sourced, not run.

FP8KV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FP8KV_JOBS=${FP8KV_JOBS:-$(nproc)}

# fp8kv_build DIR [cmake options...]: configures (Ninja, once) and builds the tree into DIR.
fp8kv_build() {
  local dir=$1
  shift
  mkdir -p "$dir"
  cmake -S "$FP8KV_ROOT" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log" >&2
    echo "fp8kv: cmake configure failed (log above)" >&2
    return 2
  }
  cmake --build "$dir" -j "$FP8KV_JOBS"
}

# fp8kv_python: prints a python3 that can import numpy, or fails: the repo's .venv first
# (scripts/bootstrap makes it over Debian's python, with ml_dtypes for scripts/peers), then
# Debian's (where pyenv and friends may shadow it without numpy), then the one on PATH.
fp8kv_python() {
  local py
  for py in "$FP8KV_ROOT/.venv/bin/python3" /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' 2>/dev/null; then
      command -v "$py"
      return 0
    fi
  done
  echo "fp8kv: no python3 with numpy found (scripts/bootstrap installs python3-numpy)" >&2
  return 2
}

# The Debian 12 packages the scripts install, the one list of them. apt-get runs with
# --no-install-recommends, so what a step needs is named here even where Debian would only
# recommend it (clang's sanitizer runtimes, libclang-rt-14-dev through libclang-rt-dev, are a
# Recommends of libclang-common-14-dev; clang's OpenMP runtime, libomp-dev, not even that).
# scripts/bootstrap installs FP8KV_PACKAGES (the build, the tests, the HTML check);
# scripts/gpu-compile-check the GPU toolchains when it runs (large, only it needs them).
FP8KV_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  clang libomp-dev libclang-rt-dev # the sanitizer and fuzzer builds: OpenMP, ASan/UBSan/libFuzzer
  clang-format                     # scripts/check-format
  git                              # scripts/test: audit-codec's scratch repository
  libmpfr-dev libgmp-dev libcriterion-dev libjansson-dev libssl-dev
  python3 python3-numpy python3-venv python3-pip ca-certificates # ca-certificates: pip to PyPI
  chromium                                                       # scripts/check-html
  xxd  # the suites' shell pipelines turn hex codes into bytes (t_plugin_cli)
  time # scripts/campaign: the peak memory of each run (GNU time)
)
FP8KV_PACKAGES_HIP=(hipcc libamdhip64-dev) # Debian's ROCm 5.2 HIP (clang 15), ~600 MB
FP8KV_PACKAGES_CLANG19=(clang-19)          # the AMD targets hipcc 5.2 does not know

# fp8kv_apt_install WHO PACKAGE...: installs those of the Debian packages that are missing
# (apt-get, no recommends; as root or through sudo), saying so as WHO. Fails when apt-get does.
fp8kv_apt_install() {
  local who=$1 p sudo="" missing=()
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$who: installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq &&
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
