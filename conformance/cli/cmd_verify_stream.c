/* cmd_verify_stream.c — `fp8kv verify-stream`: judge a byte stream of codes, as a sweep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fp8kv/verify.h"
#include "fp8kv/diag.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

static const char verify_stream_help[] =
    "usage: fp8kv verify-stream --sweep {dtypes} [--profile P | --format F --overflow O\n"
    "                           --inf I] [--scale S [--model M]] [--nan-check {nan_checks}]\n"
    "                           [--name NAME] [--json FILE] [--vectors DIR]\n"
    "\n"
    "Reads from stdin the codes of an implementation for the canonical input order of a sweep:\n"
    "byte i is its code of the input whose bit pattern is i (f32: all 2^32 patterns, 4 GiB;\n"
    "f16, bf16: 65536 bytes), stored at scale 1 or at --scale S. Judges them like `fp8kv sweep`\n"
    "against the certified boundaries of the profile (at a scale: the code of the model's\n"
    "quotient of each input), so any language can be audited through a pipe, e.g.\n"
    "  python3 my_codec.py | fp8kv verify-stream --sweep bf16 --profile e4m3fn_nan\n"
    "Prints the mismatches per input class, the first failures and a last line\n"
    "  <name> <profile>: inputs=<N> mismatches=<M> verdict=conformant|nonconformant\n"
    "\n"
    "  --sweep D        the input domain: {dtypes:or}\n"
    "  --profile P      a profile of vectors/README.md (default {default_profile}), or:\n"
    "  --format F       {formats:or_default} (float8_e5m2 etc. too)\n"
    "  --overflow O     {overflows:or_default} (inf: {inf_formats:comma})\n"
    "  --inf I          under satfinite, what +-Inf gives: {satfinite_infs:or_default}\n"
    "  --scale S        the store scale the codes were made at: an f32 (hex bits, hex float or\n"
    "                   decimal), finite and nonzero; a negative scale mirrors (default 1)\n"
    "  --model M        how the scale is applied (default {default_model}):\n"
    "                   {kernel_models:notes}\n"
    "  --nan-check C    {nan_checks:notes_default}\n"
    "  --name NAME      what the stream is, for the output (default stream)\n" FP8KV_CLI_JSON_HELP
    "  --vectors DIR    the vector directory (default: $FP8KV_VECTORS, ./vectors, or the\n"
    "                   installed set)\n"
    "On a terminal, stderr shows the inputs judged (bytes read) and the rate.\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments or vectors, or a stream of the wrong\n"
    "      length (too short or too long: the byte count is named)\n";

enum {
    OPT_SWEEP,
    OPT_PROFILE,
    OPT_FORMAT,
    OPT_OVERFLOW,
    OPT_INF,
    OPT_NAN_CHECK,
    OPT_SCALE,
    OPT_MODEL,
    OPT_NAME,
    OPT_JSON,
    OPT_VECTORS,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"sweep", 1}, {"profile", 1}, {"format", 1}, {"overflow", 1}, {"inf", 1},    {"nan-check", 1},
    {"scale", 1}, {"model", 1},   {"name", 1},   {"json", 1},     {"vectors", 1}};

int fp8kv_cmd_verify_stream(int argc, char **argv)
{
    static const char cmd[] = "verify-stream";
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin(cmd, verify_stream_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (!a.value[OPT_SWEEP]) {
        char list[64];
        return fp8kv_cli_usage_error(
            cmd, "--sweep is required (%s)",
            fp8kv_names_list(fp8kv_dtype_names, FP8KV_DTYPE_COUNT, " | ", NULL, list, sizeof list));
    }
    int domain = fp8kv_cli_parse_choice(cmd, "sweep", a.value[OPT_SWEEP], fp8kv_sweep_domain_names,
                                        FP8KV_DOMAIN_COUNT);
    if (domain < 0)
        return FP8KV_EXIT_USAGE;
    const struct fp8kv_profile *p;
    if ((rc = fp8kv_cli_parse_profile(cmd, a.value[OPT_PROFILE], a.value[OPT_FORMAT],
                                      a.value[OPT_OVERFLOW], a.value[OPT_INF], &p)) != 0)
        return rc;
    int check = FP8KV_DEFAULT_NAN_CHECK;
    if (a.value[OPT_NAN_CHECK] &&
        (check = fp8kv_cli_parse_choice(cmd, "nan-check", a.value[OPT_NAN_CHECK],
                                        fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    uint32_t scale = 0; /* none: scale 1 under every model but f16_div */
    enum fp8kv_scale_model model = FP8KV_DEFAULT_MODEL;
    if (a.value[OPT_SCALE] && fp8kv_cli_parse_scale(cmd, a.value[OPT_SCALE], &scale) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_MODEL] && fp8kv_cli_parse_kernel_model(cmd, a.value[OPT_MODEL], &model) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_MODEL] && !scale)
        scale = 0x3F800000u; /* a model alone: at scale 1 (f16_div still rounds x to f16) */
    if (isatty(STDIN_FILENO))
        return fp8kv_cli_usage_error(cmd, "stdin is a terminal: pipe the codes in");
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0)
        return rc;
    const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
    uint32_t *bounds = fp8kv_vectors_trust(dir) == 0 ? fp8kv_load_boundaries(dir, p) : NULL;
    if (!bounds)
        return fp8kv_cli_input_error(cmd);

    struct fp8kv_stream stream = {STDIN_FILENO, 0};
    const char *name = a.value[OPT_NAME] ? a.value[OPT_NAME] : "stream";
    const struct fp8kv_subject subject = fp8kv_stream_subject(&stream, name);
    struct fp8kv_sweep_options opt = {.progress = stderr, .scale = scale, .model = model};
    struct fp8kv_check c;
    rc = fp8kv_sweep(p, (enum fp8kv_nan_check)check, (enum fp8kv_domain)domain, bounds, &subject,
                     fp8kv_profile_cfg(p), &opt, &c);
    free(bounds);
    if (rc == 0)
        rc = fp8kv_stream_finish(&stream, c.cases);
    if (rc != 0)
        return fp8kv_cli_input_error(cmd);
    fprintf(stderr, "%s: %llu bytes in %.3f s (%.0f MB/s)\n", cmd,
            (unsigned long long)stream.consumed, c.seconds,
            (double)stream.consumed / c.seconds / 1e6);
    rc = fp8kv_cli_print_sweep(&c);
    json_t *extra =
        json_pack("{s:s, s:s, s:s, s:s}", "name", name, "profile", p->name, "domain",
                  fp8kv_sweep_domain_names[domain], "nan_check", fp8kv_nan_check_names[check]);
    if (scale) { /* the scale as its f32 bits and value, and its model */
        char bits[16];
        float value;
        memcpy(&value, &scale, sizeof value);
        snprintf(bits, sizeof bits, "0x%08x", scale);
        json_object_set_new(extra, "scale", json_real((double)value));
        json_object_set_new(extra, "scale_bits", json_string(bits));
        json_object_set_new(extra, "model", json_string(fp8kv_model_names[model]));
    }
    if (fp8kv_cli_json_write(cmd, a.value[OPT_JSON],
                             fp8kv_cli_verdict_doc(cmd, c.passed ? "conformant" : "nonconformant",
                                                   &c, 1, extra)) != 0)
        return FP8KV_EXIT_USAGE;
    return rc;
}
