/* compare: two sets of series (A, B) -> one row per configuration x metric
 * present on both sides, with the ratio B/A and its confidence interval
 * (stats_ratio_ci), a verdict that ranks only when the interval excludes 1
 * (docs/design.md rule 12), the ratio the ceilings predict when the sides differ
 * in something the ceiling models, and drift inside each side (rule 11).
 *
 * Pairing: series with equal keys and metrics pair first. Series left over
 * pair "by position" when exactly one series on each side has the same
 * metric and the same place in a sweep (in-process: test, threads, depth;
 * server: workload and max tokens): that is how two models, two
 * quantizations or two servers are compared. `differs` names the parts of
 * the key that are not equal ("model, type", "target").
 *
 * Direction: the verdict is about B. For rates (tok/s) a ratio above 1 is
 * faster; for times (ms) a ratio below 1 is faster.
 *
 * Predicted ratio (B/A, in the metric's own direction):
 *   decode:  (bandwidth_B / bytes_per_token_B) / (bandwidth_A / bytes_per_token_A)
 *   prefill: (compute_B / flops_per_token_B) / (compute_A / flops_per_token_A)
 * (each part the series' own: the mean over its runs, series.h), shown only
 * when the sides differ in a modelled part: bytes or flops per
 * token by more than 0.5% (the model or its quantization), or the probe's
 * bandwidth / compute by more than COMPARE_MACHINE_DIFF (another machine; a
 * smaller gap is probe noise on one machine and is taken as equal). When the
 * parts are missing but both ceilings are known and the model or type
 * differ, ceiling_B / ceiling_A. Times (ms) get the reciprocal; TTFT gets none
 * (fixed costs are not modelled).
 *
 * A value <= 0 on either side (a TTFT of 0 ms) has no logarithm: the verdict
 * is COMPARE_ZERO, with no ratio and no interval. */
#ifndef TM_COMPARE_H
#define TM_COMPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/series.h"
#include "stats/significance.h"
#include "stats/stats.h"
#include "util/err.h"

#define COMPARE_MACHINE_DIFF 0.10
#define COMPARE_DRIFT_MIN_CHANGE 0.01

enum compare_verdict {
  COMPARE_NOT_DISTINGUISHABLE = 0, /* the interval includes 1 */
  COMPARE_FASTER,                  /* B is faster than A */
  COMPARE_SLOWER,                  /* B is slower than A */
  COMPARE_TOO_FEW,                 /* fewer than 2 runs on a side: no interval, no ranking */
  COMPARE_ZERO,                    /* a value <= 0 on a side (a TTFT of 0 ms): no ratio,
                                    * no interval (the interval is on log values) */
};

struct compare_opts {
  double confidence;          /* 0.95 */
  enum stats_ci_method method;
  unsigned resamples;         /* bootstrap; 0 = default */
  uint64_t seed;              /* bootstrap */
};
void compare_opts_default(struct compare_opts *o);

struct compare_row {
  const struct series *a, *b; /* borrowed from the two sets */
  char differs[64];           /* "" when the keys are equal */
  bool lower_is_better;       /* times (ms) */
  struct stats_summary sa, sb;
  struct stats_ratio_ci ci;
  bool ci_ok;
  enum compare_verdict verdict;
  double predicted_ratio;     /* NAN when not applicable */
  char predicted_from[48];    /* "bytes/token", "bytes/token, bandwidth", "ceilings" */
  struct stats_drift drift_a, drift_b;
  bool drift_a_ok, drift_b_ok; /* the test could run (>= 3 runs) */
};

struct compare_result {
  struct compare_row *rows;
  size_t n;
  size_t only_a, only_b;      /* series with no partner */
};

/* 0, or -1 with err (out of memory). Rows follow A's series order. */
int compare_series(const struct series_set *a, const struct series_set *b,
                   const struct compare_opts *o, struct compare_result *out,
                   struct tm_err *err);
void compare_result_free(struct compare_result *r);

const char *compare_verdict_name(enum compare_verdict v); /* "faster", ... */
/* True for metrics where a smaller value is better ("..._ms"). */
bool compare_lower_is_better(enum record_metric metric);

/* The --json document (compare_json.c; keys: docs/compare.md): {"a", "b" (the
 * two paths), "confidence", "method", "resamples", "seed", "rows" (one per
 * row of cr, with both sides' summaries, the ratio and its interval, the
 * verdict, the prediction, drift and ceiling notes), "only_a", "only_b"}.
 * A new object for the caller to dump and free, or NULL when out of memory. */
json_t *compare_json(const struct compare_result *cr, const char *path_a, const char *path_b,
                     const struct compare_opts *o);

#endif
