/* kv/attention.c — fp8kv/kv_attention.h: declared arithmetics, the reference and its bound.
 *
 * docs/DESIGN.md §5.3.1 derives the bound this file computes; the names below follow it. */
#include "fp8kv/kv_attention.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"

const char *const fp8kv_attention_type_names[FP8KV_ATTN_TYPE_COUNT] = {"f32", "tf32", "bf16", "f16",
                                                                       "e4m3"};
const char *const fp8kv_attention_presets[FP8KV_ATTN_PRESET_COUNT] = {
    "f32", "tf32", "bf16", "f16", "bf16-folded", "f16-folded", "fp8"};

/* ---- number types ---------------------------------------------------------------------------- */

/* A binary floating-point type: significand bits (the implicit one included), the exponent of
 * its smallest normal, its largest finite value; as the weights P: the relative error of a
 * rounding to it (round to nearest, or truncation for tf32, which hardware may do) and the
 * absolute error allowed below its normal range (flush to zero where FTZ may apply, half the
 * subnormal step where it does not). */
struct type_info {
    int bits, emin;
    double max, unit, floor;
};

static struct type_info type_info(int t)
{
    switch (t) {
    case FP8KV_ATTN_TF32: return (struct type_info){11, -126, 0x1.ffcp127, 0x1p-10, 0x1p-126};
    case FP8KV_ATTN_BF16: return (struct type_info){8, -126, 0x1.fep127, 0x1p-8, 0x1p-126};
    case FP8KV_ATTN_F16: return (struct type_info){11, -14, 65504.0, 0x1p-11, 0x1p-25};
    case FP8KV_ATTN_E4M3: return (struct type_info){4, -6, 448.0, 0x1p-4, 0x1p-10};
    default: /* f32: P not rounded (its products with V round, which gamma counts) */
        return (struct type_info){24, -126, (double)FLT_MAX, 0.0, 0x1p-126};
    }
}

enum fp8kv_kv_dtype fp8kv_attention_kv_dtype(int t)
{
    return t == FP8KV_ATTN_BF16 ? FP8KV_KV_BF16 : t == FP8KV_ATTN_F16 ? FP8KV_KV_F16 : FP8KV_KV_F32;
}

size_t fp8kv_attention_type_size(int t)
{
    return t == FP8KV_ATTN_F32 ? 4 : 2;
}

double fp8kv_attention_round(double x, int t, int dir)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    const struct type_info ti = type_info(t);
    int e;
    (void)frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    const int lead = e - 1 < ti.emin ? ti.emin : e - 1;
    const double ulp = ldexp(1.0, lead - (ti.bits - 1));
    const double q = x / ulp; /* exact: a power of two */
    const double r = dir == 0 ? nearbyint(q) : dir < 0 ? floor(q) : ceil(q);
    const double y = r * ulp;
    if (fabs(y) <= ti.max)
        return y;
    if (dir == 0 || (dir > 0) == (y > 0))
        return copysign(INFINITY, y);
    return copysign(ti.max, y);
}

/* ---- declared arithmetics -------------------------------------------------------------------- */

static const struct fp8kv_attention_arith preset_table[FP8KV_ATTN_PRESET_COUNT] = {
    {"f32", FP8KV_ATTN_F32, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_F32, FP8KV_ATTN_F32, FP8KV_ATTN_F32,
     FP8KV_ATTN_F32, 4, 16},
    {"tf32", FP8KV_ATTN_F32, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_F32, FP8KV_ATTN_TF32, FP8KV_ATTN_TF32,
     FP8KV_ATTN_F32, 4, 16},
    {"bf16", FP8KV_ATTN_BF16, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_BF16, FP8KV_ATTN_F32,
     FP8KV_ATTN_BF16, FP8KV_ATTN_BF16, 4, 16},
    {"f16", FP8KV_ATTN_F16, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_F16, FP8KV_ATTN_F32, FP8KV_ATTN_F16,
     FP8KV_ATTN_F16, 4, 16},
    {"bf16-folded", FP8KV_ATTN_BF16, FP8KV_ATTN_KV_FOLDED, FP8KV_ATTN_BF16, FP8KV_ATTN_F32,
     FP8KV_ATTN_BF16, FP8KV_ATTN_BF16, 4, 16},
    {"f16-folded", FP8KV_ATTN_F16, FP8KV_ATTN_KV_FOLDED, FP8KV_ATTN_F16, FP8KV_ATTN_F32,
     FP8KV_ATTN_F16, FP8KV_ATTN_F16, 4, 16},
    {"fp8", FP8KV_ATTN_BF16, FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_BF16, FP8KV_ATTN_F32, FP8KV_ATTN_E4M3,
     FP8KV_ATTN_BF16, 4, 16},
};

/* The keys of a custom change, the types each accepts (a bit per enum fp8kv_attention_type). */
#define BIT(t) (1u << FP8KV_ATTN_##t)
static const struct {
    const char *key;
    size_t offset;
    unsigned types; /* 0: a number (exp_ulps, tile) or kv's own words */
} keys[] = {
    {"q", offsetof(struct fp8kv_attention_arith, q), BIT(F32) | BIT(BF16) | BIT(F16)},
    {"kv", offsetof(struct fp8kv_attention_arith, kv), 0},
    {"kv_type", offsetof(struct fp8kv_attention_arith, kv_type), BIT(F32) | BIT(BF16) | BIT(F16)},
    {"dot", offsetof(struct fp8kv_attention_arith, dot), BIT(F32) | BIT(TF32)},
    {"p", offsetof(struct fp8kv_attention_arith, p),
     BIT(F32) | BIT(TF32) | BIT(BF16) | BIT(F16) | BIT(E4M3)},
    {"out", offsetof(struct fp8kv_attention_arith, out), BIT(F32) | BIT(BF16) | BIT(F16)},
    {"exp_ulps", offsetof(struct fp8kv_attention_arith, exp_ulps), 0},
    {"tile", offsetof(struct fp8kv_attention_arith, tile), 0},
};

static int type_of(const char *word, size_t n)
{
    for (int t = 0; t < FP8KV_ATTN_TYPE_COUNT; t++)
        if (strlen(fp8kv_attention_type_names[t]) == n &&
            strncmp(word, fp8kv_attention_type_names[t], n) == 0)
            return t;
    return -1;
}

/* set_key: key=value (value is n bytes at v) into a. */
static int set_key(struct fp8kv_attention_arith *a, const char *key, size_t kn, const char *v,
                   size_t n)
{
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (strlen(keys[k].key) != kn || strncmp(key, keys[k].key, kn) != 0)
            continue;
        int *field = (int *)((char *)a + keys[k].offset);
        if (keys[k].offset == offsetof(struct fp8kv_attention_arith, kv)) {
            if (n == 6 && strncmp(v, "scaled", 6) == 0)
                *field = FP8KV_ATTN_KV_SCALED;
            else if (n == 6 && strncmp(v, "folded", 6) == 0)
                *field = FP8KV_ATTN_KV_FOLDED;
            else
                return fp8kv_fail("arithmetic: kv=%.*s: give scaled or folded", (int)n, v);
            return FP8KV_OK;
        }
        if (!keys[k].types) {
            char *end = NULL;
            char digits[16] = "";
            if (n == 0 || n >= sizeof digits)
                return fp8kv_fail("arithmetic: %s=%.*s: give a whole number", keys[k].key, (int)n,
                                  v);
            memcpy(digits, v, n);
            const long x = strtol(digits, &end, 10);
            if (*end || x < (field == &a->tile ? 1 : 0) || x > 1000000)
                return fp8kv_fail("arithmetic: %s=%s: give a whole number from %d to 1000000",
                                  keys[k].key, digits, field == &a->tile ? 1 : 0);
            *field = (int)x;
            return FP8KV_OK;
        }
        const int t = type_of(v, n);
        if (t < 0 || !(keys[k].types >> t & 1u)) {
            char allowed[64] = "";
            for (int u = 0; u < FP8KV_ATTN_TYPE_COUNT; u++)
                if (keys[k].types >> u & 1u)
                    snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s",
                             allowed[0] ? ", " : "", fp8kv_attention_type_names[u]);
            return fp8kv_fail("arithmetic: %s=%.*s: give one of %s", keys[k].key, (int)n, v,
                              allowed);
        }
        *field = t;
        return FP8KV_OK;
    }
    return fp8kv_fail("arithmetic: unknown key \"%.*s\" (keys: q, kv, kv_type, dot, p, out, "
                      "exp_ulps, tile)",
                      (int)kn, key);
}

int fp8kv_attention_arith_parse(const char *text, struct fp8kv_attention_arith *out)
{
    if (!text || !*text)
        text = fp8kv_attention_presets[0];
    const char *comma = strchr(text, ',');
    const size_t n = comma ? (size_t)(comma - text) : strlen(text);
    int found = -1;
    for (int i = 0; i < FP8KV_ATTN_PRESET_COUNT; i++)
        if (strlen(fp8kv_attention_presets[i]) == n &&
            strncmp(text, fp8kv_attention_presets[i], n) == 0)
            found = i;
    if (found < 0)
        return fp8kv_fail("arithmetic \"%.*s\": give a preset (f32, tf32, bf16, f16, bf16-folded, "
                          "f16-folded, fp8), optionally followed by ,key=value changes",
                          (int)n, text);
    struct fp8kv_attention_arith a = preset_table[found];
    for (const char *at = comma; at; at = strchr(at + 1, ',')) {
        const char *item = at + 1, *next = strchr(item, ',');
        const size_t len = next ? (size_t)(next - item) : strlen(item);
        const char *eq = memchr(item, '=', len);
        if (!eq)
            return fp8kv_fail("arithmetic: \"%.*s\" is not key=value", (int)len, item);
        if (set_key(&a, item, (size_t)(eq - item), eq + 1, len - (size_t)(eq - item) - 1) != 0)
            return FP8KV_ERR;
    }
    if (strlen(text) >= sizeof a.name)
        return fp8kv_fail("arithmetic: \"%.40s...\" is longer than %zu characters", text,
                          sizeof a.name - 1);
    snprintf(a.name, sizeof a.name, "%s", text);
    *out = a;
    return FP8KV_OK;
}

void fp8kv_attention_arith_words(const struct fp8kv_attention_arith *a, char *buf, size_t size)
{
    const char *const *t = fp8kv_attention_type_names;
    char kv[48];
    if (a->kv == FP8KV_ATTN_KV_FOLDED)
        snprintf(kv, sizeof kv, "K, V fp8 exact, scales folded");
    else
        snprintf(kv, sizeof kv, "K*s and V*s in %s", t[a->kv_type]);
    snprintf(buf, size, "q %s, %s, %s products, P %s, out %s, exp %d ulps, tile %d", t[a->q], kv,
             t[a->dot], t[a->p], t[a->out], a->exp_ulps, a->tile);
}

/* ---- the reference and the bound ------------------------------------------------------------ */

#define U32 0x1p-23   /* every f32 operation: one ulp, so directed and tensor-core rounding too */
#define U64 0x1p-52   /* every double operation of the reference, likewise */
#define SLACK 0x1p-40 /* the reference's compensated sums, generously */

static double gamma_n(double n, double u)
{
    const double nu = n * u;
    return nu < 0.5 ? nu / (1.0 - nu) : INFINITY;
}

/* reference_exp: e^x in double, within 2 ulps, from IEEE operations alone in a fixed order
 * (Cody-Waite reduction by ln 2, a degree-13 Taylor polynomial), so that a reference, and its
 * digest, are the same on every machine whatever its libm. */
static double reference_exp(double x)
{
    if (isnan(x))
        return x;
    if (x > 709.8)
        return INFINITY;
    if (x < -745.2)
        return 0.0;
    const double k = nearbyint(x * 1.4426950408889634);
    const double r = (x - k * 0x1.62e42feep-1) - k * 0x1.a39ef35793c76p-33;
    double p = 1.0 / 6227020800.0; /* 1/13! */
    static const double inv[13] = {1.0 / 479001600.0,
                                   1.0 / 39916800.0,
                                   1.0 / 3628800.0,
                                   1.0 / 362880.0,
                                   1.0 / 40320.0,
                                   1.0 / 5040.0,
                                   1.0 / 720.0,
                                   1.0 / 120.0,
                                   1.0 / 24.0,
                                   1.0 / 6.0,
                                   0.5,
                                   1.0,
                                   1.0};
    for (int i = 0; i < 13; i++)
        p = p * r + inv[i];
    return ldexp(p, (int)k);
}

/* a + b = s + e exactly (Knuth's TwoSum). */
static inline void two_sum(double a, double b, double *s, double *e)
{
    const double x = a + b, bb = x - a;
    *e = (a - (x - bb)) + (b - bb);
    *s = x;
}

/* Scratch of one sequence and kv head. */
struct work {
    int n, d;
    double *key, *value;                           /* [n][d] */
    double *score, *mag, *weight, *common, *apart; /* [n]: s_t, a_t, p_t, p_t theta_t, sigma_t */
    double *sum, *comp, *absv, *errv, *dev;        /* [d] */
    double *q;                                     /* [d] */
};

static void work_free(struct work *w)
{
    free(w->key);
    free(w->value);
    free(w->score);
    free(w->sum);
    free(w->q);
    memset(w, 0, sizeof *w);
}

static int work_alloc(struct work *w, int n, int d)
{
    const size_t nn = n > 0 ? (size_t)n : 1, dd = (size_t)d;
    w->n = n;
    w->d = d;
    w->key = malloc(nn * dd * sizeof *w->key);
    w->value = malloc(nn * dd * sizeof *w->value);
    w->score = malloc(5 * nn * sizeof *w->score);
    w->sum = malloc(5 * dd * sizeof *w->sum);
    w->q = malloc(dd * sizeof *w->q);
    if (!w->key || !w->value || !w->score || !w->sum || !w->q) {
        work_free(w);
        return FP8KV_ERR; /* said by the caller (this runs in a worker thread) */
    }
    w->mag = w->score + nn;
    w->weight = w->mag + nn;
    w->common = w->weight + nn;
    w->apart = w->common + nn;
    w->comp = w->sum + dd;
    w->absv = w->comp + dd;
    w->errv = w->absv + dd;
    w->dev = w->errv + dd;
    return FP8KV_OK;
}

/* The bound's constants of an arithmetic over a head size (DESIGN §5.3.1). */
struct constants {
    double u_dot, u_p, floor_p, exp_step, dot_rel;
};

static struct constants constants_of(const struct fp8kv_attention_arith *a, int d)
{
    const struct type_info p = type_info(a->p);
    struct constants k;
    k.u_dot = a->dot == FP8KV_ATTN_TF32 ? 0x1p-10 : 0.0;
    k.u_p = p.unit;
    k.floor_p = p.floor;
    k.exp_step = ((double)a->exp_ulps + 1.0) * U32; /* an exp and the multiply it rescales by */
    k.dot_rel = (1.0 + k.u_dot) * (1.0 + k.u_dot) * (1.0 + gamma_n(d + 3.0, U32)) - 1.0;
    return k;
}

/* scores: s_t, a_t (|softmax_scale| sum |q_d k_td|) of every token, and their maximum (NaN
 * when a score is NaN). */
static double scores(const struct fp8kv_attention_problem *pr, struct work *w)
{
    double m = -INFINITY;
    int nan_score = 0;
    for (int t = 0; t < w->n; t++) {
        const double *kt = w->key + (size_t)t * w->d;
        double s = 0.0, mag = 0.0;
        for (int d = 0; d < w->d; d++) {
            s += w->q[d] * kt[d];
            mag += fabs(w->q[d] * kt[d]);
        }
        w->score[t] = s * pr->softmax_scale;
        w->mag[t] = mag * fabs(pr->softmax_scale);
        nan_score |= isnan(w->score[t]);
        if (w->score[t] > m)
            m = w->score[t];
    }
    return nan_score ? NAN : m;
}

/* What the weights of one head sum to (DESIGN §5.3.1): L = sum p_t, the common errors'
 * sum p_t theta_t, the separate ones' sum sigma_t, and the reference's own relative error. */
struct weights {
    double L, common, apart, theta_ref;
};

/* weights: p_t = exp(s_t - m) (compensated L), each weight's common error bound p_t theta_t
 * (its score, its exponent's argument and its exp: computed once, shared by P.V and the sum of
 * the weights) and separate one sigma_t (the rescalings of the running maximum and the
 * partitions' merge, whose factors a compiler may compute differently for the two sums; P's
 * rounding to its dtype, and its floor). */
static struct weights weigh(const struct fp8kv_attention_arith *a, struct work *w, double m)
{
    const struct constants k = constants_of(a, w->d);
    struct weights r = {0.0, 0.0, 0.0, 0.0};
    double Lc = 0.0;
    for (int t = 0; t < w->n; t++) {
        w->weight[t] = reference_exp(w->score[t] - m);
        double e;
        two_sum(r.L, w->weight[t], &r.L, &e);
        Lc += e;
    }
    r.L += Lc;
    const double rescales = ceil((double)w->n / a->tile) + 2.0;
    const double logL = isfinite(r.L) && r.L > 0 ? fabs(log(r.L)) : 0.0;
    const double floor_L = k.floor_p * (r.L > 1.0 ? r.L : 1.0);
    for (int t = 0; t < w->n; t++) {
        const double p = w->weight[t];
        if (p == 0.0) { /* a score of -Inf: exp gives exactly 0 everywhere */
            w->common[t] = w->apart[t] = 0.0;
            continue;
        }
        const double big = fabs(w->score[t]) > fabs(m) ? fabs(w->score[t]) : fabs(m);
        const double own = 4.0 * U32 * (fabs(w->score[t]) + fabs(m));
        const double theta = (1.0 + k.exp_step) * exp(w->mag[t] * k.dot_rel + own) - 1.0;
        const double step = log1p(k.exp_step) + 4.0 * U32 * (big + logL + 1.0);
        const double rescaled = expm1(rescales * step);
        const double full = p * (1.0 + theta);
        w->common[t] = p * theta;
        w->apart[t] = (k.u_p + rescaled * (1.0 + k.u_p)) * full + (full < floor_L ? full : floor_L);
        r.common += w->common[t];
        r.apart += w->apart[t];
        const double rt = expm1((w->d + 4.0) * U64 * w->mag[t] +
                                4.0 * U64 * (fabs(w->score[t]) + fabs(m) + 2.0)) +
                          4.0 * U64;
        r.theta_ref = rt > r.theta_ref ? rt : r.theta_ref;
    }
    return r;
}

/* one_head: the outputs of q head h of query row `row` over the n tokens of w into ref at
 * base. */
static void one_head(const struct fp8kv_attention_problem *pr,
                     const struct fp8kv_attention_arith *a, struct work *w, int row, int h,
                     struct fp8kv_attention_ref *ref, size_t base)
{
    const int n = w->n, D = w->d;
    pr->query(pr->ctx, row, h, w->q);
    if (n == 0) { /* the ABI's rule: a sequence of no tokens gives zeros */
        for (int d = 0; d < D; d++) {
            ref->exact[base + d] = ref->lo[base + d] = ref->hi[base + d] = 0.0;
            ref->nan_also[base + d] = 0;
        }
        return;
    }
    const struct constants k = constants_of(a, D);
    const double m = scores(pr, w);
    const struct weights r = weigh(a, w, m);
    const double L = r.L, L_lo = L - r.common, L_hi = L + r.common;
    const double gN = gamma_n(n + 4.0, U32);
    const double theta_apart = (r.apart + gN * (L_hi + r.apart)) / L_lo;
    for (int d = 0; d < D; d++)
        w->sum[d] = w->comp[d] = w->absv[d] = w->errv[d] = w->dev[d] = 0.0;
    for (int t = 0; t < n; t++) { /* sum p v (compensated), sum p (1 + theta)|v|, sum sigma|v| */
        const double *vt = w->value + (size_t)t * D, p = w->weight[t];
        const double hi = p + w->common[t], apart = w->apart[t];
        if (p == 0.0) /* weight 0 (a score of -Inf, or below double's range): not-finite values
                         are dealt with below */
            continue;
        for (int d = 0; d < D; d++) {
            double e;
            two_sum(w->sum[d], p * vt[d], &w->sum[d], &e);
            w->comp[d] += e;
            w->absv[d] += hi * fabs(vt[d]);
            w->errv[d] += apart * fabs(vt[d]);
        }
    }
    for (int d = 0; d < D; d++)
        w->sum[d] = (w->sum[d] + w->comp[d]) / L;
    /* a value that is not finite (one rounded to f16 past its range): the exact output is that
     * infinity (NaN with both, or with a NaN value), and a kernel whose weight for it underflows
     * computes 0 x Inf = NaN: both are right */
    for (int d = 0; d < D; d++) {
        int pos = 0, neg = 0, nan = 0, unweighted = 0;
        for (int t = 0; t < n; t++) {
            const double v = w->value[(size_t)t * D + d];
            if (w->score[t] == -INFINITY) { /* weight exactly 0: the token is not there */
                unweighted |= !isfinite(v);
                continue;
            }
            pos |= v == INFINITY;
            neg |= v == -INFINITY;
            nan |= isnan(v);
        }
        if (pos || neg || nan)
            w->sum[d] = nan || (pos && neg) ? NAN : pos ? INFINITY : -INFINITY;
        ref->nan_also[base + d] = !isnan(w->sum[d]) && (pos || neg || unweighted);
    }
    for (int t = 0; t < n; t++) { /* sum p theta |v - o|: the common errors' effect */
        const double *vt = w->value + (size_t)t * D, c = w->common[t];
        for (int d = 0; d < D; d++)
            w->dev[d] += c * fabs(vt[d] - w->sum[d]);
    }
    const double u3 = (1.0 + U32) * (1.0 + U32) * (1.0 + U32);
    for (int d = 0; d < D; d++) {
        const double o = w->sum[d], A = w->absv[d], S = w->errv[d];
        const double Ec = w->dev[d] / L_lo, ot = fabs(o) + Ec;
        const double top = (1.0 + k.u_dot) * S + r.apart * ot + k.u_dot * (1.0 + k.u_p) * A +
                           gN * (1.0 + k.u_dot) * (A + S) + gN * (L_hi + r.apart) * ot;
        double E = L_lo > 0.0 && theta_apart < 1.0
                       ? (Ec + top / (L_lo * (1.0 - theta_apart))) * u3 + (u3 - 1.0) * fabs(o)
                       : INFINITY;
        E += (r.theta_ref * 1.01 + SLACK) * (A / L + fabs(o));
        ref->exact[base + d] = o;
        if (!isfinite(o)) {
            ref->lo[base + d] = ref->hi[base + d] = o;
            continue;
        }
        if (!(E < INFINITY))
            ref->vacuous++;
        ref->lo[base + d] = fp8kv_attention_round(o - E, a->out, -1);
        ref->hi[base + d] = fp8kv_attention_round(o + E, a->out, +1);
    }
}

int fp8kv_attention_reference(const struct fp8kv_attention_problem *pr,
                              const struct fp8kv_attention_arith *a,
                              struct fp8kv_attention_ref *ref)
{
    memset(ref, 0, sizeof *ref);
    if (pr->num_seqs < 0 || pr->num_kv_heads < 1 || pr->head_size < 1 ||
        pr->num_q_heads < pr->num_kv_heads || pr->num_q_heads % pr->num_kv_heads != 0)
        return fp8kv_fail("attention reference: %d q heads over %d kv heads, head size %d",
                          pr->num_q_heads, pr->num_kv_heads, pr->head_size);
    const int D = pr->head_size, group = pr->num_q_heads / pr->num_kv_heads;
    size_t rows = 0;
    for (int i = 0; i < pr->num_seqs; i++) {
        const int queries = pr->query_lens ? pr->query_lens[i] : 1;
        if (pr->seq_lens[i] < 0 || queries < 1 ||
            queries > pr->seq_lens[i] + (pr->seq_lens[i] == 0))
            return fp8kv_fail("attention reference: sequence %d has %d tokens and %d queries", i,
                              pr->seq_lens[i], queries);
        rows += (size_t)queries;
    }
    ref->count = rows * (size_t)pr->num_q_heads * (size_t)D;
    const size_t bytes = (ref->count ? ref->count : 1) * sizeof(double);
    ref->exact = malloc(bytes);
    ref->lo = malloc(bytes);
    ref->hi = malloc(bytes);
    ref->nan_also = malloc(ref->count ? ref->count : 1);
    if (!ref->exact || !ref->lo || !ref->hi || !ref->nan_also) {
        fp8kv_attention_ref_free(ref);
        return fp8kv_fail("out of memory (attention reference of %zu outputs)", ref->count);
    }
    /* one task per sequence and kv head; the callbacks only read */
    const long tasks = (long)pr->num_seqs * pr->num_kv_heads;
    int failed = 0;
    uint64_t vacuous = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed) reduction(+ : vacuous)
    for (long task = 0; task < tasks; task++) {
        const int i = (int)(task / pr->num_kv_heads), g = (int)(task % pr->num_kv_heads);
        const int n = pr->seq_lens[i];
        struct work w;
        struct fp8kv_attention_ref part = *ref;
        part.vacuous = 0;
        if (failed || work_alloc(&w, n, D) != 0) {
            failed = 1;
            continue;
        }
        for (int t = 0; t < n; t++) {
            pr->row(pr->ctx, 1, i, t, g, w.key + (size_t)t * D);
            pr->row(pr->ctx, 0, i, t, g, w.value + (size_t)t * D);
        }
        /* query j of a sequence of n tokens and q queries is token n - q + j: it sees the tokens
         * up to itself (and, under a window W, the last W of them) */
        const int queries = pr->query_lens ? pr->query_lens[i] : 1;
        size_t first = 0;
        for (int k = 0; k < i; k++)
            first += pr->query_lens ? (size_t)pr->query_lens[k] : 1;
        for (int j = 0; j < queries; j++) {
            const int hi = n - queries + j + 1,
                      lo = pr->window > 0 && hi > pr->window ? hi - pr->window : 0;
            struct work view = w;
            view.key += (size_t)lo * D;
            view.value += (size_t)lo * D;
            view.n = n == 0 ? 0 : hi - lo;
            const size_t row = first + (size_t)j;
            for (int h = g * group; h < (g + 1) * group; h++)
                one_head(pr, a, &view, (int)row, h, &part,
                         (row * (size_t)pr->num_q_heads + (size_t)h) * (size_t)D);
        }
        vacuous += part.vacuous;
        work_free(&w);
    }
    ref->vacuous = vacuous;
    if (failed) {
        fp8kv_attention_ref_free(ref);
        return fp8kv_fail("out of memory (attention reference)");
    }
    return FP8KV_OK;
}

void fp8kv_attention_ref_free(struct fp8kv_attention_ref *ref)
{
    free(ref->exact);
    free(ref->lo);
    free(ref->hi);
    free(ref->nan_also);
    memset(ref, 0, sizeof *ref);
}

/* ---- the judge ------------------------------------------------------------------------------- */

/* value_of: output i of got (dtype t) as a double, and its bits. */
static double value_of(const void *got, int t, size_t i, uint32_t *bits)
{
    const enum fp8kv_kv_dtype dt = fp8kv_attention_kv_dtype(t);
    uint32_t w;
    if (dt == FP8KV_KV_F32) {
        memcpy(&w, (const char *)got + 4 * i, 4);
        *bits = w;
    } else {
        uint16_t h;
        memcpy(&h, (const char *)got + 2 * i, 2);
        *bits = h;
        w = fp8kv_widen_to_f32((enum fp8kv_dtype)dt, h);
    }
    float f;
    memcpy(&f, &w, 4);
    return f;
}

void fp8kv_attention_judge(const struct fp8kv_attention_ref *ref,
                           const struct fp8kv_attention_arith *a, const void *got, int num_q_heads,
                           int head_size, struct fp8kv_check *chk)
{
    const size_t D = (size_t)head_size, Q = (size_t)num_q_heads;
    chk->cases = ref->count;
    chk->has_bound = 1;
    chk->bound_ratio = 0.0;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref->count; i++) {
        uint32_t bits;
        const double y = value_of(got, a->out, i, &bits), o = ref->exact[i];
        double ratio;
        if (isnan(y) && ref->nan_also[i])
            ratio = 0.0;
        else if (!isfinite(o))
            ratio = (isnan(o) ? isnan(y) : y == o) ? 0.0 : INFINITY;
        else if (!isfinite(y)) /* an infinity the rounding of o + E (or o - E) may give */
            ratio = !isnan(y) && ref->lo[i] <= y && y <= ref->hi[i] ? 1.0 : INFINITY;
        else if (y == o)
            ratio = 0.0;
        else
            ratio = y > o ? (y - o) / (ref->hi[i] - o) : (o - y) / (o - ref->lo[i]);
        if (isfinite(o) && isfinite(y)) {
            num += (y - o) * (y - o);
            den += o * o;
        } else if (ratio > 0.0 || isfinite(o) != isfinite(y)) {
            num = INFINITY;
        }
        if (ratio > chk->bound_ratio || isnan(ratio))
            chk->bound_ratio = isnan(ratio) ? INFINITY : ratio;
        if (!(ratio > 1.0))
            continue;
        const size_t row = i / D;
        fp8kv_check_failure(chk, -1,
                            "out[%zu] seq %zu qhead %zu dim %zu => %0*x (%.9g)  exact %.17g, "
                            "allowed [%.9g, %.9g]",
                            i, row / Q, row % Q, i % D, a->out == FP8KV_ATTN_F32 ? 8 : 4, bits, y,
                            o, ref->lo[i], ref->hi[i]);
    }
    chk->has_nmse = 1;
    chk->nmse = num == 0.0 ? 0.0 : den > 0.0 ? num / den : INFINITY;
    if (ref->vacuous) { /* said, never hidden: these outputs were not judged */
        const size_t used = strlen(chk->detail);
        snprintf(chk->detail + used, sizeof chk->detail - used,
                 "; %llu outputs with no finite bound", (unsigned long long)ref->vacuous);
    }
}
