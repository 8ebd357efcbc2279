/* fp8kv/kv_cache.h — the paged fp8 KV cache: shapes, layouts, and the CPU reference paths.
 *
 * Subjects under test (docs/DESIGN.md §4): the store (reshape_and_cache_fp8), the read (gather +
 * dequant by block table), and a paged-attention decode whose K/V loads dequantize inline.
 * The HIP kernels of kernels/hip/ implement the same contracts on the device.
 *
 * Layouts (x = 16 fp8 elements, 16 bytes):
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

#ifdef __cplusplus
extern "C" {
#endif

enum fp8kv_kv_layout { FP8KV_LAYOUT_NHD = 0, FP8KV_LAYOUT_SPLIT_X = 1, FP8KV_LAYOUT_HND = 2 };

/* Element types of KV inputs and read outputs: raw f32, f16 or bf16 bit patterns. */
enum fp8kv_kv_dtype { FP8KV_KV_F32 = 0, FP8KV_KV_F16 = 1, FP8KV_KV_BF16 = 2 };

#define FP8KV_SPLIT_X 16

struct fp8kv_cache_shape {
    int num_blocks, block_size, num_heads, head_size; /* head_size % 16 == 0 for SPLIT_X */
    enum fp8kv_kv_layout layout;
};

/* fp8kv_kv_dtype_size: bytes of one element of dtype: 4 for f32, 2 for f16 and bf16. */
static inline size_t fp8kv_kv_dtype_size(enum fp8kv_kv_dtype dtype)
{
    return dtype == FP8KV_KV_F32 ? 4 : 2;
}

/* fp8kv_cache_bytes: bytes of one cache (key or value): blocks * block_size * heads * head. */
size_t fp8kv_cache_bytes(const struct fp8kv_cache_shape *shape);

/* fp8kv_key_offset / fp8kv_value_offset: the byte offset of element (slot, head, dim). */
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
 * fp8kv_store_f32(cfg, x, k_scale or v_scale) after exact widening to f32. */
int fp8kv_cpu_reshape_and_cache(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                enum fp8kv_kv_dtype in, const void *key, const void *value,
                                int num_tokens, const int64_t *slot_mapping, float k_scale,
                                float v_scale, uint8_t *key_cache, uint8_t *value_cache);

/* fp8kv_cpu_gather_dequant: for each sequence i (num_seqs), its seq_lens[i] tokens, found
 * through block_table[i * max_blocks_per_seq + position / block_size], are read from cache
 * (key or value, is_key chooses the layout rule), decoded, multiplied by scale in f32 and
 * rounded to dtype out, into out [sum seq_lens, num_heads, head_size], sequences one after
 * the other. */
int fp8kv_cpu_gather_dequant(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                             int is_key, const uint8_t *cache, const int32_t *block_table,
                             int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                             float scale, enum fp8kv_kv_dtype out, void *dst);

/* fp8kv_cpu_paged_attention: one decode step. query [num_seqs, num_q_heads, head_size] (f32);
 * num_q_heads is a multiple of the cache's num_heads (grouped-query: q head h reads kv head
 * h / (num_q_heads / num_heads)). For each sequence and q head: scores over its seq_lens[i]
 * tokens s_t = softmax_scale * sum_d q_d * k_td, with k and v dequantized inline as
 * decode(code) * scale in f32; out = sum_t softmax(s)_t * v_t. f32 accumulation, max-
 * subtracted softmax. out [num_seqs, num_q_heads, head_size] (f32). */
int fp8kv_cpu_paged_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                              const float *query, int num_q_heads, const uint8_t *key_cache,
                              const uint8_t *value_cache, const int32_t *block_table,
                              int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                              float k_scale, float v_scale, float softmax_scale, float *out);

/* ---- the KV-kernel ABI (fp8kv/kv_plugin.h) and these types ------------------------------------
 */

/* fp8kv_kv_abi_layout: the ABI's description of a cache of this shape under cfg. */
struct fp8kv_kv_layout_v1 fp8kv_kv_abi_layout(const struct fp8kv_cache_shape *shape,
                                              struct fp8kv_codec_cfg cfg);

/* fp8kv_kv_abi_shape: the shape an ABI layout describes. */
struct fp8kv_cache_shape fp8kv_kv_abi_shape(const struct fp8kv_kv_layout_v1 *layout);

/* fp8kv_kv_abi_cfg: the codec configuration an ABI layout asks for, with store scale model
 * model (enum fp8kv_codec_model). */
struct fp8kv_codec_cfg fp8kv_kv_abi_cfg(const struct fp8kv_kv_layout_v1 *layout, int model);

/* fp8kv_cpu_kv_kernels: the CPU reference paths above as KV-ABI kernels (host memory, every
 * profile), storing with scale model model (enum fp8kv_codec_model; the golden cases' is
 * FP8KV_CODEC_F32_DIV). NULL for an unknown model. */
const struct fp8kv_kv_kernels_v1 *fp8kv_cpu_kv_kernels(int model);

#ifdef __cplusplus
}
#endif
#endif
