/* block/audit.c — two block codecs compared on seeded data sets (fp8kv/block_audit.h). */
#include "fp8kv/block_audit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/spec.h"

const char *const fp8kv_block_dataset_names[FP8KV_DATA_COUNT] = {"gaussian", "outliers", "kv"};

/* ---- data ---- */

static double uniform01(uint64_t *state) /* (0, 1) */
{
    return ((double)(fp8kv_splitmix64(state) >> 11) + 0.5) * 0x1p-53;
}

static double gaussian(uint64_t *state)
{
    const double u = uniform01(state), v = uniform01(state);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

enum { KV_CHANNELS = 128, KV_LOUD = 4 };

void fp8kv_block_dataset_fill(enum fp8kv_block_dataset d, uint64_t seed, size_t n, float *x)
{
    uint64_t state = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(d + 1));
    double channel[KV_CHANNELS];
    for (int c = 0; c < KV_CHANNELS; c++)
        channel[c] = 1.0;
    for (int k = 0; d == FP8KV_DATA_KV && k < KV_LOUD; k++) /* 4 loud channels, 10x .. 100x */
        channel[fp8kv_splitmix64(&state) % KV_CHANNELS] = pow(10.0, 1.0 + uniform01(&state));
    double row = 1.0;
    for (size_t i = 0; i < n; i++) {
        double v = gaussian(&state);
        if (d == FP8KV_DATA_OUTLIERS && fp8kv_splitmix64(&state) % 64 == 0)
            v *= pow(10.0, 1.0 + uniform01(&state));
        if (d == FP8KV_DATA_KV) {
            if (i % KV_CHANNELS == 0) { /* a new row (token): |t_4| = |z| / sqrt(chi2_4 / 4) */
                double chi2 = 0;
                for (int k = 0; k < 4; k++) {
                    const double z = gaussian(&state);
                    chi2 += z * z;
                }
                row = fabs(gaussian(&state)) / sqrt(chi2 / 4);
                row = row < 0.25 ? 0.25 : row;
            }
            v *= channel[i % KV_CHANNELS] * row;
        }
        x[i] = (float)v;
    }
}

float fp8kv_block_dataset_global_scale(const float *x, size_t n)
{
    float amax = 0;
    for (size_t i = 0; i < n; i++)
        amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    return amax > 0 ? amax / (6.0f * 448.0f) : 1.0f;
}

/* ---- exact decoding ---- */

/* The exact value of element code c of e (finite codes; the data sets make no NaN blocks). */
static double element_value(const struct fp8kv_element_format *e, unsigned c)
{
    const unsigned mag = c & (e->sign_bit - 1u), field = mag >> e->man_bits;
    const unsigned man = mag & ((1u << e->man_bits) - 1u);
    const double v = field ? ldexp(1.0 + ldexp(man, -e->man_bits), (int)field - e->bias)
                           : ldexp(man, 1 - e->bias - e->man_bits);
    return (c & e->sign_bit) ? -v : v;
}

/* The decoded scale S of scale code s: 2^(s - 127) (E8M0) or s_value * G (UE4M3), exact. */
static double scale_value(const struct fp8kv_block_format *f, uint8_t s, float G)
{
    if (f->scale_kind == FP8KV_SCALE_E8M0)
        return ldexp(1.0, (int)s - 127);
    return element_value(&fp8kv_element_formats[FP8KV_ELEM_E4M3], s) * (double)G;
}

/* ---- the audit ---- */

int fp8kv_block_audit_run(const struct fp8kv_block_under_test *side[2], enum fp8kv_block_dataset d,
                          uint64_t seed, size_t nblocks, struct fp8kv_block_audit_row *row)
{
    const struct fp8kv_block_format *f = side[0]->format;
    const size_t bs = (size_t)f->block_size, n = nblocks * bs;
    const struct fp8kv_element_format *e = f->element;
    float *x = malloc(n * sizeof *x);
    uint8_t *scales[2] = {malloc(nblocks), malloc(nblocks)};
    uint8_t *elems[2] = {malloc(n), malloc(n)};
    int rc = FP8KV_OK;
    if (!x || !scales[0] || !scales[1] || !elems[0] || !elems[1])
        rc = fp8kv_fail("out of memory");
    memset(row, 0, sizeof *row);
    if (rc == FP8KV_OK) {
        fp8kv_block_dataset_fill(d, seed, n, x);
        row->G = f->scale_kind == FP8KV_SCALE_UE4M3 ? fp8kv_block_dataset_global_scale(x, n) : 1;
    }
    for (int k = 0; k < 2 && rc == FP8KV_OK; k++)
        rc = fp8kv_block_encode(side[k], 0, x, nblocks, row->G, scales[k], elems[k]);
    /* the midpoint above max_elem on the unbounded grid: max + half its binade's step */
    const double clip = element_value(e, e->max_code) + ldexp(1.0, e->emax - e->man_bits - 1);
    double err[2] = {0, 0}, energy = 0;
    for (size_t b = 0; rc == FP8KV_OK && b < nblocks; b++) {
        int differ = scales[0][b] != scales[1][b];
        double amax = 0;
        for (size_t i = 0; i < bs; i++) {
            const double xi = x[b * bs + i];
            amax = fabs(xi) > amax ? fabs(xi) : amax;
            energy += xi * xi;
            const int de = elems[0][b * bs + i] != elems[1][b * bs + i];
            row->elements_differ += (uint64_t)de;
            differ |= de;
        }
        row->blocks_differ += (uint64_t)differ;
        for (int k = 0; k < 2; k++) {
            const double S = scale_value(f, scales[k][b], row->G);
            for (size_t i = 0; i < bs; i++) {
                const double y = element_value(e, elems[k][b * bs + i]) * S;
                err[k] += (y - x[b * bs + i]) * (y - x[b * bs + i]);
            }
            row->clipped[k] += (uint64_t)(amax > clip * S);
        }
    }
    row->blocks = nblocks;
    row->elements = n;
    for (int k = 0; k < 2; k++)
        row->nmse[k] = energy > 0 ? err[k] / energy : 0;
    free(x), free(scales[0]), free(scales[1]), free(elems[0]), free(elems[1]);
    return rc;
}
