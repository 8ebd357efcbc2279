/* cmd_suite.c — `fp8kv suite`: the engine suite's cases, and the digests committed of them. */
#include <stdio.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/kv_suite.h"
#include "fp8kv/verify.h"

static const char suite_help[] =
    "usage: fp8kv suite [--profile P] [--digests] [--vectors DIR]\n"
    "\n"
    "The engine suite: decode cases at the shapes engines run (head sizes 64..256, GQA 1..8,\n"
    "blocks of 16..64, up to 8,200 tokens, batches up to 64, block ids past 65,535, NaN codes in\n"
    "every slot no sequence holds), generated from their seeds over the profile's decode.npy\n"
    "and checked against the committed digests of their inputs before any use\n"
    "(docs/DESIGN.md §5.3.2). Lists the cases of profile P (default {default_profile}), each\n"
    "generated and checked.\n"
    "  --digests  print conformance/kv/suite_digests.inc instead: the digests of every case's\n"
    "        inputs and references under every profile (minutes; for when the suite changes)\n"
    "  --vectors  the vector directory (default: $FP8KV_VECTORS, ./vectors, or the installed\n"
    "        set), verified first\n"
    "exit: 0, 2 bad input (vectors that do not verify, a case whose digest differs)\n";

enum { OPT_PROFILE, OPT_DIGESTS, OPT_VECTORS, OPT_COUNT };
static const struct fp8kv_cli_option options[OPT_COUNT] = {
    {"profile", 1}, {"digests", 0}, {"vectors", 1}};

int fp8kv_cmd_suite(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc;
    if (fp8kv_cli_begin("suite", suite_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
    if (fp8kv_vectors_trust(dir) != 0)
        return fp8kv_cli_input_error("suite");
    if (a.value[OPT_DIGESTS])
        return fp8kv_suite_print_digests(dir, stdout) == 0 ? FP8KV_EXIT_CONFORMANT
                                                           : fp8kv_cli_input_error("suite");
    const struct fp8kv_profile *p = a.value[OPT_PROFILE]
                                        ? fp8kv_cli_profile("suite", a.value[OPT_PROFILE])
                                        : fp8kv_default_profile();
    if (!p)
        return FP8KV_EXIT_USAGE;
    for (int i = 0; i < fp8kv_suite_case_count(); i++) {
        struct fp8kv_suite_case c;
        if (fp8kv_suite_case_make(dir, p, i, &c) != 0)
            return fp8kv_cli_input_error("suite");
        char words[160];
        fp8kv_suite_case_words(&c, words, sizeof words);
        printf("engine/case%d %s (inputs %.16s...)\n", i, words, c.digest);
        fp8kv_suite_case_free(&c);
    }
    return FP8KV_EXIT_CONFORMANT;
}
