/* cmd_run.c — `fp8kv run`: a conformance run of one target, and its report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/run.h"
#ifdef FP8KV_HAVE_ORACLE
#include "fp8kv/block_judge.h"
#endif

static const char run_help[] =
    "usage: fp8kv run [--target auto|cpu|hip] [--device N] [--out DIR] [--vectors DIR]\n"
    "                 [--profile P] [--threads N] [--isa I] [--junit DIR] [--json FILE]\n"
    "                 [--no-blocks]\n"
    "\n"
    "Runs every check of a target against the golden vectors and writes\n"
    "DIR/<target>/report.json, then report.md, report.html and junit.xml rendered from it\n"
    "(atomically; `fp8kv report --from` regenerates them), and DIR/index.md and index.html.\n"
    "CPU checks, per profile: the built-in encoders against every encoder vector set and in\n"
    "exhaustive f32/f16/bf16 sweeps, the decoders against the decode and read sets, the\n"
    "KV-cache store/read/attention paths, and the quantization NMSE (reported, not gated).\n"
    "GPU checks (--target hip): the same on the device kernels, every device codec (the\n"
    "vendor conversions under NaN check strict and class, for the profiles they claim) in\n"
    "exhaustive device sweeps, and a long-context attention case. The report goes to\n"
    "DIR/sm_90/ or DIR/gfx942/ (the device's target name).\n"
    "Block checks (MX, NVFP4: docs/blocks.md), after the profiles, subject block-codec (CPU)\n"
    "or gpu-block-codec (hip), one column per block format, for every format, rule and model:\n"
    "block-vectors (the golden vectors), and with the oracle in this build block-decode,\n"
    "block-sweep and block-blocks (else \"not run\"). The CPU sweeps one point per format (MX\n"
    "scale code 01, nvfp4 38 at G 2^-126, default rule, exact model) and judges 2,000 blocks;\n"
    "a GPU takes check-block's defaults (every combination swept, 20,000 blocks).\n"
    "\n"
    "  --target T      auto (the GPU when this build has GPU kernels and a device answers,\n"
    "                  else the CPU), cpu, or hip (a GPU through the HIP or CUDA runtime)\n"
    "  --device N      the GPU to use (default 0)\n"
    "  --out DIR       reports root (default reports)\n"
    "  --vectors DIR   golden vectors (default: $FP8KV_VECTORS, ./vectors, or the installed set)\n"
    "  --profile P     one profile instead of all (no block checks), or one block format\n"
    "                  (only its block checks)\n"
    "  --threads N     threads for the sweeps (default: all cores)\n"
    "  --isa I         the CPU codecs' loops: scalar | avx2 | avx512 (default: the widest the\n"
    "                  processor has; the report's runtime names it)\n"
    "  --junit DIR     the unit tests' JUnit XML files to copy into DIR/<target>/junit/\n"
    "  --json FILE     also write the verdict as JSON (docs/json.md; report.json has the same\n"
    "                  shape); '-': the JSON to stdout, the text to stderr\n"
    "  --no-blocks     no block checks\n"
    "On a terminal, stderr shows one line, step N/M (a subject under a profile, then a block\n"
    "format), the checks done and an ETA, cleared at the end; nothing when stderr is not a\n"
    "terminal. Block rows print their profile column as \"<format> <rule> <model>\".\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments or vectors, 3 target unavailable\n";

enum {
    OPT_TARGET,
    OPT_OUT,
    OPT_VECTORS,
    OPT_PROFILE,
    OPT_THREADS,
    OPT_JUNIT,
    OPT_DEVICE,
    OPT_JSON,
    OPT_NO_BLOCKS,
    OPT_ISA,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"target", 1}, {"out", 1},    {"vectors", 1}, {"profile", 1},   {"threads", 1},
    {"junit", 1},  {"device", 1}, {"json", 1},    {"no-blocks", 0}, {"isa", 1}};

/* --profile's value: an fp8 profile or a block format; 0, else a usage message listing both
 * (with the nearest) and FP8KV_EXIT_USAGE. */
static int check_run_profile(const char *name)
{
    if (fp8kv_profile_by_name(name) || fp8kv_block_format_by_name(name))
        return 0;
    const char *names[64];
    int n = 0;
    for (int i = 0; i < fp8kv_profile_count && n < 64; i++)
        names[n++] = fp8kv_profiles[i].name;
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT && n < 64; i++)
        names[n++] = fp8kv_block_formats[i].name;
    return fp8kv_cli_unknown_choice("run", "--profile: no profile or block format", "", name, names,
                                    n);
}

int fp8kv_cmd_run(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("run", run_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    int kind = FP8KV_TARGET_AUTO;
    if (a.value[OPT_TARGET] &&
        (kind = fp8kv_cli_parse_choice("run", "target", a.value[OPT_TARGET],
                                       fp8kv_target_kind_names, FP8KV_TARGET_KIND_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    int device = 0;
    if (a.value[OPT_DEVICE] && fp8kv_cli_parse_device("run", a.value[OPT_DEVICE], &device) != 0)
        return FP8KV_EXIT_USAGE;
    struct fp8kv_run_options o = {
        .vectors_dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]),
        .profile = a.value[OPT_PROFILE],
        .log = stdout,
        .progress = stderr,
    };
    o.no_blocks = a.value[OPT_NO_BLOCKS] != NULL;
#ifdef FP8KV_HAVE_ORACLE
    o.block_oracle = &fp8kv_block_oracle_judges;
#endif
    const char *profile = a.value[OPT_PROFILE];
    const int block_profile = profile && fp8kv_block_format_by_name(profile);
    if (block_profile && o.no_blocks)
        return fp8kv_cli_usage_error("run",
                                     "--profile %s is a block format: it has only block "
                                     "checks, which --no-blocks leaves out",
                                     profile);
    if (profile && check_run_profile(profile) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_THREADS] &&
        fp8kv_cli_parse_threads("run", a.value[OPT_THREADS], &o.threads) != 0)
        return FP8KV_EXIT_USAGE;
    if (a.value[OPT_ISA] && (rc = fp8kv_cli_use_isa("run", a.value[OPT_ISA])) != 0)
        return rc;
    const char *out = a.value[OPT_OUT] ? a.value[OPT_OUT] : "reports";
    if ((rc = fp8kv_cli_json_begin("run", a.value[OPT_JSON])) != 0)
        return rc;

    /* the target: a GPU that answers, or (auto only) the CPU; never a pass without a run */
    struct fp8kv_target target;
    if (fp8kv_target_open((enum fp8kv_target_kind)kind, device, &target) != 0) {
        fprintf(stderr, "fp8kv run: target unavailable: %s\n", fp8kv_last_error());
        return FP8KV_EXIT_UNAVAILABLE;
    }
    if (kind == FP8KV_TARGET_AUTO && fp8kv_gpu_built() &&
        fp8kv_target_kind_of_name(target.info.target) == FP8KV_TARGET_CPU)
        printf("fp8kv run: no usable GPU (%s): running the CPU target\n", fp8kv_last_error());
    const struct fp8kv_target_info *info = &target.info;
    printf("fp8kv run: target %s (%s)\n", info->target, info->device);
    struct fp8kv_results results = {0};
    double t0 = fp8kv_now();
    if (fp8kv_run(&o, &target, &results) != 0) {
        fp8kv_results_free(&results);
        return fp8kv_cli_input_error("run"); /* nothing written: no half report */
    }
    struct fp8kv_report_meta meta = {
        .target = info,
        .vectors_dir = o.vectors_dir,
        .profiles = o.profile ? o.profile : "all",
        .seconds = fp8kv_now() - t0,
        .junit_dir = a.value[OPT_JUNIT],
    };
    if (fp8kv_report_write(out, &meta, &results) != 0) {
        fp8kv_results_free(&results);
        return fp8kv_cli_input_error("run");
    }
    int conformant = fp8kv_results_passed(&results);
    size_t failed = 0;
    for (size_t i = 0; i < results.count; i++)
        failed += results.items[i].gated && !results.items[i].passed;
    printf("fp8kv run: %s: %zu checks, %zu failed, %.1f s: %s; report in %s/%s/\n", info->target,
           results.count, failed, meta.seconds, conformant ? "conformant" : "nonconformant", out,
           info->target);
    json_t *extra = json_pack("{s:s, s:s, s:s}", "target", info->target, "device", info->device,
                              "profiles", meta.profiles);
    json_t *doc = fp8kv_cli_verdict_doc("run", conformant ? "conformant" : "nonconformant",
                                        results.items, results.count, extra);
    fp8kv_results_free(&results);
    if (fp8kv_cli_json_write("run", a.value[OPT_JSON], doc) != 0)
        return FP8KV_EXIT_USAGE;
    return conformant ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}
