/* read.hip — gather + dequant by block table (the read of fp8kv/kv_cache.h).
 *
 * Output row r of sequence i is token position r of that sequence, found through its block
 * table; rows of the sequences follow each other (the host gives each sequence's first row).
 * Each thread takes VEC consecutive dimensions of one head of one row: one VEC-byte load of
 * codes where the layout keeps them contiguous (NHD, split-x key), dequant (decode * scale in
 * f32, NaN codes passed through), the f16/bf16 rounding of codec.h, and 16-byte stores.
 * The dequant and rounding are looked up: each thread block first tabulates the output of all
 * 256 codes with those functions (one scale per side), so a value costs one shared load.
 * One launch serves one side (key or value) or both (blockIdx.z: the side), so that the
 * benchmark's key and value gathers share one ramp-up and one tail.
 */
#include "common.h"

#include <algorithm>
#include <vector>

using namespace fp8kv_gpu;

namespace
{

constexpr unsigned THREADS = 256;

template <int OUT> struct out_elem;
template <> struct out_elem<FP8KV_KV_F32> {
    static constexpr int size = 4;
    static __device__ __forceinline__ void put(uint8_t *raw, float y)
    {
        const uint32_t b = __float_as_uint(y);
        memcpy(raw, &b, 4);
    }
};
template <> struct out_elem<FP8KV_KV_F16> {
    static constexpr int size = 2;
    static __device__ __forceinline__ void put(uint8_t *raw, float y)
    {
        const uint16_t h = fp8kv_f32_to_f16_rne(y);
        memcpy(raw, &h, 2);
    }
};
template <> struct out_elem<FP8KV_KV_BF16> {
    static constexpr int size = 2;
    static __device__ __forceinline__ void put(uint8_t *raw, float y)
    {
        const uint16_t h = fp8kv_f32_to_bf16_rne(y);
        memcpy(raw, &h, 2);
    }
};

/* The output of every code: table[code][lane] (32 copies, one per bank, so that a warp's 32
 * random lookups never conflict) holds the bits of E::put(scale_decoded(decode(code))) in its low
 * bytes. It is built by the very function the element path would apply, once per thread block: with
 * one scale per launch, the output is a function of the code alone. */
constexpr int COPIES = 32;
constexpr int ITEMS = 8;        /* items per thread in flight */
constexpr int ROW_WORDS = 4096; /* block-table entries of a sequence kept in shared memory */

template <int OUT>
__device__ __forceinline__ void fill_table(uint32_t *table, int format, float scale)
{
    typedef out_elem<OUT> E;
    for (int code = threadIdx.x; code < 256; code += blockDim.x) {
        uint8_t raw[4] = {0, 0, 0, 0};
        E::put(raw, scale_decoded(decode_fast_of(format, (uint32_t)code), scale));
        uint32_t v;
        memcpy(&v, raw, 4);
        const uint4 v4 = make_uint4(v, v, v, v);
#pragma unroll
        for (int c = 0; c < COPIES; c += 4)
            *reinterpret_cast<uint4 *>(table + code * COPIES + c) = v4;
    }
    __syncthreads();
}

/* blockIdx.y: the sequence; blockIdx.z: the side (sides[z]: key or value). A thread block
 * takes THREADS * ITEMS consecutive (position, item)
 * pairs at a time, a run (in NHD with the usual shapes, whole cache blocks: each thread block
 * reads one contiguous run, which DRAM serves far better than many scattered ones); a thread
 * takes ITEMS of them, THREADS apart. The codes of the thread block's next run are loaded
 * before the current one is converted and stored, and the sequence's block-table row sits in
 * shared memory when it has at most ROW_WORDS entries, so that a run's loads wait on nothing
 * in global memory. (position, item) advances by (step_pos, step_item) with a carry, so only
 * the first pair of a run costs a division. NHD (the layout engines use) addresses a row as
 * one run of heads * head_size codes; split-x goes through the layout rules of common.h. */
template <int OUT, int VEC, int LAYOUT>
__global__ void __launch_bounds__(THREADS)
    gather_kernel(int format, struct fp8kv_cache_shape shape, gather_sides sides,
                  const int32_t *block_table, int max_blocks_per_seq, const int64_t *row_start,
                  const int32_t *seq_lens, int bs_shift)
{
    typedef out_elem<OUT> E;
    const gather_side side = sides.side[blockIdx.z];
    const int is_key = side.is_key;
    const uint8_t *cache = side.cache;
    uint8_t *dst = side.dst;
    extern __shared__ uint32_t table[]; /* [256][COPIES], then the block-table row */
    const int seq = blockIdx.y, hs = shape.head_size, bs = shape.block_size;
    const int len = seq_lens[seq];
    const int32_t *table_row = block_table + (size_t)seq * max_blocks_per_seq;
    int32_t *row_copy = reinterpret_cast<int32_t *>(table + 256 * COPIES);
    const bool row_in_shared = max_blocks_per_seq <= ROW_WORDS;
    if (row_in_shared)
        for (int i = threadIdx.x; i * bs < len; i += THREADS)
            row_copy[i] = table_row[i];
    fill_table<OUT>(table, format, side.scale); /* ends with a barrier */
    const int32_t *blocks = row_in_shared ? row_copy : table_row;
    const uint32_t *mine = table + threadIdx.x % COPIES;
    const int items = shape.num_heads * hs / VEC, row_elems = shape.num_heads * hs;
    const uint32_t total = (uint32_t)len * (uint32_t)items; /* < 2^31: the host checks */
    const size_t first_row = (size_t)row_start[seq];
    const int step_pos = (int)(THREADS / (uint32_t)items);
    const int step_item = (int)(THREADS % (uint32_t)items);

    /* (position, item) of this thread's pair u of the run starting at pair `run`, for u = 0,
     * 1, ... in turn: one division, then a carry per step */
    struct walk {
        int pos, item;
        __device__ void next(int step_pos, int step_item, int items)
        {
            pos += step_pos;
            item += step_item;
            if (item >= items) {
                item -= items;
                pos++;
            }
        }
    };
    auto start = [&](uint32_t run) {
        const uint32_t g = run + threadIdx.x;
        return walk{(int)(g / (uint32_t)items), (int)(g % (uint32_t)items)};
    };
    /* the codes of the run starting at pair `run` */
    auto load_run = [&](uint32_t run, uint8_t(&codes)[ITEMS][VEC]) {
        walk w = start(run);
#pragma unroll
        for (int u = 0; u < ITEMS; u++) {
            const int pos = w.pos, item = w.item;
            if (pos < len) {
                const int32_t block = blocks[bs_shift >= 0 ? pos >> bs_shift : pos / bs];
                const int in_block = bs_shift >= 0 ? pos & (bs - 1) : pos % bs;
                const int64_t slot = (int64_t)block * bs + in_block;
                if (LAYOUT == FP8KV_LAYOUT_NHD) {
                    load_bytes<VEC>(cache + (size_t)slot * row_elems + (size_t)item * VEC,
                                    codes[u]);
                } else {
                    const int h = item * VEC / hs, d = item * VEC % hs;
                    if (is_key) {
                        load_bytes<VEC>(cache + key_offset(shape, slot, h, d), codes[u]);
                    } else {
#pragma unroll
                        for (int k = 0; k < VEC; k++)
                            codes[u][k] = cache[value_offset(shape, slot, h, d + k)];
                    }
                }
            }
            w.next(step_pos, step_item, items);
        }
    };
    /* the outputs of the loaded run starting at pair `run` */
    auto store_run = [&](uint32_t run, const uint8_t(&codes)[ITEMS][VEC]) {
        walk w = start(run);
#pragma unroll
        for (int u = 0; u < ITEMS; u++, w.next(step_pos, step_item, items)) {
            if (w.pos >= len)
                continue;
            uint8_t raw[VEC * E::size];
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                const uint32_t v = mine[codes[u][k] * COPIES];
                memcpy(raw + k * E::size, &v, E::size);
            }
            /* the output rows are [heads][head_size] in every layout */
            uint8_t *out =
                dst + ((first_row + (size_t)w.pos) * row_elems + (size_t)w.item * VEC) * E::size;
            if constexpr (VEC * E::size >= 16) {
#pragma unroll
                for (int b = 0; b < VEC * E::size; b += 16)
                    store_bytes<16>(out + b, raw + b);
            } else {
                store_bytes<VEC * E::size>(out, raw);
            }
        }
    };

    const uint32_t run_stride = gridDim.x * THREADS * ITEMS;
    uint32_t run = blockIdx.x * THREADS * ITEMS;
    if (run >= total)
        return;
    uint8_t codes[ITEMS][VEC];
    load_run(run, codes);
    for (;;) {
        const uint32_t next = run + run_stride; /* < 2^32: total < 2^31, the stride < 2^28 */
        const bool more = next < total;
        uint8_t codes_n[ITEMS][VEC];
        if (more)
            load_run(next, codes_n);
        store_run(run, codes);
        if (!more)
            break;
#pragma unroll
        for (int u = 0; u < ITEMS; u++)
#pragma unroll
            for (int k = 0; k < VEC; k++)
                codes[u][k] = codes_n[u][k];
        run = next;
    }
}

constexpr size_t TABLE_BYTES = 256 * COPIES * sizeof(uint32_t);

/* The dynamic shared memory of a launch: the table, and the block-table row when it fits. */
inline size_t shared_bytes(int max_blocks)
{
    return TABLE_BYTES + (max_blocks <= ROW_WORDS ? (size_t)max_blocks * sizeof(int32_t) : 0);
}

template <int OUT, int LAYOUT>
void launch_layout(int vec, dim3 grid, int format, const struct fp8kv_cache_shape &shape,
                   const gather_sides &sides, const int32_t *table, int max_blocks,
                   const int64_t *row_start, const int32_t *lens, int bs_shift)
{
    if (vec == 8)
        gather_kernel<OUT, 8, LAYOUT><<<grid, THREADS, shared_bytes(max_blocks)>>>(
            format, shape, sides, table, max_blocks, row_start, lens, bs_shift);
    else
        gather_kernel<OUT, 1, LAYOUT><<<grid, THREADS, shared_bytes(max_blocks)>>>(
            format, shape, sides, table, max_blocks, row_start, lens, bs_shift);
}

template <int OUT>
void launch_out(int vec, dim3 grid, int format, const struct fp8kv_cache_shape &shape,
                const gather_sides &sides, const int32_t *table, int max_blocks,
                const int64_t *row_start, const int32_t *lens)
{
    int bs_shift = -1; /* log2(block_size) when a power of two */
    for (int b = 0; b < 31; b++)
        if (shape.block_size == 1 << b)
            bs_shift = b;
    if (shape.layout == FP8KV_LAYOUT_NHD)
        launch_layout<OUT, FP8KV_LAYOUT_NHD>(vec, grid, format, shape, sides, table, max_blocks,
                                             row_start, lens, bs_shift);
    else
        launch_layout<OUT, FP8KV_LAYOUT_SPLIT_X>(vec, grid, format, shape, sides, table, max_blocks,
                                                 row_start, lens, bs_shift);
}

} // namespace

namespace fp8kv_gpu
{

int launch_gather(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                  const gather_sides &sides, int nsides, const int32_t *d_block_table,
                  int max_blocks_per_seq, const int64_t *d_row_start, const int32_t *d_seq_lens,
                  int num_seqs, int max_seq_len, int out)
{
    if (num_seqs <= 0 || max_seq_len <= 0)
        return FP8KV_OK;
    if (num_seqs > 65535)
        return FP8KV_FAIL("gather: %d sequences (at most 65535 per launch)", num_seqs);
    if (nsides < 1 || nsides > 2)
        return FP8KV_FAIL("gather: %d sides (key, value: 1 or 2)", nsides);
    /* 8 codes a thread: its 16-byte store of f16/bf16 values and its neighbours' are one
     * contiguous run (a thread writing 32 bytes as two stores would leave every 32-byte sector
     * half written by each store instruction, and L2 merging the halves) */
    const int vec = vec_of(shape.head_size, 8);
    const uint64_t items = (uint64_t)max_seq_len * shape.num_heads * shape.head_size / vec;
    if (items >= (1ull << 31))
        return FP8KV_FAIL("gather: %llu work items for one sequence (at most 2^31)",
                          (unsigned long long)items);
    /* two blocks per multiprocessor (over both sides), all resident at once, each building its
     * table once: on the H200 fewer concurrent streams of cache blocks read faster (key and
     * value in one launch, bf16 out; 2, 3, 4 blocks per multiprocessor and the 4 the registers
     * allow: 83%, 79%, 79%, 80% of the copy bandwidth; one launch per side, 1, 2, 3, 4, 6
     * blocks: 62%, 78%, 75%, 74%, 74%) */
    const unsigned fill = (unsigned)std::max(1, g_device.multiprocessors * 2 / (num_seqs * nsides));
    const dim3 grid(blocks_for((items + ITEMS - 1) / ITEMS, THREADS, std::min(fill, 1u << 16)),
                    (unsigned)num_seqs, (unsigned)nsides);
    const int format = cfg.format;
    switch (out) {
    case FP8KV_KV_F32:
        launch_out<FP8KV_KV_F32>(vec, grid, format, shape, sides, d_block_table, max_blocks_per_seq,
                                 d_row_start, d_seq_lens);
        break;
    case FP8KV_KV_F16:
        launch_out<FP8KV_KV_F16>(vec, grid, format, shape, sides, d_block_table, max_blocks_per_seq,
                                 d_row_start, d_seq_lens);
        break;
    case FP8KV_KV_BF16:
        launch_out<FP8KV_KV_BF16>(vec, grid, format, shape, sides, d_block_table,
                                  max_blocks_per_seq, d_row_start, d_seq_lens);
        break;
    default: return FP8KV_FAIL("gather: unknown output dtype %d", out);
    }
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_OK;
}

} // namespace fp8kv_gpu

extern "C" int fp8kv_gpu_gather_dequant(struct fp8kv_codec_cfg cfg,
                                        const struct fp8kv_cache_shape *shape, int is_key,
                                        const uint8_t *cache, const int32_t *block_table,
                                        int max_blocks_per_seq, const int32_t *seq_lens,
                                        int num_seqs, float scale, enum fp8kv_kv_dtype out,
                                        void *dst)
{
    int rc = require_open("fp8kv_gpu_gather_dequant");
    if (rc != 0 || (rc = check_shape(shape, "gather")) != 0)
        return rc;
    if (num_seqs < 0 || max_blocks_per_seq < 1)
        return FP8KV_FAIL("gather: %d sequences, %d blocks per sequence", num_seqs,
                          max_blocks_per_seq);
    /* the host checks the indices the kernel will follow: a bad table is an error, not a fault */
    std::vector<int64_t> row_start((size_t)num_seqs + 1, 0);
    int longest = 0;
    for (int i = 0; i < num_seqs; i++) {
        if (seq_lens[i] < 0 || seq_lens[i] > max_blocks_per_seq * shape->block_size)
            return FP8KV_FAIL("gather: seq_lens[%d] = %d exceeds the block table", i, seq_lens[i]);
        for (int j = 0; j * shape->block_size < seq_lens[i]; j++) {
            const int32_t b = block_table[(size_t)i * max_blocks_per_seq + j];
            if (b < 0 || b >= shape->num_blocks)
                return FP8KV_FAIL("gather: block_table[%d][%d] = %d is outside the cache", i, j, b);
        }
        row_start[i + 1] = row_start[i] + seq_lens[i];
        longest = seq_lens[i] > longest ? seq_lens[i] : longest;
    }
    const size_t rows = (size_t)row_start[num_seqs];
    const size_t out_bytes = rows * shape->num_heads * shape->head_size * fp8kv_kv_dtype_size(out);
    buffer d_cache, d_table, d_rows, d_lens, d_dst;
    if ((rc = d_cache.upload(cache, fp8kv_cache_bytes(shape))) != 0 ||
        (rc = d_table.upload(block_table,
                             (size_t)num_seqs * max_blocks_per_seq * sizeof(int32_t))) != 0 ||
        (rc = d_rows.upload(row_start.data(), row_start.size() * sizeof(int64_t))) != 0 ||
        (rc = d_lens.upload(seq_lens, (size_t)num_seqs * sizeof(int32_t))) != 0 ||
        (rc = d_dst.upload(dst, out_bytes)) != 0) /* unwritten outputs stay as they were */
        return rc;
    gather_sides sides = {};
    sides.side[0] = {d_cache.as<uint8_t>(), static_cast<uint8_t *>(d_dst.ptr), scale, is_key};
    if ((rc = launch_gather(cfg, *shape, sides, 1, d_table.as<int32_t>(), max_blocks_per_seq,
                            d_rows.as<int64_t>(), d_lens.as<int32_t>(), num_seqs, longest, out)) !=
        0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return d_dst.download(dst, out_bytes);
}
