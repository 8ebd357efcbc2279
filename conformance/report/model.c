/* report/model.c — report.json parsed back (struct fp8kv_report), and what a check says in a
 * report: its state, its family and the words that explain it, one table each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "report/model.h"

/* A report.json this large is not one of ours: refused, never read whole. */
#define MAX_REPORT_BYTES (64u << 20)

/* ---- parsing ------------------------------------------------------------------------------- */

/* The file being parsed, for messages: every error names it and the field. */
struct parser {
    const char *path;
    size_t check; /* the index of the check being read, or SIZE_MAX for the top level */
};

static int bad(const struct parser *p, const char *key, const char *what)
{
    if (p->check != (size_t)-1)
        return fp8kv_fail("%s: checks[%zu].%s: %s", p->path, p->check, key, what);
    return fp8kv_fail("%s: %s: %s", p->path, key, what);
}

/* The string v (the field named key) into buf (size bytes). */
static int copy_string(const struct parser *p, const char *key, json_t *v, char *buf, size_t size)
{
    if (!json_is_string(v))
        return bad(p, key, v ? "not a string" : "missing");
    if (json_string_length(v) >= size || strlen(json_string_value(v)) != json_string_length(v))
        return bad(p, key, "too long for a report, or holds a NUL byte");
    memcpy(buf, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

/* A string field into buf (size bytes); an absent optional field is "". */
static int get_string(const struct parser *p, json_t *o, const char *key, int required, char *buf,
                      size_t size)
{
    json_t *v = json_object_get(o, key);
    buf[0] = '\0';
    return !v && !required ? 0 : copy_string(p, key, v, buf, size);
}

static int get_count(const struct parser *p, json_t *o, const char *key, unsigned long long *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return bad(p, key, v ? "not a count" : "missing");
    *out = (unsigned long long)json_integer_value(v);
    return 0;
}

static int get_bool(const struct parser *p, json_t *o, const char *key, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_boolean(v))
        return bad(p, key, v ? "not true or false" : "missing");
    *out = json_is_true(v);
    return 0;
}

/* A number, or one of the strings "inf", "-inf", "nan" report.json writes for those. */
static int get_number(const struct parser *p, json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    const char *s = json_string_value(v);
    if (json_is_number(v))
        *out = json_number_value(v);
    else if (s && strcmp(s, "inf") == 0)
        *out = INFINITY;
    else if (s && strcmp(s, "-inf") == 0)
        *out = -INFINITY;
    else if (s && strcmp(s, "nan") == 0)
        *out = NAN;
    else
        return bad(p, key, v ? "not a number" : "missing");
    return 0;
}

/* The index of name in names (count of them), or -1. */
static int name_index(const char *name, const char *const *names, int count)
{
    for (int k = 0; name && k < count; k++)
        if (strcmp(name, names[k]) == 0)
            return k;
    return -1;
}

/* The per-class counts object of a check (every class name a count; a class a report written
 * before it existed does not name counts 0; a class this fp8kv does not know is refused, since
 * its count would go unseen). */
static int get_classes(const struct parser *p, json_t *o, const char *key, uint64_t *counts)
{
    json_t *cls = json_object_get(o, key);
    if (!json_is_object(cls))
        return bad(p, key, cls ? "not an object" : "missing");
    const char *name;
    json_t *value;
    json_object_foreach(cls, name, value)
    {
        (void)value;
        if (name_index(name, fp8kv_class_names, FP8KV_CLASS_COUNT) < 0) { /* its count unseen */
            char what[160];
            snprintf(what, sizeof what, "an input class this fp8kv does not know: \"%.64s\"", name);
            return bad(p, key, what);
        }
    }
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        unsigned long long n = 0;
        if (json_object_get(cls, fp8kv_class_names[k]) &&
            get_count(p, cls, fp8kv_class_names[k], &n) != 0)
            return FP8KV_ERR;
        counts[k] = n;
    }
    return 0;
}

/* A failure object of a shard's "examples" or "first_failures" (key). */
static int parse_failure(const struct parser *p, const char *key, json_t *o,
                         struct fp8kv_failure *f)
{
    unsigned long long input = 0, last = 0, count = 0, got = 0, want = 0, other = 0, note = 0,
                       scale = 0;
    memset(f, 0, sizeof *f);
    if (!json_is_object(o))
        return bad(p, key, "not a list of failure objects");
    json_t *cls = json_object_get(o, "class");
    const int dtype = name_index(json_string_value(json_object_get(o, "dtype")), fp8kv_dtype_names,
                                 FP8KV_DTYPE_COUNT);
    const int k = json_is_null(cls)
                      ? FP8KV_NO_CLASS
                      : name_index(json_string_value(cls), fp8kv_class_names, FP8KV_CLASS_COUNT);
    if (get_count(p, o, "input", &input) || get_count(p, o, "last", &last) ||
        get_count(p, o, "count", &count) || get_count(p, o, "got", &got) ||
        get_count(p, o, "want", &want) || get_count(p, o, "other", &other) ||
        get_count(p, o, "note", &note) ||
        (json_object_get(o, "scale") && get_count(p, o, "scale", &scale)))
        return FP8KV_ERR;
    if (dtype < 0 || k < 0 || input > UINT32_MAX || last > UINT32_MAX || last < input ||
        count == 0 || got > 255 || want > 255 || other > 255 || note > 255 || scale > UINT32_MAX)
        return bad(p, key, "a failure with an unknown dtype or class, or a value out of range");
    *f = (struct fp8kv_failure){.input = (uint32_t)input,
                                .last = (uint32_t)last,
                                .count = count,
                                .scale = (uint32_t)scale,
                                .dtype = (uint8_t)dtype,
                                .has_scale = json_object_get(o, "scale") != NULL,
                                .cls = (uint8_t)k,
                                .got = (uint8_t)got,
                                .want = (uint8_t)want,
                                .other = (uint8_t)other,
                                .note = (uint8_t)note};
    return 0;
}

/* What a shard's check holds beyond the lines (fp8kv_check_json_shard): its examples, folded
 * again into c->examples in order (which rebuilds them as they were), and a device sweep's
 * first failures. Absent from other documents. */
static int parse_shard_parts(const struct parser *p, json_t *o, struct fp8kv_check *c)
{
    json_t *examples = json_object_get(o, "examples");
    if (examples &&
        (!json_is_array(examples) || json_array_size(examples) > FP8KV_MAX_FAILURE_LINES))
        return bad(p, "examples", "not a list of at most 39 failures");
    for (size_t i = 0; examples && i < json_array_size(examples); i++) {
        struct fp8kv_failure f;
        if (parse_failure(p, "examples", json_array_get(examples, i), &f) != 0)
            return FP8KV_ERR;
        if (fp8kv_examples_add(&c->examples, &f) < 0 || c->examples.n != (int)i + 1)
            return bad(p, "examples", "not the examples of one pass (out of order or too many)");
    }
    json_t *first = json_object_get(o, "first_failures");
    if (!first)
        return 0;
    unsigned long long limit = 0;
    if (get_count(p, o, "first_limit", &limit) != 0)
        return FP8KV_ERR;
    if (!json_is_array(first) || limit == 0 || limit > FP8KV_SWEEP_FAILURES ||
        json_array_size(first) > limit)
        return bad(p, "first_failures", "not a list of at most first_limit (1 .. 20) failures");
    c->first_limit = (int)limit;
    for (size_t i = 0; i < json_array_size(first); i++)
        if (parse_failure(p, "first_failures", json_array_get(first, i),
                          &c->first[c->first_count++]) != 0)
            return FP8KV_ERR;
    return 0;
}

static int parse_check(const struct parser *p, json_t *o, struct fp8kv_check *c)
{
    memset(c, 0, sizeof *c);
    unsigned long long cases = 0, mismatches = 0;
    if (!json_is_object(o))
        return bad(p, "", "not an object");
    int rc = get_string(p, o, "name", 1, c->name, sizeof c->name);
    if (rc == 0)
        rc = get_string(p, o, "subject", 1, c->subject, sizeof c->subject);
    if (rc == 0)
        rc = get_string(p, o, "profile", 1, c->profile, sizeof c->profile);
    if (rc == 0)
        rc = get_string(p, o, "detail", 1, c->detail, sizeof c->detail);
    if (rc == 0)
        rc = get_string(p, o, "rule", 0, c->rule, sizeof c->rule);
    if (rc == 0)
        rc = get_string(p, o, "model", 0, c->model, sizeof c->model);
    if (rc == 0)
        rc = get_count(p, o, "cases", &cases);
    if (rc == 0)
        rc = get_count(p, o, "mismatches", &mismatches);
    if (rc == 0)
        rc = get_bool(p, o, "gated", &c->gated);
    if (rc == 0)
        rc = get_bool(p, o, "passed", &c->passed);
    if (rc == 0)
        rc = get_number(p, o, "seconds", &c->seconds);
    c->cases = cases;
    c->mismatches = mismatches;
    if (rc == 0 && (c->has_nmse = json_object_get(o, "nmse") != NULL)) {
        rc = get_number(p, o, "nmse", &c->nmse);
        c->nmse_reported = json_is_null(json_object_get(o, "threshold"));
        if (rc == 0 && c->gated && !c->nmse_reported)
            rc = get_number(p, o, "threshold", &c->threshold);
    }
    if (rc == 0 && (c->has_bound = json_object_get(o, "bound_ratio") != NULL))
        rc = get_number(p, o, "bound_ratio", &c->bound_ratio);
    if (rc == 0 && (c->has_classes = json_object_get(o, "class_mismatches") != NULL)) {
        rc = get_classes(p, o, "class_mismatches", c->class_mismatches);
        if (rc == 0)
            rc = get_classes(p, o, "class_cases", c->class_cases);
    }
    json_t *codes = json_object_get(o, "mismatched_codes");
    if (rc == 0 && (c->has_codes = codes != NULL)) {
        size_t i;
        json_t *v;
        if (!json_is_array(codes))
            rc = bad(p, "mismatched_codes", "not an array");
        json_array_foreach(codes, i, v)
        {
            json_int_t q = json_integer_value(v);
            if (rc == 0 && (!json_is_integer(v) || q < 0 || q > 255))
                rc = bad(p, "mismatched_codes", "not a list of codes 0..255");
            if (rc == 0)
                c->code_mismatched[q / 8] |= (uint8_t)(1u << (q % 8));
        }
    }
    json_t *failures = json_object_get(o, "failures");
    if (rc == 0 &&
        (!json_is_array(failures) || json_array_size(failures) > FP8KV_MAX_FAILURE_LINES))
        rc = bad(p, "failures", "not a list of at most 20 lines");
    for (size_t i = 0; rc == 0 && i < json_array_size(failures); i++) {
        rc = copy_string(p, "failures", json_array_get(failures, i), c->failures[i],
                         sizeof c->failures[i]);
        c->failure_lines = (int)i + 1;
    }
    return rc == 0 ? parse_shard_parts(p, o, c) : rc;
}

int fp8kv_check_parse_json(const char *path, size_t index, json_t *o, struct fp8kv_check *c)
{
    const struct parser p = {path, index};
    return parse_check(&p, o, c);
}

/* The top level: where it ran, the vectors, the summary; then every check. */
static int parse_root(const struct parser *p, json_t *root, struct fp8kv_report *r)
{
    struct fp8kv_target_info *t = &r->target;
    if (!json_is_object(root))
        return fp8kv_fail("%s: not a JSON object", p->path);
    json_t *version = json_object_get(root, "schema_version");
    if (!json_is_integer(version) || json_integer_value(version) != 1)
        return bad(p, "schema_version", "not 1: not an fp8kv report of this version");
    char status[16];
    int rc = get_string(p, root, "target", 1, t->target, sizeof t->target);
    if (rc == 0 && fp8kv_target_kind_of_name(t->target) < 0)
        rc = bad(p, "target", "not a target name");
    const struct {
        const char *key;
        int required;
        char *buf;
        size_t size;
    } strings[] = {
        {"verdict", 1, r->verdict, sizeof r->verdict},
        {"status", 1, status, sizeof status},
        {"device", 1, t->device, sizeof t->device},
        {"runtime", 1, t->runtime, sizeof t->runtime},
        {"compiler", 1, t->compiler, sizeof t->compiler},
        {"flags", 1, t->flags, sizeof t->flags},
        {"profiles", 1, r->profiles, sizeof r->profiles},
        {"generator", 1, r->generator, sizeof r->generator},
        {"not_run_reason", 0, t->not_run_reason, sizeof t->not_run_reason},
        {"compiled", 0, t->compiled, sizeof t->compiled},
        {"assembly", 0, t->assembly, sizeof t->assembly},
        {"date", 0, r->date, sizeof r->date},
        {"commit", 0, r->commit, sizeof r->commit},
    };
    for (size_t i = 0; rc == 0 && i < sizeof strings / sizeof strings[0]; i++)
        rc = get_string(p, root, strings[i].key, strings[i].required, strings[i].buf,
                        strings[i].size);
    if (rc == 0 && strcmp(r->verdict, "conformant") != 0 &&
        strcmp(r->verdict, "nonconformant") != 0 && strcmp(r->verdict, "not run") != 0)
        rc = bad(p, "verdict", "not conformant, nonconformant or not run");
    if (rc == 0 && strcmp(status, "run") != 0 && strcmp(status, "not run") != 0)
        rc = bad(p, "status", "neither \"run\" nor \"not run\"");
    t->executed = rc == 0 && strcmp(status, "run") == 0;
    json_t *vectors = json_object_get(root, "vectors");
    if (rc == 0 && !json_is_object(vectors))
        rc = bad(p, "vectors", "missing or not an object");
    if (rc == 0)
        rc = get_string(p, vectors, "dir", 1, r->vectors_dir, sizeof r->vectors_dir);
    if (rc == 0)
        rc = get_string(p, vectors, "manifest_sha256", 1, r->manifest_sha256,
                        sizeof r->manifest_sha256);
    if (rc == 0 &&
        json_object_get(vectors, "verified")) /* absent before the vectors were trusted */
        rc = get_bool(p, vectors, "verified", &r->vectors_verified);
    if (rc == 0)
        rc = get_number(p, root, "seconds", &r->seconds);
    json_t *summary = json_object_get(root, "summary");
    if (rc == 0 && !json_is_object(summary))
        rc = bad(p, "summary", "missing or not an object");
    if (rc == 0)
        rc = get_count(p, summary, "passed", &r->passed);
    if (rc == 0)
        rc = get_count(p, summary, "failed", &r->failed);
    if (rc == 0)
        rc = get_count(p, summary, "reported", &r->reported);
    json_t *checks = json_object_get(root, "checks");
    if (rc == 0 && !json_is_array(checks))
        rc = bad(p, "checks", "missing or not a list");
    struct parser in_check = *p;
    for (size_t i = 0; rc == 0 && i < json_array_size(checks); i++) {
        struct fp8kv_check c;
        in_check.check = i;
        rc = parse_check(&in_check, json_array_get(checks, i), &c);
        if (rc == 0)
            rc = fp8kv_results_add(&r->checks, &c);
    }
    return rc;
}

/* ---- a document checked, not believed ----------------------------------------------------- */

const char *fp8kv_report_verdict(int executed, int vectors_verified,
                                 const struct fp8kv_results *checks)
{
    if (!executed)
        return "not run";
    if (!vectors_verified)
        return NULL; /* no verdict against unverified truth */
    return fp8kv_results_passed(checks) ? "conformant" : "nonconformant";
}

/* Whether check c records a mismatch a pass cannot have (a class's count, a mismatched code),
 * said into why; 0 when none. */
static int mismatch_evidence(const struct fp8kv_check *c, char *why, size_t size)
{
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        if (c->class_mismatches[k]) {
            snprintf(why, size, "true, but its class %s counts %llu mismatches",
                     fp8kv_class_names[k], (unsigned long long)c->class_mismatches[k]);
            return 1;
        }
    for (int q = 0; q < 256; q++)
        if (c->code_mismatched[q / 8] >> (q % 8) & 1) {
            snprintf(why, size, "true, but it lists code %02x as mismatched", q);
            return 1;
        }
    return 0;
}

/* Why check c's "passed": true is not borne out by its counts (fp8kv_check_finish's rule), into
 * why; 0 when it is, or when c says it failed (a failure needs no evidence). */
static int unearned_pass(const struct fp8kv_check *c, char *why, size_t size)
{
    if (!c->passed)
        return 0;
    if (c->cases == 0)
        snprintf(why, size, "true, but it has no cases");
    else if (c->mismatches)
        snprintf(why, size, "true, but %llu of its %llu cases differ",
                 (unsigned long long)c->mismatches, (unsigned long long)c->cases);
    else if (c->has_bound && !(c->bound_ratio <= 1.0))
        snprintf(why, size, "true, but its worst error is %.3g times its bound", c->bound_ratio);
    else if (c->gated && c->has_nmse && !c->nmse_reported && !(c->nmse <= c->threshold))
        snprintf(why, size, "true, but its NMSE %.3g is not within its threshold %.3g", c->nmse,
                 c->threshold);
    else if (c->failure_lines > 0)
        snprintf(why, size, "true, but it lists %d failure lines", c->failure_lines);
    else
        return mismatch_evidence(c, why, size);
    return 1;
}

/* Why the status and checks of r do not give the verdict it states, into why. */
static void verdict_reason(const struct fp8kv_report *r, char *why, size_t size)
{
    const struct fp8kv_check *failed = NULL;
    size_t gated = 0, at = 0;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        gated += c->gated;
        if (c->gated && !c->passed && !failed) {
            failed = c;
            at = i;
        }
    }
    if (!r->target.executed)
        snprintf(why, size, "its status is \"not run\": nothing was executed");
    else if (strcmp(r->verdict, "not run") == 0)
        snprintf(why, size, "its status is \"run\": it was executed and judged");
    else if (failed && failed->mismatches)
        snprintf(why, size, "checks[%zu] (%s %s %s) failed: %llu of %llu cases differ", at,
                 failed->name, failed->subject, failed->profile,
                 (unsigned long long)failed->mismatches, (unsigned long long)failed->cases);
    else if (failed)
        snprintf(why, size, "checks[%zu] (%s %s %s) failed", at, failed->name, failed->subject,
                 failed->profile);
    else if (!gated)
        snprintf(why, size,
                 "none of its %zu checks is gated, and a run with no gated check is "
                 "not conformant",
                 r->checks.count);
    else
        snprintf(why, size, "every one of its %zu gated checks passed", gated);
}

/* Whether the parsed report r (from root) agrees with itself: each pass earned, no checks in a
 * report not run, the verdict its status, vectors and checks give, a summary that counts its
 * checks. 0, or FP8KV_ERR naming the field and the contradiction. */
static int check_consistent(const struct parser *p, json_t *root, const struct fp8kv_report *r)
{
    char why[512], what[768];
    unsigned long long passed = 0, failed = 0, reported = 0;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        const struct parser in_check = {p->path, i};
        if (unearned_pass(c, why, sizeof why))
            return bad(&in_check, "passed", why);
        reported += !c->gated;
        passed += c->gated && c->passed;
        failed += c->gated && !c->passed;
    }
    if (!r->target.executed && r->checks.count) {
        snprintf(what, sizeof what, "the status is \"not run\", yet it lists %zu checks",
                 r->checks.count);
        return bad(p, "checks", what);
    }
    const char *want = fp8kv_report_verdict(r->target.executed, r->vectors_verified, &r->checks);
    if (!want) {
        const int recorded = json_object_get(json_object_get(root, "vectors"), "verified") != NULL;
        snprintf(what, sizeof what,
                 "%s: the checks ran against vectors not verified against MANIFEST.json and "
                 "SHA256SUMS, which give no verdict, yet it says \"%s\"",
                 recorded ? "false" : "absent", r->verdict);
        return bad(p, "vectors.verified", what);
    }
    if (strcmp(want, r->verdict) != 0) {
        verdict_reason(r, why, sizeof why);
        snprintf(what, sizeof what, "says \"%s\", but %s; the checks give \"%s\"", r->verdict, why,
                 want);
        return bad(p, "verdict", what);
    }
    if (passed != r->passed || failed != r->failed || reported != r->reported) {
        snprintf(what, sizeof what,
                 "says %llu passed, %llu failed, %llu reported (not gated), but its checks give "
                 "%llu, %llu, %llu",
                 r->passed, r->failed, r->reported, passed, failed, reported);
        return bad(p, "summary", what);
    }
    return 0;
}

int fp8kv_report_parse(const char *path, const char *text, size_t len, struct fp8kv_report *r)
{
    memset(r, 0, sizeof *r);
    const char *nul = memchr(text, '\0', len); /* JSON text holds none (jansson skipped one) */
    if (nul)
        return fp8kv_fail("%s: not valid JSON: a NUL byte at offset %zu", path,
                          (size_t)(nul - text));
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return fp8kv_fail("%s: not valid JSON: line %d: %s", path, err.line, err.text);
    const struct parser p = {.path = path, .check = (size_t)-1};
    int rc = parse_root(&p, root, r);
    if (rc == 0)
        rc = check_consistent(&p, root, r);
    json_decref(root);
    if (rc != 0)
        fp8kv_report_free(r);
    return rc;
}

int fp8kv_report_load(const char *path, struct fp8kv_report *r)
{
    memset(r, 0, sizeof *r);
    size_t len = 0;
    char *text = fp8kv_read_regular(path, MAX_REPORT_BYTES, &len);
    if (!text)
        return FP8KV_ERR; /* fp8kv_read_regular named the file */
    const int rc = fp8kv_report_parse(path, text, len, r);
    free(text);
    return rc;
}

void fp8kv_report_free(struct fp8kv_report *r)
{
    fp8kv_results_free(&r->checks);
    memset(r, 0, sizeof *r);
}

/* ---- states and families ----------------------------------------------------------------------
 */

const char *const fp8kv_state_names[FP8KV_STATE_COUNT] = {"fail", "pass", "info", "not run"};

enum fp8kv_state fp8kv_check_state(const struct fp8kv_check *c)
{
    switch (fp8kv_check_outcome(c)) {
    case FP8KV_OUTCOME_PASS: return FP8KV_STATE_PASS;
    case FP8KV_OUTCOME_FAIL: return FP8KV_STATE_FAIL;
    default: return strstr(c->detail, "not run:") ? FP8KV_STATE_NOT_RUN : FP8KV_STATE_INFO;
    }
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The families of checks: a base name starting with `prefix` belongs to `family`. */
static const struct {
    const char *prefix, *family;
} families[] = {
    {"edges", "encode"},
    {"all-f16", "encode"},
    {"all-bf16", "encode"},
    {"scale-", "encode"},
    {"sweep-", "sweep"},
    {"decode", "decode"},
    {"read-", "decode"},
    {"kv-store", "kv-store"},
    {"kv-read-", "kv-read"},
    {"kv-attention", "kv-attention"},
    {"kv-case", "kv-case"},
    {"quant-nmse-", "quant-nmse"},
    {"gpu-errors", "device"},
    {"subject-failed", "subject"},
    {"block-vectors", "block-vectors"},
    {"block-decode", "block-decode"},
    {"block-sweep", "block-sweep"},
    {"block-blocks", "block-blocks"},
};

void fp8kv_check_base_name(const struct fp8kv_check *c, char *buf, size_t size)
{
    snprintf(buf, size, "%s", c->name);
    for (int k = 0; k < FP8KV_NAN_CHECK_COUNT; k++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "-nan-%s", fp8kv_nan_check_names[k]);
        if (ends_with(buf, suffix))
            buf[strlen(buf) - strlen(suffix)] = '\0';
    }
}

const char *fp8kv_check_family(const struct fp8kv_check *c)
{
    char base[sizeof c->name];
    fp8kv_check_base_name(c, base, sizeof base);
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (starts_with(base, families[i].prefix))
            return families[i].family;
    return "other";
}

/* ---- the words that explain a check ------------------------------------------------------------
 */

/* What a mismatch of each input class means. */
static const char *const class_words[FP8KV_CLASS_COUNT] = {
    [FP8KV_CLASS_ZERO] = "zeros (the sign of zero)",
    [FP8KV_CLASS_F32_DENORMAL] = "f32 subnormal inputs (what a flush to zero before the "
                                 "conversion gets wrong)",
    [FP8KV_CLASS_E4M3_SUBNORMAL] = "values in fp8's subnormal range, which round to fp8 "
                                   "subnormals",
    [FP8KV_CLASS_NORMAL] = "ordinary values: the rounding itself (to nearest, ties to even)",
    [FP8KV_CLASS_TIE] = "exact midpoints between two codes, which round to the even code",
    [FP8KV_CLASS_OVERFLOW] = "values above the overflow midpoint: ±max under satfinite, NaN "
                             "under overflow nan",
    [FP8KV_CLASS_INF] = "±Inf, which follows the profile's Inf policy",
    [FP8KV_CLASS_NAN] = "NaN inputs, which must give a NaN code",
    [FP8KV_CLASS_UNDERFLOW] = "values below half the smallest fp8 subnormal, which round to "
                              "zero with their sign",
};

/* When a row of the table below applies besides its name and state. */
enum explain_when {
    WHEN_ALWAYS,
    WHEN_CLASS_RUN_PASSED, /* the same set compared by NaN class passed */
    WHEN_SCALES_MISSING,   /* the detail says the subject implements no such scales */
};

/* The explanation of a check that is not a plain pass: the first row whose state, name prefix
 * and suffix and condition match. Counts, classes and NMSE are added in words after it. */
static const struct {
    enum fp8kv_state state;
    const char *prefix, *suffix;
    enum explain_when when;
    const char *words;
} explanations[] = {
    {FP8KV_STATE_INFO, "", "-nan-strict", WHEN_CLASS_RUN_PASSED,
     "the conversion drops the sign of NaN: IEEE 754 leaves it unspecified; compared by class "
     "(any NaN code for a NaN) it conforms, so this is reported, never gating"},
    {FP8KV_STATE_INFO, "", "-nan-strict", WHEN_ALWAYS,
     "under NaN check strict the exact byte is wanted, NaN codes included; this is reported, "
     "never gating, and the same set compared by class decides"},
    {FP8KV_STATE_INFO, "quant-nmse-", "", WHEN_ALWAYS,
     "the format's rounding error, reported, never gating: the NMSE of storing data of this "
     "distribution in fp8 at a per-tensor scale and reading it back"},
    {FP8KV_STATE_NOT_RUN, "kv-case", "", WHEN_SCALES_MISSING,
     "the subject does not implement this scale granularity, so the case is not run: neither "
     "passed nor failed"},
    {FP8KV_STATE_NOT_RUN, "", "", WHEN_ALWAYS, "not run: neither passed nor failed"},
    {FP8KV_STATE_INFO, "", "", WHEN_ALWAYS, "reported, never gating"},
    {FP8KV_STATE_FAIL, "subject-failed", "", WHEN_ALWAYS,
     "the subject's call failed (a crash, a device error): there is no verdict on its outputs"},
    {FP8KV_STATE_FAIL, "gpu-errors", "", WHEN_ALWAYS,
     "a GPU runtime call or kernel failed during this profile's checks"},
    {FP8KV_STATE_FAIL, "kv-store", "", WHEN_ALWAYS,
     "the cache bytes the subject stored differ from the oracle's (or it wrote a padding slot)"},
    {FP8KV_STATE_FAIL, "kv-attention", "", WHEN_ALWAYS,
     "attention outputs lie outside the bound of the arithmetic the subject declares (or, under "
     "f32, their NMSE against the 128-bit reference is above its threshold)"},
    {FP8KV_STATE_FAIL, "kv-read-", "", WHEN_ALWAYS,
     "the values gathered and dequantized differ from the oracle's read model bit for bit"},
    {FP8KV_STATE_FAIL, "read-", "", WHEN_ALWAYS,
     "the values read back differ from the oracle's read model bit for bit"},
    {FP8KV_STATE_FAIL, "block-vectors", "", WHEN_ALWAYS,
     "the block codec's scale or element codes (or decoded values) differ from the golden "
     "block vectors the oracle wrote"},
    {FP8KV_STATE_FAIL, "block-decode", "", WHEN_ALWAYS,
     "(scale, element) code pairs decode to values other than the oracle's"},
    {FP8KV_STATE_FAIL, "block-sweep", "", WHEN_ALWAYS,
     "inputs under a fixed block scale encode to element codes (or a block scale) other than "
     "the oracle's"},
    {FP8KV_STATE_FAIL, "block-blocks", "", WHEN_ALWAYS,
     "whole blocks encode to scale or element codes other than the oracle's"},
    {FP8KV_STATE_FAIL, "decode", "", WHEN_ALWAYS,
     "codes decode to values other than the oracle's decode table"},
    {FP8KV_STATE_FAIL, "", "", WHEN_ALWAYS,
     "codes differ from the oracle's exact byte for these inputs"},
};

/* The check of the same set, subject and profile compared by NaN class, or NULL. */
static const struct fp8kv_check *class_run_of(const struct fp8kv_report *r,
                                              const struct fp8kv_check *c)
{
    char base[sizeof c->name], want[sizeof c->name + 16];
    fp8kv_check_base_name(c, base, sizeof base);
    snprintf(want, sizeof want, "%s-nan-%s", base, fp8kv_nan_check_names[FP8KV_NAN_CHECK_CLASS]);
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *o = &r->checks.items[i];
        if (strcmp(o->name, want) == 0 && strcmp(o->subject, c->subject) == 0 &&
            strcmp(o->profile, c->profile) == 0)
            return o;
    }
    return NULL;
}

static int explanation_applies(const struct fp8kv_report *r, const struct fp8kv_check *c,
                               size_t row)
{
    if (explanations[row].state != fp8kv_check_state(c) ||
        !starts_with(c->name, explanations[row].prefix) ||
        !ends_with(c->name, explanations[row].suffix))
        return 0;
    const struct fp8kv_check *class_run;
    switch (explanations[row].when) {
    case WHEN_CLASS_RUN_PASSED: return (class_run = class_run_of(r, c)) && class_run->passed;
    case WHEN_SCALES_MISSING: return strstr(c->detail, "implements no scales per") != NULL;
    default: return 1;
    }
}

/* The counts in words: cases and mismatches, per class, the codes, the NMSE. */
static void explain_counts(FILE *f, const struct fp8kv_check *c)
{
    if (c->mismatches)
        fprintf(f, " %llu of %llu cases differ.", (unsigned long long)c->mismatches,
                (unsigned long long)c->cases);
    for (int k = 0; k < FP8KV_CLASS_COUNT && c->has_classes; k++) {
        if (!c->class_mismatches[k])
            continue;
        fprintf(f, " Class %s: %llu", fp8kv_class_names[k],
                (unsigned long long)c->class_mismatches[k]);
        if (c->class_cases[k]) /* the exhaustive sweeps count mismatches per class, not cases */
            fprintf(f, " of %llu", (unsigned long long)c->class_cases[k]);
        fprintf(f, ": %s.", class_words[k]);
    }
    for (int q = 0, n = 0; q < 256 && c->has_codes; q++)
        if (c->code_mismatched[q / 8] >> (q % 8) & 1)
            fprintf(f, "%s%02x", n++ ? ", " : " Codes: ", q);
    if (c->has_codes && c->mismatches)
        fputc('.', f);
    if (c->has_bound)
        fprintf(f, " Worst error %.3g times its bound.", c->bound_ratio);
    if (c->has_nmse && c->gated && !c->nmse_reported)
        fprintf(f, " NMSE %.3g against the threshold %.3g.", c->nmse, c->threshold);
    else if (c->has_nmse && c->nmse > 0)
        fprintf(f, " NMSE %.3g (signal to noise %.1f dB).", c->nmse, -10.0 * log10(c->nmse));
}

void fp8kv_check_explain(FILE *f, const struct fp8kv_report *r, const struct fp8kv_check *c)
{
    if (fp8kv_check_state(c) == FP8KV_STATE_PASS)
        return;
    for (size_t row = 0; row < sizeof explanations / sizeof explanations[0]; row++)
        if (explanation_applies(r, c, row)) {
            fputs(explanations[row].words, f);
            break;
        }
    const char *scales = strstr(c->detail, "implements no scales per");
    if (scales && fp8kv_check_state(c) == FP8KV_STATE_NOT_RUN)
        fprintf(f, " (%s).", scales + strlen("implements no "));
    else
        fputc('.', f);
    explain_counts(f, c);
}

/* ---- escaping: the characters of a string, and the HTML, XML, URL and terminal escapers (the
 * Markdown one is report/md.c's) ----------------------------------------------------------- */

/* Whether code point u is a control character or a noncharacter no escaper writes as it is: C1,
 * the bidirectional controls (which reorder what follows them), U+FFFE and U+FFFF. */
static int hidden_code_point(uint32_t u)
{
    return (u >= 0x80 && u <= 0x9F) || u == 0x61C || u == 0x200E || u == 0x200F ||
           (u >= 0x202A && u <= 0x202E) || (u >= 0x2066 && u <= 0x2069) || u == 0xFFFE ||
           u == 0xFFFF;
}

size_t fp8kv_text_char(const char *s, int *shown)
{
    const unsigned char *b = (const unsigned char *)s;
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000}; /* shorter is overlong */
    size_t len = 0;
    uint32_t u = 0;
    *shown = 0;
    if (b[0] < 0x80) {
        *shown = b[0] >= 0x20 && b[0] != 0x7F;
        return 1;
    }
    if (b[0] >= 0xC2 && b[0] <= 0xDF)
        len = 2, u = b[0] & 0x1Fu;
    else if (b[0] >= 0xE0 && b[0] <= 0xEF)
        len = 3, u = b[0] & 0x0Fu;
    else if (b[0] >= 0xF0 && b[0] <= 0xF4)
        len = 4, u = b[0] & 0x07u;
    else
        return 1;
    for (size_t k = 1; k < len; k++) {
        if ((b[k] & 0xC0) != 0x80) /* the end of s included */
            return 1;
        u = u << 6 | (b[k] & 0x3Fu);
    }
    if (u < least[len] || (u >= 0xD800 && u <= 0xDFFF) || u > 0x10FFFF)
        return 1;
    *shown = !hidden_code_point(u);
    return len;
}

void fp8kv_put_escaped(FILE *f, const char *s)
{
    while (*s) {
        int shown;
        const size_t n = fp8kv_text_char(s, &shown);
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if (shown || *s == '\t' || *s == '\n' || *s == '\r')
                fwrite(s, 1, n, f);
            else
                fputs("\xef\xbf\xbd", f); /* U+FFFD: XML 1.0 cannot hold it, or it hides text */
        }
        s += n;
    }
}

void fp8kv_put_url_segment(FILE *f, const char *s)
{
    for (; *s; s++) {
        const char c = *s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            fputc(c, f);
        else
            fprintf(f, "%%%02X", (unsigned)(unsigned char)c);
    }
}

void fp8kv_term_put(FILE *f, const char *s)
{
    while (*s) {
        int shown;
        const size_t n = fp8kv_text_char(s, &shown);
        if (*s == '\\')
            fputs("\\\\", f);
        else if (shown)
            fwrite(s, 1, n, f);
        else
            for (size_t k = 0; k < n; k++)
                fprintf(f, "\\x%02x", (unsigned)(unsigned char)s[k]);
        s += n;
    }
}

void fp8kv_check_measure_text(const struct fp8kv_check *c, char *buf, size_t size)
{
    int n = 0;
    buf[0] = '\0';
    if (c->has_nmse && c->gated && !c->nmse_reported)
        n = snprintf(buf, size, "%.3g (≤ %.3g)", c->nmse, c->threshold);
    else if (c->has_nmse)
        n = snprintf(buf, size, "%.3g (reported)", c->nmse);
    if (c->has_bound && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%serror/bound %.3g", n ? "; " : "", c->bound_ratio);
}
