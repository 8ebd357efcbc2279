/* spec.c — the descriptor tables of fp8kv/spec.h and the small MPFR-free helpers on them. */
#include "fp8kv/spec.h"
#include "fp8kv/diag.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* MPFR bounds: the smallest subnormal 2^(1-bias-man_bits) is 0.5 * 2^emin_mpfr, and the top
 * binade 2^(2^exp_bits - 1 - bias) is 0.5 * 2^emax_mpfr. For e4m3fn the top binade holds 480
 * (the NaN pattern), for e5m2 65536 and up (Inf and NaN), so max_code, not emax, is the finite
 * limit; for the fnuz formats they agree. */
const struct fp8kv_format fp8kv_formats[FP8KV_FORMAT_COUNT] = {
    [FP8KV_E4M3FN] = {.id = FP8KV_E4M3FN,
                      .name = "e4m3fn",
                      .exp_bits = 4,
                      .man_bits = 3,
                      .bias = 7,
                      .max_code = 0x7E,
                      .nan_code = 0x7F,
                      .nan_has_sign = 1,
                      .has_negative_zero = 1,
                      .emin_mpfr = -8,
                      .emax_mpfr = 9,
                      .max_value = 448.0,
                      .min_normal = 0x1p-6},
    [FP8KV_E4M3FNUZ] = {.id = FP8KV_E4M3FNUZ,
                        .name = "e4m3fnuz",
                        .exp_bits = 4,
                        .man_bits = 3,
                        .bias = 8,
                        .max_code = 0x7F,
                        .nan_code = 0x80,
                        .nan_has_sign = 0,
                        .has_negative_zero = 0,
                        .emin_mpfr = -9,
                        .emax_mpfr = 8,
                        .max_value = 240.0,
                        .min_normal = 0x1p-7},
    [FP8KV_E5M2] = {.id = FP8KV_E5M2,
                    .name = "e5m2",
                    .exp_bits = 5,
                    .man_bits = 2,
                    .bias = 15,
                    .max_code = 0x7B,
                    .nan_code = 0x7F,
                    .nan_has_sign = 1,
                    .has_negative_zero = 1,
                    .has_inf = 1,
                    .inf_code = 0x7C,
                    .emin_mpfr = -15,
                    .emax_mpfr = 17,
                    .max_value = 57344.0,
                    .min_normal = 0x1p-14},
    [FP8KV_E5M2FNUZ] = {.id = FP8KV_E5M2FNUZ,
                        .name = "e5m2fnuz",
                        .exp_bits = 5,
                        .man_bits = 2,
                        .bias = 16,
                        .max_code = 0x7F,
                        .nan_code = 0x80,
                        .nan_has_sign = 0,
                        .has_negative_zero = 0,
                        .emin_mpfr = -16,
                        .emax_mpfr = 16,
                        .max_value = 57344.0,
                        .min_normal = 0x1p-15},
};

#define PROFILE(fmt, ovf, inf_, nm)                                                                \
    {                                                                                              \
        .name = nm, .format = &fp8kv_formats[fmt], .overflow = ovf, .inf = inf_                    \
    }
const struct fp8kv_profile fp8kv_profiles[] = {
    PROFILE(FP8KV_E4M3FN, FP8KV_OVERFLOW_SATFINITE, FP8KV_INF_CLAMP, "e4m3fn_satfinite"),
    PROFILE(FP8KV_E4M3FN, FP8KV_OVERFLOW_SATFINITE, FP8KV_INF_NAN, "e4m3fn_satfinite_infnan"),
    PROFILE(FP8KV_E4M3FN, FP8KV_OVERFLOW_NAN, FP8KV_INF_NAN, "e4m3fn_nan"),
    PROFILE(FP8KV_E4M3FNUZ, FP8KV_OVERFLOW_SATFINITE, FP8KV_INF_CLAMP, "e4m3fnuz_satfinite"),
    PROFILE(FP8KV_E4M3FNUZ, FP8KV_OVERFLOW_SATFINITE, FP8KV_INF_NAN, "e4m3fnuz_satfinite_infnan"),
    PROFILE(FP8KV_E4M3FNUZ, FP8KV_OVERFLOW_NAN, FP8KV_INF_NAN, "e4m3fnuz_nan"),
    PROFILE(FP8KV_E5M2, FP8KV_OVERFLOW_SATFINITE, FP8KV_INF_CLAMP, "e5m2_satfinite"),
    PROFILE(FP8KV_E5M2, FP8KV_OVERFLOW_INF, FP8KV_INF_INF, "e5m2_inf"),
    PROFILE(FP8KV_E5M2FNUZ, FP8KV_OVERFLOW_SATFINITE, FP8KV_INF_CLAMP, "e5m2fnuz_satfinite"),
    PROFILE(FP8KV_E5M2FNUZ, FP8KV_OVERFLOW_NAN, FP8KV_INF_NAN, "e5m2fnuz_nan"),
};
#undef PROFILE
const int fp8kv_profile_count = (int)(sizeof fp8kv_profiles / sizeof fp8kv_profiles[0]);

const char *const fp8kv_overflow_names[FP8KV_OVERFLOW_COUNT] = {"satfinite", "nan", "inf"};
const char *const fp8kv_inf_names[FP8KV_INF_COUNT] = {"clamp", "nan", "inf"};
const char *const fp8kv_nan_check_names[FP8KV_NAN_CHECK_COUNT] = {"class", "strict"};
const char *const fp8kv_model_names[FP8KV_MODEL_COUNT] = {"f32_div", "f32_mul_recip", "f16_div",
                                                          "exact"};
const char *const fp8kv_dtype_names[FP8KV_DTYPE_COUNT] = {"f32", "f16", "bf16"};
const char *const fp8kv_read_model_names[FP8KV_READ_MODEL_COUNT] = {"rounded", "exact"};
const char *const fp8kv_class_names[FP8KV_CLASS_COUNT] = {
    "zero", "f32-denormal", "e4m3-subnormal", "normal", "tie", "overflow",
    "inf",  "nan",          "underflow"};
const char *const fp8kv_model_notes[FP8KV_MODEL_COUNT] = {
    [FP8KV_MODEL_F32_DIV] = "x / s",
    [FP8KV_MODEL_F32_MUL_RECIP] = "x * RN32(1 / s)",
    [FP8KV_MODEL_F16_DIV] = "RN16(x / s)",
    [FP8KV_MODEL_EXACT] = "x / s rounded once"};
const char *const fp8kv_nan_check_notes[FP8KV_NAN_CHECK_COUNT] = {
    [FP8KV_NAN_CHECK_CLASS] = "any NaN code for a NaN", [FP8KV_NAN_CHECK_STRICT] = "the byte"};
const char *const fp8kv_kv_layout_names[FP8KV_KV_LAYOUT_COUNT] = {
    [FP8KV_LAYOUT_NHD] = "nhd", [FP8KV_LAYOUT_SPLIT_X] = "split_x", [FP8KV_LAYOUT_HND] = "hnd"};
const char *const fp8kv_kv_packing_names[FP8KV_KV_PACKING_COUNT] = {
    [FP8KV_PACKING_SEPARATE] = "separate",
    [FP8KV_PACKING_KV_FIRST] = "kv_first",
    [FP8KV_PACKING_BLOCK_FIRST] = "block_first"};
const char *const fp8kv_scale_granularity_names[FP8KV_SCALE_GRANULARITY_COUNT] = {
    [FP8KV_SCALE_TENSOR] = "tensor",
    [FP8KV_SCALE_HEAD] = "head",
    [FP8KV_SCALE_TOKEN_HEAD] = "token_head"};

const struct fp8kv_profile *fp8kv_default_profile(void)
{
    /* the table has a profile for these three (t_names asserts it); the first one is the
     * fallback that keeps the promise of never NULL */
    const struct fp8kv_profile *p =
        fp8kv_profile_find(FP8KV_DEFAULT_FORMAT, FP8KV_DEFAULT_OVERFLOW, FP8KV_DEFAULT_INF);
    return p ? p : &fp8kv_profiles[0];
}

/* The edit distance (insertions, deletions, substitutions) of a and b, stopping at 9. */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (n > 63 || strlen(a) > 63)
        return 9;
    int row[64];
    for (size_t j = 0; j <= n; j++)
        row[j] = (int)j;
    for (size_t i = 1; a[i - 1]; i++) {
        int diagonal = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= n; j++) {
            const int up = row[j];
            const int cost = a[i - 1] != b[j - 1];
            int best = diagonal + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = up;
        }
    }
    return row[n] < 9 ? row[n] : 9;
}

const char *fp8kv_names_nearest(const char *given, const char *const *names, int count)
{
    const char *best = NULL;
    int best_distance = 9;
    const int len = (int)strlen(given);
    const int limit = len < 4 ? 1 : len < 9 ? 2 : 3;
    for (int i = 0; i < count; i++) {
        const int d = edit_distance(given, names[i]);
        if (d < best_distance) {
            best_distance = d;
            best = names[i];
        }
    }
    return best_distance <= limit ? best : NULL;
}

char *fp8kv_names_list(const char *const *names, int count, const char *sep, const char *last_sep,
                       char *buf, size_t size)
{
    if (size == 0)
        return buf;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && used < size; i++) {
        const char *before = i == 0 ? "" : i == count - 1 && last_sep ? last_sep : sep;
        const int n = snprintf(buf + used, size - used, "%s%s", before, names[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

int fp8kv_name_index(const char *const *table, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (name && strcmp(table[i], name) == 0)
            return i;
    return -1;
}

/* ml_dtypes calls the formats float8_<name>. */
static const char ml_dtypes_prefix[] = "float8_";

const char *fp8kv_format_alias(const char *name)
{
    const size_t n = sizeof ml_dtypes_prefix - 1;
    if (!name || strncmp(name, ml_dtypes_prefix, n) != 0)
        return name;
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        if (strcmp(fp8kv_formats[i].name, name + n) == 0)
            return fp8kv_formats[i].name;
    return name;
}

const struct fp8kv_format *fp8kv_format_by_name(const char *name)
{
    name = fp8kv_format_alias(name);
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        if (name && strcmp(fp8kv_formats[i].name, name) == 0)
            return &fp8kv_formats[i];
    return NULL;
}

const struct fp8kv_profile *fp8kv_profile_find(enum fp8kv_format_id format,
                                               enum fp8kv_overflow overflow,
                                               enum fp8kv_inf_policy inf)
{
    if (overflow == FP8KV_OVERFLOW_NAN)
        inf = FP8KV_INF_NAN;
    if (overflow == FP8KV_OVERFLOW_INF)
        inf = FP8KV_INF_INF;
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        if (p->format->id == format && p->overflow == overflow && p->inf == inf)
            return p;
    }
    return NULL;
}

/* A profile name is its format's name, '_', its rules; the format part may be spelled the
 * ml_dtypes way ("float8_e5m2_inf" is "e5m2_inf"). */
const struct fp8kv_profile *fp8kv_profile_by_name(const char *name)
{
    if (!name)
        return NULL;
    const size_t n = sizeof ml_dtypes_prefix - 1;
    const int aliased = strncmp(name, ml_dtypes_prefix, n) == 0;
    for (int i = 0; i < fp8kv_profile_count; i++)
        if (strcmp(fp8kv_profiles[i].name, aliased ? name + n : name) == 0)
            return &fp8kv_profiles[i];
    return NULL;
}

/* ---- bits ------------------------------------------------------------------------------- */

static uint32_t widen_f16(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F) /* Inf or NaN: payload moves to the top of the f32 significand */
        return sign | 0x7F800000u | (man << 13);
    if (exp != 0)
        return sign | ((exp - 15 + 127) << 23) | (man << 13);
    if (man == 0)
        return sign;
    /* subnormal f16: man * 2^-24, normal in f32; shift the leading one to bit 10 */
    int e = -14;
    while (!(man & 0x400u)) {
        man <<= 1;
        e--;
    }
    return sign | ((uint32_t)(e + 127) << 23) | ((man & 0x3FFu) << 13);
}

uint32_t fp8kv_widen_to_f32(enum fp8kv_dtype dtype, uint32_t bits)
{
    switch (dtype) {
    case FP8KV_DTYPE_F16: return widen_f16(bits & 0xFFFFu);
    case FP8KV_DTYPE_BF16: return (bits & 0xFFFFu) << 16;
    default: return bits;
    }
}

static float f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A positive finite v is an fp8 midpoint when v / (half the fp8 quantum of its binade) is an
 * odd integer. Everything here is exact in double: v has 24 significant bits. */
static int is_midpoint(const struct fp8kv_format *f, double v)
{
    int e;
    frexp(v, &e); /* v in [2^(e-1), 2^e) */
    double binade = v < f->min_normal ? f->min_normal : ldexp(1.0, e - 1);
    double half_quantum = ldexp(binade, -f->man_bits - 1);
    double k = v / half_quantum;
    return k == floor(k) && fmod(k, 2.0) == 1.0;
}

enum fp8kv_class fp8kv_classify_f32(const struct fp8kv_format *f, uint32_t bits)
{
    uint32_t mag = bits & 0x7FFFFFFFu;
    if (mag > 0x7F800000u)
        return FP8KV_CLASS_NAN;
    if (mag == 0x7F800000u)
        return FP8KV_CLASS_INF;
    if (mag == 0)
        return FP8KV_CLASS_ZERO;
    if (mag < 0x00800000u)
        return FP8KV_CLASS_F32_DENORMAL;
    double v = (double)f32_from_bits(mag);
    int e;
    frexp(f->max_value, &e); /* max in [2^(e-1), 2^e): half its ulp is 2^(e-1-man_bits-1) */
    double overflow_midpoint = f->max_value + ldexp(1.0, e - 2 - f->man_bits);
    if (v > overflow_midpoint)
        return FP8KV_CLASS_OVERFLOW;
    if (is_midpoint(f, v))
        return FP8KV_CLASS_TIE;
    if (v < ldexp(f->min_normal, -f->man_bits - 1)) /* half the smallest subnormal */
        return FP8KV_CLASS_UNDERFLOW;
    if (v < f->min_normal)
        return FP8KV_CLASS_E4M3_SUBNORMAL;
    return FP8KV_CLASS_NORMAL;
}

uint8_t fp8kv_nan_code(const struct fp8kv_format *f, int negative)
{
    return (uint8_t)(f->nan_has_sign && negative ? f->nan_code | 0x80u : f->nan_code);
}

int fp8kv_boundary_count(const struct fp8kv_format *f)
{
    return f->max_code + 2;
}

uint8_t fp8kv_zero_code(const struct fp8kv_format *f, int negative)
{
    return f->has_negative_zero && negative ? 0x80u : 0x00u;
}

static uint8_t signed_max(const struct fp8kv_format *f, int negative)
{
    return (uint8_t)(negative ? f->max_code | 0x80u : f->max_code);
}

/* ±Inf where the format has it; a format without Inf gives NaN instead. */
static uint8_t signed_inf(const struct fp8kv_format *f, int negative)
{
    if (!f->has_inf)
        return fp8kv_nan_code(f, negative);
    return (uint8_t)(negative ? f->inf_code | 0x80u : f->inf_code);
}

uint8_t fp8kv_overflow_code(const struct fp8kv_profile *p, int negative)
{
    switch (p->overflow) {
    case FP8KV_OVERFLOW_SATFINITE: return signed_max(p->format, negative);
    case FP8KV_OVERFLOW_INF: return signed_inf(p->format, negative);
    default: return fp8kv_nan_code(p->format, negative);
    }
}

uint8_t fp8kv_infinity_code(const struct fp8kv_profile *p, int negative)
{
    if (p->overflow == FP8KV_OVERFLOW_SATFINITE && p->inf == FP8KV_INF_CLAMP)
        return signed_max(p->format, negative);
    if (p->overflow == FP8KV_OVERFLOW_INF || p->inf == FP8KV_INF_INF)
        return signed_inf(p->format, negative);
    return fp8kv_nan_code(p->format, negative);
}

int fp8kv_is_inf_code(const struct fp8kv_format *f, uint8_t code)
{
    return f->has_inf && (code & 0x7Fu) == f->inf_code;
}

int fp8kv_is_nan_code(const struct fp8kv_format *f, uint8_t code)
{
    if (!f->nan_has_sign)
        return code == f->nan_code;
    return (code & 0x7Fu) > f->max_code && !fp8kv_is_inf_code(f, code);
}

int fp8kv_codes_match(const struct fp8kv_format *f, enum fp8kv_nan_check check, uint8_t got,
                      uint8_t want)
{
    if (got == want)
        return 1;
    return check == FP8KV_NAN_CHECK_CLASS && fp8kv_is_nan_code(f, want) &&
           fp8kv_is_nan_code(f, got);
}

uint64_t fp8kv_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int fp8kv_profile_names(const char **names, int room)
{
    int n = 0;
    for (int i = 0; i < fp8kv_profile_count && n < room; i++)
        names[n++] = fp8kv_profiles[i].name;
    return n;
}

const struct fp8kv_profile *fp8kv_profile_named(const char *name)
{
    const struct fp8kv_profile *p = name ? fp8kv_profile_by_name(name) : NULL;
    if (p)
        return p;
    const char *names[64];
    const int n = fp8kv_profile_names(names, 64);
    char valid[1024], near[96] = "";
    fp8kv_names_list(names, n, ", ", NULL, valid, sizeof valid);
    const char *best = name ? fp8kv_names_nearest(name, names, n) : NULL;
    if (best)
        snprintf(near, sizeof near, "; did you mean '%s'?", best);
    fp8kv_fail("unknown profile '%s'%s (valid: %s)", name ? name : "(none)", near, valid);
    return NULL;
}
