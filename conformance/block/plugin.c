/* block/plugin.c — block-codec plugins (fp8kv/block_plugin_host.h): the block-codec ABI's table
 * for the one plugin host (host.h), requests split into pieces a worker takes, and the plugin
 * as a subject. */
#define _GNU_SOURCE
#include "fp8kv/block_plugin_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/block_plugin.h"
#include "fp8kv/diag.h"
#include "fp8kv/spec.h"
#include "host.h"

enum { CAP = FP8KV_BLOCK_PLUGIN_CALL, MAXB = FP8KV_BLOCK_MAX };

enum op { OP_ENCODE = 1, OP_DECODE = 2 };

/* The descriptor's facts a worker sends (struct fp8kv_host_hello's facts). */
struct facts {
    int32_t has_decode;
    char format[32], rule[32], model[32];
};
_Static_assert(sizeof(struct facts) <= FP8KV_HOST_FACTS, "the facts fit the hello");

/* A request's parameters: the global decode scale and the format's block size. */
struct params {
    float G;
    uint32_t block_size;
};

struct fp8kv_block_plugin {
    struct fp8kv_host *host;
    struct fp8kv_block_plugin_info info;
    struct fp8kv_subject subject; /* fp8kv_block_plugin_subject's */
    struct fp8kv_block_kernels kernels;
};

/* ---- the block-codec ABI ------------------------------------------------------------------ */

static int describe(const void *descriptor, void *out, char *error, size_t size, const void *arg)
{
    (void)arg;
    const struct fp8kv_block_codec_v1 *d = descriptor;
    struct facts *f = out;
    fp8kv_host_text(f->format, sizeof f->format, d->format, "(null)");
    fp8kv_host_text(f->rule, sizeof f->rule, d->rule, "(null)");
    fp8kv_host_text(f->model, sizeof f->model, d->model, "(null)");
    f->has_decode = d->decode != NULL;
    if (d->encode)
        return 0;
    snprintf(error, size, "encode is NULL");
    return 1;
}

/* ctx: the struct fp8kv_block_plugin_info to fill. */
static int check(void *ctx, const char *path, const struct fp8kv_host_hello *hello)
{
    struct fp8kv_block_plugin_info *info = ctx;
    const struct facts *h = (const struct facts *)hello->facts;
    const struct fp8kv_block_format *f = fp8kv_block_format_by_name(h->format);
    const int rule = fp8kv_name_index(fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, h->rule);
    const int model = fp8kv_name_index(fp8kv_block_model_names, FP8KV_BLOCK_MODEL_COUNT, h->model);
    if (!f) {
        const char *names[FP8KV_BLOCK_FORMAT_COUNT];
        for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
            names[i] = fp8kv_block_formats[i].name;
        return fp8kv_host_unknown(path, "block format", h->format, names, FP8KV_BLOCK_FORMAT_COUNT,
                                  0);
    }
    if (rule < 0 || !fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)rule)) {
        const char *rules[FP8KV_BLOCK_RULE_COUNT];
        char list[256];
        fp8kv_names_list(rules, fp8kv_block_rules_of(f, rules), " | ", NULL, list, sizeof list);
        return fp8kv_fail("plugin %s: rule \"%s\" is not one %s takes (%s)", path, h->rule, f->name,
                          list);
    }
    if (model < 0)
        return fp8kv_host_unknown(path, "model", h->model, fp8kv_block_model_names,
                                  FP8KV_BLOCK_MODEL_COUNT, 0);
    info->format = f;
    info->rule = (enum fp8kv_block_rule)rule;
    info->model = (enum fp8kv_block_model)model;
    info->has_decode = h->has_decode;
    return FP8KV_OK;
}

/* encode: x -> scales, elements; decode: scales, elements -> y. The block count is the scales'
 * bytes (one a block), the other arrays' sizes follow from it. */
static int run(const void *descriptor, uint32_t op, const void *params, int arrays,
               void *const *array, const uint64_t *bytes, char *message, size_t size)
{
    const struct fp8kv_block_codec_v1 *d = descriptor;
    struct params p;
    memcpy(&p, params, sizeof p);
    const uint64_t bs = p.block_size;
    if (arrays == 3 && op == OP_ENCODE && bs <= MAXB && bytes[0] == bytes[1] * bs * sizeof(float) &&
        bytes[2] == bytes[1] * bs) {
        d->encode(array[0], (size_t)bytes[1], p.G, array[1], array[2]);
        return 0;
    }
    if (arrays == 3 && op == OP_DECODE && d->decode && bs <= MAXB && bytes[1] == bytes[0] * bs &&
        bytes[2] == bytes[0] * bs * sizeof(float)) {
        d->decode(array[0], array[1], (size_t)bytes[0], p.G, array[2]);
        return 0;
    }
    snprintf(message, size, "worker protocol error (operation %u)", op);
    return FP8KV_ERR_SUBJECT;
}

static const struct fp8kv_host_abi block_abi = {
    "fp8kv_block_codec_v1",
    "block-codec ABI",
    FP8KV_BLOCK_CODEC_ABI_VERSION,
    (size_t)CAP *(MAXB * sizeof(float) + 1 + MAXB),
    describe,
    check,
    run,
};

/* ---- the harness side --------------------------------------------------------------------- */

int fp8kv_block_plugin_open(const char *path, int workers, double timeout_s,
                            struct fp8kv_block_plugin **out)
{
    *out = NULL;
    struct fp8kv_block_plugin *pl = calloc(1, sizeof *pl);
    if (!pl)
        return fp8kv_fail("out of memory");
    const int rc =
        fp8kv_host_open(&block_abi, path, workers, timeout_s, NULL, &pl->info, &pl->host);
    if (rc != FP8KV_OK) {
        free(pl);
        return rc;
    }
    snprintf(pl->info.name, sizeof pl->info.name, "%s", fp8kv_host_name(pl->host));
    *out = pl;
    return FP8KV_OK;
}

const struct fp8kv_block_plugin_info *fp8kv_block_plugin_info(const struct fp8kv_block_plugin *pl)
{
    return &pl->info;
}

int fp8kv_block_plugin_workers(const struct fp8kv_block_plugin *pl)
{
    return fp8kv_host_workers(pl->host);
}

/* Runs op over nblocks blocks in pieces of at most CAP on worker wi. */
static int serve(struct fp8kv_block_plugin *pl, int wi, enum op op, const float *x, size_t nblocks,
                 float G, uint8_t *scales, uint8_t *elements, float *y)
{
    const size_t bs = (size_t)pl->info.format->block_size;
    const struct params p = {G, (uint32_t)bs};
    const enum fp8kv_host_direction codes = op == OP_ENCODE ? FP8KV_HOST_OUT : FP8KV_HOST_IN;
    int rc = FP8KV_OK;
    for (size_t b = 0; b < nblocks && rc == FP8KV_OK; b += CAP) {
        const size_t k = nblocks - b < CAP ? nblocks - b : CAP;
        char doing[200];
        snprintf(doing, sizeof doing, "%s blocks %zu .. %zu (G %.9g)",
                 op == OP_ENCODE ? "encoding" : "decoding", b, b + k - 1, (double)G);
        const struct fp8kv_host_array values = {
            op == OP_ENCODE ? (void *)(x + b * bs) : (void *)(y + b * bs), k * bs * sizeof(float),
            op == OP_ENCODE ? FP8KV_HOST_IN : FP8KV_HOST_OUT, op == OP_ENCODE ? "x" : "y"};
        const struct fp8kv_host_array scale_array = {scales + b, k, codes, "scales"};
        const struct fp8kv_host_array element_array = {elements + b * bs, k * bs, codes,
                                                       "elements"};
        struct fp8kv_host_request r = {(uint32_t)op, &p, sizeof p, 3, {values}};
        if (op == OP_ENCODE) {
            r.array[1] = scale_array;
            r.array[2] = element_array;
        } else {
            r.array[0] = scale_array;
            r.array[1] = element_array;
            r.array[2] = values;
        }
        rc = fp8kv_host_call(pl->host, wi, &r, doing);
    }
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
        return fp8kv_fail("plugin %s has no decode", fp8kv_host_path(pl->host));
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
                                     fp8kv_host_workers(pl->host),
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
    fp8kv_host_close(pl->host);
    free(pl);
}
