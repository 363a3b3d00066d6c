/* test_dialect_openai: the OpenAI-compatible dialect against real llama-server
 * exchanges (fixtures/llama-server/), through the real SSE framer, and against
 * vLLM and LM Studio event formats written from their documentation: NO
 * captures of vLLM or LM Studio exist here, so those payloads are
 * hand-written from docs.vllm.ai (delta.reasoning / reasoning_content,
 * "usage": null on intermediate chunks with include_usage, {"object":"error"}
 * bodies) and lmstudio.ai REST v0 (the `stats` object). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "dialect_fixture.h"
#include "fakeserver.h"
#include "tm_test.h"

static const struct dialect *D = &dialect_openai;

/* Counts the fixture's non-empty choices[0].delta.content pieces and their
 * concatenation, independently of the dialect (plain jansson over the lines). */
static size_t count_content_deltas(const char *name, char *text, size_t text_n,
                                   uint64_t *first_t_ns) {
  json_t *root = fx_load(name);
  size_t count = 0, o = 0;
  *first_t_ns = 0;
  json_t *lines = json_object_get(root, "lines");
  for (size_t i = 0; i < json_array_size(lines); i++) {
    json_t *l = json_array_get(lines, i);
    const char *s = json_string_value(json_object_get(l, "line"));
    if (strncmp(s, "data: {", 7) != 0) continue;
    json_t *ev = json_loads(s + 6, JSON_DISABLE_EOF_CHECK, NULL);
    json_t *c = json_object_get(
        json_object_get(json_array_get(json_object_get(ev, "choices"), 0), "delta"), "content");
    if (json_is_string(c) && json_string_length(c) > 0) {
      /* An SSE event is complete at the blank line after its data line: its
       * arrival time is that line's. */
      json_t *blank = json_array_get(lines, i + 1);
      if (count == 0 && blank)
        *first_t_ns = (uint64_t)(json_number_value(json_object_get(blank, "t_ms")) * 1e6 + 0.5);
      count++;
      size_t n = json_string_length(c);
      if (o + n < text_n) memcpy(text + o, json_string_value(c), n), o += n;
    }
    json_decref(ev);
  }
  text[o] = 0;
  json_decref(root);
  return count;
}

static void test_chat_stream_fixture(void) {
  struct run_result r;
  run_result_init(&r);
  int n_events = 0, last = 0;
  int rc = fx_replay("llama-server-chat-stream.json", D, &r, &n_events, &last);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(last, 1); /* data: [DONE] ended it */
  CHECK_EQ_INT(r.error, RUN_OK);
  CHECK_EQ_INT(r.completion_tokens, 64);
  CHECK_EQ_INT(r.prompt_tokens, 33);
  CHECK_EQ_INT(r.cached_tokens, 14);
  CHECK_EQ_INT(r.reasoning_tokens, -1);
  CHECK_EQ_INT(r.timings_cache_n, 14);
  CHECK_EQ_INT(r.timings_prompt_n, 19);
  CHECK_NEAR(r.timings_prompt_ms, 148.665, 1e-9);
  CHECK_EQ_INT(r.timings_predicted_n, 64);
  CHECK_NEAR(r.timings_predicted_ms, 1096.075, 1e-9);
  CHECK_EQ_INT(r.draft_n, -1);
  CHECK_EQ_INT(r.draft_n_accepted, -1);
  CHECK(isnan(r.lmstudio_tok_s));
  CHECK_STR(r.finish_reason, "length");
  CHECK_STR(r.server_model, "models/q3-0.6b-Q4_0.gguf");
  CHECK_STR(r.system_fingerprint, "b1-80fb11a");

  static char want[65536];
  uint64_t first_t = 0;
  size_t want_chunks = count_content_deltas("llama-server-chat-stream.json", want, sizeof want,
                                            &first_t);
  CHECK(want_chunks > 0);
  CHECK_EQ_U64(r.n_chunks, want_chunks);
  CHECK_EQ_U64(r.text_len, strlen(want));
  CHECK(r.text && memcmp(r.text, want, strlen(want)) == 0);
  if (r.n_chunks > 0) {
    CHECK_EQ_U64(r.chunks[0].t_ns, first_t); /* arrival of the line completing it */
    CHECK_EQ_INT(r.chunks[0].field, CHUNK_CONTENT);
    CHECK_EQ_INT(r.chunks[0].n_tokens, 0);   /* the OpenAI format does not say */
    for (size_t i = 1; i < r.n_chunks; i++) CHECK(r.chunks[i].t_ns >= r.chunks[i - 1].t_ns);
  }
  run_result_free(&r);
}

static void test_prompt_cache_trap(void) {
  struct run_result cold, warm;
  run_result_init(&cold);
  run_result_init(&warm);
  CHECK_EQ_INT(fx_replay("llama-server-chat-long-cold.json", D, &cold, NULL, NULL), 0);
  CHECK_EQ_INT(fx_replay("llama-server-chat-long-repeat-cached.json", D, &warm, NULL, NULL), 0);
  CHECK_EQ_INT(cold.prompt_tokens, 819);
  CHECK_EQ_INT(warm.prompt_tokens, 819);
  CHECK_EQ_INT(cold.cached_tokens, 0);
  CHECK_EQ_INT(warm.cached_tokens, 818);
  CHECK_EQ_INT(cold.timings_cache_n, 0);
  CHECK_EQ_INT(warm.timings_cache_n, 818);
  CHECK_EQ_INT(warm.timings_prompt_n, 1);
  CHECK_NEAR(cold.timings_prompt_ms, 4151.868, 1e-9);
  CHECK_NEAR(warm.timings_prompt_ms, 37.052, 1e-9);
  CHECK_EQ_INT(cold.completion_tokens, 32);
  CHECK_EQ_INT(warm.completion_tokens, 32);
  run_result_free(&cold);
  run_result_free(&warm);
}

static void test_generate_400(void) {
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_replay("llama-server-chat-generate-400.json", D, &r, NULL, NULL), 0);
  CHECK_EQ_INT(r.completion_tokens, 400);
  CHECK_EQ_INT(r.cached_tokens, 14);
  CHECK_EQ_INT(r.timings_predicted_n, 400);
  CHECK_NEAR(r.timings_predicted_ms, 9061.653, 1e-9);
  static char want[262144];
  uint64_t first_t;
  size_t n = count_content_deltas("llama-server-chat-generate-400.json", want, sizeof want,
                                  &first_t);
  CHECK_EQ_U64(r.n_chunks, n);
  CHECK_EQ_U64(r.text_len, strlen(want));
  run_result_free(&r);
}

static void test_nonstream_answer(void) {
  /* stream:false answers carry choices[0].message: read as one chunk. */
  struct run_result r;
  json_t *root = fx_load("llama-server-chat-nonstream.json");
  const char *body = json_string_value(
      json_object_get(json_array_get(json_object_get(root, "lines"), 0), "line"));
  run_result_init(&r);
  CHECK_EQ_INT(D->on_event(&r, body, strlen(body), 5), 0);
  CHECK_EQ_INT(D->finish(&r), 0);
  CHECK_EQ_INT(r.completion_tokens, 16);
  CHECK_EQ_INT(r.prompt_tokens, 27);
  CHECK_EQ_INT(r.cached_tokens, 0);
  CHECK_EQ_U64(r.n_chunks, 1);
  CHECK_STR(r.finish_reason, "length");
  CHECK_NEAR(r.timings_predicted_ms, 230.078, 1e-9);
  run_result_free(&r);
  json_decref(root);
}

static void test_error_event_in_200_stream(void) {
  struct run_result r;
  run_result_init(&r);
  int last = 0;
  CHECK_EQ_INT(fx_replay("llama-server-completions-stream.json", D, &r, NULL, &last), -1);
  CHECK_EQ_INT(last, -1);
  CHECK_EQ_INT(r.error, RUN_ERR_STREAM);
  CHECK_CONTAINS(r.error_msg,
                 "The model produced output that does not match the expected Content-only format");
  CHECK_CONTAINS(r.error_msg, "server_error");
  CHECK_EQ_U64(r.n_chunks, 0);
  run_result_free(&r);
}

static void check_http(const char *fixture, enum run_error kind, const char *msg) {
  int status = 0;
  char *body = fx_body(fixture, &status);
  struct run_result r;
  run_result_init(&r);
  D->on_http_error(&r, status, body, body ? strlen(body) : 0);
  CHECK_EQ_INT(r.error, kind);
  CHECK_STR(r.error_msg, msg);
  CHECK_EQ_INT(r.http_status, status);
  run_result_free(&r);
  free(body);
}

static void test_http_errors_fixtures(void) {
  check_http("llama-server-error-404.json", RUN_ERR_HTTP, "HTTP 404: File Not Found");
  check_http("llama-server-error-bad-request.json", RUN_ERR_HTTP,
             "HTTP 400: Expected 'messages' to be an array");
  /* The recorded body appears twice back to back: the first value counts. */
  check_http("llama-server-error-context-overflow.json", RUN_ERR_CONTEXT_OVERFLOW,
             "HTTP 400: request (5019 tokens) exceeds the available context size (4096 "
             "tokens), try increasing it");
}

static void http_case(int status, const char *body, enum run_error kind, const char *msg) {
  struct run_result r;
  run_result_init(&r);
  D->on_http_error(&r, status, body, body ? strlen(body) : 0);
  CHECK_EQ_INT(r.error, kind);
  CHECK_STR(r.error_msg, msg);
  run_result_free(&r);
}

static void test_http_errors_other_servers(void) {
  /* vLLM (docs): {"object":"error","message",...,"code":400} */
  http_case(400,
            "{\"object\":\"error\",\"message\":\"This model's maximum context length is 2048 "
            "tokens. However, you requested 2100 tokens.\",\"type\":\"BadRequestError\","
            "\"param\":null,\"code\":400}",
            RUN_ERR_CONTEXT_OVERFLOW,
            "HTTP 400: This model's maximum context length is 2048 tokens. However, you "
            "requested 2100 tokens.");
  /* OpenAI: code context_length_exceeded */
  http_case(400,
            "{\"error\":{\"message\":\"too long\",\"type\":\"invalid_request_error\","
            "\"code\":\"context_length_exceeded\"}}",
            RUN_ERR_CONTEXT_OVERFLOW, "HTTP 400: too long");
  http_case(401,
            "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":"
            "\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
            RUN_ERR_HTTP, "HTTP 401: Incorrect API key provided");
  /* Ollama: {"error": "..."} */
  http_case(404, "{\"error\":\"model \\\"qwen9\\\" not found, try pulling it first\"}",
            RUN_ERR_HTTP, "HTTP 404: model \"qwen9\" not found, try pulling it first");
  /* FastAPI validation error */
  http_case(422, "{\"detail\":[{\"loc\":[\"body\",\"model\"],\"msg\":\"field required\"}]}",
            RUN_ERR_HTTP, "HTTP 422: field required");
  /* plain text, with newlines flattened to one line */
  http_case(502, "Bad Gateway\r\n\r\nupstream  down\n", RUN_ERR_HTTP,
            "HTTP 502: Bad Gateway upstream down");
  http_case(503, "", RUN_ERR_HTTP, "HTTP 503 (empty body)");
  http_case(500, NULL, RUN_ERR_HTTP, "HTTP 500 (empty body)");
  /* a huge message stays one bounded line */
  static char big[5000];
  memset(big, 'a', sizeof big - 1);
  big[100] = '\n';
  struct run_result r;
  run_result_init(&r);
  D->on_http_error(&r, 500, big, strlen(big));
  CHECK(strlen(r.error_msg) < sizeof r.error_msg);
  CHECK(strchr(r.error_msg, '\n') == NULL);
  CHECK_EQ_INT(r.error, RUN_ERR_HTTP);
  run_result_free(&r);
}

static void test_build_requests(void) {
  char path[128];
  char *body = NULL;
  struct tm_err err = {{0}};
  struct backend_request req = {.model = "qwen", .prompt = "Hi \"there\"\n", .max_tokens = 64,
                                .stream = true};
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, sizeof path, &body, &err), 0);
  CHECK_STR(path, "/v1/chat/completions");
  json_t *o = fx_parse_body(body);
  CHECK_EQ_INT(json_object_size(o), 6);
  CHECK_STR(json_string_value(json_object_get(o, "model")), "qwen");
  json_t *msgs = json_object_get(o, "messages");
  CHECK_EQ_INT(json_array_size(msgs), 1);
  CHECK_EQ_INT(json_object_size(json_array_get(msgs, 0)), 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "user");
  CHECK_STR(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
            "Hi \"there\"\n");
  CHECK_EQ_INT(json_integer_value(json_object_get(o, "max_tokens")), 64);
  CHECK(json_is_integer(json_object_get(o, "temperature")) &&
        json_integer_value(json_object_get(o, "temperature")) == 0);
  CHECK(json_is_true(json_object_get(o, "stream")));
  CHECK(json_is_true(json_object_get(json_object_get(o, "stream_options"), "include_usage")));
  CHECK(json_object_get(o, "seed") == NULL);
  CHECK(json_object_get(o, "ignore_eos") == NULL);
  CHECK(json_object_get(o, "min_tokens") == NULL);
  json_decref(o);
  free(body);

  /* completions, no model, seed, exact length */
  struct backend_request req2 = {.model = "", .prompt = "Once upon", .max_tokens = 400,
                                 .stream = true, .seed = 42, .exact_length = true};
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req2, path, sizeof path, &body, &err), 0);
  CHECK_STR(path, "/v1/completions");
  o = fx_parse_body(body);
  CHECK(json_object_get(o, "model") == NULL);
  CHECK(json_object_get(o, "messages") == NULL);
  CHECK_STR(json_string_value(json_object_get(o, "prompt")), "Once upon");
  CHECK_EQ_INT(json_integer_value(json_object_get(o, "max_tokens")), 400);
  CHECK_EQ_INT(json_integer_value(json_object_get(o, "seed")), 42);
  CHECK(json_is_true(json_object_get(o, "ignore_eos")));
  CHECK_EQ_INT(json_integer_value(json_object_get(o, "min_tokens")), 400);
  CHECK(json_is_true(json_object_get(o, "stream")));
  CHECK_EQ_INT(json_object_size(o), 8);
  json_decref(o);
  free(body);

  /* a helper request without streaming asks no stream_options; NULL model */
  struct backend_request req3 = {.model = NULL, .prompt = "x", .max_tokens = 1, .stream = false};
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req3, path, sizeof path, &body, &err), 0);
  o = fx_parse_body(body);
  CHECK(json_is_false(json_object_get(o, "stream")));
  CHECK(json_object_get(o, "stream_options") == NULL);
  CHECK(json_object_get(o, "model") == NULL);
  json_decref(o);
  free(body);

  /* invalid UTF-8 in the prompt: a clean error, no body */
  struct backend_request bad = {.prompt = "bad \xff utf8", .max_tokens = 1, .stream = true};
  body = NULL;
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &bad, path, sizeof path, &body, &err), -1);
  CHECK(body == NULL);
  CHECK_CONTAINS(err.msg, "UTF-8");
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &bad, path, sizeof path, &body, &err), -1);
  CHECK(body == NULL);
  /* a path buffer too small */
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, 5, &body, &err), -1);
  CHECK(body == NULL);
}

static void test_reasoning_in_both_fields(void) {
  /* Rapid-MLX and mlx-vlm's alias send one reasoning text under both names in
   * one delta: it is one piece, not two (the audit: 40 tokens reported, 60
   * pieces counted). Different texts in the two fields are both kept. */
  const char *ev[] = {
      "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"ab\","
      "\"reasoning\":\"ab\"},\"finish_reason\":null}]}",
      "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"cd\","
      "\"reasoning_content\":\"cd\"},\"finish_reason\":null}]}",
      "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"x\","
      "\"reasoning\":\"y\"},\"finish_reason\":null}]}",
      "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},"
      "\"finish_reason\":\"stop\"}]}",
      "{\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,"
      "\"total_tokens\":9}}",
      " [DONE]\r",
  };
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev, 6), 1);
  CHECK_EQ_INT(D->finish(&r), 0);
  CHECK_EQ_U64(r.n_chunks, 5);
  if (r.n_chunks == 5) {
    CHECK_STR(fx_chunk_text(&r, 0), "ab");
    CHECK_STR(fx_chunk_text(&r, 1), "cd");
    CHECK_STR(fx_chunk_text(&r, 2), "x");
    CHECK_STR(fx_chunk_text(&r, 3), "y");
    CHECK_EQ_INT(r.chunks[4].field, CHUNK_CONTENT);
  }
  CHECK_EQ_U64(r.text_len, 8);
  run_result_free(&r);
}

static void test_vllm_reasoning_and_usage(void) {
  /* Written from vLLM's docs (no capture): reasoning in delta.reasoning (newer)
   * or delta.reasoning_content (older); "usage": null until the final chunk,
   * which has "choices": [] and the usage with reasoning_tokens. */
  const char *ev[] = {
      "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"Qwen/Qwen3-8B\","
      "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
      "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}",
      "{\"id\":\"chatcmpl-1\",\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{\"index\":0,\"delta\":"
      "{\"reasoning\":\"Let me think\"},\"finish_reason\":null}],\"usage\":null}",
      "{\"id\":\"chatcmpl-1\",\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{\"index\":0,\"delta\":"
      "{\"reasoning_content\":\" more\"},\"finish_reason\":null}],\"usage\":null}",
      "{\"id\":\"chatcmpl-1\",\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{\"index\":0,\"delta\":"
      "{\"content\":\"Answer\"},\"finish_reason\":\"length\"}],\"usage\":null}",
      "{\"id\":\"chatcmpl-1\",\"model\":\"Qwen/Qwen3-8B\",\"choices\":[],\"usage\":"
      "{\"prompt_tokens\":50,\"total_tokens\":70,\"completion_tokens\":20,"
      "\"prompt_tokens_details\":{\"cached_tokens\":32},"
      "\"completion_tokens_details\":{\"reasoning_tokens\":12}}}",
      " [DONE]\r",
  };
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev, 6), 1);
  CHECK_EQ_INT(D->finish(&r), 0);
  CHECK_EQ_U64(r.n_chunks, 3);
  if (r.n_chunks == 3) {
    CHECK_EQ_INT(r.chunks[0].field, CHUNK_REASONING);
    CHECK_STR(fx_chunk_text(&r, 0), "Let me think");
    CHECK_EQ_U64(r.chunks[0].t_ns, 2000000u);
    CHECK_EQ_INT(r.chunks[1].field, CHUNK_REASONING);
    CHECK_EQ_INT(r.chunks[2].field, CHUNK_CONTENT);
    CHECK_STR(fx_chunk_text(&r, 2), "Answer");
  }
  CHECK_EQ_INT(r.prompt_tokens, 50);
  CHECK_EQ_INT(r.completion_tokens, 20);
  CHECK_EQ_INT(r.cached_tokens, 32);
  CHECK_EQ_INT(r.reasoning_tokens, 12);
  CHECK_EQ_INT(r.timings_prompt_n, -1);
  CHECK(isnan(r.timings_prompt_ms));
  CHECK_STR(r.finish_reason, "length");
  CHECK_STR(r.server_model, "Qwen/Qwen3-8B");
  run_result_free(&r);
}

static void test_lmstudio_stats_and_completions_text(void) {
  /* Written from LM Studio's REST v0 docs (no capture): /api/v0/completions
   * answers with choices[0].text and a `stats` object. */
  const char *ev[] = {
      "{\"id\":\"cmpl-p9\",\"object\":\"text_completion\",\"model\":\"granite-3.0-2b-instruct\","
      "\"choices\":[{\"index\":0,\"text\":\" to find\",\"logprobs\":null,\"finish_reason\":null}]}",
      "{\"id\":\"cmpl-p9\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],"
      "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9,\"total_tokens\":14},"
      "\"stats\":{\"tokens_per_second\":57.69230769230769,\"time_to_first_token\":0.299,"
      "\"generation_time\":0.156,\"stop_reason\":\"maxPredictedTokensReached\"},"
      "\"model_info\":{\"arch\":\"granite\",\"quant\":\"Q4_K_M\",\"format\":\"gguf\","
      "\"context_length\":4096}}",
      "[DONE]",
  };
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev, 3), 1);
  CHECK_EQ_INT(D->finish(&r), 0);
  CHECK_EQ_U64(r.n_chunks, 1);
  CHECK_EQ_U64(r.text_len, 8);
  CHECK_NEAR(r.lmstudio_tok_s, 57.69230769230769, 1e-12);
  CHECK_NEAR(r.lmstudio_ttft_s, 0.299, 1e-12);
  CHECK_NEAR(r.lmstudio_generation_s, 0.156, 1e-12);
  CHECK_EQ_INT(r.cached_tokens, -1); /* not reported: never 0 by default */
  CHECK_EQ_INT(r.completion_tokens, 9);
  CHECK_STR(r.finish_reason, "length");
  run_result_free(&r);
}

static void test_no_usage(void) {
  const char *ev[] = {
      "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}",
      "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}",
      "[DONE]",
  };
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ev, 3), 1);
  CHECK_EQ_INT(D->finish(&r), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_NO_USAGE);
  CHECK_STR(r.error_msg, "the stream ended without usage: the server did not honour "
                         "stream_options.include_usage, or was cut");
  CHECK_EQ_U64(r.n_chunks, 1); /* what arrived is kept */
  run_result_free(&r);

  /* cut before anything (no events at all) */
  run_result_init(&r);
  CHECK_EQ_INT(D->finish(&r), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_NO_USAGE);
  run_result_free(&r);
}

static void expect_malformed(const char *payload, const char *msg_part) {
  struct run_result r;
  run_result_init(&r);
  int rc = D->on_event(&r, payload, strlen(payload), 1);
  CHECK_MSG(rc == -1, "payload %s: rc %d", payload, rc);
  CHECK_MSG(r.error == RUN_ERR_MALFORMED, "payload %s: error %d (%s)", payload, r.error,
            r.error_msg);
  if (msg_part) CHECK_CONTAINS(r.error_msg, msg_part);
  CHECK(strchr(r.error_msg, '\n') == NULL);
  run_result_free(&r);
}

static void test_malformed_and_wrong_types(void) {
  expect_malformed("{\"choices\":[{\"delta\":{\"content\":\"a\"}", "malformed JSON");
  expect_malformed("not json at all\n{}", "not json");
  expect_malformed("[1,2]", "an array, expected a JSON object");
  expect_malformed("42", NULL);
  expect_malformed("{\"usage\":\"x\"}", "usage is a string, expected an object");
  expect_malformed("{\"choices\":[{\"delta\":{\"content\":5}}]}",
                   "choices[0].delta.content is an integer, expected a string");
  expect_malformed("{\"choices\":[{\"delta\":{\"reasoning_content\":[]}}]}",
                   "reasoning_content");
  expect_malformed("{\"choices\":\"x\"}", "choices is a string");
  expect_malformed("{\"choices\":[5]}", "choices[0]");
  expect_malformed("{\"choices\":[{\"delta\":[]}]}", "choices[0].delta is an array");
  expect_malformed("{\"choices\":[{\"text\":{}}]}", "choices[0].text");
  expect_malformed("{\"usage\":{\"completion_tokens\":\"64\"}}", "usage.completion_tokens");
  expect_malformed("{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":true}}}",
                   "cached_tokens");
  expect_malformed("{\"timings\":{\"prompt_ms\":\"fast\"}}", "timings.prompt_ms");
  expect_malformed("{\"timings\":7}", "timings is an integer");
  expect_malformed("{\"stats\":{\"tokens_per_second\":\"1\"}}", "stats.tokens_per_second");
  expect_malformed("{\"model\":3}", "model is an integer");

  /* an error value that is not an object still reads as a stream error */
  struct run_result r;
  run_result_init(&r);
  const char *e = "{\"error\":\"boom\"}";
  CHECK_EQ_INT(D->on_event(&r, e, strlen(e), 1), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_STREAM);
  CHECK_CONTAINS(r.error_msg, "boom");
  run_result_free(&r);

  /* tolerated: nulls, empty choices, a blank payload, an integral real */
  const char *ok[] = {
      "{\"choices\":[{\"delta\":{\"content\":null},\"finish_reason\":null}],\"usage\":null}",
      "{\"choices\":[]}",
      "   ",
      "{\"choices\":[{\"delta\":{\"content\":\"x\\u0000y\"}}]}",
      "{\"usage\":{\"prompt_tokens\":7.0}}",
  };
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, ok, 5), 0);
  CHECK_EQ_INT(r.error, RUN_OK);
  CHECK_EQ_INT(r.prompt_tokens, 7);
  CHECK_EQ_INT(r.completion_tokens, -1);
  CHECK_EQ_U64(r.n_chunks, 1);
  CHECK_EQ_U64(r.text_len, 3); /* the NUL inside the JSON string is kept */
  run_result_free(&r);
  /* a count that cannot be fails the run, naming it (issue 31): negative,
   * fractional */
  const char *neg[] = {"{\"choices\":[],\"usage\":{\"prompt_tokens\":-3}}"};
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, neg, 1), -1);
  CHECK_EQ_INT(r.error, RUN_ERR_INCONSISTENT);
  CHECK_EQ_INT(r.check, RUN_CHECK_IMPOSSIBLE_COUNT);
  CHECK(strcmp(run_check_name(r.check), "impossible_count") == 0);
  CHECK(strstr(r.error_msg, "impossible count: usage.prompt_tokens is -3") != NULL);
  run_result_free(&r);
  const char *frac[] = {"{\"choices\":[],\"usage\":{\"completion_tokens\":2.5}}"};
  run_result_init(&r);
  CHECK_EQ_INT(fx_feed(D, &r, frac, 1), -1);
  CHECK(strstr(r.error_msg, "usage.completion_tokens is 2.5") != NULL);
  CHECK_EQ_INT(r.check, RUN_CHECK_IMPOSSIBLE_COUNT);
  run_result_free(&r);
}

static void test_mutations_never_crash(void) {
  const char *seeds[] = {
      "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"abc\"}}],"
      "\"model\":\"m\",\"system_fingerprint\":\"b1\"}",
      "{\"choices\":[],\"usage\":{\"completion_tokens\":64,\"prompt_tokens\":33,"
      "\"prompt_tokens_details\":{\"cached_tokens\":14}},\"timings\":{\"cache_n\":14,"
      "\"prompt_n\":19,\"prompt_ms\":148.665,\"predicted_n\":64,\"predicted_ms\":1096.075}}",
      "{\"error\":{\"code\":500,\"message\":\"x\",\"type\":\"server_error\"}}",
      "{\"choices\":[{\"text\":\"t\"}],\"stats\":{\"tokens_per_second\":5}}",
  };
  fx_mutate(D, seeds, 4, 4000);
}

static void test_dialect_for(void) {
  CHECK(dialect_for(API_OPENAI) == &dialect_openai);
  CHECK(dialect_for(API_OLLAMA) == &dialect_ollama);
  CHECK(dialect_for(API_LLAMACPP) == &dialect_llamacpp);
  CHECK(dialect_for(API_AUTO) == NULL);
  CHECK(dialect_for((enum api_family)99) == NULL);
  CHECK_STR(dialect_openai.name, "openai");
  CHECK_EQ_INT(dialect_openai.framing, FRAMING_SSE);
  CHECK_EQ_INT(dialect_ollama.framing, FRAMING_NDJSON);
  CHECK_EQ_INT(dialect_llamacpp.framing, FRAMING_SSE);
}



static void test_backend_run_replay_and_paced(void) {
  struct backend *b = NULL;
  struct fakeserver *fs = e2e_start(FS_REPLAY, FS_FLAVOR_LLAMACPP, "llama-server-chat-stream.json",
                                    false, &b, API_OPENAI, ENDPOINT_CHAT);
  if (fs) {
    struct backend_request req = {.model = "m", .prompt = "Explain", .max_tokens = 64,
                                  .stream = true, .idle_timeout_s = 10, .total_timeout_s = 30};
    struct run_result r;
    run_result_init(&r);
    CHECK_EQ_INT(backend_run(b, &req, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_EQ_INT(r.completion_tokens, 64);
    CHECK_EQ_INT(r.cached_tokens, 14);
    CHECK_STR(r.finish_reason, "length");
    static char want[65536];
    uint64_t t0;
    CHECK_EQ_U64(r.n_chunks,
                 count_content_deltas("llama-server-chat-stream.json", want, sizeof want, &t0));
    CHECK_CONTAINS(fs_last_request_body(fs), "\"include_usage\":true");
    run_result_free(&r);
    backend_free(b);
    fs_stop(fs);
  }
  /* paced llama.cpp flavor with reasoning_content: both fields arrive */
  fs = e2e_start(FS_PACED, FS_FLAVOR_LLAMACPP, NULL, true, &b, API_OPENAI, ENDPOINT_CHAT);
  if (fs) {
    struct backend_request req = {.prompt = "a b c d", .max_tokens = 20, .stream = true,
                                  .exact_length = true, .idle_timeout_s = 10,
                                  .total_timeout_s = 30};
    struct run_result r;
    run_result_init(&r);
    CHECK_EQ_INT(backend_run(b, &req, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_EQ_INT(r.completion_tokens, 20);
    size_t n_reason = 0, n_content = 0;
    for (size_t i = 0; i < r.n_chunks; i++) {
      if (r.chunks[i].field == CHUNK_REASONING) n_reason++;
      else n_content++;
    }
    CHECK(n_reason > 0 && n_content > 0);
    CHECK_EQ_U64(n_reason + n_content, 20);
    CHECK(r.timings_predicted_n == 20);
    run_result_free(&r);
    backend_free(b);
    fs_stop(fs);
  }
}

/* A workload file's job: earlier turns as messages, images as content parts
 * after the text (the nonce first); the completion endpoint puts the turns'
 * text before the prompt and refuses images. */
static void test_build_history_and_images(void) {
  char path[128];
  char *body = NULL;
  struct tm_err err = {{0}};
  const struct backend_message hist[] = {{"system", "Reply in JSON."}, {"user", "Hi"},
                                         {"assistant", "Hello"}};
  const char *const imgs[] = {"data:image/png;base64,QUJD", "https://example.com/p.jpg"};
  struct backend_request req = {.prompt = "Reference n1. Which meter?", .history = hist,
                                .n_history = 3, .images = imgs, .n_images = 2, .stream = true};
  CHECK_EQ_INT(D->build(ENDPOINT_CHAT, &req, path, sizeof path, &body, &err), 0);
  json_t *o = fx_parse_body(body);
  json_t *msgs = json_object_get(o, "messages");
  CHECK_EQ_INT(json_array_size(msgs), 4);
  CHECK_STR(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "system");
  CHECK_STR(json_string_value(json_object_get(json_array_get(msgs, 2), "content")), "Hello");
  json_t *parts = json_object_get(json_array_get(msgs, 3), "content");
  CHECK_EQ_INT(json_array_size(parts), 3);
  CHECK_STR(json_string_value(json_object_get(json_array_get(parts, 0), "type")), "text");
  CHECK_STR(json_string_value(json_object_get(json_array_get(parts, 0), "text")),
            "Reference n1. Which meter?");
  CHECK_STR(json_string_value(json_object_get(json_array_get(parts, 1), "type")), "image_url");
  CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(parts, 1), "image_url"), "url")),
            "data:image/png;base64,QUJD");
  CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(parts, 2), "image_url"), "url")),
            "https://example.com/p.jpg");
  json_decref(o);
  free(body);
  body = NULL;
  req.n_images = 0;
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req, path, sizeof path, &body, &err), 0);
  o = fx_parse_body(body);
  CHECK_STR(json_string_value(json_object_get(o, "prompt")),
            "Reply in JSON.\n\nHi\n\nHello\n\nReference n1. Which meter?");
  json_decref(o);
  free(body);
  body = NULL;
  req.n_images = 1;
  CHECK_EQ_INT(D->build(ENDPOINT_COMPLETION, &req, path, sizeof path, &body, &err), -1);
  CHECK(strstr(err.msg, "chat endpoint") != NULL);
  CHECK(body == NULL);
}

void tm_run_tests(void) {
  TM_RUN(test_backend_run_replay_and_paced);
  TM_RUN(test_chat_stream_fixture);
  TM_RUN(test_prompt_cache_trap);
  TM_RUN(test_generate_400);
  TM_RUN(test_nonstream_answer);
  TM_RUN(test_error_event_in_200_stream);
  TM_RUN(test_http_errors_fixtures);
  TM_RUN(test_http_errors_other_servers);
  TM_RUN(test_build_requests);
  TM_RUN(test_build_history_and_images);
  TM_RUN(test_vllm_reasoning_and_usage);
  TM_RUN(test_reasoning_in_both_fields);
  TM_RUN(test_lmstudio_stats_and_completions_text);
  TM_RUN(test_no_usage);
  TM_RUN(test_malformed_and_wrong_types);
  TM_RUN(test_mutations_never_crash);
  TM_RUN(test_dialect_for);
}
