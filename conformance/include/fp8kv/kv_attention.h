/* fp8kv/kv_attention.h — attention judged at the arithmetic a kernel declares.
 *
 * A judged attention declares what it computes (struct fp8kv_attention_arith): the dtype q is
 * given in, how K and V are dequantized (K*s and V*s rounded to a dtype, or the fp8 values
 * taken exactly with the scales folded into the scores and the output), the operands of its
 * two products (as they are, or rounded to tf32), the dtype P is rounded to, the output dtype,
 * the ulps of its exp and the fewest keys between two updates of its running maximum. The
 * elementwise roundings of q, K and V are reproduced by the reference (the caller gives the
 * values the arithmetic multiplies); everything a correct implementation may do differently is
 * covered by a per-element forward error bound (docs/DESIGN.md §5.3.1 derives it): the order
 * of every f32 accumulation, the exp function, tf32 operands, P rounded after subtracting a
 * running maximum (online softmax, split-K partitions and their combine, normalized before or
 * after P.V), and the rounding of the output. An output passes when it lies in
 * [RD(o - E), RU(o + E)] of its dtype, o the exact output, E its bound.
 *
 * The reference is computed in double with compensated sums (its own error is bounded and
 * added to E, a few parts in 2^40 of the bound at most); the tests cross-check it against
 * 128-bit MPFR on the golden cases.
 */
#ifndef FP8KV_KV_ATTENTION_H
#define FP8KV_KV_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "fp8kv/checks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number types an arithmetic names, in fp8kv_attention_type_names' order. */
enum fp8kv_attention_type {
    FP8KV_ATTN_F32,
    FP8KV_ATTN_TF32,
    FP8KV_ATTN_BF16,
    FP8KV_ATTN_F16,
    FP8KV_ATTN_E4M3,
    FP8KV_ATTN_TYPE_COUNT
};
extern const char *const fp8kv_attention_type_names[FP8KV_ATTN_TYPE_COUNT];

/* How K and V reach the products: scaled (decode x scale in f32, rounded to kv_type) or folded
 * (the fp8 values exactly; the k scale applied to the scores, the v scale to the output). */
enum fp8kv_attention_kv { FP8KV_ATTN_KV_SCALED, FP8KV_ATTN_KV_FOLDED };

/* A declared arithmetic. */
struct fp8kv_attention_arith {
    char name[64]; /* a preset's name, or the text it was parsed from */
    int q;         /* f32 | bf16 | f16: q is given in this dtype (the case's query rounded RNE) */
    int kv;        /* enum fp8kv_attention_kv */
    int kv_type;   /* scaled: f32 | bf16 | f16 (K*s and V*s rounded RNE to it) */
    int dot;       /* f32 | tf32: the operands of both products as given, or rounded to tf32 */
    int p;         /* f32 | tf32 | bf16 | f16 | e4m3: the softmax weights' dtype in P.V */
    int out;       /* f32 | bf16 | f16: the output's dtype */
    int exp_ulps;  /* the f32 exp's error in ulps */
    int tile;      /* the fewest keys between two updates of the running maximum */
};

/* The presets, in order (fp8kv_attention_presets[0] is "f32", what fp8kv's kernels declare). */
#define FP8KV_ATTN_PRESET_COUNT 7
extern const char *const fp8kv_attention_presets[FP8KV_ATTN_PRESET_COUNT];

/* fp8kv_attention_arith_parse: a preset's name, optionally followed by ",key=value" changes
 * ("bf16,exp_ulps=8", "f32,q=bf16,out=bf16"; keys q, kv (scaled | folded), kv_type, dot, p,
 * out, exp_ulps, tile), into out. NULL or "" is "f32". 0, or FP8KV_ERR naming what is wrong. */
int fp8kv_attention_arith_parse(const char *text, struct fp8kv_attention_arith *out);

/* fp8kv_attention_arith_words: "q bf16, K*s and V*s in bf16, f32 products, P bf16, out bf16,
 * exp 4 ulps, tile 16" into buf. */
void fp8kv_attention_arith_words(const struct fp8kv_attention_arith *a, char *buf, size_t size);

/* fp8kv_attention_round: x rounded to type t (f32, bf16, f16; tf32 and e4m3 too) with its
 * subnormals: dir 0 to nearest even, -1 down, +1 up; overflow as IEEE does (RN: past
 * max + ulp/2 to Inf; RD of a positive past max: max; RU: Inf). NaN and Inf pass through. */
double fp8kv_attention_round(double x, int t, int dir);

/* One batch of attention steps, as the arithmetic sees it. seq_lens[i] tokens of sequence i,
 * whose last query_lens[i] are queries (NULL: one each, a decode step; more: a multi-token
 * decode, or a prefill when they are all of its tokens): query j of sequence i is its token
 * seq_lens[i] - query_lens[i] + j and attends causally to the tokens up to itself, the last
 * `window` of them when window > 0. Query rows are numbered across sequences (sequence 0's
 * first), outputs [rows, num_q_heads, head_size]. q head h reads kv head
 * h / (num_q_heads / num_kv_heads). query and row give the values the arithmetic multiplies,
 * exactly: q of a query row in its declared dtype; a key or value row of token t of a sequence
 * and kv head, its scale applied (scaled: the rounded K*s; folded: fp8 value x scale, exact in
 * double). */
struct fp8kv_attention_problem {
    int num_seqs, num_q_heads, num_kv_heads, head_size;
    const int32_t *seq_lens;
    double softmax_scale;
    void *ctx;
    void (*query)(void *ctx, int row, int q_head, double *q);
    void (*row)(void *ctx, int is_key, int seq, int t, int kv_head, double *row);
    const int32_t *query_lens; /* NULL: one query per sequence */
    int window;                /* 0: every earlier token */
};

/* The reference of a problem under an arithmetic: per output [rows, num_q_heads, head_size]
 * the exact value (as computed: within ref_error of it), and the interval of the output dtype
 * a correct implementation's output lies in. */
struct fp8kv_attention_ref {
    size_t count;
    double *exact, *lo, *hi;
    unsigned char *nan_also; /* outputs a NaN also stands for: a value that is not finite, whose
                                weight may be 0 in a kernel (0 x Inf); tokens of weight exactly 0
                                in double are left out of exact */
    uint64_t vacuous; /* outputs whose bound is infinite (the arithmetic cannot be judged there) */
    int on_gpu;       /* 1: computed on the GPU (the same exact values as the host's) */
};

/* fp8kv_attention_reference: computes the reference of pr under a into ref (freed with
 * fp8kv_attention_ref_free): on the open GPU in a GPU build (a thread per query row and q
 * head, kv/attention_gpu.hip), else or where that fails, or where the environment has
 * FP8KV_REFERENCE=cpu, on the host (a task per sequence and kv head); the exact values are the
 * same bits either way (kv/attention_core.h), the bounds may differ in their last bits (the
 * platform's exp and log). 0, or FP8KV_ERR (out of memory; a shape out of range). */
int fp8kv_attention_reference(const struct fp8kv_attention_problem *pr,
                              const struct fp8kv_attention_arith *a,
                              struct fp8kv_attention_ref *ref);

void fp8kv_attention_ref_free(struct fp8kv_attention_ref *ref);

/* fp8kv_attention_judge: judges got (count outputs, elements of dtype a->out: f32, bf16 or f16
 * bits) against ref: a mismatch is an output outside its interval (a NaN where the reference
 * is finite, or the reverse but where nan_also says; an infinity where it is not the same
 * infinity). Sets chk's
 * cases, mismatches, bound_ratio (the worst |got - exact| / the allowed distance on its side),
 * the NMSE against the exact values, and failure lines naming the output by sequence, q head
 * and dim (num_q_heads, head_size give the shape). */
void fp8kv_attention_judge(const struct fp8kv_attention_ref *ref,
                           const struct fp8kv_attention_arith *a, const void *got, int num_q_heads,
                           int head_size, struct fp8kv_check *chk);

/* fp8kv_attention_kv_dtype: the KV element dtype of type t (f32, bf16 or f16: the dtypes of q,
 * of scaled K and V, and of the output); f32 for the others (tf32 and e4m3 are never given or
 * returned as arrays). */
enum fp8kv_kv_dtype fp8kv_attention_kv_dtype(int t);

/* fp8kv_attention_type_size: bytes of an output element of type t (4 for f32, 2 for bf16/f16). */
size_t fp8kv_attention_type_size(int t);

#ifdef __cplusplus
}
#endif
#endif
