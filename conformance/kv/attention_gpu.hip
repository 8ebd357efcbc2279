/* kv/attention_gpu.hip — the attention reference on the GPU (kv/attention_core.h): the same
 * per-head arithmetic as the host's, a thread per query row and q head, so that the exact
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

/* The device side of one wave of tasks: thread i computes head i of the wave, its scratch at
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

/* One head a thread (attn_head, as the host computes it): the device's many heads in
 * parallel. (A block per head, the tokens and dimensions across its threads, is faster and
 * keeps every order-dependent sum sequential, kv/attention_core.h's phases; it awaits a run on
 * the device.) */
__global__ void heads_kernel(wave w, int count)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= count)
        return;
    const attn_task t = w.tasks[i];
    double *s = w.scratch + w.offset[i];
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
    const int v = attn_head(&w.arith, w.softmax_scale, &h, w.exact + t.q, w.lo + t.q, w.hi + t.q,
                            w.nan_also + t.q);
    if (v)
        atomicAdd(w.vacuous, (unsigned long long)v);
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
        /* few threads a block: a head is one thread's long sequential work, spread over every
         * multiprocessor */
        const int threads = 4;
        heads_kernel<<<(unsigned)((count + threads - 1) / threads), threads>>>(w, (int)count);
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
