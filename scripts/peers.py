#!/usr/bin/env python3
"""peers.py — audit the fp8 conversions (e4m3, e5m2) of real peers through `fp8kv verify-stream`.

Run it through scripts/peers (which picks the python). For each peer that is installed —
torch on the CPU, torch on CUDA (when a GPU is visible), ml_dtypes, JAX on its default
backend — and each format the peer offers (float8_e4m3fn and float8_e5m2 always,
float8_e4m3fnuz and float8_e5m2fnuz where the peer has them), the peer converts every input
of each domain in the canonical order (f32: the
2^32 bit patterns in increasing order, f16 / bf16: the 65536 patterns, converted from the
16-bit type itself, as engines call it) and its codes go through a pipe, one byte per input,
into two `fp8kv verify-stream` processes: one with --nan-check strict (the exact byte, NaN
sign included) and one with --nan-check class (any NaN code for a NaN input: the finite
conformance). The same bytes feed both; the peer converts each input once.

Each peer runs in a child process of its own (a peer that crashes or hangs is recorded with
its error and the others go on). Writes OUT/report.md, OUT/report.json, and OUT/logs/ (each
peer's log, each verify-stream's output and JSON).
Then scripts/peers_elements.py audits ml_dtypes's and torch's element casts (fp4, fp6, fp8 as MX
elements) against `fp8kv encode-block --scale-code 7f`, and reports their E8M0 casts; its
section and JSON ("element_casts", "e8m0") join the report.

Exit: 0 every run that was started finished (disagreements are findings, not failures),
1 some run failed (an error, a crash, a timeout), 2 usage error, 3 no peer could run at all.
"""
import argparse
import datetime
import fcntl
import json
import os
import platform
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

import peer_casts
import peers_elements
from peer_casts import NotInstalled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = ("torch-cpu", "torch-cuda", "ml_dtypes", "jax")
FORMATS = ("e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz")
DOMAINS = ("f32", "f16", "bf16")
CHECKS = ("strict", "class")
# The profile each format is judged under: what torch, ml_dtypes and JAX document (RNE;
# overflow and Inf to NaN, except in e5m2, which has Inf: overflow and Inf to ±Inf, as IEEE
# narrowing). Not assumed right: the class verdicts show whether it is.
PROFILE = {"e4m3fn": "e4m3fn_nan", "e4m3fnuz": "e4m3fnuz_nan", "e5m2": "e5m2_inf",
           "e5m2fnuz": "e5m2fnuz_nan"}
DOMAIN_INPUTS = {"f32": 1 << 32, "f16": 1 << 16, "bf16": 1 << 16}
FAILURES_SHOWN = 5  # first failures per run in report.md (the logs have verify-stream's 20)


def progress(msg):
    print(f"peers: {msg}", file=sys.stderr, flush=True)


# ---- the peers (run inside a worker) ---------------------------------------------------------
#
# Each peer is a class with: name, device, version, formats {format: target dtype}, and
# convert(x, fmt) -> np.uint8 array of the codes of the numpy array x (float32, float16 or
# ml_dtypes/jax bfloat16 bit patterns). describe(domain, fmt) says how the call is made.


def bf16_numpy():
    """A numpy dtype for bfloat16: ml_dtypes's (JAX ships it; torch does not need it)."""
    try:
        import ml_dtypes

        return ml_dtypes.bfloat16
    except ImportError:
        return None


class Float8:
    """A peer_casts peer as this script calls it: formats {format: dtype} by the short names of
    FORMATS (those the peer offers); describe(domain, fmt) and convert(x, fmt) by those."""

    def __init__(self, *args):
        super().__init__(*args)
        self.formats = {f: self.dtype("float8_" + f) for f in FORMATS
                        if self.dtype("float8_" + f) is not None}

    def describe(self, domain, fmt):
        return super().describe(domain, "float8_" + fmt)

    def convert(self, x, fmt):
        return self.cast(x, "float8_" + fmt)


class MlDtypes(Float8, peer_casts.MlDtypes):
    pass


class Torch(Float8, peer_casts.Torch):
    pass


class Jax:
    name = "jax"

    def __init__(self):
        # no 75 % preallocation of the GPU: other peers may share it
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        try:
            import jax
            import jax.numpy as jnp
        except ImportError as e:
            raise NotInstalled(str(e))
        self.jax, self.jnp = jax, jnp
        backend = jax.default_backend()
        kind = jax.devices()[0].device_kind
        self.version = jax.__version__
        try:
            import jaxlib

            self.version = f"{jax.__version__} (jaxlib {jaxlib.__version__})"
        except (ImportError, AttributeError):
            pass
        self.device = f"{backend} ({kind}; default backend)"
        self.formats = {f: getattr(jnp, "float8_" + f) for f in FORMATS
                        if hasattr(jnp, "float8_" + f)}
        self.fns = {f: jax.jit(lambda a, d=d: a.astype(d)) for f, d in self.formats.items()}

    def describe(self, domain, fmt):
        src = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[domain]
        return f"jnp.{src} array on the default backend, jit(.astype(jnp.float8_{fmt}))"

    def convert(self, x, fmt):
        import numpy as np

        y = self.fns[fmt](self.jnp.asarray(x))
        return np.asarray(y).view("u1")


def make_peer(name):
    if name == "ml_dtypes":
        return MlDtypes()
    if name == "torch-cpu":
        return Torch("cpu")
    if name == "torch-cuda":
        return Torch("cuda")
    if name == "jax":
        return Jax()
    raise ValueError(name)


# ---- one run: a peer's codes for one domain and format, streamed to two verify-streams -----


class Stream:
    """One `fp8kv verify-stream` process and the thread that feeds it."""

    def __init__(self, cmd, log_path):
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        try:  # fewer, larger pipe writes (Linux; ignored where it is refused)
            fcntl.fcntl(self.proc.stdin.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except OSError:
            pass
        self.q = queue.Queue(maxsize=2)
        self.error = None
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self):
        while True:
            buf = self.q.get()
            if buf is None:
                break
            if self.error:
                continue
            try:
                self.proc.stdin.write(memoryview(buf))
            except (BrokenPipeError, OSError) as e:
                self.error = f"verify-stream stopped reading: {e}"
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def put(self, buf):
        self.q.put(buf)

    def finish(self):
        self.q.put(None)
        self.thread.join()
        rc = self.proc.wait()
        self.log.close()
        return rc


class Inputs:
    """The inputs of a domain in canonical order, a chunk at a time. f32 chunks are one buffer
    refilled in place (base + lo: far cheaper than a new arange), so a peer's convert must be
    done with its input when it returns (each convert returns a materialized numpy array)."""

    def __init__(self, domain, chunk, bf16):
        import numpy as np

        self.np, self.domain = np, domain
        if domain == "f32":
            self.base = np.arange(chunk, dtype=np.uint32)
            self.buf = np.empty_like(self.base)
        else:
            bits = np.arange(1 << 16, dtype=np.uint16)
            self.all = bits.view(np.float16) if domain == "f16" else bits.view(bf16)

    def chunk(self, lo, hi):
        if self.domain != "f32":
            return self.all[lo:hi]
        self.np.add(self.base, self.np.uint32(lo), out=self.buf)
        return self.buf.view(self.np.float32)


def run_one(peer, fmt, domain, args, logs):
    import numpy as np

    profile = PROFILE[fmt]
    tag = f"{peer.name}_{fmt}_{domain}"
    rec = {"peer": peer.name, "device": peer.device, "version": peer.version, "format": fmt,
           "profile": profile, "domain": domain, "call": peer.describe(domain, fmt),
           "inputs": DOMAIN_INPUTS[domain], "status": "error", "error": None, "checks": {}}
    bf16 = bf16_numpy()
    if domain == "bf16" and bf16 is None:
        rec["error"] = "no bfloat16 numpy dtype (ml_dtypes is not installed)"
        return rec
    streams = {}
    for check in CHECKS:
        cmd = [args.fp8kv, "verify-stream", "--sweep", domain, "--profile", profile,
               "--nan-check", check, "--name", f"{peer.name}:{fmt}",
               "--json", os.path.join(logs, f"{tag}_{check}.json")]
        if args.vectors:
            cmd += ["--vectors", args.vectors]
        streams[check] = Stream(cmd, os.path.join(logs, f"{tag}_{check}.log"))
    n = DOMAIN_INPUTS[domain]
    chunk = min(n, 1 << args.chunk_log2)
    t0 = time.monotonic()
    err = None
    try:
        inputs = Inputs(domain, chunk, bf16)
        for lo in range(0, n, chunk):
            q = peer.convert(inputs.chunk(lo, lo + chunk), fmt)
            q = np.ascontiguousarray(q, dtype=np.uint8)
            if q.shape != (chunk,):
                raise RuntimeError(f"peer returned {q.shape} codes for {chunk} inputs")
            if any(s.error for s in streams.values()):
                break  # a verify-stream stopped reading: this run has failed already
            for s in streams.values():
                s.put(q)
            if domain == "f32" and (lo // chunk) % 16 == 15:
                progress(f"{tag}: {lo + chunk >> 20} Mi of {n >> 20} Mi inputs, "
                         f"{time.monotonic() - t0:.0f} s")
    except Exception as e:  # the peer failed mid-stream: verify-stream sees a short stream
        err = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    rcs = {c: s.finish() for c, s in streams.items()}
    rec["seconds"] = round(time.monotonic() - t0, 2)
    if err:
        rec["error"] = err
        return rec
    for check, s in streams.items():
        jpath = os.path.join(logs, f"{tag}_{check}.json")
        if rcs[check] not in (0, 1) or s.error or not os.path.exists(jpath):
            with open(os.path.join(logs, f"{tag}_{check}.log"), errors="replace") as f:
                said = " / ".join(f.read().strip().splitlines()[-2:])
            rec["error"] = (f"verify-stream --nan-check {check} exited {rcs[check]}"
                            f"{' (' + s.error + ')' if s.error else ''}: {said} "
                            f"(log {tag}_{check}.log)")
            return rec
        with open(jpath) as f:
            v = json.load(f)  # a verdict document (docs/json.md): one check, the sweep
        c = v["checks"][0]
        rec["checks"][check] = {
            "mismatches": v["mismatches"], "verdict": v["verdict"],
            "class_mismatches": {k: m for k, m in c.get("class_mismatches", {}).items() if m},
            "failures": c.get("failures", []), "verify_seconds": c.get("seconds")}
        if v["cases"] != n:
            rec["error"] = f"verify-stream counted {v['cases']} inputs, not {n}"
            return rec
    rec["status"] = "finished"
    return rec


def worker(args):
    """Runs one peer: writes LOGS/<peer>.json after every run (a kill leaves what was done)."""
    logs = os.path.join(args.out, "logs")
    out = os.path.join(logs, f"{args.worker}.json")
    state = {"peer": args.worker, "status": "started", "runs": []}

    def save():
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f, indent=2, sort_keys=True)
        os.replace(tmp, out)

    import numpy as np

    np.seterr(all="ignore")  # NaN and overflow casts are the point here, not warnings
    try:
        peer = make_peer(args.worker)
    except NotInstalled as e:
        state.update(status="not installed", reason=e.reason, error=str(e))
        save()
        return 0
    except Exception as e:
        traceback.print_exc()
        state.update(status="error", error=f"{type(e).__name__}: {e}")
        save()
        return 0
    state.update(status="running", device=peer.device, version=peer.version,
                 formats=sorted(peer.formats))
    save()
    progress(f"{peer.name} {peer.version} on {peer.device}: formats {', '.join(peer.formats)}")
    for fmt in args.formats:
        if fmt not in peer.formats:
            progress(f"{peer.name}: no float8_{fmt}")
            continue
        for domain in args.domains:
            progress(f"{peer.name} {fmt} {domain}: streaming {DOMAIN_INPUTS[domain]} inputs")
            state["in_flight"] = f"{fmt} {domain}"
            save()
            try:
                rec = run_one(peer, fmt, domain, args, logs)
            except Exception as e:
                traceback.print_exc()
                rec = {"peer": peer.name, "format": fmt, "domain": domain, "status": "error",
                       "error": f"{type(e).__name__}: {e}"}
            state["runs"].append(rec)
            state.pop("in_flight")
            save()
            if rec["status"] == "finished":
                c = rec["checks"]
                progress(f"{peer.name} {fmt} {domain}: strict {c['strict']['mismatches']} "
                         f"({c['strict']['verdict']}), class {c['class']['mismatches']} "
                         f"({c['class']['verdict']}), {rec['seconds']} s")
            else:
                progress(f"{peer.name} {fmt} {domain}: ERROR {rec['error']}")
    state["status"] = "done"
    save()
    return 0


# ---- the parent: workers, deadline, report ---------------------------------------------------


def run_workers(args, logs):
    """Starts one worker per peer (args.jobs at a time); returns {peer: state}."""
    pending = list(args.only)
    running = {}
    states = {}
    deadline = time.monotonic() + args.deadline if args.deadline else None

    def relay(p, stream, log):
        for line in stream:
            log.write(line)
            log.flush()
            sys.stderr.buffer.write(b"[" + p.encode() + b"] " + line)
            sys.stderr.flush()

    def start(p):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", p, "--out", args.out,
               "--fp8kv", args.fp8kv, "--formats", ",".join(args.formats),
               "--domains", ",".join(args.domains), "--chunk-log2", str(args.chunk_log2)]
        if args.vectors:
            cmd += ["--vectors", args.vectors]
        log = open(os.path.join(logs, f"{p}.log"), "wb")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        th = threading.Thread(target=relay, args=(p, proc.stderr, log), daemon=True)
        th.start()
        running[p] = (proc, th, log, time.monotonic())

    def collect(p, note=None):
        proc, th, log, t0 = running.pop(p)
        th.join(timeout=10)
        log.close()
        path = os.path.join(logs, f"{p}.json")
        try:
            with open(path) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = {"peer": p, "status": "error", "runs": []}
        if note:
            st["status"], st["error"] = "error", note
        elif proc.returncode != 0:
            sig = -proc.returncode if proc.returncode < 0 else None
            st["status"] = "error"
            st["error"] = (f"worker killed by signal {signal.Signals(sig).name}" if sig else
                           f"worker exited {proc.returncode}") + f" (log logs/{p}.log)"
        elif st.get("status") not in ("done", "not installed", "error"):
            st["status"], st["error"] = "error", f"worker ended early (log logs/{p}.log)"
        if st["status"] == "error" and st.get("in_flight"):
            st["error"] += f"; in flight: {st['in_flight']}"
        st["seconds"] = round(time.monotonic() - t0, 1)
        states[p] = st

    def on_term(signum, frame):  # gpu-run's timeout: take the workers down too
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        while pending or running:
            while pending and len(running) < args.jobs:
                start(pending.pop(0))
            time.sleep(0.2)
            for p in list(running):
                if running[p][0].poll() is not None:
                    collect(p)
            if deadline and time.monotonic() > deadline:
                for p in list(running):
                    proc = running[p][0]
                    os.killpg(proc.pid, signal.SIGKILL)  # the worker and its verify-streams
                    proc.wait()
                    collect(p, f"timed out: killed at the --deadline of {args.deadline} s")
                for p in pending:
                    states[p] = {"peer": p, "status": "error", "runs": [], "error":
                                 f"not started before the --deadline of {args.deadline} s"}
                pending = []
    finally:
        for p in list(running):
            try:
                os.killpg(running[p][0].pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return states


def tool_versions(args):
    import numpy

    v = {"python": platform.python_version(), "numpy": numpy.__version__,
         "host": platform.node(), "machine": platform.machine()}
    try:
        r = subprocess.run([args.fp8kv, "--version"], capture_output=True, text=True, timeout=20)
        v["fp8kv"] = (r.stdout.strip() or r.stderr.strip()).splitlines()[0] if r.returncode == 0 \
            else args.fp8kv
    except (OSError, IndexError, subprocess.TimeoutExpired):
        v["fp8kv"] = args.fp8kv
    # the commit of the tree that ran: the one recorded where the tree was copied from
    # (FP8KV_SOURCE_COMMIT: scripts/gpu-run passes what scripts/gpu-bundle read there; a copied
    # .git may be older than the files beside it), else git describe of this checkout ("-dirty":
    # edited since), else none (a tree without .git)
    recorded = os.environ.get("FP8KV_SOURCE_COMMIT", "").strip()
    if recorded:
        v["commit"], v["commit_from"] = recorded, "recorded where the tree was copied from"
    elif os.path.exists(os.path.join(ROOT, ".git")):
        try:
            r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                               capture_output=True, text=True, timeout=20)
            if r.returncode == 0 and r.stdout.strip():
                v["commit"], v["commit_from"] = r.stdout.strip(), "git describe"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return v


def findings(runs, not_run, errors):
    """The findings paragraph of report.md, computed from the runs (never written by hand)."""
    done = [r for r in runs if r["status"] == "finished"]
    if not done:
        return ["**Findings**: no run finished.", ""]

    def names(rs, key):
        out = []
        for r in rs:
            if r[key] not in out:
                out.append(r[key])
        return ", ".join(out)

    def where(r):
        return f"{r['peer']} {r['format']} {r['domain']}"

    L = ["**Findings** (computed from the runs below):", ""]
    bad = [r for r in done if r["checks"]["class"]["mismatches"]]
    if not bad:
        L.append(f"- `--nan-check class`: every finished run is conformant ({len(done)} runs: "
                 f"{names(done, 'peer')}; profiles {names(done, 'profile')}; domains "
                 f"{names(done, 'domain')}).")
    for r in bad:
        c = r["checks"]["class"]
        per = ", ".join(f"{k} {v}" for k, v in sorted(c["class_mismatches"].items()))
        L.append(f"- `--nan-check class`: {where(r)} is not conformant to {r['profile']}: "
                 f"{c['mismatches']} mismatches ({per}).")
    strict = [r for r in done if r["checks"]["strict"]["mismatches"]]
    for r in strict:
        c = r["checks"]["strict"]
        per = ", ".join(f"{k} {v}" for k, v in sorted(c["class_mismatches"].items()))
        first = f"; first: `{c['failures'][0]}`" if c["failures"] else ""
        only_nan = set(c["class_mismatches"]) == {"nan"}
        L.append(f"- `strict`: {where(r)}: {c['mismatches']} mismatches ({per}"
                 f"{', NaN codes only' if only_nan else ''}){first}.")
    if not strict:
        L.append("- `strict`: no run differs in any byte.")
    elif len(strict) < len(done):
        L.append(f"- `strict`: the other {len(done) - len(strict)} runs match every byte.")
    unfinished = len(runs) - len(done) + len(errors)
    if not_run or unfinished:
        L.append(f"- {len(not_run)} peer(s) not run, {unfinished} run(s) or peer(s) in error "
                 "(sections below).")
    L.append("")
    return L


def write_reports(args, states, started, seconds, elements=([], {})):
    runs, not_run, errors = [], [], []
    for p in args.only:
        st = states.get(p, {"status": "error", "error": "no result"})
        if st["status"] == "not installed":
            not_run.append({"peer": p, "reason": st.get("reason", "not installed"),
                            "detail": st.get("error")})
            continue
        for r in st.get("runs", []):
            runs.append(r)
        if st["status"] != "done":
            errors.append({"peer": p, "error": st.get("error") or st["status"]})
        if st["status"] == "done" and not st.get("runs"):
            not_run.append({"peer": p, "reason": "offers none of the formats asked for",
                            "detail": ", ".join(st.get("formats", []))})
    meta = tool_versions(args)
    doc = {"generated": started, "seconds": round(seconds, 1), "tools": meta,
           "domains": args.domains, "formats": args.formats, "profiles": PROFILE,
           "runs": runs, "not_run": not_run, "errors": errors}
    doc.update(elements[1])
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")

    L = []
    L.append("# Peers: fp8 conversions of real libraries, judged by fp8kv verify-stream")
    L.append("")
    commit = (f"commit {meta['commit']} ({meta['commit_from']})" if "commit" in meta
              else "commit unknown (not a git checkout)")
    L.append(f"Generated by `scripts/peers` on {meta['host']} ({meta['machine']}), {started}, "
             f"in {seconds:.0f} s; {meta['fp8kv']}; {commit}; "
             f"python {meta['python']}, numpy {meta['numpy']}.")
    L.append("")
    L.append("Each run converts every input of the domain (f32: all 2^32 bit patterns; f16, "
             "bf16: all 65536, converted from the 16-bit type itself) with the peer, in the "
             "canonical order, and pipes the codes into `fp8kv verify-stream` twice: "
             "**strict** compares the exact byte (NaN sign included), **class** accepts any NaN "
             "code for a NaN (the finite conformance). The profile is the one the peer "
             "documents (round to nearest even; overflow and Inf give NaN, in e5m2 ±Inf); a "
             "class mismatch would mean it does not implement it.")
    L.append("")
    L += findings(runs, not_run, errors)
    L.append("| peer | device | version | format | profile | domain | inputs | "
             "mismatches strict / class | verdict strict / class | seconds |")
    L.append("|---|---|---|---|---|---|---:|---:|---|---:|")
    for r in runs:
        if r["status"] == "finished":
            s, c = r["checks"]["strict"], r["checks"]["class"]
            mm = f"{s['mismatches']} / {c['mismatches']}"
            vd = f"{s['verdict']} / {c['verdict']}"
        else:
            mm, vd = "—", "**error**"
        L.append(f"| {r['peer']} | {r.get('device', '')} | {r.get('version', '')} | "
                 f"{r['format']} | {r.get('profile', '')} | {r['domain']} | "
                 f"{r.get('inputs', '')} | {mm} | {vd} | {r.get('seconds', '')} |")
    for n in not_run:
        L.append(f"| {n['peer']} | | | | | | | | not run ({n['reason']}) | |")
    for e in errors:
        if not any(r["peer"] == e["peer"] for r in runs):
            L.append(f"| {e['peer']} | | | | | | | | **error** | |")
    L.append("")
    if not_run:
        L.append("## Not run")
        L.append("")
        for n in not_run:
            L.append(f"- {n['peer']}: not run ({n['reason']}){': ' + n['detail'] if n.get('detail') else ''}")
        L.append("")
    if errors or any(r["status"] != "finished" for r in runs):
        L.append("## Errors")
        L.append("")
        for e in errors:
            L.append(f"- {e['peer']}: {e['error']}")
        for r in runs:
            if r["status"] != "finished":
                L.append(f"- {r['peer']} {r['format']} {r['domain']}: {r['error']}")
        L.append("")
    L.append("## What each peer disagreed on")
    L.append("")
    for p in args.only:
        pr = [r for r in runs if r["peer"] == p and r["status"] == "finished"]
        if not pr:
            continue
        L.append(f"### {p}")
        L.append("")
        lacks = [f for f in args.formats if f not in states.get(p, {}).get("formats", args.formats)]
        if lacks:
            L.append(f"Offers no {', '.join('float8_' + f for f in lacks)}: not run.")
            L.append("")
        calls = []
        for r in pr:
            if r["call"] not in calls:
                calls.append(r["call"])
        L.append("Calls: " + "; ".join(f"`{c}`" for c in calls) + ".")
        L.append("")
        clean = True
        for r in pr:
            for check in CHECKS:
                ch = r["checks"][check]
                if not ch["mismatches"]:
                    continue
                clean = False
                per = ", ".join(f"{k} {v}" for k, v in sorted(ch["class_mismatches"].items()))
                L.append(f"- {r['format']} {r['domain']}, {check}: {ch['mismatches']} "
                         f"mismatches ({per}); first failures:")
                L.append("")
                L.append("  ```")
                for line in ch["failures"][:FAILURES_SHOWN]:
                    L.append("  " + line)
                L.append("  ```")
        if clean:
            L.append("- nothing: every run conformant under strict and class.")
        L.append("")
    L += elements[0]
    L.append("Logs: `logs/<peer>.log` (each worker's progress and errors), "
             "`logs/<peer>_<format>_<domain>_<check>.{log,json}` (each verify-stream's output "
             "and JSON, with its first 20 failures).")
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    return runs, not_run, errors


def csv_choice(value, allowed, what):
    items = [v.strip() for v in value.split(",") if v.strip()]
    out = []
    for v in items:
        if v == "torch" and what == "peer":
            out += [x for x in ("torch-cpu", "torch-cuda") if x not in out]
            continue
        if v not in allowed:
            raise argparse.ArgumentTypeError(
                f"no {what} '{v}' (one of {', '.join(allowed)})")
        if v not in out:
            out.append(v)
    if not out:
        raise argparse.ArgumentTypeError(f"no {what} given")
    return out


def main():
    ap = argparse.ArgumentParser(
        prog="scripts/peers",
        description="Audit the fp8 conversions (e4m3, e5m2) of torch (CPU, CUDA), ml_dtypes and JAX, "
                    "where installed, by streaming every input's code into "
                    "`fp8kv verify-stream` (strict and class NaN checks). Writes "
                    "OUT/report.md, OUT/report.json and OUT/logs/.",
        epilog="exit: 0 every run finished (disagreements are findings), 1 a run failed, "
               "2 usage error, 3 no peer could run")
    ap.add_argument("--out", default="build/peers", help="output directory (default build/peers)")
    ap.add_argument("--fp8kv", default=None,
                    help="the fp8kv binary (default $FP8KV, else build/conformance/fp8kv)")
    ap.add_argument("--only", type=lambda v: csv_choice(v, PEERS, "peer"), default=list(PEERS),
                    help=f"peers to run (default all: {','.join(PEERS)}; 'torch' = both torch)")
    ap.add_argument("--domains", type=lambda v: csv_choice(v, DOMAINS, "domain"),
                    default=list(DOMAINS), help="input domains (default f32,f16,bf16)")
    ap.add_argument("--formats", type=lambda v: csv_choice(v, FORMATS, "format"),
                    default=list(FORMATS), help="formats (default e4m3fn,e4m3fnuz,e5m2,e5m2fnuz)")
    ap.add_argument("--vectors", default=None,
                    help="vector directory for verify-stream (default: its own, vectors)")
    ap.add_argument("--jobs", type=int, default=1, help="peers run at once (default 1)")
    ap.add_argument("--deadline", type=int, default=0,
                    help="seconds after which running peers are killed and reported as "
                         "timed out, and the report is written (default: none)")
    ap.add_argument("--chunk-log2", type=int, default=26,
                    help="inputs per conversion call, as a power of two (default 26)")
    ap.add_argument("--element-f32", type=int, default=2_000_000,
                    help="f32 inputs per element format in the element-cast audit of "
                         "ml_dtypes and torch (scripts/peers_elements.py: fp4, fp6, fp8 as MX "
                         "elements, and E8M0); 0 skips that audit (default 2000000)")
    ap.add_argument("--element-oracle", default=None,
                    help="the fp8kv whose `encode-block --scale-code` gives the element casts' "
                         "expected codes (default --fp8kv; a build without MPFR has none: "
                         "give a CPU build, else those runs are reported not run)")
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    try:
        args = ap.parse_args()
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if not 16 <= args.chunk_log2 <= 30 or args.jobs < 1 or args.deadline < 0:
        ap.print_usage(sys.stderr)
        print("scripts/peers: --chunk-log2 must be 16..30, --jobs >= 1, --deadline >= 0",
              file=sys.stderr)
        return 2
    if args.worker:
        return worker(args)

    fp8kv = args.fp8kv or os.environ.get("FP8KV") or os.path.join(ROOT, "build/conformance/fp8kv")
    if not (os.path.isfile(fp8kv) and os.access(fp8kv, os.X_OK)):
        print(f"scripts/peers: no fp8kv binary at {fp8kv} (build it, or give --fp8kv)",
              file=sys.stderr)
        return 2
    args.fp8kv = os.path.abspath(fp8kv)
    if args.vectors:
        args.vectors = os.path.abspath(args.vectors)
    if args.element_oracle:
        args.element_oracle = os.path.abspath(args.element_oracle)
    r = subprocess.run([args.fp8kv, "verify-stream", "--help"], capture_output=True, text=True)
    if r.returncode != 0 or "verify-stream" not in r.stdout + r.stderr:
        print(f"scripts/peers: {args.fp8kv} has no verify-stream command", file=sys.stderr)
        return 2
    args.out = os.path.abspath(args.out)
    logs = os.path.join(args.out, "logs")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs, exist_ok=True)

    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    t0 = time.monotonic()
    progress(f"peers {','.join(args.only)}; formats {','.join(args.formats)}; domains "
             f"{','.join(args.domains)}; {args.jobs} at a time; out {args.out}")
    states = run_workers(args, logs)
    elements, element_errors = ([], {}), []
    if args.element_f32 > 0:
        est = peers_elements.run(args, logs, progress)
        elements = peers_elements.report_lines(est)
        element_errors = elements[1]["element_casts"]["errors"]
    runs, not_run, errors = write_reports(args, states, started, time.monotonic() - t0, elements)
    errors = errors + element_errors
    finished = [r for r in runs if r["status"] == "finished"]
    failed = [r for r in runs if r["status"] != "finished"]
    for r in runs:
        if r["status"] == "finished":
            s, c = r["checks"]["strict"], r["checks"]["class"]
            progress(f"{r['peer']:10} {r['format']:8} {r['domain']:4}  strict {s['mismatches']:>6}"
                     f"  class {c['mismatches']:>6}  ({c['verdict']} under class)")
        else:
            progress(f"{r['peer']:10} {r['format']:8} {r['domain']:4}  ERROR {r['error']}")
    for n in not_run:
        progress(f"{n['peer']:10} not run ({n['reason']})")
    for e in errors:
        progress(f"{e['peer']:10} ERROR {e['error']}")
    progress(f"{len(finished)} runs finished, {len(failed) + len(errors)} errors; "
             f"{args.out}/report.md")
    if not finished:
        return 3
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
