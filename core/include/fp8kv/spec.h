/* fp8kv/spec.h — the semantic parameters of fp8 KV-cache codecs, in one place.
 *
 * Every choice real stacks disagree on (format, overflow rule, Inf policy, scale model, input
 * dtype, read output, KV-cache layout, scale granularity) is a named value here, with one table
 * of names, and every default is named once (FP8KV_DEFAULT_*). Help texts, messages and the
 * Python package list the names from these tables (fp8kv_names_list), never by hand. This
 * header and spec.c need no MPFR: the GPU build and the verifier use them too. The exact
 * arithmetic lives in oracle.h. docs/DESIGN.md "Where each choice is decided" says where the
 * other choices live.
 */
#ifndef FP8KV_SPEC_H
#define FP8KV_SPEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- formats ---------------------------------------------------------------------------- */

enum fp8kv_format_id {
    FP8KV_E4M3FN,   /* OCP: bias 7, max 448, NaN S.1111.111, signed zeros */
    FP8KV_E4M3FNUZ, /* bias 8, max 240, NaN 0x80 only, no negative zero */
    FP8KV_E5M2,     /* OCP: bias 15, max 57344, Inf S.11111.00, NaN S.11111.{01,10,11}, ±0 */
    FP8KV_E5M2FNUZ, /* bias 16, max 57344, no Inf, NaN 0x80 only, no negative zero */
    FP8KV_FORMAT_COUNT
};

/* An fp8 format: a binary format of precision 1+man_bits with subnormals, whose largest
 * finite magnitude is max_code. Every magnitude above max_code is Inf (inf_code, where the
 * format has one) or a NaN. emin_mpfr/emax_mpfr are MPFR's exponent bounds (significand in
 * [1/2, 1)) for emulating it with mpfr_subnormalize. */
struct fp8kv_format {
    enum fp8kv_format_id id;
    const char *name;
    int exp_bits, man_bits, bias;
    uint8_t max_code; /* largest finite positive code: 0x7E (e4m3fn), 0x7B (e5m2), 0x7F (fnuz) */
    uint8_t
        nan_code; /* the positive (or only) NaN code written: 0x7F (e4m3fn, e5m2), 0x80 (fnuz) */
    int nan_has_sign;      /* 1: NaN keeps the sign (0x7F / 0xFF); 0: a single NaN code */
    int has_negative_zero; /* 1: 0x80 is -0; 0: zeros and underflows are 0x00 */
    int has_inf;           /* 1: inf_code is +Inf and inf_code | 0x80 is -Inf (e5m2) */
    uint8_t inf_code;      /* 0x7C (e5m2); 0 where the format has no Inf */
    int emin_mpfr, emax_mpfr;
    double max_value;  /* 448 / 240 / 57344 */
    double min_normal; /* 2^(1 - bias): 2^-6 / 2^-7 / 2^-14 / 2^-15 */
};

/* ---- profiles: a format plus the rules that change bytes -------------------------------- */

/* What a finite value that rounds above max gives: ±max, NaN, or ±Inf (formats with Inf). */
enum fp8kv_overflow {
    FP8KV_OVERFLOW_SATFINITE,
    FP8KV_OVERFLOW_NAN,
    FP8KV_OVERFLOW_INF,
    FP8KV_OVERFLOW_COUNT
};
/* What ±Inf gives under satfinite: ±max or NaN; FP8KV_INF_INF (±Inf) goes with overflow inf. */
enum fp8kv_inf_policy { FP8KV_INF_CLAMP, FP8KV_INF_NAN, FP8KV_INF_INF, FP8KV_INF_COUNT };
enum fp8kv_nan_check { FP8KV_NAN_CHECK_CLASS, FP8KV_NAN_CHECK_STRICT, FP8KV_NAN_CHECK_COUNT };

/* Under overflow = nan the Inf policy is always nan, under overflow = inf always inf (Inf is
 * the ultimate overflow). overflow = inf exists only for formats with Inf. */
struct fp8kv_profile {
    const char *name; /* e.g. "e4m3fn_satfinite", also the vector sub-directory */
    const struct fp8kv_format *format;
    enum fp8kv_overflow overflow;
    enum fp8kv_inf_policy inf;
};

/* ---- store scale models, input dtypes, read outputs ------------------------------------- */

enum fp8kv_scale_model {
    FP8KV_MODEL_F32_DIV,       /* RNE8(RN32(x / s)) */
    FP8KV_MODEL_F32_MUL_RECIP, /* RNE8(RN32(x * RN32(1 / s))) */
    FP8KV_MODEL_F16_DIV,       /* RNE8(RN16(RN32(x / s))) */
    FP8KV_MODEL_EXACT,         /* RNE8(x / s), one rounding */
    FP8KV_MODEL_COUNT
};

enum fp8kv_dtype { FP8KV_DTYPE_F32, FP8KV_DTYPE_F16, FP8KV_DTYPE_BF16, FP8KV_DTYPE_COUNT };

/* Read models: y = decode(q) * s, rounded to the output dtype as docs/DESIGN.md §1 says. */
enum fp8kv_read_model {
    FP8KV_READ_ROUNDED, /* RN32(decode(q) * s), then one more rounding for f16/bf16 output */
    FP8KV_READ_EXACT,   /* decode(q) * s rounded once to the output dtype */
    FP8KV_READ_MODEL_COUNT
};

/* Input classes, the unit in which mismatches are counted. */
enum fp8kv_class {
    FP8KV_CLASS_ZERO,
    FP8KV_CLASS_F32_DENORMAL,
    FP8KV_CLASS_E4M3_SUBNORMAL, /* below the fp8 normal range, from half the smallest
                                   subnormal up (below that: FP8KV_CLASS_UNDERFLOW) */
    FP8KV_CLASS_NORMAL,
    FP8KV_CLASS_TIE,      /* exactly a midpoint of two adjacent fp8 values (or of max
                             and the first unrepresentable value) */
    FP8KV_CLASS_OVERFLOW, /* above the overflow midpoint */
    FP8KV_CLASS_INF,
    FP8KV_CLASS_NAN,
    FP8KV_CLASS_UNDERFLOW, /* a normal f32 below half the smallest fp8 subnormal: rounds to
                              zero (last, so the older classes keep their numbers) */
    FP8KV_CLASS_COUNT
};

/* ---- KV-cache layouts and scale granularities ------------------------------------------- */

/* The layouts of a paged KV cache (x = 16 fp8 elements; docs/DESIGN.md §4):
 *   FP8KV_LAYOUT_NHD      key and value: [num_blocks, block_size, num_heads, head_size]
 *   FP8KV_LAYOUT_SPLIT_X  key:   [num_blocks, num_heads, head_size / 16, block_size, 16]
 *                         value: [num_blocks, num_heads, head_size, block_size]
 *   FP8KV_LAYOUT_HND      key and value: [num_blocks, num_heads, block_size, head_size]
 * The numbers are those of the golden cases' caseN_meta.npy and of the KV-kernel ABI
 * (enum fp8kv_kv_abi_layout of fp8kv/kv_plugin.h, which restates them so that a plugin needs no
 * other header; kernels/cpu/kv_cache.c asserts the two equal). */
enum fp8kv_kv_layout { FP8KV_LAYOUT_NHD = 0, FP8KV_LAYOUT_SPLIT_X = 1, FP8KV_LAYOUT_HND = 2 };
#define FP8KV_KV_LAYOUT_COUNT 3

/* How the key and value caches sit in memory: two tensors (separate); one tensor
 * [2, num_blocks, ...], the key cache then the value cache (kv_first: vLLM's kv_cache); one
 * tensor [num_blocks, 2, ...], each block's keys then its values (block_first: FlashInfer's
 * paged_kv_cache). The ABI's enum fp8kv_kv_abi_packing restates them (asserted equal in
 * kernels/cpu/kv_cache.c). */
enum fp8kv_kv_packing {
    FP8KV_PACKING_SEPARATE = 0,
    FP8KV_PACKING_KV_FIRST = 1,
    FP8KV_PACKING_BLOCK_FIRST = 2
};
#define FP8KV_KV_PACKING_COUNT 3

/* Where a cache's scales are: one per tensor; one per KV head; one per token and head,
 * computed by the store from the row it writes and kept in a scale cache beside the fp8 cache
 * (fp8kv/kv_cache.h). The numbers are caseN_meta.npy's and the ABI's
 * (enum fp8kv_kv_abi_scale_granularity, asserted equal in kernels/cpu/kv_cache.c). */
enum fp8kv_kv_scale_granularity {
    FP8KV_SCALE_TENSOR = 0,
    FP8KV_SCALE_HEAD = 1,
    FP8KV_SCALE_TOKEN_HEAD = 2
};
#define FP8KV_SCALE_GRANULARITY_COUNT 3

/* ---- the tables ------------------------------------------------------------------------- */

extern const struct fp8kv_format fp8kv_formats[FP8KV_FORMAT_COUNT];
extern const struct fp8kv_profile fp8kv_profiles[];
extern const int fp8kv_profile_count;

/* Names, one table each; the index is the enum value. */
extern const char *const fp8kv_overflow_names[FP8KV_OVERFLOW_COUNT];
extern const char *const fp8kv_inf_names[FP8KV_INF_COUNT];
extern const char *const fp8kv_nan_check_names[FP8KV_NAN_CHECK_COUNT];
extern const char *const fp8kv_model_names[FP8KV_MODEL_COUNT];
extern const char *const fp8kv_dtype_names[FP8KV_DTYPE_COUNT];
extern const char *const fp8kv_read_model_names[FP8KV_READ_MODEL_COUNT];
extern const char *const fp8kv_class_names[FP8KV_CLASS_COUNT];
extern const char *const fp8kv_kv_layout_names[FP8KV_KV_LAYOUT_COUNT]; /* "nhd", "split_x", "hnd" */
extern const char *const fp8kv_scale_granularity_names[FP8KV_SCALE_GRANULARITY_COUNT];
/* "separate", "kv_first", "block_first" */
extern const char *const fp8kv_kv_packing_names[FP8KV_KV_PACKING_COUNT];

/* What each scale model and NaN check computes, in a few words for a help text: "x / s",
 * "x * RN32(1 / s)", ...; "any NaN code for a NaN", "the byte". */
extern const char *const fp8kv_model_notes[FP8KV_MODEL_COUNT];
extern const char *const fp8kv_nan_check_notes[FP8KV_NAN_CHECK_COUNT];

/* ---- defaults: what every command and function takes when it is not told ----------------- */

#define FP8KV_DEFAULT_FORMAT FP8KV_E4M3FN
#define FP8KV_DEFAULT_OVERFLOW FP8KV_OVERFLOW_SATFINITE
#define FP8KV_DEFAULT_INF FP8KV_INF_CLAMP
#define FP8KV_DEFAULT_MODEL FP8KV_MODEL_F32_DIV
#define FP8KV_DEFAULT_DTYPE FP8KV_DTYPE_F32
#define FP8KV_DEFAULT_READ_MODEL FP8KV_READ_ROUNDED
#define FP8KV_DEFAULT_NAN_CHECK FP8KV_NAN_CHECK_STRICT

/* fp8kv_default_profile: the default profile, the one of the default format, overflow rule and
 * Inf policy above (e4m3fn_satfinite). Never NULL. */
const struct fp8kv_profile *fp8kv_default_profile(void);

/* fp8kv_names_nearest: the name of names nearest to given by edit distance, when it is near
 * enough to be a slip of the keyboard (1 edit for short words, 2 or 3 for longer ones); else
 * NULL. */
const char *fp8kv_names_nearest(const char *given, const char *const *names, int count);

/* fp8kv_profile_names: the profiles' names, in table order, into names (room entries at
 * most); how many. */
int fp8kv_profile_names(const char **names, int room);

/* fp8kv_profile_named: the profile called name; else NULL with the error (fp8kv_last_error)
 * "unknown profile 'x'; did you mean 'y'? (valid: ...)". */
const struct fp8kv_profile *fp8kv_profile_named(const char *name);

/* fp8kv_names_list: the count names joined into buf (size bytes, always terminated; a list
 * too long is cut short): sep between two names, last_sep (NULL: sep) before the last one, so
 * {"a", "b", "c"} gives "a|b|c" with sep "|", "a, b or c" with ", " and " or ". Returns buf. */
char *fp8kv_names_list(const char *const *names, int count, const char *sep, const char *last_sep,
                       char *buf, size_t size);

/* fp8kv_name_index: the index of name in a table of count names, or -1 if absent. */
int fp8kv_name_index(const char *const *table, int count, const char *name);

/* fp8kv_format_by_name: the format called name, or NULL. */
const struct fp8kv_format *fp8kv_format_by_name(const char *name);

/* fp8kv_profile_find: the profile of the table with these parameters, or NULL. Under
 * overflow = nan or inf the Inf policy is ignored. */
const struct fp8kv_profile *fp8kv_profile_find(enum fp8kv_format_id format,
                                               enum fp8kv_overflow overflow,
                                               enum fp8kv_inf_policy inf);

/* fp8kv_format_alias: the format name of an ml_dtypes spelling ("float8_e4m3fn",
 * "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"), or name itself when it is none. */
const char *fp8kv_format_alias(const char *name);

/* fp8kv_profile_by_name: the profile called name, or NULL. */
const struct fp8kv_profile *fp8kv_profile_by_name(const char *name);

/* ---- bits --------------------------------------------------------------------------------- */

/* fp8kv_widen_to_f32: the f32 bits of an f16 or bf16 value given by its bits (exact:
 * every f16 and bf16 value, NaN payloads included, is an f32 value). f32 passes through. */
uint32_t fp8kv_widen_to_f32(enum fp8kv_dtype dtype, uint32_t bits);

/* fp8kv_classify_f32: the input class of the f32 with these bits, relative to format. */
enum fp8kv_class fp8kv_classify_f32(const struct fp8kv_format *format, uint32_t bits);

/* fp8kv_nan_code: the NaN code a profile's format gives for a NaN of this sign. */
uint8_t fp8kv_nan_code(const struct fp8kv_format *format, int negative);

/* fp8kv_boundary_count: entries of a format's certified boundary table (boundaries.npy):
 * max_code + 2 (one per finite code magnitude, then the first overflowing f32). */
int fp8kv_boundary_count(const struct fp8kv_format *format);

/* fp8kv_zero_code: the code of a zero (or an underflow to zero) of this sign: -0 is 0x80
 * where the format has it, else 0x00. */
uint8_t fp8kv_zero_code(const struct fp8kv_format *format, int negative);

/* fp8kv_overflow_code: the code of a finite value that rounds above max: ±max under
 * satfinite, NaN under nan, ±Inf under inf. */
uint8_t fp8kv_overflow_code(const struct fp8kv_profile *p, int negative);

/* fp8kv_infinity_code: the code of ±Inf: ±max under satfinite with Inf policy clamp, ±Inf
 * under Inf policy inf (overflow inf), NaN otherwise. */
uint8_t fp8kv_infinity_code(const struct fp8kv_profile *p, int negative);

/* fp8kv_is_inf_code: 1 if code is ±Inf of format (never, for formats without Inf). */
int fp8kv_is_inf_code(const struct fp8kv_format *format, uint8_t code);

/* fp8kv_is_nan_code: 1 if code is a NaN of format: the single NaN code, or with signed NaNs
 * every magnitude above max_code that is not Inf. */
int fp8kv_is_nan_code(const struct fp8kv_format *format, uint8_t code);

/* fp8kv_codes_match: whether a subject's code got equals the oracle's want under the NaN
 * check: class accepts any NaN code for a NaN; strict wants the byte. */
int fp8kv_codes_match(const struct fp8kv_format *format, enum fp8kv_nan_check check, uint8_t got,
                      uint8_t want);

/* fp8kv_splitmix64: the next value of the splitmix64 generator (Steele, Lea, Flood 2014) from
 * *state. Every pseudo-random set of fp8kv (vectors, KV cases, quantization data) draws from
 * it with a fixed seed, so the same data comes out everywhere. */
uint64_t fp8kv_splitmix64(uint64_t *state);

#ifdef __cplusplus
}
#endif
#endif
