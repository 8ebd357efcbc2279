/* attention.hip — paged-attention decode with inline dequantization (fp8kv/kv_cache.h), split
 * across thread blocks (flash-decoding).
 *
 * Pass 1, one thread block per (sequence, partition of P tokens, kv head, group of GB q
 * heads), the heads fastest in launch order. The partition is walked in stages of T tokens:
 * the K and V rows of a stage are copied into shared memory (cp.async on NVIDIA sm_80+,
 * STAGES - 1 stages ahead, so that many bytes are in flight without registers), then
 * consumed: TPT consecutive lanes share a token, each lane VEC dimensions (shared loads of up
 * to 16 bytes), and each group of TPT lanes takes U = UNROLL tokens of the stage. The codes
 * are dequantized in registers (on sm_89+ the e4m3fn decode is the exact hardware
 * cvt.rn.f16x2.e4m3x2) and used for all GB q heads of the kv head, so that grouped-query
 * attention reads and decodes each K/V element once; the queries sit in registers. The
 * scales are folded: k_scale into the query (with softmax_scale and log2(e), the softmax runs
 * in powers of two), v_scale into the partition's output; the function is the same, the
 * roundings differ (attention is judged by NMSE). Each group keeps an online softmax
 * (running max, sum, and weighted sum of values), updated once per stage for its U scores; at
 * the end the groups are merged through shared memory and the partition writes its
 * unnormalized output, max and sum.
 * Pass 2, one thread block per (sequence, q head): out = sum_p o_p e^(m_p - M) / sum_p l_p
 * e^(m_p - M), M the largest m_p.
 *
 * The NHD layout with head size 128 takes a fast path instead (attention_staged, below):
 * lanes own tokens for the scores and dimensions for P.V, whole rows copied into shared memory
 * by cp.async two chunks ahead, partitions sized for about one wave of resident blocks; the
 * pass-1 kernel above serves the other shapes and layouts (split-x).
 *
 * The cache element type is a template parameter: the same kernel reads a bf16 cache for the
 * benchmark's baseline. Accumulation is f32 with explicit fmaf (the files are built without
 * contraction; the fused multiply-adds here are deliberate). NaN semantics follow the CPU
 * reference: a NaN score never becomes the maximum and makes its head's output NaN through
 * the sum.
 */
#include "common.h"

#include <algorithm>
#include <math.h>
#include <stdlib.h>

using namespace fp8kv_gpu;

namespace {

constexpr int THREADS = 128;
constexpr int STAGES = 3; /* shared-memory stages: STAGES - 1 in flight while one is consumed */
constexpr int UNROLL = 4; /* tokens per group and stage (2 and 8 measured slower on the H200) */

struct attn_params {
    struct fp8kv_cache_shape shape;
    int fnuz;
    const float *query;
    int num_q_heads, group, qchunks;
    const uint8_t *key_cache, *value_cache; /* bytes; elements of the cache type */
    const int32_t *block_table;
    int max_blocks;
    const int32_t *seq_lens;
    float q_scale; /* softmax_scale * log2(e) * k_scale, applied to the query */
    float v_scale; /* applied to the partition's output */
    int bs_shift;  /* log2(block_size) when a power of two, else -1 */
    int partition, max_partitions, tpt;
    int interleave;  /* a lane's 16-byte units are k * TPT + lane (else lane * NU + k) */
    int chunk_bytes; /* > 0: rows are copied in chunks of this many bytes (NHD, see launch) */
    int chunk_shift; /* log2(chunks per row) in that case */
    int row_bytes;   /* shared bytes per K or V row: head_size elements, rounded up to 16 */
    int table_words; /* shared words for a partition's block-table entries (a multiple of 4) */
    float *part_out, *part_max, *part_sum;
};

/* ---- copies into shared memory ------------------------------------------------------------ */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__HIPCC__)
#define FP8KV_CP_ASYNC 1
#endif

/* cp_async: n bytes (4, 8 or 16, both addresses aligned to n) from global src to shared dst,
 * completed by wait_copies; a plain copy where there is no cp.async. */
__device__ __forceinline__ void cp_async(void *dst, const void *src, int n)
{
#ifdef FP8KV_CP_ASYNC
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    if (n == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
    else if (n == 8)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src));
#else
    if (n == 16)
        *static_cast<uint4 *>(dst) = *static_cast<const uint4 *>(src);
    else if (n == 8)
        *static_cast<uint2 *>(dst) = *static_cast<const uint2 *>(src);
    else
        *static_cast<uint32_t *>(dst) = *static_cast<const uint32_t *>(src);
#endif
}
__device__ __forceinline__ void commit_copies()
{
#ifdef FP8KV_CP_ASYNC
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
/* waits until at most N committed groups of this thread are pending */
template <int N> __device__ __forceinline__ void wait_copies()
{
#ifdef FP8KV_CP_ASYNC
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/* ---- cache element types ------------------------------------------------------------------- */

#ifdef FP8KV_ARCH_NV_SM89_PLUS
/* Four e4m3fn codes (low byte first) to f32, exactly: cvt.rn.f16x2.e4m3x2 on each half of the
 * word, then f16 -> f32. */
__device__ __forceinline__ void e4m3x4_to_f32(uint32_t codes, float *out)
{
    uint32_t lo, hi;
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
        : "=r"(lo), "=r"(hi)
        : "r"(codes));
    asm("{\n\t.reg .b16 a, b, c, d;\n\tmov.b32 {a, b}, %4;\n\tmov.b32 {c, d}, %5;\n\t"
        "cvt.f32.f16 %0, a;\n\tcvt.f32.f16 %1, b;\n\tcvt.f32.f16 %2, c;\n\tcvt.f32.f16 %3, d;\n\t}"
        : "=f"(out[0]), "=f"(out[1]), "=f"(out[2]), "=f"(out[3])
        : "r"(lo), "r"(hi));
}
#endif

/* An fp8 cache: decode(code), exactly (the scale is applied elsewhere). */
struct fp8_cache {
    static constexpr int size = 1;
    template <int N>
    static __device__ __forceinline__ void decode(const uint8_t *raw, int fnuz, float *out)
    {
#ifdef FP8KV_ARCH_NV_SM89_PLUS
        if (N % 4 == 0 && !fnuz) {
#pragma unroll
            for (int k = 0; k < N; k += 4) {
                uint32_t w;
                memcpy(&w, raw + k, 4);
                e4m3x4_to_f32(w, out + k);
            }
            return;
        }
#endif
#pragma unroll
        for (int k = 0; k < N; k++)
            out[k] = decode_fast(fnuz, raw[k]);
    }
};

/* A bf16 cache (the benchmark's baseline): the bits moved to the top of an f32. */
struct bf16_cache {
    static constexpr int size = 2;
    template <int N>
    static __device__ __forceinline__ void decode(const uint8_t *raw, int fnuz, float *out)
    {
        (void)fnuz;
        if constexpr (N % 2 == 0) {
#pragma unroll
            for (int k = 0; k < N; k += 2) {
                uint32_t w;
                memcpy(&w, raw + 2 * k, 4);
                out[k] = __uint_as_float(w << 16);
                out[k + 1] = __uint_as_float(w & 0xFFFF0000u);
            }
        } else {
#pragma unroll
            for (int k = 0; k < N; k++)
                out[k] = fp8kv_bf16_to_f32((uint16_t)(raw[2 * k] | raw[2 * k + 1] << 8));
        }
    }
};

/* The block of token position t, and t's position in it. */
__device__ __forceinline__ int block_index(const attn_params &p, int t)
{
    return p.bs_shift >= 0 ? t >> p.bs_shift : t / p.shape.block_size;
}
__device__ __forceinline__ int block_pos(const attn_params &p, int t)
{
    return p.bs_shift >= 0 ? t & (p.shape.block_size - 1) : t % p.shape.block_size;
}

/* The VEC elements of a lane, in units of UB bytes: unit k of lane `lane` is unit
 * unit_of(k) of the row (the interleaved order keeps the 8 lanes of a quarter warp on distinct
 * banks when a lane has two units). */
template <typename C, int VEC> struct lane_units {
    static constexpr int UB = VEC * C::size >= 16 ? 16 : VEC * C::size; /* bytes per unit */
    static constexpr int NU = VEC * C::size / UB;                         /* units per lane */
    static constexpr int EPU = UB / C::size;                              /* elements per unit */
    static __device__ __forceinline__ int unit_of(const attn_params &p, int lane, int k)
    {
        return p.interleave ? k * p.tpt + lane : lane * NU + k;
    }
};

/* Copies the K and V rows of the stage's tokens [tb, tb + T) (those below t1) into buf:
 * [2][T][row_bytes]. NHD rows go in chunks (cp.async); other layouts element by element. */
template <typename C>
__device__ __forceinline__ void fill_stage(const attn_params &p, int T, int kvh, int tb, int t1,
                                           const int32_t *blocks, int first_block, uint8_t *buf)
{
    const int D = p.shape.head_size;
    if (p.chunk_bytes > 0 && (2 << p.chunk_shift) <= THREADS) {
        /* chunk c = threadIdx.x + j THREADS is chunk k of row `which` of token i0 + j di: the
         * same chunk of the same tensor for every j, so only the token's slot changes */
        const int cs = p.chunk_shift, k = threadIdx.x & ((1 << cs) - 1);
        const int which = (threadIdx.x >> cs) & 1, di = THREADS >> (cs + 1);
        const uint32_t row = (uint32_t)(p.shape.num_heads * D * C::size);
        const size_t block_bytes = (size_t)row * p.shape.block_size;
        const uint8_t *src = (which ? p.value_cache : p.key_cache) + (size_t)kvh * D * C::size +
                             (size_t)k * p.chunk_bytes;
        uint8_t *dst = buf + (size_t)which * T * p.row_bytes + (size_t)k * p.chunk_bytes;
        for (int i = threadIdx.x >> (cs + 1); i < T && tb + i < t1; i += di) {
            const int t = tb + i;
            const uint32_t block = (uint32_t)blocks[block_index(p, t) - first_block];
            cp_async(dst + (uint32_t)i * (uint32_t)p.row_bytes,
                     src + block * block_bytes + (uint32_t)block_pos(p, t) * row, p.chunk_bytes);
        }
        return;
    }
    if (p.chunk_bytes > 0) {
        const int cs = p.chunk_shift, per_row = 1 << cs, total = 2 * T * per_row;
        const size_t row = (size_t)p.shape.num_heads * D * C::size;
        for (int c = threadIdx.x; c < total; c += THREADS) {
            const int k = c & (per_row - 1), which = (c >> cs) & 1, i = c >> (cs + 1);
            const int t = tb + i;
            if (t >= t1)
                continue;
            const int64_t slot =
                (int64_t)blocks[block_index(p, t) - first_block] * p.shape.block_size +
                block_pos(p, t);
            const uint8_t *src = (which ? p.value_cache : p.key_cache) + (size_t)slot * row +
                                 (size_t)kvh * D * C::size + (size_t)k * p.chunk_bytes;
            cp_async(buf + ((size_t)which * T + i) * p.row_bytes + (size_t)k * p.chunk_bytes, src,
                     p.chunk_bytes);
        }
        return;
    }
    for (int e = threadIdx.x; e < 2 * T * D; e += THREADS) {
        const int d = e % D, i = e / D % T, which = e / D / T;
        const int t = tb + i;
        if (t >= t1)
            continue;
        const int64_t slot =
            (int64_t)blocks[block_index(p, t) - first_block] * p.shape.block_size +
            block_pos(p, t);
        const size_t at =
            which ? value_offset(p.shape, slot, kvh, d) : key_offset(p.shape, slot, kvh, d);
        const uint8_t *src = (which ? p.value_cache : p.key_cache) + at * C::size;
        uint8_t *dst = buf + ((size_t)which * T + i) * p.row_bytes + (size_t)d * C::size;
#pragma unroll
        for (int b = 0; b < C::size; b++)
            dst[b] = src[b];
    }
}

/* Loads a lane's VEC elements of one shared row and decodes them. */
template <typename C, int VEC>
__device__ __forceinline__ void row_elems(const attn_params &p, const uint8_t *row, int lane,
                                          float *out)
{
    typedef lane_units<C, VEC> L;
    uint8_t raw[VEC * C::size];
#pragma unroll
    for (int k = 0; k < L::NU; k++)
        load_bytes<L::UB>(row + (size_t)L::unit_of(p, lane, k) * L::UB, raw + k * L::UB);
    C::template decode<VEC>(raw, p.fnuz, out);
}

template <typename C, int GB, int VEC, int U>
__global__ void __launch_bounds__(THREADS, 2) attention_partial(attn_params p)
{
    typedef lane_units<C, VEC> L;
    const int seq = blockIdx.z, part = blockIdx.y;
    const int kvh = blockIdx.x / p.qchunks;
    const int q0 = kvh * p.group + (int)(blockIdx.x % p.qchunks) * GB;
    const int n = p.seq_lens[seq], t0 = part * p.partition;
    if (t0 >= n)
        return;
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int D = p.shape.head_size, chunks = D / VEC;
    const int tpt = p.tpt, lane = threadIdx.x % tpt, grp = threadIdx.x / tpt;
    const int groups = THREADS / tpt, T = groups * U; /* T: tokens per stage */
    const bool active = lane < chunks;

    extern __shared__ __align__(16) uint8_t smem[];
    int32_t *blocks = reinterpret_cast<int32_t *>(smem);
    uint8_t *stages = smem + (size_t)p.table_words * 4;
    const size_t stage_bytes = (size_t)2 * T * p.row_bytes;

    /* the partition's block-table entries, so that a token's slot costs no global round trip */
    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    for (int i = threadIdx.x; i < nblocks; i += THREADS)
        blocks[i] = p.block_table[(size_t)seq * p.max_blocks + first_block + i];

    /* the queries of the lane's dimensions, scaled (see the top of the file) */
    float qf[GB][VEC];
#pragma unroll
    for (int g = 0; g < GB; g++)
#pragma unroll
        for (int k = 0; k < L::NU; k++)
#pragma unroll
            for (int e = 0; e < L::EPU; e++) {
                const int d = L::unit_of(p, lane, k) * L::EPU + e;
                qf[g][k * L::EPU + e] =
                    active ? p.query[((size_t)seq * p.num_q_heads + q0 + g) * D + d] * p.q_scale
                           : 0.0f;
            }
    __syncthreads(); /* the block-table entries */

    const int nstages = (t1 - t0 + T - 1) / T;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nstages)
            fill_stage<C>(p, T, kvh, t0 + s * T, t1, blocks, first_block,
                                 stages + (size_t)s * stage_bytes);
        commit_copies();
    }

    /* each token group's running softmax: max m, sum l, and the weighted sum of values acc */
    float m[GB], l[GB], acc[GB][VEC];
#pragma unroll
    for (int g = 0; g < GB; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            acc[g][k] = 0.0f;
    }

    for (int st = 0; st < nstages; st++) {
        wait_copies<STAGES - 2>(); /* this thread's copies of stage st have landed */
        __syncthreads();           /* everyone's; and stage st - 1 is consumed by all */
        if (st + STAGES - 1 < nstages)
            fill_stage<C>(p, T, kvh, t0 + (st + STAGES - 1) * T, t1, blocks, first_block,
                                 stages + (size_t)((st + STAGES - 1) % STAGES) * stage_bytes);
        commit_copies(); /* an empty group at the end keeps the count uniform */

        const uint8_t *kb = stages + (size_t)(st % STAGES) * stage_bytes;
        const uint8_t *vb = kb + (size_t)T * p.row_bytes;
        const int tb = t0 + st * T;

        /* the scores of the group's U tokens (i = grp * U + u), for the GB heads */
        float sc[U][GB];
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int g = 0; g < GB; g++)
                sc[u][g] = 0.0f;
            if (active && tb + grp * U + u < t1) {
                float kf[VEC];
                row_elems<C, VEC>(p, kb + (size_t)(grp * U + u) * p.row_bytes, lane, kf);
#pragma unroll
                for (int g = 0; g < GB; g++)
#pragma unroll
                    for (int k = 0; k < VEC; k++)
                        sc[u][g] = fmaf(qf[g][k], kf[k], sc[u][g]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int g = 0; g < GB; g++)
                for (int mask = tpt / 2; mask > 0; mask /= 2)
                    sc[u][g] += FP8KV_SHFL_XOR(sc[u][g], mask);

        /* the online softmax, once per stage: a new maximum rescales (rarely, after the first
         * stages); a NaN score is never the maximum and turns l and acc into NaN */
#pragma unroll
        for (int g = 0; g < GB; g++) {
            float top = -INFINITY;
#pragma unroll
            for (int u = 0; u < U; u++)
                if (tb + grp * U + u < t1)
                    top = fmaxf(top, sc[u][g]);
            if (top > m[g]) {
                const float r = exp2f(m[g] - top);
                m[g] = top;
                l[g] *= r;
#pragma unroll
                for (int k = 0; k < VEC; k++)
                    acc[g][k] *= r;
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const float e = tb + grp * U + u < t1 ? exp2f(sc[u][g] - m[g]) : 0.0f;
                sc[u][g] = e;
                l[g] += e;
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (!active || tb + grp * U + u >= t1)
                continue;
            float vf[VEC];
            row_elems<C, VEC>(p, vb + (size_t)(grp * U + u) * p.row_bytes, lane, vf);
#pragma unroll
            for (int g = 0; g < GB; g++)
#pragma unroll
                for (int k = 0; k < VEC; k++)
                    acc[g][k] = fmaf(sc[u][g], vf[k], acc[g][k]);
        }
    }
    wait_copies<0>();
    __syncthreads(); /* the stages are free: the merge reuses them */

    /* ---- merge the token groups: M = max m, sum of l e^(m - M), sum of acc e^(m - M) ---- */
    float *red = reinterpret_cast<float *>(stages); /* [groups][GB][D] */
    float *gm = red + (size_t)groups * GB * D, *gl = gm + groups * GB; /* [groups][GB] */
    if (active)
#pragma unroll
        for (int g = 0; g < GB; g++)
#pragma unroll
            for (int k = 0; k < L::NU; k++)
#pragma unroll
                for (int e = 0; e < L::EPU; e++)
                    red[((size_t)grp * GB + g) * D + L::unit_of(p, lane, k) * L::EPU + e] =
                        acc[g][k * L::EPU + e];
    if (lane == 0)
#pragma unroll
        for (int g = 0; g < GB; g++) {
            gm[grp * GB + g] = m[g];
            gl[grp * GB + g] = l[g];
        }
    __syncthreads();
    for (int o = threadIdx.x; o < GB * D; o += THREADS) {
        const int g = o / D, d = o % D;
        float M = -INFINITY;
        for (int r = 0; r < groups; r++)
            M = fmaxf(M, gm[r * GB + g]);
        float Lsum = 0.0f, A = 0.0f;
        for (int r = 0; r < groups; r++) {
            const float w = exp2f(gm[r * GB + g] - M); /* 0 for a group without tokens */
            Lsum = fmaf(gl[r * GB + g], w, Lsum);
            A = fmaf(red[((size_t)r * GB + g) * D + d], w, A);
        }
        const size_t row = ((size_t)seq * p.num_q_heads + q0 + g) * p.max_partitions + part;
        p.part_out[row * D + d] = A * p.v_scale;
        if (d == 0) {
            p.part_max[row] = M;
            p.part_sum[row] = Lsum;
        }
    }
}

/* ---- the NHD fast path: head size 128, lanes own tokens for the scores ---------------------
 *
 * One thread block of FAST_THREADS per (sequence, partition, kv head, GB q heads), as above,
 * for the NHD layout with head size FD. The partition is cut in chunks of 32 tokens; warp w
 * takes chunks w, w + FAST_WARPS, ... For the scores each lane owns one token: its K row
 * (FD elements, 16-byte global loads straight into registers, no shared-memory round trip) is
 * dotted with the GB queries, which sit in shared memory, [dimension][head], so that one
 * broadcast 16-byte load feeds 4 fused multiply-adds; no cross-lane reduction per token. The
 * online softmax runs once per chunk (the chunk's maximum by a warp reduction). For P.V each
 * lane owns 4 dimensions: a chunk's 32 V rows are read coalesced (4 or 8 bytes a lane), the
 * weights come from shared memory (one broadcast load per token). The next chunk's K row is
 * loaded right after the scores, and its first V rows right after P.V, so that loads are in
 * flight while the warp computes. At the end the warps merge through shared memory and the
 * partition writes what pass 2 reads, as the general kernel does. Byte offsets into a cache
 * tensor are 32-bit (the launch checks the size). */
#if defined(__CUDACC__) && !defined(__HIPCC__)
#define FP8KV_SHFL32(v, src) __shfl_sync(0xFFFFFFFFu, (v), (src))
#define FP8KV_SHFL32_XOR(v, m) __shfl_xor_sync(0xFFFFFFFFu, (v), (m))
#define FP8KV_SYNC32() __syncwarp()
#else /* 32-lane groups of a wavefront, which runs in lockstep */
#define FP8KV_SHFL32(v, src) __shfl((v), (src), 32)
#define FP8KV_SHFL32_XOR(v, m) __shfl_xor((v), (m), 32)
#define FP8KV_SYNC32() __builtin_amdgcn_wave_barrier()
#endif

constexpr int FAST_THREADS = 128, FAST_WARPS = FAST_THREADS / 32;
constexpr int FD = 128; /* the head size of the fast path */

/* One 32-bit word of a cache (4 fp8 codes or 2 bf16 elements) to f32, exactly. */
template <typename C, bool FNUZ> struct word_decode;
template <bool FNUZ> struct word_decode<fp8_cache, FNUZ> {
    static constexpr int per_word = 4;
    static __device__ __forceinline__ void run(uint32_t w, float *out)
    {
#ifdef FP8KV_ARCH_NV_SM89_PLUS
        if constexpr (!FNUZ)
            e4m3x4_to_f32(w, out);
        else
#endif
#pragma unroll
            for (int k = 0; k < 4; k++)
                out[k] = decode_fast(FNUZ, (w >> (8 * k)) & 0xFFu);
    }
};
template <bool FNUZ> struct word_decode<bf16_cache, FNUZ> {
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

template <typename C>
__device__ __forceinline__ v_words<C> load_v(const uint8_t *row, int lane)
{
    v_words<C> r;
    if constexpr (C::size == 1) {
        r.w[0] = *reinterpret_cast<const uint32_t *>(row + lane * 4);
    } else {
        const uint2 u = *reinterpret_cast<const uint2 *>(row + lane * 8);
        r.w[0] = u.x;
        r.w[1] = u.y;
    }
    return r;
}

/* VB: tokens per batch of V loads; PK: the next chunk's K rows are loaded during P.V (more
 * registers); MB: blocks per multiprocessor the registers are budgeted for */
template <typename C, int GB, bool FNUZ, int VB, bool PK, int MB>
__global__ void __launch_bounds__(FAST_THREADS, MB) attention_fast(attn_params p)
{
    typedef word_decode<C, FNUZ> W;
    constexpr int KU = FD * C::size / 16; /* 16-byte units of a K row */
    constexpr int NB = 32 / VB;           /* batches per chunk */
    const int seq = blockIdx.z, part = blockIdx.y;
    const int kvh = blockIdx.x / p.qchunks;
    const int q0 = kvh * p.group + (int)(blockIdx.x % p.qchunks) * GB;
    const int n = p.seq_lens[seq], t0 = part * p.partition;
    if (t0 >= n)
        return;
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    __shared__ __align__(16) float qs[FD * GB];             /* [d][g], scaled */
    __shared__ __align__(16) float pw[FAST_WARPS][32][GB];  /* a chunk's weights */
    __shared__ __align__(16) float macc[FAST_WARPS][GB][FD];
    __shared__ float mm[FAST_WARPS][GB], ml[FAST_WARPS][GB];
    extern __shared__ __align__(16) uint8_t smem[];
    int32_t *blocks = reinterpret_cast<int32_t *>(smem);

    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    for (int i = threadIdx.x; i < nblocks; i += FAST_THREADS)
        blocks[i] = p.block_table[(size_t)seq * p.max_blocks + first_block + i];
    for (int i = threadIdx.x; i < FD * GB; i += FAST_THREADS) {
        const int d = i / GB, g = i % GB;
        qs[i] = p.query[((size_t)seq * p.num_q_heads + q0 + g) * FD + d] * p.q_scale;
    }
    __syncthreads();

    const uint32_t rowb = (uint32_t)p.shape.num_heads * FD * C::size;
    const uint32_t headb = (uint32_t)kvh * FD * C::size;
    const int nchunks = (t1 - t0 + 31) / 32;
    /* the byte offset of the K (and V) row of token t0 + 32 c + lane; 0 past t1 */
    auto row_of = [&](int c, bool &valid) -> uint32_t {
        const int t = t0 + c * 32 + lane;
        valid = t < t1;
        if (!valid)
            return 0;
        const uint32_t slot = (uint32_t)blocks[block_index(p, t) - first_block] *
                                  (uint32_t)p.shape.block_size +
                              (uint32_t)block_pos(p, t);
        return slot * rowb + headb;
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

    uint4 kr[KU];
    v_words<C> vr[VB];
    int c = warp;
    bool valid = false;
    uint32_t off = 0;
    if (c < nchunks) {
        off = row_of(c, valid);
        if (PK) {
            const uint4 *src = reinterpret_cast<const uint4 *>(p.key_cache + off);
#pragma unroll
            for (int u = 0; u < KU; u++)
                kr[u] = valid ? src[u] : make_uint4(0, 0, 0, 0);
        }
        const int left = t1 - (t0 + c * 32);
#pragma unroll
        for (int i = 0; i < VB; i++) {
            const uint32_t o = FP8KV_SHFL32(off, i);
            if (i < left)
                vr[i] = load_v<C>(p.value_cache + o, lane);
            else
                vr[i] = v_words<C>{};
        }
    }
    for (; c < nchunks; c += FAST_WARPS) {
        if (!PK) {
            const uint4 *src = reinterpret_cast<const uint4 *>(p.key_cache + off);
#pragma unroll
            for (int u = 0; u < KU; u++)
                kr[u] = valid ? src[u] : make_uint4(0, 0, 0, 0);
        }
        /* scores: this lane's token against the GB queries */
        float sc[GB];
#pragma unroll
        for (int g = 0; g < GB; g++)
            sc[g] = 0.0f;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const uint32_t words[4] = {kr[u].x, kr[u].y, kr[u].z, kr[u].w};
            float kf[4 * W::per_word];
#pragma unroll
            for (int w = 0; w < 4; w++)
                W::run(words[w], kf + w * W::per_word);
#pragma unroll
            for (int d4 = 0; d4 < W::per_word; d4++) { /* 4 dimensions at a time */
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
        /* the next chunk's K rows, in flight during the softmax and P.V */
        const int cn = c + FAST_WARPS;
        bool vnext = false;
        uint32_t offn = 0;
        if (cn < nchunks) {
            offn = row_of(cn, vnext);
            if (PK) {
                const uint4 *src = reinterpret_cast<const uint4 *>(p.key_cache + offn);
#pragma unroll
                for (int u = 0; u < KU; u++)
                    kr[u] = vnext ? src[u] : make_uint4(0, 0, 0, 0);
            }
        }
        /* online softmax over the chunk: a NaN score never becomes the maximum and turns l
         * and acc into NaN */
        float e[GB];
#pragma unroll
        for (int g = 0; g < GB; g++) {
            const float s = valid ? sc[g] : -INFINITY;
            float top = s;
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
            e[g] = valid ? exp2f(s - m[g]) : 0.0f;
            l[g] += e[g];
        }
        FP8KV_SYNC32(); /* the last chunk's weights are read */
#pragma unroll
        for (int g = 0; g < GB; g++)
            pw[warp][lane][g] = e[g];
        FP8KV_SYNC32();
        /* P.V: this lane's 4 dimensions */
        const int left = t1 - (t0 + c * 32);
#pragma unroll
        for (int b = 0; b < NB; b++) {
            if (b > 0)
#pragma unroll
                for (int i = 0; i < VB; i++) {
                    const uint32_t o = FP8KV_SHFL32(off, b * VB + i);
                    if (b * VB + i < left)
                        vr[i] = load_v<C>(p.value_cache + o, lane);
                    else
                        vr[i] = v_words<C>{};
                }
#pragma unroll
            for (int i = 0; i < VB; i++) {
                float pv[GB];
#pragma unroll
                for (int g = 0; g < GB; g++)
                    pv[g] = pw[warp][b * VB + i][g];
                float vf[4];
#pragma unroll
                for (int w = 0; w < C::size; w++)
                    W::run(vr[i].w[w], vf + w * W::per_word);
#pragma unroll
                for (int g = 0; g < GB; g++)
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        acc[g][k] = fmaf(pv[g], vf[k], acc[g][k]);
            }
        }
        /* the next chunk's first V rows, in flight during its scores */
        if (cn < nchunks) {
            const int leftn = t1 - (t0 + cn * 32);
#pragma unroll
            for (int i = 0; i < VB; i++) {
                const uint32_t o = FP8KV_SHFL32(offn, i);
                if (i < leftn)
                    vr[i] = load_v<C>(p.value_cache + o, lane);
                else
                    vr[i] = v_words<C>{};
            }
        }
        off = offn;
        valid = vnext;
    }

    /* merge the warps: M = max m, sum of l e^(m - M), sum of acc e^(m - M) */
#pragma unroll
    for (int g = 0; g < GB; g++) {
#pragma unroll
        for (int mask = 16; mask > 0; mask /= 2)
            l[g] += FP8KV_SHFL32_XOR(l[g], mask);
        *reinterpret_cast<float4 *>(&macc[warp][g][lane * 4]) =
            make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
        if (lane == 0) {
            mm[warp][g] = m[g];
            ml[warp][g] = l[g];
        }
    }
    __syncthreads();
    for (int o = threadIdx.x; o < GB * FD; o += FAST_THREADS) {
        const int g = o / FD, d = o % FD;
        float M = -INFINITY;
#pragma unroll
        for (int r = 0; r < FAST_WARPS; r++)
            M = fmaxf(M, mm[r][g]);
        float Lsum = 0.0f, A = 0.0f;
#pragma unroll
        for (int r = 0; r < FAST_WARPS; r++) {
            const float w = exp2f(mm[r][g] - M); /* 0 for a warp without tokens */
            Lsum = fmaf(ml[r][g], w, Lsum);
            A = fmaf(macc[r][g][d], w, A);
        }
        const size_t row = ((size_t)seq * p.num_q_heads + q0 + g) * p.max_partitions + part;
        p.part_out[row * FD + d] = A * p.v_scale;
        if (d == 0) {
            p.part_max[row] = M;
            p.part_sum[row] = Lsum;
        }
    }
}

/* The same with the K and V rows of a warp's next chunks copied into shared memory (cp.async,
 * two chunks ahead, 8 lanes per row so that each copy instruction reads whole rows), instead
 * of loaded into registers: more bytes in flight for fewer registers. A lane reads its token's
 * K row back (rows padded by 16 bytes: conflict-free), and each V row whole. Dynamic shared
 * memory: the block-table entries (table_words), then the stages. */
template <typename C, int GB, bool FNUZ, int MB>
__global__ void __launch_bounds__(FAST_THREADS, MB) attention_staged(attn_params p)
{
    typedef word_decode<C, FNUZ> W;
    constexpr int RB = FD * C::size;      /* bytes of a row */
    constexpr int KS = RB + 16;           /* shared stride of K rows */
    constexpr int KU = RB / 16;           /* 16-byte units of a row */
    constexpr int SB = 32 * (KS + RB);    /* bytes of a stage: 32 K rows, then 32 V rows */
    const int seq = blockIdx.z, part = blockIdx.y;
    const int kvh = blockIdx.x / p.qchunks;
    const int q0 = kvh * p.group + (int)(blockIdx.x % p.qchunks) * GB;
    const int n = p.seq_lens[seq], t0 = part * p.partition;
    if (t0 >= n)
        return;
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    __shared__ __align__(16) float qs[FD * GB];            /* [d][g], scaled */
    __shared__ __align__(16) float pw[FAST_WARPS][32][GB]; /* a chunk's weights */
    __shared__ float mm[FAST_WARPS][GB], ml[FAST_WARPS][GB];
    extern __shared__ __align__(16) uint8_t smem[];
    int32_t *blocks = reinterpret_cast<int32_t *>(smem);
    uint8_t *stages = smem + (size_t)p.table_words * 4 + (size_t)warp * 2 * SB;

    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    for (int i = threadIdx.x; i < nblocks; i += FAST_THREADS)
        blocks[i] = p.block_table[(size_t)seq * p.max_blocks + first_block + i];
    for (int i = threadIdx.x; i < FD * GB; i += FAST_THREADS) {
        const int d = i / GB, g = i % GB;
        qs[i] = p.query[((size_t)seq * p.num_q_heads + q0 + g) * FD + d] * p.q_scale;
    }
    __syncthreads();

    const uint32_t rowb = (uint32_t)p.shape.num_heads * FD * C::size;
    const uint32_t headb = (uint32_t)kvh * FD * C::size;
    const int nchunks = (t1 - t0 + 31) / 32;
    /* copies chunk c's rows into stage s: piece x = i * 32 + lane is 16-byte unit x % KU of
     * row x / KU */
    auto fill = [&](int c, int s) {
        const int t = t0 + c * 32 + lane;
        uint32_t off = 0;
        if (t < t1)
            off = ((uint32_t)blocks[block_index(p, t) - first_block] *
                       (uint32_t)p.shape.block_size +
                   (uint32_t)block_pos(p, t)) *
                      rowb +
                  headb;
        const int left = t1 - (t0 + c * 32);
        uint8_t *kb = stages + (size_t)s * SB, *vb = kb + 32 * KS;
#pragma unroll
        for (int i = 0; i < KU; i++) {
            const int x = i * 32 + lane, r = x / KU, u = x % KU;
            const uint32_t o = FP8KV_SHFL32(off, r);
            if (r < left) {
                cp_async(kb + r * KS + u * 16, p.key_cache + o + u * 16, 16);
                cp_async(vb + r * RB + u * 16, p.value_cache + o + u * 16, 16);
            }
        }
        commit_copies();
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
        const uint8_t *kb = stages + (size_t)s * SB, *vb = kb + 32 * KS;
        const bool valid = t0 + c * 32 + lane < t1;
        float sc[GB];
#pragma unroll
        for (int g = 0; g < GB; g++)
            sc[g] = 0.0f;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const uint4 kw = *reinterpret_cast<const uint4 *>(kb + lane * KS + u * 16);
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
#pragma unroll
        for (int g = 0; g < GB; g++)
            pw[warp][lane][g] = e[g];
        FP8KV_SYNC32();
        const int left = t1 - (t0 + c * 32);
#pragma unroll 8
        for (int j = 0; j < 32; j++) {
            if (j >= left)
                break;
            float pv[GB];
#pragma unroll
            for (int g = 0; g < GB; g++)
                pv[g] = pw[warp][j][g];
            v_words<C> vr;
            if constexpr (C::size == 1) {
                vr.w[0] = *reinterpret_cast<const uint32_t *>(vb + j * RB + lane * 4);
            } else {
                const uint2 u2 = *reinterpret_cast<const uint2 *>(vb + j * RB + lane * 8);
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
        FP8KV_SYNC32(); /* the stage and the weights are consumed */
        if (c + 2 * FAST_WARPS < nchunks)
            fill(c + 2 * FAST_WARPS, s);
        else
            commit_copies();
    }
    wait_copies<0>();
    __syncthreads(); /* the stages are free: the merge reuses them */

    float *macc = reinterpret_cast<float *>(smem + (size_t)p.table_words * 4); /* [w][g][FD] */
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
    for (int o = threadIdx.x; o < GB * FD; o += FAST_THREADS) {
        const int g = o / FD, d = o % FD;
        float M = -INFINITY;
#pragma unroll
        for (int r = 0; r < FAST_WARPS; r++)
            M = fmaxf(M, mm[r][g]);
        float Lsum = 0.0f, A = 0.0f;
#pragma unroll
        for (int r = 0; r < FAST_WARPS; r++) {
            const float w = exp2f(mm[r][g] - M);
            Lsum = fmaf(ml[r][g], w, Lsum);
            A = fmaf(macc[((size_t)r * GB + g) * FD + d], w, A);
        }
        const size_t row = ((size_t)seq * p.num_q_heads + q0 + g) * p.max_partitions + part;
        p.part_out[row * FD + d] = A * p.v_scale;
        if (d == 0) {
            p.part_max[row] = M;
            p.part_sum[row] = Lsum;
        }
    }
}

/* Pass 2: grid (q head, sequence). */
__global__ void __launch_bounds__(THREADS)
    attention_combine(const int32_t *seq_lens, int num_q_heads, int head_size, int partition,
                      int max_partitions, const float *part_out, const float *part_max,
                      const float *part_sum, float *out)
{
    const int qh = blockIdx.x, seq = blockIdx.y, D = head_size;
    const int n = seq_lens[seq], np = (n + partition - 1) / partition;
    const size_t row = ((size_t)seq * num_q_heads + qh) * max_partitions;
    float M = -INFINITY;
    for (int i = 0; i < np; i++)
        M = fmaxf(M, part_max[row + i]);
    float L = 0.0f; /* the maxima are scores times log2(e) */
    for (int i = 0; i < np; i++)
        L += part_sum[row + i] * exp2f(part_max[row + i] - M);
    for (int d = threadIdx.x; d < D; d += THREADS) {
        float o = 0.0f;
        for (int i = 0; i < np; i++)
            o = fmaf(part_out[(row + i) * D + d], exp2f(part_max[row + i] - M), o);
        out[((size_t)seq * num_q_heads + qh) * D + d] = np ? o / L : 0.0f;
    }
}

typedef void (*partial_fn)(attn_params);

template <typename C, int VEC> partial_fn partial_of_gb(int gb)
{
    return gb == 4 ? attention_partial<C, 4, VEC, UNROLL>
           : gb == 2 ? attention_partial<C, 2, VEC, UNROLL>
                     : attention_partial<C, 1, VEC, UNROLL>;
}

/* The fast path's configurations. By default the staged kernel, measured the fastest for both
 * caches on the H200 (fp8 0.198 ms, bf16 0.340 ms, partitions sized for one wave), against
 * 0.312 / 0.447 for the register kernel at 6 blocks per multiprocessor (80 registers, V rows 8
 * tokens at a time) and 0.371 / 0.490 at 4 (for fp8 the next chunk's K rows loaded during P.V,
 * V rows 32 tokens at a time; for bf16 16). For comparisons, FP8KV_ATTN_FASTCFG=1 picks the
 * 6-block register kernel, FP8KV_ATTN_FASTCFG=2 the 4-block one (both for GB 4 and OCP). */
template <typename C, bool FNUZ> partial_fn fast_of_gb(int gb, int alt)
{
    constexpr bool fp8 = C::size == 1;
    if (alt == 1 && gb == 4 && !FNUZ)
        return attention_fast<C, 4, FNUZ, 8, false, 6>;
    if (alt == 2 && gb == 4 && !FNUZ)
        return fp8 ? attention_fast<C, 4, FNUZ, 32, true, 4> : attention_fast<C, 4, FNUZ, 16, false, 4>;
    return gb == 4 ? attention_staged<C, 4, FNUZ, 3>
           : gb == 2 ? attention_staged<C, 2, FNUZ, 3>
                     : attention_staged<C, 1, FNUZ, 3>;
}

/* Blocks of fn (FAST_THREADS threads, `shared` dynamic bytes) resident per multiprocessor,
 * asked once per kernel. */
int resident_blocks(partial_fn fn, size_t shared)
{
    static partial_fn seen[16];
    static int count[16];
    for (int i = 0; i < 16; i++)
        if (seen[i] == fn)
            return count[i];
    int n = 0;
#if defined(__CUDACC__) && !defined(__HIPCC__)
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, FAST_THREADS, shared) != cudaSuccess)
#else
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, reinterpret_cast<const void *>(fn),
                                                     FAST_THREADS, shared) != hipSuccess)
#endif
        n = 1;
    n = n < 1 ? 1 : n;
    for (int i = 0; i < 16; i++)
        if (!seen[i]) {
            seen[i] = fn;
            count[i] = n;
            break;
        }
    return n;
}

int pow2_at_least(int x)
{
    int p = 1;
    while (p < x)
        p *= 2;
    return p;
}

} // namespace

namespace fp8kv_gpu {

int launch_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                     int cache_bf16, const float *d_query, int num_q_heads, const void *d_key_cache,
                     const void *d_value_cache, const int32_t *d_block_table,
                     int max_blocks_per_seq, const int32_t *d_seq_lens, int num_seqs,
                     int max_seq_len, float k_scale, float v_scale, float softmax_scale,
                     int partition, float *d_out, buffer &scratch)
{
    if (num_seqs <= 0 || num_q_heads <= 0)
        return FP8KV_GPU_OK;
    if (num_q_heads % shape.num_heads != 0)
        return FP8KV_FAIL("attention: %d q heads is not a multiple of %d kv heads", num_q_heads,
                          shape.num_heads);
    if (num_seqs > 65535)
        return FP8KV_FAIL("attention: %d sequences (at most 65535 per launch)", num_seqs);
    /* tuning knobs for experiments (not needed for correctness): FP8KV_ATTN_VEC caps the
     * elements per lane (16, 8, 1; 8 by default: half the registers of 16, twice the blocks per
     * multiprocessor, measured faster for both caches), FP8KV_ATTN_GB the q heads per block
     * (4, 2, 1), FP8KV_ATTN_PARTITION sets the default partition; FP8KV_ATTN_FAST and
     * FP8KV_ATTN_FASTCFG below, for the NHD fast path */
    const char *knob_vec = getenv("FP8KV_ATTN_VEC"), *knob_gb = getenv("FP8KV_ATTN_GB");
    const char *knob_part = getenv("FP8KV_ATTN_PARTITION");
    const int max_vec = std::min(16, knob_vec ? atoi(knob_vec) : 8);
    const int max_gb = knob_gb ? atoi(knob_gb) : 4;
    const int D = shape.head_size, group = num_q_heads / shape.num_heads;
    const int vec = vec_of(D, max_vec), chunks = D / vec;
    const int tpt = pow2_at_least(chunks);
    if (tpt > 32)
        return FP8KV_FAIL("attention: head_size %d needs %d lanes per token (at most 32)", D, tpt);
    const int gb = group % 4 == 0 && max_gb >= 4 ? 4 : group % 2 == 0 && max_gb >= 2 ? 2 : 1;
    const int esize = cache_bf16 ? 2 : 1;
    const bool fnuz = cfg.format == FP8KV_CODEC_E4M3FNUZ;
    /* the NHD fast path (FP8KV_ATTN_FAST=0 turns it off, for comparisons) */
    const char *knob_fast = getenv("FP8KV_ATTN_FAST"), *knob_cfg = getenv("FP8KV_ATTN_FASTCFG");
    const int alt = knob_cfg ? atoi(knob_cfg) : 0;
    const size_t tensor_bytes = (size_t)shape.num_blocks * shape.block_size * shape.num_heads * D *
                                (size_t)esize;
    const bool fast = shape.layout == FP8KV_LAYOUT_NHD && D == FD &&
                      tensor_bytes <= 0xFFFFFFFFu && !(knob_fast && atoi(knob_fast) == 0);
    partial_fn fn;
    if (fast)
        fn = cache_bf16 ? fast_of_gb<bf16_cache, false>(gb, alt)
             : fnuz     ? fast_of_gb<fp8_cache, true>(gb, alt)
                        : fast_of_gb<fp8_cache, false>(gb, alt);
    else if (cache_bf16)
        fn = vec == 16  ? partial_of_gb<bf16_cache, 16>(gb)
             : vec == 8 ? partial_of_gb<bf16_cache, 8>(gb)
                        : partial_of_gb<bf16_cache, 1>(gb);
    else
        fn = vec == 16  ? partial_of_gb<fp8_cache, 16>(gb)
             : vec == 8 ? partial_of_gb<fp8_cache, 8>(gb)
                        : partial_of_gb<fp8_cache, 1>(gb);
    /* the staged kernel's shared memory: 4 warps x 2 stages x 32 tokens x (K row + 16, V row) */
    const size_t staged_bytes =
        fast && !((alt == 1 || alt == 2) && gb == 4 && !fnuz) ? (size_t)FAST_WARPS * 2 * 32 * (2 * (size_t)FD * esize + 16) : 0;
    if (partition <= 0 && knob_part)
        partition = atoi(knob_part);
    if (partition <= 0 && fast) {
        /* partitions enough for about one wave of resident blocks (a second, partial wave
         * measured up to 20% slower), of at least 256 and at most 8192 tokens, in chunks of 32 */
        if (staged_bytes + 2048 > 48 * 1024)
            FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(fn),
                                                hipFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)(staged_bytes + 2048)));
        const long slots =
            (long)g_device.multiprocessors * resident_blocks(fn, staged_bytes + 2048);
        const long pairs = (long)num_seqs * shape.num_heads * (group / gb);
        const long want = std::max(1L, slots / pairs);
        partition = (int)std::min(8192L, std::max(256L, ((max_seq_len + want - 1) / want + 31) / 32 * 32));
    }
    if (partition <= 0) /* split even short sequences: the combining pass always runs */
        partition = std::min(2048, std::max(8, pow2_at_least((max_seq_len + 3) / 4)));
    const int max_partitions = std::max(1, (max_seq_len + partition - 1) / partition);

    const size_t rows = (size_t)num_seqs * num_q_heads * max_partitions;
    int rc = scratch.bytes >= rows * ((size_t)D + 2) * sizeof(float)
                 ? 0
                 : scratch.alloc(rows * ((size_t)D + 2) * sizeof(float));
    if (rc != 0)
        return rc;
    attn_params p;
    p.shape = shape;
    p.fnuz = fnuz;
    p.query = d_query;
    p.num_q_heads = num_q_heads;
    p.group = group;
    p.qchunks = group / gb;
    p.key_cache = static_cast<const uint8_t *>(d_key_cache);
    p.value_cache = static_cast<const uint8_t *>(d_value_cache);
    p.block_table = d_block_table;
    p.max_blocks = max_blocks_per_seq;
    p.seq_lens = d_seq_lens;
    p.q_scale = softmax_scale * 1.4426950408889634f * k_scale; /* log2(e) */
    p.v_scale = v_scale;
    p.bs_shift = -1;
    for (int b = 0; b < 31; b++)
        if (shape.block_size == 1 << b)
            p.bs_shift = b;
    p.partition = partition;
    p.max_partitions = max_partitions;
    p.tpt = tpt;
    /* a lane's two (or more) 16-byte units interleave with the other lanes' when the lanes
     * cover the row exactly */
    p.interleave = vec * esize > 16 && tpt == chunks;
    /* NHD rows are contiguous: copied in chunks of 16, 8 or 4 bytes when a row is a power-of-two
     * number of them (rows, and so chunks, are aligned to their size) */
    const int row = D * esize;
    p.chunk_bytes = 0;
    p.chunk_shift = 0;
    if (shape.layout == FP8KV_LAYOUT_NHD)
        for (int cb = 16; cb >= 4 && p.chunk_bytes == 0; cb /= 2)
            if (row % cb == 0 && (row / cb & (row / cb - 1)) == 0) {
                p.chunk_bytes = cb;
                while (1 << p.chunk_shift < row / cb)
                    p.chunk_shift++;
            }
    p.row_bytes = (row + 15) / 16 * 16;
    p.table_words = (partition / shape.block_size + 2 + 3) / 4 * 4;
    p.part_out = scratch.as<float>();
    p.part_max = p.part_out + rows * D;
    p.part_sum = p.part_max + rows;

    const int groups = THREADS / tpt, T = groups * UNROLL;
    const size_t stage_area = (size_t)STAGES * 2 * T * p.row_bytes;
    const size_t merge_area = ((size_t)groups * gb * D + 2 * (size_t)groups * gb) * sizeof(float);
    const size_t shared =
        (size_t)p.table_words * 4 + (fast ? staged_bytes : std::max(stage_area, merge_area));
    if (shared > 48 * 1024) {
        /* the fast kernels' static shared memory (queries, weights, maxima) besides */
        if (shared + (fast ? 8192 : 0) > (size_t)g_device.max_shared_per_block)
            return FP8KV_FAIL("attention: %zu bytes of shared memory needed, %d available",
                              shared, g_device.max_shared_per_block);
        FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(fn),
                                            hipFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)shared));
    }
    /* the heads of one (sequence, partition) are neighbours in launch order: they run together
     * and read the cache rows of the same tokens (in NHD, one contiguous run per token) at the
     * same time, instead of one head's slice of every row in turn, which leaves DRAM reading
     * short scattered segments */
    if (max_partitions > 65535)
        return FP8KV_FAIL("attention: %d partitions of %d tokens (at most 65535)", max_partitions,
                          partition);
    const dim3 grid((unsigned)(shape.num_heads * p.qchunks), (unsigned)max_partitions,
                    (unsigned)num_seqs);
    fn<<<grid, fast ? FAST_THREADS : THREADS, shared>>>(p);
    FP8KV_GPU_CHECK_LAUNCH();
    attention_combine<<<dim3((unsigned)num_q_heads, (unsigned)num_seqs), THREADS>>>(
        d_seq_lens, num_q_heads, D, partition, max_partitions, p.part_out, p.part_max, p.part_sum,
        d_out);
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_GPU_OK;
}

} // namespace fp8kv_gpu

extern "C" int fp8kv_gpu_paged_attention(struct fp8kv_codec_cfg cfg,
                                         const struct fp8kv_cache_shape *shape, const float *query,
                                         int num_q_heads, const uint8_t *key_cache,
                                         const uint8_t *value_cache, const int32_t *block_table,
                                         int max_blocks_per_seq, const int32_t *seq_lens,
                                         int num_seqs, float k_scale, float v_scale,
                                         float softmax_scale, int partition, float *out)
{
    int rc = require_open("fp8kv_gpu_paged_attention");
    if (rc != 0 || (rc = check_shape(shape, "attention")) != 0)
        return rc;
    if (num_seqs < 0 || num_q_heads < 1 || max_blocks_per_seq < 1)
        return FP8KV_FAIL("attention: %d sequences, %d q heads, %d blocks per sequence", num_seqs,
                          num_q_heads, max_blocks_per_seq);
    int longest = 0;
    for (int i = 0; i < num_seqs; i++) {
        if (seq_lens[i] < 0 || seq_lens[i] > max_blocks_per_seq * shape->block_size)
            return FP8KV_FAIL("attention: seq_lens[%d] = %d exceeds the block table", i,
                              seq_lens[i]);
        for (int j = 0; j * shape->block_size < seq_lens[i]; j++) {
            const int32_t b = block_table[(size_t)i * max_blocks_per_seq + j];
            if (b < 0 || b >= shape->num_blocks)
                return FP8KV_FAIL("attention: block_table[%d][%d] = %d is outside the cache", i,
                                  j, b);
        }
        longest = seq_lens[i] > longest ? seq_lens[i] : longest;
    }
    const size_t cache = fp8kv_cache_bytes(shape);
    const size_t qn = (size_t)num_seqs * num_q_heads * shape->head_size;
    buffer d_q, d_kc, d_vc, d_table, d_lens, d_out, scratch;
    if ((rc = d_q.upload(query, qn * sizeof(float))) != 0 ||
        (rc = d_kc.upload(key_cache, cache)) != 0 || (rc = d_vc.upload(value_cache, cache)) != 0 ||
        (rc = d_table.upload(block_table,
                             (size_t)num_seqs * max_blocks_per_seq * sizeof(int32_t))) != 0 ||
        (rc = d_lens.upload(seq_lens, (size_t)num_seqs * sizeof(int32_t))) != 0 ||
        (rc = d_out.upload(out, qn * sizeof(float))) != 0)
        return rc;
    if ((rc = launch_attention(cfg, *shape, 0, d_q.as<float>(), num_q_heads, d_kc.ptr, d_vc.ptr,
                               d_table.as<int32_t>(), max_blocks_per_seq, d_lens.as<int32_t>(),
                               num_seqs, longest, k_scale, v_scale, softmax_scale, partition,
                               d_out.as<float>(), scratch)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return d_out.download(out, qn * sizeof(float));
}
