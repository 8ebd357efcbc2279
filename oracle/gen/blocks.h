/* blocks.h — the generator's block-format vectors (blocks.c). */
#ifndef FP8KV_GEN_BLOCKS_H
#define FP8KV_GEN_BLOCKS_H

#include <stdio.h>

#include "manifest.h"

/* fp8kv_gen_blocks: writes blocks/<format>/ for every block format (decode tables, encode
 * cases with the codes of every rule and model) and records them in m; log (may be NULL) gets
 * a line per rule. 0 or FP8KV_ERR. */
int fp8kv_gen_blocks(struct fp8kv_manifest *m, FILE *log);

#endif
