/* kv/plugin.c — KV-kernel plugins in a child process (fp8kv/kv_plugin_host.h). */
#define _GNU_SOURCE
#include "fp8kv/kv_plugin_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "fp8kv/diag.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/kv_plugin.h"
#include "fp8kv/spec.h"
#include "kv/call.h"
#ifdef FP8KV_HAVE_GPU
#include "fp8kv/gpu.h"
#endif

/* The memory shared with the worker: every array of one call, 64-byte aligned, outputs each
 * followed by CANARY_BYTES canary bytes; its end meets the guard page. */
enum { ARENA_BYTES = 64u << 20, ALIGN = 64, CANARY_BYTES = FP8KV_CHILD_CANARY_BYTES };

/* The worker's first message: what it found in the library. */
struct hello {
    int32_t loaded; /* 1: the descriptor was read (abi_version says which layout) */
    uint32_t abi_version, memory, scale_granularities;
    int32_t has_store, has_gather, has_attention;
    char name[64], format[32], overflow[32], inf[32];
    char error[512];
};

/* One request: the call (its pointers rebuilt on the other side) and where its arrays are. */
struct wire {
    struct fp8kv_kv_call call;
    uint64_t offset[FP8KV_KV_CALL_ARRAYS];
};

struct answer {
    int32_t rc;
    char message[512];
};

struct worker_arg {
    const char *path;
    int device;
};

struct fp8kv_kv_plugin {
    char path[1024];
    struct fp8kv_kv_plugin_info info;
    struct fp8kv_kv_kernels_v1 forward; /* the harness-side kernels: calls to the worker */
    struct fp8kv_child child;
};

/* ---- the worker (child side) ------------------------------------------------------------ */

static const struct fp8kv_kv_kernels_v1 *load(const char *path, int device, struct hello *h)
{
    const struct fp8kv_kv_kernels_v1 *d =
        fp8kv_child_descriptor(path, "fp8kv_kv_kernels_v1", h->error, sizeof h->error);
    if (!d)
        return NULL;
    h->loaded = 1;
    h->abi_version = d->abi_version;
    if (d->abi_version != FP8KV_KV_ABI_VERSION)
        return NULL; /* another layout: read nothing more of it */
    fp8kv_child_copy_text(h->name, sizeof h->name, d->name);
    fp8kv_child_copy_text(h->format, sizeof h->format, d->format);
    fp8kv_child_copy_text(h->overflow, sizeof h->overflow, d->overflow);
    fp8kv_child_copy_text(h->inf, sizeof h->inf, d->inf);
    h->memory = d->memory;
    h->scale_granularities = d->scale_granularities;
    h->has_store = d->store != NULL;
    h->has_gather = d->gather != NULL;
    h->has_attention = d->attention != NULL;
    if (d->memory == FP8KV_KV_MEMORY_DEVICE) {
#ifdef FP8KV_HAVE_GPU
        struct fp8kv_gpu_device_info info;
        if (fp8kv_gpu_open(device, &info) != 0) {
            snprintf(h->error, sizeof h->error, "device memory, but GPU %d: %s", device,
                     fp8kv_last_error());
            return NULL;
        }
#else
        (void)device;
        fp8kv_child_copy_text(h->error, sizeof h->error,
                              "kernels on device memory need a GPU build of fp8kv (-DFP8KV_GPU="
                              "cuda or hip)");
        return NULL;
#endif
    }
    return d;
}

/* place: points c's arrays into the arena at the offsets given; -1 when one does not fit. */
static int place(struct fp8kv_kv_call *c, const uint64_t *offset, char *arena)
{
    void **slot[FP8KV_KV_CALL_ARRAYS];
    fp8kv_kv_call_arrays(c, slot);
    if (c->arrays > FP8KV_KV_CALL_ARRAYS)
        return -1;
    for (int i = 0; i < c->arrays; i++) {
        if (offset[i] > ARENA_BYTES || c->bytes[i] > ARENA_BYTES - offset[i])
            return -1;
        *slot[i] = arena + offset[i];
    }
    return 0;
}

static int worker_main(int sock, void *shared, void *arg)
{
    const struct worker_arg *w = arg;
    struct hello h;
    memset(&h, 0, sizeof h);
    const struct fp8kv_kv_kernels_v1 *d = load(w->path, w->device, &h);
    if (fp8kv_child_send(sock, &h, sizeof h) != 0 || !d || h.error[0])
        return 0;
    struct wire r;
    while (fp8kv_child_receive(sock, &r, sizeof r) == 1) {
        struct answer a;
        memset(&a, 0, sizeof a);
        if (place(&r.call, r.offset, shared) != 0)
            return 3;
        const int has = r.call.op == FP8KV_KV_OP_STORE    ? d->store != NULL
                        : r.call.op == FP8KV_KV_OP_GATHER ? d->gather != NULL
                                                          : d->attention != NULL;
        if (!has)
            return 3;
        a.rc = fp8kv_kv_call_run(d, &r.call);
        if (a.rc != 0)
            fp8kv_child_copy_text(a.message, sizeof a.message, fp8kv_last_error());
        if (fp8kv_child_send(sock, &a, sizeof a) != 0)
            return 0;
    }
    return 0;
}

/* ---- the harness side: the forwarding kernels ---------------------------------------------- */

static int forward(struct fp8kv_kv_plugin *pl, struct fp8kv_kv_call *c)
{
    void **slot[FP8KV_KV_CALL_ARRAYS];
    fp8kv_kv_call_arrays(c, slot);
    struct wire r = {.call = *c};
    char *arena = pl->child.shared;
    size_t at = 0;
    pthread_mutex_lock(&pl->child.lock); /* the arena holds one call at a time */
    for (int i = 0; i < c->arrays; i++) {
        at = (at + ALIGN - 1) / ALIGN * ALIGN;
        const size_t need = c->bytes[i] + (c->output[i] ? CANARY_BYTES : 0);
        if (need > ARENA_BYTES - at) {
            pthread_mutex_unlock(&pl->child.lock);
            return fp8kv_fail("plugin %s: a %s call of %zu bytes and more is too large for the "
                              "%u MiB it shares with fp8kv",
                              pl->path, fp8kv_kv_call_name(c), at + need, ARENA_BYTES >> 20);
        }
        r.offset[i] = at;
        memcpy(arena + at, *slot[i], c->bytes[i]);
        if (c->output[i])
            fp8kv_child_canary_arm(arena + at + c->bytes[i], CANARY_BYTES);
        at += need;
    }
    char doing[200];
    snprintf(doing, sizeof doing, "running %s (%s, %d blocks of %d, %d x %d heads)",
             fp8kv_kv_call_name(c), fp8kv_kv_layout_name((enum fp8kv_kv_layout)c->layout.layout),
             c->layout.num_blocks, c->layout.block_size, c->layout.num_heads, c->layout.head_size);
    struct answer a;
    int rc = fp8kv_child_request(&pl->child, &r, sizeof r, &a, sizeof a, doing);
    for (int i = 0; i < c->arrays && rc == 0; i++) {
        if (!c->output[i])
            continue;
        const long k = fp8kv_child_canary_broken(arena + r.offset[i] + c->bytes[i], CANARY_BYTES);
        if (k >= 0)
            rc = fp8kv_child_failed(&pl->child,
                                    "plugin %s wrote past the end of an output of %zu bytes "
                                    "(byte %ld after it) while %s",
                                    pl->path, c->bytes[i], k, doing);
        if (rc == 0 && a.rc == 0)
            memcpy(*slot[i], arena + r.offset[i], c->bytes[i]);
    }
    pthread_mutex_unlock(&pl->child.lock);
    if (rc != 0)
        return rc;
    if (a.rc != 0) /* the worker's fp8kv_kv_call_run said what the plugin returned */
        return fp8kv_status_fail(a.rc == FP8KV_UNAVAILABLE ? a.rc : FP8KV_ERR_SUBJECT, "%s",
                                 a.message);
    return FP8KV_OK;
}

static int forward_store(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    struct fp8kv_kv_call c;
    fp8kv_kv_call_store(&c, a);
    return forward(ctx, &c);
}

static int forward_gather(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    struct fp8kv_kv_call c;
    fp8kv_kv_call_gather(&c, a);
    return forward(ctx, &c);
}

static int forward_attention(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    struct fp8kv_kv_call c;
    fp8kv_kv_call_attention(&c, a);
    return forward(ctx, &c);
}

/* ---- opening ------------------------------------------------------------------------------ */

/* name_index: the index of name in names (count), FP8KV_CLAIM_ANY for "", or -2. */
static int name_index(const char *name, const char *const *names, int count)
{
    if (!name[0])
        return FP8KV_CLAIM_ANY;
    const int i = fp8kv_name_index(names, count, name);
    return i >= 0 ? i : -2;
}

/* Checks the descriptor the worker read (hello: a struct hello); fills pl's info and its
 * forwarding kernels. */
static int check_descriptor(void *plugin, const void *hello)
{
    struct fp8kv_kv_plugin *pl = plugin;
    const struct hello *h = hello;
    if (!h->loaded)
        return fp8kv_fail("plugin %s: %s", pl->path, h->error);
    if (h->abi_version != FP8KV_KV_ABI_VERSION)
        return fp8kv_fail("plugin %s: KV ABI version %u, this fp8kv reads version %d", pl->path,
                          h->abi_version, FP8KV_KV_ABI_VERSION);
    if (h->error[0])
        return fp8kv_status_fail(h->memory == FP8KV_KV_MEMORY_DEVICE ? FP8KV_UNAVAILABLE
                                                                     : FP8KV_ERR,
                                 "plugin %s: %s", pl->path, h->error);
    const char *formats[FP8KV_FORMAT_COUNT];
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        formats[i] = fp8kv_formats[i].name;
    const int format = name_index(fp8kv_format_alias(h->format), formats, FP8KV_FORMAT_COUNT);
    const int overflow = name_index(h->overflow, fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT);
    const int inf = name_index(h->inf, fp8kv_inf_names, FP8KV_INF_COUNT);
    if (format == -2)
        return fp8kv_fail(
            "plugin %s: unknown format \"%s\" (e4m3fn | e4m3fnuz | e5m2 | e5m2fnuz | NULL)",
            pl->path, h->format);
    if (overflow == -2)
        return fp8kv_fail("plugin %s: unknown overflow \"%s\" (satfinite | nan | inf | NULL)",
                          pl->path, h->overflow);
    if (inf == -2)
        return fp8kv_fail("plugin %s: unknown inf \"%s\" (clamp | nan | inf | NULL)", pl->path,
                          h->inf);
    if (h->memory != FP8KV_KV_MEMORY_HOST && h->memory != FP8KV_KV_MEMORY_DEVICE)
        return fp8kv_fail("plugin %s: unknown memory %u (0 host, 1 device)", pl->path, h->memory);
    if (!h->has_store)
        return fp8kv_fail("plugin %s: store is NULL (the store is required)", pl->path);
    if (h->scale_granularities & ~FP8KV_KV_SCALES_ALL)
        return fp8kv_fail("plugin %s: unknown scale granularities 0x%x (bits: 1 tensor, 2 head, "
                          "4 token and head)",
                          pl->path, h->scale_granularities);
    fp8kv_child_plugin_name(pl->info.name, sizeof pl->info.name, h->name, pl->path);
    /* under overflow nan, Inf is NaN whatever the inf field says */
    pl->info.claim = (struct fp8kv_claim){
        format,
        overflow == FP8KV_CLAIM_ANY ? FP8KV_CLAIM_ANY : overflow == FP8KV_OVERFLOW_SATFINITE,
        inf == FP8KV_CLAIM_ANY ? FP8KV_CLAIM_ANY : inf == FP8KV_INF_NAN};
    pl->info.caps = FP8KV_CAP_STORE | (h->has_gather ? FP8KV_CAP_GATHER : 0u) |
                    (h->has_attention ? FP8KV_CAP_ATTENTION : 0u);
    pl->info.memory = h->memory;
    pl->forward = (struct fp8kv_kv_kernels_v1){FP8KV_KV_ABI_VERSION,
                                               pl->info.name,
                                               NULL,
                                               NULL,
                                               NULL,
                                               FP8KV_KV_MEMORY_HOST,
                                               pl,
                                               forward_store,
                                               h->has_gather ? forward_gather : NULL,
                                               h->has_attention ? forward_attention : NULL,
                                               h->scale_granularities};
    return FP8KV_OK;
}

int fp8kv_kv_plugin_open(const char *path, int device, double timeout_s,
                         struct fp8kv_kv_plugin **out)
{
    *out = NULL;
    char library[sizeof((struct fp8kv_kv_plugin *)0)->path];
    if (fp8kv_child_plugin_path(path, library, sizeof library) != 0)
        return FP8KV_ERR;
    struct fp8kv_kv_plugin *pl = calloc(1, sizeof *pl);
    if (!pl)
        return fp8kv_fail("out of memory");
    memcpy(pl->path, library, sizeof library);
    const int timeout_ms = fp8kv_child_timeout_ms(timeout_s);
    struct worker_arg arg = {pl->path, device};
    struct hello h;
    const int rc = fp8kv_child_start_pool(&pl->child, 1, pl->path, ARENA_BYTES, timeout_ms,
                                          worker_main, &arg, &h, sizeof h, check_descriptor, pl);
    if (rc != 0) {
        free(pl);
        return rc;
    }
    *out = pl;
    return FP8KV_OK;
}

const struct fp8kv_kv_plugin_info *fp8kv_kv_plugin_info(const struct fp8kv_kv_plugin *pl)
{
    return &pl->info;
}

struct fp8kv_subject fp8kv_kv_plugin_subject(struct fp8kv_kv_plugin *pl)
{
    return (struct fp8kv_subject){
        .name = pl->info.name,
        .description = "a KV-kernel plugin (fp8kv_kv_kernels_v1), run in a worker process",
        .caps = pl->info.caps,
        .memory =
            pl->info.memory == FP8KV_KV_MEMORY_DEVICE ? FP8KV_MEMORY_DEVICE : FP8KV_MEMORY_HOST,
        .claim = pl->info.claim,
        .kv = &pl->forward,
    };
}

void fp8kv_kv_plugin_close(struct fp8kv_kv_plugin *pl)
{
    if (!pl)
        return;
    fp8kv_child_stop(&pl->child);
    free(pl);
}
