/* models.c — the store scale models and the read models of docs/DESIGN.md §1. */
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"
#include "rounding.h"

static int f32_is_nan(uint32_t bits)
{
    return (bits & 0x7FFFFFFFu) > 0x7F800000u;
}

/* Sets v (precision >= 24) to the exact value of the f32 bits (not NaN). */
static void set_f32_bits(mpfr_ptr v, uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    mpfr_set_flt(v, x, MPFR_RNDN);
}

/* The bits of a value already representable in dtype (so the conversions are exact). */
static uint32_t bits_of_representable(enum fp8kv_dtype dtype, mpfr_srcptr v)
{
    float x = mpfr_get_flt(v, MPFR_RNDN);
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if (dtype == FP8KV_DTYPE_F32)
        return b;
    if (dtype == FP8KV_DTYPE_BF16)
        return b >> 16; /* exact: the low 16 bits of a bf16 value are zero */
    /* f16 from an f32 that holds an f16 value */
    uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7FFFFFFFu;
    if (mag >= 0x7F800000u)
        return sign | 0x7C00u;
    if (mag == 0)
        return sign;
    int e = (int)(mag >> 23) - 127;
    uint32_t significand = (mag & 0x7FFFFFu) | 0x800000u;
    if (e >= -14)
        return sign | ((uint32_t)(e + 15) << 10) | ((significand >> 13) & 0x3FFu);
    return sign | (significand >> (13 + (-14 - e))); /* subnormal: man * 2^-24 */
}

static uint32_t quiet_nan_bits(enum fp8kv_dtype dtype, int negative)
{
    uint32_t s = negative ? 1u : 0u;
    switch (dtype) {
    case FP8KV_DTYPE_F16: return (s << 15) | 0x7E00u;
    case FP8KV_DTYPE_BF16: return (s << 15) | 0x7FC0u;
    default: return (s << 31) | 0x7FC00000u;
    }
}

/* Rounds v once to dtype; the widest range must be in force. */
static uint32_t round_to_dtype(enum fp8kv_dtype dtype, mpfr_srcptr v)
{
    if (mpfr_nan_p(v))
        return quiet_nan_bits(dtype, 0);
    const struct fp8kv_binfmt *bf = fp8kv_binfmt_of_dtype(dtype);
    mpfr_t r;
    mpfr_init2(r, bf->prec);
    int t = mpfr_set(r, v, MPFR_RNDN);
    fp8kv_fit_binfmt(r, t, bf);
    uint32_t bits = bits_of_representable(dtype, r);
    mpfr_clear(r);
    return bits;
}

uint32_t fp8kv_oracle_round_dtype(enum fp8kv_dtype dtype, mpfr_srcptr x)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    uint32_t bits = round_to_dtype(dtype, x);
    fp8kv_exprange_restore(&saved);
    return bits;
}

uint32_t fp8kv_oracle_round_f32(mpfr_srcptr x)
{
    return fp8kv_oracle_round_dtype(FP8KV_DTYPE_F32, x);
}

/* ---- store ---------------------------------------------------------------------------- */

/* r (precision of bf) = a op b, rounded once into bf. */
static void div_into(mpfr_ptr r, mpfr_srcptr a, mpfr_srcptr b, const struct fp8kv_binfmt *bf)
{
    fp8kv_fit_binfmt(r, mpfr_div(r, a, b, MPFR_RNDN), bf);
}

static void mul_into(mpfr_ptr r, mpfr_srcptr a, mpfr_srcptr b, const struct fp8kv_binfmt *bf)
{
    fp8kv_fit_binfmt(r, mpfr_mul(r, a, b, MPFR_RNDN), bf);
}

uint32_t fp8kv_oracle_row_scale(const struct fp8kv_format *f, enum fp8kv_dtype in,
                                const uint32_t *row, size_t n)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t amax, x, max, s;
    mpfr_inits2(24, amax, x, s, (mpfr_ptr)0);
    mpfr_init2(max, 53);
    mpfr_set_zero(amax, 1);
    for (size_t i = 0; i < n; i++) {
        const uint32_t bits = fp8kv_widen_to_f32(in, row[i]);
        if ((bits & 0x7F800000u) == 0x7F800000u) /* Inf or NaN: not finite */
            continue;
        set_f32_bits(x, bits);
        mpfr_abs(x, x, MPFR_RNDN);
        if (mpfr_greater_p(x, amax))
            mpfr_set(amax, x, MPFR_RNDN);
    }
    mpfr_set_d(max, f->max_value, MPFR_RNDN);
    div_into(s, amax, max, &fp8kv_binfmt_f32);
    const uint32_t bits = mpfr_zero_p(s) ? 0x3F800000u : bits_of_representable(FP8KV_DTYPE_F32, s);
    mpfr_clears(amax, x, max, s, (mpfr_ptr)0);
    fp8kv_exprange_restore(&saved);
    return bits;
}

uint8_t fp8kv_oracle_store(const struct fp8kv_profile *p, enum fp8kv_scale_model model,
                           uint32_t x_bits, uint32_t s_bits)
{
    if (f32_is_nan(x_bits))
        return fp8kv_nan_code(p->format, (int)(x_bits >> 31));
    if (f32_is_nan(s_bits))
        return fp8kv_nan_code(p->format, (int)(s_bits >> 31));

    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t x, s, q32, recip32, q16, r8;
    mpfr_inits2(24, x, s, q32, recip32, (mpfr_ptr)0);
    mpfr_init2(q16, fp8kv_binfmt_f16.prec);
    mpfr_init2(r8, 1 + p->format->man_bits);
    set_f32_bits(x, x_bits);
    set_f32_bits(s, s_bits);

    int t = 0; /* ternary of r8 against the value RNE8 rounds */
    switch (model) {
    case FP8KV_MODEL_F32_DIV:
        div_into(q32, x, s, &fp8kv_binfmt_f32);
        t = mpfr_set(r8, q32, MPFR_RNDN);
        break;
    case FP8KV_MODEL_F32_MUL_RECIP:
        fp8kv_fit_binfmt(recip32, mpfr_ui_div(recip32, 1, s, MPFR_RNDN), &fp8kv_binfmt_f32);
        mul_into(q32, x, recip32, &fp8kv_binfmt_f32);
        t = mpfr_set(r8, q32, MPFR_RNDN);
        break;
    case FP8KV_MODEL_F16_DIV:
        div_into(q32, x, s, &fp8kv_binfmt_f32);
        fp8kv_fit_binfmt(q16, mpfr_set(q16, q32, MPFR_RNDN), &fp8kv_binfmt_f16);
        t = mpfr_set(r8, q16, MPFR_RNDN);
        break;
    default: /* FP8KV_MODEL_EXACT: the real quotient, rounded once */
        t = mpfr_div(r8, x, s, MPFR_RNDN);
        break;
    }
    uint8_t code = fp8kv_encode_rounded(p, r8, t);
    mpfr_clears(x, s, q32, recip32, q16, r8, (mpfr_ptr)0);
    fp8kv_exprange_restore(&saved);
    return code;
}

/* ---- read ------------------------------------------------------------------------------ */

uint32_t fp8kv_oracle_read(const struct fp8kv_format *f, enum fp8kv_read_model model,
                           enum fp8kv_dtype out, uint8_t q, uint32_t s_bits)
{
    if (fp8kv_is_nan_code(f, q))
        return quiet_nan_bits(out, (q & 0x80u) != 0);
    if (f32_is_nan(s_bits))
        return quiet_nan_bits(out, (int)(s_bits >> 31));

    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t d, s, y;
    mpfr_inits2(24, d, s, (mpfr_ptr)0);
    fp8kv_oracle_decode(f, q, d);
    set_f32_bits(s, s_bits);
    uint32_t bits;
    if (model == FP8KV_READ_ROUNDED) {
        mpfr_init2(y, fp8kv_binfmt_f32.prec);
        mul_into(y, d, s, &fp8kv_binfmt_f32); /* RN32(decode(q) * s) */
        bits = round_to_dtype(out, y);        /* then one more rounding for f16 / bf16 */
    } else {
        mpfr_init2(y, 64); /* the product of 4- and 24-bit significands is exact in 64 bits */
        mpfr_mul(y, d, s, MPFR_RNDN);
        bits = round_to_dtype(out, y);
    }
    mpfr_clears(d, s, y, (mpfr_ptr)0);
    fp8kv_exprange_restore(&saved);
    return bits;
}

/* ---- parsing ---------------------------------------------------------------------------- */

int fp8kv_oracle_parse(enum fp8kv_dtype dtype, const char *text, uint32_t *bits)
{
    const struct fp8kv_binfmt *bf = fp8kv_binfmt_of_dtype(dtype);
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    mpfr_t r;
    mpfr_init2(r, bf->prec);
    char *end = NULL;
    /* The grammar is C's strtod's (decimal, hex float with 0x, inf, infinity, nan): MPFR's base
     * 0 also takes 0b binary and '@' exponents, which no other tool reads the same way, so a
     * word strtod does not consume whole is refused first (found by fuzz_cli_input). The value
     * is then MPFR's: base 0, rounded once, straight to the dtype. */
    char *c_end = NULL;
    (void)strtod(text, &c_end);
    int t = mpfr_strtofr(r, text, &end, 0, MPFR_RNDN);
    int rc = end != text && *end == '\0' && c_end != text && *c_end == '\0' && !strchr(text, '@')
                 ? FP8KV_OK
                 : FP8KV_ERR;
    if (rc == 0 && mpfr_nan_p(r)) {
        const char *p = text;
        while (*p == ' ' || *p == '\t')
            p++;
        *bits = quiet_nan_bits(dtype, *p == '-');
    } else if (rc == 0) {
        fp8kv_fit_binfmt(r, t, bf);
        *bits = bits_of_representable(dtype, r);
    }
    mpfr_clear(r);
    fp8kv_exprange_restore(&saved);
    return rc == 0 ? rc : fp8kv_fail("'%s' is not a number", text);
}
