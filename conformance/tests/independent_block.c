/* independent_block.c — an independent formulation of the block-scaled formats' oracle (see
 * independent_block.h): exact rationals (GMP mpq) against grid tables for the exact steps, the
 * hardware's float operations for the f32 steps, integer bit arithmetic for the E8M0 exponents.
 */
#include "independent_block.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__FAST_MATH__)
#error "independent_block.c needs IEEE float semantics: do not build it with -ffast-math"
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "independent_block.c needs float operations evaluated in float (FLT_EVAL_METHOD 0)"
#endif

/* ---- the formats: OCP MX v1.0 (e4m3, e5m2, fp6, fp4 elements), NVFP4 ------------------------ */

static const struct indep_element elements[FP8KV_ELEMENT_COUNT] = {
    [FP8KV_ELEM_E4M3] = {4, 3, 7, 0x7E, 448.0, 8},
    [FP8KV_ELEM_E5M2] = {5, 2, 15, 0x7B, 57344.0, 15},
    [FP8KV_ELEM_E3M2] = {3, 2, 3, 0x1F, 28.0, 4},
    [FP8KV_ELEM_E2M3] = {2, 3, 1, 0x1F, 7.5, 2},
    [FP8KV_ELEM_E2M1] = {2, 1, 1, 0x07, 6.0, 2},
};

static const struct indep_block blocks[FP8KV_BLOCK_FORMAT_COUNT] = {
    [FP8KV_MXFP8_E4M3] = {FP8KV_ELEM_E4M3, 32, 0}, [FP8KV_MXFP8_E5M2] = {FP8KV_ELEM_E5M2, 32, 0},
    [FP8KV_MXFP6_E3M2] = {FP8KV_ELEM_E3M2, 32, 0}, [FP8KV_MXFP6_E2M3] = {FP8KV_ELEM_E2M3, 32, 0},
    [FP8KV_MXFP4] = {FP8KV_ELEM_E2M1, 32, 0},      [FP8KV_NVFP4] = {FP8KV_ELEM_E2M1, 16, 1},
};

const struct indep_element *indep_element_of(enum fp8kv_element_id id)
{
    return &elements[id];
}

const struct indep_block *indep_block_of(enum fp8kv_block_format_id id)
{
    return &blocks[id];
}

/* The value of magnitude code c <= max_code: subnormal m * 2^(1 - bias - M), normal
 * (1 + m / 2^M) * 2^(e - bias). */
static double magnitude_value(const struct indep_element *f, unsigned c)
{
    const unsigned e = c >> f->man_bits, m = c & ((1u << f->man_bits) - 1u);
    if (e == 0)
        return ldexp((double)m, 1 - f->bias - f->man_bits);
    return ldexp(1.0 + ldexp((double)m, -f->man_bits), (int)e - f->bias);
}

double indep_element_value(enum fp8kv_element_id id, uint8_t c)
{
    const struct indep_element *f = &elements[id];
    const unsigned bits = 1u + (unsigned)f->exp_bits + (unsigned)f->man_bits;
    const unsigned magnitude = c & ((1u << (bits - 1)) - 1u);
    const int negative = (c >> (bits - 1)) & 1;
    double v;
    if (magnitude <= f->max_code)
        v = magnitude_value(f, magnitude);
    else if (id == FP8KV_ELEM_E5M2 && magnitude == 0x7C)
        v = INFINITY;
    else
        v = NAN;
    return negative ? -v : v;
}

/* ---- rounding an exact rational onto a grid ------------------------------------------------- */

#define GRID_MAX 0x7F
/* The grid of a format: val[k] for magnitude codes 0..max_code, mid[k] = (val[k] + val[k+1])/2 */
static struct grid {
    int ready;
    mpq_t val[GRID_MAX], mid[GRID_MAX];
} grids[FP8KV_ELEMENT_COUNT];

static struct grid *grid_of(enum fp8kv_element_id id)
{
    struct grid *g = &grids[id];
    if (!g->ready) {
        const struct indep_element *f = &elements[id];
        for (unsigned k = 0; k <= f->max_code; k++) {
            mpq_init(g->val[k]);
            mpq_set_d(g->val[k], magnitude_value(f, k)); /* exact: dyadic, few bits */
        }
        for (unsigned k = 0; k < f->max_code; k++) {
            mpq_init(g->mid[k]);
            mpq_add(g->mid[k], g->val[k], g->val[k + 1]);
            mpq_div_2exp(g->mid[k], g->mid[k], 1);
        }
        g->ready = 1;
    }
    return g;
}

/* The magnitude code of v >= 0 on id's grid: nearest with ties to the even code (up: the
 * smallest grid value >= v), anything at or above max_value giving max_code. */
static unsigned round_magnitude(enum fp8kv_element_id id, const mpq_t v, int up)
{
    const struct indep_element *f = &elements[id];
    struct grid *g = grid_of(id);
    if (mpq_cmp(v, g->val[f->max_code]) >= 0)
        return f->max_code;
    unsigned lo = 0, hi = f->max_code; /* val[lo] <= v < val[hi] */
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        if (mpq_cmp(g->val[mid], v) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    if (mpq_equal(g->val[lo], v))
        return lo;
    if (up)
        return hi;
    const int c = mpq_cmp(v, g->mid[lo]);
    return c < 0 ? lo : c > 0 ? hi : (lo & 1u) ? hi : lo;
}

uint8_t indep_element_encode(enum fp8kv_element_id id, const mpq_t v, int negative)
{
    const struct indep_element *f = &elements[id];
    const unsigned sign = 1u << (f->exp_bits + f->man_bits);
    mpq_t a;
    mpq_init(a);
    mpq_abs(a, v);
    const unsigned m = round_magnitude(id, a, 0);
    mpq_clear(a);
    return (uint8_t)(negative ? m | sign : m);
}

/* ---- f32 helpers ----------------------------------------------------------------------------- */

static float f32_of(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static uint32_t bits_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* The code of the float q (not NaN) rounded onto id's grid (nearest even, or up). */
static uint8_t encode_float(enum fp8kv_element_id id, float q, int up)
{
    const struct indep_element *f = &elements[id];
    const unsigned sign = signbit(q) ? 1u << (f->exp_bits + f->man_bits) : 0;
    if (isinf(q))
        return (uint8_t)(sign | f->max_code);
    mpq_t v;
    mpq_init(v);
    mpq_set_d(v, fabs((double)q));
    const unsigned m = round_magnitude(id, v, up);
    mpq_clear(v);
    return (uint8_t)(sign | m);
}

/* floor(log2 |x|) of a nonzero finite f32, from its bits. */
static int f32_floor_log2(uint32_t bits)
{
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x00800000u)
        return (int)(magnitude >> 23) - 127;
    int top = 22;
    while (!(magnitude >> top & 1u))
        top--;
    return top - 149;
}

/* ---- scales -----------------------------------------------------------------------------------
 */

/* The E8M0 exponent (before the clamp) of an MX block with amax (bits, nonzero, finite). */
static int mx_exponent(const struct indep_element *f, enum fp8kv_block_rule rule,
                       enum fp8kv_block_model model, uint32_t amax_bits)
{
    const float amax = f32_of(amax_bits);
    if (rule == FP8KV_RULE_FLOOR)
        return f32_floor_log2(amax_bits) - f->emax;
    if (rule == FP8KV_RULE_EVEN) {
        /* torchao's EVEN: add half an ulp of a (1 + M)-bit significand to the bits (a carry
         * into the exponent is the rounding up to the next binade), keep the exponent */
        if (amax_bits < 0x00800000u) /* subnormal: X is far below -127 either way */
            return f32_floor_log2(amax_bits) - f->emax;
        const uint32_t rounded = amax_bits + (1u << (22 - f->man_bits));
        return (int)(rounded >> 23) - 127 - f->emax;
    }
    if (model == FP8KV_BLOCK_MODEL_F32) { /* rceil on the float quotient */
        const float q = amax / (float)f->max_value;
        if (q == 0.0f)
            return -127;
        int e;
        const float m = frexpf(q, &e); /* q = m 2^e, m in [1/2, 1) */
        return m == 0.5f ? e - 1 : e;
    }
    /* rceil exact: from a double estimate, then exact comparisons amax <= max 2^X */
    int x = (int)ceil(log2((double)amax / f->max_value));
    mpq_t a, b;
    mpq_inits(a, b, NULL);
    mpq_set_d(a, (double)amax);
    for (;;) {
        mpq_set_d(b, f->max_value);
        if (x >= 0)
            mpq_mul_2exp(b, b, (mp_bitcnt_t)x);
        else
            mpq_div_2exp(b, b, (mp_bitcnt_t)-x);
        if (mpq_cmp(a, b) > 0) {
            x++;
            continue;
        }
        mpq_div_2exp(b, b, 1); /* max 2^(x-1) */
        if (mpq_cmp(a, b) <= 0) {
            x--;
            continue;
        }
        break;
    }
    mpq_clears(a, b, NULL);
    return x;
}

/* The UE4M3 code of amax / (divisor G), rounded nearest-even or up, saturated. */
static uint8_t nv_scale(enum fp8kv_block_model model, uint32_t g_bits, uint32_t amax_bits,
                        int divisor, int up)
{
    const float amax = f32_of(amax_bits), g = f32_of(g_bits);
    if (model == FP8KV_BLOCK_MODEL_F32) {
        const float d = amax / (float)divisor;
        const float q = d / g;
        return encode_float(FP8KV_ELEM_E4M3, q, up);
    }
    mpq_t v, den;
    mpq_inits(v, den, NULL);
    mpq_set_d(v, (double)amax);
    mpq_set_d(den, (double)g);
    mpz_mul_ui(mpq_numref(den), mpq_numref(den), (unsigned long)divisor);
    mpq_canonicalize(den);
    mpq_div(v, v, den);
    const uint8_t code = (uint8_t)round_magnitude(FP8KV_ELEM_E4M3, v, up);
    mpq_clears(v, den, NULL);
    return code;
}

uint8_t indep_block_scale(enum fp8kv_block_format_id id, enum fp8kv_block_rule rule,
                          enum fp8kv_block_model model, uint32_t g_bits, uint32_t amax_bits)
{
    const struct indep_block *b = &blocks[id];
    amax_bits &= 0x7FFFFFFFu;
    if (b->nvfp4)
        return nv_scale(model, g_bits, amax_bits, 6, rule == FP8KV_RULE_CEIL);
    if (amax_bits == 0)
        return 0;
    int x = mx_exponent(&elements[b->element], rule, model, amax_bits);
    x = x < -127 ? -127 : x > 127 ? 127 : x;
    return (uint8_t)(x + 127);
}

/* ---- elements, decode --------------------------------------------------------------------------
 */

uint8_t indep_block_element(enum fp8kv_block_format_id id, enum fp8kv_block_model model,
                            uint32_t g_bits, uint8_t scale, uint32_t x_bits)
{
    const struct indep_block *b = &blocks[id];
    const float x = f32_of(x_bits);
    const int negative = (x_bits >> 31) != 0;
    if (b->nvfp4 && scale == 0) { /* s = 0: the zero of x's sign */
        const struct indep_element *f = &elements[b->element];
        return (uint8_t)(negative ? 1u << (f->exp_bits + f->man_bits) : 0);
    }
    mpq_t v;
    mpq_init(v);
    uint8_t code;
    if (!b->nvfp4) {
        const int e = (int)scale - 127;
        mpq_set_d(v, (double)x);
        if (e >= 0)
            mpq_div_2exp(v, v, (mp_bitcnt_t)e);
        else
            mpq_mul_2exp(v, v, (mp_bitcnt_t)-e);
        code = indep_element_encode(b->element, v, negative);
    } else if (model == FP8KV_BLOCK_MODEL_F32) {
        const float t = (float)indep_element_value(FP8KV_ELEM_E4M3, scale) * f32_of(g_bits);
        code = encode_float(b->element, x / t, 0);
    } else {
        mpq_t sg;
        mpq_init(sg);
        mpq_set_d(sg, indep_element_value(FP8KV_ELEM_E4M3, scale));
        mpq_set_d(v, (double)f32_of(g_bits));
        mpq_mul(sg, sg, v);
        mpq_set_d(v, (double)x);
        mpq_div(v, v, sg);
        code = indep_element_encode(b->element, v, negative);
        mpq_clear(sg);
    }
    mpq_clear(v);
    return code;
}

uint32_t indep_block_decode_one(enum fp8kv_block_format_id id, uint32_t g_bits, uint8_t scale,
                                uint8_t c)
{
    const struct indep_block *b = &blocks[id];
    if (scale == (b->nvfp4 ? 0x7F : 0xFF))
        return 0x7FC00000u;
    const double e = indep_element_value(b->element, c);
    if (isnan(e))
        return 0x7FC00000u | (signbit(e) ? 0x80000000u : 0);
    if (!b->nvfp4)
        return bits_of(ldexpf((float)e, (int)scale - 127)); /* exact or overflowing to Inf */
    const float es = (float)e * (float)indep_element_value(FP8KV_ELEM_E4M3, scale); /* exact */
    return bits_of(es * f32_of(g_bits));                                            /* RN32 */
}

/* ---- whole blocks ------------------------------------------------------------------------------
 */

/* The exact sum of squared errors of the decoded block against x into sse; returns 1 when a
 * decoded value overflowed (the sum is then infinite and sse unset). */
static int block_sse(enum fp8kv_block_format_id id, uint32_t g_bits, const uint32_t *x,
                     uint8_t scale, const uint8_t *codes, mpq_t sse)
{
    mpq_t d, y;
    mpq_inits(d, y, NULL);
    mpq_set_ui(sse, 0, 1);
    int infinite = 0;
    for (int i = 0; i < blocks[id].block_size && !infinite; i++) {
        const float yf = f32_of(indep_block_decode_one(id, g_bits, scale, codes[i]));
        if (isinf(yf)) {
            infinite = 1;
            break;
        }
        mpq_set_d(d, (double)f32_of(x[i]));
        mpq_set_d(y, (double)yf);
        mpq_sub(d, d, y);
        mpq_mul(d, d, d);
        mpq_add(sse, sse, d);
    }
    mpq_clears(d, y, NULL);
    return infinite;
}

void indep_block_encode(enum fp8kv_block_format_id id, enum fp8kv_block_rule rule,
                        enum fp8kv_block_model model, uint32_t g_bits, const uint32_t *x,
                        uint8_t *scale, uint8_t *codes, int *cmp)
{
    const struct indep_block *b = &blocks[id];
    if (cmp)
        *cmp = 0;
    float amax = 0.0f;
    for (int i = 0; i < b->block_size; i++) {
        const float v = f32_of(x[i]);
        if (!isfinite(v)) {
            *scale = b->nvfp4 ? 0x7F : 0xFF;
            memset(codes, 0, (size_t)b->block_size);
            return;
        }
        amax = fabsf(v) > amax ? fabsf(v) : amax;
    }
    *scale = indep_block_scale(id, rule, model, g_bits, bits_of(amax));
    for (int i = 0; i < b->block_size; i++)
        codes[i] = indep_block_element(id, model, g_bits, *scale, x[i]);
    if (rule != FP8KV_RULE_4OVER6)
        return;
    const uint8_t s4 = nv_scale(model, g_bits, bits_of(amax), 4, 0);
    uint8_t codes4[FP8KV_BLOCK_MAX];
    for (int i = 0; i < b->block_size; i++)
        codes4[i] = indep_block_element(id, model, g_bits, s4, x[i]);
    mpq_t sse6, sse4;
    mpq_inits(sse6, sse4, NULL);
    const int inf6 = block_sse(id, g_bits, x, *scale, codes, sse6);
    const int inf4 = block_sse(id, g_bits, x, s4, codes4, sse4);
    const int c = inf6 && inf4 ? 0 : inf4 ? 1 : inf6 ? -1 : mpq_cmp(sse4, sse6);
    mpq_clears(sse6, sse4, NULL);
    if (cmp)
        *cmp = c < 0 ? -1 : c > 0;
    if (c < 0) {
        *scale = s4;
        memcpy(codes, codes4, (size_t)b->block_size);
    }
}
