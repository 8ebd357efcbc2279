/* engine_kv.c — a paged fp8 (OCP e4m3fn, satfinite) KV cache's CPU kernels written the way an
 * engine writes its portable path, built as an fp8kv KV-kernel plugin (fp8kv/kv_plugin.h):
 *
 *   store      reshape_and_cache: token t's key and value rows go to slot slot_mapping[t]
 *              (-1: a padding token, skipped) as e4m3fn(x / scale), the quotient in f32;
 *   gather     the rows of every sequence through its block table, decoded by a 256-entry
 *              table, times the scale in f32, rounded to f32, f16 or bf16 (nearest even);
 *   attention  one decode step: f32 scores, a max-subtracted softmax, grouped-query heads.
 *
 * NHD, HND and split-x (x = 16) layouts, the key and value caches separate or packed into one
 * tensor ([2, num_blocks, ...] or [num_blocks, 2, ...]); f32, f16 and bf16 inputs; scales per
 * tensor, per KV head, or per token and head (the store computes each row's scale as amax / 448
 * over the row's finite elements, 1 for a zero row, and keeps it in a scale cache [num_blocks,
 * block_size, num_heads] the reads take it from). `fp8kv check-kv --plugin libengine_kv.so`
 * judges it on every golden case of e4m3fn_satfinite.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <fp8kv/kv_plugin.h>

#if defined(__GNUC__)
#define ENGINE_EXPORT __attribute__((visibility("default")))
#else
#define ENGINE_EXPORT
#endif

/* ---- number formats -------------------------------------------------------------------------- */

static float f32_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* the f32 value of input element i (f32, f16 or bf16 bits) */
static float load_input(const void *p, int dtype, size_t i)
{
    if (dtype == FP8KV_KV_ABI_F32)
        return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    if (dtype == FP8KV_KV_ABI_BF16)
        return f32_of((uint32_t)h << 16);
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0x1F)
        return f32_of(sign | 0x7F800000u | m << 13);
    if (e == 0)
        return (sign ? -1.0f : 1.0f) * (float)m * 0x1p-24f; /* exact */
    return f32_of(sign | (e + 112) << 23 | m << 13);
}

/* e4m3fn of v, nearest even, finite overflow and +-Inf clamped to +-448, NaN kept */
static uint8_t to_e4m3fn(float v)
{
    const uint32_t b = bits_of(v);
    const uint8_t sign = (uint8_t)(b >> 24 & 0x80);
    uint32_t a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return sign | 0x7F;
    if (a >= 0x43E80000u) /* 464 and up: rounds past 448 (Inf too) */
        return sign | 0x7E;
    if (a < 0x3C800000u) {                    /* below 2^-6: subnormal steps of 2^-9 */
        const float q = f32_of(a) * 512.0f;   /* exact */
        return sign | (uint8_t)nearbyintf(q); /* 0..8; 8 is the smallest normal */
    }
    /* keep 3 mantissa bits of the f32, rounding the 20 others to nearest even */
    a += 0x7FFFFu + (a >> 20 & 1);
    return sign | (uint8_t)(((a >> 23) - 120) << 3 | (a >> 20 & 7));
}

static float from_e4m3fn(uint8_t q)
{
    const int e = q >> 3 & 0xF, m = q & 7;
    float v = (q & 0x7F) == 0x7F ? NAN
              : e == 0           ? (float)m * 0x1p-9f
                                 : ldexpf(1.0f + m / 8.0f, e - 7);
    return q & 0x80 ? -v : v;
}

static uint16_t to_bf16(float f)
{
    const uint32_t b = bits_of(f);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)(b >> 16 | 0x40);
    return (uint16_t)((b + 0x7FFFu + (b >> 16 & 1)) >> 16);
}

static uint16_t to_f16(float f)
{
    const uint32_t b = bits_of(f), sign = b >> 16 & 0x8000u, a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return (uint16_t)(sign | 0x7E00u);
    if (a >= 0x477FF000u) /* rounds to 65536 or more */
        return (uint16_t)(sign | 0x7C00u);
    if (a < 0x38800000u) /* below 2^-14: steps of 2^-24, nearest even */
        return (uint16_t)(sign | (uint32_t)nearbyintf(f32_of(a) * 0x1p24f));
    const uint32_t r = a + 0xFFFu + (a >> 13 & 1);
    return (uint16_t)(sign | (((r >> 23) - 112) << 10 | (r >> 13 & 0x3FF)));
}

/* ---- the layout --------------------------------------------------------------------------------
 */

/* the offset of (slot, h, d) from its cache's pointer; packed [num_blocks, 2, ...], a block
 * is followed by the other cache's block, so blocks are two blocks apart */
static size_t offset(const struct fp8kv_kv_layout_v1 *c, int is_key, int64_t slot, int h, int d)
{
    const size_t bs = (size_t)c->block_size, H = (size_t)c->num_heads, D = (size_t)c->head_size;
    const size_t pos = (size_t)slot % bs;
    const size_t block = (size_t)slot / bs * (c->packing == FP8KV_KV_PACKED_BLOCK_FIRST ? 2 : 1);
    if (c->layout == FP8KV_KV_ABI_NHD)
        return ((block * bs + pos) * H + (size_t)h) * D + (size_t)d;
    if (c->layout == FP8KV_KV_ABI_HND) /* [block][h][pos][d], key and value */
        return ((block * H + (size_t)h) * bs + pos) * D + (size_t)d;
    if (is_key) /* [block][h][d / 16][pos][d % 16] */
        return (((block * H + (size_t)h) * (D / 16) + (size_t)d / 16) * bs + pos) * 16 +
               (size_t)d % 16;
    return ((block * H + (size_t)h) * D + (size_t)d) * bs + pos; /* [block][h][d][pos] */
}

static int64_t slot_of(const int32_t *table, int max_blocks, int seq, int pos, int block_size)
{
    return (int64_t)table[(size_t)seq * max_blocks + pos / block_size] * block_size +
           pos % block_size;
}

/* ---- scales -----------------------------------------------------------------------------------
 */

/* the scale a read applies at (slot, head h): per tensor, per head or from the scale cache */
static float scale_at(const struct fp8kv_kv_layout_v1 *c, float tensor, const float *heads,
                      const float *cache, int64_t slot, int h)
{
    if (c->scale_granularity == FP8KV_KV_SCALE_HEAD)
        return heads[h];
    if (c->scale_granularity == FP8KV_KV_SCALE_TOKEN_HEAD)
        return cache[(size_t)slot * c->num_heads + h];
    return tensor;
}

/* per token and head: amax / 448 over the row's finite elements; 1 for a zero row */
static float row_scale(const void *x, int dtype, size_t first, int n)
{
    float amax = 0.0f;
    for (int d = 0; d < n; d++) {
        const float v = fabsf(load_input(x, dtype, first + (size_t)d));
        amax = isfinite(v) && v > amax ? v : amax;
    }
    const float s = amax / 448.0f;
    return s > 0.0f ? s : 1.0f;
}

/* the scale a store uses for row (token t, head h) of x, recorded in the scale cache per token */
static float store_scale(const struct fp8kv_kv_store_args_v1 *a, int is_key, int t, int h,
                         int64_t slot)
{
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    if (c->scale_granularity != FP8KV_KV_SCALE_TOKEN_HEAD)
        return scale_at(c, is_key ? a->k_scale : a->v_scale,
                        is_key ? a->k_head_scales : a->v_head_scales, NULL, slot, h);
    const float s = row_scale(is_key ? a->key : a->value, a->in_dtype,
                              ((size_t)t * c->num_heads + h) * c->head_size, c->head_size);
    (is_key ? a->k_scale_cache : a->v_scale_cache)[(size_t)slot * c->num_heads + h] = s;
    return s;
}

/* ---- the kernels -------------------------------------------------------------------------------
 */

static int store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    (void)ctx;
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    const int H = c->num_heads, D = c->head_size;
    for (int t = 0; t < a->num_tokens; t++) {
        const int64_t slot = a->slot_mapping[t];
        if (slot < 0)
            continue;
        for (int h = 0; h < H; h++) {
            const float ks = store_scale(a, 1, t, h, slot), vs = store_scale(a, 0, t, h, slot);
            for (int d = 0; d < D; d++) {
                const size_t i = ((size_t)t * H + h) * D + d;
                a->key_cache[offset(c, 1, slot, h, d)] =
                    to_e4m3fn(load_input(a->key, a->in_dtype, i) / ks);
                a->value_cache[offset(c, 0, slot, h, d)] =
                    to_e4m3fn(load_input(a->value, a->in_dtype, i) / vs);
            }
        }
    }
    return 0;
}

static int gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    (void)ctx;
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    float table[256];
    for (int q = 0; q < 256; q++)
        table[q] = from_e4m3fn((uint8_t)q);
    size_t row = 0;
    for (int s = 0; s < a->num_seqs; s++)
        for (int pos = 0; pos < a->seq_lens[s]; pos++, row++) {
            const int64_t slot =
                slot_of(a->block_table, a->max_blocks_per_seq, s, pos, c->block_size);
            for (int h = 0; h < c->num_heads; h++)
                for (int d = 0; d < c->head_size; d++) {
                    const float y = table[a->cache_data[offset(c, a->is_key, slot, h, d)]] *
                                    scale_at(c, a->scale, a->head_scales, a->scale_cache, slot, h);
                    const size_t o = (row * c->num_heads + h) * c->head_size + d;
                    if (a->out_dtype == FP8KV_KV_ABI_F32)
                        ((float *)a->out)[o] = y;
                    else
                        ((uint16_t *)a->out)[o] =
                            a->out_dtype == FP8KV_KV_ABI_F16 ? to_f16(y) : to_bf16(y);
                }
        }
    return 0;
}

/* attend: the output of one query row and q head over tokens [first, end) of sequence s */
static void attend(const struct fp8kv_kv_attention_args_v1 *a, int s, int first, int end,
                   const float *q, int h, float *scores, float *out)
{
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    const int D = c->head_size;
    float max = -INFINITY, sum = 0.0f;
    for (int t = first; t < end; t++) {
        const int64_t slot = slot_of(a->block_table, a->max_blocks_per_seq, s, t, c->block_size);
        const float ks = scale_at(c, a->k_scale, a->k_head_scales, a->k_scale_cache, slot, h);
        float dot = 0.0f;
        for (int d = 0; d < D; d++)
            dot += q[d] * (from_e4m3fn(a->key_cache[offset(c, 1, slot, h, d)]) * ks);
        scores[t - first] = a->softmax_scale * dot;
        max = scores[t - first] > max ? scores[t - first] : max;
    }
    for (int t = first; t < end; t++)
        sum += (scores[t - first] = expf(scores[t - first] - max));
    for (int d = 0; d < D; d++) {
        float acc = 0.0f;
        for (int t = first; t < end; t++) {
            const int64_t slot =
                slot_of(a->block_table, a->max_blocks_per_seq, s, t, c->block_size);
            const float vs = scale_at(c, a->v_scale, a->v_head_scales, a->v_scale_cache, slot, h);
            acc += scores[t - first] / sum *
                   (from_e4m3fn(a->value_cache[offset(c, 0, slot, h, d)]) * vs);
        }
        out[d] = acc;
    }
}

/* decode, multi-token decode, prefill and chunked prefill: each sequence's last query_lens[s]
 * tokens are its queries (one without query_lens), each over its span (fp8kv_kv_query_span) */
static int attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    (void)ctx;
    const int D = a->cache->head_size, group = a->num_q_heads / a->cache->num_heads;
    static _Thread_local float scores[16384];
    size_t row = 0;
    for (int s = 0; s < a->num_seqs; s++) {
        if (a->seq_lens[s] > 16384)
            return -1; /* this example's limit */
        const int queries = a->query_lens ? a->query_lens[s] : 1;
        for (int j = 0; j < queries; j++, row++) {
            int32_t first, end;
            fp8kv_kv_query_span(a->seq_lens[s], queries, j, a->window, &first, &end);
            for (int qh = 0; qh < a->num_q_heads; qh++) {
                const size_t at = (row * a->num_q_heads + qh) * D;
                attend(a, s, first, end, a->query + at, qh / group, scores, a->out + at);
            }
        }
    }
    return 0;
}

static const fp8kv_kv_kernels_v1_t kernels = {FP8KV_KV_ABI_VERSION,
                                              "engine_kv",
                                              "e4m3fn",
                                              "satfinite",
                                              "clamp",
                                              FP8KV_KV_MEMORY_HOST,
                                              NULL,
                                              store,
                                              gather,
                                              attention,
                                              FP8KV_KV_SCALES_ALL,
                                              "f32",
                                              FP8KV_KV_ATTENTION_ALL,
                                              FP8KV_KV_PACKINGS_ALL,
                                              FP8KV_KV_LAYOUTS_ALL};

ENGINE_EXPORT const fp8kv_kv_kernels_v1_t *fp8kv_kv_kernels_v1(void)
{
    return &kernels;
}
