/* independent.c — an independent formulation of the exact fp8 oracle (see independent.h).
 *
 * Every positive fp8 value, and the first value above max the format would have with an
 * unbounded exponent (480 for e4m3fn, 256 for e4m3fnuz, 65536 for e5m2 and e5m2fnuz), is an
 * integer in units of 2^-17 (the e5m2fnuz subnormal quantum, the smallest of the four); the
 * midpoint of two neighbours is then an integer in units of 2^-18. An exact positive value
 * v = a/b (a >= 0, b > 0 integers) gets the code magnitude
 *     r = #{midpoints < v}, and at v == a midpoint, the even one of its two neighbours,
 * where a code is even when its bit 0 is 0 (480 counts as code 0x7F, odd; 256 as 0x80, even;
 * 65536 as 0x7C, even, in e5m2). r = max_code + 1 is an overflow. Comparisons are exact:
 * a * 2^18 against mid * b, in mpz.
 *
 * The RN32 and RN16 steps of the scale models are the hardware's IEEE operations: float
 * division and multiplication (SSE, no excess precision) and the conversion to _Float16 (or,
 * where the compiler has no _Float16, the F16C conversion instruction).
 */
#include "independent.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmp.h>

#if !defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <immintrin.h>
#endif

#if defined(__FAST_MATH__)
#error "independent.c needs IEEE float semantics: do not build it with -ffast-math"
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "independent.c needs float operations evaluated in float (FLT_EVAL_METHOD 0)"
#endif

/* ---- the hardware's RN16 ------------------------------------------------------------------- */

#if defined(__FLT16_MAX__)
/* _Float16 (GCC 12+ on x86-64): conversions from float are correctly rounded (libgcc or
 * AVX512-FP16), overflowing to Inf. */
static float rn16(float x)
{
    volatile _Float16 h = (_Float16)x;
    return (float)h;
}

float indep_f16_to_f32(uint16_t bits)
{
    _Float16 h;
    memcpy(&h, &bits, sizeof h);
    return (float)h;
}
#elif defined(__x86_64__) || defined(__i386__)
/* No _Float16 (clang < 15 on x86): the F16C instructions, VCVTPS2PH with RNE rounding
 * (overflow to Inf) and VCVTPH2PS. */
static void need_f16c(void)
{
    static int checked;
    if (checked)
        return;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C)) {
        fprintf(stderr, "independent.c: this CPU has no F16C and the compiler no _Float16\n");
        abort();
    }
    checked = 1;
}

__attribute__((target("f16c"))) static float rn16_f16c(float x)
{
    unsigned short h = (unsigned short)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
    return _cvtsh_ss(h);
}

__attribute__((target("f16c"))) static float widen_f16c(uint16_t bits)
{
    return _cvtsh_ss(bits);
}

static float rn16(float x)
{
    need_f16c();
    return rn16_f16c(x);
}

float indep_f16_to_f32(uint16_t bits)
{
    need_f16c();
    return widen_f16c(bits);
}
#else
#error "independent.c needs _Float16 or x86 F16C for the RN16 step"
#endif

/* ---- the formats, from docs/DESIGN.md §1 ----------------------------------------------------- */

static const struct indep_format formats[FP8KV_FORMAT_COUNT] = {
    [FP8KV_E4M3FN] = {.exp_bits = 4,
                      .man_bits = 3,
                      .bias = 7,
                      .max_code = 0x7E,
                      .nan_code = 0x7F,
                      .first_nan = 0x7F,
                      .nan_has_sign = 1,
                      .has_negative_zero = 1},
    [FP8KV_E4M3FNUZ] =
        {.exp_bits = 4, .man_bits = 3, .bias = 8, .max_code = 0x7F, .nan_code = 0x80},
    [FP8KV_E5M2] = {.exp_bits = 5,
                    .man_bits = 2,
                    .bias = 15,
                    .max_code = 0x7B,
                    .nan_code = 0x7F,
                    .first_nan = 0x7D,
                    .nan_has_sign = 1,
                    .has_negative_zero = 1,
                    .has_inf = 1,
                    .inf_code = 0x7C},
    [FP8KV_E5M2FNUZ] =
        {.exp_bits = 5, .man_bits = 2, .bias = 16, .max_code = 0x7F, .nan_code = 0x80},
};

const struct indep_format *indep_format_of(enum fp8kv_format_id id)
{
    return &formats[id];
}

enum { VAL_SHIFT = 17, MID_SHIFT = VAL_SHIFT + 1, MAX_ENTRIES = 0x81 };

/* The value tables of one format: val[c] for c = 0 .. max_code + 1 in units of 2^-17, and
 * mid[k] = val[k] + val[k+1] (the midpoint in units of 2^-18) for k = 0 .. max_code. */
struct table {
    int ready;
    int n_codes; /* max_code + 2 */
    int64_t val[MAX_ENTRIES + 1];
    int64_t mid[MAX_ENTRIES];
};

static struct table tables[FP8KV_FORMAT_COUNT];

/* code_value: the value of the positive code c (exponent field unbounded, so c = max_code + 1
 * gives the first unrepresentable value) in units of 2^-17. With M mantissa bits, subnormals
 * (field 0) are m * 2^(1 - bias - M); normals (2^M + m) * 2^(e - bias - M). */
static int64_t code_value(const struct indep_format *f, int c)
{
    const int M = f->man_bits;
    int e = c >> M, m = c & ((1 << M) - 1);
    if (e == 0)
        return (int64_t)m << (VAL_SHIFT + 1 - f->bias - M);
    return (int64_t)((1 << M) + m) << (VAL_SHIFT + e - f->bias - M);
}

static const struct table *table_of(enum fp8kv_format_id id)
{
    struct table *t = &tables[id];
    if (!t->ready) {
        const struct indep_format *f = &formats[id];
        t->n_codes = f->max_code + 2;
        for (int c = 0; c < t->n_codes; c++)
            t->val[c] = code_value(f, c);
        for (int k = 0; k + 1 < t->n_codes; k++)
            t->mid[k] = t->val[k] + t->val[k + 1];
        t->ready = 1;
    }
    return t;
}

/* ---- rounding an exact rational ------------------------------------------------------------ */

/* Scratch integers, initialized once and kept (their limbs are reused from call to call; the
 * functions here are not reentrant, which the single-threaded test processes do not need). */
static struct {
    int ready;
    mpz_t a, b, a12, tmp;
} scratch;

static void scratch_init(void)
{
    if (!scratch.ready) {
        mpz_inits(scratch.a, scratch.b, scratch.a12, scratch.tmp, NULL);
        scratch.ready = 1;
    }
}

/* cmp_mid: the sign of a/b - mid * 2^-12, given a12 = a * 2^12 (b > 0). */
static int cmp_mid(const mpz_t a12, const mpz_t b, int64_t mid, mpz_t tmp)
{
    mpz_set_si(tmp, (long)mid);
    mpz_mul(tmp, tmp, b);
    return mpz_cmp(a12, tmp);
}

/* round_magnitude: the code magnitude 0 .. max_code + 1 of the exact value a/b >= 0. */
static int round_magnitude(enum fp8kv_format_id id, const mpz_t a, const mpz_t b)
{
    const struct table *t = table_of(id);
    int n_mid = t->n_codes - 1;
    mpz_ptr a12 = scratch.a12, tmp = scratch.tmp;
    mpz_mul_2exp(a12, a, MID_SHIFT);
    /* lo = number of midpoints strictly below a/b (midpoints increase with k) */
    int lo = 0, hi = n_mid;
    while (lo < hi) {
        int k = lo + (hi - lo) / 2;
        if (cmp_mid(a12, b, t->mid[k], tmp) > 0)
            lo = k + 1;
        else
            hi = k;
    }
    int r = lo;
    if (lo < n_mid && cmp_mid(a12, b, t->mid[lo], tmp) == 0)
        r = (lo & 1) == 0 ? lo : lo + 1; /* tie between lo and lo + 1: the even code */
    return r;
}

/* ---- codes --------------------------------------------------------------------------------- */

static uint8_t nan_code(const struct indep_format *f, int negative)
{
    return (uint8_t)(f->nan_has_sign && negative ? f->nan_code | 0x80 : f->nan_code);
}

/* overflow_code: the code of a finite value that rounds above max: ±max, ±Inf or NaN. */
static uint8_t overflow_code(const struct fp8kv_profile *p, int negative)
{
    const struct indep_format *f = &formats[p->format->id];
    const uint8_t sign = negative ? 0x80 : 0;
    if (p->overflow == FP8KV_OVERFLOW_SATFINITE)
        return (uint8_t)(f->max_code | sign);
    if (p->overflow == FP8KV_OVERFLOW_INF && f->has_inf)
        return (uint8_t)(f->inf_code | sign);
    return nan_code(f, negative);
}

/* inf_code: the code of ±Inf: ±max when clamped, ±Inf when kept, else NaN. */
static uint8_t inf_code(const struct fp8kv_profile *p, int negative)
{
    const struct indep_format *f = &formats[p->format->id];
    const uint8_t sign = negative ? 0x80 : 0;
    if (p->overflow == FP8KV_OVERFLOW_SATFINITE && p->inf == FP8KV_INF_CLAMP)
        return (uint8_t)(f->max_code | sign);
    if ((p->overflow == FP8KV_OVERFLOW_INF || p->inf == FP8KV_INF_INF) && f->has_inf)
        return (uint8_t)(f->inf_code | sign);
    return nan_code(f, negative);
}

/* encode_rational: the code of the finite value (-1)^negative * a/b (a >= 0, b > 0). */
static uint8_t encode_rational(const struct fp8kv_profile *p, int negative, const mpz_t a,
                               const mpz_t b)
{
    const struct indep_format *f = &formats[p->format->id];
    int r = round_magnitude(p->format->id, a, b);
    if (r > f->max_code)
        return overflow_code(p, negative);
    if (r == 0)
        return (uint8_t)(f->has_negative_zero && negative ? 0x80 : 0x00);
    return (uint8_t)(r | (negative ? 0x80 : 0));
}

/* ---- f32 bits ------------------------------------------------------------------------------ */

enum kind { K_ZERO, K_FINITE, K_INF, K_NAN };

/* An f32 unpacked: (-1)^neg * m * 2^e, m < 2^24. */
struct f32_parts {
    enum kind kind;
    int neg;
    uint32_t m;
    int e;
};

static struct f32_parts unpack(uint32_t bits)
{
    struct f32_parts u = {.neg = (int)(bits >> 31)};
    uint32_t field = (bits >> 23) & 0xFF, frac = bits & 0x7FFFFF;
    if (field == 0xFF) {
        u.kind = frac ? K_NAN : K_INF;
    } else if (field == 0) {
        u.kind = frac ? K_FINITE : K_ZERO;
        u.m = frac;
        u.e = -149;
    } else {
        u.kind = K_FINITE;
        u.m = frac | 0x800000u;
        u.e = (int)field - 150;
    }
    return u;
}

static float from_bits(uint32_t bits)
{
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static uint32_t to_bits(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

/* set_scaled: z = m * 2^max(0, e) (the numerator or denominator part of m * 2^e). */
static void set_scaled(mpz_t z, uint32_t m, int e)
{
    mpz_set_ui(z, m);
    if (e > 0)
        mpz_mul_2exp(z, z, (mp_bitcnt_t)e);
}

uint8_t indep_encode_f32(const struct fp8kv_profile *p, uint32_t x_bits)
{
    const struct indep_format *f = &formats[p->format->id];
    struct f32_parts x = unpack(x_bits);
    switch (x.kind) {
    case K_NAN: return nan_code(f, x.neg);
    case K_INF: return inf_code(p, x.neg);
    case K_ZERO: return (uint8_t)(f->has_negative_zero && x.neg ? 0x80 : 0x00);
    case K_FINITE: break;
    }
    scratch_init();
    set_scaled(scratch.a, x.m, x.e);
    set_scaled(scratch.b, 1, -x.e);
    return encode_rational(p, x.neg, scratch.a, scratch.b);
}

/* ---- scale models -------------------------------------------------------------------------- */

/* store_exact: RNE8 of the real quotient x / s (neither is NaN). */
static uint8_t store_exact(const struct fp8kv_profile *p, struct f32_parts x, struct f32_parts s)
{
    const struct indep_format *f = &formats[p->format->id];
    int neg = x.neg ^ s.neg;
    int x_zero = x.kind == K_ZERO, s_zero = s.kind == K_ZERO;
    int x_inf = x.kind == K_INF, s_inf = s.kind == K_INF;
    if ((x_zero && s_zero) || (x_inf && s_inf))
        return nan_code(f, 0); /* invalid: 0/0, Inf/Inf */
    if (x_inf || s_zero)
        return inf_code(p, neg); /* Inf / finite, nonzero / 0 */
    if (x_zero || s_inf)
        return (uint8_t)(f->has_negative_zero && neg ? 0x80 : 0x00);
    /* x / s = (mx / ms) * 2^(ex - es) */
    int d = x.e - s.e;
    scratch_init();
    set_scaled(scratch.a, x.m, d);
    set_scaled(scratch.b, s.m, -d);
    return encode_rational(p, neg, scratch.a, scratch.b);
}

uint8_t indep_store(const struct fp8kv_profile *p, enum fp8kv_scale_model m, uint32_t x_bits,
                    uint32_t s_bits)
{
    const struct indep_format *f = &formats[p->format->id];
    struct f32_parts x = unpack(x_bits), s = unpack(s_bits);
    if (x.kind == K_NAN)
        return nan_code(f, x.neg);
    if (s.kind == K_NAN)
        return nan_code(f, s.neg);
    if (m == FP8KV_MODEL_EXACT)
        return store_exact(p, x, s);

    /* The hardware rounds; volatile keeps every step a real IEEE operation at run time. */
    volatile float xv = from_bits(x_bits), sv = from_bits(s_bits);
    volatile float q;
    if (m == FP8KV_MODEL_F32_MUL_RECIP) {
        volatile float r = 1.0f / sv; /* RN32(1 / s) */
        q = xv * r;                   /* RN32(x * r) */
    } else {
        q = xv / sv; /* RN32(x / s) */
        if (m == FP8KV_MODEL_F16_DIV && !isnan(q))
            q = rn16(q); /* RN16, overflow to Inf; back to f32 exactly */
    }
    float qv = q;
    if (isnan(qv))
        return nan_code(f, 0); /* invalid operation; the hardware's NaN sign is not used */
    return indep_encode_f32(p, to_bits(qv));
}

uint32_t indep_row_scale(enum fp8kv_format_id id, const uint32_t *row, int n)
{
    const struct indep_format *f = &formats[id];
    /* the largest finite value: max code's mantissa bits and its exponent field */
    const int one = 1 << f->man_bits;
    const float max = ldexpf(1.0f + (float)(f->max_code & (one - 1)) / (float)one,
                             (f->max_code >> f->man_bits) - f->bias);
    volatile float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float v = fabsf(from_bits(row[i]));
        if (isfinite(v) && v > amax)
            amax = v;
    }
    volatile float s = amax / max;
    return s > 0.0f ? to_bits(s) : 0x3F800000u;
}

/* ---- input classes ------------------------------------------------------------------------ */

/* cmp_units: the sign of |x| - u * 2^-MID_SHIFT for the finite nonzero x (u >= 0). */
static int cmp_units(struct f32_parts x, int64_t u)
{
    scratch_init();
    const int e = x.e + MID_SHIFT; /* |x| in units of 2^-MID_SHIFT is m * 2^e */
    set_scaled(scratch.a12, x.m, e);
    set_scaled(scratch.b, 1, -e);
    return cmp_mid(scratch.a12, scratch.b, u, scratch.tmp);
}

enum fp8kv_class indep_classify_f32(enum fp8kv_format_id id, uint32_t x_bits)
{
    const struct indep_format *f = &formats[id];
    const struct table *t = table_of(id);
    struct f32_parts x = unpack(x_bits);
    switch (x.kind) {
    case K_NAN: return FP8KV_CLASS_NAN;
    case K_INF: return FP8KV_CLASS_INF;
    case K_ZERO: return FP8KV_CLASS_ZERO;
    case K_FINITE: break;
    }
    if ((x_bits & 0x7F800000u) == 0)
        return FP8KV_CLASS_F32_DENORMAL;
    const int last = t->n_codes - 2; /* mid[last]: between max and the first value above it */
    if (cmp_units(x, t->mid[last]) > 0)
        return FP8KV_CLASS_OVERFLOW;
    for (int k = 0; k <= last; k++)
        if (cmp_units(x, t->mid[k]) == 0)
            return FP8KV_CLASS_TIE;
    if (cmp_units(x, t->mid[0]) < 0)
        return FP8KV_CLASS_UNDERFLOW;
    if (cmp_units(x, 2 * t->val[1 << f->man_bits]) < 0) /* the smallest normal */
        return FP8KV_CLASS_E4M3_SUBNORMAL;
    return FP8KV_CLASS_NORMAL;
}

/* ---- decode and boundaries ----------------------------------------------------------------- */

uint32_t indep_decode_f32(enum fp8kv_format_id id, uint8_t code)
{
    const struct indep_format *f = &formats[id];
    int neg = (code & 0x80) != 0;
    uint8_t mag = (uint8_t)(code & 0x7F);
    if (f->nan_has_sign ? mag >= f->first_nan : code == f->nan_code)
        return 0x7FC00000u | (neg ? 0x80000000u : 0); /* oracle.h: the code's sign bit */
    if (f->has_inf && mag == f->inf_code)
        return 0x7F800000u | (neg ? 0x80000000u : 0);
    const struct table *t = table_of(id);
    float v = ldexpf((float)t->val[mag], -VAL_SHIFT); /* at most 3 significant bits: exact */
    return to_bits(v) | (neg ? 0x80000000u : 0);
}

int indep_boundary_count(enum fp8kv_format_id id)
{
    return formats[id].max_code + 2;
}

void indep_boundaries(enum fp8kv_format_id id, uint32_t *b)
{
    const struct table *t = table_of(id);
    b[0] = 0;
    for (int k = 1; k < t->n_codes; k++) {
        /* between codes k-1 and k: the midpoint itself belongs to k when k is even */
        uint32_t mid = to_bits(ldexpf((float)t->mid[k - 1], -MID_SHIFT)); /* exact */
        b[k] = (k & 1) == 0 ? mid : mid + 1;
    }
}
