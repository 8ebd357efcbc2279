/* block/judge.c — block codecs judged against the exact oracle (fp8kv/block_judge.h). */
#include "fp8kv/block_judge.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/codec.h"
#include "fp8kv/diag.h"
#include "fp8kv/spec.h"

struct fp8kv_block_params fp8kv_block_params_of(const struct fp8kv_block_under_test *s, float G)
{
    struct fp8kv_block_params p = {s->rule, s->model, fp8kv_f32_bits(G)};
    return p;
}

/* ---- decode: every (scale, element) pair ---- */

int fp8kv_block_judge_decode(const struct fp8kv_block_under_test *s, float G,
                             struct fp8kv_block_report *r)
{
    const struct fp8kv_block_format *f = s->format;
    if (!fp8kv_block_can_decode(s)) {
        fp8kv_block_report_note(r, "decode: %s has no decode, not checked", s->subject->name);
        return FP8KV_OK;
    }
    const int bs = f->block_size, nscales = fp8kv_block_scale_code_count(f);
    const int ncodes = fp8kv_element_code_count(f->element);
    const int per_scale = (ncodes + bs - 1) / bs; /* blocks per scale code */
    const size_t nblocks = (size_t)nscales * (size_t)per_scale;
    uint8_t *scales = malloc(nblocks), *elements = malloc(nblocks * (size_t)bs);
    float *y = malloc(nblocks * (size_t)bs * sizeof *y);
    uint32_t *expected = malloc(nblocks * (size_t)bs * sizeof *expected);
    if (!scales || !elements || !y || !expected) {
        free(scales), free(elements), free(y), free(expected);
        return fp8kv_fail("out of memory");
    }
    const uint32_t gbits = fp8kv_f32_bits(G);
#pragma omp parallel for schedule(dynamic, 4)
    for (size_t b = 0; b < nblocks; b++) {
        scales[b] = (uint8_t)(b / (size_t)per_scale);
        for (int i = 0; i < bs; i++) {
            const size_t k = b * (size_t)bs + (size_t)i;
            elements[k] =
                (uint8_t)(((b % (size_t)per_scale) * (size_t)bs + (size_t)i) % (size_t)ncodes);
            expected[k] = fp8kv_oracle_block_decode_one(f, gbits, scales[b], elements[k]);
        }
    }
    int rc = fp8kv_block_decode(s, 0, scales, elements, nblocks, G, y);
    r->ran[FP8KV_BLOCK_CHECK_DECODE] = 1;
    for (size_t k = 0; rc == FP8KV_OK && k < nblocks * (size_t)bs; k++) {
        r->checked[FP8KV_BLOCK_CHECK_DECODE]++;
        const uint32_t got = fp8kv_f32_bits(y[k]);
        if (fp8kv_block_same_value(expected[k], got))
            continue;
        r->wrong[FP8KV_BLOCK_CHECK_DECODE]++;
        fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_DECODE,
                                "decode scale %02x element %02x (G %a): expected 0x%08x got 0x%08x",
                                scales[k / (size_t)bs], elements[k], (double)G, expected[k], got);
    }
    free(scales), free(elements), free(y), free(expected);
    return rc;
}

/* ---- the element sweep under a fixed scale ---- */

#define MAX_RUNS FP8KV_BLOCK_MAX_RUNS

/* The runs of the inputs sign | [0, anchor] under scale code scale: each the largest stretch
 * with one oracle code, found by binary search (the code is monotone in the magnitude). */
static int element_runs(const struct fp8kv_block_format *f, const struct fp8kv_block_params *p,
                        uint8_t scale, uint32_t sign, uint32_t anchor, struct fp8kv_block_run *runs)
{
    int n = 0;
    for (uint64_t start = 0; start <= anchor && n < MAX_RUNS;) {
        const uint8_t code = fp8kv_oracle_block_element(f, p, scale, sign | (uint32_t)start);
        uint64_t lo = start, hi = anchor; /* the run's last magnitude lies in [lo, hi] */
        while (lo < hi) {
            const uint64_t mid = lo + (hi - lo + 1) / 2;
            if (fp8kv_oracle_block_element(f, p, scale, sign | (uint32_t)mid) == code)
                lo = mid;
            else
                hi = mid - 1;
        }
        runs[n++] = (struct fp8kv_block_run){(uint32_t)start, code};
        start = lo + 1;
    }
    return n;
}

/* The largest amax (f32 bits) whose oracle scale code is at most scale; 0 with *found 0 when
 * no amax has exactly that scale. */
static uint32_t scale_anchor(const struct fp8kv_block_format *f, const struct fp8kv_block_params *p,
                             uint8_t scale, int *found)
{
    uint64_t lo = 0, hi = 0x7F7FFFFFu;
    if (fp8kv_oracle_block_scale(f, p, 0) > scale) {
        *found = 0;
        return 0;
    }
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (fp8kv_oracle_block_scale(f, p, (uint32_t)mid) <= scale)
            lo = mid;
        else
            hi = mid - 1;
    }
    *found = fp8kv_oracle_block_scale(f, p, (uint32_t)lo) == scale;
    return (uint32_t)lo;
}

int fp8kv_block_sweep_table(const struct fp8kv_block_format *f,
                            const struct fp8kv_block_params *params,
                            struct fp8kv_block_sweep_point pt, struct fp8kv_block_sweep_table *t)
{
    int found;
    t->anchor = scale_anchor(f, params, pt.scale, &found);
    if (!found)
        return 0;
    for (int sg = 0; sg < 2; sg++)
        t->nruns[sg] =
            element_runs(f, params, pt.scale, (uint32_t)sg << 31, t->anchor, t->runs[sg]);
    t->anchor_code = fp8kv_oracle_block_element(f, params, pt.scale, t->anchor);
    return 1;
}

/* The code runs[] gives magnitude m (runs sorted by start; *cursor a hint, moved along). */
static uint8_t run_code(const struct fp8kv_block_run *runs, int n, int *cursor, uint32_t m)
{
    int i = *cursor < n ? *cursor : n - 1;
    if (runs[i].start > m)
        i = 0;
    while (i + 1 < n && runs[i + 1].start <= m)
        i++;
    *cursor = i;
    return (uint8_t)runs[i].code;
}

enum { SWEEP_CHUNK = 4096 }; /* blocks per subject call */

/* The sweep of table at pt run inside the subject (a device): its counts and first failures
 * into r. */
static int sweep_in_subject(const struct fp8kv_block_under_test *s,
                            struct fp8kv_block_sweep_point pt,
                            const struct fp8kv_block_sweep_table *table, uint64_t ninputs,
                            struct fp8kv_block_report *r)
{
    const struct fp8kv_block_run *const runs[2] = {table->runs[0], table->runs[1]};
    struct fp8kv_block_sweep_result res;
    memset(&res, 0, sizeof res);
    const struct fp8kv_block_kernels *k = s->subject->block;
    const int status = k->sweep(k->ctx, fp8kv_block_cfg(s, pt.G), pt.scale, table->anchor,
                                table->anchor_code, runs, table->nruns, &res);
    if (status != FP8KV_OK)
        return status;
    r->checked[FP8KV_BLOCK_CHECK_SWEEP] += res.checked;
    r->wrong[FP8KV_BLOCK_CHECK_SWEEP] += res.wrong;
    for (int i = 0; i < res.nfirst && i < FP8KV_BLOCK_SWEEP_FAILURES; i++)
        fp8kv_block_report_fail(
            r, FP8KV_BLOCK_CHECK_SWEEP,
            "sweep scale %02x (G %a): %s 0x%08x: %s expected %02x got %02x", pt.scale, (double)pt.G,
            res.first[i].is_scale ? "block of input" : "input", res.first[i].input,
            res.first[i].is_scale ? "scale" : "element", res.first[i].expected, res.first[i].got);
    fp8kv_block_report_note(r, "sweep scale %02x on the device: %.3f ms", pt.scale, res.ms);
    fp8kv_block_report_note(r, "sweep scale %02x (G %a): %llu inputs |x| <= 0x%08x on %s", pt.scale,
                            (double)pt.G, (unsigned long long)ninputs, table->anchor,
                            s->subject->name);
    return FP8KV_OK;
}

/* Chunk c of the sweep (blocks b0 .. b0 + nb of every input's number k < ninputs, sign then
 * magnitude, block_size - 1 a block after the anchor): its inputs into x, the oracle's codes
 * into expected. */
static void fill_sweep_chunk(const struct fp8kv_block_sweep_table *table, size_t bs, uint64_t b0,
                             size_t nb, uint64_t ninputs, float *x, uint8_t *expected)
{
    const size_t per = bs - 1;
    const uint32_t anchor = table->anchor;
    int cursor[2] = {0, 0};
    for (size_t b = 0; b < nb; b++) {
        x[b * bs] = fp8kv_f32_from_bits(anchor);
        expected[b * bs] = table->anchor_code;
        for (size_t i = 0; i < per; i++) {
            const uint64_t k = (b0 + b) * per + i; /* the input's number */
            uint32_t bits = 0;                     /* padding past the last input */
            if (k < ninputs)
                bits = (uint32_t)(k / ((uint64_t)anchor + 1)) << 31 |
                       (uint32_t)(k % ((uint64_t)anchor + 1));
            const int sg = (int)(bits >> 31);
            x[b * bs + 1 + i] = fp8kv_f32_from_bits(bits);
            expected[b * bs + 1 + i] =
                run_code(table->runs[sg], table->nruns[sg], &cursor[sg], bits & 0x7FFFFFFFu);
        }
    }
}

/* Judges one encoded chunk (fill_sweep_chunk's): each block's scale against pt.scale, each
 * element against expected (padding past ninputs skipped); the number wrong, failures into r. */
static uint64_t judge_sweep_chunk(struct fp8kv_block_sweep_point pt, size_t bs, uint64_t b0,
                                  size_t nb, uint64_t ninputs, const float *x,
                                  const uint8_t *expected, const uint8_t *scales,
                                  const uint8_t *elements, struct fp8kv_block_report *r)
{
    const size_t per = bs - 1;
    uint64_t wrong = 0;
    for (size_t b = 0; b < nb; b++) {
        if (scales[b] != pt.scale) {
            wrong++;
            fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_SWEEP,
                                    "sweep scale %02x (G %a): block of inputs 0x%08x .. 0x%08x: "
                                    "scale expected %02x got %02x",
                                    pt.scale, (double)pt.G, fp8kv_f32_bits(x[b * bs + 1]),
                                    fp8kv_f32_bits(x[b * bs + bs - 1]), pt.scale, scales[b]);
        }
        for (size_t i = 0; i < bs; i++) {
            const size_t k = b * bs + i;
            if (elements[k] == expected[k] || (i > 0 && (b0 + b) * per + i - 1 >= ninputs))
                continue;
            wrong++;
            fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_SWEEP,
                                    "sweep scale %02x (G %a): input 0x%08x: element "
                                    "expected %02x got %02x",
                                    pt.scale, (double)pt.G, fp8kv_f32_bits(x[k]), expected[k],
                                    elements[k]);
        }
    }
    return wrong;
}

int fp8kv_block_judge_sweep(const struct fp8kv_block_under_test *s,
                            struct fp8kv_block_sweep_point pt, struct fp8kv_block_report *r)
{
    const struct fp8kv_block_format *f = s->format;
    if (s->rule == FP8KV_RULE_4OVER6) {
        fp8kv_block_report_note(r, "sweep: not for 4over6 (the scale is chosen per block by its "
                                   "squared errors): the blocks check covers it");
        return FP8KV_OK;
    }
    const struct fp8kv_block_params p = fp8kv_block_params_of(s, pt.G);
    struct fp8kv_block_sweep_table table;
    if (!fp8kv_block_sweep_table(f, &p, pt, &table)) {
        fp8kv_block_report_note(r, "sweep: no block has scale code %02x under %s %s", pt.scale,
                                fp8kv_block_rule_names[s->rule], fp8kv_block_model_names[s->model]);
        return FP8KV_OK;
    }
    const size_t bs = (size_t)f->block_size, per = bs - 1; /* inputs per block */
    const uint64_t ninputs = 2 * ((uint64_t)table.anchor + 1);
    const uint64_t nblocks = (ninputs + per - 1) / per;
    const uint64_t nchunks = (nblocks + SWEEP_CHUNK - 1) / SWEEP_CHUNK;
    r->ran[FP8KV_BLOCK_CHECK_SWEEP] = 1;
    if (fp8kv_block_can_sweep(s))
        return sweep_in_subject(s, pt, &table, ninputs, r);
    int status = FP8KV_OK;
    char message[1024] = "";
    uint64_t checked = 0, wrong = 0;
#pragma omp parallel num_threads(s->workers) reduction(+ : checked, wrong)
    {
        const int worker = omp_get_thread_num();
        float *x = malloc(SWEEP_CHUNK * bs * sizeof *x);
        uint8_t *scales = malloc(SWEEP_CHUNK), *elements = malloc(SWEEP_CHUNK * bs);
        uint8_t *expected = malloc(SWEEP_CHUNK * bs);
        if (!x || !scales || !elements || !expected) {
#pragma omp critical(fp8kv_block_sweep_status)
            {
                status = FP8KV_ERR;
                snprintf(message, sizeof message, "out of memory");
            }
        }
#pragma omp for schedule(dynamic, 1)
        for (uint64_t c = 0; c < nchunks; c++) {
            int stop;
#pragma omp atomic read
            stop = status;
            if (stop != FP8KV_OK)
                continue;
            const uint64_t b0 = c * SWEEP_CHUNK;
            const size_t nb = (size_t)(nblocks - b0 < SWEEP_CHUNK ? nblocks - b0 : SWEEP_CHUNK);
            fill_sweep_chunk(&table, bs, b0, nb, ninputs, x, expected);
            const int rc = fp8kv_block_encode(s, worker, x, nb, pt.G, scales, elements);
            if (rc != FP8KV_OK) {
#pragma omp critical(fp8kv_block_sweep_status)
                if (status == FP8KV_OK) { /* the message is this thread's: keep it */
                    status = rc;
                    snprintf(message, sizeof message, "%s; the sweep's inputs 0x%08x .. 0x%08x",
                             fp8kv_last_error(), fp8kv_f32_bits(x[1]),
                             fp8kv_f32_bits(x[nb * bs - 1]));
                }
                continue;
            }
            checked += nb * bs;
            wrong += judge_sweep_chunk(pt, bs, b0, nb, ninputs, x, expected, scales, elements, r);
        }
        free(x), free(scales), free(elements), free(expected);
    }
    r->checked[FP8KV_BLOCK_CHECK_SWEEP] += checked;
    r->wrong[FP8KV_BLOCK_CHECK_SWEEP] += wrong;
    if (status != FP8KV_OK)
        fp8kv_fail("%s", message); /* on the caller's thread */
    if (status == FP8KV_OK)
        fp8kv_block_report_note(r,
                                "sweep scale %02x (G %a): %llu inputs |x| <= 0x%08x, %d + %d runs",
                                pt.scale, (double)pt.G, (unsigned long long)ninputs, table.anchor,
                                table.nruns[0], table.nruns[1]);
    return status;
}

/* ---- random and edge blocks ---- */

/* A uniform double in [0, 1). */
static double uniform(uint64_t *state)
{
    return (double)(fp8kv_splitmix64(state) >> 11) * 0x1p-53;
}

/* A finite f32 with random bits (an all-ones exponent field loses its top bit). */
static uint32_t random_finite(uint64_t *state)
{
    uint32_t b = (uint32_t)fp8kv_splitmix64(state);
    return (b & 0x7F800000u) == 0x7F800000u ? b & ~0x40000000u : b;
}

/* The f32 bits of v (a double in the f32 range) moved by d ulps (within the finite range). */
static uint32_t near_bits(double v, int d)
{
    const uint32_t b = fp8kv_f32_bits((float)v), sign = b & 0x80000000u, mag = b & 0x7FFFFFFFu;
    const int64_t m = (int64_t)mag + d;
    return sign | (uint32_t)(m < 0 ? 0 : m > 0x7F7FFFFF ? 0x7F7FFFFF : m);
}

void fp8kv_block_fill_block(const struct fp8kv_block_format *f, uint64_t *state, size_t index,
                            uint32_t *x)
{
    const int bs = f->block_size, nv = f->scale_kind == FP8KV_SCALE_UE4M3;
    const double max_elem = f->element->max_value;
    /* a block scale unit: 2^k (MX) or s G-like (NVFP4: a random e4m3-ish s times G) */
    const int k = (int)(fp8kv_splitmix64(state) % 60) - 30;
    const double unit = ldexp(nv ? 1.0 + (double)(fp8kv_splitmix64(state) % 8) / 8 : 1.0, k);
    const uint64_t pick = fp8kv_splitmix64(state);
    switch (index % 8) {
    case 0: /* random bits over the whole finite range */
        for (int i = 0; i < bs; i++)
            x[i] = random_finite(state);
        break;
    case 1: /* amax at and around max_elem 2^k (and 6 G, 4 G-like quotients), smaller others */
    {
        const double amax = max_elem * ldexp(1.0, (int)(pick % 250) - 130) *
                            (nv ? 1.0 + (double)(pick >> 40 & 7) / 8 : 1.0);
        for (int i = 0; i < bs; i++)
            x[i] = near_bits(amax * uniform(state), 0) ^ ((uint32_t)(pick >> (i & 31)) << 31);
        x[pick % (uint64_t)bs] = near_bits(amax, (int)(pick >> 8 & 7) - 3);
        break;
    }
    case 2: /* element-grid midpoints and their neighbours under the block's unit */
    {
        const int m = f->element->man_bits;
        for (int i = 0; i < bs; i++) {
            const uint64_t t = fp8kv_splitmix64(state);
            /* an odd multiple of half a step in a binade of the element grid */
            const int e =
                (int)(t % (uint64_t)(f->element->emax + f->element->bias)) + 1 - f->element->bias;
            const double step = ldexp(1.0, e - m);
            const double mid = ldexp(1.0, e) + step * ((double)((t >> 8) % (1u << m)) + 0.5);
            x[i] = near_bits(mid * unit * ((t >> 20) & 1 ? -1 : 1), (int)(t >> 24 & 3) - 1);
        }
        x[pick % (uint64_t)bs] = near_bits(max_elem * unit, 0);
        break;
    }
    case 3: /* tiny: f32 subnormals and the smallest normals */
        for (int i = 0; i < bs; i++)
            x[i] = (uint32_t)(fp8kv_splitmix64(state) % 0x01000000u) |
                   (uint32_t)(fp8kv_splitmix64(state) & 1) << 31;
        break;
    case 4: /* zeros of both signs, a few small values */
        for (int i = 0; i < bs; i++) {
            const uint64_t t = fp8kv_splitmix64(state);
            x[i] =
                (t & 3) == 0 ? near_bits(unit * uniform(state), 0) : (uint32_t)(t >> 2 & 1) << 31;
        }
        if (pick & 1)
            memset(x, 0, (size_t)bs * sizeof *x);
        break;
    case 5: /* a NaN or an Inf among random values */
        for (int i = 0; i < bs; i++)
            x[i] = random_finite(state);
        x[pick % (uint64_t)bs] =
            (pick >> 8 & 1 ? 0x7FC00000u : 0x7F800000u) | (uint32_t)(pick >> 9 & 1) << 31;
        break;
    case 6: /* Gaussian-like (a sum of four uniforms) times the unit */
        for (int i = 0; i < bs; i++) {
            double g = 0;
            for (int j = 0; j < 4; j++)
                g += uniform(state) - 0.5;
            x[i] = near_bits(g * 2 * max_elem * unit, 0);
        }
        break;
    default: /* a few outliers 10-1000 times the rest */
        for (int i = 0; i < bs; i++) {
            const double g = uniform(state) - 0.5;
            const double big = (fp8kv_splitmix64(state) % 8) == 0 ? 10 + 990 * uniform(state) : 1;
            x[i] = near_bits(g * big * unit, 0);
        }
        break;
    }
}

int fp8kv_block_judge_blocks(const struct fp8kv_block_under_test *s, float G, uint64_t seed,
                             size_t nblocks, struct fp8kv_block_report *r)
{
    const struct fp8kv_block_format *f = s->format;
    const size_t bs = (size_t)f->block_size;
    const struct fp8kv_block_params p = fp8kv_block_params_of(s, G);
    uint32_t *x = malloc(nblocks * bs * sizeof *x);
    uint8_t *es = malloc(nblocks), *ee = malloc(nblocks * bs);
    uint8_t *gs = malloc(nblocks), *ge = malloc(nblocks * bs);
    if (!x || !es || !ee || !gs || !ge) {
        free(x), free(es), free(ee), free(gs), free(ge);
        return fp8kv_fail("out of memory");
    }
    uint64_t state = seed;
    for (size_t b = 0; b < nblocks; b++)
        fp8kv_block_fill_block(f, &state, b, x + b * bs);
#pragma omp parallel for schedule(dynamic, 16)
    for (size_t b = 0; b < nblocks; b++)
        fp8kv_oracle_block_encode(f, &p, x + b * bs, es + b, ee + b * bs);
    const int rc = fp8kv_block_encode(s, 0, (const float *)(const void *)x, nblocks, G, gs, ge);
    r->ran[FP8KV_BLOCK_CHECK_BLOCKS] = 1;
    for (size_t b = 0; rc == FP8KV_OK && b < nblocks; b++) {
        r->checked[FP8KV_BLOCK_CHECK_BLOCKS] += 1 + bs;
        const uint32_t *xb = x + b * bs;
        if (gs[b] != es[b]) {
            r->wrong[FP8KV_BLOCK_CHECK_BLOCKS]++;
            fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_BLOCKS,
                                    "block %zu (seed %llu, G %a; inputs 0x%08x 0x%08x ..): scale "
                                    "expected %02x got %02x",
                                    b, (unsigned long long)seed, (double)G, xb[0], xb[1], es[b],
                                    gs[b]);
        }
        for (size_t i = 0; i < bs; i++) {
            if (ge[b * bs + i] == ee[b * bs + i])
                continue;
            r->wrong[FP8KV_BLOCK_CHECK_BLOCKS]++;
            fp8kv_block_report_fail(r, FP8KV_BLOCK_CHECK_BLOCKS,
                                    "block %zu (seed %llu, G %a) element %zu: input 0x%08x "
                                    "(scale %02x): expected %02x got %02x",
                                    b, (unsigned long long)seed, (double)G, i, xb[i], es[b],
                                    ee[b * bs + i], ge[b * bs + i]);
        }
    }
    free(x), free(es), free(ee), free(gs), free(ge);
    return rc;
}

const struct fp8kv_block_oracle_judges fp8kv_block_oracle_judges = {
    fp8kv_block_judge_decode, fp8kv_block_judge_sweep, fp8kv_block_judge_blocks};
