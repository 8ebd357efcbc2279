/* cmd_check_block.c — `fp8kv check-block`: a block codec (the CPU codec, the GPU codec or a
 * block-codec plugin) judged against the exact oracle (fp8kv/block_judge.h; builds with the
 * oracle); and what `fp8kv audit --block`, encode-block and decode-block share (every build):
 * the subject selection and the parsers of format, rule, model, G and counts. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "fp8kv/block_plugin_host.h"
#include "fp8kv/block_report.h"
#include "fp8kv/diag.h"
#include "fp8kv/verify.h"

/* ---- check-block (the oracle's judge: builds with the oracle) ---- */

#ifdef FP8KV_HAVE_ORACLE
#include "fp8kv/block_judge.h"

static const char check_block_help[] =
    "usage: fp8kv check-block (--format F [--rule R] [--model M] [--target cpu|hip] |\n"
    "                          --plugin LIB.so) [--global-scale G] [--blocks N] [--seed S]\n"
    "                          [--sweep all|none|CODE[@G],...] [--threads N] [--timeout S]\n"
    "                          [--worker-memory M] [--device N] [--vectors DIR] [--json FILE|-]\n"
    "\n"
    "Judges a block codec (MX, NVFP4: docs/blocks.md) against the exact MPFR oracle:\n"
    "  vectors the golden vectors vectors/blocks/<format>/: every encode case, the decode tables\n"
    "  decode  every element code under every scale code, bit for bit (NaN matches any NaN)\n"
    "  sweep   every f32 input a block with a fixed scale code can hold, both signs, element\n"
    "          codes against the oracle's element boundaries (runs, as fp8kv sweep judges)\n"
    "  blocks  N seeded random and edge blocks against the oracle's whole-block encode\n"
    "  --format F        {block_formats:bar}\n"
    "  --rule R          {mx_rules:bar} (MX), {nvfp4_rules:bar} (nvfp4); default the\n"
    "                    format's ({default_mx_rule}, {default_nvfp4_rule})\n"
    "  --model M         {block_models:bar} (default {default_block_model})\n"
    "  --target T        cpu (the header codec fp8kv/block_codec.h; default) or hip (the same\n"
    "                    codec in GPU kernels; a GPU build)\n"
    "  --plugin LIB.so   a library exporting fp8kv_block_codec_v1 (fp8kv/block_plugin.h), run in\n"
    "                    worker processes; its descriptor says format, rule and model\n"
    "  --global-scale G  nvfp4's f32 decode scale for decode and blocks, finite > 0 (default 1)\n"
    "  --blocks N        random and edge blocks (default 20000; 0: none)\n"
    "  --seed S          their seed (default 1)\n"
    "  --sweep LIST      the sweep's scale codes (hex, at most 8), nvfp4 with @G: 'all' (default:\n"
    "                    MX 7f, 01, c8; nvfp4 38@1, 3b@1.7), 'none', or e.g. '7f,80' or '38@0.5'\n"
    "  --threads N       threads (plugin: worker processes); default 2\n"
    "  --timeout S       seconds a plugin call may take (default 30)\n"
    "  --worker-memory M the memory a plugin worker may hold (bytes, or with K, M or G; 0: none;\n"
    "                    default $FP8KV_WORKER_MEMORY, else half the machine's)\n"
    "  --device N        the GPU of --target hip (default 0)\n"
    "  --vectors DIR     the vector directory (default: $FP8KV_VECTORS, ./vectors, installed).\n"
    "                    A directory named here or by $FP8KV_VECTORS, or found, must pass its\n"
    "                    MANIFEST.json and SHA256SUMS (fp8kv verify) and, when named, hold\n"
    "                    blocks/<format>: else exit 2 naming the file. None named and none\n"
    "                    found: the vectors check is 'not run' (never a pass)\n"
    "  --json FILE       also write the verdict as JSON (docs/json.md); '-': the JSON to stdout,\n"
    "                    the text to stderr\n"
    "Prints per check the values checked and wrong (or 'not run: why'), the first failures\n"
    "(input bits, expected and got codes), then\n"
    "  check-block <name>: <format> <rule> <model> checked=<N> wrong=<W> verdict=...\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments, vectors or plugin, 3 no GPU target,\n"
    "      4 the plugin crashed or hung (with --json: verdict 'subject failed')\n";

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
    OPT_WORKER_MEMORY,
    OPT_DEVICE,
    OPT_VECTORS,
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"format", 1},       {"rule", 1},          {"model", 1},  {"target", 1},  {"plugin", 1},
    {"global-scale", 1}, {"blocks", 1},        {"seed", 1},   {"sweep", 1},   {"threads", 1},
    {"timeout", 1},      {"worker-memory", 1}, {"device", 1}, {"vectors", 1}, {"json", 1}};

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
    const size_t len = strlen(text);
    if (len == 0 || len >= sizeof buf || text[0] == ',' || text[len - 1] == ',' ||
        strstr(text, ",,")) {
        fp8kv_cli_usage_error(cmd,
                              "--sweep '%.40s%s': all, none, or up to 8 hex scale codes "
                              "separated by commas",
                              text, len > 40 ? "..." : "");
        return -1;
    }
    memcpy(buf, text, len + 1);
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

/* Why each check kind did not run ("" when it ran or was not asked for). */
struct not_run {
    char why[FP8KV_BLOCK_CHECK_COUNT][200];
};

/* vectors_gate: the vector directory to judge against in *dir, or NULL with why->why[VECTORS]
 * set when none was named ($FP8KV_VECTORS or --vectors) and none is found, or the one found has
 * no blocks/<format>. A named or found directory must be the verified truth (its MANIFEST.json
 * and SHA256SUMS: fp8kv_vectors_trust). 0, or exit 2 after a message naming the file. */
static int vectors_gate(const char *cmd, const char *given, const struct fp8kv_block_format *f,
                        const char **dir, struct not_run *why, struct fp8kv_block_report *r)
{
    const char *env = getenv("FP8KV_VECTORS");
    const int named = given || (env && *env);
    const char *d = fp8kv_cli_vectors_dir(given);
    char *vwhy = why->why[FP8KV_BLOCK_CHECK_VECTORS];
    *dir = NULL;
    struct stat st;
    if (!named && (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))) {
        snprintf(vwhy, sizeof why->why[0],
                 "not run: no vector directory found (give --vectors DIR or set FP8KV_VECTORS)");
        fp8kv_block_report_note(r, "vectors: looked in %.170s", fp8kv_cli_vectors_searched());
        return 0;
    }
    if (fp8kv_vectors_trust(d) != 0)
        return fp8kv_cli_input_error(cmd);
    char path[1200];
    snprintf(path, sizeof path, "%s/blocks/%s/input.npy", d, f->name);
    if (stat(path, &st) != 0) {
        if (named)
            return fp8kv_cli_usage_error(cmd,
                                         "%s: missing: these vectors have no %s block vectors "
                                         "(fp8kv gen --vectors DIR writes them)",
                                         path, f->name);
        snprintf(vwhy, sizeof why->why[0], "not run: %.100s has no blocks/%s", d, f->name);
        return 0;
    }
    *dir = d;
    return 0;
}

/* The check kinds in the order check-block runs them. */
static const enum fp8kv_block_check_kind run_order[FP8KV_BLOCK_CHECK_COUNT] = {
    FP8KV_BLOCK_CHECK_VECTORS, FP8KV_BLOCK_CHECK_DECODE, FP8KV_BLOCK_CHECK_SWEEP,
    FP8KV_BLOCK_CHECK_BLOCKS};

static void print_report(const struct fp8kv_block_report *r, const struct not_run *why)
{
    for (int i = 0; i < FP8KV_BLOCK_CHECK_COUNT; i++) {
        const enum fp8kv_block_check_kind k = run_order[i];
        if (r->ran[k])
            printf("  %-8s %llu checked, %llu wrong\n", fp8kv_block_check_names[k],
                   (unsigned long long)r->checked[k], (unsigned long long)r->wrong[k]);
        else if (why->why[k][0])
            printf("  %-8s %s\n", fp8kv_block_check_names[k], why->why[k]);
    }
    if (r->nlines)
        printf("first failures:\n");
    for (int i = 0; i < r->nlines; i++)
        printf("  %s\n", r->lines[i]);
    if (r->dropped)
        printf("  ... and %llu more\n", (unsigned long long)r->dropped);
    for (int i = 0; i < r->nnotes; i++)
        printf("  note: %s\n", r->notes[i]);
}

/* The checks of r as verdict checks (docs/json.md): one per kind that ran (gated) or has a
 * reason it did not ("not run: ...", not gated), with its failure lines and seconds. */
static size_t report_checks(const struct fp8kv_block_report *r, const struct not_run *why,
                            const struct fp8kv_block_under_test *s, const double seconds[],
                            struct fp8kv_check *out)
{
    size_t n = 0;
    char profile[48], name[32];
    snprintf(profile, sizeof profile, "%s %s %s", s->format->name, fp8kv_block_rule_names[s->rule],
             fp8kv_block_model_names[s->model]);
    for (int j = 0; j < FP8KV_BLOCK_CHECK_COUNT; j++) {
        const enum fp8kv_block_check_kind k = run_order[j];
        if (!r->ran[k] && !why->why[k][0])
            continue;
        struct fp8kv_check *c = &out[n++];
        snprintf(name, sizeof name, "block-%s", fp8kv_block_check_names[k]);
        fp8kv_check_init(c, name, s->subject->name, profile, r->ran[k] ? "" : why->why[k]);
        c->cases = r->checked[k];
        c->mismatches = r->wrong[k];
        c->gated = r->ran[k];
        c->passed = r->ran[k] && r->wrong[k] == 0;
        c->seconds = seconds[k];
        for (int i = 0; i < r->nlines && c->failure_lines < FP8KV_MAX_FAILURE_LINES; i++)
            if (r->line_kind[i] == (uint8_t)k) {
                c->line_class[c->failure_lines] = FP8KV_NO_CLASS;
                snprintf(c->failures[c->failure_lines++], FP8KV_FAILURE_LINE_SIZE, "%s",
                         r->lines[i]);
            }
    }
    return n;
}

/* The JSON document of a run: the verdict, the checks, and the subject's claim. */
static json_t *check_block_doc(const char *verdict, const struct fp8kv_block_report *r,
                               const struct not_run *why, const struct fp8kv_block_under_test *s,
                               const double seconds[], float G, uint64_t seed, const char *dir)
{
    struct fp8kv_check *checks = calloc(FP8KV_BLOCK_CHECK_COUNT, sizeof *checks);
    if (!checks)
        return NULL;
    const size_t n = report_checks(r, why, s, seconds, checks);
    uint32_t gbits;
    memcpy(&gbits, &G, sizeof gbits);
    char gtext[16];
    snprintf(gtext, sizeof gtext, "0x%08x", gbits);
    json_t *notes = json_array();
    for (int i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_t *extra =
        json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:I, s:s?, s:o}", "subject", s->subject->name,
                  "format", s->format->name, "rule", fp8kv_block_rule_names[s->rule], "model",
                  fp8kv_block_model_names[s->model], "global_scale", (double)G, "global_scale_bits",
                  gtext, "seed", (json_int_t)seed, "vectors", dir, "notes", notes);
    json_t *doc = fp8kv_cli_verdict_doc("check-block", verdict, checks, n, extra);
    free(checks);
    return doc;
}

int fp8kv_cmd_check_block(int argc, char **argv)
{
    const char *cmd = argv[0];
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin(cmd, check_block_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    struct fp8kv_cli_block_choice c = {.format = a.value[OPT_FORMAT],
                                       .rule = a.value[OPT_RULE],
                                       .model = a.value[OPT_MODEL],
                                       .target = a.value[OPT_TARGET],
                                       .plugin = a.value[OPT_PLUGIN],
                                       .threads = 2,
                                       .timeout_s = 30.0};
    if (a.value[OPT_THREADS] && fp8kv_cli_parse_threads(cmd, a.value[OPT_THREADS], &c.threads))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_TIMEOUT] &&
        fp8kv_cli_parse_seconds(cmd, "--timeout", a.value[OPT_TIMEOUT], &c.timeout_s))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_WORKER_MEMORY] && fp8kv_cli_use_worker_memory(cmd, a.value[OPT_WORKER_MEMORY]))
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_DEVICE] && fp8kv_cli_parse_device(cmd, a.value[OPT_DEVICE], &c.device))
        return FP8KV_EXIT_USAGE;
    float G = 1.0f;
    if (a.value[OPT_G] && fp8kv_cli_parse_global_scale(cmd, a.value[OPT_G], &G))
        return FP8KV_EXIT_USAGE;
    unsigned long long nblocks = 20000, seed = 1;
    if (a.value[OPT_BLOCKS] && fp8kv_cli_parse_count(cmd, "blocks", a.value[OPT_BLOCKS], 10, 0,
                                                     100000000ull, &nblocks) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_SEED] &&
        fp8kv_cli_parse_count(cmd, "seed", a.value[OPT_SEED], 0, 0, ~0ull, &seed) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_VECTORS] && !*a.value[OPT_VECTORS])
        return fp8kv_cli_usage_error(cmd, "--vectors: an empty directory name");
    struct fp8kv_block_under_test s;
    struct fp8kv_block_plugin *plugin = NULL;
    if ((rc = fp8kv_cli_block_subject(cmd, &c, &s, &plugin)) != 0)
        return rc;
    if (a.value[OPT_G] && s.format->scale_kind == FP8KV_SCALE_E8M0) {
        fp8kv_block_plugin_close(plugin);
        return fp8kv_cli_usage_error(cmd, "--global-scale is for nvfp4, not %s", s.format->name);
    }
    struct fp8kv_block_sweep_point pts[8];
    const int npts = parse_sweep(cmd, a.value[OPT_SWEEP], s.format, pts, 8);
    struct not_run why = {0};
    const char *dir = NULL;
    struct fp8kv_block_report *r = npts < 0 ? NULL : calloc(1, sizeof *r);
    rc = npts < 0 ? FP8KV_EXIT_USAGE
         : !r     ? fp8kv_cli_usage_error(cmd, "out of memory")
                  : vectors_gate(cmd, a.value[OPT_VECTORS], s.format, &dir, &why, r);
    if (rc == 0)
        rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON]);
    if (rc != 0) {
        free(r);
        fp8kv_block_plugin_close(plugin);
        return rc;
    }
    if (!fp8kv_block_can_decode(&s))
        snprintf(why.why[FP8KV_BLOCK_CHECK_DECODE], sizeof why.why[0],
                 "not run: %.100s has no decode", s.subject->name);
    if (npts == 0 || s.rule == FP8KV_RULE_4OVER6)
        snprintf(why.why[FP8KV_BLOCK_CHECK_SWEEP], sizeof why.why[0], "not run: %s",
                 npts == 0 ? "--sweep none"
                           : "not for 4over6 (the scale is chosen per block): blocks covers it");
    if (!nblocks)
        snprintf(why.why[FP8KV_BLOCK_CHECK_BLOCKS], sizeof why.why[0], "not run: --blocks 0");
    printf("check-block %s: %s rule %s model %s (G %.9g)\n", s.subject->name, s.format->name,
           fp8kv_block_rule_names[s.rule], fp8kv_block_model_names[s.model], (double)G);
    /* dir: the vetted vector directory (vectors_gate), NULL when none was found */
    const struct fp8kv_block_plan plan = {
        dir, G, pts, npts, seed, (size_t)nblocks, &fp8kv_block_oracle_judges};
    int status = fp8kv_block_check(&s, &plan, r);
    const double *seconds = r->seconds;
    print_report(r, &why);
    if (status != FP8KV_OK) {
        if (status == FP8KV_ERR_SUBJECT && a.value[OPT_JSON]) { /* the partial counts, the crash */
            char message[1024];
            snprintf(message, sizeof message, "%s", fp8kv_last_error());
            json_t *doc = check_block_doc("subject failed", r, &why, &s, seconds, G, seed, dir);
            json_object_set_new(doc, "error", json_string(message));
            fp8kv_cli_json_write(cmd, a.value[OPT_JSON], doc);
            fp8kv_fail("%s", message);
        }
        free(r);
        rc = fp8kv_cli_subject_error(cmd, status);
        fp8kv_block_plugin_close(plugin);
        return rc;
    }
    uint64_t checked = 0;
    for (int k = 0; k < FP8KV_BLOCK_CHECK_COUNT; k++)
        checked += r->checked[k];
    const uint64_t wrong = fp8kv_block_report_wrong(r);
    const char *verdict = wrong ? "nonconformant" : "conformant";
    printf("check-block %s: %s %s %s checked=%llu wrong=%llu verdict=%s\n", s.subject->name,
           s.format->name, fp8kv_block_rule_names[s.rule], fp8kv_block_model_names[s.model],
           (unsigned long long)checked, (unsigned long long)wrong, verdict);
    rc = wrong ? FP8KV_EXIT_NONCONFORMANT : FP8KV_EXIT_CONFORMANT;
    if (fp8kv_cli_json_write(cmd, a.value[OPT_JSON],
                             check_block_doc(verdict, r, &why, &s, seconds, G, seed, dir)) != 0)
        rc = FP8KV_EXIT_USAGE;
    free(r);
    fp8kv_block_plugin_close(plugin);
    return rc;
}
#endif
