/* cmd_calc.c — `fp8kv encode` and `fp8kv decode`: the oracle as a calculator; `fp8kv ver`: the
 * calculator as a judge of "input code" lines.
 *
 * TestFloat-style filters: inputs from the arguments or stdin, one result line per input, so
 * an independent checker can pipe thousands of values through the true function; and the
 * other way round, an implementation's "input code" lines judged against it. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"

static const char encode_help[] =
    "usage: fp8kv encode [options] [VALUE ...]\n"
    "\n"
    "The exact code of each VALUE (or of each stdin line when no VALUE is given) under a\n"
    "profile and scale model, computed with MPFR. One output line per input:\n"
    "  0x<input bits in the input dtype> <code as two hex digits>\n"
    "(the lines `fp8kv ver` reads back)\n"
    "\n"
    "VALUE: hex bits of the input dtype (0x43e80001; 0x1334 for f16), a hex float (0x1.dp+8)\n"
    "or a decimal (464, -1.0625, 1e-3, inf, -nan); non-bit inputs are rounded once to the\n"
    "input dtype.\n"
    "\n"
    "options:\n"
    "  --profile P                        a profile of vectors/README.md, or:\n"
    "  --format {formats}\n"
    "                                     fp8 format (default {default_format}; float8_e5m2 etc. "
    "too)\n"
    "  --overflow {overflows}       overflow rule (default {default_overflow}; inf: "
    "{inf_formats:comma})\n"
    "  --inf {satfinite_infs}                    Inf under satfinite (default {default_inf})\n"
    "  --model {models}\n"
    "                                     store scale model (default {default_model})\n"
    "  --scale S                          per-tensor scale, an f32 VALUE (default 1)\n"
    "  --input-dtype {dtypes}         dtype of the inputs (default {default_dtype})\n"
    "  -h, --help                         this text\n"
    "exit: 0 ok, 2 bad arguments or input (the message names it)\n";

static const char decode_help[] =
    "usage: fp8kv decode [options] [CODE ...]\n"
    "\n"
    "The value a read gives for each CODE (two hex digits; stdin lines when none is given)\n"
    "times the scale, computed with MPFR. One output line per input:\n"
    "  <code> 0x<output bits>        (8 hex digits for f32, 4 for f16 and bf16)\n"
    "\n"
    "options:\n"
    "  --profile P                        a profile (its format), or:\n"
    "  --format {formats}\n"
    "                                     fp8 format (default {default_format}; float8_e5m2 etc. "
    "too)\n"
    "  --scale S                          per-tensor scale, an f32 value (default 1)\n"
    "  --output-dtype {dtypes}        read output dtype (default {default_dtype})\n"
    "  --read-model {read_models}         rounded: RN32(decode(q)*s) then the output dtype;\n"
    "                                     exact: decode(q)*s rounded once (default "
    "{default_read_model})\n"
    "  -h, --help                         this text\n"
    "exit: 0 ok, 2 bad arguments or input\n";

static const char ver_help[] =
    "usage: fp8kv ver [options] [FILE]\n"
    "\n"
    "Judges the lines of FILE (or stdin) against the oracle, TestFloat style: each line is\n"
    "  <input> <code>          e.g. 0x43e80001 7e\n"
    "an input (hex bits of the input dtype, a hex float or a decimal) and the code an\n"
    "implementation gave for it (two hex digits), for any set of inputs; blank lines and\n"
    "'#' comments are skipped (`fp8kv encode` output and vectors/<profile>/edges.txt read as\n"
    "they are). Each wrong line is printed with where it is:\n"
    "  <file> line <n>: <dtype> <bits> (<value>) => <got>  expected <want>  <class>\n"
    "and a last line\n"
    "  ver <profile>: lines=<N> mismatches=<M> verdict=conformant|nonconformant\n"
    "\n"
    "options:\n"
    "  --profile P, --format, --overflow, --inf, --model, --scale S, --input-dtype:\n"
    "                                     as for fp8kv encode\n"
    "  --nan-check {nan_checks}           {nan_checks:notes_default}\n" FP8KV_CLI_JSON_HELP
    "  -h, --help                         this text\n"
    "exit: 0 every line right, 1 a line wrong, 2 bad arguments or a malformed line (named)\n";

/* The settings the calculators and ver read. */
struct calc_options {
    const struct fp8kv_profile *profile;
    const struct fp8kv_format *format;
    enum fp8kv_scale_model model;
    enum fp8kv_read_model read_model;
    enum fp8kv_dtype dtype; /* input dtype (encode, ver) or output dtype (decode) */
    enum fp8kv_nan_check check;
    uint32_t scale_bits;
};

/* Option table indices; encode and decode each accept a subset. */
enum {
    OPT_PROFILE,
    OPT_FORMAT,
    OPT_OVERFLOW,
    OPT_INF,
    OPT_MODEL,
    OPT_SCALE,
    OPT_INPUT_DTYPE,
    OPT_OUTPUT_DTYPE,
    OPT_READ_MODEL,
    OPT_NAN_CHECK,
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option calc_options_table[OPT_COUNT] = {
    [OPT_PROFILE] = {"profile", 1},
    [OPT_FORMAT] = {"format", 1},
    [OPT_OVERFLOW] = {"overflow", 1},
    [OPT_INF] = {"inf", 1},
    [OPT_MODEL] = {"model", 1},
    [OPT_SCALE] = {"scale", 1},
    [OPT_INPUT_DTYPE] = {"input-dtype", 1},
    [OPT_OUTPUT_DTYPE] = {"output-dtype", 1},
    [OPT_READ_MODEL] = {"read-model", 1},
    [OPT_NAN_CHECK] = {"nan-check", 1},
    [OPT_JSON] = {"json", 1},
};

/* The options each command takes (bit k: option k). */
static unsigned options_of(const char *cmd)
{
    const unsigned common = 1u << OPT_PROFILE | 1u << OPT_FORMAT | 1u << OPT_SCALE;
    const unsigned store =
        1u << OPT_OVERFLOW | 1u << OPT_INF | 1u << OPT_MODEL | 1u << OPT_INPUT_DTYPE;
    if (strcmp(cmd, "decode") == 0)
        return common | 1u << OPT_OUTPUT_DTYPE | 1u << OPT_READ_MODEL;
    if (strcmp(cmd, "ver") == 0)
        return common | store | 1u << OPT_NAN_CHECK | 1u << OPT_JSON;
    return common | store;
}

/* choice: the index of an option's value in names (fallback when absent), or -1 after a
 * usage message. */
static int choice(const char *cmd, const struct fp8kv_cli_args *a, int opt,
                  const char *const *names, int count, int fallback)
{
    const char *v = a->value[opt];
    return v ? fp8kv_cli_parse_choice(cmd, calc_options_table[opt].name, v, names, count)
             : fallback;
}

/* Parses the command line into o and a; the options' values and their exit code. An option
 * that does not apply to the command is refused. */
static int parse_values(const char *cmd, int argc, char **argv, struct calc_options *o,
                        struct fp8kv_cli_args *a)
{
    int rc = fp8kv_cli_parse_args(cmd, argc, argv, calc_options_table, OPT_COUNT, a);
    if (rc != 0)
        return rc;
    if (a->help)
        return 0;
    for (int k = 0; k < OPT_COUNT; k++)
        if (a->value[k] && !(options_of(cmd) & 1u << k))
            return fp8kv_cli_usage_error(cmd, "option --%s does not apply to %s",
                                         calc_options_table[k].name, cmd);

    *o = (struct calc_options){.scale_bits = 0x3F800000u};
    if ((rc = fp8kv_cli_parse_profile(cmd, a->value[OPT_PROFILE], a->value[OPT_FORMAT],
                                      a->value[OPT_OVERFLOW], a->value[OPT_INF], &o->profile)) != 0)
        return rc;
    o->format = o->profile->format;
    int model =
        choice(cmd, a, OPT_MODEL, fp8kv_model_names, FP8KV_MODEL_COUNT, FP8KV_DEFAULT_MODEL);
    int read_model = choice(cmd, a, OPT_READ_MODEL, fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT,
                            FP8KV_DEFAULT_READ_MODEL);
    int dtype = choice(cmd, a, strcmp(cmd, "decode") == 0 ? OPT_OUTPUT_DTYPE : OPT_INPUT_DTYPE,
                       fp8kv_dtype_names, FP8KV_DTYPE_COUNT, FP8KV_DEFAULT_DTYPE);
    int check = choice(cmd, a, OPT_NAN_CHECK, fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT,
                       FP8KV_DEFAULT_NAN_CHECK);
    if (model < 0 || read_model < 0 || dtype < 0 || check < 0)
        return FP8KV_EXIT_USAGE;
    o->check = (enum fp8kv_nan_check)check;
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
        fp8kv_cli_print_help(help, stdout);
    return *exit_code != 0 || a->help;
}

int fp8kv_cmd_encode(int argc, char **argv)
{
    struct calc_options o;
    struct fp8kv_cli_args a;
    int rc;
    if (parse_options("encode", encode_help, argc, argv, &o, &a, &rc))
        return rc;
    const struct fp8kv_profile *p = o.profile;
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
        printf("0x%0*x %02x\n", o.dtype == FP8KV_DTYPE_F32 ? 8 : 4, bits,
               fp8kv_oracle_store(p, o.model, x, o.scale_bits));
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

/* One "input code" line of ver taken apart (a '#' and what follows it is a comment): 0, or
 * FP8KV_ERR saying what is wrong with it. */
static int parse_ver_line(enum fp8kv_dtype dtype, char *line, uint32_t *bits, uint8_t *code)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *input = strtok(line, " \t"), *text = strtok(NULL, " \t"), *extra = strtok(NULL, " \t");
    if (!input || !text || extra)
        return fp8kv_fail("expected two words, '<input> <code>' (e.g. 0x43e80001 7e)");
    if (fp8kv_cli_parse_value(dtype, input, bits) != 0 || fp8kv_cli_parse_code(text, code) != 0)
        return FP8KV_ERR;
    return FP8KV_OK;
}

int fp8kv_cmd_ver(int argc, char **argv)
{
    static const char cmd[] = "ver";
    struct calc_options o;
    struct fp8kv_cli_args a;
    int rc;
    if (parse_options(cmd, ver_help, argc, argv, &o, &a, &rc))
        return rc;
    if (a.npositional > 1)
        return fp8kv_cli_usage_error(cmd, "one FILE at most (or none: stdin)");
    const char *path = a.npositional && strcmp(a.positional[0], "-") != 0 ? a.positional[0] : NULL;
    FILE *f = path ? fopen(path, "r") : stdin;
    if (!f)
        return fp8kv_cli_usage_error(cmd, "%s: cannot open: %s", path, strerror(errno));
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0) {
        if (path)
            fclose(f);
        return rc;
    }
    const struct fp8kv_profile *p = o.profile;
    char detail[160];
    snprintf(detail, sizeof detail, "%s inputs of %s at scale 0x%08x, model %s, nan check %s",
             fp8kv_dtype_names[o.dtype], path ? path : "stdin", o.scale_bits,
             fp8kv_model_names[o.model], fp8kv_nan_check_names[o.check]);
    struct fp8kv_check c;
    fp8kv_check_init(&c, "ver", path ? path : "stdin", p->name, detail);
    c.has_classes = 1;
    const double t0 = fp8kv_now();
    struct fp8kv_cli_inputs in;
    fp8kv_cli_inputs_open(&in, 0, NULL, 0);
    fp8kv_cli_inputs_from(&in, f, path ? path : "stdin");
    char *line;
    rc = 0;
    while (rc == 0 && (line = (char *)fp8kv_cli_inputs_next(&in))) {
        uint32_t bits;
        uint8_t got;
        if (in.invalid || parse_ver_line(o.dtype, line, &bits, &got) != 0) {
            fflush(stdout);
            fprintf(stderr, "fp8kv ver: %s: %s\n", in.where, fp8kv_last_error());
            rc = FP8KV_EXIT_USAGE;
            break;
        }
        const uint32_t x = fp8kv_widen_to_f32(o.dtype, bits), s = o.scale_bits;
        const uint8_t want = fp8kv_oracle_store(p, o.model, x, s);
        const int unscaled = s == 0x3F800000u;
        const int cls = unscaled ? (int)fp8kv_classify_f32(p->format, x)
                                 : (int)fp8kv_pair_class(p->format, x, s);
        c.cases++;
        c.class_cases[cls]++;
        if (unscaled ? fp8kv_codes_match(p->format, o.check, got, want)
                     : fp8kv_pair_code_matches(p, o.check, x, s, got, want))
            continue;
        struct fp8kv_failure fail = fp8kv_failure_one(o.dtype, bits, cls, got, want);
        fail.has_scale = !unscaled;
        fail.scale = s;
        char input[128];
        fp8kv_failure_input_text(&fail, input, sizeof input);
        printf("%s: %s => %02x  expected %02x  %s\n", in.where, input, got, want,
               fp8kv_class_names[cls]);
        fp8kv_check_fail_input(&c, &fail);
    }
    fp8kv_cli_inputs_close(&in);
    if (path)
        fclose(f);
    if (rc != 0)
        return rc;
    fp8kv_check_finish(&c, fp8kv_now() - t0);
    if (c.cases == 0) {
        fprintf(stderr, "fp8kv ver: %s holds no 'input code' line: nothing judged\n",
                path ? path : "stdin");
        return FP8KV_EXIT_USAGE;
    }
    fp8kv_cli_print_classes(&c);
    printf("ver %s: lines=%llu mismatches=%llu verdict=%s\n", p->name, (unsigned long long)c.cases,
           (unsigned long long)c.mismatches, c.passed ? "conformant" : "nonconformant");
    json_t *extra = json_pack("{s:s, s:s, s:s, s:s}", "profile", p->name, "input_dtype",
                              fp8kv_dtype_names[o.dtype], "model", fp8kv_model_names[o.model],
                              "nan_check", fp8kv_nan_check_names[o.check]);
    if (fp8kv_cli_json_write(cmd, a.value[OPT_JSON],
                             fp8kv_cli_verdict_doc(cmd, c.passed ? "conformant" : "nonconformant",
                                                   &c, 1, extra)) != 0)
        return FP8KV_EXIT_USAGE;
    return c.passed ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}
