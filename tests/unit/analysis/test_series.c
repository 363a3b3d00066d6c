/* test_series: results files -> series (series.h): which runs count, keys,
 * order across invocations, ceiling parts, server metrics and exclusions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/series.h"
#include "tm_test.h"

static const char *write_file(const char *name, const char *text) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return path;
}

static int load(const char *text, struct results *r, struct series_set *set) {
  const char *path = write_file("in.jsonl", text);
  struct tm_err err = {{0}};
  const char *paths[] = {path};
  if (results_load(paths, 1, r, &err)) {
    fprintf(stderr, "load: %s\n", err.msg);
    return -1;
  }
  if (series_extract(r, set, &err)) {
    fprintf(stderr, "extract: %s\n", err.msg);
    results_free(r);
    return -1;
  }
  return 0;
}

#define ENG_RUN(id, test, toks, phase, idx, warm, ms, rate)                                  \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"" id "\",\"backend\":\"engine\","        \
  "\"target\":\"in-process\",\"model\":{\"name\":\"m.gguf\",\"file\":\"m.gguf\","          \
  "\"arch\":\"qwen3\",\"type\":\"Q8_0\"},\"test\":\"" test "\",\"phase\":\"" phase "\","   \
  "\"threads\":2,\"depth\":0,\"index\":" idx ",\"warmup\":" warm ",\"ok\":true,"           \
  "\"tokens\":" toks ",\"ms\":" ms ",\"rate_tok_s\":" rate ","                              \
  "\"ceiling\":{\"ceiling_tok_s\":100.0,\"read_bandwidth_bytes_s\":1e10,"                  \
  "\"bytes_per_token\":1e8}}\n"

static const char *engine_text =
    "{\"record\":\"identity\",\"schema\":1,\"id\":\"A1\",\"backend\":\"engine\"}\n"
    ENG_RUN("A1", "tg32", "32", "decode", "null", "true", "900", "35.5")
    ENG_RUN("A1", "tg32", "32", "decode", "0", "false", "800", "40")
    ENG_RUN("A1", "tg32", "32", "decode", "1", "false", "820", "39")
    ENG_RUN("A1", "pp16", "16", "prefill", "0", "false", "100", "160")
    "{\"record\":\"identity\",\"schema\":1,\"id\":\"A2\",\"backend\":\"engine\"}\n"
    ENG_RUN("A2", "tg32", "32", "decode", "0", "false", "840", "38")
    "{\"record\":\"end\",\"schema\":1,\"identity\":\"A2\"}\n";

static void test_engine_series(void) {
  struct results r;
  struct series_set set;
  if (load(engine_text, &r, &set)) {
    CHECK(0);
    return;
  }
  CHECK_EQ_INT(set.n, 4); /* decode_tok_s, decode_ms, prefill_tok_s, prefill_ms */
  const char *key = "engine | m.gguf | Q8_0 | tg32 | t2 | d0";
  const struct series *s = series_find(&set, key, METRIC_DECODE_TOK_S);
  CHECK(s != NULL);
  if (s) {
    /* warm-up (35.5) out; the second invocation's run joins, in file order */
    CHECK_EQ_INT(s->n, 3);
    if (s->n == 3) {
      CHECK_NEAR(s->values[0], 40, 0);
      CHECK_NEAR(s->values[1], 39, 0);
      CHECK_NEAR(s->values[2], 38, 0);
    }
    CHECK_STR(s->quantity, "DC");
    CHECK_STR(s->unit, "tok/s");
    CHECK_STR(s->backend, "engine");
    CHECK_STR(s->type, "Q8_0");
    CHECK_STR(s->test, "tg32");
    CHECK_EQ_INT(s->threads, 2);
    CHECK_EQ_INT(s->depth, 0);
    CHECK_EQ_INT(s->gen_tokens, 32);
    CHECK_EQ_INT(s->prompt_tokens, -1);
    CHECK_NEAR(s->ceiling, 100, 0);
    CHECK_NEAR(s->bytes_per_token, 1e8, 0);
    CHECK_NEAR(s->read_bandwidth_bytes_s, 1e10, 0);
    CHECK(isnan(s->flops_per_token));
    CHECK_STR(s->identity, "A1");
  }
  const struct series *ms = series_find(&set, key, METRIC_DECODE_MS);
  CHECK(ms && ms->n == 3 && ms->values[0] == 800 && !strcmp(ms->quantity, "FX") &&
        !strcmp(ms->unit, "ms") && isnan(ms->ceiling));
  const struct series *pf =
      series_find(&set, "engine | m.gguf | Q8_0 | pp16 | t2 | d0", METRIC_PREFILL_TOK_S);
  CHECK(pf && pf->n == 1 && pf->values[0] == 160 && pf->prompt_tokens == 16 &&
        !strcmp(pf->quantity, "PF"));
  CHECK(series_find(&set, key, METRIC_PREFILL_TOK_S) == NULL);
  CHECK(series_find(&set, "nope", METRIC_DECODE_TOK_S) == NULL);
  series_set_free(&set);
  results_free(&r);
}

/* Rule 5 on reading: an in-process tg of fewer than 24 tokens gives no decode
 * rate even when its record carries one (written before the in-process bench
 * applied the rule, or a llama-bench import); its time stays. tg24 keeps its
 * rate: 24 is the first count with one. */
static void test_few_tokens_blank(void) {
  struct results r;
  struct series_set set;
  const char *text =
      "{\"record\":\"identity\",\"schema\":1,\"id\":\"F\",\"backend\":\"engine\"}\n"
      ENG_RUN("F", "tg16", "16", "decode", "0", "false", "100", "160")
      ENG_RUN("F", "tg23", "23", "decode", "0", "false", "100", "230")
      ENG_RUN("F", "tg24", "24", "decode", "0", "false", "100", "240");
  if (load(text, &r, &set)) {
    CHECK(0);
    return;
  }
  CHECK(series_find(&set, "engine | m.gguf | Q8_0 | tg16 | t2 | d0", METRIC_DECODE_TOK_S) == NULL);
  CHECK(series_find(&set, "engine | m.gguf | Q8_0 | tg23 | t2 | d0", METRIC_DECODE_TOK_S) == NULL);
  const struct series *ms =
      series_find(&set, "engine | m.gguf | Q8_0 | tg16 | t2 | d0", METRIC_DECODE_MS);
  CHECK(ms && ms->n == 1 && ms->values[0] == 100);
  const struct series *dc =
      series_find(&set, "engine | m.gguf | Q8_0 | tg24 | t2 | d0", METRIC_DECODE_TOK_S);
  CHECK(dc && dc->n == 1 && dc->values[0] == 240);
  series_set_free(&set);
  results_free(&r);
}

/* The default pair's label already names the type: the key does not repeat it. */
static void test_type_in_label(void) {
  struct results r;
  struct series_set set;
  const char *text =
      "{\"record\":\"identity\",\"schema\":1,\"id\":\"X\"}\n"
      "{\"record\":\"run\",\"schema\":1,\"identity\":\"X\",\"backend\":\"engine\","
      "\"model\":{\"name\":\"qwen3-0.6b shape, synthetic, Q4_0\",\"type\":\"Q4_0\"},"
      "\"test\":\"tg128\",\"threads\":2,\"depth\":0,\"warmup\":false,\"ok\":true,"
      "\"ms\":1000,\"rate_tok_s\":128,\"ceiling\":null}\n";
  if (load(text, &r, &set)) {
    CHECK(0);
    return;
  }
  CHECK_EQ_INT(set.n, 2);
  if (set.n) {
    CHECK_STR(set.s[0].key, "engine | qwen3-0.6b shape, synthetic, Q4_0 | tg128 | t2 | d0");
    CHECK(isnan(set.s[0].ceiling) && isnan(set.s[0].bytes_per_token));
    CHECK_STR(set.s[0].target, "in-process");
  }
  series_set_free(&set);
  results_free(&r);
}

#define SRV_RUN(wl, extra, ttft, pf, dc, dcc, processed, excl)                               \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"S1\",\"workload\":\"" wl "\","           \
  "\"backend\":\"llamacpp\",\"target\":\"http://h:1\",\"model\":\"qwen3\","                \
  "\"max_tokens\":400,\"settings\":{\"prompt_tokens_target\":50,\"max_tokens\":400},"       \
  extra "\"tokens\":{\"processed\":" processed "},\"client\":{\"ttft_ms\":" ttft "},"      \
  "\"rates\":{\"prefill_tok_s\":{\"headline\":" pf "},\"decode_tok_s\":{\"headline\":" dc   \
  ",\"client\":" dcc "}},\"cache\":{\"prefill_excluded\":" excl "},"                        \
  "\"ceiling\":{\"decode_ceiling_tok_s\":80,\"prefill_ceiling_tok_s\":900,"                 \
  "\"read_bandwidth_bytes_s\":2e10}}\n"

static void test_server_series(void) {
  struct results r;
  struct series_set set;
  const char *text =
      "{\"record\":\"identity\",\"schema\":1,\"id\":\"S1\",\"backend\":\"llamacpp\","
      "\"target\":\"http://h:1\",\"model\":{\"name\":\"qwen3\",\"type\":\"Q4_K\","
      "\"bytes_per_token\":250000000}}\n"
      /* calibration, warm-up, failed, cold: not in the timed figures */
      SRV_RUN("generate", "\"ok\":true,\"warmup\":false,\"calibration\":true,\"cold\":false,",
              "1", "1", "1", "1", "50", "false")
      SRV_RUN("generate", "\"ok\":true,\"warmup\":true,\"calibration\":false,\"cold\":false,",
              "2", "2", "2", "2", "50", "false")
      SRV_RUN("generate", "\"ok\":false,\"warmup\":false,\"calibration\":false,\"cold\":false,",
              "3", "3", "3", "3", "50", "false")
      SRV_RUN("generate", "\"ok\":true,\"warmup\":false,\"calibration\":false,\"cold\":true,",
              "900", "4", "4", "4", "50", "false")
      /* timed */
      SRV_RUN("generate", "\"ok\":true,\"warmup\":false,\"calibration\":false,\"cold\":false,",
              "190", "356", "30", "29", "52", "false")
      SRV_RUN("generate", "\"ok\":true,\"warmup\":false,\"calibration\":false,\"cold\":false,",
              "195", "350", "31", "null", "54", "false")
      /* a cache hit: prefill and TTFT excluded, decode kept */
      SRV_RUN("generate", "\"ok\":true,\"warmup\":false,\"calibration\":false,\"cold\":false,",
              "20", "5000", "32", "31", "4", "true")
      SRV_RUN("custom", "\"ok\":true,\"warmup\":false,\"calibration\":false,\"cold\":false,",
              "100", "400", "33", "33", "50", "false");
  if (load(text, &r, &set)) {
    CHECK(0);
    return;
  }
  const char *key = "llamacpp | http://h:1 | qwen3 | generate";
  const struct series *t = series_find(&set, key, METRIC_TTFT_MS);
  CHECK(t && t->n == 2 && t->values[0] == 190 && t->values[1] == 195);
  if (t) {
    CHECK_STR(t->quantity, "FX");
    CHECK_EQ_INT(t->prompt_tokens, 53); /* median of processed 52, 54 */
    CHECK_EQ_INT(t->gen_tokens, 400);
    CHECK_EQ_INT(t->threads, -1);
    CHECK_STR(t->type, "Q4_K");
  }
  const struct series *pf = series_find(&set, key, METRIC_PREFILL_TOK_S);
  CHECK(pf && pf->n == 2 && pf->values[0] == 356 && pf->ceiling == 900);
  const struct series *dc = series_find(&set, key, METRIC_DECODE_TOK_S);
  CHECK(dc && dc->n == 3 && dc->values[2] == 32 && dc->ceiling == 80);
  if (dc) {
    CHECK_NEAR(dc->bytes_per_token, 250000000, 0);
    CHECK_NEAR(dc->read_bandwidth_bytes_s, 2e10, 0);
  }
  const struct series *dcc = series_find(&set, key, METRIC_DECODE_TOK_S_CLIENT);
  CHECK(dcc && dcc->n == 2 && dcc->values[0] == 29 && dcc->values[1] == 31); /* null skipped */
  const struct series *cold = series_find(&set, key, METRIC_COLD_TTFT_MS);
  CHECK(cold && cold->n == 1 && cold->values[0] == 900);
  const struct series *cu =
      series_find(&set, "llamacpp | http://h:1 | qwen3 | custom | p50 n400", METRIC_TTFT_MS);
  CHECK(cu && cu->n == 1 && cu->values[0] == 100);
  series_set_free(&set);
  results_free(&r);
}

/* One decode run of configuration "m.gguf tg32 t2" with its own ceiling,
 * as the engine writes them (bandwidth read around each run); its time is
 * what 32 tokens take at that rate (the reader holds them to agree). */
#define MS_AT_70 "457.142857143"
#define MS_AT_71 "450.704225352"
#define MS_AT_69 "463.768115942"
#define MS_AT_72 "444.444444444"
#define CEIL_RUN(id, rate, ceil, bw, bpt)                                                  \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"" id "\",\"backend\":\"engine\","        \
  "\"model\":{\"name\":\"m.gguf\",\"type\":\"Q8_0\"},\"test\":\"tg32\",\"threads\":2,"      \
  "\"depth\":0,\"warmup\":false,\"ok\":true,\"ms\":" MS_AT_##rate ",\"rate_tok_s\":" #rate "," \
  "\"ceiling\":{\"ceiling_tok_s\":" ceil ",\"read_bandwidth_bytes_s\":" bw ","                  \
  "\"bytes_per_token\":" bpt "}}\n"
#define CEIL_ID(id, cpu)                                                                    \
  "{\"record\":\"identity\",\"schema\":1,\"id\":\"" id "\",\"backend\":\"engine\","          \
  "\"machine\":{\"cpu\":\"" cpu "\"}}\n"

/* The ceiling of a configuration is the mean over all its runs, whatever the
 * order of the files (it was the first run's: `report i1 i2` said 92%,
 * `report i2 i1` 73%), with the spread and mixed machines or models said. */
static void test_ceiling_over_all_runs(void) {
  const char *one = CEIL_ID("I1", "CPU X") CEIL_RUN("I1", 70, "76", "7.6e9", "1e8")
      CEIL_RUN("I1", 71, "76", "7.6e9", "1e8");
  const char *two = CEIL_ID("I2", "CPU X") CEIL_RUN("I2", 69, "96", "9.6e9", "1e8")
      CEIL_RUN("I2", 70, "96", "9.6e9", "1e8");
  const char *key = "engine | m.gguf | Q8_0 | tg32 | t2 | d0";
  for (int order = 0; order < 2; order++) {
    const char *p1 = write_file(order ? "b.jsonl" : "a.jsonl", order ? two : one);
    const char *p2 = write_file(order ? "a.jsonl" : "b.jsonl", order ? one : two);
    const char *paths[] = {p1, p2};
    struct results r;
    struct series_set set;
    struct tm_err err = {{0}};
    if (results_load(paths, 2, &r, &err) || series_extract(&r, &set, &err)) {
      CHECK_MSG(0, "%s", err.msg);
      return;
    }
    const struct series *s = series_find(&set, key, METRIC_DECODE_TOK_S);
    CHECK(s && s->n == 4);
    if (s) {
      CHECK_NEAR(s->ceiling, 86, 1e-9); /* (76 + 76 + 96 + 96) / 4, in either order */
      CHECK_NEAR(s->read_bandwidth_bytes_s, 8.6e9, 1);
      CHECK_NEAR(s->bytes_per_token, 1e8, 0);
      CHECK_EQ_INT(s->ceiling_n, 4);
      CHECK_NEAR(s->ceiling_min, 76, 0);
      CHECK_NEAR(s->ceiling_max, 96, 0);
      CHECK(!s->ceiling_machines_differ && !s->ceiling_models_differ);
      char note[200];
      CHECK_EQ_INT(series_ceiling_note(s, note, sizeof note), 1);
      CHECK_STR(note, "the runs' ceilings spread 26% (76.0 to 96.0 tok/s)");
    }
    /* the time metric carries the parts too (compare predicts times) */
    const struct series *ms = series_find(&set, key, METRIC_DECODE_MS);
    CHECK(ms && isnan(ms->ceiling) && fabs(ms->read_bandwidth_bytes_s - 8.6e9) < 1);
    series_set_free(&set);
    results_free(&r);
  }
  /* within 5%, one machine, one model: nothing to say */
  struct results r;
  struct series_set set;
  if (load(CEIL_ID("I1", "CPU X") CEIL_RUN("I1", 70, "76", "7.6e9", "1e8")
               CEIL_RUN("I1", 71, "79", "7.9e9", "1e8"), &r, &set)) {
    CHECK(0);
    return;
  }
  const struct series *s = series_find(&set, key, METRIC_DECODE_TOK_S);
  char note[200] = "x";
  CHECK(s && series_ceiling_note(s, note, sizeof note) == 0 && note[0] == 0);
  CHECK(s && fabs(s->ceiling - 77.5) < 1e-9);
  series_set_free(&set);
  results_free(&r);
  /* another machine, another model file, a run without a ceiling: each said */
  if (load(CEIL_ID("I1", "CPU X") CEIL_RUN("I1", 70, "76", "7.6e9", "1e8")
               CEIL_ID("I2", "CPU Y") CEIL_RUN("I2", 71, "77", "7.7e9", "1e8")
               CEIL_RUN("I2", 72, "76", "9.12e9", "1.2e8")
               "{\"record\":\"run\",\"schema\":1,\"identity\":\"I2\",\"backend\":\"engine\","
               "\"model\":{\"name\":\"m.gguf\",\"type\":\"Q8_0\"},\"test\":\"tg32\","
               "\"threads\":2,\"depth\":0,\"warmup\":false,\"ok\":true,\"ms\":438.356164384,"
               "\"rate_tok_s\":73,\"ceiling\":null}\n",
           &r, &set)) {
    CHECK(0);
    return;
  }
  s = series_find(&set, key, METRIC_DECODE_TOK_S);
  CHECK(s && s->n == 4 && s->ceiling_n == 3);
  CHECK(s && s->ceiling_machines_differ && s->ceiling_models_differ);
  CHECK(s && series_ceiling_note(s, note, sizeof note) == 1);
  CHECK_STR(note, "the runs come from different machines; the runs' models differ (bytes per "
                  "token); 3 of 4 runs carry a ceiling");
  series_set_free(&set);
  results_free(&r);
}

static void test_empty(void) {
  struct results r;
  struct series_set set;
  if (load("\n{\"record\":\"future-kind\"}\n", &r, &set)) {
    CHECK(0);
    return;
  }
  CHECK_EQ_INT(set.n, 0);
  CHECK(series_find(&set, "x", METRIC_DECODE_TOK_S) == NULL);
  series_set_free(&set);
  series_set_free(&set); /* idempotent */
  results_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(test_engine_series);
  TM_RUN(test_few_tokens_blank);
  TM_RUN(test_type_in_label);
  TM_RUN(test_server_series);
  TM_RUN(test_ceiling_over_all_runs);
  TM_RUN(test_empty);
}
