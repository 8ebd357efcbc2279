/* py_api.c — libfp8kv_py: the flat C interface the Python package (python/fp8kv) calls
 * through ctypes. Everything here forwards to the judge library: the package judges, encodes
 * and decodes with the same C code as the CLI, never with a second implementation.
 *
 * Conventions: functions return 0 or a negative fp8kv status, with fp8kv_py_last_error()
 * saying why; strings handed out are malloc'd and released with fp8kv_py_free. The ABI is
 * versioned by fp8kv_py_abi_version(); the package refuses a library of another version.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <pthread.h>

#include "fp8kv/checks.h"
#include "fp8kv/choices.h"
#include "fp8kv/diag.h"
#include "fp8kv/kv_attention.h"
#include "fp8kv/kv_verdict.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/kv_suite.h"
#include "fp8kv/verify.h"

#define FP8KV_PY_ABI_VERSION 6
#define API __attribute__((visibility("default")))

API int fp8kv_py_abi_version(void);
API const char *fp8kv_py_last_error(void);
API void fp8kv_py_free(void *p);
API const char *fp8kv_py_name(const char *table, int i);
API const char *fp8kv_py_default(const char *what);
API int fp8kv_py_case_count(const char *vectors, const char *profile, int *count);
API char *fp8kv_py_case_json(const char *vectors, const char *profile, int index);
API void *fp8kv_py_case_file(const char *vectors, const char *profile, int index, const char *name,
                             size_t *len);
API int fp8kv_py_judge_kv(const char *vectors, const char *profile, int index, const char *subject,
                          const uint8_t *key_cache, size_t key_bytes, const uint8_t *value_cache,
                          size_t value_bytes, const float *key_scale_cache, size_t key_scales,
                          const float *value_scale_cache, size_t value_scales, const void *gather,
                          size_t gather_count, int gather_dtype, const void *attention,
                          size_t attention_count, const char *arithmetic, int *conformant,
                          char **text, char **json);
API int fp8kv_py_arithmetic(const char *text, int *q, int *out, char *words, size_t size);
API int fp8kv_py_suite_count(void);
API char *fp8kv_py_suite_case_json(const char *vectors, const char *profile, int index);
API int fp8kv_py_suite_reference(const char *vectors, const char *profile, int index,
                                 const char *arithmetic, double *exact, double *lo, double *hi,
                                 size_t count);
API void *fp8kv_py_suite_array(const char *vectors, const char *profile, int index,
                               const char *name, size_t *len);
API int fp8kv_py_judge_suite(const char *vectors, const char *profile, int index,
                             const char *subject, const void *attention, size_t attention_count,
                             const char *arithmetic, int *conformant, char **text, char **json);
API int fp8kv_py_encode(const char *profile, const char *model, float scale, const uint32_t *x,
                        size_t n, uint8_t *out);
API int fp8kv_py_decode(const char *profile, float scale, const uint8_t *codes, size_t n,
                        float *out);

int fp8kv_py_abi_version(void)
{
    return FP8KV_PY_ABI_VERSION;
}

const char *fp8kv_py_last_error(void)
{
    return fp8kv_last_error();
}

void fp8kv_py_free(void *p)
{
    free(p);
}

/* fp8kv_py_name: name i of the named choice called table, in table order (the enum's
 * numbers): table is a choice of the registry (fp8kv/choices.h), "format", "profile",
 * "block_format", "overflow", "inf", "nan_check", "model", "kernel_model" (the models
 * fp8kv_is_kernel_model accepts), "dtype", "read_model", "layout", "scale_granularity",
 * "block_rule", "block_model", "class" ... NULL past the last name and for a table that is no
 * choice. */
const char *fp8kv_py_name(const char *table, int i)
{
    return fp8kv_choice_name_at(fp8kv_choice_named(table), i);
}

/* fp8kv_py_default: the name of the default of the named choice called what (fp8kv/choices.h;
 * the defaults are FP8KV_DEFAULT_*, fp8kv_default_profile and FP8KV_BLOCK_DEFAULT_MODEL):
 * "profile", "format", "overflow", "inf", "model", "dtype", "read_model", "nan_check",
 * "block_model" ... NULL for a choice without a default and for what is no choice. */
const char *fp8kv_py_default(const char *what)
{
    return fp8kv_choice_default(fp8kv_choice_named(what));
}

static const struct fp8kv_profile *profile_named(const char *name)
{
    return fp8kv_profile_named(name);
}

/* fp8kv_py_case_count: the number of golden KV cases of profile, after verifying vectors in
 * full, every call (fp8kv_vectors_trust_again: kv_cases() on a directory altered since an
 * earlier call fails). */
int fp8kv_py_case_count(const char *vectors, const char *profile, int *count)
{
    const struct fp8kv_profile *p = profile_named(profile);
    if (!p || fp8kv_vectors_trust_again(vectors) != 0)
        return FP8KV_ERR;
    return fp8kv_kv_case_count(vectors, p, count);
}

/* fp8kv_py_case_json: case index of profile, loaded and validated (vectors verified first, and
 * every file read checked against the digests verified): its parameters, scales (as f32 bits:
 * JSON has no NaN, which k_scale and v_scale are unless the scales are per tensor) and the
 * paths of its files, as JSON. */
char *fp8kv_py_case_json(const char *vectors, const char *profile, int index)
{
    const struct fp8kv_profile *p = profile_named(profile);
    struct fp8kv_kv_case c;
    if (!p || fp8kv_vectors_trust(vectors) != 0 || fp8kv_kv_case_find(vectors, p, index, &c) != 0)
        return NULL;
    const uint32_t *scales = c.scales.data;
    json_t *o = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:I, s:I, s:[I, I, I], "
        "s:s, s:I}",
        "profile", p->name, "index", c.index, "case_count", c.case_count, "num_blocks",
        c.shape.num_blocks, "block_size", c.shape.block_size, "num_heads", c.shape.num_heads,
        "head_size", c.shape.head_size, "layout", fp8kv_kv_layout_name(c.shape.layout), "in_dtype",
        fp8kv_kv_dtype_name(c.in), "num_tokens", c.num_tokens, "num_seqs", c.num_seqs,
        "max_blocks_per_seq", c.max_blocks, "num_q_heads", c.num_q_heads, "rows",
        (json_int_t)c.rows, "cache_bytes", (json_int_t)c.cache_bytes, "scale_bits",
        (json_int_t)scales[0], (json_int_t)scales[1], (json_int_t)scales[2], "scale_granularity",
        fp8kv_kv_scale_granularity_name(c.granularity), "scale_entries",
        (json_int_t)c.scale_entries);
    json_t *files = json_object();
    for (size_t i = 0; i < FP8KV_KV_CASE_FILE_COUNT; i++) {
        if (!fp8kv_kv_case_has_file(&c, i))
            continue;
        char file[64], path[1024];
        snprintf(file, sizeof file, "kv/case%d_%s.npy", index, fp8kv_kv_case_files[i]);
        json_object_set_new(files, fp8kv_kv_case_files[i],
                            json_string(fp8kv_vector_path(path, sizeof path, vectors, p, file)));
    }
    json_object_set_new(o, "files", files);
    char *text = json_dumps(o, JSON_SORT_KEYS);
    json_decref(o);
    fp8kv_kv_case_free(&c);
    if (!text)
        fp8kv_fail("out of memory");
    return text;
}

/* fp8kv_py_case_file: the bytes of file name (one of fp8kv_kv_case_files) of case index of
 * profile, a whole .npy file, as verification hashed them (vectors verified first; read through
 * fp8kv_vectors_read, so a file changed since is an error naming it): the package parses its
 * arrays from these bytes, never from the file. malloc'd (free with fp8kv_py_free), *len its
 * length; NULL with the error. */
void *fp8kv_py_case_file(const char *vectors, const char *profile, int index, const char *name,
                         size_t *len)
{
    const struct fp8kv_profile *p = profile_named(profile);
    if (!p || fp8kv_vectors_trust(vectors) != 0)
        return NULL;
    int known = 0;
    for (size_t i = 0; name && i < FP8KV_KV_CASE_FILE_COUNT; i++)
        known |= strcmp(name, fp8kv_kv_case_files[i]) == 0;
    if (!known || index < 0) {
        fp8kv_fail("no file '%s' of case %d: a case's files are those of vectors/README.md",
                   name ? name : "(none)", index);
        return NULL;
    }
    char rel[128];
    snprintf(rel, sizeof rel, "%s/kv/case%d_%s.npy", p->name, index, name);
    return fp8kv_vectors_read(vectors, rel, len);
}

/* fp8kv_py_judge_kv: fp8kv_judge_kv on flat arguments (NULL: a part not given); *text and
 * *json receive the report (free with fp8kv_py_free). */
int fp8kv_py_judge_kv(const char *vectors, const char *profile, int index, const char *subject,
                      const uint8_t *key_cache, size_t key_bytes, const uint8_t *value_cache,
                      size_t value_bytes, const float *key_scale_cache, size_t key_scales,
                      const float *value_scale_cache, size_t value_scales, const void *gather,
                      size_t gather_count, int gather_dtype, const void *attention,
                      size_t attention_count, const char *arithmetic, int *conformant, char **text,
                      char **json)
{
    const struct fp8kv_judge_kv_input in = {.subject = subject,
                                            .key_cache = key_cache,
                                            .value_cache = value_cache,
                                            .key_bytes = key_bytes,
                                            .value_bytes = value_bytes,
                                            .key_name = "key_cache",
                                            .value_name = "value_cache",
                                            .key_scale_cache = key_scale_cache,
                                            .value_scale_cache = value_scale_cache,
                                            .key_scale_count = key_scales,
                                            .value_scale_count = value_scales,
                                            .key_scale_name = "key_scale_cache",
                                            .value_scale_name = "value_scale_cache",
                                            .gather = gather,
                                            .gather_count = gather_count,
                                            .gather_dtype = (enum fp8kv_kv_dtype)gather_dtype,
                                            .gather_name = "gather",
                                            .attention = attention,
                                            .attention_count = attention_count,
                                            .attention_name = "attention",
                                            .arithmetic = arithmetic};
    struct fp8kv_judge_kv_result r;
    if (fp8kv_judge_kv(vectors, profile, index, &in, &r) != 0)
        return FP8KV_ERR;
    *conformant = r.conformant;
    *text = r.text;
    *json = r.json;
    r.text = r.json = NULL; /* handed to the caller */
    fp8kv_judge_kv_result_free(&r);
    return FP8KV_OK;
}

/* fp8kv_py_arithmetic: the dtypes (enum fp8kv_kv_dtype: f32 0, f16 1, bf16 2) of q and of
 * the output under the declared arithmetic text (fp8kv/kv_attention.h), its canonical words
 * into words (size bytes). 0, or FP8KV_ERR naming what is wrong with text. */
int fp8kv_py_arithmetic(const char *text, int *q, int *out, char *words, size_t size)
{
    struct fp8kv_attention_arith a;
    if (fp8kv_attention_arith_parse(text, &a) != 0)
        return FP8KV_ERR;
    *q = fp8kv_attention_kv_dtype(a.q);
    *out = fp8kv_attention_kv_dtype(a.out);
    fp8kv_attention_arith_words(&a, words, size);
    return FP8KV_OK;
}

/* fp8kv_py_encode: out[i] = the code of f32 x[i] (bits) stored at scale under profile and a
 * kernel's scale model (fp8kv_is_kernel_model): the bits codec, proven equal to the oracle on
 * every f32 input, after the model's quotient. */
int fp8kv_py_encode(const char *profile, const char *model, float scale, const uint32_t *x,
                    size_t n, uint8_t *out)
{
    const struct fp8kv_profile *p = profile_named(profile);
    if (!p)
        return FP8KV_ERR;
    if (!(scale > 0.0f) || isinf(scale))
        return fp8kv_fail("scale %g: a store's scale is a finite number above 0", (double)scale);
    const int m = fp8kv_name_index(fp8kv_model_names, FP8KV_MODEL_COUNT, model);
    if (m < 0)
        return fp8kv_fail("unknown scale model '%s'", model ? model : "(none)");
    struct fp8kv_codec_cfg cfg;
    if (fp8kv_model_cfg(p, (enum fp8kv_scale_model)m, &cfg) != 0)
        return FP8KV_ERR;
    for (size_t i = 0; i < n; i++)
        out[i] = fp8kv_store_f32(cfg, fp8kv_f32_from_bits(x[i]), scale);
    return FP8KV_OK;
}

/* fp8kv_py_decode: out[i] = decode(codes[i]) * scale rounded to f32 (the rounded read model). */
int fp8kv_py_decode(const char *profile, float scale, const uint8_t *codes, size_t n, float *out)
{
    const struct fp8kv_profile *p = profile_named(profile);
    if (!p)
        return FP8KV_ERR;
    if (!(scale > 0.0f) || isinf(scale))
        return fp8kv_fail("scale %g: a read's scale is a finite number above 0", (double)scale);
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    for (size_t i = 0; i < n; i++)
        out[i] = fp8kv_decode_bits(cfg, codes[i]) * scale;
    return FP8KV_OK;
}

/* ---- the engine suite ------------------------------------------------------------------------
 * A case is generated once and kept (the last SUITE_KEPT asked for, about 50 MB for the largest
 * case: a test judges a few cases many times, and generating one takes up to a second); the lock
 * makes the calls of several threads take turns. */

#define SUITE_KEPT 8

static pthread_mutex_t suite_lock = PTHREAD_MUTEX_INITIALIZER;
static struct suite_kept {
    int valid;
    char vectors[1024], profile[64];
    unsigned long long last_used;
    struct fp8kv_suite_case c;
} suite_kept[SUITE_KEPT];
static unsigned long long suite_clock;

/* suite_case: case index of profile (a kept one, or generated now in place of the least
 * recently used); the caller holds the lock. NULL with a message. */
static const struct fp8kv_suite_case *suite_case(const char *vectors, const char *profile,
                                                 int index, const struct fp8kv_profile **p)
{
    *p = profile_named(profile);
    if (!*p || fp8kv_vectors_trust(vectors) != 0)
        return NULL;
    struct suite_kept *slot = &suite_kept[0];
    for (int i = 0; i < SUITE_KEPT; i++) {
        struct suite_kept *k = &suite_kept[i];
        if (k->valid && k->c.index == index && strcmp(k->vectors, vectors) == 0 &&
            strcmp(k->profile, profile) == 0) {
            k->last_used = ++suite_clock;
            return &k->c;
        }
        if (!k->valid || (slot->valid && k->last_used < slot->last_used))
            slot = k;
    }
    fp8kv_suite_case_free(&slot->c);
    slot->valid = 0;
    if (strlen(vectors) >= sizeof slot->vectors ||
        fp8kv_suite_case_make(vectors, *p, index, &slot->c) != 0)
        return NULL;
    snprintf(slot->vectors, sizeof slot->vectors, "%s", vectors);
    snprintf(slot->profile, sizeof slot->profile, "%s", profile);
    slot->valid = 1;
    slot->last_used = ++suite_clock;
    return &slot->c;
}

int fp8kv_py_suite_count(void)
{
    return fp8kv_suite_case_count();
}

/* fp8kv_py_suite_case_json: engine-suite case index of profile: its parameters (scales as f32
 * bits), as JSON; cheap (the caches are generated, and checked, when first used). */
char *fp8kv_py_suite_case_json(const char *vectors, const char *profile, int index)
{
    const struct fp8kv_profile *p = profile_named(profile);
    struct fp8kv_suite_case shape;
    if (!p || fp8kv_vectors_trust(vectors) != 0 || fp8kv_suite_case_shape(index, &shape) != 0)
        return NULL;
    const struct fp8kv_suite_case *c = &shape;
    char *text = NULL;
    {
        char words[192];
        fp8kv_suite_case_words(c, words, sizeof words);
        json_t *o = json_pack(
            "{s:s, s:s, s:i, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:i, s:i, s:i, s:i, "
            "s:i, s:[I, I, I]}",
            "profile", p->name, "suite", "engine", "index", c->index, "case_count", c->case_count,
            "name", c->name, "words", words, "num_blocks", c->shape.num_blocks, "block_size",
            c->shape.block_size, "num_heads", c->shape.num_heads, "head_size", c->shape.head_size,
            "layout", fp8kv_kv_layout_name(c->shape.layout), "packing",
            fp8kv_kv_packing_names[c->packing], "num_seqs", c->num_seqs, "num_q_heads",
            c->num_q_heads, "max_blocks_per_seq", c->max_blocks, "rows", c->rows, "window",
            c->window, "scale_bits", (json_int_t)fp8kv_f32_bits(c->k_scale),
            (json_int_t)fp8kv_f32_bits(c->v_scale), (json_int_t)fp8kv_f32_bits(c->softmax_scale));
        text = o ? json_dumps(o, JSON_SORT_KEYS) : NULL;
        json_decref(o);
        if (!text)
            fp8kv_fail("out of memory");
    }
    fp8kv_suite_case_free(&shape);
    return text;
}

/* fp8kv_py_suite_array: a copy of one array of engine-suite case index ("query", "key_cache",
 * "value_cache", "block_table", "seq_lens"), *len its bytes. NULL with a message. */
void *fp8kv_py_suite_array(const char *vectors, const char *profile, int index, const char *name,
                           size_t *len)
{
    pthread_mutex_lock(&suite_lock);
    const struct fp8kv_profile *p;
    const struct fp8kv_suite_case *c = suite_case(vectors, profile, index, &p);
    void *out = NULL;
    if (c) {
        const size_t q = (size_t)c->rows * c->num_q_heads * c->shape.head_size;
        const void *src = NULL;
        size_t n = 0;
        if (strcmp(name, "query") == 0)
            src = c->query, n = q * sizeof(float);
        else if (strcmp(name, "query_lens") == 0)
            src = c->query_lens, n = (size_t)c->num_seqs * sizeof(int32_t);
        else if (strcmp(name, "key_cache") == 0 || strcmp(name, "value_cache") == 0)
            src = name[0] == 'k' ? c->key_cache : c->value_cache, n = fp8kv_cache_bytes(&c->shape);
        else if (strcmp(name, "block_table") == 0)
            src = c->block_table, n = (size_t)c->num_seqs * c->max_blocks * sizeof(int32_t);
        else if (strcmp(name, "seq_lens") == 0)
            src = c->seq_lens, n = (size_t)c->num_seqs * sizeof(int32_t);
        else
            fp8kv_fail("no array '%s' of an engine-suite case (query, query_lens, key_cache, "
                       "value_cache, block_table, seq_lens)",
                       name);
        if (src && (out = malloc(n ? n : 1)) != NULL) {
            memcpy(out, src, n);
            *len = n;
        } else if (src) {
            fp8kv_fail("out of memory");
        }
    }
    pthread_mutex_unlock(&suite_lock);
    return out;
}

/* fp8kv_py_suite_reference: the golden output of engine-suite case index under arithmetic:
 * per output (count of them: rows x q heads x head size) the exact value and the interval of
 * the output dtype a correct implementation lies in, its digest checked first. 0, or FP8KV_ERR
 * with a message (a count that is not the case's, an unknown arithmetic). */
int fp8kv_py_suite_reference(const char *vectors, const char *profile, int index,
                             const char *arithmetic, double *exact, double *lo, double *hi,
                             size_t count)
{
    struct fp8kv_attention_arith a;
    if (fp8kv_attention_arith_parse(arithmetic, &a) != 0)
        return FP8KV_ERR;
    pthread_mutex_lock(&suite_lock);
    const struct fp8kv_profile *p;
    const struct fp8kv_suite_case *c = suite_case(vectors, profile, index, &p);
    struct fp8kv_attention_ref ref;
    int rc = c ? fp8kv_suite_reference_checked(c, p->name, &a, &ref) : FP8KV_ERR;
    pthread_mutex_unlock(&suite_lock);
    if (rc != 0)
        return FP8KV_ERR;
    if (ref.count != count)
        rc = fp8kv_fail("engine-suite case %d has %zu outputs, not %zu", index, ref.count, count);
    else {
        memcpy(exact, ref.exact, count * sizeof *exact);
        memcpy(lo, ref.lo, count * sizeof *lo);
        memcpy(hi, ref.hi, count * sizeof *hi);
    }
    fp8kv_attention_ref_free(&ref);
    return rc;
}

/* fp8kv_py_judge_suite: fp8kv_judge_kv_suite of an attention output of engine-suite case
 * index; *text and *json receive the report (free with fp8kv_py_free). */
int fp8kv_py_judge_suite(const char *vectors, const char *profile, int index, const char *subject,
                         const void *attention, size_t attention_count, const char *arithmetic,
                         int *conformant, char **text, char **json)
{
    const struct fp8kv_judge_kv_input in = {.subject = subject,
                                            .attention = attention,
                                            .attention_count = attention_count,
                                            .attention_name = "attention",
                                            .arithmetic = arithmetic};
    pthread_mutex_lock(&suite_lock);
    const struct fp8kv_profile *p;
    const struct fp8kv_suite_case *c = suite_case(vectors, profile, index, &p);
    struct fp8kv_judge_kv_result r;
    int rc = c ? fp8kv_judge_kv_suite(c, p, &in, &r) : FP8KV_ERR;
    pthread_mutex_unlock(&suite_lock);
    if (rc != 0)
        return FP8KV_ERR;
    *conformant = r.conformant;
    *text = r.text;
    *json = r.json;
    r.text = r.json = NULL;
    fp8kv_judge_kv_result_free(&r);
    return FP8KV_OK;
}
