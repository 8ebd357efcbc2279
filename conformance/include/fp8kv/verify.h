/* fp8kv/verify.h — checking a golden vector directory without MPFR.
 *
 * The directory holds MANIFEST.json (schema in vectors/README.md), SHA256SUMS and the files
 * they list. Verification needs only jansson and libcrypto, so it runs on machines that
 * cannot run the oracle.
 */
#ifndef FP8KV_VERIFY_H
#define FP8KV_VERIFY_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_MANIFEST_SCHEMA_VERSION 1

/* fp8kv_verify_vectors: checks that MANIFEST.json parses and has the expected schema; that
 * every file it lists exists with the listed byte count and sha256, and (for .npy files) a
 * header whose dtype and shape match the manifest; and that SHA256SUMS lists exactly those
 * files plus MANIFEST.json with matching digests. One line per problem goes to log (if not
 * NULL); *files_checked (if not NULL) receives the number of files checked. Returns 0 when
 * all is well, or FP8KV_ERR with a message naming the first file at fault. */
int fp8kv_verify_vectors(const char *dir, FILE *log, int *files_checked);

/* fp8kv_vectors_trust: the gate every judging entry point passes before it reads a vector:
 * verifies dir with fp8kv_verify_vectors (quietly) the first time it is asked about it in this
 * process and remembers a success, so tampered, truncated or inconsistent truth is refused
 * before any verdict. 0, or FP8KV_ERR with a message naming the first file at fault. */
int fp8kv_vectors_trust(const char *dir);

/* fp8kv_vectors_trusted: 1 when dir passed fp8kv_vectors_trust in this process, else 0. */
int fp8kv_vectors_trusted(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
