/* load_stats: the load method's pure arithmetic (see load.h): SLO parsing
 * and the exact order statistics every level figure is given as. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/load_internal.h"

/* ------------------------------------------------------------------ SLOs */

const char *load_slo_name(enum load_slo_metric m) {
  static const char *const names[LOAD_SLO_COUNT] = {"ttft", "tpot", "e2e"};
  return (unsigned)m < LOAD_SLO_COUNT ? names[m] : "?";
}

int load_slo_parse(const char *s, struct load_slo *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  char buf[512];
  if (!s || !*s || strlen(s) >= sizeof buf) return tm_errf(err, "an empty or too long list");
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
       item = strtok_r(NULL, ",", &save)) {
    double pct = 99;
    char *spec = item;
    if (item[0] == 'p' && strchr(item, ':')) {
      char *colon = strchr(item, ':'), *end;
      *colon = 0;
      pct = strtod(item + 1, &end);
      if (end == item + 1 || *end || !(pct > 0 && pct <= 100))
        return tm_errf(err, "'%s': the percentile is p1..p100 (p99:ttft=500ms)", item);
      spec = colon + 1;
    }
    char *eq = strchr(spec, '=');
    if (!eq) return tm_errf(err, "'%s' is not NAME=LIMIT (ttft=500ms)", spec);
    *eq = 0;
    int m = -1;
    for (int k = 0; k < LOAD_SLO_COUNT; k++)
      if (!strcmp(spec, load_slo_name((enum load_slo_metric)k))) m = k;
    if (m < 0) return tm_errf(err, "'%s' is not ttft, tpot or e2e", spec);
    if (out->set[m]) return tm_errf(err, "%s is given twice", spec);
    char *end;
    double v = strtod(eq + 1, &end);
    double scale = 1;
    if (!strcmp(end, "s")) scale = 1000;
    else if (strcmp(end, "ms") != 0 && *end)
      return tm_errf(err, "%s=%s: a time in ms or s (500ms, 0.5s)", spec, eq + 1);
    if (end == eq + 1 || !(v > 0) || !isfinite(v))
      return tm_errf(err, "%s=%s: a time above 0 (500ms, 0.5s)", spec, eq + 1);
    out->set[m] = true;
    out->limit_ms[m] = v * scale;
    out->percentile[m] = pct;
  }
  return 0;
}

bool load_slo_any(const struct load_slo *slo) {
  for (int k = 0; k < LOAD_SLO_COUNT; k++)
    if (slo->set[k]) return true;
  return false;
}

/* ------------------------------------------------------------ statistics */

int load_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The order statistic at p (0..1): linear between neighbours. */
double load_order_stat(const double *v, size_t n, double p) {
  double pos = p * (double)(n - 1);
  size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
  return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

void load_dist_of(const double *x, size_t n, struct load_dist *out) {
  out->n = 0;
  out->min = out->p50 = out->p90 = out->p95 = out->p99 = out->max = out->mean = NAN;
  double *v = n ? malloc(n * sizeof *v) : NULL;
  if (!v) return;
  size_t k = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) v[k++] = x[i], sum += x[i];
  if (k) {
    qsort(v, k, sizeof *v, load_cmp_double);
    out->n = k;
    out->min = v[0];
    out->max = v[k - 1];
    out->p50 = load_order_stat(v, k, 0.50);
    out->p90 = load_order_stat(v, k, 0.90);
    out->p95 = load_order_stat(v, k, 0.95);
    out->p99 = load_order_stat(v, k, 0.99);
    out->mean = sum / (double)k;
  }
  free(v);
}

