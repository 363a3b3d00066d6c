/* test_import_probe: import_cached_probe in the test's own cache directory:
 * none cached, a quick probe (refused unless TOKMETER_PROBE_QUICK=1), a full
 * one (used), and a corrupt cache file (refused, the load error named). Uses
 * one quick probe of this machine, altered by hand. */
#include <stdio.h>
#include <stdlib.h>

#include "import/import_probe.h"
#include "machine/probe.h"
#include "tm_test.h"

static struct machine_probe probe_q, probe_got; /* large: not on the stack */

static void chooses_the_cached_probe(void) {
  struct machine_probe *q = &probe_q, *got = &probe_got;
  unsetenv("TOKMETER_PROBE_QUICK");
  struct tm_err err = {{0}}, why = {{0}};
  CHECK_EQ_INT(import_cached_probe(got, &why), -1); /* nothing cached */
  CHECK_STR(why.msg, "no cached probe of this machine: ceilings without a given figure stay "
                     "blank (run 'tokmeter probe', or give --bandwidth / --compute)");

  struct probe_options o = {1, true}; /* quick, one thread: a moment */
  int rc = probe_run_opts(q, &o, NULL, NULL, &err);
  CHECK_MSG(rc == 0, "probe_run_opts: %s", err.msg);
  if (rc != 0) return;
  CHECK_EQ_INT(probe_save_cached(q, &err), 0);
  CHECK_EQ_INT(import_cached_probe(got, &why), -1); /* quick: not memory bandwidth */
  CHECK_STR(why.msg, "the cached probe is a quick one (not memory bandwidth): not used; run "
                     "'tokmeter probe' or give --bandwidth");
  setenv("TOKMETER_PROBE_QUICK", "1", 1); /* asked for: accepted */
  CHECK_EQ_INT(import_cached_probe(got, &why), 0);
  CHECK(got->quick);
  unsetenv("TOKMETER_PROBE_QUICK");

  q->quick = false; /* a full probe is used */
  CHECK_EQ_INT(probe_save_cached(q, &err), 0);
  CHECK_EQ_INT(import_cached_probe(got, &why), 0);
  CHECK(!got->quick);
  CHECK_EQ_INT(got->max_threads, q->max_threads);

  char path[4200];
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs("{not json", f);
    fclose(f);
    CHECK_EQ_INT(import_cached_probe(got, &why), -1);
    CHECK_CONTAINS(why.msg, "corrupt probe cache");
    size_t n = strlen(why.msg);
    CHECK(n > 10 && strcmp(why.msg + n - 10, ": not used") == 0);
  }
}

void tm_run_tests(void) { TM_RUN(chooses_the_cached_probe); }
