/* t_report.c — report.json / report.md / index.md: verdicts, "not run", atomic writes. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/run.h"

static char out_dir[64];

static void make_out(void)
{
    snprintf(out_dir, sizeof out_dir, "/tmp/fp8kv-t-report-XXXXXX");
    cr_assert_not_null(mkdtemp(out_dir));
}

static void remove_out(void)
{
    cr_assert_eq(fp8kv_remove_tree(out_dir), 0, "%s", fp8kv_last_error());
}

TestSuite(report, .init = make_out, .fini = remove_out);

static json_t *load_report(const char *target)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/report.json", out_dir, target);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s: %s", path, err.text);
    return root;
}

static void one_check(struct fp8kv_results *r, int mismatches, int gated)
{
    struct fp8kv_check c;
    fp8kv_check_init(&c, "edges", "bits", "e4m3fn_satfinite", "test");
    c.cases = 10;
    c.gated = gated;
    for (int i = 0; i < mismatches; i++)
        fp8kv_check_failure(&c, FP8KV_CLASS_TIE, "0x%08x => 39  expected 38  tie", 0x3f880000u);
    fp8kv_check_finish(&c, 0.1);
    cr_assert_eq(fp8kv_results_add(r, &c), 0);
}

static struct fp8kv_report_meta meta_for(const struct fp8kv_target_info *t)
{
    struct fp8kv_report_meta m = {
        .target = t, .vectors_dir = FP8KV_SOURCE_DIR "/vectors", .profiles = "all", .seconds = 1.0};
    return m;
}

Test(report, conformant_run)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    one_check(&r, 0, 1);
    one_check(&r, 3, 0); /* reported-only checks never fail a run */
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    json_t *root = load_report(t.target);
    cr_assert_str_eq(json_string_value(json_object_get(root, "verdict")), "conformant");
    cr_assert_eq(json_array_size(json_object_get(root, "checks")), 2);
    cr_assert_eq(strlen(json_string_value(
                     json_object_get(json_object_get(root, "vectors"), "manifest_sha256"))),
                 64);
    json_decref(root);
    fp8kv_results_free(&r);
}

Test(report, failure_is_named)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    one_check(&r, 2, 1);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    json_t *root = load_report(t.target);
    cr_assert_str_eq(json_string_value(json_object_get(root, "verdict")), "nonconformant");
    json_t *c = json_array_get(json_object_get(root, "checks"), 0);
    cr_assert_eq(json_integer_value(json_object_get(c, "mismatches")), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(c, "class_mismatches"), "tie")),
                 0, "class counts are only given for checks with classes");
    json_decref(root);
    char path[256], text[8192];
    snprintf(path, sizeof path, "%s/%s/report.md", out_dir, t.target);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    cr_assert(strstr(text, "**Verdict: nonconformant**"), "%s", text);
    cr_assert(strstr(text, "0x3f880000 => 39  expected 38  tie"), "%s", text);
    fp8kv_results_free(&r);
}

Test(report, not_run_is_never_passed)
{
    struct fp8kv_target_info t = {.executed = 0};
    snprintf(t.target, sizeof t.target, "gfx942");
    snprintf(t.not_run_reason, sizeof t.not_run_reason, "compiled, not executed");
    struct fp8kv_results r = {0};
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    json_t *root = load_report("gfx942");
    cr_assert_str_eq(json_string_value(json_object_get(root, "verdict")), "not run");
    cr_assert_str_eq(json_string_value(json_object_get(root, "status")), "not run");
    json_decref(root);
    char path[256];
    snprintf(path, sizeof path, "%s/index.md", out_dir);
    cr_assert_eq(access(path, R_OK), 0, "index.md written");
}

Test(report, no_empty_pass)
{
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_results_passed(&r), 0, "a run with no checks is not conformant");
    one_check(&r, 0, 0);
    cr_assert_eq(fp8kv_results_passed(&r), 0, "reported-only checks alone are not a pass");
    fp8kv_results_free(&r);
}

Test(report, unreadable_vectors_named)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    struct fp8kv_report_meta m = meta_for(&t);
    m.vectors_dir = "/nonexistent/vectors";
    cr_assert_neq(fp8kv_report_write(out_dir, &m, &r), 0);
    cr_assert(strstr(fp8kv_last_error(), "/nonexistent/vectors/MANIFEST.json"), "%s",
              fp8kv_last_error());
}
