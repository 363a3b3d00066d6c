/* load_view: see load_view.h. */
#include "analysis/load_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/load_record.h"
#include "record/record.h"

static double num(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* settings.shard of an invocation: count > 1 for a shard of a run. */
static json_t *shard_of(const struct results_invocation *inv) {
  json_t *sh = json_object_get(json_object_get(inv->identity, "settings"), "shard");
  json_t *n = json_object_get(sh, "count");
  return json_is_integer(n) && json_integer_value(n) > 1 && json_is_string(json_object_get(sh, "run"))
             ? sh
             : NULL;
}

static const char *target_of(const struct results_invocation *inv) {
  const char *t = json_string_value(json_object_get(inv->identity, "target"));
  return t ? t : "(no identity)";
}

static void free_samples(struct load_sample *x, size_t n) {
  for (size_t i = 0; i < n; i++) free((void *)x[i].chunk_t);
  free(x);
}

/* The samples of level `level` of inv appended to *x (error names interned
 * in names[]). 0, or -1 with err. */
static int add_samples(const struct results_invocation *inv, int level, struct load_sample **x,
                       size_t *n, size_t *cap, const char *names[LOAD_ERROR_KINDS],
                       struct tm_err *err) {
  for (size_t i = 0; i < inv->n_requests; i++) {
    json_t *lv = json_object_get(inv->requests[i], "level");
    if (!json_is_integer(lv) || json_integer_value(lv) != level) continue;
    if (*n == *cap) {
      size_t nc = *cap ? 2 * *cap : 64;
      struct load_sample *g = realloc(*x, nc * sizeof *g);
      if (!g) return tm_errf(err, "out of memory");
      *x = g, *cap = nc;
    }
    struct load_sample *sm = &(*x)[*n];
    double *chunks;
    const char *ename;
    int lvl;
    char why[160];
    if (record_load_sample_parse(inv->requests[i], sm, &chunks, &ename, &lvl, why, sizeof why) != 0)
      return tm_errf(err, "%s: %s", inv->source, why);
    (*n)++;
    if (sm->ok) continue;
    int k = 1;
    while (k < LOAD_ERROR_KINDS - 1 && names[k] && strcmp(names[k], ename)) k++;
    if (!names[k]) names[k] = ename;
    else if (strcmp(names[k], ename)) names[k = LOAD_ERROR_KINDS - 1] = "other";
    sm->error = k;
  }
  return 0;
}

static struct load_slo slo_of(json_t *settings) {
  struct load_slo slo;
  memset(&slo, 0, sizeof slo);
  json_t *o = json_object_get(settings, "slo");
  for (int k = 0; k < LOAD_SLO_COUNT; k++) {
    json_t *m = json_object_get(o, load_slo_name((enum load_slo_metric)k));
    if (!json_is_object(m)) continue;
    slo.set[k] = true;
    slo.limit_ms[k] = num(m, "limit_ms");
    slo.percentile[k] = num(m, "percentile");
  }
  return slo;
}

/* One process's run: its level records as they are, with their samples. */
static int view_single(const struct results_invocation *inv, struct load_view *v,
                       struct tm_err *err) {
  snprintf(v->title, sizeof v->title, "%s", target_of(inv));
  v->inv = inv;
  v->shards = 1;
  v->levels = calloc(inv->n_loads ? inv->n_loads : 1, sizeof *v->levels);
  if (!v->levels) return tm_errf(err, "out of memory");
  for (size_t k = 0; k < inv->n_loads; k++) {
    struct load_view_level *L = &v->levels[v->n_levels++];
    L->record = json_incref(inv->loads[k]);
    L->w0 = num(L->record, "window_start_unix");
    L->w1 = num(L->record, "window_end_unix");
    L->open_loop = !json_is_integer(json_object_get(L->record, "concurrency"));
    const char *names[LOAD_ERROR_KINDS] = {0};
    size_t cap = 0;
    if (add_samples(inv, (int)k, &L->samples, &L->n_samples, &cap, names, err)) return -1;
  }
  return 0;
}

/* The shards' server counters over level k merged: the earliest read
 * before, the latest after, against the sum of the shards' requests. */
static json_t *merged_counters(json_t *const *recs, size_t n) {
  const char *source = NULL;
  double before[2] = {INFINITY, INFINITY}, after[2] = {-INFINITY, -INFINITY}, client[2] = {0, 0};
  double requests = 0;
  for (size_t s = 0; s < n; s++) {
    json_t *c = json_object_get(recs[s], "server_counters");
    if (!json_is_object(c)) return json_null();
    const char *src = json_string_value(json_object_get(c, "source"));
    if (!src || (source && strcmp(src, source))) return json_null();
    source = src;
    json_t *b = json_object_get(c, "before"), *a = json_object_get(c, "after");
    const double v[6] = {num(b, "prompt_tokens"), num(b, "generated_tokens"),
                         num(a, "prompt_tokens"), num(a, "generated_tokens"),
                         num(c, "client_prompt_tokens"), num(c, "client_generated_tokens")};
    for (int k = 0; k < 6; k++)
      if (!isfinite(v[k])) return json_null();
    for (int k = 0; k < 2; k++) {
      if (v[k] < before[k]) before[k] = v[k];
      if (v[2 + k] > after[k]) after[k] = v[2 + k];
      client[k] += v[4 + k];
    }
    requests += num(c, "requests");
  }
  if (!source) return json_null();
  const double sp = after[0] - before[0], sg = after[1] - before[1];
  const size_t nr = isfinite(requests) ? (size_t)requests : 0;
  const bool disagree = load_counters_disagree(sp, client[0], nr) ||
                        load_counters_disagree(sg, client[1], nr);
  return json_pack("{s:s, s:o, s:o, s:o, s:o, s:b, s:I}", "source", source, "server_prompt_tokens",
                   record_json_num(sp), "server_generated_tokens", record_json_num(sg),
                   "client_prompt_tokens", record_json_num(client[0]), "client_generated_tokens",
                   record_json_num(client[1]), "disagree", disagree, "requests",
                   (json_int_t)nr);
}

/* The keys a shard's level record has that the merged level replaces. */
static const char *const PER_SHARD_KEYS[] = {"shard", "schedule_lag_s", "server_counters",
                                              "percent_of_ceiling", "client_cpu_share",
                                              "client_saturated"};

/* The shards of run `run` (count n) merged into v. */
static int view_merged(const struct results *r, const char *run, unsigned n, struct load_view *v,
                       struct tm_err *err) {
  const struct results_invocation **sh = calloc(n, sizeof *sh);
  if (!sh) return tm_errf(err, "out of memory");
  snprintf(v->run_id, sizeof v->run_id, "%s", run);
  v->shards = n;
  int rc = 0;
  char dup[64] = "";
  for (size_t i = 0; i < r->n_inv; i++) {
    json_t *s = shard_of(&r->inv[i]);
    if (!s || strcmp(json_string_value(json_object_get(s, "run")), run)) continue;
    json_int_t idx = json_integer_value(json_object_get(s, "index"));
    json_int_t cnt = json_integer_value(json_object_get(s, "count"));
    if (cnt != (json_int_t)n || idx < 0 || idx >= (json_int_t)n) {
      snprintf(v->refused, sizeof v->refused, "a shard says it is %lld of %lld, another of %u",
               (long long)idx, (long long)cnt, n);
      goto out;
    }
    if (sh[idx]) snprintf(dup, sizeof dup, "%lld", (long long)idx);
    sh[idx] = &r->inv[i];
  }
  v->inv = sh[0] ? sh[0] : NULL;
  {
    char missing[200] = "";
    for (unsigned i = 0; i < n; i++)
      if (!sh[i]) snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%u",
                           missing[0] ? "," : "", i);
    if (missing[0]) {
      snprintf(v->refused, sizeof v->refused,
               "shards %s of %u are missing: give every shard's file (a sum of some shards is "
               "not the run's figure)", missing, n);
      goto out;
    }
  }
  if (dup[0]) {
    snprintf(v->refused, sizeof v->refused, "shard %s appears twice", dup);
    goto out;
  }
  snprintf(v->title, sizeof v->title, "%s (%u shards, run %s)", target_of(sh[0]), n, run);
  /* the same settings, but for the shard's own index and clock */
  json_t *s0 = json_deep_copy(json_object_get(sh[0]->identity, "settings"));
  json_object_del(s0, "shard"), json_object_del(s0, "clock");
  size_t n_levels = sh[0]->n_loads;
  for (unsigned i = 1; i < n && !v->refused[0]; i++) {
    json_t *si = json_deep_copy(json_object_get(sh[i]->identity, "settings"));
    json_object_del(si, "shard"), json_object_del(si, "clock");
    if (!json_equal(s0, si)) {
      const char *key, *which = "?";
      json_t *val;
      json_object_foreach(s0, key, val) if (!json_equal(val, json_object_get(si, key))) {
        which = key;
        break;
      }
      snprintf(v->refused, sizeof v->refused, "shard %u's settings differ from shard 0's (%s)", i,
               which);
    }
    json_decref(si);
    if (sh[i]->n_loads < n_levels) n_levels = sh[i]->n_loads;
  }
  if (v->refused[0]) {
    json_decref(s0);
    goto out;
  }
  const struct load_slo slo = slo_of(s0);
  json_decref(s0);
  v->levels = calloc(n_levels ? n_levels : 1, sizeof *v->levels);
  json_t **recs = calloc(n, sizeof *recs);
  if (!v->levels || !recs) {
    free(recs);
    rc = tm_errf(err, "out of memory");
    goto out;
  }
  for (size_t k = 0; k < n_levels; k++) {
    double w0 = -INFINITY, w1 = INFINITY, cpu = 0, lag_share = NAN;
    bool saturated = false, behind = false;
    for (unsigned i = 0; i < n; i++) {
      recs[i] = sh[i]->loads[k];
      const double a = num(recs[i], "window_start_unix"), b = num(recs[i], "window_end_unix");
      const double a0 = num(recs[0], "window_start_unix"), b0 = num(recs[0], "window_end_unix");
      const double tol = fmax(MERGE_WINDOW_TOL_S, 0.01 * (b0 - a0));
      if (!(fabs(a - a0) <= tol && fabs(b - b0) <= tol)) {
        snprintf(v->refused, sizeof v->refused,
                 "level %zu: shard %u's window (%.3f..%.3f) is not shard 0's (%.3f..%.3f) within "
                 "%.2f s: it began late; the levels from there are left out", k + 1, i, a, b, a0,
                 b0, tol);
        break;
      }
      if (a > w0) w0 = a;
      if (b < w1) w1 = b;
      if (num(recs[i], "client_cpu_share") > cpu) cpu = num(recs[i], "client_cpu_share");
      saturated |= json_is_true(json_object_get(recs[i], "client_saturated"));
      behind |= json_is_true(json_object_get(recs[i], "behind_schedule"));
      const double ls = num(recs[i], "send_lag_share");
      if (isfinite(ls) && !(ls <= lag_share)) lag_share = ls;
    }
    if (v->refused[0]) break;
    struct load_view_level *L = &v->levels[v->n_levels];
    L->w0 = w0, L->w1 = w1;
    L->open_loop = !json_is_integer(json_object_get(recs[0], "concurrency"));
    const char *names[LOAD_ERROR_KINDS] = {0};
    size_t cap = 0;
    for (unsigned i = 0; i < n && !rc; i++)
      rc = add_samples(sh[i], (int)k, &L->samples, &L->n_samples, &cap, names, err);
    struct load_figures f;
    if (!rc && load_window_figures(L->samples, L->n_samples, w0, w1, L->open_loop, &slo, &f) != 0)
      rc = tm_errf(err, "out of memory");
    if (rc) {
      free_samples(L->samples, L->n_samples);
      L->samples = NULL;
      break;
    }
    json_t *o = json_deep_copy(recs[0]);
    for (size_t q = 0; q < sizeof PER_SHARD_KEYS / sizeof *PER_SHARD_KEYS; q++)
      json_object_del(o, PER_SHARD_KEYS[q]);
    json_object_set_new(o, "window_start_unix", json_real(w0));
    json_object_set_new(o, "window_end_unix", json_real(w1));
    record_load_figures_put(o, &f, L->open_loop, load_slo_any(&slo), names);
    /* each shard's sending is its own: behind when one was (the pooled lags
     * over one window would count every shard's stalls as one sender's) */
    json_object_set_new(o, "behind_schedule", json_boolean(behind));
    json_object_set_new(o, "send_lag_share", L->open_loop ? record_json_num(lag_share) : json_null());
    json_object_set_new(o, "shards", json_integer(n));
    json_object_set_new(o, "client_cpu_share", record_json_num(cpu));
    json_object_set_new(o, "client_saturated", json_boolean(saturated));
    json_object_set_new(o, "server_counters", merged_counters(recs, n));
    const double ceil = num(o, "aggregate_decode_ceiling_tok_s");
    json_object_set_new(o, "percent_of_ceiling",
                        record_json_num(ceil > 0 ? 100 * f.aggregate_output_tok_s / ceil : NAN));
    L->record = o;
    v->n_levels++;
  }
  free(recs);
out:
  free(sh);
  return rc;
}

static void set_knee(struct load_view *v) {
  double agg[64], p99[64];
  size_t n = v->n_levels < 64 ? v->n_levels : 64;
  for (size_t k = 0; k < n; k++) {
    agg[k] = num(v->levels[k].record, "aggregate_output_tok_s");
    p99[k] = num(json_object_get(v->levels[k].record, "ttft_ms"), "p99");
  }
  v->knee = load_knee_index(agg, p99, n);
}

int load_views_build(const struct results *r, struct load_views *out, struct tm_err *err) {
  out->v = NULL;
  out->n = 0;
  if (!r || !r->n_inv) return 0;
  out->v = calloc(r->n_inv, sizeof *out->v);
  if (!out->v) return tm_errf(err, "out of memory");
  for (size_t i = 0; i < r->n_inv; i++) {
    const struct results_invocation *inv = &r->inv[i];
    json_t *sh = shard_of(inv);
    if (!sh && !inv->n_loads) continue;
    struct load_view *v = &out->v[out->n];
    v->knee = -1;
    int rc;
    if (!sh) {
      rc = view_single(inv, v, err);
    } else {
      const char *run = json_string_value(json_object_get(sh, "run"));
      bool seen = false; /* a run is one view, at its first shard's place */
      for (size_t j = 0; j < out->n && !seen; j++) seen = !strcmp(out->v[j].run_id, run);
      if (seen) continue;
      rc = view_merged(r, run, (unsigned)json_integer_value(json_object_get(sh, "count")), v, err);
      if (!v->title[0]) snprintf(v->title, sizeof v->title, "%s (run %s)", target_of(inv), run);
    }
    out->n++;
    if (rc) {
      load_views_free(out);
      return -1;
    }
    set_knee(v);
  }
  return 0;
}

void load_views_free(struct load_views *vs) {
  for (size_t i = 0; vs && i < vs->n; i++) {
    struct load_view *v = &vs->v[i];
    for (size_t k = 0; k < v->n_levels; k++) {
      json_decref(v->levels[k].record);
      free_samples(v->levels[k].samples, v->levels[k].n_samples);
    }
    free(v->levels);
  }
  if (vs) {
    free(vs->v);
    vs->v = NULL;
    vs->n = 0;
  }
}
