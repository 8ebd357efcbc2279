/* block/gpu.c — the GPU block codec (kernels/hip/block.hip: the header codec in device
 * kernels) as a block subject (fp8kv/block_judge.h), where the build has a GPU target. */
#include <string.h>

#include "fp8kv/block_subject.h"
#include "fp8kv/diag.h"

#ifdef FP8KV_HAVE_GPU
#include "fp8kv/gpu.h"

/* One configuration per (format, rule, model): the subject's ctx points at static storage. */
static struct fp8kv_bcodec_cfg gpu_contexts[FP8KV_BLOCK_FORMAT_COUNT][FP8KV_BLOCK_RULE_COUNT]
                                           [FP8KV_BLOCK_MODEL_COUNT];

static struct fp8kv_bcodec_cfg with_g(void *ctx, float G)
{
    struct fp8kv_bcodec_cfg c = *(const struct fp8kv_bcodec_cfg *)ctx;
    c.global_scale = G;
    return c;
}

static int gpu_encode(void *ctx, int worker, const float *x, size_t nblocks, float G,
                      uint8_t *scales, uint8_t *elements)
{
    (void)worker;
    return fp8kv_gpu_block_encode(with_g(ctx, G), x, nblocks, scales, elements);
}

static int gpu_decode(void *ctx, int worker, const uint8_t *scales, const uint8_t *elements,
                      size_t nblocks, float G, float *y)
{
    (void)worker;
    return fp8kv_gpu_block_decode(with_g(ctx, G), scales, elements, nblocks, y);
}

static int gpu_sweep(void *ctx, uint8_t scale, float G, uint32_t anchor, uint8_t anchor_code,
                     const struct fp8kv_block_run *const runs[2], const int nruns[2],
                     struct fp8kv_block_report *r)
{
    static struct fp8kv_gpu_block_run table[2][FP8KV_GPU_BLOCK_MAX_RUNS];
    const struct fp8kv_gpu_block_run *const tables[2] = {table[0], table[1]};
    for (int sg = 0; sg < 2; sg++)
        for (int i = 0; i < nruns[sg] && i < FP8KV_GPU_BLOCK_MAX_RUNS; i++)
            table[sg][i] = (struct fp8kv_gpu_block_run){runs[sg][i].start, runs[sg][i].code};
    struct fp8kv_gpu_block_sweep_result res;
    memset(&res, 0, sizeof res);
    const int rc =
        fp8kv_gpu_block_sweep(with_g(ctx, G), scale, anchor, anchor_code, tables, nruns, &res);
    if (rc != FP8KV_OK)
        return rc;
    r->checked[FP8KV_BLOCK_CHECK_SWEEP] += res.checked;
    r->wrong[FP8KV_BLOCK_CHECK_SWEEP] += res.wrong;
    for (int i = 0; i < res.nfirst; i++)
        fp8kv_block_report_fail(
            r, FP8KV_BLOCK_CHECK_SWEEP,
            "sweep scale %02x (G %a): %s 0x%08x: %s expected %02x got %02x", scale, (double)G,
            res.first[i].is_scale ? "block of input" : "input", res.first[i].input,
            res.first[i].is_scale ? "scale" : "element", res.first[i].expected, res.first[i].got);
    fp8kv_block_report_note(r, "sweep scale %02x on the device: %.3f ms", scale, res.ms);
    return FP8KV_OK;
}
#endif

int fp8kv_block_subject_gpu(const struct fp8kv_block_format *f, enum fp8kv_block_rule rule,
                            enum fp8kv_block_model model, int device,
                            struct fp8kv_block_subject *out)
{
#ifdef FP8KV_HAVE_GPU
    struct fp8kv_gpu_device_info info;
    if (fp8kv_gpu_open(device, &info) != 0)
        return FP8KV_ERR;
    struct fp8kv_bcodec_cfg *ctx = &gpu_contexts[f->id][rule][model];
    *ctx = (struct fp8kv_bcodec_cfg){(uint8_t)f->id, (uint8_t)rule, (uint8_t)model, 1.0f};
    struct fp8kv_block_subject s = {"gpu", f,          rule,       model,    1,
                                    ctx,   gpu_encode, gpu_decode, gpu_sweep};
    *out = s;
    return FP8KV_OK;
#else
    (void)f, (void)rule, (void)model, (void)device, (void)out;
    return fp8kv_fail("this fp8kv was built without a GPU target (configure with -DFP8KV_GPU=cuda "
                      "or hip)");
#endif
}
