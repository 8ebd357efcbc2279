/* block/plugin.c — block-codec plugins in child processes (fp8kv/block_plugin_host.h). */
#define _GNU_SOURCE
#include "fp8kv/block_plugin_host.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/block_plugin.h"
#include "fp8kv/diag.h"
#include "fp8kv/spec.h"
#include "child.h"

enum { CAP = FP8KV_BLOCK_PLUGIN_CALL, MAXB = FP8KV_BLOCK_MAX };

/* The memory a worker shares with the harness: one request's inputs and outputs. */
struct shared_buffer {
    float x[CAP * MAXB]; /* encode: inputs */
    float y[CAP * MAXB]; /* decode: outputs */
    uint8_t scales[CAP];
    uint8_t elements[CAP * MAXB]; /* encode: outputs; decode: inputs */
};

enum op { OP_ENCODE = 1, OP_DECODE = 2 };

struct request {
    uint32_t op, nblocks;
    float G;
};

/* The worker's first message: what it found in the library. */
struct hello {
    int32_t loaded;
    uint32_t abi_version;
    int32_t has_encode, has_decode;
    char name[64], format[32], rule[32], model[32];
    char error[512];
};

struct fp8kv_block_plugin {
    char path[1024];
    struct fp8kv_block_plugin_info info;
    struct fp8kv_subject subject; /* fp8kv_block_plugin_subject's */
    struct fp8kv_block_kernels kernels;
    int nworkers;
    struct fp8kv_child w[];
};

/* ---- the worker (child side) ---- */

static const struct fp8kv_block_codec_v1 *load_plugin(const char *path, struct hello *h)
{
    const struct fp8kv_block_codec_v1 *d =
        fp8kv_child_descriptor(path, "fp8kv_block_codec_v1", h->error, sizeof h->error);
    if (!d)
        return NULL;
    h->loaded = 1;
    h->abi_version = d->abi_version;
    if (d->abi_version != FP8KV_BLOCK_CODEC_ABI_VERSION)
        return NULL;
    fp8kv_child_copy_text(h->name, sizeof h->name, d->name);
    fp8kv_child_copy_text(h->format, sizeof h->format, d->format ? d->format : "(null)");
    fp8kv_child_copy_text(h->rule, sizeof h->rule, d->rule ? d->rule : "(null)");
    fp8kv_child_copy_text(h->model, sizeof h->model, d->model ? d->model : "(null)");
    h->has_encode = d->encode != NULL;
    h->has_decode = d->decode != NULL;
    return h->has_encode ? d : NULL;
}

static int worker_main(int sock, void *shared, void *arg)
{
    struct shared_buffer *buf = shared;
    struct hello h;
    memset(&h, 0, sizeof h);
    const struct fp8kv_block_codec_v1 *d = load_plugin((const char *)arg, &h);
    if (fp8kv_child_send(sock, &h, sizeof h) != 0 || !d)
        return 0;
    struct request r;
    while (fp8kv_child_receive(sock, &r, sizeof r) == 1) {
        if (r.nblocks > CAP)
            return 3;
        if (r.op == OP_ENCODE)
            d->encode(buf->x, r.nblocks, r.G, buf->scales, buf->elements);
        else if (r.op == OP_DECODE && d->decode)
            d->decode(buf->scales, buf->elements, r.nblocks, r.G, buf->y);
        else
            return 3;
        uint32_t done = r.nblocks;
        if (fp8kv_child_send(sock, &done, sizeof done) != 0)
            return 0;
    }
    return 0;
}

/* ---- the harness side ---- */

/* Checks the descriptor a worker read (hello: a struct hello); fills pl's info. */
static int check_descriptor(void *plugin, const void *hello)
{
    struct fp8kv_block_plugin *pl = plugin;
    const struct hello *h = hello;
    if (!h->loaded)
        return fp8kv_fail("plugin %s: %s", pl->path, h->error);
    if (h->abi_version != FP8KV_BLOCK_CODEC_ABI_VERSION)
        return fp8kv_fail("plugin %s: block-codec ABI version %u, this fp8kv reads version %d",
                          pl->path, h->abi_version, FP8KV_BLOCK_CODEC_ABI_VERSION);
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name(h->format);
    const int rule = fp8kv_name_index(fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, h->rule);
    const int model = fp8kv_name_index(fp8kv_block_model_names, FP8KV_BLOCK_MODEL_COUNT, h->model);
    if (!f)
        return fp8kv_fail("plugin %s: unknown block format \"%s\" (mxfp8_e4m3 | mxfp8_e5m2 | "
                          "mxfp6_e3m2 | mxfp6_e2m3 | mxfp4 | nvfp4)",
                          pl->path, h->format);
    if (rule < 0 || !fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule))
        return fp8kv_fail(
            "plugin %s: rule \"%s\" is not one %s takes (%s)", pl->path, h->rule, f->name,
            f->scale_kind == FP8KV_SCALE_E8M0 ? "floor | rceil | even" : "rne | ceil | 4over6");
    if (model < 0)
        return fp8kv_fail("plugin %s: unknown model \"%s\" (exact | f32)", pl->path, h->model);
    if (!h->has_encode)
        return fp8kv_fail("plugin %s: encode is NULL", pl->path);
    fp8kv_child_plugin_name(pl->info.name, sizeof pl->info.name, h->name, pl->path);
    pl->info.format = f;
    pl->info.rule = (enum fp8kv_block_rule)rule;
    pl->info.model = (enum fp8kv_block_model)model;
    pl->info.has_decode = h->has_decode;
    return FP8KV_OK;
}

int fp8kv_block_plugin_open(const char *path, int workers, double timeout_s,
                            struct fp8kv_block_plugin **out)
{
    *out = NULL;
    char library[sizeof((struct fp8kv_block_plugin *)0)->path];
    if (fp8kv_child_plugin_path(path, library, sizeof library) != 0)
        return FP8KV_ERR;
    workers = workers < 1 ? 1 : workers;
    struct fp8kv_block_plugin *pl = calloc(1, sizeof *pl + (size_t)workers * sizeof pl->w[0]);
    if (!pl)
        return fp8kv_fail("out of memory");
    memcpy(pl->path, library, sizeof library);
    const int timeout_ms = fp8kv_child_timeout_ms(timeout_s);
    struct hello h;
    const int rc =
        fp8kv_child_start_pool(pl->w, workers, pl->path, sizeof(struct shared_buffer), timeout_ms,
                               worker_main, pl->path, &h, sizeof h, check_descriptor, pl);
    if (rc != FP8KV_OK) {
        free(pl);
        return rc;
    }
    pl->nworkers = workers;
    *out = pl;
    return FP8KV_OK;
}

const struct fp8kv_block_plugin_info *fp8kv_block_plugin_info(const struct fp8kv_block_plugin *pl)
{
    return &pl->info;
}

int fp8kv_block_plugin_workers(const struct fp8kv_block_plugin *pl)
{
    return pl->nworkers;
}

/* Runs op over nblocks blocks in pieces of at most CAP on worker wi, with canaries after the
 * outputs (a plugin writing past its outputs is caught whatever the layout). */
static int serve(struct fp8kv_block_plugin *pl, int wi, enum op op, const float *x, size_t nblocks,
                 float G, uint8_t *scales, uint8_t *elements, float *y)
{
    struct fp8kv_child *w = &pl->w[wi % pl->nworkers];
    struct shared_buffer *buf = w->shared;
    const size_t bs = (size_t)pl->info.format->block_size;
    int rc = fp8kv_child_lock(w);
    for (size_t b = 0; b < nblocks && rc == FP8KV_OK;) {
        const size_t k = nblocks - b < CAP ? nblocks - b : CAP;
        char doing[200];
        if (op == OP_ENCODE) {
            memcpy(buf->x, x + b * bs, k * bs * sizeof *x);
            snprintf(doing, sizeof doing, "encoding blocks %zu .. %zu (G %.9g)", b, b + k - 1,
                     (double)G);
        } else {
            memcpy(buf->scales, scales + b, k);
            memcpy(buf->elements, elements + b * bs, k * bs);
            snprintf(doing, sizeof doing, "decoding blocks %zu .. %zu (G %.9g)", b, b + k - 1,
                     (double)G);
        }
        uint8_t *tails[2] = {op == OP_ENCODE ? buf->scales + k : (uint8_t *)(buf->y + k * bs),
                             op == OP_ENCODE ? buf->elements + k * bs : NULL};
        const size_t rooms[2] = {op == OP_ENCODE ? CAP - k : (CAP - k) * bs * sizeof(float),
                                 (CAP - k) * bs};
        size_t canary[2];
        for (int t = 0; t < 2; t++)
            canary[t] = tails[t] ? fp8kv_child_canary_arm(tails[t], rooms[t]) : 0;
        struct request r = {(uint32_t)op, (uint32_t)k, G};
        rc = fp8kv_child_request_count(w, &r, sizeof r, (uint32_t)k, doing);
        for (int t = 0; t < 2 && rc == FP8KV_OK; t++) {
            const long c = fp8kv_child_canary_broken(tails[t], canary[t]);
            if (c >= 0)
                rc = fp8kv_child_failed(
                    w, "plugin %s wrote past the end of its outputs (byte %ld after them) while %s",
                    pl->path, c, doing);
        }
        if (rc == FP8KV_OK && op == OP_ENCODE) {
            memcpy(scales + b, buf->scales, k);
            memcpy(elements + b * bs, buf->elements, k * bs);
        } else if (rc == FP8KV_OK) {
            memcpy(y + b * bs, buf->y, k * bs * sizeof *y);
        }
        b += k;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int fp8kv_block_plugin_encode(struct fp8kv_block_plugin *pl, int worker, const float *x,
                              size_t nblocks, float G, uint8_t *scales, uint8_t *elements)
{
    return serve(pl, worker, OP_ENCODE, x, nblocks, G, scales, elements, NULL);
}

int fp8kv_block_plugin_decode(struct fp8kv_block_plugin *pl, int worker, const uint8_t *scales,
                              const uint8_t *elements, size_t nblocks, float G, float *y)
{
    if (!pl->info.has_decode)
        return fp8kv_fail("plugin %s has no decode", pl->path);
    return serve(pl, worker, OP_DECODE, NULL, nblocks, G, (uint8_t *)scales, (uint8_t *)elements,
                 y);
}

/* The plugin's calls as block kernels (ctx: the plugin; cfg is its one claimed combination). */
static int kernels_encode(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const float *x,
                          size_t nblocks, uint8_t *scales, uint8_t *elements)
{
    return fp8kv_block_plugin_encode(ctx, worker, x, nblocks, cfg.global_scale, scales, elements);
}
static int kernels_decode(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const uint8_t *scales,
                          const uint8_t *elements, size_t nblocks, float *y)
{
    return fp8kv_block_plugin_decode(ctx, worker, scales, elements, nblocks, cfg.global_scale, y);
}

const struct fp8kv_subject *fp8kv_block_plugin_subject(struct fp8kv_block_plugin *pl)
{
    const struct fp8kv_block_plugin_info *info = &pl->info;
    pl->kernels =
        (struct fp8kv_block_kernels){{info->format->id, (int)info->rule, (int)info->model},
                                     pl->nworkers,
                                     pl,
                                     kernels_encode,
                                     info->has_decode ? kernels_decode : NULL,
                                     NULL};
    pl->subject = (struct fp8kv_subject){.name = info->name,
                                         .description = "a block-codec plugin",
                                         .caps = FP8KV_CAP_BLOCK,
                                         .claim = FP8KV_CLAIM_ALL,
                                         .block = &pl->kernels};
    return &pl->subject;
}

void fp8kv_block_plugin_close(struct fp8kv_block_plugin *pl)
{
    if (!pl)
        return;
    for (int i = 0; i < pl->nworkers; i++)
        fp8kv_child_stop(&pl->w[i]);
    free(pl);
}
