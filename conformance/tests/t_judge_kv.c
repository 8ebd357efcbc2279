/* t_judge_kv.c — the KV judge on buffers (fp8kv/judge_kv.h) and `fp8kv judge-kv` on files.
 *
 * What a correct engine writes (the CPU reference store, the golden gather rows, the oracle's
 * attention rounded to f32) is conformant for every case of every profile; planted engine
 * faults — the scale ignored, k_scale used for V, a padding slot written, FNUZ bytes under an
 * OCP profile, a wrong split-x width — are nonconformant with the differing bytes named; bad
 * input is an error naming the part, never a verdict.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/judge_kv.h"
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
};

/* engine_store: the CPU reference store of case c under profile p, with a planted fault. */
static void engine_store(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                         enum fault fault, uint8_t *kc, uint8_t *vc)
{
    memset(kc, FP8KV_KV_SENTINEL, c->cache_bytes);
    memset(vc, FP8KV_KV_SENTINEL, c->cache_bytes);
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
    const float k = fault == FAULT_SCALE_IGNORED ? 1.0f : c->k_scale;
    const float v = fault == FAULT_SCALE_IGNORED   ? 1.0f
                    : fault == FAULT_K_SCALE_FOR_V ? c->k_scale
                                                   : c->v_scale;
    cr_assert_eq(fp8kv_cpu_reshape_and_cache(fp8kv_profile_cfg(as), &c->shape, c->in, c->key.data,
                                             c->value.data, c->num_tokens, slots, k, v, kc, vc),
                 0, "%s", fp8kv_last_error());
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

/* judge: the caches of case c judged through the buffer API; the result (asserts success). */
static struct fp8kv_judge_kv_result judge(const struct fp8kv_kv_case *c,
                                          const struct fp8kv_profile *p, const uint8_t *kc,
                                          const uint8_t *vc)
{
    const struct fp8kv_judge_kv_input in = {.key_cache = kc,
                                            .value_cache = vc,
                                            .key_bytes = c->cache_bytes,
                                            .value_bytes = c->cache_bytes,
                                            .key_name = "key_cache",
                                            .value_name = "value_cache"};
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
            uint8_t *kc = malloc(c.cache_bytes), *vc = malloc(c.cache_bytes);
            engine_store(&c, p, FAULT_NONE, kc, vc);
            const size_t n = (size_t)c.attention.count;
            float *att = malloc(n * sizeof *att + 1);
            for (size_t j = 0; j < n; j++)
                att[j] = (float)((const double *)c.attention.data)[j];
            for (int dt = FP8KV_KV_F32; dt <= FP8KV_KV_BF16; dt++) {
                const struct fp8kv_judge_kv_input in = {"engine",
                                                        kc,
                                                        vc,
                                                        c.cache_bytes,
                                                        c.cache_bytes,
                                                        "k",
                                                        "v",
                                                        c.gather[dt].data,
                                                        c.gather[dt].count,
                                                        (enum fp8kv_kv_dtype)dt,
                                                        "g",
                                                        att,
                                                        n,
                                                        "a"};
                struct fp8kv_judge_kv_result r;
                cr_assert_eq(fp8kv_judge_kv(VECTORS, p->name, index, &in, &r), 0, "%s",
                             fp8kv_last_error());
                cr_assert(r.conformant, "%s", r.text);
                cr_assert_eq(r.mismatches, 0);
                cr_assert_eq(r.bytes, 2 * c.cache_bytes);
                cr_assert_eq(r.checks.count, 3);
                char last[160];
                snprintf(last, sizeof last,
                         "judge-kv %s case%d: bytes=%zu mismatches=0 verdict=conformant\n", p->name,
                         index, 2 * c.cache_bytes);
                cr_assert_not_null(strstr(r.text, last), "%s", r.text);
                cr_assert_not_null(strstr(r.json, "\"verdict\": \"conformant\""), "%s", r.json);
                fp8kv_judge_kv_result_free(&r);
                judged++;
            }
            free(kc);
            free(vc);
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
            if (fault == FAULT_SPLIT_X_8 && c.shape.layout != FP8KV_LAYOUT_SPLIT_X) {
                fp8kv_kv_case_free(&c);
                continue;
            }
            applicable++;
            uint8_t *kc = malloc(c.cache_bytes), *vc = malloc(c.cache_bytes);
            engine_store(&c, p, fault, kc, vc);
            struct fp8kv_judge_kv_result r = judge(&c, p, kc, vc);
            if (!r.conformant) {
                caught++;
                cr_assert_gt(r.mismatches, 0, "%s", r.text);
                cr_assert_not_null(strstr(r.text, "verdict=nonconformant"), "%s", r.text);
                cr_assert_not_null(strstr(r.checks.items[0].failures[0], cache), "%s", r.text);
                if (key_only)
                    cr_assert_eq(r.cache_mismatches[1], 0, "%s", r.text);
            }
            fp8kv_judge_kv_result_free(&r);
            free(kc);
            free(vc);
            fp8kv_kv_case_free(&c);
        }
        if (applicable)
            cr_assert_gt(caught, 0, "%s: fault %d caught on no case", p->name, fault);
    }
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
    uint8_t *kc = malloc(c.cache_bytes), *vc = malloc(c.cache_bytes);
    const size_t shape[2] = {(size_t)c.shape.num_blocks, c.cache_bytes / c.shape.num_blocks};
    engine_store(&c, p, FAULT_NONE, kc, vc);
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

    engine_store(&c, p, FAULT_K_SCALE_FOR_V, kc, vc);
    cr_assert_eq(fp8kv_npy_write(FP8KV_BINARY_DIR "/jk_v.npy", FP8KV_NPY_U8, 2, shape, vc), 0);
    struct fp8kv_judge_kv_result r = judge(&c, p, kc, vc);
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
    free(kc);
    free(vc);
    fp8kv_kv_case_free(&c);
}
