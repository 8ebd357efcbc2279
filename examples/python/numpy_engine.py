"""A paged fp8 KV cache written the way engines write it, in numpy + ml_dtypes: the store
(reshape_and_cache with a slot mapping), the gather + dequant, and a paged decode step, with
scales per tensor (a float), per KV head (an array [num_heads]) or per token and head (the
store computes amax / max over each row it writes into a scale cache [num_blocks, block_size,
num_heads], which the reads take the scales from). It is an example subject for fp8kv's Python package: test_numpy_engine.py
judges it on every golden case. `faults` plants the bugs engines ship, so the tests can show
fp8kv catching each one:

  scale_ignored   x stored without dividing by its scale
  k_scale_for_v   the value cache written with k_scale
  padding_written a padding token (slot -1) written to the last slot of the cache
  fnuz_bytes      e4m3fnuz bytes written into an OCP (e4m3fn) cache
  split_x_8       the split-x key layout with x = 8 instead of 16
  head0_scale     per-head scales: every head stored with head 0's scale
  recip_row       per-token scales: amax * (1 / max) instead of amax / max
"""
import ml_dtypes
import numpy as np

FORMATS = {  # profile prefix -> (numpy fp8 type, largest finite value)
    "e4m3fn": (ml_dtypes.float8_e4m3fn, 448.0),
    "e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, 240.0),
}


def fp8_type(profile):
    return FORMATS[profile.split("_")[0]]


def quantize(x, scale, profile):
    """x / scale in float32 (scale broadcast against x), saturated under *_satfinite profiles,
    rounded to fp8: the codes."""
    fp8, largest = fp8_type(profile)
    q = x.astype(np.float32) / np.asarray(scale, np.float32)
    if "satfinite" in profile:
        q = np.clip(q, -largest, largest)  # Inf clamps too; NaN stays NaN
    return q.astype(fp8).view(np.uint8)


def block_size_of(cache, layout):
    """The block size of a cache of this layout (key or value)."""
    return {"nhd": cache.shape[1], "hnd": cache.shape[2]}.get(layout, cache.shape[3])


def cache_index(layout, is_key, slots, block_size, num_heads, head_size, x=16):
    """Index arrays into a cache of this layout for every (token, head, dim) of slots."""
    block = (slots // block_size)[:, None, None]
    off = (slots % block_size)[:, None, None]
    h = np.arange(num_heads)[None, :, None]
    d = np.arange(head_size)[None, None, :]
    if layout == "nhd":
        return block, off, h, d
    if layout == "hnd":
        return block, h, off, d
    if is_key:
        return block, h, d // x, off, d % x
    return block, h, d, off


def row_scales(x, profile, faults=()):
    """Per token and head: amax / max over each row's finite elements (1 for a zero row), as
    float32 [tokens, heads]."""
    _, largest = fp8_type(profile)
    a = np.abs(x.astype(np.float32))
    amax = np.where(np.isfinite(a), a, np.float32(0)).max(axis=2)
    if "recip_row" in faults:
        s = amax * (np.float32(1) / np.float32(largest))
    else:
        s = amax / np.float32(largest)
    return np.where(s > 0, s, np.float32(1)).astype(np.float32)


def store_scale(x, scale, scale_cache, slots, profile, faults):
    """The scales of x's rows [tokens, heads, 1]: a float, an array per head, or (scale None)
    per token and head, then also written into scale_cache at (slot, head)."""
    if scale is None:
        s = row_scales(x, profile, faults)
        scale_cache.reshape(-1, x.shape[1])[slots] = s
        return s[:, :, None]
    s = np.asarray(scale, np.float32)
    if s.ndim == 1 and "head0_scale" in faults:
        s = np.full_like(s, s[0])
    return s[None, :, None] if s.ndim == 1 else s


def store(key, value, slot_mapping, key_cache, value_cache, k_scale, v_scale, layout, profile,
          faults=(), k_scale_cache=None, v_scale_cache=None):
    """reshape_and_cache: token t's key and value rows go to slot slot_mapping[t] (-1: skip).
    k_scale, v_scale: floats, arrays per head, or None for scales per token and head (then
    written into k_scale_cache, v_scale_cache)."""
    slots = slot_mapping.astype(np.int64)
    heads, head = key.shape[1], key.shape[2]
    block_size = block_size_of(key_cache, layout)
    if "padding_written" in faults:  # padding lands in the first slot no token owns
        free = np.setdiff1d(np.arange(key_cache.size // (heads * head)), slots)
        slots = np.where(slots < 0, free[0], slots)
    keep = slots >= 0
    fmt = profile.replace("e4m3fn_", "e4m3fnuz_") if "fnuz_bytes" in faults else profile
    ks = 1.0 if "scale_ignored" in faults else k_scale
    vs = 1.0 if "scale_ignored" in faults else (k_scale if "k_scale_for_v" in faults else v_scale)
    x = 8 if "split_x_8" in faults else 16
    key_view = key_cache if layout != "split_x" else \
        key_cache.reshape(key_cache.shape[0], heads, head // x, block_size, x)
    ki = cache_index(layout, True, slots[keep], block_size, heads, head, x)
    vi = cache_index(layout, False, slots[keep], block_size, heads, head)
    ks = store_scale(key[keep], ks, k_scale_cache, slots[keep], profile, faults)
    if "k_scale_for_v" in faults and v_scale is None:  # per token: the key rows' scales
        v_scale_cache.reshape(-1, heads)[slots[keep]] = ks[:, :, 0]
        vs = ks
    else:
        vs = store_scale(value[keep], vs, v_scale_cache, slots[keep], profile, faults)
    key_view[ki] = quantize(key[keep], ks, fmt)
    value_cache[vi] = quantize(value[keep], vs, fmt)


def _token_slots(block_table, seq_lens, block_size):
    """The slot of every token of every sequence, sequences one after the other."""
    slots = []
    for i, n in enumerate(seq_lens):
        pos = np.arange(int(n))
        slots.append(block_table[i, pos // block_size].astype(np.int64) * block_size +
                     pos % block_size)
    return np.concatenate(slots) if slots else np.zeros(0, np.int64)


def read_scale(scale, slots, num_heads):
    """The scales of the rows at slots [tokens, heads, 1] (or a float): a float, an array per
    head, or a scale cache [num_blocks, block_size, num_heads] read at (slot, head)."""
    s = np.asarray(scale, np.float32)
    if s.ndim == 0:
        return s
    if s.ndim == 1:
        return s[None, :, None]
    return s.reshape(-1, num_heads)[slots][:, :, None]


def dequant(cache, slots, is_key, scale, layout, profile, num_heads, head_size):
    """float32 rows [tokens, heads, head_size]: decode(code) * scale, rounded to f32."""
    fp8, _ = fp8_type(profile)
    block_size = block_size_of(cache, layout)
    codes = cache[cache_index(layout, is_key, slots, block_size, num_heads, head_size)]
    return codes.view(fp8).astype(np.float32) * read_scale(scale, slots, num_heads)


def gather(key_cache, value_cache, block_table, seq_lens, k_scale, v_scale, layout, profile,
           num_heads, head_size, out_dtype):
    """Gather + dequant: the key rows then the value rows of every sequence, in out_dtype."""
    block_size = block_size_of(key_cache, layout)
    slots = _token_slots(block_table, seq_lens, block_size)
    k = dequant(key_cache, slots, True, k_scale, layout, profile, num_heads, head_size)
    v = dequant(value_cache, slots, False, v_scale, layout, profile, num_heads, head_size)
    return np.stack([k, v]).astype(out_dtype)


def paged_attention(query, key_cache, value_cache, block_table, seq_lens, k_scale, v_scale,
                    softmax_scale, layout, profile):
    """One decode step: for each sequence and q head, softmax(scale * q.k) . v in float32."""
    num_seqs, q_heads, head_size = query.shape
    num_heads = key_cache.shape[2] if layout == "nhd" else key_cache.shape[1]
    block_size = block_size_of(key_cache, layout)
    out = np.zeros(query.shape, np.float32)
    for i in range(num_seqs):
        slots = _token_slots(block_table[i:i + 1], seq_lens[i:i + 1], block_size)
        if slots.size == 0:
            continue
        k = dequant(key_cache, slots, True, k_scale, layout, profile, num_heads, head_size)
        v = dequant(value_cache, slots, False, v_scale, layout, profile, num_heads, head_size)
        group = q_heads // num_heads
        for h in range(q_heads):
            s = np.float32(softmax_scale) * (k[:, h // group, :] @ query[i, h].astype(np.float32))
            p = np.exp(s - s.max())
            out[i, h] = (p / p.sum()) @ v[:, h // group, :]
    return out
