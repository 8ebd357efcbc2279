/* fp8kv/oracle.h — the exact oracle: what every byte must be, computed with GNU MPFR.
 *
 * The true functions of fp8kv. Every rounding is done by MPFR at the target precision in the
 * widest exponent range, then brought into the target's range with mpfr_check_range and
 * mpfr_subnormalize using the ternary value, so each rounding is a single correct RNE rounding
 * (no hidden double rounding). Double roundings happen only where a scale model names them.
 *
 * Every public function saves MPFR's global exponent range on entry and restores it on exit
 * (fp8kv_exprange_widen / _restore): callers see MPFR's state unchanged.
 *
 * NaN conventions (MPFR has no NaN sign): a NaN input x, or else a NaN scale s, keeps its sign
 * into the fp8 NaN (where the format has signed NaNs); an invalid operation (0/0, Inf*0)
 * gives a positive NaN. IEEE 754 leaves that last sign open (x86 makes the negative default
 * NaN, CUDA the positive one), so the checks compare such NaNs by class. Read outputs for NaN give
 * the canonical quiet NaN of the output dtype with the sign of the code.
 */
#ifndef FP8KV_ORACLE_H
#define FP8KV_ORACLE_H

#include <stdint.h>

#include <mpfr.h>

#include "fp8kv/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- MPFR state ------------------------------------------------------------------------- */

struct fp8kv_exprange {
    mpfr_exp_t emin, emax;
};

/* fp8kv_exprange_widen: saves MPFR's exponent range into *saved and sets the widest one. */
void fp8kv_exprange_widen(struct fp8kv_exprange *saved);

/* fp8kv_exprange_restore: puts back the range saved by fp8kv_exprange_widen. */
void fp8kv_exprange_restore(const struct fp8kv_exprange *saved);

/* ---- decode ----------------------------------------------------------------------------- */

/* fp8kv_oracle_decode: sets x (precision >= 4) to the exact value of code in format f: ±0,
 * subnormal, normal, ±Inf for an Inf code (e5m2), or NaN for the format's NaN codes. Returns
 * 1 for a NaN code, else 0. */
int fp8kv_oracle_decode(const struct fp8kv_format *f, uint8_t code, mpfr_ptr x);

/* fp8kv_oracle_decode_f32: the f32 bits of decode(code) (exact: every fp8 value is an f32);
 * a NaN code gives the quiet NaN 0x7FC00000 with the code's sign bit. */
uint32_t fp8kv_oracle_decode_f32(const struct fp8kv_format *f, uint8_t code);

/* ---- encode ------------------------------------------------------------------------------ */

/* fp8kv_oracle_encode_real: the code of the real x under profile p: RNE to the format with
 * subnormals, overflow decided after rounding (satfinite: ±max, nan: NaN), ±Inf per the
 * profile's Inf policy, the sign of zero kept where the format has -0. A NaN x gives the
 * positive NaN code. */
uint8_t fp8kv_oracle_encode_real(const struct fp8kv_profile *p, mpfr_srcptr x);

/* fp8kv_oracle_encode_f32: the code of the f32 with these bits (scale 1, one rounding); a
 * NaN keeps its sign where the format allows. */
uint8_t fp8kv_oracle_encode_f32(const struct fp8kv_profile *p, uint32_t x_bits);

/* ---- scale models ------------------------------------------------------------------------ */

/* fp8kv_oracle_store: the code a store writes for input x (f32 bits; f16/bf16 inputs are
 * widened first with fp8kv_widen_to_f32) and per-tensor scale s (f32 bits) under model:
 *   f32_div        RNE8(RN32(x / s))
 *   f32_mul_recip  RNE8(RN32(x * RN32(1 / s)))
 *   f16_div        RNE8(RN16(RN32(x / s)))
 *   exact          RNE8(x / s), the real quotient rounded once
 * RN32/RN16 overflow to ±Inf, which RNE8 then treats per the Inf policy: that is what a
 * kernel's conversion instruction sees. */
uint8_t fp8kv_oracle_store(const struct fp8kv_profile *p, enum fp8kv_scale_model model,
                           uint32_t x_bits, uint32_t s_bits);

/* fp8kv_oracle_row_scale: the per-token-and-head scale of a row of n inputs of dtype in (bits,
 * f16/bf16 in the low 16): RN32(amax / max_finite) rounded once, amax the largest magnitude
 * of the row's finite elements; 1.0f (0x3F800000) when that is 0. f32 bits. */
uint32_t fp8kv_oracle_row_scale(const struct fp8kv_format *f, enum fp8kv_dtype in,
                                const uint32_t *row, size_t n);

/* fp8kv_oracle_read: the bits a read writes for code q and scale s (f32 bits) into output
 * dtype out (f32 bits, or f16/bf16 bits in the low 16):
 *   rounded  RN32(decode(q) * s), then RN16 / RNbf16 of that for f16 / bf16 output
 *   exact    decode(q) * s rounded once to the output dtype */
uint32_t fp8kv_oracle_read(const struct fp8kv_format *f, enum fp8kv_read_model model,
                           enum fp8kv_dtype out, uint8_t q, uint32_t s_bits);

/* fp8kv_oracle_round_f32: the f32 bits of x rounded once to f32 (RNE, subnormals, overflow to
 * ±Inf); NaN gives 0x7FC00000. */
uint32_t fp8kv_oracle_round_f32(mpfr_srcptr x);

/* fp8kv_oracle_round_dtype: the bits of x rounded once to dtype (RNE, subnormals, overflow to
 * ±Inf; f16/bf16 in the low 16 bits); NaN gives the dtype's positive quiet NaN. */
uint32_t fp8kv_oracle_round_dtype(enum fp8kv_dtype dtype, mpfr_srcptr x);

/* fp8kv_oracle_parse: reads a real from text and rounds it once to dtype: a decimal
 * ("-1.0625", "1e-3", "inf", "nan") or a C99 hex float ("0x1.dp+8"), optionally signed; the
 * sign of "-nan" is kept. *bits receives the dtype's bits (f16/bf16 in the low 16). Returns 0,
 * or FP8KV_ERR when text is not entirely a number. */
int fp8kv_oracle_parse(enum fp8kv_dtype dtype, const char *text, uint32_t *bits);

/* ---- certified boundaries ---------------------------------------------------------------- */

/* fp8kv_oracle_boundaries: fills b[0 .. max_code+1] with f32 bits: b[0] = 0, b[k] (1 <= k <=
 * max_code) = the smallest positive f32 whose code magnitude is k, b[max_code+1] = the
 * smallest positive f32 that overflows (rounds above max). Found by bisection over f32 bit
 * patterns with the MPFR encoder (rounding is monotone) and then certified: encode(b[k]) is k
 * and encode of its f32 predecessor is k-1. So for any finite f32 |x|, its code magnitude is
 * the largest k with b[k] <= |x|. Returns 0, or FP8KV_ERR if a certification fails. */
int fp8kv_oracle_boundaries(const struct fp8kv_format *f, uint32_t *b);

/* fp8kv_oracle_mpfr_version / _gmp_version: the library versions, for manifests. */
const char *fp8kv_oracle_mpfr_version(void);
const char *fp8kv_oracle_gmp_version(void);

#ifdef __cplusplus
}
#endif
#endif
