/* verify.c — fp8kv_verify_vectors (fp8kv/verify.h): is a golden vector directory intact?
 *
 * Three passes over one directory: MANIFEST.json (schema and entry types), every file it lists
 * (size, sha256, .npy header), then SHA256SUMS (format, order, digests, and the same set of
 * paths). A problem never stops the check: each is logged, and the first becomes the error.
 */
#include "fp8kv/verify.h"

#include "fp8kv/diag.h"
#include "fp8kv/digest.h"
#include "fp8kv/fileio.h"
#include "fp8kv/npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>
#include <pthread.h>

#define MANIFEST_NAME "MANIFEST.json"
#define SUMS_NAME "SHA256SUMS"
/* A manifest of a few hundred files is a few hundred KiB: anything past this is not one. */
#define MAX_MANIFEST_BYTES (16u << 20)

/* ---- problems --------------------------------------------------------------------------- */

struct report {
    FILE *log;
    int problems;
    char *first; /* "<path>: <problem>" of the first problem, or NULL */
};

/* vformat: a malloc'd printf result, or NULL when out of memory. */
static char *vformat(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s != NULL)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

/* problem: logs "verify: <path>: <what>" and keeps the first one for the final error. */
static void problem(struct report *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(struct report *r, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = vformat(fmt, ap);
    va_end(ap);
    const char *text = what != NULL ? what : "(out of memory describing the problem)";
    if (r->log != NULL)
        fprintf(r->log, "verify: %s: %s\n", path, text);
    if (r->first == NULL)
        r->first = format("%s: %s", path, text);
    r->problems++;
    free(what);
}

/* callee_error: the last fp8kv error without its leading "<path>: ", which problem() adds. */
static const char *callee_error(const char *path)
{
    const char *msg = fp8kv_last_error();
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        return msg + n + 2;
    return msg;
}

/* ---- paths ------------------------------------------------------------------------------ */

/* path_problem: why a listed path is unsafe or not canonical, or NULL when it is fine. A
 * canonical relative path cannot leave the directory and has one spelling, so the manifest
 * and SHA256SUMS can be compared as strings. */
static const char *path_problem(const char *p)
{
    if (p[0] == '\0')
        return "empty path";
    if (p[0] == '/')
        return "absolute path";
    for (const char *c = p; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7F || *c == '\\')
            return "control character or backslash in path";
    for (const char *c = p;;) {
        const char *slash = strchr(c, '/');
        size_t len = slash != NULL ? (size_t)(slash - c) : strlen(c);
        if (len == 0)
            return "empty path component";
        if (len == 1 && c[0] == '.')
            return "'.' path component";
        if (len == 2 && c[0] == '.' && c[1] == '.')
            return "'..' path component (leaves the directory)";
        if (slash == NULL)
            return NULL;
        c = slash + 1;
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_lower_hex64(const char *s)
{
    for (int i = 0; i < FP8KV_SHA256_HEX_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* ---- the files the manifest lists ------------------------------------------------------- */

/* One file SHA256SUMS must list: a manifest entry with a usable path, or MANIFEST.json. */
struct known {
    const char *path; /* relative, as listed */
    char hex[FP8KV_SHA256_HEX_LEN + 1];
    int hashed;    /* hex holds the file's actual digest */
    int in_sums;   /* SHA256SUMS listed it */
    int duplicate; /* a second manifest entry for a path already known */
};

struct verify {
    const char *dir;
    char *manifest_path;
    char *sums_path;
    struct report r;
    int checked;
    struct known *known;
    size_t n_known;
    int manifest_usable; /* the file list is trustworthy enough to compare sets */
};

/* entry_string: the string at key (NULL with *bad set when missing or of another type; a
 * JSON null is allowed, giving NULL, when nullable). */
static const char *entry_string(json_t *entry, const char *key, int nullable, int *bad)
{
    json_t *v = json_object_get(entry, key);
    if (v != NULL && json_is_string(v))
        return json_string_value(v);
    if (v != NULL && nullable && json_is_null(v))
        return NULL;
    *bad = 1;
    return NULL;
}

/* shape_matches: the manifest's shape (a JSON array) equals the .npy header's. */
static int shape_matches(json_t *shape, const struct fp8kv_npy *h)
{
    if (json_array_size(shape) != (size_t)h->ndim)
        return 0;
    for (int d = 0; d < h->ndim; d++) {
        json_int_t v = json_integer_value(json_array_get(shape, (size_t)d));
        if (v < 0 || (unsigned long long)v != (unsigned long long)h->shape[d])
            return 0;
    }
    return 1;
}

/* examine: reads one listed file once, hashes those bytes and parses its .npy header from the
 * same bytes, and compares them with what its entry says; a NULL field (bytes < 0, sha256,
 * dtype, shape) was invalid in the manifest and is not compared. */
static void examine(struct verify *v, struct known *k, long long bytes, const char *sha256,
                    const char *dtype, json_t *shape)
{
    char *full = fp8kv_path_join(v->dir, k->path);
    if (full == NULL) {
        problem(&v->r, k->path, "out of memory");
        return;
    }
    v->checked++;
    size_t len = 0;
    char *data = fp8kv_read_regular(full, FP8KV_VECTOR_FILE_MAX_BYTES, &len);
    if (data == NULL || fp8kv_sha256_buffer(data, len, k->hex) != 0) {
        problem(&v->r, full, "%s", callee_error(full));
        free(data);
        free(full);
        return;
    }
    k->hashed = 1;
    const long long size = (long long)len;
    if (bytes >= 0 && size != bytes)
        problem(&v->r, full, "%lld bytes, manifest says %lld", size, bytes);
    if (sha256 != NULL && strcmp(k->hex, sha256) != 0)
        problem(&v->r, full, "sha256 %s, manifest says %s", k->hex, sha256);
    if (dtype != NULL && shape != NULL) {
        struct fp8kv_npy h;
        if (fp8kv_npy_parse_header(data, len, full, &h) != 0) {
            problem(&v->r, full, "%s", callee_error(full));
        } else {
            const char *descr = fp8kv_npy_descr(h.dtype);
            if (strcmp(descr, dtype) != 0)
                problem(&v->r, full, "header dtype '%s', manifest says '%s'", descr, dtype);
            if (!shape_matches(shape, &h)) {
                char *listed = json_dumps(shape, JSON_COMPACT);
                if (h.ndim == 1)
                    problem(&v->r, full, "header shape [%zu], manifest says %s", h.shape[0],
                            listed != NULL ? listed : "?");
                else
                    problem(&v->r, full, "header shape [%zu,%zu], manifest says %s", h.shape[0],
                            h.shape[1], listed != NULL ? listed : "?");
                free(listed);
            }
        }
    }
    free(data);
    free(full);
}

/* check_entry: the types of entry i, then the file it names. */
static void check_entry(struct verify *v, json_t *entry, size_t i)
{
    const char *mp = v->manifest_path;
    if (!json_is_object(entry)) {
        problem(&v->r, mp, "files[%zu] is not an object", i);
        return;
    }
    int bad = 0;
    const char *path = entry_string(entry, "path", 0, &bad);
    if (bad) {
        problem(&v->r, mp, "files[%zu]: 'path' missing or not a string", i);
    } else if (path_problem(path) != NULL) {
        problem(&v->r, mp, "files[%zu]: '%s': %s", i, path, path_problem(path));
        path = NULL;
    } else if (strcmp(path, MANIFEST_NAME) == 0 || strcmp(path, SUMS_NAME) == 0) {
        problem(&v->r, mp, "files[%zu]: '%s' cannot list itself or SHA256SUMS", i, path);
        path = NULL;
    }
    const char *label = path != NULL ? path : "?";

    static const struct {
        const char *key;
        int nullable;
    } strings[] = {{"profile", 1}, {"set", 0}, {"description", 0}};
    for (size_t s = 0; s < sizeof strings / sizeof strings[0]; s++) {
        bad = 0;
        entry_string(entry, strings[s].key, strings[s].nullable, &bad);
        if (bad)
            problem(&v->r, mp, "files[%zu] (%s): '%s' missing or not a string%s", i, label,
                    strings[s].key, strings[s].nullable ? " or null" : "");
    }

    int dtype_bad = 0;
    const char *dtype = entry_string(entry, "dtype", 1, &dtype_bad);
    if (dtype_bad)
        problem(&v->r, mp, "files[%zu] (%s): 'dtype' missing or not a string or null", i, label);

    json_t *shape = json_object_get(entry, "shape");
    int shape_ok = shape != NULL && (json_is_null(shape) || json_is_array(shape));
    for (size_t d = 0; shape_ok && json_is_array(shape) && d < json_array_size(shape); d++) {
        json_t *dim = json_array_get(shape, d);
        shape_ok = json_is_integer(dim) && json_integer_value(dim) >= 0;
    }
    if (!shape_ok)
        problem(&v->r, mp, "files[%zu] (%s): 'shape' missing or not null or a list of sizes", i,
                label);
    if (!shape_ok || json_is_null(shape))
        shape = NULL;

    json_t *jbytes = json_object_get(entry, "bytes");
    long long bytes = -1;
    if (jbytes == NULL || !json_is_integer(jbytes) || json_integer_value(jbytes) < 0)
        problem(&v->r, mp, "files[%zu] (%s): 'bytes' missing or not a byte count", i, label);
    else
        bytes = json_integer_value(jbytes);

    bad = 0;
    const char *sha256 = entry_string(entry, "sha256", 0, &bad);
    if (bad || strlen(sha256) != FP8KV_SHA256_HEX_LEN || !is_lower_hex64(sha256)) {
        problem(&v->r, mp, "files[%zu] (%s): 'sha256' missing or not 64 lowercase hex digits", i,
                label);
        sha256 = NULL;
    }

    /* dtype and shape describe .npy files and only those. */
    if (path != NULL && ends_with(path, ".npy")) {
        if ((dtype == NULL && !dtype_bad) || (shape == NULL && shape_ok))
            problem(&v->r, mp, "files[%zu] (%s): a .npy file needs 'dtype' and 'shape'", i, label);
    } else if (path != NULL && (dtype != NULL || shape != NULL)) {
        problem(&v->r, mp, "files[%zu] (%s): 'dtype' and 'shape' must be null for a non-.npy file",
                i, label);
        dtype = NULL;
    }
    if (dtype == NULL)
        shape = NULL;

    if (path == NULL)
        return;
    struct known *k = &v->known[v->n_known++];
    k->path = path;
    examine(v, k, bytes, sha256, dtype, shape);
}

/* check_manifest: loads and checks MANIFEST.json and every file it lists, filling v->known.
 * Returns the parsed root (to keep the path strings alive), or NULL. */
static json_t *check_manifest(struct verify *v)
{
    const char *mp = v->manifest_path;
    json_error_t err;
    size_t len = 0;
    char *text = fp8kv_read_regular(mp, MAX_MANIFEST_BYTES, &len);
    if (text == NULL) {
        problem(&v->r, mp, "%s", callee_error(mp));
        return NULL;
    }
    /* the digest of the very bytes parsed: a manifest swapped after this read is not this one */
    char self_hex[FP8KV_SHA256_HEX_LEN + 1];
    const int self_hashed = fp8kv_sha256_buffer(text, len, self_hex) == 0;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    free(text);
    size_t n_files = 0;
    json_t *files = NULL;
    if (root == NULL) {
        if (err.line > 0)
            problem(&v->r, mp, "cannot parse (line %d, column %d): %s", err.line, err.column,
                    err.text);
        else
            problem(&v->r, mp, "cannot load: %s", err.text);
    } else if (!json_is_object(root)) {
        problem(&v->r, mp, "not a JSON object");
    } else {
        json_t *sv = json_object_get(root, "schema_version");
        files = json_object_get(root, "files");
        if (sv == NULL || !json_is_integer(sv)) {
            problem(&v->r, mp, "'schema_version' missing or not an integer");
            files = NULL;
        } else if (json_integer_value(sv) != FP8KV_MANIFEST_SCHEMA_VERSION) {
            /* Another schema may mean other keys: do not guess at its entries. */
            problem(&v->r, mp, "schema_version %lld, this verifier reads %d",
                    (long long)json_integer_value(sv), FP8KV_MANIFEST_SCHEMA_VERSION);
            files = NULL;
        } else if (files == NULL || !json_is_array(files)) {
            problem(&v->r, mp, "'files' missing or not an array");
            files = NULL;
        } else {
            n_files = json_array_size(files);
        }
    }

    v->known = calloc(n_files + 1, sizeof *v->known);
    if (v->known == NULL) {
        problem(&v->r, mp, "out of memory for %zu entries", n_files);
        return root;
    }
    /* MANIFEST.json itself: listed in SHA256SUMS, so its digest is needed (when it exists). */
    struct known *self = &v->known[v->n_known++];
    self->path = MANIFEST_NAME;
    if (self_hashed) {
        memcpy(self->hex, self_hex, sizeof self->hex);
        self->hashed = 1;
        v->checked++;
    } else if (root != NULL) {
        problem(&v->r, mp, "%s", callee_error(mp));
    }

    if (files == NULL)
        return root;
    v->manifest_usable = 1;
    for (size_t i = 0; i < n_files; i++)
        check_entry(v, json_array_get(files, i), i);
    return root;
}

/* ---- SHA256SUMS ------------------------------------------------------------------------- */

/* cmp_known: by path, then by position in the manifest (all point into one array). */
static int cmp_known(const void *a, const void *b)
{
    const struct known *x = *(struct known *const *)a, *y = *(struct known *const *)b;
    int c = strcmp(x->path, y->path);
    return c != 0 ? c : (x > y) - (x < y);
}

/* find: the first known entry with path in the sorted index, or NULL. */
static struct known *find(struct known **sorted, size_t n, const char *path)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(sorted[mid]->path, path) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(sorted[lo]->path, path) == 0 ? sorted[lo] : NULL;
}

/* check_line: one SHA256SUMS line (newline removed): "<64 hex>  <path>", as sha256sum writes
 * it in text mode. prev is the previous line's path (order check); it is updated. */
static void check_line(struct verify *v, struct known **sorted, const char *line, size_t lineno,
                       char **prev)
{
    const char *sp = v->sums_path;
    if (strlen(line) < FP8KV_SHA256_HEX_LEN + 3 || !is_lower_hex64(line) ||
        line[FP8KV_SHA256_HEX_LEN] != ' ' || line[FP8KV_SHA256_HEX_LEN + 1] != ' ') {
        problem(&v->r, sp, "line %zu: malformed (want '<64 lowercase hex>  <path>')", lineno);
        return;
    }
    const char *path = line + FP8KV_SHA256_HEX_LEN + 2;
    if (path_problem(path) != NULL) {
        problem(&v->r, sp, "line %zu: '%s': %s", lineno, path, path_problem(path));
        return;
    }
    if (*prev != NULL && strcmp(*prev, path) >= 0)
        problem(&v->r, sp, "line %zu: '%s' is repeated or out of order (must be sorted)", lineno,
                path);
    free(*prev);
    *prev = format("%s", path);

    char want[FP8KV_SHA256_HEX_LEN + 1];
    memcpy(want, line, FP8KV_SHA256_HEX_LEN);
    want[FP8KV_SHA256_HEX_LEN] = '\0';
    struct known *k = find(sorted, v->n_known, path);
    if (k == NULL && v->manifest_usable) {
        problem(&v->r, sp, "line %zu: lists '%s', which MANIFEST.json does not", lineno, path);
        return;
    }
    if (k == NULL) {
        /* No trustworthy manifest: still say whether the listed file is intact. */
        char *full = fp8kv_path_join(v->dir, path);
        char hex[FP8KV_SHA256_HEX_LEN + 1];
        if (full == NULL) {
            problem(&v->r, sp, "out of memory");
            return;
        }
        v->checked++;
        if (fp8kv_sha256_file(full, hex, NULL) != 0)
            problem(&v->r, full, "%s", callee_error(full));
        else if (strcmp(hex, want) != 0)
            problem(&v->r, sp, "line %zu: digest of '%s' is %s, the file's is %s", lineno, path,
                    want, hex);
        free(full);
        return;
    }
    k->in_sums = 1;
    if (k->hashed && strcmp(k->hex, want) != 0)
        problem(&v->r, sp, "line %zu: digest of '%s' is %s, the file's is %s", lineno, path, want,
                k->hex);
}

static void check_sums(struct verify *v)
{
    const char *sp = v->sums_path;
    struct known **sorted = malloc((v->n_known + 1) * sizeof *sorted);
    if (sorted == NULL) {
        problem(&v->r, sp, "out of memory");
        return;
    }
    for (size_t i = 0; i < v->n_known; i++)
        sorted[i] = &v->known[i];
    qsort(sorted, v->n_known, sizeof *sorted, cmp_known);
    /* Equal paths sort in manifest order, so the first of a run is the one find() returns and
     * the others are repeats. */
    for (size_t i = 1; i < v->n_known; i++) {
        if (strcmp(sorted[i - 1]->path, sorted[i]->path) != 0)
            continue;
        if (!sorted[i - 1]->duplicate)
            problem(&v->r, v->manifest_path, "lists '%s' more than once", sorted[i]->path);
        sorted[i]->duplicate = 1;
    }

    FILE *f = fp8kv_fopen_regular(sp, NULL);
    if (f == NULL) {
        problem(&v->r, sp, "%s", callee_error(sp));
        free(sorted);
        return;
    }
    char *line = NULL, *prev = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    int read_errno = 0;
    for (;;) {
        errno = 0;
        len = getline(&line, &cap, f);
        if (len < 0) {
            /* -1 is the end of the file only when the stream says so: a read error or a failed
             * allocation (ENOMEM, which sets no error indicator) is an error, never the end */
            if (!feof(f) || ferror(f))
                read_errno = errno != 0 ? errno : EIO;
            break;
        }
        lineno++;
        if (len == 0 || line[len - 1] != '\n') {
            problem(&v->r, sp, "line %zu: no final newline", lineno);
            continue;
        }
        line[len - 1] = '\0';
        if (strlen(line) != (size_t)len - 1) {
            problem(&v->r, sp, "line %zu: contains a NUL byte", lineno);
            continue;
        }
        check_line(v, sorted, line, lineno, &prev);
    }
    if (read_errno != 0)
        problem(&v->r, sp, "read failed after line %zu: %s", lineno, strerror(read_errno));
    fclose(f);
    free(line);
    free(prev);

    for (size_t i = 0; i < v->n_known; i++)
        if (!v->known[i].in_sums && !v->known[i].duplicate)
            problem(&v->r, sp, "does not list '%s'", v->known[i].path);
    free(sorted);
}

/* ---- the whole check -------------------------------------------------------------------- */

/* One file of a verified set: its path relative to the directory and the digest of the bytes
 * verification read. */
struct digest {
    char *path;
    char hex[FP8KV_SHA256_HEX_LEN + 1];
};

static int cmp_digest(const void *a, const void *b)
{
    return strcmp(((const struct digest *)a)->path, ((const struct digest *)b)->path);
}

static void digests_free(struct digest *d, size_t n)
{
    for (size_t i = 0; d != NULL && i < n; i++)
        free(d[i].path);
    free(d);
}

/* take_digests: the digests of every file verified (all of v->known: a set that passed has no
 * duplicate and every file hashed), sorted by path, into *out and *n. 0 or FP8KV_ERR. */
static int take_digests(const struct verify *v, struct digest **out, size_t *n)
{
    struct digest *d = calloc(v->n_known + 1, sizeof *d);
    for (size_t i = 0; d != NULL && i < v->n_known; i++) {
        d[i].path = strdup(v->known[i].path);
        memcpy(d[i].hex, v->known[i].hex, sizeof d[i].hex);
        if (d[i].path == NULL || !v->known[i].hashed) {
            digests_free(d, i + 1);
            d = NULL;
        }
    }
    if (d == NULL)
        return fp8kv_fail("%s: out of memory keeping the verified digests", v->dir);
    qsort(d, v->n_known, sizeof *d, cmp_digest);
    *out = d;
    *n = v->n_known;
    return 0;
}

/* verify_dir: fp8kv_verify_vectors; when out is not NULL and the set passed, also the digests
 * of every file it read (take_digests). */
static int verify_dir(const char *dir, FILE *log, int *files_checked, struct digest **out,
                      size_t *n_out)
{
    if (files_checked != NULL)
        *files_checked = 0;
    if (dir == NULL)
        return fp8kv_fail("verify: no vector directory given");
    struct verify v = {.dir = dir, .r = {.log = log}};
    v.manifest_path = fp8kv_path_join(dir, MANIFEST_NAME);
    v.sums_path = fp8kv_path_join(dir, SUMS_NAME);
    if (v.manifest_path == NULL || v.sums_path == NULL) {
        free(v.manifest_path);
        free(v.sums_path);
        return fp8kv_fail("%s: out of memory", dir);
    }

    json_t *root = check_manifest(&v);
    if (v.known != NULL)
        check_sums(&v);

    int rc = 0;
    if (v.r.problems > 0) {
        const char *first = v.r.first != NULL ? v.r.first : "out of memory";
        if (v.r.problems > 1)
            rc = fp8kv_fail("%s (%d problems in all)", first, v.r.problems);
        else
            rc = fp8kv_fail("%s", first);
    }
    if (rc == 0 && out != NULL)
        rc = take_digests(&v, out, n_out);
    if (files_checked != NULL)
        *files_checked = v.checked;
    json_decref(root);
    free(v.known);
    free(v.manifest_path);
    free(v.sums_path);
    free(v.r.first);
    return rc;
}

int fp8kv_verify_vectors(const char *dir, FILE *log, int *files_checked)
{
    return verify_dir(dir, log, files_checked, NULL, NULL);
}

/* ---- the gate before judging, and every read after it ------------------------------------- */

/* What this process knows of a directory it was asked to trust: the digests of the set it
 * verified, or (refused not NULL) why nothing of it is judged: its verification failed, or a
 * file read after verification was not the file verified. */
struct record {
    char *real; /* canonical path; NULL: a free slot */
    struct digest *files;
    size_t n;
    char *refused;
    unsigned long long used; /* for forgetting the least recently used of a full table */
};

#define MAX_RECORDS 64
static struct record records[MAX_RECORDS];
static unsigned long long record_clock;
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;

/* find_record: the record of real (records_lock held), or NULL. */
static struct record *find_record(const char *real)
{
    for (int i = 0; real != NULL && i < MAX_RECORDS; i++)
        if (records[i].real != NULL && strcmp(records[i].real, real) == 0) {
            records[i].used = ++record_clock;
            return &records[i];
        }
    return NULL;
}

static void record_clear(struct record *r)
{
    digests_free(r->files, r->n);
    free(r->refused);
    r->files = NULL;
    r->n = 0;
    r->refused = NULL;
}

/* keep_record: sets the record of real (taking real, files and refused), in a free slot or
 * the least recently used one. With neither files nor refused, nothing is kept. */
static void keep_record(char *real, struct digest *files, size_t n, char *refused)
{
    if (real == NULL || (files == NULL && refused == NULL)) {
        free(real);
        digests_free(files, n);
        free(refused);
        return;
    }
    pthread_mutex_lock(&records_lock);
    struct record *r = find_record(real);
    for (int i = 0; r == NULL && i < MAX_RECORDS; i++)
        if (records[i].real == NULL)
            r = &records[i];
    if (r == NULL) { /* a full table: the least recently used record goes */
        r = &records[0];
        for (int i = 1; i < MAX_RECORDS; i++)
            if (records[i].used < r->used)
                r = &records[i];
    }
    record_clear(r);
    if (r->real != real) {
        free(r->real);
        r->real = real;
    }
    r->files = files;
    r->n = n;
    r->refused = refused;
    r->used = ++record_clock;
    pthread_mutex_unlock(&records_lock);
}

/* refuse: marks the record of dir refused (if there is one): nothing more is judged against it
 * until it verifies again. Returns FP8KV_ERR with the last error, which says why. */
static int refuse(const char *dir)
{
    char *real = realpath(dir, NULL);
    char *why = format("%s", fp8kv_last_error());
    pthread_mutex_lock(&records_lock);
    struct record *r = find_record(real);
    if (r != NULL && why != NULL) {
        record_clear(r);
        r->refused = why;
        why = NULL;
    }
    pthread_mutex_unlock(&records_lock);
    free(why);
    free(real);
    return FP8KV_ERR;
}

static int trust(const char *dir, int again)
{
    char *real = dir != NULL ? realpath(dir, NULL) : NULL;
    if (!again) {
        pthread_mutex_lock(&records_lock);
        const struct record *r = find_record(real);
        const int verified = r != NULL && r->files != NULL;
        pthread_mutex_unlock(&records_lock);
        if (verified) {
            free(real);
            return FP8KV_OK;
        }
    }
    struct digest *files = NULL;
    size_t n = 0;
    if (verify_dir(dir, NULL, NULL, &files, &n) == 0) {
        if (real == NULL) { /* verified, yet not found again: nothing to hold the digests by */
            digests_free(files, n);
            return fp8kv_fail("%s: cannot resolve the directory: %s", dir, strerror(errno));
        }
        keep_record(real, files, n, NULL);
        return FP8KV_OK;
    }
    fp8kv_fail("the vectors in %s are not the verified truth, nothing is judged against them: %s",
               dir ? dir : "(none)", fp8kv_last_error());
    keep_record(real, NULL, 0, format("%s", fp8kv_last_error()));
    return FP8KV_ERR;
}

int fp8kv_vectors_trust(const char *dir)
{
    return trust(dir, 0);
}

int fp8kv_vectors_trust_again(const char *dir)
{
    return trust(dir, 1);
}

int fp8kv_vectors_trusted(const char *dir)
{
    char *real = dir ? realpath(dir, NULL) : NULL;
    pthread_mutex_lock(&records_lock);
    const struct record *r = find_record(real);
    const int verified = r != NULL && r->files != NULL;
    pthread_mutex_unlock(&records_lock);
    free(real);
    return verified;
}

/* What the process knows of one file of a directory. */
enum standing {
    UNVERIFIED, /* the directory was never trusted in this process: read as it is */
    LISTED,     /* a file of the verified set: *hex is the digest verified */
    UNLISTED,   /* the directory is verified, and this is none of its files */
    REFUSED     /* the directory is refused (the last error says why) */
};

static enum standing standing_of(const char *dir, const char *rel,
                                 char hex[FP8KV_SHA256_HEX_LEN + 1])
{
    char *real = realpath(dir, NULL);
    enum standing s = UNVERIFIED;
    pthread_mutex_lock(&records_lock);
    const struct record *r = find_record(real);
    if (r != NULL && r->refused != NULL) {
        fp8kv_fail("%s/%s: the vectors in %s are refused, nothing is judged against them: %s", dir,
                   rel, dir, r->refused);
        s = REFUSED;
    } else if (r != NULL) {
        const struct digest key = {.path = (char *)rel};
        const struct digest *d = bsearch(&key, r->files, r->n, sizeof *d, cmp_digest);
        s = d != NULL ? LISTED : UNLISTED;
        if (d != NULL)
            memcpy(hex, d->hex, FP8KV_SHA256_HEX_LEN + 1);
    }
    pthread_mutex_unlock(&records_lock);
    free(real);
    return s;
}

int fp8kv_vectors_digest(const char *dir, const char *rel, char hex[FP8KV_SHA256_HEX_LEN + 1])
{
    if (standing_of(dir, rel, hex) == LISTED)
        return FP8KV_OK;
    return fp8kv_fail("%s/%s: no digest of it was kept (the directory is not a verified vector "
                      "set, or the file is none of its files)",
                      dir, rel);
}

int fp8kv_vectors_has(const char *dir, const char *rel)
{
    char hex[FP8KV_SHA256_HEX_LEN + 1];
    char *path = dir && rel ? format("%s/%s", dir, rel) : NULL;
    if (path == NULL)
        return fp8kv_fail("out of memory");
    const enum standing s = standing_of(dir, rel, hex);
    const int there = access(path, F_OK) == 0;
    int rc = s == LISTED || (s == UNVERIFIED && there);
    if (s == REFUSED)
        rc = FP8KV_ERR;
    else if (s == UNLISTED && there)
        rc = fp8kv_fail("%s: not a file of the verified vector set in %s, so it is no truth: "
                        "nothing is judged against it",
                        path, dir);
    free(path);
    return rc;
}

void *fp8kv_vectors_read(const char *dir, const char *rel, size_t *len)
{
    char want[FP8KV_SHA256_HEX_LEN + 1], got[FP8KV_SHA256_HEX_LEN + 1] = "?";
    char *path = dir && rel ? format("%s/%s", dir, rel) : NULL;
    if (path == NULL) {
        fp8kv_fail("out of memory");
        return NULL;
    }
    const enum standing s = standing_of(dir, rel, want);
    if (s == UNLISTED)
        fp8kv_fail("%s: not a file of the verified vector set in %s, so it is no truth: nothing "
                   "is judged against it",
                   path, dir);
    char *data = s == LISTED || s == UNVERIFIED
                     ? fp8kv_read_regular(path, FP8KV_VECTOR_FILE_MAX_BYTES, len)
                     : NULL;
    if (data == NULL && s == LISTED) {
        fp8kv_fail("%s (a file of the vector set verified in %s: it changed since, nothing is "
                   "judged against the set)",
                   fp8kv_last_error(), dir);
        refuse(dir);
    }
    if (data != NULL && s == LISTED &&
        (fp8kv_sha256_buffer(data, *len, got) != 0 || strcmp(got, want) != 0)) {
        fp8kv_fail("%s: changed since the vector set in %s was verified (sha256 %s, verified %s): "
                   "altered truth, nothing is judged against the set",
                   path, dir, got, want);
        refuse(dir);
        free(data);
        data = NULL;
    }
    free(path);
    return data;
}

int fp8kv_vectors_read_npy(const char *dir, const char *rel, enum fp8kv_npy_dtype dtype, int ndim,
                           size_t want_len, struct fp8kv_npy *out)
{
    memset(out, 0, sizeof *out);
    size_t len = 0;
    void *data = fp8kv_vectors_read(dir, rel, &len);
    char *path = data != NULL ? format("%s/%s", dir, rel) : NULL;
    int rc = data == NULL ? FP8KV_ERR
             : path       ? fp8kv_npy_parse_expect(data, len, path, dtype, ndim, want_len, out)
                          : fp8kv_fail("out of memory");
    free(path);
    free(data);
    return rc;
}
