/* hostile_block.c — examples/engine_block (NVFP4, its default claim) with the run-time
 * misbehaviour of hostile.h, for scripts/campaign's hostile block plugins: entry points encode
 * and decode (void functions: "fail" does nothing there). */
#include "hostile.h"

#include "fp8kv/block_plugin.h"
/* the example's export, renamed (a function-like macro leaves the struct tag alone) */
const struct fp8kv_block_codec_v1 *engine_block_codec_v1(void);
#define fp8kv_block_codec_v1(v) engine_block_codec_v1(v)
#include "../../examples/engine_block/engine_block.c"
#undef fp8kv_block_codec_v1

static void hostile_encode(const float *x, size_t nblocks, float G, uint8_t *scales,
                           uint8_t *elements)
{
    const enum hostile_do what = hostile_act("encode");
    engine_block_codec_v1()->encode(x, nblocks, G, scales, elements);
    /* a flip: an element code's lowest bit */
    hostile_poke(what, elements, nblocks * BLOCK, x, nblocks * BLOCK * sizeof *x, 0, 0x01u);
}

static void hostile_decode(const uint8_t *scales, const uint8_t *elements, size_t nblocks, float G,
                           float *y)
{
    const enum hostile_do what = hostile_act("decode");
    engine_block_codec_v1()->decode(scales, elements, nblocks, G, y);
    /* a flip: bit 6 of value 0's top byte, in its exponent */
    hostile_poke(what, y, nblocks * BLOCK * sizeof *y, elements, nblocks * BLOCK, 3, 0x40u);
}

ENGINE_EXPORT const struct fp8kv_block_codec_v1 *fp8kv_block_codec_v1(void)
{
    static struct fp8kv_block_codec_v1 c;
    c = *engine_block_codec_v1();
    c.name = hostile_name(c.name);
    c.encode = hostile_encode;
    if (c.decode)
        c.decode = hostile_decode;
    return &c;
}
