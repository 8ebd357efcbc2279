/* block/checks.c — a block codec's plan of checks (fp8kv/block_checks.h), and `fp8kv run`'s
 * block rows made of it: every block format x rule x model each block subject of a target's
 * table claims. */
#include "fp8kv/block_checks.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/run.h"

int fp8kv_block_check(const struct fp8kv_block_under_test *s, const struct fp8kv_block_plan *plan,
                      struct fp8kv_block_report *r)
{
    const struct fp8kv_block_oracle_judges *o = plan->oracle;
    double t0 = fp8kv_now();
    int rc = plan->vectors_root ? fp8kv_block_judge_vectors(s, plan->vectors_root, r) : FP8KV_OK;
    r->seconds[FP8KV_BLOCK_CHECK_VECTORS] += fp8kv_now() - t0;
    if (!o)
        return rc;
    t0 = fp8kv_now();
    if (rc == FP8KV_OK)
        rc = o->decode(s, plan->G, r);
    r->seconds[FP8KV_BLOCK_CHECK_DECODE] += fp8kv_now() - t0;
    t0 = fp8kv_now();
    for (int i = 0; rc == FP8KV_OK && i < plan->nsweep; i++)
        rc = o->sweep(s, plan->sweep[i], r);
    r->seconds[FP8KV_BLOCK_CHECK_SWEEP] += fp8kv_now() - t0;
    t0 = fp8kv_now();
    if (rc == FP8KV_OK && plan->nblocks)
        rc = o->blocks(s, plan->G, plan->seed, plan->nblocks, r);
    r->seconds[FP8KV_BLOCK_CHECK_BLOCKS] += fp8kv_now() - t0;
    return rc;
}

/* ---- fp8kv run's block rows ------------------------------------------------------------------ */

/* Whether s computes on a device: `fp8kv run` judges it at check-block's full defaults. */
static int on_device(const struct fp8kv_block_under_test *s)
{
    return s->subject->memory == FP8KV_MEMORY_DEVICE;
}

enum {
    RUN_BLOCKS_CPU = 2000,     /* seeded blocks per combination on the CPU (about 0.02 s) */
    RUN_BLOCKS_DEVICE = 20000, /* on a device: check-block's default */
};
static const uint64_t run_seed = 1; /* check-block's default */

/* The sweep points `fp8kv run` judges s at, decided here once: on a device (on_device)
 * check-block's default points (fp8kv_block_sweep_points) of every combination; on the CPU, to
 * stay within seconds, one point per format under its default rule and the exact model: MX
 * scale code 01 (X = -126, a default point: f32 subnormals reach the element grid; at most
 * 2 x 0x04F00000 inputs), nvfp4 s = 1 (0x38) at G = 2^-126 (its inputs are those below
 * 2^-123). Returns how many; 0 with the reason in why when s is not swept. */
static int run_sweep_points(const struct fp8kv_block_under_test *s,
                            struct fp8kv_block_sweep_point pts[4], char *why, size_t size)
{
    const struct fp8kv_block_format *f = s->format;
    if (s->rule == FP8KV_RULE_4OVER6) {
        snprintf(why, size,
                 "4over6 chooses each block's scale, a sweep fixes it "
                 "(block-blocks covers 4over6)");
        return 0;
    }
    if (on_device(s))
        return fp8kv_block_sweep_points(f, pts);
    if (s->rule != f->default_rule || s->model != FP8KV_BLOCK_DEFAULT_MODEL) {
        snprintf(why, size,
                 "the CPU run sweeps %s under %s %s only (fp8kv check-block "
                 "--format %s sweeps this)",
                 f->name, fp8kv_block_rule_names[f->default_rule],
                 fp8kv_block_model_names[FP8KV_BLOCK_DEFAULT_MODEL], f->name);
        return 0;
    }
    pts[0] = f->scale_kind == FP8KV_SCALE_UE4M3 ? (struct fp8kv_block_sweep_point){0x38, 0x1p-126f}
                                                : (struct fp8kv_block_sweep_point){0x01, 1.0f};
    return 1;
}

/* The words of a plan's sweep points: "01" or "38@0x1p-126, ..." */
static void points_text(const struct fp8kv_block_plan *p, int nv, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->nsweep && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, nv ? "%s%02x@%a" : "%s%02x",
                                 i ? ", " : "", p->sweep[i].scale, (double)p->sweep[i].G);
}

/* Adds the row of kind k of s's report r: its counts and failure lines when it ran, else "not
 * run" (reported, never gating) with why_not. */
static int add_row(const struct fp8kv_block_under_test *s, const struct fp8kv_block_plan *plan,
                   enum fp8kv_block_check_kind k, const struct fp8kv_block_report *r,
                   const char *why_not, struct fp8kv_results *out)
{
    static const char *const names[FP8KV_BLOCK_CHECK_COUNT] = {
        [FP8KV_BLOCK_CHECK_VECTORS] = "block-vectors",
        [FP8KV_BLOCK_CHECK_DECODE] = "block-decode",
        [FP8KV_BLOCK_CHECK_SWEEP] = "block-sweep",
        [FP8KV_BLOCK_CHECK_BLOCKS] = "block-blocks"};
    const struct fp8kv_block_format *f = s->format;
    const int nv = f->scale_kind == FP8KV_SCALE_UE4M3;
    char what[96], points[64], detail[256];
    points_text(plan, nv, points, sizeof points);
    switch (k) {
    case FP8KV_BLOCK_CHECK_VECTORS:
        snprintf(what, sizeof what, "the golden encode cases and decode tables");
        break;
    case FP8KV_BLOCK_CHECK_DECODE:
        snprintf(what, sizeof what, "every scale x element code at G %g", (double)plan->G);
        break;
    case FP8KV_BLOCK_CHECK_SWEEP:
        snprintf(what, sizeof what, "every f32 input under scale code %s", points);
        break;
    default:
        snprintf(what, sizeof what, "%zu seeded random and edge blocks (seed %llu)", plan->nblocks,
                 (unsigned long long)plan->seed);
        break;
    }
    const int ran = r->ran[k] && !why_not;
    if (!ran && !why_not)
        why_not = "the judge found nothing to check here";
    /* a row not run says so first (the detail field holds 159 characters) */
    snprintf(detail, sizeof detail, "%s rule %s model %s: %s%.110s", f->name,
             fp8kv_block_rule_names[s->rule], fp8kv_block_model_names[s->model],
             ran ? "" : "not run: ", ran ? what : why_not);
    struct fp8kv_check c;
    fp8kv_check_init(&c, names[k], s->subject->name, f->name, detail);
    snprintf(c.rule, sizeof c.rule, "%s", fp8kv_block_rule_names[s->rule]);
    snprintf(c.model, sizeof c.model, "%s", fp8kv_block_model_names[s->model]);
    if (ran) {
        c.cases = r->checked[k];
        for (int i = 0; i < r->nlines; i++)
            if (r->line_kind[i] == k)
                fp8kv_check_failure(&c, -1, "%s", r->lines[i]);
        c.mismatches = r->wrong[k];
    } else {
        c.gated = 0;
    }
    fp8kv_check_finish(&c, r->seconds[k]);
    return fp8kv_results_add(out, &c);
}

/* A failing row: s's call failed (a crash, a device error), no verdict on its outputs. */
static int add_subject_failure(const struct fp8kv_block_under_test *s, const char *what,
                               struct fp8kv_results *out)
{
    struct fp8kv_check c;
    fp8kv_check_init(&c, "subject-failed", s->subject->name, s->format->name,
                     "the block codec's call failed (a device call, a crash): no verdict on its "
                     "outputs");
    c.cases = 1;
    fp8kv_check_failure(&c, -1, "%.60s: %.120s", what, fp8kv_last_error());
    fp8kv_check_finish(&c, 0.0);
    return fp8kv_results_add(out, &c);
}

/* The rows of one claimed combination s. */
static int run_combination(const struct fp8kv_run_options *o,
                           const struct fp8kv_block_under_test *s, struct fp8kv_results *out)
{
    struct fp8kv_block_sweep_point pts[4];
    char no_sweep[160] = "", no_oracle[160] = "";
    struct fp8kv_block_plan plan = {
        .vectors_root = o->vectors_dir,
        .G = 1.0f,
        .sweep = pts,
        .nsweep = run_sweep_points(s, pts, no_sweep, sizeof no_sweep),
        .seed = run_seed,
        .nblocks = on_device(s) ? RUN_BLOCKS_DEVICE : RUN_BLOCKS_CPU,
        .oracle = o->block_oracle,
    };
    if (!o->block_oracle)
        snprintf(no_oracle, sizeof no_oracle,
                 "this fp8kv was built without the oracle (FP8KV_WITH_ORACLE=OFF)");
    struct fp8kv_block_report *r = calloc(1, sizeof *r);
    if (!r)
        return fp8kv_fail("out of memory");
    const int status = fp8kv_block_check(s, &plan, r);
    if (status != FP8KV_OK && status != FP8KV_ERR_SUBJECT) {
        free(r);
        return status; /* unreadable vectors: no verdict, the run stops */
    }
    char no_vectors[160];
    snprintf(no_vectors, sizeof no_vectors, "%.100s", r->nnotes ? r->notes[0] : "no vectors");
    int rc = add_row(s, &plan, FP8KV_BLOCK_CHECK_VECTORS, r,
                     r->ran[FP8KV_BLOCK_CHECK_VECTORS] ? NULL : no_vectors, out);
    for (int k = FP8KV_BLOCK_CHECK_DECODE; rc == 0 && k <= FP8KV_BLOCK_CHECK_BLOCKS; k++) {
        const char *why = no_oracle[0]                                   ? no_oracle
                          : k == FP8KV_BLOCK_CHECK_SWEEP && !plan.nsweep ? no_sweep
                          : k == FP8KV_BLOCK_CHECK_DECODE && !fp8kv_block_can_decode(s)
                              ? "no decode"
                              : NULL;
        if (status == FP8KV_OK || r->ran[k])
            rc = add_row(s, &plan, (enum fp8kv_block_check_kind)k, r, why, out);
    }
    if (rc == 0 && status == FP8KV_ERR_SUBJECT) {
        char what[64];
        snprintf(what, sizeof what, "%s %s", fp8kv_block_rule_names[s->rule],
                 fp8kv_block_model_names[s->model]);
        rc = add_subject_failure(s, what, out);
    }
    free(r);
    return rc;
}

/* The rows of every combination block subject bs claims of format f. */
static int run_subject_format(const struct fp8kv_run_options *o, const struct fp8kv_subject *bs,
                              const struct fp8kv_block_format *f, int threads,
                              struct fp8kv_results *out)
{
    int rc = FP8KV_OK;
    for (int rule = 0; rule < FP8KV_BLOCK_RULE_COUNT && rc == 0; rule++) {
        if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule))
            continue;
        for (int model = 0; model < FP8KV_BLOCK_MODEL_COUNT && rc == 0; model++) {
            struct fp8kv_block_under_test s;
            if (fp8kv_block_select(bs, f, (enum fp8kv_block_rule)rule,
                                   (enum fp8kv_block_model)model, threads,
                                   &s) == FP8KV_OK) /* else not claimed */
                rc = run_combination(o, &s, out);
        }
    }
    return rc;
}

int fp8kv_run_blocks(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
                     struct fp8kv_results *out)
{
    const int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    int rc = FP8KV_OK;
    for (int fi = 0; fi < FP8KV_BLOCK_FORMAT_COUNT && rc == 0; fi++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[fi];
        if (o->profile && strcmp(o->profile, f->name) != 0)
            continue;
        const size_t from = out->count;
        for (int i = 0; i < t->subject_count && rc == 0; i++)
            if (fp8kv_subject_can(&t->subjects[i], FP8KV_CAP_BLOCK))
                rc = run_subject_format(o, &t->subjects[i], f, threads, out);
        fp8kv_log_checks(o->log, out, from);
    }
    return rc;
}
