/* probe_keep: cache a probe unless the cache is fuller; see probe_keep.h. */
#include "machine/probe_keep.h"

#include <stdlib.h>
#include <string.h>

int probe_save_unless_fuller(const struct machine_probe *p, struct probe_kept *kept,
                             struct tm_err *err) {
  struct machine_probe *old = malloc(sizeof *old);
  struct tm_err lerr = {{0}};
  if (old && probe_load_cached(old, &lerr) == 1 && !probe_replaces_cached(p, old)) {
    memset(kept, 0, sizeof *kept);
    memcpy(kept->measured_at, old->measured_at, sizeof kept->measured_at);
    kept->measured_at[sizeof kept->measured_at - 1] = 0;
    kept->quick = old->quick;
    kept->max_threads = old->max_threads;
    free(old);
    return 1;
  }
  free(old);
  return probe_save_cached(p, err) == 0 ? 0 : -1;
}
