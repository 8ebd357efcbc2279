/* fuzz_manifest.c — the vector-set verifier (conformance/verify.c) on arbitrary MANIFEST.json
 * and SHA256SUMS files, beside three real vector files.
 *
 * Input: one mode byte, the manifest, the line "===SUMS===", the checksums. Mode bit 0 writes
 * the manifest's true digest into the checksums (so accepting paths are reachable). Property:
 * when the set verifies, an independent reading agrees — every line of SHA256SUMS names a
 * file inside the directory whose SHA-256 (OpenSSL's EVP, not fp8kv's digest code) is the one
 * listed, MANIFEST.json among them, and every file of the manifest is listed.
 */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/verify.h"
#include "fuzz_util.h"

#ifndef FP8KV_SOURCE_DIR
#define FP8KV_SOURCE_DIR "."
#endif

static const char *const fixed_files[] = {"e4m3fn_satfinite/decode.npy",
                                          "e4m3fn_satfinite/edges.txt",
                                          "e4m3fn_satfinite/kv/case0_meta.npy"};
static const char separator[] = "\n===SUMS===\n";

static void setup(void)
{
    static int done;
    if (done++)
        return;
    for (size_t i = 0; i < sizeof fixed_files / sizeof fixed_files[0]; i++) {
        char from[1024];
        snprintf(from, sizeof from, "%s/vectors/%s", FP8KV_SOURCE_DIR, fixed_files[i]);
        fuzz_copy(from, fixed_files[i]);
    }
}

/* sha256_hex: the digest of the file at path with OpenSSL's EVP interface; 0, or -1. */
static int sha256_hex(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    unsigned char buf[65536], md[32];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        EVP_DigestUpdate(ctx, buf, n);
    fclose(f);
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* sums_with_true_manifest: sums without MANIFEST.json lines, plus its true line. */
static char *sums_with_true_manifest(const char *sums, size_t n, size_t *out_n)
{
    char hex[65];
    if (sha256_hex(fuzz_path("MANIFEST.json"), hex) != 0)
        fuzz_fail("cannot hash the manifest just written");
    char *out = malloc(n + 100);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(sums + i, '\n', n - i);
        const size_t len = nl ? (size_t)(nl - (sums + i)) + 1 : n - i;
        if (!(len >= 80 && memcmp(sums + i + 64, "  MANIFEST.json", 15) == 0)) {
            memcpy(out + o, sums + i, len);
            o += len;
        }
        i += len;
    }
    o += (size_t)sprintf(out + o, "%s  MANIFEST.json\n", hex);
    *out_n = o;
    return out;
}

/* check_accepted: the independent reading of an accepted set. */
static void check_accepted(const char *sums, size_t n)
{
    int saw_manifest = 0;
    json_t *listed = json_object();
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(sums + i, '\n', n - i);
        if (!nl)
            fuzz_fail("accepted a SHA256SUMS whose last line has no newline");
        const size_t len = (size_t)(nl - (sums + i));
        if (len < 67 || sums[i + 64] != ' ' || sums[i + 65] != ' ')
            fuzz_fail("accepted a malformed SHA256SUMS line");
        char path[512], want[65], have[65];
        if (len - 66 >= sizeof path)
            fuzz_fail("accepted an overlong path");
        memcpy(want, sums + i, 64);
        want[64] = '\0';
        memcpy(path, sums + i + 66, len - 66);
        path[len - 66] = '\0';
        if (path[0] == '/' || strstr(path, "..") || strlen(path) != len - 66)
            fuzz_fail("accepted a path outside the directory: %s", path);
        char full[1024];
        snprintf(full, sizeof full, "%s/%s", fuzz_dir(), path);
        if (sha256_hex(full, have) != 0 || strcmp(have, want) != 0)
            fuzz_fail("accepted %s with a digest that is not its own", path);
        saw_manifest |= strcmp(path, "MANIFEST.json") == 0;
        json_object_set_new(listed, path, json_true());
        i += len + 1;
    }
    if (!saw_manifest)
        fuzz_fail("accepted a SHA256SUMS without MANIFEST.json");
    json_t *root = json_load_file(fuzz_path("MANIFEST.json"), 0, NULL);
    json_t *files = json_object_get(root, "files"), *entry;
    size_t k;
    json_array_foreach(files, k, entry)
    {
        const char *p = json_string_value(json_object_get(entry, "path"));
        if (!p || !json_object_get(listed, p))
            fuzz_fail("accepted a manifest entry missing from SHA256SUMS");
    }
    json_decref(root);
    json_decref(listed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1)
        return 0;
    const int fix_manifest_digest = data[0] & 1;
    const char *text = (const char *)data + 1;
    const size_t n = size - 1;
    const char *sep = memmem(text, n, separator, sizeof separator - 1);
    const size_t manifest_n = sep ? (size_t)(sep - text) : n;
    const char *sums = sep ? sep + sizeof separator - 1 : "";
    size_t sums_n = sep ? n - manifest_n - (sizeof separator - 1) : 0;
    fuzz_write("MANIFEST.json", text, manifest_n);
    char *fixed = NULL;
    if (fix_manifest_digest)
        sums = fixed = sums_with_true_manifest(sums, sums_n, &sums_n);
    fuzz_write("SHA256SUMS", sums, sums_n);
    int files = 0;
    if (fp8kv_verify_vectors(fuzz_dir(), NULL, &files) == 0)
        check_accepted(sums, sums_n);
    free(fixed);
    return 0;
}
