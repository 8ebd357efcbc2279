/* plugin_sweep.c — the verdict on a codec plugin (fp8kv/plugin_sweep.h). */
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

static int sweep_encode(void *ctx, const float *x, size_t n, float s, uint8_t *q)
{
    return fp8kv_plugin_encode(ctx, omp_get_thread_num(), x, n, s, q);
}

static int vector_encode(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                         uint8_t *q)
{
    (void)cfg; /* the plugin's own scale model is what is judged */
    return fp8kv_plugin_encode(ctx, omp_get_thread_num(), x, n, s, q);
}

static int vector_decode(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                         float *y)
{
    (void)cfg;
    return fp8kv_plugin_decode(ctx, omp_get_thread_num(), q, n, s, y);
}

static float *sweep_input_buffer(void *ctx, int thread)
{
    return fp8kv_plugin_input_buffer(ctx, thread);
}

struct fp8kv_sweep_subject fp8kv_plugin_sweep_subject(struct fp8kv_plugin *pl)
{
    struct fp8kv_sweep_subject s = {.name = fp8kv_plugin_info(pl)->name, .ctx = pl,
                                    .encode = sweep_encode, .chunk = FP8KV_PLUGIN_CALL,
                                    .input_buffer = sweep_input_buffer};
    return s;
}

struct fp8kv_encoder_subject fp8kv_plugin_encoder_subject(struct fp8kv_plugin *pl)
{
    struct fp8kv_encoder_subject s = {fp8kv_plugin_info(pl)->name, pl, vector_encode};
    return s;
}

struct fp8kv_decoder_subject fp8kv_plugin_decoder_subject(struct fp8kv_plugin *pl)
{
    struct fp8kv_decoder_subject s = {fp8kv_plugin_info(pl)->name, pl, vector_decode};
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
    uint32_t *bounds = fp8kv_load_boundaries(o->vectors_dir, p);
    if (!bounds)
        return FP8KV_ERR;
    struct fp8kv_sweep_options so = o->sweep;
    if (so.threads <= 0 || so.threads > fp8kv_plugin_workers(pl))
        so.threads = fp8kv_plugin_workers(pl); /* one worker per thread */

    struct fp8kv_check c;
    struct fp8kv_sweep_subject sweep = fp8kv_plugin_sweep_subject(pl);
    int rc = fp8kv_sweep(p, o->check, FP8KV_SWEEP_F32, bounds, &sweep, &so, &c);
    free(bounds);
    if (rc == 0 || rc == FP8KV_ERR_SUBJECT) {
        int add = fp8kv_results_add(&v->results, &c);
        rc = rc ? rc : add;
    }
    struct fp8kv_encoder_subject enc = fp8kv_plugin_encoder_subject(pl);
    if (rc == 0)
        rc = fp8kv_check_encoder_vectors(o->vectors_dir, p, o->check, &enc, &v->results);
    if (rc == 0 && fp8kv_plugin_info(pl)->has_decode) {
        struct fp8kv_decoder_subject dec = fp8kv_plugin_decoder_subject(pl);
        rc = fp8kv_check_decoder_subject(o->vectors_dir, p, &dec, &v->results);
    }

    /* the scale pairs gate under the chosen model only; the others say what the plugin does */
    for (size_t i = 0; i < v->results.count; i++) {
        struct fp8kv_check *k = &v->results.items[i];
        int m = model_of_check(k);
        if (m >= 0 && k->mismatches == 0 && k->cases > 0)
            v->models_matched |= 1u << m;
        if (m >= 0 && m != (int)o->model)
            k->gated = 0;
        if (k->gated) {
            v->inputs += k->cases;
            v->mismatches += k->mismatches;
        }
    }
    v->conformant = rc == 0 && fp8kv_results_passed(&v->results);
    return rc;
}
