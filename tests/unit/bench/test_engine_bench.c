/* test_engine_bench: the in-process method (engine_bench.h) on the tiny Qwen3
 * fixture, and its records (records_engine.h): token counts exact, warm-up
 * excluded, rates equal to tokens / measured time, the decode curve covering
 * the run, depth prefilled before the timed part, capacity checked; rule 5:
 * below 24 generated tokens no rate (null in the records, the times kept) and
 * no segment of the curve shorter than 24 tokens. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "bench/drift.h"
#include "bench/engine_bench.h"
#include "bench/metrics.h" /* METRICS_MIN_DECODE_TOKENS */
#include "bench/records_engine.h"
#include "engine/engine.h"
#include "tm_test.h"

static struct engine *load_tiny(uint32_t n_ctx) {
  struct engine_options o;
  engine_options_init(&o);
  o.n_threads = 1;
  o.n_ctx = n_ctx;
  o.max_batch = 64;
  struct tm_err err = {{0}};
  struct engine *e = engine_load(tm_fixture("gguf/tiny-qwen3-Q8_0.gguf"), &o, &err);
  CHECK_MSG(e != NULL, "engine_load: %s", err.msg);
  return e;
}

static void test_segments(void) {
  struct engine_bench_segment s[ENGINE_BENCH_MAX_SEGMENTS];
  size_t n = engine_bench_segments(128, s);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(s[0].from, 1);
  CHECK_EQ_INT(s[0].to, 32);
  CHECK_EQ_INT(s[1].from, 33);
  CHECK_EQ_INT(s[1].to, 64);
  CHECK_EQ_INT(s[2].from, 65);
  CHECK_EQ_INT(s[2].to, 128);
  n = engine_bench_segments(100, s);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(s[2].to, 100);
  /* Rule 5: no segment under 24 tokens. 32 was cut in halves of 16 (and 16
   * in halves of 8): now one segment, and none below 24. */
  n = engine_bench_segments(32, s);
  CHECK_EQ_INT(n, 1);
  CHECK_EQ_INT(s[0].from, 1);
  CHECK_EQ_INT(s[0].to, 32);
  CHECK_EQ_INT(engine_bench_segments(16, s), 0);
  CHECK_EQ_INT(engine_bench_segments(23, s), 0);
  CHECK_EQ_INT(engine_bench_segments(3, s), 0);
  CHECK_EQ_INT(engine_bench_segments(0, s), 0);
  n = engine_bench_segments(24, s);
  CHECK_EQ_INT(n, 1);
  CHECK_EQ_INT(s[0].to, 24);
  /* A remainder under 24 joins the segment before it: 55 = 1-55, 56 =
   * 1-32 + 33-56; 140 = 1-32, 33-64, 65-140 (129-140 would be 12). */
  CHECK_EQ_INT(engine_bench_segments(55, s), 1);
  n = engine_bench_segments(56, s);
  CHECK_EQ_INT(n, 2);
  CHECK_EQ_INT(s[1].from, 33);
  CHECK_EQ_INT(s[1].to, 56);
  n = engine_bench_segments(140, s);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(s[2].from, 65);
  CHECK_EQ_INT(s[2].to, 140);
  n = engine_bench_segments(152, s);
  CHECK_EQ_INT(n, 4);
  CHECK_EQ_INT(s[3].from, 129);
  CHECK_EQ_INT(s[3].to, 152);
  /* Every length: none below 24; else contiguous from 1 to n, every segment
   * of 24 tokens or more, within the limit. */
  for (uint32_t len = 1; len < 5000; len++) {
    n = engine_bench_segments(len, s);
    if (len < METRICS_MIN_DECODE_TOKENS) {
      CHECK_EQ_INT(n, 0);
      continue;
    }
    CHECK(n >= 1 && n <= ENGINE_BENCH_MAX_SEGMENTS);
    uint32_t next = 1;
    for (size_t i = 0; i < n; i++) {
      CHECK_EQ_INT(s[i].from, next);
      CHECK_MSG(s[i].to - s[i].from + 1 >= METRICS_MIN_DECODE_TOKENS, "len %u: %u-%u", len,
                s[i].from, s[i].to);
      next = s[i].to + 1;
    }
    CHECK_EQ_INT(next, len + 1);
  }
  /* Very long runs: the last segment absorbs the rest. */
  n = engine_bench_segments(4000000, s);
  CHECK_EQ_INT(n, ENGINE_BENCH_MAX_SEGMENTS);
  CHECK_EQ_INT(s[n - 1].to, 4000000);
  char name[16];
  struct engine_bench_config c = {.kind = ENGINE_BENCH_PP, .tokens = 512};
  CHECK_STR(engine_bench_test_name(&c, name, sizeof name), "pp512");
  c.kind = ENGINE_BENCH_TG;
  c.tokens = 128;
  CHECK_STR(engine_bench_test_name(&c, name, sizeof name), "tg128");
}

struct seen {
  uint32_t calls, warm_calls;
  uint32_t last_total;
  bool warm_first_ok;
};

static void on_rep(const struct engine_bench_config *cfg, uint32_t index, uint32_t total,
                   const struct engine_bench_rep *rep, void *ctx) {
  struct seen *s = ctx;
  if (index == 0) s->warm_first_ok = rep->warmup;
  if (rep->warmup) s->warm_calls++;
  s->calls++;
  s->last_total = total;
  (void)cfg;
}

/* Rates are tokens / measured time, and the summary is over the timed reps. */
static void check_consistent(const struct engine_bench_result *r, uint32_t tokens) {
  double sum = 0;
  for (size_t i = 0; i < r->n_reps; i++) {
    const struct engine_bench_rep *p = &r->reps[i];
    CHECK(!p->warmup);
    CHECK_EQ_INT(p->tokens, tokens);
    CHECK(p->ms > 0);
    CHECK(p->tok_s > 0);
    CHECK_NEAR(p->tok_s, tokens * 1000.0 / p->ms, 1e-9 * p->tok_s);
    sum += p->tok_s;
  }
  CHECK_EQ_INT(r->tok_s.n, r->n_reps);
  CHECK_NEAR(r->tok_s.mean, sum / (double)r->n_reps, 1e-9 * r->tok_s.mean);
  CHECK(r->tok_s.min <= r->tok_s.mean && r->tok_s.mean <= r->tok_s.max);
  CHECK(r->warmup.warmup);
  CHECK_EQ_INT(r->warmup.tokens, tokens);
}

static void test_pp(void) {
  struct engine *e = load_tiny(256);
  if (!e) return;
  struct engine_bench_config c = {.kind = ENGINE_BENCH_PP, .tokens = 40, .depth = 0, .reps = 3,
                                  .max_batch = 64, .seed = 5};
  struct engine_bench_result r;
  struct seen s = {0};
  struct tm_err err = {{0}};
  CHECK_MSG(engine_bench_run(e, &c, on_rep, &s, &r, &err) == 0, "%s", err.msg);
  CHECK_EQ_INT(r.n_reps, 3);
  CHECK_EQ_INT(s.calls, 4); /* warmups 0 is taken as 1, and it came first */
  CHECK_EQ_INT(s.warm_calls, 1);
  CHECK(s.warm_first_ok);
  CHECK_EQ_INT(s.last_total, 4);
  check_consistent(&r, 40);
  CHECK_EQ_INT(r.n_segments, 0);
  CHECK_EQ_INT(r.reps[0].n_segments, 0);
  CHECK_NEAR(r.mean_depth, 20.0, 1e-12);
  /* Rule 11 over the three timed rates in run order (the same test as on
   * those rates directly). */
  CHECK(r.drift_tested);
  if (r.drift_tested) {
    const double rates[3] = {r.reps[0].tok_s, r.reps[1].tok_s, r.reps[2].tok_s};
    struct stats_drift d;
    CHECK(bench_drift_test(rates, 3, &d));
    CHECK_EQ_INT(r.drift.n, 3);
    CHECK_NEAR(r.drift.change, d.change, 1e-12);
    CHECK(r.drift.slower == d.slower);
  }
  /* Exactly 40 tokens went into the cache of the last repetition. */
  CHECK_EQ_INT(engine_n_past(e), 40);
  engine_bench_result_free(&r);

  /* A prompt longer than max_batch runs in chunks: still exact. */
  c.tokens = 150;
  c.max_batch = 64;
  c.reps = 1;
  c.warmups = 2;
  memset(&s, 0, sizeof s);
  CHECK_MSG(engine_bench_run(e, &c, on_rep, &s, &r, &err) == 0, "%s", err.msg);
  CHECK_EQ_INT(s.warm_calls, 2);
  CHECK_EQ_INT(r.n_reps, 1);
  check_consistent(&r, 150);
  CHECK_EQ_INT(engine_n_past(e), 150);
  engine_bench_result_free(&r);
  engine_free(e);
}

static void test_tg_and_depth(void) {
  struct engine *e = load_tiny(256);
  if (!e) return;
  struct engine_bench_config c = {.kind = ENGINE_BENCH_TG, .tokens = 64, .depth = 0, .reps = 2,
                                  .seed = 9};
  struct engine_bench_result r;
  struct tm_err err = {{0}};
  CHECK_MSG(engine_bench_run(e, &c, NULL, NULL, &r, &err) == 0, "%s", err.msg);
  check_consistent(&r, 64);
  CHECK_EQ_INT(engine_n_past(e), 64); /* no early stop: every step ran */
  /* The curve: 1-32, 33-64, covering the run; segment times add up to it. */
  CHECK_EQ_INT(r.n_segments, 2);
  CHECK_EQ_INT(r.seg[0].from, 1);
  CHECK_EQ_INT(r.seg[1].to, 64);
  for (size_t i = 0; i < r.n_reps; i++) {
    const struct engine_bench_rep *p = &r.reps[i];
    CHECK_EQ_INT(p->n_segments, 2);
    double ms = 0;
    for (size_t k = 0; k < p->n_segments; k++) {
      ms += p->seg[k].ms;
      CHECK_NEAR(p->seg[k].tok_s, (p->seg[k].to - p->seg[k].from + 1) * 1000.0 / p->seg[k].ms,
                 1e-9 * p->seg[k].tok_s);
    }
    CHECK_NEAR(ms, p->ms, 1e-9 * p->ms);
  }
  for (size_t k = 0; k < r.n_segments; k++) {
    double mean = 0;
    for (size_t i = 0; i < r.n_reps; i++) mean += r.reps[i].seg[k].tok_s;
    CHECK_NEAR(r.seg[k].tok_s, mean / (double)r.n_reps, 1e-9 * r.seg[k].tok_s);
  }
  CHECK_NEAR(r.mean_depth, 31.5, 1e-12);
  engine_bench_result_free(&r);

  /* Depth: 100 tokens of context first (untimed), then 24 decode steps. */
  c.depth = 100;
  c.tokens = 24;
  c.reps = 1;
  CHECK_MSG(engine_bench_run(e, &c, NULL, NULL, &r, &err) == 0, "%s", err.msg);
  check_consistent(&r, 24);
  CHECK_EQ_INT(engine_n_past(e), 124);
  CHECK_NEAR(r.mean_depth, 111.5, 1e-12);
  engine_bench_result_free(&r);

  /* Too deep for the cache: refused before running, naming the capacity. */
  c.depth = 250;
  c.tokens = 10;
  CHECK(engine_bench_run(e, &c, NULL, NULL, &r, &err) == -1);
  CHECK_MSG(strstr(err.msg, "KV capacity") != NULL, "%s", err.msg);
  engine_bench_result_free(&r);
  c.depth = 0;
  c.reps = 0;
  CHECK(engine_bench_run(e, &c, NULL, NULL, &r, &err) == -1);
  engine_bench_result_free(&r);
  engine_free(e);
}

/* Rule 5: a decode of fewer than 24 tokens has no rate, in each repetition,
 * the warm-up and the summary (n = 0), and no curve; its steps ran and its
 * times are kept. Its records: rate and percentages null, tokens, ms and the
 * ceiling kept, decode_by_segment []. (Before: 16 tokens gave a rate and a
 * curve of two 8-token halves.) */
static void test_tg_few_tokens(void) {
  struct engine *e = load_tiny(64);
  if (!e) return;
  struct engine_bench_config c = {.kind = ENGINE_BENCH_TG, .tokens = 16, .reps = 2, .seed = 4};
  struct engine_bench_result r;
  struct tm_err err = {{0}};
  CHECK_MSG(engine_bench_run(e, &c, NULL, NULL, &r, &err) == 0, "%s", err.msg);
  CHECK_EQ_INT(engine_n_past(e), 16); /* every step ran */
  CHECK_EQ_INT(r.n_reps, 2);
  for (size_t i = 0; i < r.n_reps; i++) {
    CHECK_EQ_INT(r.reps[i].tokens, 16);
    CHECK(r.reps[i].ms > 0);
    CHECK(isnan(r.reps[i].tok_s));
    CHECK_EQ_INT(r.reps[i].n_segments, 0);
  }
  CHECK(isnan(r.warmup.tok_s) && r.warmup.ms > 0);
  CHECK_EQ_INT(r.tok_s.n, 0);
  CHECK(isnan(r.tok_s.median) && isnan(r.tok_s.mean));
  CHECK_EQ_INT(r.ms.n, 2);
  CHECK(r.ms.median > 0);
  CHECK_EQ_INT(r.n_segments, 0);

  struct record_engine_in in = {.identity = "abc", .model_file = "m.gguf", .arch = "qwen3",
                                .type = "Q8_0", .kernel_path = "scalar", .load_ms = 1,
                                .weights = "mapped", .ceiling_tok_s = 500,
                                .read_bandwidth_bytes_s = 1e10, .bytes_per_token = 2e7,
                                .compute_ops_s = NAN, .flops_per_token = NAN,
                                .cpu_steal_share = NAN, .other_cpus_busy = NAN,
                                .read_bandwidth_after_bytes_s = NAN};
  json_t *run = record_engine_run_build(&in, &c, 1, 0, &r.reps[0]);
  CHECK(run != NULL);
  if (run) {
    CHECK_STR(json_string_value(json_object_get(run, "test")), "tg16");
    CHECK(json_is_null(json_object_get(run, "rate_tok_s")));
    CHECK(json_is_null(json_object_get(run, "percent_of_ceiling")));
    CHECK_EQ_INT(json_integer_value(json_object_get(run, "tokens")), 16);
    CHECK_NEAR(json_real_value(json_object_get(run, "ms")), r.reps[0].ms, 1e-3);
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(run, "ceiling"), "ceiling_tok_s")),
               500, 1e-9);
    json_t *seg = json_object_get(run, "decode_by_segment");
    CHECK(json_is_array(seg) && json_array_size(seg) == 0);
    json_decref(run);
  }
  json_t *sum = record_engine_summary_build(&in, &r);
  CHECK(sum != NULL);
  if (sum) {
    json_t *rate = json_object_get(sum, "rate_tok_s");
    CHECK_EQ_INT(json_integer_value(json_object_get(rate, "n")), 0);
    CHECK(json_is_null(json_object_get(rate, "median")) &&
          json_is_null(json_object_get(rate, "mean")));
    CHECK(json_is_null(json_object_get(sum, "percent_of_ceiling")));
    CHECK(json_is_null(json_object_get(sum, "percent_of_ceiling_median")));
    json_t *ms = json_object_get(sum, "ms");
    CHECK_EQ_INT(json_integer_value(json_object_get(ms, "n")), 2);
    CHECK(json_real_value(json_object_get(ms, "median")) > 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(sum, "tokens")), 16);
    CHECK(json_is_object(json_object_get(sum, "ceiling")));
    CHECK_EQ_INT(json_array_size(json_object_get(sum, "decode_by_segment")), 0);
    json_decref(sum);
  }
  engine_bench_result_free(&r);

  /* 24 tokens: the first count with a rate. pp16 is prefill: no such rule. */
  c.tokens = 24;
  CHECK_MSG(engine_bench_run(e, &c, NULL, NULL, &r, &err) == 0, "%s", err.msg);
  check_consistent(&r, 24);
  CHECK_EQ_INT(r.n_segments, 1);
  engine_bench_result_free(&r);
  c.kind = ENGINE_BENCH_PP;
  c.tokens = 16;
  CHECK_MSG(engine_bench_run(e, &c, NULL, NULL, &r, &err) == 0, "%s", err.msg);
  check_consistent(&r, 16);
  engine_bench_result_free(&r);
  engine_free(e);
}

static void test_records(void) {
  struct engine *e = load_tiny(128);
  if (!e) return;
  struct engine_bench_config c = {.kind = ENGINE_BENCH_TG, .tokens = 56, .depth = 4, .reps = 2,
                                  .seed = 3};
  struct engine_bench_result r;
  struct tm_err err = {{0}};
  CHECK_MSG(engine_bench_run(e, &c, NULL, NULL, &r, &err) == 0, "%s", err.msg);
  struct record_engine_in in = {.identity = "abc", .model_file = "m.gguf", .arch = "qwen3",
                                .type = "Q8_0", .kernel_path = "scalar",
                                .decode_chunk_bytes = 2097152, .load_ms = 12.5,
                                .weights = "copied", .ceiling_tok_s = 2 * r.tok_s.mean,
                                .read_bandwidth_bytes_s = 1e10, .bytes_per_token = 5e9 / r.tok_s.mean,
                                .compute_ops_s = NAN, .flops_per_token = NAN,
                                .cpu_steal_share = 0.025, .read_bandwidth_after_bytes_s = 1.1e10};
  /* each reading the faster of the buffer's and the weights' */
  const double readings[3] = {0.9e10, NAN, 1.1e10}, buffer[3] = {0.9e10, NAN, 0.8e10},
               weights[3] = {0.7e10, NAN, 1.1e10};
  in.bw_readings = readings;
  in.buffer_bw_readings = buffer;
  in.weights_bw_readings = weights;
  in.n_bw_readings = 3;
  json_t *run = record_engine_run_build(&in, &c, 1, 0, &r.reps[0]);
  CHECK(run != NULL);
  if (run) {
    CHECK_STR(json_string_value(json_object_get(run, "record")), "run");
    CHECK_STR(json_string_value(json_object_get(run, "backend")), "engine");
    CHECK_STR(json_string_value(json_object_get(run, "target")), "in-process");
    CHECK_STR(json_string_value(json_object_get(run, "test")), "tg56");
    CHECK_STR(json_string_value(json_object_get(json_object_get(run, "model"), "weights")),
              "copied");
    CHECK_EQ_INT(json_integer_value(json_object_get(run, "threads")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(run, "decode_chunk_bytes")), 2097152);
    CHECK_EQ_INT(json_integer_value(json_object_get(run, "depth")), 4);
    CHECK_EQ_INT(json_integer_value(json_object_get(run, "tokens")), 56);
    CHECK(json_is_false(json_object_get(run, "warmup")));
    CHECK_NEAR(json_real_value(json_object_get(run, "ms")), r.reps[0].ms, 1e-3);
    CHECK_NEAR(json_real_value(json_object_get(run, "rate_tok_s")), r.reps[0].tok_s, 1e-9);
    json_t *ce = json_object_get(run, "ceiling");
    CHECK_NEAR(json_real_value(json_object_get(ce, "ceiling_tok_s")), 2 * r.tok_s.mean, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(run, "percent_of_ceiling")),
               100.0 * r.reps[0].tok_s / (2 * r.tok_s.mean), 1e-9);
    json_t *seg = json_object_get(run, "decode_by_segment");
    CHECK_EQ_INT(json_array_size(seg), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(seg, 1), "to")), 56);
    CHECK(json_object_get(run, "read_bandwidth_after_bytes_s") == NULL); /* summary only */
    CHECK(json_object_get(run, "read_bandwidth_readings_bytes_s") == NULL);
    CHECK(json_object_get(run, "buffer_read_bandwidth_readings_bytes_s") == NULL);
    CHECK(json_object_get(run, "weights_read_bandwidth_readings_bytes_s") == NULL);
    json_decref(run);
  }
  json_t *warm = record_engine_run_build(&in, &c, 1, -1, &r.warmup);
  CHECK(warm && json_is_true(json_object_get(warm, "warmup")) &&
        json_is_null(json_object_get(warm, "index")));
  json_decref(warm);
  json_t *sum = record_engine_summary_build(&in, &r);
  CHECK(sum != NULL);
  if (sum) {
    CHECK_STR(json_string_value(json_object_get(sum, "record")), "summary");
    CHECK_EQ_INT(json_integer_value(json_object_get(sum, "n")), 2);
    /* two repetitions: no drift test (rule 11 needs three), null not absent */
    CHECK(!r.drift_tested);
    CHECK(json_is_null(json_object_get(sum, "drift")));
    json_t *rate = json_object_get(sum, "rate_tok_s");
    CHECK_NEAR(json_real_value(json_object_get(rate, "mean")), r.tok_s.mean, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(sum, "percent_of_ceiling")), 50.0, 1e-9);
    /* the table's figure: 100 x the median rate / the ceiling */
    CHECK(json_is_real(json_object_get(sum, "percent_of_ceiling_median")));
    CHECK_NEAR(json_real_value(json_object_get(sum, "percent_of_ceiling_median")),
               100.0 * r.tok_s.median / in.ceiling_tok_s, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(sum, "model"), "load_ms")), 12.5,
               1e-9);
    CHECK_NEAR(json_real_value(json_object_get(sum, "cpu_steal_share")), 0.025, 1e-12);
    /* every reading between the repetitions, in order, a failed one null */
    json_t *rd = json_object_get(sum, "read_bandwidth_readings_bytes_s");
    CHECK_EQ_INT(json_array_size(rd), 3);
    CHECK_NEAR(json_real_value(json_array_get(rd, 0)), 0.9e10, 1e-3);
    CHECK(json_is_null(json_array_get(rd, 1)));
    CHECK_NEAR(json_real_value(json_array_get(rd, 2)), 1.1e10, 1e-3);
    /* and the two readings each was the faster of */
    json_t *rb = json_object_get(sum, "buffer_read_bandwidth_readings_bytes_s");
    json_t *rw = json_object_get(sum, "weights_read_bandwidth_readings_bytes_s");
    CHECK_EQ_INT(json_array_size(rb), 3);
    CHECK_EQ_INT(json_array_size(rw), 3);
    CHECK_NEAR(json_real_value(json_array_get(rb, 2)), 0.8e10, 1e-3);
    CHECK_NEAR(json_real_value(json_array_get(rw, 0)), 0.7e10, 1e-3);
    CHECK(json_is_null(json_array_get(rb, 1)) && json_is_null(json_array_get(rw, 1)));
    /* the ceiling's bandwidth and the reading after the last, apart */
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(sum, "ceiling"),
                                               "read_bandwidth_bytes_s")), 1e10, 1e-3);
    CHECK_NEAR(json_real_value(json_object_get(sum, "read_bandwidth_after_bytes_s")), 1.1e10,
               1e-3);
    json_decref(sum);
  }
  /* steal unknown (no steal column): null, not 0 */
  in.cpu_steal_share = NAN;
  sum = record_engine_summary_build(&in, &r);
  CHECK(sum && json_is_null(json_object_get(sum, "cpu_steal_share")));
  json_decref(sum);
  /* the reading after not measured: null, not 0 */
  in.read_bandwidth_after_bytes_s = NAN;
  sum = record_engine_summary_build(&in, &r);
  CHECK(sum && json_is_null(json_object_get(sum, "read_bandwidth_after_bytes_s")));
  json_decref(sum);
  /* pp: no curve (null), ceiling basis is compute. */
  struct engine_bench_config pc = {.kind = ENGINE_BENCH_PP, .tokens = 16, .reps = 1};
  struct engine_bench_rep rep = {.tokens = 16, .ms = 2.0, .tok_s = 8000.0};
  in.ceiling_tok_s = NAN;
  json_t *pr = record_engine_run_build(&in, &pc, 2, 0, &rep);
  CHECK(pr && json_is_null(json_object_get(pr, "decode_by_segment")) &&
        json_is_null(json_object_get(pr, "ceiling")) &&
        json_is_null(json_object_get(pr, "percent_of_ceiling")));
  CHECK_STR(json_string_value(json_object_get(pr, "test")), "pp16");
  json_decref(pr);
  engine_bench_result_free(&r);
  engine_free(e);
}

void tm_run_tests(void) {
  TM_RUN(test_segments);
  TM_RUN(test_pp);
  TM_RUN(test_tg_and_depth);
  TM_RUN(test_tg_few_tokens);
  TM_RUN(test_records);
}
