/* Tests for src/bench/summary.c: runs built as run_metrics by hand, so every
 * expected figure is computed in the comments. */
#include <math.h>
#include <string.h>

#include "bench/summary.h"
#include "tm_test.h"

static struct run_metrics ok_run(double prefill_server, double prefill_client, double ttft,
                                 double decode_server, double decode_client) {
  struct run_metrics m;
  memset(&m, 0, sizeof m);
  m.ok = true;
  m.error = RUN_OK;
  m.prompt_tokens = 100;
  m.cached_tokens = 0;
  m.prompt_processed = 100;
  m.completion_tokens = 64;
  m.reasoning_tokens = 0;
  m.ttft_ms = ttft;
  m.prefill_server = prefill_server;
  m.prefill_client = prefill_client;
  m.prefill_headline = isfinite(prefill_server) ? prefill_server : prefill_client;
  m.prefill_source = isfinite(prefill_server) ? "server" : "client";
  m.decode_server = decode_server;
  m.decode_client = decode_client;
  m.decode_headline = isfinite(decode_server) ? decode_server : decode_client;
  m.decode_source = isfinite(decode_server)   ? "server"
                    : isfinite(decode_client) ? "client"
                                              : "";
  m.ttft_gap_ms = isfinite(prefill_server) ? ttft - 100 / prefill_server * 1e3 : NAN;
  m.stream = STREAM_TOKEN_BY_TOKEN;
  m.cache = CACHE_CLEAN;
  return m;
}

static struct run_metrics failed_run(enum run_error e) {
  struct run_metrics m;
  memset(&m, 0, sizeof m);
  m.ok = false;
  m.error = e;
  m.ttft_ms = 5; /* whatever arrived before the failure never enters a figure */
  m.prefill_headline = m.decode_headline = 1e9;
  m.prompt_tokens = m.completion_tokens = m.prompt_processed = -1;
  return m;
}

static void add_segment(struct run_metrics *m, uint32_t from, uint32_t to, double tok_s) {
  m->segments[m->n_segments++] = (struct decode_segment){from, to, tok_s};
}

/* r0 clean, r1 cache hit, r2 blank decode + buffered, r3/r4 failed, r5 clean
 * with a client-only decode. */
static size_t make_runs(struct run_metrics *runs) {
  runs[0] = ok_run(100, 80, 200, 52, 50);
  add_segment(&runs[0], 1, 50, 60);
  add_segment(&runs[0], 51, 64, 40);
  runs[1] = ok_run(5000, 4000, 20, 50, 49);
  runs[1].cache = CACHE_HIT;
  runs[1].prefill_excluded = true;
  runs[1].cached_tokens = 99;
  runs[1].prompt_processed = 1;
  add_segment(&runs[1], 1, 50, 62);
  add_segment(&runs[1], 51, 64, 44);
  runs[2] = ok_run(110, 90, 180, NAN, NAN);
  runs[2].stream = STREAM_BUFFERED;
  runs[2].completion_tokens = 400;
  runs[2].count_mismatch = true;
  runs[3] = failed_run(RUN_ERR_HTTP);
  runs[4] = failed_run(RUN_ERR_IDLE_TIMEOUT);
  runs[5] = ok_run(120, 100, 220, NAN, 47);
  runs[5].reasoning_tokens = 370;
  runs[5].reasoning_ate_budget = true;
  add_segment(&runs[5], 1, 50, 58);
  return 6;
}

static void test_summary_counts_and_figures(void) {
  struct run_metrics runs[6];
  size_t n = make_runs(runs);
  struct bench_summary s;
  bench_summarize("generate", runs, n, NULL, false, &s);
  CHECK_STR(s.workload, "generate");
  CHECK_EQ_INT(s.n_runs, 6);
  CHECK_EQ_INT(s.n_ok, 4);
  CHECK_EQ_INT(s.n_failed, 2);
  CHECK_EQ_INT(s.failed_by_kind[RUN_ERR_HTTP], 1);
  CHECK_EQ_INT(s.failed_by_kind[RUN_ERR_IDLE_TIMEOUT], 1);
  CHECK_EQ_INT(s.failed_by_kind[RUN_ERR_CONNECT], 0);
  CHECK_EQ_INT(s.failed_by_kind[RUN_OK], 0);
  CHECK_EQ_INT(s.n_cache_hits, 1);
  CHECK_EQ_INT(s.n_buffered, 1);
  CHECK_EQ_INT(s.n_count_mismatch, 1);
  CHECK_EQ_INT(s.n_reasoning_ate_budget, 1);
  CHECK(!s.allow_cache);

  /* Prefill without the cache hit: {100, 110, 120}: median 110, mean 110, sd 10. */
  CHECK_EQ_INT(s.prefill_headline.n, 3);
  CHECK_NEAR(s.prefill_headline.median, 110, 1e-9);
  CHECK_NEAR(s.prefill_headline.mean, 110, 1e-9);
  CHECK_NEAR(s.prefill_headline.sd, 10, 1e-9);
  CHECK_NEAR(s.prefill_headline.min, 100, 0);
  CHECK_NEAR(s.prefill_headline.max, 120, 0);
  CHECK_NEAR(s.prefill_client.median, 90, 1e-9); /* {80, 90, 100} */
  CHECK_EQ_INT(s.ttft_ms.n, 3);                  /* {200, 180, 220} */
  CHECK_NEAR(s.ttft_ms.median, 200, 1e-9);
  CHECK_EQ_INT(s.prompt_processed.n, 3);
  CHECK_NEAR(s.prompt_processed.max, 100, 0); /* the hit's 1 is left out */
  /* TTFT gap: ttft - 100/prefill s: 200-1000, 180-909.09.., 220-833.33.. */
  CHECK_EQ_INT(s.ttft_gap_ms.n, 3);
  CHECK_NEAR(s.ttft_gap_ms.median, 180 - 100 / 110.0 * 1e3, 1e-9);
  CHECK_STR(s.prefill_source, "server");

  /* Token counts over every ok run: completion {64, 64, 400, 64}. */
  CHECK_EQ_INT(s.completion_tokens.n, 4);
  CHECK_NEAR(s.completion_tokens.median, 64, 0);
  CHECK_NEAR(s.completion_tokens.max, 400, 0);
  CHECK_EQ_INT(s.prompt_tokens.n, 4);
  CHECK_NEAR(s.reasoning_tokens.max, 370, 0);

  /* Decode over non-blank runs: per-run headlines {52, 50, 47};
   * server {52, 50}; client {50, 49, 47}. A cache hit does not touch decode. */
  /* One source, never a blend: the server's figure is in 2 runs, the client's
   * in all 3, so the headline is the client's {50, 49, 47}. */
  CHECK_EQ_INT(s.decode_headline.n, 3);
  CHECK_NEAR(s.decode_headline.median, 49, 1e-9);
  CHECK_NEAR(s.decode_headline.mean, 146 / 3.0, 1e-9);
  CHECK_EQ_INT(s.decode_server.n, 2);
  CHECK_NEAR(s.decode_server.median, 51, 1e-9);
  CHECK_EQ_INT(s.decode_client.n, 3);
  CHECK_NEAR(s.decode_client.median, 49, 1e-9);
  CHECK_STR(s.decode_source, "client");

  /* Segments: 1-50 {60, 62, 58} -> 60; 51-64 {40, 44} -> 42. */
  CHECK_EQ_INT(s.n_segments, 2);
  CHECK_EQ_INT(s.segments[0].from, 1);
  CHECK_EQ_INT(s.segments[0].to, 50);
  CHECK_NEAR(s.segments[0].tok_s, 60, 1e-9);
  CHECK_EQ_INT(s.segments[1].from, 51);
  CHECK_EQ_INT(s.segments[1].to, 64);
  CHECK_NEAR(s.segments[1].tok_s, 42, 1e-9);

  CHECK(isnan(s.cold_ttft_ms));
  CHECK(isnan(s.cold_load_ms));
}

static void test_summary_allow_cache(void) {
  struct run_metrics runs[6];
  size_t n = make_runs(runs);
  struct bench_summary s;
  bench_summarize("classify", runs, n, NULL, true, &s);
  CHECK(s.allow_cache);
  CHECK_EQ_INT(s.n_cache_hits, 1);
  /* {100, 5000, 110, 120}: median (110 + 120) / 2 */
  CHECK_EQ_INT(s.prefill_headline.n, 4);
  CHECK_NEAR(s.prefill_headline.median, 115, 1e-9);
  CHECK_NEAR(s.prefill_headline.max, 5000, 0);
  CHECK_EQ_INT(s.ttft_ms.n, 4); /* {200, 20, 180, 220} -> 190 */
  CHECK_NEAR(s.ttft_ms.median, 190, 1e-9);
  CHECK_NEAR(s.ttft_ms.min, 20, 0);
}

static void test_summary_cold_apart(void) {
  struct run_metrics runs[6];
  size_t n = make_runs(runs);
  struct run_metrics cold = ok_run(50, 40, 900, 30, 29);
  cold.server_load_ms = 3000;
  struct bench_summary s;
  bench_summarize("generate", runs, n, &cold, false, &s);
  CHECK_NEAR(s.cold_ttft_ms, 900, 0);
  CHECK_NEAR(s.cold_load_ms, 3000, 0);
  CHECK_EQ_INT(s.n_runs, 6);              /* the cold run is not a timed run */
  CHECK_NEAR(s.ttft_ms.max, 220, 0);      /* and never a warm figure */
  CHECK_NEAR(s.decode_headline.min, 47, 0);
  /* A failed cold run gives no cold figure. */
  cold.ok = false;
  cold.error = RUN_ERR_TIMEOUT;
  bench_summarize("generate", runs, n, &cold, false, &s);
  CHECK(isnan(s.cold_ttft_ms));
  CHECK_EQ_INT(s.failed_by_kind[RUN_ERR_TIMEOUT], 0);
}

static void test_summary_empty_and_all_failed(void) {
  struct bench_summary s;
  bench_summarize("extract", NULL, 0, NULL, false, &s);
  CHECK_EQ_INT(s.n_runs, 0);
  CHECK_EQ_INT(s.n_ok, 0);
  CHECK_EQ_INT(s.prefill_headline.n, 0);
  CHECK(isnan(s.prefill_headline.median));
  CHECK(isnan(s.decode_headline.median));
  CHECK_EQ_INT(s.n_segments, 0);
  CHECK_STR(s.prefill_source, "");
  CHECK_STR(s.decode_source, "");

  struct run_metrics runs[3] = {failed_run(RUN_ERR_CONNECT), failed_run(RUN_ERR_CONNECT),
                                failed_run(RUN_ERR_NO_USAGE)};
  /* a failed run whose kind was never set still counts, as "other" */
  runs[2].error = RUN_OK;
  bench_summarize("extract", runs, 3, NULL, false, &s);
  CHECK_EQ_INT(s.n_failed, 3);
  CHECK_EQ_INT(s.failed_by_kind[RUN_ERR_CONNECT], 2);
  CHECK_EQ_INT(s.failed_by_kind[RUN_ERR_OTHER], 1);
  CHECK_EQ_INT(s.ttft_ms.n, 0);
  CHECK(isnan(s.ttft_ms.median));
  CHECK_EQ_INT(s.decode_headline.n, 0);

  /* A long workload name is cut, not overflowed. */
  bench_summarize("a-very-long-workload-name-that-does-not-fit-32", NULL, 0, NULL, false, &s);
  CHECK_EQ_INT(strlen(s.workload), sizeof s.workload - 1);
}

/* Rule 11 on the headlines' series in run order: the decode falls by 2 tok/s
 * a run (50 .. 42, -16% fitted, on a line), the prefill is flat noise; a
 * cache hit's prefill (5000) is left out of the prefill series as it is of
 * the figures, so it cannot fake a fall. */
static void test_summary_drift(void) {
  struct run_metrics runs[6] = {
      ok_run(1000, 900, 200, 50, 49), ok_run(1010, 910, 200, 48, 47),
      ok_run(5000, 4000, 20, 47, 46), ok_run(990, 890, 200, 46, 45),
      ok_run(1005, 905, 200, 44, 43), ok_run(995, 895, 200, 42, 41)};
  runs[2].cache = CACHE_HIT;
  runs[2].prefill_excluded = true;
  runs[2].decode_server = 47; /* keeps the line: 50 48 47 46 44 42 */
  struct bench_summary s;
  bench_summarize("generate", runs, 6, NULL, false, &s);
  CHECK(s.decode_drift_tested);
  CHECK(s.decode_drift.slower);
  CHECK_EQ_INT(s.decode_drift.n, 6);
  CHECK(s.decode_drift.change < -0.14 && s.decode_drift.change > -0.18);
  CHECK(s.prefill_drift_tested);
  CHECK_EQ_INT(s.prefill_drift.n, 5); /* the cache hit left out */
  CHECK(!s.prefill_drift.slower);
  /* with --allow-cache the hit is in, and its 5000 in the middle is no trend */
  bench_summarize("generate", runs, 6, NULL, true, &s);
  CHECK_EQ_INT(s.prefill_drift.n, 6);
  CHECK(!s.prefill_drift.slower);
  /* two runs: no test */
  bench_summarize("generate", runs, 2, NULL, false, &s);
  CHECK(!s.decode_drift_tested);
  CHECK(!s.prefill_drift_tested);
}

void tm_run_tests(void) {
  TM_RUN(test_summary_drift);
  TM_RUN(test_summary_counts_and_figures);
  TM_RUN(test_summary_allow_cache);
  TM_RUN(test_summary_cold_apart);
  TM_RUN(test_summary_empty_and_all_failed);
}
