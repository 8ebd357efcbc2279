/* subjects.c — the open device as a table of subjects (fp8kv/subject.h): the device codecs
 * compiled for it, the device decoders, the KV kernels and the block codec, each entry point a
 * call of fp8kv/gpu.h that returns a status. Plain C, so that the table is a host object only
 * (clang's HIP mode would also try to emit a namespace-scope table for the device). */
#include "fp8kv/gpu.h"

#include <string.h>

/* A device failure is the subject's: a kernel or runtime call that failed. */
static int device_status(int rc)
{
    return rc == 0 ? FP8KV_OK : rc == FP8KV_UNAVAILABLE ? rc : FP8KV_ERR_SUBJECT;
}

/* ---- codecs and decoders ------------------------------------------------------------------ */

static int codec_ids[FP8KV_GPU_CODEC_COUNT];
static int decoder_ids[FP8KV_GPU_DECODER_COUNT];

static int encode_gpu(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                      uint8_t *q)
{
    return device_status(fp8kv_gpu_encode(*(const int *)ctx, cfg, x, n, s, q));
}

static int sweep_gpu(void *ctx, struct fp8kv_codec_cfg cfg, enum fp8kv_domain domain,
                     const struct fp8kv_sweep_run *runs, size_t nruns, uint64_t lo, uint64_t hi,
                     struct fp8kv_sweep_result *out)
{
    return device_status(fp8kv_gpu_sweep(*(const int *)ctx, cfg, domain, runs, nruns, lo, hi, out));
}

static int decode_gpu(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                      float *y)
{
    return device_status(fp8kv_gpu_decode(*(const int *)ctx, cfg, q, n, s, y));
}

/* ---- the KV kernels -------------------------------------------------------------------------- */

static const struct fp8kv_kv_kernels_v1 gpu_kv = {FP8KV_KV_ABI_VERSION,
                                                  "gpu-kernels",
                                                  NULL,
                                                  NULL,
                                                  NULL,
                                                  FP8KV_KV_MEMORY_DEVICE,
                                                  NULL,
                                                  fp8kv_gpu_kv_store,
                                                  fp8kv_gpu_kv_gather,
                                                  fp8kv_gpu_kv_attention,
                                                  FP8KV_KV_SCALES(FP8KV_KV_SCALE_TENSOR),
                                                  "f32",
                                                  FP8KV_KV_ATTENTION_ALL,
                                                  FP8KV_KV_PACKINGS(FP8KV_KV_SEPARATE),
                                                  FP8KV_KV_LAYOUTS_ALL};

static int attention_plan_gpu(void *ctx, struct fp8kv_codec_cfg cfg,
                              const struct fp8kv_cache_shape *shape, int num_q_heads, int num_seqs,
                              int max_seq_len, char *buf, size_t size)
{
    (void)ctx;
    return fp8kv_gpu_attention_plan(1, cfg, shape, num_q_heads, num_seqs, max_seq_len, 0, buf,
                                    size);
}

/* ---- the block codec (kernels/hip/block.hip) ----------------------------------------------------
 */

static int encode_blocks_gpu(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const float *x,
                             size_t nblocks, uint8_t *scales, uint8_t *elements)
{
    (void)ctx, (void)worker;
    return device_status(fp8kv_gpu_block_encode(cfg, x, nblocks, scales, elements));
}

static int decode_blocks_gpu(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg,
                             const uint8_t *scales, const uint8_t *elements, size_t nblocks,
                             float *y)
{
    (void)ctx, (void)worker;
    return device_status(fp8kv_gpu_block_decode(cfg, scales, elements, nblocks, y));
}

static int sweep_blocks_gpu(void *ctx, struct fp8kv_bcodec_cfg cfg, uint8_t scale, uint32_t anchor,
                            uint8_t anchor_code, const struct fp8kv_block_run *const runs[2],
                            const int nruns[2], struct fp8kv_block_sweep_result *out)
{
    (void)ctx;
    return device_status(fp8kv_gpu_block_sweep(cfg, scale, anchor, anchor_code, runs, nruns, out));
}

/* every combination, one caller at a time (one device) */
static const struct fp8kv_block_kernels gpu_block = {
    .claim = {FP8KV_CLAIM_ANY, FP8KV_CLAIM_ANY, FP8KV_CLAIM_ANY},
    .workers = 1,
    .encode = encode_blocks_gpu,
    .decode = decode_blocks_gpu,
    .sweep = sweep_blocks_gpu,
};

/* ---- the table ------------------------------------------------------------------------------- */

static struct fp8kv_subject table[FP8KV_GPU_CODEC_COUNT + FP8KV_GPU_DECODER_COUNT + 2];

int fp8kv_gpu_subjects(const struct fp8kv_subject **out)
{
    int n = 0;
    for (int c = 0; c < FP8KV_GPU_CODEC_COUNT; c++) {
        if (!fp8kv_gpu_codec_available(c))
            continue;
        const struct fp8kv_gpu_codec *codec = &fp8kv_gpu_codecs[c];
        codec_ids[c] = c;
        table[n++] = (struct fp8kv_subject){
            .name = codec->name,
            .description = codec->description,
            .caps = FP8KV_CAP_ENCODE | FP8KV_CAP_SWEEP,
            .memory = FP8KV_MEMORY_DEVICE,
            .flags = codec->vendor ? FP8KV_SUBJECT_VENDOR : 0u,
            .claim = codec->claim,
            .ctx = &codec_ids[c],
            .encode = encode_gpu,
            .sweep = sweep_gpu,
        };
    }
    for (int d = 0; d < FP8KV_GPU_DECODER_COUNT && n > 0; d++) {
        if (!fp8kv_gpu_decoder_available(d))
            continue;
        const struct fp8kv_gpu_decoder *decoder = &fp8kv_gpu_decoders[d];
        decoder_ids[d] = d;
        table[n++] = (struct fp8kv_subject){
            .name = decoder->name,
            .description = decoder->description,
            .caps = FP8KV_CAP_DECODE,
            .memory = FP8KV_MEMORY_DEVICE,
            .flags = decoder->vendor ? FP8KV_SUBJECT_VENDOR : 0u,
            .claim = decoder->claim,
            .ctx = &decoder_ids[d],
            .decode = decode_gpu,
        };
    }
    if (n > 0)
        table[n++] = (struct fp8kv_subject){
            .name = "gpu-kernels",
            .description = "the device store (bits codec), gather + dequant and paged attention",
            .caps = FP8KV_CAP_STORE | FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION,
            .memory = FP8KV_MEMORY_DEVICE,
            .flags = FP8KV_SUBJECT_LONG_CONTEXT,
            /* every format: the kernels are templated on it (the tensor-core attention, e4m3fn
             * only, is planned for e4m3fn only) */
            .claim = FP8KV_CLAIM_ALL,
            .kv = &gpu_kv,
            .attention_plan = attention_plan_gpu,
        };
    if (n > 0)
        table[n++] = (struct fp8kv_subject){
            .name = "gpu-block-codec",
            .description = "the block codec of fp8kv/block_codec.h in device kernels (MX, NVFP4)",
            .caps = FP8KV_CAP_BLOCK,
            .memory = FP8KV_MEMORY_DEVICE,
            .claim = FP8KV_CLAIM_ALL,
            .block = &gpu_block,
        };
    *out = table;
    return n;
}
