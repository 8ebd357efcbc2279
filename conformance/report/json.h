/* report/json.h — the JSON of checks and verdicts, shared by report.json, every command's --json
 * and judge-kv (internal to the judge library and the CLI: not installed, so the public headers
 * need no jansson). The shape is documented in docs/json.md. */
#ifndef FP8KV_REPORT_JSON_H
#define FP8KV_REPORT_JSON_H

#include <jansson.h>

#include "fp8kv/checks.h"

/* fp8kv_check_json: a new JSON object for c: names, counts, the NMSE and threshold when it has
 * one, per-class cases and mismatches when it has classes, and the failure lines. */
json_t *fp8kv_check_json(const struct fp8kv_check *c);

/* fp8kv_check_json_shard: fp8kv_check_json(c) and what merging shards needs beyond the lines
 * (fp8kv/shard.h): "examples", the kept examples as objects {input, last, count, dtype, class,
 * got, want, other, note[, scale]}, and for a device sweep "first_limit" and "first_failures"
 * (its first failures, unfolded). */
json_t *fp8kv_check_json_shard(const struct fp8kv_check *c);

/* The verdict document every judging command writes with --json, and the top level of
 * report.json: schema, schema_version, command, verdict, checks (docs/json.md). */
#define FP8KV_VERDICT_SCHEMA "fp8kv-verdict"
#define FP8KV_VERDICT_SCHEMA_VERSION 1

/* fp8kv_verdict_json: a new verdict document {schema, schema_version, command, verdict, cases,
 * mismatches (both summed over the gated checks), checks: [fp8kv_check_json of each]}; the
 * caller adds its command's own keys. NULL when out of memory. */
json_t *fp8kv_verdict_json(const char *command, const char *verdict,
                           const struct fp8kv_check *checks, size_t count);

/* fp8kv_json_write: doc, indented with sorted keys and a final newline, to the file at path
 * (atomically), or to the file descriptor fd when path is "-". 0, or FP8KV_ERR naming why. */
int fp8kv_json_write(const char *path, int fd, const json_t *doc);

#endif
