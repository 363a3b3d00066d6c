/* ndjson: incremental newline-delimited JSON framing (Ollama's streams),
 * byte-fed like sse.h and sharing its callback type and return codes.
 *
 * One payload per line: LF or CRLF endings, blank (whitespace-only) lines
 * ignored, a last line without a newline dispatched at end of stream (a cut
 * line then reaches the dialect, whose JSON parser reports it as malformed).
 * The framer does not parse JSON. A line longer than max_line_bytes is
 * FRAME_ERR, so memory stays bounded. */
#ifndef TM_NDJSON_H
#define TM_NDJSON_H

#include <stddef.h>

#include "backend/sse.h"

struct ndjson_parser {
  char *line;        /* the current line (NUL-terminated when dispatched) */
  size_t line_len, line_cap;
  size_t max_line_bytes;
  size_t offset;     /* bytes fed so far, for error messages */
  char err[160];
};

/* max_line_bytes 0 = FRAME_DEFAULT_MAX_EVENT_BYTES. */
void ndjson_init(struct ndjson_parser *p, size_t max_line_bytes);
void ndjson_free(struct ndjson_parser *p);
void ndjson_reset(struct ndjson_parser *p);
int ndjson_feed(struct ndjson_parser *p, const char *buf, size_t n, stream_event_fn fn,
                void *ctx);
/* End of stream: dispatches a pending non-blank line. */
int ndjson_finish(struct ndjson_parser *p, stream_event_fn fn, void *ctx);

#endif
