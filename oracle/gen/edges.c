/* edges.c — the edge inputs, and the small vector helpers the generator shares. */
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"
#include "sets.h"

int fp8kv_u32vec_push(struct fp8kv_u32vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        uint32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return fp8kv_fail("out of memory");
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return FP8KV_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void fp8kv_u32vec_sort_unique(struct fp8kv_u32vec *a)
{
    if (a->n == 0)
        return;
    qsort(a->v, a->n, sizeof *a->v, cmp_u32);
    size_t k = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->v[i] != a->v[k - 1])
            a->v[k++] = a->v[i];
    a->n = k;
}

void fp8kv_u32vec_free(struct fp8kv_u32vec *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

/* x and its ±1, ±2 ulp neighbours among positive finite f32, in both signs. */
static int push_neighbourhood(struct fp8kv_u32vec *out, uint32_t x)
{
    int rc = 0;
    for (int d = -2; d <= 2 && rc == 0; d++) {
        int64_t y = (int64_t)x + d;
        if (y < 0 || y > 0x7F7FFFFF)
            continue;
        rc = fp8kv_u32vec_push(out, (uint32_t)y);
        if (rc == 0)
            rc = fp8kv_u32vec_push(out, (uint32_t)y | 0x80000000u);
    }
    return rc;
}

static uint32_t bits_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

int fp8kv_edge_inputs(const struct fp8kv_format *f, struct fp8kv_u32vec *out)
{
    int rc = 0;
    /* code values and the midpoints between neighbours; the last midpoint is the overflow
     * midpoint between max and the first value above it. Sums and halvings of values with at
     * most 5 significant bits are exact in float. */
    float prev = 0.0f;
    for (unsigned k = 0; k <= f->max_code && rc == 0; k++) {
        uint32_t vb = fp8kv_oracle_decode_f32(f, (uint8_t)k);
        float v;
        memcpy(&v, &vb, sizeof v);
        rc = push_neighbourhood(out, vb);
        if (k > 0 && rc == 0)
            rc = push_neighbourhood(out, bits_of((prev + v) / 2.0f));
        prev = v;
    }
    uint32_t below_max_bits = fp8kv_oracle_decode_f32(f, (uint8_t)(f->max_code - 1));
    float below_max;
    memcpy(&below_max, &below_max_bits, sizeof below_max);
    float overflow_midpoint = prev + (prev - below_max) / 2.0f;
    if (rc == 0)
        rc = push_neighbourhood(out, bits_of(overflow_midpoint));
    /* powers of two and 1.5 times them over the whole f32 range: far-below-subnormal inputs
     * (defect 4 of docs/DESIGN.md §1.4), the overflow region, the f16 range edge */
    for (int e = -149; e <= 127 && rc == 0; e++) {
        uint32_t p = e < -126 ? 1u << (e + 149) : (uint32_t)(e + 127) << 23;
        rc = fp8kv_u32vec_push(out, p);
        if (rc == 0)
            rc = fp8kv_u32vec_push(out, p | 0x80000000u);
        if (rc == 0 && e >= -126 && e < 127)
            rc = push_neighbourhood(out, p | 0x00400000u);
    }
    static const uint32_t specials[] = {
        0x00000000, 0x00000001, 0x00000002, 0x00000400, 0x00400000, 0x007FFFFF, /* ±0, denormals */
        0x477FE000, 0x477FF000, 0x477FF001,             /* 65504 (f16 max), 65520, just above */
        0x43F00000, 0x43EB0000, 0x43F80000, 0x44000000, /* 480, 470, 496, 512 */
        0x7F7FFFFF,                                     /* FLT_MAX */
        0x7F800000,                                     /* Inf */
        0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FC00001, 0x7FA00000, /* quiet/signalling NaNs */
    };
    for (size_t i = 0; i < sizeof specials / sizeof specials[0] && rc == 0; i++) {
        rc = fp8kv_u32vec_push(out, specials[i]);
        if (rc == 0)
            rc = fp8kv_u32vec_push(out, specials[i] | 0x80000000u);
    }
    if (rc == 0)
        fp8kv_u32vec_sort_unique(out);
    return rc;
}
