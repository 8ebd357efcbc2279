/* host.c — the one plugin host (host.h). */
#define _GNU_SOURCE
#include "host.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <ucontext.h>
#include <unistd.h>

#include "child.h"
#include "fp8kv/diag.h"
#include "fp8kv/spec.h"

enum { CANARY = 0xC5 }; /* the bytes before an output, and an output's bytes before a request */

/* One request on the socket: the operation, where each array lies in the shared memory, and
 * the parameters. */
struct wire {
    uint32_t op;
    int32_t arrays;
    uint64_t offset[FP8KV_HOST_ARRAYS], bytes[FP8KV_HOST_ARRAYS];
    uint32_t direction[FP8KV_HOST_ARRAYS];
    uint32_t params_bytes;
    uint64_t params[FP8KV_HOST_PARAMS / sizeof(uint64_t)]; /* aligned for any struct */
};

/* The worker's answer: run's status, or a touch of the shared memory outside the arrays. */
struct answer {
    int32_t rc;
    int32_t touched;     /* 1: the plugin touched shared memory outside its arrays */
    int32_t wrote;       /* and it was a write (1), a read (0), or either (-1: not known) */
    uint64_t touched_at; /* the byte touched, from the start of the shared memory */
    char message[512];
};

/* What a worker is started with. */
struct start {
    const struct fp8kv_host_abi *abi;
    const char *path;
    const void *arg;
    size_t arena; /* the shared memory's bytes */
};

struct fp8kv_host {
    const struct fp8kv_host_abi *abi;
    char path[1024], name[64];
    void *ctx;
    size_t arena;
    int nworkers;
    struct fp8kv_child w[];
};

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t page_floor(size_t at)
{
    return at / page_bytes() * page_bytes();
}

static size_t page_ceil(size_t at)
{
    return (at + page_bytes() - 1) / page_bytes() * page_bytes();
}

/* The shared memory of an ABI: its arrays, each rounded up to pages and followed by a guard
 * page. */
static size_t arena_of(const struct fp8kv_host_abi *abi)
{
    return page_ceil(abi->arena_bytes) + 2 * FP8KV_HOST_ARRAYS * page_bytes();
}

/* ---- the worker (child side) ------------------------------------------------------------ */

/* Where a fault is reported to: the worker's socket and shared memory. */
static struct {
    int socket;
    const char *shared;
    size_t bytes;
    struct sigaction before;
} watch;
static struct answer touch_answer;

/* Whether the faulting access of context uc was a write: 1, 0, or -1 where not known. */
static int fault_was_write(const void *uc)
{
#if defined(__x86_64__)
    return (((const ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)uc;
    return -1;
#endif
}

/* A fault inside the shared memory is a touch outside the arrays: answered, and the worker
 * ends. Any other fault is the plugin's own: the handler before ours takes it (a sanitizer's
 * report, or the signal's default: a crash the harness reports). */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
    const char *at = si->si_addr;
    if (at >= watch.shared && at < watch.shared + watch.bytes) {
        touch_answer.rc = FP8KV_ERR_SUBJECT;
        touch_answer.touched = 1;
        touch_answer.wrote = fault_was_write(uc);
        touch_answer.touched_at = (uint64_t)(at - watch.shared);
        (void)send(watch.socket, &touch_answer, sizeof touch_answer, MSG_NOSIGNAL);
        _exit(4);
    }
    sigaction(sig, &watch.before, NULL); /* the access faults again, under that handler */
}

static void watch_faults(int sock, const void *shared, size_t bytes)
{
    static char stack[1 << 16]; /* a plugin that overran its own stack still gets reported */
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
    sigaltstack(&ss, NULL);
    watch.socket = sock;
    watch.shared = shared;
    watch.bytes = bytes;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &watch.before);
}

/* Loads the library and describes its descriptor into h: the descriptor when it can be served,
 * else NULL with h saying why. */
static const void *describe_library(const struct start *s, struct fp8kv_host_hello *h)
{
    const void *d = fp8kv_child_descriptor(s->path, s->abi->symbol, h->error, sizeof h->error);
    if (!d)
        return NULL;
    h->loaded = 1;
    memcpy(&h->abi_version, d, sizeof h->abi_version);
    if (h->abi_version != s->abi->version)
        return NULL; /* another layout: read nothing more of it */
    struct {
        uint32_t abi_version;
        const char *name;
    } head; /* how every descriptor starts */
    memcpy(&head, d, sizeof head);
    fp8kv_child_copy_text(h->name, sizeof h->name, head.name);
    if (s->abi->describe(d, h->facts, h->error, sizeof h->error, s->arg) != 0) {
        if (!h->error[0])
            fp8kv_child_copy_text(h->error, sizeof h->error, "cannot be served");
        return NULL;
    }
    return d;
}

/* Whether request r's arrays lie inside the shared memory and its parameters in the wire. */
static int wire_fits(const struct wire *r, size_t arena)
{
    if (r->arrays < 0 || r->arrays > FP8KV_HOST_ARRAYS || r->params_bytes > sizeof r->params)
        return 0;
    for (int i = 0; i < r->arrays; i++)
        if (r->offset[i] > arena || r->bytes[i] > arena - r->offset[i])
            return 0;
    return 1;
}

/* Fences request r in the worker: the whole shared memory inaccessible, then each array's
 * pages readable (inputs) or readable and writable (outputs). 0, or -1. */
static int fence(char *shared, size_t arena, const struct wire *r, void **array)
{
    if (mprotect(shared, arena, PROT_NONE) != 0)
        return -1;
    for (int i = 0; i < r->arrays; i++) {
        const size_t lo = page_floor(r->offset[i]), hi = page_ceil(r->offset[i] + r->bytes[i]);
        const int prot = r->direction[i] == FP8KV_HOST_IN ? PROT_READ : PROT_READ | PROT_WRITE;
        if (hi > lo && mprotect(shared + lo, hi - lo, prot) != 0)
            return -1;
        array[i] = shared + r->offset[i];
    }
    return 0;
}

static int worker_main(int sock, void *shared, void *arg)
{
    const struct start *s = arg;
    struct fp8kv_host_hello h;
    memset(&h, 0, sizeof h);
    const void *d = describe_library(s, &h);
    if (fp8kv_child_send(sock, &h, sizeof h) != 0 || !d)
        return 0;
    watch_faults(sock, shared, s->arena);
    static struct wire r;
    while (fp8kv_child_receive(sock, &r, sizeof r) == 1) {
        void *array[FP8KV_HOST_ARRAYS];
        if (!wire_fits(&r, s->arena) || fence(shared, s->arena, &r, array) != 0)
            return 3;
        struct answer a;
        memset(&a, 0, sizeof a);
        a.rc =
            s->abi->run(d, r.op, r.params, r.arrays, array, r.bytes, a.message, sizeof a.message);
        if (fp8kv_child_send(sock, &a, sizeof a) != 0)
            return 0;
    }
    return 0;
}

/* ---- the harness side ------------------------------------------------------------------- */

/* Lays r's arrays out in the shared memory: an input from the start of a page, an output
 * ending at the end of one, each followed by a guard page. 0, or FP8KV_ERR when they do not fit. */
static int lay_out(const struct fp8kv_host *h, const struct fp8kv_host_request *r,
                   struct wire *wire, const char *doing)
{
    memset(wire, 0, sizeof *wire);
    if (r->arrays < 0 || r->arrays > FP8KV_HOST_ARRAYS || r->params_bytes > sizeof wire->params)
        return fp8kv_fail("plugin %s: a request of %d arrays and %zu bytes of parameters (at most "
                          "%d and %zu) while %s",
                          h->path, r->arrays, r->params_bytes, FP8KV_HOST_ARRAYS,
                          sizeof wire->params, doing);
    wire->op = r->op;
    wire->arrays = r->arrays;
    wire->params_bytes = (uint32_t)r->params_bytes;
    if (r->params_bytes)
        memcpy(wire->params, r->params, r->params_bytes);
    size_t at = 0, total = 0;
    for (int i = 0; i < r->arrays; i++) {
        const struct fp8kv_host_array *a = &r->array[i];
        const size_t pages = page_ceil(a->bytes);
        total += a->bytes;
        if (pages + page_bytes() > h->arena - at)
            return fp8kv_fail("plugin %s: a request of %zu bytes and more is larger than the %zu "
                              "MiB it shares with fp8kv, while %s",
                              h->path, total, h->arena >> 20, doing);
        wire->offset[i] = a->direction == FP8KV_HOST_IN ? at : at + pages - a->bytes;
        wire->bytes[i] = a->bytes;
        wire->direction[i] = (uint32_t)a->direction;
        at += pages + page_bytes();
    }
    return FP8KV_OK;
}

/* Fills the shared memory for a laid-out request: inputs copied in (unless already there),
 * outputs' pages set to canaries, in-out arrays copied after their canaries. */
static void fill(char *shared, const struct fp8kv_host_request *r, const struct wire *wire)
{
    for (int i = 0; i < r->arrays; i++) {
        const struct fp8kv_host_array *a = &r->array[i];
        char *at = shared + wire->offset[i], *page = shared + page_floor(wire->offset[i]);
        if (a->direction == FP8KV_HOST_IN) {
            if (a->data != at && a->bytes)
                memmove(at, a->data, a->bytes);
            continue;
        }
        memset(page, CANARY, (size_t)(at - page) + (a->direction == FP8KV_HOST_OUT ? a->bytes : 0));
        if (a->direction == FP8KV_HOST_INOUT && a->bytes)
            memcpy(at, a->data, a->bytes);
    }
}

/* In words, what touching byte `at` of the shared memory missed (wrote: as struct answer). */
static void describe_touch(const struct fp8kv_host_request *r, const struct wire *wire, uint64_t at,
                           int wrote, char *out, size_t size)
{
    const char *verb = wrote == 1 ? "wrote" : wrote == 0 ? "read" : "touched memory";
    for (int i = 0; i < r->arrays; i++) {
        const uint64_t start = wire->offset[i], end = start + wire->bytes[i];
        const char *kind = r->array[i].direction == FP8KV_HOST_IN ? "an input" : "an output";
        if (at < page_floor(start) || at >= page_ceil(end) + page_bytes())
            continue;
        if (at >= end)
            snprintf(out, size, "%s past the end of %s, %s of %zu bytes (byte %zu after it)", verb,
                     r->array[i].name, kind, (size_t)wire->bytes[i], (size_t)(at - end));
        else
            snprintf(out, size, "wrote into %s, %s of %zu bytes (its byte %zu)", r->array[i].name,
                     kind, (size_t)wire->bytes[i], (size_t)(at - start));
        return;
    }
    snprintf(out, size, "touched the memory fp8kv shares with it outside its arrays (byte %zu)",
             (size_t)at);
}

/* Judges the worker's answer to a request: a touch outside the arrays or a broken canary
 * stops the worker; run's status is the subject's failure (FP8KV_UNAVAILABLE stays). */
static int judge_answer(struct fp8kv_host *h, struct fp8kv_child *w,
                        const struct fp8kv_host_request *r, const struct wire *wire,
                        const struct answer *a, const char *doing)
{
    char what[400];
    if (a->touched) {
        describe_touch(r, wire, a->touched_at, a->wrote, what, sizeof what);
        return fp8kv_child_failed(w, "plugin %s %s while %s (stopped)", h->path, what, doing);
    }
    const char *shared = w->shared;
    for (int i = 0; i < r->arrays; i++) {
        if (r->array[i].direction == FP8KV_HOST_IN)
            continue;
        const size_t page = page_floor(wire->offset[i]);
        for (size_t b = page; b < wire->offset[i]; b++)
            if ((unsigned char)shared[b] != CANARY)
                return fp8kv_child_failed(
                    w,
                    "plugin %s wrote before the start of %s, an output of %zu bytes (byte %zu "
                    "before it) while %s (stopped)",
                    h->path, r->array[i].name, (size_t)wire->bytes[i],
                    (size_t)(wire->offset[i] - b), doing);
    }
    if (a->rc != 0) {
        char message[sizeof a->message];
        fp8kv_child_copy_text(message, sizeof message, a->message);
        return fp8kv_status_fail(a->rc == FP8KV_UNAVAILABLE ? a->rc : FP8KV_ERR_SUBJECT, "%s",
                                 message);
    }
    return FP8KV_OK;
}

int fp8kv_host_call(struct fp8kv_host *h, int worker, const struct fp8kv_host_request *r,
                    const char *doing)
{
    struct fp8kv_child *w = &h->w[worker % h->nworkers];
    struct wire wire;
    int rc = lay_out(h, r, &wire, doing);
    if (rc != FP8KV_OK)
        return rc;
    rc = fp8kv_child_lock(w);
    if (rc == FP8KV_OK) {
        fill(w->shared, r, &wire);
        struct answer a;
        rc = fp8kv_child_request(w, &wire, sizeof wire, &a, sizeof a, doing);
        if (rc == FP8KV_OK)
            rc = judge_answer(h, w, r, &wire, &a, doing);
        for (int i = 0; i < r->arrays && rc == FP8KV_OK; i++)
            if (r->array[i].direction != FP8KV_HOST_IN && r->array[i].bytes)
                memcpy(r->array[i].data, (char *)w->shared + wire.offset[i], r->array[i].bytes);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* The first worker's hello: the parts every ABI shares, then the ABI's check. */
static int check_hello(void *host, const void *hello)
{
    struct fp8kv_host *h = host;
    const struct fp8kv_host_hello *hi = hello;
    if (!hi->loaded)
        return fp8kv_fail("plugin %s: %s", h->path, hi->error);
    if (hi->abi_version != h->abi->version)
        return fp8kv_fail("plugin %s: %s version %u, this fp8kv reads version %u", h->path,
                          h->abi->abi, hi->abi_version, h->abi->version);
    fp8kv_child_plugin_name(h->name, sizeof h->name, hi->name, h->path);
    const int rc = h->abi->check(h->ctx, h->path, hi);
    if (rc == FP8KV_OK && hi->error[0]) /* the worker will not serve it */
        return fp8kv_fail("plugin %s: %s", h->path, hi->error);
    return rc;
}

int fp8kv_host_open(const struct fp8kv_host_abi *abi, const char *path, int workers,
                    double timeout_s, const void *worker_arg, void *ctx, struct fp8kv_host **out)
{
    *out = NULL;
    char library[sizeof((struct fp8kv_host *)0)->path];
    if (fp8kv_child_plugin_path(path, library, sizeof library) != 0)
        return FP8KV_ERR;
    workers = workers < 1 ? 1 : workers;
    struct fp8kv_host *h = calloc(1, sizeof *h + (size_t)workers * sizeof h->w[0]);
    if (!h)
        return fp8kv_fail("out of memory");
    memcpy(h->path, library, sizeof library);
    h->abi = abi;
    h->ctx = ctx;
    h->arena = arena_of(abi);
    const struct start start = {abi, h->path, worker_arg, h->arena};
    struct fp8kv_host_hello hello;
    const int rc =
        fp8kv_child_start_pool(h->w, workers, h->path, h->arena, fp8kv_child_timeout_ms(timeout_s),
                               worker_main, (void *)&start, &hello, sizeof hello, check_hello, h);
    if (rc != FP8KV_OK) {
        free(h);
        return rc;
    }
    h->nworkers = workers;
    *out = h;
    return FP8KV_OK;
}

const char *fp8kv_host_path(const struct fp8kv_host *h)
{
    return h->path;
}

const char *fp8kv_host_name(const struct fp8kv_host *h)
{
    return h->name;
}

int fp8kv_host_workers(const struct fp8kv_host *h)
{
    return h->nworkers;
}

void *fp8kv_host_first_input(struct fp8kv_host *h, int worker)
{
    return h->w[worker % h->nworkers].shared; /* lay_out puts a first input at offset 0 */
}

void fp8kv_host_text(char *dst, size_t size, const char *src, const char *if_null)
{
    fp8kv_child_copy_text(dst, size, src ? src : if_null);
}

int fp8kv_host_unknown(const char *path, const char *what, const char *given,
                       const char *const *names, int count, int or_null)
{
    char list[512];
    fp8kv_names_list(names, count, " | ", NULL, list, sizeof list);
    return fp8kv_fail("plugin %s: unknown %s \"%s\" (%s%s)", path, what, given, list,
                      or_null ? " | NULL" : "");
}

void fp8kv_host_close(struct fp8kv_host *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->nworkers; i++)
        fp8kv_child_stop(&h->w[i]);
    free(h);
}
