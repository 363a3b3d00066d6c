/* Unit parsing and printing: the forms users type, and the ones that must fail. */
#include "tm_test.h"
#include "util/units.h"

static void parses_bytes(void) {
  struct tm_err err;
  double v = 0;
  CHECK(tm_parse_bytes("15GB", &v, &err) == 0);
  CHECK_NEAR(v, 15e9, 1);
  CHECK(tm_parse_bytes("15 GiB", &v, &err) == 0);
  CHECK_NEAR(v, 15.0 * 1073741824.0, 1);
  CHECK(tm_parse_bytes("358MiB", &v, &err) == 0);
  CHECK_NEAR(v, 358.0 * 1048576.0, 1);
  CHECK(tm_parse_bytes("1e9", &v, &err) == 0);
  CHECK_NEAR(v, 1e9, 1);
  CHECK(tm_parse_bytes("512kB", &v, &err) == 0);
  CHECK_NEAR(v, 512e3, 1e-6);
}

static void parses_rates(void) {
  struct tm_err err;
  double v = 0;
  /* A bare number is the base unit, for every parser alike. */
  CHECK(tm_parse_bandwidth("100", &v, &err) == 0);
  CHECK_NEAR(v, 100, 0);
  CHECK(tm_parse_ops_rate("1.4e13", &v, &err) == 0);
  CHECK_NEAR(v, 1.4e13, 1);
  CHECK(tm_parse_bandwidth("273GB/s", &v, &err) == 0);
  CHECK_NEAR(v, 273e9, 1);
  CHECK(tm_parse_bandwidth("68.2 GiB/s", &v, &err) == 0);
  CHECK_NEAR(v, 68.2 * 1073741824.0, 1);
  CHECK(tm_parse_ops_rate("14TFLOPS", &v, &err) == 0);
  CHECK_NEAR(v, 14e12, 1);
  CHECK(tm_parse_ops_rate("900 GOPS", &v, &err) == 0);
  CHECK_NEAR(v, 900e9, 1);
  CHECK(tm_parse_ops_rate("0.9 TOP/s", &v, &err) == 0);
  CHECK_NEAR(v, 0.9e12, 1);
  CHECK(tm_parse_tokens("1M tok/s", &v, &err) == 0);
  CHECK_NEAR(v, 1e6, 1e-6);
  CHECK(tm_parse_tokens("250k", &v, &err) == 0);
  CHECK_NEAR(v, 250e3, 1e-6);
  CHECK(tm_parse_tokens("75 tok/s", &v, &err) == 0);
  CHECK_NEAR(v, 75, 1e-9);
}

static void rejects_garbage(void) {
  struct tm_err err;
  double v = 42;
  CHECK(tm_parse_bytes("", &v, &err) == -1);
  CHECK(tm_parse_bytes("GB", &v, &err) == -1);
  CHECK_CONTAINS(err.msg, "not a number");
  CHECK(tm_parse_bytes("15 parsecs", &v, &err) == -1);
  CHECK_CONTAINS(err.msg, "unknown unit");
  CHECK(tm_parse_bandwidth("-3GB/s", &v, &err) == -1);
  CHECK_CONTAINS(err.msg, "negative");
  CHECK(tm_parse_ops_rate("14TB/s", &v, &err) == -1);
  CHECK(tm_parse_bandwidth("inf", &v, &err) == -1);
  CHECK(tm_parse_bandwidth("nan", &v, &err) == -1);
  CHECK(tm_parse_bytes("1e999", &v, &err) == -1);
  CHECK(tm_parse_bandwidth("1e308PB/s", &v, &err) == -1); /* the product is inf */
  CHECK_CONTAINS(err.msg, "too large");
  CHECK_NEAR(v, 42, 0); /* untouched on failure */
}

static void parses_integers(void) {
  struct tm_err err;
  uint32_t u = 0, list[4];
  size_t n = 0;
  CHECK(tm_parse_u32("512", "-p", &u, &err) == 0);
  CHECK_EQ_INT(u, 512);
  CHECK(tm_parse_u32("0", "-p", &u, &err) == -1);
  CHECK(tm_parse_u32("-1", "-p", &u, &err) == -1);
  CHECK_CONTAINS(err.msg, "-p");
  CHECK(tm_parse_u32("12x", "-p", &u, &err) == -1);
  CHECK(tm_parse_u32("4294967296", "-p", &u, &err) == -1);
  CHECK(tm_parse_u32_list("1,2,4", "-t", list, 4, &n, &err) == 0);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(list[2], 4);
  CHECK(tm_parse_u32_list("1,2,3,4,5", "-t", list, 4, &n, &err) == -1);
  CHECK(tm_parse_u32_list("1,,x", "-t", list, 4, &n, &err) == -1);
  /* an empty element is a typo, not a shorter list (strtok would skip it) */
  const char *bad[] = {"1,,2", ",1", "1,", "", ",", "1, ,2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_MSG(tm_list_check(bad[i], "-t", &err) == -1, "'%s' accepted", bad[i]);
    CHECK_CONTAINS(err.msg, "-t");
    CHECK_MSG(tm_parse_u32_list(bad[i], "-t", list, 4, &n, &err) == -1, "'%s' parsed", bad[i]);
  }
  CHECK(tm_list_check("1,100,10k", "-r", &err) == 0);
  CHECK(tm_list_check("7", "-r", &err) == 0);
}

static void prints_for_people(void) {
  char b[64];
  CHECK_STR(tm_fmt_bytes(358.0 * 1048576.0, b, sizeof b), "358 MiB");
  CHECK_STR(tm_fmt_bytes(512, b, sizeof b), "512 B");
  CHECK_STR(tm_fmt_bandwidth(28.6e9, b, sizeof b), "28.6 GB/s");
  CHECK_STR(tm_fmt_ops(1.23e12, "FLOPS", b, sizeof b), "1.23 TFLOPS");
  CHECK_STR(tm_fmt_count(596e6, b, sizeof b), "596M");
  CHECK_STR(tm_fmt_count(3.05e9, b, sizeof b), "3.05B");
  CHECK_STR(tm_fmt_rate(45.04, b, sizeof b), "45.0");
  CHECK_STR(tm_fmt_rate(241.4, b, sizeof b), "241");
  /* 100 B/s for a 4.6 MB model: was "0.00" */
  CHECK_STR(tm_fmt_rate(2.17e-05, b, sizeof b), "2.17e-05");
  CHECK_STR(tm_fmt_rate(0.005, b, sizeof b), "0.005");
  CHECK_STR(tm_fmt_rate(0, b, sizeof b), "0.00");
  /* a TTFT fit on a tiny model: 0.06 ms was "0.0", -0.003 "-0.0" */
  CHECK_STR(tm_fmt_ms_fit(0.0612, b, sizeof b), "0.0612");
  CHECK_STR(tm_fmt_ms_fit(-0.0034, b, sizeof b), "-0.00340");
  CHECK_STR(tm_fmt_ms_fit(0.5, b, sizeof b), "0.500");
  CHECK_STR(tm_fmt_ms_fit(0.09996, b, sizeof b), "0.100");
  CHECK_STR(tm_fmt_ms_fit(190.54, b, sizeof b), "190.5");
  CHECK_STR(tm_fmt_ms_fit(-3.24, b, sizeof b), "-3.2");
  CHECK_STR(tm_fmt_ms_fit(0, b, sizeof b), "0.0");
}

void tm_run_tests(void) {
  TM_RUN(parses_bytes);
  TM_RUN(parses_rates);
  TM_RUN(rejects_garbage);
  TM_RUN(parses_integers);
  TM_RUN(prints_for_people);
}
