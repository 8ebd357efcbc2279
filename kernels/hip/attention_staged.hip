/* attention_staged.hip — the fast path of paged attention: the NHD layout with head size 128
 * (FD), pass 1 (pass 2 is attention_split.hip's attention_combine).
 *
 * One thread block of FAST_THREADS per (sequence, partition, kv head, GB q heads), as the
 * split-K kernel, the partition sized by the plan for about one wave of resident blocks. The
 * partition is cut in chunks of 32 tokens; warp w takes chunks w, w + FAST_WARPS, ... A warp
 * copies the K and V rows of its next chunks into its own shared-memory stages (cp.async on
 * NVIDIA sm_80+, two chunks ahead, 8 lanes per row so that each copy instruction reads whole
 * rows): many bytes in flight for few registers. For the scores each lane owns one token: it
 * reads its K row back (rows padded by 16 bytes: conflict-free) and dots it with the GB
 * queries, which sit in shared memory, [dimension][head], so that one broadcast 16-byte load
 * feeds 4 fused multiply-adds; no cross-lane reduction per token. The online softmax runs once
 * per chunk (the chunk's maximum by a warp reduction). For P.V each lane owns 4 dimensions of
 * each V row (4 bytes of fp8, 8 of bf16), the weights coming from shared memory (one broadcast
 * load per token). At the end the warps merge through shared memory and the partition writes
 * what pass 2 reads, as the general kernel does. Byte offsets into a cache tensor are 32-bit
 * (the plan checks the size). Dynamic shared memory: the block-table entries (table_words),
 * then the stages, 2 per warp.
 *
 * The stages make it faster for both caches than a variant that loaded the rows straight into
 * registers, since removed (docs/performance.md, §Attention: staged kernel).
 */
#include "attention_common.h"

using namespace fp8kv_gpu;
using namespace fp8kv_gpu::attn;

#if defined(__CUDACC__) && !defined(__HIPCC__)
#define FP8KV_SHFL32(v, src) __shfl_sync(0xFFFFFFFFu, (v), (src))
#define FP8KV_SHFL32_XOR(v, m) __shfl_xor_sync(0xFFFFFFFFu, (v), (m))
#define FP8KV_SYNC32() __syncwarp()
#else /* 32-lane groups of a wavefront, which runs in lockstep */
#define FP8KV_SHFL32(v, src) __shfl((v), (src), 32)
#define FP8KV_SHFL32_XOR(v, m) __shfl_xor((v), (m), 32)
#define FP8KV_SYNC32() __builtin_amdgcn_wave_barrier()
#endif

namespace
{

/* One 32-bit word of a cache (4 fp8 codes or 2 bf16 elements) to f32, exactly. */
template <typename C> struct word_decode;
template <int FORMAT> struct word_decode<fp8_cache<FORMAT>> {
    static constexpr int per_word = 4;
    static __device__ __forceinline__ void run(uint32_t w, float *out)
    {
#ifdef FP8KV_ARCH_NV_SM89_PLUS
        if constexpr (FORMAT == FP8KV_CODEC_E4M3FN)
            e4m3x4_to_f32(w, out);
        else
#endif
#pragma unroll
            for (int k = 0; k < 4; k++)
                out[k] = decode_fast<FORMAT>((w >> (8 * k)) & 0xFFu);
    }
};
template <> struct word_decode<bf16_cache> {
    static constexpr int per_word = 2;
    static __device__ __forceinline__ void run(uint32_t w, float *out)
    {
        out[0] = __uint_as_float(w << 16);
        out[1] = __uint_as_float(w & 0xFFFF0000u);
    }
};

/* A lane's 4 V elements of a row: 4 bytes of fp8, 8 of bf16. */
template <typename C> struct v_words {
    uint32_t w[C::size];
};

/* The shared-memory rows of a cache type. */
template <typename C> struct staged_rows {
    static constexpr int RB = FD * C::size;   /* bytes of a row */
    static constexpr int KS = RB + 16;        /* shared stride of K rows */
    static constexpr int KU = RB / 16;        /* 16-byte units of a row */
    static constexpr int SB = 32 * (KS + RB); /* bytes of a stage: 32 K rows, then 32 V rows */
};

/* The GB queries from q0 into qs, [d][g], scaled. */
template <int GB>
__device__ __forceinline__ void load_queries(const attn_params &p, int seq, int q0, float *qs)
{
    for (int i = threadIdx.x; i < FD * GB; i += FAST_THREADS) {
        const int d = i / GB, g = i % GB;
        qs[i] = p.query[((size_t)seq * p.num_q_heads + q0 + g) * FD + d] * p.q_scale;
    }
}

/* Copies chunk c's K and V rows (tokens t0 + 32 c .. below t1) into the warp's stage s, one
 * commit group: piece x = i * 32 + lane is 16-byte unit x % KU of row x / KU. rowb and headb:
 * the bytes of a cache row and the kv head's offset in it. */
template <typename C>
__device__ __forceinline__ void fill_chunk(const attn_params &p, uint8_t *stages, int c, int s,
                                           int t0, int t1, int lane, const int32_t *blocks,
                                           int first_block, uint32_t rowb, uint32_t headb)
{
    typedef staged_rows<C> R;
    const int t = t0 + c * 32 + lane;
    uint32_t off = 0;
    if (t < t1)
        off = ((uint32_t)blocks[block_index(p, t) - first_block] * (uint32_t)p.shape.block_size +
               (uint32_t)block_pos(p, t)) *
                  rowb +
              headb;
    const int left = t1 - (t0 + c * 32);
    uint8_t *kb = stages + (size_t)s * R::SB, *vb = kb + 32 * R::KS;
#pragma unroll
    for (int i = 0; i < R::KU; i++) {
        const int x = i * 32 + lane, r = x / R::KU, u = x % R::KU;
        const uint32_t o = FP8KV_SHFL32(off, r);
        if (r < left) {
            cp_async(kb + r * R::KS + u * 16, p.key_cache + o + u * 16, 16);
            cp_async(vb + r * R::RB + u * 16, p.value_cache + o + u * 16, 16);
        }
    }
    commit_copies();
}

/* The online softmax over a chunk: e receives the lane's weights (0 for a lane past the
 * end); a NaN score never becomes the maximum and turns l and acc into NaN. */
template <int GB>
__device__ __forceinline__ void chunk_softmax(bool valid, const float (&sc)[GB], float (&m)[GB],
                                              float (&l)[GB], float (&acc)[GB][4], float (&e)[GB])
{
#pragma unroll
    for (int g = 0; g < GB; g++) {
        const float sv = valid ? sc[g] : -INFINITY;
        float top = sv;
#pragma unroll
        for (int mask = 16; mask > 0; mask /= 2)
            top = fmaxf(top, FP8KV_SHFL32_XOR(top, mask));
        if (top > m[g]) {
            const float r = exp2f(m[g] - top);
            m[g] = top;
            l[g] *= r;
#pragma unroll
            for (int k = 0; k < 4; k++)
                acc[g][k] *= r;
        }
        e[g] = valid ? exp2f(sv - m[g]) : 0.0f;
        l[g] += e[g];
    }
}

/* P.V for the lane's 4 dimensions: the chunk's `left` first V rows (in the stage at vb) times
 * their weights pw, added to acc. */
template <typename C, int GB>
__device__ __forceinline__ void chunk_values(const uint8_t *vb, const float (&pw)[32][GB], int lane,
                                             int left, float (&acc)[GB][4])
{
    typedef word_decode<C> W;
    typedef staged_rows<C> R;
#pragma unroll 8
    for (int j = 0; j < 32; j++) {
        if (j >= left)
            break;
        float pv[GB];
#pragma unroll
        for (int g = 0; g < GB; g++)
            pv[g] = pw[j][g];
        v_words<C> vr;
        if constexpr (C::size == 1) {
            vr.w[0] = *reinterpret_cast<const uint32_t *>(vb + j * R::RB + lane * 4);
        } else {
            const uint2 u2 = *reinterpret_cast<const uint2 *>(vb + j * R::RB + lane * 8);
            vr.w[0] = u2.x;
            vr.w[1] = u2.y;
        }
        float vf[4];
#pragma unroll
        for (int w = 0; w < C::size; w++)
            W::run(vr.w[w], vf + w * W::per_word);
#pragma unroll
        for (int g = 0; g < GB; g++)
#pragma unroll
            for (int k = 0; k < 4; k++)
                acc[g][k] = fmaf(pv[g], vf[k], acc[g][k]);
    }
}

/* The warp's state into shared memory (macc over the free stages; mm, ml), then the partition's
 * result from all warps' (merge_partition). */
template <int GB>
__device__ __forceinline__ void
merge_warps(const attn_params &p, float *macc, float (&mm)[FAST_WARPS][GB],
            float (&ml)[FAST_WARPS][GB], int warp, int lane, int seq, int q0, int part,
            const float (&m)[GB], float (&l)[GB], const float (&acc)[GB][4])
{
#pragma unroll
    for (int g = 0; g < GB; g++) {
#pragma unroll
        for (int mask = 16; mask > 0; mask /= 2)
            l[g] += FP8KV_SHFL32_XOR(l[g], mask);
        *reinterpret_cast<float4 *>(&macc[((size_t)warp * GB + g) * FD + lane * 4]) =
            make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
        if (lane == 0) {
            mm[warp][g] = m[g];
            ml[warp][g] = l[g];
        }
    }
    __syncthreads();
    merge_partition<GB, FAST_THREADS>(p, macc, mm, ml, seq, q0, part);
}

template <typename C, int GB>
__global__ void __launch_bounds__(FAST_THREADS, STAGED_MIN_BLOCKS) attention_staged(attn_params p)
{
    allow_combine_launch();
    typedef word_decode<C> W;
    typedef staged_rows<C> R;
    const block_work work = block_work_of(p, GB);
    const int seq = work.seq, part = work.part, kvh = work.kvh, q0 = work.q0;
    const int n = p.seq_lens[seq], t0 = first_token(p.row_first, seq) + part * p.partition;
    if (t0 >= n) {
        skip_partition<GB, FAST_THREADS>(p, seq, q0, part);
        return;
    }
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    __shared__ __align__(16) float qs[FD * GB];            /* [d][g], scaled */
    __shared__ __align__(16) float pw[FAST_WARPS][32][GB]; /* a chunk's weights */
    __shared__ float mm[FAST_WARPS][GB], ml[FAST_WARPS][GB];
    extern __shared__ __align__(16) uint8_t smem[];
    int32_t *blocks = reinterpret_cast<int32_t *>(smem);
    uint8_t *const area = stage_area(smem, p.table_words);
    uint8_t *const stages = area + (size_t)warp * 2 * R::SB;

    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    load_block_table<FAST_THREADS>(p, seq, first_block, nblocks, blocks);
    load_queries<GB>(p, seq, q0, qs);
    __syncthreads();

    const uint32_t rowb = (uint32_t)p.shape.num_heads * FD * C::size;
    const uint32_t headb = (uint32_t)kvh * FD * C::size;
    const int nchunks = (t1 - t0 + 31) / 32;
    /* copies chunk c's rows into stage s (a lambda: the calls compile as before the split) */
    auto fill = [&](int c, int s) {
        fill_chunk<C>(p, stages, c, s, t0, t1, lane, blocks, first_block, rowb, headb);
    };
    float m[GB], l[GB], acc[GB][4];
#pragma unroll
    for (int g = 0; g < GB; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++)
            acc[g][k] = 0.0f;
    }
    int s = 0;
    if (warp < nchunks)
        fill(warp, 0);
    else
        commit_copies();
    if (warp + FAST_WARPS < nchunks)
        fill(warp + FAST_WARPS, 1);
    else
        commit_copies();
    for (int c = warp; c < nchunks; c += FAST_WARPS, s ^= 1) {
        wait_copies<1>();
        FP8KV_SYNC32();
        const uint8_t *kb = stages + (size_t)s * R::SB, *vb = kb + 32 * R::KS;
        const bool valid = t0 + c * 32 + lane < t1;
        float sc[GB];
#pragma unroll
        for (int g = 0; g < GB; g++)
            sc[g] = 0.0f;
#pragma unroll
        for (int u = 0; u < R::KU; u++) { /* the scores: the lane's token against the queries */
            const uint4 kw = *reinterpret_cast<const uint4 *>(kb + lane * R::KS + u * 16);
            const uint32_t words[4] = {kw.x, kw.y, kw.z, kw.w};
            float kf[4 * W::per_word];
#pragma unroll
            for (int w = 0; w < 4; w++)
                W::run(words[w], kf + w * W::per_word);
#pragma unroll
            for (int d4 = 0; d4 < W::per_word; d4++) {
                const int d = u * 4 * W::per_word + d4 * 4;
                float q[4 * GB];
#pragma unroll
                for (int i = 0; i < GB; i++)
                    *reinterpret_cast<float4 *>(q + 4 * i) =
                        *reinterpret_cast<const float4 *>(qs + d * GB + 4 * i);
#pragma unroll
                for (int e = 0; e < 4; e++)
#pragma unroll
                    for (int g = 0; g < GB; g++)
                        sc[g] = fmaf(q[e * GB + g], kf[d4 * 4 + e], sc[g]);
            }
        }
        float e[GB];
        chunk_softmax<GB>(valid, sc, m, l, acc, e);
#pragma unroll
        for (int g = 0; g < GB; g++)
            pw[warp][lane][g] = e[g];
        FP8KV_SYNC32();
        chunk_values<C, GB>(vb, pw[warp], lane, t1 - (t0 + c * 32), acc);
        FP8KV_SYNC32(); /* the stage and the weights are consumed */
        if (c + 2 * FAST_WARPS < nchunks)
            fill(c + 2 * FAST_WARPS, s);
        else
            commit_copies();
    }
    wait_copies<0>();
    __syncthreads(); /* the stages are free: the merge reuses them */

    float *macc = reinterpret_cast<float *>(area); /* [w][g][FD] */
    merge_warps<GB>(p, macc, mm, ml, warp, lane, seq, q0, part, m, l, acc);
}

template <typename C> kernel_fn staged_of_gb(int gb)
{
    return gb == 4   ? attention_staged<C, 4>
           : gb == 2 ? attention_staged<C, 2>
                     : attention_staged<C, 1>;
}

} // namespace

namespace fp8kv_gpu
{
namespace attn
{

kernel_fn staged_kernel(int cache_bf16, int format, int gb)
{
    if (cache_bf16)
        return staged_of_gb<bf16_cache>(gb);
    switch (format) {
#define CASE(F)                                                                                    \
    case F: return staged_of_gb<fp8_cache<F>>(gb);
        FP8KV_FOR_EACH_FORMAT(CASE)
#undef CASE
    }
    return nullptr;
}

} // namespace attn
} // namespace fp8kv_gpu
