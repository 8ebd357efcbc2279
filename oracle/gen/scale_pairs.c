/* scale_pairs.c — inputs of the store-with-scale set: where the scale models disagree. */
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"
#include "sets.h"

/* powers of two; the scales of defects 7-9 of docs/DESIGN.md §1.4 (0.1f, 3.0f) and 1.7f; typical KV
 * scales (amax / 448); very small and very large; two f32-denormal scales. */
const uint32_t fp8kv_gen_scales[] = {
    0x3F800000, /* 1 */ 0x3F000000,      /* 0.5 */ 0x40000000,    /* 2 */
    0x3B800000, /* 2^-8 */ 0x43800000,   /* 2^8 */ 0x3DCCCCCD,    /* 0.1f */
    0x3FD9999A, /* 1.7f */ 0x40400000,   /* 3.0f */ 0x3C4985F0,   /* 0.0123f */
    0x3F333333, /* 0.7f */ 0x0DA24260,   /* 1e-30f */ 0x7149F2CA, /* 1e30f */
    0x00002000, /* 2^-136 */ 0x00123456,                          /* denormal */
};
const size_t fp8kv_gen_scale_count = sizeof fp8kv_gen_scales / sizeof fp8kv_gen_scales[0];

/* The largest finite magnitude of each dtype, as its bits. */
static const uint32_t max_finite[FP8KV_DTYPE_COUNT] = {0x7F7FFFFFu, 0x7BFFu, 0x7F7Fu};

static int push_pair(struct fp8kv_scale_pairs *p, uint32_t x, uint8_t dtype, uint32_t s)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4096;
        uint32_t *x2 = realloc(p->x, cap * sizeof *x2);
        if (x2)
            p->x = x2;
        uint32_t *s2 = realloc(p->s, cap * sizeof *s2);
        if (s2)
            p->s = s2;
        uint8_t *d2 = realloc(p->dtype, cap);
        if (d2)
            p->dtype = d2;
        if (!x2 || !s2 || !d2)
            return fp8kv_fail("out of memory");
        p->cap = cap;
    }
    p->x[p->n] = x;
    p->s[p->n] = s;
    p->dtype[p->n] = dtype;
    p->n++;
    return FP8KV_OK;
}

/* The dtype bits nearest to value * scale (both exact f32), and its ±1, ±2 neighbours, both
 * signs, finite only. */
static int push_near_product(struct fp8kv_u32vec *out, enum fp8kv_dtype dtype, uint32_t value_bits,
                             uint32_t scale_bits)
{
    float value, scale;
    memcpy(&value, &value_bits, sizeof value);
    memcpy(&scale, &scale_bits, sizeof scale);
    mpfr_t v, s;
    mpfr_inits2(64, v, s, (mpfr_ptr)0);
    mpfr_set_flt(v, value, MPFR_RNDN);
    mpfr_set_flt(s, scale, MPFR_RNDN);
    mpfr_mul(v, v, s, MPFR_RNDN); /* exact: 24 + 24 bits */
    uint32_t center = fp8kv_oracle_round_dtype(dtype, v);
    mpfr_clears(v, s, (mpfr_ptr)0);

    uint32_t sign = dtype == FP8KV_DTYPE_F32 ? 0x80000000u : 0x8000u;
    int64_t magnitude = center & (sign - 1);
    int rc = 0;
    for (int d = -2; d <= 2 && rc == 0; d++) {
        int64_t m = magnitude + d;
        if (m < 0 || m > (int64_t)max_finite[dtype])
            continue;
        rc = fp8kv_u32vec_push(out, (uint32_t)m);
        if (rc == 0)
            rc = fp8kv_u32vec_push(out, (uint32_t)m | sign);
    }
    return rc;
}

/* A pseudo-random quotient magnitude 2^e * (1 + u), e in [-12, 9], u in [0, 1), as f32. */
static uint32_t random_quotient(uint64_t *state)
{
    uint64_t r = fp8kv_splitmix64(state);
    uint32_t exponent = (uint32_t)(127 - 12 + (int)(r % 22));
    uint32_t fraction = (uint32_t)(r >> 32) & 0x7FFFFFu;
    return (exponent << 23) | fraction | (uint32_t)((r >> 8) & 1u) << 31;
}

static int specials_for(struct fp8kv_u32vec *out, enum fp8kv_dtype dtype)
{
    static const uint32_t f32[] = {0x00000000, 0x7F800000, 0x7FC00000,
                                   0x3F800000, 0x00000001, 0x7F7FFFFF};
    static const uint32_t f16[] = {0x0000, 0x7C00, 0x7E00, 0x3C00, 0x0001, 0x7BFF};
    static const uint32_t bf16[] = {0x0000, 0x7F80, 0x7FC0, 0x3F80, 0x0001, 0x7F7F};
    const uint32_t *list = dtype == FP8KV_DTYPE_F32 ? f32 : dtype == FP8KV_DTYPE_F16 ? f16 : bf16;
    uint32_t sign = dtype == FP8KV_DTYPE_F32 ? 0x80000000u : 0x8000u;
    int rc = 0;
    for (int i = 0; i < 6 && rc == 0; i++) {
        rc = fp8kv_u32vec_push(out, list[i]);
        if (rc == 0)
            rc = fp8kv_u32vec_push(out, list[i] | sign);
    }
    return rc;
}

/* defects 7-9 of docs/DESIGN.md §1.4, by (dtype, x, scale). */
static const struct {
    enum fp8kv_dtype dtype;
    uint32_t x, s;
} defect_pairs[] = {
    {FP8KV_DTYPE_F16, 0x1334, 0x3DCCCCCD},     /* 7: f16 double rounding, scale 0.1f */
    {FP8KV_DTYPE_F32, 0x3D63FFFF, 0x40400000}, /* 8: reciprocal, scale 3.0f */
    {FP8KV_DTYPE_F32, 0x3A333333, 0x3DCCCCCD}, /* 9: RN32 lands on a midpoint, scale 0.1f */
};

int fp8kv_scale_pair_inputs(const struct fp8kv_format *f, struct fp8kv_scale_pairs *out)
{
    uint64_t state = 0x6670386B76ull; /* "fp8kv" */
    struct fp8kv_u32vec xs = {0};
    int rc = 0;
    for (size_t si = 0; si < fp8kv_gen_scale_count && rc == 0; si++) {
        uint32_t s = fp8kv_gen_scales[si];
        for (int d = 0; d < FP8KV_DTYPE_COUNT && rc == 0; d++) {
            enum fp8kv_dtype dtype = (enum fp8kv_dtype)d;
            xs.n = 0;
            /* midpoints between neighbouring codes, and the overflow midpoint */
            float prev = 0.0f, below = 0.0f;
            for (unsigned k = 0; k <= f->max_code && rc == 0; k++) {
                uint32_t vb = fp8kv_oracle_decode_f32(f, (uint8_t)k);
                float v, mid;
                memcpy(&v, &vb, sizeof v);
                mid = (prev + v) / 2.0f;
                if (k > 0) {
                    uint32_t mb;
                    memcpy(&mb, &mid, sizeof mb);
                    rc = push_near_product(&xs, dtype, mb, s);
                }
                below = prev;
                prev = v;
            }
            float overflow_midpoint = prev + (prev - below) / 2.0f;
            uint32_t ob;
            memcpy(&ob, &overflow_midpoint, sizeof ob);
            if (rc == 0)
                rc = push_near_product(&xs, dtype, ob, s);
            for (int i = 0; i < 64 && rc == 0; i++) {
                uint32_t q = random_quotient(&state);
                rc = push_near_product(&xs, dtype, q & 0x7FFFFFFFu, s);
            }
            if (rc == 0)
                rc = specials_for(&xs, dtype);
            for (size_t i = 0; i < sizeof defect_pairs / sizeof defect_pairs[0] && rc == 0; i++)
                if (defect_pairs[i].dtype == dtype && defect_pairs[i].s == s)
                    rc = fp8kv_u32vec_push(&xs, defect_pairs[i].x);
            fp8kv_u32vec_sort_unique(&xs);
            for (size_t i = 0; i < xs.n && rc == 0; i++)
                rc = push_pair(out, fp8kv_widen_to_f32(dtype, xs.v[i]), (uint8_t)dtype, s);
        }
    }
    fp8kv_u32vec_free(&xs);
    return rc;
}

void fp8kv_scale_pairs_free(struct fp8kv_scale_pairs *p)
{
    free(p->x);
    free(p->s);
    free(p->dtype);
    memset(p, 0, sizeof *p);
}
