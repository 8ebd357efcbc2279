/* store.hip — reshape_and_cache into the paged fp8 cache (the store of fp8kv/kv_cache.h).
 *
 * Each thread takes VEC consecutive dimensions of one head of one token at a time (VEC: the
 * elements of 16 input bytes): VEC inputs of key and of value, one 16-byte load each (a warp's
 * load is one contiguous 512-byte run), encoded in pairs by the chosen codec after
 * the scale model (store_quotient: x / s, x * RN32(1 / s) or RN16(x / s); an input NaN kept),
 * and written with one VEC-byte store where the layout keeps them contiguous (key and value in
 * NHD, key in split-x) or VEC byte stores (value in split-x: [block][head][dim][pos]).
 * A slot of -1 is padding: skipped, its cache bytes stay as they were.
 * The scale model is a template parameter (no per-value dispatch), and the bits and hardware
 * codecs have a checked shortcut for runs whose quotients all lie in the normal range (see
 * "the fast path" below): the bytes are those of the general path in every case.
 */
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

using namespace fp8kv_gpu;

namespace
{

/* Threads per block, and the blocks of the bf16 store a multiprocessor must hold: as many as
 * its threads allow (the registers capped to fit: 16 blocks, 32 registers; 12 blocks, 40): more
 * warps on the memory pipe keep more bytes in flight (docs/performance.md, §Store: blocks
 * resident). The other kernels (f16 and f32 inputs, the out-of-line codecs, the scale models
 * without the shortcut) would spill at 32 or 40 registers: they take what the compiler gives
 * them. */
constexpr unsigned THREADS = 128;
template <int IN, typename CODEC, int MODEL> constexpr int min_blocks()
{
    return CODEC::fast && IN == FP8KV_KV_BF16 &&
                   (MODEL == FP8KV_CODEC_F32_DIV || MODEL == FP8KV_CODEC_F32_MUL_RECIP)
               ? nv_min_blocks(NV_SM_THREADS / (int)THREADS)
               : 1;
}
/* The walk: many waves of short blocks, each PASSES passes of its THREADS threads over its own
 * THREADS x PASSES consecutive items, so that the multiprocessors that free up first take the
 * next blocks, where one wave of resident blocks walking the whole input in steps of the grid left
 * some idle at its end (why is not known: see the gather's PASSES in read.hip). 3 passes were the
 * fastest for the bits codec, within 1% of the best for ptx-cvt-satfinite (docs/performance.md,
 * §Store: the walk). */
constexpr unsigned PASSES = 3;

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
        if constexpr (IN == FP8KV_KV_BF16) { /* two values a word: one operation each */
#pragma unroll
            for (int k = 0; k < VEC; k += 2) {
                uint32_t w;
                memcpy(&w, raw + 2 * k, 4);
                x[k] = __uint_as_float(w << 16);
                x[k + 1] = __uint_as_float(w & 0xFFFF0000u);
            }
        } else {
#pragma unroll
            for (int k = 0; k < VEC; k++)
                x[k] = widen_raw<IN>(raw + k * ESIZE);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; k++)
            x[k] = widen<IN>(src, i + (size_t)k);
    }
}

/* The codes of x[0 .. VEC) stored at scale s: the scale model, then the codec, in pairs. */
template <int VEC, typename CODEC>
__device__ __forceinline__ void encode_run(CODEC encode, struct fp8kv_codec_cfg cfg, const float *x,
                                           float s, uint8_t *q)
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
    static constexpr bool fast = false;
    static constexpr int id = -1;
    int codec;
    __device__ __forceinline__ uint32_t operator()(struct fp8kv_codec_cfg cfg, float x0,
                                                   float x1) const
    {
        return encode_pair_any(codec, cfg, x0, x1);
    }
};

template <int CODEC> struct inlined_codec {
    static constexpr bool fast = true;
    static constexpr int id = CODEC;
    int codec;
    __device__ __forceinline__ uint32_t operator()(struct fp8kv_codec_cfg cfg, float x0,
                                                   float x1) const
    {
        return encode_pair<CODEC>(cfg, x0, x1);
    }
};

/* ---- the fast path -----------------------------------------------------------------------------
 *
 * Most stored values land in the normal range of the format, where a code is the rounding of
 * the f32 quotient at bit 20. There the store takes a shortcut, and checks per run of VEC
 * values that the shortcut is exact; a run that fails any check is stored by the general path
 * above (store_quotient, then the codec), so the bytes never depend on the path.
 *
 * The quotient. Under f32_mul_recip it is RN32(x * r) with r = RN32(1 / s): the model itself,
 * with r computed once on the host. Under f32_div the per-value division is replaced by the
 * same product y = RN32(x * r), and the check below widened to what that costs. With |s| in
 * [2^-60, 2^60] (the host checks) r is a normal f32 and so, in the window below, is y, so each
 * rounding has a relative error of at most u = 2^-24: y = (x / s)(1 + d1)(1 + d2), and
 * |y - x/s| <= (2u + u^2) |x/s| <= (2 + 2^-22) ulp(y) (|x/s| < 2^(E+1)(1 + 2^-22) for y in
 * [2^E, 2^(E+1)), whose ulp is 2^(E+1) u). RN32(x / s) lies within half an ulp of x / s, so
 * within 2.5 + 2^-22 ulps of y. Rounding to e4m3 in the normal range is decided at bit 20
 * alone: a code changes only at a midpoint (bits 19..0 = 0x80000, an f32 value inside a
 * binade). So when y is at least 3 ulps from every midpoint (bits 19..0 none of 0x7FFFE ..
 * 0x80002), RN32(x / s) lies strictly on y's side of the nearest one and is no midpoint
 * itself: its code is the code of y for every round-to-nearest-even codec, and round-half-up
 * (no ties are left) computes it. Near the edges of the window the codes agree too: a value
 * within 3 ulps below min normal rounds up to it (the subnormal step is 2^20 ulps there), and
 * one within 3 ulps above max finite (448 in e4m3fn) rounds down to it.
 *
 * The window: min normal <= |y| <= max finite of the format (no subnormal rounding, no
 * overflow, no Inf or NaN). There the bits codec is its normal branch (codec.h,
 * fp8kv_encode_bits: normal_code, then the sign), and the hardware conversion is itself. */
struct fast_store {
    int on_k, on_v; /* the fast path may be taken for key / value (scale in range) */
    float r_k, r_v; /* RN32(1 / k_scale), RN32(1 / v_scale), from the host */
    /* the window on the bits m of y, sign dropped by the doubling: lo <= |y| <= hi exactly when
     * 2 m - lo2 <= span2 (unsigned, mod 2^32), lo2 = 2 bits(lo), span2 = 2 (bits(hi) - bits(lo)) */
    uint32_t lo2, span2;
    uint32_t k16; /* bits codec: (half - (rebias << 20)) << 4, see shortcut<BITS> */
    /* 2, 16 and 4096: the multipliers of the shortcut's integer steps, from the host so that
     * they stay multiplies. A multiply-add runs on the FMA pipe; the shift-and-add a compiler
     * makes of a constant power of two runs on the integer pipe, which the shortcut's compares
     * and byte moves already keep busy (the store is then bound by that pipe, not by memory). */
    uint32_t times2, times16, times4096;
};

/* The shortcut codes of four quotients in the window, one byte each (y0 in the low byte), per
 * codec; `exists` false: none. */
template <int CODEC, int MODEL> struct shortcut {
    static constexpr bool exists = false;
    static __device__ __forceinline__ uint32_t quad(const fast_store &, const float *)
    {
        return 0;
    }
};
template <int MODEL> struct shortcut<FP8KV_GPU_CODEC_BITS, MODEL> {
    static constexpr bool exists = true;
    /* The code of y in bits 31..24: normal_code = ((mag + half + lsb) >> 20) - rebias, with
     * half = 0x7FFFF, computed as ((bits + lsb) << 4) + ((half - (rebias << 20)) << 4) (k16,
     * from the host) with the sign bit put back: the shift drops it and the four exponent bits
     * above the code, and no carry reaches bit 31 in the window. Under f32_div the window
     * excludes the ties, so round-half-up is RNE: half = 0x80000 and no lsb. */
    static __device__ __forceinline__ uint32_t top(const fast_store &f, float y)
    {
        const uint32_t b = __float_as_uint(y);
        const uint32_t lsb16 = MODEL == FP8KV_CODEC_F32_DIV ? 0u : (b >> 16) & 16u; /* lsb << 4 */
        return (b * f.times16 + f.k16 + lsb16) | (b & 0x80000000u);
    }
    static __device__ __forceinline__ uint32_t quad(const fast_store &f, const float *y)
    {
        const uint32_t lo = __byte_perm(top(f, y[0]), top(f, y[1]), 0x73u);
        const uint32_t hi = __byte_perm(top(f, y[2]), top(f, y[3]), 0x73u);
        return __byte_perm(lo, hi, 0x5410u);
    }
};
template <int MODEL> struct shortcut<FP8KV_GPU_CODEC_PTX_CVT_SATFINITE, MODEL> {
    static constexpr bool exists = true;
    static __device__ __forceinline__ uint32_t quad(const fast_store &, const float *y)
    {
        const struct fp8kv_codec_cfg unused = {};
        return encode_pair<FP8KV_GPU_CODEC_PTX_CVT_SATFINITE>(unused, y[0], y[1]) |
               encode_pair<FP8KV_GPU_CODEC_PTX_CVT_SATFINITE>(unused, y[2], y[3]) << 16;
    }
};

/* The codes of x[0 .. VEC) by the shortcut (VEC a multiple of 4); false when the run must take
 * the general path. Each check is one comparison: the window on |y|, the midpoints on the
 * 20 bits below the code, moved to the top by the multiply by 4096. */
template <int VEC, int CODEC, int MODEL>
__device__ __forceinline__ bool encode_run_fast(const fast_store &f, const float *x, float r,
                                                uint8_t *q)
{
    float y[VEC];
    bool ok = true;
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        y[k] = x[k] * r; /* both models (see above) */
        const uint32_t m = __float_as_uint(y[k]);
        ok &= m * f.times2 - f.lo2 <= f.span2; /* false for Inf and NaN */
        if (MODEL == FP8KV_CODEC_F32_DIV)      /* bits 19..0 none of 0x7FFFE .. 0x80002 */
            ok &= m * f.times4096 - (0x7FFFEu << 12) >= 5u << 12;
    }
#pragma unroll
    for (int k = 0; k < VEC; k += 4) {
        const uint32_t w = shortcut<CODEC, MODEL>::quad(f, y + k);
        memcpy(q + k, &w, 4);
    }
    return ok;
}

/* One kernel per input dtype, vector width, codec kind and scale model. An item is VEC
 * dimensions of one head of one token, key and value; block b takes the THREADS x PASSES items
 * from b x THREADS x PASSES on, thread t of it the items t, t + THREADS, ... of them, (token,
 * item) advancing with a carry (no division per item), and num_tokens x the items of a token
 * < 2^31 (the host checks). The inputs are loaded before the slot is looked at, so that the three
 * loads are in flight together. */
template <int IN, int VEC, typename CODEC, int MODEL>
__global__ void __launch_bounds__(THREADS, (min_blocks<IN, CODEC, MODEL>()))
    store_kernel(int codec, struct fp8kv_codec_cfg cfg, struct fp8kv_cache_shape shape,
                 const void *key, const void *value, int num_tokens, const int64_t *slot_mapping,
                 float k_scale, float v_scale, fast_store fast, uint8_t *key_cache,
                 uint8_t *value_cache)
{
    constexpr bool FAST = CODEC::fast && shortcut<CODEC::id, MODEL>::exists && VEC % 4 == 0 &&
                          (MODEL == FP8KV_CODEC_F32_DIV || MODEL == FP8KV_CODEC_F32_MUL_RECIP);
    const CODEC encode{codec};
    cfg.model = (uint8_t)MODEL; /* the same value, known to the compiler */
    const int hs = shape.head_size, row = shape.num_heads * hs, items = row / VEC;
    const uint32_t g = blockIdx.x * (THREADS * PASSES) + threadIdx.x; /* this thread's first */
    const int step_token = (int)(THREADS / (uint32_t)items);
    const int step_item = (int)(THREADS % (uint32_t)items);
    int token = (int)(g / (uint32_t)items), item = (int)(g % (uint32_t)items);
    for (unsigned pass = 0; pass < PASSES && token < num_tokens; pass++) {
        const size_t i = (size_t)token * row + (size_t)item * VEC; /* [token][head][dim] */
        float xk[VEC], xv[VEC];
        const int64_t slot = slot_mapping[token];
        load_run<IN, VEC>(key, i, xk);
        load_run<IN, VEC>(value, i, xv);
        if (slot >= 0) { /* -1: padding, the cache is left untouched */
            uint8_t qk[VEC], qv[VEC];
            bool done = false;
            if constexpr (FAST) {
                if (fast.on_k && fast.on_v) { /* uniform: off for e5m2 and out-of-range scales */
                    const bool ok_k =
                        encode_run_fast<VEC, CODEC::id, MODEL>(fast, xk, fast.r_k, qk);
                    const bool ok_v =
                        encode_run_fast<VEC, CODEC::id, MODEL>(fast, xv, fast.r_v, qv);
                    done = ok_k && ok_v;
                }
            }
            if (!done) {
                encode_run<VEC>(encode, cfg, xk, k_scale, qk);
                encode_run<VEC>(encode, cfg, xv, v_scale, qv);
            }
            if (shape.layout == FP8KV_LAYOUT_NHD) { /* a slot's row is [head][dim] */
                const size_t at = (size_t)slot * row + (size_t)item * VEC;
                store_bytes<VEC>(key_cache + at, qk);
                store_bytes<VEC>(value_cache + at, qv);
            } else {
                const int h = item * VEC / hs, d = item * VEC % hs;
                store_bytes<VEC>(key_cache + key_offset(shape, slot, h, d), qk);
#pragma unroll
                for (int k = 0; k < VEC; k++)
                    value_cache[value_offset(shape, slot, h, d + k)] = qv[k];
            }
        }
        token += step_token;
        item += step_item;
        if (item >= items) {
            item -= items;
            token++;
        }
    }
}

/* One launch of store_kernel<IN, VEC, CODEC, MODEL> over `items` work items (< 2^31): a block
 * per THREADS x PASSES of them (see PASSES). */
template <int IN, int VEC, typename CODEC, int MODEL>
void launch_vec(uint64_t items, int codec, struct fp8kv_codec_cfg cfg,
                const struct fp8kv_cache_shape &shape, const void *key, const void *value,
                int num_tokens, const int64_t *slots, float ks, float vs, const fast_store &f,
                uint8_t *kc, uint8_t *vc)
{
    const unsigned blocks = blocks_for(items, THREADS * PASSES, ~0u);
    store_kernel<IN, VEC, CODEC, MODEL>
        <<<blocks, THREADS>>>(codec, cfg, shape, key, value, num_tokens, slots, ks, vs, f, kc, vc);
}

/* The vector width of a store of input dtype IN: the elements of 16 input bytes (one 16-byte
 * load per side, and a warp's loads one contiguous run), or 1 where head_size does not split
 * into them. */
template <int IN> constexpr int wide_vec()
{
    return 16 / (IN == FP8KV_KV_F32 ? 4 : 2);
}

template <int IN, typename CODEC, int MODEL>
void launch_model(int vec, uint64_t items, int codec, struct fp8kv_codec_cfg cfg,
                  const struct fp8kv_cache_shape &shape, const void *key, const void *value,
                  int num_tokens, const int64_t *slots, float ks, float vs, const fast_store &f,
                  uint8_t *kc, uint8_t *vc)
{
    if (vec == wide_vec<IN>())
        launch_vec<IN, wide_vec<IN>(), CODEC, MODEL>(items, codec, cfg, shape, key, value,
                                                     num_tokens, slots, ks, vs, f, kc, vc);
    else
        launch_vec<IN, 1, CODEC, MODEL>(items, codec, cfg, shape, key, value, num_tokens, slots, ks,
                                        vs, f, kc, vc);
}

/* The fast path's constants for cfg and the two scales (see fast_store). */
fast_store fast_store_of(struct fp8kv_codec_cfg cfg, float ks, float vs)
{
    /* |s| in [2^-60, 2^60]: the f32_div shortcut's range; mul_recip needs none */
    const auto in_range = [&](float s) {
        const float a = fabsf(s);
        return cfg.model == FP8KV_CODEC_F32_MUL_RECIP || (a >= 0x1p-60f && a <= 0x1p60f);
    };
    /* the shortcut rounds at bit 20: 3 mantissa bits; e5m2 takes the general path (exact, the
     * same codec, without the shortcut) */
    const bool e4m3 = fp8kv_codec_man_bits(cfg) == 3;
    fast_store f;
    f.on_k = e4m3 && in_range(ks);
    f.on_v = e4m3 && in_range(vs);
    f.r_k = 1.0f / ks;
    f.r_v = 1.0f / vs;
    const int bias = fp8kv_codec_bias(cfg);
    const uint32_t lo = fp8kv_f32_bits(fp8kv_min_normal(bias));
    const uint32_t hi = fp8kv_f32_bits(fp8kv_max_finite(cfg.format));
    f.lo2 = 2 * lo;
    f.span2 = 2 * (hi - lo);
    f.times2 = 2;
    f.times16 = 16;
    f.times4096 = 4096;
    const uint32_t rebias = fp8kv_rebias(bias, fp8kv_codec_man_bits(cfg));
    const uint32_t half = cfg.model == FP8KV_CODEC_F32_DIV ? 0x80000u : 0x7FFFFu;
    f.k16 = (half - (rebias << 20)) << 4;
    return f;
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
    const fast_store f = fast_store_of(cfg, ks, vs);
    switch (cfg.model) {
    case FP8KV_CODEC_F32_DIV:
        launch_model<IN, CODEC, FP8KV_CODEC_F32_DIV>(vec, items, codec, cfg, shape, key, value,
                                                     num_tokens, slots, ks, vs, f, kc, vc);
        break;
    case FP8KV_CODEC_F32_MUL_RECIP:
        launch_model<IN, CODEC, FP8KV_CODEC_F32_MUL_RECIP>(
            vec, items, codec, cfg, shape, key, value, num_tokens, slots, ks, vs, f, kc, vc);
        break;
    case FP8KV_CODEC_F16_DIV:
        launch_model<IN, CODEC, FP8KV_CODEC_F16_DIV>(vec, items, codec, cfg, shape, key, value,
                                                     num_tokens, slots, ks, vs, f, kc, vc);
        break;
    default: return FP8KV_FAIL("store: unknown scale model %d", cfg.model);
    }
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_OK;
}

template <int IN>
int launch_codec(int codec, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                 const void *key, const void *value, int num_tokens, const int64_t *slots, float ks,
                 float vs, uint8_t *kc, uint8_t *vc)
{
    const int vec = shape.head_size % wide_vec<IN>() == 0 ? wide_vec<IN>() : 1;
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

namespace fp8kv_gpu
{

int launch_store(int codec, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                 int in, const void *d_key, const void *d_value, int num_tokens,
                 const int64_t *d_slots, float k_scale, float v_scale, uint8_t *d_key_cache,
                 uint8_t *d_value_cache)
{
    if (num_tokens <= 0)
        return FP8KV_OK;
    switch (in) {
    case FP8KV_KV_F32:
        return launch_codec<FP8KV_KV_F32>(codec, cfg, shape, d_key, d_value, num_tokens, d_slots,
                                          k_scale, v_scale, d_key_cache, d_value_cache);
    case FP8KV_KV_F16:
        return launch_codec<FP8KV_KV_F16>(codec, cfg, shape, d_key, d_value, num_tokens, d_slots,
                                          k_scale, v_scale, d_key_cache, d_value_cache);
    case FP8KV_KV_BF16:
        return launch_codec<FP8KV_KV_BF16>(codec, cfg, shape, d_key, d_value, num_tokens, d_slots,
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
    const size_t input =
        (size_t)num_tokens * shape->num_heads * shape->head_size * fp8kv_kv_dtype_size(in);
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
