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
 * string too long for its field); *r is then empty. */
int fp8kv_report_parse(const char *path, const char *text, size_t len, struct fp8kv_report *r);

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

/* fp8kv_put_escaped: s into f with the characters HTML and XML give a meaning (& < > " ')
 * written as entities, and control characters XML 1.0 cannot hold as U+FFFD. */
void fp8kv_put_escaped(FILE *f, const char *s);

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

/* fp8kv_index_markdown, fp8kv_index_html: index.md and index.html of n entries (sorted). */
char *fp8kv_index_markdown(const struct fp8kv_index_entry *e, size_t n);
char *fp8kv_index_html(const struct fp8kv_index_entry *e, size_t n);

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

#endif
