/* kernels_internal.h (private to src/engine/kernels*.c): what the per-path
 * files share. Each path file fills a struct kernel_ops from the one below it
 * (scalar <- avx2 <- avx512 <- avx512_vnni): an entry a path does not
 * specialise keeps the narrower path's function, so every table is complete.
 *
 * Shared numeric contracts (the tests hold every path to them):
 *  - quantize_q8 / quantize_q8k: d = amax / 127, q = round-half-even(x / d)
 *    computed as x * (1 / d) in float, clamped to [-127, 127]; s = d * sum(q);
 *    bsums exact. Every path produces the same bytes.
 *  - gemm: integer dot products per block are exact; only the float summation
 *    order of the per-block (scale * integer) terms differs between paths. */
#ifndef TM_ENGINE_KERNELS_INTERNAL_H
#define TM_ENGINE_KERNELS_INTERNAL_H

#include "engine/kernels.h"

/* Fills every entry of ops with the scalar reference. */
void kernels_fill_scalar(struct kernel_ops *ops);
/* Overwrite the entries each x86 path specialises (ops already holds the
 * narrower path). Defined only on x86-64 builds. */
void kernels_fill_avx2(struct kernel_ops *ops);
void kernels_fill_avx512(struct kernel_ops *ops);
void kernels_fill_avx512_vnni(struct kernel_ops *ops);
/* On a VNNI table, on AMD CPUs: the Q4_K and Q5_K decode kernels that sum
 * sub-blocks in lanes (kernels_avx512_kquant.c), in front of the VNNI ones. */
void kernels_fill_kquant_lanes(struct kernel_ops *ops);
/* On a VNNI table, when the CPU also has AVX-512 VBMI: the Q4_0 decode
 * kernel of kernels_vbmi.c in front of the VNNI one, and on an AMD CPU (amd)
 * the Q8_0 one too. */
void kernels_fill_vbmi(struct kernel_ops *ops, bool amd);
/* attn_row, argmax, sumsq for ops->path (kernels_rowops.c); every fill
 * function above calls it last, so a path without its own versions keeps the
 * narrower path's. */
void kernels_fill_rowops(struct kernel_ops *ops);

/* Scalar quantizers, exposed so SIMD quantizers can finish odd tails. */
void kernels_scalar_quantize_q8(const float *x, struct act_q8 *y, int64_t n);
void kernels_scalar_quantize_q8k(const float *x, struct act_q8k *y, int64_t n);

/* ncols at or above which a SIMD gemm switches from the decode loop (one
 * column, rows unrolled) to the column-tiled prefill loop. */
#define KERNEL_COL_TILE 4

/* The column-tiled gemm driver every SIMD path wraps its tiles in:
 * tile(n, wrow, a, a_stride, nc, out, out_stride) computes one weight row
 * against nc in 1..KERNEL_COL_TILE activation columns, out pointing at
 * out[c0 * out_stride + r]. The driver walks groups of GROUP rows, then
 * column tiles, then the rows, and hands the tile a compile-time nc (the
 * switch) so its column loops unroll. ncols = 1 is one sequential pass
 * over the rows, each weight byte read once in address order. */
#define DEFINE_TILED_GEMM(ATTR, name, tile, GROUP)                                          \
  ATTR static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,  \
                        const void *a, size_t a_stride, int64_t ncols, float *out,          \
                        int64_t out_stride) {                                               \
    const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;                       \
    for (int64_t g = r0; g < r1; g += GROUP) {                                              \
      int64_t ge = g + GROUP < r1 ? g + GROUP : r1;                                         \
      for (int64_t c = 0; c < ncols; c += KERNEL_COL_TILE) {                                \
        int64_t nc = ncols - c < KERNEL_COL_TILE ? ncols - c : KERNEL_COL_TILE;             \
        const uint8_t *ac = ab + (size_t)c * a_stride;                                      \
        for (int64_t r = g; r < ge; r++) {                                                  \
          const uint8_t *wr = wb + (size_t)r * w_stride;                                    \
          float *o = out + c * out_stride + r;                                              \
          switch (nc) {                                                                     \
          case 1: tile(n, wr, ac, a_stride, 1, o, out_stride); break;                       \
          case 2: tile(n, wr, ac, a_stride, 2, o, out_stride); break;                       \
          case 3: tile(n, wr, ac, a_stride, 3, o, out_stride); break;                       \
          default: tile(n, wr, ac, a_stride, 4, o, out_stride); break;                      \
          }                                                                                 \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }

#endif
