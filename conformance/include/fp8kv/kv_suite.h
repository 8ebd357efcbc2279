/* fp8kv/kv_suite.h — the engine suite: decode cases at the shapes engines run, generated.
 *
 * The golden KV cases are small (head sizes 8..128, at most 70 tokens): they show every byte
 * rule, but no split-KV partition, no combine step and no head size an engine's fast kernel
 * takes. The engine suite's cases are engine-shaped: head sizes 64, 128 and 256, GQA ratios 1,
 * 4 and 8, block sizes 16, 32 and 64, sequences of 1 to 8,200 tokens whose lengths cross the
 * partition sizes engines use, batches up to 64, block ids past 65,535, scores large enough
 * that an exp without the running maximum overflows; every slot no sequence holds (the rest of
 * a last block, every block no sequence owns) holds a NaN code, so a kernel that masks V
 * through the logits alone reads 0 x NaN. Queries are drawn so that in most heads a few tokens
 * carry most of the weight — the first, the last, tokens at partition edges — so that a token
 * dropped, added or read from the wrong block moves the output far outside any bound.
 *
 * Three cases have more than one query a sequence — 2 to 8 (multi-token decode, speculative
 * verification), all of a sequence's tokens (causal prefill) or its last ones attending to the
 * cached tokens and to each other (chunked prefill), and a sliding window of 256 — for the
 * subjects that take them (the KV ABI's attention takes one query a sequence: there, they are
 * "not run").
 *
 * They are too large to commit: each is generated from its seed in the suite's table
 * (kv/suite.c) over the profile's verified decode.npy (codes are chosen by value; nothing of a
 * store is involved), and before any verdict the digest of its inputs, and of its reference
 * under the arithmetic judged, are compared with the committed ones (kv/suite_digests.inc,
 * written by `fp8kv suite --digests`): a generator or a reference that changed is an error,
 * never a verdict. The reference is fp8kv/kv_attention.h's (its own exp, so the digest is the
 * same on every IEEE machine).
 */
#ifndef FP8KV_KV_SUITE_H
#define FP8KV_KV_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/checks.h"
#include "fp8kv/digest.h"
#include "fp8kv/kv_attention.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One engine-suite case, generated. Caches and tables as the golden cases have them
 * (fp8kv/kv_cache.h's layouts), scales per tensor. */
struct fp8kv_suite_case {
    int index, case_count;
    char name[64]; /* what the case stresses */
    struct fp8kv_cache_shape shape;
    int num_seqs, num_q_heads, max_blocks;
    float k_scale, v_scale, softmax_scale;
    int32_t *seq_lens;   /* [num_seqs] */
    int32_t *query_lens; /* [num_seqs]: its last query_lens[i] tokens are queries (1: decode;
                            more: multi-token decode, or (chunked) prefill) */
    int rows;            /* query rows: the sum of query_lens */
    int window;          /* sliding-window attention over the last `window` tokens; 0: none */
    enum fp8kv_kv_packing packing; /* how the kernels are handed the caches where they take it:
                                      one tensor (kv_first, block_first) or two (separate); the
                                      caches below are separate, shape.packing separate */
    int32_t *block_table;          /* [num_seqs, max_blocks] (unused entries: 0) */
    float *query;                  /* [rows, num_q_heads, head_size], sequence 0's rows first */
    uint8_t *key_cache, *value_cache;
    float decode[256];                     /* the profile's decode.npy */
    char digest[FP8KV_SHA256_HEX_LEN + 1]; /* of the inputs */
};

/* fp8kv_suite_case_count: the cases of the engine suite (the same for every profile). */
int fp8kv_suite_case_count(void);

/* fp8kv_suite_case_make: generates case index of profile p over the decode table of the
 * vector directory dir (verified: fp8kv_vectors_trust first), and checks the digest of its
 * inputs against the committed one. 0, or FP8KV_ERR naming what is wrong (c is then freed). */
int fp8kv_suite_case_make(const char *dir, const struct fp8kv_profile *p, int index,
                          struct fp8kv_suite_case *c);

/* fp8kv_suite_case_shape: case index's parameters, sequence lengths and block table alone
 * (the same for every profile; no caches, queries or digest: cheap). 0, or FP8KV_ERR. */
int fp8kv_suite_case_shape(int index, struct fp8kv_suite_case *c);

/* fp8kv_suite_case_free: frees c (safe on a zeroed or freed case). */
void fp8kv_suite_case_free(struct fp8kv_suite_case *c);

/* fp8kv_suite_case_words: "<name>: nhd, H x D heads (q Q), block B, S seqs of L..M tokens"
 * into buf. */
void fp8kv_suite_case_words(const struct fp8kv_suite_case *c, char *buf, size_t size);

/* fp8kv_suite_reference: the reference of case c under a (fp8kv/kv_attention.h), and the
 * digest of its exact values into digest. */
int fp8kv_suite_reference(const struct fp8kv_suite_case *c, const struct fp8kv_attention_arith *a,
                          struct fp8kv_attention_ref *ref, char digest[FP8KV_SHA256_HEX_LEN + 1]);

/* fp8kv_suite_reference_checked: fp8kv_suite_reference of c under a, its digest compared with
 * the committed one for a's roundings (FP8KV_ERR when it differs; a combination of roundings
 * no preset has has no committed digest and is computed unchecked). 0, or FP8KV_ERR. */
int fp8kv_suite_reference_checked(const struct fp8kv_suite_case *c, const char *profile,
                                  const struct fp8kv_attention_arith *a,
                                  struct fp8kv_attention_ref *ref);

/* fp8kv_suite_judge_attention: judges y (c's decode output under a, elements of a->out) into
 * chk ("kv-attention-engine"): the reference's digest is compared with the committed one for
 * a's roundings first (FP8KV_ERR when it differs; a combination of roundings no preset has
 * is judged with no committed digest, which the detail says). The last few references are kept
 * in the process (keyed by the case's inputs digest, decode table, index and a's fields), so
 * judging many outputs of one case computes its reference once (the last 32). Thread-safe. 0, or
 * FP8KV_ERR. */
int fp8kv_suite_judge_attention(const struct fp8kv_suite_case *c, const char *profile,
                                const char *subject, const struct fp8kv_attention_arith *a,
                                const void *y, struct fp8kv_check *chk);

/* fp8kv_suite_print_digests: computes every case's digests under every profile of dir and
 * prints kv/suite_digests.inc to out (`fp8kv suite --digests`). 0, or FP8KV_ERR. */
int fp8kv_suite_print_digests(const char *dir, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
