/* report/html.c — report.html and index.html: self-contained pages a release manager reads at a
 * glance (inline CSS and SVG, no script, nothing loaded from elsewhere). A report page has a
 * verdict banner, the summary matrix (subject and check family by profile), every difference
 * explained, pictures (the decode table, mismatches per input class, NMSE against thresholds,
 * the quantization error: report/svg.c), the KV checks grouped by golden case, and every check
 * in detail. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 2em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}"
    ".banner{padding:1em 1.5em;margin:0 -2em 1em;color:#fff}.banner h1{margin:0}"
    ".v-conformant{background:#2e7d32}.v-nonconformant{background:#c62828}"
    ".v-not-run{background:#757575}"
    "td.s-fail{background:#ffcdd2}td.s-pass{background:#c8e6c9}td.s-info{background:#bbdefb}"
    "td.s-not-run,td.s-none{background:#eee;color:#555}td a{color:inherit}"
    "pre{background:#f7f7f7;padding:4px;margin:2px 0;white-space:pre-wrap}"
    "code{font-size:90%}.why{color:#444}figure{margin:1em 0}figcaption{font-size:90%}";

/* The CSS class of a state ("s-fail", "s-pass", "s-info", "s-not-run"). */
static const char *const state_css[FP8KV_STATE_COUNT] = {"s-fail", "s-pass", "s-info", "s-not-run"};

static void put(FILE *f, const char *s)
{
    fp8kv_put_escaped(f, s);
}

/* An id fragment: s with everything but letters, digits, '_' and '-' as '-'. */
static void put_slug(FILE *f, const char *s)
{
    for (; *s; s++) {
        const char ch = *s;
        const int keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                         (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        fputc(keep ? ch : '-', f);
    }
}

/* The id of the details of one subject, check family and profile. */
static void put_group_id(FILE *f, const char *subject, const char *family, const char *profile)
{
    fputs("g-", f);
    put_slug(f, subject);
    fputc('.', f);
    put_slug(f, family);
    fputc('.', f);
    put_slug(f, profile);
}

static void html_begin(FILE *f, const char *title)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    put(f, title);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n", style);
}

/* The explanation of c, escaped. */
static void put_explanation(FILE *f, const struct fp8kv_report *r, const struct fp8kv_check *c)
{
    char *text = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&text, &size);
    if (!m)
        return;
    fp8kv_check_explain(m, r, c);
    fclose(m);
    put(f, text);
    free(text);
}

/* The rows (subject, family) and columns (profiles) of a report's summary matrix. */
struct matrix {
    struct distinct rows, profiles;
};

static int matrix_init(struct matrix *m, const struct fp8kv_report *r)
{
    if (distinct_init(&m->rows, r->checks.count) != 0 ||
        distinct_init(&m->profiles, r->checks.count) != 0)
        return -1;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        distinct_add(&m->rows, c->subject, fp8kv_check_family(c));
        distinct_add(&m->profiles, c->profile, NULL);
    }
    return 0;
}

static void matrix_free(struct matrix *m)
{
    free(m->rows.v);
    free(m->profiles.v);
}

/* Whether check c is in matrix row `row` and column `col`. */
static int in_cell(const struct matrix *m, size_t row, size_t col, const struct fp8kv_check *c)
{
    return strcmp(c->subject, m->rows.v[2 * row]) == 0 &&
           strcmp(fp8kv_check_family(c), m->rows.v[2 * row + 1]) == 0 &&
           strcmp(c->profile, m->profiles.v[2 * col]) == 0;
}

/* The state a set of checks shows: any failure fails; else a pass passes; else reported; else
 * not run. counts[s] holds how many are in state s. -1: no checks. */
static int cell_state(const size_t counts[FP8KV_STATE_COUNT])
{
    static const enum fp8kv_state order[] = {FP8KV_STATE_FAIL, FP8KV_STATE_PASS, FP8KV_STATE_INFO,
                                             FP8KV_STATE_NOT_RUN};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (counts[order[k]])
            return (int)order[k];
    return -1;
}

/* The link to the report.html in folder (of the index's directory; NULL: this page). */
static void put_report_href(FILE *f, const char *folder, const char *file)
{
    if (!folder)
        return;
    fp8kv_put_url_segment(f, folder);
    fprintf(f, "/%s", file);
}

/* One cell of a matrix: the state, its count, what else is there, and a link to the id in
 * folder's report.html (NULL: in this page). */
static void put_cell(FILE *f, const size_t counts[FP8KV_STATE_COUNT], const char *folder,
                     void (*put_id)(FILE *, const void *), const void *id_arg)
{
    const int state = cell_state(counts);
    if (state < 0) {
        fprintf(f, "<td class=\"s-none\" title=\"no checks\">—</td>");
        return;
    }
    size_t total = 0;
    for (int k = 0; k < FP8KV_STATE_COUNT; k++)
        total += counts[k];
    fprintf(f, "<td class=\"%s\"><a href=\"", state_css[state]);
    put_report_href(f, folder, "report.html");
    fputc('#', f);
    put_id(f, id_arg);
    fprintf(f, "\">%s ", fp8kv_state_names[state]);
    if (state == FP8KV_STATE_FAIL)
        fprintf(f, "%zu/%zu", counts[state], total);
    else
        fprintf(f, "%zu", counts[state]);
    for (int k = state + 1; k < FP8KV_STATE_COUNT; k++)
        if (counts[k])
            fprintf(f, " +%zu %s", counts[k], fp8kv_state_names[k]);
    fprintf(f, "</a></td>");
}

/* ---- the report page: banner, facts, matrix -----------------------------------------------------
 */

static void put_banner(FILE *f, const struct fp8kv_report *r, const size_t states[])
{
    fprintf(f, "<header class=\"banner v-");
    put_slug(f, r->verdict);
    fprintf(f, "\">\n<h1>");
    put(f, r->target.target);
    fprintf(f, ": <span id=\"verdict\">");
    put(f, r->verdict);
    fprintf(f, "</span></h1>\n<p>");
    if (!r->target.executed) {
        put(f, r->target.not_run_reason);
        fprintf(f, ": nothing was executed on this target, no check passed or failed.");
    } else {
        fprintf(f, "%zu passed, %zu failed, %zu reported (not gated), %zu not run", states[1],
                states[0], states[2], states[3]);
    }
    fprintf(f, " · ");
    put(f, r->target.device);
    fprintf(f, "</p>\n</header>\n");
}

static void put_fact(FILE *f, const char *name, const char *value, int as_code)
{
    fprintf(f, "<tr><th>%s</th><td>%s", name, as_code ? "<code>" : "");
    put(f, value[0] ? value : "not recorded");
    fprintf(f, "%s</td></tr>\n", as_code ? "</code>" : "");
}

static void put_facts(FILE *f, const struct fp8kv_report *r)
{
    const struct fp8kv_target_info *t = &r->target;
    fprintf(f, "<table class=\"facts\">\n");
    put_fact(f, "device", t->device, 0);
    put_fact(f, "runtime", t->runtime, 0);
    put_fact(f, "compiler", t->compiler, 0);
    if (t->flags[0])
        put_fact(f, "flags", t->flags, 1);
    put_fact(f, "profiles", r->profiles, 0);
    if (t->compiled[0])
        put_fact(f, "compiled", t->compiled, 0);
    if (t->assembly[0])
        put_fact(f, "assembly", t->assembly, 0);
    put_fact(f, "vectors", r->vectors_dir, 1);
    put_fact(f, "MANIFEST.json sha256", r->manifest_sha256, 1);
    put_fact(f, "vectors verified",
             r->vectors_verified ? "against MANIFEST.json and SHA256SUMS before the checks"
                                 : "not in this run",
             0);
    put_fact(f, "generator", r->generator, 0);
    put_fact(f, "commit", r->commit, 1);
    put_fact(f, "date", r->date, 0);
    fprintf(f, "<tr><th>wall time</th><td>%.1f s</td></tr>\n", r->seconds);
    fprintf(f, "<tr><th>other files</th><td><a href=\"report.json\">report.json</a>, "
               "<a href=\"report.md\">report.md</a>, <a href=\"junit.xml\">junit.xml</a></td>"
               "</tr>\n</table>\n");
}

/* The id argument of a report cell: the matrix and the cell. */
struct cell_ref {
    const struct matrix *m;
    size_t row, col;
};

static void put_cell_id(FILE *f, const void *arg)
{
    const struct cell_ref *ref = arg;
    put_group_id(f, ref->m->rows.v[2 * ref->row], ref->m->rows.v[2 * ref->row + 1],
                 ref->m->profiles.v[2 * ref->col]);
}

static void cell_counts(const struct fp8kv_report *r, const struct matrix *m, size_t row,
                        size_t col, size_t counts[FP8KV_STATE_COUNT])
{
    memset(counts, 0, FP8KV_STATE_COUNT * sizeof counts[0]);
    for (size_t i = 0; i < r->checks.count; i++)
        if (in_cell(m, row, col, &r->checks.items[i]))
            counts[fp8kv_check_state(&r->checks.items[i])]++;
}

static void put_matrix(FILE *f, const struct fp8kv_report *r, const struct matrix *m)
{
    fprintf(f, "<h2 id=\"matrix\">Summary: subject and check family by profile</h2>\n"
               "<table class=\"matrix\">\n<tr><th>subject</th><th>family</th>");
    for (size_t col = 0; col < m->profiles.n; col++) {
        fprintf(f, "<th>");
        put(f, m->profiles.v[2 * col]);
        fprintf(f, "</th>");
    }
    fprintf(f, "</tr>\n");
    for (size_t row = 0; row < m->rows.n; row++) {
        fprintf(f, "<tr><th>");
        put(f, m->rows.v[2 * row]);
        fprintf(f, "</th><th>");
        put(f, m->rows.v[2 * row + 1]);
        fprintf(f, "</th>");
        for (size_t col = 0; col < m->profiles.n; col++) {
            size_t counts[FP8KV_STATE_COUNT];
            cell_counts(r, m, row, col, counts);
            const struct cell_ref ref = {m, row, col};
            put_cell(f, counts, NULL, put_cell_id, &ref);
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n<p>Each cell: the checks of that subject, family and profile; fail "
               "when any failed, else pass, else info (reported, never gating), else not run; "
               "— where the subject has no such checks.</p>\n");
}

/* ---- every difference explained ----------------------------------------------------------------
 */

static void put_check_link(FILE *f, const struct fp8kv_report *r, size_t i)
{
    const struct fp8kv_check *c = &r->checks.items[i];
    fprintf(f, "<a href=\"#c%zu\">", i);
    put(f, c->name);
    fputc(' ', f);
    put(f, c->subject);
    fputc(' ', f);
    put(f, c->profile);
    fprintf(f, "</a>");
}

static void put_failure_lines(FILE *f, const struct fp8kv_check *c)
{
    if (!c->failure_lines)
        return;
    fprintf(f, "<pre>");
    for (int k = 0; k < c->failure_lines; k++) {
        put(f, c->failures[k]);
        fputc('\n', f);
    }
    fprintf(f, "</pre>");
}

/* The explanation of check i as a malloc'd string ("" when out of memory). */
static char *explanation_of(const struct fp8kv_report *r, size_t i)
{
    char *text = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&text, &size);
    if (m) {
        fp8kv_check_explain(m, r, &r->checks.items[i]);
        fclose(m);
    }
    return text ? text : strdup("");
}

/* Failed checks one by one with their lines; the others not passed grouped by their family and
 * explanation. */
static void put_differences(FILE *f, const struct fp8kv_report *r)
{
    const size_t n = r->checks.count;
    char **why = calloc(n + 1, sizeof *why);
    int *done = calloc(n + 1, sizeof *done);
    fprintf(f, "<h2 id=\"differences\">Differences explained</h2>\n");
    size_t shown = 0;
    for (size_t i = 0; i < n && why && done; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        const enum fp8kv_state state = fp8kv_check_state(c);
        if (state == FP8KV_STATE_PASS || done[i])
            continue;
        why[i] = why[i] ? why[i] : explanation_of(r, i);
        fprintf(f, "<div class=\"difference\"><p><b class=\"%s\">%s</b> ", state_css[state],
                fp8kv_state_names[state]);
        if (state == FP8KV_STATE_FAIL) {
            put_check_link(f, r, i);
            fprintf(f, ": <span class=\"why\">");
            put(f, why[i]);
            fprintf(f, "</span></p>");
            put_failure_lines(f, c);
            fprintf(f, "</div>\n");
            shown++;
            continue;
        }
        size_t same = 0;
        for (size_t j = i; j < n; j++) {
            const struct fp8kv_check *o = &r->checks.items[j];
            if (done[j] || fp8kv_check_state(o) != state ||
                strcmp(fp8kv_check_family(o), fp8kv_check_family(c)) != 0)
                continue;
            why[j] = why[j] ? why[j] : explanation_of(r, j);
            if (strcmp(why[j], why[i]) == 0)
                same += done[j] = 1;
        }
        put(f, fp8kv_check_family(c));
        fprintf(f, ", %zu check%s: <span class=\"why\">", same, same == 1 ? "" : "s");
        put(f, why[i]);
        fprintf(f, "</span></p><p>");
        for (size_t j = i, k = 0; j < n; j++)
            if (done[j] == 1 && why[j] && strcmp(why[j], why[i]) == 0 &&
                fp8kv_check_state(&r->checks.items[j]) == state) {
                fprintf(f, "%s", k++ ? ", " : "");
                put_check_link(f, r, j);
                done[j] = 2;
            }
        fprintf(f, "</p></div>\n");
        shown++;
    }
    if (!shown)
        fprintf(f, "<p>None: every check passed.</p>\n");
    for (size_t i = 0; why && i < n; i++)
        free(why[i]);
    free(why);
    free(done);
}

/* ---- the KV checks by golden case ---------------------------------------------------------------
 */

/* The case a KV check's detail starts with ("kv/case3" of "kv/case3: nhd, ..."): its length, or
 * 0 when it names none. The words follow at detail + length + 2. */
static size_t case_key_length(const char *detail)
{
    const char *colon = strchr(detail, ':');
    return strncmp(detail, "kv/case", 7) == 0 && colon && colon[1] == ' ' ? (size_t)(colon - detail)
                                                                          : 0;
}

static int same_case(const char *a, const char *b)
{
    const size_t n = case_key_length(a);
    return n && n == case_key_length(b) && strncmp(a, b, n) == 0;
}

/* The words every check of the case of check `first` shares (layout, dtype, sizes, scales): the
 * common start of their details after the case name, cut at its last ", " (where
 * fp8kv_kv_case_describe appended what each check compares). Its length. */
static size_t case_words_length(const struct fp8kv_report *r, size_t first)
{
    const char *detail = r->checks.items[first].detail;
    const char *words = detail + case_key_length(detail) + 2;
    size_t common = strlen(words);
    for (size_t i = first + 1; i < r->checks.count; i++) {
        const char *d = r->checks.items[i].detail;
        if (!same_case(d, detail))
            continue;
        const char *other = d + case_key_length(d) + 2;
        size_t k = 0;
        while (k < common && other[k] == words[k])
            k++;
        common = k;
    }
    size_t cut = 0;
    for (size_t k = 0; k + 1 < common; k++)
        if (words[k] == ',' && words[k + 1] == ' ')
            cut = k;
    return cut ? cut : common;
}

static void put_kv_cases(FILE *f, const struct fp8kv_report *r)
{
    const size_t n = r->checks.count;
    int *shown = calloc(n + 1, sizeof *shown);
    struct distinct rows, columns;
    if (!shown || distinct_init(&rows, n) != 0 || distinct_init(&columns, n) != 0) {
        free(shown);
        return;
    }
    int any = 0;
    for (size_t first = 0; first < n; first++) {
        const char *detail = r->checks.items[first].detail;
        if (shown[first] || !case_key_length(detail))
            continue;
        if (!any++)
            fprintf(f, "<h2 id=\"kv\">KV checks by golden case</h2>\n<p>A case is a layout, an "
                       "input dtype, sizes and scales; a cell links to the check.</p>\n");
        rows.n = columns.n = 0;
        for (size_t i = first; i < n; i++)
            if (same_case(r->checks.items[i].detail, detail)) {
                distinct_add(&rows, r->checks.items[i].subject, r->checks.items[i].profile);
                distinct_add(&columns, r->checks.items[i].name, NULL);
            }
        char *key = strndup(detail, case_key_length(detail)); /* "kv/case3" */
        char *text = strndup(detail + case_key_length(detail) + 2, case_words_length(r, first));
        fprintf(f, "<h3 id=\"kv-");
        put_slug(f, key ? key + 3 : "");
        fprintf(f, "\">");
        put(f, key ? key : "");
        fprintf(f, ": ");
        put(f, text ? text : "");
        free(key);
        free(text);
        fprintf(f, "</h3>\n<table class=\"kv-case\"><tr><th>subject</th><th>profile</th>");
        for (size_t col = 0; col < columns.n; col++) {
            fprintf(f, "<th>");
            put(f, columns.v[2 * col]);
            fprintf(f, "</th>");
        }
        fprintf(f, "</tr>\n");
        for (size_t row = 0; row < rows.n; row++) {
            fprintf(f, "<tr><td>");
            put(f, rows.v[2 * row]);
            fprintf(f, "</td><td>");
            put(f, rows.v[2 * row + 1]);
            fprintf(f, "</td>");
            for (size_t col = 0; col < columns.n; col++) {
                size_t hit = n;
                for (size_t i = first; i < n && hit == n; i++) {
                    const struct fp8kv_check *c = &r->checks.items[i];
                    if (same_case(c->detail, detail) && strcmp(c->subject, rows.v[2 * row]) == 0 &&
                        strcmp(c->profile, rows.v[2 * row + 1]) == 0 &&
                        strcmp(c->name, columns.v[2 * col]) == 0)
                        hit = i;
                }
                if (hit == n) {
                    fprintf(f, "<td class=\"s-none\">—</td>");
                    continue;
                }
                const struct fp8kv_check *c = &r->checks.items[hit];
                const enum fp8kv_state state = fp8kv_check_state(c);
                fprintf(f, "<td class=\"%s\"><a href=\"#c%zu\" title=\"", state_css[state], hit);
                put(f, c->detail);
                fprintf(f, "\">%s</a></td>", fp8kv_state_names[state]);
            }
            fprintf(f, "</tr>\n");
        }
        fprintf(f, "</table>\n");
        for (size_t i = first; i < n; i++)
            shown[i] |= same_case(r->checks.items[i].detail, detail);
    }
    free(shown);
    free(rows.v);
    free(columns.v);
}

/* ---- every check --------------------------------------------------------------------------------
 */

static void put_check_row(FILE *f, const struct fp8kv_report *r, size_t i)
{
    const struct fp8kv_check *c = &r->checks.items[i];
    const enum fp8kv_state state = fp8kv_check_state(c);
    fprintf(f, "<tr id=\"c%zu\"><td class=\"%s\">%s</td><td>", i, state_css[state],
            fp8kv_state_names[state]);
    put(f, c->name);
    fprintf(f, "</td><td>");
    put(f, c->detail);
    fprintf(f, "</td><td>%llu</td><td>%llu</td><td>", (unsigned long long)c->cases,
            (unsigned long long)c->mismatches);
    char measure[96];
    fp8kv_check_measure_text(c, measure, sizeof measure);
    put(f, measure);
    fprintf(f, "</td><td>%.2f s</td><td class=\"why\">", c->seconds);
    put_explanation(f, r, c);
    put_failure_lines(f, c);
    fprintf(f, "</td></tr>\n");
}

static void put_details(FILE *f, const struct fp8kv_report *r, const struct matrix *m)
{
    fprintf(f, "<h2 id=\"details\">Every check</h2>\n");
    for (size_t row = 0; row < m->rows.n; row++)
        for (size_t col = 0; col < m->profiles.n; col++) {
            size_t counts[FP8KV_STATE_COUNT];
            cell_counts(r, m, row, col, counts);
            if (cell_state(counts) < 0)
                continue;
            const struct cell_ref ref = {m, row, col};
            fprintf(f, "<section id=\"");
            put_cell_id(f, &ref);
            fprintf(f, "\">\n<h3>");
            put(f, m->rows.v[2 * row]);
            fprintf(f, " · ");
            put(f, m->rows.v[2 * row + 1]);
            fprintf(f, " · ");
            put(f, m->profiles.v[2 * col]);
            fprintf(f, "</h3>\n<table><tr><th>result</th><th>check</th><th>detail</th><th>cases"
                       "</th><th>mismatches</th><th>NMSE (threshold)</th><th>time</th>"
                       "<th>what it means</th></tr>\n");
            for (size_t i = 0; i < r->checks.count; i++)
                if (in_cell(m, row, col, &r->checks.items[i]))
                    put_check_row(f, r, i);
            fprintf(f, "</table>\n</section>\n");
        }
}

char *fp8kv_report_html(const struct fp8kv_report *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    struct matrix m;
    if (!f)
        return NULL;
    if (matrix_init(&m, r) != 0) {
        fclose(f);
        free(text);
        return NULL;
    }
    size_t states[FP8KV_STATE_COUNT] = {0};
    for (size_t i = 0; i < r->checks.count; i++)
        states[fp8kv_check_state(&r->checks.items[i])]++;
    char title[96];
    snprintf(title, sizeof title, "fp8kv conformance report: %s", r->target.target);
    html_begin(f, title);
    put_banner(f, r, states);
    put_facts(f, r);
    if (r->target.executed) {
        put_matrix(f, r, &m);
        put_differences(f, r);
        fp8kv_svg_pictures(f, r);
        put_kv_cases(f, r);
        put_details(f, r, &m);
    }
    fprintf(f, "</body>\n</html>\n");
    matrix_free(&m);
    fclose(f);
    return text;
}

/* ---- index.html
 * ---------------------------------------------------------------------------------- */

/* The id argument of an index cell: a target's report and a check family. */
struct index_ref {
    const struct fp8kv_report *report;
    const char *family;
};

/* The link of an index cell: the details of the first check of that family in the report
 * failed, else of the first one. */
static void put_index_id(FILE *f, const void *arg)
{
    const struct index_ref *ref = arg;
    const struct fp8kv_check *first = NULL;
    for (size_t i = 0; i < ref->report->checks.count; i++) {
        const struct fp8kv_check *c = &ref->report->checks.items[i];
        if (strcmp(fp8kv_check_family(c), ref->family) != 0)
            continue;
        if (!first || fp8kv_check_state(c) == FP8KV_STATE_FAIL)
            first = c;
        if (fp8kv_check_state(c) == FP8KV_STATE_FAIL)
            break;
    }
    put_group_id(f, first->subject, ref->family, first->profile);
}

/* The row of a target's report in index.html: its verdict, a cell per check family, its facts
 * and the links to its files. */
static void put_index_row(FILE *f, const struct fp8kv_index_entry *e,
                          const struct distinct *families)
{
    const struct fp8kv_report *r = &e->report;
    fprintf(f, "<tr><th><a href=\"");
    put_report_href(f, e->name, "report.html");
    fprintf(f, "\">");
    put(f, e->name);
    fprintf(f, "</a></th><td class=\"%s\">",
            strcmp(r->verdict, "conformant") == 0      ? "s-pass"
            : strcmp(r->verdict, "nonconformant") == 0 ? "s-fail"
                                                       : "s-not-run");
    put(f, r->verdict);
    fprintf(f, "</td>");
    for (size_t k = 0; k < families->n; k++) {
        size_t counts[FP8KV_STATE_COUNT] = {0};
        for (size_t j = 0; j < r->checks.count; j++)
            if (strcmp(fp8kv_check_family(&r->checks.items[j]), families->v[2 * k]) == 0)
                counts[fp8kv_check_state(&r->checks.items[j])]++;
        const struct index_ref ref = {r, families->v[2 * k]};
        put_cell(f, counts, e->name, put_index_id, &ref);
    }
    fprintf(f, "<td>%zu</td><td>", r->checks.count);
    put(f, r->target.device);
    fprintf(f, "</td><td>");
    put(f, r->date[0] ? r->date : "not recorded");
    fprintf(f, "</td><td>");
    put(f, r->generator);
    fprintf(f, "</td><td><code>");
    put(f, r->commit[0] ? r->commit : "not recorded");
    fprintf(f, "</code></td><td><a href=\"");
    put_report_href(f, e->name, "report.md");
    fprintf(f, "\">md</a> <a href=\"");
    put_report_href(f, e->name, "report.json");
    fprintf(f, "\">json</a> <a href=\"");
    put_report_href(f, e->name, "junit.xml");
    fprintf(f, "\">junit</a></td></tr>\n");
}

/* The folders with another kind of report (scripts/peers), then the entries not listed. */
static void put_index_others(FILE *f, const struct fp8kv_index *ix)
{
    int others = 0;
    for (size_t i = 0; i < ix->count; i++) {
        const struct fp8kv_index_entry *e = &ix->entries[i];
        if (e->is_target)
            continue;
        fprintf(f, "%s<li><a href=\"", others++ ? "" : "<h2>Other reports</h2>\n<ul>\n");
        put_report_href(f, e->name, "report.md");
        fprintf(f, "\">");
        put(f, e->name);
        fprintf(f, "</a> (<a href=\"");
        put_report_href(f, e->name, "report.json");
        fprintf(f, "\">json</a>)</li>\n");
    }
    fprintf(f, "%s", others ? "</ul>\n" : "");
    for (size_t i = 0; i < ix->skipped_count; i++) {
        fprintf(f, "%s<li>", i ? "" : "<h2>Not listed (not report folders)</h2>\n<ul>\n");
        put(f, ix->skipped[i].name);
        fprintf(f, ": ");
        put(f, ix->skipped[i].why);
        fprintf(f, "</li>\n");
    }
    fprintf(f, "%s", ix->skipped_count ? "</ul>\n" : "");
}

char *fp8kv_index_html(const struct fp8kv_index *ix)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    const struct fp8kv_index_entry *e = ix->entries;
    struct distinct families = {0};
    size_t total = 0;
    for (size_t i = 0; i < ix->count; i++)
        total += e[i].is_target ? e[i].report.checks.count : 0;
    if (distinct_init(&families, total) != 0) {
        fclose(f);
        free(text);
        return NULL;
    }
    for (size_t i = 0; i < ix->count; i++)
        for (size_t j = 0; e[i].is_target && j < e[i].report.checks.count; j++)
            distinct_add(&families, fp8kv_check_family(&e[i].report.checks.items[j]), NULL);
    html_begin(f, "fp8kv reports");
    fprintf(f, "<h1>fp8kv reports</h1>\n<table class=\"index\">\n<tr><th>target</th>"
               "<th>verdict</th>");
    for (size_t k = 0; k < families.n; k++) {
        fprintf(f, "<th>");
        put(f, families.v[2 * k]);
        fprintf(f, "</th>");
    }
    fprintf(f, "<th>checks</th><th>device</th><th>date</th><th>generator</th><th>commit</th>"
               "<th>files</th></tr>\n");
    for (size_t i = 0; i < ix->count; i++)
        if (e[i].is_target)
            put_index_row(f, &e[i], &families);
    fprintf(f, "</table>\n");
    put_index_others(f, ix);
    fprintf(f, "</body>\n</html>\n");
    free(families.v);
    fclose(f);
    return text;
}
