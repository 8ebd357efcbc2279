/* paths.hip — not part of the library. scripts/gpu-compile-check preprocesses it for one
 * device target (hipcc or clang --cuda-device-only -E, nvcc -E) and reads off the "fp8kv-path:"
 * lines: the codec and decoder paths that target's device pass compiles, decided by the same macros of
 * device_codecs.h that the kernels and the run-time probe use; and the "fp8kv-insn:" lines: a
 * hardware path and the instruction its assembly must then contain. */
#include "device_codecs.h"

#ifdef FP8KV_DEVICE_PASS
fp8kv-path: FP8KV_NAME_BITS FP8KV_NAME_FREXP
#ifdef FP8KV_PATH_PTX_CVT
fp8kv-path: FP8KV_NAME_PTX_CVT FP8KV_NAME_PTX_CVT_E5M2
#endif
#ifdef FP8KV_PATH_CUDA_FP8
fp8kv-path: FP8KV_NAME_CUDA_FP8_SATFINITE FP8KV_NAME_CUDA_FP8_NOSAT
fp8kv-path: FP8KV_NAME_CUDA_FP8_SATFINITE_E5M2 FP8KV_NAME_CUDA_FP8_NOSAT_E5M2
fp8kv-path: FP8KV_NAME_DECODE_CUDA_FP8
#endif
#ifdef FP8KV_PATH_AMD_FNUZ
fp8kv-path: FP8KV_NAME_AMD_FNUZ FP8KV_NAME_AMD_BF8_FNUZ FP8KV_NAME_DECODE_AMD_FNUZ
fp8kv-insn: FP8KV_NAME_AMD_FNUZ FP8KV_INSN_AMD_PK_FP8
fp8kv-insn: FP8KV_NAME_AMD_BF8_FNUZ FP8KV_INSN_AMD_PK_BF8
fp8kv-insn: FP8KV_NAME_DECODE_AMD_FNUZ FP8KV_INSN_AMD_F32_FP8
fp8kv-insn: FP8KV_NAME_DECODE_AMD_FNUZ FP8KV_INSN_AMD_F32_BF8
#endif
#ifdef FP8KV_PATH_AMD_OCP
fp8kv-path: FP8KV_NAME_AMD_OCP FP8KV_NAME_AMD_BF8_OCP FP8KV_NAME_DECODE_AMD_OCP
fp8kv-insn: FP8KV_NAME_AMD_OCP FP8KV_INSN_AMD_PK_FP8
fp8kv-insn: FP8KV_NAME_AMD_BF8_OCP FP8KV_INSN_AMD_PK_BF8
fp8kv-insn: FP8KV_NAME_DECODE_AMD_OCP FP8KV_INSN_AMD_F32_FP8
fp8kv-insn: FP8KV_NAME_DECODE_AMD_OCP FP8KV_INSN_AMD_F32_BF8
#endif
#if defined(__HIP_DEVICE_COMPILE__) && !defined(FP8KV_PATH_AMD_FNUZ) && !defined(FP8KV_PATH_AMD_OCP)
#ifdef FP8KV_AMD_FP8_BUILTINS
fp8kv-note: "the fp8 builtins exist, but this target is neither gfx94x nor gfx950/gfx12"
#else
fp8kv-note: "no AMD fp8 conversion builtins for this target with this compiler"
#endif
#endif
#endif
