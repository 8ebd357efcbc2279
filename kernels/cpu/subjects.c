/* subjects.c — the CPU target's subjects (fp8kv/subject.h): the codecs of codec.h as array
 * functions, the CPU reference KV-cache paths of kv_cache.c and the block codec of
 * block_codec.h.
 *
 * At scale 1 the encoders run the loops of the instruction set in use (fp8kv/cpu_isa.h); the
 * scaled loops are kept free of calls and cross-iteration state so the compiler vectorizes them
 * (FP8KV_HOST_ARRAY_LOOP's clones). Scale 1 skips the division: x / 1 is x exactly under every
 * model, so the result is the same. */
#include <string.h>

#include "fp8kv/cpu_isa.h"
#include "fp8kv/diag.h"
#include "fp8kv/subject.h"

FP8KV_HOST_ARRAY_LOOP
static int encode_bits_array(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                             float s, uint8_t *q)
{
    (void)ctx;
    if (s == 1.0f && cfg.model != FP8KV_CODEC_F16_DIV) {
        fp8kv_cpu_encode_bits(fp8kv_cpu_isa_in_use(), cfg, x, n, q);
        return FP8KV_OK;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_store_f32(cfg, x[i], s);
    return FP8KV_OK;
}

FP8KV_HOST_ARRAY_LOOP
static int encode_frexp_array(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                              float s, uint8_t *q)
{
    (void)ctx;
    if (s == 1.0f && cfg.model != FP8KV_CODEC_F16_DIV) {
        fp8kv_cpu_encode_frexp(fp8kv_cpu_isa_in_use(), cfg, x, n, q);
        return FP8KV_OK;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_encode_frexp(cfg, fp8kv_scale_quotient(cfg, x[i], s));
    return FP8KV_OK;
}

/* encode_f32_range of the bits (frexp 0) or the frexp codec: the range loop of the instruction set
 * in use; under the f16 model, which rounds each input first, the array function over the
 * inputs made a part at a time. */
static int encode_range(int frexp, struct fp8kv_codec_cfg cfg, uint32_t first, size_t n, uint8_t *q)
{
    if (cfg.model != FP8KV_CODEC_F16_DIV) {
        (frexp ? fp8kv_cpu_encode_frexp_range : fp8kv_cpu_encode_bits_range)(fp8kv_cpu_isa_in_use(),
                                                                             cfg, first, n, q);
        return FP8KV_OK;
    }
    float x[1024];
    for (size_t off = 0; off < n; off += 1024) {
        const size_t part = n - off < 1024 ? n - off : 1024;
        for (size_t i = 0; i < part; i++)
            x[i] = fp8kv_f32_from_bits(first + (uint32_t)(off + i));
        (frexp ? encode_frexp_array : encode_bits_array)(NULL, cfg, x, part, 1.0f, q + off);
    }
    return FP8KV_OK;
}

static int encode_bits_range(void *ctx, struct fp8kv_codec_cfg cfg, uint32_t first, size_t n,
                             uint8_t *q)
{
    (void)ctx;
    return encode_range(0, cfg, first, n, q);
}

static int encode_frexp_range(void *ctx, struct fp8kv_codec_cfg cfg, uint32_t first, size_t n,
                              uint8_t *q)
{
    (void)ctx;
    return encode_range(1, cfg, first, n, q);
}

static int decode_bits_array(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                             float s, float *y)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        y[i] = fp8kv_decode_bits(cfg, q[i]) * s;
    return FP8KV_OK;
}

static int decode_table_array(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                              float s, float *y)
{
    (void)ctx;
    float table[256];
    fp8kv_decode_table_fill(cfg, table);
    for (size_t i = 0; i < n; i++)
        y[i] = fp8kv_decode_table(table, q[i]) * s;
    return FP8KV_OK;
}

/* ---- the KV-cache paths as KV-ABI kernels (fp8kv/kv_plugin.h) ---------------------------------
 */

/* ctx: the store's scale model (enum fp8kv_codec_model) */
static int store_cpu(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(a->cache);
    const struct fp8kv_kv_scales ks =
        fp8kv_kv_abi_scales(a->cache, a->k_scale, a->k_head_scales, NULL, a->k_scale_cache);
    const struct fp8kv_kv_scales vs =
        fp8kv_kv_abi_scales(a->cache, a->v_scale, a->v_head_scales, NULL, a->v_scale_cache);
    return fp8kv_cpu_reshape_and_cache(
        fp8kv_kv_abi_cfg(a->cache, *(const int *)ctx), &shape, (enum fp8kv_kv_dtype)a->in_dtype,
        a->key, a->value, a->num_tokens, a->slot_mapping, &ks, &vs, a->key_cache, a->value_cache);
}

static int gather_cpu(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(a->cache);
    const struct fp8kv_kv_scales s =
        fp8kv_kv_abi_scales(a->cache, a->scale, a->head_scales, a->scale_cache, NULL);
    return fp8kv_cpu_gather_dequant(fp8kv_kv_abi_cfg(a->cache, *(const int *)ctx), &shape,
                                    a->is_key, a->cache_data, a->block_table, a->max_blocks_per_seq,
                                    a->seq_lens, a->num_seqs, &s, (enum fp8kv_kv_dtype)a->out_dtype,
                                    a->out);
}

static int attention_cpu(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    if (a->query_dtype != FP8KV_KV_ABI_F32 || a->out_dtype != FP8KV_KV_ABI_F32)
        return fp8kv_fail("cpu-reference attention computes in f32 (q and out f32)");
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(a->cache);
    const struct fp8kv_kv_scales ks =
        fp8kv_kv_abi_scales(a->cache, a->k_scale, a->k_head_scales, a->k_scale_cache, NULL);
    const struct fp8kv_kv_scales vs =
        fp8kv_kv_abi_scales(a->cache, a->v_scale, a->v_head_scales, a->v_scale_cache, NULL);
    const struct fp8kv_kv_queries queries = {a->query_lens, a->window};
    return fp8kv_cpu_paged_attention_queries(
        fp8kv_kv_abi_cfg(a->cache, *(const int *)ctx), &shape, a->query, a->num_q_heads,
        a->key_cache, a->value_cache, a->block_table, a->max_blocks_per_seq, a->seq_lens,
        a->num_seqs, &queries, &ks, &vs, a->softmax_scale, a->out);
}

static const int models[] = {FP8KV_CODEC_F32_DIV, FP8KV_CODEC_F32_MUL_RECIP, FP8KV_CODEC_F16_DIV};
#define MODEL_COUNT (int)(sizeof models / sizeof models[0])
#define CPU_KV(m)                                                                                  \
    {                                                                                              \
        FP8KV_KV_ABI_VERSION, "cpu-reference", NULL, NULL, NULL, FP8KV_KV_MEMORY_HOST,             \
            (void *)&models[m], store_cpu, gather_cpu, attention_cpu, FP8KV_KV_SCALES_ALL, "f32",  \
            FP8KV_KV_ATTENTION_ALL, FP8KV_KV_PACKINGS_ALL, FP8KV_KV_LAYOUTS_ALL                    \
    }
static const struct fp8kv_kv_kernels_v1 cpu_kv[MODEL_COUNT] = {CPU_KV(0), CPU_KV(1), CPU_KV(2)};

const struct fp8kv_kv_kernels_v1 *fp8kv_cpu_kv_kernels(int model)
{
    for (int m = 0; m < MODEL_COUNT; m++)
        if (models[m] == model)
            return &cpu_kv[m];
    return NULL;
}

/* ---- the block codec (fp8kv/block_codec.h) as block kernels ---------------------------------- */

static int encode_blocks_cpu(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const float *x,
                             size_t nblocks, uint8_t *scales, uint8_t *elements)
{
    (void)ctx, (void)worker;
    const size_t bs = (size_t)fp8kv_bcodec_block_size(cfg.format);
    for (size_t b = 0; b < nblocks; b++)
        fp8kv_bcodec_encode_block(cfg, x + b * bs, scales + b, elements + b * bs);
    return FP8KV_OK;
}

static int decode_blocks_cpu(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg,
                             const uint8_t *scales, const uint8_t *elements, size_t nblocks,
                             float *y)
{
    (void)ctx, (void)worker;
    const size_t bs = (size_t)fp8kv_bcodec_block_size(cfg.format);
    for (size_t b = 0; b < nblocks; b++)
        for (size_t i = 0; i < bs; i++)
            y[b * bs + i] =
                fp8kv_f32_from_bits(fp8kv_bcodec_decode_one(cfg, scales[b], elements[b * bs + i]));
    return FP8KV_OK;
}

/* every combination, from as many threads as the judge runs (the codec keeps no state) */
static const struct fp8kv_block_kernels cpu_block = {
    .claim = {FP8KV_CLAIM_ANY, FP8KV_CLAIM_ANY, FP8KV_CLAIM_ANY},
    .encode = encode_blocks_cpu,
    .decode = decode_blocks_cpu,
};

/* ---- the table ------------------------------------------------------------------------------- */

const struct fp8kv_subject fp8kv_cpu_subjects[] = {
    {.name = "bits",
     .description = "integer bit manipulation on the f32 pattern (fp8kv_encode_bits)",
     .caps = FP8KV_CAP_ENCODE,
     .claim = FP8KV_CLAIM_ALL,
     .encode = encode_bits_array,
     .encode_f32_range = encode_bits_range},
    {.name = "frexp",
     .description = "frexpf/ldexpf/nearbyintf, engine style (fp8kv_encode_frexp)",
     .caps = FP8KV_CAP_ENCODE,
     .claim = FP8KV_CLAIM_ALL,
     .encode = encode_frexp_array,
     .encode_f32_range = encode_frexp_range},
    {.name = "decode-bits",
     .description = "fields placed into an f32 (fp8kv_decode_bits)",
     .caps = FP8KV_CAP_DECODE,
     .claim = FP8KV_CLAIM_ALL,
     .decode = decode_bits_array},
    {.name = "decode-table",
     .description = "256-entry table lookup (fp8kv_decode_table)",
     .caps = FP8KV_CAP_DECODE,
     .claim = FP8KV_CLAIM_ALL,
     .decode = decode_table_array},
    {.name = "cpu-reference",
     .description = "the CPU reference store, gather + dequant and paged attention (kv_cache.c)",
     .caps = FP8KV_CAP_STORE | FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION,
     .claim = FP8KV_CLAIM_ALL,
     .kv = &cpu_kv[0]},
    {.name = "block-codec",
     .description = "the block codec of fp8kv/block_codec.h (MX, NVFP4): every format, rule and "
                    "model",
     .caps = FP8KV_CAP_BLOCK,
     .claim = FP8KV_CLAIM_ALL,
     .block = &cpu_block},
};
const int fp8kv_cpu_subject_count = (int)(sizeof fp8kv_cpu_subjects / sizeof fp8kv_cpu_subjects[0]);

const struct fp8kv_subject *fp8kv_subject_find(const struct fp8kv_subject *table, int count,
                                               const char *name, unsigned caps)
{
    for (int i = 0; i < count; i++)
        if (name && strcmp(table[i].name, name) == 0 && fp8kv_subject_can(&table[i], caps))
            return &table[i];
    return NULL;
}

const struct fp8kv_subject *fp8kv_subject_first(const struct fp8kv_subject *table, int count,
                                                unsigned caps)
{
    for (int i = 0; i < count; i++)
        if (fp8kv_subject_can(&table[i], caps))
            return &table[i];
    return NULL;
}
