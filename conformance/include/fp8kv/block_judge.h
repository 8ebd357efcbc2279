/* fp8kv/block_judge.h — judging a block codec (fp8kv/block.h) against the exact oracle
 * (fp8kv/block_oracle.h): the subject's decode of every (scale, element) code pair, its
 * element codes for every f32 input a block under a fixed scale can hold (an exhaustive sweep
 * judged by runs of the oracle's element boundaries, never by the subject's arithmetic), and
 * whole random and edge blocks. Needs the oracle (FP8KV_WITH_ORACLE). docs/blocks.md. */
#ifndef FP8KV_BLOCK_JUDGE_H
#define FP8KV_BLOCK_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block.h"
#include "fp8kv/block_oracle.h"

#ifdef __cplusplus
extern "C" {
#endif

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

enum { FP8KV_BLOCK_REPORT_LINES = 24 };

/* What the checks found: per kind, how many values were checked, how many were wrong, whether
 * it ran; the first failure lines (input bits, expected and got codes) and notes. */
struct fp8kv_block_report {
    uint64_t checked[FP8KV_BLOCK_CHECK_COUNT], wrong[FP8KV_BLOCK_CHECK_COUNT];
    int ran[FP8KV_BLOCK_CHECK_COUNT];
    char lines[FP8KV_BLOCK_REPORT_LINES][200];
    int nlines;
    uint64_t dropped; /* failure lines past FP8KV_BLOCK_REPORT_LINES */
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

/* fp8kv_block_params_of: the oracle's parameters of s's claim with decode scale G. */
struct fp8kv_block_params fp8kv_block_params_of(const struct fp8kv_block_subject *s, float G);

/* fp8kv_block_judge_decode: s's decode of every element code under every scale code (G),
 * against fp8kv_oracle_block_decode_one, bit for bit (a NaN matches any NaN). 0 (r updated),
 * or an error status from the subject. Skipped (0, a note) when s has no decode. */
int fp8kv_block_judge_decode(const struct fp8kv_block_subject *s, float G,
                             struct fp8kv_block_report *r);

/* A point of the element sweep: the scale code every block is held at, and G (NVFP4). */
struct fp8kv_block_sweep_point {
    uint8_t scale;
    float G;
};

/* fp8kv_block_sweep_points: the default sweep points of f: MX scale codes 127 (X = 0), 1
 * (X = -126: f32 subnormals reach the element grid) and 200 (X = 73); NVFP4 s = 1.0 (0x38) at
 * G = 1 and s = 1.375 (0x3B) at G = 1.7 (s G not a power of two). Returns how many (<= 4). */
int fp8kv_block_sweep_points(const struct fp8kv_block_format *f,
                             struct fp8kv_block_sweep_point out[4]);

/* fp8kv_block_judge_sweep: every f32 input x that a block with scale code p.scale can hold
 * (|x| <= anchor, the largest amax whose oracle scale is p.scale under s's rule and model),
 * both signs, encoded by s in blocks anchor, x1 .. x(block_size-1): each element code against
 * the oracle's, read from runs between the element boundaries the oracle gives (found by
 * binary search over the inputs' bits), each block's scale against p.scale. Not for 4over6
 * (the scale is chosen per block: a note, 0). 0, or an error status from the subject. */
int fp8kv_block_judge_sweep(const struct fp8kv_block_subject *s, struct fp8kv_block_sweep_point p,
                            struct fp8kv_block_report *r);

/* fp8kv_block_judge_blocks: nblocks seeded blocks (fp8kv_splitmix64 from seed) of every kind
 * fp8kv_block_fill_block makes, encoded by s with G, against fp8kv_oracle_block_encode. */
int fp8kv_block_judge_blocks(const struct fp8kv_block_subject *s, float G, uint64_t seed,
                             size_t nblocks, struct fp8kv_block_report *r);

/* fp8kv_block_fill_block: block number index of the seeded edge/random mix for f (kinds cycle:
 * random magnitudes over the whole f32 range, amax at and around max_elem 2^k, element-grid
 * ties and their neighbours under the block's scale, tiny and subnormal inputs, zeros of
 * both signs, a NaN or Inf, Gaussian-like values) into x[f->block_size] (f32 bits). */
void fp8kv_block_fill_block(const struct fp8kv_block_format *f, uint64_t *state, size_t index,
                            uint32_t *x);

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
