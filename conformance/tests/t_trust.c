/* t_trust.c — no verdict against unverified truth, and no hang on a file that is not one.
 *
 * Each test copies the golden vectors into a scratch directory and damages the copy the way a
 * hostile or unlucky user would: a flipped byte in a KV case's meta, one ulp on a certified
 * boundary, an edited text file, a bit in the scale pairs' expected codes, a FIFO or /dev/zero
 * where a file should be. Every judging command (run, sweep, verify-stream, audit) must then
 * refuse with exit 2 and name the file, before any verdict (a correct codec judged against a
 * wrong boundary must not come out "nonconformant"), and never block. The undamaged copy is
 * judged conformant by the same commands, so the refusals are the damage's doing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* a hang fails the test instead of stalling it; 300 s: a whole CPU run under ASan on two busy
 * cores takes more than 60 */
#define FP8KV "timeout 300 " FP8KV_EXE
#define PROFILE "e4m3fn_satfinite"

static char tmp_dir[64], vectors[96], cmd[4096], out[1 << 16];

static void setup(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/fp8kv-trust-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir));
    snprintf(vectors, sizeof vectors, "%s/vectors", tmp_dir);
    snprintf(cmd, sizeof cmd, "cp -r %s/vectors %s", FP8KV_SOURCE_DIR, vectors);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "cannot copy the vectors: %s", out);
}

static void teardown(void)
{
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    test_run(cmd, out, sizeof out);
}

TestSuite(trust, .init = setup, .fini = teardown);

/* run_fp8kv: runs "fp8kv ARGS --vectors <copy>" (stdin from `input` when not NULL), stderr with
 * stdout; its exit status. */
static int run_fp8kv(const char *args, const char *input)
{
    char line[8192];
    snprintf(line, sizeof line, "%s%s " FP8KV " %s --vectors %s 2>&1", input ? input : "",
             input ? " |" : "", args, vectors);
    return test_run(line, out, sizeof out);
}

/* xor_byte: flips the bits of mask in byte `offset` of <copy>/rel. */
static void xor_byte(const char *rel, long offset, unsigned mask)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", vectors, rel);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, offset, SEEK_SET), 0);
    const int c = fgetc(f);
    cr_assert_neq(c, EOF, "%s has no byte %ld", path, offset);
    cr_assert_eq(fseek(f, offset, SEEK_SET), 0);
    fputc(c ^ (int)mask, f);
    fclose(f);
}

/* expect_refused: exit 2 and a message naming `names`, and no verdict line. */
static void expect_refused(int rc, const char *names)
{
    cr_assert_eq(rc, 2, "exit %d, not 2: %s", rc, out);
    cr_assert_not_null(strstr(out, names), "the message does not name %s: %s", names, out);
    cr_assert_null(strstr(out, "verdict="), "a verdict against damaged truth: %s", out);
    cr_assert_null(strstr(out, "conformant;"), "a run verdict against damaged truth: %s", out);
}

/* the golden codes of every f16 input under PROFILE (the file's last 65536 bytes) */
#define F16_GOLDEN "tail -c 65536 " FP8KV_SOURCE_DIR "/vectors/" PROFILE "/f16_expected.npy"

Test(trust, the_undamaged_copy_is_judged)
{
    cr_assert_eq(run_fp8kv("sweep --codec bits --domain f16 --profile " PROFILE, NULL), 0, "%s",
                 out);
    cr_assert_eq(run_fp8kv("verify-stream --sweep f16 --profile " PROFILE, F16_GOLDEN), 0, "%s",
                 out);
    snprintf(cmd, sizeof cmd, "run --target cpu --profile " PROFILE " --out %s/reports", tmp_dir);
    cr_assert_eq(run_fp8kv(cmd, NULL), 0, "%s", out);
    cr_assert_not_null(strstr(out, "conformant;"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s/reports/cpu-x86_64/report.json", tmp_dir);
    size_t n = 0;
    char *json = (char *)test_read_bytes(cmd, &n);
    json[n] = '\0'; /* test_read_bytes leaves room for it */
    cr_assert_not_null(strstr(json, "\"verified\": true"), "the report does not say so");
    free(json);
}

Test(trust, a_flipped_byte_in_a_kv_case_stops_the_run)
{
    xor_byte(PROFILE "/kv/case0_meta.npy", 140, 0x01);
    char args[256];
    snprintf(args, sizeof args, "run --target cpu --profile " PROFILE " --out %s/reports", tmp_dir);
    expect_refused(run_fp8kv(args, NULL), "kv/case0_meta.npy");
    snprintf(cmd, sizeof cmd, "ls %s/reports 2>/dev/null | wc -l", tmp_dir);
    test_run(cmd, out, sizeof out);
    cr_assert_eq(atoi(out), 0, "a report was written against damaged truth");
}

/* Fixed in 04d94c5: judging commands read vector files unverified, so one ulp on a boundary
 * made a correct codec's sweep nonconformant; the set is verified first (exit 2, no verdict). */
Test(trust, bug20261201_damaged_boundary_blamed_on_a_correct_codec)
{
    /* boundaries.npy: a 128-byte header, then little-endian u4 entries: the lowest bit of
     * entry 100 is one ulp of that boundary */
    xor_byte(PROFILE "/boundaries.npy", 128 + 100 * 4, 0x01);
    expect_refused(run_fp8kv("sweep --codec bits --domain f16 --profile " PROFILE, NULL),
                   "boundaries.npy");
}

Test(trust, an_edited_text_file_stops_verify_stream)
{
    xor_byte(PROFILE "/edges.txt", 10, 0x20);
    expect_refused(run_fp8kv("verify-stream --sweep f16 --profile " PROFILE, F16_GOLDEN),
                   "edges.txt");
}

Test(trust, a_flipped_expected_code_stops_the_audit)
{
    xor_byte(PROFILE "/scale_expected.npy", 200, 0x01);
    expect_refused(run_fp8kv("audit --baseline bits --candidate frexp --profile " PROFILE, NULL),
                   "scale_expected.npy");
}

/* The KV plugin of examples/engine_kv (a correct store), wrapped as conformance/plugins/kv_plugin.c
 * wraps it: its first store flips every bit of the last 64 bytes of $FP8KV_TEST_FLIP (once: it
 * leaves $FP8KV_TEST_FLIP_MARKER behind), then stores as the example does. */
static const char flipping_plugin[] =
    "#include \"fp8kv/kv_plugin.h\"\n"
    "const struct fp8kv_kv_kernels_v1 *engine_kv_kernels_v1(void);\n"
    "#define fp8kv_kv_kernels_v1(v) engine_kv_kernels_v1(v)\n"
    "#include \"" FP8KV_SOURCE_DIR "/examples/engine_kv/engine_kv.c\"\n"
    "#undef fp8kv_kv_kernels_v1\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <unistd.h>\n"
    "static struct fp8kv_kv_kernels_v1 flipping;\n"
    "static int flipping_store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)\n"
    "{\n"
    "    const char *path = getenv(\"FP8KV_TEST_FLIP\"), *mark = "
    "getenv(\"FP8KV_TEST_FLIP_MARKER\");\n"
    "    if (path && mark && access(mark, F_OK) != 0) {\n"
    "        FILE *f = fopen(path, \"r+b\"), *m = fopen(mark, \"w\");\n"
    "        unsigned char b[64];\n"
    "        if (f && fseek(f, -64, SEEK_END) == 0 && fread(b, 1, 64, f) == 64) {\n"
    "            for (int i = 0; i < 64; i++)\n"
    "                b[i] ^= 0xFF;\n"
    "            if (fseek(f, -64, SEEK_END) == 0)\n"
    "                fwrite(b, 1, 64, f);\n"
    "        }\n"
    "        if (f)\n"
    "            fclose(f);\n"
    "        if (m)\n"
    "            fclose(m);\n"
    "    }\n"
    "    return engine_kv_kernels_v1()->store(ctx, a);\n"
    "}\n"
    "ENGINE_EXPORT const struct fp8kv_kv_kernels_v1 *fp8kv_kv_kernels_v1(void)\n"
    "{\n"
    "    flipping = *engine_kv_kernels_v1();\n"
    "    flipping.store = flipping_store;\n"
    "    return &flipping;\n"
    "}\n";

/* Fixed in this change (bug20261203): check-kv verified the vectors at the start and read each
 * case's files later, unchecked, so bytes flipped in case 1's golden key cache during the first
 * store made a correct plugin "FAIL ... mismatches=64", exit 1: a verdict against truth nobody
 * verified. Every file read after verification is hashed and compared with the digest
 * verification kept: the altered file is named, exit 2, and nothing fails. */
Test(trust, bug20261203_check_kv_judged_a_case_altered_after_verification)
{
    char src[128], so[128], mark[128];
    snprintf(src, sizeof src, "%s/flipping.c", tmp_dir);
    snprintf(so, sizeof so, "%s/flipping.so", tmp_dir);
    snprintf(mark, sizeof mark, "%s/flipped", tmp_dir);
    test_write_bytes(src, flipping_plugin, sizeof flipping_plugin - 1);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -I%s/kernels/include -o %s %s -lm 2>&1",
             FP8KV_SOURCE_DIR, so, src);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "cannot build the plugin: %s", out);
    char env[512];
    snprintf(env, sizeof env,
             "FP8KV_TEST_FLIP=%s/" PROFILE "/kv/case1_key_cache.npy FP8KV_TEST_FLIP_MARKER=%s",
             vectors, mark);
    char line[1024];
    snprintf(line, sizeof line,
             "%s " FP8KV " check-kv --plugin %s --profile " PROFILE " --vectors %s 2>&1", env, so,
             vectors);
    const int rc = test_run(line, out, sizeof out);
    snprintf(cmd, sizeof cmd, "test -e %s", mark);
    cr_assert_eq(test_run(cmd, line, sizeof line), 0, "the plugin flipped nothing: %s", out);
    expect_refused(rc, "kv/case1_key_cache.npy: changed since");
    cr_assert_null(strstr(out, "FAIL "), "a check failed against altered truth: %s", out);
    /* on a fresh copy, the marker left behind, the plugin flips nothing: it is conformant */
    snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s/vectors %s", vectors, FP8KV_SOURCE_DIR,
             vectors);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    snprintf(line, sizeof line,
             "%s " FP8KV " check-kv --plugin %s --profile " PROFILE " --vectors %s 2>&1", env, so,
             vectors);
    cr_assert_eq(test_run(line, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verdict=conformant"), "%s", out);
}

/* Fixed in 04d94c5: a FIFO in place of a vector file blocked the reader forever; only regular
 * files are opened, without blocking. */
Test(trust, bug20261201_fifo_as_a_vector_file_blocked)
{
    snprintf(cmd, sizeof cmd, "rm %s/" PROFILE "/decode.npy && mkfifo %s/" PROFILE "/decode.npy",
             vectors, vectors);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    expect_refused(run_fp8kv("verify", NULL), "not a regular file");
    expect_refused(run_fp8kv("sweep --codec bits --domain f16 --profile " PROFILE, NULL),
                   "decode.npy");
}

/* Fixed in 04d94c5: /dev/zero as MANIFEST.json was read without end; it is refused at once. */
Test(trust, bug20261201_dev_zero_as_the_manifest_spun)
{
    snprintf(cmd, sizeof cmd, "rm %s/MANIFEST.json && ln -s /dev/zero %s/MANIFEST.json", vectors,
             vectors);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    expect_refused(run_fp8kv("verify", NULL), "MANIFEST.json");
    snprintf(cmd, sizeof cmd, "run --target cpu --profile " PROFILE " --out %s/reports", tmp_dir);
    expect_refused(run_fp8kv(cmd, NULL), "MANIFEST.json");
}

/* Fixed in 04d94c5: /dev/zero as SHA256SUMS was read into an ever-growing buffer; it is refused
 * at once. */
Test(trust, bug20261201_dev_zero_as_sha256sums_grew)
{
    snprintf(cmd, sizeof cmd, "rm %s/SHA256SUMS && ln -s /dev/zero %s/SHA256SUMS", vectors,
             vectors);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    expect_refused(run_fp8kv("verify", NULL), "SHA256SUMS");
}

/* Fixed in 6e3cbec: concurrent writers into one --out failed each other (fixed temporary names)
 * and could leave report.json and report.md of different writers. Reports are written as a
 * unit: 16 writers into one --out at once all succeed, the folder holds one writer's
 * report.json and report.md (the same "compiled" text in both), and no staging folder is left
 * behind. */
Test(trust, bug20261201_concurrent_report_writers_failed_each_other)
{
    snprintf(cmd, sizeof cmd,
             "fails=0; for i in $(seq 1 16); do (" FP8KV " report --compiled-only gfx90a "
             "--paths writer$i --out %s/reports --vectors %s >/dev/null 2>&1 || echo FAILED) & "
             "done; wait",
             tmp_dir, vectors);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "FAILED"), "a writer failed: %s", out);
    snprintf(cmd, sizeof cmd,
             "cd %s/reports && ls -A | tr '\\n' ' ' && echo && "
             "grep -o 'writer[0-9]*' gfx90a/report.json | head -n 1 && "
             "grep -o 'writer[0-9]*' gfx90a/report.md | head -n 1",
             tmp_dir);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    char listing[256], json_writer[32], md_writer[32];
    cr_assert_eq(sscanf(out, "%255[^\n]\n%31s\n%31s", listing, json_writer, md_writer), 3, "%s",
                 out);
    cr_assert_str_eq(listing, "gfx90a index.html index.md ", "leftovers beside the report: %s",
                     listing);
    cr_assert_str_eq(json_writer, md_writer, "report.json and report.md from different writers");
}

/* Fixed in 6e3cbec: report.json and report.md were replaced one after the other, so a writer
 * killed between them left a mixed pair; the set is staged and swapped in at once. A writer
 * killed at any moment (SIGKILL, 40 times at instants spread over 0-39 ms, the span of a report
 * write) leaves the folder as a reader may see it: the previous writer's report.json and
 * report.md, together, or the new pair, never one of each; only hidden staging folders may
 * remain. */
Test(trust, bug20261201_killed_report_writer_left_a_mixed_report)
{
    snprintf(cmd, sizeof cmd,
             FP8KV
             " report --compiled-only gfx90a --paths first --out %s/reports --vectors %s "
             ">/dev/null 2>&1 && "
             "for i in $(seq 1 40); do "
             "(" FP8KV_EXE " report --compiled-only gfx90a --paths killed$i --out %s/reports "
             "--vectors %s >/dev/null 2>&1 &  pid=$!; "
             "sleep 0.0$((i %% 4))$((i * 7 %% 10)); kill -9 $pid 2>/dev/null; wait $pid); "
             "j=$(grep -o '\"first\"\\|killed[0-9]*' %s/reports/gfx90a/report.json | "
             "head -n1 | tr -d '\"'); "
             "m=$(grep -o 'first\\|killed[0-9]*' %s/reports/gfx90a/report.md | head -n1); "
             "{ [ -n \"$j\" ] && [ \"$j\" = \"$m\" ]; } || echo \"MIXED $i: json $j md $m\"; done; "
             "ls %s/reports | tr '\\n' ' '",
             tmp_dir, vectors, tmp_dir, vectors, tmp_dir, tmp_dir, tmp_dir);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "MIXED"), "%s", out);
    cr_assert(strstr(out, "gfx90a index.html") && strstr(out, " index.md"), "visible leftovers: %s",
              out);
}

/* A write that fails (here the file-size limit, a stand-in for a full disk: the write returns
 * EFBIG as it would ENOSPC) is exit 2, and the previous report stays whole and in place. */
Test(trust, a_failed_write_keeps_the_previous_report)
{
    snprintf(
        cmd, sizeof cmd,
        FP8KV " report --compiled-only gfx90a --paths before --out %s/reports --vectors %s "
              ">/dev/null 2>&1 && sha256sum %s/reports/gfx90a/report.json "
              "%s/reports/gfx90a/report.md > %s/sums && "
              "(trap '' XFSZ; ulimit -f 1; " FP8KV_EXE " report --compiled-only gfx90a --paths "
              "\"$(head -c 4000 /dev/zero | tr '\\0' x)\" --out %s/reports --vectors %s "
              ">/dev/null 2>%s/err); echo rc=$?; sha256sum -c --quiet %s/sums && echo intact; "
              "cat %s/err",
        tmp_dir, vectors, tmp_dir, tmp_dir, tmp_dir, tmp_dir, vectors, tmp_dir, tmp_dir, tmp_dir);
    test_run(cmd, out, sizeof out);
    cr_assert(strstr(out, "rc=2\n"), "%s", out);
    cr_assert(strstr(out, "intact\n"), "the previous report changed: %s", out);
}
