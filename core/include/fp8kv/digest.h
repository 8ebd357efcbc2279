/* fp8kv/digest.h — SHA-256 of files and buffers (OpenSSL EVP), as lowercase hex. */
#ifndef FP8KV_DIGEST_H
#define FP8KV_DIGEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_SHA256_HEX_LEN 64

/* fp8kv_sha256_buffer: hex digest of n bytes at p into hex[65]. Returns 0 or FP8KV_ERR. */
int fp8kv_sha256_buffer(const void *p, size_t n, char hex[FP8KV_SHA256_HEX_LEN + 1]);

/* fp8kv_sha256_file: hex digest of the file at path into hex[65]; *size_out (if not NULL)
 * receives its length in bytes. Returns 0 or FP8KV_ERR naming path. */
int fp8kv_sha256_file(const char *path, char hex[FP8KV_SHA256_HEX_LEN + 1], long long *size_out);

#ifdef __cplusplus
}
#endif
#endif
