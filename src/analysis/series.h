/* series: the measurements of a results file, flattened into series that can
 * be compared, plotted and fitted: one series = one configuration x one
 * metric, holding the value of every timed, successful run in run order.
 * Shared by report, compare, decide and the TTFT fit, so every command agrees
 * on what "a configuration" is and which runs count.
 *
 * Which runs count (the method's rules, docs/records.md): warm-ups,
 * calibration requests and failed runs never; cold runs only in the "cold"
 * metrics; server runs whose prefill was excluded (cache hit, rule 2) never
 * in prefill; blank values (null) are skipped, never zeros.
 *
 * Configurations:
 *  - in-process ("engine", and llama-bench imports, backend "llama-bench"):
 *    model label + type + test (pp512 / tg128) + threads + depth; metric
 *    "prefill_tok_s" for pp tests, "decode_tok_s" for tg tests (rate_tok_s of
 *    each run), and "prefill_ms" / "decode_ms" (the run's ms);
 *  - server runs: target + model + workload (+ settings.prompt_tokens /
 *    max_tokens when the workload is "custom" or a sweep, not for a named
 *    workload or a workload file's job, settings.job); metrics
 *    "ttft_ms" (client.ttft_ms, FX), "prefill_tok_s" and "decode_tok_s"
 *    (rates.*.headline), "decode_tok_s_client" (rates.decode_tok_s.client).
 * The key is a readable, stable string built from those parts in that order,
 * e.g. "engine | qwen3-0.6b shape, synthetic, Q4_0 | tg128 | t2 | d0" or
 * "llamacpp | http://127.0.0.1:8080 | qwen3 | classify". Two files agree on a
 * configuration exactly when their keys are equal. */
#ifndef TM_SERIES_H
#define TM_SERIES_H

#include <stdbool.h>
#include <stddef.h>

#include "record/keys.h"
#include "analysis/results.h"

/* One of docs/design.md's five quantities: "CC", "PF", "DC", "AT", "FX". */
struct series {
  char key[320];          /* configuration key (above), without the metric */
  enum record_metric metric; /* record/keys.h: prefill_tok_s, decode_tok_s, ttft_ms, ... */
  char quantity[4];       /* "PF", "DC", "FX" */
  char unit[12];          /* "tok/s", "ms" */
  /* configuration parts, "" / -1 when not applicable */
  char backend[16];       /* "engine", "llama-bench", "llamacpp", "ollama", "openai" */
  char target[160];       /* server base URL or "in-process" */
  char model[160];        /* model label or served name */
  char type[16];          /* quantization ("Q4_0") when known */
  char test[48];          /* "pp512", "tg128", a job and its test ("greet pp8"), or the
                             server workload name */
  int threads, depth;     /* in-process; -1 for server runs */
  int prompt_tokens;      /* pp length / server processed prompt tokens (median); -1 unknown */
  int gen_tokens;         /* tg length / server max_tokens; -1 unknown */
  /* values of the timed, successful runs, in the order they were written */
  double *values;
  size_t n;
  /* The configuration's ceiling over ALL its runs, never one run's: each run
   * carries its own (the bandwidth read around it moves by 5-15% within
   * minutes on a VM), and the configuration is held against their mean, as
   * `tokmeter bench` holds a summary against the mean of its repetitions'
   * readings (src/cli/cmd_bench_engine.c). tok/s for rate metrics; NAN when
   * no run carries one. The parts it was computed from are means over the
   * runs that carry each (NAN when none). */
  double ceiling;
  double bytes_per_token;        /* decode: weights + KV read per token; NAN */
  double read_bandwidth_bytes_s; /* decode: the probe's figure; NAN */
  double flops_per_token;        /* prefill; NAN */
  double compute_ops_s;          /* prefill; NAN */
  size_t ceiling_n;              /* runs (of n) that carry a ceiling */
  double ceiling_min, ceiling_max; /* the lowest and highest run's ceiling; NAN */
  bool ceiling_machines_differ;  /* runs with a ceiling come from identities
                                  * naming different machines (machine.cpu / .gpu) */
  bool ceiling_models_differ;    /* ... or their bytes (FLOPs) per token differ by > 0.5% */
  const char *identity;   /* invocation id (borrowed from results) */
  const char *source;     /* file (borrowed from results) */
};

struct series_set {
  struct series *s;
  size_t n;
};

/* Flattens r into series (one per key x metric; a key that appears in several
 * invocations of the same files is ONE series holding all their runs, in file
 * order). 0 / -1 (out of memory) with err. */
int series_extract(const struct results *r, struct series_set *out, struct tm_err *err);
void series_set_free(struct series_set *set);
/* Above this spread of the runs' ceilings (highest / lowest - 1), a
 * configuration's "% of ceiling" is flagged: it is uncertain by about that
 * much (bench's conclusion uses the same 5%). */
#define SERIES_CEILING_SPREAD 0.05

/* Why s's "% of ceiling" is uncertain, as one clause for a note ("the runs'
 * ceilings spread 24% (76.9 to 95.3 tok/s)", "runs from different machines",
 * "2 of 5 runs carry a ceiling"...; several joined by "; "): 1 with buf
 * filled, or 0 (buf "") when s has no ceiling or nothing to say. */
int series_ceiling_note(const struct series *s, char *buf, size_t n);

/* The series with this key and metric, or NULL. */
const struct series *series_find(const struct series_set *set, const char *key,
                                 enum record_metric metric);

/* The configuration key a server run's series carry (above), for readers
 * that tally something else per configuration (compare's answers). */
void series_server_key(const struct results_invocation *inv, json_t *run, char *key, size_t n);

#endif
