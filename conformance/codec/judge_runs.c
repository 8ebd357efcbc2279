/* codec/judge_runs.c — the judging tables of the exhaustive sweeps (fp8kv/sweep.h): the runs of
 * inputs that share an expected code and an input class, at scale 1 (from the certified
 * boundary table) or at a store scale (from the judge's own statement of the model's quotient). */
#include "fp8kv/sweep.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"

struct runs {
    struct fp8kv_sweep_run *v;
    size_t n, cap;
};

/* An expectation: a code c passes when c & mask lies in [value - span, value]. */
struct accept {
    uint8_t mask, value, span;
};

static int push_run(struct runs *r, uint32_t start, struct accept a, uint8_t cls)
{
    if (r->n) {
        const struct fp8kv_sweep_run *last = &r->v[r->n - 1];
        if (last->mask == a.mask && last->value == a.value && last->span == a.span &&
            last->cls == cls)
            return FP8KV_OK; /* the same expectation and class: the previous run goes on */
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 1024;
        struct fp8kv_sweep_run *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return fp8kv_fail("out of memory");
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = (struct fp8kv_sweep_run){start, a.mask, a.value, cls, a.span};
    return FP8KV_OK;
}

/* What accepts a code under the NaN check: the exact byte, or any NaN code of the format when
 * want is a NaN and the check is by class: with signed NaNs either sign, and the NaN
 * magnitudes just below want's too (e5m2: 0x7D..0x7F). */
static struct accept acceptance(const struct fp8kv_format *f, enum fp8kv_nan_check check,
                                uint8_t want)
{
    struct accept a = {0xFF, want, 0};
    if (check == FP8KV_NAN_CHECK_CLASS && fp8kv_is_nan_code(f, want) && f->nan_has_sign) {
        a.mask = 0x7F; /* either sign */
        a.value = want & 0x7F;
        while (a.value - a.span > 0 && fp8kv_is_nan_code(f, (uint8_t)(a.value - a.span - 1)))
            a.span++;
    }
    return a;
}

uint8_t fp8kv_sweep_expected(const struct fp8kv_profile *p, const uint32_t *b, uint32_t x)
{
    const struct fp8kv_format *f = p->format;
    int negative = (int)(x >> 31);
    uint32_t mag = x & 0x7FFFFFFFu;
    if (mag > 0x7F800000u)
        return fp8kv_nan_code(f, negative);
    if (mag == 0x7F800000u)
        return fp8kv_infinity_code(p, negative);
    int top = fp8kv_boundary_count(f) - 1; /* b[top]: the first overflowing f32 */
    if (mag >= b[top])
        return fp8kv_overflow_code(p, negative);
    int lo = 0, hi = top - 1; /* the largest k with b[k] <= mag */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (b[mid] <= mag)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0)
        return fp8kv_zero_code(f, negative);
    return (uint8_t)(negative ? lo | 0x80 : lo);
}

/* The run that starts at input x (f32 bits): its expectation and class. */
static int push_run_at(struct runs *r, const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                       const uint32_t *b, uint32_t start, uint32_t x)
{
    return push_run(r, start, acceptance(p->format, check, fp8kv_sweep_expected(p, b, x)),
                    (uint8_t)fp8kv_classify_f32(p->format, x));
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* ---- runs at a store scale ------------------------------------------------------------------ */

#if defined(__FAST_MATH__)
#error "codec/judge_runs.c states the scale models with IEEE float arithmetic: no -ffast-math"
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "codec/judge_runs.c states the scale models with float operations evaluated in float"
#endif

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* The quotient a store under model m hands to the fp8 rounding, in the judge's own statement of
 * the model (docs/DESIGN.md §1.1): the IEEE f32 division and multiplication the model names
 * and, for f16_div, the compiler's correctly rounded conversion to _Float16; never codec.h's
 * (a subject's). x, s: f32 bits. 0 with *q, or FP8KV_ERR when this build cannot state m. */
static int judge_quotient(enum fp8kv_scale_model m, uint32_t x, uint32_t s, float *q)
{
    float xf, sf;
    memcpy(&xf, &x, sizeof xf);
    memcpy(&sf, &s, sizeof sf);
    volatile float r; /* each step rounded to f32 on its own */
    switch (m) {
    case FP8KV_MODEL_F32_DIV: *q = xf / sf; return FP8KV_OK;
    case FP8KV_MODEL_F32_MUL_RECIP:
        r = 1.0f / sf;
        *q = xf * r;
        return FP8KV_OK;
    case FP8KV_MODEL_F16_DIV:
#if defined(__FLT16_MAX__)
        r = xf / sf;
        {
            volatile _Float16 h = (_Float16)r;
            *q = (float)h;
        }
        return FP8KV_OK;
#else
        return fp8kv_fail("scale model f16_div: this build has no _Float16 to state RN16 with");
#endif
    default: return fp8kv_kernel_model_check(m) != 0 ? FP8KV_ERR : fp8kv_fail("no such model");
    }
}

int fp8kv_sweep_expected_scaled(const struct fp8kv_profile *p, const uint32_t *boundaries,
                                enum fp8kv_scale_model m, uint32_t x, uint32_t s, uint8_t *code,
                                int *nan_by_class)
{
    *nan_by_class = 0;
    float q = 0.0f;
    if (judge_quotient(m, x, s, &q) != 0)
        return FP8KV_ERR;
    const uint32_t qb = bits_of(q);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) { /* a NaN input: the NaN code of its sign */
        *code = fp8kv_nan_code(p->format, (int)(x >> 31));
    } else if ((qb & 0x7FFFFFFFu) > 0x7F800000u) { /* an invalid operation: no sign by IEEE */
        *code = fp8kv_nan_code(p->format, 0);
        *nan_by_class = 1;
    } else {
        *code = fp8kv_sweep_expected(p, boundaries, qb);
    }
    return FP8KV_OK;
}

/* The run that starts at input `start` (f32 bits x) stored at scale s under model m. */
static int push_scaled_run_at(struct runs *r, const struct fp8kv_profile *p,
                              enum fp8kv_nan_check check, const uint32_t *b,
                              enum fp8kv_scale_model m, uint32_t s, uint32_t start, uint32_t x)
{
    uint8_t want;
    int by_class;
    if (fp8kv_sweep_expected_scaled(p, b, m, x, s, &want, &by_class) != 0)
        return FP8KV_ERR;
    return push_run(r, start, acceptance(p->format, by_class ? FP8KV_NAN_CHECK_CLASS : check, want),
                    (uint8_t)fp8kv_pair_class(p->format, x, s));
}

/* The smallest positive input x in [1, Inf] whose quotient under m at scale s > 0 reaches
 * (in magnitude bits) the point `at`, or 0 when none does. The quotient of a positive input
 * is non-decreasing in x for every model, so a bisection over bit patterns finds it. */
static uint32_t first_reaching(enum fp8kv_scale_model m, uint32_t s, uint32_t at)
{
    float q = 0.0f;
    uint32_t lo = 1, hi = 0x7F800000u;
    judge_quotient(m, hi, s, &q);
    if (bits_of(q) < at)
        return 0;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        judge_quotient(m, mid, s, &q);
        if (bits_of(q) >= at)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The points of positive f32 values where the expected code or the class can change: the
 * boundaries b[k]; each midpoint (b[k] when code k is even, as the tie goes up to it, else
 * b[k] - 1) and the pattern after it; 0, 1 (the first denormal), 2^-126, the fp8 normal
 * threshold, Inf, Inf + 1 (the first NaN). Between two points the expectation and the class
 * are constant. Writes at most quotient_point_cap(f) of them to points; returns how many. */
static size_t quotient_points(const struct fp8kv_format *f, const uint32_t *b, uint32_t *points)
{
    const int count = fp8kv_boundary_count(f);
    float min_normal = (float)f->min_normal;
    const uint32_t fixed[] = {0, 1, 0x00800000u, bits_of(min_normal), 0x7F800000u, 0x7F800001u};
    size_t n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        points[n++] = fixed[i];
    for (int k = 1; k < count; k++) {
        uint32_t mid = (k & 1) ? b[k] - 1 : b[k];
        points[n++] = b[k];
        points[n++] = mid;
        points[n++] = mid + 1;
    }
    return n;
}

static size_t quotient_point_cap(const struct fp8kv_format *f)
{
    return 6 + 3 * (size_t)fp8kv_boundary_count(f);
}

/* Sorts the n points and pushes the run each distinct one starts (labelled by label_at). */
static int push_points(struct runs *r, uint32_t *points, size_t n,
                       int (*label_at)(struct runs *r, uint32_t x, const void *ctx),
                       const void *ctx)
{
    qsort(points, n, sizeof *points, cmp_u32);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (i == 0 || points[i] != points[i - 1])
            rc = label_at(r, points[i], ctx);
    return rc;
}

/* What labels a run: the profile, the NaN check, the table, and a scale (0: none). */
struct run_labels {
    const struct fp8kv_profile *p;
    enum fp8kv_nan_check check;
    const uint32_t *b;
    enum fp8kv_scale_model model;
    uint32_t scale;
};

static int label_unscaled(struct runs *r, uint32_t x, const void *ctx)
{
    const struct run_labels *l = ctx;
    return push_run_at(r, l->p, l->check, l->b, x, x);
}

static int label_scaled(struct runs *r, uint32_t x, const void *ctx)
{
    const struct run_labels *l = ctx;
    return push_scaled_run_at(r, l->p, l->check, l->b, l->model, l->scale, x, x);
}

/* Runs of the f32 domain at scale 1: the quotient points (and their negative twins) are where
 * the runs start, each point's own input labelling its run. */
static int f32_runs(const struct fp8kv_profile *p, enum fp8kv_nan_check check, const uint32_t *b,
                    struct runs *r)
{
    const size_t cap = quotient_point_cap(p->format);
    uint32_t *points = malloc(2 * cap * sizeof *points);
    if (!points)
        return fp8kv_fail("out of memory");
    const size_t n = quotient_points(p->format, b, points);
    for (size_t i = 0; i < n; i++)
        points[n + i] = points[i] | 0x80000000u;
    const struct run_labels l = {p, check, b, FP8KV_MODEL_F32_DIV, 0};
    const int rc = push_points(r, points, 2 * n, label_unscaled, &l);
    free(points);
    return rc;
}

/* Runs of the f32 domain at scale s under model m: a run starts at the smallest input whose
 * model quotient, or whose class quotient RN32(x / s), reaches a quotient point; at 0, 1 (the
 * quotient of 0 may be an invalid operation's NaN), Inf and the first NaN; and the negative
 * twins (|quotient(x, s)| = quotient(|x|, |s|): IEEE operations are sign-symmetric). */
static int f32_runs_scaled(const struct run_labels *l, struct runs *r)
{
    const struct fp8kv_format *f = l->p->format;
    const size_t cap = quotient_point_cap(f);
    uint32_t *q = malloc(cap * sizeof *q), *points = malloc(2 * (2 * cap + 4) * sizeof *points);
    if (!q || !points) {
        free(q);
        free(points);
        return fp8kv_fail("out of memory");
    }
    const size_t nq = quotient_points(f, l->b, q);
    const uint32_t s = l->scale & 0x7FFFFFFFu;
    const enum fp8kv_scale_model by[2] = {l->model, FP8KV_MODEL_F32_DIV}; /* code, class */
    size_t n = 0;
    points[n++] = 0;
    points[n++] = 1;
    points[n++] = 0x7F800000u;
    points[n++] = 0x7F800001u;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < nq; i++) {
            const uint32_t x = first_reaching(by[k], s, q[i]);
            if (x)
                points[n++] = x;
        }
    for (size_t i = 0, half = n; i < half; i++)
        points[n++] = points[i] | 0x80000000u;
    const int rc = push_points(r, points, n, label_scaled, l);
    free(q);
    free(points);
    return rc;
}

/* Runs of a 16-bit domain: every input labelled, merged where equal. */
static int half_runs(const struct run_labels *l, enum fp8kv_dtype dtype, struct runs *r)
{
    int rc = 0;
    for (uint32_t i = 0; i < 65536 && rc == 0; i++) {
        const uint32_t x = fp8kv_widen_to_f32(dtype, i);
        rc = l->scale ? push_scaled_run_at(r, l->p, l->check, l->b, l->model, l->scale, i, x)
                      : push_run_at(r, l->p, l->check, l->b, i, x);
    }
    return rc;
}

static long domain_runs(const struct run_labels *l, enum fp8kv_domain domain,
                        struct fp8kv_sweep_run **out)
{
    struct runs r = {0};
    int rc;
    if (domain == FP8KV_DOMAIN_F32)
        rc = l->scale ? f32_runs_scaled(l, &r) : f32_runs(l->p, l->check, l->b, &r);
    else
        rc = half_runs(l, domain == FP8KV_DOMAIN_F16 ? FP8KV_DTYPE_F16 : FP8KV_DTYPE_BF16, &r);
    if (rc != 0) {
        free(r.v);
        return FP8KV_ERR;
    }
    *out = r.v;
    return (long)r.n;
}

long fp8kv_sweep_runs(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                      enum fp8kv_domain domain, const uint32_t *b, struct fp8kv_sweep_run **out)
{
    const struct run_labels l = {p, check, b, FP8KV_MODEL_F32_DIV, 0};
    return domain_runs(&l, domain, out);
}

long fp8kv_sweep_runs_scaled(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                             enum fp8kv_domain domain, const uint32_t *b, enum fp8kv_scale_model m,
                             uint32_t s, struct fp8kv_sweep_run **out)
{
    if ((s & 0x7FFFFFFFu) == 0 || (s & 0x7FFFFFFFu) >= 0x7F800000u)
        return fp8kv_fail("scale 0x%08x: a store's scale is finite and nonzero", s);
    float q = 0.0f;
    if (judge_quotient(m, 0x3F800000u, s, &q) != 0) /* a model the judge can state */
        return FP8KV_ERR;
    const struct run_labels l = {p, check, b, m, s};
    return domain_runs(&l, domain, out);
}
