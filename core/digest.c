/* digest.c — SHA-256 of buffers and files through OpenSSL's EVP interface (fp8kv/digest.h). */
#include "fp8kv/digest.h"

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* Files are hashed in pieces so a large vector never has to fit in memory. */
#define CHUNK (1u << 16)

static void to_hex(const unsigned char *md, unsigned n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 0xF];
    }
    hex[2 * n] = '\0';
}

/* finish: final digest of ctx into hex; frees ctx. what names the input in a message. */
static int finish(EVP_MD_CTX *ctx, char hex[FP8KV_SHA256_HEX_LEN + 1], const char *what)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    int ok = EVP_DigestFinal_ex(ctx, md, &n) == 1 && n * 2 == FP8KV_SHA256_HEX_LEN;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return fp8kv_fail("%s: SHA-256 finalization failed", what);
    to_hex(md, n, hex);
    return 0;
}

int fp8kv_sha256_buffer(const void *p, size_t n, char hex[FP8KV_SHA256_HEX_LEN + 1])
{
    if (p == NULL && n != 0)
        return fp8kv_fail("sha256: no buffer given for %zu bytes", n);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL)
        return fp8kv_fail("sha256: cannot allocate a digest context");
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        (n != 0 && EVP_DigestUpdate(ctx, p, n) != 1)) {
        EVP_MD_CTX_free(ctx);
        return fp8kv_fail("sha256: digest of a %zu-byte buffer failed", n);
    }
    return finish(ctx, hex, "sha256 of a buffer");
}

int fp8kv_sha256_file(const char *path, char hex[FP8KV_SHA256_HEX_LEN + 1], long long *size_out)
{
    if (path == NULL)
        return fp8kv_fail("sha256: no path given");
    FILE *f = fp8kv_fopen_regular(path, NULL);
    if (f == NULL)
        return FP8KV_ERR;
    unsigned char *buf = malloc(CHUNK);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (buf == NULL || ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        free(buf);
        EVP_MD_CTX_free(ctx);
        fclose(f);
        return fp8kv_fail("%s: cannot set up a SHA-256 digest", path);
    }
    long long total = 0;
    int ok = 1;
    for (;;) {
        size_t got = fread(buf, 1, CHUNK, f);
        if (got != 0 && EVP_DigestUpdate(ctx, buf, got) != 1)
            ok = 0;
        total += (long long)got;
        if (got < CHUNK || !ok)
            break;
    }
    /* A short read is either the end or an error (a directory reads as EISDIR). */
    int read_error = ferror(f);
    int e = errno;
    fclose(f);
    free(buf);
    if (read_error || !ok) {
        EVP_MD_CTX_free(ctx);
        return fp8kv_fail("%s: read failed: %s", path, read_error ? strerror(e) : "digest update");
    }
    if (finish(ctx, hex, path) != 0)
        return FP8KV_ERR;
    if (size_out != NULL)
        *size_out = total;
    return 0;
}
