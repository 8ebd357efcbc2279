/* attention_common.h — what the paged-attention files share (attention.hip: the plan and the
 * launcher; attention_split.hip: the general split-K kernel and the combining pass;
 * attention_staged.hip and attention_mma.hip: the NHD head-128 paths): the kernel parameters, the
 * launch constants, the device helpers both kernels use (copies into shared memory, the cache
 * element types, block-table lookups) and the kernels' entry points. Internal: not part of
 * fp8kv/gpu.h.
 *
 * The cache element type is a template parameter of both kernels: the same kernel reads a
 * bf16 cache for the benchmark's baseline. Accumulation is f32 with explicit fmaf (the files
 * are built without contraction; the fused multiply-adds are deliberate). NaN semantics
 * follow the CPU reference: a NaN score never becomes the maximum and makes its head's output
 * NaN through the sum. */
#ifndef FP8KV_HIP_ATTENTION_COMMON_H
#define FP8KV_HIP_ATTENTION_COMMON_H

#include "common.h"

#include <math.h>

namespace fp8kv_gpu
{
namespace attn
{

/* the split-K kernel (attention_split.hip) */
constexpr int THREADS = 128;
constexpr int STAGES = 3; /* shared-memory stages: STAGES - 1 in flight while one is consumed */
constexpr int UNROLL = 4; /* tokens per group and stage (2 and 8 measured slower on the H200) */
/* the NHD fast path (attention_staged.hip) */
constexpr int FAST_THREADS = 128, FAST_WARPS = FAST_THREADS / 32;
constexpr int FD = 128;              /* the head size of the fast path */
constexpr int STAGED_MIN_BLOCKS = 3; /* blocks per multiprocessor its registers are budgeted for */

struct attn_params {
    struct fp8kv_cache_shape shape;
    const float *query;
    int num_q_heads, group, qchunks;
    const uint8_t *key_cache, *value_cache; /* bytes; elements of the cache type */
    const int32_t *block_table;
    int max_blocks;
    const int32_t *seq_lens; /* per query row: its sequence's tokens up to and including it */
    /* several queries a sequence (query_rows in common.h): per query row, its sequence's
     * block-table row and its first token (a sliding window); NULL: row i is sequence i from
     * token 0 (a decode step) */
    const int32_t *row_seq, *row_first;
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
    float *out; /* set where every sequence has one partition: pass 1 writes the output itself */
};

/* A pass-1 kernel. */
typedef void (*kernel_fn)(attn_params);

/* The kernels, by their template arguments (the instantiations live in the kernels' files):
 * format: the fp8 cache's enum fp8kv_codec_format (a template argument of its element type,
 * fp8_cache<FORMAT>: no per-element choice); split_kernel: vec 8 or 1 elements per lane, gb 4,
 * 2 or 1 q heads per block; staged_kernel: gb 4, 2 or 1. */
kernel_fn split_kernel(int cache_bf16, int format, int vec, int gb);
kernel_fn staged_kernel(int cache_bf16, int format, int gb);
/* mma_kernel (attention_mma.hip): the tensor-core path, gb 4, 2 or 1, e4m3fn or bf16 cache; only
 * where the device pass is NVIDIA sm_89+ (the plan checks); mma_stage_bytes: its stages' dynamic
 * shared memory. */
kernel_fn mma_kernel(int cache_bf16, int gb);
size_t mma_stage_bytes(int cache_bf16);

/* Pass 2 (attention_split.hip): out from the partitions' outputs, maxima and sums; a status. */
int launch_combine(const attn_params &p, int num_seqs, float *d_out);

/* The early combining launch (a programmatic dependent launch on CUDA sm_90+, see
 * launch_combine), its two device sides; nothing elsewhere.
 * allow_combine_launch, the first statement of every pass-1 kernel: the combining pass may be
 * scheduled as soon as every pass-1 block has started.
 * wait_for_pass1, the combining pass's first statement before it reads pass 1's results: waits
 * until pass 1 has completed and its writes are visible. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(__HIPCC__)
#define FP8KV_EARLY_COMBINE 1
#endif
__device__ __forceinline__ void allow_combine_launch()
{
#ifdef FP8KV_EARLY_COMBINE
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void wait_for_pass1()
{
#ifdef FP8KV_EARLY_COMBINE
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* ---- copies into shared memory ------------------------------------------------------------ */

/* Where the stages begin. The dynamic shared memory holds the partition's block-table entries
 * (table_words), then the stages (the merge reuses them), the first stage at the next address
 * that is a multiple of STAGE_ALIGN bytes: the shared-memory address, not the offset in the
 * dynamic allocation, which follows the kernel's static arrays. Stages 32 to 112 bytes past a
 * multiple of 128 made the fp8 launch at 8 x 32k 14-20% slower; aligning to 1024 bytes gains
 * nothing more (docs/performance.md, §Attention: stage alignment).
 * STAGE_PAD: the most the alignment adds (the dynamic allocation is 16-byte aligned). */
constexpr int STAGE_ALIGN = 128, STAGE_PAD = STAGE_ALIGN - 16;

/* the shared-memory address of p (its low bits are those of the offset in the block's shared
 * memory: on AMD the low 32 bits of the generic address, the LDS aperture being 4 GiB-aligned) */
__device__ __forceinline__ uint32_t shared_address(const void *p)
{
#if defined(__CUDA_ARCH__) && !defined(__HIPCC__)
    return (uint32_t)__cvta_generic_to_shared(p);
#else
    return (uint32_t)(uintptr_t)p;
#endif
}

/* The first stage of a kernel whose dynamic shared memory is smem (see STAGE_ALIGN). */
__device__ __forceinline__ uint8_t *stage_area(uint8_t *smem, int table_words)
{
    uint8_t *after_table = smem + (size_t)table_words * 4;
    const uint32_t past = shared_address(after_table) % STAGE_ALIGN;
    return past == 0 ? after_table : after_table + (STAGE_ALIGN - past);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__HIPCC__)
#define FP8KV_CP_ASYNC 1
#endif

/* cp_async: n bytes (4, 8 or 16, both addresses aligned to n) from global src to shared dst,
 * completed by wait_copies; a plain copy where there is no cp.async. */
__device__ __forceinline__ void cp_async(void *dst, const void *src, int n)
{
#ifdef FP8KV_CP_ASYNC
    const uint32_t d = shared_address(dst);
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

/* An fp8 cache of format FORMAT (enum fp8kv_codec_format): decode(code), exactly (the scale
 * is applied elsewhere); e4m3fn on sm_89+ through the hardware conversion. */
template <int FORMAT> struct fp8_cache {
    static constexpr int size = 1;
    static constexpr int format = FORMAT;
    template <int N> static __device__ __forceinline__ void decode(const uint8_t *raw, float *out)
    {
#ifdef FP8KV_ARCH_NV_SM89_PLUS
        constexpr bool hardware = N % 4 == 0 && FORMAT == FP8KV_CODEC_E4M3FN;
#else
        constexpr bool hardware = false;
#endif
        if constexpr (hardware) {
#ifdef FP8KV_ARCH_NV_SM89_PLUS
#pragma unroll
            for (int k = 0; k < N; k += 4) {
                uint32_t w;
                memcpy(&w, raw + k, 4);
                e4m3x4_to_f32(w, out + k);
            }
#endif
        } else {
#pragma unroll
            for (int k = 0; k < N; k++)
                out[k] = decode_fast<FORMAT>(raw[k]);
        }
    }
};

/* A bf16 cache (the benchmark's baseline): the bits moved to the top of an f32. */
struct bf16_cache {
    static constexpr int size = 2;
    template <int N> static __device__ __forceinline__ void decode(const uint8_t *raw, float *out)
    {
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

/* ---- the block table ------------------------------------------------------------------------ */

/* What a pass-1 block computes: the grid is (kv heads x q-head chunks, sequences, partitions),
 * partitions outermost in launch order, so that every sequence's long partitions are dispatched
 * before any short last one (staged_partition in attention.hip: the short ones fill the slots
 * the long ones leave free, and then those that free up first). */
struct block_work {
    int seq, part; /* the sequence, the partition of it */
    int kvh, q0;   /* the kv head, the first of the block's GB q heads */
};
__device__ __forceinline__ block_work block_work_of(const attn_params &p, int gb)
{
    const int kvh = (int)blockIdx.x / p.qchunks;
    return {(int)blockIdx.y, (int)blockIdx.z, kvh,
            kvh * p.group + (int)(blockIdx.x % p.qchunks) * gb};
}

/* The block of token position t, and t's position in it. */
__device__ __forceinline__ int block_index(const attn_params &p, int t)
{
    return p.bs_shift >= 0 ? t >> p.bs_shift : t / p.shape.block_size;
}
__device__ __forceinline__ int block_pos(const attn_params &p, int t)
{
    return p.bs_shift >= 0 ? t & (p.shape.block_size - 1) : t % p.shape.block_size;
}

/* The first token query row `row` attends to: 0 but under a sliding window. A row's
 * partitions cover its tokens [first_token, seq_lens[row]). */
__device__ __forceinline__ int first_token(const int32_t *row_first, int row)
{
    return row_first ? row_first[row] : 0;
}

/* Copies the nblocks block-table entries of query row seq's sequence from first_block on into
 * blocks (shared memory), so that a token's slot costs no global round trip; NT threads. */
template <int NT>
__device__ __forceinline__ void load_block_table(const attn_params &p, int seq, int first_block,
                                                 int nblocks, int32_t *blocks)
{
    const size_t row = (size_t)(p.row_seq ? p.row_seq[seq] : seq);
    for (int i = threadIdx.x; i < nblocks; i += NT)
        blocks[i] = p.block_table[row * p.max_blocks + first_block + i];
}

/* ---- combining the partitions --------------------------------------------------------------- */

/* l, a sum of weights taken at maximum m, taken at maximum top >= m instead; 0 stays 0 (also
 * where m and top are both -inf, whose difference is NaN). */
__device__ __forceinline__ float rescaled(float l, float m, float top)
{
    return l == 0.0f ? 0.0f : l * exp2f(m - top);
}

/* The combination of a head's partitions, for one output dimension, folded online: out = sum
 * over partitions of out_i 2^(m_i - M), over L = sum l_i 2^(m_i - M), M the largest m_i (a NaN
 * m_i ignored, as fmaxf does; a NaN l_i or out_i makes the output NaN). The one home of that
 * arithmetic: the combining pass folds K partitions at a time, pass 1 its one partition where a
 * launch has no combining pass (attn_params::out). */
struct combined {
    float M = -INFINITY, L = 0.0f, o = 0.0f;
    /* adds the first `count` of K partitions' maxima m, sums l and outputs v (the others' m
     * -inf) */
    template <int K>
    __device__ __forceinline__ void fold(const float (&m)[K], const float (&l)[K],
                                         const float (&v)[K], int count)
    {
        float top = M;
#pragma unroll
        for (int k = 0; k < K; k++)
            top = fmaxf(top, m[k]);
        /* what was summed at M, taken at top (unchanged where M is top, -inf included) */
        const float f = M == top ? 1.0f : exp2f(M - top);
        L *= f;
        o *= f;
#pragma unroll
        for (int k = 0; k < K; k++)
            if (k < count) {
                L += rescaled(l[k], m[k], top);
                o = fmaf(v[k], exp2f(m[k] - top), o);
            }
        M = top;
    }
    /* the output, after all np partitions are folded (0 for a sequence without tokens) */
    __device__ __forceinline__ float output(int np) const
    {
        return np ? o / L : 0.0f;
    }
};

/* The output row of q head qh of sequence seq, where pass 1 writes the output itself. */
__device__ __forceinline__ float *output_row(const attn_params &p, int seq, int qh)
{
    return p.out + ((size_t)seq * p.num_q_heads + qh) * p.shape.head_size;
}

/* A block whose partition starts at or past its sequence's end computes nothing; where pass 1
 * writes the output itself, the first partition of an empty sequence writes its GB heads' 0s,
 * as the combining pass does (NT threads). */
template <int GB, int NT>
__device__ __forceinline__ void skip_partition(const attn_params &p, int seq, int q0, int part)
{
    if (p.out && part == 0)
        for (int o = threadIdx.x; o < GB * p.shape.head_size; o += NT)
            output_row(p, seq, q0 + o / p.shape.head_size)[o % p.shape.head_size] = 0.0f;
}

/* Writes a partition's result for q head q0 + g, dimension d, where pass 2 reads it: the
 * unnormalized output A (times v_scale), and the maximum M and sum Lsum once per head; where
 * pass 1 writes the output itself (attn_params::out), the output. */
__device__ __forceinline__ void store_partition(const attn_params &p, int D, int seq, int q0,
                                                int part, int g, int d, float A, float M,
                                                float Lsum)
{
    if (p.out) {
        combined c;
        c.fold<1>({M}, {Lsum}, {A * p.v_scale}, 1);
        output_row(p, seq, q0 + g)[d] = c.output(1);
        return;
    }
    const size_t row = ((size_t)seq * p.num_q_heads + q0 + g) * p.max_partitions + part;
    p.part_out[row * D + d] = A * p.v_scale;
    if (d == 0) {
        p.part_max[row] = M;
        p.part_sum[row] = Lsum;
    }
}

/* Merges the partial results of the WARPS warps of a partition (the staged and tensor-core
 * kernels; NT threads): macc [WARPS][GB][head_size] their unnormalized outputs, mm and ml their
 * maxima and sums; M = max m, sum of l e^(m - M), sum of acc e^(m - M); then writes what pass 2
 * reads. */
template <int GB, int NT, int WARPS>
__device__ __forceinline__ void
merge_partition(const attn_params &p, const float *macc, const float (&mm)[WARPS][GB],
                const float (&ml)[WARPS][GB], int seq, int q0, int part)
{
    const int D = p.shape.head_size;
    for (int o = threadIdx.x; o < GB * D; o += NT) {
        const int g = o / D, d = o % D;
        float M = -INFINITY;
#pragma unroll
        for (int r = 0; r < WARPS; r++)
            M = fmaxf(M, mm[r][g]);
        float Lsum = 0.0f, A = 0.0f;
#pragma unroll
        for (int r = 0; r < WARPS; r++) {
            const float w = exp2f(mm[r][g] - M);
            Lsum = fmaf(ml[r][g], w, Lsum);
            A = fmaf(macc[((size_t)r * GB + g) * D + d], w, A);
        }
        store_partition(p, D, seq, q0, part, g, d, A, M, Lsum);
    }
}

} // namespace attn
} // namespace fp8kv_gpu

#endif
