/* fp8kv/block_judge.h — judging a block codec (fp8kv/block.h) against the exact oracle
 * (fp8kv/block_oracle.h): the subject's decode of every (scale, element) code pair, its
 * element codes for every f32 input a block under a fixed scale can hold (an exhaustive sweep
 * judged by runs of the oracle's element boundaries, never by the subject's arithmetic), and
 * whole random and edge blocks (the golden vectors: fp8kv/block_checks.h). Needs the oracle
 * (FP8KV_WITH_ORACLE). docs/blocks.md. */
#ifndef FP8KV_BLOCK_JUDGE_H
#define FP8KV_BLOCK_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block.h"
#include "fp8kv/block_checks.h"
#include "fp8kv/block_oracle.h"
#include "fp8kv/block_report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The judges below that a plan (fp8kv/block_checks.h) calls: decode, sweep and blocks. */
extern const struct fp8kv_block_oracle_judges fp8kv_block_oracle_judges;

/* fp8kv_block_params_of: the oracle's parameters of s's claim with decode scale G. */
struct fp8kv_block_params fp8kv_block_params_of(const struct fp8kv_block_under_test *s, float G);

/* fp8kv_block_judge_decode: s's decode of every element code under every scale code (G),
 * against fp8kv_oracle_block_decode_one, bit for bit (a NaN matches any NaN). 0 (r updated),
 * or an error status from the subject. Skipped (0, a note) when s has no decode. */
int fp8kv_block_judge_decode(const struct fp8kv_block_under_test *s, float G,
                             struct fp8kv_block_report *r);

/* The judging table of a sweep point: the anchor (the largest amax whose oracle scale is
 * the point's), the anchor's element code, and the runs of each sign over [0, anchor]. */
struct fp8kv_block_sweep_table {
    uint32_t anchor;
    uint8_t anchor_code;
    int nruns[2];
    struct fp8kv_block_run runs[2][FP8KV_BLOCK_MAX_RUNS];
};

/* fp8kv_block_sweep_table: the table of point p under f, params (from the oracle: binary
 * searches over the f32 bits, the scale and the element code being monotone in the
 * magnitude); 1, or 0 when no block has scale code p.scale. */
int fp8kv_block_sweep_table(const struct fp8kv_block_format *f,
                            const struct fp8kv_block_params *params,
                            struct fp8kv_block_sweep_point p, struct fp8kv_block_sweep_table *t);

/* fp8kv_block_judge_sweep: every f32 input x that a block with scale code p.scale can hold
 * (|x| <= anchor, the largest amax whose oracle scale is p.scale under s's rule and model),
 * both signs, encoded by s in blocks anchor, x1 .. x(block_size-1): each element code against
 * the oracle's, read from runs between the element boundaries the oracle gives (found by
 * binary search over the inputs' bits), each block's scale against p.scale. Not for 4over6
 * (the scale is chosen per block: a note, 0). 0, or an error status from the subject. */
int fp8kv_block_judge_sweep(const struct fp8kv_block_under_test *s,
                            struct fp8kv_block_sweep_point p, struct fp8kv_block_report *r);

/* fp8kv_block_judge_blocks: nblocks seeded blocks (fp8kv_splitmix64 from seed) of every kind
 * fp8kv_block_fill_block makes, encoded by s with G, against fp8kv_oracle_block_encode. */
int fp8kv_block_judge_blocks(const struct fp8kv_block_under_test *s, float G, uint64_t seed,
                             size_t nblocks, struct fp8kv_block_report *r);

/* fp8kv_block_fill_block: block number index of the seeded edge/random mix for f (kinds cycle:
 * random magnitudes over the whole f32 range, amax at and around max_elem 2^k, element-grid
 * ties and their neighbours under the block's scale, tiny and subnormal inputs, zeros of
 * both signs, a NaN or Inf, Gaussian-like values) into x[f->block_size] (f32 bits). */
void fp8kv_block_fill_block(const struct fp8kv_block_format *f, uint64_t *state, size_t index,
                            uint32_t *x);

#ifdef __cplusplus
}
#endif
#endif
