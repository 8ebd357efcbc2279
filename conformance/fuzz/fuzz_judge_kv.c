/* fuzz_judge_kv.c — the KV judge (fp8kv/kv_verdict.h) on arbitrary engine outputs.
 *
 * Input: a byte choosing the profile, one choosing the case, then edits of 4 bytes each: a
 * 24-bit position in the key cache, value cache, scale caches (per token and head) and f32 gather
 * rows laid end to end, and a byte XORed in there (so the outputs are mostly right, with
 * differences anywhere). Property: the verdict counts exactly the differences the harness made —
 * mismatches = differing cache bytes + scale entries + gather elements, split by cache as
 * stated — and says conformant exactly when there are none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/kv_verdict.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/verify.h"
#include "fuzz_util.h"

#ifndef FP8KV_SOURCE_DIR
#define FP8KV_SOURCE_DIR "."
#endif

/* differing: the number of esize-byte elements of a and b (n bytes each) that differ. */
static uint64_t differing(const uint8_t *a, const uint8_t *b, size_t n, size_t esize)
{
    uint64_t count = 0;
    for (size_t e = 0; e < n / esize; e++)
        count += memcmp(a + e * esize, b + e * esize, esize) != 0;
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char vectors[] = FP8KV_SOURCE_DIR "/vectors";
    if (size < 2)
        return 0;
    const struct fp8kv_profile *p = &fp8kv_profiles[data[0] % fp8kv_profile_count];
    int count = 0;
    if (fp8kv_vectors_trust(vectors) != 0 || fp8kv_kv_case_count(vectors, p, &count))
        fuzz_fail("the committed vectors do not load: %s", fp8kv_last_error());
    struct fp8kv_kv_case c;
    if (fp8kv_kv_case_load(vectors, p, data[1] % count, &c) != 0)
        fuzz_fail("case %d does not load: %s", data[1] % count, fp8kv_last_error());
    const size_t gbytes = c.gather[0].count * 4, sbytes = c.scale_cache.count * 4;
    const size_t total = 2 * c.cache_bytes + sbytes + gbytes;
    uint8_t *all = malloc(total + 1);
    memcpy(all, c.key_cache.data, c.cache_bytes);
    memcpy(all + c.cache_bytes, c.value_cache.data, c.cache_bytes);
    if (sbytes) /* both scale caches, key then value, as the golden file holds them */
        memcpy(all + 2 * c.cache_bytes, c.scale_cache.data, sbytes);
    memcpy(all + 2 * c.cache_bytes + sbytes, c.gather[0].data, gbytes);
    for (size_t i = 2; i + 4 <= size; i += 4) {
        const size_t at = ((size_t)data[i] | (size_t)data[i + 1] << 8 | (size_t)data[i + 2] << 16);
        all[at % total] ^= data[i + 3];
    }
    uint8_t *kc = all, *vc = all + c.cache_bytes, *sc = all + 2 * c.cache_bytes;
    uint8_t *g = sc + sbytes;
    const uint64_t key_changed = differing(kc, c.key_cache.data, c.cache_bytes, 1);
    const uint64_t value_changed = differing(vc, c.value_cache.data, c.cache_bytes, 1);
    const uint64_t scales_changed = differing(sc, c.scale_cache.data, sbytes, 4);
    const uint64_t gather_changed = differing(g, c.gather[0].data, gbytes, 4);
    const float *scales = sbytes ? (const float *)sc : NULL;
    const struct fp8kv_judge_kv_input input = {.subject = "fuzz",
                                               .key_cache = kc,
                                               .value_cache = vc,
                                               .key_bytes = c.cache_bytes,
                                               .value_bytes = c.cache_bytes,
                                               .key_name = "key",
                                               .value_name = "value",
                                               .key_scale_cache = scales,
                                               .value_scale_cache =
                                                   scales ? scales + c.scale_entries : NULL,
                                               .key_scale_count = c.scale_entries,
                                               .value_scale_count = c.scale_entries,
                                               .key_scale_name = "key_scales",
                                               .value_scale_name = "value_scales",
                                               .gather = g,
                                               .gather_count = c.gather[0].count,
                                               .gather_dtype = FP8KV_KV_F32,
                                               .gather_name = "gather"};
    struct fp8kv_judge_kv_result r;
    if (fp8kv_judge_kv(vectors, p->name, c.index, &input, &r) != 0)
        fuzz_fail("judging well-sized outputs failed: %s", fp8kv_last_error());
    const uint64_t want = key_changed + value_changed + scales_changed + gather_changed;
    if (r.mismatches != want || r.cache_mismatches[0] != key_changed ||
        r.cache_mismatches[1] != value_changed ||
        r.scale_cache_mismatches[0] + r.scale_cache_mismatches[1] != scales_changed ||
        r.conformant != (want == 0) || r.bytes != 2 * c.cache_bytes)
        fuzz_fail("%s case %d: judged %llu mismatches (key %llu value %llu, %s), made %llu "
                  "(key %llu value %llu scales %llu gather %llu)",
                  p->name, c.index, (unsigned long long)r.mismatches,
                  (unsigned long long)r.cache_mismatches[0],
                  (unsigned long long)r.cache_mismatches[1],
                  r.conformant ? "conformant" : "nonconformant", (unsigned long long)want,
                  (unsigned long long)key_changed, (unsigned long long)value_changed,
                  (unsigned long long)scales_changed, (unsigned long long)gather_changed);
    fp8kv_judge_kv_result_free(&r);
    fp8kv_kv_case_free(&c);
    free(all);
    return 0;
}
