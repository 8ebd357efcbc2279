/* read.hip — gather + dequant by block table (the read of fp8kv/kv_cache.h).
 *
 * The output rows of all sequences follow each other (the host gives each sequence's first
 * row): output row r is token position r - row_start[i] of the sequence i whose rows hold r,
 * found through its block table. Each work item is VEC consecutive dimensions of one head of
 * one output row, for every side of the launch (key and value at once where both are asked
 * for: they share the row's lookup), taken in order so that the resident blocks read and write
 * one moving window of memory: on the hardware path, many waves of short blocks, each over its
 * own run of consecutive items (HARDWARE_ITEMS); on the table path, one wave of blocks whose
 * threads walk the items a grid's width apart (TABLE_ITEMS). A thread loads the codes of its
 * items in flight (one VEC-byte load each where the layout keeps them contiguous: NHD, split-x
 * key) before it converts and stores any of them.
 * Conversion: decode, times the side's scale in f32 (NaN codes passed through, not
 * multiplied), then the f16/bf16 rounding of codec.h; out_of_code below. Two ways compute it:
 *   - e4m3fn on devices with the hardware conversion (cvt.rn.f16x2.e4m3x2, exact) and finite
 *     scales: decoded in registers, four codes an instruction, the products rounded two at a
 *     time (cvt.rn.{bf16x2,f16x2}.f32; no NaN can reach them: an item holding a NaN code takes
 *     the per-element function instead);
 *   - every other case: a table of the outputs of all 256 codes per side in shared memory,
 *     built with that per-element function, so that a value costs one shared load.
 */
#include "common.h"

#include <algorithm>
#include <math.h>
#include <vector>

using namespace fp8kv_gpu;

namespace
{

constexpr unsigned THREADS = 256;
/* The table path's walk: one wave of blocks walks the whole output in steps of the grid, with
 * TABLE_ITEMS items per thread in flight and TABLE_BLOCKS_PER_SM blocks per multiprocessor at
 * most (also the register cap): 6 blocks were faster than 4 or 8, with 1, 2 or 4 items alike.
 * Neither the conversion nor the block-table indirection is what keeps it below the copy, nor a
 * thread's chain of dependent loads (docs/performance.md, §Gather: the table path's walk, with
 * what else was tried). */
constexpr int TABLE_ITEMS = 2, TABLE_BLOCKS_PER_SM = 6;
/* The hardware path's walk (its blocks have no tables to fill first): many waves of short
 * blocks, each PASSES passes of THREADS x HARDWARE_ITEMS consecutive items, so that the
 * multiprocessors that free up first take the next blocks, where one wave walking the whole
 * output left some idle at its end (why a wave's blocks end unevenly is not known: the
 * multiprocessors read a plain contiguous buffer at one pace, fp8kv_gpu_bench_sm_spread in
 * bench.hip); hardware_blocks_per_sm blocks per multiprocessor at least. One item a thread with
 * every thread slot filled beat two items a thread, one-pass blocks and the one-wave walk
 * (docs/performance.md, §Gather: the hardware path's walk). */
constexpr int HARDWARE_ITEMS = 1, PASSES = 2;
constexpr unsigned BLOCK_ITEMS = PASSES * THREADS * HARDWARE_ITEMS; /* a hardware-path block */
/* The hardware path's blocks per multiprocessor at least (the register cap): every thread slot
 * filled (8 blocks, 32 registers on sm_90; 6 where a multiprocessor holds 1536 threads) where
 * the kernel fits without spilling (NHD, 2-byte outputs: at 32 registers nvcc 13 spills 12 bytes
 * for f32 outputs, 68 for the split-x layout), else 6 (40 registers). */
constexpr int hardware_blocks_per_sm(int out, int layout)
{
    return layout == FP8KV_LAYOUT_NHD && out != FP8KV_KV_F32 ? NV_SM_THREADS / (int)THREADS : 6;
}

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

/* out_of_code: the output of one code at scale `scale`, the function both ways compute. */
template <int OUT>
__device__ __forceinline__ void out_of_code(uint8_t *raw, int format, uint32_t code, float scale)
{
    out_elem<OUT>::put(raw, scale_decoded(decode_fast_of(format, code), scale));
}

/* put_pair: out_elem<OUT>::put of y0 and y1 (neither a NaN), into raw[0 .. 2 size). */
template <int OUT> __device__ __forceinline__ void put_pair(uint8_t *raw, float y0, float y1)
{
#ifdef FP8KV_ARCH_NV_SM89_PLUS
    if constexpr (OUT != FP8KV_KV_F32) { /* RNE, overflow to Inf: codec.h's rounding */
        uint32_t r;
        if constexpr (OUT == FP8KV_KV_BF16)
            asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(y1), "f"(y0));
        else
            asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(y1), "f"(y0));
        memcpy(raw, &r, 4);
        return;
    }
#endif
    out_elem<OUT>::put(raw, y0);
    out_elem<OUT>::put(raw + out_elem<OUT>::size, y1);
}

/* The table of the table path: table[code][lane] (32 copies, one per bank, so that a warp's 32
 * random lookups never conflict) holds the bits of out_of_code in its low bytes; one table per
 * side (its scale). */
constexpr int COPIES = 32;
constexpr size_t TABLE_WORDS = 256 * COPIES;

template <int OUT>
__device__ __forceinline__ void fill_table(uint32_t *table, int format, float scale)
{
    for (int code = threadIdx.x; code < 256; code += blockDim.x) {
        uint8_t raw[4] = {0, 0, 0, 0};
        out_of_code<OUT>(raw, format, (uint32_t)code, scale);
        uint32_t v;
        memcpy(&v, raw, 4);
        const uint4 v4 = make_uint4(v, v, v, v);
#pragma unroll
        for (int c = 0; c < COPIES; c += 4)
            *reinterpret_cast<uint4 *>(table + code * COPIES + c) = v4;
    }
}

/* An item's VEC codes, and its outputs, by value (4-byte words). */
template <int VEC> struct item_codes {
    uint32_t w[VEC / 4];
};
template <int OUT, int VEC> struct item_bytes {
    uint32_t w[VEC * out_elem<OUT>::size / 4];
};
template <int VEC> __device__ __forceinline__ item_codes<VEC> codes_of(const uint8_t (&codes)[VEC])
{
    item_codes<VEC> c;
    memcpy(c.w, codes, VEC);
    return c;
}

/* The outputs of an item by out_of_code, out of line: the hardware path's rare items that hold a
 * NaN code (inlined, the per-element function would multiply the kernel's code size). */
template <int OUT, int VEC>
__device__ __noinline__ item_bytes<OUT, VEC> item_by_function(item_codes<VEC> c, int format,
                                                              float scale)
{
    uint8_t codes[VEC], raw[VEC * out_elem<OUT>::size];
    memcpy(codes, c.w, VEC);
#pragma unroll
    for (int k = 0; k < VEC; k++)
        out_of_code<OUT>(raw + k * out_elem<OUT>::size, format, codes[k], scale);
    item_bytes<OUT, VEC> b;
    memcpy(b.w, raw, sizeof b.w);
    return b;
}

/* The outputs of one item's VEC codes into raw (VEC * size bytes). HARDWARE: the e4m3fn
 * conversion (VEC a multiple of 4); else the side's table (`mine`: this lane's copy). */
template <int OUT, int VEC, bool HARDWARE>
__device__ __forceinline__ void convert_item(const uint8_t (&codes)[VEC], int format, float scale,
                                             const uint32_t *mine, uint8_t *raw)
{
    typedef out_elem<OUT> E;
#ifdef FP8KV_ARCH_NV_SM89_PLUS
    if constexpr (HARDWARE) {
        uint32_t w[VEC / 4], special = 0;
#pragma unroll
        for (int k = 0; k < VEC / 4; k++) {
            memcpy(&w[k], codes + 4 * k, 4);
            special |= (w[k] & 0x7F7F7F7Fu) + 0x01010101u; /* bit 7 of a byte: 0x7F or 0xFF */
        }
        if ((special & 0x80808080u) == 0) {
#pragma unroll
            for (int k = 0; k < VEC / 4; k++) {
                float d[4];
                e4m3x4_to_f32(w[k], d);
                put_pair<OUT>(raw + (4 * k) * E::size, d[0] * scale, d[1] * scale);
                put_pair<OUT>(raw + (4 * k + 2) * E::size, d[2] * scale, d[3] * scale);
            }
        } else {
            const item_bytes<OUT, VEC> b =
                item_by_function<OUT, VEC>(codes_of<VEC>(codes), format, scale);
            memcpy(raw, b.w, sizeof b.w);
        }
        return;
    }
#endif
    (void)format;
    (void)scale;
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        const uint32_t v = mine[codes[k] * COPIES];
        memcpy(raw + k * E::size, &v, E::size);
    }
}

/* The sequences' first output rows (num_seqs + 1 of them): on the hardware path, staged in
 * shared memory when at most SHARED_ROWS, so that a cursor's seek makes no global round trips
 * in the middle of a thread's loads (+0.5 to +0.9% of the copy bandwidth at 16 sequences:
 * docs/performance.md, §Gather: row starts); else (and on the table path, whose shared memory
 * its tables fill: 64 KiB, all a gfx90a block has) read from the global array. */
constexpr int SHARED_ROWS = 2048;
/* Whether a launch stages them (the kernel and its launch both ask, so that they agree on the
 * dynamic shared memory). */
__host__ __device__ constexpr bool rows_staged(bool hardware, int num_seqs)
{
    return hardware && num_seqs < SHARED_ROWS;
}
struct row_starts {
    const int64_t *global;
    const int32_t *shared; /* null: use global */
    __device__ __forceinline__ int64_t operator[](int i) const
    {
        return shared ? shared[i] : global[i];
    }
};

/* The sequence holding output rows [lo, hi): found by binary search over the row starts when a
 * thread's row passes hi (rows only grow along a thread's walk). */
struct seq_cursor {
    int seq = -1, lo = 0, hi = 0;
    __device__ __forceinline__ void seek(const row_starts &row_start, int num_seqs, int row)
    {
        if (row < hi)
            return;
        int a = seq + 1, b = num_seqs - 1; /* the last sequence starting at or before row */
        while (a < b) {
            const int m = (a + b + 1) / 2;
            if (row_start[m] <= row)
                a = m;
            else
                b = m - 1;
        }
        seq = a;
        lo = (int)row_start[a];
        hi = (int)row_start[a + 1];
    }
};

/* One kernel per output dtype, vector width, layout and conversion. On the hardware path block
 * b takes the BLOCK_ITEMS items from b x BLOCK_ITEMS on, thread t of it the items t,
 * t + THREADS, ... of them; on the table path thread g takes items g, g + the
 * grid's threads, ... (row, item) advances by a fixed step with a carry (no division per item),
 * and total_rows * items < 2^31 (the host checks). Dynamic shared memory: the tables of the
 * table path, or the row starts of the hardware path (see row_starts). */
template <int OUT, int VEC, int LAYOUT, bool HARDWARE>
__global__ void __launch_bounds__(THREADS,
                                  nv_min_blocks(HARDWARE ? hardware_blocks_per_sm(OUT, LAYOUT)
                                                         : TABLE_BLOCKS_PER_SM))
    gather_kernel(int format, struct fp8kv_cache_shape shape, gather_sides sides, int nsides,
                  const int32_t *block_table, int max_blocks_per_seq, const int64_t *row_start,
                  int num_seqs, int total_rows, int bs_shift)
{
    typedef out_elem<OUT> E;
    constexpr int ITEMS = HARDWARE ? HARDWARE_ITEMS : TABLE_ITEMS; /* a thread's items in flight */
    extern __shared__ uint32_t tables[]; /* [side][256][COPIES], the table path only */
    if constexpr (!HARDWARE) {
#pragma unroll
        for (int i = 0; i < 2; i++)
            if (i < nsides)
                fill_table<OUT>(tables + i * TABLE_WORDS, format, sides.side[i].scale);
    }
    row_starts starts = {row_start, nullptr};
    if (rows_staged(HARDWARE, num_seqs)) {
        int32_t *shared = reinterpret_cast<int32_t *>(tables);
        for (int i = threadIdx.x; i <= num_seqs; i += THREADS)
            shared[i] = (int32_t)row_start[i]; /* total_rows < 2^31 */
        starts.shared = shared;
    }
    __syncthreads();
    const int hs = shape.head_size, bs = shape.block_size;
    const int items = shape.num_heads * hs / VEC, row_elems = shape.num_heads * hs;
    /* this thread's items: g, g + stride, ... below end (unsigned: total_rows x items < 2^31,
     * so an index a few strides past the end still fits) */
    const uint32_t total = (uint32_t)total_rows * (uint32_t)items;
    uint32_t g, stride, end;
    if constexpr (HARDWARE) { /* the block's own BLOCK_ITEMS consecutive items */
        const uint32_t first = blockIdx.x * BLOCK_ITEMS;
        g = first + threadIdx.x;
        stride = THREADS;
        end = first + min(BLOCK_ITEMS, total - first);
    } else { /* every item, in steps of the grid */
        g = blockIdx.x * THREADS + threadIdx.x;
        stride = gridDim.x * THREADS;
        end = total;
    }
    const int step_row = (int)stride / items, step_item = (int)stride % items;
    struct walk {
        int row, item;
        __device__ __forceinline__ void next(int step_row, int step_item, int items)
        {
            row += step_row;
            item += step_item;
            if (item >= items) {
                item -= items;
                row++;
            }
        }
    };
    walk w{(int)(g / (uint32_t)items), (int)(g % (uint32_t)items)};
    seq_cursor cur;
    uint32_t lin = g;
    while (lin < end) {
        uint8_t codes[ITEMS][2][VEC];
        walk x = w;
#pragma unroll
        for (int u = 0; u < ITEMS; u++, x.next(step_row, step_item, items)) {
            if (lin + u * stride >= end)
                continue;
            cur.seek(starts, num_seqs, x.row);
            const int pos = x.row - cur.lo;
            const int32_t block = block_table[(size_t)cur.seq * max_blocks_per_seq +
                                              (bs_shift >= 0 ? pos >> bs_shift : pos / bs)];
            const int64_t slot = (int64_t)block * bs + (bs_shift >= 0 ? pos & (bs - 1) : pos % bs);
#pragma unroll
            for (int i = 0; i < 2; i++) { /* constant indices: the codes stay in registers */
                if (i >= nsides)
                    continue;
                const uint8_t *cache = sides.side[i].cache;
                if (LAYOUT == FP8KV_LAYOUT_NHD) {
                    load_bytes<VEC>(cache + (size_t)slot * row_elems + (size_t)x.item * VEC,
                                    codes[u][i]);
                } else {
                    const int h = x.item * VEC / hs, d = x.item * VEC % hs;
                    if (sides.side[i].is_key) {
                        load_bytes<VEC>(cache + key_offset(shape, slot, h, d), codes[u][i]);
                    } else {
#pragma unroll
                        for (int k = 0; k < VEC; k++)
                            codes[u][i][k] = cache[value_offset(shape, slot, h, d + k)];
                    }
                }
            }
        }
        x = w;
#pragma unroll
        for (int u = 0; u < ITEMS; u++, x.next(step_row, step_item, items)) {
            if (lin + u * stride >= end)
                continue;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                if (i >= nsides)
                    continue;
                uint8_t raw[VEC * E::size];
                convert_item<OUT, VEC, HARDWARE>(codes[u][i], format, sides.side[i].scale,
                                                 tables + i * TABLE_WORDS + threadIdx.x % COPIES,
                                                 raw);
                /* the output rows are [heads][head_size] in every layout */
                uint8_t *out = sides.side[i].dst +
                               ((size_t)x.row * row_elems + (size_t)x.item * VEC) * E::size;
                if constexpr (VEC * E::size >= 16) {
#pragma unroll
                    for (int b = 0; b < VEC * E::size; b += 16)
                        store_bytes<16>(out + b, raw + b);
                } else {
                    store_bytes<VEC * E::size>(out, raw);
                }
            }
        }
        w = x;
        lin += ITEMS * stride;
    }
}

/* The launch arguments shared by the instantiations. */
struct gather_launch {
    int format;
    struct fp8kv_cache_shape shape;
    gather_sides sides;
    int nsides;
    const int32_t *table;
    int max_blocks;
    const int64_t *row_start;
    int num_seqs, total_rows, bs_shift;
    uint64_t items;
};

template <int OUT, int VEC, int LAYOUT, bool HARDWARE> int launch_kernel(const gather_launch &a)
{
    const auto kernel = gather_kernel<OUT, VEC, LAYOUT, HARDWARE>;
    /* the table path's two tables pass the default 48 KiB of dynamic shared memory */
    constexpr size_t most = HARDWARE ? SHARED_ROWS * 4 : 2 * TABLE_WORDS * sizeof(uint32_t);
    if (most > DEFAULT_SHARED)
        FP8KV_GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(kernel),
                                            hipFuncAttributeMaxDynamicSharedMemorySize, (int)most));
    const size_t shared = !HARDWARE ? a.nsides * TABLE_WORDS * sizeof(uint32_t)
                          : rows_staged(HARDWARE, a.num_seqs) ? (size_t)(a.num_seqs + 1) * 4
                                                              : 0;
    /* the hardware path: short blocks, each BLOCK_ITEMS consecutive items (see HARDWARE_ITEMS); the
     * table path, whose blocks first fill 64 KiB of tables: one wave of them (the occupancy query
     * asked once, and only there) */
    unsigned grid;
    if constexpr (HARDWARE) {
        grid = blocks_for(a.items, BLOCK_ITEMS, ~0u);
    } else {
        static const int resident = resident_blocks_of(kernel, THREADS, most);
        grid = blocks_for((a.items + TABLE_ITEMS - 1) / TABLE_ITEMS, THREADS,
                          (unsigned)std::max(1, g_device.multiprocessors *
                                                    std::min(resident, TABLE_BLOCKS_PER_SM)));
    }
    kernel<<<grid, THREADS, shared>>>(a.format, a.shape, a.sides, a.nsides, a.table, a.max_blocks,
                                      a.row_start, a.num_seqs, a.total_rows, a.bs_shift);
    return FP8KV_OK;
}

template <int OUT, int LAYOUT> int launch_layout(int vec, bool hardware, const gather_launch &a)
{
    if (vec == 8 && hardware)
        return launch_kernel<OUT, 8, LAYOUT, true>(a);
    if (vec == 8)
        return launch_kernel<OUT, 8, LAYOUT, false>(a);
    return launch_kernel<OUT, 1, LAYOUT, false>(a);
}

template <int OUT> int launch_out(int vec, bool hardware, const gather_launch &a)
{
    if (a.shape.layout == FP8KV_LAYOUT_NHD)
        return launch_layout<OUT, FP8KV_LAYOUT_NHD>(vec, hardware, a);
    return launch_layout<OUT, FP8KV_LAYOUT_SPLIT_X>(vec, hardware, a);
}

} // namespace

namespace fp8kv_gpu
{

int launch_gather(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape,
                  const gather_sides &sides, int nsides, const int32_t *d_block_table,
                  int max_blocks_per_seq, const int64_t *d_row_start, int num_seqs,
                  int64_t total_rows, int out)
{
    if (num_seqs <= 0 || total_rows <= 0)
        return FP8KV_OK;
    if (nsides < 1 || nsides > 2)
        return FP8KV_FAIL("gather: %d sides (key, value: 1 or 2)", nsides);
    /* 8 codes a thread: its 16-byte store of f16/bf16 values and its neighbours' are one
     * contiguous run (a thread writing 32 bytes as two stores would leave every 32-byte sector
     * half written by each store instruction, and L2 merging the halves) */
    const int vec = vec_of(shape.head_size, 8);
    const uint64_t items = (uint64_t)total_rows * shape.num_heads * shape.head_size / vec;
    if (items >= (1ull << 31))
        return FP8KV_FAIL("gather: %llu work items in one launch (at most 2^31)",
                          (unsigned long long)items);
    const int bs_shift = shift_of(shape.block_size);
    const gather_launch a = {
        cfg.format,  shape,    sides,           nsides,   d_block_table, max_blocks_per_seq,
        d_row_start, num_seqs, (int)total_rows, bs_shift, items};
    bool hardware = cfg.format == FP8KV_CODEC_E4M3FN &&
                    fp8kv_gpu_codec_available(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE);
    for (int i = 0; i < nsides; i++)
        hardware = hardware && isfinite(sides.side[i].scale);
    int rc;
    switch (out) {
    case FP8KV_KV_F32: rc = launch_out<FP8KV_KV_F32>(vec, hardware, a); break;
    case FP8KV_KV_F16: rc = launch_out<FP8KV_KV_F16>(vec, hardware, a); break;
    case FP8KV_KV_BF16: rc = launch_out<FP8KV_KV_BF16>(vec, hardware, a); break;
    default: return FP8KV_FAIL("gather: unknown output dtype %d", out);
    }
    if (rc != 0)
        return rc;
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
    for (int i = 0; i < num_seqs; i++) {
        if (seq_lens[i] < 0 || seq_lens[i] > max_blocks_per_seq * shape->block_size)
            return FP8KV_FAIL("gather: seq_lens[%d] = %d exceeds the block table", i, seq_lens[i]);
        for (int j = 0; j * shape->block_size < seq_lens[i]; j++) {
            const int32_t b = block_table[(size_t)i * max_blocks_per_seq + j];
            if (b < 0 || b >= shape->num_blocks)
                return FP8KV_FAIL("gather: block_table[%d][%d] = %d is outside the cache", i, j, b);
        }
        row_start[i + 1] = row_start[i] + seq_lens[i];
    }
    const size_t rows = (size_t)row_start[num_seqs];
    const size_t out_bytes = rows * shape->num_heads * shape->head_size * fp8kv_kv_dtype_size(out);
    buffer d_cache, d_table, d_rows, d_dst;
    if ((rc = d_cache.upload(cache, fp8kv_cache_bytes(shape))) != 0 ||
        (rc = d_table.upload(block_table,
                             (size_t)num_seqs * max_blocks_per_seq * sizeof(int32_t))) != 0 ||
        (rc = d_rows.upload(row_start.data(), row_start.size() * sizeof(int64_t))) != 0 ||
        (rc = d_dst.upload(dst, out_bytes)) != 0) /* unwritten outputs stay as they were */
        return rc;
    gather_sides sides = {};
    sides.side[0] = {d_cache.as<uint8_t>(), static_cast<uint8_t *>(d_dst.ptr), scale, is_key};
    if ((rc = launch_gather(cfg, *shape, sides, 1, d_table.as<int32_t>(), max_blocks_per_seq,
                            d_rows.as<int64_t>(), num_seqs, row_start[num_seqs], out)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return d_dst.download(dst, out_bytes);
}
