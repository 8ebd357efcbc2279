/* fp8kv/plugin.h — the codec plugin ABI, version 1.
 *
 * An engine builds its fp8 codec as a shared library that exports one function,
 * fp8kv_codec_v1, returning a descriptor of static storage duration. fp8kv loads the library
 * in a child process (a crash or a hang never takes the harness down), sweeps it exhaustively
 * and audits it against the exact oracle: see `fp8kv sweep --plugin` and `fp8kv audit`.
 *
 * Contract for the plugin:
 *   - abi_version is FP8KV_CODEC_ABI_VERSION; format is a name of fp8kv_formats[] ("e4m3fn",
 *     ...; `fp8kv encode --help` lists them) or its ml_dtypes name ("float8_e4m3fn", ...);
 *     overflow is "satfinite" (finite values past the top clamp to +-max), "nan" (they give NaN)
 *     or "inf" (+-Inf, in a format with Inf), as a profile has it (vectors/README.md);
 *   - encode_f32 is required; decode_f32 may be NULL (no read path to check);
 *   - the functions may be called many times, with n up to a few hundred thousand, always
 *     from one thread of the loading process; they must not keep the pointers they are given.
 * This header needs nothing but the C standard library; a plugin links against nothing of
 * fp8kv's. In C++ the function fp8kv_codec_v1 hides the struct of the same name: write the
 * type as fp8kv_codec_v1_t (C and C++ alike), e.g.
 *   extern "C" const fp8kv_codec_v1_t *fp8kv_codec_v1(void) { return &my_codec; }
 */
#ifndef FP8KV_PLUGIN_H
#define FP8KV_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_CODEC_ABI_VERSION 1
struct fp8kv_codec_v1 {
    uint32_t abi_version; /* FP8KV_CODEC_ABI_VERSION */
    const char *name;
    const char *format;   /* a name of fp8kv_formats[]: "e4m3fn", ... */
    const char *overflow; /* "satfinite" | "nan" | "inf" */
    /* store: q[i] = the plugin's encoding of x[i] / scale */
    void (*encode_f32)(const float *x, size_t n, float scale, uint8_t *q);
    /* read: y[i] = the plugin's decoding of q[i] times scale; may be NULL */
    void (*decode_f32)(const uint8_t *q, size_t n, float scale, float *y);
};
/* the descriptor's type under a name no function hides (C++ plugins need it) */
typedef struct fp8kv_codec_v1 fp8kv_codec_v1_t;

/* the one symbol a plugin exports */
const fp8kv_codec_v1_t *fp8kv_codec_v1(void);

#ifdef __cplusplus
}
#endif
#endif
