/* test_compare_files: compare_files_load on files written here: two sides
 * with a configuration in common are compared; a missing file, a file with
 * no timed successful run, and two files with nothing in common are refused
 * with the message the command prints, never as out of memory. */
#include <stdio.h>
#include <string.h>

#include "analysis/compare_files.h"
#include "tm_test.h"

/* A results file: an identity, then n timed tg32 decode runs at 2 threads of
 * model `model` (warmup: every run flagged as a warm-up instead). */
static const char *write_side(const char *name, const char *model, int n, bool warmup) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fprintf(f, "{\"record\":\"identity\",\"schema\":1,\"id\":\"%s\",\"backend\":\"engine\"}\n", name);
  for (int i = 0; i < n; i++) {
    double ms = 800 + 10 * i;
    fprintf(f,
            "{\"record\":\"run\",\"schema\":1,\"identity\":\"%s\",\"backend\":\"engine\","
            "\"target\":\"in-process\",\"model\":{\"name\":\"%s\",\"type\":\"Q8_0\"},"
            "\"test\":\"tg32\",\"phase\":\"decode\",\"threads\":2,\"depth\":0,\"index\":%d,"
            "\"warmup\":%s,\"ok\":true,\"tokens\":32,\"ms\":%g,\"rate_tok_s\":%.9g}\n",
            name, model, i, warmup ? "true" : "false", ms, 32 / (ms / 1000));
  }
  fclose(f);
  return path;
}

static void compares_two_files_or_says_why_not(void) {
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_files cf;
  struct tm_err err = {{0}};
  bool oom = true;
  const char *a = write_side("a.jsonl", "m.gguf", 3, false);
  const char *b = write_side("b.jsonl", "m.gguf", 3, false);
  CHECK(a && b);
  if (!a || !b) return;
  CHECK_EQ_INT(compare_files_load(a, b, &o, &cf, &oom, &err), 0);
  CHECK(!oom);
  CHECK(cf.cr.n >= 1);
  CHECK(cf.cr.n >= 1 && cf.cr.rows[0].sa.n == 3);
  compare_files_free(&cf);

  /* A missing file: series_file_load's message */
  const char *missing = tm_tmpfile("missing.jsonl");
  oom = true;
  CHECK_EQ_INT(compare_files_load(a, missing, &o, &cf, &oom, &err), -1);
  CHECK(!oom);
  CHECK_CONTAINS(err.msg, missing);

  /* Only warm-ups: nothing timed */
  const char *warm = write_side("warm.jsonl", "m.gguf", 2, true);
  char want[600];
  snprintf(want, sizeof want, "no timed successful runs in %s", warm);
  oom = true;
  CHECK_EQ_INT(compare_files_load(warm, b, &o, &cf, &oom, &err), -1);
  CHECK(!oom);
  CHECK_STR(err.msg, want);
  CHECK_EQ_INT(compare_files_load(a, warm, &o, &cf, &oom, &err), -1);
  CHECK_STR(err.msg, want);

  /* No configuration in common: another test on one side */
  const char *other = tm_tmpfile("other.jsonl");
  FILE *f = fopen(other, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs("{\"record\":\"identity\",\"schema\":1,\"id\":\"C\",\"backend\":\"engine\"}\n", f);
  for (int i = 0; i < 2; i++)
    fprintf(f,
            "{\"record\":\"run\",\"schema\":1,\"identity\":\"C\",\"backend\":\"engine\","
            "\"target\":\"in-process\",\"model\":{\"name\":\"m.gguf\",\"type\":\"Q8_0\"},"
            "\"test\":\"pp512\",\"phase\":\"prefill\",\"threads\":4,\"depth\":0,\"index\":%d,"
            "\"warmup\":false,\"ok\":true,\"tokens\":512,\"ms\":1000,\"rate_tok_s\":512}\n",
            i);
  fclose(f);
  snprintf(want, sizeof want,
           "nothing to compare: no configuration of %s matches one of %s (same test, threads "
           "and depth, or the same workload)", a, other);
  oom = true;
  CHECK_EQ_INT(compare_files_load(a, other, &o, &cf, &oom, &err), -1);
  CHECK(!oom);
  CHECK_STR(err.msg, want);
}

void tm_run_tests(void) { TM_RUN(compares_two_files_or_says_why_not); }
