/* cmd_report.c — `fp8kv report`: the report of a GPU target whose kernels were compiled but not
 * executed (--compiled-only: the AMD targets of CI), or that the compilers at hand could not
 * compile at all (--not-compiled), written by the same writer as a run's report, with status
 * "not run", naming what was compiled (or why nothing was) and never saying "passed"; or a
 * report's files regenerated from its report.json alone (--from), or a report directory's index
 * (--index). What it prints from outside (paths, names, the messages naming them) goes through
 * the terminal escaper (fp8kv_term_put). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/run.h"
#include "report/model.h"

static const char report_help[] =
    "usage: fp8kv report --compiled-only TARGET --paths TEXT [--assembly TEXT] [--compiler TEXT]\n"
    "                    [--flags TEXT] [--reason TEXT] [--out DIR] [--vectors DIR]\n"
    "       fp8kv report --not-compiled TARGET --reason TEXT [--compiler TEXT] [--out DIR]\n"
    "                    [--vectors DIR]\n"
    "       fp8kv report --from DIR/TARGET/report.json\n"
    "       fp8kv report --index DIR\n"
    "\n"
    "--compiled-only and --not-compiled write DIR/TARGET/report.json, report.md, report.html and\n"
    "junit.xml for a GPU target that was compiled but not executed, or not compiled at all, and\n"
    "rewrite DIR/index.md and index.html. The verdict is \"not run\"; the report lists what was\n"
    "compiled (--paths, e.g. the device codec paths the compiler produced for TARGET), what its\n"
    "assembly showed (--assembly), with which compiler and flags, and why it did not run (or,\n"
    "with --not-compiled, why it was not compiled).\n"
    "\n"
    "--from regenerates report.md, report.html and junit.xml beside a report.json from it\n"
    "alone: the same bytes `fp8kv run` wrote. The document is checked, not believed: its\n"
    "verdict must be the one its checks (and verified vectors) give, each pass must be borne\n"
    "out by its counts, its summary must count its checks. --index rewrites DIR/index.md and\n"
    "index.html from every DIR/*/report.json, every entry read and sorted, and names (here and\n"
    "in the index) the entries that are not report folders. A damaged report.json, or one that\n"
    "contradicts itself, is exit 2 naming it and the contradiction; nothing is written then.\n"
    "\n"
    "  --from FILE             a report.json to render report.md, report.html, junit.xml from\n"
    "  --index DIR             a reports root to write index.md and index.html of\n"
    "  --compiled-only TARGET  the target name: gfx90a, gfx942, sm_89, ...\n"
    "  --not-compiled TARGET   the same, for a target no compiler here could build\n"
    "  --paths TEXT            what was compiled for it\n"
    "  --assembly TEXT         what its assembly was checked for and showed\n"
    "  --compiler TEXT         the compiler and its version\n"
    "  --flags TEXT            the compile flags\n"
    "  --reason TEXT           why it was not executed (default: no such device here), or\n"
    "                          with --not-compiled (required) why it was not compiled\n"
    "  --out DIR               reports root (default reports)\n"
    "  --vectors DIR           golden vectors, for the vector-set hash (default: $FP8KV_VECTORS, "
    "./vectors, or the installed set)\n"
    "exit: 0 written, 2 bad arguments, a damaged report.json or an unwritable report\n";

enum {
    OPT_COMPILED_ONLY,
    OPT_NOT_COMPILED,
    OPT_PATHS,
    OPT_ASSEMBLY,
    OPT_COMPILER,
    OPT_FLAGS,
    OPT_REASON,
    OPT_OUT,
    OPT_VECTORS,
    OPT_FROM,
    OPT_INDEX,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"compiled-only", 1}, {"not-compiled", 1}, {"paths", 1},  {"assembly", 1},
    {"compiler", 1},      {"flags", 1},        {"reason", 1}, {"out", 1},
    {"vectors", 1},       {"from", 1},         {"index", 1}};

/* The last error on stderr, escaped for the terminal (it names paths and what documents say):
 * exit 2. */
static int input_error(void)
{
    fputs("fp8kv report: ", stderr);
    fp8kv_term_put(stderr, fp8kv_last_error());
    fputc('\n', stderr);
    return FP8KV_EXIT_USAGE;
}

/* --from FILE: the files rendered beside it, and the verdict its checks give. */
static int render_from(const char *path)
{
    struct fp8kv_report r;
    if (fp8kv_report_load(path, &r) != 0) /* damaged, or contradicting itself */
        return input_error();
    const int rc = fp8kv_report_render_beside(path, &r);
    if (rc == 0) {
        printf("fp8kv report: report.md, report.html, junit.xml rendered from ");
        fp8kv_term_put(stdout, path);
        printf(": ");
        fp8kv_term_put(stdout, r.target.target);
        printf(" %s (%zu checks, %llu failed)\n", r.verdict, r.checks.count, r.failed);
    }
    fp8kv_report_free(&r);
    return rc == 0 ? FP8KV_EXIT_CONFORMANT : input_error();
}

/* --index DIR: index.md and index.html, and the entries they do not list named. */
static int write_index(const char *dir)
{
    struct fp8kv_index ix;
    int rc = fp8kv_index_load(dir, &ix);
    if (rc == 0)
        rc = fp8kv_index_write(dir, &ix);
    if (rc == 0) {
        printf("fp8kv report: ");
        fp8kv_term_put(stdout, dir);
        printf("/index.md and index.html written: %zu report folders, %zu other entries not "
               "listed\n",
               ix.count, ix.skipped_count);
        fflush(stdout);
    }
    for (size_t i = 0; rc == 0 && i < ix.skipped_count; i++) {
        fputs("fp8kv report: not listed in the index: ", stderr);
        fp8kv_term_put(stderr, dir);
        fputc('/', stderr);
        fp8kv_term_put(stderr, ix.skipped[i].name);
        fputs(": ", stderr);
        fp8kv_term_put(stderr, ix.skipped[i].why);
        fputc('\n', stderr);
    }
    fp8kv_index_free(&ix);
    return rc == 0 ? FP8KV_EXIT_CONFORMANT : input_error();
}

/* --from FILE or --index DIR: files rendered from report.json alone. */
static int regenerate(const struct fp8kv_cli_args *a)
{
    for (int k = 0; k < OPT_COUNT; k++)
        if (a->value[k] && k != OPT_FROM && k != OPT_INDEX)
            return fp8kv_cli_usage_error("report", "--%s does not go with --from or --index",
                                         options[k].name);
    int rc = FP8KV_EXIT_CONFORMANT;
    if (a->value[OPT_FROM])
        rc = render_from(a->value[OPT_FROM]);
    if (rc == FP8KV_EXIT_CONFORMANT && a->value[OPT_INDEX])
        rc = write_index(a->value[OPT_INDEX]);
    return rc;
}

int fp8kv_cmd_report(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("report", report_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if (a.value[OPT_FROM] || a.value[OPT_INDEX])
        return regenerate(&a);
    const char *compiled = a.value[OPT_COMPILED_ONLY], *not_compiled = a.value[OPT_NOT_COMPILED];
    if (!compiled == !not_compiled)
        return fp8kv_cli_usage_error("report", "give one of --compiled-only TARGET, "
                                               "--not-compiled TARGET, --from FILE or --index DIR");
    const char *target = compiled ? compiled : not_compiled,
               *mode = compiled ? "--compiled-only" : "--not-compiled";
    if (!*target || fp8kv_target_kind_of_name(target) != FP8KV_TARGET_HIP ||
        strlen(target) >= sizeof((struct fp8kv_target_info *)0)->target)
        return fp8kv_cli_usage_error(
            "report", "%s: '%s' is not a GPU target name (sm_NN or gfxNNN)", mode, target);
    const char *paths = a.value[OPT_PATHS], *reason = a.value[OPT_REASON];
    if (compiled && (!paths || !*paths))
        return fp8kv_cli_usage_error("report", "--paths: say what was compiled for %s", target);
    if (not_compiled && (paths || a.value[OPT_ASSEMBLY] || a.value[OPT_FLAGS]))
        return fp8kv_cli_usage_error("report",
                                     "--not-compiled %s: nothing was compiled, so --paths, "
                                     "--assembly and --flags do not apply",
                                     target);
    if (not_compiled && (!reason || !*reason))
        return fp8kv_cli_usage_error("report", "--reason: say why %s was not compiled", target);

    struct fp8kv_target_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.target, sizeof info.target, "%s", target);
    snprintf(info.device, sizeof info.device, "%s (none present: %s)", target,
             compiled ? "compiled only" : "not compiled");
    snprintf(info.runtime, sizeof info.runtime, "none (not executed)");
    snprintf(info.compiler, sizeof info.compiler, "%s",
             a.value[OPT_COMPILER] ? a.value[OPT_COMPILER] : "unknown");
    snprintf(info.flags, sizeof info.flags, "%s", a.value[OPT_FLAGS] ? a.value[OPT_FLAGS] : "");
    snprintf(info.compiled, sizeof info.compiled, "%s", compiled ? paths : "");
    snprintf(info.assembly, sizeof info.assembly, "%s",
             a.value[OPT_ASSEMBLY] ? a.value[OPT_ASSEMBLY] : "");
    snprintf(info.not_run_reason, sizeof info.not_run_reason, "%s: %s",
             compiled ? "compiled, not executed" : "not compiled",
             reason ? reason : "no such device on this machine");
    info.executed = 0;

    struct fp8kv_results none = {0};
    struct fp8kv_report_meta meta = {
        .target = &info,
        .vectors_dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]),
        .profiles = "all",
        .seconds = 0.0,
        .junit_dir = NULL,
    };
    const char *out = a.value[OPT_OUT] ? a.value[OPT_OUT] : "reports";
    if (fp8kv_report_write(out, &meta, &none) != 0)
        return fp8kv_cli_input_error("report");
    printf("fp8kv report: %s: %s; report in %s/%s/\n", target,
           compiled ? "compiled, not executed" : "not compiled", out, target);
    return FP8KV_EXIT_CONFORMANT;
}
