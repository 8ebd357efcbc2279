/* report/json.c — the one JSON shape of every verdict fp8kv writes (report/json.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "report/json.h"

json_t *fp8kv_verdict_json(const char *command, const char *verdict,
                           const struct fp8kv_check *checks, size_t count)
{
    json_t *list = json_array();
    uint64_t cases = 0, mismatches = 0;
    for (size_t i = 0; list && i < count; i++) {
        json_array_append_new(list, fp8kv_check_json(&checks[i]));
        if (checks[i].gated) {
            cases += checks[i].cases;
            mismatches += checks[i].mismatches;
        }
    }
    return json_pack("{s:s, s:i, s:s, s:s, s:I, s:I, s:o}", "schema", FP8KV_VERDICT_SCHEMA,
                     "schema_version", FP8KV_VERDICT_SCHEMA_VERSION, "command", command, "verdict",
                     verdict, "cases", (json_int_t)cases, "mismatches", (json_int_t)mismatches,
                     "checks", list);
}

int fp8kv_json_write(const char *path, int fd, const json_t *doc)
{
    char *text = doc ? json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2)) : NULL;
    if (!text)
        return fp8kv_fail("out of memory");
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps ends without a newline: the NUL makes room for one */
    int rc;
    if (strcmp(path, "-") == 0) {
        FILE *f = fdopen(dup(fd), "w");
        rc = f && fwrite(text, 1, len + 1, f) == len + 1 ? FP8KV_OK : FP8KV_ERR;
        if (f && fclose(f) != 0)
            rc = FP8KV_ERR;
        if (rc != 0)
            fp8kv_fail("cannot write the JSON to stdout");
    } else {
        rc = fp8kv_write_file_atomic(path, text, len + 1);
    }
    free(text);
    return rc;
}
