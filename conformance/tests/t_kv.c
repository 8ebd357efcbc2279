/* t_kv.c — the KV-cache checks: the CPU reference passes every golden case of every profile,
 * and deliberately broken targets (padding written, f16/bf16 reads truncated, the wrong
 * layout, the wrong GQA head mapping, low-precision attention, another store scale model)
 * fail the check that should catch them and no other. Also: missing vectors are an error, and
 * the quantization NMSE is in a sane range and never gates. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/checks.h"
#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/verify.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"
#define MIN_CASES 4
#define CHECKS_PER_CASE 5 /* store, read f32/f16/bf16, attention */

/* ---- helpers --------------------------------------------------------------------------------- */

/* A KV target under test: the CPU reference paths' signatures (fp8kv/kv_cache.h), some of
 * them replaced by broken ones. */
struct kv_paths {
    const char *name;
    int (*store)(struct fp8kv_codec_cfg, const struct fp8kv_cache_shape *, enum fp8kv_kv_dtype,
                 const void *, const void *, int, const int64_t *, const struct fp8kv_kv_scales *,
                 const struct fp8kv_kv_scales *, uint8_t *, uint8_t *);
    int (*gather)(struct fp8kv_codec_cfg, const struct fp8kv_cache_shape *, int, const uint8_t *,
                  const int32_t *, int, const int32_t *, int, const struct fp8kv_kv_scales *,
                  enum fp8kv_kv_dtype, void *);
    int (*attention)(struct fp8kv_codec_cfg, const struct fp8kv_cache_shape *, const float *, int,
                     const uint8_t *, const uint8_t *, const int32_t *, int, const int32_t *, int,
                     const struct fp8kv_kv_scales *, const struct fp8kv_kv_scales *, float,
                     float *);
};

static const struct kv_paths cpu_paths = {"cpu-reference", fp8kv_cpu_reshape_and_cache,
                                          fp8kv_cpu_gather_dequant, fp8kv_cpu_paged_attention};

/* The ABI entry points (fp8kv/kv_plugin.h) of a kv_paths (ctx), storing with f32_div. */
static int store_of(void *ctx, const struct fp8kv_kv_store_args_v1 *a)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(a->cache);
    const struct fp8kv_kv_scales ks =
        fp8kv_kv_abi_scales(a->cache, a->k_scale, a->k_head_scales, NULL, a->k_scale_cache);
    const struct fp8kv_kv_scales vs =
        fp8kv_kv_abi_scales(a->cache, a->v_scale, a->v_head_scales, NULL, a->v_scale_cache);
    return ((const struct kv_paths *)ctx)
        ->store(fp8kv_kv_abi_cfg(a->cache, FP8KV_CODEC_F32_DIV), &shape,
                (enum fp8kv_kv_dtype)a->in_dtype, a->key, a->value, a->num_tokens, a->slot_mapping,
                &ks, &vs, a->key_cache, a->value_cache);
}

static int gather_of(void *ctx, const struct fp8kv_kv_gather_args_v1 *a)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(a->cache);
    const struct fp8kv_kv_scales s =
        fp8kv_kv_abi_scales(a->cache, a->scale, a->head_scales, a->scale_cache, NULL);
    return ((const struct kv_paths *)ctx)
        ->gather(fp8kv_kv_abi_cfg(a->cache, FP8KV_CODEC_F32_DIV), &shape, a->is_key, a->cache_data,
                 a->block_table, a->max_blocks_per_seq, a->seq_lens, a->num_seqs, &s,
                 (enum fp8kv_kv_dtype)a->out_dtype, a->out);
}

static int attention_of(void *ctx, const struct fp8kv_kv_attention_args_v1 *a)
{
    const struct fp8kv_cache_shape shape = fp8kv_kv_abi_shape(a->cache);
    const struct fp8kv_kv_scales ks =
        fp8kv_kv_abi_scales(a->cache, a->k_scale, a->k_head_scales, a->k_scale_cache, NULL);
    const struct fp8kv_kv_scales vs =
        fp8kv_kv_abi_scales(a->cache, a->v_scale, a->v_head_scales, a->v_scale_cache, NULL);
    return ((const struct kv_paths *)ctx)
        ->attention(fp8kv_kv_abi_cfg(a->cache, FP8KV_CODEC_F32_DIV), &shape, a->query,
                    a->num_q_heads, a->key_cache, a->value_cache, a->block_table,
                    a->max_blocks_per_seq, a->seq_lens, a->num_seqs, &ks, &vs, a->softmax_scale,
                    a->out);
}

/* The CPU target's own KV subject, from its subject table. */
static const struct fp8kv_subject *cpu_reference(void)
{
    const struct fp8kv_subject *s =
        fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, "cpu-reference",
                           FP8KV_CAP_STORE | FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION);
    cr_assert_not_null(s, "the CPU subject table has no cpu-reference KV subject");
    return s;
}

/* paths as a subject with store, gather and attention: KV-ABI kernels (into *kernels, which
 * must outlive the subject) over host memory. */
static struct fp8kv_subject subject_of(const struct kv_paths *paths,
                                       struct fp8kv_kv_kernels_v1 *kernels)
{
    *kernels = (struct fp8kv_kv_kernels_v1){
        FP8KV_KV_ABI_VERSION, paths->name,   NULL,     NULL,      NULL,
        FP8KV_KV_MEMORY_HOST, (void *)paths, store_of, gather_of, attention_of,
        FP8KV_KV_SCALES_ALL,  "f32",         0,        0,         0};
    struct fp8kv_subject s = {.name = paths->name,
                              .caps = FP8KV_CAP_STORE | FP8KV_CAP_GATHER | FP8KV_CAP_ATTENTION,
                              .claim = FP8KV_CLAIM_ALL,
                              .kv = kernels};
    return s;
}

static void run_kv(const struct fp8kv_profile *p, const struct kv_paths *paths,
                   struct fp8kv_results *r)
{
    memset(r, 0, sizeof *r);
    struct fp8kv_kv_kernels_v1 kernels;
    const struct fp8kv_subject subject = subject_of(paths, &kernels);
    cr_assert_eq(fp8kv_check_kv(VECTORS, p, &subject, r), 0, "%s: %s", p->name, fp8kv_last_error());
    cr_assert_geq(r->count, MIN_CASES * CHECKS_PER_CASE, "%s: only %zu checks", p->name, r->count);
    cr_assert_eq(r->count % CHECKS_PER_CASE, 0);
}

static int is_nhd(const struct fp8kv_check *c)
{
    return strstr(c->detail, ": nhd,") != NULL;
}

static int kv_heads(const struct fp8kv_check *c)
{
    int heads = 0;
    const char *s = strstr(c->detail, " in, ");
    cr_assert(s && sscanf(s, " in, %d x", &heads) == 1, "%s", c->detail);
    return heads;
}

/* Whether the case's cache bytes sit where NHD puts them: NHD, or HND with one kv head. */
static int placed_as_nhd(const struct fp8kv_check *c)
{
    return is_nhd(c) || (strstr(c->detail, ": hnd,") != NULL && kv_heads(c) == 1);
}

static int is_gqa(const struct fp8kv_check *c)
{
    int heads = 0, head_size = 0, q_heads = 0;
    const char *s = strstr(c->detail, " in, ");
    cr_assert_not_null(s, "%s", c->detail);
    cr_assert_eq(sscanf(s, " in, %d x %d heads (q %d)", &heads, &head_size, &q_heads), 3, "%s",
                 c->detail);
    return q_heads != heads && heads > 1; /* with one kv head every mapping is right */
}

static void print_failures(const struct fp8kv_check *c)
{
    fprintf(stderr, "%s [%s] %s: %llu of %llu mismatched, nmse %g\n", c->name, c->profile,
            c->detail, (unsigned long long)c->mismatches, (unsigned long long)c->cases, c->nmse);
    for (int i = 0; i < c->failure_lines; i++)
        fprintf(stderr, "  %s\n", c->failures[i]);
}

/* expect: check c passed exactly when should_pass says. */
static void expect(const struct fp8kv_check *c, int should_pass)
{
    if (c->passed != should_pass)
        print_failures(c);
    cr_assert_eq(c->passed, should_pass, "%s %s (%s): passed %d, expected %d", c->name, c->detail,
                 c->profile, c->passed, should_pass);
    if (!should_pass)
        cr_assert_gt(c->failure_lines, 0, "%s failed without a failure line", c->name);
}

/* ---- the reference passes -------------------------------------------------------------------- */

Test(kv, cpu_reference_passes_every_case_of_every_profile)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        struct fp8kv_results r;
        run_kv(&fp8kv_profiles[i], &cpu_paths, &r);
        int split_x = 0, hnd = 0, nhd = 0, gqa = 0;
        for (size_t k = 0; k < r.count; k++) {
            const struct fp8kv_check *c = &r.items[k];
            expect(c, 1);
            cr_assert(c->gated);
            cr_assert_gt(c->cases, 0);
            cr_assert_str_eq(c->subject, "cpu-reference");
            if (strncmp(c->name, "kv-read-", 8) == 0)
                cr_assert(c->has_nmse && c->nmse == 0.0 && c->threshold == 0.0);
            if (strcmp(c->name, "kv-attention") == 0) {
                cr_assert(c->has_nmse && c->threshold == 1e-10);
                split_x += strstr(c->detail, ": split_x,") != NULL;
                hnd += strstr(c->detail, ": hnd,") != NULL;
                nhd += is_nhd(c);
                gqa += is_gqa(c);
            }
        }
        cr_assert(split_x > 0 && hnd > 0 && nhd > 0 && gqa > 0, "cases lack a layout or GQA");
        cr_assert(fp8kv_results_passed(&r));
        fp8kv_results_free(&r);
    }
}

/* ---- broken targets -------------------------------------------------------------------------- */

/* A store that sends padding (-1) to the last slot of the cache, as a Python-style negative
 * index would. */
static int store_padding_at_end(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                enum fp8kv_kv_dtype in, const void *key, const void *value,
                                int num_tokens, const int64_t *slot_mapping,
                                const struct fp8kv_kv_scales *k_scale,
                                const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                                uint8_t *value_cache)
{
    int64_t *slots = malloc((size_t)num_tokens * sizeof *slots + 1);
    cr_assert_not_null(slots);
    for (int t = 0; t < num_tokens; t++)
        slots[t] = slot_mapping[t] == -1 ? (int64_t)shape->num_blocks * shape->block_size - 1
                                         : slot_mapping[t];
    fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, num_tokens, slots, k_scale, v_scale,
                                key_cache, value_cache);
    free(slots);
    return 0;
}

Test(kv, padding_written_fails_only_the_store)
{
    const struct kv_paths broken = {"padding-at-end", store_padding_at_end,
                                    fp8kv_cpu_gather_dequant, fp8kv_cpu_paged_attention};
    struct fp8kv_results r;
    run_kv(&fp8kv_profiles[0], &broken, &r);
    for (size_t k = 0; k < r.count; k++) {
        const struct fp8kv_check *c = &r.items[k];
        const int is_store = strcmp(c->name, "kv-store") == 0;
        expect(c, !is_store); /* every case has padding tokens */
        if (is_store)
            cr_assert(strstr(c->failures[0], "no token") && strstr(c->failures[0], "(unwritten)"),
                      "%s", c->failures[0]);
    }
    cr_assert_not(fp8kv_results_passed(&r));
    fp8kv_results_free(&r);
}

/* f16 rounded toward zero: RNE, then one step down in magnitude where that overshot. */
static uint16_t f16_toward_zero(float y)
{
    uint16_t h = fp8kv_f32_to_f16_rne(y);
    if (isfinite(y) && (h & 0x7FFFu) != 0 && fabsf(fp8kv_f16_to_f32(h)) > fabsf(y))
        h--;
    return h;
}

/* A read that truncates to f16/bf16 instead of rounding to nearest even. */
static int gather_truncating(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                             int is_key, const uint8_t *cache, const int32_t *block_table,
                             int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                             const struct fp8kv_kv_scales *scale, enum fp8kv_kv_dtype out,
                             void *dst)
{
    if (out == FP8KV_KV_F32) {
        return fp8kv_cpu_gather_dequant(cfg, shape, is_key, cache, block_table, max_blocks_per_seq,
                                        seq_lens, num_seqs, scale, out, dst);
    }
    size_t n = 0;
    for (int i = 0; i < num_seqs; i++)
        n += (size_t)seq_lens[i] * (size_t)shape->num_heads * (size_t)shape->head_size;
    float *y = malloc(n * sizeof *y + 1);
    cr_assert_not_null(y);
    fp8kv_cpu_gather_dequant(cfg, shape, is_key, cache, block_table, max_blocks_per_seq, seq_lens,
                             num_seqs, scale, FP8KV_KV_F32, y);
    uint16_t *h = dst;
    for (size_t i = 0; i < n; i++)
        h[i] = out == FP8KV_KV_F16 ? f16_toward_zero(y[i]) : (uint16_t)(fp8kv_f32_bits(y[i]) >> 16);
    free(y);
    return 0;
}

Test(kv, truncating_reads_fail_only_the_16_bit_reads)
{
    const struct kv_paths broken = {"truncating-read", fp8kv_cpu_reshape_and_cache,
                                    gather_truncating, fp8kv_cpu_paged_attention};
    struct fp8kv_results r;
    run_kv(&fp8kv_profiles[0], &broken, &r);
    for (size_t k = 0; k < r.count; k++) {
        const struct fp8kv_check *c = &r.items[k];
        const int is_16 =
            strcmp(c->name, "kv-read-f16") == 0 || strcmp(c->name, "kv-read-bf16") == 0;
        expect(c, !is_16);
        if (is_16)
            cr_assert_gt(c->nmse, 0.0);
    }
    fp8kv_results_free(&r);
}

/* Paths that lay every cache out as NHD, whatever the shape says (split-x and HND caches). */
static struct fp8kv_cache_shape as_nhd(const struct fp8kv_cache_shape *shape)
{
    struct fp8kv_cache_shape s = *shape;
    s.layout = FP8KV_LAYOUT_NHD;
    return s;
}

static int store_nhd(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                     enum fp8kv_kv_dtype in, const void *key, const void *value, int num_tokens,
                     const int64_t *slot_mapping, const struct fp8kv_kv_scales *k_scale,
                     const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                     uint8_t *value_cache)
{
    const struct fp8kv_cache_shape s = as_nhd(shape);
    fp8kv_cpu_reshape_and_cache(cfg, &s, in, key, value, num_tokens, slot_mapping, k_scale, v_scale,
                                key_cache, value_cache);
    return 0;
}

static int gather_nhd(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape, int is_key,
                      const uint8_t *cache, const int32_t *block_table, int max_blocks_per_seq,
                      const int32_t *seq_lens, int num_seqs, const struct fp8kv_kv_scales *scale,
                      enum fp8kv_kv_dtype out, void *dst)
{
    const struct fp8kv_cache_shape s = as_nhd(shape);
    fp8kv_cpu_gather_dequant(cfg, &s, is_key, cache, block_table, max_blocks_per_seq, seq_lens,
                             num_seqs, scale, out, dst);
    return 0;
}

static int attention_nhd(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                         const float *query, int num_q_heads, const uint8_t *key_cache,
                         const uint8_t *value_cache, const int32_t *block_table,
                         int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                         const struct fp8kv_kv_scales *k_scale,
                         const struct fp8kv_kv_scales *v_scale, float softmax_scale, float *out)
{
    const struct fp8kv_cache_shape s = as_nhd(shape);
    fp8kv_cpu_paged_attention(cfg, &s, query, num_q_heads, key_cache, value_cache, block_table,
                              max_blocks_per_seq, seq_lens, num_seqs, k_scale, v_scale,
                              softmax_scale, out);
    return 0;
}

Test(kv, wrong_layout_fails_every_split_x_and_hnd_check)
{
    const struct kv_paths broken = {"nhd-only", store_nhd, gather_nhd, attention_nhd};
    for (int i = 0; i < fp8kv_profile_count; i++) {
        struct fp8kv_results r;
        run_kv(&fp8kv_profiles[i], &broken, &r);
        for (size_t k = 0; k < r.count; k++)
            expect(&r.items[k], placed_as_nhd(&r.items[k]));
        fp8kv_results_free(&r);
    }
}

/* Attention that maps q head qh to kv head qh % num_heads (instead of qh / group): right for
 * MHA, wrong for GQA. Built from the reference by running each group slice as MHA. */
static int attention_modulo_heads(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                  const float *query, int num_q_heads, const uint8_t *key_cache,
                                  const uint8_t *value_cache, const int32_t *block_table,
                                  int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                                  const struct fp8kv_kv_scales *k_scale,
                                  const struct fp8kv_kv_scales *v_scale, float softmax_scale,
                                  float *out)
{
    const size_t H = (size_t)shape->num_heads, D = (size_t)shape->head_size;
    const size_t slice = (size_t)num_seqs * H * D;
    float *q = malloc(slice * sizeof *q), *o = malloc(slice * sizeof *o);
    cr_assert(q && o);
    for (size_t j = 0; j < (size_t)num_q_heads / H; j++) {
        for (size_t i = 0; i < (size_t)num_seqs; i++)
            memcpy(q + i * H * D, query + (i * (size_t)num_q_heads + j * H) * D, H * D * sizeof *q);
        fp8kv_cpu_paged_attention(cfg, shape, q, (int)H, key_cache, value_cache, block_table,
                                  max_blocks_per_seq, seq_lens, num_seqs, k_scale, v_scale,
                                  softmax_scale, o);
        for (size_t i = 0; i < (size_t)num_seqs; i++)
            memcpy(out + (i * (size_t)num_q_heads + j * H) * D, o + i * H * D, H * D * sizeof *o);
    }
    free(q);
    free(o);
    return 0;
}

Test(kv, wrong_gqa_mapping_fails_only_gqa_attention)
{
    const struct kv_paths broken = {"gqa-modulo", fp8kv_cpu_reshape_and_cache,
                                    fp8kv_cpu_gather_dequant, attention_modulo_heads};
    struct fp8kv_results r;
    run_kv(&fp8kv_profiles[0], &broken, &r);
    int failed = 0;
    for (size_t k = 0; k < r.count; k++) {
        const struct fp8kv_check *c = &r.items[k];
        const int wrong = strcmp(c->name, "kv-attention") == 0 && is_gqa(c);
        expect(c, !wrong);
        failed += wrong;
    }
    cr_assert_gt(failed, 0);
    fp8kv_results_free(&r);
}

/* Attention whose outputs are rounded to bf16: about 2^-9 relative error, far above the
 * 1e-10 NMSE threshold, though every output is "close". */
static int attention_bf16_out(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                              const float *query, int num_q_heads, const uint8_t *key_cache,
                              const uint8_t *value_cache, const int32_t *block_table,
                              int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                              const struct fp8kv_kv_scales *k_scale,
                              const struct fp8kv_kv_scales *v_scale, float softmax_scale,
                              float *out)
{
    fp8kv_cpu_paged_attention(cfg, shape, query, num_q_heads, key_cache, value_cache, block_table,
                              max_blocks_per_seq, seq_lens, num_seqs, k_scale, v_scale,
                              softmax_scale, out);
    const size_t n = (size_t)num_seqs * (size_t)num_q_heads * (size_t)shape->head_size;
    for (size_t i = 0; i < n; i++)
        out[i] = fp8kv_bf16_to_f32(fp8kv_f32_to_bf16_rne(out[i]));
    return 0;
}

Test(kv, low_precision_attention_fails_the_nmse_threshold)
{
    const struct kv_paths broken = {"bf16-attention", fp8kv_cpu_reshape_and_cache,
                                    fp8kv_cpu_gather_dequant, attention_bf16_out};
    struct fp8kv_results r;
    run_kv(&fp8kv_profiles[0], &broken, &r);
    for (size_t k = 0; k < r.count; k++) {
        const struct fp8kv_check *c = &r.items[k];
        const int attention = strcmp(c->name, "kv-attention") == 0;
        expect(c, !attention);
        if (attention)
            cr_assert(c->nmse > 1e-10 && c->nmse < 1e-3, "nmse %g", c->nmse);
    }
    fp8kv_results_free(&r);
}

/* Stores under the reciprocal and f16 models differ from f32_div on some of the midpoint
 * inputs: the store check tells the models apart, and only it fails. */
static int store_model(struct fp8kv_codec_cfg cfg, enum fp8kv_codec_model model,
                       const struct fp8kv_cache_shape *shape, enum fp8kv_kv_dtype in,
                       const void *key, const void *value, int num_tokens,
                       const int64_t *slot_mapping, const struct fp8kv_kv_scales *k_scale,
                       const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                       uint8_t *value_cache)
{
    cfg.model = model;
    fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, num_tokens, slot_mapping, k_scale,
                                v_scale, key_cache, value_cache);
    return 0;
}

static int store_recip(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                       enum fp8kv_kv_dtype in, const void *key, const void *value, int num_tokens,
                       const int64_t *slot_mapping, const struct fp8kv_kv_scales *k_scale,
                       const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                       uint8_t *value_cache)
{
    store_model(cfg, FP8KV_CODEC_F32_MUL_RECIP, shape, in, key, value, num_tokens, slot_mapping,
                k_scale, v_scale, key_cache, value_cache);
    return 0;
}

static int store_f16(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                     enum fp8kv_kv_dtype in, const void *key, const void *value, int num_tokens,
                     const int64_t *slot_mapping, const struct fp8kv_kv_scales *k_scale,
                     const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                     uint8_t *value_cache)
{
    store_model(cfg, FP8KV_CODEC_F16_DIV, shape, in, key, value, num_tokens, slot_mapping, k_scale,
                v_scale, key_cache, value_cache);
    return 0;
}

Test(kv, other_scale_models_fail_the_store)
{
    const struct kv_paths targets[] = {
        {"mul-recip-store", store_recip, fp8kv_cpu_gather_dequant, fp8kv_cpu_paged_attention},
        {"f16-div-store", store_f16, fp8kv_cpu_gather_dequant, fp8kv_cpu_paged_attention},
    };
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++)
        for (int i = 0; i < fp8kv_profile_count; i++) {
            struct fp8kv_results r;
            run_kv(&fp8kv_profiles[i], &targets[t], &r);
            int store_failed = 0;
            for (size_t k = 0; k < r.count; k++) {
                const struct fp8kv_check *c = &r.items[k];
                if (strcmp(c->name, "kv-store") == 0)
                    store_failed += !c->passed;
                else
                    expect(c, 1);
            }
            cr_assert_gt(store_failed, 0, "%s passes every store of %s", targets[t].name,
                         fp8kv_profiles[i].name);
            fp8kv_results_free(&r);
        }
}

/* A store that rounds ties away from zero: RNE, then one code up in magnitude where the
 * quotient sat exactly on the midpoint and RNE went toward zero. */
static int store_ties_away(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                           enum fp8kv_kv_dtype in, const void *key, const void *value,
                           int num_tokens, const int64_t *slot_mapping,
                           const struct fp8kv_kv_scales *k_scale,
                           const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                           uint8_t *value_cache)
{
    fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, num_tokens, slot_mapping, k_scale,
                                v_scale, key_cache, value_cache);
    const size_t H = (size_t)shape->num_heads, D = (size_t)shape->head_size;
    for (int t = 0; t < num_tokens; t++) {
        if (slot_mapping[t] < 0)
            continue;
        for (size_t e = 0; e < H * D; e++)
            for (int is_key = 0; is_key < 2; is_key++) {
                const void *src = is_key ? key : value;
                const size_t i = (size_t)t * H * D + e;
                const float x = in == FP8KV_KV_F32 ? ((const float *)src)[i]
                                : in == FP8KV_KV_F16
                                    ? fp8kv_f16_to_f32(((const uint16_t *)src)[i])
                                    : fp8kv_bf16_to_f32(((const uint16_t *)src)[i]);
                const int h = (int)(e / D), d = (int)(e % D);
                struct fp8kv_kv_scales written = *(is_key ? k_scale : v_scale);
                written.cache = written.cache_out; /* per token: the scale just stored */
                const float q = fabsf(x / fp8kv_kv_scale_at(&written, shape, slot_mapping[t], h));
                uint8_t *at = is_key
                                  ? key_cache + fp8kv_key_offset(shape, slot_mapping[t], h, d)
                                  : value_cache + fp8kv_value_offset(shape, slot_mapping[t], h, d);
                const uint8_t mag = *at & 0x7F;
                if (mag >= fp8kv_codec_max_code(cfg))
                    continue;
                const double lo = fp8kv_decode_bits(cfg, mag);
                const double hi = fp8kv_decode_bits(cfg, (uint8_t)(mag + 1));
                if (q > lo && (double)q == (lo + hi) / 2)
                    *at = (uint8_t)(*at + 1);
            }
    }
    return 0;
}

Test(kv, ties_away_store_fails_only_the_store)
{
    const struct kv_paths broken = {"ties-away-store", store_ties_away, fp8kv_cpu_gather_dequant,
                                    fp8kv_cpu_paged_attention};
    for (int i = 0; i < fp8kv_profile_count; i++) {
        struct fp8kv_results r;
        run_kv(&fp8kv_profiles[i], &broken, &r);
        for (size_t k = 0; k < r.count; k++)
            expect(&r.items[k], strcmp(r.items[k].name, "kv-store") != 0);
        fp8kv_results_free(&r);
    }
}

/* ---- scale granularities --------------------------------------------------------------------- */

/* A store that uses head 0's scale for every head (per-head scales). */
static int store_head0(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                       enum fp8kv_kv_dtype in, const void *key, const void *value, int num_tokens,
                       const int64_t *slot_mapping, const struct fp8kv_kv_scales *k_scale,
                       const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                       uint8_t *value_cache)
{
    struct fp8kv_kv_scales k = *k_scale, v = *v_scale;
    float kh[64], vh[64];
    if (k.granularity == FP8KV_SCALE_HEAD) {
        for (int h = 0; h < shape->num_heads && h < 64; h++) {
            kh[h] = k.heads[0];
            vh[h] = v.heads[0];
        }
        k.heads = kh;
        v.heads = vh;
    }
    return fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, num_tokens, slot_mapping, &k, &v,
                                       key_cache, value_cache);
}

static int is_per_head(const struct fp8kv_check *c)
{
    return strstr(c->detail, "scales per head") != NULL;
}

static int is_per_token(const struct fp8kv_check *c)
{
    return strstr(c->detail, "scales per token and head") != NULL;
}

Test(kv, head_0_scale_for_every_head_fails_only_the_per_head_stores)
{
    const struct kv_paths broken = {"head0-store", store_head0, fp8kv_cpu_gather_dequant,
                                    fp8kv_cpu_paged_attention};
    for (int i = 0; i < fp8kv_profile_count; i++) {
        struct fp8kv_results r;
        run_kv(&fp8kv_profiles[i], &broken, &r);
        int failed = 0;
        for (size_t k = 0; k < r.count; k++) {
            const struct fp8kv_check *c = &r.items[k];
            const int wrong = strcmp(c->name, "kv-store") == 0 && is_per_head(c);
            expect(c, !wrong);
            failed += wrong;
        }
        cr_assert_gt(failed, 0, "%s: no per-head case", fp8kv_profiles[i].name);
        fp8kv_results_free(&r);
    }
}

/* A store that stores each row with its scale but leaves the scale cache unwritten. */
static int store_no_scale_cache(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                enum fp8kv_kv_dtype in, const void *key, const void *value,
                                int num_tokens, const int64_t *slot_mapping,
                                const struct fp8kv_kv_scales *k_scale,
                                const struct fp8kv_kv_scales *v_scale, uint8_t *key_cache,
                                uint8_t *value_cache)
{
    struct fp8kv_kv_scales k = *k_scale, v = *v_scale;
    const size_t entries = fp8kv_scale_cache_entries(shape);
    float *scratch = malloc(2 * entries * sizeof *scratch + 1);
    cr_assert_not_null(scratch);
    if (k.granularity == FP8KV_SCALE_TOKEN_HEAD) {
        k.cache_out = scratch;
        v.cache_out = scratch + entries;
    }
    const int rc = fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, num_tokens, slot_mapping,
                                               &k, &v, key_cache, value_cache);
    free(scratch);
    return rc;
}

/* A gather that reads a per-token scale from entry slot (not slot * num_heads + head). */
static int gather_scale_by_slot(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                                int is_key, const uint8_t *cache, const int32_t *block_table,
                                int max_blocks_per_seq, const int32_t *seq_lens, int num_seqs,
                                const struct fp8kv_kv_scales *scale, enum fp8kv_kv_dtype out,
                                void *dst)
{
    struct fp8kv_kv_scales s = *scale;
    float *flat = NULL;
    if (s.granularity == FP8KV_SCALE_TOKEN_HEAD) { /* entry (slot, h) <- entry slot */
        const size_t entries = fp8kv_scale_cache_entries(shape), H = (size_t)shape->num_heads;
        flat = malloc(entries * sizeof *flat);
        cr_assert_not_null(flat);
        for (size_t e = 0; e < entries; e++)
            flat[e] = s.cache[e / H];
        s.cache = flat;
    }
    const int rc = fp8kv_cpu_gather_dequant(cfg, shape, is_key, cache, block_table,
                                            max_blocks_per_seq, seq_lens, num_seqs, &s, out, dst);
    free(flat);
    return rc;
}

Test(kv, per_token_scale_faults_fail_the_check_they_touch)
{
    const struct kv_paths unwritten = {"no-scale-cache", store_no_scale_cache,
                                       fp8kv_cpu_gather_dequant, fp8kv_cpu_paged_attention};
    const struct kv_paths by_slot = {"scale-by-slot", fp8kv_cpu_reshape_and_cache,
                                     gather_scale_by_slot, fp8kv_cpu_paged_attention};
    for (int i = 0; i < fp8kv_profile_count; i++) {
        struct fp8kv_results r;
        run_kv(&fp8kv_profiles[i], &unwritten, &r);
        int failed = 0;
        for (size_t k = 0; k < r.count; k++) {
            const struct fp8kv_check *c = &r.items[k];
            const int wrong = strcmp(c->name, "kv-store") == 0 && is_per_token(c);
            expect(c, !wrong);
            if (wrong)
                cr_assert(strstr(c->failures[0], "_scale_cache[") &&
                              strstr(c->failures[0], "expected"),
                          "%s", c->failures[0]);
            failed += wrong;
        }
        cr_assert_gt(failed, 0);
        fp8kv_results_free(&r);
        run_kv(&fp8kv_profiles[i], &by_slot, &r);
        failed = 0;
        for (size_t k = 0; k < r.count; k++) {
            const struct fp8kv_check *c = &r.items[k];
            const int wrong = strncmp(c->name, "kv-read-", 8) == 0 && is_per_token(c);
            expect(c, !wrong);
            failed += wrong;
        }
        cr_assert_gt(failed, 0);
        fp8kv_results_free(&r);
    }
}

/* Kernels that implement scales per tensor only: the other cases are information rows saying
 * they did not run, never passes; the per-tensor cases are judged as before. */
Test(kv, granularities_a_subject_lacks_are_reported_not_run)
{
    struct fp8kv_kv_kernels_v1 kernels;
    struct fp8kv_subject subject = subject_of(&cpu_paths, &kernels);
    kernels.scale_granularities = FP8KV_KV_SCALES(FP8KV_KV_SCALE_TENSOR);
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_check_kv(VECTORS, &fp8kv_profiles[0], &subject, &r), 0, "%s",
                 fp8kv_last_error());
    int not_run = 0, judged = 0;
    for (size_t k = 0; k < r.count; k++) {
        const struct fp8kv_check *c = &r.items[k];
        if (strcmp(c->name, "kv-case") == 0) {
            cr_assert(is_per_head(c) || is_per_token(c), "%s", c->detail);
            cr_assert(strstr(c->detail, "not run: cpu-reference implements no scales per"), "%s",
                      c->detail);
            cr_assert_eq(fp8kv_check_outcome(c), FP8KV_OUTCOME_INFO);
            cr_assert_eq(c->cases, 0);
            not_run++;
        } else {
            cr_assert(!is_per_head(c) && !is_per_token(c), "%s ran: %s", c->name, c->detail);
            expect(c, 1);
            judged++;
        }
    }
    cr_assert_gt(not_run, 0);
    cr_assert_geq(judged, MIN_CASES * CHECKS_PER_CASE);
    fp8kv_results_free(&r);
}

/* A decode-only attention (no attention_features) gets the engine suite's multi-token decode,
 * prefill and window cases as "not run" rows naming what it lacks, never a verdict; a window
 * alone is asked for separately. */
Test(kv, engine_cases_a_decode_only_subject_lacks_are_reported_not_run, .timeout = 120)
{
    struct fp8kv_kv_kernels_v1 kernels;
    struct fp8kv_subject subject = subject_of(&cpu_paths, &kernels);
    static const struct {
        int index;
        unsigned features;
        const char *why;
    } cases[] = {
        {6, 0, "takes one query a sequence"},
        {7, 0, "takes one query a sequence"},
        {8, FP8KV_KV_ATTENTION_QUERIES, "takes no sliding window"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kernels.attention_features = cases[i].features;
        struct fp8kv_results r = {0};
        cr_assert_eq(
            fp8kv_check_attention_engine(VECTORS, &fp8kv_profiles[0], &subject, cases[i].index, &r),
            0, "%s", fp8kv_last_error());
        cr_assert_eq(r.count, 1);
        const struct fp8kv_check *c = &r.items[0];
        cr_assert(strstr(c->detail, "not run: cpu-reference ") && strstr(c->detail, cases[i].why),
                  "%s", c->detail);
        cr_assert_eq(fp8kv_check_outcome(c), FP8KV_OUTCOME_INFO);
        fp8kv_results_free(&r);
    }
    /* the CPU target's own subject declares them: prefill judged, and its decode consistency */
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_check_attention_engine(VECTORS, &fp8kv_profiles[0], cpu_reference(), 7, &r),
                 0, "%s", fp8kv_last_error());
    cr_assert_eq(r.count, 2);
    cr_assert_str_eq(r.items[1].name, "kv-attention-consistency");
    for (size_t k = 0; k < r.count; k++)
        cr_assert_eq(fp8kv_check_outcome(&r.items[k]), FP8KV_OUTCOME_PASS, "%s: %s",
                     r.items[k].name, r.items[k].detail);
    fp8kv_results_free(&r);
}

/* ---- errors ---------------------------------------------------------------------------------- */

Test(kv, missing_vectors_are_an_error_naming_the_file)
{
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_check_kv("/nonexistent-fp8kv", &fp8kv_profiles[0], cpu_reference(), &r),
                 FP8KV_ERR);
    cr_assert_eq(r.count, 0);
    const char *msg = fp8kv_last_error();
    cr_assert_not_null(strstr(msg, "/nonexistent-fp8kv/"), "%s", msg);
    cr_assert_not_null(strstr(msg, "kv/case0_meta.npy"), "%s", msg);
    fp8kv_results_free(&r);
}

/* ---- the truth judged is the truth verified -------------------------------------------------- */

/* The file of the scratch copy that flipping_store damages, and how often it stored. */
static char flip_path[256];
static int stores;

/* flip_tail: flips every bit of the last 64 bytes of path (the data of a .npy file). */
static void flip_tail(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    unsigned char b[64];
    cr_assert_eq(fseek(f, -(long)sizeof b, SEEK_END), 0);
    cr_assert_eq(fread(b, 1, sizeof b, f), sizeof b);
    for (size_t i = 0; i < sizeof b; i++)
        b[i] ^= 0xFF;
    cr_assert_eq(fseek(f, -(long)sizeof b, SEEK_END), 0);
    cr_assert_eq(fwrite(b, 1, sizeof b, f), sizeof b);
    cr_assert_eq(fclose(f), 0);
}

/* A correct store that, the first time it is called, damages a golden cache of a later case. */
static int flipping_store(struct fp8kv_codec_cfg cfg, const struct fp8kv_cache_shape *shape,
                          enum fp8kv_kv_dtype in, const void *key, const void *value, int n,
                          const int64_t *slots, const struct fp8kv_kv_scales *ks,
                          const struct fp8kv_kv_scales *vs, uint8_t *kc, uint8_t *vc)
{
    if (stores++ == 0)
        flip_tail(flip_path);
    return fp8kv_cpu_reshape_and_cache(cfg, shape, in, key, value, n, slots, ks, vs, kc, vc);
}

/* Fixed in this change (bug20261203): check-kv (fp8kv_check_kv) verified the vectors at the
 * start and read each case from its files later, unchecked: bytes flipped in case 1's golden
 * key cache during case 0's store made a correct store FAIL (64 mismatches), a verdict against
 * truth nobody verified. Every file read after verification is hashed and compared with the
 * digest verification kept: the altered file is an error naming it (check-kv's exit 2), and
 * nothing is judged against it. On a scratch copy of the vectors. */
Test(kv, bug20261203_cases_read_after_verification_were_judged_unchecked)
{
    char tmp[] = "/tmp/fp8kv-t_kv-XXXXXX", vectors[64], cmd[256];
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(vectors, sizeof vectors, "%s/vectors", tmp);
    snprintf(cmd, sizeof cmd, "cp -r %s %s", VECTORS, vectors);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    const struct fp8kv_profile *p = &fp8kv_profiles[0];
    snprintf(flip_path, sizeof flip_path, "%s/%s/kv/case1_key_cache.npy", vectors, p->name);
    cr_assert_eq(fp8kv_vectors_trust(vectors), 0, "%s", fp8kv_last_error());

    const struct kv_paths flipping = {"flipping", flipping_store, fp8kv_cpu_gather_dequant,
                                      fp8kv_cpu_paged_attention};
    struct fp8kv_kv_kernels_v1 kernels;
    const struct fp8kv_subject subject = subject_of(&flipping, &kernels);
    struct fp8kv_results r = {0};
    const int rc = fp8kv_check_kv(vectors, p, &subject, &r);
    cr_assert_geq(stores, 1, "the store never ran");
    cr_assert_eq(rc, FP8KV_ERR, "judged against altered truth: %zu checks", r.count);
    const char *msg = fp8kv_last_error();
    cr_assert_not_null(strstr(msg, "kv/case1_key_cache.npy: changed since"), "%s", msg);
    for (size_t i = 0; i < r.count; i++)
        cr_assert(r.items[i].passed, "%s failed: %s", r.items[i].name, r.items[i].detail);
    fp8kv_results_free(&r);
    /* the directory is refused from then on, until it verifies again, which it does not */
    memset(&r, 0, sizeof r);
    cr_assert_eq(fp8kv_check_kv(vectors, p, cpu_reference(), &r), FP8KV_ERR);
    cr_assert_eq(r.count, 0);
    cr_assert_eq(fp8kv_vectors_trusted(vectors), 0);
    cr_assert_eq(fp8kv_vectors_trust(vectors), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "case1_key_cache.npy"), "%s", fp8kv_last_error());
    fp8kv_results_free(&r);
    fp8kv_remove_tree(tmp);
}

/* ---- quantization error ---------------------------------------------------------------------- */

Test(kv, quantization_nmse_is_sane_and_never_gates)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        struct fp8kv_results r = {0};
        cr_assert_eq(fp8kv_check_quantization_nmse(p, cpu_reference(), &r), 0, "%s",
                     fp8kv_last_error());
        cr_assert_eq(r.count, 3);
        for (size_t k = 0; k < r.count; k++) {
            const struct fp8kv_check *c = &r.items[k];
            cr_assert_eq(c->gated, 0, "%s gates", c->name);
            cr_assert(c->has_nmse);
            cr_assert_eq(c->cases, 65536);
            /* e4m3: 3 fraction bits, about 2^-8 relative error squared on average */
            const double hi = strcmp(c->name, "quant-nmse-outliers") == 0 ? 1e-1 : 1e-2;
            cr_assert(c->nmse > 1e-4 && c->nmse < hi, "%s %s: nmse %g", p->name, c->name, c->nmse);
        }
        cr_assert_str_eq(r.items[0].name, "quant-nmse-gaussian");
        /* ungated checks alone never make a run pass */
        cr_assert_not(fp8kv_results_passed(&r));
        struct fp8kv_results kv;
        run_kv(p, &cpu_paths, &kv);
        for (size_t k = 0; k < r.count; k++)
            cr_assert_eq(fp8kv_results_add(&kv, &r.items[k]), 0);
        cr_assert(fp8kv_results_passed(&kv), "ungated quantization checks failed a run");
        fp8kv_results_free(&kv);
        fp8kv_results_free(&r);
    }
}
