/* report/md.c — report.md and index.md, for people reading the repository; and the one Markdown
 * escaper every string from outside goes through on its way there (fp8kv_md_put). */
#include <stdlib.h>
#include <string.h>

#include "fp8kv/run.h"
#include "report/model.h"

/* ---- Markdown escaping ------------------------------------------------------------------------
 */

static int ascii_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The n bytes at s shown as \xNN each. */
static void put_hex(FILE *f, const char *s, size_t n)
{
    for (size_t k = 0; k < n; k++)
        fprintf(f, "\\x%02x", (unsigned)(unsigned char)s[k]);
}

/* The longest run of backticks in s. */
static size_t backtick_run(const char *s)
{
    size_t longest = 0, run = 0;
    for (; *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    return longest;
}

/* s as inline text; at a line's start (line_start) nothing it begins with starts a block. */
static void md_text(FILE *f, const char *s, int line_start)
{
    /* what Markdown gives a meaning anywhere in a line; '_' and '~' emphasise or strike through
     * only where they are not inside a word */
    static const char always[] = "\\`*[]<|#&$";
    const char *start = s;
    size_t digits = 0;             /* at a line's start: "1." or "1)" would begin an ordered list */
    if (line_start && *s == ' ') { /* indentation: a code block */
        fputs("&#32;", f);
        s++;
    } else if (line_start && *s && strchr(">-+=~", *s)) { /* a quote, list, rule, fence */
        fputc('\\', f);
        fputc(*s++, f);
    }
    while (line_start && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    for (const char *p = s; *p;) {
        int shown;
        const size_t n = fp8kv_text_char(p, &shown);
        const char c = *p;
        const int in_word = p > start && ascii_alnum(p[-1]) && ascii_alnum(p[1]);
        if (!shown)
            put_hex(f, p, n);
        else if (n == 1 && (strchr(always, c) || ((c == '_' || c == '~') && !in_word) ||
                            (digits && p == s + digits && (c == '.' || c == ')'))))
            fprintf(f, "\\%c", c);
        else
            fwrite(p, 1, n, f);
        p += n;
    }
}

/* s as a code span in a table cell: delimited by a backtick run longer than any in s (padded
 * with a space where s starts or ends with a backtick, or with a space at both ends), its '|'
 * escaped for the table; a backslash before a '|' (which the table would take with the escape)
 * shown as \x5c. */
static void md_code_span(FILE *f, const char *s)
{
    const size_t ticks = backtick_run(s) + 1, len = strlen(s);
    const int pad = len && (s[0] == '`' || s[len - 1] == '`' || (s[0] == ' ' && s[len - 1] == ' '));
    for (size_t k = 0; k < ticks; k++)
        fputc('`', f);
    fputs(pad ? " " : "", f);
    for (const char *p = s; *p;) {
        int shown;
        const size_t n = fp8kv_text_char(p, &shown);
        if (!shown || (*p == '\\' && p[1] == '|'))
            put_hex(f, p, n);
        else if (*p == '|')
            fputs("\\|", f);
        else
            fwrite(p, 1, n, f);
        p += n;
    }
    fputs(pad ? " " : "", f);
    for (size_t k = 0; k < ticks; k++)
        fputc('`', f);
}

void fp8kv_md_put(FILE *f, const char *s, enum fp8kv_md_place where)
{
    switch (where) {
    case FP8KV_MD_TEXT: md_text(f, s, 0); break;
    case FP8KV_MD_LINE_START: md_text(f, s, 1); break;
    case FP8KV_MD_CODE_SPAN: md_code_span(f, s); break;
    case FP8KV_MD_CODE_LINE:
        for (const char *p = s; *p;) { /* literal; only what would end the line or hide text */
            int shown;
            const size_t n = fp8kv_text_char(p, &shown);
            if (shown || *p == '\t')
                fwrite(p, 1, n, f);
            else
                put_hex(f, p, n);
            p += n;
        }
        break;
    }
}

void fp8kv_md_fence(const char (*lines)[FP8KV_FAILURE_LINE_SIZE], int n, char *buf, size_t size)
{
    size_t ticks = 3;
    for (int i = 0; i < n; i++)
        ticks = backtick_run(lines[i]) + 1 > ticks ? backtick_run(lines[i]) + 1 : ticks;
    ticks = ticks < size ? ticks : size - 1;
    memset(buf, '`', ticks);
    buf[ticks] = '\0';
}

/* ---- report.md ---------------------------------------------------------------------------------
 */

/* A row of the facts table: "| name | value |", the value as text. */
static void put_fact(FILE *f, const char *name, const char *value)
{
    fprintf(f, "| %s | ", name);
    fp8kv_md_put(f, value, FP8KV_MD_TEXT);
    fprintf(f, " |\n");
}

static void put_facts(FILE *f, const struct fp8kv_report *r)
{
    const struct fp8kv_target_info *t = &r->target;
    fprintf(f, "\n\n| | |\n|---|---|\n");
    put_fact(f, "device", t->device);
    put_fact(f, "runtime", t->runtime);
    put_fact(f, "compiler", t->compiler);
    if (t->flags[0]) {
        fprintf(f, "| flags | ");
        fp8kv_md_put(f, t->flags, FP8KV_MD_CODE_SPAN);
        fprintf(f, " |\n");
    }
    put_fact(f, "profiles", r->profiles);
    if (t->compiled[0])
        put_fact(f, "compiled", t->compiled);
    if (t->assembly[0])
        put_fact(f, "assembly", t->assembly);
    fprintf(f, "| vectors | ");
    fp8kv_md_put(f, r->vectors_dir, FP8KV_MD_CODE_SPAN);
    fprintf(f, ", MANIFEST.json sha256 ");
    fp8kv_md_put(f, r->manifest_sha256, FP8KV_MD_CODE_SPAN);
    fprintf(f, ", %s |\n",
            r->vectors_verified ? "verified against MANIFEST.json and SHA256SUMS before the checks"
                                : "not verified in this run");
    put_fact(f, "generator", r->generator);
    if (r->commit[0])
        put_fact(f, "commit", r->commit);
    if (r->date[0])
        put_fact(f, "date", r->date);
    fprintf(f, "| checks | %llu passed, %llu failed, %llu reported (not gated) |\n", r->passed,
            r->failed, r->reported);
    fprintf(f, "| wall time | %.1f s |\n\n", r->seconds);
}

static void put_checks_table(FILE *f, const struct fp8kv_report *r)
{
    fprintf(f, "## Checks\n\n| result | check | subject | profile | cases | mismatches | "
               "NMSE (threshold) | time |\n|---|---|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        static const char *const outcome[] = {"info", "pass", "**FAIL**"};
        char profile[128];
        fp8kv_check_profile_label(c, profile, sizeof profile);
        fprintf(f, "| %s | ", outcome[fp8kv_check_outcome(c)]);
        fp8kv_md_put(f, c->name, FP8KV_MD_TEXT);
        fprintf(f, " | ");
        fp8kv_md_put(f, c->subject, FP8KV_MD_TEXT);
        fprintf(f, " | ");
        fp8kv_md_put(f, profile, FP8KV_MD_TEXT);
        fprintf(f, " | %llu | %llu | ", (unsigned long long)c->cases,
                (unsigned long long)c->mismatches);
        char measure[96];
        fp8kv_check_measure_text(c, measure, sizeof measure);
        fprintf(f, "%s | %.2f s |\n", measure, c->seconds);
    }
}

/* A check not passed: its heading, detail, mismatches per class and failure lines. */
static void put_difference(FILE *f, const struct fp8kv_check *c)
{
    char profile[128], fence[FP8KV_FAILURE_LINE_SIZE + 2];
    fp8kv_check_profile_label(c, profile, sizeof profile);
    fprintf(f, "\n### ");
    fp8kv_md_put(f, c->name, FP8KV_MD_TEXT);
    fputc(' ', f);
    fp8kv_md_put(f, c->subject, FP8KV_MD_TEXT);
    fputc(' ', f);
    fp8kv_md_put(f, profile, FP8KV_MD_TEXT);
    fprintf(f, "\n\n");
    fp8kv_md_put(f, c->detail, FP8KV_MD_LINE_START);
    fprintf(f, "\n\n");
    if (c->has_classes) {
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
            if (c->class_mismatches[k])
                fprintf(f, "- %s: %llu mismatches\n", fp8kv_class_names[k],
                        (unsigned long long)c->class_mismatches[k]);
        fputc('\n', f);
    }
    fp8kv_md_fence(c->failures, c->failure_lines, fence, sizeof fence);
    fprintf(f, "%s\n", fence);
    for (int k = 0; k < c->failure_lines; k++) {
        fp8kv_md_put(f, c->failures[k], FP8KV_MD_CODE_LINE);
        fputc('\n', f);
    }
    fprintf(f, "%s\n", fence);
}

char *fp8kv_report_markdown(const struct fp8kv_report *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    const struct fp8kv_target_info *t = &r->target;
    fprintf(f, "# fp8kv conformance report: ");
    fp8kv_md_put(f, t->target, FP8KV_MD_TEXT);
    fprintf(f, "\n\n**Verdict: %s**", r->verdict); /* one of three, checked against the checks */
    if (!t->executed) {
        fprintf(f, " (");
        fp8kv_md_put(f, t->not_run_reason, FP8KV_MD_TEXT);
        fputc(')', f);
    }
    put_facts(f, r);
    if (!t->executed) {
        fprintf(f, "Nothing was executed on this target: no check passed or failed.\n");
        fclose(f);
        return text;
    }
    put_checks_table(f, r);
    /* the failures of gated checks, then the differences reported without gating (e.g. a
     * vendor conversion's NaN sign under NaN check strict, when it claims NaN check class) */
    for (int gated = 1; gated >= 0; gated--) {
        int any = 0;
        for (size_t i = 0; i < r->checks.count; i++) {
            const struct fp8kv_check *c = &r->checks.items[i];
            if (c->passed || c->gated != gated)
                continue;
            if (!any++)
                fprintf(f, gated ? "\n## Failures\n" : "\n## Differences reported, not gated\n");
            put_difference(f, c);
        }
    }
    fclose(f);
    return text;
}

/* ---- index.md ----------------------------------------------------------------------------------
 */

/* A link to name/report.md: the name as the link's text and, percent-encoded, its path. */
static void put_report_link(FILE *f, const char *name)
{
    fputc('[', f);
    fp8kv_md_put(f, name, FP8KV_MD_TEXT);
    fprintf(f, "](");
    fp8kv_put_url_segment(f, name);
    fprintf(f, "/report.md)");
}

char *fp8kv_index_markdown(const struct fp8kv_index *ix)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    const struct fp8kv_index_entry *e = ix->entries;
    fprintf(f, "# fp8kv reports\n\n| target | verdict | checks | device |\n|---|---|---:|---|\n");
    for (size_t i = 0; i < ix->count; i++) {
        if (!e[i].is_target)
            continue;
        fprintf(f, "| ");
        put_report_link(f, e[i].name);
        fprintf(f, " | %s | %zu | ", e[i].report.verdict, e[i].report.checks.count);
        fp8kv_md_put(f, e[i].report.target.device, FP8KV_MD_TEXT);
        fprintf(f, " |\n");
    }
    int others = 0; /* folders with a report of another kind (scripts/peers) */
    for (size_t i = 0; i < ix->count; i++) {
        if (e[i].is_target)
            continue;
        fprintf(f, "%s- ", others++ ? "" : "\nOther reports:\n\n");
        put_report_link(f, e[i].name);
        fputc('\n', f);
    }
    for (size_t i = 0; i < ix->skipped_count; i++) {
        fprintf(f, "%s- ", i ? "" : "\nNot listed (not report folders):\n\n");
        fp8kv_md_put(f, ix->skipped[i].name, FP8KV_MD_TEXT);
        fprintf(f, ": ");
        fp8kv_md_put(f, ix->skipped[i].why, FP8KV_MD_TEXT);
        fputc('\n', f);
    }
    fclose(f);
    return text;
}
