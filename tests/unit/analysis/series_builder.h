/* series_builder: one series as src/analysis/series.c reads it from records,
 * for the analysis tests (compare, decide): the fields they read, the
 * quantity and unit from the metric's table (record/keys.h), every ceiling part unknown (NAN)
 * unless a test sets it. Test-only header. */
#ifndef TM_TEST_SERIES_BUILDER_H
#define TM_TEST_SERIES_BUILDER_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/series.h"

struct series_spec {
  const char *key, *backend, *target, *model, *type, *test, *metric;
  int threads, prompt_tokens, gen_tokens;
};

static inline struct series series_make(struct series_spec p, const double *values, size_t n) {
  struct series s;
  memset(&s, 0, sizeof s);
  snprintf(s.key, sizeof s.key, "%s", p.key);
  s.metric = record_metric_from_name(p.metric); /* METRIC_COUNT for a name of none */
  snprintf(s.quantity, sizeof s.quantity, "%s", record_metric_quantity(s.metric));
  snprintf(s.unit, sizeof s.unit, "%s", record_metric_unit(s.metric));
  snprintf(s.backend, sizeof s.backend, "%s", p.backend);
  snprintf(s.target, sizeof s.target, "%s", p.target);
  snprintf(s.model, sizeof s.model, "%s", p.model);
  snprintf(s.type, sizeof s.type, "%s", p.type ? p.type : "");
  snprintf(s.test, sizeof s.test, "%s", p.test);
  s.threads = p.threads;
  s.depth = 0;
  s.prompt_tokens = p.prompt_tokens;
  s.gen_tokens = p.gen_tokens;
  s.values = (double *)values;
  s.n = n;
  s.ceiling = s.bytes_per_token = s.read_bandwidth_bytes_s = NAN;
  s.flops_per_token = s.compute_ops_s = NAN;
  return s;
}

#endif
