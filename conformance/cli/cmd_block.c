/* cmd_block.c — `fp8kv encode-block` and `fp8kv decode-block`: the block oracles as a filter,
 * one block per line: fp8kv/block_oracle.h for the MX and NVFP4 formats, fp8kv/intq_oracle.h for
 * the integer formats (q8_0, q4_0). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/block_oracle.h"
#include "fp8kv/diag.h"
#include "fp8kv/intq_oracle.h"

static const char encode_block_help[] =
    "usage: fp8kv encode-block --format F [options]\n"
    "\n"
    "The exact codes of each block of f32 values, computed with MPFR (docs/DESIGN.md §10).\n"
    "Reads one block per line from stdin (or --input FILE): exactly 32 values for the MX\n"
    "and integer formats, 16 for nvfp4, whitespace-separated, each hex f32 bits (0x3f800000)\n"
    "or a decimal (1.5, -0, inf, nan; rounded once to f32); blank lines and '#' comments are\n"
    "skipped. Prints one line per block: the scale code, then the element codes, in hex:\n"
    "  7f 1 2 f ...\n"
    "The integer formats (llama.cpp's KV caches; presets llamacpp_q8_0, llamacpp_q4_0,\n"
    "llamacpp_q4_0_fma) store an f16 scale, printed as its 4 hex digits, and one code a byte:\n"
    "q8_0 the int8 byte (ff is -1), q4_0 the nibble 0..f (value q - 8). Their encoding is the\n"
    "steps of llama.cpp's CUDA store in f32 (q4_0_fma: x * (1/d) + 8.5 fused into one rounding;\n"
    "docs/DESIGN.md §11); a block holding a NaN or an Inf has no code (exit 2).\n"
    "\n"
    "options:\n"
    "  --format F         {block_formats}|{intq_formats}\n"
    "  --rule R           MX: {mx_rules:comma_default} (floor: OCP MX v1.0);\n"
    "                     nvfp4: {nvfp4_rules:comma_default}\n"
    "  --model M          {block_models:or_default}; exact: one rounding per stored byte;\n"
    "                     f32: the scale's steps in f32 as an engine computes them\n"
    "  --global-scale G   nvfp4's f32 per-tensor decode scale, finite > 0 (default 1)\n"
    "  --scale-code C     no rule: every block takes the scale code C (hex, not the NaN\n"
    "                     code): the element cast x / scale (MX: 7f is scale 1; nvfp4:\n"
    "                     x / (s G)), e.g. to judge a library's fp4/fp6 casts. Inf\n"
    "                     saturates like any overflow; a NaN input has no element code\n"
    "                     (an error). The printed scale column is C.\n"
    "  --input FILE       read FILE (a regular file or a pipe; '-': stdin) instead of stdin\n"
    "  -h, --help         this text\n"
    "A line is at most 1 MiB; a longer one, a NUL byte or a failed read is exit 2.\n"
    "exit: 0 ok, 2 bad arguments or input (the line and the problem named)\n";

static const char decode_block_help[] =
    "usage: fp8kv decode-block --format F [options]\n"
    "\n"
    "The f32 values of each encoded block, computed with MPFR: RN32(element * scale) (MX),\n"
    "RN32(element * s * G) (nvfp4), RN32((q - zero) * f32(scale)) (q8_0: zero 0; q4_0: 8; the\n"
    "f16 scale as 4 hex digits). Reads one block per line from stdin (or --input FILE):\n"
    "the scale code then the element codes, in hex (`fp8kv encode-block` output); prints one\n"
    "line per block: the decoded values, as the shortest decimals that read back to the same\n"
    "f32 (integers below 2^24 in full; inf, -inf, nan, -nan), or with --hex their f32 bits.\n"
    "\n"
    "options:\n"
    "  --format F         {block_formats}|{intq_formats}\n"
    "  --global-scale G   nvfp4's f32 per-tensor decode scale, finite > 0 (default 1)\n"
    "  --hex              print f32 bits instead of decimals\n"
    "  --input FILE       read FILE (a regular file or a pipe; '-': stdin) instead of stdin\n"
    "  -h, --help         this text\n"
    "A line is at most 1 MiB; a longer one, a NUL byte or a failed read is exit 2.\n"
    "exit: 0 ok, 2 bad arguments or input (the line and the problem named)\n";

enum {
    OPT_FORMAT,
    OPT_RULE,
    OPT_MODEL,
    OPT_GLOBAL_SCALE,
    OPT_INPUT,
    OPT_HEX,
    OPT_SCALE_CODE,
    OPT_COUNT
};
static const struct fp8kv_cli_option block_options[OPT_COUNT] = {
    [OPT_FORMAT] = {"format", 1},         [OPT_RULE] = {"rule", 1},
    [OPT_MODEL] = {"model", 1},           [OPT_GLOBAL_SCALE] = {"global-scale", 1},
    [OPT_INPUT] = {"input", 1},           [OPT_HEX] = {"hex", 0},
    [OPT_SCALE_CODE] = {"scale-code", 1},
};

/* What a block command was asked. */
struct block_job {
    const struct fp8kv_block_format *format; /* NULL for an integer format */
    const struct fp8kv_intq_format *intq;    /* an integer format, or NULL */
    struct fp8kv_block_params params;
    int hex;
    int fixed_scale; /* --scale-code: every block takes scale code scale_code */
    uint8_t scale_code;
    FILE *input;
    const char *input_name;
};

static int parse_hex_code(const char *text, unsigned limit, const char *what, uint8_t *code);

/* open_input: job's input (--input, else stdin); 0 with *exit_code 0, or 1 (a usage error). */
static int open_input(const char *cmd, const struct fp8kv_cli_args *a, struct block_job *job,
                      int *exit_code)
{
    job->input = stdin;
    job->input_name = "stdin";
    if (a->value[OPT_INPUT] && strcmp(a->value[OPT_INPUT], "-") != 0) {
        job->input = fp8kv_cli_open_lines(cmd, "input", a->value[OPT_INPUT]);
        job->input_name = a->value[OPT_INPUT];
        if (!job->input)
            return 1;
    }
    *exit_code = 0;
    return 0;
}

/* parse_intq_job: --format names an integer format (or no format at all: the error lists every
 * format): it takes no rule, model, global scale or fixed scale. As parse_job. */
static int parse_intq_job(const char *cmd, const struct fp8kv_cli_args *a, struct block_job *job,
                          int *exit_code)
{
    const char *names[FP8KV_BLOCK_FORMAT_COUNT + FP8KV_INTQ_FORMAT_COUNT];
    int n = 0;
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        names[n++] = fp8kv_block_formats[i].name;
    for (int i = 0; i < FP8KV_INTQ_FORMAT_COUNT; i++)
        names[n++] = fp8kv_intq_formats[i].name;
    char list[192];
    if (!a->value[OPT_FORMAT]) {
        fp8kv_cli_usage_error(cmd, "--format is required (%s)",
                              fp8kv_names_list(names, n, ", ", NULL, list, sizeof list));
        return 1;
    }
    job->intq = fp8kv_intq_format_by_name(a->value[OPT_FORMAT]);
    if (!job->intq) {
        *exit_code = fp8kv_cli_unknown_choice(cmd, "--format: unknown block format", "",
                                              a->value[OPT_FORMAT], names, n);
        return 1;
    }
    static const int fixed[] = {OPT_RULE, OPT_MODEL, OPT_GLOBAL_SCALE, OPT_SCALE_CODE};
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        if (a->value[fixed[k]]) {
            fp8kv_cli_usage_error(cmd,
                                  "--%s does not apply to %s (its arithmetic is fixed: "
                                  "docs/DESIGN.md §11)",
                                  block_options[fixed[k]].name, job->intq->name);
            return 1;
        }
    return open_input(cmd, a, job, exit_code);
}

/* Parses the command line of cmd (its options: bit k for option k): 0 to go on, or 1 when the
 * command is done (--help, or a usage error) with its exit code in *exit_code. */
static int parse_job(const char *cmd, const char *help, unsigned takes, int argc, char **argv,
                     struct block_job *job, int *exit_code)
{
    struct fp8kv_cli_args a;
    if (fp8kv_cli_begin(cmd, help, argc, argv, block_options, OPT_COUNT, &a, exit_code))
        return 1;
    *exit_code = FP8KV_EXIT_USAGE;
    for (int k = 0; k < OPT_COUNT; k++)
        if (a.value[k] && !(takes & 1u << k)) {
            fp8kv_cli_usage_error(cmd, "option --%s does not apply to %s", block_options[k].name,
                                  cmd);
            return 1;
        }
    if (!a.value[OPT_FORMAT] || !fp8kv_block_format_by_name(a.value[OPT_FORMAT])) {
        *job = (struct block_job){.hex = a.value[OPT_HEX] != NULL};
        return parse_intq_job(cmd, &a, job, exit_code);
    }
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name(a.value[OPT_FORMAT]);
    *job = (struct block_job){.format = f, .hex = a.value[OPT_HEX] != NULL};
    job->params =
        (struct fp8kv_block_params){f->default_rule, FP8KV_BLOCK_DEFAULT_MODEL, 0x3F800000u};
    if (a.value[OPT_RULE]) {
        const int r = fp8kv_cli_block_rule(cmd, "rule", f, a.value[OPT_RULE]);
        if (r < 0)
            return 1;
        job->params.rule = (enum fp8kv_block_rule)r;
    }
    if (a.value[OPT_MODEL]) {
        const int m = fp8kv_cli_block_model(cmd, "model", a.value[OPT_MODEL]);
        if (m < 0)
            return 1;
        job->params.model = (enum fp8kv_block_model)m;
    }
    if (a.value[OPT_GLOBAL_SCALE]) {
        if (f->scale_kind != FP8KV_SCALE_UE4M3) {
            fp8kv_cli_usage_error(cmd, "--global-scale applies to nvfp4 only (%s has none)",
                                  f->name);
            return 1;
        }
        float G;
        if (fp8kv_cli_parse_global_scale(cmd, a.value[OPT_GLOBAL_SCALE], &G) != 0)
            return 1;
        memcpy(&job->params.global_scale_bits, &G, sizeof G);
    }
    if (a.value[OPT_SCALE_CODE]) {
        if (a.value[OPT_RULE]) {
            fp8kv_cli_usage_error(cmd, "--scale-code fixes the scale: no --rule applies");
            return 1;
        }
        if (parse_hex_code(a.value[OPT_SCALE_CODE],
                           (unsigned)fp8kv_block_scale_code_count(job->format), "--scale-code",
                           &job->scale_code) != 0) {
            fp8kv_cli_usage_error(cmd, "%s", fp8kv_last_error());
            return 1;
        }
        if (job->scale_code == fp8kv_block_scale_nan_code(job->format)) {
            fp8kv_cli_usage_error(cmd,
                                  "--scale-code %s is the NaN code of %s's scale: give a "
                                  "finite scale",
                                  a.value[OPT_SCALE_CODE], job->format->name);
            return 1;
        }
        job->fixed_scale = 1;
    }
    return open_input(cmd, &a, job, exit_code);
}

/* split: the whitespace-separated words of line into words[0 .. max); their count, or max + 1
 * when there are more. */
static int split(char *line, char **words, int max)
{
    int n = 0;
    for (char *w = strtok(line, " \t"); w; w = strtok(NULL, " \t")) {
        if (n == max)
            return max + 1;
        words[n++] = w;
    }
    return n;
}

/* parse_hex: a code of at most `digits` hex digits (optionally 0x) below limit: 0, or FP8KV_ERR
 * naming `what`. */
static int parse_hex(const char *text, int digits, unsigned limit, const char *what,
                     unsigned *value)
{
    const char *d = text;
    if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
        d += 2;
    const size_t n = strlen(d);
    int ok = n >= 1 && n <= (size_t)digits;
    for (size_t i = 0; ok && i < n; i++)
        ok = isxdigit((unsigned char)d[i]) != 0;
    if (!ok)
        return fp8kv_fail("%s '%s' is not a code: give %s hex digits (e.g. %s)", what, text,
                          digits == 2 ? "1 or 2" : "1 to 4", digits == 2 ? "7f" : "3c00");
    *value = (unsigned)strtoul(d, NULL, 16);
    if (*value >= limit)
        return fp8kv_fail("%s 0x%x is out of range (codes 0..0x%x)", what, *value, limit - 1);
    return FP8KV_OK;
}

/* parse_hex_code: a one-byte code below limit (parse_hex). */
static int parse_hex_code(const char *text, unsigned limit, const char *what, uint8_t *code)
{
    unsigned v;
    if (parse_hex(text, 2, limit, what, &v) != 0)
        return FP8KV_ERR;
    *code = (uint8_t)v;
    return FP8KV_OK;
}

/* The block of one line (words, block_size of them, format `name`) in f32 bits, or FP8KV_ERR
 * naming the problem; no NaN when fixed_scale (an element cast of NaN has no code). */
static int parse_block(const char *name, int block_size, int fixed_scale, char *line, uint32_t *x)
{
    char *words[FP8KV_BLOCK_MAX];
    const int n = split(line, words, block_size);
    if (n != block_size)
        return fp8kv_fail("%s%d values, %s takes exactly %d per line",
                          n > block_size ? "more than " : "", n > block_size ? block_size : n, name,
                          block_size);
    for (int i = 0; i < n; i++) {
        if (fp8kv_cli_parse_value(FP8KV_DTYPE_F32, words[i], &x[i]) != 0)
            return fp8kv_fail("value %d: %s", i + 1, fp8kv_last_error());
        if (fixed_scale && (x[i] & 0x7FFFFFFFu) > 0x7F800000u)
            return fp8kv_fail("value %d (%s) is NaN: under --scale-code an element has no NaN "
                              "code to give it",
                              i + 1, words[i]);
    }
    return FP8KV_OK;
}

/* The codes of one line (scale then elements) of the job's format: a one-byte scale code (MX,
 * NVFP4) or an f16 scale's 4 hex digits (integer formats) into *scale; or FP8KV_ERR naming the
 * problem. */
static int parse_codes(const struct block_job *job, char *line, uint16_t *scale, uint8_t *elements)
{
    const struct fp8kv_block_format *f = job->format;
    const char *name = f ? f->name : job->intq->name;
    const int size = f ? f->block_size : job->intq->block_size;
    char *words[1 + FP8KV_BLOCK_MAX];
    const int want = 1 + size, n = split(line, words, want);
    if (n != want)
        return fp8kv_fail("%s%d codes, %s takes exactly %d per line (the scale and %d elements)",
                          n > want ? "more than " : "", n > want ? want : n, name, want, size);
    if (f) {
        uint8_t code;
        if (parse_hex_code(words[0], (unsigned)fp8kv_block_scale_code_count(f), "the scale",
                           &code) != 0)
            return FP8KV_ERR;
        *scale = code;
    } else {
        unsigned bits;
        if (parse_hex(words[0], 4, 0x10000u, "the f16 scale", &bits) != 0)
            return FP8KV_ERR;
        *scale = (uint16_t)bits;
    }
    const unsigned limit = f ? (unsigned)fp8kv_element_code_count(f->element)
                             : (unsigned)fp8kv_intq_code_count(job->intq);
    for (int i = 0; i < size; i++) {
        char what[32];
        snprintf(what, sizeof what, "element %d", i + 1);
        if (parse_hex_code(words[1 + i], limit, what, &elements[i]) != 0)
            return FP8KV_ERR;
    }
    return FP8KV_OK;
}

/* print_f32: an integer below 2^24 as such (480, -0), else the shortest %g decimal that reads
 * back (strtof) to the f32 with these bits. */
static void print_f32(uint32_t bits)
{
    float v;
    memcpy(&v, &bits, sizeof v);
    if (isnan(v)) {
        fputs(bits >> 31 ? "-nan" : "nan", stdout);
        return;
    }
    char buf[48];
    if (v == truncf(v) && fabsf(v) < 0x1p24f) {
        printf("%.0f", (double)v);
        return;
    }
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)v);
        if (strtof(buf, NULL) == v && signbit(strtof(buf, NULL)) == signbit(v))
            break;
    }
    fputs(buf, stdout);
}

/* encode_line: the scale and element codes of block x under job; 0, or FP8KV_ERR naming the
 * problem (an integer block holding a NaN or an Inf). */
static int encode_line(const struct block_job *job, const uint32_t *x, uint16_t *scale, uint8_t *e)
{
    const struct fp8kv_block_format *f = job->format;
    if (!f)
        return fp8kv_oracle_intq_encode(job->intq, x, scale, e);
    uint8_t code = job->scale_code;
    if (job->fixed_scale)
        for (int i = 0; i < f->block_size; i++)
            e[i] = fp8kv_oracle_block_element(f, &job->params, code, x[i]);
    else
        fp8kv_oracle_block_encode(f, &job->params, x, &code, e);
    *scale = code;
    return FP8KV_OK;
}

/* decode_value: the f32 bits element e of a block with this scale decodes to under job */
static uint32_t decode_value(const struct block_job *job, uint16_t scale, uint8_t e)
{
    int ok;
    if (!job->format)
        return fp8kv_oracle_intq_decode_one(job->intq, scale, e, &ok); /* (e checked) */
    return fp8kv_oracle_block_decode_one(job->format, job->params.global_scale_bits, (uint8_t)scale,
                                         e);
}

/* run_lines: each input line of job through one (encode: 1, decode: 0); an exit code. */
static int run_lines(const char *cmd, struct block_job *job, int encode)
{
    const char *name = job->format ? job->format->name : job->intq->name;
    const int size = job->format ? job->format->block_size : job->intq->block_size;
    struct fp8kv_cli_inputs in;
    fp8kv_cli_inputs_open(&in, 0, NULL, 0);
    fp8kv_cli_inputs_from(&in, job->input, job->input_name);
    int rc = FP8KV_EXIT_CONFORMANT;
    char *line;
    while ((line = (char *)fp8kv_cli_inputs_next(&in))) {
        uint32_t x[FP8KV_BLOCK_MAX];
        uint16_t scale;
        uint8_t e[FP8KV_BLOCK_MAX];
        if (in.invalid || (encode ? parse_block(name, size, job->fixed_scale, line, x) ||
                                        encode_line(job, x, &scale, e)
                                  : parse_codes(job, line, &scale, e))) {
            fflush(stdout);
            fprintf(stderr, "fp8kv %s: %s: %s\n", cmd, in.where, fp8kv_last_error());
            rc = FP8KV_EXIT_USAGE;
            break;
        }
        if (encode) {
            printf(job->format ? "%x" : "%04x", scale);
            for (int i = 0; i < size; i++)
                printf(" %x", e[i]);
        } else {
            for (int i = 0; i < size; i++) {
                const uint32_t y = decode_value(job, scale, e[i]);
                if (i)
                    putchar(' ');
                if (job->hex)
                    printf("0x%08x", y);
                else
                    print_f32(y);
            }
        }
        putchar('\n');
    }
    fp8kv_cli_inputs_close(&in);
    if (job->input != stdin)
        fclose(job->input);
    return rc;
}

int fp8kv_cmd_encode_block(int argc, char **argv)
{
    static const char cmd[] = "encode-block";
    const unsigned takes = 1u << OPT_FORMAT | 1u << OPT_RULE | 1u << OPT_MODEL |
                           1u << OPT_GLOBAL_SCALE | 1u << OPT_INPUT | 1u << OPT_SCALE_CODE;
    struct block_job job;
    int rc;
    if (parse_job(cmd, encode_block_help, takes, argc, argv, &job, &rc))
        return rc;
    return run_lines(cmd, &job, 1);
}

int fp8kv_cmd_decode_block(int argc, char **argv)
{
    static const char cmd[] = "decode-block";
    const unsigned takes =
        1u << OPT_FORMAT | 1u << OPT_GLOBAL_SCALE | 1u << OPT_INPUT | 1u << OPT_HEX;
    struct block_job job;
    int rc;
    if (parse_job(cmd, decode_block_help, takes, argc, argv, &job, &rc))
        return rc;
    return run_lines(cmd, &job, 0);
}
