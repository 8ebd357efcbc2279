/* intq.h — the generator's integer block-format vectors (intq.c). */
#ifndef FP8KV_GEN_INTQ_H
#define FP8KV_GEN_INTQ_H

#include <stdio.h>

#include "manifest.h"

/* fp8kv_gen_intq: writes intq/<format>/ for every integer block format of fp8kv/intq.h (encode
 * cases with their expected scales and codes, a decode table) and records them in m; log (may be
 * NULL) gets a line per format. 0 or FP8KV_ERR. */
int fp8kv_gen_intq(struct fp8kv_manifest *m, FILE *log);

#endif
