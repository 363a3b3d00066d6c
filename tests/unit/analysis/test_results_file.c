/* test_results_file: one results file into series (series_file_load) and
 * decide's device rates from it (decide_rates_from_results): what each fault
 * is (the file, its runs, memory), that only the rates not given are taken,
 * and that the medians come from the right series. Expected values by hand
 * from the records below. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/decide.h"
#include "analysis/series_file.h"
#include "tm_test.h"

static const char *write_file(const char *name, const char *text) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return path;
}

#define RUN(threads, test, toks, phase, idx, ms, rate)                                      \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"A\",\"backend\":\"engine\","             \
  "\"target\":\"in-process\",\"model\":{\"name\":\"m.gguf\",\"file\":\"m.gguf\","           \
  "\"arch\":\"qwen3\",\"type\":\"Q8_0\"},\"test\":\"" test "\",\"phase\":\"" phase "\","    \
  "\"threads\":" threads ",\"depth\":0,\"index\":" idx ",\"warmup\":false,\"ok\":true,"     \
  "\"tokens\":" toks ",\"ms\":" ms ",\"rate_tok_s\":" rate "}\n"
#define IDENTITY "{\"record\":\"identity\",\"schema\":1,\"id\":\"A\",\"backend\":\"engine\"}\n"

/* One configuration (t2): pp16 and pp512 prefill, tg32 decode at 40, 39, 38. */
static const char *one_config = IDENTITY
    RUN("2", "pp16", "16", "prefill", "0", "100", "160")
    RUN("2", "pp512", "512", "prefill", "0", "1280", "400")
    RUN("2", "pp512", "512", "prefill", "1", "1219", "420")
    RUN("2", "tg32", "32", "decode", "0", "800", "40")
    RUN("2", "tg32", "32", "decode", "1", "842", "38")
    RUN("2", "tg32", "32", "decode", "2", "820.5", "39");

static void loads_a_file_or_says_why_not(void) {
  struct results r;
  struct series_set set;
  struct tm_err err = {{0}};
  bool oom = true;
  const char *good = write_file("good.jsonl", one_config);
  CHECK_EQ_INT(series_file_load(good, &r, &set, &oom, &err), 0);
  CHECK(!oom);
  CHECK_EQ_INT(set.n, 6); /* pp16, pp512, tg32: each a rate and a time series */
  series_set_free(&set);
  results_free(&r);

  const char *empty = write_file("empty.jsonl", "");
  CHECK_EQ_INT(series_file_load(empty, &r, &set, &oom, &err), -1);
  CHECK(!oom);
  char want[600];
  snprintf(want, sizeof want, "no records in %s", empty);
  CHECK_STR(err.msg, want);
  CHECK_EQ_INT(set.n, 0);
  CHECK_EQ_INT(r.n_inv, 0);

  CHECK_EQ_INT(series_file_load(tm_tmpfile("missing.jsonl"), &r, &set, &oom, &err), -1);
  CHECK(!oom);
  CHECK_CONTAINS(err.msg, "missing.jsonl");

  const char *bad = write_file("bad.jsonl", IDENTITY "{oops\n");
  CHECK_EQ_INT(series_file_load(bad, &r, &set, &oom, &err), -1);
  CHECK(!oom);
  CHECK_CONTAINS(err.msg, ":2: not JSON");

  /* records, but no timed successful run: loads, with no series */
  const char *warm = write_file("warm.jsonl", IDENTITY);
  CHECK_EQ_INT(series_file_load(warm, &r, &set, &oom, &err), 0);
  CHECK_EQ_INT(set.n, 0);
  series_set_free(&set);
  results_free(&r);
}

static struct decide_inputs job(double prompt, double output) {
  struct decide_inputs in = {.prompt_tokens = prompt, .output_tokens = output,
                             .dev_prefill_tok_s = NAN, .dev_decode_tok_s = NAN};
  return in;
}

static void takes_only_the_rates_not_given(void) {
  const char *path = write_file("one.jsonl", one_config);
  char wp[320], wd[320];
  enum decide_results_fault fault = 0;
  struct tm_err err = {{0}};
  /* both wanted: prefill from pp512 (closest to 400 on a log scale: |ln(512/400)|
   * = 0.25 against |ln(16/400)| = 3.2), the median of 400 and 420; decode the
   * median of 40, 38, 39 */
  struct decide_inputs in = job(400, 100);
  CHECK_EQ_INT(decide_rates_from_results(path, NULL, &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), 0);
  CHECK_NEAR(in.dev_prefill_tok_s, 410, 1e-9);
  CHECK_NEAR(in.dev_decode_tok_s, 39, 1e-9);
  CHECK_STR(wp, "engine | m.gguf | Q8_0 | pp512 | t2 | d0");
  CHECK_STR(wd, "engine | m.gguf | Q8_0 | tg32 | t2 | d0");
  /* a given decode rate wins; a short prompt takes pp16 */
  in = job(20, 100);
  in.dev_decode_tok_s = 25;
  CHECK_EQ_INT(decide_rates_from_results(path, "t2", &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), 0);
  CHECK_NEAR(in.dev_prefill_tok_s, 160, 0);
  CHECK_NEAR(in.dev_decode_tok_s, 25, 0);
  CHECK_STR(wd, "");
  /* no prompt: no prefill wanted, none taken */
  in = job(0, 100);
  CHECK_EQ_INT(decide_rates_from_results(path, NULL, &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), 0);
  CHECK(isnan(in.dev_prefill_tok_s));
  CHECK_STR(wp, "");
  CHECK_NEAR(in.dev_decode_tok_s, 39, 1e-9);
}

static void names_the_fault(void) {
  char wp[320], wd[320];
  enum decide_results_fault fault = 0;
  struct tm_err err = {{0}};
  struct decide_inputs in = job(400, 100);
  /* the file: its message names it */
  const char *missing = tm_tmpfile("nowhere.jsonl");
  CHECK_EQ_INT(decide_rates_from_results(missing, NULL, &in, wp, wd, sizeof wp, NULL, 0, &fault, &err),
               -1);
  CHECK_EQ_INT(fault, DECIDE_FAULT_FILE);
  CHECK_CONTAINS(err.msg, "nowhere.jsonl");
  const char *empty = write_file("e.jsonl", "");
  CHECK_EQ_INT(decide_rates_from_results(empty, NULL, &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), -1);
  CHECK_EQ_INT(fault, DECIDE_FAULT_FILE);
  CHECK_CONTAINS(err.msg, "no records in ");
  /* the runs: the message says what they lack, without the path */
  const char *path = write_file("one.jsonl", one_config);
  CHECK_EQ_INT(decide_rates_from_results(path, "t4", &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), -1);
  CHECK_EQ_INT(fault, DECIDE_FAULT_RUNS);
  CHECK_STR(err.msg, "no decode runs matching 't4' in the results (or give --device-decode)");
  CHECK(isnan(in.dev_prefill_tok_s) && isnan(in.dev_decode_tok_s)); /* nothing taken */
  const char *two = write_file("two.jsonl", IDENTITY
      RUN("1", "tg32", "32", "decode", "0", "1600", "20")
      RUN("2", "tg32", "32", "decode", "0", "800", "40"));
  in.prompt_tokens = 0;
  CHECK_EQ_INT(decide_rates_from_results(two, NULL, &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), -1);
  CHECK_EQ_INT(fault, DECIDE_FAULT_RUNS);
  CHECK_CONTAINS(err.msg, "2 configurations in the results ([engine | in-process | m.gguf | "
                          "Q8_0 | t1 | d0], [engine | in-process | m.gguf | Q8_0 | t2 | d0])");
  CHECK_EQ_INT(decide_rates_from_results(two, "| t1 |", &in, wp, wd, sizeof wp, NULL, 0, &fault, &err), 0);
  CHECK_NEAR(in.dev_decode_tok_s, 20, 0);
}

void tm_run_tests(void) {
  TM_RUN(loads_a_file_or_says_why_not);
  TM_RUN(takes_only_the_rates_not_given);
  TM_RUN(names_the_fault);
}
