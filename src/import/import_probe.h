/* import_probe: whether `tokmeter import` may base ceilings on this machine's
 * cached probe (never a fresh one: importing stays instant). Library code:
 * nothing is printed; the reason a probe is not used comes back as the
 * warning the caller shows. */
#ifndef TM_IMPORT_PROBE_H
#define TM_IMPORT_PROBE_H

#include "machine/probe.h"
#include "util/err.h"

/* Loads the cached probe into p. 0 when its figures may be used; -1 with why
 * when not: none is cached, it is a quick one (its figures are not memory
 * bandwidth; TOKMETER_PROBE_QUICK=1 accepts it), or it cannot be used
 * ("<why probe_load_cached refused it>: not used"). */
int import_cached_probe(struct machine_probe *p, struct tm_err *why);

#endif
