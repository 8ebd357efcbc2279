/* independent.h — a second formulation of the exact fp8 oracle, sharing no code with the MPFR
 * oracle: rounding decided by exact integer (GMP mpz) comparisons against a table of
 * midpoints, and the RN32 / RN16 steps of the scale models done by the hardware (IEEE float
 * and _Float16). t_crosscheck.c checks that the two formulations agree.
 *
 * Not reentrant (static tables and scratch integers): call from one thread.
 *
 * Only format ids and profile rules (overflow, Inf policy) are taken from spec.h; the format
 * parameters (bias, max code, NaN codes, zeros) are this file's own, from docs/DESIGN.md §1.
 */
#ifndef FP8KV_TESTS_INDEPENDENT_H
#define FP8KV_TESTS_INDEPENDENT_H

#include <stdint.h>

#include "fp8kv/spec.h"

/* The format constants this formulation uses (for checking spec.c's table against them). */
struct indep_format {
    int exp_bits, man_bits; /* 4 and 3 (e4m3), 5 and 2 (e5m2) */
    int bias;               /* 7 (e4m3fn), 8 (e4m3fnuz), 15 (e5m2), 16 (e5m2fnuz) */
    uint8_t max_code;       /* 0x7E, 0x7F, 0x7B, 0x7F */
    uint8_t nan_code;       /* positive NaN code written: 0x7F, 0x80, 0x7F, 0x80 */
    uint8_t first_nan;      /* signed-NaN formats: magnitudes from here up are NaN (0x7F, 0x7D) */
    int nan_has_sign;       /* e4m3fn, e5m2: 0xFF is -NaN */
    int has_negative_zero;  /* e4m3fn, e5m2: 0x80 is -0 */
    int has_inf;            /* e5m2: inf_code is +Inf */
    uint8_t inf_code;       /* 0x7C (e5m2) */
};

/* indep_format_of: the constants of format id. */
const struct indep_format *indep_format_of(enum fp8kv_format_id id);

/* indep_encode_f32: the code of the f32 with bits x_bits under profile p (scale 1). */
uint8_t indep_encode_f32(const struct fp8kv_profile *p, uint32_t x_bits);

/* indep_store: the code a store writes for x (f32 bits) and scale s (f32 bits) under model. */
uint8_t indep_store(const struct fp8kv_profile *p, enum fp8kv_scale_model m, uint32_t x_bits,
                    uint32_t s_bits);

/* indep_row_scale: the per-token-and-head scale of a row of n f32 values (bits): the largest
 * magnitude of its finite elements over the format's largest finite value, divided by the
 * hardware (one IEEE rounding), 1.0f when that is 0. f32 bits. */
uint32_t indep_row_scale(enum fp8kv_format_id id, const uint32_t *row, int n);

/* indep_f16_to_f32: the f16 with these bits widened by the hardware (_Float16 or F16C); a
 * signalling NaN comes back quieted. */
float indep_f16_to_f32(uint16_t bits);

/* indep_decode_f32: the f32 bits of the value of code in format id (NaN codes: 0x7FC00000 with
 * the code's bit 7 as sign, as oracle.h specifies: the fnuz 0x80 gives 0xFFC00000; Inf codes
 * ±Inf). */
uint32_t indep_decode_f32(enum fp8kv_format_id id, uint8_t code);

/* indep_classify_f32: the input class of the f32 with bits x_bits relative to format id
 * (docs/DESIGN.md §1.3), decided by exact comparisons against this file's midpoint table. */
enum fp8kv_class indep_classify_f32(enum fp8kv_format_id id, uint32_t x_bits);

/* indep_boundary_count: max_code + 2 entries. */
int indep_boundary_count(enum fp8kv_format_id id);

/* indep_boundaries: b[0] = 0, b[k] = smallest positive f32 of code magnitude k (1 <= k <=
 * max_code), b[max_code+1] = smallest positive f32 that overflows; derived from the midpoint
 * table and the tie parity, not by search. b has indep_boundary_count(id) entries. */
void indep_boundaries(enum fp8kv_format_id id, uint32_t *b);

#endif
