/* fp8kv/run.h — a conformance run of one target, and the report a release gate reads. */
#ifndef FP8KV_RUN_H
#define FP8KV_RUN_H

#include <stdio.h>

#include "fp8kv/block_checks.h" /* struct fp8kv_block_oracle_judges */
#include "fp8kv/checks.h"
#include "fp8kv/subject.h"
#include "fp8kv/target.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fp8kv_run_options {
    const char *vectors_dir; /* golden vectors (default "vectors") */
    const char *profile;     /* one profile by name, or one block format (only its block checks),
                                or NULL for all */
    int threads;             /* OpenMP threads for the sweeps; 0: all cores */
    FILE *log;               /* one line per check as it finishes; NULL: quiet */
    FILE *progress; /* on a terminal only: one overall line "step N/M ... checks done, ETA",
                       rewritten in place and cleared at the end; NULL: none */
    int no_blocks;  /* 1: no block-codec checks (fp8kv_run_blocks) */
    /* the oracle's block judges (fp8kv_block_oracle_judges, a build with the oracle); NULL:
       block-decode, block-sweep and block-blocks are "not run", block-vectors still judged */
    const struct fp8kv_block_oracle_judges *block_oracle;
};

/* What a report says about where it ran. */
struct fp8kv_target_info {
    char target[32]; /* "cpu-x86_64", "sm_90", "gfx942" */
    char device[160];
    char runtime[160];
    char compiler[160];
    char flags[640];
    int executed; /* 0: compiled only, or unavailable: the report says "not run" */
    char not_run_reason[256];
    char compiled[256]; /* what was built for it (GPU: the device codec paths), or "" */
    char assembly[512]; /* what its assembly was checked for and showed (compile-only), or "" */
};

/* fp8kv_cpu_target_info: the CPU target of this build and machine. */
void fp8kv_cpu_target_info(struct fp8kv_target_info *t);

/* A target ready to run: where it is, the subjects it judges there (every family's: codecs,
 * KV-cache paths, block codecs), and its device's health. */
struct fp8kv_target {
    struct fp8kv_target_info info;
    const struct fp8kv_subject *subjects; /* the target's subject table */
    int subject_count;
    /* optional: failed device calls so far; when set, each profile ends with a check that the
       count did not grow (a device error the subjects' statuses might not carry) */
    unsigned long (*device_errors)(void);
};

/* fp8kv_target_open: the target of this kind: cpu, hip (GPU device `device`; FP8KV_UNAVAILABLE
 * with a message when this build has no GPU kernels or no usable device), or auto (the GPU
 * when it answers, else the CPU). 0 or FP8KV_UNAVAILABLE. */
int fp8kv_target_open(enum fp8kv_target_kind kind, int device, struct fp8kv_target *t);

/* fp8kv_run: every check of target t, for each profile (or only o->profile), appended to r.
 * For each subject of the table that implements the profile, by capability:
 *   encode     the encoder vector sets and exhaustive f32/f16/bf16 sweeps (on the subject
 *              itself when it can sweep), under NaN check strict; a vendor conversion also
 *              under class, with strict reported and class gated;
 *   decode     the decode table and read sets;
 *   store, gather, attention  the golden KV cases; with FP8KV_SUBJECT_LONG_CONTEXT also the
 *              long-context attention cases; store + gather: the quantization NMSE (reported).
 * A target subject that fails (FP8KV_ERR_SUBJECT) gets a failing check and the run goes on.
 * Then, unless o->no_blocks or o->profile names an fp8 profile, the block checks of every block
 * subject of the table (fp8kv_run_blocks), format by format.
 * Returns 0, or FP8KV_ERR (vectors unreadable, no such profile) with a message. */
int fp8kv_run(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
              struct fp8kv_results *r);

/* fp8kv_run_blocks: the block checks of every subject of t's table with FP8KV_CAP_BLOCK, for
 * every block format (or only the one o->profile names), rule and model it claims
 * (fp8kv_block_claim_covers), appended to r, subject the subject's name, profile the format's
 * name, the detail naming format, rule and model:
 *   block-vectors  the golden encode cases and decode tables (no oracle needed);
 *   block-decode   every scale x element code (G 1);                      \  o->block_oracle,
 *   block-sweep    every f32 input under fixed scale codes (see below);     > else "not run"
 *   block-blocks   seeded random and edge blocks (seed 1);                 /
 * a device subject (FP8KV_MEMORY_DEVICE) at check-block's defaults (every combination swept at
 * the default points, 20,000 blocks); a host one, to stay within seconds, 2,000 blocks and one
 * sweep per format, MX scale code 01 or nvfp4 0x38 at G = 2^-126, under the default rule and
 * the exact model (the other combinations' block-sweep rows are "not run" saying so; 4over6 is
 * never swept). A row that could not run is "not run" with its reason, never a pass; a codec
 * whose call fails gets a failing subject-failed row and the run goes on. 0, or FP8KV_ERR
 * (unreadable vectors) with a message. */
int fp8kv_run_blocks(const struct fp8kv_run_options *o, const struct fp8kv_target *t,
                     struct fp8kv_results *r);

/* ---- GPU targets (gpu_run.c; kernels/hip/ through fp8kv/gpu.h) ------------------------------ */

/* fp8kv_gpu_built: 1 when this fp8kv was built with GPU kernels (FP8KV_GPU=cuda or hip). */
int fp8kv_gpu_built(void);

/* fp8kv_gpu_target_info: opens GPU device `device` and describes it (target "sm_90" or
 * "gfx942", device, runtime and driver, compiler and device flags, the codec paths compiled
 * for it). 0, or FP8KV_UNAVAILABLE with a message (not built with GPU kernels, no driver, no
 * such device, no kernel image for it): never a pass. */
int fp8kv_gpu_target_info(int device, struct fp8kv_target_info *t);

/* fp8kv_gpu_devices: the GPUs visible to this process (0, with the message saying why, when
 * there is none or this build has no GPU kernels). */
int fp8kv_gpu_devices(void);

/* fp8kv_gpu_target_open: the open device as a target (fp8kv_gpu_target_info, then the device's
 * subject table: the codecs compiled for it, the decoders, the KV kernels). 0 or
 * FP8KV_UNAVAILABLE. */
int fp8kv_gpu_target_open(int device, struct fp8kv_target *t);

/* A report's inputs besides the checks. */
struct fp8kv_report_meta {
    const struct fp8kv_target_info *target;
    const char *vectors_dir;
    const char *profiles;  /* "all" or a profile name */
    double seconds;        /* the run's wall time */
    const char *junit_dir; /* Criterion JUnit XML to copy into the report folder; NULL: none */
};

/* fp8kv_report_write: writes <out_dir>/<target>/report.json, then report.md, report.html and
 * junit.xml rendered from that report.json parsed back (so fp8kv_report_regenerate gives the
 * same bytes), plus copies of the *.xml files of junit_dir into <out_dir>/<target>/junit/; the
 * folder is staged beside its place and put there in one step. Then rewrites the index of
 * out_dir (fp8kv_report_write_index). The vector-set hash is the SHA-256 of
 * vectors_dir/MANIFEST.json. A target that did not execute is written as "not run", never as
 * passed; an executed one only against vectors verified in this process. Returns 0 or
 * FP8KV_ERR naming the file. */
int fp8kv_report_write(const char *out_dir, const struct fp8kv_report_meta *m,
                       const struct fp8kv_results *r);

/* fp8kv_report_regenerate: renders report.md, report.html and junit.xml beside the report.json
 * at path from it alone, each atomically; byte for byte what fp8kv_report_write wrote. The
 * verdict is recomputed from the checks, never taken from the document. 0, or FP8KV_ERR naming
 * the file (unreadable, not JSON, not a report, or a document whose verdict, summary or check
 * states contradict its checks: nothing is then written). */
int fp8kv_report_regenerate(const char *report_json);

/* fp8kv_report_write_index: rewrites <out_dir>/index.md and index.html from the report.json of
 * every folder of out_dir: a target's (folder named like a target) with its verdict and check
 * families, another kind (scripts/peers) listed beside them; every entry is read, in sorted
 * order, and one that is no report folder is named under "Not listed" with the reason. 0, or
 * FP8KV_ERR naming a damaged report.json (the index is then left as it was). */
int fp8kv_report_write_index(const char *out_dir);

#ifdef __cplusplus
}
#endif
#endif
