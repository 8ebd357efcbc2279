/* t_cli.c — the fp8kv command line: the calculator interface, exit codes, messages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"

#define run test_run

#define FP8KV FP8KV_EXE

Test(cli, encode_args_exact_lines)
{
    char out[4096];
    cr_assert_eq(run(FP8KV " encode 464 0x43e80001 -0 0x1.dp+8", out, sizeof out), 0);
    cr_assert_str_eq(out, "0x43e80000 7e\n0x43e80001 7e\n0x80000000 80\n0x43e80000 7e\n");
    cr_assert_eq(run(FP8KV " encode --overflow nan 0x43e80001 -inf", out, sizeof out), 0);
    cr_assert_str_eq(out, "0x43e80001 7f\n0xff800000 ff\n");
}

Test(cli, encode_stdin_pipe_and_models)
{
    char out[4096];
    cr_assert_eq(run("printf '0x1334\\n\\n# comment\\n  0x1334  \\n' | " FP8KV
                     " encode --input-dtype f16 --scale 0.1 --model f16_div",
                     out, sizeof out),
                 0);
    cr_assert_str_eq(out, "0x1334 04\n0x1334 04\n"); /* inputs shown in their own dtype */
    cr_assert_eq(run(FP8KV " encode --scale=3.0 --model f32_mul_recip 0x3D63FFFF", out, sizeof out),
                 0);
    cr_assert_str_eq(out, "0x3d63ffff 0a\n");
    cr_assert_eq(run(FP8KV " encode --format e4m3fnuz --overflow nan 248", out, sizeof out), 0);
    cr_assert_str_eq(out, "0x43780000 80\n");
}

Test(cli, decode_lines)
{
    char out[4096];
    cr_assert_eq(run(FP8KV " decode 7e 0x01 ff", out, sizeof out), 0);
    cr_assert_str_eq(out, "7e 0x43e00000\n01 0x3b000000\nff 0xffc00000\n");
    cr_assert_eq(run(FP8KV " decode --output-dtype f16 --scale 1e30 7e", out, sizeof out), 0);
    cr_assert_str_eq(out, "7e 0x7c00\n");
}

Test(cli, bad_input_exit_2_with_message)
{
    char out[4096];
    cr_assert_eq(run(FP8KV " encode 1.5 bogus 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "0x3fc00000 3c\n") == out, "the good input is still answered");
    cr_assert(strstr(out, "argument 2") && strstr(out, "bogus"), "message: %s", out);
    cr_assert_eq(run("printf '1\\nxyz\\n' | " FP8KV " encode 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "stdin line 2"), "message: %s", out);
    cr_assert_eq(run(FP8KV " encode --model nope 1 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "--model") && strstr(out, "nope"), "message: %s", out);
    cr_assert_eq(run(FP8KV " encode --scale 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " encode --input-dtype f16 0x10000 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " decode 100 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " decode --model exact 7e 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " frobnicate 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " gen --vectors 2>&1", out, sizeof out), 2);
}

Test(cli, help_everywhere)
{
    static const char *const commands[] = {"encode", "decode", "gen",           "verify", "sweep",
                                           "run",    "bench",  "verify-stream", "audit"};
    char cmd[256], out[8192];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        snprintf(cmd, sizeof cmd, FP8KV " %s --help", commands[i]);
        cr_assert_eq(run(cmd, out, sizeof out), 0, "%s --help", commands[i]);
        cr_assert(strstr(out, "usage: fp8kv"), "%s --help: %s", commands[i], out);
    }
    cr_assert_eq(run(FP8KV " --help", out, sizeof out), 0);
    cr_assert(strstr(out, "verify"));
}

Test(cli, verify_committed_vectors)
{
    char out[4096];
    cr_assert_eq(run(FP8KV " verify --vectors " FP8KV_SOURCE_DIR "/vectors 2>&1", out, sizeof out),
                 0, "%s", out);
    cr_assert_eq(run(FP8KV " verify --vectors /nonexistent/fp8kv 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "/nonexistent/fp8kv"), "message names the directory: %s", out);
}

Test(cli, run_errors_and_unavailable_target)
{
    char out[4096];
    cr_assert_eq(run(FP8KV " run --target hip 2>&1", out, sizeof out), 3);
    cr_assert(strstr(out, "target unavailable"), "%s", out);
    cr_assert_eq(run(FP8KV " run --target tpu 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " run --profile nope 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " run --threads 0 2>&1", out, sizeof out), 2);
    /* unreadable vectors: exit 2, the file named, and no report left behind */
    cr_assert_eq(run("d=$(mktemp -d) && " FP8KV " run --vectors /nonexistent/v --out $d 2>&1; "
                     "rc=$?; ls $d | sed 's/^/LEFT:/'; rm -rf $d; exit $rc",
                     out, sizeof out),
                 2);
    cr_assert(strstr(out, "/nonexistent/v/"), "%s", out);
    cr_assert_null(strstr(out, "LEFT:"), "no report written: %s", out);
    cr_assert_eq(run(FP8KV " sweep --codec nope 2>&1", out, sizeof out), 2);
    cr_assert_eq(run(FP8KV " sweep 2>&1", out, sizeof out), 2);
}

/* One meaning per input: a NUL cuts nothing short, bare hex digits take no sign, blanks are not
 * part of an argument, an option is given once, and gen --check looks at its directory before
 * it regenerates anything. */
Test(cli, inputs_mean_one_thing)
{
    char out[4096];
    cr_assert_eq(run("printf '0x43e8\\0000001\\n' | " FP8KV " encode 2>&1", out, sizeof out), 2,
                 "%s", out);
    cr_assert(strstr(out, "stdin line 1") && strstr(out, "NUL"), "%s", out);
    cr_assert_eq(run(FP8KV " encode -- -0x1 2>&1", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "ambiguous"), "%s", out);
    cr_assert_eq(run(FP8KV " encode ' 0x1' 2>&1", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(FP8KV " encode 0x1 -0x1p0 ' ' 2>&1", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(FP8KV " encode 0x1 -0x1p0", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(out, "0x00000001 00\n0xbf800000 b8\n");
    cr_assert_eq(run("printf '  0x1  \\n' | " FP8KV " encode", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(out, "0x00000001 00\n");
    cr_assert_eq(run(FP8KV " encode --overflow nan --overflow satfinite 464 2>&1", out, sizeof out),
                 2, "%s", out);
    cr_assert(strstr(out, "--overflow given twice"), "%s", out);
    cr_assert_eq(
        run("timeout 5 " FP8KV " gen --check --vectors /nonexistent/fp8kv 2>&1", out, sizeof out),
        2, "%s", out);
    cr_assert(strstr(out, "/nonexistent/fp8kv"), "%s", out);
    /* the CPU bench's options with the GPU bench: an error before any target is touched
     * (scripts/campaign found exit 3) */
    cr_assert_eq(run(FP8KV " bench --target hip --threads x 2>&1", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "--threads is for the CPU bench"), "%s", out);
    /* MPFR reads '@' exponents and 0b binary; the rule is strtod's grammar (fuzz_cli_input) */
    const char *foreign[] = {"0@-1", "1@2", "0b101", "@inf@", "@nan@"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, FP8KV " encode -- '%s' 2>&1", foreign[i]);
        cr_assert_eq(run(cmd, out, sizeof out), 2, "%s: %s", foreign[i], out);
        cr_assert(strstr(out, "not a valid f32 input"), "%s: %s", foreign[i], out);
    }
}
