/* codec_simd.c — the SIMD array loops of the host encoders (fp8kv/cpu_isa.h): one body, written
 * with GCC/Clang vector extensions, built once per instruction set. kernels/CMakeLists.txt
 * compiles it for AVX2 (-mavx2, FP8KV_SIMD_LANES=8 lanes of 32 bits,
 * FP8KV_SIMD_NAME=fp8kv_simd_avx2) and for AVX-512 (-mavx512f -mavx512bw -mavx512vl -mavx512dq, 16
 * lanes, fp8kv_simd_avx512); each build defines <FP8KV_SIMD_NAME>_encode_bits, _encode_frexp (an
 * array) and _encode_bits_range, _encode_frexp_range (consecutive inputs).
 *
 * Every lane computes the function of codec.h's scalar encoder, and the result is the same
 * byte for every input (t_simd compares them with the scalar functions under every
 * configuration; t_sweep judges each build's loops against the oracle on all 2^32 f32
 * inputs). Each codec has an ordinary path, for the inputs where no special rule of
 * fp8kv_codec_finish applies but overflow (bits: rounding to zero, a normal code or a finite
 * overflow; frexp: every normal finite f32), whose formula is short, and a general path:
 * codec.h's formula step by step in vector form. A vector takes the ordinary path where all its
 * lanes are ordinary (a compare or two), else the general one, whole. A sweep visits inputs in
 * increasing bit order, so neighbouring lanes share their exponent field and nearly every
 * vector is ordinary or special throughout; the range loops know it from a block's two ends.
 *
 * Floating point: the ordinary frexp path rounds with the processor's round-to-nearest-even
 * instruction (nearbyintf's operation) and scales by one exact power-of-two product (ldexpf's);
 * the build keeps contraction off and FTZ/DAZ are never set, as codec.h requires.
 */
#include <immintrin.h>
#include <string.h>

#include "fp8kv/codec.h"

#if !defined(FP8KV_SIMD_LANES) || !defined(FP8KV_SIMD_NAME)
#error "codec_simd.c is built with FP8KV_SIMD_LANES and FP8KV_SIMD_NAME (kernels/CMakeLists.txt)"
#endif
#define LANES FP8KV_SIMD_LANES
#define SIMD_CAT_(a, b) a##b
#define SIMD_CAT(a, b) SIMD_CAT_(a, b)
#define ENCODE_BITS SIMD_CAT(FP8KV_SIMD_NAME, _encode_bits)
#define ENCODE_FREXP SIMD_CAT(FP8KV_SIMD_NAME, _encode_frexp)
#define ENCODE_BITS_RANGE SIMD_CAT(FP8KV_SIMD_NAME, _encode_bits_range)
#define ENCODE_FREXP_RANGE SIMD_CAT(FP8KV_SIMD_NAME, _encode_frexp_range)

/* Everything on the short paths is inlined into the loops; the general paths are calls, off
 * them. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define OUT_OF_LINE static __attribute__((noinline))

typedef uint32_t vu __attribute__((vector_size(4 * LANES)));
typedef int32_t vi __attribute__((vector_size(4 * LANES)));
typedef float vf __attribute__((vector_size(4 * LANES)));
typedef uint8_t vq __attribute__((vector_size(LANES)));

void ENCODE_BITS(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q);
void ENCODE_FREXP(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q);
void ENCODE_BITS_RANGE(struct fp8kv_codec_cfg c, uint32_t first, size_t n, uint8_t *q);
void ENCODE_FREXP_RANGE(struct fp8kv_codec_cfg c, uint32_t first, size_t n, uint8_t *q);

/* ---- lane helpers: the only lines that differ between the instruction sets ------------------ */

/* Whether any lane of the mask m (lanes 0 or all ones) is set. */
ALWAYS_INLINE int any_lane(vi m)
{
#if LANES == 16
    return _mm512_movepi32_mask((__m512i)m) != 0;
#else
    return _mm256_movemask_ps((__m256)m) != 0;
#endif
}

/* The lanes of v rounded to integers, ties to even (nearbyintf in the default mode). */
ALWAYS_INLINE vf round_even(vf v)
{
#if LANES == 16
    return (vf)_mm512_roundscale_ps((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    return (vf)_mm256_round_ps((__m256)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
}

/* Lane-wise unsigned maximum and minimum. */
ALWAYS_INLINE vu umax(vu a, vu b)
{
#if LANES == 16
    return (vu)_mm512_max_epu32((__m512i)a, (__m512i)b);
#else
    return (vu)_mm256_max_epu32((__m256i)a, (__m256i)b);
#endif
}
ALWAYS_INLINE vu umin(vu a, vu b)
{
#if LANES == 16
    return (vu)_mm512_min_epu32((__m512i)a, (__m512i)b);
#else
    return (vu)_mm256_min_epu32((__m256i)a, (__m256i)b);
#endif
}

/* q[0 .. 4 * LANES) = the codes (each below 256) of the lanes of a, b, c and d, in order: two
 * saturating packs (32 to 16, 16 to 8 bits) and the permutation that undoes their interleaving
 * of 128-bit lanes; one store. */
ALWAYS_INLINE void store_codes4(uint8_t *q, vu a, vu b, vu c, vu d)
{
#if LANES == 16
    const __m512i ab = _mm512_packus_epi32((__m512i)a, (__m512i)b);
    const __m512i cd = _mm512_packus_epi32((__m512i)c, (__m512i)d);
    const __m512i bytes = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
        _mm512_packus_epi16(ab, cd));
    _mm512_storeu_si512((void *)q, bytes);
#else
    const __m256i ab = _mm256_packus_epi32((__m256i)a, (__m256i)b);
    const __m256i cd = _mm256_packus_epi32((__m256i)c, (__m256i)d);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd),
                                                      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, bytes);
#endif
}

/* ---- lane helpers common to both ------------------------------------------------------------ */

ALWAYS_INLINE vu splat(uint32_t v)
{
    return (vu){0} + v;
}

/* a where mask m is set, else b */
ALWAYS_INLINE vu pick(vi m, vu a, vu b)
{
    return (a & (vu)m) | (b & ~(vu)m);
}

ALWAYS_INLINE vu load_bits(const float *x)
{
    vu v;
    memcpy(&v, x, sizeof v);
    return v;
}

ALWAYS_INLINE void store_codes(uint8_t *q, vu codes)
{
    const vq bytes = __builtin_convertvector(codes, vq);
    memcpy(q, &bytes, sizeof bytes);
}

/* ---- fp8kv_codec_finish in vector form ------------------------------------------------------ */

/* fp8kv_codec_finish for lanes whose input x is finite: the overflow byte past the largest
 * finite code, and the sign put back (but on a zero of a format without -0). The branches are
 * on the configuration: resolved when it is a constant (see DISPATCH_CFG). */
ALWAYS_INLINE vu finish_finite(struct fp8kv_codec_cfg c, vu x, vu code)
{
    const uint32_t max_code = fp8kv_format_max_code(c.format);
    const uint32_t overflow_byte = fp8kv_codec_finish(c, 0, 0x7F000000u, max_code + 1u);
    const vu out = overflow_byte == max_code ? umin(code, splat(max_code))
                                             : pick(code > max_code, splat(overflow_byte), code);
    const vu sign = (x >> 24) & 0x80u;
    if (fp8kv_has_negative_zero(fp8kv_format_nan_byte(c.format)))
        return out | sign;
    return out | (sign & ~(vu)(out == 0u));
}

/* fp8kv_codec_finish of any lanes: its mask arithmetic, with the per-configuration bytes
 * (overflow, Inf, NaN; sign 0) computed by the scalar function itself. (Not built on
 * finish_finite: Debian's clang 14 crashes on that form under -g and the sanitizers.) */
ALWAYS_INLINE vu finish(struct fp8kv_codec_cfg c, vu x, vu code)
{
    const uint32_t max_code = fp8kv_format_max_code(c.format);
    const uint32_t overflow_byte = fp8kv_codec_finish(c, 0, 0x7F000000u, max_code + 1u);
    const uint32_t inf_byte = fp8kv_codec_finish(c, 0, 0x7F800000u, max_code + 1u);
    const uint32_t nan_byte = fp8kv_format_nan_byte(c.format);
    const uint32_t no_negative_zero = !fp8kv_has_negative_zero(nan_byte);
    const vu mag = x & 0x7FFFFFFFu, sign = (x >> 24) & 0x80u;
    vu out = pick(code > max_code, splat(overflow_byte), code);
    out = pick(mag == 0x7F800000u, splat(inf_byte), out);
    out = pick(mag > 0x7F800000u, splat(nan_byte), out);
    const vu drop_sign = (vu)(out == 0u) & splat(0u - no_negative_zero);
    return out | (sign & ~drop_sign);
}

/* ---- the integer codec ---------------------------------------------------------------------- */

/* fp8kv_encode_bits of every lane, step by step (the general path). */
OUT_OF_LINE vu bits_general(struct fp8kv_codec_cfg c, vu x)
{
    const vu mag = x & 0x7FFFFFFFu;
    const uint32_t bias = (uint32_t)fp8kv_codec_bias(c);
    const uint32_t man_bits = (uint32_t)fp8kv_codec_man_bits(c);
    const uint32_t min_normal = fp8kv_f32_bits(fp8kv_min_normal((int)bias));
    const vi is_normal = mag >= min_normal;

    const uint32_t cut = 23u - man_bits;
    const vu rounded = mag + ((1u << (cut - 1u)) - 1u) + ((mag >> cut) & 1u);
    const vu normal_code = (rounded >> cut) - fp8kv_rebias((int)bias, (int)man_bits);

    const vu e = mag >> 23;
    const vi has_hidden = e != 0u;
    const vu e_eff = e | ((vu)has_hidden + 1u); /* e, or 1 where e is 0 */
    const vu sig = (mag & 0x7FFFFFu) | ((vu)has_hidden & 0x800000u);
    const vu raw_shift = (151u - bias - man_bits) - e_eff;
    const vu shift = pick(is_normal | (raw_shift > 25u), splat(25u), raw_shift);
    const vu half = splat(1u) << (shift - 1u), lsb = (sig >> shift) & 1u;
    const vu sub_code = (sig + (half - 1u) + lsb) >> shift;

    return finish(c, x, pick(is_normal, normal_code, sub_code));
}

/* The integer codec's ordinary lanes: an input that rounds to zero (at most bits_zero_max, half
 * the subnormal quantum: codec.h's subnormal path gives 0 there, ties to even), to a normal code
 * (codec.h's round-and-rebias), or overflows while finite. A zero lane is raised to 2^-bias,
 * which the round-and-rebias (its rebias folded into the rounding constant) turns into code 0. */
ALWAYS_INLINE uint32_t bits_zero_max(struct fp8kv_codec_cfg c)
{
    const int bias = fp8kv_codec_bias(c), man_bits = fp8kv_codec_man_bits(c);
    return fp8kv_f32_bits(fp8kv_subnormal_unit(bias, man_bits) * 0.5f);
}

/* 0: mag rounds to zero; 1: a normal code or a finite overflow; -1: not ordinary. */
ALWAYS_INLINE int bits_interval(struct fp8kv_codec_cfg c, uint32_t mag)
{
    const uint32_t min_normal = fp8kv_f32_bits(fp8kv_min_normal(fp8kv_codec_bias(c)));
    return mag <= bits_zero_max(c) ? 0 : mag >= min_normal && mag < 0x7F800000u ? 1 : -1;
}

/* The codes of lanes that are all ordinary (bits_interval 0 or 1). */
ALWAYS_INLINE vu bits_ordinary(struct fp8kv_codec_cfg c, vu x)
{
    const uint32_t bias = (uint32_t)fp8kv_codec_bias(c);
    const uint32_t man_bits = (uint32_t)fp8kv_codec_man_bits(c), cut = 23u - man_bits;
    const uint32_t rebiased = fp8kv_rebias((int)bias, (int)man_bits) << cut; /* 2^-bias */
    const vu m = umax(x & 0x7FFFFFFFu, splat(rebiased));
    const vu code = (m + (((1u << (cut - 1u)) - 1u) - rebiased) + ((m >> cut) & 1u)) >> cut;
    return finish_finite(c, x, code);
}

/* The codes of any lanes: the ordinary path where all lanes are ordinary, else the general. */
ALWAYS_INLINE vu bits_vector(struct fp8kv_codec_cfg c, vu x)
{
    const uint32_t zero_max = bits_zero_max(c);
    const uint32_t min_normal = fp8kv_f32_bits(fp8kv_min_normal(fp8kv_codec_bias(c)));
    const vu mag = x & 0x7FFFFFFFu;
    const vi subnormal = mag - (zero_max + 1u) < min_normal - (zero_max + 1u);
    if (any_lane(subnormal | (mag >= 0x7F800000u)))
        return bits_general(c, x);
    return bits_ordinary(c, x);
}

/* ---- the frexp codec ------------------------------------------------------------------------ */

/* fp8kv_encode_frexp of every lane, step by step (the general path), with codec.h's host
 * frexpf, ldexpf and nearbyintf in vector form. */
OUT_OF_LINE vu frexp_general(struct fp8kv_codec_cfg c, vu bits)
{
    const vu mag = bits & 0x7FFFFFFFu;
    const int bias = fp8kv_codec_bias(c), man_bits = fp8kv_codec_man_bits(c);
    const uint32_t one = 1u << man_bits;
    const float two = (float)(2u * one);
    const vi finite_nonzero = mag - 1u < 0x7F7FFFFFu;
    const vu a_bits = pick(finite_nonzero, mag, splat(0x3F800000u));
    /* fp8kv_frexpf: denormals scaled by 2^25 first */
    const vi denormal = a_bits < 0x00800000u;
    const vf a = (vf)a_bits;
    const vu scaled = pick(denormal, (vu)(a * 33554432.0f), a_bits);
    const vi e = (vi)(scaled >> 23) - 126 - ((vi)denormal & 25);
    vi E = e - 1;
    E = (vi)pick(E < 1 - bias, (vu)((vi){0} + (1 - bias)), (vu)E);
    /* fp8kv_ldexpf(a, man_bits - E): two exact power-of-two products */
    const vi k = man_bits - E, k1 = k / 2, k2 = k - k1;
    const vf p1 = (vf)((vu)(k1 + 127) << 23), p2 = (vf)((vu)(k2 + 127) << 23);
    const vf scaled_a = a * p1 * p2;
    /* fp8kv_nearbyintf: (|v| + 2^23) - 2^23 below 2^23, the sign put back */
    const vf magic = (vf){0} + 8388608.0f, abs_v = (vf)((vu)scaled_a & 0x7FFFFFFFu);
    const vf r = (abs_v + magic) - magic;
    const vf rounded = (vf)pick(abs_v < magic, (vu)r, (vu)abs_v);
    vf qf = (vf)((vu)rounded | ((vu)scaled_a & 0x80000000u));
    const vi carry = qf >= two;
    E -= carry; /* carry lanes are -1 */
    qf = (vf)pick(carry, (vu)((vf){0} + (float)one), (vu)qf);
    const vu qi = (vu) __builtin_convertvector(qf, vi);
    const vu normal = ((vu)(E + bias) << man_bits) | (qi - one);
    vu code = pick(qi < one, qi, normal);
    code &= (vu)finite_nonzero;
    return finish(c, bits, code);
}

/* The frexp codec's ordinary lanes: a normal finite f32 input (every code, overflow included,
 * but those of zero, f32 denormals, Inf and NaN): frexp by the exponent field, ldexp by one
 * exact power-of-two product, one round-to-nearest-even, and the carry of q = 2 * one absorbed
 * by the code's sum. */
ALWAYS_INLINE int frexp_interval(struct fp8kv_codec_cfg c, uint32_t mag)
{
    (void)c;
    return mag - 0x00800000u < 0x7F000000u ? 0 : -1;
}

/* The codes of lanes that are all ordinary (frexp_interval 0). */
ALWAYS_INLINE vu frexp_ordinary(struct fp8kv_codec_cfg c, vu bits)
{
    const int bias = fp8kv_codec_bias(c), man_bits = fp8kv_codec_man_bits(c);
    const vu mag = bits & 0x7FFFFFFFu;
    /* frexpf: a = m * 2^e with e = exponent field - 126; E = e - 1, at least 1 - bias */
    const vi E = (vi)umax(mag >> 23, splat((uint32_t)(128 - bias))) - 127;
    /* ldexpf(a, man_bits - E) = a * 2^(man_bits - E): a power of two in f32's normal range */
    const vf scale = (vf)((vu)(man_bits - E + 127) << 23);
    const vu qi = (vu) __builtin_convertvector(round_even((vf)mag * scale), vi);
    /* normal: ((E + bias) << man_bits) | (qi - one) for qi in [one, 2 * one), which is
     * ((E + bias - 1) << man_bits) + qi; with qi = 2 * one (the carry) the same sum is the next
     * binade's first code; subnormal or zero (E = 1 - bias, qi < one): qi, the same sum */
    return finish_finite(c, bits, ((vu)(E + bias - 1) << man_bits) + qi);
}

/* The codes of any lanes: the ordinary path where all lanes are ordinary, else the general. */
ALWAYS_INLINE vu frexp_vector(struct fp8kv_codec_cfg c, vu bits)
{
    const vu mag = bits & 0x7FFFFFFFu;
    if (any_lane(mag - 0x00800000u >= 0x7F000000u))
        return frexp_general(c, bits);
    return frexp_ordinary(c, bits);
}

/* ---- the loops ---------------------------------------------------------------------------------
 */

/* The lane numbers 0 .. LANES - 1. */
ALWAYS_INLINE vu lane_index(void)
{
    vu v;
    for (int i = 0; i < LANES; i++)
        v[i] = (uint32_t)i;
    return v;
}

/* The codes of an array x[0 .. n) into q, by codec's vector function (bits or frexp): four
 * vectors at a time, then one, then the scalar function (scalar_call of x[i_]) on the tail. */
#define ARRAY_LOOP(codec, scalar_call)                                                             \
    do {                                                                                           \
        size_t i_ = 0;                                                                             \
        for (; i_ + 4 * LANES <= n; i_ += 4 * LANES)                                               \
            store_codes4(q + i_, codec##_vector(c, load_bits(x + i_)),                             \
                         codec##_vector(c, load_bits(x + i_ + LANES)),                             \
                         codec##_vector(c, load_bits(x + i_ + 2 * LANES)),                         \
                         codec##_vector(c, load_bits(x + i_ + 3 * LANES)));                        \
        for (; i_ + LANES <= n; i_ += LANES)                                                       \
            store_codes(q + i_, codec##_vector(c, load_bits(x + i_)));                             \
        for (; i_ < n; i_++)                                                                       \
            q[i_] = scalar_call;                                                                   \
    } while (0)

/* Whether the consecutive inputs a .. b (a <= b) are all in one of codec's ordinary intervals:
 * so are its two ends, with one sign (the magnitudes of consecutive patterns of one sign
 * increase). */
#define ORDINARY_SPAN(codec, a, b)                                                                 \
    ((((a) ^ (b)) >> 31) == 0 && codec##_interval(c, (a)&0x7FFFFFFFu) >= 0 &&                      \
     codec##_interval(c, (a)&0x7FFFFFFFu) == codec##_interval(c, (b)&0x7FFFFFFFu))

/* The codes of the consecutive inputs first .. first + n - 1 (first + n at most 2^32) into q,
 * four vectors at a time: a stretch of blocks that are ORDINARY_SPAN goes through the ordinary
 * function without the lanes' test (an inner loop without calls, its constants kept in
 * registers), any other block through the vector function; then one vector at a time, then
 * the scalar function (scalar_call of the input first + i_) on the tail. */
#define RANGE_LOOP(codec, scalar_call)                                                             \
    do {                                                                                           \
        const vu lanes_ = lane_index();                                                            \
        size_t i_ = 0;                                                                             \
        while (i_ + 4 * LANES <= n) {                                                              \
            uint32_t a = first + (uint32_t)i_;                                                     \
            for (; i_ + 4 * LANES <= n && ORDINARY_SPAN(codec, a, a + (4 * LANES - 1));            \
                 i_ += 4 * LANES, a += 4 * LANES)                                                  \
                store_codes4(q + i_, codec##_ordinary(c, splat(a) + lanes_),                       \
                             codec##_ordinary(c, splat(a + LANES) + lanes_),                       \
                             codec##_ordinary(c, splat(a + 2 * LANES) + lanes_),                   \
                             codec##_ordinary(c, splat(a + 3 * LANES) + lanes_));                  \
            if (i_ + 4 * LANES <= n) {                                                             \
                store_codes4(q + i_, codec##_vector(c, splat(a) + lanes_),                         \
                             codec##_vector(c, splat(a + LANES) + lanes_),                         \
                             codec##_vector(c, splat(a + 2 * LANES) + lanes_),                     \
                             codec##_vector(c, splat(a + 3 * LANES) + lanes_));                    \
                i_ += 4 * LANES;                                                                   \
            }                                                                                      \
        }                                                                                          \
        for (; i_ + LANES <= n; i_ += LANES)                                                       \
            store_codes(q + i_, codec##_vector(c, splat(first + (uint32_t)i_) + lanes_));          \
        for (; i_ < n; i_++)                                                                       \
            q[i_] = scalar_call;                                                                   \
    } while (0)

/* Each codec's loops, over an array x or the range from first (the other argument unused, so
 * that DISPATCH_CFG calls all four alike). */
ALWAYS_INLINE void bits_array(struct fp8kv_codec_cfg c, const float *x, uint32_t first, size_t n,
                              uint8_t *q)
{
    (void)first;
    ARRAY_LOOP(bits, fp8kv_encode_bits(c, fp8kv_f32_bits(x[i_])));
}
ALWAYS_INLINE void bits_range(struct fp8kv_codec_cfg c, const float *x, uint32_t first, size_t n,
                              uint8_t *q)
{
    (void)x;
    RANGE_LOOP(bits, fp8kv_encode_bits(c, first + (uint32_t)i_));
}
ALWAYS_INLINE void frexp_array(struct fp8kv_codec_cfg c, const float *x, uint32_t first, size_t n,
                               uint8_t *q)
{
    (void)first;
    ARRAY_LOOP(frexp, fp8kv_encode_frexp(c, x[i_]));
}
ALWAYS_INLINE void frexp_range(struct fp8kv_codec_cfg c, const float *x, uint32_t first, size_t n,
                               uint8_t *q)
{
    (void)x;
    RANGE_LOOP(frexp, fp8kv_encode_frexp(c, fp8kv_f32_from_bits(first + (uint32_t)i_)));
}

/* Calls loop(cfg, x, first, n, q) with cfg a constant of the configuration c stands for (its
 * encoding fields: format, saturate, inf_to_nan), so that each configuration's loop is compiled
 * with its constants folded; a configuration outside FP8KV_CODEC_FORMATS gets the loop with c as
 * is. */
#define CFG_CASE(loop, format, sat, inf)                                                           \
    case (format)*4 + (sat)*2 + (inf):                                                             \
        loop((struct fp8kv_codec_cfg){(format), (sat), (inf), 0}, x, first, n, q);                 \
        return;
#define FORMAT_CASES(loop, name, number)                                                           \
    CFG_CASE(loop, number, 0, 0)                                                                   \
    CFG_CASE(loop, number, 0, 1) CFG_CASE(loop, number, 1, 0) CFG_CASE(loop, number, 1, 1)
#define DISPATCH_CFG(loop, c)                                                                      \
    do {                                                                                           \
        switch ((c).format * 4 + ((c).saturate != 0) * 2 + ((c).inf_to_nan != 0)) {                \
            FP8KV_CODEC_FORMATS(FORMAT_CASES, loop)                                                \
        }                                                                                          \
        loop(c, x, first, n, q);                                                                   \
    } while (0)

void ENCODE_BITS(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q)
{
    const uint32_t first = 0;
    DISPATCH_CFG(bits_array, c);
}
void ENCODE_FREXP(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q)
{
    const uint32_t first = 0;
    DISPATCH_CFG(frexp_array, c);
}
void ENCODE_BITS_RANGE(struct fp8kv_codec_cfg c, uint32_t first, size_t n, uint8_t *q)
{
    const float *x = NULL;
    DISPATCH_CFG(bits_range, c);
}
void ENCODE_FREXP_RANGE(struct fp8kv_codec_cfg c, uint32_t first, size_t n, uint8_t *q)
{
    const float *x = NULL;
    DISPATCH_CFG(frexp_range, c);
}
