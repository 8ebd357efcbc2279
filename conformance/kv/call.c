/* kv/call.c — calling KV-ABI kernels with host buffers (kv/call.h). */
#include "kv/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/kv_cache.h"
#ifdef FP8KV_HAVE_GPU
#include "fp8kv/gpu.h"
#endif

static size_t cache_bytes(const struct fp8kv_kv_layout_v1 *l)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(l);
    return fp8kv_cache_bytes(&shape);
}

static size_t dtype_bytes(int dtype)
{
    return fp8kv_kv_dtype_size((enum fp8kv_kv_dtype)dtype);
}

static size_t count(int n)
{
    return n > 0 ? (size_t)n : 0;
}

/* The bytes of one scale array of c: num_heads f32, or one f32 per slot and head. */
static size_t scale_array_bytes(const struct fp8kv_kv_call *c)
{
    const struct fp8kv_kv_layout_v1 *l = &c->layout;
    const size_t per = l->scale_granularity == FP8KV_KV_SCALE_HEAD
                           ? 1
                           : count(l->num_blocks) * count(l->block_size);
    return per * count(l->num_heads) * sizeof(float);
}

/* The arrays of a call, by role: the order of the names below (fp8kv_kv_call_array_name). */
enum role {
    KEY,
    VALUE,
    SLOT_MAPPING,
    KEY_CACHE,
    VALUE_CACHE,
    KV_CACHE,
    CACHE_DATA,
    BLOCK_TABLE,
    SEQ_LENS,
    OUT,
    QUERY,
    QUERY_LENS,
    HEAD_SCALES,
    SCALE_CACHE,
    K_HEAD_SCALES,
    V_HEAD_SCALES,
    K_SCALE_CACHE,
    V_SCALE_CACHE
};
static const char *const role_names[] = {
    "key",           "value",         "slot_mapping", "key_cache",   "value_cache",
    "kv_cache",      "cache_data",    "block_table",  "seq_lens",    "out",
    "query",         "query_lens",    "head_scales",  "scale_cache", "k_head_scales",
    "v_head_scales", "k_scale_cache", "v_scale_cache"};
_Static_assert(sizeof role_names / sizeof *role_names == V_SCALE_CACHE + 1, "a name a role");

/* add: array pointer p (of role r) as c's next array. */
static void add(struct fp8kv_kv_call *c, void **slot[], const void *p, enum role r)
{
    slot[c->arrays] = (void **)p;
    c->role[c->arrays++] = (unsigned char)r;
}

/* add_caches: the key and value caches of a store or an attention call: two arrays, or where
 * they are packed one (kv_cache, at the key cache's pointer; invoke derives the value's). */
static void add_caches(struct fp8kv_kv_call *c, void **slot[], const void *key_cache,
                       const void *value_cache)
{
    if (c->layout.packing != FP8KV_KV_SEPARATE) {
        add(c, slot, key_cache, KV_CACHE);
        return;
    }
    add(c, slot, key_cache, KEY_CACHE);
    add(c, slot, value_cache, VALUE_CACHE);
}

/* add_scale_pair: the key's and value's per-head scales (head) or scale caches (token) of a
 * store or an attention call. */
static void add_scale_pair(struct fp8kv_kv_call *c, void **slot[], const void *k_heads,
                           const void *v_heads, const void *k_cache, const void *v_cache)
{
    if (c->layout.scale_granularity == FP8KV_KV_SCALE_HEAD) {
        add(c, slot, k_heads, K_HEAD_SCALES);
        add(c, slot, v_heads, V_HEAD_SCALES);
    } else if (c->layout.scale_granularity == FP8KV_KV_SCALE_TOKEN_HEAD) {
        add(c, slot, k_cache, K_SCALE_CACHE);
        add(c, slot, v_cache, V_SCALE_CACHE);
    }
}

/* ---- making calls ------------------------------------------------------------------------ */

void fp8kv_kv_call_arrays(struct fp8kv_kv_call *c, void **slot[FP8KV_KV_CALL_ARRAYS])
{
    c->arrays = 0;
    switch (c->op) {
    case FP8KV_KV_OP_STORE: {
        struct fp8kv_kv_store_args_v1 *a = &c->args.store;
        a->cache = &c->layout;
        add(c, slot, &a->key, KEY);
        add(c, slot, &a->value, VALUE);
        add(c, slot, &a->slot_mapping, SLOT_MAPPING);
        add_caches(c, slot, &a->key_cache, &a->value_cache);
        add_scale_pair(c, slot, &a->k_head_scales, &a->v_head_scales, &a->k_scale_cache,
                       &a->v_scale_cache);
        break;
    }
    case FP8KV_KV_OP_GATHER: {
        struct fp8kv_kv_gather_args_v1 *a = &c->args.gather;
        a->cache = &c->layout;
        add(c, slot, &a->cache_data, CACHE_DATA);
        add(c, slot, &a->block_table, BLOCK_TABLE);
        add(c, slot, &a->seq_lens, SEQ_LENS);
        add(c, slot, &a->out, OUT);
        if (c->layout.scale_granularity == FP8KV_KV_SCALE_HEAD)
            add(c, slot, &a->head_scales, HEAD_SCALES);
        else if (c->layout.scale_granularity == FP8KV_KV_SCALE_TOKEN_HEAD)
            add(c, slot, &a->scale_cache, SCALE_CACHE);
        break;
    }
    default: {
        struct fp8kv_kv_attention_args_v1 *a = &c->args.attention;
        a->cache = &c->layout;
        add(c, slot, &a->query, QUERY);
        add_caches(c, slot, &a->key_cache, &a->value_cache);
        add(c, slot, &a->block_table, BLOCK_TABLE);
        add(c, slot, &a->seq_lens, SEQ_LENS);
        add(c, slot, &a->out, OUT);
        add_scale_pair(c, slot, &a->k_head_scales, &a->v_head_scales, &a->k_scale_cache,
                       &a->v_scale_cache);
        if (a->query_lens) /* several queries a sequence (KV ABI 3) */
            add(c, slot, &a->query_lens, QUERY_LENS);
        break;
    }
    }
}

/* sizes: the bytes of each of c's arrays and whether the call writes it, by role. The fixed
 * arrays' sizes are given (bytes[r] for role r); scale arrays are num_heads f32 per head or one
 * f32 a slot and head, written by a store of scale caches. */
static void sizes(struct fp8kv_kv_call *c, const size_t bytes[V_SCALE_CACHE + 1])
{
    void **slot[FP8KV_KV_CALL_ARRAYS];
    fp8kv_kv_call_arrays(c, slot);
    for (int i = 0; i < c->arrays; i++) {
        const int r = c->role[i], scale = r >= HEAD_SCALES;
        c->bytes[i] = scale ? scale_array_bytes(c) : bytes[r];
        c->output[i] = r == KEY_CACHE || r == VALUE_CACHE || r == KV_CACHE
                           ? c->op == FP8KV_KV_OP_STORE
                       : r == OUT                                 ? 1
                       : r == K_SCALE_CACHE || r == V_SCALE_CACHE ? c->op == FP8KV_KV_OP_STORE
                                                                  : 0;
    }
}

void fp8kv_kv_call_store(struct fp8kv_kv_call *c, const struct fp8kv_kv_store_args_v1 *a)
{
    memset(c, 0, sizeof *c);
    c->op = FP8KV_KV_OP_STORE;
    c->layout = *a->cache;
    c->args.store = *a;
    const size_t cache = cache_bytes(a->cache), tokens = count(a->num_tokens);
    const size_t input =
        tokens * count(a->cache->num_heads) * count(a->cache->head_size) * dtype_bytes(a->in_dtype);
    size_t bytes[V_SCALE_CACHE + 1] = {0};
    bytes[KEY] = bytes[VALUE] = input;
    bytes[SLOT_MAPPING] = tokens * sizeof(int64_t);
    bytes[KEY_CACHE] = bytes[VALUE_CACHE] = cache;
    bytes[KV_CACHE] = 2 * cache;
    sizes(c, bytes);
}

void fp8kv_kv_call_gather(struct fp8kv_kv_call *c, const struct fp8kv_kv_gather_args_v1 *a)
{
    memset(c, 0, sizeof *c);
    c->op = FP8KV_KV_OP_GATHER;
    c->layout = *a->cache;
    c->args.gather = *a;
    size_t rows = 0;
    for (int i = 0; i < a->num_seqs; i++)
        rows += count(a->seq_lens[i]);
    const size_t seqs = count(a->num_seqs);
    size_t bytes[V_SCALE_CACHE + 1] = {0};
    /* packed: the whole tensor, cache_data at its start (invoke derives the value cache's) */
    bytes[CACHE_DATA] = cache_bytes(a->cache) * (a->cache->packing != FP8KV_KV_SEPARATE ? 2 : 1);
    bytes[BLOCK_TABLE] = seqs * count(a->max_blocks_per_seq) * sizeof(int32_t);
    bytes[SEQ_LENS] = seqs * sizeof(int32_t);
    bytes[OUT] =
        rows * count(a->cache->num_heads) * count(a->cache->head_size) * dtype_bytes(a->out_dtype);
    sizes(c, bytes);
}

void fp8kv_kv_call_attention(struct fp8kv_kv_call *c, const struct fp8kv_kv_attention_args_v1 *a)
{
    memset(c, 0, sizeof *c);
    c->op = FP8KV_KV_OP_ATTENTION;
    c->layout = *a->cache;
    c->args.attention = *a;
    const size_t seqs = count(a->num_seqs), cache = cache_bytes(a->cache);
    const size_t rows = a->query_lens ? count(a->num_query_rows) : seqs;
    c->args.attention.num_query_rows = (int32_t)rows;
    const size_t q = rows * count(a->num_q_heads) * count(a->cache->head_size);
    size_t bytes[V_SCALE_CACHE + 1] = {0};
    bytes[QUERY] = q * dtype_bytes(a->query_dtype);
    bytes[KEY_CACHE] = bytes[VALUE_CACHE] = cache;
    bytes[KV_CACHE] = 2 * cache;
    bytes[BLOCK_TABLE] = seqs * count(a->max_blocks_per_seq) * sizeof(int32_t);
    bytes[SEQ_LENS] = bytes[QUERY_LENS] = seqs * sizeof(int32_t);
    bytes[OUT] = q * dtype_bytes(a->out_dtype);
    sizes(c, bytes);
}

const char *fp8kv_kv_call_name(const struct fp8kv_kv_call *c)
{
    return c->op == FP8KV_KV_OP_STORE    ? "store"
           : c->op == FP8KV_KV_OP_GATHER ? "gather"
                                         : "attention";
}

const char *fp8kv_kv_call_array_name(const struct fp8kv_kv_call *c, int i)
{
    return i >= 0 && i < c->arrays && c->role[i] <= V_SCALE_CACHE ? role_names[c->role[i]]
                                                                  : "(unknown)";
}

/* ---- running them ------------------------------------------------------------------------ */

/* subject_failed: the kernels' nonzero return as the subject's failure. */
static int subject_failed(const struct fp8kv_kv_kernels_v1 *k, const char *entry, int rc,
                          const char *before)
{
    const char *after = fp8kv_last_error();
    const int own = strcmp(before, after) != 0 && after[0];
    /* fp8kv's own kernels say what happened themselves (no open device, a plugin worker that
     * crashed, a call too large for the worker's memory): a status with a fresh message passes
     * through (a plugin cannot set one: it does not link fp8kv) */
    if (own && (rc == FP8KV_UNAVAILABLE || rc == FP8KV_ERR_SUBJECT || rc == FP8KV_ERR))
        return rc;
    return fp8kv_status_fail(FP8KV_ERR_SUBJECT, "kernels %s: %s returned %d%s%s",
                             k->name ? k->name : "(unnamed)", entry, rc, own ? ": " : "",
                             own ? after : "");
}

/* derive_packed: where the caches are packed, the value cache (a gather's value cache) from
 * the one tensor's start, in place, just before the kernels are called. */
static void derive_packed(struct fp8kv_kv_call *c)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(&c->layout);
    const size_t start = fp8kv_kv_packed_value_start(&shape);
    if (c->layout.packing == FP8KV_KV_SEPARATE)
        return;
    if (c->op == FP8KV_KV_OP_STORE)
        c->args.store.value_cache = c->args.store.key_cache + start;
    else if (c->op == FP8KV_KV_OP_ATTENTION)
        c->args.attention.value_cache = c->args.attention.key_cache + start;
    else if (!c->args.gather.is_key)
        c->args.gather.cache_data += start;
}

static int invoke(const struct fp8kv_kv_kernels_v1 *k, struct fp8kv_kv_call *c)
{
    derive_packed(c);
    switch (c->op) {
    case FP8KV_KV_OP_STORE: return k->store(k->ctx, &c->args.store);
    case FP8KV_KV_OP_GATHER: return k->gather(k->ctx, &c->args.gather);
    default: return k->attention(k->ctx, &c->args.attention);
    }
}

#ifdef FP8KV_HAVE_GPU
enum { CANARY_BYTES = 64, CANARY = 0xC5 };

/* staging_failed: a device call of the harness's own (allocate, copy) that failed: fp8kv's
 * error, not the subject's. */
static int staging_failed(const char *what)
{
    return fp8kv_fail("staging a KV call through the device: %s: %s", what, fp8kv_last_error());
}

/* staged: c run with every array copied to the device and its outputs copied back. Each
 * output is followed on the device by CANARY_BYTES canary bytes, checked after the call: a
 * kernel that writes past an output is the subject's failure. */
static int staged(const struct fp8kv_kv_kernels_v1 *k, struct fp8kv_kv_call *c, const char *before)
{
    void **slot[FP8KV_KV_CALL_ARRAYS], *host[FP8KV_KV_CALL_ARRAYS],
        *device[FP8KV_KV_CALL_ARRAYS] = {0};
    unsigned char canary[CANARY_BYTES], tail[CANARY_BYTES];
    memset(canary, CANARY, sizeof canary);
    fp8kv_kv_call_arrays(c, slot);
    int rc = FP8KV_OK;
    for (int i = 0; i < c->arrays && rc == 0; i++) {
        host[i] = *slot[i];
        const size_t extra = c->output[i] ? CANARY_BYTES : 0;
        if (fp8kv_gpu_alloc(c->bytes[i] + extra, &device[i]) != 0 ||
            fp8kv_gpu_to_device(device[i], host[i], c->bytes[i]) != 0 ||
            (extra &&
             fp8kv_gpu_to_device((char *)device[i] + c->bytes[i], canary, CANARY_BYTES) != 0))
            rc = staging_failed("copying the arguments in");
        else
            *slot[i] = device[i];
    }
    if (rc == 0) {
        const int got = invoke(k, c);
        rc = got != 0 ? subject_failed(k, fp8kv_kv_call_name(c), got, before) : FP8KV_OK;
    }
    for (int i = 0; i < c->arrays && rc == 0; i++) {
        if (!c->output[i])
            continue;
        if (fp8kv_gpu_to_host(tail, (char *)device[i] + c->bytes[i], CANARY_BYTES) != 0 ||
            fp8kv_gpu_to_host(host[i], device[i], c->bytes[i]) != 0)
            rc = staging_failed("copying the results out");
        else if (memcmp(tail, canary, CANARY_BYTES) != 0)
            rc = fp8kv_status_fail(FP8KV_ERR_SUBJECT,
                                   "kernels %s: %s wrote past the end of an output of %zu bytes "
                                   "on the device",
                                   k->name ? k->name : "(unnamed)", fp8kv_kv_call_name(c),
                                   c->bytes[i]);
    }
    for (int i = 0; i < c->arrays; i++) {
        fp8kv_gpu_free(device[i]);
        if (device[i])
            *slot[i] = host[i];
    }
    return rc;
}
#else
static int staged(const struct fp8kv_kv_kernels_v1 *k, struct fp8kv_kv_call *c, const char *before)
{
    (void)k;
    (void)c;
    (void)before;
    return fp8kv_status_fail(FP8KV_UNAVAILABLE, "kernels on device memory need a GPU build of "
                                                "fp8kv (-DFP8KV_GPU=cuda or hip)");
}
#endif

int fp8kv_kv_call_run(const struct fp8kv_kv_kernels_v1 *k, struct fp8kv_kv_call *c)
{
    char before[1024]; /* the whole of the last message (diag.c keeps 1024 bytes) */
    snprintf(before, sizeof before, "%s", fp8kv_last_error());
    void **slot[FP8KV_KV_CALL_ARRAYS];
    fp8kv_kv_call_arrays(c, slot); /* the arguments point at this copy's layout */
    if (k->memory == FP8KV_KV_MEMORY_DEVICE)
        return staged(k, c, before);
    const int got = invoke(k, c);
    return got == 0 ? FP8KV_OK : subject_failed(k, fp8kv_kv_call_name(c), got, before);
}
