/* cmd_sweep.c — `fp8kv sweep`: one exhaustive sweep of one codec under one profile. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/host_codecs.h"
#include "fp8kv/sweep.h"

static const char sweep_help[] =
    "usage: fp8kv sweep --codec NAME [--profile P] [--domain f32|f16|bf16]\n"
    "                   [--nan-check class|strict] [--threads N] [--vectors DIR]\n"
    "\n"
    "Runs every input of the domain (all 2^32 f32 patterns by default) through a built-in\n"
    "encoder at scale 1 and judges every code against the certified boundaries of the\n"
    "profile (DIR/<profile>/boundaries.npy). Prints the mismatches per input class, the first\n"
    "20 failures (input => got  expected want  class) and a last line\n"
    "  <codec> <profile>: inputs=<N> mismatches=<M> verdict=conformant|nonconformant\n"
    "\n"
    "  --codec NAME        bits | frexp\n"
    "  --profile P         a profile of vectors/README.md (default e4m3fn_satfinite)\n"
    "  --domain D          f32 (default), f16 or bf16\n"
    "  --nan-check C       class (any NaN code for a NaN) or strict (the byte; default)\n"
    "  --threads N         OpenMP threads (default: all cores)\n"
    "  --vectors DIR       the vector directory (default vectors)\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments or vectors\n";

enum { OPT_CODEC, OPT_PROFILE, OPT_DOMAIN, OPT_NAN_CHECK, OPT_THREADS, OPT_VECTORS, OPT_COUNT };
static const struct cli_option options[OPT_COUNT] = {
    {"codec", 1}, {"profile", 1}, {"domain", 1}, {"nan-check", 1}, {"threads", 1}, {"vectors", 1}};

int cli_print_sweep(const struct fp8kv_check *c)
{
    printf("%s %s: %s\n", c->subject, c->profile, c->detail);
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        if (c->class_mismatches[k])
            printf("  %-16s %llu mismatches\n", fp8kv_class_names[k],
                   (unsigned long long)c->class_mismatches[k]);
    for (int i = 0; i < c->failure_lines; i++)
        printf("%s\n", c->failures[i]);
    printf("%s %s: inputs=%llu mismatches=%llu verdict=%s\n", c->subject, c->profile,
           (unsigned long long)c->cases, (unsigned long long)c->mismatches,
           c->passed ? "conformant" : "nonconformant");
    return c->passed ? EXIT_CONFORMANT : EXIT_NONCONFORMANT;
}

int cmd_sweep(int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_begin("sweep", sweep_help, argc, argv, options, OPT_COUNT, &a);
    if (rc >= 0)
        return rc;
    if (!a.value[OPT_CODEC])
        return cli_usage_error("sweep", "--codec is required (bits | frexp)");
    const struct fp8kv_host_encoder *enc = fp8kv_host_encoder_by_name(a.value[OPT_CODEC]);
    if (!enc)
        return cli_usage_error("sweep", "--codec: no built-in codec '%s' (bits | frexp)",
                               a.value[OPT_CODEC]);
    const char *profile_name = a.value[OPT_PROFILE] ? a.value[OPT_PROFILE] : "e4m3fn_satfinite";
    const struct fp8kv_profile *p = fp8kv_profile_by_name(profile_name);
    if (!p)
        return cli_usage_error("sweep", "--profile: no profile '%s'", profile_name);
    int domain = 0, check = FP8KV_NAN_CHECK_STRICT, threads = 0;
    if (a.value[OPT_DOMAIN] &&
        (domain = cli_parse_choice("sweep", "domain", a.value[OPT_DOMAIN],
                                   fp8kv_sweep_domain_names, FP8KV_SWEEP_DOMAIN_COUNT)) < 0)
        return EXIT_USAGE;
    if (a.value[OPT_NAN_CHECK] &&
        (check = cli_parse_choice("sweep", "nan-check", a.value[OPT_NAN_CHECK],
                                  fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT)) < 0)
        return EXIT_USAGE;
    if (a.value[OPT_THREADS] && cli_parse_threads("sweep", a.value[OPT_THREADS], &threads) != 0)
        return EXIT_USAGE;
    const char *dir = a.value[OPT_VECTORS] ? a.value[OPT_VECTORS] : "vectors";
    uint32_t *bounds = fp8kv_load_boundaries(dir, p);
    if (!bounds)
        return cli_input_error("sweep");

    struct fp8kv_host_sweep h = {enc, fp8kv_cfg_of_profile(p, FP8KV_MODEL_F32_DIV)};
    struct fp8kv_sweep_subject subject = fp8kv_host_sweep_subject(&h);
    struct fp8kv_sweep_options opt = {.threads = threads, .progress = stderr};
    struct fp8kv_check c;
    rc = fp8kv_sweep(p, (enum fp8kv_nan_check)check, (enum fp8kv_sweep_domain)domain, bounds,
                     &subject, &opt, &c);
    free(bounds);
    if (rc != 0)
        return cli_input_error("sweep");
    printf("time: %.3f s\n", c.seconds);
    return cli_print_sweep(&c);
}
