/* accuracy: measures, through the real client path (backend_run ->
 * run_metrics_compute), a paced fake server whose timing is known exactly:
 * prefill delay a + b x n (the runtime's own timer reports b x n), then one
 * token every c. Shared by the accuracy test (tolerances that hold on a loaded
 * 2-core machine) and bench/accuracy_bench (the error actually reached). */
#ifndef TM_TEST_ACCURACY_H
#define TM_TEST_ACCURACY_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench/metrics.h"
#include "fakeserver.h"

struct accuracy_point {
  uint32_t prompt_tokens;    /* n, as the server counted it */
  double ttft_ms, ttft_expected_ms;
  double decode_client, decode_expected;     /* tok/s */
  double prefill_server, prefill_expected;   /* tok/s: 1/b */
  double prefill_client;                     /* n / TTFT: a lower bound */
  const char *prefill_source;
  bool ok;
};

/* One request of n_words prompt words and max_tokens tokens to a paced server
 * of the given flavor. Returns 0 when the run succeeded. */
static int accuracy_measure(enum fs_flavor flavor, double a_ms, double b_ms, double c_ms,
                            uint32_t n_words, uint32_t max_tokens, struct accuracy_point *pt) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  cfg.flavor = flavor;
  cfg.a_ms = a_ms, cfg.b_ms = b_ms, cfg.c_ms = c_ms;
  int port = 0;
  struct fakeserver *s = fs_start(&cfg, &port);
  if (!s) return -1;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  enum api_family api = flavor == FS_FLAVOR_OLLAMA ? API_OLLAMA : API_OPENAI;
  struct backend_config bc = {.base_url = url, .api = api, .endpoint = ENDPOINT_CHAT,
                              .connect_timeout_s = 5};
  struct tm_err err;
  struct backend *b = backend_new(&bc, &err);
  if (!b) {
    fs_stop(s);
    return -1;
  }
  char *prompt = malloc((size_t)n_words * 8 + 16);
  size_t len = 0;
  for (uint32_t i = 0; i < n_words; i++) len += (size_t)sprintf(prompt + len, "%sw%u", i ? " " : "", i % 100);
  struct backend_request req = {.prompt = prompt, .max_tokens = max_tokens, .exact_length = true,
                                .stream = true, .idle_timeout_s = 10, .total_timeout_s = 60};
  struct metrics_options mo;
  metrics_options_init(&mo);
  int rc = 0;
  /* A warm-up on the same connection, so the timed request does not pay the
   * connect (as the runner does). */
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    struct run_result r;
    struct run_metrics m;
    run_result_init(&r);
    rc = backend_run(b, &req, &r);
    if (rc == 0 && pass == 1) {
      run_metrics_compute(&r, &req, &mo, &m);
      struct fs_timing t = fs_last_timing(s);
      pt->prompt_tokens = t.prompt_tokens;
      pt->ttft_ms = m.ttft_ms;
      pt->ttft_expected_ms = a_ms + b_ms * t.prompt_tokens;
      pt->decode_client = m.decode_client;
      pt->decode_expected = 1000.0 / c_ms;
      pt->prefill_server = m.prefill_server;
      pt->prefill_expected = 1000.0 / b_ms;
      pt->prefill_client = m.prefill_client;
      pt->prefill_source = m.prefill_source;
      pt->ok = true;
    }
    run_result_free(&r);
  }
  free(prompt);
  backend_free(b);
  fs_stop(s);
  return rc;
}

#endif
