/* kv_cache.c — the CPU reference KV-cache paths of fp8kv/kv_cache.h: store, gather + dequant,
 * paged-attention decode.
 *
 * Plain loops, one element at a time, in the order the contract describes: these are the
 * readable reference a device kernel is compared against, not a fast implementation. Every
 * conversion goes through the shared codecs of codec.h (store: fp8kv_store_f32; read:
 * fp8kv_decode_bits(code) * scale in f32, then RNE to f16 / bf16).
 */
#include "fp8kv/kv_cache.h"
#include "fp8kv/diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- layouts --------------------------------------------------------------------------------- */

size_t fp8kv_cache_bytes(const struct fp8kv_cache_shape *shape)
{
    return (size_t)shape->num_blocks * (size_t)shape->block_size * (size_t)shape->num_heads *
           (size_t)shape->head_size;
}

size_t fp8kv_cache_block_bytes(const struct fp8kv_cache_shape *shape)
{
    return (size_t)shape->block_size * (size_t)shape->num_heads * (size_t)shape->head_size;
}

size_t fp8kv_kv_packed_value_start(const struct fp8kv_cache_shape *shape)
{
    return shape->packing == FP8KV_PACKING_KV_FIRST      ? fp8kv_cache_bytes(shape)
           : shape->packing == FP8KV_PACKING_BLOCK_FIRST ? fp8kv_cache_block_bytes(shape)
                                                         : 0;
}

/* pack_block: where block b of the key (is_key) or value cache is in a packed tensor */
static size_t pack_block(const struct fp8kv_cache_shape *shape, size_t b, int is_key)
{
    const size_t block = fp8kv_cache_block_bytes(shape);
    if (shape->packing == FP8KV_PACKING_BLOCK_FIRST)
        return (2 * b + (is_key ? 0 : 1)) * block;
    return (is_key ? 0 : fp8kv_cache_bytes(shape)) + b * block;
}

void fp8kv_kv_pack(const struct fp8kv_cache_shape *shape, const uint8_t *key_cache,
                   const uint8_t *value_cache, uint8_t *packed)
{
    const size_t block = fp8kv_cache_block_bytes(shape);
    for (size_t b = 0; b < (size_t)shape->num_blocks; b++) {
        memcpy(packed + pack_block(shape, b, 1), key_cache + b * block, block);
        memcpy(packed + pack_block(shape, b, 0), value_cache + b * block, block);
    }
}

void fp8kv_kv_unpack(const struct fp8kv_cache_shape *shape, const uint8_t *packed,
                     uint8_t *key_cache, uint8_t *value_cache)
{
    const size_t block = fp8kv_cache_block_bytes(shape);
    for (size_t b = 0; b < (size_t)shape->num_blocks; b++) {
        memcpy(key_cache + b * block, packed + pack_block(shape, b, 1), block);
        memcpy(value_cache + b * block, packed + pack_block(shape, b, 0), block);
    }
}

/* packed_skip: the bytes block_first packing adds before the block of slot (the other
 * cache's blocks in between); 0 otherwise */
static size_t packed_skip(const struct fp8kv_cache_shape *shape, int64_t slot)
{
    return shape->packing == FP8KV_PACKING_BLOCK_FIRST
               ? (size_t)slot / (size_t)shape->block_size * fp8kv_cache_block_bytes(shape)
               : 0;
}

/* key_offset_unpacked: the offset of (slot, head, dim) in a key cache of its own */
static size_t key_offset_unpacked(const struct fp8kv_cache_shape *shape, int64_t slot, int head,
                                  int dim)
{
    const size_t bs = (size_t)shape->block_size, heads = (size_t)shape->num_heads,
                 hs = (size_t)shape->head_size;
    const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
    if (shape->layout == FP8KV_LAYOUT_SPLIT_X) {
        /* [block][head][dim / 16][pos][dim % 16] */
        const size_t chunks = hs / FP8KV_SPLIT_X;
        const size_t chunk = (size_t)dim / FP8KV_SPLIT_X, lane = (size_t)dim % FP8KV_SPLIT_X;
        return (((block * heads + (size_t)head) * chunks + chunk) * bs + pos) * FP8KV_SPLIT_X +
               lane;
    }
    if (shape->layout == FP8KV_LAYOUT_HND) /* [block][head][pos][dim] */
        return ((block * heads + (size_t)head) * bs + pos) * hs + (size_t)dim;
    /* [block][pos][head][dim] = [slot][head][dim] */
    return ((size_t)slot * heads + (size_t)head) * hs + (size_t)dim;
}

/* value_offset_unpacked: the offset of (slot, head, dim) in a value cache of its own */
static size_t value_offset_unpacked(const struct fp8kv_cache_shape *shape, int64_t slot, int head,
                                    int dim)
{
    const size_t bs = (size_t)shape->block_size, heads = (size_t)shape->num_heads,
                 hs = (size_t)shape->head_size;
    if (shape->layout == FP8KV_LAYOUT_SPLIT_X) {
        /* [block][head][dim][pos] */
        const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
        return ((block * heads + (size_t)head) * hs + (size_t)dim) * bs + pos;
    }
    if (shape->layout == FP8KV_LAYOUT_HND) /* the key's layout: [block][head][pos][dim] */
        return key_offset_unpacked(shape, slot, head, dim);
    return ((size_t)slot * heads + (size_t)head) * hs + (size_t)dim;
}

size_t fp8kv_key_offset(const struct fp8kv_cache_shape *shape, int64_t slot, int head, int dim)
{
    return packed_skip(shape, slot) + key_offset_unpacked(shape, slot, head, dim);
}

size_t fp8kv_value_offset(const struct fp8kv_cache_shape *shape, int64_t slot, int head, int dim)
{
    return packed_skip(shape, slot) + value_offset_unpacked(shape, slot, head, dim);
}

/* ---- scales --------------------------------------------------------------------------------- */

const char *fp8kv_kv_scale_granularity_name(int granularity)
{
    return granularity >= 0 && granularity < FP8KV_SCALE_GRANULARITY_COUNT
               ? fp8kv_scale_granularity_names[granularity]
               : "?";
}

size_t fp8kv_scale_cache_entries(const struct fp8kv_cache_shape *shape)
{
    return (size_t)shape->num_blocks * (size_t)shape->block_size * (size_t)shape->num_heads;
}

float fp8kv_kv_scale_at(const struct fp8kv_kv_scales *scales, const struct fp8kv_cache_shape *shape,
                        int64_t slot, int head)
{
    switch (scales->granularity) {
    case FP8KV_SCALE_HEAD: return scales->heads[head];
    case FP8KV_SCALE_TOKEN_HEAD:
        return scales->cache[(size_t)slot * (size_t)shape->num_heads + (size_t)head];
    default: return scales->tensor;
    }
}

/* scales_check: 0 when scales has the arrays its granularity reads (and, for a store
 * (storing), the scale cache it writes), else FP8KV_ERR with a message starting with what. */
static int scales_check(const struct fp8kv_kv_scales *scales, int storing, const char *what)
{
    const int g = (int)scales->granularity;
    if (g < 0 || g >= FP8KV_SCALE_GRANULARITY_COUNT)
        return fp8kv_fail("%s: unknown scale granularity %d", what, g);
    if (g == FP8KV_SCALE_HEAD && !scales->heads)
        return fp8kv_fail("%s: per-head scales without the scales", what);
    if (g == FP8KV_SCALE_TOKEN_HEAD && !(storing ? scales->cache_out : scales->cache))
        return fp8kv_fail("%s: per-token scales without the scale cache", what);
    return FP8KV_OK;
}

/* ---- element conversions --------------------------------------------------------------------- */

/* load_widened: element i of an f32 / f16 / bf16 array, widened exactly to f32. */
static float load_widened(enum fp8kv_kv_dtype dtype, const void *src, size_t i)
{
    switch (dtype) {
    case FP8KV_KV_F16: return fp8kv_f16_to_f32(((const uint16_t *)src)[i]);
    case FP8KV_KV_BF16: return fp8kv_bf16_to_f32(((const uint16_t *)src)[i]);
    default: return ((const float *)src)[i];
    }
}

float fp8kv_kv_row_scale(struct fp8kv_codec_cfg cfg, enum fp8kv_kv_dtype in, const void *src,
                         size_t first, int n)
{
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float x = fabsf(load_widened(in, src, first + (size_t)i));
        if (isfinite(x) && x > amax)
            amax = x;
    }
    const float s = amax / fp8kv_max_finite(cfg.format);
    return s > 0.0f ? s : 1.0f;
}

/* store_rounded: writes the f32 y into element i of dst, rounded (RNE) to dtype. */
static void store_rounded(enum fp8kv_kv_dtype dtype, void *dst, size_t i, float y)
{
    switch (dtype) {
    case FP8KV_KV_F16: ((uint16_t *)dst)[i] = fp8kv_f32_to_f16_rne(y); break;
    case FP8KV_KV_BF16: ((uint16_t *)dst)[i] = fp8kv_f32_to_bf16_rne(y); break;
    default: ((float *)dst)[i] = y; break;
    }
}

/* dequant: decode(code) * scale, one f32 multiplication. */
static float dequant(struct fp8kv_codec_cfg cfg, uint8_t code, float scale)
{
    return fp8kv_decode_bits(cfg, code) * scale;
}

/* slot_of: the cache slot of token position pos of sequence seq, through the block table. */
static int64_t slot_of(const struct fp8kv_cache_shape *shape, const int32_t *block_table,
                       int max_blocks_per_seq, int seq, int pos)
{
    const int32_t block =
        block_table[(size_t)seq * (size_t)max_blocks_per_seq + (size_t)(pos / shape->block_size)];
    return (int64_t)block * shape->block_size + pos % shape->block_size;
}

/* ---- store ----------------------------------------------------------------------------------- */

int fp8kv_cache_shape_check(const struct fp8kv_cache_shape *shape, const char *what)
{
    if (shape->num_blocks < 1 || shape->block_size < 1 || shape->num_heads < 1 ||
        shape->head_size < 1)
        return fp8kv_fail("%s: cache shape %d blocks x %d slots x %d heads x %d has a size < 1",
                          what, shape->num_blocks, shape->block_size, shape->num_heads,
                          shape->head_size);
    if (shape->layout != FP8KV_LAYOUT_NHD && shape->layout != FP8KV_LAYOUT_SPLIT_X &&
        shape->layout != FP8KV_LAYOUT_HND)
        return fp8kv_fail("%s: unknown cache layout %d", what, (int)shape->layout);
    if ((int)shape->packing < 0 || (int)shape->packing >= FP8KV_KV_PACKING_COUNT)
        return fp8kv_fail("%s: unknown cache packing %d (0 separate, 1 kv_first, 2 block_first)",
                          what, (int)shape->packing);
    if (shape->layout == FP8KV_LAYOUT_SPLIT_X && shape->head_size % FP8KV_SPLIT_X != 0)
        return fp8kv_fail("%s: split-x layout needs head_size %% %d == 0, not %d", what,
                          FP8KV_SPLIT_X, shape->head_size);
    return FP8KV_OK;
}

/* row_scale: the scale of row (token t, head h) of src under scales, written to the scale cache
 * at slot when the store computes it. */
static float row_scale(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                       const struct fp8kv_kv_scales *scales, enum fp8kv_kv_dtype in,
                       const void *src, int t, int h, int64_t slot)
{
    if (scales->granularity != FP8KV_SCALE_TOKEN_HEAD)
        return fp8kv_kv_scale_at(scales, shape, slot, h);
    const size_t first = ((size_t)t * (size_t)shape->num_heads + (size_t)h) * shape->head_size;
    const float s = fp8kv_kv_row_scale(cfg, in, src, first, shape->head_size);
    scales->cache_out[(size_t)slot * (size_t)shape->num_heads + (size_t)h] = s;
    return s;
}

int fp8kv_cpu_reshape_and_cache(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                enum fp8kv_kv_dtype in, const void *key, const void *value,
                                int num_tokens, const int64_t *slot_mapping,
                                const struct fp8kv_kv_scales *k_scale,
                                const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                                uint8_t *value_cache)
{
    int rc = fp8kv_cache_shape_check(shape, "reshape_and_cache");
    if (rc == 0)
        rc = scales_check(k_scale, 1, "reshape_and_cache: key");
    if (rc == 0)
        rc = scales_check(v_scale, 1, "reshape_and_cache: value");
    if (rc != 0)
        return rc;
    const int64_t slots = (int64_t)shape->num_blocks * shape->block_size;
    for (int t = 0; t < num_tokens; t++)
        if (slot_mapping[t] >= slots)
            return fp8kv_fail("reshape_and_cache: token %d has slot %lld, the cache has %lld", t,
                              (long long)slot_mapping[t], (long long)slots);
    const int heads = shape->num_heads, hs = shape->head_size;
    for (int t = 0; t < num_tokens; t++) {
        const int64_t slot = slot_mapping[t];
        if (slot < 0) /* padding: the cache is left untouched */
            continue;
        for (int h = 0; h < heads; h++) {
            const float ks = row_scale(cfg, shape, k_scale, in, key, t, h, slot);
            const float vs = row_scale(cfg, shape, v_scale, in, value, t, h, slot);
            for (int d = 0; d < hs; d++) {
                const size_t i = ((size_t)t * (size_t)heads + (size_t)h) * (size_t)hs + (size_t)d;
                key_cache[fp8kv_key_offset(shape, slot, h, d)] =
                    fp8kv_store_f32(cfg, load_widened(in, key, i), ks);
                value_cache[fp8kv_value_offset(shape, slot, h, d)] =
                    fp8kv_store_f32(cfg, load_widened(in, value, i), vs);
            }
        }
    }
    return FP8KV_OK;
}

/* ---- read ------------------------------------------------------------------------------------ */

int fp8kv_cpu_gather_dequant(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                             int is_key, const uint8_t *cache, const int32_t *block_table,
                             int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                             const struct fp8kv_kv_scales *scale, enum fp8kv_kv_dtype out,
                             void *dst)
{
    int rc = fp8kv_cache_shape_check(shape, "gather_dequant");
    if (rc == 0)
        rc = scales_check(scale, 0, "gather_dequant");
    if (rc != 0)
        return rc;
    const int heads = shape->num_heads, hs = shape->head_size;
    size_t row = 0; /* output token row: sequences one after the other */
    for (int i = 0; i < num_seqs; i++)
        for (int pos = 0; pos < seq_lens[i]; pos++, row++) {
            const int64_t slot = slot_of(shape, block_table, max_blocks_per_seq, i, pos);
            for (int h = 0; h < heads; h++)
                for (int d = 0; d < hs; d++) {
                    const size_t at = is_key ? fp8kv_key_offset(shape, slot, h, d)
                                             : fp8kv_value_offset(shape, slot, h, d);
                    const size_t o = (row * (size_t)heads + (size_t)h) * (size_t)hs + (size_t)d;
                    store_rounded(
                        out, dst, o,
                        dequant(cfg, cache[at], fp8kv_kv_scale_at(scale, shape, slot, h)));
                }
        }
    return FP8KV_OK;
}

/* ---- attention ------------------------------------------------------------------------------- */

/* attend_one: the output of one query row and one q head: q [hs], kv head h, the tokens
 * [first, end) of sequence seq. scores[end - first] is scratch. */
static void attend_one(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                       const float *q, int h, const uint8_t *key_cache, const uint8_t *value_cache,
                       const int32_t *block_table, int max_blocks_per_seq, int seq, int first,
                       int end, const struct fp8kv_kv_scales *k_scale,
                       const struct fp8kv_kv_scales *v_scale, float softmax_scale, float *scores,
                       float *out)
{
    const int hs = shape->head_size, n = end - first;
    for (int d = 0; d < hs; d++)
        out[d] = 0.0f;
    if (n <= 0)
        return;

    /* scores, and their maximum (a NaN score never becomes the maximum; it stays in the
     * sum below and makes the output NaN, as the exact softmax would) */
    float max = -INFINITY;
    for (int t = 0; t < n; t++) {
        const int64_t slot = slot_of(shape, block_table, max_blocks_per_seq, seq, first + t);
        const float ks = fp8kv_kv_scale_at(k_scale, shape, slot, h);
        float dot = 0.0f;
        for (int d = 0; d < hs; d++)
            dot += q[d] * dequant(cfg, key_cache[fp8kv_key_offset(shape, slot, h, d)], ks);
        scores[t] = softmax_scale * dot;
        if (scores[t] > max)
            max = scores[t];
    }

    /* max-subtracted softmax weights, then the weighted sum of the values */
    float sum = 0.0f;
    for (int t = 0; t < n; t++) {
        scores[t] = expf(scores[t] - max);
        sum += scores[t];
    }
    for (int t = 0; t < n; t++) {
        const int64_t slot = slot_of(shape, block_table, max_blocks_per_seq, seq, first + t);
        const float p = scores[t] / sum, vs = fp8kv_kv_scale_at(v_scale, shape, slot, h);
        for (int d = 0; d < hs; d++)
            out[d] += p * dequant(cfg, value_cache[fp8kv_value_offset(shape, slot, h, d)], vs);
    }
}

int fp8kv_kv_query_rows(const struct fp8kv_kv_queries *queries, int num_seqs)
{
    if (!queries || !queries->lens)
        return num_seqs;
    long rows = 0;
    for (int i = 0; i < num_seqs; i++)
        rows += queries->lens[i];
    return rows > INT32_MAX ? -1 : (int)rows;
}

int fp8kv_cpu_paged_attention_queries(
    struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape, const float *query,
    int num_q_heads, const uint8_t *key_cache, const uint8_t *value_cache,
    const int32_t *block_table, int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
    const struct fp8kv_kv_queries *queries, const struct fp8kv_kv_scales *k_scale,
    const struct fp8kv_kv_scales *v_scale, float softmax_scale, float *out)
{
    int rc = fp8kv_cache_shape_check(shape, "paged_attention");
    if (rc == 0)
        rc = scales_check(k_scale, 0, "paged_attention: key");
    if (rc == 0)
        rc = scales_check(v_scale, 0, "paged_attention: value");
    if (rc != 0)
        return rc;
    if (num_q_heads < 1 || num_q_heads % shape->num_heads != 0)
        return fp8kv_fail("paged_attention: %d q heads is not a multiple of %d kv heads",
                          num_q_heads, shape->num_heads);
    const int32_t *lens = queries ? queries->lens : NULL;
    const int window = queries ? queries->window : 0;
    int longest = 0;
    for (int i = 0; i < num_seqs; i++) {
        const int q = lens ? lens[i] : 1;
        if (q < 1 || q > (seq_lens[i] > 1 ? seq_lens[i] : 1))
            return fp8kv_fail("paged_attention: sequence %d has %d tokens and %d queries", i,
                              seq_lens[i], q);
        if (seq_lens[i] > longest)
            longest = seq_lens[i];
    }
    const int hs = shape->head_size;
    const int group = num_q_heads / shape->num_heads; /* q heads per kv head */
    /* one score per token of the longest sequence; a VLA would be unbounded on the stack */
    float *scores = malloc((size_t)(longest > 0 ? longest : 1) * sizeof *scores);
    if (scores == NULL)
        return fp8kv_fail("paged_attention: out of memory for %d scores", longest);
    size_t row = 0;
    for (int i = 0; i < num_seqs; i++)
        for (int j = 0; j < (lens ? lens[i] : 1); j++, row++) {
            int32_t first, end;
            fp8kv_kv_query_span(seq_lens[i], lens ? lens[i] : 1, j, window, &first, &end);
            for (int qh = 0; qh < num_q_heads; qh++) {
                const size_t at = (row * (size_t)num_q_heads + (size_t)qh) * (size_t)hs;
                attend_one(cfg, shape, query + at, qh / group, key_cache, value_cache, block_table,
                           max_blocks_per_seq, i, first, end, k_scale, v_scale, softmax_scale,
                           scores, out + at);
            }
        }
    free(scores);
    return FP8KV_OK;
}

int fp8kv_cpu_paged_attention(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                              const float *query, int num_q_heads, const uint8_t *key_cache,
                              const uint8_t *value_cache, const int32_t *block_table,
                              int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                              const struct fp8kv_kv_scales *k_scale,
                              const struct fp8kv_kv_scales *v_scale, float softmax_scale,
                              float *out)
{
    return fp8kv_cpu_paged_attention_queries(cfg, shape, query, num_q_heads, key_cache, value_cache,
                                             block_table, max_blocks_per_seq, seq_lens, num_seqs,
                                             NULL, k_scale, v_scale, softmax_scale, out);
}

/* ---- the KV-kernel ABI ----------------------------------------------------------------------- */

_Static_assert(FP8KV_KV_ABI_NHD == (int)FP8KV_LAYOUT_NHD &&
                   FP8KV_KV_ABI_SPLIT_X == (int)FP8KV_LAYOUT_SPLIT_X &&
                   FP8KV_KV_ABI_HND == (int)FP8KV_LAYOUT_HND && FP8KV_KV_SPLIT_X == FP8KV_SPLIT_X,
               "the ABI's layouts are spec.h's");
_Static_assert(FP8KV_KV_ABI_F32 == (int)FP8KV_KV_F32 && FP8KV_KV_ABI_F16 == (int)FP8KV_KV_F16 &&
                   FP8KV_KV_ABI_BF16 == (int)FP8KV_KV_BF16,
               "the ABI's dtypes are kv_cache.h's");
#define ABI_FORMAT(a, name, number)                                                                \
    _Static_assert(FP8KV_KV_ABI_##name == (int)FP8KV_CODEC_##name,                                 \
                   "the ABI's format " #name " is codec.h's");
FP8KV_CODEC_FORMATS(ABI_FORMAT, ~)
#undef ABI_FORMAT

_Static_assert(FP8KV_KV_SCALE_TENSOR == (int)FP8KV_SCALE_TENSOR &&
                   FP8KV_KV_SCALE_HEAD == (int)FP8KV_SCALE_HEAD &&
                   FP8KV_KV_SCALE_TOKEN_HEAD == (int)FP8KV_SCALE_TOKEN_HEAD,
               "the ABI's scale granularities are spec.h's");
_Static_assert(FP8KV_KV_SCALES_ALL == (1u << FP8KV_SCALE_GRANULARITY_COUNT) - 1u,
               "FP8KV_KV_SCALES_ALL is every granularity");
_Static_assert(FP8KV_KV_SEPARATE == (int)FP8KV_PACKING_SEPARATE &&
                   FP8KV_KV_PACKED_KV_FIRST == (int)FP8KV_PACKING_KV_FIRST &&
                   FP8KV_KV_PACKED_BLOCK_FIRST == (int)FP8KV_PACKING_BLOCK_FIRST &&
                   FP8KV_KV_PACKINGS_ALL == (1u << FP8KV_KV_PACKING_COUNT) - 1u,
               "the ABI's packings are spec.h's");

struct fp8kv_kv_layout_v1 fp8kv_kv_abi_layout(const struct fp8kv_cache_shape *shape,
                                              struct fp8kv_codec_cfg cfg,
                                              enum fp8kv_kv_scale_granularity granularity)
{
    return (struct fp8kv_kv_layout_v1){shape->num_blocks,      shape->block_size,
                                       shape->num_heads,       shape->head_size,
                                       (int32_t)shape->layout, cfg.format,
                                       cfg.saturate,           cfg.inf_to_nan,
                                       (int32_t)granularity,   (int32_t)shape->packing};
}

struct fp8kv_kv_scales fp8kv_kv_abi_scales(const struct fp8kv_kv_layout_v1 *layout, float tensor,
                                           const float *heads, const float *cache, float *cache_out)
{
    return (struct fp8kv_kv_scales){(enum fp8kv_kv_scale_granularity)layout->scale_granularity,
                                    tensor, heads, cache, cache_out};
}

struct fp8kv_cache_shape fp8kv_kv_abi_shape(const struct fp8kv_kv_layout_v1 *l)
{
    return (struct fp8kv_cache_shape){l->num_blocks,
                                      l->block_size,
                                      l->num_heads,
                                      l->head_size,
                                      (enum fp8kv_kv_layout)l->layout,
                                      (enum fp8kv_kv_packing)l->packing};
}

struct fp8kv_codec_cfg fp8kv_kv_abi_cfg(const struct fp8kv_kv_layout_v1 *l, int model)
{
    return (struct fp8kv_codec_cfg){(uint8_t)l->format, (uint8_t)(l->saturate != 0),
                                    (uint8_t)(l->inf_to_nan != 0), (uint8_t)model};
}
