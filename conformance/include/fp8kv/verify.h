/* fp8kv/verify.h — checking a golden vector directory without MPFR.
 *
 * The directory holds MANIFEST.json (schema in vectors/README.md), SHA256SUMS and the files
 * they list. Verification needs only jansson and libcrypto, so it runs on machines that
 * cannot run the oracle.
 */
#ifndef FP8KV_VERIFY_H
#define FP8KV_VERIFY_H

#include <stddef.h>
#include <stdio.h>

#include "fp8kv/digest.h"
#include "fp8kv/npy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_MANIFEST_SCHEMA_VERSION 1

/* fp8kv_verify_vectors: checks that MANIFEST.json parses and has the expected schema; that
 * every file it lists exists with the listed byte count and sha256, and (for .npy files) a
 * header whose dtype and shape match the manifest; and that SHA256SUMS lists exactly those
 * files plus MANIFEST.json with matching digests. One line per problem goes to log (if not
 * NULL); *files_checked (if not NULL) receives the number of files checked. Each file is read
 * once: its digest and its header are those of the same bytes. Returns 0 when all is well, or
 * FP8KV_ERR with a message naming the first file at fault. Remembers nothing (fp8kv_vectors_trust
 * does). */
int fp8kv_verify_vectors(const char *dir, FILE *log, int *files_checked);

/* The largest golden file read whole, by verification or by a checked read (the vector files
 * are under 1 MiB each): a file past this is refused, never read. */
#define FP8KV_VECTOR_FILE_MAX_BYTES (256u << 20)

/* fp8kv_vectors_trust: the gate every judging entry point passes before it reads a vector. The
 * first time a directory is asked about in this process it is verified with
 * fp8kv_verify_vectors (quietly), which reads every file once and hashes those very bytes; a
 * success keeps, in memory, the SHA-256 of every file of the set, and later calls return at
 * once. Every read of a golden file after that goes through fp8kv_vectors_read, which compares
 * the bytes it read with the digest kept: truth that changes after verification is refused,
 * never judged. A directory whose verification failed, or in which a read found a changed
 * file, is refused (every read fails) until a verification passes again, which this function
 * tries each time it is asked about such a directory. 0, or FP8KV_ERR with a message naming
 * the first file at fault. */
int fp8kv_vectors_trust(const char *dir);

/* fp8kv_vectors_trust_again: fp8kv_vectors_trust, verifying dir in full even when it passed
 * before in this process (the digests kept are then replaced; a failure refuses the
 * directory): a second verification of a directory altered since the first fails. */
int fp8kv_vectors_trust_again(const char *dir);

/* fp8kv_vectors_trusted: 1 when dir passed fp8kv_vectors_trust in this process and has not
 * been refused since, else 0. */
int fp8kv_vectors_trusted(const char *dir);

/* fp8kv_vectors_read: the whole golden file dir/rel (rel as MANIFEST.json lists it:
 * "<profile>/kv/case0_meta.npy") in a malloc'd buffer (NUL-terminated), *len its length. When
 * dir passed fp8kv_vectors_trust, the bytes read are hashed and must be those verified: a file
 * that is no file of the verified set, is gone or unreadable, or whose digest differs is
 * refused as altered truth (the directory is then refused: nothing more is judged against it)
 * with a message naming it. A directory never trusted in this process is read as it is: the
 * lower-level loaders leave verifying to their callers. NULL with a message naming the file.
 * Parse what is judged from the returned bytes, never from the file again. */
void *fp8kv_vectors_read(const char *dir, const char *rel, size_t *len);

/* fp8kv_vectors_read_npy: fp8kv_vectors_read, then fp8kv_npy_parse_expect of those very bytes
 * (the dtype and ndim, and shape[0] when want_len is not 0), naming dir/rel. 0 or FP8KV_ERR
 * (out freed). */
int fp8kv_vectors_read_npy(const char *dir, const char *rel, enum fp8kv_npy_dtype dtype, int ndim,
                           size_t want_len, struct fp8kv_npy *out);

/* fp8kv_vectors_digest: the SHA-256 (lowercase hex) of dir/rel as it was verified, kept since
 * dir passed fp8kv_vectors_trust: 0, or FP8KV_ERR when dir is not trusted (or refused) or rel
 * is none of its files. */
int fp8kv_vectors_digest(const char *dir, const char *rel, char hex[FP8KV_SHA256_HEX_LEN + 1]);

/* fp8kv_vectors_has: whether the optional golden file dir/rel is part of the truth: 1 when it
 * is a file of the verified set (dir trusted) or, dir never trusted, when it is there; 0 when
 * it is not; FP8KV_ERR when dir is refused, or trusted and a file that is none of its set is
 * there (truth nobody verified, never judged against). */
int fp8kv_vectors_has(const char *dir, const char *rel);

#ifdef __cplusplus
}
#endif
#endif
