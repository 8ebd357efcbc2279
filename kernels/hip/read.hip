/* read.hip — gather + dequant by block table (the read of fp8kv/kv_cache.h).
 *
 * Output row r of sequence i is token position r of that sequence, found through its block
 * table; rows of the sequences follow each other (the host gives each sequence's first row).
 * Each thread takes VEC consecutive dimensions of one head of one row: one VEC-byte load of
 * codes where the layout keeps them contiguous (NHD, split-x key), dequant (decode * scale in
 * f32, NaN codes passed through), the f16/bf16 rounding of codec.h, and 16-byte stores.
 */
#include "common.h"

#include <vector>

using namespace fp8kv_gpu;

namespace {

constexpr unsigned THREADS = 128;

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

/* blockIdx.y: the sequence; threads run over its (position, item) pairs. */
template <int OUT, int VEC>
__global__ void __launch_bounds__(THREADS)
    gather_kernel(int fnuz, struct fp8kv_cache_shape shape, int is_key, const uint8_t *cache,
                  const int32_t *block_table, int max_blocks_per_seq, const int64_t *row_start,
                  const int32_t *seq_lens, float scale, uint8_t *dst)
{
    typedef out_elem<OUT> E;
    const int seq = blockIdx.y, hs = shape.head_size;
    const uint32_t items = (uint32_t)(shape.num_heads * hs / VEC);
    const uint32_t total = (uint32_t)seq_lens[seq] * items; /* < 2^31: the host checks */
    for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < total;
         g += gridDim.x * blockDim.x) {
        const int pos = (int)(g / items), item = (int)(g % items);
        const int h = item * VEC / hs, d = item * VEC % hs;
        const int32_t block =
            block_table[(size_t)seq * max_blocks_per_seq + (size_t)(pos / shape.block_size)];
        const int64_t slot = (int64_t)block * shape.block_size + pos % shape.block_size;
        uint8_t codes[VEC];
        if (is_key) {
            load_bytes<VEC>(cache + key_offset(shape, slot, h, d), codes);
        } else if (shape.layout == FP8KV_LAYOUT_SPLIT_X) {
#pragma unroll
            for (int k = 0; k < VEC; k++)
                codes[k] = cache[value_offset(shape, slot, h, d + k)];
        } else {
            load_bytes<VEC>(cache + value_offset(shape, slot, h, d), codes);
        }
        uint8_t raw[VEC * E::size];
#pragma unroll
        for (int k = 0; k < VEC; k++)
            E::put(raw + k * E::size, dequant(fnuz, codes[k], scale));
        const size_t row = (size_t)(row_start[seq] + pos);
        uint8_t *out = dst + ((row * shape.num_heads + h) * hs + d) * E::size;
        if constexpr (VEC * E::size >= 16) {
#pragma unroll
            for (int b = 0; b < VEC * E::size; b += 16)
                store_bytes<16>(out + b, raw + b);
        } else {
            store_bytes<VEC * E::size>(out, raw);
        }
    }
}

template <int OUT>
void launch_out(int vec, dim3 grid, int fnuz, const struct fp8kv_cache_shape &shape, int is_key,
                const uint8_t *cache, const int32_t *table, int max_blocks,
                const int64_t *row_start, const int32_t *lens, float scale, uint8_t *dst)
{
    if (vec == 16)
        gather_kernel<OUT, 16><<<grid, THREADS>>>(fnuz, shape, is_key, cache, table, max_blocks,
                                                  row_start, lens, scale, dst);
    else if (vec == 8)
        gather_kernel<OUT, 8><<<grid, THREADS>>>(fnuz, shape, is_key, cache, table, max_blocks,
                                                 row_start, lens, scale, dst);
    else
        gather_kernel<OUT, 1><<<grid, THREADS>>>(fnuz, shape, is_key, cache, table, max_blocks,
                                                 row_start, lens, scale, dst);
}

} // namespace

namespace fp8kv_gpu {

int launch_gather(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape &shape, int is_key,
                  const uint8_t *d_cache, const int32_t *d_block_table, int max_blocks_per_seq,
                  const int64_t *d_row_start, const int32_t *d_seq_lens, int num_seqs,
                  int max_seq_len, float scale, int out, void *d_dst)
{
    if (num_seqs <= 0 || max_seq_len <= 0)
        return FP8KV_GPU_OK;
    if (num_seqs > 65535)
        return FP8KV_FAIL("gather: %d sequences (at most 65535 per launch)", num_seqs);
    const int vec = vec_of(shape.head_size, 16);
    const uint64_t items = (uint64_t)max_seq_len * shape.num_heads * shape.head_size / vec;
    if (items >= (1ull << 31))
        return FP8KV_FAIL("gather: %llu work items for one sequence (at most 2^31)",
                          (unsigned long long)items);
    const dim3 grid(blocks_for(items, THREADS, 1u << 16), (unsigned)num_seqs);
    const int fnuz = cfg.format == FP8KV_CODEC_E4M3FNUZ;
    uint8_t *dst = static_cast<uint8_t *>(d_dst);
    switch (out) {
    case FP8KV_KV_F32:
        launch_out<FP8KV_KV_F32>(vec, grid, fnuz, shape, is_key, d_cache, d_block_table,
                                 max_blocks_per_seq, d_row_start, d_seq_lens, scale, dst);
        break;
    case FP8KV_KV_F16:
        launch_out<FP8KV_KV_F16>(vec, grid, fnuz, shape, is_key, d_cache, d_block_table,
                                 max_blocks_per_seq, d_row_start, d_seq_lens, scale, dst);
        break;
    case FP8KV_KV_BF16:
        launch_out<FP8KV_KV_BF16>(vec, grid, fnuz, shape, is_key, d_cache, d_block_table,
                                  max_blocks_per_seq, d_row_start, d_seq_lens, scale, dst);
        break;
    default: return FP8KV_FAIL("gather: unknown output dtype %d", out);
    }
    FP8KV_GPU_CHECK_LAUNCH();
    return FP8KV_GPU_OK;
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
    const size_t out_bytes = rows * shape->num_heads * shape->head_size * dtype_size(out);
    buffer d_cache, d_table, d_rows, d_lens, d_dst;
    if ((rc = d_cache.upload(cache, fp8kv_cache_bytes(shape))) != 0 ||
        (rc = d_table.upload(block_table,
                             (size_t)num_seqs * max_blocks_per_seq * sizeof(int32_t))) != 0 ||
        (rc = d_rows.upload(row_start.data(), row_start.size() * sizeof(int64_t))) != 0 ||
        (rc = d_lens.upload(seq_lens, (size_t)num_seqs * sizeof(int32_t))) != 0 ||
        (rc = d_dst.upload(dst, out_bytes)) != 0) /* unwritten outputs stay as they were */
        return rc;
    if ((rc = launch_gather(cfg, *shape, is_key, d_cache.as<uint8_t>(), d_table.as<int32_t>(),
                            max_blocks_per_seq, d_rows.as<int64_t>(), d_lens.as<int32_t>(),
                            num_seqs, longest, scale, out, d_dst.ptr)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return d_dst.download(dst, out_bytes);
}
