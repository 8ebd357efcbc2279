/* fp8kv/fileio.h — creating directories and writing files atomically. */
#ifndef FP8KV_FILEIO_H
#define FP8KV_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fp8kv_fopen_regular: opens path for reading ("rb") only if it is a regular file (or a
 * symbolic link to one): a FIFO, a device, a socket or a directory is refused before anything
 * is read from it, and opening never blocks (O_NONBLOCK, cleared once the file is known to be
 * regular). *size (if not NULL) receives its length. NULL with a message naming path. */
FILE *fp8kv_fopen_regular(const char *path, long long *size);

/* fp8kv_read_regular: the whole regular file at path in a malloc'd buffer with a terminating
 * NUL, refused when it is not a regular file or holds more than max_bytes; *len (if not NULL)
 * receives its length. NULL with a message naming path. */
char *fp8kv_read_regular(const char *path, size_t max_bytes, size_t *len);

/* fp8kv_make_dirs: creates path and its missing parents (mkdir -p). 0 or FP8KV_ERR. */
int fp8kv_make_dirs(const char *path);

/* fp8kv_write_file_atomic: writes len bytes to path through a unique temporary file beside it,
 * flushed to disk, and a rename, so a reader never sees a half-written file and concurrent
 * writers never fail each other (the last rename wins). 0 or FP8KV_ERR naming path. */
int fp8kv_write_file_atomic(const char *path, const void *data, size_t len);

/* fp8kv_replace_dir: puts the directory staged (on the same file system) in place of final in
 * one atomic step (a rename, or an exchange with the directory already there, whose old
 * contents are then removed), so a reader sees either the old set of files or the new one,
 * never a mix. 0 or FP8KV_ERR naming final; staged is left for the caller on an error. */
int fp8kv_replace_dir(const char *staged, const char *final);

/* fp8kv_path_join: "a/b" in a malloc'd string (no doubled '/', and just b when a is empty);
 * NULL when out of memory. */
char *fp8kv_path_join(const char *a, const char *b);

/* fp8kv_remove_tree: removes path and everything below it, following no symbolic links
 * (rm -rf). A missing path is not an error. 0 or FP8KV_ERR naming what could not go. */
int fp8kv_remove_tree(const char *path);

#ifdef __cplusplus
}
#endif
#endif
