/* test_answers: the checked answers of a results file tallied per
 * configuration (timed, successful runs only), and the Fisher exact test
 * on textbook tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/answers.h"
#include "tm_test.h"

static void test_fisher(void) {
  CHECK_NEAR(answers_fisher_p(3, 3, 0, 3), 0.1, 1e-12);       /* 2 / C(6,3) */
  CHECK_NEAR(answers_fisher_p(4, 4, 0, 4), 2.0 / 70, 1e-12);  /* 2 / C(8,4) */
  CHECK_NEAR(answers_fisher_p(3, 4, 1, 4), 34.0 / 70, 1e-12); /* the tea-tasting table */
  CHECK_NEAR(answers_fisher_p(1, 2, 1, 2), 1.0, 1e-12);
  CHECK_NEAR(answers_fisher_p(23, 24, 23, 24), 1.0, 1e-12);
  CHECK(answers_fisher_p(24, 24, 12, 24) < 0.001);
  CHECK_NEAR(answers_fisher_p(0, 0, 3, 5), 1.0, 0);
  CHECK_NEAR(answers_fisher_p(5, 3, 1, 3), 1.0, 0); /* impossible counts: no test */
}

static void test_tally(void) {
  char path[] = "/tmp/tm_answers_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  const char *ident = "{\"record\":\"identity\",\"schema\":1,\"id\":\"i1\",\"time\":\"t\","
                      "\"backend\":\"openai\",\"target\":\"http://h:1\",\"model\":{\"name\":\"m\"}}";
  fprintf(f, "%s\n", ident);
  const char *fmt = "{\"record\":\"run\",\"schema\":1,\"identity\":\"i1\",\"time\":\"t\","
                    "\"workload\":\"%s\",\"warmup\":%s,\"calibration\":false,\"ok\":%s,"
                    "\"backend\":\"openai\",\"target\":\"http://h:1\",\"model\":\"m\","
                    "\"settings\":{\"job\":true}%s}\n";
  const char *correct = ",\"answer\":{\"verdict\":\"correct\"}";
  const char *wrong = ",\"answer\":{\"verdict\":\"wrong\"}";
  const char *none = ",\"answer\":{\"verdict\":\"no_answer\"}";
  fprintf(f, fmt, "panel", "true", "true", correct);  /* warm-up: not counted */
  fprintf(f, fmt, "panel", "false", "true", correct);
  fprintf(f, fmt, "panel", "false", "true", wrong);
  fprintf(f, fmt, "panel", "false", "true", none);
  fprintf(f, fmt, "panel", "false", "false", "");     /* failed: no answer */
  fprintf(f, fmt, "story", "false", "true", "");      /* no expect */
  fclose(f);
  struct results r;
  struct tm_err err = {{0}};
  const char *paths[] = {path};
  CHECK_MSG(results_load(paths, 1, &r, &err) == 0, "%s", err.msg);
  struct answer_tallies t;
  CHECK_EQ_INT(answer_tallies_of(&r, &t), 0);
  CHECK_EQ_U64(t.n, 1);
  const struct answer_tally *a = answer_tally_find(&t, "openai | http://h:1 | m | panel");
  CHECK(a != NULL);
  if (a) {
    CHECK_EQ_INT(a->correct, 1);
    CHECK_EQ_INT(a->wrong, 1);
    CHECK_EQ_INT(a->no_answer, 1);
  }
  CHECK(answer_tally_find(&t, "openai | http://h:1 | m | story") == NULL);
  answer_tallies_free(&t);
  results_free(&r);
  unlink(path);
}

void tm_run_tests(void) {
  TM_RUN(test_fisher);
  TM_RUN(test_tally);
}
