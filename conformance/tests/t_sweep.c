/* t_sweep.c — the exhaustive sweep engine (fp8kv/sweep.h) and the built-in encoders under it.
 *
 * The main test is exhaustive: every built-in encoder, in the loops of every instruction set
 * this machine has (fp8kv/cpu_isa.h: scalar, avx2, avx512), under every profile, over all 2^32
 * f32 inputs and all 2^16 f16 and bf16 inputs, judged byte for byte (NaN check strict) against
 * the certified boundaries, must have no mismatch. One Criterion test per (profile, encoder,
 * domain, instruction set), so that parallel jobs spread the f32 sweeps (a second or two
 * each).
 *
 * The engine itself: its failure lines come in input order and are the same for any number
 * of threads, even when later chunks finish first; `limit` restricts the inputs; a subject's
 * negative status is returned; a bad boundary table is refused with a message naming the
 * file; and the table-driven expected code agrees with the hand-known values of docs/DESIGN.md
 * §1.4. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fp8kv/checks.h"
#include "fp8kv/cpu_isa.h"
#include "fp8kv/diag.h"
#include "fp8kv/subject.h"
#include "fp8kv/npy.h"
#include "fp8kv/sweep.h"
#include "testutil.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"

/* ---- helpers --------------------------------------------------------------------------------- */

static const struct fp8kv_profile *profile_named(const char *name)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name(name);
    cr_assert_not_null(p, "no profile %s", name);
    return p;
}

static uint32_t *load_boundaries(const struct fp8kv_profile *p)
{
    uint32_t *b = fp8kv_load_boundaries(VECTORS, p);
    cr_assert_not_null(b, "%s: %s", p->name, fp8kv_last_error());
    return b;
}

static void print_check(const struct fp8kv_check *c)
{
    fprintf(stderr, "%s %s [%s] %s: %llu of %llu mismatched\n", c->name, c->subject, c->profile,
            c->detail, (unsigned long long)c->mismatches, (unsigned long long)c->cases);
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        if (c->class_mismatches[k])
            fprintf(stderr, "  %-16s %llu\n", fp8kv_class_names[k],
                    (unsigned long long)c->class_mismatches[k]);
    for (int i = 0; i < c->failure_lines; i++)
        fprintf(stderr, "  %s\n", c->failures[i]);
}

/* Bits of the i-th float of an array. */
static uint32_t bits_at(const float *x, size_t i)
{
    return fp8kv_f32_bits(x[i]);
}

/* ---- exhaustive: every profile x every built-in encoder x every domain ----------------------- */

/* The encoding subjects of the CPU target's table, in table order, into out (at most max);
 * their number. */
static int cpu_encoders(const struct fp8kv_subject **out, int max)
{
    int n = 0;
    for (int i = 0; i < fp8kv_cpu_subject_count; i++)
        if (fp8kv_subject_can(&fp8kv_cpu_subjects[i], FP8KV_CAP_ENCODE) && n < max)
            out[n++] = &fp8kv_cpu_subjects[i];
    return n;
}

/* The CPU subject called name that encodes. */
static const struct fp8kv_subject *cpu_encoder(const char *name)
{
    const struct fp8kv_subject *s =
        fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, name, FP8KV_CAP_ENCODE);
    cr_assert_not_null(s, "no CPU encoder %s", name);
    return s;
}

struct sweep_case {
    int profile, encoder, domain, isa;
};

#define MAX_SWEEP_CASES 256
static struct sweep_case sweep_cases[MAX_SWEEP_CASES];

/* The cases come from the tables at run time, so a new profile or encoder is swept without an
 * edit here (the cap is checked by sweep_cases_cover_every_profile_and_encoder). */
static int count_sweep_cases(void)
{
    const struct fp8kv_subject *enc[16];
    return fp8kv_profile_count * cpu_encoders(enc, 16) * FP8KV_DOMAIN_COUNT * FP8KV_ISA_COUNT;
}

ParameterizedTestParameters(sweep, exhaustive)
{
    int n = 0;
    const struct fp8kv_subject *enc[16];
    const int encoders = cpu_encoders(enc, 16);
    /* f32 first: the long sweeps start early and the short ones fill in after them */
    for (int d = 0; d < FP8KV_DOMAIN_COUNT; d++)
        for (int p = 0; p < fp8kv_profile_count; p++)
            for (int e = 0; e < encoders; e++)
                for (int isa = 0; isa < FP8KV_ISA_COUNT && n < MAX_SWEEP_CASES; isa++)
                    if (fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)isa))
                        sweep_cases[n++] = (struct sweep_case){p, e, d, isa};
    return cr_make_param_array(struct sweep_case, sweep_cases, (size_t)n);
}

ParameterizedTest(struct sweep_case *sc, sweep, exhaustive)
{
    const struct fp8kv_profile *p = &fp8kv_profiles[sc->profile];
    const struct fp8kv_subject *encoders[16];
    cpu_encoders(encoders, 16);
    const struct fp8kv_subject *enc = encoders[sc->encoder];
    const enum fp8kv_domain d = (enum fp8kv_domain)sc->domain;
    cr_assert_eq(fp8kv_cpu_isa_use((enum fp8kv_cpu_isa)sc->isa), 0); /* (this test's process) */
    uint32_t *b = load_boundaries(p);
    struct fp8kv_check c;
    int rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, d, b, enc, fp8kv_profile_cfg(p), NULL, &c);
    free(b);
    cr_assert_eq(rc, 0, "%s %s %s %s: status %d: %s", enc->name, fp8kv_cpu_isa_names[sc->isa],
                 p->name, fp8kv_sweep_domain_names[d], rc, fp8kv_last_error());
    if (c.mismatches)
        fprintf(stderr, "loops: %s\n", fp8kv_cpu_isa_names[sc->isa]);
    if (c.mismatches)
        print_check(&c);
    const uint64_t want_cases = d == FP8KV_DOMAIN_F32 ? 1ull << 32 : 1ull << 16;
    cr_assert_eq(c.cases, want_cases, "%s %s %s: %llu cases", enc->name, p->name,
                 fp8kv_sweep_domain_names[d], (unsigned long long)c.cases);
    cr_assert_eq(c.mismatches, 0, "%s %s %s: %llu mismatches, first: %s", enc->name, p->name,
                 fp8kv_sweep_domain_names[d], (unsigned long long)c.mismatches,
                 c.failure_lines ? c.failures[0] : "");
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        cr_assert_eq(c.class_mismatches[k], 0);
    cr_assert_eq(c.failure_lines, 0);
    cr_assert(c.has_classes);
    cr_assert_eq(c.passed, 1, "%s %s %s: not passed", enc->name, p->name,
                 fp8kv_sweep_domain_names[d]);
    cr_assert_str_eq(c.subject, enc->name);
    cr_assert_str_eq(c.profile, p->name);
    cr_assert_not_null(strstr(c.detail, "nan check strict"), "%s", c.detail);
}

Test(sweep, sweep_cases_cover_every_profile_and_encoder)
{
    cr_assert_leq(count_sweep_cases(), MAX_SWEEP_CASES, "raise MAX_SWEEP_CASES to %d",
                  count_sweep_cases());
    cr_assert_geq(fp8kv_profile_count, 6);
    const struct fp8kv_subject *enc[16];
    cr_assert_geq(cpu_encoders(enc, 16), 2);
    cpu_encoder("bits");
    cpu_encoder("frexp");
}

/* ---- the expected code: the boundary table against the values of docs/DESIGN.md §1.4 ---- */

Test(sweep, expected_codes_of_known_values)
{
    static const struct {
        const char *profile;
        uint32_t x;
        uint8_t want;
    } known[] = {
        {"e4m3fn_satfinite", 0x43E80000u, 0x7E}, /* 464: the tie of 448 and 480 goes even */
        {"e4m3fn_nan", 0x43E80000u, 0x7E},       /* ... under both overflow rules */
        {"e4m3fn_satfinite", 0x43E80001u, 0x7E}, /* just above: overflow, saturated */
        {"e4m3fn_nan", 0x43E80001u, 0x7F},       /* ... or NaN */
        {"e4m3fn_nan", 0xC3E80001u, 0xFF},       /* the NaN keeps the sign */
        {"e4m3fn_satfinite", 0x3C700000u, 0x08}, /* 15 * 2^-10: carry into the normal range */
        {"e4m3fn_satfinite", 0x3B400000u, 0x02}, /* 3 * 2^-10: subnormal tie, to even */
        {"e4m3fn_satfinite", 0x3BA00000u, 0x02}, /* 5 * 2^-10: subnormal tie, to even */
        {"e4m3fn_satfinite", 0x3A800000u, 0x00}, /* 2^-10: the tie of 0 and 2^-9 */
        {"e4m3fn_satfinite", 0xBA800000u, 0x80}, /* -2^-10: -0 */
        {"e4m3fn_satfinite", 0x3F880000u, 0x38}, /* 1.0625: tie, to even */
        {"e4m3fn_satfinite", 0x80000001u, 0x80}, /* the smallest negative denormal: -0 */
        {"e4m3fn_satfinite", 0x7F800000u, 0x7E}, /* +Inf clamps */
        {"e4m3fn_satfinite_infnan", 0xFF800000u, 0xFF}, /* -Inf is -NaN */
        {"e4m3fn_satfinite", 0xFFC00000u, 0xFF},        /* -NaN */
        {"e4m3fnuz_satfinite", 0x43780000u, 0x7F}, /* 248: tie of 240 and 256, even overflows */
        {"e4m3fnuz_nan", 0x43780000u, 0x80},
        {"e4m3fnuz_satfinite", 0x80000001u, 0x00}, /* no -0 in fnuz */
        {"e4m3fnuz_satfinite", 0xFFC00000u, 0x80}, /* the one NaN */
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const struct fp8kv_profile *p = profile_named(known[i].profile);
        uint32_t *b = load_boundaries(p);
        uint8_t got = fp8kv_sweep_expected(p, b, known[i].x);
        free(b);
        cr_assert_eq(got, known[i].want, "%s 0x%08x: expected %02x, table gives %02x",
                     known[i].profile, known[i].x, known[i].want, got);
    }
}

/* ---- at a store scale ------------------------------------------------------------------------ */

static const enum fp8kv_scale_model kernel_models[] = {
    FP8KV_MODEL_F32_DIV, FP8KV_MODEL_F32_MUL_RECIP, FP8KV_MODEL_F16_DIV};

/* The judge's scaled expectation is the oracle's on every golden store-with-scale pair whose
 * scale a sweep accepts (finite, nonzero), under each kernel model. */
Test(sweep, scaled_expectation_is_the_oracles_on_the_golden_pairs)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        uint32_t *b = load_boundaries(p);
        struct fp8kv_npy sx = {0}, ss = {0}, want = {0};
        cr_assert_eq(fp8kv_load_vector_file(VECTORS, p, "scale_x.npy", FP8KV_NPY_U32, 0, 0, &sx),
                     0);
        cr_assert_eq(
            fp8kv_load_vector_file(VECTORS, p, "scale_s.npy", FP8KV_NPY_U32, sx.shape[0], 0, &ss),
            0);
        cr_assert_eq(fp8kv_load_vector_file(VECTORS, p, "scale_expected.npy", FP8KV_NPY_U8,
                                            sx.shape[0], FP8KV_MODEL_COUNT, &want),
                     0);
        size_t judged = 0;
        for (size_t k = 0; k < sx.count; k++) {
            const uint32_t x = ((const uint32_t *)sx.data)[k], s = ((const uint32_t *)ss.data)[k];
            if ((s & 0x7FFFFFFFu) == 0 || (s & 0x7FFFFFFFu) >= 0x7F800000u)
                continue;
            for (size_t m = 0; m < 3; m++) {
                uint8_t got;
                int by_class;
                cr_assert_eq(
                    fp8kv_sweep_expected_scaled(p, b, kernel_models[m], x, s, &got, &by_class), 0);
                const uint8_t w =
                    ((const uint8_t *)want.data)[k * FP8KV_MODEL_COUNT + kernel_models[m]];
                cr_assert(got == w || (by_class && fp8kv_is_nan_code(p->format, got) &&
                                       fp8kv_is_nan_code(p->format, w)),
                          "%s %s: x 0x%08x s 0x%08x: judge %02x, oracle %02x", p->name,
                          fp8kv_model_names[kernel_models[m]], x, s, got, w);
                judged++;
            }
        }
        cr_assert_gt(judged, 100000, "%s: %zu pairs judged", p->name, judged);
        fp8kv_npy_free(&sx);
        fp8kv_npy_free(&ss);
        fp8kv_npy_free(&want);
        free(b);
    }
}

/* The runs of the f32 domain at a scale say, for every input near a run's start and for random
 * inputs, what the per-input expectation says: the bisection found every place the code or the
 * class changes. */
Test(sweep, scaled_runs_agree_with_the_expectation_per_input)
{
    static const uint32_t scales[] = {0x3F800000u,
                                      0x3DCCCCCDu /* 0.1f */,
                                      0x40400000u,
                                      0xBF333333u /* -0.7f */,
                                      0x0DA24260u /* 1e-30f */,
                                      0x7149F2CAu /* 1e30f */,
                                      0x00000001u,
                                      0x00700000u,
                                      0x7F7FFFFFu};
    static const char *const profiles[] = {"e4m3fn_satfinite", "e4m3fnuz_nan",
                                           "e4m3fn_satfinite_infnan"};
    uint64_t seed = 42;
    for (size_t pi = 0; pi < 3; pi++) {
        const struct fp8kv_profile *p = profile_named(profiles[pi]);
        uint32_t *b = load_boundaries(p);
        for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
            for (size_t m = 0; m < 3; m++) {
                struct fp8kv_sweep_run *runs;
                const long n = fp8kv_sweep_runs_scaled(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32,
                                                       b, kernel_models[m], scales[si], &runs);
                cr_assert_gt(n, 0, "%s", fp8kv_last_error());
                for (long k = 0; k < n + 20000; k++) {
                    uint32_t around[5];
                    int count = 1;
                    if (k < n) {
                        count = 5;
                        for (int d = 0; d < 5; d++)
                            around[d] = runs[k].start + (uint32_t)d - 2u;
                    } else {
                        around[0] = (uint32_t)fp8kv_splitmix64(&seed);
                    }
                    for (int d = 0; d < count; d++) {
                        const uint32_t x = around[d];
                        const struct fp8kv_sweep_run *r =
                            &runs[fp8kv_sweep_run_of(runs, (size_t)n, x)];
                        uint8_t want;
                        int by_class;
                        fp8kv_sweep_expected_scaled(p, b, kernel_models[m], x, scales[si], &want,
                                                    &by_class);
                        cr_assert(fp8kv_sweep_run_accepts(r, want) &&
                                      (by_class || (r->mask == 0xFF && r->span == 0)) &&
                                      r->cls == (uint8_t)fp8kv_pair_class(p->format, x, scales[si]),
                                  "%s %s scale 0x%08x: input 0x%08x: run of 0x%08x says %02x/%02x "
                                  "class %d, the input %02x class %d",
                                  p->name, fp8kv_model_names[kernel_models[m]], scales[si], x,
                                  r->start, r->value, r->mask, r->cls, want,
                                  fp8kv_pair_class(p->format, x, scales[si]));
                    }
                }
                free(runs);
            }
        free(b);
    }
}

/* At scale 1 under f32_div the scaled runs are the unscaled ones. */
Test(sweep, scaled_runs_at_scale_1_are_the_plain_runs)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_nan");
    uint32_t *b = load_boundaries(p);
    struct fp8kv_sweep_run *plain, *scaled;
    const long n = fp8kv_sweep_runs(p, FP8KV_NAN_CHECK_CLASS, FP8KV_DOMAIN_F32, b, &plain);
    const long m = fp8kv_sweep_runs_scaled(p, FP8KV_NAN_CHECK_CLASS, FP8KV_DOMAIN_F32, b,
                                           FP8KV_MODEL_F32_DIV, 0x3F800000u, &scaled);
    cr_assert_eq(n, m);
    cr_assert_eq(memcmp(plain, scaled, (size_t)n * sizeof *plain), 0);
    cr_assert_lt(fp8kv_sweep_runs_scaled(p, FP8KV_NAN_CHECK_CLASS, FP8KV_DOMAIN_F32, b,
                                         FP8KV_MODEL_EXACT, 0x3F800000u, &scaled),
                 0, "exact is no kernel's model");
    cr_assert_lt(fp8kv_sweep_runs_scaled(p, FP8KV_NAN_CHECK_CLASS, FP8KV_DOMAIN_F32, b,
                                         FP8KV_MODEL_F32_DIV, 0x80000000u, &scaled),
                 0, "a zero scale is refused");
    free(plain);
    free(b);
}

/* ---- the NaN check --------------------------------------------------------------------------- */

/* A subject that is the integer codec except on NaN inputs, which all get the code nan_out. */
struct nan_writer {
    struct fp8kv_codec_cfg cfg;
    uint8_t nan_out;
};

static int encode_nan_writer(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                             float s, uint8_t *q)
{
    (void)cfg;
    const struct nan_writer *w = ctx;
    (void)s;
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = bits_at(x, i);
        q[i] = (b & 0x7FFFFFFFu) > 0x7F800000u ? w->nan_out : fp8kv_encode_bits(w->cfg, b);
    }
    return 0;
}

/* Under nan check class any NaN code of the format stands for a NaN, of either sign; under
 * strict only the byte of the input's sign does. The 16-bit domains hold NaNs of both signs
 * and many payloads, and take milliseconds. */
Test(sweep, nan_check_class_accepts_any_nan_code)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        const struct fp8kv_format *f = p->format;
        uint32_t *b = load_boundaries(p);
        struct fp8kv_check c;
        for (int d = FP8KV_DOMAIN_F16; d <= FP8KV_DOMAIN_BF16; d++) {
            const enum fp8kv_domain dom = (enum fp8kv_domain)d;
            const uint64_t nans = d == FP8KV_DOMAIN_F16 ? 1023 : 127; /* per sign */
            struct nan_writer w = {fp8kv_profile_cfg(p), 0};
            struct fp8kv_subject subject = {.caps = FP8KV_CAP_ENCODE,
                                            .claim = FP8KV_CLAIM_ALL,
                                            .name = "nan-writer",
                                            .ctx = &w,
                                            .encode = encode_nan_writer};
            for (int check = 0; check < FP8KV_NAN_CHECK_COUNT; check++) {
                const enum fp8kv_nan_check chk = (enum fp8kv_nan_check)check;
                /* the right NaN of each sign: passes either check */
                cr_assert_eq(fp8kv_sweep(p, chk, dom, b, cpu_encoder("bits"), w.cfg, NULL, &c), 0);
                if (!c.passed)
                    print_check(&c);
                cr_assert(c.passed, "%s %s, nan check %s: the correct codec fails: %s", p->name,
                          fp8kv_sweep_domain_names[d], fp8kv_nan_check_names[check],
                          c.failure_lines ? c.failures[0] : "");

                /* the positive (or only) NaN code for every NaN: class accepts it; strict
                 * rejects the negative NaNs where the format has a signed NaN */
                w.nan_out = fp8kv_nan_code(f, 0);
                cr_assert_eq(fp8kv_sweep(p, chk, dom, b, &subject, fp8kv_profile_cfg(p), NULL, &c),
                             0);
                const uint64_t want = chk == FP8KV_NAN_CHECK_STRICT && f->nan_has_sign ? nans : 0;
                cr_assert_eq(c.mismatches, want,
                             "%s %s, nan check %s, every NaN to %02x: %llu mismatches: %s", p->name,
                             fp8kv_sweep_domain_names[d], fp8kv_nan_check_names[check], w.nan_out,
                             (unsigned long long)c.mismatches,
                             c.failure_lines ? c.failures[0] : "");
                cr_assert_eq(c.class_mismatches[FP8KV_CLASS_NAN], want);

                /* a finite code for a NaN: rejected by both */
                w.nan_out = f->max_code;
                cr_assert_eq(fp8kv_sweep(p, chk, dom, b, &subject, fp8kv_profile_cfg(p), NULL, &c),
                             0);
                cr_assert_eq(c.mismatches, 2 * nans, "%s %s, nan check %s, every NaN to %02x",
                             p->name, fp8kv_sweep_domain_names[d], fp8kv_nan_check_names[check],
                             w.nan_out);
                cr_assert_eq(c.class_mismatches[FP8KV_CLASS_NAN], 2 * nans);
            }
        }
        free(b);
    }
}

/* ---- failure lines: input order, and the same for any number of threads ---------------------- */

/* A broken subject: the integer codec, but every input whose low 16 bits are 0x1234 gets its
 * code's low bit flipped, so each 2^16-input chunk holds exactly one failure. The first chunks
 * are slowed down, so that with several threads later chunks report their failures first and
 * the engine has to sort them in. */
#define BROKEN_LOW_BITS 0x1234u
#define SLOW_CHUNKS 8u

static int encode_flip_one_per_chunk(void *ctx, struct fp8kv_codec_cfg cfg, const float *x,
                                     size_t n, float s, uint8_t *q)
{
    (void)ctx;
    (void)s;
    if (n && (bits_at(x, 0) >> 16) < SLOW_CHUNKS)
        usleep(20000);
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = bits_at(x, i);
        q[i] = fp8kv_encode_bits(cfg, b);
        if ((b & 0xFFFFu) == BROKEN_LOW_BITS)
            q[i] ^= 0x01u;
    }
    return 0;
}

static void sweep_broken(const struct fp8kv_profile *p, const uint32_t *b, int threads,
                         uint64_t limit, struct fp8kv_check *c)
{
    struct fp8kv_subject subject = {.caps = FP8KV_CAP_ENCODE,
                                    .claim = FP8KV_CLAIM_ALL,
                                    .name = "flip-one-per-chunk",
                                    .encode = encode_flip_one_per_chunk};
    struct fp8kv_sweep_options opt = {.threads = threads, .limit = limit};
    int rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32, b, &subject,
                         fp8kv_profile_cfg(p), &opt, c);
    cr_assert_eq(rc, 0, "threads %d: status %d: %s", threads, rc, fp8kv_last_error());
}

Test(sweep, failure_lines_in_input_order_and_deterministic)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    uint32_t *b = load_boundaries(p);
    const uint64_t limit = 1ull << 24; /* 256 chunks, 256 failures */
    static const int thread_counts[] = {1, 2, 4, 0};
    struct fp8kv_check first, c;
    sweep_broken(p, b, 1, limit, &first);

    /* threads 1: the reference run; every count and line checked by hand */
    cr_assert_eq(first.cases, limit);
    cr_assert_eq(first.mismatches, limit >> 16);
    cr_assert_eq(first.passed, 0);
    uint64_t in_classes = 0;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        in_classes += first.class_mismatches[k];
    cr_assert_eq(in_classes, first.mismatches);
    /* below 2^-126 every input is an f32 denormal; above, a tiny normal far below half the
     * smallest fp8 subnormal (underflow) */
    cr_assert_eq(first.class_mismatches[FP8KV_CLASS_F32_DENORMAL], 128);
    cr_assert_eq(first.class_mismatches[FP8KV_CLASS_UNDERFLOW], 128);
    /* the first few of each class, in input order */
    cr_assert_eq(first.failure_lines, 2 * FP8KV_EXAMPLES_PER_CLASS);
    uint32_t previous = 0;
    for (int i = 0; i < first.failure_lines; i++) {
        unsigned input = 0, got = 0, want = 0;
        char cls[32];
        cr_assert_eq(sscanf(first.failures[i], "f32 0x%x (%*[^)]) => %x expected %x %31s", &input,
                            &got, &want, cls),
                     4, "line %d: %s", i, first.failures[i]);
        cr_assert(i == 0 || input > previous, "line %d out of order: %s", i, first.failures[i]);
        const int denormal = i < FP8KV_EXAMPLES_PER_CLASS;
        const uint32_t chunk =
            denormal ? (uint32_t)i : (uint32_t)(128 + i - FP8KV_EXAMPLES_PER_CLASS);
        cr_assert_eq(input, (chunk << 16) | BROKEN_LOW_BITS, "line %d: %s", i, first.failures[i]);
        cr_assert_eq(got, want ^ 0x01u, "line %d: %s", i, first.failures[i]);
        cr_assert_str_eq(cls, denormal ? "f32-denormal" : "underflow", "line %d: %s", i,
                         first.failures[i]);
        previous = input;
    }
    cr_assert_str_eq(first.failures[0],
                     "f32 0x00001234 (6.53005084e-42) => 01  expected 00  f32-denormal");

    /* the same lines and counts, byte for byte, for every thread count (and run to run) */
    for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
        sweep_broken(p, b, thread_counts[t], limit, &c);
        cr_assert_eq(c.cases, first.cases, "threads %d", thread_counts[t]);
        cr_assert_eq(c.mismatches, first.mismatches, "threads %d", thread_counts[t]);
        cr_assert_eq(c.passed, first.passed, "threads %d", thread_counts[t]);
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
            cr_assert_eq(c.class_mismatches[k], first.class_mismatches[k], "threads %d, %s",
                         thread_counts[t], fp8kv_class_names[k]);
        cr_assert_eq(c.failure_lines, first.failure_lines, "threads %d", thread_counts[t]);
        for (int i = 0; i < c.failure_lines; i++)
            cr_assert_str_eq(c.failures[i], first.failures[i], "threads %d, line %d",
                             thread_counts[t], i);
    }
    free(b);
}

/* ---- limit ----------------------------------------------------------------------------------- */

/* A subject that records how many inputs it saw and the largest input pattern. */
struct counting {
    struct fp8kv_codec_cfg cfg;
    _Atomic uint64_t seen;
    _Atomic uint32_t max_bits;
};

static int encode_counting(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                           uint8_t *q)
{
    (void)cfg;
    struct counting *k = ctx;
    (void)s;
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = bits_at(x, i);
        q[i] = fp8kv_encode_bits(k->cfg, b);
        top = b > top ? b : top;
    }
    atomic_fetch_add(&k->seen, n);
    uint32_t old = atomic_load(&k->max_bits);
    while (top > old && !atomic_compare_exchange_weak(&k->max_bits, &old, top))
        ;
    return 0;
}

static void sweep_counting(const struct fp8kv_profile *p, const uint32_t *b, enum fp8kv_domain d,
                           uint64_t limit, struct counting *k, struct fp8kv_check *c)
{
    k->cfg = fp8kv_profile_cfg(p);
    atomic_init(&k->seen, 0);
    atomic_init(&k->max_bits, 0);
    struct fp8kv_subject subject = {.caps = FP8KV_CAP_ENCODE,
                                    .claim = FP8KV_CLAIM_ALL,
                                    .name = "counting",
                                    .ctx = k,
                                    .encode = encode_counting};
    struct fp8kv_sweep_options opt = {.threads = 2, .limit = limit};
    int rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, d, b, &subject, fp8kv_profile_cfg(p), &opt, c);
    cr_assert_eq(rc, 0, "status %d: %s", rc, fp8kv_last_error());
}

Test(sweep, limit_restricts_cases)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_nan");
    uint32_t *b = load_boundaries(p);
    struct counting k;
    struct fp8kv_check c;

    /* f32: the first `limit` patterns, not a whole chunk more */
    static const uint64_t limits[] = {1, 1000, 65536, 3 * 65536 + 5};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        sweep_counting(p, b, FP8KV_DOMAIN_F32, limits[i], &k, &c);
        cr_assert_eq(c.cases, limits[i]);
        cr_assert_eq(atomic_load(&k.seen), limits[i], "limit %llu: the subject saw %llu inputs",
                     (unsigned long long)limits[i], (unsigned long long)atomic_load(&k.seen));
        cr_assert_eq(atomic_load(&k.max_bits), (uint32_t)(limits[i] - 1));
        cr_assert_eq(c.mismatches, 0);
        cr_assert_eq(c.passed, 1);
        char count[32];
        snprintf(count, sizeof count, "all %llu f32 inputs", (unsigned long long)limits[i]);
        cr_assert_not_null(strstr(c.detail, count), "%s", c.detail);
    }

    /* a limit beyond the domain is the whole domain */
    sweep_counting(p, b, FP8KV_DOMAIN_F16, 1ull << 20, &k, &c);
    cr_assert_eq(c.cases, 65536);
    cr_assert_eq(atomic_load(&k.seen), 65536);
    cr_assert_eq(c.passed, 1);

    /* 16-bit domains count patterns, not f32 bits: 300 bf16 inputs end at 0x012B << 16 */
    sweep_counting(p, b, FP8KV_DOMAIN_BF16, 300, &k, &c);
    cr_assert_eq(c.cases, 300);
    cr_assert_eq(atomic_load(&k.seen), 300);
    cr_assert_eq(atomic_load(&k.max_bits), 299u << 16);
    free(b);
}

/* ---- a failing subject ----------------------------------------------------------------------- */

/* A subject that fails with status -7 on the chunk whose first input has the bits fail_at. */
#define SUBJECT_STATUS (-7)

struct failing {
    struct fp8kv_codec_cfg cfg;
    uint32_t fail_at;
};

static int encode_failing(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                          uint8_t *q)
{
    (void)cfg;
    const struct failing *f = ctx;
    (void)s;
    if (n && bits_at(x, 0) == f->fail_at)
        return SUBJECT_STATUS;
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_encode_bits(f->cfg, bits_at(x, i));
    return 0;
}

Test(sweep, subject_status_is_returned)
{
    const struct fp8kv_profile *p = profile_named("e4m3fn_satfinite");
    uint32_t *b = load_boundaries(p);
    struct failing f = {fp8kv_profile_cfg(p), 0x00030000u};
    struct fp8kv_check c;
    for (int single = 0; single <= 1; single++)
        for (int threads = 1; threads <= 2; threads++) {
            struct fp8kv_subject subject = {.caps = FP8KV_CAP_ENCODE,
                                            .claim = FP8KV_CLAIM_ALL,
                                            .name = "failing",
                                            .ctx = &f,
                                            .encode = encode_failing,
                                            .flags = single ? FP8KV_SUBJECT_SINGLE_THREADED : 0u};
            struct fp8kv_sweep_options opt = {.threads = threads, .limit = 1ull << 22};
            int rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32, b, &subject,
                                 fp8kv_profile_cfg(p), &opt, &c);
            cr_assert_eq(rc, SUBJECT_STATUS, "single_threaded %d, threads %d: status %d", single,
                         threads, rc);
        }
    /* the f16 domain is one chunk, starting at +0 */
    f.fail_at = 0;
    struct fp8kv_subject subject = {.caps = FP8KV_CAP_ENCODE,
                                    .claim = FP8KV_CLAIM_ALL,
                                    .name = "failing",
                                    .ctx = &f,
                                    .encode = encode_failing};
    int rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F16, b, &subject,
                         fp8kv_profile_cfg(p), NULL, &c);
    cr_assert_eq(rc, SUBJECT_STATUS, "f16: status %d", rc);
    free(b);
}

/* ---- a subject that judges the domain itself ------------------------------------------------- */

/* A planted encoder with failures of several classes, long ranges and short ones: -NaN gives
 * +NaN's code (one range of 1,023 f16 or 127 bf16 inputs), the codes next to the largest finite
 * one are off by one (long overflow and normal ranges), each positive code of [0x30, 0x38) is off
 * by one (more normal ranges than a class keeps), and subnormal codes of scattered inputs are
 * off by one (single inputs). */
static uint8_t planted_code(struct fp8kv_codec_cfg cfg, uint32_t bits)
{
    const uint8_t q = fp8kv_encode_bits(cfg, bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
        return (bits >> 31) ? (uint8_t)(q & 0x7Fu) : q;
    if ((q & 0x7Fu) == 0x7Eu || (q >= 0x30u && q < 0x38u))
        return q ^ 0x01u;
    if ((q & 0x78u) == 0 && (q & 0x07u) && (((bits >> 13) ^ (bits >> 16)) & 1u))
        return q ^ 0x01u;
    return q;
}

static int encode_planted(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                          uint8_t *q)
{
    (void)ctx;
    (void)s;
    for (size_t i = 0; i < n; i++)
        q[i] = planted_code(cfg, bits_at(x, i));
    return 0;
}

/* The planted encoder judging itself as a device kernel does (fp8kv_subject.sweep): the class
 * counts of [lo, hi) and its lowest FP8KV_SWEEP_FAILURES failures, nothing more. */
static int sweep_planted(void *ctx, struct fp8kv_codec_cfg cfg, enum fp8kv_domain domain,
                         const struct fp8kv_sweep_run *runs, size_t nruns, uint64_t lo, uint64_t hi,
                         struct fp8kv_sweep_result *out)
{
    int *passes = ctx;
    ++*passes;
    memset(out, 0, sizeof *out);
    const uint64_t end = fp8kv_sweep_domain_size(domain);
    hi = hi && hi < end ? hi : end;
    const enum fp8kv_dtype dtype = domain == FP8KV_DOMAIN_F16 ? FP8KV_DTYPE_F16 : FP8KV_DTYPE_BF16;
    size_t k = 0;
    for (uint64_t i = lo; i < hi; i++) {
        while (k + 1 < nruns && runs[k + 1].start <= i)
            k++;
        const uint8_t q = planted_code(cfg, fp8kv_widen_to_f32(dtype, (uint32_t)i));
        if (fp8kv_sweep_run_accepts(&runs[k], q))
            continue;
        out->class_mismatches[runs[k].cls]++;
        if (out->failures < FP8KV_SWEEP_FAILURES) {
            out->failure_input[out->failures] = (uint32_t)i;
            out->failure_got[out->failures] = q;
            out->failure_want[out->failures] = runs[k].value;
            out->failure_cls[out->failures++] = runs[k].cls;
        }
    }
    out->cases = hi - lo;
    return 0;
}

Test(sweep, a_self_judging_subject_shows_the_examples_of_the_host_sweep)
{
    /* the same verdict and the same lines, ranges whole and the first ranges of every class,
     * from a subject that returns only its lowest failures as from the host's own sweep */
    const enum fp8kv_domain domains[] = {FP8KV_DOMAIN_F16, FP8KV_DOMAIN_BF16};
    int long_ranges = 0;
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        uint32_t *b = load_boundaries(p);
        for (int d = 0; d < 2; d++)
            for (int check = 0; check < FP8KV_NAN_CHECK_COUNT; check++) {
                int passes = 0;
                const struct fp8kv_subject host = {.caps = FP8KV_CAP_ENCODE,
                                                   .claim = FP8KV_CLAIM_ALL,
                                                   .name = "planted",
                                                   .encode = encode_planted};
                const struct fp8kv_subject self = {.caps = FP8KV_CAP_SWEEP,
                                                   .claim = FP8KV_CLAIM_ALL,
                                                   .name = "planted",
                                                   .ctx = &passes,
                                                   .sweep = sweep_planted};
                struct fp8kv_check want, got;
                cr_assert_eq(fp8kv_sweep(p, (enum fp8kv_nan_check)check, domains[d], b, &host,
                                         fp8kv_profile_cfg(p), NULL, &want),
                             0, "%s", fp8kv_last_error());
                cr_assert_eq(fp8kv_sweep(p, (enum fp8kv_nan_check)check, domains[d], b, &self,
                                         fp8kv_profile_cfg(p), NULL, &got),
                             0, "%s", fp8kv_last_error());
                const char *where = fp8kv_sweep_domain_names[domains[d]];
                cr_assert_gt(want.mismatches, 0, "%s %s: the planted encoder passed", p->name,
                             where);
                cr_assert_eq(got.mismatches, want.mismatches, "%s %s", p->name, where);
                for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
                    cr_assert_eq(got.class_mismatches[k], want.class_mismatches[k], "%s %s %s",
                                 p->name, where, fp8kv_class_names[k]);
                if (got.failure_lines != want.failure_lines) {
                    print_check(&want);
                    print_check(&got);
                }
                cr_assert_eq(got.failure_lines, want.failure_lines, "%s %s nan check %d", p->name,
                             where, check);
                for (int l = 0; l < want.failure_lines; l++) {
                    cr_assert_str_eq(got.failures[l], want.failures[l], "%s %s line %d", p->name,
                                     where, l);
                    long_ranges += test_range_count(want.failures[l]) > FP8KV_SWEEP_FAILURES;
                }
                cr_assert_gt(passes, 1, "the examples came from the first pass alone");
            }
        free(b);
    }
    cr_assert_gt(long_ranges, 0, "no range longer than a pass returns: the test shows nothing");
}

/* ---- fp8kv_load_boundaries refuses a bad table ----------------------------------------------- */

static char tmp_dir[64];

static void make_tmp(void)
{
    strcpy(tmp_dir, "/tmp/fp8kv-t_sweep-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir), "mkdtemp failed");
}

/* write_table: tmp_dir/<profile>/boundaries.npy holding n entries; its path into path. */
static void write_table(const struct fp8kv_profile *p, const uint32_t *t, size_t n, char *path,
                        size_t size)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", tmp_dir, p->name);
    mkdir(dir, 0700);
    fp8kv_vector_path(path, size, tmp_dir, p, "boundaries.npy");
    const size_t shape[1] = {n};
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U32, 1, shape, t), 0, "%s", fp8kv_last_error());
}

static void remove_table(const struct fp8kv_profile *p)
{
    char path[256], dir[128];
    fp8kv_vector_path(path, sizeof path, tmp_dir, p, "boundaries.npy");
    unlink(path);
    snprintf(dir, sizeof dir, "%s/%s", tmp_dir, p->name);
    rmdir(dir);
}

/* expect_refused: loading the table of p from tmp_dir fails with a message naming path and
 * containing what (when not NULL). */
static void expect_refused(const struct fp8kv_profile *p, const char *path, const char *what,
                           const char *why)
{
    uint32_t *t = fp8kv_load_boundaries(tmp_dir, p);
    cr_assert_null(t, "%s: a %s table was accepted", p->name, why);
    const char *msg = fp8kv_last_error();
    cr_assert_not_null(strstr(msg, path), "%s: the message does not name %s: %s", why, path, msg);
    if (what)
        cr_assert_not_null(strstr(msg, what), "%s: the message does not say '%s': %s", why, what,
                           msg);
}

Test(sweep, load_boundaries_refuses_bad_tables)
{
    make_tmp();
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        const size_t n = (size_t)fp8kv_boundary_count(p->format);
        uint32_t *good = load_boundaries(p);
        uint32_t *t = malloc((n + 1) * sizeof *t);
        cr_assert_not_null(t);
        char path[256];

        /* missing */
        fp8kv_vector_path(path, sizeof path, tmp_dir, p, "boundaries.npy");
        expect_refused(p, path, NULL, "missing");

        /* a copy of the real table loads, entry for entry */
        write_table(p, good, n, path, sizeof path);
        uint32_t *copy = fp8kv_load_boundaries(tmp_dir, p);
        cr_assert_not_null(copy, "%s: %s", p->name, fp8kv_last_error());
        cr_assert_arr_eq(copy, good, n * sizeof *good);
        free(copy);

        /* two entries swapped: not increasing */
        memcpy(t, good, n * sizeof *t);
        t[40] = good[41];
        t[41] = good[40];
        write_table(p, t, n, path, sizeof path);
        expect_refused(p, path, "increasing", "non-increasing");

        /* a repeated entry: not strictly increasing */
        memcpy(t, good, n * sizeof *t);
        t[41] = t[40];
        write_table(p, t, n, path, sizeof path);
        expect_refused(p, path, "increasing", "repeated-entry");

        /* the top entry at +Inf: not a finite f32 */
        memcpy(t, good, n * sizeof *t);
        t[n - 1] = 0x7F800000u;
        write_table(p, t, n, path, sizeof path);
        expect_refused(p, path, "increasing", "Inf-topped");

        /* one entry short, one too many */
        write_table(p, good, n - 1, path, sizeof path);
        expect_refused(p, path, NULL, "short");
        memcpy(t, good, n * sizeof *t);
        t[n] = good[n - 1] + 1;
        write_table(p, t, n + 1, path, sizeof path);
        expect_refused(p, path, NULL, "long");

        remove_table(p);
        free(t);
        free(good);
    }
    cr_assert_eq(rmdir(tmp_dir), 0, "%s not empty", tmp_dir);
}
