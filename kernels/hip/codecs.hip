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

/* The value of code under cfg.format by decoder DECODER (table: the shared 256-entry table). */
template <int DECODER>
__device__ __forceinline__ float decode_one(struct fp8kv_codec_cfg cfg, const float *table,
                                            uint32_t code)
{
    const int e5 = fp8kv_format_e5(cfg.format);
    switch (DECODER) {
    case FP8KV_GPU_DECODE_TABLE: return fp8kv_decode_table(table, (uint8_t)code);
    case FP8KV_GPU_DECODE_FAST: return decode_fast_of(cfg.format, code);
    case FP8KV_GPU_DECODE_CUDA_FP8: return e5 ? cuda_fp8_decode<1>(code) : cuda_fp8_decode<0>(code);
    case FP8KV_GPU_DECODE_AMD_FNUZ:
    case FP8KV_GPU_DECODE_AMD_OCP: return e5 ? amd_decode<1>(code) : amd_decode<0>(code);
    default: return fp8kv_decode_bits(cfg, (uint8_t)code);
    }
}

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
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = scale_decoded(decode_one<DECODER>(cfg, table, q[i]), s);
}

/* FP8KV_FOR_EACH_DECODER(M): M(id) for every decoder id, for switch dispatch. */
#define FP8KV_FOR_EACH_DECODER(M)                                                                  \
    M(FP8KV_GPU_DECODE_BITS)                                                                       \
    M(FP8KV_GPU_DECODE_TABLE)                                                                      \
    M(FP8KV_GPU_DECODE_FAST)                                                                       \
    M(FP8KV_GPU_DECODE_CUDA_FP8)                                                                   \
    M(FP8KV_GPU_DECODE_AMD_FNUZ)                                                                   \
    M(FP8KV_GPU_DECODE_AMD_OCP)

extern "C" int fp8kv_gpu_decode(int decoder, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                                float s, float *y)
{
    int rc = require_open("fp8kv_gpu_decode");
    if (rc != 0)
        return rc;
    if (!fp8kv_gpu_decoder_available(decoder))
        return FP8KV_FAIL("device decoder %d is not compiled for this device", decoder);
    if (n == 0)
        return FP8KV_OK;
    buffer d_q, d_y;
    if ((rc = d_q.upload(q, n)) != 0 || (rc = d_y.alloc(n * sizeof *y)) != 0)
        return rc;
    const unsigned threads = 256, blocks = blocks_for(n, threads, 65535);
    switch (decoder) {
#define LAUNCH(D)                                                                                  \
    case D:                                                                                        \
        decode_kernel<D><<<blocks, threads>>>(cfg, d_q.as<uint8_t>(), n, s, d_y.as<float>());      \
        break;
        FP8KV_FOR_EACH_DECODER(LAUNCH)
#undef LAUNCH
    default: return FP8KV_FAIL("unknown device decoder %d", decoder);
    }
    FP8KV_GPU_CHECK_LAUNCH();
    return d_y.download(y, n * sizeof *y);
}
