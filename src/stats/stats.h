/* stats: descriptive statistics of a sample (median, mean, sample sd, min,
 * max, percentiles) and a least-squares line. NAN entries are skipped (a blank
 * figure is not a zero). Pure functions; inputs are never modified. */
#ifndef TM_STATS_H
#define TM_STATS_H

#include <stddef.h>

struct stats_summary {
  size_t n;        /* finite values used */
  double median, mean, sd, min, max; /* NAN when n == 0; sd NAN when n < 2 */
};

void stats_describe(const double *x, size_t n, struct stats_summary *out);
/* Percentile p in [0, 100], linear interpolation between order statistics;
 * NAN when no finite value. */
double stats_percentile(const double *x, size_t n, double p);

/* y = a + b x by least squares over the pairs where both are finite, with the
 * standard errors of a and b; returns -1 when fewer than 2 distinct x. */
struct stats_line {
  double a, b, se_a, se_b, r2;
  size_t n;
};
int stats_fit_line(const double *x, const double *y, size_t n, struct stats_line *out);

#endif
