/* t_plugin.c — codec plugins in child processes: loading errors, crashes and hangs reported
 * with the inputs in flight, the harness intact afterwards, and the verdict on a clean and a
 * faulty plugin (plugins/codec_plugin.c, built with each PLUGIN_FAULT). */
#include <criterion/criterion.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>

#include "fp8kv/diag.h"
#include "fp8kv/plugin_sweep.h"
#include "testutil.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"
#define PLUGIN(name) FP8KV_PLUGIN_DIR "/" name ".so"

static void expect_open_error(const char *path, int status, const char *words)
{
    struct fp8kv_plugin *pl = (struct fp8kv_plugin *)1;
    cr_assert_eq(fp8kv_plugin_open(path, 2, 5.0, &pl), status, "%s: %s", path, fp8kv_last_error());
    cr_assert_null(pl);
    cr_assert(strstr(fp8kv_last_error(), words), "%s: message '%s' lacks '%s'", path,
              fp8kv_last_error(), words);
}

Test(plugin, unusable_plugins_are_bad_input_naming_the_fault)
{
    expect_open_error(PLUGIN("fp8kv_plugin_abi2"), FP8KV_ERR, "ABI version 2");
    expect_open_error(PLUGIN("fp8kv_plugin_no_symbol"), FP8KV_ERR, "fp8kv_codec_v1");
    expect_open_error(PLUGIN("fp8kv_plugin_bad_format"), FP8KV_ERR, "unknown format \"e3m4\"");
    expect_open_error(PLUGIN("fp8kv_plugin_null_encode"), FP8KV_ERR, "encode_f32 is NULL");
    expect_open_error(FP8KV_PLUGIN_DIR "/no-such-plugin.so", FP8KV_ERR, "No such file");
    expect_open_error(FP8KV_SOURCE_DIR "/README.md", FP8KV_ERR, "README.md");
    expect_open_error(FP8KV_PLUGIN_DIR, FP8KV_ERR, "not a regular file");
}

Test(plugin, dying_while_loading_is_a_subject_failure)
{
    expect_open_error(PLUGIN("fp8kv_plugin_exit"), FP8KV_ERR_SUBJECT, "exited with status 7");
}

/* Encodes {0.5, 1.0, 2.0} with a plugin that fails on 1.0: the failure names the range. */
static void expect_failure_in_flight(const char *path, double timeout, const char *how)
{
    struct fp8kv_plugin *pl;
    cr_assert_eq(fp8kv_plugin_open(path, 1, timeout, &pl), 0, "%s", fp8kv_last_error());
    const float x[3] = {0.5f, 1.0f, 2.0f};
    uint8_t q[3];
    cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 3, 1.0f, q), FP8KV_ERR_SUBJECT);
    const char *m = fp8kv_last_error();
    cr_assert(strstr(m, how) && strstr(m, "3 inputs 0x3f000000 .. 0x40000000"), "message: %s", m);
    /* the worker is gone: later calls fail the same way, at once */
    cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 1, 1.0f, q), FP8KV_ERR_SUBJECT);
    fp8kv_plugin_close(pl);
    /* and the harness goes on: a clean plugin still runs */
    cr_assert_eq(fp8kv_plugin_open(PLUGIN("fp8kv_bits_plugin"), 1, 5.0, &pl), 0);
    cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 3, 1.0f, q), 0);
    cr_assert(q[0] == 0x30 && q[1] == 0x38 && q[2] == 0x40, "%02x %02x %02x", q[0], q[1], q[2]);
    fp8kv_plugin_close(pl);
}

Test(plugin, a_crash_names_the_inputs_in_flight)
{
    /* a signal, or under a sanitizer its report and exit: either way the worker ended */
    expect_failure_in_flight(PLUGIN("fp8kv_plugin_crash"), 30.0, "while encoding");
}

/* Whether process pid still runs (a zombie, killed and waiting for init to reap it, does not). */
/* A plugin that starts a child and then crashes: the child keeps the worker's socket open, but
 * the worker's end is a crash (not a hang after the timeout), and the child does not outlive
 * the plugin. Fixed in 7bef624: it was reported as a hang and the child outlived the plugin. */
Test(plugin, bug20261201_crash_after_a_fork_was_a_hang_and_left_an_orphan)
{
    char pidfile[] = "/tmp/fp8kv-fork-crash-XXXXXX";
    const int fd = mkstemp(pidfile);
    cr_assert_geq(fd, 0);
    close(fd);
    setenv("FP8KV_TEST_CHILD_PIDFILE", pidfile, 1);
    struct fp8kv_plugin *pl;
    cr_assert_eq(fp8kv_plugin_open(PLUGIN("fp8kv_plugin_fork_crash"), 1, 20.0, &pl), 0, "%s",
                 fp8kv_last_error());
    const float x[3] = {0.5f, 1.0f, 2.0f};
    uint8_t q[3];
    const double t0 = fp8kv_now();
    cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 3, 1.0f, q), FP8KV_ERR_SUBJECT);
    /* a signal, or under a sanitizer its report and exit: the worker ended, it did not hang */
    const char *m = fp8kv_last_error();
    cr_assert(strstr(m, "crashed") || strstr(m, "exited with status"), "%s", m);
    cr_assert_null(strstr(m, "hung"), "%s", m);
    cr_assert_lt(fp8kv_now() - t0, 10.0, "waited for the timeout: reported as a hang");
    fp8kv_plugin_close(pl);
    FILE *f = fopen(pidfile, "r");
    int child = 0;
    cr_assert(f && fscanf(f, "%d", &child) == 1 && child > 0, "the child wrote no pid");
    fclose(f);
    unlink(pidfile);
    for (int i = 0; i < 100 && test_alive(child); i++) /* the kill is asynchronous */
        usleep(10000);
    cr_assert(!test_alive(child), "the plugin's child %d outlived the plugin", child);
}

/* A plugin that writes one byte past its outputs is caught (a subject failure naming it),
 * whatever lies behind the buffer. */
Test(plugin, a_write_past_the_outputs_is_caught)
{
    struct fp8kv_plugin *pl;
    cr_assert_eq(fp8kv_plugin_open(PLUGIN("fp8kv_plugin_overrun"), 1, 5.0, &pl), 0, "%s",
                 fp8kv_last_error());
    const float x[3] = {0.5f, 1.0f, 2.0f};
    uint8_t q[3];
    cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 3, 1.0f, q), FP8KV_ERR_SUBJECT);
    cr_assert(strstr(fp8kv_last_error(), "wrote past the end of q, an output of 3 bytes (byte 0 "
                                         "after it) while encoding 3 inputs"),
              "%s", fp8kv_last_error());
    fp8kv_plugin_close(pl);
}

/* Found by the second hostile campaign: a codec plugin writing before its outputs or into its
 * inputs went unnoticed (the canaries lay only after the outputs). Every byte it may touch is
 * fenced now: the inputs are read-only, the bytes before an output are canaries. */
Test(plugin, bug20261203_writes_before_the_outputs_or_into_the_inputs_were_not_caught)
{
    const struct {
        const char *plugin, *says;
    } cases[] = {
        {PLUGIN("fp8kv_plugin_underrun"), "wrote before the start of q, an output of 3 bytes "
                                          "(byte 1 before it)"},
        {PLUGIN("fp8kv_plugin_input_write"), "wrote into x, an input of 12 bytes (its byte 0)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fp8kv_plugin *pl;
        cr_assert_eq(fp8kv_plugin_open(cases[i].plugin, 1, 5.0, &pl), 0, "%s", fp8kv_last_error());
        const float x[3] = {0.5f, 1.0f, 2.0f};
        uint8_t q[3];
        cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 3, 1.0f, q), FP8KV_ERR_SUBJECT);
        cr_assert(strstr(fp8kv_last_error(), cases[i].says), "%s", fp8kv_last_error());
        /* the worker is stopped: every later request says the same */
        cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, 3, 1.0f, q), FP8KV_ERR_SUBJECT);
        cr_assert(strstr(fp8kv_last_error(), cases[i].says), "%s", fp8kv_last_error());
        fp8kv_plugin_close(pl);
    }
}

Test(plugin, a_hang_is_killed_after_the_timeout)
{
    expect_failure_in_flight(PLUGIN("fp8kv_plugin_hang"), 0.5, "hung: no answer within 0.5 s");
}

Test(plugin, requests_larger_than_a_chunk_are_split)
{
    struct fp8kv_plugin *pl;
    cr_assert_eq(fp8kv_plugin_open(PLUGIN("fp8kv_bits_plugin"), 1, 5.0, &pl), 0);
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint8_t *q = malloc(N);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 1000) * 0.5f - 250.0f;
    cr_assert_eq(fp8kv_plugin_encode(pl, 0, x, N, 2.0f, q), 0);
    cr_assert_eq(fp8kv_plugin_decode(pl, 0, q, N, 2.0f, y), 0);
    for (int i = 0; i < N; i++) /* these values are exact in e4m3fn at scale 2 */
        if ((i % 1000) % 4 == 0 && y[i] != x[i] && fabsf(x[i]) <= 32.0f)
            cr_assert_fail("input %d: %g came back as %g", i, x[i], y[i]);
    free(x);
    free(y);
    free(q);
    fp8kv_plugin_close(pl);
}

/* The verdict over a slice of the f32 sweep (the whole 2^32 is the CLI tests' job) and every
 * vector set. */
static void plugin_verdict(const char *path, struct fp8kv_plugin_verdict *v)
{
    struct fp8kv_plugin *pl;
    cr_assert_eq(fp8kv_plugin_open(path, 2, 30.0, &pl), 0, "%s", fp8kv_last_error());
    struct fp8kv_plugin_sweep_options o = {.vectors_dir = VECTORS,
                                           .model = FP8KV_MODEL_F32_DIV,
                                           .check = FP8KV_NAN_CHECK_STRICT,
                                           .inf = FP8KV_INF_CLAMP,
                                           .sweep = {.threads = 2, .limit = 1u << 24}};
    cr_assert_eq(fp8kv_plugin_sweep(pl, &o, v), 0, "%s", fp8kv_last_error());
    fp8kv_plugin_close(pl);
    cr_assert_str_eq(v->profile->name, "e4m3fn_satfinite");
}

Test(plugin, the_bits_codec_as_a_plugin_is_conformant_on_every_set)
{
    struct fp8kv_plugin_verdict v;
    plugin_verdict(PLUGIN("fp8kv_bits_plugin"), &v);
    cr_assert(v.conformant);
    cr_assert_eq(v.mismatches, 0);
    static const char *const sets[] = {"sweep-f32",     "edges",  "all-f16", "all-bf16",
                                       "scale-f32_div", "decode", "read-f32"};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < v.results.count; i++)
            found |= strcmp(v.results.items[i].name, sets[k]) == 0;
        cr_assert(found, "no %s check", sets[k]);
    }
    cr_assert(v.models_matched & (1u << FP8KV_MODEL_F32_DIV));
    cr_assert_eq(v.models_matched & (1u << FP8KV_MODEL_F16_DIV), 0, "f16_div differs somewhere");
    fp8kv_results_free(&v.results);
}

Test(plugin, a_wrong_tie_is_found_and_named)
{
    struct fp8kv_plugin_verdict v;
    plugin_verdict(PLUGIN("fp8kv_plugin_wrong_tie"), &v);
    cr_assert_not(v.conformant);
    cr_assert_gt(v.mismatches, 0);
    int named = 0;
    for (size_t i = 0; i < v.results.count; i++) {
        const struct fp8kv_check *c = &v.results.items[i];
        for (int k = 0; k < c->failure_lines; k++)
            named |= strstr(c->failures[k], "f32 0x43e80000 (464) => 7f  expected 7e  tie") != NULL;
        if (strcmp(c->name, "edges") == 0)
            cr_assert_eq(c->class_mismatches[FP8KV_CLASS_TIE], c->mismatches);
    }
    cr_assert(named, "the 464 tie is among the failures");
    fp8kv_results_free(&v.results);
}
