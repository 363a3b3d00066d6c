/* test_load_dist: load_dist_of, the order statistics every load figure is
 * given as: linear between neighbours, NAN entries skipped, an empty sample
 * all NAN with n 0. */
#include <math.h>

#include "bench/load.h"
#include "tm_test.h"

static void test_order_statistics(void) {
  struct load_dist d;
  const double x[] = {5, 1, NAN, 3, 2, 4};
  load_dist_of(x, 6, &d);
  CHECK_EQ_U64(d.n, 5);
  CHECK_NEAR(d.min, 1, 1e-12);
  CHECK_NEAR(d.max, 5, 1e-12);
  CHECK_NEAR(d.p50, 3, 1e-12);
  CHECK_NEAR(d.p90, 4.6, 1e-12); /* 0.9 x 4 = 3.6: between 4 and 5 */
  CHECK_NEAR(d.p99, 4.96, 1e-12);
  CHECK_NEAR(d.mean, 3, 1e-12);
  double one = 7;
  load_dist_of(&one, 1, &d);
  CHECK(d.n == 1 && d.p50 == 7 && d.p99 == 7 && d.min == 7);
  load_dist_of(x, 0, &d);
  CHECK(d.n == 0 && isnan(d.p50) && isnan(d.mean));
  const double blank[] = {NAN, NAN};
  load_dist_of(blank, 2, &d);
  CHECK(d.n == 0 && isnan(d.max));
}

void tm_run_tests(void) { TM_RUN(test_order_statistics); }
