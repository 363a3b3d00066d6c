/* test_dialect_ollama: Ollama's native /api/chat and /api/generate dialect.
 * NO captures of a real Ollama server exist here: every event below is written
 * from Ollama's API documentation (docs/api.md: streamed objects with
 * message.content / message.thinking or response / thinking, a final
 * "done": true object with done_reason and *_duration in nanoseconds,
 * {"error": "..."} objects), fed line by line through the real NDJSON framer. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "dialect_fixture.h"
#include "fakeserver.h"
#include "tm_test.h"

static const struct dialect *D = &dialect_ollama;

struct nd_ctx {
  struct run_result *r;
  uint64_t t_ns;
  int last_rc;
};

static int nd_cb(void *ctx, const char *payload, size_t len) {
  struct nd_ctx *c = ctx;
  c->last_rc = D->on_event(c->r, payload, len, c->t_ns);
  return c->last_rc;
}

/* Feeds a whole NDJSON body through the framer in pieces of `step` bytes, the
 * i-th piece arriving at (i + 1) ms; returns finish()'s result. */
static int feed_ndjson(struct run_result *r, const char *body, size_t step, int *last_rc) {
  struct ndjson_parser p;
  ndjson_init(&p, 0);
  struct nd_ctx c = {.r = r, .t_ns = 0, .last_rc = 0};
  size_t n = strlen(body);
  int frc = FRAME_OK;
  for (size_t off = 0, i = 0; off < n && frc == FRAME_OK; off += step, i++) {
    c.t_ns = (uint64_t)(i + 1) * 1000000u;
    frc = ndjson_feed(&p, body + off, n - off < step ? n - off : step, nd_cb, &c);
  }
  if (frc == FRAME_OK) frc = ndjson_finish(&p, nd_cb, &c);
  ndjson_free(&p);
  if (last_rc) *last_rc = c.last_rc;
  return D->finish(r);
}

static const char CHAT_STREAM[] =
    "{\"model\":\"qwen3:0.6b\",\"created_at\":\"2025-06-01T10:00:00.1Z\",\"message\":{\"role\":"
    "\"assistant\",\"content\":\"\",\"thinking\":\"Hmm\"},\"done\":false}\n"
    "{\"model\":\"qwen3:0.6b\",\"created_at\":\"2025-06-01T10:00:00.2Z\",\"message\":{\"role\":"
    "\"assistant\",\"content\":\"\",\"thinking\":\", ok\"},\"done\":false}\n"
    "{\"model\":\"qwen3:0.6b\",\"created_at\":\"2025-06-01T10:00:00.3Z\",\"message\":{\"role\":"
    "\"assistant\",\"content\":\"Hello\"},\"done\":false}\n"
    "{\"model\":\"qwen3:0.6b\",\"created_at\":\"2025-06-01T10:00:00.4Z\",\"message\":{\"role\":"
    "\"assistant\",\"content\":\" world\"},\"done\":false}\n"
    "{\"model\":\"qwen3:0.6b\",\"created_at\":\"2025-06-01T10:00:00.5Z\",\"message\":{\"role\":"
    "\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"length\","
    "\"total_duration\":4883583458,\"load_duration\":1334875,\"prompt_eval_count\":26,"
    "\"prompt_eval_duration\":342546000,\"eval_count\":282,\"eval_duration\":4535599000}\n";

static void test_chat_stream(void) {
  size_t steps[] = {1, 7, 64, 100000};
  for (size_t k = 0; k < 4; k++) {
    struct run_result r;
    run_result_init(&r);
    int last = 0;
    CHECK_EQ_INT(feed_ndjson(&r, CHAT_STREAM, steps[k], &last), 0);
    CHECK_EQ_INT(last, 1); /* done: true ends the stream */
    CHECK_EQ_INT(r.error, RUN_OK);
    CHECK_EQ_U64(r.n_chunks, 4);
    if (r.n_chunks == 4) {
      CHECK_EQ_INT(r.chunks[0].field, CHUNK_REASONING);
      CHECK_EQ_INT(r.chunks[1].field, CHUNK_REASONING);
      CHECK_EQ_INT(r.chunks[2].field, CHUNK_CONTENT);
      CHECK_STR(fx_chunk_text(&r, 3), " world");
    }
    CHECK_EQ_U64(r.text_len, strlen("Hmm, okHello world"));
    CHECK_EQ_INT(r.prompt_tokens, 26);
    CHECK_EQ_INT(r.completion_tokens, 282);
    CHECK_EQ_INT(r.cached_tokens, -1); /* Ollama reports none: not 0 */
    CHECK_EQ_INT(r.reasoning_tokens, -1);
    CHECK_NEAR(r.ollama_total_ms, 4883.583458, 1e-9);
    CHECK_NEAR(r.ollama_load_ms, 1.334875, 1e-12);
    CHECK_NEAR(r.ollama_prompt_eval_ms, 342.546, 1e-9);
    CHECK_NEAR(r.ollama_eval_ms, 4535.599, 1e-9);
    CHECK(isnan(r.timings_prompt_ms));
    CHECK_STR(r.finish_reason, "length");
    CHECK_STR(r.server_model, "qwen3:0.6b");
    run_result_free(&r);
  }
  /* one byte at a time: each event is timed by the byte that completed it */
  struct run_result r;
  run_result_init(&r);
  feed_ndjson(&r, CHAT_STREAM, 1, NULL);
  const char *first_end = strchr(CHAT_STREAM, '\n');
  if (r.n_chunks > 0)
    CHECK_EQ_U64(r.chunks[0].t_ns, (uint64_t)(first_end - CHAT_STREAM + 1) * 1000000u);
  run_result_free(&r);
}

static void test_generate_stream(void) {
  const char *ev[] = {
      "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45.499127Z\",\"response\":"
      "\"The\",\"done\":false}",
      "{\"model\":\"llama3.2\",\"created_at\":\"x\",\"thinking\":\"mm\",\"response\":\"\","
      "\"done\":false}",
      "{\"model\":\"llama3.2\",\"created_at\":\"x\",\"response\":\" sky\",\"done\":false}",
      "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45.499127Z\",\"response\":\"\","
      "\"done\":true,\"context\":[1,2,3],\"total_duration\":10706818083,\"load_duration\":"
      "6338219291,\"prompt_eval_count\":26,\"prompt_eval_duration\":130079000,\"eval_count\":"
      "259,\"eval_duration\":4232710000}",
  };
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev, 4), 1);
  CHECK_EQ_INT(D->finish(&r), 0);
  CHECK_EQ_U64(r.n_chunks, 3);
  if (r.n_chunks == 3) {
    CHECK_EQ_INT(r.chunks[1].field, CHUNK_REASONING);
    CHECK_EQ_U64(r.chunks[2].t_ns, 3000000u);
  }
  CHECK_EQ_INT(r.completion_tokens, 259);
  CHECK_NEAR(r.ollama_load_ms, 6338.219291, 1e-9);
  CHECK_STR(r.finish_reason, "stop"); /* done without done_reason (older servers) */
  run_result_free(&r);
}

static void test_errors(void) {
  struct run_result r;
  run_result_init(&r);
  const char *ev[] = {"{\"model\":\"m\",\"response\":\"a\",\"done\":false}",
                      "{\"error\":\"an unknown error was encountered while running the model\"}"};
  CHECK_EQ_INT(fx_feed(D, &r, ev, 2), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_STREAM);
  CHECK_CONTAINS(r.error_msg, "an unknown error was encountered while running the model");
  CHECK_EQ_U64(r.n_chunks, 1); /* what came before is kept */
  run_result_free(&r);

  /* cut before done */
  run_result_init(&r);
  const char *cut[] = {"{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"a\"},"
                       "\"done\":false}"};
  CHECK_EQ_INT(fx_feed(D, &r, cut, 1), 0);
  CHECK_EQ_INT(D->finish(&r), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_NO_USAGE);
  CHECK_CONTAINS(r.error_msg, "without its final \"done\": true line");
  run_result_free(&r);

  /* a load-only answer: done, but no counters */
  run_result_init(&r);
  const char *load[] = {"{\"model\":\"m\",\"created_at\":\"x\",\"response\":\"\",\"done\":true,"
                        "\"done_reason\":\"load\"}"};
  CHECK_EQ_INT(fx_feed(D, &r, load, 1), 1);
  CHECK_EQ_INT(D->finish(&r), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_NO_USAGE);
  CHECK_CONTAINS(r.error_msg, "done_reason \"load\"");
  run_result_free(&r);

  /* HTTP errors in Ollama's body format */
  run_result_init(&r);
  const char *body = "{\"error\":\"model 'qwen9' not found\"}";
  D->on_http_error(&r, 404, body, strlen(body));
  CHECK_EQ_INT(r.error, RUN_ERR_HTTP);
  CHECK_STR(r.error_msg, "HTTP 404: model 'qwen9' not found");
  run_result_free(&r);
}

static void expect_malformed(const char *payload, const char *part) {
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(D->on_event(&r, payload, strlen(payload), 1), -1);
  CHECK_MSG(r.error == RUN_ERR_MALFORMED, "%s: error %d %s", payload, r.error, r.error_msg);
  if (part) CHECK_CONTAINS(r.error_msg, part);
  run_result_free(&r);
}

static void test_malformed(void) {
  expect_malformed("{\"response\":\"a\",\"done\":fals", "malformed JSON");
  expect_malformed("{\"message\":{\"content\":5},\"done\":false}", "message.content");
  expect_malformed("{\"message\":\"hi\",\"done\":false}", "message is a string");
  expect_malformed("{\"response\":[],\"done\":false}", "response is an array");
  expect_malformed("{\"response\":\"\",\"done\":\"yes\"}", "done is a string");
  expect_malformed("{\"done\":true,\"eval_count\":\"9\"}", "eval_count");
  expect_malformed("{\"done\":true,\"eval_duration\":{}}", "eval_duration");
  expect_malformed("[]", NULL);
  const char *seeds[] = {
      "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"x\",\"thinking\":\"y\"},"
      "\"done\":false}",
      "{\"model\":\"m\",\"response\":\"\",\"done\":true,\"done_reason\":\"stop\","
      "\"total_duration\":1,\"load_duration\":2,\"prompt_eval_count\":3,"
      "\"prompt_eval_duration\":4,\"eval_count\":5,\"eval_duration\":6}",
      "{\"error\":\"boom\"}",
  };
  fx_mutate(D, seeds, 3, 3000);
}

static void test_build(void) {
  char path[64];
  char *body = NULL;
  struct tm_err err = {{0}};
  struct backend_request req = {.model = "qwen3:0.6b", .prompt = "Why?", .max_tokens = 128,
                                .stream = true, .seed = 7, .num_thread = 2,
                                .unload_after = true, .exact_length = true};
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, sizeof path, &body, &err), 0);
  CHECK_STR(path, "/api/chat");
  json_t *o = fx_parse_body(body);
  CHECK_EQ_INT(json_object_size(o), 5);
  CHECK_STR(json_string_value(json_object_get(o, "model")), "qwen3:0.6b");
  json_t *m0 = json_array_get(json_object_get(o, "messages"), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(o, "messages")), 1);
  CHECK_STR(json_string_value(json_object_get(m0, "role")), "user");
  CHECK_STR(json_string_value(json_object_get(m0, "content")), "Why?");
  CHECK(json_is_true(json_object_get(o, "stream")));
  json_t *opt = json_object_get(o, "options");
  CHECK_EQ_INT(json_object_size(opt), 4);
  CHECK_EQ_INT(json_integer_value(json_object_get(opt, "num_predict")), 128);
  CHECK(json_is_integer(json_object_get(opt, "temperature")) &&
        json_integer_value(json_object_get(opt, "temperature")) == 0);
  CHECK_EQ_INT(json_integer_value(json_object_get(opt, "seed")), 7);
  CHECK_EQ_INT(json_integer_value(json_object_get(opt, "num_thread")), 2);
  json_t *ka = json_object_get(o, "keep_alive");
  CHECK(json_is_integer(ka) && json_integer_value(ka) == 0);
  CHECK(json_object_get(o, "stream_options") == NULL);
  json_decref(o);
  free(body);

  struct backend_request req2 = {.model = "llama3.2", .prompt = "Once", .max_tokens = 16,
                                 .stream = true};
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req2, path, sizeof path, &body, &err), 0);
  CHECK_STR(path, "/api/generate");
  o = fx_parse_body(body);
  CHECK_STR(json_string_value(json_object_get(o, "prompt")), "Once");
  CHECK(json_object_get(o, "messages") == NULL);
  CHECK(json_object_get(o, "keep_alive") == NULL); /* server default unless asked */
  opt = json_object_get(o, "options");
  CHECK_EQ_INT(json_object_size(opt), 2); /* num_predict, temperature */
  CHECK(json_object_get(opt, "seed") == NULL);
  CHECK(json_object_get(opt, "num_thread") == NULL);
  CHECK_EQ_INT(json_object_size(o), 4);
  json_decref(o);
  free(body);

  struct backend_request bad = {.model = "m", .prompt = "\xc3", .max_tokens = 1};
  body = NULL;
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &bad, path, sizeof path, &body, &err), -1);
  CHECK(body == NULL);
}



static void test_backend_run_paced(void) {
  for (int ep = 0; ep < 2; ep++) {
    struct backend *b = NULL;
    struct fakeserver *fs = e2e_start(FS_PACED, FS_FLAVOR_OLLAMA, NULL, ep == 0, &b, API_OLLAMA,
                                      (enum api_endpoint)ep);
    if (!fs) continue;
    struct backend_request req = {.model = "fake:latest", .prompt = "a b c", .max_tokens = 24,
                                  .stream = true, .unload_after = true, .idle_timeout_s = 10,
                                  .total_timeout_s = 30};
    struct run_result r;
    run_result_init(&r);
    CHECK_EQ_INT(backend_run(b, &req, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_EQ_INT(r.completion_tokens, 24);
    CHECK_EQ_U64(r.n_chunks, 24);
    CHECK_EQ_INT(r.cached_tokens, -1);
    CHECK(r.ollama_eval_ms > 0);
    CHECK(r.ollama_prompt_eval_ms > 0);
    CHECK_CONTAINS(fs_last_request_line(fs), ep == 0 ? "POST /api/chat" : "POST /api/generate");
    CHECK_CONTAINS(fs_last_request_body(fs), "\"keep_alive\":0");
    if (ep == 0) {
      size_t n_reason = 0;
      for (size_t i = 0; i < r.n_chunks; i++) n_reason += r.chunks[i].field == CHUNK_REASONING;
      CHECK(n_reason > 0 && n_reason < r.n_chunks);
    }
    run_result_free(&r);
    backend_free(b);
    fs_stop(fs);
  }
}

/* A job's turns as messages and its images as base64 in the user turn
 * ("images", no data: prefix); generate puts them in "images" too; a URL
 * image is refused (Ollama takes files). */
static void test_build_history_and_images(void) {
  char path[128];
  char *body = NULL;
  struct tm_err err = {{0}};
  const struct backend_message hist[] = {{"system", "Be brief."}};
  const char *const imgs[] = {"data:image/jpeg;base64,QUJD"};
  struct backend_request req = {.prompt = "Reference n2. Panel?", .history = hist,
                                .n_history = 1, .images = imgs, .n_images = 1, .stream = true};
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, sizeof path, &body, &err), 0);
  json_t *o = fx_parse_body(body);
  json_t *msgs = json_object_get(o, "messages");
  CHECK_EQ_INT(json_array_size(msgs), 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(msgs, 0), "content")), "Be brief.");
  json_t *u = json_array_get(msgs, 1);
  CHECK_STR(json_string_value(json_object_get(u, "content")), "Reference n2. Panel?");
  CHECK_STR(json_string_value(json_array_get(json_object_get(u, "images"), 0)), "QUJD");
  json_decref(o);
  free(body);
  body = NULL;
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req, path, sizeof path, &body, &err), 0);
  o = fx_parse_body(body);
  CHECK_STR(json_string_value(json_object_get(o, "prompt")), "Be brief.\n\nReference n2. Panel?");
  CHECK_STR(json_string_value(json_array_get(json_object_get(o, "images"), 0)), "QUJD");
  json_decref(o);
  free(body);
  body = NULL;
  const char *const url[] = {"https://example.com/p.jpg"};
  req.images = url;
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, sizeof path, &body, &err), -1);
  CHECK(strstr(err.msg, "not URLs") != NULL);
  CHECK(body == NULL);
}

void tm_run_tests(void) {
  TM_RUN(test_backend_run_paced);
  TM_RUN(test_chat_stream);
  TM_RUN(test_generate_stream);
  TM_RUN(test_errors);
  TM_RUN(test_malformed);
  TM_RUN(test_build);
  TM_RUN(test_build_history_and_images);
}
