/* test_load_record: a request's sample written (record_load_sample_json) and
 * read back (record_load_sample_parse) is the sample the run judged, on the
 * wall clock (chunk times to the microsecond), so a merge of shards computes
 * from what each shard computed from; a sample with a key missing or of the
 * wrong type is refused with the key named. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "record/load_record.h"
#include "tm_test.h"

static void test_round_trip(void) {
  const double chunks[] = {100.25, 100.2751234, 100.5};
  const struct load_sample x = {.t_sched = 99.9, .t_send = 100.0, .t_end = 100.6, .ok = true,
                                .token_by_token = true, .ttft_ms = 250, .ttfat_ms = 251,
                                .decode_tok_s = 8, .tpot_ms = 125, .e2e_ms = 600,
                                .queue_ms = NAN, .prompt_processed = 40, .prompt_reported = 41,
                                .tokens = 3, .n_chunks = 3, .chunk_t = chunks};
  const double offset = 1.7e9;
  json_t *o = record_load_sample_json(&x, offset, 2, 1, NULL);
  CHECK(o != NULL);
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  json_t *back = json_loads(text, 0, NULL);
  free(text);
  struct load_sample y;
  double *buf;
  const char *ename;
  int level;
  char why[160] = "";
  CHECK_EQ_INT(record_load_sample_parse(back, &y, &buf, &ename, &level, why, sizeof why), 0);
  CHECK_EQ_INT(level, 2);
  CHECK(ename == NULL && y.ok && y.token_by_token && !y.cache_hit);
  CHECK_NEAR(y.t_send, 100.0 + offset, 1e-6);
  CHECK_NEAR(y.t_sched, 99.9 + offset, 1e-6);
  CHECK_NEAR(y.ttft_ms, 250, 1e-9);
  CHECK(isnan(y.queue_ms));
  CHECK_EQ_U64(y.n_chunks, 3);
  for (int k = 0; k < 3; k++) CHECK_NEAR(y.chunk_t[k] - offset, chunks[k], 1.5e-6);
  free(buf);
  json_decref(back);
}

static void test_refusals(void) {
  const struct load_sample x = {.t_send = 1, .t_end = 2, .ok = false, .tokens = 0};
  const char *keys[] = {"level", "send_unix", "ok", "tokens", "chunk_us", "cache_hit"};
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
    json_t *o = record_load_sample_json(&x, 0, 0, -1, "timeout");
    json_object_set_new(o, keys[k], json_string("x"));
    struct load_sample y;
    double *buf;
    const char *ename;
    int level;
    char why[160] = "";
    CHECK_MSG(record_load_sample_parse(o, &y, &buf, &ename, &level, why, sizeof why) == -1 &&
                  strstr(why, keys[k]),
              "accepted a string for %s (%s)", keys[k], why);
    json_decref(o);
  }
  /* a failed request names its kind */
  json_t *o = record_load_sample_json(&x, 0, 0, -1, NULL);
  struct load_sample y;
  double *buf;
  const char *ename;
  int level;
  char why[160] = "";
  CHECK(record_load_sample_parse(o, &y, &buf, &ename, &level, why, sizeof why) == -1);
  json_decref(o);
}

void tm_run_tests(void) {
  TM_RUN(test_round_trip);
  TM_RUN(test_refusals);
}
