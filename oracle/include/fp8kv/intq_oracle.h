/* fp8kv/intq_oracle.h — the exact oracle of the integer block formats (fp8kv/intq.h), on GNU
 * MPFR: the f16 scale and element codes every block must encode to, and the value every
 * (scale, code) pair decodes to. Each step of fp8kv/intq.h's encoding is one correct f32
 * rounding (MPFR at 24 bits in the widest exponent range, brought onto the f32 grid with
 * subnormals); MPFR's exponent range is saved and restored. */
#ifndef FP8KV_INTQ_ORACLE_H
#define FP8KV_INTQ_ORACLE_H

#include <stdint.h>

#include "fp8kv/intq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fp8kv_oracle_intq_encode: the encoding of one block of f (x: f->block_size f32 bit patterns):
 * *scale the f16 bits of the stored scale, codes[i] the stored byte of element i. 0, or
 * FP8KV_ERR naming the first NaN or Inf input (no code is defined for a block holding one). */
int fp8kv_oracle_intq_encode(const struct fp8kv_intq_format *f, const uint32_t *x, uint16_t *scale,
                             uint8_t *codes);

/* fp8kv_oracle_intq_decode_one: the f32 bits of RN32((q - f->zero) * f32(scale)), q the integer
 * the stored byte `code` holds (a byte f cannot hold: FP8KV_ERR through *ok = 0). */
uint32_t fp8kv_oracle_intq_decode_one(const struct fp8kv_intq_format *f, uint16_t scale,
                                      uint8_t code, int *ok);

#ifdef __cplusplus
}
#endif

#endif
