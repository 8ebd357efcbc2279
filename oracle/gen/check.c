/* check.c — `fp8kv gen --check`: regenerate into a temporary directory and compare. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/gen.h"

/* The relative paths of the regular files under a root, collected by nftw. */
static struct {
    size_t root_len;
    char **paths;
    size_t n, cap;
} walk;

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    if (walk.n == walk.cap) {
        size_t cap = walk.cap ? 2 * walk.cap : 128;
        char **p = realloc(walk.paths, cap * sizeof *p);
        if (!p)
            return -1;
        walk.paths = p;
        walk.cap = cap;
    }
    walk.paths[walk.n] = strdup(path + walk.root_len + 1);
    return walk.paths[walk.n++] ? 0 : -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* list_files: the sorted relative paths of the files under root (caller frees). */
static char **list_files(const char *root, size_t *n)
{
    memset(&walk, 0, sizeof walk);
    walk.root_len = strlen(root);
    if (nftw(root, collect, 16, FTW_PHYS) != 0) {
        for (size_t i = 0; i < walk.n; i++)
            free(walk.paths[i]);
        free(walk.paths);
        *n = 0;
        return NULL;
    }
    qsort(walk.paths, walk.n, sizeof *walk.paths, cmp_str);
    *n = walk.n;
    return walk.paths;
}

static void free_list(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

/* 0 when the two files hold the same bytes. */
static int files_differ(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int differ = !fa || !fb;
    while (!differ) {
        int ca = getc(fa), cb = getc(fb);
        differ = ca != cb;
        if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return differ;
}

int fp8kv_generate_check(const char *dir, FILE *log)
{
    struct stat st; /* the arguments first: no ten-second regeneration for a wrong path */
    if (stat(dir, &st) != 0)
        return fp8kv_fail("%s: cannot check it: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return fp8kv_fail("%s: not a directory of vectors", dir);
    const char *tmp_root = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char fresh[4096];
    snprintf(fresh, sizeof fresh, "%s/fp8kv-gen-check-XXXXXX", tmp_root);
    if (!mkdtemp(fresh))
        return fp8kv_fail("%s: cannot create a temporary directory", fresh);
    int rc = fp8kv_generate(fresh, NULL);
    if (rc != 0) {
        fp8kv_remove_tree(fresh);
        return rc;
    }
    size_t n_new = 0, n_old = 0;
    char **new_files = list_files(fresh, &n_new);
    char **old_files = list_files(dir, &n_old);
    if (!old_files)
        rc = fp8kv_fail("%s: cannot read the vector directory", dir);
    int differences = 0;
    char first[4200] = "";
    size_t i = 0, j = 0;
    while (rc == 0 && (i < n_new || j < n_old)) {
        int c = i == n_new ? 1 : j == n_old ? -1 : strcmp(new_files[i], old_files[j]);
        const char *problem = NULL, *name = NULL;
        if (c < 0) {
            problem = "missing (the generator writes it)";
            name = new_files[i++];
        } else if (c > 0) {
            name = old_files[j++];
            if (strcmp(name, "README.md") != 0) /* the hand-written guide to the files */
                problem = "not written by the generator";
        } else {
            char a[4200], b[4200];
            snprintf(a, sizeof a, "%s/%s", fresh, new_files[i]);
            snprintf(b, sizeof b, "%s/%s", dir, old_files[j]);
            if (files_differ(a, b)) {
                problem = "differs from a fresh generation";
                name = new_files[i];
            }
            i++;
            j++;
        }
        if (problem) {
            if (log)
                fprintf(log, "gen --check: %s/%s: %s\n", dir, name, problem);
            if (!differences++)
                snprintf(first, sizeof first, "%s/%s: %s", dir, name, problem);
        }
    }
    free_list(new_files, n_new);
    free_list(old_files, n_old);
    fp8kv_remove_tree(fresh);
    if (rc != 0)
        return rc;
    if (differences) {
        fp8kv_fail("%s (%d file(s) differ)", first, differences);
        return 1;
    }
    if (log)
        fprintf(log, "gen --check: %s: %zu files identical to a fresh generation\n", dir, n_new);
    return 0;
}
