/* significance: ratio intervals (Welch on logs, bootstrap), Student's t, and
 * drift inside a series (see significance.h for the formulas).
 *
 * The t CDF goes through the regularized incomplete beta function,
 *   F(x; v) = 1 - I_{v/(v+x^2)}(v/2, 1/2) / 2   for x >= 0,
 * evaluated by its continued fraction (modified Lentz); the quantile inverts
 * it by bisection on a bracket, which is slow next to a Newton step but cannot
 * diverge for small df, and costs nothing at the scale of a report. */
#include "stats/significance.h"

#include <math.h>
#include <stdlib.h>

#include "stats/stats.h"

/* ---- Student's t -------------------------------------------------------- */

/* Continued fraction for I_x(a, b), valid (fast) for x < (a+1)/(a+b+2). */
static double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; m++) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-16) break;
  }
  return h;
}

/* Regularized incomplete beta I_x(a, b) for x in [0, 1]. */
static double beta_inc(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  double bt = exp(lbt);
  if (x < (a + 1) / (a + b + 2)) return bt * beta_cf(a, b, x) / a;
  return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

double stats_t_cdf(double x, double df) {
  if (isnan(x) || !(df > 0)) return NAN;
  if (isinf(x)) return x > 0 ? 1 : 0;
  double tail = 0.5 * beta_inc(df / 2, 0.5, df / (df + x * x)); /* P(T > |x|) */
  return x >= 0 ? 1 - tail : tail;
}

double stats_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
  if (p == 0.5) return 0;
  if (p < 0.5) return -stats_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (stats_t_cdf(hi, df) < p) {
    lo = hi;
    hi *= 2;
    if (hi > 1e300) return INFINITY;
  }
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
    double mid = 0.5 * (lo + hi);
    if (stats_t_cdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

/* ---- ratio intervals ---------------------------------------------------- */

/* Finite values' logs into a malloc'd array; -1 (bad value) when one is <= 0,
 * -2 when out of memory. */
static int logs_of(const double *x, size_t n, double **out, size_t *k) {
  *out = NULL;
  *k = 0;
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return -2;
  for (size_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    if (!(x[i] > 0) || isinf(x[i])) {
      free(v);
      return -1;
    }
    v[(*k)++] = log(x[i]);
  }
  *out = v;
  return 0;
}

static void mean_var(const double *v, size_t k, double *mean, double *var) {
  double s = 0;
  for (size_t i = 0; i < k; i++) s += v[i];
  *mean = k ? s / (double)k : NAN;
  double ss = 0;
  for (size_t i = 0; i < k; i++) ss += (v[i] - *mean) * (v[i] - *mean);
  *var = k > 1 ? ss / (double)(k - 1) : NAN;
}

/* splitmix64: a small, well-mixed generator, enough for resampling indices;
 * kept here so the stats module depends on nothing but libm. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Index in [0, n) from the top bits (multiply-shift: no modulo bias worth
 * mentioning for the run counts seen here). */
static size_t draw_index(uint64_t *state, size_t n) {
  return (size_t)(((unsigned __int128)splitmix64(state) * n) >> 64);
}

static double resample_mean(const double *v, size_t k, uint64_t *state) {
  double s = 0;
  for (size_t i = 0; i < k; i++) s += v[draw_index(state, k)];
  return s / (double)k;
}

int stats_ratio_ci(const double *a, size_t n_a, const double *b, size_t n_b, double confidence,
                   enum stats_ci_method method, unsigned resamples, uint64_t seed,
                   struct stats_ratio_ci *out) {
  out->ratio = out->lo = out->hi = out->se_log = out->df = out->t = NAN;
  out->confidence = confidence;
  out->n_a = out->n_b = 0;
  out->method = method;
  double *la = NULL, *lb = NULL;
  size_t ka = 0, kb = 0;
  int rc = -1;
  if (logs_of(a, n_a, &la, &ka) || logs_of(b, n_b, &lb, &kb)) goto done;
  out->n_a = ka;
  out->n_b = kb;
  if (ka == 0 || kb == 0) goto done;
  double ma, va, mb, vb;
  mean_var(la, ka, &ma, &va);
  mean_var(lb, kb, &mb, &vb);
  double d = mb - ma;
  out->ratio = exp(d);
  if (ka < 2 || kb < 2 || !(confidence > 0 && confidence < 1)) goto done;
  if (method == STATS_CI_BOOTSTRAP) {
    unsigned r = resamples ? resamples : STATS_BOOTSTRAP_RESAMPLES;
    double *ds = malloc((size_t)r * sizeof *ds);
    if (!ds) goto done;
    uint64_t state = seed;
    for (unsigned i = 0; i < r; i++)
      ds[i] = resample_mean(lb, kb, &state) - resample_mean(la, ka, &state);
    double alpha = 1 - confidence;
    out->lo = exp(stats_percentile(ds, r, 100 * alpha / 2));
    out->hi = exp(stats_percentile(ds, r, 100 * (1 - alpha / 2)));
    free(ds);
    rc = isfinite(out->lo) && isfinite(out->hi) ? 0 : -1;
    goto done;
  }
  double wa = va / (double)ka, wb = vb / (double)kb;
  double se2 = wa + wb;
  out->se_log = sqrt(se2);
  if (se2 == 0) { /* no spread on either side: the interval is the point */
    out->df = (double)(ka + kb - 2);
    out->t = stats_t_quantile((1 + confidence) / 2, out->df);
    out->lo = out->hi = out->ratio;
    rc = 0;
    goto done;
  }
  out->df = se2 * se2 / (wa * wa / (double)(ka - 1) + wb * wb / (double)(kb - 1));
  out->t = stats_t_quantile((1 + confidence) / 2, out->df);
  out->lo = exp(d - out->t * out->se_log);
  out->hi = exp(d + out->t * out->se_log);
  rc = 0;
done:
  free(la);
  free(lb);
  return rc;
}

/* ---- drift -------------------------------------------------------------- */

int stats_drift(const double *x, size_t n, bool higher_is_better, double confidence,
                double min_change, struct stats_drift *out) {
  out->n = 0;
  out->slope = out->t = out->t_crit = out->change = NAN;
  out->slower = false;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) k++;
  out->n = k;
  if (k < 3) return -1;
  double *idx = malloc(k * sizeof *idx), *val = malloc(k * sizeof *val);
  if (!idx || !val) {
    free(idx);
    free(val);
    return -1;
  }
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) {
      idx[k] = (double)k;
      val[k++] = x[i];
    }
  struct stats_line line;
  int rc = stats_fit_line(idx, val, k, &line);
  free(idx);
  free(val);
  if (rc) return -1;
  out->slope = line.b;
  out->t = line.se_b > 0 ? line.b / line.se_b : (line.b > 0 ? INFINITY : line.b < 0 ? -INFINITY : 0);
  out->t_crit = stats_t_quantile(confidence, (double)(k - 2));
  double first = line.a, last = line.a + line.b * (double)(k - 1);
  out->change = first > 0 ? last / first - 1 : NAN;
  double t_slower = higher_is_better ? -out->t : out->t;
  double change_slower = higher_is_better ? -out->change : out->change;
  out->slower = t_slower > out->t_crit && isfinite(change_slower) && change_slower >= min_change;
  return 0;
}
