/* fp8kv/block_checks.h — a block codec's checks (fp8kv/block_report.h) as one plan that
 * `fp8kv check-block` and `fp8kv run` both carry out: the golden vectors, judged here without
 * the oracle, and, where the build hands in the oracle's judges (fp8kv/block_judge.h: builds
 * with FP8KV_WITH_ORACLE), the decode of every code pair, element sweeps at fixed scale codes
 * and seeded blocks. Also what `fp8kv run` makes of them: report rows per format, rule and
 * model (docs/DESIGN.md §5.5, §10). */
#ifndef FP8KV_BLOCK_CHECKS_H
#define FP8KV_BLOCK_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block.h"
#include "fp8kv/block_report.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* fp8kv_block_judge_vectors: the golden vectors under root (root/blocks/<format>/, written by
 * the oracle: docs vectors/README.md): s's encode of every case (input.npy, nvfp4 at each case's
 * G) against <rule>_<model>_*.npy (or <rule>_*.npy where the models agree), and s's decode
 * against decode.npy (and nvfp4's decode_g.npy at G = RN32(1/3)). No root/blocks/<format>/
 * input.npy: a note, 0 (the check not run); another file missing, unreadable or of a shape
 * that disagrees: FP8KV_ERR naming it. Verifying root (fp8kv_vectors_trust) is the caller's. */
int fp8kv_block_judge_vectors(const struct fp8kv_block_under_test *s, const char *root,
                              struct fp8kv_block_report *r);

/* fp8kv_block_same_value: whether a decoded value (f32 bits) is the expected one: bit for bit,
 * or both NaN (a NaN matches any NaN). */
int fp8kv_block_same_value(uint32_t expected, uint32_t got);

/* The judges that need the oracle (block/judge.c; contracts in fp8kv/block_judge.h), handed
 * to a plan by a build that has it: fp8kv_block_oracle_judges there. */
struct fp8kv_block_oracle_judges {
    int (*decode)(const struct fp8kv_block_under_test *s, float G, struct fp8kv_block_report *r);
    int (*sweep)(const struct fp8kv_block_under_test *s, struct fp8kv_block_sweep_point p,
                 struct fp8kv_block_report *r);
    int (*blocks)(const struct fp8kv_block_under_test *s, float G, uint64_t seed, size_t nblocks,
                  struct fp8kv_block_report *r);
};

/* What to check of a block codec. */
struct fp8kv_block_plan {
    const char *vectors_root; /* the vector directory (its blocks/<format>/); NULL: no vectors */
    float G;                  /* nvfp4's decode scale for decode and blocks (1: MX) */
    const struct fp8kv_block_sweep_point *sweep; /* the sweep points, nsweep of them */
    int nsweep;
    uint64_t seed; /* the seeded blocks: nblocks of them (0: none) from seed */
    size_t nblocks;
    const struct fp8kv_block_oracle_judges *oracle; /* NULL: only the vectors can be judged */
};

/* fp8kv_block_check: the plan's checks of s in order (vectors, decode, each sweep point,
 * blocks) into r, with each kind's wall time in r->seconds; without plan->oracle only the
 * vectors (r->ran says what ran). 0, or the first error status (a subject's, or FP8KV_ERR for
 * unreadable vectors) with a message; r keeps what was judged before it. */
int fp8kv_block_check(const struct fp8kv_block_under_test *s, const struct fp8kv_block_plan *plan,
                      struct fp8kv_block_report *r);

#ifdef __cplusplus
}
#endif
#endif
