/* sbuf: a growable text buffer the report writers build their output in
 * (tables, CSV, HTML, SVG), so a writer can fail cleanly on memory without
 * leaving half a file, and tests can compare whole outputs as strings.
 *
 * Contract: once an allocation fails, the buffer is marked failed (oom = 1)
 * and every later append is a no-op; check sbuf_ok() once at the end instead
 * of after every append. data is always NUL-terminated when len > 0 and ok. */
#ifndef TM_SBUF_H
#define TM_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
  char *data;
  size_t len, cap;
  int oom;
};

void sbuf_init(struct sbuf *b);
void sbuf_free(struct sbuf *b);
bool sbuf_ok(const struct sbuf *b);
void sbuf_putn(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' escaped for HTML/XML text and attribute values. */
void sbuf_put_xml(struct sbuf *b, const char *s);
/* s as one CSV field (RFC 4180: quoted when it holds , " CR or LF; " doubled). */
void sbuf_put_csv(struct sbuf *b, const char *s);
/* s for a markdown heading or table cell: newlines as spaces, and a backslash
 * before each character markdown would interpret inside a line
 * (\\ ` * _ [ ] < > | ~ &), so a model named "<b>" or "a_b_c" prints as it is. */
void sbuf_put_md(struct sbuf *b, const char *s);
/* s for one line of a terminal table: each control character (newline, ESC
 * of an escape sequence, ...) as '?', so a record's string cannot break the
 * table or drive the terminal. One byte each way: widths are unchanged. */
void sbuf_put_line(struct sbuf *b, const char *s);
/* The contents ("" when empty or failed). */
const char *sbuf_str(const struct sbuf *b);

#endif
