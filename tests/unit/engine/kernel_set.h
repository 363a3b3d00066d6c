/* kernel_set.h: what the kernel set under test holds (TOKMETER_KERNELS,
 * src/engine/kernels.h), so the engine's tests expect exactly that set's
 * tables and variants, and say "skipped" for what it leaves out. Header
 * only: each test binary is one file. */
#ifndef TM_TEST_KERNEL_SET_H
#define TM_TEST_KERNEL_SET_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "engine/kernels.h"

/* The sets, narrowest first (each x86 set holds those before it). */
static const char *const kset_order[] = {"scalar", "avx2", "avx512", "vnni", "vbmi", "amx"};

static inline int kset_rank(const char *name) {
  for (int i = 0; i < (int)(sizeof kset_order / sizeof kset_order[0]); i++)
    if (strcmp(name, kset_order[i]) == 0) return i;
  return -1;
}

/* Whether the set under test may hold `part` (a name of kset_order): always
 * when TOKMETER_KERNELS is unset (the CPU decides). */
static inline bool kset_allows(const char *part) {
  const char *f = kernels_forced_name();
  if (!f) return true;
  int rf = kset_rank(f), rp = kset_rank(part);
  return rf >= 0 && rp >= 0 && rp <= rf;
}

/* Why a table or variant is not checked here: the set, or the CPU. */
static inline const char *kset_why_not(const char *what) {
  static char buf[160];
  const char *f = kernels_forced_name();
  if (f && !kset_allows(what))
    snprintf(buf, sizeof buf, "not in the kernel set under test (TOKMETER_KERNELS=%s)", f);
  else
    snprintf(buf, sizeof buf, "this CPU or OS cannot run %s", what);
  return buf;
}

#endif
