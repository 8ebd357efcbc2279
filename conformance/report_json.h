/* report_json.h — the JSON of one check, shared by report.json, sweep --json and judge-kv
 * (internal to the judge library: not installed, so the public headers need no jansson). */
#ifndef FP8KV_REPORT_JSON_H
#define FP8KV_REPORT_JSON_H

#include <jansson.h>

#include "fp8kv/checks.h"

/* fp8kv_check_json: a new JSON object for c: names, counts, the NMSE and threshold when it has
 * one, per-class cases and mismatches when it has classes, and the failure lines. */
json_t *fp8kv_check_json(const struct fp8kv_check *c);

#endif
