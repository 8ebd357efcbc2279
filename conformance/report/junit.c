/* report/junit.c — junit.xml: the conformance checks of a report as JUnit test cases, for CI
 * systems that show test results. One testcase per check: a failed check has a <failure> with
 * its first failing lines, a reported or not-run check is <skipped/> with what it means (never
 * a pass). A target that did not run is one skipped testcase saying why. */
#include <stdlib.h>
#include <string.h>

#include "report/model.h"

/* The explanation of c as a string (malloc'd), or NULL. */
static char *explanation(const struct fp8kv_report *r, const struct fp8kv_check *c)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    fp8kv_check_explain(f, r, c);
    fclose(f);
    return text;
}

static void put_testcase(FILE *f, const struct fp8kv_report *r, const struct fp8kv_check *c)
{
    fprintf(f, "    <testcase classname=\"fp8kv.");
    fp8kv_put_escaped(f, r->target.target);
    fputc('.', f);
    fp8kv_put_escaped(f, fp8kv_check_family(c));
    fprintf(f, "\" name=\"");
    fp8kv_put_escaped(f, c->name);
    fputc(' ', f);
    fp8kv_put_escaped(f, c->subject);
    fputc(' ', f);
    fp8kv_put_escaped(f, c->profile);
    fprintf(f, ": ");
    fp8kv_put_escaped(f, c->detail);
    fprintf(f, "\" time=\"%.6f\"", c->seconds);
    const enum fp8kv_state state = fp8kv_check_state(c);
    if (state == FP8KV_STATE_PASS) {
        fprintf(f, "/>\n");
        return;
    }
    char *why = explanation(r, c);
    fprintf(f, ">\n      <%s message=\"", state == FP8KV_STATE_FAIL ? "failure" : "skipped");
    if (state != FP8KV_STATE_FAIL)
        fprintf(f, "%s: ", fp8kv_state_names[state]);
    fp8kv_put_escaped(f, why ? why : "");
    if (state == FP8KV_STATE_FAIL) {
        fprintf(f, "\" type=\"nonconformant\">");
        for (int k = 0; k < c->failure_lines; k++) {
            fp8kv_put_escaped(f, c->failures[k]);
            fputc('\n', f);
        }
        fprintf(f, "</failure>\n");
    } else {
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "    </testcase>\n");
    free(why);
}

/* A property of the suite; one not recorded (an older report.json) is left out. */
static void put_property(FILE *f, const char *name, const char *value)
{
    if (!value[0])
        return;
    fprintf(f, "      <property name=\"%s\" value=\"", name);
    fp8kv_put_escaped(f, value);
    fprintf(f, "\"/>\n");
}

char *fp8kv_report_junit(const struct fp8kv_report *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    size_t counts[FP8KV_STATE_COUNT] = {0};
    for (size_t i = 0; i < r->checks.count; i++)
        counts[fp8kv_check_state(&r->checks.items[i])]++;
    const int executed = r->target.executed;
    const size_t tests = executed ? r->checks.count : 1;
    const size_t skipped = executed ? counts[FP8KV_STATE_INFO] + counts[FP8KV_STATE_NOT_RUN] : 1;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<testsuites name=\"fp8kv conformance\" tests=\"%zu\" failures=\"%zu\" "
            "errors=\"0\" skipped=\"%zu\" time=\"%.3f\">\n",
            tests, counts[FP8KV_STATE_FAIL], skipped, r->seconds);
    fprintf(f, "  <testsuite name=\"fp8kv.");
    fp8kv_put_escaped(f, r->target.target);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.3f\">\n",
            tests, counts[FP8KV_STATE_FAIL], skipped, r->seconds);
    fprintf(f, "    <properties>\n");
    put_property(f, "verdict", r->verdict);
    put_property(f, "device", r->target.device);
    put_property(f, "generator", r->generator);
    put_property(f, "commit", r->commit);
    put_property(f, "date", r->date);
    put_property(f, "manifest_sha256", r->manifest_sha256);
    fprintf(f, "    </properties>\n");
    if (!executed) {
        fprintf(f, "    <testcase classname=\"fp8kv.");
        fp8kv_put_escaped(f, r->target.target);
        fprintf(f, ".target\" name=\"not run\" time=\"0.000000\">\n      <skipped message=\"");
        fp8kv_put_escaped(f, r->target.not_run_reason);
        fprintf(f, "\"/>\n    </testcase>\n");
    }
    for (size_t i = 0; i < r->checks.count && executed; i++)
        put_testcase(f, r, &r->checks.items[i]);
    fprintf(f, "  </testsuite>\n</testsuites>\n");
    fclose(f);
    return text;
}
