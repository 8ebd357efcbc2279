/* cmd_sweep.c — `fp8kv sweep`: the exhaustive sweep of a built-in codec under one profile, or
 * the whole verdict on a codec plugin (fp8kv/plugin_sweep.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "fp8kv/verify.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin_sweep.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

static const char sweep_help[] =
    "usage: fp8kv sweep --codec NAME [--profile P] [--domain f32|f16|bf16] [options]\n"
    "       fp8kv sweep --plugin PATH.so [--model M] [--inf clamp|nan] [options]\n"
    "\n"
    "--codec: runs every input of the domain (all 2^32 f32 patterns by default) through a\n"
    "built-in encoder at scale 1 and judges every code against the certified boundaries of\n"
    "the profile (DIR/<profile>/boundaries.npy).\n"
    "--plugin: loads a codec plugin (fp8kv/plugin.h) in child processes and judges it on the\n"
    "2^32 f32 sweep, the edges, every f16 and bf16 input, the store-with-scale pairs (gated\n"
    "under --model; it also says which scale models the plugin matches) and, when it has\n"
    "decode_f32, the decode and read sets. The profile comes from the plugin's format and\n"
    "overflow with --inf.\n"
    "Prints the mismatches per input class, the first failures (input => got  expected want\n"
    "class) and a last line\n"
    "  <name> <profile>: inputs=<N> mismatches=<M> verdict=conformant|nonconformant\n"
    "\n"
    "  --codec NAME        bits | frexp\n"
    "  --profile P         (--codec) a profile of vectors/README.md (default e4m3fn_satfinite)\n"
    "  --domain D          (--codec) f32 (default), f16 or bf16\n"
    "  --plugin PATH       a shared library exporting fp8kv_codec_v1\n"
    "  --model M           (--plugin) f32_div (default), f32_mul_recip or f16_div\n"
    "  --inf P             (--plugin) what +-Inf gives under satfinite: clamp (default) or nan\n"
    "  --timeout S         (--plugin) seconds a plugin call may take (default 30)\n"
    "  --nan-check C       class (any NaN code for a NaN) or strict (the byte; default)\n"
    "  --threads N         threads, and plugin workers (default: all cores)\n"
    "  --json FILE         also write the verdict as JSON (docs/json.md); '-': the JSON to\n"
    "                      stdout, the text to stderr\n"
    "  --vectors DIR       the vector directory (default: $FP8KV_VECTORS, ./vectors, or the\n"
    "                      installed set)\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments, vectors or plugin (not loadable,\n"
    "      wrong ABI version, unknown format or overflow, missing symbol), 4 the plugin crashed\n"
    "      or hung (the input range in flight is named)\n";

enum {
    OPT_CODEC,
    OPT_PROFILE,
    OPT_DOMAIN,
    OPT_PLUGIN,
    OPT_MODEL,
    OPT_INF,
    OPT_TIMEOUT,
    OPT_NAN_CHECK,
    OPT_THREADS,
    OPT_VECTORS,
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"codec", 1},   {"profile", 1},   {"domain", 1},  {"plugin", 1},  {"model", 1}, {"inf", 1},
    {"timeout", 1}, {"nan-check", 1}, {"threads", 1}, {"vectors", 1}, {"json", 1}};

void fp8kv_cli_print_classes(const struct fp8kv_check *c)
{
    for (int k = 0; c->has_classes && k < FP8KV_CLASS_COUNT; k++)
        if (c->class_mismatches[k])
            printf("  %-16s %llu mismatches\n", fp8kv_class_names[k],
                   (unsigned long long)c->class_mismatches[k]);
}

int fp8kv_cli_print_sweep(const struct fp8kv_check *c)
{
    printf("%s %s: %s\n", c->subject, c->profile, c->detail);
    fp8kv_cli_print_classes(c);
    for (int i = 0; i < c->failure_lines; i++)
        printf("%s\n", c->failures[i]);
    printf("%s %s: inputs=%llu mismatches=%llu verdict=%s\n", c->subject, c->profile,
           (unsigned long long)c->cases, (unsigned long long)c->mismatches,
           c->passed ? "conformant" : "nonconformant");
    return c->passed ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}

/* The options both modes share. */
struct sweep_common {
    int check, threads;
    const char *dir;
    const char *json; /* --json: NULL, a path or "-" */
};

static int sweep_codec(const struct fp8kv_cli_args *a, const struct sweep_common *k)
{
    const struct fp8kv_subject *enc = fp8kv_subject_find(
        fp8kv_cpu_subjects, fp8kv_cpu_subject_count, a->value[OPT_CODEC], FP8KV_CAP_ENCODE);
    static const char *const codecs[] = {"bits", "frexp"};
    if (!enc)
        return fp8kv_cli_unknown_choice("sweep", "--codec: no built-in codec", "",
                                        a->value[OPT_CODEC], codecs, 2);
    const char *profile_name = a->value[OPT_PROFILE] ? a->value[OPT_PROFILE] : "e4m3fn_satfinite";
    const struct fp8kv_profile *p = fp8kv_cli_profile("sweep", profile_name);
    if (!p)
        return FP8KV_EXIT_USAGE;
    int domain = 0;
    if (a->value[OPT_DOMAIN] &&
        (domain = fp8kv_cli_parse_choice("sweep", "domain", a->value[OPT_DOMAIN],
                                         fp8kv_sweep_domain_names, FP8KV_DOMAIN_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    uint32_t *bounds = fp8kv_vectors_trust(k->dir) == 0 ? fp8kv_load_boundaries(k->dir, p) : NULL;
    if (!bounds)
        return fp8kv_cli_input_error("sweep");
    struct fp8kv_sweep_options opt = {.threads = k->threads, .progress = stderr};
    struct fp8kv_check c;
    int rc = fp8kv_sweep(p, (enum fp8kv_nan_check)k->check, (enum fp8kv_domain)domain, bounds, enc,
                         fp8kv_profile_cfg(p), &opt, &c);
    free(bounds);
    if (rc != 0)
        return fp8kv_cli_input_error("sweep");
    printf("time: %.3f s\n", c.seconds);
    rc = fp8kv_cli_print_sweep(&c);
    json_t *extra =
        json_pack("{s:s, s:s, s:s}", "profile", p->name, "domain", fp8kv_sweep_domain_names[domain],
                  "nan_check", fp8kv_nan_check_names[k->check]);
    json_t *doc =
        fp8kv_cli_verdict_doc("sweep", c.passed ? "conformant" : "nonconformant", &c, 1, extra);
    return fp8kv_cli_json_write("sweep", k->json, doc) != 0 ? FP8KV_EXIT_USAGE : rc;
}

/* The line on the scale models: those the plugin's codes match on every scale pair and, under
 * the strict NaN check, those it matches on every pair whose code is not a NaN (a NaN's sign
 * only, then, keeps it from matching). */
static void print_models(const struct fp8kv_plugin_verdict *v, int model)
{
    printf("scale models the plugin matches on the scale pairs:");
    for (int m = 0; m < FP8KV_MODEL_COUNT; m++)
        if (v->models_matched & (1u << m))
            printf(" %s", fp8kv_model_names[m]);
    printf("%s", v->models_matched ? "" : " none");
    const unsigned nan_only = v->models_matched_but_nan & ~v->models_matched;
    if (nan_only) {
        printf("; on every non-NaN pair also:");
        for (int m = 0; m < FP8KV_MODEL_COUNT; m++)
            if (nan_only & (1u << m))
                printf(" %s", fp8kv_model_names[m]);
        printf(" (the NaN codes differ under --nan-check strict)");
    }
    printf(" (gated: %s)\n", fp8kv_model_names[model]);
}

/* The models of a mask, as a JSON array of names. */
static json_t *model_list(unsigned mask)
{
    json_t *a = json_array();
    for (int m = 0; m < FP8KV_MODEL_COUNT; m++)
        if (mask & (1u << m))
            json_array_append_new(a, json_string(fp8kv_model_names[m]));
    return a;
}

static int sweep_plugin(const struct fp8kv_cli_args *a, const struct sweep_common *k)
{
    for (int o = OPT_PROFILE; o <= OPT_DOMAIN; o++)
        if (a->value[o])
            return fp8kv_cli_usage_error("sweep",
                                         "--%s is for --codec; a plugin's profile comes from "
                                         "its descriptor and --inf",
                                         options[o].name);
    enum fp8kv_scale_model model = FP8KV_MODEL_F32_DIV;
    int inf = FP8KV_INF_CLAMP;
    double timeout = 30.0;
    if (a->value[OPT_MODEL] &&
        fp8kv_cli_parse_kernel_model("sweep", a->value[OPT_MODEL], &model) != 0)
        return FP8KV_EXIT_USAGE;
    if (a->value[OPT_INF] && (inf = fp8kv_cli_parse_choice("sweep", "inf", a->value[OPT_INF],
                                                           fp8kv_inf_names, FP8KV_INF_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a->value[OPT_TIMEOUT] &&
        fp8kv_cli_parse_seconds("sweep", "timeout", a->value[OPT_TIMEOUT], &timeout) != 0)
        return FP8KV_EXIT_USAGE;

    struct fp8kv_plugin *pl;
    int threads = k->threads > 0 ? k->threads : fp8kv_sweep_default_threads();
    int rc = fp8kv_plugin_open(a->value[OPT_PLUGIN], threads, timeout, &pl);
    if (rc != 0)
        return fp8kv_cli_subject_error("sweep", rc);
    struct fp8kv_plugin_sweep_options o = {.vectors_dir = k->dir,
                                           .model = model,
                                           .check = (enum fp8kv_nan_check)k->check,
                                           .inf = (enum fp8kv_inf_policy)inf,
                                           .sweep = {.threads = threads, .progress = stderr}};
    struct fp8kv_plugin_verdict v;
    rc = fp8kv_plugin_sweep(pl, &o, &v);
    fp8kv_plugin_close(pl);
    for (size_t i = 0; i < v.results.count; i++) { /* each set: its line, classes, failures */
        struct fp8kv_results one = {&v.results.items[i], 1, 1};
        fp8kv_log_checks(stdout, &one, 0);
        if (one.items->gated)
            fp8kv_cli_print_classes(one.items);
    }
    const char *verdict = rc != 0        ? "subject failed"
                          : v.conformant ? "conformant"
                                         : "nonconformant";
    json_t *extra =
        json_pack("{s:s, s:s, s:s, s:o, s:o}", "profile", v.profile->name, "model",
                  fp8kv_model_names[model], "nan_check", fp8kv_nan_check_names[k->check],
                  "models_matched", model_list(v.models_matched), "models_matched_but_nan",
                  model_list(v.models_matched_but_nan));
    if (rc != 0)
        json_object_set_new(extra, "error", json_string(fp8kv_last_error()));
    json_t *doc = fp8kv_cli_verdict_doc("sweep", verdict, v.results.items, v.results.count, extra);
    if (rc != 0) {
        fp8kv_results_free(&v.results);
        char message[1024]; /* the crash, named after the JSON is written */
        snprintf(message, sizeof message, "%s", fp8kv_last_error());
        fp8kv_cli_json_write("sweep", k->json, doc);
        fp8kv_fail("%s", message);
        return fp8kv_cli_subject_error("sweep", rc);
    }
    print_models(&v, model);
    const char *subject = v.results.count ? v.results.items[0].subject : a->value[OPT_PLUGIN];
    printf("%s %s: inputs=%llu mismatches=%llu verdict=%s\n", subject, v.profile->name,
           (unsigned long long)v.inputs, (unsigned long long)v.mismatches, verdict);
    fp8kv_results_free(&v.results);
    if (fp8kv_cli_json_write("sweep", k->json, doc) != 0)
        return FP8KV_EXIT_USAGE;
    return v.conformant ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}

int fp8kv_cmd_sweep(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("sweep", sweep_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (!a.value[OPT_CODEC] == !a.value[OPT_PLUGIN])
        return fp8kv_cli_usage_error("sweep",
                                     "give one of --codec NAME (bits | frexp) or --plugin PATH");
    struct sweep_common k = {.check = FP8KV_NAN_CHECK_STRICT,
                             .dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]),
                             .json = a.value[OPT_JSON]};
    if (a.value[OPT_NAN_CHECK] &&
        (k.check = fp8kv_cli_parse_choice("sweep", "nan-check", a.value[OPT_NAN_CHECK],
                                          fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_THREADS] &&
        fp8kv_cli_parse_threads("sweep", a.value[OPT_THREADS], &k.threads) != 0)
        return FP8KV_EXIT_USAGE;
    if ((rc = fp8kv_cli_json_begin("sweep", k.json)) != 0)
        return rc;
    if (a.value[OPT_CODEC]) {
        for (int o = OPT_PLUGIN; o <= OPT_TIMEOUT; o++)
            if (a.value[o])
                return fp8kv_cli_usage_error("sweep", "--%s is for --plugin", options[o].name);
        return sweep_codec(&a, &k);
    }
    return sweep_plugin(&a, &k);
}
