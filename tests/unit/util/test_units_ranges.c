/* Flag values in a range (units.h): tm_parse_count, tm_parse_number,
 * tm_parse_above_zero and tm_parse_positive_in, each refusal's exact text
 * (commands print it as their usage error), and *out untouched on failure. */
#include "tm_test.h"
#include "util/units.h"

static void parses_counts(void) {
  struct tm_err err;
  double v = 0;
  CHECK(tm_parse_count("250k", "-g", true, 1e12, &v, &err) == 0);
  CHECK_NEAR(v, 250e3, 0);
  CHECK(tm_parse_count("0", "-g", true, 1e12, &v, &err) == 0);
  CHECK_NEAR(v, 0, 0);
  CHECK(tm_parse_count("1T", "--items", false, 1e12, &v, &err) == 0); /* max included */
  CHECK_NEAR(v, 1e12, 0);
  v = 42;
  CHECK(tm_parse_count("0", "--items", false, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "--items: '0' is not a positive whole number");
  CHECK(tm_parse_count("1.5", "-g", true, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-g: '1.5' is not a non-negative whole number");
  CHECK(tm_parse_count("lots", "-g", true, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-g: 'lots' is not a non-negative whole number");
  CHECK(tm_parse_count("2T", "-g", true, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-g: '2T' is above the limit of 1T");
  CHECK(tm_parse_count("2M", "-c", false, 1e6, &v, &err) == -1);
  CHECK_STR(err.msg, "-c: '2M' is above the limit of 1M");
  CHECK_NEAR(v, 42, 0);
}

static void parses_numbers(void) {
  struct tm_err err;
  double v = 0;
  CHECK(tm_parse_number("512", "-p", true, 0, 1e12, &v, &err) == 0);
  CHECK_NEAR(v, 512, 0);
  CHECK(tm_parse_number("0.25", "--kwh-price", false, 0, 1e12, &v, &err) == 0);
  CHECK_NEAR(v, 0.25, 0);
  v = 42;
  CHECK(tm_parse_number("1.5", "-p", true, 0, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-p: '1.5' is not a whole number >= 0");
  CHECK(tm_parse_number("0", "-n", true, 1, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-n: '0' is not a whole number >= 1");
  CHECK(tm_parse_number("-1", "--price-in", false, 0, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "--price-in: '-1' is not a number >= 0");
  CHECK(tm_parse_number("1M", "-p", true, 0, 1e12, &v, &err) == -1); /* no units */
  CHECK(tm_parse_number("inf", "-p", false, 0, 1e12, &v, &err) == -1);
  CHECK(tm_parse_number("", "-p", false, 0, 1e12, &v, &err) == -1);
  CHECK(tm_parse_number("2e12", "-p", true, 0, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-p: '2e12' is above the limit of 1e12");
  CHECK(tm_parse_number("2e6", "--device-watts", false, 0, 1e6, &v, &err) == -1);
  CHECK_STR(err.msg, "--device-watts: '2e6' is above the limit of 1e6");
  CHECK_NEAR(v, 42, 0);
}

static void parses_numbers_above_zero(void) {
  struct tm_err err;
  double v = 0;
  CHECK(tm_parse_above_zero("0.5", "-q", 1e-9, 1e12, &v, &err) == 0);
  CHECK_NEAR(v, 0.5, 0);
  v = 42;
  CHECK(tm_parse_above_zero("0", "-q", 1e-9, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-q: '0' is not a number above 0");
  CHECK(tm_parse_above_zero("x", "-q", 1e-9, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-q: 'x' is not a number above 0");
  CHECK(tm_parse_above_zero("1e-12", "-q", 1e-9, 1e12, &v, &err) == -1);
  CHECK_STR(err.msg, "-q: '1e-12' is below the limit of 1e-9");
  CHECK(tm_parse_above_zero("40000", "--days", 1e-9, 36525, &v, &err) == -1);
  CHECK_STR(err.msg, "--days: '40000' is above the limit of 36525");
  CHECK_NEAR(v, 42, 0);
}

static void parses_positive_numbers_in_a_range(void) {
  struct tm_err err;
  double v = 0;
  CHECK(tm_parse_positive_in("1e6", "--rope-base", 1, 1e12, "1 to 1e12", &v, &err) == 0);
  CHECK_NEAR(v, 1e6, 0);
  v = 42;
  CHECK(tm_parse_positive_in("0", "--rope-base", 1, 1e12, "1 to 1e12", &v, &err) == -1);
  CHECK_STR(err.msg, "--rope-base: '0' is not a positive number");
  CHECK(tm_parse_positive_in("inf", "--rope-base", 1, 1e12, "1 to 1e12", &v, &err) == -1);
  CHECK_STR(err.msg, "--rope-base: 'inf' is not a positive number");
  /* an underflow is no positive number, even where strtod returns one */
  CHECK(tm_parse_positive_in("1e-310", "--rms-eps", 1e-12, 1, "1e-12 to 1", &v, &err) == -1);
  CHECK_STR(err.msg, "--rms-eps: '1e-310' is not a positive number");
  CHECK(tm_parse_positive_in("2", "--rms-eps", 1e-12, 1, "1e-12 to 1", &v, &err) == -1);
  CHECK_STR(err.msg, "--rms-eps: '2' is outside 1e-12 to 1");
  CHECK_NEAR(v, 42, 0);
}

void tm_run_tests(void) {
  TM_RUN(parses_counts);
  TM_RUN(parses_numbers);
  TM_RUN(parses_numbers_above_zero);
  TM_RUN(parses_positive_numbers_in_a_range);
}
