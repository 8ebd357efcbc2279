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

struct fp8kv_codec_cfg fp8kv_cfg_of_profile(const struct fp8kv_profile *p,
                                            enum fp8kv_scale_model m)
{
    struct fp8kv_codec_cfg c = {
        .format = p->format->id == FP8KV_E4M3FNUZ ? FP8KV_CODEC_E4M3FNUZ : FP8KV_CODEC_E4M3FN,
        .saturate = p->overflow == FP8KV_OVERFLOW_SATFINITE,
        .inf_to_nan = p->inf == FP8KV_INF_NAN,
        .model = m == FP8KV_MODEL_F32_MUL_RECIP ? FP8KV_CODEC_F32_MUL_RECIP
                 : m == FP8KV_MODEL_F16_DIV     ? FP8KV_CODEC_F16_DIV
                                                : FP8KV_CODEC_F32_DIV,
    };
    return c;
}
