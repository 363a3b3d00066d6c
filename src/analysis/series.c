/* series: results files -> one series per configuration x metric (series.h).
 *
 * Owns: which runs count (warm-ups, calibration, failed runs never; cold
 * server runs only in "cold_ttft_ms"; cache-hit prefills never in prefill nor
 * TTFT; null values skipped), the configuration key, and the ceiling parts a
 * series carries (from its first run that has them).
 *
 * In-process runs are recognised by a "test" string (pp<L> / tg<N>), whatever
 * the backend ("engine", "llama-bench"); every other run is a server run.
 * Values stay in file order across invocations: drift detection and the decode
 * curve depend on that order. */
#include "analysis/series.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"

/* Per-series scratch kept while extracting: processed prompt tokens of server
 * runs, whose median becomes series.prompt_tokens. */
struct builder {
  struct series_set *set;
  size_t cap;
  double **ptok;   /* parallel to set->s */
  size_t *ptok_n;
};

static void copy_str(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", src ? src : "");
}

/* The key, cut at sizeof key - 1 bytes when the parts are very long: a cut
 * key is still stable (same parts, same cut), which is all matching needs. */
static void set_key(struct series *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_key(struct series *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->key, sizeof p->key, fmt, ap);
  va_end(ap);
}

static struct series *find_mut(struct series_set *set, const char *key, const char *metric) {
  for (size_t i = 0; i < set->n; i++)
    if (!strcmp(set->s[i].key, key) && !strcmp(set->s[i].metric, metric)) return &set->s[i];
  return NULL;
}

const struct series *series_find(const struct series_set *set, const char *key,
                                 const char *metric) {
  if (!set || !key || !metric) return NULL;
  return find_mut((struct series_set *)set, key, metric);
}

/* The series for (proto->key, metric), created from proto when new; its index
 * in *idx. NULL when out of memory. */
static struct series *get_series(struct builder *b, const struct series *proto,
                                 const char *metric, const char *quantity, const char *unit,
                                 size_t *idx) {
  struct series_set *set = b->set;
  for (size_t i = 0; i < set->n; i++)
    if (!strcmp(set->s[i].key, proto->key) && !strcmp(set->s[i].metric, metric)) {
      *idx = i;
      return &set->s[i];
    }
  if (set->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    struct series *s = realloc(set->s, cap * sizeof *s);
    if (!s) return NULL;
    set->s = s;
    double **p = realloc(b->ptok, cap * sizeof *p);
    if (!p) return NULL;
    b->ptok = p;
    size_t *pn = realloc(b->ptok_n, cap * sizeof *pn);
    if (!pn) return NULL;
    b->ptok_n = pn;
    b->cap = cap;
  }
  struct series *s = &set->s[set->n];
  *s = *proto;
  s->values = NULL;
  s->n = 0;
  copy_str(s->metric, sizeof s->metric, metric);
  copy_str(s->quantity, sizeof s->quantity, quantity);
  copy_str(s->unit, sizeof s->unit, unit);
  b->ptok[set->n] = NULL;
  b->ptok_n[set->n] = 0;
  *idx = set->n++;
  return s;
}

static int push_double(double **arr, size_t *n, double v) {
  double *grown = realloc(*arr, (*n + 1) * sizeof *grown);
  if (!grown) return -1;
  grown[(*n)++] = v;
  *arr = grown;
  return 0;
}

/* Adds one value (skipped when not finite: a blank is not a zero). The
 * ceiling parts are taken from the first run that carries them. */
static int add_value(struct builder *b, const struct series *proto, const char *metric,
                     const char *quantity, const char *unit, double v, double ceiling,
                     double prompt_tokens) {
  if (!isfinite(v)) return 0;
  size_t idx;
  struct series *s = get_series(b, proto, metric, quantity, unit, &idx);
  if (!s) return -1;
  if (push_double(&s->values, &s->n, v)) return -1;
  if (isnan(s->ceiling) && isfinite(ceiling)) s->ceiling = ceiling;
  if (isnan(s->bytes_per_token)) s->bytes_per_token = proto->bytes_per_token;
  if (isnan(s->read_bandwidth_bytes_s)) s->read_bandwidth_bytes_s = proto->read_bandwidth_bytes_s;
  if (isnan(s->flops_per_token)) s->flops_per_token = proto->flops_per_token;
  if (isnan(s->compute_ops_s)) s->compute_ops_s = proto->compute_ops_s;
  if (isfinite(prompt_tokens) && push_double(&b->ptok[idx], &b->ptok_n[idx], prompt_tokens))
    return -1;
  return 0;
}

static void proto_init(struct series *p, const struct results_invocation *inv) {
  memset(p, 0, sizeof *p);
  p->threads = p->depth = p->prompt_tokens = p->gen_tokens = -1;
  p->ceiling = p->bytes_per_token = p->read_bandwidth_bytes_s = NAN;
  p->flops_per_token = p->compute_ops_s = NAN;
  p->identity = inv->id[0] ? inv->id : NULL;
  p->source = inv->source;
}

/* pp512 / tg128 -> 'p' or 't' and the length; 0 when the name is neither. */
static char parse_test(const char *test, int *len) {
  if (!test || (strncmp(test, "pp", 2) && strncmp(test, "tg", 2))) return 0;
  char *end;
  long v = strtol(test + 2, &end, 10);
  if (end == test + 2 || *end || v < 0 || v > 1000000000L) return 0;
  *len = (int)v;
  return test[0];
}

static int engine_run(struct builder *b, const struct results_invocation *inv, json_t *run) {
  struct series p;
  proto_init(&p, inv);
  const char *backend = json_path_str(run, "backend");
  if (!backend && inv->identity) backend = json_path_str(inv->identity, "backend");
  copy_str(p.backend, sizeof p.backend, backend ? backend : "engine");
  const char *target = json_path_str(run, "target");
  copy_str(p.target, sizeof p.target, target ? target : "in-process");
  const char *label = json_path_str(run, "model.name");
  if (!label) label = json_path_str(run, "model.file");
  if (!label && inv->identity) label = json_path_str(inv->identity, "model.name");
  if (!label && inv->identity) label = json_path_str(inv->identity, "model.file");
  if (!label) label = json_path_str(run, "model.arch");
  copy_str(p.model, sizeof p.model, label ? label : "?");
  const char *type = json_path_str(run, "model.type");
  if (!type && inv->identity) type = json_path_str(inv->identity, "model.type");
  copy_str(p.type, sizeof p.type, type);
  const char *test = json_path_str(run, "test");
  copy_str(p.test, sizeof p.test, test);
  p.threads = (int)json_path_int(run, "threads", -1);
  p.depth = (int)json_path_int(run, "depth", -1);
  int len = -1;
  char kind = parse_test(test, &len);
  if (!kind) { /* fall back on the phase when the test name is unusual */
    const char *phase = json_path_str(run, "phase");
    kind = phase && !strcmp(phase, "prefill") ? 'p' : phase && !strcmp(phase, "decode") ? 't' : 0;
    len = (int)json_path_int(run, "tokens", -1);
  }
  if (!kind) return 0;
  if (kind == 'p') p.prompt_tokens = len;
  else p.gen_tokens = len;
  /* the type is part of the key unless the label already says it (the
   * default pair's label is "qwen3-0.6b shape, synthetic, Q4_0") */
  bool type_in_label = p.type[0] && strstr(p.model, p.type);
  if (p.type[0] && !type_in_label)
    set_key(&p, "%s | %s | %s | %s | t%d | d%d", p.backend, p.model, p.type,
             p.test, p.threads, p.depth);
  else
    set_key(&p, "%s | %s | %s | t%d | d%d", p.backend, p.model, p.test,
             p.threads, p.depth);
  double ceiling = json_path_num(run, "ceiling.ceiling_tok_s");
  p.bytes_per_token = json_path_num(run, "ceiling.bytes_per_token");
  p.read_bandwidth_bytes_s = json_path_num(run, "ceiling.read_bandwidth_bytes_s");
  p.flops_per_token = json_path_num(run, "ceiling.flops_per_token");
  p.compute_ops_s = json_path_num(run, "ceiling.compute_ops_s");
  double rate = json_path_num(run, "rate_tok_s"), ms = json_path_num(run, "ms");
  if (kind == 'p') {
    if (add_value(b, &p, "prefill_tok_s", "PF", "tok/s", rate, ceiling, NAN)) return -1;
    if (add_value(b, &p, "prefill_ms", "FX", "ms", ms, NAN, NAN)) return -1;
  } else {
    if (add_value(b, &p, "decode_tok_s", "DC", "tok/s", rate, ceiling, NAN)) return -1;
    if (add_value(b, &p, "decode_ms", "FX", "ms", ms, NAN, NAN)) return -1;
  }
  return 0;
}

static bool is_standard_workload(const char *w) {
  return !strcmp(w, "classify") || !strcmp(w, "extract") || !strcmp(w, "generate");
}

static int server_run(struct builder *b, const struct results_invocation *inv, json_t *run,
                      bool cold) {
  struct series p;
  proto_init(&p, inv);
  json_t *id = inv->identity;
  const char *backend = json_path_str(run, "backend");
  if (!backend && id) backend = json_path_str(id, "backend");
  copy_str(p.backend, sizeof p.backend, backend ? backend : "?");
  const char *target = json_path_str(run, "target");
  if (!target && id) target = json_path_str(id, "target");
  copy_str(p.target, sizeof p.target, target ? target : "?");
  const char *model = json_path_str(run, "model");
  if (!model && id) model = json_path_str(id, "model.name");
  if (!model && id) model = json_path_str(id, "server.model");
  copy_str(p.model, sizeof p.model, model ? model : "?");
  if (id) copy_str(p.type, sizeof p.type, json_path_str(id, "model.type"));
  const char *workload = json_path_str(run, "workload");
  copy_str(p.test, sizeof p.test, workload ? workload : "?");
  long long max_tokens = json_path_int(run, "max_tokens", -1);
  if (max_tokens < 0) max_tokens = json_path_int(run, "settings.max_tokens", -1);
  p.gen_tokens = max_tokens > 2147483647LL ? -1 : (int)max_tokens;
  if (workload && is_standard_workload(workload)) {
    set_key(&p, "%s | %s | %s | %s", p.backend, p.target, p.model, p.test);
  } else {
    long long pt = json_path_int(run, "settings.prompt_tokens", -1);
    if (pt < 0) pt = json_path_int(run, "settings.prompt_tokens_target", -1);
    set_key(&p, "%s | %s | %s | %s | p%lld n%lld", p.backend, p.target,
             p.model, p.test, pt, max_tokens);
  }
  if (id) p.bytes_per_token = json_path_num(id, "model.bytes_per_token");
  p.read_bandwidth_bytes_s = json_path_num(run, "ceiling.read_bandwidth_bytes_s");
  double processed = json_path_num(run, "tokens.processed");
  json_t *excl = json_path(run, "cache.prefill_excluded");
  bool excluded = json_is_true(excl);
  if (cold) {
    if (!excluded &&
        add_value(b, &p, "cold_ttft_ms", "FX", "ms", json_path_num(run, "client.ttft_ms"), NAN,
                  processed))
      return -1;
    return 0;
  }
  if (!excluded) {
    if (add_value(b, &p, "ttft_ms", "FX", "ms", json_path_num(run, "client.ttft_ms"), NAN,
                  processed))
      return -1;
    if (add_value(b, &p, "prefill_tok_s", "PF", "tok/s",
                  json_path_num(run, "rates.prefill_tok_s.headline"),
                  json_path_num(run, "ceiling.prefill_ceiling_tok_s"), processed))
      return -1;
  }
  if (add_value(b, &p, "decode_tok_s", "DC", "tok/s",
                json_path_num(run, "rates.decode_tok_s.headline"),
                json_path_num(run, "ceiling.decode_ceiling_tok_s"), processed))
    return -1;
  if (add_value(b, &p, "decode_tok_s_client", "DC", "tok/s",
                json_path_num(run, "rates.decode_tok_s.client"),
                json_path_num(run, "ceiling.decode_ceiling_tok_s"), processed))
    return -1;
  return 0;
}

int series_extract(const struct results *r, struct series_set *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  struct builder b = {.set = out};
  int rc = 0;
  for (size_t i = 0; i < r->n_inv && !rc; i++) {
    const struct results_invocation *inv = &r->inv[i];
    for (size_t j = 0; j < inv->n_runs && !rc; j++) {
      json_t *run = inv->runs[j];
      if (json_is_true(json_object_get(run, "warmup"))) continue;
      if (json_is_true(json_object_get(run, "calibration"))) continue;
      if (!json_is_true(json_object_get(run, "ok"))) continue;
      if (json_path_str(run, "test"))
        rc = engine_run(&b, inv, run);
      else
        rc = server_run(&b, inv, run, json_is_true(json_object_get(run, "cold")));
    }
  }
  for (size_t i = 0; i < out->n; i++) {
    if (!rc && b.ptok_n[i]) {
      double med = stats_percentile(b.ptok[i], b.ptok_n[i], 50);
      if (isfinite(med)) out->s[i].prompt_tokens = (int)lround(med);
    }
    free(b.ptok[i]);
  }
  free(b.ptok);
  free(b.ptok_n);
  if (rc) {
    series_set_free(out);
    return tm_errf(err, "out of memory while reading series");
  }
  return 0;
}

void series_set_free(struct series_set *set) {
  if (!set) return;
  for (size_t i = 0; i < set->n; i++) free(set->s[i].values);
  free(set->s);
  set->s = NULL;
  set->n = 0;
}
