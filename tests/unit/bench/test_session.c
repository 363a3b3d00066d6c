/* Tests for src/bench/session.c: the records lifecycle every bench path
 * shares: the identity line first, each record tied to it, the end line with
 * the findings, lines counted, a record that cannot be built counted as a
 * failure, and a path that is no results file refused before anything. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/session.h"
#include "tm_test.h"

static void test_lifecycle(void) {
  char path[] = "/tmp/tm_session_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  struct bench_session s;
  struct tm_err err = {{0}};
  struct record_identity_in in = {.tokmeter_version = "test", .backend = "engine",
                                  .target = "in-process", .command = "tokmeter bench"};
  CHECK_EQ_INT(bench_session_open(&s, path, &in, &err), 0);
  CHECK(strlen(s.identity) > 0);
  json_t *run = json_pack("{s:s, s:s}", "record", "run", "identity", s.identity);
  CHECK_EQ_INT(bench_session_write(&s, run), 0);
  CHECK_EQ_INT(bench_session_write(&s, NULL), -1); /* not built: counted */
  CHECK_EQ_U64(s.write_failures, 1);
  struct bench_findings f = {0};
  struct bench_finding *x = bench_findings_add(&f, "steal", BENCH_WARNING);
  bench_finding_brief(x, "steal");
  bench_session_end(&s, 1, NULL, false, 0.02, &f);
  bench_findings_free(&f);
  CHECK(s.file == NULL);
  CHECK_EQ_U64(s.lines, 3);
  /* the file: identity, run, end (with the findings), in that order */
  FILE *in_f = fopen(path, "r");
  char line[8192];
  const char *want[] = {"identity", "run", "end"};
  size_t n = 0;
  while (in_f && fgets(line, sizeof line, in_f)) {
    json_t *j = json_loads(line, 0, NULL);
    CHECK(j != NULL);
    if (n < 3) CHECK_STR(json_string_value(json_object_get(j, "record")), want[n]);
    if (n == 2) {
      CHECK_STR(json_string_value(json_object_get(j, "identity")), s.identity);
      json_t *fs = json_object_get(j, "findings");
      CHECK(json_array_size(fs) == 1);
      CHECK_STR(json_string_value(json_object_get(json_array_get(fs, 0), "code")), "steal");
    }
    json_decref(j);
    n++;
  }
  if (in_f) fclose(in_f);
  CHECK_EQ_INT(n, 3);
  /* ending twice, or a session never opened, writes nothing */
  bench_session_end(&s, 0, NULL, false, 0, NULL);
  unlink(path);
}

static void test_refused_path(void) {
  struct bench_session s;
  struct tm_err err = {{0}};
  struct record_identity_in in = {.tokmeter_version = "test"};
  /* a directory that does not exist: the file cannot be opened (-1) */
  CHECK_EQ_INT(bench_session_open(&s, "/nonexistent-dir/r.jsonl", &in, &err), -1);
  CHECK(err.msg[0] != 0);
  CHECK(s.file == NULL);
  bench_session_end(&s, 0, NULL, false, 0, NULL);
  CHECK_EQ_INT(bench_session_write(&s, json_object()), -1);
}

void tm_run_tests(void) {
  TM_RUN(test_lifecycle);
  TM_RUN(test_refused_path);
}
