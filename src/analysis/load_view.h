/* load_view: the load runs in a set of results, as report and compare read
 * them: each `tokmeter load` invocation on its own, and the shards of one
 * run (settings.shard.run, docs/load.md "Beyond one machine") merged into
 * one run without being asked.
 *
 * Merging: every shard 0..N-1 must be present once, with the same settings
 * (all but settings.shard and settings.clock) and the same levels; level k
 * of each shard must have begun and ended within MERGE_WINDOW_TOL_S (or 1%
 * of the window) of shard 0's. A run that fails a check is refused with the
 * reason (view->refused), never shown as a partial sum; levels after one
 * whose windows differ are refused, the earlier kept. A merged level is
 * computed again from the shards' pooled request samples over the common
 * window (the latest start to the earliest end) by stats/load_window.h,
 * the computation each shard ran on its own share, so throughputs add and
 * percentiles come from the merged samples; the server's counters are held
 * against the shards' summed requests (earliest read before, latest after);
 * the ceiling is shard 0's (the whole level's), the share of it recomputed.
 * A merged level is a "load" record (docs/records.md) with "shards": N.
 *
 * Each level also keeps its samples (the request records' "load" objects;
 * none for records of a version that wrote no samples), for compare's
 * intervals. */
#ifndef TM_ANALYSIS_LOAD_VIEW_H
#define TM_ANALYSIS_LOAD_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "analysis/results.h"
#include "stats/load_window.h"
#include "util/err.h"

#define MERGE_WINDOW_TOL_S 0.05

struct load_view_level {
  json_t *record;               /* the level record (owned reference) */
  struct load_sample *samples;  /* its requests (chunk_t owned) */
  size_t n_samples;
  double w0, w1;                /* the window, unix seconds */
  bool open_loop;
};

struct load_view {
  char title[160];              /* the target, and "N shards, run X" */
  const struct results_invocation *inv; /* the invocation (shard 0's when merged) */
  char run_id[20];              /* "" for one process */
  unsigned shards;              /* 1 for one process */
  struct load_view_level *levels;
  size_t n_levels;
  long knee;                    /* the knee's level index (load_knee_index), -1 none */
  char refused[400];            /* why the run could not be merged (levels empty), or
                                   why levels after the last were refused; "" */
};

struct load_views {
  struct load_view *v;
  size_t n;
};

/* Every load run in r, in the order their first invocation appears. 0, or
 * -1 with err (out of memory, or a request sample that no longer parses). */
int load_views_build(const struct results *r, struct load_views *out, struct tm_err *err);
void load_views_free(struct load_views *v);

#endif
