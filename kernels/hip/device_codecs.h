/* device_codecs.h — the device codecs of fp8kv/gpu.h, selectable by id, and the device-side
 * helpers the kernels share (NaN-preserving store quotient, fast exact decode, vector loads).
 *
 * Which hardware paths a device pass compiles is decided here, from the architecture
 * families of hip_compat.h and the compiler's builtins, and nowhere else:
 *
 *   FP8KV_PATH_PTX_CVT   NVIDIA sm_89+: cvt.rn.satfinite.e4m3x2.f32 (inline PTX)
 *   FP8KV_PATH_CUDA_FP8  nvcc: cuda_fp8.h __nv_cvt_float_to_fp8 (hardware for SATFINITE on
 *                        sm_89+, a software path for __NV_NOSAT everywhere)
 *   FP8KV_PATH_AMD_FNUZ  gfx940-942 with __builtin_amdgcn_cvt_pk_fp8_f32 (FNUZ bytes)
 *   FP8KV_PATH_AMD_OCP   gfx950 / gfx12 with the same builtin (OCP e4m3fn bytes)
 *
 * FP8KV_DEVICE_CODEC_MASK (bit = enum fp8kv_gpu_codec_id) is what the probe kernel reports
 * at run time and what scripts/gpu-compile-check reads off the preprocessor for targets it
 * can only compile. A codec whose path is not compiled encodes to the poison 0xFF; the host
 * never launches it (fp8kv_gpu_codec_available).
 *
 * Everything is exact integer work or single IEEE f32 operations: the device files are built
 * with contraction off (nvcc --fmad=false, clang -ffp-contract=off), no fast math, no FTZ.
 */
#ifndef FP8KV_DEVICE_CODECS_H
#define FP8KV_DEVICE_CODECS_H

#include "hip_compat.h"

#include <stdint.h>

#include "fp8kv/codec.h"
#include "fp8kv/gpu.h"

#if defined(__CUDACC__) && !defined(__HIPCC__)
#include <cuda_fp8.h>
#endif

/* ---- the compiled paths (device passes) ----------------------------------------------------- */

#if defined(FP8KV_ARCH_NV_SM89_PLUS)
#define FP8KV_PATH_PTX_CVT 1
#endif
#if defined(__CUDA_ARCH__) && !defined(__HIPCC__)
#define FP8KV_PATH_CUDA_FP8 1
#endif
#if defined(FP8KV_ARCH_AMD_GFX942) && __has_builtin(__builtin_amdgcn_cvt_pk_fp8_f32)
#define FP8KV_PATH_AMD_FNUZ 1
#endif
#if defined(FP8KV_ARCH_AMD_OCP_FP8) && __has_builtin(__builtin_amdgcn_cvt_pk_fp8_f32)
#define FP8KV_PATH_AMD_OCP 1
#endif

/* The codec names, one place for the runtime's table and the compile checks (paths.hip). */
#define FP8KV_NAME_BITS "bits"
#define FP8KV_NAME_FREXP "frexp"
#define FP8KV_NAME_PTX_CVT "ptx-cvt-satfinite"
#define FP8KV_NAME_CUDA_FP8_SATFINITE "cuda-fp8-satfinite"
#define FP8KV_NAME_CUDA_FP8_NOSAT "cuda-fp8-nosat"
#define FP8KV_NAME_AMD_FNUZ "amd-pk-fp8-fnuz"
#define FP8KV_NAME_AMD_OCP "amd-pk-fp8-ocp"

/* The instruction a hardware path must compile to, for the compile checks (paths.hip):
 * scripts/gpu-compile-check fails a target whose assembly claims the path without it. */
#define FP8KV_INSN_AMD_PK_FP8 "v_cvt_pk_fp8_f32"

#define FP8KV_CODEC_BIT(c) (1u << (c))
#ifdef FP8KV_PATH_PTX_CVT
#define FP8KV_MASK_PTX_CVT FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE)
#else
#define FP8KV_MASK_PTX_CVT 0u
#endif
#ifdef FP8KV_PATH_CUDA_FP8
#define FP8KV_MASK_CUDA_FP8                                                                        \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE) |                                         \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT))
#else
#define FP8KV_MASK_CUDA_FP8 0u
#endif
#ifdef FP8KV_PATH_AMD_FNUZ
#define FP8KV_MASK_AMD_FNUZ FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ)
#else
#define FP8KV_MASK_AMD_FNUZ 0u
#endif
#ifdef FP8KV_PATH_AMD_OCP
#define FP8KV_MASK_AMD_OCP FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_AMD_PK_FP8_OCP)
#else
#define FP8KV_MASK_AMD_OCP 0u
#endif
#define FP8KV_DEVICE_CODEC_MASK                                                                    \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_BITS) | FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_FREXP) |              \
     FP8KV_MASK_PTX_CVT | FP8KV_MASK_CUDA_FP8 | FP8KV_MASK_AMD_FNUZ | FP8KV_MASK_AMD_OCP)

#define FP8KV_POISON_PAIR 0xFFFFu

/* ---- the codecs, two inputs at a time -------------------------------------------------------- */

/* encode_pair<CODEC>: the codes of x0 (low byte) and x1 (high byte). Pairs, because the
 * hardware conversions are packed (e4m3x2); the software codecs are simply applied twice. The
 * codecs with fixed semantics ignore cfg. */
template <int CODEC>
__device__ __forceinline__ uint32_t encode_pair(struct fp8kv_codec_cfg cfg, float x0, float x1);

template <>
__device__ __forceinline__ uint32_t encode_pair<FP8KV_GPU_CODEC_BITS>(struct fp8kv_codec_cfg cfg,
                                                                      float x0, float x1)
{
    return (uint32_t)fp8kv_encode_bits(cfg, fp8kv_f32_bits(x0)) |
           (uint32_t)fp8kv_encode_bits(cfg, fp8kv_f32_bits(x1)) << 8;
}

template <>
__device__ __forceinline__ uint32_t encode_pair<FP8KV_GPU_CODEC_FREXP>(struct fp8kv_codec_cfg cfg,
                                                                       float x0, float x1)
{
    return (uint32_t)fp8kv_encode_frexp(cfg, x0) | (uint32_t)fp8kv_encode_frexp(cfg, x1) << 8;
}

/* cvt.rn.satfinite.e4m3x2.f32 d, a, b puts a's code in the upper byte of d, b's in the lower. */
template <>
__device__ __forceinline__ uint32_t
encode_pair<FP8KV_GPU_CODEC_PTX_CVT_SATFINITE>(struct fp8kv_codec_cfg cfg, float x0, float x1)
{
    (void)cfg;
#ifdef FP8KV_PATH_PTX_CVT
    uint32_t packed;
    asm("{\n\t.reg .b16 t;\n\t"
        "cvt.rn.satfinite.e4m3x2.f32 t, %2, %1;\n\t"
        "cvt.u32.u16 %0, t;\n\t}"
        : "=r"(packed)
        : "f"(x0), "f"(x1));
    return packed;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

template <>
__device__ __forceinline__ uint32_t
encode_pair<FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE>(struct fp8kv_codec_cfg cfg, float x0, float x1)
{
    (void)cfg;
#ifdef FP8KV_PATH_CUDA_FP8
    return (uint32_t)__nv_cvt_float_to_fp8(x0, __NV_SATFINITE, __NV_E4M3) |
           (uint32_t)__nv_cvt_float_to_fp8(x1, __NV_SATFINITE, __NV_E4M3) << 8;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

template <>
__device__ __forceinline__ uint32_t
encode_pair<FP8KV_GPU_CODEC_CUDA_FP8_NOSAT>(struct fp8kv_codec_cfg cfg, float x0, float x1)
{
    (void)cfg;
#ifdef FP8KV_PATH_CUDA_FP8
    return (uint32_t)__nv_cvt_float_to_fp8(x0, __NV_NOSAT, __NV_E4M3) |
           (uint32_t)__nv_cvt_float_to_fp8(x1, __NV_NOSAT, __NV_E4M3) << 8;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

/* __builtin_amdgcn_cvt_pk_fp8_f32(a, b, old, word_sel): v_cvt_pk_fp8_f32, a's code in byte 0
 * and b's in byte 1 of the selected word (word_sel false: the low one). Round to nearest even;
 * no clamp bit is set, so overflow follows the hardware's non-saturating rule. */
template <>
__device__ __forceinline__ uint32_t
encode_pair<FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ>(struct fp8kv_codec_cfg cfg, float x0, float x1)
{
    (void)cfg;
#ifdef FP8KV_PATH_AMD_FNUZ
    return (uint32_t)__builtin_amdgcn_cvt_pk_fp8_f32(x0, x1, 0, false) & 0xFFFFu;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

template <>
__device__ __forceinline__ uint32_t
encode_pair<FP8KV_GPU_CODEC_AMD_PK_FP8_OCP>(struct fp8kv_codec_cfg cfg, float x0, float x1)
{
    (void)cfg;
#ifdef FP8KV_PATH_AMD_OCP
    return (uint32_t)__builtin_amdgcn_cvt_pk_fp8_f32(x0, x1, 0, false) & 0xFFFFu;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

/* FP8KV_FOR_EACH_CODEC(M): M(id) for every codec id, for switch dispatch. */
#define FP8KV_FOR_EACH_CODEC(M)                                                                    \
    M(FP8KV_GPU_CODEC_BITS)                                                                        \
    M(FP8KV_GPU_CODEC_FREXP)                                                                       \
    M(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE)                                                           \
    M(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE)                                                          \
    M(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT)                                                              \
    M(FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ)                                                             \
    M(FP8KV_GPU_CODEC_AMD_PK_FP8_OCP)

/* ---- stores ---------------------------------------------------------------------------------- */

/* store_quotient: the value a store converts under cfg.model (fp8kv_scale_quotient), except
 * that an input NaN is passed through unchanged. GPU arithmetic returns the canonical NaN
 * (0x7FFFFFFF on NVIDIA) for a NaN operand, which would turn -NaN into +NaN before any codec
 * sees it; IEEE 754 recommends keeping the input NaN, and the CPU does. */
__device__ __forceinline__ float store_quotient(struct fp8kv_codec_cfg cfg, float x, float s)
{
    return (fp8kv_f32_bits(x) & 0x7FFFFFFFu) > 0x7F800000u ? x : fp8kv_scale_quotient(cfg, x, s);
}

/* ---- decoding -------------------------------------------------------------------------------- */

/* decode_fast: fp8kv_decode_bits without branches. The 7 magnitude bits placed at bit 20 of an
 * f32 form 2^(e - 127) * 1.m for a normal code and the f32 denormal m * 2^-129 for a
 * subnormal one; multiplying by 2^(127 - bias) (fp8kv_decode_unit: exact, a power of
 * two, no FTZ) gives the value in both cases. NaN codes give sign | 0x7FC00000, as
 * fp8kv_decode_bits. fnuz: the format is e4m3fnuz (else e4m3fn). */
__device__ __forceinline__ float decode_fast(int fnuz, uint32_t code)
{
    const uint32_t sign = (code & 0x80u) << 24, mag = code & 0x7Fu;
    const float unit = fnuz ? fp8kv_decode_unit(fp8kv_format_bias(FP8KV_CODEC_E4M3FNUZ))
                            : fp8kv_decode_unit(fp8kv_format_bias(FP8KV_CODEC_E4M3FN));
    const float v = __uint_as_float(mag << 20) * unit;
    const bool nan = fnuz ? fp8kv_format_is_nan_code(FP8KV_CODEC_E4M3FNUZ, code)
                          : fp8kv_format_is_nan_code(FP8KV_CODEC_E4M3FN, code);
    return __uint_as_float((nan ? 0x7FC00000u : __float_as_uint(v)) | sign);
}

/* dequant: RN32(decode(code) * scale), a NaN code's NaN passed through (not multiplied: see
 * store_quotient), so that read outputs are bit-identical to the CPU reference. */
__device__ __forceinline__ float dequant(int fnuz, uint32_t code, float scale)
{
    const float d = decode_fast(fnuz, code);
    return d != d ? d : d * scale;
}

/* ---- vectors of elements --------------------------------------------------------------------- */

/* A chunk of N bytes loaded or stored with one access (N in 1, 2, 4, 8, 16). */
template <int N> struct bytes_of;
template <> struct bytes_of<16> {
    typedef uint4 type;
};
template <> struct bytes_of<8> {
    typedef uint2 type;
};
template <> struct bytes_of<4> {
    typedef uint32_t type;
};
template <> struct bytes_of<2> {
    typedef uint16_t type;
};
template <> struct bytes_of<1> {
    typedef uint8_t type;
};

/* Loads N bytes at p (aligned to N) into out[0 .. N). */
template <int N> __device__ __forceinline__ void load_bytes(const void *p, uint8_t *out)
{
    typedef typename bytes_of<N>::type T;
    const T v = *reinterpret_cast<const T *>(p);
    memcpy(out, &v, N);
}

/* Stores in[0 .. N) to p (aligned to N) with one access. */
template <int N> __device__ __forceinline__ void store_bytes(void *p, const uint8_t *in)
{
    typedef typename bytes_of<N>::type T;
    T v;
    memcpy(&v, in, N);
    *reinterpret_cast<T *>(p) = v;
}

#endif
