/* test_decide_edges: the parts of decide's arithmetic the worked example does
 * not reach: a fixed overhead per request, the reloaded device's capacity,
 * the 1% tie, an API cheaper per request than the device's energy, equal
 * per-request costs, and rates from records picked on a log scale.
 * Expected values by hand from docs/decide.md's formulas (in the comments). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/decide.h"
#include "decide_example.h"
#include "series_builder.h"
#include "tm_test.h"

/* A 0.5 s fixed cost per request on the device (FX): first token 0.5 + 2 =
 * 2.5 s, answer 2.5 + 200 / 20 = 12.5 s, reloaded 7.5 / 17.5 s. Busy 12.5 s:
 * 100 W x 12.5 s = 1250 J = 1250 / 3.6e6 kWh x 0.30 = 1.0416667e-4 a request;
 * capacity 86400 / 12.5 = 6912 a day. */
static void overhead_per_request(void) {
  struct decide_inputs in = example();
  in.dev_overhead_s = 0.5;
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.warm.first_s, 2.5, 1e-12);
  CHECK_NEAR(r.warm.complete_s, 12.5, 1e-12);
  CHECK_NEAR(r.reload.first_s, 7.5, 1e-12);
  CHECK_NEAR(r.reload.complete_s, 17.5, 1e-12);
  CHECK_NEAR(r.dev_energy_per_request, 1250 / 3.6e6 * 0.3, 1e-15);
  CHECK_NEAR(r.warm.capacity_per_day, 6912, 1e-9);
  /* the API side does not move */
  CHECK_NEAR(r.api.first_s, 0.5, 1e-12);
}

/* Reloaded for every request the device works 17 s a request (12 + 5 s
 * load): 86400 / 17 = 5082.35 requests a day at most, against 7200 warm. */
static void reloaded_capacity(void) {
  struct decide_inputs in = example();
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.reload.busy_s, 17, 1e-12);
  CHECK_NEAR(r.reload.capacity_per_day, 86400.0 / 17, 1e-9);
  CHECK_NEAR(r.warm.capacity_per_day, 7200, 1e-9);
}

/* "Two figures within 1% are called the same": within 1% of the larger. */
static void one_percent_tie(void) {
  CHECK(decide_compare(100, 100.9) == DECIDE_TIE);
  CHECK(decide_compare(100.9, 100) == DECIDE_TIE);
  CHECK(decide_compare(100, 101.005) == DECIDE_TIE); /* 1.005 <= 1% of 101.005 */
  CHECK(decide_compare(100, 101.5) == DECIDE_DEVICE); /* 1.5% apart: ranked */
  CHECK(decide_compare(101.5, 100) == DECIDE_API);
  CHECK(decide_compare(2.0, 2.05) == DECIDE_DEVICE);  /* 2.4% */
  /* the verdicts use it: device 12 s vs API 12.06 s to the answer is a tie */
  struct decide_inputs in = example();
  in.api_decode_tok_s = 200.0 / 11.56; /* API answer 0.5 + 11.56 = 12.06 s */
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.api.complete_s, 12.06, 1e-9);
  CHECK(r.complete_winner == DECIDE_TIE);
}

/* An API cheaper per request than the device's energy: 0 per input token,
 * 0.01 per million output tokens: 201 x 0.01e-6 = 2.01e-6 a request, against
 * 1e-4 of energy. No break-even: the API is cheaper at any volume. */
static void api_cheaper_than_energy(void) {
  struct decide_inputs in = example();
  in.price_in_per_m = 0;
  in.price_out_per_m = 0.01;
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.api.money_per_request, 2.01e-6, 1e-18);
  CHECK(isnan(r.breakeven_per_day));
  CHECK(r.breakeven_below == DECIDE_API);
  CHECK(r.breakeven_reload_below == DECIDE_API);
  CHECK(r.cost_winner == DECIDE_API);
}

/* Equal cost per request (a device on free power, 0 W, and a free API):
 * with a hardware price the API is cheaper at any volume (the device adds
 * 1500 / 1095 a day and never earns it back); without one, neither is. */
static void equal_per_request(void) {
  struct decide_inputs in = example();
  in.dev_watts = 0;
  in.price_in_per_m = 0;
  in.price_out_per_m = 0;
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.dev_energy_per_request, 0, 0);
  CHECK_NEAR(r.api.money_per_request, 0, 0);
  CHECK(isnan(r.breakeven_per_day));
  CHECK(r.breakeven_below == DECIDE_API);
  in.dev_hw_price = NAN;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK(r.breakeven_below == DECIDE_TIE);
  CHECK(r.cost_winner == DECIDE_TIE);
}

/* Rates from records: the series whose length is closest on a log scale
 * (docs/decide.md). Prompt 100 against pp16 and pp512: |ln(16/100)| = 1.83,
 * |ln(512/100)| = 1.63, so pp512 (on a linear scale pp16 would win: 84 vs
 * 412). Answer 100 against tg32 and tg256: |ln 0.32| = 1.14, |ln 2.56| =
 * 0.94: tg256 (linearly tg32: 68 vs 156). Each rate is its series' median. */
static double vals[4][3] = {{90, 100, 110}, {190, 200, 210}, {9, 10, 11}, {19, 20, 21}};
static struct series mk(int i, const char *test, const char *metric, int pp, int tg) {
  char key[128];
  snprintf(key, sizeof key, "engine | in-process | tiny | %s | t1 | d0", test);
  return series_make((struct series_spec){.key = key, .backend = "engine", .target = "in-process",
                                          .model = "tiny", .test = test, .metric = metric,
                                          .threads = 1, .prompt_tokens = pp, .gen_tokens = tg},
                     vals[i], 3);
}

static void closest_on_a_log_scale(void) {
  struct series arr[4] = {
      mk(0, "pp16", "prefill_tok_s", 16, -1), mk(1, "pp512", "prefill_tok_s", 512, -1),
      mk(2, "tg32", "decode_tok_s", -1, 32), mk(3, "tg256", "decode_tok_s", -1, 256)};
  struct series_set set = {arr, 4};
  double pf = 0, dc = 0;
  char wp[320], wd[320];
  struct tm_err err;
  CHECK(decide_rates_from_series(&set, NULL, 100, 100, true, true, &pf, &dc, wp, wd, sizeof wp,
                               &err) == 0);
  CHECK_NEAR(pf, 200, 0);
  CHECK_NEAR(dc, 20, 0);
  CHECK_CONTAINS(wp, "pp512");
  CHECK_CONTAINS(wd, "tg256");
}

void tm_run_tests(void) {
  TM_RUN(overhead_per_request);
  TM_RUN(reloaded_capacity);
  TM_RUN(one_percent_tie);
  TM_RUN(api_cheaper_than_energy);
  TM_RUN(equal_per_request);
  TM_RUN(closest_on_a_log_scale);
}
