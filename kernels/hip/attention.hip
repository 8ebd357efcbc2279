/* attention.hip — paged-attention decode with inline dequantization (fp8kv/kv_cache.h), split
 * across thread blocks (flash-decoding).
 *
 * Pass 1, one thread block per (sequence, kv head, group of GB q heads, partition of P
 * tokens): TPT consecutive lanes share a token, each lane VEC consecutive dimensions loaded with
 * one access (16 bytes: 16 fp8 codes or 8 bf16 values), so a warp reads whole cache rows; the
 * K and V chunks of UNROLL tokens are in flight at once. The codes are dequantized in registers
 * (decode * scale in f32; on sm_89+ the e4m3fn decode is the exact hardware
 * cvt.rn.f16x2.e4m3x2) and used for all GB q heads of the kv head, so grouped-query attention
 * decodes each K/V element once. Each group of TPT lanes keeps an online softmax (running max,
 * sum, and weighted sum of values) over its tokens: no block-wide step until the end, where the
 * groups are merged through shared memory and the partition writes its unnormalized output,
 * max and sum.
 * Pass 2, one thread block per (sequence, q head): out = sum_p o_p e^(m_p - M) / sum_p l_p
 * e^(m_p - M), M the largest m_p.
 *
 * The cache element type is a template parameter: the same kernel reads a bf16 cache for the
 * benchmark's baseline. Accumulation is f32 with explicit fmaf (the files are built without
 * contraction; the fused multiply-adds here are deliberate: attention is judged by NMSE), and
 * the softmax runs in powers of two (scores times log2(e), exp2f), which is the same function.
 * NaN semantics follow the CPU reference: a NaN score never becomes the maximum and makes its
 * head's output NaN through the sum.
 */
#include "common.h"

#include <algorithm>
#include <math.h>
#include <stdlib.h>

using namespace fp8kv_gpu;

namespace {

constexpr int THREADS = 128;
constexpr int UNROLL = 3; /* tokens whose K and V each lane has in flight (3: no spill at 3 blocks per SM) */

struct attn_params {
    struct fp8kv_cache_shape shape;
    int fnuz;
    const float *query;
    int num_q_heads, group, qchunks;
    const uint8_t *key_cache, *value_cache; /* bytes; elements of the cache type */
    const int32_t *block_table;
    int max_blocks;
    const int32_t *seq_lens;
    float k_scale, v_scale;
    float score_scale; /* softmax_scale * log2(e): the softmax runs in powers of two */
    int bs_shift;      /* log2(block_size) when a power of two, else -1 */
    int partition, max_partitions, tpt;
    int table_words; /* shared words for a partition's block-table entries */
    float *part_out, *part_max, *part_sum;
};

#ifdef FP8KV_ARCH_NV_SM89_PLUS
/* Two e4m3fn codes (low byte first) to f32, exactly: cvt.rn.f16x2.e4m3x2, then f16 -> f32. */
__device__ __forceinline__ void e4m3x2_to_f32(uint16_t codes, float *lo, float *hi)
{
    uint32_t h2;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(codes));
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
        : "=f"(*lo), "=f"(*hi)
        : "r"(h2));
}
#endif

/* An fp8 cache: decode(code) * scale. */
struct fp8_cache {
    static constexpr int size = 1;
    template <int VEC>
    static __device__ __forceinline__ void decode(const uint8_t *raw, int fnuz, float scale,
                                                  float *out)
    {
#ifdef FP8KV_ARCH_NV_SM89_PLUS
        if (VEC % 2 == 0 && !fnuz) {
#pragma unroll
            for (int k = 0; k < VEC; k += 2) {
                float lo, hi;
                e4m3x2_to_f32((uint16_t)(raw[k] | raw[k + 1] << 8), &lo, &hi);
                out[k] = lo * scale;
                out[k + 1] = hi * scale;
            }
            return;
        }
#endif
#pragma unroll
        for (int k = 0; k < VEC; k++)
            out[k] = decode_fast(fnuz, raw[k]) * scale;
    }
};

/* A bf16 cache (the benchmark's baseline): bf16 * scale. */
struct bf16_cache {
    static constexpr int size = 2;
    template <int VEC>
    static __device__ __forceinline__ void decode(const uint8_t *raw, int fnuz, float scale,
                                                  float *out)
    {
        (void)fnuz;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            out[k] = fp8kv_bf16_to_f32((uint16_t)(raw[2 * k] | raw[2 * k + 1] << 8)) * scale;
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

/* Loads the VEC elements of dimensions [d, d + VEC) of token slot, kv head h. */
template <typename C, int VEC>
__device__ __forceinline__ void load_chunk(const attn_params &p, int is_key, int64_t slot, int h,
                                           int d, uint8_t *raw)
{
    const uint8_t *base = is_key ? p.key_cache : p.value_cache;
    if (!is_key && p.shape.layout == FP8KV_LAYOUT_SPLIT_X) { /* [block][h][d][pos]: strided */
#pragma unroll
        for (int k = 0; k < VEC; k++)
#pragma unroll
            for (int b = 0; b < C::size; b++)
                raw[k * C::size + b] = base[value_offset(p.shape, slot, h, d + k) * C::size + b];
        return;
    }
    const size_t at = is_key ? key_offset(p.shape, slot, h, d) : value_offset(p.shape, slot, h, d);
    load_bytes<VEC * C::size>(base + at * C::size, raw);
}

template <typename C, int GB, int VEC>
__global__ void __launch_bounds__(THREADS, 3) attention_partial(attn_params p)
{
    const int seq = blockIdx.z, part = blockIdx.x;
    const int kvh = blockIdx.y / p.qchunks;
    const int q0 = kvh * p.group + (int)(blockIdx.y % p.qchunks) * GB;
    const int n = p.seq_lens[seq], t0 = part * p.partition;
    if (t0 >= n)
        return;
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int D = p.shape.head_size, chunks = D / VEC;
    const int tpt = p.tpt, lane = threadIdx.x % tpt, grp = threadIdx.x / tpt;
    const int groups = THREADS / tpt;
    const bool active = lane < chunks;
    const int d0 = lane * VEC;

    /* The GB queries in shared memory, laid out [g][k / QW][lane][k % QW] so that the lanes of
     * a group read consecutive 16-byte words (and the groups the same ones): registers are kept
     * for the accumulators. */
    constexpr int QW = VEC >= 4 ? 4 : 1, QV = VEC / QW;
    extern __shared__ float smem[];
    float *qs = smem; /* GB * VEC * tpt floats */
    for (int i = threadIdx.x; i < GB * VEC * tpt; i += THREADS) {
        const int w = i % QW, ln = i / QW % tpt, kq = i / QW / tpt % QV, g = i / (QW * tpt * QV);
        const int d = ln * VEC + kq * QW + w;
        qs[i] = ln < chunks ? p.query[((size_t)seq * p.num_q_heads + q0 + g) * D + d] : 0.0f;
    }
    /* the partition's block-table entries, so that a token's slot costs no global round trip
     * before its K and V loads can start */
    int32_t *blocks = reinterpret_cast<int32_t *>(qs + GB * VEC * tpt);
    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    for (int i = threadIdx.x; i < nblocks; i += THREADS)
        blocks[i] = p.block_table[(size_t)seq * p.max_blocks + first_block + i];
    __syncthreads();

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

    for (int tb = t0; tb < t1; tb += groups * UNROLL) { /* uniform trip count: shuffles below */
        uint8_t kraw[UNROLL][VEC * C::size], vraw[UNROLL][VEC * C::size];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) { /* K and V of UNROLL tokens in flight */
            const int t = tb + u * groups + grp;
            if (active && t < t1) {
                const int64_t slot =
                    (int64_t)blocks[block_index(p, t) - first_block] * p.shape.block_size +
                    block_pos(p, t);
                load_chunk<C, VEC>(p, 1, slot, kvh, d0, kraw[u]);
                load_chunk<C, VEC>(p, 0, slot, kvh, d0, vraw[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int t = tb + u * groups + grp;
            const bool valid = t < t1; /* the same for the TPT lanes of a group */
            float dot[GB], vf[VEC];
#pragma unroll
            for (int g = 0; g < GB; g++)
                dot[g] = 0.0f;
            if (active && valid) {
                float kf[VEC];
                C::template decode<VEC>(kraw[u], p.fnuz, p.k_scale, kf);
#pragma unroll
                for (int g = 0; g < GB; g++)
#pragma unroll
                    for (int kq = 0; kq < QV; kq++) {
                        float qv[QW];
                        const float *src = qs + ((g * QV + kq) * tpt + lane) * QW;
                        if constexpr (QW == 4) {
                            const float4 v4 = *reinterpret_cast<const float4 *>(src);
                            qv[0] = v4.x;
                            qv[1] = v4.y;
                            qv[2] = v4.z;
                            qv[3] = v4.w;
                        } else {
                            qv[0] = src[0];
                        }
#pragma unroll
                        for (int w = 0; w < QW; w++)
                            dot[g] = fmaf(qv[w], kf[kq * QW + w], dot[g]);
                    }
                C::template decode<VEC>(vraw[u], p.fnuz, p.v_scale, vf);
            }
#pragma unroll
            for (int g = 0; g < GB; g++)
                for (int mask = tpt / 2; mask > 0; mask /= 2)
                    dot[g] += FP8KV_SHFL_XOR(dot[g], mask);
            if (!valid)
                continue;
#pragma unroll
            for (int g = 0; g < GB; g++) {
                const float s = p.score_scale * dot[g]; /* the score times log2(e) */
                if (s > m[g]) { /* a new maximum (a NaN score never is one) */
                    const float r = exp2f(m[g] - s);
                    m[g] = s;
                    l[g] *= r;
#pragma unroll
                    for (int k = 0; k < VEC; k++)
                        acc[g][k] *= r;
                }
                const float e = exp2f(s - m[g]); /* NaN for a NaN score: it reaches the output */
                l[g] += e;
                if (active)
#pragma unroll
                    for (int k = 0; k < VEC; k++)
                        acc[g][k] = fmaf(e, vf[k], acc[g][k]);
            }
        }
    }

    /* ---- merge the token groups: M = max m, sum of l e^(m - M), sum of acc e^(m - M) ---- */
    float *red = qs + GB * VEC * tpt + p.table_words; /* [groups][GB][D] */
    float *gm = red + (size_t)groups * GB * D, *gl = gm + groups * GB; /* [groups][GB] */
    if (active)
#pragma unroll
        for (int g = 0; g < GB; g++)
#pragma unroll
            for (int k = 0; k < VEC; k++)
                red[((size_t)grp * GB + g) * D + d0 + k] = acc[g][k];
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
        float L = 0.0f, A = 0.0f;
        for (int r = 0; r < groups; r++) {
            const float w = exp2f(gm[r * GB + g] - M); /* 0 for a group without tokens */
            L = fmaf(gl[r * GB + g], w, L);
            A = fmaf(red[((size_t)r * GB + g) * D + d], w, A);
        }
        const size_t row = ((size_t)seq * p.num_q_heads + q0 + g) * p.max_partitions + part;
        p.part_out[row * D + d] = A;
        if (d == 0) {
            p.part_max[row] = M;
            p.part_sum[row] = L;
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
    return gb == 4 ? attention_partial<C, 4, VEC>
           : gb == 2 ? attention_partial<C, 2, VEC>
                     : attention_partial<C, 1, VEC>;
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
     * elements per lane (16, 8, 1), FP8KV_ATTN_GB the q heads per block (4, 2, 1),
     * FP8KV_ATTN_PARTITION sets the default partition */
    const char *knob_vec = getenv("FP8KV_ATTN_VEC"), *knob_gb = getenv("FP8KV_ATTN_GB");
    const char *knob_part = getenv("FP8KV_ATTN_PARTITION");
    const int max_vec = std::min(cache_bf16 ? 8 : 16, knob_vec ? atoi(knob_vec) : 16);
    const int max_gb = knob_gb ? atoi(knob_gb) : 4;
    const int D = shape.head_size, group = num_q_heads / shape.num_heads;
    const int vec = vec_of(D, max_vec), chunks = D / vec;
    const int tpt = pow2_at_least(chunks);
    if (tpt > 32)
        return FP8KV_FAIL("attention: head_size %d needs %d lanes per token (at most 32)", D, tpt);
    const int gb = group % 4 == 0 && max_gb >= 4 ? 4 : group % 2 == 0 && max_gb >= 2 ? 2 : 1;
    if (partition <= 0 && knob_part)
        partition = atoi(knob_part);
    if (partition <= 0) /* split even short sequences: the combining pass always runs */
        partition = std::min(1024, std::max(8, pow2_at_least((max_seq_len + 3) / 4)));
    const int max_partitions = std::max(1, (max_seq_len + partition - 1) / partition);

    const size_t rows = (size_t)num_seqs * num_q_heads * max_partitions;
    int rc = scratch.bytes >= rows * ((size_t)D + 2) * sizeof(float)
                 ? 0
                 : scratch.alloc(rows * ((size_t)D + 2) * sizeof(float));
    if (rc != 0)
        return rc;
    attn_params p;
    p.shape = shape;
    p.fnuz = cfg.format == FP8KV_CODEC_E4M3FNUZ;
    p.query = d_query;
    p.num_q_heads = num_q_heads;
    p.group = group;
    p.qchunks = group / gb;
    p.key_cache = static_cast<const uint8_t *>(d_key_cache);
    p.value_cache = static_cast<const uint8_t *>(d_value_cache);
    p.block_table = d_block_table;
    p.max_blocks = max_blocks_per_seq;
    p.seq_lens = d_seq_lens;
    p.k_scale = k_scale;
    p.v_scale = v_scale;
    p.score_scale = softmax_scale * 1.4426950408889634f; /* log2(e) */
    p.bs_shift = -1;
    for (int b = 0; b < 31; b++)
        if (shape.block_size == 1 << b)
            p.bs_shift = b;
    p.partition = partition;
    p.max_partitions = max_partitions;
    p.tpt = tpt;
    p.part_out = scratch.as<float>();
    p.part_max = p.part_out + rows * D;
    p.part_sum = p.part_max + rows;

    partial_fn fn;
    if (cache_bf16)
        fn = vec == 8 ? partial_of_gb<bf16_cache, 8>(gb) : partial_of_gb<bf16_cache, 1>(gb);
    else
        fn = vec == 16  ? partial_of_gb<fp8_cache, 16>(gb)
             : vec == 8 ? partial_of_gb<fp8_cache, 8>(gb)
                        : partial_of_gb<fp8_cache, 1>(gb);
    const int groups = THREADS / tpt;
    p.table_words = partition / shape.block_size + 2;
    const size_t shared = ((size_t)gb * vec * tpt + (size_t)p.table_words +
                           (size_t)groups * gb * D + 2 * (size_t)groups * gb) *
                          sizeof(float);
    if (shared > 48 * 1024) {
        if (shared > (size_t)g_device.max_shared_per_block)
            return FP8KV_FAIL("attention: %zu bytes of shared memory needed, %d available",
                              shared, g_device.max_shared_per_block);
        FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(fn),
                                            hipFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)shared));
    }
    const dim3 grid((unsigned)max_partitions, (unsigned)(shape.num_heads * p.qchunks),
                    (unsigned)num_seqs);
    fn<<<grid, THREADS, shared>>>(p);
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
