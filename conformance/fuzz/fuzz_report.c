/* fuzz_report.c — `fp8kv report --from` (fp8kv_report_regenerate) on arbitrary report.json
 * documents.
 *
 * Input: the document's bytes. Property: a refused document leaves nothing written; a rendered
 * one is strict JSON without a NUL byte that agrees with itself under an independent reading
 * (this file's, with jansson: its verdict the one its gated checks and verified vectors give,
 * each pass with cases, no mismatches, failures or mismatched classes, a summary counting its
 * checks), and its report.md states that verdict on exactly one line, under exactly one title,
 * with no raw control character.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/run.h"
#include "fuzz_util.h"

/* Whether check c's pass is borne out: cases, no mismatches, no failures, no mismatched class
 * or code, a bound ratio of at most 1. */
static int pass_earned(json_t *c)
{
    json_t *classes = json_object_get(c, "class_mismatches"), *v;
    const char *k;
    json_object_foreach(classes, k, v) if (json_integer_value(v) != 0) return 0;
    json_t *bound = json_object_get(c, "bound_ratio");
    return json_integer_value(json_object_get(c, "cases")) > 0 &&
           json_integer_value(json_object_get(c, "mismatches")) == 0 &&
           json_array_size(json_object_get(c, "failures")) == 0 &&
           json_array_size(json_object_get(c, "mismatched_codes")) == 0 &&
           (!bound || json_number_value(bound) <= 1.0);
}

/* Why the document root contradicts itself, or NULL. */
static const char *contradiction(json_t *root)
{
    json_t *checks = json_object_get(root, "checks"), *c;
    const char *status = json_string_value(json_object_get(root, "status"));
    const char *verdict = json_string_value(json_object_get(root, "verdict"));
    if (!json_is_array(checks) || !status || !verdict)
        return "no checks, status or verdict";
    if (strcmp(status, "not run") == 0)
        return strcmp(verdict, "not run") == 0 && json_array_size(checks) == 0
                   ? NULL
                   : "not run, yet a verdict or checks";
    if (!json_is_true(json_object_get(json_object_get(root, "vectors"), "verified")))
        return "a verdict from vectors not verified";
    long long passed = 0, failed = 0, reported = 0;
    size_t i;
    json_array_foreach(checks, i, c)
    {
        const int is_passed = json_is_true(json_object_get(c, "passed"));
        if (is_passed && !pass_earned(c))
            return "a pass its counts do not bear out";
        if (!json_is_true(json_object_get(c, "gated")))
            reported++;
        else if (is_passed)
            passed++;
        else
            failed++;
    }
    const char *want = passed && !failed ? "conformant" : "nonconformant";
    json_t *s = json_object_get(root, "summary");
    if (strcmp(verdict, want) != 0)
        return "a verdict its checks do not give";
    if (json_integer_value(json_object_get(s, "passed")) != passed ||
        json_integer_value(json_object_get(s, "failed")) != failed ||
        json_integer_value(json_object_get(s, "reported")) != reported)
        return "a summary that does not count its checks";
    return NULL;
}

/* Checks the rendered report.md against the document's verdict. */
static void check_markdown(const char *verdict)
{
    size_t n;
    char *md = fuzz_read(fuzz_path("t/report.md"), &n);
    char want[64];
    snprintf(want, sizeof want, "**Verdict: %s**", verdict);
    int verdicts = 0, titles = 0, right = 0;
    for (char *line = md; line < md + n;) {
        char *end = memchr(line, '\n', (size_t)(md + n - line));
        const size_t len = end ? (size_t)(end - line) : (size_t)(md + n - line);
        verdicts += len >= 9 && memcmp(line, "**Verdict", 9) == 0;
        right += len >= strlen(want) && memcmp(line, want, strlen(want)) == 0 &&
                 (len == strlen(want) || line[strlen(want)] == ' '); /* a note may follow */
        titles += len >= 2 && memcmp(line, "# ", 2) == 0;
        line += len + 1;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char b = (unsigned char)md[i];
        if ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7f ||
            (b == 0xc2 && i + 1 < n && (unsigned char)md[i + 1] >= 0x80 &&
             (unsigned char)md[i + 1] <= 0x9f))
            fuzz_fail("report.md holds a raw control character (byte %zu: 0x%02x)", i, b);
    }
    if (verdicts != 1 || right != 1 || titles != 1)
        fuzz_fail("report.md: %d verdict lines (%d stating '%s'), %d titles", verdicts, right,
                  verdict, titles);
    free(md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *json = fuzz_path("t/report.json");
    char md[1024];
    snprintf(md, sizeof md, "%s", fuzz_path("t/report.md"));
    unlink(md);
    fuzz_write("t/report.json", data, size);
    if (fp8kv_report_regenerate(json) != 0) {
        if (access(md, F_OK) == 0)
            fuzz_fail("a refused document was rendered");
        return 0;
    }
    if (memchr(data, '\0', size))
        fuzz_fail("a document with a NUL byte was rendered");
    json_error_t err;
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        fuzz_fail("a document strict JSON refuses was rendered: %s", err.text);
    const char *why = contradiction(root);
    if (why)
        fuzz_fail("a self-contradicting document was rendered: %s", why);
    check_markdown(json_string_value(json_object_get(root, "verdict")));
    json_decref(root);
    return 0;
}
