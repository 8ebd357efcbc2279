/* fileio.c — directories and atomic file writes of fp8kv/fileio.h. */
#define _XOPEN_SOURCE 700
#include "fp8kv/fileio.h"

#include <ftw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fp8kv/diag.h"

int fp8kv_make_dirs(const char *path)
{
    if (!path[0])
        return fp8kv_fail("an empty directory name");
    char *copy = strdup(path);
    if (!copy)
        return fp8kv_fail("out of memory");
    for (char *p = copy + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                free(copy);
                return fp8kv_fail("%s: cannot create directory: %s", path, strerror(e));
            }
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    free(copy);
    return FP8KV_OK;
}

int fp8kv_write_file_atomic(const char *path, const void *data, size_t len)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp)
        return fp8kv_fail("out of memory");
    snprintf(tmp, n, "%s.tmp", path);
    FILE *fp = fopen(tmp, "wb");
    int ok = fp && fwrite(data, 1, len, fp) == len;
    ok = fp && fclose(fp) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        free(tmp);
        return fp8kv_fail("%s: cannot write: %s", path, strerror(e));
    }
    free(tmp);
    return FP8KV_OK;
}

char *fp8kv_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), n = la + strlen(b) + 2;
    const char *slash = la == 0 || a[la - 1] == '/' ? "" : "/";
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, slash, b);
    return s;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) != 0)
        return fp8kv_fail("%s: cannot remove: %s", path, strerror(errno));
    return 0;
}

int fp8kv_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? FP8KV_OK : fp8kv_fail("%s: %s", path, strerror(errno));
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? FP8KV_OK : FP8KV_ERR;
}
