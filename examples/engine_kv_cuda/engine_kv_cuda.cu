/* engine_kv_cuda.cu — an engine's fp8 (e4m3fn, satfinite) KV-cache store as a CUDA kernel, built
 * as an fp8kv KV-kernel plugin on device memory (fp8kv/kv_plugin.h, memory
 * FP8KV_KV_MEMORY_DEVICE): fp8kv hands it device pointers and judges what it wrote.
 *
 *   nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -I<fp8kv>/kernels/include \
 *        engine_kv_cuda.cu -o libengine_kv_cuda.so
 *   fp8kv check-kv --plugin libengine_kv_cuda.so      (a GPU build of fp8kv)
 *
 * One thread per element: the quotient x / scale in f32 (IEEE division: no fast math), then
 * cuda_fp8.h's saturating conversion; NHD, HND and split-x layouts; f32, f16 and bf16 inputs.
 * Only the store: the gather and attention entry points are NULL (not judged).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <fp8kv/kv_plugin.h>

__device__ float load_input(const void *p, int dtype, size_t i)
{
    if (dtype == FP8KV_KV_ABI_F32)
        return static_cast<const float *>(p)[i];
    if (dtype == FP8KV_KV_ABI_F16)
        return __half2float(static_cast<const __half *>(p)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
}

__device__ size_t offset(const fp8kv_kv_layout_v1 c, bool is_key, int64_t slot, int h, int d)
{
    const size_t bs = c.block_size, H = c.num_heads, D = c.head_size;
    const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
    if (c.layout == FP8KV_KV_ABI_NHD)
        return ((block * bs + pos) * H + h) * D + d;
    if (c.layout == FP8KV_KV_ABI_HND)
        return ((block * H + h) * bs + pos) * D + d;
    if (is_key) /* split-x: [block][h][d / 16][pos][d % 16] */
        return (((block * H + h) * (D / 16) + d / 16) * bs + pos) * 16 + d % 16;
    return ((block * H + h) * D + d) * bs + pos; /* [block][h][d][pos] */
}

__device__ uint8_t to_e4m3fn(float v)
{
    return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

__global__ void store_kernel(const fp8kv_kv_layout_v1 c, fp8kv_kv_store_args_v1 a)
{
    const size_t row = (size_t)c.num_heads * c.head_size;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)a.num_tokens * row)
        return;
    const int t = (int)(i / row), h = (int)(i % row / c.head_size), d = (int)(i % c.head_size);
    const int64_t slot = a.slot_mapping[t];
    if (slot < 0)
        return; /* a padding token */
    a.key_cache[offset(c, true, slot, h, d)] =
        to_e4m3fn(load_input(a.key, a.in_dtype, i) / a.k_scale);
    a.value_cache[offset(c, false, slot, h, d)] =
        to_e4m3fn(load_input(a.value, a.in_dtype, i) / a.v_scale);
}

static int store(void *ctx, const fp8kv_kv_store_args_v1 *a)
{
    (void)ctx;
    const size_t n = (size_t)a->num_tokens * a->cache->num_heads * a->cache->head_size;
    if (n == 0)
        return 0;
    const unsigned threads = 256, blocks = (unsigned)((n + threads - 1) / threads);
    store_kernel<<<blocks, threads>>>(*a->cache, *a);
    return cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess ? 0 : -1;
}

/* (the descriptor type shares its name with the exported function: C++ needs "struct") */
static const fp8kv_kv_kernels_v1_t kernels = {
    FP8KV_KV_ABI_VERSION,   "engine_kv_cuda", "e4m3fn", "satfinite", "clamp",
    FP8KV_KV_MEMORY_DEVICE, nullptr,          store,    nullptr,     nullptr,
    FP8KV_KV_SCALES(FP8KV_KV_SCALE_TENSOR), nullptr};

extern "C" __attribute__((visibility("default"))) const fp8kv_kv_kernels_v1_t *
fp8kv_kv_kernels_v1(void)
{
    return &kernels;
}
