/* json_out.c — `--json FILE|-` of every judging command: one writer, one document shape
 * (report_json.h, docs/json.md). */
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
