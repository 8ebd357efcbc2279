/* sweep.hip — the exhaustive sweep kernel: every input of a domain through a device codec,
 * judged against the run table conformance hands over (fp8kv_gpu_sweep).
 *
 * Each thread owns a contiguous span of inputs, finds its run once by binary search (the
 * table sits in shared memory when it fits) and walks forward: the inputs are generated from
 * the index, encoded two at a time, and compared in sub-chunks of SUB inputs. A sub-chunk
 * inside one run takes the fast path: the differences (code & mask) ^ value are ORed with no
 * branch; only a sub-chunk that differs somewhere, or straddles a run boundary (a few hundred
 * of the 2^26 sub-chunks of f32), is judged element by element. Failures are rare by
 * construction of a passing codec, so they are counted with atomics.
 *
 * Reporting the lowest-index failures deterministically: a pass also captures up to CAPTURE
 * failures (in no particular order) and counts failures per bucket of 2^shift inputs. If all
 * failures were captured, the host sorts them. If not, the buckets say where the first
 * FP8KV_SWEEP_FAILURES failures lie: the buckets before the one that holds the last of
 * them are swept again with capture (they hold fewer than that many failures), and that bucket
 * is split into finer buckets and swept again, down to single inputs if need be. The answer
 * depends only on the codec, never on the schedule.
 */
#include "common.h"

#include <algorithm>
#include <vector>

using namespace fp8kv_gpu;

namespace
{

constexpr unsigned THREADS = 256;
constexpr uint32_t SUB = 64;         /* inputs per sub-chunk (even: codecs work in pairs) */
constexpr uint32_t SMEM_RUNS = 4096; /* runs held in shared memory (8 bytes each) */
constexpr uint32_t CAPTURE = 4096;   /* failures captured per pass */
constexpr uint32_t BUCKETS = 4096;   /* failure-count buckets per pass */
constexpr unsigned BLOCKS_PER_SM = 8;

struct sweep_args {
    struct fp8kv_codec_cfg cfg;
    const struct fp8kv_sweep_run *runs;
    uint32_t nruns;
    uint64_t lo, hi;     /* the inputs of this pass: [lo, hi) */
    uint64_t domain_end; /* 2^32 or 2^16: where the last run ends */
    uint64_t span;       /* inputs per thread, a multiple of SUB */
    uint32_t shift;      /* bucket b counts failures in [lo + b 2^shift, lo + (b+1) 2^shift) */
    uint32_t *buckets;   /* NULL: not counted */
    unsigned long long *classes; /* NULL: not counted (the refinement passes) */
    uint32_t *captured;          /* the number of failures seen (may exceed CAPTURE) */
    uint32_t *cap_input;
    uint8_t *cap_got;
};

template <int DOMAIN> __device__ __forceinline__ float input_of(uint64_t i);
template <> __device__ __forceinline__ float input_of<FP8KV_DOMAIN_F32>(uint64_t i)
{
    return __uint_as_float((uint32_t)i);
}
template <> __device__ __forceinline__ float input_of<FP8KV_DOMAIN_F16>(uint64_t i)
{
    return fp8kv_f16_to_f32((uint16_t)i);
}
template <> __device__ __forceinline__ float input_of<FP8KV_DOMAIN_BF16>(uint64_t i)
{
    return __uint_as_float((uint32_t)i << 16);
}

__device__ __noinline__ void record(const sweep_args &a, uint64_t index, uint32_t got, uint32_t cls)
{
    if (a.classes)
        atomicAdd(&a.classes[cls & (FP8KV_SWEEP_CLASSES - 1)], 1ull);
    if (a.buckets)
        atomicAdd(&a.buckets[(index - a.lo) >> a.shift], 1u);
    const uint32_t slot = atomicAdd(a.captured, 1u);
    if (slot < CAPTURE) {
        a.cap_input[slot] = (uint32_t)index;
        a.cap_got[slot] = (uint8_t)got;
    }
}

template <int CODEC, int DOMAIN>
__global__ void __launch_bounds__(THREADS) sweep_kernel(sweep_args a)
{
    extern __shared__ uint2 shared_runs[]; /* struct fp8kv_sweep_run is 8 bytes */
    const bool in_shared = a.nruns <= SMEM_RUNS;
    if (in_shared) {
        const uint2 *src = reinterpret_cast<const uint2 *>(a.runs);
        for (uint32_t i = threadIdx.x; i < a.nruns; i += blockDim.x)
            shared_runs[i] = src[i];
        __syncthreads();
    }
    const struct fp8kv_sweep_run *runs =
        in_shared ? reinterpret_cast<const struct fp8kv_sweep_run *>(shared_runs) : a.runs;
    const uint32_t nruns = a.nruns;

    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t begin = a.lo + t * a.span;
    if (begin >= a.hi)
        return;
    const uint64_t end = begin + a.span < a.hi ? begin + a.span : a.hi;

    /* the last run starting at or before begin: the one binary search of this thread */
    uint32_t k = 0, above = nruns;
    while (k + 1 < above) {
        const uint32_t mid = (k + above) / 2;
        if (runs[mid].start <= begin)
            k = mid;
        else
            above = mid;
    }

    for (uint64_t base = begin; base < end; base += SUB) {
        while (k + 1 < nruns && runs[k + 1].start <= base)
            k++;
        const uint64_t run_end = k + 1 < nruns ? (uint64_t)runs[k + 1].start : a.domain_end;
        const uint32_t n = end - base < SUB ? (uint32_t)(end - base) : SUB;
        if (n == SUB && base + SUB <= run_end && runs[k].span == 0) {
            /* fast path: one run, one expectation, no branch per input */
            const uint32_t m = runs[k].mask, v = runs[k].value;
            const uint32_t m2 = m | m << 8, v2 = v | v << 8;
            uint32_t diff = 0;
#pragma unroll 8
            for (uint32_t j = 0; j < SUB; j += 2)
                diff |= (encode_pair<CODEC>(a.cfg, input_of<DOMAIN>(base + j),
                                            input_of<DOMAIN>(base + j + 1)) &
                         m2) ^
                        v2;
            if (diff == 0)
                continue;
        }
        /* slow path: element by element, the run advancing with the input */
        uint32_t kk = k;
        for (uint32_t j = 0; j < n; j += 2) {
            const bool two = j + 1 < n;
            const uint32_t pair = encode_pair<CODEC>(a.cfg, input_of<DOMAIN>(base + j),
                                                     two ? input_of<DOMAIN>(base + j + 1) : 0.0f);
            for (uint32_t e = 0; e < (two ? 2u : 1u); e++) {
                const uint64_t index = base + j + e;
                while (kk + 1 < nruns && runs[kk + 1].start <= index)
                    kk++;
                const uint32_t q = pair >> (8 * e) & 0xFFu;
                if (!fp8kv_sweep_run_accepts(&runs[kk], q))
                    record(a, index, q, runs[kk].cls);
            }
        }
    }
}

typedef void (*sweep_kernel_fn)(sweep_args);

sweep_kernel_fn kernel_of(int codec, int domain)
{
    switch (codec * 3 + domain) {
#define ENTRY(C)                                                                                   \
    case C * 3 + FP8KV_DOMAIN_F32: return sweep_kernel<C, FP8KV_DOMAIN_F32>;                       \
    case C * 3 + FP8KV_DOMAIN_F16: return sweep_kernel<C, FP8KV_DOMAIN_F16>;                       \
    case C * 3 + FP8KV_DOMAIN_BF16: return sweep_kernel<C, FP8KV_DOMAIN_BF16>;
        FP8KV_FOR_EACH_CODEC(ENTRY)
#undef ENTRY
    default: return nullptr;
    }
}

/* Device memory of a sweep. */
struct sweep_memory {
    buffer runs, buckets, classes, captured, cap_input, cap_got;
};

/* The outcome of one pass, on the host. */
struct pass_result {
    std::vector<uint32_t> buckets;
    std::vector<std::pair<uint32_t, uint8_t>> captured; /* (input, got), unsorted */
    uint64_t failures = 0;                              /* all, captured or not */
};

uint32_t shift_for(uint64_t count)
{
    uint32_t s = 0;
    while ((count + ((uint64_t)1 << s) - 1) >> s > BUCKETS)
        s++;
    return s;
}

/* One pass over [lo, hi): launches, waits, reads back buckets and captures. */
int run_pass(sweep_kernel_fn kernel, sweep_args a, sweep_memory &mem, uint64_t lo, uint64_t hi,
             bool with_classes, bool with_buckets, pass_result *out, double *ms)
{
    a.lo = lo;
    a.hi = hi;
    a.shift = shift_for(hi - lo);
    a.buckets = with_buckets ? mem.buckets.as<uint32_t>() : nullptr;
    a.classes = with_classes ? mem.classes.as<unsigned long long>() : nullptr;
    if (with_buckets)
        FP8KV_GPU_CHECK(hipMemset(mem.buckets.ptr, 0, BUCKETS * sizeof(uint32_t)));
    FP8KV_GPU_CHECK(hipMemset(mem.captured.ptr, 0, sizeof(uint32_t)));

    const uint64_t count = hi - lo;
    const uint64_t max_threads =
        (uint64_t)(g_device.multiprocessors > 0 ? g_device.multiprocessors : 1) * BLOCKS_PER_SM *
        THREADS;
    uint64_t span = (count + max_threads - 1) / max_threads;
    span = (span + SUB - 1) / SUB * SUB;
    const uint64_t threads_needed = (count + span - 1) / span;
    a.span = span;
    const unsigned blocks = (unsigned)((threads_needed + THREADS - 1) / THREADS);
    const size_t shared = a.nruns <= SMEM_RUNS ? a.nruns * sizeof(struct fp8kv_sweep_run) : 0;

    timer tm;
    int rc = ms ? tm.start() : 0;
    if (rc != 0)
        return rc;
    kernel<<<blocks, THREADS, shared>>>(a);
    FP8KV_GPU_CHECK_LAUNCH();
    if (ms && (rc = tm.stop(ms)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());

    uint32_t captured = 0;
    if ((rc = mem.captured.download(&captured, sizeof captured)) != 0)
        return rc;
    out->failures = captured;
    const uint32_t kept = captured < CAPTURE ? captured : CAPTURE;
    std::vector<uint32_t> inputs(kept);
    std::vector<uint8_t> got(kept);
    if (kept && ((rc = mem.cap_input.download(inputs.data(), kept * sizeof(uint32_t))) != 0 ||
                 (rc = mem.cap_got.download(got.data(), kept)) != 0))
        return rc;
    out->captured.clear();
    for (uint32_t i = 0; i < kept; i++)
        out->captured.emplace_back(inputs[i], got[i]);
    if (with_buckets) {
        out->buckets.assign(BUCKETS, 0);
        if ((rc = mem.buckets.download(out->buckets.data(), BUCKETS * sizeof(uint32_t))) != 0)
            return rc;
    }
    return FP8KV_OK;
}

/* The run of input x on the host (for a failure's expected code and class). */
const struct fp8kv_sweep_run &run_of(const struct fp8kv_sweep_run *runs, size_t nruns, uint32_t x)
{
    size_t k = 0, above = nruns;
    while (k + 1 < above) {
        const size_t mid = (k + above) / 2;
        if (runs[mid].start <= x)
            k = mid;
        else
            above = mid;
    }
    return runs[k];
}

} // namespace

extern "C" int fp8kv_gpu_sweep(int codec, struct fp8kv_codec_cfg cfg, enum fp8kv_domain domain,
                               const struct fp8kv_sweep_run *runs, size_t nruns, uint64_t lo,
                               uint64_t hi, struct fp8kv_sweep_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = require_open("fp8kv_gpu_sweep");
    if (rc != 0)
        return rc;
    if (!fp8kv_gpu_codec_available(codec))
        return FP8KV_FAIL("device codec %d is not compiled for this device", codec);
    sweep_kernel_fn kernel = kernel_of(codec, (int)domain);
    if (!kernel)
        return FP8KV_FAIL("no sweep kernel for codec %d, domain %d", codec, (int)domain);
    const uint64_t domain_end = domain == FP8KV_DOMAIN_F32 ? (uint64_t)1 << 32 : 1u << 16;
    if (nruns == 0 || nruns > 0xFFFFFFFFu || runs[0].start != 0)
        return FP8KV_FAIL("sweep: the run table must start at input 0 (%zu runs)", nruns);
    for (size_t i = 0; i < nruns; i++)
        if ((i && runs[i].start <= runs[i - 1].start) || runs[i].start >= domain_end ||
            runs[i].cls >= FP8KV_SWEEP_CLASSES)
            return FP8KV_FAIL("sweep: run %zu is out of order, out of the domain or of class %u", i,
                              runs[i].cls);
    const uint64_t first = lo, end = hi && hi < domain_end ? hi : domain_end;
    if (first > end)
        return FP8KV_FAIL("sweep: the range [%llu, %llu) is out of order",
                          (unsigned long long)first, (unsigned long long)end);
    if (first == end)
        return FP8KV_OK; /* an empty slice: nothing judged, nothing failed */

    timer whole;
    if ((rc = whole.start()) != 0)
        return rc;
    sweep_memory mem;
    if ((rc = mem.runs.upload(runs, nruns * sizeof *runs)) != 0 ||
        (rc = mem.buckets.alloc(BUCKETS * sizeof(uint32_t))) != 0 ||
        (rc = mem.classes.alloc(FP8KV_SWEEP_CLASSES * sizeof(unsigned long long))) != 0 ||
        (rc = mem.captured.alloc(sizeof(uint32_t))) != 0 ||
        (rc = mem.cap_input.alloc(CAPTURE * sizeof(uint32_t))) != 0 ||
        (rc = mem.cap_got.alloc(CAPTURE)) != 0)
        return rc;
    FP8KV_GPU_CHECK(
        hipMemset(mem.classes.ptr, 0, FP8KV_SWEEP_CLASSES * sizeof(unsigned long long)));

    sweep_args a;
    memset(&a, 0, sizeof a);
    a.cfg = cfg;
    a.runs = mem.runs.as<struct fp8kv_sweep_run>();
    a.nruns = (uint32_t)nruns;
    a.domain_end = domain_end;
    a.captured = mem.captured.as<uint32_t>();
    a.cap_input = mem.cap_input.as<uint32_t>();
    a.cap_got = mem.cap_got.as<uint8_t>();

    /* the full pass: class counts, buckets, captures, timed */
    pass_result pass;
    if ((rc = run_pass(kernel, a, mem, first, end, true, true, &pass, &out->kernel_ms)) != 0)
        return rc;
    unsigned long long classes[FP8KV_SWEEP_CLASSES];
    if ((rc = mem.classes.download(classes, sizeof classes)) != 0)
        return rc;
    for (int c = 0; c < FP8KV_SWEEP_CLASSES; c++)
        out->class_mismatches[c] = classes[c];
    out->cases = end - first;

    /* the lowest-index failures */
    std::vector<std::pair<uint32_t, uint8_t>> lowest;
    uint64_t need = FP8KV_SWEEP_FAILURES;
    lo = first;
    hi = end;
    if (pass.failures <= CAPTURE) {
        lowest = pass.captured;
    } else {
        while (need > 0) {
            const uint32_t shift = shift_for(hi - lo);
            uint64_t before = 0; /* failures in the buckets before b */
            size_t b = 0;
            while (b < BUCKETS && before + pass.buckets[b] < need)
                before += pass.buckets[b++];
            if (b == BUCKETS) /* fewer than need in [lo, hi): take them all */
                b = BUCKETS - 1;
            const uint64_t b_lo = lo + ((uint64_t)b << shift);
            const uint64_t b_hi = std::min(hi, b_lo + ((uint64_t)1 << shift));
            pass_result sub;
            if (before + pass.buckets[b] <= CAPTURE) { /* [lo, b_hi) holds few enough: done */
                if ((rc = run_pass(kernel, a, mem, lo, b_hi, false, false, &sub, nullptr)) != 0)
                    return rc;
                std::sort(sub.captured.begin(), sub.captured.end());
                for (size_t i = 0; i < sub.captured.size() && i < need; i++)
                    lowest.push_back(sub.captured[i]);
                break;
            }
            if (before > 0) { /* all of [lo, b_lo): fewer than need */
                if ((rc = run_pass(kernel, a, mem, lo, b_lo, false, false, &sub, nullptr)) != 0)
                    return rc;
                lowest.insert(lowest.end(), sub.captured.begin(), sub.captured.end());
                need -= sub.captured.size();
            }
            lo = b_lo; /* refine bucket b */
            hi = b_hi;
            if ((rc = run_pass(kernel, a, mem, lo, hi, false, true, &pass, nullptr)) != 0)
                return rc;
        }
    }
    std::sort(lowest.begin(), lowest.end());
    for (size_t i = 0; i < lowest.size() && i < FP8KV_SWEEP_FAILURES; i++) {
        const struct fp8kv_sweep_run &r = run_of(runs, nruns, lowest[i].first);
        out->failure_input[i] = lowest[i].first;
        out->failure_got[i] = lowest[i].second;
        out->failure_want[i] = r.value;
        out->failure_cls[i] = r.cls;
        out->failures = (int)i + 1;
    }
    return whole.stop(&out->total_ms);
}
