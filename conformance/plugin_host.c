/* plugin_host.c — codec plugins in child processes (fp8kv/plugin_host.h). */
#define _GNU_SOURCE
#include "fp8kv/plugin_host.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp8kv/diag.h"
#include "fp8kv/plugin.h"

enum { CAP = FP8KV_PLUGIN_CALL }; /* values per request */

/* The memory a worker shares with the harness: the inputs and outputs of one request. */
struct shared_buffer {
    float x[CAP];   /* encode: inputs */
    float y[CAP];   /* decode: outputs */
    uint8_t q[CAP]; /* encode: outputs; decode: inputs */
};

enum op { OP_ENCODE = 1, OP_DECODE = 2 };

/* Bytes checked after a request's outputs, and the value they hold before it. */
enum { CANARY_BYTES = 64, CANARY = 0xC5 };

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

struct worker {
    pid_t pid; /* also the id of the worker's process group (the plugin's children) */
    int pidfd; /* readable once the worker has ended, even if a child holds the socket */
    int socket;
    struct shared_buffer *buf;
    pthread_mutex_t lock;
    int dead;          /* crashed, hung or stopped: every later call fails */
    char failure[512]; /* why it died, for later calls */
};

struct fp8kv_plugin {
    char path[1024];
    struct fp8kv_plugin_info info;
    int timeout_ms;
    int nworkers;
    struct worker w[];
};

/* ---- the worker (child side) ------------------------------------------------------------ */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* 1: read n bytes; 0: the other side closed first; -1: error. */
static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, c + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        got += (size_t)k;
    }
    return 1;
}

/* dst = src cut to size - 1 characters (NULL: ""). */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = src ? strnlen(src, size - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

/* Loads the library and reads the descriptor into h; returns the descriptor when it can be
 * served (version 1 with an encoder), else NULL with h saying why. */
static const struct fp8kv_codec_v1 *load_plugin(const char *path, struct hello *h)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        copy_text(h->error, sizeof h->error, dlerror());
        return NULL;
    }
    dlerror();
    void *sym = dlsym(lib, "fp8kv_codec_v1");
    if (!sym) {
        snprintf(h->error, sizeof h->error, "does not export fp8kv_codec_v1 (%s)", dlerror());
        return NULL;
    }
    const struct fp8kv_codec_v1 *(*get)(void);
    memcpy(&get, &sym, sizeof get);
    const struct fp8kv_codec_v1 *d = get();
    if (!d) {
        copy_text(h->error, sizeof h->error, "fp8kv_codec_v1() returned NULL");
        return NULL;
    }
    h->loaded = 1;
    h->abi_version = d->abi_version;
    if (d->abi_version != FP8KV_CODEC_ABI_VERSION)
        return NULL; /* another layout: read nothing more of it */
    copy_text(h->name, sizeof h->name, d->name);
    copy_text(h->format, sizeof h->format, d->format ? d->format : "(null)");
    copy_text(h->overflow, sizeof h->overflow, d->overflow ? d->overflow : "(null)");
    h->has_encode = d->encode_f32 != NULL;
    h->has_decode = d->decode_f32 != NULL;
    return h->has_encode ? d : NULL;
}

/* The child: says hello, then serves requests until the harness closes the socket. */
static void worker_main(const char *path, int sock, struct shared_buffer *buf)
{
    dup2(STDERR_FILENO, STDOUT_FILENO); /* a chatty plugin must not mix into the verdicts */
    struct hello h;
    memset(&h, 0, sizeof h);
    const struct fp8kv_codec_v1 *d = load_plugin(path, &h);
    if (write_all(sock, &h, sizeof h) != 0 || !d)
        _exit(0);
    struct request r;
    while (read_all(sock, &r, sizeof r) == 1) {
        if (r.n > CAP)
            _exit(3);
        if (r.op == OP_ENCODE)
            d->encode_f32(buf->x, r.n, r.scale, buf->q);
        else if (r.op == OP_DECODE && d->decode_f32)
            d->decode_f32(buf->q, r.n, r.scale, buf->y);
        else
            _exit(3);
        uint32_t done = r.n;
        if (write_all(sock, &done, sizeof done) != 0)
            _exit(0);
    }
    _exit(0);
}

/* ---- the harness side ------------------------------------------------------------------- */

/* Kills the worker and every process the plugin started from it (its process group): nothing
 * of a plugin outlives the harness's use of it. */
static void stop_group(struct worker *w)
{
    if (w->pid > 0) {
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL); /* in case it left its group */
    }
}

/* Marks w dead with a message (also the current fp8kv error) and stops the child. */
static int worker_failed(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int worker_failed(struct worker *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof w->failure, fmt, ap);
    va_end(ap);
    if (!w->dead && w->pid > 0) {
        stop_group(w);
        waitpid(w->pid, NULL, 0);
    }
    w->dead = 1;
    fp8kv_fail("%s", w->failure);
    return FP8KV_ERR_SUBJECT;
}

/* How the child ended, in words, once its socket closed. */
static void describe_end(struct worker *w, char *out, size_t size)
{
    int status = 0;
    pid_t r = waitpid(w->pid, &status, 0);
    kill(-w->pid, SIGKILL); /* children the plugin left behind */
    w->pid = -1;
    if (r < 0)
        snprintf(out, size, "ended (no status)");
    else if (WIFSIGNALED(status))
        snprintf(out, size, "crashed (signal %d, %s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
}

/* Waits for n bytes of answer from w; 0, or FP8KV_ERR_SUBJECT with `doing` in the message. */
static int await_answer(struct fp8kv_plugin *pl, struct worker *w, void *answer, size_t n,
                        const char *doing)
{
    /* the socket answers, or the worker's end shows on its pidfd: a worker that crashed after
     * forking leaves a child holding the socket open, and is a crash, not a hang */
    struct pollfd pfd[2] = {{.fd = w->socket, .events = POLLIN},
                            {.fd = w->pidfd, .events = POLLIN}};
    int ready;
    do
        ready = poll(pfd, w->pidfd > 0 ? 2 : 1, pl->timeout_ms);
    while (ready < 0 && errno == EINTR);
    if (ready == 0)
        return worker_failed(w, "plugin %s hung: no answer within %.3g s while %s (killed)",
                             pl->path, pl->timeout_ms / 1000.0, doing);
    int got = ready > 0 && (pfd[0].revents & POLLIN) ? read_all(w->socket, answer, n) : -1;
    if (got == 1)
        return 0;
    char how[160];
    describe_end(w, how, sizeof how);
    return worker_failed(w, "plugin %s %s while %s", pl->path, how, doing);
}

/* Sends one request for buffer contents already in place and waits for its answer. */
static int request(struct fp8kv_plugin *pl, struct worker *w, enum op op, size_t n, float s,
                   const char *doing)
{
    struct request r = {(uint32_t)op, (uint32_t)n, s};
    if (write_all(w->socket, &r, sizeof r) != 0) {
        char how[160];
        describe_end(w, how, sizeof how);
        return worker_failed(w, "plugin %s %s before %s", pl->path, how, doing);
    }
    uint32_t done;
    int rc = await_answer(pl, w, &done, sizeof done, doing);
    if (rc == 0 && done != n)
        return worker_failed(w, "plugin %s: worker protocol error while %s", pl->path, doing);
    return rc;
}

static uint32_t bits_of_f32(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* The shared buffer, followed by an inaccessible guard page: q is its last member and ends on a
 * page boundary (sizeof is a multiple of the page size), so a plugin writing past the end of q
 * faults (a crash, reported) instead of reaching another worker's memory. NULL on failure. */
static size_t mapped_bytes(void)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (sizeof(struct shared_buffer) + page - 1) / page * page + page;
}

static struct shared_buffer *map_buffer(void)
{
    const size_t bytes = mapped_bytes(), page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p + bytes - page, page, PROT_NONE) != 0) {
        munmap(p, bytes);
        return NULL;
    }
    return (struct shared_buffer *)p;
}

static int start_worker(struct fp8kv_plugin *pl, struct worker *w, struct hello *h)
{
    int sv[2];
    w->pidfd = -1;
    w->buf = map_buffer();
    if (w->buf == NULL)
        return fp8kv_fail("cannot map plugin buffers: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fp8kv_fail("cannot make a plugin socket: %s", strerror(errno));
    fflush(NULL); /* nothing buffered twice */
    w->pid = fork();
    if (w->pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return fp8kv_fail("cannot start a plugin worker: %s", strerror(errno));
    }
    if (w->pid == 0) {
        setpgid(0, 0); /* its own process group: the harness stops the plugin's children too */
        close(sv[0]);
        worker_main(pl->path, sv[1], w->buf);
    }
    setpgid(w->pid, w->pid); /* (also here: whichever runs first) */
#ifdef SYS_pidfd_open
    w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0); /* -1 on old kernels: socket only */
#endif
    close(sv[1]);
    w->socket = sv[0];
    pthread_mutex_init(&w->lock, NULL);
    return await_answer(pl, w, h, sizeof *h, "loading");
}

/* Checks the descriptor a worker read; fills pl->info. */
static int check_descriptor(struct fp8kv_plugin *pl, const struct hello *h)
{
    if (!h->loaded)
        return fp8kv_fail("plugin %s: %s", pl->path, h->error);
    if (h->abi_version != FP8KV_CODEC_ABI_VERSION)
        return fp8kv_fail("plugin %s: ABI version %u, this fp8kv reads version %d", pl->path,
                          h->abi_version, FP8KV_CODEC_ABI_VERSION);
    int format = -1, overflow = -1;
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        if (strcmp(h->format, fp8kv_formats[i].name) == 0)
            format = i;
    for (int i = 0; i < FP8KV_OVERFLOW_COUNT; i++)
        if (strcmp(h->overflow, fp8kv_overflow_names[i]) == 0)
            overflow = i;
    if (format < 0)
        return fp8kv_fail("plugin %s: unknown format \"%s\" (e4m3fn | e4m3fnuz)", pl->path,
                          h->format);
    if (overflow < 0)
        return fp8kv_fail("plugin %s: unknown overflow \"%s\" (satfinite | nan)", pl->path,
                          h->overflow);
    if (!h->has_encode)
        return fp8kv_fail("plugin %s: encode_f32 is NULL", pl->path);
    const char *base = strrchr(pl->path, '/');
    copy_text(pl->info.name, sizeof pl->info.name,
              h->name[0] ? h->name
              : base     ? base + 1
                         : pl->path);
    pl->info.format = (enum fp8kv_format_id)format;
    pl->info.overflow = (enum fp8kv_overflow)overflow;
    pl->info.has_decode = h->has_decode;
    return FP8KV_OK;
}

int fp8kv_plugin_open(const char *path, int workers, double timeout_s, struct fp8kv_plugin **out)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return fp8kv_fail("plugin %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fp8kv_fail("plugin %s: not a regular file", path);
    if (workers < 1)
        workers = 1;
    struct fp8kv_plugin *pl = calloc(1, sizeof *pl + (size_t)workers * sizeof pl->w[0]);
    if (!pl)
        return fp8kv_fail("out of memory");
    /* dlopen searches the library path for a name without '/': a path is meant */
    snprintf(pl->path, sizeof pl->path, "%s%s", strchr(path, '/') ? "" : "./", path);
    pl->timeout_ms = timeout_s > 0 ? (int)(timeout_s * 1000.0 + 0.5) : 30000;
    for (int i = 0; i < workers; i++)
        pl->w[i].pid = -1;
    int rc = FP8KV_OK;
    for (int i = 0; i < workers && rc == FP8KV_OK; i++) {
        pl->nworkers = i + 1;
        struct hello h;
        memset(&h, 0, sizeof h);
        rc = start_worker(pl, &pl->w[i], &h);
        if (rc == FP8KV_OK && i == 0)
            rc = check_descriptor(pl, &h);
    }
    if (rc != FP8KV_OK) {
        char message[1024];
        copy_text(message, sizeof message, fp8kv_last_error());
        fp8kv_plugin_close(pl);
        fp8kv_fail("%s", message);
        return rc;
    }
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
    struct worker *w = &pl->w[wi % pl->nworkers];
    pthread_mutex_lock(&w->lock);
    int rc = FP8KV_OK;
    if (w->dead) {
        fp8kv_fail("%s", w->failure);
        rc = FP8KV_ERR_SUBJECT;
    }
    for (size_t i = 0; i < n && rc == FP8KV_OK;) {
        size_t k = n - i < CAP ? n - i : CAP;
        char doing[200];
        if (op == OP_ENCODE) {
            if (x + i != w->buf->x) /* already in place when the caller wrote it there */
                memmove(w->buf->x, x + i, k * sizeof *x);
            snprintf(doing, sizeof doing,
                     "encoding %zu inputs 0x%08x .. 0x%08x at scale 0x%08x (%.9g)", k,
                     bits_of_f32(x[i]), bits_of_f32(x[i + k - 1]), bits_of_f32(s), (double)s);
        } else {
            memcpy(w->buf->q, codes + i, k);
            snprintf(doing, sizeof doing, "decoding %zu codes %02x .. %02x at scale 0x%08x (%.9g)",
                     k, codes[i], codes[i + k - 1], bits_of_f32(s), (double)s);
        }
        /* canaries after the n outputs: a plugin that writes past them is caught, whatever
         * the layout (the guard page covers only a full buffer) */
        uint8_t *tail = op == OP_ENCODE ? w->buf->q + k : (uint8_t *)(w->buf->y + k);
        const size_t room = op == OP_ENCODE ? CAP - k : (CAP - k) * sizeof(float);
        const size_t canary = room < CANARY_BYTES ? room : CANARY_BYTES;
        memset(tail, CANARY, canary);
        rc = request(pl, w, op, k, s, doing);
        for (size_t c = 0; rc == FP8KV_OK && c < canary; c++)
            if (tail[c] != CANARY)
                rc = worker_failed(w,
                                   "plugin %s wrote past the end of its %zu outputs (byte %zu "
                                   "after them) while %s",
                                   pl->path, k, c, doing);
        if (rc == FP8KV_OK && op == OP_ENCODE)
            memcpy(q + i, w->buf->q, k);
        else if (rc == FP8KV_OK)
            memcpy(y + i, w->buf->y, k * sizeof *y);
        i += k;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

float *fp8kv_plugin_input_buffer(struct fp8kv_plugin *pl, int worker)
{
    return pl->w[worker % pl->nworkers].buf->x;
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
    for (int i = 0; i < pl->nworkers; i++) {
        struct worker *w = &pl->w[i];
        if (w->socket > 0)
            close(w->socket); /* the worker reads EOF and exits */
        if (w->pid > 0) {
            stop_group(w); /* a worker still busy (or hung) goes too, with its children */
            waitpid(w->pid, NULL, 0);
        }
        if (w->pidfd > 0) /* 0: never started (the workers are zeroed) */
            close(w->pidfd);
        if (w->buf)
            munmap(w->buf, mapped_bytes());
        if (w->socket > 0)
            pthread_mutex_destroy(&w->lock);
    }
    free(pl);
}
