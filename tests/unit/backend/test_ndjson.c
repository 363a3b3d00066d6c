/* test_ndjson: the NDJSON framer gives the same lines for every split of an
 * Ollama-style stream (written from Ollama's API documentation: no capture of a
 * real Ollama exists here), with CRLF, blank lines, a last line without a
 * newline, and oversized lines. */
#include <stdlib.h>
#include <string.h>

#include "backend/ndjson.h"
#include "tm_test.h"

struct coll {
  char buf[1 << 14];
  size_t len;
  int n;
  int stop_at;
  bool nul_ok;
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
  return c->n == c->stop_at ? 1 : 0;
}

static void coll_init(struct coll *c) {
  memset(c, 0, sizeof *c);
  c->nul_ok = true;
}

static int feed_cuts(const char *s, size_t n, const size_t *cuts, int ncuts, struct coll *c,
                     size_t max, char *err, size_t err_n) {
  struct ndjson_parser p;
  ndjson_init(&p, max);
  size_t at = 0;
  int rc = FRAME_OK;
  for (int i = 0; i <= ncuts && rc == FRAME_OK; i++) {
    size_t end = i < ncuts ? cuts[i] : n;
    rc = ndjson_feed(&p, s + at, end - at, collect, c);
    at = end;
  }
  if (rc == FRAME_OK) rc = ndjson_finish(&p, collect, c);
  if (err) snprintf(err, err_n, "%s", p.err);
  ndjson_free(&p);
  return rc;
}

static const char stream[] =
    "{\"model\":\"m\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\","
    "\"content\":\"Hel\"},\"done\":false}\n"
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"lo\\n\"},\"done\":false}\n"
    "\n"
    "   \n"
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,"
    "\"total_duration\":123456789,\"prompt_eval_count\":12,\"eval_count\":2}\n";

static void test_every_split_point(void) {
  size_t n = strlen(stream);
  struct coll want, got;
  coll_init(&want);
  CHECK_EQ_INT(feed_cuts(stream, n, NULL, 0, &want, 0, NULL, 0), FRAME_OK);
  CHECK_EQ_INT(want.n, 3);
  CHECK(want.nul_ok);
  int bad = 0;
  for (size_t a = 0; a <= n; a++)
    for (size_t b = a; b <= n; b += 5) {
      size_t cuts[2] = {a, b};
      coll_init(&got);
      int rc = feed_cuts(stream, n, cuts, 2, &got, 0, NULL, 0);
      if (rc != FRAME_OK || got.n != 3 || got.len != want.len ||
          memcmp(got.buf, want.buf, want.len) != 0 || !got.nul_ok)
        bad++;
    }
  CHECK_EQ_INT(bad, 0);
}

static void test_crlf_and_last_line(void) {
  struct coll c;
  coll_init(&c);
  const char *in = "{\"a\":1}\r\n\r\n{\"b\":2}\r\n{\"c\":3}";
  size_t n = strlen(in);
  int bad = 0;
  for (size_t cut = 0; cut <= n; cut++) {
    coll_init(&c);
    int rc = feed_cuts(in, n, &cut, 1, &c, 0, NULL, 0);
    if (rc != FRAME_OK || c.n != 3 || c.len != 24 ||
        memcmp(c.buf, "{\"a\":1}\x1e{\"b\":2}\x1e{\"c\":3}\x1e", 24) != 0)
      bad++;
  }
  CHECK_EQ_INT(bad, 0);
  /* a stream of only blank lines gives nothing */
  coll_init(&c);
  CHECK_EQ_INT(feed_cuts("\n\r\n  \n", 6, NULL, 0, &c, 0, NULL, 0), FRAME_OK);
  CHECK_EQ_INT(c.n, 0);
}

static void test_oversized(void) {
  char line[300];
  memset(line, 'z', sizeof line);
  line[sizeof line - 1] = '\n';
  struct coll c;
  char err[160];
  coll_init(&c);
  size_t cuts[3] = {10, 100, 250};
  CHECK_EQ_INT(feed_cuts(line, sizeof line, cuts, 3, &c, 128, err, sizeof err), FRAME_ERR);
  CHECK_CONTAINS(err, "NDJSON line longer than 128 bytes");
  CHECK_EQ_INT(c.n, 0);
  /* at the limit passes */
  coll_init(&c);
  line[128] = '\n';
  CHECK_EQ_INT(feed_cuts(line, 129, NULL, 0, &c, 128, err, sizeof err), FRAME_OK);
  CHECK_EQ_INT(c.n, 1);
}

static void test_stop(void) {
  struct coll c;
  coll_init(&c);
  c.stop_at = 1;
  const char *in = "{\"done\":true}\n{\"late\":1}\n";
  CHECK_EQ_INT(feed_cuts(in, strlen(in), NULL, 0, &c, 0, NULL, 0), FRAME_STOP);
  CHECK_EQ_INT(c.n, 1);
}

void tm_run_tests(void) {
  TM_RUN(test_every_split_point);
  TM_RUN(test_crlf_and_last_line);
  TM_RUN(test_oversized);
  TM_RUN(test_stop);
}
