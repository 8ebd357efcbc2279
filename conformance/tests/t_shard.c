/* t_shard.c — `--shard i/N` and `fp8kv merge` end to end (fp8kv/shard.h): the shards of a sweep
 * or an audit, merged, print and write what the unsharded command does, byte for byte but for
 * the timings; bad shard specs and bad merges are refused with exit 2 and a message. The merges
 * of the planted plugin many_classes (failures in every class, ranges across the borders of 2, 3
 * and 7 shards) run full 2^32 passes: built as t_shard_full, labelled exhaustive. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/shard.h"
#include "testutil.h"

#define FP8KV FP8KV_EXE
#define VECTORS " --vectors " FP8KV_SOURCE_DIR "/vectors"
#define PLUGIN(name) " " FP8KV_PLUGIN_DIR "/" name ".so"
#ifdef FP8KV_SHARD_FULL /* the folders of each suite, of each test that writes one */
#define MERGE_DIR FP8KV_TEST_TMP "/t_shard_full"
#else
#define MERGE_DIR FP8KV_TEST_TMP "/t_shard_merge"
#endif
#define DIR FP8KV_TEST_TMP "/t_shard_bad"

static char out[1 << 16];

/* The timings blanked: "(1.23 s)", "time: 1.234 s", "seconds": 1.2, a device's "12.34 ms". */
#define NORMALIZE                                                                                  \
    "sed -E 's/\\([0-9.]+ s\\)/(T s)/; s/^time: [0-9.]+ s$/time: T s/; "                           \
    "s/\"seconds\": [-0-9.e+]+/\"seconds\": 0/; s/: [0-9.]+ ms/: T ms/'"

/* Runs `command` whole once, then as n shards (--shard i/n --json) for each n of counts, merges
 * each set with fp8kv merge (in reverse order) and asserts that the merged text and JSON are the
 * unsharded ones, timings aside; returns the unsharded exit code. */
static int merged_is_whole(const char *command, const int *counts, size_t ncounts)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "rm -rf " MERGE_DIR " && mkdir -p " MERGE_DIR " && %s --json " MERGE_DIR
             "/whole.json > " MERGE_DIR "/whole.txt 2>/dev/null",
             command);
    const int whole = test_run(cmd, out, sizeof out);
    cr_assert(whole == 0 || whole == 1, "%s: exit %d", command, whole);
    for (size_t c = 0; c < ncounts; c++) {
        const int n = counts[c];
        char files[4096] = "";
        for (int i = n - 1; i >= 0; i--) {
            snprintf(cmd, sizeof cmd,
                     "%s --shard %d/%d --json " MERGE_DIR "/s%d.json > /dev/null 2>&1", command, i,
                     n, i);
            const int rc = test_run(cmd, out, sizeof out);
            cr_assert(rc == 0 || rc == 1, "%s: exit %d", cmd, rc);
            snprintf(files + strlen(files), sizeof files - strlen(files), " " MERGE_DIR "/s%d.json",
                     i);
        }
        snprintf(cmd, sizeof cmd,
                 FP8KV " merge%s --json " MERGE_DIR "/merged.json > " MERGE_DIR "/merged.txt",
                 files);
        cr_assert_eq(test_run(cmd, out, sizeof out), whole, "%s", cmd);
        const char *const kinds[] = {"txt", "json"};
        for (int k = 0; k < 2; k++) {
            snprintf(cmd, sizeof cmd,
                     "cd " MERGE_DIR " && " NORMALIZE " whole.%s > w && " NORMALIZE
                     " merged.%s > m && diff w m 2>&1",
                     kinds[k], kinds[k]);
            cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s, %d shards: merged.%s differs:\n%s",
                         command, n, kinds[k], out);
        }
    }
    return whole;
}

/* ---- the slices ----------------------------------------------------------------------------- */

Test(shard, slices_cover_the_domain_once_in_order)
{
    const uint32_t counts[] = {1, 2, 3, 7, 64, 1000, 4096};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++)
        for (int d = 0; d < FP8KV_DOMAIN_COUNT; d++) {
            const uint64_t size = d == FP8KV_DOMAIN_F32 ? 1ull << 32 : 1ull << 16;
            uint64_t end = 0;
            for (uint32_t i = 0; i < counts[t]; i++) {
                uint64_t lo, hi;
                fp8kv_shard_domain_slice((struct fp8kv_shard){i, counts[t]}, (enum fp8kv_domain)d,
                                         size, &lo, &hi);
                cr_assert_eq(lo, end, "shard %u/%u starts where %u ended", i, counts[t], i - 1);
                cr_assert_geq(hi, lo);
                cr_assert_eq(
                    lo % (d == FP8KV_DOMAIN_F32 ? FP8KV_SHARD_ALIGN_F32 : FP8KV_SHARD_ALIGN_HALF),
                    0, "aligned");
                end = hi;
            }
            cr_assert_eq(end, size, "%u shards cover the domain", counts[t]);
        }
    uint64_t lo, hi;
    fp8kv_shard_domain_slice((struct fp8kv_shard){1, 3}, FP8KV_DOMAIN_F32, 1ull << 32, &lo, &hi);
    cr_assert(lo == 0x55500000u && hi == 0xAAA00000u, "1/3: [0x%llx, 0x%llx)",
              (unsigned long long)lo, (unsigned long long)hi);
}

Test(shard, a_spec_is_i_of_n)
{
    struct fp8kv_shard s;
    cr_assert_eq(fp8kv_shard_parse("2/7", &s), 0);
    cr_assert(s.index == 2 && s.count == 7);
    const char *const bad[] = {"3/3", "1",  "a/2",   "0/0",  "-1/2", "0/5000",
                               "1/",  "/2", "1/2/3", " 1/2", "01x/2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(fp8kv_shard_parse(bad[i], &s), 0, "'%s' refused", bad[i]);
}

/* ---- the command line ----------------------------------------------------------------------- */

Test(shard_cli, bad_shard_specs_are_exit_2_with_a_message)
{
    const char *const cases[][2] = {
        {"3/3", "the shard index i must be from 0 to N - 1 = 2"},
        {"0/0", "the shard count N must be from 1 to 4096"},
        {"x", "is not a shard i/N"},
        {"1/9999", "the shard count N must be from 1 to 4096"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 FP8KV " sweep --codec bits --domain f16 --shard %s" VECTORS " 2>&1", cases[i][0]);
        cr_assert_eq(test_run(cmd, out, sizeof out), 2, "%s: %s", cmd, out);
        cr_assert(strstr(out, cases[i][1]), "%s: %s", cmd, out);
        snprintf(cmd, sizeof cmd,
                 FP8KV " audit --baseline bits --candidate frexp --shard %s" VECTORS " 2>&1",
                 cases[i][0]);
        cr_assert_eq(test_run(cmd, out, sizeof out), 2, "%s: %s", cmd, out);
        cr_assert(strstr(out, cases[i][1]), "%s: %s", cmd, out);
    }
    cr_assert_eq(
        test_run(FP8KV " sweep --codec bits --device all" VECTORS " 2>&1", out, sizeof out), 2,
        "%s", out);
    cr_assert(strstr(out, "--device is for --target hip"), "%s", out);
    cr_assert_eq(test_run(FP8KV " sweep --codec bits --target hip --device all --shard 0/2" VECTORS
                                " 2>&1",
                          out, sizeof out),
                 2, "%s", out);
    cr_assert(strstr(out, "--shard and --device all: give one"), "%s", out);
}

Test(shard_cli, a_codec_sweep_merges_to_the_whole_sweep)
{
    const int n[] = {1, 2, 3};
    cr_assert_eq(
        merged_is_whole(FP8KV " sweep --codec frexp --domain f16 --threads 2" VECTORS, n, 3), 0);
    cr_assert_eq(merged_is_whole(FP8KV " sweep --codec bits --domain bf16 --profile "
                                       "e4m3fnuz_nan --nan-check class --threads 2" VECTORS,
                                 n, 3),
                 0);
}

/* Writes the shards i/n of the f16 sweep of bits under profile p into DIR/<name>i.json. */
static void write_shards(const char *p, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "mkdir -p " DIR " && " FP8KV " sweep --codec bits --domain f16 --profile %s "
                 "--shard %d/%d --json " DIR "/%s%d.json" VECTORS " > /dev/null 2>&1",
                 p, i, n, name, i);
        cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", cmd);
    }
}

/* fp8kv merge on files: exit 2 and a message holding `want`. */
static void refused(const char *files, const char *want)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd " DIR " && " FP8KV " merge %s 2>&1", files);
    cr_assert_eq(test_run(cmd, out, sizeof out), 2, "%s: %s", cmd, out);
    cr_assert(strstr(out, want), "%s: wanted '%s' in: %s", cmd, want, out);
}

Test(shard_cli, bad_merges_are_exit_2_naming_the_problem)
{
    test_run("rm -rf " DIR, out, sizeof out);
    write_shards("e4m3fn_satfinite", 3, "a");
    write_shards("e4m3fn_nan", 3, "b");
    write_shards("e4m3fn_satfinite", 2, "c");
    refused("a0.json a2.json", "shard 1/3 is missing");
    refused("a0.json a1.json a1.json a2.json", "shard 1/3 is given twice: a1.json and a1.json");
    refused("a0.json a1.json b2.json", "not shards of one pass: profile \"e4m3fn_satfinite\" vs "
                                       "\"e4m3fn_nan\"");
    refused("a0.json c1.json", "not one split");
    refused("", "give the shards' documents");
    cr_assert_eq(test_run("cd " DIR " && " FP8KV " sweep --codec bits --domain f16 --json "
                          "whole.json" VECTORS " > /dev/null && echo '{' > broken.json",
                          out, sizeof out),
                 0, "%s", out);
    refused("whole.json", "whole.json: not a shard's document");
    refused("broken.json", "broken.json: not JSON");
    refused("missing.json", "missing.json: cannot open: No such file or directory");
    /* a shard whose slices were edited is not one of this fp8kv's */
    cr_assert_eq(test_run("cd " DIR " && sed 's/\"index\": 1/\"index\": 2/' a1.json > d2.json", out,
                          sizeof out),
                 0);
    refused("a0.json a1.json d2.json", "its slices are not the ones this fp8kv cuts");
    test_run("rm -rf " DIR, out, sizeof out);
}

Test(shard_cli, device_all_without_a_gpu_is_exit_3)
{
    const int rc =
        test_run(FP8KV " sweep --codec bits --target hip --device all --domain f16" VECTORS " 2>&1",
                 out, sizeof out);
#ifndef FP8KV_TEST_GPU_BUILD
    cr_assert_eq(rc, 3, "%s", out);
    cr_assert(strstr(out, "--device all"), "%s", out);
#else
    cr_assert(rc == 0 || rc == 3, "%s", out); /* 0 where a GPU answers */
#endif
}

/* ---- the planted plugin: full passes (t_shard_full, exhaustive) ---------------------------- */

#ifdef FP8KV_SHARD_FULL
Test(shard_full, the_plugin_sweep_merges_to_the_whole_sweep, .timeout = 1800)
{
    const int n[] = {1, 2, 3, 7};
    cr_assert_eq(
        merged_is_whole(
            FP8KV " sweep --threads 2 --plugin" PLUGIN("fp8kv_plugin_many_classes") VECTORS, n, 4),
        1);
    /* the ranges across the borders of 3 and 7 shards are one line, as in the whole sweep */
    cr_assert_eq(test_run("cat " MERGE_DIR "/merged.txt", out, sizeof out), 0);
    cr_assert(strstr(out, "f32 0x248ffffd..0x24900002 (6.24500253e-17..6.24500584e-17, 6 inputs) "
                          "=> 55  expected 00  underflow"),
              "%s", out);
    cr_assert(strstr(out, "f32 0x554ffffd..0x55500002"), "%s", out);
    cr_assert(strstr(out, "  underflow        24 mismatches"), "%s", out);
}

Test(shard_full, the_audit_merges_to_the_whole_audit, .timeout = 1800)
{
    const int n[] = {1, 2, 3, 7};
    cr_assert_eq(merged_is_whole(FP8KV " audit --threads 2 --baseline bits --candidate" PLUGIN(
                                     "fp8kv_plugin_many_classes") VECTORS,
                                 n, 4),
                 1);
    cr_assert_eq(test_run("cat " MERGE_DIR "/merged.txt", out, sizeof out), 0);
    cr_assert(strstr(out, "f32 0x248ffffd..0x24900002"), "%s", out);
    cr_assert(strstr(out, "verdict=regressed"), "%s", out);
}
#endif
