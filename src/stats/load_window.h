/* load_window: a load level's figures from its requests over its measured
 * window, the one computation behind every load figure: `tokmeter load`
 * computes a level with it as the level ends, and `report` with it again
 * when it merges the shards of one run (their requests pooled over the
 * common window), so one process and four shards are judged alike.
 *
 * Times are seconds on one clock for every sample and the window (the
 * monotonic clock in a run; the wall clock when shards are merged). A
 * request belongs to the level when it was sent inside the window
 * [w0, w1]; tokens count where they arrived inside it (chunk k carries the
 * server's count in proportion, exact on token-by-token streams); prompt
 * tokens count with the request's first chunk; requests/s counts the
 * requests that ended ok inside it. Distributions are exact order
 * statistics (linear between neighbours) over the level's ok requests; a
 * cache hit's TTFT, first-answer and queue times are left out (no prefill);
 * inter-token gaps are pooled over token-by-token streams only.
 * No I/O, no allocation kept. */
#ifndef TM_STATS_LOAD_WINDOW_H
#define TM_STATS_LOAD_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Failure kinds are small indexes (the backend's run_error; 0 = ok). */
#define LOAD_ERROR_KINDS 16
/* A send later than its schedule by more than this is late (open loop). */
#define LOAD_LATE_SEND_S 0.001
/* A level is behind schedule when its sends' lags add up to more than this
 * share of its window: the sending stalled for that long, in effect (a
 * 3 ms hiccup in a 3 s window is 0.1%; a client that cannot keep up piles
 * lag on every send and passes it at once, whatever the rate). */
#define LOAD_BEHIND_SHARE 0.01

struct load_dist {              /* exact order statistics; NAN when n == 0 */
  size_t n;
  double min, p50, p90, p95, p99, max, mean;
};

/* Service-level objectives (--slo ttft=500ms,tpot=50ms,e2e=10s; an item may
 * carry its percentile, p99:ttft=500ms; default p99). A request meets them
 * when each figure it has is within its limit (a request under the decode
 * minimum has no time per output token: that objective is not held against
 * it); a failed request meets none. A level meets them when each figure's
 * percentile over the level's requests (failed ones as infinitely late) is
 * within its limit. */
enum load_slo_metric { LOAD_SLO_TTFT = 0, LOAD_SLO_TPOT, LOAD_SLO_E2E, LOAD_SLO_COUNT };
struct load_slo {
  bool set[LOAD_SLO_COUNT];
  double limit_ms[LOAD_SLO_COUNT];
  double percentile[LOAD_SLO_COUNT]; /* 0..100 */
};
const char *load_slo_name(enum load_slo_metric m); /* "ttft", "tpot", "e2e" */
bool load_slo_any(const struct load_slo *slo);

/* What one finished request leaves for its level (as judged by the shared
 * method when it ended; NAN where a figure is unknown). */
struct load_sample {
  double t_sched, t_send, t_end; /* seconds; t_sched = t_send in closed loop */
  bool ok, cache_hit, buffered, token_by_token, short_decode, implausible;
  int error;                     /* 0 when ok, else 1..LOAD_ERROR_KINDS-1 */
  double ttft_ms, ttfat_ms, decode_tok_s, tpot_ms, e2e_ms, queue_ms;
  double prompt_processed;       /* prompt - cached */
  double prompt_reported;        /* the server's prompt count */
  double tokens;                 /* the server's generated count (the client's without) */
  uint32_t n_chunks;
  const double *chunk_t;         /* arrival of each text chunk, seconds (borrowed) */
};

struct load_figures {
  double window_s;
  uint32_t requests_ok, requests_failed;
  uint32_t failed_by_kind[LOAD_ERROR_KINDS];
  uint32_t cache_hits, buffered, short_decode, implausible;
  double requests_per_s, aggregate_output_tok_s, aggregate_prompt_tok_s;
  double output_tokens_in_window, prompt_tokens_in_window;
  struct load_dist per_stream_decode_tok_s, ttft_ms, ttft_sched_ms, ttfat_ms, itl_ms, tpot_ms,
      e2e_ms, queue_ms;
  /* open loop: sends later than their schedule by more than
   * LOAD_LATE_SEND_S, the worst lag, the lags' sum over the window, and
   * whether that is above LOAD_BEHIND_SHARE */
  uint32_t late_sends;
  double max_send_lag_ms, send_lag_share;
  bool behind_schedule;
  uint64_t client_chunks, server_tokens; /* over the level's ok requests */
  /* with objectives: the share of the level's requests that met every one,
   * the goodput (those that ended inside the window, per second, and their
   * tokens) and whether the level meets them at their percentiles; NAN /
   * false without */
  double slo_met_share, goodput_req_s, goodput_tok_s;
  bool slo_met;
};

/* The level's figures from x[0..n) over [w0, w1]. open_loop: judge sends
 * against their schedule. slo may be NULL. 0, or -1 (out of memory: out
 * holds what was computed before). */
int load_window_figures(const struct load_sample *x, size_t n, double w0, double w1,
                        bool open_loop, const struct load_slo *slo, struct load_figures *out);

/* The knee of a sweep in load order: the lowest level i whose next raises
 * the aggregate output (agg) by less than 10% while raising p99 TTFT by more
 * than 50%; -1 when none. */
long load_knee_index(const double *agg, const double *ttft_p99, size_t n);

/* A server's token counter over a level against the client's sum over its
 * n requests: they disagree beyond 2% + 2 tokens a request. */
bool load_counters_disagree(double server, double client, size_t n);

/* Order statistics of x[0..n) (NAN entries skipped); sorts a copy. */
void load_dist_of(const double *x, size_t n, struct load_dist *out);
int load_cmp_double(const void *a, const void *b);
/* The order statistic at p (0..1) of v[0..n) sorted: linear between neighbours. */
double load_order_stat(const double *v, size_t n, double p);

#endif
