/* fp8kv/kv_plugin_host.h — KV-kernel plugins (fp8kv/kv_plugin.h) run in a child process.
 *
 * The plugin is the code under test, so fp8kv never runs it in its own process: a forked worker
 * loads the library, checks its descriptor and runs each call on arrays the harness placed in
 * memory shared with it (outputs followed by canary bytes, the region by a guard page). On
 * device memory (a CUDA or HIP plugin, in a GPU build) the worker stages the arrays through the
 * device. A worker that crashes or gives no answer within the timeout is killed with its
 * process group and reported with the call it was making; the harness goes on to say so.
 */
#ifndef FP8KV_KV_PLUGIN_HOST_H
#define FP8KV_KV_PLUGIN_HOST_H

#include "fp8kv/subject.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a loaded KV plugin says of itself (its descriptor, checked). */
struct fp8kv_kv_plugin_info {
    char name[64];
    struct fp8kv_claim claim; /* the profile (FP8KV_CLAIM_ANY where it follows the arguments) */
    unsigned caps;            /* FP8KV_CAP_STORE, and _GATHER, _ATTENTION when it has them */
    unsigned memory;          /* enum fp8kv_kv_abi_memory */
};

struct fp8kv_kv_plugin;

/* fp8kv_kv_plugin_open: starts a worker that loads the shared library at path and checks its
 * descriptor: the exported fp8kv_kv_kernels_v1, ABI version 1, a store, known format, overflow
 * and inf names (or NULL), a known memory kind; device memory needs a GPU build and opens GPU
 * `device` in the worker. timeout_s bounds every answer (the load included). Call it before
 * starting threads of your own (it forks). 0 and *out; FP8KV_ERR when the plugin is unusable
 * (the message names the file and the fault); FP8KV_UNAVAILABLE for device memory without a
 * GPU; FP8KV_ERR_SUBJECT when it crashed or hung while loading. */
int fp8kv_kv_plugin_open(const char *path, int device, double timeout_s,
                         struct fp8kv_kv_plugin **out);

/* fp8kv_kv_plugin_info: the descriptor of an open plugin. */
const struct fp8kv_kv_plugin_info *fp8kv_kv_plugin_info(const struct fp8kv_kv_plugin *pl);

/* fp8kv_kv_plugin_subject: the plugin as a KV subject (its calls go to the worker; from the
 * harness's side they take host memory). Valid while pl is open. */
struct fp8kv_subject fp8kv_kv_plugin_subject(struct fp8kv_kv_plugin *pl);

/* fp8kv_kv_plugin_close: stops the worker and frees pl (NULL is fine). */
void fp8kv_kv_plugin_close(struct fp8kv_kv_plugin *pl);

#ifdef __cplusplus
}
#endif
#endif
