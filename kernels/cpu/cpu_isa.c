/* cpu_isa.c — which array loop the host encoders run (fp8kv/cpu_isa.h): the scalar loops, and the
 * SIMD builds of codec_simd.c where this build has them (FP8KV_HAVE_SIMD: x86-64 with GCC or
 * Clang) and the processor runs them. */
#include "fp8kv/cpu_isa.h"

#include <stdatomic.h>
#include <string.h>

const char *const fp8kv_cpu_isa_names[FP8KV_ISA_COUNT] = {"scalar", "avx2", "avx512"};

/* The scalar loops: plain C over codec.h's functions (the compiler may vectorize them, with the
 * clones of FP8KV_HOST_ARRAY_LOOP); the SIMD builds of codec_simd.c. */
#define SIMD_ENCODERS(prefix)                                                                      \
    void prefix##_encode_bits(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q);     \
    void prefix##_encode_frexp(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q);    \
    void prefix##_encode_bits_range(struct fp8kv_codec_cfg c, uint32_t first, size_t n,            \
                                    uint8_t *q);                                                   \
    void prefix##_encode_frexp_range(struct fp8kv_codec_cfg c, uint32_t first, size_t n,           \
                                     uint8_t *q);
#ifdef FP8KV_HAVE_SIMD
SIMD_ENCODERS(fp8kv_simd_avx2)
SIMD_ENCODERS(fp8kv_simd_avx512)
#endif

FP8KV_HOST_ARRAY_LOOP
static void scalar_encode_bits(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q)
{
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_encode_bits(c, fp8kv_f32_bits(x[i]));
}

FP8KV_HOST_ARRAY_LOOP
static void scalar_encode_frexp(struct fp8kv_codec_cfg c, const float *x, size_t n, uint8_t *q)
{
    for (size_t i = 0; i < n; i++)
        q[i] = fp8kv_encode_frexp(c, x[i]);
}

/* A scalar range loop: the inputs made a part at a time into an array for the array loop. */
static void scalar_range(void (*array)(struct fp8kv_codec_cfg, const float *, size_t, uint8_t *),
                         struct fp8kv_codec_cfg c, uint32_t first, size_t n, uint8_t *q)
{
    enum { PART = 2048 };
    float x[PART];
    for (size_t off = 0; off < n; off += PART) {
        const size_t part = n - off < PART ? n - off : PART;
        for (size_t i = 0; i < part; i++)
            x[i] = fp8kv_f32_from_bits(first + (uint32_t)(off + i));
        array(c, x, part, q + off);
    }
}

static void scalar_encode_bits_range(struct fp8kv_codec_cfg c, uint32_t first, size_t n, uint8_t *q)
{
    scalar_range(scalar_encode_bits, c, first, n, q);
}

static void scalar_encode_frexp_range(struct fp8kv_codec_cfg c, uint32_t first, size_t n,
                                      uint8_t *q)
{
    scalar_range(scalar_encode_frexp, c, first, n, q);
}

typedef void (*array_fn)(struct fp8kv_codec_cfg, const float *, size_t, uint8_t *);
typedef void (*range_fn)(struct fp8kv_codec_cfg, uint32_t, size_t, uint8_t *);
struct isa_loops {
    array_fn bits, frexp;
    range_fn bits_range, frexp_range;
};
#define ISA_LOOPS(prefix)                                                                          \
    {                                                                                              \
        prefix##_encode_bits, prefix##_encode_frexp, prefix##_encode_bits_range,                   \
            prefix##_encode_frexp_range                                                            \
    }
static const struct isa_loops loops[FP8KV_ISA_COUNT] = {
    [FP8KV_ISA_SCALAR] = ISA_LOOPS(scalar),
#ifdef FP8KV_HAVE_SIMD
    [FP8KV_ISA_AVX2] = ISA_LOOPS(fp8kv_simd_avx2),
    [FP8KV_ISA_AVX512] = ISA_LOOPS(fp8kv_simd_avx512),
#endif
};

int fp8kv_cpu_isa_available(enum fp8kv_cpu_isa isa)
{
    if ((unsigned)isa >= FP8KV_ISA_COUNT || !loops[isa].bits)
        return 0;
#ifdef FP8KV_HAVE_SIMD
    __builtin_cpu_init();
    if (isa == FP8KV_ISA_AVX2)
        return __builtin_cpu_supports("avx2");
    if (isa == FP8KV_ISA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    return isa == FP8KV_ISA_SCALAR;
}

enum fp8kv_cpu_isa fp8kv_cpu_isa_best(void)
{
    for (int isa = FP8KV_ISA_COUNT - 1; isa > FP8KV_ISA_SCALAR; isa--)
        if (fp8kv_cpu_isa_available((enum fp8kv_cpu_isa)isa))
            return (enum fp8kv_cpu_isa)isa;
    return FP8KV_ISA_SCALAR;
}

static _Atomic int chosen = -1; /* -1: not chosen, the best one */

enum fp8kv_cpu_isa fp8kv_cpu_isa_in_use(void)
{
    const int isa = atomic_load(&chosen);
    return isa < 0 ? fp8kv_cpu_isa_best() : (enum fp8kv_cpu_isa)isa;
}

int fp8kv_cpu_isa_use(enum fp8kv_cpu_isa isa)
{
    if (!fp8kv_cpu_isa_available(isa))
        return -1;
    atomic_store(&chosen, (int)isa);
    return 0;
}

int fp8kv_cpu_isa_parse(const char *name, enum fp8kv_cpu_isa *isa)
{
    for (int i = 0; i < FP8KV_ISA_COUNT; i++)
        if (name && strcmp(name, fp8kv_cpu_isa_names[i]) == 0) {
            *isa = (enum fp8kv_cpu_isa)i;
            return 0;
        }
    return -1;
}

void fp8kv_cpu_encode_bits(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, const float *x,
                           size_t n, uint8_t *q)
{
    loops[isa].bits(c, x, n, q);
}

void fp8kv_cpu_encode_frexp(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, const float *x,
                            size_t n, uint8_t *q)
{
    loops[isa].frexp(c, x, n, q);
}

void fp8kv_cpu_encode_bits_range(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, uint32_t first,
                                 size_t n, uint8_t *q)
{
    loops[isa].bits_range(c, first, n, q);
}

void fp8kv_cpu_encode_frexp_range(enum fp8kv_cpu_isa isa, struct fp8kv_codec_cfg c, uint32_t first,
                                  size_t n, uint8_t *q)
{
    loops[isa].frexp_range(c, first, n, q);
}
