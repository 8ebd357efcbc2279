/* host.h — the one plugin host: code under test from a shared library, run in worker processes,
 * for every plugin ABI (internal to the judge library).
 *
 * An ABI (codec, KV kernels, block codec) is a table, struct fp8kv_host_abi: the symbol its
 * descriptor is exported as, how a worker describes a loaded descriptor, how the harness checks
 * that description, and how a worker runs one request. Everything else is the host's, the
 * same for every ABI (child.h does the processes):
 * - a request is an operation, its plain-data parameters and up to FP8KV_HOST_ARRAYS arrays,
 *   each an input, an output or both; the host lays the arrays in the memory it shares with the
 *   worker and copies them in and out;
 * - every byte is fenced: in the worker, inputs are read-only, every array is followed by an
 *   inaccessible guard page and every output ends flush against its guard page; the bytes before
 *   an output on its first page are canaries, checked whole after every request, and the rest
 *   of the shared memory is inaccessible. A touch outside the arrays is reported with the array
 *   it missed and the byte, and the worker is stopped;
 * - a worker that crashes, exits or hangs is named with what it was doing, killed with its
 *   process group, and every later request to it fails with the same message.
 */
#ifndef FP8KV_HOST_H
#define FP8KV_HOST_H

#include <stddef.h>
#include <stdint.h>

enum { FP8KV_HOST_ARRAYS = 10, FP8KV_HOST_PARAMS = 1024, FP8KV_HOST_FACTS = 512 };

/* What a worker found in the library: the part every ABI shares, then the ABI's own facts. */
struct fp8kv_host_hello {
    int32_t loaded;       /* 1: the descriptor was read (abi_version says which layout) */
    uint32_t abi_version; /* every descriptor starts with its uint32_t version ... */
    char name[64];        /* ... and its const char *name */
    char error[512];      /* why the library cannot be served ("": it can) */
    unsigned char facts[FP8KV_HOST_FACTS]; /* the ABI's describe fills them */
};

/* One ABI as the host runs it. */
struct fp8kv_host_abi {
    const char *symbol; /* the descriptor function the library exports, e.g. "fp8kv_codec_v1" */
    const char *abi;    /* its name in messages: "ABI", "KV ABI", "block-codec ABI" */
    uint32_t version;   /* the version this fp8kv reads */
    size_t arena_bytes; /* the most bytes of arrays one request holds (fences come on top) */
    /* in the worker: the facts of descriptor d (of this version) into facts; 0 when it can be
     * served, else nonzero with the reason in error (size bytes). arg: fp8kv_host_open's. */
    int (*describe)(const void *d, void *facts, char *error, size_t size, const void *arg);
    /* in the harness: checks the first worker's hello (loaded, of this version); 0, or a
     * status with the message set. ctx: fp8kv_host_open's. */
    int (*check)(void *ctx, const char *path, const struct fp8kv_host_hello *hello);
    /* in the worker: runs operation op with params on d, its arrays in shared memory (arrays of
     * them, bytes[i] each); 0, or a status with the reason in message (size bytes). */
    int (*run)(const void *d, uint32_t op, const void *params, int arrays, void *const *array,
               const uint64_t *bytes, char *message, size_t size);
};

enum fp8kv_host_direction {
    FP8KV_HOST_IN,   /* read by the plugin (read-only to it) */
    FP8KV_HOST_OUT,  /* written by it (its bytes start as canaries, so nothing stale is read) */
    FP8KV_HOST_INOUT /* both: copied in and back (a cache whose sentinels must survive) */
};

struct fp8kv_host_array {
    void *data; /* the harness's copy (const for an input) */
    size_t bytes;
    enum fp8kv_host_direction direction;
    const char *name; /* in messages: "q", "key_cache" */
};

/* One request: the ABI's operation, its parameters (copied as bytes) and its arrays. */
struct fp8kv_host_request {
    uint32_t op;
    const void *params;
    size_t params_bytes; /* at most FP8KV_HOST_PARAMS */
    int arrays;          /* at most FP8KV_HOST_ARRAYS */
    struct fp8kv_host_array array[FP8KV_HOST_ARRAYS];
};

struct fp8kv_host;

/* fp8kv_host_open: starts `workers` (>= 1) workers that each load the library at path (a name
 * without '/' is taken as ./name) and describe its descriptor; the first one's hello is checked
 * by abi->check(ctx, ...). timeout_s bounds every answer, the load included (<= 0: 30 s);
 * worker_arg reaches abi->describe in the worker. Call it before starting threads of your own
 * (it forks). 0 and *out; FP8KV_ERR when the library is unusable (missing, not loadable, no
 * descriptor, another ABI version, or abi->check's refusal); FP8KV_ERR_SUBJECT when it crashed
 * or hung while loading; abi->check's status otherwise. The message names the file. */
int fp8kv_host_open(const struct fp8kv_host_abi *abi, const char *path, int workers,
                    double timeout_s, const void *worker_arg, void *ctx, struct fp8kv_host **out);

/* fp8kv_host_path / fp8kv_host_name / fp8kv_host_workers: the library's path as loaded, the
 * plugin's name for reports (its declared name, else the file's name), the number of workers. */
const char *fp8kv_host_path(const struct fp8kv_host *h);
const char *fp8kv_host_name(const struct fp8kv_host *h);
int fp8kv_host_workers(const struct fp8kv_host *h);

/* fp8kv_host_first_input: where worker `worker` lays the first array of a request when that
 * array is an input (room for abi->arena_bytes): an input its one caller wrote there and passes
 * as that array's data is not copied. */
void *fp8kv_host_first_input(struct fp8kv_host *h, int worker);

/* fp8kv_host_call: runs request r on worker `worker` (modulo the workers; each serves one
 * caller at a time): inputs copied in, outputs back. `doing` says what it is in messages
 * ("encoding 1048576 inputs 0x... .. 0x..."). 0; FP8KV_ERR when r does not fit the ABI's
 * arena (nothing ran); FP8KV_ERR_SUBJECT when the worker crashed, hung, touched memory outside
 * its arrays or run said so (the message names the plugin, what happened and `doing`; the
 * worker is stopped); FP8KV_UNAVAILABLE when run said that. */
int fp8kv_host_call(struct fp8kv_host *h, int worker, const struct fp8kv_host_request *r,
                    const char *doing);

/* fp8kv_host_text: in a describe: dst = src (if_null when src is NULL) cut to size - 1
 * characters, every control character replaced by '?' (what a plugin says reaches terminals and
 * reports). */
void fp8kv_host_text(char *dst, size_t size, const char *src, const char *if_null);

/* fp8kv_host_unknown: fails with "plugin <path>: unknown <what> "<given>" (<names> | NULL)"
 * (the names joined by " | ", NULL added when or_null) and returns FP8KV_ERR. */
int fp8kv_host_unknown(const char *path, const char *what, const char *given,
                       const char *const *names, int count, int or_null);

/* fp8kv_host_close: stops the workers and frees h (NULL is fine). */
void fp8kv_host_close(struct fp8kv_host *h);

#endif
