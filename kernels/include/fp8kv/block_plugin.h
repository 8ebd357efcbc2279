/* fp8kv/block_plugin.h — the block-codec plugin ABI, version 1: an engine's MX or NVFP4 codec
 * (fp8kv/block.h) judged by fp8kv.
 *
 * An engine builds its block codec as a shared library that exports one function,
 * fp8kv_block_codec_v1, returning a descriptor of static storage duration. fp8kv loads the
 * library in a child process (a crash or a hang is named, never takes the harness down) and
 * judges it against the exact oracle: `fp8kv check-block --plugin LIB` and
 * `fp8kv audit --block ... --plugin LIB` (docs/blocks.md).
 *
 * Contract for the plugin:
 *   - abi_version is FP8KV_BLOCK_CODEC_ABI_VERSION;
 *   - format is one of "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4",
 *     "nvfp4"; rule one the format takes ("floor", "rceil", "even" for MX; "rne", "ceil",
 *     "4over6" for nvfp4); model "exact" or "f32" (which arithmetic it claims, block.h);
 *   - encode is required: it encodes nblocks whole blocks of block_size (32 MX, 16 nvfp4)
 *     consecutive f32 inputs x: scales[b] is block b's scale code (E8M0 or UE4M3), elements
 *     [b * block_size + i] its element codes, one per byte (fp6/fp4 codes in the low bits,
 *     sign bit included). global_scale is nvfp4's f32 per-tensor decode scale G (finite, > 0;
 *     MX plugins ignore it);
 *   - decode may be NULL (no read path to check): y[b * block_size + i] is the f32 value of
 *     elements[b * block_size + i] under scales[b] (and G);
 *   - the functions may be called many times, with nblocks up to a few thousand, always from
 *     one thread of the loading process; they must not keep the pointers they are given.
 * This header needs nothing but the C standard library. In C++ write the descriptor's type as
 * fp8kv_block_codec_v1_t (the function of the same name hides the struct tag). */
#ifndef FP8KV_BLOCK_PLUGIN_H
#define FP8KV_BLOCK_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_BLOCK_CODEC_ABI_VERSION 1
struct fp8kv_block_codec_v1 {
    uint32_t abi_version; /* FP8KV_BLOCK_CODEC_ABI_VERSION */
    const char *name;
    const char *format; /* "mxfp8_e4m3" | "mxfp8_e5m2" | "mxfp6_e3m2" | "mxfp6_e2m3" | "mxfp4" |
                           "nvfp4" */
    const char *rule;   /* "floor" | "rceil" | "even" (MX); "rne" | "ceil" | "4over6" (nvfp4) */
    const char *model;  /* "exact" | "f32" */
    /* store: nblocks blocks of x -> scales[nblocks], elements[nblocks * block_size] */
    void (*encode)(const float *x, size_t nblocks, float global_scale, uint8_t *scales,
                   uint8_t *elements);
    /* read: the codes of nblocks blocks -> y[nblocks * block_size]; may be NULL */
    void (*decode)(const uint8_t *scales, const uint8_t *elements, size_t nblocks,
                   float global_scale, float *y);
};
/* the descriptor's type under a name no function hides (C++ plugins need it) */
typedef struct fp8kv_block_codec_v1 fp8kv_block_codec_v1_t;

/* the one symbol a plugin exports */
const fp8kv_block_codec_v1_t *fp8kv_block_codec_v1(void);

#ifdef __cplusplus
}
#endif
#endif
