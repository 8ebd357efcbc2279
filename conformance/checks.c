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

/* ---- failure examples ---------------------------------------------------------------------- */

struct fp8kv_failure fp8kv_failure_one(enum fp8kv_dtype dtype, uint32_t input, int cls, uint8_t got,
                                       uint8_t want)
{
    return (struct fp8kv_failure){.input = input,
                                  .last = input,
                                  .count = 1,
                                  .dtype = (uint8_t)dtype,
                                  .cls = (uint8_t)(cls < 0 ? FP8KV_NO_CLASS : cls),
                                  .got = got,
                                  .want = want};
}

/* The lines a class may keep: FP8KV_EXAMPLES_PER_CLASS, or FP8KV_UNCLASSED_LINES for none. */
static int class_budget(int cls)
{
    return cls == FP8KV_NO_CLASS ? FP8KV_UNCLASSED_LINES : FP8KV_EXAMPLES_PER_CLASS;
}

/* Whether f continues example e: the next input at the same scale (or none), failing alike. */
static int continues(const struct fp8kv_failure *e, const struct fp8kv_failure *f)
{
    return e->has_scale == f->has_scale && (!e->has_scale || e->scale == f->scale) &&
           e->dtype == f->dtype && e->last != UINT32_MAX && f->input == e->last + 1 &&
           e->cls == f->cls && e->got == f->got && e->want == f->want && e->other == f->other &&
           e->note == f->note;
}

int fp8kv_examples_add(struct fp8kv_examples *e, const struct fp8kv_failure *f)
{
    const int cls = f->cls <= FP8KV_NO_CLASS ? f->cls : FP8KV_NO_CLASS;
    const int last = e->last[cls] - 1;
    if (last >= 0 && continues(&e->v[last], f)) {
        e->v[last].last = f->last;
        e->v[last].count += f->count;
        return last;
    }
    if (e->kept[cls] >= class_budget(cls) || e->n == FP8KV_MAX_FAILURE_LINES)
        return -1;
    e->v[e->n] = *f;
    e->v[e->n].cls = (uint8_t)cls;
    e->kept[cls]++;
    e->last[cls] = (int8_t)(e->n + 1);
    return e->n++;
}

const char *fp8kv_format_count(uint64_t n, char *buf, size_t size)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n), o = 0;
    char grouped[48];
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            grouped[o++] = ',';
        grouped[o++] = digits[i];
    }
    grouped[o] = '\0';
    snprintf(buf, size, "%s", grouped);
    return buf;
}

static float f32_of_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The decimal value of input bits of dtype, with the digits that tell it from its neighbours. */
static void value_text(enum fp8kv_dtype dtype, uint32_t bits, char *buf, size_t size)
{
    static const int digits[FP8KV_DTYPE_COUNT] = {9, 5, 4}; /* f32, f16, bf16 */
    snprintf(buf, size, "%.*g", digits[dtype],
             (double)f32_of_bits(fp8kv_widen_to_f32(dtype, bits)));
}

void fp8kv_failure_input_text(const struct fp8kv_failure *f, char *buf, size_t size)
{
    const enum fp8kv_dtype dt = f->dtype < FP8KV_DTYPE_COUNT ? f->dtype : FP8KV_DTYPE_F32;
    const int width = dt == FP8KV_DTYPE_F32 ? 8 : 4;
    char v[32], w[32], count[32];
    value_text(dt, f->input, v, sizeof v);
    int used;
    if (f->count > 1) {
        value_text(dt, f->last, w, sizeof w);
        used = snprintf(buf, size, "%s 0x%0*x..0x%0*x (%s..%s, %s inputs)", fp8kv_dtype_names[dt],
                        width, f->input, width, f->last, v, w,
                        fp8kv_format_count(f->count, count, sizeof count));
    } else {
        used = snprintf(buf, size, "%s 0x%0*x (%s)", fp8kv_dtype_names[dt], width, f->input, v);
    }
    if (!f->has_scale || used < 0 || (size_t)used >= size)
        return;
    /* a pair: its scale and its real quotient (of the range's ends) */
    const double s = (double)f32_of_bits(f->scale);
    const double q0 = (double)f32_of_bits(fp8kv_widen_to_f32(dt, f->input)) / s,
                 q1 = (double)f32_of_bits(fp8kv_widen_to_f32(dt, f->last)) / s;
    value_text(FP8KV_DTYPE_F32, f->scale, w, sizeof w);
    if (f->count > 1)
        snprintf(buf + used, size - (size_t)used, " / 0x%08x (%s) = %.9g..%.9g", f->scale, w, q0,
                 q1);
    else
        snprintf(buf + used, size - (size_t)used, " / 0x%08x (%s) = %.9g", f->scale, w, q0);
}

enum fp8kv_class fp8kv_pair_class(const struct fp8kv_format *format, uint32_t x, uint32_t s)
{
    const float q = f32_of_bits(x) / f32_of_bits(s); /* RN32, as the f32 division rounds */
    uint32_t bits;
    memcpy(&bits, &q, sizeof bits);
    return fp8kv_classify_f32(format, bits);
}

/* A new line of class cls, or NULL when its class has no room left. */
static char *new_line(struct fp8kv_check *c, int cls)
{
    int kept = 0;
    for (int i = 0; i < c->failure_lines; i++)
        kept += c->line_class[i] == cls;
    if (kept >= class_budget(cls) || c->failure_lines == FP8KV_MAX_FAILURE_LINES)
        return NULL;
    c->line_class[c->failure_lines] = (uint8_t)cls;
    return c->failures[c->failure_lines++];
}

void fp8kv_check_failure(struct fp8kv_check *c, int cls, const char *fmt, ...)
{
    c->mismatches++;
    if (cls >= 0 && cls < FP8KV_CLASS_COUNT)
        c->class_mismatches[cls]++;
    char *line = new_line(c, cls >= 0 && cls < FP8KV_CLASS_COUNT ? cls : FP8KV_NO_CLASS);
    if (!line)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, FP8KV_FAILURE_LINE_SIZE, fmt, ap);
    va_end(ap);
}

/* Keeps f among c's examples and writes the line of the example that holds it. */
static void show_example(struct fp8kv_check *c, const struct fp8kv_failure *f)
{
    const int before = c->examples.n;
    const int k = fp8kv_examples_add(&c->examples, f);
    if (k < 0)
        return;
    if (c->examples.n > before) { /* a new example: a new line, when there is room */
        const char *line = new_line(c, f->cls);
        c->example_line[k] = (int8_t)(line ? c->failure_lines - 1 : -1);
    }
    if (c->example_line[k] < 0)
        return;
    const struct fp8kv_failure *e = &c->examples.v[k];
    char input[128];
    fp8kv_failure_input_text(e, input, sizeof input);
    snprintf(c->failures[c->example_line[k]], FP8KV_FAILURE_LINE_SIZE,
             "%s => %02x  expected %02x%s%s", input, e->got, e->want,
             e->cls < FP8KV_CLASS_COUNT ? "  " : "",
             e->cls < FP8KV_CLASS_COUNT ? fp8kv_class_names[e->cls] : "");
}

void fp8kv_check_fail_input(struct fp8kv_check *c, const struct fp8kv_failure *f)
{
    c->mismatches += f->count;
    if (f->cls < FP8KV_CLASS_COUNT)
        c->class_mismatches[f->cls] += f->count;
    show_example(c, f);
}

void fp8kv_check_show_examples(struct fp8kv_check *c, const struct fp8kv_examples *e)
{
    for (int i = 0; i < e->n; i++)
        show_example(c, &e->v[i]);
}

enum fp8kv_outcome fp8kv_check_outcome(const struct fp8kv_check *c)
{
    return !c->gated ? FP8KV_OUTCOME_INFO : c->passed ? FP8KV_OUTCOME_PASS : FP8KV_OUTCOME_FAIL;
}

void fp8kv_check_finish(struct fp8kv_check *c, double seconds)
{
    c->seconds = seconds;
    c->passed = c->cases > 0 && c->mismatches == 0 &&
                (!c->has_nmse || !c->gated || c->nmse_reported ||
                 (c->nmse <= c->threshold && !isnan(c->nmse)));
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
#define SAME_FORMAT(a, name, number)                                                               \
    _Static_assert((int)FP8KV_CODEC_##name == (int)FP8KV_##name,                                   \
                   "codec format " #name " follows enum fp8kv_format_id");
FP8KV_CODEC_FORMATS(SAME_FORMAT, ~)
#undef SAME_FORMAT
_Static_assert((int)FP8KV_CODEC_FORMAT_COUNT == (int)FP8KV_FORMAT_COUNT,
               "codec.h's FP8KV_CODEC_FORMATS lists every format of enum fp8kv_format_id");
_Static_assert((int)FP8KV_CODEC_F32_DIV == (int)FP8KV_MODEL_F32_DIV &&
                   (int)FP8KV_CODEC_F32_MUL_RECIP == (int)FP8KV_MODEL_F32_MUL_RECIP &&
                   (int)FP8KV_CODEC_F16_DIV == (int)FP8KV_MODEL_F16_DIV &&
                   (int)FP8KV_MODEL_EXACT == (int)FP8KV_MODEL_COUNT - 1,
               "codec scale models follow enum fp8kv_scale_model; exact is the truth's alone");
_Static_assert((int)FP8KV_KV_F32 == (int)FP8KV_DTYPE_F32 &&
                   (int)FP8KV_KV_F16 == (int)FP8KV_DTYPE_F16 &&
                   (int)FP8KV_KV_BF16 == (int)FP8KV_DTYPE_BF16,
               "KV element types follow enum fp8kv_dtype");

int fp8kv_is_kernel_model(enum fp8kv_scale_model m)
{
    return (int)m >= 0 && m < FP8KV_MODEL_COUNT && m != FP8KV_MODEL_EXACT;
}

int fp8kv_kernel_models(const char *names[FP8KV_MODEL_COUNT])
{
    int n = 0;
    for (int m = 0; m < FP8KV_MODEL_COUNT; m++)
        if (fp8kv_is_kernel_model((enum fp8kv_scale_model)m))
            names[n++] = fp8kv_model_names[m];
    return n;
}

int fp8kv_kernel_model_check(enum fp8kv_scale_model m)
{
    if ((int)m < 0 || m >= FP8KV_MODEL_COUNT)
        return fp8kv_fail("scale model %d does not exist", (int)m);
    if (!fp8kv_is_kernel_model(m)) {
        const char *names[FP8KV_MODEL_COUNT];
        char list[128];
        fp8kv_names_list(names, fp8kv_kernel_models(names), ", ", " or ", list, sizeof list);
        return fp8kv_fail("scale model %s rounds the real quotient x/s once: a yardstick for "
                          "the others, no kernel's arithmetic (kernels compute %s)",
                          fp8kv_model_names[m], list);
    }
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

/* ---- a check as a log line ------------------------------------------------------------------- */

void fp8kv_check_profile_label(const struct fp8kv_check *c, char *buf, size_t size)
{
    if (c->rule[0] && c->model[0])
        snprintf(buf, size, "%s %s %s", c->profile, c->rule, c->model);
    else
        snprintf(buf, size, "%s", c->profile);
}

void fp8kv_log_checks(FILE *log, const struct fp8kv_results *r, size_t from)
{
    if (!log)
        return;
    for (size_t i = from; i < r->count; i++) {
        const struct fp8kv_check *c = &r->items[i];
        static const char *const outcome[] = {"INFO", "PASS", "FAIL"};
        char profile[128];
        fp8kv_check_profile_label(c, profile, sizeof profile);
        if (c->subject_failed) { /* no counts: they are of a pass that did not finish */
            fprintf(log, "%-6s %-16s %-14s %-26s %s\n", outcome[FP8KV_OUTCOME_FAIL], c->name,
                    c->subject, profile, c->detail);
            continue;
        }
        if (!c->gated && c->cases == 0 && strstr(c->detail, "not run:")) { /* the reason */
            fprintf(log, "%-6s %-16s %-14s %-26s %s\n", outcome[FP8KV_OUTCOME_INFO], c->name,
                    c->subject, profile, c->detail);
            continue;
        }
        fprintf(log, "%-6s %-16s %-14s %-26s cases=%llu mismatches=%llu",
                outcome[fp8kv_check_outcome(c)], c->name, c->subject, profile,
                (unsigned long long)c->cases, (unsigned long long)c->mismatches);
        if (c->has_nmse)
            fprintf(log, " nmse=%.3g", c->nmse);
        if (c->has_bound)
            fprintf(log, " error/bound=%.3g", c->bound_ratio);
        fprintf(log, " (%.2f s)\n", c->seconds);
        for (int k = 0; k < c->failure_lines && c->gated; k++)
            fprintf(log, "       %s\n", c->failures[k]);
    }
    fflush(log);
}
