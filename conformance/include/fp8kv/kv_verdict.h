/* fp8kv/kv_verdict.h — judging an engine's KV-cache outputs for one golden case, from buffers.
 *
 * The one judge behind `fp8kv judge-kv` (outputs saved as .npy files) and the Python package
 * (numpy arrays, torch tensors): the vector directory is verified first, the case loaded and
 * validated, every buffer's size checked against the case, then each output judged by
 * fp8kv/kv_judge.h. The result carries the checks, the verdict, and the report as text and as
 * JSON (schema "fp8kv-judge-kv", version FP8KV_JUDGE_KV_SCHEMA_VERSION; docs/python.md).
 */
#ifndef FP8KV_KV_VERDICT_H
#define FP8KV_KV_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/checks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_JUDGE_KV_SCHEMA_VERSION 1

/* What an engine produced for a case. Any part may be absent (NULL), but key and value caches
 * come together and at least one part is given. Each *_name says where a buffer came from (a
 * file path, "key_cache"), for the messages. */
struct fp8kv_judge_kv_input {
    const char *subject; /* what is judged, for the report (NULL: "engine") */
    /* the whole caches as the store left them (filled with 0xA5 before it), case layout */
    const uint8_t *key_cache, *value_cache;
    size_t key_bytes, value_bytes;
    const char *key_name, *value_name;
    /* per token and head (and only then, with the caches): the scale caches the store wrote,
     * f32 [num_blocks, block_size, num_heads] (filled with 0xA5 bytes before it) */
    const float *key_scale_cache, *value_scale_cache;
    size_t key_scale_count, value_scale_count;
    const char *key_scale_name, *value_scale_name;
    /* the gather + dequant rows: key rows then value rows, elements of gather_dtype */
    const void *gather;
    size_t gather_count;
    enum fp8kv_kv_dtype gather_dtype;
    const char *gather_name;
    /* the decode step's output [num_seqs, num_q_heads, head_size], elements of the declared
     * arithmetic's output dtype (f32, or bf16/f16 bits), computed under that arithmetic (a
     * preset or a custom text, fp8kv/kv_attention.h; NULL: "f32") */
    const void *attention;
    size_t attention_count;
    const char *attention_name;
    const char *arithmetic;
};

/* The verdict on one case. */
struct fp8kv_judge_kv_result {
    int conformant;                     /* every judged part passed */
    uint64_t bytes, mismatches;         /* cache bytes judged; differing bytes, scale-cache entries
                                           and gather elements */
    uint64_t cache_mismatches[2];       /* key, value */
    uint64_t scale_cache_mismatches[2]; /* key, value: per token and head */
    struct fp8kv_results checks;        /* kv-store, kv-read-<dtype>, kv-attention: those given */
    char *text;                         /* the report as `fp8kv judge-kv` prints it (malloc'd) */
    char *json;                         /* the same as a JSON document (malloc'd) */
};

/* fp8kv_judge_kv: judges in against case case_index of profile (a name of vectors/README.md)
 * in the vector directory vectors. FP8KV_OK: judged (the verdict is in out, to be freed with
 * fp8kv_judge_kv_result_free); FP8KV_ERR: bad input — unverifiable vectors, an unknown
 * profile or case, a missing part, a buffer of the wrong size — with a message naming it
 * (out is then empty). */
int fp8kv_judge_kv(const char *vectors, const char *profile, int case_index,
                   const struct fp8kv_judge_kv_input *in, struct fp8kv_judge_kv_result *out);

/* The parts of an engine's output, as bits of a mask (fp8kv_judge_kv_sizes). */
enum {
    FP8KV_JUDGE_KV_CACHES = 1u << 0,       /* key_cache and value_cache */
    FP8KV_JUDGE_KV_SCALE_CACHES = 1u << 1, /* key_scale_cache and value_scale_cache */
    FP8KV_JUDGE_KV_GATHER = 1u << 2,
    FP8KV_JUDGE_KV_ATTENTION = 1u << 3,
};

/* What each part must hold for a case (the sizes fp8kv_judge_kv holds the buffers to). */
struct fp8kv_judge_kv_sizes {
    size_t cache_bytes;     /* each of key_cache and value_cache, in bytes */
    size_t scale_entries;   /* each scale cache, in f32 entries (0: the case has none) */
    size_t gather_count;    /* the gather rows, in elements: 2 x rows x heads x head_size */
    size_t attention_count; /* the attention output, in elements: num_seqs x q heads x head_size */
};

/* fp8kv_judge_kv_sizes: what fp8kv_judge_kv checks before it looks at a buffer (the vectors
 * verified, the profile and case found, the parts — a mask of FP8KV_JUDGE_KV_* — judged
 * together on that case), with the same messages, and the size each part must have into out:
 * so a caller that reads its buffers from files (`fp8kv judge-kv`) refuses a file of the wrong
 * size before it reads the file's data. FP8KV_OK, or FP8KV_ERR (out is then zeroed). */
int fp8kv_judge_kv_sizes(const char *vectors, const char *profile, int case_index, unsigned parts,
                         struct fp8kv_judge_kv_sizes *out);

/* fp8kv_judge_kv_suite: judges in — an attention output alone, under in->arithmetic — against
 * the engine-suite case c of profile p (fp8kv/kv_suite.h: generated and its inputs checked),
 * with the same result, text and JSON ("suite": "engine"). FP8KV_OK, or FP8KV_ERR (another
 * part given, a buffer of the wrong size, a bad arithmetic, a reference whose digest differs
 * from the committed one). */
struct fp8kv_suite_case;
struct fp8kv_profile;
int fp8kv_judge_kv_suite(const struct fp8kv_suite_case *c, const struct fp8kv_profile *p,
                         const struct fp8kv_judge_kv_input *in, struct fp8kv_judge_kv_result *out);

/* fp8kv_judge_kv_result_free: releases out (safe on a zeroed or freed result). */
void fp8kv_judge_kv_result_free(struct fp8kv_judge_kv_result *out);

#ifdef __cplusplus
}
#endif
#endif
