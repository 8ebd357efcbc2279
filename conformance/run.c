/* run.c — the CPU conformance run: every check of fp8kv/checks.h on the host subjects. */
#include <gnu/libc-version.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/host_codecs.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

#ifndef FP8KV_HOST_COMPILER
#define FP8KV_HOST_COMPILER "unknown"
#endif
#ifndef FP8KV_HOST_FLAGS
#define FP8KV_HOST_FLAGS "unknown"
#endif

static void cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown x86-64 CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, size, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

void fp8kv_cpu_target_info(struct fp8kv_target_info *t)
{
    memset(t, 0, sizeof *t);
#if defined(__x86_64__)
    snprintf(t->target, sizeof t->target, "cpu-x86_64");
#elif defined(__aarch64__)
    snprintf(t->target, sizeof t->target, "cpu-aarch64");
#else
    snprintf(t->target, sizeof t->target, "cpu");
#endif
    char model[128];
    cpu_model(model, sizeof model);
    snprintf(t->device, sizeof t->device, "%s, %d threads", model, omp_get_max_threads());
    snprintf(t->runtime, sizeof t->runtime, "glibc %s, OpenMP %d", gnu_get_libc_version(),
             _OPENMP);
    snprintf(t->compiler, sizeof t->compiler, "%s", FP8KV_HOST_COMPILER);
    snprintf(t->flags, sizeof t->flags, "%s", FP8KV_HOST_FLAGS);
    t->executed = 1;
}

/* Adds the checks of r from index `from` on to the log, one line each. */
void fp8kv_log_checks(FILE *log, const struct fp8kv_results *r, size_t from)
{
    if (!log)
        return;
    for (size_t i = from; i < r->count; i++) {
        const struct fp8kv_check *c = &r->items[i];
        fprintf(log, "%-6s %-16s %-14s %-26s cases=%llu mismatches=%llu",
                !c->gated ? "INFO" : c->passed ? "PASS" : "FAIL", c->name, c->subject, c->profile,
                (unsigned long long)c->cases, (unsigned long long)c->mismatches);
        if (c->has_nmse)
            fprintf(log, " nmse=%.3g", c->nmse);
        fprintf(log, " (%.2f s)\n", c->seconds);
        for (int k = 0; k < c->failure_lines && c->gated; k++)
            fprintf(log, "       %s\n", c->failures[k]);
    }
    fflush(log);
}

static int run_profile(const struct fp8kv_run_options *o, const struct fp8kv_profile *p,
                       struct fp8kv_results *r)
{
    const char *dir = o->vectors_dir;
    uint32_t *bounds = fp8kv_load_boundaries(dir, p);
    if (!bounds)
        return FP8KV_ERR;
    int rc = 0;
    for (int e = 0; e < fp8kv_host_encoder_count && rc == 0; e++) {
        const struct fp8kv_host_encoder *enc = &fp8kv_host_encoders[e];
        size_t from = r->count;
        struct fp8kv_encoder_subject subject = fp8kv_host_encoder_subject(enc);
        rc = fp8kv_check_encoder_vectors(dir, p, FP8KV_NAN_CHECK_STRICT, &subject, r);
        struct fp8kv_host_sweep ctx = {enc, fp8kv_cfg_of_profile(p, FP8KV_MODEL_F32_DIV)};
        struct fp8kv_sweep_subject sweep_subject = fp8kv_host_sweep_subject(&ctx);
        struct fp8kv_sweep_options opt = {.threads = o->threads, .progress = o->progress};
        for (int d = 0; d < FP8KV_SWEEP_DOMAIN_COUNT && rc == 0; d++) {
            struct fp8kv_check c;
            rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, (enum fp8kv_sweep_domain)d, bounds,
                             &sweep_subject, &opt, &c);
            if (rc == 0)
                rc = fp8kv_results_add(r, &c);
        }
        fp8kv_log_checks(o->log, r, from);
    }
    for (int d = 0; d < fp8kv_host_decoder_count && rc == 0; d++) {
        size_t from = r->count;
        rc = fp8kv_check_decoder_vectors(dir, p, fp8kv_host_decoders[d].name,
                                         fp8kv_host_decoders[d].decode, r);
        fp8kv_log_checks(o->log, r, from);
    }
    size_t from = r->count;
    if (rc == 0)
        rc = fp8kv_check_kv(dir, p, &fp8kv_cpu_kv_paths, r);
    if (rc == 0)
        rc = fp8kv_check_quantization_nmse(p, &fp8kv_cpu_kv_paths, r);
    fp8kv_log_checks(o->log, r, from);
    free(bounds);
    return rc;
}

int fp8kv_run_profiles(const struct fp8kv_run_options *o, struct fp8kv_results *r,
                       int (*run_one)(const struct fp8kv_run_options *o,
                                      const struct fp8kv_profile *p, struct fp8kv_results *r))
{
    int rc = 0;
    const size_t before = r->count;
    for (int i = 0; i < fp8kv_profile_count && rc == 0; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        if (o->profile && strcmp(o->profile, p->name) != 0)
            continue;
        rc = run_one(o, p, r);
    }
    if (rc == 0 && r->count == before)
        rc = fp8kv_fail("no profile named '%s'", o->profile ? o->profile : "");
    return rc;
}

int fp8kv_run_cpu(const struct fp8kv_run_options *o, struct fp8kv_results *r)
{
    return fp8kv_run_profiles(o, r, run_profile);
}
