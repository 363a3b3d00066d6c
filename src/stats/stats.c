/* stats: descriptive statistics and a least-squares line (see stats.h).
 *
 * Contracts worth knowing:
 *   - NAN and +-inf entries are skipped everywhere: a blank figure is not a zero
 *     and an infinite rate (a zero-length interval) is not a measurement.
 *   - median of an even count = mean of the two middle values; sd is the sample
 *     sd (n - 1); percentiles interpolate linearly between order statistics
 *     (rank = p/100 x (n - 1), the "type 7" definition spreadsheets use).
 *   - Sorting needs a copy of the finite values (inputs are never modified); if
 *     that allocation fails the order statistics (median, percentile) are NAN,
 *     the moments (mean, sd, min, max) are still exact. */
#include "stats/stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Finite values of x, sorted, in a malloc'd array; *out_n their count.
 * Returns NULL when there are none or the allocation failed. */
static double *sorted_finite(const double *x, size_t n, size_t *out_n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) k++;
  *out_n = k;
  if (k == 0) return NULL;
  double *v = malloc(k * sizeof *v);
  if (!v) return NULL;
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) v[k++] = x[i];
  qsort(v, k, sizeof *v, cmp_double);
  return v;
}

/* Linear interpolation between order statistics of sorted v[0..k-1]. */
static double sorted_percentile(const double *v, size_t k, double p) {
  if (k == 0 || isnan(p)) return NAN;
  if (p <= 0) return v[0];
  if (p >= 100) return v[k - 1];
  double rank = p / 100.0 * (double)(k - 1);
  size_t lo = (size_t)rank;
  if (lo >= k - 1) return v[k - 1];
  double frac = rank - (double)lo;
  return v[lo] + frac * (v[lo + 1] - v[lo]);
}

void stats_describe(const double *x, size_t n, struct stats_summary *out) {
  out->n = 0;
  out->median = out->mean = out->sd = out->min = out->max = NAN;
  if (!x) return;
  size_t k = 0;
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) continue;
    k++;
    sum += x[i];
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  if (k == 0) return;
  out->n = k;
  out->mean = sum / (double)k;
  out->min = lo;
  out->max = hi;
  if (k >= 2) {
    /* Two passes: the sum of squared deviations from the mean, not
     * sum(x^2) - n mean^2, which cancels badly for large nearly-equal values. */
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
      if (!isfinite(x[i])) continue;
      double d = x[i] - out->mean;
      ss += d * d;
    }
    out->sd = sqrt(ss / (double)(k - 1));
  }
  size_t m;
  double *v = sorted_finite(x, n, &m);
  if (v) {
    out->median = (m % 2) ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
    free(v);
  }
}

double stats_percentile(const double *x, size_t n, double p) {
  if (!x) return NAN;
  size_t k;
  double *v = sorted_finite(x, n, &k);
  if (!v) return NAN;
  double r = sorted_percentile(v, k, p);
  free(v);
  return r;
}

int stats_fit_line(const double *x, const double *y, size_t n, struct stats_line *out) {
  out->a = out->b = out->se_a = out->se_b = out->r2 = NAN;
  out->n = 0;
  if (!x || !y) return -1;
  size_t k = 0;
  double sx = 0, sy = 0, x0 = NAN;
  bool distinct = false;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i])) continue;
    if (k == 0) x0 = x[i];
    else if (x[i] != x0) distinct = true;
    k++;
    sx += x[i];
    sy += y[i];
  }
  out->n = k;
  /* Checked on the values themselves, not on Sxx > 0: equal x whose mean is
   * not exactly representable leave a tiny non-zero Sxx and an absurd slope. */
  if (k < 2 || !distinct) return -1;
  double xm = sx / (double)k, ym = sy / (double)k;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i])) continue;
    double dx = x[i] - xm, dy = y[i] - ym;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  out->b = sxy / sxx;
  out->a = ym - out->b * xm;
  double sse = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i])) continue;
    double e = y[i] - (out->a + out->b * x[i]);
    sse += e * e;
  }
  /* r^2: a perfect fit (no residual, including a flat line through flat data)
   * is 1; otherwise 1 - SSE/Syy. */
  out->r2 = (syy > 0) ? 1.0 - sse / syy : 1.0;
  if (out->r2 < 0) out->r2 = 0; /* rounding only: least squares never does worse */
  /* Standard errors need a residual degree of freedom: NAN with 2 points. */
  if (k > 2) {
    double s2 = sse / (double)(k - 2);
    out->se_b = sqrt(s2 / sxx);
    out->se_a = sqrt(s2 * (1.0 / (double)k + xm * xm / sxx));
  }
  return 0;
}
