/* Tests of the run / summary / end records (src/bench/records_bench.h):
 * hand-made run_result, run_metrics and bench_summary in, exact JSON out. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench/records_bench.h"
#include "tm_test.h"

#define T_SEND 5000000000ull /* ns */

static json_t *get(json_t *o, const char *path) {
  /* "a.b.c" */
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  json_t *cur = o;
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && cur; k = strtok_r(NULL, ".", &save))
    cur = json_object_get(cur, k);
  return cur;
}
static double real_at(json_t *o, const char *path) { return json_number_value(get(o, path)); }
static long long int_at(json_t *o, const char *path) { return json_integer_value(get(o, path)); }
static const char *str_at(json_t *o, const char *path) { return json_string_value(get(o, path)); }

/* Round trip through the written line, as a reader of the file sees it. */
static json_t *reparse(json_t *built) {
  char *line = record_dump(built);
  json_decref(built);
  if (!line) return NULL;
  json_error_t je;
  json_t *j = json_loads(line, 0, &je);
  free(line);
  return j;
}

/* Every counter/timer absent, like run_result_init (not linked here). */
static void result_blank(struct run_result *r) {
  memset(r, 0, sizeof *r);
  r->prompt_tokens = r->cached_tokens = r->completion_tokens = r->reasoning_tokens = -1;
  r->timings_cache_n = r->timings_prompt_n = r->timings_predicted_n = -1;
  r->draft_n = r->draft_n_accepted = -1;
  r->timings_prompt_ms = r->timings_predicted_ms = NAN;
  r->ollama_load_ms = r->ollama_prompt_eval_ms = r->ollama_eval_ms = r->ollama_total_ms = NAN;
  r->lmstudio_ttft_s = r->lmstudio_tok_s = r->lmstudio_generation_s = NAN;
}

static char g_text[] = "thinkingHello sk-live-0123456789abcdefXYZ world";
static struct run_chunk g_chunks[3];

/* A 3-chunk llama.cpp run: first chunk reasoning, two answer chunks. */
static void make_run(struct run_result *r, struct run_metrics *m) {
  result_blank(r);
  r->t_start_ns = T_SEND - 2000000;
  r->t_send_ns = T_SEND;
  r->t_headers_ns = T_SEND + 150000000;      /* 150 ms */
  r->t_end_ns = T_SEND + 13713500000ull;     /* 13713.5 ms */
  r->connection_reused = true;
  r->http_status = 200;
  r->n_events = 7;
  g_chunks[0] = (struct run_chunk){.t_ns = T_SEND + 196200000, .field = CHUNK_REASONING,
                                   .text_off = 0, .text_len = 8};
  g_chunks[1] = (struct run_chunk){.t_ns = T_SEND + 229812345, .field = CHUNK_CONTENT,
                                   .text_off = 8, .text_len = 5};
  g_chunks[2] = (struct run_chunk){.t_ns = T_SEND + 13712000000ull, .field = CHUNK_CONTENT,
                                   .text_off = 13, .text_len = (uint32_t)strlen(g_text) - 13};
  r->chunks = g_chunks;
  r->n_chunks = 3;
  r->text = g_text;
  r->text_len = strlen(g_text);
  r->prompt_tokens = 54;
  r->cached_tokens = 0;
  r->completion_tokens = 400;
  r->timings_cache_n = 0;
  r->timings_prompt_n = 54;
  r->timings_predicted_n = 400;
  r->timings_prompt_ms = 151.7;
  r->timings_predicted_ms = 13400.1;
  snprintf(r->finish_reason, sizeof r->finish_reason, "length");
  snprintf(r->server_model, sizeof r->server_model, "models/q3-0.6b-Q4_0.gguf");
  snprintf(r->system_fingerprint, sizeof r->system_fingerprint, "b1-80fb11a");

  memset(m, 0, sizeof *m);
  m->ok = true;
  m->prompt_tokens = 54;
  m->cached_tokens = 0;
  m->prompt_processed = 54;
  m->completion_tokens = 400;
  m->reasoning_tokens = 1;
  m->reasoning_from_client = true;
  m->client_chunks = 3;
  m->client_reasoning_chunks = 1;
  m->client_answer_chunks = 2;
  m->count_mismatch = true;
  m->ttft_ms = 196.2;
  m->last_ms = 13712.0;
  m->decode_span_ms = 13515.8;
  m->server_prompt_ms = 151.7;
  m->server_predicted_ms = 13400.1;
  m->server_load_ms = NAN;
  m->connect_ms = NAN;
  m->prefill_server = 356.0;
  m->prefill_client = 275.2;
  m->decode_server = NAN; /* blank: must become null */
  m->decode_client = 29.5;
  m->prefill_headline = 356.0;
  m->decode_headline = 29.5;
  m->prefill_source = "server";
  m->decode_source = "client";
  m->ttft_gap_ms = 44.5;
  m->n_segments = 2;
  m->segments[0] = (struct decode_segment){1, 50, 36.6};
  m->segments[1] = (struct decode_segment){51, 400, 29.6};
  m->stream = STREAM_TOKEN_BY_TOKEN;
  m->tokens_per_chunk = 133.25;
  m->median_gap_ms = 33.6;
  m->max_gap_ms = 13482.2;
  m->cache = CACHE_CLEAN;
}

static void test_run_record(void) {
  struct run_result r;
  struct run_metrics m;
  make_run(&r, &m);
  json_t *settings = json_pack("{s:i, s:i, s:b}", "threads", 2, "max_tokens", 400, "nonce", 1);
  struct record_ceiling c = {.decode_ceiling_tok_s = 87.6, .prefill_ceiling_tok_s = NAN,
                             .read_bandwidth_bytes_s = 32.9e9};
  struct record_run_in in = {.identity = "7f3a", .workload = "generate", .index = 2,
                             .backend = "openai", .target = "http://127.0.0.1:8080",
                             .model = "m", .settings = settings, .max_tokens = 400,
                             .ceiling = &c};
  json_t *j = reparse(record_run_build(&in, &r, &m));
  json_decref(settings);
  CHECK(j != NULL);
  if (!j) return;
  CHECK_STR(str_at(j, "record"), "run");
  CHECK_EQ_INT(int_at(j, "schema"), RECORD_SCHEMA);
  CHECK_STR(str_at(j, "identity"), "7f3a");
  CHECK_EQ_INT(strlen(str_at(j, "time")), 20);
  CHECK_STR(str_at(j, "workload"), "generate");
  CHECK_EQ_INT(int_at(j, "index"), 2);
  CHECK(json_is_false(get(j, "warmup")) && json_is_false(get(j, "cold")));
  CHECK(json_is_false(get(j, "calibration")));
  CHECK_STR(str_at(j, "backend"), "openai");
  CHECK_STR(str_at(j, "target"), "http://127.0.0.1:8080");
  CHECK_STR(str_at(j, "model"), "m");
  CHECK_EQ_INT(int_at(j, "settings.threads"), 2);
  CHECK_EQ_INT(int_at(j, "max_tokens"), 400);
  CHECK(json_is_true(get(j, "ok")));
  CHECK(json_is_null(get(j, "error")));

  CHECK_EQ_INT(int_at(j, "tokens.prompt"), 54);
  CHECK_EQ_INT(int_at(j, "tokens.cached"), 0);
  CHECK_EQ_INT(int_at(j, "tokens.processed"), 54);
  CHECK_EQ_INT(int_at(j, "tokens.completion"), 400);
  CHECK_EQ_INT(int_at(j, "tokens.reasoning"), 1);
  CHECK_STR(str_at(j, "tokens.reasoning_source"), "client");
  CHECK_EQ_INT(int_at(j, "tokens.client_chunks"), 3);
  CHECK_EQ_INT(int_at(j, "tokens.text_bytes"), (long long)strlen(g_text));

  CHECK_NEAR(real_at(j, "client.ttft_ms"), 196.2, 0);
  CHECK_NEAR(real_at(j, "client.last_ms"), 13712.0, 0);
  CHECK_NEAR(real_at(j, "client.decode_span_ms"), 13515.8, 0);
  CHECK_NEAR(real_at(j, "client.headers_ms"), 150.0, 0);
  CHECK_NEAR(real_at(j, "client.end_ms"), 13713.5, 0);
  CHECK(json_is_true(get(j, "client.connection_reused")));
  CHECK(json_is_null(get(j, "client.connect_ms")));
  CHECK_EQ_INT(int_at(j, "client.http_status"), 200);
  CHECK_EQ_INT(int_at(j, "client.events"), 7);
  json_t *arr = get(j, "client.chunk_arrival_ms");
  CHECK_EQ_INT(json_array_size(arr), 3);
  CHECK_NEAR(json_number_value(json_array_get(arr, 0)), 196.2, 0);
  CHECK_NEAR(json_number_value(json_array_get(arr, 1)), 229.812, 0); /* to the microsecond */
  CHECK_NEAR(json_number_value(json_array_get(arr, 2)), 13712.0, 0);
  json_t *reas = get(j, "client.reasoning_chunks");
  CHECK_EQ_INT(json_array_size(reas), 1);
  CHECK_EQ_INT(json_integer_value(json_array_get(reas, 0)), 0);
  CHECK(json_is_null(get(j, "client.chunk_tokens")));

  CHECK_NEAR(real_at(j, "server.prompt_ms"), 151.7, 0);
  CHECK_NEAR(real_at(j, "server.predicted_ms"), 13400.1, 0);
  CHECK(json_is_null(get(j, "server.load_ms")));
  CHECK(json_is_null(get(j, "server.total_ms")));
  CHECK_EQ_INT(int_at(j, "server.cache_n"), 0);
  CHECK_EQ_INT(int_at(j, "server.predicted_n"), 400);
  CHECK(json_is_null(get(j, "server.draft_n")));
  CHECK_STR(str_at(j, "server.finish_reason"), "length");
  CHECK_STR(str_at(j, "server.system_fingerprint"), "b1-80fb11a");
  CHECK(json_is_null(get(j, "server.lmstudio")));

  CHECK_NEAR(real_at(j, "rates.prefill_tok_s.server"), 356.0, 0);
  CHECK_NEAR(real_at(j, "rates.prefill_tok_s.client"), 275.2, 0);
  CHECK_NEAR(real_at(j, "rates.prefill_tok_s.headline"), 356.0, 0);
  CHECK_STR(str_at(j, "rates.prefill_tok_s.source"), "server");
  CHECK(json_is_null(get(j, "rates.decode_tok_s.server"))); /* NaN -> null */
  CHECK_NEAR(real_at(j, "rates.decode_tok_s.client"), 29.5, 0);
  CHECK_STR(str_at(j, "rates.decode_tok_s.source"), "client");
  json_t *seg = get(j, "rates.decode_by_segment");
  CHECK_EQ_INT(json_array_size(seg), 2);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(seg, 1), "from")), 51);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(seg, 1), "to")), 400);
  CHECK_NEAR(json_number_value(json_object_get(json_array_get(seg, 0), "tok_s")), 36.6, 0);
  CHECK_NEAR(real_at(j, "ttft_gap_ms"), 44.5, 0);

  CHECK_STR(str_at(j, "stream.verdict"), "stream:token-by-token");
  CHECK_NEAR(real_at(j, "stream.tokens_per_chunk"), 133.25, 0);
  CHECK_STR(str_at(j, "cache.verdict"), "cache:clean");
  CHECK(json_is_false(get(j, "cache.prefill_excluded")));

  CHECK_NEAR(real_at(j, "ceiling.decode_ceiling_tok_s"), 87.6, 0);
  CHECK(json_is_null(get(j, "ceiling.prefill_ceiling_tok_s")));
  CHECK_NEAR(real_at(j, "percent_of_ceiling.decode"), 100.0 * 29.5 / 87.6, 1e-9);
  CHECK(json_is_null(get(j, "percent_of_ceiling.prefill")));

  json_t *v = get(j, "verdicts");
  CHECK_EQ_INT(json_array_size(v), 3);
  CHECK_STR(json_string_value(json_array_get(v, 0)), "cache:clean");
  CHECK_STR(json_string_value(json_array_get(v, 1)), "stream:token-by-token");
  CHECK_STR(json_string_value(json_array_get(v, 2)), RECORD_VERDICT_COUNT_MISMATCH);
  json_decref(j);
}

/* The API key is not an input of any builder. A key-like string that reached
 * a run_result anyway (in the generated text, an error message, the target)
 * is nowhere in the record. */
static void test_run_record_has_no_key(void) {
  struct run_result r;
  struct run_metrics m;
  make_run(&r, &m);
  r.error = RUN_ERR_HTTP;
  r.http_status = 401;
  snprintf(r.error_msg, sizeof r.error_msg,
           "HTTP 401: Incorrect API key provided: sk-live-0123456789abcdefXYZ.");
  m.ok = false;
  struct record_run_in in = {.identity = "id", .workload = "classify", .backend = "openai",
                             .target = "https://me:sk-live-0123456789abcdefXYZ@api.example.com/v1"
                                       "?key=sk-live-0123456789abcdefXYZ"};
  json_t *built = record_run_build(&in, &r, &m);
  char *line = record_dump(built);
  CHECK(line != NULL);
  if (line) {
    CHECK_MSG(strstr(line, "0123456789abcdef") == NULL, "key found in: %s", line);
    CHECK_CONTAINS(line, "\"kind\":\"http\"");
    CHECK_CONTAINS(line, "Incorrect API key provided: [redacted].");
    CHECK_CONTAINS(line, "\"target\":\"https://api.example.com/v1\"");
    CHECK_CONTAINS(line, "\"ok\":false");
  }
  free(line);
  json_decref(built);
}

/* A checked answer in its run record: present only when given, its strings
 * cut at 1,000 bytes on a character boundary and scrubbed of key shapes. */
static void test_run_record_answer(void) {
  struct run_result r;
  struct run_metrics m;
  make_run(&r, &m);
  struct record_run_in in = {.identity = "id", .workload = "panel", .backend = "openai",
                             .target = "http://127.0.0.1:1"};
  json_t *j = reparse(record_run_build(&in, &r, &m));
  CHECK(j && json_object_get(j, "answer") == NULL);
  json_decref(j);
  char long_answer[1600];
  size_t k = 0;
  while (k + 2 < 1500) { /* "ş" is 2 bytes: a cut could fall inside one */
    long_answer[k++] = (char)0xC5;
    long_answer[k++] = (char)0x9F;
  }
  long_answer[k] = '\0';
  json_t *a = json_pack("{s:s, s:s, s:b, s:s, s:s, s:n}", "verdict", "wrong", "kind", "contains",
                        "exact", 0, "answer", long_answer, "expected",
                        "my key is sk-live-0123456789abcdefXYZ", "reason");
  in.answer = a;
  j = reparse(record_run_build(&in, &r, &m));
  json_t *got = j ? json_object_get(j, "answer") : NULL;
  CHECK(got != NULL);
  if (got) {
    CHECK_STR(json_string_value(json_object_get(got, "verdict")), "wrong");
    const char *ans = json_string_value(json_object_get(got, "answer"));
    CHECK(ans && strlen(ans) <= 1003 && strlen(ans) >= 990);
    CHECK(ans && !strcmp(ans + strlen(ans) - 3, "..."));
    CHECK(ans && ((unsigned char)ans[strlen(ans) - 4] == 0x9F)); /* whole characters only */
    const char *ex = json_string_value(json_object_get(got, "expected"));
    CHECK(ex && strstr(ex, "0123456789abcdef") == NULL && strstr(ex, "[redacted]") != NULL);
    CHECK(json_is_null(json_object_get(got, "reason")));
  }
  json_decref(j);
  json_decref(a);
}

/* A run that failed before anything arrived: nulls and empty lists. */
static void test_run_record_failed_early(void) {
  struct run_result r;
  result_blank(&r);
  r.t_start_ns = T_SEND;
  r.error = RUN_ERR_CONNECT;
  snprintf(r.error_msg, sizeof r.error_msg, "connection refused: 127.0.0.1:9");
  struct run_metrics m;
  memset(&m, 0, sizeof m);
  m.prompt_tokens = m.cached_tokens = m.prompt_processed = m.completion_tokens = -1;
  m.reasoning_tokens = -1;
  m.ttft_ms = m.last_ms = m.decode_span_ms = NAN;
  m.server_prompt_ms = m.server_predicted_ms = m.server_load_ms = m.connect_ms = NAN;
  m.prefill_server = m.prefill_client = m.decode_server = m.decode_client = NAN;
  m.prefill_headline = m.decode_headline = m.ttft_gap_ms = NAN;
  m.tokens_per_chunk = m.median_gap_ms = m.max_gap_ms = NAN;
  m.prefill_source = m.decode_source = "";
  struct record_run_in in = {.identity = "id", .workload = "generate", .warmup = true,
                             .cold = true};
  json_t *j = reparse(record_run_build(&in, &r, &m));
  CHECK(j != NULL);
  if (!j) return;
  CHECK(json_is_false(get(j, "ok")));
  CHECK_STR(str_at(j, "error.kind"), "connect");
  CHECK_STR(str_at(j, "error.message"), "connection refused: 127.0.0.1:9");
  CHECK(json_is_true(get(j, "warmup")) && json_is_true(get(j, "cold")));
  CHECK(json_is_null(get(j, "tokens.prompt")));
  CHECK(json_is_null(get(j, "tokens.reasoning_source")));
  CHECK(json_is_null(get(j, "client.ttft_ms")));
  CHECK(json_is_null(get(j, "client.http_status")));
  CHECK_EQ_INT(json_array_size(get(j, "client.chunk_arrival_ms")), 0);
  CHECK(json_is_null(get(j, "rates.prefill_tok_s.source")));
  CHECK(json_is_null(get(j, "ceiling")));
  CHECK(json_is_null(get(j, "percent_of_ceiling")));
  CHECK(json_is_null(get(j, "max_tokens")));
  CHECK(json_is_object(get(j, "settings")));
  json_decref(j);
}

static void fill_stats(struct stats_summary *s, size_t n, double med, double mean, double sd,
                       double mn, double mx) {
  *s = (struct stats_summary){n, med, mean, sd, mn, mx};
}

static void test_summary_record(void) {
  struct bench_summary s;
  memset(&s, 0, sizeof s);
  snprintf(s.workload, sizeof s.workload, "generate");
  s.n_runs = 4;
  s.n_ok = 3;
  s.n_failed = 1;
  s.failed_by_kind[RUN_ERR_IDLE_TIMEOUT] = 1;
  s.n_cache_hits = 1;
  s.n_count_mismatch = 2;
  fill_stats(&s.prompt_tokens, 3, 54, 54, 0, 54, 54);
  fill_stats(&s.prompt_processed, 3, 54, 54, 0, 54, 54);
  fill_stats(&s.completion_tokens, 3, 400, 400, 0, 400, 400);
  fill_stats(&s.reasoning_tokens, 0, NAN, NAN, NAN, NAN, NAN);
  fill_stats(&s.ttft_ms, 2, 190.5, 190.5, 2.5, 188.7, 192.3);
  fill_stats(&s.prefill_server, 2, 356.0, 356.0, 4.25, 353.0, 359.0);
  fill_stats(&s.prefill_client, 2, 275.0, 275.0, 3.0, 273.0, 277.0);
  fill_stats(&s.prefill_headline, 2, 356.0, 356.0, 4.25, 353.0, 359.0);
  fill_stats(&s.decode_server, 3, 29.9, 29.85, 0.15, 29.7, 30.0);
  fill_stats(&s.decode_client, 3, 29.5, 29.5, 0.2, 29.3, 29.7);
  fill_stats(&s.decode_headline, 3, 29.9, 29.85, 0.15, 29.7, 30.0);
  fill_stats(&s.ttft_gap_ms, 1, 32.0, 32.0, NAN, 32.0, 32.0);
  s.prefill_source = "server";
  s.decode_source = "server";
  s.n_segments = 1;
  s.segments[0] = (struct decode_segment){1, 50, 36.6};
  s.cold_ttft_ms = 2300.0;
  s.cold_load_ms = NAN;
  json_t *settings = json_pack("{s:i}", "prompt_tokens", 50);
  struct record_ceiling c = {.decode_ceiling_tok_s = 87.6, .prefill_ceiling_tok_s = 712.0,
                             .read_bandwidth_bytes_s = NAN};
  json_t *j = reparse(record_summary_build("7f3a", &s, settings, &c, 0.024));
  json_decref(settings);
  CHECK(j != NULL);
  if (!j) return;
  CHECK_STR(str_at(j, "record"), "summary");
  CHECK_NEAR(json_real_value(get(j, "cpu_steal_share")), 0.024, 1e-12);
  CHECK_STR(str_at(j, "identity"), "7f3a");
  CHECK_STR(str_at(j, "workload"), "generate");
  CHECK_EQ_INT(int_at(j, "settings.prompt_tokens"), 50);
  CHECK_EQ_INT(int_at(j, "n"), 4);
  CHECK_EQ_INT(int_at(j, "n_ok"), 3);
  CHECK_EQ_INT(int_at(j, "n_failed"), 1);
  CHECK_EQ_INT(int_at(j, "failed.idle-timeout"), 1);
  CHECK_EQ_INT(json_object_size(get(j, "failed")), 1);
  CHECK_NEAR(real_at(j, "tokens.prompt.median"), 54, 0);
  CHECK_NEAR(real_at(j, "tokens.completion.max"), 400, 0);
  CHECK_EQ_INT(int_at(j, "tokens.reasoning.n"), 0);
  CHECK(json_is_null(get(j, "tokens.reasoning.median")));
  CHECK_NEAR(real_at(j, "ttft_ms.median"), 190.5, 0);
  CHECK_NEAR(real_at(j, "ttft_ms.sd"), 2.5, 0);
  CHECK_NEAR(real_at(j, "ttft_ms.min"), 188.7, 0);
  CHECK_NEAR(real_at(j, "ttft_ms.max"), 192.3, 0);
  CHECK(json_is_null(get(j, "ttft_gap_ms.sd"))); /* n = 1: no sd */
  CHECK_NEAR(real_at(j, "ttft_gap_ms.median"), 32.0, 0);
  CHECK_NEAR(real_at(j, "rates.prefill_tok_s.server.sd"), 4.25, 0);
  CHECK_NEAR(real_at(j, "rates.prefill_tok_s.client.median"), 275.0, 0);
  CHECK_STR(str_at(j, "rates.prefill_tok_s.source"), "server");
  CHECK_NEAR(real_at(j, "rates.decode_tok_s.headline.mean"), 29.85, 0);
  CHECK_EQ_INT(int_at(j, "rates.decode_tok_s.headline.n"), 3);
  CHECK_EQ_INT(json_array_size(get(j, "rates.decode_by_segment")), 1);
  CHECK_NEAR(real_at(j, "cold.ttft_ms"), 2300.0, 0);
  CHECK(json_is_null(get(j, "cold.load_ms")));
  CHECK(json_is_null(get(j, "ceiling.read_bandwidth_bytes_s")));
  CHECK_NEAR(real_at(j, "percent_of_ceiling.prefill"), 100.0 * 356.0 / 712.0, 1e-9);
  CHECK_NEAR(real_at(j, "percent_of_ceiling.decode"), 100.0 * 29.9 / 87.6, 1e-9);
  CHECK(json_is_false(get(j, "allow_cache")));
  json_t *v = get(j, "verdicts");
  CHECK_EQ_INT(json_integer_value(json_object_get(v, "cache:hit")), 1);
  CHECK_EQ_INT(json_integer_value(json_object_get(v, "stream:buffered")), 0);
  CHECK_EQ_INT(json_integer_value(json_object_get(v, RECORD_VERDICT_COUNT_MISMATCH)), 2);
  CHECK_EQ_INT(json_integer_value(json_object_get(v, RECORD_VERDICT_REASONING_BUDGET)), 0);
  json_decref(j);
}

static void test_end_record(void) {
  uint32_t failed[RUN_ERR_COUNT] = {0};
  failed[RUN_ERR_HTTP] = 2;
  failed[RUN_ERR_TIMEOUT] = 1;
  struct machine_thermal th;
  memset(&th, 0, sizeof th);
  json_t *j = reparse(record_end_build("7f3a", &th, 12, failed, false, 0.031));
  CHECK(j != NULL);
  if (!j) return;
  CHECK_STR(str_at(j, "record"), "end");
  CHECK_STR(str_at(j, "identity"), "7f3a");
  CHECK(json_is_false(get(j, "thermal_after.readable")));
  CHECK_EQ_INT(int_at(j, "runs"), 12);
  CHECK_EQ_INT(int_at(j, "n_failed"), 3);
  CHECK_EQ_INT(int_at(j, "failed.http"), 2);
  CHECK_EQ_INT(int_at(j, "failed.timeout"), 1);
  CHECK_EQ_INT(json_object_size(get(j, "failed")), 2);
  CHECK(json_is_false(get(j, "interrupted")));
  CHECK_NEAR(json_real_value(get(j, "cpu_steal_share")), 0.031, 1e-12);
  json_decref(j);

  j = reparse(record_end_build("x", NULL, 0, NULL, true, NAN));
  CHECK(j && json_is_null(get(j, "cpu_steal_share"))); /* unknown: null, not 0 */
  CHECK(j && json_is_null(get(j, "thermal_after")));
  CHECK(j && json_object_size(get(j, "failed")) == 0);
  CHECK(j && json_is_true(get(j, "interrupted")));
  json_decref(j);
}

/* A whole invocation written to a file and read back: every line parses, the
 * kinds come in order and all refer to the identity. */
static void test_file_of_an_invocation(void) {
  const char *path = tm_tmpfile("inv.jsonl");
  struct tm_err err = {{0}};
  struct record_file *f = record_open(path, &err);
  CHECK(f != NULL);
  if (!f) return;
  char id[RECORD_ID_LEN + 1];
  struct record_identity_in ii = {.tokmeter_version = "0.1.0", .backend = "openai",
                                  .target = "http://127.0.0.1:8080"};
  CHECK_EQ_INT(record_write(f, record_identity_build(&ii, id, &err), &err), 0);
  struct run_result r;
  struct run_metrics m;
  make_run(&r, &m);
  struct record_run_in in = {.identity = id, .workload = "generate"};
  CHECK_EQ_INT(record_write(f, record_run_build(&in, &r, &m), &err), 0);
  struct bench_summary s;
  memset(&s, 0, sizeof s);
  snprintf(s.workload, sizeof s.workload, "generate");
  s.cold_ttft_ms = s.cold_load_ms = NAN;
  CHECK_EQ_INT(record_write(f, record_summary_build(id, &s, NULL, NULL, NAN), &err), 0);
  CHECK_EQ_INT(record_write(f, record_end_build(id, NULL, 1, NULL, false, NAN), &err), 0);
  record_close(f);

  FILE *in_f = fopen(path, "r");
  CHECK(in_f != NULL);
  if (!in_f) return;
  static const char *const kinds[] = {"identity", "run", "summary", "end"};
  char line[65536];
  int n = 0;
  while (fgets(line, sizeof line, in_f)) {
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    CHECK_MSG(j != NULL, "line %d does not parse: %s", n + 1, je.text);
    if (j && n < 4) {
      CHECK_STR(str_at(j, "record"), kinds[n]);
      CHECK_STR(str_at(j, n == 0 ? "id" : "identity"), id);
      if (n == 2) CHECK(json_is_null(get(j, "cpu_steal_share"))); /* unknown: null */
    }
    json_decref(j);
    n++;
  }
  fclose(in_f);
  CHECK_EQ_INT(n, 4);
}

void tm_run_tests(void) {
  TM_RUN(test_run_record);
  TM_RUN(test_run_record_has_no_key);
  TM_RUN(test_run_record_answer);
  TM_RUN(test_run_record_failed_early);
  TM_RUN(test_summary_record);
  TM_RUN(test_end_record);
  TM_RUN(test_file_of_an_invocation);
}
