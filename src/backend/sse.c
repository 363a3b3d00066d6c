/* sse: see sse.h. Lines are gathered in p->line (one memcpy per received
 * segment), then interpreted; the data of an event accumulates in p->data until
 * the blank line. Both buffers only grow, so steady-state parsing allocates
 * nothing. */
#include "backend/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for `more` bytes plus a NUL in *buf. 0 or -1 (out of memory). */
static int grow(char **buf, size_t *cap, size_t len, size_t more) {
  size_t need = len + more + 1;
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  char *nb = realloc(*buf, c);
  if (!nb) return -1;
  *buf = nb;
  *cap = c;
  return 0;
}

void sse_init(struct sse_parser *p, size_t max_event_bytes) {
  memset(p, 0, sizeof *p);
  p->max_event_bytes = max_event_bytes ? max_event_bytes : FRAME_DEFAULT_MAX_EVENT_BYTES;
}

void sse_free(struct sse_parser *p) {
  free(p->line);
  free(p->data);
  p->line = p->data = NULL;
  p->line_cap = p->data_cap = 0;
  sse_reset(p);
}

void sse_reset(struct sse_parser *p) {
  p->line_len = 0;
  p->data_len = 0;
  p->has_data = false;
  p->offset = 0;
  p->err[0] = 0;
}

static int dispatch(struct sse_parser *p, stream_event_fn fn, void *ctx) {
  p->has_data = false;
  size_t len = p->data_len;
  p->data_len = 0;
  /* p->data is allocated: has_data is set only after on_line's grow, which
   * allocates even for an empty "data:" (room for the NUL). */
  p->data[len] = 0;
  int rc = fn(ctx, p->data, len);
  if (rc > 0) return FRAME_STOP;
  if (rc < 0) return FRAME_CB_FAIL;
  return FRAME_OK;
}

/* One line without its terminator. */
static int on_line(struct sse_parser *p, const char *line, size_t len, stream_event_fn fn,
                   void *ctx) {
  if (len == 0) return p->has_data ? dispatch(p, fn, ctx) : FRAME_OK;
  if (line[0] == ':') return FRAME_OK; /* comment */
  const char *colon = memchr(line, ':', len);
  size_t name_len = colon ? (size_t)(colon - line) : len;
  if (name_len != 4 || memcmp(line, "data", 4) != 0) return FRAME_OK; /* event:, id:, ... */
  const char *v = colon ? colon + 1 : line + len;
  size_t vlen = (size_t)(line + len - v);
  if (vlen && v[0] == ' ') {
    v++;
    vlen--;
  }
  size_t sep = p->has_data ? 1 : 0;
  if (p->data_len + sep + vlen > p->max_event_bytes) {
    snprintf(p->err, sizeof p->err, "SSE event larger than %zu bytes (at stream byte %zu)",
             p->max_event_bytes, p->offset);
    return FRAME_ERR;
  }
  if (grow(&p->data, &p->data_cap, p->data_len, sep + vlen) != 0) {
    snprintf(p->err, sizeof p->err, "out of memory for an SSE event of %zu bytes",
             p->data_len + sep + vlen);
    return FRAME_ERR;
  }
  if (sep) p->data[p->data_len++] = '\n';
  memcpy(p->data + p->data_len, v, vlen);
  p->data_len += vlen;
  p->has_data = true;
  return FRAME_OK;
}

/* Appends bytes to the pending line, bounded. */
static int append_line(struct sse_parser *p, const char *s, size_t n) {
  if (p->line_len + n > p->max_event_bytes) {
    snprintf(p->err, sizeof p->err, "SSE line longer than %zu bytes (at stream byte %zu)",
             p->max_event_bytes, p->offset);
    return FRAME_ERR;
  }
  if (grow(&p->line, &p->line_cap, p->line_len, n) != 0) {
    snprintf(p->err, sizeof p->err, "out of memory for an SSE line of %zu bytes",
             p->line_len + n);
    return FRAME_ERR;
  }
  memcpy(p->line + p->line_len, s, n);
  p->line_len += n;
  return FRAME_OK;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t n, stream_event_fn fn, void *ctx) {
  while (n > 0) {
    const char *nl = memchr(buf, '\n', n);
    size_t seg = nl ? (size_t)(nl - buf) : n;
    const char *line;
    size_t len;
    if (nl && p->line_len == 0) {
      /* the whole line is in this buffer: interpret it in place */
      if (seg > p->max_event_bytes) {
        snprintf(p->err, sizeof p->err, "SSE line longer than %zu bytes (at stream byte %zu)",
                 p->max_event_bytes, p->offset);
        return FRAME_ERR;
      }
      line = buf;
      len = seg;
    } else {
      int rc = append_line(p, buf, seg);
      if (rc != FRAME_OK) return rc;
      if (!nl) {
        p->offset += n;
        return FRAME_OK;
      }
      line = p->line;
      len = p->line_len;
    }
    p->offset += seg + 1;
    buf += seg + 1;
    n -= seg + 1;
    if (len && line[len - 1] == '\r') len--;
    int rc = on_line(p, line, len, fn, ctx);
    p->line_len = 0;
    if (rc != FRAME_OK) return rc;
  }
  return FRAME_OK;
}

int sse_finish(struct sse_parser *p, stream_event_fn fn, void *ctx) {
  /* a lone trailing CR is a line ending whose LF never came: not a cut line */
  if (p->line_len == 1 && p->line[0] == '\r') p->line_len = 0;
  if (p->line_len > 0) {
    snprintf(p->err, sizeof p->err,
             "stream ended inside an SSE line (%zu bytes without a newline at stream byte %zu)",
             p->line_len, p->offset - p->line_len);
    p->line_len = 0;
    p->has_data = false;
    p->data_len = 0;
    return FRAME_ERR;
  }
  if (p->has_data) return dispatch(p, fn, ctx);
  return FRAME_OK;
}
