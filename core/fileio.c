/* fileio.c — directories and atomic file writes of fp8kv/fileio.h. */
#define _GNU_SOURCE /* renameat2 */
#include "fp8kv/fileio.h"

#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fp8kv/diag.h"

FILE *fp8kv_fopen_regular(const char *path, long long *size)
{
    if (path == NULL) {
        fp8kv_fail("no path given");
        return NULL;
    }
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fp8kv_fail("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fp8kv_fail("%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        fp8kv_fail("%s: not a regular file (a FIFO, device, socket or directory is never read)",
                   path);
        close(fd);
        return NULL;
    }
    const int flags = fcntl(fd, F_GETFL);
    FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        fp8kv_fail("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (size != NULL)
        *size = (long long)st.st_size;
    return f;
}

char *fp8kv_read_regular(const char *path, size_t max_bytes, size_t *len)
{
    long long size = 0;
    FILE *f = fp8kv_fopen_regular(path, &size);
    if (f == NULL)
        return NULL;
    if (size < 0 || (unsigned long long)size > max_bytes) {
        fclose(f);
        fp8kv_fail("%s: %lld bytes, more than the %zu a file of its kind may have", path, size,
                   max_bytes);
        return NULL;
    }
    char *buf = malloc((size_t)size + 1);
    /* one byte more than the size: a file that grew since fstat is refused, not truncated */
    const size_t got = buf ? fread(buf, 1, (size_t)size + 1, f) : 0;
    const int bad = ferror(f);
    fclose(f);
    if (buf == NULL || bad || got != (size_t)size) {
        free(buf);
        fp8kv_fail("%s: %s", path,
                   buf == NULL ? "out of memory"
                   : bad       ? "read error"
                               : "changed while it was read");
        return NULL;
    }
    buf[got] = '\0';
    if (len != NULL)
        *len = got;
    return buf;
}

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

/* Flushes the directory holding path to disk (best effort: a rename is durable only then). */
static void sync_parent(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    char *slash = strrchr(copy, '/');
    const char *parent = slash == NULL ? "." : slash == copy ? "/" : (*slash = '\0', copy);
    const int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(copy);
}

int fp8kv_write_file_atomic(const char *path, const void *data, size_t len)
{
    /* a unique temporary name beside path: concurrent writers never touch each other's */
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    if (!tmp)
        return fp8kv_fail("out of memory");
    snprintf(tmp, n, "%s.XXXXXX", path);
    const int fd = mkstemp(tmp);
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    int ok = fp && fwrite(data, 1, len, fp) == len && fflush(fp) == 0 && fsync(fd) == 0;
    int e = errno;
    if (fp)
        ok = fclose(fp) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (ok)
        (void)chmod(tmp, 0644); /* mkstemp's 0600 is for secrets; these are reports and vectors */
    if (!ok || rename(tmp, path) != 0) {
        e = ok ? errno : e;
        if (fd >= 0)
            remove(tmp);
        free(tmp);
        return fp8kv_fail("%s: cannot write: %s", path, strerror(e));
    }
    free(tmp);
    sync_parent(path);
    return FP8KV_OK;
}

int fp8kv_replace_dir(const char *staged, const char *final)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        /* swap with the directory in place: readers see the old set or the new one, whole */
        if (renameat2(AT_FDCWD, staged, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
            sync_parent(final);
            return fp8kv_remove_tree(staged); /* staged now holds the old set */
        }
        if (errno != ENOENT)
            return fp8kv_fail("%s: cannot put the new files in place: %s", final, strerror(errno));
        /* nothing there yet: move in, unless another writer did so meanwhile (then swap) */
        if (renameat2(AT_FDCWD, staged, AT_FDCWD, final, RENAME_NOREPLACE) == 0) {
            sync_parent(final);
            return FP8KV_OK;
        }
        if (errno != EEXIST && errno != ENOTEMPTY)
            return fp8kv_fail("%s: cannot put the new files in place: %s", final, strerror(errno));
    }
    return fp8kv_fail("%s: other writers kept replacing it", final);
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
