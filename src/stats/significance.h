/* significance: is a difference larger than the noise? (docs/design.md rules 11
 * and 12). A confidence interval on the ratio B/A of two sets of runs, and a
 * drift test inside one series. Pure functions of their inputs (the bootstrap
 * draws from its own seeded generator: same inputs and seed, same interval).
 *
 * Ratio B/A: computed on log values, so the interval is the same whichever
 * side is called A (the interval of A/B is exactly the reciprocal) and a rate
 * and its time (tok/s vs ms) give mirrored answers:
 *   d = mean(ln b) - mean(ln a),  ratio = exp(d)   (ratio of geometric means;
 *   for runs within a few percent of each other it equals the ratio of the
 *   means to well under 0.1%)
 *   Welch:  se = sqrt(s_a^2/n_a + s_b^2/n_b)  (s = sample sd of the logs)
 *           df = se^4 / ((s_a^2/n_a)^2/(n_a-1) + (s_b^2/n_b)^2/(n_b-1))
 *           [lo, hi] = exp(d -+ t_{(1+c)/2, df} * se)
 *   Bootstrap: R resamples of each side with replacement, d* each time; the
 *           interval is the (1-c)/2 and (1+c)/2 percentiles of exp(d*).
 * Needs at least 2 runs per side and every value > 0 (rates and times are).
 * When both sides have no spread at all, se = 0 and the interval is the
 * point (df = n_a + n_b - 2). */
#ifndef TM_SIGNIFICANCE_H
#define TM_SIGNIFICANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum stats_ci_method { STATS_CI_WELCH = 0, STATS_CI_BOOTSTRAP = 1 };

#define STATS_BOOTSTRAP_RESAMPLES 10000
#define STATS_BOOTSTRAP_SEED 0x746f6b6d65746572ULL /* "tokmeter" */

struct stats_ratio_ci {
  double ratio;       /* exp(mean ln b - mean ln a) */
  double lo, hi;      /* the interval on the ratio */
  double confidence;  /* e.g. 0.95 */
  double se_log;      /* Welch: standard error of d (on the log scale) */
  double df;          /* Welch-Satterthwaite degrees of freedom (NAN for bootstrap) */
  double t;           /* the t quantile used (NAN for bootstrap) */
  size_t n_a, n_b;    /* values used (finite) */
  enum stats_ci_method method;
};

/* 0 with out, or -1 when the interval cannot be computed (fewer than 2
 * finite values on a side, a value <= 0, confidence outside (0, 1), no
 * memory); out->ratio is still set when both sides have a value > 0.
 * NAN entries are skipped. resamples/seed are used by the bootstrap only
 * (0 resamples = STATS_BOOTSTRAP_RESAMPLES). */
int stats_ratio_ci(const double *a, size_t n_a, const double *b, size_t n_b, double confidence,
                   enum stats_ci_method method, unsigned resamples, uint64_t seed,
                   struct stats_ratio_ci *out);

/* Student's t distribution: the CDF at x with df > 0 degrees of freedom (any
 * real df), and its inverse (the quantile at p in (0, 1)); NAN on bad input.
 * Accurate to ~1e-12 relative for df in [0.5, 1e6]. */
double stats_t_cdf(double x, double df);
double stats_t_quantile(double p, double df);

/* Drift inside one series: the least-squares slope of value against run
 * index, tested one-sided against zero (t with n-2 df at the confidence
 * given), in the "slower" direction only: falling values when higher is
 * better (tok/s), rising values when lower is better (ms). Flagged when the
 * slope is significant AND the fitted change over the series is at least
 * min_change (a fraction, e.g. 0.01: a significant 0.1% is not worth a
 * warning). */
struct stats_drift {
  size_t n;              /* finite values used */
  double slope;          /* value units per run */
  double t;              /* slope / se (+-inf when the points lie on a line) */
  double t_crit;         /* one-sided critical value */
  double change;         /* fitted last / fitted first - 1 (negative = falling) */
  bool slower;           /* the series gets slower beyond noise */
};
/* 0 with out, or -1 when fewer than 3 finite values (no test possible). */
int stats_drift(const double *x, size_t n, bool higher_is_better, double confidence,
                double min_change, struct stats_drift *out);

#endif
