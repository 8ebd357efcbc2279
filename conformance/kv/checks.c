/* kv/checks.c — the KV-cache checks of fp8kv/checks.h: a target's store, gather + dequant and
 * paged attention against the golden KV cases, and the quantization error of store-then-read.
 *
 * Each path is judged on its own: the read and attention checks run on the golden cache
 * bytes, not on what the target's store wrote, so one wrong path fails one check. Cache and
 * output buffers start filled with SENTINEL bytes (the generator's value for cache bytes no
 * slot writes), so a kernel that writes where it must not, or leaves an output unwritten,
 * shows up as a mismatch. Bytes and bits compare exactly, NaNs included (sign and payload:
 * the CPU reference and the oracle agree on them). Loading, validating and judging a golden
 * case is kv/judge.c's (fp8kv/kv_judge.h): this file runs the subjects on the cases.
 */
#include "fp8kv/checks.h"
#include "fp8kv/kv_attention.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/kv_suite.h"
#include "kv/call.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/npy.h"

#define SENTINEL FP8KV_KV_SENTINEL
#define ATTENTION_THRESHOLD FP8KV_KV_ATTENTION_THRESHOLD
#define OUT_DTYPES 3 /* f32, f16, bf16: enum fp8kv_kv_dtype order */

/* Appends "; kernel: <plan>" to detail when the subject says how it runs attention for these
 * arguments (a GPU launcher's configuration), so that the report records which one ran. */
static void append_attention_plan(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                                  const struct fp8kv_cache_shape *shape, int num_q_heads,
                                  const int32_t *seq_lens, int num_seqs, char *detail, size_t size)
{
    int longest = 0;
    for (int i = 0; i < num_seqs; i++)
        longest = seq_lens[i] > longest ? seq_lens[i] : longest;
    char plan[64];
    if (!subject->attention_plan ||
        subject->attention_plan(subject->ctx, cfg, shape, num_q_heads, num_seqs, longest, plan,
                                sizeof plan) != 0)
        return;
    const size_t used = strlen(detail);
    snprintf(detail + used, size - used, "; kernel: %s", plan);
}

/* ---- store, read and attention on the golden cases --------------------------------------- */

/* The subject's KV entry points through the KV ABI (kv/call.c stages device memory): 0 or the
 * subject's failure (FP8KV_ERR_SUBJECT with its message). The scales' granularity is k's. */
static int run_store(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                     const struct fp8kv_cache_shape *shape, enum fp8kv_kv_dtype in, const void *key,
                     const void *value, int num_tokens, const int64_t *slots,
                     const struct fp8kv_kv_scales *k, const struct fp8kv_kv_scales *v, uint8_t *kc,
                     uint8_t *vc)
{
    const struct fp8kv_kv_layout_v1 layout = fp8kv_kv_abi_layout(shape, cfg, k->granularity);
    const struct fp8kv_kv_store_args_v1 a = {&layout,  in,        num_tokens,   key,         value,
                                             slots,    k->tensor, v->tensor,    kc,          vc,
                                             k->heads, v->heads,  k->cache_out, v->cache_out};
    struct fp8kv_kv_call call;
    fp8kv_kv_call_store(&call, &a);
    return fp8kv_kv_call_run(subject->kv, &call);
}

static int run_gather(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                      const struct fp8kv_cache_shape *shape, int is_key, const uint8_t *cache,
                      const int32_t *table, int max_blocks, const int32_t *lens, int num_seqs,
                      const struct fp8kv_kv_scales *scale, enum fp8kv_kv_dtype out, void *dst)
{
    const struct fp8kv_kv_layout_v1 layout = fp8kv_kv_abi_layout(shape, cfg, scale->granularity);
    const struct fp8kv_kv_gather_args_v1 a = {&layout,       is_key, num_seqs,     max_blocks,
                                              out,           cache,  table,        lens,
                                              scale->tensor, dst,    scale->heads, scale->cache};
    struct fp8kv_kv_call call;
    fp8kv_kv_call_gather(&call, &a);
    return fp8kv_kv_call_run(subject->kv, &call);
}

/* run_attention: the subject's attention over the cache; queries NULL is a decode step (one
 * query a sequence), else several queries a sequence and a window (KV ABI 3). */
static int run_attention(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                         const struct fp8kv_cache_shape *shape, const void *query, int q_heads,
                         const uint8_t *kc, const uint8_t *vc, const int32_t *table, int max_blocks,
                         const int32_t *lens, int num_seqs, const struct fp8kv_kv_queries *queries,
                         const struct fp8kv_kv_scales *k, const struct fp8kv_kv_scales *v,
                         float softmax_scale, enum fp8kv_kv_dtype q_dtype,
                         enum fp8kv_kv_dtype out_dtype, void *out)
{
    const struct fp8kv_kv_layout_v1 layout = fp8kv_kv_abi_layout(shape, cfg, k->granularity);
    const int rows = fp8kv_kv_query_rows(queries, num_seqs);
    if (rows < 0)
        return fp8kv_fail("attention: more than 2^31 query rows");
    const struct fp8kv_kv_attention_args_v1 a = {&layout,   q_heads,
                                                 num_seqs,  max_blocks,
                                                 query,     kc,
                                                 vc,        table,
                                                 lens,      k->tensor,
                                                 v->tensor, softmax_scale,
                                                 out,       k->heads,
                                                 v->heads,  k->cache,
                                                 v->cache,  q_dtype,
                                                 out_dtype, queries ? queries->lens : NULL,
                                                 rows,      queries ? queries->window : 0};
    struct fp8kv_kv_call call;
    fp8kv_kv_call_attention(&call, &a);
    return fp8kv_kv_call_run(subject->kv, &call);
}

/* query_in: the case's f32 query as a kernel declaring dtype q is given it (RNE), n elements. */
static void *query_in(const float *query, size_t n, enum fp8kv_kv_dtype q)
{
    void *out = malloc(n * fp8kv_kv_dtype_size(q) + 1);
    for (size_t i = 0; out && i < n; i++) {
        if (q == FP8KV_KV_F32)
            ((float *)out)[i] = query[i];
        else
            ((uint16_t *)out)[i] = q == FP8KV_KV_BF16 ? fp8kv_f32_to_bf16_rne(query[i])
                                                      : fp8kv_f32_to_f16_rne(query[i]);
    }
    return out;
}

/* tensor_scales: a per-tensor scale as the scales of a cache. */
static struct fp8kv_kv_scales tensor_scales(float scale)
{
    return (struct fp8kv_kv_scales){FP8KV_SCALE_TENSOR, scale, NULL, NULL, NULL};
}

static int check_store(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                       struct fp8kv_codec_cfg cfg, const struct fp8kv_subject *subject,
                       struct fp8kv_results *out)
{
    const double t0 = fp8kv_now();
    const size_t entries = c->granularity == FP8KV_SCALE_TOKEN_HEAD ? c->scale_entries : 0;
    uint8_t *kc = malloc(c->cache_bytes), *vc = malloc(c->cache_bytes);
    float *ksc = malloc(entries * sizeof *ksc + 1), *vsc = malloc(entries * sizeof *vsc + 1);
    int rc = kc && vc && ksc && vsc ? FP8KV_OK : fp8kv_fail("out of memory");
    if (rc == 0) {
        memset(kc, SENTINEL, c->cache_bytes);
        memset(vc, SENTINEL, c->cache_bytes);
        memset(ksc, SENTINEL, entries * sizeof *ksc);
        memset(vsc, SENTINEL, entries * sizeof *vsc);
        struct fp8kv_kv_scales ks = c->k_scales, vs = c->v_scales;
        ks.cache_out = entries ? ksc : NULL;
        vs.cache_out = entries ? vsc : NULL;
        rc = run_store(subject, cfg, &c->shape, c->in, c->key.data, c->value.data, c->num_tokens,
                       c->slots.data, &ks, &vs, kc, vc);
    }
    if (rc == 0) {
        const struct fp8kv_kv_stored stored = {kc, vc, ksc, vsc};
        struct fp8kv_check chk;
        fp8kv_kv_judge_store(c, p, subject->name, &stored, &chk, NULL);
        fp8kv_check_finish(&chk, fp8kv_now() - t0);
        rc = fp8kv_results_add(out, &chk);
    }
    free(kc);
    free(vc);
    free(ksc);
    free(vsc);
    return rc;
}

static int check_read(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                      struct fp8kv_codec_cfg cfg, const struct fp8kv_subject *subject,
                      enum fp8kv_kv_dtype odt, struct fp8kv_results *out)
{
    const double t0 = fp8kv_now();
    const size_t half = c->rows * c->width, esize = fp8kv_kv_dtype_size(odt);
    unsigned char *got = malloc(2 * half * esize + 1);
    if (!got)
        return fp8kv_fail("out of memory");
    memset(got, SENTINEL, 2 * half * esize);
    int rc = run_gather(subject, cfg, &c->shape, 1, c->key_cache.data, c->block_table.data,
                        c->max_blocks, c->seq_lens.data, c->num_seqs, &c->k_scales, odt, got);
    if (rc == 0)
        rc = run_gather(subject, cfg, &c->shape, 0, c->value_cache.data, c->block_table.data,
                        c->max_blocks, c->seq_lens.data, c->num_seqs, &c->v_scales, odt,
                        got + half * esize);
    struct fp8kv_check chk;
    if (rc == 0)
        rc = fp8kv_kv_judge_gather(c, p, subject->name, odt, got, &chk);
    if (rc == 0) {
        fp8kv_check_finish(&chk, fp8kv_now() - t0);
        rc = fp8kv_results_add(out, &chk);
    }
    free(got);
    return rc;
}

static int check_attention(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                           struct fp8kv_codec_cfg cfg, const struct fp8kv_subject *subject,
                           struct fp8kv_results *out)
{
    const double t0 = fp8kv_now();
    struct fp8kv_attention_arith arith;
    if (fp8kv_attention_arith_parse(subject->kv->arithmetic, &arith) != 0)
        return fp8kv_fail("%s: %s", subject->name, fp8kv_last_error());
    const enum fp8kv_kv_dtype q_dtype = fp8kv_attention_kv_dtype(arith.q),
                              out_dtype = fp8kv_attention_kv_dtype(arith.out);
    const size_t D = (size_t)c->shape.head_size, n = (size_t)c->num_seqs * c->num_q_heads * D;
    void *y = malloc(n * fp8kv_kv_dtype_size(out_dtype) + 1);
    void *q = query_in(c->query.data, n, q_dtype);
    if (!y || !q) {
        free(y);
        free(q);
        return fp8kv_fail("out of memory");
    }
    memset(y, SENTINEL, n * fp8kv_kv_dtype_size(out_dtype));
    int rc = run_attention(subject, cfg, &c->shape, q, c->num_q_heads, c->key_cache.data,
                           c->value_cache.data, c->block_table.data, c->max_blocks,
                           c->seq_lens.data, c->num_seqs, NULL, &c->k_scales, &c->v_scales,
                           c->softmax_scale, q_dtype, out_dtype, y);
    free(q);
    char plan[96] = "";
    struct fp8kv_check chk;
    if (rc == 0) {
        append_attention_plan(subject, cfg, &c->shape, c->num_q_heads, c->seq_lens.data,
                              c->num_seqs, plan, sizeof plan);
        rc = fp8kv_kv_judge_attention(c, p, subject->name, &arith, y, plan, &chk);
    }
    free(y);
    if (rc != 0)
        return rc;
    fp8kv_check_finish(&chk, fp8kv_now() - t0);
    return fp8kv_results_add(out, &chk);
}

/* not_run: an information row for a case whose layout or scale granularity the subject does
 * not implement: nothing of it ran, and the row says so. */
static int not_run(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                   const struct fp8kv_subject *subject, struct fp8kv_results *out)
{
    char what[96], detail[256];
    if (!fp8kv_kv_kernels_layout(subject->kv, c->shape.layout))
        snprintf(what, sizeof what, "not run: %s takes no %s layout", subject->name,
                 fp8kv_kv_layout_names[c->shape.layout]);
    else
        snprintf(what, sizeof what, "not run: %s implements no scales per %s", subject->name,
                 c->granularity == FP8KV_SCALE_HEAD ? "KV head" : "token and head");
    fp8kv_kv_case_describe(c, what, detail, sizeof detail);
    struct fp8kv_check chk;
    fp8kv_check_init(&chk, "kv-case", subject->name, p->name, detail);
    chk.gated = 0;
    fp8kv_check_finish(&chk, 0.0);
    return fp8kv_results_add(out, &chk);
}

int fp8kv_check_kv(const char *dir, const struct fp8kv_profile *p,
                   const struct fp8kv_subject *subject, struct fp8kv_results *out)
{
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    int count = 1; /* case 0 says how many there are */
    for (int index = 0; index < count; index++) {
        struct fp8kv_kv_case c;
        int rc = fp8kv_kv_case_load(dir, p, index, &c);
        if (rc == 0 && index == 0)
            count = c.case_count;
        const int store = fp8kv_subject_can(subject, FP8KV_CAP_STORE);
        const int gather = fp8kv_subject_can(subject, FP8KV_CAP_GATHER);
        if (rc == 0 && (!fp8kv_kv_kernels_scale(subject->kv, c.granularity) ||
                        !fp8kv_kv_kernels_layout(subject->kv, c.shape.layout))) {
            rc = not_run(&c, p, subject, out);
            fp8kv_kv_case_free(&c);
            if (rc != 0)
                return rc;
            continue;
        }
        if (rc == 0 && store)
            rc = check_store(&c, p, cfg, subject, out);
        for (int odt = 0; odt < OUT_DTYPES && rc == 0 && gather; odt++)
            rc = check_read(&c, p, cfg, subject, (enum fp8kv_kv_dtype)odt, out);
        if (rc == 0 && fp8kv_subject_can(subject, FP8KV_CAP_ATTENTION))
            rc = check_attention(&c, p, cfg, subject, out);
        fp8kv_kv_case_free(&c);
        if (rc != 0)
            return rc;
    }
    return FP8KV_OK;
}

/* ---- quantization error ---------------------------------------------------------------------- */

#define QUANT_HEADS 4
#define QUANT_HEAD_SIZE 128
#define QUANT_TOKENS 128
#define QUANT_BLOCK 16
#define QUANT_N (QUANT_TOKENS * QUANT_HEADS * QUANT_HEAD_SIZE) /* 65536 */

enum distribution { DIST_GAUSSIAN, DIST_OUTLIERS, DIST_UNIFORM, DIST_COUNT };

static const struct {
    const char *name, *words;
} distributions[DIST_COUNT] = {
    {"quant-nmse-gaussian", "Gaussian sigma 1"},
    {"quant-nmse-outliers", "Gaussian sigma 1 with 0.1% outliers x50"},
    {"quant-nmse-uniform", "uniform [-1, 1]"},
};

/* unit: a uniform double in [0, 1) with 53 random bits. */
static double unit(uint64_t *state)
{
    return (double)(fp8kv_splitmix64(state) >> 11) * 0x1p-53;
}

static void fill_distribution(enum distribution dist, float *x, size_t n)
{
    uint64_t state = 0x7175616E74ull + (uint64_t)dist; /* "quant" */
    for (size_t i = 0; i < n; i++) {
        if (dist == DIST_UNIFORM) {
            x[i] = (float)(2.0 * unit(&state) - 1.0);
            continue;
        }
        /* Box-Muller; 1 - unit is in (0, 1], so the log is finite */
        const double r = sqrt(-2.0 * log(1.0 - unit(&state)));
        double g = r * cos(6.283185307179586 * unit(&state));
        if (dist == DIST_OUTLIERS && fp8kv_splitmix64(&state) % 1000 == 0)
            g *= 50.0;
        x[i] = (float)g;
    }
}

int fp8kv_check_quantization_nmse(const struct fp8kv_profile *p,
                                  const struct fp8kv_subject *subject, struct fp8kv_results *out)
{
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    const struct fp8kv_cache_shape shape = {
        QUANT_TOKENS / QUANT_BLOCK, QUANT_BLOCK,           QUANT_HEADS, QUANT_HEAD_SIZE,
        FP8KV_LAYOUT_NHD,           FP8KV_PACKING_SEPARATE};
    float *x = malloc(QUANT_N * sizeof *x), *y = malloc(QUANT_N * sizeof *y);
    double *ref = malloc(QUANT_N * sizeof *ref);
    uint8_t *kc = malloc(QUANT_N), *vc = malloc(QUANT_N);
    int rc = x && y && ref && kc && vc ? FP8KV_OK : fp8kv_fail("out of memory");
    int64_t slots[QUANT_TOKENS];
    int32_t table[QUANT_TOKENS / QUANT_BLOCK], len = QUANT_TOKENS;
    for (int t = 0; t < QUANT_TOKENS; t++)
        slots[t] = t;
    for (int b = 0; b < QUANT_TOKENS / QUANT_BLOCK; b++)
        table[b] = b;

    for (int dist = 0; dist < DIST_COUNT && rc == 0; dist++) {
        const double t0 = fp8kv_now();
        fill_distribution((enum distribution)dist, x, QUANT_N);
        float amax = 0.0f;
        for (size_t i = 0; i < QUANT_N; i++) {
            amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            ref[i] = x[i];
        }
        /* the per-tensor scale engines use: amax maps to the largest finite value */
        const float scale = amax / (float)p->format->max_value;
        memset(kc, SENTINEL, QUANT_N);
        memset(vc, SENTINEL, QUANT_N);
        memset(y, SENTINEL, QUANT_N * sizeof *y);
        const struct fp8kv_kv_scales tensor = tensor_scales(scale);
        rc = run_store(subject, cfg, &shape, FP8KV_KV_F32, x, x, QUANT_TOKENS, slots, &tensor,
                       &tensor, kc, vc);
        if (rc == 0)
            rc = run_gather(subject, cfg, &shape, 1, kc, table, QUANT_TOKENS / QUANT_BLOCK, &len, 1,
                            &tensor, FP8KV_KV_F32, y);
        if (rc != 0)
            break;

        struct fp8kv_check chk;
        char detail[160];
        snprintf(detail, sizeof detail,
                 "%s, %d values, per-tensor scale amax/%g = %.6g, store then read (f32)",
                 distributions[dist].words, QUANT_N, p->format->max_value, (double)scale);
        fp8kv_check_init(&chk, distributions[dist].name, subject->name, p->name, detail);
        chk.cases = QUANT_N;
        chk.gated = 0; /* reported, never gating: this is the format's error, not a bug */
        chk.has_nmse = 1;
        chk.nmse = fp8kv_nmse(y, ref, QUANT_N);
        chk.threshold = 0.0; /* not applied */
        fp8kv_check_finish(&chk, fp8kv_now() - t0);
        rc = fp8kv_results_add(out, &chk);
    }
    free(x);
    free(y);
    free(ref);
    free(kc);
    free(vc);
    return rc;
}

/* ---- long-context attention ------------------------------------------------------------------ */

/* The golden cases are short (one or a few partitions of a flash-decoding split, head sizes up
 * to 32). These cases run the long-context paths of an attention subject (many partitions,
 * 16-byte loads, 4, 2 and 1 q heads per kv head) on random finite codes, against a double-
 * precision reference over the oracle's decode table. */
#define LONG_HEAD 128
#define LONG_KV_HEADS 2
#define LONG_BLOCK 16
#define LONG_SEQS 4
static const int32_t long_lens[LONG_SEQS] = {3000, 777, 1, 0};

/* A long case: the shape, random caches, a shuffled block table and random queries. */
struct long_case {
    struct fp8kv_cache_shape shape;
    int q_heads, max_blocks;
    size_t cache, qn;
    uint8_t *kc, *vc;
    int32_t *bt;
    float *q;
    float k_scale, v_scale, softmax_scale;
};

static void long_case_free(struct long_case *lc)
{
    free(lc->kc);
    free(lc->vc);
    free(lc->bt);
    free(lc->q);
}

/* A random code of p's format that is not a NaN. */
static uint8_t random_finite_code(const struct fp8kv_profile *p, uint64_t *state)
{
    uint8_t code;
    do
        code = (uint8_t)fp8kv_splitmix64(state);
    while (fp8kv_is_nan_code(p->format, code));
    return code;
}

static int long_case_make(const struct fp8kv_profile *p, enum fp8kv_kv_layout layout, int q_heads,
                          struct long_case *lc)
{
    memset(lc, 0, sizeof *lc);
    int used = 0;
    for (int i = 0; i < LONG_SEQS; i++) {
        const int b = (long_lens[i] + LONG_BLOCK - 1) / LONG_BLOCK;
        lc->max_blocks = b > lc->max_blocks ? b : lc->max_blocks;
        used += b;
    }
    lc->shape = (struct fp8kv_cache_shape){used + 7,  LONG_BLOCK, LONG_KV_HEADS,
                                           LONG_HEAD, layout,     FP8KV_PACKING_SEPARATE};
    lc->q_heads = q_heads;
    lc->cache = fp8kv_cache_bytes(&lc->shape);
    lc->qn = (size_t)LONG_SEQS * q_heads * LONG_HEAD;
    lc->kc = malloc(lc->cache);
    lc->vc = malloc(lc->cache);
    lc->bt = calloc((size_t)LONG_SEQS * lc->max_blocks, sizeof *lc->bt);
    lc->q = malloc(lc->qn * sizeof *lc->q);
    int32_t *perm = malloc((size_t)lc->shape.num_blocks * sizeof *perm);
    if (!lc->kc || !lc->vc || !lc->bt || !lc->q || !perm) {
        free(perm);
        return fp8kv_fail("out of memory");
    }
    /* random finite codes; a shuffled block table; queries in [-1, 1) */
    uint64_t state = 0x6C6F6E67ull + (uint64_t)layout; /* "long" */
    for (size_t i = 0; i < lc->cache; i++) {
        lc->kc[i] = random_finite_code(p, &state);
        lc->vc[i] = random_finite_code(p, &state);
    }
    for (int b = 0; b < lc->shape.num_blocks; b++)
        perm[b] = b;
    for (int b = lc->shape.num_blocks - 1; b > 0; b--) {
        const int j = (int)(fp8kv_splitmix64(&state) % (uint64_t)(b + 1));
        const int32_t t = perm[b];
        perm[b] = perm[j];
        perm[j] = t;
    }
    for (int i = 0, next = 0; i < LONG_SEQS; i++)
        for (int j = 0; j * LONG_BLOCK < long_lens[i]; j++)
            lc->bt[(size_t)i * lc->max_blocks + j] = perm[next++];
    free(perm);
    for (size_t i = 0; i < lc->qn; i++)
        lc->q[i] = (float)((double)(fp8kv_splitmix64(&state) >> 11) * 0x1p-52 - 1.0);
    lc->k_scale = 0.05f;
    lc->v_scale = 0.1f;
    lc->softmax_scale = 0.08838834764831845f; /* 1/sqrt(128) */
    return FP8KV_OK;
}

/* The slot of token t of sequence i. */
static int64_t long_slot(const struct long_case *lc, int i, int t)
{
    return (int64_t)lc->bt[(size_t)i * lc->max_blocks + t / LONG_BLOCK] * LONG_BLOCK +
           t % LONG_BLOCK;
}

/* The reference: softmax(scale * q.k) . v in double over the decode table; w is scratch for
 * the longest sequence's weights. */
static void long_reference(const struct long_case *lc, const float *decode, double *w, double *ref)
{
    for (int i = 0; i < LONG_SEQS; i++)
        for (int h = 0; h < lc->q_heads; h++) {
            const int kvh = h / (lc->q_heads / LONG_KV_HEADS), n = long_lens[i];
            const float *qv = lc->q + ((size_t)i * lc->q_heads + h) * LONG_HEAD;
            double *out = ref + ((size_t)i * lc->q_heads + h) * LONG_HEAD, max = -INFINITY,
                   sum = 0.0;
            for (int t = 0; t < n; t++) {
                const int64_t slot = long_slot(lc, i, t);
                double dot = 0.0;
                for (int d = 0; d < LONG_HEAD; d++)
                    dot += (double)qv[d] *
                           (double)decode[lc->kc[fp8kv_key_offset(&lc->shape, slot, kvh, d)]] *
                           (double)lc->k_scale;
                w[t] = (double)lc->softmax_scale * dot;
                max = w[t] > max ? w[t] : max;
            }
            for (int t = 0; t < n; t++)
                sum += (w[t] = exp(w[t] - max));
            for (int d = 0; d < LONG_HEAD; d++) {
                double acc = 0.0;
                for (int t = 0; t < n; t++)
                    acc += w[t] / sum *
                           (double)decode[lc->vc[fp8kv_value_offset(&lc->shape, long_slot(lc, i, t),
                                                                    kvh, d)]] *
                           (double)lc->v_scale;
                out[d] = acc; /* n == 0: 0, as the contract says */
            }
        }
}

/* One long case: the subject's attention against the reference, NMSE threshold 1e-10. */
static int check_long_case(const struct fp8kv_profile *p, const struct fp8kv_subject *subject,
                           const float *decode, enum fp8kv_kv_layout layout, int q_heads,
                           struct fp8kv_results *out)
{
    const double t0 = fp8kv_now();
    struct long_case lc;
    int rc = long_case_make(p, layout, q_heads, &lc);
    float *y = malloc((lc.qn + 1) * sizeof *y);
    double *ref = malloc((lc.qn + 1) * sizeof *ref), *w = malloc(4096 * sizeof *w);
    if (rc == 0 && (!y || !ref || !w))
        rc = fp8kv_fail("out of memory");
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    if (rc == 0) {
        long_reference(&lc, decode, w, ref);
        memset(y, SENTINEL, lc.qn * sizeof *y);
        const struct fp8kv_kv_scales ks = tensor_scales(lc.k_scale), vs = tensor_scales(lc.v_scale);
        rc = run_attention(subject, cfg, &lc.shape, lc.q, q_heads, lc.kc, lc.vc, lc.bt,
                           lc.max_blocks, long_lens, LONG_SEQS, NULL, &ks, &vs, lc.softmax_scale,
                           FP8KV_KV_F32, FP8KV_KV_F32, y);
    }
    if (rc == 0) {
        char detail[160];
        snprintf(detail, sizeof detail,
                 "%s, %d x %d heads (q %d), block %d, lengths 3000/777/1/0, random codes, NMSE vs "
                 "double reference",
                 fp8kv_kv_layout_name(layout), LONG_KV_HEADS, LONG_HEAD, q_heads, LONG_BLOCK);
        append_attention_plan(subject, cfg, &lc.shape, q_heads, long_lens, LONG_SEQS, detail,
                              sizeof detail);
        struct fp8kv_check c;
        fp8kv_check_init(&c, "kv-attention-long", subject->name, p->name, detail);
        c.cases = lc.qn;
        c.has_nmse = 1;
        c.threshold = ATTENTION_THRESHOLD;
        c.nmse = fp8kv_nmse(y, ref, lc.qn);
        if (!(c.nmse <= c.threshold))
            for (size_t i = 0; i < lc.qn && c.failure_lines < FP8KV_MAX_FAILURE_LINES; i++)
                if (!(fabs((double)y[i] - ref[i]) <= 1e-5 * (fabs(ref[i]) + 1e-3)))
                    fp8kv_check_failure(&c, -1, "out[%zu] => %.9g  expected %.12g", i, (double)y[i],
                                        ref[i]);
        fp8kv_check_finish(&c, fp8kv_now() - t0);
        rc = fp8kv_results_add(out, &c);
    }
    long_case_free(&lc);
    free(y);
    free(ref);
    free(w);
    return rc;
}

int fp8kv_check_attention_long(const char *dir, const struct fp8kv_profile *p,
                               const struct fp8kv_subject *subject, struct fp8kv_results *out)
{
    struct fp8kv_attention_arith arith;
    if (fp8kv_attention_arith_parse(subject->kv->arithmetic, &arith) != 0)
        return fp8kv_fail("%s: %s", subject->name, fp8kv_last_error());
    if (strcmp(arith.name, "f32") != 0) { /* its reference and threshold are f32's */
        struct fp8kv_check chk;
        char detail[160];
        snprintf(detail, sizeof detail,
                 "not run: the long-context cases judge arithmetic f32, %s "
                 "declares %s",
                 subject->name, arith.name);
        fp8kv_check_init(&chk, "kv-attention-long", subject->name, p->name, detail);
        chk.gated = 0;
        fp8kv_check_finish(&chk, 0.0);
        return fp8kv_results_add(out, &chk);
    }
    struct fp8kv_npy table = {0};
    int rc = fp8kv_load_vector_file(dir, p, "decode.npy", FP8KV_NPY_F32, 256, 0, &table);
    /* NHD with 4, 2 and 1 q heads per kv head (each a path of a fast kernel), then split-x */
    for (int q_heads = 8; q_heads >= 2 && rc == 0; q_heads /= 2)
        rc = check_long_case(p, subject, table.data, FP8KV_LAYOUT_NHD, q_heads, out);
    if (rc == 0)
        rc = check_long_case(p, subject, table.data, FP8KV_LAYOUT_SPLIT_X, 8, out);
    fp8kv_npy_free(&table);
    return rc;
}

/* ---- the engine suite ------------------------------------------------------------------------ */

/* The attention features an engine-suite case needs beyond a decode step. */
static unsigned case_features(const struct fp8kv_suite_case *c)
{
    return (c->rows > c->num_seqs ? FP8KV_KV_ATTENTION_QUERIES : 0u) |
           (c->window ? FP8KV_KV_ATTENTION_WINDOW : 0u);
}

/* engine_not_run: an information row for engine-suite case c that the subject cannot take
 * (why: what it lacks). */
static int engine_not_run(const struct fp8kv_suite_case *c, const struct fp8kv_profile *p,
                          const struct fp8kv_subject *subject, const char *check, const char *why,
                          struct fp8kv_results *out)
{
    char words[192], detail[256];
    fp8kv_suite_case_words(c, words, sizeof words);
    if (snprintf(detail, sizeof detail, "not run: %s %s; engine/case%d %s", subject->name, why,
                 c->index, words) >= (int)sizeof detail)
        detail[sizeof detail - 1] = '\0'; /* words, never parsed */
    struct fp8kv_check chk;
    fp8kv_check_init(&chk, check, subject->name, p->name, detail);
    chk.gated = 0;
    fp8kv_check_finish(&chk, 0.0);
    return fp8kv_results_add(out, &chk);
}

/* The caches of an engine-suite run: the case's own (separate), or one tensor of the case's
 * packing where the subject takes it. */
struct engine_caches {
    struct fp8kv_cache_shape shape;
    const uint8_t *key, *value;
    uint8_t *packed; /* owned, or NULL */
};

/* engine_caches_of: c's caches as the subject is to be handed them; 0, or FP8KV_ERR. */
static int engine_caches_of(const struct fp8kv_subject *subject, const struct fp8kv_suite_case *c,
                            struct engine_caches *out)
{
    *out = (struct engine_caches){c->shape, c->key_cache, c->value_cache, NULL};
    if (c->packing == FP8KV_PACKING_SEPARATE ||
        !(subject->kv->packings & FP8KV_KV_PACKINGS(c->packing)))
        return FP8KV_OK;
    out->shape.packing = c->packing;
    out->packed = malloc(2 * fp8kv_cache_bytes(&c->shape) + 1);
    if (!out->packed)
        return fp8kv_fail("out of memory for a packed cache");
    fp8kv_kv_pack(&out->shape, c->key_cache, c->value_cache, out->packed);
    out->key = out->packed;
    out->value = out->packed + fp8kv_kv_packed_value_start(&out->shape);
    return FP8KV_OK;
}

/* engine_run: case c through the subject's attention, q in q_dtype, into y (out_dtype), over
 * caches kc. As the case has them (queries), or (decode) each query row as a sequence of its
 * own: the same block-table row, its length the row's last token + 1, one query; the window
 * kept. */
static int engine_run(const struct fp8kv_subject *subject, const struct fp8kv_profile *p,
                      const struct fp8kv_suite_case *c, const struct engine_caches *kc, int decode,
                      const void *q, enum fp8kv_kv_dtype q_dtype, enum fp8kv_kv_dtype out_dtype,
                      void *y)
{
    const struct fp8kv_kv_scales ks = tensor_scales(c->k_scale), vs = tensor_scales(c->v_scale);
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    if (!decode) {
        const struct fp8kv_kv_queries queries = {c->query_lens, c->window};
        return run_attention(subject, cfg, &kc->shape, q, c->num_q_heads, kc->key, kc->value,
                             c->block_table, c->max_blocks, c->seq_lens, c->num_seqs,
                             case_features(c) ? &queries : NULL, &ks, &vs, c->softmax_scale,
                             q_dtype, out_dtype, y);
    }
    int32_t *lens = malloc((size_t)c->rows * sizeof *lens);
    int32_t *table = malloc((size_t)c->rows * (size_t)c->max_blocks * sizeof *table);
    int rc = lens && table ? FP8KV_OK : fp8kv_fail("out of memory");
    for (int i = 0, row = 0; rc == 0 && i < c->num_seqs; i++)
        for (int j = 0; j < c->query_lens[i]; j++, row++) {
            lens[row] = c->seq_lens[i] > 0 ? c->seq_lens[i] - c->query_lens[i] + j + 1 : 0;
            memcpy(table + (size_t)row * c->max_blocks, c->block_table + (size_t)i * c->max_blocks,
                   (size_t)c->max_blocks * sizeof *table);
        }
    const struct fp8kv_kv_queries window = {NULL, c->window};
    if (rc == 0)
        rc = run_attention(subject, cfg, &kc->shape, q, c->num_q_heads, kc->key, kc->value, table,
                           c->max_blocks, lens, c->rows, c->window ? &window : NULL, &ks, &vs,
                           c->softmax_scale, q_dtype, out_dtype, y);
    free(lens);
    free(table);
    return rc;
}

/* element: output i of y (elements of dtype t), widened exactly. */
static double element(const void *y, enum fp8kv_kv_dtype t, size_t i)
{
    if (t == FP8KV_KV_F32)
        return ((const float *)y)[i];
    const uint16_t h = ((const uint16_t *)y)[i];
    return t == FP8KV_KV_BF16 ? fp8kv_bf16_to_f32(h) : fp8kv_f16_to_f32(h);
}

/* largest_gap: the largest |a[i] - b[i]| of two outputs (n elements of dtype t), NaN pairs
 * equal; Inf where one is NaN and the other is not. */
static double largest_gap(const void *a, const void *b, size_t n, enum fp8kv_kv_dtype t)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double x = element(a, t, i), y = element(b, t, i);
        const double d = isnan(x) && isnan(y) ? 0.0 : isnan(x) || isnan(y) ? INFINITY : fabs(x - y);
        worst = x == y ? worst : d > worst ? d : worst;
    }
    return worst;
}

/* One engine-suite case through the subject's attention, judged at its declared arithmetic;
 * a case of several queries a sequence is judged again through the decode path, each query
 * row a sequence of its own ("kv-attention-consistency": prefill and decode of the same
 * queries, both within the bound, sglang #25790's class). */
static int check_engine_case(const char *dir, const struct fp8kv_profile *p,
                             const struct fp8kv_subject *subject,
                             const struct fp8kv_attention_arith *arith, int index,
                             struct fp8kv_results *out)
{
    double t0 = fp8kv_now();
    struct fp8kv_suite_case c;
    if (fp8kv_suite_case_make(dir, p, index, &c) != 0)
        return FP8KV_ERR;
    const unsigned lacks = case_features(&c) & ~subject->kv->attention_features;
    if (!fp8kv_kv_kernels_layout(subject->kv, c.shape.layout)) {
        char why[64];
        snprintf(why, sizeof why, "takes no %s layout", fp8kv_kv_layout_names[c.shape.layout]);
        const int rc = engine_not_run(&c, p, subject, "kv-attention-engine", why, out);
        fp8kv_suite_case_free(&c);
        return rc;
    }
    if (lacks) {
        const int rc = engine_not_run(&c, p, subject, "kv-attention-engine",
                                      lacks & FP8KV_KV_ATTENTION_QUERIES
                                          ? "takes one query a sequence (no query_lens)"
                                          : "takes no sliding window",
                                      out);
        fp8kv_suite_case_free(&c);
        return rc;
    }
    const enum fp8kv_kv_dtype q_dtype = fp8kv_attention_kv_dtype(arith->q),
                              out_dtype = fp8kv_attention_kv_dtype(arith->out);
    const size_t n = (size_t)c.rows * c.num_q_heads * c.shape.head_size,
                 ybytes = n * fp8kv_kv_dtype_size(out_dtype);
    void *y = malloc(ybytes + 1), *yd = malloc(ybytes + 1);
    void *q = query_in(c.query, n, q_dtype);
    struct engine_caches kc = {0};
    int rc = y && yd && q ? engine_caches_of(subject, &c, &kc) : fp8kv_fail("out of memory");
    const int passes = c.rows > c.num_seqs ? 2 : 1; /* prefill, then the same rows decoded */
    for (int pass = 0; pass < passes && rc == 0; pass++) {
        void *got = pass ? yd : y;
        memset(got, SENTINEL, ybytes);
        rc = engine_run(subject, p, &c, &kc, pass, q, q_dtype, out_dtype, got);
        struct fp8kv_check chk;
        if (rc == 0)
            rc = fp8kv_suite_judge_attention(&c, p->name, subject->name, arith, got, &chk);
        if (rc == 0 && c.packing != kc.shape.packing) { /* the case's packing, not taken */
            const size_t len = strlen(chk.detail);
            snprintf(chk.detail + len, sizeof chk.detail - len,
                     " (caches separate: %s takes no %s)", subject->name,
                     fp8kv_kv_packing_names[c.packing]);
        }
        if (rc == 0 && pass) {
            snprintf(chk.name, sizeof chk.name, "kv-attention-consistency");
            char gap[64];
            snprintf(gap, sizeof gap, "; decode vs prefill: largest gap %.3g",
                     largest_gap(y, yd, n, out_dtype));
            const size_t len = strlen(chk.detail);
            snprintf(chk.detail + len, sizeof chk.detail - len, "%s", gap);
        }
        if (rc == 0) {
            fp8kv_check_finish(&chk, fp8kv_now() - t0);
            rc = fp8kv_results_add(out, &chk);
        }
        t0 = fp8kv_now();
    }
    free(kc.packed);
    free(y);
    free(yd);
    free(q);
    fp8kv_suite_case_free(&c);
    return rc;
}

int fp8kv_check_attention_engine(const char *dir, const struct fp8kv_profile *p,
                                 const struct fp8kv_subject *subject, int only_case,
                                 struct fp8kv_results *out)
{
    if (only_case >= fp8kv_suite_case_count())
        return fp8kv_fail("no engine-suite case %d (the suite has %d: 0..%d)", only_case,
                          fp8kv_suite_case_count(), fp8kv_suite_case_count() - 1);
    struct fp8kv_attention_arith arith;
    if (fp8kv_attention_arith_parse(subject->kv->arithmetic, &arith) != 0)
        return fp8kv_fail("%s: %s", subject->name, fp8kv_last_error());
    int rc = FP8KV_OK;
    for (int i = 0; i < fp8kv_suite_case_count() && rc == 0; i++)
        if (only_case < 0 || i == only_case)
            rc = check_engine_case(dir, p, subject, &arith, i, out);
    return rc;
}
