/* dialect_ollama: Ollama's native API (/api/chat, /api/generate; NDJSON).
 *
 * Request: {"model", "messages":[{"role":"user","content"}] | "prompt",
 *           "stream", "options": {"num_predict", "temperature": 0, "seed",
 *           "num_thread"}, "keep_alive": 0 when unloading after the run}.
 * Stream lines: {"model", "created_at", "message": {"role", "content",
 *   "thinking"}, "done": false} (chat) or {"response", "thinking", ...}
 *   (generate); the last line has "done": true with "done_reason",
 *   "total_duration", "load_duration", "prompt_eval_count",
 *   "prompt_eval_duration", "eval_count", "eval_duration" (durations in ns).
 *   Errors come as {"error": "..."}.
 * Ollama reports no cached-token count: a repeated prompt shows only as a small
 * prompt_eval_count, so cached_tokens stays -1 (not reported), never 0.
 * Ollama has no way to force the output length (no ignore_eos): num_predict is
 * a maximum; exact_length changes nothing here. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/dialect_util.h"

static int ollama_build(enum api_endpoint ep, const struct backend_request *req, char *path,
                        size_t path_n, char **body, struct tm_err *err) {
  *body = NULL;
  const char *p = ep == ENDPOINT_CHAT ? "/api/chat" : "/api/generate";
  if ((size_t)snprintf(path, path_n, "%s", p) >= path_n)
    return tm_errf(err, "request path buffer too small");
  json_t *o = json_object();
  json_t *opt = json_object();
  if (!o || !opt) {
    json_decref(o);
    json_decref(opt);
    return tm_errf(err, "out of memory building the request");
  }
  int bad = 0;
  if (req->model && req->model[0]) bad |= json_object_set_new(o, "model", json_string(req->model));
  const char *prompt = req->prompt ? req->prompt : "";
  /* Ollama takes images as base64 (no URLs, no data: prefix) */
  json_t *imgs = req->n_images ? json_array() : NULL;
  for (size_t i = 0; i < req->n_images; i++) {
    const char *b = du_data_url_base64(req->images[i]);
    if (!b) {
      json_decref(imgs);
      json_decref(o);
      json_decref(opt);
      return tm_errf(err, "Ollama takes image files, not URLs (%.80s): give a path in the "
                          "workload file", req->images[i]);
    }
    bad |= json_array_append_new(imgs, json_string(b));
  }
  if (ep == ENDPOINT_CHAT) {
    json_t *msgs = json_array();
    if (!msgs) bad = 1;
    for (size_t i = 0; msgs && i < req->n_history; i++)
      bad |= json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", req->history[i].role,
                                                   "content", req->history[i].content));
    json_t *msg = json_pack("{s:s, s:s}", "role", "user", "content", prompt);
    if (msg && imgs) bad |= json_object_set_new(msg, "images", imgs);
    else json_decref(imgs);
    if (!msg || !msgs) bad = 1;
    else bad |= json_array_append_new(msgs, msg);
    if (msgs) bad |= json_object_set_new(o, "messages", msgs);
  } else {
    /* /api/generate takes images beside its prompt */
    struct backend_request text = *req;
    text.n_images = 0;
    du_set_text_prompt(o, &text, "", &bad, err);
    if (imgs) bad |= json_object_set_new(o, "images", imgs);
  }
  bad |= json_object_set_new(o, "stream", json_boolean(req->stream));
  if (req->max_tokens > 0)
    bad |= json_object_set_new(opt, "num_predict", json_integer(req->max_tokens));
  bad |= json_object_set_new(opt, "temperature", json_integer(0));
  if (req->seed) bad |= json_object_set_new(opt, "seed", json_integer(req->seed));
  if (req->num_thread) bad |= json_object_set_new(opt, "num_thread", json_integer(req->num_thread));
  bad |= json_object_set_new(o, "options", opt);
  if (req->unload_after) bad |= json_object_set_new(o, "keep_alive", json_integer(0));
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

/* A duration in ns into ms (stored only when reported). */
static void read_ns_as_ms(struct du_reader *rd, json_t *o, const char *key, double *out_ms) {
  int64_t ns = -1;
  if (du_count(rd, o, key, key, &ns)) *out_ms = (double)ns / 1e6;
}

static int ollama_on_event(struct run_result *r, const char *payload, size_t len, uint64_t t_ns) {
  bool empty;
  json_t *root = du_parse_event(r, payload, len, &empty);
  if (!root) return empty ? 0 : -1;

  json_t *e = json_object_get(root, "error");
  if (e && !json_is_null(e)) {
    char msg[300];
    if (!du_error_text(root, msg, sizeof msg, NULL, 0, NULL, 0)) snprintf(msg, sizeof msg, "(no message)");
    run_result_fail(r, RUN_ERR_STREAM, "error in the stream: %s", msg);
    json_decref(root);
    return -1;
  }

  struct du_reader rd = {.r = r, .failed = false};
  du_copy(&rd, root, "model", "model", r->server_model, sizeof r->server_model);
  const char *s;
  size_t n = 0;
  int rc = 0;
  json_t *msg = du_obj(&rd, root, "message", "message"); /* /api/chat */
  if (msg) {
    if ((s = du_str(&rd, msg, "thinking", "message.thinking", &n)) && n > 0)
      rc |= du_add_text(r, t_ns, CHUNK_REASONING, s, n, 0);
    if (!rc && (s = du_str(&rd, msg, "content", "message.content", &n)) && n > 0)
      rc |= du_add_text(r, t_ns, CHUNK_CONTENT, s, n, 0);
  }
  /* /api/generate */
  if (!rc && (s = du_str(&rd, root, "thinking", "thinking", &n)) && n > 0)
    rc |= du_add_text(r, t_ns, CHUNK_REASONING, s, n, 0);
  if (!rc && (s = du_str(&rd, root, "response", "response", &n)) && n > 0)
    rc |= du_add_text(r, t_ns, CHUNK_CONTENT, s, n, 0);

  bool done = du_bool(&rd, root, "done", "done");
  if (!rc && !rd.failed && done) {
    du_count(&rd, root, "prompt_eval_count", "prompt_eval_count", &r->prompt_tokens);
    du_count(&rd, root, "eval_count", "eval_count", &r->completion_tokens);
    read_ns_as_ms(&rd, root, "total_duration", &r->ollama_total_ms);
    read_ns_as_ms(&rd, root, "load_duration", &r->ollama_load_ms);
    read_ns_as_ms(&rd, root, "prompt_eval_duration", &r->ollama_prompt_eval_ms);
    read_ns_as_ms(&rd, root, "eval_duration", &r->ollama_eval_ms);
    du_copy(&rd, root, "done_reason", "done_reason", r->finish_reason, sizeof r->finish_reason);
    if (!r->finish_reason[0] && !rd.failed)
      snprintf(r->finish_reason, sizeof r->finish_reason, "stop"); /* done, reason unsaid */
  }
  json_decref(root);
  if (rc || rd.failed) return -1;
  return done ? 1 : 0;
}

static void ollama_on_http_error(struct run_result *r, int status, const char *body, size_t len) {
  du_http_error(r, status, body, len);
}

/* The final line is the one with done: true and eval_count; a load-only answer
 * (done_reason "load") or a cut stream never brings eval_count. */
static int ollama_finish(struct run_result *r) {
  if (r->error != RUN_OK) return -1;
  if (r->completion_tokens < 0) {
    if (r->finish_reason[0])
      run_result_fail(r, RUN_ERR_NO_USAGE, "the final line (done_reason \"%s\") carried no eval_count",
                      r->finish_reason);
    else
      run_result_fail(r, RUN_ERR_NO_USAGE, "the stream ended without its final \"done\": true line");
    return -1;
  }
  return 0;
}

const struct dialect dialect_ollama = {
    .name = "ollama",
    .framing = FRAMING_NDJSON,
    .build = ollama_build,
    .on_event = ollama_on_event,
    .on_http_error = ollama_on_http_error,
    .finish = ollama_finish,
};
