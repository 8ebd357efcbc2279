/* generate.c — `fp8kv gen`: every vector set of every profile, then the manifest. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fp8kv/diag.h"
#include "fp8kv/gen.h"
#include "fp8kv/oracle.h"
#include "blocks.h"
#include "kv_cases.h"
#include "fp8kv/fileio.h"
#include "manifest.h"
#include "sets.h"

/* add_array: writes <profile>/<name> (rows, or rows x cols when cols > 0) and records it;
 * does nothing when rc already holds an error, so calls chain. */
static int add_array(int rc, struct fp8kv_manifest *m, const struct fp8kv_profile *p,
                     const char *set, const char *name, const char *description,
                     enum fp8kv_npy_dtype dtype, size_t rows, size_t cols, const void *data)
{
    if (rc != 0)
        return rc;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", p->name, name);
    size_t shape[2] = {rows, cols};
    return fp8kv_manifest_add_npy(m, p->name, set, path, description, dtype, cols ? 2 : 1, shape,
                                  data);
}

/* decode table, round trip, boundaries: the per-code sets. */
static int gen_code_sets(struct fp8kv_manifest *m, const struct fp8kv_profile *p)
{
    const struct fp8kv_format *f = p->format;
    uint32_t decoded[256], roundtrip_in[256];
    uint8_t roundtrip_out[256];
    for (int q = 0; q < 256; q++) {
        decoded[q] = fp8kv_oracle_decode_f32(f, (uint8_t)q);
        roundtrip_in[q] = decoded[q];
        roundtrip_out[q] = fp8kv_oracle_encode_f32(p, decoded[q]);
    }
    int count = fp8kv_boundary_count(f);
    uint32_t *bounds = malloc((size_t)count * sizeof *bounds);
    int rc = bounds ? fp8kv_oracle_boundaries(f, bounds) : fp8kv_fail("out of memory");
    rc = add_array(
        rc, m, p, "decode", "decode.npy",
        "exact value of every code 0..255 as float32 (NaN codes: quiet NaN with the code's sign)",
        FP8KV_NPY_F32, 256, 0, decoded);
    rc = add_array(rc, m, p, "roundtrip", "roundtrip_input.npy",
                   "f32 bits of decode(q) for q = 0..255", FP8KV_NPY_U32, 256, 0, roundtrip_in);
    rc = add_array(rc, m, p, "roundtrip", "roundtrip_expected.npy",
                   "encode(decode(q)): the code each roundtrip input must give", FP8KV_NPY_U8, 256,
                   0, roundtrip_out);
    rc = add_array(
        rc, m, p, "boundaries", "boundaries.npy",
        "f32 bits: [0] = 0; [k] = smallest positive f32 whose code magnitude is k (k = 1.."
        "max_code); [max_code+1] = smallest positive f32 that overflows. Certified with MPFR.",
        FP8KV_NPY_U32, (size_t)count, 0, bounds);
    free(bounds);
    return rc;
}

/* edges: inputs, expected codes, classes, and the human-readable list. */
static int gen_edges(struct fp8kv_manifest *m, const struct fp8kv_profile *p)
{
    struct fp8kv_u32vec in = {0};
    int rc = fp8kv_edge_inputs(p->format, &in);
    uint8_t *expected = malloc(in.n ? in.n : 1), *cls = malloc(in.n ? in.n : 1);
    size_t text_cap = 256 + in.n * 48, len = 0;
    char *text = malloc(text_cap);
    if (rc == 0 && (!expected || !cls || !text))
        rc = fp8kv_fail("out of memory");
    if (rc == 0) {
        len += (size_t)snprintf(
            text, text_cap,
            "# fp8kv edge vectors, profile %s (format %s, overflow %s, inf %s)\n"
            "# f32-input-bits expected-code  # input-class\n",
            p->name, p->format->name, fp8kv_overflow_names[p->overflow], fp8kv_inf_names[p->inf]);
        for (size_t i = 0; i < in.n; i++) {
            expected[i] = fp8kv_oracle_encode_f32(p, in.v[i]);
            cls[i] = (uint8_t)fp8kv_classify_f32(p->format, in.v[i]);
            len += (size_t)snprintf(text + len, text_cap - len, "0x%08x %02x  # %s\n", in.v[i],
                                    expected[i], fp8kv_class_names[cls[i]]);
        }
    }
    rc = add_array(rc, m, p, "edges", "edges_input.npy", "edge inputs, f32 bits, sorted",
                   FP8KV_NPY_U32, in.n, 0, in.v);
    rc = add_array(rc, m, p, "edges", "edges_expected.npy",
                   "expected code of each edge input (scale 1)", FP8KV_NPY_U8, in.n, 0, expected);
    rc = add_array(rc, m, p, "edges", "edges_class.npy",
                   "input class of each edge input: index into the manifest's \"classes\"",
                   FP8KV_NPY_U8, in.n, 0, cls);
    if (rc == 0) {
        char path[256];
        snprintf(path, sizeof path, "%s/edges.txt", p->name);
        rc = fp8kv_manifest_add_text(m, p->name, "edges", path,
                                     "the edge vectors as hex text, TestFloat style", text, len);
    }
    free(text);
    free(cls);
    free(expected);
    fp8kv_u32vec_free(&in);
    return rc;
}

/* all f16 and all bf16 inputs at scale 1. */
static int gen_half_sweeps(struct fp8kv_manifest *m, const struct fp8kv_profile *p)
{
    uint8_t *codes = malloc(65536);
    int rc = codes ? 0 : fp8kv_fail("out of memory");
    static const struct {
        enum fp8kv_dtype dtype;
        const char *file, *desc;
    } sweeps[] = {
        {FP8KV_DTYPE_F16, "f16_expected.npy",
         "expected code of every f16 input at scale 1; index i is the f16 with bits i"},
        {FP8KV_DTYPE_BF16, "bf16_expected.npy",
         "expected code of every bf16 input at scale 1; index i is the bf16 with bits i"},
    };
    for (size_t k = 0; k < 2 && rc == 0; k++) {
        for (uint32_t i = 0; i < 65536; i++)
            codes[i] = fp8kv_oracle_encode_f32(p, fp8kv_widen_to_f32(sweeps[k].dtype, i));
        rc = add_array(rc, m, p, fp8kv_dtype_names[sweeps[k].dtype], sweeps[k].file, sweeps[k].desc,
                       FP8KV_NPY_U8, 65536, 0, codes);
    }
    free(codes);
    return rc;
}

/* store-with-scale pairs, with the expected code under every scale model. */
static int gen_scale_pairs(struct fp8kv_manifest *m, const struct fp8kv_profile *p, FILE *log)
{
    struct fp8kv_scale_pairs pairs = {0};
    int rc = fp8kv_scale_pair_inputs(p->format, &pairs);
    uint8_t *expected = malloc(pairs.n * FP8KV_MODEL_COUNT + 1);
    if (rc == 0 && !expected)
        rc = fp8kv_fail("out of memory");
    size_t disagree = 0;
    for (size_t i = 0; i < pairs.n && rc == 0; i++) {
        uint8_t *row = expected + i * FP8KV_MODEL_COUNT;
        int differs = 0;
        for (int model = 0; model < FP8KV_MODEL_COUNT; model++) {
            row[model] =
                fp8kv_oracle_store(p, (enum fp8kv_scale_model)model, pairs.x[i], pairs.s[i]);
            differs |= row[model] != row[0];
        }
        disagree += (size_t)differs;
    }
    char desc[256];
    snprintf(desc, sizeof desc,
             "expected code under each scale model, columns in the manifest's \"models\" order; "
             "%zu of %zu pairs have models that disagree",
             disagree, pairs.n);
    rc = add_array(rc, m, p, "scale", "scale_x.npy",
                   "store input x, f32 bits (f16/bf16 inputs widened exactly)", FP8KV_NPY_U32,
                   pairs.n, 0, pairs.x);
    rc =
        add_array(rc, m, p, "scale", "scale_dtype.npy", "dtype of each input: 0 f32, 1 f16, 2 bf16",
                  FP8KV_NPY_U8, pairs.n, 0, pairs.dtype);
    rc = add_array(rc, m, p, "scale", "scale_s.npy", "per-tensor scale s, f32 bits", FP8KV_NPY_U32,
                   pairs.n, 0, pairs.s);
    rc = add_array(rc, m, p, "scale", "scale_expected.npy", desc, FP8KV_NPY_U8, pairs.n,
                   FP8KV_MODEL_COUNT, expected);
    if (rc == 0 && log)
        fprintf(log, "gen: %s: %zu scale pairs, %zu where the models disagree\n", p->name, pairs.n,
                disagree);
    free(expected);
    fp8kv_scale_pairs_free(&pairs);
    return rc;
}

/* read (dequantize) outputs of every code at every scale. */
static int gen_reads(struct fp8kv_manifest *m, const struct fp8kv_profile *p)
{
    size_t n = 256 * fp8kv_gen_scale_count;
    uint8_t *codes = malloc(n);
    uint32_t *scales = malloc(n * sizeof *scales), *f32 = malloc(n * sizeof *f32);
    uint16_t *f16 = malloc(n * 2 * sizeof *f16), *bf16 = malloc(n * 2 * sizeof *bf16);
    int rc = codes && scales && f32 && f16 && bf16 ? 0 : fp8kv_fail("out of memory");
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint8_t q = (uint8_t)(i % 256);
        uint32_t s = fp8kv_gen_scales[i / 256];
        codes[i] = q;
        scales[i] = s;
        f32[i] = fp8kv_oracle_read(p->format, FP8KV_READ_ROUNDED, FP8KV_DTYPE_F32, q, s);
        for (int model = 0; model < FP8KV_READ_MODEL_COUNT; model++) {
            enum fp8kv_read_model rm = (enum fp8kv_read_model)model;
            f16[2 * i + model] = (uint16_t)fp8kv_oracle_read(p->format, rm, FP8KV_DTYPE_F16, q, s);
            bf16[2 * i + model] =
                (uint16_t)fp8kv_oracle_read(p->format, rm, FP8KV_DTYPE_BF16, q, s);
        }
    }
    rc = add_array(rc, m, p, "read", "read_code.npy", "code q of each read case", FP8KV_NPY_U8, n,
                   0, codes);
    rc = add_array(rc, m, p, "read", "read_scale.npy", "scale s of each read case, f32 bits",
                   FP8KV_NPY_U32, n, 0, scales);
    rc = add_array(rc, m, p, "read", "read_f32.npy", "f32 bits of RN32(decode(q) * s)",
                   FP8KV_NPY_U32, n, 0, f32);
    rc = add_array(rc, m, p, "read", "read_f16.npy",
                   "f16 bits: column 0 RN16(RN32(decode(q) * s)), column 1 RN16(decode(q) * s)",
                   FP8KV_NPY_U16, n, FP8KV_READ_MODEL_COUNT, f16);
    rc = add_array(rc, m, p, "read", "read_bf16.npy",
                   "bf16 bits: column 0 RNbf16(RN32(decode(q) * s)), column 1 "
                   "RNbf16(decode(q) * s)",
                   FP8KV_NPY_U16, n, FP8KV_READ_MODEL_COUNT, bf16);
    free(codes);
    free(scales);
    free(f32);
    free(f16);
    free(bf16);
    return rc;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

int fp8kv_generate(const char *dir, FILE *log)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct fp8kv_manifest m = {.dir = dir};
    int rc = fp8kv_make_dirs(dir);
    for (int i = 0; i < fp8kv_profile_count && rc == 0; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        rc = gen_code_sets(&m, p);
        if (rc == 0)
            rc = gen_edges(&m, p);
        if (rc == 0)
            rc = gen_half_sweeps(&m, p);
        if (rc == 0)
            rc = gen_scale_pairs(&m, p, log);
        if (rc == 0)
            rc = gen_reads(&m, p);
        if (rc == 0)
            rc = fp8kv_gen_kv_cases(&m, p);
        if (rc == 0 && log)
            fprintf(log, "gen: %s done (%.1f s)\n", p->name, seconds_since(&t0));
    }
    if (rc == 0)
        rc = fp8kv_gen_blocks(&m, log);
    /* (the integer formats' vectors are not in the committed set yet: docs/DESIGN.md §11) */
    if (rc == 0)
        rc = fp8kv_manifest_finish(&m, FP8KV_VERSION);
    if (rc == 0 && log)
        fprintf(log, "gen: wrote %zu files + MANIFEST.json + SHA256SUMS to %s in %.1f s\n", m.count,
                dir, seconds_since(&t0));
    fp8kv_manifest_free(&m);
    return rc;
}
