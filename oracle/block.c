/* block.c — the exact oracle of the block-scaled formats (fp8kv/block_oracle.h): every rounding
 * one correct MPFR rounding at the target precision in the widest exponent range, brought onto
 * the grid with subnormals by fp8kv_fit_binfmt(_rnd) (rounding.h), as in encode.c and models.c. */
#include <string.h>

#include "fp8kv/block_oracle.h"
#include "fp8kv/oracle.h"
#include "rounding.h"

#define E8M0_BIAS 127
#define E8M0_XMIN (-127)
#define E8M0_XMAX 127
#define F32_NAN 0x7FC00000u
/* |x - y| of two f32 values (or Inf) is a multiple of 2^-149 below 2^129: 278 bits; its square
 * 556 bits, a sum of 32 squares 561 bits. Every step at this precision is exact. */
#define SSE_PREC 640

static int f32_is_finite(uint32_t bits)
{
    return (bits & 0x7F800000u) != 0x7F800000u;
}

/* Sets v (precision >= 24) to the exact value of the f32 bits (not NaN). */
static void set_f32_bits(mpfr_ptr v, uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    mpfr_set_flt(v, x, MPFR_RNDN);
}

static const struct fp8kv_element_format *ue4m3(void)
{
    return &fp8kv_element_formats[FP8KV_ELEM_E4M3];
}

/* ---- elements --------------------------------------------------------------------------- */

/* The grid an element rounds on: 1 + man_bits bits, subnormals down to 2^(1 - bias - man_bits)
 * (= 0.5 * 2^emin in MPFR's terms), no overflow: the caller saturates. */
static struct fp8kv_binfmt element_binfmt(const struct fp8kv_element_format *e)
{
    struct fp8kv_binfmt bf = {1 + e->man_bits, 2 - e->bias - e->man_bits, mpfr_get_emax_max()};
    return bf;
}

int fp8kv_oracle_element_decode(const struct fp8kv_element_format *e, uint8_t c, mpfr_ptr v)
{
    const unsigned magnitude = c & (e->sign_bit - 1u);
    const unsigned exp_field = magnitude >> e->man_bits;
    const unsigned man_field = magnitude & ((1u << e->man_bits) - 1u);
    const int negative = (c & e->sign_bit) != 0;
    if (magnitude > e->max_code) { /* fp8 only: e4m3 0x7F NaN; e5m2 0x7C Inf, 0x7D..0x7F NaN */
        if (man_field != 0) {
            mpfr_set_nan(v);
            return 1;
        }
        mpfr_set_inf(v, negative ? -1 : 1);
        return 0;
    }
    /* subnormal man * 2^(1 - bias - man_bits), normal (2^man_bits + man) * 2^(E - bias -
     * man_bits): integers of at most 1 + man_bits bits, exact at precision >= 4 */
    const unsigned long significand = exp_field == 0 ? man_field : (1u << e->man_bits) + man_field;
    const long exponent = (exp_field == 0 ? 1 : (long)exp_field) - e->bias - e->man_bits;
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_set_ui_2exp(v, significand, exponent, MPFR_RNDN);
    mpfr_setsign(v, v, negative, MPFR_RNDN);
    fp8kv_exprange_restore(&saved);
    return 0;
}

/* The magnitude code of r, a nonzero value of e's grid no larger than max_value: the integer
 * n = |r| / 2^(1 - bias - man_bits) is the subnormal code below 2^man_bits, and for a normal
 * n = (2^man_bits + man) * 2^(exp_field - 1). t_block_oracle round-trips every code. */
static uint8_t magnitude_code(const struct fp8kv_element_format *e, mpfr_srcptr r)
{
    mpfr_t n;
    mpfr_init2(n, mpfr_get_prec(r));
    mpfr_abs(n, r, MPFR_RNDN);
    mpfr_mul_2si(n, n, e->bias - 1 + e->man_bits, MPFR_RNDN); /* exact */
    const unsigned long q = mpfr_get_ui(n, MPFR_RNDN);        /* an integer */
    mpfr_clear(n);
    const unsigned long normal_min = 1ul << e->man_bits;
    if (q < normal_min)
        return (uint8_t)q;
    unsigned exp_field = 1;
    while ((q >> (exp_field - 1)) >= 2 * normal_min)
        exp_field++;
    return (uint8_t)(exp_field << e->man_bits | ((q >> (exp_field - 1)) - normal_min));
}

/* The code of r, an operation's result at precision 1 + man_bits in the widest range with
 * ternary t under mode rnd (r not NaN): rounded onto e's grid, then saturated to +-max_value
 * (Inf included), a zero keeping its sign. The widest range must be in force. */
static uint8_t element_code_rounded(const struct fp8kv_element_format *e, mpfr_ptr r, int t,
                                    mpfr_rnd_t rnd)
{
    const uint8_t sign = mpfr_signbit(r) ? e->sign_bit : 0;
    if (mpfr_nan_p(r))
        return 0; /* model f32's 0 / t with t = RN32(s G) = 0: +0 (fp8kv/block.h) */
    const struct fp8kv_binfmt bf = element_binfmt(e);
    if (!mpfr_inf_p(r))
        fp8kv_fit_binfmt_rnd(r, t, &bf, rnd);
    if (mpfr_inf_p(r) || mpfr_cmp_d(r, e->max_value) > 0 || mpfr_cmp_d(r, -e->max_value) < 0)
        return sign | e->max_code;
    if (mpfr_zero_p(r))
        return sign;
    return sign | magnitude_code(e, r);
}

uint8_t fp8kv_oracle_element_encode(const struct fp8kv_element_format *e, mpfr_srcptr v)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t r;
    mpfr_init2(r, 1 + e->man_bits);
    const int t = mpfr_set(r, v, MPFR_RNDN);
    const uint8_t code = element_code_rounded(e, r, t, MPFR_RNDN);
    mpfr_clear(r);
    fp8kv_exprange_restore(&saved);
    return code;
}

/* ---- scales ------------------------------------------------------------------------------ */

/* The exponent X of a positive E8M0 scale of an MX block with largest magnitude amax (exact,
 * >= 0), before the clamp to [-127, 127]. The widest range must be in force. */
static long mx_exponent(const struct fp8kv_block_format *f, const struct fp8kv_block_params *p,
                        mpfr_srcptr amax)
{
    const struct fp8kv_element_format *e = f->element;
    if (mpfr_zero_p(amax))
        return E8M0_XMIN;
    const long floor_log2 = (long)mpfr_get_exp(amax) - 1; /* amax in [2^floor_log2, 2^(+1)) */
    mpfr_t bound;
    mpfr_init2(bound, 64);
    long x;
    switch (p->rule) {
    case FP8KV_RULE_EVEN:
        /* R(amax) to 1 + man_bits bits, ties away, reaches 2^(floor_log2 + 1) exactly when
         * amax >= (2 - 2^-(man_bits + 1)) * 2^floor_log2 */
        mpfr_set_ui_2exp(bound, (2ul << (e->man_bits + 1)) - 1, floor_log2 - e->man_bits - 1,
                         MPFR_RNDN);
        x = floor_log2 + (mpfr_cmp(amax, bound) >= 0) - e->emax;
        break;
    case FP8KV_RULE_RCEIL:
        if (p->model == FP8KV_BLOCK_MODEL_F32) {
            /* ceil(log2 q) of q = RN32(amax / max_elem), an f32 (maybe 0) */
            mpfr_t max, q;
            mpfr_init2(max, 64);
            mpfr_init2(q, fp8kv_binfmt_f32.prec);
            mpfr_set_d(max, e->max_value, MPFR_RNDN);
            fp8kv_fit_binfmt(q, mpfr_div(q, amax, max, MPFR_RNDN), &fp8kv_binfmt_f32);
            if (mpfr_zero_p(q))
                x = E8M0_XMIN;
            else
                x = (long)mpfr_get_exp(q) - (mpfr_cmp_ui_2exp(q, 1, mpfr_get_exp(q) - 1) == 0);
            mpfr_clears(max, q, (mpfr_ptr)0);
        } else {
            /* the smallest X with amax <= max_elem * 2^X, max_elem in [2^emax, 2^(emax+1)):
             * X lies in floor_log2 - emax - 1 .. floor_log2 - emax + 1 */
            x = floor_log2 - e->emax - 1;
            for (;; x++) {
                mpfr_set_d(bound, e->max_value, MPFR_RNDN);
                mpfr_mul_2si(bound, bound, x, MPFR_RNDN); /* exact */
                if (mpfr_cmp(amax, bound) <= 0)
                    break;
            }
        }
        break;
    default: /* FP8KV_RULE_FLOOR */ x = floor_log2 - e->emax; break;
    }
    mpfr_clear(bound);
    return x;
}

/* The UE4M3 code of the NVFP4 block scale for amax (exact, >= 0) with amax / (divisor * G):
 * rounded with rnd (RNE, or RU for ceil) onto the e4m3 grid and saturated to 448, in the
 * model's arithmetic. The widest range must be in force. */
static uint8_t nv_scale(const struct fp8kv_block_params *p, mpfr_srcptr amax, unsigned divisor,
                        mpfr_rnd_t rnd)
{
    mpfr_t g, d, q, s;
    mpfr_inits2(64, g, d, q, (mpfr_ptr)0);
    mpfr_init2(s, 1 + ue4m3()->man_bits);
    set_f32_bits(g, p->global_scale_bits);
    int t;
    if (p->model == FP8KV_BLOCK_MODEL_F32) {
        /* d = RN32(amax / divisor), q = RN32(d / G), s = round_e4m3(q) */
        mpfr_set_prec(d, fp8kv_binfmt_f32.prec);
        mpfr_set_prec(q, fp8kv_binfmt_f32.prec);
        fp8kv_fit_binfmt(d, mpfr_div_ui(d, amax, divisor, MPFR_RNDN), &fp8kv_binfmt_f32);
        fp8kv_fit_binfmt(q, mpfr_div(q, d, g, MPFR_RNDN), &fp8kv_binfmt_f32);
        t = mpfr_set(s, q, rnd);
    } else {
        mpfr_mul_ui(d, g, divisor, MPFR_RNDN); /* exact: 24 + 3 bits */
        t = mpfr_div(s, amax, d, rnd);         /* the real amax / (divisor G), rounded once */
    }
    const uint8_t code = element_code_rounded(ue4m3(), s, t, rnd);
    mpfr_clears(g, d, q, s, (mpfr_ptr)0);
    return code;
}

/* block_scale in the widest range (amax exact, >= 0). */
static uint8_t scale_of_amax(const struct fp8kv_block_format *f, const struct fp8kv_block_params *p,
                             mpfr_srcptr amax)
{
    if (f->scale_kind == FP8KV_SCALE_UE4M3)
        return nv_scale(p, amax, 6, p->rule == FP8KV_RULE_CEIL ? MPFR_RNDU : MPFR_RNDN);
    long x = mx_exponent(f, p, amax);
    x = x < E8M0_XMIN ? E8M0_XMIN : x > E8M0_XMAX ? E8M0_XMAX : x;
    return (uint8_t)(x + E8M0_BIAS);
}

uint8_t fp8kv_oracle_block_scale(const struct fp8kv_block_format *f,
                                 const struct fp8kv_block_params *params, uint32_t amax_bits)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t amax;
    mpfr_init2(amax, 24);
    set_f32_bits(amax, amax_bits & 0x7FFFFFFFu);
    const uint8_t code = scale_of_amax(f, params, amax);
    mpfr_clear(amax);
    fp8kv_exprange_restore(&saved);
    return code;
}

/* ---- elements under a scale ---------------------------------------------------------------- */

/* The element code of x (exact, finite) under scale code scale, in the widest range. */
static uint8_t element_of(const struct fp8kv_block_format *f, const struct fp8kv_block_params *p,
                          uint8_t scale, mpfr_srcptr x)
{
    const struct fp8kv_element_format *e = f->element;
    mpfr_t r;
    mpfr_init2(r, 1 + e->man_bits);
    int t;
    if (f->scale_kind == FP8KV_SCALE_E8M0) {
        t = mpfr_div_2si(r, x, (long)scale - E8M0_BIAS, MPFR_RNDN); /* x / 2^X rounded once */
    } else if (scale == 0) {
        mpfr_set_zero(r, mpfr_signbit(x) ? -1 : 1); /* s = 0: the zero of x's sign */
        t = 0;
    } else {
        mpfr_t s, g, sg;
        mpfr_inits2(64, s, g, sg, (mpfr_ptr)0);
        fp8kv_oracle_element_decode(ue4m3(), scale, s);
        set_f32_bits(g, p->global_scale_bits);
        if (p->model == FP8KV_BLOCK_MODEL_F32) {
            /* t = RN32(s G), RN32(x / t), then the element's rounding */
            mpfr_set_prec(sg, fp8kv_binfmt_f32.prec);
            fp8kv_fit_binfmt(sg, mpfr_mul(sg, s, g, MPFR_RNDN), &fp8kv_binfmt_f32);
            mpfr_t q;
            mpfr_init2(q, fp8kv_binfmt_f32.prec);
            fp8kv_fit_binfmt(q, mpfr_div(q, x, sg, MPFR_RNDN), &fp8kv_binfmt_f32);
            t = mpfr_set(r, q, MPFR_RNDN);
            mpfr_clear(q);
        } else {
            mpfr_mul(sg, s, g, MPFR_RNDN); /* exact: 4 + 24 bits */
            t = mpfr_div(r, x, sg, MPFR_RNDN);
        }
        mpfr_clears(s, g, sg, (mpfr_ptr)0);
    }
    const uint8_t code = element_code_rounded(e, r, t, MPFR_RNDN);
    mpfr_clear(r);
    return code;
}

uint8_t fp8kv_oracle_block_element(const struct fp8kv_block_format *f,
                                   const struct fp8kv_block_params *params, uint8_t scale,
                                   uint32_t x_bits)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t x;
    mpfr_init2(x, 24);
    set_f32_bits(x, x_bits);
    const uint8_t code = element_of(f, params, scale, x);
    mpfr_clear(x);
    fp8kv_exprange_restore(&saved);
    return code;
}

/* ---- decode ---------------------------------------------------------------------------------- */

/* decode_one in the widest range. */
static uint32_t decode_value(const struct fp8kv_block_format *f, uint32_t global_scale_bits,
                             uint8_t scale, uint8_t c)
{
    if (scale == fp8kv_block_scale_nan_code(f))
        return F32_NAN;
    mpfr_t v, s, g;
    mpfr_inits2(64, v, s, g, (mpfr_ptr)0);
    uint32_t bits;
    if (fp8kv_oracle_element_decode(f->element, c, v)) {
        bits = F32_NAN | ((c & f->element->sign_bit) ? 0x80000000u : 0);
    } else {
        if (f->scale_kind == FP8KV_SCALE_E8M0) {
            mpfr_mul_2si(v, v, (long)scale - E8M0_BIAS, MPFR_RNDN); /* exact */
        } else {
            fp8kv_oracle_element_decode(ue4m3(), scale, s);
            set_f32_bits(g, global_scale_bits);
            mpfr_mul(v, v, s, MPFR_RNDN); /* exact: 2 + 4 + 24 bits */
            mpfr_mul(v, v, g, MPFR_RNDN);
        }
        bits = fp8kv_oracle_round_f32(v);
    }
    mpfr_clears(v, s, g, (mpfr_ptr)0);
    return bits;
}

uint32_t fp8kv_oracle_block_decode_one(const struct fp8kv_block_format *f,
                                       uint32_t global_scale_bits, uint8_t scale, uint8_t c)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    const uint32_t bits = decode_value(f, global_scale_bits, scale, c);
    fp8kv_exprange_restore(&saved);
    return bits;
}

/* ---- encode -----------------------------------------------------------------------------------
 */

/* Sets sse to the exact sum over the block of (decode(scale, elements[i]) - x[i])^2 (+Inf when
 * a decoded value overflowed). The widest range must be in force. */
static void block_sse(const struct fp8kv_block_format *f, const struct fp8kv_block_params *p,
                      mpfr_srcptr *x, uint8_t scale, const uint8_t *elements, mpfr_ptr sse)
{
    mpfr_t y, d;
    mpfr_init2(y, 24);
    mpfr_init2(d, SSE_PREC);
    mpfr_set_zero(sse, 1);
    for (int i = 0; i < f->block_size; i++) {
        set_f32_bits(y, decode_value(f, p->global_scale_bits, scale, elements[i]));
        mpfr_sub(d, x[i], y, MPFR_RNDN); /* all three exact at SSE_PREC */
        mpfr_sqr(d, d, MPFR_RNDN);
        mpfr_add(sse, sse, d, MPFR_RNDN);
    }
    mpfr_clears(y, d, (mpfr_ptr)0);
}

static void encode_with_scale(const struct fp8kv_block_format *f,
                              const struct fp8kv_block_params *p, mpfr_srcptr *x, uint8_t scale,
                              uint8_t *elements)
{
    for (int i = 0; i < f->block_size; i++)
        elements[i] = element_of(f, p, scale, x[i]);
}

void fp8kv_oracle_block_encode(const struct fp8kv_block_format *f,
                               const struct fp8kv_block_params *params, const uint32_t *x,
                               uint8_t *scale, uint8_t *elements)
{
    const int n = f->block_size;
    uint32_t amax_bits = 0;
    for (int i = 0; i < n; i++) {
        if (!f32_is_finite(x[i])) {
            *scale = fp8kv_block_scale_nan_code(f);
            memset(elements, 0, (size_t)n);
            return;
        }
        if ((x[i] & 0x7FFFFFFFu) > amax_bits) /* finite magnitudes order like their bits */
            amax_bits = x[i] & 0x7FFFFFFFu;
    }
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t values[FP8KV_BLOCK_MAX], amax;
    mpfr_srcptr xs[FP8KV_BLOCK_MAX];
    for (int i = 0; i < n; i++) {
        mpfr_init2(values[i], 24);
        set_f32_bits(values[i], x[i]);
        xs[i] = values[i];
    }
    mpfr_init2(amax, 24);
    set_f32_bits(amax, amax_bits);
    *scale = scale_of_amax(f, params, amax);
    encode_with_scale(f, params, xs, *scale, elements);
    if (params->rule == FP8KV_RULE_4OVER6) {
        /* s4 = RNE_e4m3(amax / (4 G)): kept only when its decoded block is strictly closer */
        const uint8_t s4 = nv_scale(params, amax, 4, MPFR_RNDN);
        uint8_t e4[FP8KV_BLOCK_MAX];
        encode_with_scale(f, params, xs, s4, e4);
        mpfr_t sse6, sse4;
        mpfr_inits2(SSE_PREC, sse6, sse4, (mpfr_ptr)0);
        block_sse(f, params, xs, *scale, elements, sse6);
        block_sse(f, params, xs, s4, e4, sse4);
        if (mpfr_less_p(sse4, sse6)) {
            *scale = s4;
            memcpy(elements, e4, (size_t)n);
        }
        mpfr_clears(sse6, sse4, (mpfr_ptr)0);
    }
    for (int i = 0; i < n; i++)
        mpfr_clear(values[i]);
    mpfr_clear(amax);
    fp8kv_exprange_restore(&saved);
}
