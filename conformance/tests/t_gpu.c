/* t_gpu.c — the device subjects of kernels/hip/ (built with FP8KV_GPU=cuda|hip): the KV
 * kernels pass every golden case (and the gather gives the CPU reference's bytes across empty
 * and short sequences, the attention its values with one or many partitions), the device codecs and
 * decoders pass the vector sets, short device sweeps judge like the CPU sweep (counts, classes, the
 * lowest-index failures in order, also when there are far more failures than the kernel captures),
 * and the vendor conversions differ only in the sign of NaN (defect 6 of docs/DESIGN.md §1.4) under
 * NaN check strict. Without a usable GPU every test is skipped (a skip, never a pass). Run with
 * --jobs=1. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/checks.h"
#include "fp8kv/diag.h"
#include "fp8kv/gpu.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"
#include "testutil.h"

#define VECTORS FP8KV_SOURCE_DIR "/vectors"

/* Each test runs in its own process: it opens the device itself. */
static void require_gpu(void)
{
    struct fp8kv_target_info t;
    if (fp8kv_gpu_target_info(0, &t) != 0)
        cr_skip_test("no usable GPU: %s", fp8kv_last_error());
}

static void print_failures(const struct fp8kv_check *c)
{
    fprintf(stderr, "%s %s [%s] %s: %llu of %llu mismatched\n", c->name, c->subject, c->profile,
            c->detail, (unsigned long long)c->mismatches, (unsigned long long)c->cases);
    for (int i = 0; i < c->failure_lines; i++)
        fprintf(stderr, "  %s\n", c->failures[i]);
}

static void expect_all_pass(const struct fp8kv_results *r, size_t from)
{
    cr_assert_gt(r->count, from, "no checks");
    for (size_t i = from; i < r->count; i++) {
        const struct fp8kv_check *c = &r->items[i];
        if (c->gated && !c->passed)
            print_failures(c);
        cr_assert(!c->gated || c->passed, "%s %s [%s] failed: %s", c->name, c->subject, c->profile,
                  c->detail);
    }
}

/* The open device's subject called name, with capabilities caps. */
static const struct fp8kv_subject *gpu_subject(const char *name, unsigned caps)
{
    const struct fp8kv_subject *table;
    const int n = fp8kv_gpu_subjects(&table);
    const struct fp8kv_subject *s = fp8kv_subject_find(table, n, name, caps);
    cr_assert_not_null(s, "the device has no subject %s", name);
    return s;
}

/* The first profile a subject claims. */
static const struct fp8kv_profile *first_claimed(const struct fp8kv_subject *s)
{
    for (int i = 0; i < fp8kv_profile_count; i++)
        if (fp8kv_subject_implements(s, &fp8kv_profiles[i]))
            return &fp8kv_profiles[i];
    cr_assert_fail("%s claims no profile", s->name);
    return NULL;
}

/* ---- KV paths -------------------------------------------------------------------------------- */

Test(gpu, kv_kernels_pass_every_golden_case_of_every_profile)
{
    require_gpu();
    const unsigned long errors = fp8kv_gpu_error_count();
    const struct fp8kv_subject *kv = gpu_subject("gpu-kernels", FP8KV_CAP_STORE);
    for (int i = 0; i < fp8kv_profile_count; i++) {
        /* every format: the kernels are templated on it */
        cr_assert(fp8kv_subject_implements(kv, &fp8kv_profiles[i]), "gpu-kernels skips %s",
                  fp8kv_profiles[i].name);
        struct fp8kv_results r = {0};
        cr_assert_eq(fp8kv_check_kv(VECTORS, &fp8kv_profiles[i], kv, &r), 0, "%s",
                     fp8kv_last_error());
        expect_all_pass(&r, 0);
        fp8kv_results_free(&r);
    }
    cr_assert_eq(fp8kv_gpu_error_count(), errors, "%s", fp8kv_last_error());
}

/* The gather walks the output rows of all sequences with one grid: empty sequences between
 * others, many short ones, rows shorter than a warp's items, NaN codes among the others (the
 * hardware decode's per-element fallback), every layout, format family and output dtype give
 * the CPU reference's bytes exactly. */
Test(gpu, gather_matches_the_cpu_reference_across_empty_and_short_sequences)
{
    require_gpu();
    struct fp8kv_gpu_device_info info;
    cr_assert_eq(fp8kv_gpu_open(0, &info), 0, "%s", fp8kv_last_error());
    const int lens_a[] = {0, 5, 0, 0, 37, 1, 0, 16, 3, 0};
    enum { MANY = 300, MAX_BLOCKS = 4 };
    int lens_b[MANY];
    uint64_t state = 0x9A7E;
    for (int i = 0; i < MANY; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        lens_b[i] = (int)(state >> 62); /* 0 .. 3 tokens */
    }
    const struct {
        const int *lens;
        int num_seqs, num_heads, head_size;
    } runs[] = {{lens_a, 10, 4, 64}, {lens_b, MANY, 2, 16}, {lens_a, 10, 1, 8}};
    const int layouts[] = {FP8KV_LAYOUT_NHD, FP8KV_LAYOUT_SPLIT_X, FP8KV_LAYOUT_HND};
    const int formats[] = {FP8KV_CODEC_E4M3FN, FP8KV_CODEC_E5M2};
    const enum fp8kv_kv_dtype outs[] = {FP8KV_KV_BF16, FP8KV_KV_F16, FP8KV_KV_F32};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        for (size_t l = 0; l < 3; l++) {
            if (layouts[l] == FP8KV_LAYOUT_SPLIT_X && runs[r].head_size % FP8KV_SPLIT_X != 0)
                continue;
            const int n = runs[r].num_seqs;
            const struct fp8kv_cache_shape shape = {n * MAX_BLOCKS,    16,
                                                    runs[r].num_heads, runs[r].head_size,
                                                    layouts[l],        FP8KV_PACKING_SEPARATE};
            const size_t bytes = fp8kv_cache_bytes(&shape);
            uint8_t *cache = malloc(bytes);
            int32_t *table = malloc((size_t)n * MAX_BLOCKS * sizeof(int32_t));
            cr_assert(cache && table);
            for (size_t i = 0; i < bytes; i++) { /* every code, NaN codes included */
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                cache[i] = (uint8_t)(state >> 56);
            }
            for (int i = 0; i < n * MAX_BLOCKS; i++) /* a fixed permutation of the blocks */
                table[i] = (int32_t)(((int64_t)i * 7919) % (n * MAX_BLOCKS));
            size_t rows = 0;
            for (int i = 0; i < n; i++)
                rows += (size_t)runs[r].lens[i];
            const size_t out_bytes = rows * shape.num_heads * shape.head_size * 4;
            uint8_t *want = malloc(out_bytes + 1), *got = malloc(out_bytes + 1);
            cr_assert(want && got);
            for (size_t f = 0; f < 2; f++)
                for (size_t o = 0; o < 3; o++)
                    for (int is_key = 0; is_key < 2; is_key++) {
                        const struct fp8kv_codec_cfg cfg = {(uint8_t)formats[f], 1, 0,
                                                            FP8KV_CODEC_F32_DIV};
                        const float scale = 0.37f;
                        const struct fp8kv_kv_scales s = {FP8KV_SCALE_TENSOR, scale, NULL, NULL,
                                                          NULL};
                        memset(want, 0x5A, out_bytes);
                        memset(got, 0x5A, out_bytes);
                        cr_assert_eq(fp8kv_cpu_gather_dequant(cfg, &shape, is_key, cache, table,
                                                              MAX_BLOCKS, runs[r].lens, n, &s,
                                                              outs[o], want),
                                     0, "%s", fp8kv_last_error());
                        cr_assert_eq(fp8kv_gpu_gather_dequant(cfg, &shape, is_key, cache, table,
                                                              MAX_BLOCKS, runs[r].lens, n, scale,
                                                              outs[o], got),
                                     0, "%s", fp8kv_last_error());
                        cr_assert(memcmp(want, got, out_bytes) == 0,
                                  "run %zu layout %d format %d out %d %s: the device rows differ",
                                  r, layouts[l], formats[f], (int)outs[o],
                                  is_key ? "key" : "value");
                    }
            free(want);
            free(got);
            free(cache);
            free(table);
        }
}

/* The attention's launches against the CPU reference: one partition per sequence (pass 1
 * writes the output) and several (a combining pass), on the head-128 fast path and the split-K
 * path, with empty sequences among short and long ones; every output written (the buffer starts
 * as a sentinel), empty sequences' exactly 0. */
Test(gpu, attention_matches_the_cpu_reference_with_one_or_many_partitions)
{
    require_gpu();
    struct fp8kv_gpu_device_info info;
    cr_assert_eq(fp8kv_gpu_open(0, &info), 0, "%s", fp8kv_last_error());
    const int32_t lens[] = {0, 5, 0, 37, 1, 16, 130, 0};
    enum { SEQS = 8, MAX_BLOCKS = 9, KV_HEADS = 2, Q_HEADS = 8, BLOCK = 16 };
    const int head_sizes[] = {128, 64};
    const int partitions[] = {0, 1024, 64, 32};
    int longest = 0;
    for (int s = 0; s < SEQS; s++)
        longest = lens[s] > longest ? lens[s] : longest;
    uint64_t state = 0xA77E;
    for (size_t h = 0; h < sizeof head_sizes / sizeof head_sizes[0]; h++) {
        const int D = head_sizes[h];
        const struct fp8kv_cache_shape shape = {
            SEQS * MAX_BLOCKS, BLOCK, KV_HEADS, D, FP8KV_LAYOUT_NHD, FP8KV_PACKING_SEPARATE};
        const size_t bytes = fp8kv_cache_bytes(&shape), qn = (size_t)SEQS * Q_HEADS * D;
        uint8_t *kc = malloc(bytes), *vc = malloc(bytes);
        int32_t table[SEQS * MAX_BLOCKS];
        float *q = malloc(qn * sizeof *q), *want = malloc(qn * sizeof *want),
              *got = malloc(qn * sizeof *got);
        cr_assert(kc && vc && q && want && got);
        for (size_t i = 0; i < 2 * bytes; i++) { /* finite codes */
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            uint8_t code = (uint8_t)(state >> 56);
            if ((code & 0x7F) == 0x7F)
                code ^= 0x01;
            (i < bytes ? kc : vc)[i % bytes] = code;
        }
        for (size_t i = 0; i < qn; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            q[i] = (float)((int64_t)(state >> 40) - (1 << 23)) * 0x1p-23f;
        }
        for (int i = 0; i < SEQS * MAX_BLOCKS; i++) /* a fixed permutation of the blocks */
            table[i] = (int32_t)(((int64_t)i * 31) % (SEQS * MAX_BLOCKS));
        const struct fp8kv_codec_cfg cfg = {FP8KV_CODEC_E4M3FN, 1, 0, FP8KV_CODEC_F32_DIV};
        const float ks = 0.05f, vs = 0.0123f, softmax_scale = 0.088388348f;
        const struct fp8kv_kv_scales k_scale = {FP8KV_SCALE_TENSOR, ks, NULL, NULL, NULL},
                                     v_scale = {FP8KV_SCALE_TENSOR, vs, NULL, NULL, NULL};
        cr_assert_eq(fp8kv_cpu_paged_attention(cfg, &shape, q, Q_HEADS, kc, vc, table, MAX_BLOCKS,
                                               lens, SEQS, &k_scale, &v_scale, softmax_scale, want),
                     0, "%s", fp8kv_last_error());
        for (size_t k = 0; k < sizeof partitions / sizeof partitions[0]; k++) {
            char plan[96];
            cr_assert_eq(fp8kv_gpu_attention_plan(1, cfg, &shape, Q_HEADS, SEQS, longest,
                                                  partitions[k], plan, sizeof plan),
                         0, "%s", fp8kv_last_error());
            memset(got, 0x5A, qn * sizeof *got);
            cr_assert_eq(fp8kv_gpu_paged_attention(cfg, &shape, q, Q_HEADS, kc, vc, table,
                                                   MAX_BLOCKS, lens, SEQS, ks, vs, softmax_scale,
                                                   partitions[k], got),
                         0, "%s", fp8kv_last_error());
            for (int s = 0; s < SEQS; s++)
                for (int qh = 0; qh < Q_HEADS; qh++) {
                    const float *w = want + ((size_t)s * Q_HEADS + qh) * D,
                                *g = got + ((size_t)s * Q_HEADS + qh) * D;
                    float top = 0.0f;
                    for (int d = 0; d < D; d++)
                        top = fabsf(w[d]) > top ? fabsf(w[d]) : top;
                    for (int d = 0; d < D; d++) {
                        if (lens[s] == 0)
                            cr_assert(g[d] == 0.0f && !signbit(g[d]),
                                      "%s: empty sequence %d head %d dim %d is %a, not 0", plan, s,
                                      qh, d, (double)g[d]);
                        else
                            cr_assert(fabsf(g[d] - w[d]) <= 1e-4f * top,
                                      "%s: sequence %d (%d tokens) head %d dim %d: %a, the CPU "
                                      "reference %a",
                                      plan, s, (int)lens[s], qh, d, (double)g[d], (double)w[d]);
                    }
                }
        }
        free(kc);
        free(vc);
        free(q);
        free(want);
        free(got);
    }
}

/* ---- codecs and decoders --------------------------------------------------------------------- */

Test(gpu, configurable_codecs_pass_every_vector_set_strictly)
{
    require_gpu();
    static const int ids[] = {FP8KV_GPU_CODEC_BITS, FP8KV_GPU_CODEC_FREXP};
    for (size_t k = 0; k < 2; k++) {
        cr_assert(fp8kv_gpu_codec_available(ids[k]));
        const struct fp8kv_subject *s =
            gpu_subject(fp8kv_gpu_codecs[ids[k]].name, FP8KV_CAP_ENCODE);
        for (int i = 0; i < fp8kv_profile_count; i++) {
            struct fp8kv_results r = {0};
            cr_assert(fp8kv_subject_implements(s, &fp8kv_profiles[i]));
            cr_assert_eq(fp8kv_check_encoder_vectors(VECTORS, &fp8kv_profiles[i],
                                                     FP8KV_NAN_CHECK_STRICT, s, &r),
                         0, "%s", fp8kv_last_error());
            expect_all_pass(&r, 0);
            fp8kv_results_free(&r);
        }
    }
}

Test(gpu, vendor_codecs_pass_their_profiles_by_nan_class)
{
    require_gpu();
    for (int c = 0; c < FP8KV_GPU_CODEC_COUNT; c++) {
        const struct fp8kv_gpu_codec *info = &fp8kv_gpu_codecs[c];
        if (!info->vendor || !fp8kv_gpu_codec_available(c))
            continue;
        const struct fp8kv_subject *s = gpu_subject(info->name, FP8KV_CAP_ENCODE);
        cr_assert(s->flags & FP8KV_SUBJECT_VENDOR, "%s is not marked a vendor conversion", s->name);
        const struct fp8kv_profile *p = first_claimed(s);
        struct fp8kv_results r = {0};
        cr_assert_eq(fp8kv_check_encoder_vectors(VECTORS, p, FP8KV_NAN_CHECK_CLASS, s, &r), 0, "%s",
                     fp8kv_last_error());
        expect_all_pass(&r, 0);
        fp8kv_results_free(&r);
    }
}

Test(gpu, decoders_pass_the_decode_and_read_sets)
{
    require_gpu();
    for (int d = 0; d < FP8KV_GPU_DECODER_COUNT; d++) {
        if (!fp8kv_gpu_decoder_available(d)) {
            cr_assert(fp8kv_gpu_decoders[d].vendor, "%s is not compiled for this device",
                      fp8kv_gpu_decoders[d].name);
            continue; /* a vendor decoder of another toolchain or architecture */
        }
        for (int i = 0; i < fp8kv_profile_count; i++) {
            struct fp8kv_results r = {0};
            const struct fp8kv_subject *s =
                gpu_subject(fp8kv_gpu_decoders[d].name, FP8KV_CAP_DECODE);
            if (!fp8kv_subject_implements(s, &fp8kv_profiles[i])) {
                /* only a vendor decoder is limited to a family of formats */
                cr_assert(fp8kv_gpu_decoders[d].vendor, "%s skips %s", s->name,
                          fp8kv_profiles[i].name);
                continue;
            }
            cr_assert_eq(fp8kv_check_decoder_vectors(VECTORS, &fp8kv_profiles[i],
                                                     FP8KV_NAN_CHECK_CLASS, s, &r),
                         0, "%s", fp8kv_last_error());
            expect_all_pass(&r, 0);
            fp8kv_results_free(&r);
        }
    }
}

/* ---- sweeps ---------------------------------------------------------------------------------- */

/* The run table of a domain, from the judge; *out malloc'd. */
static size_t device_runs(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                          enum fp8kv_domain d, const uint32_t *b, struct fp8kv_sweep_run **out)
{
    const long n = fp8kv_sweep_runs(p, check, d, b, out);
    cr_assert_gt(n, 0, "%s", fp8kv_last_error());
    return (size_t)n;
}

static uint64_t total_of(const struct fp8kv_sweep_result *res)
{
    uint64_t m = 0;
    for (int k = 0; k < FP8KV_SWEEP_CLASSES; k++)
        m += res->class_mismatches[k];
    return m;
}

Test(gpu, short_sweeps_of_the_bits_codec_are_clean)
{
    require_gpu();
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        uint32_t *b = fp8kv_load_boundaries(VECTORS, p);
        cr_assert_not_null(b, "%s", fp8kv_last_error());
        for (int d = 0; d < FP8KV_DOMAIN_COUNT; d++) {
            struct fp8kv_sweep_run *runs;
            const size_t n = device_runs(p, FP8KV_NAN_CHECK_STRICT, (enum fp8kv_domain)d, b, &runs);
            /* f32: the first 2^24 patterns and the 2^24 around 1.0 are covered by two limits */
            struct fp8kv_sweep_result res;
            const uint64_t limit = d == FP8KV_DOMAIN_F32 ? 1ull << 26 : 0;
            cr_assert_eq(fp8kv_gpu_sweep(FP8KV_GPU_CODEC_BITS, fp8kv_profile_cfg(p),
                                         (enum fp8kv_domain)d, runs, n, 0, limit, &res),
                         0, "%s", fp8kv_last_error());
            cr_assert_eq(res.cases, d == FP8KV_DOMAIN_F32 ? limit : 65536u);
            cr_assert_eq(total_of(&res), 0, "%s %s: %llu mismatches, first 0x%08x => %02x", p->name,
                         fp8kv_sweep_domain_names[d], (unsigned long long)total_of(&res),
                         res.failure_input[0], res.failure_got[0]);
            cr_assert_eq(res.failures, 0);
            free(runs);
        }
        free(b);
    }
}

/* A wrong table: the run holding input `at` expects the wrong byte. Every input of that run
 * (within the limit) must fail, and the first failures must be its first inputs, in order,
 * whether the failures fit the kernel's capture buffer or not. */
static void planted(uint32_t at, uint64_t limit)
{
    const struct fp8kv_profile *p = fp8kv_profile_by_name("e4m3fn_satfinite");
    uint32_t *b = fp8kv_load_boundaries(VECTORS, p);
    cr_assert_not_null(b, "%s", fp8kv_last_error());
    struct fp8kv_sweep_run *runs;
    const size_t n = device_runs(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32, b, &runs);
    size_t k = 0;
    while (k + 1 < n && runs[k + 1].start <= at)
        k++;
    runs[k].value ^= 0x01u;
    const uint64_t start = runs[k].start;
    uint64_t end = k + 1 < n ? runs[k + 1].start : 1ull << 32;
    if (limit) /* 0: the whole domain */
        end = end < limit ? end : limit;
    struct fp8kv_sweep_result res, again;
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    cr_assert_eq(
        fp8kv_gpu_sweep(FP8KV_GPU_CODEC_BITS, cfg, FP8KV_DOMAIN_F32, runs, n, 0, limit, &res), 0,
        "%s", fp8kv_last_error());
    cr_assert_eq(total_of(&res), end - start, "run [0x%llx, 0x%llx): %llu failures",
                 (unsigned long long)start, (unsigned long long)end,
                 (unsigned long long)total_of(&res));
    cr_assert_eq(res.class_mismatches[runs[k].cls], end - start);
    const uint64_t lines = end - start < FP8KV_SWEEP_FAILURES ? end - start : FP8KV_SWEEP_FAILURES;
    cr_assert_eq((uint64_t)res.failures, lines);
    for (int i = 0; i < res.failures; i++) {
        cr_assert_eq(res.failure_input[i], start + (uint64_t)i, "line %d: 0x%08x", i,
                     res.failure_input[i]);
        cr_assert_eq(res.failure_want[i], runs[k].value);
        cr_assert_eq(res.failure_got[i], runs[k].value ^ 0x01u);
    }
    /* deterministic: the same answer again */
    cr_assert_eq(
        fp8kv_gpu_sweep(FP8KV_GPU_CODEC_BITS, cfg, FP8KV_DOMAIN_F32, runs, n, 0, limit, &again), 0);
    cr_assert_eq(memcmp(again.failure_input, res.failure_input, sizeof res.failure_input), 0);
    cr_assert_eq(again.failures, res.failures);
    free(runs);
    free(b);
}

Test(gpu, sweep_reports_a_few_failures_in_input_order)
{
    require_gpu();
    planted(0x3F880000u, 0); /* 1.0625, the tie of 1.0 and 1.125: a run of one input */
}

Test(gpu, sweep_finds_the_first_failures_among_many)
{
    require_gpu();
    planted(0x3F800000u, 0); /* the run of 1.0: ~2^19 inputs, past the capture buffer */
}

Test(gpu, sweep_finds_the_first_failures_among_millions)
{
    require_gpu();
    planted(0x00400000u, 1ull << 27); /* the f32 denormals: millions of failures, refined */
}

/* ---- the whole run, one profile -------------------------------------------------------------- */

/* A device sweep's lines show whole ranges: a class with fewer lines than it may keep has all
 * its failures in them, however many more than the device hands back per pass. */
static void expect_whole_ranges(const struct fp8kv_check *c)
{
    if (!c->has_classes || strncmp(c->name, "sweep-", 6) != 0)
        return;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        int lines = 0;
        uint64_t shown = 0;
        for (int l = 0; l < c->failure_lines; l++)
            if (c->line_class[l] == k) {
                lines++;
                shown += test_range_count(c->failures[l]);
            }
        cr_assert_leq(shown, c->class_mismatches[k], "%s %s: more shown than failed", c->name,
                      c->subject);
        if (lines < FP8KV_EXAMPLES_PER_CLASS)
            cr_assert_eq(shown, c->class_mismatches[k], "%s %s [%s] %s: %llu of %llu shown",
                         c->name, c->subject, c->profile, fp8kv_class_names[k],
                         (unsigned long long)shown, (unsigned long long)c->class_mismatches[k]);
    }
}

Test(gpu, run_is_conformant_and_shows_the_nan_sign_of_vendor_conversions)
{
    require_gpu();
    struct fp8kv_run_options o = {.vectors_dir = VECTORS, .profile = "e4m3fn_satfinite"};
    struct fp8kv_target t;
    cr_assert_eq(fp8kv_target_open(FP8KV_TARGET_HIP, 0, &t), 0, "%s", fp8kv_last_error());
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_run(&o, &t, &r), 0, "%s", fp8kv_last_error());
    expect_all_pass(&r, 0);
    cr_assert(fp8kv_results_passed(&r));
    /* the vendor conversions under NaN check strict: reported, and different only on NaNs */
    int shown = 0;
    for (size_t i = 0; i < r.count; i++) {
        const struct fp8kv_check *c = &r.items[i];
        if (!strstr(c->name, "-nan-strict"))
            continue;
        cr_assert(!c->gated, "%s %s: strict is reported for a vendor conversion", c->name,
                  c->subject);
        if (c->mismatches && c->has_classes)
            cr_assert_eq(c->class_mismatches[FP8KV_CLASS_NAN], c->mismatches,
                         "%s %s: mismatches on inputs other than NaN", c->name, c->subject);
        shown += c->mismatches > 0;
        expect_whole_ranges(c);
    }
    /* on NVIDIA every vendor conversion gives 0x7F for -NaN (defect 6 of docs/DESIGN.md §1.4): it
     * must show */
    if (fp8kv_gpu_codec_available(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE))
        cr_assert_gt(shown, 0, "the -NaN sign difference does not show under strict");
    fp8kv_results_free(&r);
}
