/* load_internal: what load.c and its helpers share (not a public API).
 *
 *   load.c           the run: requests on the pool, levels, the capacity
 *                    search, the server's counters, the ceiling, records
 *   load_stats.c     SLO parsing
 *   load_json.c      a level as its "load" record
 *   load_findings.c  the levels' findings and the knee
 *   load_engine.c    the in-process load (the engine's batched decode) */
#ifndef TM_BENCH_LOAD_INTERNAL_H
#define TM_BENCH_LOAD_INTERNAL_H

#include <jansson.h>

#include "bench/load.h"

struct server_info;
/* s->err from the format (the API key redacted, control characters out);
 * returns status. */
int load_fail(struct load_state *s, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* s->unix_offset: the wall clock minus the monotonic clock, now. */
void load_read_unix_offset(struct load_state *s);
/* Opens the results file with the invocation's identity: settings (taken,
 * freed here), the server (NULL in process), the model's name, the backend
 * ("openai"..., "engine") and the target (the URL, "in-process"). 0, or
 * load_fail's status. */
int load_session_open(struct load_state *s, json_t *settings, const struct server_info *si,
                      const char *model_name, const char *backend, const char *target);

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
/* -m (always in process): the aggregate decode ceiling at the level's batch
 * and mean depth, the measured share of it. */
void load_level_ceiling(struct load_state *s, struct load_level *lv);
/* The batch_turn finding: where the decode step turns compute bound. */
void load_batch_turn_finding(struct load_state *s);
/* The model's cost and this machine's rates (s->cost, s->rates,
 * s->batch_turn, s->have_model) from o->gguf and the probe. */
int load_model_ceiling_setup(struct load_state *s, struct tm_err *err);

#endif
