/* engine_block.c — an MXFP4 / NVFP4 block codec written the way inference engines write their
 * portable fallback (comparison ladders, frexpf/ldexpf, f32 arithmetic), built as an fp8kv
 * block-codec plugin (fp8kv/block_plugin.h). ENGINE_BLOCK_VARIANT picks what it claims:
 *   ENGINE_BLOCK_MXFP4        mxfp4, floor, exact   X = floor(log2 amax) - 2 (emax of e2m1)
 *   ENGINE_BLOCK_MXFP4_RCEIL  mxfp4, rceil, f32     X = ceil(log2(RN32(amax / 6)))
 *   ENGINE_BLOCK_NVFP4        nvfp4, rne, f32       s = e4m3(RN32(RN32(amax / 6) / G)) <= 448
 * Elements: e2m1 of v, v = x * 2^-X (MX, exact) or RN32(x / RN32(s G)) (NVFP4), rounded to
 * nearest even on the grid 0, 0.5, 1, 1.5, 2, 3, 4, 6 and saturated to 6: the ladder below
 * compares |v| with the midpoints, strictly (>) where the lower neighbour has the even
 * mantissa and inclusively (>=) where the upper one has. A block with a NaN or Inf gets the
 * NaN scale (E8M0 0xFF, UE4M3 0x7F) and zero elements. Read: element * 2^X (ldexpf: one
 * rounding) or (element * s) * G (the first product exact: one rounding).
 * Build without -ffast-math and with -ffp-contract=off. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <fp8kv/block_plugin.h>

#if defined(__GNUC__)
#define ENGINE_EXPORT __attribute__((visibility("default")))
#else
#define ENGINE_EXPORT
#endif

#define ENGINE_BLOCK_MXFP4 0
#define ENGINE_BLOCK_MXFP4_RCEIL 1
#define ENGINE_BLOCK_NVFP4 2
#ifndef ENGINE_BLOCK_VARIANT
#define ENGINE_BLOCK_VARIANT ENGINE_BLOCK_MXFP4
#endif
#define NV (ENGINE_BLOCK_VARIANT == ENGINE_BLOCK_NVFP4)
#define BLOCK (NV ? 16 : 32)

/* Hooks a test build redefines to plant a fault (conformance/plugins/block_plugin.c). */
#ifndef ENGINE_E2M1_TIES_AWAY
#define ENGINE_E2M1_TIES_AWAY 0 /* 1: every tie rounds away from zero */
#endif
#ifndef ENGINE_NV_POW2_SCALE
#define ENGINE_NV_POW2_SCALE 0 /* 1: NVFP4's scale a power of two, MX-style */
#endif
#ifndef ENGINE_NV_SCALE_UNSATURATED
#define ENGINE_NV_SCALE_UNSATURATED 0 /* 1: a block scale past 448 is not clamped */
#endif
#ifndef ENGINE_RCEIL_AS_FLOOR
#define ENGINE_RCEIL_AS_FLOOR 0 /* 1: rceil claimed, floor computed */
#endif

static float bits_to_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* e2m1 magnitude code of |v|: how many midpoints |v| has passed (ties to the even code). */
static uint8_t e2m1_encode(float v)
{
    const float a = fabsf(v);
    const int away = ENGINE_E2M1_TIES_AWAY;
    int code = (away ? a >= 0.25f : a > 0.25f) + (a >= 0.75f) + (away ? a >= 1.25f : a > 1.25f) +
               (a >= 1.75f) + (away ? a >= 2.5f : a > 2.5f) + (a >= 3.5f) +
               (away ? a >= 5.0f : a > 5.0f);
    if (a != a)
        code = 0;
    return (uint8_t)((signbit(v) ? 8 : 0) | code);
}

static float e2m1_value(uint8_t code)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    return (code & 8) ? -mag[code & 7] : mag[code & 7];
}

/* ---- MX: the E8M0 exponent ---- */

static int mx_exponent(float amax)
{
    int e;
    if (amax == 0.0f)
        return -127;
    if (ENGINE_BLOCK_VARIANT == ENGINE_BLOCK_MXFP4_RCEIL && !ENGINE_RCEIL_AS_FLOOR) {
        const float q = amax / 6.0f;
        if (q == 0.0f)
            return -127;
        const float m = frexpf(q, &e); /* q = m 2^e, m in [0.5, 1) */
        return m == 0.5f ? e - 1 : e;  /* ceil(log2 q) */
    }
    frexpf(amax, &e);
    return e - 1 - 2; /* floor(log2 amax) - emax */
}

/* ---- NVFP4: the UE4M3 scale ---- */

/* The e4m3 code of q >= 0 rounded to nearest even (subnormals: multiples of 2^-9), saturated
 * to 448 (0x7E) unless the fault is planted. */
static uint8_t ue4m3_encode(float q)
{
    int e;
    if (!(q > 0.0f))
        return 0;
    if (q >= 464.0f && !ENGINE_NV_SCALE_UNSATURATED) /* 464 is the tie 448 | 480: even 448 */
        return 0x7E;
    if (q >= 496.0f) /* unsaturated: 480 (0x7F, the NaN code) and beyond */
        return 0x7F;
    frexpf(q, &e);
    e = e - 1 < -6 ? -6 : e - 1;                  /* the binade, subnormals in the lowest */
    const float n = nearbyintf(ldexpf(q, 3 - e)); /* in units of 2^(e-3): 8 .. 16 or 0 .. 8 */
    int field = e + 7, man = (int)n - 8;
    if (n < 8.0f) {
        field = 0;
        man = (int)n;
    } /* subnormal */
    if (n >= 16.0f) {
        field++;
        man = 0;
    } /* the carry into the next binade */
    return (uint8_t)(field << 3 | man);
}

static float ue4m3_value(uint8_t code)
{
    const int field = code >> 3, man = code & 7;
    return field ? ldexpf(1.0f + man / 8.0f, field - 7) : ldexpf((float)man, -9);
}

static uint8_t nv_scale(float amax, float G)
{
    const float q = amax / 6.0f / G;
    if (ENGINE_NV_POW2_SCALE) {
        int e;
        if (q == 0.0f)
            return 0;
        const float m = frexpf(q, &e);
        return ue4m3_encode(ldexpf(1.0f, m == 0.5f ? e - 1 : e)); /* 2^ceil(log2 q) */
    }
    return ue4m3_encode(q);
}

/* ---- the plugin ---- */

static void encode(const float *x, size_t nblocks, float G, uint8_t *scales, uint8_t *elements)
{
    for (size_t b = 0; b < nblocks; b++) {
        const float *xb = x + b * BLOCK;
        uint8_t *q = elements + b * BLOCK;
        float amax = 0.0f;
        int finite = 1;
        for (int i = 0; i < BLOCK; i++) {
            finite &= isfinite(xb[i]) != 0;
            amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
        }
        if (!finite) {
            scales[b] = NV ? 0x7F : 0xFF;
            memset(q, 0, BLOCK);
            continue;
        }
        if (NV) {
            const uint8_t s = nv_scale(amax, G);
            const float t = ue4m3_value(s) * G;
            scales[b] = s;
            for (int i = 0; i < BLOCK; i++)
                q[i] = s == 0 ? (uint8_t)(signbit(xb[i]) ? 8 : 0) : e2m1_encode(xb[i] / t);
        } else {
            int X = mx_exponent(amax);
            X = X < -127 ? -127 : X > 127 ? 127 : X;
            scales[b] = (uint8_t)(X + 127);
            for (int i = 0; i < BLOCK; i++) /* x 2^-X in two exact halves (X may be -127) */
                q[i] = e2m1_encode(ldexpf(ldexpf(xb[i], -X / 2), -X + X / 2));
        }
    }
}

static void decode(const uint8_t *scales, const uint8_t *elements, size_t nblocks, float G,
                   float *y)
{
    for (size_t b = 0; b < nblocks; b++)
        for (int i = 0; i < BLOCK; i++) {
            const uint8_t s = scales[b], c = elements[b * BLOCK + i];
            if (s == (NV ? 0x7F : 0xFF))
                y[b * BLOCK + i] = bits_to_float(0x7FC00000u);
            else if (NV)
                y[b * BLOCK + i] = e2m1_value(c) * ue4m3_value(s) * G;
            else
                y[b * BLOCK + i] = ldexpf(e2m1_value(c), (int)s - 127);
        }
}

static const struct fp8kv_block_codec_v1 codec = {
    FP8KV_BLOCK_CODEC_ABI_VERSION,
    "engine-block",
    NV ? "nvfp4" : "mxfp4",
    NV                                                 ? "rne"
    : ENGINE_BLOCK_VARIANT == ENGINE_BLOCK_MXFP4_RCEIL ? "rceil"
                                                       : "floor",
    ENGINE_BLOCK_VARIANT == ENGINE_BLOCK_MXFP4 ? "exact" : "f32",
    encode,
    decode,
};

ENGINE_EXPORT const struct fp8kv_block_codec_v1 *fp8kv_block_codec_v1(void)
{
    return &codec;
}
