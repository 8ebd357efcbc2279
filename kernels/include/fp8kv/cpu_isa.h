/* fp8kv/cpu_isa.h — the instruction sets the host codecs' array loops are built for, and which
 * one the CPU subjects use.
 *
 * The encoders of codec.h (fp8kv_encode_bits, fp8kv_encode_frexp) have one array loop per
 * instruction set: the plain C loop over the scalar functions ("scalar", every build, every
 * processor) and, on x86-64, one SIMD body (kernels/cpu/codec_simd.c) built twice, for AVX2
 * (8 lanes) and AVX-512 (16 lanes). The CPU subjects "bits" and "frexp" call the loop of the
 * instruction set in use: the best one this build and this processor have, unless another is
 * chosen (fp8kv_cpu_isa_use; the CLI's --isa). Every path computes the same bytes; the judge
 * sweeps whichever is in use against the oracle, and t_simd compares each SIMD path with the
 * scalar one on every f32 input.
 */
#ifndef FP8KV_CPU_ISA_H
#define FP8KV_CPU_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/codec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fp8kv_cpu_isa { FP8KV_ISA_SCALAR, FP8KV_ISA_AVX2, FP8KV_ISA_AVX512, FP8KV_ISA_COUNT };

/* "scalar", "avx2", "avx512", indexed by enum fp8kv_cpu_isa. */
extern const char *const fp8kv_cpu_isa_names[FP8KV_ISA_COUNT];

/* Whether this build has a loop for isa and this processor (and its OS) can run it. */
int fp8kv_cpu_isa_available(enum fp8kv_cpu_isa isa);

/* The widest available instruction set. */
enum fp8kv_cpu_isa fp8kv_cpu_isa_best(void);

/* The instruction set the CPU subjects use now: fp8kv_cpu_isa_best() until chosen. */
enum fp8kv_cpu_isa fp8kv_cpu_isa_in_use(void);

/* Chooses the instruction set of the CPU subjects, process-wide (call before any sweep starts):
 * 0, or -1 if it is not available (nothing changed). */
int fp8kv_cpu_isa_use(enum fp8kv_cpu_isa isa);

/* The instruction set named `name`: 0 with *isa, or -1 for a name not in fp8kv_cpu_isa_names. */
int fp8kv_cpu_isa_parse(const char *name, enum fp8kv_cpu_isa *isa);

/* q[i] = fp8kv_encode_bits(c, bits of x[i]) for i < n, by the loop of isa (which must be
 * available). */
void fp8kv_cpu_encode_bits(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, const float *x,
                           size_t n, uint8_t *q);

/* q[i] = fp8kv_encode_frexp(c, x[i]) for i < n, by the loop of isa (which must be available). */
void fp8kv_cpu_encode_frexp(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, const float *x,
                            size_t n, uint8_t *q);

/* q[i] = the code of the f32 with bits first + i, for i < n (first + n at most 2^32), by the
 * bits or the frexp codec and the loop of isa: the codes of consecutive inputs (a sweep's),
 * made without an array of them. */
void fp8kv_cpu_encode_bits_range(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, uint32_t first,
                                 size_t n, uint8_t *q);
void fp8kv_cpu_encode_frexp_range(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, uint32_t first,
                                  size_t n, uint8_t *q);

#ifdef __cplusplus
}
#endif

#endif
