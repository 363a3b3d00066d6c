/* metrics: what one run measured, by docs/design.md's definitions, and its verdicts.
 * Pure functions over a backend's run_result: every backend gets the same rules.
 *
 * Definitions (times from the client's CLOCK_MONOTONIC stamps):
 *   t_first = arrival of the first chunk carrying a generated token of ANY kind
 *             (answer or reasoning); t_last = arrival of the last such chunk.
 *   TTFT (client)          = t_first - t_send
 *   prompt processed       = prompt tokens reported - cached tokens reported
 *   prefill rate (server)  = prompt processed / the runtime's prompt time
 *                            (llama.cpp timings.prompt_ms; Ollama prompt_eval)
 *   prefill rate (client)  = prompt processed / TTFT  (a lower bound: includes
 *                            network, queueing and the first decode step)
 *   decode rate (client)   = (generated tokens - 1) / (t_last - t_first)
 *   decode rate (server)   = (predicted_n - 1) / predicted_ms (llama.cpp), eval_count /
 *                            eval_duration (Ollama), LM Studio stats.tokens_per_second.
 *                            llama.cpp's predicted_ms spans first to last token
 *                            (the fixtures: 9061.653 ms vs the client's 9061.69 ms
 *                            for 400 tokens) and its own predicted_per_second is
 *                            (n - 1) / predicted_ms, so n - 1 is the runtime's
 *                            own figure and the client's definition alike.
 *   headline = the runtime's own where reported, the client's otherwise.
 * Token counts come from the server (rule 3); the client's chunk count is kept
 * beside them and a disagreement is flagged. Decode rates are blank (NAN) below
 * METRICS_MIN_DECODE_TOKENS generated tokens (rule 5), and so is every
 * segment of the decode curve: a segment holds at least that many tokens
 * (metrics_segment_ends); inter-token figures are withheld when the stream is
 * buffered (rule 6). The in-process bench (engine_bench.h) follows the same
 * minimum and cuts its curve with the same function. */
#ifndef TM_METRICS_H
#define TM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "record/keys.h"

/* docs/design.md rule 5: no decode rate from fewer generated tokens. The one
 * constant the server bench, the in-process bench and the report's reader
 * (src/analysis/series.c) use. */
#define METRICS_MIN_DECODE_TOKENS RECORD_MIN_DECODE_TOKENS /* rule 5: record/keys.h */
#define METRICS_STR_(x) #x
#define METRICS_STR(x) METRICS_STR_(x)
/* The footnote every table puts under a decode cell blank by rule 5. */
#define METRICS_FEW_TOKENS_NOTE                                                   \
  "decode blank by rule: < " METRICS_STR(METRICS_MIN_DECODE_TOKENS)               \
  " generated tokens say nothing reliable about the decode rate"
#define METRICS_MAX_SEGMENTS 8
/* Server tokens vs client tokens: llama.cpp streamed exactly one non-empty delta
 * per token in every fixture (64/64, 32/32, 400/400, 48/48); 1 leaves room for
 * a token a server counts but never streams (end of generation, a held-back
 * stop-string prefix). */
#define METRICS_COUNT_TOLERANCE 1

/* Consistency of the server's figures with each other and with the client's
 * observations (see run_metrics_compute). A run that breaks one fails with
 * RUN_ERR_INCONSISTENT; the figure it contradicts is blanked in its metrics.
 *   plausible (each request, calibration included): completion tokens at most
 *     max_tokens + 1 (a runtime may count its stop token); cached tokens at
 *     most the prompt's; prompt tokens within METRICS_PROMPT_TOL_* of the
 *     tokenizer's count where one was made (expected_prompt_tokens);
 *   counts: the runtime's two counts of one thing (llama.cpp timings.predicted_n
 *     vs usage.completion_tokens; timings.prompt_n above usage.prompt_tokens)
 *     differ by more than METRICS_COUNT_TOLERANCE; or the server's generated
 *     count is below the streamed pieces (each non-empty piece is at least one
 *     token) or above the streamed text's bytes (each token of the answer is
 *     at least one byte; the slack covers accepted speculative drafts
 *     (draft_n_accepted), a reasoning field's stripped tags and reported
 *     reasoning tokens (OpenAI's reasoning models count reasoning they never
 *     stream); the bytes rule holds with no piece streamed at all). More tokens
 *     than pieces alone is no contradiction (a server may send several tokens
 *     per event): count_mismatch notes it and the server's count is used;
 *   timers (a server timer is a duration inside the client's wait):
 *     - no timer is negative or non-finite;
 *     - prompt time <= client TTFT (the prompt is read between the request's
 *       arrival and the first token's departure);
 *     - prompt time + generation time <= client time to the last token + one
 *       decode step (a runtime that counts the end of generation without
 *       streaming it, Ollama or llama.cpp-style timings without ignore_eos,
 *       times one step past the last piece); the step is the larger of the
 *       median gap between pieces and generation time / generated count;
 *     - the server's decode rate <= BUFFERED_APPARENT_TOK_S (20,000 tok/s, a
 *       rate no single stream reaches), on any stream shape;
 *     - on a token-by-token stream, generation time >= half of median gap x
 *       (pieces - 1) (tokens stream as they are made; the half is room for the
 *       server's output pipeline; the median, not the raw span, so a one-off
 *       client or network stall does not count; the median is at most twice
 *       the mean gap, so this never asks more than the raw span did);
 *     - on a token-by-token stream without speculation reported (draft_n /
 *       draft_n_accepted > 0), prompt time >= half the median gap between
 *       pieces (reading a prompt is at least one forward pass, which reads
 *       every active weight, as a decode step does; a draft + verify round is
 *       longer than a plain step, so the bound is skipped under speculation);
 *     each with METRICS_TIMER_TOL_MS + METRICS_TIMER_TOL_REL of the client
 *     figure of room for clock granularity (timers rounded to the ms). */
#define METRICS_TIMER_TOL_MS 2.0
#define METRICS_TIMER_TOL_REL 0.02
#define METRICS_TIMER_MIN_FRACTION 0.5

enum cache_verdict {
  CACHE_UNKNOWN = 0,  /* the server reports no cached-token counter */
  CACHE_CLEAN,        /* cached tokens 0 */
  CACHE_BASELINE,     /* cached tokens <= the calibrated shared prefix (chat
                         template before the nonce): expected, not a flag */
  CACHE_HIT,          /* cached tokens reach past the nonce: prefill figures of
                         this run are not a measurement (excluded unless
                         --allow-cache) */
};

enum stream_verdict {
  STREAM_UNKNOWN = 0,    /* too few chunks to tell */
  STREAM_TOKEN_BY_TOKEN, /* about one token per chunk, gaps spread over time */
  STREAM_BUFFERED,       /* many tokens per chunk, or everything in a burst:
                            inter-token figures are withheld */
};

const char *cache_verdict_name(enum cache_verdict v);   /* "cache:unknown"... */
const char *stream_verdict_name(enum stream_verdict v); /* "stream:buffered"... */

struct decode_segment {
  uint32_t from, to;  /* generated-token indices, 1-based, inclusive */
  double tok_s;       /* client decode rate over the segment */
};

/* Prompt tokens reported against the server's own tokenizer's count of the
 * prompt sent (plus the chat template's tokens): further apart than this is
 * RUN_CHECK_PROMPT_COUNT_OFF. The slack covers the text varying between the
 * request counted and the one sent (another nonce, other filler words). */
#define METRICS_PROMPT_TOL_TOKENS 8
#define METRICS_PROMPT_TOL_REL 0.15

struct metrics_options {
  int64_t cache_baseline_tokens; /* calibrated shared prefix; -1 = not calibrated */
  double expected_prompt_tokens; /* the server's tokenizer's count of this request's
                                    prompt, template included; NAN = not counted */
  uint32_t min_decode_tokens;    /* METRICS_MIN_DECODE_TOKENS by default */
  /* Segment boundaries (last token of each segment), e.g. {50, 200, 400};
   * n_bounds 0 = the default {1-50, 51-200, 201-...}. Tokens past the last
   * bound form a tail segment to the end; segments stop at the generated
   * count, and each holds at least min_decode_tokens (metrics_segment_ends: a
   * shorter one joins the next, a short remainder the one before it). A
   * segment's rate runs from the last chunk before it (the first chunk, for
   * 1-...) to its last chunk, so segments partition the decode span; it needs
   * 2 such arrivals. Only on token-by-token streams with at least
   * min_decode_tokens generated. */
  uint32_t segment_bounds[METRICS_MAX_SEGMENTS];
  size_t n_bounds;
};
void metrics_options_init(struct metrics_options *o);

struct run_metrics {
  bool ok;                     /* the run succeeded: run_result.error == RUN_OK and
                                  the server's figures are consistent */
  enum run_error error;        /* run_result.error, or RUN_ERR_INCONSISTENT (the
                                  method's verdict; summaries count failures by kind) */
  enum run_check check;        /* RUN_ERR_INCONSISTENT: the rule broken (the
                                  dialect's, or the first of the method's) */
  char error_msg[256];         /* RUN_ERR_INCONSISTENT: which figure contradicts
                                  which; "" otherwise */

  /* Tokens: server-reported (-1 = not reported) and client-counted. */
  int64_t prompt_tokens, cached_tokens, prompt_processed;
  int64_t completion_tokens;   /* server */
  int64_t reasoning_tokens;    /* server when reported, else client estimate */
  bool reasoning_from_client;  /* reasoning_tokens is the client's chunk count */
  uint32_t client_chunks;      /* text-bearing chunks */
  uint32_t client_tokens;      /* tokens in them: 1 per chunk, or the chunk's own
                                  n_tokens when the server says (llama.cpp native) */
  int64_t generated_tokens;    /* the count the decode rates use: completion_tokens,
                                  or client_tokens when the server reported none */
  bool completion_from_client; /* generated_tokens is the client's count */
  uint32_t client_reasoning_chunks; /* reasoning field or inside <think> tags */
  uint32_t client_answer_chunks;
  bool count_mismatch;         /* server completion_tokens and client_tokens differ
                                  by more than METRICS_COUNT_TOLERANCE (more when
                                  reasoning came in its own field) on a
                                  token-by-token stream */
  bool reasoning_ate_budget;   /* reasoning used most (>= 90%) of max_tokens */

  /* Times, ms; NAN = not available. */
  double ttft_ms;              /* client */
  double last_ms;              /* t_last - t_send */
  double decode_span_ms;       /* t_last - t_first */
  double server_prompt_ms, server_predicted_ms, server_load_ms;
  double connect_ms;           /* fresh connection handshake, apart (NAN if reused) */

  /* Rates, tok/s; NAN = blank. */
  double prefill_server, prefill_client;
  double decode_server, decode_client; /* client: only on STREAM_TOKEN_BY_TOKEN
                                          (rule 6: not token-by-token = no
                                          inter-token figure) */
  double prefill_headline, decode_headline;
  const char *prefill_source;  /* "server" / "client" / "" */
  const char *decode_source;
  double ttft_gap_ms;          /* client TTFT - server prompt time (the gap rule 7
                                  asks to show); NAN when no server timer */

  size_t n_segments;
  struct decode_segment segments[METRICS_MAX_SEGMENTS];

  /* Stream shape. */
  enum stream_verdict stream;
  double tokens_per_chunk;     /* completion tokens / text chunks */
  double median_gap_ms, max_gap_ms; /* between consecutive text chunks */

  enum cache_verdict cache;
  bool prefill_excluded;       /* CACHE_HIT: not to be used in prefill figures */
};

/* The decode curve's cut (rule 5 applied to each segment): the last token of
 * each segment of a decode of `total` tokens, from candidate ends (increasing;
 * one not above the previous kept end is skipped, ends at or past total are
 * ignored), so that every segment holds at least min_tokens: a segment that
 * would be shorter runs on to the next candidate end, and a remainder that
 * would be shorter joins the segment before it. The last end is always total.
 * At most cap ends (the last segment absorbs the rest). Returns the count, 0
 * when total < min_tokens (no curve: no rate at all) or cap is 0. */
size_t metrics_segment_ends(const uint32_t *candidates, size_t n_candidates, uint32_t total,
                            uint32_t min_tokens, uint32_t *ends, size_t cap);

/* req may be NULL (then max_tokens is unknown and the budget warning is off).
 * Never fails: missing inputs give NAN/-1 fields and UNKNOWN verdicts. */
void run_metrics_compute(const struct run_result *r, const struct backend_request *req,
                         const struct metrics_options *opt, struct run_metrics *m);

/* Splits content text on inline <think>...</think> tags across chunks: for each
 * chunk of r, out_reasoning[i] = true when that chunk's text is reasoning
 * (reasoning field, or content inside an open <think> block; a chunk holding
 * the closing tag counts as reasoning). out_reasoning has r->n_chunks entries. */
void metrics_classify_chunks(const struct run_result *r, bool *out_reasoning);
/* The answer alone (what an expected answer is checked against): the
 * content chunks' text with inline <think>...</think> blocks removed (an
 * unclosed block runs to the end; a "</think>" before any "<think>" ends a
 * block the template opened), reasoning-field text never included.
 * malloc'd ("" when there is none); NULL when out of memory. */
char *metrics_answer_text(const struct run_result *r);

#endif
