/* t_block_oracle.c — the MPFR oracle of the block-scaled formats (fp8kv/block_oracle.h) against
 * an independent formulation (independent_block.c: GMP rationals against grid tables, the
 * hardware's float for the f32 steps), and against hand-derived spot values:
 *   - block.c's tables against independent_block.c's constants; every element code's value
 *     and its round trip;
 *   - the decode of every element code under every scale code of every block format (nvfp4
 *     under several G, powers of two and not);
 *   - element encodes of the grid's values and midpoints +- 1 and 2 ulps, subnormals, the
 *     saturation edge and random inputs, at many scales;
 *   - block scales of every rule and model on amax edges (max_elem 2^k and its neighbours,
 *     powers of two, the UE4M3 grid's values and midpoints times 6G and 4G, tiny amax, zero)
 *     and random amax;
 *   - whole blocks: random, NaN/Inf, and 4over6's constructed exact ties;
 *   - spot values, each derived in a comment;
 *   - the committed vectors/blocks/<format>/ against the independent formulation.
 * A teardown fails when an oracle call left MPFR's exponent range changed. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/block_oracle.h"
#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "fp8kv/spec.h"
#include "independent_block.h"

#define LOG_FIRST 8
#define RANDOM_BLOCKS 1000 /* per format, rule, model and G */

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

TestSuite(block_oracle, .init = set_odd_range, .fini = range_restored, .timeout = 600);

/* ---- helpers -----------------------------------------------------------------------------------
 */

struct tally {
    const char *what;
    size_t checked, bad;
};

static void tally_check(struct tally *t, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tally_check: counts one comparison; logs the first LOG_FIRST failures. */
static void tally_check(struct tally *t, int ok, const char *fmt, ...)
{
    t->checked++;
    if (ok || ++t->bad > LOG_FIRST)
        return;
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cr_log_error("%s: %s", t->what, msg);
}

/* tally_end: fails the test when any comparison failed, or when nothing was compared. */
static void tally_end(const struct tally *t)
{
    cr_expect_eq(t->bad, 0, "%s: %zu of %zu comparisons differ", t->what, t->bad, t->checked);
    cr_expect_gt(t->checked, 0, "%s: nothing compared", t->what);
    cr_log_info("%s: %zu comparisons", t->what, t->checked);
}

static uint32_t bits_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static float f32_of(uint32_t b)
{
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static const struct fp8kv_block_format *format(enum fp8kv_block_format_id id)
{
    return &fp8kv_block_formats[id];
}

/* The G values nvfp4 is checked under: 1, powers of two, and f32s that are not. */
static const float g_values[] = {1.0f, 0.5f, 0x1p-20f, 3.0f, 1.0f / 3.0f, 0.0123f, 1234.5678f};
#define G_COUNT (sizeof g_values / sizeof g_values[0])

/* The G values of format f: nvfp4's list, MX's single (ignored) 1. */
static size_t g_count(const struct fp8kv_block_format *f)
{
    return f->scale_kind == FP8KV_SCALE_UE4M3 ? G_COUNT : 1;
}

/* A list of f32 bit patterns, growing. */
struct inputs {
    uint32_t v[8192];
    size_t n;
};

static void add(struct inputs *in, float x)
{
    if (isfinite(x) && in->n < sizeof in->v / sizeof in->v[0])
        in->v[in->n++] = bits_of(x);
}

/* add_near: x, its neighbours 1 and 2 f32 ulps away, and their negatives. */
static void add_near(struct inputs *in, float x)
{
    float lo = x, hi = x;
    add(in, x);
    add(in, -x);
    for (int k = 0; k < 2; k++) {
        lo = nextafterf(lo, -INFINITY);
        hi = nextafterf(hi, INFINITY);
        add(in, lo);
        add(in, hi);
        add(in, -hi);
    }
}

static float random_f32(uint64_t *state, int emin, int emax)
{
    const uint64_t r = fp8kv_splitmix64(state);
    const int e = emin + (int)(r % (uint64_t)(emax - emin + 1));
    const float m = 1.0f + (float)((r >> 16) & 0x7FFFFF) * 0x1p-23f;
    return ldexpf((r >> 40) & 1 ? -m : m, e);
}

/* add_grid_edges: every value of element format e's grid and every midpoint of neighbours
 * (the midpoint above max with the next value of the unbounded grid too), times factor, with
 * their neighbours. */
static void add_grid_edges(struct inputs *in, enum fp8kv_element_id e, float factor)
{
    const struct indep_element *f = indep_element_of(e);
    for (unsigned c = 0; c <= f->max_code; c++) {
        const double v = indep_element_value(e, (uint8_t)c);
        const double next = c < f->max_code ? indep_element_value(e, (uint8_t)(c + 1))
                                            : v + ldexp(1.0, f->emax - f->man_bits);
        add_near(in, (float)(v * factor));
        add_near(in, (float)((v + next) / 2 * factor));
    }
    add_near(in, (float)(2 * f->max_value * factor));
}

/* ---- tables and element codes ---------------------------------------------------------------- */

Test(block_oracle, tables)
{
    for (int id = 0; id < FP8KV_ELEMENT_COUNT; id++) {
        const struct fp8kv_element_format *e = &fp8kv_element_formats[id];
        const struct indep_element *g = indep_element_of((enum fp8kv_element_id)id);
        cr_expect_eq((int)e->id, id);
        cr_expect_eq(e->exp_bits, g->exp_bits, "%s exp_bits", e->name);
        cr_expect_eq(e->man_bits, g->man_bits, "%s man_bits", e->name);
        cr_expect_eq(e->bits, 1 + g->exp_bits + g->man_bits, "%s bits", e->name);
        cr_expect_eq(e->bias, g->bias, "%s bias", e->name);
        cr_expect_eq(e->max_code, g->max_code, "%s max_code", e->name);
        cr_expect_eq(e->max_value, g->max_value, "%s max_value", e->name);
        cr_expect_eq(e->max_value, indep_element_value((enum fp8kv_element_id)id, g->max_code));
        cr_expect_eq(e->emax, g->emax, "%s emax", e->name);
        cr_expect_eq(e->sign_bit, 1u << (g->exp_bits + g->man_bits), "%s sign_bit", e->name);
        cr_expect_eq(e->min_normal, ldexp(1.0, 1 - g->bias), "%s min_normal", e->name);
        cr_expect_eq(fp8kv_element_code_count(e), 1 << e->bits, "%s code count", e->name);
    }
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = format((enum fp8kv_block_format_id)id);
        const struct indep_block *g = indep_block_of((enum fp8kv_block_format_id)id);
        cr_expect_eq((int)f->id, id);
        cr_expect_eq(f->element, &fp8kv_element_formats[g->element], "%s element", f->name);
        cr_expect_eq(f->block_size, g->block_size, "%s block_size", f->name);
        cr_expect_eq(f->scale_kind == FP8KV_SCALE_UE4M3, g->nvfp4, "%s scale", f->name);
        cr_expect_eq(fp8kv_block_scale_code_count(f), g->nvfp4 ? 128 : 256);
        cr_expect_eq(fp8kv_block_scale_nan_code(f), g->nvfp4 ? 0x7F : 0xFF);
        cr_expect_eq(fp8kv_block_format_by_name(f->name), f);
        for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++)
            cr_expect_eq(fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r),
                         g->nvfp4 ? r >= FP8KV_RULE_RNE : r <= FP8KV_RULE_EVEN, "%s rule %s",
                         f->name, fp8kv_block_rule_names[r]);
        cr_expect(fp8kv_block_takes_rule(f, f->default_rule));
    }
    cr_expect_null(fp8kv_block_format_by_name("mxfp5"));
}

Test(block_oracle, element_codes_decode_and_round_trip)
{
    struct tally t = {.what = "element decode / round trip"};
    mpfr_t v;
    mpfr_init2(v, 64);
    for (int id = 0; id < FP8KV_ELEMENT_COUNT; id++) {
        const struct fp8kv_element_format *e = &fp8kv_element_formats[id];
        for (int c = 0; c < fp8kv_element_code_count(e); c++) {
            const int nan = fp8kv_oracle_element_decode(e, (uint8_t)c, v);
            const double want = indep_element_value((enum fp8kv_element_id)id, (uint8_t)c);
            if (isnan(want)) {
                tally_check(&t, nan && mpfr_nan_p(v), "%s 0x%02x: want NaN", e->name, c);
                continue;
            }
            tally_check(
                &t, !nan && mpfr_get_d(v, MPFR_RNDN) == want && !mpfr_signbit(v) == !signbit(want),
                "%s 0x%02x: %a, want %a", e->name, c, mpfr_get_d(v, MPFR_RNDN), want);
            if (!isinf(want)) /* a finite code encodes back to itself, -0 included */
                tally_check(&t, fp8kv_oracle_element_encode(e, v) == c, "%s 0x%02x round trip",
                            e->name, c);
        }
    }
    mpfr_clear(v);
    tally_end(&t);
}

/* ---- decode ------------------------------------------------------------------------------------
 */

Test(block_oracle, decode_every_code)
{
    struct tally t = {.what = "decode"};
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = format((enum fp8kv_block_format_id)id);
        for (size_t gi = 0; gi < g_count(f); gi++) {
            const uint32_t g = bits_of(g_values[gi]);
            for (int s = 0; s < fp8kv_block_scale_code_count(f); s++)
                for (int c = 0; c < fp8kv_element_code_count(f->element); c++) {
                    const uint32_t got =
                        fp8kv_oracle_block_decode_one(f, g, (uint8_t)s, (uint8_t)c);
                    const uint32_t want = indep_block_decode_one((enum fp8kv_block_format_id)id, g,
                                                                 (uint8_t)s, (uint8_t)c);
                    tally_check(&t, got == want,
                                "%s G=%a scale 0x%02x elem 0x%02x: %08x, want %08x", f->name,
                                (double)g_values[gi], s, c, got, want);
                }
        }
    }
    tally_end(&t);
}

/* ---- element encode -----------------------------------------------------------------------------
 */

Test(block_oracle, element_encode_at_scale_one)
{
    struct tally t = {.what = "element encode"};
    mpfr_t v;
    mpq_t q;
    mpfr_init2(v, 24);
    mpq_init(q);
    uint64_t seed = 0xB10C0001u;
    for (int id = 0; id < FP8KV_ELEMENT_COUNT; id++) {
        const struct fp8kv_element_format *e = &fp8kv_element_formats[id];
        static struct inputs in;
        in.n = 0;
        add_grid_edges(&in, (enum fp8kv_element_id)id, 1.0f);
        add(&in, 0.0f);
        add(&in, -0.0f);
        add_near(&in, 0x1p-149f);
        add_near(&in, FLT_MAX);
        for (int k = 0; k < 1000; k++)
            add(&in, random_f32(&seed, -2 * e->bias - 4, e->emax + 3));
        for (size_t i = 0; i < in.n; i++) {
            const float x = f32_of(in.v[i]);
            mpfr_set_flt(v, x, MPFR_RNDN);
            mpq_set_d(q, (double)x);
            const uint8_t got = fp8kv_oracle_element_encode(e, v);
            const uint8_t want = indep_element_encode((enum fp8kv_element_id)id, q, signbit(x));
            tally_check(&t, got == want, "%s %a: 0x%02x, want 0x%02x", e->name, (double)x, got,
                        want);
        }
    }
    mpfr_clear(v);
    mpq_clear(q);
    tally_end(&t);
}

/* element_under_scales: elements of format id under each scale of the list, of the grid edges
 * scaled by that scale's value, and random inputs, in both models, against independent. */
static void element_under_scales(struct tally *t, enum fp8kv_block_format_id id,
                                 const uint8_t *scales, size_t n_scales, uint64_t *seed)
{
    const struct fp8kv_block_format *f = format(id);
    static struct inputs in;
    for (size_t gi = 0; gi < g_count(f); gi++) {
        const uint32_t g = bits_of(g_values[gi]);
        for (size_t si = 0; si < n_scales; si++) {
            const uint8_t s = scales[si];
            double factor = ldexp(1.0, (int)s - 127);
            if (f->scale_kind == FP8KV_SCALE_UE4M3)
                factor = indep_element_value(FP8KV_ELEM_E4M3, s) * g_values[gi];
            in.n = 0;
            add_grid_edges(&in, f->element->id, (float)factor);
            for (int k = 0; k < 64; k++)
                add(&in, (float)(factor * (double)random_f32(seed, -4, f->element->emax + 1)));
            add(&in, 0.0f);
            add(&in, -0.0f);
            add_near(&in, 0x1p-149f);
            for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
                const struct fp8kv_block_params p = {f->default_rule, (enum fp8kv_block_model)m, g};
                for (size_t i = 0; i < in.n; i++) {
                    const uint8_t got = fp8kv_oracle_block_element(f, &p, s, in.v[i]);
                    const uint8_t want =
                        indep_block_element(id, (enum fp8kv_block_model)m, g, s, in.v[i]);
                    tally_check(t, got == want, "%s %s G=%a scale 0x%02x x=%a: 0x%02x, want 0x%02x",
                                f->name, fp8kv_block_model_names[m], (double)g_values[gi], s,
                                (double)f32_of(in.v[i]), got, want);
                }
            }
        }
    }
}

Test(block_oracle, element_encode_under_scales)
{
    struct tally t = {.what = "element under scale"};
    uint64_t seed = 0xB10C0002u;
    static const uint8_t e8m0[] = {0,   1,   2,   10,  60,  100, 120, 126,
                                   127, 128, 130, 140, 200, 250, 254};
    for (int id = 0; id < FP8KV_NVFP4; id++)
        element_under_scales(&t, (enum fp8kv_block_format_id)id, e8m0, sizeof e8m0, &seed);
    uint8_t ue4m3[127];
    for (int s = 0; s < 127; s++)
        ue4m3[s] = (uint8_t)s;
    element_under_scales(&t, FP8KV_NVFP4, ue4m3, sizeof ue4m3, &seed);
    tally_end(&t);
}

/* ---- block scales -----------------------------------------------------------------------------
 */

/* add_amax_edges: the amax values where a scale decision changes, for format f under G. */
static void add_amax_edges(struct inputs *in, const struct fp8kv_block_format *f, float g,
                           uint64_t *seed)
{
    const struct fp8kv_element_format *e = f->element;
    for (int k = -160; k <= 130; k++) {
        add_near(in, (float)ldexp(e->max_value, k));
        add_near(in, (float)ldexp(1.0, k));
        /* even: amax from here up rounds to the next binade with 1 + man_bits bits */
        add_near(in, (float)ldexp(2.0 - ldexp(1.0, -(e->man_bits + 1)), k));
    }
    if (f->scale_kind == FP8KV_SCALE_UE4M3) {
        add_grid_edges(in, FP8KV_ELEM_E4M3, 6.0f * g);
        add_grid_edges(in, FP8KV_ELEM_E4M3, 4.0f * g);
    }
    for (uint32_t b = 1; b < 8; b++)
        add(in, f32_of(b));
    add(in, 0.0f);
    add_near(in, FLT_MAX);
    for (int k = 0; k < 2000; k++)
        add(in, random_f32(seed, -149, 127));
}

Test(block_oracle, block_scales)
{
    struct tally t = {.what = "block scale"};
    uint64_t seed = 0xB10C0003u;
    size_t rceil_models_differ = 0, nv_models_differ = 0;
    static struct inputs in;
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = format((enum fp8kv_block_format_id)id);
        for (size_t gi = 0; gi < g_count(f); gi++) {
            const uint32_t g = bits_of(g_values[gi]);
            in.n = 0;
            add_amax_edges(&in, f, g_values[gi], &seed);
            for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++) {
                if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r))
                    continue;
                for (size_t i = 0; i < in.n; i++) {
                    uint8_t got[FP8KV_BLOCK_MODEL_COUNT];
                    for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
                        const struct fp8kv_block_params p = {(enum fp8kv_block_rule)r,
                                                             (enum fp8kv_block_model)m, g};
                        got[m] = fp8kv_oracle_block_scale(f, &p, in.v[i]);
                        const uint8_t want = indep_block_scale(
                            (enum fp8kv_block_format_id)id, (enum fp8kv_block_rule)r,
                            (enum fp8kv_block_model)m, g, in.v[i]);
                        tally_check(&t, got[m] == want,
                                    "%s %s %s G=%a amax=%a: 0x%02x, want 0x%02x", f->name,
                                    fp8kv_block_rule_names[r], fp8kv_block_model_names[m],
                                    (double)g_values[gi], (double)f32_of(in.v[i]), got[m], want);
                    }
                    const int differ = got[FP8KV_BLOCK_MODEL_EXACT] != got[FP8KV_BLOCK_MODEL_F32];
                    rceil_models_differ += r == FP8KV_RULE_RCEIL && differ;
                    nv_models_differ += f->scale_kind == FP8KV_SCALE_UE4M3 && differ;
                    cr_expect(!differ || r == FP8KV_RULE_RCEIL ||
                                  f->scale_kind == FP8KV_SCALE_UE4M3,
                              "%s %s amax=%a: the models differ", f->name,
                              fp8kv_block_rule_names[r], (double)f32_of(in.v[i]));
                }
            }
        }
    }
    tally_end(&t);
    /* the edges reach the cases where an f32 division decides differently from the real one */
    cr_log_info("scale models differ: rceil %zu, nvfp4 %zu", rceil_models_differ, nv_models_differ);
    cr_expect_gt(rceil_models_differ, 0);
    cr_expect_gt(nv_models_differ, 0);
}

/* ---- whole blocks -------------------------------------------------------------------------------
 */

/* random_block: block i of a seeded mix of kinds: typical magnitudes, the whole f32 range,
 * dyadic values on and between grids (ties), zeros of both signs, and a NaN or an Inf. */
static void random_block(uint32_t *x, int n, int i, uint64_t *seed)
{
    const int kind = i % 5;
    const int top = (int)(fp8kv_splitmix64(seed) % 40) - 20;
    for (int j = 0; j < n; j++) {
        const uint64_t r = fp8kv_splitmix64(seed);
        float v;
        switch (kind) {
        case 0: v = random_f32(seed, top - 12, top); break;
        case 1: v = random_f32(seed, -149, 127); break;
        case 2: v = ldexpf((float)((int)(r % 129) - 64), top - 4); break;
        case 3: v = (r & 3) == 0 ? ((r & 4) ? -0.0f : 0.0f) : random_f32(seed, top - 3, top); break;
        default: v = random_f32(seed, top - 8, top); break;
        }
        x[j] = bits_of(v);
    }
    if (kind == 4 && i % 10 == 4) {
        static const uint32_t specials[] = {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u};
        const uint64_t r = fp8kv_splitmix64(seed);
        x[r % (uint64_t)n] = specials[(r >> 8) % 4];
    }
}

/* compare_block: the oracle's and the independent codes of block x. */
static void compare_block(struct tally *t, enum fp8kv_block_format_id id, enum fp8kv_block_rule r,
                          enum fp8kv_block_model m, uint32_t g, const uint32_t *x, int *cmp)
{
    const struct fp8kv_block_format *f = format(id);
    const struct fp8kv_block_params p = {r, m, g};
    uint8_t s, e[FP8KV_BLOCK_MAX], ws, we[FP8KV_BLOCK_MAX];
    fp8kv_oracle_block_encode(f, &p, x, &s, e);
    indep_block_encode(id, r, m, g, x, &ws, we, cmp);
    int same = s == ws && memcmp(e, we, (size_t)f->block_size) == 0, first = 0;
    while (!same && first < f->block_size && e[first] == we[first])
        first++;
    tally_check(t, same,
                "%s %s %s G=%a x[0]=%08x: scale 0x%02x, want 0x%02x; element %d: 0x%02x, "
                "want 0x%02x",
                f->name, fp8kv_block_rule_names[r], fp8kv_block_model_names[m], (double)f32_of(g),
                x[0], s, ws, first, e[first % f->block_size], we[first % f->block_size]);
}

Test(block_oracle, random_blocks)
{
    struct tally t = {.what = "block encode"};
    uint64_t seed = 0xB10C0004u;
    uint32_t x[FP8KV_BLOCK_MAX];
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = format((enum fp8kv_block_format_id)id);
        for (size_t gi = 0; gi < g_count(f); gi++)
            for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++)
                for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
                    if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r))
                        continue;
                    for (int i = 0; i < RANDOM_BLOCKS; i++) {
                        random_block(x, f->block_size, i, &seed);
                        compare_block(&t, (enum fp8kv_block_format_id)id, (enum fp8kv_block_rule)r,
                                      (enum fp8kv_block_model)m, bits_of(g_values[gi]), x, NULL);
                    }
                }
    }
    tally_end(&t);
}

/* 4over6 on blocks [6 G', y1 G', y2 G', 0...] (G' a power of two times G = 1): s6 = 1 and
 * s4 = 1.5 under G', so the two candidates decode differently; y1, y2 run over multiples of
 * 1/8 up to 6, which makes exact ties of the two sums of squared errors (y = 0.625: 0.5 under
 * s6, 0.75 under s4, both 1/8 off). The independent formulation says which blocks tie; the
 * oracle must agree with it everywhere and keep s6 on the ties. */
Test(block_oracle, four_over_six_ties)
{
    struct tally t = {.what = "4over6 constructed"};
    size_t ties = 0, s4_wins = 0, s6_wins = 0;
    static const float scales[] = {1.0f, 0.25f, 0x1p-20f};
    uint32_t x[16] = {0};
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
        for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++)
            for (int a = 0; a <= 48; a++)
                for (int b = 0; b <= 48; b += 3) {
                    const uint32_t g = bits_of(scales[si]);
                    x[0] = bits_of(6.0f * scales[si]);
                    x[1] = bits_of((float)a / 8 * scales[si]);
                    x[2] = bits_of(-(float)b / 8 * scales[si]);
                    int cmp = 0;
                    compare_block(&t, FP8KV_NVFP4, FP8KV_RULE_4OVER6, (enum fp8kv_block_model)m, g,
                                  x, &cmp);
                    ties += cmp == 0;
                    s4_wins += cmp < 0;
                    s6_wins += cmp > 0;
                }
    /* [6, 0.625 + d, 0.625, 0.625 - d]: under s6 the errors are 0, 1/8 + d, 1/8, 1/8 - d,
     * under s4 0, 1/8 - d, 1/8, 1/8 + d: an exact tie whose squares need 2 x 24 bits, summed
     * in a different order (sums rounded to fewer bits break it one way or the other) */
    size_t exact_ties = 0;
    memset(x, 0, sizeof x);
    for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++)
        for (int k = 1; k < 4000; k += 7) {
            const float d = (float)k * 0x1p-24f;
            x[0] = bits_of(6.0f);
            x[1] = bits_of(0.625f + d);
            x[2] = bits_of(0.625f);
            x[3] = bits_of(0.625f - d);
            int cmp = 1;
            compare_block(&t, FP8KV_NVFP4, FP8KV_RULE_4OVER6, (enum fp8kv_block_model)m,
                          bits_of(1.0f), x, &cmp);
            exact_ties += cmp == 0;
        }
    cr_expect_eq(exact_ties, 2 * 572, "the constructed exact ties: %zu", exact_ties);
    tally_end(&t);
    cr_log_info("4over6: %zu ties, %zu s4, %zu s6", ties, s4_wins, s6_wins);
    cr_expect_gt(ties, 100);
    cr_expect_gt(s4_wins, 100);
    cr_expect_gt(s6_wins, 100);
}

/* ---- spot values, derived by hand --------------------------------------------------------------
 */

/* spot_block: block f under rule r and model m (G = g) whose leading elements are x[0..n) and
 * the rest 0 encodes to scale want_scale and leading elements want[0..n) (the rest 0). */
static void spot_block(enum fp8kv_block_format_id id, enum fp8kv_block_rule r,
                       enum fp8kv_block_model m, float g, const float *x, int n, uint8_t want_scale,
                       const uint8_t *want)
{
    const struct fp8kv_block_format *f = format(id);
    uint32_t in[FP8KV_BLOCK_MAX] = {0};
    for (int i = 0; i < n; i++)
        in[i] = bits_of(x[i]);
    uint8_t s, e[FP8KV_BLOCK_MAX];
    const struct fp8kv_block_params p = {r, m, bits_of(g)};
    fp8kv_oracle_block_encode(f, &p, in, &s, e);
    cr_expect_eq(s, want_scale, "%s %s %s x0=%a: scale 0x%02x, want 0x%02x", f->name,
                 fp8kv_block_rule_names[r], fp8kv_block_model_names[m], (double)x[0], s,
                 want_scale);
    for (int i = 0; i < f->block_size; i++)
        cr_expect_eq(e[i], i < n ? want[i] : 0, "%s %s x0=%a: element %d 0x%02x", f->name,
                     fp8kv_block_rule_names[r], (double)x[0], i, e[i]);
}

Test(block_oracle, spot_values)
{
    const enum fp8kv_block_model EX = FP8KV_BLOCK_MODEL_EXACT, F32 = FP8KV_BLOCK_MODEL_F32;
    /* mxfp4, amax 7. floor: X = floor(log2 7) - emax(e2m1) = 2 - 2 = 0 (E8M0 127 = 0x7F); 7 is
     * above max 6 and saturates to 6 (0x7): the OCP rule clips. rceil: the smallest X with
     * 7 <= 6 2^X is 1 (0x80); 7/2 = 3.5 ties 3 (0x5, odd) and 4 (0x6): 4. even: 7 = 1.11b 2^2
     * rounds (2 bits, ties away) to 8, X = 3 - 2 = 1: as rceil. 1 (under X = 0: 0x2; under
     * X = 1: 0.5, 0x1) and -0.25 (under X = 0 a tie of -0 and -0.5: the even -0, 0x8). */
    const float mx4[] = {7.0f, 1.0f, -0.25f};
    spot_block(FP8KV_MXFP4, FP8KV_RULE_FLOOR, EX, 1, mx4, 3, 0x7F,
               (const uint8_t[]){0x7, 0x2, 0x8});
    spot_block(FP8KV_MXFP4, FP8KV_RULE_RCEIL, EX, 1, mx4, 3, 0x80,
               (const uint8_t[]){0x6, 0x1, 0x8});
    spot_block(FP8KV_MXFP4, FP8KV_RULE_EVEN, F32, 1, mx4, 3, 0x80,
               (const uint8_t[]){0x6, 0x1, 0x8});
    /* mxfp8_e4m3, amax 480 = 1.111b 2^8. floor: X = 8 - 8 = 0, 480 saturates to 448 (0x7E).
     * even: 480 has 4 bits already, R = 480, X = 0 too. rceil: 480 > 448, X = 1 (0x80),
     * 240 = 1.111b 2^7: exponent field 7 + 7 = 14, mantissa 7: 0x77. */
    const float e4[] = {480.0f};
    spot_block(FP8KV_MXFP8_E4M3, FP8KV_RULE_FLOOR, EX, 1, e4, 1, 0x7F, (const uint8_t[]){0x7E});
    spot_block(FP8KV_MXFP8_E4M3, FP8KV_RULE_EVEN, EX, 1, e4, 1, 0x7F, (const uint8_t[]){0x7E});
    spot_block(FP8KV_MXFP8_E4M3, FP8KV_RULE_RCEIL, EX, 1, e4, 1, 0x80, (const uint8_t[]){0x77});
    /* mxfp6_e2m3, amax = 7.5 2^-127 + 2^-148 (the next f32 above 7.5 2^-127 = 1.875 2^-125,
     * whose ulp is 2^-148). rceil exact: amax > 7.5 2^-127, X = -126 (0x01). rceil f32:
     * amax / 7.5 = 2^-127 + 2^-148 / 7.5, and 2^-148 / 7.5 < 2^-150 is below half the f32
     * subnormal spacing 2^-149: RN32 gives 2^-127, X = -127 (0x00). */
    const struct fp8kv_block_params rc_ex = {FP8KV_RULE_RCEIL, EX, 0},
                                    rc_32 = {FP8KV_RULE_RCEIL, F32, 0};
    const uint32_t a = bits_of(nextafterf(7.5f * 0x1p-127f, 1.0f));
    cr_expect_eq(fp8kv_oracle_block_scale(format(FP8KV_MXFP6_E2M3), &rc_ex, a), 0x01);
    cr_expect_eq(fp8kv_oracle_block_scale(format(FP8KV_MXFP6_E2M3), &rc_32, a), 0x00);
    /* nvfp4, G = 1, amax 6.3: 6.3 / 6 = 1.05 lies between the e4m3 values 1 (0x38) and 1.125
     * (0x39), below their midpoint 1.0625: rne s = 1, and 6.3 saturates to 6 (0x7); ceil
     * s = 1.125, 6.3 / 1.125 = 5.6 rounds to 6 (0x7, decoding to 6.75). */
    const float nv[] = {6.3f};
    spot_block(FP8KV_NVFP4, FP8KV_RULE_RNE, EX, 1, nv, 1, 0x38, (const uint8_t[]){0x7});
    spot_block(FP8KV_NVFP4, FP8KV_RULE_CEIL, F32, 1, nv, 1, 0x39, (const uint8_t[]){0x7});
    /* 4over6, G = 1, [6, 4.5]: s6 = 1, 4.5 ties 4 (0x6, even) and 6: error 0.5. s4 =
     * RNE(6 / 4) = 1.5 (0x3C), elements 6 / 1.5 = 4 (0x6) and 4.5 / 1.5 = 3 (0x5): exact, s4.
     * [6, 0.625]: s6 gives 0.5 (0x1), s4 0.625 / 1.5 = 0.4167 -> 0.5 (0x1) decoding to 0.75:
     * both 1/8 off, a tie: s6. */
    spot_block(FP8KV_NVFP4, FP8KV_RULE_4OVER6, EX, 1, (const float[]){6.0f, 4.5f}, 2, 0x3C,
               (const uint8_t[]){0x6, 0x5});
    spot_block(FP8KV_NVFP4, FP8KV_RULE_4OVER6, EX, 1, (const float[]){6.0f, 0.625f}, 2, 0x38,
               (const uint8_t[]){0x7, 0x1});
    /* all zero: amax 0 gives X = -127 (E8M0 0x00), -0 keeps its sign (0x80); nvfp4 s = 0 */
    spot_block(FP8KV_MXFP8_E4M3, FP8KV_RULE_FLOOR, EX, 1, (const float[]){-0.0f, 0.0f}, 2, 0x00,
               (const uint8_t[]){0x80, 0x00});
    spot_block(FP8KV_NVFP4, FP8KV_RULE_RNE, EX, 1, (const float[]){-0.0f}, 1, 0x00,
               (const uint8_t[]){0x8});
    /* a NaN or an Inf: the scale's NaN code, elements 0 */
    spot_block(FP8KV_MXFP4, FP8KV_RULE_FLOOR, EX, 1, (const float[]){1.0f, NAN}, 2, 0xFF,
               (const uint8_t[]){0, 0});
    spot_block(FP8KV_NVFP4, FP8KV_RULE_RNE, EX, 1, (const float[]){-INFINITY}, 1, 0x7F,
               (const uint8_t[]){0});
    /* decode: mxfp4 6 (0x7) under 2^127 (0xFE) is above FLT_MAX: +Inf; mxfp8_e4m3 2^-9 (0x01)
     * under 2^-127 (0x00) is 2^-136, the f32 subnormal 2^13 2^-149 = 0x00002000; nvfp4 6 (0x7)
     * under s = 1.5 (0x3C) and G = RN32(1/3) = 11184811 2^-25: 9 G = 100663299 2^-25 has 27
     * bits, rounds to 12582912 2^-22 = 3 exactly (0x40400000); a NaN scale gives 0x7FC00000. */
    cr_expect_eq(fp8kv_oracle_block_decode_one(format(FP8KV_MXFP4), 0, 0xFE, 0x7), 0x7F800000u);
    cr_expect_eq(fp8kv_oracle_block_decode_one(format(FP8KV_MXFP8_E4M3), 0, 0x00, 0x01), 0x2000u);
    cr_expect_eq(
        fp8kv_oracle_block_decode_one(format(FP8KV_NVFP4), bits_of(1.0f / 3.0f), 0x3C, 0x7),
        0x40400000u);
    cr_expect_eq(fp8kv_oracle_block_decode_one(format(FP8KV_NVFP4), bits_of(1.0f), 0x7F, 0x7),
                 0x7FC00000u);
    /* an element NaN keeps its sign: mxfp8_e4m3 0xFF, e5m2's 0xFC is -Inf */
    cr_expect_eq(fp8kv_oracle_block_decode_one(format(FP8KV_MXFP8_E4M3), 0, 127, 0xFF),
                 0xFFC00000u);
    cr_expect_eq(fp8kv_oracle_block_decode_one(format(FP8KV_MXFP8_E5M2), 0, 127, 0xFC),
                 0xFF800000u);
}

/* ---- the committed vectors ------------------------------------------------------------------- */

/* load: vectors/blocks/<format>/<file> from the source tree; a missing file fails. */
static void load(const struct fp8kv_block_format *f, const char *file, enum fp8kv_npy_dtype dtype,
                 int ndim, struct fp8kv_npy *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/blocks/%s/%s", FP8KV_SOURCE_DIR, f->name, file);
    memset(out, 0, sizeof *out);
    cr_assert_eq(fp8kv_npy_read_expect(path, dtype, ndim, 0, out), 0,
                 "committed vector missing or unreadable: %s (`fp8kv gen --vectors vectors`)",
                 fp8kv_last_error());
}

Test(block_oracle, committed_vectors)
{
    struct tally t = {.what = "committed block vectors"};
    for (int id = 0; id < FP8KV_BLOCK_FORMAT_COUNT; id++) {
        const struct fp8kv_block_format *f = format((enum fp8kv_block_format_id)id);
        const int nv = f->scale_kind == FP8KV_SCALE_UE4M3, bs = f->block_size;
        for (int k = 0; k < 1 + nv; k++) {
            struct fp8kv_npy d;
            load(f, k ? "decode_g.npy" : "decode.npy", FP8KV_NPY_U32, 2, &d);
            const uint32_t g = k ? bits_of(1.0f / 3.0f) : bits_of(1.0f);
            const size_t ne = (size_t)fp8kv_element_code_count(f->element);
            cr_assert_eq(d.count, (size_t)fp8kv_block_scale_code_count(f) * ne);
            for (size_t i = 0; i < d.count; i++) {
                const uint32_t want = indep_block_decode_one((enum fp8kv_block_format_id)id, g,
                                                             (uint8_t)(i / ne), (uint8_t)(i % ne));
                tally_check(&t, ((const uint32_t *)d.data)[i] == want, "%s decode %zu", f->name, i);
            }
            fp8kv_npy_free(&d);
        }
        struct fp8kv_npy x, gs = {0};
        load(f, "input.npy", FP8KV_NPY_U32, 2, &x);
        cr_assert_eq(x.shape[1], (size_t)bs);
        if (nv)
            load(f, "global_scale.npy", FP8KV_NPY_U32, 1, &gs);
        for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++)
            for (int m = 0; m < FP8KV_BLOCK_MODEL_COUNT; m++) {
                const int per_model = r != FP8KV_RULE_FLOOR && r != FP8KV_RULE_EVEN;
                if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r) || (m && !per_model))
                    continue;
                char stem[64], name[96];
                snprintf(stem, sizeof stem, "%s%s%s", fp8kv_block_rule_names[r],
                         per_model ? "_" : "", per_model ? fp8kv_block_model_names[m] : "");
                struct fp8kv_npy s, e;
                snprintf(name, sizeof name, "%s_scale.npy", stem);
                load(f, name, FP8KV_NPY_U8, 1, &s);
                snprintf(name, sizeof name, "%s_elements.npy", stem);
                load(f, name, FP8KV_NPY_U8, 2, &e);
                cr_assert_eq(s.shape[0], x.shape[0]);
                cr_assert_eq(e.shape[0], x.shape[0]);
                for (size_t b = 0; b < x.shape[0]; b++) {
                    uint8_t ws, we[FP8KV_BLOCK_MAX];
                    /* floor and even: the file holds both models' codes */
                    for (int mm = per_model ? m : 0; mm <= (per_model ? m : 1); mm++) {
                        indep_block_encode((enum fp8kv_block_format_id)id, (enum fp8kv_block_rule)r,
                                           (enum fp8kv_block_model)mm,
                                           nv ? ((const uint32_t *)gs.data)[b] : bits_of(1.0f),
                                           (const uint32_t *)x.data + b * (size_t)bs, &ws, we,
                                           NULL);
                        tally_check(&t,
                                    ((const uint8_t *)s.data)[b] == ws &&
                                        memcmp((const uint8_t *)e.data + b * (size_t)bs, we,
                                               (size_t)bs) == 0,
                                    "%s %s model %s block %zu", f->name, stem,
                                    fp8kv_block_model_names[mm], b);
                    }
                }
                fp8kv_npy_free(&s);
                fp8kv_npy_free(&e);
            }
        fp8kv_npy_free(&x);
        fp8kv_npy_free(&gs);
    }
    tally_end(&t);
}
