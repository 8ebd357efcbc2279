/* rounding.h — the oracle's one rounding primitive, shared by the oracle's own files. */
#ifndef FP8KV_ORACLE_ROUNDING_H
#define FP8KV_ORACLE_ROUNDING_H

#include <mpfr.h>

#include "fp8kv/spec.h"

/* A binary floating-point format with subnormals, in MPFR's terms (significand in [1/2, 1)):
 * precision, smallest exponent (the smallest subnormal is 2^(emin-1)) and largest exponent. */
struct binfmt {
    mpfr_prec_t prec;
    mpfr_exp_t emin, emax;
};

extern const struct binfmt binfmt_f32, binfmt_f16, binfmt_bf16;

/* binfmt_of_dtype: the binary format of an input/output dtype. */
const struct binfmt *binfmt_of_dtype(enum fp8kv_dtype dtype);

/* binfmt_of_fp8: the binary format an fp8 format rounds in (e4m3fn's includes 480, which
 * the caller treats as overflow). */
struct binfmt binfmt_of_fp8(const struct fp8kv_format *f);

/* fit_binfmt: r was computed at precision bf->prec in the widest exponent range, with ternary
 * t (the sign of r minus the exact value). Brings r into bf's range with one correct RNE
 * rounding: overflow to ±Inf, underflow and subnormals per mpfr_subnormalize. The widest
 * range must be in force on entry and is in force on return. Returns the new ternary. */
int fit_binfmt(mpfr_ptr r, int t, const struct binfmt *bf);

/* encode_rounded: r holds an operation's result at precision 1 + man_bits computed in the
 * widest exponent range with ternary t (r infinite only when the exact value is; NaN gives
 * the positive NaN code). Finishes the single RNE rounding into p's format and applies the
 * overflow, Inf and zero rules. The widest range must be in force. */
uint8_t encode_rounded(const struct fp8kv_profile *p, mpfr_ptr r, int t);

#endif
