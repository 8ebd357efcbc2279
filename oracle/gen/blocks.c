/* blocks.c — the golden vectors of the block-scaled formats, vectors/blocks/<format>/: the decode
 * table, and encode cases (edge and seeded random blocks) with the codes of every rule and model,
 * all from the block oracle (fp8kv/block_oracle.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "fp8kv/block_oracle.h"
#include "fp8kv/spec.h"
#include "fp8kv/diag.h"

#define RANDOM_BLOCKS 300
#define G_ONE 0x3F800000u
#define G_THIRD 0x3EAAAAABu /* RN32(1/3): nvfp4's second decode table and a G of the cases */

/* The G values nvfp4's encode cases cycle through: 1 and f32s that are not powers of two. */
static const uint32_t case_g[] = {G_ONE, G_THIRD, 0x3C4985F0u /* 0.0123 */,
                                  0x449A5000u /* 1234.5 */};

/* The cases of one format, growing: inputs [n, block_size] and, for nvfp4, G per case. */
struct cases {
    const struct fp8kv_block_format *f;
    uint32_t *x, *g;
    size_t n, cap;
    uint64_t seed;
};

static uint32_t bits_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static float f32_of(uint32_t b)
{
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* new_case: room for one more block, G = g; its inputs (zeroed), or NULL when out of memory. */
static uint32_t *new_case(struct cases *c, uint32_t g)
{
    const size_t bs = (size_t)c->f->block_size;
    if (c->n == c->cap) {
        const size_t cap = c->cap ? 2 * c->cap : 1024;
        uint32_t *x = realloc(c->x, cap * bs * sizeof *x), *gs;
        if (x)
            c->x = x;
        gs = x ? realloc(c->g, cap * sizeof *gs) : NULL;
        if (!gs)
            return NULL;
        c->g = gs;
        c->cap = cap;
    }
    c->g[c->n] = g;
    uint32_t *row = c->x + c->n++ * bs;
    memset(row, 0, bs * sizeof *row);
    return row;
}

/* A float of magnitude in [2^emin, 2^(emax+1)), random significand and sign. */
static float random_f32(uint64_t *seed, int emin, int emax)
{
    const uint64_t r = fp8kv_splitmix64(seed);
    const int e = emin + (int)(r % (uint64_t)(emax - emin + 1));
    const float m = 1.0f + (float)((r >> 16) & 0x7FFFFF) * 0x1p-23f;
    return ldexpf((r >> 40) & 1 ? -m : m, e);
}

/* block_around: a block whose largest magnitude is amax (placed at a seeded position, with a
 * seeded sign), the others seeded values up to amax / 2 over 12 binades. */
static int block_around(struct cases *c, float amax, uint32_t g)
{
    if (!isfinite(amax))
        return FP8KV_OK;
    uint32_t *row = new_case(c, g);
    if (!row)
        return fp8kv_fail("out of memory");
    const int bs = c->f->block_size, top = amax == 0 ? 0 : ilogbf(amax) - 1;
    for (int i = 0; i < bs; i++)
        row[i] = bits_of(amax == 0 ? 0.0f : random_f32(&c->seed, top - 12, top));
    const uint64_t r = fp8kv_splitmix64(&c->seed);
    row[r % (uint64_t)bs] = bits_of((r >> 32) & 1 ? -amax : amax);
    return FP8KV_OK;
}

/* near: amax and its neighbours 1 and 2 f32 ulps away, each in a block. */
static int near(struct cases *c, double amax, uint32_t g)
{
    float lo = (float)amax, hi = lo;
    int rc = block_around(c, lo, g);
    for (int k = 0; k < 2 && rc == 0; k++) {
        lo = nextafterf(lo, 0.0f);
        hi = nextafterf(hi, INFINITY);
        rc = block_around(c, lo, g);
        if (rc == 0)
            rc = block_around(c, hi, g);
    }
    return rc;
}

/* The MX amax edges: max_elem 2^k, 2^k, the even rule's carry threshold, and values floor clips
 * (just below 2^(emax + 1 + k)), for k near both ends of the E8M0 range and around 1. */
static int mx_edges(struct cases *c)
{
    const struct fp8kv_element_format *e = c->f->element;
    static const int ks[][2] = {{-152, -120}, {-6, 6}, {110, 127}};
    int rc = 0;
    for (size_t r = 0; r < 3 && rc == 0; r++)
        for (int k = ks[r][0]; k <= ks[r][1] && rc == 0; k++) {
            rc = near(c, ldexp(e->max_value, k), G_ONE);
            if (rc == 0)
                rc = near(c, ldexp(1.0, k + e->emax), G_ONE);
            if (rc == 0)
                rc = near(c, ldexp(2.0 - ldexp(1.0, -(e->man_bits + 1)), k + e->emax), G_ONE);
        }
    return rc;
}

/* The nvfp4 amax edges: 6 G and 4 G times every UE4M3 value and midpoint (where rne, ceil and
 * s4 change), under each case G. */
static int nv_edges(struct cases *c)
{
    const struct fp8kv_element_format *e4 = &fp8kv_element_formats[FP8KV_ELEM_E4M3];
    mpfr_t v;
    mpfr_init2(v, 16);
    int rc = 0;
    for (size_t gi = 0; gi < sizeof case_g / sizeof case_g[0] && rc == 0; gi++) {
        const double g = f32_of(case_g[gi]);
        double prev = 0;
        for (unsigned s = 1; s <= e4->max_code && rc == 0; s++) {
            fp8kv_oracle_element_decode(e4, (uint8_t)s, v);
            const double value = mpfr_get_d(v, MPFR_RNDN), mid = (prev + value) / 2;
            prev = value;
            if (gi > 0 && s % 4 != 0) /* the other G: every fourth code */
                continue;
            rc = near(c, 6 * g * mid, case_g[gi]);
            if (rc == 0)
                rc = near(c, 6 * g * value, case_g[gi]);
            if (rc == 0)
                rc = block_around(c, (float)(4 * g * mid), case_g[gi]);
        }
    }
    mpfr_clear(v);
    return rc;
}

/* grid_ties: blocks at scale 1 (amax = max_elem, so every rule takes X = 0, and G = 1 s = 1 in
 * nvfp4: amax = 6) holding every midpoint of the element grid, and its neighbours, both signs. */
static int grid_ties(struct cases *c)
{
    const struct fp8kv_element_format *e = c->f->element;
    const int bs = c->f->block_size;
    mpfr_t v;
    mpfr_init2(v, 16);
    uint32_t *row = NULL;
    int fill = bs, rc = 0;
    double prev = 0;
    for (unsigned code = 1; code <= e->max_code && rc == 0; code++) {
        fp8kv_oracle_element_decode(e, (uint8_t)code, v);
        const double value = mpfr_get_d(v, MPFR_RNDN);
        const float mid = (float)((prev + value) / 2);
        prev = value;
        const float around[] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY), -mid};
        for (int k = 0; k < 4 && rc == 0; k++) {
            if (fill == bs) {
                row = new_case(c, G_ONE);
                if (!row)
                    rc = fp8kv_fail("out of memory");
                else
                    row[0] = bits_of((float)e->max_value);
                fill = 1;
            }
            if (row)
                row[fill++] = bits_of(around[k]);
        }
    }
    mpfr_clear(v);
    return rc;
}

/* special_blocks: zeros, negative zeros, tiny values, NaN and Inf, 4over6's constructed ties. */
static int special_blocks(struct cases *c)
{
    const int bs = c->f->block_size;
    static const uint32_t specials[] = {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u,
                                        0x7F800001u};
    int rc = 0;
    for (int kind = 0; kind < 12 && rc == 0; kind++) {
        uint32_t *row = new_case(c, G_ONE);
        if (!row)
            return fp8kv_fail("out of memory");
        for (int i = 0; i < bs; i++) {
            switch (kind) {
            case 0: row[i] = 0; break;                                       /* all +0 */
            case 1: row[i] = 0x80000000u; break;                             /* all -0 */
            case 2: row[i] = i % 2 ? 0x80000000u : bits_of(0x1p-20f); break; /* -0 beside a value */
            case 3: row[i] = (uint32_t)i | (i % 3 ? 0 : 0x80000000u); break; /* f32 denormals */
            case 4: row[i] = bits_of(ldexpf(1.0f + (float)i / 32, -130 + i)); break;
            case 5: row[i] = i == 0 ? bits_of(3e38f) : bits_of(ldexpf(1.0f, -140 + i)); break;
            case 6: row[i] = bits_of(i == 0 ? 0x1.fffffep127f : -(float)i * 1e37f); break;
            default: row[i] = bits_of((float)i - 3.5f); break; /* then one special in it */
            }
        }
        if (kind >= 7)
            row[(kind * 5) % bs] = specials[kind - 7];
    }
    /* 4over6: [6, 0.625 + d, 0.625, 0.625 - d] ties exactly (errors 1/8 +- d either way) */
    for (int k = 0; k < 8 && rc == 0; k++) {
        uint32_t *row = new_case(c, G_ONE);
        if (!row)
            return fp8kv_fail("out of memory");
        const float d = (float)(k * 97) * 0x1p-24f;
        row[0] = bits_of(6.0f);
        row[1] = bits_of(0.625f + d);
        row[2] = bits_of(0.625f);
        row[3] = bits_of(0.625f - d);
    }
    return rc;
}

/* random_blocks: seeded blocks of typical and extreme magnitudes and small dyadic values. */
static int random_blocks(struct cases *c)
{
    const int bs = c->f->block_size;
    for (int b = 0; b < RANDOM_BLOCKS; b++) {
        const uint32_t g = c->f->scale_kind == FP8KV_SCALE_UE4M3
                               ? case_g[b % (sizeof case_g / sizeof case_g[0])]
                               : G_ONE;
        uint32_t *row = new_case(c, g);
        if (!row)
            return fp8kv_fail("out of memory");
        const int top = (int)(fp8kv_splitmix64(&c->seed) % 40) - 20;
        for (int i = 0; i < bs; i++) {
            const uint64_t r = fp8kv_splitmix64(&c->seed);
            float v;
            switch (b % 3) {
            case 0: v = random_f32(&c->seed, top - 10, top); break;
            case 1: v = random_f32(&c->seed, -149, 127); break;
            default: v = ldexpf((float)((int)(r % 129) - 64), top - 4); break;
            }
            row[i] = bits_of(v);
        }
    }
    return FP8KV_OK;
}

/* ---- writing -------------------------------------------------------------------------------- */

static int add(int rc, struct fp8kv_manifest *m, const struct fp8kv_block_format *f,
               const char *name, const char *description, enum fp8kv_npy_dtype dtype, size_t rows,
               size_t cols, const void *data)
{
    return fp8kv_manifest_add_table(rc, m, "blocks", f->name, name, description, dtype, rows, cols,
                                    data);
}

/* decode_table: every scale code x every element code at G. */
static int decode_table(struct fp8kv_manifest *m, const struct fp8kv_block_format *f, uint32_t g,
                        const char *name)
{
    const size_t ns = (size_t)fp8kv_block_scale_code_count(f);
    const size_t ne = (size_t)fp8kv_element_code_count(f->element);
    uint32_t *t = malloc(ns * ne * sizeof *t);
    if (!t)
        return fp8kv_fail("out of memory");
    for (size_t s = 0; s < ns; s++)
        for (size_t c = 0; c < ne; c++)
            t[s * ne + c] = fp8kv_oracle_block_decode_one(f, g, (uint8_t)s, (uint8_t)c);
    char desc[256];
    snprintf(desc, sizeof desc,
             "f32 bits of element code c under scale code s at [s, c]%s (0x%08x)",
             f->scale_kind == FP8KV_SCALE_UE4M3 ? ", global scale G" : "", g);
    const int rc = add(0, m, f, name, desc, FP8KV_NPY_U32, ns, ne, t);
    free(t);
    return rc;
}

/* Whether the models can differ under rule r: rceil and the nvfp4 rules (block.h). */
static int models_differ(enum fp8kv_block_rule r)
{
    return r != FP8KV_RULE_FLOOR && r != FP8KV_RULE_EVEN;
}

/* encode_expected: the codes of every case under rule r and model, written as
 * <rule>[_<model>]_scale.npy and _elements.npy. */
static int encode_expected(struct fp8kv_manifest *m, const struct cases *c, enum fp8kv_block_rule r,
                           enum fp8kv_block_model model, FILE *log)
{
    const struct fp8kv_block_format *f = c->f;
    const size_t bs = (size_t)f->block_size;
    uint8_t *scale = malloc(c->n), *elem = malloc(c->n * bs), s2, e2[FP8KV_BLOCK_MAX];
    if (!scale || !elem) {
        free(scale);
        free(elem);
        return fp8kv_fail("out of memory");
    }
    size_t differ = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct fp8kv_block_params p = {r, model, c->g[i]};
        fp8kv_oracle_block_encode(f, &p, c->x + i * bs, &scale[i], elem + i * bs);
        const struct fp8kv_block_params other = {r, (enum fp8kv_block_model) !model, c->g[i]};
        fp8kv_oracle_block_encode(f, &other, c->x + i * bs, &s2, e2);
        differ += s2 != scale[i] || memcmp(e2, elem + i * bs, bs) != 0;
    }
    int rc = 0;
    if (!models_differ(r) && differ)
        rc = fp8kv_fail("%s %s: the models differ on %zu blocks (block.h says they agree)", f->name,
                        fp8kv_block_rule_names[r], differ);
    char stem[64], name[96], desc[256];
    if (models_differ(r))
        snprintf(stem, sizeof stem, "%s_%s", fp8kv_block_rule_names[r],
                 fp8kv_block_model_names[model]);
    else
        snprintf(stem, sizeof stem, "%s", fp8kv_block_rule_names[r]);
    snprintf(name, sizeof name, "%s_scale.npy", stem);
    snprintf(desc, sizeof desc,
             "scale code of each input block, rule %s, model %s; %zu of %zu blocks encode "
             "differently under the other model",
             fp8kv_block_rule_names[r], models_differ(r) ? fp8kv_block_model_names[model] : "any",
             differ, c->n);
    rc = add(rc, m, f, name, desc, FP8KV_NPY_U8, c->n, 0, scale);
    snprintf(name, sizeof name, "%s_elements.npy", stem);
    snprintf(desc, sizeof desc,
             "element codes of each input block (sign bit included), rule %s, "
             "model %s",
             fp8kv_block_rule_names[r], models_differ(r) ? fp8kv_block_model_names[model] : "any");
    rc = add(rc, m, f, name, desc, FP8KV_NPY_U8, c->n, bs, elem);
    if (rc == 0 && log)
        fprintf(log, "gen: blocks/%s %s: %zu blocks, %zu differ between the models\n", f->name,
                stem, c->n, differ);
    free(scale);
    free(elem);
    return rc;
}

static int gen_format(struct fp8kv_manifest *m, const struct fp8kv_block_format *f, FILE *log)
{
    const int nv = f->scale_kind == FP8KV_SCALE_UE4M3;
    int rc = decode_table(m, f, G_ONE, "decode.npy");
    if (nv && rc == 0)
        rc = decode_table(m, f, G_THIRD, "decode_g.npy");
    struct cases c = {.f = f, .seed = 0xB10C5EEDu + (uint64_t)f->id};
    if (rc == 0)
        rc = nv ? nv_edges(&c) : mx_edges(&c);
    if (rc == 0)
        rc = grid_ties(&c);
    if (rc == 0)
        rc = special_blocks(&c);
    if (rc == 0)
        rc = random_blocks(&c);
    rc = add(rc, m, f, "input.npy", "f32 bits of the encode cases' input blocks, one per row",
             FP8KV_NPY_U32, c.n, (size_t)f->block_size, c.x);
    if (nv)
        rc = add(rc, m, f, "global_scale.npy", "f32 bits of each block's global decode scale G",
                 FP8KV_NPY_U32, c.n, 0, c.g);
    for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT && rc == 0; r++) {
        if (!fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r))
            continue;
        for (int model = 0; model < FP8KV_BLOCK_MODEL_COUNT && rc == 0; model++)
            if (model == 0 || models_differ((enum fp8kv_block_rule)r))
                rc = encode_expected(m, &c, (enum fp8kv_block_rule)r, (enum fp8kv_block_model)model,
                                     log);
    }
    free(c.x);
    free(c.g);
    return rc;
}

int fp8kv_gen_blocks(struct fp8kv_manifest *m, FILE *log)
{
    int rc = 0;
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT && rc == 0; i++)
        rc = gen_format(m, &fp8kv_block_formats[i], log);
    return rc;
}
