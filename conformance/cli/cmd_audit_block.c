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
    "                   [--timeout S] [--json FILE]\n"
    "\n"
    "Compares two block codecs of one format (MX, NVFP4: docs/blocks.md) on three seeded data\n"
    "sets: gaussian, outliers (1/64 of the values 10-100x) and kv (an attention K cache: 4 of\n"
    "128 channels 10-100x, heavy-tailed rows). For each: the blocks and elements whose codes\n"
    "differ, each side's NMSE against the f32 input (decoded exactly), and each side's clipped\n"
    "blocks (amax past (max_elem + half the step above it) times the block's scale: there\n"
    "saturation, not rounding, set its code). nvfp4's G is RN32(data set amax / (6 * 448)).\n"
    "A and B are each a rule of the format, optionally with its model (floor, rceil:f32,\n"
    "4over6:exact ...: the header codec, on --target), or the path of a block-codec plugin\n"
    "(fp8kv/block_plugin.h; a path with a '/' or ending in .so).\n"
    "  --format F     the format of two rule sides (a plugin says its own)\n"
    "  --blocks N     blocks per data set (default 4096)\n"
    "  --seed S       the data sets' seed (default 1)\n"
    "  --target T     cpu (default) or hip: where rule sides run\n"
    "  --device N     the GPU of --target hip (default 0)\n"
    "  --threads N    worker processes per plugin (default 1)\n"
    "  --timeout S    seconds a plugin call may take (default 30)\n"
    "  --json FILE    also write the table as JSON; '-': the JSON to stdout, the text to stderr\n"
    "Prints a table, one row per data set. exit: 0 (a comparison, no verdict), 2 bad arguments\n"
    "or plugin, 3 no GPU, 4 a plugin crashed or hung\n";

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
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"block", 0},  {"baseline", 1}, {"candidate", 1}, {"format", 1},  {"blocks", 1}, {"seed", 1},
    {"target", 1}, {"device", 1},   {"threads", 1},   {"timeout", 1}, {"json", 1}};

static int is_plugin_path(const char *arg)
{
    const size_t n = strlen(arg);
    return strchr(arg, '/') || (n > 3 && strcmp(arg + n - 3, ".so") == 0);
}

/* open_side: side text (a rule[:model] or a plugin path) as a subject. */
static int open_side(const char *cmd, const char *text, const char *format,
                     const struct fp8kv_cli_block_choice *base, struct fp8kv_block_subject *out,
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
    snprintf(label, size, "%s (%s %s %s)", text, out->name, fp8kv_block_rule_names[out->rule],
             fp8kv_block_model_names[out->model]);
    return 0;
}

/* table: the rows as JSON. */
static json_t *table_json(const char *labels[2], const struct fp8kv_block_format *f,
                          const struct fp8kv_block_audit_row *rows, uint64_t seed)
{
    json_t *doc = json_object(), *arr = json_array();
    json_object_set_new(doc, "command", json_string("audit --block"));
    json_object_set_new(doc, "format", json_string(f->name));
    json_object_set_new(doc, "baseline", json_string(labels[0]));
    json_object_set_new(doc, "candidate", json_string(labels[1]));
    json_object_set_new(doc, "seed", json_integer((json_int_t)seed));
    for (int d = 0; d < FP8KV_DATA_COUNT; d++) {
        const struct fp8kv_block_audit_row *r = &rows[d];
        json_t *o = json_object();
        json_object_set_new(o, "data", json_string(fp8kv_block_dataset_names[d]));
        json_object_set_new(o, "blocks", json_integer((json_int_t)r->blocks));
        json_object_set_new(o, "elements", json_integer((json_int_t)r->elements));
        json_object_set_new(o, "blocks_differ", json_integer((json_int_t)r->blocks_differ));
        json_object_set_new(o, "elements_differ", json_integer((json_int_t)r->elements_differ));
        json_object_set_new(o, "nmse_baseline", json_real(r->nmse[0]));
        json_object_set_new(o, "nmse_candidate", json_real(r->nmse[1]));
        json_object_set_new(o, "clipped_baseline", json_integer((json_int_t)r->clipped[0]));
        json_object_set_new(o, "clipped_candidate", json_integer((json_int_t)r->clipped[1]));
        json_object_set_new(o, "global_scale", json_real(r->G));
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "data_sets", arr);
    return doc;
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
    struct fp8kv_cli_block_choice base = {NULL, NULL, NULL, a.value[OPT_TARGET], NULL, 1, 30.0, 0};
    if (a.value[OPT_THREADS] && fp8kv_cli_parse_threads(cmd, a.value[OPT_THREADS], &base.threads))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_TIMEOUT] &&
        fp8kv_cli_parse_seconds(cmd, "--timeout", a.value[OPT_TIMEOUT], &base.timeout_s))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_DEVICE] && fp8kv_cli_parse_device(cmd, a.value[OPT_DEVICE], &base.device))
        return FP8KV_EXIT_USAGE;
    char *end;
    const unsigned long long nblocks =
        a.value[OPT_BLOCKS] ? strtoull(a.value[OPT_BLOCKS], &end, 10) : 4096;
    if (a.value[OPT_BLOCKS] &&
        (*a.value[OPT_BLOCKS] == 0 || *end || nblocks == 0 || nblocks > 10000000ull))
        return fp8kv_cli_usage_error(cmd, "--blocks %s: a count 1 .. 10000000",
                                     a.value[OPT_BLOCKS]);
    const unsigned long long seed = a.value[OPT_SEED] ? strtoull(a.value[OPT_SEED], &end, 0) : 1;
    if (a.value[OPT_SEED] && (*a.value[OPT_SEED] == 0 || *end))
        return fp8kv_cli_usage_error(cmd, "--seed %s: an unsigned integer", a.value[OPT_SEED]);
    const struct fp8kv_block_format *f = NULL;
    if (a.value[OPT_FORMAT] && (rc = fp8kv_cli_block_format(cmd, a.value[OPT_FORMAT], &f)) != 0)
        return rc;
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0)
        return rc;
    struct fp8kv_block_subject subjects[2];
    struct fp8kv_block_plugin *plugins[2] = {NULL, NULL};
    char labels[2][256];
    const char *texts[2] = {a.value[OPT_BASELINE], a.value[OPT_CANDIDATE]};
    for (int k = 0; k < 2 && rc == 0; k++)
        rc = open_side(cmd, texts[k], a.value[OPT_FORMAT], &base, &subjects[k], &plugins[k],
                       labels[k], sizeof labels[k]);
    if (rc == 0 && subjects[0].format != subjects[1].format)
        rc = fp8kv_cli_usage_error(cmd, "the sides are of two formats: %s and %s",
                                   subjects[0].format->name, subjects[1].format->name);
    struct fp8kv_block_audit_row rows[FP8KV_DATA_COUNT];
    const struct fp8kv_block_subject *side[2] = {&subjects[0], &subjects[1]};
    for (int d = 0; d < FP8KV_DATA_COUNT && rc == 0; d++) {
        const int status = fp8kv_block_audit_run(side, (enum fp8kv_block_dataset)d, seed,
                                                 (size_t)nblocks, &rows[d]);
        if (status != FP8KV_OK)
            rc = fp8kv_cli_subject_error(cmd, status);
    }
    if (rc == 0) {
        f = subjects[0].format;
        printf("audit --block %s: %s -> %s, %llu blocks per data set, seed %llu\n", f->name,
               labels[0], labels[1], nblocks, seed);
        printf("%-9s %13s %15s %13s %13s %10s %10s\n", "data", "blocks_differ", "elements_differ",
               "nmse_base", "nmse_cand", "clip_base", "clip_cand");
        for (int d = 0; d < FP8KV_DATA_COUNT; d++)
            printf("%-9s %13llu %15llu %13.6e %13.6e %9.4f%% %9.4f%%\n",
                   fp8kv_block_dataset_names[d], (unsigned long long)rows[d].blocks_differ,
                   (unsigned long long)rows[d].elements_differ, rows[d].nmse[0], rows[d].nmse[1],
                   100.0 * (double)rows[d].clipped[0] / (double)rows[d].blocks,
                   100.0 * (double)rows[d].clipped[1] / (double)rows[d].blocks);
        const char *lab[2] = {labels[0], labels[1]};
        rc = fp8kv_cli_json_write(cmd, a.value[OPT_JSON], table_json(lab, f, rows, seed));
    }
    fp8kv_block_plugin_close(plugins[0]);
    fp8kv_block_plugin_close(plugins[1]);
    return rc;
}
