"""peers_elements.py — scripts/peers's audit of the element casts (fp4, fp6, fp8 as MX elements)
and the E8M0 casts of ml_dtypes and torch, against fp8kv's exact oracle.

Element casts: each peer casts every f16 and bf16 input (from the 16-bit type itself) and a set
of f32 inputs (every value and midpoint of the element grid and their f32 neighbours, the
saturation edge, the subnormal region, ±0, ±Inf, NaNs, powers of two, then seeded random bit
patterns and random values in the element's range) to float4_e2m1fn, float6_e2m3fn,
float6_e3m2fn, float8_e4m3fn and float8_e5m2. The expected code of each input is the oracle's
element cast under scale 1: `fp8kv encode-block --format <MX format> --scale-code 7f`
(SAT(RNE(x)): round to nearest even on the grid, saturate to ±max, ±Inf too). A NaN input has no
code there (the formats have no NaN): what the peer gives it is reported, not judged. The grid
values (to name a mismatch's kind: tie, overflow, subnormal) come from `fp8kv decode-block`.

E8M0: fp8kv has no semantic for a bare cast to E8M0; each peer's float8_e8m0fnu codes for
powers of two, values between them, 0, subnormals, Inf and NaN are reported as they are.

Each peer runs in a child process (python peers_elements.py --worker PEER ...) that writes
LOGS/elements_<peer>.json; scripts/peers.py calls run() and report_lines().
"""
import json
import os
import subprocess
import sys
import traceback

from peer_casts import MlDtypes, NotInstalled, Torch

# element: (the MX block format whose elements it is, its width in bits, min normal, the dtype
# name in ml_dtypes and torch)
ELEMENTS = {
    "e2m1": ("mxfp4", 4, 1.0, "float4_e2m1fn"),
    "e2m3": ("mxfp6_e2m3", 6, 1.0, "float6_e2m3fn"),
    "e3m2": ("mxfp6_e3m2", 6, 0.25, "float6_e3m2fn"),
    "e4m3": ("mxfp8_e4m3", 8, 2.0**-6, "float8_e4m3fn"),
    "e5m2": ("mxfp8_e5m2", 8, 2.0**-14, "float8_e5m2"),
}
PEERS = ("ml_dtypes", "torch-cpu", "torch-cuda")
DOMAINS = ("f32", "f16", "bf16")
SCALE_ONE = "7f"  # E8M0 code of 2^0
EXAMPLES = 4  # first examples per mismatch kind
NO_ORACLE = ("no oracle: the fp8kv given has no `encode-block --scale-code` (a build without "
             "MPFR, as on the GPU machine; give --element-oracle, a CPU build)")


def np_():
    import numpy as np

    return np


# ---- the oracle: fp8kv encode-block / decode-block through pipes ------------------------------


def hex_words(bits):
    """The f32 bits as the text of `0x%08x` words, 32 to a line (bits: uint32, len % 32 == 0)."""
    np = np_()
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    shifts = np.arange(28, -4, -4, dtype=np.uint32)
    nib = (bits[:, None] >> shifts) & 0xF
    words = np.empty((len(bits), 11), dtype=np.uint8)
    words[:, 0], words[:, 1] = ord("0"), ord("x")
    words[:, 2:10] = digits[nib]
    words[:, 10] = ord(" ")
    words[31::32, 10] = ord("\n")
    return words.tobytes()


def parse_hex_codes(text):
    """The hex words (1 or 2 digits) of text as an integer array."""
    np = np_()
    lut = np.zeros(256, np.int64)
    for i, c in enumerate(b"0123456789abcdef"):
        lut[c] = i
    w = np.array(text.split(), dtype="S2").view(np.uint8).reshape(-1, 2)
    one = w[:, 1] == 0
    return np.where(one, lut[w[:, 0]], lut[w[:, 0]] * 16 + lut[w[:, 1]])


def oracle_codes(fp8kv, element, bits):
    """The oracle's element codes of the f32 bits (no NaN) under scale 1."""
    np = np_()
    fmt = ELEMENTS[element][0]
    pad = (-len(bits)) % 32
    x = np.concatenate([bits, np.zeros(pad, np.uint32)])
    r = subprocess.run([fp8kv, "encode-block", "--format", fmt, "--scale-code", SCALE_ONE],
                       input=hex_words(x), capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"fp8kv encode-block --format {fmt}: exit {r.returncode}: "
                           f"{r.stderr.decode(errors='replace').strip()}")
    codes = parse_hex_codes(r.stdout).reshape(-1, 33)
    if np.any(codes[:, 0] != int(SCALE_ONE, 16)):
        raise RuntimeError("encode-block --scale-code printed another scale")
    return codes[:, 1:].reshape(-1)[: len(bits)]


def element_grid(fp8kv, element):
    """The f32 value of every code of element under scale 1 (fp8kv decode-block), float64."""
    np = np_()
    fmt, width = ELEMENTS[element][:2]
    codes = [f"{c:x}" for c in range(1 << width)]
    lines = []
    for i in range(0, len(codes), 32):
        row = codes[i:i + 32] + ["0"] * (32 - len(codes[i:i + 32]))
        lines.append(" ".join([SCALE_ONE] + row))
    r = subprocess.run([fp8kv, "decode-block", "--format", fmt, "--hex"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"fp8kv decode-block --format {fmt}: {r.stderr.strip()}")
    bits = np.array([int(w, 16) for w in r.stdout.split()], dtype=np.uint32)
    return bits[: 1 << width].view(np.float32).astype(np.float64)


# ---- the inputs --------------------------------------------------------------------------------


def f32_inputs(grid, count, seed):
    """The f32 inputs of an element's audit (uint32 bits): the edges, then seeded random ones up
    to count in all (the edges are always there)."""
    np = np_()
    pos = np.unique(grid[np.isfinite(grid) & (grid >= 0)])
    top_step = pos[-1] - pos[-2]
    mids = (pos[:-1] + pos[1:]) / 2
    edges = np.concatenate([pos, mids, [pos[-1] + top_step / 2, pos[-1] + top_step,
                                        2 * pos[-1], pos[1] / 4]])
    e32 = edges.astype(np.float32)
    assert np.all(e32.astype(np.float64) == edges), "an edge is not an f32"
    b = e32.view(np.uint32).astype(np.int64)
    near = (b[:, None] + np.arange(-3, 4)[None, :]).reshape(-1)
    special = np.array([0, 1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000,
                        0x7F800001, 0x7FFFFFFF], dtype=np.int64)
    pow2 = np.arange(1, 255, dtype=np.int64) << 23
    near_pow2 = np.concatenate([pow2 - 1, pow2, pow2 + 1, pow2 | 0x400000])
    mags = np.concatenate([near, special, near_pow2])
    mags = mags[(mags >= 0) & (mags <= 0x7FFFFFFF)]
    fixed = np.unique(np.concatenate([mags, mags | 0x80000000])).astype(np.uint32)
    rng = np.random.default_rng(seed)
    left = max(0, count - len(fixed))
    raw = rng.integers(0, 1 << 32, size=left // 2, dtype=np.uint32)
    lo, hi = np.log2(pos[1]) - 3, np.log2(pos[-1]) + 2  # the element's range, and beyond
    inrange = np.exp2(rng.uniform(lo, hi, size=left - left // 2)).astype(np.float32)
    inrange *= np.where(rng.integers(0, 2, size=len(inrange)) == 1, -1, 1).astype(np.float32)
    return np.concatenate([fixed, raw, inrange.view(np.uint32)])


def domain_inputs(domain, f32_bits):
    """(the array the peer casts, its values as f32 bits) of a domain."""
    np = np_()
    import ml_dtypes

    if domain == "f32":
        return f32_bits.view(np.float32), f32_bits
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(np.float16) if domain == "f16" else bits.view(ml_dtypes.bfloat16)
    return x, x.astype(np.float32).view(np.uint32)


# ---- the peers (inside a worker): scripts/peer_casts.py's, and a planted one --------------------


class PlantedTiesAway(MlDtypes):
    """A planted defect for scripts/test (never among PEERS): ml_dtypes's cast of each value
    nudged one f32 ulp away from zero, so grid midpoints round away from zero. The audit must
    report its tie mismatches."""

    name = "planted-ties-away"

    def cast(self, x, name):
        np = np_()
        y = np.abs(x.astype(np.float32))
        y = np.where(np.isfinite(y), np.nextafter(y, np.float32(np.inf)), y)
        return super().cast(np.copysign(y, x.astype(np.float32)).astype(np.float32), name)


def make_peer(name):
    if name == PlantedTiesAway.name:
        return PlantedTiesAway()
    return MlDtypes() if name == "ml_dtypes" else Torch(name.split("-")[1])


def offered(peer, name):
    """None when peer can cast f32 to dtype name, else why not (computed by trying)."""
    np = np_()
    if peer.dtype(name) is None:
        return f"no {getattr(peer, 'NAMES', {}).get(name, name)} dtype"
    try:
        q = peer.cast(np.array([1.0, -2.0], dtype=np.float32), name)
        if q.shape != (2,):
            return f"the cast to {name} returns shape {q.shape} for 2 inputs (packed)"
    except Exception as e:
        return f"the cast to {name} fails: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return None


# ---- judging one run ---------------------------------------------------------------------------


def judge(element, grid, bits, got, want):
    """The record of one run: mismatches by kind with first examples, NaN and overflow
    behaviour. bits: f32 bits of the inputs; got: the peer's codes; want: the oracle's (any
    value at NaN inputs)."""
    np = np_()
    width, min_normal = ELEMENTS[element][1], ELEMENTS[element][2]
    sign_bit, mask = 1 << (width - 1), (1 << width) - 1
    x = bits.view(np.float32).astype(np.float64)
    nan = np.isnan(x)
    pos = np.unique(grid[np.isfinite(grid) & (grid >= 0)])
    mids = (pos[:-1] + pos[1:]) / 2
    top = pos[-1]
    got = got.astype(np.int64)
    bad = (got != want) & ~nan
    ax = np.abs(x)
    kinds = np.full(len(x), "other", dtype=object)
    kinds[np.isin(ax, mids)] = "tie"
    kinds[(ax < min_normal) & ~np.isin(ax, mids)] = "subnormal range"
    kinds[((got ^ want) == sign_bit) & ((want & ~sign_bit) == 0)] = "sign of zero"
    kinds[(ax > top) & np.isfinite(x)] = "overflow"
    kinds[np.isinf(x)] = "inf"
    kinds[got > mask] = "code out of range"
    out = {"inputs": int(len(x)), "nan_inputs": int(nan.sum()), "judged": int((~nan).sum()),
           "mismatches": int(bad.sum()), "kinds": {}}
    for k in sorted(set(kinds[bad])):
        idx = np.nonzero(bad & (kinds == k))[0]
        ex = [f"0x{bits[i]:08x} ({x[i]:.9g}) => peer 0x{got[i]:02x}, oracle 0x{want[i]:02x}"
              for i in idx[:EXAMPLES]]
        out["kinds"][k] = {"count": int(len(idx)), "examples": ex}

    def spread(sel):
        vals, counts = np.unique(got[sel], return_counts=True)
        return {f"0x{v:02x}": int(c) for v, c in zip(vals, counts)}

    out["nan"] = {s: spread(nan & (np.signbit(x) == (s == "-"))) for s in "+-"}
    over = (ax > top) & np.isfinite(x)
    sat = got == want
    out["overflow"] = {"inputs": int(over.sum()), "saturated": int((over & sat).sum()),
                       "codes": spread(over & ~sat)}
    out["inf"] = {s: spread(np.isinf(x) & (np.signbit(x) == (s == "-"))) for s in "+-"}
    out["verdict"] = "conformant" if not out["mismatches"] else "not conformant"
    return out


def e8m0_inputs():
    """The E8M0 probe inputs: (f32 bits, label of each)."""
    np = np_()
    labels, vals = [], []
    for k in range(-149, 128):
        vals.append(np.float32(np.ldexp(1.0, k)))
        labels.append("2^k, k in [-127, 127]" if k >= -127 else "2^k, k in [-149, -128]")
    for m, lab in ((1 + 2.0**-23, "2^k(1+ulp)"), (1.25, "1.25*2^k"), (1.5 - 2.0**-23, "(1.5-ulp)*2^k"),
                   (1.5, "1.5*2^k"), (1.5 + 2.0**-23, "(1.5+ulp)*2^k"), (1.75, "1.75*2^k"),
                   (2 - 2.0**-23, "(2-ulp)*2^k")):
        for k in range(-126, 126):
            vals.append(np.float32(np.ldexp(m, k))), labels.append(lab)
    for v, lab in ((0.0, "+0"), (-0.0, "-0"), (-1.0, "-1"), (-3.0, "-3"),
                   (2.0**-149, "min subnormal 2^-149"), (2.0**-128, "2^-128"),
                   (1.5 * 2.0**-127, "1.5*2^-127"), (np.inf, "+Inf"), (-np.inf, "-Inf"),
                   (np.nan, "NaN"), (3.4028234663852886e38, "FLT_MAX"),
                   (1.5 * 2.0**127, "1.5*2^127")):
        vals.append(np.float32(v)), labels.append(lab)
    return np.array(vals, dtype=np.float32).view(np.uint32), labels


def e8m0_summary(bits, labels, got):
    """What the peer's E8M0 codes say, per kind of input: for 2^k and the values between
    powers, how often the code is 2^k (down), 2^(k+1) (up), other; each special's code."""
    np = np_()
    x = bits.view(np.float32).astype(np.float64)
    rows = []
    for lab in dict.fromkeys(labels):
        idx = [i for i, l in enumerate(labels) if l == lab]
        if len(idx) == 1 or "-128]" in lab:  # no E8M0 below 2^-127: the codes themselves
            vals, counts = np.unique(got[idx], return_counts=True)
            rows.append([lab, ", ".join(f"0x{v:02x}" + (f" ×{c}" if len(idx) > 1 else "")
                                        for v, c in zip(vals, counts))])
            continue
        k = np.floor(np.log2(x[idx])).astype(int)
        g = got[idx].astype(int)
        down = int(np.sum(g == k + 127))
        up = int(np.sum(g == k + 128))
        rows.append([lab, {"inputs": len(idx), "down (2^k)": down, "up (2^(k+1))": up,
                           "other": len(idx) - down - up,
                           "other examples": [f"0x{bits[i]:08x} => 0x{got[i]:02x}"
                                              for i, gi, ki in zip(idx, g, k)
                                              if gi not in (ki + 127, ki + 128)][:3]}])
    return rows


def e8m0_rule(rows):
    """The rounding between powers of two that rows show, in words (None when mixed)."""
    way = {}
    for lab, v in rows:
        if isinstance(v, dict):
            way[lab] = ("down" if v["down (2^k)"] == v["inputs"] else
                        "up" if v["up (2^(k+1))"] == v["inputs"] else "mixed")
    probe = tuple(way.get(k) for k in ("2^k(1+ulp)", "(1.5-ulp)*2^k", "1.5*2^k",
                                       "(1.5+ulp)*2^k", "(2-ulp)*2^k"))
    return {("down",) * 5: "down to 2^floor(log2 x) (truncation: OCP floor when cast from "
                           "amax / 2^emax)",
            ("up",) * 5: "up to 2^ceil(log2 x) (rceil when cast from amax / max_elem)",
            ("down", "down", "up", "up", "up"): "to the nearer power on the significand, "
                                                "1.5·2^k up (neither floor nor rceil)",
            ("down", "down", "down", "up", "up"): "to the nearer power on the significand, "
                                                  "1.5·2^k down (neither floor nor rceil)",
            }.get(probe)


# ---- the worker ----------------------------------------------------------------------------


def worker(peer_name, out, fp8kv, f32_count):
    np = np_()
    np.seterr(all="ignore")
    path = os.path.join(out, "logs", f"elements_{peer_name}.json")
    state = {"peer": peer_name, "status": "started", "runs": [], "not_offered": {}}

    def save():
        with open(path + ".tmp", "w") as f:
            json.dump(state, f, indent=2, sort_keys=True)
        os.replace(path + ".tmp", path)

    try:
        peer = make_peer(peer_name)
    except NotInstalled as e:
        state.update(status="not installed", error=str(e))
        save()
        return 0
    state.update(status="running", version=peer.version, device=peer.device)
    if fp8kv == "-":  # no oracle (run() says why): the E8M0 table only
        state["no_oracle"] = NO_ORACLE
    for element, (fmt, _, _, dname) in ELEMENTS.items():
        if fp8kv == "-":
            break
        why = offered(peer, dname)
        if why:
            state["not_offered"][dname] = why
            continue
        grid = element_grid(fp8kv, element)
        f32_bits = f32_inputs(grid, f32_count, 0xE1E)
        for domain in DOMAINS:
            x, bits = domain_inputs(domain, f32_bits)
            want = np.zeros(len(bits), np.int64)
            ok = ~np.isnan(bits.view(np.float32))
            want[ok] = oracle_codes(fp8kv, element, bits[ok])
            got = peer.cast(x, dname)
            rec = {"element": element, "dtype": dname, "oracle_format": fmt, "domain": domain,
                   "call": peer.describe(domain, dname)}
            rec.update(judge(element, grid, bits, got, want))
            state["runs"].append(rec)
            print(f"peers: {peer_name} {dname} {domain}: {rec['mismatches']} of {rec['judged']} "
                  f"judged inputs differ", file=sys.stderr, flush=True)
            save()
    why = offered(peer, "float8_e8m0fnu")
    if why:
        state["not_offered"]["float8_e8m0fnu"] = why
    else:
        bits, labels = e8m0_inputs()
        got = peer.cast(bits.view(np.float32), "float8_e8m0fnu")
        state["e8m0"] = {"call": peer.describe("f32", "float8_e8m0fnu"),
                         "rows": e8m0_summary(bits, labels, got)}
    state["status"] = "done"
    save()
    return 0


def run(args, logs, progress):
    """Runs each peer's element audit in a child process; returns {peer: state}."""
    states = {}
    fp8kv = args.element_oracle or args.fp8kv
    try:
        r = subprocess.run([fp8kv, "encode-block", "--help"], capture_output=True, text=True)
        oracle = r.returncode == 0 and "--scale-code" in r.stdout
    except OSError:
        oracle = False
    for p in PEERS:
        if p not in args.only:
            continue
        if not oracle:  # a build without the MPFR oracle (the GPU build), or an older fp8kv
            progress(f"{p}: element casts not run: {fp8kv}: {NO_ORACLE}")
        cmd = [sys.executable, os.path.abspath(__file__), p, args.out, fp8kv if oracle else "-",
               str(args.element_f32)]
        progress(f"{p}: element casts (fp4/fp6/fp8 under scale 1) and E8M0")
        with open(os.path.join(logs, f"elements_{p}.log"), "wb") as log:
            try:
                r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                                   timeout=args.deadline or None)
                rc = r.returncode
            except subprocess.TimeoutExpired:
                rc = "timed out"
        try:
            with open(os.path.join(logs, f"elements_{p}.json")) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = {"peer": p, "runs": []}
        if rc != 0 or st.get("status") not in ("done", "not installed"):
            st["status"] = "error"
            st["error"] = f"worker exit {rc} (log logs/elements_{p}.log)"
        states[p] = st
        bad = [r for r in st.get("runs", []) if r["mismatches"]]
        progress(f"{p}: element casts {st['status']}: {len(st.get('runs', []))} runs, "
                 f"{len(bad)} with mismatches" + (f"; {st['error']}" if "error" in st else ""))
    return states


# ---- the report --------------------------------------------------------------------------------


def run_summary(r):
    kinds = ", ".join(f"{k} {v['count']}" for k, v in sorted(r["kinds"].items()))
    return f"{r['mismatches']} ({kinds})" if r["mismatches"] else "0"


def behaviour(r):
    """NaN, Inf and overflow handling of a run, in words (from the run's counts)."""
    def codes(d):
        return ", ".join(f"{c} ×{n}" for c, n in d.items()) or "—"
    o = r["overflow"]
    sat = (f"saturates {o['saturated']} of {o['inputs']}" if o["inputs"] else "no input")
    if o["codes"]:
        sat += f"; else {codes(o['codes'])}"
    return (f"+NaN → {codes(r['nan']['+'])}; −NaN → {codes(r['nan']['-'])}; "
            f"+Inf → {codes(r['inf']['+'])}; −Inf → {codes(r['inf']['-'])}; overflow: {sat}")


def report_lines(states):
    """The report.md section and the report.json part ({"element_casts", "e8m0"})."""
    L = ["## Element casts: fp4, fp6 (and fp8 as MX elements) under fp8kv's oracle", "",
         "Each peer casts every f16 and bf16 input and a set of f32 inputs (every grid value and "
         "midpoint of the element and their f32 neighbours, the saturation edge, the subnormal "
         "region, ±0, ±Inf, NaNs, powers of two, seeded random ones); each code is compared "
         "with the oracle's element cast under scale 1, `fp8kv encode-block --format <mx "
         "format> --scale-code 7f` (round to nearest even on the grid, saturate to ±max, ±Inf "
         "too). NaN inputs have no code in these formats: not judged; what the peer gives them "
         "is shown. Mismatch kinds: tie (a grid midpoint), overflow (|x| > max, finite), inf, "
         "subnormal range, sign of zero, other.", ""]
    runs, not_run, errors, notes = [], [], [], []
    for p, st in states.items():
        if st["status"] == "not installed":
            not_run.append({"peer": p, "reason": "not installed", "detail": st.get("error")})
            continue
        if st.get("no_oracle"):
            not_run.append({"peer": p, "reason": "no oracle", "detail": st["no_oracle"]})
        if st["status"] == "error":
            errors.append({"peer": p, "error": st.get("error")})
        for d, why in sorted(st.get("not_offered", {}).items()):
            notes.append(f"- {p} {st.get('version', '')}: {d} not run: {why}.")
        for r in st.get("runs", []):
            runs.append(dict(r, peer=p, version=st.get("version"), device=st.get("device")))
    bad = [r for r in runs if r["mismatches"]]
    L.append("**Findings** (computed from the runs below):")
    L.append("")
    if runs and not bad:
        L.append(f"- every run ({len(runs)}) matches the oracle on every judged input.")
    for r in bad:
        L.append(f"- {r['peer']} {r['dtype']} {r['domain']}: {run_summary(r)} mismatches of "
                 f"{r['judged']}: not conformant as an MX element cast.")
    for r in runs:  # NaN: no code in the format, what the peer does instead (its f32 run)
        if r["domain"] == "f32" and r["nan_inputs"]:
            nan = "; ".join(f"{s}NaN → " + ", ".join(f"{c} ×{n}" for c, n in r["nan"][s].items())
                            for s in "+-")
            L.append(f"- {r['peer']} {r['dtype']}: NaN inputs (not judged) give {nan}.")
    if not runs:
        L.append("- no element-cast run finished.")
    L += notes
    for n in not_run:
        L.append(f"- {n['peer']}: not run ({n['detail'] or n['reason']}).")
    for e in errors:
        L.append(f"- {e['peer']}: **error**: {e['error']}.")
    L += ["", "| peer | version | dtype | oracle | domain | inputs | NaN inputs | mismatches "
          "(by kind) | verdict | NaN, Inf, overflow |", "|---|---|---|---|---|---:|---:|---|---|---|"]
    for r in runs:
        L.append(f"| {r['peer']} | {r['version']} | {r['dtype']} | {r['oracle_format']} "
                 f"@7f | {r['domain']} | {r['inputs']} | {r['nan_inputs']} | {run_summary(r)} | "
                 f"{r['verdict']} | {behaviour(r)} |")
    for n in not_run:
        L.append(f"| {n['peer']} | | | | | | | | not run ({n['reason']}) | |")
    L.append("")
    for r in bad:
        L.append(f"- {r['peer']} {r['dtype']} {r['domain']} (`{r['call']}`), first examples:")
        L.append("")
        L.append("  ```")
        for k, v in sorted(r["kinds"].items()):
            for ex in v["examples"]:
                L.append(f"  {k}: {ex}")
        L.append("  ```")
    L += ["", "## E8M0 casts (information, no verdict)", "",
          "fp8kv defines no bare cast to E8M0 (docs/DESIGN.md §10 defines the MX scale rules). "
          "What each peer's float8_e8m0fnu cast from f32 gives, so that an engine deriving its "
          "scale by a cast knows which rule it inherits: for 2^k and values between powers of "
          "two, how many codes are 2^k (down) or 2^(k+1) (up); for each special, its code "
          "(0xff is NaN).", ""]
    e8 = {p: st["e8m0"] for p, st in states.items() if "e8m0" in st}
    if not e8:
        L.append("No peer offered an E8M0 cast.")
    for p, d in e8.items():
        rule = e8m0_rule(d["rows"])
        L += [f"### {p} (`{d['call']}`)", "",
              f"Between powers of two it rounds {rule or 'in no single way (see the rows)'}.", "",
              "| input | result |", "|---|---|"]
        for lab, v in d["rows"]:
            if isinstance(v, str):
                L.append(f"| {lab} | {v} |")
            else:
                ex = f"; e.g. {', '.join(v['other examples'])}" if v["other examples"] else ""
                L.append(f"| {lab} ({v['inputs']} inputs) | down {v['down (2^k)']}, up "
                         f"{v['up (2^(k+1))']}, other {v['other']}{ex} |")
        L.append("")
    L.append("Logs: `logs/elements_<peer>.{log,json}`.")
    L.append("")
    doc = {"element_casts": {"runs": runs, "not_run": not_run, "errors": errors,
                             "not_offered": {p: st.get("not_offered", {})
                                             for p, st in states.items()}},
           "e8m0": e8}
    return L, doc


if __name__ == "__main__":
    try:
        sys.exit(worker(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
