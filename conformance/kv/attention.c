/* kv/attention.c — fp8kv/kv_attention.h: declared arithmetics, the reference and its bound.
 *
 * docs/DESIGN.md §5.3.1 derives the bound this file computes; the names below follow it. */
#include "fp8kv/kv_attention.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "kv/attention_core.h"

const char *const fp8kv_attention_type_names[FP8KV_ATTN_TYPE_COUNT] = {"f32", "tf32", "bf16", "f16",
                                                                       "e4m3"};
const char *const fp8kv_attention_presets[FP8KV_ATTN_PRESET_COUNT] = {
    "f32", "tf32", "bf16", "f16", "bf16-folded", "f16-folded", "fp8"};

enum fp8kv_kv_dtype fp8kv_attention_kv_dtype(int t)
{
    return t == FP8KV_ATTN_BF16 ? FP8KV_KV_BF16 : t == FP8KV_ATTN_F16 ? FP8KV_KV_F16 : FP8KV_KV_F32;
}

size_t fp8kv_attention_type_size(int t)
{
    return t == FP8KV_ATTN_F32 ? 4 : 2;
}

double fp8kv_attention_round(double x, int t, int dir)
{
    return attn_round(x, t, dir);
}

/* ---- declared arithmetics -------------------------------------------------------------------- */

static const struct fp8kv_attention_arith preset_table[FP8KV_ATTN_PRESET_COUNT] = {
    {"f32", FP8KV_ATTN_F32, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_F32, FP8KV_ATTN_F32, FP8KV_ATTN_F32,
     FP8KV_ATTN_F32, 4, 16},
    {"tf32", FP8KV_ATTN_F32, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_F32, FP8KV_ATTN_TF32, FP8KV_ATTN_TF32,
     FP8KV_ATTN_F32, 4, 16},
    {"bf16", FP8KV_ATTN_BF16, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_BF16, FP8KV_ATTN_F32,
     FP8KV_ATTN_BF16, FP8KV_ATTN_BF16, 4, 16},
    {"f16", FP8KV_ATTN_F16, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_F16, FP8KV_ATTN_F32, FP8KV_ATTN_F16,
     FP8KV_ATTN_F16, 4, 16},
    {"bf16-folded", FP8KV_ATTN_BF16, FP8KV_ATTN_KV_FOLDED, FP8KV_ATTN_BF16, FP8KV_ATTN_F32,
     FP8KV_ATTN_BF16, FP8KV_ATTN_BF16, 4, 16},
    {"f16-folded", FP8KV_ATTN_F16, FP8KV_ATTN_KV_FOLDED, FP8KV_ATTN_F16, FP8KV_ATTN_F32,
     FP8KV_ATTN_F16, FP8KV_ATTN_F16, 4, 16},
    {"fp8", FP8KV_ATTN_BF16, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_BF16, FP8KV_ATTN_F32, FP8KV_ATTN_E4M3,
     FP8KV_ATTN_BF16, 4, 16},
};

/* The keys of a custom change, the types each accepts (a bit per enum fp8kv_attention_type). */
#define BIT(t) (1u << FP8KV_ATTN_##t)
static const struct {
    const char *key;
    size_t offset;
    unsigned types; /* 0: a number (exp_ulps, tile) or kv's own words */
} keys[] = {
    {"q", offsetof(struct fp8kv_attention_arith, q), BIT(F32) | BIT(BF16) | BIT(F16)},
    {"kv", offsetof(struct fp8kv_attention_arith, kv), 0},
    {"kv_type", offsetof(struct fp8kv_attention_arith, kv_type), BIT(F32) | BIT(BF16) | BIT(F16)},
    {"dot", offsetof(struct fp8kv_attention_arith, dot), BIT(F32) | BIT(TF32)},
    {"p", offsetof(struct fp8kv_attention_arith, p),
     BIT(F32) | BIT(TF32) | BIT(BF16) | BIT(F16) | BIT(E4M3)},
    {"out", offsetof(struct fp8kv_attention_arith, out), BIT(F32) | BIT(BF16) | BIT(F16)},
    {"exp_ulps", offsetof(struct fp8kv_attention_arith, exp_ulps), 0},
    {"tile", offsetof(struct fp8kv_attention_arith, tile), 0},
};

static int type_of(const char *word, size_t n)
{
    for (int t = 0; t < FP8KV_ATTN_TYPE_COUNT; t++)
        if (strlen(fp8kv_attention_type_names[t]) == n &&
            strncmp(word, fp8kv_attention_type_names[t], n) == 0)
            return t;
    return -1;
}

/* set_key: key=value (value is n bytes at v) into a. */
static int set_key(struct fp8kv_attention_arith *a, const char *key, size_t kn, const char *v,
                   size_t n)
{
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (strlen(keys[k].key) != kn || strncmp(key, keys[k].key, kn) != 0)
            continue;
        int *field = (int *)((char *)a + keys[k].offset);
        if (keys[k].offset == offsetof(struct fp8kv_attention_arith, kv)) {
            if (n == 6 && strncmp(v, "scaled", 6) == 0)
                *field = FP8KV_ATTN_KV_SCALED;
            else if (n == 6 && strncmp(v, "folded", 6) == 0)
                *field = FP8KV_ATTN_KV_FOLDED;
            else
                return fp8kv_fail("arithmetic: kv=%.*s: give scaled or folded", (int)n, v);
            return FP8KV_OK;
        }
        if (!keys[k].types) {
            char *end = NULL;
            char digits[16] = "";
            if (n == 0 || n >= sizeof digits)
                return fp8kv_fail("arithmetic: %s=%.*s: give a whole number", keys[k].key, (int)n,
                                  v);
            memcpy(digits, v, n);
            const long x = strtol(digits, &end, 10);
            if (*end || x < (field == &a->tile ? 1 : 0) || x > 1000000)
                return fp8kv_fail("arithmetic: %s=%s: give a whole number from %d to 1000000",
                                  keys[k].key, digits, field == &a->tile ? 1 : 0);
            *field = (int)x;
            return FP8KV_OK;
        }
        const int t = type_of(v, n);
        if (t < 0 || !(keys[k].types >> t & 1u)) {
            char allowed[64] = "";
            for (int u = 0; u < FP8KV_ATTN_TYPE_COUNT; u++)
                if (keys[k].types >> u & 1u)
                    snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s",
                             allowed[0] ? ", " : "", fp8kv_attention_type_names[u]);
            return fp8kv_fail("arithmetic: %s=%.*s: give one of %s", keys[k].key, (int)n, v,
                              allowed);
        }
        *field = t;
        return FP8KV_OK;
    }
    return fp8kv_fail("arithmetic: unknown key \"%.*s\" (keys: q, kv, kv_type, dot, p, out, "
                      "exp_ulps, tile)",
                      (int)kn, key);
}

int fp8kv_attention_arith_parse(const char *text, struct fp8kv_attention_arith *out)
{
    if (!text || !*text)
        text = fp8kv_attention_presets[0];
    const char *comma = strchr(text, ',');
    const size_t n = comma ? (size_t)(comma - text) : strlen(text);
    int found = -1;
    for (int i = 0; i < FP8KV_ATTN_PRESET_COUNT; i++)
        if (strlen(fp8kv_attention_presets[i]) == n &&
            strncmp(text, fp8kv_attention_presets[i], n) == 0)
            found = i;
    if (found < 0)
        return fp8kv_fail("arithmetic \"%.*s\": give a preset (f32, tf32, bf16, f16, bf16-folded, "
                          "f16-folded, fp8), optionally followed by ,key=value changes",
                          (int)n, text);
    struct fp8kv_attention_arith a = preset_table[found];
    for (const char *at = comma; at; at = strchr(at + 1, ',')) {
        const char *item = at + 1, *next = strchr(item, ',');
        const size_t len = next ? (size_t)(next - item) : strlen(item);
        const char *eq = memchr(item, '=', len);
        if (!eq)
            return fp8kv_fail("arithmetic: \"%.*s\" is not key=value", (int)len, item);
        if (set_key(&a, item, (size_t)(eq - item), eq + 1, len - (size_t)(eq - item) - 1) != 0)
            return FP8KV_ERR;
    }
    if (strlen(text) >= sizeof a.name)
        return fp8kv_fail("arithmetic: \"%.40s...\" is longer than %zu characters", text,
                          sizeof a.name - 1);
    snprintf(a.name, sizeof a.name, "%s", text);
    *out = a;
    return FP8KV_OK;
}

void fp8kv_attention_arith_words(const struct fp8kv_attention_arith *a, char *buf, size_t size)
{
    const char *const *t = fp8kv_attention_type_names;
    char kv[48];
    if (a->kv == FP8KV_ATTN_KV_FOLDED)
        snprintf(kv, sizeof kv, "K, V fp8 exact, scales folded");
    else
        snprintf(kv, sizeof kv, "K*s and V*s in %s", t[a->kv_type]);
    snprintf(buf, size, "q %s, %s, %s products, P %s, out %s, exp %d ulps, tile %d", t[a->q], kv,
             t[a->dot], t[a->p], t[a->out], a->exp_ulps, a->tile);
}

/* ---- the reference and the bound ------------------------------------------------------------ */

/* Scratch of one sequence and kv head: its tokens' key and value rows, and the scratch of
 * one head (kv/attention_core.h's struct attn_work) over them. */
struct work {
    int n, d;
    double *key, *value, *scratch, *q;
};

static void work_free(struct work *w)
{
    free(w->key);
    free(w->value);
    free(w->scratch);
    free(w->q);
    memset(w, 0, sizeof *w);
}

static int work_alloc(struct work *w, int n, int d)
{
    const size_t nn = n > 0 ? (size_t)n : 1, dd = (size_t)d;
    w->n = n;
    w->d = d;
    w->key = malloc(nn * dd * sizeof *w->key);
    w->value = malloc(nn * dd * sizeof *w->value);
    w->scratch = malloc(5 * nn * sizeof *w->scratch);
    w->q = malloc(dd * sizeof *w->q);
    if (!w->key || !w->value || !w->scratch || !w->q) {
        work_free(w);
        return FP8KV_ERR; /* said by the caller (this runs in a worker thread) */
    }
    return FP8KV_OK;
}

/* head_work: the scratch of one head over the n tokens of w from token lo on. */
static struct attn_work head_work(const struct work *w, int lo, int n)
{
    const size_t nn = w->n > 0 ? (size_t)w->n : 1, dd = (size_t)w->d;
    struct attn_work h;
    h.n = n;
    h.d = w->d;
    h.key = w->key + (size_t)lo * dd;
    h.value = w->value + (size_t)lo * dd;
    h.score = w->scratch;
    h.mag = h.score + nn;
    h.weight = h.mag + nn;
    h.common = h.weight + nn;
    h.apart = h.common + nn;
    h.q = w->q;
    return h;
}

/* ref_begin: checks pr's shape and allocates ref's outputs; 0, or FP8KV_ERR (said). */
static int ref_begin(const struct fp8kv_attention_problem *pr, struct fp8kv_attention_ref *ref)
{
    memset(ref, 0, sizeof *ref);
    if (pr->num_seqs < 0 || pr->num_kv_heads < 1 || pr->head_size < 1 ||
        pr->num_q_heads < pr->num_kv_heads || pr->num_q_heads % pr->num_kv_heads != 0)
        return fp8kv_fail("attention reference: %d q heads over %d kv heads, head size %d",
                          pr->num_q_heads, pr->num_kv_heads, pr->head_size);
    size_t rows = 0;
    for (int i = 0; i < pr->num_seqs; i++) {
        const int queries = pr->query_lens ? pr->query_lens[i] : 1;
        if (pr->seq_lens[i] < 0 || queries < 1 ||
            queries > pr->seq_lens[i] + (pr->seq_lens[i] == 0))
            return fp8kv_fail("attention reference: sequence %d has %d tokens and %d queries", i,
                              pr->seq_lens[i], queries);
        rows += (size_t)queries;
    }
    ref->count = rows * (size_t)pr->num_q_heads * (size_t)pr->head_size;
    const size_t bytes = (ref->count ? ref->count : 1) * sizeof(double);
    ref->exact = malloc(bytes);
    ref->lo = malloc(bytes);
    ref->hi = malloc(bytes);
    ref->nan_also = malloc(ref->count ? ref->count : 1);
    if (!ref->exact || !ref->lo || !ref->hi || !ref->nan_also) {
        fp8kv_attention_ref_free(ref);
        return fp8kv_fail("out of memory (attention reference of %zu outputs)", ref->count);
    }
    return FP8KV_OK;
}

/* first_row: the first query row of sequence i */
static size_t first_row(const struct fp8kv_attention_problem *pr, int i)
{
    size_t first = 0;
    for (int k = 0; k < i; k++)
        first += pr->query_lens ? (size_t)pr->query_lens[k] : 1;
    return first;
}

/* span: the tokens [*lo, lo + *n) query j of sequence i sees: query j of a sequence of s
 * tokens and q queries is token s - q + j, and sees the tokens up to itself (under a window W,
 * the last W of them) */
static void span(const struct fp8kv_attention_problem *pr, int i, int j, int *lo, int *n)
{
    const int s = pr->seq_lens[i], queries = pr->query_lens ? pr->query_lens[i] : 1;
    const int hi = s - queries + j + 1;
    *lo = pr->window > 0 && hi > pr->window ? hi - pr->window : 0;
    *n = s == 0 ? 0 : hi - *lo;
}

/* reference_cpu: ref's outputs on the host, one task per sequence and kv head (OpenMP). */
static int reference_cpu(const struct fp8kv_attention_problem *pr,
                         const struct fp8kv_attention_arith *a, struct fp8kv_attention_ref *ref)
{
    const int D = pr->head_size, group = pr->num_q_heads / pr->num_kv_heads;
    const long tasks = (long)pr->num_seqs * pr->num_kv_heads; /* the callbacks only read */
    int failed = 0;
    uint64_t vacuous = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed) reduction(+ : vacuous)
    for (long task = 0; task < tasks; task++) {
        const int i = (int)(task / pr->num_kv_heads), g = (int)(task % pr->num_kv_heads);
        const int n = pr->seq_lens[i];
        struct work w;
        if (failed || work_alloc(&w, n, D) != 0) {
            failed = 1;
            continue;
        }
        for (int t = 0; t < n; t++) {
            pr->row(pr->ctx, 1, i, t, g, w.key + (size_t)t * D);
            pr->row(pr->ctx, 0, i, t, g, w.value + (size_t)t * D);
        }
        const size_t first = first_row(pr, i);
        for (int j = 0; j < (pr->query_lens ? pr->query_lens[i] : 1); j++) {
            int lo, count;
            span(pr, i, j, &lo, &count);
            struct attn_work hw = head_work(&w, lo, count);
            const size_t row = first + (size_t)j;
            for (int h = g * group; h < (g + 1) * group; h++) {
                const size_t base = (row * (size_t)pr->num_q_heads + (size_t)h) * (size_t)D;
                pr->query(pr->ctx, (int)row, h, w.q);
                vacuous +=
                    (uint64_t)attn_head(a, pr->softmax_scale, &hw, ref->exact + base,
                                        ref->lo + base, ref->hi + base, ref->nan_also + base);
            }
        }
        work_free(&w);
    }
    ref->vacuous = vacuous;
    return failed ? fp8kv_fail("out of memory (attention reference)") : FP8KV_OK;
}

#ifdef FP8KV_HAVE_GPU
/* job_free: the host arrays of a GPU job. */
static void job_free(struct attn_job *j)
{
    free((void *)j->keys);
    free((void *)j->values);
    free((void *)j->queries);
    free((void *)j->tasks);
}

/* reference_gpu: ref's outputs on the open GPU (kv/attention_gpu.hip): the rows every head
 * multiplies, in double, and a task per query row and q head; FP8KV_UNAVAILABLE without an
 * open device. */
static int reference_gpu(const struct fp8kv_attention_problem *pr,
                         const struct fp8kv_attention_arith *a, struct fp8kv_attention_ref *ref)
{
    const int D = pr->head_size, G = pr->num_kv_heads, H = pr->num_q_heads;
    const size_t rows = ref->count / ((size_t)H * (size_t)D);
    size_t *start = malloc(((size_t)pr->num_seqs * (size_t)G + 1) * sizeof *start);
    if (!start)
        return fp8kv_fail("out of memory (attention reference)");
    start[0] = 0; /* the first key row of sequence i, kv head g: start[i * G + g] */
    for (int i = 0; i < pr->num_seqs; i++)
        for (int g = 0; g < G; g++)
            start[(size_t)i * G + g + 1] = start[(size_t)i * G + g] + (size_t)pr->seq_lens[i];
    const size_t kv_rows = start[(size_t)pr->num_seqs * G];
    struct attn_job j = {*a,      pr->softmax_scale,   D,          NULL,
                         NULL,    kv_rows * (size_t)D, NULL,       rows * (size_t)H * (size_t)D,
                         NULL,    rows * (size_t)H,    ref->exact, ref->lo,
                         ref->hi, ref->nan_also,       ref->count};
    double *krows = malloc((kv_rows ? kv_rows : 1) * (size_t)D * sizeof *krows);
    double *vrows = malloc((kv_rows ? kv_rows : 1) * (size_t)D * sizeof *vrows);
    double *queries = malloc((j.q_count ? j.q_count : 1) * sizeof *queries);
    struct attn_task *tasks = malloc((j.task_count ? j.task_count : 1) * sizeof *tasks);
    j.keys = krows, j.values = vrows, j.queries = queries, j.tasks = tasks;
    if (!krows || !vrows || !queries || !tasks) {
        job_free(&j);
        free(start);
        return fp8kv_fail("out of memory (attention reference of %zu key rows)", kv_rows);
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (long task = 0; task < (long)pr->num_seqs * G; task++) {
        const int i = (int)(task / G), g = (int)(task % G);
        for (int t = 0; t < pr->seq_lens[i]; t++) {
            const size_t at = (start[task] + (size_t)t) * (size_t)D;
            pr->row(pr->ctx, 1, i, t, g, krows + at);
            pr->row(pr->ctx, 0, i, t, g, vrows + at);
        }
        const size_t first = first_row(pr, i);
        for (int q = 0; q < (pr->query_lens ? pr->query_lens[i] : 1); q++) {
            int lo, n;
            span(pr, i, q, &lo, &n);
            const size_t row = first + (size_t)q;
            for (int h = g * (H / G); h < (g + 1) * (H / G); h++) {
                const size_t k = row * (size_t)H + (size_t)h;
                pr->query(pr->ctx, (int)row, h, queries + k * (size_t)D);
                tasks[k] =
                    (struct attn_task){(start[task] + (size_t)lo) * (size_t)D, k * (size_t)D, n, 0};
            }
        }
    }
    free(start);
    uint64_t vacuous = 0;
    const int rc = fp8kv_attention_heads_gpu(&j, &vacuous);
    job_free(&j);
    ref->vacuous = vacuous;
    return rc;
}
#endif

int fp8kv_attention_reference(const struct fp8kv_attention_problem *pr,
                              const struct fp8kv_attention_arith *a,
                              struct fp8kv_attention_ref *ref)
{
    if (ref_begin(pr, ref) != 0)
        return FP8KV_ERR;
    int rc = FP8KV_UNAVAILABLE;
#ifdef FP8KV_HAVE_GPU
    const char *where = getenv("FP8KV_REFERENCE");
    if (!where || strcmp(where, "cpu") != 0) /* the GPU where one is open; else the host */
        rc = reference_gpu(pr, a, ref);
#endif
    ref->on_gpu = rc == 0;
    if (rc != 0)
        rc = reference_cpu(pr, a, ref);
    if (rc != 0)
        fp8kv_attention_ref_free(ref);
    return rc;
}

void fp8kv_attention_ref_free(struct fp8kv_attention_ref *ref)
{
    free(ref->exact);
    free(ref->lo);
    free(ref->hi);
    free(ref->nan_also);
    memset(ref, 0, sizeof *ref);
}

/* ---- the judge ------------------------------------------------------------------------------- */

/* value_of: output i of got (dtype t) as a double, and its bits. */
static double value_of(const void *got, int t, size_t i, uint32_t *bits)
{
    const enum fp8kv_kv_dtype dt = fp8kv_attention_kv_dtype(t);
    uint32_t w;
    if (dt == FP8KV_KV_F32) {
        memcpy(&w, (const char *)got + 4 * i, 4);
        *bits = w;
    } else {
        uint16_t h;
        memcpy(&h, (const char *)got + 2 * i, 2);
        *bits = h;
        w = fp8kv_widen_to_f32((enum fp8kv_dtype)dt, h);
    }
    float f;
    memcpy(&f, &w, 4);
    return f;
}

void fp8kv_attention_judge(const struct fp8kv_attention_ref *ref,
                           const struct fp8kv_attention_arith *a, const void *got, int num_q_heads,
                           int head_size, struct fp8kv_check *chk)
{
    const size_t D = (size_t)head_size, Q = (size_t)num_q_heads;
    chk->cases = ref->count;
    chk->has_bound = 1;
    chk->bound_ratio = 0.0;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref->count; i++) {
        uint32_t bits;
        const double y = value_of(got, a->out, i, &bits), o = ref->exact[i];
        double ratio;
        if (isnan(y) && ref->nan_also[i])
            ratio = 0.0;
        else if (!isfinite(o))
            ratio = (isnan(o) ? isnan(y) : y == o) ? 0.0 : INFINITY;
        else if (!isfinite(y)) /* an infinity the rounding of o + E (or o - E) may give */
            ratio = !isnan(y) && ref->lo[i] <= y && y <= ref->hi[i] ? 1.0 : INFINITY;
        else if (y == o)
            ratio = 0.0;
        else
            ratio = y > o ? (y - o) / (ref->hi[i] - o) : (o - y) / (o - ref->lo[i]);
        if (isfinite(o) && isfinite(y)) {
            num += (y - o) * (y - o);
            den += o * o;
        } else if (ratio > 0.0 || isfinite(o) != isfinite(y)) {
            num = INFINITY;
        }
        if (ratio > chk->bound_ratio || isnan(ratio))
            chk->bound_ratio = isnan(ratio) ? INFINITY : ratio;
        if (!(ratio > 1.0))
            continue;
        const size_t row = i / D;
        fp8kv_check_failure(chk, -1,
                            "out[%zu] seq %zu qhead %zu dim %zu => %0*x (%.9g)  exact %.17g, "
                            "allowed [%.9g, %.9g]",
                            i, row / Q, row % Q, i % D, a->out == FP8KV_ATTN_F32 ? 8 : 4, bits, y,
                            o, ref->lo[i], ref->hi[i]);
    }
    chk->has_nmse = 1;
    chk->nmse = num == 0.0 ? 0.0 : den > 0.0 ? num / den : INFINITY;
    if (ref->vacuous) { /* said, never hidden: these outputs were not judged */
        const size_t used = strlen(chk->detail);
        snprintf(chk->detail + used, sizeof chk->detail - used,
                 "; %llu outputs with no finite bound", (unsigned long long)ref->vacuous);
    }
}
