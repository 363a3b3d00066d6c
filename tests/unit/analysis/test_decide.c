/* decide: device or API. Expected values are worked out by hand from the
 * formulas in decide.h; the arithmetic is in the comments. */
#include <math.h>
#include <stdlib.h>

#include "analysis/decide.h"
#include "decide_example.h"
#include "series_builder.h"
#include "tm_test.h"

static void latency_each_side(void) {
  struct decide_inputs in = example();
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.warm.first_s, 2, 1e-12);       /* 1000 / 500 */
  CHECK_NEAR(r.warm.complete_s, 12, 1e-12);   /* 2 + 200 / 20 */
  CHECK_NEAR(r.reload.first_s, 7, 1e-12);     /* + 5 s load */
  CHECK_NEAR(r.reload.complete_s, 17, 1e-12);
  CHECK_NEAR(r.api.first_s, 0.5, 1e-12);      /* 0.1 + 0.4 */
  CHECK_NEAR(r.api.complete_s, 4.5, 1e-12);   /* 0.5 + 200 / 50 */
  CHECK_NEAR(r.warm.capacity_per_day, 7200, 1e-9); /* 86400 / 12 */
  CHECK(r.first_winner == DECIDE_API);
  CHECK(r.complete_winner == DECIDE_API);
  /* API prefill given: TTFT = fixed 0.2 + 1000 / 5000 */
  in.api_ttft_s = 0.2;
  in.api_prefill_tok_s = 5000;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.api.first_s, 0.5, 1e-12);
}

static void money_and_breakeven(void) {
  struct decide_inputs in = example();
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  /* API: 1000 x 1e-6 + 201 x 4e-6 = 0.001804 per request */
  CHECK_NEAR(r.api.money_per_request, 0.001804, 1e-12);
  CHECK_NEAR(r.api.money_per_day, 1.804, 1e-9);
  CHECK_NEAR(r.api.money_per_month, 54.12, 1e-9);
  /* device energy: 100 W x 12 s = 1200 J = 1/3000 kWh x 0.30 = 0.0001 */
  CHECK_NEAR(r.dev_energy_per_request, 0.0001, 1e-12);
  CHECK_NEAR(r.dev_hw_per_day, 1500.0 / 1095, 1e-12);
  CHECK_NEAR(r.warm.money_per_day, 0.1 + 1500.0 / 1095, 1e-9);
  CHECK_NEAR(r.warm.money_per_request, (0.1 + 1500.0 / 1095) / 1000, 1e-12);
  /* break-even: 1.369863 / (0.001804 - 0.0001) = 803.91 requests per day */
  CHECK_NEAR(r.breakeven_per_day, (1500.0 / 1095) / 0.001704, 1e-6);
  CHECK_NEAR(r.breakeven_per_day, 803.91, 0.01);
  CHECK(r.breakeven_below == DECIDE_API);
  CHECK(r.cost_winner == DECIDE_DEVICE); /* 1000 a day is above the break-even */
  /* reload: 17 s busy -> 1700 J -> 0.000141667 per request */
  CHECK_NEAR(r.reload.money_per_day, 1700.0 / 3.6e6 * 0.3 * 1000 + 1500.0 / 1095, 1e-9);
  in.requests_per_day = 500; /* below the break-even: the API is cheaper */
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK(r.cost_winner == DECIDE_API);
  /* both break-evens, whichever scenario the verdicts speak for */
  double warm_be = (1500.0 / 1095) / 0.001704;
  double reload_be = (1500.0 / 1095) / (0.001804 - 1700.0 / 3.6e6 * 0.3);
  CHECK_NEAR(r.breakeven_reload_per_day, reload_be, 1e-6);
  CHECK_NEAR(r.breakeven_device_per_day, warm_be, 1e-6);
  CHECK(r.breakeven_reload_below == DECIDE_API);
  /* reloaded for every request: the break-even moves up (more energy each),
   * and the warm figure stays the warm one (it was overwritten: "moves from
   * 266 to 266") */
  in.dev_stays_warm = false;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK_NEAR(r.breakeven_per_day, warm_be, 1e-6);
  CHECK_NEAR(r.breakeven_reload_per_day, reload_be, 1e-6);
  CHECK_NEAR(r.breakeven_device_per_day, reload_be, 1e-6);
  CHECK(r.breakeven_device_below == DECIDE_API);
  CHECK(r.device == &r.reload);
  /* reloaded for every request with no load time: refused, not "unknown" */
  in.dev_load_s = NAN;
  CHECK(decide_eval(&in, &r, &err) == -1);
  CHECK_CONTAINS(err.msg, "--device-warm no needs --device-load");
}

static void unknown_stays_blank(void) {
  struct decide_inputs in = example();
  in.dev_watts = NAN;
  in.dev_hw_price = NAN;
  in.dev_load_s = NAN;
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK(isnan(r.warm.money_per_request));
  CHECK(isnan(r.reload.first_s)); /* no load time given: the reload case is unknown */
  CHECK(isnan(r.breakeven_per_day));
  CHECK(r.cost_winner == DECIDE_UNKNOWN);
  CHECK(r.reload_first_winner == DECIDE_UNKNOWN);
  /* energy known, no hardware price: cheaper at any volume, no break-even */
  in = example();
  in.dev_hw_price = NAN;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK(isnan(r.breakeven_per_day));
  CHECK(r.breakeven_below == DECIDE_DEVICE);
  in.price_in_per_m = NAN;
  CHECK(decide_eval(&in, &r, &err) == 0);
  CHECK(isnan(r.api.money_per_day));
}

static void ties_and_refusals(void) {
  CHECK(decide_compare(1.0, 1.005) == DECIDE_TIE);
  CHECK(decide_compare(1.0, 1.5) == DECIDE_DEVICE);
  CHECK(decide_compare(2.0, 1.5) == DECIDE_API);
  CHECK(decide_compare(NAN, 1.5) == DECIDE_UNKNOWN);
  struct decide_inputs in = example();
  struct decide_result r;
  struct tm_err err;
  in.output_tokens = 0;
  CHECK(decide_eval(&in, &r, &err) == -1);
  CHECK_CONTAINS(err.msg, "output tokens");
  in = example();
  in.dev_decode_tok_s = NAN;
  CHECK(decide_eval(&in, &r, &err) == -1);
  CHECK_CONTAINS(err.msg, "--device-decode");
  in = example();
  in.api_decode_tok_s = 0;
  CHECK(decide_eval(&in, &r, &err) == -1);
  in = example();
  in.requests_per_day = -1;
  CHECK(decide_eval(&in, &r, &err) == -1);
}

/* A series by hand (only the fields decide reads). */
static double vals[8][3] = {{90, 100, 110}, {190, 200, 210}, {9, 10, 11}, {19, 20, 21},
                            {1, 2, 3},      {50, 60, 70}};
static struct series mk(int i, const char *model, const char *test, const char *metric,
                        int pp, int tg) {
  char key[128];
  snprintf(key, sizeof key, "engine | %s | %s | t1 | d0", model, test);
  return series_make((struct series_spec){.key = key, .backend = "engine", .target = "in-process",
                                          .model = model, .test = test, .metric = metric,
                                          .threads = 1, .prompt_tokens = pp, .gen_tokens = tg},
                     vals[i], 3);
}

static void rates_from_series(void) {
  struct series arr[6] = {
      mk(0, "tiny", "pp16", "prefill_tok_s", 16, -1),
      mk(1, "tiny", "pp512", "prefill_tok_s", 512, -1),
      mk(2, "tiny", "tg32", "decode_tok_s", -1, 32),
      mk(3, "tiny", "tg256", "decode_tok_s", -1, 256),
      mk(4, "big", "tg32", "decode_tok_s", -1, 32),
      mk(5, "big", "pp512", "prefill_tok_s", 512, -1),
  };
  struct series_set set = {arr, 6};
  double pf = 0, dc = 0;
  char wp[320], wd[320];
  struct tm_err err;
  /* two models: refused, both named */
  CHECK(decide_rates_from_series(&set, NULL, 400, 200, true, true, &pf, &dc, wp, wd, 320, &err) == -1);
  CHECK_CONTAINS(err.msg, "--match");
  CHECK_CONTAINS(err.msg, "tiny");
  CHECK_CONTAINS(err.msg, "big");
  /* prompt 400 is closest to 512 (log distance), answer 200 closest to 256 */
  CHECK(decide_rates_from_series(&set, "tiny", 400, 200, true, true, &pf, &dc, wp, wd, 320, &err) == 0);
  CHECK_NEAR(pf, 200, 1e-12);
  CHECK_NEAR(dc, 20, 1e-12);
  CHECK_CONTAINS(wp, "pp512");
  CHECK_CONTAINS(wd, "tg256");
  CHECK(decide_rates_from_series(&set, "tiny", 20, 40, true, true, &pf, &dc, wp, wd, 320, &err) == 0);
  CHECK_NEAR(pf, 100, 1e-12);
  CHECK_NEAR(dc, 10, 1e-12);
  CHECK(decide_rates_from_series(&set, "nothing", 20, 40, true, true, &pf, &dc, wp, wd, 320, &err) == -1);
  CHECK_CONTAINS(err.msg, "no decode runs");
}

/* A given rate wins over the file's: the file supplies only the rates not
 * given, and a file without the kind of runs given is no error (it once
 * chose configurations from decode series only: "no decode runs" for a
 * prefill-only file, e.g. a --ttft-sweep's, with --device-decode given). */
static void rates_only_those_wanted(void) {
  struct series arr[4] = {
      mk(0, "sweep", "pp16", "prefill_tok_s", 16, -1),
      mk(1, "sweep", "pp512", "prefill_tok_s", 512, -1),
      mk(4, "gen", "tg32", "decode_tok_s", -1, 32),
      mk(2, "chat", "tg32", "decode_tok_s", -1, 32),
  };
  struct series_set set = {arr, 4};
  double pf = 0, dc = 0;
  char wp[320], wd[320];
  struct tm_err err;
  /* prefill only: "sweep" is the one configuration with prefill runs */
  CHECK(decide_rates_from_series(&set, NULL, 400, 200, true, false, &pf, &dc, wp, wd, 320,
                                 &err) == 0);
  CHECK_NEAR(pf, 200, 1e-12);
  CHECK(isnan(dc));
  CHECK_CONTAINS(wp, "pp512");
  CHECK(wd[0] == 0);
  /* decode only from the prefill-only configuration: refused, naming the flag */
  CHECK(decide_rates_from_series(&set, "sweep", 400, 200, false, true, &pf, &dc, wp, wd, 320,
                                 &err) == -1);
  CHECK_CONTAINS(err.msg, "no decode runs matching 'sweep'");
  CHECK_CONTAINS(err.msg, "--device-decode");
  /* decode only: "gen" and "chat" hold decode runs: ambiguous */
  CHECK(decide_rates_from_series(&set, NULL, 400, 200, false, true, &pf, &dc, wp, wd, 320,
                                 &err) == -1);
  CHECK_CONTAINS(err.msg, "2 configurations");
  CHECK(decide_rates_from_series(&set, "chat", 400, 200, false, true, &pf, &dc, wp, wd, 320,
                                 &err) == 0);
  CHECK_NEAR(dc, 10, 1e-12);
  CHECK(isnan(pf));
  CHECK(wp[0] == 0);
  /* both wanted: no configuration holds both kinds */
  CHECK(decide_rates_from_series(&set, NULL, 400, 200, true, true, &pf, &dc, wp, wd, 320,
                                 &err) == -1);
  CHECK_CONTAINS(err.msg, "holds both prefill and decode");
  /* both wanted, a configuration with decode only: the missing kind is named */
  CHECK(decide_rates_from_series(&set, "gen", 400, 200, true, true, &pf, &dc, wp, wd, 320,
                                 &err) == -1);
  CHECK_CONTAINS(err.msg, "no prefill runs matching 'gen'");
  /* nothing wanted: nothing read, no error */
  CHECK(decide_rates_from_series(&set, "nothing", 400, 200, false, false, &pf, &dc, wp, wd, 320,
                                 &err) == 0);
  CHECK(isnan(pf) && isnan(dc));
}

/* The type is part of every listed configuration, even when the model label
 * holds it (a synthesized file's name does), so "Q4_0 | t2 |" selects one
 * model at 2 threads (README's example; it once matched nothing on such
 * labels, and "| t2 |" matched both models of the main job). */
static void match_type_and_threads(void) {
  struct series arr[4] = {
      mk(2, "m-Q4_0-s1.gguf", "tg32", "decode_tok_s", -1, 32),
      mk(3, "m-Q8_0-s1.gguf", "tg32", "decode_tok_s", -1, 32),
      mk(0, "m-Q4_0-s1.gguf", "pp32", "prefill_tok_s", 32, -1),
      mk(1, "m-Q8_0-s1.gguf", "pp32", "prefill_tok_s", 32, -1),
  };
  snprintf(arr[0].type, sizeof arr[0].type, "Q4_0");
  snprintf(arr[2].type, sizeof arr[2].type, "Q4_0");
  snprintf(arr[1].type, sizeof arr[1].type, "Q8_0");
  snprintf(arr[3].type, sizeof arr[3].type, "Q8_0");
  arr[1].threads = arr[3].threads = 2;
  arr[0].threads = arr[2].threads = 2;
  struct series_set set = {arr, 4};
  double pf = 0, dc = 0;
  char wp[320], wd[320];
  struct tm_err err;
  CHECK(decide_rates_from_series(&set, "| t2 |", 32, 32, true, true, &pf, &dc, wp, wd, 320,
                                 &err) == -1);
  CHECK_CONTAINS(err.msg, "m-Q4_0-s1.gguf | Q4_0 | t2 | d0");
  CHECK(decide_rates_from_series(&set, "Q4_0 | t2 |", 32, 32, true, true, &pf, &dc, wp, wd, 320,
                                 &err) == 0);
  CHECK_NEAR(dc, 10, 1e-12);
  CHECK_NEAR(pf, 100, 1e-12);
}

void tm_run_tests(void) {
  TM_RUN(latency_each_side);
  TM_RUN(money_and_breakeven);
  TM_RUN(unknown_stays_blank);
  TM_RUN(ties_and_refusals);
  TM_RUN(rates_from_series);
  TM_RUN(rates_only_those_wanted);
  TM_RUN(match_type_and_threads);
}
