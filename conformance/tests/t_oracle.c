/* t_oracle.c — the MPFR oracle against facts of the formats (docs/DESIGN.md §1).
 *
 * MPFR-style: named checks (check_<what>), regressions named bugYYYYMMDD_<what they catch>
 * after the day the bug was found, and a teardown that fails when an oracle call left MPFR's
 * exponent range changed. */
#include <criterion/criterion.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"

/* A deliberately odd range: any oracle function that forgets to restore it is caught. */
static const mpfr_exp_t odd_emin = -12345, odd_emax = 6789;

static void set_odd_range(void)
{
    mpfr_set_emin(odd_emin);
    mpfr_set_emax(odd_emax);
}

static void range_restored(void)
{
    cr_assert_eq(mpfr_get_emin(), odd_emin, "an oracle call left emin changed");
    cr_assert_eq(mpfr_get_emax(), odd_emax, "an oracle call left emax changed");
}

TestSuite(oracle, .init = set_odd_range, .fini = range_restored);

static const struct fp8kv_profile *profile(const char *name)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name(name);
    cr_assert_not_null(p, "no profile %s", name);
    return p;
}

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static const struct fp8kv_format *fn = &fp8kv_formats[FP8KV_E4M3FN];
static const struct fp8kv_format *fnuz = &fp8kv_formats[FP8KV_E4M3FNUZ];
static const struct fp8kv_format *e5 = &fp8kv_formats[FP8KV_E5M2];
static const struct fp8kv_format *e5uz = &fp8kv_formats[FP8KV_E5M2FNUZ];

Test(oracle, check_decode_extremes)
{
    cr_assert_eq(fp8kv_oracle_decode_f32(fn, 0x7E), bits_of(448.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(fn, 0x01), bits_of(0x1p-9f));
    cr_assert_eq(fp8kv_oracle_decode_f32(fn, 0x08), bits_of(0x1p-6f));
    cr_assert_eq(fp8kv_oracle_decode_f32(fn, 0x80), 0x80000000u, "0x80 is -0 in e4m3fn");
    cr_assert_eq(fp8kv_oracle_decode_f32(fn, 0x7F), 0x7FC00000u, "0x7F is NaN, not 480");
    cr_assert_eq(fp8kv_oracle_decode_f32(fn, 0xFF), 0xFFC00000u);
    cr_assert_eq(fp8kv_oracle_decode_f32(fnuz, 0x7F), bits_of(240.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(fnuz, 0x01), bits_of(0x1p-10f));
    cr_assert_eq(fp8kv_oracle_decode_f32(fnuz, 0x80), 0xFFC00000u, "0x80 is the fnuz NaN");
    cr_assert_eq(fp8kv_oracle_decode_f32(fnuz, 0xFF), bits_of(-240.0f));
    /* e5m2 (OCP): IEEE-like, 0x7C is Inf and 0x7D..0x7F NaN */
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0x7B), bits_of(57344.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0x01), bits_of(0x1p-16f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0x04), bits_of(0x1p-14f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0x3C), bits_of(1.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0x80), 0x80000000u, "0x80 is -0 in e5m2");
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0x7C), 0x7F800000u, "0x7C is +Inf");
    cr_assert_eq(fp8kv_oracle_decode_f32(e5, 0xFC), 0xFF800000u, "0xFC is -Inf");
    for (unsigned q = 0x7D; q <= 0x7F; q++) {
        cr_assert_eq(fp8kv_oracle_decode_f32(e5, (uint8_t)q), 0x7FC00000u, "0x%02x is NaN", q);
        cr_assert_eq(fp8kv_oracle_decode_f32(e5, (uint8_t)(q | 0x80)), 0xFFC00000u);
    }
    /* e5m2fnuz: bias 16, every magnitude finite, 0x80 the only NaN */
    cr_assert_eq(fp8kv_oracle_decode_f32(e5uz, 0x7F), bits_of(57344.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5uz, 0x7C), bits_of(32768.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5uz, 0x01), bits_of(0x1p-17f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5uz, 0x40), bits_of(1.0f));
    cr_assert_eq(fp8kv_oracle_decode_f32(e5uz, 0x80), 0xFFC00000u, "0x80 is the fnuz NaN");
    cr_assert_eq(fp8kv_oracle_decode_f32(e5uz, 0xFF), bits_of(-57344.0f));
}

/* Boundaries of the e5m2 formats: 61440 is the midpoint of 57344 (0x7B / 0x7E, odd mantissa)
 * and the unrepresentable 65536, so it and everything above overflow; below it, 57344. */
Test(oracle, check_e5m2_boundaries)
{
    uint32_t b[256];
    cr_assert_eq(fp8kv_oracle_boundaries(e5, b), 0, "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_boundary_count(e5), 0x7D);
    cr_assert_eq(b[0x7C], bits_of(61440.0f), "first overflowing f32 0x%08x", b[0x7C]);
    cr_assert_eq(b[1], bits_of(0x1p-17f) + 1, "above half the smallest subnormal (a tie to 0)");
    cr_assert_eq(fp8kv_oracle_boundaries(e5uz, b), 0, "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_boundary_count(e5uz), 0x81);
    cr_assert_eq(b[0x80], bits_of(61440.0f));
    cr_assert_eq(b[1], bits_of(0x1p-18f) + 1);
}

Test(oracle, check_decode_monotone_and_symmetric)
{
    for (int f = 0; f < FP8KV_FORMAT_COUNT; f++) {
        const struct fp8kv_format *fmt = &fp8kv_formats[f];
        float prev = -1.0f;
        for (unsigned q = 0; q <= fmt->max_code; q++) {
            uint32_t b = fp8kv_oracle_decode_f32(fmt, (uint8_t)q);
            float v;
            memcpy(&v, &b, sizeof v);
            cr_assert_gt(v, prev, "%s: decode(0x%02x) not above its predecessor", fmt->name, q);
            prev = v;
            if (q != 0)
                cr_assert_eq(fp8kv_oracle_decode_f32(fmt, (uint8_t)(q | 0x80)), b | 0x80000000u);
        }
    }
}

Test(oracle, check_roundtrip_every_code)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        for (int q = 0; q < 256; q++) {
            uint8_t got =
                fp8kv_oracle_encode_f32(p, fp8kv_oracle_decode_f32(p->format, (uint8_t)q));
            /* an Inf code comes back as the profile's code of Inf (e5m2_satfinite: ±max), a
             * NaN code as the NaN code of its sign (e5m2's 0x7D and 0x7E: 0x7F) */
            uint8_t want = (uint8_t)q;
            if (fp8kv_is_inf_code(p->format, (uint8_t)q))
                want = fp8kv_infinity_code(p, q >= 0x80);
            if (fp8kv_is_nan_code(p->format, (uint8_t)q))
                want = fp8kv_nan_code(p->format, q >= 0x80);
            cr_assert_eq(got, want, "%s: encode(decode(0x%02x)) = 0x%02x", p->name, q, got);
        }
    }
}

/* The exact values of docs/DESIGN.md §1.4's last paragraph. */
Test(oracle, check_defects_exact_values)
{
    const struct fp8kv_profile *sat = profile("e4m3fn_satfinite"), *nan = profile("e4m3fn_nan");
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, bits_of(464.0f)), 0x7E);
    cr_assert_eq(fp8kv_oracle_encode_f32(nan, bits_of(464.0f)), 0x7E);
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, 0x43E80001u), 0x7E);
    cr_assert_eq(fp8kv_oracle_encode_f32(nan, 0x43E80001u), 0x7F);
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, 0x3C700000u), 0x08, "carry into the normal range");
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, bits_of(0x3p-10f)), 0x02, "subnormal tie, even");
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, bits_of(0x5p-10f)), 0x02, "subnormal tie, even");
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, bits_of(1.0625f)), 0x38,
                 "defect 17 of docs/DESIGN.md §1.4");
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, bits_of(0x1p-10f)), 0x00,
                 "defect 17 of docs/DESIGN.md §1.4");
    cr_assert_eq(fp8kv_oracle_encode_f32(sat, bits_of(470.0f)), 0x7E,
                 "defect 10 of docs/DESIGN.md §1.4");
    cr_assert_eq(fp8kv_oracle_encode_f32(nan, bits_of(470.0f)), 0x7F,
                 "defect 10 of docs/DESIGN.md §1.4");
    cr_assert_eq(fp8kv_oracle_encode_f32(profile("e4m3fnuz_satfinite"), bits_of(248.0f)), 0x7F);
    cr_assert_eq(fp8kv_oracle_encode_f32(profile("e4m3fnuz_nan"), bits_of(248.0f)), 0x80,
                 "248 ties to the even 256, which overflows");
    cr_assert_eq(fp8kv_oracle_encode_f32(profile("e4m3fnuz_nan"), bits_of(247.99998f)), 0x7F);
}

/* defects 7-9 of docs/DESIGN.md §1.4: the scale models disagree on these. */
Test(oracle, check_scale_model_disagreements)
{
    const struct fp8kv_profile *p = profile("e4m3fn_satfinite");
    uint32_t tenth = bits_of(0.1f), three = bits_of(3.0f);
    uint32_t f16_x = fp8kv_widen_to_f32(FP8KV_DTYPE_F16, 0x1334);
    cr_assert_eq(fp8kv_oracle_store(p, FP8KV_MODEL_F32_DIV, f16_x, tenth), 0x05);
    cr_assert_eq(fp8kv_oracle_store(p, FP8KV_MODEL_F16_DIV, f16_x, tenth), 0x04);
    cr_assert_eq(fp8kv_oracle_store(p, FP8KV_MODEL_F32_DIV, 0x3D63FFFFu, three), 0x09);
    cr_assert_eq(fp8kv_oracle_store(p, FP8KV_MODEL_F32_MUL_RECIP, 0x3D63FFFFu, three), 0x0A);
    cr_assert_eq(fp8kv_oracle_store(p, FP8KV_MODEL_F32_DIV, 0x3A333333u, tenth), 0x04);
    cr_assert_eq(fp8kv_oracle_store(p, FP8KV_MODEL_EXACT, 0x3A333333u, tenth), 0x03);
}

Test(oracle, check_special_inputs)
{
    const struct fp8kv_profile *clamp = profile("e4m3fn_satfinite");
    const struct fp8kv_profile *infnan = profile("e4m3fn_satfinite_infnan");
    const struct fp8kv_profile *uz = profile("e4m3fnuz_satfinite");
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, 0xFF800000u), 0xFE, "-Inf clamps to -448");
    cr_assert_eq(fp8kv_oracle_encode_f32(infnan, 0xFF800000u), 0xFF);
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, 0xFFC00000u), 0xFF, "-NaN keeps its sign");
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, 0x7F800001u), 0x7F);
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, 0x80000000u), 0x80, "-0 in e4m3fn");
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, 0x80000001u), 0x80, "-denormal rounds to -0");
    cr_assert_eq(fp8kv_oracle_encode_f32(uz, 0x80000000u), 0x00, "fnuz has no -0");
    cr_assert_eq(fp8kv_oracle_encode_f32(uz, bits_of(-0x1p-12f)), 0x00);
    cr_assert_eq(fp8kv_oracle_encode_f32(uz, 0xFFC00000u), 0x80);
    cr_assert_eq(fp8kv_oracle_encode_f32(uz, 0xFF800000u), 0xFF);
    /* far below the subnormals: defect 4 of docs/DESIGN.md §1.4 */
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, bits_of(5e-23f)), 0x00);
    cr_assert_eq(fp8kv_oracle_encode_f32(clamp, bits_of(1.7e-21f)), 0x00);
}

/* A denormal scale: x / s overflows f32 to Inf, which then follows the Inf policy, while the
 * exact quotient only overflows the format. */
Test(oracle, check_denormal_scale)
{
    const struct fp8kv_profile *infnan = profile("e4m3fn_satfinite_infnan");
    uint32_t s = 0x00000001u, one = bits_of(1.0f);
    cr_assert_eq(fp8kv_oracle_store(infnan, FP8KV_MODEL_F32_DIV, one, s), 0x7F);
    cr_assert_eq(fp8kv_oracle_store(infnan, FP8KV_MODEL_EXACT, one, s), 0x7E);
    cr_assert_eq(fp8kv_oracle_store(infnan, FP8KV_MODEL_F32_DIV, 0x80000000u, s), 0x80);
    /* 0 / 0 is invalid: a positive NaN */
    cr_assert_eq(fp8kv_oracle_store(infnan, FP8KV_MODEL_EXACT, 0, 0), 0x7F);
}

Test(oracle, check_boundaries)
{
    uint32_t b[0x81];
    cr_assert_eq(fp8kv_oracle_boundaries(fn, b), 0);
    cr_assert_eq(b[0], 0u);
    cr_assert_eq(b[1], 0x3A800001u, "2^-10 ties to 0: code 1 starts just above");
    cr_assert_eq(b[2], bits_of(0x3p-10f), "3*2^-10 ties to the even code 2");
    cr_assert_eq(b[0x7E], bits_of(432.0f), "416..448 midpoint 432 ties to the even 448");
    cr_assert_eq(b[0x7F], 0x43E80001u, "the first f32 that overflows");
    cr_assert_eq(fp8kv_oracle_boundaries(fnuz, b), 0);
    cr_assert_eq(b[1], 0x3A000001u);
    cr_assert_eq(b[0x80], bits_of(248.0f), "248 ties to 256 and overflows");
}

Test(oracle, check_read_models)
{
    uint32_t tenth = bits_of(0.1f);
    /* 448 * 0.1f is not an f32: RN32 rounds it */
    mpfr_t v;
    mpfr_init2(v, 64);
    mpfr_set_d(v, 448.0 * (double)0.1f, MPFR_RNDN); /* exact in double: 4 + 24 bits */
    cr_assert_eq(fp8kv_oracle_read(fn, FP8KV_READ_ROUNDED, FP8KV_DTYPE_F32, 0x7E, tenth),
                 fp8kv_oracle_round_f32(v));
    mpfr_clear(v);
    cr_assert_eq(fp8kv_oracle_read(fn, FP8KV_READ_ROUNDED, FP8KV_DTYPE_F16, 0x7E, bits_of(1e30f)),
                 0x7C00u, "f16 output overflows to Inf");
    cr_assert_eq(fp8kv_oracle_read(fn, FP8KV_READ_EXACT, FP8KV_DTYPE_BF16, 0x7E, bits_of(2.0f)),
                 0x4460u, "896 in bf16");
    cr_assert_eq(fp8kv_oracle_read(fn, FP8KV_READ_ROUNDED, FP8KV_DTYPE_F32, 0x80, bits_of(2.0f)),
                 0x80000000u, "-0 stays -0");
    cr_assert_eq(fp8kv_oracle_read(fn, FP8KV_READ_ROUNDED, FP8KV_DTYPE_F32, 0x01, 0x00000001u),
                 0x00000000u, "2^-9 * 2^-149 underflows to +0");
}

/* Where the two read models differ: RN32 then RN16 can double-round. Searching the read
 * vector scales for one such case shows the models are really distinct. */
Test(oracle, check_read_models_differ_somewhere)
{
    int differ = 0;
    for (uint32_t s = 0x3DCCCCCDu; s < 0x3DCCCCCDu + 4096 && !differ; s++)
        for (int q = 1; q < 0x7F && !differ; q++)
            differ = fp8kv_oracle_read(fn, FP8KV_READ_ROUNDED, FP8KV_DTYPE_F16, (uint8_t)q, s) !=
                     fp8kv_oracle_read(fn, FP8KV_READ_EXACT, FP8KV_DTYPE_F16, (uint8_t)q, s);
    cr_assert(differ, "no double rounding found: the read models look identical");
}

Test(oracle, check_parse)
{
    uint32_t bits;
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "0x1.dp+8", &bits), 0);
    cr_assert_eq(bits, bits_of(464.0f));
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "0.1", &bits), 0);
    cr_assert_eq(bits, bits_of(0.1f));
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_F16, "65520", &bits), 0);
    cr_assert_eq(bits, 0x7C00u, "65520 rounds to f16 Inf");
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_BF16, "-nan", &bits), 0);
    cr_assert_eq(bits, 0xFFC0u);
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "1e-46", &bits), 0);
    cr_assert_eq(bits, 0u, "below half the smallest denormal");
    cr_assert_neq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "12abc", &bits), 0);
    cr_assert_neq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "", &bits), 0);
}

/* Regression: overflow must be decided after rounding (AMD's software path tested it before,
 * defect 2 of docs/DESIGN.md §1.4): everything in (448, 464] is 448, nothing in it is NaN. */
Test(oracle, bug20261130_overflow_before_rounding)
{
    const struct fp8kv_profile *nan = profile("e4m3fn_nan");
    for (uint32_t x = bits_of(448.0f); x <= bits_of(464.0f); x += 97)
        cr_assert_eq(fp8kv_oracle_encode_f32(nan, x), 0x7E, "0x%08x", x);
}

/* Fixed in ad4afca: fp8kv_oracle_parse took MPFR's own notations ('@' exponents, 0b binary,
 * @inf@), which strtod and every other tool read otherwise (found by fuzz_cli_input); C's
 * spellings of the same values still parse (0x5p0 = 5 = 0x40a00000, inf = 0x7f800000). */
Test(oracle, bug20261201_parse_took_mpfr_notations)
{
    static const char *const foreign[] = {"0@-1", "1@2", "0b101", "@inf@", "@nan@"};
    uint32_t bits;
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        cr_assert_neq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, foreign[i], &bits), 0, "%s taken",
                      foreign[i]);
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "0x5p0", &bits), 0);
    cr_assert_eq(bits, 0x40A00000u);
    cr_assert_eq(fp8kv_oracle_parse(FP8KV_DTYPE_F32, "inf", &bits), 0);
    cr_assert_eq(bits, 0x7F800000u);
}
