#!/usr/bin/env python3
"""scripts/campaign.py — the categories of scripts/campaign written in Python.

usage: scripts/campaign.py documents FP8KV REPORT COUNT SEED WORK
       scripts/campaign.py python COUNT SEED

documents: COUNT copies of REPORT (a report.json), each altered once, rendered by
  `FP8KV report --from`. An alteration that makes the document contradict itself (a check
  failed or a pass without evidence under the verdict it states, a wrong summary, unverified
  vectors, a "not run" status with checks) must be refused (exit 2); one that leaves it
  consistent (a failure stated as such, a reported check failing, hostile text in its fields)
  must be rendered, with the verdict it states and every string escaped (report.md: one
  verdict line, one title, no control character; report.html: no raw markup of the text;
  junit.xml: well-formed XML); bytes flipped, cut, doubled keys, deep nesting, huge numbers or
  NUL bytes may be refused, and are wrong only if rendered when this script's reading of the
  document (strict JSON, the rules above) finds it damaged or contradicting itself.
python: COUNT calls of the fp8kv package (installed) with hostile inputs, each in a child
  process (a crash is seen as one): correct and altered stores, arrays of every wrong kind,
  hostile case indices, names and scales. A call must give the judgement its input calls for
  or raise Fp8kvError, TypeError or ValueError; never another exception, a crash or a hang.

Prints one line: the category, tried, right, wrong verdicts, crashes, hangs, the peak memory of
one run in MiB (fp8kv's, or the child's for python); each finding on stderr; exit 1 when there
is one, 2 on bad arguments.
"""
import json
import os
import random
import re
import selectors
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
HOSTILE_TEXT = ["\x1b[2K\rverdict=conformant", "a\n# Verdict: conformant\n", "x | pass | y",
                "<script>alert(1)</script>", "[x](javascript:alert(1))", "\u202eevil",
                "\ud7ff\ufffe\uffff", "`code` *bold* _it_", "\u009b31m", "tab\tand\x7f"]


def row(name, fig, peak_kib):
    print(f"{name:<16} {fig['tried']:7d} {fig['right']:8d} {fig['wrong']:14d} {fig['crash']:8d} "
          f"{fig['hang']:6d} {peak_kib // 1024:9d}")


# ---- documents ------------------------------------------------------------------------------

def strict_json(data):
    """The document strict JSON reads (no NaN, no duplicate keys, UTF-8), or None."""
    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    def no_constant(name):
        raise ValueError(name)
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=no_duplicates,
                          parse_constant=no_constant)
    except (ValueError, RecursionError):
        return None


def consistent(doc):
    """Whether a report document agrees with itself (docs/DESIGN.md: its verdict the one its
    checks and verified vectors give, each pass borne out by its counts, a summary counting
    its checks). An independent reading, not fp8kv's code."""
    try:
        checks = doc["checks"]
        if doc["status"] == "not run":
            return doc["verdict"] == "not run" and not checks
        if doc["vectors"]["verified"] is not True:
            return False
        for c in checks:
            if c["passed"] is True and (
                    c["cases"] <= 0 or c["mismatches"] != 0 or c.get("failures")
                    or any(v for v in c.get("class_mismatches", {}).values())
                    or c.get("mismatched_codes") or c.get("bound_ratio", 0) > 1):
                return False
        gated = [c for c in checks if c["gated"]]
        want = "conformant" if gated and all(c["passed"] for c in gated) else "nonconformant"
        s = doc["summary"]
        return (doc["verdict"] == want and s["passed"] == sum(c["passed"] for c in gated)
                and s["failed"] == sum(not c["passed"] for c in gated)
                and s["reported"] == len(checks) - len(gated))
    except (KeyError, TypeError, AttributeError):
        return False


def alter(doc, raw, rng):
    """One alteration: (name, bytes, what is right: 2 refused, 0 rendered, None either)."""
    d = json.loads(raw)
    gated = [c for c in d["checks"] if c["gated"]]
    reported = [c for c in d["checks"] if not c["gated"]]
    c = rng.choice(gated)
    kind = rng.choice(["fail_unstated", "fail_stated", "unearned_pass", "class_mismatch",
                       "verdict_flip", "unverified", "summary_off", "not_run", "reported_fails",
                       "hostile_text", "flip_byte", "cut", "nul", "duplicate_key", "deep",
                       "huge_number"])
    right = 2
    if kind == "fail_unstated":
        c["passed"], c["mismatches"] = False, rng.randint(1, 9)
    elif kind == "fail_stated":
        c["passed"], c["mismatches"] = False, rng.randint(1, 9)
        d["verdict"] = "nonconformant"
        d["summary"]["passed"] -= 1
        d["summary"]["failed"] += 1
        right = 0
    elif kind == "unearned_pass":
        c["mismatches"] = rng.randint(1, 9)
    elif kind == "class_mismatch":
        if not c.get("class_mismatches"):
            c["class_mismatches"] = {"normal": 0}
        c["class_mismatches"][rng.choice(list(c["class_mismatches"]))] = 1
    elif kind == "verdict_flip":
        d["verdict"] = "nonconformant"
    elif kind == "unverified":
        if rng.random() < 0.5:
            d["vectors"]["verified"] = False
        else:
            del d["vectors"]["verified"]
    elif kind == "summary_off":
        d["summary"][rng.choice(["passed", "failed", "reported"])] += 1
    elif kind == "not_run":
        d["status"] = "not run"
    elif kind == "reported_fails":  # (a report with none stays as it is: rendered too)
        if reported:
            rng.choice(reported)["passed"] = False
        right = 0
    elif kind == "hostile_text":
        for field in rng.sample(["device", "runtime", "compiler", "flags", "commit"], 2):
            d[field] = rng.choice(HOSTILE_TEXT)
        for field in ("name", "subject", "detail"):
            c[field] = rng.choice(HOSTILE_TEXT)
        right = 0
    else:  # the byte-level alterations below: refused or rendered, as they leave it
        right = None
    data = json.dumps(d, indent=2).encode()
    if kind == "flip_byte":
        i = rng.randrange(len(data))
        data = data[:i] + bytes([data[i] ^ rng.randint(1, 255)]) + data[i + 1:]
    elif kind == "cut":
        data = data[:rng.randrange(len(data))]
    elif kind == "nul":
        i = rng.randrange(len(data))
        data = data[:i] + b"\0" + data[i:]
    elif kind == "duplicate_key":
        data = data.replace(b'"verdict": "conformant"',
                            b'"verdict": "nonconformant", "verdict": "conformant"', 1)
    elif kind == "deep":
        data = data.replace(b'"runtime": ', b'"runtime": ' + b"[" * 200000, 1)
    elif kind == "huge_number":
        data = data.replace(b'"cases": ', b'"cases": 1' + b"0" * rng.choice([20, 400]) + b", "
                            b'"x": ', 1)
    return kind, data, right


def rendered_right(folder, doc):
    """Why the rendering in folder is wrong for doc, or None."""
    md = open(os.path.join(folder, "report.md"), encoding="utf-8", errors="replace").read()
    lines = md.splitlines()
    verdicts = [x for x in lines if x.startswith("**Verdict")]
    want = f"**Verdict: {doc['verdict']}**"
    if len(verdicts) != 1 or verdicts[0].split(" (")[0] != want:
        return f"report.md verdict lines {verdicts[:3]}, the document says {doc['verdict']}"
    if sum(x.startswith("# ") for x in lines) != 1:
        return "report.md has a forged heading"
    if CONTROL.search(md):
        return "report.md holds a raw control character"
    html = open(os.path.join(folder, "report.html"), encoding="utf-8", errors="replace").read()
    if "<script>alert" in html or 'href="javascript:' in html:
        return "report.html took hostile text as markup"
    try:
        ET.parse(os.path.join(folder, "junit.xml"))
    except ET.ParseError as e:
        return f"junit.xml is not well-formed: {e}"
    return None


def documents(fp8kv, report, count, seed, work):
    rng = random.Random(seed)
    raw = open(report, "rb").read()
    doc = json.loads(raw)
    source = os.path.dirname(report)
    fig = dict(tried=0, right=0, wrong=0, crash=0, hang=0)
    findings = 0
    for _ in range(count):
        kind, data, right = alter(doc, raw, rng)
        folder = os.path.join(work, "doc", os.path.basename(source))
        shutil.rmtree(os.path.join(work, "doc"), ignore_errors=True)
        os.makedirs(folder)
        if os.path.isdir(os.path.join(source, "junit")):
            shutil.copytree(os.path.join(source, "junit"), os.path.join(folder, "junit"))
        with open(os.path.join(folder, "report.json"), "wb") as f:
            f.write(data)
        try:
            r = subprocess.run([fp8kv, "report", "--from", os.path.join(folder, "report.json")],
                               capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = 124
        why = None
        if rc == 124:
            outcome = "hang"
        elif rc < 0 or rc > 128 or rc == 86:  # 86: a sanitizer's report (scripts/campaign)
            outcome = "crash"
        elif rc not in (0, 2):
            outcome, why = "wrong", f"exit {rc}"
        else:
            outcome = "right"
            parsed = strict_json(data)
            if right is not None and rc != right:
                outcome, why = "wrong", f"exit {rc}, right: {right}"
            elif rc == 0 and (parsed is None or not consistent(parsed)):
                outcome, why = "wrong", "rendered a damaged or self-contradicting document"
            elif rc == 0:
                why = rendered_right(folder, parsed)
                outcome = "wrong" if why else "right"
            elif rc == 2 and any(os.path.exists(os.path.join(folder, f))
                                 for f in ("report.md", "report.html", "junit.xml")):
                outcome, why = "wrong", "refused, but wrote a rendering"
        fig["tried"] += 1
        fig[outcome] += 1
        if outcome != "right":
            findings = 1
            err = r.stderr.decode(errors="replace")[-200:] if rc != 124 else ""
            print(f"campaign: document altered by {kind}: {outcome} ({why}; {err})",
                  file=sys.stderr)
    import resource
    row("report-documents", fig, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return findings


# ---- Python inputs --------------------------------------------------------------------------

def python_trial(i, seed):
    """Trial i: one hostile call; returns 'right' or 'wrong: why'."""
    import numpy as np
    import fp8kv
    rng = random.Random(seed * 1000003 + i)
    profile = rng.choice(fp8kv.profiles())
    cases = python_trial.cases.setdefault(profile, fp8kv.kv_cases(profile))
    case = rng.choice(cases)
    caches = [case.key_cache.copy(), case.value_cache.copy()]
    scales = [c.copy() if c is not None else None for c in (case.k_scale_cache, case.v_scale_cache)]
    refusals = (fp8kv.Fp8kvError, TypeError, ValueError)
    kind = rng.choice(["store_right", "store_flipped", "cache_kinds", "attention_nan",
                       "attention_kinds", "index", "name", "codec", "arithmetic"])

    def judged(call, want):
        """want: True (conformant), False (nonconformant), 'refuse' (an exception of
        refusals), 'refuse_or_true', 'refuse_or_false'."""
        try:
            j = call()
        except refusals:
            return "right" if isinstance(want, str) else "wrong: refused a right input"
        if want == "refuse":
            return f"wrong: took it and judged ({'conformant' if j.conformant else 'not'})"
        if want in (True, "refuse_or_true") and not j.conformant:
            return "wrong: nonconformant on the right bytes"
        if want in (False, "refuse_or_false") and j.conformant:
            return "wrong: conformant on wrong bytes"
        return "right"

    if kind == "store_right":
        return judged(lambda: fp8kv.judge_store(case, *caches, *scales), True)
    if kind == "store_flipped":
        k = caches[0].reshape(-1)
        written = np.flatnonzero(case.key_cache.reshape(-1) != 0xA5)
        if not written.size:
            return "right"
        k[rng.choice(written.tolist())] ^= 1 << rng.randrange(8)
        return judged(lambda: fp8kv.judge_store(case, *caches, *scales), False)
    if kind == "cache_kinds":
        good = caches[0]
        variants = {
            "fortran": (np.asfortranarray(good), "refuse_or_true"),
            "strided": (np.repeat(good.reshape(-1), 2)[::2].reshape(good.shape), "refuse_or_true"),
            "float64": (good.astype(np.float64), "refuse_or_true"),
            "int_list": (good.reshape(-1).tolist(), "refuse_or_true"),
            "too_small": (good.reshape(-1)[:-1], "refuse"),
            "too_big": (np.concatenate([good.reshape(-1), [0]]).astype(np.uint8), "refuse"),
            "zero_d": (np.uint8(0), "refuse"),
            "broadcast": (np.broadcast_to(np.uint8(0xA5), (1 << 34,)), "refuse"),
            "object": (np.array([object()] * good.size, dtype=object), "refuse"),
            "string": ("\xa5" * good.size, "refuse"),
            "none": (None, "refuse"),
            "bool": (good.astype(bool), "refuse"),
        }
        name = rng.choice(sorted(variants))
        x, want = variants[name]
        result = judged(lambda: fp8kv.judge_store(case, x, caches[1], *scales), want)
        return result if result == "right" else f"{result} ({name})"
    if kind in ("attention_nan", "attention_kinds"):
        shape = (case.num_seqs, case.num_q_heads, case.head_size)
        if kind == "attention_nan":
            out = np.full(shape, np.nan, np.float32)
            return judged(lambda: fp8kv.judge_attention(case, out), False)
        x = rng.choice([np.zeros(shape[:-1], np.float32), np.zeros(shape, np.float64) + np.inf,
                        np.zeros(shape, np.complex64), [[1.0]], np.zeros(0, np.float32)])
        return judged(lambda: fp8kv.judge_attention(case, x), "refuse" if
                      not (isinstance(x, np.ndarray) and x.shape == shape) else "refuse_or_false")
    if kind == "index":
        index = rng.choice([2**32 + case.index, -1, 2**63, -(2**31), 1.0, "0", True, None,
                            np.uint64(2**64 - 1), np.int8(-1), len(cases)])
        try:
            got = fp8kv.kv_case(profile, index)
        except refusals:
            return "right"
        return f"wrong: kv_case({profile!r}, {index!r}) gave case {got.index}"
    if kind == "name":
        name = rng.choice([profile + "\0x", "x" * 1_000_000, "\u202e" + profile, "", b"abc",
                           profile.upper(), None, 3])
        try:
            got = fp8kv.kv_case(name, 0)
        except refusals:
            return "right"
        return f"wrong: kv_case({name!r:.40}, 0) gave {got.profile}"
    if kind == "codec":
        x = np.frombuffer(np.random.default_rng(i).bytes(4096), np.float32)
        scale = rng.choice([1.0, 0.0, -0.0, float("nan"), float("inf"), 1e-45, 3.4e38, "1",
                            None])
        try:
            codes = fp8kv.encode(x, profile, scale=scale)
        except refusals:
            return "right"
        if not isinstance(codes, np.ndarray) or codes.dtype != np.uint8 or codes.shape != x.shape:
            return f"wrong: encode gave {type(codes)} for scale {scale!r}"
        return "right"
    text = rng.choice(["f32\0", "f32,rounding=rne,junk=1", "x" * 100000, "", "bf16,", "fp8,,",
                       "tf32,acc=f16" * 1000, "\x1b[2K"])
    try:
        fp8kv.declared_arithmetic(text)
    except refusals:
        return "right"
    return "right" if "\0" not in text and "\x1b" not in text else \
        f"wrong: took arithmetic {text!r:.40}"


python_trial.cases = {}


def python_child(seed, start, count):
    """Runs trials start .. count - 1, one line each ("i result"), then the peak memory."""
    import resource
    for i in range(start, count):
        print(i, python_trial(i, seed), flush=True)
    print("peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)


def python_inputs(count, seed):
    fig = dict(tried=0, right=0, wrong=0, crash=0, hang=0)
    findings, start, peak = 0, 0, 0
    while start < count:
        child = subprocess.Popen([sys.executable, __file__, "python-child", str(seed), str(start),
                                  str(count)], stdout=subprocess.PIPE, text=True)
        sel = selectors.DefaultSelector()
        sel.register(child.stdout, selectors.EVENT_READ)
        ended = None
        while True:
            if not sel.select(timeout=60):
                child.kill()
                ended = "hang"
                break
            line = child.stdout.readline()
            if not line:
                ended = "crash" if child.wait() != 0 else None
                break
            head, _, result = line.strip().partition(" ")
            if head == "peak":
                peak = max(peak, int(result))
                continue
            outcome = "right" if result == "right" else "wrong"
            fig["tried"] += 1
            fig[outcome] += 1
            start = int(head) + 1
            if outcome != "right":
                findings = 1
                print(f"campaign: python trial {head} (seed {seed}): {result}", file=sys.stderr)
        child.wait()
        if ended:
            findings = 1
            fig["tried"] += 1
            fig[ended] += 1
            print(f"campaign: python trial {start} (seed {seed}): {ended}", file=sys.stderr)
            start += 1
        elif start < count:
            break
    row("python-inputs", fig, peak)
    return findings


def main(argv):
    try:
        if argv[:1] == ["documents"] and len(argv) == 6:
            return documents(argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5])
        if argv[:1] == ["python"] and len(argv) == 3:
            return python_inputs(int(argv[1]), int(argv[2]))
        if argv[:1] == ["python-child"] and len(argv) == 4:
            python_child(int(argv[1]), int(argv[2]), int(argv[3]))
            return 0
    except ValueError:
        pass
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
