/* fs_info: the non-generation endpoints of each FS_PACED flavor, enough for a
 * client to detect the API, read the server's identity, list models and count
 * tokens. Shapes: llama.cpp from the captured fixtures (/props, /tokenize);
 * vLLM, Ollama and LM Studio from their public documentation (no capture of
 * those servers exists here).
 *
 *   llamacpp  GET /props, /health, /v1/models, /models; POST /tokenize
 *             {"content"} -> {"tokens":[...]} (one token per word, no template)
 *   openai    GET /v1/models, /health, /version; POST /tokenize {"prompt"} ->
 *             {"count","max_model_len","tokens"} (vLLM); with "messages" the
 *             count adds template_tokens, as the chat template would
 *   ollama    GET /, /api/version, /api/tags, /api/ps, /v1/models; POST /api/show
 *   lmstudio  GET /v1/models, /api/v0/models, /api/v0/models/<id>
 * Detection stays unambiguous: only llamacpp answers /props, only ollama
 * /api/version, only lmstudio /api/v0/models. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs_internal.h"

#define FS_N_CTX 4096

static int reply(struct fakeserver *s, int fd, const struct fs_request *req, json_t *o) {
  if (!o) return -1;
  int rc = fs_send_json(s, fd, 200, o, req->client_close);
  return rc != 0 ? -1 : (req->client_close ? 1 : 0);
}

static json_t *token_ids(uint32_t n) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer(1000 + i));
  return a;
}

static json_t *ollama_details(void) {
  return json_pack("{s:s,s:s,s:s,s:[s],s:s,s:s}", "parent_model", "", "format", "gguf", "family",
                   "qwen3", "families", "qwen3", "parameter_size", "751.63M",
                   "quantization_level", "Q4_0");
}

static int info_llamacpp(struct fakeserver *s, int fd, const struct fs_request *req,
                         const char *path, bool get) {
  const char *model = fs_default_model(FS_FLAVOR_LLAMACPP);
  if (get && strcmp(path, "/props") == 0) {
    json_t *props =
        json_pack("{s:{s:{s:i,s:f},s:i},s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:b,s:b}}",
                  "default_generation_settings", "params", "n_predict", -1, "temperature", 0.8,
                  "n_ctx", FS_N_CTX, "total_slots", 1, "model_alias", model, "model_path", model,
                  "chat_template",
                  "{% for message in messages %}{{'<|im_start|>' + message['role'] + "
                  "'\\n' + message['content'] + '<|im_end|>\\n'}}{% endfor %}",
                  "bos_token", "<|endoftext|>", "eos_token", "<|endoftext|>", "build_info",
                  "b1-fakeserver", "modalities", "vision", 0, "audio", 0);
    if (props && s->cfg.system_info)
      json_object_set_new(props, "system_info", json_string(s->cfg.system_info));
    return reply(s, fd, req, props);
  }
  if (get && strcmp(path, "/health") == 0) return reply(s, fd, req, json_pack("{s:s}", "status", "ok"));
  if (get && (strcmp(path, "/v1/models") == 0 || strcmp(path, "/models") == 0))
    return reply(s, fd, req,
                 json_pack("{s:[{s:s,s:s}],s:s,s:[{s:s,s:s,s:I,s:s,s:{s:i,s:I,s:I}}]}", "models",
                           "name", model, "model", model, "object", "list", "data", "id", model,
                           "object", "model", "created", (json_int_t)time(NULL), "owned_by",
                           "llamacpp", "meta", "n_ctx_train", 40960, "n_params",
                           (json_int_t)751632384, "size", (json_int_t)375614464));
  if (!get && strcmp(path, "/tokenize") == 0) {
    const char *t = json_string_value(json_object_get(req->json, "content"));
    return reply(s, fd, req, json_pack("{s:o}", "tokens", token_ids(fs_count_words(t ? t : ""))));
  }
  return -2;
}

static int info_openai(struct fakeserver *s, int fd, const struct fs_request *req,
                       const char *path, bool get) {
  if (get && strcmp(path, "/v1/models") == 0)
    return reply(s, fd, req,
                 json_pack("{s:s,s:[{s:s,s:s,s:I,s:s,s:s,s:n,s:i}]}", "object", "list", "data",
                           "id", "fake-model", "object", "model", "created",
                           (json_int_t)time(NULL), "owned_by", "vllm", "root", "fake-model",
                           "parent", "max_model_len", FS_N_CTX));
  if (get && strcmp(path, "/health") == 0) return fs_send_body(s, fd, 200, NULL, "", 0, req->client_close) ? -1 : (req->client_close ? 1 : 0);
  if (get && strcmp(path, "/version") == 0)
    return reply(s, fd, req, json_pack("{s:s}", "version", "0.0.0-fakeserver"));
  if (!get && strcmp(path, "/tokenize") == 0) {
    uint32_t n;
    if (json_object_get(req->json, "messages")) {
      n = s->cfg.template_tokens + fs_count_words(fs_prompt_text_chat(req->json));
    } else {
      const char *t = json_string_value(json_object_get(req->json, "prompt"));
      n = fs_count_words(t ? t : "");
    }
    return reply(s, fd, req, json_pack("{s:i,s:i,s:o}", "count", (int)n, "max_model_len",
                                       FS_N_CTX, "tokens", token_ids(n)));
  }
  return -2;
}

static int info_ollama(struct fakeserver *s, int fd, const struct fs_request *req,
                       const char *path, bool get) {
  const char *model = fs_default_model(FS_FLAVOR_OLLAMA);
  if (get && strcmp(path, "/") == 0) {
    static const char msg[] = "Ollama is running";
    int rc = fs_send_body(s, fd, 200, "text/plain; charset=utf-8", msg, sizeof msg - 1,
                          req->client_close);
    return rc != 0 ? -1 : (req->client_close ? 1 : 0);
  }
  if (get && strcmp(path, "/api/version") == 0)
    return reply(s, fd, req, json_pack("{s:s}", "version", "0.6.8"));
  if (get && strcmp(path, "/api/tags") == 0)
    return reply(s, fd, req,
                 json_pack("{s:[{s:s,s:s,s:s,s:I,s:s,s:o}]}", "models", "name", model, "model",
                           model, "modified_at", "2025-01-01T00:00:00Z", "size",
                           (json_int_t)400000000, "digest",
                           "0000000000000000000000000000000000000000000000000000000000000000",
                           "details", ollama_details()));
  if (get && strcmp(path, "/api/ps") == 0)
    return reply(s, fd, req,
                 json_pack("{s:[{s:s,s:s,s:I,s:s,s:o,s:s,s:I}]}", "models", "name", model,
                           "model", model, "size", (json_int_t)600000000, "digest",
                           "0000000000000000000000000000000000000000000000000000000000000000",
                           "details", ollama_details(), "expires_at", "2099-01-01T00:00:00Z",
                           "size_vram", (json_int_t)0));
  if (!get && strcmp(path, "/api/show") == 0)
    return reply(s, fd, req,
                 json_pack("{s:s,s:s,s:o,s:{s:s,s:I,s:i,s:i},s:s}", "modelfile", "", "template",
                           "{{ .Prompt }}", "details", ollama_details(), "model_info",
                           "general.architecture", "qwen3", "general.parameter_count",
                           (json_int_t)751632384, "qwen3.context_length", 40960,
                           "qwen3.block_count", 28, "modified_at", "2025-01-01T00:00:00Z"));
  if (get && strcmp(path, "/v1/models") == 0)
    return reply(s, fd, req,
                 json_pack("{s:s,s:[{s:s,s:s,s:I,s:s}]}", "object", "list", "data", "id", model,
                           "object", "model", "created", (json_int_t)time(NULL), "owned_by",
                           "library"));
  return -2;
}

static json_t *lmstudio_model(void) {
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i}", "id", "fake-model", "object", "model",
                   "type", "llm", "publisher", "fakeserver", "arch", "qwen3",
                   "compatibility_type", "gguf", "quantization", "Q4_0", "state", "loaded",
                   "max_context_length", FS_N_CTX);
}

static int info_lmstudio(struct fakeserver *s, int fd, const struct fs_request *req,
                         const char *path, bool get) {
  if (get && strcmp(path, "/v1/models") == 0)
    return reply(s, fd, req,
                 json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "object", "list", "data", "id",
                           "fake-model", "object", "model", "owned_by", "organization_owner"));
  if (get && strcmp(path, "/api/v0/models") == 0)
    return reply(s, fd, req, json_pack("{s:s,s:[o]}", "object", "list", "data", lmstudio_model()));
  if (get && strncmp(path, "/api/v0/models/", 15) == 0)
    return reply(s, fd, req, lmstudio_model());
  return -2;
}

int fs_info_handle(struct fakeserver *s, int fd, const struct fs_request *req, const char *path) {
  bool get = strcmp(req->method, "GET") == 0;
  if (!get && strcmp(req->method, "POST") != 0) return -2;
  switch (s->cfg.flavor) {
  case FS_FLAVOR_LLAMACPP: return info_llamacpp(s, fd, req, path, get);
  case FS_FLAVOR_OPENAI: return info_openai(s, fd, req, path, get);
  case FS_FLAVOR_OLLAMA: return info_ollama(s, fd, req, path, get);
  case FS_FLAVOR_LMSTUDIO: return info_lmstudio(s, fd, req, path, get);
  }
  return -2;
}
