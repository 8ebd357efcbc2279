/* codec/checks.c — encoders and decoders against the golden vector sets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/checks.h"
#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "fp8kv/verify.h"

static float f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Read once through fp8kv_vectors_read: of a verified directory, the bytes verified or an
 * error naming the file (never a verdict against truth changed since), parsed from the bytes
 * read. */
int fp8kv_load_vector_file(const char *dir, const struct fp8kv_profile *p, const char *file,
                           enum fp8kv_npy_dtype dtype, size_t rows, size_t cols,
                           struct fp8kv_npy *a)
{
    char path[4096], rel[512];
    fp8kv_vector_path(path, sizeof path, dir, p, file);
    snprintf(rel, sizeof rel, "%s/%s", p->name, file);
    if (fp8kv_vectors_read_npy(dir, rel, dtype, cols ? 2 : 1, rows, a) != 0)
        return FP8KV_ERR;
    if (cols && a->shape[1] != cols) {
        fp8kv_npy_free(a);
        return fp8kv_fail("%s: expected %zu columns, found %zu", path, cols, a->shape[1]);
    }
    return FP8KV_OK;
}

/* Whether x / s can meet an invalid operation in some scale model: 0 * RN32(1 / s) with 1 / s
 * overflowing, 0 / 0, Inf / Inf. The NaN it makes has no sign by IEEE 754 (x86 gives the
 * negative default NaN, CUDA the positive one): the oracle writes the positive NaN code, and
 * such a pair's NaN is judged by class even under the strict check. */
static int invalid_operation(uint32_t x, uint32_t s)
{
    uint32_t xm = x & 0x7FFFFFFFu, sm = s & 0x7FFFFFFFu;
    return (xm == 0 && (sm == 0 || sm < 0x00400000u)) || (xm == 0x7F800000u && sm == 0x7F800000u);
}

int fp8kv_pair_code_matches(const struct fp8kv_profile *p, enum fp8kv_nan_check check, uint32_t x,
                            uint32_t s, uint8_t got, uint8_t want)
{
    if (invalid_operation(x, s))
        check = FP8KV_NAN_CHECK_CLASS; /* IEEE 754 leaves the sign of this NaN open */
    return fp8kv_codes_match(p->format, check, got, want);
}

int fp8kv_name_crash(const struct fp8kv_subject *subject, const float *x, size_t n, float s)
{
    char message[1024];
    snprintf(message, sizeof message, "%s", fp8kv_last_error());
    size_t at;
    if (!subject->locate_crash || subject->locate_crash(subject->ctx, x, n, s, &at) != 0) {
        fp8kv_fail("%s", message);
        return FP8KV_ERR_SUBJECT;
    }
    uint32_t bits;
    memcpy(&bits, &x[at], sizeof bits);
    char input[128];
    const struct fp8kv_failure f = fp8kv_failure_one(FP8KV_DTYPE_F32, bits, -1, 0, 0);
    fp8kv_failure_input_text(&f, input, sizeof input);
    fp8kv_fail("%s; the first input that crashes it alone: %s (input %zu of the %zu)", message,
               input, at + 1, n);
    return FP8KV_ERR_SUBJECT;
}

int fp8kv_encode_grouped(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                         const float *x, const uint32_t *scales, size_t n, uint8_t *q)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = scales ? i + 1 : n; /* no scales: one call for the whole set */
        while (scales && j < n && scales[j] == scales[i])
            j++;
        const float s = scales ? f32_of(scales[i]) : 1.0f;
        rc = subject->encode(subject->ctx, cfg, x + i, j - i, s, q + i);
        if (rc == FP8KV_ERR_SUBJECT)
            rc = fp8kv_name_crash(subject, x + i, j - i, s);
        i = j;
    }
    return rc;
}

/* Runs the subject over inputs (f32 bits) at scales (NULL: 1) with cfg and judges the codes
 * against want[i * stride], counting per class (a pair's class is its quotient's). The inputs
 * are of dtype: f32 as given, or every f16 or bf16 pattern in bit order widened to f32 (input
 * i is bit pattern i), shown as their own bits. */
static int judge_encoder(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                         const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                         enum fp8kv_dtype dtype, const uint32_t *inputs, const uint32_t *scales,
                         size_t n, const uint8_t *want, size_t stride, struct fp8kv_check *c)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    uint8_t *q = malloc(n ? n : 1);
    if (!x || !q) {
        free(x);
        free(q);
        return fp8kv_fail("out of memory");
    }
    memcpy(x, inputs, n * sizeof *x);
    int rc = fp8kv_encode_grouped(subject, cfg, x, scales, n, q);
    c->cases = n;
    c->has_classes = 1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const int cls = scales ? (int)fp8kv_pair_class(p->format, inputs[i], scales[i])
                               : (int)fp8kv_classify_f32(p->format, inputs[i]);
        c->class_cases[cls]++;
        const uint8_t w = want[i * stride];
        if (scales ? fp8kv_pair_code_matches(p, check, inputs[i], scales[i], q[i], w)
                   : fp8kv_codes_match(p->format, check, q[i], w))
            continue;
        struct fp8kv_failure f = fp8kv_failure_one(
            dtype, dtype == FP8KV_DTYPE_F32 ? inputs[i] : (uint32_t)i, cls, q[i], w);
        f.has_scale = scales != NULL;
        f.scale = scales ? scales[i] : 0;
        fp8kv_check_fail_input(c, &f);
    }
    free(x);
    free(q);
    return rc;
}

/* One check over a set: init, judge, finish, append. */
static int encoder_set(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                       const struct fp8kv_subject *subject, enum fp8kv_scale_model model,
                       const char *name, const char *detail, enum fp8kv_dtype dtype,
                       const uint32_t *inputs, const uint32_t *scales, size_t n,
                       const uint8_t *want, size_t stride, struct fp8kv_results *out)
{
    struct fp8kv_codec_cfg cfg;
    int rc = fp8kv_model_cfg(p, model, &cfg);
    if (rc != 0)
        return rc;
    struct fp8kv_check c;
    fp8kv_check_init(&c, name, subject->name, p->name, detail);
    double t0 = fp8kv_now();
    rc = judge_encoder(p, check, subject, cfg, dtype, inputs, scales, n, want, stride, &c);
    fp8kv_check_finish(&c, fp8kv_now() - t0);
    return rc != 0 ? rc : fp8kv_results_add(out, &c);
}

int fp8kv_check_encoder_vectors(const char *dir, const struct fp8kv_profile *p,
                                enum fp8kv_nan_check check, const struct fp8kv_subject *subject,
                                struct fp8kv_results *out)
{
    struct fp8kv_npy edges_in = {0}, edges_want = {0}, half_want = {0};
    struct fp8kv_npy sx = {0}, ss = {0}, swant = {0};
    uint32_t *half_in = malloc(65536 * sizeof *half_in);
    int rc = half_in ? 0 : fp8kv_fail("out of memory");
    char detail[160];
    snprintf(detail, sizeof detail, "edges_input.npy at scale 1, nan check %s",
             fp8kv_nan_check_names[check]);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "edges_input.npy", FP8KV_NPY_U32, 0, 0, &edges_in);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "edges_expected.npy", FP8KV_NPY_U8, edges_in.shape[0],
                                    0, &edges_want);
    if (rc == 0)
        rc = encoder_set(p, check, subject, FP8KV_MODEL_F32_DIV, "edges", detail, FP8KV_DTYPE_F32,
                         edges_in.data, NULL, edges_in.count, edges_want.data, 1, out);

    static const struct {
        enum fp8kv_dtype dtype;
        const char *file, *name;
    } halves[] = {{FP8KV_DTYPE_F16, "f16_expected.npy", "all-f16"},
                  {FP8KV_DTYPE_BF16, "bf16_expected.npy", "all-bf16"}};
    for (size_t k = 0; k < 2 && rc == 0; k++) {
        for (uint32_t i = 0; i < 65536; i++)
            half_in[i] = fp8kv_widen_to_f32(halves[k].dtype, i);
        rc = fp8kv_load_vector_file(dir, p, halves[k].file, FP8KV_NPY_U8, 65536, 0, &half_want);
        snprintf(detail, sizeof detail, "every %s input at scale 1, nan check %s",
                 fp8kv_dtype_names[halves[k].dtype], fp8kv_nan_check_names[check]);
        if (rc == 0)
            rc = encoder_set(p, check, subject, FP8KV_MODEL_F32_DIV, halves[k].name, detail,
                             halves[k].dtype, half_in, NULL, 65536, half_want.data, 1, out);
        fp8kv_npy_free(&half_want);
    }

    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "scale_x.npy", FP8KV_NPY_U32, 0, 0, &sx);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "scale_s.npy", FP8KV_NPY_U32, sx.shape[0], 0, &ss);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "scale_expected.npy", FP8KV_NPY_U8, sx.shape[0],
                                    FP8KV_MODEL_COUNT, &swant);
    for (int m = 0; m < FP8KV_MODEL_COUNT && rc == 0; m++) {
        if (fp8kv_kernel_model_check((enum fp8kv_scale_model)m) != 0)
            continue; /* judged only under the models kernels compute */
        char name[48];
        snprintf(name, sizeof name, "scale-%s", fp8kv_model_names[m]);
        snprintf(detail, sizeof detail, "store-with-scale pairs, model %s, nan check %s",
                 fp8kv_model_names[m], fp8kv_nan_check_names[check]);
        rc = encoder_set(p, check, subject, (enum fp8kv_scale_model)m, name, detail,
                         FP8KV_DTYPE_F32, sx.data, ss.data, sx.count,
                         (const uint8_t *)swant.data + m, FP8KV_MODEL_COUNT, out);
    }
    fp8kv_npy_free(&edges_in);
    fp8kv_npy_free(&edges_want);
    fp8kv_npy_free(&sx);
    fp8kv_npy_free(&ss);
    fp8kv_npy_free(&swant);
    free(half_in);
    return rc;
}

/* ---- decoders ---------------------------------------------------------------------------- */

static int is_nan(enum fp8kv_dtype dtype, uint32_t b)
{
    switch (dtype) {
    case FP8KV_DTYPE_F16: return (b & 0x7FFFu) > 0x7C00u;
    case FP8KV_DTYPE_BF16: return (b & 0x7FFFu) > 0x7F80u;
    default: return (b & 0x7FFFFFFFu) > 0x7F800000u;
    }
}

/* Bit identity; under NaN check class any NaN of the output dtype for a NaN. */
static int same_bits(enum fp8kv_nan_check check, enum fp8kv_dtype dtype, uint32_t got,
                     uint32_t want)
{
    return got == want ||
           (check == FP8KV_NAN_CHECK_CLASS && is_nan(dtype, got) && is_nan(dtype, want));
}

/* The decode table and the read set of a profile, and the subject's f32 reads of the set. */
struct read_set {
    struct fp8kv_npy table, codes, scales, want32, want16, wantb16;
    size_t n;       /* entries of the read set */
    float *y;       /* the subject's f32 outputs, n of them */
    double seconds; /* the subject's time over the set */
    uint8_t *wrong; /* per entry: bit dt set when its output in dtype dt is wrong */
};

static void read_set_free(struct read_set *r)
{
    free(r->wrong);
    r->wrong = NULL;
    fp8kv_npy_free(&r->table);
    fp8kv_npy_free(&r->codes);
    fp8kv_npy_free(&r->scales);
    fp8kv_npy_free(&r->want32);
    fp8kv_npy_free(&r->want16);
    fp8kv_npy_free(&r->wantb16);
    free(r->y);
}

static int read_set_load(const char *dir, const struct fp8kv_profile *p, struct read_set *r)
{
    memset(r, 0, sizeof *r);
    int rc = fp8kv_load_vector_file(dir, p, "decode.npy", FP8KV_NPY_F32, 256, 0, &r->table);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "read_code.npy", FP8KV_NPY_U8, 0, 0, &r->codes);
    r->n = r->codes.count;
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "read_scale.npy", FP8KV_NPY_U32, r->n, 0, &r->scales);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "read_f32.npy", FP8KV_NPY_U32, r->n, 0, &r->want32);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "read_f16.npy", FP8KV_NPY_U16, r->n,
                                    FP8KV_READ_MODEL_COUNT, &r->want16);
    if (rc == 0)
        rc = fp8kv_load_vector_file(dir, p, "read_bf16.npy", FP8KV_NPY_U16, r->n,
                                    FP8KV_READ_MODEL_COUNT, &r->wantb16);
    if (rc == 0 && !(r->y = malloc((r->n + 1) * sizeof *r->y)))
        rc = fp8kv_fail("out of memory");
    return rc;
}

/* The "decode" check: every code at scale 1 against decode.npy (NaN by check). */
static int check_decode_table(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                              const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                              const struct read_set *r, struct fp8kv_results *out)
{
    struct fp8kv_check c;
    char detail[160];
    snprintf(detail, sizeof detail, "all 256 codes at scale 1 vs decode.npy, nan check %s",
             fp8kv_nan_check_names[check]);
    fp8kv_check_init(&c, "decode", subject->name, p->name, detail);
    const double t0 = fp8kv_now();
    uint8_t all_codes[256];
    float y[256];
    for (int q = 0; q < 256; q++)
        all_codes[q] = (uint8_t)q;
    const int rc = subject->decode(subject->ctx, cfg, all_codes, 256, 1.0f, y);
    if (rc != 0)
        return rc;
    c.cases = 256;
    c.has_codes = 1;
    for (int q = 0; q < 256; q++) {
        uint32_t got, want = ((const uint32_t *)r->table.data)[q];
        memcpy(&got, &y[q], sizeof got);
        if (!same_bits(check, FP8KV_DTYPE_F32, got, want)) {
            fp8kv_check_failure(&c, -1, "%02x => 0x%08x  expected 0x%08x", q, got, want);
            c.code_mismatched[q / 8] |= (uint8_t)(1u << (q % 8));
        }
    }
    fp8kv_check_finish(&c, fp8kv_now() - t0);
    return fp8kv_results_add(out, &c);
}

/* Runs the subject over the read set, one call per run of equal scales, into r->y. */
static int decode_read_set(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                           struct read_set *r)
{
    const uint8_t *qs = r->codes.data;
    const uint32_t *ss = r->scales.data;
    const double t0 = fp8kv_now();
    int rc = 0;
    for (size_t i = 0; i < r->n && rc == 0;) {
        size_t j = i + 1;
        while (j < r->n && ss[j] == ss[i])
            j++;
        rc = subject->decode(subject->ctx, cfg, qs + i, j - i, f32_of(ss[i]), r->y + i);
        i = j;
    }
    r->seconds = fp8kv_now() - t0;
    return rc;
}

/* read_output: the bits the subject's output of entry i is in dtype dt (its f32 rounded by
 * codec.h), and the bits expected there. */
static void read_output(const struct read_set *r, size_t i, enum fp8kv_dtype dt, uint32_t *got,
                        uint32_t *want)
{
    memcpy(got, &r->y[i], sizeof *got);
    if (dt == FP8KV_DTYPE_F16) {
        *got = fp8kv_f32_to_f16_rne(r->y[i]);
        *want = ((const uint16_t *)r->want16.data)[i * FP8KV_READ_MODEL_COUNT];
    } else if (dt == FP8KV_DTYPE_BF16) {
        *got = fp8kv_f32_to_bf16_rne(r->y[i]);
        *want = ((const uint16_t *)r->wantb16.data)[i * FP8KV_READ_MODEL_COUNT];
    } else {
        *want = ((const uint32_t *)r->want32.data)[i];
    }
}

/* mark_wrong: r->wrong, the output dtypes each entry is wrong in. 0 or FP8KV_ERR. */
static int mark_wrong(enum fp8kv_nan_check check, struct read_set *r)
{
    r->wrong = calloc(r->n + 1, 1);
    if (!r->wrong)
        return fp8kv_fail("out of memory");
    for (size_t i = 0; i < r->n; i++)
        for (int dt = FP8KV_DTYPE_F32; dt <= FP8KV_DTYPE_BF16; dt++) {
            uint32_t got, want;
            read_output(r, i, (enum fp8kv_dtype)dt, &got, &want);
            if (!same_bits(check, (enum fp8kv_dtype)dt, got, want))
                r->wrong[i] |= (uint8_t)(1u << dt);
        }
    return FP8KV_OK;
}

/* check_read_output: the "read-<dt>" check: the subject's f32 reads (rounded by codec.h's
 * RN16/RNbf16 for f16 and bf16 output) bit-identical to the oracle's rounded read model; for
 * f32, also NMSE 0 over the finite outputs. A pair (code, scale) wrong in several
 * dtypes is shown once, in the check of the first of them, with the dtypes it is wrong in;
 * the later checks count it without repeating the line. */
static int check_read_output(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                             const char *subject_name, const struct read_set *r,
                             enum fp8kv_dtype dt, struct fp8kv_results *out)
{
    const size_t n = r->n;
    const uint8_t *qs = r->codes.data;
    const uint32_t *ss = r->scales.data;
    char check_name[32], detail[160];
    snprintf(check_name, sizeof check_name, "read-%s", fp8kv_dtype_names[dt]);
    snprintf(detail, sizeof detail,
             "every code at %zu scales, %s output%s, vs the oracle's rounded read model, nan "
             "check %s",
             n / 256, fp8kv_dtype_names[dt],
             dt == FP8KV_DTYPE_F32 ? "" : " (decoder's f32, then RNE)",
             fp8kv_nan_check_names[check]);
    struct fp8kv_check c;
    fp8kv_check_init(&c, check_name, subject_name, p->name, detail);
    const double t0 = fp8kv_now();
    float *y_finite = malloc((n + 1) * sizeof *y_finite);
    double *ref = malloc((n + 1) * sizeof *ref);
    if (!y_finite || !ref) {
        free(y_finite);
        free(ref);
        return fp8kv_fail("out of memory");
    }
    c.cases = n;
    size_t finite = 0, shown_earlier = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t got, want;
        read_output(r, i, dt, &got, &want);
        if (dt == FP8KV_DTYPE_F32) { /* NMSE over the finite outputs */
            const float wf = f32_of(want);
            if (isfinite(wf) && isfinite(r->y[i])) {
                y_finite[finite] = r->y[i];
                ref[finite++] = (double)wf;
            }
        }
        const unsigned wrong = r->wrong[i];
        if (!(wrong >> dt & 1u))
            continue;
        if (wrong & ((1u << dt) - 1u)) { /* shown in an earlier dtype's check */
            c.mismatches++;
            shown_earlier++;
            continue;
        }
        char dtypes[32] = "";
        for (int k = dt; k <= FP8KV_DTYPE_BF16; k++)
            if (wrong >> k & 1u) {
                const size_t used = strlen(dtypes);
                snprintf(dtypes + used, sizeof dtypes - used, "%s%s", used ? ", " : "",
                         fp8kv_dtype_names[k]);
            }
        fp8kv_check_failure(&c, -1, "%02x * 0x%08x (%.9g) => 0x%0*x  expected 0x%0*x  wrong in %s",
                            qs[i], ss[i], (double)f32_of(ss[i]), dt == FP8KV_DTYPE_F32 ? 8 : 4, got,
                            dt == FP8KV_DTYPE_F32 ? 8 : 4, want, dtypes);
    }
    if (dt == FP8KV_DTYPE_F32) {
        c.has_nmse = 1;
        c.threshold = 0.0;
        c.nmse = fp8kv_nmse(y_finite, ref, finite);
    }
    if (shown_earlier) {
        const size_t used = strlen(c.detail);
        snprintf(c.detail + used, sizeof c.detail - used, "; %zu listed under an earlier read",
                 shown_earlier);
    }
    free(y_finite);
    free(ref);
    fp8kv_check_finish(&c, fp8kv_now() - t0 + r->seconds);
    return fp8kv_results_add(out, &c);
}

int fp8kv_check_decoder_vectors(const char *dir, const struct fp8kv_profile *p,
                                enum fp8kv_nan_check check, const struct fp8kv_subject *subject,
                                struct fp8kv_results *out)
{
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    struct read_set r;
    int rc = read_set_load(dir, p, &r);
    if (rc == 0)
        rc = check_decode_table(p, check, subject, cfg, &r, out);
    if (rc == 0)
        rc = decode_read_set(subject, cfg, &r);
    if (rc == 0)
        rc = mark_wrong(check, &r);
    static const enum fp8kv_dtype outs[] = {FP8KV_DTYPE_F32, FP8KV_DTYPE_F16, FP8KV_DTYPE_BF16};
    for (size_t k = 0; k < 3 && rc == 0; k++)
        rc = check_read_output(p, check, subject->name, &r, outs[k], out);
    read_set_free(&r);
    return rc;
}
