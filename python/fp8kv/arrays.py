"""Turning what users hand in (numpy arrays, torch tensors, anything with __array__ or DLPack)
into C-contiguous, native-byte-order numpy arrays, without changing a single value's bits."""
import sys

import numpy as np

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _is_torch_tensor(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _from_torch(x, check):
    """A tensor (any device) as (numpy array, dtype name): float16/32/64 and integer tensors as
    their numpy dtype; bfloat16 and the float8 types, which numpy lacks, as their raw bits.
    check (if not None) sees the tensor's shape first, before anything is copied."""
    torch = sys.modules["torch"]
    x = x.detach()
    name = str(x.dtype).replace("torch.", "")
    if check is not None:
        check(tuple(x.shape), x.element_size(), name)
    if x.device.type != "cpu":
        x = x.cpu()
    x = x.contiguous()
    if x.dtype in (torch.float16, torch.float32, torch.float64) or not x.dtype.is_floating_point:
        a = x.numpy()
        return a, a.dtype.name
    as_int = {1: torch.uint8, 2: torch.int16}.get(x.element_size())
    if as_int is None:
        raise TypeError(f"torch dtype {name} is not one fp8kv reads")
    return np.ascontiguousarray(x.view(as_int).numpy()).view(_BITS[x.element_size()]), name


def to_numpy(x, check=None):
    """(array, dtype name): a C-contiguous numpy array in native byte order (0-d stays 0-d) and
    the name of its element type ("float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"...).
    bfloat16 and float8 tensors come as raw bits under their own name. check(shape, itemsize,
    name), when given, is called before anything is copied (a broadcast view, a strided or
    big-endian array, a GPU tensor) and raises to refuse the input: a wrong size is refused
    without ever being materialized."""
    if _is_torch_tensor(x):
        return _from_torch(x, check)
    if not isinstance(x, np.ndarray) and not hasattr(x, "__array__") and hasattr(x, "__dlpack__"):
        x = np.from_dlpack(x)
    a = np.asarray(x)  # an array as it is: a view, never a copy of one
    if check is not None:
        check(a.shape, a.dtype.itemsize, a.dtype.name)
    if not a.dtype.isnative:  # '>f4' and friends: the values, in this machine's byte order
        a = a.astype(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a) if a.ndim else a, a.dtype.name


def bits_of(a, itemsize):
    """The array viewed as unsigned integers of itemsize bytes (the same bytes)."""
    if a.dtype.itemsize != itemsize:
        raise ValueError(f"elements of {a.dtype.itemsize} bytes, expected {itemsize}")
    return np.ascontiguousarray(a).reshape(-1).view(_BITS[itemsize])
