/* report.c — report.json (machines), report.md (people), the JUnit copies and index.md. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "fp8kv/diag.h"
#include "fp8kv/digest.h"
#include "fp8kv/fileio.h"
#include "fp8kv/run.h"
#include "fp8kv/verify.h"
#include "report_json.h"

#ifndef FP8KV_VERSION
#define FP8KV_VERSION "unknown"
#endif

#define REPORT_SCHEMA_VERSION FP8KV_VERDICT_SCHEMA_VERSION /* report.json is a verdict document */
/* A JUnit file or a report.json this large is not one of ours: refused, never read whole. */
#define MAX_COPIED_BYTES (64u << 20)

/* load_json: the JSON document of the regular file at path (at most MAX_COPIED_BYTES), or NULL
 * (a missing, special or malformed file: the index just leaves that folder out). */
static json_t *load_json(const char *path)
{
    size_t len = 0;
    char *text = fp8kv_read_regular(path, MAX_COPIED_BYTES, &len);
    json_t *root = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return root;
}

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

static char *markdown(const struct fp8kv_report_meta *m, const struct fp8kv_results *r,
                      const char *vector_hash, size_t passed, size_t failed, size_t reported)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    const struct fp8kv_target_info *t = m->target;
    fprintf(f, "# fp8kv conformance report: %s\n\n", t->target);
    fprintf(f, "**Verdict: %s**", verdict_of(m, r));
    if (!t->executed)
        fprintf(f, " (%s)", t->not_run_reason);
    fprintf(f, "\n\n| | |\n|---|---|\n");
    fprintf(f, "| device | %s |\n| runtime | %s |\n| compiler | %s |\n", t->device, t->runtime,
            t->compiler);
    fprintf(f, "| flags | `%s` |\n| profiles | %s |\n", t->flags, m->profiles);
    if (t->compiled[0])
        fprintf(f, "| compiled | %s |\n", t->compiled);
    fprintf(f, "| vectors | `%s`, MANIFEST.json sha256 `%s`, %s |\n", m->vectors_dir, vector_hash,
            fp8kv_vectors_trusted(m->vectors_dir)
                ? "verified against MANIFEST.json and SHA256SUMS before the checks"
                : "not verified in this run");
    fprintf(f, "| generator | fp8kv %s |\n", FP8KV_VERSION);
    fprintf(f, "| checks | %zu passed, %zu failed, %zu reported (not gated) |\n", passed, failed,
            reported);
    fprintf(f, "| wall time | %.1f s |\n\n", m->seconds);
    if (!t->executed) {
        fprintf(f, "Nothing was executed on this target: no check passed or failed.\n");
        fclose(f);
        return text;
    }
    fprintf(f, "## Checks\n\n| result | check | subject | profile | cases | mismatches | "
               "NMSE (threshold) | time |\n|---|---|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < r->count; i++) {
        const struct fp8kv_check *c = &r->items[i];
        static const char *const outcome[] = {"info", "pass", "**FAIL**"};
        fprintf(f, "| %s | %s | %s | %s | %llu | %llu | ", outcome[fp8kv_check_outcome(c)], c->name,
                c->subject, c->profile, (unsigned long long)c->cases,
                (unsigned long long)c->mismatches);
        if (c->has_nmse && c->gated)
            fprintf(f, "%.3g (≤ %.3g)", c->nmse, c->threshold);
        else if (c->has_nmse)
            fprintf(f, "%.3g (reported)", c->nmse);
        fprintf(f, " | %.2f s |\n", c->seconds);
    }
    /* the failures of gated checks, then the differences reported without gating (e.g. a
     * vendor conversion's NaN sign under NaN check strict, when it claims NaN check class) */
    for (int gated = 1; gated >= 0; gated--) {
        int any = 0;
        for (size_t i = 0; i < r->count; i++) {
            const struct fp8kv_check *c = &r->items[i];
            if (c->passed || c->gated != gated)
                continue;
            if (!any++)
                fprintf(f, gated ? "\n## Failures\n" : "\n## Differences reported, not gated\n");
            fprintf(f, "\n### %s %s %s\n\n%s\n\n", c->name, c->subject, c->profile, c->detail);
            if (c->has_classes) {
                for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
                    if (c->class_mismatches[k])
                        fprintf(f, "- %s: %llu mismatches\n", fp8kv_class_names[k],
                                (unsigned long long)c->class_mismatches[k]);
                fputc('\n', f);
            }
            fprintf(f, "```\n");
            for (int k = 0; k < c->failure_lines; k++)
                fprintf(f, "%s\n", c->failures[k]);
            fprintf(f, "```\n");
        }
    }
    fclose(f);
    return text;
}

/* index.md: one line per <out>/<target>/report.json. */
static int write_index(const char *out_dir)
{
    DIR *d = opendir(out_dir);
    if (!d)
        return fp8kv_fail("%s: cannot read the report directory", out_dir);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of targets */
        for (int j = i; j > 0 && names[j] && names[j - 1] && strcmp(names[j], names[j - 1]) < 0;
             j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    int rc = f ? 0 : fp8kv_fail("out of memory");
    if (f) {
        fprintf(f,
                "# fp8kv reports\n\n| target | verdict | checks | device |\n|---|---|---:|---|\n");
        int others = 0; /* folders with a report of another kind (scripts/peers) */
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < n; i++) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s/report.json", out_dir, names[i] ? names[i] : "");
                json_t *root = names[i] ? load_json(path) : NULL;
                if (!root)
                    continue;
                const char *verdict = json_string_value(json_object_get(root, "verdict"));
                const char *device = json_string_value(json_object_get(root, "device"));
                json_t *checks = json_object_get(root, "checks");
                if (pass == 0 && verdict && device)
                    fprintf(f, "| [%s](%s/report.md) | %s | %zu | %s |\n", names[i], names[i],
                            verdict, json_is_array(checks) ? json_array_size(checks) : 0, device);
                else if (pass == 1 && !(verdict && device))
                    fprintf(f, "%s- [%s](%s/report.md)\n", others++ ? "" : "\nOther reports:\n\n",
                            names[i], names[i]);
                json_decref(root);
            }
        fclose(f);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    if (rc == 0)
        rc = write_text(out_dir, "index.md", text);
    free(text);
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
        json_object_set(root, "checks", checks);
        json_object_set(root, "junit", junit);
        char *text = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
        char *md = markdown(m, r, hash, passed, failed, reported);
        size_t len = text ? strlen(text) : 0;
        char *with_newline = text ? malloc(len + 2) : NULL;
        if (with_newline) {
            memcpy(with_newline, text, len);
            memcpy(with_newline + len, "\n", 2);
        }
        rc = with_newline && md ? write_text(dir, "report.json", with_newline)
                                : fp8kv_fail("out of memory");
        if (rc == 0)
            rc = write_text(dir, "report.md", md);
        free(text);
        free(with_newline);
        free(md);
    }
    if (rc == 0)
        rc = fp8kv_replace_dir(dir, final);
    if (rc != 0 && dir[0])
        fp8kv_remove_tree(dir); /* nothing half-written stays behind */
    if (rc == 0)
        rc = write_index(out_dir);
    json_decref(root);
    json_decref(checks);
    json_decref(junit);
    free(final);
    free(manifest);
    return rc;
}
