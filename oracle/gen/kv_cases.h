/* kv_cases.h — the golden paged KV-cache cases (store, gather + dequant, attention). */
#ifndef FP8KV_GEN_KV_CASES_H
#define FP8KV_GEN_KV_CASES_H

#include "fp8kv/spec.h"
#include "manifest.h"

/* fp8kv_gen_kv_cases: writes <profile>/kv/case<N>_*.npy for every KV case of profile p (inputs,
 * expected cache bytes, gather outputs and attention output; vectors/README.md lists the
 * files) and records them in m under set "kv". 0 or FP8KV_ERR. */
int fp8kv_gen_kv_cases(struct fp8kv_manifest *m, const struct fp8kv_profile *p);

#endif
