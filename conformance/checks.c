/* checks.c — the check record, result lists and the shared measures of fp8kv/checks.h. */
#include "fp8kv/checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fp8kv/diag.h"

static void copy_name(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

void fp8kv_check_init(struct fp8kv_check *c, const char *name, const char *subject,
                      const char *profile, const char *detail)
{
    memset(c, 0, sizeof *c);
    copy_name(c->name, sizeof c->name, name);
    copy_name(c->subject, sizeof c->subject, subject);
    copy_name(c->profile, sizeof c->profile, profile);
    copy_name(c->detail, sizeof c->detail, detail);
    c->gated = 1;
}

void fp8kv_check_failure(struct fp8kv_check *c, int cls, const char *fmt, ...)
{
    c->mismatches++;
    if (cls >= 0 && cls < FP8KV_CLASS_COUNT)
        c->class_mismatches[cls]++;
    if (c->failure_lines >= FP8KV_MAX_FAILURE_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->failures[c->failure_lines++], sizeof c->failures[0], fmt, ap);
    va_end(ap);
}

enum fp8kv_outcome fp8kv_check_outcome(const struct fp8kv_check *c)
{
    return !c->gated ? FP8KV_OUTCOME_INFO : c->passed ? FP8KV_OUTCOME_PASS : FP8KV_OUTCOME_FAIL;
}

void fp8kv_check_finish(struct fp8kv_check *c, double seconds)
{
    c->seconds = seconds;
    c->passed = c->cases > 0 && c->mismatches == 0 &&
                (!c->has_nmse || !c->gated || (c->nmse <= c->threshold && !isnan(c->nmse)));
}

int fp8kv_results_add(struct fp8kv_results *r, const struct fp8kv_check *c)
{
    if (r->count == r->capacity) {
        size_t cap = r->capacity ? 2 * r->capacity : 64;
        struct fp8kv_check *items = realloc(r->items, cap * sizeof *items);
        if (!items)
            return fp8kv_fail("out of memory");
        r->items = items;
        r->capacity = cap;
    }
    r->items[r->count++] = *c;
    return FP8KV_OK;
}

int fp8kv_results_passed(const struct fp8kv_results *r)
{
    size_t gated = 0;
    for (size_t i = 0; i < r->count; i++) {
        if (!r->items[i].gated)
            continue;
        gated++;
        if (!r->items[i].passed)
            return 0;
    }
    return gated > 0;
}

void fp8kv_results_free(struct fp8kv_results *r)
{
    free(r->items);
    memset(r, 0, sizeof *r);
}

double fp8kv_nmse(const float *y, const double *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double a = (double)y[i], b = ref[i];
        if (isnan(a) || isnan(b)) {
            if (isnan(a) && isnan(b))
                continue;
            return INFINITY;
        }
        if (a == b) { /* equal, infinities included */
            den += isfinite(b) ? b * b : 0.0;
            continue;
        }
        num += (a - b) * (a - b);
        den += b * b;
    }
    if (num == 0.0)
        return 0.0;
    return den == 0.0 ? INFINITY : num / den;
}

double fp8kv_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const char *fp8kv_vector_path(char *buf, size_t size, const char *dir,
                              const struct fp8kv_profile *p, const char *file)
{
    snprintf(buf, size, "%s/%s/%s", dir, p->name, file);
    return buf;
}

/* The subjects' enums (codec.h) and the truth's (spec.h) name the same choices with the same
 * numbers; these asserts are what lets one be cast to the other. */
_Static_assert((int)FP8KV_CODEC_E4M3FN == (int)FP8KV_E4M3FN &&
                   (int)FP8KV_CODEC_E4M3FNUZ == (int)FP8KV_E4M3FNUZ,
               "codec formats follow enum fp8kv_format_id");
_Static_assert((int)FP8KV_CODEC_F32_DIV == (int)FP8KV_MODEL_F32_DIV &&
                   (int)FP8KV_CODEC_F32_MUL_RECIP == (int)FP8KV_MODEL_F32_MUL_RECIP &&
                   (int)FP8KV_CODEC_F16_DIV == (int)FP8KV_MODEL_F16_DIV &&
                   (int)FP8KV_MODEL_EXACT == (int)FP8KV_MODEL_COUNT - 1,
               "codec scale models follow enum fp8kv_scale_model; exact is the truth's alone");
_Static_assert((int)FP8KV_KV_F32 == (int)FP8KV_DTYPE_F32 &&
                   (int)FP8KV_KV_F16 == (int)FP8KV_DTYPE_F16 &&
                   (int)FP8KV_KV_BF16 == (int)FP8KV_DTYPE_BF16,
               "KV element types follow enum fp8kv_dtype");

int fp8kv_kernel_model_check(enum fp8kv_scale_model m)
{
    if ((int)m < 0 || m >= FP8KV_MODEL_COUNT)
        return fp8kv_fail("scale model %d does not exist", (int)m);
    if (m == FP8KV_MODEL_EXACT)
        return fp8kv_fail("scale model exact rounds the real quotient x/s once: a yardstick for "
                          "the others, no kernel's arithmetic (kernels compute f32_div, "
                          "f32_mul_recip or f16_div)");
    return FP8KV_OK;
}

int fp8kv_model_cfg(const struct fp8kv_profile *p, enum fp8kv_scale_model m,
                    struct fp8kv_codec_cfg *cfg)
{
    const int rc = fp8kv_kernel_model_check(m);
    if (rc != 0)
        return rc;
    *cfg = (struct fp8kv_codec_cfg){
        .format = (uint8_t)p->format->id,
        .saturate = p->overflow == FP8KV_OVERFLOW_SATFINITE,
        .inf_to_nan = p->inf == FP8KV_INF_NAN,
        .model = (uint8_t)m,
    };
    return FP8KV_OK;
}

int fp8kv_subject_implements(const struct fp8kv_subject *s, const struct fp8kv_profile *p)
{
    return fp8kv_claim_covers(s->claim, fp8kv_profile_cfg(p));
}

struct fp8kv_codec_cfg fp8kv_profile_cfg(const struct fp8kv_profile *p)
{
    struct fp8kv_codec_cfg cfg;
    (void)fp8kv_model_cfg(p, FP8KV_MODEL_F32_DIV, &cfg); /* a kernel model: cannot fail */
    return cfg;
}
