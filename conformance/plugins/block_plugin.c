/* block_plugin.c — examples/engine_block (an engine-style MXFP4 / NVFP4 block-codec plugin) as
 * it is and with planted faults, for the tests of `fp8kv check-block --plugin` and
 * `fp8kv audit --block`. ENGINE_BLOCK_VARIANT picks the example's claim (mxfp4 floor, mxfp4
 * rceil f32, nvfp4 rne f32); BLOCK_FAULT the fault:
 *   none            the example as it is
 *   ties_away       e2m1 rounds every tie away from zero (0.25 -> 0.5, 2.5 -> 3 ...)
 *   nv_pow2         nvfp4's block scale a power of two (2^ceil(log2 q)), MX-style
 *   nv_unsaturated  nvfp4's block scale past 448 not clamped (480: the NaN code 0x7F)
 *   rceil_as_floor  claims rceil, computes floor
 *   crash           dereferences NULL on meeting the input 1.0
 *   bad_rule        says rule "rne", which mxfp4 does not take
 *   abi2            says block-codec ABI version 2
 *   full_piece_overrun  writes one byte past its elements, only in a call of a full piece
 *                   (FP8KV_BLOCK_PLUGIN_CALL blocks: what the sweeps send)
 *   scales_overrun  writes scales[nblocks]
 *   other_worker    sees whether the memory another worker shares with fp8kv is mapped in its
 *                   own process (a second shared /dev/zero mapping) and, if so, writes wrong
 *                   elements: what it could reach, it could corrupt
 * The fault is the only difference: the hooks are the example's own macros. */
#include <stdint.h>

#define BLOCK_FAULT_NONE 0
#define BLOCK_FAULT_TIES_AWAY 1
#define BLOCK_FAULT_NV_POW2 2
#define BLOCK_FAULT_NV_UNSATURATED 3
#define BLOCK_FAULT_RCEIL_AS_FLOOR 4
#define BLOCK_FAULT_CRASH 5
#define BLOCK_FAULT_BAD_RULE 6
#define BLOCK_FAULT_ABI2 7
#define BLOCK_FAULT_FULL_PIECE_OVERRUN 8
#define BLOCK_FAULT_SCALES_OVERRUN 9
#define BLOCK_FAULT_OTHER_WORKER 10
#ifndef BLOCK_FAULT
#define BLOCK_FAULT BLOCK_FAULT_NONE
#endif
#define ENGINE_E2M1_TIES_AWAY (BLOCK_FAULT == BLOCK_FAULT_TIES_AWAY)
#define ENGINE_NV_POW2_SCALE (BLOCK_FAULT == BLOCK_FAULT_NV_POW2)
#define ENGINE_NV_SCALE_UNSATURATED (BLOCK_FAULT == BLOCK_FAULT_NV_UNSATURATED)
#define ENGINE_RCEIL_AS_FLOOR (BLOCK_FAULT == BLOCK_FAULT_RCEIL_AS_FLOOR)

/* the example's export, renamed (a function-like macro leaves the struct tag alone) */
#include "fp8kv/block_plugin.h"
const struct fp8kv_block_codec_v1 *engine_block_codec_v1(void);
#define fp8kv_block_codec_v1(v) engine_block_codec_v1(v)
#include "../../examples/engine_block/engine_block.c"
#undef fp8kv_block_codec_v1

static struct fp8kv_block_codec_v1 wrapped;

#include <stdio.h>
#include <string.h>

/* sees_other_shared_memory: whether /proc/self/maps shows shared /dev/zero mappings of two or
 * more inodes (the worker's own region is one) */
static int sees_other_shared_memory(void)
{
    static int seen = -1; /* read once: the maps do not change between calls */
    if (seen >= 0)
        return seen;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long first = 0, inode;
    int inodes = 0;
    while (f && fgets(line, sizeof line, f)) {
        char perms[8];
        if (sscanf(line, "%*x-%*x %7s %*s %*s %lu", perms, &inode) == 2 && perms[3] == 's' &&
            strstr(line, "/dev/zero") && inode != first) {
            first = inode;
            inodes++;
        }
    }
    if (f)
        fclose(f);
    return seen = inodes >= 2;
}

/* crash: the example's encode, but a NULL store on meeting the input 1.0 */
static void encode_or_crash(const float *x, size_t nblocks, float G, uint8_t *scales,
                            uint8_t *elements)
{
    for (size_t i = 0; BLOCK_FAULT == BLOCK_FAULT_CRASH && i < nblocks * BLOCK; i++)
        if (x[i] >= 1.0f) /* any block with a value of 1 or more: every data set has one */
            *(volatile int *)(uintptr_t)(nblocks - nblocks) = 1;
    engine_block_codec_v1()->encode(x, nblocks, G, scales, elements);
    if (BLOCK_FAULT == BLOCK_FAULT_FULL_PIECE_OVERRUN && nblocks == 32768)
        elements[nblocks * BLOCK] = 0;
    if (BLOCK_FAULT == BLOCK_FAULT_SCALES_OVERRUN)
        scales[nblocks] = 0;
    for (size_t i = 0; BLOCK_FAULT == BLOCK_FAULT_OTHER_WORKER && i < nblocks * BLOCK &&
                       sees_other_shared_memory();
         i++)
        elements[i] ^= 1;
}

ENGINE_EXPORT const struct fp8kv_block_codec_v1 *fp8kv_block_codec_v1(void)
{
    wrapped = *engine_block_codec_v1();
    wrapped.encode = encode_or_crash;
    if (BLOCK_FAULT == BLOCK_FAULT_BAD_RULE)
        wrapped.rule = "rne";
    if (BLOCK_FAULT == BLOCK_FAULT_ABI2)
        wrapped.abi_version = 2;
    return &wrapped;
}
