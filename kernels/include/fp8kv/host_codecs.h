/* fp8kv/host_codecs.h — the built-in codecs of codec.h as array functions on the host.
 *
 * What the sweeps and vector checks run: each encoder maps n inputs at one per-tensor scale to
 * codes (the store of a KV cache, with the scale model of cfg); each decoder maps codes to
 * f32 values times a scale (the read). The same array signature serves plugins (issue 5). */
#ifndef FP8KV_HOST_CODECS_H
#define FP8KV_HOST_CODECS_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/codec.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fp8kv_host_encoder {
    const char *name;
    const char *description;
    /* q[i] = code of x[i] stored at scale s under cfg (scale model cfg.model) */
    void (*encode)(struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s, uint8_t *q);
};

struct fp8kv_host_decoder {
    const char *name;
    const char *description;
    /* y[i] = RN32(decode(q[i]) * s) */
    void (*decode)(struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s, float *y);
};

extern const struct fp8kv_host_encoder fp8kv_host_encoders[];
extern const int fp8kv_host_encoder_count;
extern const struct fp8kv_host_decoder fp8kv_host_decoders[];
extern const int fp8kv_host_decoder_count;

/* fp8kv_host_encoder_by_name / fp8kv_host_decoder_by_name: the codec so named, or NULL. */
const struct fp8kv_host_encoder *fp8kv_host_encoder_by_name(const char *name);
const struct fp8kv_host_decoder *fp8kv_host_decoder_by_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
