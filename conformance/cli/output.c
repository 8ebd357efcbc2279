/* output.c — what the judging commands print in common: `--json FILE|-` (one writer, one
 * document shape: report/json.h, docs/json.md) and a sweep check's text lines. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int json_fd = STDOUT_FILENO; /* where "--json -" writes: the original stdout */

int fp8kv_cli_json_begin(const char *cmd, const char *path)
{
    if (!path || strcmp(path, "-") != 0)
        return 0;
    fflush(stdout);
    json_fd = dup(STDOUT_FILENO);
    if (json_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return fp8kv_cli_usage_error(cmd, "--json -: cannot set stdout aside for the JSON");
    return 0;
}

int fp8kv_cli_json_write(const char *cmd, const char *path, json_t *doc)
{
    if (!path) {
        json_decref(doc);
        return 0;
    }
    fflush(stdout); /* the text first, wherever it goes */
    const int rc = fp8kv_json_write(path, json_fd, doc);
    json_decref(doc);
    return rc == 0 ? 0 : fp8kv_cli_input_error(cmd);
}

json_t *fp8kv_cli_verdict_doc(const char *command, const char *verdict,
                              const struct fp8kv_check *checks, size_t count, json_t *extra)
{
    json_t *doc = fp8kv_verdict_json(command, verdict, checks, count);
    if (doc && extra)
        json_object_update(doc, extra);
    json_decref(extra);
    return doc;
}

/* ---- a sweep check as text ------------------------------------------------------------------ */

void fp8kv_cli_print_classes(const struct fp8kv_check *c)
{
    for (int k = 0; c->has_classes && k < FP8KV_CLASS_COUNT; k++)
        if (c->class_mismatches[k])
            printf("  %-16s %llu mismatches\n", fp8kv_class_names[k],
                   (unsigned long long)c->class_mismatches[k]);
}

int fp8kv_cli_print_sweep(const struct fp8kv_check *c)
{
    printf("%s %s: %s\n", c->subject, c->profile, c->detail);
    fp8kv_cli_print_classes(c);
    for (int i = 0; i < c->failure_lines; i++)
        printf("%s\n", c->failures[i]);
    printf("%s %s: inputs=%llu mismatches=%llu verdict=%s\n", c->subject, c->profile,
           (unsigned long long)c->cases, (unsigned long long)c->mismatches,
           c->passed ? "conformant" : "nonconformant");
    return c->passed ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
}
