"""Turning what users hand in (numpy arrays, torch tensors, anything with __array__ or DLPack)
into contiguous numpy arrays of raw bits, without changing a single bit."""
import sys

import numpy as np

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _from_torch(x):
    torch = sys.modules["torch"]
    x = x.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    size = x.element_size()
    if not (x.dtype.is_floating_point or x.dtype in (torch.uint8, torch.int8)):
        return np.ascontiguousarray(x.numpy())
    # bfloat16 and the float8 types have no numpy dtype: take their bits
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[size]
    bits = np.ascontiguousarray(x.contiguous().view(as_int).numpy()).view(_BITS[size])
    return bits, str(x.dtype).replace("torch.", "")


def to_numpy(x):
    """(array, dtype name): a C-contiguous numpy array and the name of its element type
    ("float32", "float16", "bfloat16", "float8_e4m3fn", "uint8", ...)."""
    if type(x).__module__.startswith("torch") and "torch" in sys.modules:
        got = _from_torch(x)
        if isinstance(got, tuple):
            return got
        return got, got.dtype.name
    if not isinstance(x, np.ndarray) and not hasattr(x, "__array__") and hasattr(x, "__dlpack__"):
        x = np.from_dlpack(x)
    a = np.ascontiguousarray(np.asarray(x))
    return a, a.dtype.name


def bits_of(a, itemsize):
    """The array viewed as unsigned integers of itemsize bytes (the same bytes)."""
    if a.dtype.itemsize != itemsize:
        raise ValueError(f"elements of {a.dtype.itemsize} bytes, expected {itemsize}")
    return np.ascontiguousarray(a).reshape(-1).view(_BITS[itemsize])
