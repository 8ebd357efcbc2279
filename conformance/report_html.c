/* report_html.c — report.html and index.html: self-contained pages a release manager reads at a
 * glance (inline CSS and SVG, no script, nothing loaded from elsewhere). A report page has a
 * verdict banner, the summary matrix (subject and check family by profile), every difference
 * explained, pictures (the decode table, mismatches per input class, NMSE against thresholds,
 * the quantization error), the KV checks grouped by golden case, and every check in detail. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_model.h"

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

/* The fill colour of each state in the pictures. */
static const char *const state_colour[FP8KV_STATE_COUNT] = {"#c62828", "#2e7d32", "#1565c0",
                                                            "#9e9e9e"};

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

/* ---- the list of distinct names (subjects, profiles, families, rows) ---------------------------
 */

/* Distinct strings in order of first appearance (pointers into the report, not copies). */
struct distinct {
    const char **v;
    size_t n;
};

/* The index of the pair (a, b) in s (b may be NULL), added when new; s->v holds 2 per entry. */
static size_t distinct_add(struct distinct *s, const char *a, const char *b)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[2 * i], a) == 0 && (!b || strcmp(s->v[2 * i + 1], b) == 0))
            return i;
    s->v[2 * s->n] = a;
    s->v[2 * s->n + 1] = b;
    return s->n++;
}

static int distinct_init(struct distinct *s, size_t capacity)
{
    s->n = 0;
    s->v = calloc(2 * capacity + 2, sizeof *s->v);
    return s->v ? 0 : -1;
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

/* One cell of a matrix: the state, its count, what else is there, and a link to href#id. */
static void put_cell(FILE *f, const size_t counts[FP8KV_STATE_COUNT], const char *href_prefix,
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
    fprintf(f, "<td class=\"%s\"><a href=\"%s#", state_css[state], href_prefix);
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
            put_cell(f, counts, "", put_cell_id, &ref);
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

/* ---- pictures ----------------------------------------------------------------------------------
 */

/* x of v on a log10 axis from 10^lo to 10^hi over [x0, x0 + w], clamped to it. */
static double log_x(double v, int lo, int hi, double x0, double w)
{
    double e = v > 0 ? log10(v) : lo;
    e = e < lo ? lo : e > hi ? hi : e;
    return x0 + w * (e - lo) / (hi - lo);
}

/* The ticks and labels of that axis at y, every `step` decades. */
static void put_log_axis(FILE *f, int lo, int hi, int step, double x0, double w, double y)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>", x0, y,
            x0 + w, y);
    for (int e = lo; e <= hi; e += step) {
        const double x = log_x(pow(10, e), lo, hi, x0, w);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">1e%d</text>",
                x, y, x, y + 4, x, y + 15, e);
    }
    fputc('\n', f);
}

static void svg_begin(FILE *f, int width, int height, const char *title)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" font-family=\"sans-serif\"><title>",
            width, height, width, height);
    put(f, title);
    fprintf(f, "</title>\n");
}

/* What a code of a format is, for the decode table's colours (Inf last: only formats with Inf
 * show it in the legend). */
enum code_kind {
    CODE_ZERO,
    CODE_SUBNORMAL,
    CODE_NORMAL,
    CODE_MAX,
    CODE_NAN,
    CODE_INF,
    CODE_KIND_COUNT
};
static const char *const code_kind_names[CODE_KIND_COUNT] = {"zero",       "subnormal", "normal",
                                                             "max finite", "NaN",       "Inf"};
static const char *const code_kind_colour[CODE_KIND_COUNT] = {"#fff9c4", "#b3e5fc", "#c8e6c9",
                                                              "#ffe0b2", "#e1bee7", "#ffcdd2"};

static enum code_kind code_kind(const struct fp8kv_format *fmt, int q)
{
    const int magnitude = q & 0x7F, exponent = magnitude >> fmt->man_bits;
    if (fp8kv_is_nan_code(fmt, (uint8_t)q))
        return CODE_NAN;
    if (fp8kv_is_inf_code(fmt, (uint8_t)q))
        return CODE_INF;
    if (magnitude == 0)
        return CODE_ZERO;
    if (magnitude == fmt->max_code)
        return CODE_MAX;
    return exponent == 0 ? CODE_SUBNORMAL : CODE_NORMAL;
}

/* The value of a code of a format (NaN for a NaN code, ±Inf for an Inf code). */
static double code_value(const struct fp8kv_format *fmt, int q)
{
    const int magnitude = q & 0x7F, exponent = magnitude >> fmt->man_bits;
    const int mantissa = magnitude & ((1 << fmt->man_bits) - 1);
    if (fp8kv_is_nan_code(fmt, (uint8_t)q))
        return NAN;
    if (fp8kv_is_inf_code(fmt, (uint8_t)q))
        return q & 0x80 ? -INFINITY : INFINITY;
    const double v = exponent == 0 ? ldexp(mantissa, 1 - fmt->bias - fmt->man_bits)
                                   : ldexp(mantissa + (1 << fmt->man_bits),
                                           exponent - fmt->bias - fmt->man_bits);
    return q & 0x80 ? -v : v;
}

/* The decode checks of format fmt: the 256 codes as a 16 x 16 grid coloured by kind, a code any
 * of them decoded wrongly outlined in red. */
static void put_decode_grid(FILE *f, const struct fp8kv_report *r, const struct fp8kv_format *fmt)
{
    uint8_t wrong[32] = {0};
    size_t checks = 0, failed = 0;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        const struct fp8kv_profile *p = fp8kv_profile_by_name(c->profile);
        if (strcmp(c->name, "decode") != 0 || !p || p->format != fmt)
            continue;
        checks++;
        failed += !c->passed;
        for (int k = 0; k < 32; k++)
            wrong[k] |= c->code_mismatched[k];
    }
    if (!checks)
        return;
    const int cell = 26, x0 = 34, y0 = 30, legend = x0 + 16 * cell + 20;
    char title[160];
    snprintf(title, sizeof title, "the 256 codes of %s, coloured by kind", fmt->name);
    fprintf(f, "<figure>\n");
    svg_begin(f, legend + 130, y0 + 16 * cell + 10, title);
    for (int d = 0; d < 16; d++)
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">x%x</text>"
                "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%xx</text>\n",
                x0 + d * cell + cell / 2, y0 - 8, d, x0 - 6, y0 + d * cell + cell / 2 + 4, d);
    for (int q = 0; q < 256; q++) {
        const enum code_kind kind = code_kind(fmt, q);
        const int x = x0 + (q % 16) * cell, y = y0 + (q / 16) * cell;
        const int bad = wrong[q / 8] >> (q % 8) & 1;
        fprintf(f,
                "<g class=\"code%s\"><title>%02x: %s, %.9g%s</title><rect x=\"%d\" y=\"%d\" "
                "width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%d\"/>"
                "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%02x</text></g>\n",
                bad ? " mismatch" : "", q, code_kind_names[kind], code_value(fmt, q),
                bad ? ", decoded wrongly" : "", x, y, cell, cell, code_kind_colour[kind],
                bad ? "#c62828" : "#fff", bad ? 3 : 1, x + cell / 2, y + cell / 2 + 3, q);
    }
    const int kinds = fmt->has_inf ? CODE_KIND_COUNT : CODE_INF;
    for (int k = 0; k < kinds; k++)
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n",
                legend, y0 + k * 20, code_kind_colour[k], legend + 20, y0 + k * 20 + 12,
                code_kind_names[k]);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#fff\" "
            "stroke=\"#c62828\" stroke-width=\"3\"/><text x=\"%d\" y=\"%d\" "
            "font-size=\"12\">decoded wrongly</text>\n</svg>\n",
            legend, y0 + kinds * 20, legend + 20, y0 + kinds * 20 + 12);
    fprintf(f,
            "<figcaption>The decode table of %s: %zu decode checks, %zu failed.</figcaption>\n"
            "</figure>\n",
            fmt->name, checks, failed);
}

/* Mismatches per input class of one subject's checks with classes: the cases judged (grey) and
 * the mismatches, gated (red) and reported (amber), on a log scale. */
static void put_class_bars(FILE *f, const struct fp8kv_report *r, const char *subject)
{
    uint64_t cases[FP8KV_CLASS_COUNT] = {0}, gated[FP8KV_CLASS_COUNT] = {0},
             reported[FP8KV_CLASS_COUNT] = {0};
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        if (!c->has_classes || strcmp(c->subject, subject) != 0)
            continue;
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
            cases[k] += c->class_cases[k];
            (c->gated ? gated : reported)[k] += c->class_mismatches[k];
        }
    }
    uint64_t most = 1;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        most = cases[k] > most ? cases[k] : most;
        most = gated[k] + reported[k] > most ? gated[k] + reported[k] : most;
    }
    const int hi = (int)ceil(log10((double)most)), x0 = 110, w = 420, row = 30;
    char title[160];
    snprintf(title, sizeof title, "%s: mismatches per input class", subject);
    svg_begin(f, x0 + w + 260, FP8KV_CLASS_COUNT * row + 40, title);
    fprintf(f, "<text x=\"0\" y=\"12\" font-size=\"12\" font-weight=\"bold\">");
    put(f, subject);
    fprintf(f, "</text>\n");
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        const int y = 20 + k * row;
        const uint64_t wrong = gated[k] + reported[k];
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%s</text>", x0 - 6,
                y + 14, fp8kv_class_names[k]);
        if (cases[k])
            fprintf(f,
                    "<rect class=\"cases\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"9\" "
                    "fill=\"#bdbdbd\"><title>%llu cases</title></rect>",
                    x0, y + 2, log_x((double)cases[k], 0, hi, x0, w) - x0 + 1,
                    (unsigned long long)cases[k]);
        if (wrong)
            fprintf(f,
                    "<rect class=\"mismatches\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"9\" "
                    "fill=\"%s\"><title>%llu mismatches</title></rect>",
                    x0, y + 12, log_x((double)wrong, 0, hi, x0, w) - x0 + 1,
                    gated[k] ? "#c62828" : "#ef6c00", (unsigned long long)wrong);
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" font-size=\"11\">%llu mismatches%s, %llu cases</text>\n",
                x0 + w + 8, y + 14, (unsigned long long)wrong,
                reported[k] && !gated[k] ? " (reported)" : "", (unsigned long long)cases[k]);
    }
    put_log_axis(f, 0, hi, hi > 6 ? 2 : 1, x0, w, 20 + FP8KV_CLASS_COUNT * row);
    fprintf(f, "</svg>\n");
}

/* The NMSE of every gated check with one against its threshold, a row per check name, on a log
 * scale from 1e-20 to 1 (an NMSE of exactly 0 in its own column at the left). */
static void put_nmse_plot(FILE *f, const struct fp8kv_report *r)
{
    struct distinct names;
    if (distinct_init(&names, r->checks.count) != 0)
        return;
    for (size_t i = 0; i < r->checks.count; i++)
        if (r->checks.items[i].has_nmse && r->checks.items[i].gated)
            distinct_add(&names, r->checks.items[i].name, NULL);
    const int lo = -20, hi = 0, x0 = 190, w = 460, row = 28, zero_x = x0 - 40;
    if (names.n) {
        fprintf(f, "<h3>NMSE of the read and attention checks against their thresholds</h3>\n");
        svg_begin(f, x0 + w + 40, (int)names.n * row + 50, "NMSE against threshold, log scale");
        fprintf(f, "<text x=\"%d\" y=\"12\" font-size=\"11\" text-anchor=\"middle\">0</text>\n",
                zero_x);
    }
    for (size_t n = 0; n < names.n; n++) {
        const double y = 26 + (double)n * row;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">", zero_x - 14,
                y + 4);
        put(f, names.v[2 * n]);
        fprintf(f, "</text><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                zero_x, y, x0 + w, y);
        for (size_t i = 0; i < r->checks.count; i++) {
            const struct fp8kv_check *c = &r->checks.items[i];
            if (!c->has_nmse || !c->gated || strcmp(c->name, names.v[2 * n]) != 0)
                continue;
            const double tx = c->threshold > 0 ? log_x(c->threshold, lo, hi, x0, w) : zero_x;
            const double x = isnan(c->nmse) || c->nmse >= 1 ? x0 + w
                             : c->nmse > 0                  ? log_x(c->nmse, lo, hi, x0, w)
                                                            : zero_x;
            fprintf(f,
                    "<line class=\"threshold\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#c62828\" stroke-width=\"2\"/>"
                    "<circle class=\"nmse\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
                    "fill-opacity=\"0.5\"><title>",
                    tx, y - 9, tx, y + 9, x, y, state_colour[fp8kv_check_state(c)]);
            put(f, c->subject);
            fprintf(f, " %s: NMSE %.3g, threshold %.3g</title></circle>\n", c->profile, c->nmse,
                    c->threshold);
        }
    }
    if (names.n) {
        put_log_axis(f, lo, hi, 5, x0, w, 26 + (double)names.n * row - 10);
        fprintf(f, "</svg>\n<p>A dot per check (green: passed, red: failed), the red bar its "
                   "threshold; an NMSE of exactly 0 (bit identity) sits in the column marked "
                   "0.</p>\n");
    }
    free(names.v);
}

/* The quantization NMSE (reported) of every distribution, subject and profile as a bar on a log
 * scale, with the signal-to-noise ratio it means. */
static void put_quantization_bars(FILE *f, const struct fp8kv_report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->checks.count; i++)
        n += strcmp(fp8kv_check_family(&r->checks.items[i]), "quant-nmse") == 0;
    if (!n)
        return;
    const int lo = -8, hi = 0, x0 = 360, w = 300, row = 20;
    fprintf(f, "<h3>Quantization error (reported, never gating)</h3>\n");
    svg_begin(f, x0 + w + 150, (int)n * row + 40, "quantization NMSE per distribution");
    size_t k = 0;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        if (strcmp(fp8kv_check_family(c), "quant-nmse") != 0)
            continue;
        const double y = 8 + (double)k++ * row;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">", x0 - 6,
                y + 11);
        put(f, c->subject);
        fprintf(f, " · ");
        put(f, c->name + strlen("quant-nmse-"));
        fprintf(f, " · ");
        put(f, c->profile);
        fprintf(f,
                "</text><rect class=\"quant\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"12\" "
                "fill=\"#1565c0\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%.3g (%.1f "
                "dB)</text>\n",
                x0, y + 2, log_x(c->nmse, lo, hi, x0, w) - x0, x0 + w + 6.0, y + 11, c->nmse,
                c->nmse > 0 ? -10.0 * log10(c->nmse) : INFINITY);
    }
    put_log_axis(f, lo, hi, 2, x0, w, 10 + (double)n * row);
    fprintf(f, "</svg>\n");
}

static void put_pictures(FILE *f, const struct fp8kv_report *r)
{
    fprintf(f, "<h2 id=\"pictures\">Pictures</h2>\n");
    int decode = 0;
    for (size_t i = 0; i < r->checks.count; i++)
        decode |= strcmp(r->checks.items[i].name, "decode") == 0;
    if (decode)
        fprintf(f, "<h3>The decode table</h3>\n");
    for (int k = 0; k < FP8KV_FORMAT_COUNT; k++)
        put_decode_grid(f, r, &fp8kv_formats[k]);
    struct distinct subjects;
    if (distinct_init(&subjects, r->checks.count) == 0) {
        for (size_t i = 0; i < r->checks.count; i++)
            if (r->checks.items[i].has_classes)
                distinct_add(&subjects, r->checks.items[i].subject, NULL);
        if (subjects.n)
            fprintf(f, "<h3>Mismatches per input class</h3>\n<p>Per subject, over its checks "
                       "with input classes: the cases judged (grey) and the mismatches (red: "
                       "gated, amber: reported), on a log scale. The exhaustive sweeps count "
                       "their mismatches per class, not their cases.</p>\n");
        for (size_t s = 0; s < subjects.n; s++)
            put_class_bars(f, r, subjects.v[2 * s]);
        free(subjects.v);
    }
    put_nmse_plot(f, r);
    put_quantization_bars(f, r);
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
        fprintf(f, "<h3 id=\"");
        put_slug(f, "kv-");
        fwrite(detail + 3, 1, case_key_length(detail) - 3, f);
        fprintf(f, "\">");
        fwrite(detail, 1, case_key_length(detail), f);
        fprintf(f, ": ");
        const size_t words = case_words_length(r, first);
        char *text = strndup(detail + case_key_length(detail) + 2, words);
        put(f, text ? text : "");
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
    if (c->has_nmse && c->gated)
        fprintf(f, "%.3g (≤ %.3g)", c->nmse, c->threshold);
    else if (c->has_nmse)
        fprintf(f, "%.3g (reported)", c->nmse);
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
        put_pictures(f, r);
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

char *fp8kv_index_html(const struct fp8kv_index_entry *e, size_t n)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    struct distinct families = {0};
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += e[i].is_target ? e[i].report.checks.count : 0;
    if (distinct_init(&families, total) != 0) {
        fclose(f);
        free(text);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
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
    for (size_t i = 0; i < n; i++) {
        if (!e[i].is_target)
            continue;
        const struct fp8kv_report *r = &e[i].report;
        fprintf(f, "<tr><th><a href=\"");
        put(f, e[i].name);
        fprintf(f, "/report.html\">");
        put(f, e[i].name);
        fprintf(f, "</a></th><td class=\"%s\">",
                strcmp(r->verdict, "conformant") == 0      ? "s-pass"
                : strcmp(r->verdict, "nonconformant") == 0 ? "s-fail"
                                                           : "s-not-run");
        put(f, r->verdict);
        fprintf(f, "</td>");
        for (size_t k = 0; k < families.n; k++) {
            size_t counts[FP8KV_STATE_COUNT] = {0};
            for (size_t j = 0; j < r->checks.count; j++)
                if (strcmp(fp8kv_check_family(&r->checks.items[j]), families.v[2 * k]) == 0)
                    counts[fp8kv_check_state(&r->checks.items[j])]++;
            char href[300];
            snprintf(href, sizeof href, "%s/report.html", e[i].name);
            const struct index_ref ref = {r, families.v[2 * k]};
            put_cell(f, counts, href, put_index_id, &ref);
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
        put(f, e[i].name);
        fprintf(f, "/report.md\">md</a> <a href=\"");
        put(f, e[i].name);
        fprintf(f, "/report.json\">json</a> <a href=\"");
        put(f, e[i].name);
        fprintf(f, "/junit.xml\">junit</a></td></tr>\n");
    }
    fprintf(f, "</table>\n");
    int others = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].is_target)
            continue;
        fprintf(f, "%s<li><a href=\"", others++ ? "" : "<h2>Other reports</h2>\n<ul>\n");
        put(f, e[i].name);
        fprintf(f, "/report.md\">");
        put(f, e[i].name);
        fprintf(f, "</a> (<a href=\"");
        put(f, e[i].name);
        fprintf(f, "/report.json\">json</a>)</li>\n");
    }
    fprintf(f, "%s</body>\n</html>\n", others ? "</ul>\n" : "");
    free(families.v);
    fclose(f);
    return text;
}
