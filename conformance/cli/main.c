/* main.c — the fp8kv command line: dispatch to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef FP8KV_VERSION
#define FP8KV_VERSION "unknown"
#endif
#ifndef FP8KV_COMMIT
#define FP8KV_COMMIT ""
#endif

int fp8kv_cmd_version(int argc, char **argv)
{
    static const char help[] =
        "usage: fp8kv version   (also fp8kv --version)\n\n"
        "Prints the version of fp8kv and the git commit of the source tree it\n"
        "was configured from, when that was a git checkout.\n";
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin(argv[0], help, argc, argv, NULL, 0, &a, &rc))
        return rc;
    printf("fp8kv %s (commit %s)\n", FP8KV_VERSION, FP8KV_COMMIT[0] ? FP8KV_COMMIT : "unknown");
    return FP8KV_EXIT_CONFORMANT;
}

#ifndef FP8KV_HAVE_ORACLE
/* Built without the MPFR oracle (FP8KV_WITH_ORACLE=OFF, as on the GPU machine). */
static int cmd_no_oracle(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr,
            "fp8kv %s: not built with the oracle (configure with FP8KV_WITH_ORACLE=ON, "
            "which needs the MPFR and GMP headers)\n",
            argv[0]);
    return FP8KV_EXIT_USAGE;
}
#define fp8kv_cmd_encode cmd_no_oracle
#define fp8kv_cmd_decode cmd_no_oracle
#define fp8kv_cmd_encode_block cmd_no_oracle
#define fp8kv_cmd_decode_block cmd_no_oracle
#define fp8kv_cmd_gen cmd_no_oracle
#define fp8kv_cmd_ver cmd_no_oracle
#define fp8kv_cmd_check_block cmd_no_oracle
#endif

static const struct fp8kv_cli_command commands[] = {
    {"encode", "the oracle's code for f32/f16/bf16 inputs (TestFloat-style filter)",
     fp8kv_cmd_encode},
    {"decode", "the oracle's read value for fp8 codes", fp8kv_cmd_decode},
    {"encode-block", "the oracle's codes of MX / NVFP4 / q8_0 / q4_0 blocks, one block a line",
     fp8kv_cmd_encode_block},
    {"decode-block", "the oracle's f32 values of MX / NVFP4 / q8_0 / q4_0 encoded blocks",
     fp8kv_cmd_decode_block},
    {"gen", "generate the golden vectors (--check: compare with a regeneration)", fp8kv_cmd_gen},
    {"verify", "check a vector directory against MANIFEST.json and SHA256SUMS", fp8kv_cmd_verify},
    {"sweep", "exhaustive sweep of a built-in codec or a codec plugin", fp8kv_cmd_sweep},
    {"verify-stream", "judge a stream of codes for the canonical inputs (any language)",
     fp8kv_cmd_verify_stream},
    {"audit", "exhaustive diff of a codec change (built-in names or plugins), oracle-judged",
     fp8kv_cmd_audit},
    {"merge", "join the shards of a sweep or an audit (--shard i/N --json) into its verdict",
     fp8kv_cmd_merge},
    {"judge-kv", "judge an engine's KV caches and outputs (.npy files) against a golden case",
     fp8kv_cmd_judge_kv},
    {"suite", "list the engine suite's generated cases (or print their committed digests)",
     fp8kv_cmd_suite},
    {"check-kv",
     "every golden KV case through KV kernels: a plugin (fp8kv_kv_kernels_v1) or fp8kv's own",
     fp8kv_cmd_check_kv},
    {"check-block", "judge a block codec (MX, NVFP4: CPU, GPU or a plugin) against the oracle",
     fp8kv_cmd_check_block},
    {"run", "a conformance run of a target, with its report", fp8kv_cmd_run},
    {"bench", "the performance figures: sweep speed, memory, a whole run", fp8kv_cmd_bench},
    {"report", "write a report for a GPU target compiled but not run, or not compiled",
     fp8kv_cmd_report},
    {"ver", "judge 'input code' lines (a file or stdin) against the oracle, TestFloat style",
     fp8kv_cmd_ver},
    {"version", "the version of fp8kv and the commit it was built from", fp8kv_cmd_version},
};
static const int command_count = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *out)
{
    fprintf(out, "usage: fp8kv COMMAND [options]   (fp8kv COMMAND --help for each)\n\n"
                 "fp8kv checks fp8 KV-cache codecs against an exact MPFR oracle.\n\ncommands:\n");
    for (int i = 0; i < command_count; i++)
        fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 ok/conformant, 1 nonconformant, 2 usage or input error, "
                 "3 target unavailable,\n            4 the subject (a plugin) crashed or hung\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return FP8KV_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return FP8KV_EXIT_CONFORMANT;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
        argv[1] = "version";
    for (int i = 0; i < command_count; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            int rc = commands[i].run(argc - 1, argv + 1);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "fp8kv %s: cannot write the output\n", commands[i].name);
                return FP8KV_EXIT_USAGE;
            }
            return rc;
        }
    const char *names[sizeof commands / sizeof commands[0]];
    for (int i = 0; i < command_count; i++)
        names[i] = commands[i].name;
    const char *near = fp8kv_names_nearest(argv[1], names, command_count);
    fprintf(stderr, "fp8kv: unknown command '%s'", argv[1]);
    if (near)
        fprintf(stderr, "; did you mean '%s'?", near);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return FP8KV_EXIT_USAGE;
}
