/* t_crosscheck.c — the MPFR oracle against an independent formulation (independent.c: exact
 * midpoint comparisons in GMP integers, hardware RN32/RN16), and the committed vectors
 * against the independent formulation, for every profile:
 *   - format constants and the decode of all 256 codes;
 *   - all 65,536 f16 and all 65,536 bf16 inputs (and f16_expected / bf16_expected.npy);
 *   - every committed edge input (edges_input / edges_expected.npy);
 *   - the certified boundaries (oracle, independent derivation, boundaries.npy);
 *   - every committed store-with-scale pair under every scale model;
 *   - deterministic samples beyond the vectors: f32 inputs, and store pairs near midpoints;
 *   - spot values that DESIGN.md and docs/DESIGN.md §1.4'state as facts.
 * Committed vectors are read from FP8KV_SOURCE_DIR/vectors; a missing file fails the test. */
#include <criterion/criterion.h>
#include <math.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "fp8kv/oracle.h"
#include "fp8kv/spec.h"
#include "independent.h"

#define LOG_FIRST 8        /* mismatches logged per check and profile */
#define STORE_SAMPLES 8192 /* sampled store pairs per profile (x 4 models) */

TestSuite(crosscheck, .timeout = 300);

/* ---- helpers ------------------------------------------------------------------------------- */

/* A count of comparisons and mismatches of one check on one profile. */
struct tally {
    const char *what, *profile;
    size_t checked, bad;
};

static void tally_check(struct tally *t, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tally_check: counts one comparison; logs the first LOG_FIRST failures. */
static void tally_check(struct tally *t, int ok, const char *fmt, ...)
{
    t->checked++;
    if (ok)
        return;
    if (++t->bad <= LOG_FIRST) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cr_log_error("%s [%s]: %s", t->what, t->profile, msg);
    }
}

/* tally_end: fails the test (without stopping it) when any comparison failed. */
static void tally_end(const struct tally *t)
{
    cr_expect_eq(t->bad, 0, "%s [%s]: %zu of %zu comparisons differ", t->what, t->profile, t->bad,
                 t->checked);
    cr_log_info("%s [%s]: %zu comparisons", t->what, t->profile, t->checked);
}

/* load: reads FP8KV_SOURCE_DIR/vectors/<profile>/<file>; a missing or malformed file fails. */
static void load(const struct fp8kv_profile *p, const char *file, enum fp8kv_npy_dtype dtype,
                 int ndim, size_t want_len, struct fp8kv_npy *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/%s/%s", FP8KV_SOURCE_DIR, p->name, file);
    memset(out, 0, sizeof *out);
    int rc = fp8kv_npy_read_expect(path, dtype, ndim, want_len, out);
    cr_assert_eq(rc, 0,
                 "committed vector missing or unreadable: %s (generate the vectors with "
                 "`fp8kv gen --vectors vectors` in the source tree)",
                 fp8kv_last_error());
}

static const struct fp8kv_profile *profile_named(const char *name)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name(name);
    cr_assert_not_null(p, "no profile %s in fp8kv_profiles[]", name);
    return p;
}

static uint32_t bits_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* ---- format constants and decode ---------------------------------------------------------- */

Test(crosscheck, format_tables_and_decode)
{
    for (int id = 0; id < FP8KV_FORMAT_COUNT; id++) {
        const struct fp8kv_format *f = &fp8kv_formats[id];
        const struct indep_format *g = indep_format_of((enum fp8kv_format_id)id);
        cr_expect_eq((int)f->id, id, "%s: id", f->name);
        cr_expect_eq(f->exp_bits, g->exp_bits, "%s: exp_bits", f->name);
        cr_expect_eq(f->man_bits, g->man_bits, "%s: man_bits", f->name);
        cr_expect_eq(f->has_inf, g->has_inf, "%s: has_inf", f->name);
        cr_expect_eq(f->inf_code, g->inf_code, "%s: inf_code 0x%02x, want 0x%02x", f->name,
                     f->inf_code, g->inf_code);
        cr_expect_eq(f->bias, g->bias, "%s: bias %d, want %d", f->name, f->bias, g->bias);
        cr_expect_eq(f->max_code, g->max_code, "%s: max_code 0x%02x, want 0x%02x", f->name,
                     f->max_code, g->max_code);
        cr_expect_eq(f->nan_code, g->nan_code, "%s: nan_code 0x%02x, want 0x%02x", f->name,
                     f->nan_code, g->nan_code);
        cr_expect_eq(f->nan_has_sign, g->nan_has_sign, "%s: nan_has_sign", f->name);
        cr_expect_eq(f->has_negative_zero, g->has_negative_zero, "%s: has_negative_zero", f->name);
        float max = 0, min_normal = 0;
        uint32_t mb = indep_decode_f32((enum fp8kv_format_id)id, g->max_code);
        uint32_t nb = indep_decode_f32((enum fp8kv_format_id)id, (uint8_t)(1u << g->man_bits));
        memcpy(&max, &mb, sizeof max);
        memcpy(&min_normal, &nb, sizeof min_normal);
        cr_expect_eq(f->max_value, (double)max, "%s: max_value %g, want %g", f->name, f->max_value,
                     (double)max);
        cr_expect_eq(f->min_normal, (double)min_normal, "%s: min_normal %a, want %a", f->name,
                     f->min_normal, (double)min_normal);
        cr_expect_eq(fp8kv_boundary_count(f), indep_boundary_count((enum fp8kv_format_id)id),
                     "%s: boundary count", f->name);

        struct tally t = {.what = "decode", .profile = f->name};
        for (int q = 0; q < 256; q++) {
            uint32_t want = indep_decode_f32((enum fp8kv_format_id)id, (uint8_t)q);
            uint32_t got = fp8kv_oracle_decode_f32(f, (uint8_t)q);
            tally_check(&t, got == want, "code 0x%02x: oracle 0x%08x, independent 0x%08x", q, got,
                        want);
            int nan = fp8kv_is_nan_code(f, (uint8_t)q);
            int want_nan = (want & 0x7FFFFFFFu) > 0x7F800000u;
            tally_check(&t, nan == want_nan, "code 0x%02x: fp8kv_is_nan_code %d, want %d", q, nan,
                        want_nan);
            int inf = fp8kv_is_inf_code(f, (uint8_t)q);
            int want_inf = (want & 0x7FFFFFFFu) == 0x7F800000u;
            tally_check(&t, inf == want_inf, "code 0x%02x: fp8kv_is_inf_code %d, want %d", q, inf,
                        want_inf);
        }
        tally_end(&t);
    }
    /* the profile table: exactly these, each found by its parameters */
    static const char *const names[] = {
        "e4m3fn_satfinite",
        "e4m3fn_satfinite_infnan",
        "e4m3fn_nan",
        "e4m3fnuz_satfinite",
        "e4m3fnuz_satfinite_infnan",
        "e4m3fnuz_nan",
        "e5m2_satfinite",
        "e5m2_inf",
        "e5m2fnuz_satfinite",
        "e5m2fnuz_nan",
    };
    const int n = (int)(sizeof names / sizeof names[0]);
    cr_expect_eq(fp8kv_profile_count, n, "fp8kv_profile_count %d, want %d", fp8kv_profile_count, n);
    for (int i = 0; i < n; i++) {
        const struct fp8kv_profile *p = fp8kv_profile_by_name(names[i]);
        cr_assert_not_null(p, "no profile %s", names[i]);
        cr_expect_eq(strncmp(p->name, p->format->name, strlen(p->format->name)), 0, "%s: format %s",
                     p->name, p->format->name);
        cr_expect_eq(fp8kv_profile_find(p->format->id, p->overflow, p->inf), p, "%s: find",
                     p->name);
        cr_expect(p->overflow != FP8KV_OVERFLOW_INF || p->format->has_inf,
                  "%s: overflow inf in a format without Inf", p->name);
        cr_expect(p->overflow != FP8KV_OVERFLOW_NAN || p->inf == FP8KV_INF_NAN, "%s", p->name);
        cr_expect(p->overflow != FP8KV_OVERFLOW_INF || p->inf == FP8KV_INF_INF, "%s", p->name);
    }
}

/* ---- input classes and the code helpers of spec.c ------------------------------------------ */

static uint64_t next_random(uint64_t *state);
static uint32_t random_f32_in(uint64_t *rng, int lo, int hi);

/* fp8kv_classify_f32 against the independent classification: every f16 and bf16 input, and
 * 65,536 f32 samples around and inside each format's range, for every format. */
Test(crosscheck, classes_of_every_format)
{
    for (int id = 0; id < FP8KV_FORMAT_COUNT; id++) {
        const struct fp8kv_format *f = &fp8kv_formats[id];
        struct tally t = {.what = "classes", .profile = f->name};
        uint64_t rng = 0x636C617373657321ull; /* "classes!" */
        for (uint32_t i = 0; i < 3u * 65536u; i++) {
            uint32_t x = i < 65536u    ? fp8kv_widen_to_f32(FP8KV_DTYPE_F16, i)
                         : i < 131072u ? fp8kv_widen_to_f32(FP8KV_DTYPE_BF16, i & 0xFFFFu)
                                       : (uint32_t)(next_random(&rng) >> 32);
            if (i >= 131072u && (i & 1))
                x = random_f32_in(&rng, -20, 17);
            const enum fp8kv_class got = fp8kv_classify_f32(f, x);
            const enum fp8kv_class want = indep_classify_f32((enum fp8kv_format_id)id, x);
            tally_check(&t, got == want, "f32 0x%08x: fp8kv_classify_f32 %s, independent %s", x,
                        fp8kv_class_names[got], fp8kv_class_names[want]);
        }
        tally_end(&t);
    }
}

/* The NaN, Inf, zero and overflow codes and the NaN check of every profile against this
 * formulation's encoder of the inputs they stand for. */
Test(crosscheck, code_helpers_of_every_profile)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        const struct fp8kv_format *f = p->format;
        struct tally t = {.what = "code helpers", .profile = p->name};
        for (int neg = 0; neg < 2; neg++) {
            const uint32_t sign = neg ? 0x80000000u : 0u;
            uint8_t want = indep_encode_f32(p, sign | 0x7FC00000u);
            tally_check(&t, fp8kv_nan_code(f, neg) == want, "nan_code(%d) 0x%02x, want 0x%02x", neg,
                        fp8kv_nan_code(f, neg), want);
            want = indep_encode_f32(p, sign | 0x7F800000u);
            tally_check(&t, fp8kv_infinity_code(p, neg) == want,
                        "infinity_code(%d) 0x%02x, want 0x%02x", neg, fp8kv_infinity_code(p, neg),
                        want);
            want = indep_encode_f32(p, sign);
            tally_check(&t, fp8kv_zero_code(f, neg) == want, "zero_code(%d) 0x%02x, want 0x%02x",
                        neg, fp8kv_zero_code(f, neg), want);
            want = indep_encode_f32(p, sign | 0x7F7FFFFFu); /* FLT_MAX always overflows */
            tally_check(&t, fp8kv_overflow_code(p, neg) == want,
                        "overflow_code(%d) 0x%02x, want 0x%02x", neg, fp8kv_overflow_code(p, neg),
                        want);
        }
        /* codes_match: under class every NaN code matches every NaN code, nothing else */
        for (int got = 0; got < 256; got++)
            for (int want = 0; want < 256; want++) {
                const uint32_t gv = indep_decode_f32(f->id, (uint8_t)got);
                const uint32_t wv = indep_decode_f32(f->id, (uint8_t)want);
                const int gnan = (gv & 0x7FFFFFFFu) > 0x7F800000u;
                const int wnan = (wv & 0x7FFFFFFFu) > 0x7F800000u;
                const int strict =
                    fp8kv_codes_match(f, FP8KV_NAN_CHECK_STRICT, (uint8_t)got, (uint8_t)want);
                const int by_class =
                    fp8kv_codes_match(f, FP8KV_NAN_CHECK_CLASS, (uint8_t)got, (uint8_t)want);
                tally_check(&t, strict == (got == want), "strict 0x%02x 0x%02x: %d", got, want,
                            strict);
                tally_check(&t, by_class == (got == want || (gnan && wnan)),
                            "class 0x%02x 0x%02x: %d", got, want, by_class);
            }
        tally_end(&t);
    }
}

/* ---- all f16 and bf16 inputs -------------------------------------------------------------- */

/* widen_hw: the f32 of the f16 with bits h, widened by the hardware. */
static float widen_hw(uint32_t h)
{
    return indep_f16_to_f32((uint16_t)h);
}

static void half_sweep(enum fp8kv_dtype dtype, const char *committed)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        struct fp8kv_npy want;
        load(p, committed, FP8KV_NPY_U8, 1, 65536, &want);
        const uint8_t *w = want.data;
        struct tally t = {.what = fp8kv_dtype_names[dtype], .profile = p->name};
        struct tally c = {.what = committed, .profile = p->name};
        struct tally wd = {.what = "widening", .profile = p->name};
        for (uint32_t h = 0; h < 65536; h++) {
            uint32_t x = fp8kv_widen_to_f32(dtype, h);
            if (dtype == FP8KV_DTYPE_F16) {
                uint32_t hw = bits_of(widen_hw(h));
                int nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
                /* NaNs: the hardware quiets signalling NaNs; compare class and sign only */
                int ok = nan ? (x & 0x7FFFFFFFu) > 0x7F800000u && (x >> 31) == (hw >> 31) : x == hw;
                tally_check(&wd, ok, "f16 0x%04x: fp8kv_widen_to_f32 0x%08x, hardware 0x%08x", h, x,
                            hw);
            } else {
                tally_check(&wd, x == h << 16, "bf16 0x%04x: fp8kv_widen_to_f32 0x%08x", h, x);
            }
            uint8_t o = fp8kv_oracle_encode_f32(p, x), d = indep_encode_f32(p, x);
            tally_check(&t, o == d, "%s 0x%04x (f32 0x%08x): oracle 0x%02x, independent 0x%02x",
                        fp8kv_dtype_names[dtype], h, x, o, d);
            tally_check(&c, w[h] == d,
                        "%s 0x%04x (f32 0x%08x): committed 0x%02x, independent 0x%02x",
                        fp8kv_dtype_names[dtype], h, x, w[h], d);
        }
        tally_end(&wd);
        tally_end(&t);
        tally_end(&c);
        fp8kv_npy_free(&want);
    }
}

Test(crosscheck, all_f16)
{
    half_sweep(FP8KV_DTYPE_F16, "f16_expected.npy");
}

Test(crosscheck, all_bf16)
{
    half_sweep(FP8KV_DTYPE_BF16, "bf16_expected.npy");
}

/* ---- committed edge inputs ---------------------------------------------------------------- */

Test(crosscheck, edges)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        struct fp8kv_npy in, want;
        load(p, "edges_input.npy", FP8KV_NPY_U32, 1, 0, &in);
        load(p, "edges_expected.npy", FP8KV_NPY_U8, 1, in.shape[0], &want);
        cr_assert_gt(in.count, 0, "%s: edges_input.npy is empty", p->name);
        const uint32_t *x = in.data;
        const uint8_t *w = want.data;
        struct tally t = {.what = "edges oracle", .profile = p->name};
        struct tally c = {.what = "edges_expected.npy", .profile = p->name};
        for (size_t k = 0; k < in.count; k++) {
            uint8_t o = fp8kv_oracle_encode_f32(p, x[k]), d = indep_encode_f32(p, x[k]);
            tally_check(&t, o == d, "f32 0x%08x: oracle 0x%02x, independent 0x%02x", x[k], o, d);
            tally_check(&c, w[k] == d, "f32 0x%08x: committed 0x%02x, independent 0x%02x", x[k],
                        w[k], d);
        }
        tally_end(&t);
        tally_end(&c);
        fp8kv_npy_free(&want);
        fp8kv_npy_free(&in);
    }
}

/* ---- certified boundaries ----------------------------------------------------------------- */

Test(crosscheck, boundaries)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        const struct fp8kv_format *f = p->format;
        /* the overflow = nan rule, where the overflow is visible, in or out of the table */
        const struct fp8kv_profile rule = {
            .name = "nan rule", .format = f, .overflow = FP8KV_OVERFLOW_NAN, .inf = FP8KV_INF_NAN};
        const struct fp8kv_profile *np = &rule;
        int n = fp8kv_boundary_count(f);
        cr_assert_eq(n, f->max_code + 2, "%s: fp8kv_boundary_count %d", f->name, n);
        uint32_t b[256], mine[256];
        cr_assert_eq(fp8kv_oracle_boundaries(f, b), 0, "%s: fp8kv_oracle_boundaries: %s", f->name,
                     fp8kv_last_error());
        indep_boundaries(f->id, mine);
        struct fp8kv_npy committed;
        load(p, "boundaries.npy", FP8KV_NPY_U32, 1, (size_t)n, &committed);
        const uint32_t *cb = committed.data;

        struct tally t = {.what = "boundaries", .profile = p->name};
        tally_check(&t, b[0] == 0, "b[0] = 0x%08x, want 0", b[0]);
        for (int k = 1; k < n; k++) {
            uint8_t want = k == n - 1 ? fp8kv_nan_code(f, 0) : (uint8_t)k;
            uint8_t at = indep_encode_f32(np, b[k]), below = indep_encode_f32(np, b[k] - 1);
            tally_check(&t, at == want, "b[%d] = 0x%08x encodes to 0x%02x, want 0x%02x", k, b[k],
                        at, want);
            tally_check(&t, below == (uint8_t)(k - 1),
                        "b[%d] - 1 = 0x%08x encodes to 0x%02x, want 0x%02x", k, b[k] - 1, below,
                        k - 1);
        }
        for (int k = 0; k < n; k++) {
            tally_check(&t, b[k] == mine[k], "b[%d]: oracle 0x%08x, independent 0x%08x", k, b[k],
                        mine[k]);
            tally_check(&t, cb[k] == mine[k], "b[%d]: committed 0x%08x, independent 0x%08x", k,
                        cb[k], mine[k]);
        }
        tally_end(&t);
        fp8kv_npy_free(&committed);
    }
}

/* ---- committed store-with-scale pairs ----------------------------------------------------- */

/* One test per profile (the oracle's stores are the slow part): the parameter is the index
 * into fp8kv_profiles[]. */
ParameterizedTestParameters(crosscheck, scale_vectors)
{
    int n = fp8kv_profile_count;
    int *index = cr_malloc(sizeof *index * (size_t)n);
    for (int i = 0; index != NULL && i < n; i++)
        index[i] = i;
    return cr_make_param_array(int, index, index != NULL ? (size_t)n : 0);
}

ParameterizedTest(int *index, crosscheck, scale_vectors)
{
    const struct fp8kv_profile *p = &fp8kv_profiles[*index];
    struct fp8kv_npy xs, ss, want;
    load(p, "scale_x.npy", FP8KV_NPY_U32, 1, 0, &xs);
    load(p, "scale_s.npy", FP8KV_NPY_U32, 1, xs.shape[0], &ss);
    load(p, "scale_expected.npy", FP8KV_NPY_U8, 2, xs.shape[0], &want);
    cr_assert_eq(want.shape[1], FP8KV_MODEL_COUNT,
                 "%s: scale_expected.npy has %zu columns, want %d", p->name, want.shape[1],
                 FP8KV_MODEL_COUNT);
    cr_assert_gt(xs.count, 0, "%s: scale_x.npy is empty", p->name);
    const uint32_t *x = xs.data, *s = ss.data;
    const uint8_t *w = want.data;
    struct tally t = {.what = "scale independent vs committed", .profile = p->name};
    struct tally o = {.what = "scale oracle vs committed", .profile = p->name};
    for (size_t r = 0; r < xs.count; r++) {
        for (int m = 0; m < FP8KV_MODEL_COUNT; m++) {
            enum fp8kv_scale_model model = (enum fp8kv_scale_model)m;
            uint8_t e = w[r * FP8KV_MODEL_COUNT + (size_t)m];
            uint8_t d = indep_store(p, model, x[r], s[r]);
            uint8_t g = fp8kv_oracle_store(p, model, x[r], s[r]);
            tally_check(&t, d == e,
                        "row %zu %s x 0x%08x s 0x%08x: committed 0x%02x, independent 0x%02x", r,
                        fp8kv_model_names[m], x[r], s[r], e, d);
            tally_check(&o, g == e, "row %zu %s x 0x%08x s 0x%08x: committed 0x%02x, oracle 0x%02x",
                        r, fp8kv_model_names[m], x[r], s[r], e, g);
        }
    }
    tally_end(&t);
    tally_end(&o);
    fp8kv_npy_free(&want);
    fp8kv_npy_free(&ss);
    fp8kv_npy_free(&xs);
}

/* ---- sampled inputs beyond the committed vectors ------------------------------------------ */

/* next_random: xorshift64, deterministic (the same samples on every run). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = *state;
    z ^= z << 13;
    z ^= z >> 7;
    z ^= z << 17;
    return *state = z;
}

/* random_f32_in: a random f32 of random sign with exponent in [lo, hi] and a random
 * significand. */
static uint32_t random_f32_in(uint64_t *rng, int lo, int hi)
{
    uint64_t r = next_random(rng);
    int e = lo + (int)(r % (uint64_t)(hi - lo + 1));
    return (uint32_t)(r >> 32 & 0x80000000u) | (uint32_t)(e + 127) << 23 |
           (uint32_t)(r >> 8 & 0x7FFFFFu);
}

/* f32 inputs at scale 1: 32,768 uniformly random bit patterns and 32,768 random values with
 * exponents in and around the fp8 range. */
Test(crosscheck, f32_samples)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        uint64_t rng = 0x9E3779B97F4A7C15u;
        struct tally t = {.what = "f32 samples", .profile = p->name};
        for (int k = 0; k < 65536; k++) {
            uint32_t x =
                k < 32768 ? (uint32_t)(next_random(&rng) >> 16) : random_f32_in(&rng, -14, 10);
            uint8_t o = fp8kv_oracle_encode_f32(p, x), d = indep_encode_f32(p, x);
            tally_check(&t, o == d, "f32 0x%08x: oracle 0x%02x, independent 0x%02x", x, o, d);
        }
        tally_end(&t);
    }
}

/* store pairs where the rounding is hard: x = RN32(v * s) +- 0..3 ulps for v an fp8 value or a
 * midpoint (a boundary), s random or special (denormal, zero, Inf, NaN, huge), both signs. */
Test(crosscheck, store_samples)
{
    static const uint32_t special_s[] = {
        0x3F800000u, 0x3DCCCCCDu, 0x40400000u, 0x00000001u, 0x007FFFFFu, 0x00000000u,
        0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F7FFFFFu,
        0x00800000u, 0x3EAAAAABu, 0x3B800000u, 0x43E00000u, 0x47000000u, 0xBDCCCCCDu};
    const int n_special = (int)(sizeof special_s / sizeof special_s[0]);
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        uint32_t b[256];
        indep_boundaries(p->format->id, b);
        int nb = indep_boundary_count(p->format->id);
        uint64_t rng = 0xD1B54A32D192ED03u;
        struct tally t = {.what = "store samples", .profile = p->name};
        int split = 0; /* pairs where the scale models give different codes */
        for (int k = 0; k < STORE_SAMPLES; k++) {
            uint64_t r = next_random(&rng);
            uint32_t s = (r & 3) == 0 ? special_s[(r >> 2) % (uint64_t)n_special]
                                      : random_f32_in(&rng, -12, 12);
            r = next_random(&rng);
            uint32_t v = (r & 1) ? indep_decode_f32(p->format->id, (uint8_t)(r >> 1 & 0x7F))
                                 : b[(r >> 8) % (uint64_t)nb];
            if ((v & 0x7FFFFFFFu) >= 0x7F800000u) /* the NaN code: use max instead */
                v = indep_decode_f32(p->format->id, indep_format_of(p->format->id)->max_code);
            float sv, vv;
            memcpy(&sv, &s, sizeof sv);
            memcpy(&vv, &v, sizeof vv);
            volatile float prod = vv * sv;
            uint32_t x = bits_of(prod);
            if ((x & 0x7FFFFFFFu) < 0x7F800000u && (x & 0x7FFFFFFFu) > 3)
                x = x + (uint32_t)((r >> 16) % 7) - 3; /* +-3 ulps, same sign */
            if (r >> 40 & 1)
                x ^= 0x80000000u;
            if ((r >> 41 & 31) == 0)
                x = (uint32_t)(next_random(&rng) >> 16); /* now and then any bit pattern */
            uint8_t first = 0;
            int differs = 0;
            for (int m = 0; m < FP8KV_MODEL_COUNT; m++) {
                enum fp8kv_scale_model model = (enum fp8kv_scale_model)m;
                uint8_t o = fp8kv_oracle_store(p, model, x, s), d = indep_store(p, model, x, s);
                tally_check(&t, o == d, "%s x 0x%08x s 0x%08x: oracle 0x%02x, independent 0x%02x",
                            fp8kv_model_names[m], x, s, o, d);
                if (m == 0)
                    first = d;
                differs |= d != first;
            }
            split += differs;
        }
        cr_log_info("store samples [%s]: %d of %d pairs split the scale models", p->name, split,
                    STORE_SAMPLES);
        tally_end(&t);
    }
}

/* The per-token-and-head row scale: the MPFR oracle against the hardware division, on rows
 * of random magnitudes (subnormal amax included), rows with zeros, Inf and NaN elements, and
 * rows whose amax is a multiple of the largest finite value. */
Test(crosscheck, row_scales)
{
    for (int id = 0; id < FP8KV_FORMAT_COUNT; id++) {
        const struct fp8kv_format *fmt = &fp8kv_formats[id];
        uint64_t rng = 0x726F777363616C65ull + (uint64_t)id; /* "rowscale" */
        struct tally t = {.what = "row scales", .profile = fmt->name};
        for (int k = 0; k < STORE_SAMPLES; k++) {
            uint32_t row[8];
            const int n = 1 + (int)(next_random(&rng) % 8);
            for (int i = 0; i < n; i++) {
                const uint64_t r = next_random(&rng);
                switch (r % 8) {
                case 0: row[i] = (uint32_t)(r >> 32) & 0x807FFFFFu; break; /* zero, subnormal */
                case 1: row[i] = (r >> 8) % 3 == 0 ? 0x7F800000u : 0xFFC00000u; break;
                case 2: /* a multiple of the largest finite value */
                    row[i] = bits_of(ldexpf((float)fmt->max_value, (int)(r >> 8) % 40 - 20));
                    break;
                default: row[i] = random_f32_in(&rng, -140, 100); break;
                }
            }
            const uint32_t o = fp8kv_oracle_row_scale(fmt, FP8KV_DTYPE_F32, row, (size_t)n);
            const uint32_t d = indep_row_scale((enum fp8kv_format_id)id, row, n);
            tally_check(&t, o == d, "row of %d from 0x%08x: oracle 0x%08x, independent 0x%08x", n,
                        row[0], o, d);
        }
        tally_end(&t);
    }
}

/* ---- spot values: facts stated by docs/docs/DESIGN.md §1 ----------------------------- */

static void spot(const char *profile, uint32_t x, uint8_t want)
{
    const struct fp8kv_profile *p = profile_named(profile);
    uint8_t d = indep_encode_f32(p, x), o = fp8kv_oracle_encode_f32(p, x);
    cr_expect_eq(d, want, "%s: f32 0x%08x: independent 0x%02x, want 0x%02x", profile, x, d, want);
    cr_expect_eq(o, want, "%s: f32 0x%08x: oracle 0x%02x, want 0x%02x", profile, x, o, want);
}

static void spot_store(const char *profile, enum fp8kv_scale_model m, uint32_t x, uint32_t s,
                       uint8_t want)
{
    const struct fp8kv_profile *p = profile_named(profile);
    uint8_t d = indep_store(p, m, x, s), o = fp8kv_oracle_store(p, m, x, s);
    cr_expect_eq(d, want, "%s %s: x 0x%08x s 0x%08x: independent 0x%02x, want 0x%02x", profile,
                 fp8kv_model_names[m], x, s, d, want);
    cr_expect_eq(o, want, "%s %s: x 0x%08x s 0x%08x: oracle 0x%02x, want 0x%02x", profile,
                 fp8kv_model_names[m], x, s, o, want);
}

static const char *const fn_profiles[] = {"e4m3fn_satfinite", "e4m3fn_satfinite_infnan",
                                          "e4m3fn_nan"};
static const char *const fnuz_profiles[] = {"e4m3fnuz_satfinite", "e4m3fnuz_satfinite_infnan",
                                            "e4m3fnuz_nan"};

Test(crosscheck, spot_values)
{
    cr_assert_eq(bits_of(464.0f), 0x43E80000u);
    cr_assert_eq(bits_of(0x1p-10f), 0x3A800000u);
    for (int i = 0; i < 3; i++) {
        const char *fn = fn_profiles[i];
        int sat = i < 2;
        spot(fn, bits_of(464.0f), 0x7E); /* tie 448 | 480 (odd): 448 */
        spot(fn, bits_of(-464.0f), 0xFE);
        spot(fn, 0x43E80001u, sat ? 0x7E : 0x7F); /* next f32 above 464 overflows */
        spot(fn, 0xC3E80001u, sat ? 0xFE : 0xFF);
        spot(fn, bits_of(470.0f), sat ? 0x7E : 0x7F); /* defect 10: not 480 */
        spot(fn, 0x3C700000u, 0x08);                  /* 15 * 2^-10: carry into normal */
        spot(fn, bits_of(3 * 0x1p-10f), 0x02);        /* subnormal ties to even */
        spot(fn, bits_of(5 * 0x1p-10f), 0x02);
        spot(fn, bits_of(1.0625f), 0x38); /* defect 17 */
        spot(fn, bits_of(-1.0625f), 0xB8);
        spot(fn, bits_of(0x1p-10f), 0x00);
        spot(fn, bits_of(-0x1p-10f), 0x80); /* -0 kept */
        spot(fn, 0x80000000u, 0x80);
        spot(fn, 0x80000001u, 0x80);                 /* -f32 denormal */
        spot(fn, 0x7F800000u, i == 0 ? 0x7E : 0x7F); /* +Inf per the Inf policy */
        spot(fn, 0xFF800000u, i == 0 ? 0xFE : 0xFF);
        spot(fn, 0xFFC00001u, 0xFF); /* -NaN keeps its sign */
        spot(fn, 0x7F800001u, 0x7F);

        /* defect 7: f16 0x1334 with s = 0.1f */
        float x7 = widen_hw(0x1334);
        cr_expect_eq(fp8kv_widen_to_f32(FP8KV_DTYPE_F16, 0x1334), bits_of(x7));
        spot_store(fn, FP8KV_MODEL_F32_DIV, bits_of(x7), bits_of(0.1f), 0x05);
        spot_store(fn, FP8KV_MODEL_F16_DIV, bits_of(x7), bits_of(0.1f), 0x04);
        /* defect 8: s = 3.0f, x = 0x3D63FFFF */
        spot_store(fn, FP8KV_MODEL_F32_DIV, 0x3D63FFFFu, bits_of(3.0f), 0x09);
        spot_store(fn, FP8KV_MODEL_F32_MUL_RECIP, 0x3D63FFFFu, bits_of(3.0f), 0x0A);
        /* defect 9: s = 0.1f, x = 0x3A333333 */
        spot_store(fn, FP8KV_MODEL_F32_DIV, 0x3A333333u, bits_of(0.1f), 0x04);
        spot_store(fn, FP8KV_MODEL_EXACT, 0x3A333333u, bits_of(0.1f), 0x03);

        /* NaN and invalid-operation conventions of the store */
        spot_store(fn, FP8KV_MODEL_EXACT, 0xFFC00000u, 0x7FC00000u, 0xFF); /* x's sign first */
        spot_store(fn, FP8KV_MODEL_F32_DIV, bits_of(1.0f), 0xFFC00000u, 0xFF);
        spot_store(fn, FP8KV_MODEL_F32_DIV, 0x80000000u, 0x00000000u, 0x7F); /* 0/0: +NaN */
        spot_store(fn, FP8KV_MODEL_EXACT, 0x80000000u, 0x00000000u, 0x7F);
        spot_store(fn, FP8KV_MODEL_F32_MUL_RECIP, 0x80000000u, 0x00000000u, 0x7F); /* 0*Inf */
    }
    for (int i = 0; i < 3; i++) {
        const char *uz = fnuz_profiles[i];
        int sat = i < 2;
        spot(uz, bits_of(248.0f), sat ? 0x7F : 0x80); /* tie 240 (odd) | 256 (even): over */
        spot(uz, bits_of(-248.0f), sat ? 0xFF : 0x80);
        spot(uz, 0x4377FFFFu, 0x7F);        /* just below 248: 240 */
        spot(uz, bits_of(-0x1p-11f), 0x00); /* no -0 */
        spot(uz, 0x80000000u, 0x00);
        spot(uz, bits_of(0x1p-11f * 3), 0x02); /* subnormal tie 1 | 2: 2 */
        spot(uz, bits_of(0x1p-10f), 0x01);
        spot(uz, 0xFFC00000u, 0x80); /* the only NaN */
        spot(uz, 0xFF800000u, i == 0 ? 0xFF : 0x80);
        spot_store(uz, FP8KV_MODEL_F32_DIV, 0x80000000u, bits_of(3.0f), 0x00);
    }
    /* e5m2: 61440 ties 57344 (0x7B, odd) and 65536 (0x7C, even): it overflows */
    static const char *const e5_profiles[] = {"e5m2_satfinite", "e5m2_inf"};
    for (int i = 0; i < 2; i++) {
        const char *e5 = e5_profiles[i];
        const int inf = i == 1;
        spot(e5, bits_of(61440.0f), inf ? 0x7C : 0x7B);
        spot(e5, bits_of(-61440.0f), inf ? 0xFC : 0xFB);
        spot(e5, 0x476FFFFFu, 0x7B); /* just below the tie */
        spot(e5, bits_of(65536.0f), inf ? 0x7C : 0x7B);
        spot(e5, 0x7F800000u, inf ? 0x7C : 0x7B); /* +Inf: kept, or clamped */
        spot(e5, 0xFF800000u, inf ? 0xFC : 0xFB);
        spot(e5, 0xFFC00001u, 0xFF); /* -NaN keeps its sign */
        spot(e5, 0x7FA00000u, 0x7F);
        spot(e5, bits_of(-0x1p-17f), 0x80); /* half the smallest subnormal: -0 */
        spot(e5, bits_of(0x3p-17f), 0x02);  /* subnormal tie 1 | 2: 2 */
        spot(e5, bits_of(0x7p-17f), 0x04);  /* 3.5 units: carry into the normal 2^-14 */
        spot(e5, bits_of(1.125f), 0x3C);    /* tie 1 | 1.25: even 1 */
        spot(e5, bits_of(1.375f), 0x3E);    /* tie 1.25 | 1.5: even 1.5 */
        /* a store whose quotient overflows f16 (x/s = 1e5): RN16 gives Inf first */
        spot_store(e5, FP8KV_MODEL_F16_DIV, bits_of(1e5f), bits_of(1.0f), inf ? 0x7C : 0x7B);
    }
    /* e5m2fnuz: bias 16, no Inf, NaN 0x80 only, no -0 */
    static const char *const e5uz_profiles[] = {"e5m2fnuz_satfinite", "e5m2fnuz_nan"};
    for (int i = 0; i < 2; i++) {
        const char *e5uz = e5uz_profiles[i];
        const int sat = i == 0;
        spot(e5uz, bits_of(61440.0f), sat ? 0x7F : 0x80);
        spot(e5uz, 0x476FFFFFu, 0x7F);
        spot(e5uz, 0xFF800000u, sat ? 0xFF : 0x80);
        spot(e5uz, 0xFFC00000u, 0x80);
        spot(e5uz, bits_of(-0x1p-18f), 0x00); /* no -0 */
        spot(e5uz, bits_of(0x1p-17f), 0x01);
        spot(e5uz, bits_of(0x3p-18f), 0x02); /* subnormal tie 1 | 2: 2 */
        spot(e5uz, bits_of(1.0f), 0x40);
    }
}
