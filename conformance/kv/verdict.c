/* kv/verdict.c — fp8kv/kv_verdict.h: one golden case, an engine's buffers, one verdict. */
#include "fp8kv/kv_verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/kv_attention.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/kv_suite.h"
#include "fp8kv/verify.h"
#include "report/json.h"

static int check_size(const char *name, const char *what, size_t have, size_t want,
                      const struct fp8kv_kv_case *c, const char *unit)
{
    if (have == want)
        return FP8KV_OK;
    return fp8kv_fail("%s: %zu %s, but case %d of this profile needs %zu (%s)", name, have, unit,
                      c->index, want, what);
}

/* The size each part must have for case c. */
static void case_sizes(const struct fp8kv_kv_case *c, struct fp8kv_judge_kv_sizes *out)
{
    out->cache_bytes = c->cache_bytes;
    out->scale_entries = c->granularity == FP8KV_SCALE_TOKEN_HEAD ? c->scale_entries : 0;
    out->gather_count = 2 * c->rows * c->width;
    out->attention_count = (size_t)c->num_seqs * c->num_q_heads * c->shape.head_size;
}

static int need_both_scale_caches(const struct fp8kv_kv_case *c)
{
    return fp8kv_fail("case %d has a scale per token and head: its store is judged with the key "
                      "and value scale caches it wrote, give both",
                      c->index);
}

/* check_parts: the parts given (a mask of FP8KV_JUDGE_KV_*) are judged together on case c. */
static int check_parts(unsigned parts, const struct fp8kv_kv_case *c)
{
    if (!(parts & (FP8KV_JUDGE_KV_CACHES | FP8KV_JUDGE_KV_GATHER | FP8KV_JUDGE_KV_ATTENTION)))
        return fp8kv_fail("nothing to judge: give the caches, a gather output or an "
                          "attention output");
    const int token_head = c->granularity == FP8KV_SCALE_TOKEN_HEAD;
    const int caches = (parts & FP8KV_JUDGE_KV_CACHES) != 0;
    const int scale_caches = (parts & FP8KV_JUDGE_KV_SCALE_CACHES) != 0;
    if (scale_caches && !token_head)
        return fp8kv_fail("case %d has scales per %s: it has no scale caches to judge", c->index,
                          c->granularity == FP8KV_SCALE_HEAD ? "KV head" : "tensor");
    if (token_head && caches && !scale_caches)
        return need_both_scale_caches(c);
    if (scale_caches && !caches)
        return fp8kv_fail("the scale caches are judged with the key and value caches: give them");
    return FP8KV_OK;
}

/* check_input: the parts given, and their sizes against case c. */
static int check_input(const struct fp8kv_judge_kv_input *in, const struct fp8kv_kv_case *c)
{
    if (!in->key_cache != !in->value_cache)
        return fp8kv_fail("the key and value caches are judged together: give both");
    const int scale_caches = in->key_scale_cache || in->value_scale_cache;
    const unsigned parts = (in->key_cache ? FP8KV_JUDGE_KV_CACHES : 0u) |
                           (scale_caches ? FP8KV_JUDGE_KV_SCALE_CACHES : 0u) |
                           (in->gather ? FP8KV_JUDGE_KV_GATHER : 0u) |
                           (in->attention ? FP8KV_JUDGE_KV_ATTENTION : 0u);
    if (check_parts(parts, c) != 0)
        return FP8KV_ERR;
    if (scale_caches && !(in->key_scale_cache && in->value_scale_cache))
        return need_both_scale_caches(c);
    struct fp8kv_judge_kv_sizes want;
    case_sizes(c, &want);
    char what[128];
    snprintf(what, sizeof what, "num_blocks %d x block_size %d x heads %d x head_size %d",
             c->shape.num_blocks, c->shape.block_size, c->shape.num_heads, c->shape.head_size);
    if (in->key_cache &&
        (check_size(in->key_name, what, in->key_bytes, want.cache_bytes, c, "bytes") != 0 ||
         check_size(in->value_name, what, in->value_bytes, want.cache_bytes, c, "bytes") != 0))
        return FP8KV_ERR;
    snprintf(what, sizeof what, "num_blocks %d x block_size %d x heads %d", c->shape.num_blocks,
             c->shape.block_size, c->shape.num_heads);
    if (scale_caches && (check_size(in->key_scale_name, what, in->key_scale_count,
                                    want.scale_entries, c, "entries") != 0 ||
                         check_size(in->value_scale_name, what, in->value_scale_count,
                                    want.scale_entries, c, "entries") != 0))
        return FP8KV_ERR;
    if (in->gather) {
        if (in->gather_dtype < FP8KV_KV_F32 || in->gather_dtype > FP8KV_KV_BF16)
            return fp8kv_fail("%s: unknown gather dtype %d", in->gather_name, in->gather_dtype);
        snprintf(what, sizeof what, "2 (key, value) x %zu rows x %zu", c->rows, c->width);
        const size_t n = want.gather_count;
        if (check_size(in->gather_name, what, in->gather_count, n, c, "elements") != 0)
            return FP8KV_ERR;
    }
    snprintf(what, sizeof what, "num_seqs %d x q heads %d x head_size %d", c->num_seqs,
             c->num_q_heads, c->shape.head_size);
    if (in->attention && check_size(in->attention_name, what, in->attention_count,
                                    want.attention_count, c, "elements") != 0)
        return FP8KV_ERR;
    struct fp8kv_attention_arith a;
    if (in->attention && fp8kv_attention_arith_parse(in->arithmetic, &a) != 0)
        return FP8KV_ERR;
    return FP8KV_OK;
}

static int judge_parts(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                       const struct fp8kv_judge_kv_input *in, struct fp8kv_judge_kv_result *out)
{
    const char *subject = in->subject ? in->subject : "engine";
    struct fp8kv_check chk;
    int rc = FP8KV_OK;
    if (in->key_cache) {
        const struct fp8kv_kv_stored stored = {in->key_cache, in->value_cache, in->key_scale_cache,
                                               in->value_scale_cache};
        uint64_t counts[4];
        fp8kv_kv_judge_store(c, p, subject, &stored, &chk, counts);
        memcpy(out->cache_mismatches, counts, sizeof out->cache_mismatches);
        memcpy(out->scale_cache_mismatches, counts + 2, sizeof out->scale_cache_mismatches);
        fp8kv_check_finish(&chk, 0.0);
        out->bytes = 2 * c->cache_bytes;
        out->mismatches += chk.mismatches;
        rc = fp8kv_results_add(&out->checks, &chk);
    }
    if (rc == 0 && in->gather)
        rc = fp8kv_kv_judge_gather(c, p, subject, in->gather_dtype, in->gather, &chk);
    if (rc == 0 && in->gather) {
        fp8kv_check_finish(&chk, 0.0);
        out->mismatches += chk.mismatches;
        rc = fp8kv_results_add(&out->checks, &chk);
    }
    if (rc == 0 && in->attention) {
        struct fp8kv_attention_arith a;
        rc = fp8kv_attention_arith_parse(in->arithmetic, &a);
        if (rc == 0)
            rc = fp8kv_kv_judge_attention(c, p, subject, &a, in->attention, NULL, &chk);
        if (rc == 0) {
            fp8kv_check_finish(&chk, 0.0);
            rc = fp8kv_results_add(&out->checks, &chk);
        }
    }
    out->conformant = rc == 0 && fp8kv_results_passed(&out->checks);
    return rc;
}

/* ---- the report -------------------------------------------------------------------------- */

static void text_classes(FILE *f, const struct fp8kv_check *chk, uint64_t scale_entries,
                         uint64_t scale_mismatches)
{
    uint64_t classed = 0, classed_bad = 0;
    fprintf(f, "    %-20s %12s %12s\n", "input class", "bytes", "mismatches");
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        classed += chk->class_cases[k];
        classed_bad += chk->class_mismatches[k];
        if (chk->class_cases[k])
            fprintf(f, "    %-20s %12llu %12llu\n", fp8kv_class_names[k],
                    (unsigned long long)chk->class_cases[k],
                    (unsigned long long)chk->class_mismatches[k]);
    }
    fprintf(f, "    %-20s %12llu %12llu\n", "(no token: sentinel)",
            (unsigned long long)(chk->cases - classed - scale_entries),
            (unsigned long long)(chk->mismatches - classed_bad - scale_mismatches));
}

/* text_attention: an attention check's line (golden case or engine suite) and its detail. */
static void text_attention(FILE *f, const struct fp8kv_check *chk)
{
    fprintf(f,
            "  attention: %s: %llu of %llu outputs outside the bound, worst error/bound %.3g, "
            "nmse %.3g",
            chk->passed ? "pass" : "FAIL", (unsigned long long)chk->mismatches,
            (unsigned long long)chk->cases, chk->bound_ratio, chk->nmse);
    if (chk->nmse_reported)
        fprintf(f, " (reported)\n");
    else
        fprintf(f, " (threshold %g)\n", chk->threshold);
    fprintf(f, "    %s\n", chk->detail);
}

static void text_failures(FILE *f, const struct fp8kv_check *chk)
{
    if (chk->failure_lines)
        fprintf(f, "    first failures:\n");
    for (int i = 0; i < chk->failure_lines; i++)
        fprintf(f, "      %s\n", chk->failures[i]);
}

static void text_check(FILE *f, const struct fp8kv_kv_case *c, const struct fp8kv_check *chk,
                       const struct fp8kv_judge_kv_result *out)
{
    const char *verdict = chk->passed ? "pass" : "FAIL";
    if (strcmp(chk->name, "kv-store") == 0) {
        const uint64_t *bad = out->cache_mismatches, *bad_scales = out->scale_cache_mismatches;
        const int scales = c->granularity == FP8KV_SCALE_TOKEN_HEAD;
        fprintf(f, "  store: %s: key_cache %llu of %llu bytes differ, value_cache %llu of %llu\n",
                verdict, (unsigned long long)bad[0], (unsigned long long)c->cache_bytes,
                (unsigned long long)bad[1], (unsigned long long)c->cache_bytes);
        if (scales)
            fprintf(f, "  scale caches: key %llu of %llu entries differ, value %llu of %llu\n",
                    (unsigned long long)bad_scales[0], (unsigned long long)c->scale_entries,
                    (unsigned long long)bad_scales[1], (unsigned long long)c->scale_entries);
        text_classes(f, chk, scales ? 2 * (uint64_t)c->scale_entries : 0,
                     bad_scales[0] + bad_scales[1]);
    } else if (strncmp(chk->name, "kv-read-", 8) == 0) {
        fprintf(f, "  gather %s: %s: %llu of %llu elements differ, nmse %.3g\n", chk->name + 8,
                verdict, (unsigned long long)chk->mismatches, (unsigned long long)chk->cases,
                chk->nmse);
    } else {
        text_attention(f, chk);
    }
    text_failures(f, chk);
}

static char *render_text(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                         const struct fp8kv_judge_kv_result *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    char words[128];
    fp8kv_kv_case_words(c, words, sizeof words);
    fprintf(f, "judge-kv %s case%d: %s\n", p->name, c->index, words);
    for (size_t i = 0; i < out->checks.count; i++)
        text_check(f, c, &out->checks.items[i], out);
    /* the last line counts each part judged: bytes (and gather elements), attention outputs */
    const struct fp8kv_check *attention = NULL;
    for (size_t i = 0; i < out->checks.count; i++)
        if (strcmp(out->checks.items[i].name, "kv-attention") == 0)
            attention = &out->checks.items[i];
    fprintf(f, "judge-kv %s case%d:", p->name, c->index);
    if (!attention || out->checks.count > 1)
        fprintf(f, " bytes=%llu mismatches=%llu", (unsigned long long)out->bytes,
                (unsigned long long)out->mismatches);
    if (attention)
        fprintf(f, " outputs=%llu outside=%llu", (unsigned long long)attention->cases,
                (unsigned long long)attention->mismatches);
    fprintf(f, " verdict=%s\n", out->conformant ? "conformant" : "nonconformant");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* verdict_document: out's verdict document (report/json.h) with extra's keys (the case's own),
 * as text; NULL when either is missing (out of memory). Takes extra. */
static char *verdict_document(const struct fp8kv_judge_kv_result *out, json_t *extra)
{
    json_t *o = fp8kv_verdict_json("judge-kv", out->conformant ? "conformant" : "nonconformant",
                                   out->checks.items, out->checks.count);
    char *text = NULL;
    if (o && extra && json_object_update(o, extra) == 0)
        text = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(o);
    json_decref(extra);
    return text;
}

static char *render_json(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                         const struct fp8kv_judge_kv_result *out)
{
    return verdict_document(
        out,
        json_pack("{s:s, s:i, s:s, s:i, s:{s:s, s:s, s:s, s:i, s:i, s:i, s:i}, s:I, s:I, s:[I, I], "
                  "s:[I, I]}",
                  "schema", "fp8kv-judge-kv", "schema_version", FP8KV_JUDGE_KV_SCHEMA_VERSION,
                  "profile", p->name, "case", c->index, "shape", "layout",
                  fp8kv_kv_layout_name(c->shape.layout), "in_dtype", fp8kv_kv_dtype_name(c->in),
                  "scale_granularity", fp8kv_kv_scale_granularity_name(c->granularity),
                  "num_blocks", c->shape.num_blocks, "block_size", c->shape.block_size, "num_heads",
                  c->shape.num_heads, "head_size", c->shape.head_size, "bytes",
                  (json_int_t)out->bytes, "mismatches", (json_int_t)out->mismatches,
                  "cache_mismatches", (json_int_t)out->cache_mismatches[0],
                  (json_int_t)out->cache_mismatches[1], "scale_cache_mismatches",
                  (json_int_t)out->scale_cache_mismatches[0],
                  (json_int_t)out->scale_cache_mismatches[1]));
}

/* ---- the entry point --------------------------------------------------------------------- */

/* find_case: the profile called profile, and its case case_index from the verified vectors. */
static int find_case(const char *vectors, const char *profile, int case_index,
                     const struct fp8kv_profile **p, struct fp8kv_kv_case *c)
{
    if (!(*p = fp8kv_profile_named(profile)))
        return FP8KV_ERR;
    if (fp8kv_vectors_trust(vectors) != 0)
        return FP8KV_ERR;
    return fp8kv_kv_case_find(vectors, *p, case_index, c);
}

int fp8kv_judge_kv_sizes(const char *vectors, const char *profile, int case_index, unsigned parts,
                         struct fp8kv_judge_kv_sizes *out)
{
    memset(out, 0, sizeof *out);
    const struct fp8kv_profile *p;
    struct fp8kv_kv_case c;
    if (find_case(vectors, profile, case_index, &p, &c) != 0)
        return FP8KV_ERR;
    const int rc = check_parts(parts, &c);
    if (rc == 0)
        case_sizes(&c, out);
    fp8kv_kv_case_free(&c);
    return rc;
}

int fp8kv_judge_kv(const char *vectors, const char *profile, int case_index,
                   const struct fp8kv_judge_kv_input *in, struct fp8kv_judge_kv_result *out)
{
    memset(out, 0, sizeof *out);
    const struct fp8kv_profile *p;
    struct fp8kv_kv_case c;
    if (find_case(vectors, profile, case_index, &p, &c) != 0)
        return FP8KV_ERR;
    int rc = check_input(in, &c);
    if (rc == 0)
        rc = judge_parts(&c, p, in, out);
    if (rc == 0) {
        out->text = render_text(&c, p, out);
        out->json = render_json(&c, p, out);
        if (!out->text || !out->json)
            rc = fp8kv_fail("out of memory");
    }
    fp8kv_kv_case_free(&c);
    if (rc != 0)
        fp8kv_judge_kv_result_free(out);
    return rc;
}

/* ---- the engine suite -------------------------------------------------------------------- */

static char *render_suite_text(const struct fp8kv_suite_case *c, const struct fp8kv_profile *p,
                               const struct fp8kv_judge_kv_result *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    char words[160];
    fp8kv_suite_case_words(c, words, sizeof words);
    fprintf(f, "judge-kv %s engine/case%d %s\n", p->name, c->index, words);
    const struct fp8kv_check *chk = &out->checks.items[0];
    text_attention(f, chk);
    text_failures(f, chk);
    fprintf(f, "judge-kv %s engine/case%d: outputs=%llu outside=%llu verdict=%s\n", p->name,
            c->index, (unsigned long long)chk->cases, (unsigned long long)chk->mismatches,
            out->conformant ? "conformant" : "nonconformant");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static char *render_suite_json(const struct fp8kv_suite_case *c, const struct fp8kv_profile *p,
                               const struct fp8kv_judge_kv_result *out)
{
    return verdict_document(
        out,
        json_pack(
            "{s:s, s:i, s:s, s:s, s:i, s:s, s:{s:s, s:i, s:i, s:i, s:i}, s:I, s:I, s:s, s:[I, I], "
            "s:[I, I]}",
            "schema", "fp8kv-judge-kv", "schema_version", FP8KV_JUDGE_KV_SCHEMA_VERSION, "profile",
            p->name, "suite", "engine", "case", c->index, "name", c->name, "shape", "layout",
            fp8kv_kv_layout_name(c->shape.layout), "num_blocks", c->shape.num_blocks, "block_size",
            c->shape.block_size, "num_heads", c->shape.num_heads, "head_size", c->shape.head_size,
            "bytes", (json_int_t)0, "mismatches", (json_int_t)out->mismatches, "inputs_digest",
            c->digest, "cache_mismatches", (json_int_t)0, (json_int_t)0, "scale_cache_mismatches",
            (json_int_t)0, (json_int_t)0));
}

int fp8kv_judge_kv_suite(const struct fp8kv_suite_case *c, const struct fp8kv_profile *p,
                         const struct fp8kv_judge_kv_input *in, struct fp8kv_judge_kv_result *out)
{
    memset(out, 0, sizeof *out);
    if (in->key_cache || in->gather || in->key_scale_cache || !in->attention)
        return fp8kv_fail("the engine suite judges attention outputs only: give the attention "
                          "output alone");
    const size_t want = (size_t)c->rows * c->num_q_heads * c->shape.head_size;
    if (in->attention_count != want)
        return fp8kv_fail("%s: %zu elements, but engine-suite case %d needs %zu (query rows %d x "
                          "q heads %d x head_size %d)",
                          in->attention_name, in->attention_count, c->index, want, c->rows,
                          c->num_q_heads, c->shape.head_size);
    struct fp8kv_attention_arith a;
    struct fp8kv_check chk;
    int rc = fp8kv_attention_arith_parse(in->arithmetic, &a);
    if (rc == 0)
        rc = fp8kv_suite_judge_attention(c, p->name, in->subject ? in->subject : "engine", &a,
                                         in->attention, &chk);
    if (rc == 0) {
        fp8kv_check_finish(&chk, 0.0);
        out->mismatches = chk.mismatches;
        rc = fp8kv_results_add(&out->checks, &chk);
    }
    if (rc == 0) {
        out->conformant = fp8kv_results_passed(&out->checks);
        out->text = render_suite_text(c, p, out);
        out->json = render_suite_json(c, p, out);
        if (!out->text || !out->json)
            rc = fp8kv_fail("out of memory");
    }
    if (rc != 0)
        fp8kv_judge_kv_result_free(out);
    return rc;
}

void fp8kv_judge_kv_result_free(struct fp8kv_judge_kv_result *out)
{
    fp8kv_results_free(&out->checks);
    free(out->text);
    free(out->json);
    memset(out, 0, sizeof *out);
}
