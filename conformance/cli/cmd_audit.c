/* cmd_audit.c — `fp8kv audit`: the exhaustive diff of a codec change (fp8kv/audit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/audit.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin_sweep.h"

static const char audit_help[] =
    "usage: fp8kv audit --baseline A --candidate B [--profile P] [--inf clamp|nan] [--model M]\n"
    "                   [--nan-check class|strict] [--threads N] [--timeout S] [--vectors DIR]\n"
    "                   [--json FILE]\n"
    "\n"
    "Runs both codecs over every f32 (2^32), f16 and bf16 input at scale 1 and over the\n"
    "store-with-scale pairs of the golden vectors, and reports every input whose byte changed:\n"
    "how many, per input class, the first examples, and for each whether the oracle agrees\n"
    "with the baseline, the candidate, both (NaN codes under --nan-check class) or neither.\n"
    "A and B are each a built-in codec name (bits | frexp) or the path of a codec plugin\n"
    "(fp8kv/plugin.h; a path with a '/' or ending in .so). The profile is a plugin's own\n"
    "(format and overflow, with --inf); for two built-ins it is --profile. The pairs are judged\n"
    "under --model; built-in codecs compute that model, plugins their own.\n"
    "The last line:\n"
    "  audit <A> -> <B> <profile>: inputs=<N> changed=<C> baseline_right=.. candidate_right=..\n"
    "        both_right=.. neither_right=.. verdict=identical|improved|regressed\n"
    "\n"
    "  --profile P     for two built-ins (default e4m3fn_satfinite); else must match the plugin\n"
    "  --inf P         what +-Inf gives under satfinite, for plugins: clamp (default) or nan\n"
    "  --model M       f32_div (default), f32_mul_recip or f16_div\n"
    "  --nan-check C   class or strict (the byte; default)\n"
    "  --threads N     threads, and workers per plugin (default: all cores)\n"
    "  --timeout S     seconds a plugin call may take (default 30)\n"
    "  --vectors DIR   the vector directory (default: $FP8KV_VECTORS, ./vectors, or the\n"
    "                  installed set)\n"
    "  --json FILE     also write the verdict as JSON (docs/json.md: one check per set, its\n"
    "                  mismatches the changed inputs); '-': the JSON to stdout, text to stderr\n"
    "exit: 0 identical or improved (the candidate is right wherever a byte changed),\n"
    "      1 regressed, 2 bad arguments, vectors or plugin, 4 a plugin crashed or hung\n";

enum {
    OPT_BASELINE,
    OPT_CANDIDATE,
    OPT_PROFILE,
    OPT_INF,
    OPT_MODEL,
    OPT_NAN_CHECK,
    OPT_THREADS,
    OPT_TIMEOUT,
    OPT_VECTORS,
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"baseline", 1},  {"candidate", 1}, {"profile", 1}, {"inf", 1},     {"model", 1},
    {"nan-check", 1}, {"threads", 1},   {"timeout", 1}, {"vectors", 1}, {"json", 1}};

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

/* Opens one side: 0, or an exit code after a message. */
static int open_side(const char *option, const char *arg, int threads, double timeout,
                     struct side *s)
{
    s->arg = arg;
    if (!is_plugin_path(arg)) {
        const struct fp8kv_subject *e =
            fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, arg, FP8KV_CAP_ENCODE);
        if (!e)
            return fp8kv_cli_usage_error("audit",
                                         "--%s: '%s' is neither a built-in codec (bits | frexp) "
                                         "nor a plugin path (with a '/' or ending in .so)",
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
    *out = p ? p : given ? given : fp8kv_profile_by_name("e4m3fn_satfinite");
    return 0;
}

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

/* The audit as a verdict document: one check per set (cases: its inputs, mismatches: the
 * changed ones, passed: the candidate is right wherever it changed) and the totals. */
static json_t *audit_json(const struct fp8kv_audit *au, const char *baseline, const char *candidate,
                          const struct fp8kv_profile *p, const char *verdict)
{
    struct fp8kv_check checks[FP8KV_DOMAIN_COUNT + 1];
    for (int k = 0; k < au->nsets; k++) {
        const struct fp8kv_audit_set *s = &au->sets[k];
        char name[48], subject[64];
        snprintf(name, sizeof name, "audit-%s", s->name);
        snprintf(subject, sizeof subject, "%.28s -> %.28s", baseline, candidate);
        fp8kv_check_init(&checks[k], name, subject, p->name, "changed bytes, oracle-judged");
        struct fp8kv_check *c = &checks[k];
        c->cases = s->inputs;
        c->mismatches = s->changed;
        c->has_classes = 1;
        memcpy(c->class_mismatches, s->changed_by_class, sizeof c->class_mismatches);
        for (int i = 0; i < s->examples && i < FP8KV_MAX_FAILURE_LINES; i++)
            snprintf(c->failures[c->failure_lines++], sizeof c->failures[0], "%s", s->example[i]);
        c->passed = s->baseline_right + s->neither_right == 0;
    }
    json_t *extra =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "baseline", baseline, "candidate",
                  candidate, "profile", p->name, "baseline_right", (json_int_t)au->baseline_right,
                  "candidate_right", (json_int_t)au->candidate_right, "both_right",
                  (json_int_t)au->both_right, "neither_right", (json_int_t)au->neither_right);
    return fp8kv_cli_verdict_doc("audit", verdict, checks, (size_t)au->nsets, extra);
}

int fp8kv_cmd_audit(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("audit", audit_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (!a.value[OPT_BASELINE] || !a.value[OPT_CANDIDATE])
        return fp8kv_cli_usage_error("audit", "--baseline and --candidate are both required");
    int inf = FP8KV_INF_CLAMP, check = FP8KV_NAN_CHECK_STRICT;
    enum fp8kv_scale_model model = FP8KV_MODEL_F32_DIV;
    int threads = 0;
    double timeout = 30.0;
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
    if (threads == 0)
        threads = fp8kv_sweep_default_threads();
    if ((rc = fp8kv_cli_json_begin("audit", a.value[OPT_JSON])) != 0)
        return rc;

    struct side sides[2] = {{0}, {0}};
    const struct fp8kv_profile *p = NULL;
    rc = open_side("baseline", a.value[OPT_BASELINE], threads, timeout, &sides[0]);
    if (rc == 0)
        rc = open_side("candidate", a.value[OPT_CANDIDATE], threads, timeout, &sides[1]);
    if (rc == 0)
        rc = pick_profile(&a, sides, inf, &p);
    if (rc == 0) {
        printf("audit: baseline %s (%s) vs candidate %s (%s), profile %s, scale model %s, "
               "nan check %s\n",
               sides[0].arg, sides[0].subject.name, sides[1].arg, sides[1].subject.name, p->name,
               fp8kv_model_names[model], fp8kv_nan_check_names[check]);
        struct fp8kv_sweep_options opt = {.threads = threads, .progress = stderr};
        struct fp8kv_audit au;
        int status = fp8kv_audit_codecs(fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]), p,
                                        (enum fp8kv_nan_check)check, (enum fp8kv_scale_model)model,
                                        &sides[0].subject, &sides[1].subject, &opt, &au);
        if (status != 0) {
            rc = fp8kv_cli_subject_error("audit", status);
        } else {
            print_audit(&au);
            const char *verdict = fp8kv_audit_verdict(&au);
            int same_name = strcmp(sides[0].subject.name, sides[1].subject.name) == 0;
            printf("audit %s -> %s %s: inputs=%llu changed=%llu baseline_right=%llu "
                   "candidate_right=%llu both_right=%llu neither_right=%llu verdict=%s\n",
                   same_name ? sides[0].arg : sides[0].subject.name,
                   same_name ? sides[1].arg : sides[1].subject.name, p->name,
                   (unsigned long long)au.inputs, (unsigned long long)au.changed,
                   (unsigned long long)au.baseline_right, (unsigned long long)au.candidate_right,
                   (unsigned long long)au.both_right, (unsigned long long)au.neither_right,
                   verdict);
            fprintf(stderr, "audit: %.2f s\n", au.seconds);
            rc = strcmp(verdict, "regressed") == 0 ? FP8KV_EXIT_NONCONFORMANT
                                                   : FP8KV_EXIT_CONFORMANT;
            if (fp8kv_cli_json_write("audit", a.value[OPT_JSON],
                                     audit_json(&au, sides[0].arg, sides[1].arg, p, verdict)) != 0)
                rc = FP8KV_EXIT_USAGE;
        }
    }
    fp8kv_plugin_close(sides[0].plugin);
    fp8kv_plugin_close(sides[1].plugin);
    return rc;
}
