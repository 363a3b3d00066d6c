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
 * sub-blocks in lanes (kernels_avx512.c), in front of the VNNI ones. */
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

#endif
