/* dialect_fixture: test helpers shared by the dialect tests (header-only, so
 * each test binary stays one .c file).
 *
 * fx_replay() plays a recorded llama-server exchange (fixtures/llama-server/
 * *.json: {"status", "lines": [{"t_ms", "line"}]}) through the real SSE or
 * NDJSON framer into a dialect, the way backend.c does: every line's bytes are
 * fed with that line's arrival time, each completed event goes to on_event,
 * and finish() runs once the stream stops (terminal event or end of bytes). */
#ifndef TM_DIALECT_FIXTURE_H
#define TM_DIALECT_FIXTURE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/ndjson.h"
#include "backend/sse.h"
#include "fakeserver.h"
#include "tm_test.h"

struct fx_ctx {
  const struct dialect *d;
  struct run_result *r;
  uint64_t t_ns;
  int n_events;   /* payloads handed to on_event */
  int last_rc;    /* on_event's last return */
};

static inline int fx_event_cb(void *ctx, const char *payload, size_t len) {
  struct fx_ctx *c = (struct fx_ctx *)ctx;
  c->n_events++;
  c->last_rc = c->d->on_event(c->r, payload, len, c->t_ns);
  return c->last_rc;
}

/* Loads a fixture exchange; NULL (and a failed check) when missing. */
static inline json_t *fx_load(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "llama-server/%s", name);
  json_error_t jerr;
  json_t *root = json_load_file(tm_fixture(rel), 0, &jerr);
  CHECK_MSG(root != NULL, "fixture %s: %s", name, jerr.text);
  return root;
}

/* Replays the fixture's lines through the framer into d. Returns finish()'s
 * result (0 ok, -1 failed; a framing error returns -2). *n_events and
 * *last_rc (optional) report what on_event saw. */
static inline int fx_replay(const char *name, const struct dialect *d, struct run_result *r,
                            int *n_events, int *last_rc) {
  json_t *root = fx_load(name);
  if (!root) return -2;
  struct fx_ctx c = {.d = d, .r = r, .t_ns = 0, .n_events = 0, .last_rc = 0};
  struct sse_parser sp;
  struct ndjson_parser np;
  bool sse = d->framing == FRAMING_SSE;
  if (sse) sse_init(&sp, 0);
  else ndjson_init(&np, 0);
  int frc = FRAME_OK;
  json_t *lines = json_object_get(root, "lines");
  for (size_t i = 0; i < json_array_size(lines) && frc == FRAME_OK; i++) {
    json_t *l = json_array_get(lines, i);
    c.t_ns = (uint64_t)(json_number_value(json_object_get(l, "t_ms")) * 1e6 + 0.5);
    json_t *s = json_object_get(l, "line");
    frc = sse ? sse_feed(&sp, json_string_value(s), json_string_length(s), fx_event_cb, &c)
              : ndjson_feed(&np, json_string_value(s), json_string_length(s), fx_event_cb, &c);
  }
  if (frc == FRAME_OK) frc = sse ? sse_finish(&sp, fx_event_cb, &c) : ndjson_finish(&np, fx_event_cb, &c);
  if (sse) sse_free(&sp);
  else ndjson_free(&np);
  json_decref(root);
  if (n_events) *n_events = c.n_events;
  if (last_rc) *last_rc = c.last_rc;
  if (frc == FRAME_ERR) return -2;
  return d->finish(r);
}

/* Feeds a list of payloads (one event each) straight to on_event, all at
 * t_ns = (index + 1) ms. Returns the last on_event result; stops at the first
 * non-zero one. */
static inline int fx_feed(const struct dialect *d, struct run_result *r, const char *const *ev,
                          size_t n) {
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = d->on_event(r, ev[i], strlen(ev[i]), (uint64_t)(i + 1) * 1000000u);
  return rc;
}

/* The chunk's text as a NUL-terminated copy in a static buffer. */
static inline const char *fx_chunk_text(const struct run_result *r, size_t i) {
  static char buf[4096];
  size_t n = r->chunks[i].text_len < sizeof buf - 1 ? r->chunks[i].text_len : sizeof buf - 1;
  memcpy(buf, r->text + r->chunks[i].text_off, n);
  buf[n] = 0;
  return buf;
}

/* The body of an error exchange: its lines concatenated (malloc'd). */
static inline char *fx_body(const char *name, int *status) {
  json_t *root = fx_load(name);
  if (!root) return NULL;
  *status = (int)json_integer_value(json_object_get(root, "status"));
  json_t *lines = json_object_get(root, "lines");
  size_t total = 0;
  for (size_t i = 0; i < json_array_size(lines); i++)
    total += json_string_length(json_object_get(json_array_get(lines, i), "line"));
  char *b = malloc(total + 1);
  size_t o = 0;
  for (size_t i = 0; b && i < json_array_size(lines); i++) {
    json_t *s = json_object_get(json_array_get(lines, i), "line");
    memcpy(b + o, json_string_value(s), json_string_length(s));
    o += json_string_length(s);
  }
  if (b) b[o] = 0;
  json_decref(root);
  return b;
}

/* Parses a built request body; NULL with a failed check when it is not JSON. */
static inline json_t *fx_parse_body(const char *body) {
  json_error_t jerr;
  json_t *o = body ? json_loads(body, 0, &jerr) : NULL;
  CHECK_MSG(o && json_is_object(o), "request body is not a JSON object: %s",
            body ? body : "(null)");
  return o;
}

/* Deterministic mutations of valid events must fail cleanly or pass, never
 * crash (the ASan twin of each test makes this a memory-safety check). */
static inline void fx_mutate(const struct dialect *d, const char *const *seeds, size_t n_seeds,
                             int rounds) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  char buf[2048];
  for (int k = 0; k < rounds; k++) {
    const char *s = seeds[(size_t)k % n_seeds];
    size_t n = strlen(s);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, s, n);
    int edits = 1 + k % 4;
    for (int e = 0; e < edits && n > 0; e++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t pos = (size_t)(x % n);
      switch ((x >> 32) % 4) {
      case 0: buf[pos] = (char)(x >> 40); break;             /* flip a byte */
      case 1: n = pos; break;                                /* cut */
      case 2: buf[pos] = "{}[]\":,0n"[(x >> 40) % 9]; break; /* structural char */
      default: memmove(buf + pos, buf + pos + 1, n - pos - 1), n--; break; /* delete */
      }
    }
    struct run_result r;
    run_result_init(&r);
    int rc = d->on_event(&r, buf, n, 1);
    CHECK(rc >= -1 && rc <= 1);
    if (rc == -1) CHECK(r.error != RUN_OK && r.error_msg[0] != 0);
    CHECK(strchr(r.error_msg, '\n') == NULL);
    run_result_free(&r);
  }
}

/* End to end: a loopback fake server (tests/server/) and a backend on it, for
 * backend_run (libcurl, framing, timing) into a dialect. NULL (checks failed)
 * when either cannot start. */
static inline struct fakeserver *e2e_start(enum fs_mode mode, enum fs_flavor flavor, const char *file,
                                    bool reasoning, struct backend **b, enum api_family api,
                                    enum api_endpoint ep) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  cfg.mode = mode;
  cfg.flavor = flavor;
  cfg.fixtures_dir = tm_fixture("llama-server");
  cfg.replay_file = file;
  cfg.time_scale = 0;
  cfg.a_ms = 5, cfg.b_ms = 0.1, cfg.c_ms = 1;
  cfg.reasoning = reasoning;
  int port = 0;
  struct fakeserver *fs = fs_start(&cfg, &port);
  CHECK(fs != NULL);
  if (!fs) return NULL;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  struct backend_config bc = {.base_url = url, .api = api, .endpoint = ep};
  struct tm_err err = {{0}};
  *b = backend_new(&bc, &err);
  CHECK_MSG(*b != NULL, "backend_new: %s", err.msg);
  if (!*b) {
    fs_stop(fs);
    return NULL;
  }
  return fs;
}

#endif
