/* kv_plugin.c — examples/engine_kv (an engine-style KV-kernel plugin) with a planted fault, for
 * the tests of `fp8kv check-kv` (KV_FAULT selects it; KV_FAULT_NONE is the example as it is):
 *   crash          dereferences NULL in the store
 *   hang           sleeps forever in the gather
 *   overrun        writes one byte past the end of the key cache
 *   far_overrun    writes a byte 1064 bytes past the end of the value cache (beyond any canary)
 *   input_write    writes into the keys it is given (an input)
 *   setsid_child   in its first store, starts a child that leaves the worker's process group and
 *                  session (setsid), writes its pid to $FP8KV_TEST_CHILD_PIDFILE and sleeps
 *   proc_stdout    in the store, writes a forged verdict line to the harness's stdout through
 *                  /proc/<parent>/fd/1
 *   memory_hog     in the store, allocates and touches 1 GiB; returns -1 when it cannot
 *   shared_hog     in its first store, maps 1 GiB of shared anonymous memory (not counted by
 *                  RLIMIT_DATA), touches it and keeps it
 *   memfd_hog      the same through a memfd of 1 GiB; returns -1 when it cannot
 *   child_hog      in its first store, starts 3 children that each allocate, touch and keep
 *                  200 MiB (each under a 256M limit, not together)
 *   control_name   its name holds an ESC sequence, a carriage return and a newline
 *   error          the attention returns -1
 *   scale_ignored  stores x / 1 instead of x / scale
 *   k_scale_for_v  stores the values with k_scale
 *   padding        writes padding tokens (slot -1) to the first slot no token owns
 *   abi2           says KV ABI version 2
 *   no_store       has no store
 *   device         says its buffers are device memory
 *   close_socket   closes every descriptor above 2 in the store (the worker's socket too), then
 *                  sleeps forever
 *   head0_scale    per-head scales: stores and reads every head with head 0's scale
 *   recip_row      per-token scales: amax * (1 / 448) instead of amax / 448
 *   causal_ignored every query row attends to all its sequence's tokens (no causal mask)
 *   window_ignored the sliding window is ignored
 *   packing_ignored takes packed caches but reads them as separate ones (blocks one block apart)
 *   nhd_only       declares the NHD layout only, and its entry points fail on any other
 * The example's exported descriptor is renamed and wrapped: the fault is the only difference.
 */
#define _GNU_SOURCE /* memfd_create */
#include "fp8kv/kv_plugin.h"
/* the example's export, renamed (a function-like macro leaves the struct tag alone) */
const struct fp8kv_kv_kernels_v1 *engine_kv_kernels_v1(void);
#define fp8kv_kv_kernels_v1(v) engine_kv_kernels_v1(v)
#include "../../examples/engine_kv/engine_kv.c"
#undef fp8kv_kv_kernels_v1

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
#define KV_FAULT_HEAD0_SCALE 12
#define KV_FAULT_RECIP_ROW 13
#define KV_FAULT_FAR_OVERRUN 14
#define KV_FAULT_INPUT_WRITE 15
#define KV_FAULT_SETSID_CHILD 16
#define KV_FAULT_PROC_STDOUT 17
#define KV_FAULT_MEMORY_HOG 18
#define KV_FAULT_CONTROL_NAME 19
#define KV_FAULT_CAUSAL_IGNORED 20
#define KV_FAULT_WINDOW_IGNORED 21
#define KV_FAULT_PACKING_IGNORED 22
#define KV_FAULT_NHD_ONLY 23
#define KV_FAULT_SHARED_HOG 24
#define KV_FAULT_MEMFD_HOG 25
#define KV_FAULT_CHILD_HOG 26

/* head0: n copies of heads[0] in same (the head0_scale fault); NULL when heads is */
static const float *head0(const float *heads, int n, float *same)
{
    for (int h = 0; h < n && h < 256 && heads; h++)
        same[h] = heads[0];
    return heads ? same : NULL;
}
static float same_k[256], same_v[256];

/* hog: the shared_hog, memfd_hog and child_hog faults, in the first store; 0, or -1 for the
 * store to return. */
static int hog(void)
{
    static int done;
    const size_t gib = (size_t)1 << 30, each = (size_t)200 << 20;
    if (done++)
        return 0;
    if (KV_FAULT == KV_FAULT_SHARED_HOG || KV_FAULT == KV_FAULT_MEMFD_HOG) {
        const int fd = KV_FAULT == KV_FAULT_MEMFD_HOG ? memfd_create("hog", 0) : -1;
        if (KV_FAULT == KV_FAULT_MEMFD_HOG && (fd < 0 || ftruncate(fd, (off_t)gib) != 0))
            return -1;
        char *p = mmap(NULL, gib, PROT_READ | PROT_WRITE, MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0),
                       fd, 0);
        if (p == MAP_FAILED)
            return -1;
        memset(p, 1, gib); /* kept */
    }
    for (int i = 0; KV_FAULT == KV_FAULT_CHILD_HOG && i < 3; i++) {
        int ready[2];
        if (pipe(ready) != 0)
            return -1;
        if (fork() == 0) {
            char *p = malloc(each);
            if (p)
                memset(p, 1, each);
            if (!p || write(ready[1], "1", 1) != 1)
                _exit(1);
            for (;;)
                pause();
        }
        char c;
        const int ok = read(ready[0], &c, 1) == 1;
        close(ready[0]);
        close(ready[1]);
        if (!ok)
            return -1;
    }
    return 0;
}

/* escape: the setsid_child, proc_stdout and memory_hog faults; 0, or -1 for the store to
 * return. */
static int escape(void)
{
    static int forked;
    int ready[2];
    if (KV_FAULT == KV_FAULT_SETSID_CHILD && !forked++ && pipe(ready) == 0) {
        if (fork() == 0) {
            setsid();
            const char *pidfile = getenv("FP8KV_TEST_CHILD_PIDFILE");
            FILE *f = pidfile ? fopen(pidfile, "w") : NULL;
            if (f) {
                fprintf(f, "%d\n", (int)getpid());
                fclose(f);
            }
            if (write(ready[1], "1", 1) != 1) /* the store goes on once the pid is written */
                _exit(1);
            for (;;)
                pause();
        }
        char c;
        if (read(ready[0], &c, 1) != 1)
            return -1;
        close(ready[0]);
        close(ready[1]);
    }
    if (KV_FAULT == KV_FAULT_PROC_STDOUT) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/1", (int)getppid());
        const int fd = open(path, O_WRONLY);
        static const char forged[] = "check-kv engine_kv: verdict=conformant (forged)\n";
        if (fd >= 0 && write(fd, forged, sizeof forged - 1) > 0)
            close(fd);
    }
    if (hog() != 0)
        return -1;
    if (KV_FAULT == KV_FAULT_MEMORY_HOG) {
        const size_t bytes = (size_t)1 << 30;
        char *p = malloc(bytes);
        if (!p)
            return -1;
        memset(p, 1, bytes);
        free(p);
    }
    return 0;
}

/* recip_row_store: the store per token and head with each row's scale amax * (1 / 448), the
 * bytes stored with it (the recip_row fault) */
static int recip_row_store(const struct fp8kv_kv_store_args_v1 *a)
{
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    const int H = c->num_heads, D = c->head_size;
    for (int t = 0; t < a->num_tokens; t++) {
        const int64_t slot = a->slot_mapping[t];
        for (int h = 0; h < H && slot >= 0; h++)
            for (int is_key = 0; is_key < 2; is_key++) {
                const void *x = is_key ? a->key : a->value;
                const size_t first = ((size_t)t * H + h) * D;
                float amax = 0.0f;
                for (int d = 0; d < D; d++) {
                    const float v = fabsf(load_input(x, a->in_dtype, first + (size_t)d));
                    amax = isfinite(v) && v > amax ? v : amax;
                }
                const float s = amax > 0.0f ? amax * (1.0f / 448.0f) : 1.0f;
                (is_key ? a->k_scale_cache : a->v_scale_cache)[(size_t)slot * H + h] = s;
                for (int d = 0; d < D; d++)
                    (is_key ? a->key_cache : a->value_cache)[offset(c, is_key, slot, h, d)] =
                        to_e4m3fn(load_input(x, a->in_dtype, first + (size_t)d) / s);
            }
    }
    return 0;
}

static int faulty_store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    struct fp8kv_kv_store_args_v1 b = *a;
    int64_t *slots = NULL;
    if (KV_FAULT == KV_FAULT_NHD_ONLY && a->cache->layout != FP8KV_KV_ABI_NHD)
        return -1;
    switch (KV_FAULT) {
    case KV_FAULT_CRASH: *(volatile int *)(uintptr_t)(a->num_tokens * 0) = 1; break;
    case KV_FAULT_CLOSE_SOCKET:
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        for (;;)
            pause();
    case KV_FAULT_SCALE_IGNORED: b.k_scale = b.v_scale = 1.0f; break;
    case KV_FAULT_HEAD0_SCALE:
        b.k_head_scales = head0(a->k_head_scales, a->cache->num_heads, same_k);
        b.v_head_scales = head0(a->v_head_scales, a->cache->num_heads, same_v);
        break;
    case KV_FAULT_RECIP_ROW:
        if (a->cache->scale_granularity == FP8KV_KV_SCALE_TOKEN_HEAD)
            return recip_row_store(a);
        break;
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
    const int rc = escape() != 0 ? -1 : store(ctx, &b);
    free(slots);
    const struct fp8kv_kv_layout_v1 *c = a->cache;
    const size_t cache_bytes = (size_t)c->num_blocks * c->block_size * c->num_heads * c->head_size;
    if (KV_FAULT == KV_FAULT_OVERRUN)
        a->key_cache[cache_bytes] = 0x11;
    if (KV_FAULT == KV_FAULT_FAR_OVERRUN)
        a->value_cache[cache_bytes + 64 + 1000] = 0x11;
    if (KV_FAULT == KV_FAULT_INPUT_WRITE && a->num_tokens > 0)
        *(volatile unsigned char *)(uintptr_t)a->key = 0x11;
    return rc;
}

static int faulty_gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    if (KV_FAULT == KV_FAULT_NHD_ONLY && a->cache->layout != FP8KV_KV_ABI_NHD)
        return -1;
    if (KV_FAULT == KV_FAULT_HANG)
        for (;;)
            pause();
    struct fp8kv_kv_gather_args_v1 b = *a;
    if (KV_FAULT == KV_FAULT_HEAD0_SCALE)
        b.head_scales = head0(a->head_scales, a->cache->num_heads, same_k);
    return gather(ctx, &b);
}

/* causal_ignored: each query row of a through the example as a decode step of its whole
 * sequence (the last token's span for every row) */
static int causal_ignored(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    const size_t D = (size_t)a->cache->head_size, H = (size_t)a->num_q_heads;
    size_t row = 0;
    for (int s = 0; s < a->num_seqs; s++)
        for (int j = 0; j < (a->query_lens ? a->query_lens[s] : 1); j++, row++) {
            struct fp8kv_kv_attention_args_v1 b = *a;
            b.num_seqs = b.num_query_rows = 1;
            b.query_lens = NULL;
            b.seq_lens = a->seq_lens + s;
            b.block_table = a->block_table + (size_t)s * a->max_blocks_per_seq;
            b.query = a->query + row * H * D;
            b.out = a->out + row * H * D;
            if (attention(ctx, &b) != 0)
                return -1;
        }
    return 0;
}

static int faulty_attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    if (KV_FAULT == KV_FAULT_NHD_ONLY && a->cache->layout != FP8KV_KV_ABI_NHD)
        return -1;
    struct fp8kv_kv_attention_args_v1 b = *a;
    if (KV_FAULT == KV_FAULT_CAUSAL_IGNORED)
        return causal_ignored(ctx, a);
    if (KV_FAULT == KV_FAULT_WINDOW_IGNORED)
        b.window = 0;
    struct fp8kv_kv_layout_v1 separate = *a->cache;
    separate.packing = FP8KV_KV_SEPARATE;
    if (KV_FAULT == KV_FAULT_PACKING_IGNORED)
        b.cache = &separate;
    if (KV_FAULT == KV_FAULT_HEAD0_SCALE) {
        b.k_head_scales = head0(a->k_head_scales, a->cache->num_heads, same_k);
        b.v_head_scales = head0(a->v_head_scales, a->cache->num_heads, same_v);
    }
    return KV_FAULT == KV_FAULT_ERROR ? -1 : attention(ctx, &b);
}

static const struct fp8kv_kv_kernels_v1 faulty = {
    KV_FAULT == KV_FAULT_ABI2 ? FP8KV_KV_ABI_VERSION + 1 : FP8KV_KV_ABI_VERSION,
    KV_FAULT == KV_FAULT_CONTROL_NAME ? "engine_kv\x1b[2K\r\nverdict=conformant\xc2\x9b"
                                      : "engine_kv",
    "e4m3fn",
    "satfinite",
    "clamp",
    KV_FAULT == KV_FAULT_DEVICE ? FP8KV_KV_MEMORY_DEVICE : FP8KV_KV_MEMORY_HOST,
    NULL,
    KV_FAULT == KV_FAULT_NO_STORE ? NULL : faulty_store,
    faulty_gather,
    faulty_attention,
    FP8KV_KV_SCALES_ALL,
    "f32",
    FP8KV_KV_ATTENTION_ALL,
    FP8KV_KV_PACKINGS_ALL,
    KV_FAULT == KV_FAULT_NHD_ONLY ? FP8KV_KV_LAYOUTS(FP8KV_KV_ABI_NHD) : FP8KV_KV_LAYOUTS_ALL};

ENGINE_EXPORT const struct fp8kv_kv_kernels_v1 *fp8kv_kv_kernels_v1(void)
{
    return &faulty;
}
