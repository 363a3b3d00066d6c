/* records_bench: the "run", "summary" and "end" records (docs/records.md),
 * built from the backend's run_result, the method's run_metrics and a
 * workload's bench_summary. They live in tm_bench (not tm_record) because they
 * use functions of tm_backend and tm_bench (run_error_name, verdict names,
 * metrics_classify_chunks); the generic writer and identity are record/record.h.
 *
 * Every builder returns a json_t * (as void *, hand it to record_write, which
 * takes ownership) or NULL when out of memory. Blank figures (NAN) and
 * counters the server did not report (-1) are null: JSON has no NaN.
 *
 * Secrets: no input here is or holds an API key. The generated text of a run
 * is NOT recorded (only its length), except a checked answer as compared
 * (cut at 1,000 bytes); error messages and that answer pass through
 * record_redact_secrets and targets through record_redact_url anyway. */
#ifndef TM_RECORDS_BENCH_H
#define TM_RECORDS_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "bench/metrics.h"
#include "bench/summary.h"
#include "record/record.h"

/* Verdicts beside the cache:* and stream:* names of metrics.h. */
#define RECORD_VERDICT_COUNT_MISMATCH "tokens:count-mismatch"
#define RECORD_VERDICT_REASONING_BUDGET "reasoning:ate-budget"
#define RECORD_VERDICT_PREFILL_EXCLUDED "prefill:excluded"

/* Who and what a run record is about. Strings are borrowed; NULL/"" -> null. */
struct record_run_in {
  const char *identity;       /* the invocation's identity id */
  const char *workload;       /* "generate"...; NULL for calibration requests */
  uint32_t index;             /* 0-based timed-run index within the workload */
  bool warmup;                /* the discarded warm-up */
  bool cold;                  /* first request after a (possible) model load */
  bool calibration;           /* a calibration request, not a measurement */
  const char *backend;        /* "openai", "ollama", "llamacpp" */
  const char *target;         /* base URL (redacted here) */
  const char *model;          /* served model name */
  const void *settings;       /* json object: this workload's settings (prompt
                                 tokens target, max_tokens, nonce, ...);
                                 borrowed and deep-copied; NULL -> {} */
  uint32_t max_tokens;        /* asked for; 0 = unknown (-> null) */
  const struct record_ceiling *ceiling; /* NULL = no model file given */
  const void *answer;         /* json object: the answer's check (expect.h
                                 answer_check_json), borrowed and deep-copied;
                                 NULL: no "answer" key (the job has no expect,
                                 or the run failed) */
};

/* r and m are required (m = run_metrics_compute over r). */
void *record_run_build(const struct record_run_in *in, const struct run_result *r,
                       const struct run_metrics *m);

/* One workload's summary. settings as above; ceiling NULL = absent;
 * cpu_steal_share: steal while its timed runs ran (0..1; NAN -> null). */
void *record_summary_build(const char *identity, const struct bench_summary *s,
                           const void *settings, const struct record_ceiling *ceiling,
                           double cpu_steal_share);

/* The invocation's last line: thermal after (NULL -> null), timed runs and
 * failures by kind (failed_by_kind has RUN_ERR_COUNT entries; NULL = none),
 * and the share (0..1) of this machine's busy CPU time the host gave to other
 * work while the runs ran (steal; NAN -> null when unknown). */
void *record_end_build(const char *identity, const struct machine_thermal *thermal_after,
                       uint32_t runs, const uint32_t *failed_by_kind, bool interrupted,
                       double cpu_steal_share);

#endif
