/* test_load_window: a level's figures from hand-made requests whose answer
 * is known: tokens count where they arrived inside the window, requests
 * where they were sent, cache hits out of TTFT, gaps only from
 * token-by-token streams, late sends in open loop, the SLO share and
 * goodput; and the knee rule. The merge of shards runs this computation
 * again, so what it gives here is what both give. */
#include <math.h>

#include "stats/load_window.h"
#include "tm_test.h"

static void test_window(void) {
  /* window [10, 20]; A sent at 9 (ramp: not the level's), its chunks at
   * 9.5, 10.5 (one of two inside); B sent at 11, 4 chunks inside, 8 tokens;
   * C a cache hit sent at 12; D failed at 13; E sent at 19, ends at 22 with
   * 2 of its 3 chunks after the window */
  static const double ca[] = {9.5, 10.5}, cb[] = {11.1, 11.2, 11.3, 11.4}, cc[] = {12.1, 12.2},
                      ce[] = {19.5, 20.5, 21.5};
  const struct load_sample x[] = {
      {.t_sched = 9, .t_send = 9, .t_end = 10.6, .ok = true, .token_by_token = true,
       .ttft_ms = 500, .tokens = 2, .prompt_processed = 50, .n_chunks = 2, .chunk_t = ca},
      {.t_sched = 11, .t_send = 11, .t_end = 11.5, .ok = true, .buffered = false,
       .ttft_ms = 100, .ttfat_ms = 100, .decode_tok_s = 40, .tpot_ms = 25, .e2e_ms = 500,
       .queue_ms = 10, .tokens = 8, .prompt_processed = 60, .n_chunks = 4, .chunk_t = cb},
      {.t_sched = 12, .t_send = 12, .t_end = 12.3, .ok = true, .cache_hit = true,
       .token_by_token = true, .ttft_ms = 5, .e2e_ms = 300, .tokens = 2, .prompt_processed = 1,
       .n_chunks = 2, .chunk_t = cc},
      {.t_sched = 13, .t_send = 13, .t_end = 13.1, .ok = false, .error = 3, .ttft_ms = NAN,
       .tokens = 0},
      {.t_sched = 19, .t_send = 19, .t_end = 22, .ok = true, .token_by_token = true,
       .ttft_ms = 300, .e2e_ms = 3000, .tokens = 3, .prompt_processed = 70, .n_chunks = 3,
       .chunk_t = ce}};
  struct load_figures f;
  struct load_slo slo = {.set = {true, false, false}, .limit_ms = {200, 0, 0},
                         .percentile = {50, 0, 0}};
  CHECK_EQ_INT(load_window_figures(x, 5, 10, 20, false, &slo, &f), 0);
  CHECK_NEAR(f.window_s, 10, 1e-12);
  CHECK_EQ_INT(f.requests_ok, 3);     /* B, C, E (A was sent in the ramp) */
  CHECK_EQ_INT(f.requests_failed, 1); /* D */
  CHECK_EQ_INT(f.failed_by_kind[3], 1);
  CHECK_EQ_INT(f.cache_hits, 1);
  /* tokens inside: A 1 of 2 chunks (1), B 8, C 2, E 1 of 3 chunks (1) = 12 */
  CHECK_NEAR(f.output_tokens_in_window, 12, 1e-9);
  CHECK_NEAR(f.aggregate_output_tok_s, 1.2, 1e-9);
  /* prompt with the first chunk: B 60 and E 70 (A's first chunk before, C a hit) */
  CHECK_NEAR(f.prompt_tokens_in_window, 130, 1e-9);
  /* ended ok inside: A (10.6), B, C: 3 per 10 s */
  CHECK_NEAR(f.requests_per_s, 0.3, 1e-9);
  /* TTFT of B and E (C a hit): 100, 300 */
  CHECK_EQ_U64(f.ttft_ms.n, 2);
  CHECK_NEAR(f.ttft_ms.p50, 200, 1e-9);
  /* gaps: token-by-token C (100 ms) and E (1000, 1000); B's are not */
  CHECK_EQ_U64(f.itl_ms.n, 3);
  CHECK_NEAR(f.itl_ms.min, 100, 1e-6);
  CHECK_NEAR(f.itl_ms.max, 1000, 1e-6);
  CHECK(isnan(f.ttft_sched_ms.p50) || f.ttft_sched_ms.n == 2);
  /* SLO ttft p50 <= 200 ms: B (100) and C (5) meet it; D failed; E (300) not:
   * 2 of 4; goodput: B and C ended inside */
  CHECK_NEAR(f.slo_met_share, 0.5, 1e-12);
  CHECK_NEAR(f.goodput_req_s, 0.2, 1e-12);
  CHECK_NEAR(f.goodput_tok_s, 1.0, 1e-12);
  /* p50 over B 100, C 5, D inf, E 300 = (100 + 300) / 2 = 200: met */
  CHECK(f.slo_met);
  CHECK(!f.behind_schedule && f.late_sends == 0);
}

static void test_late_sends(void) {
  /* open loop over a 10 s window: 2 sends 5 ms late are 10 ms of lag, 0.1%:
   * counted, not behind; 40 sends 5 ms late are 200 ms, 2%: behind */
  struct load_sample x[100];
  for (int i = 0; i < 100; i++)
    x[i] = (struct load_sample){.t_sched = 1 + i * 0.05, .t_send = 1 + i * 0.05, .t_end = 6,
                                .ok = true, .ttft_ms = 10, .tokens = 1};
  x[10].t_send += 0.005;
  x[20].t_send += 0.005;
  struct load_figures f;
  CHECK_EQ_INT(load_window_figures(x, 100, 0, 10, true, NULL, &f), 0);
  CHECK_EQ_INT(f.late_sends, 2);
  CHECK_NEAR(f.max_send_lag_ms, 5, 1e-6);
  CHECK_NEAR(f.send_lag_share, 0.001, 1e-9);
  CHECK(!f.behind_schedule);
  CHECK_NEAR(f.ttft_sched_ms.max, 15, 1e-6);
  CHECK(isnan(f.slo_met_share));
  for (int i = 30; i < 68; i++) x[i].t_send += 0.005;
  CHECK_EQ_INT(load_window_figures(x, 100, 0, 10, true, NULL, &f), 0);
  CHECK_EQ_INT(f.late_sends, 40);
  CHECK_NEAR(f.send_lag_share, 0.02, 1e-9);
  CHECK(f.behind_schedule);
  /* closed loop never is */
  CHECK_EQ_INT(load_window_figures(x, 100, 0, 10, false, NULL, &f), 0);
  CHECK(!f.behind_schedule);
}

static void test_knee(void) {
  const double agg[] = {100, 190, 200, 205}, p99[] = {50, 60, 100, 300};
  /* 190 -> 200 is +5% with p99 +67%: the knee is the second level */
  CHECK_EQ_INT(load_knee_index(agg, p99, 4), 1);
  const double agg2[] = {100, 200, 400};
  CHECK_EQ_INT(load_knee_index(agg2, p99, 3), -1);
  CHECK(load_counters_disagree(1000, 900, 10));  /* 100 > 18 + 20 */
  CHECK(!load_counters_disagree(1000, 990, 10)); /* 10 <= 19.8 + 20 */
  CHECK(!load_counters_disagree(NAN, 990, 10));
}

void tm_run_tests(void) {
  TM_RUN(test_window);
  TM_RUN(test_late_sends);
  TM_RUN(test_knee);
}
