/* Tests for src/bench/drift.c: rule 11 inside one configuration. */
#include <math.h>
#include <string.h>

#include "bench/drift.h"
#include "tm_test.h"

static void test_drift_falling_series(void) {
  /* 100, 97, 94, 91, 88: a steady fall of 3 per run, fitted exactly:
   * change = 88 / 100 - 1 = -12%, and the points lie on the line (t = -inf). */
  const double x[] = {100, 97, 94, 91, 88};
  struct stats_drift d;
  CHECK(bench_drift_test(x, 5, &d));
  CHECK(d.slower);
  CHECK_EQ_INT(d.n, 5);
  CHECK_NEAR(d.change, -0.12, 1e-12);
  char note[256];
  bench_drift_note(&d, "repetition", note, sizeof note);
  CHECK_STR(note, "slower from its first repetition to its last: -12.0% fitted over 5 "
                  "repetitions, beyond the noise (rule 11)");
}

static void test_drift_steady_or_rising(void) {
  struct stats_drift d;
  char note[256] = "x";
  /* noise around 100 with no trend: the slope is within its interval */
  const double flat[] = {100, 102, 99, 101, 100, 98, 101};
  CHECK(bench_drift_test(flat, 7, &d));
  CHECK(!d.slower);
  CHECK_STR(bench_drift_note(&d, "run", note, sizeof note), "");
  /* faster over time is not drift that slows (rates: higher is better) */
  const double up[] = {90, 93, 96, 99};
  CHECK(bench_drift_test(up, 4, &d));
  CHECK(!d.slower);
  CHECK(d.change > 0);
  /* a clear but small fall (-2%, on a line): below BENCH_DRIFT_MIN_CHANGE
   * (3%), not called out; noise, not a machine throttling */
  const double small[] = {100, 99.5, 99, 98.5, 98};
  CHECK(bench_drift_test(small, 5, &d));
  CHECK(!d.slower);
  CHECK(d.change < -0.019 && d.change > -BENCH_DRIFT_MIN_CHANGE);
  /* three noisy rates near a line, -2.9% (the first fresh clone of
   * 2026-12-01, Q8_0 tg128): not called out at 99% and 3% */
  const double clone[] = {85.608, 84.142, 83.156};
  CHECK(bench_drift_test(clone, 3, &d));
  CHECK(!d.slower);
}

static void test_drift_needs_three_rates(void) {
  struct stats_drift d;
  const double two[] = {100, 50};
  CHECK(!bench_drift_test(two, 2, &d));
  /* blank rates (rule 5: NAN) are left out: three values but two finite */
  const double blank[] = {100, NAN, 50};
  CHECK(!bench_drift_test(blank, 3, &d));
  const double with_blank[] = {100, NAN, 90, 80, 70};
  CHECK(bench_drift_test(with_blank, 5, &d));
  CHECK_EQ_INT(d.n, 4);
  CHECK(d.slower);
}

void tm_run_tests(void) {
  TM_RUN(test_drift_falling_series);
  TM_RUN(test_drift_steady_or_rising);
  TM_RUN(test_drift_needs_three_rates);
}
