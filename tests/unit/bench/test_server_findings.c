/* Tests for src/bench/server_findings.c: one server workload's findings from
 * a summary made by hand, each threshold on both sides: failed runs, a
 * buffered stream, cache hits (kept or left out), drift, steal (1%), decode
 * against the practical range (75%) and rates above their ceilings. */
#include <math.h>
#include <string.h>

#include "bench/server_findings.h"
#include "tm_test.h"

static void summary_make(struct bench_summary *s, double decode, double prefill) {
  memset(s, 0, sizeof *s);
  snprintf(s->workload, sizeof s->workload, "classify");
  s->n_runs = s->n_ok = 3;
  s->decode_headline.n = s->prefill_headline.n = 3;
  s->decode_headline.median = decode;
  s->prefill_headline.median = prefill;
}

static struct record_ceiling ceiling_make(double decode, double prefill) {
  struct record_ceiling c = record_ceiling_none();
  c.decode_ceiling_tok_s = decode;
  c.prefill_ceiling_tok_s = prefill;
  return c;
}

static size_t count(const struct bench_findings *l, const char *code) {
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) n += strcmp(l->v[i].code, code) == 0;
  return n;
}

static void test_clean_workload_has_none(void) {
  struct bench_summary s;
  summary_make(&s, 80, 500);
  struct record_ceiling c = ceiling_make(100, 1000); /* decode 80%, prefill 50% */
  struct bench_findings l = {0};
  bench_server_findings(&s, &c, 0.002, &l);
  CHECK_EQ_INT(l.n, 0);
  /* no model file: no ceiling findings whatever the rates */
  summary_make(&s, 1e6, 1e9);
  bench_server_findings(&s, NULL, NAN, &l);
  CHECK_EQ_INT(l.n, 0);
  bench_findings_free(&l);
}

/* One finding per plausibility rule broken, coded by the rule, a problem,
 * with the count and the first reason seen; none when no rule was broken. */
static void test_implausible_by_rule(void) {
  uint32_t n[RUN_CHECK_COUNT] = {0};
  char first[RUN_CHECK_COUNT][160] = {{0}};
  struct bench_findings l = {0};
  bench_implausible_findings("classify", n, (const char(*)[160])first, 4, &l);
  CHECK_EQ_INT(l.n, 0);
  n[RUN_CHECK_ABOVE_MAX_TOKENS] = 3;
  snprintf(first[RUN_CHECK_ABOVE_MAX_TOKENS], 160, "the server reports 100 generated tokens");
  n[RUN_CHECK_TIMER_BEYOND_CLOCK] = 1;
  snprintf(first[RUN_CHECK_TIMER_BEYOND_CLOCK], 160, "prompt time \x1b[31m5000 ms");
  bench_implausible_findings("classify", n, (const char(*)[160])first, 4, &l);
  CHECK_EQ_INT(l.n, 2);
  CHECK_EQ_INT(count(&l, "count_above_max_tokens"), 1);
  CHECK_EQ_INT(count(&l, "timer_beyond_clock"), 1);
  const struct bench_finding *f = &l.v[0];
  CHECK_STR(f->code, "count_above_max_tokens");
  CHECK_EQ_INT(f->severity, BENCH_PROBLEM);
  CHECK_STR(f->config.workload, "classify");
  CHECK(strstr(f->brief, "3 of 4 requests broke the count_above_max_tokens check") != NULL);
  CHECK(strstr(f->text, "the first: the server reports 100 generated tokens") != NULL);
  /* a server's bytes reach no terminal: the ESC is cleaned */
  CHECK(strchr(l.v[1].text, 0x1b) == NULL);
  bench_findings_free(&l);
}

static void test_decode_practical_and_above(void) {
  struct bench_summary s;
  struct bench_findings l = {0};
  summary_make(&s, 74, 500);
  struct record_ceiling c = ceiling_make(100, 1000);
  bench_server_findings(&s, &c, NAN, &l);
  const struct bench_finding *f = bench_findings_find(&l, "decode_below_practical", NULL);
  CHECK(f != NULL);
  if (f) {
    CHECK_EQ_INT(f->severity, BENCH_WARNING);
    CHECK_STR(f->config.workload, "classify");
    CHECK_NEAR(bench_finding_get(f, "decode_percent_of_ceiling"), 74, 1e-9);
  }
  bench_findings_free(&l);
  summary_make(&s, 75, 500); /* 75%: the range's floor, not below it */
  bench_server_findings(&s, &c, NAN, &l);
  CHECK_EQ_INT(count(&l, "decode_below_practical"), 0);
  bench_findings_free(&l);
  summary_make(&s, 101, 1100); /* both above */
  bench_server_findings(&s, &c, NAN, &l);
  CHECK_EQ_INT(count(&l, "above_ceiling"), 2);
  CHECK_EQ_INT(count(&l, "decode_below_practical"), 0);
  bench_findings_free(&l);
}

static void test_runs_stream_cache_drift_steal(void) {
  struct bench_summary s;
  struct bench_findings l = {0};
  summary_make(&s, 80, 500);
  s.n_failed = 1;
  s.n_buffered = 2;
  s.n_cache_hits = 3;
  s.decode_drift_tested = true;
  s.decode_drift.slower = true;
  s.decode_drift.change = -0.10;
  s.decode_drift.n = 3;
  bench_server_findings(&s, NULL, 0.02, &l);
  const struct bench_finding *f = bench_findings_find(&l, "runs_failed", NULL);
  CHECK(f && f->severity == BENCH_PROBLEM);
  f = bench_findings_find(&l, "stream_buffered", NULL);
  CHECK(f && f->severity == BENCH_PROBLEM);
  f = bench_findings_find(&l, "cache_hit", NULL);
  CHECK(f && strstr(f->brief, "left out of prefill"));
  f = bench_findings_find(&l, "steal", NULL);
  CHECK(f != NULL);
  if (f) CHECK_NEAR(bench_finding_get(f, "cpu_steal_share"), 0.02, 1e-12);
  f = bench_findings_find(&l, "drift", NULL);
  CHECK(f != NULL);
  if (f) CHECK_STR(f->config.test, "decode");
  for (size_t i = 0; i < l.n; i++) CHECK(strlen(l.v[i].brief) <= BENCH_FINDING_BRIEF_MAX);
  /* the invocation's steal is not said twice */
  bench_server_steal_finding(0.05, &l);
  CHECK_EQ_INT(count(&l, "steal"), 1);
  bench_findings_free(&l);
  /* --allow-cache: kept, and said so */
  summary_make(&s, 80, 500);
  s.n_cache_hits = 1;
  s.allow_cache = true;
  bench_server_findings(&s, NULL, 0.005, &l); /* 0.5% steal: not said */
  f = bench_findings_find(&l, "cache_hit", NULL);
  CHECK(f && strstr(f->brief, "KEPT"));
  CHECK_EQ_INT(count(&l, "steal"), 0);
  bench_server_steal_finding(0.03, &l); /* the invocation's, alone */
  CHECK_EQ_INT(count(&l, "steal"), 1);
  bench_findings_free(&l);
}

void tm_run_tests(void) {
  TM_RUN(test_clean_workload_has_none);
  TM_RUN(test_implausible_by_rule);
  TM_RUN(test_decode_practical_and_above);
  TM_RUN(test_runs_stream_cache_drift_steal);
}
