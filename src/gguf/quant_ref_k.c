/* quant_ref_k: reference quantize/dequantize of the K-quant super-block types
 * Q4_K, Q5_K (8 sub-blocks of 32, 6-bit scales and mins) and Q6_K (16
 * sub-blocks of 16, 8-bit signed scales). Layouts in quant_ref.h.
 *
 * Dequantizers follow llama.cpp's dequantize_row_q{4,5,6}_K exactly.
 *
 * Quantizers are this project's own and do NOT reproduce llama.cpp's bytes
 * (llama.cpp runs a weighted scale search, make_qkx2_quants / make_qx_quants).
 * Per sub-block they:
 *   1. start from the sub-block's range: Q4_K/Q5_K fit x ~ s*L + b with b =
 *      min(x) clamped to <= 0 (the format subtracts a non-negative min), Q6_K fits
 *      x ~ s*(L - 32) with the largest-magnitude value on level -32;
 *   2. try five scales around that start (nmax +- 0.5, +- 1 levels over the
 *      range), round each element to its level, refit s (and b) by least squares
 *      for those levels, and keep the candidate of least squared error;
 * then quantize the sub-block scales against the super-block scale AS STORED in
 * fp16 (6 bits for Q4_K/Q5_K mins and scales, int8 for Q6_K), never rounding a
 * non-zero scale to 0 (a super-scale that underflows fp16 collapses each Q4_K/Q5_K
 * sub-block to one level at its mean instead), and finally re-round every
 * element to the NEAREST level of its sub-block using the scales as stored (fp16
 * super-scale times the quantized sub-scale), clamping to the level range. So each element is within half a step of its value unless
 * it lies outside its sub-block's stored range, where it sits on the end level.
 * Relative RMS error on normal data: Q4_K 0.072, Q5_K 0.036, Q6_K 0.017 (llama.cpp's
 * own on the kq-llama fixtures: Q4_K 0.071, Q6_K 0.018); see
 * tests/unit/gguf/test_quant_ref.c. Speed: ~50-80 M elements/s on one core, bound
 * by the five-candidate fit (bench/quant_ref_bench.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <float.h>
#include <math.h>
#include <string.h>

#include "gguf/quant_ref.h"
#include "util/fp16.h"

/* Round to nearest (ties to even) for |v| < 2^22: adding 1.5 * 2^23 leaves the
 * integer in the low mantissa bits. Callers clamp v first. */
static inline int nearest_int(float v) {
  const float t = v + 12582912.0f;
  int32_t i;
  memcpy(&i, &t, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

static inline float clampf(float v, float lo, float hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

/* ------------------------------------------------- Q4_K / Q5_K (shared) -- */

#define KSUB 32 /* elements per Q4_K/Q5_K sub-block */

/* Fits x[0..31] ~ scale * L - neg_min with L in [0, nmax], scale >= 0,
 * neg_min >= 0. */
static void fit_scale_min(const float *x, int nmax, float *scale_out, float *neg_min_out,
                          float *mean_out) {
  float min = x[0], max = x[0], sum_x = 0.0f;
  for (int i = 0; i < KSUB; i++) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_x += x[i];
  }
  *mean_out = sum_x * (1.0f / KSUB);
  if (min > 0.0f) min = 0.0f;
  if (!(max > min)) { /* constant sub-block at or below zero */
    *scale_out = 0.0f;
    *neg_min_out = -min;
    return;
  }
  float best_s = (max - min) / (float)nmax, best_b = min, best_err = FLT_MAX;
  for (int k = -2; k <= 2; k++) {
    const float iscale = ((float)nmax + 0.5f * (float)k) / (max - min);
    float sl = 0.0f, sl2 = 0.0f, sxl = 0.0f;
    for (int i = 0; i < KSUB; i++) {
      const float l = (float)nearest_int(clampf((x[i] - min) * iscale, 0.0f, (float)nmax));
      sl += l;
      sl2 += l * l;
      sxl += l * x[i];
    }
    const float det = (float)KSUB * sl2 - sl * sl;
    if (!(det > 0.0f)) continue;
    float s = ((float)KSUB * sxl - sum_x * sl) / det;
    float b = (sl2 * sum_x - sl * sxl) / det;
    if (b > 0.0f) { /* the format cannot add an offset */
      b = 0.0f;
      s = sxl / sl2;
    }
    if (!(s > 0.0f)) continue;
    /* sum (s*l + b - x)^2 expanded, without the constant sum x^2 (same for every
     * candidate), so no second pass over the elements. */
    const float err = s * s * sl2 + 2.0f * s * b * sl - 2.0f * s * sxl +
                      (float)KSUB * b * b - 2.0f * b * sum_x;
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_b = b;
    }
  }
  *scale_out = best_s;
  *neg_min_out = -best_b;
}

/* Quantizes one 256-element super-block's scales and mins to 6 bits, writes
 * d/dmin/scales, and returns the stored per-sub-block step and offset. */
static void pack_k4_scales(float scale[8], float neg_min[8], const float mean[8],
                           uint16_t *d16, uint16_t *dmin16, uint8_t scales[K_SCALE_SIZE],
                           float step[8], float off[8]) {
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; j++)
    if (scale[j] > max_scale) max_scale = scale[j];
  if (tm_fp16_to_fp32(tm_fp32_to_fp16(max_scale / 63.0f)) == 0.0f) {
    /* The super-scale underflows fp16 (sub-block ranges below ~2e-6): every
     * sub-block collapses to its one level -off, best placed at its mean (the
     * format allows only means <= 0). */
    for (int j = 0; j < 8; j++) {
      scale[j] = 0.0f;
      neg_min[j] = mean[j] < 0.0f ? -mean[j] : 0.0f;
    }
    max_scale = 0.0f;
  }
  for (int j = 0; j < 8; j++)
    if (neg_min[j] > max_min) max_min = neg_min[j];
  *d16 = tm_fp32_to_fp16(max_scale / 63.0f);
  *dmin16 = tm_fp32_to_fp16(max_min / 63.0f);
  const float d = tm_fp16_to_fp32(*d16), dmin = tm_fp16_to_fp32(*dmin16);
  /* Divide by the super-scales as stored, so their fp16 rounding (large for
   * subnormal halves) is absorbed by the 6-bit factors instead of scaling every
   * sub-block; an underflowed super-scale zeroes its factors. */
  const float inv_scale = d > 0.0f ? 1.0f / d : 0.0f;
  const float inv_min = dmin > 0.0f ? 1.0f / dmin : 0.0f;
  memset(scales, 0, K_SCALE_SIZE);
  for (int j = 0; j < 8; j++) {
    int ls = nearest_int(clampf(inv_scale * scale[j], 0.0f, 63.0f));
    int lm = nearest_int(clampf(inv_min * neg_min[j], 0.0f, 63.0f));
    /* A zero step would flatten the sub-block (unless the super-scale underflowed). */
    if (ls == 0 && scale[j] > 0.0f && d > 0.0f) ls = 1;
    if (lm == 0 && neg_min[j] > 0.0f && dmin > 0.0f) lm = 1;
    if (j < 4) {
      scales[j] |= (uint8_t)ls;
      scales[j + 4] |= (uint8_t)lm;
    } else {
      scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
      scales[j] |= (uint8_t)((lm >> 4) << 6);
    }
    step[j] = d * (float)ls;
    off[j] = dmin * (float)lm;
  }
}

/* Final pass: nearest level of each element with the stored step/offset. */
static void k4_levels(const float *x, int nmax, const float step[8], const float off[8],
                      uint8_t L[QK_K]) {
  for (int j = 0; j < 8; j++) {
    const float *xs = x + KSUB * j;
    uint8_t *ls = L + KSUB * j;
    if (step[j] == 0.0f) {
      memset(ls, 0, KSUB);
      continue;
    }
    const float inv = 1.0f / step[j];
    for (int i = 0; i < KSUB; i++)
      ls[i] = (uint8_t)nearest_int(clampf((xs[i] + off[j]) * inv, 0.0f, (float)nmax));
  }
}

void quant_ref_q4_k(const float *x, struct block_q4_k *y, int64_t n) {
  const int64_t nb = n / QK_K;
  float scale[8], neg_min[8], mean[8], step[8], off[8];
  uint8_t L[QK_K];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    for (int j = 0; j < 8; j++)
      fit_scale_min(x + KSUB * j, 15, &scale[j], &neg_min[j], &mean[j]);
    pack_k4_scales(scale, neg_min, mean, &y[i].d, &y[i].dmin, y[i].scales, step, off);
    k4_levels(x, 15, step, off, L);
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++)
        y[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

void dequant_ref_q4_k(const struct block_q4_k *x, float *y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; i++) {
    const float d = tm_fp16_to_fp32(x[i].d);
    const float dmin = tm_fp16_to_fp32(x[i].dmin);
    const uint8_t *q = x[i].qs;
    for (int c = 0; c < 4; c++, q += 32) {
      uint8_t sc, m;
      quant_k4_scale_min(2 * c, x[i].scales, &sc, &m);
      const float d1 = d * (float)sc, m1 = dmin * (float)m;
      quant_k4_scale_min(2 * c + 1, x[i].scales, &sc, &m);
      const float d2 = d * (float)sc, m2 = dmin * (float)m;
      for (int l = 0; l < 32; l++) {
        const float a = d1 * (float)(q[l] & 0xF);
        *y++ = a - m1;
      }
      for (int l = 0; l < 32; l++) {
        const float a = d2 * (float)(q[l] >> 4);
        *y++ = a - m2;
      }
    }
  }
}

void quant_ref_q5_k(const float *x, struct block_q5_k *y, int64_t n) {
  const int64_t nb = n / QK_K;
  float scale[8], neg_min[8], mean[8], step[8], off[8];
  uint8_t L[QK_K];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    for (int j = 0; j < 8; j++)
      fit_scale_min(x + KSUB * j, 31, &scale[j], &neg_min[j], &mean[j]);
    pack_k4_scales(scale, neg_min, mean, &y[i].d, &y[i].dmin, y[i].scales, step, off);
    k4_levels(x, 31, step, off, L);
    memset(y[i].qh, 0, sizeof y[i].qh);
    for (int c = 0; c < 4; c++) {
      for (int l = 0; l < 32; l++) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        y[i].qs[32 * c + l] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
        y[i].qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

void dequant_ref_q5_k(const struct block_q5_k *x, float *y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; i++) {
    const float d = tm_fp16_to_fp32(x[i].d);
    const float dmin = tm_fp16_to_fp32(x[i].dmin);
    const uint8_t *ql = x[i].qs, *qh = x[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int c = 0; c < 4; c++, ql += 32, u1 <<= 2, u2 <<= 2) {
      uint8_t sc, m;
      quant_k4_scale_min(2 * c, x[i].scales, &sc, &m);
      const float d1 = d * (float)sc, m1 = dmin * (float)m;
      quant_k4_scale_min(2 * c + 1, x[i].scales, &sc, &m);
      const float d2 = d * (float)sc, m2 = dmin * (float)m;
      for (int l = 0; l < 32; l++) {
        const float a = d1 * (float)((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0));
        *y++ = a - m1;
      }
      for (int l = 0; l < 32; l++) {
        const float a = d2 * (float)((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0));
        *y++ = a - m2;
      }
    }
  }
}

/* ------------------------------------------------------------------ Q6_K -- */

#define K6SUB 16

/* Fits x[0..15] ~ scale * l with l in [-32, 31]; scale may be negative (the
 * sign puts the largest-magnitude value on level -32). 0 for an all-zero
 * sub-block. */
static float fit_scale_sym(const float *x) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < K6SUB; i++) {
    const float a = fabsf(x[i]);
    if (a > amax) {
      amax = a;
      max = x[i];
    }
  }
  if (amax < 1e-30f) return 0.0f;
  float best_s = max / -32.0f, best_gain = 0.0f;
  for (int k = -2; k <= 2; k++) {
    const float iscale = -(32.0f + 0.5f * (float)k) / max;
    float sl2 = 0.0f, sxl = 0.0f;
    for (int i = 0; i < K6SUB; i++) {
      const float l = (float)nearest_int(clampf(x[i] * iscale, -32.0f, 31.0f));
      sl2 += l * l;
      sxl += l * x[i];
    }
    if (!(sl2 > 0.0f)) continue;
    /* With s = sxl/sl2 the squared error is sum x^2 - sxl^2/sl2: the candidate
     * with the largest sxl^2/sl2 wins. */
    const float gain = sxl * sxl / sl2;
    if (gain > best_gain) {
      best_gain = gain;
      best_s = sxl / sl2;
    }
  }
  return best_s;
}

void quant_ref_q6_k(const float *x, struct block_q6_k *y, int64_t n) {
  const int64_t nb = n / QK_K;
  float scale[16];
  uint8_t L[QK_K];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    float max_scale = 0.0f, max_abs = 0.0f;
    for (int j = 0; j < 16; j++) {
      scale[j] = fit_scale_sym(x + K6SUB * j);
      if (fabsf(scale[j]) > max_abs) {
        max_abs = fabsf(scale[j]);
        max_scale = scale[j];
      }
    }
    if (max_abs == 0.0f) {
      memset(&y[i], 0, sizeof y[i]); /* d = 0: every element 0 */
      continue;
    }
    /* The largest |scale| goes to sub-scale -128, the rest in [-128, 127]. */
    y[i].d = tm_fp32_to_fp16(max_scale / -128.0f);
    const float d = tm_fp16_to_fp32(y[i].d);
    /* As for Q4_K: divide by the stored d so its fp16 rounding is absorbed. */
    const float iscale = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; j++) {
      int sc = nearest_int(clampf(iscale * scale[j], -128.0f, 127.0f));
      if (sc == 0 && scale[j] != 0.0f && d != 0.0f) sc = (iscale * scale[j] > 0.0f) ? 1 : -1;
      y[i].scales[j] = (int8_t)sc;
      const float step = d * (float)sc;
      const float *xs = x + K6SUB * j;
      uint8_t *ls = L + K6SUB * j;
      if (step == 0.0f) {
        memset(ls, 32, K6SUB); /* level 0 */
        continue;
      }
      const float inv = 1.0f / step;
      for (int e = 0; e < K6SUB; e++)
        ls[e] = (uint8_t)(nearest_int(clampf(xs[e] * inv, -32.0f, 31.0f)) + 32);
    }
    for (int h = 0; h < 2; h++) {
      uint8_t *ql = y[i].ql + 64 * h, *qh = y[i].qh + 32 * h;
      const uint8_t *Lh = L + 128 * h;
      for (int l = 0; l < 32; l++) {
        const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
        ql[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

void dequant_ref_q6_k(const struct block_q6_k *x, float *y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; i++) {
    const float d = tm_fp16_to_fp32(x[i].d);
    const uint8_t *ql = x[i].ql, *qh = x[i].qh;
    const int8_t *sc = x[i].scales;
    for (int h = 0; h < 2; h++, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l++) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * (float)sc[is] * (float)q1;
        y[l + 32] = d * (float)sc[is + 2] * (float)q2;
        y[l + 64] = d * (float)sc[is + 4] * (float)q3;
        y[l + 96] = d * (float)sc[is + 6] * (float)q4;
      }
    }
  }
}
