/* store.hip — reshape_and_cache into the paged fp8 cache (the store of fp8kv/kv_cache.h).
 *
 * Each thread takes VEC consecutive dimensions of one head of one token at a time: VEC inputs
 * of key and of value loaded with 16-byte accesses, encoded in pairs by the chosen codec after
 * the scale model (store_quotient: x / s, x * RN32(1 / s) or RN16(x / s); an input NaN kept),
 * and written with one VEC-byte store where the layout keeps them contiguous (key and value in
 * NHD, key in split-x) or VEC byte stores (value in split-x: [block][head][dim][pos]).
 * A slot of -1 is padding: skipped, its cache bytes stay as they were.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

using namespace fp8kv_gpu;

namespace {

constexpr unsigned THREADS = 128;

/* The VEC inputs src[i .. i + VEC) of dtype IN, widened exactly to f32 (16-byte loads when a
 * run is at least that long). */
template <int IN, int VEC>
__device__ __forceinline__ void load_run(const void *src, size_t i, float *x)
{
    constexpr int ESIZE = IN == FP8KV_KV_F32 ? 4 : 2;
    if constexpr (VEC * ESIZE >= 16) {
        uint8_t raw[VEC * ESIZE];
        const uint8_t *p = static_cast<const uint8_t *>(src) + i * ESIZE;
#pragma unroll
        for (int b = 0; b < VEC * ESIZE; b += 16)
            load_bytes<16>(p + b, raw + b);
#pragma unroll
        for (int k = 0; k < VEC; k++)
            x[k] = widen_raw<IN>(raw + k * ESIZE);
    } else {
#pragma unroll
        for (int k = 0; k < VEC; k++)
            x[k] = widen<IN>(src, i + (size_t)k);
    }
}

/* The codes of x[0 .. VEC) stored at scale s: the scale model, then the codec, in pairs. */
template <int VEC, typename CODEC>
__device__ __forceinline__ void encode_run(CODEC encode, struct fp8kv_codec_cfg cfg,
                                           const float *x, float s, uint8_t *q)
{
#pragma unroll
    for (int k = 0; k < VEC; k += 2) {
        const float x1 = k + 1 < VEC ? store_quotient(cfg, x[k + 1], s) : 0.0f;
        const uint32_t pair = encode(cfg, store_quotient(cfg, x[k], s), x1);
        q[k] = (uint8_t)pair;
        if (k + 1 < VEC)
            q[k + 1] = (uint8_t)(pair >> 8);
    }
}

/* The codecs other than bits and the sm_89+ hardware conversion go through one out-of-line
 * dispatcher (a call per pair): one inlined copy of every codec per kernel would only cost
 * build time. bits (the KV paths' codec) and ptx-cvt-satfinite (the fast one) are inlined. */
__device__ __noinline__ uint32_t encode_pair_any(int codec, struct fp8kv_codec_cfg cfg, float x0,
                                                 float x1)
{
    switch (codec) {
#define CASE(C)                                                                                    \
    case C: return encode_pair<C>(cfg, x0, x1);
        FP8KV_FOR_EACH_CODEC(CASE)
#undef CASE
    default: return FP8KV_POISON_PAIR;
    }
}

struct any_codec {
    int codec;
    __device__ __forceinline__ uint32_t operator()(struct fp8kv_codec_cfg cfg, float x0,
                                                   float x1) const
    {
        return encode_pair_any(codec, cfg, x0, x1);
    }
};

template <int CODEC> struct inlined_codec {
    int codec;
    __device__ __forceinline__ uint32_t operator()(struct fp8kv_codec_cfg cfg, float x0,
                                                   float x1) const
    {
        return encode_pair<CODEC>(cfg, x0, x1);
    }
};

/* One kernel per input dtype, vector width and codec kind. A thread takes item g: VEC
 * dimensions of one head of one token, key and value. The inputs are loaded before the slot
 * is looked at, so that the three loads are in flight together. */
template <int IN, int VEC, typename CODEC>
__global__ void __launch_bounds__(THREADS)
    store_kernel(int codec, struct fp8kv_codec_cfg cfg, struct fp8kv_cache_shape shape,
                 const void *key, const void *value, int num_tokens, const int64_t *slot_mapping,
                 float k_scale, float v_scale, uint8_t *key_cache, uint8_t *value_cache)
{
    const CODEC encode{codec};
    const int hs = shape.head_size, items = shape.num_heads * hs / VEC;
    const uint32_t total = (uint32_t)num_tokens * (uint32_t)items; /* < 2^31: the host checks */
    for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < total;
         g += gridDim.x * blockDim.x) {
        const uint32_t token = g / (uint32_t)items, item = g % (uint32_t)items;
        const int h = (int)(item * VEC / hs), d = (int)(item * VEC % hs);
        const size_t i = ((size_t)token * shape.num_heads + h) * hs + d;
        float xk[VEC], xv[VEC];
        const int64_t slot = slot_mapping[token];
        load_run<IN, VEC>(key, i, xk);
        load_run<IN, VEC>(value, i, xv);
        if (slot < 0)
            continue; /* padding: the cache is left untouched */
        uint8_t q[VEC];
        encode_run<VEC>(encode, cfg, xk, k_scale, q);
        store_bytes<VEC>(key_cache + key_offset(shape, slot, h, d), q);
        encode_run<VEC>(encode, cfg, xv, v_scale, q);
        if (shape.layout == FP8KV_LAYOUT_SPLIT_X) {
#pragma unroll
            for (int k = 0; k < VEC; k++)
                value_cache[value_offset(shape, slot, h, d + k)] = q[k];
        } else {
            store_bytes<VEC>(value_cache + value_offset(shape, slot, h, d), q);
        }
    }
}

template <int IN, typename CODEC>
int launch_in(int vec, int codec, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
              const void *key, const void *value, int num_tokens, const int64_t *slots, float ks,
              float vs, uint8_t *kc, uint8_t *vc)
{
    const uint64_t items = (uint64_t)num_tokens * shape.num_heads * shape.head_size / vec;
    if (items >= (1ull << 31))
        return FP8KV_FAIL("store: %llu work items in one launch (split the tokens)",
                          (unsigned long long)items);
    const unsigned blocks = blocks_for(items, THREADS, 1u << 20);
    if (vec == 16)
        store_kernel<IN, 16, CODEC><<<blocks, THREADS>>>(codec, cfg, shape, key, value, num_tokens,
                                                         slots, ks, vs, kc, vc);
    else if (vec == 8)
        store_kernel<IN, 8, CODEC><<<blocks, THREADS>>>(codec, cfg, shape, key, value, num_tokens,
                                                        slots, ks, vs, kc, vc);
    else
        store_kernel<IN, 1, CODEC><<<blocks, THREADS>>>(codec, cfg, shape, key, value, num_tokens,
                                                        slots, ks, vs, kc, vc);
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_GPU_OK;
}

template <int IN>
int launch_codec(int vec, int codec, struct fp8kv_codec_cfg cfg,
                 const struct fp8kv_cache_shape &shape, const void *key, const void *value,
                 int num_tokens, const int64_t *slots, float ks, float vs, uint8_t *kc, uint8_t *vc)
{
    if (codec == FP8KV_GPU_CODEC_BITS)
        return launch_in<IN, inlined_codec<FP8KV_GPU_CODEC_BITS>>(
            vec, codec, cfg, shape, key, value, num_tokens, slots, ks, vs, kc, vc);
    if (codec == FP8KV_GPU_CODEC_PTX_CVT_SATFINITE)
        return launch_in<IN, inlined_codec<FP8KV_GPU_CODEC_PTX_CVT_SATFINITE>>(
            vec, codec, cfg, shape, key, value, num_tokens, slots, ks, vs, kc, vc);
    return launch_in<IN, any_codec>(vec, codec, cfg, shape, key, value, num_tokens, slots, ks, vs,
                                    kc, vc);
}

} // namespace

namespace fp8kv_gpu {

int launch_store(int codec, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                 int in, const void *d_key, const void *d_value, int num_tokens,
                 const int64_t *d_slots, float k_scale, float v_scale, uint8_t *d_key_cache,
                 uint8_t *d_value_cache)
{
    if (num_tokens <= 0)
        return FP8KV_GPU_OK;
    const int vec = vec_of(shape.head_size, 16);
    switch (in) {
    case FP8KV_KV_F32:
        return launch_codec<FP8KV_KV_F32>(vec, codec, cfg, shape, d_key, d_value, num_tokens, d_slots,
                                       k_scale, v_scale, d_key_cache, d_value_cache);
    case FP8KV_KV_F16:
        return launch_codec<FP8KV_KV_F16>(vec, codec, cfg, shape, d_key, d_value, num_tokens, d_slots,
                                       k_scale, v_scale, d_key_cache, d_value_cache);
    case FP8KV_KV_BF16:
        return launch_codec<FP8KV_KV_BF16>(vec, codec, cfg, shape, d_key, d_value, num_tokens, d_slots,
                                        k_scale, v_scale, d_key_cache, d_value_cache);
    default: return FP8KV_FAIL("store: unknown input dtype %d", in);
    }
}

} // namespace fp8kv_gpu

extern "C" int fp8kv_gpu_reshape_and_cache(int codec, struct fp8kv_codec_cfg cfg,
                                           const struct fp8kv_cache_shape *shape,
                                           enum fp8kv_kv_dtype in, const void *key,
                                           const void *value, int num_tokens,
                                           const int64_t *slot_mapping, float k_scale,
                                           float v_scale, uint8_t *key_cache, uint8_t *value_cache)
{
    int rc = require_open("fp8kv_gpu_reshape_and_cache");
    if (rc != 0 || (rc = check_shape(shape, "store")) != 0)
        return rc;
    if (!fp8kv_gpu_codec_available(codec))
        return FP8KV_FAIL("store: device codec %d is not compiled for this device", codec);
    if (num_tokens < 0)
        return FP8KV_FAIL("store: %d tokens", num_tokens);
    const size_t cache = fp8kv_cache_bytes(shape);
    const size_t input = (size_t)num_tokens * shape->num_heads * shape->head_size * dtype_size(in);
    const int64_t slots = (int64_t)shape->num_blocks * shape->block_size;
    for (int t = 0; t < num_tokens; t++)
        if (slot_mapping[t] < -1 || slot_mapping[t] >= slots)
            return FP8KV_FAIL("store: slot_mapping[%d] = %lld is outside the cache", t,
                              (long long)slot_mapping[t]);
    /* the caches go in first: the bytes of padding and unused slots must come back unchanged */
    buffer d_key, d_value, d_slots, d_kc, d_vc;
    if ((rc = d_key.upload(key, input)) != 0 || (rc = d_value.upload(value, input)) != 0 ||
        (rc = d_slots.upload(slot_mapping, (size_t)num_tokens * sizeof(int64_t))) != 0 ||
        (rc = d_kc.upload(key_cache, cache)) != 0 || (rc = d_vc.upload(value_cache, cache)) != 0)
        return rc;
    if ((rc = launch_store(codec, cfg, *shape, in, d_key.ptr, d_value.ptr, num_tokens,
                           d_slots.as<int64_t>(), k_scale, v_scale, d_kc.as<uint8_t>(),
                           d_vc.as<uint8_t>())) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    /* both copies out, or neither: a failure leaves the host caches as they were */
    uint8_t *both = static_cast<uint8_t *>(malloc(2 * cache + 1));
    if (!both)
        return FP8KV_FAIL("out of memory");
    if ((rc = d_kc.download(both, cache)) == 0 && (rc = d_vc.download(both + cache, cache)) == 0) {
        memcpy(key_cache, both, cache);
        memcpy(value_cache, both + cache, cache);
    }
    free(both);
    return rc;
}
