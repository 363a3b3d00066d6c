/* test_transport: backend_run and http_request against the loopback fake
 * servers (tests/server/): arrival timestamps and TTFT on a paced stream,
 * connection reuse, every fault kind (connect, DNS, TLS, HTTP errors, each
 * FS_BREAK stage, idle and total timeouts, Ctrl-C), the NDJSON path, and that
 * the API key reaches the server's headers but no field of the result.
 * Timing tolerances here are generous (a loaded 2-core machine); the tight
 * accuracy test belongs to the method's tests. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "fakeserver.h"
#include "tm_test.h"
#include "util/clock.h"

#define MS(ns) ((double)(ns) / 1e6)

static struct fakeserver *start(struct fs_config *cfg, char *url, size_t url_n) {
  int port = 0;
  struct fakeserver *s = fs_start(cfg, &port);
  CHECK_MSG(s != NULL, "fs_start failed");
  snprintf(url, url_n, "http://127.0.0.1:%d", port);
  return s;
}

static struct backend *open_backend(const char *url, enum api_family api, const char *key) {
  struct backend_config bc = {.base_url = url, .api = api, .endpoint = ENDPOINT_CHAT,
                              .api_key = key, .connect_timeout_s = 5};
  struct tm_err err = {{0}};
  struct backend *b = backend_new(&bc, &err);
  CHECK_MSG(b != NULL, "backend_new(%s): %s", url, err.msg);
  return b;
}

static struct backend_request request(const char *prompt, uint32_t max_tokens) {
  struct backend_request r = {.model = "m", .prompt = prompt, .max_tokens = max_tokens,
                              .exact_length = true, .stream = true, .seed = 1,
                              .idle_timeout_s = 5, .total_timeout_s = 30};
  return r;
}

/* A TCP port nobody listens on: bound then closed. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(fd, (struct sockaddr *)&a, sizeof a);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

static void test_url_validation(void) {
  struct tm_err err = {{0}};
  struct backend_config bc = {.base_url = "ftp://example.com", .api = API_OPENAI};
  CHECK(backend_new(&bc, &err) == NULL);
  CHECK_CONTAINS(err.msg, "http:// or https://");
  bc.base_url = "http:///v1";
  CHECK(backend_new(&bc, &err) == NULL);
  CHECK_CONTAINS(err.msg, "no host");
  bc.base_url = "http://host name";
  CHECK(backend_new(&bc, &err) == NULL);
  bc.base_url = "HTTPS://api.example.com/openai//";
  struct backend *b = backend_new(&bc, &err);
  CHECK(b != NULL);
  if (b) CHECK_STR(backend_base_url(b), "HTTPS://api.example.com/openai");
  backend_free(b);
  CHECK_STR(api_family_name(API_OLLAMA), "ollama");
  CHECK_EQ_INT(api_family_from_name("llamacpp"), API_LLAMACPP);
  CHECK_EQ_INT(api_family_from_name("nope"), -1);
  CHECK_STR(run_error_name(RUN_ERR_IDLE_TIMEOUT), "idle-timeout");
  CHECK_STR(run_error_name(RUN_ERR_STREAM), "stream-error");
}

static void test_run_result_chunks(void) {
  struct run_result r;
  run_result_init(&r);
  CHECK_EQ_INT(r.prompt_tokens, -1);
  CHECK(isnan(r.timings_prompt_ms));
  for (int i = 0; i < 1000; i++) {
    char t[16];
    int n = snprintf(t, sizeof t, "w%d ", i);
    CHECK_EQ_INT(run_result_add_chunk(&r, (uint64_t)i, i % 2, t, (size_t)n, 1), 0);
  }
  CHECK_EQ_INT(r.n_chunks, 1000);
  CHECK(r.text[r.text_len] == 0);
  const struct run_chunk *c = &r.chunks[777];
  CHECK(c->text_len == 5 && memcmp(r.text + c->text_off, "w777 ", 5) == 0);
  CHECK_EQ_INT(c->field, 1);
  CHECK_EQ_INT(run_result_add_chunk(&r, 1, CHUNK_CONTENT, "x", 0, 0), 0);
  CHECK_EQ_INT(r.n_chunks, 1000);
  run_result_fail(&r, RUN_ERR_HTTP, "two\nlines\r%s", "!");
  CHECK_STR(r.error_msg, "two lines !");
  run_result_free(&r);
  CHECK(r.chunks == NULL && r.text == NULL);
}

static void test_paced_timestamps_and_reuse(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  cfg.flavor = FS_FLAVOR_LLAMACPP;
  cfg.a_ms = 30;
  cfg.b_ms = 2;
  cfg.c_ms = 10;
  char url[64];
  struct fakeserver *s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend *b = open_backend(url, API_OPENAI, NULL);
  if (!b) {
    fs_stop(s);
    return;
  }
  /* 10 words */
  struct backend_request rq = request("alpha bravo charlie delta echo foxtrot golf hotel india juliet", 20);
  struct run_result w, r;
  CHECK_EQ_INT(backend_run(b, &rq, &w), 0); /* warm-up: opens the connection */
  CHECK_MSG(w.error == RUN_OK, "warm-up: %s", w.error_msg);
  CHECK(!w.connection_reused);
  CHECK(w.connect_ns > 0);
  CHECK_EQ_INT(w.http_status, 200);

  rq.prompt = "kilo lima mike november oscar papa quebec romeo sierra tango";
  CHECK_EQ_INT(backend_run(b, &rq, &r), 0);
  CHECK_MSG(r.error == RUN_OK, "run: %s", r.error_msg);
  CHECK(r.connection_reused);
  CHECK(r.t_start_ns <= r.t_send_ns && r.t_send_ns < r.t_headers_ns && r.t_headers_ns <= r.t_end_ns);
  CHECK_MSG(MS(r.t_send_ns - r.t_start_ns) < 5.0, "t_send - t_start %.3f ms on a reused connection",
            MS(r.t_send_ns - r.t_start_ns));
  CHECK_EQ_INT(fs_requests(s), 2);
  CHECK_EQ_INT(r.n_chunks, 20);
  CHECK_EQ_INT(r.completion_tokens, 20);
  bool increasing = true;
  for (size_t i = 1; i < r.n_chunks; i++)
    if (r.chunks[i].t_ns <= r.chunks[i - 1].t_ns) increasing = false;
  CHECK(increasing);
  struct fs_timing ft = fs_last_timing(s);
  if (r.n_chunks == 20) {
    double ttft = MS(r.chunks[0].t_ns - r.t_send_ns);
    CHECK_NEAR(ttft, ft.prefill_ms, 15.0);
    CHECK_NEAR(ft.prefill_ms, 30 + 2.0 * ft.prompt_tokens, 1e-9);
    double gap = MS(r.chunks[19].t_ns - r.chunks[0].t_ns) / 19.0;
    CHECK_NEAR(gap, 10.0, 2.0);
    CHECK(r.chunks[19].t_ns <= r.t_end_ns);
  }
  /* the request as sent */
  CHECK_STR(fs_last_request_line(s), "POST /v1/chat/completions");
  const char *h = fs_last_request_headers(s);
  CHECK_CONTAINS(h, "text/event-stream");
  CHECK_CONTAINS(h, "application/json");
  CHECK(h && !strstr(h, "100-continue"));

  /* a helper request on the same connection, then a run that still reuses it */
  struct http_response resp;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(http_request(b, "GET", "/props", NULL, 5, &resp, &err), 0);
  CHECK_EQ_INT(resp.status, 200);
  CHECK(resp.body && resp.len > 0 && resp.body[resp.len] == 0);
  http_response_free(&resp);
  run_result_free(&r);
  CHECK_EQ_INT(backend_run(b, &rq, &r), 0);
  CHECK(r.connection_reused);
  run_result_free(&r);
  run_result_free(&w);
  backend_free(b);
  fs_stop(s);
}

static void test_ollama_ndjson(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  cfg.flavor = FS_FLAVOR_OLLAMA;
  cfg.a_ms = 10;
  cfg.b_ms = 0;
  cfg.c_ms = 3;
  char url[64];
  struct fakeserver *s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend *b = open_backend(url, API_OLLAMA, NULL);
  if (b) {
    struct backend_request rq = request("one two three", 12);
    struct run_result r;
    CHECK_EQ_INT(backend_run(b, &rq, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_STR(fs_last_request_line(s), "POST /api/chat");
    CHECK_CONTAINS(fs_last_request_headers(s), "application/x-ndjson");
    CHECK_EQ_INT(r.n_chunks, 12);
    CHECK_EQ_INT(r.completion_tokens, 12);
    CHECK(r.n_events >= 12);
    run_result_free(&r);
    backend_free(b);
  }
  fs_stop(s);
}

static void test_connect_dns_tls(void) {
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", free_port());
  struct backend *b = open_backend(url, API_OPENAI, NULL);
  struct backend_request rq = request("hi", 4);
  struct run_result r;
  if (b) {
    uint64_t t0 = tm_now_ns();
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    CHECK_EQ_INT(r.error, RUN_ERR_CONNECT);
    CHECK_CONTAINS(r.error_msg, "127.0.0.1");
    CHECK(MS(tm_now_ns() - t0) < 2000);
    CHECK_EQ_INT(r.http_status, 0);
    CHECK(r.t_end_ns >= r.t_start_ns && r.t_start_ns > 0);
    run_result_free(&r);
    /* http_request reports the same kind */
    struct http_response resp;
    struct tm_err err = {{0}};
    CHECK_EQ_INT(http_request(b, "GET", "/v1/models", NULL, 2, &resp, &err), -1);
    CHECK_EQ_INT(resp.error, RUN_ERR_CONNECT);
    CHECK(err.msg[0] != 0);
    backend_free(b);
  }

  b = open_backend("http://nonexistent.invalid:8080", API_OPENAI, NULL);
  if (b) {
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    CHECK_MSG(r.error == RUN_ERR_DNS, "dns: got %s: %s", run_error_name(r.error), r.error_msg);
    CHECK_CONTAINS(r.error_msg, "nonexistent.invalid");
    run_result_free(&r);
    backend_free(b);
  }

  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  int port = 0;
  struct fakeserver *s = fs_start(&cfg, &port);
  if (s) {
    snprintf(url, sizeof url, "https://127.0.0.1:%d", port);
    struct backend_config bc = {.base_url = url, .api = API_OPENAI, .connect_timeout_s = 1};
    struct tm_err err = {{0}};
    b = backend_new(&bc, &err);
    CHECK(b != NULL);
    if (b) {
      /* the fake server waits for a request line that never comes, so the
       * handshake times out (a real plain server answers 400: "wrong version
       * number"); both are TLS failures */
      CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
      CHECK_MSG(r.error == RUN_ERR_TLS, "tls: got %s: %s", run_error_name(r.error), r.error_msg);
      run_result_free(&r);
      backend_free(b);
    }
    fs_stop(s);
  }
}

/* Usage in every chunk (vLLM continuous_usage_stats) makes a cut stream look
 * counted: it is still incomplete without its terminal event, and a cut
 * connection's reason stays in the message. A whole such stream is good. */
static void test_cut_with_usage_every_chunk(void) {
  const enum fs_break_stage stages[] = {FS_BREAK_AFTER_FIRST_TOKEN, FS_BREAK_NO_DONE_NO_USAGE};
  for (int k = 0; k < 3; k++) {
    struct fs_config cfg;
    fs_config_init(&cfg);
    cfg.flavor = FS_FLAVOR_OPENAI;
    cfg.mode = k < 2 ? FS_BREAK : FS_PACED;
    if (k < 2) cfg.break_stage = stages[k];
    cfg.usage_every_chunk = true;
    cfg.a_ms = 5;
    cfg.b_ms = 0;
    cfg.c_ms = 2;
    char url[64];
    struct fakeserver *s = start(&cfg, url, sizeof url);
    if (!s) continue;
    struct backend *b = open_backend(url, API_OPENAI, NULL);
    if (b) {
      struct backend_request rq = request("one two three", 8);
      rq.idle_timeout_s = 0.5;
      struct run_result r;
      int rc = backend_run(b, &rq, &r);
      if (k < 2) {
        CHECK_MSG(rc == -1 && r.error == RUN_ERR_INCOMPLETE, "case %d: %s: %s", k,
                  run_error_name(r.error), r.error_msg);
        CHECK(r.completion_tokens >= 1); /* the counters came, the end did not */
        if (k == 0) CHECK_CONTAINS(r.error_msg, "closed mid-stream");
      } else {
        CHECK_MSG(rc == 0 && r.error == RUN_OK, "whole stream: %s", r.error_msg);
        CHECK_EQ_INT(r.completion_tokens, 8);
      }
      run_result_free(&r);
      backend_free(b);
    }
    fs_stop(s);
  }
}

/* Every break stage fails cleanly, quickly, with a message; the known ones
 * with their kind; what arrived before the failure is kept. */
static void test_break_stages(void) {
  for (int st = 0; st < FS_BREAK_COUNT; st++) {
    struct fs_config cfg;
    fs_config_init(&cfg);
    cfg.mode = FS_BREAK;
    cfg.break_stage = (enum fs_break_stage)st;
    cfg.a_ms = 5;
    cfg.b_ms = 0;
    cfg.c_ms = 2;
    char url[64];
    struct fakeserver *s = start(&cfg, url, sizeof url);
    if (!s) continue;
    struct backend *b = open_backend(url, API_OPENAI, NULL);
    if (!b) {
      fs_stop(s);
      continue;
    }
    struct backend_request rq = request("one two three", 8);
    rq.idle_timeout_s = 0.5;
    struct run_result r;
    uint64_t t0 = tm_now_ns();
    int rc = backend_run(b, &rq, &r);
    double ms = MS(tm_now_ns() - t0);
    const char *name = fs_break_stage_name((enum fs_break_stage)st);
    CHECK_MSG(rc == -1 && r.error != RUN_OK, "stage %s: rc %d error %s", name, rc,
              run_error_name(r.error));
    CHECK_MSG(r.error_msg[0] != 0, "stage %s: empty message", name);
    CHECK_MSG(ms < 3000, "stage %s took %.0f ms", name, ms);
    enum run_error want = RUN_ERR_COUNT; /* COUNT: any failure kind */
    switch ((enum fs_break_stage)st) {
    case FS_BREAK_STALL:
      want = RUN_ERR_IDLE_TIMEOUT;
      CHECK_MSG(r.n_chunks == 1, "stall: %zu chunks kept", r.n_chunks);
      CHECK_MSG(ms >= 450 && ms < 1500, "stall: idle timeout after %.0f ms", ms);
      break;
    case FS_BREAK_STALL_BEFORE_HEADERS:
      want = RUN_ERR_IDLE_TIMEOUT;
      CHECK_EQ_U64(r.t_headers_ns, 0);
      break;
    case FS_BREAK_MID_EVENT:
      want = RUN_ERR_MALFORMED;
      CHECK_CONTAINS(r.error_msg, "inside an SSE line");
      break;
    /* No terminal event: incomplete, and a cut connection keeps the
     * transport's reason in the message. */
    case FS_BREAK_AFTER_FIRST_TOKEN:
      want = RUN_ERR_INCOMPLETE;
      CHECK_EQ_INT(r.n_chunks, 1);
      CHECK_CONTAINS(r.error_msg, "closed mid-stream");
      break;
    case FS_BREAK_NO_DONE_NO_USAGE:
      want = RUN_ERR_INCOMPLETE;
      CHECK_EQ_INT(r.n_chunks, 8);
      CHECK_CONTAINS(r.error_msg, "terminal event");
      break;
    case FS_BREAK_AFTER_HEADERS:
      want = RUN_ERR_INCOMPLETE;
      CHECK_CONTAINS(r.error_msg, "closed mid-stream");
      break;
    case FS_BREAK_MALFORMED_JSON: want = RUN_ERR_MALFORMED; break;
    case FS_BREAK_HTTP_500:
      want = RUN_ERR_HTTP;
      CHECK_EQ_INT(r.http_status, 500);
      CHECK_CONTAINS(r.error_msg, "fakeserver: internal error");
      break;
    case FS_BREAK_HTTP_404:
      want = RUN_ERR_HTTP;
      CHECK_EQ_INT(r.http_status, 404);
      break;
    case FS_BREAK_ERROR_EVENT: want = RUN_ERR_STREAM; break;
    case FS_BREAK_CONTEXT_OVERFLOW: want = RUN_ERR_CONTEXT_OVERFLOW; break;
    case FS_BREAK_CLOSE_ON_ACCEPT:
    case FS_BREAK_HALF_HEADERS:
    case FS_BREAK_GARBAGE:
      want = RUN_ERR_OTHER;
      CHECK_EQ_U64(r.t_headers_ns, 0);
      break;
    default: break;
    }
    if (want != RUN_ERR_COUNT)
      CHECK_MSG(r.error == want, "stage %s: want %s, got %s: %s", name, run_error_name(want),
                run_error_name(r.error), r.error_msg);
    run_result_free(&r);
    backend_free(b);
    fs_stop(s);
  }
}

static void test_total_timeout(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  cfg.a_ms = 5;
  cfg.c_ms = 50;
  char url[64];
  struct fakeserver *s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend *b = open_backend(url, API_OPENAI, NULL);
  if (b) {
    struct backend_request rq = request("one", 100);
    rq.total_timeout_s = 0.4;
    struct run_result r;
    uint64_t t0 = tm_now_ns();
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    double ms = MS(tm_now_ns() - t0);
    CHECK_MSG(r.error == RUN_ERR_TIMEOUT, "got %s: %s", run_error_name(r.error), r.error_msg);
    CHECK_MSG(ms >= 390 && ms < 700, "total timeout after %.0f ms", ms);
    CHECK(r.n_chunks >= 3); /* what arrived is kept */
    run_result_free(&r);
    backend_free(b);
  }
  fs_stop(s);
}

static uint64_t g_interrupt_at;
static void *interrupter(void *arg) {
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  g_interrupt_at = tm_now_ns();
  backend_interrupt();
  return NULL;
}

static void test_interrupt(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  cfg.a_ms = 5;
  cfg.c_ms = 50;
  char url[64];
  struct fakeserver *s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend *b = open_backend(url, API_OPENAI, NULL);
  if (b) {
    struct backend_request rq = request("one", 200);
    struct run_result r;
    pthread_t th;
    pthread_create(&th, NULL, interrupter, NULL);
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    uint64_t t_ret = tm_now_ns();
    pthread_join(th, NULL);
    CHECK_EQ_INT(r.error, RUN_ERR_INTERRUPTED);
    CHECK_MSG(MS(t_ret - g_interrupt_at) < 500, "stopped %.0f ms after the interrupt",
              MS(t_ret - g_interrupt_at));
    CHECK(r.n_chunks >= 2);
    run_result_free(&r);
    /* the flag stays set until cleared: the next run stops at once */
    CHECK(backend_interrupted());
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    CHECK_EQ_INT(r.error, RUN_ERR_INTERRUPTED);
    run_result_free(&r);
    backend_interrupt_clear();
    rq.max_tokens = 3;
    CHECK_EQ_INT(backend_run(b, &rq, &r), 0);
    run_result_free(&r);
    backend_free(b);
  }
  backend_interrupt_clear();
  fs_stop(s);
}

static bool has_secret(const char *s, size_t n, const char *secret) {
  size_t k = strlen(secret);
  for (size_t i = 0; s && i + k <= n; i++)
    if (memcmp(s + i, secret, k) == 0) return true;
  return false;
}

static void check_no_secret(const struct run_result *r, const char *secret) {
  CHECK(!has_secret(r->text, r->text_len, secret));
  CHECK(!has_secret(r->error_msg, strlen(r->error_msg), secret));
  CHECK(!has_secret(r->finish_reason, strlen(r->finish_reason), secret));
  CHECK(!has_secret(r->server_model, strlen(r->server_model), secret));
  CHECK(!has_secret(r->system_fingerprint, strlen(r->system_fingerprint), secret));
}

static void test_api_key(void) {
  static const char key[] = "sk-test-SECRET-4242";
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_PACED;
  cfg.a_ms = 2;
  cfg.c_ms = 1;
  char url[64];
  struct fakeserver *s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend *b = open_backend(url, API_OPENAI, key);
  if (b) {
    struct backend_request rq = request("one two", 5);
    struct run_result r;
    CHECK_EQ_INT(backend_run(b, &rq, &r), 0);
    CHECK_CONTAINS(fs_last_request_headers(s), "Bearer sk-test-SECRET-4242");
    check_no_secret(&r, "SECRET-4242");
    run_result_free(&r);
    backend_free(b);
  }
  fs_stop(s);
  /* an error run: the key in no message either, even if the server echoes it */
  fs_config_init(&cfg);
  cfg.mode = FS_BREAK;
  cfg.break_stage = FS_BREAK_HTTP_500;
  s = start(&cfg, url, sizeof url);
  if (!s) return;
  b = open_backend(url, API_OPENAI, key);
  if (b) {
    struct backend_request rq = request("one two", 5);
    struct run_result r;
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    check_no_secret(&r, "SECRET-4242");
    /* scrubbing works on a message that quotes the key */
    char msg[128];
    snprintf(msg, sizeof msg, "bad key %s here", key);
    transport_scrub_secret(b, msg, sizeof msg);
    CHECK_STR(msg, "bad key [redacted] here");
    run_result_free(&r);
    backend_free(b);
  }
  fs_stop(s);
}


/* The recorded llama-server exchanges, replayed at 1/4 of their pacing, through
 * the whole path: real bytes, counters, an error event inside a 200 stream. */
static void test_replay_fixtures(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = FS_REPLAY;
  cfg.fixtures_dir = tm_fixture("llama-server");
  cfg.replay_file = "llama-server-chat-stream.json";
  cfg.time_scale = 0.25;
  char url[64];
  struct fakeserver *s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend *b = open_backend(url, API_OPENAI, NULL);
  if (b) {
    struct backend_request rq = request("Reference k3j4h5. Explain why decode is memory bound.", 64);
    struct run_result r;
    CHECK_EQ_INT(backend_run(b, &rq, &r), 0);
    CHECK_MSG(r.error == RUN_OK, "%s", r.error_msg);
    CHECK_EQ_INT(r.completion_tokens, 64);
    CHECK_EQ_INT(r.prompt_tokens, 33);
    CHECK_EQ_INT(r.cached_tokens, 14);
    CHECK_EQ_INT(r.timings_prompt_n, 19);
    CHECK_NEAR(r.timings_prompt_ms, 148.665 * 0.25, 1e-9); /* timers scaled with the pacing */
    CHECK(r.n_chunks >= 60 && r.n_chunks <= 64);
    CHECK_STR(r.finish_reason, "length");
    /* recorded: first text at 184 ms, last at ~1277 ms; x0.25 */
    if (r.n_chunks > 1) {
      double ttft = MS(r.chunks[0].t_ns - r.t_send_ns);
      CHECK_NEAR(ttft, 184.461 * 0.25, 15.0);
      bool mono = true;
      for (size_t i = 1; i < r.n_chunks; i++)
        if (r.chunks[i].t_ns < r.chunks[i - 1].t_ns) mono = false;
      CHECK(mono);
    }
    run_result_free(&r);
    backend_free(b);
  }
  fs_stop(s);

  cfg.replay_file = "llama-server-completions-stream.json";
  s = start(&cfg, url, sizeof url);
  if (!s) return;
  struct backend_config bc = {.base_url = url, .api = API_OPENAI, .endpoint = ENDPOINT_COMPLETION};
  struct tm_err err = {{0}};
  b = backend_new(&bc, &err);
  if (b) {
    struct backend_request rq = request("Reference k3j4h5.", 16);
    struct run_result r;
    CHECK_EQ_INT(backend_run(b, &rq, &r), -1);
    CHECK_MSG(r.error == RUN_ERR_STREAM, "got %s: %s", run_error_name(r.error), r.error_msg);
    CHECK_EQ_INT(r.http_status, 200);
    run_result_free(&r);
    backend_free(b);
  }
  fs_stop(s);
}

void tm_run_tests(void) {
  /* loopback and the DNS test must not go through a proxy from the environment */
  setenv("NO_PROXY", "*", 1);
  setenv("no_proxy", "*", 1);
  TM_RUN(test_url_validation);
  TM_RUN(test_run_result_chunks);
  TM_RUN(test_paced_timestamps_and_reuse);
  TM_RUN(test_ollama_ndjson);
  TM_RUN(test_replay_fixtures);
  TM_RUN(test_connect_dns_tls);
  TM_RUN(test_break_stages);
  TM_RUN(test_cut_with_usage_every_chunk);
  TM_RUN(test_total_timeout);
  TM_RUN(test_interrupt);
  TM_RUN(test_api_key);
}
