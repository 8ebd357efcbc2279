/* fp8kv/kv_judge.h — the golden KV cases and the one judge of what a KV path produced from them.
 *
 * A golden case (vectors/<profile>/kv/caseN_*.npy, vectors/README.md) holds the inputs of a
 * store (key, value, slot mapping, scales), of a read (the golden caches, block table, sequence
 * lengths) and of a decode step (query, softmax scale), and the oracle's outputs for each. The
 * loader validates every shape, slot and block index before anything reads through them. The
 * judges compare outputs produced anywhere — fp8kv's own subjects (kv/checks.c), an engine's
 * caches saved to files (`fp8kv judge-kv`), numpy arrays or torch tensors (the Python package)
 * — against those outputs, and fill a struct fp8kv_check with counts, classes and the first
 * failures named by token, head, dim, block and offset.
 */
#ifndef FP8KV_KV_JUDGE_H
#define FP8KV_KV_JUDGE_H

#include "fp8kv/checks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The byte the golden caches hold where no slot is written, and that every output buffer
 * starts filled with. */
#define FP8KV_KV_SENTINEL 0xA5

/* Attention outputs pass with NMSE against the oracle's 128-bit result at most this. */
#define FP8KV_KV_ATTENTION_THRESHOLD 1e-10

/* The files of a golden case, kv/case<N>_<name>.npy, by name (vectors/README.md): every case
 * has the first FP8KV_KV_CASE_FILES_ALWAYS; "head_scales" only a case with per-head scales,
 * "scale_cache" only one with per-token-and-head scales (fp8kv_kv_case_has_file). */
#define FP8KV_KV_CASE_FILE_COUNT 16
#define FP8KV_KV_CASE_FILES_ALWAYS 14
extern const char *const fp8kv_kv_case_files[FP8KV_KV_CASE_FILE_COUNT];

/* One golden case, loaded and validated. */
struct fp8kv_kv_case {
    int index, case_count;
    struct fp8kv_cache_shape shape;
    enum fp8kv_kv_dtype in; /* the dtype of key and value */
    int num_tokens, num_seqs, max_blocks, num_q_heads;
    size_t rows, width, cache_bytes;       /* rows: sum of seq_lens; width: heads * head_size */
    float k_scale, v_scale, softmax_scale; /* k_scale, v_scale: NaN unless per tensor */
    enum fp8kv_kv_scale_granularity granularity;
    struct fp8kv_kv_scales k_scales, v_scales; /* the expected scales of each element */
    size_t scale_entries;                      /* of one scale cache: slots x heads */
    int32_t *slot_token;                       /* per cache slot: the token written there, or -1 */
    struct fp8kv_npy meta, key, value, slots, scales, block_table, seq_lens, query, key_cache,
        value_cache, gather[3], attention; /* gather: one per enum fp8kv_kv_dtype */
    struct fp8kv_npy head_scales;          /* per head: f32 bits [2, num_heads], key then value */
    struct fp8kv_npy scale_cache;          /* per token: f32 bits [2, scale_entries] */
    struct fp8kv_npy decode; /* the profile's decode.npy: each code's exact value, f32 [256] */
    uint32_t *boundaries;    /* the profile's boundaries.npy (fp8kv_load_boundaries): which
                                code each scale model's quotient gives, for failure lines */
};

/* fp8kv_kv_case_has_file: whether case c has file fp8kv_kv_case_files[i]. */
int fp8kv_kv_case_has_file(const struct fp8kv_kv_case *c, size_t i);

/* fp8kv_kv_case_scale: the expected scale of element (slot, head) of the key (is_key) or value
 * cache of case c: the tensor's, the head's, or the golden scale cache's. */
float fp8kv_kv_case_scale(const struct fp8kv_kv_case *c, int is_key, int64_t slot, int head);

/* fp8kv_kv_case_count: the number of golden cases of profile p in dir (case 0 says), after
 * loading case 0. 0, or FP8KV_ERR naming the file at fault. Does not verify the directory:
 * callers pass fp8kv_vectors_trust first; of a directory trusted, every file of a case is read
 * through fp8kv_vectors_read (fp8kv/verify.h), so what is loaded is the bytes verified, or an
 * error naming the file changed since. */
int fp8kv_kv_case_count(const char *dir, const struct fp8kv_profile *p, int *count);

/* fp8kv_kv_case_load: loads and validates case index of profile p (every file of it, and its
 * case_count against case 0's when index > 0). 0, or FP8KV_ERR naming the file at fault (c is
 * then freed). */
int fp8kv_kv_case_load(const char *dir, const struct fp8kv_profile *p, int index,
                       struct fp8kv_kv_case *c);

/* fp8kv_kv_case_find: fp8kv_kv_case_load of a case a user named: an index outside the profile's
 * cases is an error saying which exist ("unknown case 9: profile P has cases 0..4"). */
int fp8kv_kv_case_find(const char *dir, const struct fp8kv_profile *p, int index,
                       struct fp8kv_kv_case *c);

/* fp8kv_kv_case_free: frees every array of c (safe on a zeroed or freed case). */
void fp8kv_kv_case_free(struct fp8kv_kv_case *c);

/* fp8kv_kv_case_words: "<layout>, <dtype> in, H x D heads (q Q), block B, k .. v .." (or
 * "scales per head" / "scales per token and head") into buf. */
void fp8kv_kv_case_words(const struct fp8kv_kv_case *c, char *buf, size_t size);

/* fp8kv_kv_case_describe: "kv/caseN: <layout>, <dtype> in, H x D heads (q Q), block B, k .. v
 * .., <what>" into buf. */
void fp8kv_kv_case_describe(const struct fp8kv_kv_case *c, const char *what, char *buf,
                            size_t size);

/* fp8kv_kv_layout_name / fp8kv_kv_dtype_name: the name in fp8kv_kv_layout_names ("nhd",
 * "split_x", "hnd") / fp8kv_dtype_names ("f32", "f16", "bf16"); "?" for another value. */
const char *fp8kv_kv_layout_name(enum fp8kv_kv_layout layout);
const char *fp8kv_kv_dtype_name(enum fp8kv_kv_dtype dtype);

/* What a store wrote for a case: the caches (each cache_bytes long, filled with
 * FP8KV_KV_SENTINEL before the store) and, per token and head, the scale caches (each
 * scale_entries f32, filled with FP8KV_KV_SENTINEL bytes before; NULL otherwise). */
struct fp8kv_kv_stored {
    const uint8_t *key_cache, *value_cache;
    const float *key_scale_cache, *value_scale_cache;
};

/* fp8kv_kv_judge_store: judges what a store wrote for case c byte by byte against the golden
 * caches, and the scale caches entry by entry (f32 bits) against the golden ones. Fills chk
 * ("kv-store") with one case per cache byte and scale entry; each written byte is classed by
 * the quotient input / scale it stores (bytes of slots no token writes, and scale entries,
 * have no class); failure lines name the cache, offset, token, slot, block, head, dim, input,
 * scale, got and expected. mismatches (if not NULL) receives the counts of the key cache, the
 * value cache, the key scale cache and the value scale cache. */
void fp8kv_kv_judge_store(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                          const char *subject, const struct fp8kv_kv_stored *stored,
                          struct fp8kv_check *chk, uint64_t mismatches[4]);

/* fp8kv_kv_judge_gather: judges a gather + dequant into dtype out: got holds the key rows,
 * then the value rows ([2, rows, heads, head_size] elements of out's size), bit for bit
 * against the golden rows; also sets the NMSE (threshold 0: the golden rows model this very
 * computation). Fills chk ("kv-read-<dtype>"). 0, or FP8KV_ERR (out of memory). */
int fp8kv_kv_judge_gather(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                          const char *subject, enum fp8kv_kv_dtype out, const void *got,
                          struct fp8kv_check *chk);

/* fp8kv_kv_judge_attention: judges a decode step's output y [num_seqs, num_q_heads, head_size]
 * (elements of a->out) as computed under the declared arithmetic a (fp8kv/kv_attention.h):
 * each output within the per-element bound of a around the exact result of a's elementwise
 * roundings; under an all-f32 arithmetic also by NMSE against the oracle's 128-bit result,
 * threshold FP8KV_KV_ATTENTION_THRESHOLD (else the NMSE is reported). Fills chk
 * ("kv-attention"); detail_suffix (may be NULL) is appended to its detail. 0, or FP8KV_ERR
 * (out of memory). */
struct fp8kv_attention_arith;
int fp8kv_kv_judge_attention(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                             const char *subject, const struct fp8kv_attention_arith *a,
                             const void *y, const char *detail_suffix, struct fp8kv_check *chk);

#ifdef __cplusplus
}
#endif
#endif
