/* kv_abi.hip — the device KV kernels as KV-ABI entry points (fp8kv/kv_plugin.h) on device
 * memory: every array argument is a device pointer, as an engine's kernels take them, and each
 * call returns when its results are in place. The store uses the bits codec; the scale model is
 * the golden cases' (f32_div). The harness validates slots and block tables before a call; the
 * gather and attention still read the sequence lengths back to size their launches. Scales are
 * per tensor (the descriptor of kernels/hip/subjects.c says so; another granularity is refused). */
#include "common.h"

#include <vector>

using namespace fp8kv_gpu;

namespace
{

int begin(const struct fp8kv_kv_layout_v1 *layout, const char *what,
          struct fp8kv_cache_shape *shape)
{
    int rc = require_open(what);
    *shape = fp8kv_kv_abi_shape(layout);
    if (rc == 0 && layout->scale_granularity != FP8KV_KV_SCALE_TENSOR)
        return FP8KV_FAIL("%s: fp8kv's GPU kernels take scales per tensor only, not %s", what,
                          fp8kv_kv_scale_granularity_name(layout->scale_granularity));
    return rc != 0 ? rc : check_shape(shape, what);
}

/* The lengths of the sequences, from the device; the longest into *longest. */
int read_lengths(const int32_t *d_seq_lens, int num_seqs, std::vector<int32_t> &lens, int *longest)
{
    lens.assign((size_t)num_seqs, 0);
    if (num_seqs > 0)
        FP8KV_GPU_CHECK(hipMemcpy(lens.data(), d_seq_lens, (size_t)num_seqs * sizeof(int32_t),
                                  hipMemcpyDeviceToHost));
    *longest = 0;
    for (int32_t n : lens) {
        if (n < 0)
            return FP8KV_FAIL("a sequence length of %d", n);
        *longest = n > *longest ? n : *longest;
    }
    return FP8KV_OK;
}

} // namespace

extern "C" int fp8kv_gpu_kv_store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    (void)ctx;
    struct fp8kv_cache_shape shape;
    int rc = begin(a->cache, "store", &shape);
    if (rc == 0)
        rc = launch_store(FP8KV_GPU_CODEC_BITS, fp8kv_kv_abi_cfg(a->cache, FP8KV_CODEC_F32_DIV),
                          shape, a->in_dtype, a->key, a->value, a->num_tokens, a->slot_mapping,
                          a->k_scale, a->v_scale, a->key_cache, a->value_cache);
    if (rc == 0)
        FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return rc;
}

extern "C" int fp8kv_gpu_kv_gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    (void)ctx;
    struct fp8kv_cache_shape shape;
    std::vector<int32_t> lens;
    int longest = 0, rc = begin(a->cache, "gather", &shape);
    if (rc == 0)
        rc = read_lengths(a->seq_lens, a->num_seqs, lens, &longest);
    if (rc != 0)
        return rc;
    std::vector<int64_t> row_start((size_t)a->num_seqs + 1, 0);
    for (int i = 0; i < a->num_seqs; i++)
        row_start[i + 1] = row_start[i] + lens[i];
    buffer d_rows;
    gather_sides sides = {};
    sides.side[0] = {static_cast<const uint8_t *>(a->cache_data), static_cast<uint8_t *>(a->out),
                     a->scale, a->is_key};
    if ((rc = d_rows.upload(row_start.data(), row_start.size() * sizeof(int64_t))) != 0 ||
        (rc = launch_gather(fp8kv_kv_abi_cfg(a->cache, FP8KV_CODEC_F32_DIV), shape, sides, 1,
                            a->block_table, a->max_blocks_per_seq, d_rows.as<int64_t>(),
                            a->num_seqs, row_start[(size_t)a->num_seqs], a->out_dtype)) != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return FP8KV_OK;
}

namespace
{

/* The query rows of a call with query_lens or a window (KV ABI 3): each row's sequence, first
 * token and end (fp8kv_kv_query_span), uploaded; *longest the most tokens a row attends to. */
int upload_query_rows(const struct fp8kv_kv_attention_args_v1 *a, const std::vector<int32_t> &lens,
                      buffer &d_seq, buffer &d_first, buffer &d_end, int *longest)
{
    std::vector<int32_t> qlens((size_t)a->num_seqs, 1), seq, first, end;
    if (a->query_lens && a->num_seqs > 0)
        FP8KV_GPU_CHECK(hipMemcpy(qlens.data(), a->query_lens,
                                  (size_t)a->num_seqs * sizeof(int32_t), hipMemcpyDeviceToHost));
    *longest = 0;
    for (int i = 0; i < a->num_seqs; i++) {
        if (qlens[i] < 1 || qlens[i] > std::max(lens[i], 1))
            return FP8KV_FAIL("attention: sequence %d has %d tokens and %d queries", i, lens[i],
                              qlens[i]);
        for (int j = 0; j < qlens[i]; j++) {
            int32_t lo, hi;
            fp8kv_kv_query_span(lens[i], qlens[i], j, a->window, &lo, &hi);
            seq.push_back(i);
            first.push_back(lo);
            end.push_back(hi);
            *longest = std::max(*longest, hi - lo);
        }
    }
    if ((int64_t)seq.size() != a->num_query_rows)
        return FP8KV_FAIL("attention: num_query_rows is %d, the query lengths sum to %zu",
                          a->num_query_rows, seq.size());
    int rc;
    if (!seq.empty() && ((rc = d_seq.upload(seq.data(), seq.size() * sizeof(int32_t))) != 0 ||
                         (rc = d_first.upload(first.data(), seq.size() * sizeof(int32_t))) != 0 ||
                         (rc = d_end.upload(end.data(), seq.size() * sizeof(int32_t))) != 0))
        return rc;
    return FP8KV_OK;
}

} // namespace

extern "C" int fp8kv_gpu_kv_attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    (void)ctx;
    struct fp8kv_cache_shape shape;
    std::vector<int32_t> lens;
    int longest = 0, rc = begin(a->cache, "attention", &shape);
    if (rc == 0)
        rc = read_lengths(a->seq_lens, a->num_seqs, lens, &longest);
    /* several queries a sequence or a window: each query row a launch row of its own */
    const bool by_rows = a->query_lens || a->window > 0;
    buffer d_seq, d_first, d_end, scratch;
    if (rc == 0 && by_rows)
        rc = upload_query_rows(a, lens, d_seq, d_first, d_end, &longest);
    query_rows rows;
    if (by_rows) {
        rows.seq = d_seq.as<int32_t>();
        rows.first = d_first.as<int32_t>();
    }
    if (rc == 0)
        rc = launch_attention(fp8kv_kv_abi_cfg(a->cache, FP8KV_CODEC_F32_DIV), shape, 0, a->query,
                              a->num_q_heads, a->key_cache, a->value_cache, a->block_table,
                              a->max_blocks_per_seq, by_rows ? d_end.as<int32_t>() : a->seq_lens,
                              by_rows ? a->num_query_rows : a->num_seqs, longest, a->k_scale,
                              a->v_scale, a->softmax_scale, 0, FP8KV_ATTENTION_AUTO, a->out,
                              scratch, rows);
    if (rc == 0)
        FP8KV_GPU_CHECK(hipDeviceSynchronize());
    return rc;
}
