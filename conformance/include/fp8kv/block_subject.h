/* fp8kv/block_subject.h — block codecs (fp8kv/block.h) as subjects under test: the CPU codec
 * (fp8kv/block_codec.h), the same codec in GPU kernels, block-codec plugins (through the CLI);
 * and the report the block judge (fp8kv/block_judge.h) fills. No oracle here: `fp8kv audit
 * --block` compares subjects in builds without it. */
#ifndef FP8KV_BLOCK_SUBJECT_H
#define FP8KV_BLOCK_SUBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A run of the element sweep's judging table: input magnitudes (f32 bits, sign clear) from
 * start up to the next run's start encode to code (the oracle's, sign included). */
struct fp8kv_block_run {
    uint32_t start;
    uint32_t code;
};
enum { FP8KV_BLOCK_MAX_RUNS = 160 }; /* at most one per magnitude code (128) */

struct fp8kv_block_report;

/* A block codec under test: what it claims (format, rule, model) and how to call it. encode:
 * nblocks whole blocks of x -> scales, elements (one byte per element); decode (may be NULL):
 * codes -> y. worker: 0 .. workers - 1, one caller per worker at a time. Each returns 0, or an
 * FP8KV_ERR* status with a message (FP8KV_ERR_SUBJECT: the subject crashed or hung). */
struct fp8kv_block_subject {
    const char *name;
    const struct fp8kv_block_format *format;
    enum fp8kv_block_rule rule;
    enum fp8kv_block_model model;
    int workers;
    void *ctx;
    int (*encode)(void *ctx, int worker, const float *x, size_t nblocks, float G, uint8_t *scales,
                  uint8_t *elements);
    int (*decode)(void *ctx, int worker, const uint8_t *scales, const uint8_t *elements,
                  size_t nblocks, float G, float *y);
    /* sweep (may be NULL: the judge calls encode): the element sweep of
     * fp8kv_block_judge_sweep run inside the subject (a device), judged there against the
     * judge's runs for each sign; it adds to r's sweep counts and failure lines */
    int (*sweep)(void *ctx, uint8_t scale, float G, uint32_t anchor, uint8_t anchor_code,
                 const struct fp8kv_block_run *const runs[2], const int nruns[2],
                 struct fp8kv_block_report *r);
};

/* The kinds of check, each with its own counts. */
enum fp8kv_block_check_kind {
    FP8KV_BLOCK_CHECK_DECODE,  /* every scale code x every element code */
    FP8KV_BLOCK_CHECK_SWEEP,   /* every f32 input under a fixed scale: element codes */
    FP8KV_BLOCK_CHECK_BLOCKS,  /* random and edge whole blocks: scale and element codes */
    FP8KV_BLOCK_CHECK_VECTORS, /* the golden vectors' encode cases */
    FP8KV_BLOCK_CHECK_COUNT
};
extern const char *const fp8kv_block_check_names[FP8KV_BLOCK_CHECK_COUNT];

enum { FP8KV_BLOCK_REPORT_LINES = 32, FP8KV_BLOCK_REPORT_LINES_PER_KIND = 8 };

/* What the checks found: per kind, how many values were checked, how many were wrong, whether
 * it ran; the first failure lines of each kind (input bits, expected and got codes) and notes. */
struct fp8kv_block_report {
    uint64_t checked[FP8KV_BLOCK_CHECK_COUNT], wrong[FP8KV_BLOCK_CHECK_COUNT];
    int ran[FP8KV_BLOCK_CHECK_COUNT];
    char lines[FP8KV_BLOCK_REPORT_LINES][200];
    uint8_t line_kind[FP8KV_BLOCK_REPORT_LINES]; /* the check kind of each line */
    int nlines, nlines_of[FP8KV_BLOCK_CHECK_COUNT];
    uint64_t dropped; /* failure lines past FP8KV_BLOCK_REPORT_LINES_PER_KIND of their kind */
    char notes[8][200];
    int nnotes;
};

/* fp8kv_block_subject_cpu: the header codec (fp8kv/block_codec.h) as a subject claiming f,
 * rule and model, on `workers` threads. */
struct fp8kv_block_subject fp8kv_block_subject_cpu(const struct fp8kv_block_format *f,
                                                   enum fp8kv_block_rule rule,
                                                   enum fp8kv_block_model model, int workers);

/* fp8kv_block_subject_gpu: the same header codec in GPU kernels (kernels/hip/block.hip) on
 * device `device`, as a subject: 0 and *out, or FP8KV_ERR when this build has no GPU target
 * or the device is not there (the message says which). */
int fp8kv_block_subject_gpu(const struct fp8kv_block_format *f, enum fp8kv_block_rule rule,
                            enum fp8kv_block_model model, int device,
                            struct fp8kv_block_subject *out);

/* fp8kv_block_report_fail: records one failure line of kind k (printf-style). */
void fp8kv_block_report_fail(struct fp8kv_block_report *r, enum fp8kv_block_check_kind k,
                             const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* fp8kv_block_report_note: records a note (a check skipped, and why). */
void fp8kv_block_report_note(struct fp8kv_block_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* fp8kv_block_report_wrong: the total of wrong values over every kind. */
uint64_t fp8kv_block_report_wrong(const struct fp8kv_block_report *r);

#ifdef __cplusplus
}
#endif
#endif
