"""A Triton store kernel and a Triton paged-decode kernel for an fp8 (e4m3fn) KV cache in the
NHD layout, written in the style engines use (one program per token and head for the store;
one per sequence and q head, an online softmax over blocks of tokens, for the decode).

`div` picks the store's division: "rn" (tl.div_rn, correctly rounded, what the golden
cases model) or "fast" (the `/` operator, which Triton compiles to an approximate division
on NVIDIA unless told otherwise): the tests judge both and report what each gives. Triton's
f32 -> float8e4nv conversion is the hardware's satfinite one (the e4m3fn_satfinite profile).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _store_kernel(key_ptr, value_ptr, slot_ptr, key_cache_ptr, value_cache_ptr, k_scale, v_scale,
                  HEADS: tl.constexpr, HEAD: tl.constexpr, DIV_RN: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    slot = tl.load(slot_ptr + t)
    d = tl.arange(0, HEAD)
    src = (t * HEADS + h) * HEAD + d
    k = tl.load(key_ptr + src).to(tl.float32)
    v = tl.load(value_ptr + src).to(tl.float32)
    if DIV_RN:
        kq = tl.div_rn(k, k_scale)
        vq = tl.div_rn(v, v_scale)
    else:
        kq = k / k_scale
        vq = v / v_scale
    dst = (slot * HEADS + h) * HEAD + d
    keep = (slot >= 0) & (d < HEAD)
    tl.store(key_cache_ptr + dst, kq.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=keep)
    tl.store(value_cache_ptr + dst, vq.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=keep)


def store(key, value, slot_mapping, key_cache, value_cache, k_scale, v_scale, div="rn"):
    """reshape_and_cache for NHD uint8 caches [blocks, block_size, heads, head] (in place)."""
    tokens, heads, head = key.shape
    if tokens:
        _store_kernel[(tokens, heads)](key.contiguous(), value.contiguous(), slot_mapping,
                                       key_cache, value_cache, float(k_scale), float(v_scale),
                                       HEADS=heads, HEAD=head, DIV_RN=div == "rn")


@triton.jit
def _decode_kernel(q_ptr, key_cache_ptr, value_cache_ptr, table_ptr, lens_ptr, out_ptr,
                   k_scale, v_scale, softmax_scale, max_blocks,
                   Q_HEADS: tl.constexpr, HEADS: tl.constexpr, HEAD: tl.constexpr,
                   BLOCK_SIZE: tl.constexpr, BLOCK_T: tl.constexpr):
    s = tl.program_id(0)
    qh = tl.program_id(1)
    h = qh // (Q_HEADS // HEADS)
    d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + (s * Q_HEADS + qh) * HEAD + d)
    n = tl.load(lens_ptr + s)
    m = tl.full([1], float("-inf"), tl.float32)
    l = tl.zeros([1], tl.float32)
    acc = tl.zeros([HEAD], tl.float32)
    for t0 in range(0, n, BLOCK_T):
        pos = t0 + tl.arange(0, BLOCK_T)
        live = pos < n
        block = tl.load(table_ptr + s * max_blocks + pos // BLOCK_SIZE, mask=live, other=0)
        slot = block.to(tl.int64) * BLOCK_SIZE + pos % BLOCK_SIZE
        at = (slot[:, None] * HEADS + h) * HEAD + d[None, :]
        k = tl.load(key_cache_ptr + at, mask=live[:, None], other=0)
        v = tl.load(value_cache_ptr + at, mask=live[:, None], other=0)
        k = k.to(tl.float8e4nv, bitcast=True).to(tl.float32) * k_scale
        v = v.to(tl.float8e4nv, bitcast=True).to(tl.float32) * v_scale
        scores = tl.sum(q[None, :] * k, axis=1) * softmax_scale
        scores = tl.where(live, scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        p = tl.exp(scores - m_new)
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    out = tl.where(n > 0, acc / l, 0.0)  # an empty sequence gives zeros; a NaN stays NaN
    tl.store(out_ptr + (s * Q_HEADS + qh) * HEAD + d, out)


def paged_decode(query, key_cache, value_cache, block_table, seq_lens, k_scale, v_scale,
                 softmax_scale):
    """One decode step over NHD uint8 caches: out [seqs, q_heads, head] float32."""
    seqs, q_heads, head = query.shape
    heads = key_cache.shape[2]
    out = torch.empty(query.shape, dtype=torch.float32, device=query.device)
    _decode_kernel[(seqs, q_heads)](query.float().contiguous(), key_cache, value_cache,
                                    block_table, seq_lens, out, float(k_scale), float(v_scale),
                                    float(softmax_scale), block_table.shape[1], Q_HEADS=q_heads,
                                    HEADS=heads, HEAD=head, BLOCK_SIZE=key_cache.shape[1],
                                    BLOCK_T=16)
    return out
