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
 *     the schedule is marked (its sends' lags add up to over 1% of its
 *     window: stats/load_window.h).
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
#include "stats/load_window.h"
#include "util/err.h"

#define LOAD_MAX_LEVELS 32
#define LOAD_MAX_CONCURRENCY 65536
#define LOAD_CLIENT_SATURATED 0.9

enum load_arrivals { LOAD_POISSON = 0, LOAD_CONSTANT, LOAD_GAMMA };

struct model_cost;
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
  /* or (-w FILE.jsonl) a workload file's jobs in turn, each with its
   * turns, images and max_tokens, at its natural length (borrowed) */
  const struct workload_file *file;
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
  /* Beyond one machine: shard shard_index of shard_count (0-based, as the
   * launchers count) runs its share of each level (streams split as evenly
   * as they go, the rate divided); shard_source says where the pair came
   * from ("flag", "kubernetes", "slurm", "openmpi"; NULL: not sharded).
   * start_at_unix (NAN: none): the common wall-clock start; level k's ramp
   * begins at start_at + k x (ramp + duration + drain_s), so every shard's
   * windows fall on the same wall-clock times. A sharded run needs it. */
  uint32_t shard_index, shard_count;
  const char *shard_source;
  double start_at_unix;
  double drain_s;               /* a scheduled level's drain budget (default 30) */
  /* In process (url NULL: load_engine.c): the engine decodes each level's
   * streams together, prompt_tokens deep (prefilled first, not counted) for
   * max_tokens steps, warmup untimed passes then reps timed ones per level;
   * gguf is the model (required). */
  int n_threads;                /* 0: every online CPU */
  uint32_t reps, warmup;        /* default 3 and 1 */
};
void load_opts_init(struct load_opts *o);

struct load_level {
  uint32_t concurrency;         /* closed loop; 0 in open loop */
  double request_rate;          /* open loop, requests/s; NAN in closed loop */
  /* the figures over the window (stats/load_window.h: the one computation,
   * also behind the merge of shards) */
  struct load_figures f;
  double window_start_unix, window_end_unix; /* the window on the wall clock (s):
                                   shards and servers' logs line up on it */
  /* the client's own CPU time over the level's wall time (one thread: 1 is a
   * whole CPU); saturated above LOAD_CLIENT_SATURATED: the figures may be
   * the client's limit, not the server's */
  double client_cpu_share;
  bool client_saturated;
  /* a scheduled run (--start-at, shards): how late the level's window began
   * against its slot on the wall clock (0 on time); the window is still
   * measured, and the merge refuses a level whose shards' windows differ */
  double schedule_lag_s;
  /* a shard: its share of the level (streams, or requests/s) */
  uint32_t shard_concurrency;
  double shard_rate;
  /* The server's own counters (GET /metrics) read before the ramp and after
   * the drain, beside the client's sums over the level's requests (llama.cpp
   * counts prompt tokens evaluated, cached ones out; vLLM every prompt
   * token); source "" when the server exposes none */
  char counters_source[16];
  double server_prompt_tokens, server_generated_tokens;
  double client_prompt_tokens, client_generated_tokens;
  bool counters_disagree;       /* beyond 2% + 2 tokens per request; a shard
                                   does not judge (the server counts every
                                   shard's requests): the merge does */
  double counters_before[2], counters_after[2]; /* the reads: prompt, generated */
  uint32_t counters_requests;   /* the requests summed (for the tolerance) */
  /* llama.cpp's GET /slots before the ramp and after the drain: its slots,
   * and how many were busy (before: another client's requests, since this
   * run's previous level had drained; after: requests this run did not
   * wait for); slots_total 0 when the server has no /slots */
  int slots_total, slots_busy_before, slots_busy_after;
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
  bool oom;                     /* a level's figures ran out of memory */
  bool above_slots_said;        /* the above_slots finding is given once */
  /* wall clock - monotonic clock (s), read once: request samples and
   * windows go to the records on the wall clock through it */
  double unix_offset;
  /* a scheduled run: the run's id, the same in every shard (a hash of the
   * start time and the settings shards share); the clock's own estimated
   * and maximum error (adjtimex, ms; NAN when unknown) and sync state */
  char run_id[20];
  double clock_est_error_ms, clock_max_error_ms;
  bool clock_synced;
  /* in process: each level's timed passes' aggregates (tok/s), the engine */
  double reps_aggregate[LOAD_MAX_LEVELS][16];
  uint32_t n_reps[LOAD_MAX_LEVELS];
  char kernel_path[32];
  int engine_threads;
};

void load_state_init(struct load_state *s, const struct load_opts *o, const struct load_hooks *h);
/* Runs every level (o->url NULL: in process, load_engine_run). BENCH_OK, BENCH_RUNTIME (a failure, or failed requests:
 * the levels are still measured and recorded) or BENCH_BAD_INPUT. */
int load_run(struct load_state *s);
/* The in-process load (load_engine.c): the levels of o->concurrency on the
 * engine (engine_decode_batch), the same level figures (stats/load_window.h,
 * each stream a request whose tokens arrive at the steps' ends), records,
 * findings and ceiling as the server load's; what does not apply (TTFT,
 * prompt rate, queue, the server's counters) is null. The level's figures
 * are its median timed pass by aggregate; every pass's aggregate is in the
 * record (reps_aggregate_tok_s). */
int load_engine_run(struct load_state *s);
void load_state_free(struct load_state *s);

#endif
