/* cmd_gen.c — `fp8kv gen`: write the golden vectors, or check them against a regeneration. */
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/gen.h"

static const char gen_help[] =
    "usage: fp8kv gen [--vectors DIR] [--check]\n"
    "\n"
    "Generates every golden vector set of every profile with the MPFR oracle into DIR\n"
    "(default vectors), with MANIFEST.json and SHA256SUMS. Deterministic: the same generator\n"
    "and MPFR give byte-identical files.\n"
    "\n"
    "  --vectors DIR   the vector directory (default vectors)\n"
    "  --check         regenerate into a temporary directory and compare with DIR byte by\n"
    "                  byte; every differing, missing or extra file is named\n"
    "  --help          this text\n"
    "exit: 0 written / identical, 1 files differ, 2 bad arguments or a write/generation error\n";

enum { OPT_VECTORS, OPT_CHECK, OPT_COUNT };
static const struct fp8kv_cli_option options[OPT_COUNT] = {{"vectors", 1}, {"check", 0}};

int fp8kv_cmd_gen(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("gen", gen_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    const char *dir = a.value[OPT_VECTORS] ? a.value[OPT_VECTORS] : "vectors";

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (a.value[OPT_CHECK]) {
        rc = fp8kv_generate_check(dir, stdout);
        if (rc < 0)
            return fp8kv_cli_input_error("gen");
        if (rc > 0) {
            fprintf(stderr, "fp8kv gen --check: %s\n", fp8kv_last_error());
            return FP8KV_EXIT_NONCONFORMANT;
        }
    } else if (fp8kv_generate(dir, stdout) != 0) {
        return fp8kv_cli_input_error("gen");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("gen: %.2f s\n",
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return FP8KV_EXIT_CONFORMANT;
}
