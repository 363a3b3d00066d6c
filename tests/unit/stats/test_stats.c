/* Tests for src/stats: every expected value computed by hand in the comments. */
#include <math.h>

#include "stats/stats.h"
#include "tm_test.h"

static void test_describe_even_with_nan(void) {
  /* finite {4,1,3,2}: mean 2.5, deviations +-1.5, +-0.5 -> ss = 2*(2.25+0.25) = 5,
   * sd = sqrt(5/3); median = (2+3)/2. */
  const double x[] = {4, NAN, 1, 3, INFINITY, 2};
  struct stats_summary s;
  stats_describe(x, 6, &s);
  CHECK_EQ_INT(s.n, 4);
  CHECK_NEAR(s.median, 2.5, 1e-12);
  CHECK_NEAR(s.mean, 2.5, 1e-12);
  CHECK_NEAR(s.sd, sqrt(5.0 / 3.0), 1e-12);
  CHECK_NEAR(s.min, 1, 0);
  CHECK_NEAR(s.max, 4, 0);
}

static void test_describe_odd(void) {
  const double x[] = {5, 1, 3};
  struct stats_summary s;
  stats_describe(x, 3, &s);
  CHECK_EQ_INT(s.n, 3);
  CHECK_NEAR(s.median, 3, 0);
  CHECK_NEAR(s.mean, 3, 1e-12);
  CHECK_NEAR(s.sd, 2, 1e-12); /* (4+0+4)/2 = 4 */
}

static void test_describe_edges(void) {
  struct stats_summary s;
  stats_describe(NULL, 0, &s);
  CHECK_EQ_INT(s.n, 0);
  CHECK(isnan(s.median) && isnan(s.mean) && isnan(s.sd) && isnan(s.min) && isnan(s.max));

  const double all_nan[] = {NAN, NAN};
  stats_describe(all_nan, 2, &s);
  CHECK_EQ_INT(s.n, 0);
  CHECK(isnan(s.median));

  const double one[] = {NAN, 7};
  stats_describe(one, 2, &s);
  CHECK_EQ_INT(s.n, 1);
  CHECK_NEAR(s.median, 7, 0);
  CHECK_NEAR(s.mean, 7, 0);
  CHECK(isnan(s.sd)); /* one value has no spread to report */
  CHECK_NEAR(s.min, 7, 0);
  CHECK_NEAR(s.max, 7, 0);

  /* Large nearly-equal values: sd from deviations, not from sum of squares. */
  const double big[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
  stats_describe(big, 3, &s);
  CHECK_NEAR(s.sd, 1.0, 1e-9);
}

static void test_percentile(void) {
  const double x[] = {4, 2, NAN, 1, 3};
  CHECK_NEAR(stats_percentile(x, 5, 50), 2.5, 1e-12);  /* rank 1.5 */
  CHECK_NEAR(stats_percentile(x, 5, 25), 1.75, 1e-12); /* rank 0.75 */
  CHECK_NEAR(stats_percentile(x, 5, 90), 3.7, 1e-12);  /* rank 2.7 */
  CHECK_NEAR(stats_percentile(x, 5, 0), 1, 0);
  CHECK_NEAR(stats_percentile(x, 5, 100), 4, 0);
  const double one[] = {9};
  CHECK_NEAR(stats_percentile(one, 1, 37), 9, 0);
  CHECK(isnan(stats_percentile(x, 0, 50)));
  CHECK(isnan(stats_percentile(x, 5, NAN)));
  const double none[] = {NAN};
  CHECK(isnan(stats_percentile(none, 1, 50)));
}

static void test_fit_exact(void) {
  const double x[] = {1, 2, 3, 4}, y[] = {3, 5, 7, 9};
  struct stats_line l;
  CHECK_EQ_INT(stats_fit_line(x, y, 4, &l), 0);
  CHECK_EQ_INT(l.n, 4);
  CHECK_NEAR(l.a, 1, 1e-12);
  CHECK_NEAR(l.b, 2, 1e-12);
  CHECK_NEAR(l.r2, 1, 1e-12);
  CHECK_NEAR(l.se_a, 0, 1e-9);
  CHECK_NEAR(l.se_b, 0, 1e-9);
}

static void test_fit_noisy_with_nan(void) {
  /* x {0,1,2,3}, y {1,3,2,5}: xm 1.5, ym 2.75, Sxx 5, Sxy 5.5 -> b 1.1, a 1.1;
   * residuals -0.1 0.8 -1.3 0.6 -> SSE 2.7; Syy 8.75 -> r2 = 1 - 2.7/8.75;
   * s2 = 2.7/2 = 1.35; se_b = sqrt(1.35/5); se_a = sqrt(1.35 (1/4 + 2.25/5)). */
  const double x[] = {0, NAN, 1, 2, 5, 3}, y[] = {1, 100, 3, 2, NAN, 5};
  struct stats_line l;
  CHECK_EQ_INT(stats_fit_line(x, y, 6, &l), 0);
  CHECK_EQ_INT(l.n, 4);
  CHECK_NEAR(l.b, 1.1, 1e-12);
  CHECK_NEAR(l.a, 1.1, 1e-12);
  CHECK_NEAR(l.r2, 1 - 2.7 / 8.75, 1e-12);
  CHECK_NEAR(l.se_b, sqrt(0.27), 1e-12);
  CHECK_NEAR(l.se_a, sqrt(0.945), 1e-12);
}

static void test_fit_two_points_and_rejects(void) {
  const double x[] = {1, 3}, y[] = {1, 5};
  struct stats_line l;
  CHECK_EQ_INT(stats_fit_line(x, y, 2, &l), 0);
  CHECK_NEAR(l.b, 2, 1e-12);
  CHECK_NEAR(l.a, -1, 1e-12);
  CHECK(isnan(l.se_a) && isnan(l.se_b)); /* no residual degree of freedom */
  CHECK_NEAR(l.r2, 1, 0);

  const double vx[] = {2, 2, 2}, vy[] = {1, 2, 3};
  CHECK_EQ_INT(stats_fit_line(vx, vy, 3, &l), -1); /* vertical line */
  CHECK(isnan(l.b));
  /* Equal x whose mean is not exactly representable: still vertical. */
  const double tx[] = {0.1, 0.1, 0.1}, ty[] = {1, 2, 4};
  CHECK_EQ_INT(stats_fit_line(tx, ty, 3, &l), -1);
  const double ox[] = {1, NAN}, oy[] = {1, 2};
  CHECK_EQ_INT(stats_fit_line(ox, oy, 2, &l), -1); /* one usable pair */
  CHECK_EQ_INT(stats_fit_line(ox, oy, 0, &l), -1);
  /* Flat data: b 0, perfect fit. */
  const double fx[] = {1, 2, 3}, fy[] = {4, 4, 4};
  CHECK_EQ_INT(stats_fit_line(fx, fy, 3, &l), 0);
  CHECK_NEAR(l.b, 0, 1e-12);
  CHECK_NEAR(l.a, 4, 1e-12);
  CHECK_NEAR(l.r2, 1, 0);
  CHECK_NEAR(l.se_b, 0, 1e-12);
}

void tm_run_tests(void) {
  TM_RUN(test_describe_even_with_nan);
  TM_RUN(test_describe_odd);
  TM_RUN(test_describe_edges);
  TM_RUN(test_percentile);
  TM_RUN(test_fit_exact);
  TM_RUN(test_fit_noisy_with_nan);
  TM_RUN(test_fit_two_points_and_rejects);
}
