/* hostile_kv.c — examples/engine_kv with the run-time misbehaviour of hostile.h, for
 * scripts/campaign's hostile KV plugins. Its caches are separate (not packed), so each output's
 * end is known here: the store's key cache, the gather's and the attention's out. */
#include "hostile.h"

#include "fp8kv/kv_plugin.h"
/* the example's export, renamed (a function-like macro leaves the struct tag alone) */
const struct fp8kv_kv_kernels_v1 *engine_kv_kernels_v1(void);
#define fp8kv_kv_kernels_v1(v) engine_kv_kernels_v1(v)
#include "../../examples/engine_kv/engine_kv.c"
#undef fp8kv_kv_kernels_v1

static size_t dtype_bytes(int dtype)
{
    return dtype == FP8KV_KV_ABI_F32 ? 4 : 2;
}

static int hostile_store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    const enum hostile_do what = hostile_act("store");
    if (what == HOSTILE_FAIL || store(ctx, a) != 0)
        return -1;
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    const size_t H = (size_t)c->num_heads, D = (size_t)c->head_size;
    const size_t cache = (size_t)c->num_blocks * (size_t)c->block_size * H * D;
    int t = 0; /* the first token with a slot: its first byte is compared */
    while (t < a->num_tokens && a->slot_mapping[t] < 0)
        t++;
    if (what == HOSTILE_FLIP && t == a->num_tokens)
        return 0; /* nothing written to change */
    const size_t at = t < a->num_tokens ? offset(c, 1, a->slot_mapping[t], 0, 0) : 0;
    hostile_poke(what, a->key_cache, cache, a->key,
                 (size_t)a->num_tokens * H * D * dtype_bytes(a->in_dtype), at, 0x40u);
    return 0;
}

static int hostile_gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    const enum hostile_do what = hostile_act("gather");
    if (what == HOSTILE_FAIL || gather(ctx, a) != 0)
        return -1;
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    size_t tokens = 0;
    for (int s = 0; s < a->num_seqs; s++)
        tokens += (size_t)a->seq_lens[s];
    const size_t element = dtype_bytes(a->out_dtype);
    const size_t cache =
        (size_t)c->num_blocks * (size_t)c->block_size * (size_t)c->num_heads * (size_t)c->head_size;
    /* a flip: bit 6 of element 0's top byte, in its exponent */
    hostile_poke(what, a->out, tokens * (size_t)c->num_heads * (size_t)c->head_size * element,
                 a->cache_data, cache, element - 1, 0x40u);
    return 0;
}

static int hostile_attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    const enum hostile_do what = hostile_act("attention");
    if (what == HOSTILE_FAIL || attention(ctx, a) != 0)
        return -1;
    const size_t rows = (size_t)a->num_query_rows * (size_t)a->num_q_heads;
    const size_t D = (size_t)a->cache->head_size;
    hostile_poke(what, a->out, rows * D * dtype_bytes(a->out_dtype), a->query,
                 rows * D * dtype_bytes(a->query_dtype), dtype_bytes(a->out_dtype) - 1, 0x40u);
    return 0;
}

ENGINE_EXPORT const struct fp8kv_kv_kernels_v1 *fp8kv_kv_kernels_v1(void)
{
    static struct fp8kv_kv_kernels_v1 k;
    k = *engine_kv_kernels_v1();
    k.name = hostile_name(k.name);
    k.store = hostile_store;
    k.gather = hostile_gather;
    k.attention = hostile_attention;
    k.packings = 0; /* separate caches: the key cache's end is its own */
    return &k;
}
