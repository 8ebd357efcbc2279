/* t_block_codec.c — the block codec of fp8kv/block_codec.h judged against the oracle by the
 * block judge (fp8kv/block_judge.h): every format, rule and model (decode of every code pair,
 * seeded whole blocks, a small exhaustive element sweep); the judge catching a planted fault
 * at exactly the inputs it was planted on; and `fp8kv check-block` end to end on the example
 * plugin (examples/engine_block) clean and with planted faults. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/block_codec.h"
#include "fp8kv/block_judge.h"
#include "fp8kv/diag.h"
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

Test(block_codec, every_format_rule_model_against_the_oracle, .timeout = 600)
{
    static const float Gs[] = {1.0f, 0.7f, 0x1.8p-140f, 3e37f};
    for (int fi = 0; fi < FP8KV_BLOCK_FORMAT_COUNT; fi++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[fi];
        for (int rule = 0; rule < FP8KV_BLOCK_RULE_COUNT; rule++) {
            if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule))
                continue;
            for (int model = 0; model < FP8KV_BLOCK_MODEL_COUNT; model++) {
                struct fp8kv_block_subject s = fp8kv_block_subject_cpu(
                    f, (enum fp8kv_block_rule)rule, (enum fp8kv_block_model)model, 2);
                struct fp8kv_block_report r;
                memset(&r, 0, sizeof r);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", f->name, fp8kv_block_rule_names[rule],
                         fp8kv_block_model_names[model]);
                const int nG = f->scale_kind == FP8KV_SCALE_UE4M3 ? 4 : 1;
                for (int g = 0; g < nG; g++) {
                    cr_assert_eq(fp8kv_block_judge_decode(&s, Gs[g], &r), FP8KV_OK);
                    cr_assert_eq(fp8kv_block_judge_blocks(&s, Gs[g], 7 + (uint64_t)g, 3000, &r),
                                 FP8KV_OK);
                }
                if (model == FP8KV_BLOCK_MODEL_EXACT || rule == FP8KV_RULE_RCEIL || nG > 1)
                    cr_assert_eq(fp8kv_block_judge_sweep(&s, small_point(f), &r), FP8KV_OK);
                expect_clean(&r, what);
                cr_expect(r.checked[FP8KV_BLOCK_CHECK_BLOCKS] > 0, "%s: no blocks checked", what);
            }
        }
    }
}

/* A subject that is the CPU codec but for one input: 0x00A00000 (in mxfp4 under X = -126,
 * 0x00A00000 * 2^126 = 1.25, the tie 1 | 1.5 whose even neighbour is 1.0, code 02) encodes to
 * the next code. The sweep must name exactly that input. */
static int planted_encode(void *ctx, int worker, const float *x, size_t nblocks, float G,
                          uint8_t *scales, uint8_t *elements)
{
    const struct fp8kv_block_subject *cpu = ctx;
    int rc = cpu->encode(cpu->ctx, worker, x, nblocks, G, scales, elements);
    for (size_t i = 0; i < nblocks * 32; i++)
        if (fp8kv_f32_bits(x[i]) == 0x00A00000u)
            elements[i]++;
    return rc;
}

Test(block_codec, the_sweep_names_a_planted_fault)
{
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name("mxfp4");
    struct fp8kv_block_subject cpu =
        fp8kv_block_subject_cpu(f, FP8KV_RULE_FLOOR, FP8KV_BLOCK_MODEL_EXACT, 1);
    struct fp8kv_block_subject s = cpu;
    s.ctx = &cpu;
    s.encode = planted_encode;
    s.workers = 1;
    struct fp8kv_block_report r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(fp8kv_block_judge_sweep(&s, (struct fp8kv_block_sweep_point){1, 1.0f}, &r),
                 FP8KV_OK);
    cr_assert_eq(r.wrong[FP8KV_BLOCK_CHECK_SWEEP], 1);
    cr_assert_str_eq(r.lines[0],
                     "sweep scale 01 (G 0x1p+0): input 0x00a00000: element expected 02 got 03");
}

/* ---- fp8kv check-block end to end ---- */

static int check_block(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s check-block %s 2>&1", FP8KV_EXE, args);
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
    cr_expect(strstr(out, "crashed (signal 11"), "%s", out);
    cr_expect(strstr(out, "the harness is intact"), "%s", out);
}

Test(check_block_cli, bad_arguments_exit_2)
{
    static char out[1 << 14];
    static const struct {
        const char *args, *message;
    } cases[] = {
        {"--format mxfp5", "unknown block format 'mxfp5'; did you mean 'mxfp4'?"},
        {"--format mxfp4 --rule rne", "--rule rne: mxfp4 takes floor, rceil or even"},
        {"--format nvfp4 --model f64", "--model"},
        {"--format nvfp4 --global-scale 0", "G must be finite and > 0"},
        {"--format nvfp4 --global-scale inf", "G must be finite and > 0"},
        {"--format mxfp4 --global-scale 2", "--global-scale is for nvfp4"},
        {"--format mxfp4 --sweep ff", "'ff' is not a scale code of mxfp4"},
        {"--format mxfp4 --sweep 7f@2", "@G is for nvfp4"},
        {"--format mxfp4 --blocks x", "--blocks x"},
        {"", "say which codec"},
        {"--plugin /nonexistent.so", "/nonexistent.so"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(check_block(cases[i].args, out, sizeof out), 2, "%s: %s", cases[i].args, out);
        cr_expect(strstr(out, cases[i].message), "%s: no '%s' in\n%s", cases[i].args,
                  cases[i].message, out);
    }
    cr_expect_eq(check_block("--help", out, sizeof out), 0);
    cr_expect(strstr(out, "usage: fp8kv check-block"), "%s", out);
}
