/* codec_avx2.c — codec_simd.c built for AVX2: 8 lanes of 32 bits (compiled with -mavx2). */
#define FP8KV_SIMD_LANES 8
#define FP8KV_SIMD_NAME fp8kv_simd_avx2
#include "codec_simd.c"
