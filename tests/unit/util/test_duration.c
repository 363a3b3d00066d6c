/* tm_fmt_duration: durations printed the way people read them, each expected
 * string written by hand from the rules in units.h. */
#include <math.h>

#include "tm_test.h"
#include "util/units.h"

static void prints_short_durations(void) {
  char b[64];
  CHECK_STR(tm_fmt_duration(0, b, sizeof b), "0 s");
  CHECK_STR(tm_fmt_duration(250e-9, b, sizeof b), "250 ns");
  CHECK_STR(tm_fmt_duration(1e-6, b, sizeof b), "1.00 \xc2\xb5s");
  CHECK_STR(tm_fmt_duration(0.35, b, sizeof b), "350 ms");
  CHECK_STR(tm_fmt_duration(0.0608, b, sizeof b), "60.8 ms");
  CHECK_STR(tm_fmt_duration(0.001, b, sizeof b), "1.00 ms");
  CHECK_STR(tm_fmt_duration(0.9996, b, sizeof b), "1.00 s"); /* not "1000 ms" */
  CHECK_STR(tm_fmt_duration(60.8, b, sizeof b), "60.8 s");
  CHECK_STR(tm_fmt_duration(9.5, b, sizeof b), "9.50 s");
  CHECK_STR(tm_fmt_duration(99.9, b, sizeof b), "99.9 s");
}

static void prints_long_durations(void) {
  char b[64];
  CHECK_STR(tm_fmt_duration(100, b, sizeof b), "1m 40s");
  CHECK_STR(tm_fmt_duration(125.4, b, sizeof b), "2m 5s");
  CHECK_STR(tm_fmt_duration(2 * 3600 + 14 * 60 + 10, b, sizeof b), "2h 14m");
  CHECK_STR(tm_fmt_duration(3599.6, b, sizeof b), "1h 0m"); /* rounded, never 59m 60s */
  CHECK_STR(tm_fmt_duration(86400 * 3 + 4 * 3600, b, sizeof b), "3d 4h");
  CHECK_STR(tm_fmt_duration(86400 - 10, b, sizeof b), "1d 0h");
  CHECK_STR(tm_fmt_duration(1e6 * 86400 / 1000 * 365.25 * 12.3 / 1e3, b, sizeof b),
            "12.3 years");
}

static void unknown_is_blank(void) {
  char b[64] = "x";
  CHECK_STR(tm_fmt_duration(NAN, b, sizeof b), "");
  CHECK_STR(tm_fmt_duration(INFINITY, b, sizeof b), "");
  CHECK_STR(tm_fmt_duration(-1, b, sizeof b), "");
  char small[4];
  tm_fmt_duration(2 * 3600 + 14 * 60, small, sizeof small); /* truncated, terminated */
  CHECK_EQ_INT(strlen(small), 3);
}

void tm_run_tests(void) {
  TM_RUN(prints_short_durations);
  TM_RUN(prints_long_durations);
  TM_RUN(unknown_is_blank);
}
