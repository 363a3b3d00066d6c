/* kernels_rowops.h (private to kernels_rowops.c and kernels_attn_x86.c):
 * what the row operations and the x86 attention share: the scalar attention
 * row (the reference every path is held to), the largest head size, and on
 * x86 the target attributes, the F16 load and round-trip helpers and the
 * SIMD exp of the attention's softmax and of SwiGLU. */
#ifndef TM_ENGINE_KERNELS_ROWOPS_H
#define TM_ENGINE_KERNELS_ROWOPS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernels_internal.h"

#define ROWOPS_MAX_HD 1024 /* model.c refuses larger heads */

/* The reference attention of one query row (kernels_rowops.c; its header
 * comment has the arithmetic, llama.cpp's for an F16 cache). */
void kernels_scalar_attn_row(const float *q32, const uint16_t *k, const uint16_t *v,
                             size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                             float *out);

#if defined(__x86_64__)
#include <immintrin.h>

/* exp(x) for SIMD lanes: x = k ln2 + r with |r| <= ln2/2 (ln2 split in a
 * high part exact in float and a low part), e^r by Cephes' expf polynomial
 * (minimax, relative error ~1e-7), times 2^k. x is clamped to [-87.3, 88.3]
 * so 2^k stays a normal float: below, the result is ~1e-38 instead of a
 * denormal or 0, which changes nothing in silu. */
#define EXP_LO -87.3f
#define EXP_HI 88.3f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO -2.12194440e-4f
#define EXP_P0 1.9875691500E-4f
#define EXP_P1 1.3981999507E-3f
#define EXP_P2 8.3334519073E-3f
#define EXP_P3 4.1665795894E-2f
#define EXP_P4 1.6666665459E-1f
#define EXP_P5 5.0000001201E-1f

#define RO_AVX2 __attribute__((target("avx2,fma,f16c")))
#define RO_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

RO_AVX2 static inline __m256 ro_f16x8(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
RO_AVX2 static inline __m256 ro_round16x8(__m256 x) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(x, RNE));
}
RO_AVX2 static inline float ro_hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

RO_AVX2 static inline __m256 ro_exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP_LO)), _mm256_set1_ps(EXP_HI));
  __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_HI), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_LO), r);
  __m256 p = _mm256_set1_ps(EXP_P0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P5));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

RO_AVX512 static inline __m512 ro_f16x16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
RO_AVX512 static inline __m512 ro_round16x16(__m512 x) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, RNE));
}

RO_AVX512 static inline __m512 ro_exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP_LO)), _mm512_set1_ps(EXP_HI));
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_LOG2E)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(EXP_LN2_HI), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(EXP_LN2_LO), r);
  __m512 p = _mm512_set1_ps(EXP_P0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, k);
}

/* The attention entries (attn_row, attn_rows, attn_rows_cached,
 * attn_rows_next) of an AVX2 or AVX-512 table (kernels_attn_x86.c). */
void kernels_fill_attn_x86(struct kernel_ops *ops);
#endif

#endif
