/* quant_ref_legacy: reference quantize/dequantize of the 32-element block types
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (layouts in quant_ref.h).
 *
 * The quantizers reproduce the bytes of llama.cpp's quantize_row_*_ref, which is
 * what llama-quantize runs for these types when no imatrix is given. That
 * requires the same float arithmetic in the same order:
 *   - the scale d is computed in float and its reciprocal id = 1/d (0 when d is 0)
 *     is what the elements are multiplied by; only the stored d is rounded to
 *     fp16 (round to nearest even, tm_fp32_to_fp16). The dequantizer multiplies by
 *     the fp16 value, so the per-element error is at most half a step of the
 *     float d plus |q| * |d - fp16(d)|.
 *   - Q4_0/Q5_0: d = (signed value of largest magnitude) / -8 (resp. -16); the
 *     first element reaching the largest magnitude wins; q = min(15, (int)(x*id +
 *     8.5)) (resp. min(31, (int)(x*id + 16.5))): truncation of a value >= 0.5, so
 *     round half up, and the top level is clamped (x*id in (7.5, 8] -> 15).
 *   - Q4_1/Q5_1: d = (max - min) / 15 (resp. 31), m = min,
 *     q = min(15 or 31, (int)((x - min)*id + 0.5)).
 *   - Q8_0: d = amax / 127, q = roundf(x*id) (half away from zero).
 * x*id and the following addition are kept as separate roundings: a fused
 * multiply-add could move a value across a truncation boundary and change a byte.
 * GCC contracts across statements by default in GNU mode when the target has FMA
 * (e.g. -march=native), so contraction is switched off for this file. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <float.h>
#include <math.h>
#include <string.h>

#include "gguf/quant_ref.h"
#include "util/fp16.h"

/* ------------------------------------------------------------------ Q4_0 -- */

void quant_ref_q4_0(const float *x, struct block_q4_0 *y, int64_t n) {
  const int64_t nb = n / QK4_0;
  for (int64_t i = 0; i < nb; i++, x += QK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK4_0; j++) {
      const float a = fabsf(x[j]);
      if (amax < a) {
        amax = a;
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = tm_fp32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; j++) {
      const float x0 = x[j] * id;
      const float x1 = x[j + QK4_0 / 2] * id;
      const float v0 = x0 + 8.5f;
      const float v1 = x1 + 8.5f;
      int q0 = (int)v0, q1 = (int)v1; /* v >= 0.5: truncation = floor */
      if (q0 > 15) q0 = 15;
      if (q1 > 15) q1 = 15;
      y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
  }
}

void dequant_ref_q4_0(const struct block_q4_0 *x, float *y, int64_t n) {
  const int64_t nb = n / QK4_0;
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    const float d = tm_fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK4_0 / 2; j++) {
      y[j] = (float)((x[i].qs[j] & 0x0F) - 8) * d;
      y[j + QK4_0 / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

/* ------------------------------------------------------------------ Q4_1 -- */

/* min and max of one 32-element block (NaN-free input). */
static inline void block_min_max(const float *x, int n, float *min_out, float *max_out) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < n; j++) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  *min_out = min;
  *max_out = max;
}

void quant_ref_q4_1(const float *x, struct block_q4_1 *y, int64_t n) {
  const int64_t nb = n / QK4_1;
  for (int64_t i = 0; i < nb; i++, x += QK4_1) {
    float min, max;
    block_min_max(x, QK4_1, &min, &max);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = tm_fp32_to_fp16(d);
    y[i].m = tm_fp32_to_fp16(min);
    for (int j = 0; j < QK4_1 / 2; j++) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[j + QK4_1 / 2] - min) * id;
      const float v0 = x0 + 0.5f;
      const float v1 = x1 + 0.5f;
      int q0 = (int)v0, q1 = (int)v1;
      if (q0 > 15) q0 = 15;
      if (q1 > 15) q1 = 15;
      y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
  }
}

void dequant_ref_q4_1(const struct block_q4_1 *x, float *y, int64_t n) {
  const int64_t nb = n / QK4_1;
  for (int64_t i = 0; i < nb; i++, y += QK4_1) {
    const float d = tm_fp16_to_fp32(x[i].d);
    const float m = tm_fp16_to_fp32(x[i].m);
    for (int j = 0; j < QK4_1 / 2; j++) {
      const float a = (float)(x[i].qs[j] & 0x0F) * d;
      const float b = (float)(x[i].qs[j] >> 4) * d;
      y[j] = a + m;
      y[j + QK4_1 / 2] = b + m;
    }
  }
}

/* ------------------------------------------------------------------ Q5_0 -- */

static inline void store_u32_le(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t load_u32_le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void quant_ref_q5_0(const float *x, struct block_q5_0 *y, int64_t n) {
  const int64_t nb = n / QK5_0;
  for (int64_t i = 0; i < nb; i++, x += QK5_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK5_0; j++) {
      const float a = fabsf(x[j]);
      if (amax < a) {
        amax = a;
        max = x[j];
      }
    }
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = tm_fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_0 / 2; j++) {
      const float x0 = x[j] * id;
      const float x1 = x[j + QK5_0 / 2] * id;
      const float v0 = x0 + 16.5f;
      const float v1 = x1 + 16.5f;
      int q0 = (int)v0, q1 = (int)v1;
      if (q0 > 31) q0 = 31;
      if (q1 > 31) q1 = 31;
      y[i].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= (uint32_t)(q0 >> 4) << j;
      qh |= (uint32_t)(q1 >> 4) << (j + QK5_0 / 2);
    }
    store_u32_le(y[i].qh, qh);
  }
}

void dequant_ref_q5_0(const struct block_q5_0 *x, float *y, int64_t n) {
  const int64_t nb = n / QK5_0;
  for (int64_t i = 0; i < nb; i++, y += QK5_0) {
    const float d = tm_fp16_to_fp32(x[i].d);
    const uint32_t qh = load_u32_le(x[i].qh);
    for (int j = 0; j < QK5_0 / 2; j++) {
      const int h0 = (int)((qh >> j) & 1u) << 4;
      const int h1 = (int)((qh >> (j + QK5_0 / 2)) & 1u) << 4;
      y[j] = (float)(((x[i].qs[j] & 0x0F) | h0) - 16) * d;
      y[j + QK5_0 / 2] = (float)(((x[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

/* ------------------------------------------------------------------ Q5_1 -- */

void quant_ref_q5_1(const float *x, struct block_q5_1 *y, int64_t n) {
  const int64_t nb = n / QK5_1;
  for (int64_t i = 0; i < nb; i++, x += QK5_1) {
    float min, max;
    block_min_max(x, QK5_1, &min, &max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = tm_fp32_to_fp16(d);
    y[i].m = tm_fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_1 / 2; j++) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[j + QK5_1 / 2] - min) * id;
      const float v0 = x0 + 0.5f;
      const float v1 = x1 + 0.5f;
      /* (x - min)*id <= 31 up to one rounding, so v < 32 and the clamp never
       * fires; llama.cpp has none, this one only guards the bit packing. */
      int q0 = (int)v0, q1 = (int)v1;
      if (q0 > 31) q0 = 31;
      if (q1 > 31) q1 = 31;
      y[i].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= (uint32_t)(q0 >> 4) << j;
      qh |= (uint32_t)(q1 >> 4) << (j + QK5_1 / 2);
    }
    store_u32_le(y[i].qh, qh);
  }
}

void dequant_ref_q5_1(const struct block_q5_1 *x, float *y, int64_t n) {
  const int64_t nb = n / QK5_1;
  for (int64_t i = 0; i < nb; i++, y += QK5_1) {
    const float d = tm_fp16_to_fp32(x[i].d);
    const float m = tm_fp16_to_fp32(x[i].m);
    const uint32_t qh = load_u32_le(x[i].qh);
    for (int j = 0; j < QK5_1 / 2; j++) {
      const int h0 = (int)((qh >> j) & 1u) << 4;
      const int h1 = (int)((qh >> (j + QK5_1 / 2)) & 1u) << 4;
      const float a = (float)((x[i].qs[j] & 0x0F) | h0) * d;
      const float b = (float)((x[i].qs[j] >> 4) | h1) * d;
      y[j] = a + m;
      y[j + QK5_1 / 2] = b + m;
    }
  }
}

/* ------------------------------------------------------------------ Q8_0 -- */

void quant_ref_q8_0(const float *x, struct block_q8_0 *y, int64_t n) {
  const int64_t nb = n / QK8_0;
  for (int64_t i = 0; i < nb; i++, x += QK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++) {
      const float a = fabsf(x[j]);
      if (a > amax) amax = a;
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = tm_fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
  }
}

void dequant_ref_q8_0(const struct block_q8_0 *x, float *y, int64_t n) {
  const int64_t nb = n / QK8_0;
  for (int64_t i = 0; i < nb; i++, y += QK8_0) {
    const float d = tm_fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK8_0; j++) y[j] = (float)x[i].qs[j] * d;
  }
}
