/* engine_codec.c — an fp8 (OCP e4m3fn) KV-cache codec written the way inference engines write
 * their portable fallback, built as an fp8kv plugin (fp8kv/plugin.h).
 *
 * Store: q = e4m3fn(x / scale), the quotient taken in f32 (one f32 rounding), then rounded
 * to e4m3fn, round-to-nearest-even, with "satfinite" overflow:
 *   - finite magnitudes that round past 448 clamp to +-448 (0x7E / 0xFE); overflow is decided
 *     after rounding, so 464 (the tie between 448 and the unrepresentable 480) gives 448;
 *   - +-Inf clamps to +-448 too (the Inf policy "clamp", as CUDA's satfinite conversion);
 *   - NaN gives 0x7F / 0xFF, keeping the input's sign; +-0 gives 0x00 / 0x80;
 *   - below 2^-6 the e4m3 subnormals, multiples of 2^-9, are rounded to like any other step.
 * Read: y = decode(q) * scale in f32 (decode(q) is exact in f32, so one rounding).
 *
 * frexpf/ldexpf/nearbyintf do the work: frexpf gives the binade of |v|, ldexpf scales |v| so
 * that one e4m3 step of that binade is 1, and nearbyintf rounds to an integer in the current
 * rounding mode, which is round-to-nearest-even unless someone changed it. All scalings are
 * by powers of two inside the f32 range, so they are exact: the only roundings are the f32
 * division and nearbyintf. Build without -ffast-math (it would let the compiler reassociate
 * and drop the NaN and Inf cases).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <fp8kv/plugin.h>

#if defined(__GNUC__)
#define ENGINE_EXPORT __attribute__((visibility("default")))
#else
#define ENGINE_EXPORT
#endif

/* e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; the largest finite is 1.75 * 2^8 = 448
 * (S.1111.110); S.1111.111 is NaN; there is no Inf. */
enum { EXP_BIAS = 7, MANT_BITS = 3, EXP_MIN = -6, EXP_MAX = 8, MANT_MAX_AT_TOP = 6 };
#define CODE_MAX 0x7Eu
#define CODE_NAN 0x7Fu

static uint8_t encode_one(float v)
{
    uint8_t sign = signbit(v) ? 0x80u : 0x00u;
    if (isnan(v))
        return sign | CODE_NAN;
    float a = fabsf(v);
    if (a == 0.0f)
        return sign;
    if (isinf(a))
        return sign | CODE_MAX;

    /* a = m * 2^e with m in [0.5, 1): a lies in the binade [2^(e-1), 2^e). Below the normal
     * range the step stays that of the lowest binade (subnormals). */
    int e;
    (void)frexpf(a, &e);
    int ex = e - 1;
    if (ex < EXP_MIN)
        ex = EXP_MIN;
    if (ex > EXP_MAX + 1) /* far past 448: clamps whatever the rounding */
        return sign | CODE_MAX;

    /* the significand in units of the binade's step, 2^(ex - 3): [8, 16) for a normal,
     * [0, 8) for a subnormal; rounded to nearest even, it may reach 16 (the next binade) */
    int m = (int)nearbyintf(ldexpf(a, MANT_BITS - ex));
    if (m == 2 << MANT_BITS) {
        m = 1 << MANT_BITS;
        ex++;
    }
    if (ex > EXP_MAX || (ex == EXP_MAX && m - (1 << MANT_BITS) > MANT_MAX_AT_TOP))
        return sign | CODE_MAX; /* rounded past 448: satfinite */
    if (m < (1 << MANT_BITS))
        return sign | (uint8_t)m; /* subnormal (exponent field 0); m == 0 underflows to +-0 */
    return sign | (uint8_t)(((ex + EXP_BIAS) << MANT_BITS) | (m - (1 << MANT_BITS)));
}

static float decode_one(uint8_t q)
{
    int field = (q >> MANT_BITS) & 0xF;
    int mant = q & ((1 << MANT_BITS) - 1);
    float mag;
    if ((q & 0x7Fu) == CODE_NAN)
        mag = NAN;
    else if (field == 0)
        mag = ldexpf((float)mant, EXP_MIN - MANT_BITS);
    else
        mag = ldexpf((float)((1 << MANT_BITS) + mant), field - EXP_BIAS - MANT_BITS);
    return (q & 0x80u) ? -mag : mag;
}

static void encode_f32(const float *x, size_t n, float scale, uint8_t *q)
{
    for (size_t i = 0; i < n; i++)
        q[i] = encode_one(x[i] / scale);
}

static void decode_f32(const uint8_t *q, size_t n, float scale, float *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = decode_one(q[i]) * scale;
}

static const fp8kv_codec_v1_t codec = {
    .abi_version = FP8KV_CODEC_ABI_VERSION,
    .name = "engine_codec",
    .format = "e4m3fn",
    .overflow = "satfinite",
    .encode_f32 = encode_f32,
    .decode_f32 = decode_f32,
};

ENGINE_EXPORT const fp8kv_codec_v1_t *fp8kv_codec_v1(void)
{
    return &codec;
}
