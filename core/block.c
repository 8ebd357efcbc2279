/* block.c — the tables of fp8kv/block.h: element formats, block formats, rule and model names. */
#include "fp8kv/block.h"

#include <string.h>

#include "fp8kv/spec.h"

#define ELEMENT(eid, nm, eb, mb, bs, maxc, sign, em, maxv)                                         \
    [eid] = {.id = eid,                                                                            \
             .name = nm,                                                                           \
             .bits = 1 + (eb) + (mb),                                                              \
             .exp_bits = eb,                                                                       \
             .man_bits = mb,                                                                       \
             .bias = bs,                                                                           \
             .max_code = maxc,                                                                     \
             .sign_bit = sign,                                                                     \
             .emax = em,                                                                           \
             .max_value = maxv,                                                                    \
             .min_normal = 1.0 / (double)(1u << ((bs)-1))}
const struct fp8kv_element_format fp8kv_element_formats[FP8KV_ELEMENT_COUNT] = {
    ELEMENT(FP8KV_ELEM_E4M3, "e4m3", 4, 3, 7, 0x7E, 0x80, 8, 448.0),
    ELEMENT(FP8KV_ELEM_E5M2, "e5m2", 5, 2, 15, 0x7B, 0x80, 15, 57344.0),
    ELEMENT(FP8KV_ELEM_E3M2, "e3m2", 3, 2, 3, 0x1F, 0x20, 4, 28.0),
    ELEMENT(FP8KV_ELEM_E2M3, "e2m3", 2, 3, 1, 0x1F, 0x20, 2, 7.5),
    ELEMENT(FP8KV_ELEM_E2M1, "e2m1", 2, 1, 1, 0x7, 0x8, 2, 6.0),
};
#undef ELEMENT

#define MX_RULES ((1u << FP8KV_RULE_FLOOR) | (1u << FP8KV_RULE_RCEIL) | (1u << FP8KV_RULE_EVEN))
#define NV_RULES ((1u << FP8KV_RULE_RNE) | (1u << FP8KV_RULE_CEIL) | (1u << FP8KV_RULE_4OVER6))
#define MX(fid, nm, elem)                                                                          \
    [fid] = {.id = fid,                                                                            \
             .name = nm,                                                                           \
             .element = &fp8kv_element_formats[elem],                                              \
             .block_size = 32,                                                                     \
             .scale_kind = FP8KV_SCALE_E8M0,                                                       \
             .default_rule = FP8KV_RULE_FLOOR,                                                     \
             .rules = MX_RULES}
const struct fp8kv_block_format fp8kv_block_formats[FP8KV_BLOCK_FORMAT_COUNT] = {
    MX(FP8KV_MXFP8_E4M3, "mxfp8_e4m3", FP8KV_ELEM_E4M3),
    MX(FP8KV_MXFP8_E5M2, "mxfp8_e5m2", FP8KV_ELEM_E5M2),
    MX(FP8KV_MXFP6_E3M2, "mxfp6_e3m2", FP8KV_ELEM_E3M2),
    MX(FP8KV_MXFP6_E2M3, "mxfp6_e2m3", FP8KV_ELEM_E2M3),
    MX(FP8KV_MXFP4, "mxfp4", FP8KV_ELEM_E2M1),
    [FP8KV_NVFP4] = {.id = FP8KV_NVFP4,
                     .name = "nvfp4",
                     .element = &fp8kv_element_formats[FP8KV_ELEM_E2M1],
                     .block_size = 16,
                     .scale_kind = FP8KV_SCALE_UE4M3,
                     .default_rule = FP8KV_RULE_RNE,
                     .rules = NV_RULES},
};
#undef MX

const char *const fp8kv_block_rule_names[FP8KV_BLOCK_RULE_COUNT] = {"floor", "rceil", "even",
                                                                    "rne",   "ceil",  "4over6"};
const char *const fp8kv_block_model_names[FP8KV_BLOCK_MODEL_COUNT] = {"exact", "f32"};

const struct fp8kv_block_format *fp8kv_block_format_by_name(const char *name)
{
    for (int i = 0; name && i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        if (strcmp(fp8kv_block_formats[i].name, name) == 0)
            return &fp8kv_block_formats[i];
    return NULL;
}

int fp8kv_block_takes_rule(const struct fp8kv_block_format *f, enum fp8kv_block_rule r)
{
    return (unsigned)r < FP8KV_BLOCK_RULE_COUNT && (f->rules >> r & 1u);
}

int fp8kv_block_rules_of(const struct fp8kv_block_format *f,
                         const char *names[FP8KV_BLOCK_RULE_COUNT])
{
    int n = 0;
    for (int r = 0; r < FP8KV_BLOCK_RULE_COUNT; r++)
        if (fp8kv_block_takes_rule(f, (enum fp8kv_block_rule)r))
            names[n++] = fp8kv_block_rule_names[r];
    return n;
}

uint8_t fp8kv_block_scale_nan_code(const struct fp8kv_block_format *f)
{
    return f->scale_kind == FP8KV_SCALE_E8M0 ? 0xFF : 0x7F;
}

int fp8kv_block_scale_code_count(const struct fp8kv_block_format *f)
{
    return f->scale_kind == FP8KV_SCALE_E8M0 ? 256 : 128;
}

int fp8kv_element_code_count(const struct fp8kv_element_format *e)
{
    return 1 << e->bits;
}
