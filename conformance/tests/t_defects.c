/* t_defects.c — the exhaustive sweep catches the defects of docs/DESIGN.md §1.4, and names them.
 *
 * For each of the defect classes 1, 2, 3, 6, 14, 16 and 17, a deliberately broken encoder is
 * written below, modelled on the real bug (each a small function citing its row). Each test
 * sweeps all 2^32 f32 inputs of the broken encoder under a profile where the bug changes
 * bytes, and asserts that the check fails, that the mismatches fall in the input class the
 * defect names and, where the defect is narrow, in no other class (so the report names the
 * right class), and what the first failure lines say. The correct codec passes the same
 * sweeps (the last tests), so the verdict is the bug's and not the sweep's.
 *
 * Built only for the tests: nothing outside this file sees the broken encoders. Run the
 * suite with --verbose to see each sweep's class counts and first failure lines. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/checks.h"
#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/subject.h"
#include "fp8kv/sweep.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"

/* ---- the broken encoders -------------------------------------------------------------------- */

/* Each maps the f32 with bits x to a code under cfg c; everything but the one bug is right. */

/* frexpf as C11 7.12.6.4 defines it, zero included: frexpf(±0) is ±0 with exponent 0. codec.h's
 * fp8kv_frexpf is exact only for positive nonzero finite inputs (the correct codec guards the
 * rest); this adds the C library's zero so the broken codec below sees what engines see, and
 * stays branch-free so an exhaustive sweep of it is quick. row1_frexp_no_zero_guard checks it
 * against libm's. */
static inline float c_frexpf(float a, int *e)
{
    int k;
    const float m = fp8kv_frexpf(a, &k);
    *e = a == 0.0f ? 0 : k;
    return a == 0.0f ? a : m;
}

/* defect 1 of docs/DESIGN.md §1.4: an engine "mirror" codec on frexpf/ldexpf/nearbyintf with no ±0
 * guard. Its normal path writes the exponent field e - 1 + bias and the mantissa field nearbyint(16
 * m) - 8 (the significand 2m in [1, 2) less its hidden bit, in eighths). A zero has frexpf(±0) =
 * (±0, 0), so it takes the normal path with field bias - 1 and mantissa -8, and (field << 3) | -8
 * is 0xF8 in a byte, whatever the sign and the format. The specials and the overflow are handled
 * right (by fp8kv_codec_finish): only the zero is wrong. */
static uint8_t frexp_no_zero_guard(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t sign = (x >> 24) & 0x80u, mag = x & 0x7FFFFFFFu;
    const int bias = fp8kv_codec_bias(c);
    const float a = fp8kv_f32_from_bits(mag);
    int e;
    const float m = c_frexpf(a, &e); /* a = m * 2^e, m in [1/2, 1) */
    const int field = e - 1 + bias;
    /* normal: a carry (mant 8) moves into the exponent field by the addition */
    const int mant = (int)fp8kv_nearbyintf(fp8kv_ldexpf(m, 4)) - 8; /* the bug's -8 at zero */
    const int normal = mant == 8 ? (field + 1) << 3 : (field << 3) | mant;
    /* fp8 subnormal: a in units of 2^(1 - bias - 3), where 8 is the carry into 0x08 */
    const int subnormal = (int)fp8kv_nearbyintf(fp8kv_ldexpf(a, bias + 2));
    const int code = field < 1 ? subnormal : normal;
    const int special = (mag >= 0x7F800000u) | (code == 0) | (code > (int)fp8kv_codec_max_code(c));
    const uint8_t finished = fp8kv_codec_finish(c, sign, mag, (uint32_t)code);
    return special ? finished : (uint8_t)((int)sign | code);
}

/* defect 2 of docs/DESIGN.md §1.4 (AMD amd_hip_fp8.h software path): overflow is judged on the
 * input, before rounding: |x| > max gives the overflow code, so under the nan rule (448, 464]
 * becomes NaN although it rounds to 448. Under satfinite the overflow code is ±max, the right byte.
 */
static uint8_t overflow_before_rounding(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t sign = (x >> 24) & 0x80u, mag = x & 0x7FFFFFFFu;
    const uint32_t max_code = fp8kv_codec_max_code(c);
    const float max = fp8kv_decode_bits(c, (uint8_t)max_code);
    const int too_big = mag < 0x7F800000u && fp8kv_f32_from_bits(mag) > max;
    return too_big ? fp8kv_codec_finish(c, sign, mag, max_code + 1u) : fp8kv_encode_bits(c, x);
}

/* defect 3 of docs/DESIGN.md §1.4 (AMD amd_hip_fp8.h software path): "Inf or NaN" is one test,
 * taken before the saturation logic, and gives the NaN code: ±Inf is NaN even under satfinite with
 * the clamp policy (CUDA and ONNX give ±max). */
static uint8_t inf_to_nan_under_satfinite(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t sign = (x >> 24) & 0x80u, mag = x & 0x7FFFFFFFu;
    const uint8_t nan = fp8kv_codec_finish(c, sign, 0x7FC00000u, 0); /* the NaN of this sign */
    return mag >= 0x7F800000u ? nan : fp8kv_encode_bits(c, x);
}

/* defect 6 of docs/DESIGN.md §1.4 (CUDA cuda_fp8.hpp software path, sm_90 hardware): every NaN
 * becomes the positive NaN code 0x7F; the sign of a negative NaN is lost. */
static uint8_t negative_nan_loses_sign(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t mag = x & 0x7FFFFFFFu;
    return mag > 0x7F800000u ? 0x7Fu : fp8kv_encode_bits(c, x);
}

/* defect 14 of docs/DESIGN.md §1.4 (triton on gfx1201): f32 -> fp8 goes through f16,
 * encode(RN16(x)): an x just off an e4m3 midpoint rounds onto it in f16, and the tie then goes to
 * even, which may be the wrong side. */
static uint8_t double_rounding_through_f16(struct fp8kv_codec_cfg c, uint32_t x)
{
    const float h = fp8kv_f16_to_f32(fp8kv_f32_to_f16_rne(fp8kv_f32_from_bits(x)));
    return fp8kv_encode_bits(c, fp8kv_f32_bits(h));
}

/* defect 16 of docs/DESIGN.md §1.4 (subnormal paths under DAZ/FTZ): f32 denormal inputs are flushed
 * to +0 before the conversion, so a negative denormal loses its sign: 0x00, not 0x80 (e4m3fn). */
static uint8_t ftz_denormal_inputs(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t mag = x & 0x7FFFFFFFu;
    return fp8kv_encode_bits(c, mag != 0 && mag < 0x00800000u ? 0u : x);
}

/* defect 17 of docs/DESIGN.md §1.4 (sglang's software E4M3, among others): ties round half up in
 * magnitude (half away from zero) instead of to even: a plain half is added below the kept bits,
 * with no "- 1 + lsb". 1.0625 -> 0x39 instead of 0x38; 2^-10 -> 0x01 instead of 0x00. */
static uint8_t ties_half_up(struct fp8kv_codec_cfg c, uint32_t x)
{
    const uint32_t sign = (x >> 24) & 0x80u, mag = x & 0x7FFFFFFFu;
    const uint32_t bias = (uint32_t)fp8kv_codec_bias(c);
    uint32_t code;
    if (mag >= (128u - bias) << 23) { /* normal: round at bit 20, rebias 127 -> bias */
        code = ((mag + 0x80000u) >> 20) - ((127u - bias) << 3);
    } else { /* subnormal: sig * 2^(e - 150) in units of 2^(-bias - 2) */
        const uint32_t e = mag >> 23, sig = (mag & 0x7FFFFFu) | (e ? 0x800000u : 0u);
        const uint32_t shift = 148u - bias - (e ? e : 1u);
        code = shift > 25u ? 0u : (sig + (1u << (shift - 1u))) >> shift;
    }
    return fp8kv_codec_finish(c, sign, mag, code);
}

/* The array loops get AVX-512 and AVX2 clones (codec.h's FP8KV_HOST_ARRAY_LOOP, as
 * kernels/cpu/subjects.c's), and this file is built with -fno-trapping-math (tests/CMakeLists.txt;
 * no FP trap is ever enabled, so no result changes): without them most loops do not vectorize, and
 * the suite's 2^32-input sweeps of the broken encoders take two to four times as long. */

/* The array form the sweep calls, one per broken encoder, so that each inlines into its loop.
 * The configuration arrives by value (a copy read through a pointer would be reloaded after
 * every store to q, a uint8_t that may alias it, and keep the loop from vectorizing). The
 * sweep always passes scale 1. */
#define ARRAY_SUBJECT(fn)                                                                          \
    FP8KV_HOST_ARRAY_LOOP static int fn##_array(void *ctx, struct fp8kv_codec_cfg cfg,             \
                                                const float *x, size_t n, float s, uint8_t *q)     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        (void)s;                                                                                   \
        for (size_t i = 0; i < n; i++)                                                             \
            q[i] = fn(cfg, fp8kv_f32_bits(x[i]));                                                  \
        return 0;                                                                                  \
    }
ARRAY_SUBJECT(frexp_no_zero_guard)
ARRAY_SUBJECT(overflow_before_rounding)
ARRAY_SUBJECT(inf_to_nan_under_satfinite)
ARRAY_SUBJECT(negative_nan_loses_sign)
ARRAY_SUBJECT(double_rounding_through_f16)
ARRAY_SUBJECT(ftz_denormal_inputs)
ARRAY_SUBJECT(ties_half_up)
#undef ARRAY_SUBJECT

/* ---- helpers -------------------------------------------------------------------------------- */

typedef int (*array_encode)(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                            float s, uint8_t *q);

static const struct fp8kv_profile *profile_named(const char *name)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name(name);
    cr_assert_not_null(p, "no profile %s", name);
    return p;
}

static void log_check(const struct fp8kv_check *c)
{
    cr_log_info("%s %s [%s] %s: %llu of %llu mismatched, %s (%.1f s)", c->name, c->subject,
                c->profile, c->detail, (unsigned long long)c->mismatches,
                (unsigned long long)c->cases, c->passed ? "passed" : "failed", c->seconds);
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        if (c->class_mismatches[k])
            cr_log_info("  %-16s %llu", fp8kv_class_names[k],
                        (unsigned long long)c->class_mismatches[k]);
    for (int i = 0; i < c->failure_lines; i++)
        cr_log_info("  %s", c->failures[i]);
}

/* sweep_f32: the exhaustive f32 sweep of an array encoder under the profile's codec cfg. */
static void sweep_f32(const struct fp8kv_profile *p, enum fp8kv_nan_check check, const char *name,
                      array_encode encode, struct fp8kv_check *c)
{
    uint32_t *b = fp8kv_load_boundaries(VECTORS, p);
    cr_assert_not_null(b, "%s: %s", p->name, fp8kv_last_error());
    struct fp8kv_subject subject = {
        .name = name, .caps = FP8KV_CAP_ENCODE, .claim = FP8KV_CLAIM_ALL, .encode = encode};
    int rc = fp8kv_sweep(p, check, FP8KV_DOMAIN_F32, b, &subject, fp8kv_profile_cfg(p), NULL, c);
    free(b);
    cr_assert_eq(rc, 0, "%s %s: status %d: %s", name, p->name, rc, fp8kv_last_error());
    cr_assert_eq(c->cases, 1ull << 32, "%s %s: %llu cases", name, p->name,
                 (unsigned long long)c->cases);
    log_check(c);
}

/* expect_correct_passes: the built-in encoder `name` passes the sweep the broken one fails. */
static void expect_correct_passes(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                                  const char *name)
{
    const struct fp8kv_subject *enc =
        fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, name, FP8KV_CAP_ENCODE);
    cr_assert_not_null(enc, "no built-in encoder %s", name);
    uint32_t *b = fp8kv_load_boundaries(VECTORS, p);
    cr_assert_not_null(b, "%s: %s", p->name, fp8kv_last_error());
    struct fp8kv_check c;
    int rc = fp8kv_sweep(p, check, FP8KV_DOMAIN_F32, b, enc, fp8kv_profile_cfg(p), NULL, &c);
    free(b);
    cr_assert_eq(rc, 0, "%s %s: status %d: %s", name, p->name, rc, fp8kv_last_error());
    cr_assert_eq(c.cases, 1ull << 32);
    cr_assert_eq(c.mismatches, 0, "the correct %s fails the %s sweep: %s", name, p->name,
                 c.failure_lines ? c.failures[0] : "");
    cr_assert_eq(c.passed, 1);
    log_check(&c);
}

/* expect_caught: the sweep failed, the class the defect names has mismatches, and (when
 * only is set) no class outside `allowed` has any; the first failure line ends with the name
 * of a class in `allowed`. Classes are given as a bit mask. */
#define CLASS(k) (1u << (k))

static void expect_caught(const struct fp8kv_check *c, enum fp8kv_class named, unsigned allowed,
                          int only)
{
    cr_assert_eq(c->passed, 0, "%s passed the %s sweep", c->subject, c->profile);
    cr_assert_gt(c->mismatches, 0);
    cr_assert_gt(c->class_mismatches[named], 0, "%s: no mismatch in class %s", c->subject,
                 fp8kv_class_names[named]);
    uint64_t total = 0;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        total += c->class_mismatches[k];
        if (only && !(allowed & CLASS(k)))
            cr_assert_eq(c->class_mismatches[k], 0, "%s: %llu mismatches in class %s", c->subject,
                         (unsigned long long)c->class_mismatches[k], fp8kv_class_names[k]);
    }
    cr_assert_eq(total, c->mismatches, "the class counts do not add up");
    cr_assert_leq(c->failure_lines, FP8KV_MAX_FAILURE_LINES);
    /* every class that failed has an example line */
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        char tail[32];
        snprintf(tail, sizeof tail, "  %s", fp8kv_class_names[k]);
        int shown = 0;
        for (int i = 0; i < c->failure_lines; i++) {
            const size_t len = strlen(c->failures[i]), tlen = strlen(tail);
            shown += len >= tlen && strcmp(c->failures[i] + len - tlen, tail) == 0;
        }
        cr_assert(!c->class_mismatches[k] == !shown, "%s: class %s: %llu mismatches, %d lines",
                  c->subject, fp8kv_class_names[k], (unsigned long long)c->class_mismatches[k],
                  shown);
    }
    int first_named = 0;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        char tail[32];
        snprintf(tail, sizeof tail, "  %s", fp8kv_class_names[k]);
        size_t len = strlen(c->failures[0]), tlen = strlen(tail);
        if ((allowed & CLASS(k)) && len >= tlen && strcmp(c->failures[0] + len - tlen, tail) == 0)
            first_named = 1;
    }
    cr_assert(first_named, "%s: the first failure line names another class: %s", c->subject,
              c->failures[0]);
}

/* A failure line taken apart: "f32 0x<input>[..0x<last>] (<values>) => <got>  expected <want>
 * <class>". */
struct failure_line {
    uint32_t input, last;
    unsigned got, want;
    char cls[32];
};

static struct failure_line parse_line(const char *line)
{
    struct failure_line f;
    unsigned input, last;
    cr_assert_eq(sscanf(line, "f32 0x%x", &input), 1, "not a failure line: %s", line);
    const char *range = strstr(line, "..0x"), *arrow = strstr(line, " => ");
    cr_assert_not_null(arrow, "not a failure line: %s", line);
    cr_assert_eq(sscanf(arrow, " => %x expected %x %31s", &f.got, &f.want, f.cls), 3,
                 "not a failure line: %s", line);
    f.input = input;
    f.last = range && range < arrow && sscanf(range, "..0x%x", &last) == 1 ? last : input;
    return f;
}

/* ---- one test per defect -------------------------------------------------------------------- */

Test(defects, row1_frexp_no_zero_guard)
{
    /* the model's premise: the C library's frexpf(±0) is (±0, 0), and c_frexpf agrees */
    static const float probes[] = {0.0f, -0.0f, 1.0f, 0.75f, 448.0f, 0x1p-140f, 3.0e38f};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        int e_libm, e_ours;
        const float a = fabsf(probes[i]);
        const float m_libm = frexpf(a, &e_libm), m_ours = c_frexpf(a, &e_ours);
        cr_assert(m_libm == m_ours && e_libm == e_ours, "frexpf(%a): (%a, %d) vs (%a, %d)",
                  (double)a, (double)m_libm, e_libm, (double)m_ours, e_ours);
    }

    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "frexp_no_zero_guard", frexp_no_zero_guard_array, &c);
    expect_caught(&c, FP8KV_CLASS_ZERO, CLASS(FP8KV_CLASS_ZERO), 1);
    cr_assert_eq(c.mismatches, 2); /* +0 and -0, nothing else */
    cr_assert_str_eq(c.failures[0], "f32 0x00000000 (0) => f8  expected 00  zero");
    cr_assert_str_eq(c.failures[1], "f32 0x80000000 (-0) => f8  expected 80  zero");
}

Test(defects, row2_overflow_before_rounding)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_nan");
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "overflow_before_rounding", overflow_before_rounding_array,
              &c);
    /* (448, 464) is normal, 464 itself the tie of 448 and 480: both signs */
    expect_caught(&c, FP8KV_CLASS_NORMAL, CLASS(FP8KV_CLASS_NORMAL) | CLASS(FP8KV_CLASS_TIE), 1);
    const uint64_t below_464 = 0x43E80000u - 0x43E00000u - 1u; /* f32 strictly in (448, 464) */
    cr_assert_eq(c.class_mismatches[FP8KV_CLASS_NORMAL], 2 * below_464);
    cr_assert_eq(c.class_mismatches[FP8KV_CLASS_TIE], 2);
    /* the whole of (448, 464) is one folded line with its count */
    cr_assert_str_eq(c.failures[0], "f32 0x43e00001..0x43e7ffff (448.000031..463.999969, 524,287 "
                                    "inputs) => 7f  expected 7e  normal");
    for (int i = 0; i < c.failure_lines; i++) {
        const struct failure_line f = parse_line(c.failures[i]);
        const uint32_t mag = f.input & 0x7FFFFFFFu;
        cr_assert(mag > 0x43E00000u && (f.last & 0x7FFFFFFFu) <= 0x43E80000u, "%s", c.failures[i]);
    }
}

Test(defects, row3_inf_to_nan_under_satfinite)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "inf_to_nan_under_satfinite",
              inf_to_nan_under_satfinite_array, &c);
    expect_caught(&c, FP8KV_CLASS_INF, CLASS(FP8KV_CLASS_INF), 1);
    cr_assert_eq(c.mismatches, 2);
    cr_assert_str_eq(c.failures[0], "f32 0x7f800000 (inf) => 7f  expected 7e  inf");
    cr_assert_str_eq(c.failures[1], "f32 0xff800000 (-inf) => ff  expected fe  inf");
}

Test(defects, row6_negative_nan_loses_sign)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    struct fp8kv_check c;

    /* strict: every negative NaN, and only those */
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "negative_nan_loses_sign", negative_nan_loses_sign_array,
              &c);
    expect_caught(&c, FP8KV_CLASS_NAN, CLASS(FP8KV_CLASS_NAN), 1);
    cr_assert_eq(c.mismatches, 0x007FFFFFu); /* 0xFF800001 ... 0xFFFFFFFF */
    cr_assert_str_eq(c.failures[0], "f32 0xff800001..0xffffffff (-nan..-nan, 8,388,607 inputs) "
                                    "=> 7f  expected ff  nan");
    for (int i = 0; i < c.failure_lines; i++) {
        const struct failure_line f = parse_line(c.failures[i]);
        cr_assert(f.input > 0xFF800000u && f.got == 0x7F && f.want == 0xFF, "%s", c.failures[i]);
    }
}

/* The other half of row 6: by class, any NaN code stands for a NaN, so the same encoder is not
 * flagged (a deliberate choice of the NaN check, not a blind spot of the sweep). */
Test(defects, row6_negative_nan_loses_sign_passes_nan_check_class)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_CLASS, "negative_nan_loses_sign", negative_nan_loses_sign_array,
              &c);
    cr_assert_eq(c.mismatches, 0, "flagged under nan check class: %s",
                 c.failure_lines ? c.failures[0] : "");
    cr_assert_eq(c.passed, 1);
}

Test(defects, row14_double_rounding_through_f16)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    uint32_t *b = fp8kv_load_boundaries(VECTORS, p);
    cr_assert_not_null(b, "%s", fp8kv_last_error());
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "double_rounding_through_f16",
              double_rounding_through_f16_array, &c);
    /* An exact midpoint has 5 significant bits and survives RN16 unchanged, so the
     * mismatches are inputs just off a midpoint: normal ones, and, near the subnormal
     * midpoints (2^-10, 3 * 2^-10, ...), ones of the fp8 subnormal range. */
    expect_caught(&c, FP8KV_CLASS_NORMAL,
                  CLASS(FP8KV_CLASS_NORMAL) | CLASS(FP8KV_CLASS_E4M3_SUBNORMAL), 1);
    cr_assert_gt(c.class_mismatches[FP8KV_CLASS_E4M3_SUBNORMAL], 0);
    cr_assert_eq(c.class_mismatches[FP8KV_CLASS_TIE], 0);
    /* every failure line: x is not a midpoint, RN16(x) is one, and the code is RN16(x)'s */
    for (int i = 0; i < c.failure_lines; i++) {
        const struct failure_line f = parse_line(c.failures[i]);
        const uint32_t h =
            fp8kv_f32_bits(fp8kv_f16_to_f32(fp8kv_f32_to_f16_rne(fp8kv_f32_from_bits(f.input))));
        cr_assert_neq(h, f.input, "%s", c.failures[i]);
        cr_assert_eq(fp8kv_classify_f32(p->format, h), FP8KV_CLASS_TIE, "%s: RN16 is 0x%08x",
                     c.failures[i], h);
        cr_assert_eq(f.got, fp8kv_sweep_expected(p, b, h), "%s", c.failures[i]);
        cr_assert_eq(f.want, fp8kv_sweep_expected(p, b, f.input), "%s", c.failures[i]);
    }
    free(b);
}

Test(defects, row16_ftz_denormal_inputs)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "ftz_denormal_inputs", ftz_denormal_inputs_array, &c);
    expect_caught(&c, FP8KV_CLASS_F32_DENORMAL, CLASS(FP8KV_CLASS_F32_DENORMAL), 1);
    cr_assert_eq(c.mismatches, 0x007FFFFFu); /* the negative denormals; +0 is right for the rest */
    cr_assert_str_eq(c.failures[0], "f32 0x80000001..0x807fffff (-1.40129846e-45..-1.17549421e-38, "
                                    "8,388,607 inputs) => 00  expected 80  f32-denormal");
}

Test(defects, row17_ties_half_up)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    struct fp8kv_check c;
    sweep_f32(p, FP8KV_NAN_CHECK_STRICT, "ties_half_up", ties_half_up_array, &c);
    expect_caught(&c, FP8KV_CLASS_TIE, CLASS(FP8KV_CLASS_TIE), 1);
    /* Of the midpoints between codes k and k + 1 (k = 0 ... 0x7D), half up differs from even
     * where k is even: 63 per sign. The overflow midpoint 464 goes up to 480, which saturates
     * back to 448 under satfinite: no difference there. */
    cr_assert_eq(c.mismatches, 2 * 63);
    cr_assert_str_eq(c.failures[0],
                     "f32 0x3a800000 (0.0009765625) => 01  expected 00  tie"); /* 2^-10 */
    for (int i = 0; i < c.failure_lines; i++) {
        const struct failure_line f = parse_line(c.failures[i]);
        cr_assert_eq(f.got, f.want + 1, "%s", c.failures[i]); /* one step up in magnitude */
        cr_assert_eq(f.want & 1u, 0, "%s", c.failures[i]);
    }
    /* docs/DESIGN.md §1.4's example, 1.0625, is the 29th positive mismatch, past the first lines */
    struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    cr_assert_eq(ties_half_up(cfg, 0x3F880000u), 0x39);
    cr_assert_eq(fp8kv_encode_bits(cfg, 0x3F880000u), 0x38);
}

/* ---- the correct codecs pass the same sweeps ------------------------------------------------ */

/* Each defect test's sweep (profile, NaN check, all f32 inputs, the same boundaries) run on
 * the correct codec: the failures above are the bugs', not the sweep's. One test per distinct
 * sweep, so that the rows sharing a profile share it. */

Test(defects, correct_frexp_passes_row1_sweep)
{
    expect_correct_passes(profile_named("e4m3fn_satfinite"), FP8KV_NAN_CHECK_STRICT, "frexp");
}

Test(defects, correct_bits_passes_row2_sweep)
{
    expect_correct_passes(profile_named("e4m3fn_nan"), FP8KV_NAN_CHECK_STRICT, "bits");
}

Test(defects, correct_bits_passes_rows_3_6_14_16_17_sweep)
{
    expect_correct_passes(profile_named("e4m3fn_satfinite"), FP8KV_NAN_CHECK_STRICT, "bits");
}
