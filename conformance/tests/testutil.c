/* testutil.c — the shared helpers of testutil.h. */
#include "testutil.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void test_write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

unsigned char *test_read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    cr_assert_geq(len, 0);
    rewind(f);
    unsigned char *p = malloc((size_t)len + 1);
    cr_assert_not_null(p);
    cr_assert_eq(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

int test_run(const char *cmdline, char *out, size_t size)
{
    FILE *p = popen(cmdline, "r");
    cr_assert_not_null(p, "cannot run %s", cmdline);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) /* the rest, unread, must not block the child */
        ;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

uint64_t test_range_count(const char *line)
{
    const char *p = strstr(line, " inputs)");
    if (!p)
        return 1;
    while (p > line && (p[-1] == ',' || (p[-1] >= '0' && p[-1] <= '9')))
        p--;
    uint64_t n = 0;
    for (; *p != ' '; p++)
        if (*p != ',')
            n = n * 10 + (uint64_t)(*p - '0');
    return n;
}

int test_alive(int pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    const int got = fgets(stat, sizeof stat, f) != NULL;
    fclose(f);
    const char *end = strrchr(stat, ')'); /* "pid (comm) S ...": the state follows the name */
    return got && end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
}
