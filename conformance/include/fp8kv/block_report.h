/* fp8kv/block_report.h — a block codec (a subject with FP8KV_CAP_BLOCK, fp8kv/subject.h: the
 * CPU codec, the GPU codec, a block plugin) under one combination of format, rule and model, as
 * the block judges take it, and the report they fill. No oracle here: `fp8kv audit --block`
 * compares subjects in builds without it. */
#ifndef FP8KV_BLOCK_REPORT_H
#define FP8KV_BLOCK_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block.h"
#include "fp8kv/subject.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A block subject judged under one combination it claims (fp8kv_block_claim_covers): what every
 * block judge takes, as a codec check takes a subject and a profile. */
struct fp8kv_block_under_test {
    const struct fp8kv_subject *subject; /* FP8KV_CAP_BLOCK */
    const struct fp8kv_block_format *format;
    enum fp8kv_block_rule rule;
    enum fp8kv_block_model model;
    int workers; /* concurrent callers: the subject's, or the judge's threads */
};

/* fp8kv_block_select: s (FP8KV_CAP_BLOCK) under format f, rule and model, called from at
 * most `threads` workers (fewer when the subject takes fewer). 0 and *out, or FP8KV_UNAVAILABLE
 * when s does not claim that combination. */
int fp8kv_block_select(const struct fp8kv_subject *s, const struct fp8kv_block_format *f,
                       enum fp8kv_block_rule rule, enum fp8kv_block_model model, int threads,
                       struct fp8kv_block_under_test *out);

/* fp8kv_block_cfg: the subject-side configuration of u at G (NVFP4's global scale; 1 for MX). */
struct fp8kv_bcodec_cfg fp8kv_block_cfg(const struct fp8kv_block_under_test *u, float G);

/* fp8kv_block_encode, fp8kv_block_decode: u's entry points at G (worker < u->workers); the
 * subject's status. fp8kv_block_can_decode, _can_sweep: whether it has them. */
int fp8kv_block_encode(const struct fp8kv_block_under_test *u, int worker, const float *x,
                       size_t nblocks, float G, uint8_t *scales, uint8_t *elements);
int fp8kv_block_decode(const struct fp8kv_block_under_test *u, int worker, const uint8_t *scales,
                       const uint8_t *elements, size_t nblocks, float G, float *y);
int fp8kv_block_can_decode(const struct fp8kv_block_under_test *u);
int fp8kv_block_can_sweep(const struct fp8kv_block_under_test *u);

/* fp8kv_block_cpu: the CPU target's block codec ("block-codec", fp8kv_cpu_subjects) under f,
 * rule and model on `workers` threads. */
struct fp8kv_block_under_test fp8kv_block_cpu(const struct fp8kv_block_format *f,
                                              enum fp8kv_block_rule rule,
                                              enum fp8kv_block_model model, int workers);

/* fp8kv_block_gpu: the GPU block codec ("gpu-block-codec" of device `device`'s subject table)
 * under f, rule and model: 0 and *out, or FP8KV_ERR when this build has no GPU target or the
 * device is not there (the message says which). */
int fp8kv_block_gpu(const struct fp8kv_block_format *f, enum fp8kv_block_rule rule,
                    enum fp8kv_block_model model, int device, struct fp8kv_block_under_test *out);

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
    double seconds[FP8KV_BLOCK_CHECK_COUNT]; /* wall time per kind (fp8kv_block_check) */
    char lines[FP8KV_BLOCK_REPORT_LINES][200];
    uint8_t line_kind[FP8KV_BLOCK_REPORT_LINES]; /* each line's enum fp8kv_block_check_kind */
    int nlines, nlines_of[FP8KV_BLOCK_CHECK_COUNT];
    uint64_t dropped; /* failure lines past FP8KV_BLOCK_REPORT_LINES_PER_KIND of their kind */
    char notes[8][200];
    int nnotes;
};

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
