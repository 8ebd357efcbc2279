/* t_kv_plugin.c — `fp8kv check-kv`: the engine-style KV plugin of examples/engine_kv is
 * conformant in a worker process, fp8kv's own CPU kernels through the same interface too, and
 * each planted fault (plugins/kv_plugin.c) gets the verdict or exit code it deserves: wrong
 * bytes are nonconformant with the failing check named; a crash, a hang, an error return and a
 * write past a cache are exit 4 with the call in flight named; an unusable plugin is exit 2;
 * device memory without a GPU build is exit 3. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/spec.h"
#include "testutil.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"

static int check_kv(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 120 %s check-kv --vectors %s --timeout 3 %s 2>&1", FP8KV_EXE,
             VECTORS, args);
    return test_run(cmd, out, size);
}

static int plugin(const char *fault, char *out, size_t size)
{
    char args[512];
    snprintf(args, sizeof args, "--plugin %s/fp8kv_kv_plugin_%s.so", FP8KV_PLUGIN_DIR, fault);
    return check_kv(args, out, size);
}

Test(kv_plugin, the_example_plugin_is_conformant_in_a_worker)
{
    static char out[1 << 16];
    cr_assert_eq(plugin("none", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "check-kv engine_kv: profiles=1 checks=") &&
                  strstr(out, " failed=0 verdict=conformant\n"),
              "%s", out);
}

Test(kv_plugin, own_cpu_kernels_through_the_same_interface)
{
    static char out[1 << 17];
    cr_assert_eq(check_kv("--subject cpu-reference", out, sizeof out), 0, "%s", out);
    char every[64]; /* the CPU reference paths claim every profile */
    snprintf(every, sizeof every,
             "check-kv cpu-reference: profiles=%d checks=", fp8kv_profile_count);
    cr_assert(strstr(out, every) && strstr(out, " failed=0 verdict=conformant\n"), "%s", out);
    /* the GPU kernels: conformant where there is a GPU, "unavailable" (exit 3) where not */
    const int gpu = check_kv("--subject gpu-kernels --device 0", out, sizeof out);
#ifdef FP8KV_TEST_GPU_BUILD
    cr_assert(gpu == 0 || gpu == 3, "exit %d: %s", gpu, out);
#else
    cr_assert_eq(gpu, 3, "%s", out);
#endif
}

Test(kv_plugin, wrong_bytes_are_nonconformant_in_the_right_check)
{
    static char out[1 << 16];
    const struct {
        const char *fault, *failing, *line;
    } cases[] = {
        {"scale_ignored", "FAIL   kv-store", "key_cache["},
        {"k_scale_for_v", "FAIL   kv-store", "value_cache["},
        {"padding", "FAIL   kv-store", "(unwritten)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(plugin(cases[i].fault, out, sizeof out), 1, "%s: %s", cases[i].fault, out);
        cr_assert(strstr(out, cases[i].failing) && strstr(out, cases[i].line), "%s: %s",
                  cases[i].fault, out);
        cr_assert(strstr(out, "verdict=nonconformant\n"), "%s", out);
        cr_assert_null(strstr(out, "FAIL   kv-read"), "%s: the reads are right: %s", cases[i].fault,
                       out);
    }
}

/* Scales per head and per token: a plugin using head 0's scale for every head fails the
 * per-head cases' stores and reads; one computing each row's scale as amax * (1 / 448) fails
 * only the per-token stores, the differing scale-cache entries named first. */
Test(kv_plugin, wrong_per_head_and_per_token_scales_are_nonconformant)
{
    static char out[1 << 17];
    cr_assert_eq(plugin("head0_scale", out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "FAIL   kv-store") && strstr(out, "FAIL   kv-read-f32") &&
                  strstr(out, " head 1 dim "),
              "%s", out);
    cr_assert_eq(plugin("recip_row", out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "FAIL   kv-store") && strstr(out, "key_scale_cache[") &&
                  strstr(out, "value_scale_cache["),
              "%s", out);
    cr_assert_null(strstr(out, "FAIL   kv-read"), "the reads are right: %s", out);
    cr_assert_null(strstr(out, "FAIL   kv-attention"), "the attention is right: %s", out);
}

Test(kv_plugin, crashes_hangs_errors_and_overruns_are_the_subjects_failures)
{
    static char out[1 << 16];
    const struct {
        const char *fault, *says;
    } cases[] = {
        /* "crashed (signal 11 ...)"; under ASan the sanitizer reports the fault and exits */
        {"crash", "while running store"},
        {"hang", "hung: no answer within 3 s while running gather"},
        {"error", "attention returned -1"},
        {"overrun", "wrote past the end of key_cache, an output of"},
        /* a plugin that closes the worker's socket and lives on is killed, not waited for */
        {"close_socket", "closed its connection to fp8kv without an answer (killed)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(plugin(cases[i].fault, out, sizeof out), 4, "%s: %s", cases[i].fault, out);
        cr_assert(strstr(out, cases[i].says), "%s: %s", cases[i].fault, out);
        cr_assert_null(strstr(out, "verdict="), "%s: a verdict after a failure: %s", cases[i].fault,
                       out);
    }
}

Test(kv_plugin, unusable_plugins_and_arguments)
{
    static char out[1 << 14];
    cr_assert_eq(plugin("abi2", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "KV ABI version 4, this fp8kv reads version 3"), "%s", out);
    cr_assert_eq(plugin("no_store", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "store is NULL"), "%s", out);
    /* host code that says its buffers are device memory: without a GPU build or device it is
     * unavailable (exit 3); with one it reads device pointers on the host and crashes (exit 4) */
    const int device = plugin("device", out, sizeof out);
#ifdef FP8KV_TEST_GPU_BUILD
    cr_assert(device == 3 || device == 4, "exit %d: %s", device, out);
#else
    cr_assert_eq(device, 3, "%s", out);
    cr_assert(strstr(out, "device memory"), "%s", out);
#endif
    cr_assert_eq(check_kv("--plugin /nonexistent/libkv.so", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "/nonexistent/libkv.so"), "%s", out);
    cr_assert_eq(check_kv("", out, sizeof out), 2, "%s", out);
    cr_assert_eq(check_kv("--subject cpu-reference --profile e4m3fn_bogus", out, sizeof out), 2,
                 "%s", out);
    char args[512];
    snprintf(args, sizeof args, "--plugin %s/fp8kv_kv_plugin_none.so --profile e4m3fnuz_nan",
             FP8KV_PLUGIN_DIR);
    cr_assert_eq(check_kv(args, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "does not implement profile e4m3fnuz_nan"), "%s", out);
}

/* Found by the second hostile campaign: a KV plugin writing past its outputs beyond the 64
 * canary bytes, or into its inputs, was "conformant", exit 0. Every output ends at a guard page
 * now and the inputs are read-only to the plugin. */
Test(kv_plugin, bug20261203_writes_far_past_an_output_or_into_an_input_were_not_caught)
{
    static char out[1 << 16];
    const struct {
        const char *fault, *says;
    } cases[] = {
        {"far_overrun", "wrote past the end of value_cache, an output of 576 bytes (byte 1064 "
                        "after it) while running store"},
        {"input_write", "wrote into key, an input of"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(plugin(cases[i].fault, out, sizeof out), 4, "%s: %s", cases[i].fault, out);
        cr_assert(strstr(out, cases[i].says), "%s: %s", cases[i].fault, out);
        cr_assert_null(strstr(out, "verdict="), "%s: a verdict after a failure: %s", cases[i].fault,
                       out);
    }
}

/* Found by the second hostile campaign: a plugin's grandchild that called setsid() left the
 * worker's process group and outlived check-kv. The worker is the subreaper of what the plugin
 * starts, and its whole tree is killed while it still lives. */
Test(kv_plugin, bug20261203_a_plugin_child_in_a_session_of_its_own_outlived_check_kv)
{
    static char out[1 << 16];
    char pidfile[] = "/tmp/fp8kv-test-setsid-XXXXXX";
    const int fd = mkstemp(pidfile);
    cr_assert(fd >= 0);
    close(fd);
    setenv("FP8KV_TEST_CHILD_PIDFILE", pidfile, 1);
    plugin("setsid_child", out, sizeof out);
    unsetenv("FP8KV_TEST_CHILD_PIDFILE");
    FILE *f = fopen(pidfile, "r");
    int child = 0;
    cr_assert(f && fscanf(f, "%d", &child) == 1 && child > 0, "the child wrote no pid: %s", out);
    fclose(f);
    unlink(pidfile);
    for (int i = 0; i < 100 && test_alive(child); i++) /* the kill is asynchronous */
        usleep(10000);
    cr_assert(!test_alive(child), "the plugin's child %d outlived check-kv", child);
}

/* Found by the second hostile campaign: a plugin wrote a forged verdict line into fp8kv's own
 * stdout through /proc/<parent>/fd/1, and a name with an ESC sequence, a carriage return and a
 * newline reached the terminal raw. The harness is not dumpable (a worker, even run as root,
 * has no CAP_SYS_PTRACE to open its files), and every text from a plugin has its control
 * characters replaced. */
Test(kv_plugin, bug20261203_a_plugin_could_write_into_the_verdict_lines)
{
    static char out[1 << 16];
    cr_assert_eq(plugin("proc_stdout", out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "(forged)"), "%s", out);
    cr_assert_eq(plugin("control_name", out, sizeof out), 0, "%s", out);
    cr_assert_null(strchr(out, '\x1b'), "%s", out);
    cr_assert_null(strchr(out, '\r'), "%s", out);
    cr_assert_null(strstr(out, "\nverdict="), "a line forged by the name: %s", out);
    cr_assert(strstr(out, "check-kv engine_kv?[2K??verdict=conformant??: profiles=1"), "%s", out);
}

/* Workers have a memory limit: FP8KV_WORKER_MEMORY (default half the machine's memory). A
 * plugin that allocates past it sees its allocations fail; a value that is not a size is a
 * usage error. (No limit in a sanitizer build: its shadow memory.) */
Test(kv_plugin, workers_have_a_memory_limit)
{
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "--plugin %s/fp8kv_kv_plugin_memory_hog.so", FP8KV_PLUGIN_DIR);
    char cmd[2048];
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FP8KV_TEST_SANITIZED 1
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(FP8KV_TEST_SANITIZED)
    snprintf(cmd, sizeof cmd,
             "FP8KV_WORKER_MEMORY=256M timeout 120 %s check-kv --vectors %s %s 2>&1", FP8KV_EXE,
             VECTORS, args);
    cr_assert_eq(test_run(cmd, out, sizeof out), 4, "%s", out);
    cr_assert(strstr(out, "store returned -1"), "%s", out);
#endif
    snprintf(cmd, sizeof cmd, "FP8KV_WORKER_MEMORY=2G timeout 120 %s check-kv --vectors %s %s 2>&1",
             FP8KV_EXE, VECTORS, args);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd,
             "FP8KV_WORKER_MEMORY=12X timeout 120 %s check-kv --vectors %s %s 2>&1", FP8KV_EXE,
             VECTORS, args);
    cr_assert_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "FP8KV_WORKER_MEMORY: '12X' is not a size"), "%s", out);
}

/* Fixed on 2026-12-07: the memory limit was RLIMIT_DATA alone, which counts neither shared
 * mappings, nor memfd, nor the plugin's other processes: a plugin holding 1 GiB that way was
 * conformant under a 256M limit. The harness now measures the worker's whole tree while it
 * answers (and RLIMIT_FSIZE bounds memfd); --worker-memory sets the limit as the environment
 * does. */
Test(kv_plugin, bug20261207_shared_memory_and_children_escaped_the_worker_memory_limit)
{
    static char out[1 << 16];
    char cmd[2048];
    static const char *const hogs[] = {"shared_hog", "memfd_hog", "child_hog"};
    for (int i = 0; i < 3; i++) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(FP8KV_TEST_SANITIZED)
        snprintf(cmd, sizeof cmd,
                 "timeout 120 %s check-kv --worker-memory 256M --vectors %s "
                 "--plugin %s/fp8kv_kv_plugin_%s.so 2>&1",
                 FP8KV_EXE, VECTORS, FP8KV_PLUGIN_DIR, hogs[i]);
        cr_assert_eq(test_run(cmd, out, sizeof out), 4, "%s: %s", hogs[i], out);
        cr_assert(strstr(out, "more than the workers' limit of 256 MiB") ||
                      strstr(out, "File size limit exceeded"),
                  "%s: %s", hogs[i], out);
#endif
        snprintf(cmd, sizeof cmd,
                 "FP8KV_WORKER_MEMORY=256M timeout 120 %s check-kv --worker-memory 3G --vectors %s "
                 "--plugin %s/fp8kv_kv_plugin_%s.so 2>&1",
                 FP8KV_EXE, VECTORS, FP8KV_PLUGIN_DIR, hogs[i]);
        cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s: %s", hogs[i], out);
    }
    snprintf(cmd, sizeof cmd, "%s check-kv --worker-memory 1T --subject cpu-reference 2>&1",
             FP8KV_EXE);
    cr_assert_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "--worker-memory: '1T' is not a size"), "%s", out);
}

/* Fixed in bf61b87: a plugin that closes the worker's socket and lives on was waited for
 * (describe_end blocked); it is killed at once. */
Test(kv_plugin, bug20261201_worker_that_closed_its_socket_was_waited_for)
{
    static char out[1 << 16];
    cr_assert_eq(plugin("close_socket", out, sizeof out), 4, "%s", out);
    cr_assert(strstr(out, "closed its connection to fp8kv without an answer (killed)"), "%s", out);
}

/* The engine suite's multi-token decode, prefill and sliding-window cases (KV ABI 3): the
 * example takes query_lens and the window and passes them, each also through its decode path;
 * a kernel with no causal mask fails the prefill but not the decode of the same rows; one that
 * ignores the window fails both. */
static void engine_case(const char *fault, int index, int want_exit, const char *want_engine,
                        const char *want_consistency)
{
    static char out[1 << 16];
    char cmd[1024]; /* the example computes a case in seconds: no 3 s timeout */
    snprintf(cmd, sizeof cmd,
             "timeout 200 %s check-kv --vectors %s --plugin %s/fp8kv_kv_plugin_%s.so --suite "
             "engine --case %d --profile e4m3fn_satfinite 2>&1",
             FP8KV_EXE, VECTORS, FP8KV_PLUGIN_DIR, fault, index);
    cr_assert_eq(test_run(cmd, out, sizeof out), want_exit, "%s case %d: %s", fault, index, out);
    char line[96];
    snprintf(line, sizeof line, "%s kv-attention-engine engine_kv", want_engine);
    cr_assert(strstr(out, line), "%s case %d: no '%s' in\n%s", fault, index, line, out);
    snprintf(line, sizeof line, "%s kv-attention-consistency engine_kv", want_consistency);
    cr_assert(strstr(out, line), "%s case %d: no '%s' in\n%s", fault, index, line, out);
}

Test(kv_plugin, prefill_multi_token_decode_and_windows_through_the_abi, .timeout = 240)
{
    engine_case("none", 6, 0, "PASS  ", "PASS  ");
    engine_case("none", 7, 0, "PASS  ", "PASS  ");
    engine_case("none", 8, 0, "PASS  ", "PASS  ");
    engine_case("causal_ignored", 7, 1, "FAIL  ", "PASS  ");
    engine_case("window_ignored", 8, 1, "FAIL  ", "FAIL  ");
}

/* Engine-suite case 3 hands the caches packed [num_blocks, 2, ...] (FlashInfer's
 * paged_kv_cache) to kernels that take that packing: the example reads it; a kernel that takes
 * it but steps through it as two separate caches reads the wrong blocks. */
Test(kv_plugin, packed_caches_through_the_abi, .timeout = 120)
{
    static char out[1 << 16];
    char cmd[1024];
    for (int faulty = 0; faulty <= 1; faulty++) {
        snprintf(cmd, sizeof cmd,
                 "timeout 100 %s check-kv --vectors %s --plugin %s/fp8kv_kv_plugin_%s.so --suite "
                 "engine --case 3 --profile e4m3fn_satfinite --json - 2>/dev/null",
                 FP8KV_EXE, VECTORS, FP8KV_PLUGIN_DIR, faulty ? "packing_ignored" : "none");
        cr_assert_eq(test_run(cmd, out, sizeof out), faulty, "%s", out);
        cr_assert(strstr(out, "hnd packed block_first"), "%s", out);
    }
}

/* A plugin that declares the NHD layout only (and fails on any other) gets a verdict on its NHD
 * cases, golden and engine-suite, and "not run" rows naming the layout for the others: never a
 * call it cannot take (before KV ABI 3's layouts, its first split-x store ended check-kv, exit
 * 4). */
Test(kv_plugin, a_plugin_of_one_layout_gets_a_verdict, .timeout = 200)
{
    static char out[1 << 17];
    cr_assert_eq(plugin("nhd_only", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "not run: engine_kv takes no split_x layout"), "%s", out);
    cr_assert(strstr(out, " failed=0 verdict=conformant\n"), "%s", out);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "timeout 100 %s check-kv --vectors %s --plugin %s/fp8kv_kv_plugin_nhd_only.so "
             "--suite engine --case 5 --profile e4m3fn_satfinite 2>&1",
             FP8KV_EXE, VECTORS, FP8KV_PLUGIN_DIR);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "checks=1 failed=0"), "%s", out);
}
