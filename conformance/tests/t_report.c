/* t_report.c — report.json / report.md / report.html / junit.xml / the index: verdicts, "not
 * run", atomic writes, regeneration from report.json. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp8kv/cpu_isa.h"
#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/run.h"
#include "fp8kv/verify.h"

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

/* A report's inputs: the repository's vectors, verified first (an executed report is written only
 * against verified truth). */
static struct fp8kv_report_meta meta_for(const struct fp8kv_target_info *t)
{
    cr_assert_eq(fp8kv_vectors_trust(FP8KV_SOURCE_DIR "/vectors"), 0, "%s", fp8kv_last_error());
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

/* planted_report_json: write_planted, its results freed, and the path of its report.json into
 * json (size bytes). */
static void planted_report_json(struct fp8kv_target_info *t, char *json, size_t size)
{
    struct fp8kv_results r = {0};
    write_planted(t, &r);
    fp8kv_results_free(&r);
    snprintf(json, size, "%s/%s/report.json", out_dir, t->target);
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
    static const char nul[] = "{\"schema_version\": 1,\0 \"target\": \"cpu-x86_64\"}";
    cr_assert_eq(fp8kv_write_file_atomic(json, nul, sizeof nul - 1), 0);
    cr_assert_neq(fp8kv_report_regenerate(json), 0);
    cr_assert(strstr(fp8kv_last_error(), "a NUL byte at offset 21"), "%s", fp8kv_last_error());
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

/* ---- documents checked, not believed; every string escaped for where it goes -------------- */

static void write_text_file(const char *path, const char *text)
{
    cr_assert_eq(fp8kv_write_file_atomic(path, text, strlen(text)), 0, "%s", fp8kv_last_error());
}

/* dir/target/report.json replaced by root (which is released). */
static void rewrite_report(const char *target, json_t *root)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/report.json", out_dir, target);
    cr_assert_eq(json_dump_file(root, path, JSON_INDENT(2)), 0);
    json_decref(root);
}

/* Removes the files rendered from dir/target/report.json. */
static void remove_rendered(const char *target)
{
    static const char *const files[] = {"report.md", "report.html", "junit.xml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, files[i]);
        cr_assert_eq(unlink(path), 0, "%s", path);
    }
}

static int rendered_exists(const char *target, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, name);
    return access(path, F_OK) == 0;
}

/* The fp8kv command line cmd (run by sh, with FP8KV_T_PATH in its environment) and its stdout
 * and stderr together in out; its exit status. */
static int run_cli(const char *cmd, const char *path, char *out, size_t size)
{
    cr_assert_eq(setenv("FP8KV_T_PATH", path, 1), 0);
    char line[512];
    snprintf(line, sizeof line, "'%s' %s 2>&1", FP8KV_BINARY_DIR "/conformance/fp8kv", cmd);
    FILE *p = popen(line, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    const int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Found by the second hostile campaign: `fp8kv report --from` rendered the verdict written in
 * report.json, so a report whose check failed with mismatches but which said "conformant" gave
 * a green "conformant" banner in report.html and report.md. The reader recomputes the verdict
 * from the checks now (and each check's pass from its counts, the summary from the checks) and
 * refuses a document that contradicts itself, naming the file and the contradiction; nothing is
 * rendered from it. */
/* Found by the extended campaign: a check that says it passed was believed although its own
 * evidence said otherwise (a class counting mismatches, failure lines, a mismatched code):
 * `report --from` rendered "conformant". A pass must be borne out by every count. */
Test(report, bug20261203_a_pass_was_believed_against_its_own_evidence)
{
    struct fp8kv_target_info t;
    char json[256];
    planted_report_json(&t, json, sizeof json);
    char *original = read_report_file(t.target, "report.json");
    static const char *const says[] = {"true, but its class normal counts 3 mismatches",
                                       "true, but it lists 1 failure lines",
                                       "true, but it lists code 37 as mismatched"};
    for (int i = 0; i < 3; i++) {
        write_text_file(json, original);
        json_t *root = load_report(t.target), *checks = json_object_get(root, "checks"), *c = NULL;
        for (size_t k = 0; k < json_array_size(checks) && !c; k++)
            if (json_is_true(json_object_get(json_array_get(checks, k), "passed")))
                c = json_array_get(checks, k);
        cr_assert(c, "the planted report has a passing check");
        if (i == 0)
            json_object_set_new(json_object_get(c, "class_mismatches"), "normal", json_integer(3));
        else if (i == 1)
            json_object_set_new(c, "failures",
                                json_pack("[s]", "input 0x3f800000 expected 38 got 39"));
        else
            json_object_set_new(c, "mismatched_codes", json_pack("[i]", 0x37));
        rewrite_report(t.target, root);
        cr_assert_neq(fp8kv_report_regenerate(json), 0, "%d: believed", i);
        cr_assert(strstr(fp8kv_last_error(), says[i]), "%d: %s", i, fp8kv_last_error());
    }
    write_text_file(json, original);
    cr_assert_eq(fp8kv_report_regenerate(json), 0, "%s", fp8kv_last_error());
    free(original);
}

Test(report, bug20261203_report_from_believed_the_verdict_written_in_it)
{
    struct fp8kv_target_info t;
    char json[256];
    planted_report_json(&t, json, sizeof json); /* edges bits fails with 3 mismatches */
    static const struct {
        const char *edit, *says;
    } cases[] = {
        {"verdict", "verdict: says \"conformant\", but checks[0] (edges bits e4m3fn_satfinite) "
                    "failed: 3 of 100 cases differ"},
        {"passed", "checks[0].passed: true, but 3 of its 100 cases differ"},
        {"summary", "summary: says 6 passed, 0 failed, 3 reported"},
        {"status", "checks: the status is \"not run\", yet it lists 7 checks"},
    };
    char *original = read_report_file(t.target, "report.json");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text_file(json, original);
        json_t *root = load_report(t.target), *checks = json_object_get(root, "checks");
        json_t *summary = json_object_get(root, "summary");
        if (strcmp(cases[i].edit, "verdict") == 0) {
            json_object_set_new(root, "verdict", json_string("conformant"));
        } else if (strcmp(cases[i].edit, "passed") == 0) { /* a pass the counts deny */
            json_object_set_new(json_array_get(checks, 0), "passed", json_true());
        } else if (strcmp(cases[i].edit, "summary") == 0) {
            json_object_set_new(summary, "failed", json_integer(0));
            json_object_set_new(summary, "passed", json_integer(6));
        } else {
            json_object_set_new(root, "status", json_string("not run"));
            json_object_set_new(root, "verdict", json_string("not run"));
        }
        rewrite_report(t.target, root);
        remove_rendered(t.target);
        cr_assert_neq(fp8kv_report_regenerate(json), 0, "%s: believed", cases[i].edit);
        cr_assert(strstr(fp8kv_last_error(), json), "the file is named: %s", fp8kv_last_error());
        cr_assert(strstr(fp8kv_last_error(), cases[i].says), "%s: %s", cases[i].edit,
                  fp8kv_last_error());
        cr_assert(!rendered_exists(t.target, "report.md") &&
                      !rendered_exists(t.target, "report.html") &&
                      !rendered_exists(t.target, "junit.xml"),
                  "%s: nothing is rendered from a document that contradicts itself", cases[i].edit);
        write_text_file(json, original);
        cr_assert_eq(fp8kv_report_regenerate(json), 0, "%s", fp8kv_last_error());
    }
    free(original);
    /* the command: exit 2, the message names the file and the contradiction */
    json_t *root = load_report(t.target);
    json_object_set_new(root, "verdict", json_string("conformant"));
    rewrite_report(t.target, root);
    remove_rendered(t.target);
    char out[4096];
    cr_assert_eq(run_cli("report --from \"$FP8KV_T_PATH\"", json, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, json) && strstr(out, cases[0].says), "%s", out);
    cr_assert(!rendered_exists(t.target, "report.html"), "nothing rendered");
}

/* Found by fuzz_report (2026-12-07): a pass whose mismatches were counted under a class name
 * fp8kv does not know ("underflow ", a space after it) was rendered as a pass: the unknown
 * class was skipped, its count unseen. A class fp8kv does not know is refused, named. */
Test(report, bug20261207_a_pass_hid_its_mismatches_under_an_unknown_class)
{
    struct fp8kv_target_info t;
    char json[256];
    planted_report_json(&t, json, sizeof json);
    json_t *root = load_report(t.target), *checks = json_object_get(root, "checks");
    size_t i;
    json_t *c = NULL;
    json_array_foreach(checks, i, c) if (json_is_true(json_object_get(c, "passed")) &&
                                         json_object_get(c, "class_mismatches")) break;
    cr_assert_lt(i, json_array_size(checks), "a passing check with class counts");
    json_object_set_new(json_object_get(c, "class_mismatches"), "underflow ", json_integer(5));
    rewrite_report(t.target, root);
    remove_rendered(t.target);
    cr_assert_neq(fp8kv_report_regenerate(json), 0, "rendered");
    cr_assert(strstr(fp8kv_last_error(), "class_mismatches: an input class this fp8kv does not "
                                         "know: \"underflow \""),
              "%s", fp8kv_last_error());
    cr_assert(!rendered_exists(t.target, "report.md"), "nothing rendered");
}

/* Found by the second hostile campaign: a report.json with "vectors": {"verified": false}, or
 * none, rendered "conformant": checks against vectors nobody verified were believed. An
 * executed report needs verified truth now: the writer refuses to write one against vectors
 * fp8kv_vectors_trust has not passed, and the reader refuses one that says they were not. */
Test(report, bug20261203_unverified_vectors_rendered_conformant)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    one_check(&r, 0, 1);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    char json[256];
    snprintf(json, sizeof json, "%s/%s/report.json", out_dir, t.target);
    for (int absent = 0; absent <= 1; absent++) {
        json_t *root = load_report(t.target), *vectors = json_object_get(root, "vectors");
        cr_assert(json_is_true(json_object_get(vectors, "verified")));
        if (absent)
            json_object_del(vectors, "verified");
        else
            json_object_set_new(vectors, "verified", json_false());
        rewrite_report(t.target, root);
        remove_rendered(t.target);
        cr_assert_neq(fp8kv_report_regenerate(json), 0, "unverified truth believed");
        cr_assert(strstr(fp8kv_last_error(), json) &&
                      strstr(fp8kv_last_error(), "vectors.verified") &&
                      strstr(fp8kv_last_error(), "not verified"),
                  "%s", fp8kv_last_error());
        cr_assert(!rendered_exists(t.target, "report.html"), "nothing rendered");
        json_t *fixed = load_report(t.target);
        json_object_set_new(json_object_get(fixed, "vectors"), "verified", json_true());
        rewrite_report(t.target, fixed);
        cr_assert_eq(fp8kv_report_regenerate(json), 0, "%s", fp8kv_last_error());
    }
    /* vectors that were not verified in this process: the writer gives no verdict */
    char unverified[256], manifest[300];
    snprintf(unverified, sizeof unverified, "%s/unverified", out_dir);
    snprintf(manifest, sizeof manifest, "%s/MANIFEST.json", unverified);
    cr_assert_eq(fp8kv_make_dirs(unverified), 0);
    char *text = fp8kv_read_regular(FP8KV_SOURCE_DIR "/vectors/MANIFEST.json", 64u << 20, NULL);
    cr_assert_not_null(text);
    write_text_file(manifest, text);
    free(text);
    m.vectors_dir = unverified;
    char fresh[128];
    snprintf(fresh, sizeof fresh, "%s/fresh", out_dir);
    cr_assert_neq(fp8kv_report_write(fresh, &m, &r), 0, "a verdict against unverified vectors");
    cr_assert(strstr(fp8kv_last_error(), unverified) && strstr(fp8kv_last_error(), "not verified"),
              "%s", fp8kv_last_error());
    snprintf(json, sizeof json, "%s/%s/report.json", fresh, t.target);
    cr_assert_neq(access(json, F_OK), 0, "nothing written");
    fp8kv_results_free(&r);
}

/* Found by the second hostile campaign: the index read the first 256 entries of the report
 * directory in readdir order (and a report's JUnit copies the first 512): beside 3,000 other
 * folders, sm_90 and cpu-x86_64 were silently missing from index.md, exit 0. Every entry is
 * read now, sorted, with no cap, and the entries that are not reports are named, with why. */
Test(report, bug20261203_index_read_only_the_first_256_entries)
{
    struct fp8kv_target_info cpu, gpu = {.executed = 0};
    fp8kv_cpu_target_info(&cpu);
    snprintf(gpu.target, sizeof gpu.target, "sm_90");
    snprintf(gpu.not_run_reason, sizeof gpu.not_run_reason, "compiled, not executed");
    struct fp8kv_results r = {0}, none = {0};
    one_check(&r, 0, 1);
    struct fp8kv_report_meta m = meta_for(&cpu);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    m.target = &gpu;
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &none), 0, "%s", fp8kv_last_error());
    fp8kv_results_free(&r);
    for (int i = 0; i < 3000; i++) {
        char dir[128];
        snprintf(dir, sizeof dir, "%s/other-%04d", out_dir, i);
        cr_assert_eq(mkdir(dir, 0755), 0, "%s", dir);
    }
    char notes[128];
    snprintf(notes, sizeof notes, "%s/notes.txt", out_dir);
    write_text_file(notes, "not a report\n");
    cr_assert_eq(fp8kv_report_write_index(out_dir), 0, "%s", fp8kv_last_error());
    char *md = read_report_file(".", "index.md"), want[128];
    snprintf(want, sizeof want, "| [%s](%s/report.md) | conformant |", cpu.target, cpu.target);
    const char *row_cpu = strstr(md, want);
    const char *row_gpu = strstr(md, "| [sm_90](sm_90/report.md) | not run |");
    cr_assert(row_cpu && row_gpu && row_cpu < row_gpu, "both targets, sorted: %.400s", md);
    cr_assert(strstr(md, "- other-0000: a folder without a report.json\n") &&
                  strstr(md, "- other-2999: a folder without a report.json\n") &&
                  strstr(md, "- notes.txt: not a folder\n"),
              "what was not listed is named");
    cr_assert_eq(occurrences(md, ": a folder without a report.json\n"), 3000);
    cr_assert_lt(strstr(md, "other-0999"), strstr(md, "other-1000"), "sorted");
    free(md);
    char *html = read_report_file(".", "index.html");
    cr_assert(strstr(html, "<a href=\"sm_90/report.html\">sm_90</a>"), "index.html too");
    cr_assert(strstr(html, "<li>other-2999: a folder without a report.json</li>"));
    free(html);
}

/* Lines of text (each ending at '\n') that start with prefix. */
static size_t lines_starting(const char *text, const char *prefix)
{
    size_t n = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line)
        n += strncmp(line, prefix, strlen(prefix)) == 0;
    return n;
}

/* The '|' of the line at s not escaped by a backslash. */
static int unescaped_pipes(const char *s)
{
    int n = 0;
    for (const char *p = s; *p && *p != '\n'; p++) {
        if (*p == '\\' && p[1] && p[1] != '\n')
            p++;
        else
            n += *p == '|';
    }
    return n;
}

/* Found by the second hostile campaign: plugin names and report fields reached report.md raw:
 * a subject name with a newline forged a "# Verdict" heading, a '|' broke the checks table, a
 * "[text](url)" made a link, a failure line holding ``` closed its code block. Every string is
 * escaped for Markdown where it goes now (text, a line's start, a code span, a code block's
 * line: one function), control characters shown as \xNN. */
Test(report, bug20261203_markdown_took_names_and_fields_raw)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    snprintf(t.device, sizeof t.device, "cpu\n# Verdict: conformant\n| device | a|b");
    snprintf(t.flags, sizeof t.flags, "-O2 `x` ``y``");
    struct fp8kv_results r = {0};
    struct fp8kv_check c = planted("edges", "evil\n\n# Verdict: conformant\n", "a|b|c", 1, 0, -1);
    snprintf(c.detail, sizeof c.detail, "# Verdict: conformant [click](javascript:alert(1)) <b>");
    fp8kv_check_failure(&c, -1, "```\n\n# Verdict: conformant\x1b[2K");
    fp8kv_check_finish(&c, 0.0);
    cr_assert_eq(fp8kv_results_add(&r, &c), 0);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    char *md = read_report_file(t.target, "report.md");
    cr_assert_eq(lines_starting(md, "# "), 1, "one heading of level 1, the title: %s", md);
    cr_assert_eq(lines_starting(md, "#"),
                 lines_starting(md, "## ") + lines_starting(md, "### ") + 1, "%s", md);
    cr_assert_null(strchr(md, '\x1b'), "no control character");
    const char *device = strstr(md, "| device |");
    cr_assert(device && unescaped_pipes(device) == 3, "the device in one cell: %.120s", device);
    cr_assert(strstr(device, "cpu\\x0a\\# Verdict: conformant\\x0a\\| device \\| a\\|b |"),
              "%.120s", device);
    cr_assert(strstr(md, "| flags | ``` -O2 `x` ``y`` ``` |"),
              "a code span fenced past its backticks: %s", md);
    const char *row = strstr(md, "| **FAIL** | edges |");
    cr_assert(row && unescaped_pipes(row) == 9, "the checks row keeps its 8 cells: %.200s", row);
    cr_assert(strstr(md, "\\# Verdict: conformant \\[click\\](javascript:alert(1)) \\<b>"),
              "the detail, at a line's start, escaped: %s", md);
    cr_assert(strstr(md, "\n````\n```\\x0a\\x0a# Verdict: conformant\\x1b[2K\n````\n"),
              "the code block fenced past its lines' backticks: %s", md);
    free(md);
    fp8kv_results_free(&r);
}

/* Found by the second hostile campaign: index.md took folder names raw (a newline forged a
 * heading, '|' broke the table, ')' ended a link), and index.html put them in links unencoded
 * ('#' and '?' cut the path). Names are escaped as Markdown text and percent-encoded as URLs. */
Test(report, bug20261203_index_took_folder_names_raw)
{
    static const char *const names[] = {"x\n# Verdict: conformant", "a|b", "p](javascript:q) [r",
                                        "s#t?u"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dir[256], json[300];
        snprintf(dir, sizeof dir, "%s/%s", out_dir, names[i]);
        snprintf(json, sizeof json, "%s/report.json", dir);
        cr_assert_eq(fp8kv_make_dirs(dir), 0);
        write_text_file(json, "{}\n"); /* another kind of report (scripts/peers) */
    }
    cr_assert_eq(fp8kv_report_write_index(out_dir), 0, "%s", fp8kv_last_error());
    char *md = read_report_file(".", "index.md");
    cr_assert_eq(lines_starting(md, "# "), 1, "%s", md);
    cr_assert(strstr(md, "- [x\\x0a\\# Verdict: conformant](x%0A%23%20Verdict%3A%20conformant/"
                         "report.md)\n"),
              "%s", md);
    cr_assert(strstr(md, "- [a\\|b](a%7Cb/report.md)\n"), "%s", md);
    cr_assert(strstr(md, "- [p\\](javascript:q) \\[r](p%5D%28javascript%3Aq%29%20%5Br/report.md)"),
              "%s", md);
    free(md);
    char *html = read_report_file(".", "index.html");
    cr_assert(strstr(html, "<li><a href=\"s%23t%3Fu/report.md\">s#t?u</a>"), "%s", html);
    free(html);
}

/* Found by the second hostile campaign: report.html wrote a KV case's name (the start of a
 * check's detail) and, in the NMSE picture, a check's profile without escaping them: markup
 * in either was markup in the page. Both go through fp8kv_put_escaped now. */
Test(report, bug20261203_html_wrote_a_kv_case_name_and_an_nmse_profile_raw)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    struct fp8kv_check c =
        planted("kv-attention", "cpu-reference",
                "kv/case<i>9</i>: nhd, f32 in, NMSE vs 128-bit reference", 1, 0, -1);
    snprintf(c.profile, sizeof c.profile, "<u>p</u>");
    c.has_nmse = 1;
    c.nmse = 1e-15;
    c.threshold = 1e-10;
    fp8kv_check_finish(&c, 0.0);
    cr_assert_eq(fp8kv_results_add(&r, &c), 0);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    char *html = read_report_file(t.target, "report.html");
    cr_assert_null(strstr(html, "<i>"), "the case name raw: %s", strstr(html, "<i>"));
    cr_assert_null(strstr(html, "<u>"), "the profile raw: %s", strstr(html, "<u>"));
    cr_assert(strstr(html, ">kv/case&lt;i&gt;9&lt;/i&gt;: nhd, f32 in</h3>"), "%s", html);
    free(html);
    fp8kv_results_free(&r);
}

/* Found by the second hostile campaign: junit.xml kept U+FFFE and U+FFFF (JSON and report.json
 * hold them), which XML 1.0 cannot: the file was not well-formed. They become U+FFFD, as
 * control characters already did. */
Test(report, bug20261203_junit_kept_noncharacters_xml_cannot_hold)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    struct fp8kv_check c = planted("edges", "x\xef\xbf\xbfy\xef\xbf\xbez", "edges", 1, 0, -1);
    cr_assert_eq(fp8kv_results_add(&r, &c), 0);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    static const char *const files[] = {"junit.xml", "report.html"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *text = read_report_file(t.target, files[i]);
        cr_assert_null(strstr(text, "\xef\xbf\xbf"), "%s: U+FFFF", files[i]);
        cr_assert_null(strstr(text, "\xef\xbf\xbe"), "%s: U+FFFE", files[i]);
        cr_assert(strstr(text, "x\xef\xbf\xbdy\xef\xbf\xbdz"), "%s", files[i]);
        free(text);
    }
    fp8kv_results_free(&r);
}

/* Found by the second hostile campaign: `fp8kv report` printed what it read (a path, a folder
 * name, a check's names in a message) to the terminal raw, so an escape sequence there could
 * erase or rewrite the lines around it. Everything it prints from outside goes through one
 * terminal escaper now: control characters (and C1, bidirectional overrides, bytes that are not
 * UTF-8) as \xNN, a backslash as \\. */
Test(report, bug20261203_terminal_got_control_characters_raw)
{
    char out[1 << 14], dir[256], json[300];
    snprintf(dir, sizeof dir, "%s/d\x1b[2K\rfp8kv report: conformant", out_dir);
    snprintf(json, sizeof json, "%s/report.json", dir);
    cr_assert_eq(fp8kv_make_dirs(dir), 0);
    write_text_file(json, "[]");
    cr_assert_eq(run_cli("report --from \"$FP8KV_T_PATH\"", json, out, sizeof out), 2, "%s", out);
    cr_assert_null(strchr(out, '\x1b'), "%s", out);
    cr_assert_null(strchr(out, '\r'), "%s", out);
    /* (the message was recorded by fp8kv_fail, which had replaced them by '?' already) */
    cr_assert(strstr(out, "/d?[2K?fp8kv report: conformant/report.json: not a JSON object"), "%s",
              out);
    /* a check whose names hold control characters, in a report that contradicts itself */
    struct fp8kv_target_info t;
    struct fp8kv_results r = {0};
    write_planted(&t, &r);
    fp8kv_results_free(&r);
    json_t *root = load_report(t.target);
    json_object_set_new(root, "verdict", json_string("conformant"));
    json_object_set_new(json_array_get(json_object_get(root, "checks"), 0), "subject",
                        json_string("bits\x1b]0;\x07\xc2\x9b\xe2\x80\xae"));
    rewrite_report(t.target, root);
    snprintf(json, sizeof json, "%s/%s/report.json", out_dir, t.target);
    cr_assert_eq(run_cli("report --from \"$FP8KV_T_PATH\"", json, out, sizeof out), 2, "%s", out);
    /* the recorded message had them replaced by '?' already (fp8kv_text_defang) */
    cr_assert(strstr(out, "(edges bits?]0;?????? e4m3fn_satfinite)"), "%s", out);
    cr_assert_null(strchr(out, '\x1b'), "%s", out);
    /* a folder the index does not list, named on the terminal */
    cr_assert_eq(fp8kv_remove_tree(dir), 0);
    snprintf(dir, sizeof dir, "%s/junk\x1b[1A", out_dir);
    cr_assert_eq(fp8kv_make_dirs(dir), 0);
    write_planted(&t, &r); /* a consistent report again */
    fp8kv_results_free(&r);
    cr_assert_eq(run_cli("report --index \"$FP8KV_T_PATH\"", out_dir, out, sizeof out), 0, "%s",
                 out);
    cr_assert(strstr(out, "junk\\x1b[1A: a folder without a report.json"), "%s", out);
    cr_assert_null(strchr(out, '\x1b'), "%s", out);
}

/* Found while checking the escaping in Chromium (scripts/check-html): the mismatches-per-class
 * picture of a subject whose class counts are all 0 or 1 (sweeps that passed count no cases per
 * class) drew its axis from 10^0 to 10^0, at x="-nan", which the browser reports as an error.
 * The axis spans at least one decade. */
Test(report, bug20261203_class_bars_of_a_subject_with_no_counts_drew_at_nan)
{
    struct fp8kv_target_info t;
    fp8kv_cpu_target_info(&t);
    struct fp8kv_results r = {0};
    struct fp8kv_check c = planted("sweep-f16", "quiet", "all f16 inputs", 1, 0, FP8KV_CLASS_TIE);
    memset(c.class_cases, 0, sizeof c.class_cases); /* a sweep counts mismatches, not cases */
    cr_assert_eq(fp8kv_results_add(&r, &c), 0);
    struct fp8kv_report_meta m = meta_for(&t);
    cr_assert_eq(fp8kv_report_write(out_dir, &m, &r), 0, "%s", fp8kv_last_error());
    char *html = read_report_file(t.target, "report.html");
    cr_assert(strstr(html, "<title>quiet: mismatches per input class</title>"));
    cr_assert_null(strstr(html, "nan\""), "%s", strstr(html, "nan\""));
    free(html);
    fp8kv_results_free(&r);
}

/* The CPU target's runtime names the codec loops in use (fp8kv/cpu_isa.h), as `run --isa` chose
 * them. */
Test(report, the_cpu_runtime_names_the_codec_loops)
{
    for (int isa = 0; isa < FP8KV_ISA_COUNT; isa++) {
        if (fp8kv_cpu_isa_use((enum fp8kv_cpu_isa)isa) != 0)
            continue;
        struct fp8kv_target_info t;
        fp8kv_cpu_target_info(&t);
        char want[64];
        snprintf(want, sizeof want, "codec loops %s", fp8kv_cpu_isa_names[isa]);
        cr_assert(strstr(t.runtime, want), "%s: %s", want, t.runtime);
    }
}
