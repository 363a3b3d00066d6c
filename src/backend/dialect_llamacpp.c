/* dialect_llamacpp: llama.cpp's own /completion endpoint (SSE).
 *
 * Request: {"prompt", "n_predict", "temperature": 0, "stream", "cache_prompt":
 *   true, "ignore_eos": true when exact_length, "seed" when set, "model" when
 *   named (a router-mode server picks by it; a single-model server ignores it)}.
 *   cache_prompt stays on, as the server's default: the method detects reuse
 *   from timings.cache_n and a fresh nonce per prompt, it does not hide it.
 * Events: {"content", "tokens": [ids], "stop": false, "tokens_predicted",
 *   "tokens_evaluated"} per token; the last has "stop": true, "stop_type"
 *   ("limit", "eos", "word"), "model", "timings" {...}.
 * Beware: the last event's `tokens_cached` is the slot's whole context after
 * the request (prompt + generated), NOT how much of the prompt was reused;
 * reuse is timings.cache_n. So tokens_cached is deliberately not read.
 * The endpoint argument is ignored: there is only one endpoint. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/dialect_util.h"

static int llamacpp_build(enum api_endpoint ep, const struct backend_request *req, char *path,
                          size_t path_n, char **body, struct tm_err *err) {
  (void)ep;
  *body = NULL;
  if ((size_t)snprintf(path, path_n, "/completion") >= path_n)
    return tm_errf(err, "request path buffer too small");
  json_t *o = json_object();
  if (!o) return tm_errf(err, "out of memory building the request");
  int bad = 0;
  if (du_set_text_prompt(o, req, "--api openai --endpoint chat", &bad, err) != 0) {
    json_decref(o);
    return -1;
  }
  if (req->model && req->model[0]) bad |= json_object_set_new(o, "model", json_string(req->model));
  if (req->max_tokens > 0)
    bad |= json_object_set_new(o, "n_predict", json_integer(req->max_tokens));
  bad |= json_object_set_new(o, "temperature", json_integer(0));
  bad |= json_object_set_new(o, "stream", json_boolean(req->stream));
  bad |= json_object_set_new(o, "cache_prompt", json_true());
  if (req->exact_length) bad |= json_object_set_new(o, "ignore_eos", json_true());
  if (req->seed) bad |= json_object_set_new(o, "seed", json_integer(req->seed));
  if (bad) {
    json_decref(o);
    return tm_errf(err, "building the request failed (out of memory, or the prompt or model "
                        "name is not valid UTF-8)");
  }
  *body = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!*body) return tm_errf(err, "out of memory serializing the request");
  return 0;
}

/* llama.cpp's stop_type in OpenAI's finish_reason words, so that every
 * dialect reports "length" for a run cut by the token limit. */
static const char *finish_from_stop_type(const char *st) {
  if (!st || !st[0]) return "stop";
  if (strcmp(st, "limit") == 0) return "length";
  if (strcmp(st, "eos") == 0 || strcmp(st, "word") == 0) return "stop";
  return st;
}

static int llamacpp_on_event(struct run_result *r, const char *payload, size_t len,
                             uint64_t t_ns) {
  bool empty;
  json_t *root = du_parse_event(r, payload, len, &empty);
  if (!root) return empty ? 0 : -1;

  json_t *e = json_object_get(root, "error");
  if (e && !json_is_null(e)) {
    char msg[300], type[64], code[64];
    if (!du_error_text(root, msg, sizeof msg, type, sizeof type, code, sizeof code))
      snprintf(msg, sizeof msg, "(no message)");
    if (type[0])
      run_result_fail(r, RUN_ERR_STREAM, "error event in the stream: %s (%s)", msg, type);
    else
      run_result_fail(r, RUN_ERR_STREAM, "error event in the stream: %s", msg);
    json_decref(root);
    return -1;
  }

  struct du_reader rd = {.r = r, .failed = false};
  json_t *tokens = du_arr(&rd, root, "tokens", "tokens");
  uint32_t n_tokens = tokens ? (uint32_t)json_array_size(tokens) : 0;
  size_t n = 0;
  const char *s = du_str(&rd, root, "content", "content", &n);
  int rc = 0;
  if (s && n > 0) rc = du_add_text(r, t_ns, CHUNK_CONTENT, s, n, n_tokens);
  du_count(&rd, root, "tokens_predicted", "tokens_predicted", &r->completion_tokens);
  du_count(&rd, root, "tokens_evaluated", "tokens_evaluated", &r->prompt_tokens);
  du_copy(&rd, root, "model", "model", r->server_model, sizeof r->server_model);
  bool stop = du_bool(&rd, root, "stop", "stop");
  if (stop && !rd.failed) {
    du_read_timings(&rd, du_obj(&rd, root, "timings", "timings"));
    const char *st = du_str(&rd, root, "stop_type", "stop_type", NULL);
    if (!rd.failed)
      snprintf(r->finish_reason, sizeof r->finish_reason, "%s", finish_from_stop_type(st));
  }
  json_decref(root);
  if (rc || rd.failed) return -1;
  return stop ? 1 : 0;
}

static void llamacpp_on_http_error(struct run_result *r, int status, const char *body,
                                   size_t len) {
  du_http_error(r, status, body, len);
}

/* Per-token events carry running counts, so the counters alone do not prove
 * the end was reached: the "stop": true event (which sets finish_reason) does. */
static int llamacpp_finish(struct run_result *r) {
  if (r->error != RUN_OK) return -1;
  if (!r->finish_reason[0] || r->completion_tokens < 0) {
    run_result_fail(r, RUN_ERR_NO_USAGE,
                    "the stream ended without its final \"stop\": true event (cut short?)");
    return -1;
  }
  return 0;
}

const struct dialect dialect_llamacpp = {
    .name = "llamacpp",
    .framing = FRAMING_SSE,
    .build = llamacpp_build,
    .on_event = llamacpp_on_event,
    .on_http_error = llamacpp_on_http_error,
    .finish = llamacpp_finish,
};
