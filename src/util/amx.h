/* amx: whether this process may run Intel AMX int8 tile instructions. One
 * answer for the probe (src/machine) and the engine (src/engine). */
#ifndef TM_UTIL_AMX_H
#define TM_UTIL_AMX_H

#include <stdbool.h>

/* True when CPUID has AMX-TILE and AMX-INT8, the OS saves the tile state
 * (XCR0 bits 17 and 18), and Linux lent this process the tile data
 * (arch_prctl ARCH_REQ_XCOMP_PERM, asked here: process-wide, idempotent).
 * False on every other architecture. */
bool tm_amx_int8_usable(void);

#endif
