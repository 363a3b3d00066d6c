/* kernels_avx2.h (private to src/engine/kernels_avx2*.c): what the AVX2
 * files share: their target attributes, the horizontal sum and fp16 scale
 * helpers, the four-stream decode driver that Q8_0 and Q6_K both use, the
 * prefill panels' fp16 unpacking and 8-row panel driver, and the table
 * fills of the two quantized parts.
 *
 * The AVX2 path in three files, one job each:
 *   kernels_avx2.c         float weights (F32, F16, BF16), the activation
 *                          quantizers, the F16 attention helpers and the
 *                          path's fill function (kernels.c calls it);
 *   kernels_avx2_q32.c     Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: tiles, four-stream
 *                          decode kernels, 8-row prefill panels, their table
 *                          entries;
 *   kernels_avx2_kquant.c  Q4_K, Q5_K, Q6_K: tiles, four-stream decode
 *                          kernels, 8-row panels of super-blocks, their
 *                          table entries.
 * Each part keeps its panels next to its entries (unlike the AVX-512 path's
 * kernels_avx512_panels.c): every entry inlines its decode kernel, panel and
 * tiles specialised for its type, as when the path was one file. */
#ifndef TM_ENGINE_KERNELS_AVX2_H
#define TM_ENGINE_KERNELS_AVX2_H

#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

AVX2_INLINE float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

AVX2_INLINE float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* ---- decode (ncols = 1), Q8_0 and Q6_K: four row streams ------------------
 * kernels_avx2_q32.c's Q4_0 shape (its comment says why) for two more types:
 * BLOCK(w, x, acc) adds one weight block's dot with its activation block to
 * the row's accumulator, the same arithmetic whichever stream
 * (q8_0_row_block, kernels_avx2_q32.c; q6_k_row_block,
 * kernels_avx2_kquant.c). */
#define DEFINE_GEMV4_AVX2(name, WBLOCK, XBLOCK, QK, BLOCK)                                     \
  AVX2 static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,  \
                        const XBLOCK *x, float *out) {                                        \
    const int64_t nb = n / (QK), q = (r1 - r0) / 4;                                           \
    const size_t qs = (size_t)q * w_stride;                                                   \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES); \
    for (int64_t i = 0; i < q; i++) {                                                         \
      const uint8_t *wa = w + (size_t)(r0 + i) * w_stride;                                    \
      __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),           \
                     _mm256_setzero_ps()};                                                    \
      for (int64_t k = 0; k < nb; k++) {                                                      \
        for (int s = 0; s < 4; s++)                                                           \
          PREFETCH_W(wa + s * qs + k * sizeof(WBLOCK), sizeof(WBLOCK));                       \
        for (int s = 0; s < 4; s++)                                                           \
          BLOCK((const WBLOCK *)(wa + s * qs) + k, x + k, &a[s]);                             \
      }                                                                                       \
      for (int s = 0; s < 4; s++) out[r0 + s * q + i] = hsum_ps(a[s]);                        \
    }                                                                                         \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                               \
      const WBLOCK *wr = (const WBLOCK *)(w + (size_t)r * w_stride);                          \
      __m256 a = _mm256_setzero_ps();                                                         \
      for (int64_t k = 0; k < nb; k++) {                                                      \
        PREFETCH_W(wr + k, sizeof(WBLOCK));                                                   \
        BLOCK(wr + k, x + k, &a);                                                             \
      }                                                                                       \
      out[r] = hsum_ps(a);                                                                    \
    }                                                                                         \
  }

/* ---- prefill panels (ncols >= 2), both parts ------------------------------ */

/* The low 16 bits of each of 8 dwords, as fp16, to floats. */
AVX2_INLINE __m256 apanel_f16_lo(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                        0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i p = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0x08);
  return _mm256_cvtph_ps(_mm256_castsi256_si128(p));
}

/* The AVX2 panel kernels' driver: 8-row panels of [r0, r1) (lanes: the
 * rows present), each through PANEL_SEGMENTS. BUILD and COLS see ridx, p,
 * lanes, pbase, s, kb and c. */
#define APANEL_DRIVE(nb, kseg, BUILD, COLS)                                                     \
  const __m256i lane_no = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);                             \
  const __m256i ridx = _mm256_mullo_epi32(lane_no, _mm256_set1_epi32((int)w_stride));            \
  for (int64_t p = r0; p < r1; p += 8) {                                                         \
    const int nr = (int)(r1 - p < 8 ? r1 - p : 8);                                               \
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane_no);                    \
    const uint8_t *pbase = w + (size_t)p * w_stride;                                             \
    PANEL_SEGMENTS(nb, kseg, BUILD, COLS)                                                        \
  }

/* The entries each part specialises (called by kernels_fill_avx2,
 * kernels_avx2.c). */
void kernels_fill_avx2_q32(struct kernel_ops *ops);
void kernels_fill_avx2_kquant(struct kernel_ops *ops);

#endif
#endif
