/* t_intq.c — the integer block formats' oracle (fp8kv/intq_oracle.h) against an independent
 * formulation: the steps of fp8kv/intq.h in the machine's own f32 arithmetic (this tree compiles
 * with -ffp-contract=off, so every operation below is one RN32; fmaf where the format fuses)
 * and the subjects' own f16 conversions (fp8kv/codec.h, integer arithmetic), without MPFR.
 * Encoding: seeded blocks of every magnitude (subnormal to near FLT_MAX), blocks built on every tie
 * and every integer boundary of each rounding, zero, constant, sign- tied and tiny blocks (where
 * the reciprocal overflows); decoding: every code of each format under every f16 scale. Then `fp8kv
 * encode-block` / `decode-block` on these formats: their lines are the oracle's, and bad input is
 * named (exit 2). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/intq_oracle.h"
#include "testutil.h"

#define MAX_BLOCK 32

static uint32_t bits_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* ---- the independent formulation ---- */

/* q from w as f says: its rounding, then the clamp; NaN 0 (clamped), +-Inf the clamp's ends */
static int independent_integer(const struct fp8kv_intq_format *f, float w)
{
    if (isnan(w))
        return 0 < f->code_min ? f->code_min : 0;
    float r;
    switch (f->rounding) {
    case FP8KV_INTQ_RNE: r = rintf(w); break;
    case FP8KV_INTQ_HALF_AWAY: r = roundf(w); break;
    case FP8KV_INTQ_TRUNC_HALF: r = truncf(w + 0.5f); break;
    default: r = truncf(w); break;
    }
    if (r < (float)f->code_min)
        return f->code_min;
    if (r > (float)f->code_max)
        return f->code_max;
    return (int)r;
}

static void independent_encode(const struct fp8kv_intq_format *f, const float *x, uint16_t *scale,
                               uint8_t *codes)
{
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < f->block_size; i++)
        if (amax < fabsf(x[i])) {
            amax = fabsf(x[i]);
            vmax = x[i];
        }
    const float d = (f->source == FP8KV_INTQ_AMAX ? amax : vmax) / f->divisor;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < f->block_size; i++) {
        float w = f->fused ? fmaf(x[i], id, f->offset) : x[i] * id;
        if (f->offset != 0.0f && !f->fused)
            w = w + f->offset;
        const int q = independent_integer(f, w);
        codes[i] = f->code_min < 0 ? (uint8_t)(q & 0xFF) : (uint8_t)q;
    }
    *scale = fp8kv_f32_to_f16_rne(d);
}

static float independent_decode(const struct fp8kv_intq_format *f, uint16_t scale, uint8_t code)
{
    const int q = f->code_min < 0 ? (int)(int8_t)code : (int)code;
    return (float)(q - f->zero) * fp8kv_f16_to_f32(scale);
}

/* ---- encoding ---- */

static uint64_t rng_state = 0x1234567887654321ull;

static uint32_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* a finite f32 of magnitude around 2^e (e in -149..127) and random sign */
static float random_near(int e)
{
    const float m = 1.0f + (float)(next_random() & 0xFFFFFF) / 16777216.0f;
    const float x = ldexpf(m, e);
    return (next_random() & 1) ? -x : x;
}

/* compares one block's encoding, oracle against independent; counts and reports mismatches */
static int expect_same_block(const struct fp8kv_intq_format *f, const float *x)
{
    uint32_t bits[MAX_BLOCK];
    for (int i = 0; i < f->block_size; i++)
        bits[i] = bits_of(x[i]);
    uint16_t want_scale, got_scale;
    uint8_t want[MAX_BLOCK], got[MAX_BLOCK];
    independent_encode(f, x, &want_scale, want);
    cr_assert_eq(fp8kv_oracle_intq_encode(f, bits, &got_scale, got), 0);
    int same = want_scale == got_scale && memcmp(want, got, (size_t)f->block_size) == 0;
    if (!same) {
        for (int i = 0; i < f->block_size && want[i] == got[i]; i++)
            continue;
        cr_log_error("%s: block starting 0x%08x (scale %04x / %04x)", f->name, bits[0], got_scale,
                     want_scale);
        for (int i = 0; i < f->block_size; i++)
            if (want[i] != got[i])
                cr_log_error("  element %d 0x%08x: oracle %02x, independent %02x", i, bits[i],
                             got[i], want[i]);
    }
    return same;
}

Test(intq, seeded_blocks_of_every_magnitude_match_the_independent_steps)
{
    for (int fi = 0; fi < FP8KV_INTQ_FORMAT_COUNT; fi++) {
        const struct fp8kv_intq_format *f = &fp8kv_intq_formats[fi];
        int wrong = 0;
        for (int b = 0; b < 20000; b++) {
            float x[MAX_BLOCK];
            const int top = (int)(next_random() % 277) - 149; /* -149 .. 127 */
            for (int i = 0; i < f->block_size; i++) {
                const int e = top - (int)(next_random() % 30);
                x[i] = e < -149 ? 0.0f : random_near(e);
            }
            wrong += !expect_same_block(f, x);
        }
        cr_expect_eq(wrong, 0, "%s: %d of 20000 blocks differ", f->name, wrong);
    }
}

/* blocks whose w falls on every half-integer (the ties) and every integer (the boundaries of
 * trunc) of the element range, or just beside them: the scale source divisor * u first, then
 * every multiple k / 2 of u (id = RN32(1 / u) exact for u = 2^e, not for the others) */
static const float tie_units[] = {0x1p-140f, 0x1p-126f, 0x1p-60f, 0.5f,  1.0f,  128.0f,
                                  0x1p60f,   0x1p100f,  3.0f,     5.0f,  7.0f,  10.0f,
                                  0.1f,      3e-3f,     1e-30f,   1e30f, 11.0f, 13.0f};
#define TIE_UNITS (sizeof tie_units / sizeof tie_units[0])

/* tie_block: block number b of unit u for f into x; 0 past the last block of u */
static int tie_block(const struct fp8kv_intq_format *f, size_t u, int b, float *x)
{
    const int halves = (int)(2.0f * fabsf(f->divisor)), k0 = -halves + b * (f->block_size - 1);
    if (k0 > halves)
        return 0;
    x[0] = f->divisor * tie_units[u];
    for (int i = 1; i < f->block_size; i++) {
        const int k = k0 + i - 1;
        x[i] = k > halves ? 0.0f : (float)k * 0.5f * tie_units[u];
    }
    return 1;
}

Test(intq, every_tie_and_integer_boundary_matches)
{
    for (int fi = 0; fi < FP8KV_INTQ_FORMAT_COUNT; fi++) {
        const struct fp8kv_intq_format *f = &fp8kv_intq_formats[fi];
        int wrong = 0, blocks = 0;
        float x[MAX_BLOCK];
        for (size_t u = 0; u < TIE_UNITS; u++)
            for (int b = 0; tie_block(f, u, b, x); b++) {
                wrong += !expect_same_block(f, x);
                blocks++;
            }
        cr_expect_eq(wrong, 0, "%s: %d of %d blocks differ", f->name, wrong, blocks);
    }
}

Test(intq, zero_constant_tied_and_tiny_blocks_match)
{
    static const float fills[] = {
        0.0f,      -0.0f,     1.0f,    -3.0f,          0x1p-149f, -0x1p-149f,        1e-40f,
        0x1p-121f, 0x1p-122f, 3.0e38f, -3.4028235e38f, 65504.0f,  65520.0f * 127.0f, 1e-3f};
    for (int fi = 0; fi < FP8KV_INTQ_FORMAT_COUNT; fi++) {
        const struct fp8kv_intq_format *f = &fp8kv_intq_formats[fi];
        for (size_t a = 0; a < sizeof fills / sizeof fills[0]; a++)
            for (int pattern = 0; pattern < 4; pattern++) {
                float x[MAX_BLOCK];
                for (int i = 0; i < f->block_size; i++) {
                    switch (pattern) {
                    case 0: x[i] = fills[a]; break;                       /* constant */
                    case 1: x[i] = i % 2 ? -fills[a] : fills[a]; break;   /* tied magnitudes */
                    case 2: x[i] = i == 5 ? fills[a] : 0.0f; break;       /* one element */
                    default: x[i] = fills[a] * ((float)(i - 16) / 16.0f); /* a ramp */
                    }
                }
                cr_expect(expect_same_block(f, x), "%s fill %g pattern %d", f->name,
                          (double)fills[a], pattern);
            }
    }
}

Test(intq, the_first_of_tied_magnitudes_sets_q4_0s_sign)
{
    const struct fp8kv_intq_format *f = fp8kv_intq_format_by_name("llamacpp_q4_0");
    cr_assert_not_null(f);
    uint32_t x[MAX_BLOCK] = {0};
    x[3] = bits_of(2.0f);
    x[9] = bits_of(-2.0f);
    uint16_t scale;
    uint8_t codes[MAX_BLOCK];
    cr_assert_eq(fp8kv_oracle_intq_encode(f, x, &scale, codes), 0);
    cr_expect_eq(scale, 0xb400, "d = 2 / -8 = -0.25 is f16 b400, not %04x", scale); /* -0.25 */
    cr_expect_eq(codes[3], 0, "2 * -4 + 8.5 = 0.5 truncates to 0: %02x", codes[3]);
    cr_expect_eq(codes[9], 15, "-2 * -4 + 8.5 = 16.5 clamps to 15: %02x", codes[9]);
    x[3] = bits_of(-2.0f);
    x[9] = bits_of(2.0f);
    cr_assert_eq(fp8kv_oracle_intq_encode(f, x, &scale, codes), 0);
    cr_expect_eq(scale, 0x3400);
}

/* the fused variant is not vacuous: beside trunc's boundaries it writes other codes than q4_0 */
Test(intq, fusing_the_product_and_the_sum_changes_q4_0s_codes)
{
    const struct fp8kv_intq_format *plain = fp8kv_intq_format_by_name("q4_0"),
                                   *fused = fp8kv_intq_format_by_name("llamacpp_q4_0_fma");
    cr_assert(plain && fused && fused->fused && !plain->fused);
    int differ = 0, blocks = 0;
    float x[MAX_BLOCK];
    for (size_t u = 0; u < TIE_UNITS; u++)
        for (int b = 0; tie_block(plain, u, b, x); b++, blocks++) {
            uint32_t bits[MAX_BLOCK];
            for (int i = 0; i < MAX_BLOCK; i++)
                bits[i] = bits_of(x[i]);
            uint16_t s1, s2;
            uint8_t c1[MAX_BLOCK], c2[MAX_BLOCK];
            cr_assert_eq(fp8kv_oracle_intq_encode(plain, bits, &s1, c1), 0);
            cr_assert_eq(fp8kv_oracle_intq_encode(fused, bits, &s2, c2), 0);
            cr_assert_eq(s1, s2, "the scale does not depend on the fusing");
            differ += memcmp(c1, c2, MAX_BLOCK) != 0;
        }
    cr_expect_gt(differ, 0, "q4_0 and q4_0_fma agree on all %d blocks beside the boundaries",
                 blocks);
    cr_log_info("q4_0 and q4_0_fma differ on %d of %d blocks", differ, blocks);
}

Test(intq, a_non_finite_input_has_no_code)
{
    for (int fi = 0; fi < FP8KV_INTQ_FORMAT_COUNT; fi++) {
        const struct fp8kv_intq_format *f = &fp8kv_intq_formats[fi];
        uint32_t x[MAX_BLOCK] = {0};
        uint16_t scale;
        uint8_t codes[MAX_BLOCK];
        x[7] = 0xFF800000u;
        cr_expect_eq(fp8kv_oracle_intq_encode(f, x, &scale, codes), FP8KV_ERR);
        cr_expect(strstr(fp8kv_last_error(), "element 7 (f32 0xff800000) is not finite"), "%s",
                  fp8kv_last_error());
    }
}

/* ---- decoding: every code under every f16 scale ---- */

Test(intq, every_code_under_every_f16_scale_decodes_as_the_independent_product, .timeout = 300)
{
    for (int fi = 0; fi < FP8KV_INTQ_FORMAT_COUNT; fi++) {
        const struct fp8kv_intq_format *f = &fp8kv_intq_formats[fi];
        const int codes = fp8kv_intq_code_count(f);
        long wrong = 0;
        for (uint32_t s = 0; s < 0x10000u; s += fi == FP8KV_Q8_0 ? 3u : 1u) /* q8_0: a third */
            for (int c = 0; c < codes; c++) {
                int ok;
                const uint32_t got = fp8kv_oracle_intq_decode_one(f, (uint16_t)s, (uint8_t)c, &ok);
                const float want = independent_decode(f, (uint16_t)s, (uint8_t)c);
                const int same =
                    isnan(want) ? (got & 0x7FFFFFFFu) > 0x7F800000u : got == bits_of(want);
                if (ok && same)
                    continue;
                if (wrong++ < 5)
                    cr_log_error("%s scale %04x code %02x: oracle 0x%08x, independent %a", f->name,
                                 s, c, got, (double)want);
            }
        cr_expect_eq(wrong, 0, "%s: %ld (scale, code) pairs differ", f->name, wrong);
        int ok = 1;
        if (f->code_min >= 0) {
            fp8kv_oracle_intq_decode_one(f, 0x3C00, (uint8_t)(f->code_max + 1), &ok);
            cr_expect_eq(ok, 0, "%s: byte %02x accepted", f->name, f->code_max + 1);
        }
    }
}

/* ---- the CLI ---- */

static char out[1 << 16];

Test(intq_cli, encode_block_lines_are_the_oracles_and_decode_block_reads_them_back)
{
    const char *in = FP8KV_TEST_TMP "/intq_in.txt";
    FILE *f = fopen(in, "w");
    cr_assert_not_null(f);
    fprintf(f, "# a tie of every kind\n127");
    for (int i = 1; i < 32; i++)
        fprintf(f, " %d.5", i - 16);
    fprintf(f, "\n-8 0.49999997 -0.5 7.9");
    for (int i = 4; i < 32; i++)
        fprintf(f, " 0");
    fprintf(f, "\n");
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s encode-block --format q8_0 --input %s", FP8KV_EXE, in);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strncmp(out, "3c00 7f f0 f1 f2", 16) == 0, "%s", out); /* -15.5: roundf -16 */
    snprintf(cmd, sizeof cmd,
             "%s encode-block --format llamacpp_q4_0 --input %s | %s decode-block --format "
             "q4_0 --hex",
             FP8KV_EXE, in, FP8KV_EXE);
    cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
    /* line 2: d = -8 / -8 = 1; 0.49999997 + 8.5 rounds to 9 in f32: value 1 */
    cr_expect(strstr(out, "\n0xc1000000 0x3f800000 0x00000000 0x40e00000 "), "%s", out);
}

/* d = 3 (vmax -24), x = -22.5: x * RN32(1/3) is -7.5 - 2.2e-7, which rounds to -7.5; + 8.5 is
 * 1 in two roundings (code 1) and 0.99999976 fused (code 0) */
Test(intq_cli, q4_0_and_its_fused_variant_part_beside_a_boundary)
{
    char cmd[1024];
    for (int fused = 0; fused <= 1; fused++) {
        snprintf(cmd, sizeof cmd, "echo '-24 -22.5%s' | %s encode-block --format %s",
                 " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", FP8KV_EXE,
                 fused ? "llamacpp_q4_0_fma" : "q4_0");
        cr_assert_eq(test_run(cmd, out, sizeof out), 0, "%s", out);
        cr_expect(strncmp(out, fused ? "4200 0 0 8 " : "4200 0 1 8 ", 11) == 0, "%s", out);
    }
}

Test(intq_cli, bad_input_is_named)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "echo 'inf%s' | %s encode-block --format q8_0 2>&1",
             " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "stdin line 1: q8_0: element 0 (f32 0x7f800000) is not finite"), "%s",
              out);
    snprintf(cmd, sizeof cmd, "echo '1 2 3' | %s encode-block --format q4_0 2>&1", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "3 values, q4_0 takes exactly 32 per line"), "%s", out);
    snprintf(cmd, sizeof cmd, "echo '3c00 10%s' | %s decode-block --format q4_0 2>&1",
             " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "element 1 0x10 is out of range (codes 0..0xf)"), "%s", out);
    snprintf(cmd, sizeof cmd, "echo '13c00 0' | %s decode-block --format q8_0 2>&1", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    snprintf(cmd, sizeof cmd, "%s encode-block --format q8_0 --model f32 </dev/null 2>&1",
             FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--model does not apply to q8_0"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s encode-block --format q8_O </dev/null 2>&1", FP8KV_EXE);
    cr_expect_eq(test_run(cmd, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'q8_0'"), "%s", out);
}
