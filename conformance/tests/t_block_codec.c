/* t_block_codec.c — the block codec of fp8kv/block_codec.h judged against the oracle by the
 * block judge (fp8kv/block_judge.h): every format, rule and model (decode of every code pair,
 * seeded whole blocks, a small exhaustive element sweep); the judge catching a planted fault
 * at exactly the inputs it was planted on; `fp8kv check-block` end to end on the example
 * plugin (examples/engine_block) clean and with planted faults, its JSON, its usage errors and
 * damaged or absent vectors; `fp8kv audit --block` (its columns, JSON, crashes, usage errors);
 * model f32 with a subnormal G (RN32(s G) = 0), oracle and codec. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fp8kv/block_audit.h"
#include "fp8kv/block_codec.h"
#include "fp8kv/block_judge.h"
#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "testutil.h"

/* A small sweep point: MX X = -126 (the f32 subnormals reach the element grid: 2^26 inputs
 * per sign); NVFP4 s = 1 at G = 2^-120 (inputs below 2^-117). */
static struct fp8kv_block_sweep_point small_point(const struct fp8kv_block_format *f)
{
    if (f->scale_kind == FP8KV_SCALE_UE4M3)
        return (struct fp8kv_block_sweep_point){0x38, 0x1p-120f};
    return (struct fp8kv_block_sweep_point){1, 1.0f};
}

static void expect_clean(const struct fp8kv_block_report *r, const char *what)
{
    cr_expect_eq(fp8kv_block_report_wrong(r), 0, "%s: %llu wrong, first: %s", what,
                 (unsigned long long)fp8kv_block_report_wrong(r), r->nlines ? r->lines[0] : "");
}

/* each_combination: calls judge on the CPU codec of every format, rule and model, and expects
 * its report clean; judge returns whether it checked blocks. */
static void each_combination(int (*judge)(const struct fp8kv_block_under_test *s,
                                          struct fp8kv_block_report *r))
{
    for (int fi = 0; fi < FP8KV_BLOCK_FORMAT_COUNT; fi++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[fi];
        for (int rule = 0; rule < FP8KV_BLOCK_RULE_COUNT; rule++) {
            if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule))
                continue;
            for (int model = 0; model < FP8KV_BLOCK_MODEL_COUNT; model++) {
                struct fp8kv_block_under_test s = fp8kv_block_cpu(f, (enum fp8kv_block_rule)rule,
                                                                  (enum fp8kv_block_model)model, 2);
                struct fp8kv_block_report r;
                memset(&r, 0, sizeof r);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", f->name, fp8kv_block_rule_names[rule],
                         fp8kv_block_model_names[model]);
                if (judge(&s, &r))
                    cr_expect(r.checked[FP8KV_BLOCK_CHECK_BLOCKS] > 0, "%s: no blocks checked",
                              what);
                expect_clean(&r, what);
            }
        }
    }
}

/* the golden vectors, the decode of every code pair and seeded whole blocks at several G */
static int judge_vectors_decode_blocks(const struct fp8kv_block_under_test *s,
                                       struct fp8kv_block_report *r)
{
    static const float Gs[] = {1.0f, 0.7f, 0x1.8p-140f, 3e37f};
    cr_assert_eq(fp8kv_block_judge_vectors(s, FP8KV_SOURCE_DIR "/vectors", r), FP8KV_OK, "%s",
                 fp8kv_last_error());
    cr_expect(r->ran[FP8KV_BLOCK_CHECK_VECTORS], "%s: no golden vectors", s->format->name);
    const int nG = s->format->scale_kind == FP8KV_SCALE_UE4M3 ? 4 : 1;
    for (int g = 0; g < nG; g++) {
        cr_assert_eq(fp8kv_block_judge_decode(s, Gs[g], r), FP8KV_OK);
        cr_assert_eq(fp8kv_block_judge_blocks(s, Gs[g], 7 + (uint64_t)g, 3000, r), FP8KV_OK);
    }
    return 1;
}

/* the small exhaustive element sweep (small_point), where the combination differs from one
 * already swept (the exact model; rceil; NVFP4's models) */
static int judge_small_sweep(const struct fp8kv_block_under_test *s, struct fp8kv_block_report *r)
{
    if (s->model == FP8KV_BLOCK_MODEL_EXACT || s->rule == FP8KV_RULE_RCEIL ||
        s->format->scale_kind == FP8KV_SCALE_UE4M3)
        cr_assert_eq(fp8kv_block_judge_sweep(s, small_point(s->format), r), FP8KV_OK);
    return 0;
}

Test(block_codec, every_format_rule_model_against_the_oracle, .timeout = 600)
{
    each_combination(judge_vectors_decode_blocks);
}

/* (a second ctest test, labelled exhaustive: it sweeps 2^26 inputs a sign and combination) */
Test(block_codec, every_format_rule_model_swept, .timeout = 600)
{
    each_combination(judge_small_sweep);
}

/* A subject that is the CPU codec but for one input: 0x00A00000 (in mxfp4 under X = -126,
 * 0x00A00000 * 2^126 = 1.25, the tie 1 | 1.5 whose even neighbour is 1.0, code 02) encodes to
 * the next code. The sweep must name exactly that input. */
static int planted_encode(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const float *x,
                          size_t nblocks, uint8_t *scales, uint8_t *elements)
{
    const struct fp8kv_block_kernels *cpu = ctx;
    int rc = cpu->encode(cpu->ctx, worker, cfg, x, nblocks, scales, elements);
    for (size_t i = 0; i < nblocks * 32; i++)
        if (fp8kv_f32_bits(x[i]) == 0x00A00000u)
            elements[i]++;
    return rc;
}

Test(block_codec, the_sweep_names_a_planted_fault)
{
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("mxfp4");
    const struct fp8kv_block_under_test cpu =
        fp8kv_block_cpu(f, FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 1);
    struct fp8kv_block_kernels planted = *cpu.subject->block;
    planted.ctx = (void *)cpu.subject->block;
    planted.encode = planted_encode;
    struct fp8kv_subject subject = *cpu.subject;
    subject.block = &planted;
    struct fp8kv_block_under_test s;
    cr_assert_eq(fp8kv_block_select(&subject, f, FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 1, &s),
                 0);
    struct fp8kv_block_report r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(fp8kv_block_judge_sweep(&s, (struct fp8kv_block_sweep_point){1, 1.0f}, &r),
                 FP8KV_OK);
    cr_assert_eq(r.wrong[FP8KV_BLOCK_CHECK_SWEEP], 1);
    cr_assert_str_eq(r.lines[0],
                     "sweep scale 01 (G 0x1p+0): input 0x00a00000: element expected 02 got 03");
}

/* ---- the device codec (a GPU build with a GPU; skipped otherwise) ---- */

#ifdef FP8KV_HAVE_GPU
#include "fp8kv/gpu.h"

Test(block_gpu, the_device_codec_against_the_oracle, .timeout = 1200)
{
    if (fp8kv_gpu_device_count() <= 0)
        cr_skip_test("no usable GPU: %s", fp8kv_last_error());
    for (int fi = 0; fi < FP8KV_BLOCK_FORMAT_COUNT; fi++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[fi];
        for (int rule = 0; rule < FP8KV_BLOCK_RULE_COUNT; rule++) {
            if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule))
                continue;
            for (int model = 0; model < FP8KV_BLOCK_MODEL_COUNT; model++) {
                struct fp8kv_block_under_test s;
                cr_assert_eq(fp8kv_block_gpu(f, (enum fp8kv_block_rule)rule,
                                             (enum fp8kv_block_model)model, 0, &s),
                             FP8KV_OK, "%s", fp8kv_last_error());
                struct fp8kv_block_report r;
                memset(&r, 0, sizeof r);
                const float G = f->scale_kind == FP8KV_SCALE_UE4M3 ? 0.7f : 1.0f;
                cr_assert_eq(fp8kv_block_judge_decode(&s, G, &r), FP8KV_OK);
                cr_assert_eq(fp8kv_block_judge_blocks(&s, G, 11, 20000, &r), FP8KV_OK);
                struct fp8kv_block_sweep_point pts[4];
                const int n = fp8kv_block_sweep_points(f, pts);
                for (int i = 0; i < n; i++)
                    cr_assert_eq(fp8kv_block_judge_sweep(&s, pts[i], &r), FP8KV_OK, "%s",
                                 fp8kv_last_error());
                expect_clean(&r, f->name);
            }
        }
    }
}

/* The device sweep judges by the runs it is handed: runs with one code moved must give
 * exactly the inputs of that stretch as wrong. */
Test(block_gpu, the_device_sweep_names_a_planted_fault)
{
    if (fp8kv_gpu_device_count() <= 0)
        cr_skip_test("no usable GPU: %s", fp8kv_last_error());
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("mxfp4");
    struct fp8kv_block_under_test s;
    cr_assert_eq(fp8kv_block_gpu(f, FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 0, &s), FP8KV_OK);
    /* the oracle's table at X = -126, handed to the device as it is: nothing wrong; then with
     * the run of code 03 (1.5) starting one input late: exactly its first input is wrong */
    static struct fp8kv_block_sweep_table t;
    const struct fp8kv_block_sweep_point pt = {1, 1.0f};
    const struct fp8kv_block_params p = fp8kv_block_params_of(&s, 1.0f);
    cr_assert(fp8kv_block_sweep_table(f, &p, pt, &t));
    const struct fp8kv_block_run *const runs[2] = {t.runs[0], t.runs[1]};
    const struct fp8kv_block_kernels *k = s.subject->block;
    struct fp8kv_block_sweep_result res;
    memset(&res, 0, sizeof res);
    cr_assert_eq(k->sweep(k->ctx, fp8kv_block_cfg(&s, 1.0f), 1, t.anchor, t.anchor_code, runs,
                          t.nruns, &res),
                 FP8KV_OK);
    cr_expect_eq(res.wrong, 0, "first wrong input 0x%08x", res.nfirst ? res.first[0].input : 0);
    int i = 0;
    while (i < t.nruns[0] && t.runs[0][i].code != 0x03)
        i++;
    cr_assert(i > 0 && i < t.nruns[0]);
    const uint32_t first = t.runs[0][i].start;
    t.runs[0][i].start++;
    memset(&res, 0, sizeof res);
    cr_assert_eq(k->sweep(k->ctx, fp8kv_block_cfg(&s, 1.0f), 1, t.anchor, t.anchor_code, runs,
                          t.nruns, &res),
                 FP8KV_OK);
    cr_expect_eq(res.wrong, 1);
    cr_assert_eq(res.nfirst, 1);
    cr_expect(res.first[0].input == first && !res.first[0].is_scale &&
                  res.first[0].expected == 0x02 && res.first[0].got == 0x03,
              "input 0x%08x: %s expected %02x got %02x (want 0x%08x element 02 got 03)",
              res.first[0].input, res.first[0].is_scale ? "scale" : "element",
              res.first[0].expected, res.first[0].got, first);
}
#endif

/* ---- fp8kv check-block end to end ---- */

/* Whether a message reports the plugin's crash: "crashed (signal 11 ...)", or under ASan, whose
 * handler reports the fault itself and exits, "exited with status". */
static int crash_reported(const char *message)
{
    return message &&
           (strstr(message, "crashed (signal 11") || strstr(message, "exited with status"));
}

static int check_block(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s check-block --vectors %s/vectors %s 2>&1", FP8KV_EXE,
             FP8KV_SOURCE_DIR, args);
    return test_run(cmd, out, size);
}

static int check_plugin(const char *name, const char *args, char *out, size_t size)
{
    char a[1024];
    snprintf(a, sizeof a, "--plugin %s/fp8kv_block_plugin_%s.so %s", FP8KV_PLUGIN_DIR, name, args);
    return check_block(a, out, size);
}

Test(check_block_cli, the_example_plugin_is_conformant)
{
    static char out[1 << 16];
    static const char *const clean[] = {"mxfp4_none", "mxfp4_rceil_none", "nvfp4_none"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(check_plugin(clean[i], "--sweep none --blocks 4000", out, sizeof out), 0,
                     "%s: %s", clean[i], out);
        cr_expect(strstr(out, "verdict=conformant"), "%s", out);
    }
}

Test(check_block_cli, planted_faults_are_found)
{
    static char out[1 << 16];
    static const struct {
        const char *plugin, *args, *line;
    } cases[] = {
        /* 2^-127 * 1.25 * 2^0 .. : mxfp4 ties away: 0x00a00000 is 1.25 at X = -126 */
        {"mxfp4_ties_away", "--sweep 01 --blocks 0",
         "input 0x00a00000: element expected 02 got 03"},
        /* the golden vectors' grid ties at scale 1: 0.25 (0x3e800000) is the tie 0 | 0.5 */
        {"mxfp4_ties_away", "--sweep none --blocks 0",
         "input 0x3e800000 (scale 7f): expected 00 got 01"},
        {"nvfp4_nv_pow2", "--sweep none --blocks 4000", "scale expected"},
        {"nvfp4_nv_unsaturated", "--sweep none --blocks 4000", "scale expected 7e got 7f"},
        {"mxfp4_rceil_rceil_as_floor", "--sweep none --blocks 4000", "scale expected"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(check_plugin(cases[i].plugin, cases[i].args, out, sizeof out), 1, "%s: %s",
                     cases[i].plugin, out);
        cr_expect(strstr(out, cases[i].line), "%s: no '%s' in\n%s", cases[i].plugin, cases[i].line,
                  out);
        cr_expect(strstr(out, "verdict=nonconformant"), "%s", out);
    }
}

Test(check_block_cli, a_crashing_plugin_is_named_not_fatal)
{
    static char out[1 << 16];
    cr_expect_eq(check_plugin("mxfp4_crash", "--sweep 7f --blocks 0", out, sizeof out), 4, "%s",
                 out);
    cr_expect(crash_reported(out), "%s", out);
    cr_expect(strstr(out, "the harness is intact"), "%s", out);
}

/* Found by the second hostile campaign: the block host gave a full piece (32,768 blocks) no
 * canary, and none after the scales: an nvfp4 plugin writing one byte past its elements only
 * in such a call, or writing scales[nblocks], was "conformant". Every output ends at a guard
 * page now, whatever the piece size. */
Test(check_block_cli, bug20261203_writes_past_a_full_piece_or_the_scales_were_not_caught)
{
    static char out[1 << 16];
    const struct {
        const char *plugin, *says;
    } cases[] = {
        {"nvfp4_full_piece_overrun", "wrote past the end of elements, an output of 524288 bytes "
                                     "(byte 0 after it) while encoding blocks 0 .. 32767"},
        {"nvfp4_scales_overrun", "wrote past the end of scales, an output of"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(check_plugin(cases[i].plugin, "--sweep none --blocks 40000", out, sizeof out),
                     4, "%s: %s", cases[i].plugin, out);
        cr_expect(strstr(out, cases[i].says), "%s: %s", cases[i].plugin, out);
        cr_expect_null(strstr(out, "verdict="), "%s: %s", cases[i].plugin, out);
    }
}

/* Found by the extended campaign: workers are forked one after another, so the second inherited
 * the first one's shared memory, writable and unfenced: a plugin could corrupt the requests of
 * another worker. A new worker unmaps every other worker's memory (and closes their
 * descriptors) before it loads the plugin. */
Test(check_block_cli, bug20261203_a_worker_could_reach_another_workers_memory)
{
    static char out[1 << 16];
    /* the sweep spreads over both workers: the second one is where the first one's memory was
     * (scale code 01: 69 million inputs, chunks enough for both) */
    cr_expect_eq(
        check_plugin("mxfp4_other_worker", "--sweep 01 --blocks 0 --threads 2", out, sizeof out), 0,
        "%s", out);
    cr_expect(strstr(out, "verdict=conformant"), "%s", out);
}

Test(check_block_cli, bad_arguments_exit_2)
{
    static char out[1 << 14];
    static const struct {
        const char *args, *message;
    } cases[] = {
        {"--format mxfp5", "unknown block format 'mxfp5'; did you mean 'mxfp4'?"},
        {"--format mxfp4 --rule rne", "--rule rne is not a rule of mxfp4 (its rules: floor, "
                                      "rceil, even)"},
        {"--format nvfp4 --rule floor", "--rule floor is not a rule of nvfp4 (its rules: rne, "
                                        "ceil, 4over6)"},
        {"--format mxfp4 --rule rceel", "unknown rule of mxfp4 'rceel'; did you mean 'rceil'?"},
        {"--format nvfp4 --rule 4ovr6", "did you mean '4over6'? (valid: rne, ceil, 4over6)"},
        {"--format nvfp4 --model f3", "--model: unknown model 'f3'; did you mean 'f32'?"},
        {"--format nvfp4 --target gpu", "--target: unknown value 'gpu'"},
        {"--format nvfp4 --global-scale 0", "--global-scale 0: G must be a finite f32 > 0"},
        {"--format nvfp4 --global-scale -0", "--global-scale -0: G must be a finite f32 > 0"},
        {"--format nvfp4 --global-scale -2", "--global-scale -2: G must be a finite f32 > 0"},
        {"--format nvfp4 --global-scale inf", "--global-scale inf: G must be a finite f32 > 0"},
        {"--format nvfp4 --global-scale nan", "--global-scale nan: G must be a finite f32 > 0"},
        {"--format nvfp4 --global-scale 1e39", "--global-scale 1e39: G must be a finite f32 > 0"},
        {"--format nvfp4 --global-scale two", "--global-scale two: 'two' is not a valid f32"},
        {"--format mxfp4 --global-scale 2", "--global-scale is for nvfp4, not mxfp4"},
        {"--plugin " FP8KV_PLUGIN_DIR "/fp8kv_block_plugin_mxfp4_none.so --global-scale 2",
         "--global-scale is for nvfp4, not mxfp4"},
        {"--format mxfp4 --sweep ff", "'ff' is not a scale code of mxfp4"},
        {"--format mxfp4 --sweep garbage", "'garbage' is not a scale code of mxfp4"},
        {"--format mxfp4 --sweep ''", "--sweep '': all, none, or up to 8 hex scale codes"},
        {"--format mxfp4 --sweep 7f,,80", "--sweep '7f,,80'"},
        {"--format mxfp4 --sweep 1,2,3,4,5,6,7,8,9", "at most 8"},
        {"--format mxfp4 --sweep 7f@2", "@G is for nvfp4"},
        {"--format nvfp4 --sweep 38@0", "--global-scale 0: G must be a finite f32 > 0"},
        {"--format nvfp4 --sweep 38@", "--global-scale"},
        {"--format mxfp4 --blocks x", "--blocks x: an unsigned integer 0 .. 100000000"},
        {"--format mxfp4 --blocks -1", "--blocks -1: an unsigned integer 0 .. 100000000"},
        {"--format mxfp4 --blocks 100000001", "--blocks 100000001: an unsigned integer"},
        {"--format mxfp4 --seed -1", "--seed -1: an unsigned integer"},
        {"--format mxfp4 --seed 1x", "--seed 1x: an unsigned integer"},
        {"--format mxfp4 --threads 0", "--threads"},
        {"--format mxfp4 --timeout -1", "--timeout"},
        {"--format mxfp4 --formt mxfp4", "--formt"},
        {"", "say which codec"},
        {"--plugin /nonexistent.so", "/nonexistent.so"},
        {"--plugin " FP8KV_SOURCE_DIR "/README.md", "README.md"},
        {"--plugin " FP8KV_BINARY_DIR "/conformance/fp8kv_bits_plugin.so",
         "does not export fp8kv_block_codec_v1"},
        {"--plugin " FP8KV_PLUGIN_DIR "/fp8kv_block_plugin_mxfp4_none.so --format mxfp4",
         "--plugin takes format, rule and model from the plugin"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(check_block(cases[i].args, out, sizeof out), 2, "%s: %s", cases[i].args, out);
        cr_expect(strstr(out, cases[i].message), "%s: no '%s' in\n%s", cases[i].args,
                  cases[i].message, out);
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s check-block --format mxfp4 --vectors '' 2>&1", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--vectors: an empty directory name"), "%s", out);
    cr_expect_eq(check_plugin("mxfp4_bad_rule", "", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "rule \"rne\" is not one mxfp4 takes"), "%s", out);
    cr_expect_eq(check_plugin("mxfp4_abi2", "", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "block-codec ABI version 2, this fp8kv reads version 1"), "%s", out);
    cr_expect_eq(check_block("--help", out, sizeof out), 0);
    cr_expect(strstr(out, "usage: fp8kv check-block"), "%s", out);
}

/* ---- the golden vectors: damaged is an error, absent is "not run" ---- */

#define DAMAGED FP8KV_TEST_TMP "/t_block_codec_vectors"
#define RESHAPED FP8KV_TEST_TMP "/t_block_codec_reshaped"

/* A fresh writable copy of the golden vectors at dir (one per test: tests run in parallel). */
static void fresh_copy(const char *dir)
{
    char cmd[1024], out[256];
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && mkdir -p %s && cp -r %s/vectors/. %s && chmod -R u+w %s", dir, dir,
             FP8KV_SOURCE_DIR, dir, dir);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", cmd);
}

/* check-block of mxfp4 against the vectors at DAMAGED (--vectors, or $FP8KV_VECTORS when env). */
static int check_damaged(int env, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s%s%s check-block %s%s --format mxfp4 --blocks 10 --sweep none 2>&1",
             env ? "FP8KV_VECTORS=" : "", env ? DAMAGED " " : "", FP8KV_EXE,
             env ? "" : "--vectors ", env ? "" : DAMAGED);
    return test_run(cmd, out, size);
}

Test(check_block_cli, damaged_vectors_exit_2_naming_the_file)
{
    static char out[1 << 14];
    static const struct {
        const char *damage, *message;
    } cases[] = {
        {"truncate -s 100 blocks/mxfp4/input.npy", "blocks/mxfp4/input.npy: 100 bytes"},
        {"printf x | dd of=blocks/mxfp4/floor_elements.npy bs=1 seek=300 conv=notrunc",
         "blocks/mxfp4/floor_elements.npy: sha256"},
        {"rm blocks/mxfp4/decode.npy", "blocks/mxfp4/decode.npy: cannot open"},
        {"rm -r blocks/mxfp4", "blocks/mxfp4/"},
        {"rm -r blocks", "blocks/"},
    };
    fresh_copy(DAMAGED);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int env = 0; env < 2; env++) { /* each damage to a fresh blocks/ */
            char cmd[1024];
            snprintf(cmd, sizeof cmd,
                     "cd %s && rm -rf blocks && cp -r %s/vectors/blocks . && chmod -R u+w blocks "
                     "&& %s 2>&1",
                     DAMAGED, FP8KV_SOURCE_DIR, cases[i].damage);
            cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
            cr_expect_eq(check_damaged(env, out, sizeof out), 2, "%s: %s", cases[i].damage, out);
            cr_expect(strstr(out, cases[i].message), "%s: no '%s' in\n%s", cases[i].damage,
                      cases[i].message, out);
            cr_expect(strstr(out, "not the verified truth"), "%s", out);
            cr_expect(!strstr(out, "verdict="), "%s: judged anyway:\n%s", cases[i].damage, out);
        }
    /* the intact copy is judged, and a named directory that is not there is an error */
    fresh_copy(DAMAGED);
    cr_expect_eq(check_damaged(0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "vectors  ") && strstr(out, "checked, 0 wrong"), "%s", out);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s check-block --format mxfp4 --vectors /nonexistent/v 2>&1",
             FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "/nonexistent/v/MANIFEST.json"), "%s", out);
}

/* A file that passes the checksums but disagrees in shape (a directory whose sums were made
 * after the damage): the judge names it. */
Test(check_block_cli, a_vector_file_of_the_wrong_shape_is_named)
{
    fresh_copy(RESHAPED);
    struct fp8kv_npy es = {0};
    const char *path = RESHAPED "/blocks/mxfp4/floor_scale.npy";
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_U8, 1, 0, &es), 0, "%s", fp8kv_last_error());
    const size_t n = es.shape[0] - 1;
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U8, 1, &n, es.data), 0, "%s", fp8kv_last_error());
    fp8kv_npy_free(&es);
    struct fp8kv_block_under_test s = fp8kv_block_cpu(fp8kv_block_format_by_name("mxfp4"),
                                                      FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 1);
    struct fp8kv_block_report r;
    memset(&r, 0, sizeof r);
    cr_expect_eq(fp8kv_block_judge_vectors(&s, RESHAPED, &r), FP8KV_ERR);
    char want[256];
    snprintf(want, sizeof want, "%s: shape [%zu], not [%zu]", path, n, n + 1);
    cr_expect(strstr(fp8kv_last_error(), want), "%s", fp8kv_last_error());
}

/* No directory named and none found: the vectors check is "not run", never a pass, in the
 * text and in the JSON (not gated, its detail saying why). */
Test(check_block_cli, no_vectors_found_is_not_run)
{
    struct stat st;
    if (stat("/usr/local/share/fp8kv/vectors", &st) == 0)
        cr_skip_test("installed vectors would be found");
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/t_block_codec_empty && cd %s/t_block_codec_empty && env -u "
             "FP8KV_VECTORS %s check-block --format mxfp4 --blocks 10 --sweep none --json %s/"
             "t_block_codec_none.json 2>&1",
             FP8KV_TEST_TMP, FP8KV_TEST_TMP, FP8KV_EXE, FP8KV_TEST_TMP);
    cr_expect_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "vectors  not run: no vector directory found"), "%s", out);
    cr_expect(strstr(out, "note: vectors: looked in"), "%s", out);
    size_t len;
    char *json = (char *)test_read_bytes(FP8KV_TEST_TMP "/t_block_codec_none.json", &len);
    cr_expect(strstr(json, "\"detail\": \"not run: no vector directory found"), "%s", json);
    cr_expect(strstr(json, "\"gated\": false,\n      \"mismatches\": 0,\n      \"name\": "
                           "\"block-vectors\""),
              "%s", json);
    free(json);
}

/* check-block --json: the shared verdict document (docs/json.md), its counts those of the
 * text; a nonconformant plugin's failure lines under their check; a crash's partial document. */
Test(check_block_cli, json_is_the_verdict_document)
{
    static char out[1 << 16];
    char args[2048];
    snprintf(
        args, sizeof args,
        "%s check-block --vectors %s/vectors --plugin %s/fp8kv_block_plugin_mxfp4_ties_away.so "
        "--sweep 01 --blocks 100 --json - 2>/dev/null",
        FP8KV_EXE, FP8KV_SOURCE_DIR, FP8KV_PLUGIN_DIR);
    cr_expect_eq(test_run(args, out, sizeof out), 1, "%s", out);
    json_error_t err;
    json_t *doc = json_loads(out, 0, &err);
    cr_assert_not_null(doc, "%s: %s", err.text, out);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "schema")), "fp8kv-verdict");
    cr_expect_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "command")), "check-block");
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "nonconformant");
    cr_expect_str_eq(json_string_value(json_object_get(doc, "format")), "mxfp4");
    cr_expect_str_eq(json_string_value(json_object_get(doc, "rule")), "floor");
    json_t *checks = json_object_get(doc, "checks");
    cr_assert_eq(json_array_size(checks), 4);
    static const char *const names[] = {"block-vectors", "block-decode", "block-sweep",
                                        "block-blocks"};
    json_int_t cases = 0, mismatches = 0;
    for (size_t i = 0; i < 4; i++) {
        json_t *c = json_array_get(checks, i);
        cr_expect_str_eq(json_string_value(json_object_get(c, "name")), names[i]);
        cases += json_integer_value(json_object_get(c, "cases"));
        mismatches += json_integer_value(json_object_get(c, "mismatches"));
        const json_t *fails = json_object_get(c, "failures");
        cr_expect(json_is_true(json_object_get(c, "passed")) ==
                      (json_integer_value(json_object_get(c, "mismatches")) == 0),
                  "%s", names[i]);
        int named = 0; /* the sweep's lines name the input the plugin gets wrong */
        for (size_t k = 0; k < json_array_size(fails); k++)
            named |= strstr(json_string_value(json_array_get(fails, k)),
                            "input 0x00a00000: element expected 02 got 03") != NULL;
        cr_expect(named == (i == 2), "%s: %s", names[i], out);
    }
    cr_expect_eq(cases, json_integer_value(json_object_get(doc, "cases")));
    cr_expect_eq(mismatches, json_integer_value(json_object_get(doc, "mismatches")));
    cr_expect(mismatches > 0);
    json_decref(doc);
    /* a crash: exit 4, the document says "subject failed" and the error */
    snprintf(args, sizeof args,
             "%s check-block --plugin %s/fp8kv_block_plugin_mxfp4_crash.so --sweep 7f --blocks 0 "
             "--json - 2>/dev/null",
             FP8KV_EXE, FP8KV_PLUGIN_DIR);
    cr_expect_eq(test_run(args, out, sizeof out), 4, "%s", out);
    doc = json_loads(out, 0, &err);
    cr_assert_not_null(doc, "%s: %s", err.text, out);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "subject failed");
    cr_expect(crash_reported(json_string_value(json_object_get(doc, "error"))), "%s", out);
    json_decref(doc);
}

/* ---- fp8kv audit --block ---- */

/* rceil's X is the smallest with amax <= max_elem 2^X: under the exact model it never clips, so
 * its clipped count is 0 on every data set; floor clips (amax in (7, 8) 2^X for mxfp4 and
 * Gaussian blocks of 32 have such amax often); a side against itself differs nowhere. */
Test(audit_block, floor_against_rceil_and_itself)
{
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("mxfp4");
    struct fp8kv_block_under_test floor_s =
        fp8kv_block_cpu(f, FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 1);
    struct fp8kv_block_under_test rceil_s =
        fp8kv_block_cpu(f, FP8KV_RULE_RCEIL, FP8KV_BLOCK_MODEL_EXACT, 1);
    const struct fp8kv_block_under_test *pair[2] = {&floor_s, &rceil_s};
    const struct fp8kv_block_under_test *same[2] = {&floor_s, &floor_s};
    for (int d = 0; d < FP8KV_DATA_COUNT; d++) {
        struct fp8kv_block_audit_row row;
        cr_assert_eq(fp8kv_block_audit_run(pair, (enum fp8kv_block_dataset)d, 3, 2048, &row),
                     FP8KV_OK);
        cr_expect_eq(row.clipped[1], 0, "%s: rceil clipped %llu", fp8kv_block_dataset_names[d],
                     (unsigned long long)row.clipped[1]);
        cr_expect(row.clipped[0] > 0, "%s: floor clipped none", fp8kv_block_dataset_names[d]);
        cr_expect(row.blocks_differ > 0 && row.elements_differ > 0);
        cr_expect(row.nmse[0] > 0 && row.nmse[0] < 0.1 && row.nmse[1] > 0 && row.nmse[1] < 0.1);
        cr_assert_eq(fp8kv_block_audit_run(same, (enum fp8kv_block_dataset)d, 3, 2048, &row),
                     FP8KV_OK);
        cr_expect_eq(row.blocks_differ, 0);
        cr_expect_eq(row.nmse[0], row.nmse[1]);
    }
}

/* The data sets are what the seed makes: the same seed the same values, another seed others;
 * the kv set's loud channels are 10-100x the others' (per-channel RMS over many rows). */
Test(audit_block, data_sets_are_seeded_and_kv_has_loud_channels)
{
    enum { ROWS = 2048, C = 128 };
    static float a[ROWS * C], b[ROWS * C];
    fp8kv_block_dataset_fill(FP8KV_DATA_KV, 5, ROWS * C, a);
    fp8kv_block_dataset_fill(FP8KV_DATA_KV, 5, ROWS * C, b);
    cr_expect(memcmp(a, b, sizeof a) == 0);
    fp8kv_block_dataset_fill(FP8KV_DATA_KV, 6, ROWS * C, b);
    cr_expect(memcmp(a, b, sizeof a) != 0);
    /* a quiet channel's mean square is E[z^2] E[row^2] (about 2: the t_4 tail); a loud one's
     * 100 .. 10,000 times that */
    double ms[C] = {0}, quiet = 0;
    for (int i = 0; i < ROWS * C; i++)
        ms[i % C] += (double)a[i] * a[i] / ROWS;
    int loud = 0, nquiet = 0;
    for (int c = 0; c < C; c++)
        if (ms[c] < 20)
            quiet += ms[c], nquiet++;
    quiet /= nquiet;
    for (int c = 0; c < C; c++)
        loud += ms[c] > 50 * quiet;
    cr_expect(loud >= 1 && loud <= 4, "%d loud channels", loud);
}

Test(check_block_cli, audit_block_end_to_end)
{
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s audit --block --format mxfp4 --baseline floor --candidate rceil --blocks 512 "
             "2>&1",
             FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "audit --block mxfp4: floor (block-codec floor exact) -> rceil"), "%s",
              out);
    cr_expect(strstr(out, "\nkv "), "%s", out);
    snprintf(cmd, sizeof cmd,
             "%s audit --block --baseline %s/fp8kv_block_plugin_nvfp4_none.so --candidate "
             "%s/fp8kv_block_plugin_nvfp4_nv_pow2.so --blocks 512 --json - 2>/dev/null",
             FP8KV_EXE, FP8KV_PLUGIN_DIR, FP8KV_PLUGIN_DIR);
    cr_expect_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "\"data\": \"kv\""), "%s", out);
    cr_expect(strstr(out, "\"schema\": \"fp8kv-verdict\""), "%s", out);
    snprintf(cmd, sizeof cmd, "%s audit --block --baseline floor --candidate rne 2>&1", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--format is needed"), "%s", out);
    snprintf(cmd, sizeof cmd,
             "%s audit --block --format mxfp4 --baseline floor --candidate %s/"
             "fp8kv_block_plugin_nvfp4_none.so 2>&1",
             FP8KV_EXE, FP8KV_PLUGIN_DIR);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "is nvfp4, not --format mxfp4"), "%s", out);
}

/* ---- model f32 with a subnormal G (fp8kv/block.h, docs/DESIGN.md §10) ---- */

/* At a scale code s with t = RN32(s G) = 0 (G subnormal), x / t is +-Inf for x != 0, which
 * saturates to +-max_elem, and NaN for x = +-0, which encodes as +0 (code 0x00, also for -0):
 * the oracle says what the spec states, and the codec says what the oracle says. */
Test(block_codec, f32_model_underflowed_scale_product_saturates_and_zeros_are_plus_zero)
{
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("nvfp4");
    const struct fp8kv_element_format *e = f->element;
    static const uint32_t gbits[] = {0x00000001u, 0x00000003u, 0x00000100u, 0x00007fffu};
    static const uint32_t xs[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00400000u,
                                  0x3f800000u, 0xbf800000u, 0x7f7fffffu, 0xff7fffffu};
    int underflows = 0;
    for (size_t g = 0; g < sizeof gbits / sizeof gbits[0]; g++)
        for (unsigned scale = 1; scale < 0x7F; scale++) {
            const float G = fp8kv_f32_from_bits(gbits[g]);
            const float s = (float)fp8kv_bcodec_code_value(fp8kv_bcodec_ue4m3(), scale);
            if (s * G != 0.0f) /* t = RN32(s G), one f32 multiplication */
                continue;
            underflows++;
            for (int rule = FP8KV_RULE_RNE; rule <= FP8KV_RULE_4OVER6; rule++) {
                const struct fp8kv_block_params p = {(enum fp8kv_block_rule)rule,
                                                     FP8KV_BLOCK_MODEL_F32, gbits[g]};
                const struct fp8kv_bcodec_cfg cfg = {FP8KV_NVFP4, (uint8_t)rule,
                                                     FP8KV_BLOCK_MODEL_F32, G};
                for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
                    const uint8_t oracle = fp8kv_oracle_block_element(f, &p, (uint8_t)scale, xs[i]);
                    const uint8_t stated =
                        (xs[i] & 0x7FFFFFFFu) == 0
                            ? 0x00
                            : (uint8_t)((xs[i] >> 31 ? e->sign_bit : 0) | e->max_code);
                    cr_expect_eq(oracle, stated, "G 0x%08x scale %02x x 0x%08x: oracle %02x",
                                 gbits[g], scale, xs[i], oracle);
                    cr_expect_eq(
                        fp8kv_bcodec_element(cfg, (uint8_t)scale, fp8kv_f32_from_bits(xs[i])),
                        oracle, "G 0x%08x scale %02x x 0x%08x", gbits[g], scale, xs[i]);
                }
            }
        }
    cr_expect(underflows > 0, "no scale code underflows t");
}

/* ---- audit --block: its help, its JSON, a crashing side ---- */

/* runs an audit --block with args, the JSON to stdout (parsed into *doc), the text dropped */
static int audit_json(const char *args, json_t **doc)
{
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s audit --block %s --json - 2>/dev/null", FP8KV_EXE, args);
    const int rc = test_run(cmd, out, sizeof out);
    json_error_t err;
    *doc = json_loads(out, 0, &err);
    cr_assert_not_null(*doc, "%s: %s: %s", cmd, err.text, out);
    return rc;
}

Test(audit_block, help_explains_every_column_and_the_data_sets)
{
    static char out[1 << 14];
    cr_assert_eq(test_run(FP8KV_EXE " audit --block --help", out, sizeof out), 0);
    static const char *const says[] = {
        "blocks_differ",
        "elements_differ",
        "nmse_base/_cand",
        "clip_base/_cand",
        "(y - x)^2 / sum of x^2",
        "computed\n                   exactly",
        "(max_elem + half the element step at max_elem) * decoded scale",
        "Box-Muller",
        "probability 1/64",
        "Student t",
        "0x9E3779B97F4A7C15",
        "RN32(set amax / 2688)",
        "crashed or hung"};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        cr_expect(strstr(out, says[i]), "--help lacks '%s':\n%s", says[i], out);
}

/* The JSON's clipped and NMSE are what --help defines, recomputed here from the oracle's codes
 * (mxfp4 floor: S = 2^X exactly, the decode of every code exact at these magnitudes): clipped
 * when amax > (6 + 1) * S, NMSE = sum (y - x)^2 / sum x^2. */
Test(audit_block, json_columns_are_what_help_defines)
{
    enum { N = 256 };
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("mxfp4");
    const struct fp8kv_element_format *e = f->element;
    const struct fp8kv_block_params p = {FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 0x3F800000u};
    json_t *doc;
    cr_assert_eq(audit_json("--format mxfp4 --baseline floor --candidate rceil --blocks 256 "
                            "--seed 3",
                            &doc),
                 0);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "schema")), "fp8kv-verdict");
    cr_expect_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "command")), "audit --block");
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "changed");
    json_t *checks = json_object_get(doc, "checks");
    cr_assert_eq(json_array_size(checks), FP8KV_DATA_COUNT);
    static float x[N * 32];
    const double clip = e->max_value + ldexp(1.0, e->emax - e->man_bits - 1);
    for (int d = 0; d < FP8KV_DATA_COUNT; d++) {
        fp8kv_block_dataset_fill((enum fp8kv_block_dataset)d, 3, N * 32, x);
        uint64_t clipped = 0;
        double err = 0, energy = 0;
        for (int b = 0; b < N; b++) {
            uint8_t s, codes[32];
            fp8kv_oracle_block_encode(f, &p, (const uint32_t *)(const void *)(x + b * 32), &s,
                                      codes);
            double amax = 0;
            for (int i = 0; i < 32; i++) {
                const double xi = x[b * 32 + i];
                const double y =
                    fp8kv_f32_from_bits(fp8kv_oracle_block_decode_one(f, 0x3F800000u, s, codes[i]));
                amax = fabs(xi) > amax ? fabs(xi) : amax;
                err += (y - xi) * (y - xi);
                energy += xi * xi;
            }
            clipped += amax > clip * ldexp(1.0, (int)s - 127);
        }
        json_t *c = json_array_get(checks, (size_t)d);
        cr_expect_str_eq(json_string_value(json_object_get(c, "data")),
                         fp8kv_block_dataset_names[d]);
        cr_expect_eq((uint64_t)json_integer_value(json_object_get(c, "clipped_baseline")), clipped,
                     "%s", fp8kv_block_dataset_names[d]);
        cr_expect(clipped > 0, "%s: floor clipped none", fp8kv_block_dataset_names[d]);
        const double nmse = json_real_value(json_object_get(c, "nmse_baseline"));
        cr_expect(fabs(nmse - err / energy) <= 1e-12 * (err / energy), "%s: %.17g vs %.17g",
                  fp8kv_block_dataset_names[d], nmse, err / energy);
        cr_expect_eq(json_integer_value(json_object_get(c, "cases")), N * 32);
        cr_expect_eq(json_integer_value(json_object_get(c, "mismatches")),
                     json_integer_value(json_object_get(c, "elements_differ")));
        cr_expect(json_is_false(json_object_get(c, "gated")));
    }
    json_decref(doc);
    cr_assert_eq(
        audit_json("--format nvfp4 --baseline rne --candidate rne:exact --blocks 64", &doc), 0);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "identical");
    json_decref(doc);
}

/* A side that crashes: exit 4, the harness intact, the JSON "subject failed" with the error. */
Test(audit_block, a_crashing_plugin_is_named_not_fatal)
{
    static char out[1 << 14];
    char cmd[2048];
    for (int side = 0; side < 2; side++) {
        snprintf(cmd, sizeof cmd,
                 "%s audit --block --format mxfp4 --%s floor --%s "
                 "%s/fp8kv_block_plugin_mxfp4_crash.so --blocks 64 2>&1",
                 FP8KV_EXE, side ? "baseline" : "candidate", side ? "candidate" : "baseline",
                 FP8KV_PLUGIN_DIR);
        cr_expect_eq(test_run(cmd, out, sizeof out), 4, "%s", out);
        cr_expect(crash_reported(out), "%s", out);
        cr_expect(strstr(out, "the harness is intact"), "%s", out);
    }
    json_t *doc;
    snprintf(cmd, sizeof cmd,
             "--format mxfp4 --baseline floor --candidate %s/fp8kv_block_plugin_mxfp4_crash.so "
             "--blocks 64",
             FP8KV_PLUGIN_DIR);
    cr_expect_eq(audit_json(cmd, &doc), 4);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "subject failed");
    cr_expect(crash_reported(json_string_value(json_object_get(doc, "error"))));
    json_decref(doc);
}

Test(audit_block, bad_arguments_exit_2_naming_them)
{
    static char out[1 << 14];
    static const struct {
        const char *args, *message;
    } cases[] = {
        {"--format mxfp4 --baseline flor --candidate rceil",
         "--baseline: unknown rule of mxfp4 'flor'; did you mean 'floor'?"},
        {"--format mxfp4 --baseline floor --candidate rceil:f3",
         "--candidate: unknown model 'f3'; did you mean 'f32'?"},
        {"--format nvfp4 --baseline floor --candidate rne",
         "--baseline floor is not a rule of nvfp4 (its rules: rne, ceil, 4over6)"},
        {"--format mxfp5 --baseline floor --candidate rceil", "did you mean 'mxfp4'"},
        {"--format mxfp4 --baseline floor --candidate rceil --seed -1", "--seed -1"},
        {"--format mxfp4 --baseline floor --candidate rceil --blocks 0",
         "--blocks 0: an unsigned integer 1 .. 10000000"},
        {"--format mxfp4 --baseline floor --candidate rceil --blocks -5", "--blocks -5"},
        {"--format mxfp4 --baseline floor --candidate rceil --target gpu",
         "--target: unknown value 'gpu'"},
        {"--format mxfp4 --baseline floor", "--baseline and --candidate are both required"},
        {"--format mxfp4 --baseline floor --candidate /nonexistent.so", "/nonexistent.so"},
        {"--format mxfp4 --baseline floor --candidate " FP8KV_PLUGIN_DIR
         "/fp8kv_block_plugin_mxfp4_abi2.so",
         "block-codec ABI version 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s audit --block %s 2>&1", FP8KV_EXE, cases[i].args);
        cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s: %s", cases[i].args, out);
        cr_expect(strstr(out, cases[i].message), "%s: no '%s' in\n%s", cases[i].args,
                  cases[i].message, out);
    }
}

/* ---- regressions ---- */

/* Fixed in 6a069c7: 4over6's exact comparison aligned a zero by its exponent (2^-149), below
 * the smallest exponent of the nonzero values, a negative shift (UBSan fails the old code in
 * the sanitizer build). {6, 0.3, 0 ...}: 0.3 is 0.5 under s6 = 1 and 0 under s4 = 1.5, so the
 * zero is aligned; the codes are the oracle's. */
Test(block_codec, bug20261201_four_over_six_block_with_a_zero_shifted_negatively)
{
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("nvfp4");
    float x[16] = {6.0f, 0.3f};
    uint32_t bits[16];
    for (int i = 0; i < 16; i++)
        bits[i] = fp8kv_f32_bits(x[i]);
    for (int model = FP8KV_BLOCK_MODEL_EXACT; model <= FP8KV_BLOCK_MODEL_F32; model++) {
        const struct fp8kv_block_params p = {FP8KV_RULE_4OVER6, (enum fp8kv_block_model)model,
                                             0x3F800000u};
        const struct fp8kv_bcodec_cfg cfg = {FP8KV_NVFP4, FP8KV_RULE_4OVER6, (uint8_t)model, 1.0f};
        uint8_t want_scale, want[16], scale, got[16];
        fp8kv_oracle_block_encode(f, &p, bits, &want_scale, want);
        fp8kv_bcodec_encode_block(cfg, x, &scale, got);
        cr_expect_eq(scale, want_scale, "model %d", model);
        cr_expect_arr_eq(got, want, sizeof got, "model %d", model);
    }
}

/* Fixed in 4ffbf1d: under model f32 with t = RN32(s G) = 0 (G the smallest subnormal, s = 2^-9),
 * a zero's quotient 0 / 0 is NaN, which the codec encoded as a zero with the NaN's sign bit
 * (0x08 for +0 too on x86, whose 0 / 0 has it set); block.h says +0 (code 0x00) for +0 and -0
 * alike, and so does the oracle. */
Test(block_codec, bug20261201_f32_model_zero_over_an_underflowed_scale_kept_a_sign)
{
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("nvfp4");
    const float G = 0x1p-149f, s = 0x1p-9f; /* UE4M3 code 0x01: the smallest subnormal */
    cr_assert_eq(s * G, 0.0f, "t does not underflow");
    const struct fp8kv_bcodec_cfg cfg = {FP8KV_NVFP4, FP8KV_RULE_RNE, FP8KV_BLOCK_MODEL_F32, G};
    const struct fp8kv_block_params p = {FP8KV_RULE_RNE, FP8KV_BLOCK_MODEL_F32, 0x00000001u};
    static const uint32_t zeros[] = {0x00000000u, 0x80000000u};
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(fp8kv_bcodec_element(cfg, 0x01, fp8kv_f32_from_bits(zeros[i])), 0x00,
                     "x 0x%08x", zeros[i]);
        cr_expect_eq(fp8kv_oracle_block_element(f, &p, 0x01, zeros[i]), 0x00, "x 0x%08x", zeros[i]);
    }
}

/* Fixed in 7f38fe1: check-block's option table had lost --vectors, which its help listed and its
 * code read: giving it crashed the option parser (SIGSEGV on the table's empty last entry). */
Test(check_block_cli, bug20261201_check_block_vectors_option_was_unknown)
{
    static char out[1 << 14];
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s check-block --format mxfp4 --blocks 0 --sweep none --vectors %s/vectors 2>&1",
             FP8KV_EXE, FP8KV_SOURCE_DIR);
    cr_expect_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "verdict=conformant"), "%s", out);
}

/* Fixed in 37fc2a4: check-block's --seed took a sign (strtoull read -1 as 2^64 - 1); an
 * unsigned count takes none. */
Test(check_block_cli, bug20261201_check_block_seed_took_a_sign)
{
    static char out[1 << 14];
    cr_expect_eq(check_block("--format mxfp4 --seed -1 --blocks 0 --sweep none", out, sizeof out),
                 2, "%s", out);
    cr_expect(strstr(out, "--seed -1"), "%s", out);
}

/* Fixed in 37fc2a4: check-block's --sweep skipped an empty code between two commas ("7f,,80")
 * silently and swept the others; every code of the list is one or more hex digits. */
Test(check_block_cli, bug20261201_check_block_sweep_took_an_empty_code)
{
    static char out[1 << 14];
    cr_expect_eq(check_block("--format mxfp4 --sweep 7f,,80 --blocks 0", out, sizeof out), 2, "%s",
                 out);
    cr_expect(strstr(out, "--sweep '7f,,80'"), "%s", out);
}

/* Fixed in 1435cf1: audit --block's --seed took a sign (strtoull read -1 as 2^64 - 1), as
 * check-block's had. */
Test(audit_block, bug20261201_audit_block_seed_took_a_sign)
{
    static char out[1 << 14];
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s audit --block --format mxfp4 --baseline floor --candidate rceil --blocks 16 "
             "--seed -1 2>&1",
             FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--seed -1"), "%s", out);
}
