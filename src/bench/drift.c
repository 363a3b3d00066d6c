/* drift: see drift.h. */
#include "bench/drift.h"

#include <math.h>
#include <stdio.h>

bool bench_drift_test(const double *x, size_t n, struct stats_drift *out) {
  return stats_drift(x, n, true, BENCH_DRIFT_CONFIDENCE, BENCH_DRIFT_MIN_CHANGE, out) == 0;
}

const char *bench_drift_note(const struct stats_drift *d, const char *runs_word, char *buf,
                             size_t n) {
  if (!n) return buf;
  buf[0] = 0;
  if (!d->slower || !isfinite(d->change)) return buf;
  snprintf(buf, n, "slower from its first %s to its last: %+.1f%% fitted over %zu %ss, beyond "
           "the noise (rule 11)", runs_word, 100.0 * d->change, d->n, runs_word);
  return buf;
}
