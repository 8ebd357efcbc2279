/* block.hip — the block codec of fp8kv/block_codec.h on the device: encode and decode of many
 * blocks, and the exhaustive element sweep judged on the device against the judge's runs
 * (fp8kv_gpu_block_*, fp8kv/gpu.h). */
#include "common.h"

using namespace fp8kv_gpu;

/* One thread per block (block_size 16 or 32: the codec's own loops). */
__global__ void block_encode_kernel(struct fp8kv_bcodec_cfg cfg, const float *x, size_t nblocks,
                                    uint8_t *scales, uint8_t *elements)
{
    const size_t bs = (size_t)fp8kv_bcodec_block_size(cfg.format);
    for (size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x; b < nblocks;
         b += (size_t)gridDim.x * blockDim.x)
        fp8kv_bcodec_encode_block(cfg, x + b * bs, scales + b, elements + b * bs);
}

int fp8kv_gpu::launch_block_encode(struct fp8kv_bcodec_cfg cfg, const float *x, size_t nblocks,
                                   uint8_t *scales, uint8_t *elements)
{
    const unsigned threads = 128, blocks = blocks_for(nblocks, threads, 65535);
    block_encode_kernel<<<blocks, threads>>>(cfg, x, nblocks, scales, elements);
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_OK;
}

extern "C" int fp8kv_gpu_block_encode(struct fp8kv_bcodec_cfg cfg, const float *x, size_t nblocks,
                                      uint8_t *scales, uint8_t *elements)
{
    int rc = require_open("fp8kv_gpu_block_encode");
    if (rc != 0 || nblocks == 0)
        return rc;
    const size_t n = nblocks * (size_t)fp8kv_bcodec_block_size(cfg.format);
    buffer d_x, d_s, d_e;
    if ((rc = d_x.upload(x, n * sizeof *x)) != 0 || (rc = d_s.alloc(nblocks)) != 0 ||
        (rc = d_e.alloc(n)) != 0)
        return rc;
    if ((rc = launch_block_encode(cfg, d_x.as<float>(), nblocks, d_s.as<uint8_t>(),
                                  d_e.as<uint8_t>())) != 0 ||
        (rc = d_s.download(scales, nblocks)) != 0)
        return rc;
    return d_e.download(elements, n);
}

/* One thread per element. */
__global__ void block_decode_kernel(struct fp8kv_bcodec_cfg cfg, const uint8_t *scales,
                                    const uint8_t *elements, size_t n, float *y)
{
    const size_t bs = (size_t)fp8kv_bcodec_block_size(cfg.format);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = fp8kv_f32_from_bits(fp8kv_bcodec_decode_one(cfg, scales[i / bs], elements[i]));
}

extern "C" int fp8kv_gpu_block_decode(struct fp8kv_bcodec_cfg cfg, const uint8_t *scales,
                                      const uint8_t *elements, size_t nblocks, float *y)
{
    int rc = require_open("fp8kv_gpu_block_decode");
    if (rc != 0 || nblocks == 0)
        return rc;
    const size_t n = nblocks * (size_t)fp8kv_bcodec_block_size(cfg.format);
    buffer d_s, d_e, d_y;
    if ((rc = d_s.upload(scales, nblocks)) != 0 || (rc = d_e.upload(elements, n)) != 0 ||
        (rc = d_y.alloc(n * sizeof *y)) != 0)
        return rc;
    const unsigned threads = 256, blocks = blocks_for(n, threads, 65535);
    block_decode_kernel<<<blocks, threads>>>(cfg, d_s.as<uint8_t>(), d_e.as<uint8_t>(), n,
                                             d_y.as<float>());
    FP8KV_GPU_CHECK_LAUNCH();
    return d_y.download(y, n * sizeof *y);
}

/* ---- the element sweep ---- */

/* The judge's runs, both signs (device memory: 2.5 KB, in every SM's cache after first use). */
struct sweep_table {
    fp8kv_block_run runs[2][FP8KV_BLOCK_MAX_RUNS];
    int nruns[2];
};

/* The device's tally. */
struct sweep_tally {
    unsigned long long wrong;
    unsigned nfirst;
    fp8kv_block_sweep_failure first[FP8KV_BLOCK_SWEEP_FAILURES];
};

__device__ void record(sweep_tally *t, uint32_t input, uint32_t expected, uint32_t got,
                       int is_scale)
{
    atomicAdd(&t->wrong, 1ull);
    const unsigned k = atomicAdd(&t->nfirst, 1u);
    if (k < FP8KV_BLOCK_SWEEP_FAILURES) {
        fp8kv_block_sweep_failure f = {input, (uint8_t)expected, (uint8_t)got, (uint8_t)is_scale,
                                       0};
        t->first[k] = f;
    }
}

/* The expected code of input bits (a run cursor per thread, inputs increasing). */
__device__ __forceinline__ uint32_t expected_code(const sweep_table *tab, uint32_t bits,
                                                  int *cursor)
{
    const int sg = (int)(bits >> 31), n = tab->nruns[sg];
    const fp8kv_block_run *runs = tab->runs[sg];
    const uint32_t m = bits & 0x7FFFFFFFu;
    int i = *cursor;
    if (i >= n || runs[i].start > m) {
        int lo = 0, hi = n - 1; /* the last run starting at or below m */
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (runs[mid].start <= m)
                lo = mid;
            else
                hi = mid - 1;
        }
        i = lo;
    }
    while (i + 1 < n && runs[i + 1].start <= m)
        i++;
    *cursor = i;
    return runs[i].code;
}

/* One thread per block of the sweep: the anchor, then block_size - 1 inputs (numbered
 * k = b (block_size - 1) + i; input k is sign k / (anchor + 1), magnitude k % (anchor + 1)). */
template <int BS>
__global__ void block_sweep_kernel(struct fp8kv_bcodec_cfg cfg, uint8_t scale, uint32_t anchor,
                                   uint8_t anchor_code, uint64_t ninputs, uint64_t nblocks,
                                   const sweep_table *tab, sweep_tally *t)
{
    const uint64_t side = (uint64_t)anchor + 1;
    for (uint64_t b = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; b < nblocks;
         b += (uint64_t)gridDim.x * blockDim.x) {
        float x[BS];
        uint8_t s, e[BS];
        x[0] = fp8kv_f32_from_bits(anchor);
#pragma unroll
        for (int i = 1; i < BS; i++) {
            const uint64_t k = b * (BS - 1) + (uint64_t)(i - 1);
            x[i] = k < ninputs
                       ? fp8kv_f32_from_bits((uint32_t)(k / side) << 31 | (uint32_t)(k % side))
                       : 0.0f;
        }
        fp8kv_bcodec_encode_block(cfg, x, &s, e);
        if (s != scale)
            record(t, fp8kv_f32_bits(x[1]), scale, s, 1);
        if (e[0] != anchor_code)
            record(t, anchor, anchor_code, e[0], 0);
        int cursor = 0;
#pragma unroll
        for (int i = 1; i < BS; i++) {
            const uint64_t k = b * (BS - 1) + (uint64_t)(i - 1);
            if (k >= ninputs)
                break;
            const uint32_t bits = fp8kv_f32_bits(x[i]), want = expected_code(tab, bits, &cursor);
            if (e[i] != want)
                record(t, bits, want, e[i], 0);
        }
    }
}

extern "C" int fp8kv_gpu_block_sweep(struct fp8kv_bcodec_cfg cfg, uint8_t scale, uint32_t anchor,
                                     uint8_t anchor_code,
                                     const struct fp8kv_block_run *const runs[2],
                                     const int nruns[2], struct fp8kv_block_sweep_result *out)
{
    int rc = require_open("fp8kv_gpu_block_sweep");
    if (rc != 0)
        return rc;
    sweep_table tab = {};
    for (int sg = 0; sg < 2; sg++) {
        if (nruns[sg] < 1 || nruns[sg] > FP8KV_BLOCK_MAX_RUNS)
            return FP8KV_FAIL("block sweep: %d runs (1 .. %d)", nruns[sg], FP8KV_BLOCK_MAX_RUNS);
        for (int i = 0; i < nruns[sg]; i++)
            tab.runs[sg][i] = runs[sg][i];
        tab.nruns[sg] = nruns[sg];
    }
    buffer d_tab;
    if ((rc = d_tab.upload(&tab, sizeof tab)) != 0)
        return rc;
    const int bs = fp8kv_bcodec_block_size(cfg.format);
    const uint64_t ninputs = 2 * ((uint64_t)anchor + 1);
    const uint64_t nblocks = (ninputs + (uint64_t)bs - 2) / (uint64_t)(bs - 1);
    sweep_tally zero = {};
    buffer d_t;
    if ((rc = d_t.upload(&zero, sizeof zero)) != 0)
        return rc;
    const unsigned threads = 128;
    const unsigned blocks = blocks_for(nblocks, threads, (unsigned)g_device.multiprocessors * 64);
    timer tm;
    if ((rc = tm.start()) != 0)
        return rc;
    if (bs == 16)
        block_sweep_kernel<16><<<blocks, threads>>>(cfg, scale, anchor, anchor_code, ninputs,
                                                    nblocks, d_tab.as<sweep_table>(),
                                                    d_t.as<sweep_tally>());
    else
        block_sweep_kernel<32><<<blocks, threads>>>(cfg, scale, anchor, anchor_code, ninputs,
                                                    nblocks, d_tab.as<sweep_table>(),
                                                    d_t.as<sweep_tally>());
    FP8KV_GPU_CHECK_LAUNCH();
    if ((rc = tm.stop(&out->ms)) != 0)
        return rc;
    sweep_tally t;
    if ((rc = d_t.download(&t, sizeof t)) != 0)
        return rc;
    out->checked = ninputs + 2 * nblocks; /* the inputs, each block's anchor and scale */
    out->wrong = t.wrong;
    const unsigned cap = FP8KV_BLOCK_SWEEP_FAILURES;
    out->nfirst = (int)(t.nfirst < cap ? t.nfirst : cap);
    for (int i = 0; i < out->nfirst; i++)
        out->first[i] = t.first[i];
    return FP8KV_OK;
}
