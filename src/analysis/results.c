/* results: JSON Lines results files -> invocations (see results.h).
 *
 * Owns the check of every record against docs/records.md's types before any
 * command computes with it: a negative rate, a thread count that is a string
 * or a test named "zz99" would otherwise turn into a wrong figure or a lost
 * column with exit 0. The checks cover what the analysis reads (series, TTFT
 * fit, report plots); every line tokmeter itself writes passes them (null
 * wherever the writers put null: record_json_num writes null for a
 * non-finite figure). A run whose figures pass is then held against itself
 * (results_agree.c: each rate against the time and count it divides). */
#include "record/keys.h"
#include "analysis/results.h"
#include "record/load_record.h"
#include "analysis/results_agree.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ checks --- */

/* Where a record came from, for messages: "FILE:LINE: <problem>". */
struct where {
  const char *source;
  size_t lineno;
  struct tm_err *err;
};

static int bad(const struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const struct where *w, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tm_errf(w->err, "%s:%zu: %s", w->source, w->lineno, msg);
}

/* A value as the message shows it: -100, 1e+300, "x" (cut, one line), null,
 * an object. */
static void describe(json_t *v, char *buf, size_t n) {
  if (json_is_integer(v)) {
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
  } else if (json_is_real(v)) {
    snprintf(buf, n, "%g", json_real_value(v));
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    size_t len = strlen(s), k = 0, o = 0;
    if (n < 8) { snprintf(buf, n, "\"\""); return; }
    buf[o++] = '"';
    for (; k < len && k < 40 && o + 5 < n; k++)
      buf[o++] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
    if (k < len && o + 4 < n) { buf[o++] = '.'; buf[o++] = '.'; buf[o++] = '.'; }
    buf[o++] = '"';
    buf[o] = 0;
  } else if (json_is_null(v)) {
    snprintf(buf, n, "null");
  } else if (json_is_boolean(v)) {
    snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
  } else {
    snprintf(buf, n, "%s", json_is_array(v) ? "an array" : "an object");
  }
}

enum num_rule {
  NUM_RATE,    /* tok/s: > 0 (a blank is null, never 0) */
  NUM_MS,      /* a time: >= 0 ms */
  NUM_MS_POS,  /* the time of an in-process test: > 0 ms (its rate is tokens / ms) */
  NUM_NONNEG,  /* a ceiling part, a size: >= 0 */
};

/* Bounds: far beyond anything measured (a millionth to a trillion tok/s; 31
 * years in ms; 1e30 bytes, FLOPs or bytes/s), tight enough that sums, means,
 * ratios and percentages of the values stay finite. 1e308 tok/s overflowed
 * the median of two runs to inf and the report dropped its column. */
#define MIN_RATE 1e-6
#define MAX_RATE 1e12
#define MAX_MS 1e12
#define MAX_PART 1e30

/* A number under rule, or null, or absent. name is how the message calls it. */
static int check_num_at(const struct where *w, json_t *v, const char *name, enum num_rule rule) {
  if (!v || json_is_null(v)) return 0;
  double x = json_is_number(v) ? json_number_value(v) : NAN;
  bool ok = isfinite(x);
  switch (rule) {
  case NUM_RATE: ok = ok && x >= MIN_RATE && x <= MAX_RATE; break;
  case NUM_MS: ok = ok && x >= 0 && x <= MAX_MS; break;
  case NUM_MS_POS: ok = ok && x > 0 && x <= MAX_MS; break;
  default: ok = ok && x >= 0 && x <= MAX_PART; break;
  }
  if (ok) return 0;
  char d[64];
  describe(v, d, sizeof d);
  return bad(w, "%s %s is not %s", name, d,
             rule == NUM_RATE     ? "a positive rate from 1e-6 to 1e12 tok/s (or null)"
             : rule == NUM_MS     ? "a time >= 0 ms up to 1e12 ms (or null)"
             : rule == NUM_MS_POS ? "a time > 0 ms up to 1e12 ms (or null): an in-process test "
                                    "takes time"
                                  : "a number >= 0 up to 1e30 (or null)");
}

static int check_num(const struct where *w, json_t *obj, enum record_key path, enum num_rule rule) {
  return check_num_at(w, record_get(obj, path), record_key(path), rule);
}

/* An integer in [lo, hi]; absent is an error only when required, null only
 * when nullable. what: "a positive integer" etc., for the message. */
static int check_int_at(const struct where *w, json_t *v, const char *name, long long lo,
                        long long hi, bool required, bool nullable, const char *what) {
  if (!v) return required ? bad(w, "%s missing (%s expected)", name, what) : 0;
  if (json_is_null(v) && nullable) return 0;
  if (json_is_integer(v)) {
    long long x = (long long)json_integer_value(v);
    if (x >= lo && x <= hi) return 0;
    if (x >= lo) return bad(w, "%s %lld is out of range (at most %lld)", name, x, hi);
  }
  char d[64];
  describe(v, d, sizeof d);
  return bad(w, "%s %s is not %s", name, d, what);
}

static int check_int(const struct where *w, json_t *obj, enum record_key path, long long lo,
                     long long hi, bool required, bool nullable, const char *what) {
  return check_int_at(w, record_get(obj, path), record_key(path), lo, hi, required, nullable,
                      what);
}

/* true / false, or absent: json_is_true would read "yes" as false and drop
 * (or keep) a run silently. */
static int check_bool(const struct where *w, json_t *obj, enum record_key key) {
  const char *path = record_key(key);
  json_t *v = record_get(obj, key);
  if (!v || json_is_boolean(v)) return 0;
  char d[64];
  describe(v, d, sizeof d);
  return bad(w, "%s %s is not true or false", path, d);
}

/* A string, null or absent (labels: a number there would vanish from keys). */
static int check_str(const struct where *w, json_t *obj, enum record_key key) {
  const char *path = record_key(key);
  json_t *v = record_get(obj, key);
  if (!v || json_is_null(v) || json_is_string(v)) return 0;
  char d[64];
  describe(v, d, sizeof d);
  return bad(w, "%s %s is not a string", path, d);
}

/* An object, null or absent. */
static int check_obj(const struct where *w, json_t *obj, enum record_key key) {
  const char *path = record_key(key);
  json_t *v = record_get(obj, key);
  if (!v || json_is_null(v) || json_is_object(v)) return 0;
  char d[64];
  describe(v, d, sizeof d);
  return bad(w, "%s %s is not an object (or null)", path, d);
}

#define MAX_THREADS 1000000LL
#define MAX_TOKENS 1000000000LL

/* decode_by_segment / rates.decode_by_segment: null or [{from, to, tok_s,
 * ms}] with 1 <= from <= to (the report plots the curve from them). */
static int check_segments(const struct where *w, json_t *run, enum record_key key) {
  const char *path = record_key(key);
  json_t *a = record_get(run, key);
  if (!a || json_is_null(a)) return 0;
  if (!json_is_array(a)) {
    char d[64];
    describe(a, d, sizeof d);
    return bad(w, "%s %s is not an array (or null)", path, d);
  }
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *e = json_array_get(a, i);
    char name[96];
    snprintf(name, sizeof name, "%s[%zu]", path, i);
    if (!json_is_object(e)) return bad(w, "%s is not an object", name);
    char f[112];
    snprintf(f, sizeof f, "%s.from", name);
    if (check_int_at(w, json_object_get(e, "from"), f, 1, MAX_TOKENS, true, false,
                     "a positive integer"))
      return -1;
    snprintf(f, sizeof f, "%s.to", name);
    if (check_int_at(w, json_object_get(e, "to"), f, 1, MAX_TOKENS, true, false,
                     "a positive integer"))
      return -1;
    if (json_integer_value(json_object_get(e, "to")) < json_integer_value(json_object_get(e, "from")))
      return bad(w, "%s: to is before from", name);
    snprintf(f, sizeof f, "%s.tok_s", name);
    if (check_num_at(w, json_object_get(e, "tok_s"), f, NUM_RATE)) return -1;
    snprintf(f, sizeof f, "%s.ms", name);
    if (check_num_at(w, json_object_get(e, "ms"), f, NUM_MS)) return -1;
  }
  return 0;
}

/* pp<L> / tg<N>, L, N from 1 to MAX_TOKENS, digits only: anything else would
 * merge pp and tg rows or make a row of its own. */
static bool valid_test_name(const char *t) {
  if (strncmp(t, "pp", 2) && strncmp(t, "tg", 2)) return false;
  const char *d = t + 2;
  if (!*d || *d == '0' || strlen(d) > 10) return false;
  long long v = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9') return false;
    v = v * 10 + (*d - '0');
  }
  return v <= MAX_TOKENS;
}

/* In-process runs ("engine", "llama-bench"): docs/records.md "In-process runs". */
static int check_inprocess_run(const struct where *w, json_t *run) {
  json_t *t = json_object_get(run, "test");
  if (!t) return bad(w, "test missing (an in-process run names pp<N> or tg<N>)");
  if (!json_is_string(t) || !valid_test_name(json_string_value(t))) {
    char d[64];
    describe(t, d, sizeof d);
    return bad(w, "test %s is not pp<N> or tg<N> (N a positive integer)", d);
  }
  const char *test = json_string_value(t);
  json_t *ph = json_object_get(run, "phase");
  if (ph && !json_is_null(ph)) {
    const char *want = test[0] == 'p' ? "prefill" : "decode";
    if (!json_is_string(ph) || strcmp(json_string_value(ph), want)) {
      char d[64];
      describe(ph, d, sizeof d);
      return bad(w, "phase %s does not match test \"%s\" (\"%s\" expected)", d, test, want);
    }
  }
  if (check_int(w, run, RK_THREADS, 1, MAX_THREADS, true, false, "a positive integer") ||
      check_int(w, run, RK_DEPTH, 0, MAX_TOKENS, true, false, "a non-negative integer") ||
      check_int(w, run, RK_TOKENS, 1, MAX_TOKENS, false, true, "a positive integer") ||
      check_int(w, run, RK_INDEX, 0, MAX_TOKENS, false, true, "a non-negative integer") ||
      check_num(w, run, RK_MS, NUM_MS_POS) || check_num(w, run, RK_RATE_TOK_S, NUM_RATE) ||
      check_obj(w, run, RK_CEILING) || check_num(w, run, RK_CEILING_TOK_S, NUM_RATE) ||
      check_num(w, run, RK_CEILING_READ_BANDWIDTH, NUM_NONNEG) ||
      check_num(w, run, RK_CEILING_BYTES_PER_TOKEN, NUM_NONNEG) ||
      check_num(w, run, RK_CEILING_COMPUTE_OPS, NUM_NONNEG) ||
      check_num(w, run, RK_CEILING_FLOPS_PER_TOKEN, NUM_NONNEG) ||
      check_segments(w, run, RK_DECODE_BY_SEGMENT))
    return -1;
  json_t *model = json_object_get(run, "model");
  if (json_is_object(model) &&
      (check_str(w, run, RK_MODEL_NAME) || check_str(w, run, RK_MODEL_FILE) ||
       check_str(w, run, RK_MODEL_TYPE) || check_num(w, run, RK_MODEL_LOAD_MS, NUM_MS)))
    return -1;
  return 0;
}

/* Server runs: docs/records.md "run" (the figures the analysis reads). */
static int check_server_run(const struct where *w, json_t *run) {
  static const enum record_key ms_keys[] = {
      RK_CLIENT_TTFT_MS, RK_CLIENT_LAST_MS,    RK_CLIENT_DECODE_SPAN_MS, RK_CLIENT_HEADERS_MS,
      RK_CLIENT_END_MS,  RK_CLIENT_CONNECT_MS, RK_CLIENT_TLS_MS};
  static const enum record_key rate_keys[] = {
      RK_RATES_PREFILL_SERVER, RK_RATES_PREFILL_CLIENT, RK_RATES_PREFILL_HEADLINE,
      RK_RATES_DECODE_SERVER,  RK_RATES_DECODE_CLIENT,  RK_RATES_DECODE_HEADLINE};
  static const enum record_key count_keys[] = {
      RK_TOKENS_PROMPT,        RK_TOKENS_PROCESSED, RK_TOKENS_COMPLETION,  RK_TOKENS_CACHED,
      RK_TOKENS_CLIENT_CHUNKS, RK_SERVER_PROMPT_N,  RK_SERVER_PREDICTED_N};
  for (size_t i = 0; i < sizeof ms_keys / sizeof ms_keys[0]; i++)
    if (check_num(w, run, ms_keys[i], NUM_MS)) return -1;
  for (size_t i = 0; i < sizeof rate_keys / sizeof rate_keys[0]; i++)
    if (check_num(w, run, rate_keys[i], NUM_RATE)) return -1;
  for (size_t i = 0; i < sizeof count_keys / sizeof count_keys[0]; i++)
    if (check_int(w, run, count_keys[i], 0, LLONG_MAX, false, true, "a non-negative integer"))
      return -1;
  if (check_int(w, run, RK_MAX_TOKENS, 1, 2147483647LL, false, true, "a positive integer") ||
      check_str(w, run, RK_WORKLOAD) || check_str(w, run, RK_TARGET) || check_str(w, run, RK_MODEL) ||
      check_bool(w, run, RK_CACHE_PREFILL_EXCLUDED) || check_obj(w, run, RK_CEILING) ||
      check_num(w, run, RK_CEILING_DECODE_TOK_S, NUM_NONNEG) ||
      check_num(w, run, RK_CEILING_PREFILL_TOK_S, NUM_NONNEG) ||
      check_num(w, run, RK_CEILING_READ_BANDWIDTH, NUM_NONNEG) ||
      check_segments(w, run, RK_RATES_DECODE_BY_SEGMENT))
    return -1;
  return 0;
}

static bool is_inprocess(json_t *run, const char *backend) {
  return json_object_get(run, "test") ||
         (backend && (!strcmp(backend, "engine") || !strcmp(backend, "llama-bench")));
}

/* A load request (docs/records.md "request"): its "load" sample, when it
 * has one, as the merge will read it. */
static int check_request(const struct where *w, json_t *line) {
  json_t *o = json_object_get(line, "load");
  if (!o) return 0;
  struct load_sample x;
  double *chunks;
  const char *error_name;
  int level;
  char why[160];
  if (record_load_sample_parse(o, &x, &chunks, &error_name, &level, why, sizeof why) != 0)
    return bad(w, "%s", why);
  free(chunks);
  return 0;
}

/* A load level (docs/records.md "load"): the figures the report draws, typed. */
static int check_load(const struct where *w, json_t *line) {
  json_t *c = json_object_get(line, "concurrency"), *r = json_object_get(line, "request_rate");
  const bool closed = json_is_integer(c) && json_integer_value(c) >= 1;
  const bool open = json_is_number(r) && json_number_value(r) > 0;
  if (closed == open || !(closed ? json_is_null(r) || !r : json_is_null(c) || !c))
    return bad(w, "load record: one of concurrency (a whole number >= 1) and request_rate (a "
                  "number > 0) is expected, the other null");
  static const char *const rates[] = {"window_s", "aggregate_output_tok_s", "aggregate_prompt_tok_s",
                                      "requests_per_s", "aggregate_decode_ceiling_tok_s"};
  for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
    json_t *v = json_object_get(line, rates[i]);
    if (v && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) >= 0))
      return bad(w, "load record: %s is not a number >= 0 or null", rates[i]);
  }
  static const char *const dists[] = {"ttft_ms", "per_stream_decode_tok_s"};
  static const char *const fields[] = {"p50", "p99"};
  for (size_t i = 0; i < 2; i++) {
    json_t *d = json_object_get(line, dists[i]);
    if (!d || json_is_null(d)) continue;
    if (!json_is_object(d)) return bad(w, "load record: %s is not an object or null", dists[i]);
    for (size_t k = 0; k < 2; k++) {
      json_t *v = json_object_get(d, fields[k]);
      if (v && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) >= 0))
        return bad(w, "load record: %s.%s is not a number >= 0", dists[i], fields[k]);
    }
  }
  return 0;
}

static int check_record(const struct where *w, const char *kind, json_t *line) {
  if (!strcmp(kind, "identity")) {
    json_t *id = json_object_get(line, "id");
    if (!json_is_string(id) || !*json_string_value(id)) {
      char d[64] = "missing";
      if (id) describe(id, d, sizeof d);
      return bad(w, "identity id %s is not a non-empty string", d);
    }
    return check_str(w, line, RK_BACKEND) || check_str(w, line, RK_TARGET) ||
                   check_obj(w, line, RK_MODEL) ||
                   check_num(w, line, RK_MODEL_BYTES_PER_TOKEN, NUM_NONNEG)
               ? -1
               : 0;
  }
  /* run, summary, end: their invocation's id */
  json_t *id = json_object_get(line, "identity");
  if (!json_is_string(id) || !*json_string_value(id)) {
    char d[64] = "missing";
    if (id) describe(id, d, sizeof d);
    return bad(w, "%s's identity %s is not an identity id (a non-empty string)", kind, d);
  }
  if (!strcmp(kind, "end"))
    return check_int(w, line, RK_RUNS, 0, LLONG_MAX, false, true, "a non-negative integer") ||
                   check_int(w, line, RK_N_FAILED, 0, LLONG_MAX, false, true,
                             "a non-negative integer")
               ? -1
               : 0;
  if (!strcmp(kind, "load")) return check_load(w, line);
  if (!strcmp(kind, "request")) return check_request(w, line);
  if (strcmp(kind, "run")) return 0; /* summaries: no figure is read back from them */
  if (check_bool(w, line, RK_WARMUP) || check_bool(w, line, RK_OK) ||
      check_bool(w, line, RK_COLD) || check_bool(w, line, RK_CALIBRATION) ||
      check_str(w, line, RK_BACKEND))
    return -1;
  const char *backend = json_string_value(json_object_get(line, "backend"));
  bool in_process = is_inprocess(line, backend);
  if (in_process ? check_inprocess_run(w, line) : check_server_run(w, line)) return -1;
  /* Types first: the identities compute with numbers already in range. */
  char msg[360];
  if (results_run_agrees(line, in_process, msg, sizeof msg)) return bad(w, "%s", msg);
  return 0;
}

/* ----------------------------------------------------------- loading --- */

static int push(json_t ***arr, size_t *n, json_t *v) {
  json_t **grown = realloc(*arr, (*n + 1) * sizeof **arr);
  if (!grown) return -1;
  grown[(*n)++] = v;
  *arr = grown;
  return 0;
}

static struct results_invocation *group_for(struct results *r, const char *id,
                                            const char *source, size_t lineno) {
  for (size_t i = 0; i < r->n_inv; i++)
    if (!strcmp(r->inv[i].id, id)) return &r->inv[i];
  struct results_invocation *grown = realloc(r->inv, (r->n_inv + 1) * sizeof *grown);
  if (!grown) return NULL;
  r->inv = grown;
  struct results_invocation *g = &r->inv[r->n_inv++];
  memset(g, 0, sizeof *g);
  snprintf(g->id, sizeof g->id, "%s", id);
  g->source = source;
  g->line = lineno;
  return g;
}

/* Takes ownership of line (a parsed object). 0, or -1 with err. */
static int add_record(struct results *r, json_t *line, const char *source, size_t lineno,
                      struct tm_err *err) {
  const char *kind = json_string_value(json_object_get(line, "record"));
  if (!kind) {
    json_decref(line);
    return tm_errf(err, "%s:%zu: not a tokmeter record (no \"record\" string)", source, lineno);
  }
  json_t *schema = json_object_get(line, "schema");
  if (schema && json_is_integer(schema) && json_integer_value(schema) > RESULTS_READ_MAX_SCHEMA) {
    long long s = json_integer_value(schema);
    json_decref(line);
    return tm_errf(err, "%s:%zu: record schema %lld is newer than this tokmeter reads (%d)",
                   source, lineno, s, RESULTS_READ_MAX_SCHEMA);
  }
  if (schema && (!json_is_integer(schema) || json_integer_value(schema) < 1)) {
    char d[64];
    describe(schema, d, sizeof d);
    json_decref(line);
    return tm_errf(err, "%s:%zu: schema %s is not a record format version (1)", source, lineno, d);
  }
  r->n_lines++;
  r->n_lines_by_source[r->n_sources - 1]++;
  bool is_identity = !strcmp(kind, "identity");
  bool known = is_identity || !strcmp(kind, "run") || !strcmp(kind, "summary") ||
               !strcmp(kind, "end") || !strcmp(kind, "load") || !strcmp(kind, "request");
  if (!known) {
    json_decref(line);
    return 0;
  }
  struct where w = {source, lineno, err};
  if (check_record(&w, kind, line)) {
    json_decref(line);
    return -1;
  }
  const char *id = json_string_value(json_object_get(line, is_identity ? "id" : "identity"));
  struct results_invocation *g = group_for(r, id ? id : "", source, lineno);
  if (!g) goto oom;
  if (is_identity) {
    if (g->identity) {
      json_decref(line);
      return tm_errf(err, "%s:%zu: identity %s appears twice", source, lineno, g->id);
    }
    g->identity = line;
    g->identity_line = lineno;
    g->identity_source = source;
  } else if (!strcmp(kind, "run")) {
    if (push(&g->runs, &g->n_runs, line)) goto oom;
  } else if (!strcmp(kind, "summary")) {
    if (push(&g->summaries, &g->n_summaries, line)) goto oom;
  } else if (!strcmp(kind, "load")) {
    if (push(&g->loads, &g->n_loads, line)) goto oom;
  } else if (!strcmp(kind, "request")) {
    /* only the sample the load run judged (what a merge and compare read) */
    json_t *sample = json_object_get(line, "load");
    if (sample) {
      json_incref(sample);
      json_decref(line);
      line = sample;
      if (push(&g->requests, &g->n_requests, line)) goto oom;
    } else {
      json_decref(line);
    }
  } else {
    if (g->end) json_decref(g->end);
    g->end = line;
  }
  return 0;
oom:
  json_decref(line);
  return tm_errf(err, "%s:%zu: out of memory", source, lineno);
}

/* The longest record line read: a server run with every chunk's arrival time
 * of a 100k-token answer is ~2 MB; a line past this is not a record (a binary
 * file, /dev/zero) and must not grow the buffer until memory runs out. */
#define RESULTS_MAX_LINE ((size_t)64 << 20)

/* One line into *buf (NUL-terminated, the newline kept), like getline, but
 * stopping at RESULTS_MAX_LINE bytes. Returns its length, -1 at the end of the
 * input or on a read error (ferror), -2 for a line too long, -3 out of memory. */
static ssize_t read_line(char **buf, size_t *cap, FILE *f) {
  size_t len = 0;
  int c;
  /* Byte by byte: a NUL inside a line (a binary file) must not hide its
   * length, as it would from fgets + strlen. */
  while ((c = getc_unlocked(f)) != EOF) {
    if (len + 2 > *cap) {
      if (*cap >= RESULTS_MAX_LINE) return -2;
      size_t ncap = *cap ? *cap * 2 : 4096;
      if (ncap > RESULTS_MAX_LINE) ncap = RESULTS_MAX_LINE;
      char *nb = realloc(*buf, ncap);
      if (!nb) return -3;
      *buf = nb;
      *cap = ncap;
    }
    (*buf)[len++] = (char)c;
    if (c == '\n') break;
  }
  if (len == 0) return -1;
  (*buf)[len] = 0;
  return (ssize_t)len;
}

static int load_stream(struct results *r, FILE *f, const char *source, struct tm_err *err) {
  char *buf = NULL;
  size_t cap = 0;
  ssize_t len;
  size_t lineno = 0, added = 0; /* records read from this file */
  int rc = 0;
  while ((len = read_line(&buf, &cap, f)) >= 0 || len < -1) {
    lineno++;
    if (len == -2) {
      rc = tm_errf(err, "%s:%zu: a line longer than %zu MiB: not a tokmeter results file",
                   source, lineno, RESULTS_MAX_LINE >> 20);
      break;
    }
    if (len == -3) {
      rc = tm_errf(err, "%s:%zu: out of memory reading the line", source, lineno);
      break;
    }
    const bool whole = buf[len - 1] == '\n'; /* before the trim below */
    size_t k = (size_t)len;
    while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == '\r' || buf[k - 1] == ' ' ||
                     buf[k - 1] == '\t'))
      buf[--k] = '\0';
    size_t start = 0;
    while (start < k && (buf[start] == ' ' || buf[start] == '\t')) start++;
    if (start == k) continue;
    json_error_t jerr;
    json_t *line = json_loadb(buf + start, k - start, JSON_REJECT_DUPLICATES, &jerr);
    /* The last line, without its newline, whose JSON ends too early (the
     * parser stopped at its end): cut by a full disk or a killed writer; the
     * records before it stand. Any other broken line is an error. */
    if (!line && !whole && added > 0 && (size_t)jerr.position >= k - start) {
      if (!r->torn_note[0])
        snprintf(r->torn_note, sizeof r->torn_note,
                 "%s:%zu: the last line is cut (%zd bytes, no newline, not a whole record): "
                 "skipped; the records before it are read", source, lineno, len);
      break;
    }
    if (!line) {
      rc = tm_errf(err, "%s:%zu: not JSON (column %d: %s)", source, lineno, jerr.column + (int)start,
                   jerr.text);
      break;
    }
    if (!json_is_object(line)) {
      json_decref(line);
      rc = tm_errf(err, "%s:%zu: not a tokmeter record (a JSON object per line expected)",
                   source, lineno);
      break;
    }
    if (add_record(r, line, source, lineno, err)) {
      rc = -1;
      break;
    }
    added++;
  }
  if (!rc && ferror(f)) rc = tm_errf(err, "%s: read error: %s", source, strerror(errno));
  free(buf);
  return rc;
}

int results_load(const char *const *paths, size_t n_paths, struct results *out,
                 struct tm_err *err) {
  memset(out, 0, sizeof *out);
  out->sources = calloc(n_paths ? n_paths : 1, sizeof *out->sources);
  out->n_lines_by_source = calloc(n_paths ? n_paths : 1, sizeof *out->n_lines_by_source);
  if (!out->sources || !out->n_lines_by_source) {
    results_free(out);
    return tm_errf(err, "out of memory");
  }
  for (size_t i = 0; i < n_paths; i++) {
    out->sources[i] = strdup(paths[i]);
    if (!out->sources[i]) {
      results_free(out);
      return tm_errf(err, "out of memory");
    }
    out->n_sources++;
    const char *source = out->sources[i];
    bool is_stdin = !strcmp(source, "-");
    FILE *f = is_stdin ? stdin : fopen(source, "r");
    if (!f) {
      tm_errf(err, "%s: cannot open: %s", source, strerror(errno));
      results_free(out);
      return -1;
    }
    int rc = load_stream(out, f, is_stdin ? "(stdin)" : source, err);
    if (!is_stdin) fclose(f);
    if (rc) {
      results_free(out);
      return -1;
    }
  }
  /* Every run, summary and end names an identity line of the files given
   * (docs/records.md: they carry the identity's id). tokmeter writes the
   * identity first, so only an edited, mixed-up or head-cut file fails here;
   * a file continuing an invocation begun in an earlier file given passes. */
  for (size_t i = 0; i < out->n_inv; i++) {
    const struct results_invocation *g = &out->inv[i];
    if (g->identity) continue;
    tm_errf(err, "%s:%zu: identity %s names no identity line in %s", g->source, g->line, g->id,
            n_paths == 1 ? "this file" : "the files given");
    results_free(out);
    return -1;
  }
  return 0;
}

void results_free(struct results *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_inv; i++) {
    struct results_invocation *g = &r->inv[i];
    if (g->identity) json_decref(g->identity);
    for (size_t j = 0; j < g->n_runs; j++) json_decref(g->runs[j]);
    for (size_t j = 0; j < g->n_summaries; j++) json_decref(g->summaries[j]);
    for (size_t j = 0; j < g->n_loads; j++) json_decref(g->loads[j]);
    for (size_t j = 0; j < g->n_requests; j++) json_decref(g->requests[j]);
    free(g->requests);
    if (g->end) json_decref(g->end);
    free(g->runs);
    free(g->summaries);
    free(g->loads);
  }
  free(r->inv);
  for (size_t i = 0; i < r->n_sources; i++) free(r->sources[i]);
  free(r->sources);
  free(r->n_lines_by_source);
  memset(r, 0, sizeof *r);
}

json_t *json_path(json_t *obj, const char *dotted) { return record_get_path(obj, dotted); }

double json_path_num(json_t *obj, const char *dotted) {
  json_t *v = json_path(obj, dotted);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *json_path_str(json_t *obj, const char *dotted) {
  return json_string_value(json_path(obj, dotted));
}

long long json_path_int(json_t *obj, const char *dotted, long long def) {
  json_t *v = json_path(obj, dotted);
  return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}
