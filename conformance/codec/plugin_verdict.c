/* codec/plugin_verdict.c — the verdict on a codec plugin (fp8kv/plugin_sweep.h). */
#include "fp8kv/verify.h"
#include "fp8kv/plugin_sweep.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"

const struct fp8kv_profile *fp8kv_plugin_profile(const struct fp8kv_plugin *pl,
                                                 enum fp8kv_inf_policy inf)
{
    const struct fp8kv_plugin_info *info = fp8kv_plugin_info(pl);
    return fp8kv_profile_find(info->format, info->overflow, inf);
}

static int encode_plugin(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                         uint8_t *q)
{
    (void)cfg; /* the plugin's own format, overflow rule and scale model are what is judged */
    return fp8kv_plugin_encode(ctx, omp_get_thread_num(), x, n, s, q);
}

static int decode_plugin(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                         float *y)
{
    (void)cfg;
    return fp8kv_plugin_decode(ctx, omp_get_thread_num(), q, n, s, y);
}

static float *plugin_input_buffer(void *ctx, int thread)
{
    return fp8kv_plugin_input_buffer(ctx, thread);
}

static int plugin_locate_crash(void *ctx, const float *x, size_t n, float s, size_t *index)
{
    return fp8kv_plugin_locate_crash(ctx, x, n, s, index);
}

struct fp8kv_subject fp8kv_plugin_subject(struct fp8kv_plugin *pl)
{
    const struct fp8kv_plugin_info *info = fp8kv_plugin_info(pl);
    struct fp8kv_subject s = {
        .name = info->name,
        .description = "a codec plugin (fp8kv_codec_v1), run in worker processes",
        .caps = FP8KV_CAP_ENCODE | (info->has_decode ? FP8KV_CAP_DECODE : 0u),
        .memory = FP8KV_MEMORY_HOST,
        .claim = {(int)info->format, info->overflow == FP8KV_OVERFLOW_SATFINITE, FP8KV_CLAIM_ANY},
        .ctx = pl,
        .chunk = FP8KV_PLUGIN_CALL,
        .encode = encode_plugin,
        .decode = info->has_decode ? decode_plugin : NULL,
        .input_buffer = plugin_input_buffer,
        .locate_crash = plugin_locate_crash,
    };
    return s;
}

/* The scale model a "scale-<model>" check is about, or -1 for other checks. */
static int model_of_check(const struct fp8kv_check *c)
{
    for (int m = 0; m < FP8KV_MODEL_COUNT; m++)
        if (strncmp(c->name, "scale-", 6) == 0 && strcmp(c->name + 6, fp8kv_model_names[m]) == 0)
            return m;
    return -1;
}

int fp8kv_plugin_sweep(struct fp8kv_plugin *pl, const struct fp8kv_plugin_sweep_options *o,
                       struct fp8kv_plugin_verdict *v)
{
    memset(v, 0, sizeof *v);
    const struct fp8kv_profile *p = fp8kv_plugin_profile(pl, o->inf);
    v->profile = p;
    if (!p) {
        const struct fp8kv_plugin_info *info = fp8kv_plugin_info(pl);
        return fp8kv_fail("plugin %s: no profile of %s with overflow %s and inf %s", info->name,
                          fp8kv_formats[info->format].name, fp8kv_overflow_names[info->overflow],
                          fp8kv_inf_names[o->inf]);
    }
    if (fp8kv_vectors_trust(o->vectors_dir) != 0)
        return FP8KV_ERR;
    uint32_t *bounds = fp8kv_load_boundaries(o->vectors_dir, p);
    if (!bounds)
        return FP8KV_ERR;
    struct fp8kv_sweep_options so = o->sweep;
    if (so.threads <= 0 || so.threads > fp8kv_plugin_workers(pl))
        so.threads = fp8kv_plugin_workers(pl); /* one worker per thread */

    struct fp8kv_check c;
    const struct fp8kv_subject subject = fp8kv_plugin_subject(pl);
    int rc =
        fp8kv_sweep(p, o->check, FP8KV_DOMAIN_F32, bounds, &subject, fp8kv_profile_cfg(p), &so, &c);
    free(bounds);
    if (rc == 0 || rc == FP8KV_ERR_SUBJECT) {
        int add = fp8kv_results_add(&v->results, &c);
        rc = rc ? rc : add;
    }
    const int whole_sets = so.shard.index == 0; /* the vector sets: shard 0's */
    if (rc == 0 && whole_sets)
        rc = fp8kv_check_encoder_vectors(o->vectors_dir, p, o->check, &subject, &v->results);
    if (rc == 0 && whole_sets && fp8kv_subject_can(&subject, FP8KV_CAP_DECODE))
        rc = fp8kv_check_decoder_vectors(o->vectors_dir, p, o->check, &subject, &v->results);
    fp8kv_plugin_verdict_tally(v, o->model);
    v->conformant = rc == 0 && fp8kv_results_passed(&v->results);
    return rc;
}

void fp8kv_plugin_verdict_tally(struct fp8kv_plugin_verdict *v, enum fp8kv_scale_model model)
{
    v->inputs = v->mismatches = 0;
    v->models_matched = v->models_matched_but_nan = 0;
    /* the scale pairs gate under the chosen model only; the others say what the plugin does */
    for (size_t i = 0; i < v->results.count; i++) {
        struct fp8kv_check *k = &v->results.items[i];
        int m = model_of_check(k);
        if (m >= 0 && k->mismatches == 0 && k->cases > 0)
            v->models_matched |= 1u << m;
        if (m >= 0 && k->mismatches == k->class_mismatches[FP8KV_CLASS_NAN] && k->cases > 0)
            v->models_matched_but_nan |= 1u << m; /* wrong only where the quotient is a NaN */
        if (m >= 0 && m != (int)model)
            k->gated = 0;
        if (k->gated) {
            v->inputs += k->cases;
            v->mismatches += k->mismatches;
        }
    }
}
