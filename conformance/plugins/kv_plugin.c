/* kv_plugin.c — examples/engine_kv (an engine-style KV-kernel plugin) with a planted fault, for
 * the tests of `fp8kv check-kv` (KV_FAULT selects it; KV_FAULT_NONE is the example as it is):
 *   crash          dereferences NULL in the store
 *   hang           sleeps forever in the gather
 *   overrun        writes one byte past the end of the key cache
 *   error          the attention returns -1
 *   scale_ignored  stores x / 1 instead of x / scale
 *   k_scale_for_v  stores the values with k_scale
 *   padding        writes padding tokens (slot -1) to the first slot no token owns
 *   abi2           says KV ABI version 2
 *   no_store       has no store
 *   device         says its buffers are device memory
 *   close_socket   closes every descriptor above 2 in the store (the worker's socket too), then
 *                  sleeps forever
 * The example's exported descriptor is renamed and wrapped: the fault is the only difference.
 */
#include "fp8kv/kv_plugin.h"
/* the example's export, renamed (a function-like macro leaves the struct tag alone) */
const struct fp8kv_kv_kernels_v1 *engine_kv_kernels_v1(void);
#define fp8kv_kv_kernels_v1(v) engine_kv_kernels_v1(v)
#include "../../examples/engine_kv/engine_kv.c"
#undef fp8kv_kv_kernels_v1

#include <stdlib.h>
#include <unistd.h>

#define KV_FAULT_NONE 0
#define KV_FAULT_CRASH 1
#define KV_FAULT_HANG 2
#define KV_FAULT_OVERRUN 3
#define KV_FAULT_ERROR 4
#define KV_FAULT_SCALE_IGNORED 5
#define KV_FAULT_K_SCALE_FOR_V 6
#define KV_FAULT_PADDING 7
#define KV_FAULT_ABI2 8
#define KV_FAULT_NO_STORE 9
#define KV_FAULT_DEVICE 10
#define KV_FAULT_CLOSE_SOCKET 11

static int faulty_store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    struct fp8kv_kv_store_args_v1 b = *a;
    int64_t *slots = NULL;
    switch (KV_FAULT) {
    case KV_FAULT_CRASH: *(volatile int *)(uintptr_t)(a->num_tokens * 0) = 1; break;
    case KV_FAULT_CLOSE_SOCKET:
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        for (;;)
            pause();
    case KV_FAULT_SCALE_IGNORED: b.k_scale = b.v_scale = 1.0f; break;
    case KV_FAULT_K_SCALE_FOR_V: b.v_scale = b.k_scale; break;
    case KV_FAULT_PADDING: {
        int64_t free_slot = 0;
        for (int t = 0; t < a->num_tokens; t++) /* the first slot above every token's */
            free_slot = a->slot_mapping[t] >= free_slot ? a->slot_mapping[t] + 1 : free_slot;
        const int64_t total = (int64_t)a->cache->num_blocks * a->cache->block_size;
        slots = malloc(((size_t)a->num_tokens + 1) * sizeof *slots);
        for (int t = 0; t < a->num_tokens; t++)
            slots[t] = a->slot_mapping[t] >= 0 ? a->slot_mapping[t] : free_slot % total;
        b.slot_mapping = slots;
        break;
    }
    default: break;
    }
    const int rc = store(ctx, &b);
    free(slots);
    if (KV_FAULT == KV_FAULT_OVERRUN) {
        const struct fp8kv_kv_layout_v1 *c = a->cache;
        a->key_cache[(size_t)c->num_blocks * c->block_size * c->num_heads * c->head_size] = 0x11;
    }
    return rc;
}

static int faulty_gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    if (KV_FAULT == KV_FAULT_HANG)
        for (;;)
            pause();
    return gather(ctx, a);
}

static int faulty_attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    return KV_FAULT == KV_FAULT_ERROR ? -1 : attention(ctx, a);
}

static const struct fp8kv_kv_kernels_v1 faulty = {
    KV_FAULT == KV_FAULT_ABI2 ? 2 : FP8KV_KV_ABI_VERSION,
    "engine_kv",
    "e4m3fn",
    "satfinite",
    "clamp",
    KV_FAULT == KV_FAULT_DEVICE ? FP8KV_KV_MEMORY_DEVICE : FP8KV_KV_MEMORY_HOST,
    NULL,
    KV_FAULT == KV_FAULT_NO_STORE ? NULL : faulty_store,
    faulty_gather,
    faulty_attention};

ENGINE_EXPORT const struct fp8kv_kv_kernels_v1 *fp8kv_kv_kernels_v1(void)
{
    return &faulty;
}
