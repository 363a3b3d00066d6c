/* import_probe: see import_probe.h. */
#include "import/import_probe.h"

int import_cached_probe(struct machine_probe *p, struct tm_err *why) {
  struct tm_err err = {{0}};
  int r = probe_load_cached(p, &err);
  if (r == 1 && p->quick && !probe_quick_from_env())
    return tm_errf(why, "the cached probe is a quick one (not memory bandwidth): not used; run "
                        "'tokmeter probe' or give --bandwidth");
  if (r == 1) return 0;
  if (r == 0)
    return tm_errf(why, "no cached probe of this machine: ceilings without a given figure stay "
                        "blank (run 'tokmeter probe', or give --bandwidth / --compute)");
  return tm_errf(why, "%s: not used", err.msg);
}
