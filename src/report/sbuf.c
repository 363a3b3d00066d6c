/* sbuf: growable text buffer (see sbuf.h for the contract). */
#include "report/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbuf_init(struct sbuf *b) { memset(b, 0, sizeof *b); }

void sbuf_free(struct sbuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

bool sbuf_ok(const struct sbuf *b) { return !b->oom; }

/* Room for `extra` more bytes plus the terminating NUL. */
static bool sbuf_reserve(struct sbuf *b, size_t extra) {
  if (b->oom) return false;
  if (extra > ((size_t)-1) / 2 - b->len) {
    b->oom = 1;
    return false;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->oom = 1;
    return false;
  }
  b->data = p;
  b->cap = cap;
  return true;
}

void sbuf_putn(struct sbuf *b, const char *s, size_t n) {
  if (!sbuf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void sbuf_puts(struct sbuf *b, const char *s) { sbuf_putn(b, s, strlen(s)); }

void sbuf_printf(struct sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  if ((size_t)n < sizeof small) {
    sbuf_putn(b, small, (size_t)n);
    return;
  }
  if (!sbuf_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void sbuf_put_xml(struct sbuf *b, const char *s) {
  for (const char *p = s; p && *p; p++) {
    switch (*p) {
    case '&': sbuf_puts(b, "&amp;"); break;
    case '<': sbuf_puts(b, "&lt;"); break;
    case '>': sbuf_puts(b, "&gt;"); break;
    case '"': sbuf_puts(b, "&quot;"); break;
    case '\'': sbuf_puts(b, "&#39;"); break;
    default: sbuf_putn(b, p, 1);
    }
  }
}

void sbuf_put_csv(struct sbuf *b, const char *s) {
  if (!s) s = "";
  if (!strpbrk(s, ",\"\r\n")) {
    sbuf_puts(b, s);
    return;
  }
  sbuf_putn(b, "\"", 1);
  for (const char *p = s; *p; p++) {
    if (*p == '"') sbuf_putn(b, "\"", 1);
    sbuf_putn(b, p, 1);
  }
  sbuf_putn(b, "\"", 1);
}

void sbuf_put_md(struct sbuf *b, const char *s) {
  for (const char *p = s; p && *p; p++) {
    if (*p == '\n' || *p == '\r') {
      sbuf_putn(b, " ", 1);
      continue;
    }
    /* CommonMark: a backslash makes any ASCII punctuation literal. These are
     * the ones that act inside a line: emphasis, code, links, inline HTML
     * and entities, GFM strikethrough and table cells. */
    if (strchr("\\`*_[]<>|~&", *p)) sbuf_putn(b, "\\", 1);
    sbuf_putn(b, p, 1);
  }
}

void sbuf_put_line(struct sbuf *b, const char *s) {
  for (const char *p = s; p && *p; p++) {
    const unsigned char c = (unsigned char)*p;
    sbuf_putn(b, c < 0x20 || c == 0x7f ? "?" : p, 1);
  }
}

const char *sbuf_str(const struct sbuf *b) { return (b->data && !b->oom) ? b->data : ""; }
