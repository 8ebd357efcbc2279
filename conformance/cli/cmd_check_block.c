/* cmd_check_block.c — `fp8kv check-block`: a block codec (the CPU codec, the GPU codec or a
 * block-codec plugin) judged against the exact oracle (fp8kv/block_judge.h; builds with the
 * oracle); and the subject selection `fp8kv audit --block` shares (every build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/block_plugin_host.h"
#include "fp8kv/block_subject.h"
#include "fp8kv/diag.h"

/* ---- the subject, shared with audit ---- */

static int plugin_encode(void *ctx, int worker, const float *x, size_t nblocks, float G,
                         uint8_t *scales, uint8_t *elements)
{
    return fp8kv_block_plugin_encode(ctx, worker, x, nblocks, G, scales, elements);
}
static int plugin_decode(void *ctx, int worker, const uint8_t *scales, const uint8_t *elements,
                         size_t nblocks, float G, float *y)
{
    return fp8kv_block_plugin_decode(ctx, worker, scales, elements, nblocks, G, y);
}

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

int fp8kv_cli_block_subject(const char *cmd, const struct fp8kv_cli_block_choice *c,
                            struct fp8kv_block_subject *out, struct fp8kv_block_plugin **plugin)
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
        struct fp8kv_block_subject s = {
            info->name, info->format, info->rule,    info->model,
            c->threads, *plugin,      plugin_encode, info->has_decode ? plugin_decode : NULL,
            NULL};
        *out = s;
        return 0;
    }
    if (!c->format)
        return fp8kv_cli_usage_error(cmd, "say which codec: --format F (or --plugin LIB.so)");
    const struct fp8kv_block_format *f;
    int rc = fp8kv_cli_block_format(cmd, c->format, &f);
    if (rc)
        return rc;
    int rule = (int)f->default_rule, model = FP8KV_BLOCK_MODEL_EXACT;
    if (c->rule && (rule = fp8kv_cli_parse_choice(cmd, "--rule", c->rule, fp8kv_block_rule_names,
                                                  FP8KV_BLOCK_RULE_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule))
        return fp8kv_cli_usage_error(cmd, "--rule %s: %s takes %s", c->rule, f->name,
                                     f->scale_kind == FP8KV_SCALE_E8M0 ? "floor, rceil or even"
                                                                       : "rne, ceil or 4over6");
    if (c->model &&
        (model = fp8kv_cli_parse_choice(cmd, "--model", c->model, fp8kv_block_model_names,
                                        FP8KV_BLOCK_MODEL_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    static const char *const targets[] = {"cpu", "hip"};
    const int target =
        c->target ? fp8kv_cli_parse_choice(cmd, "--target", c->target, targets, 2) : 0;
    if (target < 0)
        return FP8KV_EXIT_USAGE;
    if (target == 1) {
        rc = fp8kv_block_subject_gpu(f, (enum fp8kv_block_rule)rule, (enum fp8kv_block_model)model,
                                     c->device, out);
        if (rc != FP8KV_OK) {
            fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
            return FP8KV_EXIT_UNAVAILABLE;
        }
        return 0;
    }
    *out = fp8kv_block_subject_cpu(f, (enum fp8kv_block_rule)rule, (enum fp8kv_block_model)model,
                                   c->threads);
    return 0;
}

int fp8kv_cli_parse_global_scale(const char *cmd, const char *text, float *G)
{
    uint32_t bits;
    if (fp8kv_cli_parse_value(FP8KV_DTYPE_F32, text, &bits) != 0)
        return fp8kv_cli_usage_error(cmd, "--global-scale %s: %s", text, fp8kv_last_error());
    memcpy(G, &bits, sizeof *G);
    if (!(*G > 0) || *G > 3.4028235e38f)
        return fp8kv_cli_usage_error(cmd, "--global-scale %s: G must be finite and > 0", text);
    return 0;
}

/* ---- check-block (the oracle's judge: builds with the oracle) ---- */

#ifdef FP8KV_HAVE_ORACLE
#include "fp8kv/block_judge.h"

static const char check_block_help[] =
    "usage: fp8kv check-block (--format F [--rule R] [--model M] [--target cpu|hip] |\n"
    "                          --plugin LIB.so) [--global-scale G] [--blocks N] [--seed S]\n"
    "                          [--sweep all|none|CODE[@G],...] [--threads N] [--timeout S]\n"
    "                          [--device N] [--vectors DIR]\n"
    "\n"
    "Judges a block codec (MX, NVFP4: docs/blocks.md) against the exact MPFR oracle:\n"
    "  vectors the golden vectors vectors/blocks/<format>/: every encode case, the decode tables\n"
    "  decode  every element code under every scale code, bit for bit (NaN matches any NaN)\n"
    "  sweep   every f32 input a block with a fixed scale code can hold, both signs, element\n"
    "          codes against the oracle's element boundaries (runs, as fp8kv sweep judges)\n"
    "  blocks  N seeded random and edge blocks against the oracle's whole-block encode\n"
    "  --format F        mxfp8_e4m3 | mxfp8_e5m2 | mxfp6_e3m2 | mxfp6_e2m3 | mxfp4 | nvfp4\n"
    "  --rule R          floor | rceil | even (MX), rne | ceil | 4over6 (nvfp4); default the\n"
    "                    format's (floor, rne)\n"
    "  --model M         exact | f32 (default exact)\n"
    "  --target T        cpu (the header codec fp8kv/block_codec.h; default) or hip (the same\n"
    "                    codec in GPU kernels; a GPU build)\n"
    "  --plugin LIB.so   a library exporting fp8kv_block_codec_v1 (fp8kv/block_plugin.h), run in\n"
    "                    worker processes; its descriptor says format, rule and model\n"
    "  --global-scale G  nvfp4's f32 decode scale for decode and blocks (default 1)\n"
    "  --blocks N        random and edge blocks (default 20000; 0: none)\n"
    "  --seed S          their seed (default 1)\n"
    "  --sweep LIST      the sweep's scale codes (hex), nvfp4 with @G: 'all' (default: MX 7f,\n"
    "                    01, c8; nvfp4 38@1, 3b@1.7), 'none', or e.g. '7f,80' or '38@0.5'\n"
    "  --threads N       threads (plugin: worker processes); default 2\n"
    "  --timeout S       seconds a plugin call may take (default 30)\n"
    "  --device N        the GPU of --target hip (default 0)\n"
    "  --vectors DIR     the vector directory (default: $FP8KV_VECTORS, ./vectors, installed)\n"
    "Prints per check the values checked and wrong, the first failures (input bits, expected\n"
    "and got codes), then\n"
    "  check-block <name>: <format> <rule> <model> checked=<N> wrong=<W> verdict=...\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments or plugin, 3 no GPU target,\n"
    "      4 the plugin crashed or hung\n";

enum {
    OPT_FORMAT,
    OPT_RULE,
    OPT_MODEL,
    OPT_TARGET,
    OPT_PLUGIN,
    OPT_G,
    OPT_BLOCKS,
    OPT_SEED,
    OPT_SWEEP,
    OPT_THREADS,
    OPT_TIMEOUT,
    OPT_DEVICE,
    OPT_VECTORS,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"format", 1},       {"rule", 1},   {"model", 1},  {"target", 1}, {"plugin", 1},
    {"global-scale", 1}, {"blocks", 1}, {"seed", 1},   {"sweep", 1},  {"threads", 1},
    {"timeout", 1},      {"device", 1}, {"vectors", 1}};

/* parse_sweep: the sweep points of --sweep text for f into pts; their count, or -1 after a
 * usage message. */
static int parse_sweep(const char *cmd, const char *text, const struct fp8kv_block_format *f,
                       struct fp8kv_block_sweep_point *pts, int cap)
{
    if (!text || strcmp(text, "all") == 0)
        return fp8kv_block_sweep_points(f, pts);
    if (strcmp(text, "none") == 0)
        return 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *at = strchr(tok, '@'), *end;
        if (at)
            *at = 0;
        const unsigned long code = strtoul(tok, &end, 16);
        float G = 1.0f;
        if (*tok == 0 || *end || code >= (unsigned long)fp8kv_block_scale_code_count(f) ||
            code == fp8kv_block_scale_nan_code(f) || n == cap) {
            fp8kv_cli_usage_error(cmd, "--sweep: '%s' is not a scale code of %s (hex, not NaN%s)",
                                  tok, f->name, n == cap ? ", at most 8" : "");
            return -1;
        }
        if (at && f->scale_kind == FP8KV_SCALE_E8M0) {
            fp8kv_cli_usage_error(cmd, "--sweep: @G is for nvfp4, not %s", f->name);
            return -1;
        }
        if (at && fp8kv_cli_parse_global_scale(cmd, at + 1, &G) != 0)
            return -1;
        pts[n++] = (struct fp8kv_block_sweep_point){(uint8_t)code, G};
    }
    return n;
}

static void print_report(const struct fp8kv_block_report *r)
{
    for (int k = 0; k < FP8KV_BLOCK_CHECK_COUNT; k++)
        if (r->ran[k])
            printf("  %-8s %llu checked, %llu wrong\n", fp8kv_block_check_names[k],
                   (unsigned long long)r->checked[k], (unsigned long long)r->wrong[k]);
    if (r->nlines)
        printf("first failures:\n");
    for (int i = 0; i < r->nlines; i++)
        printf("  %s\n", r->lines[i]);
    if (r->dropped)
        printf("  ... and %llu more\n", (unsigned long long)r->dropped);
    for (int i = 0; i < r->nnotes; i++)
        printf("  note: %s\n", r->notes[i]);
}

int fp8kv_cmd_check_block(int argc, char **argv)
{
    const char *cmd = argv[0];
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin(cmd, check_block_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    struct fp8kv_cli_block_choice c = {a.value[OPT_FORMAT],
                                       a.value[OPT_RULE],
                                       a.value[OPT_MODEL],
                                       a.value[OPT_TARGET],
                                       a.value[OPT_PLUGIN],
                                       2,
                                       30.0,
                                       0};
    if (a.value[OPT_THREADS] && fp8kv_cli_parse_threads(cmd, a.value[OPT_THREADS], &c.threads))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_TIMEOUT] &&
        fp8kv_cli_parse_seconds(cmd, "--timeout", a.value[OPT_TIMEOUT], &c.timeout_s))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_DEVICE] && fp8kv_cli_parse_device(cmd, a.value[OPT_DEVICE], &c.device))
        return FP8KV_EXIT_USAGE;
    float G = 1.0f;
    if (a.value[OPT_G] && fp8kv_cli_parse_global_scale(cmd, a.value[OPT_G], &G))
        return FP8KV_EXIT_USAGE;
    char *end;
    const unsigned long long nblocks =
        a.value[OPT_BLOCKS] ? strtoull(a.value[OPT_BLOCKS], &end, 10) : 20000;
    if (a.value[OPT_BLOCKS] && (*a.value[OPT_BLOCKS] == 0 || *end || nblocks > 100000000ull))
        return fp8kv_cli_usage_error(cmd, "--blocks %s: a count 0 .. 100000000",
                                     a.value[OPT_BLOCKS]);
    const unsigned long long seed = a.value[OPT_SEED] ? strtoull(a.value[OPT_SEED], &end, 0) : 1;
    if (a.value[OPT_SEED] && (*a.value[OPT_SEED] == 0 || *end))
        return fp8kv_cli_usage_error(cmd, "--seed %s: an unsigned integer", a.value[OPT_SEED]);
    struct fp8kv_block_subject s;
    struct fp8kv_block_plugin *plugin = NULL;
    if ((rc = fp8kv_cli_block_subject(cmd, &c, &s, &plugin)) != 0)
        return rc;
    if (a.value[OPT_G] && s.format->scale_kind == FP8KV_SCALE_E8M0) {
        fp8kv_block_plugin_close(plugin);
        return fp8kv_cli_usage_error(cmd, "--global-scale is for nvfp4, not %s", s.format->name);
    }
    struct fp8kv_block_sweep_point pts[8];
    const int npts = parse_sweep(cmd, a.value[OPT_SWEEP], s.format, pts, 8);
    if (npts < 0) {
        fp8kv_block_plugin_close(plugin);
        return FP8KV_EXIT_USAGE;
    }
    struct fp8kv_block_report *r = calloc(1, sizeof *r);
    if (!r) {
        fp8kv_block_plugin_close(plugin);
        return fp8kv_cli_usage_error(cmd, "out of memory");
    }
    printf("check-block %s: %s rule %s model %s (G %.9g)\n", s.name, s.format->name,
           fp8kv_block_rule_names[s.rule], fp8kv_block_model_names[s.model], (double)G);
    const struct fp8kv_block_plan plan = {fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]),
                                          G,
                                          pts,
                                          npts,
                                          seed,
                                          (size_t)nblocks,
                                          &fp8kv_block_oracle_judges};
    int status = fp8kv_block_check(&s, &plan, r);
    if (status != FP8KV_OK) {
        print_report(r);
        free(r);
        rc = fp8kv_cli_subject_error(cmd, status);
        fp8kv_block_plugin_close(plugin);
        return rc;
    }
    print_report(r);
    uint64_t checked = 0;
    for (int k = 0; k < FP8KV_BLOCK_CHECK_COUNT; k++)
        checked += r->checked[k];
    const uint64_t wrong = fp8kv_block_report_wrong(r);
    printf("check-block %s: %s %s %s checked=%llu wrong=%llu verdict=%s\n", s.name, s.format->name,
           fp8kv_block_rule_names[s.rule], fp8kv_block_model_names[s.model],
           (unsigned long long)checked, (unsigned long long)wrong,
           wrong ? "nonconformant" : "conformant");
    free(r);
    fp8kv_block_plugin_close(plugin);
    return wrong ? FP8KV_EXIT_NONCONFORMANT : FP8KV_EXIT_CONFORMANT;
}
#endif
