/* cmd_audit.c — `fp8kv audit`: the exhaustive diff of a codec change (fp8kv/audit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/audit.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin_sweep.h"
#include "fp8kv/run.h"
#include "report/model.h"

/* --device all merges this command's shards only */
static const struct fp8kv_cli_merger audit_merger[] = {{"audit", fp8kv_cli_audit_merge},
                                                       {NULL, NULL}};

static const char audit_help[] =
    "usage: fp8kv audit --baseline A --candidate B [--profile P] [--inf {satfinite_infs}] "
    "[--model M]\n"
    "                   [--nan-check {nan_checks}] [--threads N] [--timeout S] [--vectors DIR]\n"
    "                   [--worker-memory M] [--target cpu|hip] [--device N|all] [--shard i/N] "
    "[--json FILE]\n"
    "\n"
    "Runs both codecs over every f32 (2^32), f16 and bf16 input at scale 1 and over the\n"
    "store-with-scale pairs of the golden vectors, and reports every input whose byte changed:\n"
    "how many, per input class, the first examples, and for each whether the oracle agrees\n"
    "with the baseline, the candidate, both (NaN codes under --nan-check class) or neither.\n"
    "A and B are each a built-in codec name (bits | frexp) or the path of a codec plugin\n"
    "(fp8kv/plugin.h; a path with a '/' or ending in .so). The profile is a plugin's own\n"
    "(format and overflow, with --inf); for two built-ins it is --profile. The pairs are judged\n"
    "under --model; built-in codecs compute that model, plugins their own. With --target hip the\n"
    "built-in names are the GPU's device codecs (bits, frexp, ptx-cvt-satfinite, ...).\n"
    "The last line:\n"
    "  audit <A> -> <B> <profile>: inputs=<N> changed=<C> baseline_right=.. candidate_right=..\n"
    "        both_right=.. neither_right=.. verdict=identical|improved|regressed\n"
    "\n"
    "  --profile P     for two built-ins (default {default_profile}); else must match the plugin\n"
    "  --inf P         what +-Inf gives under satfinite, for plugins: {satfinite_infs:or_default}\n"
    "  --model M       {kernel_models:or_default}\n"
    "  --nan-check C   {nan_checks:notes_default}\n"
    "  --threads N     threads, and workers per plugin (default: all cores)\n"
    "  --timeout S     seconds a plugin call may take (default 30)\n"
    "  --worker-memory M\n"
    "                  the memory a plugin worker may hold (bytes, or with K, M or G; 0: none;\n"
    "                  default $FP8KV_WORKER_MEMORY, else half the machine's)\n"
    "  --target T      where the built-in codecs run: cpu (default) or hip (a GPU "
    "build)\n" FP8KV_CLI_SHARD_HELP FP8KV_CLI_DEVICE_HELP
    "  --vectors DIR   the vector directory (default: $FP8KV_VECTORS, ./vectors, or the\n"
    "                  installed set)\n"
    "  --json FILE     also write the verdict as JSON (docs/json.md: one check per set, its\n"
    "                  mismatches the changed inputs); '-': the JSON to stdout, text to stderr\n"
    "Block codecs (MX, NVFP4): fp8kv audit --block --help.\n"
    "exit: 0 identical or improved (the candidate is right wherever a byte changed),\n"
    "      1 regressed, 2 bad arguments, vectors or plugin, 3 no GPU (--target hip), 4 a plugin\n"
    "      (or the GPU) failed\n";

enum {
    OPT_BASELINE,
    OPT_CANDIDATE,
    OPT_PROFILE,
    OPT_INF,
    OPT_MODEL,
    OPT_NAN_CHECK,
    OPT_THREADS,
    OPT_TIMEOUT,
    OPT_WORKER_MEMORY,
    OPT_VECTORS,
    OPT_JSON,
    OPT_TARGET,
    OPT_DEVICE,
    OPT_SHARD,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"baseline", 1},  {"candidate", 1}, {"profile", 1}, {"inf", 1},           {"model", 1},
    {"nan-check", 1}, {"threads", 1},   {"timeout", 1}, {"worker-memory", 1}, {"vectors", 1},
    {"json", 1},      {"target", 1},    {"device", 1},  {"shard", 1}};

/* One side of the audit: a built-in codec or a plugin. */
struct side {
    const char *arg;
    struct fp8kv_plugin *plugin;
    struct fp8kv_subject subject;
};

static int is_plugin_path(const char *arg)
{
    size_t n = strlen(arg);
    return strchr(arg, '/') || (n > 3 && strcmp(arg + n - 3, ".so") == 0);
}

/* Opens one side: a plugin, or a codec of the target's table (count subjects): 0, or an exit
 * code after a message. */
static int open_side(const char *option, const char *arg, int threads, double timeout,
                     const struct fp8kv_subject *table, int count, struct side *s)
{
    s->arg = arg;
    if (!is_plugin_path(arg)) {
        const struct fp8kv_subject *e = fp8kv_subject_find(table, count, arg, FP8KV_CAP_ENCODE);
        if (!e)
            return fp8kv_cli_usage_error("audit",
                                         "--%s: '%s' is neither a built-in codec of the target "
                                         "(cpu: bits | frexp) nor a plugin path (with a '/' or "
                                         "ending in .so)",
                                         option, arg);
        s->subject = *e;
        return 0;
    }
    int rc = fp8kv_plugin_open(arg, threads, timeout, &s->plugin);
    if (rc != 0)
        return fp8kv_cli_subject_error("audit", rc);
    s->subject = fp8kv_plugin_subject(s->plugin);
    return 0;
}

/* The profile: the plugins' (they must agree) or --profile. 0, or an exit code. */
static int pick_profile(const struct fp8kv_cli_args *a, const struct side *sides, int inf,
                        const struct fp8kv_profile **out)
{
    const struct fp8kv_profile *given = NULL;
    if (a->value[OPT_PROFILE] && !(given = fp8kv_cli_profile("audit", a->value[OPT_PROFILE])))
        return FP8KV_EXIT_USAGE;
    const struct fp8kv_profile *p = NULL;
    for (int k = 0; k < 2; k++) {
        if (!sides[k].plugin)
            continue;
        const struct fp8kv_profile *mine =
            fp8kv_plugin_profile(sides[k].plugin, (enum fp8kv_inf_policy)inf);
        if (!mine)
            return fp8kv_cli_usage_error("audit",
                                         "plugin %s: no profile has its format, overflow "
                                         "and --inf",
                                         fp8kv_plugin_info(sides[k].plugin)->name);
        if (p && p != mine)
            return fp8kv_cli_usage_error("audit",
                                         "the plugins implement different profiles (%s, %s): "
                                         "an audit compares one semantics",
                                         p->name, mine->name);
        p = mine;
    }
    if (p && given && given != p)
        return fp8kv_cli_usage_error("audit", "--profile %s, but the plugin says %s", given->name,
                                     p->name);
    *out = p ? p : given ? given : fp8kv_default_profile();
    return 0;
}

/* What an audit judged, however it ran (whole, one shard, shards merged): all its text and its
 * JSON are made from this, by present_audit. */
struct audit_outcome {
    const char *baseline, *candidate;           /* the arguments */
    const char *baseline_name, *candidate_name; /* their subjects' names */
    const char *target;                         /* where the built-in codecs ran */
    const struct fp8kv_profile *p;
    int model, check;
    struct fp8kv_audit au;
};

static void print_audit(const struct fp8kv_audit *au)
{
    for (int k = 0; k < au->nsets; k++) {
        const struct fp8kv_audit_set *s = &au->sets[k];
        printf("%-20s inputs=%llu changed=%llu", s->name, (unsigned long long)s->inputs,
               (unsigned long long)s->changed);
        if (s->changed)
            printf("  baseline right %llu, candidate right %llu, both %llu, neither %llu",
                   (unsigned long long)s->baseline_right, (unsigned long long)s->candidate_right,
                   (unsigned long long)s->both_right, (unsigned long long)s->neither_right);
        printf("\n");
        for (int c = 0; c < FP8KV_CLASS_COUNT; c++)
            if (s->changed_by_class[c])
                printf("  %-16s %llu changed\n", fp8kv_class_names[c],
                       (unsigned long long)s->changed_by_class[c]);
        for (int i = 0; i < s->examples; i++)
            printf("  %s\n", s->example[i]);
    }
}

/* What makes two audits' shards shards of one audit (the "of" of the shard object). */
static json_t *audit_identity(const struct audit_outcome *o)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "command", "audit",
                     "baseline", o->baseline, "candidate", o->candidate, "baseline_subject",
                     o->baseline_name, "candidate_subject", o->candidate_name, "target", o->target,
                     "profile", o->p->name, "model", fp8kv_model_names[o->model], "nan_check",
                     fp8kv_nan_check_names[o->check]);
}

/* The audit as a verdict document: one check per set (cases: its inputs, mismatches: the
 * changed ones, passed: the candidate is right wherever it changed) and the totals; a shard's
 * also says who is right per set ("right"). */
static json_t *audit_json(const struct audit_outcome *o, const char *verdict,
                          struct fp8kv_shard shard)
{
    const struct fp8kv_audit *au = &o->au;
    struct fp8kv_check *checks = calloc(FP8KV_DOMAIN_COUNT + 1, sizeof *checks);
    if (!checks)
        return NULL;
    for (int k = 0; k < au->nsets; k++) {
        const struct fp8kv_audit_set *s = &au->sets[k];
        char name[48], subject[64];
        snprintf(name, sizeof name, "audit-%s", s->name);
        snprintf(subject, sizeof subject, "%.28s -> %.28s", o->baseline, o->candidate);
        fp8kv_check_init(&checks[k], name, subject, o->p->name, "changed bytes, oracle-judged");
        struct fp8kv_check *c = &checks[k];
        c->cases = s->inputs;
        c->mismatches = s->changed;
        c->has_classes = 1;
        memcpy(c->class_mismatches, s->changed_by_class, sizeof c->class_mismatches);
        for (int i = 0; i < s->examples && i < FP8KV_MAX_FAILURE_LINES; i++)
            snprintf(c->failures[c->failure_lines++], sizeof c->failures[0], "%s", s->example[i]);
        c->examples = s->kept;
        c->passed = s->baseline_right + s->neither_right == 0;
    }
    json_t *extra = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "baseline", o->baseline, "candidate", o->candidate,
        "profile", o->p->name, "baseline_right", (json_int_t)au->baseline_right, "candidate_right",
        (json_int_t)au->candidate_right, "both_right", (json_int_t)au->both_right, "neither_right",
        (json_int_t)au->neither_right);
    json_t *doc = fp8kv_cli_verdict_shard_doc("audit", verdict, checks, (size_t)au->nsets, extra,
                                              shard, audit_identity(o));
    json_t *list = json_object_get(doc, "checks");
    for (int k = 0; shard.count && k < au->nsets; k++) {
        const struct fp8kv_audit_set *s = &au->sets[k];
        json_object_set_new(json_array_get(list, (size_t)k), "right",
                            json_pack("{s:I, s:I, s:I, s:I}", "both", (json_int_t)s->both_right,
                                      "baseline", (json_int_t)s->baseline_right, "candidate",
                                      (json_int_t)s->candidate_right, "neither",
                                      (json_int_t)s->neither_right));
    }
    free(checks);
    return doc;
}

/* The text and the JSON (--json json, a shard's when shard.count) of a finished audit; its exit
 * code. */
static int present_audit(const struct audit_outcome *o, const char *json, struct fp8kv_shard shard)
{
    const struct fp8kv_audit *au = &o->au;
    printf("audit: baseline %s (%s) vs candidate %s (%s), profile %s, scale model %s, "
           "nan check %s\n",
           o->baseline, o->baseline_name, o->candidate, o->candidate_name, o->p->name,
           fp8kv_model_names[o->model], fp8kv_nan_check_names[o->check]);
    fp8kv_cli_print_shard(shard, (1u << FP8KV_DOMAIN_COUNT) - 1);
    print_audit(au);
    const char *verdict = fp8kv_audit_verdict(au);
    const int same_name = strcmp(o->baseline_name, o->candidate_name) == 0;
    printf("audit %s -> %s %s: inputs=%llu changed=%llu baseline_right=%llu "
           "candidate_right=%llu both_right=%llu neither_right=%llu verdict=%s\n",
           same_name ? o->baseline : o->baseline_name, same_name ? o->candidate : o->candidate_name,
           o->p->name, (unsigned long long)au->inputs, (unsigned long long)au->changed,
           (unsigned long long)au->baseline_right, (unsigned long long)au->candidate_right,
           (unsigned long long)au->both_right, (unsigned long long)au->neither_right, verdict);
    fprintf(stderr, "audit: %.2f s\n", au->seconds);
    const int rc =
        strcmp(verdict, "regressed") == 0 ? FP8KV_EXIT_NONCONFORMANT : FP8KV_EXIT_CONFORMANT;
    return fp8kv_cli_json_write("audit", json, audit_json(o, verdict, shard)) != 0
               ? FP8KV_EXIT_USAGE
               : rc;
}

int fp8kv_cmd_audit(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--block") == 0) /* block codecs: cmd_audit_block.c */
        return fp8kv_cli_audit_block(argc, argv);
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("audit", audit_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (!a.value[OPT_BASELINE] || !a.value[OPT_CANDIDATE])
        return fp8kv_cli_usage_error("audit", "--baseline and --candidate are both required");
    int inf = FP8KV_DEFAULT_INF, check = FP8KV_DEFAULT_NAN_CHECK;
    enum fp8kv_scale_model model = FP8KV_DEFAULT_MODEL;
    int threads = 0, target = 0, device = 0;
    double timeout = 30.0;
    struct fp8kv_shard shard = {0, 0};
    static const char *const targets[] = {"cpu", "hip"};
    if (a.value[OPT_INF] && (inf = fp8kv_cli_parse_choice("audit", "inf", a.value[OPT_INF],
                                                          fp8kv_inf_names, FP8KV_INF_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_MODEL] &&
        fp8kv_cli_parse_kernel_model("audit", a.value[OPT_MODEL], &model) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_NAN_CHECK] &&
        (check = fp8kv_cli_parse_choice("audit", "nan-check", a.value[OPT_NAN_CHECK],
                                        fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_THREADS] &&
        fp8kv_cli_parse_threads("audit", a.value[OPT_THREADS], &threads) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_TIMEOUT] &&
        fp8kv_cli_parse_seconds("audit", "timeout", a.value[OPT_TIMEOUT], &timeout) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_WORKER_MEMORY] &&
        fp8kv_cli_use_worker_memory("audit", a.value[OPT_WORKER_MEMORY]) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_TARGET] &&
        (target = fp8kv_cli_parse_choice("audit", "target", a.value[OPT_TARGET], targets, 2)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_DEVICE] && !target)
        return fp8kv_cli_usage_error("audit", "--device is for --target hip");
    if (a.value[OPT_DEVICE] &&
        fp8kv_cli_parse_device_or_all("audit", a.value[OPT_DEVICE], &device) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_SHARD] && fp8kv_cli_parse_shard("audit", a.value[OPT_SHARD], &shard) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_SHARD] && device == FP8KV_CLI_ALL_DEVICES)
        return fp8kv_cli_usage_error("audit", "--shard and --device all: give one (--device all "
                                              "cuts the audit into one shard per GPU itself)");
    if (threads == 0)
        threads = fp8kv_sweep_default_threads();
    if ((rc = fp8kv_cli_json_begin("audit", a.value[OPT_JSON])) != 0)
        return rc;
    if (device == FP8KV_CLI_ALL_DEVICES)
        return fp8kv_cli_on_every_device("audit", &a, options, OPT_COUNT, OPT_DEVICE, OPT_SHARD,
                                         OPT_JSON, a.value[OPT_JSON], audit_merger);

    struct fp8kv_target t = {.subjects = fp8kv_cpu_subjects,
                             .subject_count = fp8kv_cpu_subject_count};
    if (target && fp8kv_gpu_target_open(device, &t) != 0) {
        fprintf(stderr, "fp8kv audit: --target hip: %s\n", fp8kv_last_error());
        return FP8KV_EXIT_UNAVAILABLE;
    }
    if (target)
        fprintf(stderr, "fp8kv audit: %s\n", t.info.device);
    struct side sides[2] = {{0}, {0}};
    struct audit_outcome *o = calloc(1, sizeof *o);
    rc = o ? 0 : (fp8kv_fail("out of memory"), fp8kv_cli_input_error("audit"));
    if (rc == 0)
        rc = open_side("baseline", a.value[OPT_BASELINE], threads, timeout, t.subjects,
                       t.subject_count, &sides[0]);
    if (rc == 0)
        rc = open_side("candidate", a.value[OPT_CANDIDATE], threads, timeout, t.subjects,
                       t.subject_count, &sides[1]);
    if (rc == 0)
        rc = pick_profile(&a, sides, inf, &o->p);
    if (rc == 0) {
        *o = (struct audit_outcome){.baseline = sides[0].arg,
                                    .candidate = sides[1].arg,
                                    .baseline_name = sides[0].subject.name,
                                    .candidate_name = sides[1].subject.name,
                                    .target = targets[target],
                                    .p = o->p,
                                    .model = model,
                                    .check = check};
        struct fp8kv_sweep_options opt = {.threads = threads, .progress = stderr, .shard = shard};
        int status = fp8kv_audit_codecs(fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]), o->p,
                                        (enum fp8kv_nan_check)check, (enum fp8kv_scale_model)model,
                                        &sides[0].subject, &sides[1].subject, &opt, &o->au);
        rc = status != 0 ? fp8kv_cli_subject_error("audit", status)
                         : present_audit(o, a.value[OPT_JSON], shard);
    }
    free(o);
    fp8kv_plugin_close(sides[0].plugin);
    fp8kv_plugin_close(sides[1].plugin);
    return rc;
}

/* ---- the merge of an audit's shards ---------------------------------------------------------- */

/* A string of the shard object's `of` (path names the file), or NULL after a message. */
static const char *of_string(const char *path, json_t *of, const char *key)
{
    const char *v = json_string_value(json_object_get(of, key));
    if (!v)
        fp8kv_fail("%s: shard.of.%s: missing", path, key);
    return v;
}

/* The index of of[key] in names (count), or -1 after a message. */
static int of_choice(const char *path, json_t *of, const char *key, const char *const *names,
                     int count)
{
    const char *v = of_string(path, of, key);
    for (int k = 0; v && k < count; k++)
        if (strcmp(v, names[k]) == 0)
            return k;
    if (v)
        fp8kv_fail("%s: shard.of.%s: '%s' is not one of this fp8kv's", path, key, v);
    return -1;
}

/* The audit of one shard's document into *au: a set per check, its right counts. */
static int parse_audit(const char *path, json_t *doc, struct fp8kv_audit *au)
{
    json_t *checks = json_object_get(doc, "checks");
    memset(au, 0, sizeof *au);
    if (!json_is_array(checks) || json_array_size(checks) > FP8KV_DOMAIN_COUNT + 1)
        return fp8kv_fail("%s: checks: not a list of at most %d sets", path,
                          FP8KV_DOMAIN_COUNT + 1);
    struct fp8kv_check *c = malloc(sizeof *c);
    int rc = c ? 0 : fp8kv_fail("out of memory");
    for (size_t i = 0; rc == 0 && i < json_array_size(checks); i++) {
        json_t *o = json_array_get(checks, i), *right = json_object_get(o, "right");
        if ((rc = fp8kv_check_parse_json(path, i, o, c)) != 0)
            break;
        struct fp8kv_audit_set *s = &au->sets[au->nsets++];
        json_int_t r[4];
        if (strncmp(c->name, "audit-", 6) != 0 ||
            json_unpack(right, "{s:I, s:I, s:I, s:I}", "both", &r[0], "baseline", &r[1],
                        "candidate", &r[2], "neither", &r[3]) != 0) {
            rc = fp8kv_fail("%s: checks[%zu]: not an audit set with its \"right\" counts", path, i);
            break;
        }
        snprintf(s->name, sizeof s->name, "%s", c->name + 6);
        s->inputs = c->cases;
        s->changed = c->mismatches;
        memcpy(s->changed_by_class, c->class_mismatches, sizeof s->changed_by_class);
        s->both_right = (uint64_t)r[0];
        s->baseline_right = (uint64_t)r[1];
        s->candidate_right = (uint64_t)r[2];
        s->neither_right = (uint64_t)r[3];
        s->kept = c->examples;
        fp8kv_audit_set_lines(s);
        au->seconds = c->seconds > au->seconds ? c->seconds : au->seconds;
    }
    free(c);
    fp8kv_audit_totals(au);
    return rc;
}

int fp8kv_cli_audit_merge(json_t *const *docs, char *const *paths, int n, const char *json_path)
{
    json_t *of = json_object_get(json_object_get(docs[0], "shard"), "of");
    struct audit_outcome *o = calloc(1, sizeof *o);
    struct fp8kv_audit *next = malloc(sizeof *next);
    int rc = o && next ? 0 : fp8kv_fail("out of memory");
    const char *profile = rc == 0 ? of_string(paths[0], of, "profile") : NULL;
    if (rc == 0) {
        o->baseline = of_string(paths[0], of, "baseline");
        o->candidate = of_string(paths[0], of, "candidate");
        o->baseline_name = of_string(paths[0], of, "baseline_subject");
        o->candidate_name = of_string(paths[0], of, "candidate_subject");
        o->target = of_string(paths[0], of, "target");
        o->p = profile ? fp8kv_profile_by_name(profile) : NULL;
        o->model = of_choice(paths[0], of, "model", fp8kv_model_names, FP8KV_MODEL_COUNT);
        o->check =
            of_choice(paths[0], of, "nan_check", fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT);
        if (!o->baseline || !o->candidate || !o->baseline_name || !o->candidate_name ||
            !o->target || !profile || o->model < 0 || o->check < 0)
            rc = FP8KV_ERR;
        else if (!o->p)
            rc = fp8kv_fail("%s: shard.of.profile: '%s' is not a profile", paths[0], profile);
    }
    for (int s = 0; s < n && rc == 0; s++)
        if ((rc = parse_audit(paths[s], docs[s], s == 0 ? &o->au : next)) == 0 && s > 0)
            rc = fp8kv_audit_merge_shard(&o->au, next);
    const struct fp8kv_shard whole = {0, 0};
    rc = rc == 0 ? present_audit(o, json_path, whole) : fp8kv_cli_input_error("merge");
    free(o);
    free(next);
    return rc;
}
