/* report/write.c — a report folder: report.json (machines), then report.md, report.html and
 * junit.xml rendered from report.json parsed back (report/model.h), the unit tests' JUnit copies;
 * and the index of a report directory (index.md, index.html). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "fp8kv/diag.h"
#include "fp8kv/digest.h"
#include "fp8kv/fileio.h"
#include "fp8kv/run.h"
#include "fp8kv/verify.h"
#include "report/json.h"
#include "report/model.h"

#ifndef FP8KV_VERSION
#define FP8KV_VERSION "unknown"
#endif
#ifndef FP8KV_COMMIT
#define FP8KV_COMMIT "unknown"
#endif

#define REPORT_SCHEMA_VERSION FP8KV_VERDICT_SCHEMA_VERSION /* report.json is a verdict document */
/* A JUnit file or a report.json this large is not one of ours: refused, never read whole. */
#define MAX_COPIED_BYTES (64u << 20)

/* A number JSON can hold, or the explicit strings "inf" / "-inf" / "nan". */
static json_t *json_number(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static const char *verdict_of(const struct fp8kv_report_meta *m, const struct fp8kv_results *r)
{
    if (!m->target->executed)
        return "not run";
    return fp8kv_results_passed(r) ? "conformant" : "nonconformant";
}

json_t *fp8kv_check_json(const struct fp8kv_check *c)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:b, s:b, s:f}", "name", c->name,
                          "subject", c->subject, "profile", c->profile, "detail", c->detail,
                          "cases", (json_int_t)c->cases, "mismatches", (json_int_t)c->mismatches,
                          "gated", c->gated, "passed", c->passed, "seconds", c->seconds);
    if (c->rule[0])
        json_object_set_new(o, "rule", json_string(c->rule));
    if (c->model[0])
        json_object_set_new(o, "model", json_string(c->model));
    if (c->has_nmse) {
        json_object_set_new(o, "nmse", json_number(c->nmse));
        json_object_set_new(o, "threshold", c->gated ? json_number(c->threshold) : json_null());
    }
    if (c->has_classes) {
        json_t *cls = json_object();
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
            json_object_set_new(cls, fp8kv_class_names[k],
                                json_integer((json_int_t)c->class_mismatches[k]));
        json_object_set_new(o, "class_mismatches", cls);
        json_t *seen = json_object();
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
            json_object_set_new(seen, fp8kv_class_names[k],
                                json_integer((json_int_t)c->class_cases[k]));
        json_object_set_new(o, "class_cases", seen);
    }
    json_t *failures = json_array();
    for (int i = 0; i < c->failure_lines; i++)
        json_array_append_new(failures, json_string(c->failures[i]));
    json_object_set_new(o, "failures", failures);
    if (c->has_codes) {
        json_t *codes = json_array();
        for (int q = 0; q < 256; q++)
            if (c->code_mismatched[q / 8] >> (q % 8) & 1)
                json_array_append_new(codes, json_integer(q));
        json_object_set_new(o, "mismatched_codes", codes);
    }
    return o;
}

/* One failure as an object (docs/json.md, a shard's "examples"). */
static json_t *failure_json(const struct fp8kv_failure *f)
{
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:s, s:s?, s:i, s:i, s:i, s:i}", "input", (json_int_t)f->input,
                  "last", (json_int_t)f->last, "count", (json_int_t)f->count, "dtype",
                  fp8kv_dtype_names[f->dtype < FP8KV_DTYPE_COUNT ? f->dtype : 0], "class",
                  f->cls < FP8KV_CLASS_COUNT ? fp8kv_class_names[f->cls] : NULL, "got", f->got,
                  "want", f->want, "other", f->other, "note", f->note);
    if (f->has_scale)
        json_object_set_new(o, "scale", json_integer((json_int_t)f->scale));
    return o;
}

json_t *fp8kv_check_json_shard(const struct fp8kv_check *c)
{
    json_t *o = fp8kv_check_json(c), *examples = json_array();
    for (int i = 0; i < c->examples.n; i++)
        json_array_append_new(examples, failure_json(&c->examples.v[i]));
    json_object_set_new(o, "examples", examples);
    if (c->first_limit) {
        json_t *first = json_array();
        for (int i = 0; i < c->first_count; i++)
            json_array_append_new(first, failure_json(&c->first[i]));
        json_object_set_new(o, "first_failures", first);
        json_object_set_new(o, "first_limit", json_integer(c->first_limit));
    }
    return o;
}

static int write_text(const char *dir, const char *name, const char *text)
{
    char *path = fp8kv_path_join(dir, name);
    int rc = path ? fp8kv_write_file_atomic(path, text, strlen(text)) : fp8kv_fail("out of memory");
    free(path);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copies <from>/ *.xml into <to>/ (each atomically) and lists the copies, sorted, in names. */
static int copy_junit(const char *from, const char *to, json_t *names)
{
    DIR *d = opendir(from);
    if (!d)
        return fp8kv_fail("%s: cannot read the JUnit directory", from);
    char *files[512];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".xml") == 0)
            files[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(files, n, sizeof files[0], cmp_names);
    int rc = fp8kv_make_dirs(to);
    for (size_t i = 0; i < n; i++) {
        char *src = files[i] ? fp8kv_path_join(from, files[i]) : NULL;
        char *dst = files[i] ? fp8kv_path_join(to, files[i]) : NULL;
        size_t size = 0;
        char *buf = rc == 0 && src ? fp8kv_read_regular(src, MAX_COPIED_BYTES, &size) : NULL;
        if (rc == 0)
            rc = !src || !dst ? fp8kv_fail("out of memory")
                 : buf        ? fp8kv_write_file_atomic(dst, buf, size)
                              : FP8KV_ERR; /* fp8kv_read_regular named the file */
        if (rc == 0) {
            char rel[300];
            snprintf(rel, sizeof rel, "junit/%s", files[i]);
            json_array_append_new(names, json_string(rel));
        }
        free(buf);
        free(src);
        free(dst);
        free(files[i]);
    }
    return rc;
}

/* The files rendered from report.json, by name. */
static const struct {
    const char *name;
    char *(*render)(const struct fp8kv_report *r);
} rendered[] = {
    {"report.md", fp8kv_report_markdown},
    {"report.html", fp8kv_report_html},
    {"junit.xml", fp8kv_report_junit},
};
#define RENDERED_COUNT (sizeof rendered / sizeof rendered[0])

/* Renders every file of `rendered` from r into dir: all in memory first, then each written
 * atomically, so a renderer that fails leaves no file changed. */
static int render_into(const char *dir, const struct fp8kv_report *r)
{
    char *texts[RENDERED_COUNT] = {0};
    int rc = 0;
    for (size_t i = 0; i < RENDERED_COUNT && rc == 0; i++)
        if (!(texts[i] = rendered[i].render(r)))
            rc = fp8kv_fail("out of memory rendering %s", rendered[i].name);
    for (size_t i = 0; i < RENDERED_COUNT && rc == 0; i++)
        rc = write_text(dir, rendered[i].name, texts[i]);
    for (size_t i = 0; i < RENDERED_COUNT; i++)
        free(texts[i]);
    return rc;
}

int fp8kv_report_regenerate(const char *report_json)
{
    struct fp8kv_report r;
    if (fp8kv_report_load(report_json, &r) != 0)
        return FP8KV_ERR;
    const char *slash = strrchr(report_json, '/');
    char *dir = slash ? strndup(report_json, (size_t)(slash - report_json + 1)) : strdup(".");
    const int rc = dir ? render_into(dir, &r) : fp8kv_fail("out of memory");
    free(dir);
    fp8kv_report_free(&r);
    return rc;
}

/* The folders of out_dir that hold a report.json, sorted by name, each parsed when it is a
 * target's (a folder named like a target whose report.json is damaged is an error naming it). */
static int load_index(const char *out_dir, struct fp8kv_index_entry **entries, size_t *count)
{
    DIR *d = opendir(out_dir);
    if (!d)
        return fp8kv_fail("%s: cannot read the report directory", out_dir);
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
            n++;
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_names);
    struct fp8kv_index_entry *list = calloc(n + 1, sizeof *list);
    int rc = list ? 0 : fp8kv_fail("out of memory");
    size_t kept = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/report.json", out_dir, names[i]);
        if (strlen(names[i]) >= sizeof list->name || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        struct fp8kv_index_entry *entry = &list[kept++];
        snprintf(entry->name, sizeof entry->name, "%s", names[i]);
        entry->is_target = fp8kv_target_kind_of_name(names[i]) >= 0;
        if (entry->is_target)
            rc = fp8kv_report_load(path, &entry->report);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    *entries = list;
    *count = kept;
    return rc;
}

int fp8kv_report_write_index(const char *out_dir)
{
    struct fp8kv_index_entry *entries = NULL;
    size_t n = 0;
    int rc = load_index(out_dir, &entries, &n);
    char *md = rc == 0 ? fp8kv_index_markdown(entries, n) : NULL;
    char *html = rc == 0 ? fp8kv_index_html(entries, n) : NULL;
    if (rc == 0 && (!md || !html))
        rc = fp8kv_fail("out of memory");
    if (rc == 0)
        rc = write_text(out_dir, "index.md", md);
    if (rc == 0)
        rc = write_text(out_dir, "index.html", html);
    for (size_t i = 0; entries && i < n; i++)
        fp8kv_report_free(&entries[i].report);
    free(entries);
    free(md);
    free(html);
    return rc;
}

/* Now in UTC, ISO 8601, into buf. */
static void utc_now(char *buf, size_t size)
{
    const time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, size, "unknown");
}
/* Writes root as dir/report.json, then renders the other files into dir from that text parsed
 * back, as `fp8kv report --from` would from <final>/report.json. */
static int write_report_json(const char *dir, const char *final, json_t *root)
{
    char *text = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
    size_t len = text ? strlen(text) : 0;
    char *with_newline = text ? malloc(len + 2) : NULL;
    char *final_json = fp8kv_path_join(final, "report.json");
    int rc = with_newline && final_json ? 0 : fp8kv_fail("out of memory");
    if (rc == 0) {
        memcpy(with_newline, text, len);
        memcpy(with_newline + len, "\n", 2);
        rc = write_text(dir, "report.json", with_newline);
    }
    struct fp8kv_report parsed;
    if (rc == 0 && (rc = fp8kv_report_parse(final_json, with_newline, len + 1, &parsed)) == 0) {
        rc = render_into(dir, &parsed);
        fp8kv_report_free(&parsed);
    }
    free(text);
    free(with_newline);
    free(final_json);
    return rc;
}

int fp8kv_report_write(const char *out_dir, const struct fp8kv_report_meta *m,
                       const struct fp8kv_results *r)
{
    const struct fp8kv_target_info *t = m->target;
    /* the files are written into a fresh hidden folder beside <out>/<target>, then put in its
     * place in one step: a reader (or a writer killed midway) never leaves a mixed set */
    char *final = fp8kv_path_join(out_dir, t->target),
         *manifest = fp8kv_path_join(m->vectors_dir, "MANIFEST.json");
    char dir[4096] = "";
    char hash[FP8KV_SHA256_HEX_LEN + 1] = "unavailable";
    int rc = final && manifest ? fp8kv_make_dirs(out_dir) : fp8kv_fail("out of memory");
    if (rc == 0) {
        snprintf(dir, sizeof dir, "%s/.%s.XXXXXX", out_dir, t->target);
        if (!mkdtemp(dir)) {
            rc = fp8kv_fail("%s: cannot create a folder for the report: %s", out_dir,
                            strerror(errno));
            dir[0] = '\0';
        } else {
            (void)chmod(dir, 0755); /* mkdtemp's 0700 is for secrets; a report is read by all */
        }
    }
    if (rc == 0 && fp8kv_sha256_file(manifest, hash, NULL) != 0)
        rc = FP8KV_ERR;

    size_t passed = 0, failed = 0, reported = 0;
    json_t *checks = json_array();
    for (size_t i = 0; i < r->count && t->executed; i++) {
        const struct fp8kv_check *c = &r->items[i];
        reported += !c->gated;
        passed += c->gated && c->passed;
        failed += c->gated && !c->passed;
        json_array_append_new(checks, fp8kv_check_json(c));
    }
    json_t *junit = json_array();
    if (rc == 0 && m->junit_dir) {
        char *junit_out = fp8kv_path_join(dir, "junit");
        rc = junit_out ? copy_junit(m->junit_dir, junit_out, junit) : fp8kv_fail("out of memory");
        free(junit_out);
    }
    json_t *root = json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:b}, s:s, s:f, s:{s:I, s:I, "
        "s:I}}",
        "schema_version", REPORT_SCHEMA_VERSION, "target", t->target, "verdict", verdict_of(m, r),
        "status", t->executed ? "run" : "not run", "device", t->device, "runtime", t->runtime,
        "compiler", t->compiler, "flags", t->flags, "profiles", m->profiles, "vectors", "dir",
        m->vectors_dir, "manifest_sha256", hash, "verified", fp8kv_vectors_trusted(m->vectors_dir),
        "generator", "fp8kv " FP8KV_VERSION, "seconds", m->seconds, "summary", "passed",
        (json_int_t)passed, "failed", (json_int_t)failed, "reported", (json_int_t)reported);
    if (rc == 0 && !root)
        rc = fp8kv_fail("out of memory");
    if (rc == 0) {
        json_object_set_new(root, "schema", json_string(FP8KV_VERDICT_SCHEMA));
        json_object_set_new(root, "command", json_string(t->executed ? "run" : "report"));
        if (!t->executed)
            json_object_set_new(root, "not_run_reason", json_string(t->not_run_reason));
        if (t->compiled[0])
            json_object_set_new(root, "compiled", json_string(t->compiled));
        if (t->assembly[0])
            json_object_set_new(root, "assembly", json_string(t->assembly));
        json_object_set(root, "checks", checks);
        json_object_set(root, "junit", junit);
        char date[32];
        utc_now(date, sizeof date);
        json_object_set_new(root, "date", json_string(date));
        json_object_set_new(root, "commit", json_string(FP8KV_COMMIT));
        rc = write_report_json(dir, final, root);
    }
    if (rc == 0)
        rc = fp8kv_replace_dir(dir, final);
    if (rc != 0 && dir[0])
        fp8kv_remove_tree(dir); /* nothing half-written stays behind */
    if (rc == 0)
        rc = fp8kv_report_write_index(out_dir);
    json_decref(root);
    json_decref(checks);
    json_decref(junit);
    free(final);
    free(manifest);
    return rc;
}
