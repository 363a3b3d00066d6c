/* whatif: Amdahl for token jobs. Every expected value below is worked out by
 * hand from the formulas in whatif.h (the arithmetic is in the comments). */
#include <math.h>

#include "analysis/whatif.h"
#include "tm_test.h"

/* 10 items, 4 streams -> 3 waves; each item reads 2000 tokens at 4000 tok/s
 * and writes 1000; a 30 s test per item, a 600 s review once. */
static struct whatif_step steps[2];
static struct whatif_job example_job(void) {
  struct whatif_job j = {.gen_tokens = 1000, .read_tokens = 2000, .items = 10,
                         .concurrency = 4, .prefill_tok_s = 4000, .prefill_ratio = 0};
  struct tm_err err;
  CHECK(whatif_parse_step("test=30/item", &steps[0], &err) == 0);
  CHECK(whatif_parse_step("review=10m", &steps[1], &err) == 0);
  j.steps = steps;
  j.n_steps = 2;
  return j;
}

static void phases_and_amdahl(void) {
  struct whatif_job j = example_job();
  struct whatif_row base, fast;
  struct tm_err err;
  CHECK(whatif_eval(&j, 100, NAN, &base, &err) == 0);
  CHECK_NEAR(base.waves, 3, 0);
  CHECK_NEAR(base.read_s, 1.5, 1e-12);        /* 3 x 2000 / 4000 */
  CHECK_NEAR(base.generate_s, 30, 1e-12);     /* 3 x 1000 / 100 */
  CHECK_NEAR(base.item_steps_s, 90, 1e-12);   /* 3 x 30 */
  CHECK_NEAR(base.job_steps_s, 600, 1e-12);
  CHECK_NEAR(base.total_s, 721.5, 1e-9);
  CHECK_NEAR(base.aggregate_tok_s, 400, 1e-9); /* 4 streams x 100 */
  CHECK_NEAR(base.fixed_share, 690 / 721.5, 1e-12);
  CHECK(isnan(base.speedup));
  CHECK(whatif_eval(&j, 1000, base.total_s, &fast, &err) == 0);
  CHECK_NEAR(fast.generate_s, 3, 1e-12);
  CHECK_NEAR(fast.total_s, 694.5, 1e-9);
  CHECK_NEAR(fast.speedup, 721.5 / 694.5, 1e-12); /* 10x the rate, 1.039x the job */
  CHECK_NEAR(whatif_limit_s(&j), 691.5, 1e-9);    /* 1.5 + 90 + 600 */
}

static void concurrency_never_exceeds_items(void) {
  struct whatif_job j = {.gen_tokens = 500, .items = 3, .concurrency = 8, .prefill_tok_s = NAN};
  struct whatif_row r;
  struct tm_err err;
  CHECK(whatif_eval(&j, 50, NAN, &r, &err) == 0);
  CHECK_NEAR(r.waves, 1, 0);
  CHECK_NEAR(r.aggregate_tok_s, 150, 1e-9); /* 3 busy streams, not 8 */
  CHECK_NEAR(r.total_s, 10, 1e-12);
  CHECK(isnan(r.prefill_tok_s));            /* nothing read: blank */
  CHECK_NEAR(r.fixed_share, 0, 0);
  /* exactly divisible: 8 items over 4 streams are 2 waves, not 3 */
  j.items = 8;
  j.concurrency = 4;
  CHECK(whatif_eval(&j, 50, NAN, &r, &err) == 0);
  CHECK_NEAR(r.waves, 2, 0);
}

static void prefill_ratio_scales_reading(void) {
  struct whatif_job j = {.gen_tokens = 100, .read_tokens = 1000, .items = 1, .concurrency = 1,
                         .prefill_tok_s = NAN, .prefill_ratio = 10};
  struct whatif_row r;
  struct tm_err err;
  CHECK(whatif_eval(&j, 50, NAN, &r, &err) == 0);
  CHECK_NEAR(r.prefill_tok_s, 500, 1e-9);
  CHECK_NEAR(r.read_s, 2, 1e-12);
  CHECK_NEAR(r.generate_s, 2, 1e-12);
  CHECK_NEAR(whatif_limit_s(&j), 0, 0);
}

static void refuses_what_it_cannot_compute(void) {
  struct whatif_job j = {.gen_tokens = 100, .read_tokens = 1000, .items = 1, .concurrency = 1,
                         .prefill_tok_s = NAN};
  struct whatif_row r;
  struct tm_err err;
  CHECK(whatif_eval(&j, 50, NAN, &r, &err) == -1);
  CHECK_CONTAINS(err.msg, "prefill");
  j.read_tokens = 0;
  CHECK(whatif_eval(&j, 0, NAN, &r, &err) == -1);
  CHECK(whatif_eval(&j, NAN, NAN, &r, &err) == -1);
  j.items = 0;
  CHECK(whatif_eval(&j, 50, NAN, &r, &err) == -1);
  CHECK_CONTAINS(err.msg, "items");
}

static void parses_rates(void) {
  double v[WHATIF_MAX_RATES];
  size_t n = 0;
  struct tm_err err;
  CHECK(whatif_parse_rates("100..1M", v, WHATIF_MAX_RATES, &n, &err) == 0);
  /* 100 200 500 1k 2k 5k 10k 20k 50k 100k 200k 500k 1M */
  CHECK_EQ_INT(n, 13);
  if (n == 13) {
    CHECK_NEAR(v[0], 100, 0);
    CHECK_NEAR(v[1], 200, 1e-9);
    CHECK_NEAR(v[2], 500, 1e-9);
    CHECK_NEAR(v[9], 1e5, 1e-6);
    CHECK_NEAR(v[12], 1e6, 0);
  }
  CHECK(whatif_parse_rates("30..300", v, WHATIF_MAX_RATES, &n, &err) == 0);
  CHECK_EQ_INT(n, 5); /* 30 50 100 200 300 */
  CHECK_NEAR(v[1], 50, 1e-9);
  CHECK(whatif_parse_rates("10..1000:3", v, WHATIF_MAX_RATES, &n, &err) == 0);
  CHECK_EQ_INT(n, 3);
  CHECK_NEAR(v[1], 100, 1e-9);
  CHECK(whatif_parse_rates("1k,100,1M tok/s,100", v, WHATIF_MAX_RATES, &n, &err) == 0);
  CHECK_EQ_INT(n, 3); /* sorted, the duplicate dropped */
  CHECK_NEAR(v[0], 100, 0);
  CHECK_NEAR(v[2], 1e6, 0);
  CHECK(whatif_parse_rates("75", v, WHATIF_MAX_RATES, &n, &err) == 0);
  CHECK_EQ_INT(n, 1);
  CHECK(whatif_parse_rates("", v, WHATIF_MAX_RATES, &n, &err) == -1);
  CHECK(whatif_parse_rates("0", v, WHATIF_MAX_RATES, &n, &err) == -1);
  CHECK(whatif_parse_rates("fast", v, WHATIF_MAX_RATES, &n, &err) == -1);
  CHECK(whatif_parse_rates("1000..100", v, WHATIF_MAX_RATES, &n, &err) == -1);
  CHECK_CONTAINS(err.msg, "go up");
  CHECK(whatif_parse_rates("1..1e30", v, WHATIF_MAX_RATES, &n, &err) == -1); /* too many */
  CHECK(whatif_parse_rates("10..100:1", v, WHATIF_MAX_RATES, &n, &err) == -1);
}

static void parses_steps_and_durations(void) {
  struct whatif_step st;
  struct tm_err err;
  double s;
  CHECK(whatif_parse_step("review=600", &st, &err) == 0);
  CHECK_STR(st.name, "review");
  CHECK_NEAR(st.seconds, 600, 0);
  CHECK(!st.per_item);
  CHECK(whatif_parse_step("build=1.5h/job", &st, &err) == 0);
  CHECK_NEAR(st.seconds, 5400, 1e-9);
  CHECK(whatif_parse_step("lint=350ms/item", &st, &err) == 0);
  CHECK_NEAR(st.seconds, 0.35, 1e-12);
  CHECK(st.per_item);
  CHECK(whatif_parse_step("review", &st, &err) == -1);
  CHECK(whatif_parse_step("=5", &st, &err) == -1);
  CHECK(whatif_parse_step("x=5/week", &st, &err) == -1);
  CHECK(whatif_parse_step("x=-5", &st, &err) == -1);
  CHECK(whatif_parse_step("x=5 parsecs", &st, &err) == -1);
  CHECK(whatif_parse_seconds("2d", &s, &err) == 0);
  CHECK_NEAR(s, 172800, 0);
  CHECK(whatif_parse_seconds("10M", &s, &err) == -1); /* mega or minutes? refused */
}

static void claim_read_four_ways(void) {
  double streams[] = {1, 100, 10000};
  struct whatif_claim_in in = {.value = 1e6, .prompt_tokens = 100000, .answer_tokens = 1000,
                               .prefill_tok_s = 2000, .bytes_per_token = 4e9,
                               .streams = streams, .n_streams = 3};
  struct whatif_claim_out o;
  struct tm_err err;
  CHECK(whatif_claim(&in, &o, &err) == 0);
  CHECK_NEAR(o.context_tokens, 1e6, 0);
  CHECK_NEAR(o.context_prompts, 10, 1e-12);
  CHECK_NEAR(o.context_fill_s, 500, 1e-9);      /* 1M tokens at 2000 tok/s */
  CHECK_NEAR(o.prefill_prompt_s, 0.1, 1e-15);   /* 100k tokens at 1M tok/s */
  CHECK_NEAR(o.decode_answer_s, 0.001, 1e-15);  /* 1000 tokens at 1M tok/s */
  CHECK_NEAR(o.decode_token_s, 1e-6, 1e-18);
  CHECK_NEAR(o.decode_bandwidth_bytes_s, 4e15, 1); /* 4 PB/s */
  CHECK_EQ_INT(o.n_at, 3);
  CHECK_NEAR(o.at[2].per_stream_tok_s, 100, 1e-12); /* docs/design.md: 10,000 x 100 tok/s */
  CHECK_NEAR(o.at[2].answer_s, 10, 1e-12);
  CHECK_NEAR(o.at[1].answer_s, 0.1, 1e-12);
  in.prefill_tok_s = NAN;
  in.bytes_per_token = NAN;
  CHECK(whatif_claim(&in, &o, &err) == 0);
  CHECK(isnan(o.context_fill_s));
  CHECK(isnan(o.decode_bandwidth_bytes_s));
  in.value = 0;
  CHECK(whatif_claim(&in, &o, &err) == -1);
}

void tm_run_tests(void) {
  TM_RUN(phases_and_amdahl);
  TM_RUN(concurrency_never_exceeds_items);
  TM_RUN(prefill_ratio_scales_reading);
  TM_RUN(refuses_what_it_cannot_compute);
  TM_RUN(parses_rates);
  TM_RUN(parses_steps_and_durations);
  TM_RUN(claim_read_four_ways);
}
