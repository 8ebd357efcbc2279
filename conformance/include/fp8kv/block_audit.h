/* fp8kv/block_audit.h — two block codecs (fp8kv/block_report.h) of one format compared on
 * seeded data sets: how many blocks and elements differ, the NMSE of each against the f32
 * input, and the share of blocks each clips. No oracle: the decoded values are exact products
 * of the codes' values (core/block.h facts) in double. docs/blocks.md. */
#ifndef FP8KV_BLOCK_AUDIT_H
#define FP8KV_BLOCK_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block_report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The data sets, each nblocks blocks of f32 from fp8kv_splitmix64(seed):
 *   gaussian  N(0, 1) (Box-Muller)
 *   outliers  N(0, 1), each element with probability 1/64 times a factor log-uniform in
 *             [10, 100]
 *   kv        an attention K cache: rows of 128 channels, channel c of every row N(0, 1) times
 *             a per-channel magnitude (1 for most; 10 to 100, log-uniform, for 4 channels of the
 *             128 picked by the seed), times a per-row heavy tail (|t| of a Student t with 4
 *             degrees of freedom, at least 0.25); blocks run along the channels */
enum fp8kv_block_dataset {
    FP8KV_DATA_GAUSSIAN,
    FP8KV_DATA_OUTLIERS,
    FP8KV_DATA_KV,
    FP8KV_DATA_COUNT
};
extern const char *const fp8kv_block_dataset_names[FP8KV_DATA_COUNT];

/* fp8kv_block_dataset_fill: nblocks * block_size values of data set d into x. */
void fp8kv_block_dataset_fill(enum fp8kv_block_dataset d, uint64_t seed, size_t n, float *x);

/* fp8kv_block_dataset_global_scale: the NVFP4 per-tensor decode scale G of x[0 .. n): RN32(amax /
 * (6 * 448)) (the largest block scale then meets the largest input), 1 for an all-zero x. */
float fp8kv_block_dataset_global_scale(const float *x, size_t n);

/* What one data set gave, per side (0 baseline, 1 candidate). A block is clipped when its amax
 * lies past (max_elem + half a step of max_elem's binade) * S, S its decoded scale (2^X, or
 * s G): the midpoint between max_elem and the next value of the element's grid without a top
 * (8 for e2m1's 6, 480 for e4m3's 448): rounding alone gives max_elem only up to there; past
 * it, saturation set the code. */
struct fp8kv_block_audit_row {
    uint64_t blocks, elements;
    uint64_t blocks_differ, elements_differ;
    double nmse[2];
    uint64_t clipped[2];
    float G;
};

/* fp8kv_block_audit_run: encodes data set d (nblocks blocks, seed) with both subjects (one
 * format) and fills row. 0, or the failing subject's status. */
int fp8kv_block_audit_run(const struct fp8kv_block_under_test *side[2], enum fp8kv_block_dataset d,
                          uint64_t seed, size_t nblocks, struct fp8kv_block_audit_row *row);

#ifdef __cplusplus
}
#endif
#endif
