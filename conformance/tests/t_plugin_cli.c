/* t_plugin_cli.c — `fp8kv sweep --plugin`, `verify-stream` and `audit` end to end: exit codes,
 * verdict lines, and the harness surviving a crashing or hanging plugin. Full 2^32 sweeps:
 * labelled exhaustive. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define FP8KV FP8KV_EXE
#define VECTORS " --vectors " FP8KV_SOURCE_DIR "/vectors"
#define PLUGIN(name) " " FP8KV_PLUGIN_DIR "/" name ".so"
/* the oracle's codes of every f16 input (the data is the file's last 65536 bytes) */
#define F16_GOLDEN "tail -c 65536 " FP8KV_SOURCE_DIR "/vectors/e4m3fn_satfinite/f16_expected.npy"

static char out[1 << 16];

/* The last line of out. */
static const char *last_line(void)
{
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '\n')
        out[--n] = '\0';
    const char *nl = strrchr(out, '\n');
    return nl ? nl + 1 : out;
}

Test(plugin_cli, a_clean_plugin_is_conformant)
{
    cr_assert_eq(
        test_run(FP8KV " sweep --plugin" PLUGIN("fp8kv_bits_plugin") VECTORS, out, sizeof out), 0,
        "%s", out);
    cr_assert(strstr(out, "matches on the scale pairs: f32_div"), "%s", out);
    cr_assert_str_eq(last_line(), "bits-plugin e4m3fn_satfinite: inputs=4295182306 mismatches=0 "
                                  "verdict=conformant");
}

Test(plugin_cli, a_faulty_plugin_is_nonconformant)
{
    cr_assert_eq(
        test_run(FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_wrong_tie") VECTORS, out, sizeof out),
        1, "%s", out);
    cr_assert(strstr(out, "f32 0x43e80000 (464) => 7f  expected 7e  tie"), "%s", out);
    cr_assert(strstr(last_line(), "verdict=nonconformant"), "%s", out);
}

/* A defect over a range of inputs is one line with its count, and every class that failed has
 * an example line. */
Test(plugin_cli, a_range_of_failures_is_one_folded_line)
{
    cr_assert_eq(test_run(FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_overflow_nan") VECTORS
                          " --json " FP8KV_TEST_TMP "/t_overflow_nan.json",
                          out, sizeof out),
                 1, "%s", out);
    cr_assert(strstr(out, "f32 0x43e80001..0x43f00000 (464.000031..480, 524,288 inputs) => 7f  "
                          "expected 7e  overflow"),
              "%s", out);
    cr_assert(strstr(out, "f32 0xc3e80001..0xc3f00000 (-464.000031..-480, 524,288 inputs) => ff  "
                          "expected fe  overflow"),
              "%s", out);
    cr_assert(strstr(out, "  overflow         1048576 mismatches"), "%s", out);
    cr_assert_eq(test_run("python3 -c 'import json; d = json.load(open(\"" FP8KV_TEST_TMP
                          "/t_overflow_nan.json\")); print(d[\"schema\"], d[\"verdict\"], "
                          "d[\"checks\"][0][\"class_mismatches\"][\"overflow\"])'",
                          out, sizeof out),
                 0, "%s", out);
    cr_assert_str_eq(out, "fp8kv-verdict nonconformant 1048576\n");
    remove(FP8KV_TEST_TMP "/t_overflow_nan.json");
}

/* A decoder wrong in several output dtypes: each wrong (code, scale) pair is one line, under the
 * first read check it fails, naming every dtype it is wrong in; a later check counts it and
 * says where it is listed instead of repeating it. */
Test(plugin_cli, a_pair_wrong_in_several_dtypes_is_listed_once)
{
    cr_assert_eq(test_run(FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_decode_via_f16") VECTORS
                          " --json " FP8KV_TEST_TMP "/t_decode_via_f16.json",
                          out, sizeof out),
                 1, "%s", out);
    cr_assert(strstr(out, "FAIL   read-f32") && strstr(out, "FAIL   read-bf16") &&
                  strstr(out, "PASS   read-f16"),
              "%s", out);
    cr_assert(strstr(out, "78 * 0x43800000 (256) => 0x7f800000  expected 0x47800000  wrong in "
                          "f32, bf16"),
              "%s", out);
    /* every line of the read checks sits under read-f32: none after read-bf16's row */
    const char *bf16 = strstr(out, "FAIL   read-bf16");
    cr_assert(bf16 && !strstr(bf16, " wrong in "), "%s", out);
    /* read-bf16 says where its wrong pairs are listed */
    cr_assert_eq(
        test_run("python3 -c 'import json; d = json.load(open(\"" FP8KV_TEST_TMP
                 "/t_decode_via_f16.json\")); c = [c for c in d[\"checks\"] if c[\"name\"] == "
                 "\"read-bf16\"][0]; print(c[\"mismatches\"], len(c[\"failures\"]), "
                 "c[\"detail\"].split(\"; \")[-1])'",
                 out, sizeof out),
        0, "%s", out);
    cr_assert(strstr(out, " 0 ") && strstr(out, "listed under an earlier read"), "%s", out);
    remove(FP8KV_TEST_TMP "/t_decode_via_f16.json");
}

Test(plugin_cli, crash_and_hang_exit_4_with_the_harness_intact)
{
    cr_assert_eq(test_run(FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_crash") VECTORS " 2>&1", out,
                          sizeof out),
                 4, "%s", out);
    cr_assert(strstr(out, "1048576 inputs 0x3f800000 .. 0x3f8fffff") &&
                  strstr(out, "the harness is intact"),
              "%s", out);
    /* the range in flight bisected to the input that crashes it, and no counts of a pass that
     * did not finish */
    cr_assert(strstr(out, "the first input that crashes it alone: f32 0x3f800000 (1)"), "%s", out);
    cr_assert_null(strstr(out, "mismatches=0"), "%s", out);
    cr_assert_eq(test_run(FP8KV " sweep --timeout 1 --plugin" PLUGIN("fp8kv_plugin_hang") VECTORS
                          " 2>&1",
                          out, sizeof out),
                 4, "%s", out);
    cr_assert(strstr(out, "hung: no answer within 1 s") && strstr(out, "0x3f800000"), "%s", out);
}

Test(plugin_cli, bad_plugins_and_arguments_exit_2)
{
    static const char *const lines[] = {
        FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_abi2") VECTORS,
        FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_no_symbol") VECTORS,
        FP8KV " sweep --plugin" PLUGIN("fp8kv_plugin_bad_format") VECTORS,
        FP8KV " sweep --plugin /nonexistent.so" VECTORS,
        FP8KV " sweep --plugin" PLUGIN("fp8kv_bits_plugin") " --model exact" VECTORS,
        FP8KV " sweep --plugin" PLUGIN("fp8kv_bits_plugin") " --profile e4m3fn_nan" VECTORS,
        FP8KV " sweep --plugin" PLUGIN("fp8kv_bits_plugin") " --codec bits" VECTORS,
        FP8KV " sweep --plugin" PLUGIN("fp8kv_bits_plugin") " --vectors /nonexistent",
        FP8KV " audit --baseline bits" VECTORS,
        FP8KV " audit --baseline bitz --candidate bits" VECTORS,
        FP8KV " verify-stream --sweep f64" VECTORS " </dev/null",
        FP8KV " verify-stream --sweep f16 --profile e4m3fn_nan --inf nan" VECTORS " </dev/null",
        FP8KV " verify-stream --sweep f16 --format e3m4" VECTORS " </dev/null",
        FP8KV " verify-stream --sweep f16 --scale 0" VECTORS " </dev/null",
        FP8KV " verify-stream --sweep f16 --scale -inf" VECTORS " </dev/null",
        FP8KV " verify-stream --sweep f16 --scale 0.1 --model exact" VECTORS " </dev/null",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s 2>&1", lines[i]);
        cr_assert_eq(test_run(line, out, sizeof out), 2, "%s: %s", lines[i], out);
        cr_assert(strstr(out, "fp8kv "), "%s: no message: %s", lines[i], out);
    }
}

Test(plugin_cli, verify_stream_judges_a_pipe)
{
    cr_assert_eq(test_run(F16_GOLDEN " | " FP8KV " verify-stream --sweep f16 --name golden" VECTORS,
                          out, sizeof out),
                 0, "%s", out);
    cr_assert_str_eq(last_line(), "golden e4m3fn_satfinite: inputs=65536 mismatches=0 "
                                  "verdict=conformant");
    cr_assert_eq(test_run(F16_GOLDEN " | " FP8KV " verify-stream --sweep f16 --format e4m3fn "
                                     "--overflow satfinite --inf clamp" VECTORS,
                          out, sizeof out),
                 0, "%s", out);
    /* one byte changed: input 0x3c00 (1.0) gives 0x39 instead of 0x38 */
    cr_assert_eq(test_run("(" F16_GOLDEN " | head -c 15360; printf '\\071'; " F16_GOLDEN
                          " | tail -c 50175) | " FP8KV " verify-stream --sweep f16" VECTORS,
                          out, sizeof out),
                 1, "%s", out);
    cr_assert(strstr(out, "f16 0x3c00 (1) => 39  expected 38  normal"), "%s", out);
    cr_assert(strstr(last_line(), "mismatches=1 verdict=nonconformant"), "%s", out);
    /* too short, too long */
    cr_assert_eq(test_run(F16_GOLDEN " | head -c 1000 | " FP8KV " verify-stream --sweep f16" VECTORS
                                     " 2>&1",
                          out, sizeof out),
                 2, "%s", out);
    cr_assert(strstr(out, "ended after 1000 bytes"), "%s", out);
    cr_assert_eq(test_run("(" F16_GOLDEN "; printf x) | " FP8KV " verify-stream --sweep f16" VECTORS
                          " 2>&1",
                          out, sizeof out),
                 2, "%s", out);
    cr_assert(strstr(out, "longer than the 65536 codes"), "%s", out);
    /* a stream without end is refused at once, not drained (timeout: a hang fails the test) */
    cr_assert_eq(test_run("timeout 20 " FP8KV " verify-stream --sweep f16" VECTORS
                          " </dev/zero 2>&1",
                          out, sizeof out),
                 2, "%s", out);
    cr_assert(strstr(out, "longer than the 65536 codes"), "%s", out);
}

/* A pipe into `verify-stream --sweep f16 --scale S <judged>` from a producer of every f16
 * input's code at scale S under model M: the oracle's, through `fp8kv encode`, as bytes. */
static int run_stored_f16(const char *scale, const char *model, const char *judged)
{
    char line[1024];
    snprintf(
        line, sizeof line,
        "seq 0 65535 | awk '{printf \"0x%%04x\\n\", $1}' | " FP8KV
        " encode --input-dtype f16 --scale %s --model %s | awk '{print $2}' | xxd -r -p | " FP8KV
        " verify-stream --sweep f16 --scale %s %s" VECTORS " 2>&1",
        scale, model, scale, judged);
    return test_run(line, out, sizeof out);
}

Test(plugin_cli, verify_stream_at_a_scale)
{
    static const char *const models[] = {"f32_div", "f32_mul_recip", "f16_div"};
    char judged[64];
    for (size_t m = 0; m < 3; m++) { /* the oracle's codes pass under their model */
        snprintf(judged, sizeof judged, "--model %s", models[m]);
        cr_assert_eq(run_stored_f16("-0.7", models[m], judged), 0, "%s: %s", models[m], out);
        cr_assert_str_eq(last_line(), "stream e4m3fn_satfinite: inputs=65536 mismatches=0 "
                                      "verdict=conformant");
    }
    /* a producer that multiplies by the reciprocal, judged as the f32_div it claims */
    cr_assert_eq(run_stored_f16("1.7", "f32_mul_recip", "--json -"), 1, "%s", out);
    cr_assert(strstr(out, "scale 0x3fd9999a (1.70000005), model f32_div"), "%s", out);
    cr_assert(strstr(out, "f16 0x2660 (0.024902) / 0x3fd9999a (1.70000005) = 0.0146484371 => 07  "
                          "expected 08  tie\n"),
              "%s", out);
    cr_assert(strstr(out, "\"scale_bits\": \"0x3fd9999a\"") &&
                  strstr(out, "\"model\": \"f32_div\"") && strstr(out, "\"scale\": 1.7"),
              "%s", out);
    cr_assert(strstr(out, "inputs=65536 mismatches=2 verdict=nonconformant"), "%s", out);
}

Test(plugin_cli, audit_finds_the_change_and_who_is_right)
{
    cr_assert_eq(
        test_run(FP8KV " audit --baseline bits --candidate frexp" VECTORS, out, sizeof out), 0,
        "%s", out);
    cr_assert(strstr(last_line(), "changed=0 ") && strstr(last_line(), "verdict=identical"), "%s",
              out);
    cr_assert_eq(test_run(FP8KV " audit --baseline bits --candidate" PLUGIN(
                              "fp8kv_plugin_wrong_tie") VECTORS,
                          out, sizeof out),
                 1, "%s", out);
    cr_assert(strstr(out, "f32 0x43e80000 (464) => baseline 7e  candidate 7f  expected 7e  tie  "
                          "(baseline right)"),
              "%s", out);
    cr_assert(strstr(last_line(), "baseline_right=") && strstr(last_line(), "verdict=regressed"),
              "%s", out);
    /* the other way round the change is a fix */
    cr_assert_eq(test_run(FP8KV " audit --candidate bits --baseline" PLUGIN(
                              "fp8kv_plugin_wrong_tie") VECTORS,
                          out, sizeof out),
                 0, "%s", out);
    cr_assert(strstr(last_line(), "verdict=improved"), "%s", out);
}

/* A run's overall line: on a terminal, "step N/M" rewritten in place and cleared at the end;
 * through a pipe, nothing of it. */
Test(plugin_cli, run_progress_only_on_a_terminal, .timeout = 600)
{
#define RUN_ONE                                                                                    \
    "d=$(mktemp -d) && " FP8KV                                                                     \
    " run --target cpu --profile e4m3fn_satfinite --threads 2 --out $d" VECTORS                    \
    "; rc=$?; rm -rf $d; exit $rc"
    cr_assert_eq(test_run("(" RUN_ONE ") 2>&1", out, sizeof out), 0, "%s", out);
    cr_assert_null(strchr(out, '\r'), "%s", out);
    cr_assert_null(strstr(out, "step 1/"), "%s", out);
    cr_assert_eq(test_run("script -qec '" RUN_ONE "' /dev/null", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "\rfp8kv run: step 1/5 (e4m3fn_satfinite, bits): 0 checks done"), "%s",
              out);
    cr_assert(strstr(out, "\rfp8kv run: step 5/5 (e4m3fn_satfinite, cpu-reference): "), "%s", out);
    cr_assert(strstr(out, ", ETA "), "%s", out);
    cr_assert(strstr(out, "\r\033[K"), "the line is cleared: %s", out);
#undef RUN_ONE
}
