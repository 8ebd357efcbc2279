/* cmd_bench_gpu.c — `fp8kv bench --target hip`: the GPU performance figures, each next to the
 * baseline it is judged against, measured in the same run:
 *   - store of a bf16 K+V input (>= 256 MiB) into the fp8 cache, and gather + dequant back to
 *     bf16, against the device-to-device copy bandwidth;
 *   - paged attention (decode) over an fp8 and a bf16 cache at several shapes (8 sequences of
 *     32k, 4k and 1k tokens, 64 of 4k and 1k), with the kernel the plan picks and the previous
 *     one (the CUDA-core kernel, where the tensor-core one is picked), against the read-only
 *     streaming bandwidth and against torch's own decode attention (scaled_dot_product_attention
 *     on a bf16 cache, scripts/bench-torch-attention.py, run when torch imports);
 *   - causal prefill over an fp8 cache (1 sequence of 8k tokens, 4 of 2k, 16 of 512), against
 *     torch's causal scaled_dot_product_attention on a contiguous bf16 K and V (the same script,
 *     --prefill), in TFLOP/s of the causal attention's products;
 *   - the exact attention reference of the engine suite's largest case (8 x 8192 tokens, 32 q
 *     heads, head 128) on the GPU against the host's (every core), both digests checked;
 *   - the exhaustive 2^32 f32 device sweep of every device codec.
 * The figures are printed; nothing but a sweep's mismatches changes the exit code.
 * Each figure also goes out as one `bench: key=value ...` line, for scripts. `only` picks some
 * of the figures (copy, store, gather, attention, sweep); store and gather bring the copy,
 * their baseline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fp8kv/kv_suite.h"
#include "fp8kv/verify.h"
#include "fp8kv/diag.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

#ifndef FP8KV_TORCH_ATTENTION_SCRIPT
#define FP8KV_TORCH_ATTENTION_SCRIPT ""
#endif

/* The figures, bits of the mask parse_only returns. */
enum {
    FIG_COPY = 1,
    FIG_STORE = 2,
    FIG_GATHER = 4,
    FIG_ATTENTION = 8,
    FIG_SWEEP = 16,
    FIG_BLOCK = 32,
    FIG_PREFILL = 64,
    FIG_REFERENCE = 128
};
static const char *const figure_names[] = {"copy",  "store", "gather",  "attention",
                                           "sweep", "block", "prefill", "reference"};
#define FIGURE_COUNT ((int)(sizeof figure_names / sizeof figure_names[0]))

/* parse_only: the mask of the figures a comma list names (NULL: all of them); -1 after a usage
 * message for an unknown or empty name. */
static int parse_only(const char *only)
{
    if (!only)
        return (1 << FIGURE_COUNT) - 1;
    int mask = 0;
    for (const char *p = only;; p++) {
        const size_t n = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < FIGURE_COUNT; i++)
            if (strlen(figure_names[i]) == n && strncmp(p, figure_names[i], n) == 0)
                found = i;
        if (found < 0) {
            fp8kv_cli_usage_error("bench",
                                  "--only: no figure '%.*s' (a comma list of copy, store, "
                                  "gather, attention, sweep, block, prefill, reference)",
                                  (int)n, p);
            return -1;
        }
        mask |= 1 << found;
        p += n;
        if (!*p)
            return mask;
    }
}

#ifndef FP8KV_HAVE_GPU

int fp8kv_cli_bench_gpu(int device, int quick, const char *vectors_dir, const char *only)
{
    (void)device;
    (void)quick;
    (void)vectors_dir;
    if (parse_only(only) < 0)
        return FP8KV_EXIT_USAGE;
    fprintf(stderr, "fp8kv bench: target unavailable: this fp8kv was built without GPU kernels "
                    "(configure with -DFP8KV_GPU=cuda or hip)\n");
    return FP8KV_EXIT_UNAVAILABLE;
}

#else

#include "fp8kv/gpu.h"

static void print_timing(const char *key, const struct fp8kv_gpu_timing *t)
{
    printf("%s\n  %.3f ms median (min %.3f, %d runs), %.1f GB/s\n", t->what, t->ms, t->min_ms,
           t->iterations, t->gbps);
    printf("bench: %s_ms=%.4f %s_gbps=%.2f\n", key, t->ms, key, t->gbps);
}

static int gpu_failed(const char *what)
{
    fprintf(stderr, "fp8kv bench: %s: %s\n", what, fp8kv_last_error());
    return FP8KV_EXIT_USAGE;
}

/* ---- attention ---------------------------------------------------------------------------- */

/* The shapes: sequences x tokens each, Llama-3-8B heads (8 kv, 32 q, 128); the first is the
 * headline figure. */
struct attention_shape {
    int seqs, len;
};
static const struct attention_shape attention_shapes[] = {
    {8, 32768}, {8, 4096}, {8, 1024}, {64, 4096}, {64, 1024}};
static const struct attention_shape quick_shapes[] = {{2, 2048}};
static const struct attention_shape prefill_shapes[] = {{1, 8192}, {4, 2048}, {16, 512}};
static const struct attention_shape quick_prefill_shapes[] = {{2, 512}};
enum { KV_HEADS = 8, Q_HEADS = 32, HEAD = 128, BLOCK = 16, MAX_SHAPES = 8 };

/* torch_sdpa: torch's decode (prefill 0) or causal prefill attention at each shape
 * (scripts/bench-torch-attention.py through $FP8KV_PYTHON, else python3): ms[i], or 0 where it
 * did not run (the reason printed). */
static void torch_sdpa(const struct attention_shape *shapes, int n, int prefill, double *ms)
{
    const char *what = prefill ? "torch causal prefill attention" : "torch decode attention";
    for (int i = 0; i < n; i++)
        ms[i] = 0.0;
    const char *script = getenv("FP8KV_TORCH_ATTENTION_SCRIPT");
    script = script && *script ? script : FP8KV_TORCH_ATTENTION_SCRIPT;
    const char *python = getenv("FP8KV_PYTHON");
    python = python && *python ? python : "python3";
    if (!*script || access(script, R_OK) != 0) {
        printf("%s: not run (no script at '%s'; set FP8KV_TORCH_ATTENTION_SCRIPT)\n", what, script);
        return;
    }
    char list[256] = "", cmd[2048];
    for (int i = 0; i < n; i++) {
        const size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%dx%d", i ? "," : "", shapes[i].seqs,
                 shapes[i].len);
    }
    snprintf(cmd, sizeof cmd, "'%s' '%s' --shapes %s --kv-heads %d --q-heads %d --head %d%s 2>&1",
             python, script, list, KV_HEADS, Q_HEADS, HEAD, prefill ? " --prefill" : "");
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) {
        printf("%s: not run (cannot start %s)\n", what, python);
        return;
    }
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, f)) {
        int seqs = 0, len = 0;
        double t = 0.0;
        if (sscanf(line,
                   prefill ? "bench: torch_sdpa_prefill shape=%dx%d ms=%lf"
                           : "bench: torch_sdpa shape=%dx%d ms=%lf",
                   &seqs, &len, &t) == 3) {
            for (int i = 0; i < n; i++)
                if (shapes[i].seqs == seqs && shapes[i].len == len)
                    ms[i] = t;
            got++;
        }
        fputs(line, stdout);
    }
    const int status = pclose(f);
    if (!got)
        printf("%s: not run (%s exited %d: torch with CUDA is not there)\n", what, python,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* One attention figure: cache fp8 or bf16, kernel as asked; printed with its share of the
 * read-only bandwidth and its ratio to torch (when torch ran). `key` names the bench line. */
static int attention_figure(const struct attention_shape *sh, int fp8, int kernel, int iterations,
                            double read_gbps, double torch_ms, const char *key,
                            struct fp8kv_gpu_timing *t)
{
    double sum = 0.0;
    if (fp8kv_gpu_bench_attention(fp8, kernel, sh->seqs, sh->len, 1, KV_HEADS, Q_HEADS, HEAD, BLOCK,
                                  iterations, t, &sum) != 0)
        return -1;
    print_timing(key, t);
    printf("  = %.0f%% of the read-only bandwidth; output sum %.6g", 100.0 * t->gbps / read_gbps,
           sum);
    if (torch_ms > 0.0)
        printf("; %.2fx torch's bf16 time", t->ms / torch_ms);
    printf("\nbench: %s_vs_read=%.3f", key, t->gbps / read_gbps);
    if (torch_ms > 0.0)
        printf(" %s_vs_torch=%.3f", key, t->ms / torch_ms);
    printf("\n");
    return 0;
}

/* The multiprocessors' read speeds, the context of every one-wave kernel's figure. */
static void print_spread(const struct fp8kv_gpu_sm_spread *s)
{
    printf("multiprocessor read speeds: %s\n", s->what);
    if (!s->measured)
        return;
    printf("  a block's run took %.1f-%.1f us (median %.1f) on %d of %d multiprocessors; %d within "
           "5%% of the fastest\n",
           s->min_us, s->max_us, s->median_us, s->reporting, s->multiprocessors, s->fast);
    printf("bench: sm_read_min_us=%.1f sm_read_median_us=%.1f sm_read_max_us=%.1f "
           "sm_read_fast=%d\n",
           s->min_us, s->median_us, s->max_us, s->fast);
}

/* bench_attention: every shape, fp8 and bf16 caches, the planned kernel and (where the plan
 * picks the tensor-core one) the CUDA-core kernel it replaces; torch's figures first. */
static int bench_attention(int quick, int iterations)
{
    const struct attention_shape *shapes = quick ? quick_shapes : attention_shapes;
    const int n = quick ? 1 : (int)(sizeof attention_shapes / sizeof attention_shapes[0]);
    struct fp8kv_gpu_timing read;
    if (fp8kv_gpu_bench_read(quick ? ((size_t)64 << 20) : ((size_t)2 << 30), iterations, &read) !=
        0)
        return -1;
    print_timing("read", &read);
    struct fp8kv_gpu_sm_spread spread;
    if (fp8kv_gpu_bench_sm_spread(quick ? ((size_t)64 << 20) : ((size_t)2 << 30), 5, &spread) != 0)
        return -1;
    print_spread(&spread);
    double torch_ms[MAX_SHAPES];
    torch_sdpa(shapes, n, 0, torch_ms);
    for (int i = 0; i < n; i++) {
        const struct attention_shape *sh = &shapes[i];
        char key[64];
        struct fp8kv_gpu_timing t8, t16, prev;
        for (int fp8 = 1; fp8 >= 0; fp8--) {
            struct fp8kv_gpu_timing *t = fp8 ? &t8 : &t16;
            snprintf(key, sizeof key, "attention_%s_%dx%d", fp8 ? "fp8" : "bf16", sh->seqs,
                     sh->len);
            if (attention_figure(sh, fp8, FP8KV_GPU_ATTENTION_PLANNED, iterations, read.gbps,
                                 torch_ms[i], key, t) != 0)
                return -1;
            if (!strstr(t->what, "nhd128-mma"))
                continue;
            snprintf(key, sizeof key, "attention_%s_%dx%d_staged", fp8 ? "fp8" : "bf16", sh->seqs,
                     sh->len);
            if (attention_figure(sh, fp8, FP8KV_GPU_ATTENTION_STAGED, iterations, read.gbps,
                                 torch_ms[i], key, &prev) != 0)
                return -1;
            printf("  the tensor-core kernel: %.2fx the speed of the CUDA-core one\n",
                   prev.ms / t->ms);
        }
        printf("  fp8 cache: %.2fx the speed of the bf16 cache\n", t16.ms / t8.ms);
        printf("bench: attention_%dx%d_speedup=%.3f\n", sh->seqs, sh->len, t16.ms / t8.ms);
    }
    return 0;
}

/* bench_prefill: causal prefill over an fp8 cache at each prefill shape, in TFLOP/s of the
 * causal products (2 x 2 x q heads x head x len (len + 1) / 2 a sequence), against torch's
 * causal attention over bf16 K and V; torch's figures first. */
static int bench_prefill(int quick, int iterations)
{
    const struct attention_shape *shapes = quick ? quick_prefill_shapes : prefill_shapes;
    const int n = quick ? 1 : (int)(sizeof prefill_shapes / sizeof prefill_shapes[0]);
    double torch_ms[MAX_SHAPES];
    torch_sdpa(shapes, n, 1, torch_ms);
    for (int i = 0; i < n; i++) {
        const struct attention_shape *sh = &shapes[i];
        struct fp8kv_gpu_timing t;
        double sum = 0.0;
        if (fp8kv_gpu_bench_attention(1, FP8KV_GPU_ATTENTION_PLANNED, sh->seqs, sh->len, sh->len,
                                      KV_HEADS, Q_HEADS, HEAD, BLOCK, iterations, &t, &sum) != 0)
            return -1;
        char key[64];
        snprintf(key, sizeof key, "prefill_fp8_%dx%d", sh->seqs, sh->len);
        const double flops = 4.0 * sh->seqs * Q_HEADS * HEAD * (double)sh->len * (sh->len + 1) / 2;
        printf("%s\n  %.3f ms median (min %.3f, %d runs), %.1f TFLOP/s; output sum %.6g", t.what,
               t.ms, t.min_ms, t.iterations, flops / (t.ms * 1e-3) / 1e12, sum);
        if (torch_ms[i] > 0.0)
            printf("; %.2fx torch's bf16 time (%.1f TFLOP/s)", t.ms / torch_ms[i],
                   flops / (torch_ms[i] * 1e-3) / 1e12);
        printf("\nbench: %s_ms=%.4f %s_tflops=%.2f", key, t.ms, key, flops / (t.ms * 1e-3) / 1e12);
        if (torch_ms[i] > 0.0)
            printf(" %s_vs_torch=%.3f", key, t.ms / torch_ms[i]);
        printf("\n");
    }
    return 0;
}

/* bench_reference: the attention reference (f32) of engine-suite case 0 of the default profile,
 * on the GPU, then on the host (FP8KV_REFERENCE=cpu); each checked against the committed
 * digest, so both are the same values. */
static int bench_reference(const char *vectors_dir)
{
    const struct fp8kv_profile *p = fp8kv_default_profile();
    struct fp8kv_suite_case c;
    struct fp8kv_attention_arith a;
    if (fp8kv_vectors_trust(vectors_dir) != 0 || fp8kv_suite_case_make(vectors_dir, p, 0, &c) != 0)
        return -1;
    (void)fp8kv_attention_arith_parse("f32", &a);
    double ms[2] = {0.0, 0.0};
    for (int host = 0; host <= 1; host++) {
        if (host)
            setenv("FP8KV_REFERENCE", "cpu", 1);
        struct fp8kv_attention_ref ref;
        const double t0 = fp8kv_now();
        const int rc = fp8kv_suite_reference_checked(&c, p->name, &a, &ref);
        ms[host] = (fp8kv_now() - t0) * 1e3;
        if (host)
            unsetenv("FP8KV_REFERENCE");
        if (rc != 0) {
            fp8kv_suite_case_free(&c);
            return -1;
        }
        printf("attention reference, engine/case0 (%zu outputs, f32) on the %s: %.1f ms, digest "
               "as committed\n",
               ref.count, ref.on_gpu ? "GPU" : "host", ms[host]);
        if (!host && !ref.on_gpu)
            printf("  (the GPU reference did not run: %s)\n", fp8kv_last_error());
        fp8kv_attention_ref_free(&ref);
    }
    printf("bench: reference_gpu_ms=%.1f reference_host_ms=%.1f reference_speedup=%.2f\n", ms[0],
           ms[1], ms[1] / ms[0]);
    fp8kv_suite_case_free(&c);
    return 0;
}

/* The block codec's encode rate on the device (fp8kv/block_codec.h): every block format under
 * every rule it takes, model f32, 2^26 random values (2^20 with quick). */
static int bench_blocks(int quick, int iterations)
{
    const size_t values = quick ? (size_t)1 << 20 : (size_t)1 << 26;
    for (int f = 0; f < FP8KV_BLOCK_FORMAT_COUNT; f++) {
        const struct fp8kv_block_format *bf = &fp8kv_block_formats[f];
        for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++) {
            if (!fp8kv_block_takes_rule(bf, (enum fp8kv_block_rule)r))
                continue;
            const struct fp8kv_bcodec_cfg cfg = {(uint8_t)f, (uint8_t)r,
                                                 (uint8_t)FP8KV_BLOCK_MODEL_F32, 1.0f};
            struct fp8kv_gpu_timing t;
            if (fp8kv_gpu_bench_block(cfg, values, iterations, &t) != 0)
                return FP8KV_ERR;
            const double rate = (double)values / (t.ms * 1e-3);
            printf("block encode %-11s %-7s f32: %.3f ms for 2^%d values = %.2f G values/s "
                   "(%.0f GB/s)\n",
                   bf->name, fp8kv_block_rule_names[r], t.ms, quick ? 20 : 26, rate / 1e9, t.gbps);
            printf("bench: block_%s_%s_gvals=%.3f\n", bf->name, fp8kv_block_rule_names[r],
                   rate / 1e9);
        }
    }
    return FP8KV_OK;
}

/* The 2^32 f32 sweep of device codec c under profile p (NaN check strict for the configurable
 * codecs, class for the vendor ones: the timing is the point here, the run judges both). The
 * figure's key is sweep_<codec>_ms for the codec's first format, sweep_<codec>_<format>_ms for
 * the others. */
static int sweep_codec(int c, const struct fp8kv_profile *p, int first_format,
                       const uint32_t *bounds, int *clean)
{
    const struct fp8kv_gpu_codec *info = &fp8kv_gpu_codecs[c];
    const enum fp8kv_nan_check check =
        info->vendor ? FP8KV_NAN_CHECK_CLASS : FP8KV_NAN_CHECK_STRICT;
    struct fp8kv_sweep_run *runs = NULL;
    const long n = fp8kv_sweep_runs(p, check, FP8KV_DOMAIN_F32, bounds, &runs);
    if (n < 0)
        return fp8kv_cli_input_error("bench");
    struct fp8kv_sweep_result res;
    const int rc =
        fp8kv_gpu_sweep(c, fp8kv_profile_cfg(p), FP8KV_DOMAIN_F32, runs, (size_t)n, 0, 0, &res);
    free(runs);
    if (rc != 0)
        return gpu_failed(info->name);
    unsigned long long mismatches = 0;
    for (int k = 0; k < FP8KV_SWEEP_CLASSES; k++)
        mismatches += res.class_mismatches[k];
    *clean &= mismatches == 0;
    printf("sweep f32 %-20s %-18s nan %-6s: 2^32 inputs in %.2f ms kernel (%.2f ms with copies "
           "and failure passes), %.0f G inputs/s, mismatches %llu\n",
           info->name, p->name, fp8kv_nan_check_names[check], res.kernel_ms, res.total_ms,
           4294967296.0 / (res.kernel_ms * 1e-3) / 1e9, mismatches);
    if (first_format)
        printf("bench: sweep_%s_ms=%.3f\n", info->name, res.kernel_ms);
    else
        printf("bench: sweep_%s_%s_ms=%.3f\n", info->name, p->format->name, res.kernel_ms);
    return FP8KV_EXIT_CONFORMANT;
}

int fp8kv_cli_bench_gpu(int device, int quick, const char *vectors_dir, const char *only)
{
    const int figures = parse_only(only);
    if (figures < 0)
        return FP8KV_EXIT_USAGE;
    struct fp8kv_target_info info;
    if (fp8kv_gpu_target_info(device, &info) != 0) {
        fprintf(stderr, "fp8kv bench: target unavailable: %s\n", fp8kv_last_error());
        return FP8KV_EXIT_UNAVAILABLE;
    }
    printf("fp8kv bench on %s: %s\n%s\ncompiler %s\nflags %s\n%s\n", info.target, info.device,
           info.runtime, info.compiler, info.flags, info.compiled);

    /* store / gather: 65536 tokens x 8 heads x 128 in bf16 is 128 MiB of K and as much of V */
    const int tokens = quick ? 4096 : 65536, heads = 8, head = 128, block = 16;
    const int iterations = quick ? 3 : 20;
    struct fp8kv_gpu_timing copy, store, gather;
    const size_t input_bytes = (size_t)tokens * heads * head * 2 * 2;
    if (!(figures & (FIG_COPY | FIG_STORE | FIG_GATHER)))
        goto attention;
    if (fp8kv_gpu_bench_copy(input_bytes, iterations, &copy) != 0)
        return gpu_failed("copy");
    print_timing("copy", &copy);
    if (!(figures & FIG_STORE))
        goto gather;
    if (fp8kv_gpu_bench_store(FP8KV_GPU_CODEC_BITS, tokens, heads, head, block, iterations,
                              &store) != 0)
        return gpu_failed("store");
    print_timing("store", &store);
    printf("  = %.0f%% of the device-to-device copy bandwidth\n", 100.0 * store.gbps / copy.gbps);
    printf("bench: store_vs_copy=%.3f\n", store.gbps / copy.gbps);
    if (fp8kv_gpu_codec_available(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE)) {
        struct fp8kv_gpu_timing hw;
        if (fp8kv_gpu_bench_store(FP8KV_GPU_CODEC_PTX_CVT_SATFINITE, tokens, heads, head, block,
                                  iterations, &hw) != 0)
            return gpu_failed("store (hardware conversion)");
        print_timing("store_ptx", &hw);
        printf("  = %.0f%% of the device-to-device copy bandwidth\n", 100.0 * hw.gbps / copy.gbps);
        printf("bench: store_ptx_vs_copy=%.3f\n", hw.gbps / copy.gbps);
    }
gather:
    if (!(figures & FIG_GATHER))
        goto attention;
    if (fp8kv_gpu_bench_gather(tokens, heads, head, block, iterations, &gather) != 0)
        return gpu_failed("gather");
    print_timing("gather", &gather);
    printf("  = %.0f%% of the device-to-device copy bandwidth\n", 100.0 * gather.gbps / copy.gbps);
    printf("bench: gather_vs_copy=%.3f\n", gather.gbps / copy.gbps);

attention:;
    if (!(figures & FIG_ATTENTION))
        goto blocks;
    if (bench_attention(quick, iterations) != 0)
        return gpu_failed("attention");

blocks:;
    if ((figures & FIG_PREFILL) && bench_prefill(quick, iterations) != 0)
        return gpu_failed("prefill");
    if ((figures & FIG_REFERENCE) && !quick && bench_reference(vectors_dir) != 0)
        return gpu_failed("attention reference");
    if ((figures & FIG_BLOCK) && bench_blocks(quick, iterations) != 0)
        return gpu_failed("block encode");

    /* the 2^32 device sweeps */
    int clean = 1;
    if (!(figures & FIG_SWEEP))
        return FP8KV_EXIT_CONFORMANT;
    const int trusted = fp8kv_vectors_trust(vectors_dir) == 0;
    for (int c = 0; c < FP8KV_GPU_CODEC_COUNT; c++) {
        if (!fp8kv_gpu_codec_available(c))
            continue;
        /* per format, the first profile of the table the codec claims */
        int formats_swept = 0;
        for (int f = 0; f < FP8KV_FORMAT_COUNT; f++) {
            const struct fp8kv_profile *p = NULL;
            for (int i = 0; i < fp8kv_profile_count && !p; i++)
                if ((int)fp8kv_profiles[i].format->id == f &&
                    fp8kv_claim_covers(fp8kv_gpu_codecs[c].claim,
                                       fp8kv_profile_cfg(&fp8kv_profiles[i])))
                    p = &fp8kv_profiles[i];
            if (!p)
                continue;
            uint32_t *bounds = trusted ? fp8kv_load_boundaries(vectors_dir, p) : NULL;
            if (!bounds)
                return fp8kv_cli_input_error("bench");
            const int rc = sweep_codec(c, p, formats_swept == 0, bounds, &clean);
            free(bounds);
            if (rc != FP8KV_EXIT_CONFORMANT)
                return rc;
            formats_swept++;
        }
        if (formats_swept == 0)
            return fp8kv_cli_usage_error("bench", "%s claims no profile", fp8kv_gpu_codecs[c].name);
    }
    return clean ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}

#endif
