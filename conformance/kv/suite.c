/* kv/suite.c — fp8kv/kv_suite.h: the engine suite's cases, generated from their seeds.
 *
 * Everything here is integer arithmetic and IEEE operations in a fixed order (no libm function
 * but sqrt, which IEEE rounds correctly), so a case's bytes, and their digest, are the same on
 * every machine. */
#include "fp8kv/kv_suite.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/digest.h"
#include "fp8kv/npy.h"

#define MAX_SEQS 64
#define HIGH_BLOCK_ID 65536 /* the first block id a 16-bit index cannot hold */

/* A case of the suite: its shape, its sequences (lens[0] == 0: num_seqs lengths drawn from
 * 1..max_len), what its queries stress, and its seed. */
struct spec {
    const char *name;
    enum fp8kv_kv_layout layout;
    int block_size, kv_heads, q_heads, head_size, num_seqs;
    int lens[8];
    int max_len;
    int score_gain;  /* 1; larger: every query scaled, scores past exp's f32 range */
    int high_blocks; /* block ids around and past HIGH_BLOCK_ID */
    float k_scale, v_scale;
    uint64_t seed;
    int queries[8]; /* the queries of each sequence (0: 1, a decode step): its last tokens */
    int window;     /* sliding-window attention over the last `window` tokens; 0: none */
    enum fp8kv_kv_packing packing; /* the caches as one tensor, as the engines of that layout
                                      allocate them (FlashInfer's [num_blocks, 2, ...], vLLM's
                                      [2, num_blocks, ...]); separate: two */
};

/* clang-format off */
static const struct spec specs[] = {
    {"d128-gqa4-bs16-8x8192", FP8KV_LAYOUT_NHD, 16, 8, 32, 128, 8,
     {8192, 8191, 4097, 2048, 513, 257, 17, 1}, 0, 1, 0, 0.0372f, 0.0191f, 0x656e67696e6531ull,
     {0}, 0,
     FP8KV_PACKING_BLOCK_FIRST},
    {"d64-mha-bs32-batch64", FP8KV_LAYOUT_HND, 32, 4, 4, 64, 64, {0}, 1500, 1, 0, 0.05f,
     0.0123f, 0x656e67696e6532ull, {0}, 0,
     FP8KV_PACKING_SEPARATE},
    {"d256-gqa8-bs64", FP8KV_LAYOUT_NHD, 64, 2, 16, 256, 4, {8200, 3000, 129, 2}, 0, 1, 0,
     0.0123f, 0.07f, 0x656e67696e6533ull, {0}, 0,
     FP8KV_PACKING_SEPARATE},
    {"d128-gqa8-hnd-bs32-partition-edges", FP8KV_LAYOUT_HND, 32, 4, 32, 128, 6,
     {512, 513, 1023, 1024, 1025, 2049}, 0, 1, 0, 0.1f, 0.0372f, 0x656e67696e6534ull, {0}, 0,
     FP8KV_PACKING_BLOCK_FIRST},
    {"d128-mha-large-scores", FP8KV_LAYOUT_NHD, 16, 2, 2, 128, 4, {100, 1000, 37, 3000}, 0,
     60, 0, 0.0372f, 0.05f, 0x656e67696e6535ull, {0}, 0,
     FP8KV_PACKING_SEPARATE},
    {"d64-gqa4-block-ids-past-65535", FP8KV_LAYOUT_NHD, 16, 1, 4, 64, 3, {700, 333, 64}, 0, 1,
     1, 0.0191f, 0.1f, 0x656e67696e6536ull, {0}, 0,
     FP8KV_PACKING_SEPARATE},
    {"d128-gqa4-multi-token-decode-2..8", FP8KV_LAYOUT_NHD, 16, 8, 32, 128, 8,
     {4096, 2049, 1025, 513, 257, 100, 17, 8}, 0, 1, 0, 0.0372f, 0.0191f, 0x656e67696e6537ull,
     {8, 7, 6, 5, 4, 3, 2, 8}, 0,
     FP8KV_PACKING_KV_FIRST},
    {"d64-gqa2-prefill-and-chunked-prefill", FP8KV_LAYOUT_NHD, 16, 2, 4, 64, 4,
     {512, 300, 64, 17}, 0, 1, 0, 0.05f, 0.0123f, 0x656e67696e6538ull, {512, 100, 64, 9}, 0,
     FP8KV_PACKING_KV_FIRST},
    {"d128-mha-sliding-window-256", FP8KV_LAYOUT_HND, 16, 2, 2, 128, 3, {1000, 300, 257}, 0, 1,
     0, 0.0123f, 0.05f, 0x656e67696e6539ull, {4, 300, 1}, 256,
     FP8KV_PACKING_SEPARATE},
};
/* clang-format on */
#define SPEC_COUNT ((int)(sizeof specs / sizeof specs[0]))

int fp8kv_suite_case_count(void)
{
    return SPEC_COUNT;
}

/* ---- deterministic draws ---------------------------------------------------------------- */

static double uniform(uint64_t *state) /* [0, 1) */
{
    return (double)(fp8kv_splitmix64(state) >> 11) * 0x1p-53;
}

/* Irwin-Hall: four uniforms, centred and scaled to variance 1 (no libm: the same bits
 * everywhere). */
static double normalish(uint64_t *state)
{
    double s = 0.0;
    for (int i = 0; i < 4; i++)
        s += uniform(state);
    return (s - 2.0) * 1.7320508075688772;
}

/* The finite codes of a decode table sorted by value, for nearest-value lookups. */
struct code_table {
    int n;
    float value[256];
    uint8_t code[256];
    uint8_t nan_code;
};

static int code_table_make(const float *decode, struct code_table *t)
{
    t->n = 0;
    t->nan_code = 0;
    int have_nan = 0;
    for (int q = 0; q < 256; q++) {
        if (isnan(decode[q]) && !have_nan) {
            t->nan_code = (uint8_t)q;
            have_nan = 1;
        }
        if (!isfinite(decode[q]))
            continue;
        int at = t->n++;
        while (at > 0 && t->value[at - 1] > decode[q]) { /* insertion: ties keep code order */
            t->value[at] = t->value[at - 1];
            t->code[at] = t->code[at - 1];
            at--;
        }
        t->value[at] = decode[q];
        t->code[at] = (uint8_t)q;
    }
    return have_nan ? FP8KV_OK : fp8kv_fail("engine suite: the format has no NaN code");
}

/* nearest: the code whose value is nearest x (the lower one on a tie). */
static uint8_t nearest(const struct code_table *t, double x)
{
    int lo = 0, hi = t->n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if ((double)t->value[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return fabs((double)t->value[hi] - x) < fabs(x - (double)t->value[lo]) ? t->code[hi]
                                                                           : t->code[lo];
}

/* ln(n) to within a few percent, from n's bit length (no libm). */
static double ln_approx(int n)
{
    int bits = 0;
    while ((n >> bits) > 1)
        bits++;
    const double frac = (double)n / (double)(1 << bits); /* [1, 2) */
    return 0.6931471805599453 * bits + (frac - 1.0) * (1.0 - 0.3 * (frac - 1.0));
}

/* ---- the case ------------------------------------------------------------------------------ */

void fp8kv_suite_case_free(struct fp8kv_suite_case *c)
{
    free(c->seq_lens);
    free(c->query_lens);
    free(c->block_table);
    free(c->query);
    free(c->key_cache);
    free(c->value_cache);
    memset(c, 0, sizeof *c);
}

static int64_t slot_of(const struct fp8kv_suite_case *c, int seq, int t)
{
    const int bs = c->shape.block_size;
    return (int64_t)c->block_table[(size_t)seq * c->max_blocks + t / bs] * bs + t % bs;
}

/* The sequences and their blocks: lengths, a shuffled assignment of block ids. */
static int make_tables(const struct spec *s, struct fp8kv_suite_case *c, uint64_t *state)
{
    int used = 0;
    c->seq_lens = malloc((size_t)s->num_seqs * sizeof *c->seq_lens);
    if (!c->seq_lens)
        return fp8kv_fail("out of memory");
    c->query_lens = malloc((size_t)s->num_seqs * sizeof *c->query_lens);
    if (!c->query_lens)
        return fp8kv_fail("out of memory");
    c->rows = 0;
    for (int i = 0; i < s->num_seqs; i++) {
        const int n =
            s->lens[0] ? s->lens[i] : 1 + (int)(fp8kv_splitmix64(state) % (uint64_t)s->max_len);
        c->seq_lens[i] = n;
        c->query_lens[i] = i < 8 && s->queries[i] > 0 ? s->queries[i] : 1;
        c->rows += c->query_lens[i];
        const int b = (n + s->block_size - 1) / s->block_size;
        c->max_blocks = b + 1 > c->max_blocks ? b + 1 : c->max_blocks;
        used += b;
    }
    const int first = s->high_blocks ? HIGH_BLOCK_ID - used / 2 : 0;
    const int count = used + 7; /* 7 blocks no sequence owns */
    c->shape = (struct fp8kv_cache_shape){first + count, s->block_size, s->kv_heads,
                                          s->head_size,  s->layout,     FP8KV_PACKING_SEPARATE};
    c->block_table = calloc((size_t)s->num_seqs * c->max_blocks, sizeof *c->block_table);
    int32_t *ids = malloc((size_t)count * sizeof *ids);
    if (!c->block_table || !ids) {
        free(ids);
        return fp8kv_fail("out of memory");
    }
    for (int b = 0; b < count; b++)
        ids[b] = first + b;
    for (int b = count - 1; b > 0; b--) {
        const int j = (int)(fp8kv_splitmix64(state) % (uint64_t)(b + 1));
        const int32_t t = ids[b];
        ids[b] = ids[j];
        ids[j] = t;
    }
    for (int i = 0, next = 0; i < s->num_seqs; i++)
        for (int j = 0; j * s->block_size < c->seq_lens[i]; j++)
            c->block_table[(size_t)i * c->max_blocks + j] = ids[next++];
    free(ids);
    return FP8KV_OK;
}

/* The caches: NaN codes everywhere, then each token's codes, nearest to N(0, 1) / scale. */
static int make_caches(struct fp8kv_suite_case *c, const struct code_table *t, uint64_t *state)
{
    const size_t bytes = fp8kv_cache_bytes(&c->shape);
    c->key_cache = malloc(bytes);
    c->value_cache = malloc(bytes);
    if (!c->key_cache || !c->value_cache)
        return fp8kv_fail("out of memory (engine-suite caches of %zu bytes)", bytes);
    memset(c->key_cache, t->nan_code, bytes);
    memset(c->value_cache, t->nan_code, bytes);
    const int H = c->shape.num_heads, D = c->shape.head_size;
    for (int i = 0; i < c->num_seqs; i++)
        for (int tok = 0; tok < c->seq_lens[i]; tok++) {
            const int64_t slot = slot_of(c, i, tok);
            for (int h = 0; h < H; h++)
                for (int d = 0; d < D; d++) {
                    c->key_cache[fp8kv_key_offset(&c->shape, slot, h, d)] =
                        nearest(t, normalish(state) / c->k_scale);
                    c->value_cache[fp8kv_value_offset(&c->shape, slot, h, d)] =
                        nearest(t, normalish(state) / c->v_scale);
                }
        }
    return FP8KV_OK;
}

/* aim: q += gain * k / |k|^2 * (delta / softmax_scale), so that token's score gains about
 * delta over a random key's. */
static void aim(const struct fp8kv_suite_case *c, float *q, int seq, int tok, int kvh, double delta)
{
    const int D = c->shape.head_size;
    const int64_t slot = slot_of(c, seq, tok);
    double norm = 0.0;
    double k[256];
    for (int d = 0; d < D; d++) {
        k[d] =
            (double)c->decode[c->key_cache[fp8kv_key_offset(&c->shape, slot, kvh, d)]] * c->k_scale;
        norm += k[d] * k[d];
    }
    if (!(norm > 0.0))
        return;
    for (int d = 0; d < D; d++)
        q[d] = (float)((double)q[d] + k[d] / norm * (delta / c->softmax_scale));
}

/* The queries: random, and in three heads of four aimed at a few tokens (the last, the first,
 * a partition edge and its neighbour), so that those tokens carry most of the weight. */
static int make_queries(const struct spec *s, struct fp8kv_suite_case *c, uint64_t *state)
{
    const int D = s->head_size, group = s->q_heads / s->kv_heads;
    c->query = malloc((size_t)c->rows * s->q_heads * D * sizeof *c->query);
    if (!c->query)
        return fp8kv_fail("out of memory");
    for (int i = 0, row = 0; i < s->num_seqs; i++)
        for (int j = 0; j < c->query_lens[i]; j++, row++)
            for (int h = 0; h < s->q_heads; h++) {
                float *q = c->query + ((size_t)row * s->q_heads + h) * D;
                for (int d = 0; d < D; d++)
                    q[d] = (float)(normalish(state) * s->score_gain);
                /* the tokens this query sees: [lo, hi) */
                const int hi = c->seq_lens[i] - c->query_lens[i] + j + 1, kvh = h / group;
                const int lo = s->window > 0 && hi > s->window ? hi - s->window : 0, n = hi - lo;
                const double lift = ln_approx(n + 1);
                switch (h % 4) {
                case 1: aim(c, q, i, hi - 1, kvh, lift + 1.0); break;
                case 2: aim(c, q, i, lo, kvh, lift + 0.5); break;
                case 3: {
                    const int edge = lo + (n > 256 ? (n - 1) / 256 * 256 : n / 2);
                    aim(c, q, i, edge, kvh, lift + 1.5);
                    if (edge > lo)
                        aim(c, q, i, edge - 1, kvh, lift);
                    break;
                }
                default: break;
                }
            }
    return FP8KV_OK;
}

/* The digest of a case's inputs: of each array's digest, in order. */
static int inputs_digest(struct fp8kv_suite_case *c)
{
    const size_t bytes = fp8kv_cache_bytes(&c->shape);
    const size_t q = (size_t)c->rows * c->num_q_heads * c->shape.head_size;
    const struct {
        const void *p;
        size_t n;
    } parts[] = {{c->seq_lens, (size_t)c->num_seqs * sizeof(int32_t)},
                 {c->block_table, (size_t)c->num_seqs * c->max_blocks * sizeof(int32_t)},
                 {c->query, q * sizeof(float)},
                 {c->key_cache, bytes},
                 {c->value_cache, bytes}};
    /* a decode case's digest is of its five arrays; a case of more queries adds its lengths */
    char all[6 * FP8KV_SHA256_HEX_LEN + 1] = "";
    for (size_t i = 0; i < 5; i++)
        if (fp8kv_sha256_buffer(parts[i].p, parts[i].n, all + i * FP8KV_SHA256_HEX_LEN) != 0)
            return FP8KV_ERR;
    if (c->rows > c->num_seqs &&
        fp8kv_sha256_buffer(c->query_lens, (size_t)c->num_seqs * sizeof(int32_t),
                            all + 5 * FP8KV_SHA256_HEX_LEN) != 0)
        return FP8KV_ERR;
    return fp8kv_sha256_buffer(all, strlen(all), c->digest);
}

/* The committed digests (kv/suite_digests.inc, `fp8kv suite --digests`). */
struct committed {
    const char *profile;
    int index;
    const char *inputs;
    const char *reference[5]; /* under each combination of rounding_texts */
};
static const struct committed committed[] = {
#include "kv/suite_digests.inc"
    {NULL, 0, NULL, {NULL}}};

/* The combinations of the roundings a reference reproduces that the presets have: q's dtype,
 * and K and V scaled into a dtype or folded; as an arithmetic's text. */
#define ROUNDINGS 5
static const char *const rounding_texts[ROUNDINGS] = {
    "f32", "f32,q=bf16,kv_type=bf16", "f32,q=f16,kv_type=f16", "f32,q=bf16,kv=folded",
    "f32,q=f16,kv=folded"};

static int rounding_of(const struct fp8kv_attention_arith *a)
{
    for (int i = 0; i < ROUNDINGS; i++) {
        struct fp8kv_attention_arith r;
        if (fp8kv_attention_arith_parse(rounding_texts[i], &r) == 0 && r.q == a->q &&
            r.kv == a->kv && (a->kv == FP8KV_ATTN_KV_FOLDED || r.kv_type == a->kv_type))
            return i;
    }
    return -1;
}

static const struct committed *committed_of(const char *profile, int index)
{
    for (const struct committed *k = committed; k->profile; k++)
        if (strcmp(k->profile, profile) == 0 && k->index == index)
            return k;
    return NULL;
}

/* shape_of: case index's parameters, sequences and block table into c (state: the seed's
 * generator, after them). */
static int shape_of(int index, struct fp8kv_suite_case *c, uint64_t *state)
{
    memset(c, 0, sizeof *c);
    if (index < 0 || index >= SPEC_COUNT)
        return fp8kv_fail("unknown engine-suite case %d: the suite has cases 0..%d", index,
                          SPEC_COUNT - 1);
    const struct spec *s = &specs[index];
    c->index = index;
    c->case_count = SPEC_COUNT;
    snprintf(c->name, sizeof c->name, "%s", s->name);
    c->num_seqs = s->num_seqs;
    c->num_q_heads = s->q_heads;
    c->k_scale = s->k_scale;
    c->v_scale = s->v_scale;
    c->softmax_scale = (float)(1.0 / sqrt((double)s->head_size)); /* exact for 64, 256 */
    c->window = s->window;
    c->packing = s->packing;
    *state = s->seed;
    const int rc = make_tables(s, c, state);
    if (rc != 0)
        fp8kv_suite_case_free(c);
    return rc;
}

int fp8kv_suite_case_shape(int index, struct fp8kv_suite_case *c)
{
    uint64_t state;
    return shape_of(index, c, &state);
}

/* generate: case index of profile p, unchecked. */
static int generate(const char *dir, const struct fp8kv_profile *p, int index,
                    struct fp8kv_suite_case *c)
{
    uint64_t state;
    if (shape_of(index, c, &state) != 0)
        return FP8KV_ERR;
    const struct spec *s = &specs[index];
    struct fp8kv_npy decode = {0};
    struct code_table t;
    int rc = fp8kv_load_vector_file(dir, p, "decode.npy", FP8KV_NPY_F32, 256, 0, &decode);
    if (rc == 0) {
        memcpy(c->decode, decode.data, sizeof c->decode);
        rc = code_table_make(c->decode, &t);
    }
    fp8kv_npy_free(&decode);
    if (rc == 0)
        rc = make_caches(c, &t, &state);
    if (rc == 0)
        rc = make_queries(s, c, &state);
    if (rc == 0)
        rc = inputs_digest(c);
    if (rc != 0)
        fp8kv_suite_case_free(c);
    return rc;
}

int fp8kv_suite_case_make(const char *dir, const struct fp8kv_profile *p, int index,
                          struct fp8kv_suite_case *c)
{
    int rc = generate(dir, p, index, c);
    if (rc != 0)
        return rc;
    const struct committed *k = committed_of(p->name, index);
    if (!k)
        rc = fp8kv_fail("engine-suite case %d of %s has no committed digest (kv/suite_digests.inc)",
                        index, p->name);
    else if (strcmp(k->inputs, c->digest) != 0)
        rc = fp8kv_fail("engine-suite case %d (%s) of %s: its inputs' digest %.16s... is not the "
                        "committed %.16s...: the generator changed (regenerate the digests with "
                        "`fp8kv suite --digests` only if that is intended)",
                        index, c->name, p->name, c->digest, k->inputs);
    if (rc != 0)
        fp8kv_suite_case_free(c);
    return rc;
}

void fp8kv_suite_case_words(const struct fp8kv_suite_case *c, char *buf, size_t size)
{
    int lo = c->seq_lens[0], hi = c->seq_lens[0];
    for (int i = 1; i < c->num_seqs; i++) {
        lo = c->seq_lens[i] < lo ? c->seq_lens[i] : lo;
        hi = c->seq_lens[i] > hi ? c->seq_lens[i] : hi;
    }
    char queries[64] = "";
    if (c->rows > c->num_seqs)
        snprintf(queries, sizeof queries, ", %d query rows", c->rows);
    if (c->window)
        snprintf(queries + strlen(queries), sizeof queries - strlen(queries), ", window %d",
                 c->window);
    char packed[32] = "";
    if (c->packing != FP8KV_PACKING_SEPARATE)
        snprintf(packed, sizeof packed, " packed %s", fp8kv_kv_packing_names[c->packing]);
    snprintf(buf, size, "%s: %s%s, %d x %d heads (q %d), block %d, %d seqs of %d..%d tokens%s",
             c->name, fp8kv_kv_layout_names[c->shape.layout], packed, c->shape.num_heads,
             c->shape.head_size, c->num_q_heads, c->shape.block_size, c->num_seqs, lo, hi, queries);
}

/* ---- the reference --------------------------------------------------------------------------- */

struct suite_problem {
    const struct fp8kv_suite_case *c;
    const struct fp8kv_attention_arith *a;
};

static void suite_query(void *ctx, int row, int qh, double *q)
{
    const struct suite_problem *sp = ctx;
    const int D = sp->c->shape.head_size;
    const float *src = sp->c->query + ((size_t)row * sp->c->num_q_heads + qh) * D;
    for (int d = 0; d < D; d++)
        q[d] = fp8kv_attention_round(src[d], sp->a->q, 0);
}

/* A row as the arithmetic multiplies it: scaled, RN_kv(RN32(decode x scale)); folded, decode
 * x scale exactly. */
static void suite_row(void *ctx, int is_key, int seq, int t, int g, double *row)
{
    const struct suite_problem *sp = ctx;
    const struct fp8kv_suite_case *c = sp->c;
    const int64_t slot = slot_of(c, seq, t);
    const uint8_t *cache = is_key ? c->key_cache : c->value_cache;
    const float scale = is_key ? c->k_scale : c->v_scale;
    for (int d = 0; d < c->shape.head_size; d++) {
        const size_t o = is_key ? fp8kv_key_offset(&c->shape, slot, g, d)
                                : fp8kv_value_offset(&c->shape, slot, g, d);
        const float value = c->decode[cache[o]];
        row[d] = sp->a->kv == FP8KV_ATTN_KV_FOLDED
                     ? (double)value * scale
                     : fp8kv_attention_round(value * scale, sp->a->kv_type, 0);
    }
}

int fp8kv_suite_reference(const struct fp8kv_suite_case *c, const struct fp8kv_attention_arith *a,
                          struct fp8kv_attention_ref *ref, char digest[FP8KV_SHA256_HEX_LEN + 1])
{
    struct suite_problem sp = {c, a};
    const struct fp8kv_attention_problem pr = {c->num_seqs,
                                               c->num_q_heads,
                                               c->shape.num_heads,
                                               c->shape.head_size,
                                               c->seq_lens,
                                               (double)c->softmax_scale,
                                               &sp,
                                               suite_query,
                                               suite_row,
                                               c->query_lens,
                                               c->window};
    if (fp8kv_attention_reference(&pr, a, ref) != 0)
        return FP8KV_ERR;
    if (fp8kv_sha256_buffer(ref->exact, ref->count * sizeof(double), digest) != 0) {
        fp8kv_attention_ref_free(ref);
        return FP8KV_ERR;
    }
    return FP8KV_OK;
}

int fp8kv_suite_reference_checked(const struct fp8kv_suite_case *c, const char *profile,
                                  const struct fp8kv_attention_arith *a,
                                  struct fp8kv_attention_ref *ref)
{
    char digest[FP8KV_SHA256_HEX_LEN + 1];
    const int rounding = rounding_of(a);
    const struct committed *k = committed_of(profile, c->index);
    if (fp8kv_suite_reference(c, a, ref, digest) != 0)
        return FP8KV_ERR;
    if (rounding >= 0 && (!k || strcmp(k->reference[rounding], digest) != 0)) {
        fp8kv_attention_ref_free(ref);
        return fp8kv_fail("engine-suite case %d of %s: the reference under %s has digest %.16s..., "
                          "not the committed %.16s...: the reference changed",
                          c->index, profile, rounding_texts[rounding], digest,
                          k ? k->reference[rounding] : "(none)");
    }
    return FP8KV_OK;
}

/* ---- kept references --------------------------------------------------------------------------
 * A case's exact reference under an arithmetic depends on the case's inputs (their digest and
 * the decode table they are read through), its parameters (its index, in this build) and the
 * arithmetic's fields, nothing else; it costs far more than judging an output against it
 * (case 6's prefill: about 1.6 s on two cores, the judging milliseconds). A process that judges
 * many outputs of one case (pytest over an engine's variants and faults, check-kv over several
 * kernels) keeps the last 32 references (every case under a few arithmetics; at most about 26
 * bytes an output each, some 27 MiB for the largest case 32 times), each checked against its
 * committed digest when made, so every verdict is the one a fresh computation would give. */
#define KEPT_REFERENCES 32

struct kept_reference {
    int valid, index;
    char digest[FP8KV_SHA256_HEX_LEN + 1];
    float decode[256];
    struct fp8kv_attention_arith arith;
    unsigned long long last_used;
    struct fp8kv_attention_ref ref;
};

static struct kept_reference kept[KEPT_REFERENCES];
static unsigned long long kept_clock;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static int same_arithmetic(const struct fp8kv_attention_arith *x,
                           const struct fp8kv_attention_arith *y)
{
    return x->q == y->q && x->kv == y->kv && x->kv_type == y->kv_type && x->dot == y->dot &&
           x->p == y->p && x->out == y->out && x->exp_ulps == y->exp_ulps && x->tile == y->tile;
}

/* kept_reference_of: c's reference under a, kept or made (and then kept, in place of the least
 * recently used); NULL on failure (the error set). Called with kept_lock held; the reference
 * stays valid until the lock is released. */
static const struct fp8kv_attention_ref *kept_reference_of(const struct fp8kv_suite_case *c,
                                                           const char *profile,
                                                           const struct fp8kv_attention_arith *a)
{
    struct kept_reference *slot = &kept[0];
    for (int i = 0; i < KEPT_REFERENCES; i++) {
        struct kept_reference *k = &kept[i];
        if (k->valid && k->index == c->index && strcmp(k->digest, c->digest) == 0 &&
            memcmp(k->decode, c->decode, sizeof k->decode) == 0 && same_arithmetic(&k->arith, a)) {
            k->last_used = ++kept_clock;
            return &k->ref;
        }
        if (!k->valid || (slot->valid && k->last_used < slot->last_used))
            slot = k;
    }
    if (slot->valid)
        fp8kv_attention_ref_free(&slot->ref);
    slot->valid = 0;
    if (fp8kv_suite_reference_checked(c, profile, a, &slot->ref) != 0)
        return NULL;
    slot->valid = 1;
    slot->index = c->index;
    memcpy(slot->digest, c->digest, sizeof slot->digest);
    memcpy(slot->decode, c->decode, sizeof slot->decode);
    slot->arith = *a;
    slot->last_used = ++kept_clock;
    return &slot->ref;
}

int fp8kv_suite_judge_attention(const struct fp8kv_suite_case *c, const char *profile,
                                const char *subject, const struct fp8kv_attention_arith *a,
                                const void *y, struct fp8kv_check *chk)
{
    char words[192], detail[256];
    fp8kv_suite_case_words(c, words, sizeof words);
    if (snprintf(detail, sizeof detail, "engine/case%d %s, arithmetic %s%s", c->index, words,
                 a->name, rounding_of(a) < 0 ? " (no committed reference digest)" : "") >=
        (int)sizeof detail)
        detail[sizeof detail - 1] = '\0'; /* words, never parsed */
    pthread_mutex_lock(&kept_lock);
    const struct fp8kv_attention_ref *ref = kept_reference_of(c, profile, a);
    if (ref) {
        fp8kv_check_init(chk, "kv-attention-engine", subject, profile, detail);
        fp8kv_attention_judge(ref, a, y, c->num_q_heads, c->shape.head_size, chk);
        chk->nmse_reported = 1;
    }
    pthread_mutex_unlock(&kept_lock);
    return ref ? FP8KV_OK : FP8KV_ERR;
}

int fp8kv_suite_print_digests(const char *dir, FILE *out)
{
    fprintf(out, "/* kv/suite_digests.inc — written by `fp8kv suite --digests`: per profile and "
                 "engine-suite case,\n * the SHA-256 of its inputs and of its reference's exact "
                 "values under each of\n * kv/suite.c's rounding_texts. Do not edit. */\n");
    for (int i = 0; i < fp8kv_profile_count; i++)
        for (int index = 0; index < SPEC_COUNT; index++) {
            const struct fp8kv_profile *p = &fp8kv_profiles[i];
            struct fp8kv_suite_case c;
            if (generate(dir, p, index, &c) != 0)
                return FP8KV_ERR;
            fprintf(out, "{\"%s\", %d, \"%s\",\n {", p->name, index, c.digest);
            for (int r = 0; r < ROUNDINGS; r++) {
                struct fp8kv_attention_arith a;
                char digest[FP8KV_SHA256_HEX_LEN + 1];
                struct fp8kv_attention_ref ref;
                if (fp8kv_attention_arith_parse(rounding_texts[r], &a) != 0 ||
                    fp8kv_suite_reference(&c, &a, &ref, digest) != 0) {
                    fp8kv_suite_case_free(&c);
                    return FP8KV_ERR;
                }
                fp8kv_attention_ref_free(&ref);
                fprintf(out, "%s\"%s\"", r ? ",\n  " : "", digest);
            }
            fprintf(out, "}},\n");
            fflush(out);
            fp8kv_suite_case_free(&c);
        }
    return FP8KV_OK;
}
