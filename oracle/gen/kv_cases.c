/* kv_cases.c — the golden paged KV-cache cases: a few small stores into a paged fp8 cache, the
 * gather + dequant of what was stored, and one paged-attention decode step over it.
 *
 * The truth side only: the expected cache bytes come from fp8kv_oracle_store (model f32_div)
 * placed with this file's own layout arithmetic (restated from docs/DESIGN.md §4, never taken from
 * kernels/), each with its scale: per tensor, per KV head, or per token and head
 * (fp8kv_oracle_row_scale of the row); the gather outputs from fp8kv_oracle_read (model
 * rounded), and the attention output from MPFR at ATTN_PREC bits over the dequantized values.
 * Inputs are pseudo-random from a fixed splitmix64 seed per case, so regenerating gives the
 * same bytes.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"
#include "kv_cases.h"

/* The layouts (enum fp8kv_kv_layout of fp8kv/spec.h, whose numbers caseN_meta.npy holds):
 *   NHD      key and value [num_blocks, block_size, num_heads, head_size]
 *   SPLIT_X  key [num_blocks, num_heads, head_size / 16, block_size, 16],
 *            value [num_blocks, num_heads, head_size, block_size]
 *   HND      key and value [num_blocks, num_heads, block_size, head_size] */
#define SPLIT_X 16

#define SENTINEL 0xA5 /* every cache byte no slot writes */
#define MAX_SEQS 4
#define META_LEN 12 /* the entries of caseN_meta.npy, in meta_names' order */
#define MAX_HEADS 4
#define ATTN_PREC 128 /* bits of the attention reference */
#define OUT_DTYPES 3  /* gather outputs: f32, f16, bf16 (enum fp8kv_dtype order) */

/* Scale granularities (enum fp8kv_kv_scale_granularity of fp8kv/spec.h, the values of
 * caseN_meta.npy's entry 11): one scale per tensor, per KV head, or per token and head
 * (computed by the store from the row, kept in a scale cache). */

/* One case: its shape, what its inputs stress, and its scales (per tensor: k_scale, v_scale;
 * per head and per token: the base the inputs' scales are made from). */
struct case_def {
    enum fp8kv_kv_layout layout;
    enum fp8kv_dtype in;
    int block_size, num_heads, head_size, num_q_heads; /* num_heads <= MAX_HEADS */
    int num_seqs, seq_lens[MAX_SEQS];
    int padding; /* tokens with slot -1 */
    int extra;   /* tokens stored into a block no sequence reads (< block_size - 1) */
    float k_scale, v_scale, softmax_scale;
    enum fp8kv_kv_scale_granularity granularity;
};

/* Every case has partially filled blocks, out-of-order block tables, padding tokens (the
 * first token is always one), non-power-of-two scales with k_scale != v_scale, overflowing
 * inputs and fp8 midpoints times the scale. The last cache slot is never written (a kernel that
 * sends slot -1 to the end of the cache is caught). */
/* One case a line. */
/* clang-format off */
static const struct case_def cases[] = {
    /* NHD, f32, odd head count (3), MHA */
    {FP8KV_LAYOUT_NHD, FP8KV_DTYPE_F32, 4, 3, 8, 3, 3, {7, 2, 5}, 3, 2, 0.05f, 0.0123f, 0.35355339f, FP8KV_SCALE_TENSOR},
    /* SPLIT_X with two 16-lane chunks, f16, GQA (2 q heads per kv head) */
    {FP8KV_LAYOUT_SPLIT_X, FP8KV_DTYPE_F16, 8, 2, 32, 4, 2, {9, 3}, 2, 3, 0.0123f, 0.05f, 0.17677669f, FP8KV_SCALE_TENSOR},
    /* NHD, bf16, block size 16, GQA x3 */
    {FP8KV_LAYOUT_NHD, FP8KV_DTYPE_BF16, 16, 2, 8, 6, 2, {18, 5}, 4, 5, 0.7f, 0.1f, 0.35355339f, FP8KV_SCALE_TENSOR},
    /* SPLIT_X, f32, odd head count with GQA x2, a one-token sequence */
    {FP8KV_LAYOUT_SPLIT_X, FP8KV_DTYPE_F32, 8, 3, 16, 6, 3, {9, 1, 4}, 2, 1, 0.05f, 1.7f, 0.25f, FP8KV_SCALE_TENSOR},
    /* SPLIT_X, bf16, block size 4, three sequences, no extra tokens */
    {FP8KV_LAYOUT_SPLIT_X, FP8KV_DTYPE_BF16, 4, 2, 16, 2, 3, {5, 8, 3}, 3, 0, 0.0123f, 3.0f, 0.25f, FP8KV_SCALE_TENSOR},
    /* HND, f16, block size 16, GQA x2 */
    {FP8KV_LAYOUT_HND, FP8KV_DTYPE_F16, 16, 2, 16, 4, 2, {21, 6}, 2, 4, 0.0123f, 0.7f, 0.25f, FP8KV_SCALE_TENSOR},
    /* HND, f32, block size 32, odd head count, GQA x2 */
    {FP8KV_LAYOUT_HND, FP8KV_DTYPE_F32, 32, 3, 8, 6, 2, {40, 9}, 3, 7, 0.05f, 0.1f, 0.35355339f, FP8KV_SCALE_TENSOR},
    /* NHD, bf16, block size 64, a sequence over two blocks */
    {FP8KV_LAYOUT_NHD, FP8KV_DTYPE_BF16, 64, 2, 16, 2, 2, {70, 3}, 2, 10, 1.7f, 0.0123f, 0.25f, FP8KV_SCALE_TENSOR},
    /* SPLIT_X, f16, block size 32, one sequence over two blocks, GQA x2 */
    {FP8KV_LAYOUT_SPLIT_X, FP8KV_DTYPE_F16, 32, 2, 32, 4, 1, {33}, 1, 2, 0.1f, 0.05f, 0.17677669f, FP8KV_SCALE_TENSOR},
    /* HND, bf16, block size 64, GQA x4 (two kv heads: under overflow = nan one stays finite) */
    {FP8KV_LAYOUT_HND, FP8KV_DTYPE_BF16, 64, 2, 32, 8, 1, {65}, 2, 3, 3.0f, 0.05f, 0.17677669f, FP8KV_SCALE_TENSOR},
    /* per KV head: NHD, f32, block size 16, four heads with four scales each, GQA x2 */
    {FP8KV_LAYOUT_NHD, FP8KV_DTYPE_F32, 16, 4, 8, 8, 2, {19, 6}, 2, 3, 0.05f, 0.0123f, 0.35355339f, FP8KV_SCALE_HEAD},
    /* per KV head: SPLIT_X, bf16, block size 8, three heads, GQA x2 */
    {FP8KV_LAYOUT_SPLIT_X, FP8KV_DTYPE_BF16, 8, 3, 16, 6, 2, {11, 4}, 2, 2, 0.7f, 0.1f, 0.25f, FP8KV_SCALE_HEAD},
    /* per token and head: NHD, f16, block size 16, GQA x2 */
    {FP8KV_LAYOUT_NHD, FP8KV_DTYPE_F16, 16, 2, 16, 4, 2, {20, 7}, 3, 4, 0.0123f, 0.05f, 0.25f, FP8KV_SCALE_TOKEN_HEAD},
    /* per token and head: HND, f32, block size 32, three heads, MHA */
    {FP8KV_LAYOUT_HND, FP8KV_DTYPE_F32, 32, 3, 8, 3, 2, {37, 5}, 2, 6, 0.1f, 1.7f, 0.35355339f, FP8KV_SCALE_TOKEN_HEAD},
    /* per token and head: SPLIT_X, bf16, block size 8, GQA x2 */
    {FP8KV_LAYOUT_SPLIT_X, FP8KV_DTYPE_BF16, 8, 2, 32, 4, 3, {9, 2, 6}, 2, 1, 0.05f, 0.7f, 0.17677669f, FP8KV_SCALE_TOKEN_HEAD},
    /* NHD, bf16, head size 128 (the fast attention kernels' shape), GQA x4 */
    {FP8KV_LAYOUT_NHD, FP8KV_DTYPE_BF16, 16, 2, 128, 8, 2, {37, 12}, 2, 3, 0.05f, 0.0123f, 0.088388348f, FP8KV_SCALE_TENSOR},
};
/* clang-format on */
#define CASE_COUNT ((int)(sizeof cases / sizeof cases[0]))

/* A built case: the def's arrays, and what the oracle expects. */
struct kv_case {
    const struct case_def *def;
    int num_blocks, max_blocks, num_tokens, rows; /* rows: sum of seq_lens */
    size_t width, cache_bytes;                    /* width: num_heads * head_size */
    size_t scale_entries;                         /* of a scale cache: slots * num_heads */
    float head_scales[2][MAX_HEADS];              /* per head: [0] value, [1] key */
    uint32_t *scale_cache[2]; /* per token and head, f32 bits: [0] value, [1] key */
    uint32_t *key, *value;    /* [num_tokens][width] input bits (f16/bf16 in the low 16) */
    int64_t *slots;           /* [num_tokens] */
    int32_t *block_table;     /* [num_seqs][max_blocks] */
    int32_t seq_lens[MAX_SEQS];
    float *query; /* [num_seqs][num_q_heads][head_size] */
    uint8_t *key_cache, *value_cache;
    uint32_t *gather[OUT_DTYPES]; /* [2][rows][width]: key then value, output bits */
    double *attention;            /* [num_seqs][num_q_heads][head_size] */
};

/* ---- deterministic inputs -------------------------------------------------------------------- */

static double decoded(const struct fp8kv_format *f, unsigned code)
{
    uint32_t bits = fp8kv_oracle_decode_f32(f, (uint8_t)code);
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* quotient_value: the magnitude an input should have after division by its scale (the kinds
 * of element_kind). kind 0: an overflow (the overflow midpoint, 1.25 max, 3 max, 1000); kind 1: the
 * midpoint of two adjacent codes (the smallest subnormal and 0 included); kind 2: an exact code
 * value; kind 3: 2^e (1 + u), e in [-11, e_top], which covers underflow, subnormals and normals and
 * stays below the largest value: e_top = 6 (below half the max of the e4m3 and e5m2 formats), or
 * ilogb(max) - 1 where that is less (a format whose max is below 2^7: else every such quotient
 * would overflow). All are exact doubles. */
static double quotient_value(const struct fp8kv_format *f, int kind, uint64_t r)
{
    const unsigned max = f->max_code;
    const int e_top = ilogb(f->max_value) - 1 < 6 ? ilogb(f->max_value) - 1 : 6;
    switch (kind) {
    case 4: return decoded(f, max); /* KIND_ROW_MAX */
    case 5: return 0.0;             /* KIND_ZERO */
    case 0: {
        const double top = decoded(f, max), below = decoded(f, max - 1);
        const double overflows[4] = {top + (top - below) / 2, 1.25 * top, 3 * top, 1000};
        return overflows[r % 4];
    }
    case 1: {
        const unsigned k = 1 + (unsigned)(r % max);
        return (decoded(f, k - 1) + decoded(f, k)) / 2;
    }
    case 2: return decoded(f, (unsigned)(r % (max + 1)));
    default: {
        const int e = -11 + (int)(r % (uint64_t)(e_top + 12));
        const double u = (double)((r >> 32) & 0x7FFFFFu) / 8388608.0;
        return ldexp(1.0 + u, e);
    }
    }
}

/* input_bits: sign * q * s rounded once to the input dtype (the product is exact at 128
 * bits: 53 + 24 significant bits). */
static uint32_t input_bits(enum fp8kv_dtype dtype, double q, float s, int negative)
{
    mpfr_t v;
    mpfr_init2(v, 128);
    mpfr_set_d(v, negative ? -q : q, MPFR_RNDN);
    mpfr_mul_d(v, v, (double)s, MPFR_RNDN);
    uint32_t bits = fp8kv_oracle_round_dtype(dtype, v);
    mpfr_clear(v);
    return bits;
}

/* The kinds of quotient_value, and two more for rows scaled per token: KIND_ROW_MAX, the
 * largest finite code value (the row's amax, so the row's scale is the one its inputs were
 * made with), and KIND_ZERO. */
enum { KIND_OVERFLOW = 0, KIND_ROW_MAX = 4, KIND_ZERO = 5 };

/* row_hash: a pseudo-random word of row (token t, head h) of key (is_key) or value, apart from
 * the case's input stream (so the per-tensor cases' inputs do not depend on it). */
static uint64_t row_hash(int is_key, int t, int h)
{
    uint64_t state = 0x726F77ull ^ ((uint64_t)t << 20) ^ ((uint64_t)h << 4) ^ (uint64_t)is_key;
    return fp8kv_splitmix64(&state);
}

/* A row of a per-token case: is it all zeros, and does it hold a KIND_ROW_MAX element. */
static int zero_row(const struct case_def *c, int is_key, int t, int h)
{
    return t % 5 == 3 && h == (is_key ? 0 : c->num_heads - 1);
}

static int row_has_max(int is_key, int t, int h)
{
    return row_hash(is_key, t, h) % 3 != 2;
}

/* element_kind: what input element (token t, head h, dim d) of key (is_key) or value holds
 * under profile p. Per tensor and per head, overflows sit in kv head 0 of the key and the last
 * kv head of the value only, so under an overflow = nan profile the other heads' attention
 * outputs stay finite. Under overflow = inf the value's overflows are the largest finite value
 * instead: an Inf value makes an attention output whose exact value is ±Inf, while an f32
 * kernel whose softmax weight for that token underflows to 0 computes 0 * Inf = NaN, and no
 * NMSE can judge between them. Per token and head nothing overflows (the scale follows the
 * row): most rows hold their maximum at one dim, and some rows are zero. */
static int element_kind(const struct case_def *c, const struct fp8kv_profile *p, int is_key, int t,
                        int h, int d, uint64_t r)
{
    const int D = c->head_size;
    if (c->granularity == FP8KV_SCALE_TOKEN_HEAD) {
        if (zero_row(c, is_key, t, h))
            return KIND_ZERO;
        if (row_has_max(is_key, t, h) && d == (int)((row_hash(is_key, t, h) >> 40) % (uint64_t)D))
            return KIND_ROW_MAX;
    } else if (is_key ? h == 0 && t % 4 == 1 && d == (t * 3) % D
                      : h == c->num_heads - 1 && t % 4 == 2 && d == (t * 5) % D) {
        return is_key || p->overflow != FP8KV_OVERFLOW_INF ? KIND_OVERFLOW : KIND_ROW_MAX;
    }
    switch (r % 8) {
    case 0:
    case 1: return 1;
    case 2: return 2;
    default: return 3;
    }
}

/* input_scale: the scale the inputs of row (t, h) are made with: the tensor's, the head's, or
 * per token a scale of the row's own: a few significant bits times a power of two (so that
 * amax / max_finite is often exact), the base scale times (1 + u), or the base times a power
 * of two. The expected bytes use the scale the oracle derives from the row. */
static float input_scale(const struct kv_case *k, int is_key, int t, int h)
{
    const struct case_def *c = k->def;
    const float base = is_key ? c->k_scale : c->v_scale;
    if (c->granularity == FP8KV_SCALE_HEAD)
        return k->head_scales[is_key][h];
    if (c->granularity == FP8KV_SCALE_TENSOR)
        return base;
    const uint64_t r = row_hash(is_key, t, h);
    static const int mantissas[4] = {3, 5, 11, 13};
    switch (r % 3) {
    case 0: return (float)ldexp(mantissas[(r >> 8) % 4], -12 + (int)((r >> 12) % 8));
    case 1: return (float)((double)base * (1.0 + (double)((r >> 16) & 0xFFFF) / 65536.0));
    default: return (float)ldexp(base, (int)((r >> 16) % 5) - 2);
    }
}

static int ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

/* ---- this file's layout arithmetic ----------------------------------------------------------- */

static size_t key_at(const struct case_def *c, int64_t slot, int h, int d)
{
    const size_t bs = (size_t)c->block_size, H = (size_t)c->num_heads, D = (size_t)c->head_size;
    const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
    if (c->layout == FP8KV_LAYOUT_SPLIT_X)
        return (((block * H + (size_t)h) * (D / SPLIT_X) + (size_t)d / SPLIT_X) * bs + pos) *
                   SPLIT_X +
               (size_t)d % SPLIT_X;
    if (c->layout == FP8KV_LAYOUT_HND)
        return ((block * H + (size_t)h) * bs + pos) * D + (size_t)d;
    return ((block * bs + pos) * H + (size_t)h) * D + (size_t)d;
}

static size_t value_at(const struct case_def *c, int64_t slot, int h, int d)
{
    const size_t bs = (size_t)c->block_size, H = (size_t)c->num_heads, D = (size_t)c->head_size;
    const size_t block = (size_t)slot / bs, pos = (size_t)slot % bs;
    if (c->layout == FP8KV_LAYOUT_SPLIT_X)
        return ((block * H + (size_t)h) * D + (size_t)d) * bs + pos;
    if (c->layout == FP8KV_LAYOUT_HND)
        return ((block * H + (size_t)h) * bs + pos) * D + (size_t)d;
    return ((block * bs + pos) * H + (size_t)h) * D + (size_t)d;
}

/* ---- building a case ------------------------------------------------------------------------- */

static void case_free(struct kv_case *k)
{
    free(k->key);
    free(k->value);
    free(k->slots);
    free(k->block_table);
    free(k->query);
    free(k->key_cache);
    free(k->value_cache);
    for (int o = 0; o < OUT_DTYPES; o++)
        free(k->gather[o]);
    free(k->scale_cache[0]);
    free(k->scale_cache[1]);
    free(k->attention);
    memset(k, 0, sizeof *k);
}

static void shuffle_slots(int64_t *a, int n, uint64_t *rng)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(fp8kv_splitmix64(rng) % (uint64_t)(i + 1));
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* place_tokens: the block tables (sequence blocks a shuffled, never ascending, order of the
 * blocks but the last; unused entries point at the last block) and the slot mapping: every
 * sequence position and the extra tokens, shuffled, with padding tokens in between. */
static int place_tokens(struct kv_case *k, uint64_t *rng)
{
    const struct case_def *c = k->def;
    const int bs = c->block_size, used = k->num_blocks - 1, real = k->rows + c->extra;
    int64_t *order = malloc((size_t)used * sizeof *order);
    int64_t *slots = malloc((size_t)real * sizeof *slots);
    char *pad = calloc((size_t)k->num_tokens, 1);
    if (!order || !slots || !pad) {
        free(order);
        free(slots);
        free(pad);
        return fp8kv_fail("out of memory");
    }
    for (int b = 0; b < used; b++)
        order[b] = b;
    shuffle_slots(order, used, rng);
    int ascending = 1;
    for (int b = 1; b < used; b++)
        ascending &= order[b] > order[b - 1];
    if (ascending && used > 1) { /* not in order, whatever the seed gave */
        int64_t t = order[0];
        order[0] = order[used - 1];
        order[used - 1] = t;
    }
    int next = 0;
    for (int i = 0; i < c->num_seqs; i++)
        for (int j = 0; j < k->max_blocks; j++)
            k->block_table[i * k->max_blocks + j] =
                j < ceil_div(c->seq_lens[i], bs) ? (int32_t)order[next++] : k->num_blocks - 1;
    free(order);

    int n = 0;
    for (int i = 0; i < c->num_seqs; i++)
        for (int pos = 0; pos < c->seq_lens[i]; pos++)
            slots[n++] = (int64_t)k->block_table[i * k->max_blocks + pos / bs] * bs + pos % bs;
    for (int e = 0; e < c->extra; e++)
        slots[n++] = (int64_t)(k->num_blocks - 1) * bs + e;
    shuffle_slots(slots, real, rng);

    /* padding: c->padding distinct token positions, the first of them in front */
    for (int placed = 0; placed < c->padding;) {
        int t = placed == 0 ? 0 : (int)(fp8kv_splitmix64(rng) % (uint64_t)k->num_tokens);
        if (!pad[t]) {
            pad[t] = 1;
            placed++;
        }
    }
    for (int t = 0, r = 0; t < k->num_tokens; t++)
        k->slots[t] = pad[t] ? -1 : slots[r++];
    free(pad);
    free(slots);
    return FP8KV_OK;
}

/* scale_bits: the f32 bits of the scale that element (slot, head h) of key (is_key) or value
 * is stored and read with: the tensor's, the head's, or the expected scale cache's entry. */
static uint32_t scale_bits(const struct kv_case *k, int is_key, int64_t slot, int h)
{
    const struct case_def *c = k->def;
    float s = is_key ? c->k_scale : c->v_scale;
    if (c->granularity == FP8KV_SCALE_TOKEN_HEAD)
        return k->scale_cache[is_key][(size_t)slot * (size_t)c->num_heads + (size_t)h];
    if (c->granularity == FP8KV_SCALE_HEAD)
        s = k->head_scales[is_key][h];
    uint32_t bits;
    memcpy(&bits, &s, sizeof bits);
    return bits;
}

/* fill_inputs: key, value and query values, the expected scale caches and cache bytes. */
static void fill_inputs(struct kv_case *k, const struct fp8kv_profile *p, uint64_t *rng)
{
    const struct case_def *c = k->def;
    const struct fp8kv_format *f = p->format;
    static const double head_factors[MAX_HEADS] = {1.0, 2.5, 0.375, 7.0};
    for (int h = 0; h < c->num_heads; h++)
        for (int is_key = 0; is_key < 2; is_key++)
            k->head_scales[is_key][h] = (float)((is_key ? c->k_scale : c->v_scale) *
                                                head_factors[(h + is_key) % MAX_HEADS]);
    for (int t = 0; t < k->num_tokens; t++)
        for (int h = 0; h < c->num_heads; h++)
            for (int d = 0; d < c->head_size; d++) {
                const size_t i =
                    (size_t)t * k->width + (size_t)h * (size_t)c->head_size + (size_t)d;
                for (int is_key = 1; is_key >= 0; is_key--) {
                    const uint64_t r = fp8kv_splitmix64(rng);
                    const int kind = element_kind(c, p, is_key, t, h, d, r);
                    const double q = quotient_value(f, kind, r >> 8);
                    (is_key ? k->key : k->value)[i] =
                        input_bits(c->in, q, input_scale(k, is_key, t, h), (int)(r >> 63));
                }
            }

    /* the expected bytes, each with its scale (per token: the oracle's, from the row) */
    memset(k->key_cache, SENTINEL, k->cache_bytes);
    memset(k->value_cache, SENTINEL, k->cache_bytes);
    for (int is_key = 0; is_key < 2 && c->granularity == FP8KV_SCALE_TOKEN_HEAD; is_key++)
        memset(k->scale_cache[is_key], SENTINEL, k->scale_entries * sizeof(uint32_t));
    for (int t = 0; t < k->num_tokens; t++) {
        const int64_t slot = k->slots[t];
        if (slot < 0)
            continue;
        for (int h = 0; h < c->num_heads; h++)
            for (int is_key = 1; is_key >= 0; is_key--) {
                const uint32_t *row = (is_key ? k->key : k->value) + (size_t)t * k->width +
                                      (size_t)h * (size_t)c->head_size;
                if (c->granularity == FP8KV_SCALE_TOKEN_HEAD)
                    k->scale_cache[is_key][(size_t)slot * (size_t)c->num_heads + (size_t)h] =
                        fp8kv_oracle_row_scale(f, c->in, row, (size_t)c->head_size);
                const uint32_t s = scale_bits(k, is_key, slot, h);
                for (int d = 0; d < c->head_size; d++) {
                    const uint8_t code = fp8kv_oracle_store(p, FP8KV_MODEL_F32_DIV,
                                                            fp8kv_widen_to_f32(c->in, row[d]), s);
                    if (is_key)
                        k->key_cache[key_at(c, slot, h, d)] = code;
                    else
                        k->value_cache[value_at(c, slot, h, d)] = code;
                }
            }
    }
    /* query: uniform in [-2, 2) on a 2^-22 grid (exact f32 values) */
    const size_t nq = (size_t)c->num_seqs * (size_t)c->num_q_heads * (size_t)c->head_size;
    for (size_t i = 0; i < nq; i++)
        k->query[i] = (float)((double)(fp8kv_splitmix64(rng) >> 40) * 0x1p-22 - 2.0);
}

/* fill_gather: the expected gather outputs, in every output dtype, by fp8kv_oracle_read (model
 * rounded) of each element's code with its scale. */
static void fill_gather(struct kv_case *k, const struct fp8kv_profile *p)
{
    const struct case_def *c = k->def;
    const size_t half = (size_t)k->rows * k->width;
    for (int is_key = 1; is_key >= 0; is_key--) {
        size_t row = 0;
        for (int i = 0; i < c->num_seqs; i++)
            for (int pos = 0; pos < c->seq_lens[i]; pos++, row++) {
                const int64_t slot =
                    (int64_t)k->block_table[i * k->max_blocks + pos / c->block_size] *
                        c->block_size +
                    pos % c->block_size;
                for (int h = 0; h < c->num_heads; h++) {
                    const uint32_t s = scale_bits(k, is_key, slot, h);
                    for (int d = 0; d < c->head_size; d++) {
                        const uint8_t code = is_key ? k->key_cache[key_at(c, slot, h, d)]
                                                    : k->value_cache[value_at(c, slot, h, d)];
                        const size_t at = (is_key ? 0 : half) + row * k->width +
                                          (size_t)h * (size_t)c->head_size + (size_t)d;
                        for (int o = 0; o < OUT_DTYPES; o++)
                            k->gather[o][at] = fp8kv_oracle_read(p->format, FP8KV_READ_ROUNDED,
                                                                 (enum fp8kv_dtype)o, code, s);
                    }
                }
            }
    }
}

static void set_f32_bits(mpfr_ptr v, uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    mpfr_set_flt(v, x, MPFR_RNDN);
}

/* fill_attention: out = sum_t softmax(s)_t v_t with s_t = softmax_scale * q . k_t, at
 * ATTN_PREC bits over the dequantized K and V (the f32 gather outputs: RN32(decode(q) * s),
 * the values a kernel multiplies), then rounded to double. A NaN anywhere in the inputs of an
 * output makes it NaN (written as the canonical 0x7FF8000000000000). The caller has widened
 * the exponent range. */
static int fill_attention(struct kv_case *k)
{
    const struct case_def *c = k->def;
    const int D = c->head_size, group = c->num_q_heads / c->num_heads;
    const uint32_t *kf = k->gather[FP8KV_DTYPE_F32];
    const uint32_t *vf = kf + (size_t)k->rows * k->width;
    int longest = 0;
    for (int i = 0; i < c->num_seqs; i++)
        longest = c->seq_lens[i] > longest ? c->seq_lens[i] : longest;
    mpfr_t *w = malloc((size_t)(longest > 0 ? longest : 1) * sizeof *w);
    if (!w)
        return fp8kv_fail("out of memory");
    for (int t = 0; t < longest; t++)
        mpfr_init2(w[t], ATTN_PREC);
    mpfr_t acc, x, y, max, sum;
    mpfr_inits2(ATTN_PREC, acc, x, y, max, sum, (mpfr_ptr)0);

    size_t row0 = 0;
    for (int i = 0; i < c->num_seqs; row0 += (size_t)c->seq_lens[i], i++)
        for (int qh = 0; qh < c->num_q_heads; qh++) {
            const size_t at = ((size_t)i * (size_t)c->num_q_heads + (size_t)qh) * (size_t)D;
            const float *q = k->query + at;
            const size_t head = (size_t)(qh / group) * (size_t)D;
            const int n = c->seq_lens[i];
            /* scores (each product q_d k_td is exact at ATTN_PREC bits) */
            for (int t = 0; t < n; t++) {
                const uint32_t *kt = kf + (row0 + (size_t)t) * k->width + head;
                mpfr_set_zero(acc, 1);
                for (int d = 0; d < D; d++) {
                    set_f32_bits(x, kt[d]);
                    mpfr_mul_d(x, x, (double)q[d], MPFR_RNDN);
                    mpfr_add(acc, acc, x, MPFR_RNDN);
                }
                mpfr_mul_d(w[t], acc, (double)c->softmax_scale, MPFR_RNDN);
            }
            /* softmax weights, unnormalized: exp(s_t - max) */
            mpfr_set(max, w[0], MPFR_RNDN);
            for (int t = 1; t < n; t++)
                mpfr_max(max, max, w[t], MPFR_RNDN);
            mpfr_set_zero(sum, 1);
            for (int t = 0; t < n; t++) {
                mpfr_sub(w[t], w[t], max, MPFR_RNDN);
                mpfr_exp(w[t], w[t], MPFR_RNDN);
                mpfr_add(sum, sum, w[t], MPFR_RNDN);
            }
            /* the weighted sum of the values, normalized once */
            for (int d = 0; d < D; d++) {
                mpfr_set_zero(acc, 1);
                for (int t = 0; t < n; t++) {
                    set_f32_bits(x, vf[(row0 + (size_t)t) * k->width + head + (size_t)d]);
                    mpfr_mul(y, w[t], x, MPFR_RNDN);
                    mpfr_add(acc, acc, y, MPFR_RNDN);
                }
                mpfr_div(acc, acc, sum, MPFR_RNDN);
                double out = mpfr_get_d(acc, MPFR_RNDN);
                if (mpfr_nan_p(acc)) {
                    const uint64_t nan_bits = 0x7FF8000000000000ull;
                    memcpy(&out, &nan_bits, sizeof out);
                }
                k->attention[at + (size_t)d] = out;
            }
        }
    mpfr_clears(acc, x, y, max, sum, (mpfr_ptr)0);
    for (int t = 0; t < longest; t++)
        mpfr_clear(w[t]);
    free(w);
    return FP8KV_OK;
}

/* build_case: allocates and fills case number index of profile p. 0 or FP8KV_ERR. */
static int build_case(struct kv_case *k, const struct fp8kv_profile *p, int index)
{
    const struct case_def *c = &cases[index];
    memset(k, 0, sizeof *k);
    k->def = c;
    int used = 0;
    for (int i = 0; i < c->num_seqs; i++) {
        used += ceil_div(c->seq_lens[i], c->block_size);
        k->max_blocks = ceil_div(c->seq_lens[i], c->block_size) > k->max_blocks
                            ? ceil_div(c->seq_lens[i], c->block_size)
                            : k->max_blocks;
        k->rows += c->seq_lens[i];
        k->seq_lens[i] = c->seq_lens[i];
    }
    k->max_blocks += 1; /* one unused entry per row */
    k->num_blocks = used + 1;
    k->num_tokens = k->rows + c->extra + c->padding;
    k->width = (size_t)c->num_heads * (size_t)c->head_size;
    k->cache_bytes = (size_t)k->num_blocks * (size_t)c->block_size * k->width;
    k->scale_entries = (size_t)k->num_blocks * (size_t)c->block_size * (size_t)c->num_heads;
    const size_t elems = (size_t)k->num_tokens * k->width, half = (size_t)k->rows * k->width;
    const size_t nq = (size_t)c->num_seqs * (size_t)c->num_q_heads * (size_t)c->head_size;
    k->key = malloc(elems * sizeof *k->key);
    k->value = malloc(elems * sizeof *k->value);
    k->slots = malloc((size_t)k->num_tokens * sizeof *k->slots);
    k->block_table = malloc((size_t)c->num_seqs * (size_t)k->max_blocks * sizeof *k->block_table);
    k->query = malloc(nq * sizeof *k->query);
    k->key_cache = malloc(k->cache_bytes);
    k->value_cache = malloc(k->cache_bytes);
    int ok = k->key && k->value && k->slots && k->block_table && k->query && k->key_cache &&
             k->value_cache;
    for (int o = 0; o < OUT_DTYPES; o++)
        ok &= (k->gather[o] = malloc(2 * half * sizeof *k->gather[o])) != NULL;
    ok &= (k->attention = malloc(nq * sizeof *k->attention)) != NULL;
    for (int is_key = 0; is_key < 2 && c->granularity == FP8KV_SCALE_TOKEN_HEAD; is_key++)
        ok &= (k->scale_cache[is_key] = malloc(k->scale_entries * sizeof(uint32_t))) != NULL;
    if (!ok) {
        case_free(k);
        return fp8kv_fail("out of memory");
    }
    uint64_t rng = 0x6B76636173650000ull + (uint64_t)index; /* "kvcase" */
    if (place_tokens(k, &rng) != 0) {
        case_free(k);
        return FP8KV_ERR;
    }
    fill_inputs(k, p, &rng);
    fill_gather(k, p);
    if (fill_attention(k) != 0) {
        case_free(k);
        return FP8KV_ERR;
    }
    return FP8KV_OK;
}

/* ---- writing --------------------------------------------------------------------------------- */

/* add: writes <profile>/kv/case<index>_<name> (rows, or rows x cols when cols > 0) and records
 * it; does nothing when rc already holds an error, so calls chain. */
static int add(int rc, struct fp8kv_manifest *m, const struct fp8kv_profile *p, int index,
               const char *name, const char *description, enum fp8kv_npy_dtype dtype, size_t rows,
               size_t cols, const void *data)
{
    if (rc != 0)
        return rc;
    char path[256], desc[320];
    snprintf(path, sizeof path, "%s/kv/case%d_%s", p->name, index, name);
    snprintf(desc, sizeof desc, "%s", description);
    size_t shape[2] = {rows, cols};
    return fp8kv_manifest_add_npy(m, p->name, "kv", path, desc, dtype, cols ? 2 : 1, shape, data);
}

/* narrow16: the low 16 bits of n values, for f16/bf16 arrays (malloc'd). */
static uint16_t *narrow16(const uint32_t *v, size_t n)
{
    uint16_t *out = malloc(n ? n * sizeof *out : 1);
    for (size_t i = 0; out && i < n; i++)
        out[i] = (uint16_t)v[i];
    return out;
}

static int write_case(struct fp8kv_manifest *m, const struct fp8kv_profile *p, int index,
                      const struct kv_case *k)
{
    const struct case_def *c = k->def;
    char layout[16]; /* the layout's name in capitals, as the manifest has always said it */
    snprintf(layout, sizeof layout, "%s", fp8kv_kv_layout_names[c->layout]);
    for (char *l = layout; *l; l++)
        *l = (char)toupper((unsigned char)*l);
    const int32_t meta[META_LEN] = {k->num_blocks, c->block_size,  c->num_heads,  c->head_size,
                                    c->layout,     (int32_t)c->in, k->num_tokens, c->num_seqs,
                                    k->max_blocks, c->num_q_heads, CASE_COUNT,    c->granularity};
    /* k_scale and v_scale are NaN where the scales are not per tensor */
    const float unused = NAN;
    float scales_f[3] = {c->granularity == FP8KV_SCALE_TENSOR ? c->k_scale : unused,
                         c->granularity == FP8KV_SCALE_TENSOR ? c->v_scale : unused,
                         c->softmax_scale};
    uint32_t scales[3];
    memcpy(scales, scales_f, sizeof scales);
    const size_t elems = (size_t)k->num_tokens * k->width, half = (size_t)k->rows * k->width;
    const size_t qrows = (size_t)c->num_seqs * (size_t)c->num_q_heads;
    const char *in = fp8kv_dtype_names[c->in];
    char desc[256];

    snprintf(desc, sizeof desc,
             "int32 [%d]: num_blocks, block_size, num_heads, head_size, layout (%d = %s), "
             "in_dtype, num_tokens, num_seqs, max_blocks_per_seq, num_q_heads, case_count, "
             "scale granularity (%d = %s)",
             META_LEN, (int)c->layout, layout, (int)c->granularity,
             fp8kv_scale_granularity_names[c->granularity]);
    int rc = add(0, m, p, index, "meta.npy", desc, FP8KV_NPY_I32, META_LEN, 0, meta);

    /* inputs */
    const int wide = c->in == FP8KV_DTYPE_F32;
    uint16_t *key16 = wide ? NULL : narrow16(k->key, elems);
    uint16_t *value16 = wide ? NULL : narrow16(k->value, elems);
    if (rc == 0 && !wide && (!key16 || !value16))
        rc = fp8kv_fail("out of memory");
    for (int is_key = 1; is_key >= 0; is_key--) {
        snprintf(desc, sizeof desc, "%s input, %s bits [num_tokens, num_heads * head_size]",
                 is_key ? "key" : "value", in);
        const void *data = wide ? (const void *)(is_key ? k->key : k->value)
                                : (const void *)(is_key ? key16 : value16);
        rc = add(rc, m, p, index, is_key ? "key.npy" : "value.npy", desc,
                 wide ? FP8KV_NPY_U32 : FP8KV_NPY_U16, (size_t)k->num_tokens, k->width, data);
    }
    free(key16);
    free(value16);
    rc = add(rc, m, p, index, "slot_mapping.npy", "slot of each token; -1: padding, not stored",
             FP8KV_NPY_I64, (size_t)k->num_tokens, 0, k->slots);
    rc = add(rc, m, p, index, "scales.npy",
             "f32 bits of k_scale, v_scale (NaN unless the scales are per tensor), softmax_scale",
             FP8KV_NPY_U32, 3, 0, scales);
    if (c->granularity == FP8KV_SCALE_HEAD) {
        uint32_t packed[2 * MAX_HEADS]; /* key's heads, then value's */
        for (int h = 0; h < c->num_heads; h++) {
            memcpy(&packed[h], &k->head_scales[1][h], sizeof(uint32_t));
            memcpy(&packed[c->num_heads + h], &k->head_scales[0][h], sizeof(uint32_t));
        }
        rc = add(rc, m, p, index, "head_scales.npy",
                 "f32 bits of the per-KV-head scales [2, num_heads]: row 0 key, row 1 value",
                 FP8KV_NPY_U32, 2, (size_t)c->num_heads, packed);
    }
    if (c->granularity == FP8KV_SCALE_TOKEN_HEAD) {
        uint32_t *both = malloc(2 * k->scale_entries * sizeof *both);
        if (rc == 0 && !both)
            rc = fp8kv_fail("out of memory");
        if (both) {
            memcpy(both, k->scale_cache[1], k->scale_entries * sizeof *both);
            memcpy(both + k->scale_entries, k->scale_cache[0], k->scale_entries * sizeof *both);
        }
        rc = add(rc, m, p, index, "scale_cache.npy",
                 "expected scale caches, f32 bits [2, num_blocks * block_size * num_heads] (row 0 "
                 "key, row 1 value; entry slot * num_heads + head): RN32(amax / max_finite) of "
                 "each written row; entries no slot writes are 0xa5a5a5a5",
                 FP8KV_NPY_U32, 2, k->scale_entries, both);
        free(both);
    }
    rc = add(rc, m, p, index, "block_table.npy",
             "block of each sequence's i-th block_size positions; unused entries name an "
             "unread block",
             FP8KV_NPY_I32, (size_t)c->num_seqs, (size_t)k->max_blocks, k->block_table);
    rc = add(rc, m, p, index, "seq_lens.npy", "tokens of each sequence", FP8KV_NPY_I32,
             (size_t)c->num_seqs, 0, k->seq_lens);
    rc = add(rc, m, p, index, "query.npy", "attention query [num_seqs * num_q_heads, head_size]",
             FP8KV_NPY_F32, qrows, (size_t)c->head_size, k->query);

    /* expected outputs */
    rc = add(rc, m, p, index, "key_cache.npy",
             "expected key cache bytes (f32_div store); bytes no slot writes are 0xa5",
             FP8KV_NPY_U8, k->cache_bytes, 0, k->key_cache);
    rc = add(rc, m, p, index, "value_cache.npy",
             "expected value cache bytes (f32_div store); bytes no slot writes are 0xa5",
             FP8KV_NPY_U8, k->cache_bytes, 0, k->value_cache);
    uint16_t *g16 = NULL;
    for (int o = 0; o < OUT_DTYPES && rc == 0; o++) {
        char name[32];
        snprintf(name, sizeof name, "gather_%s.npy", fp8kv_dtype_names[o]);
        snprintf(desc, sizeof desc,
                 "gather + dequant, %s bits (rounded read model); row 0 key, row 1 value",
                 fp8kv_dtype_names[o]);
        const void *data = k->gather[o];
        if (o != FP8KV_DTYPE_F32) {
            free(g16);
            data = g16 = narrow16(k->gather[o], 2 * half);
            if (!g16)
                rc = fp8kv_fail("out of memory");
        }
        rc = add(rc, m, p, index, name, desc, o == FP8KV_DTYPE_F32 ? FP8KV_NPY_U32 : FP8KV_NPY_U16,
                 2, half, data);
    }
    free(g16);
    snprintf(desc, sizeof desc,
             "attention output, %d-bit MPFR over the dequantized K/V, rounded to f64", ATTN_PREC);
    rc = add(rc, m, p, index, "attention.npy", desc, FP8KV_NPY_F64, qrows, (size_t)c->head_size,
             k->attention);
    return rc;
}

int fp8kv_gen_kv_cases(struct fp8kv_manifest *m, const struct fp8kv_profile *p)
{
    struct fp8kv_exprange saved;
    fp8kv_exprange_widen(&saved);
    int rc = 0;
    for (int i = 0; i < CASE_COUNT && rc == 0; i++) {
        struct kv_case k;
        rc = build_case(&k, p, i);
        if (rc == 0)
            rc = write_case(m, p, i, &k);
        case_free(&k);
    }
    fp8kv_exprange_restore(&saved);
    return rc;
}
