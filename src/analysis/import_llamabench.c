/* import_llamabench: llama-bench JSON / JSONL -> tokmeter records. Contracts
 * in import_llamabench.h; keys in docs/records.md. */
#include "analysis/import_llamabench.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ceiling.h"
#include "record/record.h"
#include "stats/stats.h"

#define put record_json_set
#define num record_json_num
#define str record_json_str

#ifndef TOKMETER_VERSION
#define TOKMETER_VERSION "0"
#endif

/* One test entry, checked. */
struct lb_entry {
  json_t *obj;              /* borrowed from the parsed input */
  char where[64];           /* "entry 3" / "line 4", for messages */
  const char *model_type, *model_filename, *test_time, *cpu_info, *gpu_info, *backends;
  long long n_prompt, n_gen, n_depth, n_threads;
  size_t n_samples;
  double *ns;               /* n_samples, malloc'd */
  bool avg_only;            /* no samples_ns: one run at avg_ns */
};

static void warn(struct import_out *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(struct import_out *out, const char *fmt, ...) {
  if (out->n_warnings >= IMPORT_MAX_WARNINGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->warnings[out->n_warnings], sizeof out->warnings[0], fmt, ap);
  va_end(ap);
  /* the same sentence once, however many entries trigger it */
  for (size_t i = 0; i < out->n_warnings; i++)
    if (!strcmp(out->warnings[i], out->warnings[out->n_warnings])) return;
  out->n_warnings++;
}

/* ------------------------------------------------------- model_type --- */

void import_parse_model_type(const char *model_type, char *arch, size_t arch_n, char *type,
                             size_t type_n) {
  if (arch_n) arch[0] = 0;
  if (type_n) type[0] = 0;
  if (!model_type) return;
  /* "<arch> <size> <file type description>" (llama_model_desc). */
  char buf[160];
  snprintf(buf, sizeof buf, "%s", model_type);
  char *save = NULL;
  char *a = strtok_r(buf, " ", &save);
  char *size = a ? strtok_r(NULL, " ", &save) : NULL;
  char *rest = size ? strtok_r(NULL, "", &save) : NULL;
  if (a) snprintf(arch, arch_n, "%s", a);
  if (!rest) return;
  while (*rest == ' ') rest++;
  if (!strncmp(rest, "all ", 4)) rest += 4; /* "all F32" */
  char word[32];
  size_t k = 0;
  while (rest[k] && rest[k] != ' ' && k + 1 < sizeof word) {
    word[k] = rest[k];
    k++;
  }
  word[k] = 0;
  const char *after = rest + k;
  const char *suffix = "";
  /* "Q4_K - Medium" is Q4_K_M; "Q2_K - Medium" is plain Q2_K in llama.cpp. */
  if (strstr(after, "- Medium") && strcmp(word, "Q2_K") != 0) suffix = "_M";
  else if (strstr(after, "- Small")) suffix = "_S";
  else if (strstr(after, "- Large")) suffix = "_L";
  snprintf(type, type_n, "%s%s", word, suffix);
}

/* ------------------------------------------------------------ parsing --- */

static int int_field(json_t *o, const char *key, const char *where, bool required,
                     long long def, long long lo, long long *out, struct tm_err *err) {
  json_t *v = json_object_get(o, key);
  if (!v) {
    if (required) return tm_errf(err, "%s: field \"%s\" missing", where, key);
    *out = def;
    return 0;
  }
  if (!json_is_integer(v)) return tm_errf(err, "%s: field \"%s\" is not an integer", where, key);
  *out = json_integer_value(v);
  if (*out < lo)
    return tm_errf(err, "%s: field \"%s\" is %lld (at least %lld expected)", where, key, *out, lo);
  return 0;
}

static int str_field(json_t *o, const char *key, const char *where, bool required,
                     const char **out, struct tm_err *err) {
  json_t *v = json_object_get(o, key);
  *out = NULL;
  if (!v || json_is_null(v)) {
    if (required) return tm_errf(err, "%s: field \"%s\" missing", where, key);
    return 0;
  }
  if (!json_is_string(v)) return tm_errf(err, "%s: field \"%s\" is not a string", where, key);
  *out = json_string_value(v);
  return 0;
}

/* A value for messages: -1.5, "x", null, an array. */
static void describe(json_t *v, char *buf, size_t n) {
  if (json_is_integer(v)) snprintf(buf, n, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v)) snprintf(buf, n, "%g", json_real_value(v));
  else if (json_is_string(v)) snprintf(buf, n, "a string");
  else if (json_is_null(v)) snprintf(buf, n, "null");
  else if (json_is_boolean(v)) snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
  else snprintf(buf, n, "%s", json_is_array(v) ? "an array" : "an object");
}

/* llama-bench's own figures beside the samples: samples_ts (tok/s per
 * sample), avg_ns / stddev_ns, avg_ts / stddev_ts. The runs are built from
 * samples_ns alone, so a file whose figures disagree with it (edited, or
 * cut and pasted from two outputs) would be imported as rates nobody
 * measured: samples_ts must have one value per sample, each within 1% of
 * tokens / time (llama-bench computes it so: (n_prompt + n_gen) * 1e9 / ns);
 * the averages must be positive, the deviations >= 0 (or the key absent /
 * null, as in older builds). */
static int check_reported(json_t *o, const struct lb_entry *e, struct tm_err *err) {
  const char *w = e->where;
  static const char *const keys[] = {"avg_ns", "avg_ts", "stddev_ns", "stddev_ts"};
  for (size_t k = 0; k < 4; k++) {
    json_t *v = json_object_get(o, keys[k]);
    if (!v || json_is_null(v)) continue;
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    bool avg = k < 2;
    if (isfinite(x) && (avg ? x > 0 : x >= 0)) continue;
    char d[32];
    describe(v, d, sizeof d);
    return tm_errf(err, "%s: field \"%s\" %s is not a %s number", w, keys[k], d,
                   avg ? "positive" : "non-negative");
  }
  json_t *ts = json_object_get(o, "samples_ts");
  if (!ts || json_is_null(ts) || e->avg_only) return 0;
  if (!json_is_array(ts))
    return tm_errf(err, "%s: field \"samples_ts\" is not an array", w);
  if (json_array_size(ts) != e->n_samples)
    return tm_errf(err, "%s: field \"samples_ts\" has %zu value%s, samples_ns %zu", w,
                   json_array_size(ts), json_array_size(ts) == 1 ? "" : "s", e->n_samples);
  double tokens = (double)e->n_prompt + (double)e->n_gen;
  if (tokens <= 0) return 0; /* n_prompt and n_gen both 0: the caller says so */
  for (size_t i = 0; i < e->n_samples; i++) {
    json_t *v = json_array_get(ts, i);
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    char d[32];
    describe(v, d, sizeof d);
    if (!isfinite(x) || !(x > 0))
      return tm_errf(err, "%s: samples_ts[%zu] %s is not a positive rate", w, i, d);
    double want = tokens * 1e9 / e->ns[i];
    if (fabs(x - want) > 0.01 * want + 1e-6)
      return tm_errf(err, "%s: samples_ts[%zu] %s tok/s disagrees with samples_ns[%zu] %.0f ns "
                          "(%.6g tok/s for %.0f tokens)",
                     w, i, d, i, e->ns[i], want, tokens);
  }
  return 0;
}

/* llama-bench's test_time: strftime "%FT%TZ" (2026-11-29T07:20:47Z), which
 * records.md promises for a run's `time`. */
static bool iso8601_utc(const char *t) {
  static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
  if (strlen(t) != sizeof shape - 1) return false;
  for (size_t i = 0; shape[i]; i++)
    if (shape[i] == 'd' ? !isdigit((unsigned char)t[i]) : t[i] != shape[i]) return false;
  int mo = atoi(t + 5), d = atoi(t + 8), h = atoi(t + 11), mi = atoi(t + 14), sec = atoi(t + 17);
  return mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59 && sec <= 60;
}

static int check_entry(json_t *o, struct lb_entry *e, struct tm_err *err) {
  const char *w = e->where;
  if (!json_is_object(o)) return tm_errf(err, "%s: not a JSON object (not llama-bench output)", w);
  e->obj = o;
  if (json_is_string(json_object_get(o, "record")) && !json_object_get(o, "model_type"))
    return tm_errf(err, "%s: a tokmeter record, not llama-bench output (report and compare "
                        "read it as it is)", w);
  if (str_field(o, "model_type", w, true, &e->model_type, err) ||
      str_field(o, "model_filename", w, false, &e->model_filename, err) ||
      str_field(o, "test_time", w, false, &e->test_time, err) ||
      str_field(o, "cpu_info", w, false, &e->cpu_info, err) ||
      str_field(o, "gpu_info", w, false, &e->gpu_info, err) ||
      str_field(o, "backends", w, false, &e->backends, err) ||
      int_field(o, "n_prompt", w, true, 0, 0, &e->n_prompt, err) ||
      int_field(o, "n_gen", w, true, 0, 0, &e->n_gen, err) ||
      int_field(o, "n_depth", w, false, 0, 0, &e->n_depth, err) ||
      int_field(o, "n_threads", w, true, 0, 1, &e->n_threads, err))
    return -1;
  /* llama-bench always names the model ("<arch> <size> <type>"): an empty
   * name is not its output, and would leave the runs unlabelled */
  if (!*e->model_type) return tm_errf(err, "%s: field \"model_type\" is empty", w);
  if (e->test_time && !iso8601_utc(e->test_time)) {
    char d[48];
    snprintf(d, sizeof d, "%.40s", e->test_time);
    for (char *p = d; *p; p++)
      if (!isprint((unsigned char)*p)) *p = '?';
    return tm_errf(err, "%s: field \"test_time\" \"%s\" is not an ISO 8601 UTC time "
                        "(YYYY-MM-DDTHH:MM:SSZ)", w, d);
  }
  const char *big = e->n_prompt > 1000000000   ? "n_prompt"
                    : e->n_gen > 1000000000    ? "n_gen"
                    : e->n_depth > 1000000000  ? "n_depth"
                    : e->n_threads > 1000000   ? "n_threads"
                                               : NULL;
  if (big)
    return tm_errf(err, "%s: field \"%s\" is %lld (at most %d expected)", w, big,
                   (long long)json_integer_value(json_object_get(o, big)),
                   strcmp(big, "n_threads") ? 1000000000 : 1000000);
  /* samples_ns: one timing per repetition; older llama-bench builds wrote only
   * avg_ns (then one run stands for the mean, said in a warning). */
  json_t *s = json_object_get(o, "samples_ns");
  if (s) {
    if (!json_is_array(s) || json_array_size(s) == 0)
      return tm_errf(err, "%s: field \"samples_ns\" is not a non-empty array", w);
    e->n_samples = json_array_size(s);
    e->ns = malloc(e->n_samples * sizeof *e->ns);
    if (!e->ns) return tm_errf(err, "out of memory");
    for (size_t i = 0; i < e->n_samples; i++) {
      json_t *v = json_array_get(s, i);
      if (!json_is_number(v) || !(json_number_value(v) > 0))
        return tm_errf(err, "%s: samples_ns[%zu] is not a positive number", w, i);
      e->ns[i] = json_number_value(v);
    }
  } else {
    json_t *a = json_object_get(o, "avg_ns");
    if (!a) return tm_errf(err, "%s: field \"samples_ns\" missing (and no avg_ns)", w);
    if (!json_is_number(a) || !(json_number_value(a) > 0))
      return tm_errf(err, "%s: field \"avg_ns\" is not a positive number", w);
    e->n_samples = 1;
    e->avg_only = true;
    e->ns = malloc(sizeof *e->ns);
    if (!e->ns) return tm_errf(err, "out of memory");
    e->ns[0] = json_number_value(a);
  }
  return check_reported(o, e, err);
}

/* The input as a list of objects (borrowed from *root, which the caller
 * frees). JSON: an array (or one object); JSONL: one object per line. */
static int parse_input(const char *text, size_t len, json_t **root, json_t **items,
                       char *format, size_t **line_of, struct tm_err *err) {
  *root = *items = NULL;
  *line_of = NULL;
  size_t i = 0;
  while (i < len && isspace((unsigned char)text[i])) i++;
  json_t *arr = json_array();
  if (!arr) return tm_errf(err, "out of memory");
  *items = arr;
  if (i == len) { /* empty: no records, not an error here */
    snprintf(format, 8, "json");
    return 0;
  }
  if (text[i] != '[' && text[i] != '{')
    return tm_errf(err, "byte %zu: expected '[' (llama-bench -o json) or '{' (-o jsonl), "
                        "found '%c'",
                   i, isprint((unsigned char)text[i]) ? text[i] : '?');
  json_error_t je;
  json_t *whole = json_loadb(text, len, 0, &je);
  if (whole) {
    *root = whole;
    snprintf(format, 8, "json");
    if (json_is_array(whole)) {
      json_decref(arr);
      *items = json_incref(whole);
      return 0;
    }
    if (json_is_object(whole)) return json_array_append(arr, whole) ? tm_errf(err, "out of memory") : 0;
    return tm_errf(err, "not llama-bench output: the document is neither an array nor an object");
  }
  if (text[i] == '[')
    return tm_errf(err, "not valid JSON at byte %d (line %d, column %d): %s", je.position,
                   je.line, je.column, je.text);
  /* JSONL: every non-blank line one object. */
  snprintf(format, 8, "jsonl");
  size_t line = 1, pos = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    size_t b = pos;
    while (b < end && isspace((unsigned char)text[b])) b++;
    if (b < end) {
      json_t *v = json_loadb(text + pos, end - pos, 0, &je);
      if (!v)
        return tm_errf(err, "line %zu: not valid JSON at byte %zu (column %d): %s", line,
                       pos + (je.position > 0 ? (size_t)je.position : 0), je.column, je.text);
      size_t *grown = realloc(*line_of, (json_array_size(arr) + 1) * sizeof *grown);
      if (!grown) {
        json_decref(v);
        return tm_errf(err, "out of memory");
      }
      *line_of = grown;
      grown[json_array_size(arr)] = line;
      if (json_array_append_new(arr, v)) return tm_errf(err, "out of memory");
    }
    pos = end + 1;
    line++;
  }
  return 0;
}

/* ----------------------------------------------------------- building --- */

static void test_name(const struct lb_entry *e, char *buf, size_t n) {
  if (e->n_prompt > 0) snprintf(buf, n, "pp%lld", e->n_prompt);
  else snprintf(buf, n, "tg%lld", e->n_gen);
}

struct ceil_fig {
  double ceiling_tok_s, bandwidth, bytes_per_token, compute, flops_per_token;
  const char *compute_path;
};

static bool cpu_backend(const struct lb_entry *e) {
  return !e->backends || !*e->backends || !strcmp(e->backends, "CPU");
}

static double probe_at(const double *by_threads, const struct machine_probe *p, long long t) {
  if (!p || t < 1 || t > (long long)p->max_threads) return NAN;
  return by_threads[t] > 0 ? by_threads[t] : NAN;
}

/* Same formulas as `tokmeter bench` in-process (cmd_bench_engine.c). */
static void ceiling_for(const struct import_opts *o, const struct lb_entry *e,
                        struct import_out *out, struct ceil_fig *c) {
  c->ceiling_tok_s = c->bandwidth = c->bytes_per_token = c->compute = NAN;
  c->flops_per_token = NAN;
  c->compute_path = NULL;
  const struct model_cost *m = o->cost;
  if (!m) return;
  const struct machine_probe *p = o->probe;
  if (p && !cpu_backend(e)) {
    warn(out, "runs on backend %s: this machine's CPU probe is not its ceiling "
              "(give --bandwidth / --compute)", e->backends);
    p = NULL;
  }
  uint64_t d = (uint64_t)e->n_depth;
  if (e->n_prompt == 0) {
    double sum = 0;
    for (long long i = 0; i < e->n_gen; i++) sum += model_decode_bytes_at_depth(m, d + (uint64_t)i);
    c->bytes_per_token = sum / (double)e->n_gen;
    c->bandwidth = isfinite(o->bandwidth_bytes_s) ? o->bandwidth_bytes_s
                                                  : (p ? probe_at(p->read_bw_bytes_s, p, e->n_threads) : NAN);
    if (p && !isfinite(o->bandwidth_bytes_s) && !isfinite(c->bandwidth))
      warn(out, "the probe has no bandwidth at %lld threads: decode ceiling blank", e->n_threads);
    c->ceiling_tok_s = ceiling_tok_s(c->bandwidth, c->bytes_per_token);
  } else {
    double swa_d = m->sliding_window && d > m->sliding_window ? m->sliding_window : (double)d;
    c->flops_per_token = model_prefill_flops_per_token(m, (uint64_t)e->n_prompt) +
                         m->attn_flops_per_depth_full * (double)d +
                         m->attn_flops_per_depth_swa * swa_d;
    if (isfinite(o->compute_ops_s)) {
      c->compute = o->compute_ops_s;
      c->compute_path = "given";
    } else if (p) {
      bool int8 = ceiling_use_int8(m->quantized_bytes_fraction, probe_best_int8(p, NULL));
      c->compute_path = int8 ? "int8" : "f32";
      c->compute = probe_at(int8 ? p->int8_ops : p->f32_flops, p, e->n_threads);
      if (!isfinite(c->compute))
        warn(out, "the probe has no compute figure at %lld threads: prefill ceiling blank",
             e->n_threads);
    }
    c->ceiling_tok_s = ceiling_tok_s(c->compute, c->flops_per_token);
  }
  if (!(c->ceiling_tok_s > 0)) {
    c->ceiling_tok_s = NAN;
    return;
  }
  if (e->n_prompt == 0 && isfinite(o->bandwidth_bytes_s)) out->decode_given = true;
  else if (e->n_prompt == 0) out->decode_probe = true;
  else if (isfinite(o->compute_ops_s)) out->prefill_given = true;
  else out->prefill_probe = true;
}

static json_t *ceiling_json(const struct lb_entry *e, const struct ceil_fig *c) {
  if (!isfinite(c->ceiling_tok_s)) return json_null();
  json_t *j = json_object();
  if (!j) return NULL;
  int bad = put(j, "ceiling_tok_s", num(c->ceiling_tok_s));
  if (e->n_prompt == 0) {
    bad |= put(j, "read_bandwidth_bytes_s", num(c->bandwidth));
    bad |= put(j, "bytes_per_token", num(round(c->bytes_per_token)));
  } else {
    bad |= put(j, "compute_ops_s", num(c->compute));
    bad |= put(j, "compute_path", str(c->compute_path));
    bad |= put(j, "flops_per_token", num(round(c->flops_per_token)));
  }
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* llama-bench's settings of one entry that change speed: kept on each line so
 * two entries that differ only there can be told apart. */
static json_t *entry_settings(json_t *o) {
  static const char *const keys[] = {"n_batch", "n_ubatch", "type_k", "type_v", "flash_attn",
                                     "n_gpu_layers", "split_mode", "no_kv_offload", "cpu_mask",
                                     "cpu_strict", "poll", "n_cpu_moe", "use_mmap", "embeddings"};
  json_t *s = json_object();
  if (!s) return NULL;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    json_t *v = json_object_get(o, keys[i]);
    if (v && json_object_set(s, keys[i], v)) {
      json_decref(s);
      return NULL;
    }
  }
  return s;
}

static json_t *head(const char *kind, const char *id, const struct lb_entry *e,
                    const struct ceil_fig *c) {
  char arch[64], type[32], test[48], when[32];
  import_parse_model_type(e->model_type, arch, sizeof arch, type, sizeof type);
  test_name(e, test, sizeof test);
  record_time_utc(when);
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, "record", json_string(kind));
  bad |= put(o, "schema", json_integer(RECORD_SCHEMA));
  bad |= put(o, "identity", json_string(id));
  /* the time the test ran (llama-bench's), not the import's */
  bad |= put(o, "time", json_string(e->test_time ? e->test_time : when));
  bad |= put(o, "backend", json_string("llama-bench"));
  bad |= put(o, "target", json_string("in-process"));
  json_t *m = json_object();
  bad |= !m;
  bad |= put(m, "name", str(e->model_type));
  bad |= put(m, "file", str(e->model_filename));
  bad |= put(m, "arch", str(arch));
  bad |= put(m, "type", str(type));
  bad |= put(m, "load_ms", json_null());
  bad |= put(o, "model", m);
  bad |= put(o, "test", json_string(test));
  bad |= put(o, "phase", json_string(e->n_prompt > 0 ? "prefill" : "decode"));
  bad |= put(o, "threads", json_integer(e->n_threads));
  bad |= put(o, "depth", json_integer(e->n_depth));
  bad |= put(o, "kernel_path", json_null());
  bad |= put(o, "settings", entry_settings(e->obj));
  bad |= put(o, "ceiling", ceiling_json(e, c));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *figure(const double *x, size_t n) {
  struct stats_summary s;
  stats_describe(x, n, &s);
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = put(o, "n", json_integer((json_int_t)s.n));
  bad |= put(o, "median", num(s.median));
  bad |= put(o, "mean", num(s.mean));
  bad |= put(o, "sd", num(s.sd));
  bad |= put(o, "min", num(s.min));
  bad |= put(o, "max", num(s.max));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static int push(struct import_out *out, json_t *line) {
  if (!line) return -1;
  void **grown = realloc(out->lines, (out->n_lines + 1) * sizeof *grown);
  if (!grown) {
    json_decref(line);
    return -1;
  }
  out->lines = grown;
  out->lines[out->n_lines++] = line;
  return 0;
}

/* The run lines and the summary of one entry. */
static int build_entry(const struct import_opts *o, const char *id, const struct lb_entry *e,
                       struct import_out *out, json_t **summary) {
  struct ceil_fig c;
  ceiling_for(o, e, out, &c);
  long long tokens = e->n_prompt > 0 ? e->n_prompt : e->n_gen;
  double *ms = malloc(e->n_samples * sizeof *ms), *rate = malloc(e->n_samples * sizeof *rate);
  if (!ms || !rate) {
    free(ms);
    free(rate);
    return -1;
  }
  int bad = 0;
  for (size_t i = 0; i < e->n_samples && !bad; i++) {
    ms[i] = e->ns[i] / 1e6;
    rate[i] = (double)tokens / (e->ns[i] / 1e9);
    json_t *r = head("run", id, e, &c);
    bad |= !r;
    if (r) {
      bad |= put(r, "index", json_integer((json_int_t)i));
      bad |= put(r, "warmup", json_false());
      bad |= put(r, "ok", json_true());
      bad |= put(r, "tokens", json_integer(tokens));
      bad |= put(r, "ms", num(round(ms[i] * 1e3) / 1e3));
      bad |= put(r, "rate_tok_s", num(rate[i]));
      bad |= put(r, "percent_of_ceiling", num(record_percent_of(rate[i], c.ceiling_tok_s)));
      bad |= put(r, "decode_by_segment", json_null());
      if (bad) json_decref(r);
      else bad |= push(out, r);
    }
    out->n_runs++;
  }
  json_t *s = bad ? NULL : head("summary", id, e, &c);
  if (s) {
    struct stats_summary rs;
    stats_describe(rate, e->n_samples, &rs);
    bad |= put(s, "n", json_integer((json_int_t)e->n_samples));
    bad |= put(s, "warmups", json_null()); /* llama-bench's own, not recorded in its output */
    bad |= put(s, "tokens", json_integer(tokens));
    bad |= put(s, "mean_depth", num((double)e->n_depth + (e->n_prompt > 0 ? (double)tokens / 2
                                                                           : (double)(tokens - 1) / 2)));
    bad |= put(s, "rate_tok_s", figure(rate, e->n_samples));
    bad |= put(s, "ms", figure(ms, e->n_samples));
    bad |= put(s, "percent_of_ceiling", num(record_percent_of(rs.mean, c.ceiling_tok_s)));
    bad |= put(s, "decode_by_segment", json_null());
    json_t *rep = json_object();
    bad |= !rep;
    static const char *const keys[] = {"avg_ts", "stddev_ts", "avg_ns", "stddev_ns"};
    for (size_t k = 0; rep && k < 4; k++) {
      json_t *v = json_object_get(e->obj, keys[k]);
      bad |= put(rep, keys[k], v && json_is_number(v) ? json_incref(v) : json_null());
    }
    bad |= put(s, "reported", rep);
  }
  free(ms);
  free(rate);
  if (bad || !s) {
    if (s) json_decref(s);
    return -1;
  }
  *summary = s;
  return 0;
}

/* Distinct integers into a JSON array (settings lists). */
static int add_distinct(json_t *arr, long long v) {
  for (size_t i = 0; i < json_array_size(arr); i++)
    if (json_integer_value(json_array_get(arr, i)) == v) return 0;
  return json_array_append_new(arr, json_integer(v));
}

static json_t *identity_build(const struct import_opts *o, const struct lb_entry *es, size_t n,
                              const char *format, char id[RECORD_ID_LEN + 1],
                              struct tm_err *err) {
  if (record_new_id(id, err) != 0) return NULL;
  char when[32];
  record_time_utc(when);
  const struct lb_entry *e0 = &es[0];
  bool one_model = true;
  for (size_t i = 1; i < n; i++)
    if (strcmp(es[i].model_type, e0->model_type) ||
        strcmp(es[i].model_filename ? es[i].model_filename : "",
               e0->model_filename ? e0->model_filename : ""))
      one_model = false;
  json_t *j = json_object();
  if (!j) goto oom;
  int bad = 0;
  bad |= put(j, "record", json_string("identity"));
  bad |= put(j, "schema", json_integer(RECORD_SCHEMA));
  bad |= put(j, "id", json_string(id));
  bad |= put(j, "time", json_string(when));
  bad |= put(j, "tokmeter", json_string(TOKMETER_VERSION));
  bad |= put(j, "command", str(o->command));
  bad |= put(j, "backend", json_string("llama-bench"));
  bad |= put(j, "target", json_string("in-process"));
  if (one_model) {
    char arch[64], type[32];
    import_parse_model_type(e0->model_type, arch, sizeof arch, type, sizeof type);
    json_t *m = json_object();
    bad |= !m;
    bad |= put(m, "name", str(e0->model_type));
    bad |= put(m, "file", str(e0->model_filename));
    bad |= put(m, "arch", str(arch));
    bad |= put(m, "type", str(type));
    bad |= put(m, "bytes_per_token",
               o->cost ? num(round(o->cost->weight_bytes_per_token + o->cost->state_bytes))
                       : json_null());
    bad |= put(j, "model", m);
  } else {
    bad |= put(j, "model", json_null());
  }
  bad |= put(j, "server", json_null());
  /* The machine the runs were made on, as llama-bench describes it; what it
   * does not say is null, never this machine's figures. */
  json_t *mach = json_object();
  bad |= !mach;
  bad |= put(mach, "cpu", str(e0->cpu_info));
  bad |= put(mach, "gpu", str(e0->gpu_info));
  bad |= put(mach, "backends", str(e0->backends));
  bad |= put(mach, "arch", json_null());
  bad |= put(mach, "cores", json_null());
  bad |= put(mach, "memory_bytes", json_null());
  bad |= put(mach, "flags", json_null());
  bad |= put(j, "machine", mach);
  bad |= put(j, "thermal_before", json_null());
  json_t *rt = json_object();
  bad |= !rt;
  bad |= put(rt, "name", json_string("llama-bench"));
  json_t *bc = json_object_get(e0->obj, "build_commit"), *bn = json_object_get(e0->obj, "build_number");
  bad |= put(rt, "build_commit", bc && json_is_string(bc) ? json_incref(bc) : json_null());
  bad |= put(rt, "build_number", bn && json_is_integer(bn) ? json_incref(bn) : json_null());
  bad |= put(j, "runtime", rt);
  json_t *set = json_object(), *th = json_array(), *pp = json_array(), *tg = json_array(),
         *dp = json_array();
  bad |= !set || !th || !pp || !tg || !dp;
  for (size_t i = 0; i < n && !bad; i++) {
    bad |= add_distinct(th, es[i].n_threads);
    if (es[i].n_prompt > 0) bad |= add_distinct(pp, es[i].n_prompt);
    else bad |= add_distinct(tg, es[i].n_gen);
    bad |= add_distinct(dp, es[i].n_depth);
  }
  bad |= put(set, "threads", th);
  bad |= put(set, "prompt_tokens", pp);
  bad |= put(set, "gen_tokens", tg);
  bad |= put(set, "depth", dp);
  bad |= put(set, "reps", json_integer((json_int_t)e0->n_samples));
  json_t *imp = json_object();
  bad |= !imp;
  bad |= put(imp, "file", str(o->source));
  bad |= put(imp, "format", json_string(format));
  bad |= put(imp, "gguf", str(o->cost ? o->model_file : NULL));
  bad |= put(set, "imported", imp);
  bad |= put(j, "settings", set);
  if (bad) {
    json_decref(j);
    goto oom;
  }
  return j;
oom:
  tm_errf(err, "out of memory");
  return NULL;
}

static json_t *end_build(const char *id, size_t runs) {
  char when[32];
  record_time_utc(when);
  json_t *j = json_object();
  if (!j) return NULL;
  int bad = 0;
  bad |= put(j, "record", json_string("end"));
  bad |= put(j, "schema", json_integer(RECORD_SCHEMA));
  bad |= put(j, "identity", json_string(id));
  bad |= put(j, "time", json_string(when));
  bad |= put(j, "thermal_after", json_null());
  bad |= put(j, "runs", json_integer((json_int_t)runs));
  bad |= put(j, "n_failed", json_integer(0));
  bad |= put(j, "failed", json_object());
  bad |= put(j, "interrupted", json_false());
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* -------------------------------------------------------------- entry --- */

int import_llamabench(const char *text, size_t len, const struct import_opts *o,
                      struct import_out *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  json_t *root = NULL, *items = NULL;
  struct lb_entry *es = NULL;
  size_t n_es = 0;
  int rc = -1;
  json_t **summaries = NULL;
  size_t n_items = 0;
  size_t *line_of = NULL; /* JSONL: the line of each entry */
  if (parse_input(text, len, &root, &items, out->format, &line_of, err) != 0) goto done;
  n_items = json_array_size(items);
  es = calloc(n_items ? n_items : 1, sizeof *es);
  summaries = calloc(n_items ? n_items : 1, sizeof *summaries);
  if (!es || !summaries) {
    tm_errf(err, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n_items; i++) {
    struct lb_entry *e = &es[n_es];
    memset(e, 0, sizeof *e);
    if (!strcmp(out->format, "jsonl") && line_of)
      snprintf(e->where, sizeof e->where, "line %zu (entry %zu)", line_of[i], i);
    else
      snprintf(e->where, sizeof e->where, "entry %zu", i);
    int c = check_entry(json_array_get(items, i), e, err);
    n_es++;
    if (c != 0) goto done;
    if (e->avg_only)
      warn(out, "no samples_ns (an older llama-bench): one run per test, at its mean time");
    if (e->n_prompt > 0 && e->n_gen > 0) {
      out->n_skipped_combined++;
      free(e->ns);
      n_es--;
      continue;
    }
    if (e->n_prompt == 0 && e->n_gen == 0) {
      tm_errf(err, "%s: n_prompt and n_gen are both 0", e->where);
      goto done;
    }
  }
  if (out->n_skipped_combined)
    warn(out, "%zu combined pp+tg test%s skipped: one rate over prompt and generated tokens "
              "blends prefill and decode",
         out->n_skipped_combined, out->n_skipped_combined == 1 ? "" : "s");
  if (n_es == 0) {
    rc = 0;
    goto done;
  }
  char id[RECORD_ID_LEN + 1];
  json_t *ident = identity_build(o, es, n_es, out->format, id, err);
  if (!ident || push(out, ident) != 0) {
    if (ident) tm_errf(err, "out of memory");
    goto done;
  }
  if (o->cost) {
    /* The GGUF given should be the file llama-bench ran: its model_size is
     * the tensor bytes. */
    json_t *ms = json_object_get(es[0].obj, "model_size");
    if (ms && json_is_integer(ms) && (uint64_t)json_integer_value(ms) != o->cost->bytes_total)
      warn(out, "%s holds %llu tensor bytes, llama-bench's model %llu: ceilings are for a "
                "different file",
           o->model_file ? o->model_file : "the model file",
           (unsigned long long)o->cost->bytes_total,
           (unsigned long long)json_integer_value(ms));
  }
  for (size_t i = 0; i < n_es; i++) {
    if (build_entry(o, id, &es[i], out, &summaries[i]) != 0) {
      tm_errf(err, "out of memory");
      goto done;
    }
    out->n_tests++;
  }
  for (size_t i = 0; i < n_es; i++) {
    int p = push(out, summaries[i]);
    summaries[i] = NULL;
    if (p != 0) {
      tm_errf(err, "out of memory");
      goto done;
    }
  }
  if (push(out, end_build(id, out->n_runs)) != 0) {
    tm_errf(err, "out of memory");
    goto done;
  }
  rc = 0;
done:
  for (size_t i = 0; i < n_es; i++) free(es[i].ns);
  free(es);
  if (summaries)
    for (size_t i = 0; i < n_items; i++)
      if (summaries[i]) json_decref(summaries[i]);
  free(summaries);
  free(line_of);
  json_decref(items);
  json_decref(root);
  if (rc != 0) import_out_free(out);
  return rc;
}

void import_out_free(struct import_out *out) {
  if (!out) return;
  for (size_t i = 0; i < out->n_lines; i++) json_decref(out->lines[i]);
  free(out->lines);
  memset(out, 0, sizeof *out);
}
