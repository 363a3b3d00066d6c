/* findings: what a bench concludes, as data. A finding is a stable code
 * ("decode_below_practical", "bandwidth_moved", "steal", ...; the list and
 * each one's meaning are in docs/records.md), a severity, the configuration
 * it concerns, the named figures it rests on (units in the names:
 * "read_bandwidth_bytes_s", "percent_of_ceiling"), a one-line brief (at most
 * BENCH_FINDING_BRIEF_MAX characters, for the terminal) and the whole
 * sentence (--verbose, --json's "conclusions", the report). Every renderer
 * (terminal, --json, records) reads the same list; the thresholds that draw
 * them live beside their producers in src/bench and are unit-tested there.
 * Pure data: nothing printed. */
#ifndef TM_BENCH_FINDINGS_H
#define TM_BENCH_FINDINGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum bench_severity { BENCH_INFO = 0, BENCH_WARNING, BENCH_PROBLEM };

#define BENCH_FINDING_MAX_FIGURES 8
#define BENCH_FINDING_BRIEF_MAX 90 /* + the severity: a line of at most 98 */

struct bench_figure {
  char name[48];
  double value; /* NAN is written as null */
};

/* The configuration a finding concerns; a field left empty (0, "") is one the
 * finding does not depend on (null in JSON), e.g. a model comparison has no
 * model, a steal finding no test. */
struct bench_finding_config {
  char model[160];
  char test[32];     /* "pp512", "tg128"; a server workload's name in workload */
  uint32_t threads;  /* 0: any */
  int64_t depth;     /* -1: any */
  char workload[32];
};

struct bench_finding {
  char code[40];
  enum bench_severity severity;
  int importance; /* within a severity, higher first on a short screen (0 default) */
  struct bench_finding_config config;
  struct bench_figure figures[BENCH_FINDING_MAX_FIGURES];
  size_t n_figures;
  char brief[BENCH_FINDING_BRIEF_MAX + 1];
  char text[1024];
};

struct bench_findings {
  struct bench_finding *v;
  size_t n, cap;
};

/* "info", "warning", "problem". */
const char *bench_severity_name(enum bench_severity s);

/* Appends a finding with the code and severity, its config "any" (depth -1);
 * NULL when out of memory. The pointer is valid until the next add. */
struct bench_finding *bench_findings_add(struct bench_findings *l, const char *code,
                                         enum bench_severity severity);
/* Adds a named figure (ignored past BENCH_FINDING_MAX_FIGURES). */
void bench_finding_figure(struct bench_finding *f, const char *name, double value);
/* The brief and the text, printf-style; the brief is cut at
 * BENCH_FINDING_BRIEF_MAX characters (on a character boundary) if longer. */
void bench_finding_brief(struct bench_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_finding_text(struct bench_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The value of a named figure; NAN when absent. */
double bench_finding_get(const struct bench_finding *f, const char *name);
/* The first finding with this code (and, when model is not NULL, this
 * config.model); NULL when none. */
const struct bench_finding *bench_findings_find(const struct bench_findings *l, const char *code,
                                                const char *model);

/* Indices into l->v, most important first: problems, then warnings, then
 * information, each by importance, then in the order drawn. out must hold
 * l->n entries. */
void bench_findings_order(const struct bench_findings *l, size_t *out);

/* {"code", "severity", "config": {...}|null, "figures": {...}, "brief",
 * "text"}; NULL when out of memory. */
json_t *bench_finding_json(const struct bench_finding *f);
/* The list as a JSON array (in the order drawn); NULL when out of memory. */
json_t *bench_findings_json(const struct bench_findings *l);

void bench_findings_free(struct bench_findings *l);

#endif
