/* child.c — code under test in a child process (child.h). */
#define _GNU_SOURCE
#include "child.h"

#include <dirent.h>
#include <dlfcn.h>
#include <linux/capability.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp8kv/diag.h"

int fp8kv_child_send(int fd, const void *p, size_t n)
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

int fp8kv_child_receive(int fd, void *p, size_t n)
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

void fp8kv_child_copy_text(char *dst, size_t size, const char *src)
{
    const size_t n = src ? strnlen(src, size - 1) : 0;
    for (size_t i = 0; i < n; i++) /* a control character could forge a terminal or a report */
        dst[i] = src[i] == '\n' || src[i] == '\t' ? '?' : src[i];
    dst[n] = '\0';
    fp8kv_text_defang(dst);
}

int fp8kv_child_plugin_path(const char *path, char *out, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return fp8kv_fail("plugin %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fp8kv_fail("plugin %s: not a regular file", path);
    snprintf(out, size, "%s%s", strchr(path, '/') ? "" : "./", path);
    return FP8KV_OK;
}

int fp8kv_child_timeout_ms(double seconds)
{
    return seconds > 0 ? (int)(seconds * 1000.0 + 0.5) : 30000;
}

const void *fp8kv_child_descriptor(const char *path, const char *symbol, char *error, size_t size)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fp8kv_child_copy_text(error, size, dlerror());
        return NULL;
    }
    dlerror();
    void *sym = dlsym(lib, symbol);
    if (!sym) {
        const char *why = dlerror();
        snprintf(error, size, "does not export %s (%s)", symbol, why ? why : "its value is NULL");
        return NULL;
    }
    const void *(*get)(void);
    memcpy(&get, &sym, sizeof get);
    const void *d = get();
    if (!d)
        snprintf(error, size, "%s() returned NULL", symbol);
    return d;
}

/* The processes below root, from /proc's parent links, into out (room for max): how many. */
static int descendants(pid_t root, pid_t *out, int max)
{
    enum { MAXP = 1 << 15 };
    pid_t *pid = malloc(2 * MAXP * sizeof *pid), *parent = pid + MAXP;
    int n = 0;
    DIR *d = pid ? opendir("/proc") : NULL;
    for (struct dirent *e; d && n < MAXP && (e = readdir(d));) {
        char path[64], stat[512];
        const long p = strtol(e->d_name, NULL, 10);
        if (p <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", p);
        FILE *f = fopen(path, "r");
        const size_t k = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
        if (f)
            fclose(f);
        stat[k] = '\0';
        const char *close = strrchr(stat, ')'); /* the name may hold anything: the last ')' */
        int pp;
        if (close && sscanf(close + 1, " %*c %d", &pp) == 1) {
            pid[n] = (pid_t)p;
            parent[n++] = (pid_t)pp;
        }
    }
    if (d)
        closedir(d);
    out[0] = root; /* breadth first from root, which is not counted */
    int seen = 1;
    for (int at = 0; at < seen; at++)
        for (int i = 0; i < n && seen < max; i++)
            if (parent[i] == out[at])
                out[seen++] = pid[i];
    free(pid);
    memmove(out, out + 1, (size_t)(seen - 1) * sizeof *out);
    return seen - 1;
}

/* Kills the child and every process it started: its process group, and every descendant that
 * left the group (a new session, a daemon: the worker is their subreaper, so orphans stay
 * below it) found before the worker itself goes. Nothing of a plugin outlives the harness's
 * use of it, unless it escaped while the worker was already gone (docs/DESIGN.md §4.2). */
static void stop_group(struct fp8kv_child *c)
{
    if (c->pid <= 0)
        return;
    kill(c->pid, SIGSTOP); /* it starts no more while its tree is read */
    pid_t below[256];
    for (int round = 0; round < 4; round++) {
        const int n = descendants(c->pid, below, 256);
        for (int i = 0; i < n; i++)
            kill(below[i], SIGKILL);
        if (n == 0)
            break;
    }
    kill(-c->pid, SIGKILL);
    kill(c->pid, SIGKILL); /* in case it left its group */
}

int fp8kv_child_failed(struct fp8kv_child *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->failure, sizeof c->failure, fmt, ap);
    va_end(ap);
    if (!c->dead && c->pid > 0) {
        stop_group(c);
        waitpid(c->pid, NULL, 0);
        c->pid = -1;
    }
    c->dead = 1;
    fp8kv_fail("%s", c->failure);
    return FP8KV_ERR_SUBJECT;
}

/* How the child ended, in words, once its socket closed or failed. A child that is still
 * running (it closed its end of the socket, say) gets a moment to end on its own and is then
 * killed with its group: the harness never waits on a plugin without a deadline. */
static void describe_end(struct fp8kv_child *c, char *out, size_t size)
{
    int status = 0;
    pid_t r = waitpid(c->pid, &status, WNOHANG);
    if (r == 0 && c->pidfd >= 0) {
        struct pollfd end = {.fd = c->pidfd, .events = POLLIN};
        (void)poll(&end, 1, 100);
        r = waitpid(c->pid, &status, WNOHANG);
    }
    const int running = r == 0;
    if (running) {
        stop_group(c);
        r = waitpid(c->pid, &status, 0);
    }
    kill(-c->pid, SIGKILL); /* children the plugin left behind */
    c->pid = -1;
    if (running)
        snprintf(out, size, "closed its connection to fp8kv without an answer (killed)");
    else if (r < 0)
        snprintf(out, size, "ended (no status)");
    else if (WIFSIGNALED(status))
        snprintf(out, size, "crashed (signal %d, %s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The memory one process holds: its resident anonymous and shared pages (not its files'), in
 * bytes; 0 when it is gone. */
static size_t process_memory(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    size_t kib = 0;
    unsigned long long k;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %llu", &k) == 1 || sscanf(line, "RssShmem: %llu", &k) == 1)
            kib += (size_t)k;
    if (f)
        fclose(f);
    return kib << 10;
}

/* The bytes of the region shared with c that the child holds resident: the Rss of its mappings
 * of the region in /proc/<pid>/smaps (the region's pages the child never touched are not its
 * memory; other shared memory it holds is). Read only when the child is near its limit. */
static size_t region_held(const struct fp8kv_child *c)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)c->shared / page * page;
    const uintptr_t hi = (uintptr_t)c->shared + c->shared_bytes;
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)c->pid);
    FILE *f = fopen(path, "r");
    size_t kib = 0;
    int inside = 0;
    unsigned long start, end;
    unsigned long long k;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2) /* a mapping's first line */
            inside = start >= lo && end <= hi + page;    /* (the fences split the region) */
        else if (inside && sscanf(line, "Rss: %llu", &k) == 1)
            kib += (size_t)k;
    }
    if (f)
        fclose(f);
    return kib << 10;
}

/* Whether the child, and every process below it, hold more memory than c->memory_limit (the
 * region shared with the harness not counted). The child is measured at every call; the
 * processes below it (a scan of /proc) at most every 50 ms. Over the limit, the child is
 * failed (killed) with a message saying so while `doing`: FP8KV_ERR_SUBJECT; else 0. */
static int watch_memory(struct fp8kv_child *c, const char *doing)
{
    if (!c->memory_limit)
        return 0;
    size_t held = process_memory(c->pid);
    const double now = now_ms();
    if (now - c->memory_checked_ms >= 50.0) {
        c->memory_checked_ms = now;
        pid_t below[256];
        const int n = descendants(c->pid, below, 256);
        for (int i = 0; i < n; i++)
            held += process_memory(below[i]);
    }
    if (held <= c->memory_limit) /* (the region's share is only ever subtracted) */
        return 0;
    const size_t region = region_held(c);
    held = held > region ? held - region : 0;
    if (held <= c->memory_limit)
        return 0;
    return fp8kv_child_failed(c,
                              "plugin %s used %zu MiB of memory (its processes together), more "
                              "than the workers' limit of %zu MiB (--worker-memory, "
                              "FP8KV_WORKER_MEMORY), while %s (killed)",
                              c->path, held >> 20, c->memory_limit >> 20, doing);
}

/* Waits for n bytes of answer, all of them within the timeout; 0, or FP8KV_ERR_SUBJECT with
 * `doing` in the message. */
static int await_answer(struct fp8kv_child *c, void *answer, size_t n, const char *doing)
{
    /* the socket answers, or the child's end shows on its pidfd: a child that crashed after
     * forking leaves a grandchild holding the socket open, and is a crash, not a hang */
    struct pollfd pfd[2] = {{.fd = c->socket, .events = POLLIN},
                            {.fd = c->pidfd, .events = POLLIN}};
    const double deadline = now_ms() + c->timeout_ms;
    char *p = answer;
    size_t got = 0;
    while (got < n) {
        const double left = deadline - now_ms();
        /* with a memory limit, the tree is measured every 50 ms while it works */
        const int wait_ms = c->memory_limit && left > 50 ? 50 : (int)left + 1;
        int ready = left > 0 ? poll(pfd, c->pidfd >= 0 ? 2 : 1, wait_ms) : 0;
        if (ready == 0 && deadline - now_ms() > 0) {
            if (watch_memory(c, doing) != 0)
                return FP8KV_ERR_SUBJECT;
            continue;
        }
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0)
            return fp8kv_child_failed(c,
                                      "plugin %s hung: no answer within %.3g s while %s (killed)",
                                      c->path, c->timeout_ms / 1000.0, doing);
        ssize_t k = -1;
        if (ready > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            do
                k = recv(c->socket, p + got, n - got, MSG_DONTWAIT);
            while (k < 0 && errno == EINTR);
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                continue;
        }
        if (k <= 0)
            break; /* closed, failed, or the child ended with nothing to read */
        got += (size_t)k;
    }
    if (got == n) /* and after every answer */
        return watch_memory(c, doing);
    char how[160];
    describe_end(c, how, sizeof how);
    return fp8kv_child_failed(c, "plugin %s %s while %s", c->path, how, doing);
}

int fp8kv_child_request(struct fp8kv_child *c, const void *request, size_t request_bytes,
                        void *answer, size_t answer_bytes, const char *doing)
{
    if (c->dead) {
        fp8kv_fail("%s", c->failure);
        return FP8KV_ERR_SUBJECT;
    }
    if (fp8kv_child_send(c->socket, request, request_bytes) != 0) {
        char how[160];
        describe_end(c, how, sizeof how);
        return fp8kv_child_failed(c, "plugin %s %s before %s", c->path, how, doing);
    }
    return await_answer(c, answer, answer_bytes, doing);
}

/* Whether this build runs under a sanitizer, whose shadow memory no data limit allows. */
static int sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return 1;
#endif
#endif
    return 0;
}

static size_t worker_memory = (size_t)-1; /* fp8kv_child_set_memory's; -1: the default */

void fp8kv_child_set_memory(size_t bytes)
{
    worker_memory = bytes;
}

int fp8kv_child_parse_memory(const char *text, size_t *bytes)
{
    char *end = NULL;
    errno = 0;
    const unsigned long long n =
        text && *text >= '0' && *text <= '9' ? strtoull(text, &end, 10) : 0;
    if (!end || errno || end == text)
        return -1;
    const int shift = !*end ? 0 : *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : -1;
    if (shift < 0 || (*end && end[1]) || n > (~0ull >> shift))
        return -1;
    *bytes = (size_t)(n << shift);
    return 0;
}

int fp8kv_child_memory(size_t *bytes)
{
    const char *env = getenv("FP8KV_WORKER_MEMORY");
    if (worker_memory != (size_t)-1) {
        *bytes = worker_memory;
    } else if (env) {
        if (fp8kv_child_parse_memory(env, bytes) != 0)
            return fp8kv_fail("FP8KV_WORKER_MEMORY: '%s' is not a size (bytes, or a number "
                              "followed by K, M or G; 0: no limit)",
                              env);
    } else {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        *bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : 0;
    }
    if (sanitized())
        *bytes = 0;
    return FP8KV_OK;
}

/* In a new worker, before the plugin is loaded: it dies with the harness; orphans of the
 * plugin's processes stay below it (so stop_group finds them); its writable memory is limited
 * (fp8kv_child_memory); and it cannot open the harness's files through /proc or trace it
 * (the harness is not dumpable, and a worker run as root gives up CAP_SYS_PTRACE). */
static void confine_worker(size_t memory)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (memory) { /* (the harness watches the rest: shared mappings, children) */
        const struct rlimit r = {memory, memory};
        setrlimit(RLIMIT_DATA, &r);
        setrlimit(RLIMIT_FSIZE, &r); /* memfd and tmpfs files, unmapped, are in no one's RSS */
    }
    prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0); /* fails unprivileged: nothing to drop */
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    if (syscall(SYS_capget, &head, caps) == 0) {
        caps[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
        caps[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
        caps[CAP_SYS_PTRACE / 32].inheritable &= ~(1u << (CAP_SYS_PTRACE % 32));
        syscall(SYS_capset, &head, caps);
    }
}

/* The shared memory rounded up to pages, then an inaccessible guard page: a plugin writing
 * past the end of the region faults (a crash, reported) instead of reaching other memory. */
static size_t mapped_bytes(size_t shared_bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (shared_bytes + page - 1) / page * page + page;
}

/* The start of the mapping c->shared lies in (its guard page ends it). */
static char *region_base(const struct fp8kv_child *c)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (char *)c->shared - (mapped_bytes(c->shared_bytes) - page - c->shared_bytes);
}

/* Every child with shared memory, so that a new worker gives up the others' memory and
 * descriptors (a fork inherits them all: a plugin could write into another worker's requests). */
enum { MAX_LIVE = 1024 };
static struct fp8kv_child *live[MAX_LIVE];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

/* Puts c in the table (in a free slot) or takes it out (slot of c, to NULL). */
static void live_swap(struct fp8kv_child *from, struct fp8kv_child *to)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] == from) {
            live[i] = to;
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

/* In a new worker: unmaps every other child's shared memory and closes its descriptors (the
 * table as it was at the fork; no lock: another thread may have held it). */
static void forget_other_workers(const struct fp8kv_child *own)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] && live[i] != own) {
            munmap(region_base(live[i]), mapped_bytes(live[i]->shared_bytes));
            if (live[i]->socket >= 0)
                close(live[i]->socket);
            if (live[i]->pidfd >= 0)
                close(live[i]->pidfd);
        }
}

int fp8kv_child_start(struct fp8kv_child *c, const char *path, size_t shared_bytes, int timeout_ms,
                      fp8kv_child_serve serve, void *arg, void *hello, size_t hello_bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = mapped_bytes(shared_bytes);
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->pidfd = -1;
    c->socket = -1;
    c->timeout_ms = timeout_ms;
    fp8kv_child_copy_text(c->path, sizeof c->path, path);
    pthread_mutex_init(&c->lock, NULL);
    c->started = 1;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return fp8kv_fail("cannot map plugin buffers: %s", strerror(errno));
    if (mprotect(p + bytes - page, page, PROT_NONE) != 0) {
        munmap(p, bytes);
        return fp8kv_fail("cannot protect plugin buffers: %s", strerror(errno));
    }
    /* the region ends flush against the guard page */
    c->shared = p + (bytes - page - shared_bytes);
    c->shared_bytes = shared_bytes;
    live_swap(NULL, c);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fp8kv_fail("cannot make a plugin socket: %s", strerror(errno));
    size_t memory;
    if (fp8kv_child_memory(&memory) != FP8KV_OK) {
        close(sv[0]);
        close(sv[1]);
        return FP8KV_ERR;
    }
    fflush(NULL);              /* nothing buffered twice */
    prctl(PR_SET_DUMPABLE, 0); /* no worker opens the harness's stdout through /proc */
    c->pid = fork();
    if (c->pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return fp8kv_fail("cannot start a plugin worker: %s", strerror(errno));
    }
    if (c->pid == 0) {
        setpgid(0, 0); /* its own process group: the harness stops the plugin's children too */
        close(sv[0]);
        dup2(STDERR_FILENO, STDOUT_FILENO); /* a chatty plugin must not mix into the verdicts */
        forget_other_workers(c);
        confine_worker(memory);
        _exit(serve(sv[1], c->shared, arg));
    }
    setpgid(c->pid, c->pid); /* (also here: whichever runs first) */
    c->memory_limit = memory;
#ifdef SYS_pidfd_open
    c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0); /* -1 on old kernels: socket only */
#endif
    close(sv[1]);
    c->socket = sv[0];
    return await_answer(c, hello, hello_bytes, "loading");
}

void fp8kv_child_stop(struct fp8kv_child *c)
{
    if (!c->started) /* never started: nothing is open (its fields may be zeros) */
        return;
    if (c->pid > 0) {
        stop_group(c); /* while it lives, so that what it started is still below it */
        waitpid(c->pid, NULL, 0);
    }
    if (c->socket >= 0)
        close(c->socket);
    if (c->pidfd >= 0)
        close(c->pidfd);
    if (c->shared) {
        live_swap(c, NULL);
        munmap(region_base(c), mapped_bytes(c->shared_bytes));
    }
    pthread_mutex_destroy(&c->lock);
    c->started = 0;
    c->socket = -1;
    c->pid = -1;
    c->pidfd = -1;
    c->shared = NULL;
}

int fp8kv_child_start_pool(struct fp8kv_child *w, int count, const char *path, size_t shared_bytes,
                           int timeout_ms, fp8kv_child_serve serve, void *arg, void *hello,
                           size_t hello_bytes, fp8kv_child_check check, void *host)
{
    int rc = FP8KV_OK, started = 0;
    for (int i = 0; i < count && rc == FP8KV_OK; i++) {
        started = i + 1;
        memset(hello, 0, hello_bytes);
        rc = fp8kv_child_start(&w[i], path, shared_bytes, timeout_ms, serve, arg, hello,
                               hello_bytes);
        if (rc == FP8KV_OK && i == 0)
            rc = check(host, hello);
    }
    if (rc != FP8KV_OK) {
        char message[1024];
        fp8kv_child_copy_text(message, sizeof message, fp8kv_last_error());
        for (int i = 0; i < started; i++)
            fp8kv_child_stop(&w[i]);
        fp8kv_status_fail(rc, "%s", message);
    }
    return rc;
}

int fp8kv_child_lock(struct fp8kv_child *c)
{
    pthread_mutex_lock(&c->lock);
    if (!c->dead)
        return FP8KV_OK;
    fp8kv_fail("%s", c->failure);
    return FP8KV_ERR_SUBJECT;
}

void fp8kv_child_plugin_name(char *out, size_t size, const char *declared, const char *path)
{
    const char *base = strrchr(path, '/');
    fp8kv_child_copy_text(out, size, declared[0] ? declared : base ? base + 1 : path);
}
