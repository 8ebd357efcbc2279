"""Shared helpers of the torch and Triton examples: golden-case arrays as CUDA tensors. Without
torch or a CUDA device the example tests are not collected (there is nothing to judge)."""
import importlib.util

import numpy as np


def _cuda():
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


if not _cuda():
    collect_ignore_glob = ["test_*.py"]
else:
    import torch

DEVICE = "cuda"


def tensor(a):
    """A numpy array of a golden case on the GPU (ml_dtypes bfloat16 as torch.bfloat16)."""
    a = np.array(a)  # a writable copy: the case's arrays are read-only, torch wants to own one
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).to(DEVICE).view(torch.bfloat16)
    return torch.from_numpy(a).to(DEVICE)


def caches(case):
    """Fresh caches on the GPU, filled with the 0xA5 sentinel, in the case's layout."""
    k, v = case.new_caches()
    return tensor(k), tensor(v)


def scale_caches(case):
    """Fresh float32 scale caches on the GPU (0xA5 bytes) for a case with a scale per token
    and head; (None, None) for the others."""
    ks, vs = case.new_scale_caches()
    return (None, None) if ks is None else (tensor(ks), tensor(vs))
