/* sets.h — the inputs of the generated vector sets (their expected outputs come from the
 * oracle in generate.c). */
#ifndef FP8KV_GEN_SETS_H
#define FP8KV_GEN_SETS_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/spec.h"

/* A growable array of 32-bit patterns. */
struct fp8kv_u32vec {
    uint32_t *v;
    size_t n, cap;
};

/* fp8kv_u32vec_push: appends x. 0 or FP8KV_ERR (out of memory). */
int fp8kv_u32vec_push(struct fp8kv_u32vec *a, uint32_t x);

/* fp8kv_u32vec_sort_unique: sorts by bit pattern and drops repeats. */
void fp8kv_u32vec_sort_unique(struct fp8kv_u32vec *a);

/* fp8kv_u32vec_free: releases the storage. */
void fp8kv_u32vec_free(struct fp8kv_u32vec *a);

/* fp8kv_edge_inputs: the edge f32 inputs of format f, sorted by bit pattern, unique: every code
 * value and midpoint (the overflow midpoint included) with its ±1, ±2 f32 ulp neighbours,
 * both signs; ±0; f32 denormals; powers of two across the whole f32 range; ±FLT_MAX; ±Inf;
 * NaNs of both signs with several payloads. */
int fp8kv_edge_inputs(const struct fp8kv_format *f, struct fp8kv_u32vec *out);

/* The scales of the store-with-scale and read sets (f32 bits). */
extern const uint32_t fp8kv_gen_scales[];
extern const size_t fp8kv_gen_scale_count;

/* Store-with-scale pair inputs: x (f32 bits of the input widened from its dtype), its dtype
 * and the scale s. */
struct fp8kv_scale_pairs {
    uint32_t *x, *s;
    uint8_t *dtype;
    size_t n, cap;
};

/* fp8kv_scale_pair_inputs: for every scale and input dtype: inputs whose quotient lies on or within
 * two ulps of an fp8 midpoint of f (both signs), deterministic pseudo-random inputs, special
 * values, and the defects 7-9 of docs/DESIGN.md §1.4 pairs; sorted and unique within each (scale,
 * dtype). */
int fp8kv_scale_pair_inputs(const struct fp8kv_format *f, struct fp8kv_scale_pairs *out);

/* fp8kv_scale_pairs_free: releases the storage. */
void fp8kv_scale_pairs_free(struct fp8kv_scale_pairs *p);

#endif
