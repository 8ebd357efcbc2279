"""The golden KV cases of a profile, as Python objects with numpy arrays."""
import io
import json
import os
import pathlib

import numpy as np

from . import _native
from .judge import F16, F32, judge_attention, judge_gather, judge_store

_PACKAGE_VECTORS = pathlib.Path(__file__).resolve().parent / "vectors"
SENTINEL = 0xA5
# the names of the C tables, in their enums' order (a table of another length fails here)
NHD, SPLIT_X, HND = _native.names("layout")
TENSOR, HEAD, TOKEN_HEAD = _native.names("scale_granularity")
SEPARATE, KV_FIRST, BLOCK_FIRST = _native.names("packing")


def pack_caches(key_cache, value_cache, packing):
    """The key and value caches (numpy, the same shape: nhd or hnd) as the one tensor an
    engine allocates: "kv_first" [2, num_blocks, ...] (vLLM's kv_cache), "block_first"
    [num_blocks, 2, ...] (FlashInfer's paged_kv_cache); "separate" gives the pair back."""
    if packing == SEPARATE:
        return key_cache, value_cache
    if packing not in (KV_FIRST, BLOCK_FIRST):
        raise _native.Fp8kvError(f"unknown packing {packing!r} (one of {SEPARATE}, {KV_FIRST}, "
                                 f"{BLOCK_FIRST})")
    if key_cache.shape != value_cache.shape:
        raise _native.Fp8kvError(f"caches of shapes {key_cache.shape} and {value_cache.shape} "
                                 f"(split_x) cannot be packed into one tensor")
    return np.stack([key_cache, value_cache], axis=0 if packing == KV_FIRST else 1)


def unpack_caches(kv_cache, packing):
    """The key and value caches of a packed tensor (views, pack_caches' inverse)."""
    if packing == SEPARATE:
        return kv_cache
    if packing not in (KV_FIRST, BLOCK_FIRST):
        raise _native.Fp8kvError(f"unknown packing {packing!r} (one of {SEPARATE}, {KV_FIRST}, "
                                 f"{BLOCK_FIRST})")
    axis = 0 if packing == KV_FIRST else 1
    if kv_cache.ndim < 2 or kv_cache.shape[axis] != 2:
        raise _native.Fp8kvError(f"a {packing} tensor has 2 along axis {axis}, not the shape "
                                 f"{kv_cache.shape}")
    return (kv_cache[0], kv_cache[1]) if axis == 0 else (kv_cache[:, 0], kv_cache[:, 1])


def default_vectors():
    """$FP8KV_VECTORS, else the vectors installed with the package."""
    return os.environ.get("FP8KV_VECTORS") or str(_PACKAGE_VECTORS)


def _case_array(vectors, profile, index, name):
    """File name of a golden case, parsed from the bytes the C library read and checked against
    the digest verification kept (fp8kv_py_case_file): never from the file, which could have
    changed since it was verified."""
    size = _native.ctypes.c_size_t(0)
    data = _native.take_bytes(
        _native.lib.fp8kv_py_case_file(_native.text(vectors, "vectors"),
                                       _native.text(profile, "profile"), _native.c_index(index),
                                       _native.text(name, "array"), _native.ctypes.byref(size)),
        size.value)
    return np.load(io.BytesIO(data), allow_pickle=False)


def _input_dtype(name):
    if name == F32:
        return np.float32
    if name == F16:
        return np.float16
    try:
        import ml_dtypes
        return ml_dtypes.bfloat16
    except ImportError:  # the bits, when ml_dtypes is not there
        return np.uint16


class KVCase:
    """One golden case: the inputs of a store (key, value, slot_mapping and the scales), of a
    gather (key_cache, value_cache: the golden caches, block_table, seq_lens) and of a decode
    step (query, softmax_scale), with the parameters as attributes. Its judge_* methods judge
    an engine's outputs and raise NonconformantError (an AssertionError carrying the report)
    when they are wrong, which is what a test wants; fp8kv.judge_* return the judgement.

    scale_granularity says where the scales are: "tensor" (k_scale, v_scale), "head"
    (k_head_scales, v_head_scales: float32 [num_heads]; k_scale and v_scale are NaN) or
    "token_head" (the store computes each written row's scale, RN32(amax / max_finite) over the
    row's finite elements, 1 for a zero row, into scale caches [num_blocks, block_size,
    num_heads]; k_scale_cache and v_scale_cache are the golden ones, which a read takes)."""

    def __init__(self, info, vectors):
        self.vectors = vectors
        self.profile = info["profile"]
        self.index = info["index"]
        for key in ("num_blocks", "block_size", "num_heads", "head_size", "layout", "in_dtype",
                    "num_tokens", "num_seqs", "num_q_heads", "max_blocks_per_seq", "cache_bytes",
                    "rows"):
            setattr(self, key, info[key])
        self.k_scale, self.v_scale, self.softmax_scale = (
            float(np.uint32(b).view(np.float32)) for b in info["scale_bits"])
        self.scale_granularity = info["scale_granularity"]
        files = info["files"]

        def load(name):
            return _case_array(vectors, self.profile, self.index, name)

        dtype = _input_dtype(self.in_dtype)
        width = self.num_heads * self.head_size
        self.key = load("key").view(dtype).reshape(self.num_tokens, self.num_heads,
                                                   self.head_size)
        self.value = load("value").view(dtype).reshape(self.num_tokens, self.num_heads,
                                                       self.head_size)
        self.slot_mapping = load("slot_mapping")
        self.block_table = load("block_table")
        self.seq_lens = load("seq_lens")
        self.query = load("query").reshape(self.num_seqs, self.num_q_heads, self.head_size)
        self.key_cache = load("key_cache").reshape(self.key_cache_shape)
        self.value_cache = load("value_cache").reshape(self.value_cache_shape)
        self.width = width
        self.k_head_scales = self.v_head_scales = self.k_scale_cache = self.v_scale_cache = None
        if "head_scales" in files:
            self.k_head_scales, self.v_head_scales = load("head_scales").view(np.float32)
        if "scale_cache" in files:
            self.k_scale_cache, self.v_scale_cache = (
                a.reshape(self.scale_cache_shape) for a in load("scale_cache").view(np.float32))
        for array in (self.key, self.value, self.slot_mapping, self.block_table, self.seq_lens,
                      self.query, self.key_cache, self.value_cache, self.k_head_scales,
                      self.v_head_scales, self.k_scale_cache, self.v_scale_cache):
            if array is not None:
                array.setflags(write=False)  # one case serves many tests: nobody may change it

    @property
    def key_cache_shape(self):
        """The key cache's shape in this case's layout (docs/DESIGN.md §4)."""
        b, s, h, d = self.num_blocks, self.block_size, self.num_heads, self.head_size
        return {NHD: (b, s, h, d), HND: (b, h, s, d), SPLIT_X: (b, h, d // 16, s, 16)}[
            self.layout]

    @property
    def value_cache_shape(self):
        """The value cache's shape in this case's layout."""
        b, s, h, d = self.num_blocks, self.block_size, self.num_heads, self.head_size
        return {NHD: (b, s, h, d), HND: (b, h, s, d), SPLIT_X: (b, h, d, s)}[self.layout]

    @property
    def scale_cache_shape(self):
        """A scale cache's shape (per token and head): [num_blocks, block_size, num_heads]."""
        return (self.num_blocks, self.block_size, self.num_heads)

    def new_caches(self):
        """(key_cache, value_cache): fresh uint8 caches filled with the 0xA5 sentinel, as a
        store must find them."""
        return (np.full(self.key_cache_shape, SENTINEL, np.uint8),
                np.full(self.value_cache_shape, SENTINEL, np.uint8))

    def new_scale_caches(self):
        """(key_scale_cache, value_scale_cache): fresh float32 scale caches filled with 0xA5
        bytes, for a case with a scale per token and head; (None, None) for the others."""
        if self.scale_granularity != TOKEN_HEAD:
            return None, None
        return tuple(np.full(self.scale_cache_shape, SENTINEL * 0x01010101, np.uint32)
                     .view(np.float32) for _ in range(2))

    @property
    def store_scales(self):
        """(k, v): the scales a store is given: the per-tensor floats, the per-head arrays, or
        (None, None) per token and head (the store computes them)."""
        return {TENSOR: (self.k_scale, self.v_scale),
                HEAD: (self.k_head_scales, self.v_head_scales)}.get(self.scale_granularity,
                                                                    (None, None))

    @property
    def read_scales(self):
        """(k, v): the scales a read is given: the per-tensor floats, the per-head arrays, or
        the golden scale caches."""
        return {TENSOR: (self.k_scale, self.v_scale),
                HEAD: (self.k_head_scales, self.v_head_scales),
                TOKEN_HEAD: (self.k_scale_cache, self.v_scale_cache)}[self.scale_granularity]

    def __repr__(self):
        return (f"KVCase({self.profile} case{self.index}: {self.layout}, {self.in_dtype} in, "
                f"{self.num_heads} x {self.head_size} heads (q {self.num_q_heads}), "
                f"block {self.block_size}, {self.num_tokens} tokens, {self.num_seqs} seqs, "
                f"scales per {self.scale_granularity.replace('_', ' and ')})")

    @property
    def id(self):
        return f"{self.profile}-case{self.index}"

    def judge_store(self, key_cache, value_cache, key_scale_cache=None, value_scale_cache=None,
                    subject="engine"):
        return judge_store(self, key_cache, value_cache, key_scale_cache, value_scale_cache,
                           subject=subject).check()

    def judge_gather(self, out, dtype=None, subject="engine"):
        return judge_gather(self, out, dtype=dtype, subject=subject).check()

    def judge_attention(self, out, arithmetic="f32", subject="engine"):
        return judge_attention(self, out, arithmetic=arithmetic, subject=subject).check()

    def query_in(self, dtype):
        """The query as a kernel declaring q in dtype ("f32", "f16", "bf16") is given it:
        rounded to nearest even (bfloat16 needs ml_dtypes; float16 is numpy's)."""
        if dtype == F32:
            return self.query
        return self.query.astype(_input_dtype(dtype))


class EngineCase:
    """One case of the engine suite (docs/python.md): a decode step at the shapes engines run,
    generated by the C library from its seed over the profile's verified decode table and
    checked against the committed digest of its inputs. The attributes a decode kernel needs
    are those of KVCase: query (float32 [num_seqs, num_q_heads, head_size]), key_cache and
    value_cache (uint8, in the case's layout; every slot no sequence holds is a NaN code),
    block_table, seq_lens, k_scale, v_scale (per tensor), softmax_scale; packing names how the
    engines of its layout allocate the two caches (kv_cache() gives them so). Only attention is
    judged: judge_attention(out, arithmetic=...), its golden output being the reference of the
    arithmetic judged (computed when judged, its digest checked against the committed one)."""

    suite = "engine"
    scale_granularity = TENSOR

    def __init__(self, info, vectors):
        self.vectors = vectors
        self.profile = info["profile"]
        self.index = info["index"]
        self.name = info["name"]
        self.words = info["words"]
        for key in ("num_blocks", "block_size", "num_heads", "head_size", "layout", "num_seqs",
                    "num_q_heads", "max_blocks_per_seq", "window", "packing"):
            setattr(self, key, info[key])
        self.query_rows = info["rows"]  # the queries of every sequence: sum(query_lens)
        self.k_scale, self.v_scale, self.softmax_scale = (
            float(np.uint32(b).view(np.float32)) for b in info["scale_bits"])
        self._arrays = {}

    def _array(self, name, dtype, shape):
        if name not in self._arrays:
            size = _native.ctypes.c_size_t(0)
            data = _native.take_bytes(
                _native.lib.fp8kv_py_suite_array(
                    _native.text(self.vectors, "vectors"), _native.text(self.profile, "profile"),
                    _native.c_index(self.index), _native.text(name, "array"),
                    _native.ctypes.byref(size)), size.value)
            a = np.frombuffer(data, dtype).reshape(shape)
            a.setflags(write=False)
            self._arrays[name] = a
        return self._arrays[name]

    key_cache_shape = KVCase.key_cache_shape
    value_cache_shape = KVCase.value_cache_shape

    @property
    def query(self):
        """float32 [rows, num_q_heads, head_size]: a row per query, sequence 0's first."""
        return self._array("query", np.float32,
                           (self.query_rows, self.num_q_heads, self.head_size))

    @property
    def query_lens(self):
        """int32 [num_seqs]: the queries of each sequence, its last tokens (1: a decode step;
        more: multi-token decode, or (chunked) prefill); each attends causally to the tokens
        up to itself, the last `window` of them when window > 0."""
        return self._array("query_lens", np.int32, (self.num_seqs,))

    @property
    def key_cache(self):
        return self._array("key_cache", np.uint8, self.key_cache_shape)

    @property
    def value_cache(self):
        return self._array("value_cache", np.uint8, self.value_cache_shape)

    @property
    def block_table(self):
        return self._array("block_table", np.int32, (self.num_seqs, self.max_blocks_per_seq))

    @property
    def seq_lens(self):
        return self._array("seq_lens", np.int32, (self.num_seqs,))

    @property
    def read_scales(self):
        return self.k_scale, self.v_scale

    def reference(self, arithmetic="f32"):
        """The golden output under a declared arithmetic (fp8kv.declared_arithmetic), as
        judge_attention uses it: (exact, lo, hi), float64 [rows, num_q_heads, head_size] each:
        the exact result of the arithmetic's elementwise roundings, and the interval of the
        output dtype every correct implementation's output lies in (docs/DESIGN.md §5.3.1).
        Computed by the C library when asked (seconds for the largest case), its digest checked
        against the committed one."""
        shape = (self.query_rows, self.num_q_heads, self.head_size)
        exact, lo, hi = (np.empty(shape, np.float64) for _ in range(3))
        _native.check(_native.lib.fp8kv_py_suite_reference(
            _native.text(self.vectors, "vectors"), _native.text(self.profile, "profile"),
            _native.c_index(self.index), _native.text(arithmetic, "arithmetic"),
            exact.ctypes.data, lo.ctypes.data, hi.ctypes.data, exact.size))
        for a in (exact, lo, hi):
            a.setflags(write=False)
        return exact, lo, hi

    def kv_cache(self, packing=None):
        """The key and value caches as one tensor of packing (default: the case's own;
        pack_caches): kv_first [2, num_blocks, ...], block_first [num_blocks, 2, ...]."""
        return pack_caches(self.key_cache, self.value_cache, packing or self.packing)

    query_in = KVCase.query_in

    @property
    def id(self):
        return f"{self.profile}-engine{self.index}"

    def __repr__(self):
        return f"EngineCase({self.profile} engine/case{self.index} {self.words})"

    def judge_attention(self, out, arithmetic="f32", subject="engine"):
        return judge_attention(self, out, arithmetic=arithmetic, subject=subject).check()

    def judge_store(self, *args, **kwargs):
        return judge_store(self, *args, **kwargs).check()

    def judge_gather(self, *args, **kwargs):
        return judge_gather(self, *args, **kwargs).check()


def engine_case(profile, index, vectors=None):
    """Case index of the engine suite under profile (generated and checked: an EngineCase)."""
    vectors = str(vectors or default_vectors())
    name = _native.text(profile, "profile")
    index = _native.case_index(index)
    count = _native.lib.fp8kv_py_suite_count()
    if not 0 <= index < count:
        raise _native.Fp8kvError(f"unknown engine-suite case {index}: the suite has cases "
                                 f"0..{count - 1}")
    text = _native.take_string(_native.lib.fp8kv_py_suite_case_json(
        _native.text(vectors, "vectors"), name, index))
    return EngineCase(json.loads(text), vectors)


def profiles():
    """The names of the profiles (vectors/README.md)."""
    return _native.profiles()


def _case_count(profile, vectors):
    """The number of golden cases of profile, after verifying vectors in full (every call)."""
    count = _native.ctypes.c_int(0)
    _native.check(_native.lib.fp8kv_py_case_count(_native.text(vectors, "vectors"),
                                                  _native.text(profile, "profile"),
                                                  _native.ctypes.byref(count)))
    return count.value


def kv_cases(profile, vectors=None, suite="golden"):
    """Every case of profile in a suite: "golden" (default), the golden KV cases, loaded and
    validated, a list of KVCase — the vectors are verified against MANIFEST.json and
    SHA256SUMS in full at every call, and every file of a case is read once and checked against
    the digest verification kept (truth changed since is an Fp8kvError naming the file, as it
    is when a judge_* reads the case again); "engine", the engine suite's decode cases, a list
    of EngineCase (generated when first used, their inputs checked against the committed
    digests)."""
    vectors = str(vectors or default_vectors())
    if suite == "engine":
        return [engine_case(profile, i, vectors)
                for i in range(_native.lib.fp8kv_py_suite_count())]
    if suite != "golden":
        raise _native.Fp8kvError(f"suite={suite!r}: give \"golden\" or \"engine\"")
    return [kv_case(profile, i, vectors) for i in range(_case_count(profile, vectors))]


def kv_case(profile, index, vectors=None):
    """Golden case index (an int) of profile."""
    vectors = str(vectors or default_vectors())
    name = _native.text(profile, "profile")
    index = _native.case_index(index)
    if not 0 <= index <= _native.INT_MAX:  # C's int: 2**32 + 3 would be case 3 there
        count = _case_count(profile, vectors)
        raise _native.Fp8kvError(f"unknown case {index}: profile {profile} has cases "
                                 f"0..{count - 1}")
    text = _native.take_string(_native.lib.fp8kv_py_case_json(_native.text(vectors, "vectors"),
                                                               name, index))
    return KVCase(json.loads(text), vectors)
