/* fp8kv/checks.h — the one engine that judges: every check of a conformance run.
 *
 * The Criterion suites and `fp8kv run` call the same functions. A check compares a subject
 * (a codec, a decoder, a KV-cache path of a target) with the golden vectors or the certified
 * boundaries, and fills a struct fp8kv_check that the report writers print. A check never
 * passes by default: `passed` is set only after the comparison ran over all its cases.
 */
#ifndef FP8KV_CHECKS_H
#define FP8KV_CHECKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fp8kv/codec.h"
#include "fp8kv/kv_cache.h"
#include "fp8kv/npy.h"
#include "fp8kv/spec.h"
#include "fp8kv/subject.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- failure examples: what a failure line shows, and which lines are kept --------------
 *
 * One home for every check: the first few failures of each input class are kept (not just the
 * first few overall), and adjacent failing inputs that fail alike fold into one range with its
 * count, so a defect of a million inputs is one line and leaves room for the others. */

#define FP8KV_EXAMPLES_PER_CLASS 3 /* example lines kept per input class */
#define FP8KV_UNCLASSED_LINES 12   /* lines kept of failures that have no input class */
#define FP8KV_MAX_FAILURE_LINES                                                                    \
    (FP8KV_CLASS_COUNT * FP8KV_EXAMPLES_PER_CLASS + FP8KV_UNCLASSED_LINES)
#define FP8KV_FAILURE_LINE_SIZE 256      /* bytes of one failure line, its NUL included */
#define FP8KV_NO_CLASS FP8KV_CLASS_COUNT /* the cls of a failure without an input class */

/* One failing input of an encoder, or a range of adjacent inputs that failed alike. */
struct fp8kv_failure {
    uint32_t input;    /* the (first) input's bits in its dtype */
    uint32_t last;     /* the last input's bits (== input for one input) */
    uint64_t count;    /* inputs in the range */
    uint32_t scale;    /* a store-with-scale pair's scale (f32 bits), when has_scale */
    uint8_t dtype;     /* enum fp8kv_dtype of the input */
    uint8_t has_scale; /* a pair x / scale: folds only with the next input at the same scale */
    uint8_t cls;       /* enum fp8kv_class (of the quotient, for a pair), or FP8KV_NO_CLASS */
    uint8_t got, want;
    uint8_t other; /* an audit's candidate code (got is the baseline's) */
    uint8_t note;  /* an audit's verdict on the input (who is right), else 0 */
};

/* The kept examples of a set, in input order, FP8KV_EXAMPLES_PER_CLASS per class at most. */
struct fp8kv_examples {
    int n;
    struct fp8kv_failure v[FP8KV_MAX_FAILURE_LINES];
    uint8_t kept[FP8KV_CLASS_COUNT + 1]; /* examples of each class (and of none) */
    int8_t last[FP8KV_CLASS_COUNT + 1];  /* 1 + the index of each class's last example */
};

/* fp8kv_failure_one: the failure of one input (bits in dtype) of class cls, got for want. */
struct fp8kv_failure fp8kv_failure_one(enum fp8kv_dtype dtype, uint32_t input, int cls, uint8_t got,
                                       uint8_t want);

/* fp8kv_examples_add: adds f, which comes after every failure added before (input order): it
 * extends the last kept example of its class when it continues it (the next bit pattern, same
 * dtype, codes, note and scale), else it is kept while its class has fewer than
 * FP8KV_EXAMPLES_PER_CLASS examples (FP8KV_UNCLASSED_LINES without a class). Returns the index
 * of the example that holds it, or -1 when it is not shown. */
int fp8kv_examples_add(struct fp8kv_examples *e, const struct fp8kv_failure *f);

/* fp8kv_failure_input_text: the input part of a failure line into buf: the dtype, hex bits and
 * decimal value, "f32 0x43e80000 (464)"; a range, "f32 0x43e80001..0x43f00000 (464.000031..480,
 * 524,287 inputs)"; a pair with its scale and real quotient, "f32 0x.. (x) / 0x.. (s) = q"
 * (a range of pairs at one scale: "... = q0..q1"). */
void fp8kv_failure_input_text(const struct fp8kv_failure *f, char *buf, size_t size);

/* fp8kv_pair_class: the class of a store-with-scale pair: the class of its f32 quotient
 * RN32(x / s), the value the fp8 rounding sees (x's own class says little once scaled). */
enum fp8kv_class fp8kv_pair_class(const struct fp8kv_format *format, uint32_t x, uint32_t s);

/* fp8kv_format_count: n with thousands separators ("524,287") into buf; returns buf. */
const char *fp8kv_format_count(uint64_t n, char *buf, size_t size);

/* One check's outcome. */
struct fp8kv_check {
    char name[96];    /* what was checked, e.g. "sweep-f32", "edges", "kv-store" */
    char subject[64]; /* the codec, decoder or kernel under test */
    char profile[48]; /* profile name, or "" */
    char detail[256]; /* the vector set, nan check, layout, dtype ... in words */
    char rule[16];    /* a block row (fp8kv_run_blocks): its scale rule, else "" */
    char model[16];   /* a block row: its arithmetic model, else "" */
    uint64_t cases, mismatches;
    uint64_t class_cases[FP8KV_CLASS_COUNT]; /* per input class, where classes apply */
    uint64_t class_mismatches[FP8KV_CLASS_COUNT];
    int has_classes;
    int has_nmse;
    double nmse, threshold; /* gated: passed requires nmse <= threshold */
    int nmse_reported;      /* has_nmse, reported only: a bound is the gate (has_bound) */
    int has_bound;          /* outputs judged against a per-element error bound */
    double bound_ratio;     /* the worst |error| / allowed error: a mismatch is one above 1 */
    int gated;              /* 0: reported, never fails the run (quantization error) */
    int passed;
    double seconds;
    /* the failure lines, TestFloat style: "f32 0x.. (value) => got  expected want  class" */
    int failure_lines;
    char failures[FP8KV_MAX_FAILURE_LINES][FP8KV_FAILURE_LINE_SIZE];
    /* a check over all 256 codes (decode): bit q of code_mismatched set when code q differed */
    int has_codes;
    uint8_t code_mismatched[256 / 8];
    uint8_t line_class[FP8KV_MAX_FAILURE_LINES];  /* each line's class, or FP8KV_NO_CLASS */
    struct fp8kv_examples examples;               /* the structured failures behind lines */
    int8_t example_line[FP8KV_MAX_FAILURE_LINES]; /* the line of each example */
    int subject_failed; /* the subject crashed, hung or failed a call: the counts are partial */
    /* a device sweep: the lowest-index failures it handed back (first_limit at most), unfolded;
       the examples are folded from them, and merging shards needs them (fp8kv/shard.h).
       first_limit 0: the examples are of every failure */
    int first_count, first_limit;
    struct fp8kv_failure first[FP8KV_SWEEP_FAILURES];
};

/* fp8kv_check_init: zeroes c and sets its names (any may be NULL). */
void fp8kv_check_init(struct fp8kv_check *c, const char *name, const char *subject,
                      const char *profile, const char *detail);

/* fp8kv_check_failure: counts one mismatch of class cls (or -1: no class) and records the
 * printf-formatted line while its class has fewer than FP8KV_EXAMPLES_PER_CLASS lines
 * (FP8KV_UNCLASSED_LINES without a class). Failures of an encoder's inputs go through
 * fp8kv_check_fail_input instead, which names the dtype and folds ranges. */
void fp8kv_check_failure(struct fp8kv_check *c, int cls, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* fp8kv_check_fail_input: counts f->count mismatches of class f->cls and shows f as an example
 * (fp8kv_examples_add; its line: the input text, "=> got  expected want  class"). Failures come
 * in input order. */
void fp8kv_check_fail_input(struct fp8kv_check *c, const struct fp8kv_failure *f);

/* fp8kv_check_show_examples: shows examples counted elsewhere (a sweep counts per class in
 * bulk), in order, as fp8kv_check_fail_input would. */
void fp8kv_check_show_examples(struct fp8kv_check *c, const struct fp8kv_examples *e);

/* What a finished check says: reported only (not gated), passed, or failed. */
enum fp8kv_outcome { FP8KV_OUTCOME_INFO, FP8KV_OUTCOME_PASS, FP8KV_OUTCOME_FAIL };

/* fp8kv_check_outcome: the outcome of a finished check c. */
enum fp8kv_outcome fp8kv_check_outcome(const struct fp8kv_check *c);

/* fp8kv_check_finish: sets passed from the counts (mismatches == 0, and nmse <= threshold
 * when gated and has_nmse), and the duration. */
void fp8kv_check_finish(struct fp8kv_check *c, double seconds);

/* A growable list of checks: a run's results. */
struct fp8kv_results {
    struct fp8kv_check *items;
    size_t count, capacity;
};

/* fp8kv_results_add: appends a copy of c. 0 or FP8KV_ERR (out of memory). */
int fp8kv_results_add(struct fp8kv_results *r, const struct fp8kv_check *c);

/* fp8kv_check_profile_label: the profile column of check c as the log and report.md print it,
 * into buf: a block row of fp8kv_run_blocks "<format> <rule> <model>" (its profile, rule and
 * model fields), any other check its profile. */
void fp8kv_check_profile_label(const struct fp8kv_check *c, char *buf, size_t size);

/* fp8kv_log_checks: one line per check of r from index `from` on (failures indented), to log
 * (NULL: nothing). */
void fp8kv_log_checks(FILE *log, const struct fp8kv_results *r, size_t from);

/* fp8kv_results_passed: 1 when every gated check passed (and there is at least one). */
int fp8kv_results_passed(const struct fp8kv_results *r);

/* fp8kv_results_free: releases the list. */
void fp8kv_results_free(struct fp8kv_results *r);

/* fp8kv_nmse: sum (y - ref)^2 / sum ref^2 over n values (0 when both are all zero; +Inf
 * when ref is all zero and y is not). NaN pairs (both NaN) count as equal; a NaN on one side
 * only makes the result +Inf. */
double fp8kv_nmse(const float *y, const double *ref, size_t n);

/* fp8kv_now: a monotonic clock in seconds. */
double fp8kv_now(void);

/* fp8kv_vector_path: "<dir>/<profile>/<file>" into buf; returns buf. */
const char *fp8kv_vector_path(char *buf, size_t size, const char *dir,
                              const struct fp8kv_profile *p, const char *file);

/* fp8kv_is_kernel_model: whether a kernel can compute scale model m: every model but exact,
 * which rounds the real quotient once, the yardstick the others are measured against, and no
 * kernel computes. The one place that rule lives. */
int fp8kv_is_kernel_model(enum fp8kv_scale_model m);

/* fp8kv_kernel_models: the names of the models fp8kv_is_kernel_model accepts, in table order,
 * into names (room for FP8KV_MODEL_COUNT); returns how many. */
int fp8kv_kernel_models(const char *names[FP8KV_MODEL_COUNT]);

/* fp8kv_kernel_model_check: 0 when m is a kernel's model (fp8kv_is_kernel_model), else
 * FP8KV_ERR with a message saying why and which models kernels compute. */
int fp8kv_kernel_model_check(enum fp8kv_scale_model m);

/* fp8kv_model_cfg: the codec configuration that implements profile p with store scale model
 * m, into *cfg: 0, or FP8KV_ERR when m is no kernel's (fp8kv_kernel_model_check). */
int fp8kv_model_cfg(const struct fp8kv_profile *p, enum fp8kv_scale_model m,
                    struct fp8kv_codec_cfg *cfg);

/* fp8kv_profile_cfg: the configuration of profile p with scale model f32_div, what every check
 * at scale 1 uses (x / 1 is x under every model). */
struct fp8kv_codec_cfg fp8kv_profile_cfg(const struct fp8kv_profile *p);

/* fp8kv_subject_implements: whether subject s claims profile p. */
int fp8kv_subject_implements(const struct fp8kv_subject *s, const struct fp8kv_profile *p);

/* ---- codec checks against the golden vectors (codec/checks.c) -------------------------------- */

/* fp8kv_load_vector_file: reads <dir>/<profile>/<file> as a 1-D (cols == 0) or 2-D array of
 * dtype; when rows is not 0 its first dimension must be rows, when cols is not 0 its second
 * must be cols. Read through fp8kv_vectors_read: when dir was verified, the bytes must be the
 * ones verified. 0, or FP8KV_ERR naming the file. */
int fp8kv_load_vector_file(const char *dir, const struct fp8kv_profile *p, const char *file,
                           enum fp8kv_npy_dtype dtype, size_t rows, size_t cols,
                           struct fp8kv_npy *a);

/* fp8kv_encode_grouped: q[i] = the subject's code of x[i] at scale scales[i] (f32 bits; NULL:
 * scale 1), one call per run of equal scales (the scale sets are grouped by scale). 0, or the
 * subject's negative status. */
int fp8kv_encode_grouped(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                         const float *x, const uint32_t *scales, size_t n, uint8_t *q);

/* fp8kv_pair_code_matches: whether code `got` is right for input x stored at scale s (f32
 * bits) when the oracle says `want`, under the NaN check; a NaN that only an invalid operation
 * in x / s makes (IEEE 754 leaves its sign open) is judged by class. */
int fp8kv_pair_code_matches(const struct fp8kv_profile *p, enum fp8kv_nan_check check, uint32_t x,
                            uint32_t s, uint8_t got, uint8_t want);

/* fp8kv_name_crash: after the subject's encode crashed (FP8KV_ERR_SUBJECT) on x[0 .. n) at scale
 * s, adds the first input that crashes it alone to the message, when the subject can find it
 * (locate_crash). Call outside parallel regions (it may start worker processes). Returns
 * FP8KV_ERR_SUBJECT. */
int fp8kv_name_crash(const struct fp8kv_subject *subject, const float *x, size_t n, float s);

/* fp8kv_check_encoder_vectors: byte identity of an encoding subject (FP8KV_CAP_ENCODE) against the
 * golden sets of profile p: edges (scale 1, per-class counts), all f16 and all bf16 inputs (scale
 * 1), and the store- with-scale pairs under each of f32_div, f32_mul_recip and f16_div (one check
 * each; the exact model is no kernel's). NaNs judged by check. Appends one check per set. Returns
 * 0, the subject's negative status, or FP8KV_ERR when a vector file cannot be read (named). */
int fp8kv_check_encoder_vectors(const char *dir, const struct fp8kv_profile *p,
                                enum fp8kv_nan_check check, const struct fp8kv_subject *subject,
                                struct fp8kv_results *out);

/* fp8kv_check_decoder_vectors: a decoding subject (FP8KV_CAP_DECODE) against decode.npy (every
 * code) and the read set: f32 output bit-identical to read_f32.npy with NMSE exactly 0, and the
 * f16/bf16 outputs (the decoder's f32 rounded by codec.h's RN16/RNbf16) bit-identical to the
 * rounded read model. NaNs judged by check: class accepts any NaN for a NaN, strict wants the
 * bits (sign and payload). Appends one check per set. Returns 0, the subject's negative status,
 * or FP8KV_ERR when a vector file cannot be read (named). */
int fp8kv_check_decoder_vectors(const char *dir, const struct fp8kv_profile *p,
                                enum fp8kv_nan_check check, const struct fp8kv_subject *subject,
                                struct fp8kv_results *out);

/* ---- KV-cache checks (kv/checks.c) ---------------------------------------------------------- */

/* fp8kv_check_kv: runs a subject's KV-cache paths (store, gather, attention: those it has) on
 * every golden KV case of profile p in the
 * vector directory dir and appends one check per path and case group: store byte identity
 * (both layouts, f32/f16/bf16 inputs, padding slots untouched), read NMSE against the
 * oracle's dequantization (f32 output: NMSE exactly 0 and bit identity; f16/bf16: against
 * the oracle's rounded read model, bit identity), attention NMSE against the high-precision
 * reference (threshold 1e-10). Returns 0, or FP8KV_ERR when the vectors cannot be read. */
int fp8kv_check_kv(const char *dir, const struct fp8kv_profile *p,
                   const struct fp8kv_subject *subject, struct fp8kv_results *out);

/* fp8kv_check_attention_long: an attention subject's long-context paths: sequences of 3000, 777,
 * 1 and 0 tokens (many partitions of a split-K decode), head size 128, 2 kv heads with 8, 4 and 2
 * q heads (NHD) and 8 (split-x), random finite codes, against a double-precision reference
 * over decode.npy: NMSE threshold 1e-10, one check per case. Returns 0, the subject's status, or
 * FP8KV_ERR (decode.npy unreadable). */
int fp8kv_check_attention_long(const char *dir, const struct fp8kv_profile *p,
                               const struct fp8kv_subject *subject, struct fp8kv_results *out);

/* fp8kv_check_attention_engine: an attention subject on every case of the engine suite
 * (fp8kv/kv_suite.h: generated, their digests checked), or on case only_case (>= 0), under
 * profile p, judged at the arithmetic it declares: one check ("kv-attention-engine") per case,
 * and for a case of several queries a sequence a second ("kv-attention-consistency": the same
 * query rows through the decode path, each a sequence of its own). A case needing what the
 * subject's attention_features lack is a "not run" row. Returns 0, the subject's status, or
 * FP8KV_ERR (vectors, digests, memory, a case index out of range). */
int fp8kv_check_attention_engine(const char *dir, const struct fp8kv_profile *p,
                                 const struct fp8kv_subject *subject, int only_case,
                                 struct fp8kv_results *out);

/* fp8kv_check_quantization_nmse: the NMSE of store-then-read against the unquantized input
 * for Gaussian, Gaussian-with-outliers and uniform data (fixed seeds), one check each,
 * reported and not gated (gated = 0). */
int fp8kv_check_quantization_nmse(const struct fp8kv_profile *p,
                                  const struct fp8kv_subject *subject, struct fp8kv_results *out);

#ifdef __cplusplus
}
#endif
#endif
