/* cli.h — what the fp8kv subcommands share: exit codes, option parsing, messages. */
#ifndef FP8KV_CLI_H
#define FP8KV_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/spec.h"

/* Exit codes of every command (docs/DESIGN.md §6). */
enum cli_exit {
    EXIT_CONFORMANT = 0,
    EXIT_NONCONFORMANT = 1,
    EXIT_USAGE = 2,          /* bad arguments or bad input */
    EXIT_UNAVAILABLE = 3,    /* the target asked for is not there */
    EXIT_SUBJECT_FAILED = 4, /* the subject (a plugin) crashed or hung; the harness did not */
};

/* A subcommand: name, one-line summary, and its entry point (argv[0] is the command name). */
struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

int cmd_encode(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_verify_stream(int argc, char **argv);
int cmd_audit(int argc, char **argv);

/* cli_vectors_dir: the vector directory to read: the --vectors value when given, else
 * $FP8KV_VECTORS, else ./vectors when it exists, else the installed vectors (../share/fp8kv/
 * vectors beside this executable, or where it was installed), else "vectors" (whose absence
 * the reader then names). */
const char *cli_vectors_dir(const char *given);

/* cli_beside_exe: "<directory of this executable>/<relative>" into buf. 0, or FP8KV_ERR. */
int cli_beside_exe(const char *relative, char *buf, size_t size);

/* cli_parse_profile: the profile named by --profile, or made of --format (default e4m3fn),
 * --overflow (satfinite) and --inf (clamp); any of them may be NULL. Returns 0 with *out
 * set, or EXIT_USAGE after a message. */
int cli_parse_profile(const char *cmd, const char *profile, const char *format,
                      const char *overflow, const char *inf, const struct fp8kv_profile **out);

/* cli_parse_seconds: a --timeout value in seconds (0.001 .. 86400): 0, or EXIT_USAGE after
 * a usage message. */
int cli_parse_seconds(const char *cmd, const char *option, const char *text, double *seconds);

/* cli_subject_error: for a status from a check: FP8KV_ERR_SUBJECT prints the crash or hang
 * and that the harness is intact, and gives EXIT_SUBJECT_FAILED; another error prints the
 * message and gives EXIT_USAGE. */
int cli_subject_error(const char *cmd, int status);

/* cli_parse_threads: a --threads value (1..1024): 0, or EXIT_USAGE after a usage message. */
int cli_parse_threads(const char *cmd, const char *text, int *threads);

/* cli_parse_device: a --device value (0..255): 0, or EXIT_USAGE after a usage message. */
int cli_parse_device(const char *cmd, const char *text, int *device);

/* cli_bench_gpu: `fp8kv bench --target hip` (cmd_bench_gpu.c); an exit code. only: a comma
 * list of the figures to measure (copy, store, gather, attention, sweep), NULL for all; an
 * unknown name is a usage error (EXIT_USAGE). */
int cli_bench_gpu(int device, int quick, const char *vectors_dir, const char *only);

struct fp8kv_check;
/* cli_print_classes: the nonzero per-class mismatch counts of c, one indented line each. */
void cli_print_classes(const struct fp8kv_check *c);

/* cli_print_sweep: prints a sweep's per-class counts, first failures and verdict line;
 * returns EXIT_CONFORMANT or EXIT_NONCONFORMANT. */
int cli_print_sweep(const struct fp8kv_check *c);

/* cli_usage_error: prints "fp8kv <cmd>: <message>" and a pointer to --help on stderr;
 * returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_input_error: prints "fp8kv <cmd>: <fp8kv_last_error()>" on stderr; returns EXIT_USAGE. */
int cli_input_error(const char *cmd);

/* An option of a command: "--name VALUE", "--name=VALUE", or a flag "--name". */
struct cli_option {
    const char *name;
    int takes_value;
};

#define CLI_MAX_OPTIONS 16

/* The parsed command line: value[i] is option i's value ("" for a flag that is set, NULL when
 * absent); positional holds the other arguments in order. "--help" is always accepted. */
struct cli_args {
    const char *value[CLI_MAX_OPTIONS];
    int help;
    char **positional;
    int npositional;
};

/* cli_parse_args: parses argv[1..argc) against options (count entries). Anything not starting
 * with "--" is positional, so negative numbers need no quoting; "--" ends the options.
 * positional reuses argv's storage. Returns 0, or EXIT_USAGE after a message. */
int cli_parse_args(const char *cmd, int argc, char **argv, const struct cli_option *options,
                   int count, struct cli_args *out);

/* cli_begin: cli_parse_args, then what every command without positional arguments does
 * alike: --help prints help (exit 0), a stray argument is a usage error. Returns 0 to go on,
 * or 1 when the command is done, with its exit code in *exit_code. */
int cli_begin(const char *cmd, const char *help, int argc, char **argv,
              const struct cli_option *options, int count, struct cli_args *out, int *exit_code);

/* cli_parse_choice: the index of value in names, or -1 after a usage message naming the
 * option and the accepted values. */
int cli_parse_choice(const char *cmd, const char *option, const char *value,
                     const char *const *names, int count);

/* cli_parse_value: an input value of dtype from text: hex bits ("0x43e80001"; for f16/bf16
 * at most 0xffff), a hex float ("0x1.dp+8") or a decimal ("464", "-inf", "nan"), rounded
 * once to dtype. Returns 0 or FP8KV_ERR with a message. */
int cli_parse_value(enum fp8kv_dtype dtype, const char *text, uint32_t *bits);

/* cli_parse_code: an fp8 code written as two hex digits ("7e", also "0x7e"). 0 or FP8KV_ERR. */
int cli_parse_code(const char *text, uint8_t *code);

/* The inputs of a calculator command: the remaining arguments when there are any, else the
 * lines of stdin (blank lines and '#' comments skipped, surrounding blanks removed). */
struct cli_inputs {
    char **args;
    int count, next, from_stdin;
    long line_number;
    char *line;
    size_t cap;
    char where[64]; /* "argument 3" or "stdin line 12", for messages */
};

/* cli_inputs_open: inputs from argv[first..argc), or from stdin when that is empty. */
void cli_inputs_open(struct cli_inputs *in, int argc, char **argv, int first);

/* cli_inputs_next: the next input, or NULL at the end. */
const char *cli_inputs_next(struct cli_inputs *in);

/* cli_inputs_close: releases the line buffer. */
void cli_inputs_close(struct cli_inputs *in);

#endif
