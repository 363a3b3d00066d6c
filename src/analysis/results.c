/* results: JSON Lines results files -> invocations (see results.h). */
#include "analysis/results.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(json_t ***arr, size_t *n, json_t *v) {
  json_t **grown = realloc(*arr, (*n + 1) * sizeof **arr);
  if (!grown) return -1;
  grown[(*n)++] = v;
  *arr = grown;
  return 0;
}

static struct results_invocation *group_for(struct results *r, const char *id,
                                            const char *source) {
  for (size_t i = 0; i < r->n_inv; i++)
    if (!strcmp(r->inv[i].id, id)) return &r->inv[i];
  struct results_invocation *grown = realloc(r->inv, (r->n_inv + 1) * sizeof *grown);
  if (!grown) return NULL;
  r->inv = grown;
  struct results_invocation *g = &r->inv[r->n_inv++];
  memset(g, 0, sizeof *g);
  snprintf(g->id, sizeof g->id, "%s", id);
  g->source = source;
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
  r->n_lines++;
  bool is_identity = !strcmp(kind, "identity");
  bool known = is_identity || !strcmp(kind, "run") || !strcmp(kind, "summary") ||
               !strcmp(kind, "end");
  if (!known) {
    json_decref(line);
    return 0;
  }
  const char *id = json_string_value(json_object_get(line, is_identity ? "id" : "identity"));
  struct results_invocation *g = group_for(r, id ? id : "", source);
  if (!g) goto oom;
  if (is_identity) {
    if (g->identity) {
      json_decref(line);
      return tm_errf(err, "%s:%zu: identity %s appears twice", source, lineno, g->id);
    }
    g->identity = line;
  } else if (!strcmp(kind, "run")) {
    if (push(&g->runs, &g->n_runs, line)) goto oom;
  } else if (!strcmp(kind, "summary")) {
    if (push(&g->summaries, &g->n_summaries, line)) goto oom;
  } else {
    if (g->end) json_decref(g->end);
    g->end = line;
  }
  return 0;
oom:
  json_decref(line);
  return tm_errf(err, "%s:%zu: out of memory", source, lineno);
}

static int load_stream(struct results *r, FILE *f, const char *source, struct tm_err *err) {
  char *buf = NULL;
  size_t cap = 0;
  ssize_t len;
  size_t lineno = 0;
  int rc = 0;
  while ((len = getline(&buf, &cap, f)) >= 0) {
    lineno++;
    size_t k = (size_t)len;
    while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == '\r' || buf[k - 1] == ' ' ||
                     buf[k - 1] == '\t'))
      buf[--k] = '\0';
    size_t start = 0;
    while (start < k && (buf[start] == ' ' || buf[start] == '\t')) start++;
    if (start == k) continue;
    json_error_t jerr;
    json_t *line = json_loadb(buf + start, k - start, JSON_REJECT_DUPLICATES, &jerr);
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
  }
  if (!rc && ferror(f)) rc = tm_errf(err, "%s: read error: %s", source, strerror(errno));
  free(buf);
  return rc;
}

int results_load(const char *const *paths, size_t n_paths, struct results *out,
                 struct tm_err *err) {
  memset(out, 0, sizeof *out);
  out->sources = calloc(n_paths ? n_paths : 1, sizeof *out->sources);
  if (!out->sources) return tm_errf(err, "out of memory");
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
  return 0;
}

void results_free(struct results *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_inv; i++) {
    struct results_invocation *g = &r->inv[i];
    if (g->identity) json_decref(g->identity);
    for (size_t j = 0; j < g->n_runs; j++) json_decref(g->runs[j]);
    for (size_t j = 0; j < g->n_summaries; j++) json_decref(g->summaries[j]);
    if (g->end) json_decref(g->end);
    free(g->runs);
    free(g->summaries);
  }
  free(r->inv);
  for (size_t i = 0; i < r->n_sources; i++) free(r->sources[i]);
  free(r->sources);
  memset(r, 0, sizeof *r);
}

json_t *json_path(json_t *obj, const char *dotted) {
  char part[128];
  const char *p = dotted;
  json_t *cur = obj;
  while (cur && *p) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (len >= sizeof part) return NULL;
    memcpy(part, p, len);
    part[len] = '\0';
    cur = json_is_object(cur) ? json_object_get(cur, part) : NULL;
    p = dot ? dot + 1 : p + len;
  }
  return cur;
}

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
