/* audit.c — the exhaustive diff of two codecs (fp8kv/audit.h). */
#include "fp8kv/verify.h"
#include "fp8kv/audit.h"

#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/npy.h"

/* Inputs per call: large, as a plugin pays a round trip to its worker per call. */
enum { AUDIT_CHUNK = 1 << 20 };

/* One changed input, kept sorted by input so the examples are the same for any schedule. */
struct change {
    uint64_t order;        /* the input's place: its bit pattern, or a pair's index */
    uint32_t input, scale; /* the input's bits (and a pair's scale) */
    uint8_t a, b, want, cls, a_ok, b_ok;
};

/* A set being audited, or one chunk of it: counts and the first changes in input order. */
struct tally {
    uint64_t changed, changed_by_class[FP8KV_CLASS_COUNT];
    uint64_t baseline_right, candidate_right, both_right, neither_right;
    struct change first[FP8KV_AUDIT_EXAMPLES];
    int nfirst;
};

/* Keeps c among t's first changes if it is one of them. */
static void keep_first(struct tally *t, const struct change *c)
{
    int pos = t->nfirst;
    while (pos > 0 && t->first[pos - 1].order > c->order)
        pos--;
    if (pos == FP8KV_AUDIT_EXAMPLES)
        return;
    int last = t->nfirst < FP8KV_AUDIT_EXAMPLES ? t->nfirst : FP8KV_AUDIT_EXAMPLES - 1;
    memmove(&t->first[pos + 1], &t->first[pos], (size_t)(last - pos) * sizeof t->first[0]);
    t->first[pos] = *c;
    if (t->nfirst < FP8KV_AUDIT_EXAMPLES)
        t->nfirst++;
}

/* Counts one changed input into t (one thread's own tally). */
static void count_change(struct tally *t, const struct change *c)
{
    t->changed++;
    t->changed_by_class[c->cls]++;
    if (c->a_ok && c->b_ok)
        t->both_right++;
    else if (c->a_ok)
        t->baseline_right++;
    else if (c->b_ok)
        t->candidate_right++;
    else
        t->neither_right++;
    keep_first(t, c);
}

/* Adds a chunk's tally to the set's, once per chunk (thread-safe): codecs that differ
 * everywhere cost one short critical section a chunk, not one a change. */
static void merge_tally(struct tally *dst, const struct tally *src)
{
#pragma omp critical(fp8kv_audit_tally)
    {
        dst->changed += src->changed;
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
            dst->changed_by_class[k] += src->changed_by_class[k];
        dst->baseline_right += src->baseline_right;
        dst->candidate_right += src->candidate_right;
        dst->both_right += src->both_right;
        dst->neither_right += src->neither_right;
        for (int i = 0; i < src->nfirst; i++)
            keep_first(dst, &src->first[i]);
    }
}

static const char *who_is_right(const struct change *c)
{
    return c->a_ok && c->b_ok ? "both right"
           : c->a_ok          ? "baseline right"
           : c->b_ok          ? "candidate right"
                              : "neither right";
}

/* The counts and examples (in words) of a finished set into s. */
static void write_examples(const struct tally *t, int pairs, int digits, struct fp8kv_audit_set *s)
{
    s->changed = t->changed;
    memcpy(s->changed_by_class, t->changed_by_class, sizeof s->changed_by_class);
    s->baseline_right = t->baseline_right;
    s->candidate_right = t->candidate_right;
    s->both_right = t->both_right;
    s->neither_right = t->neither_right;
    s->examples = t->nfirst;
    for (int i = 0; i < t->nfirst; i++) {
        const struct change *c = &t->first[i];
        char input[32];
        if (pairs)
            snprintf(input, sizeof input, "0x%08x / 0x%08x", c->input, c->scale);
        else
            snprintf(input, sizeof input, "0x%0*x", digits, c->input);
        snprintf(s->example[i], sizeof s->example[i],
                 "%s => baseline %02x  candidate %02x  expected %02x  %s  (%s)", input, c->a, c->b,
                 c->want, fp8kv_class_names[c->cls], who_is_right(c));
    }
}

/* ---- the domains ------------------------------------------------------------------------- */

struct domain_job {
    const struct fp8kv_subject *a, *b;
    struct fp8kv_codec_cfg cfg;
    const struct fp8kv_sweep_run *runs;
    size_t nruns;
    struct tally tally;
};

static int diff_chunk(void *ctx, struct fp8kv_sweep_chunk *c)
{
    struct domain_job *job = ctx;
    int rc = job->a->encode(job->a->ctx, job->cfg, c->x, c->n, 1.0f, c->q);
    if (rc == 0)
        rc = job->b->encode(job->b->ctx, job->cfg, c->x, c->n, 1.0f, c->q2);
    if (rc != 0 || memcmp(c->q, c->q2, c->n) == 0)
        return rc;
    struct tally local;
    memset(&local, 0, sizeof local);
    for (size_t i = 0; i < c->n; i++) {
        if (c->q[i] == c->q2[i])
            continue;
        const struct fp8kv_sweep_run *r =
            &job->runs[fp8kv_sweep_run_of(job->runs, job->nruns, c->lo + i)];
        struct change ch = {.order = c->lo + i,
                            .input = (uint32_t)(c->lo + i),
                            .a = c->q[i],
                            .b = c->q2[i],
                            .want = r->value,
                            .cls = r->cls,
                            .a_ok = (c->q[i] & r->mask) == r->value,
                            .b_ok = (c->q2[i] & r->mask) == r->value};
        count_change(&local, &ch);
    }
    merge_tally(&job->tally, &local);
    return 0;
}

static int audit_domain(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                        enum fp8kv_domain d, const uint32_t *bounds, struct domain_job *job,
                        const struct fp8kv_sweep_options *opt, struct fp8kv_audit_set *set)
{
    struct fp8kv_sweep_run *runs;
    long n = fp8kv_sweep_runs(p, check, d, bounds, &runs);
    if (n < 0)
        return FP8KV_ERR;
    memset(set, 0, sizeof *set);
    snprintf(set->name, sizeof set->name, "%s", fp8kv_sweep_domain_names[d]);
    set->inputs = fp8kv_sweep_domain_size(d);
    if (opt && opt->limit && opt->limit < set->inputs)
        set->inputs = opt->limit;
    job->runs = runs;
    job->nruns = (size_t)n;
    memset(&job->tally, 0, sizeof job->tally);
    char what[96];
    snprintf(what, sizeof what, "audit %s %s -> %s", set->name, job->a->name, job->b->name);
    int rc = fp8kv_sweep_chunks(d, opt, what, 0, AUDIT_CHUNK, diff_chunk, job);
    write_examples(&job->tally, 0, d == FP8KV_DOMAIN_F32 ? 8 : 4, set);
    free(runs);
    return rc;
}

/* ---- the scale pairs --------------------------------------------------------------------- */

static int audit_pairs(const char *dir, const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                       enum fp8kv_scale_model model, struct domain_job *job,
                       struct fp8kv_audit_set *set)
{
    struct fp8kv_npy sx = {0}, ss = {0}, want = {0};
    int rc = fp8kv_load_vector_file(dir, p, "scale_x.npy", FP8KV_NPY_U32, 0, 0, &sx);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "scale_s.npy", FP8KV_NPY_U32, sx.count, 0, &ss);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "scale_expected.npy", FP8KV_NPY_U8, sx.count,
                                    FP8KV_MODEL_COUNT, &want);
    size_t n = sx.count;
    uint8_t *qa = malloc(n + 1), *qb = malloc(n + 1);
    if (rc == 0 && (!qa || !qb))
        rc = fp8kv_fail("out of memory");
    const uint32_t *x = sx.data, *s = ss.data;
    if (rc == 0)
        rc = fp8kv_encode_grouped(job->a, job->cfg, (const float *)x, s, n, qa);
    if (rc == 0)
        rc = fp8kv_encode_grouped(job->b, job->cfg, (const float *)x, s, n, qb);
    memset(set, 0, sizeof *set);
    snprintf(set->name, sizeof set->name, "scale-%s", fp8kv_model_names[model]);
    set->inputs = n;
    memset(&job->tally, 0, sizeof job->tally);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (qa[i] == qb[i])
            continue;
        uint8_t w = ((const uint8_t *)want.data)[i * FP8KV_MODEL_COUNT + model];
        struct change ch = {.order = i,
                            .input = x[i],
                            .scale = s[i],
                            .a = qa[i],
                            .b = qb[i],
                            .want = w,
                            .cls = (uint8_t)fp8kv_classify_f32(p->format, x[i]),
                            .a_ok = fp8kv_pair_code_matches(p, check, x[i], s[i], qa[i], w),
                            .b_ok = fp8kv_pair_code_matches(p, check, x[i], s[i], qb[i], w)};
        count_change(&job->tally, &ch);
    }
    write_examples(&job->tally, 1, 8, set);
    free(qa);
    free(qb);
    fp8kv_npy_free(&sx);
    fp8kv_npy_free(&ss);
    fp8kv_npy_free(&want);
    return rc;
}

int fp8kv_audit_codecs(const char *dir, const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                       enum fp8kv_scale_model model, const struct fp8kv_subject *baseline,
                       const struct fp8kv_subject *candidate, const struct fp8kv_sweep_options *opt,
                       struct fp8kv_audit *out)
{
    memset(out, 0, sizeof *out);
    if (fp8kv_vectors_trust(dir) != 0)
        return FP8KV_ERR;
    double t0 = fp8kv_now();
    uint32_t *bounds = fp8kv_load_boundaries(dir, p);
    if (!bounds)
        return FP8KV_ERR;
    struct domain_job job = {.a = baseline, .b = candidate};
    int rc = fp8kv_model_cfg(p, model, &job.cfg);
    for (int d = 0; d < FP8KV_DOMAIN_COUNT && rc == 0; d++) {
        rc =
            audit_domain(p, check, (enum fp8kv_domain)d, bounds, &job, opt, &out->sets[out->nsets]);
        out->nsets++;
    }
    free(bounds);
    if (rc == 0) {
        rc = audit_pairs(dir, p, check, model, &job, &out->sets[out->nsets]);
        out->nsets++;
    }
    for (int k = 0; k < out->nsets; k++) {
        const struct fp8kv_audit_set *s = &out->sets[k];
        out->inputs += s->inputs;
        out->changed += s->changed;
        out->baseline_right += s->baseline_right;
        out->candidate_right += s->candidate_right;
        out->both_right += s->both_right;
        out->neither_right += s->neither_right;
    }
    out->seconds = fp8kv_now() - t0;
    return rc;
}

const char *fp8kv_audit_verdict(const struct fp8kv_audit *a)
{
    if (a->changed == 0)
        return "identical";
    return a->baseline_right + a->neither_right == 0 ? "improved" : "regressed";
}
