/* probe_keep: the rule `tokmeter probe` follows when it caches what it
 * measured: a new probe replaces the cached one unless the cached one is
 * fuller (probe_replaces_cached: a full probe is not replaced by a quick one,
 * nor by one of fewer thread counts), which then stays for `ceiling` and
 * `bench`. Library code: nothing is printed; the caller says what happened. */
#ifndef TM_PROBE_KEEP_H
#define TM_PROBE_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "machine/probe.h"
#include "util/err.h"

/* The cached probe that was kept, as the caller names it. */
struct probe_kept {
  char measured_at[32];
  bool quick;
  uint32_t max_threads;
};

/* Saves p to this machine's cache unless the cache holds a fuller probe. A
 * cache that cannot be read (missing, corrupt, another read loop, or no
 * memory to read it) counts as none. 0 saved; 1 not saved, *kept describing
 * the cached probe that stays; -1 with err when saving failed. */
int probe_save_unless_fuller(const struct machine_probe *p, struct probe_kept *kept,
                             struct tm_err *err);

#endif
