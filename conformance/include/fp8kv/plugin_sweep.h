/* fp8kv/plugin_sweep.h — the whole verdict on a codec plugin: `fp8kv sweep --plugin`.
 *
 * The plugin's descriptor names its format and overflow rule; with the Inf policy given by
 * the user that picks the profile. The plugin is then judged on every set that applies: the
 * exhaustive 2^32 f32 sweep at scale 1, the edges, every f16 and bf16 input widened to f32,
 * the store-with-scale pairs (gated under one scale model; the others are reported, to say
 * which models the plugin computes), and, when it has decode_f32, the decode and read sets.
 */
#ifndef FP8KV_PLUGIN_SWEEP_H
#define FP8KV_PLUGIN_SWEEP_H

#include <stdio.h>

#include "fp8kv/checks.h"
#include "fp8kv/codec_plugin_host.h"
#include "fp8kv/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fp8kv_plugin_sweep_options {
    const char *vectors_dir;
    enum fp8kv_scale_model model; /* the scale model the scale pairs are gated under */
    enum fp8kv_nan_check check;
    enum fp8kv_inf_policy inf;        /* what +-Inf gives under satfinite */
    struct fp8kv_sweep_options sweep; /* threads (<= the plugin's workers), progress, limit,
                                         shard (the f32 sweep's slice; the vector sets are
                                         judged in shard 0 only) */
};

struct fp8kv_plugin_verdict {
    const struct fp8kv_profile *profile;
    struct fp8kv_results results;    /* one check per set, in the order above */
    uint64_t inputs, mismatches;     /* over the gated sets */
    unsigned models_matched;         /* bit m: the scale pairs agree with model m exactly */
    unsigned models_matched_but_nan; /* bit m: they agree with model m wherever the oracle's
                                        code is not a NaN (differs from models_matched only
                                        when the NaN codes differ under NaN check strict) */
    int conformant;
};

/* fp8kv_plugin_profile: the profile a plugin implements under Inf policy inf, or NULL where no
 * profile has its format, overflow rule and inf (e5m2 with overflow nan). */
const struct fp8kv_profile *fp8kv_plugin_profile(const struct fp8kv_plugin *pl,
                                                 enum fp8kv_inf_policy inf);

/* fp8kv_plugin_subject: pl as a subject (encode, and decode when it has decode_f32; it claims
 * its descriptor's format and overflow rule). An OpenMP thread uses the worker of its number;
 * the codec configuration is ignored: the plugin applies its own rules and scale model. */
struct fp8kv_subject fp8kv_plugin_subject(struct fp8kv_plugin *pl);

/* fp8kv_plugin_verdict_tally: v's gating and totals from its results: the scale pairs gate
 * under `model` only (the others are reported), models_matched and models_matched_but_nan from
 * them, inputs and mismatches summed over the gated checks. conformant is the caller's. */
void fp8kv_plugin_verdict_tally(struct fp8kv_plugin_verdict *v, enum fp8kv_scale_model model);

/* fp8kv_plugin_sweep: judges pl on every set that applies and fills v (free v->results with
 * fp8kv_results_free). Returns 0; FP8KV_ERR when the vectors cannot be read; or
 * FP8KV_ERR_SUBJECT when the plugin crashed or hung (v holds what was judged before). */
int fp8kv_plugin_sweep(struct fp8kv_plugin *pl, const struct fp8kv_plugin_sweep_options *o,
                       struct fp8kv_plugin_verdict *v);

#ifdef __cplusplus
}
#endif
#endif
