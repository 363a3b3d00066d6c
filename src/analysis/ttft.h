/* ttft: the time-to-first-token model (issue 5, part 2).
 *
 *   TTFT(L) = fixed_ms + L / prefill_tok_s
 *
 * fitted by least squares (stats_fit_line: ttft_ms = a + b * L) over runs at
 * several prompt lengths L (prompt tokens actually processed), so
 * fixed_ms = a and prefill_tok_s = 1000 / b, each with its standard error
 * (the rate's by the delta method: se_rate = 1000 * se_b / b^2). The fit
 * refuses (returns -1 with a reason) when fewer than 3 runs or fewer than 2
 * distinct lengths are given, or when the slope is not positive (TTFT that
 * does not grow with the prompt: a cache, or noise larger than the signal).
 *
 * Sources of points (ttft_points_from_results):
 *  - server runs: (tokens.processed, client.ttft_ms) of timed successful runs
 *    whose prefill is not excluded; grouped by target + model;
 *  - in-process runs ("engine", "llama-bench"): pp tests, (tokens, ms): the
 *    batched prefill of L tokens is the in-process time to the first token's
 *    logits; grouped by model + threads + depth.
 * `tokmeter bench --ttft-sweep` measures such lengths on purpose. */
#ifndef TM_TTFT_H
#define TM_TTFT_H

#include <stddef.h>

#include "analysis/results.h"
#include "util/err.h"

struct ttft_fit {
  double fixed_ms, se_fixed_ms;         /* a and its standard error */
  double ms_per_token, se_ms_per_token; /* b and its standard error */
  double prefill_tok_s, se_prefill_tok_s;
  double r2;
  size_t n_points, n_lengths;
  double min_len, max_len;              /* range of L fitted (prediction outside is extrapolation) */
  double mean_len;                      /* mean L: cov(a, b) = -mean_len * se_b^2 */
};

/* 0 with fit, or -1 with err saying why no fit is possible. */
int ttft_fit_points(const double *len, const double *ttft_ms, size_t n, struct ttft_fit *fit,
                    struct tm_err *err);
/* Predicted TTFT at prompt length L, and its standard error (from the
 * covariance of a and b). */
double ttft_predict_ms(const struct ttft_fit *fit, double len, double *se_ms);
/* Share (0..1) of TTFT(L) that is fixed cost: fixed_ms / TTFT(L); NAN when
 * the fixed cost fits below zero (no share to read) or TTFT(L) <= 0. */
double ttft_fixed_share(const struct ttft_fit *fit, double len);

/* One group of points from results files. */
struct ttft_group {
  char key[320];       /* "llamacpp | http://127.0.0.1:8080 | qwen3" or "engine | <model> | t2 | d0" */
  double *len, *ttft_ms;
  size_t n;
};
struct ttft_groups {
  struct ttft_group *g;
  size_t n;
};
int ttft_points_from_results(const struct results *r, struct ttft_groups *out,
                             struct tm_err *err);
void ttft_groups_free(struct ttft_groups *g);

#endif
