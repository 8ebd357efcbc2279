/* fp8kv/shard.h — one exhaustive pass split into shards, and the shards' results merged.
 *
 * Shard i of N judges one contiguous slice of each exhaustive domain (fp8kv_shard_slice); the
 * slices of the N shards cover the domain exactly once, in order. Merged in shard order, the
 * results are those of one unsharded pass: counts summed, the examples folded in input order by
 * fp8kv_examples_add, exactly as the chunks of one pass are merged. `sweep --shard`, `audit
 * --shard`, `--device all` and `fp8kv merge` all go through here.
 */
#ifndef FP8KV_SHARD_H
#define FP8KV_SHARD_H

#include <stdint.h>

#include "fp8kv/checks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shard index of count; count 0: not sharded (the whole domain). */
struct fp8kv_shard {
    uint32_t index, count;
};

/* Where shards cut a domain: f32 at multiples of 2^20 inputs (the largest call any driver
 * makes, a plugin's or an audit's: a shard makes exactly the calls of an unsharded pass), the
 * 16-bit domains at multiples of 64 (the device sweep's sub-chunk: device codecs convert the
 * same pairs of inputs). */
#define FP8KV_SHARD_ALIGN_F32 (1u << 20)
#define FP8KV_SHARD_ALIGN_HALF 64u

/* The most shards of one pass: the f32 domain has 4096 slices of FP8KV_SHARD_ALIGN_F32. */
#define FP8KV_SHARD_MAX 4096u

/* fp8kv_shard_parse: "i/N" (decimal, 0 <= i < N <= FP8KV_SHARD_MAX) into *out. 0, or FP8KV_ERR
 * with a message saying what is wrong with text. */
int fp8kv_shard_parse(const char *text, struct fp8kv_shard *out);

/* fp8kv_shard_slice: the inputs [*lo, *hi) of shard s in a domain of `size` inputs cut at
 * multiples of `align`: lo = floor(index * units / count) * align (units = size / align, rounded
 * up), hi likewise for index + 1, both at most size. Exact integer arithmetic: the slices of
 * shards 0 .. count - 1 cover [0, size) exactly once, in order (a slice may be empty when count
 * exceeds units). Not sharded: [0, size). The one place a slice is computed. */
void fp8kv_shard_slice(struct fp8kv_shard s, uint64_t size, uint64_t align, uint64_t *lo,
                       uint64_t *hi);

/* fp8kv_shard_domain_slice: the slice of shard s of the first `size` inputs of domain d (size:
 * the domain's, or a test's limit), cut at the domain's alignment above. */
void fp8kv_shard_domain_slice(struct fp8kv_shard s, enum fp8kv_domain d, uint64_t size,
                              uint64_t *lo, uint64_t *hi);

/* fp8kv_examples_merge_shard: adds the examples of the following slice (or chunk), `next`, to
 * `into`, the examples of the inputs before it: fp8kv_examples_add of each in order, so a range
 * continues across the border and each class keeps its first examples. */
void fp8kv_examples_merge_shard(struct fp8kv_examples *into, const struct fp8kv_examples *next);

/* fp8kv_check_merge_shard: adds `next`, the same sweep check judged over the following slice, to
 * `into` (the slices before it, merged): cases and counts summed, the examples folded in input
 * order and the failure lines rewritten from them (a device sweep's first failures concatenated
 * and cut at its limit); passed from the counts; seconds: the longer of the two. */
void fp8kv_check_merge_shard(struct fp8kv_check *into, const struct fp8kv_check *next);

#ifdef __cplusplus
}
#endif
#endif
