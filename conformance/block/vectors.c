/* block/vectors.c — the block codec's golden vectors and default sweep points
 * (fp8kv/block_checks.h): no oracle here, so builds without it judge the vectors too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/block_checks.h"
#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "fp8kv/verify.h"

int fp8kv_block_same_value(uint32_t expected, uint32_t got)
{
    const int nan_e = (expected & 0x7FFFFFFFu) > 0x7F800000u;
    const int nan_g = (got & 0x7FFFFFFFu) > 0x7F800000u;
    return nan_e ? nan_g : expected == got;
}

int fp8kv_block_sweep_points(const struct fp8kv_block_format *f,
                             struct fp8kv_block_sweep_point out[4])
{
    if (f->scale_kind == FP8KV_SCALE_UE4M3) {
        out[0] = (struct fp8kv_block_sweep_point){0x38, 1.0f};
        out[1] = (struct fp8kv_block_sweep_point){0x3B, 1.7f};
        return 2;
    }
    out[0] = (struct fp8kv_block_sweep_point){127, 1.0f};
    out[1] = (struct fp8kv_block_sweep_point){1, 1.0f};
    out[2] = (struct fp8kv_block_sweep_point){200, 1.0f};
    return 3;
}

/* Reads dir/name into *out with dtype and ndim; 1, 0 when the file is not there (of a verified
 * root: is no file of its set), -1 (a message) when it is there but unreadable or of the wrong
 * type, or changed since root was verified (fp8kv_vectors_read: what is judged is parsed from
 * the bytes verified). dir is root/sub. */
static int read_vector(const char *root, const char *sub, const char *name,
                       enum fp8kv_npy_dtype dtype, int ndim, struct fp8kv_npy *out)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s", sub, name);
    const int has = fp8kv_vectors_has(root, rel);
    if (has <= 0)
        return has < 0 ? -1 : 0;
    return fp8kv_vectors_read_npy(root, rel, dtype, ndim, 0, out) == 0 ? 1 : -1;
}

/* The decode table file name at G (decode.npy at 1; nvfp4's decode_g.npy at its G). */
static int judge_decode_table(const struct fp8kv_block_under_test *s, const char *root,
                              const char *sub, const char *name, float G,
                              struct fp8kv_block_report *r)
{
    const struct fp8kv_block_format *f = s->format;
    struct fp8kv_npy t = {0};
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    const int got = read_vector(root, sub, name, FP8KV_NPY_U32, 2, &t);
    if (got <= 0) /* the encode cases are there: a missing table is a damaged directory */
        return got < 0 ? FP8KV_ERR : fp8kv_fail("%s/%s: missing", dir, name);
    const size_t ns = t.shape[0], nc = t.shape[1], bs = (size_t)f->block_size;
    if (ns != (size_t)fp8kv_block_scale_code_count(f) ||
        nc != (size_t)fp8kv_element_code_count(f->element)) {
        fp8kv_npy_free(&t);
        return fp8kv_fail("%s/%s: shape [%zu, %zu], not [scale codes, element codes]", dir, name,
                          ns, nc);
    }
    const size_t per = (nc + bs - 1) / bs, nblocks = ns * per;
    uint8_t *scales = malloc(nblocks), *elements = calloc(nblocks * bs, 1);
    float *y = malloc(nblocks * bs * sizeof *y);
    int rc = scales && elements && y ? FP8KV_OK : fp8kv_fail("out of memory");
    for (size_t b = 0; rc == FP8KV_OK && b < nblocks; b++) {
        scales[b] = (uint8_t)(b / per);
        for (size_t i = 0; i < bs; i++)
            elements[b * bs + i] = (uint8_t)(((b % per) * bs + i) % nc);
    }
    if (rc == FP8KV_OK)
        rc = fp8kv_block_decode(s, 0, scales, elements, nblocks, G, y);
    const uint32_t *want = t.data;
    for (size_t k = 0; rc == FP8KV_OK && k < nblocks * bs; k++) {
        const uint32_t e = want[scales[k / bs] * nc + elements[k]], g = fp8kv_f32_bits(y[k]);
        r->checked[FP8KV_BLOCK_CHECK_VECTORS]++;
        if (fp8kv_block_same_value(e, g))
            continue;
        r->wrong[FP8KV_BLOCK_CHECK_VECTORS]++;
        fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_VECTORS,
                                "vectors %s: scale %02x element %02x: expected 0x%08x got 0x%08x",
                                name, scales[k / bs], elements[k], e, g);
    }
    free(scales), free(elements), free(y);
    fp8kv_npy_free(&t);
    return rc;
}

int fp8kv_block_judge_vectors(const struct fp8kv_block_under_test *s, const char *root,
                              struct fp8kv_block_report *r)
{
    const struct fp8kv_block_format *f = s->format;
    const size_t bs = (size_t)f->block_size;
    const int nv = f->scale_kind == FP8KV_SCALE_UE4M3;
    char dir[1100], sub[96], name[64];
    snprintf(sub, sizeof sub, "blocks/%s", f->name);
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    struct fp8kv_npy in = {0}, gs = {0}, es = {0}, ee = {0};
    int got = read_vector(root, sub, "input.npy", FP8KV_NPY_U32, 2, &in);
    if (got == 0) {
        fp8kv_block_report_note(r, "vectors: no %s/input.npy, not checked", dir);
        return FP8KV_OK;
    }
    const char *rule = fp8kv_block_rule_names[s->rule], *model = fp8kv_block_model_names[s->model];
    int rc = got < 0 ? FP8KV_ERR : FP8KV_OK;
    if (rc == FP8KV_OK && in.shape[1] != bs)
        rc = fp8kv_fail("%s/input.npy: %zu values a row, not %zu", dir, in.shape[1], bs);
    if (rc == FP8KV_OK && nv &&
        (got = read_vector(root, sub, "global_scale.npy", FP8KV_NPY_U32, 1, &gs)) != 1)
        rc = got < 0 ? FP8KV_ERR : fp8kv_fail("%s/global_scale.npy: missing", dir);
    /* <rule>_<model>_*.npy where the models differ, else <rule>_*.npy */
    snprintf(name, sizeof name, "%s_%s_scale.npy", rule, model);
    if (rc == FP8KV_OK && (got = read_vector(root, sub, name, FP8KV_NPY_U8, 1, &es)) == 1)
        snprintf(name, sizeof name, "%s_%s_elements.npy", rule, model);
    else if (rc == FP8KV_OK && got == 0 &&
             (got =
                  read_vector(root, sub, (snprintf(name, sizeof name, "%s_scale.npy", rule), name),
                              FP8KV_NPY_U8, 1, &es)) == 1)
        snprintf(name, sizeof name, "%s_elements.npy", rule);
    if (rc == FP8KV_OK && got == 0)
        rc = fp8kv_fail("%s/%s_%s_scale.npy (or %s_scale.npy): missing", dir, rule, model, rule);
    if (rc == FP8KV_OK && got < 0)
        rc = FP8KV_ERR; /* read_vector named the file */
    if (rc == FP8KV_OK && (got = read_vector(root, sub, name, FP8KV_NPY_U8, 2, &ee)) != 1)
        rc = got < 0 ? FP8KV_ERR : fp8kv_fail("%s/%s: missing", dir, name);
    const size_t n = in.shape[0];
    /* the scale file's name from the elements file's: "..._elements.npy" -> "..._scale.npy" */
    char scale_name[64];
    snprintf(scale_name, sizeof scale_name, "%.*sscale.npy", (int)(strlen(name) - 12), name);
    if (rc == FP8KV_OK && es.shape[0] != n)
        rc = fp8kv_fail("%s/%s: shape [%zu], not [%zu] (the cases of input.npy)", dir, scale_name,
                        es.shape[0], n);
    if (rc == FP8KV_OK && (ee.shape[0] != n || ee.shape[1] != bs))
        rc = fp8kv_fail("%s/%s: shape [%zu, %zu], not [%zu, %zu] (input.npy's)", dir, name,
                        ee.shape[0], ee.shape[1], n, bs);
    if (rc == FP8KV_OK && nv && gs.shape[0] != n)
        rc = fp8kv_fail("%s/global_scale.npy: shape [%zu], not [%zu] (the cases of input.npy)", dir,
                        gs.shape[0], n);
    uint8_t *scales = malloc(n ? n : 1), *elements = malloc(n * bs + 1);
    if (rc == FP8KV_OK && (!scales || !elements))
        rc = fp8kv_fail("out of memory");
    r->ran[FP8KV_BLOCK_CHECK_VECTORS] = rc == FP8KV_OK;
    /* runs of cases with one G, encoded together */
    for (size_t b = 0; rc == FP8KV_OK && b < n;) {
        const uint32_t g = nv ? ((const uint32_t *)gs.data)[b] : 0x3F800000u;
        size_t e = b + 1;
        while (e < n && nv && ((const uint32_t *)gs.data)[e] == g)
            e++;
        rc = fp8kv_block_encode(s, 0, (const float *)in.data + b * bs, e - b,
                                fp8kv_f32_from_bits(g), scales + b, elements + b * bs);
        b = e;
    }
    const uint8_t *want_s = es.data, *want_e = ee.data;
    const uint32_t *x = in.data;
    for (size_t b = 0; rc == FP8KV_OK && b < n; b++) {
        r->checked[FP8KV_BLOCK_CHECK_VECTORS] += 1 + bs;
        if (scales[b] != want_s[b]) {
            r->wrong[FP8KV_BLOCK_CHECK_VECTORS]++;
            fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_VECTORS,
                                    "vectors case %zu (inputs 0x%08x 0x%08x ..): scale expected "
                                    "%02x got %02x",
                                    b, x[b * bs], x[b * bs + 1], want_s[b], scales[b]);
        }
        for (size_t i = 0; i < bs; i++)
            if (elements[b * bs + i] != want_e[b * bs + i]) {
                r->wrong[FP8KV_BLOCK_CHECK_VECTORS]++;
                fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_VECTORS,
                                        "vectors case %zu element %zu: input 0x%08x (scale %02x): "
                                        "expected %02x got %02x",
                                        b, i, x[b * bs + i], want_s[b], want_e[b * bs + i],
                                        elements[b * bs + i]);
            }
    }
    free(scales), free(elements);
    fp8kv_npy_free(&in), fp8kv_npy_free(&gs), fp8kv_npy_free(&es), fp8kv_npy_free(&ee);
    if (rc == FP8KV_OK && fp8kv_block_can_decode(s)) {
        rc = judge_decode_table(s, root, sub, "decode.npy", 1.0f, r);
        if (rc == FP8KV_OK && nv)
            rc = judge_decode_table(s, root, sub, "decode_g.npy", fp8kv_f32_from_bits(0x3EAAAAABu),
                                    r);
    }
    if (rc == FP8KV_OK)
        fp8kv_block_report_note(r, "vectors: %zu cases of %s (%s %s)", n, dir, rule, model);
    return rc;
}
