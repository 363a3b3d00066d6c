/* dialect_openai: the OpenAI-compatible wire format (/v1/chat/completions,
 * /v1/completions, SSE), as spoken by llama.cpp's llama-server, vLLM, LM Studio,
 * MLX and hosted APIs, with each runtime's extras read when present:
 *   - usage (stream_options.include_usage): prompt_tokens, completion_tokens,
 *     prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens;
 *   - llama.cpp `timings` (cache_n, prompt_n, prompt_ms, predicted_n, predicted_ms,
 *     draft_n, draft_n_accepted) on the last chunk;
 *   - reasoning text in delta.reasoning_content (llama.cpp, older vLLM) or
 *     delta.reasoning (newer vLLM);
 *   - LM Studio REST v0 `stats` (tokens_per_second, time_to_first_token,
 *     generation_time).
 * Requests ask for exact lengths with "ignore_eos" (llama.cpp, vLLM) and
 * "min_tokens" (vLLM) only when exact_length is set: servers that do not know
 * them ignore them, but a strict hosted API may reject them, so the caller
 * decides. The request never carries anything secret (the key is a header). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/dialect_util.h"

static int openai_build(enum api_endpoint ep, const struct backend_request *req, char *path,
                        size_t path_n, char **body, struct tm_err *err) {
  *body = NULL;
  const char *p = ep == ENDPOINT_CHAT ? "/v1/chat/completions" : "/v1/completions";
  if ((size_t)snprintf(path, path_n, "%s", p) >= path_n)
    return tm_errf(err, "request path buffer too small");
  json_t *o = json_object();
  if (!o) return tm_errf(err, "out of memory building the request");
  int bad = 0;
  if (req->model && req->model[0]) bad |= json_object_set_new(o, "model", json_string(req->model));
  const char *prompt = req->prompt ? req->prompt : "";
  if (ep == ENDPOINT_CHAT) {
    json_t *msgs = json_array();
    if (!msgs) bad = 1;
    for (size_t i = 0; msgs && i < req->n_history; i++)
      bad |= json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", req->history[i].role,
                                                   "content", req->history[i].content));
    json_t *content = NULL;
    if (req->n_images == 0) {
      content = json_string(prompt);
    } else { /* content parts: the text (with the nonce) first, then the images */
      content = json_array();
      bad |= json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", prompt));
      for (size_t i = 0; i < req->n_images; i++)
        bad |= json_array_append_new(
            content, json_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url",
                               req->images[i]));
    }
    json_t *msg = content ? json_pack("{s:s, s:o}", "role", "user", "content", content) : NULL;
    if (!msg || !msgs || json_array_append_new(msgs, msg) != 0) {
      json_decref(msgs);
      json_decref(o);
      return tm_errf(err, "out of memory building the request (or the prompt is not UTF-8)");
    }
    bad |= json_object_set_new(o, "messages", msgs);
  } else {
    if (du_set_text_prompt(o, req, "--endpoint chat", &bad, err) != 0) {
      json_decref(o);
      return -1;
    }
  }
  if (req->max_tokens > 0)
    bad |= json_object_set_new(o, "max_tokens", json_integer(req->max_tokens));
  bad |= json_object_set_new(o, "temperature", json_integer(0));
  bad |= json_object_set_new(o, "stream", json_boolean(req->stream));
  if (req->stream)
    bad |= json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
  if (req->seed) bad |= json_object_set_new(o, "seed", json_integer(req->seed));
  if (req->exact_length) {
    bad |= json_object_set_new(o, "ignore_eos", json_true());
    if (req->max_tokens > 0)
      bad |= json_object_set_new(o, "min_tokens", json_integer(req->max_tokens));
  }
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

/* The text of choices[0]: delta (chat stream), text (completions), message
 * (a non-streamed chat answer). Reasoning first: it precedes the answer. */
static int read_choice(struct du_reader *rd, json_t *ch, uint64_t t_ns) {
  struct run_result *r = rd->r;
  const char *s;
  size_t n = 0;
  json_t *delta = du_obj(rd, ch, "delta", "choices[0].delta");
  json_t *message = du_obj(rd, ch, "message", "choices[0].message");
  json_t *m = delta ? delta : message;
  const char *pfx = delta ? "choices[0].delta" : "choices[0].message";
  if (m) {
    char path[64];
    /* A server may send one text under both names (Rapid-MLX, mlx-vlm's
     * alias): the same text in both fields of one delta is one piece. */
    const char *rc;
    size_t rn = 0;
    snprintf(path, sizeof path, "%s.reasoning_content", pfx);
    if ((rc = du_str(rd, m, "reasoning_content", path, &rn)) && rn > 0)
      if (du_add_text(r, t_ns, CHUNK_REASONING, rc, rn, 0)) return -1;
    snprintf(path, sizeof path, "%s.reasoning", pfx);
    if ((s = du_str(rd, m, "reasoning", path, &n)) && n > 0 &&
        !(rc && rn == n && memcmp(rc, s, n) == 0))
      if (du_add_text(r, t_ns, CHUNK_REASONING, s, n, 0)) return -1;
    snprintf(path, sizeof path, "%s.content", pfx);
    if ((s = du_str(rd, m, "content", path, &n)) && n > 0)
      if (du_add_text(r, t_ns, CHUNK_CONTENT, s, n, 0)) return -1;
  }
  if ((s = du_str(rd, ch, "text", "choices[0].text", &n)) && n > 0)
    if (du_add_text(r, t_ns, CHUNK_CONTENT, s, n, 0)) return -1;
  du_copy(rd, ch, "finish_reason", "choices[0].finish_reason", r->finish_reason,
          sizeof r->finish_reason);
  return rd->failed ? -1 : 0;
}

static int openai_on_event(struct run_result *r, const char *payload, size_t len, uint64_t t_ns) {
  if (du_payload_is(payload, len, "[DONE]")) return 1;
  bool empty;
  json_t *root = du_parse_event(r, payload, len, &empty);
  if (!root) return empty ? 0 : -1;

  /* An error event inside a 200 stream (llama.cpp sends
   * data: {"error":{"code":500,"message":...,"type":"server_error"}}). */
  json_t *e = json_object_get(root, "error");
  if (e && !json_is_null(e)) {
    char msg[300], type[64], code[64];
    if (!du_error_text(root, msg, sizeof msg, type, sizeof type, code, sizeof code))
      snprintf(msg, sizeof msg, "(no message)");
    if (type[0] || code[0])
      run_result_fail(r, RUN_ERR_STREAM, "error event in the stream: %s (%s%s%s)", msg, type,
                      type[0] && code[0] ? " " : "", code);
    else
      run_result_fail(r, RUN_ERR_STREAM, "error event in the stream: %s", msg);
    json_decref(root);
    return -1;
  }

  struct du_reader rd = {.r = r, .failed = false};
  du_copy(&rd, root, "model", "model", r->server_model, sizeof r->server_model);
  du_copy(&rd, root, "system_fingerprint", "system_fingerprint", r->system_fingerprint,
          sizeof r->system_fingerprint);

  json_t *choices = du_arr(&rd, root, "choices", "choices");
  if (choices && json_array_size(choices) > 0) {
    json_t *ch = json_array_get(choices, 0);
    if (!json_is_object(ch)) {
      run_result_fail(r, RUN_ERR_MALFORMED, "malformed event: choices[0] is not an object");
      json_decref(root);
      return -1;
    }
    if (read_choice(&rd, ch, t_ns) != 0) {
      json_decref(root);
      return -1;
    }
  }

  json_t *usage = du_obj(&rd, root, "usage", "usage");
  if (usage) {
    du_count(&rd, usage, "prompt_tokens", "usage.prompt_tokens", &r->prompt_tokens);
    du_count(&rd, usage, "completion_tokens", "usage.completion_tokens", &r->completion_tokens);
    json_t *pd = du_obj(&rd, usage, "prompt_tokens_details", "usage.prompt_tokens_details");
    du_count(&rd, pd, "cached_tokens", "usage.prompt_tokens_details.cached_tokens",
             &r->cached_tokens);
    json_t *cd =
        du_obj(&rd, usage, "completion_tokens_details", "usage.completion_tokens_details");
    du_count(&rd, cd, "reasoning_tokens", "usage.completion_tokens_details.reasoning_tokens",
             &r->reasoning_tokens);
  }
  du_read_timings(&rd, du_obj(&rd, root, "timings", "timings"));

  json_t *stats = du_obj(&rd, root, "stats", "stats"); /* LM Studio REST v0 */
  if (stats) {
    du_real(&rd, stats, "tokens_per_second", "stats.tokens_per_second", &r->lmstudio_tok_s);
    du_real(&rd, stats, "time_to_first_token", "stats.time_to_first_token",
            &r->lmstudio_ttft_s);
    du_real(&rd, stats, "generation_time", "stats.generation_time", &r->lmstudio_generation_s);
  }
  json_decref(root);
  return rd.failed ? -1 : 0;
}

static void openai_on_http_error(struct run_result *r, int status, const char *body, size_t len) {
  du_http_error(r, status, body, len);
}

/* "Usage seen" is read off the counters themselves: the dialect keeps no state
 * of its own, so the same run_result can be replayed into a fresh call. */
static int openai_finish(struct run_result *r) {
  if (r->error != RUN_OK) return -1;
  if (r->completion_tokens < 0 && r->prompt_tokens < 0) {
    run_result_fail(r, RUN_ERR_NO_USAGE,
                    "the stream ended without usage: the server did not honour "
                    "stream_options.include_usage, or was cut");
    return -1;
  }
  return 0;
}

const struct dialect dialect_openai = {
    .name = "openai",
    .framing = FRAMING_SSE,
    .build = openai_build,
    .on_event = openai_on_event,
    .on_http_error = openai_on_http_error,
    .finish = openai_finish,
};
