/* device_codecs.h — the device codecs of fp8kv/gpu.h, selectable by id, and the device-side
 * helpers the kernels share (NaN-preserving store quotient, fast exact decode, vector loads).
 *
 * Which hardware paths a device pass compiles is decided here, from the architecture
 * families of hip_compat.h and the compiler's builtins, and nowhere else:
 *
 *   FP8KV_PATH_PTX_CVT   NVIDIA sm_89+: cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (inline PTX)
 *   FP8KV_PATH_CUDA_FP8  nvcc: cuda_fp8.h __nv_cvt_float_to_fp8 (hardware for SATFINITE on
 *                        sm_89+, a software path for __NV_NOSAT everywhere), both widths,
 *                        and __nv_cvt_fp8_to_halfraw to decode
 *   FP8KV_PATH_AMD_FNUZ  gfx940-942 with the fp8/bf8 builtins (__builtin_amdgcn_cvt_pk_fp8_f32,
 *                        _pk_bf8_f32, _f32_fp8, _f32_bf8): FNUZ bytes
 *   FP8KV_PATH_AMD_OCP   gfx950 / gfx12 with the same builtins (OCP e4m3fn and e5m2 bytes)
 *
 * FP8KV_DEVICE_CODEC_MASK (bit = enum fp8kv_gpu_codec_id) and FP8KV_DEVICE_DECODER_MASK (bit =
 * enum fp8kv_gpu_decoder_id) are what the probe kernel reports at run time and what
 * scripts/gpu-compile-check reads off the preprocessor for targets it can only compile. A
 * codec whose path is not compiled encodes to the poison 0xFF (a decoder decodes to NaN); the
 * host never launches it (fp8kv_gpu_codec_available, fp8kv_gpu_decoder_available).
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
/* the AMD fp8 builtins came as one set (LLVM 15, gfx940): both widths, both directions */
#if __has_builtin(__builtin_amdgcn_cvt_pk_fp8_f32) &&                                              \
    __has_builtin(__builtin_amdgcn_cvt_pk_bf8_f32) &&                                              \
    __has_builtin(__builtin_amdgcn_cvt_f32_fp8) && __has_builtin(__builtin_amdgcn_cvt_f32_bf8)
#define FP8KV_AMD_FP8_BUILTINS 1
#endif
#if defined(FP8KV_ARCH_AMD_GFX942) && defined(FP8KV_AMD_FP8_BUILTINS)
#define FP8KV_PATH_AMD_FNUZ 1
#endif
#if defined(FP8KV_ARCH_AMD_OCP_FP8) && defined(FP8KV_AMD_FP8_BUILTINS)
#define FP8KV_PATH_AMD_OCP 1
#endif

/* The codec and decoder names, one place for the runtime's tables and the compile checks
 * (paths.hip). */
#define FP8KV_NAME_BITS "bits"
#define FP8KV_NAME_FREXP "frexp"
#define FP8KV_NAME_PTX_CVT "ptx-cvt-satfinite"
#define FP8KV_NAME_PTX_CVT_E5M2 "ptx-cvt-satfinite-e5m2"
#define FP8KV_NAME_CUDA_FP8_SATFINITE "cuda-fp8-satfinite"
#define FP8KV_NAME_CUDA_FP8_NOSAT "cuda-fp8-nosat"
#define FP8KV_NAME_CUDA_FP8_SATFINITE_E5M2 "cuda-fp8-satfinite-e5m2"
#define FP8KV_NAME_CUDA_FP8_NOSAT_E5M2 "cuda-fp8-nosat-e5m2"
#define FP8KV_NAME_AMD_FNUZ "amd-pk-fp8-fnuz"
#define FP8KV_NAME_AMD_OCP "amd-pk-fp8-ocp"
#define FP8KV_NAME_AMD_BF8_FNUZ "amd-pk-bf8-fnuz"
#define FP8KV_NAME_AMD_BF8_OCP "amd-pk-bf8-ocp"
#define FP8KV_NAME_DECODE_CUDA_FP8 "cuda-fp8-halfraw"
#define FP8KV_NAME_DECODE_AMD_FNUZ "amd-cvt-f32-fnuz"
#define FP8KV_NAME_DECODE_AMD_OCP "amd-cvt-f32-ocp"

/* The instructions a hardware path must compile to, for the compile checks (paths.hip):
 * scripts/gpu-compile-check fails a target whose assembly claims the path without them. */
#define FP8KV_INSN_AMD_PK_FP8 "v_cvt_pk_fp8_f32"
#define FP8KV_INSN_AMD_PK_BF8 "v_cvt_pk_bf8_f32"
#define FP8KV_INSN_AMD_F32_FP8 "v_cvt_f32_fp8"
#define FP8KV_INSN_AMD_F32_BF8 "v_cvt_f32_bf8"

#define FP8KV_CODEC_BIT(c) (1u << (c))
#ifdef FP8KV_PATH_PTX_CVT
#define FP8KV_MASK_PTX_CVT                                                                         \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE) |                                          \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE_E5M2))
#else
#define FP8KV_MASK_PTX_CVT 0u
#endif
#ifdef FP8KV_PATH_CUDA_FP8
#define FP8KV_MASK_CUDA_FP8                                                                        \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE) |                                         \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT) |                                             \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE_E5M2) |                                    \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT_E5M2))
#define FP8KV_DECODER_MASK_CUDA_FP8 FP8KV_CODEC_BIT(FP8KV_GPU_DECODE_CUDA_FP8)
#else
#define FP8KV_MASK_CUDA_FP8 0u
#define FP8KV_DECODER_MASK_CUDA_FP8 0u
#endif
#ifdef FP8KV_PATH_AMD_FNUZ
#define FP8KV_MASK_AMD_FNUZ                                                                        \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ) |                                            \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_AMD_PK_BF8_FNUZ))
#define FP8KV_DECODER_MASK_AMD_FNUZ FP8KV_CODEC_BIT(FP8KV_GPU_DECODE_AMD_FNUZ)
#else
#define FP8KV_MASK_AMD_FNUZ 0u
#define FP8KV_DECODER_MASK_AMD_FNUZ 0u
#endif
#ifdef FP8KV_PATH_AMD_OCP
#define FP8KV_MASK_AMD_OCP                                                                         \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_AMD_PK_FP8_OCP) |                                             \
     FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_AMD_PK_BF8_OCP))
#define FP8KV_DECODER_MASK_AMD_OCP FP8KV_CODEC_BIT(FP8KV_GPU_DECODE_AMD_OCP)
#else
#define FP8KV_MASK_AMD_OCP 0u
#define FP8KV_DECODER_MASK_AMD_OCP 0u
#endif
#define FP8KV_DEVICE_CODEC_MASK                                                                    \
    (FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_BITS) | FP8KV_CODEC_BIT(FP8KV_GPU_CODEC_FREXP) |              \
     FP8KV_MASK_PTX_CVT | FP8KV_MASK_CUDA_FP8 | FP8KV_MASK_AMD_FNUZ | FP8KV_MASK_AMD_OCP)
#define FP8KV_DEVICE_DECODER_MASK                                                                  \
    (FP8KV_CODEC_BIT(FP8KV_GPU_DECODE_BITS) | FP8KV_CODEC_BIT(FP8KV_GPU_DECODE_TABLE) |            \
     FP8KV_CODEC_BIT(FP8KV_GPU_DECODE_FAST) | FP8KV_DECODER_MASK_CUDA_FP8 |                        \
     FP8KV_DECODER_MASK_AMD_FNUZ | FP8KV_DECODER_MASK_AMD_OCP)

#define FP8KV_POISON_PAIR 0xFFFFu

/* FP8KV_FOR_EACH_FORMAT(M): M(format) for every enum fp8kv_codec_format (FP8KV_CODEC_FORMATS
 * of codec.h), for switch dispatch of the kernels templated on the format. */
#define FP8KV_FOR_EACH_FORMAT_(m, name, number) m(FP8KV_CODEC_##name)
#define FP8KV_FOR_EACH_FORMAT(M) FP8KV_CODEC_FORMATS(FP8KV_FOR_EACH_FORMAT_, M)

/* ---- the vendor conversions, generic over the width ------------------------------------------ */

/* Each takes E5 (1: e5m2 or e5m2fnuz; 0: e4m3) and returns the codes of x0 (low byte) and x1
 * (high byte), or the poison pair where its path is not compiled (never launched then). */

/* cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b puts a's code in the upper byte of d, b's in the
 * lower. */
#define FP8KV_PTX_CVT_PAIR(TYPE)                                                                   \
    "{\n\t.reg .b16 t;\n\tcvt.rn.satfinite." TYPE ".f32 t, %2, %1;\n\tcvt.u32.u16 %0, t;\n\t}"
template <int E5> __device__ __forceinline__ uint32_t ptx_cvt_pair(float x0, float x1)
{
#ifdef FP8KV_PATH_PTX_CVT
    uint32_t packed;
    if (E5)
        asm(FP8KV_PTX_CVT_PAIR("e5m2x2") : "=r"(packed) : "f"(x0), "f"(x1));
    else
        asm(FP8KV_PTX_CVT_PAIR("e4m3x2") : "=r"(packed) : "f"(x0), "f"(x1));
    return packed;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

/* __nv_cvt_float_to_fp8(x, SAT ? __NV_SATFINITE : __NV_NOSAT, E5 ? __NV_E5M2 : __NV_E4M3). */
template <int E5, int SAT> __device__ __forceinline__ uint32_t cuda_fp8_pair(float x0, float x1)
{
#ifdef FP8KV_PATH_CUDA_FP8
    const __nv_saturation_t sat = SAT ? __NV_SATFINITE : __NV_NOSAT;
    const __nv_fp8_interpretation_t kind = E5 ? __NV_E5M2 : __NV_E4M3;
    return (uint32_t)__nv_cvt_float_to_fp8(x0, sat, kind) |
           (uint32_t)__nv_cvt_float_to_fp8(x1, sat, kind) << 8;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

/* __builtin_amdgcn_cvt_pk_{fp8,bf8}_f32(a, b, old, word_sel): v_cvt_pk_{fp8,bf8}_f32, a's code
 * in byte 0 and b's in byte 1 of the selected word (word_sel false: the low one). Round to
 * nearest even; no clamp bit is set, so overflow follows the hardware's non-saturating rule.
 * FNUZ bytes on gfx940-942, OCP bytes on gfx950 and gfx12 (the same builtins). */
template <int E5> __device__ __forceinline__ uint32_t amd_pk_pair(float x0, float x1)
{
#if defined(FP8KV_PATH_AMD_FNUZ) || defined(FP8KV_PATH_AMD_OCP)
    const int packed = E5 ? __builtin_amdgcn_cvt_pk_bf8_f32(x0, x1, 0, false)
                          : __builtin_amdgcn_cvt_pk_fp8_f32(x0, x1, 0, false);
    return (uint32_t)packed & 0xFFFFu;
#else
    (void)x0;
    (void)x1;
    return FP8KV_POISON_PAIR;
#endif
}

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

/* FP8KV_VENDOR_PAIR(ID, CALL): encode_pair<ID> is CALL, a vendor conversion of fixed semantics
 * (its claim in runtime.hip's codec table), cfg unused. */
#define FP8KV_VENDOR_PAIR(ID, CALL)                                                                \
    template <>                                                                                    \
    __device__ __forceinline__ uint32_t encode_pair<ID>(struct fp8kv_codec_cfg cfg, float x0,      \
                                                        float x1)                                  \
    {                                                                                              \
        (void)cfg;                                                                                 \
        return CALL;                                                                               \
    }
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE, ptx_cvt_pair<0>(x0, x1))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE_E5M2, ptx_cvt_pair<1>(x0, x1))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE, (cuda_fp8_pair<0, 1>(x0, x1)))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT, (cuda_fp8_pair<0, 0>(x0, x1)))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE_E5M2, (cuda_fp8_pair<1, 1>(x0, x1)))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT_E5M2, (cuda_fp8_pair<1, 0>(x0, x1)))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ, amd_pk_pair<0>(x0, x1))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_AMD_PK_BF8_FNUZ, amd_pk_pair<1>(x0, x1))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_AMD_PK_FP8_OCP, amd_pk_pair<0>(x0, x1))
FP8KV_VENDOR_PAIR(FP8KV_GPU_CODEC_AMD_PK_BF8_OCP, amd_pk_pair<1>(x0, x1))
#undef FP8KV_VENDOR_PAIR

/* FP8KV_FOR_EACH_CODEC(M): M(id) for every codec id, for switch dispatch. */
#define FP8KV_FOR_EACH_CODEC(M)                                                                    \
    M(FP8KV_GPU_CODEC_BITS)                                                                        \
    M(FP8KV_GPU_CODEC_FREXP)                                                                       \
    M(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE)                                                           \
    M(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE)                                                          \
    M(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT)                                                              \
    M(FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ)                                                             \
    M(FP8KV_GPU_CODEC_AMD_PK_FP8_OCP)                                                              \
    M(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE_E5M2)                                                      \
    M(FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE_E5M2)                                                     \
    M(FP8KV_GPU_CODEC_CUDA_FP8_NOSAT_E5M2)                                                         \
    M(FP8KV_GPU_CODEC_AMD_PK_BF8_FNUZ)                                                             \
    M(FP8KV_GPU_CODEC_AMD_PK_BF8_OCP)

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

/* decode_fast<FORMAT>: fp8kv_decode_bits without branches, for a format fixed at compile time
 * (enum fp8kv_codec_format; the kernels are templated on it). The 7 magnitude bits placed at
 * bit 23 - man_bits of an f32 form 2^(e - 127) * 1.m for a normal code and the f32 denormal
 * m * 2^(-126 - man_bits) for a subnormal one; multiplying by 2^(127 - bias)
 * (fp8kv_decode_unit: exact, a power of two, no FTZ) gives the value in both cases. NaN codes
 * give sign | 0x7FC00000 and Inf codes sign | 0x7F800000, as fp8kv_decode_bits; the format
 * facts are codec.h's, which fold to constants here. */
template <int FORMAT> __device__ __forceinline__ float decode_fast(uint32_t code)
{
    const uint32_t sign = (code & 0x80u) << 24, mag = code & 0x7Fu;
    const float unit = fp8kv_decode_unit(fp8kv_format_bias(FORMAT));
    const float v = __uint_as_float(mag << (23 - fp8kv_format_man_bits(FORMAT))) * unit;
    uint32_t bits = __float_as_uint(v);
    if (fp8kv_format_has_inf(FORMAT)) /* compile time: e5m2 only */
        bits = mag == fp8kv_format_inf_byte(FORMAT) ? 0x7F800000u : bits;
    bits = fp8kv_format_is_nan_code(FORMAT, code) ? 0x7FC00000u : bits;
    return __uint_as_float(bits | sign);
}

/* decode_fast_of: decode_fast for a format known at run time (one uniform switch: for the
 * decoder subject and table fills, not for per-element loops). */
__device__ __forceinline__ float decode_fast_of(int format, uint32_t code)
{
    switch (format) {
#define CASE(F)                                                                                    \
    case F: return decode_fast<F>(code);
        FP8KV_FOR_EACH_FORMAT(CASE)
#undef CASE
    }
    return __uint_as_float(0x7FC00000u);
}

#ifdef FP8KV_ARCH_NV_SM89_PLUS
/* Four e4m3fn codes (low byte first) to f32, exactly: cvt.rn.f16x2.e4m3x2 on each half of the
 * word, then f16 -> f32. */
__device__ __forceinline__ void e4m3x4_to_f32(uint32_t codes, float *out)
{
    uint32_t lo, hi;
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
        : "=r"(lo), "=r"(hi)
        : "r"(codes));
    asm("{\n\t.reg .b16 a, b, c, d;\n\tmov.b32 {a, b}, %4;\n\tmov.b32 {c, d}, %5;\n\t"
        "cvt.f32.f16 %0, a;\n\tcvt.f32.f16 %1, b;\n\tcvt.f32.f16 %2, c;\n\tcvt.f32.f16 %3, d;\n\t}"
        : "=f"(out[0]), "=f"(out[1]), "=f"(out[2]), "=f"(out[3])
        : "r"(lo), "r"(hi));
}
#endif

/* scale_decoded: RN32(d * scale) of a decoded value d, a NaN passed through (not multiplied: see
 * store_quotient), so that read outputs are bit-identical to the CPU reference. */
__device__ __forceinline__ float scale_decoded(float d, float scale)
{
    return d != d ? d : d * scale;
}

/* ---- vendor decoders ------------------------------------------------------------------------- */

/* cuda_fp8_decode<E5>: __nv_cvt_fp8_to_halfraw(code, E5 ? __NV_E5M2 : __NV_E4M3) widened to f32
 * exactly (every e4m3 and e5m2 value is an f16); NaN where the path is not compiled. */
template <int E5> __device__ __forceinline__ float cuda_fp8_decode(uint32_t code)
{
#ifdef FP8KV_PATH_CUDA_FP8
    const __half_raw h =
        __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, E5 ? __NV_E5M2 : __NV_E4M3);
    return fp8kv_f16_to_f32(h.x);
#else
    (void)code;
    return __uint_as_float(0x7FC00000u);
#endif
}

/* amd_decode<E5>: __builtin_amdgcn_cvt_f32_{bf8,fp8}(code, byte 0), v_cvt_f32_{bf8,fp8}: FNUZ
 * on gfx940-942, OCP on gfx950 and gfx12; NaN where the path is not compiled. */
template <int E5> __device__ __forceinline__ float amd_decode(uint32_t code)
{
#if defined(FP8KV_PATH_AMD_FNUZ) || defined(FP8KV_PATH_AMD_OCP)
    return E5 ? __builtin_amdgcn_cvt_f32_bf8((int)code, 0)
              : __builtin_amdgcn_cvt_f32_fp8((int)code, 0);
#else
    (void)code;
    return __uint_as_float(0x7FC00000u);
#endif
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
