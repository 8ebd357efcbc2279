/* t_verify.c — fp8kv_verify_vectors on a small vector directory built here: it passes when
 * intact, and each kind of damage fails with an error naming the file at fault. Each test
 * builds its own directory under /tmp. */
#include <criterion/criterion.h>

#include "fp8kv/diag.h"
#include "testutil.h"
#include "fp8kv/digest.h"
#include "fp8kv/fileio.h"
#include "fp8kv/npy.h"
#include "fp8kv/verify.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#define INPUT "e4m3fn_satfinite/edges_input.npy"
#define EXPECTED "e4m3fn_satfinite/edges_expected.npy"
#define README "README.txt"

static char tmp_dir[64];
static char vec_dir[96]; /* tmp_dir/vectors: the parent stays outside the checked tree */

/* The files of the fixture, in manifest order. */
static const char *const listed[] = {INPUT, EXPECTED, README};
#define N_LISTED (sizeof listed / sizeof listed[0])

/* in_vec: vec_dir/rel in one of two static buffers (so two may be live at once). */
static const char *in_vec(const char *rel)
{
    static char bufs[2][256];
    static int which;
    char *buf = bufs[which ^= 1];
    int n = snprintf(buf, sizeof bufs[0], "%s/%s", vec_dir, rel);
    cr_assert(n > 0 && (size_t)n < sizeof bufs[0]);
    return buf;
}

/* entry: one manifest entry describing the file at rel as it is now. */
static json_t *entry(const char *rel, const char *profile, const char *set, json_t *shape,
                     const char *dtype)
{
    char hex[FP8KV_SHA256_HEX_LEN + 1];
    long long size = -1;
    cr_assert_eq(fp8kv_sha256_file(in_vec(rel), hex, &size), 0, "%s", fp8kv_last_error());
    json_t *e = json_pack("{s:s, s:s?, s:s, s:s, s:s?, s:o?, s:I, s:s}", "path", rel, "profile",
                          profile, "set", set, "description", "a test file", "dtype", dtype,
                          "shape", shape, "bytes", (json_int_t)size, "sha256", hex);
    cr_assert_not_null(e);
    return e;
}

/* build_manifest: the manifest of the fixture's files as they are now. */
static json_t *build_manifest(void)
{
    json_t *files = json_array();
    json_array_append_new(files,
                          entry(INPUT, "e4m3fn_satfinite", "edges", json_pack("[i]", 16), "<u4"));
    json_array_append_new(
        files, entry(EXPECTED, "e4m3fn_satfinite", "edges", json_pack("[i,i]", 4, 4), "|u1"));
    json_array_append_new(files, entry(README, NULL, "docs", NULL, NULL));
    json_t *m =
        json_pack("{s:i, s:s, s:s, s:s, s:s, s:[s], s:[], s:{s:{s:s, s:s, s:s}}, s:o}",
                  "schema_version", FP8KV_MANIFEST_SCHEMA_VERSION, "generator", "fp8kv",
                  "generator_version", "0.1.0", "mpfr_version", "4.2.0", "gmp_version", "6.2.1",
                  "classes", "edges", "models", "profiles", "e4m3fn_satfinite", "format", "e4m3fn",
                  "overflow", "satfinite", "inf", "clamp", "files", files);
    cr_assert_not_null(m);
    return m;
}

static void write_manifest(json_t *m)
{
    cr_assert_eq(json_dump_file(m, in_vec("MANIFEST.json"), JSON_SORT_KEYS | JSON_INDENT(2)), 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* write_sums: SHA256SUMS as sha256sum writes it, over the fixture's files and MANIFEST.json
 * as they are now, sorted by path. */
static void write_sums(void)
{
    const char *paths[N_LISTED + 1];
    for (size_t i = 0; i < N_LISTED; i++)
        paths[i] = listed[i];
    paths[N_LISTED] = "MANIFEST.json";
    qsort(paths, N_LISTED + 1, sizeof paths[0], cmp_str);
    FILE *f = fopen(in_vec("SHA256SUMS"), "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i <= N_LISTED; i++) {
        char hex[FP8KV_SHA256_HEX_LEN + 1];
        cr_assert_eq(fp8kv_sha256_file(in_vec(paths[i]), hex, NULL), 0, "%s", fp8kv_last_error());
        fprintf(f, "%s  %s\n", hex, paths[i]);
    }
    cr_assert_eq(fclose(f), 0);
}

static void setup(void)
{
    strcpy(tmp_dir, "/tmp/fp8kv-t_verify-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir), "mkdtemp failed");
    snprintf(vec_dir, sizeof vec_dir, "%s/vectors", tmp_dir);
    cr_assert_eq(mkdir(vec_dir, 0755), 0);
    cr_assert_eq(mkdir(in_vec("e4m3fn_satfinite"), 0755), 0);

    uint32_t in[16];
    for (int i = 0; i < 16; i++)
        in[i] = 0x3F800000u + (uint32_t)i * 0x1000u;
    const size_t s1[1] = {16};
    cr_assert_eq(fp8kv_npy_write(in_vec(INPUT), FP8KV_NPY_U32, 1, s1, in), 0);
    uint8_t out[16];
    for (int i = 0; i < 16; i++)
        out[i] = (uint8_t)(0x38 + i);
    const size_t s2[2] = {4, 4};
    cr_assert_eq(fp8kv_npy_write(in_vec(EXPECTED), FP8KV_NPY_U8, 2, s2, out), 0);
    const char text[] = "Golden vectors for the t_verify suite.\n";
    test_write_bytes(in_vec(README), text, sizeof text - 1);

    json_t *m = build_manifest();
    write_manifest(m);
    json_decref(m);
    write_sums();
}

static void teardown(void)
{
    fp8kv_remove_tree(tmp_dir);
}

TestSuite(verify, .init = setup, .fini = teardown);

/* ---- helpers for the checks ------------------------------------------------------------- */

/* expect_fail: verification fails, the error names want1 (and want2 when not NULL), and the
 * log has exactly want_lines lines, each a "verify: " line. Returns files_checked. */
static int expect_fail(const char *want1, const char *want2, int want_lines)
{
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    int checked = -1;
    cr_assert_eq(fp8kv_verify_vectors(vec_dir, log, &checked), FP8KV_ERR, "damage not detected");
    const char *msg = fp8kv_last_error();
    cr_assert_not_null(strstr(msg, want1), "error lacks '%s': %s", want1, msg);
    if (want2 != NULL)
        cr_assert_not_null(strstr(msg, want2), "error lacks '%s': %s", want2, msg);
    rewind(log);
    char line[1024];
    int lines = 0;
    while (fgets(line, sizeof line, log) != NULL) {
        cr_assert_eq(strncmp(line, "verify: ", 8), 0, "log line: %s", line);
        lines++;
    }
    fclose(log);
    cr_assert_eq(lines, want_lines, "%d log lines, expected %d (first error: %s)", lines,
                 want_lines, msg);
    return checked;
}

/* set_entry_field: replaces key of the manifest entry for rel, rewriting MANIFEST.json and
 * SHA256SUMS so only the change itself is wrong. */
static void set_entry_field(const char *rel, const char *key, json_t *value)
{
    json_error_t err;
    json_t *m = json_load_file(in_vec("MANIFEST.json"), 0, &err);
    cr_assert_not_null(m, "%s", err.text);
    json_t *files = json_object_get(m, "files");
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(files, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "path")), rel) == 0) {
            cr_assert_eq(json_object_set_new(e, key, value), 0);
            found = 1;
        }
    }
    cr_assert(found, "no entry for %s", rel);
    write_manifest(m);
    json_decref(m);
    write_sums();
}

/* ---- intact ----------------------------------------------------------------------------- */

Test(verify, intact_directory_passes)
{
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    int checked = -1;
    cr_assert_eq(fp8kv_verify_vectors(vec_dir, log, &checked), 0, "%s", fp8kv_last_error());
    /* the three listed files and MANIFEST.json */
    cr_assert_eq(checked, 4);
    cr_assert_eq(ftell(log), 0, "an intact directory logged problems");
    fclose(log);
    /* A trailing slash, no log and no counter work as well. */
    char with_slash[128];
    snprintf(with_slash, sizeof with_slash, "%s/", vec_dir);
    cr_assert_eq(fp8kv_verify_vectors(with_slash, NULL, NULL), 0, "%s", fp8kv_last_error());
}

/* ---- damaged files ---------------------------------------------------------------------- */

Test(verify, missing_listed_file)
{
    cr_assert_eq(unlink(in_vec(EXPECTED)), 0);
    int checked = expect_fail(EXPECTED, "cannot open", 1);
    cr_assert_eq(checked, 4);
}

Test(verify, truncated_npy)
{
    size_t n;
    unsigned char *b = test_read_bytes(in_vec(INPUT), &n);
    test_write_bytes(in_vec(INPUT), b, n - 3);
    free(b);
    /* size, sha256, the .npy header's data length, and the SHA256SUMS digest */
    expect_fail(INPUT, "bytes, manifest says", 4);
    cr_assert_not_null(strstr(fp8kv_last_error(), "4 problems in all"), "%s", fp8kv_last_error());
}

Test(verify, flipped_byte_in_npy_data)
{
    size_t n;
    unsigned char *b = test_read_bytes(in_vec(EXPECTED), &n);
    b[n - 1] ^= 0x01;
    test_write_bytes(in_vec(EXPECTED), b, n);
    free(b);
    /* the manifest's sha256 and SHA256SUMS's both disagree */
    expect_fail(EXPECTED, "sha256", 2);
}

Test(verify, flipped_byte_in_text_file)
{
    size_t n;
    unsigned char *b = test_read_bytes(in_vec(README), &n);
    b[0] ^= 0x20;
    test_write_bytes(in_vec(README), b, n);
    free(b);
    expect_fail(README, "sha256", 2);
}

/* ---- damaged manifest ------------------------------------------------------------------- */

Test(verify, malformed_manifest)
{
    const char bad[] = "{\n  \"schema_version\": 1,\n  \"files\": [\n";
    test_write_bytes(in_vec("MANIFEST.json"), bad, sizeof bad - 1);
    /* The manifest is unusable; SHA256SUMS is still checked and disagrees about it. */
    expect_fail("MANIFEST.json", "line", 2);
    cr_assert_not_null(strstr(fp8kv_last_error(), "cannot parse"), "%s", fp8kv_last_error());
}

Test(verify, missing_manifest)
{
    cr_assert_eq(unlink(in_vec("MANIFEST.json")), 0);
    expect_fail("MANIFEST.json", NULL, 1);
}

Test(verify, wrong_schema_version)
{
    json_error_t err;
    json_t *m = json_load_file(in_vec("MANIFEST.json"), 0, &err);
    cr_assert_not_null(m);
    json_object_set_new(m, "schema_version", json_integer(FP8KV_MANIFEST_SCHEMA_VERSION + 1));
    write_manifest(m);
    json_decref(m);
    write_sums();
    expect_fail("MANIFEST.json", "schema_version 2", 1);
}

Test(verify, shape_does_not_match_npy_header)
{
    set_entry_field(EXPECTED, "shape", json_pack("[i,i]", 4, 5));
    expect_fail(EXPECTED, "header shape [4,4], manifest says [4,5]", 1);
}

Test(verify, dtype_does_not_match_npy_header)
{
    set_entry_field(INPUT, "dtype", json_string("<f4"));
    expect_fail(INPUT, "header dtype '<u4', manifest says '<f4'", 1);
}

Test(verify, byte_count_does_not_match)
{
    set_entry_field(README, "bytes", json_integer(7));
    expect_fail(README, "manifest says 7", 1);
}

Test(verify, path_with_dotdot)
{
    /* The escaping file exists: it must be refused for its path, not for being absent. */
    char outside[128];
    snprintf(outside, sizeof outside, "%s/escape.txt", tmp_dir);
    test_write_bytes(outside, "x", 1);
    set_entry_field(README, "path", json_string("../escape.txt"));
    /* README.txt then also appears in SHA256SUMS without a manifest entry. */
    expect_fail("MANIFEST.json", "'../escape.txt': '..' path component", 2);
}

Test(verify, unsafe_paths)
{
    const char *bad[] = {"/etc/passwd", "e4m3fn_satfinite/../README.txt", "./README.txt",
                         "e4m3fn_satfinite//edges_input.npy", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_entry_field(README, "path", json_string(bad[i]));
        FILE *log = tmpfile();
        cr_assert_eq(fp8kv_verify_vectors(vec_dir, log, NULL), FP8KV_ERR, "accepted '%s'", bad[i]);
        fclose(log);
        cr_assert_not_null(strstr(fp8kv_last_error(), "MANIFEST.json: files[2]"), "%s",
                           fp8kv_last_error());
        /* restore the entry for the next case */
        set_entry_field(bad[i], "path", json_string(README));
    }
}

Test(verify, missing_key_and_wrong_types)
{
    set_entry_field(INPUT, "sha256", json_string("ABC"));
    expect_fail("MANIFEST.json", "'sha256' missing or not 64 lowercase hex digits", 1);
    set_entry_field(INPUT, "sha256", json_null());
    set_entry_field(INPUT, "set", json_integer(3));
    /* sha256 null and set not a string: two problems */
    expect_fail("MANIFEST.json", "files[0] (" INPUT ")", 2);
}

Test(verify, duplicate_entry)
{
    json_error_t err;
    json_t *m = json_load_file(in_vec("MANIFEST.json"), 0, &err);
    cr_assert_not_null(m);
    json_t *files = json_object_get(m, "files");
    json_array_append(files, json_array_get(files, 0));
    write_manifest(m);
    json_decref(m);
    write_sums();
    expect_fail("MANIFEST.json", "lists '" INPUT "' more than once", 1);
}

/* ---- damaged SHA256SUMS ----------------------------------------------------------------- */

Test(verify, missing_sha256sums)
{
    cr_assert_eq(unlink(in_vec("SHA256SUMS")), 0);
    expect_fail("SHA256SUMS", "cannot open", 1);
}

Test(verify, sha256sums_wrong_digest)
{
    size_t n;
    unsigned char *b = test_read_bytes(in_vec("SHA256SUMS"), &n);
    /* Lines are sorted: MANIFEST.json, README.txt, e4m3fn_satfinite/edges_expected.npy, ...;
     * change the first hex digit of the third line. */
    unsigned char *p = b;
    for (int line = 0; line < 2; line++)
        p = (unsigned char *)memchr(p, '\n', n - (size_t)(p - b)) + 1;
    cr_assert_eq(memcmp(p + 66, EXPECTED "\n", strlen(EXPECTED) + 1), 0);
    p[0] = p[0] == '0' ? '1' : '0';
    test_write_bytes(in_vec("SHA256SUMS"), b, n);
    free(b);
    expect_fail("SHA256SUMS", "line 3: digest of '" EXPECTED "'", 1);
}

Test(verify, sha256sums_malformed_lines)
{
    static const struct {
        const char *line, *phrase;
    } cases[] = {
        {"0123  x\n", "malformed"},
        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef README.txt\n",
         "malformed"},
        {"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef  README.txt\n",
         "malformed"},
        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  ../x\n", "'..'"},
        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  zzz", "newline"},
    };
    size_t n;
    unsigned char *good = test_read_bytes(in_vec("SHA256SUMS"), &n);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* append the bad line after the good ones */
        FILE *f = fopen(in_vec("SHA256SUMS"), "wb");
        cr_assert_not_null(f);
        fwrite(good, 1, n, f);
        fputs(cases[i].line, f);
        fclose(f);
        FILE *log = tmpfile();
        cr_assert_eq(fp8kv_verify_vectors(vec_dir, log, NULL), FP8KV_ERR, "accepted %s",
                     cases[i].line);
        fclose(log);
        const char *msg = fp8kv_last_error();
        cr_assert_not_null(strstr(msg, "SHA256SUMS: line 5"), "%s", msg);
        cr_assert_not_null(strstr(msg, cases[i].phrase), "case %zu: %s", i, msg);
    }
    free(good);
}

Test(verify, sha256sums_set_differs)
{
    /* Drop the README line: the file is listed in the manifest but not in SHA256SUMS. */
    size_t n;
    unsigned char *b = test_read_bytes(in_vec("SHA256SUMS"), &n);
    unsigned char *line2 = (unsigned char *)memchr(b, '\n', n) + 1;
    unsigned char *line3 = (unsigned char *)memchr(line2, '\n', n - (size_t)(line2 - b)) + 1;
    memmove(line2, line3, n - (size_t)(line3 - b));
    test_write_bytes(in_vec("SHA256SUMS"), b, n - (size_t)(line3 - line2));
    free(b);
    expect_fail("SHA256SUMS", "does not list '" README "'", 1);

    /* An extra line for a file the manifest does not list. */
    write_sums();
    FILE *f = fopen(in_vec("SHA256SUMS"), "a");
    cr_assert_not_null(f);
    fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  zzz.npy\n", f);
    fclose(f);
    expect_fail("SHA256SUMS", "lists 'zzz.npy', which MANIFEST.json does not", 1);
}

Test(verify, sha256sums_out_of_order)
{
    size_t n;
    unsigned char *b = test_read_bytes(in_vec("SHA256SUMS"), &n);
    /* Swap the first two lines (each 64 + 2 + name + 1 bytes). */
    size_t l1 = (size_t)((unsigned char *)memchr(b, '\n', n) - b) + 1;
    size_t l2 = (size_t)((unsigned char *)memchr(b + l1, '\n', n - l1) - (b + l1)) + 1;
    unsigned char *s = malloc(n);
    cr_assert_not_null(s);
    memcpy(s, b + l1, l2);
    memcpy(s + l2, b, l1);
    memcpy(s + l1 + l2, b + l1 + l2, n - l1 - l2);
    test_write_bytes(in_vec("SHA256SUMS"), s, n);
    free(s);
    free(b);
    expect_fail("SHA256SUMS", "out of order", 1);
}

/* ---- several problems ------------------------------------------------------------------- */

Test(verify, every_problem_is_logged_and_the_first_is_the_error)
{
    cr_assert_eq(unlink(in_vec(EXPECTED)), 0);
    size_t n;
    unsigned char *b = test_read_bytes(in_vec(README), &n);
    b[1] ^= 0x01;
    test_write_bytes(in_vec(README), b, n);
    free(b);
    /* EXPECTED comes before README in the manifest: it is named; README's two come after. */
    int checked = expect_fail(EXPECTED, "3 problems in all", 3);
    cr_assert_eq(checked, 4);
    cr_assert_null(strstr(fp8kv_last_error(), README), "%s", fp8kv_last_error());
}

/* ---- the digests kept after verification (fp8kv_vectors_trust, fp8kv_vectors_read) ------- */

/* flip_last: flips the lowest bit of the last byte of the fixture's file rel. */
static void flip_last(const char *rel)
{
    size_t n;
    unsigned char *b = test_read_bytes(in_vec(rel), &n);
    b[n - 1] ^= 0x01;
    test_write_bytes(in_vec(rel), b, n);
    free(b);
}

/* Fixed in this change (bug20261203): fp8kv_vectors_trust remembered that a directory had
 * passed, not what its files were, and the readers after it read the files again unchecked: a
 * file changed after verification was judged against. The digests verification computed are
 * kept; every read through fp8kv_vectors_read hashes the bytes it read and parses those same
 * bytes, and a file that is not the one verified is refused as altered truth, the directory
 * with it, until it verifies again. */
Test(verify, bug20261203_files_read_after_trust_were_not_the_files_verified)
{
    size_t n = 0;
    struct fp8kv_npy a;
    /* never trusted: read as it is (the callers of the loaders verify first) */
    void *bytes = fp8kv_vectors_read(vec_dir, INPUT, &n);
    cr_assert_not_null(bytes, "%s", fp8kv_last_error());
    free(bytes);
    cr_assert_eq(fp8kv_vectors_trust(vec_dir), 0, "%s", fp8kv_last_error());
    cr_assert(fp8kv_vectors_trusted(vec_dir));
    cr_assert_eq(fp8kv_vectors_read_npy(vec_dir, INPUT, FP8KV_NPY_U32, 1, 16, &a), 0, "%s",
                 fp8kv_last_error());
    cr_assert_eq(((const uint32_t *)a.data)[1], 0x3F801000u);
    fp8kv_npy_free(&a);
    cr_assert_eq(fp8kv_vectors_has(vec_dir, EXPECTED), 1);
    cr_assert_eq(fp8kv_vectors_has(vec_dir, "e4m3fn_satfinite/nothing.npy"), 0);
    /* a file beside the verified ones is no truth */
    test_write_bytes(in_vec("e4m3fn_satfinite/extra.npy"), "x", 1);
    cr_assert_eq(fp8kv_vectors_has(vec_dir, "e4m3fn_satfinite/extra.npy"), FP8KV_ERR);
    cr_assert_null(fp8kv_vectors_read(vec_dir, "e4m3fn_satfinite/extra.npy", &n));
    cr_assert_not_null(strstr(fp8kv_last_error(), "extra.npy: not a file of the verified"), "%s",
                       fp8kv_last_error());

    flip_last(EXPECTED);
    cr_assert_eq(fp8kv_vectors_read_npy(vec_dir, EXPECTED, FP8KV_NPY_U8, 2, 4, &a), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), EXPECTED ": changed since the vector set"), "%s",
                       fp8kv_last_error());
    /* refused from then on, an intact file too, and trusting it again verifies it again */
    cr_assert_null(fp8kv_vectors_read(vec_dir, INPUT, &n));
    cr_assert_not_null(strstr(fp8kv_last_error(), "refused"), "%s", fp8kv_last_error());
    cr_assert_not(fp8kv_vectors_trusted(vec_dir));
    cr_assert_eq(fp8kv_vectors_trust(vec_dir), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), EXPECTED), "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_vectors_has(vec_dir, INPUT), FP8KV_ERR);
    flip_last(EXPECTED);
    cr_assert_eq(fp8kv_vectors_trust(vec_dir), 0, "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_vectors_read_npy(vec_dir, EXPECTED, FP8KV_NPY_U8, 2, 4, &a), 0, "%s",
                 fp8kv_last_error());
    fp8kv_npy_free(&a);
    /* a file gone since verification is altered truth as well */
    cr_assert_eq(unlink(in_vec(README)), 0);
    cr_assert_null(fp8kv_vectors_read(vec_dir, README, &n));
    cr_assert_not_null(strstr(fp8kv_last_error(), "changed since, nothing is judged"), "%s",
                       fp8kv_last_error());
}

/* Fixed in this change (bug20261203): a directory was verified once per process, so a second
 * verification of a directory altered since (the Python package's second kv_cases()) passed
 * without looking. fp8kv_vectors_trust_again verifies in full, every call. */
Test(verify, bug20261203_a_second_verification_of_an_altered_set_passed)
{
    cr_assert_eq(fp8kv_vectors_trust_again(vec_dir), 0, "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_vectors_trust_again(vec_dir), 0, "%s", fp8kv_last_error());
    flip_last(README);
    cr_assert_eq(fp8kv_vectors_trust_again(vec_dir), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), README), "%s", fp8kv_last_error());
    cr_assert_not(fp8kv_vectors_trusted(vec_dir));
    cr_assert_eq(fp8kv_vectors_trust(vec_dir), FP8KV_ERR);
}

#if defined(__SANITIZE_ADDRESS__)
#define FP8KV_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define FP8KV_TEST_SANITIZED 1
#endif
#endif

/* Fixed in this change (bug20261203): a failed getline() reading SHA256SUMS ended the loop as
 * the end of the file did: with an allocation failure (ENOMEM, which sets no error indicator)
 * on a last, overlong line, the lines before it were all that was checked and the set passed.
 * A -1 that is not the end of the file is an error. The address space is limited to 16 MiB
 * above what is in use, so getline cannot hold a 64 MiB line. */
Test(verify, bug20261203_a_sums_read_error_was_taken_for_the_end)
{
#ifdef FP8KV_TEST_SANITIZED
    cr_skip_test("an address-space limit and a sanitizer's shadow memory do not mix");
#endif
    FILE *f = fopen(in_vec("SHA256SUMS"), "a");
    cr_assert_not_null(f);
    static char chunk[1 << 16];
    memset(chunk, 'a', sizeof chunk);
    for (int i = 0; i < 1024; i++)
        cr_assert_eq(fwrite(chunk, 1, sizeof chunk, f), sizeof chunk);
    cr_assert_eq(fclose(f), 0);
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    cr_assert(statm && fscanf(statm, "%ld", &pages) == 1);
    fclose(statm);
    struct rlimit was, limit;
    cr_assert_eq(getrlimit(RLIMIT_AS, &was), 0);
    limit = was;
    limit.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)16 << 20);
    cr_assert_eq(setrlimit(RLIMIT_AS, &limit), 0);
    const int rc = fp8kv_verify_vectors(vec_dir, NULL, NULL);
    setrlimit(RLIMIT_AS, &was);
    cr_assert_eq(rc, FP8KV_ERR, "verified, with SHA256SUMS read in part");
    cr_assert_not_null(strstr(fp8kv_last_error(), "SHA256SUMS: read failed after line 4"), "%s",
                       fp8kv_last_error());
}
