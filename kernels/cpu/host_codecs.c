/* host_codecs.c — array forms of the codecs of codec.h, and their registry.
 *
 * The loops are kept free of calls and cross-iteration state so the compiler vectorizes
 * them; target_clones builds an AVX2 version next to the baseline one where the compiler
 * can, chosen at load time. Scale 1 skips the division: x / 1 is x exactly under every
 * model, so the result is the same. */
#include <string.h>

#include "fp8kv/host_codecs.h"

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__)) && !defined(__SANITIZE_ADDRESS__)
#define HOT_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define HOT_LOOP
#endif

HOT_LOOP
static void encode_bits_array(struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                              uint8_t *q)
{
    if (s == 1.0f && cfg.model != FP8KV_CODEC_F16_DIV) {
        for (size_t i = 0; i < n; i++)
            q[i] = fp8kv_encode_bits(cfg, fp8kv_f32_bits(x[i]));
        return;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_store_f32(cfg, x[i], s);
}

HOT_LOOP
static void encode_frexp_array(struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                               uint8_t *q)
{
    if (s == 1.0f && cfg.model != FP8KV_CODEC_F16_DIV) {
        for (size_t i = 0; i < n; i++)
            q[i] = fp8kv_encode_frexp(cfg, x[i]);
        return;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_encode_frexp(cfg, fp8kv_scale_quotient(cfg, x[i], s));
}

static void decode_bits_array(struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                              float *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = fp8kv_decode_bits(cfg, q[i]) * s;
}

static void decode_table_array(struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                               float *y)
{
    float table[256];
    fp8kv_decode_table_fill(cfg, table);
    for (size_t i = 0; i < n; i++)
        y[i] = fp8kv_decode_table(table, q[i]) * s;
}

const struct fp8kv_host_encoder fp8kv_host_encoders[] = {
    {"bits", "integer bit manipulation on the f32 pattern (fp8kv_encode_bits)", encode_bits_array},
    {"frexp", "frexpf/ldexpf/nearbyintf, engine style (fp8kv_encode_frexp)", encode_frexp_array},
};
const int fp8kv_host_encoder_count =
    (int)(sizeof fp8kv_host_encoders / sizeof fp8kv_host_encoders[0]);

const struct fp8kv_host_decoder fp8kv_host_decoders[] = {
    {"decode-bits", "fields placed into an f32 (fp8kv_decode_bits)", decode_bits_array},
    {"decode-table", "256-entry table lookup (fp8kv_decode_table)", decode_table_array},
};
const int fp8kv_host_decoder_count =
    (int)(sizeof fp8kv_host_decoders / sizeof fp8kv_host_decoders[0]);

const struct fp8kv_host_encoder *fp8kv_host_encoder_by_name(const char *name)
{
    for (int i = 0; i < fp8kv_host_encoder_count; i++)
        if (name && strcmp(fp8kv_host_encoders[i].name, name) == 0)
            return &fp8kv_host_encoders[i];
    return NULL;
}

const struct fp8kv_host_decoder *fp8kv_host_decoder_by_name(const char *name)
{
    for (int i = 0; i < fp8kv_host_decoder_count; i++)
        if (name && strcmp(fp8kv_host_decoders[i].name, name) == 0)
            return &fp8kv_host_decoders[i];
    return NULL;
}
