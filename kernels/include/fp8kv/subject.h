/* fp8kv/subject.h — what a subject under test is: one descriptor for every one of them.
 *
 * A subject is anything fp8kv judges: a built-in codec, the CPU reference KV-cache paths, the
 * GPU kernels, a codec plugin in another process, a byte stream from a pipe and, through the
 * same entry points, an engine's own kernels. It says what it can do (capabilities), where it
 * computes (memory), which profiles it implements (claim), and gives one entry point per
 * capability. The KV-cache paths are a KV-ABI descriptor (fp8kv/kv_plugin.h), the one way to
 * be a KV subject: fp8kv's CPU and GPU kernels and an engine's plugin alike; a block codec
 * (fp8kv/block_codec.h's formats: MX, NVFP4) is a block-kernel descriptor (struct
 * fp8kv_block_kernels below): the CPU codec, the GPU codec and a block plugin alike. The codec
 * entry points take host pointers (a device subject copies inside) and return 0 or a negative enum
 * fp8kv_status (FP8KV_ERR_SUBJECT: it crashed, hung or a device
 * call failed; the message is in fp8kv_last_error()), so a failing subject is reported, never
 * judged on stale outputs.
 *
 * The judge (conformance/) walks tables of these: a target's subjects (fp8kv_cpu_subjects,
 * fp8kv_gpu_subjects) and the subjects made from plugins and streams. Like every subject-side
 * header, this one never sees the oracle.
 */
#ifndef FP8KV_SUBJECT_H
#define FP8KV_SUBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/block_codec.h"
#include "fp8kv/codec.h"
#include "fp8kv/kv_cache.h"
#include "fp8kv/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a subject can do: one bit per entry point. */
enum fp8kv_capability {
    FP8KV_CAP_ENCODE = 1u << 0,    /* x, scale -> codes: a store's conversion */
    FP8KV_CAP_DECODE = 1u << 1,    /* codes, scale -> f32: a read's conversion */
    FP8KV_CAP_STORE = 1u << 2,     /* reshape_and_cache into a paged cache */
    FP8KV_CAP_GATHER = 1u << 3,    /* gather + dequant by block table */
    FP8KV_CAP_ATTENTION = 1u << 4, /* a paged-attention decode step */
    FP8KV_CAP_SWEEP = 1u << 5,     /* judges a whole sweep domain itself, from the run table */
    FP8KV_CAP_BLOCK = 1u << 6,     /* a block codec: whole blocks -> scale and element codes */
};

/* Where a subject computes (its entry points take host pointers either way). */
enum fp8kv_memory { FP8KV_MEMORY_HOST, FP8KV_MEMORY_DEVICE };

/* Properties that change how a subject is judged or driven. */
enum fp8kv_subject_flag {
    FP8KV_SUBJECT_VENDOR = 1u << 0,          /* a vendor's conversion: judged under NaN check
                                                strict (reported) and class (gated) */
    FP8KV_SUBJECT_LONG_CONTEXT = 1u << 1,    /* its attention has long-context paths: also
                                                checked on multi-partition sequences */
    FP8KV_SUBJECT_SINGLE_THREADED = 1u << 2, /* call encode from one thread at a time */
    FP8KV_SUBJECT_IN_ORDER = 1u << 3,        /* codes come from a stream in canonical input
                                                order: encode ignores x (not filled) and is
                                                called for increasing chunks, one at a time */
};

/* The profiles a subject implements, as codec-configuration fields: FP8KV_CLAIM_ANY in a
 * field means the subject follows struct fp8kv_codec_cfg for that choice. */
#define FP8KV_CLAIM_ANY (-1)
struct fp8kv_claim {
    int format;     /* enum fp8kv_codec_format, FP8KV_CLAIM_FORMATS(...) (FP8KV_CLAIM_OCP ...) or
                       FP8KV_CLAIM_ANY */
    int saturate;   /* 1 satfinite, 0 no clamp (NaN, or Inf in e5m2), or FP8KV_CLAIM_ANY */
    int inf_to_nan; /* under satfinite: 1 Inf -> NaN, 0 Inf -> ±max, or FP8KV_CLAIM_ANY */
};

/* FP8KV_CLAIM_ALL: follows the configuration in every choice (the built-in codecs). */
#define FP8KV_CLAIM_ALL                                                                            \
    {                                                                                              \
        FP8KV_CLAIM_ANY, FP8KV_CLAIM_ANY, FP8KV_CLAIM_ANY                                          \
    }

/* FP8KV_CLAIM_FORMATS(mask) in a claim's format: the formats of mask, each named by its
 * FP8KV_CLAIM_FORMAT_BIT(FP8KV_CODEC_<F>), whichever of them the configuration asks;
 * FP8KV_CLAIM_EITHER(f, g): f or g. A claim names every format it covers, so a format added to
 * codec.h joins no claim but FP8KV_CLAIM_ANY (the subjects that follow the configuration). */
#define FP8KV_CLAIM_FORMAT_BIT(format) (1 << (format))
#define FP8KV_CLAIM_FORMATS(mask) (-2 - (mask))
#define FP8KV_CLAIM_EITHER(f, g)                                                                   \
    FP8KV_CLAIM_FORMATS(FP8KV_CLAIM_FORMAT_BIT(f) | FP8KV_CLAIM_FORMAT_BIT(g))
/* The two widths of one family, for a vendor decoder that decodes both: the OCP formats
 * (e4m3fn, e5m2), the fnuz ones (e4m3fnuz, e5m2fnuz); FP8KV_CLAIM_E4M3: e4m3fn or e4m3fnuz
 * (paths written for 3 mantissa bits only). */
#define FP8KV_CLAIM_OCP FP8KV_CLAIM_EITHER(FP8KV_CODEC_E4M3FN, FP8KV_CODEC_E5M2)
#define FP8KV_CLAIM_FNUZ FP8KV_CLAIM_EITHER(FP8KV_CODEC_E4M3FNUZ, FP8KV_CODEC_E5M2FNUZ)
#define FP8KV_CLAIM_E4M3 FP8KV_CLAIM_EITHER(FP8KV_CODEC_E4M3FN, FP8KV_CODEC_E4M3FNUZ)

/* fp8kv_claim_covers: whether a subject claiming c implements configuration cfg (inf_to_nan
 * is not asked under NaN-on-overflow, where Inf is NaN anyway). */
static inline int fp8kv_claim_covers(struct fp8kv_claim c, struct fp8kv_codec_cfg cfg)
{
    const int in_mask = c.format <= FP8KV_CLAIM_FORMATS(0) &&
                        ((FP8KV_CLAIM_FORMATS(0) - c.format) >> cfg.format & 1);
    return (c.format == FP8KV_CLAIM_ANY || c.format == cfg.format || in_mask) &&
           (c.saturate == FP8KV_CLAIM_ANY || c.saturate == cfg.saturate) &&
           (!cfg.saturate || c.inf_to_nan == FP8KV_CLAIM_ANY || c.inf_to_nan == cfg.inf_to_nan);
}

/* ---- exhaustive sweeps a subject judges itself (FP8KV_CAP_SWEEP) --------------------------- */

/* A sweep's domain: every input of one input dtype (fp8kv/spec.h; the names are
 * fp8kv_dtype_names). */
enum fp8kv_domain {
    FP8KV_DOMAIN_F32 = FP8KV_DTYPE_F32,
    FP8KV_DOMAIN_F16 = FP8KV_DTYPE_F16,
    FP8KV_DOMAIN_BF16 = FP8KV_DTYPE_BF16,
    FP8KV_DOMAIN_COUNT = FP8KV_DTYPE_COUNT
};

/* A run of the judging table: every input from start up to the next run's start must give a
 * code c with c & mask in [value - span, value] (fp8kv_sweep_run_accepts; mask 0xFF, span 0:
 * one exact byte; mask 0x7F: either sign; span 2 from 0x7F: e5m2's NaNs 0x7D..0x7F), and all of
 * them are of input class cls. value is the expected byte itself. The judge computes the table;
 * a subject only compares. */
struct fp8kv_sweep_run {
    uint32_t start;
    uint8_t mask, value, cls, span;
};

/* fp8kv_sweep_run_accepts: whether code c passes run r. */
FP8KV_HD int fp8kv_sweep_run_accepts(const struct fp8kv_sweep_run *r, uint32_t c)
{
    return (uint8_t)(r->value - (c & r->mask)) <= r->span;
}

#define FP8KV_SWEEP_CLASSES 16
#define FP8KV_SWEEP_FAILURES 20

/* What a self-judging sweep found. */
struct fp8kv_sweep_result {
    uint64_t cases;
    uint64_t class_mismatches[FP8KV_SWEEP_CLASSES];
    int failures; /* the lowest-index failures, in input order (deterministic) */
    uint32_t failure_input[FP8KV_SWEEP_FAILURES];
    uint8_t failure_got[FP8KV_SWEEP_FAILURES], failure_want[FP8KV_SWEEP_FAILURES],
        failure_cls[FP8KV_SWEEP_FAILURES];
    double kernel_ms; /* the pass over the domain alone */
    double total_ms;  /* the whole call: copies and failure passes too */
};

/* ---- block codecs (FP8KV_CAP_BLOCK) -----------------------------------------------------------
 */

/* The block-codec combinations a subject implements, as struct fp8kv_bcodec_cfg fields (enum
 * fp8kv_block_format_id, fp8kv_block_rule, fp8kv_block_model); FP8KV_CLAIM_ANY: every one. */
struct fp8kv_block_claim {
    int format, rule, model;
};

/* fp8kv_block_claim_covers: whether a block subject claiming c implements cfg's combination. */
static inline int fp8kv_block_claim_covers(struct fp8kv_block_claim c, struct fp8kv_bcodec_cfg cfg)
{
    return (c.format == FP8KV_CLAIM_ANY || c.format == cfg.format) &&
           (c.rule == FP8KV_CLAIM_ANY || c.rule == cfg.rule) &&
           (c.model == FP8KV_CLAIM_ANY || c.model == cfg.model);
}

/* A run of the element sweep's judging table: input magnitudes (f32 bits, sign clear) from
 * start up to the next run's start encode to code (the oracle's, sign included). */
struct fp8kv_block_run {
    uint32_t start;
    uint32_t code;
};
enum { FP8KV_BLOCK_MAX_RUNS = 160, FP8KV_BLOCK_SWEEP_FAILURES = 16 };

/* What a self-judging element sweep found: counts, some wrong codes (the input, for a scale
 * the block's first input; expected and got), the kernel's time. */
struct fp8kv_block_sweep_failure {
    uint32_t input;
    uint8_t expected, got, is_scale, pad;
};
struct fp8kv_block_sweep_result {
    uint64_t checked, wrong;
    struct fp8kv_block_sweep_failure first[FP8KV_BLOCK_SWEEP_FAILURES];
    int nfirst;
    double ms;
};

/* A block codec's entry points. cfg names the combination (one the claim covers) and G
 * (cfg.global_scale, NVFP4's decode scale); worker: 0 .. workers - 1, one caller per worker at
 * a time. Each returns 0, or an FP8KV_ERR* status with a message (FP8KV_ERR_SUBJECT: the
 * subject crashed or hung, a device call failed). */
struct fp8kv_block_kernels {
    struct fp8kv_block_claim claim;
    int workers; /* concurrent callers it takes; 0: as many as the judge's threads */
    void *ctx;
    /* nblocks whole blocks of x -> scales (one byte a block), elements (one byte an element) */
    int (*encode)(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const float *x,
                  size_t nblocks, uint8_t *scales, uint8_t *elements);
    /* optional: codes -> y (f32) */
    int (*decode)(void *ctx, int worker, struct fp8kv_bcodec_cfg cfg, const uint8_t *scales,
                  const uint8_t *elements, size_t nblocks, float *y);
    /* optional (else the judge calls encode): the element sweep run inside the subject (a
       device): every input sign | m, m in [0, anchor], both signs, in blocks anchor, x1 ..
       x(block_size - 1), each block's scale judged against scale, its elements against
       runs[sign] (nruns each, starts increasing from 0), the anchor's against anchor_code */
    int (*sweep)(void *ctx, struct fp8kv_bcodec_cfg cfg, uint8_t scale, uint32_t anchor,
                 uint8_t anchor_code, const struct fp8kv_block_run *const runs[2],
                 const int nruns[2], struct fp8kv_block_sweep_result *out);
};

/* ---- the descriptor ------------------------------------------------------------------------- */

struct fp8kv_subject {
    const char *name;        /* as reports name it: "bits", "cpu-reference", "gpu-kernels" */
    const char *description; /* in words, for reports and --help */
    unsigned caps;           /* enum fp8kv_capability bits */
    enum fp8kv_memory memory;
    unsigned flags; /* enum fp8kv_subject_flag bits */
    struct fp8kv_claim claim;
    void *ctx;    /* handed to every entry point */
    size_t chunk; /* inputs per encode call in sweeps (0: the sweep's default); a
                     subject in another process wants large calls */

    /* q[i] = the code of x[i] stored at scale s under cfg (cfg.model: the scale model) */
    int (*encode)(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                  uint8_t *q);
    /* y[i] = RN32(decode(q[i]) * s) */
    int (*decode)(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                  float *y);
    /* the KV-cache paths (FP8KV_CAP_STORE, _GATHER, _ATTENTION: the entry points it has), with
       their memory (host or device) and their own ctx */
    const struct fp8kv_kv_kernels_v1 *kv;
    /* the block codec (FP8KV_CAP_BLOCK), with its claim and its own ctx */
    const struct fp8kv_block_kernels *block;
    /* every input [lo, hi) of the domain at scale 1 through the encoder, each code judged
       against runs (nruns entries of the whole domain, starts increasing from 0) */
    int (*sweep)(void *ctx, struct fp8kv_codec_cfg cfg, enum fp8kv_domain domain,
                 const struct fp8kv_sweep_run *runs, size_t nruns, uint64_t lo, uint64_t hi,
                 struct fp8kv_sweep_result *out);
    /* optional: where thread `thread` should write the inputs of its next encode call (chunk
       floats), e.g. memory shared with a worker process, saving a copy; NULL: anywhere */
    float *(*input_buffer)(void *ctx, int thread);
    /* optional: after encode crashed on x[0 .. n) at scale s, the index of the first input that
       crashes it alone, found by bisection in a fresh worker: 0 with *index, or nonzero (not
       found: a hang, or a crash that needs more than one input) */
    int (*locate_crash)(void *ctx, const float *x, size_t n, float s, size_t *index);
    /* optional: a note on how the subject will run attention for these arguments (the kernel
       configuration a GPU launcher picks), for the report; NULL: nothing to say */
    int (*attention_plan)(void *ctx, struct fp8kv_codec_cfg cfg,
                          const struct fp8kv_cache_shape *shape, int num_q_heads, int num_seqs,
                          int max_seq_len, char *buf, size_t size);
    /* optional: q[i] = encode's code of the f32 with bits first + i at scale 1, for i < n
       (first + n at most 2^32): the consecutive inputs of an f32 sweep, made by the subject
       without an array (a sweep calls it in place of encode where it is present) */
    int (*encode_f32_range)(void *ctx, struct fp8kv_codec_cfg cfg, uint32_t first, size_t n,
                            uint8_t *q);
};

/* fp8kv_subject_can: whether s has every capability in caps. */
static inline int fp8kv_subject_can(const struct fp8kv_subject *s, unsigned caps)
{
    return (s->caps & caps) == caps;
}

/* fp8kv_subject_find: the subject called name in table (count entries) with capabilities
 * caps, or NULL. */
const struct fp8kv_subject *fp8kv_subject_find(const struct fp8kv_subject *table, int count,
                                               const char *name, unsigned caps);

/* fp8kv_subject_first: the first subject of table (count entries) with capabilities caps, or
 * NULL (a target's block codec: its table's one FP8KV_CAP_BLOCK subject). */
const struct fp8kv_subject *fp8kv_subject_first(const struct fp8kv_subject *table, int count,
                                                unsigned caps);

/* The CPU target's subjects (kernels/cpu/): the encoders "bits" and "frexp", the decoders
 * "decode-bits" and "decode-table", the KV-cache paths "cpu-reference" and the block codec
 * "block-codec" (fp8kv/block_codec.h, every combination). */
extern const struct fp8kv_subject fp8kv_cpu_subjects[];
extern const int fp8kv_cpu_subject_count;

#ifdef __cplusplus
}
#endif
#endif
