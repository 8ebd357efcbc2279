/* kv/judge.c — the golden KV cases, loaded and validated, and the judges of fp8kv/kv_judge.h.
 *
 * The case files are untrusted input even after the directory is verified (a consistent but
 * hostile set could be checksummed): every shape, slot and block index is validated before a
 * judge or a kernel reads through it. Every file is read once, through fp8kv_vectors_read: of
 * a verified directory, the bytes must be those verification hashed (a file changed since is
 * an error, never judged), and what is judged is parsed from the bytes read. Bytes and bits
 * compare exactly, NaNs included (sign and payload: the CPU reference and the oracle agree on
 * them).
 */
#include "fp8kv/kv_judge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/checks.h"
#include "fp8kv/kv_attention.h"
#include "fp8kv/npy.h"
#include "fp8kv/sweep.h"
#include "fp8kv/verify.h"

#define MAX_DIM 4096 /* any one shape parameter of a case; the cases are small */

/* caseN_meta.npy, in the generator's documented order (vectors/README.md). */
enum meta_entry {
    META_NUM_BLOCKS,
    META_BLOCK_SIZE,
    META_NUM_HEADS,
    META_HEAD_SIZE,
    META_LAYOUT,
    META_IN_DTYPE,
    META_NUM_TOKENS,
    META_NUM_SEQS,
    META_MAX_BLOCKS,
    META_NUM_Q_HEADS,
    META_CASE_COUNT,
    META_SCALE_GRANULARITY,
    META_LEN
};

const char *const fp8kv_kv_case_files[FP8KV_KV_CASE_FILE_COUNT] = {
    "meta",        "key",       "value",       "slot_mapping", "scales",     "block_table",
    "seq_lens",    "query",     "key_cache",   "value_cache",  "gather_f32", "gather_f16",
    "gather_bf16", "attention", "head_scales", "scale_cache"};

int fp8kv_kv_case_has_file(const struct fp8kv_kv_case *c, size_t i)
{
    if (i < FP8KV_KV_CASE_FILES_ALWAYS)
        return 1;
    if (i >= FP8KV_KV_CASE_FILE_COUNT)
        return 0;
    return strcmp(fp8kv_kv_case_files[i], "head_scales") == 0
               ? c->granularity == FP8KV_SCALE_HEAD
               : c->granularity == FP8KV_SCALE_TOKEN_HEAD;
}

float fp8kv_kv_case_scale(const struct fp8kv_kv_case *c, int is_key, int64_t slot, int head)
{
    return fp8kv_kv_scale_at(is_key ? &c->k_scales : &c->v_scales, &c->shape, slot, head);
}

const char *fp8kv_kv_layout_name(enum fp8kv_kv_layout layout)
{
    return (int)layout >= 0 && (int)layout < FP8KV_KV_LAYOUT_COUNT ? fp8kv_kv_layout_names[layout]
                                                                   : "?";
}

const char *fp8kv_kv_dtype_name(enum fp8kv_kv_dtype dtype)
{
    return (int)dtype >= 0 && (int)dtype < FP8KV_DTYPE_COUNT ? fp8kv_dtype_names[dtype] : "?";
}

void fp8kv_kv_case_free(struct fp8kv_kv_case *c)
{
    struct fp8kv_npy *all[] = {&c->meta,      &c->key,         &c->value,       &c->slots,
                               &c->scales,    &c->block_table, &c->seq_lens,    &c->query,
                               &c->key_cache, &c->value_cache, &c->gather[0],   &c->gather[1],
                               &c->gather[2], &c->attention,   &c->head_scales, &c->scale_cache,
                               &c->decode};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        fp8kv_npy_free(all[i]);
    free(c->slot_token);
    c->slot_token = NULL;
    free(c->boundaries);
    c->boundaries = NULL;
}

/* ---- loading --------------------------------------------------------------------------------- */

/* load: <dir>/<profile>/kv/case<index>_<name> with this dtype and shape (cols 0: 1-D), read
 * once through fp8kv_vectors_read (of a verified directory: the bytes verified, or an error)
 * and parsed from the bytes read. */
static int load(const char *dir, const struct fp8kv_profile *p, int index, const char *name,
                enum fp8kv_npy_dtype dtype, size_t rows, size_t cols, struct fp8kv_npy *out)
{
    char file[64], rel[128], path[1024];
    snprintf(file, sizeof file, "kv/case%d_%s", index, name);
    snprintf(rel, sizeof rel, "%s/%s", p->name, file);
    fp8kv_vector_path(path, sizeof path, dir, p, file);
    if (fp8kv_vectors_read_npy(dir, rel, dtype, cols ? 2 : 1, rows, out) != 0)
        return FP8KV_ERR;
    /* read_expect takes a length of 0 as "any length" */
    if ((rows == 0 && out->shape[0] != 0) || (cols && out->shape[1] != cols)) {
        fp8kv_npy_free(out);
        return fp8kv_fail("%s: shape (%zu, %zu), expected (%zu, %zu)", path, out->shape[0],
                          out->shape[1], rows, cols ? cols : 1);
    }
    return FP8KV_OK;
}

static int bad_case(const char *dir, const struct fp8kv_profile *p, int index, const char *name,
                    const char *what)
{
    char file[64], path[1024];
    snprintf(file, sizeof file, "kv/case%d_%s", index, name);
    return fp8kv_fail("%s: %s", fp8kv_vector_path(path, sizeof path, dir, p, file), what);
}

/* load_meta: caseN_meta.npy, checked for plausibility before any size is derived from it. */
static int load_meta(const char *dir, const struct fp8kv_profile *p, struct fp8kv_kv_case *c)
{
    if (load(dir, p, c->index, "meta.npy", FP8KV_NPY_I32, META_LEN, 0, &c->meta) != 0)
        return FP8KV_ERR;
    const int32_t *m = c->meta.data;
    for (int i = 0; i < META_LEN; i++)
        if (m[i] < 0 || m[i] > MAX_DIM * MAX_DIM)
            return bad_case(dir, p, c->index, "meta.npy", "entry out of range");
    int ok = m[META_NUM_BLOCKS] >= 1 && m[META_BLOCK_SIZE] >= 1 && m[META_NUM_HEADS] >= 1 &&
             m[META_HEAD_SIZE] >= 1 && m[META_NUM_SEQS] >= 1 && m[META_MAX_BLOCKS] >= 1 &&
             m[META_NUM_Q_HEADS] >= 1 && m[META_CASE_COUNT] >= 1;
    for (int i = 0; i < META_LEN; i++)
        ok &= m[i] <= MAX_DIM || i == META_NUM_TOKENS;
    ok &= m[META_LAYOUT] < FP8KV_KV_LAYOUT_COUNT && m[META_IN_DTYPE] < FP8KV_DTYPE_COUNT;
    ok &= m[META_SCALE_GRANULARITY] < FP8KV_SCALE_GRANULARITY_COUNT;
    ok &= m[META_NUM_Q_HEADS] % (m[META_NUM_HEADS] ? m[META_NUM_HEADS] : 1) == 0;
    ok &= m[META_LAYOUT] != FP8KV_LAYOUT_SPLIT_X || m[META_HEAD_SIZE] % FP8KV_SPLIT_X == 0;
    if (!ok)
        return bad_case(dir, p, c->index, "meta.npy", "implausible shape parameters");
    c->shape = (struct fp8kv_cache_shape){m[META_NUM_BLOCKS],
                                          m[META_BLOCK_SIZE],
                                          m[META_NUM_HEADS],
                                          m[META_HEAD_SIZE],
                                          (enum fp8kv_kv_layout)m[META_LAYOUT],
                                          FP8KV_PACKING_SEPARATE};
    c->in = (enum fp8kv_kv_dtype)m[META_IN_DTYPE];
    c->num_tokens = m[META_NUM_TOKENS];
    c->num_seqs = m[META_NUM_SEQS];
    c->max_blocks = m[META_MAX_BLOCKS];
    c->num_q_heads = m[META_NUM_Q_HEADS];
    c->case_count = m[META_CASE_COUNT];
    c->granularity = (enum fp8kv_kv_scale_granularity)m[META_SCALE_GRANULARITY];
    c->width = (size_t)c->shape.num_heads * (size_t)c->shape.head_size;
    c->cache_bytes = (size_t)c->shape.num_blocks * (size_t)c->shape.block_size * c->width;
    c->scale_entries = fp8kv_scale_cache_entries(&c->shape);
    return FP8KV_OK;
}

/* index_slots: slot_token[s] = the token written to slot s, or -1; refuses a slot outside the
 * cache or written twice. */
static int index_slots(const char *dir, const struct fp8kv_profile *p, struct fp8kv_kv_case *c)
{
    const int64_t total_slots = (int64_t)c->shape.num_blocks * c->shape.block_size;
    c->slot_token = malloc((size_t)total_slots * sizeof *c->slot_token);
    if (!c->slot_token)
        return fp8kv_fail("out of memory");
    for (int64_t s = 0; s < total_slots; s++)
        c->slot_token[s] = -1;
    for (int t = 0; t < c->num_tokens; t++) {
        const int64_t s = ((const int64_t *)c->slots.data)[t];
        if (s < -1 || s >= total_slots || (s >= 0 && c->slot_token[s] != -1))
            return bad_case(dir, p, c->index, "slot_mapping.npy", "slot out of range or repeated");
        if (s >= 0)
            c->slot_token[s] = t;
    }
    return FP8KV_OK;
}

/* check_sequences: lengths within the block table, blocks within the cache; sums the rows. */
static int check_sequences(const char *dir, const struct fp8kv_profile *p, struct fp8kv_kv_case *c)
{
    const int32_t *lens = c->seq_lens.data, *table = c->block_table.data;
    for (size_t i = 0; i < (size_t)c->num_seqs; i++) {
        if (lens[i] < 0 || lens[i] > c->max_blocks * c->shape.block_size)
            return bad_case(dir, p, c->index, "seq_lens.npy", "length beyond the block table");
        c->rows += (size_t)lens[i];
        for (int j = 0; j * c->shape.block_size < lens[i]; j++)
            if (table[i * (size_t)c->max_blocks + (size_t)j] < 0 ||
                table[i * (size_t)c->max_blocks + (size_t)j] >= c->shape.num_blocks)
                return bad_case(dir, p, c->index, "block_table.npy", "block out of range");
    }
    return FP8KV_OK;
}

/* load_scales: the per-head scales or the golden scale caches, as the granularity says, and
 * the expected scales of every element. */
static int load_scales(const char *dir, const struct fp8kv_profile *p, struct fp8kv_kv_case *c)
{
    const size_t heads = (size_t)c->shape.num_heads;
    if (c->granularity == FP8KV_SCALE_HEAD &&
        load(dir, p, c->index, "head_scales.npy", FP8KV_NPY_U32, 2, heads, &c->head_scales) != 0)
        return FP8KV_ERR;
    if (c->granularity == FP8KV_SCALE_TOKEN_HEAD &&
        load(dir, p, c->index, "scale_cache.npy", FP8KV_NPY_U32, 2, c->scale_entries,
             &c->scale_cache) != 0)
        return FP8KV_ERR;
    const float *head_scales = c->head_scales.data, *scale_cache = c->scale_cache.data;
    c->k_scales =
        (struct fp8kv_kv_scales){c->granularity, c->k_scale, head_scales, scale_cache, NULL};
    c->v_scales = (struct fp8kv_kv_scales){
        c->granularity, c->v_scale, head_scales ? head_scales + heads : NULL,
        scale_cache ? scale_cache + c->scale_entries : NULL, NULL};
    return FP8KV_OK;
}

static int load_inputs(const char *dir, const struct fp8kv_profile *p, struct fp8kv_kv_case *c)
{
    const int index = c->index;
    const size_t tokens = (size_t)c->num_tokens, seqs = (size_t)c->num_seqs;
    const enum fp8kv_npy_dtype in_npy = c->in == FP8KV_KV_F32 ? FP8KV_NPY_U32 : FP8KV_NPY_U16;
    if (load(dir, p, index, "key.npy", in_npy, tokens, c->width, &c->key) != 0 ||
        load(dir, p, index, "value.npy", in_npy, tokens, c->width, &c->value) != 0 ||
        load(dir, p, index, "slot_mapping.npy", FP8KV_NPY_I64, tokens, 0, &c->slots) != 0 ||
        load(dir, p, index, "scales.npy", FP8KV_NPY_U32, 3, 0, &c->scales) != 0 ||
        load(dir, p, index, "block_table.npy", FP8KV_NPY_I32, seqs, (size_t)c->max_blocks,
             &c->block_table) != 0 ||
        load(dir, p, index, "seq_lens.npy", FP8KV_NPY_I32, seqs, 0, &c->seq_lens) != 0)
        return FP8KV_ERR;
    if (index_slots(dir, p, c) != 0 || check_sequences(dir, p, c) != 0)
        return FP8KV_ERR;
    const uint32_t *scales = c->scales.data;
    c->k_scale = fp8kv_f32_from_bits(scales[0]);
    c->v_scale = fp8kv_f32_from_bits(scales[1]);
    c->softmax_scale = fp8kv_f32_from_bits(scales[2]);
    return load_scales(dir, p, c);
}

static int load_outputs(const char *dir, const struct fp8kv_profile *p, struct fp8kv_kv_case *c)
{
    const int index = c->index;
    const size_t qrows = (size_t)c->num_seqs * (size_t)c->num_q_heads;
    const size_t head = (size_t)c->shape.head_size, half = c->rows * c->width;
    if (load(dir, p, index, "query.npy", FP8KV_NPY_F32, qrows, head, &c->query) != 0 ||
        load(dir, p, index, "key_cache.npy", FP8KV_NPY_U8, c->cache_bytes, 0, &c->key_cache) != 0 ||
        load(dir, p, index, "value_cache.npy", FP8KV_NPY_U8, c->cache_bytes, 0, &c->value_cache) !=
            0 ||
        load(dir, p, index, "gather_f32.npy", FP8KV_NPY_U32, 2, half, &c->gather[0]) != 0 ||
        load(dir, p, index, "gather_f16.npy", FP8KV_NPY_U16, 2, half, &c->gather[1]) != 0 ||
        load(dir, p, index, "gather_bf16.npy", FP8KV_NPY_U16, 2, half, &c->gather[2]) != 0 ||
        load(dir, p, index, "attention.npy", FP8KV_NPY_F64, qrows, head, &c->attention) != 0)
        return FP8KV_ERR;
    char rel[128];
    snprintf(rel, sizeof rel, "%s/decode.npy", p->name);
    if (fp8kv_vectors_read_npy(dir, rel, FP8KV_NPY_F32, 1, 256, &c->decode) != 0)
        return FP8KV_ERR;
    return (c->boundaries = fp8kv_load_boundaries(dir, p)) ? FP8KV_OK : FP8KV_ERR;
}

int fp8kv_kv_case_load(const char *dir, const struct fp8kv_profile *p, int index,
                       struct fp8kv_kv_case *c)
{
    memset(c, 0, sizeof *c);
    c->index = index;
    int rc = load_meta(dir, p, c);
    if (rc == 0)
        rc = load_inputs(dir, p, c);
    if (rc == 0)
        rc = load_outputs(dir, p, c);
    if (rc == 0 && index > 0) {
        struct fp8kv_npy first = {0};
        rc = load(dir, p, 0, "meta.npy", FP8KV_NPY_I32, META_LEN, 0, &first);
        if (rc == 0 && ((const int32_t *)first.data)[META_CASE_COUNT] != c->case_count)
            rc = bad_case(dir, p, index, "meta.npy", "case_count differs from case 0's");
        else if (rc == 0 && index >= c->case_count)
            rc = bad_case(dir, p, index, "meta.npy", "index beyond case_count");
        fp8kv_npy_free(&first);
    }
    if (rc != 0)
        fp8kv_kv_case_free(c);
    return rc;
}

int fp8kv_kv_case_count(const char *dir, const struct fp8kv_profile *p, int *count)
{
    struct fp8kv_kv_case c;
    const int rc = fp8kv_kv_case_load(dir, p, 0, &c);
    if (rc == 0)
        *count = c.case_count;
    fp8kv_kv_case_free(&c);
    return rc;
}

int fp8kv_kv_case_find(const char *dir, const struct fp8kv_profile *p, int index,
                       struct fp8kv_kv_case *c)
{
    int count = 0;
    memset(c, 0, sizeof *c);
    if (fp8kv_kv_case_count(dir, p, &count) != 0)
        return FP8KV_ERR;
    if (index < 0 || index >= count)
        return fp8kv_fail("unknown case %d: profile %s has cases 0..%d", index, p->name, count - 1);
    return fp8kv_kv_case_load(dir, p, index, c);
}

void fp8kv_kv_case_words(const struct fp8kv_kv_case *c, char *buf, size_t size)
{
    char scales[48];
    if (c->granularity == FP8KV_SCALE_HEAD)
        snprintf(scales, sizeof scales, "scales per head");
    else if (c->granularity == FP8KV_SCALE_TOKEN_HEAD)
        snprintf(scales, sizeof scales, "scales per token and head");
    else
        snprintf(scales, sizeof scales, "k %g v %g", (double)c->k_scale, (double)c->v_scale);
    snprintf(buf, size, "%s, %s in, %d x %d heads (q %d), block %d, %s",
             fp8kv_kv_layout_name(c->shape.layout), fp8kv_kv_dtype_name(c->in), c->shape.num_heads,
             c->shape.head_size, c->num_q_heads, c->shape.block_size, scales);
}

void fp8kv_kv_case_describe(const struct fp8kv_kv_case *c, const char *what, char *buf, size_t size)
{
    char words[128];
    fp8kv_kv_case_words(c, words, sizeof words);
    if (snprintf(buf, size, "kv/case%d: %s, %s", c->index, words, what) >= (int)size)
        buf[size - 1] = '\0'; /* cut: a detail is words, never parsed */
}

/* ---- naming an element ----------------------------------------------------------------------- */

/* locate: the (slot, head, dim) of byte o of a key (is_key) or value cache, by the layouts of
 * docs/DESIGN.md §4 taken apart (the judge's own arithmetic, not the subject's offset functions).
 */
static void locate(const struct fp8kv_cache_shape *s, int is_key, size_t o, long long *slot,
                   int *head, int *dim)
{
    const size_t bs = (size_t)s->block_size, H = (size_t)s->num_heads, D = (size_t)s->head_size;
    size_t pos, h, d, block;
    if (s->layout == FP8KV_LAYOUT_SPLIT_X && is_key) { /* [block][h][d/16][pos][d%16] */
        const size_t lane = o % FP8KV_SPLIT_X;
        o /= FP8KV_SPLIT_X;
        pos = o % bs;
        o /= bs;
        d = (o % (D / FP8KV_SPLIT_X)) * FP8KV_SPLIT_X + lane;
        o /= D / FP8KV_SPLIT_X;
        h = o % H;
        block = o / H;
    } else if (s->layout == FP8KV_LAYOUT_HND) { /* key and value: [block][h][pos][d] */
        d = o % D;
        o /= D;
        pos = o % bs;
        o /= bs;
        h = o % H;
        block = o / H;
    } else if (s->layout == FP8KV_LAYOUT_SPLIT_X) { /* [block][h][d][pos] */
        pos = o % bs;
        o /= bs;
        d = o % D;
        o /= D;
        h = o % H;
        block = o / H;
    } else { /* [block][pos][h][d] */
        d = o % D;
        o /= D;
        h = o % H;
        o /= H;
        pos = o % bs;
        block = o / bs;
    }
    *slot = (long long)(block * bs + pos);
    *head = (int)h;
    *dim = (int)d;
}

/* seq_of_row: the sequence and position of gather output row r. */
static void seq_of_row(const struct fp8kv_kv_case *c, size_t r, int *seq, int *pos)
{
    const int32_t *lens = c->seq_lens.data;
    int i = 0;
    while (i + 1 < c->num_seqs && r >= (size_t)lens[i])
        r -= (size_t)lens[i++];
    *seq = i;
    *pos = (int)r;
}

static uint32_t element_bits(const void *a, size_t esize, size_t i)
{
    return esize == 4 ? ((const uint32_t *)a)[i] : ((const uint16_t *)a)[i];
}

/* input_text: "0x3c00 (1)": an input element of dtype in as its bits and its value. */
static void input_text(enum fp8kv_kv_dtype in, uint32_t bits, char *buf, size_t size)
{
    const float x = fp8kv_f32_from_bits(fp8kv_widen_to_f32((enum fp8kv_dtype)in, bits));
    snprintf(buf, size, "0x%0*x (%.9g)", in == FP8KV_KV_F32 ? 8 : 4, bits, (double)x);
}

/* ---- store ----------------------------------------------------------------------------------- */

/* The class of the quotient x / scale a written byte stores (rounded to f32 for classing only;
 * the expected byte is the oracle's). */
static int quotient_class(const struct fp8kv_profile *p, float x, float scale)
{
    const float q = (float)((double)x / (double)scale);
    return (int)fp8kv_classify_f32(p->format, fp8kv_f32_bits(q));
}

/* models_writing: which kernel scale models (fp8kv_is_kernel_model) store x (f32 bits) at scale s
 * as the byte got, by the verified boundary table, in words into buf: "f32_mul_recip writes
 * 40" or "no scale model writes 40 (f32_div, ...)". */
static void models_writing(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p, uint32_t x,
                           uint32_t s, uint8_t got, char *buf, size_t size)
{
    const char *names[FP8KV_MODEL_COUNT], *all[FP8KV_MODEL_COUNT];
    int n = 0, tried = 0;
    for (int m = 0; m < FP8KV_MODEL_COUNT; m++) {
        uint8_t code;
        int nan_by_class;
        if (!fp8kv_is_kernel_model((enum fp8kv_scale_model)m) ||
            fp8kv_sweep_expected_scaled(p, c->boundaries, (enum fp8kv_scale_model)m, x, s, &code,
                                        &nan_by_class) != 0)
            continue;
        all[tried++] = fp8kv_model_names[m];
        if (code == got)
            names[n++] = fp8kv_model_names[m];
    }
    char list[128];
    if (n) {
        fp8kv_names_list(names, n, ", ", " and ", list, sizeof list);
        snprintf(buf, size, "%s write%s %02x", list, n > 1 ? "" : "s", got);
    } else {
        fp8kv_names_list(all, tried, ", ", NULL, list, sizeof list);
        snprintf(buf, size, "no scale model writes %02x (%s)", got, list);
    }
}

static void judge_cache(struct fp8kv_check *chk, const struct fp8kv_kv_case *c,
                        const struct fp8kv_profile *p, int is_key, const uint8_t *got)
{
    const uint8_t *want = is_key ? c->key_cache.data : c->value_cache.data;
    const struct fp8kv_npy *in = is_key ? &c->key : &c->value;
    const size_t esize = fp8kv_kv_dtype_size(c->in), bs = (size_t)c->shape.block_size;
    const char *cache = is_key ? "key_cache" : "value_cache";
    for (size_t o = 0; o < c->cache_bytes; o++) {
        long long slot;
        int h, d;
        locate(&c->shape, is_key, o, &slot, &h, &d);
        const int32_t t = c->slot_token[slot];
        const float scale = fp8kv_kv_case_scale(c, is_key, slot, h);
        uint32_t x = 0;
        float xf = 0.0f; /* x widened to f32 */
        int cls = -1;
        if (t >= 0) {
            x = element_bits(in->data, esize,
                             (size_t)t * c->width + (size_t)h * c->shape.head_size + (size_t)d);
            xf = fp8kv_f32_from_bits(fp8kv_widen_to_f32((enum fp8kv_dtype)c->in, x));
            cls = quotient_class(p, xf, scale);
        }
        chk->cases++;
        if (cls >= 0)
            chk->class_cases[cls]++;
        if (got[o] == want[o])
            continue;
        const size_t block = (size_t)slot / bs, offset = (size_t)slot % bs;
        if (t < 0) {
            fp8kv_check_failure(chk, -1,
                                "%s[%zu] no token (slot %lld = block %zu offset %zu) head %d dim "
                                "%d => %02x  expected %02x (unwritten)",
                                cache, o, slot, block, offset, h, d, got[o], want[o]);
            continue;
        }
        char text[48], models[160];
        input_text(c->in, x, text, sizeof text);
        const float *value = c->decode.data;
        models_writing(c, p, fp8kv_f32_bits(xf), fp8kv_f32_bits(scale), got[o], models,
                       sizeof models);
        fp8kv_check_failure(chk, cls,
                            "%s[%zu] token %d (slot %lld = block %zu offset %zu) head %d dim %d: "
                            "%s / %.9g = %.9g => %02x (%.9g)  expected %02x (%.9g)  %s; %s",
                            cache, o, (int)t, slot, block, offset, h, d, text, (double)scale,
                            (double)xf / (double)scale, got[o], (double)value[got[o]], want[o],
                            (double)value[want[o]], fp8kv_class_names[cls], models);
    }
}

/* judge_scale_cache: a scale cache (per token and head) entry by entry, f32 bits. At most
 * SCALE_LINES failure lines each, so that the bytes stored with a wrong scale show too. */
#define SCALE_LINES 4
static void judge_scale_cache(struct fp8kv_check *chk, const struct fp8kv_kv_case *c, int is_key,
                              const float *got)
{
    int lines = 0;
    const uint32_t *want = (const uint32_t *)c->scale_cache.data + (is_key ? 0 : c->scale_entries);
    const size_t heads = (size_t)c->shape.num_heads, bs = (size_t)c->shape.block_size;
    for (size_t e = 0; e < c->scale_entries; e++) {
        chk->cases++;
        const uint32_t g = fp8kv_f32_bits(got[e]);
        if (g == want[e])
            continue;
        if (lines++ >= SCALE_LINES) {
            chk->mismatches++;
            continue;
        }
        const size_t slot = e / heads;
        const int32_t t = c->slot_token[slot];
        char token[24] = "no token";
        if (t >= 0)
            snprintf(token, sizeof token, "token %d", (int)t);
        fp8kv_check_failure(chk, -1,
                            "%s_scale_cache[%zu] %s (slot %zu = block %zu offset %zu) head %zu => "
                            "%08x (%.9g)  expected %08x (%.9g)%s",
                            is_key ? "key" : "value", e, token, slot, slot / bs, slot % bs,
                            e % heads, g, (double)got[e], want[e],
                            (double)fp8kv_f32_from_bits(want[e]), t < 0 ? " (unwritten)" : "");
    }
}

void fp8kv_kv_judge_store(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                          const char *subject, const struct fp8kv_kv_stored *stored,
                          struct fp8kv_check *chk, uint64_t mismatches[4])
{
    char detail[160];
    fp8kv_kv_case_describe(c,
                           c->granularity == FP8KV_SCALE_TOKEN_HEAD
                               ? "cache bytes and scale caches, sentinel 0xa5"
                               : "cache bytes, sentinel 0xa5",
                           detail, sizeof detail);
    fp8kv_check_init(chk, "kv-store", subject, p->name, detail);
    chk->has_classes = 1;
    /* the scale caches first: a wrong scale explains the bytes stored with it */
    uint64_t counts[4] = {0}, before = 0;
    if (c->granularity == FP8KV_SCALE_TOKEN_HEAD) {
        judge_scale_cache(chk, c, 1, stored->key_scale_cache);
        counts[2] = chk->mismatches;
        judge_scale_cache(chk, c, 0, stored->value_scale_cache);
        counts[3] = chk->mismatches - counts[2];
        before = chk->mismatches;
    }
    judge_cache(chk, c, p, 1, stored->key_cache);
    counts[0] = chk->mismatches - before;
    judge_cache(chk, c, p, 0, stored->value_cache);
    counts[1] = chk->mismatches - before - counts[0];
    if (mismatches)
        memcpy(mismatches, counts, sizeof counts);
}

/* ---- read ------------------------------------------------------------------------------------ */

int fp8kv_kv_judge_gather(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                          const char *subject, enum fp8kv_kv_dtype out, const void *got,
                          struct fp8kv_check *chk)
{
    const size_t half = c->rows * c->width, n = 2 * half, esize = fp8kv_kv_dtype_size(out);
    float *y = malloc(n * sizeof *y + 1);
    double *ref = malloc(n * sizeof *ref + 1);
    if (!y || !ref) {
        free(y);
        free(ref);
        return fp8kv_fail("out of memory");
    }
    char name[32], detail[160];
    snprintf(name, sizeof name, "kv-read-%s", fp8kv_kv_dtype_name(out));
    fp8kv_kv_case_describe(c, "gather + dequant bits, rounded read model", detail, sizeof detail);
    fp8kv_check_init(chk, name, subject, p->name, detail);
    const void *want = c->gather[out].data;
    for (size_t i = 0; i < n; i++) {
        const uint32_t g = element_bits(got, esize, i), w = element_bits(want, esize, i);
        y[i] = fp8kv_f32_from_bits(fp8kv_widen_to_f32((enum fp8kv_dtype)out, g));
        ref[i] = fp8kv_f32_from_bits(fp8kv_widen_to_f32((enum fp8kv_dtype)out, w));
        chk->cases++;
        if (g == w)
            continue;
        const size_t e = i % half, row = e / c->width;
        int seq, pos;
        seq_of_row(c, row, &seq, &pos);
        const int h = (int)(e % c->width) / c->shape.head_size;
        const int d = (int)(e % c->width) % c->shape.head_size;
        const int is_key = i < half;
        const int32_t block =
            ((const int32_t *)c->block_table
                 .data)[(size_t)seq * c->max_blocks + (size_t)(pos / c->shape.block_size)];
        const int64_t slot = (int64_t)block * c->shape.block_size + pos % c->shape.block_size;
        const uint8_t *cache = is_key ? c->key_cache.data : c->value_cache.data;
        const size_t o = is_key ? fp8kv_key_offset(&c->shape, slot, h, d)
                                : fp8kv_value_offset(&c->shape, slot, h, d);
        fp8kv_check_failure(chk, -1,
                            "%s[%zu] seq %d pos %d (block %d offset %d) head %d dim %d: code %02x "
                            "* %.9g => %0*x  expected %0*x",
                            is_key ? "key" : "value", e, seq, pos, (int)block,
                            pos % c->shape.block_size, h, d, cache[o],
                            (double)fp8kv_kv_case_scale(c, is_key, slot, h), (int)(2 * esize), g,
                            (int)(2 * esize), w);
    }
    chk->has_nmse = 1;
    chk->nmse = fp8kv_nmse(y, ref, n);
    chk->threshold = 0.0; /* the expected values model this very computation */
    free(y);
    free(ref);
    return FP8KV_OK;
}

/* ---- attention ------------------------------------------------------------------------------- */

/* A golden case as an attention problem under an arithmetic (fp8kv/kv_attention.h). */
struct case_problem {
    const struct fp8kv_kv_case *c;
    const struct fp8kv_attention_arith *a;
    size_t *row0; /* per sequence: its first gather row */
};

static double bits_value(const void *data, enum fp8kv_kv_dtype dt, size_t i)
{
    if (dt == FP8KV_KV_F32)
        return fp8kv_f32_from_bits(((const uint32_t *)data)[i]);
    const uint16_t h = ((const uint16_t *)data)[i];
    return fp8kv_f32_from_bits(fp8kv_widen_to_f32((enum fp8kv_dtype)dt, h));
}

static void case_query(void *ctx, int seq, int qh, double *q)
{
    const struct case_problem *cp = ctx;
    const int D = cp->c->shape.head_size;
    const float *src =
        (const float *)cp->c->query.data + ((size_t)seq * cp->c->num_q_heads + qh) * D;
    for (int d = 0; d < D; d++)
        q[d] = fp8kv_attention_round(src[d], cp->a->q, 0);
}

/* case_row: scaled, the golden gather rows in kv_type (RN of RN32(decode x scale)); folded,
 * the code's exact value (decode.npy) times its scale, exact in double. */
static void case_row(void *ctx, int is_key, int seq, int t, int g, double *row)
{
    const struct case_problem *cp = ctx;
    const struct fp8kv_kv_case *c = cp->c;
    const int D = c->shape.head_size;
    if (cp->a->kv == FP8KV_ATTN_KV_SCALED) {
        const enum fp8kv_kv_dtype dt = fp8kv_attention_kv_dtype(cp->a->kv_type);
        const size_t at =
            ((is_key ? 0 : c->rows) + cp->row0[seq] + (size_t)t) * c->width + (size_t)g * (size_t)D;
        for (int d = 0; d < D; d++)
            row[d] = bits_value(c->gather[dt].data, dt, at + (size_t)d);
        return;
    }
    const int bs = c->shape.block_size;
    const int32_t block =
        ((const int32_t *)c->block_table.data)[(size_t)seq * c->max_blocks + t / bs];
    const int64_t slot = (int64_t)block * bs + t % bs;
    const uint8_t *cache = is_key ? c->key_cache.data : c->value_cache.data;
    const float *decode = c->decode.data;
    const double scale = fp8kv_kv_case_scale(c, is_key, slot, g);
    for (int d = 0; d < D; d++) {
        const size_t o = is_key ? fp8kv_key_offset(&c->shape, slot, g, d)
                                : fp8kv_value_offset(&c->shape, slot, g, d);
        row[d] = (double)decode[cache[o]] * scale;
    }
}

static int all_f32(const struct fp8kv_attention_arith *a)
{
    return a->q == FP8KV_ATTN_F32 && a->kv == FP8KV_ATTN_KV_SCALED &&
           a->kv_type == FP8KV_ATTN_F32 && a->dot == FP8KV_ATTN_F32 && a->p == FP8KV_ATTN_F32 &&
           a->out == FP8KV_ATTN_F32;
}

/* name_nmse_failures: an NMSE above the threshold with every output within its bound (f32
 * rounding is allowed more than the NMSE gate allows on average): the outputs whose squared
 * error exceeds their share of the allowed total, each a mismatch. */
static void name_nmse_failures(const struct fp8kv_kv_case *c, const float *y,
                               struct fp8kv_check *chk)
{
    const double *ref = c->attention.data;
    const size_t D = (size_t)c->shape.head_size, n = chk->cases;
    double energy = 0.0;
    for (size_t i = 0; i < n; i++)
        energy += isfinite(ref[i]) ? ref[i] * ref[i] : 0.0;
    const double budget = chk->threshold * energy / (double)n;
    for (size_t i = 0; i < n; i++) {
        const double e = (double)y[i] - ref[i];
        if (isnan(y[i]) == isnan(ref[i]) && !(e * e > budget))
            continue;
        const size_t row = i / D;
        fp8kv_check_failure(chk, -1,
                            "out[%zu] seq %zu qhead %zu dim %zu => %08x (%.9g)  128-bit %.17g: its "
                            "error is past its share of the NMSE threshold",
                            i, row / (size_t)c->num_q_heads, row % (size_t)c->num_q_heads, i % D,
                            fp8kv_f32_bits(y[i]), (double)y[i], ref[i]);
    }
}

int fp8kv_kv_judge_attention(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p,
                             const char *subject, const struct fp8kv_attention_arith *a,
                             const void *y, const char *detail_suffix, struct fp8kv_check *chk)
{
    char detail[160];
    fp8kv_kv_case_describe(c, "", detail, sizeof detail);
    const size_t used = strlen(detail);
    snprintf(detail + used, sizeof detail - used, "arithmetic %s%s", a->name,
             detail_suffix ? detail_suffix : "");
    fp8kv_check_init(chk, "kv-attention", subject, p->name, detail);
    struct case_problem cp = {c, a, calloc((size_t)c->num_seqs, sizeof(size_t))};
    if (!cp.row0)
        return fp8kv_fail("out of memory");
    const int32_t *lens = c->seq_lens.data;
    for (int i = 1; i < c->num_seqs; i++)
        cp.row0[i] = cp.row0[i - 1] + (size_t)lens[i - 1];
    const struct fp8kv_attention_problem pr = {c->num_seqs,
                                               c->num_q_heads,
                                               c->shape.num_heads,
                                               c->shape.head_size,
                                               lens,
                                               (double)c->softmax_scale,
                                               &cp,
                                               case_query,
                                               case_row,
                                               NULL,
                                               0};
    struct fp8kv_attention_ref ref;
    const int rc = fp8kv_attention_reference(&pr, a, &ref);
    free(cp.row0);
    if (rc != 0)
        return FP8KV_ERR;
    fp8kv_attention_judge(&ref, a, y, c->num_q_heads, c->shape.head_size, chk);
    fp8kv_attention_ref_free(&ref);
    chk->nmse_reported = 1;
    if (all_f32(a)) { /* f32 keeps the NMSE gate against the 128-bit MPFR result */
        chk->nmse = fp8kv_nmse(y, c->attention.data, chk->cases);
        chk->threshold = FP8KV_KV_ATTENTION_THRESHOLD;
        chk->nmse_reported = 0;
        if (!(chk->nmse <= chk->threshold) && chk->failure_lines == 0)
            name_nmse_failures(c, y, chk);
    }
    return FP8KV_OK;
}
