/* attention.hip — paged-attention decode with inline dequantization (fp8kv/kv_cache.h), split
 * across thread blocks (flash-decoding): the plan and the launcher.
 *
 * Three pass-1 kernels, chosen by plan_attention from the shape, in one place:
 *   "nhd128-mma"     the NHD layout with head size 128 (and cache tensors under 4 GiB) over an
 *                    e4m3fn or a bf16 cache where the device pass is NVIDIA sm_89+:
 *                    attention_mma.hip, the products on the tensor cores;
 *   "nhd128-staged"  the same shapes elsewhere (e4m3fnuz, e5m2, e5m2fnuz, AMD, older devices):
 *                    attention_staged.hip; both size partitions for about one wave of resident
 *                    blocks;
 *   "split-k"        every other shape and layout: attention_split.hip, VEC elements per
 *                    lane (8, or 1 when head_size is not a multiple of 8), partitions of the
 *                    power of two at or above a quarter of the longest sequence (8 .. 2048).
 * Each takes GB q heads of one kv head per thread block (4, 2 or 1, the largest that divides
 * the group). Where a launch has several partitions per sequence, pass 2, attention_combine
 * (attention_split.hip), merges them; where it has one, pass 1 writes the output itself. The
 * plan's name is what fp8kv_gpu_attention_plan reports.
 */
#include "attention_common.h"

#include <algorithm>
#include <stdio.h>

using namespace fp8kv_gpu;
using namespace fp8kv_gpu::attn;

namespace
{

/* The split-K kernel's elements per lane at most: 8, half the registers of 16 and twice the
 * blocks per multiprocessor, measured faster for both caches; and the q heads per block at
 * most. */
constexpr int MAX_VEC = 8, MAX_GB = 4;

enum plan_kind { PLAN_NONE, PLAN_SPLIT_K, PLAN_NHD128_STAGED, PLAN_NHD128_MMA };

/* Whether the tensor-core path runs here: an e4m3fn or bf16 cache, and a device pass for NVIDIA
 * sm_89+ (its probe reports the hardware conversion codec, compiled under the same condition). */
bool mma_available(int cache_bf16, int format)
{
    return (cache_bf16 || format == FP8KV_CODEC_E4M3FN) &&
           (g_device.codec_mask >> FP8KV_GPU_CODEC_PTX_CVT_SATFINITE & 1u) != 0;
}

/* What the launcher runs for one call: the kernel, its launch geometry, its shared memory. */
struct attention_plan {
    int kind;               /* enum plan_kind (PLAN_NONE: nothing to launch) */
    int cache_bf16, format; /* the cache element type and format */
    int vec, tpt;           /* split-K: elements per lane, lanes per token */
    int group, gb;          /* q heads per kv head, per thread block */
    int partition, max_partitions;
    int row_bytes, table_words; /* see attn_params */
    int threads;                /* per thread block */
    size_t shared;              /* dynamic shared memory bytes */
    kernel_fn fn;
    char name[64];
};

/* Blocks of fn (FAST_THREADS threads, `shared` dynamic bytes) resident per multiprocessor,
 * asked once per kernel. */
int resident_blocks(kernel_fn fn, size_t shared)
{
    static kernel_fn seen[16];
    static int count[16];
    for (int i = 0; i < 16; i++)
        if (seen[i] == fn)
            return count[i];
    const int n = resident_blocks_of(fn, FAST_THREADS, shared);
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

/* The default partition of the fast path: enough partitions for about one wave of resident
 * blocks (a second, partial wave is up to 20% slower), of at least 256 and at most 8192 tokens,
 * in chunks of 32. Where that wave leaves slots free, each sequence gets a short last partition
 * too (at least 256 tokens, at most half a long one): together they are half of what the free
 * slots could stream while the long partitions run, and the free slots take them one after
 * another (they are launched last: block_work_of), so that no multiprocessor is left with one
 * block (fp8 8 x 32k 4% faster; no other size wins on every H200: docs/performance.md,
 * §Attention: partitions). Sets the kernel's shared-memory opt-in first, as the occupancy query
 * needs it. */
int staged_partition(const attention_plan &pl, const struct fp8kv_cache_shape &shape, int num_seqs,
                     int max_seq_len, size_t stage_bytes, int *partition)
{
    const size_t shared = stage_bytes + 2048 + STAGE_PAD; /* a table of 8192 / 16 entries or so */
    if (shared > DEFAULT_SHARED)
        FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(pl.fn),
                                            hipFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)shared));
    const long slots = (long)g_device.multiprocessors * resident_blocks(pl.fn, shared);
    const long pairs = (long)num_seqs * shape.num_heads * (pl.group / pl.gb);
    const long want = std::max(1L, slots / pairs), len = max_seq_len;
    long part = std::min(8192L, std::max(256L, ((len + want - 1) / want + 31) / 32 * 32));
    const long per_seq = (len + part - 1) / part, free_slots = slots - pairs * per_seq;
    if (free_slots > 0) { /* the short last partitions, at most half a long one */
        const long tail = std::min(free_slots * part / pairs, part) / 2 / 32 * 32;
        const long shortened = ((len - tail + per_seq - 1) / per_seq + 31) / 32 * 32;
        if (tail >= 256 && shortened * per_seq < len)
            part = shortened;
    }
    *partition = (int)part;
    return FP8KV_OK;
}

/* The kernel and its per-kernel facts (no partition yet). kernel: FP8KV_ATTENTION_AUTO, or one
 * the caller asks for (the benchmark's previous kernel), where the shape allows it. */
int choose_kernel(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape, int cache_bf16,
                  int num_q_heads, int kernel, attention_plan *pl)
{
    const int D = shape.head_size, esize = cache_bf16 ? 2 : 1;
    pl->cache_bf16 = cache_bf16;
    pl->format = cfg.format;
    pl->group = num_q_heads / shape.num_heads;
    pl->vec = vec_of(D, MAX_VEC);
    pl->tpt = pow2_at_least(D / pl->vec);
    if (pl->tpt > 32)
        return FP8KV_FAIL("attention: head_size %d needs %d lanes per token (at most 32)", D,
                          pl->tpt);
    pl->gb = pl->group % 4 == 0 && MAX_GB >= 4 ? 4 : pl->group % 2 == 0 && MAX_GB >= 2 ? 2 : 1;
    const size_t tensor_bytes =
        (size_t)shape.num_blocks * shape.block_size * shape.num_heads * D * (size_t)esize;
    const bool fast = shape.layout == FP8KV_LAYOUT_NHD && D == FD && tensor_bytes <= 0xFFFFFFFFu;
    const bool mma = fast && mma_available(cache_bf16, pl->format);
    pl->kind = mma && (kernel == FP8KV_ATTENTION_AUTO || kernel == FP8KV_ATTENTION_MMA)
                   ? PLAN_NHD128_MMA
               : fast && kernel != FP8KV_ATTENTION_SPLIT ? PLAN_NHD128_STAGED
                                                         : PLAN_SPLIT_K;
    if (kernel != FP8KV_ATTENTION_AUTO &&
        pl->kind != (kernel == FP8KV_ATTENTION_MMA      ? PLAN_NHD128_MMA
                     : kernel == FP8KV_ATTENTION_STAGED ? PLAN_NHD128_STAGED
                                                        : PLAN_SPLIT_K))
        return FP8KV_FAIL("attention: kernel %d does not take this shape here", kernel);
    pl->fn = pl->kind == PLAN_NHD128_MMA ? mma_kernel(cache_bf16, pl->gb)
             : pl->kind == PLAN_NHD128_STAGED
                 ? staged_kernel(cache_bf16, pl->format, pl->gb)
                 : split_kernel(cache_bf16, pl->format, pl->vec, pl->gb);
    if (!pl->fn)
        return FP8KV_FAIL("attention: no kernel for cache format %d", cfg.format);
    pl->threads = fast ? FAST_THREADS : THREADS;
    pl->row_bytes = (D * esize + 15) / 16 * 16;
    return FP8KV_OK;
}

/* The dynamic shared memory of the planned kernel: the block-table entries, then (at the next
 * multiple of STAGE_ALIGN bytes) the staged kernels' stages, or the split-K kernel's stages or
 * (later, in the same bytes) its merge. */
size_t shared_bytes(const attention_plan &pl, const struct fp8kv_cache_shape &shape,
                    size_t stage_bytes)
{
    const size_t before_stages = (size_t)pl.table_words * 4 + STAGE_PAD;
    if (pl.kind != PLAN_SPLIT_K)
        return before_stages + stage_bytes;
    const int groups = THREADS / pl.tpt, T = groups * UNROLL;
    const size_t stage_area = (size_t)STAGES * 2 * T * pl.row_bytes;
    const size_t merge_area =
        ((size_t)groups * pl.gb * shape.head_size + 2 * (size_t)groups * pl.gb) * sizeof(float);
    return before_stages + std::max(stage_area, merge_area);
}

/* plan_attention: the configuration the launcher runs for these arguments (partition 0: the
 * default), validated; sets the kernel's shared-memory opt-in where it needs more than the
 * default. The device must be open. */
int plan_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                   int cache_bf16, int num_q_heads, int num_seqs, int max_seq_len, int partition,
                   int kernel, attention_plan *pl)
{
    *pl = attention_plan{};
    if (num_seqs <= 0 || num_q_heads <= 0) {
        snprintf(pl->name, sizeof pl->name, "none (no sequences)");
        return FP8KV_OK;
    }
    if (num_q_heads % shape.num_heads != 0)
        return FP8KV_FAIL("attention: %d q heads is not a multiple of %d kv heads", num_q_heads,
                          shape.num_heads);
    if (num_seqs > 65535)
        return FP8KV_FAIL("attention: %d sequences (at most 65535 per launch)", num_seqs);
    int rc = choose_kernel(cfg, shape, cache_bf16, num_q_heads, kernel, pl);
    if (rc != 0)
        return rc;
    const bool fast = pl->kind != PLAN_SPLIT_K;
    /* the staged kernel's stages: 4 warps x 2 stages x 32 tokens x (K row + 16, V row) */
    const size_t stage_bytes =
        pl->kind == PLAN_NHD128_MMA ? mma_stage_bytes(cache_bf16)
        : fast ? (size_t)FAST_WARPS * 2 * 32 * (2 * (size_t)FD * (cache_bf16 ? 2 : 1) + 16)
               : 0;
    if (partition <= 0 && fast &&
        (rc = staged_partition(*pl, shape, num_seqs, max_seq_len, stage_bytes, &partition)) != 0)
        return rc;
    if (partition <= 0) /* split-K: about four partitions per sequence, 8 to 2048 tokens */
        partition = std::min(2048, std::max(8, pow2_at_least((max_seq_len + 3) / 4)));
    pl->partition = partition;
    pl->max_partitions = std::max(1, (max_seq_len + partition - 1) / partition);
    pl->table_words = (partition / shape.block_size + 2 + 3) / 4 * 4;
    pl->shared = shared_bytes(*pl, shape, stage_bytes);
    if (pl->shared > DEFAULT_SHARED) {
        /* the staged kernel's static shared memory (queries, weights, maxima) besides */
        if (pl->shared + (fast ? 8192 : 0) > (size_t)g_device.max_shared_per_block)
            return FP8KV_FAIL("attention: %zu bytes of shared memory needed, %d available",
                              pl->shared, g_device.max_shared_per_block);
        FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(pl->fn),
                                            hipFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)pl->shared));
    }
    if (pl->max_partitions > 65535)
        return FP8KV_FAIL("attention: %d partitions of %d tokens (at most 65535)",
                          pl->max_partitions, partition);
    if (fast)
        snprintf(pl->name, sizeof pl->name, "nhd128-%s gb%d partition %d",
                 pl->kind == PLAN_NHD128_MMA ? "mma" : "staged", pl->gb, partition);
    else
        snprintf(pl->name, sizeof pl->name, "split-k vec%d gb%d partition %d", pl->vec, pl->gb,
                 partition);
    return FP8KV_OK;
}

/* The kernel parameters of a plan (the partitions' outputs not yet placed). */
attn_params params_of(const attention_plan &pl, const struct fp8kv_cache_shape &shape,
                      const float *d_query, int num_q_heads, const void *d_key_cache,
                      const void *d_value_cache, const int32_t *d_block_table,
                      int max_blocks_per_seq, const int32_t *d_seq_lens, float k_scale,
                      float v_scale, float softmax_scale)
{
    attn_params p;
    p.shape = shape;
    p.query = d_query;
    p.num_q_heads = num_q_heads;
    p.group = pl.group;
    p.qchunks = pl.group / pl.gb;
    p.key_cache = static_cast<const uint8_t *>(d_key_cache);
    p.value_cache = static_cast<const uint8_t *>(d_value_cache);
    p.block_table = d_block_table;
    p.max_blocks = max_blocks_per_seq;
    p.seq_lens = d_seq_lens;
    p.row_seq = p.row_first = nullptr;
    p.q_scale = softmax_scale * 1.4426950408889634f * k_scale; /* log2(e) */
    p.v_scale = v_scale;
    p.bs_shift = shift_of(shape.block_size);
    p.partition = pl.partition;
    p.max_partitions = pl.max_partitions;
    p.tpt = pl.tpt;
    /* a lane's two (or more) 16-byte units interleave with the other lanes' when the lanes
     * cover the row exactly */
    const int esize = pl.cache_bf16 ? 2 : 1, D = shape.head_size;
    p.interleave = pl.vec * esize > 16 && pl.tpt == D / pl.vec;
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
    p.row_bytes = pl.row_bytes;
    p.table_words = pl.table_words;
    p.part_out = p.part_max = p.part_sum = nullptr;
    p.out = nullptr;
    return p;
}

} // namespace

namespace fp8kv_gpu
{

int attention_plan_name(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                        int cache_bf16, int num_q_heads, int num_seqs, int max_seq_len, int kernel,
                        char *name, size_t size)
{
    attention_plan pl;
    const int rc =
        plan_attention(cfg, shape, cache_bf16, num_q_heads, num_seqs, max_seq_len, 0, kernel, &pl);
    if (rc == 0)
        snprintf(name, size, "%s", pl.name);
    return rc;
}

int launch_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                     int cache_bf16, const float *d_query, int num_q_heads, const void *d_key_cache,
                     const void *d_value_cache, const int32_t *d_block_table,
                     int max_blocks_per_seq, const int32_t *d_seq_lens, int num_seqs,
                     int max_seq_len, float k_scale, float v_scale, float softmax_scale,
                     int partition, int kernel, float *d_out, buffer &scratch,
                     const query_rows &rows)
{
    attention_plan pl;
    int rc = plan_attention(cfg, shape, cache_bf16, num_q_heads, num_seqs, max_seq_len, partition,
                            kernel, &pl);
    if (rc != 0 || pl.kind == PLAN_NONE)
        return rc;
    attn_params p =
        params_of(pl, shape, d_query, num_q_heads, d_key_cache, d_value_cache, d_block_table,
                  max_blocks_per_seq, d_seq_lens, k_scale, v_scale, softmax_scale);
    p.row_seq = rows.seq;
    p.row_first = rows.first;
    /* one partition per sequence: pass 1 writes the output, no combining pass (fp8 64 x 4k 3%
     * faster, 64 x 1k 7%: docs/performance.md, §Attention: partitions) */
    const bool one_pass = pl.max_partitions == 1;
    const size_t D = (size_t)shape.head_size;
    const size_t parts = (size_t)num_seqs * num_q_heads * pl.max_partitions;
    if (one_pass)
        p.out = d_out;
    else {
        if (scratch.bytes < parts * (D + 2) * sizeof(float) &&
            (rc = scratch.alloc(parts * (D + 2) * sizeof(float))) != 0)
            return rc;
        p.part_out = scratch.as<float>();
        p.part_max = p.part_out + parts * D;
        p.part_sum = p.part_max + parts;
    }
    /* the heads of one (sequence, partition) are neighbours in launch order: they run together
     * and read the cache rows of the same tokens (in NHD, one contiguous run per token) at the
     * same time, instead of one head's slice of every row in turn, which leaves DRAM reading
     * short scattered segments; partitions outermost (block_work_of) */
    const dim3 grid((unsigned)(shape.num_heads * p.qchunks), (unsigned)num_seqs,
                    (unsigned)pl.max_partitions);
    pl.fn<<<grid, pl.threads, pl.shared>>>(p);
    FP8KV_GPU_CHECK_LAUNCH();
    return one_pass ? FP8KV_OK : launch_combine(p, num_seqs, d_out);
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
                return FP8KV_FAIL("attention: block_table[%d][%d] = %d is outside the cache", i, j,
                                  b);
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
                               FP8KV_ATTENTION_AUTO, d_out.as<float>(), scratch)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return d_out.download(out, qn * sizeof(float));
}

extern "C" int fp8kv_gpu_attention_plan(int cache_fp8, struct fp8kv_codec_cfg cfg,
                                        const struct fp8kv_cache_shape *shape, int num_q_heads,
                                        int num_seqs, int max_seq_len, int partition, char *name,
                                        size_t size)
{
    int rc = require_open("fp8kv_gpu_attention_plan");
    if (rc != 0 || (rc = check_shape(shape, "attention plan")) != 0)
        return rc;
    if (num_seqs < 0 || num_q_heads < 1 || max_seq_len < 0 || !name || size == 0)
        return FP8KV_FAIL("attention plan: %d sequences, %d q heads, longest %d tokens, a "
                          "name buffer of %zu bytes",
                          num_seqs, num_q_heads, max_seq_len, name ? size : 0);
    attention_plan pl;
    if ((rc = plan_attention(cfg, *shape, !cache_fp8, num_q_heads, num_seqs, max_seq_len, partition,
                             FP8KV_ATTENTION_AUTO, &pl)) != 0)
        return rc;
    snprintf(name, size, "%s", pl.name);
    return FP8KV_OK;
}
