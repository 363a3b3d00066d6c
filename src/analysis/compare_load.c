/* compare_load: see compare_load.h. */
#include "analysis/compare_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

bool compare_load_has_loads(const struct results *r) {
  for (size_t i = 0; r && i < r->n_inv; i++)
    if (r->inv[i].n_loads) return true;
  return false;
}

static double num(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The level's load and its name; closed loop when concurrency is set. */
static double load_of(json_t *l, bool *closed, char *name, size_t n) {
  json_t *c = json_object_get(l, "concurrency");
  *closed = json_is_integer(c);
  const double v = *closed ? (double)json_integer_value(c) : num(l, "request_rate");
  if (*closed) snprintf(name, n, "c=%.0f", v);
  else snprintf(name, n, "rate=%g/s", v);
  return v;
}

/* One side's run: exactly one. */
static int side(const char *path, struct results *r, struct load_views *vs,
                const struct load_view **out, bool *oom, struct tm_err *err) {
  const char *paths[1] = {path};
  if (results_load(paths, 1, r, err) != 0) return -1;
  if (load_views_build(r, vs, err) != 0) {
    *oom = strstr(err->msg, "out of memory") != NULL;
    return -1;
  }
  size_t usable = 0;
  for (size_t i = 0; i < vs->n; i++)
    if (vs->v[i].n_levels) *out = &vs->v[i], usable++;
  if (usable == 1) return 0;
  if (usable == 0) {
    for (size_t i = 0; i < vs->n; i++)
      if (vs->v[i].refused[0]) return tm_errf(err, "%s: %s", path, vs->v[i].refused);
    return tm_errf(err, "%s holds no load levels", path);
  }
  return tm_errf(err, "%s holds %zu load runs: give one per side (a run's shards count as one)",
                 path, usable);
}

/* The metric's values on one level: per request, or (aggregate) per slice
 * of the window. A new array in *out (NULL when none), its length. */
static size_t values(const struct load_view_level *L, const char *metric, double **out) {
  *out = NULL;
  /* In process (the engine's batched decode): a pass's streams step
   * together, so their figures are one figure B times, not B samples; the
   * samples are the timed passes (reps_aggregate_tok_s): the aggregate, one
   * stream's share of it, and the pass's duration (B x steps / aggregate). */
  json_t *reps = json_object_get(L->record, "reps_aggregate_tok_s");
  if (json_is_array(reps)) {
    const double B = num(L->record, "concurrency"), steps = num(L->record, "steps");
    double *v = calloc(json_array_size(reps) + 1, sizeof *v);
    if (!v) return 0;
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(reps); i++) {
      const double agg = json_number_value(json_array_get(reps, i));
      double x = NAN;
      if (!strcmp(metric, "aggregate_output_tok_s")) x = agg;
      else if (!strcmp(metric, "per_stream_decode_tok_s")) x = agg / B;
      else if (!strcmp(metric, "e2e_ms")) x = 1e3 * B * steps / agg;
      if (isfinite(x) && x > 0) v[n++] = x;
    }
    *out = v;
    return n;
  }
  if (!strcmp(metric, "aggregate_output_tok_s")) {
    const double w = L->w1 - L->w0;
    size_t k = COMPARE_LOAD_SLICES;
    while (k > 1 && w / (double)k < 1.0) k--;
    double *v = calloc(k, sizeof *v);
    if (!v) return 0;
    for (size_t i = 0; i < L->n_samples; i++) {
      const struct load_sample *sm = &L->samples[i];
      for (uint32_t c = 0; c < sm->n_chunks; c++) {
        const double t = sm->chunk_t[c];
        if (t < L->w0 || t > L->w1) continue;
        size_t s = (size_t)((t - L->w0) / w * (double)k);
        if (s >= k) s = k - 1;
        v[s] += sm->tokens / sm->n_chunks;
      }
    }
    for (size_t s = 0; s < k; s++) v[s] /= w / (double)k;
    *out = v;
    return k;
  }
  double *v = calloc(L->n_samples ? L->n_samples : 1, sizeof *v);
  if (!v) return 0;
  size_t n = 0;
  for (size_t i = 0; i < L->n_samples; i++) {
    const struct load_sample *sm = &L->samples[i];
    if (!sm->ok || sm->t_send < L->w0 || sm->t_send > L->w1) continue;
    double x = !strcmp(metric, "per_stream_decode_tok_s") ? sm->decode_tok_s
               : !strcmp(metric, "ttft_ms")               ? (sm->cache_hit ? NAN : sm->ttft_ms)
                                                          : sm->e2e_ms;
    if (isfinite(x)) v[n++] = x;
  }
  *out = v;
  return n;
}

static const char *const METRICS[] = {"aggregate_output_tok_s", "per_stream_decode_tok_s",
                                      "ttft_ms", "e2e_ms"};

int compare_load_files(const char *a, const char *b, const struct compare_opts *o,
                       struct compare_load *c, bool *oom, struct tm_err *err) {
  memset(c, 0, sizeof *c);
  *oom = false;
  if (side(a, &c->ra, &c->va, &c->a, oom, err) != 0 ||
      side(b, &c->rb, &c->vb, &c->b, oom, err) != 0) {
    compare_load_free(c);
    return -1;
  }
  const size_t nm = sizeof METRICS / sizeof *METRICS;
  c->rows = calloc(c->a->n_levels * nm + 1, sizeof *c->rows);
  if (!c->rows) {
    *oom = true;
    compare_load_free(c);
    return tm_errf(err, "out of memory");
  }
  size_t matched_b = 0;
  for (size_t i = 0; i < c->a->n_levels; i++) {
    const struct load_view_level *LA = &c->a->levels[i], *LB = NULL;
    bool ca, cb;
    char name[32], nb[32];
    const double la = load_of(LA->record, &ca, name, sizeof name);
    for (size_t j = 0; j < c->b->n_levels && !LB; j++) {
      const double lb = load_of(c->b->levels[j].record, &cb, nb, sizeof nb);
      if (ca == cb && (ca ? la == lb : fabs(lb / la - 1) <= 1e-3)) LB = &c->b->levels[j];
    }
    if (!LB) {
      c->only_a++;
      continue;
    }
    matched_b++;
    const bool in_process = json_is_array(json_object_get(LA->record, "reps_aggregate_tok_s")) &&
                            json_is_array(json_object_get(LB->record, "reps_aggregate_tok_s"));
    for (size_t m = 0; m < nm; m++) {
      if (in_process && !strcmp(METRICS[m], "ttft_ms")) continue; /* prompts not timed */
      struct compare_load_row *row = &c->rows[c->n++];
      snprintf(row->level, sizeof row->level, "%s", name);
      row->metric = METRICS[m];
      row->lower_is_better = strstr(METRICS[m], "_ms") != NULL;
      row->a = m == 0 ? num(LA->record, METRICS[m])
                      : num(json_object_get(LA->record, METRICS[m]), "p50");
      row->b = m == 0 ? num(LB->record, METRICS[m])
                      : num(json_object_get(LB->record, METRICS[m]), "p50");
      double *va, *vb;
      const size_t na = values(LA, METRICS[m], &va), nb2 = values(LB, METRICS[m], &vb);
      row->ci_ok = va && vb &&
                   stats_ratio_ci(va, na, vb, nb2, o->confidence, o->method, o->resamples,
                                  o->seed, &row->ci) == 0;
      bool zero = false;
      for (size_t k = 0; k < na; k++) zero |= va[k] <= 0;
      for (size_t k = 0; k < nb2; k++) zero |= vb[k] <= 0;
      free(va), free(vb);
      if (zero) row->verdict = COMPARE_ZERO;
      else if (!row->ci_ok) row->verdict = COMPARE_TOO_FEW;
      else if (row->ci.lo > 1) row->verdict = row->lower_is_better ? COMPARE_SLOWER : COMPARE_FASTER;
      else if (row->ci.hi < 1) row->verdict = row->lower_is_better ? COMPARE_FASTER : COMPARE_SLOWER;
      else row->verdict = COMPARE_NOT_DISTINGUISHABLE;
    }
  }
  c->only_b = c->b->n_levels - matched_b;
  if (!c->n) {
    compare_load_free(c);
    return tm_errf(err, "nothing to compare: no level of %s has the load of one of %s (the same "
                        "concurrency, or request rate)", a, b);
  }
  return 0;
}

void compare_load_free(struct compare_load *c) {
  free(c->rows);
  c->rows = NULL;
  load_views_free(&c->va);
  load_views_free(&c->vb);
  results_free(&c->ra);
  results_free(&c->rb);
}

json_t *compare_load_json(const struct compare_load *c, const char *path_a, const char *path_b,
                          const struct compare_opts *o) {
  json_t *rows = json_array();
  for (size_t i = 0; i < c->n; i++) {
    const struct compare_load_row *r = &c->rows[i];
    json_array_append_new(
        rows, json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}", "level",
                        r->level, "metric", r->metric, "lower_is_better", r->lower_is_better, "a",
                        record_json_num(r->a), "b", record_json_num(r->b), "ratio",
                        record_json_num(r->ci_ok ? r->ci.ratio : NAN), "lo",
                        record_json_num(r->ci_ok ? r->ci.lo : NAN), "hi",
                        record_json_num(r->ci_ok ? r->ci.hi : NAN), "n_a",
                        (json_int_t)(r->ci_ok ? r->ci.n_a : 0), "n_b",
                        (json_int_t)(r->ci_ok ? r->ci.n_b : 0), "verdict",
                        compare_verdict_name(r->verdict)));
  }
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:f, s:s, s:o, s:I, s:I}", "kind", "load",
                   "a", path_a, "b", path_b, "a_run", c->a->title, "b_run", c->b->title,
                   "a_shards", (json_int_t)c->a->shards,
                   "b_shards", (json_int_t)c->b->shards, "confidence", o->confidence, "method",
                   o->method == STATS_CI_BOOTSTRAP ? "bootstrap" : "welch", "rows", rows,
                   "only_a", (json_int_t)c->only_a, "only_b", (json_int_t)c->only_b);
}
