#!/usr/bin/env python3
"""scripts/bench-python.py — what judging through the Python package (python/fp8kv) costs, next to
the same judgements by the C CLI in the same run.

    .venv/bin/python scripts/bench-python.py [--profile P] [--vectors DIR] [--fp8kv CLI]
                                             [--no-engine] [--no-pytest]

Measures, on this machine, with the package the interpreter imports:
  - loading the golden KV cases of a profile (kv_cases: the vector set verified in full, every
    case file read and checked);
  - judging every store of the profile (judge_store on the golden caches: a conformant store,
    so the figure is the judge's own cost), then every gather (f32) and every decode step
    (judge_attention of the golden attention output under f32);
  - the engine suite's attention (kv_cases(suite="engine")): generating its cases, the golden
    output of each (EngineCase.reference), and judging it (judge_attention under f32);
  - the pytest plugin's collection of examples/python (pytest --collect-only), its tests and
    seconds;
  - the baseline: `fp8kv check-kv --subject cpu-reference` on the same profile (the golden
    suite, then the engine suite), which runs the CPU kernels and judges them in C.
Wall-clock seconds; nothing is asserted. Exit 0 measured, 2 bad arguments or a judge that
refused its input (the message says which).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

import fp8kv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(fn):
    """(seconds, fn()) by the wall clock."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def line(what, seconds, count=None):
    per = f", {seconds / count * 1e3:.2f} ms each" if count else ""
    many = f" ({count})" if count is not None else ""
    print(f"{what}{many}: {seconds:.3f} s{per}", flush=True)


def bench_golden(profile, vectors):
    seconds, cases = timed(lambda: fp8kv.kv_cases(profile, vectors))
    line(f"python: load the golden KV cases of {profile}", seconds, len(cases))
    total = 0.0
    for c in cases:
        t, _ = timed(lambda: c.judge_store(c.key_cache, c.value_cache, c.k_scale_cache,
                                           c.v_scale_cache))
        total += t
    line("python: judge_store, every golden case (conformant caches)", total, len(cases))
    return cases


def bench_engine(profile, vectors):
    seconds, cases = timed(lambda: fp8kv.kv_cases(profile, vectors, suite="engine"))
    line(f"python: generate the engine suite's cases of {profile}", seconds, len(cases))
    ref_total = judge_total = 0.0
    for c in cases:
        t, (exact, _, _) = timed(lambda: c.reference("f32"))
        ref_total += t
        out = exact.astype(np.float32)
        t, _ = timed(lambda: c.judge_attention(out, arithmetic="f32"))
        judge_total += t
    line("python: EngineCase.reference(f32), every engine case", ref_total, len(cases))
    line("python: judge_attention(f32) of the golden output, every engine case", judge_total,
         len(cases))


def bench_pytest():
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
           os.path.join(ROOT, "examples", "python")]
    seconds, done = timed(lambda: subprocess.run(cmd, capture_output=True, text=True,
                                                 cwd=os.path.join(ROOT, "examples", "python")))
    if done.returncode != 0:
        print(f"pytest --collect-only examples/python: not measured (exit {done.returncode}):\n"
              f"{done.stdout[-2000:]}{done.stderr[-2000:]}", flush=True)
        return
    collected = [ln for ln in done.stdout.splitlines() if "collected" in ln or " tests " in ln]
    print(f"pytest plugin: collect examples/python: {seconds:.3f} s "
          f"({collected[-1].strip() if collected else 'count not printed'})", flush=True)


def bench_cli(cli, profile, vectors, suite):
    if not cli:
        print(f"baseline: fp8kv check-kv --suite {suite}: not run (no --fp8kv CLI)")
        return
    cmd = [cli, "check-kv", "--subject", "cpu-reference", "--profile", profile, "--vectors",
           vectors, "--suite", suite]
    seconds, done = timed(lambda: subprocess.run(cmd, capture_output=True, text=True))
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()
    print(f"baseline: fp8kv check-kv --subject cpu-reference --suite {suite} --profile "
          f"{profile} (CPU kernels run and judged in C): {seconds:.3f} s, exit "
          f"{done.returncode}: {last}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="e4m3fn_satfinite")
    ap.add_argument("--vectors", default=os.path.join(ROOT, "vectors"))
    ap.add_argument("--fp8kv", default=os.path.join(ROOT, "build", "conformance", "fp8kv"),
                    help="the CLI for the baseline (default: build/conformance/fp8kv)")
    ap.add_argument("--no-engine", action="store_true", help="leave out the engine suite")
    ap.add_argument("--no-pytest", action="store_true", help="leave out pytest's collection")
    args = ap.parse_args()
    if args.profile not in fp8kv.profiles():
        ap.error(f"--profile {args.profile}: not a profile ({', '.join(fp8kv.profiles())})")
    cli = args.fp8kv if os.access(args.fp8kv, os.X_OK) else None
    print(f"fp8kv {fp8kv.__version__} from {os.path.dirname(fp8kv.__file__)}, numpy "
          f"{np.__version__}, python {sys.version.split()[0]}", flush=True)
    try:
        bench_golden(args.profile, args.vectors)
        bench_cli(cli, args.profile, args.vectors, "golden")
        if not args.no_engine:
            bench_engine(args.profile, args.vectors)
            bench_cli(cli, args.profile, args.vectors, "engine")
        if not args.no_pytest:
            bench_pytest()
    except fp8kv.Fp8kvError as e:
        print(f"bench-python: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
