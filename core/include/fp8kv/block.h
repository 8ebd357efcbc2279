/* fp8kv/block.h — the block-scaled formats (MX and NVFP4): their element formats, scale
 * encodings, scale rules and arithmetic models, in one place. No MPFR here; the exact
 * arithmetic is in fp8kv/block_oracle.h, the semantics in docs/DESIGN.md §10.
 *
 * A block is block_size consecutive f32 values stored as one scale code and block_size
 * element codes (one code per byte, fp4/fp6 codes in the low bits, sign bit included).
 *
 * Encoding (every rule, both models):
 *   - amax is the largest magnitude of the block. A block holding a NaN or an Inf encodes to
 *     the scale's NaN code (E8M0 0xFF, UE4M3 0x7F) and element codes 0x00.
 *   - MX: the scale is 2^X, X an integer clamped to [-127, 127], stored as E8M0 code X + 127.
 *     floor  X = floor(log2 amax) - emax                         (OCP MX v1.0)
 *     rceil  X = the smallest integer with amax <= max_elem * 2^X: ceil(log2(amax / max_elem))
 *            (model f32: ceil(log2(RN32(amax / max_elem))), as a float division computes it)
 *     even   X = floor(log2 R(amax)) - emax, R rounding amax to 1 + man_bits significant bits,
 *            ties away from zero (the mantissa carry of torchao's EVEN)
 *     amax = 0 (and any amax whose X falls below -127) gives X = -127, E8M0 code 0x00.
 *     floor and even are exact in both models (an exponent and a rounding of amax's bits);
 *     only rceil's f32 model differs.
 *     Elements: e = SAT(RNE_elem(x / 2^X)), identical in both models (a power-of-two scale).
 *   - NVFP4: e2m1 elements, a UE4M3 block scale s (an e4m3fn code 0x00..0x7E), and the f32
 *     per-tensor decode scale G > 0: x ~ element * s * G.
 *     rne     s = RNE_e4m3(amax / (6 G)), saturated to 448
 *     ceil    s = RU_e4m3(amax / (6 G)), saturated to 448 (the block scale rounded up)
 *     4over6  s6 = the rne scale, s4 = RNE_e4m3(amax / (4 G)) saturated; the block is encoded
 *             with each and keeps the one whose decoded block (y_i = RN32(e_i * s * G), the
 *             Decoding below; an overflowed y_i's error is infinite) has the smaller sum of
 *             squared errors against x, computed exactly; s6 on a tie
 *     model exact: each step one rounding of the real value (amax / (6 G), x / (s G));
 *     model f32:   d = RN32(amax / 6) (or / 4), q = RN32(d / G), s = round_e4m3(q) (the
 *                  rule's rounding, RNE or RU, onto the e4m3 grid, saturated to 448);
 *                  t = RN32(s * G), e = SAT(RNE_e2m1(RN32(x / t))); a subnormal G can make
 *                  t = 0 (s * G <= 2^-150): then x / t is +-Inf (saturates to +-6) for
 *                  x != 0, and NaN for x = +-0, which encodes as +0 (code 0x00, -0 too).
 *     s = 0 (amax too small for the smallest UE4M3 subnormal): every element is the zero of
 *     its sign.
 *   - SAT(RNE_elem(v)): round to nearest even on the element grid (with subnormals), then
 *     clamp to +-max_elem; a negative v that rounds to zero gives the -0 code (sign bit set).
 * Decoding: y = RN32(element * scale) (MX), RN32(element * s * G) (NVFP4), overflowing to
 * +-Inf; a NaN scale code decodes every element of the block to NaN (0x7FC00000); an fp8
 * element's own NaN code gives NaN with its sign, an e5m2 Inf code +-Inf. */
#ifndef FP8KV_BLOCK_H
#define FP8KV_BLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- element formats -------------------------------------------------------------------- */

enum fp8kv_element_id {
    FP8KV_ELEM_E4M3, /* OCP e4m3fn: bias 7, max 448 (0x7E); 0x7F NaN, never written */
    FP8KV_ELEM_E5M2, /* OCP e5m2: bias 15, max 57344 (0x7B); Inf/NaN codes never written */
    FP8KV_ELEM_E3M2, /* OCP fp6: bias 3, max 28 (0x1F), every code finite */
    FP8KV_ELEM_E2M3, /* OCP fp6: bias 1, max 7.5 (0x1F), every code finite */
    FP8KV_ELEM_E2M1, /* OCP fp4: bias 1, max 6 (0x7), every code finite */
    FP8KV_ELEMENT_COUNT
};

/* An element format: sign, exp_bits, man_bits (bits = 1 + exp_bits + man_bits), subnormals,
 * a -0 code (sign_bit alone). Codes above max_code (fp8 only) are never written. */
struct fp8kv_element_format {
    enum fp8kv_element_id id;
    const char *name; /* "e4m3", "e5m2", "e3m2", "e2m3", "e2m1" */
    int bits, exp_bits, man_bits, bias;
    uint8_t max_code;  /* largest finite magnitude: 0x7E, 0x7B, 0x1F, 0x1F, 0x7 */
    uint8_t sign_bit;  /* 0x80, 0x80, 0x20, 0x20, 0x8 */
    int emax;          /* exponent of max_value: 8, 15, 4, 2, 2 */
    double max_value;  /* 448, 57344, 28, 7.5, 6 */
    double min_normal; /* 2^(1 - bias) */
};

/* ---- block formats, rules, models --------------------------------------------------------- */

enum fp8kv_block_format_id {
    FP8KV_MXFP8_E4M3,
    FP8KV_MXFP8_E5M2,
    FP8KV_MXFP6_E3M2,
    FP8KV_MXFP6_E2M3,
    FP8KV_MXFP4,
    FP8KV_NVFP4,
    FP8KV_BLOCK_FORMAT_COUNT
};

enum fp8kv_block_scale_kind {
    FP8KV_SCALE_E8M0,  /* 2^(c - 127), c in 0..254; 0xFF NaN */
    FP8KV_SCALE_UE4M3, /* an e4m3fn code 0x00..0x7E (positive); 0x7F NaN */
};

enum fp8kv_block_rule {
    FP8KV_RULE_FLOOR,  /* MX */
    FP8KV_RULE_RCEIL,  /* MX */
    FP8KV_RULE_EVEN,   /* MX */
    FP8KV_RULE_RNE,    /* NVFP4 */
    FP8KV_RULE_CEIL,   /* NVFP4 */
    FP8KV_RULE_4OVER6, /* NVFP4 */
    FP8KV_BLOCK_RULE_COUNT
};

enum fp8kv_block_model {
    FP8KV_BLOCK_MODEL_EXACT, /* one rounding per stored byte */
    FP8KV_BLOCK_MODEL_F32,   /* the steps in f32, as an engine computes them (see above) */
    FP8KV_BLOCK_MODEL_COUNT
};

#define FP8KV_BLOCK_MAX 32 /* the largest block_size */

/* The model every block command and check takes when it is not told (a format's default rule
 * is its descriptor's default_rule). */
#define FP8KV_BLOCK_DEFAULT_MODEL FP8KV_BLOCK_MODEL_EXACT

struct fp8kv_block_format {
    enum fp8kv_block_format_id id;
    const char *name; /* "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "nvfp4" */
    const struct fp8kv_element_format *element;
    int block_size; /* 32 (MX), 16 (NVFP4) */
    enum fp8kv_block_scale_kind scale_kind;
    enum fp8kv_block_rule default_rule; /* floor (MX), rne (NVFP4) */
    unsigned rules;                     /* the rules it takes: bit (1u << rule) */
};

extern const struct fp8kv_element_format fp8kv_element_formats[FP8KV_ELEMENT_COUNT];
extern const struct fp8kv_block_format fp8kv_block_formats[FP8KV_BLOCK_FORMAT_COUNT];
extern const char *const fp8kv_block_rule_names[FP8KV_BLOCK_RULE_COUNT];
extern const char *const fp8kv_block_model_names[FP8KV_BLOCK_MODEL_COUNT];

/* fp8kv_block_format_by_name: the block format called name, or NULL. */
const struct fp8kv_block_format *fp8kv_block_format_by_name(const char *name);

/* fp8kv_block_takes_rule: whether format f takes rule r. */
int fp8kv_block_takes_rule(const struct fp8kv_block_format *f, enum fp8kv_block_rule r);

/* fp8kv_block_rules_of: the names of the rules f takes, in rule order, into names (room for
 * FP8KV_BLOCK_RULE_COUNT); returns how many. */
int fp8kv_block_rules_of(const struct fp8kv_block_format *f,
                         const char *names[FP8KV_BLOCK_RULE_COUNT]);

/* fp8kv_block_scale_nan_code: the NaN code of f's scale (0xFF E8M0, 0x7F UE4M3). */
uint8_t fp8kv_block_scale_nan_code(const struct fp8kv_block_format *f);

/* fp8kv_block_scale_code_count: how many scale codes f's scale has, NaN included (256 E8M0,
 * 128 UE4M3); codes are 0 .. count - 1. */
int fp8kv_block_scale_code_count(const struct fp8kv_block_format *f);

/* fp8kv_element_code_count: 2^bits, every code of the element format (sign included). */
int fp8kv_element_code_count(const struct fp8kv_element_format *e);

#ifdef __cplusplus
}
#endif
#endif
