/* fp8kv/audit.h — an exhaustive diff of two codecs, judged by the oracle.
 *
 * A codec change is audited before it merges: the baseline and the candidate encode every
 * f32, f16 and bf16 input (scale 1) and every store-with-scale pair of the golden vectors;
 * each input whose byte changed is counted per input class and sorted by who the oracle
 * agrees with (the certified boundaries for the domains, the pair's expected code under the
 * chosen scale model for the pairs), with the first examples of each class in input order (a
 * pair's class is its quotient's).
 */
#ifndef FP8KV_AUDIT_H
#define FP8KV_AUDIT_H

#include "fp8kv/checks.h"
#include "fp8kv/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One input set of an audit. */
struct fp8kv_audit_set {
    char name[32]; /* "f32", "f16", "bf16", "scale-f32_div" */
    uint64_t inputs, changed;
    uint64_t changed_by_class[FP8KV_CLASS_COUNT];
    uint64_t baseline_right, candidate_right, both_right, neither_right; /* of the changed */
    struct fp8kv_examples kept; /* the first few changes of each class, adjacent ones folded
                                   (checks.h): got the baseline's code, other the candidate's,
                                   note who is right */
    int examples;               /* their lines (fp8kv_audit_set_lines) */
    char example[FP8KV_MAX_FAILURE_LINES][FP8KV_FAILURE_LINE_SIZE]; /* "input => baseline bb
                                     candidate cc  expected ee  class  (who is right)" */
};

struct fp8kv_audit {
    struct fp8kv_audit_set sets[FP8KV_DOMAIN_COUNT + 1];
    int nsets;
    uint64_t inputs, changed, baseline_right, candidate_right, both_right, neither_right;
    double seconds;
};

/* fp8kv_audit_codecs: audits candidate against baseline under profile p (boundaries from
 * dir), NaN check `check`, with the pairs judged under `model` (cfg passed to the subjects is
 * fp8kv_model_cfg(p, model): exact is refused). Under opt->shard, the slice of each domain
 * (fp8kv_sweep_range), and the pairs in shard 0 only (they take a moment). Returns 0, FP8KV_ERR
 * (vectors, memory, model), or a subject's negative status (FP8KV_ERR_SUBJECT: a plugin crashed or
 * hung). */
int fp8kv_audit_codecs(const char *dir, const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                       enum fp8kv_scale_model model, const struct fp8kv_subject *baseline,
                       const struct fp8kv_subject *candidate, const struct fp8kv_sweep_options *opt,
                       struct fp8kv_audit *out);

/* fp8kv_audit_set_lines: writes s->example from s->kept. */
void fp8kv_audit_set_lines(struct fp8kv_audit_set *s);

/* fp8kv_audit_totals: a's totals (inputs, changed and who is right) summed over its sets. */
void fp8kv_audit_totals(struct fp8kv_audit *a);

/* fp8kv_audit_merge_shard: adds `next`, the audit of the following shard, to `into` (the shards
 * before it, merged): each set of next is summed into the set of its name in into (its examples
 * folded in input order, fp8kv/shard.h), a set into lacks is appended; totals recomputed;
 * seconds: the longer. FP8KV_ERR when a set does not fit. */
int fp8kv_audit_merge_shard(struct fp8kv_audit *into, const struct fp8kv_audit *next);

/* fp8kv_audit_verdict: "identical" (nothing changed), "improved" (the candidate agrees with
 * the oracle on every changed input) or "regressed" (somewhere it changed, it does not). */
const char *fp8kv_audit_verdict(const struct fp8kv_audit *a);

#ifdef __cplusplus
}
#endif
#endif
