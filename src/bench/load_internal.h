/* load_internal: what load.c and its helpers share (not a public API).
 *
 *   load.c           the run: requests on the pool, levels, the capacity
 *                    search, the server's counters, the ceiling, records
 *   load_stats.c     SLO parsing
 *   load_json.c      a level as its "load" record
 *   load_findings.c  the levels' findings and the knee */
#ifndef TM_BENCH_LOAD_INTERNAL_H
#define TM_BENCH_LOAD_INTERNAL_H

#include <jansson.h>

#include "bench/load.h"

/* A stream's mean depth, prompt + output / 2 (over the -w mix). */
double load_mean_depth(const struct load_opts *o);

json_t *load_level_json(const struct load_state *s, const struct load_level *lv);

/* "c=4" or "rate=2/s". */
void load_level_name(const struct load_level *lv, char *buf, size_t n);
/* A finding of one level (config.test = where). */
struct bench_finding *load_level_finding(struct load_state *s, const char *code,
                                         enum bench_severity sev, const char *where);
void load_level_findings(struct load_state *s, const struct load_level *lv);
void load_knee_finding(struct load_state *s);

#endif
