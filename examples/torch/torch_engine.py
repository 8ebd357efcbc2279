"""A paged fp8 KV cache written the way engines write it in PyTorch eager (on the GPU when
there is one): the store is `(x.float() / scale).to(float8)` and an index_put into the cache
through the slot mapping; the read is `cache.view(float8).float() * scale`; the decode step is
plain tensor math in float32. `faults` plants the bugs engines ship (as numpy_engine.py):

  scale_ignored   x stored without dividing by its scale
  k_scale_for_v   the value cache written with k_scale
  padding_written a padding token (slot -1) written to the first slot no token owns
  fnuz_bytes      e4m3fnuz bytes written into an OCP (e4m3fn) cache
  split_x_8       the split-x key layout with x = 8 instead of 16

Saturation: torch's conversion gives NaN past the largest finite value (the *_nan profiles);
under *_satfinite profiles the quotient is clamped first, as engines do. Scales are float32
tensors on the device, as engines keep them (a layer's k_scale): dividing by a Python float
instead makes torch multiply by its reciprocal on CUDA (findings.py shows what that gives).
Scales come per tensor (a float), per KV head (an array [heads]) or per token and head (None:
the store computes amax / max over each row it writes, into a scale cache [num_blocks,
block_size, heads] the reads take them from).
"""
import numpy as np
import torch

FP8 = {"e4m3fn": (torch.float8_e4m3fn, 448.0), "e4m3fnuz": (torch.float8_e4m3fnuz, 240.0)}


def fp8_type(profile):
    return FP8[profile.split("_")[0]]


def as_scale(scale, device, scale_as="tensor"):
    """A scale as the kernels divide by it: a float32 device tensor (as engines hold it), or,
    with scale_as "python", a Python float kept as it is."""
    if scale_as == "python" and isinstance(scale, float):
        return scale
    if not torch.is_tensor(scale):
        scale = torch.from_numpy(np.array(scale, np.float32))
    return scale.to(device=device, dtype=torch.float32)


def row_scales(x, profile, scale_as="tensor"):
    """Per token and head: amax / max over each row's finite elements (1 for a zero row),
    float32 [tokens, heads]. With scale_as "python" max is a Python float (then torch
    multiplies by its reciprocal on CUDA)."""
    _, largest = fp8_type(profile)
    a = x.float().abs()
    amax = torch.where(torch.isfinite(a), a, torch.zeros_like(a)).amax(dim=2)
    s = amax / as_scale(largest, x.device, scale_as)
    return torch.where(s > 0, s, torch.ones_like(s))


def store_scales(x, scale, scale_cache, slots, profile, faults, scale_as):
    """The scales of x's rows, broadcastable against x [tokens, heads, head]: a tensor's, a
    head's, or (scale None) each row's own, then also written to scale_cache at (slot, head)."""
    if scale is None:
        s = row_scales(x, profile, scale_as)
        scale_cache.view(-1, x.shape[1])[slots] = s
        return s[:, :, None]
    s = as_scale(scale, x.device, scale_as)
    if not torch.is_tensor(s) or s.ndim == 0:
        return s
    if "head0_scale" in faults:
        s = s[:1].expand_as(s)
    return s[None, :, None]


def quantize(x, scale, profile):
    """fp8 codes of x / scale (scale a float, or a tensor broadcastable against x)."""
    dtype, largest = fp8_type(profile)
    q = x.float() / scale
    if "satfinite" in profile:
        q = q.clamp(-largest, largest)  # NaN stays NaN; +-Inf clamps
    return q.to(dtype).view(torch.uint8)


def block_size_of(cache, layout):
    """The block size of a cache of this layout (key or value)."""
    return {"nhd": cache.shape[1], "hnd": cache.shape[2]}.get(layout, cache.shape[3])


def _index(layout, is_key, slots, block_size, heads, head, x=16):
    dev = slots.device
    block = (slots // block_size)[:, None, None]
    off = (slots % block_size)[:, None, None]
    h = torch.arange(heads, device=dev)[None, :, None]
    d = torch.arange(head, device=dev)[None, None, :]
    if layout == "nhd":
        return block, off, h, d
    if layout == "hnd":
        return block, h, off, d
    if is_key:
        return block, h, d // x, off, d % x
    return block, h, d, off


def store(key, value, slot_mapping, key_cache, value_cache, k_scale, v_scale, layout, profile,
          faults=(), scale_as="tensor", k_scale_cache=None, v_scale_cache=None):
    """reshape_and_cache into uint8 caches of the layout's shape (modified in place); per token
    and head (k_scale, v_scale None) also into the float32 scale caches."""
    heads, head = key.shape[1], key.shape[2]
    block_size = block_size_of(key_cache, layout)
    slots = slot_mapping.to(torch.int64)
    if "padding_written" in faults:
        total = key_cache.numel() // (heads * head)
        owned = torch.zeros(total, dtype=torch.bool, device=slots.device)
        owned[slots[slots >= 0]] = True
        free = torch.nonzero(~owned)[0, 0]
        slots = torch.where(slots < 0, free, slots)
    keep = slots >= 0
    fmt = profile.replace("e4m3fn_", "e4m3fnuz_") if "fnuz_bytes" in faults else profile
    ks = 1.0 if "scale_ignored" in faults else k_scale
    vs = 1.0 if "scale_ignored" in faults else (k_scale if "k_scale_for_v" in faults else v_scale)
    x = 8 if "split_x_8" in faults else 16
    key_view = key_cache if layout != "split_x" else \
        key_cache.view(key_cache.shape[0], heads, head // x, block_size, x)
    ks = store_scales(key[keep], ks, k_scale_cache, slots[keep], profile, faults, scale_as)
    if "k_scale_for_v" in faults and v_scale is None:  # per token: the key rows' scales
        v_scale_cache.view(-1, heads)[slots[keep]] = ks[:, :, 0]
        vs = ks
    else:
        vs = store_scales(value[keep], vs, v_scale_cache, slots[keep], profile, faults, scale_as)
    key_view[_index(layout, True, slots[keep], block_size, heads, head, x)] = \
        quantize(key[keep], ks, fmt)
    value_cache[_index(layout, False, slots[keep], block_size, heads, head)] = \
        quantize(value[keep], vs, fmt)


def token_slots(block_table, seq_lens, block_size):
    """The slot of every token of every sequence, sequences one after the other."""
    out = []
    for i in range(block_table.shape[0]):
        pos = torch.arange(int(seq_lens[i]), device=block_table.device)
        out.append(block_table[i, pos // block_size].to(torch.int64) * block_size +
                   pos % block_size)
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.int64)


def read_scales(scale, slots, heads, device):
    """The scales of the rows at slots: a float, a tensor per head [1, heads, 1], or a scale
    cache [num_blocks, block_size, heads] read at (slot, head) [tokens, heads, 1]."""
    if isinstance(scale, float):
        return scale
    s = as_scale(scale, device)
    if s.ndim == 0:
        return s
    if s.ndim == 1:
        return s[None, :, None]
    return s.reshape(-1, heads)[slots][:, :, None]


def dequant(cache, slots, is_key, scale, layout, profile, heads, head):
    """float32 [tokens, heads, head]: decode(code) * scale, rounded to f32."""
    dtype, _ = fp8_type(profile)
    block_size = block_size_of(cache, layout)
    codes = cache[_index(layout, is_key, slots, block_size, heads, head)]
    return codes.view(dtype).float() * read_scales(scale, slots, heads, cache.device)


def gather(key_cache, value_cache, block_table, seq_lens, k_scale, v_scale, layout, profile,
           heads, head, out_dtype):
    block_size = block_size_of(key_cache, layout)
    slots = token_slots(block_table, seq_lens, block_size)
    k = dequant(key_cache, slots, True, k_scale, layout, profile, heads, head)
    v = dequant(value_cache, slots, False, v_scale, layout, profile, heads, head)
    return torch.stack([k, v]).to(out_dtype)


def paged_attention(query, key_cache, value_cache, block_table, seq_lens, k_scale, v_scale,
                    softmax_scale, layout, profile):
    num_seqs, q_heads, head = query.shape
    heads = key_cache.shape[2] if layout == "nhd" else key_cache.shape[1]
    block_size = block_size_of(key_cache, layout)
    out = torch.zeros(query.shape, dtype=torch.float32, device=query.device)
    group = q_heads // heads
    for i in range(num_seqs):
        slots = token_slots(block_table[i:i + 1], seq_lens[i:i + 1], block_size)
        if slots.numel() == 0:
            continue
        k = dequant(key_cache, slots, True, k_scale, layout, profile, heads, head)
        v = dequant(value_cache, slots, False, v_scale, layout, profile, heads, head)
        k = k.repeat_interleave(group, dim=1)  # [tokens, q_heads, head]
        v = v.repeat_interleave(group, dim=1)
        s = softmax_scale * torch.einsum("hd,thd->ht", query[i].float(), k)
        p = torch.softmax(s, dim=-1)
        out[i] = torch.einsum("ht,thd->hd", p, v)
    return out
