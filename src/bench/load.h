/* load: aggregate throughput under concurrency, on the shared method.
 *
 * A load run is a backend of the same lifecycle as `bench --url`: the same
 * calibration (runner_calibrate: cache baseline, tokens per word), the same
 * per-request judgement (run_metrics_compute: fresh nonce, cached tokens
 * against the baseline, server token counts, stream shape, rule 5, the
 * plausibility rules), the same records session. What it adds is many
 * requests in flight (backend_pool: one thread, one libcurl multi) and the
 * level:
 *
 *   closed loop (-c LIST): each level holds C requests in flight, a new one
 *     sent as one ends;
 *   open loop (--rate LIST): requests sent at scheduled times (poisson,
 *     constant or gamma gaps with shape 1/burstiness^2... see load.c) whatever
 *     the server does; latency is measured from the actual send and from the
 *     scheduled one (no coordinated omission); a level whose sends fall behind
 *     the schedule by more than 1% of its requests is marked.
 *
 * Per level: a ramp-up (not counted), the measured window (duration_s, or
 * until `requests` requests that began inside it have ended), then a drain
 * (the requests in flight end; their tokens count only where they arrived
 * inside the window). A request belongs to the level's figures when it was
 * sent inside the window. Failures are counted by kind and never stop the run.
 *
 * Figures (load_level): requests ok / failed, requests/s, aggregate output
 * and prompt tok/s over the window, and distributions (exact order
 * statistics over the requests) of per-stream decode rate, TTFT (of any
 * token), time to first answer token, inter-token gap (pooled over
 * token-by-token streams), time per output token, end-to-end latency and
 * queue time (client TTFT - the server's prompt time - one decode step).
 * Library code: nothing printed; progress and each level go to hooks.
 * Files: load.c (the run), load_stats.c, load_json.c, load_findings.c
 * (load_internal.h). */
#ifndef TM_BENCH_LOAD_H
#define TM_BENCH_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "bench/findings.h"
#include "bench/session.h"
#include "model/ceiling.h"
#include "util/err.h"

#define LOAD_MAX_LEVELS 32
#define LOAD_MAX_CONCURRENCY 65536
#define LOAD_CLIENT_SATURATED 0.9

enum load_arrivals { LOAD_POISSON = 0, LOAD_CONSTANT, LOAD_GAMMA };

/* Service-level objectives (--slo ttft=500ms,tpot=50ms,e2e=10s; an item may
 * carry its percentile, p99:ttft=500ms; default p99). A request meets them
 * when each figure it has is within its limit (a request under the decode
 * minimum has no time per output token: that objective is not held against
 * it); a failed request meets none. A level meets them when each figure's
 * percentile over the level's requests (failed ones as infinitely late) is
 * within its limit. */
enum load_slo_metric { LOAD_SLO_TTFT = 0, LOAD_SLO_TPOT, LOAD_SLO_E2E, LOAD_SLO_COUNT };
struct model_cost;
struct load_slo {
  bool set[LOAD_SLO_COUNT];
  double limit_ms[LOAD_SLO_COUNT];
  double percentile[LOAD_SLO_COUNT]; /* 0..100 */
};
const char *load_slo_name(enum load_slo_metric m); /* "ttft", "tpot", "e2e" */
/* Parses "ttft=500ms,p95:tpot=50ms,e2e=10s" (ms, s or a bare number of ms).
 * 0, or -1 with err naming the bad item. */
int load_slo_parse(const char *s, struct load_slo *out, struct tm_err *err);
const char *load_arrivals_name(enum load_arrivals a); /* "poisson"... */

struct load_opts {
  const char *url;
  enum api_family api;
  enum api_endpoint endpoint;
  const char *model;
  const char *api_key;          /* never printed nor recorded */
  const char *out;              /* results file (NULL: the default) */
  const char *command;          /* the command line, for the identity */
  /* levels: one of the two lists */
  uint32_t concurrency[LOAD_MAX_LEVELS];
  size_t n_concurrency;
  double rate[LOAD_MAX_LEVELS]; /* requests/s */
  size_t n_rate;
  enum load_arrivals arrivals;
  double burstiness;            /* gamma: 1 = poisson; <1 burstier... (load.c) */
  /* each level */
  double ramp_s;                /* not counted (default 2) */
  double duration_s;            /* the window (default 10) */
  uint32_t requests;            /* or: the window ends when this many requests
                                   sent inside it have ended (0 = duration) */
  /* each request: -p/-n, or (-w) the bench's named workloads taken in turn
   * (classify, extract, generate: their prompt and output lengths and
   * framing), a mixed load */
  char workloads[8][32];
  size_t n_workloads;
  uint32_t prompt_tokens, prompt_sd;   /* -p MEAN[:SD] (default 128) */
  uint32_t max_tokens, max_tokens_sd;  /* -n MEAN[:SD] (default 128) */
  double idle_timeout_s, timeout_s;
  uint32_t seed;
  struct load_slo slo;          /* no objective set: no SLO figures */
  const char *gguf;             /* -m: the file the server serves: the aggregate
                                   decode ceiling per level (model/ceiling.h
                                   ceiling_batch, this machine's probe) */
  bool find_capacity;           /* bisect the -c (or --rate) range for the
                                   largest load that meets the SLOs */
};
void load_opts_init(struct load_opts *o);

struct load_dist {              /* exact order statistics; NAN when n == 0 */
  size_t n;
  double min, p50, p90, p95, p99, max, mean;
};

struct load_level {
  uint32_t concurrency;         /* closed loop; 0 in open loop */
  double request_rate;          /* open loop, requests/s; NAN in closed loop */
  double window_s;
  double window_start_unix, window_end_unix; /* the window on the wall clock (s):
                                   shards and servers' logs line up on it */
  uint32_t requests_ok, requests_failed;
  uint32_t failed_by_kind[RUN_ERR_COUNT];
  uint32_t cache_hits;          /* requests whose cache reached past the nonce:
                                   counted, left out of prefill and TTFT figures */
  uint32_t buffered;            /* requests whose stream arrived buffered */
  uint32_t short_decode;        /* requests under the decode minimum (no rate) */
  uint32_t implausible;         /* requests that broke a plausibility rule */
  double requests_per_s, aggregate_output_tok_s, aggregate_prompt_tok_s;
  double output_tokens_in_window, prompt_tokens_in_window;
  struct load_dist per_stream_decode_tok_s, ttft_ms, ttft_sched_ms, ttfat_ms, itl_ms, tpot_ms,
      e2e_ms, queue_ms;
  /* open loop: sends later than their schedule by more than 1 ms, and the
   * worst lag; behind = more than 1% of the level's sends were late */
  uint32_t late_sends;
  double max_send_lag_ms;
  bool behind_schedule;
  /* the client's own CPU time over the level's wall time (one thread: 1 is a
   * whole CPU); saturated above LOAD_CLIENT_SATURATED: the figures may be
   * the client's limit, not the server's */
  double client_cpu_share;
  bool client_saturated;
  uint64_t client_chunks, server_tokens; /* over the level's ok requests */
  /* --slo: the share of the level's requests that met every objective, the
   * goodput (those that ended inside the window, per second, and their
   * tokens), and whether the level meets them at their percentiles */
  double slo_met_share, goodput_req_s, goodput_tok_s;
  bool slo_met;
  /* The server's own counters (GET /metrics) read before the ramp and after
   * the drain, beside the client's sums over the level's requests (llama.cpp
   * counts prompt tokens evaluated, cached ones out; vLLM every prompt
   * token); source "" when the server exposes none */
  char counters_source[16];
  double server_prompt_tokens, server_generated_tokens;
  double client_prompt_tokens, client_generated_tokens;
  bool counters_disagree;       /* beyond 2% + 2 tokens per request */
  /* -m: the aggregate decode ceiling of `ceiling_batch` streams (the level's
   * concurrency; in open loop the mean in flight, requests/s x mean
   * end-to-end) at each stream's mean depth (prompt + output / 2), and the
   * measured aggregate as a share of it; NAN without -m */
  double ceiling_batch, ceiling_depth, aggregate_decode_ceiling_tok_s, percent_of_ceiling;
  const char *ceiling_bound;    /* "memory" / "compute"; NULL */
};

struct load_hooks {
  void (*progress)(const char *msg, void *ctx); /* one line, may be NULL */
  void (*level)(const struct load_level *lv, const void *record_json, void *ctx);
  void *ctx;
};

struct load_state {
  const struct load_opts *o;
  struct load_hooks hooks;
  struct tm_err err;
  bool err_is_usage;
  struct bench_session session;
  struct load_level levels[LOAD_MAX_LEVELS];
  size_t n_levels;
  struct bench_findings findings;
  char url_shown[512];
  char server_kind[32];
  enum api_family api;          /* as given, or as detected */
  uint32_t failed_total;
  /* --find-capacity: the largest load that met the SLOs (0 / NAN: none in
   * the range), whether the top of the range met them too */
  uint32_t capacity_concurrency;
  double capacity_rate;
  bool capacity_found, capacity_at_top;
  /* -m: the model's cost and this machine's rates; the batch at which its
   * decode step turns compute bound at the workload's depth (0: not within
   * 4096, or no compute rate) */
  bool have_model;
  struct model_cost *cost;
  struct ceiling_rates rates;
  uint32_t batch_turn;
  bool interrupted;
};

void load_state_init(struct load_state *s, const struct load_opts *o, const struct load_hooks *h);
/* Runs every level. BENCH_OK, BENCH_RUNTIME (a failure, or failed requests:
 * the levels are still measured and recorded) or BENCH_BAD_INPUT. */
int load_run(struct load_state *s);
void load_state_free(struct load_state *s);

/* Order statistics of x[0..n) (NAN entries skipped); sorts a copy. */
void load_dist_of(const double *x, size_t n, struct load_dist *out);

#endif
