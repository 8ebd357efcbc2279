/* encode.c — RNE8: rounding a real to an fp8 code under a profile. */
#include <string.h>

#include "fp8kv/oracle.h"
#include "rounding.h"

static uint8_t signed_code(uint8_t magnitude, int negative)
{
    return (uint8_t)(negative ? magnitude | 0x80u : magnitude);
}

/* ---- the code of a rounded value ---------------------------------------------------------- */

/* The magnitude code whose exact decoded value equals |r| (r representable, finite, <= max):
 * searched through the decoder so that encode and decode cannot disagree on a bit layout. */
static uint8_t code_of_value(const struct fp8kv_format *f, mpfr_srcptr r)
{
    mpfr_t v;
    mpfr_init2(v, 8);
    uint8_t found = 0xFF;
    for (unsigned c = 0; c <= f->max_code && found == 0xFF; c++) {
        fp8kv_oracle_decode(f, (uint8_t)c, v);
        if (mpfr_cmpabs(v, r) == 0)
            found = (uint8_t)c;
    }
    mpfr_clear(v);
    return found; /* 0xFF cannot happen for a value rounded to the format's binfmt */
}

uint8_t fp8kv_encode_rounded(const struct fp8kv_profile *p, mpfr_ptr r, int t)
{
    const struct fp8kv_format *f = p->format;
    int negative = mpfr_signbit(r) != 0;
    if (mpfr_nan_p(r))
        return fp8kv_nan_code(f, 0);
    if (mpfr_inf_p(r))
        return fp8kv_infinity_code(p, negative);

    struct fp8kv_binfmt bf = fp8kv_binfmt_of_fp8(f);
    fp8kv_fit_binfmt(r, t, &bf);
    /* overflow is decided after rounding: RNE can land on max (464 -> 448), or above it */
    if (mpfr_inf_p(r) || mpfr_cmp_d(r, f->max_value) > 0 || mpfr_cmp_d(r, -f->max_value) < 0)
        return fp8kv_overflow_code(p, negative);
    if (mpfr_zero_p(r))
        return fp8kv_zero_code(f, negative);
    return signed_code(code_of_value(f, r), negative);
}

uint8_t fp8kv_oracle_encode_real(const struct fp8kv_profile *p, mpfr_srcptr x)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t r;
    mpfr_init2(r, 1 + p->format->man_bits);
    int t = mpfr_set(r, x, MPFR_RNDN);
    uint8_t code = fp8kv_encode_rounded(p, r, t);
    mpfr_clear(r);
    fp8kv_exprange_restore(&saved);
    return code;
}

uint8_t fp8kv_oracle_encode_f32(const struct fp8kv_profile *p, uint32_t x_bits)
{
    if ((x_bits & 0x7FFFFFFFu) > 0x7F800000u)
        return fp8kv_nan_code(p->format, (int)(x_bits >> 31));
    float x;
    memcpy(&x, &x_bits, sizeof x);
    mpfr_t v;
    mpfr_init2(v, 24);
    mpfr_set_flt(v, x, MPFR_RNDN); /* exact */
    uint8_t code = fp8kv_oracle_encode_real(p, v);
    mpfr_clear(v);
    return code;
}
