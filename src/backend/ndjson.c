/* ndjson: see ndjson.h. Every line is gathered in p->line (so the payload is
 * always NUL-terminated for the dialect), which only grows. */
#include "backend/ndjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ndjson_init(struct ndjson_parser *p, size_t max_line_bytes) {
  memset(p, 0, sizeof *p);
  p->max_line_bytes = max_line_bytes ? max_line_bytes : FRAME_DEFAULT_MAX_EVENT_BYTES;
}

void ndjson_free(struct ndjson_parser *p) {
  free(p->line);
  p->line = NULL;
  p->line_cap = 0;
  ndjson_reset(p);
}

void ndjson_reset(struct ndjson_parser *p) {
  p->line_len = 0;
  p->offset = 0;
  p->err[0] = 0;
}

static int append(struct ndjson_parser *p, const char *s, size_t n) {
  if (p->line_len + n > p->max_line_bytes) {
    snprintf(p->err, sizeof p->err, "NDJSON line longer than %zu bytes (at stream byte %zu)",
             p->max_line_bytes, p->offset);
    return FRAME_ERR;
  }
  size_t need = p->line_len + n + 1;
  if (need > p->line_cap) {
    size_t c = p->line_cap ? p->line_cap : 256;
    while (c < need) c *= 2;
    char *nb = realloc(p->line, c);
    if (!nb) {
      snprintf(p->err, sizeof p->err, "out of memory for an NDJSON line of %zu bytes", need);
      return FRAME_ERR;
    }
    p->line = nb;
    p->line_cap = c;
  }
  memcpy(p->line + p->line_len, s, n);
  p->line_len += n;
  return FRAME_OK;
}

/* Dispatches the pending line unless it is blank; empties it. */
static int flush_line(struct ndjson_parser *p, stream_event_fn fn, void *ctx) {
  size_t len = p->line_len;
  p->line_len = 0;
  if (len && p->line[len - 1] == '\r') len--;
  size_t i = 0;
  while (i < len && (p->line[i] == ' ' || p->line[i] == '\t' || p->line[i] == '\r')) i++;
  if (i == len) return FRAME_OK;
  p->line[len] = 0;
  int rc = fn(ctx, p->line, len);
  if (rc > 0) return FRAME_STOP;
  if (rc < 0) return FRAME_CB_FAIL;
  return FRAME_OK;
}

int ndjson_feed(struct ndjson_parser *p, const char *buf, size_t n, stream_event_fn fn,
                void *ctx) {
  while (n > 0) {
    const char *nl = memchr(buf, '\n', n);
    size_t seg = nl ? (size_t)(nl - buf) : n;
    int rc = append(p, buf, seg);
    if (rc != FRAME_OK) return rc;
    if (!nl) {
      p->offset += n;
      return FRAME_OK;
    }
    p->offset += seg + 1;
    buf += seg + 1;
    n -= seg + 1;
    rc = flush_line(p, fn, ctx);
    if (rc != FRAME_OK) return rc;
  }
  return FRAME_OK;
}

int ndjson_finish(struct ndjson_parser *p, stream_event_fn fn, void *ctx) {
  if (p->line_len == 0) return FRAME_OK;
  return flush_line(p, fn, ctx);
}
