/* test_compare_ceilings: the ratio compare predicts from the ceilings alone,
 * when two result sets hold different models whose records carry a ceiling
 * but not its parts (server runs record decode_ceiling_tok_s only). The
 * prediction for B against A is B's ceiling over A's for a rate, and its
 * reciprocal for a time (time = tokens / rate). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/compare.h"
#include "series_builder.h"
#include "tm_test.h"

static struct series mk(const char *model, const char *metric, const double *v, double ceiling) {
  char key[128];
  snprintf(key, sizeof key, "openai | http://127.0.0.1:8080 | %s | generate", model);
  struct series s = series_make(
      (struct series_spec){.key = key, .backend = "openai", .target = "http://127.0.0.1:8080",
                           .model = model, .test = "generate", .metric = metric, .threads = 0,
                           .prompt_tokens = 50, .gen_tokens = 128},
      v, 4);
  s.ceiling = ceiling;
  return s;
}

static const double slow[] = {40.1, 39.8, 40.3, 40.0}, fast[] = {55.2, 54.9, 55.6, 55.0};
static const double slow_ms[] = {3192, 3216, 3176, 3200}, fast_ms[] = {2319, 2331, 2302, 2327};

/* A's decode ceiling 50 tok/s, B's 80: B predicted 80 / 50 = 1.6x the rate,
 * and 50 / 80 = 0.625x the time. */
static void prediction_from_ceilings(void) {
  struct series a[2] = {mk("big-q8", "decode_tok_s", slow, 50), mk("big-q8", "decode_ms", slow_ms, 50)};
  struct series b[2] = {mk("big-q4", "decode_tok_s", fast, 80), mk("big-q4", "decode_ms", fast_ms, 80)};
  struct series_set sa = {a, 2}, sb = {b, 2};
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result r;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(compare_series(&sa, &sb, &o, &r, &err), 0);
  CHECK_EQ_INT(r.n, 2);
  if (r.n == 2) {
    CHECK_NEAR(r.rows[0].predicted_ratio, 1.6, 1e-12);
    CHECK_STR(r.rows[0].predicted_from, "ceilings");
    CHECK_NEAR(r.rows[1].predicted_ratio, 0.625, 1e-12);
    CHECK_STR(r.rows[1].predicted_from, "ceilings");
  }
  compare_result_free(&r);
  /* the same model on both sides: nothing modelled differs, no prediction */
  struct series b_same[2] = {mk("big-q8", "decode_tok_s", fast, 80),
                             mk("big-q8", "decode_ms", fast_ms, 80)};
  struct series_set sbs = {b_same, 2};
  CHECK_EQ_INT(compare_series(&sa, &sbs, &o, &r, &err), 0);
  CHECK(r.n == 2 && isnan(r.rows[0].predicted_ratio));
  compare_result_free(&r);
}

void tm_run_tests(void) { TM_RUN(prediction_from_ceilings); }
