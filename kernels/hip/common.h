/* common.h — what the .hip files of fp8kv_kernels_gpu share on the host side: device buffers
 * that free themselves, event timing, launch sizes, and the open device's facts. Internal: not
 * part of fp8kv/gpu.h. */
#ifndef FP8KV_HIP_COMMON_H
#define FP8KV_HIP_COMMON_H

#include "device_codecs.h"

#include <stddef.h>
#include <stdint.h>

namespace fp8kv_gpu
{

/* The open device (runtime.hip). */
struct device_state {
    int open; /* fp8kv_gpu_open succeeded */
    int index;
    int multiprocessors;
    int max_shared_per_block; /* with opt-in */
    unsigned codec_mask;
    unsigned decoder_mask;
};
extern device_state g_device;

/* require_open: FP8KV_UNAVAILABLE with a message unless a device is open; else makes it the
 * calling thread's current device (a worker thread starts on device 0). */
int require_open(const char *what);

/* fail: records a message (no runtime error behind it: unusable arguments) and returns
 * FP8KV_ERR. */
int fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define FP8KV_FAIL(...) ::fp8kv_gpu::fail(__FILE__, __LINE__, __VA_ARGS__)

/* A device allocation, freed when it goes out of scope. */
struct buffer {
    void *ptr = nullptr;
    size_t bytes = 0;
    buffer() = default;
    buffer(const buffer &) = delete;
    buffer &operator=(const buffer &) = delete;
    ~buffer();
    int alloc(size_t n);                      /* n bytes (at least 1) */
    int upload(const void *host, size_t n);   /* alloc(n), then copy n bytes in */
    int download(void *host, size_t n) const; /* copy the first n bytes out */
    template <typename T> T *as() const
    {
        return static_cast<T *>(ptr);
    }
};

/* Event timing of what is launched between start() and stop(). */
struct timer {
    hipEvent_t begin = nullptr, end = nullptr;
    timer() = default;
    timer(const timer &) = delete;
    timer &operator=(const timer &) = delete;
    ~timer();
    int start();
    int stop(double *ms); /* waits for the end event */
};

/* blocks_for: ceil(n / threads), at least 1, capped at cap. */
inline unsigned blocks_for(uint64_t n, unsigned threads, unsigned cap)
{
    uint64_t b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    return (unsigned)(b > cap ? cap : b);
}

/* The dynamic shared memory a kernel gets without the opt-in (hipFuncSetAttribute's
 * hipFuncAttributeMaxDynamicSharedMemorySize raises it). */
constexpr size_t DEFAULT_SHARED = 48 * 1024;

/* resident_blocks_of: blocks of kernel fn (`threads` each, `shared` dynamic bytes) the open
 * device keeps resident per multiprocessor, at least 1 (1 when the runtime cannot say). A grid
 * of exactly that many per multiprocessor gives every multiprocessor the same share of a
 * grid-stride loop; any other count leaves some with one block more than others. */
template <typename F> int resident_blocks_of(F fn, int threads, size_t shared)
{
    int n = 0;
#if defined(__CUDACC__) && !defined(__HIPCC__)
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, threads, shared) != cudaSuccess)
#else
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, reinterpret_cast<const void *>(fn),
                                                     threads, shared) != hipSuccess)
#endif
        n = 1;
    return n < 1 ? 1 : n;
}

/* The threads an NVIDIA multiprocessor holds in this device pass (sm_86/87/89: 1536, the
 * others: 2048), and nv_min_blocks(n): n as the minimum of blocks per multiprocessor a kernel
 * asks __launch_bounds__ for on NVIDIA device passes, 1 elsewhere (the host pass; HIP, whose
 * second __launch_bounds__ argument counts warps per execution unit instead). */
#if defined(__CUDA_ARCH__) && !defined(__HIPCC__)
constexpr int NV_SM_THREADS =
    __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 ? 1536 : 2048;
constexpr int nv_min_blocks(int n)
{
    return n;
}
#else
constexpr int NV_SM_THREADS = 2048;
constexpr int nv_min_blocks(int)
{
    return 1;
}
#endif

/* Widening of an input element, exact (codec.h). */
template <int DTYPE> __device__ __forceinline__ float widen(const void *base, size_t i);
template <> __device__ __forceinline__ float widen<FP8KV_KV_F32>(const void *base, size_t i)
{
    return static_cast<const float *>(base)[i];
}
template <> __device__ __forceinline__ float widen<FP8KV_KV_F16>(const void *base, size_t i)
{
    return fp8kv_f16_to_f32(static_cast<const uint16_t *>(base)[i]);
}
template <> __device__ __forceinline__ float widen<FP8KV_KV_BF16>(const void *base, size_t i)
{
    return fp8kv_bf16_to_f32(static_cast<const uint16_t *>(base)[i]);
}

/* The same from the raw bytes of one element (already loaded). */
template <int DTYPE> __device__ __forceinline__ float widen_raw(const uint8_t *raw)
{
    if (DTYPE == FP8KV_KV_F32) {
        uint32_t b;
        memcpy(&b, raw, 4);
        return __uint_as_float(b);
    }
    uint16_t h;
    memcpy(&h, raw, 2);
    return DTYPE == FP8KV_KV_F16 ? fp8kv_f16_to_f32(h) : fp8kv_bf16_to_f32(h);
}

/* Device forms of the layout rules of kv_cache.c (element offsets). */
__device__ __forceinline__ size_t key_offset(const struct fp8kv_cache_shape &s, int64_t slot,
                                             int head, int dim)
{
    const size_t bs = (size_t)s.block_size, heads = (size_t)s.num_heads, hs = (size_t)s.head_size;
    if (s.layout == FP8KV_LAYOUT_SPLIT_X) {
        const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
        const size_t chunks = hs / FP8KV_SPLIT_X;
        const size_t chunk = (size_t)dim / FP8KV_SPLIT_X, lane = (size_t)dim % FP8KV_SPLIT_X;
        return (((block * heads + (size_t)head) * chunks + chunk) * bs + pos) * FP8KV_SPLIT_X +
               lane;
    }
    if (s.layout == FP8KV_LAYOUT_HND) { /* [block][head][pos][dim] */
        const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
        return ((block * heads + (size_t)head) * bs + pos) * hs + (size_t)dim;
    }
    return ((size_t)slot * heads + (size_t)head) * hs + (size_t)dim;
}

__device__ __forceinline__ size_t value_offset(const struct fp8kv_cache_shape &s, int64_t slot,
                                               int head, int dim)
{
    const size_t bs = (size_t)s.block_size, heads = (size_t)s.num_heads, hs = (size_t)s.head_size;
    if (s.layout == FP8KV_LAYOUT_SPLIT_X) {
        const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
        return ((block * heads + (size_t)head) * hs + (size_t)dim) * bs + pos;
    }
    if (s.layout == FP8KV_LAYOUT_HND) /* the key's layout */
        return key_offset(s, slot, head, dim);
    return ((size_t)slot * heads + (size_t)head) * hs + (size_t)dim;
}

/* shift_of: log2(n) when n is a power of two, else -1 (a block size's shift, so that the
 * kernels split positions with a shift where they can instead of a division). */
inline int shift_of(int n)
{
    for (int b = 0; b < 31; b++)
        if (n == 1 << b)
            return b;
    return -1;
}

/* vec_of: the widest of 16, 8, 1 elements that divides head_size (and, for the split-x
 * layout, 16), capped at max_vec: a thread's contiguous run of dimensions. */
inline int vec_of(int head_size, int max_vec)
{
    if (head_size % 16 == 0 && max_vec >= 16)
        return 16;
    if (head_size % 8 == 0 && max_vec >= 8)
        return 8;
    return 1;
}

/* checks a cache shape and counts; FP8KV_ERR with a message when unusable. */
int check_shape(const struct fp8kv_cache_shape *shape, const char *what);

/* Kernels of one file used by another (bench.hip). */
int launch_store(int codec, struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                 int in, const void *d_key, const void *d_value, int num_tokens,
                 const int64_t *d_slots, float k_scale, float v_scale, uint8_t *d_key_cache,
                 uint8_t *d_value_cache);
/* One side of a gather: a cache (key: is_key 1, value: 0), its scale, the output rows. */
struct gather_side {
    const uint8_t *cache;
    uint8_t *dst;
    float scale;
    int is_key;
};
struct gather_sides {
    gather_side side[2];
};
/* launch_gather: gathers and dequantizes sides.side[0 .. nsides) (nsides 1 or 2: key and value
 * in one launch) into `out` elements, by block table (no synchronization): the output rows of
 * sequence i are rows d_row_start[i] .. d_row_start[i + 1] - 1 of total_rows
 * (= d_row_start[num_seqs]). */
int launch_gather(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                  const gather_sides &sides, int nsides, const int32_t *d_block_table,
                  int max_blocks_per_seq, const int64_t *d_row_start, int num_seqs,
                  int64_t total_rows, int out);
/* cache_bf16: the cache holds bf16 elements (the baseline of the benchmark) instead of fp8.
 * kernel: FP8KV_ATTENTION_AUTO (the plan's choice), or the one the benchmark measures against
 * it (an error where the shape or device does not take it). */
enum {
    FP8KV_ATTENTION_AUTO = FP8KV_GPU_ATTENTION_PLANNED,
    FP8KV_ATTENTION_MMA = FP8KV_GPU_ATTENTION_MMA,
    FP8KV_ATTENTION_STAGED = FP8KV_GPU_ATTENTION_STAGED,
    FP8KV_ATTENTION_SPLIT = FP8KV_GPU_ATTENTION_SPLIT
};
/* attention_plan_name: the name of the plan launch_attention runs for these arguments (the
 * default partition), as fp8kv_gpu_attention_plan reports it. */
int attention_plan_name(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                        int cache_bf16, int num_q_heads, int num_seqs, int max_seq_len, int kernel,
                        char *name, size_t size);
/* Several queries a sequence (multi-token decode, prefill, a sliding window) as launch_attention
 * takes them: query row i (the rows of d_query and d_out) is a query of sequence seq[i] (its
 * block-table row) over its tokens first[i] .. d_seq_lens[i] - 1; device arrays of num_seqs
 * (query rows) entries. Both NULL: row i is sequence i over its first d_seq_lens[i] tokens (a
 * decode step). max_seq_len is then the most tokens one row attends to. */
struct query_rows {
    const int32_t *seq = nullptr, *first = nullptr;
};
int launch_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                     int cache_bf16, const float *d_query, int num_q_heads, const void *d_key_cache,
                     const void *d_value_cache, const int32_t *d_block_table,
                     int max_blocks_per_seq, const int32_t *d_seq_lens, int num_seqs,
                     int max_seq_len, float k_scale, float v_scale, float softmax_scale,
                     int partition, int kernel, float *d_out, buffer &scratch,
                     const query_rows &rows = query_rows());

/* launch_block_encode: the encode kernel of block.hip over nblocks blocks of device memory x
 * into device scales and elements (no synchronization). */
int launch_block_encode(struct fp8kv_bcodec_cfg cfg, const float *x, size_t nblocks,
                        uint8_t *scales, uint8_t *elements);

} // namespace fp8kv_gpu

#endif
