/* kv/attention_gpu.hip — the attention reference on the GPU (kv/attention_core.h): the same
 * per-head arithmetic as the host's, a thread block per query row and q head, so that the exact
 * values are the same bits (the engine suite's committed digests check it at every use).
 * Compiled in GPU builds only, with the kernels' flags (no contraction, no fast math). */
#include "common.h"
#include "kv/attention_core.h"

#include <algorithm>
#include <vector>

using namespace fp8kv_gpu;

namespace
{

/* The scratch one head needs: 5 doubles a token. */
size_t scratch_of(const attn_task &t)
{
    return 5 * (size_t)(t.n > 1 ? t.n : 1);
}

/* The device side of one wave of tasks: block i computes head i of the wave, its scratch at
 * scratch + offset[i]. */
struct wave {
    struct fp8kv_attention_arith arith;
    double softmax_scale;
    int d;
    const double *keys, *values, *queries;
    const attn_task *tasks;
    const uint64_t *offset;
    double *scratch;
    double *exact, *lo, *hi;
    unsigned char *nan_also;
    unsigned long long *vacuous;
};

constexpr int THREADS = 128;

/* The largest of the block's values v, to every thread: NaN where any is NaN (nan_wins), else
 * the largest of the others (as the host's `x > m ? x : m` in token order). */
__device__ double block_max(double v, double *shared, bool nan_wins)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) {
            const double a = shared[threadIdx.x], b = shared[threadIdx.x + s];
            shared[threadIdx.x] = nan_wins && (isnan(a) || isnan(b)) ? NAN : b > a ? b : a;
        }
        __syncthreads();
    }
    const double m = shared[0];
    __syncthreads();
    return m;
}

/* One head a block (kv/attention_core.h's phases): the tokens' scores, weights and errors
 * across the threads, their order-dependent sums by thread 0 in token order, then the head's
 * dimensions across the threads; the same arithmetic, in the same order per value, as the
 * host's attn_head. */
__global__ void __launch_bounds__(THREADS) heads_kernel(wave w)
{
    __shared__ double shared[THREADS];
    __shared__ struct attn_weights r;
    const attn_task t = w.tasks[blockIdx.x];
    double *s = w.scratch + w.offset[blockIdx.x];
    const size_t nn = t.n > 1 ? (size_t)t.n : 1;
    struct attn_work h;
    h.n = t.n;
    h.d = w.d;
    h.key = w.keys + t.kv;
    h.value = w.values + t.kv;
    h.q = w.queries + t.q;
    h.score = s;
    h.mag = s + nn;
    h.weight = h.mag + nn;
    h.common = h.weight + nn;
    h.apart = h.common + nn;
    double *exact = w.exact + t.q, *lo = w.lo + t.q, *hi = w.hi + t.q;
    unsigned char *nan_also = w.nan_also + t.q;
    const int tid = (int)threadIdx.x;
    if (t.n == 0) { /* the ABI's rule: a sequence of no tokens gives zeros */
        for (int d = tid; d < w.d; d += THREADS) {
            exact[d] = lo[d] = hi[d] = 0.0;
            nan_also[d] = 0;
        }
        return;
    }
    for (int k = tid; k < t.n; k += THREADS)
        attn_score_at(w.softmax_scale, &h, k);
    __syncthreads();
    const double m = block_max(attn_max_of(&h, tid, t.n, THREADS), shared, true);
    for (int k = tid; k < t.n; k += THREADS)
        attn_weight_at(&h, m, k);
    __syncthreads();
    if (tid == 0) {
        r.L = attn_sum_weights(&h);
        r.common = r.apart = r.theta_ref = 0.0;
    }
    __syncthreads();
    double theta = 0.0;
    for (int k = tid; k < t.n; k += THREADS) {
        const double rt = attn_errors_at(&w.arith, &h, m, r.L, k);
        theta = rt > theta ? rt : theta;
    }
    theta = block_max(theta, shared, false);
    if (tid == 0) {
        attn_sum_errors(&h, &r);
        r.theta_ref = theta;
    }
    __syncthreads();
    int vacuous = 0;
    for (int d = tid; d < w.d; d += THREADS)
        vacuous += attn_column(&w.arith, &h, &r, d, exact + d, lo + d, hi + d, nan_also + d);
    if (vacuous)
        atomicAdd(w.vacuous, (unsigned long long)vacuous);
}

/* The scratch of a wave at most: waves are cut so that their heads' scratch fits it. */
constexpr size_t WAVE_SCRATCH = (size_t)1 << 30;

} // namespace

extern "C" int fp8kv_attention_heads_gpu(const struct attn_job *job, uint64_t *vacuous)
{
    *vacuous = 0;
    int rc = require_open("attention reference");
    if (rc != 0)
        return rc;
    const size_t outs = job->out_count ? job->out_count : 1;
    buffer d_keys, d_values, d_queries, d_tasks, d_exact, d_lo, d_hi, d_nan, d_vac, d_off,
        d_scratch;
    if ((rc = d_keys.upload(job->keys, std::max<size_t>(job->kv_count, 1) * sizeof(double))) != 0 ||
        (rc = d_values.upload(job->values, std::max<size_t>(job->kv_count, 1) * sizeof(double))) !=
            0 ||
        (rc = d_queries.upload(job->queries, std::max<size_t>(job->q_count, 1) * sizeof(double))) !=
            0 ||
        (rc = d_tasks.upload(job->tasks,
                             std::max<size_t>(job->task_count, 1) * sizeof(attn_task))) != 0 ||
        (rc = d_exact.alloc(outs * sizeof(double))) != 0 ||
        (rc = d_lo.alloc(outs * sizeof(double))) != 0 ||
        (rc = d_hi.alloc(outs * sizeof(double))) != 0 || (rc = d_nan.alloc(outs)) != 0 ||
        (rc = d_vac.alloc(sizeof(unsigned long long))) != 0 ||
        (rc = d_off.alloc(std::max<size_t>(job->task_count, 1) * sizeof(uint64_t))) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipMemset(d_vac.ptr, 0, sizeof(unsigned long long)));
    std::vector<uint64_t> offset(job->task_count);
    size_t first = 0;
    while (first < job->task_count) { /* waves of tasks whose scratch fits WAVE_SCRATCH */
        size_t count = 0, doubles = 0;
        while (first + count < job->task_count &&
               (count == 0 || (doubles + scratch_of(job->tasks[first + count])) * sizeof(double) <=
                                  WAVE_SCRATCH)) {
            offset[count] = doubles;
            doubles += scratch_of(job->tasks[first + count]);
            count++;
        }
        if (d_scratch.bytes < doubles * sizeof(double) &&
            (rc = d_scratch.alloc(doubles * sizeof(double))) != 0)
            return rc;
        FP8KV_GPU_CHECK(
            hipMemcpy(d_off.ptr, offset.data(), count * sizeof(uint64_t), hipMemcpyHostToDevice));
        wave w;
        w.arith = job->arith;
        w.softmax_scale = job->softmax_scale;
        w.d = job->d;
        w.keys = d_keys.as<double>();
        w.values = d_values.as<double>();
        w.queries = d_queries.as<double>();
        w.tasks = d_tasks.as<attn_task>() + first;
        w.offset = d_off.as<uint64_t>();
        w.scratch = d_scratch.as<double>();
        w.exact = d_exact.as<double>();
        w.lo = d_lo.as<double>();
        w.hi = d_hi.as<double>();
        w.nan_also = d_nan.as<unsigned char>();
        w.vacuous = d_vac.as<unsigned long long>();
        heads_kernel<<<(unsigned)count, THREADS>>>(w);
        FP8KV_GPU_CHECK_LAUNCH();
        FP8KV_GPU_CHECK(hipDeviceSynchronize());
        first += count;
    }
    unsigned long long vac = 0;
    if ((rc = d_exact.download(job->exact, job->out_count * sizeof(double))) != 0 ||
        (rc = d_lo.download(job->lo, job->out_count * sizeof(double))) != 0 ||
        (rc = d_hi.download(job->hi, job->out_count * sizeof(double))) != 0 ||
        (rc = d_nan.download(job->nan_also, job->out_count)) != 0 ||
        (rc = d_vac.download(&vac, sizeof vac)) != 0)
        return rc;
    *vacuous = vac;
    return FP8KV_OK;
}
