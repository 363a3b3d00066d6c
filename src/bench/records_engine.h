/* records_engine: the "run" and "summary" records of an in-process benchmark
 * (backend "engine", target "in-process"; docs/records.md, section
 * "In-process runs"). Same file, same identity and end lines as the server
 * benchmark (record/record.h, records_bench.h record_end_build); the run and
 * summary lines have their own keys because a pp/tg repetition is not a
 * request: test ("pp512", "tg128"), threads, depth, tokens, ms, rate_tok_s,
 * ceiling_tok_s, percent_of_ceiling, decode_by_segment.
 *
 * Builders return a json_t * (as void *) for record_write, or NULL when out of
 * memory. Absent figures (NAN) are null: so a tg of fewer than
 * METRICS_MIN_DECODE_TOKENS tokens, whose rate is blank by rule 5
 * (engine_bench.h), has rate_tok_s and the percentages null and its tokens,
 * ms and ceiling kept, and an empty decode_by_segment. */
#ifndef TM_RECORDS_ENGINE_H
#define TM_RECORDS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "bench/engine_bench.h"
#include "record/record.h"

/* What every line of one configuration shares. Strings borrowed; NULL -> null. */
struct record_engine_in {
  const char *identity;      /* the invocation's identity id */
  const char *model_file;
  const char *model_label;   /* e.g. "qwen3-0.6b shape, synthetic, Q4_0" */
  const char *arch;
  const char *type;          /* "Q4_0" */
  const char *kernel_path;   /* what the engine ran, "avx512_vnni" */
  uint64_t decode_chunk_bytes; /* the engine's decode chunk budget; 0: unknown */
  double load_ms;            /* engine_info.load_ms (map + first touch); NAN absent */
  const char *weights;       /* "mapped" (the file mapping) or "copied" (anonymous copy) */
  /* The ceiling of this configuration (NAN = unknown):
   *   tg: read_bandwidth_bytes_s at these threads / bytes_per_token at the
   *       run's mean depth;
   *   pp: compute_ops_s (compute_path) at these threads / flops_per_token. */
  double ceiling_tok_s;
  double read_bandwidth_bytes_s;  /* tg */
  double bytes_per_token;         /* tg: mean over the run's depths */
  double compute_ops_s;           /* pp */
  const char *compute_path;       /* pp: "int8" or "f32" */
  double flops_per_token;         /* pp */
  /* tg: whether a buffer of the weights' size read from the CPU's caches
   * (bench_engine.h EB_CACHE_FIT): +1 yes, so read_bandwidth_bytes_s is the
   * caches' rate, not memory's; -1 no; 0 not measured (null). */
  int weights_fit_in_caches;
  /* Summary only: the share (0..1) of this machine's busy CPU time that the
   * hypervisor gave to others (steal) while the configuration ran, warm-up
   * included; NAN when unknown (no steal column in /proc/stat). */
  double cpu_steal_share;
  /* Summary only: the CPUs other processes of this machine kept busy while
   * the configuration ran, warm-up included (machine_other_cpus); NAN when
   * unknown. */
  double other_cpus_busy;
  /* Summary only, tg: the read bandwidth at these threads right after the
   * last repetition; NAN when not measured. */
  double read_bandwidth_after_bytes_s;
  /* Summary only, tg: every reading of the configuration, in order: after
   * the warm-up, then after each timed repetition (NAN where one failed);
   * borrowed; NULL / 0 when none. A run's ceiling rests on the two readings
   * on either side of it, the summary's on the mean of those. Each reading
   * is the faster of the run's buffer's (buffer_bw_readings) and the
   * weights' in place (weights_bw_readings), both n_bw_readings long or
   * NULL. */
  const double *bw_readings, *buffer_bw_readings, *weights_bw_readings;
  size_t n_bw_readings;
};

/* One repetition (warm-up included: "warmup": true). index: 0-based among
 * the timed repetitions (the warm-up has index -1 -> null). */
void *record_engine_run_build(const struct record_engine_in *in,
                              const struct engine_bench_config *cfg, int threads, int index,
                              const struct engine_bench_rep *rep);

/* One configuration's summary over its timed repetitions. */
void *record_engine_summary_build(const struct record_engine_in *in,
                                  const struct engine_bench_result *r);

#endif
