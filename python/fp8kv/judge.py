"""Judging an engine's outputs for a golden case, with the C judge of `fp8kv judge-kv`."""
import ctypes
import json
import math

import numpy as np

from . import _native
from .arrays import bits_of, to_numpy

_GATHER_DTYPES = {name: i for i, name in enumerate(_native.names("dtype"))}  # name: enum value
F32, F16, BF16 = _GATHER_DTYPES
_DTYPE_OF_NAME = {"float32": F32, "float16": F16, "bfloat16": BF16}
_DTYPES_QUOTED = _native.or_list(_GATHER_DTYPES, quote='"')


class NonconformantError(AssertionError):
    """Raised by KVCase.judge_*: the outputs are wrong; .judgement holds the verdict."""

    def __init__(self, judgement):
        super().__init__("\n" + judgement.text)
        self.judgement = judgement


class Judgement:
    """The verdict on one case: .verdict ("conformant" | "nonconformant"), .mismatches
    (differing cache bytes + differing scale-cache entries + differing gather elements), .bytes,
    .cache_mismatches and .scale_cache_mismatches ((key, value) each), .checks (one dict per
    judged part: name, cases, mismatches, class_cases, class_mismatches, nmse, threshold,
    failures), .failures (every check's first failures), .text (the report; also str())."""

    def __init__(self, conformant, text, doc):
        self.conformant = bool(conformant)
        self.text = text
        self.json = doc
        self.verdict = doc["verdict"]
        self.mismatches = doc["mismatches"]
        self.bytes = doc["bytes"]
        self.cache_mismatches = tuple(doc["cache_mismatches"])
        self.scale_cache_mismatches = tuple(doc["scale_cache_mismatches"])
        self.checks = doc["checks"]
        self.failures = [line for c in self.checks for line in c["failures"]]

    def __bool__(self):
        return self.conformant

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<Judgement {self.verdict}: mismatches={self.mismatches} bytes={self.bytes}>"

    def class_mismatches(self, check="kv-store"):
        """{input class: mismatches} of a check (the store's by default)."""
        for c in self.checks:
            if c["name"] == check:
                return dict(c.get("class_mismatches", {}))
        raise KeyError(check)

    def check(self):
        """self when conformant, else NonconformantError with the report."""
        if not self.conformant:
            raise NonconformantError(self)
        return self


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p) if a is not None else None


def _size(a):
    return 0 if a is None else a.size


def _judge_suite(case, subject, attention, arithmetic):
    subject = _native.text(subject, "subject")
    conformant = ctypes.c_int(0)
    text, doc = ctypes.c_void_p(), ctypes.c_void_p()
    _native.check(_native.lib.fp8kv_py_judge_suite(
        _native.text(case.vectors, "vectors"), _native.text(case.profile, "profile"),
        _native.c_index(case.index), subject, _ptr(attention), attention.size,
        _native.text(arithmetic, "arithmetic"), ctypes.byref(conformant), ctypes.byref(text),
        ctypes.byref(doc)))
    text = _native.take_string(text.value)
    doc = json.loads(_native.take_string(doc.value))
    return Judgement(conformant.value, text, doc)


def _judge(case, subject, key=None, value=None, key_scales=None, value_scales=None, gather=None,
           gather_dtype=0, attention=None, arithmetic=None):
    subject = _native.text(subject, "subject")
    conformant = ctypes.c_int(0)
    text, doc = ctypes.c_void_p(), ctypes.c_void_p()
    rc = _native.lib.fp8kv_py_judge_kv(
        _native.text(case.vectors, "vectors"), _native.text(case.profile, "profile"),
        _native.c_index(case.index), subject,
        _ptr(key), _size(key), _ptr(value), _size(value),
        _ptr(key_scales), _size(key_scales), _ptr(value_scales), _size(value_scales),
        _ptr(gather), _size(gather), gather_dtype,
        _ptr(attention), 0 if attention is None else attention.size,
        None if arithmetic is None else _native.text(arithmetic, "arithmetic"),
        ctypes.byref(conformant), ctypes.byref(text), ctypes.byref(doc))
    _native.check(rc)
    text = _native.take_string(text.value)
    doc = json.loads(_native.take_string(doc.value))
    return Judgement(conformant.value, text, doc)


def _sized(case, what, want, unit, words, itemsize=None, names=None, refuse=""):
    """A check for to_numpy: the input's size (elements, or bytes when unit is "bytes") is
    want, before anything is copied (the C judge says the same of what reaches it); itemsize
    and names (when given) are checked first, refuse being the message's end."""
    def check(shape, size, name):
        if (itemsize is not None and size != itemsize) or (names is not None and
                                                            name not in names):
            raise _native.Fp8kvError(f"{what}: {refuse.format(size=size, name=name)}")
        have = math.prod(shape) * (size if unit == "bytes" else 1)
        if have != want:
            raise _native.Fp8kvError(f"{what}: {have} {unit}, but case {case.index} of this "
                                     f"profile needs {want} ({words})")
    return check


def _cache_bytes(case, x, what):
    words = (f"num_blocks {case.num_blocks} x block_size {case.block_size} x heads "
             f"{case.num_heads} x head_size {case.head_size}")
    one_byte = ("elements of {size} bytes ({name}): a cache holds one-byte codes (uint8, int8 "
                "or a float8 type)")
    a, name = to_numpy(x, _sized(case, what, case.cache_bytes, "bytes", words, itemsize=1,
                                 refuse=one_byte))
    if a.dtype.itemsize != 1 or a.dtype.kind == "b":
        raise _native.Fp8kvError(f"{what}: " + one_byte.format(size=a.dtype.itemsize, name=name))
    return bits_of(a, 1)


def _scale_cache(case, x, what):
    if x is None:
        return None
    from .cases import HEAD, TOKEN_HEAD

    if case.scale_granularity != TOKEN_HEAD:  # refused before anything is copied
        raise _native.Fp8kvError(f"case {case.index} has scales per "
                                 f"{'KV head' if case.scale_granularity == HEAD else 'tensor'}: "
                                 "it has no scale caches to judge")
    words = f"num_blocks {case.num_blocks} x block_size {case.block_size} x heads {case.num_heads}"
    floats = "{name} elements: a scale cache holds float32 scales (or their bits as uint32)"
    names = ("float32", "uint32", "int32")
    a, name = to_numpy(x, _sized(case, what, math.prod(case.scale_cache_shape), "entries", words,
                                 itemsize=4, names=names, refuse=floats))
    if a.dtype.itemsize != 4 or name not in names:
        raise _native.Fp8kvError(f"{what}: " + floats.format(name=name))
    return bits_of(a, 4)


def _golden_only(case, what):
    if getattr(case, "suite", "golden") != "golden":
        raise _native.Fp8kvError(f"{case!r}: the engine suite judges attention outputs only, "
                                 f"not {what}")


def judge_store(case, key_cache, value_cache, key_scale_cache=None, value_scale_cache=None,
                subject="engine"):
    """Judges the caches a store wrote for case (filled with 0xA5 before it; any shape with the
    case's byte count; uint8, int8, float8 tensors or arrays) and, for a case with a scale per
    token and head (and only then), the scale caches it wrote (float32, num_blocks x block_size x
    num_heads, filled with 0xA5 bytes before it): a Judgement."""
    _golden_only(case, "a store")
    return _judge(case, subject, key=_cache_bytes(case, key_cache, "key_cache"),
                  value=_cache_bytes(case, value_cache, "value_cache"),
                  key_scales=_scale_cache(case, key_scale_cache, "key_scale_cache"),
                  value_scales=_scale_cache(case, value_scale_cache, "value_scale_cache"))


def judge_gather(case, out, dtype=None, subject="engine"):
    """Judges gather + dequant rows: the key rows then the value rows of every sequence
    (2 x sum(seq_lens) x heads x head_size elements), bit for bit. dtype ("f32", "f16",
    "bf16") is inferred from float32/float16/bfloat16 arrays; give it for raw bits."""
    _golden_only(case, "a gather")
    if dtype is not None and dtype not in _GATHER_DTYPES:
        raise _native.Fp8kvError(f"gather: dtype={dtype!r}: give {_DTYPES_QUOTED}")
    sized = _sized(case, "gather", 2 * case.rows * case.width, "elements",
                   f"2 (key, value) x {case.rows} rows x {case.width}")
    chosen = []

    def check(shape, size, name):  # before anything is copied
        implied = _DTYPE_OF_NAME.get(name)
        if dtype is not None and implied is not None and dtype != implied:
            raise _native.Fp8kvError(f"gather: dtype={dtype!r}, but the rows are {name}")
        if (dtype or implied) is None:
            raise _native.Fp8kvError(f"gather: cannot tell {_native.or_list(_GATHER_DTYPES)} "
                                     f"from {name}: give dtype=")
        if size != (4 if (dtype or implied) == F32 else 2):
            raise _native.Fp8kvError(f"gather: {name} elements cannot hold {dtype or implied}")
        sized(shape, size, name)
        chosen.append(dtype or implied)

    a, name = to_numpy(out, check)
    size = 4 if chosen[0] == F32 else 2
    return _judge(case, subject, gather=bits_of(a, size), gather_dtype=_GATHER_DTYPES[chosen[0]])


def declared_arithmetic(text="f32"):
    """The declared arithmetic text (a preset — "f32", "tf32", "bf16", "f16", "bf16-folded",
    "f16-folded", "fp8" — optionally followed by ",key=value" changes, docs/python.md) checked:
    (q dtype, output dtype, words), the dtypes as "f32", "f16" or "bf16"; Fp8kvError naming
    what is wrong."""
    q, out = ctypes.c_int(0), ctypes.c_int(0)
    words = ctypes.create_string_buffer(256)
    _native.check(_native.lib.fp8kv_py_arithmetic(_native.text(text, "arithmetic"),
                                                  ctypes.byref(q), ctypes.byref(out), words,
                                                  len(words)))
    names = {v: k for k, v in _GATHER_DTYPES.items()}
    return names[q.value], names[out.value], words.value.decode()


_NAME_OF_DTYPE = {F32: "float32", F16: "float16", BF16: "bfloat16"}


def judge_attention(case, out, arithmetic="f32", subject="engine"):
    """Judges a decode step's output [num_seqs, num_q_heads, head_size] computed under the
    declared arithmetic (default "f32"; see fp8kv.declared_arithmetic): every output within that
    arithmetic's error bound around the exact result of its elementwise roundings (under f32
    also an NMSE of at most 1e-10 against the oracle's 128-bit result). out's dtype is the
    arithmetic's output dtype: float32, float16 or bfloat16 (ml_dtypes or torch; raw bits as
    uint16 are taken for the 16-bit dtypes)."""
    _, out_dtype, _ = declared_arithmetic(arithmetic)
    rows = getattr(case, "query_rows", case.num_seqs)  # an engine case may have several a seq
    want = _NAME_OF_DTYPE[out_dtype]
    size = 4 if out_dtype == F32 else 2
    names = (want,) if out_dtype == F32 else (want, "uint16", "int16")
    a, name = to_numpy(out, _sized(
        case, "attention", rows * case.num_q_heads * case.head_size, "elements",
        f"query rows {rows} x q heads {case.num_q_heads} x head_size {case.head_size}",
        itemsize=size, names=names,
        refuse="{name} output: arithmetic " + arithmetic + " gives " + want + " outputs"))
    if getattr(case, "suite", "golden") == "engine":
        return _judge_suite(case, subject, bits_of(a, size), arithmetic)
    return _judge(case, subject, attention=bits_of(a, size), arithmetic=arithmetic)
