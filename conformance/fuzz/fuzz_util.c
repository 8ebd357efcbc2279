/* fuzz_util.c — fuzz_util.h. */
#include "fuzz_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void remove_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

const char *fuzz_dir(void)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fp8kv-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            fuzz_fail("cannot make a scratch directory: %s", strerror(errno));
        atexit(remove_dir);
    }
    return dir;
}

const char *fuzz_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    return path;
}

void fuzz_write(const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s", fuzz_path(name));
    for (char *slash = strchr(path + strlen(fuzz_dir()) + 1, '/'); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            fuzz_fail("mkdir %s: %s", path, strerror(errno));
        *slash = '/';
    }
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0)
        fuzz_fail("cannot write %s", path);
}

char *fuzz_read(const char *path, size_t *n_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fuzz_fail("cannot read %s (run from the repository root or set FP8KV_SOURCE_DIR)", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536)))
            fuzz_fail("out of memory");
        const size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    *n_out = n;
    return buf;
}

void fuzz_copy(const char *from, const char *name)
{
    size_t n;
    char *buf = fuzz_read(from, &n);
    fuzz_write(name, buf, n);
    free(buf);
}

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: property broken: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}
