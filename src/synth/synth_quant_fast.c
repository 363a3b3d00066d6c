/* synth_quant_fast: one-pass quantizers for the K-quant types synth writes
 * (Q4_K, Q5_K, Q6_K). Block layouts: src/gguf/quant_ref.h (what llama.cpp and
 * ggml_dequantize_ref read); the bytes are valid blocks, not llama.cpp's bytes.
 *
 * Why not the gguf module's reference quantizers: those run a five-candidate
 * least-squares scale fit per sub-block (~80 M elements/s on one core), which
 * made `synth --type Q4_K_M` write ~130 MB/s against a 200 MB/s target. synth's
 * weights are random normal draws; nobody reads them for quality, only for
 * shape and statistics, so a min/max fit is enough (relative RMS error ~10%
 * above the reference's, e.g. Q4_K 0.08 vs 0.072 on normal data).
 *
 * Contract (checked by tests/unit/synth/test_quant_fast.c): every element
 * dequantizes to its NEAREST level of its sub-block under the scales AS STORED
 * (fp16 super-scales times the quantized sub-scales), and the stored range always
 * covers the sub-block, so no element is clamped: |x - y| <= step/2 + float
 * rounding slack. This holds because every rounding of a scale goes UP, never to
 * nearest: the fp16 super-scales round up to the next half, the 6-bit (Q4_K/Q5_K
 * offsets too) and 8-bit sub-scales to the ceiling, each followed by an exact
 * check that bumps it one more unit when the float product still falls short.
 * (A nearest-rounded sub-scale can fall short of its sub-block's range and clamp
 * the end elements, by many half-steps when the sub-scale is small, i.e. in a
 * sub-block much narrower than its neighbours; the reference quantizer documents
 * that exception.) The price: each step is at most one super-scale unit (<= 1/63
 * of the block's largest step) larger than the min/max ideal, plus, for
 * Q4_K/Q5_K, the offset's round-up of less than one dmin spread over nmax levels.
 * The one exception: Q6_K sub-scales are int8, and a sub-block whose step has
 * the opposite sign of the block's extreme one and nearly its size would need
 * +128; capped at +127, its end element lands up to 32/127 ~ 0.26 step past
 * the end level: still within half a step of its value.
 *
 * Inputs must be finite and below ~1e6 in magnitude (fp16 super-scales saturate
 * at 65504); deterministic: the same floats give the same bytes on any thread.
 *
 * Speed (~840 / 580 / 640 M elements/s for Q4_K / Q5_K / Q6_K on one core of
 * the dev machine, vs ~80 for the reference): plain C loops over fixed 16/32-
 * element sub-blocks with no division inside (one reciprocal per sub-block).
 * Levels: the coverage above puts each scaled value in [-eps, nmax + eps], so
 * truncating v + 0.5 (>= 0) rounds to nearest (half up: ties have probability
 * zero on random data and both neighbours are equally near) and an integer clamp
 * absorbs eps. Shaped for GCC 12's -O2 vectorizer (very-cheap cost model):
 * min/max as 8 lane-wise accumulators, float -> int32 and int32 -> uint8 as two
 * loops (it takes neither float selects nor a float-to-byte loop). */
#if defined(__GNUC__) && !defined(__clang__)
/* The coverage checks below must compute d * sc * q - dmin * m exactly as the
 * dequantizer does (no fused multiply-add), also under TOKMETER_NATIVE. */
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "synth/synth_internal.h"
#include "util/fp16.h"

/* The smallest fp16 >= v (v >= 0, finite), saturated at the largest finite
 * half (0x7bff = 65504). For v > 0 the result is > 0, so a non-zero range never
 * gets a zero super-scale (no underflow special case needed). */
static uint16_t fp16_up(float v) {
  uint16_t h = tm_fp32_to_fp16(v);
  if (h >= 0x7c00) return 0x7bff;
  if (tm_fp16_to_fp32(h) < v && h < 0x7bff) h++; /* positive halves: next bit pattern is next value */
  return h;
}

/* Q4_K/Q5_K core: for one 256-element super-block, fills d, dmin, the packed
 * 6-bit scales and the levels L (0..nmax). Sub-block j: y = (d*sc_j)*q - dmin*m_j. */
static void k4_block(const float *x, int nmax, uint16_t *d16_out, uint16_t *dmin16_out,
                     uint8_t scales[12], uint8_t L[256]) {
  float mn[8], mx[8];
  for (int j = 0; j < 8; j++) {
    const float *xs = x + 32 * j;
    /* 8 lane-wise accumulators: a shape GCC's vectorizer takes without -ffast-math */
    float lo[8], hi[8];
    for (int k = 0; k < 8; k++) lo[k] = hi[k] = xs[k];
    for (int i = 8; i < 32; i += 8)
      for (int k = 0; k < 8; k++) {
        const float v = xs[i + k];
        lo[k] = v < lo[k] ? v : lo[k];
        hi[k] = v > hi[k] ? v : hi[k];
      }
    float a = lo[0], b = hi[0];
    for (int k = 1; k < 8; k++) {
      a = lo[k] < a ? lo[k] : a;
      b = hi[k] > b ? hi[k] : b;
    }
    /* The format subtracts a non-negative offset: a sub-block above 0 starts at 0. */
    mn[j] = a < 0.0f ? a : 0.0f;
    mx[j] = b;
  }

  /* Offsets first (they widen the range the scales must cover). */
  float max_neg = 0.0f;
  for (int j = 0; j < 8; j++) max_neg = -mn[j] > max_neg ? -mn[j] : max_neg;
  const uint16_t dmin16 = fp16_up(max_neg / 63.0f);
  const float dmin = tm_fp16_to_fp32(dmin16), inv_dmin = dmin > 0.0f ? 1.0f / dmin : 0.0f;
  float off[8], need[8], max_need = 0.0f;
  int lm[8];
  for (int j = 0; j < 8; j++) {
    int m = (int)ceilf(-mn[j] * inv_dmin);
    if (m > 63) m = 63;
    if (dmin * (float)m < -mn[j] && m < 63) m++; /* the reciprocal rounded low */
    lm[j] = m;
    off[j] = dmin * (float)m; /* >= -min: the lowest element is covered */
    const float r = (mx[j] + off[j]) / (float)nmax;
    need[j] = r > 0.0f ? r : 0.0f;
    max_need = need[j] > max_need ? need[j] : max_need;
  }
  const uint16_t d16 = fp16_up(max_need / 63.0f);
  const float d = tm_fp16_to_fp32(d16), inv_d = d > 0.0f ? 1.0f / d : 0.0f;
  float step[8];
  memset(scales, 0, 12);
  for (int j = 0; j < 8; j++) {
    int s = (int)ceilf(need[j] * inv_d);
    if (s > 63) s = 63;
    if ((d * (float)s) * (float)nmax - off[j] < mx[j] && s < 63) s++;
    step[j] = d * (float)s; /* the dequantizer's d * sc, bit for bit */
    if (j < 4) {
      scales[j] |= (uint8_t)s;
      scales[j + 4] |= (uint8_t)lm[j];
    } else {
      scales[j + 4] = (uint8_t)((s & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= (uint8_t)((s >> 4) << 6);
      scales[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
  }
  *d16_out = d16;
  *dmin16_out = dmin16;

  /* Levels in two loops, float -> int32 then int32 -> uint8: GCC 12's -O2
   * vectorizer takes neither a float-to-byte loop nor float compares. The
   * scaled value lies in [-eps, nmax + eps] by the coverage above, so
   * truncating v + 0.5 (>= 0) rounds, and the integer clamp only absorbs eps. */
  int32_t t[256];
  for (int j = 0; j < 8; j++) {
    /* step 0 only when the sub-block is the single value -off (or all of x is 0) */
    const float inv = step[j] > 0.0f ? 1.0f / step[j] : 0.0f, o = off[j];
    const float *xs = x + 32 * j;
    int32_t *ts = t + 32 * j;
    for (int i = 0; i < 32; i++) ts[i] = (int32_t)((xs[i] + o) * inv + 0.5f);
  }
  for (int i = 0; i < 256; i++) {
    int32_t v = t[i] < 0 ? 0 : t[i];
    L[i] = (uint8_t)(v > nmax ? nmax : v);
  }
}

void synth_quantize_q4_k_fast(const float *x, uint8_t *out, uint64_t n) {
  uint8_t L[256];
  for (uint64_t b = 0; b < n / 256; b++, x += 256, out += 144) {
    uint16_t d16, dmin16;
    k4_block(x, 15, &d16, &dmin16, out + 4, L);
    memcpy(out, &d16, 2); /* little-endian hosts only, as the rest of tokmeter */
    memcpy(out + 2, &dmin16, 2);
    uint8_t *qs = out + 16;
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++)
        qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

void synth_quantize_q5_k_fast(const float *x, uint8_t *out, uint64_t n) {
  uint8_t L[256];
  for (uint64_t b = 0; b < n / 256; b++, x += 256, out += 176) {
    uint16_t d16, dmin16;
    k4_block(x, 31, &d16, &dmin16, out + 4, L);
    memcpy(out, &d16, 2);
    memcpy(out + 2, &dmin16, 2);
    uint8_t *qh = out + 16, *qs = out + 48;
    for (int l = 0; l < 32; l++) qh[l] = 0;
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        qs[32 * c + l] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
        qh[l] = (uint8_t)(qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
  }
}

/* Q6_K: 16 sub-blocks of 16, y = d * sc_j * (q - 32), sc_j int8, q in 0..63.
 * The 64 levels run from -32 to +31 steps, so a sub-block [lo, hi] needs a step
 * of at least max(-lo/32, hi/31) with its negative end on level -32, or of
 * max(hi/32, -lo/31) with the step's sign flipped (its positive end on -32); the
 * smaller wins. (Putting the largest-magnitude value on -32, the reference's
 * start, leaves an opposite value of nearly the same magnitude up to a whole
 * step past level +31.) The sub-block of largest need gets sc = -128, fixing d;
 * magnitudes round up as for Q4_K (see the file comment). */
void synth_quantize_q6_k_fast(const float *x, uint8_t *out, uint64_t n) {
  for (uint64_t b = 0; b < n / 256; b++, x += 256, out += 210) {
    float need[16], max_need = 0.0f;
    int flip[16], max_flip = 0;
    for (int j = 0; j < 16; j++) {
      const float *xs = x + 16 * j;
      float lo[8], hi[8];
      for (int k = 0; k < 8; k++) lo[k] = hi[k] = xs[k];
      for (int k = 0; k < 8; k++) {
        const float v = xs[8 + k];
        lo[k] = v < lo[k] ? v : lo[k];
        hi[k] = v > hi[k] ? v : hi[k];
      }
      float a = lo[0], c = hi[0];
      for (int k = 1; k < 8; k++) {
        a = lo[k] < a ? lo[k] : a;
        c = hi[k] > c ? hi[k] : c;
      }
      const float keep_a = -a / 32.0f, keep_c = c / 31.0f; /* step > 0 */
      const float flip_a = -a / 31.0f, flip_c = c / 32.0f; /* step < 0 */
      const float keep = keep_a > keep_c ? keep_a : keep_c;
      const float flipped = flip_a > flip_c ? flip_a : flip_c;
      flip[j] = flipped < keep;
      need[j] = flip[j] ? flipped : keep;
      if (need[j] < 0.0f) need[j] = 0.0f;
      if (need[j] > max_need) {
        max_need = need[j];
        max_flip = flip[j];
      }
    }
    /* sc = -128 for the largest need: d = step / -128, so d < 0 for an unflipped
     * (positive) step. */
    uint16_t dh = fp16_up(max_need / 128.0f);
    if (!max_flip && dh != 0) dh |= 0x8000;
    const float d = tm_fp16_to_fp32(dh), ad = fabsf(d), inv_ad = ad > 0.0f ? 1.0f / ad : 0.0f;
    memcpy(out + 208, &dh, 2);
    int8_t *sc = (int8_t *)(out + 192);
    int32_t t[256];
    for (int j = 0; j < 16; j++) {
      /* magnitude: smallest s with ad * s >= need_j */
      int s = (int)ceilf(need[j] * inv_ad);
      if (s > 128) s = 128;
      if (ad * (float)s < need[j] && s < 128) s++;
      /* sign: d * sc > 0 unless flipped */
      int v = ((d > 0.0f) != (flip[j] != 0)) ? s : -s;
      /* +128 does not fit: the sub-block's end lands <= 32/127 step past its end level */
      if (v > 127) v = 127;
      sc[j] = (int8_t)v;
      const float step = d * (float)v;
      const float inv = step != 0.0f ? 1.0f / step : 0.0f;
      const float *xs = x + 16 * j;
      int32_t *ts = t + 16 * j;
      /* x * inv lies in [-32.26 - eps, 31.26 + eps]: + 32.5 > 0, truncation rounds */
      for (int i = 0; i < 16; i++) ts[i] = (int32_t)(xs[i] * inv + 32.5f);
    }
    uint8_t L[256];
    for (int i = 0; i < 256; i++) {
      int32_t v = t[i] < 0 ? 0 : t[i];
      L[i] = (uint8_t)(v > 63 ? 63 : v);
    }
    uint8_t *ql = out, *qh = out + 128;
    for (int h = 0; h < 2; h++) {
      uint8_t *qlh = ql + 64 * h, *qhh = qh + 32 * h;
      const uint8_t *Lh = L + 128 * h;
      for (int l = 0; l < 32; l++) {
        const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
        qlh[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
        qlh[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
        qhh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}
