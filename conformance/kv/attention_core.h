/* kv/attention_core.h — the arithmetic of the attention reference and its bound, for one query
 * row and one q head (internal to the judge library; docs/DESIGN.md §5.3.1 derives it).
 *
 * One home for the host (kv/attention.c, a task per sequence and kv head) and the device
 * (kv/attention_gpu.hip, a thread per query row and q head): the functions are FP8KV_HD
 * (codec.h: static inline C on the host, __host__ __device__ under nvcc and hipcc), written in
 * the C that C++ also compiles. The exact values use IEEE operations alone in a fixed order
 * (and the reference's own exp), so that they are the same bits wherever they are computed: the
 * committed digests of the engine suite's references hold for both. The bound also uses the
 * platform's exp, log, log1p and expm1, so its last bits may differ between host and device
 * (it carries slack far above that).
 */
#ifndef FP8KV_KV_ATTENTION_CORE_H
#define FP8KV_KV_ATTENTION_CORE_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "fp8kv/codec.h"
#include "fp8kv/kv_attention.h"

/* ---- number types ------------------------------------------------------------------------- */

/* A binary floating-point type: significand bits (the implicit one included), the exponent of
 * its smallest normal, its largest finite value; as the weights P: the relative error of a
 * rounding to it (round to nearest, or truncation for tf32, which hardware may do) and the
 * absolute error allowed below its normal range (flush to zero where FTZ may apply, half the
 * subnormal step where it does not). */
struct attn_type {
    int bits, emin;
    double max, unit, floor;
};

FP8KV_HD struct attn_type attn_type_of(int t)
{
    struct attn_type r = {24, -126, (double)FLT_MAX, 0.0, 0x1p-126}; /* f32: P not rounded (its
                                                       products with V round, which gamma counts) */
    if (t == FP8KV_ATTN_TF32) {
        const struct attn_type tf32 = {11, -126, 0x1.ffcp127, 0x1p-10, 0x1p-126};
        r = tf32;
    } else if (t == FP8KV_ATTN_BF16) {
        const struct attn_type bf16 = {8, -126, 0x1.fep127, 0x1p-8, 0x1p-126};
        r = bf16;
    } else if (t == FP8KV_ATTN_F16) {
        const struct attn_type f16 = {11, -14, 65504.0, 0x1p-11, 0x1p-25};
        r = f16;
    } else if (t == FP8KV_ATTN_E4M3) {
        const struct attn_type e4m3 = {4, -6, 448.0, 0x1p-4, 0x1p-10};
        r = e4m3;
    }
    return r;
}

/* attn_round: fp8kv_attention_round (fp8kv/kv_attention.h says the rule). */
FP8KV_HD double attn_round(double x, int t, int dir)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    const struct attn_type ti = attn_type_of(t);
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

/* ---- the reference and the bound ----------------------------------------------------------- */

#define ATTN_U32 0x1p-23   /* every f32 operation: one ulp, so directed and tensor-core too */
#define ATTN_U64 0x1p-52   /* every double operation of the reference, likewise */
#define ATTN_SLACK 0x1p-40 /* the reference's compensated sums, generously */

FP8KV_HD double attn_gamma(double n, double u)
{
    const double nu = n * u;
    return nu < 0.5 ? nu / (1.0 - nu) : INFINITY;
}

/* attn_exp: e^x in double, within 2 ulps, from IEEE operations alone in a fixed order
 * (Cody-Waite reduction by ln 2, a degree-13 Taylor polynomial), so that a reference, and its
 * digest, are the same on every machine whatever its libm. */
FP8KV_HD double attn_exp(double x)
{
    if (isnan(x))
        return x;
    if (x > 709.8)
        return INFINITY;
    if (x < -745.2)
        return 0.0;
    const double k = nearbyint(x * 1.4426950408889634);
    const double r = (x - k * 0x1.62e42feep-1) - k * 0x1.a39ef35793c76p-33;
    const double inv[13] = {1.0 / 479001600.0,
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
    double p = 1.0 / 6227020800.0; /* 1/13! */
    for (int i = 0; i < 13; i++)
        p = p * r + inv[i];
    return ldexp(p, (int)k);
}

/* a + b = s + e exactly (Knuth's TwoSum). */
FP8KV_HD void attn_two_sum(double a, double b, double *s, double *e)
{
    const double x = a + b, bb = x - a;
    *e = (a - (x - bb)) + (b - bb);
    *s = x;
}

/* The scratch of one query row and q head over n tokens, head size d (the caller's memory). */
struct attn_work {
    int n, d;
    const double *key, *value;                     /* [n][d]: the row's tokens, first to last */
    double *score, *mag, *weight, *common, *apart; /* [n]: s_t, a_t, p_t, p_t theta_t, sigma_t */
    const double *q;                               /* [d] */
};

/* The bound's constants of an arithmetic over a head size (DESIGN §5.3.1). */
struct attn_constants {
    double u_dot, u_p, floor_p, exp_step, dot_rel;
};

FP8KV_HD struct attn_constants attn_constants_of(const struct fp8kv_attention_arith *a, int d)
{
    const struct attn_type p = attn_type_of(a->p);
    struct attn_constants k;
    k.u_dot = a->dot == FP8KV_ATTN_TF32 ? 0x1p-10 : 0.0;
    k.u_p = p.unit;
    k.floor_p = p.floor;
    k.exp_step = ((double)a->exp_ulps + 1.0) * ATTN_U32; /* an exp and the multiply it rescales */
    k.dot_rel = (1.0 + k.u_dot) * (1.0 + k.u_dot) * (1.0 + attn_gamma(d + 3.0, ATTN_U32)) - 1.0;
    return k;
}

/* The phases of one head, each over tokens t or dimensions d that are independent of each other
 * (the device gives them to a block's threads), and the sums whose order is the result's, done
 * in token order by one thread (attn_head composes them on the host). */

/* attn_score_at: s_t and a_t (|softmax_scale| sum |q_d k_td|) of token t. */
FP8KV_HD void attn_score_at(double softmax_scale, struct attn_work *w, int t)
{
    const double *kt = w->key + (size_t)t * w->d;
    double s = 0.0, mag = 0.0;
    for (int d = 0; d < w->d; d++) {
        s += w->q[d] * kt[d];
        mag += fabs(w->q[d] * kt[d]);
    }
    w->score[t] = s * softmax_scale;
    w->mag[t] = mag * fabs(softmax_scale);
}

/* attn_max_of: the largest of the scores [from, to) (a NaN score makes it NaN). */
FP8KV_HD double attn_max_of(const struct attn_work *w, int from, int to, int step)
{
    double m = -INFINITY;
    int nan_score = 0;
    for (int t = from; t < to; t += step) {
        nan_score |= isnan(w->score[t]);
        if (w->score[t] > m)
            m = w->score[t];
    }
    return nan_score ? NAN : m;
}

/* What the weights of one head sum to (DESIGN §5.3.1): L = sum p_t, the common errors'
 * sum p_t theta_t, the separate ones' sum sigma_t, and the reference's own relative error. */
struct attn_weights {
    double L, common, apart, theta_ref;
};

/* attn_weight_at: p_t = exp(s_t - m). */
FP8KV_HD void attn_weight_at(struct attn_work *w, double m, int t)
{
    w->weight[t] = attn_exp(w->score[t] - m);
}

/* attn_sum_weights: L = sum p_t, compensated, in token order. */
FP8KV_HD double attn_sum_weights(const struct attn_work *w)
{
    double L = 0.0, Lc = 0.0;
    for (int t = 0; t < w->n; t++) {
        double e;
        attn_two_sum(L, w->weight[t], &L, &e);
        Lc += e;
    }
    return L + Lc;
}

/* attn_errors_at: token t's common error bound p_t theta_t (its score, its exponent's argument
 * and its exp: computed once, shared by P.V and the sum of the weights) and separate one
 * sigma_t (the rescalings of the running maximum and the partitions' merge, whose factors a
 * compiler may compute differently for the two sums; P's rounding to its dtype, and its
 * floor), given L; returns the reference's own relative error at t. */
FP8KV_HD double attn_errors_at(const struct fp8kv_attention_arith *a, struct attn_work *w, double m,
                               double L, int t)
{
    const struct attn_constants k = attn_constants_of(a, w->d);
    const double p = w->weight[t];
    if (p == 0.0) { /* a score of -Inf: exp gives exactly 0 everywhere */
        w->common[t] = w->apart[t] = 0.0;
        return 0.0;
    }
    const double rescales = ceil((double)w->n / a->tile) + 2.0;
    const double logL = isfinite(L) && L > 0 ? fabs(log(L)) : 0.0;
    const double floor_L = k.floor_p * (L > 1.0 ? L : 1.0);
    const double big = fabs(w->score[t]) > fabs(m) ? fabs(w->score[t]) : fabs(m);
    const double own = 4.0 * ATTN_U32 * (fabs(w->score[t]) + fabs(m));
    const double theta = (1.0 + k.exp_step) * exp(w->mag[t] * k.dot_rel + own) - 1.0;
    const double step = log1p(k.exp_step) + 4.0 * ATTN_U32 * (big + logL + 1.0);
    const double rescaled = expm1(rescales * step);
    const double full = p * (1.0 + theta);
    w->common[t] = p * theta;
    w->apart[t] = (k.u_p + rescaled * (1.0 + k.u_p)) * full + (full < floor_L ? full : floor_L);
    return expm1((w->d + 4.0) * ATTN_U64 * w->mag[t] +
                 4.0 * ATTN_U64 * (fabs(w->score[t]) + fabs(m) + 2.0)) +
           4.0 * ATTN_U64;
}

/* attn_sum_errors: the common and separate error sums into r, in token order. */
FP8KV_HD void attn_sum_errors(const struct attn_work *w, struct attn_weights *r)
{
    r->common = r->apart = 0.0;
    for (int t = 0; t < w->n; t++) {
        r->common += w->common[t];
        r->apart += w->apart[t];
    }
}

/* attn_column: output d of the head, given its weights and their sums r: o = sum p v / L
 * (compensated, in token order), the outputs a value that is not finite decides (one rounded to
 * f16 past its range: the exact output is that infinity, NaN with both or with a NaN value, and a
 * kernel whose weight for it underflows computes 0 x Inf = NaN: both are right, *nan_also says
 * so), then its bound E and the interval [RD(o - E), RU(o + E)] of a->out. Returns 1 where the
 * bound is infinite, else 0. */
FP8KV_HD int attn_column(const struct fp8kv_attention_arith *a, struct attn_work *w,
                         const struct attn_weights *r, int d, double *exact, double *lo, double *hi,
                         unsigned char *nan_also)
{
    const int n = w->n, D = w->d;
    const struct attn_constants k = attn_constants_of(a, D);
    double sum = 0.0, comp = 0.0, A = 0.0, S = 0.0, dev = 0.0;
    for (int t = 0; t < n; t++) { /* sum p v, sum p (1 + theta) |v|, sum sigma |v| */
        const double p = w->weight[t], v = w->value[(size_t)t * D + d];
        if (p == 0.0) /* weight 0 (a score of -Inf, or below double's range): not-finite values
                         are dealt with below */
            continue;
        double e;
        attn_two_sum(sum, p * v, &sum, &e);
        comp += e;
        A += (p + w->common[t]) * fabs(v);
        S += w->apart[t] * fabs(v);
    }
    double o = (sum + comp) / r->L;
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
        o = nan || (pos && neg) ? NAN : pos ? INFINITY : -INFINITY;
    *nan_also = !isnan(o) && (pos || neg || unweighted);
    for (int t = 0; t < n; t++) /* sum p theta |v - o|: the common errors' effect */
        dev += w->common[t] * fabs(w->value[(size_t)t * D + d] - o);
    const double L = r->L, L_lo = L - r->common, L_hi = L + r->common;
    const double gN = attn_gamma(n + 4.0, ATTN_U32);
    const double theta_apart = (r->apart + gN * (L_hi + r->apart)) / L_lo;
    const double u3 = (1.0 + ATTN_U32) * (1.0 + ATTN_U32) * (1.0 + ATTN_U32);
    const double Ec = dev / L_lo, ot = fabs(o) + Ec;
    const double top = (1.0 + k.u_dot) * S + r->apart * ot + k.u_dot * (1.0 + k.u_p) * A +
                       gN * (1.0 + k.u_dot) * (A + S) + gN * (L_hi + r->apart) * ot;
    double E = L_lo > 0.0 && theta_apart < 1.0
                   ? (Ec + top / (L_lo * (1.0 - theta_apart))) * u3 + (u3 - 1.0) * fabs(o)
                   : INFINITY;
    E += (r->theta_ref * 1.01 + ATTN_SLACK) * (A / L + fabs(o));
    *exact = o;
    if (!isfinite(o)) {
        *lo = *hi = o;
        return 0;
    }
    *lo = attn_round(o - E, a->out, -1);
    *hi = attn_round(o + E, a->out, +1);
    return !(E < INFINITY);
}

/* attn_head: the outputs of one query row and q head (w->q its query, w->key and w->value its
 * tokens' rows) under a, the phases above in order: exact[d], the interval [lo[d], hi[d]] of
 * a->out, nan_also[d]; returns the number of outputs whose bound is infinite. */
FP8KV_HD int attn_head(const struct fp8kv_attention_arith *a, double softmax_scale,
                       struct attn_work *w, double *exact, double *lo, double *hi,
                       unsigned char *nan_also)
{
    const int n = w->n, D = w->d;
    if (n == 0) { /* the ABI's rule: a sequence of no tokens gives zeros */
        for (int d = 0; d < D; d++) {
            exact[d] = lo[d] = hi[d] = 0.0;
            nan_also[d] = 0;
        }
        return 0;
    }
    for (int t = 0; t < n; t++)
        attn_score_at(softmax_scale, w, t);
    const double m = attn_max_of(w, 0, n, 1);
    for (int t = 0; t < n; t++)
        attn_weight_at(w, m, t);
    struct attn_weights r = {attn_sum_weights(w), 0.0, 0.0, 0.0};
    for (int t = 0; t < n; t++) {
        const double rt = attn_errors_at(a, w, m, r.L, t);
        r.theta_ref = rt > r.theta_ref ? rt : r.theta_ref;
    }
    attn_sum_errors(w, &r);
    int vacuous = 0;
    for (int d = 0; d < D; d++)
        vacuous += attn_column(a, w, &r, d, exact + d, lo + d, hi + d, nan_also + d);
    return vacuous;
}

/* ---- on the GPU (kv/attention_gpu.hip) ---------------------------------------------------- */

/* One head of a reference job: its tokens' first key and value row (offsets, in doubles, into
 * the job's keys and values: n consecutive rows of d), the offset of its query and of its
 * outputs (the same, in doubles), its token count. */
struct attn_task {
    uint64_t kv, q;
    int32_t n, pad;
};

/* A reference computed on the device: every head's rows in host memory, copied over. */
struct attn_job {
    struct fp8kv_attention_arith arith;
    double softmax_scale;
    int d;
    const double *keys, *values; /* [kv_count] each */
    size_t kv_count;
    const double *queries; /* [q_count] */
    size_t q_count;
    const struct attn_task *tasks;
    size_t task_count;
    double *exact, *lo, *hi; /* [out_count] each: written */
    unsigned char *nan_also;
    size_t out_count;
};

#ifdef __cplusplus
extern "C" {
#endif
/* fp8kv_attention_heads_gpu: attn_head of every task of job on the open GPU, its outputs into
 * the job's arrays, the count of outputs with no finite bound into *vacuous. 0;
 * FP8KV_UNAVAILABLE with no open device; FP8KV_ERR when the device failed (said). */
int fp8kv_attention_heads_gpu(const struct attn_job *job, uint64_t *vacuous);
#ifdef __cplusplus
}
#endif

#endif
