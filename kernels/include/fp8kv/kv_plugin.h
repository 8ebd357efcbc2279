/* fp8kv/kv_plugin.h — the KV-kernel ABI, version 3: how a paged fp8 KV cache's kernels are
 * judged, an engine's (a plugin) and fp8kv's own alike.
 *
 * An engine builds its store (reshape_and_cache), and optionally its gather + dequant and its
 * paged-attention decode, into a shared library that exports one function, fp8kv_kv_kernels_v1,
 * returning a descriptor of static storage duration. `fp8kv check-kv --plugin LIB.so` loads it
 * in a child process (a crash or a hang never takes the harness down: exit 4) and runs every
 * golden KV case of the profiles it implements through it. fp8kv's own CPU reference paths and
 * GPU kernels are descriptors of this same type: there is one way to be a KV subject.
 *
 * Contract for the kernels:
 *   - abi_version is FP8KV_KV_ABI_VERSION; store is required, gather and attention may be NULL;
 *   - format (a name of fp8kv_formats[]: "e4m3fn", ...; `fp8kv encode --help` lists them),
 *     overflow ("satfinite" | "nan" | "inf") and, under satfinite, inf ("clamp": +-Inf stores
 *     +-max; "nan": Inf stores NaN) say which profile the kernels implement; NULL in a field
 *     means "whichever the arguments ask" (args->format etc.);
 *   - memory FP8KV_KV_MEMORY_HOST: every pointer in the arguments is host memory;
 *     FP8KV_KV_MEMORY_DEVICE: every array is device memory (CUDA or HIP, of the current device),
 *     and the entry point returns when its results are in place (synchronize before returning);
 *   - each entry point returns 0, or a nonzero value when it could not run (the harness reports
 *     it as the subject's failure, never judges its outputs); it must not keep the pointers;
 *   - the caches start filled with 0xA5 bytes: a store writes exactly the slots of its tokens;
 *   - scales come at one of three granularities (layout->scale_granularity; the kernels say
 *     which they implement in scale_granularities): per tensor (k_scale, v_scale), per KV head
 *     (k_head_scales, v_head_scales: [num_heads] f32) or per token and head: the store computes
 *     the scale of each row it writes (one token, one head: head_size elements) as
 *     s = RN32(amax / max_finite), amax the largest magnitude of the row's finite elements
 *     (s = 1 when that gives 0: a zero row), stores it into the scale caches
 *     (k_scale_cache, v_scale_cache: [num_blocks, block_size, num_heads] f32, entry
 *     slot * num_heads + head; entries of unwritten slots are left untouched) and the reads
 *     take it from there. Arrays of the other granularities are NULL. A byte holds
 *     fp8(RN32(x / s)) with its row's s (the golden cases' store model).
 * Layouts (x = FP8KV_KV_SPLIT_X = 16 bytes):
 *   NHD      key and value: [num_blocks, block_size, num_heads, head_size]
 *   SPLIT_X  key: [num_blocks, num_heads, head_size / 16, block_size, 16];
 *            value: [num_blocks, num_heads, head_size, block_size]
 *   HND      key and value: [num_blocks, num_heads, block_size, head_size]
 * A slot s is position s % block_size of block s / block_size; a slot of -1 is a padding token.
 * Packings (layout->packing; the kernels say which they take in packings): the key and value
 * caches are two arrays (SEPARATE), or one: [2, num_blocks, ...] (KV_FIRST, vLLM's kv_cache:
 * value_cache = key_cache + one cache's bytes) or [num_blocks, 2, ...] (BLOCK_FIRST,
 * FlashInfer's paged_kv_cache: each block's keys, then its values; value_cache = key_cache +
 * one block's bytes, and block b of either starts 2 x b blocks' bytes after its pointer).
 * This header needs nothing but the C standard library; a plugin links nothing of fp8kv's.
 */
#ifndef FP8KV_KV_PLUGIN_H
#define FP8KV_KV_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FP8KV_KV_ABI_VERSION 3
#define FP8KV_KV_SPLIT_X 16

enum fp8kv_kv_abi_layout { FP8KV_KV_ABI_NHD = 0, FP8KV_KV_ABI_SPLIT_X = 1, FP8KV_KV_ABI_HND = 2 };
/* The bit of a layout in fp8kv_kv_kernels_v1.layouts, and all of them. */
#define FP8KV_KV_LAYOUTS(layout) (1u << (layout))
#define FP8KV_KV_LAYOUTS_ALL 7u
enum fp8kv_kv_abi_dtype { FP8KV_KV_ABI_F32 = 0, FP8KV_KV_ABI_F16 = 1, FP8KV_KV_ABI_BF16 = 2 };
enum fp8kv_kv_abi_format {
    FP8KV_KV_ABI_E4M3FN = 0,
    FP8KV_KV_ABI_E4M3FNUZ = 1,
    FP8KV_KV_ABI_E5M2 = 2,
    FP8KV_KV_ABI_E5M2FNUZ = 3
};
enum fp8kv_kv_abi_packing {
    FP8KV_KV_SEPARATE = 0,
    FP8KV_KV_PACKED_KV_FIRST = 1,
    FP8KV_KV_PACKED_BLOCK_FIRST = 2
};
/* The bit of a packing in fp8kv_kv_kernels_v1.packings. */
#define FP8KV_KV_PACKINGS(packing) (1u << (packing))
#define FP8KV_KV_PACKINGS_ALL 7u
enum fp8kv_kv_abi_memory { FP8KV_KV_MEMORY_HOST = 0, FP8KV_KV_MEMORY_DEVICE = 1 };
enum fp8kv_kv_abi_scale_granularity {
    FP8KV_KV_SCALE_TENSOR = 0,    /* one scale per cache: k_scale, v_scale */
    FP8KV_KV_SCALE_HEAD = 1,      /* one per KV head: k_head_scales, v_head_scales */
    FP8KV_KV_SCALE_TOKEN_HEAD = 2 /* one per written row, in the scale caches */
};
/* The bit of a granularity in fp8kv_kv_kernels_v1.scale_granularities, and all of them. */
#define FP8KV_KV_SCALES(granularity) (1u << (granularity))
#define FP8KV_KV_SCALES_ALL 7u

/* The cache and the profile every call carries. */
struct fp8kv_kv_layout_v1 {
    int32_t num_blocks, block_size, num_heads, head_size;
    int32_t layout;            /* enum fp8kv_kv_abi_layout */
    int32_t format;            /* enum fp8kv_kv_abi_format */
    int32_t saturate;          /* 1: finite overflow clamps to +-max; 0: it gives NaN */
    int32_t inf_to_nan;        /* under saturate: 1: +-Inf gives NaN; 0: it clamps to +-max */
    int32_t scale_granularity; /* enum fp8kv_kv_abi_scale_granularity */
    int32_t packing;           /* enum fp8kv_kv_abi_packing */
};

/* reshape_and_cache: token t's key and value rows [num_heads, head_size] (elements of in_dtype)
 * are stored at slot slot_mapping[t] of the caches as fp8(x / scale); -1 skips the token.
 * Per token and head, the store also writes each row's scale into the scale caches. */
struct fp8kv_kv_store_args_v1 {
    const struct fp8kv_kv_layout_v1 *cache;
    int32_t in_dtype; /* enum fp8kv_kv_abi_dtype: raw f32, f16 or bf16 bits */
    int32_t num_tokens;
    const void *key, *value;     /* [num_tokens, num_heads, head_size] */
    const int64_t *slot_mapping; /* [num_tokens] */
    float k_scale, v_scale;      /* per tensor */
    uint8_t *key_cache, *value_cache;
    const float *k_head_scales, *v_head_scales; /* per KV head: [num_heads]; else NULL */
    float *k_scale_cache, *v_scale_cache;       /* per token and head: written; else NULL */
};

/* gather + dequant: for each sequence i, its seq_lens[i] tokens (block
 * block_table[i * max_blocks_per_seq + pos / block_size]) read from the key (is_key) or value
 * cache, decoded, multiplied by scale in f32 and rounded to out_dtype, into
 * out [sum seq_lens, num_heads, head_size], sequences one after the other. */
struct fp8kv_kv_gather_args_v1 {
    const struct fp8kv_kv_layout_v1 *cache;
    int32_t is_key, num_seqs, max_blocks_per_seq, out_dtype;
    const uint8_t *cache_data;
    const int32_t *block_table, *seq_lens;
    float scale; /* per tensor */
    void *out;
    const float *head_scales; /* per KV head: [num_heads]; else NULL */
    const float *scale_cache; /* per token and head: the cache's scales; else NULL */
};

/* paged attention over the cache: a decode step (one query a sequence), or several queries a
 * sequence (multi-token decode, prefill, chunked prefill) where query_lens is given.
 * Sequence i has seq_lens[i] tokens in the cache, its queries included; its queries are its
 * last query_lens[i] tokens (NULL: one, its last): query j is token
 * p = seq_lens[i] - query_lens[i] + j and attends causally to the tokens up to itself, the
 * last `window` of them (p - window < t <= p) when window > 0. Query rows are numbered across
 * sequences, sequence 0's first: query and out are [num_query_rows, num_q_heads, head_size]
 * (elements of query_dtype and out_dtype, those of the arithmetic the kernels declare;
 * num_q_heads a multiple of num_heads: q head h reads kv head h / (num_q_heads / num_heads)).
 * For each row and q head, out = softmax(softmax_scale * q.k) . v over its tokens, k and v
 * dequantized with their scales; a sequence of length 0 has one query row, whose output is
 * zeros. The harness passes query_lens and window only to kernels whose attention_features
 * say they take them (NULL and 0 otherwise). */
struct fp8kv_kv_attention_args_v1 {
    const struct fp8kv_kv_layout_v1 *cache;
    int32_t num_q_heads, num_seqs, max_blocks_per_seq;
    const float *query;
    const uint8_t *key_cache, *value_cache;
    const int32_t *block_table, *seq_lens;
    float k_scale, v_scale, softmax_scale; /* k_scale, v_scale: per tensor */
    float *out;
    const float *k_head_scales, *v_head_scales; /* per KV head: [num_heads]; else NULL */
    const float *k_scale_cache, *v_scale_cache; /* per token and head; else NULL */
    int32_t query_dtype, out_dtype;             /* enum fp8kv_kv_abi_dtype */
    const int32_t *query_lens; /* [num_seqs], 1 <= query_lens[i] <= max(seq_lens[i], 1); NULL */
    int32_t num_query_rows;    /* the sum of query_lens; num_seqs where query_lens is NULL */
    int32_t window;            /* > 0: sliding-window attention over that many tokens; 0: none */
};

/* fp8kv_kv_query_span: the tokens [*first, *end) that query j (0-based) of a sequence of
 * seq_len tokens and query_len queries attends to under window (0: none): the rule above, the
 * one home of it. A sequence of length 0 gives the empty span. */
static inline void fp8kv_kv_query_span(int32_t seq_len, int32_t query_len, int32_t j,
                                       int32_t window, int32_t *first, int32_t *end)
{
    const int32_t e = seq_len > 0 ? seq_len - query_len + j + 1 : 0;
    *end = e;
    *first = window > 0 && e > window ? e - window : 0;
}

/* What an attention entry point takes besides a decode step (bits of attention_features). */
#define FP8KV_KV_ATTENTION_QUERIES 1u /* query_lens: several queries a sequence, causal */
#define FP8KV_KV_ATTENTION_WINDOW 2u  /* window: sliding-window attention */
#define FP8KV_KV_ATTENTION_ALL (FP8KV_KV_ATTENTION_QUERIES | FP8KV_KV_ATTENTION_WINDOW)

struct fp8kv_kv_kernels_v1 {
    uint32_t abi_version; /* FP8KV_KV_ABI_VERSION */
    const char *name;
    const char *format, *overflow, *inf; /* the profile implemented; NULL: any */
    uint32_t memory;                     /* enum fp8kv_kv_abi_memory */
    void *ctx;                           /* handed to every entry point */
    int (*store)(void *ctx, const struct fp8kv_kv_store_args_v1 *args);
    int (*gather)(void *ctx, const struct fp8kv_kv_gather_args_v1 *args);       /* or NULL */
    int (*attention)(void *ctx, const struct fp8kv_kv_attention_args_v1 *args); /* or NULL */
    /* the granularities the entry points implement: FP8KV_KV_SCALES(g) bits; 0 means per
     * tensor only. check-kv reports the others' cases as not run. */
    uint32_t scale_granularities;
    /* the arithmetic the attention computes in: a preset ("f32", "tf32", "bf16", "f16",
     * "bf16-folded", "f16-folded", "fp8") or a preset with ",key=value" changes
     * (`fp8kv judge-kv --help` says them); NULL is "f32". Its outputs are judged within the
     * bound of that arithmetic (docs/DESIGN.md §5.3.1); q and out come in its dtypes. */
    const char *arithmetic;
    /* FP8KV_KV_ATTENTION_* bits: what the attention takes besides one query a sequence over
     * all its tokens; check-kv reports the cases that need the others as not run. */
    uint32_t attention_features;
    /* FP8KV_KV_PACKINGS bits: the packings of the caches the kernels take (0: separate only);
     * check-kv runs a case packed as it asks where the kernels take it, else separate. */
    uint32_t packings;
    /* FP8KV_KV_LAYOUTS bits: the cache layouts the kernels take (0: every one); check-kv
     * reports a case of another layout as not run, never calls the kernels with it. */
    uint32_t layouts;
};

/* the descriptor's type under a name no function hides: in C++ the function
 * fp8kv_kv_kernels_v1 hides the struct of the same name, so C++ kernels write this one */
typedef struct fp8kv_kv_kernels_v1 fp8kv_kv_kernels_v1_t;

/* the one symbol a KV plugin exports */
const fp8kv_kv_kernels_v1_t *fp8kv_kv_kernels_v1(void);

#ifdef __cplusplus
}
#endif
#endif
