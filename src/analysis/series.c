/* series: results files -> one series per configuration x metric (series.h).
 *
 * Owns: which runs count (warm-ups, calibration, failed runs never; cold
 * server runs only in "cold_ttft_ms"; cache-hit prefills never in prefill nor
 * TTFT; null values skipped), the configuration key, and the ceiling a
 * series carries: the mean over its runs of each run's ceiling and parts,
 * with their spread and whether machines or models differ (series.h).
 *
 * In-process runs are recognised by a "test" string (pp<L> / tg<N>), whatever
 * the backend ("engine", "llama-bench"); every other run is a server run.
 * Rule 5 holds whatever a file says: a tg<N> of fewer than
 * RECORD_MIN_DECODE_TOKENS tokens gives no decode rate (records written
 * since carry null; older ones and llama-bench imports carry a number), only
 * its time.
 * Values stay in file order across invocations: drift detection and the decode
 * curve depend on that order. */
#include "record/keys.h"
#include "analysis/series.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"

/* Running sums of a series' ceiling and its parts, whose means become the
 * series' figures; the first machine and per-token cost seen with a ceiling,
 * against which later runs are checked. */
enum { C_CEIL, C_BPT, C_BW, C_FLOPS, C_COMPUTE, C_PARTS };
struct ceil_acc {
  double sum[C_PARTS];
  size_t n[C_PARTS];
  double per_token;          /* bytes (decode) or FLOPs (prefill) per token; NAN */
  const char *cpu, *gpu;     /* identity machine.cpu / .gpu (borrowed); NULL unknown */
};

/* Per-series scratch kept while extracting: processed prompt tokens of server
 * runs, whose median becomes series.prompt_tokens, and the ceiling sums. */
struct builder {
  struct series_set *set;
  size_t cap;
  double **ptok;   /* parallel to set->s */
  size_t *ptok_n;
  struct ceil_acc *acc; /* parallel to set->s */
  const char *cpu, *gpu; /* the machine of the run being added */
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

static struct series *find_mut(struct series_set *set, const char *key,
                               enum record_metric metric) {
  for (size_t i = 0; i < set->n; i++)
    if (!strcmp(set->s[i].key, key) && set->s[i].metric == metric) return &set->s[i];
  return NULL;
}

const struct series *series_find(const struct series_set *set, const char *key,
                                 enum record_metric metric) {
  if (!set || !key) return NULL;
  return find_mut((struct series_set *)set, key, metric);
}

/* The series for (proto->key, metric), created from proto when new; its index
 * in *idx. NULL when out of memory. */
static struct series *get_series(struct builder *b, const struct series *proto,
                                 enum record_metric metric, size_t *idx) {
  struct series_set *set = b->set;
  for (size_t i = 0; i < set->n; i++)
    if (!strcmp(set->s[i].key, proto->key) && set->s[i].metric == metric) {
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
    struct ceil_acc *acc = realloc(b->acc, cap * sizeof *acc);
    if (!acc) return NULL;
    b->acc = acc;
    b->cap = cap;
  }
  struct series *s = &set->s[set->n];
  *s = *proto;
  s->values = NULL;
  s->n = 0;
  s->metric = metric;
  copy_str(s->quantity, sizeof s->quantity, record_metric_quantity(metric));
  copy_str(s->unit, sizeof s->unit, record_metric_unit(metric));
  s->ceiling_n = 0;
  s->ceiling_min = s->ceiling_max = NAN;
  s->ceiling_machines_differ = s->ceiling_models_differ = false;
  b->ptok[set->n] = NULL;
  b->ptok_n[set->n] = 0;
  memset(&b->acc[set->n], 0, sizeof b->acc[set->n]);
  b->acc[set->n].per_token = NAN;
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

static bool differ(const char *a, const char *b) { return a && b && strcmp(a, b); }

/* One run's ceiling and parts into the series' sums (means at the end). */
static void add_ceiling(struct builder *b, size_t idx, const struct series *proto,
                        double ceiling) {
  struct series *s = &b->set->s[idx];
  struct ceil_acc *a = &b->acc[idx];
  const double part[C_PARTS] = {ceiling, proto->bytes_per_token, proto->read_bandwidth_bytes_s,
                                proto->flops_per_token, proto->compute_ops_s};
  for (int k = 0; k < C_PARTS; k++)
    if (isfinite(part[k])) {
      a->sum[k] += part[k];
      a->n[k]++;
    }
  if (!isfinite(ceiling)) return;
  if (!(ceiling >= s->ceiling_min)) s->ceiling_min = ceiling;
  if (!(ceiling <= s->ceiling_max)) s->ceiling_max = ceiling;
  double per = isfinite(proto->bytes_per_token) ? proto->bytes_per_token : proto->flops_per_token;
  if (s->ceiling_n++ == 0) {
    a->per_token = per;
    a->cpu = b->cpu;
    a->gpu = b->gpu;
    return;
  }
  if (isfinite(per) && isfinite(a->per_token) && a->per_token > 0 &&
      fabs(per / a->per_token - 1) > 0.005)
    s->ceiling_models_differ = true;
  if (differ(a->cpu, b->cpu) || differ(a->gpu, b->gpu)) s->ceiling_machines_differ = true;
  if (!isfinite(a->per_token)) a->per_token = per;
  if (!a->cpu) a->cpu = b->cpu;
  if (!a->gpu) a->gpu = b->gpu;
}

/* Adds one value (skipped when not finite: a blank is not a zero) and the
 * run's ceiling to the series' means. */
static int add_value(struct builder *b, const struct series *proto, enum record_metric metric,
                     double v, double ceiling, double prompt_tokens) {
  if (!isfinite(v)) return 0;
  size_t idx;
  struct series *s = get_series(b, proto, metric, &idx);
  if (!s) return -1;
  if (push_double(&s->values, &s->n, v)) return -1;
  add_ceiling(b, idx, proto, ceiling);
  if (isfinite(prompt_tokens) && push_double(&b->ptok[idx], &b->ptok_n[idx], prompt_tokens))
    return -1;
  return 0;
}

/* 3 significant digits up to 100, whole numbers above (as the report's cells). */
static int decimals(double v) { return v >= 100 ? 0 : v >= 10 ? 1 : 2; }

int series_ceiling_note(const struct series *s, char *buf, size_t n) {
  if (n) buf[0] = 0;
  if (!s || !s->ceiling_n || !(s->ceiling > 0) || !n) return 0;
  size_t used = 0;
#define NOTE(...)                                                                   \
  do {                                                                              \
    if (used < n) used += (size_t)snprintf(buf + used, n - used, "%s", used ? "; " : ""); \
    if (used < n) used += (size_t)snprintf(buf + used, n - used, __VA_ARGS__);      \
  } while (0)
  if (s->ceiling_max > s->ceiling_min * (1 + SERIES_CEILING_SPREAD))
    NOTE("the runs' ceilings spread %.0f%% (%.*f to %.*f %s)",
         100 * (s->ceiling_max / s->ceiling_min - 1), decimals(s->ceiling_min), s->ceiling_min,
         decimals(s->ceiling_max), s->ceiling_max, s->unit);
  if (s->ceiling_machines_differ) NOTE("the runs come from different machines");
  if (s->ceiling_models_differ)
    NOTE("the runs' models differ (%s per token)",
         s->metric == METRIC_PREFILL_TOK_S ? "FLOPs" : "bytes");
  if (s->ceiling_n < s->n) NOTE("%zu of %zu runs carry a ceiling", s->ceiling_n, s->n);
#undef NOTE
  return buf[0] != 0;
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
  const char *backend = record_str(run, RK_BACKEND);
  if (!backend && inv->identity) backend = record_str(inv->identity, RK_BACKEND);
  copy_str(p.backend, sizeof p.backend, backend ? backend : "engine");
  const char *target = record_str(run, RK_TARGET);
  copy_str(p.target, sizeof p.target, target ? target : "in-process");
  const char *label = record_str(run, RK_MODEL_NAME);
  if (!label) label = record_str(run, RK_MODEL_FILE);
  if (!label && inv->identity) label = record_str(inv->identity, RK_MODEL_NAME);
  if (!label && inv->identity) label = record_str(inv->identity, RK_MODEL_FILE);
  if (!label) label = record_str(run, RK_MODEL_ARCH);
  copy_str(p.model, sizeof p.model, label ? label : "?");
  const char *type = record_str(run, RK_MODEL_TYPE);
  if (!type && inv->identity) type = record_str(inv->identity, RK_MODEL_TYPE);
  copy_str(p.type, sizeof p.type, type);
  const char *test = record_str(run, RK_TEST);
  /* a workload file's job run in process: its name tells two jobs of one
   * prompt length apart ("greet pp8") */
  const char *job = record_str(run, RK_WORKLOAD);
  if (job && test) snprintf(p.test, sizeof p.test, "%s %s", job, test);
  else copy_str(p.test, sizeof p.test, test);
  p.threads = (int)record_int(run, RK_THREADS, -1);
  p.depth = (int)record_int(run, RK_DEPTH, -1);
  int len = -1;
  char kind = parse_test(test, &len);
  if (!kind) { /* fall back on the phase when the test name is unusual */
    const char *phase = record_str(run, RK_PHASE);
    kind = phase && !strcmp(phase, "prefill") ? 'p' : phase && !strcmp(phase, "decode") ? 't' : 0;
    len = (int)record_int(run, RK_TOKENS, -1);
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
  double ceiling = record_num(run, RK_CEILING_TOK_S);
  p.bytes_per_token = record_num(run, RK_CEILING_BYTES_PER_TOKEN);
  p.read_bandwidth_bytes_s = record_num(run, RK_CEILING_READ_BANDWIDTH);
  p.flops_per_token = record_num(run, RK_CEILING_FLOPS_PER_TOKEN);
  p.compute_ops_s = record_num(run, RK_CEILING_COMPUTE_OPS);
  double rate = record_num(run, RK_RATE_TOK_S), ms = record_num(run, RK_MS);
  if (kind == 'p') {
    if (add_value(b, &p, METRIC_PREFILL_TOK_S, rate, ceiling, NAN)) return -1;
    if (add_value(b, &p, METRIC_PREFILL_MS, ms, NAN, NAN)) return -1;
  } else {
    if (len < RECORD_MIN_DECODE_TOKENS) rate = NAN; /* rule 5: blank, not a number */
    if (add_value(b, &p, METRIC_DECODE_TOK_S, rate, ceiling, NAN)) return -1;
    if (add_value(b, &p, METRIC_DECODE_MS, ms, NAN, NAN)) return -1;
  }
  return 0;
}

static bool is_standard_workload(const char *w) {
  return !strcmp(w, "classify") || !strcmp(w, "extract") || !strcmp(w, "generate");
}

/* A server run's configuration parts and key into p (from proto_init). */
static void server_parts(const struct results_invocation *inv, json_t *run, struct series *p) {
  json_t *id = inv->identity;
  const char *backend = record_str(run, RK_BACKEND);
  if (!backend && id) backend = record_str(id, RK_BACKEND);
  copy_str(p->backend, sizeof p->backend, backend ? backend : "?");
  const char *target = record_str(run, RK_TARGET);
  if (!target && id) target = record_str(id, RK_TARGET);
  copy_str(p->target, sizeof p->target, target ? target : "?");
  const char *model = record_str(run, RK_MODEL);
  if (!model && id) model = record_str(id, RK_MODEL_NAME);
  if (!model && id) model = record_str(id, RK_SERVER_MODEL);
  copy_str(p->model, sizeof p->model, model ? model : "?");
  if (id) copy_str(p->type, sizeof p->type, record_str(id, RK_MODEL_TYPE));
  const char *workload = record_str(run, RK_WORKLOAD);
  copy_str(p->test, sizeof p->test, workload ? workload : "?");
  long long max_tokens = record_int(run, RK_MAX_TOKENS, -1);
  if (max_tokens < 0) max_tokens = record_int(run, RK_SETTINGS_MAX_TOKENS, -1);
  p->gen_tokens = max_tokens > 2147483647LL ? -1 : (int)max_tokens;
  /* the named workloads and a workload file's jobs are configurations by
   * name; a custom workload or a sweep's point by its lengths too */
  if (workload && (is_standard_workload(workload) || record_true(run, RK_SETTINGS_JOB))) {
    set_key(p, "%s | %s | %s | %s", p->backend, p->target, p->model, p->test);
  } else {
    long long pt = record_int(run, RK_SETTINGS_PROMPT_TOKENS, -1);
    if (pt < 0) pt = record_int(run, RK_SETTINGS_PROMPT_TOKENS_TARGET, -1);
    set_key(p, "%s | %s | %s | %s | p%lld n%lld", p->backend, p->target,
             p->model, p->test, pt, max_tokens);
  }
}

void series_server_key(const struct results_invocation *inv, json_t *run, char *key, size_t n) {
  struct series p;
  proto_init(&p, inv);
  server_parts(inv, run, &p);
  snprintf(key, n, "%s", p.key);
}

static int server_run(struct builder *b, const struct results_invocation *inv, json_t *run,
                      bool cold) {
  struct series p;
  proto_init(&p, inv);
  server_parts(inv, run, &p);
  json_t *id = inv->identity;
  /* The run's own ceiling parts (at its prompt's depth) where it carries
   * them; records written before they did: the model's bytes at depth 0. */
  p.bytes_per_token = record_num(run, RK_CEILING_BYTES_PER_TOKEN);
  if (!isfinite(p.bytes_per_token) && id)
    p.bytes_per_token = record_num(id, RK_MODEL_BYTES_PER_TOKEN);
  p.read_bandwidth_bytes_s = record_num(run, RK_CEILING_READ_BANDWIDTH);
  p.flops_per_token = record_num(run, RK_CEILING_FLOPS_PER_TOKEN);
  p.compute_ops_s = record_num(run, RK_CEILING_COMPUTE_OPS);
  double processed = record_num(run, RK_TOKENS_PROCESSED);
  json_t *excl = record_get(run, RK_CACHE_PREFILL_EXCLUDED);
  bool excluded = json_is_true(excl);
  if (cold) {
    if (!excluded &&
        add_value(b, &p, METRIC_COLD_TTFT_MS, record_num(run, RK_CLIENT_TTFT_MS), NAN,
                  processed))
      return -1;
    return 0;
  }
  if (!excluded) {
    if (add_value(b, &p, METRIC_TTFT_MS, record_num(run, RK_CLIENT_TTFT_MS), NAN,
                  processed))
      return -1;
    if (add_value(b, &p, METRIC_PREFILL_TOK_S,
                  record_num(run, RK_RATES_PREFILL_HEADLINE),
                  record_num(run, RK_CEILING_PREFILL_TOK_S), processed))
      return -1;
  }
  if (add_value(b, &p, METRIC_DECODE_TOK_S,
                record_num(run, RK_RATES_DECODE_HEADLINE),
                record_num(run, RK_CEILING_DECODE_TOK_S), processed))
    return -1;
  if (add_value(b, &p, METRIC_DECODE_TOK_S_CLIENT,
                record_num(run, RK_RATES_DECODE_CLIENT),
                record_num(run, RK_CEILING_DECODE_TOK_S), processed))
    return -1;
  return 0;
}

int series_extract(const struct results *r, struct series_set *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  struct builder b = {.set = out};
  int rc = 0;
  for (size_t i = 0; i < r->n_inv && !rc; i++) {
    const struct results_invocation *inv = &r->inv[i];
    b.cpu = record_str(inv->identity, RK_MACHINE_CPU);
    b.gpu = record_str(inv->identity, RK_MACHINE_GPU);
    for (size_t j = 0; j < inv->n_runs && !rc; j++) {
      json_t *run = inv->runs[j];
      if (json_is_true(json_object_get(run, "warmup"))) continue;
      if (json_is_true(json_object_get(run, "calibration"))) continue;
      if (!json_is_true(json_object_get(run, "ok"))) continue;
      if (record_str(run, RK_TEST))
        rc = engine_run(&b, inv, run);
      else
        rc = server_run(&b, inv, run, json_is_true(json_object_get(run, "cold")));
    }
  }
  for (size_t i = 0; i < out->n; i++) {
    struct series *s = &out->s[i];
    if (!rc && b.ptok_n[i]) {
      double med = stats_percentile(b.ptok[i], b.ptok_n[i], 50);
      if (isfinite(med)) s->prompt_tokens = (int)lround(med);
    }
    free(b.ptok[i]);
    double mean[C_PARTS];
    for (int k = 0; k < C_PARTS; k++)
      mean[k] = b.acc[i].n[k] ? b.acc[i].sum[k] / (double)b.acc[i].n[k] : NAN;
    s->ceiling = mean[C_CEIL];
    s->bytes_per_token = mean[C_BPT];
    s->read_bandwidth_bytes_s = mean[C_BW];
    s->flops_per_token = mean[C_FLOPS];
    s->compute_ops_s = mean[C_COMPUTE];
  }
  free(b.ptok);
  free(b.ptok_n);
  free(b.acc);
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
