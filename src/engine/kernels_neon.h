/* kernels_neon.h (private to src/engine/kernels*.c and the engine's unit
 * tests): the aarch64 NEON path's table filler and the gemm driver shape its
 * two integer variants share.
 *
 * KERNEL_NEON has two variants of its integer kernels, chosen once when
 * kernels.c builds the table: sdot (ARMv8.2 dotprod, when
 * getauxval(AT_HWCAP) has HWCAP_ASIMDDP) and a widening-multiply fallback
 * (smull/smlal + sadalp) for cores without it (Cortex-A53/A72, ...). Both
 * compute the same exact integer block dots; K-quant results are the same
 * bits, 32-element block types may differ in the last float rounding (the
 * int32 lanes hold different partial sums before the per-lane scale FMA).
 * Everything else (float weights, quantizers, f16 helpers) is baseline NEON. */
#ifndef TM_ENGINE_KERNELS_NEON_H
#define TM_ENGINE_KERNELS_NEON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels_internal.h"

/* Overwrites the entries the NEON path specialises (ops already holds the
 * scalar table). dotprod: use the sdot kernels; the caller has checked that
 * the CPU has them. Defined only on aarch64 builds. */
void kernels_fill_neon(struct kernel_ops *ops, bool dotprod);

/* Rows per group in the gemm driver: a group's weight rows stay in L1/L2
 * while every column tile of the activations passes over them. */
#define NEON_ROW_GROUP 16

/* tile(n, wrow, a, a_stride, nc, out, out_stride): one weight row against
 * nc in 1..KERNEL_COL_TILE activation columns. The driver walks row groups,
 * then column tiles, then rows, handing the tile a compile-time nc (switch)
 * so its column loops unroll. ncols = 1 (decode) is one sequential pass over
 * the rows, each weight byte read once in address order. */
#define DEFINE_NEON_GEMM(ATTR, name, tile)                                                  \
  ATTR static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,  \
                        const void *a, size_t a_stride, int64_t ncols, float *out,          \
                        int64_t out_stride) {                                               \
    const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;                       \
    for (int64_t g = r0; g < r1; g += NEON_ROW_GROUP) {                                     \
      int64_t ge = g + NEON_ROW_GROUP < r1 ? g + NEON_ROW_GROUP : r1;                       \
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
