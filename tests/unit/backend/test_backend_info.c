/* test_backend_info: API detection, server identity, model listing and token
 * counting against the loopback fake servers (tests/server/): the llama.cpp
 * flavor and the replay of the recorded /props and /tokenize exchanges, and
 * the vLLM, Ollama and LM Studio flavors (written from their documentation:
 * no captures of those servers exist here). Servers that do not answer, or
 * answer everything with 404, must give a clear error. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_internal.h"
#include "fakeserver.h"
#include "tm_test.h"

struct srv {
  struct fakeserver *fs;
  char url[64];
};

static bool start_file(struct srv *s, enum fs_mode mode, enum fs_flavor flavor,
                       const char *replay_file) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.replay_file = replay_file;
  cfg.mode = mode;
  cfg.flavor = flavor;
  cfg.fixtures_dir = tm_fixture("llama-server");
  cfg.time_scale = 0;
  int port = 0;
  s->fs = fs_start(&cfg, &port);
  CHECK_MSG(s->fs != NULL, "fakeserver did not start");
  snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", port);
  return s->fs != NULL;
}

static bool start(struct srv *s, enum fs_mode mode, enum fs_flavor flavor) {
  return start_file(s, mode, flavor, NULL);
}

static struct backend *open_backend(const char *url, enum api_family api) {
  struct backend_config cfg = {.base_url = url, .api = api, .connect_timeout_s = 5};
  struct tm_err err = {{0}};
  struct backend *b = backend_new(&cfg, &err);
  CHECK_MSG(b != NULL, "backend_new(%s): %s", url, err.msg);
  return b;
}

static void test_llamacpp_flavor(void) {
  struct srv s;
  if (!start(&s, FS_PACED, FS_FLAVOR_LLAMACPP)) return;
  enum api_family api = API_AUTO;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), 0);
  CHECK_EQ_INT(api, API_OPENAI); /* llama.cpp is driven through its OpenAI endpoints */
  struct backend *b = open_backend(s.url, API_AUTO);
  if (b) {
    CHECK_EQ_INT(backend_api(b), API_OPENAI);
    struct server_info si;
    CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
    CHECK_STR(si.kind, "llama.cpp");
    CHECK_STR(si.build, "b1-fakeserver");
    CHECK_STR(si.model, "models/fake-Q4_0.gguf");
    CHECK_EQ_INT(si.n_ctx, 4096);
    CHECK(si.has_tokenize);
    CHECK_STR(si.tokenize_error, "");
    CHECK_CONTAINS(fs_last_request_line(s.fs), "POST /tokenize"); /* probed, not assumed */
    CHECK_EQ_INT(backend_count_tokens(b, NULL, "one two three four five", &err), 5);
    CHECK_CONTAINS(fs_last_request_line(s.fs), "POST /tokenize");
    CHECK_CONTAINS(fs_last_request_body(s.fs), "\"content\":\"one two three four five\"");
    char names[4][256];
    CHECK_EQ_INT(backend_list_models(b, names, 4, &err), 1);
    CHECK_STR(names[0], "models/fake-Q4_0.gguf");
    backend_free(b);
  }
  fs_stop(s.fs);
}

static void test_props_fixture_replay(void) {
  struct srv s;
  if (!start(&s, FS_REPLAY, FS_FLAVOR_LLAMACPP)) return;
  struct backend *b = open_backend(s.url, API_OPENAI);
  struct tm_err err = {{0}};
  if (b) {
    struct server_info si;
    CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
    CHECK_STR(si.kind, "llama.cpp");
    CHECK_STR(si.build, "b1-80fb11a");
    CHECK_STR(si.model, "models/q3-0.6b-Q4_0.gguf");
    CHECK_EQ_INT(si.n_ctx, 4096);
    CHECK_STR(si.system_info, ""); /* this build's /props does not expose it */
    CHECK(si.has_tokenize);
    /* the recorded /tokenize answer holds 12 token ids */
    CHECK_EQ_INT(backend_count_tokens(b, "m", "Reference p0o9i8. The technician arrived.", &err),
                 12);
    backend_free(b);
  }
  enum api_family api = API_AUTO;
  CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), 0);
  CHECK_EQ_INT(api, API_OPENAI);
  fs_stop(s.fs);
}

static void test_vllm_flavor(void) {
  struct srv s;
  if (!start(&s, FS_PACED, FS_FLAVOR_OPENAI)) return;
  enum api_family api = API_AUTO;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), 0);
  CHECK_EQ_INT(api, API_OPENAI);
  struct backend *b = open_backend(s.url, api);
  if (b) {
    struct server_info si;
    CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
    CHECK_STR(si.kind, "vllm");
    CHECK_STR(si.build, "0.0.0-fakeserver");
    CHECK_STR(si.model, "fake-model");
    CHECK_EQ_INT(si.n_ctx, 4096);
    CHECK(si.has_tokenize);
    CHECK_EQ_INT(backend_count_tokens(b, "fake-model", "a b c", &err), 3);
    CHECK_CONTAINS(fs_last_request_body(s.fs), "\"prompt\":\"a b c\"");
    CHECK_CONTAINS(fs_last_request_body(s.fs), "\"model\":\"fake-model\"");
    char names[2][256];
    CHECK_EQ_INT(backend_list_models(b, names, 2, &err), 1);
    CHECK_STR(names[0], "fake-model");
    backend_free(b);
  }
  fs_stop(s.fs);
}

static void test_ollama_flavor(void) {
  struct srv s;
  if (!start(&s, FS_PACED, FS_FLAVOR_OLLAMA)) return;
  enum api_family api = API_AUTO;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), 0);
  CHECK_EQ_INT(api, API_OLLAMA);
  struct backend *b = open_backend(s.url, API_AUTO);
  if (b) {
    CHECK_EQ_INT(backend_api(b), API_OLLAMA);
    struct server_info si;
    CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
    CHECK_STR(si.kind, "ollama");
    CHECK_STR(si.build, "0.6.8");
    CHECK_STR(si.model, "fake:latest");
    CHECK(!si.has_tokenize);
    CHECK(si.tokenize_missing);
    CHECK_STR(si.tokenize_error, "Ollama has no tokenizer endpoint");
    CHECK_EQ_INT(backend_count_tokens(b, "fake:latest", "a b", &err), -1);
    CHECK_CONTAINS(err.msg, "Ollama has no tokenizer");
    char names[2][256];
    CHECK_EQ_INT(backend_list_models(b, names, 2, &err), 1);
    CHECK_STR(names[0], "fake:latest");
    CHECK_EQ_INT(backend_list_models(b, names, 0, &err), 0);
    backend_free(b);
  }
  /* the same server reached through its OpenAI-compatible /v1 endpoints */
  b = open_backend(s.url, API_OPENAI);
  if (b) {
    struct server_info si;
    CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
    CHECK_STR(si.kind, "ollama");
    backend_free(b);
  }
  fs_stop(s.fs);
}

static void test_lmstudio_flavor(void) {
  struct srv s;
  if (!start(&s, FS_PACED, FS_FLAVOR_LMSTUDIO)) return;
  enum api_family api = API_AUTO;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), 0);
  CHECK_EQ_INT(api, API_OPENAI);
  struct backend *b = open_backend(s.url, api);
  if (b) {
    struct server_info si;
    CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
    CHECK_STR(si.kind, "lmstudio");
    CHECK_STR(si.model, "fake-model");
    CHECK(!si.has_tokenize);
    CHECK(si.tokenize_missing);
    CHECK_EQ_INT(si.tokenize_status, 404);
    CHECK_STR(si.tokenize_error, "the server has no /tokenize endpoint (HTTP 404)");
    CHECK_EQ_INT(backend_count_tokens(b, "fake-model", "a b", &err), -1);
    CHECK_CONTAINS(err.msg, "404");
    char names[2][256];
    CHECK_EQ_INT(backend_list_models(b, names, 2, &err), 1);
    CHECK_STR(names[0], "fake-model");
    backend_free(b);
  }
  fs_stop(s.fs);
}

static void test_unknown_and_unreachable(void) {
  struct srv s;
  /* the recorded 404 exchange served for every request */
  if (start_file(&s, FS_REPLAY, FS_FLAVOR_LLAMACPP, "llama-server-error-404.json")) {
    enum api_family api = API_AUTO;
    struct tm_err err = {{0}};
    CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), -1);
    char want[160];
    snprintf(want, sizeof want,
             "no known LLM API at %s (tried /api/version, /props, /v1/models)", s.url);
    CHECK_STR(err.msg, want);
    char v1[96];
    snprintf(v1, sizeof v1, "%s/v1/", s.url);
    CHECK_EQ_INT(backend_detect(v1, NULL, &api, &err), -1);
    CHECK_CONTAINS(err.msg, "ends in /v1");
    /* backend_new with API_AUTO reports the same */
    struct backend_config cfg = {.base_url = s.url, .api = API_AUTO};
    CHECK(backend_new(&cfg, &err) == NULL);
    CHECK_CONTAINS(err.msg, "no known LLM API");
    fs_stop(s.fs);
  }
  /* a port nobody listens on: take a free one from a server we stop */
  if (start(&s, FS_PACED, FS_FLAVOR_LLAMACPP)) {
    fs_stop(s.fs);
    enum api_family api = API_AUTO;
    struct tm_err err = {{0}};
    CHECK_EQ_INT(backend_detect(s.url, NULL, &api, &err), -1);
    CHECK_CONTAINS(err.msg, "cannot reach");
    CHECK_CONTAINS(err.msg, s.url);
  }
}

/* has_tokenize is what POST /tokenize answered, not the kind's habit: a
 * llama.cpp whose /tokenize answers 404 (a proxy in front of it) has none,
 * said as missing; one that never answers has none, said as a failure. */
static void test_tokenize_probe(void) {
  for (int hang = 0; hang < 2; hang++) {
    struct fs_config cfg;
    fs_config_init(&cfg);
    cfg.mode = FS_PACED;
    cfg.flavor = FS_FLAVOR_LLAMACPP;
    cfg.tokenize_404 = !hang;
    cfg.tokenize_hang = hang;
    int port = 0;
    struct fakeserver *fs = fs_start(&cfg, &port);
    CHECK_MSG(fs != NULL, "fakeserver did not start");
    if (!fs) return;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    struct backend_config bc = {.base_url = url, .api = API_OPENAI, .connect_timeout_s = 1};
    struct tm_err err = {{0}};
    struct backend *b = backend_new(&bc, &err);
    CHECK_MSG(b != NULL, "backend_new: %s", err.msg);
    if (b) {
      struct server_info si;
      CHECK_EQ_INT(backend_server_info(b, &si, &err), 0);
      CHECK_STR(si.kind, "llama.cpp");
      CHECK(!si.has_tokenize);
      if (!hang) {
        CHECK(si.tokenize_missing);
        CHECK_EQ_INT(si.tokenize_status, 404);
        CHECK_STR(si.tokenize_error, "the server has no /tokenize endpoint (HTTP 404)");
      } else {
        CHECK(!si.tokenize_missing);
        CHECK_EQ_INT(si.tokenize_status, 0);
        CHECK_CONTAINS(si.tokenize_error, "POST /tokenize: no complete answer within 1.0 s");
      }
      backend_free(b);
    }
    fs_stop(fs);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_tokenize_probe);
  TM_RUN(test_llamacpp_flavor);
  TM_RUN(test_props_fixture_replay);
  TM_RUN(test_vllm_flavor);
  TM_RUN(test_ollama_flavor);
  TM_RUN(test_lmstudio_flavor);
  TM_RUN(test_unknown_and_unreachable);
}
