/* plugin_host.c — codec plugins in child processes (fp8kv/plugin_host.h). */
#define _GNU_SOURCE
#include "fp8kv/plugin_host.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin.h"
#include "fp8kv/spec.h"
#include "child.h"

enum { CAP = FP8KV_PLUGIN_CALL }; /* values per request */

/* The memory a worker shares with the harness: the inputs and outputs of one request. */
struct shared_buffer {
    float x[CAP];   /* encode: inputs */
    float y[CAP];   /* decode: outputs */
    uint8_t q[CAP]; /* encode: outputs; decode: inputs */
};

enum op { OP_ENCODE = 1, OP_DECODE = 2 };

struct request {
    uint32_t op, n;
    float scale;
};

/* The worker's first message: what it found in the library. */
struct hello {
    int32_t loaded; /* 1: the descriptor was read (abi_version says which layout) */
    uint32_t abi_version;
    int32_t has_encode, has_decode;
    char name[64], format[32], overflow[32];
    char error[512];
};

struct fp8kv_plugin {
    char path[1024];
    struct fp8kv_plugin_info info;
    int timeout_ms;
    int nworkers;
    struct fp8kv_child w[]; /* shared memory: a struct shared_buffer */
};

/* ---- the worker (child side) ------------------------------------------------------------ */

/* Loads the library and reads the descriptor into h; returns the descriptor when it can be
 * served (version 1 with an encoder), else NULL with h saying why. */
static const struct fp8kv_codec_v1 *load_plugin(const char *path, struct hello *h)
{
    const struct fp8kv_codec_v1 *d =
        fp8kv_child_descriptor(path, "fp8kv_codec_v1", h->error, sizeof h->error);
    if (!d)
        return NULL;
    h->loaded = 1;
    h->abi_version = d->abi_version;
    if (d->abi_version != FP8KV_CODEC_ABI_VERSION)
        return NULL; /* another layout: read nothing more of it */
    fp8kv_child_copy_text(h->name, sizeof h->name, d->name);
    fp8kv_child_copy_text(h->format, sizeof h->format, d->format ? d->format : "(null)");
    fp8kv_child_copy_text(h->overflow, sizeof h->overflow, d->overflow ? d->overflow : "(null)");
    h->has_encode = d->encode_f32 != NULL;
    h->has_decode = d->decode_f32 != NULL;
    return h->has_encode ? d : NULL;
}

/* The child: says hello, then serves requests until the harness closes the socket. */
static int worker_main(int sock, void *shared, void *arg)
{
    struct shared_buffer *buf = shared;
    struct hello h;
    memset(&h, 0, sizeof h);
    const struct fp8kv_codec_v1 *d = load_plugin((const char *)arg, &h);
    if (fp8kv_child_send(sock, &h, sizeof h) != 0 || !d)
        return 0;
    struct request r;
    while (fp8kv_child_receive(sock, &r, sizeof r) == 1) {
        if (r.n > CAP)
            return 3;
        if (r.op == OP_ENCODE)
            d->encode_f32(buf->x, r.n, r.scale, buf->q);
        else if (r.op == OP_DECODE && d->decode_f32)
            d->decode_f32(buf->q, r.n, r.scale, buf->y);
        else
            return 3;
        uint32_t done = r.n;
        if (fp8kv_child_send(sock, &done, sizeof done) != 0)
            return 0;
    }
    return 0;
}

/* ---- the harness side ------------------------------------------------------------------- */

/* Sends one request for buffer contents already in place and waits for its answer. */
static int request(struct fp8kv_child *w, enum op op, size_t n, float s, const char *doing)
{
    struct request r = {(uint32_t)op, (uint32_t)n, s};
    return fp8kv_child_request_count(w, &r, sizeof r, (uint32_t)n, doing);
}

/* Checks the descriptor a worker read (hello: a struct hello); fills pl->info. */
static int check_descriptor(void *plugin, const void *hello)
{
    struct fp8kv_plugin *pl = plugin;
    const struct hello *h = hello;
    if (!h->loaded)
        return fp8kv_fail("plugin %s: %s", pl->path, h->error);
    if (h->abi_version != FP8KV_CODEC_ABI_VERSION)
        return fp8kv_fail("plugin %s: ABI version %u, this fp8kv reads version %d", pl->path,
                          h->abi_version, FP8KV_CODEC_ABI_VERSION);
    const struct fp8kv_format *f = fp8kv_format_by_name(h->format); /* ml_dtypes names too */
    const int format = f ? (int)f->id : -1;
    const int overflow = fp8kv_name_index(fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT, h->overflow);
    if (format < 0)
        return fp8kv_fail("plugin %s: unknown format \"%s\" (e4m3fn | e4m3fnuz | e5m2 | e5m2fnuz)",
                          pl->path, h->format);
    if (overflow < 0)
        return fp8kv_fail("plugin %s: unknown overflow \"%s\" (satfinite | nan | inf)", pl->path,
                          h->overflow);
    if (!h->has_encode)
        return fp8kv_fail("plugin %s: encode_f32 is NULL", pl->path);
    fp8kv_child_plugin_name(pl->info.name, sizeof pl->info.name, h->name, pl->path);
    pl->info.format = (enum fp8kv_format_id)format;
    pl->info.overflow = (enum fp8kv_overflow)overflow;
    pl->info.has_decode = h->has_decode;
    return FP8KV_OK;
}

int fp8kv_plugin_open(const char *path, int workers, double timeout_s, struct fp8kv_plugin **out)
{
    *out = NULL;
    char library[sizeof((struct fp8kv_plugin *)0)->path];
    if (fp8kv_child_plugin_path(path, library, sizeof library) != 0)
        return FP8KV_ERR;
    if (workers < 1)
        workers = 1;
    struct fp8kv_plugin *pl = calloc(1, sizeof *pl + (size_t)workers * sizeof pl->w[0]);
    if (!pl)
        return fp8kv_fail("out of memory");
    memcpy(pl->path, library, sizeof library);
    pl->timeout_ms = fp8kv_child_timeout_ms(timeout_s);
    struct hello h;
    /* q, the last member, ends flush against the guard page */
    const int rc = fp8kv_child_start_pool(pl->w, workers, pl->path, sizeof(struct shared_buffer),
                                          pl->timeout_ms, worker_main, pl->path, &h, sizeof h,
                                          check_descriptor, pl);
    if (rc != FP8KV_OK) {
        free(pl);
        return rc;
    }
    pl->nworkers = workers;
    *out = pl;
    return FP8KV_OK;
}

const struct fp8kv_plugin_info *fp8kv_plugin_info(const struct fp8kv_plugin *pl)
{
    return &pl->info;
}

int fp8kv_plugin_workers(const struct fp8kv_plugin *pl)
{
    return pl->nworkers;
}

/* Runs op over n values in pieces of at most CAP on worker wi. encode: x -> q; decode:
 * codes -> y. */
static int serve(struct fp8kv_plugin *pl, int wi, enum op op, const float *x, const uint8_t *codes,
                 size_t n, float s, uint8_t *q, float *y)
{
    struct fp8kv_child *w = &pl->w[wi % pl->nworkers];
    struct shared_buffer *buf = w->shared;
    int rc = fp8kv_child_lock(w);
    for (size_t i = 0; i < n && rc == FP8KV_OK;) {
        size_t k = n - i < CAP ? n - i : CAP;
        char doing[200];
        if (op == OP_ENCODE) {
            if (x + i != buf->x) /* already in place when the caller wrote it there */
                memmove(buf->x, x + i, k * sizeof *x);
            snprintf(doing, sizeof doing,
                     "encoding %zu inputs 0x%08x .. 0x%08x at scale 0x%08x (%.9g)", k,
                     fp8kv_f32_bits(x[i]), fp8kv_f32_bits(x[i + k - 1]), fp8kv_f32_bits(s),
                     (double)s);
        } else {
            memcpy(buf->q, codes + i, k);
            snprintf(doing, sizeof doing, "decoding %zu codes %02x .. %02x at scale 0x%08x (%.9g)",
                     k, codes[i], codes[i + k - 1], fp8kv_f32_bits(s), (double)s);
        }
        /* canaries after the k outputs */
        uint8_t *tail = op == OP_ENCODE ? buf->q + k : (uint8_t *)(buf->y + k);
        const size_t room = op == OP_ENCODE ? CAP - k : (CAP - k) * sizeof(float);
        const size_t canary = fp8kv_child_canary_arm(tail, room);
        rc = request(w, op, k, s, doing);
        const long c = rc == FP8KV_OK ? fp8kv_child_canary_broken(tail, canary) : -1;
        if (c >= 0)
            rc = fp8kv_child_failed(
                w, "plugin %s wrote past the end of its %zu outputs (byte %ld after them) while %s",
                pl->path, k, c, doing);
        if (rc == FP8KV_OK && op == OP_ENCODE)
            memcpy(q + i, buf->q, k);
        else if (rc == FP8KV_OK)
            memcpy(y + i, buf->y, k * sizeof *y);
        i += k;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Encodes x[0 .. n) (n <= CAP) at scale s in worker w, started afresh when it is not running:
 * 1 when it crashed, 0 when it answered, -1 when it hung or could not start. */
static int crashes(struct fp8kv_plugin *pl, struct fp8kv_child *w, const float *x, size_t n,
                   float s)
{
    if (!w->started || w->dead) {
        fp8kv_child_stop(w);
        memset(w, 0, sizeof *w);
        struct hello h;
        memset(&h, 0, sizeof h);
        if (fp8kv_child_start(w, pl->path, sizeof(struct shared_buffer), pl->timeout_ms,
                              worker_main, pl->path, &h, sizeof h) != FP8KV_OK)
            return -1;
    }
    struct shared_buffer *buf = w->shared;
    memcpy(buf->x, x, n * sizeof *x);
    pthread_mutex_lock(&w->lock);
    const int rc = request(w, OP_ENCODE, n, s, "locating the crash");
    pthread_mutex_unlock(&w->lock);
    if (rc == FP8KV_OK)
        return 0;
    return strstr(w->failure, " hung: ") ? -1 : 1; /* child.c's words for a silence */
}

int fp8kv_plugin_locate_crash(struct fp8kv_plugin *pl, const float *x, size_t n, float s,
                              size_t *index)
{
    struct fp8kv_child w;
    memset(&w, 0, sizeof w);
    size_t lo = 0, hi = n < CAP ? n : CAP; /* a crashing input lies in [lo, hi) */
    int found = hi > lo;
    while (found && hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        const int r = crashes(pl, &w, x + lo, mid - lo, s);
        if (r < 0)
            found = 0;
        else if (r == 1)
            hi = mid;
        else
            lo = mid;
    }
    found = found && crashes(pl, &w, x + lo, 1, s) == 1; /* it crashes alone */
    fp8kv_child_stop(&w);
    if (!found)
        return fp8kv_fail("no single input found that crashes the plugin");
    *index = lo;
    return FP8KV_OK;
}

float *fp8kv_plugin_input_buffer(struct fp8kv_plugin *pl, int worker)
{
    return ((struct shared_buffer *)pl->w[worker % pl->nworkers].shared)->x;
}

int fp8kv_plugin_encode(struct fp8kv_plugin *pl, int worker, const float *x, size_t n, float s,
                        uint8_t *q)
{
    return serve(pl, worker, OP_ENCODE, x, NULL, n, s, q, NULL);
}

int fp8kv_plugin_decode(struct fp8kv_plugin *pl, int worker, const uint8_t *q, size_t n, float s,
                        float *y)
{
    if (!pl->info.has_decode)
        return fp8kv_fail("plugin %s has no decode_f32", pl->path);
    return serve(pl, worker, OP_DECODE, NULL, q, n, s, NULL, y);
}

void fp8kv_plugin_close(struct fp8kv_plugin *pl)
{
    if (!pl)
        return;
    for (int i = 0; i < pl->nworkers; i++)
        fp8kv_child_stop(&pl->w[i]);
    free(pl);
}
