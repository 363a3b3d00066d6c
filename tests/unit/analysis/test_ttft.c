/* test_ttft: the TTFT fit against least squares computed by hand, its
 * refusals, the prediction's standard error, and which runs of a results file
 * become points (and under which key). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/results.h"
#include "analysis/ttft.h"
#include "tm_test.h"

/* x = 100, 200, 300, 400 tokens; y = 60, 115, 155, 210 ms. By hand:
 *   mean x 250, mean y 135; Sxx = 50000, Sxy = 24500, Syy = 12050
 *   b = 24500 / 50000 = 0.49 ms/token, a = 135 - 0.49 * 250 = 12.5 ms
 *   residuals -1.5, 4.5, -4.5, 1.5: SSE = 45, s^2 = 45 / 2 = 22.5
 *   se_b = sqrt(22.5 / 50000) = 0.0212132, se_a = sqrt(22.5 (1/4 + 250^2/50000))
 *        = sqrt(33.75) = 5.8094750
 *   rate = 1000 / 0.49 = 2040.8163 tok/s, se = 1000 * 0.0212132 / 0.49^2 = 88.35152
 *   r^2 = 1 - 45 / 12050 = 0.99626556
 *   at L = 50: 12.5 + 24.5 = 37 ms, var = 22.5 (1/4 + 200^2/50000) = 23.625,
 *   se = 4.8605555; fixed share 12.5 / 37 = 0.33783784 */
static const double X[] = {100, 200, 300, 400};
static const double Y[] = {60, 115, 155, 210};

static void test_fit_by_hand(void) {
  struct ttft_fit f;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(ttft_fit_points(X, Y, 4, &f, &err), 0);
  CHECK_NEAR(f.fixed_ms, 12.5, 1e-9);
  CHECK_NEAR(f.ms_per_token, 0.49, 1e-12);
  CHECK_NEAR(f.se_ms_per_token, 0.021213203, 1e-8);
  CHECK_NEAR(f.se_fixed_ms, 5.809475019, 1e-8);
  CHECK_NEAR(f.prefill_tok_s, 2040.816327, 1e-5);
  CHECK_NEAR(f.se_prefill_tok_s, 88.35152, 1e-4);
  CHECK_NEAR(f.r2, 0.996265560, 1e-8);
  CHECK_EQ_INT(f.n_points, 4);
  CHECK_EQ_INT(f.n_lengths, 4);
  CHECK_NEAR(f.min_len, 100, 0);
  CHECK_NEAR(f.max_len, 400, 0);
  CHECK_NEAR(f.mean_len, 250, 1e-12);
  double se = NAN;
  CHECK_NEAR(ttft_predict_ms(&f, 50, &se), 37.0, 1e-9);
  CHECK_NEAR(se, 4.860555523, 1e-8);
  /* At the mean length the slope's error vanishes: se = s / sqrt(n). */
  ttft_predict_ms(&f, 250, &se);
  CHECK_NEAR(se, sqrt(22.5 / 4), 1e-9);
  CHECK_NEAR(ttft_fixed_share(&f, 50), 12.5 / 37.0, 1e-12);
  CHECK_NEAR(ttft_fixed_share(&f, 1000), 12.5 / 502.5, 1e-12);
}

/* An exact line (fake server: 40 ms + 2 ms/token) is recovered exactly, with
 * zero error, and repeated lengths are fine. */
static void test_exact_line_repeats(void) {
  double x[] = {32, 32, 64, 64, 128, 128};
  double y[6];
  for (int i = 0; i < 6; i++) y[i] = 40 + 2 * x[i];
  struct ttft_fit f;
  struct tm_err err;
  CHECK_EQ_INT(ttft_fit_points(x, y, 6, &f, &err), 0);
  CHECK_NEAR(f.fixed_ms, 40, 1e-9);
  CHECK_NEAR(f.prefill_tok_s, 500, 1e-9);
  CHECK_NEAR(f.se_ms_per_token, 0, 1e-9);
  CHECK_EQ_INT(f.n_lengths, 3);
  CHECK_NEAR(f.r2, 1, 1e-12);
  CHECK_NEAR(ttft_fixed_share(&f, 32), 40.0 / 104.0, 1e-12);
}

static void test_refusals(void) {
  struct ttft_fit f;
  struct tm_err err = {{0}};
  /* two runs */
  CHECK_EQ_INT(ttft_fit_points(X, Y, 2, &f, &err), -1);
  CHECK_CONTAINS(err.msg, "at least 3 runs");
  /* three runs at one length */
  double x1[] = {64, 64, 64}, y1[] = {10, 11, 12};
  CHECK_EQ_INT(ttft_fit_points(x1, y1, 3, &f, &err), -1);
  CHECK_CONTAINS(err.msg, "2 distinct prompt lengths");
  /* TTFT that falls with the prompt (a cache) */
  double x2[] = {100, 200, 400}, y2[] = {300, 200, 100};
  CHECK_EQ_INT(ttft_fit_points(x2, y2, 3, &f, &err), -1);
  CHECK_CONTAINS(err.msg, "does not grow");
  /* flat: slope exactly 0 */
  double y3[] = {50, 50, 50};
  CHECK_EQ_INT(ttft_fit_points(x2, y3, 3, &f, &err), -1);
  CHECK_CONTAINS(err.msg, "does not grow");
  /* blanks are skipped, not zeros: 4 points of which 2 finite */
  double x4[] = {100, NAN, 300, 400}, y4[] = {60, 115, NAN, 210};
  CHECK_EQ_INT(ttft_fit_points(x4, y4, 4, &f, &err), -1);
  CHECK_CONTAINS(err.msg, "got 2");
  /* a length that is not positive */
  double x5[] = {0, 100, 200}, y5[] = {5, 60, 115};
  CHECK_EQ_INT(ttft_fit_points(x5, y5, 3, &f, &err), -1);
  CHECK_CONTAINS(err.msg, "not positive");
  /* nothing */
  CHECK_EQ_INT(ttft_fit_points(NULL, NULL, 0, &f, &err), -1);
  CHECK(isnan(f.fixed_ms));
}

/* A fixed cost fitted below zero has no share (NAN), never 0 or < 0: "0%
 * of the wait is fixed cost" beside "-749 ms" says what the fit does not. */
static void test_negative_fixed_share(void) {
  double x[] = {100, 200, 300}, y[] = {48, 102, 149};
  struct ttft_fit f;
  struct tm_err err;
  CHECK_EQ_INT(ttft_fit_points(x, y, 3, &f, &err), 0);
  CHECK(f.fixed_ms < 0);
  CHECK(isnan(ttft_fixed_share(&f, 100)));
}

static const char *RESULTS =
    "{\"record\":\"identity\",\"schema\":1,\"id\":\"e1\",\"backend\":\"engine\"}\n"
    /* engine: warm-up (out), 3 pp runs at two lengths, a tg run (out), a pp at
     * another thread count (own group) */
    "{\"record\":\"run\",\"identity\":\"e1\",\"backend\":\"engine\",\"model\":{\"name\":\"m Q4_0\"},"
    "\"test\":\"pp32\",\"phase\":\"prefill\",\"threads\":2,\"depth\":0,\"warmup\":true,\"ok\":true,"
    "\"tokens\":32,\"ms\":999}\n"
    "{\"record\":\"run\",\"identity\":\"e1\",\"backend\":\"engine\",\"model\":{\"name\":\"m Q4_0\"},"
    "\"test\":\"pp32\",\"phase\":\"prefill\",\"threads\":2,\"depth\":0,\"warmup\":false,\"ok\":true,"
    "\"tokens\":32,\"ms\":20}\n"
    "{\"record\":\"run\",\"identity\":\"e1\",\"backend\":\"engine\",\"model\":{\"name\":\"m Q4_0\"},"
    "\"test\":\"pp64\",\"phase\":\"prefill\",\"threads\":2,\"depth\":0,\"warmup\":false,\"ok\":true,"
    "\"tokens\":64,\"ms\":36}\n"
    "{\"record\":\"run\",\"identity\":\"e1\",\"backend\":\"engine\",\"model\":{\"name\":\"m Q4_0\"},"
    "\"test\":\"pp128\",\"phase\":\"prefill\",\"threads\":2,\"depth\":0,\"warmup\":false,\"ok\":true,"
    "\"tokens\":128,\"ms\":68}\n"
    "{\"record\":\"run\",\"identity\":\"e1\",\"backend\":\"engine\",\"model\":{\"name\":\"m Q4_0\"},"
    "\"test\":\"tg16\",\"phase\":\"decode\",\"threads\":2,\"depth\":0,\"warmup\":false,\"ok\":true,"
    "\"tokens\":16,\"ms\":300}\n"
    "{\"record\":\"run\",\"identity\":\"e1\",\"backend\":\"engine\",\"model\":{\"name\":\"m Q4_0\"},"
    "\"test\":\"pp32\",\"phase\":\"prefill\",\"threads\":1,\"depth\":0,\"warmup\":false,\"ok\":true,"
    "\"tokens\":32,\"ms\":40}\n"
    "{\"record\":\"summary\",\"identity\":\"e1\",\"backend\":\"engine\",\"test\":\"pp32\"}\n"
    "{\"record\":\"end\",\"identity\":\"e1\"}\n"
    "{\"record\":\"identity\",\"schema\":1,\"id\":\"s1\",\"backend\":\"llamacpp\"}\n"
    /* server: calibration, warm-up, cold, failed, cache-hit are out; 2 good */
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"calibration\":true,\"warmup\":false,\"ok\":true,"
    "\"tokens\":{\"processed\":50},\"client\":{\"ttft_ms\":1}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"warmup\":true,\"ok\":true,"
    "\"tokens\":{\"processed\":50},\"client\":{\"ttft_ms\":2}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"cold\":true,\"warmup\":false,\"ok\":true,"
    "\"tokens\":{\"processed\":50},\"client\":{\"ttft_ms\":3}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"warmup\":false,\"ok\":false,"
    "\"tokens\":{\"processed\":50},\"client\":{\"ttft_ms\":4}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"warmup\":false,\"ok\":true,\"cache\":{\"prefill_excluded\":true},"
    "\"tokens\":{\"processed\":50},\"client\":{\"ttft_ms\":5}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"warmup\":false,\"ok\":true,\"cache\":{\"prefill_excluded\":false},"
    "\"tokens\":{\"processed\":100},\"client\":{\"ttft_ms\":140.5}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"warmup\":false,\"ok\":true,"
    "\"tokens\":{\"processed\":null},\"client\":{\"ttft_ms\":7}}\n"
    "{\"record\":\"run\",\"identity\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://h:1\","
    "\"model\":\"q\",\"warmup\":false,\"ok\":true,"
    "\"tokens\":{\"processed\":400},\"client\":{\"ttft_ms\":440.5}}\n";

static void test_points_from_results(void) {
  const char *path = tm_tmpfile("r.jsonl");
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(RESULTS, f);
  fclose(f);
  struct results r;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(results_load(&path, 1, &r, &err), 0);
  struct ttft_groups g;
  CHECK_EQ_INT(ttft_points_from_results(&r, &g, &err), 0);
  CHECK_EQ_INT(g.n, 3);
  if (g.n == 3) {
    CHECK_STR(g.g[0].key, "engine | m Q4_0 | t2 | d0");
    CHECK_EQ_INT(g.g[0].n, 3);
    CHECK_NEAR(g.g[0].len[0], 32, 0);
    CHECK_NEAR(g.g[0].ttft_ms[0], 20, 0);
    CHECK_NEAR(g.g[0].len[2], 128, 0);
    CHECK_NEAR(g.g[0].ttft_ms[2], 68, 0);
    CHECK_STR(g.g[1].key, "engine | m Q4_0 | t1 | d0");
    CHECK_EQ_INT(g.g[1].n, 1);
    CHECK_STR(g.g[2].key, "llamacpp | http://h:1 | q");
    CHECK_EQ_INT(g.g[2].n, 2);
    CHECK_NEAR(g.g[2].len[0], 100, 0);
    CHECK_NEAR(g.g[2].ttft_ms[1], 440.5, 0);
    /* the engine group fits exactly: 4 ms + 0.5 ms/token */
    struct ttft_fit fit;
    CHECK_EQ_INT(ttft_fit_points(g.g[0].len, g.g[0].ttft_ms, g.g[0].n, &fit, &err), 0);
    CHECK_NEAR(fit.fixed_ms, 4, 1e-9);
    CHECK_NEAR(fit.prefill_tok_s, 2000, 1e-6);
    /* the server group has 2 points: refused */
    CHECK_EQ_INT(ttft_fit_points(g.g[2].len, g.g[2].ttft_ms, g.g[2].n, &fit, &err), -1);
  }
  ttft_groups_free(&g);
  CHECK_EQ_INT(g.n, 0);
  results_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(test_fit_by_hand);
  TM_RUN(test_exact_line_repeats);
  TM_RUN(test_refusals);
  TM_RUN(test_negative_fixed_share);
  TM_RUN(test_points_from_results);
}
