/* block/report.c — the block judges' report, and a block subject under one combination
 * (fp8kv/block_report.h). */
#include "fp8kv/block_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/diag.h"
#ifdef FP8KV_HAVE_GPU
#include "fp8kv/gpu.h"
#endif

const char *const fp8kv_block_check_names[FP8KV_BLOCK_CHECK_COUNT] = {"decode", "sweep", "blocks",
                                                                      "vectors"};

/* ---- reports ---- */

void fp8kv_block_report_fail(struct fp8kv_block_report *r, enum fp8kv_block_check_kind k,
                             const char *fmt, ...)
{
#pragma omp critical(fp8kv_block_report)
    {
        if (r->nlines < FP8KV_BLOCK_REPORT_LINES &&
            r->nlines_of[k] < FP8KV_BLOCK_REPORT_LINES_PER_KIND) {
            r->nlines_of[k]++;
            r->line_kind[r->nlines] = (uint8_t)k;
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->lines[r->nlines++], sizeof r->lines[0], fmt, ap);
            va_end(ap);
        } else {
            r->dropped++;
        }
    }
}

void fp8kv_block_report_note(struct fp8kv_block_report *r, const char *fmt, ...)
{
    if (r->nnotes >= (int)(sizeof r->notes / sizeof r->notes[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->nnotes++], sizeof r->notes[0], fmt, ap);
    va_end(ap);
}

uint64_t fp8kv_block_report_wrong(const struct fp8kv_block_report *r)
{
    uint64_t n = 0;
    for (int k = 0; k < FP8KV_BLOCK_CHECK_COUNT; k++)
        n += r->wrong[k];
    return n;
}

/* ---- a block subject under one combination -------------------------------------------------- */

int fp8kv_block_select(const struct fp8kv_subject *s, const struct fp8kv_block_format *f,
                       enum fp8kv_block_rule rule, enum fp8kv_block_model model, int threads,
                       struct fp8kv_block_under_test *out)
{
    const struct fp8kv_bcodec_cfg cfg = {(uint8_t)f->id, (uint8_t)rule, (uint8_t)model, 1.0f};
    if (!fp8kv_subject_can(s, FP8KV_CAP_BLOCK) || !s->block ||
        !fp8kv_block_claim_covers(s->block->claim, cfg))
        return FP8KV_UNAVAILABLE;
    int workers = threads < 1 ? 1 : threads;
    if (s->block->workers > 0 && s->block->workers < workers)
        workers = s->block->workers;
    *out = (struct fp8kv_block_under_test){s, f, rule, model, workers};
    return FP8KV_OK;
}

struct fp8kv_bcodec_cfg fp8kv_block_cfg(const struct fp8kv_block_under_test *u, float G)
{
    return (struct fp8kv_bcodec_cfg){(uint8_t)u->format->id, (uint8_t)u->rule, (uint8_t)u->model,
                                     G};
}

int fp8kv_block_encode(const struct fp8kv_block_under_test *u, int worker, const float *x,
                       size_t nblocks, float G, uint8_t *scales, uint8_t *elements)
{
    const struct fp8kv_block_kernels *k = u->subject->block;
    return k->encode(k->ctx, worker, fp8kv_block_cfg(u, G), x, nblocks, scales, elements);
}

int fp8kv_block_decode(const struct fp8kv_block_under_test *u, int worker, const uint8_t *scales,
                       const uint8_t *elements, size_t nblocks, float G, float *y)
{
    const struct fp8kv_block_kernels *k = u->subject->block;
    return k->decode(k->ctx, worker, fp8kv_block_cfg(u, G), scales, elements, nblocks, y);
}

int fp8kv_block_can_decode(const struct fp8kv_block_under_test *u)
{
    return u->subject->block->decode != NULL;
}

int fp8kv_block_can_sweep(const struct fp8kv_block_under_test *u)
{
    return u->subject->block->sweep != NULL;
}

struct fp8kv_block_under_test fp8kv_block_cpu(const struct fp8kv_block_format *f,
                                              enum fp8kv_block_rule rule,
                                              enum fp8kv_block_model model, int workers)
{
    struct fp8kv_block_under_test u;
    /* the CPU codec claims every combination */
    fp8kv_block_select(
        fp8kv_subject_first(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, FP8KV_CAP_BLOCK), f, rule,
        model, workers, &u);
    return u;
}

int fp8kv_block_gpu(const struct fp8kv_block_format *f, enum fp8kv_block_rule rule,
                    enum fp8kv_block_model model, int device, struct fp8kv_block_under_test *out)
{
#ifdef FP8KV_HAVE_GPU
    struct fp8kv_gpu_device_info info;
    if (fp8kv_gpu_open(device, &info) != 0)
        return FP8KV_ERR;
    const struct fp8kv_subject *table = NULL;
    const struct fp8kv_subject *s =
        fp8kv_subject_first(table, fp8kv_gpu_subjects(&table), FP8KV_CAP_BLOCK);
    if (!s || fp8kv_block_select(s, f, rule, model, 1, out) != FP8KV_OK)
        return fp8kv_fail("GPU %d: the device has no block codec for %s %s %s", device, f->name,
                          fp8kv_block_rule_names[rule], fp8kv_block_model_names[model]);
    return FP8KV_OK;
#else
    (void)f, (void)rule, (void)model, (void)device, (void)out;
    return fp8kv_fail("this fp8kv was built without a GPU target (configure with -DFP8KV_GPU=cuda "
                      "or hip)");
#endif
}
