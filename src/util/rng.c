/* rng: see rng.h. */
#include "util/rng.h"

#include <math.h>
#include <pthread.h>

void tm_rng_seed(struct tm_rng *r, uint64_t seed) {
  uint64_t st = seed;
  for (int i = 0; i < 4; i++) r->s[i] = tm_splitmix64(&st);
  /* xoshiro's state must not be all zero; splitmix64 never yields four zeros in a
   * row, but keep the invariant explicit. */
  if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) r->s[0] = 1;
}

double tm_normal_quantile(double p) {
  /* Acklam's coefficients (published constants). */
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  if (!(p > 0.0)) return -INFINITY;
  if (!(p < 1.0)) return INFINITY;
  const double plow = 0.02425;
  double x;
  if (p < plow) {
    double q = sqrt(-2 * log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - plow) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    double q = sqrt(-2 * log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  /* One Halley step on Phi(x) - p (Acklam's refinement): error ~1e-15. */
  double e = 0.5 * erfc(-x / sqrt(2.0)) - p;
  double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

#define TM_NORMAL_TABLE_SIZE 65536

static float normal_table[TM_NORMAL_TABLE_SIZE];
static pthread_once_t normal_once = PTHREAD_ONCE_INIT;

static void normal_table_build(void) {
  /* Build one half and mirror it, so the table is exactly antisymmetric and the
   * sample mean is exactly zero in expectation. */
  for (int i = 0; i < TM_NORMAL_TABLE_SIZE / 2; i++) {
    float v = (float)tm_normal_quantile((i + 0.5) / TM_NORMAL_TABLE_SIZE);
    normal_table[i] = v;
    normal_table[TM_NORMAL_TABLE_SIZE - 1 - i] = -v;
  }
}

const float *tm_normal_table(void) {
  pthread_once(&normal_once, normal_table_build);
  return normal_table;
}

void tm_rng_fill_normal(struct tm_rng *r, float *out, size_t n, float mean, float std) {
  const float *t = tm_normal_table();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint64_t v = tm_rng_next(r);
    out[i + 0] = mean + std * t[v & 0xffff];
    out[i + 1] = mean + std * t[(v >> 16) & 0xffff];
    out[i + 2] = mean + std * t[(v >> 32) & 0xffff];
    out[i + 3] = mean + std * t[v >> 48];
  }
  if (i < n) {
    uint64_t v = tm_rng_next(r);
    for (; i < n; i++, v >>= 16) out[i] = mean + std * t[v & 0xffff];
  }
}
