/* block/subject.c — the block judge's report and the CPU block codec as a subject
 * (fp8kv/block_subject.h). */
#include "fp8kv/block_subject.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/block_codec.h"
#include "fp8kv/codec.h"
#include "fp8kv/diag.h"

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

/* ---- the CPU subject: the header codec ---- */

struct cpu_ctx {
    struct fp8kv_bcodec_cfg cfg;
};

static struct fp8kv_bcodec_cfg cfg_of(const struct fp8kv_block_subject *s, float G)
{
    struct fp8kv_bcodec_cfg c = {(uint8_t)s->format->id, (uint8_t)s->rule, (uint8_t)s->model, G};
    return c;
}

static int cpu_encode(void *ctx, int worker, const float *x, size_t nblocks, float G,
                      uint8_t *scales, uint8_t *elements)
{
    (void)worker;
    struct fp8kv_bcodec_cfg c = ((const struct cpu_ctx *)ctx)->cfg;
    c.global_scale = G;
    const size_t bs = (size_t)fp8kv_bcodec_block_size(c.format);
    for (size_t b = 0; b < nblocks; b++)
        fp8kv_bcodec_encode_block(c, x + b * bs, scales + b, elements + b * bs);
    return FP8KV_OK;
}

static int cpu_decode(void *ctx, int worker, const uint8_t *scales, const uint8_t *elements,
                      size_t nblocks, float G, float *y)
{
    (void)worker;
    struct fp8kv_bcodec_cfg c = ((const struct cpu_ctx *)ctx)->cfg;
    c.global_scale = G;
    const size_t bs = (size_t)fp8kv_bcodec_block_size(c.format);
    for (size_t b = 0; b < nblocks; b++)
        for (size_t i = 0; i < bs; i++)
            y[b * bs + i] =
                fp8kv_f32_from_bits(fp8kv_bcodec_decode_one(c, scales[b], elements[b * bs + i]));
    return FP8KV_OK;
}

/* One context per (format, rule, model): the subject's ctx points at static storage. */
static struct cpu_ctx cpu_contexts[FP8KV_BLOCK_FORMAT_COUNT][FP8KV_BLOCK_RULE_COUNT]
                                  [FP8KV_BLOCK_MODEL_COUNT];

struct fp8kv_block_subject fp8kv_block_subject_cpu(const struct fp8kv_block_format *f,
                                                   enum fp8kv_block_rule rule,
                                                   enum fp8kv_block_model model, int workers)
{
    struct cpu_ctx *ctx = &cpu_contexts[f->id][rule][model];
    struct fp8kv_block_subject s = {"cpu", f,          rule,       model, workers < 1 ? 1 : workers,
                                    ctx,   cpu_encode, cpu_decode, NULL};
    ctx->cfg = cfg_of(&s, 1.0f);
    return s;
}
