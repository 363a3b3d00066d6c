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

static void test_slo_parse(void) {
  struct load_slo slo;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(load_slo_parse("ttft=500ms,p95:tpot=50,e2e=10s", &slo, &err), 0);
  CHECK(slo.set[LOAD_SLO_TTFT] && slo.set[LOAD_SLO_TPOT] && slo.set[LOAD_SLO_E2E]);
  CHECK_NEAR(slo.limit_ms[LOAD_SLO_TTFT], 500, 1e-9);
  CHECK_NEAR(slo.percentile[LOAD_SLO_TTFT], 99, 1e-9);
  CHECK_NEAR(slo.limit_ms[LOAD_SLO_TPOT], 50, 1e-9);
  CHECK_NEAR(slo.percentile[LOAD_SLO_TPOT], 95, 1e-9);
  CHECK_NEAR(slo.limit_ms[LOAD_SLO_E2E], 10000, 1e-9);
  CHECK_EQ_INT(load_slo_parse("e2e=0.5s", &slo, &err), 0);
  CHECK(!slo.set[LOAD_SLO_TTFT] && slo.set[LOAD_SLO_E2E]);
  const char *bad[] = {"", "ttft", "ttft=", "ttft=-1ms", "ttft=5min", "speed=5ms",
                       "p0:ttft=5ms", "p101:ttft=5ms", "ttft=5ms,ttft=6ms", "ttft=nan"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err.msg[0] = 0;
    CHECK_MSG(load_slo_parse(bad[i], &slo, &err) == -1 && err.msg[0], "accepted '%s'", bad[i]);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_order_statistics);
  TM_RUN(test_slo_parse);
}
