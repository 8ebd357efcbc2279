#!/usr/bin/env python3
"""Writes the seed corpora of conformance/fuzz/corpus/ from the committed vectors.

Run from anywhere (python3 with numpy): each harness gets a few valid inputs to mutate from.
The seeds are committed; rerun this when the vectors or a harness's input format change.
"""
import hashlib
import io
import json
import pathlib

import numpy as np

root = pathlib.Path(__file__).resolve().parents[2]
vectors = root / "vectors"
corpus = pathlib.Path(__file__).resolve().parent / "corpus"
profile = "e4m3fn_satfinite"


def seed(harness, name, data):
    d = corpus / harness
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


# npy: real vector files, and the shapes and dtypes engines save
for f in ["decode.npy", "kv/case0_meta.npy", "kv/case1_key.npy", "edges_expected.npy"]:
    seed("npy", f.replace("/", "_"), (vectors / profile / f).read_bytes())
seed("npy", "u1_4d.npy", npy_bytes(np.arange(48, dtype=np.uint8).reshape(2, 3, 2, 4)))
seed("npy", "f2.npy", npy_bytes(np.linspace(-2, 2, 9, dtype=np.float16)))
seed("npy", "v2.npy", npy_bytes(np.zeros(4, dtype="V2")))
seed("npy", "i1_3d.npy", npy_bytes(np.arange(-4, 4, dtype=np.int8).reshape(2, 2, 2)))

# manifest: a manifest of the three files the harness places, and their checksums
fixed = ["e4m3fn_satfinite/decode.npy", "e4m3fn_satfinite/edges.txt",
         "e4m3fn_satfinite/kv/case0_meta.npy"]
full = json.loads((vectors / "MANIFEST.json").read_text())
entries = [e for e in full["files"] if e["path"] in fixed]
manifest = dict(full, files=entries)
text = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
sums = b"".join(hashlib.sha256((vectors / p).read_bytes()).hexdigest().encode() + b"  " +
                p.encode() + b"\n" for p in sorted(fixed))
seed("manifest", "fixed_digest", b"\x01" + text + b"\n===SUMS===\n" + sums)
seed("manifest", "stale_digest", b"\x00" + text + b"\n===SUMS===\n" + sums)

# kv_case: each file of each base case, as the replacement of that very file
# (fp8kv_kv_case_files' order; the last two only where the case's scales need them)
names = ["meta", "key", "value", "slot_mapping", "scales", "block_table", "seq_lens", "query",
         "key_cache", "value_cache", "gather_f32", "gather_f16", "gather_bf16", "attention",
         "head_scales", "scale_cache"]
for base in range(15):
    for i, n in enumerate(names):
        path = vectors / profile / "kv" / f"case{base}_{n}.npy"
        if path.exists():
            seed("kv_case", f"case{base}_{n}", bytes([i, base]) + path.read_bytes())

# judge_kv: every profile and case unchanged, and a few flipped bytes
profile_count = len(json.loads((vectors / "MANIFEST.json").read_text())["profiles"])
for p in range(profile_count):
    for c in range(15):
        seed("judge_kv", f"p{p}_c{c}", bytes([p, c]))
seed("judge_kv", "flips", bytes([0, 1]) + b"".join(bytes([i * 37 % 256, i, 0, 1 << (i % 8)]) for i in range(8)))

# cli_input: the inputs of encode/decode, and an argument vector
seed("cli_input", "values", b"0x43e80001\n464\n-1.0625\ninf\n-nan\n0x1.dp+8\n# comment\n"
     b"  7e \n0x7f\n1e-9\n")
seed("cli_input", "args", b"--profile\ne4m3fn_nan\n--case=3\n--quick\n--\n--json\n")
seed("cli_input", "args_e5m2", b"--format\nfloat8_e5m2\n--overflow\ninf\n--inf\nclamp\n")

# report: a run's report cut to a few checks (its summary recounted), one failing, and a report
# of a target compiled but not run
run = json.loads((root / "reports" / "cpu-x86_64" / "report.json").read_text())
gated = [c for c in run["checks"] if c["gated"]][:5]
run["checks"] = gated + [c for c in run["checks"] if not c["gated"]][:2]
run["summary"] = {"passed": 5, "failed": 0, "reported": 2}
seed("report", "run", json.dumps(run, indent=2).encode())
run["checks"][0].update(passed=False, mismatches=3)
run["summary"] = {"passed": 4, "failed": 1, "reported": 2}
run["verdict"] = "nonconformant"
seed("report", "run_failed", json.dumps(run, indent=2).encode())
seed("report", "not_run", (root / "reports" / "gfx942" / "report.json").read_bytes())
