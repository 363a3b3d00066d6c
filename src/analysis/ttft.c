/* ttft: the time-to-first-token model TTFT(L) = fixed_ms + L / prefill_tok_s,
 * fitted by least squares, and the (length, TTFT) points of results files.
 * Contracts in ttft.h. */
#include "record/keys.h"
#include "analysis/ttft.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"

/* ------------------------------------------------------------ the fit --- */

int ttft_fit_points(const double *len, const double *ttft_ms, size_t n, struct ttft_fit *fit,
                    struct tm_err *err) {
  memset(fit, 0, sizeof *fit);
  fit->fixed_ms = fit->se_fixed_ms = fit->ms_per_token = fit->se_ms_per_token = NAN;
  fit->prefill_tok_s = fit->se_prefill_tok_s = fit->r2 = NAN;
  fit->min_len = fit->max_len = fit->mean_len = NAN;
  if (n > 0 && (!len || !ttft_ms)) return tm_errf(err, "ttft fit: no points");
  /* Count what stats_fit_line will use (both finite), and the distinct lengths. */
  size_t k = 0, n_lengths = 0;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(len[i]) || !isfinite(ttft_ms[i])) continue;
    if (len[i] <= 0)
      return tm_errf(err, "ttft fit: prompt length %g is not positive (point %zu)", len[i], i);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = isfinite(len[j]) && isfinite(ttft_ms[j]) && len[j] == len[i];
    if (!seen) n_lengths++;
    if (len[i] < lo) lo = len[i];
    if (len[i] > hi) hi = len[i];
    sum += len[i];
    k++;
  }
  fit->n_points = k;
  fit->n_lengths = n_lengths;
  /* 3 runs: with 2 points the line passes through both and has no error
   * estimate; an uncertainty is part of the answer. */
  if (k < 3)
    return tm_errf(err, "ttft fit needs at least 3 runs, got %zu", k);
  if (n_lengths < 2)
    return tm_errf(err, "ttft fit needs at least 2 distinct prompt lengths, got %zu "
                        "(measure several, e.g. tokmeter bench --ttft-sweep)",
                   n_lengths);
  struct stats_line line;
  if (stats_fit_line(len, ttft_ms, n, &line) != 0)
    return tm_errf(err, "ttft fit: least squares failed");
  if (!(line.b > 0))
    return tm_errf(err, "ttft fit: TTFT does not grow with the prompt (slope %.4g ms/token): "
                        "a prompt cache, or noise larger than the signal",
                   line.b);
  fit->fixed_ms = line.a;
  fit->se_fixed_ms = line.se_a;
  fit->ms_per_token = line.b;
  fit->se_ms_per_token = line.se_b;
  fit->prefill_tok_s = 1000.0 / line.b;
  /* Delta method on r = 1000 / b: |dr/db| = 1000 / b^2. */
  fit->se_prefill_tok_s = 1000.0 * line.se_b / (line.b * line.b);
  fit->r2 = line.r2;
  fit->min_len = lo;
  fit->max_len = hi;
  fit->mean_len = sum / (double)k;
  return 0;
}

double ttft_predict_ms(const struct ttft_fit *fit, double len, double *se_ms) {
  double y = fit->fixed_ms + fit->ms_per_token * len;
  if (se_ms) {
    /* var(a + bL) = var(a) + L^2 var(b) + 2 L cov(a, b); for least squares
     * cov(a, b) = -mean(L) var(b). */
    double vb = fit->se_ms_per_token * fit->se_ms_per_token;
    double v = fit->se_fixed_ms * fit->se_fixed_ms + len * len * vb -
               2.0 * len * fit->mean_len * vb;
    *se_ms = v > 0 ? sqrt(v) : (isfinite(v) ? 0.0 : NAN);
  }
  return y;
}

/* A fixed cost fitted below zero has no share to read: no wait is less than
 * none, and "0% of the wait is fixed cost" beside "-749 ms" says a thing the
 * fit does not (it says the line does not hold: TTFT grows faster than
 * linearly over the range, or the points are noise). NAN then. */
double ttft_fixed_share(const struct ttft_fit *fit, double len) {
  double total = ttft_predict_ms(fit, len, NULL);
  if (!isfinite(total) || !(total > 0) || !(fit->fixed_ms >= 0)) return NAN;
  double s = fit->fixed_ms / total;
  if (s > 1) s = 1;
  return s;
}

/* ---------------------------------------------------- points from files --- */


static int group_add(struct ttft_groups *out, const char *key, double len, double ms) {
  struct ttft_group *g = NULL;
  for (size_t i = 0; i < out->n && !g; i++)
    if (!strcmp(out->g[i].key, key)) g = &out->g[i];
  if (!g) {
    struct ttft_group *grown = realloc(out->g, (out->n + 1) * sizeof *grown);
    if (!grown) return -1;
    out->g = grown;
    g = &out->g[out->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->key, sizeof g->key, "%s", key);
  }
  double *l = realloc(g->len, (g->n + 1) * sizeof *l);
  if (!l) return -1;
  g->len = l;
  double *t = realloc(g->ttft_ms, (g->n + 1) * sizeof *t);
  if (!t) return -1;
  g->ttft_ms = t;
  g->len[g->n] = len;
  g->ttft_ms[g->n] = ms;
  g->n++;
  return 0;
}

/* In-process (engine, llama-bench): a timed pp test's batched prefill of L
 * tokens is the time to the first token's logits. Returns 1 with a point. */
static int inprocess_point(json_t *run, const char *backend, char *key, size_t n, double *len,
                           double *ms) {
  const char *test = record_str(run, RK_TEST);
  const char *phase = record_str(run, RK_PHASE);
  if (!test || strncmp(test, "pp", 2) != 0) return 0;
  if (phase && strcmp(phase, "prefill") != 0) return 0;
  if (record_true(run, RK_WARMUP) || json_is_false(record_get(run, RK_OK))) return 0;
  *len = record_num(run, RK_TOKENS);
  *ms = record_num(run, RK_MS);
  if (!isfinite(*len) || !isfinite(*ms)) return 0;
  /* as series.h keys them: the type is added unless the label says it */
  const char *model = record_str(run, RK_MODEL_NAME);
  if (!model) model = record_str(run, RK_MODEL_FILE);
  if (!model) model = "?";
  const char *type = record_str(run, RK_MODEL_TYPE);
  char typed[48] = "";
  if (type && *type && !strstr(model, type)) snprintf(typed, sizeof typed, " | %s", type);
  snprintf(key, n, "%s | %s%s | t%lld | d%lld", backend, model, typed,
           record_int(run, RK_THREADS, -1), record_int(run, RK_DEPTH, 0));
  return 1;
}

/* Server: (tokens.processed, client.ttft_ms) of a timed, successful run that
 * is not a warm-up, a calibration request, a cold first request or a cache
 * hit excluded from prefill (rule 2). */
static int server_point(json_t *run, const char *backend, char *key, size_t n, double *len,
                        double *ms) {
  if (record_true(run, RK_WARMUP) || record_true(run, RK_CALIBRATION) || record_true(run, RK_COLD)) return 0;
  if (!record_true(run, RK_OK) || record_true(run, RK_CACHE_PREFILL_EXCLUDED)) return 0;
  *len = record_num(run, RK_TOKENS_PROCESSED);
  *ms = record_num(run, RK_CLIENT_TTFT_MS);
  if (!isfinite(*len) || !isfinite(*ms) || *len <= 0) return 0;
  const char *target = record_str(run, RK_TARGET);
  const char *model = record_str(run, RK_MODEL);
  if (!model) model = record_str(run, RK_SERVER_MODEL);
  snprintf(key, n, "%s | %s | %s", backend, target ? target : "?", model ? model : "?");
  return 1;
}

int ttft_points_from_results(const struct results *r, struct ttft_groups *out,
                             struct tm_err *err) {
  out->g = NULL;
  out->n = 0;
  for (size_t i = 0; i < r->n_inv; i++) {
    const struct results_invocation *inv = &r->inv[i];
    for (size_t j = 0; j < inv->n_runs; j++) {
      json_t *run = inv->runs[j];
      const char *backend = record_str(run, RK_BACKEND);
      if (!backend) continue;
      char key[sizeof out->g[0].key];
      double len = NAN, ms = NAN;
      bool inproc = !strcmp(backend, "engine") || !strcmp(backend, "llama-bench");
      int got = inproc ? inprocess_point(run, backend, key, sizeof key, &len, &ms)
                       : server_point(run, backend, key, sizeof key, &len, &ms);
      if (got && group_add(out, key, len, ms) != 0) {
        ttft_groups_free(out);
        return tm_errf(err, "ttft: out of memory");
      }
    }
  }
  return 0;
}

void ttft_groups_free(struct ttft_groups *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++) {
    free(g->g[i].len);
    free(g->g[i].ttft_ms);
  }
  free(g->g);
  g->g = NULL;
  g->n = 0;
}
