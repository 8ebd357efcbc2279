/* cmd_sweep.c — `fp8kv sweep`: the exhaustive sweep of a built-in codec under one profile, or
 * the whole verdict on a codec plugin (fp8kv/plugin_sweep.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/verify.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin_sweep.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"
#include "report/model.h"

/* --device all merges this command's shards only */
static const struct fp8kv_cli_merger sweep_merger[] = {{"sweep", fp8kv_cli_sweep_merge},
                                                       {NULL, NULL}};

static const char sweep_help[] =
    "usage: fp8kv sweep --codec NAME [--profile P] [--domain {dtypes}] [options]\n"
    "       fp8kv sweep --plugin PATH.so [--model M] [--inf {satfinite_infs}] [options]\n"
    "\n"
    "--codec: runs every input of the domain (all 2^32 f32 patterns by default) through a\n"
    "built-in encoder at scale 1 and judges every code against the certified boundaries of\n"
    "the profile (DIR/<profile>/boundaries.npy); with --target hip, a device codec judged on\n"
    "the GPU.\n"
    "--plugin: loads a codec plugin (fp8kv/plugin.h) in child processes and judges it on the\n"
    "2^32 f32 sweep, the edges, every f16 and bf16 input, the store-with-scale pairs (gated\n"
    "under --model; it also says which scale models the plugin matches) and, when it has\n"
    "decode_f32, the decode and read sets. The profile comes from the plugin's format and\n"
    "overflow with --inf.\n"
    "Prints the mismatches per input class, the first failures (input => got  expected want\n"
    "class) and a last line\n"
    "  <name> <profile>: inputs=<N> mismatches=<M> verdict=conformant|nonconformant\n"
    "\n"
    "  --codec NAME        bits | frexp (--target hip: a device codec, e.g. ptx-cvt-satfinite)\n"
    "  --profile P         (--codec) a profile of vectors/README.md (default {default_profile})\n"
    "  --domain D          (--codec) {dtypes:or_default}\n"
    "  --target T          (--codec) cpu (default) or hip (a GPU build)\n" FP8KV_CLI_ISA_HELP
    "  --plugin PATH       a shared library exporting fp8kv_codec_v1\n"
    "  --model M           (--plugin) {kernel_models:or_default}\n"
    "  --inf P             (--plugin) what +-Inf gives under satfinite: "
    "{satfinite_infs:or_default}\n"
    "  --timeout S         (--plugin) seconds a plugin call may take (default 30)\n"
    "  --worker-memory M   (--plugin) the memory a plugin worker may hold (bytes, or with K, M\n"
    "                      or G; 0: none; default $FP8KV_WORKER_MEMORY, else half the machine's)\n"
    "  --nan-check C       {nan_checks:notes_default}\n"
    "  --threads N         threads, and plugin workers (default: all cores)\n" FP8KV_CLI_SHARD_HELP
        FP8KV_CLI_DEVICE_HELP
    "  --json FILE         also write the verdict as JSON (docs/json.md); '-': the JSON to\n"
    "                      stdout, the text to stderr\n"
    "  --vectors DIR       the vector directory (default: $FP8KV_VECTORS, ./vectors, or the\n"
    "                      installed set)\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments, vectors or plugin (not loadable,\n"
    "      wrong ABI version, unknown format or overflow, missing symbol), 3 no GPU (--target\n"
    "      hip), 4 the plugin crashed or hung (the input range in flight is named)\n";

enum {
    OPT_CODEC,
    OPT_PROFILE,
    OPT_DOMAIN,
    OPT_TARGET,
    OPT_PLUGIN,
    OPT_MODEL,
    OPT_INF,
    OPT_TIMEOUT,
    OPT_WORKER_MEMORY,
    OPT_NAN_CHECK,
    OPT_THREADS,
    OPT_VECTORS,
    OPT_JSON,
    OPT_SHARD,
    OPT_DEVICE,
    OPT_ISA,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"codec", 1},         {"profile", 1},   {"domain", 1},  {"target", 1},
    {"plugin", 1},        {"model", 1},     {"inf", 1},     {"timeout", 1},
    {"worker-memory", 1}, {"nan-check", 1}, {"threads", 1}, {"vectors", 1},
    {"json", 1},          {"shard", 1},     {"device", 1},  {"isa", 1}};

/* The options both modes share. */
struct sweep_common {
    int check, threads;
    const char *dir;
    const char *json; /* --json: NULL, a path or "-" */
    struct fp8kv_shard shard;
};

/* What a sweep judged, however it ran (whole, one shard, shards merged): all its text and its
 * JSON are made from this, by present_sweep. */
struct sweep_outcome {
    const char *codec;  /* --codec's name; NULL: a plugin */
    const char *target; /* "cpu" or "hip" (--codec) */
    const struct fp8kv_profile *p;
    int domain, check, model;
    struct fp8kv_plugin_verdict v; /* the checks and their tally (--codec: the one sweep) */
};

/* What makes two sweeps' shards shards of one sweep (the "of" of the shard object). */
static json_t *sweep_identity(const struct sweep_outcome *o)
{
    if (o->codec)
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "command", "sweep", "codec", o->codec,
                         "target", o->target, "profile", o->p->name, "domain",
                         fp8kv_sweep_domain_names[o->domain], "nan_check",
                         fp8kv_nan_check_names[o->check]);
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "command", "sweep", "plugin",
                     o->v.results.count ? o->v.results.items[0].subject : "", "profile", o->p->name,
                     "model", fp8kv_model_names[o->model], "nan_check",
                     fp8kv_nan_check_names[o->check]);
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

/* Each set of a plugin's verdict: its line, its classes, its failures. */
static void print_checks(const struct fp8kv_results *r)
{
    for (size_t i = 0; i < r->count; i++) {
        struct fp8kv_results one = {&r->items[i], 1, 1};
        fp8kv_log_checks(stdout, &one, 0);
        if (one.items->gated)
            fp8kv_cli_print_classes(one.items);
    }
}

/* The text and the JSON (--json json, a shard's when shard.count) of a finished sweep; its
 * exit code. */
static int present_sweep(const struct sweep_outcome *o, const char *json, struct fp8kv_shard shard)
{
    const struct fp8kv_plugin_verdict *v = &o->v;
    fp8kv_cli_print_shard(shard, 1u << o->domain);
    json_t *extra;
    int rc;
    if (o->codec) {
        const struct fp8kv_check *c = &v->results.items[0];
        printf("time: %.3f s\n", c->seconds);
        rc = fp8kv_cli_print_sweep(c);
        extra = json_pack("{s:s, s:s, s:s}", "profile", o->p->name, "domain",
                          fp8kv_sweep_domain_names[o->domain], "nan_check",
                          fp8kv_nan_check_names[o->check]);
    } else {
        print_checks(&v->results);
        if (shard.index > 0) /* the scale pairs are shard 0's */
            printf("scale models: judged by shard 0\n");
        else
            print_models(v, o->model);
        printf("%s %s: inputs=%llu mismatches=%llu verdict=%s\n",
               v->results.count ? v->results.items[0].subject : "", o->p->name,
               (unsigned long long)v->inputs, (unsigned long long)v->mismatches,
               v->conformant ? "conformant" : "nonconformant");
        rc = v->conformant ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
        extra = json_pack("{s:s, s:s, s:s, s:o, s:o}", "profile", o->p->name, "model",
                          fp8kv_model_names[o->model], "nan_check", fp8kv_nan_check_names[o->check],
                          "models_matched", model_list(v->models_matched), "models_matched_but_nan",
                          model_list(v->models_matched_but_nan));
    }
    json_t *doc = fp8kv_cli_verdict_shard_doc(
        "sweep", v->conformant ? "conformant" : "nonconformant", v->results.items, v->results.count,
        extra, shard, sweep_identity(o));
    return fp8kv_cli_json_write("sweep", json, doc) != 0 ? FP8KV_EXIT_USAGE : rc;
}

/* --codec --target hip: the device's codec so named, after the device opened (its table lives
 * as long as the process). NULL after a message, with *exit_code. */
static const struct fp8kv_subject *device_codec(const char *name, int device, int *exit_code)
{
    struct fp8kv_target t;
    if (fp8kv_gpu_target_open(device, &t) != 0) {
        fprintf(stderr, "fp8kv sweep: --target hip: %s\n", fp8kv_last_error());
        *exit_code = FP8KV_EXIT_UNAVAILABLE;
        return NULL;
    }
    fprintf(stderr, "fp8kv sweep: %s\n", t.info.device);
    const struct fp8kv_subject *s =
        fp8kv_subject_find(t.subjects, t.subject_count, name, FP8KV_CAP_ENCODE);
    if (!s) {
        const char *names[32];
        int n = 0;
        for (int i = 0; i < t.subject_count && n < 32; i++)
            if (fp8kv_subject_can(&t.subjects[i], FP8KV_CAP_ENCODE))
                names[n++] = t.subjects[i].name;
        *exit_code =
            fp8kv_cli_unknown_choice("sweep", "--codec: no device codec", "", name, names, n);
    }
    return s;
}

static int sweep_codec(const struct fp8kv_cli_args *a, const struct sweep_common *k)
{
    static const char *const targets[] = {"cpu", "hip"};
    int target = 0, device = 0, rc = 0;
    if (a->value[OPT_TARGET] &&
        (target = fp8kv_cli_parse_choice("sweep", "target", a->value[OPT_TARGET], targets, 2)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a->value[OPT_DEVICE] && !target)
        return fp8kv_cli_usage_error("sweep", "--device is for --target hip");
    if (a->value[OPT_DEVICE] &&
        fp8kv_cli_parse_device_or_all("sweep", a->value[OPT_DEVICE], &device) != 0)
        return FP8KV_EXIT_USAGE;
    const struct fp8kv_profile *p = a->value[OPT_PROFILE]
                                        ? fp8kv_cli_profile("sweep", a->value[OPT_PROFILE])
                                        : fp8kv_default_profile();
    if (!p)
        return FP8KV_EXIT_USAGE;
    int domain = FP8KV_DEFAULT_DTYPE;
    if (a->value[OPT_DOMAIN] &&
        (domain = fp8kv_cli_parse_choice("sweep", "domain", a->value[OPT_DOMAIN],
                                         fp8kv_sweep_domain_names, FP8KV_DOMAIN_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (device == FP8KV_CLI_ALL_DEVICES)
        return fp8kv_cli_on_every_device("sweep", a, options, OPT_COUNT, OPT_DEVICE, OPT_SHARD,
                                         OPT_JSON, k->json, sweep_merger);
    const struct fp8kv_subject *enc =
        target ? device_codec(a->value[OPT_CODEC], device, &rc)
               : fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count,
                                    a->value[OPT_CODEC], FP8KV_CAP_ENCODE);
    static const char *const codecs[] = {"bits", "frexp"};
    if (!enc)
        return rc ? rc
                  : fp8kv_cli_unknown_choice("sweep", "--codec: no built-in codec", "",
                                             a->value[OPT_CODEC], codecs, 2);
    if (!fp8kv_subject_implements(enc, p))
        return fp8kv_cli_usage_error("sweep", "--codec %s does not implement profile %s", enc->name,
                                     p->name);
    uint32_t *bounds = fp8kv_vectors_trust(k->dir) == 0 ? fp8kv_load_boundaries(k->dir, p) : NULL;
    if (!bounds)
        return fp8kv_cli_input_error("sweep");
    struct fp8kv_sweep_options opt = {.threads = k->threads, .progress = stderr, .shard = k->shard};
    struct fp8kv_check c;
    rc = fp8kv_sweep(p, (enum fp8kv_nan_check)k->check, (enum fp8kv_domain)domain, bounds, enc,
                     fp8kv_profile_cfg(p), &opt, &c);
    free(bounds);
    if (rc != 0)
        return fp8kv_cli_subject_error("sweep", rc);
    struct sweep_outcome o = {
        .codec = enc->name, .target = targets[target], .p = p, .domain = domain, .check = k->check};
    if (fp8kv_results_add(&o.v.results, &c) != 0)
        return fp8kv_cli_input_error("sweep");
    o.v.conformant = c.passed;
    rc = present_sweep(&o, k->json, k->shard);
    fp8kv_results_free(&o.v.results);
    return rc;
}

static int sweep_plugin(const struct fp8kv_cli_args *a, const struct sweep_common *k)
{
    for (int o = OPT_PROFILE; o <= OPT_DOMAIN; o++)
        if (a->value[o])
            return fp8kv_cli_usage_error("sweep",
                                         "--%s is for --codec; a plugin's profile comes from "
                                         "its descriptor and --inf",
                                         options[o].name);
    enum fp8kv_scale_model model = FP8KV_DEFAULT_MODEL;
    int inf = FP8KV_DEFAULT_INF;
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
    if (!fp8kv_plugin_profile(pl, (enum fp8kv_inf_policy)inf)) {
        const struct fp8kv_plugin_info *info = fp8kv_plugin_info(pl);
        rc = fp8kv_cli_usage_error("sweep",
                                   "plugin %s: no profile of %s with overflow %s and "
                                   "--inf %s",
                                   info->name, fp8kv_formats[info->format].name,
                                   fp8kv_overflow_names[info->overflow], fp8kv_inf_names[inf]);
        fp8kv_plugin_close(pl);
        return rc;
    }
    struct sweep_outcome out = {.model = model, .check = k->check};
    struct fp8kv_plugin_sweep_options o = {
        .vectors_dir = k->dir,
        .model = (enum fp8kv_scale_model)model,
        .check = (enum fp8kv_nan_check)k->check,
        .inf = (enum fp8kv_inf_policy)inf,
        .sweep = {.threads = threads, .progress = stderr, .shard = k->shard}};
    rc = fp8kv_plugin_sweep(pl, &o, &out.v);
    fp8kv_plugin_close(pl);
    out.p = out.v.profile;
    if (rc == 0) {
        rc = present_sweep(&out, k->json, k->shard);
        fp8kv_results_free(&out.v.results);
        return rc;
    }
    print_checks(&out.v.results); /* what was judged before it failed */
    json_t *extra =
        json_pack("{s:s, s:s, s:s, s:s}", "profile", out.p->name, "model", fp8kv_model_names[model],
                  "nan_check", fp8kv_nan_check_names[k->check], "error", fp8kv_last_error());
    json_t *doc =
        fp8kv_cli_verdict_shard_doc("sweep", "subject failed", out.v.results.items,
                                    out.v.results.count, extra, k->shard, sweep_identity(&out));
    fp8kv_results_free(&out.v.results);
    char message[1024]; /* the crash, named after the JSON is written */
    snprintf(message, sizeof message, "%s", fp8kv_last_error());
    fp8kv_cli_json_write("sweep", k->json, doc);
    fp8kv_fail("%s", message);
    return fp8kv_cli_subject_error("sweep", rc);
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
    struct sweep_common k = {.check = FP8KV_DEFAULT_NAN_CHECK,
                             .dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]),
                             .json = a.value[OPT_JSON]};
    if (a.value[OPT_NAN_CHECK] &&
        (k.check = fp8kv_cli_parse_choice("sweep", "nan-check", a.value[OPT_NAN_CHECK],
                                          fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_THREADS] &&
        fp8kv_cli_parse_threads("sweep", a.value[OPT_THREADS], &k.threads) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_SHARD] && fp8kv_cli_parse_shard("sweep", a.value[OPT_SHARD], &k.shard) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_SHARD] && a.value[OPT_DEVICE] && strcmp(a.value[OPT_DEVICE], "all") == 0)
        return fp8kv_cli_usage_error("sweep", "--shard and --device all: give one (--device all "
                                              "cuts the sweep into one shard per GPU itself)");
    if (a.value[OPT_ISA] && (rc = fp8kv_cli_use_isa("sweep", a.value[OPT_ISA])) != 0)
        return rc;
    if (a.value[OPT_WORKER_MEMORY] &&
        (rc = fp8kv_cli_use_worker_memory("sweep", a.value[OPT_WORKER_MEMORY])) != 0)
        return rc;
    if ((rc = fp8kv_cli_json_begin("sweep", k.json)) != 0)
        return rc;
    if (a.value[OPT_CODEC]) {
        for (int o = OPT_PLUGIN; o <= OPT_WORKER_MEMORY; o++)
            if (a.value[o])
                return fp8kv_cli_usage_error("sweep", "--%s is for --plugin", options[o].name);
        return sweep_codec(&a, &k);
    }
    const int codec_only[] = {OPT_TARGET, OPT_DEVICE, OPT_ISA};
    for (size_t i = 0; i < sizeof codec_only / sizeof codec_only[0]; i++)
        if (a.value[codec_only[i]])
            return fp8kv_cli_usage_error("sweep",
                                         "--%s is for --codec (a plugin runs its own code)",
                                         options[codec_only[i]].name);
    return sweep_plugin(&a, &k);
}

/* ---- the merge of a sweep's shards ----------------------------------------------------------- */

/* The index of name in names (count), or -1 after a message naming path and key. */
static int name_in(const char *path, json_t *of, const char *key, const char *const *names,
                   int count)
{
    const char *name = json_string_value(json_object_get(of, key));
    for (int k = 0; name && k < count; k++)
        if (strcmp(name, names[k]) == 0)
            return k;
    return fp8kv_fail("%s: shard.of.%s: not one of this fp8kv's names", path, key), -1;
}

int fp8kv_cli_sweep_merge(json_t *const *docs, char *const *paths, int n, const char *json_path)
{
    json_t *of = json_object_get(json_object_get(docs[0], "shard"), "of");
    struct sweep_outcome o = {.codec = json_string_value(json_object_get(of, "codec")),
                              .target = json_string_value(json_object_get(of, "target"))};
    const char *profile = json_string_value(json_object_get(of, "profile"));
    int rc = (o.p = profile ? fp8kv_profile_by_name(profile) : NULL) ? 0 : -1;
    if (rc != 0)
        fp8kv_fail("%s: shard.of.profile: not a profile of this fp8kv", paths[0]);
    if (rc == 0 && (o.check = name_in(paths[0], of, "nan_check", fp8kv_nan_check_names,
                                      FP8KV_NAN_CHECK_COUNT)) < 0)
        rc = -1;
    if (rc == 0 && o.codec &&
        (o.domain = name_in(paths[0], of, "domain", fp8kv_sweep_domain_names, FP8KV_DOMAIN_COUNT)) <
            0)
        rc = -1;
    if (rc == 0 && !o.codec &&
        (o.model = name_in(paths[0], of, "model", fp8kv_model_names, FP8KV_MODEL_COUNT)) < 0)
        rc = -1;
    for (int s = 0; s < n && rc == 0; s++) {
        json_t *checks = json_object_get(docs[s], "checks");
        if (!json_is_array(checks))
            rc = fp8kv_fail("%s: checks: not a list", paths[s]);
        for (size_t i = 0; rc == 0 && i < json_array_size(checks); i++) {
            struct fp8kv_check c;
            if ((rc = fp8kv_check_parse_json(paths[s], i, json_array_get(checks, i), &c)) != 0)
                break;
            struct fp8kv_check *into = NULL; /* the same check of the shards before */
            for (size_t j = 0; s > 0 && j < o.v.results.count && !into; j++)
                if (strcmp(o.v.results.items[j].name, c.name) == 0)
                    into = &o.v.results.items[j];
            if (s == 0)
                rc = fp8kv_results_add(&o.v.results, &c);
            else if (into)
                fp8kv_check_merge_shard(into, &c);
            else
                rc = fp8kv_fail("%s: check %s: not in shard 0 (%s)", paths[s], c.name, paths[0]);
        }
    }
    if (rc != 0) {
        fp8kv_results_free(&o.v.results);
        return fp8kv_cli_input_error("merge");
    }
    if (o.codec) {
        o.v.conformant = o.v.results.count == 1 && o.v.results.items[0].passed;
    } else {
        fp8kv_plugin_verdict_tally(&o.v, (enum fp8kv_scale_model)o.model);
        o.v.conformant = fp8kv_results_passed(&o.v.results);
    }
    const struct fp8kv_shard whole = {0, 0};
    rc = o.codec && o.v.results.count != 1
             ? (fp8kv_fail("%s: a --codec sweep has one check", paths[0]),
                fp8kv_cli_input_error("merge"))
             : present_sweep(&o, json_path, whole);
    fp8kv_results_free(&o.v.results);
    return rc;
}
