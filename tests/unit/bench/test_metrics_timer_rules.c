/* test_metrics_timer_rules: the unit of LM Studio's timers (seconds, where
 * the other runtimes report ms), the decode step a server may time past the
 * last streamed piece, a zero prompt time, and a two-event stream. Runs built
 * by hand with exact arrival times; every expected figure is computed in the
 * comments from the definitions in metrics.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "bench/metrics.h"
#include "run_builder.h"
#include "tm_test.h"

/* One content chunk of text "w " carrying n_tokens (0 = one) at t_ms. */
static void add_piece(struct run_result *r, double t_ms, uint32_t n_tokens) {
  tr_add(r, t_ms, CHUNK_CONTENT, "w ", n_tokens);
}

/* LM Studio's stats object gives seconds: time_to_first_token 0.24 s,
 * generation_time 0.98 s, tokens_per_second 40.1. 40 tokens streamed one per
 * event from 300 ms, every 25 ms (last at 300 + 39 x 25 = 1275 ms); prompt
 * 120 tokens, none cached.
 *   server prompt time 240 ms: prefill (server) 120 / 0.240 = 500 tok/s;
 *   client prefill 120 / 0.300 = 400; TTFT gap 300 - 240 = 60 ms;
 *   server generation time 980 ms (inside the client's 1275 ms, and above
 *   half the 975 ms the pieces took): the run is consistent;
 *   decode (server) = LM Studio's own 40.1. */
static void lmstudio_seconds(void) {
  struct run_result r;
  tr_init(&r);
  for (int i = 0; i < 40; i++) add_piece(&r, 300 + 25.0 * i, 0);
  r.prompt_tokens = 120;
  r.completion_tokens = 40;
  r.lmstudio_ttft_s = 0.24;
  r.lmstudio_generation_s = 0.98;
  r.lmstudio_tok_s = 40.1;
  struct run_metrics m;
  run_metrics_compute(&r, NULL, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK_NEAR(m.server_prompt_ms, 240, 1e-9);
  CHECK_NEAR(m.server_predicted_ms, 980, 1e-9);
  CHECK_NEAR(m.prefill_server, 500, 1e-9);
  CHECK_NEAR(m.prefill_client, 400, 1e-9);
  CHECK_NEAR(m.ttft_gap_ms, 60, 1e-9);
  CHECK_NEAR(m.decode_server, 40.1, 0);
  CHECK_NEAR(m.decode_client, 39 / 0.975, 1e-9);
  CHECK_STR(m.prefill_source, "server");
  CHECK_STR(m.decode_source, "server");
  tr_free(&r);
}

/* A runtime that times one decode step past the last streamed piece (the end
 * of generation, never streamed). The pieces come in bursts: 29 gaps, 24 of
 * 10 ms and 5 of 100 ms, so the median gap is 10 ms while the server's own
 * time per token is larger. 30 tokens from 200 ms; span 24 x 10 + 5 x 100 =
 * 740 ms, last at 940 ms.
 * Server: prompt 100 tokens in 200 ms, 30 tokens generated in 779 ms.
 *   prompt + generation = 979 ms; the client's last piece 940 ms; tolerance
 *   2 + 2% of 940 = 20.8 ms; the step is the larger of the median gap (10) and
 *   779 / 30 = 25.97 ms: 940 + 25.97 + 20.8 = 986.77 >= 979, consistent.
 *   (With the 10 ms gap as the step the bound would be 970.8 and the run
 *   would be called inconsistent.)
 *   decode (server) = (30 - 1) / 0.779 s. */
static void step_past_last_piece_is_the_servers_own(void) {
  struct run_result r;
  tr_init(&r);
  double t = 200;
  add_piece(&r, t, 0);
  for (int i = 1; i < 30; i++) {
    t += (i <= 25 && i % 5 == 0) ? 100 : 10;
    add_piece(&r, t, 0);
  }
  CHECK_NEAR(t, 940, 1e-9);
  r.prompt_tokens = 100;
  r.cached_tokens = 0;
  r.completion_tokens = 30;
  r.timings_prompt_n = 100;
  r.timings_prompt_ms = 200;
  r.timings_predicted_n = 30;
  r.timings_predicted_ms = 779;
  struct run_metrics m;
  run_metrics_compute(&r, NULL, NULL, &m);
  CHECK_NEAR(m.median_gap_ms, 10, 1e-9);
  CHECK_NEAR(m.max_gap_ms, 100, 1e-9);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK_NEAR(m.decode_server, 29 / 0.779, 1e-9);
  CHECK_NEAR(m.decode_headline, 29 / 0.779, 1e-9);
  /* 800 ms: 1000 against 940 + 800 / 30 + 20.8 = 987.5, beyond even the
   * server's own step */
  r.timings_predicted_ms = 800;
  run_metrics_compute(&r, NULL, NULL, &m);
  CHECK(!m.ok);
  CHECK_EQ_INT(m.error, RUN_ERR_INCONSISTENT);
  CHECK(isnan(m.decode_server));
  tr_free(&r);
}

/* A prompt time of 0 ms (a timer rounded down) has no rate: the server's
 * prefill is blank, not infinite, and the headline is the client's:
 * 50 tokens / 0.100 s = 500 tok/s. 5 events: too few to judge the stream. */
static void zero_prompt_time_is_blank(void) {
  struct run_result r;
  tr_init(&r);
  for (int i = 0; i < 5; i++) add_piece(&r, 100 + 20.0 * i, 0);
  r.prompt_tokens = 50;
  r.cached_tokens = 0;
  r.completion_tokens = 5;
  r.timings_prompt_n = 50;
  r.timings_prompt_ms = 0;
  struct run_metrics m;
  run_metrics_compute(&r, NULL, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK(isnan(m.prefill_server));
  CHECK_NEAR(m.prefill_client, 500, 1e-9);
  CHECK_NEAR(m.prefill_headline, 500, 1e-9);
  CHECK_STR(m.prefill_source, "client");
  tr_free(&r);
}

/* Two events carrying the whole answer are a reply delivered whole (rule 6),
 * whatever the tokens per event: with min_decode_tokens 4, two events of two
 * tokens each (2 per event, under the 4-per-event rule) are still buffered. */
static void two_events_are_buffered(void) {
  struct run_result r;
  tr_init(&r);
  add_piece(&r, 100, 2);
  add_piece(&r, 200, 2);
  struct metrics_options o;
  metrics_options_init(&o);
  o.min_decode_tokens = 4;
  struct run_metrics m;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.client_tokens, 4);
  CHECK_NEAR(m.tokens_per_chunk, 2, 0);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  CHECK(isnan(m.decode_client)); /* no inter-token figure from a buffered stream */
  tr_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(lmstudio_seconds);
  TM_RUN(step_past_last_piece_is_the_servers_own);
  TM_RUN(zero_prompt_time_is_blank);
  TM_RUN(two_events_are_buffered);
}
