/* compare_load: `tokmeter compare A B` on load runs (docs/load.md): each
 * side's one load run (a process, or the shards of one run merged:
 * load_view.h), level against the level of the same load (the same
 * concurrency, or a request rate within 0.1%), per metric the ratio B/A
 * with its interval (stats_ratio_ci on log values, the method and
 * confidence of compare's options) and a verdict that ranks only when the
 * interval excludes 1:
 *
 *   aggregate_output_tok_s   the window cut in COMPARE_LOAD_SLICES equal
 *                            slices (at least 1 s each), the tokens that
 *                            arrived in each per second: its values
 *   per_stream_decode_tok_s  each request's decode rate
 *   ttft_ms, e2e_ms          each request's (cache hits out of TTFT)
 *
 * Each side shows its level's own figure (the aggregate; the median of the
 * rest). Library code: nothing printed. */
#ifndef TM_ANALYSIS_COMPARE_LOAD_H
#define TM_ANALYSIS_COMPARE_LOAD_H

#include <jansson.h>
#include <stdbool.h>

#include "analysis/compare.h"
#include "analysis/load_view.h"
#include "analysis/results.h"
#include "util/err.h"

#define COMPARE_LOAD_SLICES 10

struct compare_load_row {
  char level[32];               /* "c=8", "rate=2/s" */
  const char *metric;           /* one of the four above */
  bool lower_is_better;
  double a, b;                  /* each side's figure */
  struct stats_ratio_ci ci;
  bool ci_ok;
  enum compare_verdict verdict;
};

struct compare_load {
  struct results ra, rb;
  struct load_views va, vb;
  const struct load_view *a, *b;
  struct compare_load_row *rows;
  size_t n;
  size_t only_a, only_b;        /* levels with no partner */
};

/* True when the file at path holds load records (a cheap look: the caller
 * then uses compare_load_files). */
bool compare_load_has_loads(const struct results *r);

/* Both sides read (results_load), their load runs built, levels paired and
 * judged. 0, or -1 with err (a side with no load run or more than one,
 * levels that match none, out of memory: *oom). */
int compare_load_files(const char *a, const char *b, const struct compare_opts *o,
                       struct compare_load *out, bool *oom, struct tm_err *err);
void compare_load_free(struct compare_load *c);
json_t *compare_load_json(const struct compare_load *c, const char *path_a, const char *path_b,
                          const struct compare_opts *o);

#endif
