/* attention_split.hip — the general paged-attention kernel (every layout and head size; the
 * NHD layout with head size 128 takes the fast path of attention_staged.hip instead), split
 * across thread blocks (flash-decoding), and the combining pass both paths end with.
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
 */
#include "attention_common.h"

using namespace fp8kv_gpu;
using namespace fp8kv_gpu::attn;

namespace
{

/* The VEC elements of a lane, in units of UB bytes: unit k of lane `lane` is unit
 * unit_of(k) of the row (the interleaved order keeps the 8 lanes of a quarter warp on distinct
 * banks when a lane has two units). */
template <typename C, int VEC> struct lane_units {
    static constexpr int UB = VEC * C::size >= 16 ? 16 : VEC * C::size; /* bytes per unit */
    static constexpr int NU = VEC * C::size / UB;                       /* units per lane */
    static constexpr int EPU = UB / C::size;                            /* elements per unit */
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
            (int64_t)blocks[block_index(p, t) - first_block] * p.shape.block_size + block_pos(p, t);
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
    C::template decode<VEC>(raw, out);
}

/* The queries of the lane's dimensions for the GB heads from q0, scaled (see the top of the
 * file); 0 for an inactive lane. */
template <typename C, int GB, int VEC>
__device__ __forceinline__ void load_queries(const attn_params &p, int seq, int q0, int lane,
                                             bool active, float (&qf)[GB][VEC])
{
    typedef lane_units<C, VEC> L;
    const int D = p.shape.head_size;
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
}

/* The online softmax, once per stage: a new maximum rescales (rarely, after the first
 * stages); a NaN score is never the maximum and turns l and acc into NaN. The scores become
 * their weights e^(s - m) (0 past t1). */
template <int GB, int VEC, int U>
__device__ __forceinline__ void stage_softmax(int tb, int t1, int grp, float (&sc)[U][GB],
                                              float (&m)[GB], float (&l)[GB], float (&acc)[GB][VEC])
{
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
}

/* Merges the token groups through shared memory (the stages, free again): M = max m, sum of
 * l e^(m - M), sum of acc e^(m - M); then writes the partition's result. */
template <typename C, int GB, int VEC>
__device__ __forceinline__ void merge_groups(const attn_params &p, uint8_t *stages, int groups,
                                             int grp, int lane, bool active, int seq, int q0,
                                             int part, const float (&m)[GB], const float (&l)[GB],
                                             const float (&acc)[GB][VEC])
{
    typedef lane_units<C, VEC> L;
    const int D = p.shape.head_size;
    float *red = reinterpret_cast<float *>(stages);                    /* [groups][GB][D] */
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
        store_partition(p, D, seq, q0, part, g, d, A, M, Lsum);
    }
}

/* Each token group's running softmax, empty: max m, sum l, and the weighted sum of values acc. */
template <int GB, int VEC>
__device__ __forceinline__ void init_state(float (&m)[GB], float (&l)[GB], float (&acc)[GB][VEC])
{
#pragma unroll
    for (int g = 0; g < GB; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            acc[g][k] = 0.0f;
    }
}

/* acc += the weights w times the lane's VEC elements of one V row (in shared memory). */
template <typename C, int GB, int VEC>
__device__ __forceinline__ void token_values(const attn_params &p, const uint8_t *row, int lane,
                                             const float (&w)[GB], float (&acc)[GB][VEC])
{
    float vf[VEC];
    row_elems<C, VEC>(p, row, lane, vf);
#pragma unroll
    for (int g = 0; g < GB; g++)
#pragma unroll
        for (int k = 0; k < VEC; k++)
            acc[g][k] = fmaf(w[g], vf[k], acc[g][k]);
}

/* The scores summed over the tpt lanes of each token. */
template <int GB, int U> __device__ __forceinline__ void reduce_scores(int tpt, float (&sc)[U][GB])
{
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int g = 0; g < GB; g++)
            for (int mask = tpt / 2; mask > 0; mask /= 2)
                sc[u][g] += FP8KV_SHFL_XOR(sc[u][g], mask);
}

template <typename C, int GB, int VEC, int U>
__global__ void __launch_bounds__(THREADS, 2) attention_partial(attn_params p)
{
    allow_combine_launch();
    const block_work work = block_work_of(p, GB);
    const int seq = work.seq, part = work.part, kvh = work.kvh, q0 = work.q0;
    const int n = p.seq_lens[seq], t0 = first_token(p.row_first, seq) + part * p.partition;
    if (t0 >= n) {
        skip_partition<GB, THREADS>(p, seq, q0, part);
        return;
    }
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int D = p.shape.head_size, chunks = D / VEC;
    const int tpt = p.tpt, lane = threadIdx.x % tpt, grp = threadIdx.x / tpt;
    const int groups = THREADS / tpt, T = groups * U; /* T: tokens per stage */
    const bool active = lane < chunks;

    extern __shared__ __align__(16) uint8_t smem[];
    int32_t *blocks = reinterpret_cast<int32_t *>(smem);
    uint8_t *stages = stage_area(smem, p.table_words);
    const size_t stage_bytes = (size_t)2 * T * p.row_bytes;

    /* the partition's block-table entries, so that a token's slot costs no global round trip */
    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    load_block_table<THREADS>(p, seq, first_block, nblocks, blocks);

    /* the queries of the lane's dimensions, scaled (see the top of the file) */
    float qf[GB][VEC];
    load_queries<C, GB, VEC>(p, seq, q0, lane, active, qf);
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
    init_state<GB, VEC>(m, l, acc);

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
        reduce_scores<GB, U>(tpt, sc);
        stage_softmax<GB, VEC, U>(tb, t1, grp, sc, m, l, acc);
        /* P.V: the weights times the group's V rows */
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (!active || tb + grp * U + u >= t1)
                continue;
            token_values<C, GB, VEC>(p, vb + (size_t)(grp * U + u) * p.row_bytes, lane, sc[u], acc);
        }
    }
    wait_copies<0>();
    __syncthreads(); /* the stages are free: the merge reuses them */

    merge_groups<C, GB, VEC>(p, stages, groups, grp, lane, active, seq, q0, part, m, l, acc);
}

/* Partitions whose results a thread loads before it adds any of them (independent loads). */
constexpr int COMBINE_LOADS = 8;

/* Pass 2: grid (q head, sequence); the partitions combined (struct combined). Pass 2 runs
 * after pass 1 has finished, where nothing hides its latency, so its dependent reads are few:
 * the sequence's length before the wait (pass 1 does not write it), then, COMBINE_LOADS
 * partitions at once, their maxima, sums and outputs together, folded online; each thread
 * computes M and L itself along with its dimensions' sums (no barrier), and the usual few
 * partitions cost one round trip. */
__global__ void __launch_bounds__(THREADS)
    attention_combine(const int32_t *seq_lens, const int32_t *row_first, int num_q_heads,
                      int head_size, int partition, int max_partitions, const float *part_out,
                      const float *part_max, const float *part_sum, float *out)
{
    const int qh = blockIdx.x, seq = blockIdx.y, D = head_size;
    const int n = seq_lens[seq] - first_token(row_first, seq);
    const int np = (n + partition - 1) / partition;
    const size_t row = ((size_t)seq * num_q_heads + qh) * max_partitions;
    wait_for_pass1(); /* launched early (see launch_combine) */
    for (int d = threadIdx.x; d < D; d += THREADS) {
        combined c;
        for (int i0 = 0; i0 < np; i0 += COMBINE_LOADS) {
            float m[COMBINE_LOADS], l[COMBINE_LOADS], v[COMBINE_LOADS];
#pragma unroll
            for (int k = 0; k < COMBINE_LOADS; k++) {
                const bool in = i0 + k < np;
                m[k] = in ? part_max[row + i0 + k] : -INFINITY;
                l[k] = in ? part_sum[row + i0 + k] : 0.0f;
                v[k] = in ? part_out[(row + i0 + k) * D + d] : 0.0f;
            }
            c.fold(m, l, v, np - i0);
        }
        out[((size_t)seq * num_q_heads + qh) * D + d] = c.output(np);
    }
}

template <typename C, int VEC> kernel_fn split_of_gb(int gb)
{
    return gb == 4   ? attention_partial<C, 4, VEC, UNROLL>
           : gb == 2 ? attention_partial<C, 2, VEC, UNROLL>
                     : attention_partial<C, 1, VEC, UNROLL>;
}

} // namespace

namespace fp8kv_gpu
{
namespace attn
{

kernel_fn split_kernel(int cache_bf16, int format, int vec, int gb)
{
    if (cache_bf16)
        return vec == 8 ? split_of_gb<bf16_cache, 8>(gb) : split_of_gb<bf16_cache, 1>(gb);
    switch (format) {
#define CASE(F)                                                                                    \
    case F: return vec == 8 ? split_of_gb<fp8_cache<F>, 8>(gb) : split_of_gb<fp8_cache<F>, 1>(gb);
        FP8KV_FOR_EACH_FORMAT(CASE)
#undef CASE
    }
    return nullptr;
}

#if defined(__CUDACC__) && !defined(__HIPCC__)
/* Whether attention_combine, as the open device runs it, waits for pass 1 in the kernel: the
 * code it runs was compiled for sm_90+ (its PTX version, which also implies an sm_90+ device;
 * code JIT-compiled from an older PTX has no griddepcontrol.wait and must not be launched
 * early). Asked once per device index. */
static bool combine_waits()
{
    static int known[64]; /* 0 unknown, 1 yes, 2 no */
    const int i = g_device.index;
    if (i < 0 || i >= 64)
        return false;
    if (known[i] == 0) {
        cudaFuncAttributes a = {};
        const bool waits =
            cudaFuncGetAttributes(&a, attention_combine) == cudaSuccess && a.ptxVersion >= 90;
        known[i] = waits ? 1 : 2;
    }
    return known[i] == 1;
}
#endif

/* Pass 2 after pass 1 in the same stream. Where combine_waits, it is a programmatic dependent
 * launch: its blocks may be scheduled while pass 1's last blocks run, and wait in the kernel
 * (griddepcontrol.wait) until pass 1 has completed and its writes are visible, which hides the
 * launch gap between the passes; the combining pass then costs 2-3 us after pass 1 at 8 x 32k
 * (docs/performance.md, §Attention: combining pass, with the variants that lost). Elsewhere, a
 * plain launch. */
int launch_combine(const attn_params &p, int num_seqs, float *d_out)
{
    const dim3 grid((unsigned)p.num_q_heads, (unsigned)num_seqs);
#if defined(__CUDACC__) && !defined(__HIPCC__)
    if (combine_waits()) {
        cudaLaunchConfig_t config = {};
        config.gridDim = grid;
        config.blockDim = dim3(THREADS);
        cudaLaunchAttribute early = {};
        early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        early.val.programmaticStreamSerializationAllowed = 1;
        config.attrs = &early;
        config.numAttrs = 1;
        FP8KV_GPU_CHECK(cudaLaunchKernelEx(
            &config, attention_combine, p.seq_lens, p.row_first, p.num_q_heads, p.shape.head_size,
            p.partition, p.max_partitions, (const float *)p.part_out, (const float *)p.part_max,
            (const float *)p.part_sum, d_out));
        return FP8KV_OK;
    }
#endif
    attention_combine<<<grid, THREADS>>>(p.seq_lens, p.row_first, p.num_q_heads, p.shape.head_size,
                                         p.partition, p.max_partitions, p.part_out, p.part_max,
                                         p.part_sum, d_out);
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_OK;
}

} // namespace attn
} // namespace fp8kv_gpu
