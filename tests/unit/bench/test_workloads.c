/* Tests for src/bench/workloads.c: the server bench's workloads from the
 * user's request: named, custom (with its defaults), the TTFT sweep's one
 * per length, and every refusal. */
#include <string.h>

#include "bench/workloads.h"
#include "tm_test.h"

static void test_default_and_named(void) {
  struct workload w[RUNNER_MAX_WORKLOADS];
  size_t n = 0;
  struct tm_err err = {{0}};
  struct workload_request r = {0};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), 0);
  CHECK_EQ_INT(n, 3);
  CHECK_STR(w[0].name, "classify");
  CHECK_STR(w[2].name, "generate");
  r.names = "extract";
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), 0);
  CHECK_EQ_INT(n, 1);
  CHECK_STR(w[0].name, "extract");
}

static void test_custom_defaults(void) {
  struct workload w[RUNNER_MAX_WORKLOADS];
  size_t n = 0;
  struct tm_err err = {{0}};
  const uint32_t p[] = {300}, m[] = {40};
  /* only -n: the prompt is 50 tokens; only -p: 128 generated */
  struct workload_request r = {.max_tokens = m, .n_max_tokens = 1};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), 0);
  CHECK_EQ_INT(n, 1);
  CHECK_STR(w[0].name, "custom");
  CHECK_EQ_INT(w[0].prompt_tokens, 50);
  CHECK_EQ_INT(w[0].max_tokens, 40);
  r = (struct workload_request){.prompt_tokens = p, .n_prompt_tokens = 1, .names = "classify"};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), 0);
  CHECK_EQ_INT(n, 2);
  CHECK_EQ_INT(w[1].prompt_tokens, 300);
  CHECK_EQ_INT(w[1].max_tokens, 128);
  r = (struct workload_request){.prompt_text = "Hello"};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), 0);
  CHECK_STR(w[0].name, "prompt-file");
  CHECK_STR(w[0].prompt_text, "Hello");
}

static void test_sweep_and_refusals(void) {
  struct workload w[RUNNER_MAX_WORKLOADS];
  size_t n = 0;
  struct tm_err err = {{0}};
  const uint32_t lens[] = {32, 64, 128}, two[] = {1, 2};
  struct workload_request r = {.prompt_tokens = lens, .n_prompt_tokens = 3, .ttft_sweep = true};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), 0);
  CHECK_EQ_INT(n, 3);
  for (size_t i = 0; i < 3; i++) CHECK_EQ_INT(w[i].prompt_tokens, lens[i]);
  r = (struct workload_request){.prompt_tokens = two, .n_prompt_tokens = 2};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), -1);
  CHECK(strstr(err.msg, "one value each") != NULL);
  r = (struct workload_request){.names = "bogus"};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), -1);
  CHECK(strstr(err.msg, "unknown workload 'bogus'") != NULL);
  r = (struct workload_request){.names = "classify,classify"};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), -1);
  CHECK(strstr(err.msg, "given twice") != NULL);
  r = (struct workload_request){.names = "classify,,extract"};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), -1);
  const uint32_t nine[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  r = (struct workload_request){.prompt_tokens = nine, .n_prompt_tokens = 10, .ttft_sweep = true};
  CHECK_EQ_INT(workloads_from_request(&r, w, &n, &err), -1);
  CHECK(strstr(err.msg, "at most") != NULL);
}

void tm_run_tests(void) {
  TM_RUN(test_default_and_named);
  TM_RUN(test_custom_defaults);
  TM_RUN(test_sweep_and_refusals);
}
