/* fuzz_util.h — what the libFuzzer harnesses of conformance/fuzz/ share.
 *
 * The readers under test take paths (they refuse anything but regular files), so a harness
 * writes each input into a private scratch directory and points the reader at it. A harness
 * checks more than "no crash": where a reader accepts an input, an independent check of what
 * it accepted runs (a wrong verdict is a finding, as a crash is) and fuzz_fail aborts so
 * libFuzzer records the input.
 */
#ifndef FP8KV_FUZZ_UTIL_H
#define FP8KV_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* fuzz_dir: this process's scratch directory (made once, removed at exit). */
const char *fuzz_dir(void);

/* fuzz_path: "<fuzz_dir>/<name>" in a static buffer (one per call site is enough: copy it). */
const char *fuzz_path(const char *name);

/* fuzz_write: creates or replaces <fuzz_dir>/<name> (making parent directories) with n bytes. */
void fuzz_write(const char *name, const void *data, size_t n);

/* fuzz_read: the whole file at path, malloc'd; *n receives its length (fails the run if it cannot
 * be read). */
char *fuzz_read(const char *path, size_t *n);

/* fuzz_copy: copies the file at from to <fuzz_dir>/<name>. */
void fuzz_copy(const char *from, const char *name);

/* fuzz_fail: prints the broken property and aborts (libFuzzer saves the input). */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
