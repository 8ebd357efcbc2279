/* t_report.c — report.json / report.md / report.html / junit.xml / the index: verdicts, "not
 * run", atomic writes, regeneration from report.json. */
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

/* ---- report.html, junit.xml and their regeneration from report.json ---------------------------
 */

/* The whole file dir/target/name (malloc'd), failing the test when it cannot be read. */
static char *read_report_file(const char *target, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, name);
    char *text = fp8kv_read_regular(path, 64u << 20, NULL);
    cr_assert_not_null(text, "%s", fp8kv_last_error());
    return text;
}

static size_t occurrences(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* A check named name of subject bits under e4m3fn_satfinite, with `mismatches` failures of
 * class cls (-1: none) whose lines hold XML's special characters. */
static struct fp8kv_check planted(const char *name, const char *subject, const char *detail,
                                  int gated, int mismatches, int cls)
{
    struct fp8kv_check c;
    fp8kv_check_init(&c, name, subject, "e4m3fn_satfinite", detail);
    c.cases = 100;
    c.gated = gated;
    c.has_classes = cls >= 0;
    for (int k = 0; k < FP8KV_CLASS_COUNT && cls >= 0; k++)
        c.class_cases[k] = 10;
    for (int i = 0; i < mismatches; i++)
        fp8kv_check_failure(&c, cls, "0x%08x => 39  expected 38  <tie & \"more\">",
                            0x3f880000u + (unsigned)i);
    fp8kv_check_finish(&c, 0.25);
    return c;
}

/* Planted results: a failing encoder check, a NaN-sign difference reported under strict with
 * its class run passing, a decode check with a wrong code, an attention NMSE, a quantization
 * NMSE row and a KV case not run. */
static void planted_results(struct fp8kv_results *r)
{
    struct fp8kv_check c[7];
    c[0] = planted("edges", "bits", "edges_input.npy at scale 1, nan check strict", 1, 3,
                   FP8KV_CLASS_TIE);
    c[1] = planted("sweep-f16-nan-strict", "vendor-cvt", "all f16 inputs, nan check strict", 0, 2,
                   FP8KV_CLASS_NAN);
    c[2] = planted("sweep-f16-nan-class", "vendor-cvt", "all f16 inputs, nan check class", 1, 0,
                   FP8KV_CLASS_NAN);
    c[3] = planted("decode", "decode-bits", "all 256 codes at scale 1 vs decode.npy", 1, 0, -1);
    c[3].has_codes = 1;
    c[3].code_mismatched[0x7e / 8] |= 1u << (0x7e % 8);
    fp8kv_check_failure(&c[3], -1, "7e => 0x00000000  expected 0x43e00000");
    fp8kv_check_finish(&c[3], 0.0);
    c[4] = planted("kv-attention", "cpu-reference",
                   "kv/case0: nhd, f32 in, 3 x 8 heads (q 3), block 4, k 0.05 v 0.0123, NMSE vs "
                   "128-bit reference",
                   1, 0, -1);
    c[4].has_nmse = 1;
    c[4].nmse = 3.5e-15;
    c[4].threshold = 1e-10;
    fp8kv_check_finish(&c[4], 0.0);
    c[5] = planted("quant-nmse-gaussian", "cpu-reference", "Gaussian sigma 1, store then read", 0,
                   0, -1);
    c[5].has_nmse = 1;
    c[5].nmse = 7e-4;
    c[6] = planted("kv-case", "cpu-reference",
                   "kv/case10: nhd, f32 in, 4 x 8 heads (q 8), block 16, scales per head, not run: "
                   "cpu-reference implements no scales per KV head",
                   0, 0, -1);
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        cr_assert_eq(fp8kv_results_add(r, &c[i]), 0);
}

static void write_planted(struct fp8kv_target_info *t, struct fp8kv_results *r)
{
    fp8kv_cpu_target_info(t);
    planted_results(r);
    struct fp8kv_report_meta m = meta_for(t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, r), 0, "%s", fp8kv_last_error());
}

Test(report, html_shows_verdict_matrix_explanations_pictures)
{
    struct fp8kv_target_info t;
    struct fp8kv_results r = {0};
    write_planted(&t, &r);
    char *html = read_report_file(t.target, "report.html");
    cr_assert(strstr(html, "<span id=\"verdict\">nonconformant</span>"), "the banner's verdict");
    cr_assert(strstr(html, "<td class=\"s-fail\"><a href=\"#g-bits.encode.e4m3fn_satfinite\">"
                           "fail 1/1</a></td>"),
              "the matrix cell of the failing check says fail and links to its details");
    cr_assert(strstr(html, "<section id=\"g-bits.encode.e4m3fn_satfinite\">"), "its details");
    cr_assert(strstr(html, "0x3f880000 =&gt; 39  expected 38  &lt;tie &amp; &quot;more&quot;&gt;"),
              "the failing lines, escaped");
    cr_assert(strstr(html, "Class tie: 3 of 10: exact midpoints between two codes"),
              "a failure explained from its class and counts");
    cr_assert(strstr(html, "the conversion drops the sign of NaN: IEEE 754 leaves it unspecified; "
                           "compared by class"),
              "a NaN-sign difference explained");
    cr_assert(strstr(html, "the format&#39;s rounding error, reported, never gating"),
              "the quantization NMSE explained");
    cr_assert(strstr(html, "the subject does not implement this scale granularity") &&
                  strstr(html, "(scales per KV head)"),
              "a KV case not run explained");
    cr_assert(strstr(html, "<td class=\"s-not-run\"><a href=\"#g-cpu-reference.kv-case."
                           "e4m3fn_satfinite\">not run 1</a></td>"));
    cr_assert(strstr(html, "<h3 id=\"kv-case0\">kv/case0: nhd, f32 in, 3 x 8 heads (q 3), block "
                           "4, k 0.05 v 0.0123</h3>"),
              "a KV case named by its layout, dtype, sizes and scales: %s",
              strstr(html, "kv/case0"));
    cr_assert_eq(occurrences(html, "<g class=\"code"), 256, "the decode table: 256 codes");
    cr_assert_eq(occurrences(html, "<g class=\"code mismatch\">"), 1, "one code decoded wrongly");
    cr_assert(strstr(html, "<title>7e: max finite, 448, decoded wrongly</title>"));
    cr_assert(strstr(html, "<rect class=\"mismatches\""), "mismatches per class as bars");
    cr_assert(strstr(html, "<circle class=\"nmse\"") && strstr(html, "<line class=\"threshold\""),
              "NMSE against its threshold");
    cr_assert(strstr(html, "<rect class=\"quant\""), "the quantization NMSE as a bar");
    cr_assert_null(strstr(html, "<script"), "no script");
    cr_assert_eq(occurrences(html, "http"), occurrences(html, "http://www.w3.org/2000/svg"),
                 "nothing loaded from elsewhere: the only URL is SVG's namespace");
    free(html);
    fp8kv_results_free(&r);
}

Test(report, junit_one_testcase_per_check)
{
    struct fp8kv_target_info t;
    struct fp8kv_results r = {0};
    write_planted(&t, &r);
    char *xml = read_report_file(t.target, "junit.xml");
    cr_assert_eq(occurrences(xml, "<testcase "), r.count, "%s", xml);
    char testcase[256];
    snprintf(testcase, sizeof testcase,
             "<testcase classname=\"fp8kv.%s.encode\" name=\"edges bits e4m3fn_satfinite: "
             "edges_input.npy at scale 1, nan check strict\"",
             t.target);
    cr_assert(strstr(xml, testcase), "%s", xml);
    cr_assert(strstr(xml, "type=\"nonconformant\">0x3f880000 =&gt; 39  expected 38  &lt;tie &amp; "
                          "&quot;more&quot;&gt;\n"),
              "a failure holding the first failing line, escaped: %s", xml);
    cr_assert_eq(occurrences(xml, "<failure "), 2, "the edges and decode checks failed");
    cr_assert_eq(occurrences(xml, "<skipped message=\"info: "), 2, "info rows are skipped");
    cr_assert_eq(occurrences(xml, "<skipped message=\"not run: "), 1, "not-run rows are skipped");
    cr_assert(strstr(xml, "tests=\"7\" failures=\"2\" errors=\"0\" skipped=\"3\""), "%s", xml);
    free(xml);
    fp8kv_results_free(&r);
}

Test(report, regenerated_from_report_json_byte_identical)
{
    struct fp8kv_target_info t;
    struct fp8kv_results r = {0};
    write_planted(&t, &r);
    static const char *const files[] = {"report.md", "report.html", "junit.xml"};
    char *written[3];
    for (int i = 0; i < 3; i++) {
        written[i] = read_report_file(t.target, files[i]);
        char path[256];
        snprintf(path, sizeof path, "%s/%s/%s", out_dir, t.target, files[i]);
        cr_assert_eq(unlink(path), 0);
    }
    char json[256];
    snprintf(json, sizeof json, "%s/%s/report.json", out_dir, t.target);
    cr_assert_eq(fp8kv_report_regenerate(json), 0, "%s", fp8kv_last_error());
    for (int i = 0; i < 3; i++) {
        char *again = read_report_file(t.target, files[i]);
        cr_assert_str_eq(again, written[i], "%s differs when regenerated", files[i]);
        free(again);
        free(written[i]);
    }
    fp8kv_results_free(&r);
}

Test(report, damaged_report_json_named_nothing_written)
{
    static const char *const damaged[] = {
        "{\"schema_version\": 1, \"target\": \"cpu-x86_64\"",                  /* cut short */
        "{\"schema_version\": 1, \"target\": \"cpu-x86_64\", \"verdict\": 3}", /* mistyped */
        "[]",
    };
    char dir[256], json[300], html[300];
    snprintf(dir, sizeof dir, "%s/cpu-x86_64", out_dir);
    snprintf(json, sizeof json, "%s/report.json", dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    cr_assert_eq(fp8kv_make_dirs(dir), 0);
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        cr_assert_eq(fp8kv_write_file_atomic(json, damaged[i], strlen(damaged[i])), 0);
        cr_assert_neq(fp8kv_report_regenerate(json), 0, "%s accepted", damaged[i]);
        cr_assert(strstr(fp8kv_last_error(), json), "the message names the file: %s",
                  fp8kv_last_error());
        cr_assert_neq(access(html, F_OK), 0, "nothing written");
        cr_assert_neq(fp8kv_report_write_index(out_dir), 0, "the index names it too");
    }
}

Test(report, not_run_junit_is_skipped_and_index_html_lists_it)
{
    struct fp8kv_target_info t = {.executed = 0};
    snprintf(t.target, sizeof t.target, "gfx942");
    snprintf(t.device, sizeof t.device, "gfx942 (none present: compiled only)");
    snprintf(t.not_run_reason, sizeof t.not_run_reason, "compiled, not executed");
    struct fp8kv_results r = {0};
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    char *xml = read_report_file("gfx942", "junit.xml");
    cr_assert(strstr(xml, "<skipped message=\"compiled, not executed\"/>"), "%s", xml);
    cr_assert_eq(occurrences(xml, "<testcase "), 1);
    free(xml);
    char *html = read_report_file("gfx942", "report.html");
    cr_assert(strstr(html, "<span id=\"verdict\">not run</span>"));
    free(html);
    char *index = read_report_file(".", "index.html");
    cr_assert(strstr(index, "<a href=\"gfx942/report.html\">gfx942</a></th><td "
                            "class=\"s-not-run\">not run</td>"),
              "%s", index);
    free(index);
}

/* Fixed in fd0271f: the report.json reader refused a report written before a class existed
 * (class objects without "underflow", the class added last); a class it does not name counts
 * 0. */
Test(report, bug20261201_report_json_without_a_newer_class_was_refused)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    struct fp8kv_check c = planted("edges", "bits", "edges_input.npy", 1, 1, FP8KV_CLASS_TIE);
    cr_assert_eq(fp8kv_results_add(&r, &c), 0);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    json_t *root = load_report(t.target), *check;
    size_t i;
    int removed = 0;
    json_array_foreach(json_object_get(root, "checks"), i, check)
    {
        const char *key;
        json_t *value;
        json_object_foreach(check, key, value) removed +=
            json_is_object(value) && json_object_del(value, "underflow") == 0;
    }
    cr_assert_gt(removed, 0, "no class object names underflow");
    char json[256];
    snprintf(json, sizeof json, "%s/%s/report.json", out_dir, t.target);
    cr_assert_eq(json_dump_file(root, json, JSON_INDENT(2)), 0);
    json_decref(root);
    cr_assert_eq(fp8kv_report_regenerate(json), 0, "%s", fp8kv_last_error());
    fp8kv_results_free(&r);
}

/* Fixed in fa944db: report.html headed a KV case that has one check with that check's whole
 * detail, what the check compares included; the heading is the case's own words, the detail
 * cut at its last ", " (where fp8kv_kv_case_describe appends what each check compares). */
Test(report, bug20261201_kv_case_heading_kept_what_its_one_check_compares)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    struct fp8kv_check c = planted("kv-store", "cpu-reference",
                                   "kv/case2: hnd, f16 in, 2 x 4 heads (q 2), block 16, k 0.5 v "
                                   "0.25, bytes vs key_cache.npy",
                                   1, 0, -1);
    cr_assert_eq(fp8kv_results_add(&r, &c), 0);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    char *html = read_report_file(t.target, "report.html");
    cr_assert(strstr(html, ">kv/case2: hnd, f16 in, 2 x 4 heads (q 2), block 16, k 0.5 v "
                           "0.25</h3>"),
              "%s", strstr(html, "kv/case2") ? strstr(html, "kv/case2") : html);
    free(html);
    fp8kv_results_free(&r);
}
