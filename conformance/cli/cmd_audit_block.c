/* cmd_audit_block.c — `fp8kv audit --block`: two block codecs of one format compared on seeded
 * data sets (fp8kv/block_audit.h): differing blocks and elements, NMSE, clipped blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/block_audit.h"
#include "fp8kv/block_plugin_host.h"
#include "fp8kv/diag.h"

static const char audit_block_help[] =
    "usage: fp8kv audit --block --baseline A --candidate B [--format F] [--blocks N]\n"
    "                   [--seed S] [--target cpu|hip] [--device N] [--threads N]\n"
    "                   [--timeout S] [--worker-memory M] [--json FILE|-]\n"
    "\n"
    "Compares two block codecs of one format (MX, NVFP4: docs/blocks.md) on three seeded data\n"
    "sets of N blocks each (fp8kv/block_audit.h; docs/blocks.md says how they are drawn):\n"
    "  gaussian  N(0, 1) values (Box-Muller over splitmix64 uniforms)\n"
    "  outliers  the same, each value with probability 1/64 times 10^(1 + U(0,1)) (10-100x)\n"
    "  kv        an attention K cache: rows of 128 channels, up to 4 channels 10-100x the\n"
    "            others, each row scaled by |t_4| (Student t, 4 degrees of freedom), >= 0.25\n"
    "Each set's splitmix64 state starts at S xor (0x9E3779B97F4A7C15 * (set + 1)), set 0, 1, 2\n"
    "in the order above: the same S, the same data sets. nvfp4's G is RN32(set amax / 2688)\n"
    "(6 * 448: the largest block scale maps the set's amax to e2m1's 6). No oracle judges\n"
    "here: it is a comparison.\n"
    "A and B are each a rule of the format, optionally with its model (floor, rceil:f32,\n"
    "4over6:exact ...: the header codec, on --target), or the path of a block-codec plugin\n"
    "(fp8kv/block_plugin.h; a path with a '/' or ending in .so).\n"
    "  --format F     the format of two rule sides (a plugin says its own)\n"
    "  --blocks N     blocks per data set, 1 .. 10000000 (default 4096)\n"
    "  --seed S       the data sets' seed (default 1)\n"
    "  --target T     cpu (default) or hip: where rule sides run\n"
    "  --device N     the GPU of --target hip (default 0)\n"
    "  --threads N    worker processes per plugin (default 1)\n"
    "  --timeout S    seconds a plugin call may take (default 30)\n"
    "  --worker-memory M\n"
    "                 the memory a plugin worker may hold (bytes, or with K, M or G; 0: none;\n"
    "                 default $FP8KV_WORKER_MEMORY, else half the machine's)\n"
    "  --json FILE    also write the table as JSON (docs/json.md); '-': the JSON to stdout, the\n"
    "                 text to stderr\n"
    "Prints one row per data set:\n"
    "  blocks_differ    blocks whose scale code or any element code differs between A and B\n"
    "  elements_differ  element positions whose codes differ (whatever the two scales)\n"
    "  nmse_base/_cand  each side's sum over the set of (y - x)^2 / sum of x^2: x the f32\n"
    "                   input, y = element value * decoded scale (2^X, or s * G), computed\n"
    "                   exactly (not rounded to f32 as a decoder does)\n"
    "  clip_base/_cand  each side's clipped blocks, in % of the set's blocks: those whose amax\n"
    "                   exceeds (max_elem + half the element step at max_elem) * decoded scale,\n"
    "                   so saturation, not rounding, set the largest element's code\n"
    "exit: 0 (a comparison, no verdict), 2 bad arguments or plugin, 3 no GPU, 4 a plugin\n"
    "crashed or hung (the harness is intact; with --json: verdict 'subject failed')\n";

enum {
    OPT_BLOCK,
    OPT_BASELINE,
    OPT_CANDIDATE,
    OPT_FORMAT,
    OPT_BLOCKS,
    OPT_SEED,
    OPT_TARGET,
    OPT_DEVICE,
    OPT_THREADS,
    OPT_TIMEOUT,
    OPT_WORKER_MEMORY,
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"block", 0},   {"baseline", 1}, {"candidate", 1},     {"format", 1},
    {"blocks", 1},  {"seed", 1},     {"target", 1},        {"device", 1},
    {"threads", 1}, {"timeout", 1},  {"worker-memory", 1}, {"json", 1}};

static int is_plugin_path(const char *arg)
{
    const size_t n = strlen(arg);
    return strchr(arg, '/') || (n > 3 && strcmp(arg + n - 3, ".so") == 0);
}

/* open_side: side text (a rule[:model] or a plugin path) as a subject. */
static int open_side(const char *cmd, const char *text, const char *format,
                     const struct fp8kv_cli_block_choice *base, struct fp8kv_block_under_test *out,
                     struct fp8kv_block_plugin **plugin, char *label, size_t size)
{
    struct fp8kv_cli_block_choice c = *base;
    char rule[32] = "";
    if (is_plugin_path(text)) {
        c.plugin = text;
    } else {
        snprintf(rule, sizeof rule, "%s", text);
        char *colon = strchr(rule, ':');
        if (colon)
            *colon = 0;
        c.format = format;
        c.rule = rule;
        c.model = colon ? colon + 1 : NULL;
        if (!format)
            return fp8kv_cli_usage_error(cmd, "--format is needed for the rule side '%s'", text);
    }
    const int rc = fp8kv_cli_block_subject(cmd, &c, out, plugin);
    if (rc)
        return rc;
    if (format && c.plugin && strcmp(out->format->name, format) != 0)
        return fp8kv_cli_usage_error(cmd, "plugin %s is %s, not --format %s", text,
                                     out->format->name, format);
    snprintf(label, size, "%s (%s %s %s)", text, out->subject->name,
             fp8kv_block_rule_names[out->rule], fp8kv_block_model_names[out->model]);
    return 0;
}

/* audit_doc: the verdict document (docs/json.md) of the first nrows rows: one check per data
 * set (cases: its elements, mismatches: the element codes that differ; never gated), verdict
 * "identical" or "changed" (or the caller's, e.g. "subject failed"). */
static json_t *audit_doc(const char *verdict, const char *labels[2],
                         const struct fp8kv_block_under_test *side[2],
                         const struct fp8kv_block_format *f,
                         const struct fp8kv_block_audit_row *rows, int nrows, uint64_t seed,
                         uint64_t nblocks)
{
    struct fp8kv_check *checks = calloc(FP8KV_DATA_COUNT, sizeof *checks);
    if (!checks)
        return NULL;
    int changed = 0;
    for (int d = 0; d < nrows; d++) {
        char name[48], detail[160];
        snprintf(name, sizeof name, "audit-block-%s", fp8kv_block_dataset_names[d]);
        snprintf(detail, sizeof detail, "%s, %llu blocks, seed %llu; %s -> %s",
                 fp8kv_block_dataset_names[d], (unsigned long long)rows[d].blocks,
                 (unsigned long long)seed, side[0]->subject->name, side[1]->subject->name);
        fp8kv_check_init(&checks[d], name, side[1]->subject->name, f->name, detail);
        checks[d].cases = rows[d].elements;
        checks[d].mismatches = rows[d].elements_differ;
        checks[d].gated = 0; /* a comparison: no check fails the run */
        checks[d].passed = rows[d].blocks_differ == 0;
        changed |= rows[d].blocks_differ != 0;
    }
    json_t *extra = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "format", f->name, "baseline",
                              labels[0], "candidate", labels[1], "baseline_subject",
                              side[0]->subject->name, "candidate_subject", side[1]->subject->name,
                              "seed", (json_int_t)seed, "blocks", (json_int_t)nblocks);
    json_t *doc = fp8kv_cli_verdict_doc("audit --block",
                                        verdict   ? verdict
                                        : changed ? "changed"
                                                  : "identical",
                                        checks, (size_t)nrows, extra);
    free(checks);
    json_t *list = json_object_get(doc, "checks");
    for (int d = 0; d < nrows && list; d++) { /* the table's columns, in each data set's check */
        const struct fp8kv_block_audit_row *r = &rows[d];
        json_t *o = json_array_get(list, (size_t)d);
        json_object_set_new(o, "data", json_string(fp8kv_block_dataset_names[d]));
        json_object_set_new(o, "blocks", json_integer((json_int_t)r->blocks));
        json_object_set_new(o, "blocks_differ", json_integer((json_int_t)r->blocks_differ));
        json_object_set_new(o, "elements_differ", json_integer((json_int_t)r->elements_differ));
        json_object_set_new(o, "nmse_baseline", json_real(r->nmse[0]));
        json_object_set_new(o, "nmse_candidate", json_real(r->nmse[1]));
        json_object_set_new(o, "clipped_baseline", json_integer((json_int_t)r->clipped[0]));
        json_object_set_new(o, "clipped_candidate", json_integer((json_int_t)r->clipped[1]));
        json_object_set_new(o, "global_scale", json_real(r->G));
    }
    return doc;
}

static void print_rows(const struct fp8kv_block_audit_row *rows, int nrows)
{
    printf("%-9s %13s %15s %13s %13s %10s %10s\n", "data", "blocks_differ", "elements_differ",
           "nmse_base", "nmse_cand", "clip_base", "clip_cand");
    for (int d = 0; d < nrows; d++)
        printf("%-9s %13llu %15llu %13.6e %13.6e %9.4f%% %9.4f%%\n", fp8kv_block_dataset_names[d],
               (unsigned long long)rows[d].blocks_differ,
               (unsigned long long)rows[d].elements_differ, rows[d].nmse[0], rows[d].nmse[1],
               100.0 * (double)rows[d].clipped[0] / (double)rows[d].blocks,
               100.0 * (double)rows[d].clipped[1] / (double)rows[d].blocks);
}

int fp8kv_cli_audit_block(int argc, char **argv)
{
    const char *cmd = "audit";
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin(cmd, audit_block_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (!a.value[OPT_BASELINE] || !a.value[OPT_CANDIDATE])
        return fp8kv_cli_usage_error(cmd, "--baseline and --candidate are both required");
    struct fp8kv_cli_block_choice base = {
        .target = a.value[OPT_TARGET], .threads = 1, .timeout_s = 30.0};
    if (a.value[OPT_THREADS] && fp8kv_cli_parse_threads(cmd, a.value[OPT_THREADS], &base.threads))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_TIMEOUT] &&
        fp8kv_cli_parse_seconds(cmd, "--timeout", a.value[OPT_TIMEOUT], &base.timeout_s))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_WORKER_MEMORY] && fp8kv_cli_use_worker_memory(cmd, a.value[OPT_WORKER_MEMORY]))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_DEVICE] && fp8kv_cli_parse_device(cmd, a.value[OPT_DEVICE], &base.device))
        return FP8KV_EXIT_USAGE;
    unsigned long long nblocks = 4096, seed = 1;
    if (a.value[OPT_BLOCKS] &&
        fp8kv_cli_parse_count(cmd, "blocks", a.value[OPT_BLOCKS], 10, 1, 10000000ull, &nblocks))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_SEED] &&
        fp8kv_cli_parse_count(cmd, "seed", a.value[OPT_SEED], 0, 0, ~0ull, &seed))
        return FP8KV_EXIT_USAGE;
    const struct fp8kv_block_format *f = NULL;
    if (a.value[OPT_FORMAT] && (rc = fp8kv_cli_block_format(cmd, a.value[OPT_FORMAT], &f)) != 0)
        return rc;
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0)
        return rc;
    struct fp8kv_block_under_test subjects[2];
    struct fp8kv_block_plugin *plugins[2] = {NULL, NULL};
    char labels[2][256];
    const char *texts[2] = {a.value[OPT_BASELINE], a.value[OPT_CANDIDATE]};
    static const char *const side_options[2] = {"baseline", "candidate"};
    for (int k = 0; k < 2 && rc == 0; k++) {
        base.side = side_options[k];
        rc = open_side(cmd, texts[k], a.value[OPT_FORMAT], &base, &subjects[k], &plugins[k],
                       labels[k], sizeof labels[k]);
    }
    if (rc == 0 && subjects[0].format != subjects[1].format)
        rc = fp8kv_cli_usage_error(cmd, "the sides are of two formats: %s and %s",
                                   subjects[0].format->name, subjects[1].format->name);
    struct fp8kv_block_audit_row rows[FP8KV_DATA_COUNT];
    const struct fp8kv_block_under_test *side[2] = {&subjects[0], &subjects[1]};
    const char *lab[2] = {labels[0], labels[1]};
    int nrows = 0, status = FP8KV_OK;
    if (rc == 0) {
        f = subjects[0].format;
        printf("audit --block %s: %s -> %s, %llu blocks per data set, seed %llu\n", f->name,
               labels[0], labels[1], nblocks, seed);
        for (; nrows < FP8KV_DATA_COUNT && status == FP8KV_OK; nrows++)
            status = fp8kv_block_audit_run(side, (enum fp8kv_block_dataset)nrows, seed,
                                           (size_t)nblocks, &rows[nrows]);
        if (status != FP8KV_OK)
            nrows--; /* the row that failed */
        print_rows(rows, nrows);
    }
    if (rc == 0 && status == FP8KV_ERR_SUBJECT && a.value[OPT_JSON]) { /* the rows before it */
        char message[1024];
        snprintf(message, sizeof message, "%s", fp8kv_last_error());
        json_t *doc = audit_doc("subject failed", lab, side, f, rows, nrows, seed, nblocks);
        json_object_set_new(doc, "error", json_string(message));
        fp8kv_cli_json_write(cmd, a.value[OPT_JSON], doc);
        fp8kv_fail("%s", message);
    }
    if (rc == 0 && status != FP8KV_OK)
        rc = fp8kv_cli_subject_error(cmd, status);
    else if (rc == 0)
        rc = fp8kv_cli_json_write(cmd, a.value[OPT_JSON],
                                  audit_doc(NULL, lab, side, f, rows, nrows, seed, nblocks));
    fp8kv_block_plugin_close(plugins[0]);
    fp8kv_block_plugin_close(plugins[1]);
    return rc;
}
