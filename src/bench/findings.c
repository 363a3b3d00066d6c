/* findings: see findings.h. */
#include "bench/findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/keys.h"
#include "record/record.h"

const char *bench_severity_name(enum bench_severity s) {
  switch (s) {
  case BENCH_PROBLEM: return "problem";
  case BENCH_WARNING: return "warning";
  default: return "info";
  }
}

struct bench_finding *bench_findings_add(struct bench_findings *l, const char *code,
                                         enum bench_severity severity) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    struct bench_finding *v = realloc(l->v, cap * sizeof *v);
    if (!v) return NULL;
    l->v = v;
    l->cap = cap;
  }
  struct bench_finding *f = &l->v[l->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->code, sizeof f->code, "%s", code);
  f->severity = severity;
  f->config.depth = -1;
  return f;
}

void bench_finding_figure(struct bench_finding *f, const char *name, double value) {
  if (!f || f->n_figures >= BENCH_FINDING_MAX_FIGURES) return;
  struct bench_figure *g = &f->figures[f->n_figures++];
  snprintf(g->name, sizeof g->name, "%s", name);
  g->value = value;
}

/* Cuts s to at most max bytes without splitting a UTF-8 character. */
static void cut_utf8(char *s, size_t max) {
  size_t n = strlen(s);
  if (n <= max) return;
  while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
  s[max] = '\0';
}

void bench_finding_brief(struct bench_finding *f, const char *fmt, ...) {
  if (!f) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  cut_utf8(buf, BENCH_FINDING_BRIEF_MAX);
  snprintf(f->brief, sizeof f->brief, "%s", buf);
}

void bench_finding_text(struct bench_finding *f, const char *fmt, ...) {
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->text, sizeof f->text, fmt, ap);
  va_end(ap);
}

double bench_finding_get(const struct bench_finding *f, const char *name) {
  for (size_t i = 0; f && i < f->n_figures; i++)
    if (strcmp(f->figures[i].name, name) == 0) return f->figures[i].value;
  return NAN;
}

const struct bench_finding *bench_findings_find(const struct bench_findings *l, const char *code,
                                                const char *model) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i].code, code) == 0 && (!model || strcmp(l->v[i].config.model, model) == 0))
      return &l->v[i];
  return NULL;
}

/* a before b on the screen */
static int before(const struct bench_finding *a, const struct bench_finding *b) {
  if (a->severity != b->severity) return a->severity > b->severity;
  return a->importance > b->importance;
}

void bench_findings_order(const struct bench_findings *l, size_t *out) {
  for (size_t i = 0; i < l->n; i++) out[i] = i;
  for (size_t i = 1; i < l->n; i++) { /* insertion sort: stable, lists are short */
    size_t v = out[i], j = i;
    for (; j > 0 && before(&l->v[v], &l->v[out[j - 1]]); j--) out[j] = out[j - 1];
    out[j] = v;
  }
}

static json_t *config_json(const struct bench_finding_config *c) {
  if (!c->model[0] && !c->test[0] && !c->threads && c->depth < 0 && !c->workload[0])
    return json_null();
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "model", c->model[0] ? json_string(c->model) : json_null());
  json_object_set_new(o, "test", c->test[0] ? json_string(c->test) : json_null());
  json_object_set_new(o, "threads", c->threads ? json_integer(c->threads) : json_null());
  json_object_set_new(o, "depth", c->depth >= 0 ? json_integer(c->depth) : json_null());
  json_object_set_new(o, "workload", c->workload[0] ? json_string(c->workload) : json_null());
  return o;
}

json_t *bench_finding_json(const struct bench_finding *f) {
  json_t *figs = json_object();
  if (!figs) return NULL;
  for (size_t i = 0; i < f->n_figures; i++)
    json_object_set_new(figs, f->figures[i].name, record_json_num(f->figures[i].value));
  return json_pack("{s:s, s:s, s:o*, s:o, s:s, s:s}", record_key(RK_FINDING_CODE), f->code,
                   record_key(RK_FINDING_SEVERITY), bench_severity_name(f->severity),
                   record_key(RK_FINDING_CONFIG), config_json(&f->config),
                   record_key(RK_FINDING_FIGURES), figs, record_key(RK_FINDING_BRIEF), f->brief,
                   record_key(RK_FINDING_TEXT), f->text);
}

json_t *bench_findings_json(const struct bench_findings *l) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < l->n; i++) {
    json_t *o = bench_finding_json(&l->v[i]);
    if (!o || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

void bench_findings_free(struct bench_findings *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}
