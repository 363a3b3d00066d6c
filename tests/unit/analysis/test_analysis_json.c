/* test_analysis_json: the --json documents of whatif, decide and compare
 * (whatif_json.c, decide_json.c, compare_json.c): the keys the docs pages name,
 * figures carried as computed, unknown figures null (never 0), and the order
 * of the top-level keys (the documents are printed in insertion order). */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "analysis/compare.h"
#include "analysis/decide.h"
#include "analysis/whatif.h"
#include "decide_example.h"
#include "series_builder.h"
#include "tm_test.h"

/* The keys of obj, in order, joined by ","; buf of n bytes. */
static const char *keys_of(json_t *obj, char *buf, size_t n) {
  const char *k;
  json_t *v;
  size_t len = 0;
  buf[0] = 0;
  json_object_foreach(obj, k, v) {
    len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? "," : "", k);
  }
  return buf;
}

static double num(json_t *obj, const char *key) { return json_number_value(json_object_get(obj, key)); }
static bool is_null(json_t *obj, const char *key) { return json_is_null(json_object_get(obj, key)); }

/* docs/whatif.md's worked example: 10 items over 4 streams (3 waves), 2000
 * tokens read at 4000 tok/s and 1000 written per item, a 30 s test per item,
 * a 10 min review per job; baseline 100 tok/s. */
static void whatif_sweep_document(void) {
  struct whatif_step steps[2];
  struct tm_err err;
  CHECK(whatif_parse_step("test=30/item", &steps[0], &err) == 0);
  CHECK(whatif_parse_step("review=10m", &steps[1], &err) == 0);
  struct whatif_job job = {.gen_tokens = 1000, .read_tokens = 2000, .items = 10,
                           .concurrency = 4, .prefill_tok_s = 4000, .steps = steps,
                           .n_steps = 2};
  struct whatif_row base, rows[2];
  CHECK(whatif_eval(&job, 100, NAN, &base, &err) == 0);
  CHECK(whatif_eval(&job, 100, base.total_s, &rows[0], &err) == 0);
  CHECK(whatif_eval(&job, 1e6, base.total_s, &rows[1], &err) == 0);
  json_t *doc = whatif_sweep_json(&job, &base, rows, 2);
  CHECK(doc != NULL);
  if (!doc) return;
  char k[512];
  CHECK_STR(keys_of(doc, k, sizeof k), "inputs,rows,limit_s,max_speedup");
  json_t *in = json_object_get(doc, "inputs");
  CHECK_STR(keys_of(in, k, sizeof k), "gen_tokens,read_tokens,items,concurrency,prefill_tok_s,"
                                      "prefill_ratio,baseline_tok_s,steps");
  CHECK_NEAR(num(in, "baseline_tok_s"), 100, 0);
  CHECK(is_null(in, "prefill_ratio")); /* not given: null, not 0 */
  json_t *st = json_object_get(in, "steps");
  CHECK_EQ_INT(json_array_size(st), 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(st, 0), "per")), "item");
  CHECK_STR(json_string_value(json_object_get(json_array_get(st, 1), "per")), "job");
  CHECK_NEAR(num(json_array_get(st, 1), "seconds"), 600, 0);
  json_t *r = json_object_get(doc, "rows");
  CHECK_EQ_INT(json_array_size(r), 2);
  CHECK_NEAR(num(json_array_get(r, 0), "total_s"), 721.5, 1e-9); /* 1.5 + 30 + 90 + 600 */
  CHECK_NEAR(num(json_array_get(r, 0), "speedup"), 1, 1e-12);
  CHECK_NEAR(num(json_array_get(r, 1), "total_s"), 691.503, 1e-9);
  CHECK_NEAR(num(doc, "limit_s"), 691.5, 1e-9);
  CHECK_NEAR(num(doc, "max_speedup"), 721.5 / 691.5, 1e-12);
  json_decref(doc);

  /* nothing but generation: the floor is 0 and no speedup bound exists (null);
   * a baseline row has no speedup (null); nothing read: prefill_tok_s null */
  struct whatif_job gen = {.gen_tokens = 100, .items = 1, .concurrency = 1,
                           .prefill_tok_s = NAN};
  CHECK(whatif_eval(&gen, 50, NAN, &base, &err) == 0);
  doc = whatif_sweep_json(&gen, &base, &base, 1);
  CHECK(doc != NULL);
  if (!doc) return;
  CHECK_NEAR(num(doc, "limit_s"), 0, 0);
  CHECK(is_null(doc, "max_speedup"));
  CHECK(isinf(whatif_max_speedup(&gen, base.total_s)));
  json_t *row = json_array_get(json_object_get(doc, "rows"), 0);
  CHECK(is_null(row, "speedup"));
  CHECK(is_null(row, "prefill_tok_s"));
  CHECK(is_null(json_object_get(doc, "inputs"), "prefill_tok_s"));
  CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(doc, "inputs"), "steps")), 0);
  json_decref(doc);
}

static void whatif_claim_document(void) {
  const double streams[] = {1, 100, 10000};
  struct whatif_claim_in in = {.value = 1e6, .prompt_tokens = 100000, .answer_tokens = 1000,
                               .prefill_tok_s = NAN, .bytes_per_token = 4e9,
                               .streams = streams, .n_streams = 3};
  struct whatif_claim_out out;
  struct tm_err err;
  CHECK(whatif_claim(&in, &out, &err) == 0);
  json_t *doc = whatif_claim_json("1M tok/s", &in, &out);
  CHECK(doc != NULL);
  if (!doc) return;
  char k[256];
  CHECK_STR(keys_of(doc, k, sizeof k), "claim,value,context,prefill,decode,aggregate");
  CHECK_STR(json_string_value(json_object_get(doc, "claim")), "1M tok/s");
  json_t *ctx = json_object_get(doc, "context");
  CHECK_NEAR(num(ctx, "prompts"), 10, 1e-12); /* 1M / 100k */
  CHECK(is_null(ctx, "prefill_tok_s"));       /* not given */
  CHECK(is_null(ctx, "fill_s"));
  CHECK_NEAR(num(json_object_get(doc, "prefill"), "prompt_s"), 0.1, 1e-15);
  json_t *dec = json_object_get(doc, "decode");
  CHECK_NEAR(num(dec, "bandwidth_bytes_s"), 4e15, 1); /* 1M tok/s x 4 GB */
  CHECK_NEAR(num(dec, "token_s"), 1e-6, 1e-18);
  json_t *agg = json_object_get(doc, "aggregate");
  CHECK_EQ_INT(json_array_size(agg), 3);
  CHECK_NEAR(num(json_array_get(agg, 2), "per_stream_tok_s"), 100, 1e-9);
  CHECK_NEAR(num(json_array_get(agg, 2), "answer_s"), 10, 1e-9);
  json_decref(doc);
}

static void decide_document(void) {
  struct decide_inputs in = example();
  struct decide_result r;
  struct tm_err err;
  CHECK(decide_eval(&in, &r, &err) == 0);
  json_t *doc = decide_json(&in, "engine | m.gguf | Q4_0 | pp512 | t2 | d0", "", &r);
  CHECK(doc != NULL);
  if (!doc) return;
  char k[1024];
  CHECK_STR(keys_of(doc, k, sizeof k),
            "inputs,device_warm,device_reload,api,device_energy_per_request,"
            "device_hardware_per_day,breakeven_requests_per_day,cheaper_below_breakeven,"
            "breakeven_requests_per_day_reload,cheaper_below_breakeven_reload,winner");
  json_t *i = json_object_get(doc, "inputs");
  CHECK_EQ_INT(json_object_size(i), 20);
  CHECK_STR(json_string_value(json_object_get(i, "device_prefill_from")),
            "engine | m.gguf | Q4_0 | pp512 | t2 | d0");
  CHECK(is_null(i, "device_decode_from")); /* "" -> null */
  CHECK(is_null(i, "api_prefill_tok_s"));  /* NAN -> null, never 0 */
  CHECK(json_is_true(json_object_get(i, "device_stays_warm")));
  json_t *warm = json_object_get(doc, "device_warm");
  CHECK_STR(keys_of(warm, k, sizeof k), "first_s,complete_s,money_per_request,money_per_day,"
                                        "money_per_month,capacity_per_day");
  CHECK_NEAR(num(warm, "first_s"), 2, 1e-12);     /* 1000 / 500 */
  CHECK_NEAR(num(warm, "complete_s"), 12, 1e-12); /* + 200 / 20 */
  CHECK(is_null(json_object_get(doc, "api"), "capacity_per_day"));
  json_t *w = json_object_get(doc, "winner");
  CHECK_STR(keys_of(w, k, sizeof k), "first_token,complete,cost,first_token_reload,"
                                     "complete_reload");
  CHECK_STR(json_string_value(json_object_get(w, "first_token")), "api");
  CHECK_STR(json_string_value(json_object_get(w, "cost")), "device");
  json_decref(doc);

  /* no prices: money unknown, the cost winner unknown (null) */
  in.price_in_per_m = in.price_out_per_m = NAN;
  CHECK(decide_eval(&in, &r, &err) == 0);
  doc = decide_json(&in, NULL, NULL, &r);
  CHECK(doc != NULL);
  if (!doc) return;
  CHECK(is_null(json_object_get(doc, "api"), "money_per_day"));
  CHECK(is_null(json_object_get(doc, "winner"), "cost"));
  CHECK(is_null(json_object_get(doc, "inputs"), "device_prefill_from"));
  json_decref(doc);
}

static struct series mk(const char *key, const double *v, size_t n) {
  return series_make((struct series_spec){.key = key, .backend = "engine", .target = "in-process",
                                          .model = "m", .type = "Q8_0", .test = "tg128",
                                          .metric = "decode_tok_s", .threads = 2,
                                          .prompt_tokens = -1, .gen_tokens = 128},
                     v, n);
}

static void compare_document(void) {
  static const double slow[] = {40.1, 39.8, 40.3, 40.0}, fast[] = {55.2, 54.9, 55.6, 55.0},
                      one[] = {50};
  struct series a[2] = {mk("k1", slow, 4), mk("k2", one, 1)};
  struct series b[3] = {mk("k1", fast, 4), mk("k2", one, 1), mk("k3", one, 1)};
  struct series_set sa = {a, 2}, sb = {b, 3};
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result r;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(compare_series(&sa, &sb, &o, &r, &err), 0);
  json_t *doc = compare_json(&r, "a.jsonl", "b.jsonl", &o);
  CHECK(doc != NULL);
  if (doc) {
    CHECK_STR(json_string_value(json_object_get(doc, "a")), "a.jsonl");
    CHECK_STR(json_string_value(json_object_get(doc, "method")), "welch");
    CHECK_NEAR(num(doc, "confidence"), 0.95, 0);
    CHECK(json_is_integer(json_object_get(doc, "seed")));
    CHECK_EQ_U64((uint64_t)json_integer_value(json_object_get(doc, "seed")), STATS_BOOTSTRAP_SEED);
    CHECK_EQ_INT(json_integer_value(json_object_get(doc, "resamples")), STATS_BOOTSTRAP_RESAMPLES);
    CHECK_EQ_INT(json_integer_value(json_object_get(doc, "only_b")), 1);
    json_t *rows = json_object_get(doc, "rows");
    CHECK_EQ_INT(json_array_size(rows), 2);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
    CHECK_STR(json_string_value(json_object_get(r0, "verdict")), "faster");
    CHECK_STR(json_string_value(json_object_get(r0, "key_a")), "k1");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(r0, "a"), "n")), 4);
    CHECK(json_number_value(json_object_get(r0, "ratio")) > 1.3);
    CHECK(json_is_number(json_object_get(json_object_get(r0, "ci"), "lo")));
    CHECK(is_null(r0, "predicted_ratio")); /* the sides differ in nothing modelled */
    CHECK(is_null(r0, "predicted_from"));
    CHECK(is_null(r0, "ceiling_note_a"));
    CHECK(json_is_object(json_object_get(json_object_get(r0, "drift"), "a"))); /* >= 3 runs */
    /* one run a side: too few for an interval, drift or an sd */
    CHECK_STR(json_string_value(json_object_get(r1, "verdict")), "too few runs");
    CHECK(is_null(json_object_get(r1, "ci"), "lo"));
    CHECK(is_null(json_object_get(r1, "a"), "sd"));
    CHECK(is_null(json_object_get(r1, "drift"), "a"));
    json_decref(doc);
  }
  compare_result_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(whatif_sweep_document);
  TM_RUN(whatif_claim_document);
  TM_RUN(decide_document);
  TM_RUN(compare_document);
}
