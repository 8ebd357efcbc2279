/* manifest.h — the generator's record of the files it writes, and MANIFEST.json/SHA256SUMS. */
#ifndef FP8KV_GEN_MANIFEST_H
#define FP8KV_GEN_MANIFEST_H

#include <stddef.h>

#include "fp8kv/npy.h"

struct fp8kv_manifest_entry {
    char *path;          /* relative to the vector directory */
    const char *profile; /* NULL for files that belong to no profile */
    const char *set;
    char *description;
    int is_npy;
    enum fp8kv_npy_dtype dtype;
    int ndim;
    size_t shape[FP8KV_NPY_MAX_DIMS];
};

struct fp8kv_manifest {
    const char *dir;
    struct fp8kv_manifest_entry *entries;
    size_t count, capacity;
};

/* fp8kv_manifest_add_npy: writes dir/path as .npy and records it. 0 or FP8KV_ERR. */
int fp8kv_manifest_add_npy(struct fp8kv_manifest *m, const char *profile, const char *set,
                           const char *path, const char *description, enum fp8kv_npy_dtype dtype,
                           int ndim, const size_t *shape, const void *data);

/* fp8kv_manifest_add_table: unless rc is already an error (then rc), writes set/group/name as a
 * .npy of rows (cols 0: one dimension) or rows x cols elements and records it in set, profile
 * NULL. 0 or FP8KV_ERR. */
int fp8kv_manifest_add_table(int rc, struct fp8kv_manifest *m, const char *set, const char *group,
                             const char *name, const char *description, enum fp8kv_npy_dtype dtype,
                             size_t rows, size_t cols, const void *data);

/* fp8kv_manifest_add_text: writes dir/path (atomically) with len bytes of text and records it. */
int fp8kv_manifest_add_text(struct fp8kv_manifest *m, const char *profile, const char *set,
                            const char *path, const char *description, const char *text,
                            size_t len);

/* fp8kv_manifest_finish: hashes every recorded file and writes MANIFEST.json and SHA256SUMS. */
int fp8kv_manifest_finish(struct fp8kv_manifest *m, const char *generator_version);

/* fp8kv_manifest_free: releases the records (not the files). */
void fp8kv_manifest_free(struct fp8kv_manifest *m);

#endif
