/* fp8kv/gen.h — the golden vector generator (`fp8kv gen`).
 *
 * Writes, for every profile of the descriptor table, the vector sets of docs/DESIGN.md §3 into
 * DIR/<profile>/, then DIR/MANIFEST.json and DIR/SHA256SUMS (vectors/README.md documents the
 * files). Generation is deterministic: the same generator and MPFR give byte-identical files.
 */
#ifndef FP8KV_GEN_H
#define FP8KV_GEN_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fp8kv_generate: writes the whole vector tree into dir (created if missing; existing files
 * of the tree are replaced, each atomically). Progress lines go to log if not NULL. Returns
 * 0 or FP8KV_ERR naming what failed. */
int fp8kv_generate(const char *dir, FILE *log);

/* fp8kv_generate_check: regenerates into a fresh temporary directory and compares it with
 * dir file by file, byte by byte: every difference, missing or extra file is logged.
 * Returns 0 when identical, 1 when they differ (message names the first file), FP8KV_ERR
 * when generation itself failed. The temporary directory is removed. */
int fp8kv_generate_check(const char *dir, FILE *log);

#ifdef __cplusplus
}
#endif
#endif
