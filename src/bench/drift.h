/* drift: method rule 11 inside one configuration. When the last timed
 * repetitions of a configuration are slower than its first beyond the noise
 * (a heating machine throttling, or other work arriving), the bench says so
 * under its figures; the runs and their median stay as measured.
 *
 * The test is stats_drift (significance.h) over the repetitions' rates in
 * the order they ran, the one `tokmeter compare` applies to a series: a
 * least-squares line whose slope is below zero beyond its one-sided
 * BENCH_DRIFT_CONFIDENCE interval, and whose fitted change from the first
 * repetition to the last is at least BENCH_DRIFT_MIN_CHANGE. It needs three
 * rates. Stricter than compare's (95%, 1%): a bench makes one test per
 * configuration, eight in the main job, and at 95% and 1% three noisy
 * repetitions on a near line flagged one of them by chance (-2.9% over 3,
 * the first fresh clone of 2026-12-01); a machine throttling moves rates by
 * more than 3%. */
#ifndef TM_BENCH_DRIFT_H
#define TM_BENCH_DRIFT_H

#include <stdbool.h>
#include <stddef.h>

#include "stats/significance.h"

#define BENCH_DRIFT_CONFIDENCE 0.99
#define BENCH_DRIFT_MIN_CHANGE 0.03

/* Rates x[0..n) in run order (non-finite values are left out). True when a
 * test was possible (3 or more rates): out filled; false otherwise. */
bool bench_drift_test(const double *x, size_t n, struct stats_drift *out);

/* What a configuration that drifted (d->slower) shows, e.g. "slower from
 * its first repetition to its last: -6.2% fitted over 5 repetitions, beyond
 * the noise (rule 11)"; "" when it did not drift. Returns buf. */
const char *bench_drift_note(const struct stats_drift *d, const char *runs_word, char *buf,
                             size_t n);
/* What to do about it, to follow the note. */
#define BENCH_DRIFT_ADVICE                                                          \
  "a machine heating up, or other work starting, slows the later ones (--cooldown S " \
  "rests the machine S seconds before each configuration)"

#endif
