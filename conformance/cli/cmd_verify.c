/* cmd_verify.c — `fp8kv verify`: check a vector directory without MPFR. */
#include <stdio.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/verify.h"

static const char verify_help[] =
    "usage: fp8kv verify [--vectors DIR]\n"
    "\n"
    "Checks DIR (default: $FP8KV_VECTORS, ./vectors, or the installed set) against its\n"
    "MANIFEST.json and SHA256SUMS: every listed file present with its size and SHA-256, every\n"
    ".npy header matching its dtype and shape, and SHA256SUMS listing exactly those files.\n"
    "Needs no MPFR.\n"
    "exit: 0 all files good, 2 a file is missing, truncated, tampered or malformed (named)\n";

enum { OPT_VECTORS, OPT_COUNT };
static const struct fp8kv_cli_option options[OPT_COUNT] = {{"vectors", 1}};

int fp8kv_cmd_verify(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("verify", verify_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
    int checked = 0;
    if (fp8kv_verify_vectors(dir, stderr, &checked) != 0)
        return fp8kv_cli_input_error("verify");
    printf("verify: %s: %d files match MANIFEST.json and SHA256SUMS\n", dir, checked);
    return FP8KV_EXIT_CONFORMANT;
}
