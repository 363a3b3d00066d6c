/* test_sse: the SSE framer gives the same events for every split of a recorded
 * llama-server stream, handles CRLF, comments, other fields, multi-line data,
 * oversized events and streams that end without a blank line or mid-line. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sse.h"
#include "tm_test.h"

/* Collected events: payloads back to back, each followed by a 0x1e separator. */
struct coll {
  char buf[1 << 17];
  size_t len;
  int n;
  int stop_at;   /* return 1 on this event number (1-based); 0 = never */
  int fail_at;   /* return -1 on this event number */
  bool nul_ok;   /* every payload was NUL-terminated at [len] */
};

static int collect(void *ctx, const char *payload, size_t len) {
  struct coll *c = ctx;
  c->n++;
  if (payload[len] != 0) c->nul_ok = false;
  if (c->len + len + 1 < sizeof c->buf) {
    memcpy(c->buf + c->len, payload, len);
    c->len += len;
    c->buf[c->len++] = 0x1e;
  }
  if (c->n == c->stop_at) return 1;
  if (c->n == c->fail_at) return -1;
  return 0;
}

static void coll_init(struct coll *c) {
  memset(c, 0, sizeof *c);
  c->nul_ok = true;
}

/* Feeds s in pieces cut at the given offsets (ascending), then finishes. */
static int feed_split(const char *s, size_t n, const size_t *cuts, int ncuts, struct coll *c,
                      size_t max) {
  struct sse_parser p;
  sse_init(&p, max);
  size_t at = 0;
  int rc = FRAME_OK;
  for (int i = 0; i <= ncuts && rc == FRAME_OK; i++) {
    size_t end = i < ncuts ? cuts[i] : n;
    rc = sse_feed(&p, s + at, end - at, collect, c);
    at = end;
  }
  if (rc == FRAME_OK) rc = sse_finish(&p, collect, c);
  sse_free(&p);
  return rc;
}

static int feed_all(const char *s, struct coll *c, size_t max) {
  return feed_split(s, strlen(s), NULL, 0, c, max);
}

/* The recorded chat stream (every line back to back) and its expected events:
 * the text after "data: " of each data line. */
static char *load_stream(size_t *n, struct coll *expect) {
  json_error_t jerr;
  json_t *root = json_load_file(tm_fixture("llama-server/llama-server-chat-stream.json"), 0, &jerr);
  CHECK_MSG(root != NULL, "fixture: %s", jerr.text);
  if (!root) return NULL;
  json_t *lines = json_object_get(root, "lines");
  size_t cap = 1 << 16, len = 0, i;
  char *s = malloc(cap);
  json_t *l;
  coll_init(expect);
  json_array_foreach(lines, i, l) {
    const char *t = json_string_value(json_object_get(l, "line"));
    size_t tl = strlen(t);
    while (len + tl + 1 > cap) s = realloc(s, cap *= 2);
    memcpy(s + len, t, tl);
    len += tl;
    if (strncmp(t, "data: ", 6) == 0) collect(expect, t + 6, tl - 7);
  }
  s[len] = 0;
  json_decref(root);
  *n = len;
  return s;
}

static void test_every_split_point(void) {
  size_t n;
  struct coll want, got;
  char *s = load_stream(&n, &want);
  if (!s) return;
  CHECK(want.n >= 60); /* 64 tokens + role + usage + [DONE] */
  coll_init(&got);
  CHECK_EQ_INT(feed_split(s, n, NULL, 0, &got, 0), FRAME_OK);
  CHECK_EQ_INT(got.n, want.n);
  CHECK(got.len == want.len && memcmp(got.buf, want.buf, want.len) == 0);
  int bad = 0;
  for (size_t cut = 0; cut <= n; cut++) {
    coll_init(&got);
    int rc = feed_split(s, n, &cut, 1, &got, 0);
    if (rc != FRAME_OK || got.n != want.n || got.len != want.len ||
        memcmp(got.buf, want.buf, want.len) != 0 || !got.nul_ok)
      bad++;
  }
  CHECK_EQ_INT(bad, 0);
  /* one byte at a time */
  size_t *cuts = malloc(n * sizeof *cuts);
  for (size_t i = 0; i < n; i++) cuts[i] = i;
  coll_init(&got);
  CHECK_EQ_INT(feed_split(s, n, cuts, (int)n, &got, 0), FRAME_OK);
  CHECK_EQ_INT(got.n, want.n);
  CHECK(got.len == want.len && memcmp(got.buf, want.buf, want.len) == 0);
  /* random multi-cuts */
  unsigned seed = 12345;
  for (int trial = 0; trial < 200; trial++) {
    int k = 0;
    size_t at = 0;
    while (k < 40) {
      seed = seed * 1103515245u + 12345u;
      at += 1 + (seed >> 8) % 97;
      if (at >= n) break;
      cuts[k++] = at;
    }
    coll_init(&got);
    int rc = feed_split(s, n, cuts, k, &got, 0);
    if (rc != FRAME_OK || got.len != want.len || memcmp(got.buf, want.buf, want.len) != 0) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  free(cuts);
  free(s);
}

static void test_crlf(void) {
  size_t n;
  struct coll want, got;
  char *s = load_stream(&n, &want);
  if (!s) return;
  char *crlf = malloc(2 * n + 1);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\n') crlf[m++] = '\r';
    crlf[m++] = s[i];
  }
  int bad = 0;
  for (size_t cut = 0; cut <= m; cut += 1) {
    coll_init(&got);
    int rc = feed_split(crlf, m, &cut, 1, &got, 0);
    if (rc != FRAME_OK || got.len != want.len || memcmp(got.buf, want.buf, want.len) != 0) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  free(crlf);
  free(s);
}

static void test_fields_and_comments(void) {
  struct coll c;
  coll_init(&c);
  const char *in = ": keep-alive ping\n"
                   "event: message\n"
                   "id: 7\n"
                   "retry: 1000\n"
                   "data:no-space\n"
                   "\n"
                   "data: line one\n"
                   "data:  two spaces\n"
                   "data\n"
                   "\n"
                   ":comment only\n"
                   "\n"
                   "data:\n"
                   "\n";
  CHECK_EQ_INT(feed_all(in, &c, 0), FRAME_OK);
  CHECK_EQ_INT(c.n, 3);
  /* "data" with no colon is a data field with an empty value */
  const char want[] = "no-space\x1eline one\n two spaces\n\x1e\x1e";
  CHECK_EQ_INT(c.len, sizeof want - 1);
  CHECK(memcmp(c.buf, want, sizeof want - 1) == 0);
}

/* An empty "data:" as the first event of a fresh parser (no data buffer yet)
 * is dispatched as an empty event, at a blank line and at the end of the
 * stream: on_line allocates the buffer even for an empty value. */
static void test_empty_first_event(void) {
  struct coll c;
  coll_init(&c);
  CHECK_EQ_INT(feed_all("data:\n\n", &c, 0), FRAME_OK);
  CHECK_EQ_INT(c.n, 1);
  CHECK(c.len == 1 && c.buf[0] == '\x1e');
  coll_init(&c);
  CHECK_EQ_INT(feed_all("data\n", &c, 0), FRAME_OK);
  CHECK_EQ_INT(c.n, 1);
  CHECK(c.len == 1 && c.buf[0] == '\x1e');
}

static void test_end_of_stream(void) {
  struct coll c;
  coll_init(&c);
  /* complete data line, no blank line: dispatched at finish */
  CHECK_EQ_INT(feed_all("data: a\n\ndata: [DONE]\n", &c, 0), FRAME_OK);
  CHECK_EQ_INT(c.n, 2);
  CHECK(c.len == 9 && memcmp(c.buf, "a\x1e[DONE]\x1e", 9) == 0);
  /* cut line: not dispatched, an error */
  coll_init(&c);
  struct sse_parser p;
  sse_init(&p, 0);
  CHECK_EQ_INT(sse_feed(&p, "data: a\n\ndata: {\"x\":", 20, collect, &c), FRAME_OK);
  CHECK_EQ_INT(sse_finish(&p, collect, &c), FRAME_ERR);
  CHECK_CONTAINS(p.err, "stream ended inside an SSE line");
  CHECK_EQ_INT(c.n, 1);
  /* a trailing CR alone is not a cut line */
  sse_reset(&p);
  coll_init(&c);
  CHECK_EQ_INT(sse_feed(&p, "data: a\r\n\r", 10, collect, &c), FRAME_OK);
  CHECK_EQ_INT(sse_finish(&p, collect, &c), FRAME_OK);
  CHECK_EQ_INT(c.n, 1);
  /* reset forgets a pending event */
  sse_reset(&p);
  coll_init(&c);
  CHECK_EQ_INT(sse_feed(&p, "data: old\n", 10, collect, &c), FRAME_OK);
  sse_reset(&p);
  CHECK_EQ_INT(sse_feed(&p, "data: new\n\n", 11, collect, &c), FRAME_OK);
  CHECK_EQ_INT(c.n, 1);
  CHECK(memcmp(c.buf, "new\x1e", 4) == 0);
  sse_free(&p);
}

static void test_oversized(void) {
  struct coll c;
  char big[400];
  memset(big, 'x', sizeof big);
  memcpy(big, "data: ", 6);
  big[sizeof big - 2] = '\n';
  big[sizeof big - 1] = 0;
  /* one line over the limit, fed whole and fed in pieces */
  coll_init(&c);
  struct sse_parser p;
  sse_init(&p, 100);
  CHECK_EQ_INT(sse_feed(&p, big, strlen(big), collect, &c), FRAME_ERR);
  CHECK_CONTAINS(p.err, "SSE line longer than 100 bytes");
  sse_reset(&p);
  int rc = FRAME_OK;
  for (size_t i = 0; i < strlen(big) && rc == FRAME_OK; i += 7)
    rc = sse_feed(&p, big + i, strlen(big) - i < 7 ? strlen(big) - i : 7, collect, &c);
  CHECK_EQ_INT(rc, FRAME_ERR);
  CHECK_EQ_INT(c.n, 0);
  /* many short data lines adding up past the limit */
  sse_reset(&p);
  rc = FRAME_OK;
  for (int i = 0; i < 50 && rc == FRAME_OK; i++) rc = sse_feed(&p, "data: 0123456789\n", 17, collect, &c);
  CHECK_EQ_INT(rc, FRAME_ERR);
  CHECK_CONTAINS(p.err, "SSE event larger than 100 bytes");
  /* just under the limit passes */
  sse_reset(&p);
  coll_init(&c);
  char ok[120];
  memset(ok, 'y', sizeof ok);
  memcpy(ok, "data: ", 6);
  ok[100] = '\n'; /* a 100-byte line: at the limit */
  ok[101] = '\n';
  CHECK_EQ_INT(sse_feed(&p, ok, 102, collect, &c), FRAME_OK);
  CHECK_EQ_INT(c.n, 1);
  CHECK_EQ_INT(c.len, 95);
  sse_free(&p);
}

static void test_callback_codes(void) {
  struct coll c;
  coll_init(&c);
  c.stop_at = 2;
  CHECK_EQ_INT(feed_all("data: 1\n\ndata: 2\n\ndata: 3\n\n", &c, 0), FRAME_STOP);
  CHECK_EQ_INT(c.n, 2);
  coll_init(&c);
  c.fail_at = 1;
  CHECK_EQ_INT(feed_all("data: 1\n\ndata: 2\n\n", &c, 0), FRAME_CB_FAIL);
  CHECK_EQ_INT(c.n, 1);
}

void tm_run_tests(void) {
  TM_RUN(test_every_split_point);
  TM_RUN(test_crlf);
  TM_RUN(test_fields_and_comments);
  TM_RUN(test_empty_first_event);
  TM_RUN(test_end_of_stream);
  TM_RUN(test_oversized);
  TM_RUN(test_callback_codes);
}
