/* fp8kv/block_oracle.h — the exact oracle of the block-scaled formats (fp8kv/block.h), on
 * GNU MPFR: the scale code and element codes every block must encode to, and the value every
 * (scale, element) pair decodes to, for each rule and model. Like oracle.h: one correct
 * rounding per step the model names, MPFR's exponent range saved and restored. */
#ifndef FP8KV_BLOCK_ORACLE_H
#define FP8KV_BLOCK_ORACLE_H

#include <stdint.h>

#include <mpfr.h>

#include "fp8kv/block.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parameters of an encoding: the rule (one f takes), the model, and for NVFP4 the f32
 * bits of the per-tensor decode scale G (finite, > 0; ignored by MX). */
struct fp8kv_block_params {
    enum fp8kv_block_rule rule;
    enum fp8kv_block_model model;
    uint32_t global_scale_bits;
};

/* fp8kv_oracle_element_decode: sets v (precision >= 8) to the exact value of element code c
 * of format e (c below 2^bits); returns 1 for an fp8 element's NaN code (v NaN), else 0. */
int fp8kv_oracle_element_decode(const struct fp8kv_element_format *e, uint8_t c, mpfr_ptr v);

/* fp8kv_oracle_element_encode: SAT(RNE_elem(v)) of the real v (not NaN; +-Inf saturates), the
 * sign kept on a zero result. */
uint8_t fp8kv_oracle_element_encode(const struct fp8kv_element_format *e, mpfr_srcptr v);

/* fp8kv_oracle_block_scale: the scale code of a block of f whose largest magnitude is amax
 * (f32 bits, finite, sign ignored) under params; 4over6 returns the rne candidate s6 (the
 * choice needs the whole block: fp8kv_oracle_block_encode). */
uint8_t fp8kv_oracle_block_scale(const struct fp8kv_block_format *f,
                                 const struct fp8kv_block_params *params, uint32_t amax_bits);

/* fp8kv_oracle_block_element: the element code of input x (f32 bits, not NaN; +-Inf saturates
 * like any overflow) under scale code scale (not NaN) of f and params' model (and G). */
uint8_t fp8kv_oracle_block_element(const struct fp8kv_block_format *f,
                                   const struct fp8kv_block_params *params, uint8_t scale,
                                   uint32_t x_bits);

/* fp8kv_oracle_block_encode: the codes of one block of f->block_size inputs x (f32 bits):
 * *scale and elements[0 .. block_size). */
void fp8kv_oracle_block_encode(const struct fp8kv_block_format *f,
                               const struct fp8kv_block_params *params, const uint32_t *x,
                               uint8_t *scale, uint8_t *elements);

/* fp8kv_oracle_block_decode_one: the f32 bits of element code c under scale code scale of f
 * (G from global_scale_bits for NVFP4): RN32 of the exact product, NaN 0x7FC00000 (with the
 * element's sign for an element NaN) for a NaN scale or element code. */
uint32_t fp8kv_oracle_block_decode_one(const struct fp8kv_block_format *f,
                                       uint32_t global_scale_bits, uint8_t scale, uint8_t c);

#ifdef __cplusplus
}
#endif
#endif
