/* fp16: see fp16.h. The float->half conversion uses the exact bit method
 * (scale into the half range with two float multiplications so the FPU performs
 * the round-to-nearest-even), which gives the same bits as the F16C instruction
 * with rounding mode 0. */
#include "util/fp16.h"

#include <string.h>

static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t tm_fp32_to_fp16(float f) {
  const float scale_to_inf = f32_from_bits(0x77800000u);   /* 2^112 */
  const float scale_to_zero = f32_from_bits(0x08800000u);  /* 2^-110 */
  float base = (f < 0 ? -f : f) * scale_to_inf * scale_to_zero;
  const uint32_t w = f32_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = f32_from_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f32_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

float tm_fp16_to_fp32(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = f32_from_bits(0x7800000u); /* 2^-112 */
  const float normalized = f32_from_bits((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = f32_from_bits((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result =
      sign | (two_w < denormalized_cutoff ? f32_bits(denormalized) : f32_bits(normalized));
  return f32_from_bits(result);
}

uint16_t tm_fp32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64); /* quiet NaN */
  return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

float tm_bf16_to_fp32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }
