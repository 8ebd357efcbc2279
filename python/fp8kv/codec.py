"""Exact fp8 encode and decode on numpy arrays, with the C codec proven equal to the oracle."""
import numpy as np

from . import _native
from .arrays import to_numpy

MODELS = _native.names("kernel_model")  # the scale models a kernel computes, exact excluded
DEFAULT_PROFILE = _native.default("profile")
DEFAULT_MODEL = _native.default("model")


def _f32_bits(a, name):
    """The f32 bits of every element (exact widening), whether a holds the floats themselves or
    their raw bits (a bfloat16 tensor)."""
    if name == "float32" and a.dtype.itemsize == 4:
        return a.reshape(-1).view(np.uint32)
    if name == "float16" and a.dtype.itemsize == 2:
        return a.reshape(-1).view(np.float16).astype(np.float32).view(np.uint32)  # exact
    if name == "bfloat16" and a.dtype.itemsize == 2:
        return a.reshape(-1).view(np.uint16).astype(np.uint32) << 16  # exact
    raise _native.Fp8kvError(f"encode: {name} input: give float32, float16 or bfloat16")



def encode(x, profile=DEFAULT_PROFILE, scale=1.0, model=DEFAULT_MODEL):
    """The fp8 codes (uint8, x's shape) of x / scale under profile, the quotient computed as
    the scale model (one of MODELS) says (docs/DESIGN.md §1.1: f32_div is RN32(x / s)), then
    rounded once to the format. Exact: the C bits codec, which the tests sweep against the MPFR
    oracle over every f32 input."""
    a, name = to_numpy(x)
    bits = np.ascontiguousarray(_f32_bits(a, name))
    out = np.empty(bits.size, np.uint8)
    _native.check(_native.lib.fp8kv_py_encode(
        _native.text(profile, "profile"), _native.text(model, "model"), float(np.float32(scale)),
        bits.ctypes.data_as(_native.ctypes.c_void_p), bits.size,
        out.ctypes.data_as(_native.ctypes.c_void_p)))
    return out.reshape(a.shape)


def decode(codes, profile=DEFAULT_PROFILE, scale=1.0):
    """float32 values of the codes times scale, rounded once to f32 (the read path's model;
    NaN codes give NaN)."""
    a, _ = to_numpy(codes)
    if a.dtype.itemsize != 1 or a.dtype.kind == "b":
        raise _native.Fp8kvError("decode: codes are one byte each (uint8 or a float8 type)")
    c = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    out = np.empty(c.size, np.float32)
    _native.check(_native.lib.fp8kv_py_decode(
        _native.text(profile, "profile"), float(np.float32(scale)),
        c.ctypes.data_as(_native.ctypes.c_void_p),
        c.size, out.ctypes.data_as(_native.ctypes.c_void_p)))
    return out.reshape(a.shape)
