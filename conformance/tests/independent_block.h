/* independent_block.h — a second formulation of the block-scaled formats' oracle
 * (fp8kv/block_oracle.h), sharing no code with it and using no MPFR: every exact step is a GMP
 * rational (mpq) compared against a table of the element grid's values and midpoints; every
 * f32 step of the f32 model (and the RN32 of a decode) is the hardware's IEEE float operation.
 * t_block_oracle.c checks that the two agree.
 *
 * Only ids (element formats, block formats, rules, models) come from block.h; the format
 * parameters are this file's own, from the OCP MX v1.0 and NVFP4 definitions (docs/DESIGN.md
 * §10). Not reentrant (static tables and scratch rationals): call from one thread. */
#ifndef FP8KV_TESTS_INDEPENDENT_BLOCK_H
#define FP8KV_TESTS_INDEPENDENT_BLOCK_H

#include <stdint.h>

#include <gmp.h>

#include "fp8kv/block.h"

/* The constants of an element format this formulation uses. */
struct indep_element {
    int exp_bits, man_bits, bias;
    uint8_t max_code; /* the largest finite magnitude code */
    double max_value; /* its value */
    int emax;         /* floor(log2 max_value) */
};

/* The constants of a block format. */
struct indep_block {
    enum fp8kv_element_id element;
    int block_size;
    int nvfp4; /* 1: UE4M3 scale and G; 0: E8M0 scale */
};

const struct indep_element *indep_element_of(enum fp8kv_element_id id);
const struct indep_block *indep_block_of(enum fp8kv_block_format_id id);

/* indep_element_value: the value of element code c (NaN for an fp8 NaN code, +-Inf for e5m2's
 * Inf codes), exact in a double. */
double indep_element_value(enum fp8kv_element_id id, uint8_t c);

/* indep_element_encode: the code of the exact value v (sign negative): nearest-even on the
 * element grid, |v| at or above max_value giving max (the same as rounding on the unbounded
 * grid and saturating: at a tie above max, max is even or its neighbour is clamped back). */
uint8_t indep_element_encode(enum fp8kv_element_id id, const mpq_t v, int negative);

/* indep_block_scale: the scale code for a block whose largest magnitude is amax (f32 bits). */
uint8_t indep_block_scale(enum fp8kv_block_format_id id, enum fp8kv_block_rule rule,
                          enum fp8kv_block_model model, uint32_t g_bits, uint32_t amax_bits);

/* indep_block_element: the element code of x (f32 bits, finite) under scale code scale. */
uint8_t indep_block_element(enum fp8kv_block_format_id id, enum fp8kv_block_model model,
                            uint32_t g_bits, uint8_t scale, uint32_t x_bits);

/* indep_block_decode_one: the f32 bits of element c under scale code scale. */
uint32_t indep_block_decode_one(enum fp8kv_block_format_id id, uint32_t g_bits, uint8_t scale,
                                uint8_t c);

/* indep_block_encode: the codes of a block of x (f32 bits). For 4over6 also returns (when
 * cmp is not NULL) the sign of SSE(s4) - SSE(s6), exact; 0 otherwise. */
void indep_block_encode(enum fp8kv_block_format_id id, enum fp8kv_block_rule rule,
                        enum fp8kv_block_model model, uint32_t g_bits, const uint32_t *x,
                        uint8_t *scale, uint8_t *elements, int *cmp);

#endif
