/* kv/plugin.c — KV-kernel plugins (fp8kv/kv_plugin_host.h): the KV ABI's table for the one
 * plugin host (host.h), and the harness-side kernels that forward each call to the worker. */
#define _GNU_SOURCE
#include "fp8kv/kv_plugin_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/kv_attention.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/kv_plugin.h"
#include "fp8kv/spec.h"
#include "host.h"
#include "kv/call.h"
#ifdef FP8KV_HAVE_GPU
#include "fp8kv/gpu.h"
#endif

enum {
    ARENA_BYTES = 512u << 20
}; /* the arrays of one call (an engine-suite case: 2 x 64 MiB caches) */
_Static_assert(sizeof(struct fp8kv_kv_call) <= FP8KV_HOST_PARAMS, "a call fits a request");
_Static_assert(FP8KV_KV_CALL_ARRAYS <= FP8KV_HOST_ARRAYS, "a call's arrays fit a request");

/* The descriptor's facts a worker sends (struct fp8kv_host_hello's facts). */
struct facts {
    uint32_t memory, scale_granularities, attention_features, packings, layouts;
    int32_t has_gather, has_attention;
    int32_t no_device; /* on device memory, but the worker has no GPU to open */
    char format[32], overflow[32], inf[32];
    char arithmetic[96]; /* the attention's declared arithmetic, as the plugin wrote it */
};
_Static_assert(sizeof(struct facts) <= FP8KV_HOST_FACTS, "the facts fit the hello");

struct fp8kv_kv_plugin {
    struct fp8kv_host *host;
    struct fp8kv_kv_plugin_info info;
    uint32_t scale_granularities, attention_features, packings, layouts;
    char arithmetic[96];                /* checked: a text fp8kv_attention_arith_parse takes */
    struct fp8kv_kv_kernels_v1 forward; /* the harness-side kernels: calls to the worker */
};

/* ---- the KV ABI --------------------------------------------------------------------------- */

/* Opens the GPU a plugin on device memory computes on (arg: the device's number); 0, or
 * nonzero with the reason in error. */
static int open_device(const void *arg, char *error, size_t size)
{
#ifdef FP8KV_HAVE_GPU
    struct fp8kv_gpu_device_info info;
    if (fp8kv_gpu_open(*(const int *)arg, &info) == 0)
        return 0;
    snprintf(error, size, "device memory, but GPU %d: %s", *(const int *)arg, fp8kv_last_error());
#else
    (void)arg;
    snprintf(error, size,
             "kernels on device memory need a GPU build of fp8kv (-DFP8KV_GPU=cuda "
             "or hip)");
#endif
    return 1;
}

static int describe(const void *descriptor, void *out, char *error, size_t size, const void *arg)
{
    const struct fp8kv_kv_kernels_v1 *d = descriptor;
    struct facts *f = out;
    fp8kv_host_text(f->format, sizeof f->format, d->format, "");
    fp8kv_host_text(f->overflow, sizeof f->overflow, d->overflow, "");
    fp8kv_host_text(f->inf, sizeof f->inf, d->inf, "");
    fp8kv_host_text(f->arithmetic, sizeof f->arithmetic, d->arithmetic, "");
    f->memory = d->memory;
    f->scale_granularities = d->scale_granularities;
    f->attention_features = d->attention_features;
    f->packings = d->packings;
    f->layouts = d->layouts;
    f->has_gather = d->gather != NULL;
    f->has_attention = d->attention != NULL;
    if (d->memory == FP8KV_KV_MEMORY_DEVICE && open_device(arg, error, size) != 0) {
        f->no_device = 1;
        return 1;
    }
    if (!d->store) {
        snprintf(error, size, "store is NULL (the store is required)");
        return 1;
    }
    return 0;
}

/* name_index: the index of name in names (count), FP8KV_CLAIM_ANY for "", or -2. */
static int name_index(const char *name, const char *const *names, int count)
{
    if (!name[0])
        return FP8KV_CLAIM_ANY;
    const int i = fp8kv_name_index(names, count, name);
    return i >= 0 ? i : -2;
}

/* The profile a plugin claims, from its names (checked). 0, or FP8KV_ERR naming the field. */
static int check_claim(const char *path, const struct facts *f, struct fp8kv_claim *claim)
{
    const char *formats[FP8KV_FORMAT_COUNT];
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        formats[i] = fp8kv_formats[i].name;
    const int format = name_index(fp8kv_format_alias(f->format), formats, FP8KV_FORMAT_COUNT);
    const int overflow = name_index(f->overflow, fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT);
    const int inf = name_index(f->inf, fp8kv_inf_names, FP8KV_INF_COUNT);
    if (format == -2)
        return fp8kv_host_unknown(path, "format", f->format, formats, FP8KV_FORMAT_COUNT, 1);
    if (overflow == -2)
        return fp8kv_host_unknown(path, "overflow", f->overflow, fp8kv_overflow_names,
                                  FP8KV_OVERFLOW_COUNT, 1);
    if (inf == -2)
        return fp8kv_host_unknown(path, "inf", f->inf, fp8kv_inf_names, FP8KV_INF_COUNT, 1);
    /* under overflow nan, Inf is NaN whatever the inf field says */
    *claim = (struct fp8kv_claim){
        format,
        overflow == FP8KV_CLAIM_ANY ? FP8KV_CLAIM_ANY : overflow == FP8KV_OVERFLOW_SATFINITE,
        inf == FP8KV_CLAIM_ANY ? FP8KV_CLAIM_ANY : inf == FP8KV_INF_NAN};
    return FP8KV_OK;
}

/* ctx: the plugin to fill (its info and scale granularities). */
static int check(void *ctx, const char *path, const struct fp8kv_host_hello *hello)
{
    struct fp8kv_kv_plugin *pl = ctx;
    const struct facts *f = (const struct facts *)hello->facts;
    if (hello->error[0])
        return fp8kv_status_fail(f->no_device ? FP8KV_UNAVAILABLE : FP8KV_ERR, "plugin %s: %s",
                                 path, hello->error);
    const int rc = check_claim(path, f, &pl->info.claim);
    if (rc != FP8KV_OK)
        return rc;
    if (f->memory != FP8KV_KV_MEMORY_HOST && f->memory != FP8KV_KV_MEMORY_DEVICE)
        return fp8kv_fail("plugin %s: unknown memory %u (0 host, 1 device)", path, f->memory);
    if (f->scale_granularities & ~FP8KV_KV_SCALES_ALL)
        return fp8kv_fail("plugin %s: unknown scale granularities 0x%x (bits: 1 tensor, 2 head, "
                          "4 token and head)",
                          path, f->scale_granularities);
    if (f->attention_features & ~FP8KV_KV_ATTENTION_ALL)
        return fp8kv_fail("plugin %s: unknown attention features 0x%x (bits: 1 query_lens, 2 "
                          "window)",
                          path, f->attention_features);
    if (f->layouts & ~FP8KV_KV_LAYOUTS_ALL)
        return fp8kv_fail("plugin %s: unknown layouts 0x%x (bits: 1 nhd, 2 split_x, 4 hnd)", path,
                          f->layouts);
    if (f->packings & ~FP8KV_KV_PACKINGS_ALL)
        return fp8kv_fail("plugin %s: unknown packings 0x%x (bits: 1 separate, 2 kv_first, 4 "
                          "block_first)",
                          path, f->packings);
    pl->info.caps = FP8KV_CAP_STORE | (f->has_gather ? FP8KV_CAP_GATHER : 0u) |
                    (f->has_attention ? FP8KV_CAP_ATTENTION : 0u);
    struct fp8kv_attention_arith arith;
    if (f->has_attention && fp8kv_attention_arith_parse(f->arithmetic, &arith) != 0)
        return fp8kv_fail("plugin %s: %s", path, fp8kv_last_error());
    pl->info.memory = f->memory;
    pl->scale_granularities = f->scale_granularities;
    pl->attention_features = f->attention_features;
    pl->packings = f->packings;
    pl->layouts = f->layouts;
    snprintf(pl->arithmetic, sizeof pl->arithmetic, "%s", f->arithmetic);
    return FP8KV_OK;
}

/* params: the call (struct fp8kv_kv_call), its pointers rebuilt here onto the arrays. */
static int run(const void *descriptor, uint32_t op, const void *params, int arrays,
               void *const *array, const uint64_t *bytes, char *message, size_t size)
{
    const struct fp8kv_kv_kernels_v1 *d = descriptor;
    struct fp8kv_kv_call c;
    memcpy(&c, params, sizeof c);
    void **slot[FP8KV_KV_CALL_ARRAYS];
    fp8kv_kv_call_arrays(&c, slot);
    const int has = op == FP8KV_KV_OP_STORE    ? 1
                    : op == FP8KV_KV_OP_GATHER ? d->gather != NULL
                                               : d->attention != NULL;
    int fits = (int)op == c.op && has && c.arrays == arrays;
    for (int i = 0; fits && i < arrays; i++) {
        fits = bytes[i] == c.bytes[i];
        *slot[i] = array[i];
    }
    if (!fits) {
        snprintf(message, size, "worker protocol error (operation %u)", op);
        return FP8KV_ERR_SUBJECT;
    }
    const int rc = fp8kv_kv_call_run(d, &c);
    if (rc != 0)
        snprintf(message, size, "%s", fp8kv_last_error());
    return rc;
}

static const struct fp8kv_host_abi kv_abi = {
    "fp8kv_kv_kernels_v1", "KV ABI", FP8KV_KV_ABI_VERSION, ARENA_BYTES, describe, check, run,
};

/* ---- the harness side: the forwarding kernels --------------------------------------------- */

static int forward(struct fp8kv_kv_plugin *pl, struct fp8kv_kv_call *c)
{
    void **slot[FP8KV_KV_CALL_ARRAYS];
    fp8kv_kv_call_arrays(c, slot);
    struct fp8kv_host_request r = {(uint32_t)c->op, c, sizeof *c, c->arrays, {{0}}};
    for (int i = 0; i < c->arrays; i++)
        r.array[i] = (struct fp8kv_host_array){*slot[i], c->bytes[i],
                                               c->output[i] ? FP8KV_HOST_INOUT : FP8KV_HOST_IN,
                                               fp8kv_kv_call_array_name(c, i)};
    char doing[200];
    snprintf(doing, sizeof doing, "running %s (%s, %d blocks of %d, %d x %d heads)",
             fp8kv_kv_call_name(c), fp8kv_kv_layout_name((enum fp8kv_kv_layout)c->layout.layout),
             c->layout.num_blocks, c->layout.block_size, c->layout.num_heads, c->layout.head_size);
    return fp8kv_host_call(pl->host, 0, &r, doing);
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

int fp8kv_kv_plugin_open(const char *path, int device, double timeout_s,
                         struct fp8kv_kv_plugin **out)
{
    *out = NULL;
    struct fp8kv_kv_plugin *pl = calloc(1, sizeof *pl);
    if (!pl)
        return fp8kv_fail("out of memory");
    const int rc = fp8kv_host_open(&kv_abi, path, 1, timeout_s, &device, pl, &pl->host);
    if (rc != FP8KV_OK) {
        free(pl);
        return rc;
    }
    snprintf(pl->info.name, sizeof pl->info.name, "%s", fp8kv_host_name(pl->host));
    const unsigned caps = pl->info.caps;
    pl->forward =
        (struct fp8kv_kv_kernels_v1){FP8KV_KV_ABI_VERSION,
                                     pl->info.name,
                                     NULL,
                                     NULL,
                                     NULL,
                                     FP8KV_KV_MEMORY_HOST,
                                     pl,
                                     forward_store,
                                     caps & FP8KV_CAP_GATHER ? forward_gather : NULL,
                                     caps & FP8KV_CAP_ATTENTION ? forward_attention : NULL,
                                     pl->scale_granularities,
                                     pl->arithmetic[0] ? pl->arithmetic : NULL,
                                     pl->attention_features,
                                     pl->packings,
                                     pl->layouts};
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
    fp8kv_host_close(pl->host);
    free(pl);
}
