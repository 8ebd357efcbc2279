/* fp8kv/codec_plugin_host.h — codec plugins (fp8kv/plugin.h) run in worker processes.
 *
 * A plugin is the code under test, so fp8kv never runs it in its own process: the one plugin
 * host (the same for every ABI) starts workers that load the library, read the descriptor,
 * and encode or decode buffers in memory shared with the harness, every byte of it fenced
 * (inputs read-only, outputs against guard pages). A worker that dies, hangs or touches memory
 * outside its arrays is reported with the inputs it was working on; it is killed, and the
 * harness goes on to say so. Several workers let a sweep use every core even if the plugin is
 * not thread-safe.
 */
#ifndef FP8KV_CODEC_PLUGIN_HOST_H
#define FP8KV_CODEC_PLUGIN_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values a worker takes per request (larger calls are split): large, since every request
 * costs a round trip between processes. */
enum { FP8KV_PLUGIN_CALL = 1 << 20 };

/* What a loaded plugin says of itself (its descriptor, checked). */
struct fp8kv_plugin_info {
    char name[64];
    enum fp8kv_format_id format;
    enum fp8kv_overflow overflow;
    int has_decode;
};

struct fp8kv_plugin;

/* fp8kv_plugin_open: starts `workers` (>= 1) children that each load the shared library at
 * path and check its descriptor: the exported fp8kv_codec_v1, ABI version 1, a known format
 * and overflow, an encode_f32. timeout_s bounds every answer (the load included). Call it
 * before starting threads of your own (it forks). Returns 0 and *out; FP8KV_ERR when the
 * plugin is unusable (not loadable, missing symbol, wrong ABI version, unknown format or
 * overflow); FP8KV_ERR_SUBJECT when it crashed or hung while loading. The message names the
 * file and the fault. */
int fp8kv_plugin_open(const char *path, int workers, double timeout_s, struct fp8kv_plugin **out);

/* fp8kv_plugin_info: the descriptor of an open plugin. */
const struct fp8kv_plugin_info *fp8kv_plugin_info(const struct fp8kv_plugin *pl);

/* fp8kv_plugin_workers: how many workers pl has. */
int fp8kv_plugin_workers(const struct fp8kv_plugin *pl);

/* fp8kv_plugin_encode: q[i] = the plugin's encode_f32 of x[i] at scale s, computed by worker
 * `worker` (0 .. workers-1; each worker serves one caller at a time). Returns 0, or
 * FP8KV_ERR_SUBJECT when the worker crashed, hung or touched memory outside its arrays (now or
 * before), with a message giving the input range in flight. */
int fp8kv_plugin_encode(struct fp8kv_plugin *pl, int worker, const float *x, size_t n, float s,
                        uint8_t *q);

/* fp8kv_plugin_decode: y[i] = the plugin's decode_f32 of q[i] at scale s (the plugin must
 * have one). Returns as fp8kv_plugin_encode. */
int fp8kv_plugin_decode(struct fp8kv_plugin *pl, int worker, const uint8_t *q, size_t n, float s,
                        float *y);

/* fp8kv_plugin_locate_crash: after encoding x[0 .. n) at scale s crashed a worker, bisects the
 * range in a fresh worker of its own (restarted after each crash) to the first input that
 * crashes the plugin alone: 0 with *index; FP8KV_ERR when none is found (a hang, a crash that
 * needs more inputs, or no worker could start). Call with no other request of pl in flight. */
int fp8kv_plugin_locate_crash(struct fp8kv_plugin *pl, const float *x, size_t n, float s,
                              size_t *index);

/* fp8kv_plugin_input_buffer: worker `worker`'s shared input buffer (FP8KV_PLUGIN_CALL
 * floats): inputs written there and passed as x to fp8kv_plugin_encode are not copied. Use it
 * only from the one caller the worker serves. */
float *fp8kv_plugin_input_buffer(struct fp8kv_plugin *pl, int worker);

/* fp8kv_plugin_close: stops the workers and frees pl (NULL is fine). */
void fp8kv_plugin_close(struct fp8kv_plugin *pl);

#ifdef __cplusplus
}
#endif
#endif
