"""Every name list and default of the package comes from the C library's tables (fp8kv/spec.h,
through fp8kv_py_name and fp8kv_py_default), and says what the CLI says. The literals here are
the intended second statement (docs/DESIGN.md "Where each choice is decided")."""
import inspect
import os
import pathlib
import subprocess

import pytest

import fp8kv
from fp8kv import _native

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("FP8KV_CLI", str(ROOT / "build" / "conformance" / "fp8kv"))


def test_the_tables():
    assert _native.names("layout") == ("nhd", "split_x", "hnd")
    assert _native.names("scale_granularity") == ("tensor", "head", "token_head")
    assert _native.names("dtype") == ("f32", "f16", "bf16")
    assert _native.names("model") == ("f32_div", "f32_mul_recip", "f16_div", "exact")
    assert fp8kv.MODELS == ("f32_div", "f32_mul_recip", "f16_div")  # the kernels' models
    assert fp8kv.profiles() == list(_native.names("profile"))
    assert "mxfp4" in _native.names("block_format")
    with pytest.raises(ImportError, match="no name table"):
        _native.names("nope")


def test_the_defaults():
    assert _native.default("profile") == "e4m3fn_satfinite"
    assert _native.default("model") == "f32_div"
    encode = inspect.signature(fp8kv.encode).parameters
    assert encode["profile"].default == "e4m3fn_satfinite"
    assert encode["model"].default == "f32_div"
    assert inspect.signature(fp8kv.decode).parameters["profile"].default == "e4m3fn_satfinite"
    with pytest.raises(ImportError, match="no default"):
        _native.default("nope")


def test_cases_name_their_choices_from_the_tables():
    cases = [c for p in ("e4m3fn_satfinite",) for c in fp8kv.kv_cases(p)]
    assert {c.layout for c in cases} == set(_native.names("layout"))
    assert {c.scale_granularity for c in cases} == set(_native.names("scale_granularity"))
    assert {c.in_dtype for c in cases} == set(_native.names("dtype"))


def test_the_cli_lists_the_same_models():
    if not os.path.exists(CLI):
        pytest.skip(f"no fp8kv CLI at {CLI} (set FP8KV_CLI)")
    r = subprocess.run([CLI, "sweep", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    assert f"(--plugin) {fp8kv.MODELS[0]} (default), {fp8kv.MODELS[1]} or {fp8kv.MODELS[2]}" \
        in r.stdout, r.stdout
    assert "(default e4m3fn_satfinite)" in r.stdout
