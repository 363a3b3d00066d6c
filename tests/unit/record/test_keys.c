/* Tests for src/record/keys.c: the table of record keys (paths, leaves,
 * typed lookups) and the metric table every series reader shares. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "record/keys.h"
#include "tm_test.h"

static void test_paths_and_lookups(void) {
  CHECK_STR(record_key(RK_CEILING_BYTES_PER_TOKEN), "ceiling.bytes_per_token");
  CHECK_STR(record_key_leaf(RK_CEILING_BYTES_PER_TOKEN), "bytes_per_token");
  CHECK_STR(record_key_leaf(RK_RECORD), "record");
  CHECK_STR(record_key_leaf(RK_RATES_DECODE_HEADLINE), "headline");
  /* every key has a path, no two the same */
  for (int i = 0; i < RK_COUNT; i++) {
    CHECK(record_key((enum record_key)i)[0] != 0);
    for (int j = 0; j < i; j++)
      CHECK_MSG(strcmp(record_key((enum record_key)i), record_key((enum record_key)j)) != 0,
                "%s twice", record_key((enum record_key)i));
  }
  json_t *r = json_loads("{\"record\":\"run\",\"ok\":true,\"tokens\":{\"processed\":12},"
                         "\"ceiling\":{\"bytes_per_token\":1.5e6,\"ceiling_tok_s\":null},"
                         "\"model\":{\"name\":\"m\"}}",
                         0, NULL);
  CHECK(r != NULL);
  CHECK_STR(record_str(r, RK_RECORD), "run");
  CHECK(record_true(r, RK_OK));
  CHECK(!record_true(r, RK_WARMUP));
  CHECK_EQ_INT(record_int(r, RK_TOKENS_PROCESSED, -1), 12);
  CHECK_EQ_INT(record_int(r, RK_TOKENS_PROMPT, -1), -1);
  CHECK_NEAR(record_num(r, RK_CEILING_BYTES_PER_TOKEN), 1.5e6, 0);
  CHECK(isnan(record_num(r, RK_CEILING_TOK_S))); /* null */
  CHECK(isnan(record_num(r, RK_MODEL_NAME)));    /* not a number */
  CHECK_STR(record_str(r, RK_MODEL_NAME), "m");
  CHECK(record_get(r, RK_SERVER_PROMPT_N) == NULL);
  CHECK(record_get(NULL, RK_RECORD) == NULL);
  json_decref(r);
}

static void test_metrics(void) {
  for (int m = 0; m < METRIC_COUNT; m++) {
    const char *name = record_metric_name((enum record_metric)m);
    CHECK_EQ_INT(record_metric_from_name(name), m);
    const bool ms = strcmp(record_metric_unit((enum record_metric)m), "ms") == 0;
    CHECK(ms == record_metric_lower_is_better((enum record_metric)m));
    CHECK(ms == (strcmp(record_metric_quantity((enum record_metric)m), "FX") == 0));
  }
  CHECK_STR(record_metric_quantity(METRIC_PREFILL_TOK_S), "PF");
  CHECK_STR(record_metric_quantity(METRIC_DECODE_TOK_S_CLIENT), "DC");
  CHECK_EQ_INT(record_metric_from_name("nope"), METRIC_COUNT);
  CHECK_EQ_INT(record_metric_from_name(NULL), METRIC_COUNT);
  CHECK_STR(record_metric_name(METRIC_COUNT), "");
}

void tm_run_tests(void) {
  TM_RUN(test_paths_and_lookups);
  TM_RUN(test_metrics);
}
