/* fp8kv/codec.h — the fp8 codecs (every format of FP8KV_CODEC_FORMATS) kernels share, host and
 * device.
 *
 * Subjects under test, not the truth: nothing here may look at the oracle. Every function is
 * `static inline` C that compiles as C11 on the host and, through FP8KV_HD, as a device
 * function under HIP or CUDA. The semantic choices arrive as a struct fp8kv_codec_cfg so one
 * body serves every format and rule (no copy-paste per format).
 *
 *   encoders (f32 value -> code):  fp8kv_encode_bits   integer bit manipulation
 *                                  fp8kv_encode_frexp  frexpf/ldexpf/nearbyintf, the style
 *                                                      engines ship (with its zero guard)
 *   decoders (code -> f32 value):  fp8kv_decode_bits, fp8kv_decode_table (256 entries)
 *   stores (x, scale -> code):     fp8kv_store_f32 applies a scale model, then an encoder
 *   input widening:                fp8kv_f16_to_f32, fp8kv_bf16_to_f32 (exact)
 *   rounding helpers:              fp8kv_f32_to_f16_rne, fp8kv_f32_to_bf16_rne
 *
 * All arithmetic is exact or a single IEEE f32 operation; build with floating-point
 * contraction off (-ffp-contract=off) and without fast-math, and keep the FTZ/DAZ modes off.
 */
#ifndef FP8KV_CODEC_H
#define FP8KV_CODEC_H

#include <stdint.h>

#include <string.h>

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define FP8KV_HD static __host__ __device__ __forceinline__
#define FP8KV_DEVICE_COMPILE 1
#else
#include <math.h>
#define FP8KV_HD static inline
#endif
/* The device pass of a GPU compile (nvcc and hipcc also compile each file for the host, where
 * the device intrinsics do not exist). */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define FP8KV_DEVICE_PASS 1
#endif
/* FP8KV_HOST_ARRAY_LOOP: on a host array loop (a codec's, a sweep's filling and judging), an
 * AVX-512 and an AVX2 clone next to the baseline one, chosen at load time, where the compiler
 * can make them (not under ASan). The codec loops are branch-free so that all vectorize. */
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__)) &&                            \
    !defined(__SANITIZE_ADDRESS__) && !defined(FP8KV_DEVICE_COMPILE)
#define FP8KV_HOST_ARRAY_LOOP __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FP8KV_HOST_ARRAY_LOOP
#endif

/* ---- configuration ---------------------------------------------------------------------- */

/* FP8KV_CODEC_FORMATS(X, A): X(A, NAME, number) for every format, in the order of the numbers:
 * the one list of the formats on the subject side. Generated from it: enum fp8kv_codec_format
 * (FP8KV_CODEC_<NAME> = number) and FP8KV_CODEC_FORMAT_COUNT here, FP8KV_FOR_EACH_FORMAT
 * (kernels/hip/device_codecs.h), and the asserts that FP8KV_CODEC_<NAME> is the truth's
 * FP8KV_<NAME> (conformance/checks.c; the counts too) and the KV ABI's FP8KV_KV_ABI_<NAME>
 * (kernels/cpu/kv_cache.c), so that a value missing on either side does not compile. A is passed
 * through to X unchanged (FP8KV_FOR_EACH_FORMAT passes its M). Bit 0 of a format's number says
 * fnuz, bit 1 says 5 exponent and 2 mantissa bits (else 4 and 3); the format facts below are
 * derived from those two bits. */
#define FP8KV_CODEC_FORMATS(X, A)                                                                  \
    X(A, E4M3FN, 0)                                                                                \
    X(A, E4M3FNUZ, 1)                                                                              \
    X(A, E5M2, 2)                                                                                  \
    X(A, E5M2FNUZ, 3)

#define FP8KV_CODEC_FORMAT_ENUM_(a, name, number) FP8KV_CODEC_##name = number,
#define FP8KV_CODEC_FORMAT_ONE_(a, name, number) +1
enum fp8kv_codec_format { FP8KV_CODEC_FORMATS(FP8KV_CODEC_FORMAT_ENUM_, ~) };
/* How many formats FP8KV_CODEC_FORMATS lists. */
enum { FP8KV_CODEC_FORMAT_COUNT = 0 FP8KV_CODEC_FORMATS(FP8KV_CODEC_FORMAT_ONE_, ~) };
#undef FP8KV_CODEC_FORMAT_ENUM_
#undef FP8KV_CODEC_FORMAT_ONE_
enum fp8kv_codec_model {
    FP8KV_CODEC_F32_DIV = 0,       /* RNE8(RN32(x / s)) */
    FP8KV_CODEC_F32_MUL_RECIP = 1, /* RNE8(RN32(x * RN32(1 / s))) */
    FP8KV_CODEC_F16_DIV = 2,       /* RNE8(RN16(RN32(x / s))) */
};

/* The semantic choices of a codec instance. */
struct fp8kv_codec_cfg {
    uint8_t format;     /* enum fp8kv_codec_format */
    uint8_t saturate;   /* 1: overflow clamps to ±max (satfinite); 0: overflow gives NaN, or
                           ±Inf in a format with Inf when inf_to_nan is 0 */
    uint8_t inf_to_nan; /* 1 sends ±Inf (and, unsaturated, overflow) to NaN; 0 clamps ±Inf to
                           ±max under saturate, else keeps it ±Inf (formats with Inf) */
    uint8_t model;      /* enum fp8kv_codec_model, for the stores */
};

/* ---- bit views ---------------------------------------------------------------------------- */

FP8KV_HD uint32_t fp8kv_f32_bits(float f)
{
#ifdef FP8KV_DEVICE_PASS
    return __float_as_uint(f);
#else
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
#endif
}

FP8KV_HD float fp8kv_f32_from_bits(uint32_t b)
{
#ifdef FP8KV_DEVICE_PASS
    return __uint_as_float(b);
#else
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
#endif
}

/* ---- format constants ---------------------------------------------------------------------- */

/* The facts of the formats, derived in one place for the codecs here and the device
 * kernels, from the two bits of the format's number. format: enum fp8kv_codec_format; the
 * fp8kv_codec_* forms take a configuration. Pure arithmetic, no selects: a select on the
 * format inside an encoder's loop is one the vectorizer refuses (measured with GCC 12: it lost
 * both encoders' loops, a sweep four times slower). */
FP8KV_HD int fp8kv_format_fnuz(int format)
{
    return format & 1;
}
/* 1 for the e5m2 formats (5 exponent, 2 mantissa bits), 0 for e4m3. */
FP8KV_HD int fp8kv_format_e5(int format)
{
    return (format >> 1) & 1;
}
/* Mantissa bits: 3 (e4m3), 2 (e5m2). */
FP8KV_HD int fp8kv_format_man_bits(int format)
{
    return 3 - fp8kv_format_e5(format);
}
/* The exponent bias: 2^(exp_bits - 1) - 1, one more in the fnuz formats: 7, 8, 15, 16. */
FP8KV_HD int fp8kv_format_bias(int format)
{
    return (1 << (6 - fp8kv_format_man_bits(format))) - 1 + fp8kv_format_fnuz(format);
}
/* Whether the format has ±Inf: OCP e5m2 keeps IEEE's all-ones exponent field with mantissa 0. */
FP8KV_HD int fp8kv_format_has_inf(int format)
{
    return fp8kv_format_e5(format) & (fp8kv_format_fnuz(format) ^ 1);
}
/* The largest finite code: OCP e4m3 gives up only S.1111.111 to NaN (0x7E); OCP e5m2 the four
 * codes of the all-ones exponent field (0x7B); every magnitude is finite in fnuz (0x7F). */
FP8KV_HD uint32_t fp8kv_format_max_code(int format)
{
    const uint32_t ocp = 0x7Eu - 3u * (uint32_t)fp8kv_format_e5(format);
    return ocp + (uint32_t)fp8kv_format_fnuz(format) * (0x7Fu - ocp);
}
FP8KV_HD int fp8kv_codec_bias(struct fp8kv_codec_cfg c)
{
    return fp8kv_format_bias(c.format);
}
FP8KV_HD int fp8kv_codec_man_bits(struct fp8kv_codec_cfg c)
{
    return fp8kv_format_man_bits(c.format);
}
FP8KV_HD uint32_t fp8kv_codec_max_code(struct fp8kv_codec_cfg c)
{
    return fp8kv_format_max_code(c.format);
}
/* The NaN byte an encoder writes (with the input's sign where the format has one): all ones,
 * 0x7F, in the OCP formats; the would-be -0, 0x80, in fnuz. */
FP8KV_HD uint32_t fp8kv_format_nan_byte(int format)
{
    return 0x7Fu + (uint32_t)fp8kv_format_fnuz(format);
}
/* The +Inf byte of a format with Inf: the code after the largest finite one (0x7C in e5m2). */
FP8KV_HD uint32_t fp8kv_format_inf_byte(int format)
{
    return fp8kv_format_max_code(format) + 1u;
}
/* Whether a format with this NaN byte has a -0: not when the NaN byte is the sign bit alone. */
FP8KV_HD int fp8kv_has_negative_zero(uint32_t nan_byte)
{
    return nan_byte != 0x80u;
}
/* Whether code is a NaN: in fnuz the NaN byte alone (the sign bit); in the OCP formats every
 * magnitude above the largest finite one that is not Inf, with either sign (e4m3fn: 0x7F,
 * 0xFF; e5m2: 0x7D..0x7F, 0xFD..0xFF). */
FP8KV_HD int fp8kv_format_is_nan_code(int format, uint32_t code)
{
    const uint32_t mag = code & 0x7Fu;
    const int inf = fp8kv_format_has_inf(format) & (mag == fp8kv_format_inf_byte(format));
    const int ocp_nan = (mag > fp8kv_format_max_code(format)) & (inf ^ 1);
    return fp8kv_format_fnuz(format) ? code == 0x80u : ocp_nan;
}
/* From the bias and the mantissa bits: (127 - bias) << man_bits, what turns the exponent field
 * of a code (bits 6..man_bits) into an f32's exponent field at the same place (its bits 30..23
 * shifted right by 23 - man_bits), and back. */
FP8KV_HD uint32_t fp8kv_rebias(int bias, int man_bits)
{
    return (uint32_t)(127 - bias) << man_bits;
}
/* The smallest normal value, 2^(1 - bias): 2^-6 (e4m3fn), 2^-7 (e4m3fnuz), 2^-14 (e5m2),
 * 2^-15 (e5m2fnuz). */
FP8KV_HD float fp8kv_min_normal(int bias)
{
    return fp8kv_f32_from_bits((uint32_t)(128 - bias) << 23);
}
/* The subnormal quantum, 2^(1 - bias - man_bits): 2^-9 (e4m3fn), 2^-10 (e4m3fnuz), 2^-16
 * (e5m2), 2^-17 (e5m2fnuz). */
FP8KV_HD float fp8kv_subnormal_unit(int bias, int man_bits)
{
    return fp8kv_f32_from_bits((uint32_t)(128 - bias - man_bits) << 23);
}
/* 2^(127 - bias), the decode unit: a code's 7 magnitude bits placed at bit 23 - man_bits of an
 * f32 read 2^(127 - bias) times too small, normal and subnormal codes alike (decode_fast of
 * kernels/hip/device_codecs.h): 2^120 (e4m3fn), 2^119 (e4m3fnuz). */
FP8KV_HD float fp8kv_decode_unit(int bias)
{
    return fp8kv_f32_from_bits((uint32_t)(254 - bias) << 23);
}
/* The largest finite value, the max code's fields placed into an f32 (as fp8kv_decode_bits
 * places a normal code): 448 (e4m3fn), 240 (e4m3fnuz), 57344 (e5m2, e5m2fnuz). */
FP8KV_HD float fp8kv_max_finite(int format)
{
    const int man_bits = fp8kv_format_man_bits(format);
    const uint32_t rebias = fp8kv_rebias(fp8kv_format_bias(format), man_bits);
    return fp8kv_f32_from_bits((fp8kv_format_max_code(format) + rebias) << (23 - man_bits));
}

/* fp8kv_codec_finish: the code of an input with sign bit sign (0 or 0x80) and f32 magnitude
 * bits mag, whose rounded finite magnitude code is code (any value above max_code meaning
 * overflow): applies the zero, overflow, Inf and NaN rules of c. Written with masks, not
 * branches, so that the encoders' array loops vectorize. */
FP8KV_HD uint8_t fp8kv_codec_finish(struct fp8kv_codec_cfg c, uint32_t sign, uint32_t mag,
                                    uint32_t code)
{
    /* per-configuration constants (selected per input below); the definitions' order and shape
     * matter to the vectorizer here (measured: other spellings lose the frexp codec's loop) */
    const uint32_t max_code = fp8kv_format_max_code(c.format);
    const uint32_t nan_byte = fp8kv_format_nan_byte(c.format);
    const uint32_t no_negative_zero = (uint32_t)!fp8kv_has_negative_zero(nan_byte);
    const uint32_t clamp_overflow = 0u - (uint32_t)(c.saturate != 0); /* masks, not branches */
    const uint32_t clamp_inf = clamp_overflow & (0u - (uint32_t)(c.inf_to_nan == 0));
    /* what is not clamped: Inf where the format has it and Inf is not sent to NaN, else NaN */
    const uint32_t keep_inf = 0u - (uint32_t)(fp8kv_format_has_inf(c.format) & (c.inf_to_nan == 0));
    const uint32_t unclamped =
        (keep_inf & fp8kv_format_inf_byte(c.format)) | (~keep_inf & nan_byte);
    const uint32_t overflow_byte = (clamp_overflow & max_code) | (~clamp_overflow & unclamped);
    const uint32_t inf_byte = (clamp_inf & max_code) | (~clamp_inf & unclamped);
    uint32_t out = code;
    out = code > max_code ? overflow_byte : out;
    out = mag == 0x7F800000u ? inf_byte : out;
    out = mag > 0x7F800000u ? nan_byte : out;
    /* the sign: kept, except for a zero where the format has no -0 (e4m3fnuz, whose NaN 0x80
     * already has the bit) */
    const uint32_t drop_sign = 0u - (no_negative_zero & (uint32_t)(out == 0));
    return (uint8_t)(out | (sign & ~drop_sign));
}

/* ---- the integer codec -------------------------------------------------------------------- */

/* fp8kv_encode_bits: RNE of the f32 with bits x to the format, by integer arithmetic on the
 * bit pattern. Normal range: adding (half - 1 + lsb) below the kept man_bits mantissa bits
 * rounds to nearest even, and the carry runs into the exponent field, so rebiasing the exponent
 * gives the code directly. Subnormal range: the significand is shifted right with the same
 * add-then-truncate round-half-even. Overflow is judged after rounding.
 * Written without branches (both paths computed, then selected) so that array loops over it
 * vectorize: every intermediate is defined for every input, shifts are kept in [1, 25]. */
FP8KV_HD uint8_t fp8kv_encode_bits(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t sign = (x >> 24) & 0x80u, mag = x & 0x7FFFFFFFu;
    const uint32_t bias = (uint32_t)fp8kv_codec_bias(c);
    const uint32_t man_bits = (uint32_t)fp8kv_codec_man_bits(c);
    const uint32_t min_normal = fp8kv_f32_bits(fp8kv_min_normal((int)bias));
    const int is_normal = mag >= min_normal;

    /* normal: round at bit 23 - man_bits, then rebias the exponent field from 127 to bias */
    const uint32_t cut = 23u - man_bits;
    const uint32_t rounded = mag + ((1u << (cut - 1u)) - 1u) + ((mag >> cut) & 1u);
    const uint32_t normal_code = (rounded >> cut) - fp8kv_rebias((int)bias, (int)man_bits);

    /* subnormal: value = sig * 2^(e - 150) (f32 denormals: e = 1, no hidden bit); in fp8
     * subnormal units 2^(1 - bias - man_bits) that is sig >> (151 - bias - man_bits - e); past
     * 25 it is 0 */
    const uint32_t e = mag >> 23, has_hidden = (uint32_t)(e != 0);
    const uint32_t e_eff = e | (has_hidden ^ 1u);
    const uint32_t sig = (mag & 0x7FFFFFu) | (has_hidden << 23);
    const uint32_t raw_shift = 151u - bias - man_bits - e_eff; /* > cut below min_normal */
    const uint32_t shift = ((uint32_t)is_normal | (raw_shift > 25u)) ? 25u : raw_shift;
    const uint32_t half = 1u << (shift - 1u), lsb = (sig >> shift) & 1u;
    const uint32_t sub_code = (sig + (half - 1u) + lsb) >> shift; /* the same RNE trick */

    const uint32_t code = is_normal ? normal_code : sub_code;

    return fp8kv_codec_finish(c, sign, mag, code);
}

/* ---- the frexp codec ------------------------------------------------------------------------ */

/* fp8kv_frexpf, fp8kv_ldexpf, fp8kv_nearbyintf: frexpf, ldexpf and nearbyintf (default
 * rounding mode). On the device they are the CUDA/HIP math functions. On the host they are
 * branch-free equivalents of the C library's for the arguments the codec passes, so that array
 * loops over the codec vectorize: glibc's nearbyintf saves and restores the floating-point
 * environment on every call, which alone made an exhaustive sweep of this codec twenty times
 * slower than one of the integer codec. They are checked through the codec, not one by one:
 * t_sweep's exhaustive suite runs fp8kv_encode_frexp over all 2^32 f32 and all 2^16 f16 and
 * bf16 inputs under every profile and compares each code with the certified boundary tables
 * (vectors/), byte for byte; only fp8kv_frexpf is compared with libm's frexpf directly, at a
 * few probes (t_defects' row1_frexp_no_zero_guard). */
#ifdef FP8KV_DEVICE_COMPILE
FP8KV_HD float fp8kv_frexpf(float a, int *e)
{
    return frexpf(a, e);
}
FP8KV_HD float fp8kv_ldexpf(float a, int k)
{
    return ldexpf(a, k);
}
FP8KV_HD float fp8kv_nearbyintf(float v)
{
    return nearbyintf(v);
}
#else
/* frexpf for positive finite a (the codec's only use): a = m * 2^e, m in [1/2, 1). A
 * denormal is first scaled by 2^25 (exact) so its exponent field is meaningful. */
FP8KV_HD float fp8kv_frexpf(float a, int *e)
{
    const uint32_t denormal = (uint32_t)(fp8kv_f32_bits(a) < 0x00800000u);
    const float scaled = denormal ? a * 33554432.0f : a; /* 2^25 */
    const uint32_t b = fp8kv_f32_bits(scaled);
    *e = (int)(b >> 23) - 126 - (int)(denormal * 25u);
    return fp8kv_f32_from_bits((b & 0x807FFFFFu) | 0x3F000000u);
}
/* ldexpf for |k| <= 252 with a normal (or zero) result: two exact power-of-two products. */
FP8KV_HD float fp8kv_ldexpf(float a, int k)
{
    const int k1 = k / 2, k2 = k - k1;
    const float p1 = fp8kv_f32_from_bits((uint32_t)(k1 + 127) << 23);
    const float p2 = fp8kv_f32_from_bits((uint32_t)(k2 + 127) << 23);
    return a * p1 * p2;
}
/* nearbyintf in round-to-nearest-even: adding and subtracting 2^23 rounds a magnitude below
 * 2^23 to an integer; larger magnitudes are integers already. */
FP8KV_HD float fp8kv_nearbyintf(float v)
{
    const float magic = 8388608.0f, a = fabsf(v); /* 2^23 */
    const float r = (a + magic) - magic;
    const float rounded = a < magic ? r : a;
    return fp8kv_f32_from_bits(fp8kv_f32_bits(rounded) | (fp8kv_f32_bits(v) & 0x80000000u));
}
#endif

/* fp8kv_encode_frexp: the same function written the way engines write it: split |x| with
 * frexpf, scale the significand to man_bits fraction bits with ldexpf (exact: a power-of-two
 * scaling into [0, 2^(man_bits + 1)]), round with nearbyintf (RNE), carry into the exponent,
 * rebias.
 * Unlike many engine copies it guards ±0 (docs/DESIGN.md §1.4: frexp of 0). Branch-free like the
 * integer codec, with the specials selected at the end. */
FP8KV_HD uint8_t fp8kv_encode_frexp(struct fp8kv_codec_cfg c, float x)
{
    const uint32_t bits = fp8kv_f32_bits(x), sign = (bits >> 24) & 0x80u;
    const uint32_t mag = bits & 0x7FFFFFFFu;
    const int bias = fp8kv_codec_bias(c), man_bits = fp8kv_codec_man_bits(c);
    const uint32_t one = 1u << man_bits; /* the hidden bit, in units of the quantum */
    const float two = (float)(2u * one);
    const int finite_nonzero = mag - 1u < 0x7F7FFFFFu; /* 0 < |x| <= FLT_MAX */
    const float a = fp8kv_f32_from_bits(finite_nonzero ? mag : 0x3F800000u);
    int e;
    fp8kv_frexpf(a, &e);             /* a = m * 2^e, m in [1/2, 1) */
    int E = e - 1;                   /* a in [2^E, 2^(E+1)) */
    E = E < 1 - bias ? 1 - bias : E; /* fp8 subnormals: quantum 2^(1 - bias - man_bits) */
    float q = fp8kv_nearbyintf(fp8kv_ldexpf(a, man_bits - E)); /* in [0, two]; two: a carry */
    const int carry = q >= two;
    E += carry;
    q = carry ? (float)one : q;
    const uint32_t qi = (uint32_t)(int)q; /* via int: a signed conversion vectorizes */
    const uint32_t normal = ((uint32_t)(E + bias) << man_bits) | (qi - one);
    uint32_t code = qi < one ? qi : normal;
    code = finite_nonzero ? code : 0u;

    return fp8kv_codec_finish(c, sign, mag, code);
}

/* ---- decoders ------------------------------------------------------------------------------ */

/* fp8kv_decode_bits: the f32 value of code (exact), by placing the fields into an f32: a
 * normal code has its exponent rebiased; a subnormal m * 2^(1 - bias - man_bits) is m times a
 * power of two. NaN codes give a quiet NaN with the code's sign, Inf codes ±Inf. */
FP8KV_HD float fp8kv_decode_bits(struct fp8kv_codec_cfg c, uint8_t code)
{
    const uint32_t sign = (uint32_t)(code & 0x80u) << 24, mag = code & 0x7Fu;
    const int bias = fp8kv_codec_bias(c), man_bits = fp8kv_codec_man_bits(c);
    if (fp8kv_format_is_nan_code(c.format, code))
        return fp8kv_f32_from_bits(sign | 0x7FC00000u);
    if (fp8kv_format_has_inf(c.format) && mag == fp8kv_format_inf_byte(c.format))
        return fp8kv_f32_from_bits(sign | 0x7F800000u);
    if (mag >= (1u << man_bits)) /* normal */
        return fp8kv_f32_from_bits(sign |
                                   ((mag + fp8kv_rebias(bias, man_bits)) << (23 - man_bits)));
    /* subnormal: mag * 2^(1 - bias - man_bits); the power of two is a normal f32 */
    const float unit = fp8kv_subnormal_unit(bias, man_bits);
    return fp8kv_f32_from_bits(sign | fp8kv_f32_bits((float)mag * unit));
}

/* fp8kv_decode_table_fill: the 256-entry decode table of a format, from fp8kv_decode_bits. */
FP8KV_HD void fp8kv_decode_table_fill(struct fp8kv_codec_cfg c, float table[256])
{
    for (int q = 0; q < 256; q++)
        table[q] = fp8kv_decode_bits(c, (uint8_t)q);
}

/* fp8kv_decode_table: a table lookup (the read path most kernels use). */
FP8KV_HD float fp8kv_decode_table(const float table[256], uint8_t code)
{
    return table[code];
}

/* ---- 16-bit inputs and roundings ------------------------------------------------------------ */

/* fp8kv_bf16_to_f32: exact widening of bf16 bits. */
FP8KV_HD float fp8kv_bf16_to_f32(uint16_t h)
{
    return fp8kv_f32_from_bits((uint32_t)h << 16);
}

/* fp8kv_f16_to_f32: exact widening of f16 bits (subnormals normalized, NaN payload kept). */
FP8KV_HD float fp8kv_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1Fu)
        return fp8kv_f32_from_bits(sign | 0x7F800000u | (man << 13));
    if (exp != 0)
        return fp8kv_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
    /* subnormal or zero: man * 2^-24, exact in f32 */
    const float v = (float)man * fp8kv_f32_from_bits(0x33800000u); /* 2^-24 */
    return fp8kv_f32_from_bits(sign | fp8kv_f32_bits(v));
}

/* fp8kv_f32_to_f16_rne: RN16 of an f32 (RNE, subnormals, overflow to ±Inf, NaN quieted). */
FP8KV_HD uint16_t fp8kv_f32_to_f16_rne(float f)
{
    const uint32_t x = fp8kv_f32_bits(f), sign = (x >> 16) & 0x8000u, mag = x & 0x7FFFFFFFu;
    if (mag > 0x7F800000u)
        return (uint16_t)(sign | 0x7E00u | ((mag >> 13) & 0x3FFu));
    if (mag >= 0x477FF000u) /* 65520 and up round to Inf */
        return (uint16_t)(sign | 0x7C00u);
    if (mag >= 0x38800000u) { /* normal f16: 2^-14 and up */
        uint32_t rounded = mag + 0xFFFu + ((mag >> 13) & 1u);
        return (uint16_t)(sign | ((rounded >> 13) - (112u << 10)));
    }
    /* subnormal f16: round |f| / 2^-24 to an integer, half to even */
    const uint32_t e = mag >> 23;
    if (e < 102u) /* below 2^-25: rounds to zero */
        return (uint16_t)sign;
    const uint32_t sig = (mag & 0x7FFFFFu) | 0x800000u, shift = 126u - e;
    const uint32_t kept = sig >> shift, rest = sig & ((1u << shift) - 1u),
                   half = 1u << (shift - 1u);
    return (uint16_t)(sign | (kept + (rest > half || (rest == half && (kept & 1u)))));
}

/* fp8kv_f32_to_bf16_rne: RNbf16 of an f32 (RNE; overflow to ±Inf by the carry; NaN quieted). */
FP8KV_HD uint16_t fp8kv_f32_to_bf16_rne(float f)
{
    const uint32_t x = fp8kv_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

/* ---- stores ---------------------------------------------------------------------------------- */

/* fp8kv_scale_quotient: the value a store hands to the fp8 conversion under c.model: x / s,
 * x * RN32(1 / s), or RN16(x / s) widened back. */
FP8KV_HD float fp8kv_scale_quotient(struct fp8kv_codec_cfg c, float x, float s)
{
    if (c.model == FP8KV_CODEC_F32_MUL_RECIP) {
        const float r = 1.0f / s;
        return x * r;
    }
    const float q = x / s;
    if (c.model == FP8KV_CODEC_F16_DIV)
        return fp8kv_f16_to_f32(fp8kv_f32_to_f16_rne(q));
    return q;
}

/* fp8kv_store_f32: the code a store writes for input x and per-tensor scale s (bit codec). */
FP8KV_HD uint8_t fp8kv_store_f32(struct fp8kv_codec_cfg c, float x, float s)
{
    return fp8kv_encode_bits(c, fp8kv_f32_bits(fp8kv_scale_quotient(c, x, s)));
}

#endif
