/* fp8kv/block_codec.h — a codec of the block-scaled formats (MX and NVFP4, fp8kv/block.h),
 * host and device.
 *
 * A subject under test, not the truth: it states the element and scale facts itself (from the
 * OCP MX v1.0 and NVFP4 definitions), never reading core/block.c's tables or the oracle; only
 * the id enums of fp8kv/block.h (names, not facts) are shared. Every function is `static
 * inline` C (FP8KV_HD) that compiles as C11 on the host and as a device function under HIP or
 * CUDA. One body serves every format, rule and model: the choices arrive in a struct
 * fp8kv_bcodec_cfg.
 *
 *   element rounding:  fp8kv_bcodec_round_grid   RNE or RU of a double to an element grid
 *   scales:            fp8kv_bcodec_mx_scale     E8M0 code of a block's amax (floor/rceil/even)
 *                      fp8kv_bcodec_nv_scale     UE4M3 code of amax / (div G) (rne/ceil)
 *   elements:          fp8kv_bcodec_element      the element code of x under a scale code
 *   blocks:            fp8kv_bcodec_encode_block, fp8kv_bcodec_decode_one
 *
 * Model f32 computes each step the spec (block.h) names as one f32 operation, as written there.
 * Model exact computes in double, one double rounding per quotient, then the grid rounding.
 * Why that double rounding is innocuous (the proof the exact model rests on):
 *   The quotients are q = A / B of an f32 (A: 24-bit integer significand) by a product B of at
 *   most 28 significant bits (6G or 4G: 26 bits; s * G: 4 + 24 bits). Normalize q = r * 2^e,
 *   r in [1, 2). Then r = P / Q with integers P, Q and Q < 2^28 (when B 2^e is an integer, r <
 *   2 gives B 2^e <= A < 2^24; else Q = B). A grid of m mantissa bits (m <= 3 here: e4m3, e2m1)
 *   has its points at multiples of 2^-m and its midpoints at odd multiples of 2^-(m+1) in r's
 *   binade (a subnormal range's grid is coarser, so its points and midpoints are among these).
 *   If r is not such a point, |r - M / 2^(m+1)| = |2^(m+1) P - M Q| / (2^(m+1) Q) >= 2^-(m+29)
 *   >= 2^-32, while the double rounding moves r by at most 2^-53. So RN53(q) lies strictly on
 *   q's side of every midpoint and every grid point, or equals q when q is one: RNE and RU of
 *   RN53(q) are those of q. The doubles stay normal: |q| lies in [2^-300, 2^300].
 *   MX elements need no such argument: x * 2^-X is exact in double (X in [-127, 127]).
 * 4over6 compares the two candidates' decoded blocks' (RN32(e s G)) sums of squared errors
 * exactly (fp8kv_bcodec_sse_compare: 128-bit integers, with the bound that makes them exact). */
#ifndef FP8KV_BLOCK_CODEC_H
#define FP8KV_BLOCK_CODEC_H

#include <stdint.h>

#include "fp8kv/block.h"
#include "fp8kv/codec.h"

/* ---- configuration and facts ---- */

/* The choices of a block codec instance: format (enum fp8kv_block_format_id), rule (enum
 * fp8kv_block_rule, one the format takes), model (enum fp8kv_block_model), and G, NVFP4's f32
 * per-tensor decode scale (finite, > 0; unused by MX). */
struct fp8kv_bcodec_cfg {
    uint8_t format, rule, model;
    float global_scale;
};

/* An element format's facts, as the codec states them. */
struct fp8kv_bcodec_elem {
    int exp_bits, man_bits;
    uint32_t max_code; /* the largest finite magnitude code */
    int fp8;           /* 1: 8-bit (e4m3: 0x7F NaN; e5m2: 0x7C Inf, 0x7D..0x7F NaN) */
};

/* The element of each block format: OCP MX v1.0 (e4m3fn, e5m2, fp6 e3m2 and e2m3, fp4 e2m1;
 * fp6/fp4 have no Inf or NaN) and NVFP4 (e2m1). Also UE4M3, NVFP4's scale (e4m3fn). */
FP8KV_HD struct fp8kv_bcodec_elem fp8kv_bcodec_element_of(int format)
{
    struct fp8kv_bcodec_elem e4m3 = {4, 3, 0x7E, 1}, e5m2 = {5, 2, 0x7B, 1};
    struct fp8kv_bcodec_elem e3m2 = {3, 2, 0x1F, 0}, e2m3 = {2, 3, 0x1F, 0};
    struct fp8kv_bcodec_elem e2m1 = {2, 1, 0x7, 0};
    switch (format) {
    case FP8KV_MXFP8_E4M3: return e4m3;
    case FP8KV_MXFP8_E5M2: return e5m2;
    case FP8KV_MXFP6_E3M2: return e3m2;
    case FP8KV_MXFP6_E2M3: return e2m3;
    default: return e2m1; /* mxfp4, nvfp4 */
    }
}
FP8KV_HD struct fp8kv_bcodec_elem fp8kv_bcodec_ue4m3(void)
{
    return fp8kv_bcodec_element_of(FP8KV_MXFP8_E4M3);
}
/* The bias 2^(exp_bits - 1) - 1; the sign bit, above the exponent and mantissa fields. */
FP8KV_HD int fp8kv_bcodec_bias(struct fp8kv_bcodec_elem e)
{
    return (1 << (e.exp_bits - 1)) - 1;
}
FP8KV_HD uint32_t fp8kv_bcodec_sign_bit(struct fp8kv_bcodec_elem e)
{
    return 1u << (e.exp_bits + e.man_bits);
}
/* emax, the exponent of the largest finite value: the max code's exponent field less the bias. */
FP8KV_HD int fp8kv_bcodec_emax(struct fp8kv_bcodec_elem e)
{
    return (int)(e.max_code >> e.man_bits) - fp8kv_bcodec_bias(e);
}
FP8KV_HD int fp8kv_bcodec_is_nv(int format)
{
    return format == FP8KV_NVFP4;
}
/* Elements per block: 16 (NVFP4), 32 (MX). */
FP8KV_HD int fp8kv_bcodec_block_size(int format)
{
    return fp8kv_bcodec_is_nv(format) ? 16 : 32;
}
/* The scale's NaN code: UE4M3 0x7F, E8M0 0xFF. */
FP8KV_HD uint8_t fp8kv_bcodec_scale_nan(int format)
{
    return fp8kv_bcodec_is_nv(format) ? 0x7F : 0xFF;
}

/* ---- doubles by their bits ---- */

FP8KV_HD uint64_t fp8kv_bcodec_f64_bits(double d)
{
#ifdef FP8KV_DEVICE_PASS
    return (uint64_t)__double_as_longlong(d);
#else
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
#endif
}
FP8KV_HD double fp8kv_bcodec_f64_from_bits(uint64_t b)
{
#ifdef FP8KV_DEVICE_PASS
    return __longlong_as_double((long long)b);
#else
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
#endif
}
/* 2^k for k in [-1022, 1023]. */
FP8KV_HD double fp8kv_bcodec_pow2(int k)
{
    return fp8kv_bcodec_f64_from_bits((uint64_t)(k + 1023) << 52);
}

/* ---- element grids ---- */

/* fp8kv_bcodec_round_grid: the magnitude code of a (a double, >= 0, +Inf allowed) rounded to
 * e's grid (subnormals included) to nearest even (up == 0) or upward (up == 1), then clamped
 * to max_code (SAT). Integer arithmetic on a's bits: the grid exponent is max(E, emin), the
 * bits below the grid's quantum are dropped with the chosen rounding, and the code is
 * ((e' - emin) << m) + n, which carries into the exponent field on its own. */
FP8KV_HD uint32_t fp8kv_bcodec_round_grid(struct fp8kv_bcodec_elem e, double a, int up)
{
    const uint64_t b = fp8kv_bcodec_f64_bits(a) & 0x7FFFFFFFFFFFFFFFull;
    const int m = e.man_bits, emin = 1 - fp8kv_bcodec_bias(e);
    if (b == 0)
        return 0;
    if (b >= 0x7FF0000000000000ull) /* +Inf */
        return e.max_code;
    int E = (int)(b >> 52) - 1023;
    uint64_t sig = (b & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull; /* a = sig 2^(E - 52) */
    if ((b >> 52) == 0)
        return up ? 1u : 0u; /* a double subnormal: far below every grid here */
    if (E > fp8kv_bcodec_emax(e) + 1)
        return e.max_code;
    const int eg = E > emin ? E : emin;
    const int shift = 52 - m + (eg - E); /* >= 49 */
    uint64_t n, rest, half;
    if (shift >= 64) {
        n = 0;
        rest = sig; /* below half a quantum: nonzero */
        half = ~0ull;
    } else {
        n = sig >> shift;
        rest = sig & ((1ull << shift) - 1);
        half = 1ull << (shift - 1);
    }
    if (up)
        n += rest != 0;
    else
        n += (rest > half) | ((rest == half) & (uint64_t)(n & 1));
    const uint64_t code = ((uint64_t)(eg - emin) << m) + n;
    return code > e.max_code ? e.max_code : (uint32_t)code;
}

/* fp8kv_bcodec_encode_value: SAT(RNE_elem(v)) of a double v, sign kept (a negative v rounding
 * to zero gives the -0 code). A NaN v (only model f32's 0 / 0, where RN32(s G) underflowed to
 * zero) gives +0, as the oracle does. */
FP8KV_HD uint8_t fp8kv_bcodec_encode_value(struct fp8kv_bcodec_elem e, double v)
{
    const uint64_t b = fp8kv_bcodec_f64_bits(v);
    const uint32_t sign = (uint32_t)(b >> 63) * fp8kv_bcodec_sign_bit(e);
    if ((b & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull)
        return 0;
    return (uint8_t)(sign | fp8kv_bcodec_round_grid(e, v < 0 ? -v : v, 0));
}

/* fp8kv_bcodec_code_value: the exact value of code c of e as a double (fp8 NaN codes: NaN with
 * c's sign; e5m2's 0x7C: +-Inf). */
FP8KV_HD double fp8kv_bcodec_code_value(struct fp8kv_bcodec_elem e, uint32_t c)
{
    const uint32_t sign_bit = fp8kv_bcodec_sign_bit(e), mag = c & (sign_bit - 1);
    const int m = e.man_bits, field = (int)(mag >> m);
    const double s = (c & sign_bit) ? -1.0 : 1.0;
    if (e.fp8 && mag > e.max_code) {
        const double inf = fp8kv_bcodec_f64_from_bits(0x7FF0000000000000ull);
        if (e.exp_bits == 5 && mag == 0x7C)
            return s * inf;
        return fp8kv_bcodec_f64_from_bits(((uint64_t)(c >> 7) << 63) | 0x7FF8000000000000ull);
    }
    const uint32_t mant = mag & ((1u << m) - 1);
    const int unit = (field ? field : 1) - fp8kv_bcodec_bias(e) - m; /* the quantum's exponent */
    const uint32_t n = field ? (1u << m) | mant : mant;
    return s * (double)n * fp8kv_bcodec_pow2(unit);
}

/* ---- f32 exponents ---- */

/* floor(log2 a) of a nonzero finite f32 magnitude (bits, sign clear), subnormals included. */
FP8KV_HD int fp8kv_bcodec_floor_log2(uint32_t a)
{
    if (a >= 0x00800000u)
        return (int)(a >> 23) - 127;
    int p = 22;
    while (!(a >> p))
        p--;
    return p - 149;
}
/* a's significand with its leading one at bit 23 (subnormals normalized). */
FP8KV_HD uint32_t fp8kv_bcodec_sig24(uint32_t a)
{
    if (a >= 0x00800000u)
        return (a & 0x7FFFFFu) | 0x800000u;
    return a << (23 - (fp8kv_bcodec_floor_log2(a) + 149));
}
FP8KV_HD int fp8kv_bcodec_clamp_x(int x)
{
    return x < -127 ? -127 : x > 127 ? 127 : x;
}

/* ---- scales ---- */

/* fp8kv_bcodec_mx_scale: the E8M0 code (X + 127) of an MX block whose largest magnitude has
 * f32 bits amax (finite, sign ignored) under c's rule and model. */
FP8KV_HD uint8_t fp8kv_bcodec_mx_scale(struct fp8kv_bcodec_cfg c, uint32_t amax)
{
    const struct fp8kv_bcodec_elem e = fp8kv_bcodec_element_of(c.format);
    const int emax = fp8kv_bcodec_emax(e);
    amax &= 0x7FFFFFFFu;
    int X = -127;
    if (amax != 0) {
        const int E = fp8kv_bcodec_floor_log2(amax);
        X = E - emax; /* floor */
        if (c.rule == FP8KV_RULE_RCEIL && c.model == FP8KV_BLOCK_MODEL_EXACT) {
            /* amax = r 2^E, max = M 2^emax: amax <= max 2^X first at X = E - emax when r <= M */
            const double M = fp8kv_bcodec_code_value(e, e.max_code) * fp8kv_bcodec_pow2(-emax);
            const double r = (double)fp8kv_bcodec_sig24(amax) * fp8kv_bcodec_pow2(-23);
            X += r > M;
        } else if (c.rule == FP8KV_RULE_RCEIL) {
            const float q = fp8kv_f32_from_bits(amax) /
                            (float)fp8kv_bcodec_code_value(e, e.max_code); /* RN32 */
            const uint32_t qb = fp8kv_f32_bits(q);
            X = qb == 0 ? -127
                        : fp8kv_bcodec_floor_log2(qb) + (fp8kv_bcodec_sig24(qb) != 0x800000u);
        } else if (c.rule == FP8KV_RULE_EVEN) {
            /* R(amax): 1 + m significant bits, ties away: a carry when the rest is >= half */
            X += fp8kv_bcodec_sig24(amax) + (1u << (22 - e.man_bits)) >= (1u << 24);
        }
    }
    return (uint8_t)(fp8kv_bcodec_clamp_x(X) + 127);
}

/* fp8kv_bcodec_nv_scale: the UE4M3 code of amax (f32 bits, finite) / (div G), div 6 or 4,
 * rounded to nearest even (up == 0) or upward (up == 1) and saturated to 448 (0x7E), under c's
 * model: exact, one rounding of the real quotient (double, see the proof above); f32,
 * q = RN32(RN32(amax / div) / G). */
FP8KV_HD uint8_t fp8kv_bcodec_nv_scale(struct fp8kv_bcodec_cfg c, uint32_t amax, int div, int up)
{
    const float a = fp8kv_f32_from_bits(amax & 0x7FFFFFFFu);
    double q;
    if (c.model == FP8KV_BLOCK_MODEL_EXACT)
        q = (double)a / ((double)div * (double)c.global_scale);
    else
        q = (double)(a / (float)div / c.global_scale);
    return (uint8_t)fp8kv_bcodec_round_grid(fp8kv_bcodec_ue4m3(), q, up);
}

/* ---- elements ---- */

/* fp8kv_bcodec_element: the element code of x (f32, finite) under scale code scale (not NaN):
 * MX SAT(RNE(x 2^-X)), exact in double; NVFP4 s = 0: the zero of x's sign; else model exact
 * SAT(RNE(x / (s G))) (double: s G is exact, the quotient one rounding), model f32
 * SAT(RNE(RN32(x / RN32(s G)))). */
FP8KV_HD uint8_t fp8kv_bcodec_element(struct fp8kv_bcodec_cfg c, uint8_t scale, float x)
{
    const struct fp8kv_bcodec_elem e = fp8kv_bcodec_element_of(c.format);
    if (!fp8kv_bcodec_is_nv(c.format))
        return fp8kv_bcodec_encode_value(e, (double)x * fp8kv_bcodec_pow2(127 - (int)scale));
    const double s = fp8kv_bcodec_code_value(fp8kv_bcodec_ue4m3(), scale);
    if (scale == 0)
        return (uint8_t)((fp8kv_f32_bits(x) >> 31) * fp8kv_bcodec_sign_bit(e));
    if (c.model == FP8KV_BLOCK_MODEL_EXACT)
        return fp8kv_bcodec_encode_value(e, (double)x / (s * (double)c.global_scale));
    const float t = (float)s * c.global_scale; /* RN32(s G) */
    return fp8kv_bcodec_encode_value(e, (double)(x / t));
}

/* ---- decoding ---- */

/* fp8kv_bcodec_decode_one: the f32 bits of element code code under scale code scale: RN32 of
 * the exact product (element 2^X; element s G: at most 2 + 4 + 24 significant bits, exact in
 * double, so the cast is the one rounding), +-Inf past the f32 range; NaN 0x7FC00000 for a
 * NaN scale, with the element's sign for an element NaN. */
FP8KV_HD uint32_t fp8kv_bcodec_decode_one(struct fp8kv_bcodec_cfg c, uint8_t scale, uint8_t code)
{
    const struct fp8kv_bcodec_elem e = fp8kv_bcodec_element_of(c.format);
    if (scale == fp8kv_bcodec_scale_nan(c.format))
        return 0x7FC00000u;
    const double v = fp8kv_bcodec_code_value(e, code);
    if (v != v)
        return 0x7FC00000u | ((uint32_t)(code >> 7) << 31);
    double y;
    if (fp8kv_bcodec_is_nv(c.format))
        y = v * fp8kv_bcodec_code_value(fp8kv_bcodec_ue4m3(), scale) * (double)c.global_scale;
    else
        y = v * fp8kv_bcodec_pow2((int)scale - 127);
    return fp8kv_f32_bits((float)y);
}

/* ---- 4over6: exact squared errors ---- */

/* A 128-bit signed integer (GCC, Clang and nvcc have one; __extension__ keeps -Wpedantic quiet). */
__extension__ typedef __int128 fp8kv_bcodec_i128;

/* An f32 value as +-n 2^k (n < 2^24). */
struct fp8kv_bcodec_dyadic {
    uint64_t n;
    int k;
    int neg;
};
FP8KV_HD struct fp8kv_bcodec_dyadic fp8kv_bcodec_f32_dyadic(uint32_t b)
{
    const uint32_t a = b & 0x7FFFFFFFu;
    struct fp8kv_bcodec_dyadic d = {a >= 0x00800000u ? (a & 0x7FFFFFu) | 0x800000u : a,
                                    (a >= 0x00800000u ? (int)(a >> 23) : 1) - 150, (int)(b >> 31)};
    return d;
}
/* d as a signed integer multiple of 2^k0 (k0 <= d.k for a nonzero d; the caller bounds the
 * shift). A zero is 0 whatever k0 (its exponent may lie below k0, which counts nonzero values
 * only). */
FP8KV_HD fp8kv_bcodec_i128 fp8kv_bcodec_align(uint32_t bits, int k0)
{
    const struct fp8kv_bcodec_dyadic d = fp8kv_bcodec_f32_dyadic(bits);
    if (d.n == 0)
        return 0;
    const fp8kv_bcodec_i128 v = (fp8kv_bcodec_i128)d.n << (d.k - k0);
    return d.neg ? -v : v;
}

/* fp8kv_bcodec_sse_compare: the sign (-1, 0, 1) of SSE_a - SSE_b, the sums over the block of
 * (x_i - a_i)^2 and (x_i - b_i)^2 for decoded blocks a and b (f32 bits, finite or +-Inf: a
 * sum with an infinite term is +Inf, and two infinite sums tie). Exact: SSE_a - SSE_b is the
 * sum of (b_i - a_i)(2 x_i - a_i - b_i) over the i where a_i != b_i, every value there an
 * integer multiple of 2^k0, k0 the smallest f32 exponent among them (k0 >= -149). Bound:
 * where the decoded values differ so do the codes, one of them nonzero, so |x_i| > s G / 4
 * (1 - 2^-23) for that candidate's scale s, while every value is at most 6 max(s4, s6) G
 * (1 + 2^-23); s4 <= 2 s6 when s6 > 0 (a quotient 1.5 times larger rounded to 4 bits, or
 * 2^-9 against 2 * 2^-9 among the UE4M3 subnormals), so every aligned value is below
 * 2^(24 + 8) (f32 subnormals only lower it) and each product below 2^67: 16 of them fit a
 * 128-bit sum. The span is checked anyway; past 2^58 (never reached) a double estimate
 * stands in. */
FP8KV_HD int fp8kv_bcodec_sse_compare(const float *x, const uint32_t *a, const uint32_t *b, int n)
{
    int inf_a = 0, inf_b = 0, k0 = 1 << 20, top = -(1 << 20);
    for (int i = 0; i < n; i++) {
        inf_a |= (a[i] & 0x7FFFFFFFu) == 0x7F800000u;
        inf_b |= (b[i] & 0x7FFFFFFFu) == 0x7F800000u;
        if (a[i] == b[i])
            continue;
        const uint32_t v[3] = {fp8kv_f32_bits(x[i]), a[i], b[i]};
        for (int j = 0; j < 3; j++) {
            const struct fp8kv_bcodec_dyadic d = fp8kv_bcodec_f32_dyadic(v[j]);
            if (d.n == 0)
                continue;
            k0 = d.k < k0 ? d.k : k0;
            top = d.k + 24 > top ? d.k + 24 : top;
        }
    }
    if (inf_a | inf_b)
        return inf_a - inf_b;
    fp8kv_bcodec_i128 sum = 0;
    double estimate = 0;
    for (int i = 0; top >= k0 && i < n; i++) {
        if (a[i] == b[i])
            continue;
        const uint32_t xb = fp8kv_f32_bits(x[i]);
        if (top - k0 <= 58) {
            const fp8kv_bcodec_i128 xi = fp8kv_bcodec_align(xb, k0),
                                    ai = fp8kv_bcodec_align(a[i], k0),
                                    bi = fp8kv_bcodec_align(b[i], k0);
            sum += (bi - ai) * (2 * xi - ai - bi);
        } else {
            const double xv = (double)x[i], av = (double)fp8kv_f32_from_bits(a[i]),
                         bv = (double)fp8kv_f32_from_bits(b[i]);
            estimate += (bv - av) * (2 * xv - av - bv);
        }
    }
    if (top - k0 > 58)
        return (estimate > 0) - (estimate < 0);
    return (sum > 0) - (sum < 0);
}

/* ---- blocks ---- */

/* fp8kv_bcodec_encode_block: the scale code and block_size element codes of the block_size
 * f32 inputs x under c (block.h's encoding). A NaN or Inf input: the scale's NaN code and
 * element codes 0. */
FP8KV_HD void fp8kv_bcodec_encode_block(struct fp8kv_bcodec_cfg c, const float *x, uint8_t *scale,
                                        uint8_t *elems)
{
    const int n = fp8kv_bcodec_block_size(c.format);
    uint32_t amax = 0;
    for (int i = 0; i < n; i++) {
        const uint32_t a = fp8kv_f32_bits(x[i]) & 0x7FFFFFFFu;
        amax = a > amax ? a : amax;
    }
    if (amax >= 0x7F800000u) {
        *scale = fp8kv_bcodec_scale_nan(c.format);
        for (int i = 0; i < n; i++)
            elems[i] = 0;
        return;
    }
    uint8_t s;
    if (!fp8kv_bcodec_is_nv(c.format))
        s = fp8kv_bcodec_mx_scale(c, amax);
    else
        s = fp8kv_bcodec_nv_scale(c, amax, 6, c.rule == FP8KV_RULE_CEIL);
    for (int i = 0; i < n; i++)
        elems[i] = fp8kv_bcodec_element(c, s, x[i]);
    *scale = s;
    if (c.rule != FP8KV_RULE_4OVER6)
        return;
    const uint8_t s4 = fp8kv_bcodec_nv_scale(c, amax, 4, 0);
    uint8_t e4[16];
    uint32_t y6[16], y4[16];
    for (int i = 0; i < n; i++) {
        e4[i] = fp8kv_bcodec_element(c, s4, x[i]);
        y6[i] = fp8kv_bcodec_decode_one(c, s, elems[i]);
        y4[i] = fp8kv_bcodec_decode_one(c, s4, e4[i]);
    }
    if (s4 == s || fp8kv_bcodec_sse_compare(x, y6, y4, n) <= 0)
        return; /* SSE(s6) <= SSE(s4): s6 */
    *scale = s4;
    for (int i = 0; i < n; i++)
        elems[i] = e4[i];
}

#endif
