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
        json_object_set_new(o, "threshold",
                            c->gated && !c->nmse_reported ? json_number(c->threshold)
                                                          : json_null());
    }
    if (c->has_bound)
        json_object_set_new(o, "bound_ratio", json_number(c->bound_ratio));
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

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* Every entry of dir but "." and "..", sorted (strcmp), however many: *names (malloc'd, each
 * malloc'd) and *count. 0, or FP8KV_ERR naming dir (what it is: "report directory", ...). */
static int list_dir(const char *dir, const char *what, char ***names, size_t *count)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return fp8kv_fail("%s: cannot read the %s: %s", dir, what, strerror(errno));
    char **v = NULL;
    size_t n = 0, capacity = 0;
    int rc = 0;
    for (;;) {
        errno = 0;
        const struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                rc = fp8kv_fail("%s: cannot read the %s: %s", dir, what, strerror(errno));
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == capacity) {
            char **more = realloc(v, (capacity = capacity ? 2 * capacity : 64) * sizeof *v);
            if (!more) {
                rc = fp8kv_fail("out of memory");
                break;
            }
            v = more;
        }
        if (!(v[n] = strdup(e->d_name))) {
            rc = fp8kv_fail("out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (rc != 0) {
        free_names(v, n);
        return rc;
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_names);
    *names = v;
    *count = n;
    return 0;
}

/* Copies <from>/ *.xml into <to>/ (each atomically) and lists the copies, sorted, in names. */
static int copy_junit(const char *from, const char *to, json_t *names)
{
    char **files = NULL;
    size_t n = 0;
    int rc = list_dir(from, "JUnit directory", &files, &n);
    if (rc == 0)
        rc = fp8kv_make_dirs(to);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const size_t len = strlen(files[i]);
        if (len <= 4 || strcmp(files[i] + len - 4, ".xml") != 0)
            continue;
        char *src = fp8kv_path_join(from, files[i]);
        char *dst = fp8kv_path_join(to, files[i]);
        size_t size = 0;
        char *buf = rc == 0 && src ? fp8kv_read_regular(src, MAX_COPIED_BYTES, &size) : NULL;
        if (rc == 0)
            rc = !src || !dst ? fp8kv_fail("out of memory")
                 : buf        ? fp8kv_write_file_atomic(dst, buf, size)
                              : FP8KV_ERR; /* fp8kv_read_regular named the file */
        char *rel = rc == 0 ? fp8kv_path_join("junit", files[i]) : NULL;
        if (rc == 0 && !rel)
            rc = fp8kv_fail("out of memory");
        if (rc == 0)
            json_array_append_new(names, json_string(rel));
        free(rel);
        free(buf);
        free(src);
        free(dst);
    }
    free_names(files, n);
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

int fp8kv_report_render_beside(const char *report_json, const struct fp8kv_report *r)
{
    const char *slash = strrchr(report_json, '/');
    char *dir = slash ? strndup(report_json, (size_t)(slash - report_json + 1)) : strdup(".");
    const int rc = dir ? render_into(dir, r) : fp8kv_fail("out of memory");
    free(dir);
    return rc;
}

int fp8kv_report_regenerate(const char *report_json)
{
    struct fp8kv_report r;
    if (fp8kv_report_load(report_json, &r) != 0)
        return FP8KV_ERR; /* damaged or contradicting itself: nothing is written */
    const int rc = fp8kv_report_render_beside(report_json, &r);
    fp8kv_report_free(&r);
    return rc;
}

/* Whether name is the index's own (index.md, index.html, or the temporary file
 * fp8kv_write_file_atomic writes one through: the name and ".XXXXXX"). */
static int index_file(const char *name)
{
    static const char *const own[] = {"index.md", "index.html"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        const size_t n = strlen(own[i]);
        if (strncmp(name, own[i], n) == 0 &&
            (name[n] == '\0' || (name[n] == '.' && strlen(name + n + 1) == 6)))
            return 1;
    }
    return 0;
}

/* What entry `name` of out_dir is to the index: *is_report 1 for a folder holding a regular
 * report.json, else 0 with why it is not in why. 0, or FP8KV_ERR (out of memory). */
static int classify_entry(const char *out_dir, const char *name, int *is_report, char *why,
                          size_t size)
{
    char *dir = fp8kv_path_join(out_dir, name);
    char *json = dir ? fp8kv_path_join(dir, "report.json") : NULL;
    struct stat st;
    *is_report = 0;
    if (!json)
        *why = '\0';
    else if (strlen(name) >= sizeof((struct fp8kv_index_entry *)0)->name)
        snprintf(why, size, "a name too long for the index");
    else if (stat(dir, &st) != 0)
        snprintf(why, size, "cannot be read: %s", strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, size, "not a folder");
    else if (stat(json, &st) != 0 && errno == ENOENT)
        snprintf(why, size, "a folder without a report.json");
    else if (stat(json, &st) != 0)
        snprintf(why, size, "its report.json cannot be read: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, size, "its report.json is not a regular file");
    else
        *is_report = 1;
    free(dir);
    free(json);
    return json ? 0 : fp8kv_fail("out of memory");
}

/* The report folder `name` of out_dir as entry e: a target's report.json parsed (and the target
 * it names must be its folder's). */
static int load_entry(const char *out_dir, const char *name, struct fp8kv_index_entry *e)
{
    snprintf(e->name, sizeof e->name, "%s", name);
    e->is_target = fp8kv_target_kind_of_name(name) >= 0;
    if (!e->is_target)
        return 0;
    char *dir = fp8kv_path_join(out_dir, name);
    char *json = dir ? fp8kv_path_join(dir, "report.json") : NULL;
    int rc = json ? fp8kv_report_load(json, &e->report) : fp8kv_fail("out of memory");
    if (rc == 0 && strcmp(e->report.target.target, name) != 0)
        rc = fp8kv_fail("%s: target: \"%s\", but the report is in the folder of %s (a target's "
                        "report is in the folder named after it)",
                        json, e->report.target.target, name);
    free(dir);
    free(json);
    return rc;
}

int fp8kv_index_load(const char *out_dir, struct fp8kv_index *ix)
{
    memset(ix, 0, sizeof *ix);
    char **names = NULL;
    size_t n = 0, reports = 0;
    int rc = list_dir(out_dir, "report directory", &names, &n);
    int *is_report = rc == 0 ? calloc(n + 1, sizeof *is_report) : NULL;
    if (rc == 0 && (!is_report || !(ix->skipped = calloc(n + 1, sizeof *ix->skipped))))
        rc = fp8kv_fail("out of memory");
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (names[i][0] == '.' || index_file(names[i]))
            continue; /* fp8kv's own: staging folders, temporary files, the index */
        struct fp8kv_index_skip *skip = &ix->skipped[ix->skipped_count];
        rc = classify_entry(out_dir, names[i], &is_report[i], skip->why, sizeof skip->why);
        reports += is_report[i];
        if (rc == 0 && !is_report[i] && !(skip->name = strdup(names[i])))
            rc = fp8kv_fail("out of memory");
        ix->skipped_count += rc == 0 && !is_report[i];
    }
    if (rc == 0 && !(ix->entries = calloc(reports + 1, sizeof *ix->entries)))
        rc = fp8kv_fail("out of memory");
    for (size_t i = 0; i < n && rc == 0; i++)
        if (is_report[i])
            rc = load_entry(out_dir, names[i], &ix->entries[ix->count++]);
    free(is_report);
    free_names(names, n);
    return rc;
}

int fp8kv_index_write(const char *out_dir, const struct fp8kv_index *ix)
{
    char *md = fp8kv_index_markdown(ix), *html = fp8kv_index_html(ix);
    int rc = md && html ? 0 : fp8kv_fail("out of memory");
    if (rc == 0)
        rc = write_text(out_dir, "index.md", md);
    if (rc == 0)
        rc = write_text(out_dir, "index.html", html);
    free(md);
    free(html);
    return rc;
}

void fp8kv_index_free(struct fp8kv_index *ix)
{
    for (size_t i = 0; ix->entries && i < ix->count; i++)
        fp8kv_report_free(&ix->entries[i].report);
    for (size_t i = 0; ix->skipped && i < ix->skipped_count; i++)
        free(ix->skipped[i].name);
    free(ix->entries);
    free(ix->skipped);
    memset(ix, 0, sizeof *ix);
}

int fp8kv_report_write_index(const char *out_dir)
{
    struct fp8kv_index ix;
    int rc = fp8kv_index_load(out_dir, &ix);
    if (rc == 0)
        rc = fp8kv_index_write(out_dir, &ix);
    fp8kv_index_free(&ix);
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
    const int verified = fp8kv_vectors_trusted(m->vectors_dir);
    const char *verdict = fp8kv_report_verdict(t->executed, verified, r);
    int rc = final && manifest ? 0 : fp8kv_fail("out of memory");
    /* the manifest as it was verified: the truth the verdict was judged from */
    if (rc == 0 && verified && fp8kv_vectors_digest(m->vectors_dir, "MANIFEST.json", hash) != 0)
        rc = FP8KV_ERR;
    else if (rc == 0 && !verified && fp8kv_sha256_file(manifest, hash, NULL) != 0)
        rc = FP8KV_ERR;
    if (rc == 0 && !verdict)
        rc = fp8kv_fail("%s: the vectors were not verified (fp8kv_vectors_trust) in this process: "
                        "no verdict is written against unverified truth",
                        m->vectors_dir);
    if (rc == 0)
        rc = fp8kv_make_dirs(out_dir);
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
        "schema_version", REPORT_SCHEMA_VERSION, "target", t->target, "verdict",
        verdict ? verdict : "", "status", t->executed ? "run" : "not run", "device", t->device,
        "runtime", t->runtime, "compiler", t->compiler, "flags", t->flags, "profiles", m->profiles,
        "vectors", "dir", m->vectors_dir, "manifest_sha256", hash, "verified", verified,
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
