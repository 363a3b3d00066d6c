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

/* The NEON path's column-tiled gemm driver (kernels_internal.h). */
#define DEFINE_NEON_GEMM(ATTR, name, tile) DEFINE_TILED_GEMM(ATTR, name, tile, NEON_ROW_GROUP)

#endif
