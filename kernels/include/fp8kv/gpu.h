/* fp8kv/gpu.h — the device kernels of kernels/hip/, callable from C.
 *
 * Subjects under test on a GPU (DESIGN.md §4): the device codecs, the exhaustive sweep kernel,
 * the KV-cache store / read / attention kernels, and their benchmarks. Built from one
 * set of .hip sources by hipcc (AMD) or nvcc (NVIDIA, through kernels/hip/hip_compat.h) into
 * the static library fp8kv_kernels_gpu; implemented with extern "C" linkage.
 *
 * Like every subject, nothing here sees the oracle or the checks: the sweep kernel is handed
 * its judging table (runs) as data, and reports what it found.
 *
 * Conventions: functions return 0 or a negative enum fp8kv_status (fp8kv/diag.h):
 * FP8KV_ERR_SUBJECT when a runtime call or a kernel failed, FP8KV_ERR for unusable arguments,
 * FP8KV_UNAVAILABLE when no usable device or path is there; the one-line message is
 * fp8kv_last_error()'s. Every runtime call is checked, with its file:line. Pointers are
 * host pointers unless a name says otherwise: the functions copy to and from device memory
 * inside. One device is "open" per process (fp8kv_gpu_open); every other call uses it.
 */
#ifndef FP8KV_GPU_H
#define FP8KV_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block_codec.h"
#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/kv_cache.h"
#include "fp8kv/subject.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------------------------- */

/* fp8kv_gpu_error_count: device failures recorded since the process started (each also
 * returned as a status, with its message, e.g. "kernels/hip/store.hip:212: hipMalloc(&d_key,
 * bytes): out of memory"). A run compares the count before and after each profile. */
unsigned long fp8kv_gpu_error_count(void);

/* ---- devices ------------------------------------------------------------------------------ */

/* What a report says about the device and the build of its kernels. */
struct fp8kv_gpu_device_info {
    int index;
    char target[32];    /* "sm_90" from the compute capability, "gfx942" from the arch name */
    char name[128];     /* the device's name */
    char runtime[160];  /* runtime and driver versions */
    char compiler[160]; /* the toolchain that built the kernels */
    char flags[320];    /* its device compile flags (contraction off for the codec paths) */
    int multiprocessors;
    size_t global_memory;
    unsigned codec_mask;   /* bit c: device codec c was compiled for this device (the probe) */
    unsigned decoder_mask; /* bit d: device decoder d was compiled for it */
    char compiled[384];    /* the codec and decoder paths compiled for it, in words */
};

/* fp8kv_gpu_device_count: the number of devices (0 with a message when there is no driver or
 * no device). Never negative. */
int fp8kv_gpu_device_count(void);

/* fp8kv_gpu_open: makes device index current, checks that this build has kernels for it (a
 * probe kernel runs and reports which codec paths its device pass compiled), and fills info.
 * 0, FP8KV_UNAVAILABLE (no such device, no kernel image for it) or FP8KV_ERR_SUBJECT. */
int fp8kv_gpu_open(int index, struct fp8kv_gpu_device_info *info);

/* ---- device codecs ------------------------------------------------------------------------ */

enum fp8kv_gpu_codec_id {
    FP8KV_GPU_CODEC_BITS,                   /* fp8kv_encode_bits of codec.h */
    FP8KV_GPU_CODEC_FREXP,                  /* fp8kv_encode_frexp of codec.h (device libm) */
    FP8KV_GPU_CODEC_PTX_CVT_SATFINITE,      /* sm_89+: inline PTX cvt.rn.satfinite.e4m3x2.f32 */
    FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE,     /* cuda_fp8.h __nv_cvt_float_to_fp8(__NV_SATFINITE,
                                               __NV_E4M3) */
    FP8KV_GPU_CODEC_CUDA_FP8_NOSAT,         /* cuda_fp8.h __nv_cvt_float_to_fp8(__NV_NOSAT,
                                               __NV_E4M3) */
    FP8KV_GPU_CODEC_AMD_PK_FP8_FNUZ,        /* gfx940-942: __builtin_amdgcn_cvt_pk_fp8_f32 (FNUZ) */
    FP8KV_GPU_CODEC_AMD_PK_FP8_OCP,         /* gfx950, gfx12: the same builtin, OCP e4m3fn */
    FP8KV_GPU_CODEC_PTX_CVT_SATFINITE_E5M2, /* sm_89+: cvt.rn.satfinite.e5m2x2.f32 */
    FP8KV_GPU_CODEC_CUDA_FP8_SATFINITE_E5M2, /* __nv_cvt_float_to_fp8(__NV_SATFINITE, __NV_E5M2) */
    FP8KV_GPU_CODEC_CUDA_FP8_NOSAT_E5M2,     /* __nv_cvt_float_to_fp8(__NV_NOSAT, __NV_E5M2) */
    FP8KV_GPU_CODEC_AMD_PK_BF8_FNUZ,         /* gfx940-942: __builtin_amdgcn_cvt_pk_bf8_f32
                                                (e5m2fnuz) */
    FP8KV_GPU_CODEC_AMD_PK_BF8_OCP,          /* gfx950, gfx12: the same builtin, OCP e5m2 */
    FP8KV_GPU_CODEC_COUNT
};

/* A device codec and what it claims: the built-in codecs follow struct fp8kv_codec_cfg in
 * every choice (FP8KV_CLAIM_ALL); a vendor conversion has fixed semantics, its claim. vendor: a
 * conversion the vendor's toolchain or hardware provides (judged under NaN check strict and
 * class, so that a NaN-sign difference shows and is told apart from a wrong value). */
struct fp8kv_gpu_codec {
    const char *name;
    const char *description;
    int vendor;
    struct fp8kv_claim claim;
};

extern const struct fp8kv_gpu_codec fp8kv_gpu_codecs[FP8KV_GPU_CODEC_COUNT];

/* fp8kv_gpu_codec_by_name: the codec id so named, or -1. */
int fp8kv_gpu_codec_by_name(const char *name);

/* fp8kv_gpu_codec_available: 1 when codec was compiled for the open device. */
int fp8kv_gpu_codec_available(int codec);

/* fp8kv_gpu_encode: q[i] = the codec's code of x[i] stored at scale s under cfg (cfg.model
 * selects the scale model, as fp8kv_store_f32; an input NaN reaches the conversion unchanged:
 * GPU arithmetic would replace it by the canonical NaN and lose its sign). */
int fp8kv_gpu_encode(int codec, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                     uint8_t *q);

enum fp8kv_gpu_decoder_id {
    FP8KV_GPU_DECODE_BITS,     /* fp8kv_decode_bits of codec.h */
    FP8KV_GPU_DECODE_TABLE,    /* a 256-entry table in shared memory */
    FP8KV_GPU_DECODE_FAST,     /* the branch-free decode the KV kernels use */
    FP8KV_GPU_DECODE_CUDA_FP8, /* cuda_fp8.h __nv_cvt_fp8_to_halfraw (e4m3fn, e5m2), widened */
    FP8KV_GPU_DECODE_AMD_FNUZ, /* gfx940-942: __builtin_amdgcn_cvt_f32_fp8 / _bf8 (FNUZ) */
    FP8KV_GPU_DECODE_AMD_OCP,  /* gfx950, gfx12: the same builtins (OCP e4m3fn, e5m2) */
    FP8KV_GPU_DECODER_COUNT
};

/* A device decoder and what it claims (the format only: decoding has no other choice); vendor:
 * as struct fp8kv_gpu_codec's. */
struct fp8kv_gpu_decoder {
    const char *name;
    const char *description;
    int vendor;
    struct fp8kv_claim claim;
};

extern const struct fp8kv_gpu_decoder fp8kv_gpu_decoders[FP8KV_GPU_DECODER_COUNT];

/* fp8kv_gpu_decoder_available: 1 when decoder was compiled for the open device. */
int fp8kv_gpu_decoder_available(int decoder);

/* fp8kv_gpu_decode: y[i] = RN32(decode(q[i]) * s) on the device (a NaN code's NaN is passed
 * through unchanged, not multiplied). */
int fp8kv_gpu_decode(int decoder, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                     float *y);

/* ---- exhaustive sweeps ---------------------------------------------------------------------- */

/* The run table and the result are fp8kv/subject.h's (struct fp8kv_sweep_run, struct
 * fp8kv_sweep_result): the device sweep is the sweep entry point of the codecs' subjects. */

/* fp8kv_gpu_sweep: the inputs [lo, hi) of the domain (bit patterns 0 .. 2^32-1 or 0 .. 65535,
 * the 16-bit ones widened exactly to f32; hi 0: up to the domain's end) through the codec at
 * scale 1, judged against runs (nruns entries of the whole domain, starts increasing from 0,
 * classes < FP8KV_SWEEP_CLASSES). out->cases is hi - lo; its failures are the lowest-index ones
 * of the range. lo should be even: the codecs convert pairs (an even lo keeps the pairs of a
 * whole-domain sweep). */
int fp8kv_gpu_sweep(int codec, struct fp8kv_codec_cfg cfg, enum fp8kv_domain domain,
                    const struct fp8kv_sweep_run *runs, size_t nruns, uint64_t lo, uint64_t hi,
                    struct fp8kv_sweep_result *out);

/* ---- block codecs (block.hip) ---------------------------------------------------------------- */

/* fp8kv_gpu_block_encode: the header block codec (fp8kv/block_codec.h) under cfg on the device,
 * one thread per block: scales[nblocks], elements[nblocks * block_size] of x. */
int fp8kv_gpu_block_encode(struct fp8kv_bcodec_cfg cfg, const float *x, size_t nblocks,
                           uint8_t *scales, uint8_t *elements);

/* fp8kv_gpu_block_decode: y[nblocks * block_size], element codes under their block's scale. */
int fp8kv_gpu_block_decode(struct fp8kv_bcodec_cfg cfg, const uint8_t *scales,
                           const uint8_t *elements, size_t nblocks, float *y);

/* fp8kv_gpu_block_sweep: the element sweep on the device: every input sign | m, m in
 * [0, anchor], both signs, in blocks anchor, x1 .. x(block_size - 1) encoded by the header
 * codec under cfg, each block's scale against scale, its elements against runs[sign] (nruns
 * each, starts increasing from 0), the anchor's against anchor_code (fp8kv/subject.h's block
 * sweep: the run table and the result are its types). */
int fp8kv_gpu_block_sweep(struct fp8kv_bcodec_cfg cfg, uint8_t scale, uint32_t anchor,
                          uint8_t anchor_code, const struct fp8kv_block_run *const runs[2],
                          const int nruns[2], struct fp8kv_block_sweep_result *out);

/* ---- the device as subjects ------------------------------------------------------------------ */

/* fp8kv_gpu_subjects: the open device's subject table (fp8kv/subject.h) into *table: every
 * device codec compiled for it (encode, and sweeps judged on the device), the device decoders,
 * the KV kernels "gpu-kernels" (store with the bits codec, gather, attention) and the block
 * codec "gpu-block-codec". Returns the number of subjects (0 when no device is open). */
int fp8kv_gpu_subjects(const struct fp8kv_subject **table);

/* ---- device memory, for subjects that take device pointers -------------------------------- */

/* fp8kv_gpu_alloc: bytes (at least 1) of memory on the open device into *device; 0 or a
 * negative status. fp8kv_gpu_free releases it (NULL is fine). fp8kv_gpu_to_device and
 * fp8kv_gpu_to_host copy bytes (to_host after the device is idle); 0 or a negative status. */
int fp8kv_gpu_alloc(size_t bytes, void **device);
void fp8kv_gpu_free(void *device);
int fp8kv_gpu_to_device(void *device, const void *host, size_t bytes);
int fp8kv_gpu_to_host(void *host, const void *device, size_t bytes);

/* ---- the KV cache ---------------------------------------------------------------------------- */

/* The KV kernels, with the contracts of fp8kv/kv_cache.h (host pointers; copies inside); the
 * store with a device codec of choice. Each returns 0 or a negative status. */
int fp8kv_gpu_reshape_and_cache(int codec, struct fp8kv_codec_cfg cfg,
                                const struct fp8kv_cache_shape *shape, enum fp8kv_kv_dtype in,
                                const void *key, const void *value, int num_tokens,
                                const int64_t *slot_mapping, float k_scale, float v_scale,
                                uint8_t *key_cache, uint8_t *value_cache);

int fp8kv_gpu_gather_dequant(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                             int is_key, const uint8_t *cache, const int32_t *block_table,
                             int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                             float scale, enum fp8kv_kv_dtype out, void *dst);

/* Paged attention; partition: tokens per thread block of the first pass (0: the default
 * choice). Where every sequence fits one partition, the first pass writes out itself; else a
 * combining pass merges the partitions. */
int fp8kv_gpu_paged_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                              const float *query, int num_q_heads, const uint8_t *key_cache,
                              const uint8_t *value_cache, const int32_t *block_table,
                              int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                              float k_scale, float v_scale, float softmax_scale, int partition,
                              float *out);

/* The KV kernels as KV-ABI entry points on device memory (fp8kv/kv_plugin.h; kv_abi.hip): the
 * "gpu-kernels" subject's descriptor. Each returns 0 or a negative status. */
int fp8kv_gpu_kv_store(void *ctx, const struct fp8kv_kv_store_args_v1 *args);
int fp8kv_gpu_kv_gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *args);
int fp8kv_gpu_kv_attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *args);

/* ---- benchmarks ------------------------------------------------------------------------------ */

struct fp8kv_gpu_timing {
    double ms; /* median over the timed iterations (events) */
    double min_ms;
    double bytes; /* bytes a kernel must read and write, the figure GB/s is taken from */
    double gbps;  /* bytes / median time */
    int iterations;
    char what[256];
};

/* Device-to-device copy of bytes (cudaMemcpy/hipMemcpy): read + write bytes per copy. */
int fp8kv_gpu_bench_copy(size_t bytes, int iterations, struct fp8kv_gpu_timing *t);

/* Read-only streaming bandwidth: a kernel that reads `bytes` once (16-byte loads, a sum per
 * block written out), the yardstick of kernels that mostly read (attention). */
int fp8kv_gpu_bench_read(size_t bytes, int iterations, struct fp8kv_gpu_timing *t);

/* How evenly the multiprocessors stream: two blocks on each multiprocessor (held there by their
 * shared memory) read equal runs of a buffer of `bytes` at once, each timing itself on the device;
 * per multiprocessor, the mean time of its blocks over `iterations` launches (one untimed first).
 * A kernel of one wave of equal blocks ends with the slowest multiprocessor, so the spread says
 * how much such a kernel leaves idle on this device. NVIDIA only (%smid, %globaltimer): elsewhere
 * measured is 0 and what says why. Returns 0 or a negative status. */
struct fp8kv_gpu_sm_spread {
    int measured;
    int multiprocessors, reporting;   /* the device's, and those that ran a block */
    double min_us, median_us, max_us; /* per multiprocessor, a block's time for its run */
    int fast;                         /* multiprocessors within 5% of the fastest */
    char what[160];
};
int fp8kv_gpu_bench_sm_spread(size_t bytes, int iterations, struct fp8kv_gpu_sm_spread *s);

/* The store: num_tokens tokens of bf16 key and value [tokens, heads, head_size] into an fp8
 * NHD cache through a shuffled slot mapping, with device codec `codec` (e4m3fn satfinite,
 * f32_div). */
int fp8kv_gpu_bench_store(int codec, int num_tokens, int num_heads, int head_size, int block_size,
                          int iterations, struct fp8kv_gpu_timing *t);

/* Gather + dequant of the same cache shape into bf16 (key and value). */
int fp8kv_gpu_bench_gather(int num_tokens, int num_heads, int head_size, int block_size,
                           int iterations, struct fp8kv_gpu_timing *t);

/* The pass-1 kernel a benchmark of attention runs: the plan's choice, or one named. */
enum fp8kv_gpu_attention_kernel {
    FP8KV_GPU_ATTENTION_PLANNED = 0,
    FP8KV_GPU_ATTENTION_MMA = 1,    /* "nhd128-mma": tensor cores (NVIDIA sm_89+) */
    FP8KV_GPU_ATTENTION_STAGED = 2, /* "nhd128-staged": CUDA cores */
    FP8KV_GPU_ATTENTION_SPLIT = 3   /* "split-k": the general kernel */
};

/* Paged attention over num_seqs sequences of seq_len tokens, with an fp8 (cache_fp8 = 1) or a
 * bf16 cache (cache_fp8 = 0) of the same shape: the same kernel template, half the KV bytes
 * with fp8, pass-1 kernel `kernel` (enum fp8kv_gpu_attention_kernel; an error where it does
 * not take the shape). queries: each sequence's last `queries` tokens are queries, causal (1: a
 * decode step; seq_len: a causal prefill). out_checksum (may be NULL) receives the sum of
 * |output| (a sanity figure: finite, and close between the two caches, which hold the same
 * values). */
int fp8kv_gpu_bench_attention(int cache_fp8, int kernel, int num_seqs, int seq_len, int queries,
                              int num_kv_heads, int num_q_heads, int head_size, int block_size,
                              int iterations, struct fp8kv_gpu_timing *t, double *out_checksum);

/* The block codec's encode (fp8kv/block_codec.h, one thread per block) of `values` random f32
 * values (uniform in [-4, 4), generated on the device) under cfg; bytes: f32 in, codes out. */
int fp8kv_gpu_bench_block(struct fp8kv_bcodec_cfg cfg, size_t values, int iterations,
                          struct fp8kv_gpu_timing *t);

/* ---- the attention plan -------------------------------------------------------------------- */

/* fp8kv_gpu_attention_plan: the name of the configuration fp8kv_gpu_paged_attention (cache_fp8
 * = 1) or the benchmark's bf16 baseline (cache_fp8 = 0) runs for these arguments, computed by
 * the plan its launcher uses: the pass-1 kernel ("nhd128-mma": the NHD head-128 path on the
 * tensor cores, NVIDIA sm_89+ with an e4m3fn or bf16 cache; "nhd128-staged": the same shapes on
 * the CUDA cores elsewhere; "split-k": the general kernel, with its elements per lane), the q
 * heads per thread block and
 * the partition, e.g. "nhd128-staged gb4 partition 1536", "split-k vec8 gb2 partition 256";
 * "none (no sequences)" for num_seqs 0. max_seq_len: the longest sequence; partition as
 * fp8kv_gpu_paged_attention's (0: the default). Writes at most size bytes (a terminated
 * string) to name. Needs the open device (the default partition of the fast path depends on
 * its occupancy). Returns 0, or a negative status with a message (an unusable shape, as the
 * launcher reports it). */
int fp8kv_gpu_attention_plan(int cache_fp8, struct fp8kv_codec_cfg cfg,
                             const struct fp8kv_cache_shape *shape, int num_q_heads, int num_seqs,
                             int max_seq_len, int partition, char *name, size_t size);

#ifdef __cplusplus
}
#endif
#endif
