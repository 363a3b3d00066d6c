/* fuzz_stream: libFuzzer target for the streamed-response path: the SSE and
 * NDJSON framers (src/backend/sse.c, ndjson.c) and the three dialects'
 * on_event / finish / on_http_error.
 *
 * Input layout: the first 4 bytes seed the choice of split points (so the
 * fuzzer explores how receive buffers cut the stream), the rest is the stream.
 * Contract checked beyond "no crash, no sanitizer report":
 *   - split independence: feeding the stream in random pieces gives exactly the
 *     events (and the same final code) that feeding it whole gives;
 *   - a framing error always comes with a message;
 *   - every dialect leaves a self-consistent run_result: chunks inside the text
 *     arena, text NUL-terminated, error_msg one line, an error kind whenever
 *     on_event/finish returned -1.
 * Small max event size (4 KiB) so oversize paths are reached. Built and run by
 * run_fuzz_stream.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/ndjson.h"
#include "backend/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENT 4096

/* FNV-1a over every event (length-prefixed), so two feeds can be compared. */
struct trace {
  uint64_t h;
  int n;
  const struct dialect *const *ds;
  struct run_result *rs;
  int *state; /* per dialect: 0 going, 1 complete, -1 failed */
};

static void mix(struct trace *t, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) t->h = (t->h ^ b[i]) * 1099511628211ull;
}

static void check_result(const struct run_result *r) {
  if (r->text_len && !r->text) abort();
  if (r->text && r->text[r->text_len] != 0) abort();
  for (size_t i = 0; i < r->n_chunks; i++) {
    const struct run_chunk *c = &r->chunks[i];
    if (c->text_len == 0) abort();
    if ((size_t)c->text_off + c->text_len > r->text_len) abort();
    if (c->field > CHUNK_REASONING) abort();
  }
  size_t ml = strnlen(r->error_msg, sizeof r->error_msg);
  if (ml == sizeof r->error_msg) abort();
  if (memchr(r->error_msg, '\n', ml)) abort();
  if ((unsigned)r->error >= RUN_ERR_COUNT) abort();
}

static int on_event(void *ud, const char *payload, size_t len) {
  struct trace *t = ud;
  if (payload[len] != 0) abort();
  mix(t, &len, sizeof len);
  mix(t, payload, len);
  t->n++;
  if (!t->ds) return 0;
  for (int k = 0; t->ds[k]; k++) {
    if (t->state[k] != 0) continue;
    struct run_result *r = &t->rs[k];
    r->n_events++;
    int rc = t->ds[k]->on_event(r, payload, len, (uint64_t)t->n);
    if (rc < 0 && r->error == RUN_OK) abort();
    t->state[k] = rc > 0 ? 1 : rc < 0 ? -1 : 0;
  }
  return 0;
}

/* xorshift over the seed bytes: next piece length in 1..64 */
static size_t next_piece(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return 1 + (*s % 64);
}

static int run_sse(const char *p, size_t n, uint32_t seed, bool split, struct trace *t) {
  struct sse_parser sp;
  sse_init(&sp, MAX_EVENT);
  int rc = FRAME_OK;
  size_t at = 0;
  while (at < n && rc == FRAME_OK) {
    size_t k = split ? next_piece(&seed) : n - at;
    if (k > n - at) k = n - at;
    rc = sse_feed(&sp, p + at, k, on_event, t);
    at += k;
  }
  if (rc == FRAME_OK) rc = sse_finish(&sp, on_event, t);
  if (rc == FRAME_ERR && !sp.err[0]) abort();
  sse_free(&sp);
  return rc;
}

static int run_ndjson(const char *p, size_t n, uint32_t seed, bool split, struct trace *t) {
  struct ndjson_parser np;
  ndjson_init(&np, MAX_EVENT);
  int rc = FRAME_OK;
  size_t at = 0;
  while (at < n && rc == FRAME_OK) {
    size_t k = split ? next_piece(&seed) : n - at;
    if (k > n - at) k = n - at;
    rc = ndjson_feed(&np, p + at, k, on_event, t);
    at += k;
  }
  if (rc == FRAME_OK) rc = ndjson_finish(&np, on_event, t);
  if (rc == FRAME_ERR && !np.err[0]) abort();
  ndjson_free(&np);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  uint32_t seed = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                  (uint32_t)data[3] << 24;
  if (seed == 0) seed = 1;
  const char *p = (const char *)data + 4;
  size_t n = size - 4;

  /* framers: whole vs split */
  for (int f = 0; f < 2; f++) {
    struct trace whole = {.h = 1469598103934665603ull}, cut = {.h = 1469598103934665603ull};
    int rw = f ? run_ndjson(p, n, seed, false, &whole) : run_sse(p, n, seed, false, &whole);
    int rc = f ? run_ndjson(p, n, seed, true, &cut) : run_sse(p, n, seed, true, &cut);
    if (rw != rc || whole.n != cut.n || whole.h != cut.h) {
      fprintf(stderr, "framer %d: whole rc %d n %d, split rc %d n %d\n", f, rw, whole.n, rc,
              cut.n);
      abort();
    }
  }

  /* dialects: each framing's events through the dialects that use it */
  static const struct dialect *const sse_ds[] = {&dialect_openai, &dialect_llamacpp, NULL};
  static const struct dialect *const nd_ds[] = {&dialect_ollama, NULL};
  for (int f = 0; f < 2; f++) {
    const struct dialect *const *ds = f ? nd_ds : sse_ds;
    struct run_result rs[2];
    int state[2] = {0, 0};
    for (int k = 0; ds[k]; k++) run_result_init(&rs[k]);
    struct trace t = {.h = 0, .ds = ds, .rs = rs, .state = state};
    if (f) run_ndjson(p, n, seed, true, &t);
    else run_sse(p, n, seed, true, &t);
    for (int k = 0; ds[k]; k++) {
      if (state[k] >= 0 && rs[k].error == RUN_OK) {
        if (ds[k]->finish(&rs[k]) != 0 && rs[k].error == RUN_OK) abort();
      }
      check_result(&rs[k]);
      run_result_free(&rs[k]);
    }
  }

  /* the whole input as an HTTP error body, for every dialect */
  static const struct dialect *const all[] = {&dialect_openai, &dialect_llamacpp,
                                              &dialect_ollama};
  char *body = malloc(n + 1); /* backend.c hands the body NUL-terminated */
  if (!body) abort();
  memcpy(body, p, n);
  body[n] = 0;
  for (int k = 0; k < 3; k++) {
    struct run_result r;
    run_result_init(&r);
    all[k]->on_http_error(&r, 400 + (int)(seed % 200), body, n);
    if (r.error != RUN_ERR_HTTP && r.error != RUN_ERR_CONTEXT_OVERFLOW) abort();
    check_result(&r);
    run_result_free(&r);
  }
  free(body);
  return 0;
}
