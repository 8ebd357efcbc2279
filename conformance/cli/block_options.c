/* block_options.c — what the block-codec commands share (check-block, audit --block,
 * encode-block and decode-block): the format, rule and model options, the subject they name
 * (the CPU or GPU codec, or a plugin), counts and nvfp4 global scales. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/block_plugin_host.h"
#include "fp8kv/block_report.h"
#include "fp8kv/diag.h"

int fp8kv_cli_block_format(const char *cmd, const char *name, const struct fp8kv_block_format **out)
{
    const char *names[FP8KV_BLOCK_FORMAT_COUNT];
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        names[i] = fp8kv_block_formats[i].name;
    *out = fp8kv_block_format_by_name(name);
    if (*out)
        return 0;
    return fp8kv_cli_unknown_choice(cmd, "--format: unknown block format", "", name, names,
                                    FP8KV_BLOCK_FORMAT_COUNT);
}

int fp8kv_cli_block_rule(const char *cmd, const char *option, const struct fp8kv_block_format *f,
                         const char *name)
{
    const char *names[FP8KV_BLOCK_RULE_COUNT];
    const int n = fp8kv_block_rules_of(f, names);
    const int any = fp8kv_name_index(fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, name);
    if (any >= 0 && fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)any))
        return any;
    if (any >= 0) {
        char list[128];
        fp8kv_cli_list(names, n, "", ", ", list, sizeof list);
        fp8kv_cli_usage_error(cmd, "--%s %s is not a rule of %s (its rules: %s)", option, name,
                              f->name, list);
        return -1;
    }
    char what[64];
    snprintf(what, sizeof what, "--%s: unknown rule of %s", option, f->name);
    fp8kv_cli_unknown_choice(cmd, what, "", name, names, n);
    return -1;
}

int fp8kv_cli_block_model(const char *cmd, const char *option, const char *name)
{
    return fp8kv_cli_parse_named_choice(cmd, option, "model", name, fp8kv_block_model_names,
                                        FP8KV_BLOCK_MODEL_COUNT);
}

int fp8kv_cli_block_subject(const char *cmd, const struct fp8kv_cli_block_choice *c,
                            struct fp8kv_block_under_test *out, struct fp8kv_block_plugin **plugin)
{
    *plugin = NULL;
    if (c->plugin) {
        if (c->format || c->rule || c->model || c->target)
            return fp8kv_cli_usage_error(cmd, "--plugin takes format, rule and model from the "
                                              "plugin: drop --format/--rule/--model/--target");
        int rc = fp8kv_block_plugin_open(c->plugin, c->threads, c->timeout_s, plugin);
        if (rc != FP8KV_OK)
            return fp8kv_cli_subject_error(cmd, rc);
        const struct fp8kv_block_plugin_info *info = fp8kv_block_plugin_info(*plugin);
        fp8kv_block_select(fp8kv_block_plugin_subject(*plugin), info->format, info->rule,
                           info->model, c->threads, out); /* the one it claims */
        return 0;
    }
    if (!c->format)
        return fp8kv_cli_usage_error(cmd, "say which codec: --format F (or --plugin LIB.so)");
    const struct fp8kv_block_format *f;
    int rc = fp8kv_cli_block_format(cmd, c->format, &f);
    if (rc)
        return rc;
    int rule = (int)f->default_rule, model = FP8KV_BLOCK_DEFAULT_MODEL;
    const char *option = c->side ? c->side : "rule";
    if (c->rule && (rule = fp8kv_cli_block_rule(cmd, option, f, c->rule)) < 0)
        return FP8KV_EXIT_USAGE;
    if (c->model && (model = fp8kv_cli_block_model(cmd, c->side ? c->side : "model", c->model)) < 0)
        return FP8KV_EXIT_USAGE;
    static const char *const targets[] = {"cpu", "hip"};
    const int target = c->target ? fp8kv_cli_parse_choice(cmd, "target", c->target, targets, 2) : 0;
    if (target < 0)
        return FP8KV_EXIT_USAGE;
    if (target == 1) {
        rc = fp8kv_block_gpu(f, (enum fp8kv_block_rule)rule, (enum fp8kv_block_model)model,
                             c->device, out);
        if (rc != FP8KV_OK) {
            fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
            return FP8KV_EXIT_UNAVAILABLE;
        }
        return 0;
    }
    *out =
        fp8kv_block_cpu(f, (enum fp8kv_block_rule)rule, (enum fp8kv_block_model)model, c->threads);
    return 0;
}

int fp8kv_cli_parse_global_scale(const char *cmd, const char *text, float *G)
{
    uint32_t bits;
    if (fp8kv_cli_parse_value(FP8KV_DTYPE_F32, text, &bits) != 0)
        return fp8kv_cli_usage_error(cmd, "--global-scale %s: %s", text, fp8kv_last_error());
    memcpy(G, &bits, sizeof *G);
    if (!(*G > 0) || *G > 3.4028235e38f)
        return fp8kv_cli_usage_error(cmd, "--global-scale %s: G must be a finite f32 > 0", text);
    return 0;
}

int fp8kv_cli_parse_count(const char *cmd, const char *option, const char *text, int base,
                          unsigned long long min, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    *out = strtoull(text, &end, base);
    if (!isdigit((unsigned char)*text) || *end || errno || *out < min || *out > max) {
        fp8kv_cli_usage_error(cmd, "--%s %s: an unsigned integer %llu .. %llu", option, text, min,
                              max);
        return -1;
    }
    return 0;
}
