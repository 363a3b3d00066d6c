/* test_pool: backend_pool against the loopback fake server: several requests
 * in flight on one multi, each ended with backend_run's result (tokens,
 * counters, ok), the slots reused; a stalled stream ends on its own idle
 * timeout while the others complete; a full pool refuses a start; Ctrl-C ends
 * every request in flight as interrupted. */
#include <stdlib.h>
#include <string.h>

#include "backend/pool.h"
#include "fakeserver.h"
#include "tm_test.h"
#include "util/clock.h"

struct done_log {
  int n;
  void *tags[16];
};

static void on_done(void *tag, struct run_result *out, void *ctx) {
  struct done_log *l = ctx;
  (void)out;
  if (l->n < 16) l->tags[l->n] = tag;
  l->n++;
}

static struct backend *open_at(struct fakeserver **s, struct fs_config *cfg) {
  int port = 0;
  *s = fs_start(cfg, &port);
  CHECK_MSG(*s != NULL, "fs_start failed");
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  struct backend_config bc = {.base_url = url, .api = API_OPENAI, .endpoint = ENDPOINT_CHAT,
                              .connect_timeout_s = 5};
  struct tm_err err = {{0}};
  struct backend *b = backend_new(&bc, &err);
  CHECK_MSG(b != NULL, "%s", err.msg);
  return b;
}

/* Drives until `want` requests ended, for at most 20 s. */
static void drive_all(struct backend_pool *p, struct done_log *l, int want) {
  const uint64_t end = tm_now_ns() + 20000000000ull;
  while (l->n < want && tm_now_ns() < end) backend_pool_drive(p, 5, on_done, l);
}

static void test_three_in_flight(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.flavor = FS_FLAVOR_OPENAI;
  cfg.a_ms = 1, cfg.b_ms = 0, cfg.c_ms = 1;
  struct fakeserver *s;
  struct backend *b = open_at(&s, &cfg);
  struct tm_err err = {{0}};
  struct backend_pool *p = backend_pool_new(b, 3, &err);
  CHECK_MSG(p != NULL, "%s", err.msg);
  CHECK_EQ_U64(backend_pool_capacity(p), 3);
  struct run_result r[4];
  struct backend_request req = {.prompt = "one two three", .max_tokens = 12, .exact_length = true,
                                .stream = true, .idle_timeout_s = 5, .total_timeout_s = 10};
  for (int round = 0; round < 2; round++) { /* the second reuses the slots */
    struct done_log log = {0};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(backend_pool_start(p, &req, &r[i], &r[i]), 0);
    CHECK_EQ_U64(backend_pool_active(p), 3);
    /* a fourth does not fit: refused, its result says why, no callback */
    CHECK_EQ_INT(backend_pool_start(p, &req, &r[3], &r[3]), -1);
    CHECK(r[3].error == RUN_ERR_OTHER && strstr(r[3].error_msg, "no free stream"));
    run_result_free(&r[3]);
    drive_all(p, &log, 3);
    CHECK_EQ_INT(log.n, 3);
    CHECK_EQ_U64(backend_pool_active(p), 0);
    for (int i = 0; i < 3; i++) {
      CHECK_MSG(r[i].error == RUN_OK, "%s", r[i].error_msg);
      CHECK_EQ_INT(r[i].completion_tokens, 12);
      CHECK_EQ_U64(r[i].n_chunks, 12);
      CHECK(r[i].t_send_ns > 0 && r[i].t_end_ns >= r[i].t_send_ns);
      run_result_free(&r[i]);
    }
  }
  backend_pool_free(p);
  backend_free(b);
  fs_stop(s);
}

static void test_stall_and_interrupt(void) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.flavor = FS_FLAVOR_OPENAI;
  cfg.mode = FS_BREAK;
  cfg.break_stage = FS_BREAK_STALL;
  cfg.a_ms = 1, cfg.b_ms = 0, cfg.c_ms = 1;
  struct fakeserver *s;
  struct backend *b = open_at(&s, &cfg);
  struct tm_err err = {{0}};
  struct backend_pool *p = backend_pool_new(b, 2, &err);
  struct run_result r;
  struct backend_request req = {.prompt = "x", .max_tokens = 8, .stream = true,
                                .idle_timeout_s = 0.3, .total_timeout_s = 10};
  struct done_log log = {0};
  CHECK_EQ_INT(backend_pool_start(p, &req, &r, &r), 0);
  drive_all(p, &log, 1);
  CHECK_EQ_INT(log.n, 1);
  CHECK_MSG(r.error == RUN_ERR_IDLE_TIMEOUT, "%d %s", r.error, r.error_msg);
  CHECK(strstr(r.error_msg, "idle timeout") != NULL);
  run_result_free(&r);
  /* Ctrl-C: what is in flight ends as interrupted */
  req.idle_timeout_s = 30;
  CHECK_EQ_INT(backend_pool_start(p, &req, &r, &r), 0);
  const uint64_t until = tm_now_ns() + 100000000u; /* 0.1 s in flight first */
  while (tm_now_ns() < until) backend_pool_drive(p, 5, on_done, &log);
  backend_interrupt();
  drive_all(p, &log, 2);
  backend_interrupt_clear();
  CHECK_EQ_INT(log.n, 2);
  CHECK_EQ_INT(r.error, RUN_ERR_INTERRUPTED);
  run_result_free(&r);
  backend_pool_free(p);
  backend_free(b);
  fs_stop(s);
}

void tm_run_tests(void) {
  TM_RUN(test_three_in_flight);
  TM_RUN(test_stall_and_interrupt);
}
