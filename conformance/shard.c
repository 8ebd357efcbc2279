/* shard.c — slices of a domain and the merge of shards' results (fp8kv/shard.h). */
#include "fp8kv/shard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"

/* A decimal count of text[0 .. n): 0 with *out, or -1 (not only digits, empty, too large). */
static int parse_count(const char *text, size_t n, uint32_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(text[i] - '0');
    }
    *out = (uint32_t)v;
    return 0;
}

int fp8kv_shard_parse(const char *text, struct fp8kv_shard *out)
{
    const char *slash = strchr(text, '/');
    struct fp8kv_shard s;
    if (!slash || parse_count(text, (size_t)(slash - text), &s.index) != 0 ||
        parse_count(slash + 1, strlen(slash + 1), &s.count) != 0)
        return fp8kv_fail("'%s' is not a shard i/N (two decimal numbers, e.g. 0/4)", text);
    if (s.count == 0 || s.count > FP8KV_SHARD_MAX)
        return fp8kv_fail("'%s': the shard count N must be from 1 to %u", text, FP8KV_SHARD_MAX);
    if (s.index >= s.count)
        return fp8kv_fail("'%s': the shard index i must be from 0 to N - 1 = %u", text,
                          s.count - 1);
    *out = s;
    return FP8KV_OK;
}

void fp8kv_shard_slice(struct fp8kv_shard s, uint64_t size, uint64_t align, uint64_t *lo,
                       uint64_t *hi)
{
    if (s.count == 0) {
        *lo = 0;
        *hi = size;
        return;
    }
    const uint64_t units = (size + align - 1) / align; /* at most 2^32: no product overflows */
    const uint64_t a = (uint64_t)s.index * units / s.count * align;
    const uint64_t b = ((uint64_t)s.index + 1) * units / s.count * align;
    *lo = a < size ? a : size;
    *hi = b < size ? b : size;
}

void fp8kv_shard_domain_slice(struct fp8kv_shard s, enum fp8kv_domain d, uint64_t size,
                              uint64_t *lo, uint64_t *hi)
{
    fp8kv_shard_slice(
        s, size, d == FP8KV_DOMAIN_F32 ? FP8KV_SHARD_ALIGN_F32 : FP8KV_SHARD_ALIGN_HALF, lo, hi);
}

void fp8kv_examples_merge_shard(struct fp8kv_examples *into, const struct fp8kv_examples *next)
{
    for (int i = 0; next && i < next->n; i++)
        fp8kv_examples_add(into, &next->v[i]);
}

void fp8kv_check_merge_shard(struct fp8kv_check *into, const struct fp8kv_check *next)
{
    into->cases += next->cases;
    into->mismatches += next->mismatches;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        into->class_cases[k] += next->class_cases[k];
        into->class_mismatches[k] += next->class_mismatches[k];
    }
    /* a device sweep's first failures: those of both, cut at the limit */
    for (int i = 0; i < next->first_count && into->first_count < into->first_limit; i++)
        into->first[into->first_count++] = next->first[i];
    /* each slice's examples come after the slices before it: input order */
    struct fp8kv_examples folded = into->examples;
    fp8kv_examples_merge_shard(&folded, &next->examples);
    into->failure_lines = 0;
    memset(&into->examples, 0, sizeof into->examples);
    fp8kv_check_show_examples(into, &folded);
    fp8kv_check_finish(into, into->seconds > next->seconds ? into->seconds : next->seconds);
}
