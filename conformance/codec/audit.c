/* codec/audit.c — the exhaustive diff of two codecs (fp8kv/audit.h). */
#include "fp8kv/verify.h"
#include "fp8kv/audit.h"

#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/npy.h"

/* Inputs per call: large, as a plugin pays a round trip to its worker per call. */
enum { AUDIT_CHUNK = 1 << 20 };

/* Who the oracle agrees with on a changed input (an example's note). */
enum who { BOTH_RIGHT, BASELINE_RIGHT, CANDIDATE_RIGHT, NEITHER_RIGHT };
static const char *const who_names[] = {"both right", "baseline right", "candidate right",
                                        "neither right"};

/* A set being audited, or one chunk of it: counts and the examples in input order. */
struct tally {
    uint64_t changed, changed_by_class[FP8KV_CLASS_COUNT];
    uint64_t right[4]; /* by enum who */
    struct fp8kv_examples examples;
};

/* Counts one changed input (f: got the baseline's code, other the candidate's) into t. */
static void count_change(struct tally *t, struct fp8kv_failure *f, int a_ok, int b_ok)
{
    f->note = (uint8_t)(a_ok && b_ok ? BOTH_RIGHT
                        : a_ok       ? BASELINE_RIGHT
                        : b_ok       ? CANDIDATE_RIGHT
                                     : NEITHER_RIGHT);
    t->changed++;
    t->changed_by_class[f->cls]++;
    t->right[f->note]++;
    fp8kv_examples_add(&t->examples, f);
}

/* Adds a chunk's counts to the set's, once per chunk (thread-safe): codecs that differ
 * everywhere cost one short critical section a chunk, not one a change. */
static void merge_counts(struct tally *dst, const struct tally *src)
{
#pragma omp critical(fp8kv_audit_tally)
    {
        dst->changed += src->changed;
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
            dst->changed_by_class[k] += src->changed_by_class[k];
        for (int k = 0; k < 4; k++)
            dst->right[k] += src->right[k];
    }
}

void fp8kv_audit_set_lines(struct fp8kv_audit_set *s)
{
    s->examples = s->kept.n;
    for (int i = 0; i < s->kept.n; i++) {
        const struct fp8kv_failure *c = &s->kept.v[i];
        char input[128];
        fp8kv_failure_input_text(c, input, sizeof input);
        snprintf(s->example[i], sizeof s->example[i],
                 "%s => baseline %02x  candidate %02x  expected %02x  %s  (%s)", input, c->got,
                 c->other, c->want, fp8kv_class_names[c->cls], who_names[c->note]);
    }
}

/* The counts and examples (in words) of a finished set into s. */
static void write_examples(const struct tally *t, const struct fp8kv_examples *examples,
                           struct fp8kv_audit_set *s)
{
    s->changed = t->changed;
    memcpy(s->changed_by_class, t->changed_by_class, sizeof s->changed_by_class);
    s->both_right = t->right[BOTH_RIGHT];
    s->baseline_right = t->right[BASELINE_RIGHT];
    s->candidate_right = t->right[CANDIDATE_RIGHT];
    s->neither_right = t->right[NEITHER_RIGHT];
    s->kept = *examples;
    fp8kv_audit_set_lines(s);
}

/* ---- the domains ------------------------------------------------------------------------- */

struct domain_job {
    const struct fp8kv_subject *a, *b;
    struct fp8kv_codec_cfg cfg;
    enum fp8kv_dtype dtype;
    const struct fp8kv_sweep_run *runs;
    size_t nruns;
    struct tally tally;
    struct fp8kv_chunk_examples examples;
};

static int diff_chunk(void *ctx, struct fp8kv_sweep_chunk *c)
{
    struct domain_job *job = ctx;
    int rc = job->a->encode(job->a->ctx, job->cfg, c->x, c->n, 1.0f, c->q);
    if (rc == 0)
        rc = job->b->encode(job->b->ctx, job->cfg, c->x, c->n, 1.0f, c->q2);
    if (rc != 0)
        return rc;
    if (memcmp(c->q, c->q2, c->n) == 0)
        return fp8kv_chunk_examples_put(&job->examples, c->index, NULL);
    struct tally local;
    memset(&local, 0, sizeof local);
    for (size_t i = 0; i < c->n; i++) {
        if (c->q[i] == c->q2[i])
            continue;
        const struct fp8kv_sweep_run *r =
            &job->runs[fp8kv_sweep_run_of(job->runs, job->nruns, c->lo + i)];
        struct fp8kv_failure f =
            fp8kv_failure_one(job->dtype, (uint32_t)(c->lo + i), r->cls, c->q[i], r->value);
        f.other = c->q2[i];
        count_change(&local, &f, fp8kv_sweep_run_accepts(r, c->q[i]),
                     fp8kv_sweep_run_accepts(r, c->q2[i]));
    }
    merge_counts(&job->tally, &local);
    return fp8kv_chunk_examples_put(&job->examples, c->index, &local.examples);
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
    uint64_t lo, hi;
    fp8kv_sweep_range(d, opt, &lo, &hi);
    set->inputs = hi - lo;
    job->runs = runs;
    job->nruns = (size_t)n;
    job->dtype = d == FP8KV_DOMAIN_F32   ? FP8KV_DTYPE_F32
                 : d == FP8KV_DOMAIN_F16 ? FP8KV_DTYPE_F16
                                         : FP8KV_DTYPE_BF16;
    memset(&job->tally, 0, sizeof job->tally);
    int rc =
        fp8kv_chunk_examples_init(&job->examples, fp8kv_sweep_chunk_count(d, opt, AUDIT_CHUNK));
    if (rc != 0) {
        free(runs);
        return rc;
    }
    char what[96];
    snprintf(what, sizeof what, "audit %s %s -> %s", set->name, job->a->name, job->b->name);
    rc = fp8kv_sweep_chunks(d, opt, what, 0, AUDIT_CHUNK, diff_chunk, job);
    fp8kv_chunk_examples_finish(&job->examples);
    write_examples(&job->tally, &job->examples.merged, set);
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
        struct fp8kv_failure f = fp8kv_failure_one(
            FP8KV_DTYPE_F32, x[i], (int)fp8kv_pair_class(p->format, x[i], s[i]), qa[i], w);
        f.has_scale = 1;
        f.scale = s[i];
        f.other = qb[i];
        count_change(&job->tally, &f, fp8kv_pair_code_matches(p, check, x[i], s[i], qa[i], w),
                     fp8kv_pair_code_matches(p, check, x[i], s[i], qb[i], w));
    }
    write_examples(&job->tally, &job->tally.examples, set);
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
    if (rc == 0 && (!opt || opt->shard.index == 0)) { /* the pairs: shard 0's */
        rc = audit_pairs(dir, p, check, model, &job, &out->sets[out->nsets]);
        out->nsets++;
    }
    fp8kv_audit_totals(out);
    out->seconds = fp8kv_now() - t0;
    return rc;
}

void fp8kv_audit_totals(struct fp8kv_audit *a)
{
    a->inputs = a->changed = a->baseline_right = a->candidate_right = a->both_right =
        a->neither_right = 0;
    for (int k = 0; k < a->nsets; k++) {
        const struct fp8kv_audit_set *s = &a->sets[k];
        a->inputs += s->inputs;
        a->changed += s->changed;
        a->baseline_right += s->baseline_right;
        a->candidate_right += s->candidate_right;
        a->both_right += s->both_right;
        a->neither_right += s->neither_right;
    }
}

int fp8kv_audit_merge_shard(struct fp8kv_audit *into, const struct fp8kv_audit *next)
{
    for (int k = 0; k < next->nsets; k++) {
        const struct fp8kv_audit_set *n = &next->sets[k];
        struct fp8kv_audit_set *s = NULL;
        for (int j = 0; j < into->nsets && !s; j++)
            if (strcmp(into->sets[j].name, n->name) == 0)
                s = &into->sets[j];
        if (!s) {
            if (into->nsets == FP8KV_DOMAIN_COUNT + 1)
                return fp8kv_fail("audit: no room for the set %s", n->name);
            into->sets[into->nsets++] = *n;
            continue;
        }
        s->inputs += n->inputs;
        s->changed += n->changed;
        for (int c = 0; c < FP8KV_CLASS_COUNT; c++)
            s->changed_by_class[c] += n->changed_by_class[c];
        s->baseline_right += n->baseline_right;
        s->candidate_right += n->candidate_right;
        s->both_right += n->both_right;
        s->neither_right += n->neither_right;
        fp8kv_examples_merge_shard(&s->kept, &n->kept);
        fp8kv_audit_set_lines(s);
    }
    fp8kv_audit_totals(into);
    into->seconds = into->seconds > next->seconds ? into->seconds : next->seconds;
    return FP8KV_OK;
}

const char *fp8kv_audit_verdict(const struct fp8kv_audit *a)
{
    if (a->changed == 0)
        return "identical";
    return a->baseline_right + a->neither_right == 0 ? "improved" : "regressed";
}
