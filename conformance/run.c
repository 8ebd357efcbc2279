/* run.c — a conformance run: every check of fp8kv/checks.h on the subjects of one target's
 * table, profile by profile. The CPU and GPU targets differ only in their tables. */
#include <gnu/libc-version.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/verify.h"
#include "fp8kv/cpu_isa.h"
#include "fp8kv/diag.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

static void cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown x86-64 CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    int at_start = 1; /* line begins a line of the file (a longer one comes in pieces) */
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (at_start && strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, size, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
        at_start = strchr(line, '\n') != NULL;
    }
    if (ferror(f)) /* a failed read is not the end of the file: say it, guess nothing */
        snprintf(buf, size, "unknown x86-64 CPU (/proc/cpuinfo could not be read)");
    fclose(f);
}

void fp8kv_cpu_target_info(struct fp8kv_target_info *t)
{
    memset(t, 0, sizeof *t);
    fp8kv_target_name_cpu(t->target, sizeof t->target);
    char model[128];
    cpu_model(model, sizeof model);
    snprintf(t->device, sizeof t->device, "%s, %d threads", model, omp_get_max_threads());
    snprintf(t->runtime, sizeof t->runtime, "glibc %s, OpenMP %d, codec loops %s",
             gnu_get_libc_version(), _OPENMP, fp8kv_cpu_isa_names[fp8kv_cpu_isa_in_use()]);
    snprintf(t->compiler, sizeof t->compiler, "%s", FP8KV_HOST_COMPILER);
    snprintf(t->flags, sizeof t->flags, "%s", FP8KV_HOST_FLAGS);
    t->executed = 1;
}

int fp8kv_target_open(enum fp8kv_target_kind kind, int device, struct fp8kv_target *t)
{
    memset(t, 0, sizeof *t);
    if (kind != FP8KV_TARGET_CPU) {
        const int rc = fp8kv_gpu_target_open(device, t);
        if (rc == 0 || kind == FP8KV_TARGET_HIP)
            return rc;
        memset(t, 0, sizeof *t);
    }
    fp8kv_cpu_target_info(&t->info);
    t->subjects = fp8kv_cpu_subjects;
    t->subject_count = fp8kv_cpu_subject_count;
    return FP8KV_OK;
}

/* ---- one subject under one profile ---------------------------------------------------------- */

/* A vendor conversion runs each set twice: renames the checks r[from ..) "<name>-nan-<check>",
 * and makes the strict ones reported, not gated. Those conversions claim their profiles with
 * NaN check class (any NaN code for a NaN); strict shows, and counts per input class, where
 * they differ from the exact byte (on NVIDIA: -NaN becomes 0x7F). */
static void tag_nan_check(struct fp8kv_results *r, size_t from, enum fp8kv_nan_check check)
{
    for (size_t i = from; i < r->count; i++) {
        struct fp8kv_check *c = &r->items[i];
        char name[sizeof c->name];
        snprintf(name, sizeof name, "%.60s-nan-%s", c->name, fp8kv_nan_check_names[check]);
        memcpy(c->name, name, sizeof name);
        if (check == FP8KV_NAN_CHECK_STRICT)
            c->gated = 0;
    }
}

/* The encoder sets and the three exhaustive sweeps of an encoding subject. */
static int run_encoder(const struct fp8kv_run_options *o, const struct fp8kv_profile *p,
                       const uint32_t *bounds, const struct fp8kv_subject *s,
                       struct fp8kv_results *r)
{
    /* vendor conversions: strict shows a NaN-sign difference, class tells it from a wrong value */
    const enum fp8kv_nan_check checks[2] = {FP8KV_NAN_CHECK_STRICT, FP8KV_NAN_CHECK_CLASS};
    const int vendor = (s->flags & FP8KV_SUBJECT_VENDOR) != 0;
    const struct fp8kv_sweep_options opt = {.threads = o->threads, .progress = o->progress};
    int rc = 0;
    for (int k = 0; k < (vendor ? 2 : 1) && rc == 0; k++) {
        const size_t from = r->count;
        rc = fp8kv_check_encoder_vectors(o->vectors_dir, p, checks[k], s, r);
        for (int d = 0; d < FP8KV_DOMAIN_COUNT && rc == 0; d++) {
            struct fp8kv_check c;
            rc = fp8kv_sweep(p, checks[k], (enum fp8kv_domain)d, bounds, s, fp8kv_profile_cfg(p),
                             &opt, &c);
            if (rc == 0)
                rc = fp8kv_results_add(r, &c);
        }
        if (vendor)
            tag_nan_check(r, from, checks[k]);
    }
    return rc;
}

/* The KV-cache checks of a subject with store, gather or attention. */
static int run_kv(const struct fp8kv_run_options *o, const struct fp8kv_profile *p,
                  const struct fp8kv_subject *s, struct fp8kv_results *r)
{
    int rc = fp8kv_check_kv(o->vectors_dir, p, s, r);
    if (rc == 0 && (s->flags & FP8KV_SUBJECT_LONG_CONTEXT) &&
        fp8kv_subject_can(s, FP8KV_CAP_ATTENTION))
        rc = fp8kv_check_attention_long(o->vectors_dir, p, s, r);
    /* the engine suite too (decode at engine shapes, seconds a profile): for the subjects whose
     * long-context paths are judged, fp8kv's GPU kernels */
    if (rc == 0 && (s->flags & FP8KV_SUBJECT_LONG_CONTEXT) &&
        fp8kv_subject_can(s, FP8KV_CAP_ATTENTION))
        rc = fp8kv_check_attention_engine(o->vectors_dir, p, s, -1, r);
    if (rc == 0 && fp8kv_subject_can(s, FP8KV_CAP_STORE | FP8KV_CAP_GATHER))
        rc = fp8kv_check_quantization_nmse(p, s, r);
    return rc;
}

/* Whether s is judged under profile p: it claims p and has a capability of the fp8 profiles
 * (a block codec alone is judged by format, in the block part). */
static int runs_under_profile(const struct fp8kv_subject *s, const struct fp8kv_profile *p)
{
    const unsigned profile_caps = FP8KV_CAP_ENCODE | FP8KV_CAP_DECODE | FP8KV_CAP_STORE |
                                  FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION;
    return (s->caps & profile_caps) && fp8kv_subject_implements(s, p);
}

/* A failing check that says the subject failed (the run goes on with the next subject). */
static int add_subject_failure(const struct fp8kv_profile *p, const struct fp8kv_subject *s,
                               struct fp8kv_results *r)
{
    struct fp8kv_check c;
    fp8kv_check_init(&c, "subject-failed", s->name, p->name,
                     "the subject's call failed (a device call, a crash): no verdict on its "
                     "outputs");
    c.cases = 1;
    fp8kv_check_failure(&c, -1, "%.90s", fp8kv_last_error());
    fp8kv_check_finish(&c, 0.0);
    return fp8kv_results_add(r, &c);
}

/* ---- the overall progress line (a terminal only) ------------------------------------------- */

/* Where a run is: its steps (a subject under a profile, then a block format), the one in
 * flight, its start. */
struct run_progress {
    FILE *out; /* the terminal, or NULL: no line */
    int steps, step;
    double started;
};

static void clock_text(double seconds, char *buf, size_t size)
{
    const long s = (long)(seconds + 0.5);
    snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

/* Rewrites the line in place: "fp8kv run: step N/M (profile or block format, subject): K checks
 * done, elapsed, ETA" (the ETA from the mean time of the steps done). */
static void progress_draw(struct run_progress *g, const char *profile, const char *subject,
                          size_t checks)
{
    if (!g->out)
        return;
    const double elapsed = fp8kv_now() - g->started;
    char took[32], eta[48] = "";
    clock_text(elapsed, took, sizeof took);
    if (g->step > 1) {
        char left[32];
        clock_text(elapsed / (g->step - 1) * (g->steps - g->step + 1), left, sizeof left);
        snprintf(eta, sizeof eta, ", ETA %s", left);
    }
    fprintf(g->out, "\rfp8kv run: step %d/%d (%s, %s): %zu checks done, %s elapsed%s\033[K",
            g->step, g->steps, profile, subject, checks, took, eta);
    fflush(g->out);
}

/* Clears the line, before other output and at the end. */
static void progress_clear(struct run_progress *g)
{
    if (!g->out)
        return;
    fputs("\r\033[K", g->out);
    fflush(g->out);
}

static int run_subject(const struct fp8kv_run_options *o, const struct fp8kv_profile *p,
                       const uint32_t *bounds, const struct fp8kv_subject *s,
                       struct fp8kv_results *r, struct run_progress *g)
{
    g->step++;
    progress_draw(g, p->name, s->name, r->count);
    const size_t from = r->count;
    int rc = 0;
    if (fp8kv_subject_can(s, FP8KV_CAP_ENCODE))
        rc = run_encoder(o, p, bounds, s, r);
    if (rc == 0 && fp8kv_subject_can(s, FP8KV_CAP_DECODE))
        rc = fp8kv_check_decoder_vectors(o->vectors_dir, p, FP8KV_NAN_CHECK_CLASS, s, r);
    if (rc == 0 && (s->caps & (FP8KV_CAP_STORE | FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION)))
        rc = run_kv(o, p, s, r);
    if (rc == FP8KV_ERR_SUBJECT)
        rc = add_subject_failure(p, s, r);
    progress_clear(g);
    fp8kv_log_checks(o->log, r, from);
    return rc;
}

/* ---- the run --------------------------------------------------------------------------------- */

/* The device's health over one profile: no device call failed. */
static int add_device_check(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
                            const struct fp8kv_profile *p, unsigned long errors_before,
                            struct fp8kv_results *r)
{
    struct fp8kv_check c;
    fp8kv_check_init(&c, "gpu-errors", t->info.target, p->name,
                     "no GPU runtime call or kernel failed during this profile's checks");
    c.cases = 1;
    const unsigned long errors = t->device_errors();
    if (errors != errors_before)
        fp8kv_check_failure(&c, -1, "%lu failures; the last: %.70s", errors - errors_before,
                            fp8kv_last_error());
    fp8kv_check_finish(&c, 0.0);
    const int rc = fp8kv_results_add(r, &c);
    fp8kv_log_checks(o->log, r, r->count - 1);
    return rc;
}

static int run_profile(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
                       const struct fp8kv_profile *p, struct fp8kv_results *r,
                       struct run_progress *g)
{
    uint32_t *bounds = fp8kv_load_boundaries(o->vectors_dir, p);
    if (!bounds)
        return FP8KV_ERR;
    const unsigned long errors = t->device_errors ? t->device_errors() : 0;
    int rc = 0;
    for (int i = 0; i < t->subject_count && rc == 0; i++)
        if (runs_under_profile(&t->subjects[i], p))
            rc = run_subject(o, p, bounds, &t->subjects[i], r, g);
    if (rc == 0 && t->device_errors)
        rc = add_device_check(o, t, p, errors, r);
    free(bounds);
    return rc;
}

/* The first block codec of t's table (the one the progress line names), or NULL. */
static const struct fp8kv_subject *block_subject(const struct fp8kv_target *t)
{
    return fp8kv_subject_first(t->subjects, t->subject_count, FP8KV_CAP_BLOCK);
}

/* The block formats fp8kv_run_blocks runs under o: all, or the one o->profile names; none
 * with --no-blocks, an fp8 profile, or a target without a block codec. */
static int runs_block_format(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
                             const struct fp8kv_block_format *f)
{
    return !o->no_blocks && block_subject(t) && (!o->profile || strcmp(o->profile, f->name) == 0);
}

/* The block part, one progress step per block format. */
static int run_block_formats(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
                             struct fp8kv_results *r, struct run_progress *g)
{
    struct fp8kv_run_options one = *o;
    one.log = NULL; /* logged here, after the line is cleared */
    int rc = 0;
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT && rc == 0; i++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[i];
        if (!runs_block_format(o, t, f))
            continue;
        g->step++;
        progress_draw(g, f->name, block_subject(t)->name, r->count);
        const size_t from = r->count;
        one.profile = f->name;
        rc = fp8kv_run_blocks(&one, t, r);
        progress_clear(g);
        fp8kv_log_checks(o->log, r, from);
    }
    return rc;
}

int fp8kv_run(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
              struct fp8kv_results *r)
{
    int rc = fp8kv_vectors_trust(o->vectors_dir); /* no verdict against unverified truth */
    const size_t before = r->count;
    /* on a terminal, one overall line replaces the sweeps' own bars */
    struct run_progress g = {.out = o->progress && isatty(fileno(o->progress)) ? o->progress : NULL,
                             .started = fp8kv_now()};
    struct fp8kv_run_options quiet = *o;
    if (g.out)
        quiet.progress = NULL;
    for (int i = 0; i < fp8kv_profile_count; i++)
        for (int k = 0; k < t->subject_count; k++)
            g.steps += (!o->profile || strcmp(o->profile, fp8kv_profiles[i].name) == 0) &&
                       runs_under_profile(&t->subjects[k], &fp8kv_profiles[i]);
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        g.steps += runs_block_format(o, t, &fp8kv_block_formats[i]);
    for (int i = 0; i < fp8kv_profile_count && rc == 0; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        if (o->profile && strcmp(o->profile, p->name) != 0)
            continue;
        rc = run_profile(&quiet, t, p, r, &g);
    }
    progress_clear(&g);
    if (rc == 0)
        rc = run_block_formats(&quiet, t, r, &g);
    if (rc == 0 && r->count == before)
        rc = fp8kv_fail("no profile or block format named '%s'", o->profile ? o->profile : "");
    return rc;
}
