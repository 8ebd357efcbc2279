/* intq.c — the golden vectors of the integer block formats, vectors/intq/<format>/: encode cases
 * (every tie and integer boundary of the rounding at several binades, zero, constant, sign-tied,
 * tiny and huge blocks, seeded random blocks) with their expected f16 scales and codes, and a
 * decode table over a spread of f16 scales; all from the oracle (fp8kv/intq_oracle.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/intq_oracle.h"
#include "fp8kv/spec.h"
#include "intq.h"

#define RANDOM_BLOCKS 300
#define BLOCK 32 /* every integer format's block_size (checked) */

/* The cases of one format, growing: f32 bits [n, BLOCK]. */
struct cases {
    uint32_t *x;
    size_t n, cap;
};

static uint32_t bits_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* new_case: a zeroed row for one more block, or NULL when out of memory. */
static uint32_t *new_case(struct cases *c)
{
    if (c->n == c->cap) {
        const size_t cap = c->cap ? 2 * c->cap : 512;
        uint32_t *x = realloc(c->x, cap * BLOCK * sizeof *x);
        if (!x)
            return NULL;
        c->x = x;
        c->cap = cap;
    }
    uint32_t *row = c->x + c->n++ * BLOCK;
    memset(row, 0, BLOCK * sizeof *row);
    return row;
}

/* tie_blocks: the scale source divisor * u first (d = u), then every multiple k / 2 of u in the
 * code range: for u = 2^e, id = 2^-e is exact and w falls on every half-integer (the ties of
 * roundf and RNE) and every integer (the boundaries of trunc); for the other u, id = RN32(1 / u)
 * is not, and w lands just beside them, on the side the roundings (and fusing them) decide */
static int tie_blocks(const struct fp8kv_intq_format *f, struct cases *c)
{
    static const float units[] = {0x1p-130f, 0x1p-126f, 0x1p-40f, 0.5f, 1.0f, 32.0f,
                                  0x1p40f,   0x1p110f,  3.0f,     5.0f, 7.0f, 10.0f,
                                  0.1f,      3e-3f,     1e-30f,   1e30f};
    const int halves = (int)(2.0f * fabsf(f->divisor));
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        for (int k0 = -halves; k0 <= halves; k0 += BLOCK - 1) {
            uint32_t *row = new_case(c);
            if (!row)
                return fp8kv_fail("out of memory");
            row[0] = bits_of(f->divisor * units[u]);
            for (int i = 1; i < BLOCK; i++) {
                const int k = k0 + i - 1;
                if (k <= halves)
                    row[i] = bits_of((float)k * 0.5f * units[u]);
            }
        }
    return FP8KV_OK;
}

/* special_blocks: zeros, -0, constants, tied magnitudes of both orders, one element, tiny blocks
 * (1 / d overflows), huge blocks (the f16 of d overflows or is subnormal), a ramp */
static int special_blocks(struct cases *c)
{
    static const float fills[] = {0.0f,
                                  -0.0f,
                                  1.0f,
                                  -3.0f,
                                  0x1p-149f,
                                  1e-40f,
                                  0x1p-121f,
                                  0x1p-122f,
                                  3.0e38f,
                                  -0x1.fffffep127f,
                                  65504.0f * 127.0f,
                                  65520.0f * 127.0f,
                                  0x1p-24f * 127.0f,
                                  0x1p-25f * 127.0f,
                                  1e-3f,
                                  0.1f};
    for (size_t a = 0; a < sizeof fills / sizeof fills[0]; a++)
        for (int pattern = 0; pattern < 5; pattern++) {
            uint32_t *row = new_case(c);
            if (!row)
                return fp8kv_fail("out of memory");
            for (int i = 0; i < BLOCK; i++) {
                float v;
                switch (pattern) {
                case 0: v = fills[a]; break;                       /* constant */
                case 1: v = i % 2 ? -fills[a] : fills[a]; break;   /* tied, + first */
                case 2: v = i % 2 ? fills[a] : -fills[a]; break;   /* tied, - first */
                case 3: v = i == 5 ? fills[a] : 0.0f; break;       /* one element */
                default: v = fills[a] * ((float)(i - 16) / 16.0f); /* a ramp */
                }
                row[i] = bits_of(v);
            }
        }
    return FP8KV_OK;
}

/* random_blocks: seeded blocks of every magnitude, values within a few binades of each other */
static int random_blocks(struct cases *c, uint64_t seed)
{
    for (int b = 0; b < RANDOM_BLOCKS; b++) {
        uint32_t *row = new_case(c);
        if (!row)
            return fp8kv_fail("out of memory");
        const int top = (int)(fp8kv_splitmix64(&seed) % 277) - 149;
        const int spread = b % 2 ? 6 : 30;
        for (int i = 0; i < BLOCK; i++) {
            const uint64_t r = fp8kv_splitmix64(&seed);
            const int e = top - (int)(r % (uint64_t)spread);
            const float m = 1.0f + (float)((r >> 16) & 0x7FFFFF) * 0x1p-23f;
            row[i] = e < -149 ? 0u : bits_of(ldexpf((r >> 40) & 1 ? -m : m, e));
        }
    }
    return FP8KV_OK;
}

static int add(int rc, struct fp8kv_manifest *m, const struct fp8kv_intq_format *f,
               const char *name, const char *description, enum fp8kv_npy_dtype dtype, size_t rows,
               size_t cols, const void *data)
{
    return fp8kv_manifest_add_table(rc, m, "intq", f->name, name, description, dtype, rows, cols,
                                    data);
}

/* The f16 scales of the decode table: both signs, every exponent field (subnormals, Inf and
 * NaN's included), mantissas 0, 1, 0x155, 0x200 and 0x3ff. */
#define DECODE_MANTISSAS 5
#define DECODE_SCALES (2 * 32 * DECODE_MANTISSAS)

static void decode_scales(uint16_t *s)
{
    static const uint16_t mantissas[DECODE_MANTISSAS] = {0, 1, 0x155, 0x200, 0x3FF};
    int n = 0;
    for (int sign = 0; sign < 2; sign++)
        for (int e = 0; e < 32; e++)
            for (int k = 0; k < DECODE_MANTISSAS; k++)
                s[n++] = (uint16_t)(sign << 15 | e << 10 | mantissas[k]);
}

static int decode_table(struct fp8kv_manifest *m, const struct fp8kv_intq_format *f)
{
    const int codes = f->code_min < 0 ? 256 : f->code_max + 1;
    uint16_t scales[DECODE_SCALES];
    decode_scales(scales);
    uint32_t *t = malloc((size_t)DECODE_SCALES * (size_t)codes * sizeof *t);
    if (!t)
        return fp8kv_fail("out of memory");
    for (int s = 0; s < DECODE_SCALES; s++)
        for (int c = 0; c < codes; c++) {
            int ok;
            t[s * codes + c] = fp8kv_oracle_intq_decode_one(f, scales[s], (uint8_t)c, &ok);
        }
    int rc = add(0, m, f, "decode_scales.npy",
                 "f16 bits of the decode table's scales: both signs, every exponent field, "
                 "mantissas 0, 1, 0x155, 0x200, 0x3ff",
                 FP8KV_NPY_U16, DECODE_SCALES, 0, scales);
    rc = add(rc, m, f, "decode.npy",
             "f32 bits of RN32((q - zero) * scale) for each scale of decode_scales.npy (rows) and "
             "each stored byte (columns)",
             FP8KV_NPY_U32, DECODE_SCALES, (size_t)codes, t);
    free(t);
    return rc;
}

static int gen_format(struct fp8kv_manifest *m, const struct fp8kv_intq_format *f, FILE *log)
{
    if (f->block_size != BLOCK)
        return fp8kv_fail("%s: block_size %d, the generator writes %d", f->name, f->block_size,
                          BLOCK);
    struct cases c = {0};
    int rc = tie_blocks(f, &c);
    if (rc == 0)
        rc = special_blocks(&c);
    if (rc == 0)
        rc = random_blocks(&c, 0x1A7C0DEull + (uint64_t)f->id);
    uint16_t *scale = rc == 0 ? malloc(c.n * sizeof *scale) : NULL;
    uint8_t *codes = scale ? malloc(c.n * BLOCK) : NULL;
    if (rc == 0 && !codes)
        rc = fp8kv_fail("out of memory");
    for (size_t i = 0; i < c.n && rc == 0; i++)
        rc = fp8kv_oracle_intq_encode(f, c.x + i * BLOCK, &scale[i], codes + i * BLOCK);
    rc = add(rc, m, f, "input.npy", "f32 bits of the encode cases' input blocks, one per row",
             FP8KV_NPY_U32, c.n, BLOCK, c.x);
    rc = add(rc, m, f, "scale.npy", "f16 bits of each block's stored scale (the f16 of d)",
             FP8KV_NPY_U16, c.n, 0, scale);
    rc = add(rc, m, f, "codes.npy",
             "the stored byte of each element (q8_0: int8 two's complement; q4_0: the nibble)",
             FP8KV_NPY_U8, c.n, BLOCK, codes);
    if (rc == 0)
        rc = decode_table(m, f);
    if (rc == 0 && log)
        fprintf(log, "gen: intq/%s: %zu blocks\n", f->name, c.n);
    free(c.x);
    free(scale);
    free(codes);
    return rc;
}

int fp8kv_gen_intq(struct fp8kv_manifest *m, FILE *log)
{
    int rc = 0;
    for (int i = 0; i < FP8KV_INTQ_FORMAT_COUNT && rc == 0; i++)
        rc = gen_format(m, &fp8kv_intq_formats[i], log);
    return rc;
}
