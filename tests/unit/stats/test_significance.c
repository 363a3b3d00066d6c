/* test_significance: Student's t against reference values (computed with
 * mpmath at 30 digits), the Welch interval on the ratio against a hand
 * computation (log values, Welch-Satterthwaite df, t quantile), the rule 12
 * example (15.66 +- 2.17 vs 17.43 +- 0.74) not ranked, a clear difference
 * ranked, the bootstrap deterministic, and drift found only where it is. */
#include <stdlib.h>

#include "stats/significance.h"
#include "tm_test.h"

static void test_t_distribution(void) {
  CHECK_NEAR(stats_t_quantile(0.975, 4), 2.77644510519779, 1e-10);
  CHECK_NEAR(stats_t_quantile(0.975, 2.5), 3.57465484200368, 1e-10);
  CHECK_NEAR(stats_t_quantile(0.975, 1), 12.7062047361747, 1e-9);
  CHECK_NEAR(stats_t_quantile(0.995, 10), 3.16927267261695, 1e-10);
  CHECK_NEAR(stats_t_quantile(0.95, 30), 1.69726088659396, 1e-10);
  CHECK_NEAR(stats_t_quantile(0.975, 3.7), 2.86752070719119, 1e-10);
  CHECK_NEAR(stats_t_quantile(0.025, 4), -2.77644510519779, 1e-10);
  CHECK_NEAR(stats_t_quantile(0.5, 4), 0, 0);
  CHECK_NEAR(stats_t_cdf(1.5, 2.5), 0.876081773456852, 1e-12);
  CHECK_NEAR(stats_t_cdf(-0.3, 7.2), 0.386326946094554, 1e-12);
  /* df = 2 has a closed form: F(x) = 1/2 + x / (2 sqrt(2 + x^2)) */
  CHECK_NEAR(stats_t_cdf(1.7, 2), 0.5 + 1.7 / (2 * sqrt(2 + 1.7 * 1.7)), 1e-13);
  CHECK(isnan(stats_t_quantile(1.0, 4)));
  CHECK(isnan(stats_t_quantile(0.9, 0)));
  CHECK(isnan(stats_t_cdf(1, -1)));
}

/* Rule 12's example, three runs a side with exactly those means and sds. */
static const double noisy_a[] = {13.49, 15.66, 17.83};  /* 15.66 +- 2.17 */
static const double tight_b[] = {16.69, 17.43, 18.17};  /* 17.43 +- 0.74 */

static void test_welch_hand_computed(void) {
  struct stats_ratio_ci ci;
  CHECK_EQ_INT(stats_ratio_ci(noisy_a, 3, tight_b, 3, 0.95, STATS_CI_WELCH, 0, 0, &ci), 0);
  /* by hand (mpmath): logs, Welch-Satterthwaite df, t(0.975, df) */
  CHECK_NEAR(ci.ratio, 1.11956986487089, 1e-12);
  CHECK_NEAR(ci.se_log, 0.0842362729377824, 1e-13);
  CHECK_NEAR(ci.df, 2.36742068041399, 1e-11);
  CHECK_NEAR(ci.t, 3.72203030289998, 1e-9);
  CHECK_NEAR(ci.lo, 0.818251609860887, 1e-9);
  CHECK_NEAR(ci.hi, 1.5318474992553, 1e-9);
  CHECK_EQ_INT(ci.n_a, 3);
  CHECK_EQ_INT(ci.n_b, 3);
  /* the interval holds 1: not distinguishable, though B's mean is 11% higher */
  CHECK(ci.lo < 1 && ci.hi > 1);

  /* a clear difference: the interval excludes 1 */
  const double a[] = {40.1, 39.8, 40.3, 40.0}, b[] = {55.2, 54.9, 55.6, 55.0};
  CHECK_EQ_INT(stats_ratio_ci(a, 4, b, 4, 0.95, STATS_CI_WELCH, 0, 0, &ci), 0);
  CHECK_NEAR(ci.ratio, 1.37765066212083, 1e-12);
  CHECK_NEAR(ci.df, 5.96668041269918, 1e-10);
  CHECK_NEAR(ci.t, 2.45022791602585, 1e-9);
  CHECK_NEAR(ci.lo, 1.36481319273395, 1e-9);
  CHECK_NEAR(ci.hi, 1.39060888108804, 1e-9);
  CHECK(ci.lo > 1);

  /* symmetric: A/B is the reciprocal interval */
  struct stats_ratio_ci rev;
  CHECK_EQ_INT(stats_ratio_ci(b, 4, a, 4, 0.95, STATS_CI_WELCH, 0, 0, &rev), 0);
  CHECK_NEAR(rev.lo, 1 / ci.hi, 1e-12);
  CHECK_NEAR(rev.hi, 1 / ci.lo, 1e-12);
  /* a higher confidence widens it */
  struct stats_ratio_ci wide;
  CHECK_EQ_INT(stats_ratio_ci(a, 4, b, 4, 0.99, STATS_CI_WELCH, 0, 0, &wide), 0);
  CHECK(wide.lo < ci.lo && wide.hi > ci.hi);
}

static void test_ratio_edge_cases(void) {
  struct stats_ratio_ci ci;
  const double one[] = {10}, two[] = {10, 11}, bad[] = {10, 0}, nan2[] = {NAN, 20, 22};
  CHECK_EQ_INT(stats_ratio_ci(one, 1, two, 2, 0.95, STATS_CI_WELCH, 0, 0, &ci), -1);
  CHECK_NEAR(ci.ratio, exp((log(10) + log(11)) / 2) / 10, 1e-12); /* point still given */
  CHECK(isnan(ci.lo) && isnan(ci.hi));
  CHECK_EQ_INT(stats_ratio_ci(two, 2, bad, 2, 0.95, STATS_CI_WELCH, 0, 0, &ci), -1);
  CHECK_EQ_INT(stats_ratio_ci(two, 2, two, 2, 1.5, STATS_CI_WELCH, 0, 0, &ci), -1);
  CHECK_EQ_INT(stats_ratio_ci(NULL, 0, two, 2, 0.95, STATS_CI_WELCH, 0, 0, &ci), -1);
  /* NAN skipped: B is {20, 22} */
  CHECK_EQ_INT(stats_ratio_ci(two, 2, nan2, 3, 0.95, STATS_CI_WELCH, 0, 0, &ci), 0);
  CHECK_EQ_INT(ci.n_b, 2);
  CHECK_NEAR(ci.ratio, 2, 1e-12);
  /* no spread at all: the interval is the point, ranked when it is not 1 */
  const double c1[] = {10, 10, 10}, c2[] = {12, 12, 12};
  CHECK_EQ_INT(stats_ratio_ci(c1, 3, c2, 3, 0.95, STATS_CI_WELCH, 0, 0, &ci), 0);
  CHECK_NEAR(ci.lo, 1.2, 1e-12);
  CHECK_NEAR(ci.hi, 1.2, 1e-12);
}

static void test_bootstrap(void) {
  const double a[] = {40.1, 39.8, 40.3, 40.0, 40.4}, b[] = {55.2, 54.9, 55.6, 55.0, 55.1};
  struct stats_ratio_ci x, y, z;
  CHECK_EQ_INT(stats_ratio_ci(a, 5, b, 5, 0.95, STATS_CI_BOOTSTRAP, 2000, 42, &x), 0);
  CHECK_EQ_INT(stats_ratio_ci(a, 5, b, 5, 0.95, STATS_CI_BOOTSTRAP, 2000, 42, &y), 0);
  /* deterministic: bit-identical for the same seed */
  CHECK(x.lo == y.lo && x.hi == y.hi && x.ratio == y.ratio);
  CHECK(x.lo > 1 && x.lo <= x.ratio && x.hi >= x.ratio);
  CHECK(isnan(x.df));
  /* every resampled mean lies within each side's range */
  CHECK(x.lo >= 54.9 / 40.4 - 1e-12 && x.hi <= 55.6 / 39.8 + 1e-12);
  /* another seed: close, not necessarily identical */
  CHECK_EQ_INT(stats_ratio_ci(a, 5, b, 5, 0.95, STATS_CI_BOOTSTRAP, 2000, 7, &z), 0);
  CHECK_NEAR(z.lo, x.lo, 0.01);
  /* default resample count */
  CHECK_EQ_INT(stats_ratio_ci(noisy_a, 3, tight_b, 3, 0.95, STATS_CI_BOOTSTRAP, 0,
                              STATS_BOOTSTRAP_SEED, &z), 0);
  CHECK(z.lo < 1 && z.hi > 1); /* rule 12's example: not ranked by the bootstrap either */
}

static void test_drift(void) {
  struct stats_drift d;
  /* a decode rate that falls run after run, with a little noise */
  const double slowing[] = {45.0, 44.6, 44.1, 43.9, 43.2, 42.9, 42.5, 42.0};
  CHECK_EQ_INT(stats_drift(slowing, 8, true, 0.95, 0.01, &d), 0);
  CHECK(d.slower);
  CHECK(d.change < -0.05 && d.change > -0.08);
  CHECK(d.slope < 0);
  /* the same numbers as times (ms): rising is slower */
  const double rising_ms[] = {100, 101, 103, 103.5, 105, 106.2};
  CHECK_EQ_INT(stats_drift(rising_ms, 6, false, 0.95, 0.01, &d), 0);
  CHECK(d.slower);
  /* rising rates are not "slower" */
  CHECK_EQ_INT(stats_drift(rising_ms, 6, true, 0.95, 0.01, &d), 0);
  CHECK(!d.slower);
  /* flat but noisy: no drift */
  const double flat[] = {44.0, 46.1, 43.2, 45.8, 44.4, 43.9, 46.0, 44.1};
  CHECK_EQ_INT(stats_drift(flat, 8, true, 0.95, 0.01, &d), 0);
  CHECK(!d.slower);
  CHECK(fabs(d.t) < d.t_crit);
  /* significant but tiny (0.2% over the series): below min_change */
  const double tiny[] = {100.0, 99.97, 99.94, 99.91, 99.88, 99.85, 99.82};
  CHECK_EQ_INT(stats_drift(tiny, 7, true, 0.95, 0.01, &d), 0);
  CHECK(!d.slower);
  CHECK_EQ_INT(stats_drift(tiny, 7, true, 0.95, 0.001, &d), 0);
  CHECK(d.slower);
  /* too few */
  const double two[] = {1, 2};
  CHECK_EQ_INT(stats_drift(two, 2, true, 0.95, 0.01, &d), -1);
}

void tm_run_tests(void) {
  TM_RUN(test_t_distribution);
  TM_RUN(test_welch_hand_computed);
  TM_RUN(test_ratio_edge_cases);
  TM_RUN(test_bootstrap);
  TM_RUN(test_drift);
}
