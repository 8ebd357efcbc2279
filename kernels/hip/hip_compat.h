/* hip_compat.h — one set of .hip sources for both GPU toolchains.
 *
 * Under hipcc (AMD, or HIP on any platform) this is <hip/hip_runtime.h>. Under nvcc the HIP
 * names the kernels use are mapped to the CUDA runtime, one alias per line (the llama.cpp
 * vendors/hip.h idea, the other way round). ROCm's own HIP-on-NVIDIA headers do not build
 * with CUDA 13 (removed cudaDeviceProp fields): device facts are read with
 * hipDeviceGetAttribute, and cudaDeviceProp is used for the name only.
 *
 * Also here, derived in one place: the architecture families that decide which codec paths
 * a device pass compiles (FP8KV_ARCH_*), warp-level helpers whose spelling differs, and
 * FP8KV_GPU_CHECK, which turns a failed runtime call into "file:line: call: error string"
 * (through fp8kv_gpu_fail_at, which records it with the core's fp8kv/diag.h).
 */
#ifndef FP8KV_HIP_COMPAT_H
#define FP8KV_HIP_COMPAT_H

#if defined(__HIPCC__) || defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
/* ---- HIP (hipcc / clang -x hip) --------------------------------------------------------- */
#include <hip/hip_runtime.h>
#define FP8KV_GPU_PLATFORM "hip"

#elif defined(__CUDACC__)
/* ---- CUDA (nvcc): HIP names -> CUDA names ------------------------------------------------ */
#include <cuda_runtime.h>
#define FP8KV_GPU_PLATFORM "cuda"

#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError

#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlockOptin
#define hipDeviceAttributeClockRate cudaDevAttrClockRate
#define hipDeviceAttributeMemoryClockRate cudaDevAttrMemoryClockRate
#define hipDeviceAttributeMemoryBusWidth cudaDevAttrGlobalMemoryBusWidth
#define hipDeviceProp_t cudaDeviceProp
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDriverGetVersion cudaDriverGetVersion
#define hipMemGetInfo cudaMemGetInfo

#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemset cudaMemset

#define hipEvent_t cudaEvent_t
#define hipEventCreate cudaEventCreate
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventQuery cudaEventQuery
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy

#define hipFuncSetAttribute(f, a, v) cudaFuncSetAttribute(f, a, v)
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

#else
#error "hip_compat.h is for the device sources: build them with hipcc or nvcc"
#endif

/* ---- architecture families (device passes only; the host pass sees none) ---------------- */
/* NVIDIA Ada/Hopper and later: the hardware cvt.rn.satfinite.e4m3x2.f32 (PTX ISA 7.8). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define FP8KV_ARCH_NV_SM89_PLUS 1
#endif
/* AMD CDNA3 (MI300): hardware fp8 is FNUZ (bias 8, max 240, 0x80 = NaN; defect 11 of docs/DESIGN.md
 * §1.4). */
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define FP8KV_ARCH_AMD_GFX942 1
#endif
/* AMD gfx950 (MI350) and RDNA4 (gfx12): hardware fp8 is OCP e4m3fn. */
#if defined(__gfx950__) || defined(__gfx1200__) || defined(__gfx1201__)
#define FP8KV_ARCH_AMD_OCP_FP8 1
#endif
#if defined(FP8KV_ARCH_AMD_GFX942) && defined(FP8KV_ARCH_AMD_OCP_FP8)
#error "an AMD device pass cannot be both FNUZ (gfx94x) and OCP (gfx950/gfx12)"
#endif

/* __has_builtin, for compilers that lack it (nvcc's host compiler may). */
#ifndef __has_builtin
#define __has_builtin(x) 0
#endif

/* ---- warp-level helpers ------------------------------------------------------------------- */
/* The kernels reduce across threads through shared memory, so that neither the warp size (32
 * on NVIDIA and RDNA, 64 on CDNA) nor the _sync spelling matters; only this one shuffle is used,
 * within groups of at most 8 lanes. */
#if defined(__CUDACC__) && !defined(__HIPCC__)
#define FP8KV_SHFL_XOR(v, m) __shfl_xor_sync(0xFFFFFFFFu, (v), (m))
#else
#define FP8KV_SHFL_XOR(v, m) __shfl_xor((v), (m))
#endif

/* ---- error checks ------------------------------------------------------------------------- */
#ifdef __cplusplus
extern "C" {
#endif
/* fp8kv_gpu_fail_at: records "file:line: what: message" as the last error (fp8kv_last_error),
 * counts it, and returns FP8KV_ERR_SUBJECT (fp8kv/diag.h: the subject under test failed). Defined
 * in runtime.hip. */
int fp8kv_gpu_fail_at(const char *file, int line, const char *what, const char *message);
#ifdef __cplusplus
}
#endif

/* FP8KV_GPU_CHECK(call): returns a negative status from the enclosing function, with the
 * call's file:line and the runtime's error string recorded, when call fails. */
#define FP8KV_GPU_CHECK(call)                                                                      \
    do {                                                                                           \
        const hipError_t fp8kv_err_ = (call);                                                      \
        if (fp8kv_err_ != hipSuccess)                                                              \
            return fp8kv_gpu_fail_at(__FILE__, __LINE__, #call, hipGetErrorString(fp8kv_err_));    \
    } while (0)

/* FP8KV_GPU_CHECK_LAUNCH(): the same for the kernel launch just made. */
#define FP8KV_GPU_CHECK_LAUNCH() FP8KV_GPU_CHECK(hipGetLastError())

#endif
