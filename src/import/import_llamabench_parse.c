/* import_llamabench_parse: reading llama-bench's output for the importer
 * (import_llamabench_internal.h says how it is split): the JSON array (or
 * object) or JSONL lines into a list of objects, each checked into a test
 * entry (every field type-checked, errors naming the entry and the field),
 * and model_type's "<arch> <size> <file type>" into arch and type. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_llamabench.h"
#include "import/import_llamabench_internal.h"

/* The shortest time a sample may have: the records keep milliseconds to
 * three decimals. */
#define IMPORT_MIN_SAMPLE_NS 1000.0

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

int import_lb_check_entry(json_t *o, struct lb_entry *e, struct tm_err *err) {
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
    if (json_number_value(a) < IMPORT_MIN_SAMPLE_NS)
      return tm_errf(err, "%s: avg_ns is %g ns: under a microsecond, not the time of a test", w,
                     json_number_value(a));
    e->n_samples = 1;
    e->avg_only = true;
    e->ns = malloc(sizeof *e->ns);
    if (!e->ns) return tm_errf(err, "out of memory");
    e->ns[0] = json_number_value(a);
  }
  if (check_reported(o, e, err) != 0) return -1;
  /* the records keep times to the microsecond: a shorter one would read as
   * 0 ms, which no test takes (and the results reader refuses) */
  for (size_t i = 0; !e->avg_only && i < e->n_samples; i++)
    if (e->ns[i] < IMPORT_MIN_SAMPLE_NS)
      return tm_errf(err, "%s: samples_ns[%zu] is %g ns: under a microsecond, not the time of a "
                          "test", w, i, e->ns[i]);
  return 0;
}

/* The input as a list of objects (borrowed from *root, which the caller
 * frees). JSON: an array (or one object); JSONL: one object per line. */
int import_lb_parse_input(const char *text, size_t len, json_t **root, json_t **items,
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

