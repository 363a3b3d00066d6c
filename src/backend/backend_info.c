/* backend_info: what a server is and says about itself, by plain (non-streamed)
 * requests through http_request: API detection, server identity, model
 * listing, and token counting with the server's own tokenizer.
 *
 * Probes, and what each answer means:
 *   GET /api/version   {"version": "0.6.2"}                     -> Ollama
 *   GET /props         {"build_info", "default_generation_settings": {"n_ctx"},
 *                       "model_path", "model_alias"}            -> llama.cpp
 *   GET /api/v0/models {"data": [{"id", "state", "arch", "quantization",
 *                       "max_context_length", ...}]}            -> LM Studio
 *   GET /v1/models     {"data": [{"id", "owned_by", "max_model_len"}]}
 *                       (owned_by "vllm" -> vLLM; GET /version has its version)
 *   POST /tokenize     llama.cpp {"content"} -> {"tokens": [...]};
 *                      vLLM {"model", "prompt"} -> {"count", "tokens", ...}
 * llama.cpp is detected as API_OPENAI: its OpenAI endpoints carry the same
 * `timings` as /completion and the same request works on every other server;
 * the native dialect is used only when asked for (--api llamacpp).
 * Token counts: llama.cpp's /tokenize adds no BOS by default (add_special
 * false) while vLLM's adds special tokens; both count the text as given, with
 * no chat template: the caller calibrates the template's share from a run's
 * reported prompt_tokens. Whether /tokenize answers is probed, not assumed
 * from the kind: a llama.cpp behind a proxy, or an OpenAI-compatible server,
 * may answer 404, and the identity says so (server_info.has_tokenize). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/dialect_util.h"
#include "util/redact.h"

#define PROBE_TIMEOUT_S 10.0

/* What one informational request may take: PROBE_TIMEOUT_S, or less when the
 * backend was set up with a shorter connect timeout (--timeout). */
static double info_timeout(const struct backend *b) {
  return b->connect_timeout_s > 0 && b->connect_timeout_s < PROBE_TIMEOUT_S ? b->connect_timeout_s
                                                                             : PROBE_TIMEOUT_S;
}

/* One exchange, answered with a JSON object. Returns the object for a 2xx
 * answer whose body is a JSON object; NULL otherwise, with *status the HTTP
 * status (0 = no response: *no_response set and err filled). */
static json_t *get_json(struct backend *b, const char *method, const char *path,
                        const char *body, double timeout_s, int *status, bool *no_response,
                        char *errtext, size_t errtext_n, struct tm_err *err) {
  struct http_response resp;
  *status = 0;
  if (no_response) *no_response = false;
  if (errtext && errtext_n) errtext[0] = 0;
  if (http_request(b, method, path, body, timeout_s, &resp, err) != 0) {
    if (no_response) *no_response = true;
    http_response_free(&resp);
    return NULL;
  }
  *status = resp.status;
  json_t *root = NULL;
  if (resp.body && resp.len > 0) {
    json_error_t jerr;
    root = json_loadb(resp.body, resp.len, JSON_DISABLE_EOF_CHECK, &jerr);
  }
  if (resp.status < 200 || resp.status >= 300) {
    if (errtext && errtext_n) {
      if (!root || !du_error_text(root, errtext, errtext_n, NULL, 0, NULL, 0))
        du_one_line(errtext, errtext_n, resp.body ? resp.body : "", resp.len);
    }
    json_decref(root);
    root = NULL;
  } else if (root && !json_is_object(root)) {
    json_decref(root);
    root = NULL;
  }
  http_response_free(&resp);
  return root;
}

static const char *str_of(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static int64_t int_of(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  if (json_is_integer(v)) return json_integer_value(v);
  if (json_is_real(v)) return (int64_t)json_real_value(v);
  return -1;
}

static void set_str(char *dst, size_t n, const char *s) {
  if (s) du_one_line(dst, n, s, strlen(s));
}

static bool looks_like_llamacpp_props(json_t *o) {
  return o && (json_is_string(json_object_get(o, "build_info")) ||
               json_is_object(json_object_get(o, "default_generation_settings")));
}

static bool has_data_array(json_t *o) { return o && json_is_array(json_object_get(o, "data")); }

static bool url_ends_with_v1(const char *u) {
  size_t n = strlen(u);
  while (n > 0 && u[n - 1] == '/') n--;
  return n >= 3 && strncmp(u + n - 3, "/v1", 3) == 0;
}

int backend_detect(const char *base_url, const char *api_key, enum api_family *out,
                   struct tm_err *err) {
  return backend_detect_within(base_url, api_key, PROBE_TIMEOUT_S, out, err);
}

/* The first redirect among the probes: "GET /props answered HTTP 301 to
 * https://host/props" (the target without user:password@ or ?query). */
static void note_redirect(struct backend *b, const char *path, int status, char *buf, size_t n) {
  if (buf[0] || status < 300 || status >= 400) return;
  char *to = NULL;
  curl_easy_getinfo(b->easy, CURLINFO_REDIRECT_URL, &to);
  char shown[200] = "";
  if (to) {
    const char *scheme = strstr(to, "://"), *host = scheme ? scheme + 3 : to;
    const char *at = strchr(host, '@'), *slash = strchr(host, '/');
    if (at && (!slash || at < slash)) host = at + 1; /* no user:password@ */
    snprintf(shown, sizeof shown, "%.*s%s", scheme ? (int)(scheme + 3 - to) : 0, to, host);
    shown[strcspn(shown, "?#")] = 0;
    tm_clean_control(shown);
  }
  snprintf(buf, n, "GET %s answered HTTP %d%s%s", path, status, shown[0] ? " to " : "", shown);
}

int backend_detect_within(const char *base_url, const char *api_key, double timeout_s,
                          enum api_family *out, struct tm_err *err) {
  /* An explicit family: backend_new must not come back here. */
  struct backend_config cfg = {.base_url = base_url, .api = API_OPENAI, .api_key = api_key,
                               .connect_timeout_s = timeout_s > 0 ? timeout_s : PROBE_TIMEOUT_S};
  struct backend *b = backend_new(&cfg, err);
  if (!b) return -1;
  int status = 0;
  bool no_resp = false;
  char etext[200];
  int rc = -1;
  /* a redirect is never followed (credentials must not reach another
   * origin); the first one seen is named if nothing answers */
  char redirect[300] = "";

  json_t *o = get_json(b, "GET", "/api/version", NULL, info_timeout(b), &status, &no_resp, NULL,
                       0, err);
  note_redirect(b, "/api/version", status, redirect, sizeof redirect);
  if (no_resp) {
    tm_err_prefix(err, "cannot reach %s", base_url);
    goto done;
  }
  if (o && json_is_string(json_object_get(o, "version"))) {
    *out = API_OLLAMA;
    rc = 0;
    goto done;
  }
  json_decref(o);

  o = get_json(b, "GET", "/props", NULL, info_timeout(b), &status, &no_resp, NULL, 0, err);
  note_redirect(b, "/props", status, redirect, sizeof redirect);
  if (no_resp) goto unreachable;
  if (looks_like_llamacpp_props(o)) {
    *out = API_OPENAI;
    rc = 0;
    goto done;
  }
  json_decref(o);

  o = get_json(b, "GET", "/v1/models", NULL, info_timeout(b), &status, &no_resp, etext,
               sizeof etext, err);
  note_redirect(b, "/v1/models", status, redirect, sizeof redirect);
  if (no_resp) goto unreachable;
  if (has_data_array(o)) {
    *out = API_OPENAI;
    rc = 0;
    goto done;
  }
  json_decref(o);
  o = NULL;
  if (status == 401 || status == 403) {
    tm_errf(err, "%s answered GET /v1/models with HTTP %d%s%s: the API key is missing or "
                 "refused (--api-key-env)",
            base_url, status, etext[0] ? ": " : "", etext);
    goto done;
  }
  if (redirect[0]) {
    tm_errf(err, "no known LLM API at %s: %s (redirects are not followed: give the URL it "
                 "points to)", base_url, redirect);
    goto done;
  }
  tm_errf(err, "no known LLM API at %s (tried /api/version, /props, /v1/models)%s", base_url,
          url_ends_with_v1(base_url)
              ? "; the URL ends in /v1: give the server's root, e.g. http://host:8080"
              : "");
  goto done;

unreachable:
  tm_err_prefix(err, "cannot reach %s", base_url);
done:
  /* base_url may hold user:password@; the body parts are scrubbed already */
  if (rc != 0 && err) tm_redact(err->msg, sizeof err->msg, api_key);
  json_decref(o);
  backend_free(b);
  return rc;
}

/* Ollama: /api/version for the build, /api/ps for the loaded model. */
static int ollama_info(struct backend *b, struct server_info *out, struct tm_err *err) {
  int status;
  bool no_resp;
  json_t *o = get_json(b, "GET", "/api/version", NULL, info_timeout(b), &status, &no_resp, NULL,
                       0, err);
  if (no_resp) return -1;
  snprintf(out->kind, sizeof out->kind, "ollama");
  set_str(out->build, sizeof out->build, str_of(o, "version"));
  json_decref(o);
  o = get_json(b, "GET", "/api/ps", NULL, info_timeout(b), &status, &no_resp, NULL, 0, err);
  if (no_resp) return -1;
  json_t *models = json_object_get(o, "models");
  json_t *m0 = json_array_get(models, 0);
  if (m0) {
    const char *name = str_of(m0, "name");
    set_str(out->model, sizeof out->model, name ? name : str_of(m0, "model"));
    int64_t ctx = int_of(m0, "context_length"); /* newer Ollama versions */
    if (ctx > 0 && ctx <= UINT32_MAX) out->n_ctx = (uint32_t)ctx;
  }
  json_decref(o);
  return 0;
}

static void llamacpp_props(json_t *o, struct server_info *out) {
  snprintf(out->kind, sizeof out->kind, "llama.cpp");
  set_str(out->build, sizeof out->build, str_of(o, "build_info"));
  const char *m = str_of(o, "model_path");
  set_str(out->model, sizeof out->model, m && m[0] ? m : str_of(o, "model_alias"));
  set_str(out->system_info, sizeof out->system_info, str_of(o, "system_info"));
  int64_t ctx = int_of(json_object_get(o, "default_generation_settings"), "n_ctx");
  if (ctx <= 0) ctx = int_of(o, "n_ctx");
  if (ctx > 0 && ctx <= UINT32_MAX) out->n_ctx = (uint32_t)ctx;
}

static void probe_tokenize(struct backend *b, struct server_info *out);

/* Who the server is (kind, build, model, context); backend_server_info adds
 * the /tokenize probe. */
static int server_identity(struct backend *b, struct server_info *out, struct tm_err *err) {
  if (backend_api(b) == API_OLLAMA) return ollama_info(b, out, err);

  int status;
  bool no_resp;
  json_t *o = get_json(b, "GET", "/props", NULL, info_timeout(b), &status, &no_resp, NULL, 0,
                       err);
  if (no_resp) return -1;
  if (looks_like_llamacpp_props(o)) {
    llamacpp_props(o, out);
    json_decref(o);
    return 0;
  }
  json_decref(o);

  /* LM Studio before /v1/models: it answers both, only this one says it is LM Studio. */
  o = get_json(b, "GET", "/api/v0/models", NULL, info_timeout(b), &status, &no_resp, NULL, 0,
               err);
  if (no_resp) return -1;
  if (has_data_array(o)) {
    snprintf(out->kind, sizeof out->kind, "lmstudio");
    json_t *data = json_object_get(o, "data");
    for (size_t i = 0; i < json_array_size(data); i++) {
      json_t *m = json_array_get(data, i);
      const char *st = str_of(m, "state");
      if (st && strcmp(st, "loaded") == 0) {
        set_str(out->model, sizeof out->model, str_of(m, "id"));
        int64_t ctx = int_of(m, "loaded_context_length");
        if (ctx > 0 && ctx <= UINT32_MAX) out->n_ctx = (uint32_t)ctx;
        break;
      }
    }
    json_decref(o);
    return 0;
  }
  json_decref(o);

  o = get_json(b, "GET", "/v1/models", NULL, info_timeout(b), &status, &no_resp, NULL, 0, err);
  if (no_resp) return -1;
  bool answered = has_data_array(o);
  if (answered) {
    json_t *m0 = json_array_get(json_object_get(o, "data"), 0);
    const char *owner = str_of(m0, "owned_by");
    set_str(out->model, sizeof out->model, str_of(m0, "id"));
    if (owner && strcmp(owner, "vllm") == 0) {
      snprintf(out->kind, sizeof out->kind, "vllm");
      int64_t ctx = int_of(m0, "max_model_len");
      if (ctx > 0 && ctx <= UINT32_MAX) out->n_ctx = (uint32_t)ctx;
      json_t *v = get_json(b, "GET", "/version", NULL, info_timeout(b), &status, &no_resp, NULL,
                           0, err);
      set_str(out->build, sizeof out->build, str_of(v, "version"));
      json_decref(v);
    } else {
      snprintf(out->kind, sizeof out->kind, "openai-compatible");
    }
  }
  json_decref(o);
  /* Ollama's own /v1 endpoints, reached with --api openai. */
  if (!answered || strcmp(out->kind, "openai-compatible") == 0) {
    json_t *v = get_json(b, "GET", "/api/version", NULL, info_timeout(b), &status, &no_resp,
                         NULL, 0, err);
    if (v && json_is_string(json_object_get(v, "version"))) {
      snprintf(out->kind, sizeof out->kind, "ollama");
      set_str(out->build, sizeof out->build, str_of(v, "version"));
      answered = true;
    }
    json_decref(v);
  }
  if (!answered) {
    tm_errf(err, "%s says nothing about itself (no /props, /api/v0/models, /v1/models)",
            backend_base_url(b));
    if (err) transport_scrub_secret(b, err->msg, sizeof err->msg);
    return -1;
  }
  return 0;
}

int backend_server_info(struct backend *b, struct server_info *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  if (server_identity(b, out, err) != 0) return -1;
  probe_tokenize(b, out);
  return 0;
}

/* Names from data[].id (OpenAI, LM Studio) or models[].name (Ollama). */
static int collect_names(json_t *arr, const char *key, char (*names)[256], int max) {
  int n = 0;
  for (size_t i = 0; i < json_array_size(arr) && n < max; i++) {
    const char *s = str_of(json_array_get(arr, i), key);
    if (!s || !s[0]) continue;
    set_str(names[n], 256, s);
    n++;
  }
  return n;
}

int backend_list_models(struct backend *b, char (*names)[256], int max, struct tm_err *err) {
  int status;
  bool no_resp;
  char etext[200];
  if (max < 0) max = 0;
  if (backend_api(b) == API_OLLAMA) {
    json_t *o = get_json(b, "GET", "/api/tags", NULL, info_timeout(b), &status, &no_resp, etext,
                         sizeof etext, err);
    if (no_resp) return -1;
    json_t *models = o ? json_object_get(o, "models") : NULL;
    if (!json_is_array(models)) {
      json_decref(o);
      return tm_errf(err, "GET /api/tags: no model list (HTTP %d%s%s)", status,
                     etext[0] ? ": " : "", etext);
    }
    int n = collect_names(models, "name", names, max);
    json_decref(o);
    return n;
  }
  json_t *o = get_json(b, "GET", "/v1/models", NULL, info_timeout(b), &status, &no_resp, etext,
                       sizeof etext, err);
  if (no_resp) return -1;
  if (!has_data_array(o)) {
    json_decref(o);
    int st1 = status;
    char e1[200];
    snprintf(e1, sizeof e1, "%s", etext);
    o = get_json(b, "GET", "/api/v0/models", NULL, info_timeout(b), &status, &no_resp, NULL, 0,
                 err);
    if (no_resp) return -1;
    if (!has_data_array(o)) {
      json_decref(o);
      return tm_errf(err, "GET /v1/models: no model list (HTTP %d%s%s)", st1, e1[0] ? ": " : "",
                     e1);
    }
  }
  int n = collect_names(json_object_get(o, "data"), "id", names, max);
  json_decref(o);
  return n;
}

/* The count in a /tokenize answer: "count" (vLLM) or the tokens array's length. */
static int64_t token_count_of(json_t *o) {
  if (!o) return -1;
  int64_t c = int_of(o, "count");
  if (c >= 0) return c;
  json_t *t = json_object_get(o, "tokens");
  if (json_is_array(t)) return (int64_t)json_array_size(t);
  return -1;
}

/* backend_count_tokens, with the HTTP status of the answer in *status (0: no
 * request was sent, or no answer came). */
static int64_t count_tokens(struct backend *b, const char *model, const char *text,
                            int *status, struct tm_err *err) {
  *status = 0;
  if (backend_api(b) == API_OLLAMA) {
    tm_errf(err, "Ollama has no tokenizer endpoint");
    return -1;
  }
  if (!text) text = "";
  /* One body for both servers: llama.cpp reads "content", vLLM reads "model"
   * and "prompt"; each ignores the other's fields. One request instead of a
   * probe-and-retry keeps a lenient server from answering the wrong form with
   * a count of 0. */
  json_t *req = json_pack("{s:s, s:s}", "content", text, "prompt", text);
  if (req && model && model[0]) json_object_set_new(req, "model", json_string(model));
  char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
  json_decref(req);
  if (!body) {
    tm_errf(err, "cannot build the /tokenize request (out of memory, or text not UTF-8)");
    return -1;
  }
  bool no_resp;
  char etext[200];
  /* Bounded like every other informational request (--timeout, at most 10
   * s): a tokenizer that hangs must not stall the benchmark. */
  json_t *o = get_json(b, "POST", "/tokenize", body, info_timeout(b), status, &no_resp,
                       etext, sizeof etext, err);
  free(body);
  if (no_resp) return -1;
  int64_t n = token_count_of(o);
  json_decref(o);
  if (n >= 0) return n;
  if (*status == 404)
    tm_errf(err, "the server has no /tokenize endpoint (HTTP 404)");
  else
    tm_errf(err, "POST /tokenize gave no token count (HTTP %d%s%s)", *status,
            etext[0] ? ": " : "", etext);
  return -1;
}

int64_t backend_count_tokens(struct backend *b, const char *model, const char *text,
                             struct tm_err *err) {
  int status;
  return count_tokens(b, model, text, &status, err);
}

/* A text of a few tokens for every tokenizer: a count of 0 for it is no count. */
#define TOKENIZE_PROBE_TEXT "tokmeter counts the tokens of this sentence."

/* One POST /tokenize (none for Ollama's own API): has_tokenize when it answers
 * a count; otherwise why not, and whether the endpoint is simply missing (404,
 * 405, 501: normal for an OpenAI-compatible server) rather than failing. The
 * model asked about is the one the server listed (vLLM reads it). */
static void probe_tokenize(struct backend *b, struct server_info *out) {
  struct tm_err err = {{0}};
  int status = 0;
  int64_t n = count_tokens(b, out->model, TOKENIZE_PROBE_TEXT, &status, &err);
  out->has_tokenize = n > 0;
  if (out->has_tokenize) return;
  if (n == 0)
    tm_errf(&err, "POST /tokenize counted 0 tokens for a %zu-byte text: not a token count",
            sizeof TOKENIZE_PROBE_TEXT - 1);
  out->tokenize_status = status;
  out->tokenize_missing = backend_api(b) == API_OLLAMA || status == 404 || status == 405 ||
                          status == 501;
  snprintf(out->tokenize_error, sizeof out->tokenize_error, "%.*s",
           (int)sizeof out->tokenize_error - 1, err.msg); /* cut: one line */
  transport_scrub_secret(b, out->tokenize_error, sizeof out->tokenize_error);
}

/* ------------------------------------------------------------- /metrics */

/* The value of every sample of metric `name` in Prometheus text, summed
 * (label sets apart); NAN when the name never appears. */
static double prom_sum(const char *text, const char *name) {
  const size_t n = strlen(name);
  double sum = NAN;
  for (const char *line = text; line && *line;) {
    const char *eol = strchr(line, '\n');
    if (line[0] != '#' && strncmp(line, name, n) == 0 && (line[n] == ' ' || line[n] == '{')) {
      const char *v = line + n;
      if (*v == '{') v = strchr(v, '}');
      if (v && (!eol || v < eol)) {
        char *end;
        double x = strtod(v + (*v == '}'), &end);
        if (end != v + (*v == '}') && isfinite(x)) sum = isnan(sum) ? x : sum + x;
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  return sum;
}

int backend_server_counters(struct backend *b, struct server_counters *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  out->prompt_tokens = out->generated_tokens = NAN;
  struct http_response resp;
  if (http_request(b, "GET", "/metrics", NULL, info_timeout(b), &resp, err) != 0) return -1;
  if (resp.status == 200 && resp.body) {
    static const struct {
      const char *source, *prompt, *generated;
    } known[] = {{"llama.cpp", "llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total"},
                 {"vllm", "vllm:prompt_tokens_total", "vllm:generation_tokens_total"}};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
      double p = prom_sum(resp.body, known[i].prompt), g = prom_sum(resp.body, known[i].generated);
      if (isnan(p) && isnan(g)) continue;
      snprintf(out->source, sizeof out->source, "%s", known[i].source);
      out->prompt_tokens = p;
      out->generated_tokens = g;
      break;
    }
  }
  http_response_free(&resp);
  return 0;
}

int backend_server_slots(struct backend *b, struct server_slots *out, struct tm_err *err) {
  out->total = out->busy = 0;
  struct http_response resp;
  if (http_request(b, "GET", "/slots", NULL, info_timeout(b), &resp, err) != 0) return -1;
  json_t *a = resp.status == 200 && resp.body ? json_loads(resp.body, 0, NULL) : NULL;
  int total = 0, busy = 0;
  bool ok = json_is_array(a) && json_array_size(a) > 0 && json_array_size(a) <= 65536;
  size_t i;
  json_t *slot;
  json_array_foreach(ok ? a : NULL, i, slot) {
    json_t *p = json_object_get(slot, "is_processing"), *st = json_object_get(slot, "state");
    if (!json_is_object(slot) || (!json_is_boolean(p) && !json_is_integer(st))) {
      ok = false;
      break;
    }
    total++;
    busy += json_is_boolean(p) ? json_is_true(p) : json_integer_value(st) != 0;
  }
  if (ok) out->total = total, out->busy = busy;
  json_decref(a);
  http_response_free(&resp);
  return 0;
}
