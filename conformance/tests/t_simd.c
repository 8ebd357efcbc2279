/* t_simd.c — the host encoders' loops of every instruction set (fp8kv/cpu_isa.h) against codec.h's
 * scalar functions, byte for byte, under every configuration of the codecs (all formats, both
 * saturation rules, both Inf rules: the ten profiles' and the others).
 *
 * The inputs: every f32 whose low 16 bits are one of a few patterns (0, 1, the half-way
 * neighbours, all ones, a random one): all 2^16 high halves, so every sign, exponent and
 * rounding boundary of every format (they have at most 4 significant bits below the leading
 * one) with its neighbours; the array loops take them from an unaligned pointer with a count
 * that leaves a tail. The range loops take ranges that straddle every exponent field's first
 * input, the sign change and the end of the domain, at odd offsets. The exhaustive judgment of
 * each instruction set's loops against the oracle is t_sweep's (sweep.exhaustive). */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "fp8kv/cpu_isa.h"

/* Every configuration of the encoders: format x saturate x inf_to_nan. */
static int configuration(int k, struct fp8kv_codec_cfg *c)
{
    if (k >= FP8KV_CODEC_FORMAT_COUNT * 4)
        return 0;
    *c = (struct fp8kv_codec_cfg){(uint8_t)(k / 4), (uint8_t)(k / 2 % 2), (uint8_t)(k % 2), 0};
    return 1;
}

static uint8_t scalar_code(int frexp, struct fp8kv_codec_cfg c, uint32_t bits)
{
    return frexp ? fp8kv_encode_frexp(c, fp8kv_f32_from_bits(bits)) : fp8kv_encode_bits(c, bits);
}

static const char *const codec_names[2] = {"bits", "frexp"};

/* Asserts q[i] is the scalar code of input bits[i] for i < n. */
static void assert_codes(int isa, int frexp, struct fp8kv_codec_cfg c, const char *loop,
                         const uint32_t *bits, const uint8_t *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t want = scalar_code(frexp, c, bits[i]);
        cr_assert_eq(q[i], want,
                     "%s %s loop (%s), format %d saturate %d inf_to_nan %d: input 0x%08x "
                     "(element %zu of %zu) gave %02x, the scalar function %02x",
                     fp8kv_cpu_isa_names[isa], loop, codec_names[frexp], c.format, c.saturate,
                     c.inf_to_nan, bits[i], i, n, q[i], want);
    }
}

/* The structured inputs of the header: 2^16 high halves x the low patterns. */
static size_t structured_inputs(uint32_t **out)
{
    const uint32_t lows[] = {0x0000u, 0x0001u, 0x0002u, 0x7FFFu, 0x8000u,
                             0x8001u, 0xFFFEu, 0xFFFFu, 0x1234u};
    const size_t nl = sizeof lows / sizeof lows[0];
    uint32_t *v = malloc((65536 * nl + 1) * sizeof *v);
    cr_assert_not_null(v);
    srand(7);
    size_t n = 0;
    for (uint32_t hi = 0; hi < 65536; hi++)
        for (size_t l = 0; l < nl; l++)
            v[n++] = hi << 16 | (l + 1 < nl ? lows[l] : (uint32_t)rand() & 0xFFFFu);
    *out = v;
    return n;
}

Test(simd, the_array_loops_give_the_scalar_codes)
{
    uint32_t *bits;
    const size_t n = structured_inputs(&bits) - 3; /* a tail shorter than a vector */
    float *storage = malloc((n + 1) * sizeof *storage);
    uint8_t *q = malloc(n + 1);
    cr_assert(storage && q);
    float *x = (float *)((char *)storage + sizeof(float)); /* (only float-aligned) */
    memcpy(x, bits, n * sizeof *x);
    int isas = 0;
    for (int isa = 0; isa < FP8KV_ISA_COUNT; isa++) {
        if (!fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)isa))
            continue;
        isas++;
        struct fp8kv_codec_cfg c;
        for (int k = 0; configuration(k, &c); k++)
            for (int frexp = 0; frexp < 2; frexp++) {
                memset(q, 0xAA, n + 1);
                (frexp ? fp8kv_cpu_encode_frexp : fp8kv_cpu_encode_bits)((enum fp8kv_cpu_isa)isa, c,
                                                                         x + 1, n - 1, q + 1);
                assert_codes(isa, frexp, c, "array", bits + 1, q + 1, n - 1);
                cr_assert_eq(q[0], 0xAA, "the loop wrote before its array");
            }
    }
    cr_assert_geq(isas, 1);
    free(bits);
    free(storage);
    free(q);
}

/* Asserts the range loop of isa over [first, first + n) against the scalar codes. */
static void check_range(int isa, int frexp, struct fp8kv_codec_cfg c, uint32_t first, size_t n)
{
    uint8_t q[1024 + 1];
    uint32_t bits[1024];
    cr_assert_leq(n, 1024);
    q[n] = 0x55;
    (frexp ? fp8kv_cpu_encode_frexp_range : fp8kv_cpu_encode_bits_range)((enum fp8kv_cpu_isa)isa, c,
                                                                         first, n, q);
    cr_assert_eq(q[n], 0x55, "the range loop wrote past its end");
    for (size_t i = 0; i < n; i++)
        bits[i] = first + (uint32_t)i;
    assert_codes(isa, frexp, c, "range", bits, q, n);
}

Test(simd, the_range_loops_give_the_scalar_codes)
{
    for (int isa = 0; isa < FP8KV_ISA_COUNT; isa++) {
        if (!fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)isa))
            continue;
        struct fp8kv_codec_cfg c;
        for (int k = 0; configuration(k, &c); k++)
            for (int frexp = 0; frexp < 2; frexp++) {
                for (uint32_t e = 0; e < 512; e++) { /* each exponent field, either sign */
                    const uint32_t start = e << 23;
                    check_range(isa, frexp, c, start - (e ? 333u : 0u), 1000 + e % 7);
                }
                check_range(isa, frexp, c, 0xFFFFFFFFu - 700u, 701); /* the domain's end */
                check_range(isa, frexp, c, 0x7FFFFFFFu - 300u, 600); /* the sign change */
                check_range(isa, frexp, c, 0x3F7FFF00u + 5u, 3);     /* shorter than a vector */
            }
    }
}

/* The magnitudes where a loop's short path begins or ends under configuration c: half the
 * subnormal quantum (the last input rounding to zero), the smallest normal value, the smallest
 * normal f32, +Inf. */
static void path_edges(struct fp8kv_codec_cfg c, uint32_t edges[4])
{
    const int bias = fp8kv_codec_bias(c), man_bits = fp8kv_codec_man_bits(c);
    edges[0] = fp8kv_f32_bits(fp8kv_subnormal_unit(bias, man_bits) * 0.5f);
    edges[1] = fp8kv_f32_bits(fp8kv_min_normal(bias));
    edges[2] = 0x00800000u;
    edges[3] = 0x7F800000u;
}

/* A vector whose lanes all lie on one side of an edge takes the short path or the general one
 * whole, so the inputs next to each edge are judged in vectors of their own: every input within
 * 40 of an edge (either sign) 16 times over (a whole vector of 8 or 16 lanes) through the array
 * loops, and ranges whose four-vector blocks end at each offset next to the edge through the
 * range loops. */
Test(simd, the_inputs_next_to_the_short_paths_edges_in_vectors_of_their_own)
{
    enum { REACH = 40, COPIES = 16, N = 2 * (2 * REACH + 1) * COPIES };
    float x[N];
    uint32_t bits[N];
    uint8_t q[N];
    for (int isa = 0; isa < FP8KV_ISA_COUNT; isa++) {
        if (!fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)isa))
            continue;
        struct fp8kv_codec_cfg c;
        for (int k = 0; configuration(k, &c); k++) {
            uint32_t edges[4];
            path_edges(c, edges);
            for (int frexp = 0; frexp < 2; frexp++)
                for (int e = 0; e < 4; e++) {
                    size_t n = 0;
                    for (uint32_t half = 0, sign = 0; half < 2; half++, sign = 0x80000000u)
                        for (int d = -REACH; d <= REACH; d++)
                            for (int copy = 0; copy < COPIES; copy++)
                                bits[n++] = sign | (edges[e] + (uint32_t)d);
                    memcpy(x, bits, sizeof x);
                    (frexp ? fp8kv_cpu_encode_frexp
                           : fp8kv_cpu_encode_bits)((enum fp8kv_cpu_isa)isa, c, x, n, q);
                    assert_codes(isa, frexp, c, "array", bits, q, n);
                    for (uint32_t half = 0, sign = 0; half < 2; half++, sign = 0x80000000u)
                        for (uint32_t j = 0; j < 64; j++)
                            check_range(isa, frexp, c, (sign | edges[e]) - 64u - j, 192);
                }
        }
    }
}

Test(simd, the_instruction_sets_are_named_and_chosen)
{
    cr_assert(fp8kv_cpu_isa_available(FP8KV_ISA_SCALAR));
    const enum fp8kv_cpu_isa best = fp8kv_cpu_isa_best();
    cr_assert(fp8kv_cpu_isa_available(best));
    cr_assert_eq(fp8kv_cpu_isa_in_use(), best, "the widest is used until another is chosen");
    for (int isa = 0; isa < FP8KV_ISA_COUNT; isa++) {
        enum fp8kv_cpu_isa parsed;
        cr_assert_eq(fp8kv_cpu_isa_parse(fp8kv_cpu_isa_names[isa], &parsed), 0);
        cr_assert_eq((int)parsed, isa);
        const int available = fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)isa);
        cr_assert_eq(fp8kv_cpu_isa_use((enum fp8kv_cpu_isa)isa), available ? 0 : -1);
        if (available)
            cr_assert_eq((int)fp8kv_cpu_isa_in_use(), isa);
        else
            cr_assert_neq((int)fp8kv_cpu_isa_in_use(), isa, "an unavailable one is refused");
    }
    enum fp8kv_cpu_isa parsed;
    cr_assert_eq(fp8kv_cpu_isa_parse("sse9", &parsed), -1);
    cr_assert_eq(fp8kv_cpu_isa_parse(NULL, &parsed), -1);
    cr_assert_eq(fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)FP8KV_ISA_COUNT), 0);
#if defined(__x86_64__)
    cr_assert(fp8kv_cpu_isa_available(FP8KV_ISA_AVX2) == __builtin_cpu_supports("avx2"),
              "an x86-64 build has the AVX2 loops");
#endif
}
