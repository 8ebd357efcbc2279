/* subjects.c — the CPU target's subjects (fp8kv/subject.h): the codecs of codec.h as array
 * functions, and the CPU reference KV-cache paths of kv_cache.c.
 *
 * The codec loops are kept free of calls and cross-iteration state so the compiler vectorizes
 * them; target_clones builds an AVX2 version next to the baseline one where the compiler
 * can, chosen at load time. Scale 1 skips the division: x / 1 is x exactly under every
 * model, so the result is the same. */
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/subject.h"

FP8KV_HOST_ARRAY_LOOP
static int encode_bits_array(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                             float s, uint8_t *q)
{
    (void)ctx;
    if (s == 1.0f && cfg.model != FP8KV_CODEC_F16_DIV) {
        for (size_t i = 0; i < n; i++)
            q[i] = fp8kv_encode_bits(cfg, fp8kv_f32_bits(x[i]));
        return FP8KV_OK;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_store_f32(cfg, x[i], s);
    return FP8KV_OK;
}

FP8KV_HOST_ARRAY_LOOP
static int encode_frexp_array(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                              float s, uint8_t *q)
{
    (void)ctx;
    if (s == 1.0f && cfg.model != FP8KV_CODEC_F16_DIV) {
        for (size_t i = 0; i < n; i++)
            q[i] = fp8kv_encode_frexp(cfg, x[i]);
        return FP8KV_OK;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_encode_frexp(cfg, fp8kv_scale_quotient(cfg, x[i], s));
    return FP8KV_OK;
}

static int decode_bits_array(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                             float s, float *y)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        y[i] = fp8kv_decode_bits(cfg, q[i]) * s;
    return FP8KV_OK;
}

static int decode_table_array(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                              float s, float *y)
{
    (void)ctx;
    float table[256];
    fp8kv_decode_table_fill(cfg, table);
    for (size_t i = 0; i < n; i++)
        y[i] = fp8kv_decode_table(table, q[i]) * s;
    return FP8KV_OK;
}

/* ---- the KV-cache paths as subject entry points ---------------------------------------------- */

static int store_cpu(void *ctx, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                     enum fp8kv_kv_dtype in, const void *key, const void *value, int num_tokens,
                     const int64_t *slot_mapping, float k_scale, float v_scale, uint8_t *key_cache,
                     uint8_t *value_cache)
{
    (void)ctx;
    return fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, num_tokens, slot_mapping,
                                       k_scale, v_scale, key_cache, value_cache);
}

static int gather_cpu(void *ctx, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                      int is_key, const uint8_t *cache, const int32_t *block_table,
                      int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs, float scale,
                      enum fp8kv_kv_dtype out, void *dst)
{
    (void)ctx;
    return fp8kv_cpu_gather_dequant(cfg, shape, is_key, cache, block_table, max_blocks_per_seq,
                                    seq_lens, num_seqs, scale, out, dst);
}

static int attention_cpu(void *ctx, struct fp8kv_codec_cfg cfg,
                         const struct fp8kv_cache_shape *shape, const float *query, int num_q_heads,
                         const uint8_t *key_cache, const uint8_t *value_cache,
                         const int32_t *block_table, int max_blocks_per_seq,
                         const int32_t *seq_lens, int num_seqs, float k_scale, float v_scale,
                         float softmax_scale, float *out)
{
    (void)ctx;
    return fp8kv_cpu_paged_attention(cfg, shape, query, num_q_heads, key_cache, value_cache,
                                     block_table, max_blocks_per_seq, seq_lens, num_seqs, k_scale,
                                     v_scale, softmax_scale, out);
}

/* ---- the table ------------------------------------------------------------------------------- */

const struct fp8kv_subject fp8kv_cpu_subjects[] = {
    {.name = "bits",
     .description = "integer bit manipulation on the f32 pattern (fp8kv_encode_bits)",
     .caps = FP8KV_CAP_ENCODE,
     .claim = FP8KV_CLAIM_ALL,
     .encode = encode_bits_array},
    {.name = "frexp",
     .description = "frexpf/ldexpf/nearbyintf, engine style (fp8kv_encode_frexp)",
     .caps = FP8KV_CAP_ENCODE,
     .claim = FP8KV_CLAIM_ALL,
     .encode = encode_frexp_array},
    {.name = "decode-bits",
     .description = "fields placed into an f32 (fp8kv_decode_bits)",
     .caps = FP8KV_CAP_DECODE,
     .claim = FP8KV_CLAIM_ALL,
     .decode = decode_bits_array},
    {.name = "decode-table",
     .description = "256-entry table lookup (fp8kv_decode_table)",
     .caps = FP8KV_CAP_DECODE,
     .claim = FP8KV_CLAIM_ALL,
     .decode = decode_table_array},
    {.name = "cpu-reference",
     .description = "the CPU reference store, gather + dequant and paged attention (kv_cache.c)",
     .caps = FP8KV_CAP_STORE | FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION,
     .claim = FP8KV_CLAIM_ALL,
     .store = store_cpu,
     .gather = gather_cpu,
     .attention = attention_cpu},
};
const int fp8kv_cpu_subject_count = (int)(sizeof fp8kv_cpu_subjects / sizeof fp8kv_cpu_subjects[0]);

const struct fp8kv_subject *fp8kv_subject_find(const struct fp8kv_subject *table, int count,
                                               const char *name, unsigned caps)
{
    for (int i = 0; i < count; i++)
        if (name && strcmp(table[i].name, name) == 0 && fp8kv_subject_can(&table[i], caps))
            return &table[i];
    return NULL;
}
