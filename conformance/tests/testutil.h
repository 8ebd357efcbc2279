/* testutil.h — file, process and failure-line helpers the Criterion suites share; each
 * asserts on failure. */
#ifndef FP8KV_TESTUTIL_H
#define FP8KV_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* test_write_bytes: creates path with the n bytes at p. */
void test_write_bytes(const char *path, const void *p, size_t n);

/* test_read_bytes: the whole file at path, malloc'd; *n receives its length. */
unsigned char *test_read_bytes(const char *path, size_t *n);

/* test_alive: whether process pid exists and is neither a zombie nor dead. */
int test_alive(int pid);

/* test_run: runs a shell command line; its exit status (-1 if it did not exit) and its stdout
 * (first size - 1 bytes) in out. */
int test_run(const char *cmdline, char *out, size_t size);

/* test_range_count: the inputs a failure line stands for: the count of its range
 * ("(a..b, 1,023 inputs)"), or 1 for a line of one input. */
uint64_t test_range_count(const char *line);

#endif
