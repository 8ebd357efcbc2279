/* cli.h — what the fp8kv subcommands share: exit codes, option parsing, messages. */
#ifndef FP8KV_CLI_H
#define FP8KV_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fp8kv/checks.h"
#include "fp8kv/spec.h"
#include "report/json.h"

/* Exit codes of every command (docs/DESIGN.md §6). */
enum fp8kv_cli_exit {
    FP8KV_EXIT_CONFORMANT = 0,
    FP8KV_EXIT_NONCONFORMANT = 1,
    FP8KV_EXIT_USAGE = 2,          /* bad arguments or bad input */
    FP8KV_EXIT_UNAVAILABLE = 3,    /* the target asked for is not there */
    FP8KV_EXIT_SUBJECT_FAILED = 4, /* the subject (a plugin) crashed or hung; the harness did not */
};

/* A subcommand: name, one-line summary, and its entry point (argv[0] is the command name). */
struct fp8kv_cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

int fp8kv_cmd_encode(int argc, char **argv);
int fp8kv_cmd_decode(int argc, char **argv);
int fp8kv_cmd_encode_block(int argc, char **argv);
int fp8kv_cmd_decode_block(int argc, char **argv);
int fp8kv_cmd_gen(int argc, char **argv);
int fp8kv_cmd_verify(int argc, char **argv);
int fp8kv_cmd_sweep(int argc, char **argv);
int fp8kv_cmd_run(int argc, char **argv);
int fp8kv_cmd_bench(int argc, char **argv);
int fp8kv_cmd_report(int argc, char **argv);
int fp8kv_cmd_verify_stream(int argc, char **argv);
int fp8kv_cmd_audit(int argc, char **argv);
int fp8kv_cmd_judge_kv(int argc, char **argv);
int fp8kv_cmd_suite(int argc, char **argv);
int fp8kv_cmd_check_kv(int argc, char **argv);
int fp8kv_cmd_ver(int argc, char **argv);
int fp8kv_cmd_version(int argc, char **argv);
int fp8kv_cmd_merge(int argc, char **argv);

/* fp8kv_cli_vectors_dir: the vector directory to read: the --vectors value when given, else
 * $FP8KV_VECTORS, else ./vectors when it exists, else the installed vectors (../share/fp8kv/
 * vectors beside this executable, or where it was installed), else "vectors" (whose absence
 * the reader then names; fp8kv_cli_input_error then lists every place looked in). */
const char *fp8kv_cli_vectors_dir(const char *given);

/* fp8kv_cli_vectors_searched: where the last fp8kv_cli_vectors_dir call looked when it found no
 * vector directory, in words ("" when it was given or found one). */
const char *fp8kv_cli_vectors_searched(void);

/* fp8kv_cli_beside_exe: "<directory of this executable>/<relative>" into buf. 0, or FP8KV_ERR. */
int fp8kv_cli_beside_exe(const char *relative, char *buf, size_t size);

/* fp8kv_cli_profile: the profile called name, or NULL after a usage message listing the
 * profiles (with the nearest one). */
const struct fp8kv_profile *fp8kv_cli_profile(const char *cmd, const char *name);

/* fp8kv_cli_format: the format called name, or NULL after a usage message listing the formats. */
const struct fp8kv_format *fp8kv_cli_format(const char *cmd, const char *name);

/* fp8kv_cli_parse_profile: the profile named by --profile, or made of --format, --overflow and
 * --inf (FP8KV_DEFAULT_FORMAT, _OVERFLOW, _INF when absent: fp8kv_default_profile() when all
 * are); any of them may be NULL. Returns 0 with *out set, or FP8KV_EXIT_USAGE after a
 * message. */
int fp8kv_cli_parse_profile(const char *cmd, const char *profile, const char *format,
                            const char *overflow, const char *inf,
                            const struct fp8kv_profile **out);

/* fp8kv_cli_parse_seconds: a --timeout value in seconds (0.001 .. 86400): 0, or FP8KV_EXIT_USAGE
 * after a usage message. */
int fp8kv_cli_parse_seconds(const char *cmd, const char *option, const char *text, double *seconds);

/* fp8kv_cli_subject_error: for a status from a check: FP8KV_ERR_SUBJECT prints the crash or hang
 * and that the harness is intact, and gives FP8KV_EXIT_SUBJECT_FAILED; another error prints the
 * message and gives FP8KV_EXIT_USAGE. */
int fp8kv_cli_subject_error(const char *cmd, int status);

/* fp8kv_cli_parse_threads: a --threads value (1..1024): 0, or FP8KV_EXIT_USAGE after a usage
 * message. */
int fp8kv_cli_parse_threads(const char *cmd, const char *text, int *threads);

/* fp8kv_cli_use_isa: a --isa value: the CPU subjects' encoders run the loop of that instruction
 * set (fp8kv/cpu_isa.h) from now on. 0; FP8KV_EXIT_USAGE for a name that is none, or
 * FP8KV_EXIT_UNAVAILABLE where this build or processor lacks it, after a message naming those
 * it has. */
int fp8kv_cli_use_isa(const char *cmd, const char *text);

/* The --isa line of a command's --help. */
#define FP8KV_CLI_ISA_HELP                                                                         \
    "  --isa I             the CPU codecs' loops: scalar | avx2 | avx512 (default: the widest\n"   \
    "                      the processor has)\n"

/* fp8kv_cli_use_worker_memory: a --worker-memory value (bytes, or a number followed by K, M or
 * G; 0: none): the memory of every plugin worker started from now on (child.h's
 * fp8kv_child_set_memory). 0, or FP8KV_EXIT_USAGE after a usage message. */
int fp8kv_cli_use_worker_memory(const char *cmd, const char *text);

/* fp8kv_cli_parse_device: a --device value (0..255): 0, or FP8KV_EXIT_USAGE after a usage message.
 */
int fp8kv_cli_parse_device(const char *cmd, const char *text, int *device);

/* fp8kv_cli_bench_gpu: `fp8kv bench --target hip` (cmd_bench_gpu.c); an exit code. only: a comma
 * list of the figures to measure (copy, store, gather, attention, sweep), NULL for all; an
 * unknown name is a usage error (FP8KV_EXIT_USAGE). */
int fp8kv_cli_bench_gpu(int device, int quick, const char *vectors_dir, const char *only);

/* ---- a sweep check as text (output.c) ---- */

struct fp8kv_check;
/* fp8kv_cli_print_classes: the nonzero per-class mismatch counts of c, one indented line each. */
void fp8kv_cli_print_classes(const struct fp8kv_check *c);

/* fp8kv_cli_print_sweep: prints a sweep's per-class counts, first failures and verdict line;
 * returns FP8KV_EXIT_CONFORMANT or FP8KV_EXIT_NONCONFORMANT. */
int fp8kv_cli_print_sweep(const struct fp8kv_check *c);

/* fp8kv_cli_print_help: prints a command's help text to out, each placeholder in braces
 * replaced from the registry of named choices (fp8kv/choices.h), so that no help text restates
 * a name list:
 *   {CHOICEs}        the names of the choice joined by '|' ({formats}, {mx_rules}, ...)
 *   {CHOICEs:STYLE}  joined in STYLE: bar " | ", comma ", ", or ", " and " or "; or_default and
 *                    comma_default: or, comma with " (default)" after the default; notes: or,
 *                    each name with its note in parentheses; notes_default: notes, "; default"
 *                    in the default's
 *   {default_CHOICE} the choice's default ({default_format}, ...)
 * A placeholder that is none of these is printed as it stands (t_names fails). */
void fp8kv_cli_print_help(const char *text, FILE *out);

/* fp8kv_cli_usage_error: prints "fp8kv <cmd>: <message>" and a pointer to --help on stderr;
 * returns FP8KV_EXIT_USAGE. */
int fp8kv_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* fp8kv_cli_list: names joined by separator, each after prefix, into buf (truncated to size). */
void fp8kv_cli_list(const char *const *names, int count, const char *prefix, const char *separator,
                    char *buf, size_t size);

/* fp8kv_cli_unknown_choice: the one message for a word that is none of the valid ones (an
 * option, an option's value, a command): "<what> '<prefix><given>'; did you mean
 * '<prefix><nearest>'? (valid: ...)", as a usage error. Returns FP8KV_EXIT_USAGE. */
int fp8kv_cli_unknown_choice(const char *cmd, const char *what, const char *prefix,
                             const char *given, const char *const *names, int count);

/* fp8kv_cli_input_error: prints "fp8kv <cmd>: <fp8kv_last_error()>" on stderr, and every place
 * fp8kv_cli_vectors_dir looked in when it found no vector directory; returns FP8KV_EXIT_USAGE. */
int fp8kv_cli_input_error(const char *cmd);

/* An option of a command: "--name VALUE", "--name=VALUE", or a flag "--name". */
struct fp8kv_cli_option {
    const char *name;
    int takes_value;
};

#define CLI_MAX_OPTIONS 16

/* The parsed command line: value[i] is option i's value ("" for a flag that is set, NULL when
 * absent); positional holds the other arguments in order. "--help" and "-h" are always
 * accepted. */
struct fp8kv_cli_args {
    const char *value[CLI_MAX_OPTIONS];
    int help;
    char **positional;
    int npositional;
};

/* fp8kv_cli_parse_args: parses argv[1..argc) against options (count entries). Anything not starting
 * with "--" is positional, so negative numbers need no quoting; "--" ends the options.
 * positional reuses argv's storage. Returns 0, or FP8KV_EXIT_USAGE after a message. */
int fp8kv_cli_parse_args(const char *cmd, int argc, char **argv,
                         const struct fp8kv_cli_option *options, int count,
                         struct fp8kv_cli_args *out);

/* fp8kv_cli_begin: fp8kv_cli_parse_args, then what every command without positional arguments does
 * alike: --help prints help (exit 0), a stray argument is a usage error. Returns 0 to go on,
 * or 1 when the command is done, with its exit code in *exit_code. */
int fp8kv_cli_begin(const char *cmd, const char *help, int argc, char **argv,
                    const struct fp8kv_cli_option *options, int count, struct fp8kv_cli_args *out,
                    int *exit_code);

/* fp8kv_cli_parse_choice: the index of value in names, or -1 after a usage message naming the
 * option ("--<option>: unknown value"), the accepted values and the nearest one
 * (fp8kv_cli_unknown_choice). fp8kv_cli_parse_named_choice: the same, the message saying
 * "unknown <noun>". */
int fp8kv_cli_parse_choice(const char *cmd, const char *option, const char *value,
                           const char *const *names, int count);
int fp8kv_cli_parse_named_choice(const char *cmd, const char *option, const char *noun,
                                 const char *value, const char *const *names, int count);

/* fp8kv_cli_parse_value: an input value of dtype from text: hex bits ("0x43e80001"; for f16/bf16
 * at most 0xffff), a hex float ("0x1.dp+8") or a decimal ("464", "-inf", "nan"), rounded
 * once to dtype (without the oracle in the build, f32 only). Returns 0 or FP8KV_ERR with a
 * message. */
int fp8kv_cli_parse_value(enum fp8kv_dtype dtype, const char *text, uint32_t *bits);

/* fp8kv_cli_parse_scale: a --scale value (an f32 by fp8kv_cli_parse_value's rule) that a store
 * can use: finite and nonzero (negative allowed: it mirrors the codes). 0 with *bits, or
 * FP8KV_EXIT_USAGE after a message. */
int fp8kv_cli_parse_scale(const char *cmd, const char *text, uint32_t *bits);

/* fp8kv_cli_parse_kernel_model: a --model value a kernel computes (fp8kv_is_kernel_model; the
 * others are refused with fp8kv_kernel_model_check's message): 0, or FP8KV_EXIT_USAGE after a
 * message. */
int fp8kv_cli_parse_kernel_model(const char *cmd, const char *text, enum fp8kv_scale_model *model);

/* fp8kv_cli_parse_code: an fp8 code written as two hex digits ("7e", also "0x7e"). 0 or FP8KV_ERR.
 */
int fp8kv_cli_parse_code(const char *text, uint8_t *code);

/* The longest line a command reads (encode, decode, ver, encode-block, decode-block), its
 * newline not counted: 1 MiB, far more than any input line needs (32 values of a block written
 * as exact decimals take under 5 KiB). A longer line is refused when the cap is reached, before
 * more memory is spent on it. */
#define FP8KV_CLI_LINE_MAX (1 << 20)

/* The inputs of a calculator command: the remaining arguments when there are any, else the
 * lines of stdin (blank lines and '#' comments skipped, surrounding blanks removed). */
struct fp8kv_cli_inputs {
    char **args;
    int count, next, from_stdin;
    long line_number;
    char *line;       /* FP8KV_CLI_LINE_MAX + 1 bytes, allocated at the first line */
    size_t cap;       /* line's size */
    FILE *stream;     /* the lines' file (NULL: stdin) */
    const char *name; /* its name in messages (NULL: "stdin") */
    char where[256];  /* "argument 3" or "stdin line 12", for messages */
    int invalid;      /* the input just returned is unusable: fp8kv_last_error() says why */
    int failed;       /* a line could not be read: the input ends there */
};

/* fp8kv_cli_inputs_open: inputs from argv[first..argc), or from stdin when that is empty. */
void fp8kv_cli_inputs_open(struct fp8kv_cli_inputs *in, int argc, char **argv, int first);

/* fp8kv_cli_inputs_from: the inputs are the lines of stream, called name in messages. */
void fp8kv_cli_inputs_from(struct fp8kv_cli_inputs *in, FILE *stream, const char *name);

/* fp8kv_cli_inputs_next: the next input, or NULL at the end; when in->invalid is set, the
 * input is refused and fp8kv_last_error() says why: a NUL byte inside a line, a line longer than
 * FP8KV_CLI_LINE_MAX, or a read that failed (EISDIR, EIO, ...: never taken for the end of the
 * input), in->where naming the input and the line. After those two the input ends (the next
 * call returns NULL): nothing past the line is read. Blanks around a line are not part of its
 * input; an argument is taken as it is. */
const char *fp8kv_cli_inputs_next(struct fp8kv_cli_inputs *in);

/* fp8kv_cli_inputs_close: releases the line buffer. */
void fp8kv_cli_inputs_close(struct fp8kv_cli_inputs *in);

/* fp8kv_cli_open_lines: the file of lines at path (the value of --<option>, NULL for a positional
 * argument), opened for reading only when it is a regular file or a pipe (a FIFO, a process
 * substitution, /dev/stdin on a pipe); a directory, a device or a socket is refused before it is
 * opened. NULL after a usage message naming path ("fp8kv <cmd>: --input DIR: a directory, not
 * a file of lines"). */
FILE *fp8kv_cli_open_lines(const char *cmd, const char *option, const char *path);

/* ---- --json FILE|- (output.c) ---------------------------------------------------------- */

/* The --json line of every judging command's help. */
#define FP8KV_CLI_JSON_HELP                                                                        \
    "  --json FILE      also write the verdict as JSON (docs/json.md); '-': the JSON to stdout,\n" \
    "                   the text to stderr\n"

/* fp8kv_cli_json_begin: call before any output when --json was given as path: with "-" the JSON
 * keeps stdout and the text output moves to stderr. 0, or an exit code after a message. */
int fp8kv_cli_json_begin(const char *cmd, const char *path);

/* fp8kv_cli_json_write: writes doc (consumed; NULL is out of memory) to path ("-": the stdout
 * set aside by fp8kv_cli_json_begin); nothing when path is NULL. 0, or FP8KV_EXIT_USAGE after a
 * message. */
int fp8kv_cli_json_write(const char *cmd, const char *path, json_t *doc);

/* fp8kv_cli_verdict_doc: fp8kv_verdict_json(command, verdict, checks) with the keys of extra
 * (consumed; may be NULL) added at the top level. NULL when out of memory. */
json_t *fp8kv_cli_verdict_doc(const char *command, const char *verdict,
                              const struct fp8kv_check *checks, size_t count, json_t *extra);

/* ---- shards, their merge and --device all (shards.c) ------------------------------------- */

#include "fp8kv/shard.h"

/* The help lines of --shard and --device on the commands that split (sweep, audit). */
#define FP8KV_CLI_SHARD_HELP                                                                       \
    "  --shard i/N      judge only shard i of N (0 <= i < N): slice i of each exhaustive domain\n" \
    "                   (the vector sets in shard 0); --json writes the shard's result, which\n"   \
    "                   `fp8kv merge` joins with the others into the unsharded verdict\n"
#define FP8KV_CLI_DEVICE_HELP                                                                      \
    "  --device N|all   (--target hip) the GPU (default 0); all: shard i on GPU i of the "         \
    "visible\n"                                                                                    \
    "                   ones, one process each, merged as `fp8kv merge` does\n"

/* fp8kv_cli_parse_shard: a --shard value "i/N" (fp8kv_shard_parse): 0, or FP8KV_EXIT_USAGE after
 * a usage message. */
int fp8kv_cli_parse_shard(const char *cmd, const char *text, struct fp8kv_shard *out);

/* --device all, as fp8kv_cli_parse_device_or_all gives it. */
#define FP8KV_CLI_ALL_DEVICES (-1)

/* fp8kv_cli_parse_device_or_all: a --device value: a number (fp8kv_cli_parse_device) or "all"
 * (FP8KV_CLI_ALL_DEVICES). 0, or FP8KV_EXIT_USAGE after a usage message. */
int fp8kv_cli_parse_device_or_all(const char *cmd, const char *text, int *device);

/* fp8kv_cli_shard_json: the "shard" object of a shard's document (docs/json.md): index, count,
 * the slice of every domain, and `of`, what makes two documents shards of one pass (consumed). */
json_t *fp8kv_cli_shard_json(struct fp8kv_shard s, json_t *of);

/* fp8kv_cli_verdict_shard_doc: fp8kv_cli_verdict_doc, and for a shard (s.count > 0) its "shard"
 * object (fp8kv_cli_shard_json(s, of)) and each check written by fp8kv_check_json_shard; of is
 * consumed either way. */
json_t *fp8kv_cli_verdict_shard_doc(const char *command, const char *verdict,
                                    const struct fp8kv_check *checks, size_t count, json_t *extra,
                                    struct fp8kv_shard s, json_t *of);

/* fp8kv_cli_print_shard: for a shard (s.count > 0), the line that says which inputs it judged. */
void fp8kv_cli_print_shard(struct fp8kv_shard s, unsigned domains);

/* The merge of one command's shards (fp8kv_cli_sweep_merge, fp8kv_cli_audit_merge): docs[k] is
 * shard k's document (read from paths[k]), all validated by fp8kv_cli_merge_files; an exit code. */
typedef int (*fp8kv_cli_merge_fn)(json_t *const *docs, char *const *paths, int n,
                                  const char *json_path);
/* The commands whose shards a caller merges: {command, its merge}, ended by {NULL, NULL}. */
struct fp8kv_cli_merger {
    const char *command;
    fp8kv_cli_merge_fn merge;
};

/* fp8kv_cli_merge_files: reads the n shard documents at paths, checks that they are the N shards
 * of one pass (same `of`, each index once, the slices of this fp8kv) of a command in mergers, and
 * prints and writes (--json json_path) the merged verdict as the unsharded command would, through
 * that command's merge. An exit code; FP8KV_EXIT_USAGE naming the file and the problem when they
 * are not. */
int fp8kv_cli_merge_files(const char *cmd, char *const *paths, int n, const char *json_path,
                          const struct fp8kv_cli_merger *mergers);

/* fp8kv_cli_on_every_device: --device all: runs this command once per visible GPU k as
 * `--device k --shard k/D --json FILE` (the other options as given in a, skipping the options
 * numbered opt_device, opt_shard and opt_json), in parallel processes, then merges their files
 * (fp8kv_cli_merge_files, through mergers) into the output (--json json_path). An exit code: a
 * child's when one failed (its output shown), FP8KV_EXIT_UNAVAILABLE without a GPU. */
int fp8kv_cli_on_every_device(const char *cmd, const struct fp8kv_cli_args *a,
                              const struct fp8kv_cli_option *options, int count, int opt_device,
                              int opt_shard, int opt_json, const char *json_path,
                              const struct fp8kv_cli_merger *mergers);

/* Each command's merge (cmd_sweep.c, cmd_audit.c). */
int fp8kv_cli_sweep_merge(json_t *const *docs, char *const *paths, int n, const char *json_path);
int fp8kv_cli_audit_merge(json_t *const *docs, char *const *paths, int n, const char *json_path);

/* ---- block codecs (block_options.c: check-block, audit --block, encode-block, decode-block) */

struct fp8kv_block_format;
struct fp8kv_block_under_test;
struct fp8kv_block_plugin;
int fp8kv_cmd_check_block(int argc, char **argv);

/* What the command line says of a block codec: --format/--rule/--model/--target, or --plugin
 * (each NULL when absent); threads (plugin worker processes), timeout, GPU device. */
struct fp8kv_cli_block_choice {
    const char *format, *rule, *model, *target, *plugin;
    int threads;
    double timeout_s;
    int device;
    const char *side; /* the option a rule[:model] came in (audit's "baseline"), or NULL */
};

/* fp8kv_cli_block_format: the block format called name in *out: 0, or FP8KV_EXIT_USAGE after a
 * message naming the formats. */
int fp8kv_cli_block_format(const char *cmd, const char *name,
                           const struct fp8kv_block_format **out);

/* fp8kv_cli_block_subject: the block subject c names under the combination it names (a plugin's:
 * the one it claims; the plugin opened into *plugin, to close with fp8kv_block_plugin_close;
 * else NULL): 0, or an exit code after a message. */
int fp8kv_cli_block_subject(const char *cmd, const struct fp8kv_cli_block_choice *c,
                            struct fp8kv_block_under_test *out, struct fp8kv_block_plugin **plugin);

/* fp8kv_cli_audit_block: `fp8kv audit --block ...` (cmd_audit_block.c; argv[1] is
 * "--block"); an exit code. */
int fp8kv_cli_audit_block(int argc, char **argv);

/* fp8kv_cli_parse_global_scale: an nvfp4 G (finite, > 0, an f32 by fp8kv_cli_parse_value):
 * 0, or FP8KV_EXIT_USAGE after a message. */
int fp8kv_cli_parse_global_scale(const char *cmd, const char *text, float *G);

/* fp8kv_cli_block_rule: the rule called name for format f, or -1 after a usage message naming
 * --<option>: a rule of another format names f's rules; an unknown word gets did-you-mean
 * among f's rules. */
int fp8kv_cli_block_rule(const char *cmd, const char *option, const struct fp8kv_block_format *f,
                         const char *name);

/* fp8kv_cli_block_model: the arithmetic model called name, or -1 after a usage message naming
 * --<option> (did-you-mean). */
int fp8kv_cli_block_model(const char *cmd, const char *option, const char *name);

/* fp8kv_cli_parse_count: text as an unsigned integer in base (0: C prefixes) without a sign,
 * min .. max, into *out: 0, or -1 after a usage message naming --<option> and the range. */
int fp8kv_cli_parse_count(const char *cmd, const char *option, const char *text, int base,
                          unsigned long long min, unsigned long long max, unsigned long long *out);

#endif
