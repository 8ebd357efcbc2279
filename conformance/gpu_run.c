/* gpu_run.c — the GPU conformance run: every check of the CPU run, on the device subjects of
 * kernels/hip/ (fp8kv/gpu.h), plus the exhaustive device sweeps of every device codec.
 *
 * The judging stays here: the device sweep kernel receives the run table of fp8kv_sweep_runs
 * as data and reports what it found; the encoder, decoder and KV checks are the very functions
 * the CPU run uses, with the device subjects plugged in. Without GPU kernels in the build
 * (FP8KV_HAVE_GPU undefined) the entry points say "unavailable", never "passed".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

#ifndef FP8KV_HAVE_GPU

int fp8kv_gpu_built(void)
{
    return 0;
}

int fp8kv_gpu_target_info(int device, struct fp8kv_target_info *t)
{
    (void)device;
    memset(t, 0, sizeof *t);
    fp8kv_fail("this fp8kv was built without GPU kernels (configure with -DFP8KV_GPU=cuda or hip)");
    return FP8KV_UNAVAILABLE;
}

int fp8kv_run_gpu(const struct fp8kv_run_options *o, struct fp8kv_results *r)
{
    (void)o;
    (void)r;
    return fp8kv_fail("this fp8kv was built without GPU kernels");
}

#else /* FP8KV_HAVE_GPU */

#include "fp8kv/gpu.h"

#ifndef FP8KV_HOST_COMPILER
#define FP8KV_HOST_COMPILER "unknown"
#endif
#ifndef FP8KV_HOST_FLAGS
#define FP8KV_HOST_FLAGS "unknown"
#endif

_Static_assert((int)FP8KV_GPU_DOMAIN_F32 == (int)FP8KV_SWEEP_F32 &&
                   (int)FP8KV_GPU_DOMAIN_F16 == (int)FP8KV_SWEEP_F16 &&
                   (int)FP8KV_GPU_DOMAIN_BF16 == (int)FP8KV_SWEEP_BF16,
               "device sweep domains follow enum fp8kv_sweep_domain");
_Static_assert(FP8KV_CLASS_COUNT <= FP8KV_GPU_SWEEP_CLASSES, "input classes fit the device counters");
_Static_assert(FP8KV_GPU_SWEEP_FAILURES <= FP8KV_MAX_FAILURE_LINES, "failure lines fit a check");
_Static_assert(sizeof(struct fp8kv_gpu_sweep_run) == 8, "the device run table is 8 bytes a run");

int fp8kv_gpu_built(void)
{
    return 1;
}

static char target_name[32]; /* of the open device, for the checks' details */

int fp8kv_gpu_target_info(int device, struct fp8kv_target_info *t)
{
    memset(t, 0, sizeof *t);
    struct fp8kv_gpu_device_info info;
    if (fp8kv_gpu_open(device, &info) != 0) {
        fp8kv_fail("%s", fp8kv_gpu_last_error());
        return FP8KV_UNAVAILABLE;
    }
    snprintf(t->target, sizeof t->target, "%s", info.target);
    snprintf(target_name, sizeof target_name, "%s", info.target);
    snprintf(t->device, sizeof t->device, "%.100s (device %d, %d multiprocessors, %.0f GiB)",
             info.name, info.index, info.multiprocessors,
             (double)info.global_memory / 1073741824.0);
    snprintf(t->runtime, sizeof t->runtime, "%s", info.runtime);
    snprintf(t->compiler, sizeof t->compiler, "device: %.70s; host: %.70s", info.compiler,
             FP8KV_HOST_COMPILER);
    snprintf(t->flags, sizeof t->flags, "device: %.300s; host: %.300s", info.flags,
             FP8KV_HOST_FLAGS);
    snprintf(t->compiled, sizeof t->compiled, "device codecs: %.230s", info.compiled);
    t->executed = 1;
    return FP8KV_OK;
}

/* ---- subjects ---------------------------------------------------------------------------------- */

static int codec_ids[FP8KV_GPU_CODEC_COUNT];

static int gpu_encode(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                      uint8_t *q)
{
    if (fp8kv_gpu_encode(*(const int *)ctx, cfg, x, n, s, q) != 0)
        return fp8kv_fail("%s", fp8kv_gpu_last_error());
    return FP8KV_OK;
}

/* The device decoders behind the decoder checks' signature (which has no status: a failure
 * leaves NaN outputs, which fail the check, and counts in fp8kv_gpu_error_count). */
static void gpu_decode(int decoder, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n,
                       float s, float *y)
{
    if (fp8kv_gpu_decode(decoder, cfg, q, n, s, y) != 0)
        for (size_t i = 0; i < n; i++)
            y[i] = NAN;
}
static void gpu_decode_bits(struct fp8kv_codec_cfg c, const uint8_t *q, size_t n, float s, float *y)
{
    gpu_decode(FP8KV_GPU_DECODE_BITS, c, q, n, s, y);
}
static void gpu_decode_table(struct fp8kv_codec_cfg c, const uint8_t *q, size_t n, float s,
                             float *y)
{
    gpu_decode(FP8KV_GPU_DECODE_TABLE, c, q, n, s, y);
}
static void gpu_decode_fast(struct fp8kv_codec_cfg c, const uint8_t *q, size_t n, float s, float *y)
{
    gpu_decode(FP8KV_GPU_DECODE_FAST, c, q, n, s, y);
}
static void (*const gpu_decoders[FP8KV_GPU_DECODER_COUNT])(struct fp8kv_codec_cfg, const uint8_t *,
                                                           size_t, float, float *) = {
    gpu_decode_bits, gpu_decode_table, gpu_decode_fast};

/* ---- helpers ---------------------------------------------------------------------------------- */

/* Whether device codec c implements profile p: every profile through cfg, or a claimed one. */
static int implements(const struct fp8kv_gpu_codec *c, const struct fp8kv_profile *p)
{
    if (c->follows_cfg)
        return 1;
    const size_t len = strlen(p->name);
    for (const char *s = c->claims; (s = strstr(s, p->name)) != NULL; s += len)
        if ((s == c->claims || s[-1] == ' ') && (s[len] == '\0' || s[len] == ' '))
            return 1;
    return 0;
}

/* A failing check that says a GPU call failed (the run goes on with the next subject). */
static int add_gpu_failure(const char *name, const char *subject, const struct fp8kv_profile *p,
                           const char *message, struct fp8kv_results *r)
{
    struct fp8kv_check c;
    fp8kv_check_init(&c, name, subject, p->name, "a GPU runtime call or kernel failed");
    c.cases = 1;
    fp8kv_check_failure(&c, -1, "%.90s", message);
    fp8kv_check_finish(&c, 0.0);
    return fp8kv_results_add(r, &c);
}

/* A vendor codec runs each set twice: renames the checks r[from ..) "<name>-nan-<check>", and
 * makes the strict ones reported, not gated. Those conversions claim their profiles with NaN
 * check class (any NaN code for a NaN); strict shows, and counts per input class, where they
 * differ from the exact byte (on NVIDIA: -NaN becomes 0x7F, DEFECTS.md row 6). */
static void tag_nan_check(struct fp8kv_results *r, size_t from, enum fp8kv_nan_check check)
{
    for (size_t i = from; i < r->count; i++) {
        struct fp8kv_check *c = &r->items[i];
        char name[sizeof c->name];
        snprintf(name, sizeof name, "%.60s-nan-%s", c->name, fp8kv_nan_check_names[check]);
        memcpy(c->name, name, sizeof name);
        if (check == FP8KV_NAN_CHECK_STRICT)
            c->gated = 0;
    }
}

/* ---- device sweeps ------------------------------------------------------------------------------ */

static int gpu_sweep(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                     enum fp8kv_sweep_domain domain, const uint32_t *bounds, int codec,
                     struct fp8kv_results *r)
{
    struct fp8kv_sweep_run *runs = NULL;
    const long n = fp8kv_sweep_runs(p, check, domain, bounds, &runs);
    if (n < 0)
        return FP8KV_ERR;
    struct fp8kv_gpu_sweep_run *dev = malloc((size_t)n * sizeof *dev);
    if (!dev) {
        free(runs);
        return fp8kv_fail("out of memory");
    }
    for (long i = 0; i < n; i++)
        dev[i] = (struct fp8kv_gpu_sweep_run){runs[i].start, runs[i].mask, runs[i].value,
                                              runs[i].cls, 0};
    free(runs);
    const char *subject = fp8kv_gpu_codecs[codec].name;
    struct fp8kv_gpu_sweep_result res;
    const double t0 = fp8kv_now();
    const int rc = fp8kv_gpu_sweep(codec, fp8kv_cfg_of_profile(p, FP8KV_MODEL_F32_DIV),
                                   (enum fp8kv_gpu_domain)domain, dev, (size_t)n, 0, &res);
    free(dev);
    char name[32], detail[160];
    snprintf(name, sizeof name, "sweep-%s", fp8kv_sweep_domain_names[domain]);
    if (rc != 0)
        return add_gpu_failure(name, subject, p, fp8kv_gpu_last_error(), r);
    snprintf(detail, sizeof detail,
             "all %llu %s inputs, scale 1, nan check %s, on the device (%s): kernel %.2f ms",
             (unsigned long long)res.cases, fp8kv_sweep_domain_names[domain],
             fp8kv_nan_check_names[check], target_name, res.kernel_ms);
    struct fp8kv_check c;
    fp8kv_check_init(&c, name, subject, p->name, detail);
    c.cases = res.cases;
    c.has_classes = 1;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        c.class_mismatches[k] = res.class_mismatches[k];
        c.mismatches += res.class_mismatches[k];
    }
    for (int k = FP8KV_CLASS_COUNT; k < FP8KV_GPU_SWEEP_CLASSES; k++)
        c.mismatches += res.class_mismatches[k]; /* none: the runs carry our classes only */
    const char *digits = domain == FP8KV_SWEEP_F32 ? "0x%08x" : "0x%04x";
    for (int i = 0; i < res.failures; i++) {
        char input[16];
        snprintf(input, sizeof input, digits, res.failure_input[i]);
        snprintf(c.failures[i], sizeof c.failures[i], "%s => %02x  expected %02x  %s", input,
                 res.failure_got[i], res.failure_want[i],
                 res.failure_cls[i] < FP8KV_CLASS_COUNT ? fp8kv_class_names[res.failure_cls[i]]
                                                        : "?");
    }
    c.failure_lines = res.failures;
    fp8kv_check_finish(&c, fp8kv_now() - t0);
    return fp8kv_results_add(r, &c);
}

/* ---- one device codec under one profile ---------------------------------------------------------- */

static int run_codec(const struct fp8kv_run_options *o, const struct fp8kv_profile *p,
                     const uint32_t *bounds, int codec, struct fp8kv_results *r)
{
    const struct fp8kv_gpu_codec *info = &fp8kv_gpu_codecs[codec];
    codec_ids[codec] = codec;
    /* vendor conversions: strict shows a NaN-sign difference, class tells it from a wrong value */
    const enum fp8kv_nan_check checks[2] = {FP8KV_NAN_CHECK_STRICT, FP8KV_NAN_CHECK_CLASS};
    const int nchecks = info->vendor ? 2 : 1;
    int rc = 0;
    for (int k = 0; k < nchecks && rc == 0; k++) {
        const size_t from = r->count;
        const unsigned long errors = fp8kv_gpu_error_count();
        struct fp8kv_encoder_subject subject = {info->name, &codec_ids[codec], gpu_encode};
        rc = fp8kv_check_encoder_vectors(o->vectors_dir, p, checks[k], &subject, r);
        if (rc != 0 && fp8kv_gpu_error_count() != errors) /* the device failed, not the vectors */
            rc = add_gpu_failure("vectors", info->name, p, fp8kv_last_error(), r);
        for (int d = 0; d < FP8KV_SWEEP_DOMAIN_COUNT && rc == 0; d++)
            rc = gpu_sweep(p, checks[k], (enum fp8kv_sweep_domain)d, bounds, codec, r);
        if (info->vendor)
            tag_nan_check(r, from, checks[k]);
        fp8kv_log_checks(o->log, r, from);
    }
    return rc;
}

/* ---- long-context attention ------------------------------------------------------------------------ */

#define LONG_HEAD 128
#define LONG_KV_HEADS 2
/* q heads: 8, 4 and 2, i.e. 4, 2 and 1 q heads per kv head (each a path of the kernel) */
#define LONG_BLOCK 16
#define LONG_SEQS 4
static const int32_t long_lens[LONG_SEQS] = {3000, 777, 1, 0};

/* The golden cases are short (one or a few partitions of the flash-decoding split, head sizes
 * up to 32): this case runs the long-context path (many partitions, 16-byte loads, 4 q heads
 * per kv head) on random finite codes, against a double-precision reference over the oracle's
 * decode table. */
static int check_attention_long(const char *dir, const struct fp8kv_profile *p,
                                const struct fp8kv_kv_paths *paths, enum fp8kv_kv_layout layout,
                                int q_heads, struct fp8kv_results *r)
{
    const double t0 = fp8kv_now();
    char path[4096];
    struct fp8kv_npy table = {0};
    fp8kv_vector_path(path, sizeof path, dir, p, "decode.npy");
    if (fp8kv_npy_read_expect(path, FP8KV_NPY_F32, 1, 256, &table) != 0)
        return FP8KV_ERR;
    const float *decode = table.data;

    int max_blocks = 0, used = 0;
    for (int i = 0; i < LONG_SEQS; i++) {
        const int b = (long_lens[i] + LONG_BLOCK - 1) / LONG_BLOCK;
        max_blocks = b > max_blocks ? b : max_blocks;
        used += b;
    }
    const struct fp8kv_cache_shape shape = {used + 7, LONG_BLOCK, LONG_KV_HEADS, LONG_HEAD, layout};
    const size_t cache = fp8kv_cache_bytes(&shape), qn = (size_t)LONG_SEQS * q_heads * LONG_HEAD;
    uint8_t *kc = malloc(cache), *vc = malloc(cache);
    int32_t *bt = calloc((size_t)LONG_SEQS * max_blocks, sizeof *bt);
    int32_t *perm = malloc((size_t)shape.num_blocks * sizeof *perm);
    float *q = malloc(qn * sizeof *q), *y = malloc(qn * sizeof *y);
    double *ref = malloc(qn * sizeof *ref), *w = malloc(4096 * sizeof *w);
    int rc = kc && vc && bt && perm && q && y && ref && w ? 0 : fp8kv_fail("out of memory");
    if (rc != 0)
        goto done;

    /* random finite codes; a shuffled block table; queries in [-1, 1) */
    uint64_t state = 0x6C6F6E67ull + (uint64_t)layout; /* "long" */
    for (size_t i = 0; i < cache; i++) {
        uint8_t k, v;
        do
            k = (uint8_t)fp8kv_splitmix64(&state);
        while (fp8kv_is_nan_code(p->format, k));
        do
            v = (uint8_t)fp8kv_splitmix64(&state);
        while (fp8kv_is_nan_code(p->format, v));
        kc[i] = k;
        vc[i] = v;
    }
    for (int b = 0; b < shape.num_blocks; b++)
        perm[b] = b;
    for (int b = shape.num_blocks - 1; b > 0; b--) {
        const int j = (int)(fp8kv_splitmix64(&state) % (uint64_t)(b + 1));
        const int32_t t = perm[b];
        perm[b] = perm[j];
        perm[j] = t;
    }
    for (int i = 0, next = 0; i < LONG_SEQS; i++)
        for (int j = 0; j * LONG_BLOCK < long_lens[i]; j++)
            bt[(size_t)i * max_blocks + j] = perm[next++];
    for (size_t i = 0; i < qn; i++)
        q[i] = (float)((double)(fp8kv_splitmix64(&state) >> 11) * 0x1p-52 - 1.0);
    const float k_scale = 0.05f, v_scale = 0.1f, softmax_scale = 0.08838834764831845f; /* 1/sqrt(128) */

    /* the reference: softmax(scale * q.k) . v in double over the decode table */
    for (int i = 0; i < LONG_SEQS; i++)
        for (int h = 0; h < q_heads; h++) {
            const int kvh = h / (q_heads / LONG_KV_HEADS), n = long_lens[i];
            const float *qv = q + ((size_t)i * q_heads + h) * LONG_HEAD;
            double *out = ref + ((size_t)i * q_heads + h) * LONG_HEAD, max = -INFINITY,
                   sum = 0.0;
            for (int t = 0; t < n; t++) {
                const int64_t slot = (int64_t)bt[(size_t)i * max_blocks + t / LONG_BLOCK] * LONG_BLOCK +
                                     t % LONG_BLOCK;
                double dot = 0.0;
                for (int d = 0; d < LONG_HEAD; d++)
                    dot += (double)qv[d] * (double)decode[kc[fp8kv_key_offset(&shape, slot, kvh, d)]] *
                           (double)k_scale;
                w[t] = (double)softmax_scale * dot;
                max = w[t] > max ? w[t] : max;
            }
            for (int t = 0; t < n; t++)
                sum += (w[t] = exp(w[t] - max));
            for (int d = 0; d < LONG_HEAD; d++) {
                double acc = 0.0;
                for (int t = 0; t < n; t++) {
                    const int64_t slot =
                        (int64_t)bt[(size_t)i * max_blocks + t / LONG_BLOCK] * LONG_BLOCK +
                        t % LONG_BLOCK;
                    acc += w[t] / sum * (double)decode[vc[fp8kv_value_offset(&shape, slot, kvh, d)]] *
                           (double)v_scale;
                }
                out[d] = acc; /* n == 0: 0, as the contract says */
            }
        }

    memset(y, 0xA5, qn * sizeof *y);
    paths->paged_attention(fp8kv_cfg_of_profile(p, FP8KV_MODEL_F32_DIV), &shape, q, q_heads,
                           kc, vc, bt, max_blocks, long_lens, LONG_SEQS, k_scale, v_scale,
                           softmax_scale, y);
    struct fp8kv_check c;
    char detail[160];
    snprintf(detail, sizeof detail,
             "%s, %d x %d heads (q %d), block %d, lengths 3000/777/1/0, random codes, NMSE vs "
             "double reference",
             layout == FP8KV_LAYOUT_SPLIT_X ? "split_x" : "nhd", LONG_KV_HEADS, LONG_HEAD,
             q_heads, LONG_BLOCK);
    fp8kv_check_init(&c, "kv-attention-long", paths->name, p->name, detail);
    c.cases = qn;
    c.has_nmse = 1;
    c.threshold = 1e-10;
    c.nmse = fp8kv_nmse(y, ref, qn);
    if (!(c.nmse <= c.threshold))
        for (size_t i = 0; i < qn && c.failure_lines < FP8KV_MAX_FAILURE_LINES; i++)
            if (!(fabs((double)y[i] - ref[i]) <= 1e-5 * (fabs(ref[i]) + 1e-3)))
                fp8kv_check_failure(&c, -1, "out[%zu] => %.9g  expected %.12g", i, (double)y[i],
                                    ref[i]);
    fp8kv_check_finish(&c, fp8kv_now() - t0);
    rc = fp8kv_results_add(r, &c);
done:
    fp8kv_npy_free(&table);
    free(kc);
    free(vc);
    free(bt);
    free(perm);
    free(q);
    free(y);
    free(ref);
    free(w);
    return rc;
}

/* ---- the run ---------------------------------------------------------------------------------------- */

static int run_profile(const struct fp8kv_run_options *o, const struct fp8kv_profile *p,
                       struct fp8kv_results *r)
{
    const char *dir = o->vectors_dir;
    uint32_t *bounds = fp8kv_load_boundaries(dir, p);
    if (!bounds)
        return FP8KV_ERR;
    const unsigned long errors = fp8kv_gpu_error_count();
    int rc = 0;
    for (int c = 0; c < FP8KV_GPU_CODEC_COUNT && rc == 0; c++)
        if (fp8kv_gpu_codec_available(c) && implements(&fp8kv_gpu_codecs[c], p))
            rc = run_codec(o, p, bounds, c, r);
    for (int d = 0; d < FP8KV_GPU_DECODER_COUNT && rc == 0; d++) {
        const size_t from = r->count;
        rc = fp8kv_check_decoder_vectors(dir, p, fp8kv_gpu_decoder_names[d], gpu_decoders[d], r);
        fp8kv_log_checks(o->log, r, from);
    }
    size_t from = r->count;
    if (rc == 0)
        rc = fp8kv_check_kv(dir, p, &fp8kv_gpu_kv_paths, r);
    for (int q_heads = 8; q_heads >= 2 && rc == 0; q_heads /= 2)
        rc = check_attention_long(dir, p, &fp8kv_gpu_kv_paths, FP8KV_LAYOUT_NHD, q_heads, r);
    if (rc == 0)
        rc = check_attention_long(dir, p, &fp8kv_gpu_kv_paths, FP8KV_LAYOUT_SPLIT_X, 8, r);
    if (rc == 0)
        rc = fp8kv_check_quantization_nmse(p, &fp8kv_gpu_kv_paths, r);
    /* the KV paths and decoders have no status of their own: a failed GPU call shows here */
    if (rc == 0) {
        struct fp8kv_check c;
        fp8kv_check_init(&c, "gpu-errors", target_name, p->name,
                         "no GPU runtime call or kernel failed during this profile's checks");
        c.cases = 1;
        if (fp8kv_gpu_error_count() != errors)
            fp8kv_check_failure(&c, -1, "%lu failures; the last: %.70s",
                                fp8kv_gpu_error_count() - errors, fp8kv_gpu_last_error());
        fp8kv_check_finish(&c, 0.0);
        rc = fp8kv_results_add(r, &c);
    }
    fp8kv_log_checks(o->log, r, from);
    free(bounds);
    return rc;
}

int fp8kv_run_gpu(const struct fp8kv_run_options *o, struct fp8kv_results *r)
{
    return fp8kv_run_profiles(o, r, run_profile);
}

#endif /* FP8KV_HAVE_GPU */
