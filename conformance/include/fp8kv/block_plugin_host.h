/* fp8kv/block_plugin_host.h — block-codec plugins (fp8kv/block_plugin.h) run in child processes,
 * through the machinery codec plugins use (child.h): a worker that crashes or hangs is named
 * with the blocks it was working on, killed, and every later request fails with that message;
 * the harness goes on. */
#ifndef FP8KV_BLOCK_PLUGIN_HOST_H
#define FP8KV_BLOCK_PLUGIN_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block.h"
#include "fp8kv/block_report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Blocks a worker takes per request (larger calls are split). */
enum { FP8KV_BLOCK_PLUGIN_CALL = 1 << 15 };

/* What a loaded plugin says of itself (its descriptor, checked). */
struct fp8kv_block_plugin_info {
    char name[64];
    const struct fp8kv_block_format *format;
    enum fp8kv_block_rule rule;
    enum fp8kv_block_model model;
    int has_decode;
};

struct fp8kv_block_plugin;

/* fp8kv_block_plugin_open: starts `workers` (>= 1) children that each load the library at path
 * and check its descriptor (fp8kv_block_codec_v1, ABI version 1, a known format, a rule that
 * format takes, a known model, an encode). timeout_s bounds every answer. Call before starting
 * threads of your own (it forks). 0 and *out; FP8KV_ERR when the plugin is unusable;
 * FP8KV_ERR_SUBJECT when it crashed or hung while loading. The message names file and fault. */
int fp8kv_block_plugin_open(const char *path, int workers, double timeout_s,
                            struct fp8kv_block_plugin **out);

/* fp8kv_block_plugin_info: the checked descriptor of an open plugin. */
const struct fp8kv_block_plugin_info *fp8kv_block_plugin_info(const struct fp8kv_block_plugin *pl);

/* fp8kv_block_plugin_workers: how many workers pl has. */
int fp8kv_block_plugin_workers(const struct fp8kv_block_plugin *pl);

/* fp8kv_block_plugin_encode: the plugin's encode of nblocks blocks of x (block_size f32 each)
 * with decode scale G, by worker `worker` (one caller per worker at a time): scales[nblocks],
 * elements[nblocks * block_size]. 0, or FP8KV_ERR_SUBJECT (crash, hang, a write past the
 * outputs) with a message naming the blocks in flight. */
int fp8kv_block_plugin_encode(struct fp8kv_block_plugin *pl, int worker, const float *x,
                              size_t nblocks, float G, uint8_t *scales, uint8_t *elements);

/* fp8kv_block_plugin_decode: the plugin's decode of nblocks blocks of codes: y[nblocks *
 * block_size]. As fp8kv_block_plugin_encode; FP8KV_ERR when the plugin has no decode. */
int fp8kv_block_plugin_decode(struct fp8kv_block_plugin *pl, int worker, const uint8_t *scales,
                              const uint8_t *elements, size_t nblocks, float G, float *y);

/* fp8kv_block_plugin_subject: pl as a subject (FP8KV_CAP_BLOCK), named and claiming the one
 * combination its descriptor says, taking its worker processes as workers (no decode when the
 * plugin has none). It lives in pl: valid until fp8kv_block_plugin_close. */
const struct fp8kv_subject *fp8kv_block_plugin_subject(struct fp8kv_block_plugin *pl);

/* fp8kv_block_plugin_close: stops the workers and frees pl (NULL is fine). */
void fp8kv_block_plugin_close(struct fp8kv_block_plugin *pl);

#ifdef __cplusplus
}
#endif
#endif
