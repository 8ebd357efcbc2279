/* decode.c — the exact value of every fp8 code. */
#include <string.h>

#include "fp8kv/oracle.h"

int fp8kv_oracle_decode(const struct fp8kv_format *f, uint8_t code, mpfr_ptr x)
{
    if (fp8kv_is_nan_code(f, code)) {
        mpfr_set_nan(x);
        return 1;
    }
    if (fp8kv_is_inf_code(f, code)) {
        mpfr_set_inf(x, (code & 0x80u) ? -1 : 1);
        return 0;
    }
    unsigned magnitude = code & 0x7Fu;
    unsigned exp_field = magnitude >> f->man_bits;
    unsigned man_field = magnitude & ((1u << f->man_bits) - 1u);

    /* subnormal: man * 2^(1 - bias - man_bits); normal: (2^man_bits + man) * 2^(E - bias -
     * man_bits). Both integers fit in 1 + man_bits bits, so the set is exact at precision >= 4. */
    unsigned long significand = exp_field == 0 ? man_field : (1u << f->man_bits) + man_field;
    long exponent = (exp_field == 0 ? 1 : (long)exp_field) - f->bias - f->man_bits;

    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_set_ui_2exp(x, significand, exponent, MPFR_RNDN);
    if (code & 0x80u)
        mpfr_neg(x, x, MPFR_RNDN); /* 0x80 is -0, or (fnuz) the NaN handled above */
    fp8kv_exprange_restore(&saved);
    return 0;
}

uint32_t fp8kv_oracle_decode_f32(const struct fp8kv_format *f, uint8_t code)
{
    if (fp8kv_is_nan_code(f, code))
        return 0x7FC00000u | ((uint32_t)(code & 0x80u) << 24);
    mpfr_t x;
    mpfr_init2(x, 8);
    fp8kv_oracle_decode(f, code, x);
    float value = mpfr_get_flt(x, MPFR_RNDN); /* exact: fp8 values (and ±Inf) are f32 values */
    mpfr_clear(x);
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}
