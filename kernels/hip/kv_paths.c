/* kv_paths.c — the device KV paths as a struct fp8kv_kv_paths, the table the checks run any
 * target through (same contract and signatures as fp8kv_cpu_kv_paths). The table's functions
 * return nothing: a failure leaves the outputs as they were (the checks see their sentinel
 * bytes) and is counted in fp8kv_gpu_error_count(), with its message in fp8kv_gpu_last_error().
 * Plain C, so that the table is a host object only (clang's HIP mode would also try to emit a
 * namespace-scope const table for the device). */
#include "fp8kv/gpu.h"

static void gpu_reshape_and_cache(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                  enum fp8kv_kv_dtype in, const void *key, const void *value,
                                  int num_tokens, const int64_t *slot_mapping, float k_scale,
                                  float v_scale, uint8_t *key_cache, uint8_t *value_cache)
{
    (void)fp8kv_gpu_reshape_and_cache(FP8KV_GPU_CODEC_BITS, cfg, shape, in, key, value, num_tokens,
                                      slot_mapping, k_scale, v_scale, key_cache, value_cache);
}

static void gpu_gather_dequant(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                               int is_key, const uint8_t *cache, const int32_t *block_table,
                               int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                               float scale, enum fp8kv_kv_dtype out, void *dst)
{
    (void)fp8kv_gpu_gather_dequant(cfg, shape, is_key, cache, block_table, max_blocks_per_seq,
                                   seq_lens, num_seqs, scale, out, dst);
}

static void gpu_paged_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                const float *query, int num_q_heads, const uint8_t *key_cache,
                                const uint8_t *value_cache, const int32_t *block_table,
                                int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                                float k_scale, float v_scale, float softmax_scale, float *out)
{
    (void)fp8kv_gpu_paged_attention(cfg, shape, query, num_q_heads, key_cache, value_cache,
                                    block_table, max_blocks_per_seq, seq_lens, num_seqs, k_scale,
                                    v_scale, softmax_scale, 0, out);
}

const struct fp8kv_kv_paths fp8kv_gpu_kv_paths = {
    "gpu-kernels",
    gpu_reshape_and_cache,
    gpu_gather_dequant,
    gpu_paged_attention,
};
