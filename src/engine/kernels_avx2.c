/* kernels_avx2: the AVX2 + FMA + F16C path (x86-64 only). Every function
 * carries its own target attribute, so this file builds in a generic x86-64
 * build and only runs when kernels.c's dispatch says the CPU can.
 *
 * Specialised here: gemm F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
 * Q5_K, Q6_K, with four-stream decode (one column) kernels for every quantized
 * type but the one-column-wide odd shapes (rows of an odd number of blocks),
 * and 8-row prefill panels for Q4_0, Q5_0, Q4_1, Q5_1, Q8_0 (apanel_gemm,
 * kernels_avx2_q32.c) and the K-quants (akpanel_gemm, kernels_avx2_kquant.c);
 * quantize_q8, quantize_q8k; dot_f16_f32, axpy_f16, f32_to_f16.
 * Scalar on this path (table entry = the scalar function): get_row.
 *
 * This file holds the float weights, the activation quantizers, the F16
 * helpers and the fill function; the 32-element types and the K-quants have a
 * file each (kernels_avx2.h lists them).
 *
 * Integer dots use maddubs (u8 x s8 -> pairs of i16) then madd (-> i32):
 *  - Q8_0 weights are signed: maddubs(|w|, sign(a, w)). No i16 saturation:
 *    |w|, |a| <= 127 (the quantizers clamp to -127), 2 * 127 * 127 < 32767.
 *  - Q4_0/Q5_0 weights go in unsigned (0..15 / 0..31); the -8 / -16 offset is
 *    applied per block in float as -8 d_w s_a (s_a = d_a sum q_a).
 *  - Q4_K: per 32-sub-block maddubs, then madd with the 6-bit scale.
 *  - Q6_K: 6-bit unsigned q; the -32 offset is -32 sum_k sc_k bsums_k. */
#include "engine/kernels_avx2.h"

#if defined(__x86_64__)
#include <math.h>
#include <string.h>

#include "gguf/quant_ref.h"

/* ---- float weights ------------------------------------------------------ */

#define FLOAT_TILE(fn, LOAD8, WTYPE, SCALAR_W)                                               \
  AVX2_INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as, const int nc, \
                      float *o, int64_t os) {                                               \
    const WTYPE *w = (const WTYPE *)wr;                                                     \
    __m256 acc0[4], acc1[4];                                                                \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();                   \
    int64_t i = 0;                                                                          \
    for (; i + 16 <= n; i += 16) {                                                          \
      PREFETCH_W(w + i, 1);                                                                 \
      __m256 w0 = LOAD8(w + i), w1 = LOAD8(w + i + 8);                                      \
      for (int c = 0; c < nc; c++) {                                                        \
        const float *x = (const float *)(a + c * as);                                       \
        acc0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), acc0[c]);                     \
        acc1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), acc1[c]);                 \
      }                                                                                     \
    }                                                                                       \
    for (; i + 8 <= n; i += 8) {                                                            \
      __m256 w0 = LOAD8(w + i);                                                             \
      for (int c = 0; c < nc; c++)                                                          \
        acc0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps((const float *)(a + c * as) + i),     \
                                  acc0[c]);                                                 \
    }                                                                                       \
    for (int c = 0; c < nc; c++) {                                                          \
      const float *x = (const float *)(a + c * as);                                         \
      float s = hsum_ps(_mm256_add_ps(acc0[c], acc1[c]));                                   \
      for (int64_t j = i; j < n; j++) s += SCALAR_W(w[j]) * x[j];                           \
      o[c * os] = s;                                                                        \
    }                                                                                       \
  }

#define LOAD_F32(p) _mm256_loadu_ps(p)
#define LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOAD_BF16(p)                                                                        \
  _mm256_castsi256_ps(                                                                      \
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define SW_F32(v) (v)
#define SW_F16(v) h2f(v)
AVX2_INLINE float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
#define SW_BF16(v) bf2f(v)

FLOAT_TILE(tile_f32, LOAD_F32, float, SW_F32)
FLOAT_TILE(tile_f16, LOAD_F16, uint16_t, SW_F16)
FLOAT_TILE(tile_bf16, LOAD_BF16, uint16_t, SW_BF16)

DEFINE_X86_GEMM(AVX2, gemm_f32, tile_f32)
DEFINE_X86_GEMM(AVX2, gemm_f16, tile_f16)
DEFINE_X86_GEMM(AVX2, gemm_bf16, tile_bf16)

/* ---- activation quantizers (same bytes as the scalar ones) -------------- */

AVX2_INLINE int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

/* Quantizes 32 floats with inverse scale id into q; returns the 4 i32 vectors'
 * sum as a vector of 8 partial sums (callers reduce). */
AVX2_INLINE __m256i quant32(const float *x, int8_t *q, float id, __m256i *sum16_lo,
                            __m256i *sum16_hi) {
  const __m256 vid = _mm256_set1_ps(id), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
  __m256i v[4];
  for (int k = 0; k < 4; k++) {
    __m256 f = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v[k] = _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(f, hi), lo));
  }
  __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i *)q, p);
  *sum16_lo = _mm256_add_epi32(v[0], v[1]);
  *sum16_hi = _mm256_add_epi32(v[2], v[3]);
  return _mm256_add_epi32(*sum16_lo, *sum16_hi);
}

AVX2_INLINE float amax_ps(const float *x, int len) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < len; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* Same rounding as kernels_scalar.c's quantizers (llama.cpp's): see there. */
AVX2 static void avx2_quantize_q8(const float *x, struct act_q8 *y, int64_t n) {
  for (int64_t b = 0; b < n / 32; b++) {
    float amax = amax_ps(x + 32 * b, 32);
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    __m256i l, h;
    int32_t sum = hsum_epi32(quant32(x + 32 * b, y[b].q, id, &l, &h));
    y[b].d = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    y[b].s = y[b].d * (float)sum;
  }
}

AVX2 static void avx2_quantize_q8k(const float *x, struct act_q8k *y, int64_t n) {
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float *xb = x + QK_K * b;
    float amax = amax_ps(xb, QK_K);
    if (amax == 0.0f) {
      memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    /* The signed value of largest magnitude, the first one in order. */
    float max = 0.0f;
    for (int i = 0; i < QK_K; i++)
      if (fabsf(xb[i]) == amax) {
        max = xb[i];
        break;
      }
    float iscale = -127.0f / max;
    for (int j = 0; j < 8; j++) {
      __m256i l, h;
      quant32(xb + 32 * j, y[b].q + 32 * j, iscale, &l, &h);
      y[b].bsums[2 * j] = (int16_t)hsum_epi32(l);
      y[b].bsums[2 * j + 1] = (int16_t)hsum_epi32(h);
    }
    y[b].d = 1.0f / iscale;
  }
}

/* ---- f16 helpers -------------------------------------------------------- */

AVX2 static float avx2_dot_f16_f32(const uint16_t *k, const float *q, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(LOAD_F16(k + i), _mm256_loadu_ps(q + i), a0);
    a1 = _mm256_fmadd_ps(LOAD_F16(k + i + 8), _mm256_loadu_ps(q + i + 8), a1);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(LOAD_F16(k + i), _mm256_loadu_ps(q + i), a0);
  float s = hsum_ps(_mm256_add_ps(a0, a1));
  for (; i < n; i++) s += h2f(k[i]) * q[i];
  return s;
}

AVX2 static void avx2_axpy_f16(float *y, float a, const uint16_t *v, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, LOAD_F16(v + i), _mm256_loadu_ps(y + i)));
  for (; i < n; i++) y[i] += a * h2f(v[i]);
}

AVX2 static void avx2_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

/* y = f16(f32(y) * a): F16C conversions, rounding to nearest even. The f32
 * multiply-add is fused here and in scalar_mad_f16's compiled form may not
 * be; the test allows one f16 ulp. */
AVX2 static void avx2_scale_f16(uint16_t *y, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i),
                     _mm256_cvtps_ph(_mm256_mul_ps(LOAD_F16(y + i), va), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(h2f(y[i]) * a, _MM_FROUND_TO_NEAREST_INT);
}

AVX2 static void avx2_mad_f16(uint16_t *y, float a, const uint16_t *v, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i),
                     _mm256_cvtps_ph(_mm256_fmadd_ps(LOAD_F16(v + i), va, LOAD_F16(y + i)),
                                     _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(h2f(y[i]) + a * h2f(v[i]), _MM_FROUND_TO_NEAREST_INT);
}

void kernels_fill_avx2(struct kernel_ops *ops) {
  ops->path = KERNEL_AVX2;
  ops->name = "avx2";
  ops->gemm[GGML_TYPE_F32] = gemm_f32;
  ops->gemm[GGML_TYPE_F16] = gemm_f16;
  ops->gemm[GGML_TYPE_BF16] = gemm_bf16;
  kernels_fill_avx2_q32(ops);
  kernels_fill_avx2_kquant(ops);
  ops->quantize_q8 = avx2_quantize_q8;
  ops->quantize_q8k = avx2_quantize_q8k;
  ops->dot_f16_f32 = avx2_dot_f16_f32;
  ops->axpy_f16 = avx2_axpy_f16;
  ops->f32_to_f16 = avx2_f32_to_f16;
  ops->scale_f16 = avx2_scale_f16;
  ops->mad_f16 = avx2_mad_f16;
  kernels_fill_rowops(ops);
}
#endif
