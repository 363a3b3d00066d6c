/* test_probe_keep: probe_save_unless_fuller in the test's own cache
 * directory: saved when nothing is cached, a fuller cache kept and described
 * (a full one against a quick probe, more thread counts against fewer), and
 * a fuller probe replacing the cache. Uses one quick probe, altered by hand. */
#include <stdlib.h>
#include <string.h>

#include "machine/probe.h"
#include "machine/probe_keep.h"
#include "tm_test.h"

static void keeps_the_fuller_cache(void) {
  struct machine_probe *q = malloc(sizeof *q), *got = malloc(sizeof *got);
  CHECK(q && got);
  if (!q || !got) {
    free(q);
    free(got);
    return;
  }
  struct probe_options o = {1, true}; /* quick, one thread: a moment */
  struct tm_err err = {{0}};
  int rc = probe_run_opts(q, &o, NULL, NULL, &err);
  CHECK_MSG(rc == 0, "probe_run_opts: %s", err.msg);
  if (rc != 0) {
    free(q);
    free(got);
    return;
  }
  struct probe_kept kept;
  /* nothing cached: saved */
  CHECK_EQ_INT(probe_load_cached(got, &err), 0);
  CHECK_EQ_INT(probe_save_unless_fuller(q, &kept, &err), 0);
  CHECK_EQ_INT(probe_load_cached(got, &err), 1);
  CHECK(got->quick);

  /* a full probe cached: a quick one does not replace it */
  q->quick = false;
  snprintf(q->measured_at, sizeof q->measured_at, "2026-01-02T03:04:05Z");
  CHECK_EQ_INT(probe_save_unless_fuller(q, &kept, &err), 0); /* full replaces quick */
  q->quick = true;
  snprintf(q->measured_at, sizeof q->measured_at, "2026-02-02T00:00:00Z");
  CHECK_EQ_INT(probe_save_unless_fuller(q, &kept, &err), 1);
  CHECK_STR(kept.measured_at, "2026-01-02T03:04:05Z");
  CHECK(!kept.quick);
  CHECK_EQ_INT(kept.max_threads, 1);
  CHECK_EQ_INT(probe_load_cached(got, &err), 1);
  CHECK(!got->quick); /* the cache is untouched */
  CHECK_STR(got->measured_at, "2026-01-02T03:04:05Z");

  /* of a kind: the same thread counts replace (the newer wins) */
  q->quick = false;
  CHECK_EQ_INT(probe_save_unless_fuller(q, &kept, &err), 0);
  CHECK_EQ_INT(probe_load_cached(got, &err), 1);
  CHECK_STR(got->measured_at, "2026-02-02T00:00:00Z");
  free(q);
  free(got);
}

void tm_run_tests(void) { TM_RUN(keeps_the_fuller_cache); }
