/* codec/plugin.c — codec plugins (fp8kv/codec_plugin_host.h): the codec ABI's table for the one
 * plugin host (host.h), and requests split into pieces a worker takes. */
#define _GNU_SOURCE
#include "fp8kv/codec_plugin_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin.h"
#include "fp8kv/spec.h"
#include "host.h"

enum { CAP = FP8KV_PLUGIN_CALL }; /* values per request */

enum op { OP_ENCODE = 1, OP_DECODE = 2 };

/* The descriptor's facts a worker sends (struct fp8kv_host_hello's facts). */
struct facts {
    int32_t has_decode;
    char format[32], overflow[32];
};
_Static_assert(sizeof(struct facts) <= FP8KV_HOST_FACTS, "the facts fit the hello");

struct fp8kv_plugin {
    struct fp8kv_host *host;
    struct fp8kv_plugin_info info;
    double timeout_s;
};

/* ---- the codec ABI ------------------------------------------------------------------------ */

static int describe(const void *descriptor, void *out, char *error, size_t size, const void *arg)
{
    (void)arg;
    const struct fp8kv_codec_v1 *d = descriptor;
    struct facts *f = out;
    fp8kv_host_text(f->format, sizeof f->format, d->format, "(null)");
    fp8kv_host_text(f->overflow, sizeof f->overflow, d->overflow, "(null)");
    f->has_decode = d->decode_f32 != NULL;
    if (d->encode_f32)
        return 0;
    snprintf(error, size, "encode_f32 is NULL");
    return 1;
}

/* ctx: the struct fp8kv_plugin_info to fill. */
static int check(void *ctx, const char *path, const struct fp8kv_host_hello *hello)
{
    struct fp8kv_plugin_info *info = ctx;
    const struct facts *f = (const struct facts *)hello->facts;
    const struct fp8kv_format *format = fp8kv_format_by_name(f->format); /* ml_dtypes names too */
    const int overflow = fp8kv_name_index(fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT, f->overflow);
    if (!format) {
        const char *names[FP8KV_FORMAT_COUNT];
        for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
            names[i] = fp8kv_formats[i].name;
        return fp8kv_host_unknown(path, "format", f->format, names, FP8KV_FORMAT_COUNT, 0);
    }
    if (overflow < 0)
        return fp8kv_host_unknown(path, "overflow", f->overflow, fp8kv_overflow_names,
                                  FP8KV_OVERFLOW_COUNT, 0);
    info->format = format->id;
    info->overflow = (enum fp8kv_overflow)overflow;
    info->has_decode = f->has_decode;
    return FP8KV_OK;
}

/* encode: x (floats) -> q (one code each); decode: q -> y (floats). params: the scale. */
static int run(const void *descriptor, uint32_t op, const void *params, int arrays,
               void *const *array, const uint64_t *bytes, char *message, size_t size)
{
    const struct fp8kv_codec_v1 *d = descriptor;
    float scale;
    memcpy(&scale, params, sizeof scale);
    if (arrays == 2 && op == OP_ENCODE && bytes[0] == bytes[1] * sizeof(float)) {
        d->encode_f32(array[0], (size_t)bytes[1], scale, array[1]);
        return 0;
    }
    if (arrays == 2 && op == OP_DECODE && d->decode_f32 && bytes[1] == bytes[0] * sizeof(float)) {
        d->decode_f32(array[0], (size_t)bytes[0], scale, array[1]);
        return 0;
    }
    snprintf(message, size, "worker protocol error (operation %u)", op);
    return FP8KV_ERR_SUBJECT;
}

static const struct fp8kv_host_abi codec_abi = {
    "fp8kv_codec_v1",
    "ABI",
    FP8KV_CODEC_ABI_VERSION,
    (size_t)CAP *(sizeof(float) + 1),
    describe,
    check,
    run,
};

/* ---- the harness side --------------------------------------------------------------------- */

int fp8kv_plugin_open(const char *path, int workers, double timeout_s, struct fp8kv_plugin **out)
{
    *out = NULL;
    struct fp8kv_plugin *pl = calloc(1, sizeof *pl);
    if (!pl)
        return fp8kv_fail("out of memory");
    pl->timeout_s = timeout_s;
    const int rc =
        fp8kv_host_open(&codec_abi, path, workers, timeout_s, NULL, &pl->info, &pl->host);
    if (rc != FP8KV_OK) {
        free(pl);
        return rc;
    }
    snprintf(pl->info.name, sizeof pl->info.name, "%s", fp8kv_host_name(pl->host));
    *out = pl;
    return FP8KV_OK;
}

const struct fp8kv_plugin_info *fp8kv_plugin_info(const struct fp8kv_plugin *pl)
{
    return &pl->info;
}

int fp8kv_plugin_workers(const struct fp8kv_plugin *pl)
{
    return fp8kv_host_workers(pl->host);
}

/* One piece (k <= CAP values) on worker wi of host h: encode x -> q, or decode codes -> y. */
static int piece(struct fp8kv_host *h, int wi, enum op op, const void *in, size_t k, float s,
                 void *out)
{
    char doing[200];
    if (op == OP_ENCODE) {
        const float *x = in;
        snprintf(doing, sizeof doing, "encoding %zu inputs 0x%08x .. 0x%08x at scale 0x%08x (%.9g)",
                 k, fp8kv_f32_bits(x[0]), fp8kv_f32_bits(x[k - 1]), fp8kv_f32_bits(s), (double)s);
    } else {
        const uint8_t *q = in;
        snprintf(doing, sizeof doing, "decoding %zu codes %02x .. %02x at scale 0x%08x (%.9g)", k,
                 q[0], q[k - 1], fp8kv_f32_bits(s), (double)s);
    }
    const size_t in_bytes = op == OP_ENCODE ? k * sizeof(float) : k;
    const size_t out_bytes = op == OP_ENCODE ? k : k * sizeof(float);
    const struct fp8kv_host_request r = {
        (uint32_t)op,
        &s,
        sizeof s,
        2,
        {{(void *)in, in_bytes, FP8KV_HOST_IN, op == OP_ENCODE ? "x" : "q"},
         {out, out_bytes, FP8KV_HOST_OUT, op == OP_ENCODE ? "q" : "y"}},
    };
    return fp8kv_host_call(h, wi, &r, doing);
}

/* Runs op over n values in pieces of at most CAP on worker wi. */
static int serve(struct fp8kv_plugin *pl, int wi, enum op op, const void *in, size_t n, float s,
                 void *out)
{
    const size_t in_size = op == OP_ENCODE ? sizeof(float) : 1,
                 out_size = op == OP_ENCODE ? 1 : sizeof(float);
    int rc = FP8KV_OK;
    for (size_t i = 0; i < n && rc == FP8KV_OK; i += CAP) {
        const size_t k = n - i < CAP ? n - i : CAP;
        rc = piece(pl->host, wi, op, (const char *)in + i * in_size, k, s,
                   (char *)out + i * out_size);
    }
    return rc;
}

int fp8kv_plugin_encode(struct fp8kv_plugin *pl, int worker, const float *x, size_t n, float s,
                        uint8_t *q)
{
    return serve(pl, worker, OP_ENCODE, x, n, s, q);
}

int fp8kv_plugin_decode(struct fp8kv_plugin *pl, int worker, const uint8_t *q, size_t n, float s,
                        float *y)
{
    if (!pl->info.has_decode)
        return fp8kv_fail("plugin %s has no decode_f32", fp8kv_host_path(pl->host));
    return serve(pl, worker, OP_DECODE, q, n, s, y);
}

/* Encodes x[0 .. n) (n <= CAP) at scale s in *fresh, a host of one worker started anew when it
 * is not running: 1 when it crashed, 0 when it answered, -1 when it hung or could not start. */
static int crashes(struct fp8kv_plugin *pl, struct fp8kv_host **fresh, const float *x, size_t n,
                   float s, uint8_t *q)
{
    struct fp8kv_plugin_info info;
    if (!*fresh && fp8kv_host_open(&codec_abi, fp8kv_host_path(pl->host), 1, pl->timeout_s, NULL,
                                   &info, fresh) != FP8KV_OK)
        return -1;
    if (piece(*fresh, 0, OP_ENCODE, x, n, s, q) == FP8KV_OK)
        return 0;
    fp8kv_host_close(*fresh); /* it failed: the next try starts another */
    *fresh = NULL;
    return strstr(fp8kv_last_error(), " hung: ") ? -1 : 1; /* child.c's words for a silence */
}

int fp8kv_plugin_locate_crash(struct fp8kv_plugin *pl, const float *x, size_t n, float s,
                              size_t *index)
{
    struct fp8kv_host *fresh = NULL;
    uint8_t *q = malloc(CAP);
    size_t lo = 0, hi = n < CAP ? n : CAP; /* a crashing input lies in [lo, hi) */
    int found = q && hi > lo;
    while (found && hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        const int r = crashes(pl, &fresh, x + lo, mid - lo, s, q);
        if (r < 0)
            found = 0;
        else if (r == 1)
            hi = mid;
        else
            lo = mid;
    }
    found = found && crashes(pl, &fresh, x + lo, 1, s, q) == 1; /* it crashes alone */
    fp8kv_host_close(fresh);
    free(q);
    if (!found)
        return fp8kv_fail("no single input found that crashes the plugin");
    *index = lo;
    return FP8KV_OK;
}

float *fp8kv_plugin_input_buffer(struct fp8kv_plugin *pl, int worker)
{
    return fp8kv_host_first_input(pl->host, worker); /* an encode's x comes first */
}

void fp8kv_plugin_close(struct fp8kv_plugin *pl)
{
    if (!pl)
        return;
    fp8kv_host_close(pl->host);
    free(pl);
}
