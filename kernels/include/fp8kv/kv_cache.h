/* fp8kv/kv_cache.h — the paged fp8 KV cache: shapes, layouts, and the CPU reference paths.
 *
 * Subjects under test (docs/DESIGN.md §4): the store (reshape_and_cache_fp8), the read (gather +
 * dequant by block table), and a paged-attention decode whose K/V loads dequantize inline.
 * The HIP kernels of kernels/hip/ implement the same contracts on the device.
 *
 * Layouts (enum fp8kv_kv_layout, fp8kv/spec.h, with their names; x = 16 fp8 elements, 16 bytes):
 *   FP8KV_LAYOUT_NHD      key and value: [num_blocks, block_size, num_heads, head_size]
 *   FP8KV_LAYOUT_SPLIT_X  key:   [num_blocks, num_heads, head_size / 16, block_size, 16]
 *                         value: [num_blocks, num_heads, head_size, block_size]
 *   FP8KV_LAYOUT_HND      key and value: [num_blocks, num_heads, block_size, head_size]
 *                         (FlashInfer's other layout)
 * A slot s is token position s % block_size of block s / block_size.
 */
#ifndef FP8KV_KV_CACHE_H
#define FP8KV_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/codec.h"
#include "fp8kv/kv_plugin.h"
#include "fp8kv/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of KV inputs and read outputs: raw f32, f16 or bf16 bit patterns (the dtypes of
 * fp8kv/spec.h, whose names they take). */
enum fp8kv_kv_dtype {
    FP8KV_KV_F32 = FP8KV_DTYPE_F32,
    FP8KV_KV_F16 = FP8KV_DTYPE_F16,
    FP8KV_KV_BF16 = FP8KV_DTYPE_BF16
};

#define FP8KV_SPLIT_X 16

struct fp8kv_cache_shape {
    int num_blocks, block_size, num_heads, head_size; /* head_size % 16 == 0 for SPLIT_X */
    enum fp8kv_kv_layout layout;
    enum fp8kv_kv_packing packing; /* where the value cache is, relative to the key cache */
};

/* fp8kv_kv_dtype_size: bytes of one element of dtype: 4 for f32, 2 for f16 and bf16. */
static inline size_t fp8kv_kv_dtype_size(enum fp8kv_kv_dtype dtype)
{
    return dtype == FP8KV_KV_F32 ? 4 : 2;
}

/* fp8kv_cache_bytes: bytes of one cache (key or value): blocks * block_size * heads * head. */
size_t fp8kv_cache_bytes(const struct fp8kv_cache_shape *shape);

/* ---- scales -----------------------------------------------------------------------------------
 * A cache's scales come at one of three granularities (enum fp8kv_kv_scale_granularity,
 * fp8kv/spec.h; fp8kv/kv_plugin.h says the contract): one per tensor; one per KV head; one per
 * token and head, computed by the store from the row it writes (fp8kv_kv_row_scale) and kept in
 * a scale cache [num_blocks, block_size, num_heads] of f32 beside the fp8 cache, which the reads
 * take the scale from. */

/* The scales of one cache (key or value). */
struct fp8kv_kv_scales {
    enum fp8kv_kv_scale_granularity granularity;
    float tensor;       /* per tensor */
    const float *heads; /* per head: [num_heads] */
    const float *cache; /* per token and head, for the reads: the scale cache */
    float *cache_out;   /* per token and head, for the store: the scale cache it writes */
};

/* fp8kv_kv_scale_granularity_name: its name in fp8kv_scale_granularity_names ("tensor", "head",
 * "token_head"; "?" for another value). */
const char *fp8kv_kv_scale_granularity_name(int granularity);

/* fp8kv_scale_cache_entries: entries of one scale cache: blocks * block_size * heads. */
size_t fp8kv_scale_cache_entries(const struct fp8kv_cache_shape *shape);

/* fp8kv_kv_scale_at: the scale a read applies to element (slot, head) of a cache. */
float fp8kv_kv_scale_at(const struct fp8kv_kv_scales *scales, const struct fp8kv_cache_shape *shape,
                        int64_t slot, int head);

/* fp8kv_kv_row_scale: the per-token-and-head rule: the scale of a row of n elements of dtype
 * in starting at element first of src: RN32(amax / max_finite) with amax the largest magnitude
 * of the row's finite elements (one f32 division, which IEEE rounds correctly), or 1 when that
 * is 0 (a zero row, or a quotient below the f32 range). */
float fp8kv_kv_row_scale(struct fp8kv_codec_cfg cfg, enum fp8kv_kv_dtype in, const void *src,
                         size_t first, int n);

/* fp8kv_cache_block_bytes: bytes of one block of one cache: block_size * heads * head. */
size_t fp8kv_cache_block_bytes(const struct fp8kv_cache_shape *shape);

/* fp8kv_kv_packed_value_start: where the value cache starts in a packed tensor, from the key
 * cache's start: one cache's bytes (kv_first), one block's (block_first); 0 when separate. */
size_t fp8kv_kv_packed_value_start(const struct fp8kv_cache_shape *shape);

/* fp8kv_kv_pack: the key and value caches (separate, of shape's layout) as one tensor of
 * shape's packing, 2 * fp8kv_cache_bytes bytes at packed; fp8kv_kv_unpack the other way. */
void fp8kv_kv_pack(const struct fp8kv_cache_shape *shape, const uint8_t *key_cache,
                   const uint8_t *value_cache, uint8_t *packed);
void fp8kv_kv_unpack(const struct fp8kv_cache_shape *shape, const uint8_t *packed,
                     uint8_t *key_cache, uint8_t *value_cache);

/* fp8kv_key_offset / fp8kv_value_offset: the byte offset of element (slot, head, dim) from
 * the start of its cache (under block_first, blocks are two blocks' bytes apart). */
size_t fp8kv_key_offset(const struct fp8kv_cache_shape *shape, int64_t slot, int head, int dim);
size_t fp8kv_value_offset(const struct fp8kv_cache_shape *shape, int64_t slot, int head, int dim);

/* fp8kv_cache_shape_check: 0 when shape is usable (sizes >= 1, a known layout, head_size a
 * multiple of 16 for split-x), else FP8KV_ERR with a message starting with what. */
int fp8kv_cache_shape_check(const struct fp8kv_cache_shape *shape, const char *what);

/* The CPU reference paths below return 0, or FP8KV_ERR with a message (an unusable shape, a
 * slot outside the cache, out of memory): nothing is judged on outputs they did not write. */

/* fp8kv_cpu_reshape_and_cache: stores key and value [num_tokens, num_heads, head_size] (of
 * dtype in) into the caches: token t goes to slot slot_mapping[t]; a slot of -1 is padding
 * and is skipped (its cache bytes are left untouched). Each element is encoded with
 * fp8kv_store_f32(cfg, x, s) after exact widening to f32, s its scale in k_scale or v_scale
 * (per token and head: fp8kv_kv_row_scale of its row, also written to the scale cache). */
int fp8kv_cpu_reshape_and_cache(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                enum fp8kv_kv_dtype in, const void *key, const void *value,
                                int num_tokens, const int64_t *slot_mapping,
                                const struct fp8kv_kv_scales *k_scale,
                                const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                                uint8_t *value_cache);

/* fp8kv_cpu_gather_dequant: for each sequence i (num_seqs), its seq_lens[i] tokens, found
 * through block_table[i * max_blocks_per_seq + position / block_size], are read from cache
 * (key or value, is_key chooses the layout rule), decoded, multiplied by the element's scale
 * (fp8kv_kv_scale_at) in f32 and rounded to dtype out, into out [sum seq_lens, num_heads,
 * head_size], sequences one after the other. */
int fp8kv_cpu_gather_dequant(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                             int is_key, const uint8_t *cache, const int32_t *block_table,
                             int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                             const struct fp8kv_kv_scales *scale, enum fp8kv_kv_dtype out,
                             void *dst);

/* fp8kv_cpu_paged_attention: one decode step. query [num_seqs, num_q_heads, head_size] (f32);
 * num_q_heads is a multiple of the cache's num_heads (grouped-query: q head h reads kv head
 * h / (num_q_heads / num_heads)). For each sequence and q head: scores over its seq_lens[i]
 * tokens s_t = softmax_scale * sum_d q_d * k_td, with k and v dequantized inline as
 * decode(code) * scale in f32 (the element's scale, fp8kv_kv_scale_at); out = sum_t
 * softmax(s)_t * v_t. f32 accumulation, max-subtracted softmax. out [num_seqs, num_q_heads,
 * head_size] (f32). */
int fp8kv_cpu_paged_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                              const float *query, int num_q_heads, const uint8_t *key_cache,
                              const uint8_t *value_cache, const int32_t *block_table,
                              int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                              const struct fp8kv_kv_scales *k_scale,
                              const struct fp8kv_kv_scales *v_scale, float softmax_scale,
                              float *out);

/* The queries of an attention call beyond one a sequence (fp8kv/kv_plugin.h says the rule,
 * fp8kv_kv_query_span computes it): each sequence's last lens[i] tokens (lens NULL: one each),
 * causal, over the last `window` tokens when window > 0. */
struct fp8kv_kv_queries {
    const int32_t *lens;
    int window;
};

/* fp8kv_kv_query_rows: the query rows of num_seqs sequences under queries (NULL: one each). */
int fp8kv_kv_query_rows(const struct fp8kv_kv_queries *queries, int num_seqs);

/* fp8kv_cpu_paged_attention_queries: fp8kv_cpu_paged_attention with several queries a
 * sequence: query and out [rows, num_q_heads, head_size], rows numbered across sequences;
 * each row over the tokens of its span. queries NULL is a decode step. A query count outside
 * 1..max(seq_len, 1) is FP8KV_ERR. */
int fp8kv_cpu_paged_attention_queries(
    struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape, const float *query,
    int num_q_heads, const uint8_t *key_cache, const uint8_t *value_cache,
    const int32_t *block_table, int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
    const struct fp8kv_kv_queries *queries, const struct fp8kv_kv_scales *k_scale,
    const struct fp8kv_kv_scales *v_scale, float softmax_scale, float *out);

/* ---- the KV-kernel ABI (fp8kv/kv_plugin.h) and these types ------------------------------------
 */

/* fp8kv_kv_abi_layout: the ABI's description of a cache of this shape under cfg, its scales at
 * granularity. */
struct fp8kv_kv_layout_v1 fp8kv_kv_abi_layout(const struct fp8kv_cache_shape *shape,
                                              struct fp8kv_codec_cfg cfg,
                                              enum fp8kv_kv_scale_granularity granularity);

/* fp8kv_kv_abi_shape: the shape an ABI layout describes. */
struct fp8kv_cache_shape fp8kv_kv_abi_shape(const struct fp8kv_kv_layout_v1 *layout);

/* fp8kv_kv_abi_cfg: the codec configuration an ABI layout asks for, with store scale model
 * model (enum fp8kv_codec_model). */
struct fp8kv_codec_cfg fp8kv_kv_abi_cfg(const struct fp8kv_kv_layout_v1 *layout, int model);

/* fp8kv_kv_abi_scales: the scales of an ABI call's cache at the layout's granularity, from
 * its per-tensor scale, per-head scales and scale caches (read, cache; store, cache_out). */
struct fp8kv_kv_scales fp8kv_kv_abi_scales(const struct fp8kv_kv_layout_v1 *layout, float tensor,
                                           const float *heads, const float *cache,
                                           float *cache_out);

/* fp8kv_kv_kernels_scale: whether kernels k implement scales at granularity (a descriptor with
 * no granularity bits implements per tensor only). */
static inline int fp8kv_kv_kernels_scale(const struct fp8kv_kv_kernels_v1 *k,
                                         enum fp8kv_kv_scale_granularity granularity)
{
    const uint32_t bits =
        k->scale_granularities ? k->scale_granularities : FP8KV_KV_SCALES(FP8KV_KV_SCALE_TENSOR);
    return (bits & FP8KV_KV_SCALES(granularity)) != 0;
}

/* fp8kv_kv_kernels_layout: whether kernels k take caches of layout (0 bits: every layout). */
static inline int fp8kv_kv_kernels_layout(const struct fp8kv_kv_kernels_v1 *k,
                                          enum fp8kv_kv_layout layout)
{
    return !k->layouts || (k->layouts & FP8KV_KV_LAYOUTS(layout)) != 0;
}

/* fp8kv_cpu_kv_kernels: the CPU reference paths above as KV-ABI kernels (host memory, every
 * profile), storing with scale model model (enum fp8kv_codec_model; the golden cases' is
 * FP8KV_CODEC_F32_DIV). NULL for an unknown model. */
const struct fp8kv_kv_kernels_v1 *fp8kv_cpu_kv_kernels(int model);

#ifdef __cplusplus
}
#endif
#endif
