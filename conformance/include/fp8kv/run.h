/* fp8kv/run.h — a conformance run of one target, and the report a release gate reads. */
#ifndef FP8KV_RUN_H
#define FP8KV_RUN_H

#include <stdio.h>

#include "fp8kv/checks.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fp8kv_run_options {
    const char *vectors_dir;   /* golden vectors (default "vectors") */
    const char *profile;       /* one profile by name, or NULL for all */
    int threads;               /* OpenMP threads for the sweeps; 0: all cores */
    FILE *log;                 /* one line per check as it finishes; NULL: quiet */
    FILE *progress;            /* sweep progress bars (shown only on a terminal); NULL: none */
};

/* What a report says about where it ran. */
struct fp8kv_target_info {
    char target[32];    /* "cpu-x86_64", "sm_90", "gfx942" */
    char device[160];
    char runtime[160];
    char compiler[160];
    char flags[640];
    int executed;       /* 0: compiled only, or unavailable: the report says "not run" */
    char not_run_reason[160];
};

/* fp8kv_cpu_target_info: the CPU target of this build and machine. */
void fp8kv_cpu_target_info(struct fp8kv_target_info *t);

/* fp8kv_run_cpu: every check of the CPU target, for each profile: the built-in encoders
 * against every encoder vector set (NaN check strict), the decoders against the decode and
 * read sets, exhaustive f32/f16/bf16 sweeps of every encoder, the KV-cache store/read/
 * attention checks of the CPU reference paths, and the quantization NMSE (reported, not
 * gated). Appends to r. Returns 0, or FP8KV_ERR (vectors unreadable) with a message. */
int fp8kv_run_cpu(const struct fp8kv_run_options *o, struct fp8kv_results *r);

/* A report's inputs besides the checks. */
struct fp8kv_report_meta {
    const struct fp8kv_target_info *target;
    const char *vectors_dir;
    const char *profiles;   /* "all" or a profile name */
    double seconds;         /* the run's wall time */
    const char *junit_dir;  /* Criterion JUnit XML to copy into the report folder; NULL: none */
};

/* fp8kv_report_write: writes <out_dir>/<target>/report.json and report.md, each atomically
 * (temporary file, then rename), plus copies of the *.xml files of junit_dir into
 * <out_dir>/<target>/junit/; then rewrites <out_dir>/index.md from every report.json there.
 * The vector-set hash is the SHA-256 of vectors_dir/MANIFEST.json. A target that did not
 * execute is written as "not run", never as passed. Returns 0 or FP8KV_ERR naming the file. */
int fp8kv_report_write(const char *out_dir, const struct fp8kv_report_meta *m,
                       const struct fp8kv_results *r);

#ifdef __cplusplus
}
#endif
#endif
