/* bench.hip — the GPU performance figures, measured with events on the open device:
 * device-to-device copy and read-only streaming bandwidth (the yardsticks), the bf16 store into
 * an fp8 cache, gather + dequant back to bf16, and paged attention over an fp8 and a bf16 cache
 * of the same shape.
 *
 * Each figure is the median of `iterations` timed launches after two untimed ones, each launch
 * queued behind a short device-side hold so that its events time the device's work, not the
 * host's launch latency (time_median), with the number of bytes the operation must move (inputs
 * read + outputs written, the index tables included), so GB/s compares directly with the copy's.
 * Data are generated on the device from a hash of the index (fixed seeds): no host transfer in the
 * timed region.
 */
#include "common.h"

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <vector>

using namespace fp8kv_gpu;

namespace
{

__device__ __forceinline__ uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* a uniform value in [-amp, amp) from the hash of (seed, i) */
__device__ __forceinline__ float uniform(uint64_t seed, uint64_t i, float amp)
{
    return ((float)(mix(seed * 0x100000001B3ull + i) >> 40) * 0x1p-24f * 2.0f - 1.0f) * amp;
}

__global__ void fill_bf16(uint16_t *x, size_t n, uint64_t seed, float amp)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = fp8kv_f32_to_bf16_rne(uniform(seed, i, amp));
}

__global__ void fill_f32(float *x, size_t n, uint64_t seed, float amp)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = uniform(seed, i, amp);
}

/* an e4m3fn cache of random finite codes, and (when bf16 is not NULL) the same values as bf16 */
__global__ void fill_cache(uint8_t *fp8, uint16_t *bf16, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint8_t code = (uint8_t)mix(seed * 0x100000001B3ull + i);
        if (fp8kv_format_is_nan_code(FP8KV_CODEC_E4M3FN, code))
            code ^= 0x01u; /* no NaN: 0x7F -> 0x7E */
        fp8[i] = code;
        if (bf16) /* e4m3 values are exact in bf16 */
            bf16[i] = (uint16_t)(__float_as_uint(decode_fast<FP8KV_CODEC_E4M3FN>(code)) >> 16);
    }
}

constexpr unsigned FILL_THREADS = 256, FILL_BLOCKS = 4096;

/* A block table of num_blocks physical blocks in a fixed shuffled order. */
std::vector<int32_t> shuffled_blocks(int num_blocks, uint64_t seed)
{
    std::vector<int32_t> b((size_t)num_blocks);
    for (int i = 0; i < num_blocks; i++)
        b[(size_t)i] = i;
    uint64_t s = seed;
    for (int i = num_blocks - 1; i > 0; i--) { /* Fisher-Yates, xorshift64 */
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        std::swap(b[(size_t)i], b[(size_t)(s % (uint64_t)(i + 1))]);
    }
    return b;
}

/* hold_device: one thread spinning for `cycles` device clock cycles. Launched ahead of a timed
 * operation, it keeps the device busy while the host enqueues the start event, the operation
 * and the end event: the events then bracket the device's time for the operation alone, not
 * the host's latency in launching it. */
__global__ void hold_device(long long cycles)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

/* The hold's first length in device cycles (about 0.1 ms at 2 GHz; a few times the host's
 * longest launch sequence here), and its longest: a sample whose start event the device had
 * already reached when the host finished enqueuing the operation is timed again with twice the
 * hold, up to the longest, where the sample is kept as it is (an overestimate). */
constexpr long long HOLD_CYCLES = 200000, HOLD_CYCLES_MAX = 200000LL << 8;

/* Times fn over iterations launches (two untimed first), each behind a hold_device; median
 * and min into t. */
template <typename F> int time_median(int iterations, F fn, struct fp8kv_gpu_timing *t)
{
    int rc;
    for (int i = 0; i < 2; i++)
        if ((rc = fn()) != 0)
            return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    std::vector<double> ms;
    timer tm;
    long long hold = HOLD_CYCLES;
    for (int i = 0; i < iterations; i++) {
        double one = 0.0;
        for (;;) {
            hold_device<<<1, 1>>>(hold);
            FP8KV_GPU_CHECK_LAUNCH();
            if ((rc = tm.start()) != 0 || (rc = fn()) != 0)
                return rc;
            const hipError_t reached = hipEventQuery(tm.begin); /* hipSuccess: too late */
            if (reached == hipErrorNotReady)
                (void)hipGetLastError(); /* not an error: the device is still holding */
            else
                FP8KV_GPU_CHECK(reached);
            if ((rc = tm.stop(&one)) != 0)
                return rc;
            if (reached == hipErrorNotReady || hold >= HOLD_CYCLES_MAX)
                break;
            hold *= 2;
        }
        ms.push_back(one);
    }
    std::sort(ms.begin(), ms.end());
    t->iterations = iterations;
    t->min_ms = ms.front();
    t->ms = ms[ms.size() / 2];
    t->gbps = t->bytes / (t->ms * 1e-3) / 1e9;
    return FP8KV_OK;
}

int bench_setup(const char *what, int iterations, struct fp8kv_gpu_timing *t)
{
    memset(t, 0, sizeof *t);
    int rc = require_open(what);
    if (rc != 0)
        return rc;
    if (iterations < 1)
        return FP8KV_FAIL("%s: %d iterations", what, iterations);
    return FP8KV_OK;
}

/* The cache of the store and gather benchmarks, filled by a store of random bf16 input. */
struct store_setup {
    struct fp8kv_cache_shape shape;
    buffer key, value, slots, kc, vc;
    size_t elems = 0;
    int setup(int num_tokens, int num_heads, int head_size, int block_size)
    {
        shape = {(num_tokens + block_size - 1) / block_size,
                 block_size,
                 num_heads,
                 head_size,
                 FP8KV_LAYOUT_NHD,
                 FP8KV_PACKING_SEPARATE};
        int rc = check_shape(&shape, "bench");
        if (rc != 0)
            return rc;
        elems = (size_t)num_tokens * num_heads * head_size;
        const std::vector<int32_t> blocks = shuffled_blocks(shape.num_blocks, 0x5EED);
        std::vector<int64_t> slot((size_t)num_tokens);
        for (int t = 0; t < num_tokens; t++)
            slot[(size_t)t] =
                (int64_t)blocks[(size_t)(t / block_size)] * block_size + t % block_size;
        if ((rc = key.alloc(elems * 2)) != 0 || (rc = value.alloc(elems * 2)) != 0 ||
            (rc = slots.upload(slot.data(), slot.size() * sizeof(int64_t))) != 0 ||
            (rc = kc.alloc(fp8kv_cache_bytes(&shape))) != 0 ||
            (rc = vc.alloc(fp8kv_cache_bytes(&shape))) != 0)
            return rc;
        fill_bf16<<<FILL_BLOCKS, FILL_THREADS>>>(key.as<uint16_t>(), elems, 1, 3.0f);
        fill_bf16<<<FILL_BLOCKS, FILL_THREADS>>>(value.as<uint16_t>(), elems, 2, 3.0f);
        FP8KV_GPU_CHECK_LAUNCH();
        return FP8KV_OK;
    }
    int store(int codec, int num_tokens)
    {
        const struct fp8kv_codec_cfg cfg = {FP8KV_CODEC_E4M3FN, 1, 0, FP8KV_CODEC_F32_DIV};
        return launch_store(codec, cfg, shape, FP8KV_KV_BF16, key.ptr, value.ptr, num_tokens,
                            slots.as<int64_t>(), 0.0123f, 0.0123f, kc.as<uint8_t>(),
                            vc.as<uint8_t>());
    }
};

} // namespace

extern "C" int fp8kv_gpu_bench_copy(size_t bytes, int iterations, struct fp8kv_gpu_timing *t)
{
    int rc = bench_setup("fp8kv_gpu_bench_copy", iterations, t);
    if (rc != 0)
        return rc;
    buffer src, dst;
    if ((rc = src.alloc(bytes)) != 0 || (rc = dst.alloc(bytes)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipMemset(src.ptr, 0x3C, bytes));
    t->bytes = 2.0 * (double)bytes;
    snprintf(t->what, sizeof t->what, "device-to-device copy of %.0f MiB (read + write)",
             (double)bytes / 1048576.0);
    return time_median(
        iterations,
        [&]() -> int {
            FP8KV_GPU_CHECK(hipMemcpy(dst.ptr, src.ptr, bytes, hipMemcpyDeviceToDevice));
            return FP8KV_OK;
        },
        t);
}

namespace
{
/* A read kernel's thread's sum of its words, added into the block's sum (so that the loads
 * cannot be dropped). */
__device__ __forceinline__ void keep_sum(uint32_t acc, uint32_t *block_sum)
{
    for (int m = 16; m > 0; m /= 2)
        acc += FP8KV_SHFL_XOR(acc, m);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(block_sum, acc);
}

/* Reads n 16-byte words once; one sum per block. */
__global__ void read_once(const uint4 *x, size_t n, uint32_t *out)
{
    uint32_t acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint4 w = x[i];
        acc += w.x ^ w.y ^ w.z ^ w.w;
    }
    keep_sum(acc, &out[blockIdx.x]);
}

/* Each block reads its own run of `words` 16-byte words and its thread 0 records where and how
 * long: spans[2 b] the multiprocessor (%smid), spans[2 b + 1] the nanoseconds from the block's
 * start to its last load (%globaltimer). CUDA only. */
#if defined(__CUDACC__) && !defined(__HIPCC__)
__global__ void __launch_bounds__(256)
    read_share_timed(const uint4 *x, size_t words, uint32_t *sums, unsigned long long *spans)
{
#ifdef __CUDA_ARCH__
    unsigned long long start, end;
    unsigned sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    /* SPREAD_LOADS independent loads a thread: 128 KiB in flight per multiprocessor, enough to
     * stream at the memory's pace rather than at its latency's */
    constexpr int SPREAD_LOADS = 16;
    const uint4 *mine = x + blockIdx.x * words;
    uint32_t acc = 0;
    for (size_t i0 = 0; i0 < words; i0 += (size_t)SPREAD_LOADS * blockDim.x) {
        uint4 w[SPREAD_LOADS];
#pragma unroll
        for (int k = 0; k < SPREAD_LOADS; k++) {
            const size_t i = i0 + (size_t)k * blockDim.x + threadIdx.x;
            w[k] = i < words ? mine[i] : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int k = 0; k < SPREAD_LOADS; k++)
            acc += w[k].x ^ w[k].y ^ w[k].z ^ w[k].w;
    }
    keep_sum(acc, &sums[blockIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        spans[2 * blockIdx.x] = sm;
        spans[2 * blockIdx.x + 1] = end - start;
    }
#else
    (void)x, (void)words, (void)sums, (void)spans;
#endif
}
#endif
} // namespace

extern "C" int fp8kv_gpu_bench_sm_spread(size_t bytes, int iterations,
                                         struct fp8kv_gpu_sm_spread *s)
{
    memset(s, 0, sizeof *s);
    int rc = require_open("fp8kv_gpu_bench_sm_spread");
    if (rc != 0)
        return rc;
    if (iterations < 1)
        return FP8KV_FAIL("fp8kv_gpu_bench_sm_spread: %d iterations", iterations);
    s->multiprocessors = g_device.multiprocessors;
#if !(defined(__CUDACC__) && !defined(__HIPCC__))
    (void)bytes;
    snprintf(s->what, sizeof s->what,
             "not measured (the probe reads NVIDIA's %%smid and %%globaltimer)");
    return FP8KV_OK;
#else
    /* two blocks per multiprocessor, held there by their shared memory (three would not fit) */
    const size_t shared = (size_t)g_device.max_shared_per_block * 2 / 5;
    if (shared > DEFAULT_SHARED)
        FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(read_share_timed),
                                            hipFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)shared));
    if (resident_blocks_of(read_share_timed, 256, shared) != 2) {
        snprintf(s->what, sizeof s->what,
                 "not measured (two blocks of %zu shared bytes per multiprocessor do not fit)",
                 shared);
        return FP8KV_OK;
    }
    const int sms = g_device.multiprocessors, blocks = 2 * sms;
    const size_t words = bytes / 16 / (size_t)blocks;
    buffer src, sums, spans;
    if ((rc = src.alloc(words * 16 * blocks)) != 0 ||
        (rc = sums.alloc(blocks * sizeof(uint32_t))) != 0 ||
        (rc = spans.alloc(2 * blocks * sizeof(unsigned long long))) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipMemset(src.ptr, 0x3C, words * 16 * blocks));
    FP8KV_GPU_CHECK(hipMemset(sums.ptr, 0, blocks * sizeof(uint32_t)));
    std::vector<double> total((size_t)sms, 0.0);
    std::vector<int> count((size_t)sms, 0);
    std::vector<unsigned long long> h(2 * (size_t)blocks);
    for (int it = -1; it < iterations; it++) { /* one untimed first */
        read_share_timed<<<blocks, 256, shared>>>(src.as<uint4>(), words, sums.as<uint32_t>(),
                                                  spans.as<unsigned long long>());
        FP8KV_GPU_CHECK_LAUNCH();
        if ((rc = spans.download(h.data(), h.size() * sizeof h[0])) != 0)
            return rc;
        for (int b = 0; it >= 0 && b < blocks; b++)
            if (h[2 * (size_t)b] < (unsigned long long)sms) {
                total[h[2 * (size_t)b]] += (double)h[2 * (size_t)b + 1] * 1e-3;
                count[h[2 * (size_t)b]]++;
            }
    }
    std::vector<double> us;
    for (int m = 0; m < sms; m++)
        if (count[(size_t)m] > 0)
            us.push_back(total[(size_t)m] / count[(size_t)m]);
    if (us.empty()) {
        snprintf(s->what, sizeof s->what, "not measured (no block reported its multiprocessor)");
        return FP8KV_OK;
    }
    std::sort(us.begin(), us.end());
    s->measured = 1;
    s->reporting = (int)us.size();
    s->min_us = us.front();
    s->median_us = us[us.size() / 2];
    s->max_us = us.back();
    for (double u : us)
        s->fast += u <= 1.05 * s->min_us;
    snprintf(s->what, sizeof s->what,
             "2 blocks on each multiprocessor read %.0f MiB at once, %.1f MiB each (%d runs)",
             (double)words * 16 * blocks / 1048576.0, (double)words * 16 / 1048576.0, iterations);
    return FP8KV_OK;
#endif
}

extern "C" int fp8kv_gpu_bench_read(size_t bytes, int iterations, struct fp8kv_gpu_timing *t)
{
    int rc = bench_setup("fp8kv_gpu_bench_read", iterations, t);
    if (rc != 0)
        return rc;
    const size_t words = bytes / 16;
    const unsigned blocks = (unsigned)std::max(1, g_device.multiprocessors * 8);
    buffer src, sums;
    if ((rc = src.alloc(words * 16)) != 0 || (rc = sums.alloc(blocks * sizeof(uint32_t))) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipMemset(src.ptr, 0x3C, words * 16));
    FP8KV_GPU_CHECK(hipMemset(sums.ptr, 0, blocks * sizeof(uint32_t)));
    t->bytes = (double)words * 16;
    snprintf(t->what, sizeof t->what, "read-only streaming of %.0f MiB (16-byte loads, a sum)",
             (double)words * 16 / 1048576.0);
    return time_median(
        iterations,
        [&]() -> int {
            read_once<<<blocks, 256>>>(src.as<uint4>(), words, sums.as<uint32_t>());
            FP8KV_GPU_CHECK_LAUNCH();
            return FP8KV_OK;
        },
        t);
}

extern "C" int fp8kv_gpu_bench_store(int codec, int num_tokens, int num_heads, int head_size,
                                     int block_size, int iterations, struct fp8kv_gpu_timing *t)
{
    int rc = bench_setup("fp8kv_gpu_bench_store", iterations, t);
    if (rc != 0)
        return rc;
    if (!fp8kv_gpu_codec_available(codec))
        return FP8KV_FAIL("bench store: device codec %d is not compiled for this device", codec);
    store_setup s;
    if ((rc = s.setup(num_tokens, num_heads, head_size, block_size)) != 0)
        return rc;
    /* bf16 key + value read, fp8 key + value written, the slot mapping read */
    t->bytes = (double)s.elems * (2 * 2 + 2 * 1) + (double)num_tokens * 8;
    snprintf(t->what, sizeof t->what,
             "store: %d tokens x %d heads x %d, bf16 in (%.0f MiB K+V) -> fp8 NHD cache, %s",
             num_tokens, num_heads, head_size, (double)s.elems * 4 / 1048576.0,
             fp8kv_gpu_codecs[codec].name);
    return time_median(
        iterations, [&]() { return s.store(codec, num_tokens); }, t);
}

extern "C" int fp8kv_gpu_bench_gather(int num_tokens, int num_heads, int head_size, int block_size,
                                      int iterations, struct fp8kv_gpu_timing *t)
{
    int rc = bench_setup("fp8kv_gpu_bench_gather", iterations, t);
    if (rc != 0)
        return rc;
    store_setup s;
    if ((rc = s.setup(num_tokens, num_heads, head_size, block_size)) != 0 ||
        (rc = s.store(FP8KV_GPU_CODEC_BITS, num_tokens)) != 0)
        return rc;
    /* the slots of the store, as 16 sequences over the shuffled blocks */
    const int seqs = 16, per_seq = (num_tokens + seqs - 1) / seqs;
    if (per_seq % block_size != 0)
        return FP8KV_FAIL("bench gather: %d tokens do not split into 16 sequences of whole blocks",
                          num_tokens);
    const int max_blocks = per_seq / block_size;
    const std::vector<int32_t> blocks = shuffled_blocks(s.shape.num_blocks, 0x5EED);
    std::vector<int32_t> table((size_t)seqs * max_blocks, 0);
    std::vector<int64_t> starts((size_t)seqs + 1, 0);
    for (int i = 0; i < seqs; i++) {
        const int first = i * per_seq, len = std::max(0, std::min(per_seq, num_tokens - first));
        starts[(size_t)i + 1] = starts[(size_t)i] + len;
        for (int j = 0; j * block_size < len; j++) /* per_seq is a multiple of block_size here */
            table[(size_t)i * max_blocks + j] =
                blocks[(size_t)((first + j * block_size) / block_size)];
    }
    buffer d_table, d_starts, out_k, out_v;
    if ((rc = d_table.upload(table.data(), table.size() * sizeof(int32_t))) != 0 ||
        (rc = d_starts.upload(starts.data(), starts.size() * sizeof(int64_t))) != 0 ||
        (rc = out_k.alloc(s.elems * 2)) != 0 || (rc = out_v.alloc(s.elems * 2)) != 0)
        return rc;
    const struct fp8kv_codec_cfg cfg = {FP8KV_CODEC_E4M3FN, 1, 0, FP8KV_CODEC_F32_DIV};
    t->bytes = (double)s.elems * (2 * 1 + 2 * 2) + (double)table.size() * 4;
    snprintf(
        t->what, sizeof t->what,
        "gather + dequant: %d tokens x %d heads x %d, fp8 NHD cache -> bf16 (K and V, one launch)",
        num_tokens, num_heads, head_size);
    gather_sides sides = {};
    sides.side[0] = {s.kc.as<uint8_t>(), static_cast<uint8_t *>(out_k.ptr), 0.0123f, 1};
    sides.side[1] = {s.vc.as<uint8_t>(), static_cast<uint8_t *>(out_v.ptr), 0.0123f, 0};
    return time_median(
        iterations,
        [&]() -> int {
            return launch_gather(cfg, s.shape, sides, 2, d_table.as<int32_t>(), max_blocks,
                                 d_starts.as<int64_t>(), seqs, starts[(size_t)seqs], FP8KV_KV_BF16);
        },
        t);
}

namespace
{

__global__ void abs_sum(const float *x, size_t n, double *out)
{
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += fabs((double)x[i]);
    atomicAdd(out, s);
}

} // namespace

extern "C" int fp8kv_gpu_bench_attention(int cache_fp8, int kernel, int num_seqs, int seq_len,
                                         int queries, int num_kv_heads, int num_q_heads,
                                         int head_size, int block_size, int iterations,
                                         struct fp8kv_gpu_timing *t, double *out_checksum)
{
    int rc = bench_setup("fp8kv_gpu_bench_attention", iterations, t);
    if (rc != 0)
        return rc;
    if (num_seqs < 1 || seq_len < 1 || block_size < 1 || seq_len % block_size != 0 || queries < 1 ||
        queries > seq_len)
        return FP8KV_FAIL("bench attention: %d sequences of %d tokens (%d queries each) in blocks "
                          "of %d",
                          num_seqs, seq_len, queries, block_size);
    const int per_seq = seq_len / block_size;
    const struct fp8kv_cache_shape shape = {num_seqs * per_seq, block_size,
                                            num_kv_heads,       head_size,
                                            FP8KV_LAYOUT_NHD,   FP8KV_PACKING_SEPARATE};
    if ((rc = check_shape(&shape, "bench attention")) != 0)
        return rc;
    const size_t elems = fp8kv_cache_bytes(&shape), esize = cache_fp8 ? 1 : 2;
    const std::vector<int32_t> table = shuffled_blocks(shape.num_blocks, 0xB10C);
    /* one launch row a query: sequence i's query j attends to its tokens 0 .. seq_len -
     * queries + j (query_rows in common.h) */
    const int rows = num_seqs * queries;
    std::vector<int32_t> lens, row_seq, row_first((size_t)rows, 0);
    for (int i = 0; i < num_seqs; i++)
        for (int j = 0; j < queries; j++) {
            lens.push_back(seq_len - queries + j + 1);
            row_seq.push_back(i);
        }
    const size_t qn = (size_t)rows * num_q_heads * head_size;
    buffer kc8, vc8, kc16, vc16, d_table, d_lens, d_q, d_out, scratch, d_sum, d_seq, d_first;
    query_rows by_row;
    if (queries > 1) {
        if ((rc = d_seq.upload(row_seq.data(), row_seq.size() * sizeof(int32_t))) != 0 ||
            (rc = d_first.upload(row_first.data(), row_first.size() * sizeof(int32_t))) != 0)
            return rc;
        by_row.seq = d_seq.as<int32_t>();
        by_row.first = d_first.as<int32_t>();
    }
    if ((rc = kc8.alloc(elems)) != 0 || (rc = vc8.alloc(elems)) != 0 ||
        (!cache_fp8 && ((rc = kc16.alloc(elems * 2)) != 0 || (rc = vc16.alloc(elems * 2)) != 0)) ||
        (rc = d_table.upload(table.data(), table.size() * sizeof(int32_t))) != 0 ||
        (rc = d_lens.upload(lens.data(), lens.size() * sizeof(int32_t))) != 0 ||
        (rc = d_q.alloc(qn * sizeof(float))) != 0 || (rc = d_out.alloc(qn * sizeof(float))) != 0 ||
        (rc = d_sum.alloc(sizeof(double))) != 0)
        return rc;
    /* the same values in both caches: scale 1/64 keeps them within [-7, 7] */
    fill_cache<<<FILL_BLOCKS, FILL_THREADS>>>(kc8.as<uint8_t>(),
                                              cache_fp8 ? nullptr : kc16.as<uint16_t>(), elems, 3);
    fill_cache<<<FILL_BLOCKS, FILL_THREADS>>>(vc8.as<uint8_t>(),
                                              cache_fp8 ? nullptr : vc16.as<uint16_t>(), elems, 4);
    fill_f32<<<FILL_BLOCKS, FILL_THREADS>>>(d_q.as<float>(), qn, 5, 1.0f);
    FP8KV_GPU_CHECK_LAUNCH();
    const struct fp8kv_codec_cfg cfg = {FP8KV_CODEC_E4M3FN, 1, 0, FP8KV_CODEC_F32_DIV};
    const float scale = 1.0f / 64.0f, softmax_scale = 1.0f / sqrtf((float)head_size);
    const void *kc = cache_fp8 ? kc8.ptr : kc16.ptr, *vc = cache_fp8 ? vc8.ptr : vc16.ptr;
    t->bytes = 2.0 * (double)elems * (double)esize + (double)qn * 8 + (double)table.size() * 4;
    char plan[64];
    if ((rc = attention_plan_name(cfg, shape, !cache_fp8, num_q_heads, rows, seq_len, kernel, plan,
                                  sizeof plan)) != 0)
        return rc;
    char kind[48] = "decode";
    if (queries > 1)
        snprintf(kind, sizeof kind, queries == seq_len ? "causal prefill" : "%d-token decode",
                 queries);
    snprintf(t->what, sizeof t->what,
             "paged attention %s: %d seqs x %d tokens, %d kv / %d q heads x %d, %s cache "
             "(%.0f MiB K+V), %s",
             kind, num_seqs, seq_len, num_kv_heads, num_q_heads, head_size,
             cache_fp8 ? "fp8" : "bf16", 2.0 * (double)elems * (double)esize / 1048576.0, plan);
    rc = time_median(
        iterations,
        [&]() {
            return launch_attention(cfg, shape, !cache_fp8, d_q.as<float>(), num_q_heads, kc, vc,
                                    d_table.as<int32_t>(), per_seq, d_lens.as<int32_t>(), rows,
                                    seq_len, scale, scale, softmax_scale, 0, kernel,
                                    d_out.as<float>(), scratch, by_row);
        },
        t);
    if (rc != 0 || !out_checksum)
        return rc;
    FP8KV_GPU_CHECK(hipMemset(d_sum.ptr, 0, sizeof(double)));
    abs_sum<<<256, 256>>>(d_out.as<float>(), qn, d_sum.as<double>());
    FP8KV_GPU_CHECK_LAUNCH();
    return d_sum.download(out_checksum, sizeof(double));
}

extern "C" int fp8kv_gpu_bench_block(struct fp8kv_bcodec_cfg cfg, size_t values, int iterations,
                                     struct fp8kv_gpu_timing *t)
{
    int rc = bench_setup("fp8kv_gpu_bench_block", iterations, t);
    if (rc != 0)
        return rc;
    const size_t bs = (size_t)fp8kv_bcodec_block_size(cfg.format), nblocks = values / bs;
    buffer x, scales, elements;
    if ((rc = x.alloc(nblocks * bs * sizeof(float))) != 0 || (rc = scales.alloc(nblocks)) != 0 ||
        (rc = elements.alloc(nblocks * bs)) != 0)
        return rc;
    fill_f32<<<FILL_BLOCKS, FILL_THREADS>>>(x.as<float>(), nblocks * bs, 11, 4.0f);
    FP8KV_GPU_CHECK_LAUNCH();
    t->bytes = (double)nblocks * (double)bs * (sizeof(float) + 1) + (double)nblocks;
    snprintf(t->what, sizeof t->what, "block encode of %zu random f32 values (%zu blocks)",
             nblocks * bs, nblocks);
    return time_median(
        iterations,
        [&]() -> int {
            return launch_block_encode(cfg, x.as<float>(), nblocks, scales.as<uint8_t>(),
                                       elements.as<uint8_t>());
        },
        t);
}
