/* intq.c — the exact oracle of the integer block formats (fp8kv/intq_oracle.h): every f32 step
 * of fp8kv/intq.h one correct MPFR rounding at 24 bits in the widest exponent range, brought
 * onto the f32 grid by fp8kv_fit_binfmt (rounding.h), as block.c does. */
#include <math.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/intq_oracle.h"
#include "fp8kv/oracle.h"
#include "rounding.h"

/* set_f32: v (24 bits) = the f32 whose bits are b (finite). */
static void set_f32(mpfr_ptr v, uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    mpfr_set_flt(v, x, MPFR_RNDN);
}

static int f32_finite(uint32_t b)
{
    return (b & 0x7F800000u) != 0x7F800000u;
}

/* the block's scale source m (fp8kv/intq.h): amax, or the first element of largest magnitude */
static void scale_source(const struct fp8kv_intq_format *f, const uint32_t *x, mpfr_ptr m)
{
    int best = 0;
    for (int i = 1; i < f->block_size; i++)
        if ((x[i] & 0x7FFFFFFFu) > (x[best] & 0x7FFFFFFFu))
            best = i;
    /* (finite f32 magnitudes order as their bit patterns; ties keep the first) */
    set_f32(m, f->source == FP8KV_INTQ_AMAX ? x[best] & 0x7FFFFFFFu : x[best]);
    if (f->source == FP8KV_INTQ_VMAX && (x[best] & 0x7FFFFFFFu) == 0)
        mpfr_set_zero(m, 1); /* no element above 0 in magnitude: vmax keeps its initial +0 */
}

/* q of fp8kv/intq.h from w (24 bits, possibly infinite or NaN where id overflowed): rounded as
 * f says, then clamped to [code_min, code_max]; NaN gives 0 and +-Inf the clamp's ends, as a
 * saturating float-to-integer conversion (PTX cvt) does. */
static long integer_of(const struct fp8kv_intq_format *f, mpfr_ptr w)
{
    if (mpfr_nan_p(w))
        return 0 < f->code_min ? f->code_min : (0 > f->code_max ? f->code_max : 0);
    mpfr_t r;
    mpfr_init2(r, 64);
    switch (f->rounding) {
    case FP8KV_INTQ_RNE: mpfr_rint(r, w, MPFR_RNDN); break;
    case FP8KV_INTQ_HALF_AWAY: mpfr_round(r, w); break;
    case FP8KV_INTQ_TRUNC_HALF:
        fp8kv_fit_binfmt(w, mpfr_add_d(w, w, 0.5, MPFR_RNDN), &fp8kv_binfmt_f32);
        mpfr_trunc(r, w);
        break;
    default: mpfr_trunc(r, w); break;
    }
    long q;
    if (mpfr_cmp_si(r, f->code_min) < 0)
        q = f->code_min;
    else if (mpfr_cmp_si(r, f->code_max) > 0)
        q = f->code_max;
    else
        q = mpfr_get_si(r, MPFR_RNDN);
    mpfr_clear(r);
    return q;
}

int fp8kv_oracle_intq_encode(const struct fp8kv_intq_format *f, const uint32_t *x, uint16_t *scale,
                             uint8_t *codes)
{
    for (int i = 0; i < f->block_size; i++)
        if (!f32_finite(x[i]))
            return fp8kv_fail("%s: element %d (f32 0x%08x) is not finite: a block holding a NaN "
                              "or an Inf has no code",
                              f->name, i, x[i]);
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t m, d, id, v, offset;
    mpfr_inits2(fp8kv_binfmt_f32.prec, m, d, id, v, offset, (mpfr_ptr)0);
    scale_source(f, x, m);
    fp8kv_fit_binfmt(d, mpfr_div_d(d, m, (double)f->divisor, MPFR_RNDN), &fp8kv_binfmt_f32);
    if (mpfr_zero_p(d))
        mpfr_set_zero(id, 1);
    else
        fp8kv_fit_binfmt(id, mpfr_ui_div(id, 1, d, MPFR_RNDN), &fp8kv_binfmt_f32);
    for (int i = 0; i < f->block_size; i++) {
        set_f32(v, x[i]);
        if (f->fused) {
            mpfr_set_flt(offset, f->offset, MPFR_RNDN);
            fp8kv_fit_binfmt(v, mpfr_fma(v, v, id, offset, MPFR_RNDN), &fp8kv_binfmt_f32);
        } else {
            fp8kv_fit_binfmt(v, mpfr_mul(v, v, id, MPFR_RNDN), &fp8kv_binfmt_f32);
            if (f->offset != 0.0f)
                fp8kv_fit_binfmt(v, mpfr_add_d(v, v, (double)f->offset, MPFR_RNDN),
                                 &fp8kv_binfmt_f32);
        }
        codes[i] = fp8kv_intq_code_byte(f, (int)integer_of(f, v));
    }
    *scale = (uint16_t)fp8kv_oracle_round_dtype(FP8KV_DTYPE_F16, d);
    mpfr_clears(m, d, id, v, offset, (mpfr_ptr)0);
    fp8kv_exprange_restore(&saved);
    return FP8KV_OK;
}

/* f16_value: v = the value of the f16 bits h (NaN for a NaN code) */
static void f16_value(uint16_t h, mpfr_ptr v)
{
    const int sign = h >> 15, e = (h >> 10) & 0x1F, man = h & 0x3FF;
    if (e == 0x1F && man)
        mpfr_set_nan(v);
    else if (e == 0x1F)
        mpfr_set_inf(v, 1);
    else if (e == 0)
        mpfr_set_ui_2exp(v, (unsigned long)man, -24, MPFR_RNDN);
    else
        mpfr_set_ui_2exp(v, (unsigned long)(man | 0x400), e - 25, MPFR_RNDN);
    if (sign && !mpfr_nan_p(v))
        mpfr_neg(v, v, MPFR_RNDN);
}

uint32_t fp8kv_oracle_intq_decode_one(const struct fp8kv_intq_format *f, uint16_t scale,
                                      uint8_t code, int *ok)
{
    const int q = fp8kv_intq_code_value(f, code);
    *ok = q >= f->code_min && q <= f->code_max;
    if (!*ok) {
        fp8kv_fail("%s: byte %02x holds no element code", f->name, code);
        return 0;
    }
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t s, y;
    mpfr_inits2(fp8kv_binfmt_f32.prec, s, y, (mpfr_ptr)0);
    f16_value(scale, s);
    fp8kv_fit_binfmt(y, mpfr_mul_si(y, s, q - f->zero, MPFR_RNDN), &fp8kv_binfmt_f32);
    const uint32_t bits = fp8kv_oracle_round_f32(y);
    mpfr_clears(s, y, (mpfr_ptr)0);
    fp8kv_exprange_restore(&saved);
    return bits;
}
