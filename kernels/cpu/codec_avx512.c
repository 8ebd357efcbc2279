/* codec_avx512.c — codec_simd.c built for AVX-512: 16 lanes of 32 bits (compiled with -mavx512f
 * -mavx512bw -mavx512vl -mavx512dq). */
#define FP8KV_SIMD_LANES 16
#define FP8KV_SIMD_NAME fp8kv_simd_avx512
#include "codec_simd.c"
