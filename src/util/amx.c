/* amx: see amx.h. */
#include "util/amx.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

bool tm_amx_int8_usable(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!((d >> 24) & 1) || !((d >> 25) & 1)) return false; /* AMX-TILE, AMX-INT8 */
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return false; /* OSXSAVE */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false; /* XTILECFG, XTILEDATA */
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}
#else
bool tm_amx_int8_usable(void) { return false; }
#endif
