/* test_dialect_llamacpp: llama.cpp's native /completion dialect against the
 * recorded exchange (fixtures/llama-server/llama-server-native-completion-
 * stream.json) through the real SSE framer, plus request bodies, cut streams
 * and malformed events. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "dialect_fixture.h"
#include "fakeserver.h"
#include "tm_test.h"

static const struct dialect *D = &dialect_llamacpp;
static const char *FX = "llama-server-native-completion-stream.json";

/* From the fixture, independently: per text-bearing event, len(tokens). */
static size_t expected_chunks(uint32_t *n_tokens, size_t max, int64_t *last_cached) {
  json_t *root = fx_load(FX);
  json_t *lines = json_object_get(root, "lines");
  size_t k = 0;
  for (size_t i = 0; i < json_array_size(lines); i++) {
    const char *s = json_string_value(json_object_get(json_array_get(lines, i), "line"));
    if (strncmp(s, "data: {", 7) != 0) continue;
    json_t *ev = json_loads(s + 6, JSON_DISABLE_EOF_CHECK, NULL);
    json_t *c = json_object_get(ev, "content");
    if (json_is_string(c) && json_string_length(c) > 0 && k < max)
      n_tokens[k++] = (uint32_t)json_array_size(json_object_get(ev, "tokens"));
    if (json_object_get(ev, "tokens_cached"))
      *last_cached = json_integer_value(json_object_get(ev, "tokens_cached"));
    json_decref(ev);
  }
  json_decref(root);
  return k;
}

static void test_native_fixture(void) {
  struct run_result r;
  run_result_init(&r);
  int last = 0;
  CHECK_EQ_INT(fx_replay(FX, D, &r, NULL, &last), 0);
  CHECK_EQ_INT(last, 1); /* "stop": true */
  CHECK_EQ_INT(r.error, RUN_OK);
  CHECK_EQ_INT(r.completion_tokens, 48);
  CHECK_EQ_INT(r.prompt_tokens, 12);
  CHECK_EQ_INT(r.timings_cache_n, 0);
  CHECK_EQ_INT(r.timings_prompt_n, 12);
  CHECK_NEAR(r.timings_prompt_ms, 70.666, 1e-9);
  CHECK_EQ_INT(r.timings_predicted_n, 48);
  CHECK_NEAR(r.timings_predicted_ms, 723.704, 1e-9);
  CHECK_STR(r.finish_reason, "length"); /* stop_type "limit" */
  CHECK_STR(r.server_model, "models/q3-0.6b-Q4_0.gguf");
  /* tokens_cached (59 here: the slot's whole context) is NOT prompt reuse */
  int64_t tokens_cached = -1;
  uint32_t want[256];
  size_t n = expected_chunks(want, 256, &tokens_cached);
  CHECK_EQ_INT(tokens_cached, 59);
  CHECK_EQ_INT(r.cached_tokens, -1);
  CHECK(r.timings_cache_n != tokens_cached);
  CHECK(n > 0);
  CHECK_EQ_U64(r.n_chunks, n);
  uint64_t sum = 0;
  for (size_t i = 0; i < r.n_chunks && i < n; i++) {
    CHECK_EQ_INT(r.chunks[i].n_tokens, want[i]);
    CHECK_EQ_INT(r.chunks[i].field, CHUNK_CONTENT);
    sum += r.chunks[i].n_tokens;
  }
  CHECK(sum > 0 && sum <= 48);
  run_result_free(&r);
}

static void test_cut_stream(void) {
  const char *ev[] = {
      "{\"index\":0,\"content\":\"a\",\"tokens\":[1],\"stop\":false,\"tokens_predicted\":1,"
      "\"tokens_evaluated\":12}",
      "{\"index\":0,\"content\":\"bc\",\"tokens\":[2,3],\"stop\":false,\"tokens_predicted\":3,"
      "\"tokens_evaluated\":12}",
  };
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev, 2), 0);
  CHECK_EQ_INT(r.completion_tokens, 3); /* running count, as reported */
  CHECK_EQ_U64(r.n_chunks, 2);
  if (r.n_chunks == 2) CHECK_EQ_INT(r.chunks[1].n_tokens, 2);
  CHECK_EQ_INT(D->finish(&r), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_NO_USAGE);
  CHECK_CONTAINS(r.error_msg, "\"stop\": true");
  run_result_free(&r);

  /* stop_type eos -> "stop"; a stop event with a last piece of text */
  const char *ev2[] = {
      "{\"content\":\"end\",\"tokens\":[9],\"stop\":true,\"stop_type\":\"eos\","
      "\"tokens_predicted\":5,\"tokens_evaluated\":4,\"timings\":{\"cache_n\":3,"
      "\"prompt_n\":1,\"prompt_ms\":2.5,\"predicted_n\":5,\"predicted_ms\":50,"
      "\"draft_n\":4,\"draft_n_accepted\":3}}",
  };
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev2, 1), 1);
  CHECK_EQ_INT(D->finish(&r), 0);
  CHECK_STR(r.finish_reason, "stop");
  CHECK_EQ_INT(r.timings_cache_n, 3);
  CHECK_EQ_INT(r.draft_n, 4);
  CHECK_EQ_INT(r.draft_n_accepted, 3);
  CHECK_NEAR(r.timings_predicted_ms, 50.0, 0);
  CHECK_EQ_U64(r.n_chunks, 1);
  run_result_free(&r);
}

static void test_errors(void) {
  struct run_result r;
  run_result_init(&r);
  const char *e = "{\"error\":{\"code\":500,\"message\":\"slot unavailable\",\"type\":"
                  "\"server_error\"}}";
  CHECK_EQ_INT(D->on_event(&r, e, strlen(e), 1), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_STREAM);
  CHECK_STR(r.error_msg, "error event in the stream: slot unavailable (server_error)");
  run_result_free(&r);

  int status = 0;
  char *body = fx_body("llama-server-error-context-overflow.json", &status);
  run_result_init(&r);
  D->on_http_error(&r, status, body, body ? strlen(body) : 0);
  CHECK_EQ_INT(r.error, RUN_ERR_CONTEXT_OVERFLOW);
  CHECK_CONTAINS(r.error_msg, "HTTP 400: request (5019 tokens) exceeds");
  run_result_free(&r);
  free(body);

  const char *bad[] = {
      "{\"content\":5}", "{\"content\":\"a\",\"tokens\":\"x\"}", "{\"stop\":1}",
      "{\"tokens_predicted\":\"2\"}", "{\"stop\":true,\"timings\":[]}",
      "{\"stop\":true,\"stop_type\":3}", "{\"content\":\"a\"",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result_init(&r);
    CHECK_MSG(D->on_event(&r, bad[i], strlen(bad[i]), 1) == -1, "%s accepted", bad[i]);
    CHECK_MSG(r.error == RUN_ERR_MALFORMED, "%s: error %d", bad[i], r.error);
    run_result_free(&r);
  }
  const char *seeds[] = {
      "{\"index\":0,\"content\":\"x\",\"tokens\":[1,2],\"stop\":false,\"tokens_predicted\":1,"
      "\"tokens_evaluated\":12}",
      "{\"content\":\"\",\"tokens\":[],\"stop\":true,\"stop_type\":\"limit\",\"timings\":"
      "{\"cache_n\":0,\"prompt_n\":12,\"prompt_ms\":70.6,\"predicted_n\":48}}",
  };
  fx_mutate(D, seeds, 2, 3000);
}

static void test_build(void) {
  char path[64];
  char *body = NULL;
  struct tm_err err = {{0}};
  struct backend_request req = {.prompt = "Once upon a time", .max_tokens = 48, .stream = true,
                                .exact_length = true, .seed = 3};
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, sizeof path, &body, &err), 0);
  CHECK_STR(path, "/completion");
  json_t *o = fx_parse_body(body);
  CHECK_STR(json_string_value(json_object_get(o, "prompt")), "Once upon a time");
  CHECK_EQ_INT(json_integer_value(json_object_get(o, "n_predict")), 48);
  CHECK(json_is_integer(json_object_get(o, "temperature")) &&
        json_integer_value(json_object_get(o, "temperature")) == 0);
  CHECK(json_is_true(json_object_get(o, "stream")));
  CHECK(json_is_true(json_object_get(o, "cache_prompt")));
  CHECK(json_is_true(json_object_get(o, "ignore_eos")));
  CHECK_EQ_INT(json_integer_value(json_object_get(o, "seed")), 3);
  CHECK(json_object_get(o, "model") == NULL);
  CHECK(json_object_get(o, "max_tokens") == NULL);
  CHECK_EQ_INT(json_object_size(o), 7);
  json_decref(o);
  free(body);

  struct backend_request req2 = {.model = "m", .prompt = "p", .max_tokens = 8, .stream = true};
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req2, path, sizeof path, &body, &err), 0);
  CHECK_STR(path, "/completion");
  o = fx_parse_body(body);
  CHECK_STR(json_string_value(json_object_get(o, "model")), "m");
  CHECK(json_object_get(o, "ignore_eos") == NULL);
  CHECK(json_object_get(o, "seed") == NULL);
  CHECK_EQ_INT(json_object_size(o), 6);
  json_decref(o);
  free(body);
}



static void test_backend_run_native(void) {
  struct backend *b = NULL;
  struct fakeserver *fs =
      e2e_start(FS_REPLAY, FS_FLAVOR_LLAMACPP, FX, false, &b, API_LLAMACPP, ENDPOINT_CHAT);
  if (fs) {
    struct backend_request req = {.prompt = "Once upon a time", .max_tokens = 48, .stream = true,
                                  .idle_timeout_s = 10, .total_timeout_s = 30};
    struct run_result r;
    run_result_init(&r);
    CHECK_EQ_INT(backend_run(b, &req, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_EQ_INT(r.completion_tokens, 48);
    CHECK_EQ_INT(r.timings_prompt_n, 12);
    CHECK_CONTAINS(fs_last_request_line(fs), "POST /completion");
    run_result_free(&r);
    backend_free(b);
    fs_stop(fs);
  }
  fs = e2e_start(FS_PACED, FS_FLAVOR_LLAMACPP, NULL, false, &b, API_LLAMACPP, ENDPOINT_CHAT);
  if (fs) {
    struct backend_request req = {.prompt = "a b c", .max_tokens = 30, .stream = true,
                                  .exact_length = true, .idle_timeout_s = 10,
                                  .total_timeout_s = 30};
    struct run_result r;
    run_result_init(&r);
    CHECK_EQ_INT(backend_run(b, &req, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_EQ_INT(r.completion_tokens, 30);
    uint64_t sum = 0;
    for (size_t i = 0; i < r.n_chunks; i++) sum += r.chunks[i].n_tokens;
    CHECK_EQ_U64(sum, 30);
    CHECK_CONTAINS(fs_last_request_body(fs), "\"ignore_eos\":true");
    run_result_free(&r);
    backend_free(b);
    fs_stop(fs);
  }
}

/* /completion: a job's turns before the prompt; images refused (chat). */
static void test_build_history_and_images(void) {
  char path[128];
  char *body = NULL;
  struct tm_err err = {{0}};
  const struct backend_message hist[] = {{"system", "Be brief."}};
  const char *const imgs[] = {"data:image/png;base64,QUJD"};
  struct backend_request req = {.prompt = "Reference n3. Go.", .history = hist, .n_history = 1,
                                .stream = true};
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req, path, sizeof path, &body, &err), 0);
  json_t *o = fx_parse_body(body);
  CHECK_STR(json_string_value(json_object_get(o, "prompt")), "Be brief.\n\nReference n3. Go.");
  json_decref(o);
  free(body);
  body = NULL;
  req.images = imgs;
  req.n_images = 1;
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req, path, sizeof path, &body, &err), -1);
  CHECK(strstr(err.msg, "chat endpoint") != NULL);
  CHECK(body == NULL);
}

void tm_run_tests(void) {
  TM_RUN(test_backend_run_native);
  TM_RUN(test_native_fixture);
  TM_RUN(test_cut_stream);
  TM_RUN(test_errors);
  TM_RUN(test_build);
  TM_RUN(test_build_history_and_images);
}
