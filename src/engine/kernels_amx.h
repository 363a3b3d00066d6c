/* kernels_amx.h (private to src/engine/kernels*.c and the engine's unit
 * tests): the Q4_0 and Q8_0 prefill kernels on Intel AMX int8 tiles
 * (kernels_amx.c), x86-64 builds only. */
#ifndef TM_ENGINE_KERNELS_AMX_H
#define TM_ENGINE_KERNELS_AMX_H

#include <stdbool.h>

#include "engine/kernels_internal.h"

#if defined(__x86_64__)
#define AMX_MIN_COLS KERNEL_TILES_MIN_COLS

/* True when tm_amx_int8_usable() (util/amx.h: the CPU, the OS and Linux's
 * grant of the tile data) and the CPU has the AVX-512 the kernels' scaling
 * uses (F, BW, VL, DQ). */
bool kernels_amx_usable(void);
/* Puts the tile kernels in front of ops' Q4_0 and Q8_0 entries (which they
 * call for what they do not take) and sets ops->prefill_tiles. Once per
 * table; the caller has checked kernels_amx_usable(). */
void kernels_fill_amx(struct kernel_ops *ops);
#endif

#endif
