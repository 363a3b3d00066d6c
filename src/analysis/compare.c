/* compare: pairs series of two result sets and judges each pair (compare.h).
 * Library code: no printing; the CLI (cmd_compare.c) formats the rows. */
#include "analysis/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void compare_opts_default(struct compare_opts *o) {
  o->confidence = 0.95;
  o->method = STATS_CI_WELCH;
  o->resamples = 0;
  o->seed = STATS_BOOTSTRAP_SEED;
}

const char *compare_verdict_name(enum compare_verdict v) {
  switch (v) {
  case COMPARE_FASTER: return "faster";
  case COMPARE_SLOWER: return "slower";
  case COMPARE_TOO_FEW: return "too few runs";
  case COMPARE_ZERO: return "zero values: no ratio";
  default: return "not distinguishable";
  }
}

bool compare_lower_is_better(enum record_metric metric) {
  return record_metric_lower_is_better(metric);
}

/* Same place in a sweep: what stays fixed when only the model, its type, the
 * server or the machine changes. */
static bool same_position(const struct series *a, const struct series *b) {
  if (a->metric != b->metric) return false;
  bool a_inproc = a->threads >= 0, b_inproc = b->threads >= 0;
  if (a_inproc != b_inproc) return false;
  if (a_inproc)
    return !strcmp(a->test, b->test) && a->threads == b->threads && a->depth == b->depth;
  return !strcmp(a->test, b->test) && a->gen_tokens == b->gen_tokens;
}

static void describe_differences(const struct series *a, const struct series *b, char *buf,
                                 size_t n) {
  buf[0] = '\0';
  const char *parts[4];
  size_t k = 0;
  if (strcmp(a->backend, b->backend)) parts[k++] = "backend";
  if (strcmp(a->target, b->target)) parts[k++] = "target";
  if (strcmp(a->model, b->model)) parts[k++] = "model";
  if (strcmp(a->type, b->type)) parts[k++] = "type";
  size_t used = 0;
  for (size_t i = 0; i < k && used < n; i++) {
    int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", parts[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
}

static bool rel_differs(double x, double y, double tol) {
  return isfinite(x) && isfinite(y) && x > 0 && y > 0 && fabs(y / x - 1) > tol;
}

/* The ratio the ceilings predict (see compare.h); NAN when not applicable. */
static double predict(const struct compare_row *row, char *from, size_t n) {
  const struct series *a = row->a, *b = row->b;
  from[0] = '\0';
  const enum record_metric m = a->metric;
  const bool decode = m == METRIC_DECODE_TOK_S || m == METRIC_DECODE_MS ||
                      m == METRIC_DECODE_TOK_S_CLIENT;
  const bool prefill = m == METRIC_PREFILL_TOK_S || m == METRIC_PREFILL_MS;
  if (!decode && !prefill) return NAN; /* TTFT and others: fixed costs not modelled */
  double per_a = decode ? a->bytes_per_token : a->flops_per_token;
  double per_b = decode ? b->bytes_per_token : b->flops_per_token;
  double rate_a = decode ? a->read_bandwidth_bytes_s : a->compute_ops_s;
  double rate_b = decode ? b->read_bandwidth_bytes_s : b->compute_ops_s;
  bool per_differs = rel_differs(per_a, per_b, 0.005);
  bool rate_differs = rel_differs(rate_a, rate_b, COMPARE_MACHINE_DIFF);
  double ratio = NAN;
  if (per_differs || rate_differs) {
    ratio = 1;
    if (per_differs) ratio *= per_a / per_b;
    if (rate_differs) ratio *= rate_b / rate_a;
    snprintf(from, n, "%s%s%s", per_differs ? (decode ? "bytes/token" : "flops/token") : "",
             per_differs && rate_differs ? ", " : "",
             rate_differs ? (decode ? "bandwidth" : "compute") : "");
  } else if ((strcmp(a->model, b->model) || strcmp(a->type, b->type)) &&
             !(isfinite(per_a) && isfinite(per_b)) && isfinite(a->ceiling) &&
             isfinite(b->ceiling) && a->ceiling > 0 && b->ceiling > 0) {
    ratio = b->ceiling / a->ceiling;
    snprintf(from, n, "ceilings");
  }
  if (isfinite(ratio) && row->lower_is_better) ratio = 1 / ratio; /* time = tokens / rate */
  return ratio;
}

static void judge(struct compare_row *row, const struct compare_opts *o) {
  const struct series *a = row->a, *b = row->b;
  row->lower_is_better = compare_lower_is_better(a->metric);
  stats_describe(a->values, a->n, &row->sa);
  stats_describe(b->values, b->n, &row->sb);
  row->ci_ok = stats_ratio_ci(a->values, a->n, b->values, b->n, o->confidence, o->method,
                              o->resamples, o->seed, &row->ci) == 0;
  if ((row->sa.n && !(row->sa.min > 0)) || (row->sb.n && !(row->sb.min > 0))) {
    /* a time of 0 has no logarithm and no ratio: say so, not "too few runs" */
    row->ci_ok = false;
    row->ci.ratio = NAN;
    row->verdict = COMPARE_ZERO;
  } else if (!row->ci_ok) {
    row->verdict = COMPARE_TOO_FEW;
  } else if (row->ci.lo > 1) {
    row->verdict = row->lower_is_better ? COMPARE_SLOWER : COMPARE_FASTER;
  } else if (row->ci.hi < 1) {
    row->verdict = row->lower_is_better ? COMPARE_FASTER : COMPARE_SLOWER;
  } else {
    row->verdict = COMPARE_NOT_DISTINGUISHABLE;
  }
  row->predicted_ratio = predict(row, row->predicted_from, sizeof row->predicted_from);
  bool higher = !row->lower_is_better;
  row->drift_a_ok = stats_drift(a->values, a->n, higher, o->confidence,
                                COMPARE_DRIFT_MIN_CHANGE, &row->drift_a) == 0;
  row->drift_b_ok = stats_drift(b->values, b->n, higher, o->confidence,
                                COMPARE_DRIFT_MIN_CHANGE, &row->drift_b) == 0;
}

static int add_row(struct compare_result *out, size_t *cap, const struct series *a,
                   const struct series *b) {
  if (out->n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    struct compare_row *g = realloc(out->rows, c * sizeof *g);
    if (!g) return -1;
    out->rows = g;
    *cap = c;
  }
  struct compare_row *row = &out->rows[out->n++];
  memset(row, 0, sizeof *row);
  row->a = a;
  row->b = b;
  describe_differences(a, b, row->differs, sizeof row->differs);
  return 0;
}

int compare_series(const struct series_set *a, const struct series_set *b,
                   const struct compare_opts *o, struct compare_result *out,
                   struct tm_err *err) {
  memset(out, 0, sizeof *out);
  /* partner[i] = index in b of a->s[i]'s partner, or -1 */
  long *partner = malloc((a->n ? a->n : 1) * sizeof *partner);
  unsigned char *b_used = calloc(b->n ? b->n : 1, 1);
  if (!partner || !b_used) {
    free(partner);
    free(b_used);
    return tm_errf(err, "out of memory");
  }
  for (size_t i = 0; i < a->n; i++) {
    partner[i] = -1;
    for (size_t j = 0; j < b->n; j++)
      if (!b_used[j] && !strcmp(a->s[i].key, b->s[j].key) &&
          a->s[i].metric == b->s[j].metric) {
        partner[i] = (long)j;
        b_used[j] = 1;
        break;
      }
  }
  /* leftovers: pair by position when unambiguous on both sides */
  for (size_t i = 0; i < a->n; i++) {
    if (partner[i] >= 0) continue;
    long cand = -1;
    size_t n_cand = 0;
    for (size_t j = 0; j < b->n; j++)
      if (!b_used[j] && same_position(&a->s[i], &b->s[j])) {
        cand = (long)j;
        n_cand++;
      }
    if (n_cand != 1) continue;
    size_t n_back = 0;
    for (size_t k = 0; k < a->n; k++)
      if (partner[k] < 0 && same_position(&a->s[k], &b->s[cand])) n_back++;
    if (n_back != 1) continue;
    partner[i] = cand;
    b_used[cand] = 1;
  }
  size_t cap = 0;
  int rc = 0;
  for (size_t i = 0; i < a->n && !rc; i++) {
    if (partner[i] < 0) {
      out->only_a++;
      continue;
    }
    if (add_row(out, &cap, &a->s[i], &b->s[partner[i]])) rc = -1;
    else judge(&out->rows[out->n - 1], o);
  }
  for (size_t j = 0; j < b->n; j++)
    if (!b_used[j]) out->only_b++;
  free(partner);
  free(b_used);
  if (rc) {
    compare_result_free(out);
    return tm_errf(err, "out of memory");
  }
  return 0;
}

void compare_result_free(struct compare_result *r) {
  if (!r) return;
  free(r->rows);
  memset(r, 0, sizeof *r);
}
