"""A paged fp8 KV cache written the way engines write it, in numpy + ml_dtypes: the store
(reshape_and_cache with a slot mapping and per-tensor scales), the gather + dequant, and a
paged decode step. It is an example subject for fp8kv's Python package: test_numpy_engine.py
judges it on every golden case. `faults` plants the bugs engines ship, so the tests can show
fp8kv catching each one:

  scale_ignored   x stored without dividing by its scale
  k_scale_for_v   the value cache written with k_scale
  padding_written a padding token (slot -1) written to the last slot of the cache
  fnuz_bytes      e4m3fnuz bytes written into an OCP (e4m3fn) cache
  split_x_8       the split-x key layout with x = 8 instead of 16
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
    """x / scale in float32, saturated under *_satfinite profiles, rounded to fp8: the codes."""
    fp8, largest = fp8_type(profile)
    q = x.astype(np.float32) / np.float32(scale)
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


def store(key, value, slot_mapping, key_cache, value_cache, k_scale, v_scale, layout, profile,
          faults=()):
    """reshape_and_cache: token t's key and value rows go to slot slot_mapping[t] (-1: skip)."""
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


def dequant(cache, slots, is_key, scale, layout, profile, num_heads, head_size):
    """float32 rows [tokens, heads, head_size]: decode(code) * scale, rounded to f32."""
    fp8, _ = fp8_type(profile)
    block_size = block_size_of(cache, layout)
    codes = cache[cache_index(layout, is_key, slots, block_size, num_heads, head_size)]
    return codes.view(fp8).astype(np.float32) * np.float32(scale)


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
