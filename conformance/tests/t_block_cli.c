/* t_block_cli.c — `fp8kv encode-block` and `fp8kv decode-block`: their output lines against
 * the block oracle (fp8kv/block_oracle.h) called here, their options and their errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/block_oracle.h"
#include "fp8kv/spec.h"
#include "testutil.h"

#define FP8KV FP8KV_EXE
#define BLOCKS 40 /* per format, rule and model */

TestSuite(block_cli, .timeout = 120);

static uint32_t bits_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* A seeded block: mixed magnitudes, some zeros; written as hex bits or as decimals. */
static void random_block(uint32_t *x, int n, uint64_t *seed)
{
    const int top = (int)(fp8kv_splitmix64(seed) % 20) - 10;
    for (int i = 0; i < n; i++) {
        const uint64_t r = fp8kv_splitmix64(seed);
        const float m = 1.0f + (float)(r & 0xFFFFFF) * 0x1p-24f;
        x[i] = (r >> 30) % 7 == 0
                   ? (uint32_t)(r >> 40 & 1) << 31
                   : bits_of(ldexpf((r >> 40) & 1 ? -m : m, top - (int)(r >> 50) % 8));
    }
}

#define ROW16 "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"

/* run_ok: runs cmdline, which must exit 0; its stdout into out. */
static void run_ok(const char *cmdline, char *out, size_t size)
{
    const int rc = test_run(cmdline, out, size);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, cmdline);
}

Test(block_cli, encode_block_lines_are_the_oracle_codes)
{
    static char out[1 << 16], want[1 << 16], cmd[1024];
    const char *path = FP8KV_TEST_TMP "/t_block_cli_encode.txt";
    uint64_t seed = 0xC11B10C0u;
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[id];
        for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++)
            for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
                if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r))
                    continue;
                const float g = f->scale_kind == FP8KV_SCALE_UE4M3 ? 0.3f : 1.0f;
                const struct fp8kv_block_params p = {(enum fp8kv_block_rule)r,
                                                     (enum fp8kv_block_model)m, bits_of(g)};
                FILE *in = fopen(path, "w");
                cr_assert_not_null(in);
                size_t w = 0;
                fprintf(in, "# a comment, then a blank line\n\n");
                for (int b = 0; b < BLOCKS; b++) {
                    uint32_t x[FP8KV_BLOCK_MAX];
                    uint8_t s, e[FP8KV_BLOCK_MAX];
                    random_block(x, f->block_size, &seed);
                    for (int i = 0; i < f->block_size; i++) /* decimals every other block */
                        if (b % 2) {
                            float v;
                            memcpy(&v, &x[i], sizeof v);
                            fprintf(in, " %.9g", (double)v);
                        } else
                            fprintf(in, " 0x%08x", x[i]);
                    fputc('\n', in);
                    fp8kv_oracle_block_encode(f, &p, x, &s, e);
                    w += (size_t)snprintf(want + w, sizeof want - w, "%x", s);
                    for (int i = 0; i < f->block_size; i++)
                        w += (size_t)snprintf(want + w, sizeof want - w, " %x", e[i]);
                    w += (size_t)snprintf(want + w, sizeof want - w, "\n");
                }
                fclose(in);
                snprintf(cmd, sizeof cmd,
                         FP8KV " encode-block --format %s --rule %s --model %s%s --input %s",
                         f->name, fp8kv_block_rule_names[r], fp8kv_block_model_names[m],
                         f->scale_kind == FP8KV_SCALE_UE4M3 ? " --global-scale 0.3" : "", path);
                run_ok(cmd, out, sizeof out);
                cr_expect_str_eq(out, want, "%s", cmd);
            }
    }
    remove(path);
}

/* The scale codes --scale-code is run with for f: the ends, scale 1 and a seeded one, never
 * the NaN code. */
static void fixed_scale_codes(const struct fp8kv_block_format *f, uint64_t *seed, uint8_t *codes)
{
    const unsigned nan = fp8kv_block_scale_nan_code(f);
    const unsigned count = (unsigned)fp8kv_block_scale_code_count(f);
    const unsigned one = f->scale_kind == FP8KV_SCALE_E8M0 ? 0x7F : 0x38;
    const unsigned top = nan == count - 1 ? count - 2 : count - 1;
    codes[0] = 0x00;
    codes[1] = (uint8_t)one;
    codes[2] = (uint8_t)top;
    unsigned r;
    do
        r = (unsigned)(fp8kv_splitmix64(seed) % count);
    while (r == nan);
    codes[3] = (uint8_t)r;
}

Test(block_cli, encode_block_scale_code_is_the_oracle_element_cast)
{
    static char out[1 << 16], want[1 << 16], cmd[1024];
    const char *path = FP8KV_TEST_TMP "/t_block_cli_scale_code.txt";
    uint64_t seed = 0x5CA1EC0Du;
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[id];
        uint8_t codes[4];
        fixed_scale_codes(f, &seed, codes);
        for (int k = 0; k < 4; k++)
            for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
                const float g = f->scale_kind == FP8KV_SCALE_UE4M3 ? 0.3f : 1.0f;
                const struct fp8kv_block_params p = {f->default_rule, (enum fp8kv_block_model)m,
                                                     bits_of(g)};
                FILE *in = fopen(path, "w");
                cr_assert_not_null(in);
                size_t w = 0;
                for (int b = 0; b < BLOCKS; b++) {
                    uint32_t x[FP8KV_BLOCK_MAX];
                    random_block(x, f->block_size, &seed);
                    if (b == 0) { /* Inf (saturates), the smallest subnormal, -0 */
                        x[0] = 0x7F800000u, x[1] = 0xFF800000u, x[2] = 0x00000001u;
                        x[3] = 0x80000000u;
                    }
                    w += (size_t)snprintf(want + w, sizeof want - w, "%x", codes[k]);
                    for (int i = 0; i < f->block_size; i++) {
                        fprintf(in, " 0x%08x", x[i]);
                        w += (size_t)snprintf(want + w, sizeof want - w, " %x",
                                              fp8kv_oracle_block_element(f, &p, codes[k], x[i]));
                    }
                    fputc('\n', in);
                    w += (size_t)snprintf(want + w, sizeof want - w, "\n");
                }
                fclose(in);
                snprintf(cmd, sizeof cmd,
                         FP8KV " encode-block --format %s --scale-code %02x --model %s%s "
                               "--input %s",
                         f->name, codes[k], fp8kv_block_model_names[m],
                         f->scale_kind == FP8KV_SCALE_UE4M3 ? " --global-scale 0.3" : "", path);
                run_ok(cmd, out, sizeof out);
                cr_expect_str_eq(out, want, "%s", cmd);
            }
    }
    remove(path);
}

/* Model f32 with a subnormal G (fp8kv/block.h): scale code 01 (s = 2^-9) at G = 2^-149 has
 * t = RN32(2^-158) = 0: nonzero x saturate to +-6 (0x7, 0xf), +-0 give +0 (code 0), while the
 * exact model keeps -0's code; the lines are the oracle's and what the spec states. */
Test(block_cli, encode_block_f32_model_with_an_underflowed_scale_product)
{
    char out[256], want[256];
    static const uint32_t x[16] = {0x00000001u, 0x80000000u, 0x00000000u,
                                   0x80000001u, 0x3f800000u, 0xff7fffffu};
    const struct fp8kv_block_format *f = &fp8kv_block_formats[FP8KV_NVFP4];
    for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
        const struct fp8kv_block_params p = {FP8KV_RULE_RNE, (enum fp8kv_block_model)m,
                                             0x00000001u};
        size_t w = (size_t)snprintf(want, sizeof want, "1");
        for (int i = 0; i < 16; i++) {
            const uint8_t code = fp8kv_oracle_block_element(f, &p, 0x01, x[i]);
            const uint8_t stated =
                (x[i] & 0x7FFFFFFFu) == 0
                    ? (m == FP8KV_BLOCK_MODEL_F32 ? 0x0 : (uint8_t)(x[i] >> 31 << 3))
                    : (uint8_t)(x[i] >> 31 << 3 | 0x7);
            cr_expect_eq(code, stated, "model %s x 0x%08x: %x", fp8kv_block_model_names[m], x[i],
                         code);
            w += (size_t)snprintf(want + w, sizeof want - w, " %x", code);
        }
        snprintf(want + w, sizeof want - w, "\n");
        char cmd[512];
        snprintf(
            cmd, sizeof cmd,
            "echo '0x00000001 0x80000000 0 0x80000001 1 0xff7fffff 0 0 0 0 0 0 0 0 0 0' | " FP8KV
            " encode-block --format nvfp4 --scale-code 01 --model %s --global-scale 0x00000001",
            fp8kv_block_model_names[m]);
        run_ok(cmd, out, sizeof out);
        cr_expect_str_eq(out, want, "%s", cmd);
    }
}

Test(block_cli, decode_block_lines_are_the_oracle_values)
{
    static char out[1 << 16], want[1 << 16], line[512], cmd[1024];
    uint64_t seed = 0xDEC0B10Cu;
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = &fp8kv_block_formats[id];
        const uint32_t g = bits_of(f->scale_kind == FP8KV_SCALE_UE4M3 ? 1234.5f : 1.0f);
        const char *path = FP8KV_TEST_TMP "/t_block_cli_decode.txt";
        FILE *in = fopen(path, "w");
        cr_assert_not_null(in);
        uint32_t y[BLOCKS][FP8KV_BLOCK_MAX];
        size_t w = 0;
        for (int b = 0; b < BLOCKS; b++) {
            const uint8_t s =
                (uint8_t)(fp8kv_splitmix64(&seed) % (uint64_t)fp8kv_block_scale_code_count(f));
            fprintf(in, "%x", s);
            for (int i = 0; i < f->block_size; i++) {
                const uint8_t c = (uint8_t)(fp8kv_splitmix64(&seed) %
                                            (uint64_t)fp8kv_element_code_count(f->element));
                fprintf(in, " 0x%02x", c);
                y[b][i] = fp8kv_oracle_block_decode_one(f, g, s, c);
                w += (size_t)snprintf(want + w, sizeof want - w, "%s0x%08x", i ? " " : "", y[b][i]);
            }
            fputc('\n', in);
            w += (size_t)snprintf(want + w, sizeof want - w, "\n");
        }
        fclose(in);
        const char *gs = f->scale_kind == FP8KV_SCALE_UE4M3 ? " --global-scale 1234.5" : "";
        snprintf(cmd, sizeof cmd, FP8KV " decode-block --format %s%s --hex < %s", f->name, gs,
                 path);
        run_ok(cmd, out, sizeof out);
        cr_expect_str_eq(out, want, "%s", cmd);
        /* the decimals read back to the same f32 (NaN by class and sign) */
        snprintf(cmd, sizeof cmd, FP8KV " decode-block --format %s%s --input %s", f->name, gs,
                 path);
        run_ok(cmd, out, sizeof out);
        char *save = NULL, *l = strtok_r(out, "\n", &save);
        for (int b = 0; b < BLOCKS; b++, l = strtok_r(NULL, "\n", &save)) {
            cr_assert_not_null(l, "%s: line %d missing", f->name, b + 1);
            snprintf(line, sizeof line, "%s", l);
            char *s2 = NULL, *word = strtok_r(line, " ", &s2);
            for (int i = 0; i < f->block_size; i++, word = strtok_r(NULL, " ", &s2)) {
                cr_assert_not_null(word);
                const float v = strtof(word, NULL);
                const uint32_t got = bits_of(v);
                const int same = isnan(v) ? (y[b][i] & 0x7FFFFFFFu) > 0x7F800000u &&
                                                (got >> 31) == (y[b][i] >> 31)
                                          : got == y[b][i];
                cr_expect(same, "%s line %d value %d: '%s', want 0x%08x", f->name, b + 1, i, word,
                          y[b][i]);
            }
        }
        remove(path);
    }
}

Test(block_cli, defaults_specials_and_help)
{
    char out[4096];
    /* nvfp4 without --rule and --global-scale is rne at G = 1: 6 / 6 = 1 is e4m3 0x38, 6 is
     * element 0x7; the oracle says the same */
    const struct fp8kv_block_params p = {FP8KV_RULE_RNE, FP8KV_BLOCK_MODEL_EXACT, 0x3F800000u};
    uint32_t x[16] = {bits_of(6.0f)};
    uint8_t s, e[16];
    fp8kv_oracle_block_encode(&fp8kv_block_formats[FP8KV_NVFP4], &p, x, &s, e);
    cr_assert_eq(s, 0x38);
    cr_assert_eq(e[0], 0x7);
    run_ok("echo '6 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -0' | " FP8KV " encode-block --format nvfp4", out,
           sizeof out);
    cr_expect_str_eq(out, "38 7 0 0 0 0 0 0 0 0 0 0 0 0 0 0 8\n");
    /* an Inf or NaN anywhere: the scale's NaN code, elements 0 */
    run_ok("echo '1 inf 0 0 0 0 0 0 0 0 0 0 0 0 0 0' | " FP8KV " encode-block --format nvfp4", out,
           sizeof out);
    cr_expect_str_eq(out, "7f 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
    run_ok("echo 'ff 1 2 3 4 5 6 7 8 9 a b c d e f 0 " ROW16 "' | " FP8KV
           " decode-block --format mxfp6_e2m3 | cut -d' ' -f1-2",
           out, sizeof out);
    cr_expect_str_eq(out, "nan nan\n");
    cr_expect_eq(test_run(FP8KV " encode-block --help", out, sizeof out), 0);
    cr_expect(strstr(out, "usage: fp8kv encode-block"), "%s", out);
    cr_expect_eq(test_run(FP8KV " decode-block -h", out, sizeof out), 0);
    cr_expect(strstr(out, "usage: fp8kv decode-block"), "%s", out);
    cr_expect_eq(test_run(FP8KV " --help", out, sizeof out), 0);
    cr_expect(strstr(out, "encode-block") && strstr(out, "decode-block"), "%s", out);
}

/* expect_usage: cmdline exits 2 and its stderr holds each of the fragments (NULL-ended). */
static void expect_usage(const char *cmdline, ...)
{
    char out[4096], full[1024];
    snprintf(full, sizeof full, "%s 2>&1 >/dev/null", cmdline);
    cr_expect_eq(test_run(full, out, sizeof out), 2, "%s", cmdline);
    va_list ap;
    va_start(ap, cmdline);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        cr_expect(strstr(out, frag), "%s: message '%s' lacks '%s'", cmdline, out, frag);
    va_end(ap);
}

Test(block_cli, errors_exit_2_naming_the_problem)
{
    expect_usage(FP8KV " encode-block < /dev/null", "--format is required", NULL);
    expect_usage(FP8KV " encode-block --format mxfp3 < /dev/null", "did you mean 'mxfp4'", NULL);
    expect_usage(FP8KV " encode-block --format mxfp4 --rule flor < /dev/null",
                 "did you mean 'floor'", NULL);
    expect_usage(FP8KV " encode-block --format mxfp4 --rule 4over6 < /dev/null",
                 "not a rule of mxfp4", "floor, rceil, even", NULL);
    expect_usage(FP8KV " encode-block --format nvfp4 --rule even < /dev/null",
                 "not a rule of nvfp4", NULL);
    expect_usage(FP8KV " encode-block --format nvfp4 --model f3 < /dev/null", "did you mean 'f32'",
                 NULL);
    expect_usage(FP8KV " encode-block --format mxfp8_e4m3 --global-scale 2 < /dev/null",
                 "nvfp4 only", NULL);
    static const char *bad_g[] = {"0", "-1", "inf", "nan", "-0", "1e39"};
    for (size_t i = 0; i < sizeof bad_g / sizeof bad_g[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd,
                 FP8KV " decode-block --format nvfp4 --global-scale %s < /dev/null", bad_g[i]);
        expect_usage(cmd, "finite f32 > 0", NULL);
    }
    expect_usage(FP8KV " encode-block --format nvfp4 --global-scale two < /dev/null",
                 "--global-scale", NULL);
    expect_usage(FP8KV " decode-block --format mxfp4 --rule floor < /dev/null", "does not apply",
                 NULL);
    expect_usage(FP8KV " encode-block --format nvfp4 --input /nonexistent/x", "cannot open", NULL);
    expect_usage(FP8KV " encode-block --format nvfp4 stray < /dev/null", NULL);
    /* the line and the problem */
    expect_usage("printf '" ROW16 "\\n1 2 3\\n' | " FP8KV " encode-block --format nvfp4",
                 "stdin line 2", "3 values, nvfp4 takes exactly 16", NULL);
    expect_usage("printf '" ROW16 " 0\\n' | " FP8KV " encode-block --format nvfp4", "stdin line 1",
                 "more than 16 values", NULL);
    expect_usage("printf '1 2 3\\n' | " FP8KV " encode-block --format mxfp4", "exactly 32 per line",
                 NULL);
    expect_usage("printf '0 0 0 0 0 0 0 zero 0 0 0 0 0 0 0 0\\n' | " FP8KV
                 " encode-block --format nvfp4",
                 "value 8", "zero", NULL);
    expect_usage("printf '38 " ROW16 "\\n80 " ROW16 "\\n' | " FP8KV " decode-block --format nvfp4",
                 "stdin line 2", "the scale 0x80 is out of range", NULL);
    expect_usage("printf '38 0 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0\\n' | " FP8KV
                 " decode-block --format nvfp4",
                 "element 3 0x10 is out of range", NULL);
    expect_usage("printf '7f 40 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 " ROW16 "\\n' | " FP8KV
                 " decode-block --format mxfp6_e3m2",
                 "element 1 0x40 is out of range (codes 0..0x3f)", NULL);
    expect_usage(FP8KV " encode-block --format mxfp4 --scale-code ff < /dev/null",
                 "--scale-code ff is the NaN code of mxfp4's scale", NULL);
    expect_usage(FP8KV " encode-block --format nvfp4 --scale-code 0x7f < /dev/null",
                 "NaN code of nvfp4's scale", NULL);
    expect_usage(FP8KV " encode-block --format nvfp4 --scale-code 80 < /dev/null",
                 "--scale-code 0x80 is out of range (codes 0..0x7f)", NULL);
    expect_usage(FP8KV " encode-block --format mxfp4 --scale-code 100 < /dev/null",
                 "--scale-code '100' is not a code", NULL);
    expect_usage(FP8KV " encode-block --format mxfp4 --scale-code 7f --rule rceil < /dev/null",
                 "no --rule applies", NULL);
    expect_usage(FP8KV " decode-block --format mxfp4 --scale-code 7f < /dev/null", "does not apply",
                 NULL);
    expect_usage("printf '" ROW16 " 1 2 3 nan 0 0 0 0 0 0 0 0 0 0 0 0\\n' | " FP8KV
                 " encode-block --format mxfp6_e3m2 --scale-code 7f",
                 "stdin line 1", "value 20 (nan) is NaN", NULL);
    expect_usage("printf '7f xyz\\n' | " FP8KV " decode-block --format mxfp4", "2 codes", NULL);
    expect_usage("printf '7g " ROW16 "\\n' | " FP8KV " decode-block --format nvfp4",
                 "the scale '7g' is not a code", NULL);
}
