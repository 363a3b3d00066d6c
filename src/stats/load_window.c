/* load_window: see load_window.h. */
#include "stats/load_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *load_slo_name(enum load_slo_metric m) {
  static const char *const names[LOAD_SLO_COUNT] = {"ttft", "tpot", "e2e"};
  return (unsigned)m < LOAD_SLO_COUNT ? names[m] : "?";
}

bool load_slo_any(const struct load_slo *slo) {
  for (int k = 0; slo && k < LOAD_SLO_COUNT; k++)
    if (slo->set[k]) return true;
  return false;
}

int load_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

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

long load_knee_index(const double *agg, const double *ttft_p99, size_t n) {
  for (size_t i = 0; i + 1 < n; i++) {
    const double gain = agg[i + 1] / agg[i] - 1, lat = ttft_p99[i + 1] / ttft_p99[i] - 1;
    if (isfinite(gain) && isfinite(lat) && gain < 0.10 && lat > 0.50) return (long)i;
  }
  return -1;
}

bool load_counters_disagree(double server, double client, size_t n) {
  return isfinite(server) && fabs(server - client) > 0.02 * client + 2.0 * (double)n;
}

static bool sent_inside(const struct load_sample *sm, double w0, double w1) {
  return sm->t_send >= w0 && sm->t_send <= w1;
}

/* The SLO figures of the level's requests (load_window.h struct load_slo). */
static int slo_figures(const struct load_sample *x, size_t n_x, double w0, double w1,
                       const struct load_slo *slo, struct load_figures *f) {
  f->slo_met_share = f->goodput_req_s = f->goodput_tok_s = NAN;
  f->slo_met = false;
  if (!load_slo_any(slo)) return 0;
  double *v[LOAD_SLO_COUNT];
  int rc = 0;
  for (int k = 0; k < LOAD_SLO_COUNT; k++)
    if (!(v[k] = calloc(n_x + 1, sizeof(double)))) rc = -1;
  size_t n = 0, met = 0;
  double good_req = 0, good_tok = 0;
  for (size_t i = 0; !rc && i < n_x; i++) {
    const struct load_sample *sm = &x[i];
    if (!sent_inside(sm, w0, w1)) continue;
    const double fig[LOAD_SLO_COUNT] = {sm->ok ? sm->ttft_ms : INFINITY,
                                        sm->ok ? sm->tpot_ms : INFINITY,
                                        sm->ok ? sm->e2e_ms : INFINITY};
    bool ok = sm->ok;
    for (int k = 0; k < LOAD_SLO_COUNT; k++) {
      v[k][n] = fig[k];
      if (slo->set[k] && isfinite(fig[k]) && fig[k] > slo->limit_ms[k]) ok = false;
      if (slo->set[k] && !isfinite(fig[k]) && !(k == LOAD_SLO_TPOT && sm->ok)) ok = false;
    }
    n++;
    if (!ok) continue;
    met++;
    if (sm->t_end >= w0 && sm->t_end <= w1) good_req++, good_tok += sm->tokens;
  }
  const double window_s = w1 - w0;
  f->slo_met_share = n ? (double)met / (double)n : NAN;
  f->goodput_req_s = window_s > 0 ? good_req / window_s : NAN;
  f->goodput_tok_s = window_s > 0 ? good_tok / window_s : NAN;
  bool meets = n > 0 && !rc;
  for (int k = 0; !rc && k < LOAD_SLO_COUNT; k++) {
    if (!slo->set[k]) continue;
    /* the percentile over the requests, failed ones infinitely late (an
     * unknown time per output token is left out of its objective) */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!isnan(v[k][i])) v[k][m++] = v[k][i];
    if (!m) continue;
    qsort(v[k], m, sizeof(double), load_cmp_double);
    double at_p = load_order_stat(v[k], m, slo->percentile[k] / 100);
    if (!(at_p <= slo->limit_ms[k])) meets = false;
  }
  f->slo_met = meets;
  for (int k = 0; k < LOAD_SLO_COUNT; k++) free(v[k]);
  return rc;
}

enum { V_DECODE, V_TTFT, V_TTFT_SCHED, V_TTFAT, V_TPOT, V_E2E, V_QUEUE, V_COUNT };

int load_window_figures(const struct load_sample *x, size_t n, double w0, double w1,
                        bool open_loop, const struct load_slo *slo, struct load_figures *f) {
  memset(f, 0, sizeof *f);
  f->window_s = w1 - w0;
  size_t n_gaps = 0;
  for (size_t i = 0; i < n; i++)
    if (x[i].token_by_token && x[i].n_chunks > 1) n_gaps += x[i].n_chunks - 1;
  double *v[V_COUNT];
  int rc = 0;
  for (int k = 0; k < V_COUNT; k++)
    if (!(v[k] = calloc(n ? n : 1, sizeof(double)))) rc = -1;
  double *gaps = calloc(n_gaps ? n_gaps : 1, sizeof *gaps);
  if (!gaps) rc = -1;
  size_t m = 0, g = 0;
  double out_tokens = 0, prompt_tokens = 0, lag_sum = 0;
  uint32_t ok_in_window = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    const struct load_sample *sm = &x[i];
    for (uint32_t k = 0; k < sm->n_chunks; k++) {
      const double t = sm->chunk_t[k];
      if (t >= w0 && t <= w1) out_tokens += sm->tokens / sm->n_chunks;
    }
    if (sm->ok && !sm->cache_hit && sm->n_chunks && sm->chunk_t[0] >= w0 &&
        sm->chunk_t[0] <= w1 && isfinite(sm->prompt_processed))
      prompt_tokens += sm->prompt_processed;
    if (sm->ok && sm->t_end >= w0 && sm->t_end <= w1) ok_in_window++;
    if (!sent_inside(sm, w0, w1)) continue;
    const double lag_s = sm->t_send - sm->t_sched;
    if (lag_s > 0) lag_sum += lag_s;
    if (!sm->ok) {
      f->requests_failed++;
      f->failed_by_kind[sm->error > 0 && sm->error < LOAD_ERROR_KINDS ? sm->error : LOAD_ERROR_KINDS - 1]++;
      f->implausible += sm->implausible;
      continue;
    }
    f->requests_ok++;
    f->cache_hits += sm->cache_hit;
    f->buffered += sm->buffered;
    f->short_decode += sm->short_decode;
    f->client_chunks += sm->n_chunks;
    f->server_tokens += (uint64_t)sm->tokens;
    if (lag_s > LOAD_LATE_SEND_S) f->late_sends++;
    if (lag_s * 1e3 > f->max_send_lag_ms) f->max_send_lag_ms = lag_s * 1e3;
    const bool prefill_ok = !sm->cache_hit; /* a hit's TTFT is no prefill */
    v[V_DECODE][m] = sm->decode_tok_s;
    v[V_TTFT][m] = prefill_ok ? sm->ttft_ms : NAN;
    v[V_TTFT_SCHED][m] = prefill_ok && isfinite(sm->ttft_ms) ? sm->ttft_ms + lag_s * 1e3 : NAN;
    v[V_TTFAT][m] = prefill_ok ? sm->ttfat_ms : NAN;
    v[V_TPOT][m] = sm->tpot_ms;
    v[V_E2E][m] = sm->e2e_ms;
    v[V_QUEUE][m] = prefill_ok ? sm->queue_ms : NAN;
    m++;
    if (sm->token_by_token)
      for (uint32_t k = 1; k < sm->n_chunks; k++)
        gaps[g++] = (sm->chunk_t[k] - sm->chunk_t[k - 1]) * 1e3;
  }
  if (!rc) {
    load_dist_of(v[V_DECODE], m, &f->per_stream_decode_tok_s);
    load_dist_of(v[V_TTFT], m, &f->ttft_ms);
    load_dist_of(v[V_TTFT_SCHED], m, &f->ttft_sched_ms);
    load_dist_of(v[V_TTFAT], m, &f->ttfat_ms);
    load_dist_of(v[V_TPOT], m, &f->tpot_ms);
    load_dist_of(v[V_E2E], m, &f->e2e_ms);
    load_dist_of(v[V_QUEUE], m, &f->queue_ms);
    load_dist_of(gaps, g, &f->itl_ms);
  }
  for (int k = 0; k < V_COUNT; k++) free(v[k]);
  free(gaps);
  f->output_tokens_in_window = out_tokens;
  f->prompt_tokens_in_window = prompt_tokens;
  f->aggregate_output_tok_s = f->window_s > 0 ? out_tokens / f->window_s : NAN;
  f->aggregate_prompt_tok_s = f->window_s > 0 ? prompt_tokens / f->window_s : NAN;
  f->requests_per_s = f->window_s > 0 ? ok_in_window / f->window_s : NAN;
  f->send_lag_share = f->window_s > 0 ? lag_sum / f->window_s : NAN;
  f->behind_schedule = open_loop && f->send_lag_share > LOAD_BEHIND_SHARE;
  if (!rc) rc = slo_figures(x, n, w0, w1, slo, f);
  return rc;
}
