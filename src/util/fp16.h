/* fp16: IEEE half and bfloat16 conversions, bit-exact with ggml's
 * (round to nearest even; NaN stays NaN; bf16 from f32 rounds to nearest even
 * and quiets NaN). Scalar, portable; SIMD paths live with the kernels. */
#ifndef TM_FP16_H
#define TM_FP16_H

#include <stdint.h>

uint16_t tm_fp32_to_fp16(float f);
float tm_fp16_to_fp32(uint16_t h);
uint16_t tm_fp32_to_bf16(float f);
float tm_bf16_to_fp32(uint16_t h);

#endif
