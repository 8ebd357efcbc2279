/* codecs.hip — the device codecs as array functions: what conformance runs the golden encoder
 * and decoder vector sets through (fp8kv_gpu_encode, fp8kv_gpu_decode). */
#include "common.h"

using namespace fp8kv_gpu;

/* q[i] = CODEC(store_quotient(cfg, x[i], s)), two elements per thread. */
template <int CODEC>
__global__ void encode_kernel(struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                              uint8_t *q)
{
    const size_t pairs = (n + 1) / 2;
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < pairs;
         p += (size_t)gridDim.x * blockDim.x) {
        const size_t i = 2 * p;
        const float x0 = store_quotient(cfg, x[i], s);
        const float x1 = i + 1 < n ? store_quotient(cfg, x[i + 1], s) : 0.0f;
        const uint32_t pair = encode_pair<CODEC>(cfg, x0, x1);
        q[i] = (uint8_t)pair;
        if (i + 1 < n)
            q[i + 1] = (uint8_t)(pair >> 8);
    }
}

extern "C" int fp8kv_gpu_encode(int codec, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                                float s, uint8_t *q)
{
    int rc = require_open("fp8kv_gpu_encode");
    if (rc != 0)
        return rc;
    if (!fp8kv_gpu_codec_available(codec))
        return FP8KV_FAIL("device codec %d is not compiled for this device", codec);
    if (n == 0)
        return FP8KV_OK;
    buffer d_x, d_q;
    if ((rc = d_x.upload(x, n * sizeof *x)) != 0 || (rc = d_q.alloc(n)) != 0)
        return rc;
    const unsigned threads = 256, blocks = blocks_for((n + 1) / 2, threads, 65535);
    switch (codec) {
#define LAUNCH(C)                                                                                  \
    case C:                                                                                        \
        encode_kernel<C><<<blocks, threads>>>(cfg, d_x.as<float>(), n, s, d_q.as<uint8_t>());      \
        break;
        FP8KV_FOR_EACH_CODEC(LAUNCH)
#undef LAUNCH
    default: return FP8KV_FAIL("unknown device codec %d", codec);
    }
    FP8KV_GPU_CHECK_LAUNCH();
    return d_q.download(q, n);
}

/* ---- decoders -------------------------------------------------------------------------------- */

extern "C" const char *const fp8kv_gpu_decoder_names[FP8KV_GPU_DECODER_COUNT] = {
    "decode-bits",  /* fp8kv_decode_bits of codec.h */
    "decode-table", /* a 256-entry table in shared memory, from fp8kv_decode_table_fill */
    "decode-fast",  /* decode_fast of device_codecs.h, the one the KV kernels use */
};

template <int DECODER>
__global__ void decode_kernel(struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                              float *y)
{
    __shared__ float table[256];
    if (DECODER == FP8KV_GPU_DECODE_TABLE) {
        for (int c = threadIdx.x; c < 256; c += blockDim.x)
            table[c] = fp8kv_decode_bits(cfg, (uint8_t)c);
        __syncthreads();
    }
    const int fnuz = cfg.format == FP8KV_CODEC_E4M3FNUZ;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float d;
        if (DECODER == FP8KV_GPU_DECODE_TABLE)
            d = fp8kv_decode_table(table, q[i]);
        else if (DECODER == FP8KV_GPU_DECODE_FAST)
            d = decode_fast(fnuz, q[i]);
        else
            d = fp8kv_decode_bits(cfg, q[i]);
        y[i] = d != d ? d : d * s; /* NaN passed through, as dequant() */
    }
}

extern "C" int fp8kv_gpu_decode(int decoder, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                                float s, float *y)
{
    int rc = require_open("fp8kv_gpu_decode");
    if (rc != 0)
        return rc;
    if (n == 0)
        return FP8KV_OK;
    buffer d_q, d_y;
    if ((rc = d_q.upload(q, n)) != 0 || (rc = d_y.alloc(n * sizeof *y)) != 0)
        return rc;
    const unsigned threads = 256, blocks = blocks_for(n, threads, 65535);
    switch (decoder) {
    case FP8KV_GPU_DECODE_BITS:
        decode_kernel<FP8KV_GPU_DECODE_BITS>
            <<<blocks, threads>>>(cfg, d_q.as<uint8_t>(), n, s, d_y.as<float>());
        break;
    case FP8KV_GPU_DECODE_TABLE:
        decode_kernel<FP8KV_GPU_DECODE_TABLE>
            <<<blocks, threads>>>(cfg, d_q.as<uint8_t>(), n, s, d_y.as<float>());
        break;
    case FP8KV_GPU_DECODE_FAST:
        decode_kernel<FP8KV_GPU_DECODE_FAST>
            <<<blocks, threads>>>(cfg, d_q.as<uint8_t>(), n, s, d_y.as<float>());
        break;
    default: return FP8KV_FAIL("unknown device decoder %d", decoder);
    }
    FP8KV_GPU_CHECK_LAUNCH();
    return d_y.download(y, n * sizeof *y);
}
