/* exprange.c — saving and restoring MPFR's global exponent range, and the binary formats the
 * oracle rounds into. */
#include "fp8kv/oracle.h"
#include "rounding.h"

void fp8kv_exprange_widen(struct fp8kv_exprange *saved)
{
    saved->emin = mpfr_get_emin();
    saved->emax = mpfr_get_emax();
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
}

void fp8kv_exprange_restore(const struct fp8kv_exprange *saved)
{
    mpfr_set_emin(saved->emin);
    mpfr_set_emax(saved->emax);
}

/* IEEE binary32: subnormals down to 2^-149, finite below 2^128. binary16: down to 2^-24,
 * finite below 2^16. bfloat16: binary32's range with 8 bits of precision. */
const struct fp8kv_binfmt fp8kv_binfmt_f32 = {24, -148, 128};
const struct fp8kv_binfmt fp8kv_binfmt_f16 = {11, -23, 16};
const struct fp8kv_binfmt fp8kv_binfmt_bf16 = {8, -132, 128};

const struct fp8kv_binfmt *fp8kv_binfmt_of_dtype(enum fp8kv_dtype dtype)
{
    switch (dtype) {
    case FP8KV_DTYPE_F16: return &fp8kv_binfmt_f16;
    case FP8KV_DTYPE_BF16: return &fp8kv_binfmt_bf16;
    default: return &fp8kv_binfmt_f32;
    }
}

struct fp8kv_binfmt fp8kv_binfmt_of_fp8(const struct fp8kv_format *f)
{
    struct fp8kv_binfmt bf = {1 + f->man_bits, f->emin_mpfr, f->emax_mpfr};
    return bf;
}

int fp8kv_fit_binfmt(mpfr_ptr r, int t, const struct fp8kv_binfmt *bf)
{
    return fp8kv_fit_binfmt_rnd(r, t, bf, MPFR_RNDN);
}

int fp8kv_fit_binfmt_rnd(mpfr_ptr r, int t, const struct fp8kv_binfmt *bf, mpfr_rnd_t rnd)
{
    mpfr_set_emin(bf->emin);
    mpfr_set_emax(bf->emax);
    t = mpfr_check_range(r, t, rnd);
    t = mpfr_subnormalize(r, t, rnd);
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    return t;
}
