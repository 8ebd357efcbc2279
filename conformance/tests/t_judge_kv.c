/* t_judge_kv.c — the KV judge on buffers (fp8kv/judge_kv.h) and `fp8kv judge-kv` on files.
 *
 * What a correct engine writes (the CPU reference store, the golden gather rows, the oracle's
 * attention rounded to f32) is conformant for every case of every profile; planted engine
 * faults — the scale ignored, k_scale used for V, a padding slot written, FNUZ bytes under an
 * OCP profile, a wrong split-x width — are nonconformant with the differing bytes named; bad
 * input is an error naming the part, never a verdict.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/kv_verdict.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/npy.h"
#include "testutil.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"

/* An engine's planted fault in its store. */
enum fault {
    FAULT_NONE,
    FAULT_SCALE_IGNORED, /* x stored as if the scale were 1 */
    FAULT_K_SCALE_FOR_V, /* the value cache written with k_scale */
    FAULT_PADDING,       /* a padding token (slot -1) written to slot 0's block anyway */
    FAULT_FNUZ_BYTES,    /* the e4m3fnuz encoding stored under an OCP profile */
    FAULT_SPLIT_X_8,     /* the split-x key layout with x = 8 instead of 16 */
    FAULT_HEAD0_SCALE,   /* per-head scales: every head stored with head 0's scale */
    FAULT_RECIP_ROW,     /* per-token scales: amax * (1 / max) instead of amax / max */
    FAULT_RECIP_STORE,   /* every byte stored as fp8(x * RN32(1 / s)) (model f32_mul_recip) */
};

/* What a store wrote: the caches and, per token and head, the scale caches. */
struct stored {
    uint8_t *kc, *vc;
    float *ksc, *vsc;
};

static struct stored stored_new(const struct fp8kv_kv_case *c)
{
    struct stored st = {malloc(c->cache_bytes), malloc(c->cache_bytes),
                        malloc(c->scale_entries * sizeof(float)),
                        malloc(c->scale_entries * sizeof(float))};
    cr_assert(st.kc && st.vc && st.ksc && st.vsc);
    return st;
}

static void stored_free(struct stored *st)
{
    free(st->kc);
    free(st->vc);
    free(st->ksc);
    free(st->vsc);
}

/* recip_row: the recip_row fault: each written row (token, head) stored again with the scale
 * amax * RN32(1 / max_finite), which is also written to the scale cache. */
static void recip_row(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                      struct stored *st)
{
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    const int H = c->shape.num_heads, D = c->shape.head_size;
    const float recip = 1.0f / (float)p->format->max_value;
    for (int t = 0; t < c->num_tokens; t++) {
        const int64_t slot = ((const int64_t *)c->slots.data)[t];
        for (int h = 0; h < H && slot >= 0; h++)
            for (int is_key = 0; is_key < 2; is_key++) {
                const struct fp8kv_npy *in = is_key ? &c->key : &c->value;
                float x[256], amax = 0.0f;
                for (int d = 0; d < D; d++) {
                    const size_t i = ((size_t)t * H + h) * D + d;
                    const uint32_t bits = c->in == FP8KV_KV_F32 ? ((const uint32_t *)in->data)[i]
                                                                : ((const uint16_t *)in->data)[i];
                    x[d] = fp8kv_f32_from_bits(fp8kv_widen_to_f32((enum fp8kv_dtype)c->in, bits));
                    amax = isfinite(x[d]) && fabsf(x[d]) > amax ? fabsf(x[d]) : amax;
                }
                const float s = amax > 0.0f ? amax * recip : 1.0f;
                (is_key ? st->ksc : st->vsc)[(size_t)slot * H + h] = s;
                for (int d = 0; d < D; d++) {
                    const size_t o = is_key ? fp8kv_key_offset(&c->shape, slot, h, d)
                                            : fp8kv_value_offset(&c->shape, slot, h, d);
                    (is_key ? st->kc : st->vc)[o] = fp8kv_store_f32(cfg, x[d], s);
                }
            }
    }
}

/* engine_store: the CPU reference store of case c under profile p, with a planted fault. */
static void engine_store(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                         enum fault fault, struct stored *st)
{
    uint8_t *kc = st->kc, *vc = st->vc;
    memset(kc, FP8KV_KV_SENTINEL, c->cache_bytes);
    memset(vc, FP8KV_KV_SENTINEL, c->cache_bytes);
    memset(st->ksc, FP8KV_KV_SENTINEL, c->scale_entries * sizeof(float));
    memset(st->vsc, FP8KV_KV_SENTINEL, c->scale_entries * sizeof(float));
    const struct fp8kv_profile *as = p;
    if (fault == FAULT_FNUZ_BYTES)
        as = fp8kv_profile_find(FP8KV_E4M3FNUZ, p->overflow, p->inf);
    cr_assert_not_null(as);
    int64_t *slots = malloc((size_t)c->num_tokens * sizeof *slots + 1);
    memcpy(slots, c->slots.data, (size_t)c->num_tokens * sizeof *slots);
    if (fault == FAULT_PADDING) { /* the first padding token lands in a slot nobody writes */
        for (int t = 0; t < c->num_tokens; t++)
            if (slots[t] < 0) {
                for (int64_t s = 0; s < (int64_t)c->shape.num_blocks * c->shape.block_size; s++)
                    if (c->slot_token[s] < 0) {
                        slots[t] = s;
                        break;
                    }
                break;
            }
    }
    struct fp8kv_kv_scales k = c->k_scales, v = c->v_scales;
    k.cache_out = st->ksc;
    v.cache_out = st->vsc;
    const struct fp8kv_kv_scales one = {FP8KV_SCALE_TENSOR, 1.0f, NULL, NULL, NULL};
    float k_head0[64], v_head0[64];
    if (fault == FAULT_SCALE_IGNORED)
        k = v = one;
    if (fault == FAULT_K_SCALE_FOR_V && c->granularity != FP8KV_SCALE_TOKEN_HEAD)
        v = k; /* per token the row's own scale: nothing to swap */
    if (fault == FAULT_HEAD0_SCALE && c->granularity == FP8KV_SCALE_HEAD) {
        for (int h = 0; h < c->shape.num_heads && h < 64; h++) {
            k_head0[h] = k.heads[0];
            v_head0[h] = v.heads[0];
        }
        k.heads = k_head0;
        v.heads = v_head0;
    }
    struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(as);
    if (fault == FAULT_RECIP_STORE)
        cfg.model = FP8KV_CODEC_F32_MUL_RECIP;
    cr_assert_eq(fp8kv_cpu_reshape_and_cache(cfg, &c->shape, c->in, c->key.data, c->value.data,
                                             c->num_tokens, slots, &k, &v, kc, vc),
                 0, "%s", fp8kv_last_error());
    if (fault == FAULT_RECIP_ROW && c->granularity == FP8KV_SCALE_TOKEN_HEAD)
        recip_row(c, p, st);
    if (fault == FAULT_SPLIT_X_8) { /* regroup each key block's [d/16][pos][16] as [d/8][pos][8] */
        uint8_t *copy = malloc(c->cache_bytes);
        memcpy(copy, kc, c->cache_bytes);
        const size_t bs = (size_t)c->shape.block_size, D = (size_t)c->shape.head_size;
        for (size_t o = 0; o < c->cache_bytes; o++) {
            const size_t lane = o % 16, pos = o / 16 % bs, group = o / 16 / bs % (D / 16);
            const size_t head_base = o / (16 * bs * (D / 16)) * (16 * bs * (D / 16));
            const size_t d = group * 16 + lane;
            kc[head_base + (d / 8) * bs * 8 + pos * 8 + d % 8] = copy[o];
        }
        free(copy);
    }
    free(slots);
}

/* store_input: what st holds as the judge's input (the scale caches where the case has them). */
static struct fp8kv_judge_kv_input store_input(const struct fp8kv_kv_case *c,
                                               const struct stored *st)
{
    const int scales = c->granularity == FP8KV_SCALE_TOKEN_HEAD;
    return (struct fp8kv_judge_kv_input){.key_cache = st->kc,
                                         .value_cache = st->vc,
                                         .key_bytes = c->cache_bytes,
                                         .value_bytes = c->cache_bytes,
                                         .key_name = "key_cache",
                                         .value_name = "value_cache",
                                         .key_scale_cache = scales ? st->ksc : NULL,
                                         .value_scale_cache = scales ? st->vsc : NULL,
                                         .key_scale_count = c->scale_entries,
                                         .value_scale_count = c->scale_entries,
                                         .key_scale_name = "key_scale_cache",
                                         .value_scale_name = "value_scale_cache"};
}

/* judge: the caches of case c judged through the buffer API; the result (asserts success). */
static struct fp8kv_judge_kv_result judge(const struct fp8kv_kv_case *c,
                                          const struct fp8kv_profile *p, const struct stored *st)
{
    const struct fp8kv_judge_kv_input in = store_input(c, st);
    struct fp8kv_judge_kv_result r;
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, c->index, &in, &r), 0, "%s", fp8kv_last_error());
    return r;
}

Test(judge_kv, correct_outputs_are_conformant_on_every_case)
{
    int judged = 0;
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        int count = 0;
        cr_assert_eq(fp8kv_kv_case_count(VECTORS, p, &count), 0, "%s", fp8kv_last_error());
        for (int index = 0; index < count; index++) {
            struct fp8kv_kv_case c;
            cr_assert_eq(fp8kv_kv_case_load(VECTORS, p, index, &c), 0, "%s", fp8kv_last_error());
            struct stored st = stored_new(&c);
            engine_store(&c, p, FAULT_NONE, &st);
            const size_t n = (size_t)c.attention.count;
            float *att = malloc(n * sizeof *att + 1);
            for (size_t j = 0; j < n; j++)
                att[j] = (float)((const double *)c.attention.data)[j];
            for (int dt = FP8KV_KV_F32; dt <= FP8KV_KV_BF16; dt++) {
                struct fp8kv_judge_kv_input in = store_input(&c, &st);
                in.subject = "engine";
                in.gather = c.gather[dt].data;
                in.gather_count = c.gather[dt].count;
                in.gather_dtype = (enum fp8kv_kv_dtype)dt;
                in.gather_name = "g";
                in.attention = att;
                in.attention_count = n;
                in.attention_name = "a";
                struct fp8kv_judge_kv_result r;
                cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, index, &in, &r), 0, "%s",
                             fp8kv_last_error());
                cr_assert(r.conformant, "%s", r.text);
                cr_assert_eq(r.mismatches, 0);
                cr_assert_eq(r.bytes, 2 * c.cache_bytes);
                cr_assert_eq(r.checks.count, 3);
                char last[160];
                snprintf(last, sizeof last,
                         "judge-kv %s case%d: bytes=%zu mismatches=0 outputs=%zu outside=0 "
                         "verdict=conformant\n",
                         p->name, index, 2 * c.cache_bytes, n);
                cr_assert_not_null(strstr(r.text, last), "%s", r.text);
                cr_assert_not_null(strstr(r.json, "\"verdict\": \"conformant\""), "%s", r.json);
                fp8kv_judge_kv_result_free(&r);
                judged++;
            }
            stored_free(&st);
            free(att);
            fp8kv_kv_case_free(&c);
        }
    }
    cr_assert_geq(judged, 3 * 6 * 4, "only %d judgements", judged);
}

/* Each planted fault: nonconformant on at least one case of every profile it applies to, the
 * differing bytes counted in the cache it touches, and no verdict of "conformant". */
static void expect_fault_caught(enum fault fault, const char *cache, int key_only)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        if (fault == FAULT_FNUZ_BYTES && p->format->id != FP8KV_E4M3FN)
            continue;
        int count = 0, caught = 0, applicable = 0;
        cr_assert_eq(fp8kv_kv_case_count(VECTORS, p, &count), 0);
        for (int index = 0; index < count; index++) {
            struct fp8kv_kv_case c;
            cr_assert_eq(fp8kv_kv_case_load(VECTORS, p, index, &c), 0);
            if ((fault == FAULT_SPLIT_X_8 && c.shape.layout != FP8KV_LAYOUT_SPLIT_X) ||
                (fault == FAULT_HEAD0_SCALE && c.granularity != FP8KV_SCALE_HEAD) ||
                (fault == FAULT_RECIP_ROW && c.granularity != FP8KV_SCALE_TOKEN_HEAD)) {
                fp8kv_kv_case_free(&c);
                continue;
            }
            applicable++;
            struct stored st = stored_new(&c);
            engine_store(&c, p, fault, &st);
            struct fp8kv_judge_kv_result r = judge(&c, p, &st);
            if (!r.conformant) {
                caught++;
                cr_assert_gt(r.mismatches, 0, "%s", r.text);
                cr_assert_not_null(strstr(r.text, "verdict=nonconformant"), "%s", r.text);
                const struct fp8kv_check *store = &r.checks.items[0];
                int named = 0;
                for (int l = 0; l < store->failure_lines; l++)
                    named |= strstr(store->failures[l], cache) != NULL;
                cr_assert(named, "no failure line names %s:\n%s", cache, r.text);
                if (key_only)
                    cr_assert_eq(r.cache_mismatches[1], 0, "%s", r.text);
            }
            fp8kv_judge_kv_result_free(&r);
            stored_free(&st);
            fp8kv_kv_case_free(&c);
        }
        if (applicable)
            cr_assert_gt(caught, 0, "%s: fault %d caught on no case", p->name, fault);
        if (fault == FAULT_HEAD0_SCALE || fault == FAULT_RECIP_ROW)
            cr_assert_gt(applicable, 0, "%s: no case for fault %d", p->name, fault);
    }
}

/* Fixed on 2026-12-07: an attention judged alone, and wrong, ended in "bytes=0 mismatches=0
 * verdict=nonconformant" (the counts were the caches', none judged). The last line counts the
 * parts judged: an attention's outputs and those outside the bound. */
Test(judge_kv, bug20261207_a_wrong_attention_alone_ended_in_zero_counts)
{
    const struct fp8kv_profile *p = fp8kv_default_profile();
    struct fp8kv_kv_case c;
    cr_assert_eq(fp8kv_kv_case_load(VECTORS, p, 0, &c), 0, "%s", fp8kv_last_error());
    const size_t n = (size_t)c.attention.count;
    float *att = malloc(n * sizeof *att);
    for (size_t j = 0; j < n; j++)
        att[j] = 0.5f;
    struct fp8kv_judge_kv_input in = {
        .subject = "engine", .attention = att, .attention_count = n, .attention_name = "a"};
    struct fp8kv_judge_kv_result r;
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 0, &in, &r), 0, "%s", fp8kv_last_error());
    cr_assert(!r.conformant);
    char last[160];
    snprintf(last, sizeof last,
             "judge-kv %s case0: outputs=%zu outside=%zu verdict=nonconformant\n", p->name, n, n);
    cr_assert_not_null(strstr(r.text, last), "%s", r.text);
    cr_assert_null(strstr(r.text, "bytes=0"), "%s", r.text);
    fp8kv_judge_kv_result_free(&r);
    free(att);
    fp8kv_kv_case_free(&c);
}

/* Failure lines name the values and which scale models write the byte found: a store that
 * multiplies by the reciprocal is told apart from one that divides (issue: failures that name
 * the cause). */
Test(judge_kv, a_reciprocal_store_is_named_in_its_failure_lines)
{
    int named = 0;
    for (int index = 0; index < 16 && !named; index++) {
        const struct fp8kv_profile *p = fp8kv_default_profile();
        struct fp8kv_kv_case c;
        if (fp8kv_kv_case_load(VECTORS, p, index, &c) != 0)
            break;
        struct stored st = stored_new(&c);
        engine_store(&c, p, FAULT_RECIP_STORE, &st);
        struct fp8kv_judge_kv_result r = judge(&c, p, &st);
        const struct fp8kv_check *store = &r.checks.items[0];
        for (int l = 0; l < store->failure_lines; l++) {
            const char *line = store->failures[l];
            if (!strstr(line, "token"))
                continue;
            cr_assert(strstr(line, "f32_mul_recip") && strstr(line, " write") &&
                          strstr(line, " = ") && strstr(line, ")  expected "),
                      "%s", line);
            named++;
        }
        fp8kv_judge_kv_result_free(&r);
        stored_free(&st);
        fp8kv_kv_case_free(&c);
    }
    cr_assert_gt(named, 0, "no case told the reciprocal store apart");
}

Test(judge_kv, scale_ignored_is_caught)
{
    expect_fault_caught(FAULT_SCALE_IGNORED, "key_cache[", 0);
}

Test(judge_kv, k_scale_for_v_is_caught_in_the_value_cache)
{
    expect_fault_caught(FAULT_K_SCALE_FOR_V, "value_cache[", 0);
}

Test(judge_kv, padding_slot_written_is_caught_as_unwritten)
{
    expect_fault_caught(FAULT_PADDING, "(unwritten)", 0);
}

Test(judge_kv, fnuz_bytes_under_ocp_are_caught)
{
    expect_fault_caught(FAULT_FNUZ_BYTES, "cache[", 0);
}

Test(judge_kv, wrong_split_x_width_is_caught_in_the_key_cache)
{
    expect_fault_caught(FAULT_SPLIT_X_8, "key_cache[", 1);
}

Test(judge_kv, head_0_scale_for_every_head_is_caught)
{
    expect_fault_caught(FAULT_HEAD0_SCALE, "head 1", 0);
}

Test(judge_kv, reciprocal_row_scales_are_caught_in_the_scale_cache)
{
    expect_fault_caught(FAULT_RECIP_ROW, "_scale_cache[", 0);
}

Test(judge_kv, bad_input_is_an_error_naming_the_part)
{
    const struct fp8kv_profile *p = &fp8kv_profiles[0];
    struct fp8kv_kv_case c;
    cr_assert_eq(fp8kv_kv_case_load(VECTORS, p, 0, &c), 0);
    uint8_t *kc = calloc(c.cache_bytes + 1, 1), *vc = calloc(c.cache_bytes + 1, 1);
    struct fp8kv_judge_kv_result r;
    struct fp8kv_judge_kv_input in = {.key_cache = kc,
                                      .value_cache = vc,
                                      .key_bytes = c.cache_bytes - 1,
                                      .value_bytes = c.cache_bytes,
                                      .key_name = "K.npy",
                                      .value_name = "V.npy"};
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 0, &in, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "K.npy"), "%s", fp8kv_last_error());
    cr_assert_null(r.text);
    in.key_bytes = c.cache_bytes;
    in.value_bytes = c.cache_bytes + 1;
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 0, &in, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "V.npy"), "%s", fp8kv_last_error());
    in.value_bytes = c.cache_bytes;
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 1000, &in, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "unknown case 1000"), "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_judge_kv(VECTORS, "e4m3fn_nope", 0, &in, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "unknown profile"), "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_judge_kv(VECTORS, "e4m3fn_satfinte", 0, &in, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "did you mean 'e4m3fn_satfinite'? (valid: "),
                       "%s", fp8kv_last_error());
    in.value_cache = NULL;
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 0, &in, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "give both"), "%s", fp8kv_last_error());
    const struct fp8kv_judge_kv_input none = {0};
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 0, &none, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "nothing to judge"), "%s", fp8kv_last_error());
    const struct fp8kv_judge_kv_input gather = {
        .gather = kc, .gather_count = 3, .gather_dtype = FP8KV_KV_F16, .gather_name = "G.npy"};
    cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, 0, &gather, &r), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "G.npy: 3 elements"), "%s", fp8kv_last_error());
    free(kc);
    free(vc);
    fp8kv_kv_case_free(&c);
}

/* ---- the command line -------------------------------------------------------------------- */

static int judge_cli(const char *args, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s judge-kv --vectors %s %s 2>&1", FP8KV_BINARY_DIR,
             FP8KV_EXE, VECTORS, args);
    return test_run(cmd, out, size);
}

Test(judge_kv, cli_judges_files_with_the_same_verdicts)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name("e4m3fn_satfinite");
    struct fp8kv_kv_case c;
    cr_assert_eq(fp8kv_kv_case_load(VECTORS, p, 1, &c), 0);
    struct stored st = stored_new(&c);
    uint8_t *kc = st.kc, *vc = st.vc;
    const size_t shape[2] = {(size_t)c.shape.num_blocks, c.cache_bytes / c.shape.num_blocks};
    engine_store(&c, p, FAULT_NONE, &st);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jk_k.npy", FP8KV_NPY_U8, 2, shape, kc), 0);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jk_v.npy", FP8KV_NPY_U8, 2, shape, vc), 0);
    const size_t gshape[1] = {c.gather[1].count};
    cr_assert_eq(
        fp8kv_npy_write(FP8KV_BINARY_DIR "/jk_g.npy", FP8KV_NPY_U16, 1, gshape, c.gather[1].data),
        0);
    char out[16384];
    int rc = judge_cli("--profile e4m3fn_satfinite --case 1 --key-cache jk_k.npy --value-cache "
                       "jk_v.npy --gather jk_g.npy --gather-dtype f16 --json jk.json",
                       out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    char last[160];
    snprintf(last, sizeof last,
             "judge-kv e4m3fn_satfinite case1: bytes=%zu mismatches=0 "
             "verdict=conformant\n",
             2 * c.cache_bytes);
    cr_assert_not_null(strstr(out, last), "%s", out);
    size_t n;
    char *json = (char *)test_read_bytes(FP8KV_BINARY_DIR "/jk.json", &n);
    cr_assert_not_null(strstr(json, "\"schema\": \"fp8kv-judge-kv\""), "%s", json);
    free(json);

    engine_store(&c, p, FAULT_K_SCALE_FOR_V, &st);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jk_v.npy", FP8KV_NPY_U8, 2, shape, vc), 0);
    struct fp8kv_judge_kv_result r = judge(&c, p, &st);
    rc = judge_cli("--profile e4m3fn_satfinite --case 1 --key-cache jk_k.npy --value-cache "
                   "jk_v.npy",
                   out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    snprintf(last, sizeof last,
             "judge-kv e4m3fn_satfinite case1: bytes=%zu mismatches=%llu "
             "verdict=nonconformant\n",
             2 * c.cache_bytes, (unsigned long long)r.mismatches);
    cr_assert_not_null(strstr(out, last), "%s", out);
    cr_assert_not_null(strstr(out, "value_cache["), "%s", out);
    fp8kv_judge_kv_result_free(&r);

    /* bad input: exit 2 with the file named */
    rc = judge_cli("--profile e4m3fn_satfinite --case 0 --key-cache jk_k.npy --value-cache "
                   "jk_v.npy",
                   out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "jk_k.npy"), "%s", out);
    rc = judge_cli("--profile e4m3fn_satfinite --case 1 --key-cache jk_g.npy --value-cache "
                   "jk_v.npy",
                   out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "jk_g.npy: dtype <u2"), "%s", out);
    rc = judge_cli("--profile e4m3fn_satfinite --case 1 --gather jk_g.npy", out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "--gather-dtype"), "%s", out);
    rc = judge_cli("--profile e4m3fn_satfinite --case 1 --key-cache missing.npy --value-cache "
                   "jk_v.npy",
                   out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "missing.npy"), "%s", out);
    rc = judge_cli("--profile e4m3fn_satfinite --case -1 --gather jk_g.npy", out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    /* scale caches on a case without them */
    const size_t sshape[1] = {c.scale_entries};
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jk_ks.npy", FP8KV_NPY_F32, 1, sshape, st.ksc),
                 0);
    rc = judge_cli("--profile e4m3fn_satfinite --case 1 --key-cache jk_k.npy --value-cache "
                   "jk_v.npy --key-scale-cache jk_ks.npy --value-scale-cache jk_ks.npy",
                   out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "no scale caches"), "%s", out);
    stored_free(&st);
    fp8kv_kv_case_free(&c);
}

/* A case with a scale per token and head, through files: the scale caches are required, judged
 * bit for bit, and a wrong entry is named. */
Test(judge_kv, cli_judges_scale_caches_per_token_and_head)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name("e4m3fn_satfinite");
    int count = 0, index = -1;
    cr_assert_eq(fp8kv_kv_case_count(VECTORS, p, &count), 0);
    struct fp8kv_kv_case c;
    for (int i = 0; i < count && index < 0; i++) {
        cr_assert_eq(fp8kv_kv_case_load(VECTORS, p, i, &c), 0);
        if (c.granularity == FP8KV_SCALE_TOKEN_HEAD)
            index = i;
        else
            fp8kv_kv_case_free(&c);
    }
    cr_assert_geq(index, 0, "no case with scales per token and head");
    struct stored st = stored_new(&c);
    engine_store(&c, p, FAULT_NONE, &st);
    const size_t shape[1] = {c.cache_bytes}, sshape[1] = {c.scale_entries};
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jt_k.npy", FP8KV_NPY_U8, 1, shape, st.kc), 0);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jt_v.npy", FP8KV_NPY_U8, 1, shape, st.vc), 0);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jt_ks.npy", FP8KV_NPY_F32, 1, sshape, st.ksc),
                 0);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jt_vs.npy", FP8KV_NPY_F32, 1, sshape, st.vsc),
                 0);
    char args[512], out[16384];
    snprintf(args, sizeof args,
             "--profile e4m3fn_satfinite --case %d --key-cache jt_k.npy --value-cache jt_v.npy",
             index);
    int rc = judge_cli(args, out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "scale per token and head"), "%s", out);
    const size_t used = strlen(args);
    snprintf(args + used, sizeof args - used,
             " --key-scale-cache jt_ks.npy --value-scale-cache jt_vs.npy");
    rc = judge_cli(args, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "scale caches: key 0 of"), "%s", out);
    /* one written entry off by one ulp */
    size_t e = 0;
    while (c.slot_token[e / (size_t)c.shape.num_heads] < 0)
        e++;
    st.vsc[e] = fp8kv_f32_from_bits(fp8kv_f32_bits(st.vsc[e]) + 1);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jt_vs.npy", FP8KV_NPY_F32, 1, sshape, st.vsc),
                 0);
    rc = judge_cli(args, out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    char line[64];
    snprintf(line, sizeof line, "value_scale_cache[%zu] token", e);
    cr_assert_not_null(strstr(out, line), "%s", out);
    cr_assert_not_null(strstr(out, "mismatches=1 verdict=nonconformant"), "%s", out);
    stored_free(&st);
    fp8kv_kv_case_free(&c);
}
