/* rounding.h — the oracle's one rounding primitive, shared by the oracle's own files. */
#ifndef FP8KV_ORACLE_ROUNDING_H
#define FP8KV_ORACLE_ROUNDING_H

#include <mpfr.h>

#include "fp8kv/spec.h"

/* A binary floating-point format with subnormals, in MPFR's terms (significand in [1/2, 1)):
 * precision, smallest exponent (the smallest subnormal is 2^(emin-1)) and largest exponent. */
struct fp8kv_binfmt {
    mpfr_prec_t prec;
    mpfr_exp_t emin, emax;
};

extern const struct fp8kv_binfmt fp8kv_binfmt_f32, fp8kv_binfmt_f16, fp8kv_binfmt_bf16;

/* fp8kv_binfmt_of_dtype: the binary format of an input/output dtype. */
const struct fp8kv_binfmt *fp8kv_binfmt_of_dtype(enum fp8kv_dtype dtype);

/* fp8kv_binfmt_of_fp8: the binary format an fp8 format rounds in (e4m3fn's includes 480, which
 * the caller treats as overflow). */
struct fp8kv_binfmt fp8kv_binfmt_of_fp8(const struct fp8kv_format *f);

/* fp8kv_fit_binfmt: r was computed at precision bf->prec in the widest exponent range, with ternary
 * t (the sign of r minus the exact value). Brings r into bf's range with one correct RNE
 * rounding: overflow to ±Inf, underflow and subnormals per mpfr_subnormalize. The widest
 * range must be in force on entry and is in force on return. Returns the new ternary. */
int fp8kv_fit_binfmt(mpfr_ptr r, int t, const struct fp8kv_binfmt *bf);

/* fp8kv_fit_binfmt_rnd: fp8kv_fit_binfmt for a result r computed with rounding mode rnd (the
 * same rnd: MPFR_RNDU for a rounding up), brought into bf's range with that one rounding. */
int fp8kv_fit_binfmt_rnd(mpfr_ptr r, int t, const struct fp8kv_binfmt *bf, mpfr_rnd_t rnd);

/* fp8kv_encode_rounded: r holds an operation's result at precision 1 + man_bits computed in the
 * widest exponent range with ternary t (r infinite only when the exact value is; NaN gives
 * the positive NaN code). Finishes the single RNE rounding into p's format and applies the
 * overflow, Inf and zero rules. The widest range must be in force. */
uint8_t fp8kv_encode_rounded(const struct fp8kv_profile *p, mpfr_ptr r, int t);

#endif
