/* test_interval_ends: the exact ends of the intervals and thresholds that
 * decide what compare and the drift warning print, on samples whose answer is
 * known without running the code:
 *  - a bootstrap whose resampling distribution has atoms of known mass, so
 *    each percentile falls in a known atom (the ends are exact values);
 *  - the drift test's slope, fitted change and one-sided critical value, from
 *    the least-squares formulas in exact fractions and a t table;
 *  - the zero-spread Welch interval's degrees of freedom and t;
 *  - a two-point line, whose standard errors have no degree of freedom.
 * The arithmetic is in the comments. */
#include <math.h>

#include "stats/significance.h"
#include "stats/stats.h"
#include "tm_test.h"

/* A = {10, 10, 10}: every resample of A has mean log exactly ln 10.
 * B = {8, 12, 18}: a resample of 3 draws with replacement is a multiset; its
 * mean log is the log of the geometric mean. Probabilities (27 ordered draws):
 *   {8,8,8} 1/27 = 3.7%,  {8,8,12} 3/27 = 11.1%, ...,  {12,18,18} 3/27,
 *   {18,18,18} 1/27 = 3.7%.
 * At 95% the ends are the 2.5th and 97.5th percentiles: inside the two 3.7%
 * atoms, so lo = 8/10 and hi = 18/10 exactly. At 90% they are the 5th and
 * 95th: inside the next atoms, the geometric means (8*8*12)^(1/3) and
 * (12*18*18)^(1/3) over 10. With 10000 resamples the 3.7% atom holds 370 +- 19
 * draws: 250 (the 2.5% rank) and 500 (the 5% rank) are 6 sd away on each side,
 * so any seed gives these ends. */
static void bootstrap_ends_are_the_known_atoms(void) {
  const double a[] = {10, 10, 10}, b[] = {8, 12, 18};
  struct stats_ratio_ci ci;
  CHECK_EQ_INT(stats_ratio_ci(a, 3, b, 3, 0.95, STATS_CI_BOOTSTRAP, 0, STATS_BOOTSTRAP_SEED, &ci),
               0);
  CHECK_NEAR(ci.ratio, cbrt(8.0 * 12 * 18) / 10, 1e-12);
  CHECK_NEAR(ci.lo, 0.8, 1e-12);
  CHECK_NEAR(ci.hi, 1.8, 1e-12);
  CHECK_EQ_INT(stats_ratio_ci(a, 3, b, 3, 0.90, STATS_CI_BOOTSTRAP, 0, 12345, &ci), 0);
  CHECK_NEAR(ci.lo, cbrt(8.0 * 8 * 12) / 10, 1e-12);
  CHECK_NEAR(ci.hi, cbrt(12.0 * 18 * 18) / 10, 1e-12);
  /* the mirror: A/B is the reciprocal interval, ends swapped */
  CHECK_EQ_INT(stats_ratio_ci(b, 3, a, 3, 0.95, STATS_CI_BOOTSTRAP, 0, 99, &ci), 0);
  CHECK_NEAR(ci.lo, 1 / 1.8, 1e-12);
  CHECK_NEAR(ci.hi, 1 / 0.8, 1e-12);
}

/* Drift on the test_significance series {45.0, 44.6, 44.1, 43.9, 43.2, 42.9,
 * 42.5, 42.0} against run index 0..7, in exact fractions:
 *   xm = 7/2, Sxx = 42, Sxy = -179/10 -> b = -179/420 = -0.42619047...
 *   a = ym - b xm = 2701/60 = 45.01666...
 *   fitted first = a, last = a + 7b -> change = 7b / a = -0.0662717512...
 *   SSE = 97/2100 -> se_b = sqrt(SSE / 6 / 42) = 0.0135386683...,
 *   t = b / se_b = -31.4794975...
 *   one-sided critical value at 95% with n - 2 = 6 df: 1.9431802805 (t table;
 *   with 7 df it would be 1.8945786). */
static void drift_figures_by_hand(void) {
  const double slowing[] = {45.0, 44.6, 44.1, 43.9, 43.2, 42.9, 42.5, 42.0};
  struct stats_drift d;
  CHECK_EQ_INT(stats_drift(slowing, 8, true, 0.95, 0.01, &d), 0);
  CHECK_EQ_INT(d.n, 8);
  CHECK_NEAR(d.slope, -179.0 / 420, 1e-12);
  CHECK_NEAR(d.change, -0.0662717512032580, 1e-12);
  CHECK_NEAR(d.t, -31.4794975005415, 1e-8);
  CHECK_NEAR(d.t_crit, 1.94318028051530, 1e-8);
  CHECK(d.slower);
  /* NAN entries are skipped and the index runs over the values kept: the
   * same series with blanks gives the same figures. */
  const double gappy[] = {NAN, 45.0, 44.6, 44.1, NAN, 43.9, 43.2, 42.9, 42.5, 42.0, NAN};
  CHECK_EQ_INT(stats_drift(gappy, 11, true, 0.95, 0.01, &d), 0);
  CHECK_EQ_INT(d.n, 8);
  CHECK_NEAR(d.change, -0.0662717512032580, 1e-12);
  CHECK_NEAR(d.t_crit, 1.94318028051530, 1e-8);
}

/* No spread on either side: the interval is the point, and the t it reports
 * has n_a + n_b - 2 = 4 degrees of freedom: t(0.975, 4) = 2.7764451052. */
static void zero_spread_degrees_of_freedom(void) {
  const double c1[] = {10, 10, 10}, c2[] = {12, 12, 12};
  struct stats_ratio_ci ci;
  CHECK_EQ_INT(stats_ratio_ci(c1, 3, c2, 3, 0.95, STATS_CI_WELCH, 0, 0, &ci), 0);
  CHECK_NEAR(ci.df, 4, 0);
  CHECK_NEAR(ci.t, 2.77644510519779, 1e-9);
  CHECK_NEAR(ci.se_log, 0, 0);
}

/* Two points: the line is exact but its standard errors have no residual
 * degree of freedom (n - 2 = 0): NAN, whatever rounding leaves in the
 * residuals. x {0.1, 0.7}, y {0.3, 0.9}: the residuals of the fitted line
 * are not exactly 0 in binary floating point (SSE ~1.5e-32), so SSE / 0 would
 * be +inf, not a blank. */
static void two_points_have_no_standard_error(void) {
  const double x[] = {0.1, 0.7}, y[] = {0.3, 0.9};
  struct stats_line l;
  CHECK_EQ_INT(stats_fit_line(x, y, 2, &l), 0);
  CHECK_NEAR(l.b, 1, 1e-12);
  CHECK_NEAR(l.a, 0.2, 1e-12);
  CHECK(isnan(l.se_a));
  CHECK(isnan(l.se_b));
}

void tm_run_tests(void) {
  TM_RUN(bootstrap_ends_are_the_known_atoms);
  TM_RUN(drift_figures_by_hand);
  TM_RUN(zero_spread_degrees_of_freedom);
  TM_RUN(two_points_have_no_standard_error);
}
