/* Tests for src/bench/metrics.c: every definition on hand-made runs with exact
 * arrival times (expected values computed by hand in the comments), then the
 * real llama.cpp fixtures fed through the OpenAI dialect. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backend/backend_internal.h"
#include "bench/metrics.h"
#include "tm_test.h"

#include "run_builder.h"

static void compute(const struct run_result *r, const struct backend_request *req,
                    struct run_metrics *m) {
  struct metrics_options o;
  metrics_options_init(&o);
  run_metrics_compute(r, req, &o, m);
}

/* ------------------------------------------------------------ definitions */

static void test_definitions_llamacpp_like(void) {
  /* 30 tokens: first at 200 ms, one every 20 ms -> last at 780 ms.
   * Server: prompt 100, cached 0, prompt_n 100 in 150 ms, predicted 30 in 580 ms. */
  struct run_result r;
  tr_init(&r);
  tr_tokens(&r, 30, 200, 20);
  r.prompt_tokens = 100;
  r.cached_tokens = 0;
  r.completion_tokens = 30;
  r.timings_cache_n = 0;
  r.timings_prompt_n = 100;
  r.timings_prompt_ms = 150;
  r.timings_predicted_n = 30;
  r.timings_predicted_ms = 580;
  struct run_metrics m;
  compute(&r, NULL, &m);
  CHECK(m.ok);
  CHECK_NEAR(m.ttft_ms, 200, 1e-9);
  CHECK_NEAR(m.last_ms, 780, 1e-9);
  CHECK_NEAR(m.decode_span_ms, 580, 1e-9);
  CHECK_EQ_INT(m.prompt_processed, 100);
  CHECK_NEAR(m.prefill_server, 100 / 0.150, 1e-9);
  CHECK_NEAR(m.prefill_client, 100 / 0.200, 1e-9); /* a lower bound */
  CHECK_NEAR(m.decode_client, 29 / 0.580, 1e-9);   /* (30 - 1) / span */
  CHECK_NEAR(m.decode_server, 29 / 0.580, 1e-9);   /* (predicted_n - 1) / predicted_ms */
  CHECK_NEAR(m.prefill_headline, m.prefill_server, 0);
  CHECK_NEAR(m.decode_headline, m.decode_server, 0);
  CHECK_STR(m.prefill_source, "server");
  CHECK_STR(m.decode_source, "server");
  CHECK_NEAR(m.ttft_gap_ms, 50, 1e-9);
  CHECK_NEAR(m.server_prompt_ms, 150, 0);
  CHECK_NEAR(m.server_predicted_ms, 580, 0);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  CHECK_NEAR(m.tokens_per_chunk, 1, 0);
  CHECK_NEAR(m.median_gap_ms, 20, 1e-9);
  CHECK_NEAR(m.max_gap_ms, 20, 1e-9);
  CHECK_EQ_INT(m.cache, CACHE_CLEAN);
  CHECK(!m.prefill_excluded);
  CHECK(!m.count_mismatch);
  CHECK(!m.completion_from_client);
  CHECK_EQ_INT(m.client_chunks, 30);
  CHECK_EQ_INT(m.client_answer_chunks, 30);
  CHECK_EQ_INT(m.client_reasoning_chunks, 0);
  CHECK_EQ_INT(m.reasoning_tokens, 0);
  CHECK(m.reasoning_from_client);
  CHECK(isnan(m.connect_ms)); /* connection reused */
  /* 30 tokens < 50: one segment 1-30 at the whole-span rate */
  CHECK_EQ_INT(m.n_segments, 1);
  CHECK_EQ_INT(m.segments[0].from, 1);
  CHECK_EQ_INT(m.segments[0].to, 30);
  CHECK_NEAR(m.segments[0].tok_s, 29 / 0.580, 1e-9);
  CHECK_STR(cache_verdict_name(m.cache), "cache:clean");
  CHECK_STR(stream_verdict_name(m.stream), "stream:token-by-token");
  tr_free(&r);
}

static void test_client_only_and_ollama(void) {
  /* No server timers (vLLM-like): headlines are the client's. Fresh connection:
   * connect 3 ms + TLS 7 ms reported apart. */
  struct run_result r;
  tr_init(&r);
  tr_tokens(&r, 40, 250, 25); /* last at 250 + 39*25 = 1225 */
  r.prompt_tokens = 50;
  r.cached_tokens = 0;
  r.completion_tokens = 40;
  r.connection_reused = false;
  r.connect_ns = 3000000;
  r.tls_ns = 7000000;
  struct run_metrics m;
  compute(&r, NULL, &m);
  CHECK(isnan(m.prefill_server));
  CHECK(isnan(m.decode_server));
  CHECK(isnan(m.ttft_gap_ms));
  CHECK_NEAR(m.prefill_client, 50 / 0.250, 1e-9);
  CHECK_NEAR(m.decode_client, 39 / 0.975, 1e-9);
  CHECK_STR(m.prefill_source, "client");
  CHECK_STR(m.decode_source, "client");
  CHECK_NEAR(m.prefill_headline, 200, 1e-9);
  CHECK_NEAR(m.connect_ms, 10, 1e-9);

  /* Ollama: prompt_eval_count 50 in 125 ms, eval_count 40 in 800 ms, load 2000 ms,
   * no cached counter. */
  r.cached_tokens = -1;
  r.ollama_prompt_eval_ms = 125;
  r.ollama_eval_ms = 800;
  r.ollama_load_ms = 2000;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.prompt_processed, 50);
  CHECK_NEAR(m.prefill_server, 400, 1e-9);
  CHECK_NEAR(m.decode_server, 50, 1e-9); /* eval_count / eval_duration */
  CHECK_NEAR(m.server_load_ms, 2000, 0);
  CHECK_NEAR(m.ttft_gap_ms, 125, 1e-9);
  CHECK_EQ_INT(m.cache, CACHE_UNKNOWN);
  CHECK(!m.prefill_excluded);
  tr_free(&r);
}

static void test_min_decode_tokens(void) {
  /* 23 tokens: blank (NAN), not a number. 24 tokens: 23 / 0.230 s = 100 tok/s. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 23, 100, 10);
  r.completion_tokens = 23;
  r.timings_predicted_n = 23;
  r.timings_predicted_ms = 220;
  compute(&r, NULL, &m);
  CHECK(isnan(m.decode_client));
  CHECK(isnan(m.decode_server));
  CHECK(isnan(m.decode_headline));
  CHECK_STR(m.decode_source, "");
  CHECK_EQ_INT(m.n_segments, 0);
  CHECK_NEAR(m.ttft_ms, 100, 1e-9); /* TTFT is still a measurement */
  tr_free(&r);

  tr_init(&r);
  tr_tokens(&r, 24, 100, 10);
  r.completion_tokens = 24;
  r.timings_predicted_n = 24;
  r.timings_predicted_ms = 230;
  compute(&r, NULL, &m);
  CHECK_NEAR(m.decode_client, 100, 1e-9);
  CHECK_NEAR(m.decode_server, 100, 1e-9);

  /* the threshold is an option */
  struct metrics_options o;
  metrics_options_init(&o);
  CHECK_EQ_INT(o.min_decode_tokens, METRICS_MIN_DECODE_TOKENS);
  CHECK_EQ_INT(o.cache_baseline_tokens, -1);
  o.min_decode_tokens = 25;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK(isnan(m.decode_client));
  tr_free(&r);
}

static void test_buffered_streams(void) {
  struct run_result r;
  struct run_metrics m;
  /* One chunk with 400 tokens (800 bytes of text) at 5000 ms. */
  char all[801];
  for (int i = 0; i < 400; i++) memcpy(all + 2 * i, "w ", 2);
  all[800] = 0;
  tr_init(&r);
  tr_add(&r, 5000, CHUNK_CONTENT, all, 0);
  r.prompt_tokens = 40;
  r.cached_tokens = 0;
  r.completion_tokens = 400;
  r.timings_predicted_n = 400;
  r.timings_predicted_ms = 4000; /* inside the 5000 ms the client waited */
  compute(&r, NULL, &m);
  CHECK(m.ok);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  CHECK_NEAR(m.tokens_per_chunk, 400, 0);
  CHECK(isnan(m.decode_client));
  CHECK(isnan(m.median_gap_ms));
  CHECK_EQ_INT(m.n_segments, 0);
  CHECK(!m.count_mismatch); /* not token-by-token: no per-chunk count to compare */
  CHECK_NEAR(m.decode_server, 399 / 4.0, 1e-9); /* the runtime's own timer stays */
  CHECK_STR(m.decode_source, "server");
  CHECK_NEAR(m.ttft_ms, 5000, 1e-9);
  CHECK_STR(stream_verdict_name(m.stream), "stream:buffered");
  tr_free(&r);

  /* 400 one-token chunks in one burst (same arrival): span 0. */
  tr_init(&r);
  tr_tokens(&r, 400, 3000, 0);
  r.completion_tokens = 400;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  CHECK(isnan(m.decode_client));
  CHECK_NEAR(m.median_gap_ms, 0, 0);
  tr_free(&r);

  /* 400 chunks 0.01 ms apart: 399 / 3.99 ms = 100,000 tok/s apparent. */
  tr_init(&r);
  tr_tokens(&r, 400, 3000, 0.01);
  r.completion_tokens = 400;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  CHECK(isnan(m.decode_client));
  tr_free(&r);

  /* A proxy flushing every 50 chunks: 8 bursts of 50, bursts 400 ms apart.
   * Overall 399 / 2.8 s looks plausible; the median gap (0) does not. */
  tr_init(&r);
  for (int b = 0; b < 8; b++) tr_tokens(&r, 50, 100 + 400.0 * b, 0);
  r.completion_tokens = 400;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  CHECK_NEAR(m.max_gap_ms, 400, 1e-9);
  tr_free(&r);

  /* 4 tokens per chunk, 100 chunks 80 ms apart: buffered by tokens per chunk. */
  tr_init(&r);
  tr_tokens(&r, 100, 100, 80);
  r.completion_tokens = 400;
  compute(&r, NULL, &m);
  CHECK_NEAR(m.tokens_per_chunk, 4, 0);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  tr_free(&r);

  /* 2 chunks for 30 tokens, no server count (client count says 2): buffered by
   * the chunk count only when the tokens are known; here they are not. */
  tr_init(&r);
  tr_add(&r, 100, CHUNK_CONTENT, "a", 0);
  tr_add(&r, 900, CHUNK_CONTENT, "b", 0);
  r.completion_tokens = 30;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  r.completion_tokens = -1;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_UNKNOWN); /* 2 chunks, 2 tokens: too few to tell */
  CHECK(m.completion_from_client);
  CHECK_EQ_INT(m.generated_tokens, 2);
  tr_free(&r);

  /* 7 token-by-token chunks: unknown; 8: token-by-token. */
  tr_init(&r);
  tr_tokens(&r, 7, 100, 30);
  r.completion_tokens = 7;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_UNKNOWN);
  CHECK_STR(stream_verdict_name(m.stream), "stream:unknown");
  tr_add(&r, 310, CHUNK_CONTENT, "x", 0);
  r.completion_tokens = 8;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  tr_free(&r);

  /* No chunk at all (a failed run): unknown, every time NAN. */
  tr_init(&r);
  r.error = RUN_ERR_HTTP;
  compute(&r, NULL, &m);
  CHECK(!m.ok);
  CHECK_EQ_INT(m.error, RUN_ERR_HTTP);
  CHECK_EQ_INT(m.stream, STREAM_UNKNOWN);
  CHECK(isnan(m.ttft_ms) && isnan(m.decode_span_ms) && isnan(m.prefill_client));
  CHECK_EQ_INT(m.client_chunks, 0);
  tr_free(&r);
}

/* ---------------------------------------------------------------- reasoning */

static void classify(const struct run_result *r, bool *out) { metrics_classify_chunks(r, out); }

static void test_reasoning_field(void) {
  /* 10 reasoning-field chunks then 20 answer chunks, 10 ms apart from 100 ms:
   * t_first is the first REASONING chunk. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  for (int i = 0; i < 10; i++) tr_add(&r, 100 + 10 * i, CHUNK_REASONING, "hm", 0);
  for (int i = 0; i < 20; i++) tr_add(&r, 200 + 10 * i, CHUNK_CONTENT, "ok", 0);
  r.completion_tokens = 30;
  compute(&r, NULL, &m);
  CHECK_NEAR(m.ttft_ms, 100, 1e-9);
  CHECK_EQ_INT(m.client_reasoning_chunks, 10);
  CHECK_EQ_INT(m.client_answer_chunks, 20);
  CHECK_EQ_INT(m.reasoning_tokens, 10);
  CHECK(m.reasoning_from_client);
  CHECK_NEAR(m.decode_client, 29 / 0.290, 1e-9);
  r.reasoning_tokens = 12;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.reasoning_tokens, 12);
  CHECK(!m.reasoning_from_client);
  tr_free(&r);
}

/* The answer alone: tags split across chunks removed with their block, a
 * close the template opened, an unclosed block, the reasoning field left
 * out. */
static void test_answer_text(void) {
  struct run_result r;
  tr_init(&r);
  const char *parts[] = {"<thi", "nk>", "hmm", "</th", "ink>", "\n\nYe", "s."};
  for (int i = 0; i < 7; i++) tr_add(&r, 100 + i, CHUNK_CONTENT, parts[i], 0);
  tr_add(&r, 110, CHUNK_REASONING, "secret", 0);
  char *a = metrics_answer_text(&r);
  CHECK_STR(a, "\n\nYes.");
  free(a);
  tr_free(&r);
  tr_init(&r);
  tr_add(&r, 100, CHUNK_CONTENT, "plan</think>Answer: 4", 0);
  a = metrics_answer_text(&r);
  CHECK_STR(a, "Answer: 4");
  free(a);
  tr_free(&r);
  tr_init(&r);
  tr_add(&r, 100, CHUNK_CONTENT, "So <think>still thinking", 0);
  a = metrics_answer_text(&r);
  CHECK_STR(a, "So ");
  free(a);
  tr_free(&r);
  tr_init(&r);
  a = metrics_answer_text(&r);
  CHECK_STR(a, "");
  free(a);
  tr_free(&r);
}

static void test_think_tags_split(void) {
  struct run_result r;
  bool out[16];
  /* "<thi" + "nk>" + "a" + "b" + "</th" + "ink>" + "\n\nAns" + "wer" + "x" */
  tr_init(&r);
  const char *parts[] = {"<thi", "nk>", "a", "b", "</th", "ink>", "\n\nAns", "wer", "x"};
  for (int i = 0; i < 9; i++) tr_add(&r, 100 + i, CHUNK_CONTENT, parts[i], 0);
  classify(&r, out);
  for (int i = 0; i < 6; i++) CHECK_MSG(out[i], "chunk %d should be reasoning", i);
  for (int i = 6; i < 9; i++) CHECK_MSG(!out[i], "chunk %d should be answer", i);
  struct run_metrics m;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.client_reasoning_chunks, 6);
  CHECK_EQ_INT(m.client_answer_chunks, 3);
  CHECK_EQ_INT(m.reasoning_tokens, 6);
  CHECK(m.reasoning_from_client);
  tr_free(&r);

  /* The tag split in three, after answer-less text in the same chunk; a false
   * start "<" that is not a tag; an unclosed block runs to the end. */
  tr_init(&r);
  const char *p2[] = {"a<b", "c <", "th", "ink>x", "y"};
  for (int i = 0; i < 5; i++) tr_add(&r, 100 + i, CHUNK_CONTENT, p2[i], 0);
  classify(&r, out);
  CHECK(!out[0]);
  CHECK(out[1] && out[2] && out[3] && out[4]);
  tr_free(&r);

  /* Only a closing tag (the template opened the block): everything before it
   * is reasoning, the chunk holding it too. */
  tr_init(&r);
  const char *p3[] = {"a", "b", "</think>", "c", "d"};
  for (int i = 0; i < 5; i++) tr_add(&r, 100 + i, CHUNK_CONTENT, p3[i], 0);
  classify(&r, out);
  CHECK(out[0] && out[1] && out[2]);
  CHECK(!out[3] && !out[4]);
  tr_free(&r);

  /* Plain answer, no tags: nothing is reasoning; reasoning-field chunks
   * interleaved do not break a tag split around them in the content. */
  tr_init(&r);
  tr_add(&r, 1, CHUNK_CONTENT, "<th", 0);
  tr_add(&r, 2, CHUNK_REASONING, "r", 0);
  tr_add(&r, 3, CHUNK_CONTENT, "ink>z", 0);
  tr_add(&r, 4, CHUNK_CONTENT, "</think>", 0);
  tr_add(&r, 5, CHUNK_CONTENT, "answer", 0);
  classify(&r, out);
  CHECK(out[0] && out[1] && out[2] && out[3]);
  CHECK(!out[4]);
  tr_free(&r);

  /* "x<" + "<think>y": the second '<' restarts the match; the first chunk's
   * stray '<' is not part of the tag. */
  tr_init(&r);
  tr_add(&r, 1, CHUNK_CONTENT, "x<", 0);
  tr_add(&r, 2, CHUNK_CONTENT, "<think>y", 0);
  classify(&r, out);
  CHECK(!out[0]);
  CHECK(out[1]);
  tr_free(&r);

  tr_init(&r);
  tr_add(&r, 1, CHUNK_CONTENT, "think about it", 0);
  tr_add(&r, 2, CHUNK_CONTENT, " </thin", 0);
  classify(&r, out);
  CHECK(!out[0] && !out[1]);
  tr_free(&r);
}

static void test_reasoning_ate_budget(void) {
  /* The seed's case: 399 of 400 tokens were reasoning. */
  struct run_result r;
  struct run_metrics m;
  struct backend_request req = {.max_tokens = 400};
  tr_init(&r);
  for (int i = 0; i < 399; i++) tr_add(&r, 100 + 20 * i, CHUNK_REASONING, "r", 0);
  tr_add(&r, 100 + 20 * 399, CHUNK_CONTENT, "a", 0);
  r.completion_tokens = 400;
  compute(&r, &req, &m);
  CHECK_EQ_INT(m.reasoning_tokens, 399);
  CHECK(m.reasoning_ate_budget);
  CHECK_EQ_INT(m.client_answer_chunks, 1);
  compute(&r, NULL, &m); /* no request: budget unknown */
  CHECK(!m.reasoning_ate_budget);
  r.reasoning_tokens = 360; /* exactly 90% */
  compute(&r, &req, &m);
  CHECK(m.reasoning_ate_budget);
  r.reasoning_tokens = 359;
  compute(&r, &req, &m);
  CHECK(!m.reasoning_ate_budget);
  tr_free(&r);
}

/* ---------------------------------------------------------------- cache */

static void test_cache_verdicts(void) {
  struct run_result r;
  struct run_metrics m;
  struct metrics_options o;
  metrics_options_init(&o);
  tr_init(&r);
  tr_tokens(&r, 30, 100, 10);
  r.completion_tokens = 30;
  r.prompt_tokens = 46;

  r.cached_tokens = -1;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_UNKNOWN);
  CHECK_EQ_INT(m.prompt_processed, 46); /* unknown cache: all of it */
  CHECK_STR(cache_verdict_name(m.cache), "cache:unknown");

  r.cached_tokens = 0;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_CLEAN);

  /* Calibrated baseline 14: 14 is the template prefix, 15 reaches the nonce. */
  o.cache_baseline_tokens = 14;
  r.cached_tokens = 14;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_BASELINE);
  CHECK(!m.prefill_excluded);
  CHECK_EQ_INT(m.prompt_processed, 32);
  CHECK_STR(cache_verdict_name(m.cache), "cache:baseline");
  r.cached_tokens = 15;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  CHECK(m.prefill_excluded);
  CHECK_STR(cache_verdict_name(m.cache), "cache:hit");

  /* Not calibrated: hit when more than half the prompt is cached. */
  o.cache_baseline_tokens = -1;
  r.cached_tokens = 14; /* 14 of 46 */
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_BASELINE);
  r.cached_tokens = 23; /* exactly half: not more */
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_BASELINE);
  r.cached_tokens = 24;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  r.prompt_tokens = 819;
  r.cached_tokens = 818;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  CHECK_EQ_INT(m.prompt_processed, 1);

  /* llama.cpp native: no usage, timings.cache_n and prompt_n only; prompt_n is
   * the processed count and preferred. */
  r.cached_tokens = -1;
  r.timings_cache_n = 818;
  r.timings_prompt_n = 1;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cached_tokens, 818);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  CHECK_EQ_INT(m.prompt_processed, 1);
  r.timings_cache_n = -1;
  r.cached_tokens = 14;
  r.prompt_tokens = 46;
  r.timings_prompt_n = 30; /* the runtime says what it evaluated: believed */
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.prompt_processed, 30);

  /* No prompt count but something cached: cannot show it stops before the nonce. */
  r.prompt_tokens = -1;
  r.timings_prompt_n = -1;
  r.cached_tokens = 5;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  CHECK_EQ_INT(m.prompt_processed, -1);
  CHECK(isnan(m.prefill_client));
  tr_free(&r);
}


/* ------------------------------------------------- a server that lies (1, 2) */

/* 40 one-token pieces 5 ms apart from 20 ms (span 195 ms), prompt 50. */
static void liar_base(struct run_result *r) {
  tr_init(r);
  tr_tokens(r, 40, 20, 5);
  r->prompt_tokens = 50;
  r->cached_tokens = 0;
  r->completion_tokens = 40;
}

static void expect_inconsistent(const struct run_result *r, enum run_check rule, const char *what) {
  struct run_metrics m;
  compute(r, NULL, &m);
  CHECK_MSG(!m.ok && m.error == RUN_ERR_INCONSISTENT, "%s: ok %d error %d", what, m.ok, m.error);
  /* the rule broken is named (issue 31: a finding per rule) */
  CHECK_MSG(m.check == rule, "%s: check %s, expected %s (%s)", what, run_check_name(m.check),
            run_check_name(rule), m.error_msg);
  CHECK_MSG(m.error_msg[0] != 0, "%s: no reason", what);
  /* a contradicted figure is never a headline */
  CHECK_MSG(!(m.decode_headline > 1000) && !(m.prefill_headline > 1e5), "%s: %g %g", what,
            m.decode_headline, m.prefill_headline);
}

static void test_inconsistent_counts(void) {
  struct run_result r;
  struct run_metrics m;
  /* the honest run */
  liar_base(&r);
  r.timings_predicted_n = 40;
  r.timings_prompt_n = 50;
  r.timings_prompt_ms = 15;
  r.timings_predicted_ms = 195;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK_NEAR(m.decode_server, 39 / 0.195, 1e-6);
  /* usage claims 3x the pieces (audit: 544 tok/s printed against a 178 curve) */
  r.completion_tokens = 120;
  r.timings_predicted_n = 120;
  expect_inconsistent(&r, RUN_CHECK_COUNT_ABOVE_TEXT, "3 tokens per piece");
  compute(&r, NULL, &m);
  CHECK(isnan(m.decode_client) && isnan(m.decode_server));
  /* ... unless accepted speculative drafts explain the surplus */
  r.draft_n_accepted = 80;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  r.draft_n_accepted = -1;
  /* fewer tokens than non-empty pieces */
  r.completion_tokens = r.timings_predicted_n = 30;
  expect_inconsistent(&r, RUN_CHECK_PIECES_ABOVE_COUNT, "fewer than the pieces");
  /* the runtime's two counts disagree (audit: timings.predicted_n 4000, usage 40) */
  r.completion_tokens = 40;
  r.timings_predicted_n = 4000;
  expect_inconsistent(&r, RUN_CHECK_COUNTS_DISAGREE, "predicted_n vs usage");
  compute(&r, NULL, &m);
  CHECK(isnan(m.decode_server));
  CHECK_STR(m.decode_source, "");
  r.timings_predicted_n = 40;
  r.timings_prompt_n = 500;
  expect_inconsistent(&r, RUN_CHECK_COUNTS_DISAGREE, "prompt_n above the prompt");
  tr_free(&r);
}

static void test_inconsistent_timers(void) {
  struct run_result r;
  struct run_metrics m;
  liar_base(&r);
  r.timings_predicted_n = 40;
  r.timings_prompt_n = 50;
  r.timings_prompt_ms = 15;
  r.timings_predicted_ms = 195;
  /* the audit's cases, each alone */
  r.timings_predicted_ms = 0.5; /* 78000 tok/s */
  expect_inconsistent(&r, RUN_CHECK_TIMER_BELOW_STREAM, "predicted_ms 0.5");
  r.timings_predicted_ms = 60000; /* 0.65 tok/s against a 193 curve */
  expect_inconsistent(&r, RUN_CHECK_TIMER_BEYOND_CLOCK, "predicted_ms 60000");
  r.timings_predicted_ms = 195;
  r.timings_prompt_ms = 0.0001; /* 200,000,000 tok/s prefill */
  expect_inconsistent(&r, RUN_CHECK_TIMER_BELOW_STREAM, "prompt_ms 0.0001");
  r.timings_prompt_ms = 5000; /* against a 20 ms TTFT */
  expect_inconsistent(&r, RUN_CHECK_TIMER_BEYOND_CLOCK, "prompt_ms 5000");
  compute(&r, NULL, &m);
  CHECK(isnan(m.ttft_gap_ms) && isnan(m.prefill_server));
  CHECK_STR(m.prefill_source, "client");
  r.timings_prompt_ms = -3;
  expect_inconsistent(&r, RUN_CHECK_TIMER_NOT_DURATION, "prompt_ms -3");
  /* within the tolerances: ok */
  r.timings_prompt_ms = 20.3;      /* TTFT 20 + 2 ms + 2% */
  r.timings_predicted_ms = 100;    /* half the 195 ms span, and a little */
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  tr_free(&r);
  /* Ollama: eval_duration 1000 ns for 40 pieces over 195 ms */
  liar_base(&r);
  r.ollama_prompt_eval_ms = 15;
  r.ollama_eval_ms = 0.001;
  expect_inconsistent(&r, RUN_CHECK_TIMER_BELOW_STREAM, "ollama eval_duration 1000 ns");
  r.ollama_eval_ms = 200; /* includes the first token's step: fine */
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  tr_free(&r);
}

/* Issue 31's plausibility rules, each on an otherwise honest run. */
static void test_plausible_counts(void) {
  struct run_result r;
  struct run_metrics m;
  struct metrics_options o;
  struct backend_request req = {.max_tokens = 40};
  liar_base(&r);
  metrics_options_init(&o);
  run_metrics_compute(&r, &req, &o, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  /* a stop token counted: 41 of max_tokens 40 is fine, 42 is not */
  r.completion_tokens = 41;
  run_metrics_compute(&r, &req, &o, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  req.max_tokens = 32;
  run_metrics_compute(&r, &req, &o, &m);
  CHECK(!m.ok && m.check == RUN_CHECK_ABOVE_MAX_TOKENS);
  CHECK(strstr(m.error_msg, "41 generated tokens (usage) for max_tokens 32") != NULL);
  req.max_tokens = 40;
  r.completion_tokens = 40;
  r.cached_tokens = 51; /* of a 50-token prompt */
  run_metrics_compute(&r, &req, &o, &m);
  CHECK(!m.ok && m.check == RUN_CHECK_CACHED_ABOVE_PROMPT);
  r.cached_tokens = 0;
  /* the tokenizer counted 50: within 8 + 15%; 70 is not */
  o.expected_prompt_tokens = 50;
  run_metrics_compute(&r, &req, &o, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  o.expected_prompt_tokens = 57.4; /* |50 - 57.4| = 7.4 <= 8 + 8.6 */
  run_metrics_compute(&r, &req, &o, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  o.expected_prompt_tokens = 70; /* 20 > 8 + 10.5 */
  run_metrics_compute(&r, &req, &o, &m);
  CHECK(!m.ok && m.check == RUN_CHECK_PROMPT_COUNT_OFF);
  CHECK(strstr(m.error_msg, "a 50-token prompt (usage) where its own tokenizer counts about 70") != NULL);
  tr_free(&r);
  /* a dialect's impossible count keeps its rule and words in the metrics */
  liar_base(&r);
  r.error = RUN_ERR_INCONSISTENT;
  r.check = RUN_CHECK_IMPOSSIBLE_COUNT;
  snprintf(r.error_msg, sizeof r.error_msg, "impossible count: usage.completion_tokens is -32");
  compute(&r, &req, &m);
  CHECK(!m.ok && m.check == RUN_CHECK_IMPOSSIBLE_COUNT);
  CHECK_STR(m.error_msg, "impossible count: usage.completion_tokens is -32");
  tr_free(&r);
}

/* --------------------------------------- honest servers the rules once failed */

static void test_eos_step_past_last_piece(void) {
  /* Ollama without ignore_eos: 5 pieces 30 ms apart (50..170 ms), the end of
   * generation counted (eval_count 6) and timed (eval_duration 150 ms = 5
   * steps) but not streamed: prompt 50 + 150 = 200 ms against a last piece at
   * 170 ms. One step (max(median gap 30, 150 / 6 = 25) = 30 ms) is allowed. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 5, 50, 30);
  r.prompt_tokens = 20;
  r.completion_tokens = 6;
  r.ollama_prompt_eval_ms = 50;
  r.ollama_eval_ms = 150;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  /* two steps past: a lie (step max(30, 250 / 6) = 41.7; 300 > 170 + 41.7 + 5.4) */
  r.ollama_eval_ms = 250;
  expect_inconsistent(&r, RUN_CHECK_TIMER_BEYOND_CLOCK, "ollama eval two steps past");
  tr_free(&r);
  /* llama.cpp-style timings (OpenAI dialect, ignore_eos not honoured) */
  tr_init(&r);
  tr_tokens(&r, 5, 50, 30);
  r.prompt_tokens = 20;
  r.completion_tokens = r.timings_predicted_n = 6;
  r.timings_prompt_n = 20;
  r.timings_prompt_ms = 50;
  r.timings_predicted_ms = 150;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  tr_free(&r);
}

static void test_speculative_prompt_bound(void) {
  /* Low acceptance: 20 pieces 50 ms apart (a draft + verify round each), the
   * prompt read in 20 ms: under half the gap, yet honest. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 20, 21, 50);
  r.prompt_tokens = r.timings_prompt_n = 20;
  r.completion_tokens = r.timings_predicted_n = 20;
  r.timings_prompt_ms = 20;
  r.timings_predicted_ms = 950;
  r.draft_n = 60;
  r.draft_n_accepted = 3;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  /* without speculation reported, the bound holds */
  r.draft_n = r.draft_n_accepted = -1;
  expect_inconsistent(&r, RUN_CHECK_TIMER_BELOW_STREAM, "prompt under half a step, no speculation");
  tr_free(&r);
}

static void test_stall_generation_bound(void) {
  /* 20 pieces 10 ms apart with one 320 ms stall in the middle: raw span 500 ms,
   * median gap 10 ms. The server generated in 190 ms: honest. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 10, 50, 10);  /* 50..140 */
  tr_tokens(&r, 10, 460, 10); /* 460..550 */
  r.prompt_tokens = r.timings_prompt_n = 20;
  r.completion_tokens = r.timings_predicted_n = 20;
  r.timings_prompt_ms = 50;
  r.timings_predicted_ms = 190;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  /* under half of 10 x 19 = 190 ms: still a lie */
  r.timings_predicted_ms = 50;
  expect_inconsistent(&r, RUN_CHECK_TIMER_BELOW_STREAM, "generation time under half the typical span");
  tr_free(&r);
}

static void test_hidden_reasoning_tokens(void) {
  /* An OpenAI reasoning model: 10 answer pieces (20 bytes), 500 generated of
   * which 480 reasoning tokens were never streamed. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 10, 400, 20);
  r.prompt_tokens = 30;
  r.completion_tokens = 500;
  r.reasoning_tokens = 480;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  /* more than the hidden reasoning explains */
  r.completion_tokens = 600;
  expect_inconsistent(&r, RUN_CHECK_COUNT_ABOVE_TEXT, "count past hidden reasoning + bytes");
  tr_free(&r);
}

/* ------------------------------------------ lies the rules once let through */

static void test_count_with_nothing_streamed(void) {
  /* No piece at all, 1000 tokens claimed in 15 ms (a 66,667 tok/s headline). */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  r.prompt_tokens = r.timings_prompt_n = 30;
  r.completion_tokens = r.timings_predicted_n = 1000;
  r.timings_prompt_ms = 30;
  r.timings_predicted_ms = 15;
  expect_inconsistent(&r, RUN_CHECK_COUNT_ABOVE_TEXT, "1000 tokens, nothing streamed");
  compute(&r, NULL, &m);
  CHECK(isnan(m.decode_headline));
  /* honest: only the end of generation, counted and not streamed */
  r.completion_tokens = r.timings_predicted_n = 1;
  r.timings_predicted_ms = 0;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  tr_free(&r);
}

static void test_impossible_server_rate(void) {
  /* A buffered reply (one 80-byte piece at 616 ms), 40 tokens in 1.755 ms:
   * 22,222 tok/s, above BUFFERED_APPARENT_TOK_S. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_add(&r, 616, CHUNK_CONTENT,
         "abababababababababababababababababababababababababababababababababababababababab", 0);
  r.prompt_tokens = r.timings_prompt_n = 30;
  r.completion_tokens = r.timings_predicted_n = 40;
  r.timings_prompt_ms = 30;
  r.timings_predicted_ms = 1.755;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.stream, STREAM_BUFFERED);
  expect_inconsistent(&r, RUN_CHECK_TIMER_BELOW_STREAM, "22,222 tok/s server decode");
  compute(&r, NULL, &m);
  CHECK(isnan(m.decode_server));
  /* honest: 40 tokens in 400 ms */
  r.timings_predicted_ms = 400;
  compute(&r, NULL, &m);
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK_NEAR(m.decode_server, 39 / 0.4, 1e-6);
  tr_free(&r);
}

/* ----------------------------------------------------------- count mismatch */

static void test_count_mismatch(void) {
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 30, 100, 10);
  r.completion_tokens = 31; /* one counted, not streamed: tolerated */
  compute(&r, NULL, &m);
  CHECK(!m.count_mismatch);
  r.completion_tokens = 32;
  compute(&r, NULL, &m);
  CHECK(m.count_mismatch);
  /* more tokens than pieces is no lie by itself (several tokens per event,
   * as vLLM's --stream-interval sends): noted, the server's count used */
  CHECK_MSG(m.ok, "%s", m.error_msg);
  CHECK_EQ_INT(m.client_tokens, 30);
  CHECK_EQ_INT(m.completion_tokens, 32);
  /* more tokens than the 60 bytes of text streamed is: every token is a byte */
  r.completion_tokens = 62;
  compute(&r, NULL, &m);
  CHECK(!m.ok && m.error == RUN_ERR_INCONSISTENT);
  CHECK_CONTAINS(m.error_msg, "60 bytes of text");
  r.completion_tokens = 28;
  compute(&r, NULL, &m);
  CHECK(m.count_mismatch);
  tr_free(&r);

  /* Reasoning in its own field: the parser's tags are counted, not streamed. */
  tr_init(&r);
  for (int i = 0; i < 10; i++) tr_add(&r, 100 + 10 * i, CHUNK_REASONING, "r", 0);
  tr_tokens(&r, 20, 200, 10);
  r.completion_tokens = 34;
  compute(&r, NULL, &m);
  CHECK(!m.count_mismatch);
  r.completion_tokens = 35;
  compute(&r, NULL, &m);
  CHECK(m.count_mismatch);
  tr_free(&r);

  /* Chunks that say how many tokens they hold (llama.cpp native): 15 chunks of
   * 2 tokens, 20 ms apart from 100 ms: 30 tokens, no mismatch; client rate
   * (30 - 1) / 0.280 s; the segment 1-30 from token 2 (first chunk's end) to 30:
   * 28 / 0.280. */
  tr_init(&r);
  for (int i = 0; i < 15; i++) tr_add(&r, 100 + 20 * i, CHUNK_CONTENT, "ab", 2);
  r.completion_tokens = 30;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.client_tokens, 30);
  CHECK(!m.count_mismatch);
  CHECK_NEAR(m.tokens_per_chunk, 2, 0);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  CHECK_NEAR(m.decode_client, 29 / 0.280, 1e-9);
  CHECK_EQ_INT(m.n_segments, 1);
  CHECK_NEAR(m.segments[0].tok_s, 28 / 0.280, 1e-9);
  /* No server count: the client's, flagged. */
  r.completion_tokens = -1;
  compute(&r, NULL, &m);
  CHECK(m.completion_from_client);
  CHECK_EQ_INT(m.generated_tokens, 30);
  CHECK_EQ_INT(m.completion_tokens, -1);
  CHECK(!m.count_mismatch);
  CHECK_NEAR(m.decode_client, 29 / 0.280, 1e-9);
  tr_free(&r);
}

/* -------------------------------------------------------------- decode curve */

static void test_decode_curve_slowing(void) {
  /* 300 tokens: 1..50 every 10 ms from 100 ms (t50 = 590), 51..200 every 20 ms
   * (t200 = 3590), 201..300 every 40 ms (t300 = 7590).
   * Default segments: 1-50: 49 / 0.49 s = 100; 51-200: 150 / 3.0 s = 50;
   * 201-300: 100 / 4.0 s = 25. Whole: 299 / 7.49 s. */
  struct run_result r;
  struct run_metrics m;
  tr_init(&r);
  tr_tokens(&r, 50, 100, 10);
  for (int i = 51; i <= 200; i++) tr_add(&r, 590 + 20.0 * (i - 50), CHUNK_CONTENT, "w", 0);
  for (int i = 201; i <= 300; i++) tr_add(&r, 3590 + 40.0 * (i - 200), CHUNK_CONTENT, "w", 0);
  r.completion_tokens = 300;
  compute(&r, NULL, &m);
  CHECK_NEAR(m.decode_client, 299 / 7.49, 1e-9);
  CHECK_EQ_INT(m.n_segments, 3);
  CHECK_EQ_INT(m.segments[0].from, 1);
  CHECK_EQ_INT(m.segments[0].to, 50);
  CHECK_NEAR(m.segments[0].tok_s, 100, 1e-9);
  CHECK_EQ_INT(m.segments[1].from, 51);
  CHECK_EQ_INT(m.segments[1].to, 200);
  CHECK_NEAR(m.segments[1].tok_s, 50, 1e-9);
  CHECK_EQ_INT(m.segments[2].from, 201);
  CHECK_EQ_INT(m.segments[2].to, 300);
  CHECK_NEAR(m.segments[2].tok_s, 25, 1e-9);
  CHECK_NEAR(m.median_gap_ms, 20, 1e-9); /* 49 x 10, 150 x 20, 100 x 40 */
  CHECK_NEAR(m.max_gap_ms, 40, 1e-9);

  /* Configured bounds {100, 250}: 1-100: t100 = 1590, 99 / 1.49 s;
   * 101-250: t250 = 5590, 150 / 4.0 s; the tail 251-300: 50 / 2.0 s. */
  struct metrics_options o;
  metrics_options_init(&o);
  o.segment_bounds[0] = 100;
  o.segment_bounds[1] = 250;
  o.n_bounds = 2;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.n_segments, 3);
  CHECK_NEAR(m.segments[0].tok_s, 99 / 1.49, 1e-9);
  CHECK_EQ_INT(m.segments[1].from, 101);
  CHECK_EQ_INT(m.segments[1].to, 250);
  CHECK_NEAR(m.segments[1].tok_s, 37.5, 1e-9);
  CHECK_EQ_INT(m.segments[2].from, 251);
  CHECK_EQ_INT(m.segments[2].to, 300);
  CHECK_NEAR(m.segments[2].tok_s, 25, 1e-9);

  /* Bounds past the generated count: {50, 200, 400} on 300 tokens stops at 300
   * with no empty segment. */
  o.segment_bounds[0] = 50;
  o.segment_bounds[1] = 200;
  o.segment_bounds[2] = 400;
  o.n_bounds = 3;
  run_metrics_compute(&r, NULL, &o, &m);
  CHECK_EQ_INT(m.n_segments, 3);
  CHECK_EQ_INT(m.segments[2].to, 300);
  tr_free(&r);

  /* Rule 5 per segment: 51 tokens gave a segment 51-51, a rate from one
   * token over one 10 ms gap. Now a remainder under 24 tokens joins the
   * segment before it: one segment 1-51, 50 tokens over 500 ms. */
  tr_init(&r);
  tr_tokens(&r, 51, 100, 10);
  r.completion_tokens = 51;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.n_segments, 1);
  CHECK_EQ_INT(m.segments[0].from, 1);
  CHECK_EQ_INT(m.segments[0].to, 51);
  CHECK_NEAR(m.segments[0].tok_s, 100, 1e-9);
  tr_free(&r);
}

/* The server's curve, every length from 24 to 450 tokens (one chunk each,
 * 10 ms apart): contiguous from 1 to the end, every segment of at least 24
 * tokens, the default bounds kept where the rest allows (73 tokens: 1-73; 74:
 * 1-50, 51-74; 223: 1-50, 51-223; 224: 1-50, 51-200, 201-224); below 24 no
 * curve at all. */
static void test_decode_curve_min_tokens(void) {
  struct run_result r;
  struct run_metrics m;
  for (int n = 1; n <= 450; n++) {
    tr_init(&r);
    tr_tokens(&r, n, 100, 10);
    r.completion_tokens = n;
    compute(&r, NULL, &m);
    if (n < METRICS_MIN_DECODE_TOKENS) {
      CHECK_EQ_INT(m.n_segments, 0);
      tr_free(&r);
      continue;
    }
    CHECK(m.n_segments >= 1);
    uint32_t next = 1;
    for (size_t i = 0; i < m.n_segments; i++) {
      CHECK_EQ_INT(m.segments[i].from, next);
      CHECK_MSG(m.segments[i].to - m.segments[i].from + 1 >= METRICS_MIN_DECODE_TOKENS,
                "%d tokens: segment %u-%u", n, m.segments[i].from, m.segments[i].to);
      CHECK_NEAR(m.segments[i].tok_s, 100, 1e-6); /* one token per 10 ms */
      next = m.segments[i].to + 1;
    }
    CHECK_EQ_INT(next, (uint32_t)n + 1);
    uint32_t want = n < 74 ? 1 : n < 224 ? 2 : 3;
    CHECK_MSG(m.n_segments == want, "%d tokens: %zu segments, want %u", n, m.n_segments, want);
    if (m.n_segments >= 2) CHECK_EQ_INT(m.segments[0].to, 50);
    if (m.n_segments == 3) CHECK_EQ_INT(m.segments[1].to, 200);
    tr_free(&r);
  }
}

/* metrics_segment_ends, the cut both benches use. */
static void test_segment_ends(void) {
  uint32_t e[8];
  const uint32_t dflt[] = {50, 200};
  CHECK_EQ_INT(metrics_segment_ends(dflt, 2, 23, 24, e, 8), 0); /* no rate: no curve */
  CHECK_EQ_INT(metrics_segment_ends(dflt, 2, 0, 24, e, 8), 0);
  CHECK_EQ_INT(metrics_segment_ends(dflt, 2, 300, 24, e, 0), 0);
  CHECK_EQ_INT(metrics_segment_ends(dflt, 2, 24, 24, e, 8), 1);
  CHECK_EQ_INT(e[0], 24);
  CHECK_EQ_INT(metrics_segment_ends(dflt, 2, 300, 24, e, 8), 3);
  CHECK(e[0] == 50 && e[1] == 200 && e[2] == 300);
  /* a short remainder joins the segment before it */
  CHECK_EQ_INT(metrics_segment_ends(dflt, 2, 210, 24, e, 8), 2);
  CHECK(e[0] == 50 && e[1] == 210);
  /* a short candidate segment runs on to the next end: 1-10, 11-20 are too
   * short, 1-30 is not; 31-60 holds 30, and 40 remain */
  const uint32_t fine[] = {10, 20, 30, 60};
  CHECK_EQ_INT(metrics_segment_ends(fine, 4, 100, 24, e, 8), 3);
  CHECK(e[0] == 30 && e[1] == 60 && e[2] == 100);
  /* a candidate not above the last kept end is skipped; ends past the total
   * are ignored */
  const uint32_t odd[] = {50, 40, 200, 400};
  CHECK_EQ_INT(metrics_segment_ends(odd, 4, 300, 24, e, 8), 3);
  CHECK(e[0] == 50 && e[1] == 200 && e[2] == 300);
  /* cap: the last segment absorbs the rest */
  const uint32_t dbl[] = {32, 64, 128};
  CHECK_EQ_INT(metrics_segment_ends(dbl, 3, 500, 24, e, 2), 2);
  CHECK(e[0] == 32 && e[1] == 500);
}


/* ------------------------------------------------------- real llama.cpp runs */

/* Replays a recorded exchange into a run_result: each "data: " line is handed
 * to the dialect's on_event at its recorded arrival time (t_ms after t_send),
 * as the backend does with bytes off the wire. Returns 0, -1 when the fixture
 * cannot be read (a check fails). */
static int replay_fixture(const char *name, const struct dialect *d, struct run_result *r) {
  run_result_init(r);
  r->t_send_ns = BASE_NS;
  r->connection_reused = true;
  json_error_t jerr;
  char rel[256];
  snprintf(rel, sizeof rel, "llama-server/%s", name);
  json_t *root = json_load_file(tm_fixture(rel), 0, &jerr);
  CHECK_MSG(root != NULL, "cannot read fixture %s: %s", name, jerr.text);
  if (!root) return -1;
  json_t *lines = json_object_get(root, "lines");
  size_t i;
  json_t *l;
  json_array_foreach(lines, i, l) {
    const char *line = json_string_value(json_object_get(l, "line"));
    double t_ms = json_real_value(json_object_get(l, "t_ms"));
    if (!line || strncmp(line, "data: ", 6) != 0) continue;
    const char *payload = line + 6;
    size_t len = strlen(payload);
    while (len && (payload[len - 1] == '\n' || payload[len - 1] == '\r')) len--;
    int rc = d->on_event(r, payload, len, BASE_NS + (uint64_t)llround(t_ms * 1e6));
    CHECK_MSG(rc >= 0, "%s: event %zu rejected: %s", name, i, r->error_msg);
    if (rc != 0) break;
  }
  CHECK_EQ_INT(d->finish(r), 0);
  json_decref(root);
  return 0;
}

static void test_fixture_generate_400(void) {
  /* 400 tokens, first at 165.556 ms, last at 9227.246 ms; usage prompt 46,
   * cached 14 (the chat template before the nonce), timings prompt_n 32 in
   * 151.999 ms, predicted_n 400 in 9061.653 ms. */
  struct run_result r;
  if (replay_fixture("llama-server-chat-generate-400.json", &dialect_openai, &r)) return;
  struct metrics_options o;
  metrics_options_init(&o);
  o.cache_baseline_tokens = 14;
  struct backend_request req = {.max_tokens = 400};
  struct run_metrics m;
  run_metrics_compute(&r, &req, &o, &m);
  CHECK(m.ok);
  CHECK_EQ_INT(m.client_chunks, 400); /* one non-empty delta per token */
  CHECK_EQ_INT(m.completion_tokens, 400);
  CHECK(!m.count_mismatch);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  CHECK_EQ_INT(m.cache, CACHE_BASELINE); /* 14 with baseline 14: not a hit */
  CHECK(!m.prefill_excluded);
  CHECK_EQ_INT(m.prompt_tokens, 46);
  CHECK_EQ_INT(m.cached_tokens, 14);
  CHECK_EQ_INT(m.prompt_processed, 32);
  CHECK_NEAR(m.ttft_ms, 165.556, 1e-6);
  CHECK_NEAR(m.last_ms, 9227.246, 1e-6);
  CHECK_NEAR(m.decode_span_ms, 9061.690, 1e-6);
  CHECK_NEAR(m.prefill_server, 32 / 0.151999, 1e-6); /* llama.cpp's prompt_per_second 210.5277 */
  CHECK_NEAR(m.prefill_client, 32 / 0.165556, 1e-6);
  CHECK_NEAR(m.ttft_gap_ms, 165.556 - 151.999, 1e-6);
  CHECK_NEAR(m.decode_client, 399 / 9.061690, 1e-6);
  /* (n - 1) / predicted_ms = llama.cpp's own predicted_per_second 44.0317015 */
  CHECK_NEAR(m.decode_server, 44.03170150081889, 1e-6);
  CHECK_NEAR(m.median_gap_ms, 23.262, 1e-6);
  CHECK_NEAR(m.max_gap_ms, 39.238, 1e-6);
  /* The real decode curve slows with depth: values from the fixture's times. */
  CHECK_EQ_INT(m.n_segments, 3);
  CHECK_NEAR(m.segments[0].tok_s, 53.92609483729176, 1e-6);
  CHECK_NEAR(m.segments[1].tok_s, 50.51656556056717, 1e-6);
  CHECK_NEAR(m.segments[2].tok_s, 38.582360607718485, 1e-6);
  CHECK_EQ_INT(m.client_reasoning_chunks, 0);
  CHECK(!m.reasoning_ate_budget);
  /* Without calibration: 14 of 46 is under half: not flagged either. */
  metrics_options_init(&o);
  run_metrics_compute(&r, &req, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_BASELINE);
  run_result_free(&r);
}

static void test_fixture_long_cold_and_cached(void) {
  struct run_result cold, hot;
  if (replay_fixture("llama-server-chat-long-cold.json", &dialect_openai, &cold)) return;
  if (replay_fixture("llama-server-chat-long-repeat-cached.json", &dialect_openai, &hot)) {
    run_result_free(&cold);
    return;
  }
  struct metrics_options o;
  metrics_options_init(&o);
  o.cache_baseline_tokens = 14;
  struct run_metrics m;
  run_metrics_compute(&cold, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_CLEAN);
  CHECK_EQ_INT(m.prompt_processed, 819);
  CHECK_NEAR(m.prefill_server, 819 / 4.151868, 1e-6);
  CHECK_NEAR(m.ttft_ms, 4204.317, 1e-6);
  CHECK_EQ_INT(m.client_chunks, 32);
  CHECK(!m.count_mismatch);
  CHECK_NEAR(m.decode_client, 31 / 1.067581, 1e-6);
  CHECK_NEAR(m.decode_server, 31 / 1.067644, 1e-6);

  /* The trap: 818 of 819 cached, TTFT 40 ms. Flagged, calibrated or not. */
  run_metrics_compute(&hot, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  CHECK(m.prefill_excluded);
  CHECK_EQ_INT(m.prompt_processed, 1);
  CHECK_NEAR(m.ttft_ms, 40.401, 1e-6);
  metrics_options_init(&o);
  run_metrics_compute(&hot, NULL, &o, &m);
  CHECK_EQ_INT(m.cache, CACHE_HIT);
  CHECK(m.prefill_excluded);
  run_result_free(&cold);
  run_result_free(&hot);
}

static void test_fixture_chat_stream(void) {
  struct run_result r;
  if (replay_fixture("llama-server-chat-stream.json", &dialect_openai, &r)) return;
  struct run_metrics m;
  compute(&r, NULL, &m);
  CHECK_EQ_INT(m.client_chunks, 64);
  CHECK_EQ_INT(m.completion_tokens, 64);
  CHECK(!m.count_mismatch);
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  CHECK_NEAR(m.ttft_ms, 184.461, 1e-6);
  CHECK_NEAR(m.decode_client, 63 / 1.092553, 1e-6);
  CHECK_NEAR(m.decode_server, 63 / 1.096075, 1e-6);
  /* One segment 1-64 (it was 1-50 at 59.8 and 51-64, a rate from 14
   * tokens, at 51.3: rule 5 joins a remainder under 24 to the segment
   * before it), at the whole span's rate. */
  CHECK_EQ_INT(m.n_segments, 1);
  CHECK_EQ_INT(m.segments[0].from, 1);
  CHECK_EQ_INT(m.segments[0].to, 64);
  CHECK_NEAR(m.segments[0].tok_s, m.decode_client, 1e-9);
  run_result_free(&r);
}

static void test_fixture_native_completion(void) {
  /* llama.cpp /completion: no usage; tokens_evaluated 12, timings cache_n 0,
   * prompt_n 12 in 70.666 ms, predicted_n 48 in 723.704 ms; 48 events each
   * with a one-id "tokens" array, first at 87.424 ms, last at 811.221 ms. */
  struct run_result r;
  if (replay_fixture("llama-server-native-completion-stream.json", &dialect_llamacpp, &r)) return;
  struct run_metrics m;
  compute(&r, NULL, &m);
  CHECK(m.ok);
  CHECK_EQ_INT(m.client_chunks, 48);
  CHECK_EQ_INT(m.client_tokens, 48);
  CHECK_EQ_INT(m.completion_tokens, 48);
  CHECK(!m.count_mismatch);
  CHECK_EQ_INT(m.cache, CACHE_CLEAN); /* from timings.cache_n */
  CHECK_EQ_INT(m.prompt_processed, 12);
  CHECK_NEAR(m.prefill_server, 12 / 0.070666, 1e-6);
  CHECK_NEAR(m.decode_client, 47 / 0.723797, 1e-6);
  CHECK_NEAR(m.decode_server, 64.94367863104253, 1e-6); /* its predicted_per_second */
  CHECK_EQ_INT(m.stream, STREAM_TOKEN_BY_TOKEN);
  run_result_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(test_definitions_llamacpp_like);
  TM_RUN(test_client_only_and_ollama);
  TM_RUN(test_min_decode_tokens);
  TM_RUN(test_buffered_streams);
  TM_RUN(test_reasoning_field);
  TM_RUN(test_think_tags_split);
  TM_RUN(test_answer_text);
  TM_RUN(test_reasoning_ate_budget);
  TM_RUN(test_cache_verdicts);
  TM_RUN(test_count_mismatch);
  TM_RUN(test_inconsistent_counts);
  TM_RUN(test_inconsistent_timers);
  TM_RUN(test_eos_step_past_last_piece);
  TM_RUN(test_speculative_prompt_bound);
  TM_RUN(test_stall_generation_bound);
  TM_RUN(test_hidden_reasoning_tokens);
  TM_RUN(test_count_with_nothing_streamed);
  TM_RUN(test_impossible_server_rate);
  TM_RUN(test_plausible_counts);
  TM_RUN(test_decode_curve_slowing);
  TM_RUN(test_decode_curve_min_tokens);
  TM_RUN(test_segment_ends);
  TM_RUN(test_fixture_generate_400);
  TM_RUN(test_fixture_long_cold_and_cached);
  TM_RUN(test_fixture_chat_stream);
  TM_RUN(test_fixture_native_completion);
}
