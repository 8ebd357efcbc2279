/* report/model.h — a report as report.json holds it, and what its renderers share (internal to
 * the judge library).
 *
 * Every file of a report folder but report.json (report.md, report.html, junit.xml) and the
 * index (index.md, index.html) is rendered from report.json parsed back into a struct
 * fp8kv_report: `fp8kv run` writes report.json, then renders the rest from what it wrote, so
 * `fp8kv report --from` regenerates the same bytes from report.json alone.
 */
#ifndef FP8KV_REPORT_MODEL_H
#define FP8KV_REPORT_MODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fp8kv/checks.h"
#include "fp8kv/run.h"

/* A parsed report.json. Strings absent from an older report are "". */
struct fp8kv_report {
    struct fp8kv_target_info target; /* target, device, runtime, ..., executed */
    char verdict[16];                /* "conformant", "nonconformant", "not run" */
    char profiles[48];
    char generator[64]; /* "fp8kv 0.1.0" */
    char date[32];      /* when it was written, UTC, ISO 8601 */
    char commit[64];    /* the source revision fp8kv was built from */
    char vectors_dir[1024];
    char manifest_sha256[72];
    int vectors_verified;
    double seconds;
    unsigned long long passed, failed, reported; /* the summary */
    struct fp8kv_results checks;
};

/* fp8kv_report_parse: the report.json text (len bytes) read from path into *r. 0, or FP8KV_ERR
 * with a message naming path and what is wrong (not JSON, a missing or mistyped field, a
 * string too long for its field, or a document that contradicts itself: see below); *r is then
 * empty.
 *
 * A document is checked, not believed: a check that says it passed must have cases, no mismatch
 * and (gated, with an NMSE) an NMSE within its threshold (fp8kv_check_finish's rule); a report
 * whose status is "not run" lists no checks; the verdict must be fp8kv_report_verdict of its
 * status, its vectors' "verified" and its checks; the summary must count its checks. */
int fp8kv_report_parse(const char *path, const char *text, size_t len, struct fp8kv_report *r);

/* fp8kv_report_verdict: the one verdict a report can have: "not run" when it did not execute,
 * else, against verified vectors, "conformant" when it has a gated check and every gated check
 * passed (fp8kv_results_passed), "nonconformant" otherwise; NULL (no verdict) when it executed
 * against vectors that were not verified. The writer writes it and the reader demands it. */
const char *fp8kv_report_verdict(int executed, int vectors_verified,
                                 const struct fp8kv_results *checks);

/* fp8kv_check_parse_json: the check object o, checks[index] of the document read from path,
 * into *c, as fp8kv_report_parse reads each (and a shard's examples and first failures,
 * fp8kv_check_json_shard). 0, or FP8KV_ERR naming path, the check and the field. */
int fp8kv_check_parse_json(const char *path, size_t index, json_t *o, struct fp8kv_check *c);

/* fp8kv_report_load: reads and parses the report.json at path (fp8kv_report_parse). */
int fp8kv_report_load(const char *path, struct fp8kv_report *r);

/* fp8kv_report_free: releases r's checks. */
void fp8kv_report_free(struct fp8kv_report *r);

/* ---- what a check says, in one place for every renderer ---------------------------------------
 */

/* A check's state in a report: failed, passed, reported without gating, or not run (a reported
 * row whose detail says "not run:", e.g. a KV case the subject has no scale granularity for). */
enum fp8kv_state { FP8KV_STATE_FAIL, FP8KV_STATE_PASS, FP8KV_STATE_INFO, FP8KV_STATE_NOT_RUN };
#define FP8KV_STATE_COUNT 4

/* "fail", "pass", "info", "not run": the index is the enum value. */
extern const char *const fp8kv_state_names[FP8KV_STATE_COUNT];

/* fp8kv_check_state: the state of check c. */
enum fp8kv_state fp8kv_check_state(const struct fp8kv_check *c);

/* fp8kv_check_family: the family check c belongs to, for the summary matrix and JUnit class
 * names: "encode", "sweep", "decode", "kv-store", "kv-read", "kv-attention", "kv-case",
 * "quant-nmse", "device", "subject" or "other". */
const char *fp8kv_check_family(const struct fp8kv_check *c);

/* fp8kv_check_base_name: c's name without the "-nan-strict" / "-nan-class" suffix a vendor
 * conversion's checks carry, into buf. */
void fp8kv_check_base_name(const struct fp8kv_check *c, char *buf, size_t size);

/* fp8kv_check_explain: what check c of report r means, in words generated from its name, state,
 * classes and counts (docs/DESIGN.md, the report section), into f; nothing for a plain pass. */
void fp8kv_check_explain(FILE *f, const struct fp8kv_report *r, const struct fp8kv_check *c);

/* ---- every string from outside, escaped for the medium it goes to: one function per medium ----
 * Names, details, failure lines and facts come from subjects, plugins, machines and documents,
 * so none is written anywhere as it is. */

/* fp8kv_put_escaped (HTML and XML, text and attribute values): s into f with the characters
 * HTML and XML give a meaning (& < > " ') written as entities, and what XML 1.0 cannot hold or
 * what would hide text (control characters but tab, newline and return: C0, DEL, C1 and the
 * bidirectional controls; U+FFFE, U+FFFF; bytes that are not UTF-8) as U+FFFD. */
void fp8kv_put_escaped(FILE *f, const char *s);

/* fp8kv_put_url_segment (a URL path segment: an href, a Markdown link's destination): s into f
 * with every byte but ASCII letters, digits and - . _ ~ percent-encoded (%XX), so no name can
 * end the path, start a query or fragment, or name a scheme. */
void fp8kv_put_url_segment(FILE *f, const char *s);

/* Where in Markdown (report.md, index.md) a string goes. */
enum fp8kv_md_place {
    FP8KV_MD_TEXT,       /* inline, inside a line: a table cell, a heading, a list item, a link's
                            text */
    FP8KV_MD_LINE_START, /* inline, at the start of a line (a paragraph) */
    FP8KV_MD_CODE_SPAN,  /* a code span in a table cell, written with its backtick delimiters */
    FP8KV_MD_CODE_LINE,  /* a line of a fenced code block (fenced by fp8kv_md_fence) */
};

/* fp8kv_md_put (Markdown): s into f as literal text at place `where`. Text: every character
 * Markdown gives a meaning inside a line (\ ` * [ ] < | # & $, and _ or ~ not between two letters
 * or digits) is backslash-escaped; at a line's start also what would begin a block (a heading,
 * quote, list, rule, fence, indentation). A code span is delimited by a backtick run longer
 * than any in s, its '|' escaped for the table it is in (and a backslash before one shown as
 * \x5c). A code block's line is written as it is. Everywhere, control characters (C0,
 * DEL, C1, bidirectional controls) and bytes that are not UTF-8 are shown as \xNN: no string
 * can end a line, a cell or a code block, make a heading, a link or markup. */
void fp8kv_md_put(FILE *f, const char *s, enum fp8kv_md_place where);

/* fp8kv_md_fence: the backtick fence (3, or one more than the longest backtick run of the n
 * lines) into buf (size bytes), so that no line of the block can close it. */
void fp8kv_md_fence(const char (*lines)[FP8KV_FAILURE_LINE_SIZE], int n, char *buf, size_t size);

/* fp8kv_term_put (a terminal): s into f with control characters (C0, DEL, C1, bidirectional
 * controls) and bytes that are not UTF-8 as \xNN and a backslash as \\, so that nothing
 * printed can move the cursor, erase, recolour or reorder what a reader sees. */
void fp8kv_term_put(FILE *f, const char *s);

/* fp8kv_text_char: the length (1 to 4) of the character s starts with (s not at its end), and
 * *shown: 1 when it may be written as it is, 0 when it is a control character (C0, DEL, C1,
 * a bidirectional control), a noncharacter (U+FFFE, U+FFFF) or a byte that does not begin a
 * valid UTF-8 sequence (length 1). What every escaper above reads strings by. */
size_t fp8kv_text_char(const char *s, int *shown);

/* ---- renderers: each returns a malloc'd text, or NULL when out of memory -----------------------
 */

/* fp8kv_report_markdown: report.md. */
char *fp8kv_report_markdown(const struct fp8kv_report *r);

/* fp8kv_report_html: report.html, self-contained (inline CSS and SVG, no script, no link out). */
char *fp8kv_report_html(const struct fp8kv_report *r);

/* fp8kv_report_junit: junit.xml, one testcase per check. */
char *fp8kv_report_junit(const struct fp8kv_report *r);

/* One folder of a report directory, for the index: a target's report, or another kind of
 * report (no "target" field: scripts/peers). */
struct fp8kv_index_entry {
    char name[256];
    int is_target;
    struct fp8kv_report report; /* is_target only */
};

/* An entry of a report directory the index does not list, and why ("not a folder", "a folder
 * without a report.json", "cannot be read: ..."). */
struct fp8kv_index_skip {
    char *name;
    char why[128];
};

/* The index of a report directory: every entry read (no cap), sorted by name (strcmp); the
 * report folders listed, every other entry named as skipped. Hidden entries (fp8kv's staging
 * folders and temporary files) and the index's own files are neither. */
struct fp8kv_index {
    struct fp8kv_index_entry *entries;
    size_t count;
    struct fp8kv_index_skip *skipped;
    size_t skipped_count;
};

/* fp8kv_index_load: reads out_dir into *ix (each target's report.json parsed: one that is
 * damaged, contradicts itself or names another target than its folder is an error naming it).
 * 0 or FP8KV_ERR; *ix is to be released with fp8kv_index_free either way. */
int fp8kv_index_load(const char *out_dir, struct fp8kv_index *ix);

/* fp8kv_index_write: renders ix as out_dir/index.md and index.html (each atomically). */
int fp8kv_index_write(const char *out_dir, const struct fp8kv_index *ix);

void fp8kv_index_free(struct fp8kv_index *ix);

/* fp8kv_report_render_beside: renders report.md, report.html and junit.xml from r (parsed from
 * the report.json at report_json) into the folder of report_json: all in memory first, then
 * each written atomically. */
int fp8kv_report_render_beside(const char *report_json, const struct fp8kv_report *r);

/* fp8kv_index_markdown, fp8kv_index_html: index.md and index.html of ix. */
char *fp8kv_index_markdown(const struct fp8kv_index *ix);
char *fp8kv_index_html(const struct fp8kv_index *ix);

/* ---- what the HTML pages and their pictures share (report/html.c, report/svg.c) ---- */

/* Distinct strings in order of first appearance (pointers into the report, not copies). */
struct distinct {
    const char **v;
    size_t n;
};

/* The index of the pair (a, b) in s (b may be NULL), added when new; s->v holds 2 per entry. */
static inline size_t distinct_add(struct distinct *s, const char *a, const char *b)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[2 * i], a) == 0 && (!b || strcmp(s->v[2 * i + 1], b) == 0))
            return i;
    s->v[2 * s->n] = a;
    s->v[2 * s->n + 1] = b;
    return s->n++;
}

/* Room for capacity entries in s (s->v to be freed); 0, or -1 when out of memory. */
static inline int distinct_init(struct distinct *s, size_t capacity)
{
    s->n = 0;
    s->v = calloc(2 * capacity + 2, sizeof *s->v);
    return s->v ? 0 : -1;
}

/* fp8kv_check_measure_text: a check's measured figures for a table cell, into buf: its NMSE
 * against its threshold ("1.2e-12 (≤ 1e-10)") or reported ("3.1e-07 (reported)"), then its
 * worst error against its bound ("; error/bound 0.031"); "" when it has neither. */
void fp8kv_check_measure_text(const struct fp8kv_check *c, char *buf, size_t size);

#endif
