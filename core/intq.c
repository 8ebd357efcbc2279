/* intq.c — the tables of fp8kv/intq.h: llama.cpp's q8_0 and q4_0 (and q4_0 with its product and
 * sum fused), and the rounding names. */
#include "fp8kv/intq.h"

#include <string.h>

const struct fp8kv_intq_format fp8kv_intq_formats[FP8KV_INTQ_FORMAT_COUNT] = {
    [FP8KV_Q8_0] = {.id = FP8KV_Q8_0,
                    .name = "q8_0",
                    .preset = "llamacpp_q8_0",
                    .block_size = 32,
                    .bits = 8,
                    .source = FP8KV_INTQ_AMAX,
                    .divisor = 127.0f,
                    .offset = 0.0f,
                    .rounding = FP8KV_INTQ_HALF_AWAY,
                    .code_min = -128,
                    .code_max = 127,
                    .zero = 0},
#define Q4_0(fid, nm, pre, fuse)                                                                   \
    [fid] = {.id = fid,                                                                            \
             .name = nm,                                                                           \
             .preset = pre,                                                                        \
             .block_size = 32,                                                                     \
             .bits = 4,                                                                            \
             .source = FP8KV_INTQ_VMAX,                                                            \
             .divisor = -8.0f,                                                                     \
             .offset = 8.5f,                                                                       \
             .fused = fuse,                                                                        \
             .rounding = FP8KV_INTQ_TRUNC,                                                         \
             .code_min = 0,                                                                        \
             .code_max = 15,                                                                       \
             .zero = 8}
    Q4_0(FP8KV_Q4_0, "q4_0", "llamacpp_q4_0", 0),
    Q4_0(FP8KV_Q4_0_FMA, "q4_0_fma", "llamacpp_q4_0_fma", 1),
#undef Q4_0
};

const char *const fp8kv_intq_rounding_names[FP8KV_INTQ_ROUNDING_COUNT] = {"rne", "half_away",
                                                                          "trunc_half", "trunc"};

const struct fp8kv_intq_format *fp8kv_intq_format_by_name(const char *name)
{
    for (int i = 0; i < FP8KV_INTQ_FORMAT_COUNT; i++)
        if (strcmp(name, fp8kv_intq_formats[i].name) == 0 ||
            strcmp(name, fp8kv_intq_formats[i].preset) == 0)
            return &fp8kv_intq_formats[i];
    return NULL;
}

uint8_t fp8kv_intq_code_byte(const struct fp8kv_intq_format *f, int q)
{
    return f->code_min < 0 ? (uint8_t)(q & 0xFF) : (uint8_t)q;
}

int fp8kv_intq_code_count(const struct fp8kv_intq_format *f)
{
    return f->code_min < 0 ? 256 : f->code_max + 1;
}

int fp8kv_intq_code_value(const struct fp8kv_intq_format *f, uint8_t byte)
{
    if (f->code_min < 0)
        return byte >= 0x80 ? (int)byte - 256 : (int)byte;
    return byte <= f->code_max ? (int)byte : -1000;
}
