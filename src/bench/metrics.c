/* metrics: one run's figures and verdicts from a backend's run_result (see
 * metrics.h for the definitions). Pure computation: no I/O, never fails; a
 * missing input gives a NAN / -1 field and an UNKNOWN verdict, never a guess.
 *
 * Layout: chunk classification (reasoning vs answer, inline <think> tags split
 * anywhere), the stream verdict, the decode curve, then run_metrics_compute
 * which ties them together in the order the definitions depend on each other. */
#include "bench/metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"

/* Stream-verdict thresholds (rule 6).
 * - BUFFERED_TOKENS_PER_CHUNK: a token-by-token server sends ~1 token per event
 *   (llama.cpp: exactly 1 in every fixture); servers that coalesce a little
 *   (speculative decoding's accepted drafts, vLLM's stream interval, UTF-8
 *   pieces held back) stay at 1-3. At 4 or more tokens per event the arrival
 *   times no longer say when tokens were made.
 * - BUFFERED_MAX_CHUNKS: <= 2 text events for a stream of >= min_decode_tokens
 *   tokens is a reply delivered whole (a proxy or a non-streaming path), even
 *   if the server's count is missing and the ratio above cannot be computed.
 * - BUFFERED_APPARENT_TOK_S: no single stream decodes anywhere near 20,000
 *   tok/s (the fastest hosted single-stream decode is a few thousand); an
 *   apparent rate above it, over the whole span or per median gap, means the
 *   events were released in bursts ("tens of thousands of tok/s means the
 *   server or a proxy buffered the stream").
 * - TOKEN_BY_TOKEN_MIN_CHUNKS: with fewer than 8 events the gaps are too few to
 *   call the shape either way. */
#define BUFFERED_TOKENS_PER_CHUNK 4.0
#define BUFFERED_MAX_CHUNKS 2
#define BUFFERED_APPARENT_TOK_S 20000.0
#define TOKEN_BY_TOKEN_MIN_CHUNKS 8

/* A reasoning field takes the server's parser's tags (<think>, </think>) and
 * the whitespace after them off the stream while the server still counts them
 * as generated tokens: allow a few more before calling the counts different.
 * (No reasoning fixture exists yet: this allowance is from how the parsers
 * work, not a measurement.) */
#define REASONING_FIELD_EXTRA_TOLERANCE 3

/* Cache verdict without a calibrated baseline: a fresh nonce keeps the cached
 * prefix to the chat template (14 of 46 tokens in the generate-400 fixture);
 * a repeated prompt is cached almost whole (818 of 819). More than half the
 * prompt cached is called a hit. Conservative on purpose: a long system prompt
 * before the nonce can exceed half; calibration is the real answer. */
#define UNCALIBRATED_HIT_FRACTION 0.5

const char *cache_verdict_name(enum cache_verdict v) {
  switch (v) {
  case CACHE_CLEAN: return "cache:clean";
  case CACHE_BASELINE: return "cache:baseline";
  case CACHE_HIT: return "cache:hit";
  case CACHE_UNKNOWN: break;
  }
  return "cache:unknown";
}

const char *stream_verdict_name(enum stream_verdict v) {
  switch (v) {
  case STREAM_TOKEN_BY_TOKEN: return "stream:token-by-token";
  case STREAM_BUFFERED: return "stream:buffered";
  case STREAM_UNKNOWN: break;
  }
  return "stream:unknown";
}

void metrics_options_init(struct metrics_options *o) {
  memset(o, 0, sizeof *o);
  o->cache_baseline_tokens = -1;
  o->expected_prompt_tokens = NAN;
  o->min_decode_tokens = METRICS_MIN_DECODE_TOKENS;
  o->n_bounds = 0;
}

/* ------------------------------------------------------ chunk classification */

static const char THINK_OPEN[] = "<think>";
static const char THINK_CLOSE[] = "</think>";

/* One byte into a streaming matcher for tag (whose only '<' is its first byte,
 * so a mismatch restarts at 0, or at 1 on a '<'). True when the tag completes. */
static bool tag_step(size_t *pos, const char *tag, size_t len, char c) {
  if (c == tag[*pos]) {
    if (++*pos == len) {
      *pos = 0;
      return true;
    }
    return false;
  }
  *pos = (c == tag[0]) ? 1 : 0;
  return false;
}

/* Marks as reasoning content chunk i and the content chunks before it that
 * hold bytes at or after global content offset tag_start (a tag split across
 * chunks: "<thi" + "nk>" marks both). i_start is chunk i's global offset. */
static void mark_back(const struct run_result *r, bool *out, size_t i, uint64_t i_start,
                      uint64_t tag_start) {
  out[i] = true;
  uint64_t g = i_start;
  size_t k = i;
  while (g > tag_start && k > 0) {
    k--;
    if (r->chunks[k].field != CHUNK_CONTENT) continue;
    g -= r->chunks[k].text_len;
    out[k] = true;
  }
}

void metrics_classify_chunks(const struct run_result *r, bool *out_reasoning) {
  /* The content chunks are read as one stream (reasoning-field chunks are not
   * part of it), so tags split anywhere are found. Rules:
   *  - "<think>" opens a block; everything to the matching "</think>" (the
   *    chunk holding it included) is reasoning; an unclosed block runs to the end;
   *  - a "</think>" before any "<think>" (templates that open the block in the
   *    prompt, so the model only writes the close) makes everything before it
   *    reasoning;
   *  - a chunk holding part of a tag is reasoning. */
  bool inside = false, seen_tag = false;
  size_t open_pos = 0, close_pos = 0;
  uint64_t g = 0; /* global offset of the next content byte */
  for (size_t i = 0; i < r->n_chunks; i++) {
    const struct run_chunk *c = &r->chunks[i];
    if (c->field != CHUNK_CONTENT) {
      out_reasoning[i] = true;
      continue;
    }
    out_reasoning[i] = inside;
    uint64_t start = g;
    const char *t = NULL;
    if (r->text && (size_t)c->text_off + c->text_len <= r->text_len) t = r->text + c->text_off;
    for (uint32_t j = 0; j < c->text_len; j++, g++) {
      char ch = t ? t[j] : '\0';
      if (!inside) {
        if (tag_step(&open_pos, THINK_OPEN, sizeof THINK_OPEN - 1, ch)) {
          inside = true;
          seen_tag = true;
          close_pos = 0;
          mark_back(r, out_reasoning, i, start, g + 1 - (sizeof THINK_OPEN - 1));
        } else if (tag_step(&close_pos, THINK_CLOSE, sizeof THINK_CLOSE - 1, ch) && !seen_tag) {
          seen_tag = true;
          open_pos = 0;
          for (size_t k = 0; k <= i; k++)
            if (r->chunks[k].field == CHUNK_CONTENT) out_reasoning[k] = true;
        }
      } else if (tag_step(&close_pos, THINK_CLOSE, sizeof THINK_CLOSE - 1, ch)) {
        inside = false;
        open_pos = 0;
        close_pos = 0;
        out_reasoning[i] = true;
      }
    }
  }
}

char *metrics_answer_text(const struct run_result *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_chunks; i++)
    if (r->chunks[i].field == CHUNK_CONTENT) n += r->chunks[i].text_len;
  char *t = malloc(n + 1), *w = t;
  if (!t) return NULL;
  for (size_t i = 0; i < r->n_chunks; i++) {
    const struct run_chunk *c = &r->chunks[i];
    if (c->field != CHUNK_CONTENT || !r->text || (size_t)c->text_off + c->text_len > r->text_len)
      continue;
    memcpy(w, r->text + c->text_off, c->text_len);
    w += c->text_len;
  }
  *w = '\0';
  /* a close before any open: the template opened the block */
  char *open = strstr(t, THINK_OPEN), *close = strstr(t, THINK_CLOSE);
  if (close && (!open || close < open))
    memmove(t, close + sizeof THINK_CLOSE - 1, strlen(close + sizeof THINK_CLOSE - 1) + 1);
  while ((open = strstr(t, THINK_OPEN)) != NULL) {
    close = strstr(open, THINK_CLOSE);
    if (!close) {
      *open = '\0';
      break;
    }
    const char *rest = close + sizeof THINK_CLOSE - 1;
    memmove(open, rest, strlen(rest) + 1);
  }
  return t;
}

/* ------------------------------------------------------------ decode curve */

static double ns_to_ms(uint64_t ns) { return (double)ns / 1e6; }

size_t metrics_segment_ends(const uint32_t *candidates, size_t n_candidates, uint32_t total,
                            uint32_t min_tokens, uint32_t *ends, size_t cap) {
  if (cap == 0 || total == 0 || total < min_tokens) return 0;
  size_t n = 0;
  uint32_t from = 1; /* first token of the segment being cut */
  for (size_t i = 0; i < n_candidates && n + 1 < cap; i++) {
    uint32_t e = candidates[i];
    if (e < from) continue;   /* not increasing: skip the bad one */
    if (e >= total) break;    /* the last segment ends at total anyway */
    if (e - from + 1 < min_tokens) continue; /* too short: on to the next end */
    if (total - e < min_tokens) break;       /* the rest would be too short: joins */
    ends[n++] = e;
    from = e + 1;
  }
  ends[n++] = total;
  return n;
}

/* tok_end[k] = generated-token index (1-based) of chunk k's last token. */
static void decode_segments(const struct run_result *r, const uint32_t *tok_end,
                            const struct metrics_options *opt, uint32_t min_decode,
                            struct run_metrics *m) {
  static const uint32_t default_bounds[] = {50, 200};
  const uint32_t *bounds = opt->n_bounds ? opt->segment_bounds : default_bounds;
  size_t n_bounds = opt->n_bounds ? opt->n_bounds : 2;
  if (n_bounds > METRICS_MAX_SEGMENTS) n_bounds = METRICS_MAX_SEGMENTS;
  uint32_t total = r->n_chunks ? tok_end[r->n_chunks - 1] : 0;
  uint32_t ends[METRICS_MAX_SEGMENTS];
  size_t n_ends = metrics_segment_ends(bounds, n_bounds, total, min_decode, ends,
                                       METRICS_MAX_SEGMENTS);

  uint32_t from = 1;
  size_t k = 0; /* first chunk not yet used */
  for (size_t s = 0; s < n_ends; s++) {
    uint32_t to = ends[s];
    /* Points: the last chunk before the segment (its end is the segment's
     * start, so consecutive segments partition the decode span), then every
     * chunk whose last token falls inside it. */
    size_t first_pt = (k > 0) ? k - 1 : k;
    size_t last_pt = k;
    while (last_pt < r->n_chunks && tok_end[last_pt] <= to) last_pt++;
    /* chunks [k, last_pt) end inside [from, to] */
    size_t n_pts = last_pt - first_pt;
    if (n_pts >= 2) {
      uint64_t t0 = r->chunks[first_pt].t_ns, t1 = r->chunks[last_pt - 1].t_ns;
      double dt_s = (t1 > t0) ? (double)(t1 - t0) / 1e9 : 0;
      double dn = (double)tok_end[last_pt - 1] - (double)tok_end[first_pt];
      if (dt_s > 0 && dn > 0) {
        struct decode_segment *seg = &m->segments[m->n_segments++];
        seg->from = from;
        seg->to = to;
        seg->tok_s = dn / dt_s;
      }
    }
    k = last_pt;
    from = to + 1;
  }
}

/* ---------------------------------------------------------------- verdicts */

static enum stream_verdict stream_shape(const struct run_metrics *m, uint32_t min_decode) {
  uint32_t n = m->client_chunks;
  int64_t tokens = m->generated_tokens;
  if (n == 0) return STREAM_UNKNOWN;
  if (isfinite(m->tokens_per_chunk) && m->tokens_per_chunk >= BUFFERED_TOKENS_PER_CHUNK)
    return STREAM_BUFFERED;
  if (tokens >= (int64_t)min_decode && n <= BUFFERED_MAX_CHUNKS) return STREAM_BUFFERED;
  if (tokens >= (int64_t)min_decode && n >= 2) {
    /* The whole span, and the typical gap, at an impossible rate. */
    if (!(m->decode_span_ms > 0)) return STREAM_BUFFERED;
    if ((double)(tokens - 1) / (m->decode_span_ms / 1e3) > BUFFERED_APPARENT_TOK_S)
      return STREAM_BUFFERED;
    if (isfinite(m->median_gap_ms) && m->median_gap_ms < 1e3 / BUFFERED_APPARENT_TOK_S)
      return STREAM_BUFFERED;
  }
  if (n >= TOKEN_BY_TOKEN_MIN_CHUNKS) return STREAM_TOKEN_BY_TOKEN;
  return STREAM_UNKNOWN;
}

static enum cache_verdict cache_shape(int64_t cached, int64_t prompt, int64_t baseline) {
  if (cached < 0) return CACHE_UNKNOWN;
  if (cached == 0) return CACHE_CLEAN;
  if (baseline >= 0) return cached <= baseline ? CACHE_BASELINE : CACHE_HIT;
  /* Not calibrated: see UNCALIBRATED_HIT_FRACTION. An unknown prompt size
   * cannot show the cached part stops before the nonce: called a hit. */
  if (prompt <= 0) return CACHE_HIT;
  return (double)cached > UNCALIBRATED_HIT_FRACTION * (double)prompt ? CACHE_HIT : CACHE_BASELINE;
}

/* ------------------------------------------------------------ consistency */

static bool field_reasoning_any(const struct run_result *r) {
  for (size_t i = 0; r->chunks && i < r->n_chunks; i++)
    if (r->chunks[i].field == CHUNK_REASONING) return true;
  return false;
}

static void inconsistent(struct run_metrics *m, enum run_check rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void inconsistent(struct run_metrics *m, enum run_check rule, const char *fmt, ...) {
  if (m->error == RUN_ERR_INCONSISTENT) return; /* the first contradiction is the reason */
  m->ok = false;
  m->error = RUN_ERR_INCONSISTENT;
  m->check = rule;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->error_msg, sizeof m->error_msg, fmt, ap);
  va_end(ap);
}

static double tol_of(double client_ms) {
  return METRICS_TIMER_TOL_MS + METRICS_TIMER_TOL_REL * (isfinite(client_ms) ? client_ms : 0);
}

/* The headlines: the runtime's own figure where reported, else the client's
 * (again after check_consistency blanked one). */
static void pick_headlines(struct run_metrics *m) {
  m->prefill_headline = m->decode_headline = NAN;
  m->prefill_source = m->decode_source = "";
  if (isfinite(m->prefill_server)) {
    m->prefill_headline = m->prefill_server;
    m->prefill_source = "server";
  } else if (isfinite(m->prefill_client)) {
    m->prefill_headline = m->prefill_client;
    m->prefill_source = "client";
  }
  if (isfinite(m->decode_server)) {
    m->decode_headline = m->decode_server;
    m->decode_source = "server";
  } else if (isfinite(m->decode_client)) {
    m->decode_headline = m->decode_client;
    m->decode_source = "client";
  }
}

/* Counts that cannot be, whatever the timers say (issue 31): more generated
 * tokens than max_tokens allowed (one more is the stop token some runtimes
 * count), more cached prompt tokens than the prompt has. Calibration
 * requests are judged the same way: they set the cache baseline. */
static void check_plausible(const struct run_result *r, const struct backend_request *req,
                            const struct metrics_options *opt, struct run_metrics *m) {
  if (!m->ok) return;
  const double want = opt->expected_prompt_tokens;
  if (req && req->max_tokens > 0 && r->completion_tokens > (int64_t)req->max_tokens + 1) {
    inconsistent(m, RUN_CHECK_ABOVE_MAX_TOKENS, "the server reports %lld generated tokens (usage) "
                    "for max_tokens %u: more than it may generate",
                 (long long)r->completion_tokens, req->max_tokens);
  } else if (r->cached_tokens >= 0 && r->prompt_tokens >= 0 && r->cached_tokens > r->prompt_tokens) {
    inconsistent(m, RUN_CHECK_CACHED_ABOVE_PROMPT, "the server reports %lld cached tokens of a "
                    "%lld-token prompt (usage)",
                 (long long)r->cached_tokens, (long long)r->prompt_tokens);
  } else if (r->prompt_tokens >= 0 && isfinite(want) && want > 0 &&
             fabs((double)r->prompt_tokens - want) >
                 METRICS_PROMPT_TOL_TOKENS + METRICS_PROMPT_TOL_REL * want) {
    inconsistent(m, RUN_CHECK_PROMPT_COUNT_OFF, "the server reports a %lld-token prompt (usage) "
                    "where its own tokenizer counts about %.0f (template included)",
                 (long long)r->prompt_tokens, want);
  } else {
    return;
  }
  /* Blank what the broken count feeds (the run failed; its record keeps no
   * figure drawn from a lie). */
  if (m->check == RUN_CHECK_ABOVE_MAX_TOKENS) {
    m->decode_server = NAN;
    if (!m->completion_from_client) m->decode_client = NAN;
  } else {
    m->prefill_server = m->prefill_client = NAN;
    m->ttft_gap_ms = NAN;
  }
  pick_headlines(m);
}

/* The rules are listed in metrics.h (METRICS_TIMER_*). Only a run the backend
 * called good is judged; the first contradiction found is its reason, and
 * every figure a contradicted count or timer feeds is blanked. */
static void check_consistency(const struct run_result *r, struct run_metrics *m,
                              bool enough_chunks, bool field_reasoning) {
  if (!m->ok) return;
  bool bad_decode_count = false, bad_prompt_count = false;
  bool bad_prompt_timer = false, bad_decode_timer = false;
  const int64_t tol = METRICS_COUNT_TOLERANCE;

  /* The runtime's two counts of one thing. */
  if (r->timings_predicted_n >= 0 && r->completion_tokens >= 0 &&
      llabs(r->timings_predicted_n - r->completion_tokens) > tol) {
    inconsistent(m, RUN_CHECK_COUNTS_DISAGREE, "the server's counts disagree: timings.predicted_n %lld, generated tokens "
                    "%lld (usage)", (long long)r->timings_predicted_n,
                 (long long)r->completion_tokens);
    bad_decode_count = true;
  }
  if (r->timings_prompt_n >= 0 && r->prompt_tokens >= 0 &&
      r->timings_prompt_n > r->prompt_tokens + tol) {
    inconsistent(m, RUN_CHECK_COUNTS_DISAGREE, "the server's counts disagree: timings.prompt_n %lld evaluated of a %lld-token "
                    "prompt (usage)", (long long)r->timings_prompt_n, (long long)r->prompt_tokens);
    bad_prompt_count = true;
  }
  /* The server's generated count against the pieces streamed: the bytes
   * rule holds with no piece at all (a count with nothing streamed). Hidden
   * reasoning (OpenAI's reasoning models: usage.completion_tokens includes
   * completion_tokens_details.reasoning_tokens, never streamed) is slack. */
  if (m->completion_tokens >= 0) {
    int64_t pieces = (int64_t)m->client_tokens;
    int64_t extra = tol + (field_reasoning ? REASONING_FIELD_EXTRA_TOLERANCE : 0) +
                    (r->draft_n_accepted > 0 ? r->draft_n_accepted : 0) +
                    (r->reasoning_tokens > 0 ? r->reasoning_tokens : 0);
    if (m->client_chunks > 0 && m->completion_tokens < pieces) {
      inconsistent(m, RUN_CHECK_PIECES_ABOVE_COUNT, "the server reports %lld generated tokens but streamed %lld non-empty "
                      "pieces (each is at least one token)", (long long)m->completion_tokens,
                   (long long)pieces);
      bad_decode_count = true;
    } else if (m->completion_tokens > (int64_t)r->text_len + extra) {
      /* More tokens than pieces is not by itself a lie: a server may send
       * two or three tokens per event without saying so (vLLM's
       * --stream-interval), which count_mismatch notes. More tokens than
       * bytes of text is: every token of the answer decodes to at least one
       * byte (byte-fallback pieces of a character included). */
      inconsistent(m, RUN_CHECK_COUNT_ABOVE_TEXT, "the server reports %lld generated tokens but streamed %zu bytes of text "
                      "(every token is at least one byte): the count contradicts the stream",
                   (long long)m->completion_tokens, r->text_len);
      bad_decode_count = true;
    }
  }

  /* Timers: values that cannot be durations. */
  double sp = m->server_prompt_ms, sd = m->server_predicted_ms;
  bool have_sp = !isnan(sp), have_sd = !isnan(sd);
  if (have_sp && !(isfinite(sp) && sp >= 0)) {
    inconsistent(m, RUN_CHECK_TIMER_NOT_DURATION, "the server's prompt time is %.3g ms: not a duration", sp);
    bad_prompt_timer = true;
  }
  if (have_sd && !(isfinite(sd) && sd >= 0)) {
    inconsistent(m, RUN_CHECK_TIMER_NOT_DURATION, "the server's generation time is %.3g ms: not a duration", sd);
    bad_decode_timer = true;
  }
  /* Upper bounds: inside the client's wait. */
  if (!bad_prompt_timer && have_sp && isfinite(m->ttft_ms) && sp > m->ttft_ms + tol_of(m->ttft_ms)) {
    inconsistent(m, RUN_CHECK_TIMER_BEYOND_CLOCK, "the server's prompt time %.1f ms exceeds the client's time to first token "
                    "%.1f ms: the prompt cannot take longer than the wait for the first token",
                 sp, m->ttft_ms);
    bad_prompt_timer = true;
  }
  if (!bad_decode_timer && have_sd && isfinite(m->last_ms)) {
    double both = sd + (!bad_prompt_timer && have_sp ? sp : 0);
    /* One decode step past the last piece: a runtime that counts the end of
     * generation without streaming it (Ollama; llama.cpp-style timings when
     * ignore_eos is not honoured) times that step too. A step is the larger
     * of the median gap and the server's own time per generated token (two
     * or more: with one, nothing is past the piece). */
    double step = isfinite(m->median_gap_ms) && m->median_gap_ms > 0 ? m->median_gap_ms : 0;
    if (m->completion_tokens >= 2 && sd / (double)m->completion_tokens > step)
      step = sd / (double)m->completion_tokens;
    if (both > m->last_ms + step + tol_of(m->last_ms)) {
      inconsistent(m, RUN_CHECK_TIMER_BEYOND_CLOCK, "the server's %s %.1f ms exceeds the client's time to the last token "
                      "%.1f ms and one decode step (%.1f ms)",
                   have_sp && !bad_prompt_timer ? "prompt + generation time" : "generation time",
                   both, m->last_ms, step);
      bad_decode_timer = true;
    }
  }
  /* A server decode figure no single stream reaches (BUFFERED_APPARENT_TOK_S):
   * the timer is too short for the tokens, whatever the stream's shape. */
  if (!bad_decode_timer && !bad_decode_count && isfinite(m->decode_server) &&
      m->decode_server > BUFFERED_APPARENT_TOK_S) {
    inconsistent(m, RUN_CHECK_TIMER_BELOW_STREAM, "the server's decode rate %.0f tok/s (%lld tokens in %.3g ms) is above "
                    "%.0f tok/s, which no single stream reaches",
                 m->decode_server, (long long)m->completion_tokens, sd, BUFFERED_APPARENT_TOK_S);
    bad_decode_timer = true;
  }
  /* Lower bounds: only where the pieces arrived one by one. */
  if (m->stream == STREAM_TOKEN_BY_TOKEN && enough_chunks) {
    /* The typical span, median gap x (pieces - 1), not the raw one: a stall
     * of the client or the network stretches the raw span, not the median.
     * (For gaps >= 0 the median is at most twice the mean, so this is never
     * above twice the raw span: it stays sound where the raw span was.) */
    double typical = m->median_gap_ms * (double)(m->client_chunks - 1);
    if (!bad_decode_timer && have_sd && typical > 0 &&
        sd < METRICS_TIMER_MIN_FRACTION * typical - tol_of(0)) {
      inconsistent(m, RUN_CHECK_TIMER_BELOW_STREAM, "the server's generation time %.3g ms is under half the %.1f ms its %u "
                      "pieces took at the median gap between them (%.2f ms)",
                   sd, typical, m->client_chunks, m->median_gap_ms);
      bad_decode_timer = true;
    }
    /* Speculation (draft_n / draft_n_accepted reported): a draft + verify
     * round is longer than a plain step, so the gap says nothing about one
     * forward pass. */
    bool speculative = r->draft_n > 0 || r->draft_n_accepted > 0;
    if (!bad_prompt_timer && !speculative && have_sp && m->prompt_processed > 0 &&
        m->median_gap_ms > 0 &&
        sp < METRICS_TIMER_MIN_FRACTION * m->median_gap_ms - tol_of(0) / 2) {
      inconsistent(m, RUN_CHECK_TIMER_BELOW_STREAM, "the server's prompt time %.3g ms for %lld tokens is under half a decode "
                      "step (median gap between pieces %.2f ms): reading a prompt is at least one "
                      "forward pass", sp, (long long)m->prompt_processed, m->median_gap_ms);
      bad_prompt_timer = true;
    }
  }

  /* Blank what a contradicted figure feeds. */
  if (bad_prompt_count || bad_prompt_timer) {
    m->prefill_server = NAN;
    m->ttft_gap_ms = NAN;
  }
  if (bad_prompt_count) m->prefill_client = NAN;
  if (bad_decode_count || bad_decode_timer) m->decode_server = NAN;
  if (bad_decode_count && !m->completion_from_client) m->decode_client = NAN;
  pick_headlines(m);
}

/* ------------------------------------------------------------------ compute */

static double first_finite(double a, double b, double c) {
  return isfinite(a) ? a : isfinite(b) ? b : c;
}

void run_metrics_compute(const struct run_result *r, const struct backend_request *req,
                         const struct metrics_options *opt_in, struct run_metrics *m) {
  struct metrics_options defaults;
  if (!opt_in) {
    metrics_options_init(&defaults);
    opt_in = &defaults;
  }
  const struct metrics_options *opt = opt_in;
  uint32_t min_decode = opt->min_decode_tokens ? opt->min_decode_tokens : METRICS_MIN_DECODE_TOKENS;

  memset(m, 0, sizeof *m);
  m->ok = (r->error == RUN_OK);
  m->error = r->error;
  m->check = r->check;
  if (r->error == RUN_ERR_INCONSISTENT) /* a dialect's verdict: its words, for the summary */
    snprintf(m->error_msg, sizeof m->error_msg, "%.*s", (int)sizeof m->error_msg - 1, r->error_msg);
  m->ttft_ms = m->last_ms = m->decode_span_ms = NAN;
  m->server_prompt_ms = m->server_predicted_ms = m->server_load_ms = m->connect_ms = NAN;
  m->prefill_server = m->prefill_client = m->decode_server = m->decode_client = NAN;
  m->prefill_headline = m->decode_headline = NAN;
  m->prefill_source = m->decode_source = "";
  m->ttft_gap_ms = NAN;
  m->tokens_per_chunk = m->median_gap_ms = m->max_gap_ms = NAN;

  /* --- chunks: kinds, token indices, times */
  size_t n = r->chunks ? r->n_chunks : 0;
  bool *reasoning = n ? malloc(n * sizeof *reasoning) : NULL;
  uint32_t *tok_end = n ? malloc(n * sizeof *tok_end) : NULL;
  if (reasoning) metrics_classify_chunks(r, reasoning);
  uint32_t client_tokens = 0, client_reasoning_tokens = 0;
  for (size_t i = 0; i < n; i++) {
    const struct run_chunk *c = &r->chunks[i];
    uint32_t nt = c->n_tokens ? c->n_tokens : 1;
    client_tokens += nt;
    if (tok_end) tok_end[i] = client_tokens;
    /* Without memory for the inline-tag scan, only the field says reasoning. */
    bool is_reasoning = reasoning ? reasoning[i] : (c->field == CHUNK_REASONING);
    if (is_reasoning) {
      m->client_reasoning_chunks++;
      client_reasoning_tokens += nt;
    } else {
      m->client_answer_chunks++;
    }
  }
  m->client_chunks = (uint32_t)n;
  m->client_tokens = client_tokens;

  if (n > 0) {
    uint64_t t_first = r->chunks[0].t_ns, t_last = r->chunks[n - 1].t_ns;
    if (r->t_send_ns && t_first >= r->t_send_ns) {
      m->ttft_ms = ns_to_ms(t_first - r->t_send_ns);
      m->last_ms = ns_to_ms(t_last - r->t_send_ns);
    }
    if (t_last >= t_first) m->decode_span_ms = ns_to_ms(t_last - t_first);
  }
  if (n >= 2) {
    double *gaps = malloc((n - 1) * sizeof *gaps);
    if (gaps) {
      for (size_t i = 1; i < n; i++) {
        uint64_t a = r->chunks[i - 1].t_ns, b = r->chunks[i].t_ns;
        gaps[i - 1] = (b >= a) ? ns_to_ms(b - a) : NAN;
      }
      struct stats_summary gs;
      stats_describe(gaps, n - 1, &gs);
      m->median_gap_ms = gs.median;
      m->max_gap_ms = gs.max;
      free(gaps);
    }
  }
  if (!r->connection_reused && (r->connect_ns || r->tls_ns))
    m->connect_ms = ns_to_ms(r->connect_ns + r->tls_ns);

  /* --- tokens: the server's counts first (rule 3) */
  m->prompt_tokens = r->prompt_tokens;
  m->cached_tokens = r->cached_tokens >= 0 ? r->cached_tokens : r->timings_cache_n;
  if (r->timings_prompt_n >= 0) /* llama.cpp's own count of what it evaluated */
    m->prompt_processed = r->timings_prompt_n;
  else if (r->prompt_tokens >= 0)
    m->prompt_processed = r->prompt_tokens - (m->cached_tokens > 0 ? m->cached_tokens : 0);
  else
    m->prompt_processed = -1;

  m->completion_tokens = r->completion_tokens >= 0 ? r->completion_tokens : r->timings_predicted_n;
  if (m->completion_tokens >= 0) {
    m->generated_tokens = m->completion_tokens;
  } else {
    m->generated_tokens = client_tokens;
    m->completion_from_client = true;
  }
  if (r->reasoning_tokens >= 0) {
    m->reasoning_tokens = r->reasoning_tokens;
  } else {
    m->reasoning_tokens = client_reasoning_tokens;
    m->reasoning_from_client = true;
  }
  if (req && req->max_tokens > 0 && m->reasoning_tokens > 0)
    m->reasoning_ate_budget = (double)m->reasoning_tokens >= 0.9 * (double)req->max_tokens;

  /* --- stream shape */
  if (n > 0 && m->generated_tokens >= 0)
    m->tokens_per_chunk = (double)m->generated_tokens / (double)n;
  m->stream = stream_shape(m, min_decode);
  bool inter_token_ok = (m->stream == STREAM_TOKEN_BY_TOKEN);

  if (inter_token_ok && m->completion_tokens >= 0) {
    int64_t tol = METRICS_COUNT_TOLERANCE;
    bool field_reasoning = false;
    for (size_t i = 0; i < n; i++)
      if (r->chunks[i].field == CHUNK_REASONING) field_reasoning = true;
    if (field_reasoning) tol += REASONING_FIELD_EXTRA_TOLERANCE;
    int64_t d = m->completion_tokens - (int64_t)client_tokens;
    m->count_mismatch = (d > tol || d < -tol);
  }

  /* --- server timers */
  m->server_prompt_ms = first_finite(r->timings_prompt_ms, r->ollama_prompt_eval_ms,
                                     r->lmstudio_ttft_s * 1e3);
  m->server_predicted_ms = first_finite(r->timings_predicted_ms, r->ollama_eval_ms,
                                        r->lmstudio_generation_s * 1e3);
  m->server_load_ms = r->ollama_load_ms;

  /* --- prefill */
  if (m->prompt_processed > 0) {
    if (m->server_prompt_ms > 0)
      m->prefill_server = (double)m->prompt_processed / (m->server_prompt_ms / 1e3);
    if (m->ttft_ms > 0) m->prefill_client = (double)m->prompt_processed / (m->ttft_ms / 1e3);
  }
  if (isfinite(m->ttft_ms) && isfinite(m->server_prompt_ms))
    m->ttft_gap_ms = m->ttft_ms - m->server_prompt_ms;

  /* --- decode (rule 5: blank below min_decode tokens) */
  if (r->timings_predicted_n >= 0 && r->timings_predicted_ms > 0) {
    /* llama.cpp: predicted_ms spans first to last token (n - 1 intervals). */
    if (r->timings_predicted_n >= (int64_t)min_decode)
      m->decode_server = (double)(r->timings_predicted_n - 1) / (r->timings_predicted_ms / 1e3);
  } else if (r->ollama_eval_ms > 0 && r->completion_tokens >= 0) {
    if (r->completion_tokens >= (int64_t)min_decode)
      m->decode_server = (double)r->completion_tokens / (r->ollama_eval_ms / 1e3);
  } else if (isfinite(r->lmstudio_tok_s) && r->lmstudio_tok_s > 0) {
    if (m->generated_tokens >= (int64_t)min_decode) m->decode_server = r->lmstudio_tok_s;
  }
  if (inter_token_ok && m->generated_tokens >= (int64_t)min_decode && m->decode_span_ms > 0)
    m->decode_client = (double)(m->generated_tokens - 1) / (m->decode_span_ms / 1e3);
  if (inter_token_ok && m->generated_tokens >= (int64_t)min_decode && tok_end)
    decode_segments(r, tok_end, opt, min_decode, m);

  /* --- headlines: the runtime's own where reported */
  pick_headlines(m);

  /* --- the server's figures against each other and the client's (metrics.h) */
  /* the plainest rules first: their reason is the clearest to read */
  check_plausible(r, req, opt, m);
  check_consistency(r, m, n >= TOKEN_BY_TOKEN_MIN_CHUNKS, field_reasoning_any(r));

  /* --- cache (rule 2) */
  m->cache = cache_shape(m->cached_tokens, m->prompt_tokens, opt->cache_baseline_tokens);
  m->prefill_excluded = (m->cache == CACHE_HIT);

  free(reasoning);
  free(tok_end);
}
