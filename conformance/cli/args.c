/* args.c — option values and inputs shared by the fp8kv commands. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fp8kv/diag.h"
#ifdef FP8KV_HAVE_ORACLE
#include "fp8kv/oracle.h"
#endif

int fp8kv_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fp8kv %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'fp8kv %s --help'.\n", cmd);
    va_end(ap);
    return FP8KV_EXIT_USAGE;
}

int fp8kv_cli_input_error(const char *cmd)
{
    fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
    return FP8KV_EXIT_USAGE;
}

const char *fp8kv_cli_vectors_dir(const char *given)
{
    if (given)
        return given;
    const char *env = getenv("FP8KV_VECTORS");
    if (env && *env)
        return env;
    struct stat st;
    if (stat("vectors", &st) == 0 && S_ISDIR(st.st_mode))
        return "vectors";
    static char beside[4096]; /* an installed tree moved elsewhere: <bin>/../share/... */
    if (fp8kv_cli_beside_exe("../share/fp8kv/vectors", beside, sizeof beside) == 0 &&
        stat(beside, &st) == 0 && S_ISDIR(st.st_mode))
        return beside;
#ifdef FP8KV_INSTALLED_VECTORS
    if (stat(FP8KV_INSTALLED_VECTORS, &st) == 0 && S_ISDIR(st.st_mode))
        return FP8KV_INSTALLED_VECTORS;
#endif
    return "vectors";
}

int fp8kv_cli_beside_exe(const char *relative, char *buf, size_t size)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return FP8KV_ERR;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return FP8KV_ERR;
    *slash = '\0';
    return snprintf(buf, size, "%s/%s", exe, relative) < (int)size ? 0 : FP8KV_ERR;
}

int fp8kv_cli_parse_profile(const char *cmd, const char *profile, const char *format,
                            const char *overflow, const char *inf, const struct fp8kv_profile **out)
{
    if (profile && (format || overflow || inf))
        return fp8kv_cli_usage_error(cmd, "give --profile or --format/--overflow/--inf, not both");
    if (profile) {
        if (!(*out = fp8kv_profile_by_name(profile)))
            return fp8kv_cli_usage_error(cmd, "--profile: no profile '%s'", profile);
        return 0;
    }
    const struct fp8kv_format *f = fp8kv_format_by_name(format ? format : "e4m3fn");
    if (!f)
        return fp8kv_cli_usage_error(cmd, "--format: '%s' is not one of e4m3fn|e4m3fnuz", format);
    int o = FP8KV_OVERFLOW_SATFINITE, i = FP8KV_INF_CLAMP;
    if (overflow && (o = fp8kv_cli_parse_choice(cmd, "overflow", overflow, fp8kv_overflow_names,
                                                FP8KV_OVERFLOW_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (inf && (i = fp8kv_cli_parse_choice(cmd, "inf", inf, fp8kv_inf_names, FP8KV_INF_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    *out = fp8kv_profile_find(f->id, (enum fp8kv_overflow)o, (enum fp8kv_inf_policy)i);
    return 0;
}

int fp8kv_cli_parse_seconds(const char *cmd, const char *option, const char *text, double *seconds)
{
    char *end;
    double t = strtod(text, &end);
    if (*text == '\0' || *end || !(t >= 0.001 && t <= 86400.0)) {
        return fp8kv_cli_usage_error(
            cmd, "--%s: '%s' is not a number of seconds from 0.001 to 86400", option, text);
    }
    *seconds = t;
    return 0;
}

int fp8kv_cli_parse_threads(const char *cmd, const char *text, int *threads)
{
    char *end;
    long t = strtol(text, &end, 10);
    if (*text == '\0' || *end || t < 1 || t > 1024)
        return fp8kv_cli_usage_error(cmd, "--threads: '%s' is not a count from 1 to 1024", text);
    *threads = (int)t;
    return 0;
}

int fp8kv_cli_parse_device(const char *cmd, const char *text, int *device)
{
    char *end;
    long d = strtol(text, &end, 10);
    if (*text == '\0' || *end || d < 0 || d > 255)
        return fp8kv_cli_usage_error(cmd, "--device: '%s' is not a device number from 0 to 255",
                                     text);
    *device = (int)d;
    return 0;
}

int fp8kv_cli_subject_error(const char *cmd, int status)
{
    if (status != FP8KV_ERR_SUBJECT)
        return fp8kv_cli_input_error(cmd);
    fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
    fprintf(stderr, "fp8kv %s: the harness is intact; no verdict (exit %d)\n", cmd,
            FP8KV_EXIT_SUBJECT_FAILED);
    return FP8KV_EXIT_SUBJECT_FAILED;
}

int fp8kv_cli_parse_choice(const char *cmd, const char *option, const char *value,
                           const char *const *names, int count)
{
    int i = fp8kv_name_index(names, count, value);
    if (i >= 0)
        return i;
    char accepted[256] = "";
    for (int k = 0; k < count; k++) {
        strncat(accepted, names[k], sizeof accepted - strlen(accepted) - 1);
        if (k + 1 < count)
            strncat(accepted, "|", sizeof accepted - strlen(accepted) - 1);
    }
    fp8kv_cli_usage_error(cmd, "--%s: '%s' is not one of %s", option, value, accepted);
    return -1;
}

int fp8kv_cli_parse_args(const char *cmd, int argc, char **argv,
                         const struct fp8kv_cli_option *options, int count,
                         struct fp8kv_cli_args *out)
{
    memset(out, 0, sizeof *out);
    out->positional = argv + 1;
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || strncmp(arg, "--", 2) != 0) {
            out->positional[out->npositional++] = argv[i];
            continue;
        }
        if (arg[2] == '\0') {
            only_positional = 1;
            continue;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 4 && strncmp(name, "help", 4) == 0 && !eq) {
            out->help = 1;
            continue;
        }
        int k = 0;
        while (k < count &&
               !(strlen(options[k].name) == len && strncmp(options[k].name, name, len) == 0))
            k++;
        if (k == count)
            return fp8kv_cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
        if (out->value[k])
            return fp8kv_cli_usage_error(cmd, "option --%s given twice (give each option once)",
                                         options[k].name);
        if (!options[k].takes_value) {
            if (eq)
                return fp8kv_cli_usage_error(cmd, "option --%s takes no value", options[k].name);
            out->value[k] = "";
        } else if (eq) {
            out->value[k] = eq + 1;
        } else if (i + 1 < argc) {
            out->value[k] = argv[++i];
        } else {
            return fp8kv_cli_usage_error(cmd, "option --%s needs a value", options[k].name);
        }
    }
    return 0;
}

int fp8kv_cli_begin(const char *cmd, const char *help, int argc, char **argv,
                    const struct fp8kv_cli_option *options, int count, struct fp8kv_cli_args *out,
                    int *exit_code)
{
    *exit_code = fp8kv_cli_parse_args(cmd, argc, argv, options, count, out);
    if (*exit_code != 0)
        return 1;
    if (out->help) {
        fputs(help, stdout);
        return 1; /* exit 0 */
    }
    if (out->npositional) {
        *exit_code = fp8kv_cli_usage_error(cmd, "unexpected argument '%s'", out->positional[0]);
        return 1;
    }
    return 0;
}

/* fp8kv_cli_parse_value rounds decimals with the oracle (encode, decode) */
#ifdef FP8KV_HAVE_ORACLE
/* Whether s is "0x" followed by one or more hex digits and nothing else. */
static int is_hex_digits(const char *s)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
        return 0;
    for (const char *p = s + 2; *p; p++)
        if (!isxdigit((unsigned char)*p))
            return 0;
    return 1;
}

int fp8kv_cli_parse_value(enum fp8kv_dtype dtype, const char *text, uint32_t *bits)
{
    /* one rule: "0x" + hex digits is a bit pattern and takes no sign; a hex float carries its
     * binary exponent ("0x1.dp+8", "-0x1p0"); a sign before bare hex digits is refused, since
     * it could mean either; blanks are never part of an input */
    for (const char *p = text; *p; p++)
        if (isspace((unsigned char)*p))
            return fp8kv_fail("'%s' holds a blank: an input is one word, one per argument or line",
                              text);
    if ((text[0] == '-' || text[0] == '+') && is_hex_digits(text + 1))
        return fp8kv_fail("'%s' is ambiguous: a bit pattern takes no sign (the sign is its top "
                          "bit), and a hex float needs its binary exponent (%sp0)",
                          text, text);
    if (is_hex_digits(text)) {
        errno = 0;
        unsigned long long v = strtoull(text, NULL, 16);
        unsigned long long limit = dtype == FP8KV_DTYPE_F32 ? 0xFFFFFFFFull : 0xFFFFull;
        if (errno || v > limit)
            return fp8kv_fail("'%s' is too large for %s bits (at most 0x%llx)", text,
                              fp8kv_dtype_names[dtype], limit);
        *bits = (uint32_t)v;
        return FP8KV_OK;
    }
    if (fp8kv_oracle_parse(dtype, text, bits) != 0)
        return fp8kv_fail("'%s' is not a valid %s input: give hex bits (0x43e80001), a hex float "
                          "(0x1.dp+8) or a decimal (464, -1.0625, inf, nan)",
                          text, fp8kv_dtype_names[dtype]);
    return FP8KV_OK;
}
#endif

int fp8kv_cli_parse_code(const char *text, uint8_t *code)
{
    const char *digits = text;
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        digits += 2;
    size_t n = strlen(digits);
    if (n < 1 || n > 2 || !isxdigit((unsigned char)digits[0]) ||
        (n == 2 && !isxdigit((unsigned char)digits[1])))
        return fp8kv_fail("'%s' is not an fp8 code: give two hex digits (00..ff)", text);
    *code = (uint8_t)strtoul(digits, NULL, 16);
    return FP8KV_OK;
}

void fp8kv_cli_inputs_open(struct fp8kv_cli_inputs *in, int argc, char **argv, int first)
{
    memset(in, 0, sizeof *in);
    in->args = argv + first;
    in->count = argc > first ? argc - first : 0;
    in->from_stdin = in->count == 0;
}

const char *fp8kv_cli_inputs_next(struct fp8kv_cli_inputs *in)
{
    if (!in->from_stdin) {
        if (in->next == in->count)
            return NULL;
        snprintf(in->where, sizeof in->where, "argument %d", in->next + 1);
        return in->args[in->next++];
    }
    for (;;) {
        ssize_t n = getline(&in->line, &in->cap, stdin);
        if (n < 0)
            return NULL;
        in->line_number++;
        char *s = in->line;
        in->invalid = (ssize_t)strlen(s) != n; /* a NUL would cut the input short unseen */
        if (in->invalid) {
            snprintf(in->where, sizeof in->where, "stdin line %ld", in->line_number);
            fp8kv_fail("the line holds a NUL byte: an input is the whole line");
            return s;
        }
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            s[--n] = '\0';
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || *s == '#')
            continue;
        snprintf(in->where, sizeof in->where, "stdin line %ld", in->line_number);
        return s;
    }
}

void fp8kv_cli_inputs_close(struct fp8kv_cli_inputs *in)
{
    free(in->line);
    in->line = NULL;
}
