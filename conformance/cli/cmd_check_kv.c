/* cmd_check_kv.c — `fp8kv check-kv`: every golden KV case through a KV-kernel plugin
 * (fp8kv/kv_plugin.h) in a worker process, or through one of fp8kv's own KV subjects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/kv_plugin_host.h"
#include "fp8kv/kv_suite.h"
#include "fp8kv/run.h"
#include "fp8kv/verify.h"

static const char check_kv_help[] =
    "usage: fp8kv check-kv (--plugin LIB.so | --subject NAME) [--profile P] [--device N]\n"
    "                      [--suite golden|engine|all] [--case N] [--timeout S]\n"
    "                      [--worker-memory M] [--vectors DIR] [--json FILE]\n"
    "\n"
    "Runs every golden KV case (vectors/<profile>/kv/) through KV kernels and judges them: the\n"
    "store byte for byte, the gather + dequant in f32, f16 and bf16 bit for bit, the attention\n"
    "at the arithmetic the kernels declare (every output within its bound, docs/DESIGN.md\n"
    "§5.3.1; under f32 also an NMSE of at most 1e-10 against the oracle), for each profile the\n"
    "kernels implement.\n"
    "  --suite S        golden (default): the golden KV cases; engine: the attention of the\n"
    "                   engine suite's cases (`fp8kv suite`; generated, their digests\n"
    "                   checked; seconds per case): decode, and where the kernels declare it\n"
    "                   (attention_features), multi-token decode, prefill and a sliding\n"
    "                   window, each also through the decode path (kv-attention-consistency);\n"
    "                   all: both\n"
    "  --case N         with the engine suite: only its case N\n"
    "  --plugin LIB.so  a shared library exporting fp8kv_kv_kernels_v1 (fp8kv/kv_plugin.h), run\n"
    "                   in a worker process; device-memory kernels need a GPU build\n"
    "  --subject NAME   fp8kv's own kernels through the same interface: cpu-reference, or\n"
    "                   gpu-kernels (a GPU build, device --device)\n"
    "  --profile P      only this profile (default: every profile the kernels implement)\n"
    "  --device N       the GPU for device-memory kernels (default 0)\n"
    "  --timeout S      seconds a plugin call may take (default 30)\n"
    "  --worker-memory M\n"
    "                   the memory a plugin worker may hold (bytes, or with K, M or G; 0: none;\n"
    "                   default $FP8KV_WORKER_MEMORY, else half the machine's)\n"
    "  --vectors DIR    the vector directory (verified first)\n" FP8KV_CLI_JSON_HELP
    "Prints one line per check and the last line\n"
    "  check-kv <name>: profiles=<P> checks=<N> failed=<F> verdict=conformant|nonconformant\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad arguments, vectors or plugin, 3 no GPU for\n"
    "      device kernels, 4 the plugin crashed, hung, failed a call or wrote out of bounds\n";

enum {
    OPT_PLUGIN,
    OPT_SUBJECT,
    OPT_PROFILE,
    OPT_DEVICE,
    OPT_TIMEOUT,
    OPT_WORKER_MEMORY,
    OPT_SUITE,
    OPT_CASE,
    OPT_VECTORS,
    OPT_JSON,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"plugin", 1},        {"subject", 1}, {"profile", 1}, {"device", 1},  {"timeout", 1},
    {"worker-memory", 1}, {"suite", 1},   {"case", 1},    {"vectors", 1}, {"json", 1}};

/* own_subject: fp8kv's KV subject called name, from the target that has it. */
static int own_subject(const char *cmd, const char *name, int device, struct fp8kv_subject *out)
{
    struct fp8kv_target t;
    const int gpu = strcmp(name, "gpu-kernels") == 0;
    static const char *const own[] = {"cpu-reference", "gpu-kernels"};
    if (!gpu && strcmp(name, own[0]) != 0)
        return fp8kv_cli_unknown_choice(cmd, "--subject: unknown value", "", name, own, 2);
    int rc = fp8kv_target_open(gpu ? FP8KV_TARGET_HIP : FP8KV_TARGET_CPU, device, &t);
    if (rc != 0) {
        fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
        return fp8kv_exit_code(rc);
    }
    const struct fp8kv_subject *s =
        fp8kv_subject_find(t.subjects, t.subject_count, name, FP8KV_CAP_STORE);
    if (!s) {
        fprintf(stderr, "fp8kv %s: this target has no %s\n", cmd, name);
        return FP8KV_EXIT_UNAVAILABLE;
    }
    *out = *s;
    return 0;
}

/* judge: the golden cases of every profile s implements (or only `only`); 0, or an exit code. */
static int judge(const char *cmd, const struct fp8kv_subject *s, const char *only, const char *dir,
                 unsigned suites, int engine_case, struct fp8kv_results *r, int *profiles)
{
    for (int i = 0; i < fp8kv_profile_count; i++) {
        const struct fp8kv_profile *p = &fp8kv_profiles[i];
        if (only && strcmp(only, p->name) != 0)
            continue;
        if (!fp8kv_claim_covers(s->claim, fp8kv_profile_cfg(p))) {
            if (only)
                return fp8kv_cli_usage_error(cmd, "%s does not implement profile %s", s->name,
                                             only);
            continue;
        }
        const size_t from = r->count;
        int rc = suites & 1u ? fp8kv_check_kv(dir, p, s, r) : 0;
        if (rc == 0 && (suites & 2u) && fp8kv_subject_can(s, FP8KV_CAP_ATTENTION))
            rc = fp8kv_check_attention_engine(dir, p, s, engine_case, r);
        fp8kv_log_checks(stdout, r, from);
        if (rc != 0)
            return fp8kv_cli_subject_error(cmd, rc);
        (*profiles)++;
    }
    if (*profiles == 0)
        return only
                   ? fp8kv_cli_usage_error(cmd, "unknown profile '%s'", only)
                   : fp8kv_cli_usage_error(cmd, "%s implements no profile of the vectors", s->name);
    return 0;
}

int fp8kv_cmd_check_kv(int argc, char **argv)
{
    static const char cmd[] = "check-kv";
    struct fp8kv_cli_args a;
    int rc, device = 0;
    double timeout = 30.0;
    if (fp8kv_cli_begin(cmd, check_kv_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (!a.value[OPT_PLUGIN] == !a.value[OPT_SUBJECT])
        return fp8kv_cli_usage_error(cmd, "give one of --plugin LIB.so or --subject NAME");
    if ((a.value[OPT_DEVICE] && (rc = fp8kv_cli_parse_device(cmd, a.value[OPT_DEVICE], &device))) ||
        (a.value[OPT_TIMEOUT] &&
         (rc = fp8kv_cli_parse_seconds(cmd, "timeout", a.value[OPT_TIMEOUT], &timeout))) ||
        (a.value[OPT_WORKER_MEMORY] &&
         (rc = fp8kv_cli_use_worker_memory(cmd, a.value[OPT_WORKER_MEMORY]))))
        return rc;
    if (a.value[OPT_PROFILE] && !fp8kv_cli_profile(cmd, a.value[OPT_PROFILE]))
        return FP8KV_EXIT_USAGE;
    static const char *const suite_names[] = {"golden", "engine", "all"};
    const int suite = a.value[OPT_SUITE]
                          ? fp8kv_cli_parse_choice(cmd, "suite", a.value[OPT_SUITE], suite_names, 3)
                          : 0;
    if (suite < 0)
        return FP8KV_EXIT_USAGE;
    unsigned long long engine_case = 0;
    if (a.value[OPT_CASE]) {
        if (suite == 0)
            return fp8kv_cli_usage_error(cmd, "--case selects an engine-suite case: give "
                                              "--suite engine or all");
        if (fp8kv_cli_parse_count(cmd, "case", a.value[OPT_CASE], 10, 0,
                                  (unsigned long long)fp8kv_suite_case_count() - 1,
                                  &engine_case) != 0)
            return FP8KV_EXIT_USAGE;
    }
    const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
    if (fp8kv_vectors_trust(dir) != 0)
        return fp8kv_cli_input_error(cmd);
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0)
        return rc;
    struct fp8kv_kv_plugin *pl = NULL;
    struct fp8kv_subject s;
    if (a.value[OPT_PLUGIN]) {
        if ((rc = fp8kv_kv_plugin_open(a.value[OPT_PLUGIN], device, timeout, &pl)) != 0) {
            fprintf(stderr, "fp8kv %s: %s\n", cmd, fp8kv_last_error());
            return fp8kv_exit_code(rc);
        }
        s = fp8kv_kv_plugin_subject(pl);
    } else if ((rc = own_subject(cmd, a.value[OPT_SUBJECT], device, &s)) != 0) {
        return rc;
    }
    struct fp8kv_results r = {0};
    int profiles = 0;
    rc = judge(cmd, &s, a.value[OPT_PROFILE], dir,
               suite == 0   ? 1u
               : suite == 1 ? 2u
                            : 3u,
               a.value[OPT_CASE] ? (int)engine_case : -1, &r, &profiles);
    if (rc == 0) {
        size_t failed = 0;
        for (size_t i = 0; i < r.count; i++)
            failed += fp8kv_check_outcome(&r.items[i]) == FP8KV_OUTCOME_FAIL;
        const int ok = fp8kv_results_passed(&r);
        printf("check-kv %s: profiles=%d checks=%zu failed=%zu verdict=%s\n", s.name, profiles,
               r.count, failed, ok ? "conformant" : "nonconformant");
        rc = ok ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
        json_t *extra = json_pack("{s:s, s:i}", "subject", s.name, "profiles", profiles);
        if (fp8kv_cli_json_write(cmd, a.value[OPT_JSON],
                                 fp8kv_cli_verdict_doc(cmd, ok ? "conformant" : "nonconformant",
                                                       r.items, r.count, extra)) != 0)
            rc = FP8KV_EXIT_USAGE;
    }
    fp8kv_results_free(&r);
    fp8kv_kv_plugin_close(pl);
    return rc;
}
