/* kernels_avx512.h (private to src/engine/kernels_avx512*.c): what the
 * AVX-512 files share: their target attributes, a horizontal sum, the
 * table-entry dispatcher of the VNNI path and the prefill panels that the
 * 32-element and K-quant entries both use.
 *
 * The AVX-512 path in four files, one job each:
 *   kernels_avx512.c         float weights, the F16 attention helpers, the
 *                            activation quantizers, the two fill functions;
 *   kernels_avx512_kquant.c  Q4_K, Q5_K, Q6_K: decode kernels (512-bit
 *                            maddubs, VNNI and, on AMD, the lanes kernels),
 *                            the 512-bit prompt tiles, their table entries;
 *   kernels_avx512_q32.c     Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 on VNNI: tiles,
 *                            decode kernels, their table entries;
 *   kernels_avx512_panels.c  prefill (ncols >= 2): 16-row weight panels for
 *                            the 32-element types and the K-quants. */
#ifndef TM_ENGINE_KERNELS_AVX512_H
#define TM_ENGINE_KERNELS_AVX512_H

#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define T512 "avx512f,avx512bw,avx512vl,avx2,fma,f16c"
#define AVX512 __attribute__((target(T512)))
#define AVX512_INLINE __attribute__((target(T512), always_inline)) static inline
#define VNNI __attribute__((target(T512 ",avx512vnni")))
#define VNNI_INLINE __attribute__((target(T512 ",avx512vnni"), always_inline)) static inline

AVX512_INLINE float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* Prefill panels (kernels_avx512_panels.c), gemm_fn's contract with
 * ncols >= 2 and w_stride <= INT32_MAX / 16 (32-bit gather offsets). */
#define AVX512_PANEL_FN(name)                                                                 \
  void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,            \
            const uint8_t *a, size_t as, int64_t ncols, float *out, int64_t os)
AVX512_PANEL_FN(avx512_panel_gemm_q4_0);
AVX512_PANEL_FN(avx512_panel_gemm_q8_0);
AVX512_PANEL_FN(avx512_panel_gemm_q5_0);
AVX512_PANEL_FN(avx512_panel_gemm_q4_1);
AVX512_PANEL_FN(avx512_panel_gemm_q5_1);
AVX512_PANEL_FN(avx512_kpanel_gemm_q4_k);
AVX512_PANEL_FN(avx512_kpanel_gemm_q5_k);
AVX512_PANEL_FN(avx512_kpanel_gemm_q6_k);

/* The table entries: decode and prefill kernels above where they apply, the
 * tile kernels otherwise (rows wider than the decode buffer, or a w_stride
 * too large for 32-bit gather offsets). DECODE_OK: the decode kernel takes
 * rows of n elements; min_cols: the columns from which a panel's build pays
 * (Q6_K's panels, GOPS at 2 / 4 / 8 columns from cache: 70 / 122 / 177
 * against the tiles' 102 / 131 / 132; every other type's panels are as fast
 * or faster from 2). */
#define DEFINE_VNNI_FAST(name, gemv, DECODE_OK, panels, min_cols, tiles)                       \
  VNNI static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,     \
                        const void *a, size_t a_stride, int64_t ncols, float *out,             \
                        int64_t out_stride) {                                                  \
    if (ncols == 1 && (DECODE_OK)) {                                                           \
      gemv(n, w, w_stride, r0, r1, a, out);                                                    \
      return;                                                                                  \
    }                                                                                          \
    if (ncols >= (min_cols) && w_stride <= (size_t)(INT32_MAX / 16)) {                        \
      panels(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                     \
      return;                                                                                  \
    }                                                                                          \
    tiles(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                        \
  }

/* The entries each part specialises (called by kernels_fill_avx512 and
 * kernels_fill_avx512_vnni, kernels_avx512.c). */
void kernels_fill_avx512_kquant(struct kernel_ops *ops);
void kernels_fill_avx512_kquant_vnni(struct kernel_ops *ops);
void kernels_fill_avx512_q32_vnni(struct kernel_ops *ops);

#endif
#endif
