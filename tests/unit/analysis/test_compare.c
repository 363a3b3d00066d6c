/* test_compare: pairing (exact keys, then by position), the verdict's
 * direction (rates vs times), rule 12's example not ranked, the ratio the
 * ceilings predict only when a modelled part differs, and drift flags. */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/compare.h"
#include "series_builder.h"
#include "tm_test.h"

static struct series mk(const char *key, const char *metric, const char *model, const char *type,
                        const double *v, size_t n) {
  return series_make((struct series_spec){.key = key, .backend = "engine", .target = "in-process",
                                          .model = model, .type = type, .test = "tg128",
                                          .metric = metric, .threads = 2, .prompt_tokens = -1,
                                          .gen_tokens = 128},
                     v, n);
}

static const double noisy[] = {13.49, 15.66, 17.83}, tight[] = {16.69, 17.43, 18.17};
static const double slow[] = {40.1, 39.8, 40.3, 40.0}, fast[] = {55.2, 54.9, 55.6, 55.0};
static const double slow_ms[] = {3192, 3216, 3176, 3200}, fast_ms[] = {2319, 2331, 2302, 2327};

static void test_verdicts_and_direction(void) {
  struct series a[3] = {mk("k1", "decode_tok_s", "m", "Q8_0", noisy, 3),
                        mk("k2", "decode_tok_s", "m", "Q8_0", slow, 4),
                        mk("k2", "decode_ms", "m", "Q8_0", slow_ms, 4)};
  struct series b[3] = {mk("k2", "decode_ms", "m", "Q8_0", fast_ms, 4),
                        mk("k1", "decode_tok_s", "m", "Q8_0", tight, 3),
                        mk("k2", "decode_tok_s", "m", "Q8_0", fast, 4)};
  struct series_set sa = {a, 3}, sb = {b, 3};
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result r;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(compare_series(&sa, &sb, &o, &r, &err), 0);
  CHECK_EQ_INT(r.n, 3);
  CHECK_EQ_INT(r.only_a, 0);
  CHECK_EQ_INT(r.only_b, 0);
  if (r.n == 3) {
    /* rows follow A; partners found by key, not by position in B */
    CHECK(r.rows[0].a == &a[0] && r.rows[0].b == &b[1]);
    CHECK_EQ_INT(r.rows[0].verdict, COMPARE_NOT_DISTINGUISHABLE); /* 15.66+-2.17 vs 17.43+-0.74 */
    CHECK_STR(compare_verdict_name(r.rows[0].verdict), "not distinguishable");
    CHECK_NEAR(r.rows[0].sa.median, 15.66, 1e-12);
    CHECK_NEAR(r.rows[0].sb.median, 17.43, 1e-12);
    CHECK_EQ_INT(r.rows[1].verdict, COMPARE_FASTER); /* tok/s up */
    CHECK(!r.rows[1].lower_is_better);
    CHECK(r.rows[2].b == &b[0]);
    CHECK(r.rows[2].lower_is_better);
    CHECK(r.rows[2].ci.hi < 1);
    CHECK_EQ_INT(r.rows[2].verdict, COMPARE_FASTER); /* ms down = faster */
    CHECK_STR(r.rows[1].differs, "");
    CHECK(isnan(r.rows[1].predicted_ratio)); /* nothing modelled differs */
    CHECK(r.rows[1].drift_a_ok && !r.rows[1].drift_a.slower);
  }
  compare_result_free(&r);
  /* swapped sides: slower */
  CHECK_EQ_INT(compare_series(&sb, &sa, &o, &r, &err), 0);
  CHECK(r.n == 3 && r.rows[2].verdict == COMPARE_SLOWER);  /* B tok/s lower */
  CHECK(r.n == 3 && r.rows[0].verdict == COMPARE_SLOWER);  /* B ms higher */
  compare_result_free(&r);
  /* one run a side: no interval, no ranking */
  struct series one_a = mk("k", "decode_tok_s", "m", "Q8_0", slow, 1);
  struct series one_b = mk("k", "decode_tok_s", "m", "Q8_0", fast, 1);
  struct series_set s1 = {&one_a, 1}, s2 = {&one_b, 1};
  CHECK_EQ_INT(compare_series(&s1, &s2, &o, &r, &err), 0);
  CHECK(r.n == 1 && r.rows[0].verdict == COMPARE_TOO_FEW && !r.rows[0].ci_ok);
  compare_result_free(&r);
}

/* The real case: a smaller file predicted to decode faster. */
static void test_pair_by_position_and_prediction(void) {
  struct series a[2] = {mk("engine | q8.gguf | Q8_0 | tg128 | t2 | d0", "decode_tok_s", "q8.gguf",
                           "Q8_0", slow, 4),
                        mk("engine | q8.gguf | Q8_0 | tg128 | t2 | d0", "decode_ms", "q8.gguf",
                           "Q8_0", slow_ms, 4)};
  struct series b[2] = {mk("engine | q4.gguf | Q4_0 | tg128 | t2 | d0", "decode_tok_s", "q4.gguf",
                           "Q4_0", fast, 4),
                        mk("engine | q4.gguf | Q4_0 | tg128 | t2 | d0", "decode_ms", "q4.gguf",
                           "Q4_0", fast_ms, 4)};
  for (int i = 0; i < 2; i++) {
    a[i].bytes_per_token = 1.0e9;
    b[i].bytes_per_token = 0.61e9; /* 39% smaller */
    a[i].read_bandwidth_bytes_s = 30e9;
    b[i].read_bandwidth_bytes_s = 31e9; /* probe noise on one machine: ignored */
  }
  struct series_set sa = {a, 2}, sb = {b, 2};
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result r;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(compare_series(&sa, &sb, &o, &r, &err), 0);
  CHECK_EQ_INT(r.n, 2);
  if (r.n == 2) {
    CHECK_STR(r.rows[0].differs, "model, type");
    CHECK_NEAR(r.rows[0].predicted_ratio, 1 / 0.61, 1e-12); /* +64% */
    CHECK_STR(r.rows[0].predicted_from, "bytes/token");
    CHECK_NEAR(r.rows[1].predicted_ratio, 0.61, 1e-12);     /* time: reciprocal */
    CHECK_EQ_INT(r.rows[0].verdict, COMPARE_FASTER);
  }
  compare_result_free(&r);
  /* another machine: bandwidth 2x, same file */
  for (int i = 0; i < 2; i++) {
    b[i].bytes_per_token = 1.0e9;
    b[i].read_bandwidth_bytes_s = 60e9;
  }
  CHECK_EQ_INT(compare_series(&sa, &sb, &o, &r, &err), 0);
  CHECK(r.n == 2 && fabs(r.rows[0].predicted_ratio - 2) < 1e-12 &&
        !strcmp(r.rows[0].predicted_from, "bandwidth"));
  compare_result_free(&r);
  /* ambiguous: two candidates in B at the same position -> not paired */
  struct series b2[2] = {mk("x1", "decode_tok_s", "x1", "Q4_0", fast, 4),
                         mk("x2", "decode_tok_s", "x2", "Q4_0", fast, 4)};
  struct series_set sb2 = {b2, 2}, sa1 = {a, 1};
  CHECK_EQ_INT(compare_series(&sa1, &sb2, &o, &r, &err), 0);
  CHECK_EQ_INT(r.n, 0);
  CHECK_EQ_INT(r.only_a, 1);
  CHECK_EQ_INT(r.only_b, 2);
  compare_result_free(&r);
  /* another thread count is another position: not paired */
  struct series b3 = mk("y", "decode_tok_s", "y", "Q4_0", fast, 4);
  b3.threads = 1;
  struct series_set sb3 = {&b3, 1};
  CHECK_EQ_INT(compare_series(&sa1, &sb3, &o, &r, &err), 0);
  CHECK_EQ_INT(r.n, 0);
  compare_result_free(&r);
}

static void test_drift_flag(void) {
  static const double slowing[] = {45.0, 44.6, 44.1, 43.9, 43.2, 42.9, 42.5, 42.0};
  static const double flat[] = {44.0, 46.1, 43.2, 45.8, 44.4, 43.9, 46.0, 44.1};
  struct series a = mk("k", "decode_tok_s", "m", "Q8_0", flat, 8);
  struct series b = mk("k", "decode_tok_s", "m", "Q8_0", slowing, 8);
  struct series_set sa = {&a, 1}, sb = {&b, 1};
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result r;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(compare_series(&sa, &sb, &o, &r, &err), 0);
  CHECK(r.n == 1 && r.rows[0].drift_a_ok && !r.rows[0].drift_a.slower);
  CHECK(r.n == 1 && r.rows[0].drift_b_ok && r.rows[0].drift_b.slower);
  compare_result_free(&r);
  /* bootstrap path gives the same verdicts on clear data */
  o.method = STATS_CI_BOOTSTRAP;
  struct series c = mk("k", "decode_tok_s", "m", "Q8_0", slow, 4);
  struct series d = mk("k", "decode_tok_s", "m", "Q8_0", fast, 4);
  struct series_set sc = {&c, 1}, sd = {&d, 1};
  CHECK_EQ_INT(compare_series(&sc, &sd, &o, &r, &err), 0);
  CHECK(r.n == 1 && r.rows[0].verdict == COMPARE_FASTER && isnan(r.rows[0].ci.df));
  compare_result_free(&r);
}

/* A time of 0 ms has no logarithm: the verdict says so (it said "too few
 * runs" with three runs a side). */
static void test_zero_values(void) {
  static const double with_zero[] = {0, 0, 10}, fine[] = {5, 6, 5};
  struct series a = mk("k", "ttft_ms", "m", "Q8_0", with_zero, 3);
  struct series b = mk("k", "ttft_ms", "m", "Q8_0", fine, 3);
  struct series_set sa = {&a, 1}, sb = {&b, 1};
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result r;
  struct tm_err err = {{0}};
  for (int swap = 0; swap < 2; swap++) {
    CHECK_EQ_INT(compare_series(swap ? &sb : &sa, swap ? &sa : &sb, &o, &r, &err), 0);
    CHECK(r.n == 1 && r.rows[0].verdict == COMPARE_ZERO && !r.rows[0].ci_ok);
    CHECK(r.n == 1 && isnan(r.rows[0].ci.ratio));
    CHECK(r.n == 1 && r.rows[0].sa.n == 3 && r.rows[0].sb.n == 3);
    CHECK_STR(compare_verdict_name(COMPARE_ZERO), "zero values: no ratio");
    compare_result_free(&r);
  }
}

/* Two result files whose first runs' bandwidths differ by 20% while the
 * configurations' mean bandwidths differ by 2.5%: below the 10% that makes
 * another machine, so the ceilings predict nothing (they predicted 0.83x
 * from the first runs alone). */
static void test_prediction_uses_every_run(void) {
#define RUN(id, bw)                                                                          \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"" id "\",\"backend\":\"engine\","           \
  "\"model\":{\"name\":\"m.gguf\",\"type\":\"Q8_0\"},\"test\":\"tg32\",\"threads\":2,"        \
  "\"depth\":0,\"warmup\":false,\"ok\":true,\"ms\":800,\"rate_tok_s\":40,"                    \
  "\"ceiling\":{\"ceiling_tok_s\":50,\"read_bandwidth_bytes_s\":" bw "e9,"                  \
  "\"bytes_per_token\":1e8}}\n"
  const char *text_a = "{\"record\":\"identity\",\"schema\":1,\"id\":\"A\"}\n" RUN("A", "6")
      RUN("A", "5") RUN("A", "5");
  const char *text_b = "{\"record\":\"identity\",\"schema\":1,\"id\":\"B\"}\n" RUN("B", "5")
      RUN("B", "6") RUN("B", "5.5");
#undef RUN
  const char *texts[] = {text_a, text_b};
  struct results r[2];
  struct series_set set[2];
  for (int i = 0; i < 2; i++) {
    const char *path = tm_tmpfile(i ? "b.jsonl" : "a.jsonl");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(texts[i], f);
    fclose(f);
    struct tm_err err = {{0}};
    if (results_load(&path, 1, &r[i], &err) || series_extract(&r[i], &set[i], &err)) {
      CHECK_MSG(0, "%s", err.msg);
      return;
    }
  }
  struct compare_opts o;
  compare_opts_default(&o);
  struct compare_result cr;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(compare_series(&set[0], &set[1], &o, &cr, &err), 0);
  CHECK_EQ_INT(cr.n, 2); /* decode_tok_s, decode_ms */
  for (size_t i = 0; i < cr.n; i++) {
    CHECK_NEAR(cr.rows[i].a->read_bandwidth_bytes_s, 16e9 / 3, 1);
    CHECK_NEAR(cr.rows[i].b->read_bandwidth_bytes_s, 5.5e9, 1);
    CHECK_MSG(isnan(cr.rows[i].predicted_ratio), "predicted %g from %s",
              cr.rows[i].predicted_ratio, cr.rows[i].predicted_from);
  }
  compare_result_free(&cr);
  for (int i = 0; i < 2; i++) {
    series_set_free(&set[i]);
    results_free(&r[i]);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_zero_values);
  TM_RUN(test_prediction_uses_every_run);
  TM_RUN(test_verdicts_and_direction);
  TM_RUN(test_pair_by_position_and_prediction);
  TM_RUN(test_drift_flag);
}
