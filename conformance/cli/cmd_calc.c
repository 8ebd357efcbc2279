/* cmd_calc.c — `fp8kv encode` and `fp8kv decode`: the oracle as a calculator.
 *
 * TestFloat-style filters: inputs from the arguments or stdin, one result line per input, so
 * an independent checker can pipe thousands of values through the true function. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"

static const char encode_help[] =
    "usage: fp8kv encode [options] [VALUE ...]\n"
    "\n"
    "The exact code of each VALUE (or of each stdin line when no VALUE is given) under a\n"
    "profile and scale model, computed with MPFR. One output line per input:\n"
    "  0x<input as f32 bits> <code as two hex digits>\n"
    "\n"
    "VALUE: hex bits of the input dtype (0x43e80001; 0x1334 for f16), a hex float (0x1.dp+8)\n"
    "or a decimal (464, -1.0625, 1e-3, inf, -nan); non-bit inputs are rounded once to the\n"
    "input dtype.\n"
    "\n"
    "options:\n"
    "  --format e4m3fn|e4m3fnuz           fp8 format (default e4m3fn)\n"
    "  --overflow satfinite|nan           overflow rule (default satfinite)\n"
    "  --inf clamp|nan                    Inf under satfinite (default clamp)\n"
    "  --model f32_div|f32_mul_recip|f16_div|exact\n"
    "                                     store scale model (default f32_div)\n"
    "  --scale S                          per-tensor scale, an f32 VALUE (default 1)\n"
    "  --input-dtype f32|f16|bf16         dtype of the inputs (default f32)\n"
    "  --help                             this text\n"
    "exit: 0 ok, 2 bad arguments or input (the message names it)\n";

static const char decode_help[] =
    "usage: fp8kv decode [options] [CODE ...]\n"
    "\n"
    "The value a read gives for each CODE (two hex digits; stdin lines when none is given)\n"
    "times the scale, computed with MPFR. One output line per input:\n"
    "  <code> 0x<output bits>        (8 hex digits for f32, 4 for f16 and bf16)\n"
    "\n"
    "options:\n"
    "  --format e4m3fn|e4m3fnuz           fp8 format (default e4m3fn)\n"
    "  --scale S                          per-tensor scale, an f32 value (default 1)\n"
    "  --output-dtype f32|f16|bf16        read output dtype (default f32)\n"
    "  --read-model rounded|exact         rounded: RN32(decode(q)*s) then the output dtype;\n"
    "                                     exact: decode(q)*s rounded once (default rounded)\n"
    "  --help                             this text\n"
    "exit: 0 ok, 2 bad arguments or input\n";

/* The settings both calculators read. */
struct calc_options {
    const struct fp8kv_format *format;
    enum fp8kv_overflow overflow;
    enum fp8kv_inf_policy inf;
    enum fp8kv_scale_model model;
    enum fp8kv_read_model read_model;
    enum fp8kv_dtype dtype; /* input dtype (encode) or output dtype (decode) */
    uint32_t scale_bits;
};

/* Option table indices; encode and decode each accept a subset. */
enum {
    OPT_FORMAT,
    OPT_OVERFLOW,
    OPT_INF,
    OPT_MODEL,
    OPT_SCALE,
    OPT_INPUT_DTYPE,
    OPT_OUTPUT_DTYPE,
    OPT_READ_MODEL,
    OPT_COUNT
};
static const struct fp8kv_cli_option calc_options_table[OPT_COUNT] = {
    [OPT_FORMAT] = {"format", 1},
    [OPT_OVERFLOW] = {"overflow", 1},
    [OPT_INF] = {"inf", 1},
    [OPT_MODEL] = {"model", 1},
    [OPT_SCALE] = {"scale", 1},
    [OPT_INPUT_DTYPE] = {"input-dtype", 1},
    [OPT_OUTPUT_DTYPE] = {"output-dtype", 1},
    [OPT_READ_MODEL] = {"read-model", 1},
};

/* choice: the index of an option's value in names (default 0 when absent), or -1 after a
 * usage message. */
static int choice(const char *cmd, const struct fp8kv_cli_args *a, int opt,
                  const char *const *names, int count)
{
    const char *v = a->value[opt];
    return v ? fp8kv_cli_parse_choice(cmd, calc_options_table[opt].name, v, names, count) : 0;
}

/* Parses the command line into o and a; the options' values and their exit code. An option
 * that does not apply to the command is refused. */
static int parse_values(const char *cmd, int argc, char **argv, struct calc_options *o,
                        struct fp8kv_cli_args *a)
{
    const int is_encode = strcmp(cmd, "encode") == 0;
    int rc = fp8kv_cli_parse_args(cmd, argc, argv, calc_options_table, OPT_COUNT, a);
    if (rc != 0)
        return rc;
    if (a->help)
        return 0;
    static const int encode_only[] = {OPT_OVERFLOW, OPT_INF, OPT_MODEL, OPT_INPUT_DTYPE};
    static const int decode_only[] = {OPT_OUTPUT_DTYPE, OPT_READ_MODEL};
    const int *foreign = is_encode ? decode_only : encode_only;
    int nforeign = is_encode ? 2 : 4;
    for (int i = 0; i < nforeign; i++)
        if (a->value[foreign[i]])
            return fp8kv_cli_usage_error(cmd, "option --%s does not apply to %s",
                                         calc_options_table[foreign[i]].name, cmd);

    *o = (struct calc_options){.format = &fp8kv_formats[FP8KV_E4M3FN], .scale_bits = 0x3F800000u};
    if (a->value[OPT_FORMAT] && !(o->format = fp8kv_format_by_name(a->value[OPT_FORMAT])))
        return fp8kv_cli_usage_error(cmd, "--format: '%s' is not one of e4m3fn|e4m3fnuz",
                                     a->value[OPT_FORMAT]);
    int overflow = choice(cmd, a, OPT_OVERFLOW, fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT);
    int inf = choice(cmd, a, OPT_INF, fp8kv_inf_names, FP8KV_INF_COUNT);
    int model = choice(cmd, a, OPT_MODEL, fp8kv_model_names, FP8KV_MODEL_COUNT);
    int read_model = choice(cmd, a, OPT_READ_MODEL, fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT);
    int dtype = choice(cmd, a, is_encode ? OPT_INPUT_DTYPE : OPT_OUTPUT_DTYPE, fp8kv_dtype_names,
                       FP8KV_DTYPE_COUNT);
    if (overflow < 0 || inf < 0 || model < 0 || read_model < 0 || dtype < 0)
        return FP8KV_EXIT_USAGE;
    o->overflow = (enum fp8kv_overflow)overflow;
    o->inf = (enum fp8kv_inf_policy)inf;
    o->model = (enum fp8kv_scale_model)model;
    o->read_model = (enum fp8kv_read_model)read_model;
    o->dtype = (enum fp8kv_dtype)dtype;
    if (a->value[OPT_SCALE] &&
        fp8kv_cli_parse_value(FP8KV_DTYPE_F32, a->value[OPT_SCALE], &o->scale_bits) != 0)
        return fp8kv_cli_usage_error(cmd, "--scale: %s", fp8kv_last_error());
    return 0;
}

/* Parses the command line as fp8kv_cli_begin does: 0 to go on, or 1 when the command is done
 * (--help printed, or a usage error) with its exit code in *exit_code. */
static int parse_options(const char *cmd, const char *help, int argc, char **argv,
                         struct calc_options *o, struct fp8kv_cli_args *a, int *exit_code)
{
    *exit_code = parse_values(cmd, argc, argv, o, a);
    if (*exit_code == 0 && a->help)
        fputs(help, stdout);
    return *exit_code != 0 || a->help;
}

int fp8kv_cmd_encode(int argc, char **argv)
{
    struct calc_options o;
    struct fp8kv_cli_args a;
    int rc;
    if (parse_options("encode", encode_help, argc, argv, &o, &a, &rc))
        return rc;
    const struct fp8kv_profile *p = fp8kv_profile_find(o.format->id, o.overflow, o.inf);
    struct fp8kv_cli_inputs in;
    fp8kv_cli_inputs_open(&in, a.npositional, a.positional, 0);
    const char *text;
    rc = FP8KV_EXIT_CONFORMANT;
    while (rc == FP8KV_EXIT_CONFORMANT && (text = fp8kv_cli_inputs_next(&in))) {
        uint32_t bits;
        if (in.invalid || fp8kv_cli_parse_value(o.dtype, text, &bits) != 0) {
            fflush(stdout);
            fprintf(stderr, "fp8kv encode: %s: %s\n", in.where, fp8kv_last_error());
            rc = FP8KV_EXIT_USAGE;
            break;
        }
        uint32_t x = fp8kv_widen_to_f32(o.dtype, bits);
        printf("0x%08x %02x\n", x, fp8kv_oracle_store(p, o.model, x, o.scale_bits));
    }
    fp8kv_cli_inputs_close(&in);
    return rc;
}

int fp8kv_cmd_decode(int argc, char **argv)
{
    struct calc_options o;
    struct fp8kv_cli_args a;
    int rc;
    if (parse_options("decode", decode_help, argc, argv, &o, &a, &rc))
        return rc;
    struct fp8kv_cli_inputs in;
    fp8kv_cli_inputs_open(&in, a.npositional, a.positional, 0);
    const char *text;
    rc = FP8KV_EXIT_CONFORMANT;
    while ((text = fp8kv_cli_inputs_next(&in))) {
        uint8_t q;
        if (in.invalid || fp8kv_cli_parse_code(text, &q) != 0) {
            fflush(stdout);
            fprintf(stderr, "fp8kv decode: %s: %s\n", in.where, fp8kv_last_error());
            rc = FP8KV_EXIT_USAGE;
            break;
        }
        uint32_t y = fp8kv_oracle_read(o.format, o.read_model, o.dtype, q, o.scale_bits);
        printf(o.dtype == FP8KV_DTYPE_F32 ? "%02x 0x%08x\n" : "%02x 0x%04x\n", q, y);
    }
    fp8kv_cli_inputs_close(&in);
    return rc;
}
