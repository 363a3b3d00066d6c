/* stream_parse_bench: events per second through the client's streamed-response
 * path on one core: SSE framing (src/backend/sse.c) + the OpenAI dialect's
 * on_event (JSON parse, text chunk append, counters), the work backend.c does
 * per received buffer. Issue 3 part 8: the client must not be the bottleneck,
 * target >= 200,000 events/s.
 *
 * Input: one real llama.cpp chat-completion chunk event (the first one that
 * carries text in fixtures/llama-server/llama-server-chat-stream.json),
 * repeated N times with "\n\n" separators and fed in 16 KiB slices (libcurl's
 * default receive buffer), so line splits across buffers happen as on a socket.
 * Build (after building tm_backend and tm_util in <build>):
 *   cc -O2 -std=gnu11 -D_GNU_SOURCE -Isrc bench/stream_parse_bench.c \
 *      <build>/libtm_backend.a <build>/libtm_util.a -ljansson -lcurl -lm -lpthread \
 *      -o /tmp/stream_parse_bench
 *   /tmp/stream_parse_bench [fixtures_dir] [events]
 * Prints framing-only and framing+dialect rates (best of 5 rounds, with the
 * median). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/sse.h"
#include "util/clock.h"

struct ctx {
  struct run_result *r;
  uint64_t t_ns;
  long n;
  int rc;
};

static int count_only(void *ud, const char *payload, size_t len) {
  struct ctx *c = ud;
  c->n += (long)(len > 0);
  return 0;
}

static int to_dialect(void *ud, const char *payload, size_t len) {
  struct ctx *c = ud;
  c->n++;
  c->r->n_events++;
  int rc = dialect_openai.on_event(c->r, payload, len, c->t_ns);
  if (rc != 0) c->rc = rc;
  return rc < 0 ? -1 : 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One round: returns events/s. */
static double round_rate(const char *buf, size_t len, long want, bool dialect, struct ctx *c) {
  struct sse_parser p;
  sse_init(&p, 0);
  struct run_result r;
  run_result_init(&r);
  c->r = &r;
  c->n = 0;
  c->rc = 0;
  uint64_t t0 = tm_now_ns();
  for (size_t at = 0; at < len; at += 16384) {
    size_t n = len - at < 16384 ? len - at : 16384;
    c->t_ns = tm_now_ns(); /* as backend.c: one clock read per buffer */
    if (sse_feed(&p, buf + at, n, dialect ? to_dialect : count_only, c) != FRAME_OK) break;
  }
  uint64_t t1 = tm_now_ns();
  if (c->n != want || c->rc != 0) {
    fprintf(stderr, "round failed: %ld events of %ld, rc %d, %s\n", c->n, want, c->rc,
            r.error_msg);
    exit(1);
  }
  if (dialect && r.n_chunks != (size_t)want) {
    fprintf(stderr, "expected %ld text chunks, got %zu\n", want, r.n_chunks);
    exit(1);
  }
  run_result_free(&r);
  sse_free(&p);
  return (double)want / ((double)(t1 - t0) * 1e-9);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "tests/fixtures";
  long events = argc > 2 ? atol(argv[2]) : 200000;
  char path[1024];
  snprintf(path, sizeof path, "%s/llama-server/llama-server-chat-stream.json", dir);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (!root) {
    fprintf(stderr, "%s: %s\n", path, jerr.text);
    return 1;
  }
  const char *line = NULL;
  size_t i;
  json_t *l;
  json_array_foreach(json_object_get(root, "lines"), i, l) {
    const char *t = json_string_value(json_object_get(l, "line"));
    if (t && strstr(t, "\"content\":\"")) {
      line = t;
      break;
    }
  }
  if (!line) {
    fprintf(stderr, "no text event in %s\n", path);
    return 1;
  }
  size_t ll = strlen(line); /* "data: {...}\n" */
  size_t len = (ll + 1) * (size_t)events;
  char *buf = malloc(len);
  if (!buf) return 1;
  for (long k = 0; k < events; k++) {
    memcpy(buf + (size_t)k * (ll + 1), line, ll);
    buf[(size_t)k * (ll + 1) + ll] = '\n';
  }
  printf("event: %zu bytes: %.*s\n", ll, (int)(ll - 1), line);
  struct ctx c;
  for (int mode = 0; mode < 2; mode++) {
    double rates[5];
    for (int k = 0; k < 5; k++) rates[k] = round_rate(buf, len, events, mode == 1, &c);
    qsort(rates, 5, sizeof rates[0], cmp_d);
    printf("%-28s %ld events: best %.0f events/s, median %.0f events/s (%.1f MB/s best)\n",
           mode ? "SSE framing + openai dialect" : "SSE framing only", events, rates[4],
           rates[2], rates[4] * (double)(ll + 1) / 1e6);
  }
  free(buf);
  json_decref(root);
  return 0;
}
