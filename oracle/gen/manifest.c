/* manifest.c — recording generated files; writing MANIFEST.json and SHA256SUMS. */
#include "manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/digest.h"
#include "fp8kv/oracle.h"
#include "fp8kv/spec.h"

#define MANIFEST_SCHEMA_VERSION 1

static struct fp8kv_manifest_entry *new_entry(struct fp8kv_manifest *m, const char *profile,
                                              const char *set, const char *path,
                                              const char *description)
{
    if (m->count == m->capacity) {
        size_t cap = m->capacity ? 2 * m->capacity : 64;
        struct fp8kv_manifest_entry *e = realloc(m->entries, cap * sizeof *e);
        if (!e)
            return NULL;
        m->entries = e;
        m->capacity = cap;
    }
    struct fp8kv_manifest_entry *e = &m->entries[m->count];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    e->description = strdup(description);
    e->profile = profile;
    e->set = set;
    if (!e->path || !e->description) {
        free(e->path);
        free(e->description);
        return NULL;
    }
    m->count++;
    return e;
}

/* Creates the parent directory of dir/path and returns the full path (malloc'd) or NULL. */
static char *prepare_path(struct fp8kv_manifest *m, const char *path)
{
    char *full = fp8kv_path_join(m->dir, path);
    if (!full)
        return NULL;
    char *slash = strrchr(full, '/');
    *slash = '\0';
    int rc = fp8kv_make_dirs(full);
    *slash = '/';
    if (rc != 0) {
        free(full);
        return NULL;
    }
    return full;
}

int fp8kv_manifest_add_npy(struct fp8kv_manifest *m, const char *profile, const char *set,
                           const char *path, const char *description, enum fp8kv_npy_dtype dtype,
                           int ndim, const size_t *shape, const void *data)
{
    char *full = prepare_path(m, path);
    if (!full)
        return FP8KV_ERR;
    int rc = fp8kv_npy_write(full, dtype, ndim, shape, data);
    free(full);
    if (rc != 0)
        return rc;
    struct fp8kv_manifest_entry *e = new_entry(m, profile, set, path, description);
    if (!e)
        return fp8kv_fail("out of memory");
    e->is_npy = 1;
    e->dtype = dtype;
    e->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        e->shape[i] = shape[i];
    return FP8KV_OK;
}

int fp8kv_manifest_add_table(int rc, struct fp8kv_manifest *m, const char *set, const char *group,
                             const char *name, const char *description, enum fp8kv_npy_dtype dtype,
                             size_t rows, size_t cols, const void *data)
{
    if (rc != 0)
        return rc;
    char path[256];
    snprintf(path, sizeof path, "%s/%s/%s", set, group, name);
    const size_t shape[2] = {rows, cols};
    return fp8kv_manifest_add_npy(m, NULL, set, path, description, dtype, cols ? 2 : 1, shape,
                                  data);
}

int fp8kv_manifest_add_text(struct fp8kv_manifest *m, const char *profile, const char *set,
                            const char *path, const char *description, const char *text, size_t len)
{
    char *full = prepare_path(m, path);
    if (!full)
        return FP8KV_ERR;
    int rc = fp8kv_write_file_atomic(full, text, len);
    free(full);
    if (rc != 0)
        return rc;
    return new_entry(m, profile, set, path, description) ? FP8KV_OK : fp8kv_fail("out of memory");
}

static json_t *string_array(const char *const *names, int count)
{
    json_t *a = json_array();
    for (int i = 0; i < count; i++)
        json_array_append_new(a, json_string(names[i]));
    return a;
}

static json_t *profiles_json(void)
{
    json_t *o = json_object();
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        json_object_set_new(o, p->name,
                            json_pack("{s:s, s:s, s:s}", "format", p->format->name, "overflow",
                                      fp8kv_overflow_names[p->overflow], "inf",
                                      fp8kv_inf_names[p->inf]));
    }
    return o;
}

static json_t *entry_json(const struct fp8kv_manifest_entry *e, const char *sha, long long bytes)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I}", "path", e->path, "set", e->set,
                          "description", e->description, "sha256", sha, "bytes", (json_int_t)bytes);
    json_object_set_new(o, "profile", e->profile ? json_string(e->profile) : json_null());
    if (e->is_npy) {
        json_t *shape = json_array();
        for (int i = 0; i < e->ndim; i++)
            json_array_append_new(shape, json_integer((json_int_t)e->shape[i]));
        json_object_set_new(o, "dtype", json_string(fp8kv_npy_descr(e->dtype)));
        json_object_set_new(o, "shape", shape);
    } else {
        json_object_set_new(o, "dtype", json_null());
        json_object_set_new(o, "shape", json_null());
    }
    return o;
}

/* One SHA256SUMS line, as sha256sum writes it. */
struct sum_line {
    const char *path;
    char sha[FP8KV_SHA256_HEX_LEN + 1];
};

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct sum_line *)a)->path, ((const struct sum_line *)b)->path);
}

int fp8kv_manifest_finish(struct fp8kv_manifest *m, const char *generator_version)
{
    struct sum_line *sums = calloc(m->count + 1, sizeof *sums);
    json_t *files = json_array();
    json_t *root =
        json_pack("{s:i, s:s, s:s, s:s, s:s}", "schema_version", MANIFEST_SCHEMA_VERSION,
                  "generator", "fp8kv", "generator_version", generator_version, "mpfr_version",
                  fp8kv_oracle_mpfr_version(), "gmp_version", fp8kv_oracle_gmp_version());
    int rc = sums && files && root ? FP8KV_OK : fp8kv_fail("out of memory");
    for (size_t i = 0; i < m->count && rc == 0; i++) {
        const struct fp8kv_manifest_entry *e = &m->entries[i];
        char *full = fp8kv_path_join(m->dir, e->path);
        long long bytes = 0;
        rc = full ? fp8kv_sha256_file(full, sums[i].sha, &bytes) : fp8kv_fail("out of memory");
        free(full);
        sums[i].path = e->path;
        if (rc == 0)
            json_array_append_new(files, entry_json(e, sums[i].sha, bytes));
    }
    char *manifest_path = fp8kv_path_join(m->dir, "MANIFEST.json");
    char *text = NULL;
    if (rc == 0) {
        json_object_set_new(root, "classes", string_array(fp8kv_class_names, FP8KV_CLASS_COUNT));
        json_object_set_new(root, "models", string_array(fp8kv_model_names, FP8KV_MODEL_COUNT));
        json_object_set_new(root, "profiles", profiles_json());
        json_object_set(root, "files", files);
        text = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
        rc = text && manifest_path ? FP8KV_OK : fp8kv_fail("out of memory");
    }
    if (rc == 0) {
        size_t len = strlen(text); /* json_dumps gives no final newline: add one */
        char *line = malloc(len + 2);
        rc = line ? FP8KV_OK : fp8kv_fail("out of memory");
        if (rc == 0) {
            memcpy(line, text, len);
            memcpy(line + len, "\n", 2);
            free(text);
            text = line;
            rc = fp8kv_write_file_atomic(manifest_path, text, len + 1);
        }
    }
    if (rc == 0) {
        sums[m->count].path = "MANIFEST.json";
        rc = fp8kv_sha256_buffer(text, strlen(text), sums[m->count].sha);
    }
    if (rc == 0) {
        qsort(sums, m->count + 1, sizeof *sums, by_path);
        size_t cap = (m->count + 1) * (FP8KV_SHA256_HEX_LEN + 4), len = 0;
        for (size_t i = 0; i <= m->count; i++)
            cap += strlen(sums[i].path);
        char *out = malloc(cap + 1);
        rc = out ? FP8KV_OK : fp8kv_fail("out of memory");
        for (size_t i = 0; i <= m->count && rc == 0; i++)
            len +=
                (size_t)snprintf(out + len, cap + 1 - len, "%s  %s\n", sums[i].sha, sums[i].path);
        char *sums_path = fp8kv_path_join(m->dir, "SHA256SUMS");
        if (rc == 0)
            rc = sums_path ? fp8kv_write_file_atomic(sums_path, out, len)
                           : fp8kv_fail("out of memory");
        free(sums_path);
        free(out);
    }
    free(text);
    free(manifest_path);
    free(sums);
    json_decref(files);
    json_decref(root);
    return rc;
}

void fp8kv_manifest_free(struct fp8kv_manifest *m)
{
    for (size_t i = 0; i < m->count; i++) {
        free(m->entries[i].path);
        free(m->entries[i].description);
    }
    free(m->entries);
    m->entries = NULL;
    m->count = m->capacity = 0;
}
