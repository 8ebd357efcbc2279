"""Paged decode attention over an fp8 cache written the way engines write it, in numpy +
ml_dtypes, in every arithmetic fp8kv names: q in f32/bf16/f16, K*s and V*s rounded to the
operand dtype (or the fp8 values taken exactly with the scales folded into the scores and the
output, FlashInfer's way), tf32 operands, P rounded to bf16/f16/e4m3, the output rounded to its
dtype. Every choice a correct kernel may make differently is drawn at random from `rng`: the
order of the dot products (a permutation of the head dimension), split-K partitions of random
lengths merged by their (max, sum, accumulator) states or by normalized outputs and
log-sum-exps, online-softmax tiles of random lengths, exp or exp2 with log2(e) folded into the
scale, the softmax denominator summed from the rounded or the unrounded P, normalization after
P.V or before it (two passes), tf32 by truncation or rounding. fp8kv must pass every such draw.

`faults` plants the bugs engines ship, so the tests can show fp8kv catching each one:

  drop_last        the last token of each sequence left out
  extra_token      one token past the end of each sequence read as well
  k_scale_ignored  K dequantized without its scale
  scales_swapped   K dequantized with the v scale and V with the k scale
  softmax_scale_1pct  the softmax scale 1% too large
  block_off_by_one each block-table entry read one block further
  q_fp8_noscale    q rounded to the cache's fp8 dtype with no scale before the dot (SGLang's)
  no_max_sub       exp(s) without subtracting the running maximum
  causal_ignored   every query of a sequence sees all its tokens (multi-token decode, prefill)
  window_ignored   a sliding window ignored: every earlier token seen
"""
import math

import ml_dtypes
import numpy as np

F32 = np.float32
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16,
          "e4m3": ml_dtypes.float8_e4m3fn}
FP8 = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
       "e5m2": ml_dtypes.float8_e5m2, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz}
FAULTS = ("drop_last", "extra_token", "k_scale_ignored", "scales_swapped", "softmax_scale_1pct",
          "block_off_by_one", "q_fp8_noscale", "no_max_sub", "causal_ignored", "window_ignored")

# the presets of fp8kv's declared arithmetics: (q, kv: "scaled" | "folded", kv dtype, dot, P,
# out)
PRESETS = {
    "f32": ("f32", "scaled", "f32", "f32", "f32", "f32"),
    "tf32": ("f32", "scaled", "f32", "tf32", "tf32", "f32"),
    "bf16": ("bf16", "scaled", "bf16", "f32", "bf16", "bf16"),
    "f16": ("f16", "scaled", "f16", "f32", "f16", "f16"),
    "bf16-folded": ("bf16", "folded", "bf16", "f32", "bf16", "bf16"),
    "f16-folded": ("f16", "folded", "f16", "f32", "f16", "f16"),
    "fp8": ("bf16", "scaled", "bf16", "f32", "e4m3", "bf16"),
}


def rounded(x, dtype):
    """x (float32) rounded to nearest even in dtype ("f32", "bf16", "f16", "e4m3"), back in
    float32."""
    return np.asarray(x, F32).astype(DTYPES[dtype]).astype(F32)


def tf32(x, truncate):
    """x (float32) with its significand cut to tf32's 11 bits: truncated, or rounded to
    nearest (ties away, as cvt.rna does)."""
    bits = np.ascontiguousarray(x, F32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    if not truncate:
        bits = np.where(finite, bits + np.uint32(0x1000), bits)
    return np.where(finite, bits & np.uint32(0xFFFFE000), bits).view(F32)


class Draw:
    """The implementation choices of one correct kernel, drawn from rng (None: the plain
    choices: one partition, one tile, exp, normalized after P.V)."""

    def __init__(self, rng):
        self.rng = rng
        pick = (lambda *xs: xs[rng.integers(len(xs))]) if rng is not None else (lambda *xs: xs[0])
        self.exp2 = pick(False, True)
        self.l_rounded = pick(False, True)
        self.merge = pick("state", "lse")
        self.before = pick(False, False, True)
        self.truncate_tf32 = pick(True, False)
        self.fold_scales = pick(True, False)  # softmax and k scales in one multiply or two

    def partitions(self, n):
        if self.rng is None or n < 2:
            return [(0, n)]
        parts = int(self.rng.integers(1, min(n, 8) + 1))
        cuts = sorted(self.rng.choice(np.arange(1, n), size=parts - 1, replace=False))
        edges = [0, *map(int, cuts), n]
        return list(zip(edges[:-1], edges[1:]))

    def tiles(self, lo, hi, tile):
        if self.rng is None:
            return [(lo, hi)]
        out, at = [], lo
        while at < hi:
            step = int(self.rng.integers(tile, 4 * tile + 1))
            out.append((at, min(hi, at + step)))
            at += step
        return out

    def order(self, d):
        return self.rng.permutation(d) if self.rng is not None else np.arange(d)


def _exp(x, draw):
    if draw.exp2:  # exp2((s - m) log2 e): log2 e in f32, as FlashInfer does
        return np.exp2(x * F32(math.log2(math.e))).astype(F32)
    return np.exp(x).astype(F32)


def _gather(cache, codes_of, table_row, n, block_size):
    slots = np.array([table_row[t // block_size] * block_size + t % block_size for t in range(n)],
                     dtype=np.int64)
    return codes_of(cache, slots)


def paged_decode(case, arithmetic="f32", rng=None, faults=()):
    """One decode step of every sequence of case (an fp8kv.KVCase: its query, golden caches,
    block table, lengths and scales), computed in the declared arithmetic (a preset name of
    PRESETS) with implementation choices drawn from rng: out [num_seqs, num_q_heads, head_size]
    in the arithmetic's output dtype."""
    q_t, kv_mode, kv_t, dot, p_t, out_t = PRESETS[arithmetic]
    fp8 = FP8[case.profile.split("_")[0]]
    bs, D, H = case.block_size, case.head_size, case.num_heads
    group = case.num_q_heads // H
    sm = F32(case.softmax_scale * (1.01 if "softmax_scale_1pct" in faults else 1.0))
    layout = case.layout

    def codes_of(cache, is_key, slots, h):
        blk, off = slots // bs, slots % bs
        if layout == "nhd":
            return cache[blk, off, h, :]
        if layout == "hnd":
            return cache[blk, h, off, :]
        if is_key:  # split-x: [blocks, heads, D / 16, block_size, 16]
            return cache[blk, h, :, off, :].reshape(len(slots), D)
        return cache[blk, h, :, off]

    def scale_of(is_key, slots, h):
        k, v = case.read_scales
        if "scales_swapped" in faults:
            k, v = v, k
        s = k if is_key else v
        if is_key and "k_scale_ignored" in faults:
            return np.ones(len(slots), F32)
        if case.scale_granularity == "tensor":
            return np.full(len(slots), s, F32)
        if case.scale_granularity == "head":
            return np.full(len(slots), s[h], F32)
        return s.reshape(-1, H)[slots, h].astype(F32)

    qlens = getattr(case, "query_lens", None)  # several queries a sequence: its last tokens
    qlens = np.ones(case.num_seqs, np.int64) if qlens is None else np.asarray(qlens)
    window = 0 if "window_ignored" in faults else getattr(case, "window", 0)
    out = np.zeros((int(qlens.sum()), case.num_q_heads, D), DTYPES[out_t])
    first = np.concatenate([[0], np.cumsum(qlens)[:-1]])
    for i in range(case.num_seqs):
        extra = ("extra_token" in faults) - ("drop_last" in faults)
        n = max(int(case.seq_lens[i]) + max(extra, 0), 0)
        row = case.block_table[i].astype(np.int64)
        if "block_off_by_one" in faults:
            row = (row + 1) % case.num_blocks
        tokens = np.arange(n)
        blocks = np.minimum(tokens // bs, row.size - 1)
        slots = row[blocks] * bs + tokens % bs
        for g in range(H):
            kc = codes_of(case.key_cache, True, slots, g).view(fp8).astype(F32)
            vc = codes_of(case.value_cache, False, slots, g).view(fp8).astype(F32)
            ks, vs = scale_of(True, slots, g), scale_of(False, slots, g)
            if kv_mode == "scaled":
                K = rounded(kc * ks[:, None], kv_t)
                V = rounded(vc * vs[:, None], kv_t)
            else:  # folded: the fp8 values exactly; the scales on S and O
                K, V = kc, vc
            for j in range(int(qlens[i])):
                # query j is token seq_len - qlens + j: it sees the tokens up to itself (the
                # last `window` of them)
                hi = max(int(case.seq_lens[i]) - int(qlens[i]) + j + 1 + extra, 0)
                if "causal_ignored" in faults:
                    hi = max(int(case.seq_lens[i]) + extra, 0)
                lo = hi - window if window and hi > window else 0
                for h in range(g * group, (g + 1) * group):
                    q = case.query[first[i] + j, h].astype(F32)
                    if "q_fp8_noscale" in faults:
                        q = q.astype(fp8).astype(F32)
                    q = rounded(q, q_t)
                    o = _one_head(q, K[lo:hi], V[lo:hi], ks[lo:hi], vs[lo:hi], sm, kv_mode, dot,
                                  p_t, hi - lo, Draw(rng), faults)
                    out[first[i] + j, h] = o.astype(DTYPES[out_t])
    return out


def _one_head(q, K, V, ks, vs, sm, kv_mode, dot, p_t, n, draw, faults):
    D = q.size
    if n == 0:
        return np.zeros(D, F32)
    perm = draw.order(D)
    qo, Ko = q[perm], K[:, perm]
    if dot == "tf32":
        qo, Ko = tf32(qo, draw.truncate_tf32), tf32(Ko, draw.truncate_tf32)
        V = tf32(V, draw.truncate_tf32)
    raw = (Ko @ qo).astype(F32)  # f32 products and sums (BLAS's order)
    if kv_mode == "folded":
        s = raw * (sm * ks) if draw.fold_scales else (raw * ks) * sm
    else:
        s = raw * sm
    s = s.astype(F32)

    def round_p(p):
        if dot == "tf32" or p_t == "tf32":
            return tf32(p, draw.truncate_tf32)
        return rounded(p, p_t)

    if "no_max_sub" in faults:
        p = np.exp(s).astype(F32)
        o = (round_p(p) @ V).astype(F32) / F32(p.sum(dtype=F32))
        return o * vs[0] if kv_mode == "folded" else o

    if draw.before:  # two passes: max and sum first, then sum_t RN(p_t / l) v_t
        m = s.max()
        p = _exp(s - m, draw)
        l = F32(p.sum(dtype=F32))
        o = (round_p((p / l).astype(F32)) @ V).astype(F32)
        return (o * vs[0]).astype(F32) if kv_mode == "folded" else o

    states = []
    for lo, hi in draw.partitions(n):
        m_run, l_run, acc = F32(-np.inf), F32(0), np.zeros(D, F32)
        for a, b in draw.tiles(lo, hi, 16):
            m_new = np.maximum(m_run, s[a:b].max())  # NaN propagates (fmaxf would drop it)
            if m_new == -np.inf:  # every score so far -Inf (an Inf key): nothing to weigh yet
                continue
            alpha = _exp(np.array([m_run - m_new], F32), draw)[0] if m_run > -np.inf else F32(0)
            p = _exp(s[a:b] - m_new, draw)
            pr = round_p(p)
            l_run = F32(alpha * l_run + (pr if draw.l_rounded else p).sum(dtype=F32))
            acc = (alpha * acc + pr @ V[a:b]).astype(F32)
            m_run = m_new
        states.append((m_run, l_run, acc))
    states = [st for st in states if st[0] != -np.inf] or states[:1]  # NaN states stay
    if draw.merge == "state":
        m = np.max([st[0] for st in states])  # NaN propagates (Python's max would drop it)
        acc, l = np.zeros(D, F32), F32(0)
        for mj, lj, aj in states:
            c = _exp(np.array([mj - m], F32), draw)[0]
            acc = (acc + c * aj).astype(F32)
            l = F32(l + c * lj)
        o = (acc / l).astype(F32)
    else:  # each partition normalized, merged by log-sum-exp (FlashInfer's merge_state)
        outs = [(aj / lj).astype(F32) for _, lj, aj in states]
        lse = [F32(mj + np.log(lj)) for mj, lj, _ in states]
        top = np.max(lse)
        w = [np.exp(F32(x - top)).astype(F32) for x in lse]
        o = sum(((wj * oj).astype(F32) for wj, oj in zip(w, outs)), np.zeros(D, F32))
        o = (o / F32(sum(w, F32(0)))).astype(F32)
    return (o * vs[0]).astype(F32) if kv_mode == "folded" else o
