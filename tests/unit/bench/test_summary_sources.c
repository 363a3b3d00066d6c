/* test_summary_sources: which source a headline comes from when the runs
 * disagree (a tie, no figure at all), the decode curve's median (not mean)
 * over runs, and the runtime's prompt time kept apart from cache hits.
 * Runs are run_metrics built by hand; expected figures in the comments. */
#include <math.h>
#include <string.h>

#include "bench/summary.h"
#include "tm_test.h"

/* An ok, clean, token-by-token run with every figure blank (NAN). */
static struct run_metrics blank_run(void) {
  struct run_metrics m;
  memset(&m, 0, sizeof m);
  m.ok = true;
  m.error = RUN_OK;
  m.prompt_tokens = 100;
  m.cached_tokens = 0;
  m.prompt_processed = 100;
  m.completion_tokens = 64;
  m.reasoning_tokens = 0;
  m.ttft_ms = m.last_ms = m.decode_span_ms = NAN;
  m.server_prompt_ms = m.server_predicted_ms = m.server_load_ms = m.connect_ms = NAN;
  m.prefill_server = m.prefill_client = m.prefill_headline = NAN;
  m.decode_server = m.decode_client = m.decode_headline = NAN;
  m.ttft_gap_ms = m.tokens_per_chunk = m.median_gap_ms = m.max_gap_ms = NAN;
  m.prefill_source = m.decode_source = "";
  m.stream = STREAM_TOKEN_BY_TOKEN;
  m.cache = CACHE_CLEAN;
  return m;
}

/* Two runs, one with only the server's prefill (100 tok/s), one with only the
 * client's (80): one run each, a tie, and the rule says the server's on a tie,
 * over the runs that have it: headline n 1, median 100. Never a blend of the
 * two (which would be 90). */
static void tie_goes_to_the_server(void) {
  struct run_metrics runs[2] = {blank_run(), blank_run()};
  runs[0].prefill_server = 100;
  runs[1].prefill_client = 80;
  runs[0].decode_client = 40; /* decode: the client's in every run that has one */
  struct bench_summary s;
  bench_summarize("tie", runs, 2, NULL, false, &s);
  CHECK_STR(s.prefill_source, "server");
  CHECK_EQ_INT(s.prefill_headline.n, 1);
  CHECK_NEAR(s.prefill_headline.median, 100, 0);
  CHECK_STR(s.decode_source, "client");
  CHECK_EQ_INT(s.decode_headline.n, 1);
  CHECK_NEAR(s.decode_headline.median, 40, 0);
}

/* Every run ok but no decode figure in any (rule 5: too few tokens): no
 * source, and the headline is empty (n 0, NAN), not the server's by default. */
static void no_figure_no_source(void) {
  struct run_metrics runs[3] = {blank_run(), blank_run(), blank_run()};
  for (int i = 0; i < 3; i++) runs[i].prefill_client = 200 + i;
  struct bench_summary s;
  bench_summarize("short", runs, 3, NULL, false, &s);
  CHECK_STR(s.decode_source, "");
  CHECK_EQ_INT(s.decode_headline.n, 0);
  CHECK(isnan(s.decode_headline.median));
  CHECK_STR(s.prefill_source, "client");
  CHECK_NEAR(s.prefill_headline.median, 201, 0);
}

/* The decode curve is the median of the runs' segment rates: 1-50 over
 * {40, 41, 60} is 41 (the mean would be 47: one fast run is not the curve). */
static void segment_median_not_mean(void) {
  struct run_metrics runs[3] = {blank_run(), blank_run(), blank_run()};
  const double rate[3] = {60, 40, 41};
  for (int i = 0; i < 3; i++) {
    runs[i].segments[0] = (struct decode_segment){1, 50, rate[i]};
    runs[i].n_segments = 1;
  }
  struct bench_summary s;
  bench_summarize("curve", runs, 3, NULL, false, &s);
  CHECK_EQ_INT(s.n_segments, 1);
  CHECK_NEAR(s.segments[0].tok_s, 41, 0);
}

/* The runtime's own prompt time is a prefill figure: a cache hit's (5 ms for
 * a cached prompt) stays out unless allow_cache. {150, 170} -> median 160. */
static void server_prompt_time_without_cache_hits(void) {
  struct run_metrics runs[3] = {blank_run(), blank_run(), blank_run()};
  runs[0].server_prompt_ms = 150;
  runs[1].server_prompt_ms = 5;
  runs[1].cache = CACHE_HIT;
  runs[1].prefill_excluded = true;
  runs[2].server_prompt_ms = 170;
  struct bench_summary s;
  bench_summarize("hits", runs, 3, NULL, false, &s);
  CHECK_EQ_INT(s.server_prompt_ms.n, 2);
  CHECK_NEAR(s.server_prompt_ms.median, 160, 0);
  bench_summarize("hits", runs, 3, NULL, true, &s);
  CHECK_EQ_INT(s.server_prompt_ms.n, 3);
  CHECK_NEAR(s.server_prompt_ms.median, 150, 0);
}

void tm_run_tests(void) {
  TM_RUN(tie_goes_to_the_server);
  TM_RUN(no_figure_no_source);
  TM_RUN(segment_median_not_mean);
  TM_RUN(server_prompt_time_without_cache_hits);
}
