/* summary: one workload's runs folded into the figures the table and the
 * summary record show. Pure computation over run_metrics (metrics.h).
 *
 * Rules: failed runs count as failures by kind and never enter a figure;
 * runs flagged CACHE_HIT are left out of the prefill and TTFT figures unless
 * allow_cache (then they are counted in n_cache_hits and labelled); decode
 * figures use only runs whose decode rate is not blank; the first run after a
 * model load (cold) is reported apart and never enters the warm figures. */
#ifndef TM_SUMMARY_H
#define TM_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "bench/metrics.h"
#include "stats/significance.h"
#include "stats/stats.h"

struct bench_summary {
  char workload[32];
  uint32_t n_runs;              /* timed runs attempted (warm-up excluded) */
  uint32_t n_ok;
  uint32_t n_failed;
  uint32_t failed_by_kind[RUN_ERR_COUNT];
  uint32_t n_cache_hits;        /* CACHE_HIT runs */
  uint32_t n_buffered;          /* STREAM_BUFFERED runs */
  uint32_t n_count_mismatch;    /* server tokens != client chunks */
  uint32_t n_reasoning_ate_budget;

  struct stats_summary prompt_tokens;     /* server-reported */
  struct stats_summary prompt_processed;
  struct stats_summary completion_tokens;
  struct stats_summary reasoning_tokens;
  struct stats_summary ttft_ms;           /* client */
  struct stats_summary prefill_server, prefill_client, prefill_headline;
  struct stats_summary decode_server, decode_client, decode_headline;
  struct stats_summary ttft_gap_ms;       /* client TTFT - server prompt time */
  struct stats_summary server_prompt_ms;  /* the runtime's own prompt time */
  /* A headline is never a blend of sources: it is prefill_server (or
   * decode_server) when every used run has the server's figure, else the
   * client's when every used run has that, else the source more runs have,
   * over those runs only. "server" / "client" / "" (no figure). */
  const char *prefill_source;
  const char *decode_source;

  /* Rule 11 (drift.h) on the headlines' series in run order: the later
   * runs slower than the first beyond the noise. *_tested false when fewer
   * than 3 runs had the figure (then the drift is not set). */
  struct stats_drift prefill_drift, decode_drift;
  bool prefill_drift_tested, decode_drift_tested;

  /* The decode curve: per segment, the median over runs. */
  size_t n_segments;
  struct decode_segment segments[METRICS_MAX_SEGMENTS];

  /* Cold (first request after a load) vs warm: NAN when not measured. */
  double cold_ttft_ms, cold_load_ms;

  bool allow_cache;
};

/* cold may be NULL. */
void bench_summarize(const char *workload, const struct run_metrics *runs, size_t n,
                     const struct run_metrics *cold, bool allow_cache,
                     struct bench_summary *out);

#endif
