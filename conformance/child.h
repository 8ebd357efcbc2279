/* child.h — code under test in a child process: the process machinery of the plugin host
 * (host.h; internal to the judge library).
 *
 * A child is forked, becomes its own process group, and runs a serve function that talks to
 * the harness over a socket and works in a shared memory region followed by an inaccessible
 * guard page. The harness waits for each answer with a timeout and watches the child's end on
 * a pidfd, so a crash (even after the plugin forked) is reported as a crash, a silence as a
 * hang; either way the child's whole process group is killed and every later request fails
 * with the same message.
 */
#ifndef FP8KV_CHILD_H
#define FP8KV_CHILD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fp8kv_child {
    pid_t pid; /* also the id of the child's process group */
    int pidfd; /* readable once the child has ended (-1: not supported) */
    int socket;
    void *shared; /* shared_bytes of memory shared with the child, then a guard page */
    size_t shared_bytes;
    int timeout_ms;
    size_t memory_limit;      /* fp8kv_child_memory's at the start (0: none) */
    double memory_checked_ms; /* when the processes below the child were last measured */
    pthread_mutex_t lock;     /* one request at a time */
    int dead;                 /* crashed, hung or stopped: every later request fails */
    char failure[512];        /* why it died, for later requests */
    char path[1024];          /* the plugin, for messages */
    int started;              /* fp8kv_child_start ran (the lock is initialized) */
};

/* The child's side: runs in the forked process with the socket and the shared memory; its
 * return value is the child's exit status. */
typedef int (*fp8kv_child_serve)(int socket, void *shared, void *arg);

/* fp8kv_child_start: maps shared_bytes (rounded up to pages) of shared memory, forks a child
 * running serve(socket, shared, arg), and waits up to timeout_ms for its first message of
 * hello_bytes into hello. 0; FP8KV_ERR (the system refused: no memory, no fork); or
 * FP8KV_ERR_SUBJECT (the child crashed or hung before its first message). path names the
 * plugin in messages. Call before starting threads of your own (it forks). */
int fp8kv_child_start(struct fp8kv_child *c, const char *path, size_t shared_bytes, int timeout_ms,
                      fp8kv_child_serve serve, void *arg, void *hello, size_t hello_bytes);

/* fp8kv_child_request: sends request_bytes of request, then waits for answer_bytes of answer.
 * 0, or FP8KV_ERR_SUBJECT with a message saying what happened while `doing`. The caller holds
 * c->lock. */
int fp8kv_child_request(struct fp8kv_child *c, const void *request, size_t request_bytes,
                        void *answer, size_t answer_bytes, const char *doing);

/* fp8kv_child_failed: marks c dead with a printf-style message (also the current fp8kv error),
 * stops it, and returns FP8KV_ERR_SUBJECT. */
int fp8kv_child_failed(struct fp8kv_child *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A plugin host's check of a child's first message (hello, of the host's hello type): 0, or a
 * negative status with the message set. host is what the host passed along. */
typedef int (*fp8kv_child_check)(void *host, const void *hello);

/* fp8kv_child_start_pool: starts count (>= 1) children w[0 .. count) as fp8kv_child_start
 * does, each into a zeroed hello, and has check(host, hello) judge the first child's hello.
 * 0 with all started; or the first failing status with its message, every child already
 * started stopped again (the message kept). */
int fp8kv_child_start_pool(struct fp8kv_child *w, int count, const char *path, size_t shared_bytes,
                           int timeout_ms, fp8kv_child_serve serve, void *arg, void *hello,
                           size_t hello_bytes, fp8kv_child_check check, void *host);

/* fp8kv_child_lock: takes c->lock for a request; 0, or FP8KV_ERR_SUBJECT with c's failure as
 * the message when c is dead. The lock is held either way: unlock it after. */
int fp8kv_child_lock(struct fp8kv_child *c);

/* fp8kv_child_set_memory: the memory (bytes; 0: no limit) every worker started after this call
 * may use. A worker's private writable memory is limited by RLIMIT_DATA (its allocations fail
 * past it) and the files it writes by RLIMIT_FSIZE; the harness measures the resident memory
 * (anonymous and shared pages, less the region shared with the harness) of the worker after
 * every answer and every 50 ms while it waits for one, with every process below it at most
 * every 50 ms, and a tree over the limit is killed as a failure of the plugin (shared mappings,
 * memfd and other processes escape RLIMIT_DATA). Unset, it is
 * $FP8KV_WORKER_MEMORY (fp8kv_child_parse_memory's form), else half of the machine's memory; in
 * a sanitizer build there is none (its shadow memory is more than any limit).
 * fp8kv_child_memory: the limit in force into *bytes (0: none); 0, or FP8KV_ERR when
 * $FP8KV_WORKER_MEMORY is not a size. fp8kv_child_parse_memory: "N", "NK", "NM" or "NG" into
 * *bytes; 0, or -1. */
void fp8kv_child_set_memory(size_t bytes);
int fp8kv_child_memory(size_t *bytes);
int fp8kv_child_parse_memory(const char *text, size_t *bytes);

/* fp8kv_child_stop: ends the child (closing its socket, then killing its process group) and
 * unmaps the shared memory. Safe on a child that never started (all zeros) or already stopped. */
void fp8kv_child_stop(struct fp8kv_child *c);

/* The child's side of the socket: fp8kv_child_send writes all n bytes (0 or -1);
 * fp8kv_child_receive reads n bytes (1), or sees the other side close first (0), or fails (-1). */
int fp8kv_child_send(int fd, const void *p, size_t n);
int fp8kv_child_receive(int fd, void *p, size_t n);

/* fp8kv_child_plugin_path: the plugin library at path as dlopen must be given it (a name
 * without '/' gets "./": a path is meant, not a search) into out; 0, or FP8KV_ERR naming path
 * when it does not exist or is not a regular file. */
int fp8kv_child_plugin_path(const char *path, char *out, size_t size);

/* fp8kv_child_timeout_ms: a --timeout in seconds as milliseconds (30 s when not above 0). */
int fp8kv_child_timeout_ms(double seconds);

/* fp8kv_child_descriptor: in the child: loads the library at path and returns what its exported
 * descriptor function `symbol` (no arguments, returning a pointer) gives; NULL with the reason
 * in error (size bytes): not loadable, no such symbol, or the function returned NULL. */
const void *fp8kv_child_descriptor(const char *path, const char *symbol, char *error, size_t size);

/* fp8kv_child_copy_text: dst = src cut to size - 1 characters (NULL: ""), every control
 * character (C0 newline and tab included, DEL, C1, bidirectional controls: fp8kv_text_defang)
 * replaced by '?': text from a plugin goes to terminals and reports. */
void fp8kv_child_copy_text(char *dst, size_t size, const char *src);

/* fp8kv_child_plugin_name: a plugin's name for reports into out: the name its descriptor
 * declares when not empty, else the last component of its path. */
void fp8kv_child_plugin_name(char *out, size_t size, const char *declared, const char *path);

#endif
