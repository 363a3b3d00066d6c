/* test_ceiling: ceiling arithmetic and verdict thresholds. */
#include <string.h>

#include "model/ceiling.h"
#include "tm_test.h"

static void test_arithmetic(void) {
  CHECK_NEAR(ceiling_tok_s(273e9, 15e9), 18.2, 1e-9);
  CHECK_NEAR(ceiling_napkin_tok_s(273e9, 15e9, 1.0), 18.2, 1e-9);
  CHECK_NEAR(ceiling_napkin_tok_s(273e9, 15e9, 0.1), 182.0, 1e-9);
  CHECK_NEAR(ceiling_tok_s(32.9e9, 375614464), 87.59, 0.01);
  CHECK(ceiling_tok_s(0, 1e9) == 0);
  CHECK(ceiling_tok_s(1e9, 0) == 0);
  CHECK(ceiling_napkin_tok_s(1e9, 1e9, 0) == 0);
  CHECK(ceiling_use_int8(0.9, 1e12));
  CHECK(!ceiling_use_int8(0.9, 0));
  CHECK(!ceiling_use_int8(0.4, 1e12));
  CHECK(!ceiling_use_int8(0.5, 1e12));
}

static void test_verdicts(void) {
  struct ceiling_verdict v;
  CHECK(ceiling_verdict_make("decode", 101, 100, &v) == 0);
  CHECK_STR(v.code, "above-ceiling");
  CHECK_NEAR(v.percent, 101, 1e-9);
  CHECK_CONTAINS(v.message, "mixture-of-experts");
  CHECK_CONTAINS(v.message, "speculative");
  CHECK_CONTAINS(v.message, "buffered stream");
  CHECK(ceiling_verdict_make("decode", 100, 100, &v) == 0);
  CHECK_STR(v.code, "well-tuned");
  CHECK(ceiling_verdict_make("decode", 75, 100, &v) == 0);
  CHECK_STR(v.code, "well-tuned");
  CHECK(ceiling_verdict_make("decode", 74.9, 100, &v) == 0);
  CHECK_STR(v.code, "below-practical");
  CHECK(ceiling_verdict_make("decode", 40, 100, &v) == 0);
  CHECK_STR(v.code, "below-practical");
  CHECK(ceiling_verdict_make("decode", 39.9, 100, &v) == 0);
  CHECK_STR(v.code, "far-below");
  CHECK_CONTAINS(v.message, "SIMD");
  CHECK_CONTAINS(v.message, "threads");
  CHECK_CONTAINS(v.message, "cold");
  CHECK_CONTAINS(v.message, "throttled");
  CHECK(ceiling_verdict_make("prefill", 1200, 1000, &v) == 0);
  CHECK_STR(v.code, "above-ceiling");
  CHECK_STR(v.phase, "prefill");
  CHECK_CONTAINS(v.message, "cached prompt");
  CHECK(ceiling_verdict_make("decode", 10, 0, &v) == -1);
  CHECK(ceiling_verdict_make("decode", -1, 10, &v) == -1);
}

void tm_run_tests(void) {
  TM_RUN(test_arithmetic);
  TM_RUN(test_verdicts);
}
