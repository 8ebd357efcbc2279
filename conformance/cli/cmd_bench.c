/* cmd_bench.c — `fp8kv bench`: the performance figures and their targets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fp8kv/cpu_isa.h"
#include "fp8kv/verify.h"
#include "fp8kv/diag.h"
#include "fp8kv/plugin_sweep.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

static const char bench_help[] =
    "usage: fp8kv bench [--target cpu|hip|auto] [--device N] [--quick] [--only LIST]\n"
    "                   [--vectors DIR] [--threads N] [--profile P] [--no-run] [--baseline]\n"
    "                   [--plugin PATH] [--isa I] [--previous PATH]\n"
    "\n"
    "With --target hip, the GPU figures with their baselines measured in the same\n"
    "run (device-to-device copy bandwidth, the same attention kernel on a bf16 cache, torch's\n"
    "decode and causal-prefill attention where torch imports), the causal prefill over an fp8\n"
    "cache, the exact attention reference of the largest engine-suite case on the GPU against\n"
    "the host's, the block codec's encode rate for every block format and rule, and the 2^32\n"
    "device sweep of every device codec per format it claims; --quick uses small sizes (a\n"
    "smoke test); --only LIST measures only some of them (a comma list of copy, store,\n"
    "gather, attention, prefill, reference, block, sweep). --target auto is hip when a GPU\n"
    "answers, else cpu.\n"
    "Otherwise (--target cpu, the default) it measures, on this machine:\n"
    "  - the exhaustive 2^32 f32 sweep of each built-in encoder through the loops of every\n"
    "    instruction set the machine has (scalar, the baseline; avx2; avx512), the best of\n"
    "    three each, with its ratio to the scalar one; with --previous PATH, the same sweeps\n"
    "    by an earlier fp8kv binary (the best of three of its `sweep --codec` time: lines);\n"
    "  - the same bits sweep through a codec plugin (--plugin PATH; default the bits codec\n"
    "    built as a plugin next to this fp8kv), with its ratio to the built-in sweep;\n"
    "  - byte-stream verification (verify-stream's engine) of the 2^32 f32 codes through a\n"
    "    pipe from a producer process that writes them at memset speed, in GB/s;\n"
    "  - the peak resident memory of the process after the sweeps;\n"
    "  - the whole CPU conformance run (all profiles, no report written; the CPU codecs in\n"
    "    the loops of --isa I, default the widest), unless --no-run;\n"
    "  - with --baseline: the same bits sweep judged the naive way (a binary search of the\n"
    "    boundary table per input, no runs), in the same process, for comparison.\n"
    "Timings are wall-clock; nothing here is asserted.\n"
    "exit: 0 measured (a sweep that found mismatches still exits 1), 2 bad arguments,\n"
    "      3 target unavailable\n";

enum {
    OPT_VECTORS,
    OPT_THREADS,
    OPT_PROFILE,
    OPT_NO_RUN,
    OPT_BASELINE,
    OPT_TARGET,
    OPT_DEVICE,
    OPT_QUICK,
    OPT_PLUGIN,
    OPT_ONLY,
    OPT_ISA,
    OPT_PREVIOUS,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"vectors", 1},  {"threads", 1}, {"profile", 1}, {"no-run", 0},
    {"baseline", 0}, {"target", 1},  {"device", 1},  {"quick", 0},
    {"plugin", 1},   {"only", 1},    {"isa", 1},     {"previous", 1}};

#ifndef FP8KV_BITS_PLUGIN
#define FP8KV_BITS_PLUGIN ""
#endif
#ifndef FP8KV_LIBDIR
#define FP8KV_LIBDIR "lib"
#endif

/* The baseline subject: the bits codec, then each code replaced by a mismatch marker computed
 * per input with the table lookup, so the engine's run-based judging sees the naive verdict. */
struct lookup_ctx {
    const struct fp8kv_subject *bits;
    const struct fp8kv_profile *profile;
    const uint32_t *bounds;
};

static int encode_then_lookup(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n,
                              float s, uint8_t *q)
{
    const struct lookup_ctx *h = ctx;
    const int rc = h->bits->encode(h->bits->ctx, cfg, x, n, s, q);
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        uint8_t want = fp8kv_sweep_expected(h->profile, h->bounds, bits);
        if (!fp8kv_codes_match(h->profile->format, FP8KV_NAN_CHECK_STRICT, q[i], want))
            q[i] ^= 0xFF; /* keep a mismatch a mismatch */
    }
    return rc;
}

/* The producer of the stream benchmark (a child process): writes the expected code of every
 * f32 input in order to fd, a run at a time with memset, and exits. */
static void produce_stream(int fd, const struct fp8kv_sweep_run *runs, size_t nruns)
{
    enum { BUF = 1 << 20 };
    static uint8_t buf[BUF];
    size_t k = 0;
    for (uint64_t lo = 0; lo < (1ull << 32); lo += BUF) {
        for (uint64_t i = lo; i < lo + BUF;) {
            while (k + 1 < nruns && runs[k + 1].start <= i)
                k++;
            uint64_t end = k + 1 < nruns ? runs[k + 1].start : 1ull << 32;
            if (end > lo + BUF)
                end = lo + BUF;
            memset(buf + (i - lo), runs[k].value, (size_t)(end - i));
            i = end;
        }
        for (size_t off = 0; off < BUF;) {
            ssize_t w = write(fd, buf + off, BUF - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
    }
    _exit(0);
}

/* verify-stream's engine on the 2^32 f32 codes through a pipe; prints the figure. */
static int bench_stream(const struct fp8kv_profile *p, const uint32_t *bounds)
{
    struct fp8kv_sweep_run *runs;
    long nruns = fp8kv_sweep_runs(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32, bounds, &runs);
    int fds[2];
    if (nruns < 0 || pipe(fds) != 0)
        return FP8KV_ERR;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        produce_stream(fds[1], runs, (size_t)nruns);
    }
    close(fds[1]);
    free(runs);
    if (pid < 0)
        return fp8kv_fail("cannot start the stream producer");
    struct fp8kv_stream stream = {fds[0], 0};
    const struct fp8kv_subject subject = fp8kv_stream_subject(&stream, "stream");
    struct fp8kv_check c;
    int rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32, bounds, &subject,
                         fp8kv_profile_cfg(p), NULL, &c);
    if (rc == 0)
        rc = fp8kv_stream_finish(&stream, c.cases);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (rc == 0)
        printf("verify-stream f32 through a pipe: %.3f s for 2^32 codes, %.2f GB/s, mismatches "
               "%llu\n",
               c.seconds, 4294967296.0 / c.seconds / 1e9, (unsigned long long)c.mismatches);
    return rc;
}

static double peak_rss_mib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0;
}

/* What the CPU benchmarks share. */
struct bench {
    const struct fp8kv_profile *p;
    const uint32_t *bounds;
    struct fp8kv_sweep_options opt;
    int all_clean;
};

/* One f32 sweep of subject s, timed: its check in *c; 0 or a status. */
static int bench_sweep(struct bench *b, const struct fp8kv_subject *s,
                       const struct fp8kv_sweep_options *opt, struct fp8kv_check *c)
{
    const int rc = fp8kv_sweep(b->p, FP8KV_NAN_CHECK_STRICT, FP8KV_DOMAIN_F32, b->bounds, s,
                               fp8kv_profile_cfg(b->p), opt, c);
    if (rc == 0)
        b->all_clean &= c->passed;
    return rc;
}

/* The codec plugin to measure: --plugin, or the bits plugin built (or installed) beside this
 * fp8kv; *path says which, *plugin is NULL when there is none. 0 or an exit code. */
static int open_bench_plugin(const char *given, int threads, const char **path,
                             struct fp8kv_plugin **plugin)
{
    static char installed[4096]; /* an installed fp8kv: <prefix>/lib/fp8kv/fp8kv_bits_plugin.so */
    struct stat st;
    *plugin = NULL;
    *path = given ? given : FP8KV_BITS_PLUGIN;
    if (!given && stat(*path, &st) != 0 &&
        fp8kv_cli_beside_exe("../" FP8KV_LIBDIR "/fp8kv/fp8kv_bits_plugin.so", installed,
                             sizeof installed) == 0 &&
        stat(installed, &st) == 0)
        *path = installed;
    if (!given && stat(*path, &st) != 0)
        return 0;
    const int rc = fp8kv_plugin_open(*path, threads > 0 ? threads : fp8kv_sweep_default_threads(),
                                     30.0, plugin);
    return rc == 0 ? 0 : fp8kv_cli_subject_error("bench", rc);
}

/* The best of SWEEP_TRIES timings is the figure of a sweep (the others are the machine's
 * noise). */
enum { SWEEP_TRIES = 3 };

/* The best time of `previous sweep --codec name` (an earlier fp8kv binary) under the bench's
 * profile, from its "time:" lines; -1 when it did not run or printed none. */
static double previous_sweep_seconds(const char *previous, const char *name, const char *profile,
                                     const char *dir, int threads)
{
    char cmd[8192], line[512];
    double best = -1.0;
    snprintf(cmd, sizeof cmd, "'%s' sweep --codec %s --profile %s --vectors '%s' --threads %d 2>&1",
             previous, name, profile, dir, threads > 0 ? threads : fp8kv_sweep_default_threads());
    for (int t = 0; t < SWEEP_TRIES; t++) {
        FILE *f = popen(cmd, "r");
        if (!f)
            return -1.0;
        double s;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "time: %lf s", &s) == 1 && (best < 0 || s < best))
                best = s;
        pclose(f);
    }
    return best;
}

/* Each built-in encoder's f32 sweep through the loops of every instruction set this machine
 * has, scalar first (the baseline), the best of SWEEP_TRIES each; with --previous, the same
 * sweep by an earlier binary. *bits_seconds: the bits sweep in the loops in use. 0 or an exit
 * code. */
static int bench_isas(struct bench *b, const char *previous, const char *dir, double *bits_seconds)
{
    const enum fp8kv_cpu_isa in_use = fp8kv_cpu_isa_in_use();
    for (int i = 0; i < fp8kv_cpu_subject_count; i++) {
        const struct fp8kv_subject *s = &fp8kv_cpu_subjects[i];
        if (!fp8kv_subject_can(s, FP8KV_CAP_ENCODE))
            continue;
        double scalar = 0.0;
        for (int isa = 0; isa < FP8KV_ISA_COUNT; isa++) {
            if (fp8kv_cpu_isa_use((enum fp8kv_cpu_isa)isa) != 0)
                continue; /* not on this machine */
            double best = 0.0;
            struct fp8kv_check c;
            for (int t = 0; t < SWEEP_TRIES; t++) {
                if (bench_sweep(b, s, &b->opt, &c) != 0)
                    return fp8kv_cli_input_error("bench");
                best = t == 0 || c.seconds < best ? c.seconds : best;
            }
            scalar = isa == FP8KV_ISA_SCALAR ? best : scalar;
            printf("sweep f32 %-6s %-6s %s: %.3f s (best of %d) for 2^32 inputs, %.2f G inputs/s, "
                   "%.1f x the scalar loops, mismatches %llu\n",
                   s->name, fp8kv_cpu_isa_names[isa], b->p->name, best, SWEEP_TRIES,
                   4294967296.0 / best / 1e9, scalar / best, (unsigned long long)c.mismatches);
            if (isa == (int)in_use && strcmp(s->name, "bits") == 0)
                *bits_seconds = best;
        }
        fp8kv_cpu_isa_use(in_use);
        if (previous) {
            const double t =
                previous_sweep_seconds(previous, s->name, b->p->name, dir, b->opt.threads);
            if (t < 0)
                printf("sweep f32 %-6s previous binary %s: not run (no time: line)\n", s->name,
                       previous);
            else
                printf("sweep f32 %-6s previous binary %s: %.3f s (best of %d)\n", s->name,
                       previous, t, SWEEP_TRIES);
        }
    }
    return 0;
}

/* The built-in encoders' sweeps, then the plugin's against the bits one. 0 or an exit code. */
static int bench_encoders(struct bench *b, struct fp8kv_plugin *plugin, const char *plugin_path,
                          const char *previous, const char *dir)
{
    double bits_seconds = 0.0;
    const int isas_rc = bench_isas(b, previous, dir, &bits_seconds);
    if (isas_rc != 0)
        return isas_rc;
    if (!plugin) {
        printf("sweep f32 plugin: not run (no plugin at '%s'; give --plugin PATH)\n", plugin_path);
        return 0;
    }
    const struct fp8kv_plugin_info *info = fp8kv_plugin_info(plugin);
    if (info->format != b->p->format->id || info->overflow != b->p->overflow) {
        /* a plugin judged under a profile it does not claim says nothing about its speed's
         * meaning, and its mismatches nothing at all */
        printf("sweep f32 plugin %s: not run (it declares %s %s; the profile is %s: give "
               "--profile with its format, or a --plugin for this profile)\n",
               plugin_path, fp8kv_formats[info->format].name, fp8kv_overflow_names[info->overflow],
               b->p->name);
        return 0;
    }
    const struct fp8kv_subject s = fp8kv_plugin_subject(plugin);
    struct fp8kv_sweep_options popt = b->opt;
    popt.threads = fp8kv_plugin_workers(plugin);
    struct fp8kv_check c;
    const int rc = bench_sweep(b, &s, &popt, &c);
    if (rc != 0)
        return fp8kv_cli_subject_error("bench", rc);
    printf("sweep f32 plugin %s (%s): %.3f s for 2^32 inputs, %.2f x the built-in bits "
           "sweep, mismatches %llu\n",
           plugin_path, c.subject, c.seconds, c.seconds / bits_seconds,
           (unsigned long long)c.mismatches);
    return 0;
}

/* The naive baseline: the bits sweep judged per input by table lookup. 0 or an exit code. */
static int bench_baseline(struct bench *b)
{
    struct lookup_ctx ctx = {
        fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, "bits", FP8KV_CAP_ENCODE),
        b->p, b->bounds};
    const struct fp8kv_subject s = {.name = "bits+lookup",
                                    .caps = FP8KV_CAP_ENCODE,
                                    .claim = FP8KV_CLAIM_ALL,
                                    .ctx = &ctx,
                                    .encode = encode_then_lookup};
    struct fp8kv_check c;
    if (bench_sweep(b, &s, &b->opt, &c) != 0)
        return fp8kv_cli_input_error("bench");
    printf("baseline: bits judged per input by table lookup: %.3f s for 2^32 inputs\n", c.seconds);
    return 0;
}

/* The whole CPU conformance run, no report written. 0 or an exit code. */
static int bench_run(struct bench *b, const char *dir, int threads)
{
    struct fp8kv_run_options o = {.vectors_dir = dir, .threads = threads};
    struct fp8kv_target t;
    struct fp8kv_results r = {0};
    const double t0 = fp8kv_now();
    if (fp8kv_target_open(FP8KV_TARGET_CPU, 0, &t) != 0 || fp8kv_run(&o, &t, &r) != 0) {
        fp8kv_results_free(&r);
        return fp8kv_cli_input_error("bench");
    }
    printf("whole CPU run (all profiles, %zu checks, report not written): %.1f s, %s\n", r.count,
           fp8kv_now() - t0, fp8kv_results_passed(&r) ? "conformant" : "nonconformant");
    b->all_clean &= fp8kv_results_passed(&r);
    fp8kv_results_free(&r);
    printf("peak resident memory after the run: %.1f MiB\n", peak_rss_mib());
    return 0;
}

int fp8kv_cmd_bench(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("bench", bench_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    int kind = FP8KV_TARGET_CPU, device = 0, threads = 0;
    if (a.value[OPT_TARGET] &&
        (kind = fp8kv_cli_parse_choice("bench", "target", a.value[OPT_TARGET],
                                       fp8kv_target_kind_names, FP8KV_TARGET_KIND_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_DEVICE] && fp8kv_cli_parse_device("bench", a.value[OPT_DEVICE], &device) != 0)
        return FP8KV_EXIT_USAGE;
    struct fp8kv_target_info gpu;
    if (kind == FP8KV_TARGET_HIP ||
        (kind == FP8KV_TARGET_AUTO && fp8kv_gpu_target_info(device, &gpu) == 0)) {
        /* the CPU bench's options mean nothing here: an error, never silently ignored */
        static const int cpu_only[] = {OPT_THREADS, OPT_PROFILE, OPT_NO_RUN,  OPT_BASELINE,
                                       OPT_PLUGIN,  OPT_ISA,     OPT_PREVIOUS};
        for (size_t i = 0; i < sizeof cpu_only / sizeof cpu_only[0]; i++)
            if (a.value[cpu_only[i]])
                return fp8kv_cli_usage_error("bench", "--%s is for the CPU bench (--target cpu)",
                                             options[cpu_only[i]].name);
        return fp8kv_cli_bench_gpu(device, a.value[OPT_QUICK] != NULL,
                                   fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]), a.value[OPT_ONLY]);
    }
    if (a.value[OPT_ONLY] || a.value[OPT_QUICK])
        return fp8kv_cli_usage_error("bench", "--only and --quick are for --target hip");
    if (a.value[OPT_THREADS] &&
        fp8kv_cli_parse_threads("bench", a.value[OPT_THREADS], &threads) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_ISA] && (rc = fp8kv_cli_use_isa("bench", a.value[OPT_ISA])) != 0)
        return rc;
    const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
    struct bench b = {.p = a.value[OPT_PROFILE] ? fp8kv_cli_profile("bench", a.value[OPT_PROFILE])
                                                : fp8kv_default_profile(),
                      .opt = {.threads = threads},
                      .all_clean = 1};
    if (!b.p)
        return FP8KV_EXIT_USAGE;
    uint32_t *bounds = fp8kv_vectors_trust(dir) == 0 ? fp8kv_load_boundaries(dir, b.p) : NULL;
    if (!bounds)
        return fp8kv_cli_input_error("bench");
    b.bounds = bounds;

    struct fp8kv_target_info info;
    fp8kv_cpu_target_info(&info);
    printf("fp8kv bench on %s (%s)\n", info.target, info.device);
    printf("compiler %s, flags %s\n", info.compiler, info.flags);
    /* the plugin's workers start first, before this process has threads of its own */
    const char *plugin_path;
    struct fp8kv_plugin *plugin;
    rc = open_bench_plugin(a.value[OPT_PLUGIN], threads, &plugin_path, &plugin);
    if (rc == 0)
        rc = bench_encoders(&b, plugin, plugin_path, a.value[OPT_PREVIOUS], dir);
    fp8kv_plugin_close(plugin);
    if (rc == 0 && bench_stream(b.p, bounds) != 0)
        rc = fp8kv_cli_input_error("bench");
    if (rc == 0)
        printf("peak resident memory after the sweeps: %.1f MiB\n", peak_rss_mib());
    if (rc == 0 && a.value[OPT_BASELINE])
        rc = bench_baseline(&b);
    free(bounds);
    if (rc == 0 && !a.value[OPT_NO_RUN])
        rc = bench_run(&b, dir, threads);
    if (rc != 0)
        return rc;
    return b.all_clean ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}
