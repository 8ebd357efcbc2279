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
#include "fp8kv/cpu_isa.h"
#include "child.h"
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

void fp8kv_cli_list(const char *const *names, int count, const char *prefix, const char *separator,
                    char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s%s", i ? separator : "", prefix, names[i]);
        used += n > 0 ? (size_t)n : 0;
    }
}

int fp8kv_cli_unknown_choice(const char *cmd, const char *what, const char *prefix,
                             const char *given, const char *const *names, int count)
{
    char accepted[512], text[80];
    fp8kv_cli_list(names, count, prefix, ", ", accepted, sizeof accepted);
    const char *near = fp8kv_names_nearest(given, names, count);
    if (near)
        snprintf(text, sizeof text, "; did you mean '%s%s'?", prefix, near);
    else
        text[0] = '\0';
    return fp8kv_cli_usage_error(cmd, "%s '%s%s'%s (valid: %s)", what, prefix, given, text,
                                 accepted);
}

/* Where fp8kv_cli_vectors_dir looked when it found no vector directory ("" when it found one or
 * was given one): said with the error that follows. */
static char vectors_searched[8192];

int fp8kv_cli_input_error(const char *cmd)
{
    fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
    if (vectors_searched[0])
        fprintf(stderr,
                "fp8kv %s: no vector directory was found; looked in: %s (give --vectors DIR or "
                "set FP8KV_VECTORS)\n",
                cmd, vectors_searched);
    return FP8KV_EXIT_USAGE;
}

/* Whether path is a directory; notes it among the places searched either way. */
static int vectors_at(const char *path, const char *why)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 1;
    size_t used = strlen(vectors_searched);
    snprintf(vectors_searched + used, sizeof vectors_searched - used, "%s%s (%s)", used ? ", " : "",
             path, why);
    return 0;
}

const char *fp8kv_cli_vectors_dir(const char *given)
{
    vectors_searched[0] = '\0';
    if (given)
        return given;
    const char *env = getenv("FP8KV_VECTORS");
    if (env && *env)
        return env;
    static char beside[4096]; /* an installed tree moved elsewhere: <bin>/../share/... */
    const char *found = NULL;
    if (vectors_at("vectors", "$FP8KV_VECTORS unset; the current directory's"))
        found = "vectors";
    else if (fp8kv_cli_beside_exe("../share/fp8kv/vectors", beside, sizeof beside) == 0 &&
             vectors_at(beside, "beside this executable"))
        found = beside;
#ifdef FP8KV_INSTALLED_VECTORS
    else if (vectors_at(FP8KV_INSTALLED_VECTORS, "where it was installed"))
        found = FP8KV_INSTALLED_VECTORS;
#endif
    if (!found)
        return "vectors"; /* the reader names it missing; vectors_searched says the rest */
    vectors_searched[0] = '\0';
    return found;
}

const char *fp8kv_cli_vectors_searched(void)
{
    return vectors_searched;
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

const struct fp8kv_profile *fp8kv_cli_profile(const char *cmd, const char *name)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name(name);
    if (p)
        return p;
    const char *names[64];
    const int n = fp8kv_profile_names(names, 64);
    fp8kv_cli_unknown_choice(cmd, "--profile: no profile", "", name, names, n);
    return NULL;
}

const struct fp8kv_format *fp8kv_cli_format(const char *cmd, const char *name)
{
    const struct fp8kv_format *f = fp8kv_format_by_name(name);
    if (f)
        return f;
    const char *names[FP8KV_FORMAT_COUNT];
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        names[i] = fp8kv_formats[i].name;
    fp8kv_cli_unknown_choice(cmd, "--format: unknown value", "", name, names, FP8KV_FORMAT_COUNT);
    return NULL;
}

int fp8kv_cli_parse_profile(const char *cmd, const char *profile, const char *format,
                            const char *overflow, const char *inf, const struct fp8kv_profile **out)
{
    if (profile && (format || overflow || inf))
        return fp8kv_cli_usage_error(cmd, "give --profile or --format/--overflow/--inf, not both");
    if (profile)
        return (*out = fp8kv_cli_profile(cmd, profile)) ? 0 : FP8KV_EXIT_USAGE;
    const struct fp8kv_format *f =
        format ? fp8kv_cli_format(cmd, format) : &fp8kv_formats[FP8KV_DEFAULT_FORMAT];
    if (!f)
        return FP8KV_EXIT_USAGE;
    int o = FP8KV_DEFAULT_OVERFLOW, i = FP8KV_DEFAULT_INF;
    if (overflow && (o = fp8kv_cli_parse_choice(cmd, "overflow", overflow, fp8kv_overflow_names,
                                                FP8KV_OVERFLOW_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (inf && (i = fp8kv_cli_parse_choice(cmd, "inf", inf, fp8kv_inf_names, FP8KV_INF_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    *out = fp8kv_profile_find(f->id, (enum fp8kv_overflow)o, (enum fp8kv_inf_policy)i);
    if (*out)
        return 0;
    /* a combination no profile has (e5m2 --overflow nan, e5m2fnuz --overflow inf, ...) */
    char list[512] = "";
    for (int k = 0; k < fp8kv_profile_count; k++)
        if (fp8kv_profiles[k].format == f) {
            const size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                     fp8kv_profiles[k].name);
        }
    return fp8kv_cli_usage_error(
        cmd, "no profile of %s with overflow %s%s%s (%s has: %s)", f->name, fp8kv_overflow_names[o],
        o == FP8KV_OVERFLOW_SATFINITE ? " and inf " : "",
        o == FP8KV_OVERFLOW_SATFINITE ? fp8kv_inf_names[i] : "", f->name, list);
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

int fp8kv_cli_use_isa(const char *cmd, const char *text)
{
    char have[64] = "";
    for (int i = 0; i < FP8KV_ISA_COUNT; i++)
        if (fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)i))
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", *have ? ", " : "",
                     fp8kv_cpu_isa_names[i]);
    enum fp8kv_cpu_isa isa;
    if (fp8kv_cpu_isa_parse(text, &isa) != 0)
        return fp8kv_cli_usage_error(cmd, "--isa: '%s' is not scalar, avx2 or avx512", text);
    if (fp8kv_cpu_isa_use(isa) != 0) {
        fprintf(stderr,
                "fp8kv %s: --isa %s: not available in this build on this processor (it "
                "has: %s)\n",
                cmd, text, have);
        return FP8KV_EXIT_UNAVAILABLE;
    }
    return 0;
}

int fp8kv_cli_use_worker_memory(const char *cmd, const char *text)
{
    size_t bytes;
    if (fp8kv_child_parse_memory(text, &bytes) != 0)
        return fp8kv_cli_usage_error(cmd,
                                     "--worker-memory: '%s' is not a size (bytes, or a number "
                                     "followed by K, M or G; 0: no limit)",
                                     text);
    fp8kv_child_set_memory(bytes);
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

int fp8kv_cli_parse_named_choice(const char *cmd, const char *option, const char *noun,
                                 const char *value, const char *const *names, int count)
{
    int i = fp8kv_name_index(names, count, value);
    if (i >= 0)
        return i;
    char what[64];
    snprintf(what, sizeof what, "--%s: unknown %s", option, noun);
    fp8kv_cli_unknown_choice(cmd, what, "", value, names, count);
    return -1;
}

int fp8kv_cli_parse_choice(const char *cmd, const char *option, const char *value,
                           const char *const *names, int count)
{
    return fp8kv_cli_parse_named_choice(cmd, option, "value", value, names, count);
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
        if (!only_positional && strcmp(arg, "-h") == 0) {
            out->help = 1;
            continue;
        }
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
        if (k == count) {
            const char *names[CLI_MAX_OPTIONS + 1];
            for (int o = 0; o < count; o++)
                names[o] = options[o].name;
            names[count] = "help";
            char given[64];
            snprintf(given, sizeof given, "%.*s", (int)(len < 63 ? len : 63), name);
            return fp8kv_cli_unknown_choice(cmd, "unknown option", "--", given, names, count + 1);
        }
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
        fp8kv_cli_print_help(help, stdout);
        return 1; /* exit 0 */
    }
    if (out->npositional) {
        *exit_code = fp8kv_cli_usage_error(cmd, "unexpected argument '%s'", out->positional[0]);
        return 1;
    }
    return 0;
}

/* A decimal or hex float rounded once to dtype: by the oracle when this build has it; else, for
 * f32 only, by strtof (correctly rounded in glibc; the cli_input fuzzer holds the two equal). */
static int round_value(enum fp8kv_dtype dtype, const char *text, uint32_t *bits)
{
#ifdef FP8KV_HAVE_ORACLE
    return fp8kv_oracle_parse(dtype, text, bits);
#else
    if (dtype != FP8KV_DTYPE_F32)
        return fp8kv_fail("rounding a decimal to %s needs the oracle (FP8KV_WITH_ORACLE=ON)",
                          fp8kv_dtype_names[dtype]);
    char *end;
    errno = 0;
    const float f = strtof(text, &end);
    if (end == text || *end)
        return FP8KV_ERR;
    memcpy(bits, &f, sizeof *bits);
    return FP8KV_OK;
#endif
}

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
    if (round_value(dtype, text, bits) != 0)
        return fp8kv_fail("'%s' is not a valid %s input: give hex bits (0x43e80001), a hex float "
                          "(0x1.dp+8) or a decimal (464, -1.0625, inf, nan)",
                          text, fp8kv_dtype_names[dtype]);
    return FP8KV_OK;
}

int fp8kv_cli_parse_scale(const char *cmd, const char *text, uint32_t *bits)
{
    if (fp8kv_cli_parse_value(FP8KV_DTYPE_F32, text, bits) != 0)
        return fp8kv_cli_usage_error(cmd, "--scale: %s", fp8kv_last_error());
    const uint32_t mag = *bits & 0x7FFFFFFFu;
    if (mag == 0 || mag >= 0x7F800000u)
        return fp8kv_cli_usage_error(cmd,
                                     "--scale: '%s' is %s: a store's scale is a finite nonzero "
                                     "f32 (a negative one mirrors the codes)",
                                     text,
                                     mag == 0             ? "zero"
                                     : mag == 0x7F800000u ? "infinite"
                                                          : "a NaN");
    return 0;
}

int fp8kv_cli_parse_kernel_model(const char *cmd, const char *text, enum fp8kv_scale_model *model)
{
    const int m = fp8kv_cli_parse_choice(cmd, "model", text, fp8kv_model_names, FP8KV_MODEL_COUNT);
    if (m < 0)
        return FP8KV_EXIT_USAGE;
    if (fp8kv_kernel_model_check((enum fp8kv_scale_model)m) != 0)
        return fp8kv_cli_usage_error(cmd, "--model: %s", fp8kv_last_error());
    *model = (enum fp8kv_scale_model)m;
    return 0;
}

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
    in->count = argc > first ? argc - first : 0;
    in->args = in->count ? argv + first : NULL; /* ver reads stdin only: argv may be NULL */
    in->from_stdin = in->count == 0;
}

void fp8kv_cli_inputs_from(struct fp8kv_cli_inputs *in, FILE *stream, const char *name)
{
    in->from_stdin = 1;
    in->stream = stream;
    in->name = name;
}

/* read_line: the next line of f into in->line (at most FP8KV_CLI_LINE_MAX bytes, NUL-ended, its
 * newline dropped), its length in *len: 1, 0 at the end of the input, or FP8KV_ERR with a
 * message: a line over the cap (refused when the cap is reached: no more is read or kept) or a
 * failed read (the end of the input is only ever an EOF without an error). */
static int read_line(struct fp8kv_cli_inputs *in, FILE *f, size_t *len)
{
    if (!in->line) {
        in->cap = (size_t)FP8KV_CLI_LINE_MAX + 1;
        if (!(in->line = malloc(in->cap)))
            return fp8kv_fail("out of memory for a line buffer of %zu bytes", in->cap);
    }
    size_t n = 0;
    int c;
    errno = 0;
    while ((c = getc_unlocked(f)) != EOF && c != '\n') {
        if (n == (size_t)FP8KV_CLI_LINE_MAX)
            return fp8kv_fail("the line is longer than %d bytes (FP8KV_CLI_LINE_MAX, 1 MiB), the "
                              "most an input line may be",
                              FP8KV_CLI_LINE_MAX);
        in->line[n++] = (char)c;
    }
    if (c == EOF && ferror(f))
        return fp8kv_fail("cannot read it: %s (a failed read is not the end of the input)",
                          errno ? strerror(errno) : "read error");
    if (c == EOF && n == 0)
        return 0;
    in->line[n] = '\0';
    *len = n;
    return 1;
}

const char *fp8kv_cli_inputs_next(struct fp8kv_cli_inputs *in)
{
    if (!in->from_stdin) {
        if (in->next == in->count)
            return NULL;
        snprintf(in->where, sizeof in->where, "argument %d", in->next + 1);
        return in->args[in->next++];
    }
    const char *name = in->name ? in->name : "stdin";
    FILE *f = in->stream ? in->stream : stdin;
    for (;;) {
        size_t n = 0;
        const int got = in->failed ? 0 : read_line(in, f, &n);
        if (got == 0)
            return NULL;
        snprintf(in->where, sizeof in->where, "%.200s line %ld", name, ++in->line_number);
        if (got < 0) { /* the stream is given up: nothing past the line that failed is read */
            in->failed = in->invalid = 1;
            return "";
        }
        char *s = in->line;
        in->invalid = strlen(s) != n; /* a NUL would cut the input short unseen */
        if (in->invalid) {
            fp8kv_fail("the line holds a NUL byte: an input is the whole line");
            return s;
        }
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            s[--n] = '\0';
        while (isspace((unsigned char)*s))
            s++;
        if (*s != '\0' && *s != '#')
            return s;
    }
}

/* Whether a file of this mode is read as lines: a regular file or a pipe. */
static int is_lines_file(mode_t mode)
{
    return S_ISREG(mode) || S_ISFIFO(mode);
}

FILE *fp8kv_cli_open_lines(const char *cmd, const char *option, const char *path)
{
    char what[64] = "";
    if (option)
        snprintf(what, sizeof what, "--%s ", option);
    struct stat st;
    if (stat(path, &st) != 0) {
        fp8kv_cli_usage_error(cmd, "%s%s: cannot open: %s", what, path, strerror(errno));
        return NULL;
    }
    /* the kind first, by name: opening a device may act on it; a FIFO is opened blocking, so
     * that it waits for its writer instead of reading as an empty input */
    if (!is_lines_file(st.st_mode)) {
        fp8kv_cli_usage_error(cmd, "%s%s: %s, not a file of lines (a regular file or a pipe)", what,
                              path,
                              S_ISDIR(st.st_mode)    ? "a directory"
                              : S_ISCHR(st.st_mode)  ? "a character device"
                              : S_ISBLK(st.st_mode)  ? "a block device"
                              : S_ISSOCK(st.st_mode) ? "a socket"
                                                     : "not a regular file");
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fp8kv_cli_usage_error(cmd, "%s%s: cannot open: %s", what, path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0 || !is_lines_file(st.st_mode)) {
        fclose(f);
        fp8kv_cli_usage_error(cmd, "%s%s: replaced by another kind of file while it was opened",
                              what, path);
        return NULL;
    }
    return f;
}

void fp8kv_cli_inputs_close(struct fp8kv_cli_inputs *in)
{
    free(in->line);
    in->line = NULL;
}
