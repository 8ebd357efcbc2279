/* fp8kv/intq.h — integer block formats of KV caches: llama.cpp's q8_0 and q4_0 (its
 * `-ctk/-ctv q8_0 | q4_0`), each choice of their arithmetic a named field, in one place. No MPFR
 * here: the exact arithmetic is fp8kv/intq_oracle.h, the semantics docs/DESIGN.md §11.
 *
 * A block is block_size consecutive f32 values stored as one f16 scale (its 16 bits) and
 * block_size integer element codes, one a byte here (q8_0: the int8 two's complement byte;
 * q4_0: the nibble 0..15; how a cache packs nibbles is the cache's layout, not the format's).
 *
 * Encoding, each step one f32 rounding (RN32) as the engine's CUDA store (`set_rows`,
 * ggml-cuda/cpy-utils.cuh) computes it:
 *   m  = the block's scale source: amax (largest magnitude) or vmax (the signed element of
 *        largest magnitude, the first on ties)
 *   d  = RN32(m / divisor)                           q8_0: amax / 127;  q4_0: vmax / -8
 *   id = d != 0 ? RN32(1 / d) : 0                    (a reciprocal, then products)
 *   v  = RN32(x * id);  w = RN32(v + offset)         q8_0: offset 0;    q4_0: offset 8.5
 *   q  = clamp(round(w), code_min, code_max)         q8_0: roundf (half away from zero);
 *                                                    q4_0: trunc, clamped to [0, 15]
 *   the stored scale is the f16 (RNE) of d: quantized with the f32 d, read with its f16.
 * q4_0_fma is q4_0 with w = RN32(x * id + 8.5) in one rounding: the product and the sum fused
 * (an FMA), as a compiler that contracts them writes it (nvcc does by default; so does gcc for
 * a CPU with FMA outside ISO C mode), where the source says two roundings.
 * A NaN or an Inf in a block has no code (the engines' results there are undefined).
 * Decoding: y = RN32((q - zero) * f32(scale)), zero 0 (q8_0) or 8 (q4_0): exact for a finite
 * scale; an Inf scale gives +-Inf (NaN for q - zero = 0), a NaN scale NaN. */
#ifndef FP8KV_INTQ_H
#define FP8KV_INTQ_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fp8kv_intq_format_id { FP8KV_Q8_0, FP8KV_Q4_0, FP8KV_Q4_0_FMA, FP8KV_INTQ_FORMAT_COUNT };

/* How w becomes an integer. */
enum fp8kv_intq_rounding {
    FP8KV_INTQ_RNE,        /* to nearest, ties to even (rint under the default mode) */
    FP8KV_INTQ_HALF_AWAY,  /* to nearest, ties away from zero (C's roundf) */
    FP8KV_INTQ_TRUNC_HALF, /* trunc(w + 0.5): ties up for w >= 0, toward zero below -0.5 */
    FP8KV_INTQ_TRUNC,      /* toward zero (a C cast) */
    FP8KV_INTQ_ROUNDING_COUNT
};

/* What the scale is computed from. */
enum fp8kv_intq_source {
    FP8KV_INTQ_AMAX, /* the largest magnitude */
    FP8KV_INTQ_VMAX, /* the signed element of largest magnitude, the first on ties */
};

struct fp8kv_intq_format {
    enum fp8kv_intq_format_id id;
    const char *name;   /* "q8_0", "q4_0", "q4_0_fma" */
    const char *preset; /* the engine preset it is: "llamacpp_q8_0", "llamacpp_q4_0", ... */
    int block_size;     /* 32 */
    int bits;           /* 8, 4 */
    enum fp8kv_intq_source source;
    float divisor; /* d = m / divisor: 127, -8 */
    float offset;  /* w = v + offset before the rounding: 0, 8.5 */
    int fused;     /* 1: w = RN32(x * id + offset), one rounding (an FMA); 0: two */
    enum fp8kv_intq_rounding rounding;
    int code_min, code_max; /* the clamp of q: [-128, 127] (never reached by q8_0), [0, 15] */
    int zero;               /* decoding subtracts it: 0, 8 */
};

extern const struct fp8kv_intq_format fp8kv_intq_formats[FP8KV_INTQ_FORMAT_COUNT];
extern const char *const fp8kv_intq_rounding_names[FP8KV_INTQ_ROUNDING_COUNT];

/* fp8kv_intq_format_by_name: the format called name, or by its preset's name; NULL if none. */
const struct fp8kv_intq_format *fp8kv_intq_format_by_name(const char *name);

/* fp8kv_intq_code_byte: element q of f as its stored byte (q8_0: two's complement; q4_0: the
 * nibble). */
uint8_t fp8kv_intq_code_byte(const struct fp8kv_intq_format *f, int q);

/* fp8kv_intq_code_count: how many stored bytes f has codes for, 0 .. count - 1 (q8_0: 256,
 * q4_0: 16). */
int fp8kv_intq_code_count(const struct fp8kv_intq_format *f);

/* fp8kv_intq_code_value: the integer a stored byte of f holds (its inverse; a q4_0 byte
 * above 15 has none: -1000). */
int fp8kv_intq_code_value(const struct fp8kv_intq_format *f, uint8_t byte);

#ifdef __cplusplus
}
#endif

#endif
