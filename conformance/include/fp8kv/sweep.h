/* fp8kv/sweep.h — exhaustive sweeps: every f32, f16 or bf16 input through an encoder.
 *
 * The expected code of an input is read off the certified boundary table (boundaries.npy):
 * positive finite f32 patterns between boundary k and boundary k+1 all encode to code k, so
 * the input space splits into a few hundred runs of one expected code each (plus the
 * overflow, Inf and NaN runs, and their negative mirror). Verification is then a comparison
 * of each output with the expected code of its run: two comparisons' worth of work per input,
 * vectorized. Chunks of the input space go to OpenMP threads with bounded buffers, so memory
 * stays constant whatever the domain.
 */
#ifndef FP8KV_SWEEP_H
#define FP8KV_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "fp8kv/checks.h"
#include "fp8kv/shard.h"
#include "fp8kv/spec.h"
#include "fp8kv/subject.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The names of the domains: those of their dtypes ("f32", "f16", "bf16"). */
#define fp8kv_sweep_domain_names fp8kv_dtype_names

struct fp8kv_sweep_options {
    int threads;              /* 0: OpenMP's default */
    FILE *progress;           /* a progress bar goes here when it is a terminal; NULL: none */
    uint64_t limit;           /* 0: the whole domain; else only the first `limit` inputs (tests) */
    struct fp8kv_shard shard; /* {0, 0}: all of it; else only this shard's slice of it */
    /* the store scale the codes are judged at (f32 bits; 0: none, scale 1) and its quotient
     * model (f32_div, f32_mul_recip, f16_div): the expected code of x is the oracle's store of
     * (x, s) under the model (fp8kv_sweep_runs_scaled) */
    uint32_t scale;
    enum fp8kv_scale_model model;
};

/* fp8kv_sweep_range: the inputs [*lo, *hi) a pass over domain visits under opt: the domain, or
 * its first opt->limit inputs, and of those the slice of opt->shard (fp8kv/shard.h). */
void fp8kv_sweep_range(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt,
                       uint64_t *lo, uint64_t *hi);

/* fp8kv_sweep: runs every input of the domain (of its range under opt: fp8kv_sweep_range; in
 * increasing bit-pattern order, widened to f32 for f16/bf16) through the encoding subject at
 * scale 1 (or opt->scale, judged under opt->model; a failure line then shows the pair and its
 * quotient) with configuration cfg (the
 * subject's encode may be called from several threads at once unless its flags say
 * FP8KV_SUBJECT_SINGLE_THREADED or FP8KV_SUBJECT_IN_ORDER) and judges each code against the
 * boundary table of p's format (boundaries: fp8kv_boundary_count entries, from boundaries.npy)
 * under the NaN check. Fills c: cases, mismatches per input class, the first failures in input
 * order as "0x<input> => <got>  expected <want>  <class>", passed. Returns 0, or the
 * subject's negative status, or FP8KV_ERR (out of memory, bad table). */
int fp8kv_sweep(const struct fp8kv_profile *p, enum fp8kv_nan_check check, enum fp8kv_domain domain,
                const uint32_t *boundaries, const struct fp8kv_subject *subject,
                struct fp8kv_codec_cfg cfg, const struct fp8kv_sweep_options *opt,
                struct fp8kv_check *c);

/* A byte stream as a sweep subject: the codes for the canonical input order (byte i is the
 * code of the input whose bit pattern is i) read from fd, so any implementation, in any
 * language, can be judged through a pipe. */
struct fp8kv_stream {
    int fd;
    uint64_t consumed; /* bytes read so far */
};

/* fp8kv_stream_subject: s as an in-order encoding subject called name (FP8KV_SUBJECT_IN_ORDER:
 * the codes of the canonical input order, whatever the configuration). A stream that ends
 * early fails the sweep (FP8KV_ERR, naming how many bytes came). */
struct fp8kv_subject fp8kv_stream_subject(struct fp8kv_stream *s, const char *name);

/* fp8kv_stream_finish: after a sweep of `expected` inputs, checks that the stream ends there,
 * reading at most one byte more. 0, or FP8KV_ERR saying the stream is too long. */
int fp8kv_stream_finish(struct fp8kv_stream *s, uint64_t expected);

/* ---- the chunk driver every exhaustive pass shares (sweeps, streams, audits) ------------- */

enum { FP8KV_SWEEP_CHUNK = 1 << 16 }; /* inputs per chunk, by default */

/* One chunk of a domain in flight on one thread: inputs lo .. lo + n, x[i] the f32 of input
 * lo + i (NULL under FP8KV_CHUNKS_IN_ORDER or _NO_INPUTS, unfilled under _UNFILLED); q and q2 are
 * chunk-sized scratch for the codes; thread is the OpenMP thread number. */
struct fp8kv_sweep_chunk {
    uint64_t index; /* the chunk's number: lo / the chunk size */
    uint64_t lo;
    size_t n;
    float *x;
    uint8_t *q, *q2;
    int thread;
};

/* A pass over one chunk: 0, or a nonzero status that stops the pass. */
typedef int (*fp8kv_chunk_visit)(void *ctx, struct fp8kv_sweep_chunk *c);

/* How fp8kv_sweep_chunks goes: */
enum {
    FP8KV_CHUNKS_IN_ORDER = 1,  /* one thread, chunks in increasing order, no inputs filled */
    FP8KV_CHUNKS_NO_INPUTS = 2, /* x is NULL: the visit places the inputs itself */
    FP8KV_CHUNKS_UNFILLED = 4,  /* x is chunk-sized scratch, not filled: the visit fills it */
};

/* fp8kv_sweep_chunks: visits every chunk (of `chunk` inputs, 0: FP8KV_SWEEP_CHUNK; chunk k
 * starts k chunks after the range's first input) of the range of the domain under opt
 * (fp8kv_sweep_range) on opt->threads OpenMP threads, as flags say; a
 * progress bar named `what` goes to opt->progress when it is a terminal. Returns 0 or the
 * first nonzero status of a visit (the pass stops there; its message is the caller's
 * fp8kv_last_error). */
int fp8kv_sweep_chunks(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt,
                       const char *what, unsigned flags, size_t chunk, fp8kv_chunk_visit visit,
                       void *ctx);

/* fp8kv_sweep_chunk_count: the chunks of `chunk` inputs (0: FP8KV_SWEEP_CHUNK) that
 * fp8kv_sweep_chunks visits for the domain under opt. */
uint64_t fp8kv_sweep_chunk_count(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt,
                                 size_t chunk);

/* The examples of a pass over chunks, merged in input order whatever order the chunks finish in
 * (a range folds across chunk borders only when its pieces come in order). */
struct fp8kv_chunk_examples {
    struct fp8kv_examples merged;    /* the chunks before `next`, merged */
    struct fp8kv_examples **pending; /* per chunk: a finished chunk's examples, not yet merged */
    unsigned char *done;             /* per chunk: finished */
    uint64_t chunks, next;
};

/* fp8kv_chunk_examples_init: an empty merger for `chunks` chunks. 0 or FP8KV_ERR (memory). */
int fp8kv_chunk_examples_init(struct fp8kv_chunk_examples *m, uint64_t chunks);

/* fp8kv_chunk_examples_put: chunk `index` finished with examples e (NULL: none); merges every
 * finished chunk that is next in order. Thread-safe; once per chunk. 0 or FP8KV_ERR (memory). */
int fp8kv_chunk_examples_put(struct fp8kv_chunk_examples *m, uint64_t index,
                             const struct fp8kv_examples *e);

/* fp8kv_chunk_examples_finish: merges what a pass that stopped early left pending, in order,
 * and releases the rest; m->merged stays. */
void fp8kv_chunk_examples_finish(struct fp8kv_chunk_examples *m);

/* fp8kv_sweep_default_threads: the threads a sweep uses when none are asked for (OpenMP's
 * default: all cores). */
int fp8kv_sweep_default_threads(void);

/* fp8kv_sweep_domain_size: 2^32 for f32, 2^16 for f16 and bf16. */
uint64_t fp8kv_sweep_domain_size(enum fp8kv_domain domain);

/* Runs of the input space (struct fp8kv_sweep_run, fp8kv/subject.h): every input from start up
 * to the next run's start must give a code the run accepts (fp8kv_sweep_run_accepts), and is of
 * class cls. Runs are what a self-judging subject (a device sweep kernel) is handed, too. */

/* fp8kv_sweep_runs: the runs of a domain (starts in the domain's own bit patterns, the first
 * at 0, increasing) for profile p, boundary table b and NaN check. *runs is malloc'd.
 * Returns the number of runs, or FP8KV_ERR. */
long fp8kv_sweep_runs(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                      enum fp8kv_domain domain, const uint32_t *b, struct fp8kv_sweep_run **runs);

/* fp8kv_sweep_runs_scaled: fp8kv_sweep_runs for codes stored at scale s (f32 bits: finite,
 * nonzero; a negative scale mirrors) under quotient model m (f32_div, f32_mul_recip, f16_div):
 * the expected code of x is the boundary table's code of the model's quotient of (x, s) and
 * its class that of RN32(x / s) (fp8kv_pair_class). The quotient is monotone in x, so each run
 * of the f32 domain starts at the smallest x whose quotient reaches a point where the scale-1
 * runs change (found by bisection over bit patterns); the 16-bit domains label every input.
 * Returns the number of runs, or FP8KV_ERR (a scale or model it cannot judge, memory). */
long fp8kv_sweep_runs_scaled(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                             enum fp8kv_domain domain, const uint32_t *b, enum fp8kv_scale_model m,
                             uint32_t s, struct fp8kv_sweep_run **runs);

/* fp8kv_sweep_expected_scaled: the expected code of f32 input x stored at scale s (f32 bits)
 * under model m (as fp8kv_sweep_runs_scaled), into *code; *nan_by_class is set when that code
 * is a NaN that only an invalid operation makes (0 * RN32(1 / s) with 1 / s overflowing), whose
 * sign IEEE 754 leaves open. 0, or FP8KV_ERR (exact, or a model this build cannot state). */
int fp8kv_sweep_expected_scaled(const struct fp8kv_profile *p, const uint32_t *boundaries,
                                enum fp8kv_scale_model m, uint32_t x, uint32_t s, uint8_t *code,
                                int *nan_by_class);

/* fp8kv_sweep_run_of: the index of the run (of n, sorted by start) that holds input. */
size_t fp8kv_sweep_run_of(const struct fp8kv_sweep_run *runs, size_t n, uint64_t input);

/* fp8kv_sweep_expected: the expected code of one f32 input under p by the boundary table
 * (the strict byte; NaN inputs give the NaN code of their sign). */
uint8_t fp8kv_sweep_expected(const struct fp8kv_profile *p, const uint32_t *boundaries,
                             uint32_t x_bits);

/* fp8kv_load_boundaries: reads <dir>/<profile>/boundaries.npy (through fp8kv_vectors_read:
 * when dir was verified, the bytes verified) and checks its length and that it is increasing.
 * Returns a malloc'd table, or NULL with a message naming the file. */
uint32_t *fp8kv_load_boundaries(const char *dir, const struct fp8kv_profile *p);

#ifdef __cplusplus
}
#endif
#endif
