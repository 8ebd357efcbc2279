/* fp8kv/fileio.h — creating directories and writing files atomically. */
#ifndef FP8KV_FILEIO_H
#define FP8KV_FILEIO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fp8kv_make_dirs: creates path and its missing parents (mkdir -p). 0 or FP8KV_ERR. */
int fp8kv_make_dirs(const char *path);

/* fp8kv_write_file_atomic: writes len bytes to path through path.tmp and a rename, so a reader
 * never sees a half-written file. 0 or FP8KV_ERR naming path. */
int fp8kv_write_file_atomic(const char *path, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
