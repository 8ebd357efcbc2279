/* fuzz_cli_input.c — the CLI's input parsers (conformance/cli/args.c) on arbitrary text.
 *
 * The input is fed as stdin to the line reader of encode/decode, and each line it returns is
 * parsed as an f32, f16 and bf16 input and as an fp8 code; it is also split at newlines into
 * an argument vector for the option parser. Properties: a line never holds a NUL or blanks at
 * its ends; hex bits mean exactly their digits; an accepted f32 decimal or hex float is the
 * value glibc's strtof (correctly rounded, independent of the MPFR parser) reads from the
 * whole word; an accepted code is its two hex digits; a parsed option value is an argument.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fuzz_util.h"

static void check_value(const char *line)
{
    for (int dt = 0; dt < FP8KV_DTYPE_COUNT; dt++) {
        uint32_t bits = 0;
        if (fp8kv_cli_parse_value((enum fp8kv_dtype)dt, line, &bits) != 0)
            continue;
        for (const char *p = line; *p; p++)
            if (isspace((unsigned char)*p))
                fuzz_fail("accepted an input with a blank: '%s'", line);
        if (dt != FP8KV_DTYPE_F32 && bits > 0xFFFF)
            fuzz_fail("'%s': %s bits 0x%x", line, fp8kv_dtype_names[dt], bits);
        const int hex_bits = line[0] == '0' && (line[1] == 'x' || line[1] == 'X') && line[2] &&
                             strspn(line + 2, "0123456789abcdefABCDEF") == strlen(line + 2);
        if (hex_bits) {
            if (strtoull(line, NULL, 16) != bits)
                fuzz_fail("'%s' read as bits 0x%x", line, bits);
            continue;
        }
        if (dt != FP8KV_DTYPE_F32)
            continue;
        char *end;
        const float ref = strtof(line, &end);
        uint32_t ref_bits;
        memcpy(&ref_bits, &ref, sizeof ref_bits);
        float got;
        memcpy(&got, &bits, sizeof got);
        if (*end != '\0')
            fuzz_fail("accepted '%s', which strtof reads only in part", line);
        if (isnan(ref) ? !isnan(got) : ref_bits != bits)
            fuzz_fail("'%s' read as 0x%08x, strtof says 0x%08x", line, bits, ref_bits);
    }
    uint8_t code;
    if (fp8kv_cli_parse_code(line, &code) == 0) {
        const char *digits = line[0] == '0' && (line[1] == 'x' || line[1] == 'X') ? line + 2 : line;
        if (strlen(digits) < 1 || strlen(digits) > 2 || strtoul(digits, NULL, 16) != code)
            fuzz_fail("'%s' read as code %02x", line, code);
    }
}

static void check_args(const uint8_t *data, size_t size)
{
    static const struct fp8kv_cli_option options[] = {
        {"profile", 1}, {"case", 1}, {"json", 1}, {"quick", 0}, {"nan-check", 1}};
    enum { OPTIONS = sizeof options / sizeof options[0], MAX_ARGS = 32 };
    char *copy = malloc(size + 1), *argv[MAX_ARGS + 2];
    memcpy(copy, data, size);
    copy[size] = '\0';
    int argc = 0;
    argv[argc++] = "fuzz";
    for (char *s = copy, *next; s && argc <= MAX_ARGS; s = next) {
        next = strchr(s, '\n');
        if (next)
            *next++ = '\0';
        argv[argc++] = s;
    }
    argv[argc] = NULL;
    char *words[MAX_ARGS + 2]; /* the parser reuses argv for the positional arguments */
    memcpy(words, argv, sizeof argv);
    struct fp8kv_cli_args a;
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    const int rc = fp8kv_cli_parse_args("fuzz", argc, argv, options, OPTIONS, &a);
    fclose(stderr);
    stderr = saved;
    for (int i = 0; rc == 0 && i < OPTIONS; i++) {
        if (!a.value[i] || (!options[i].takes_value && a.value[i][0] == '\0'))
            continue;
        int found = 0;
        for (int k = 1; k < argc && !found; k++)
            found = a.value[i] >= words[k] && a.value[i] <= words[k] + strlen(words[k]);
        if (!found)
            fuzz_fail("--%s has a value that is no argument", options[i].name);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *saved = stdin;
    stdin = fmemopen((void *)data, size ? size : 1, "r");
    if (!stdin)
        fuzz_fail("fmemopen failed");
    if (size == 0)
        (void)fgetc(stdin); /* fmemopen needs a size >= 1: read past the one byte */
    struct fp8kv_cli_inputs in;
    char *no_args[] = {"encode", NULL}; /* encode with no inputs given: it reads stdin */
    fp8kv_cli_inputs_open(&in, 1, no_args, 1);
    for (const char *line; (line = fp8kv_cli_inputs_next(&in)) != NULL;) {
        if (in.invalid)
            continue;
        const size_t n = strlen(line);
        if (n == 0 || isspace((unsigned char)line[0]) || isspace((unsigned char)line[n - 1]) ||
            line[0] == '#')
            fuzz_fail("the line reader returned '%s'", line);
        check_value(line);
    }
    fp8kv_cli_inputs_close(&in);
    fclose(stdin);
    stdin = saved;
    check_args(data, size);
    return 0;
}
