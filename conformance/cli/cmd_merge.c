/* cmd_merge.c — `fp8kv merge`: joins the documents of a sweep's or an audit's shards into the
 * unsharded verdict (the merge itself: shards.c). */
#include <stdio.h>

#include "cli.h"

static const char merge_help[] =
    "usage: fp8kv merge SHARD.json... [--json FILE]\n"
    "\n"
    "Joins the documents that `fp8kv sweep --shard i/N --json FILE` or `fp8kv audit --shard i/N\n"
    "--json FILE` wrote for shards 0 .. N-1 of one pass (any order, each once) into its verdict,\n"
    "printed and written exactly as the unsharded command prints and writes it (the timings\n"
    "are the longest shard's): counts summed, the first failures of each class in input order,\n"
    "ranges folded across the shards' borders. Refused (exit 2, naming the file and the\n"
    "problem): a document that is not a shard, shards of different passes (command, subject,\n"
    "profile, NaN check, domain, model, N), a shard given twice or missing, or one whose\n"
    "subject failed.\n"
    "\n" FP8KV_CLI_JSON_HELP
    "exit: as the merged command's: 0 conformant (an audit: identical or improved),\n"
    "      1 nonconformant (regressed), 2 the shards do not make one pass\n";

enum { OPT_JSON, OPT_COUNT };
static const struct fp8kv_cli_option options[OPT_COUNT] = {{"json", 1}};

int fp8kv_cmd_merge(int argc, char **argv)
{
    struct fp8kv_cli_args a;
    int rc = fp8kv_cli_parse_args("merge", argc, argv, options, OPT_COUNT, &a);
    if (rc != 0)
        return rc;
    if (a.help) {
        fp8kv_cli_print_help(merge_help, stdout);
        return FP8KV_EXIT_CONFORMANT;
    }
    if (a.npositional == 0)
        return fp8kv_cli_usage_error("merge", "give the shards' documents (SHARD.json...)");
    if ((rc = fp8kv_cli_json_begin("merge", a.value[OPT_JSON])) != 0)
        return rc;
    static const struct fp8kv_cli_merger mergers[] = {
        {"sweep", fp8kv_cli_sweep_merge}, {"audit", fp8kv_cli_audit_merge}, {NULL, NULL}};
    return fp8kv_cli_merge_files("merge", a.positional, a.npositional, a.value[OPT_JSON], mergers);
}
