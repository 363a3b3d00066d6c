/* sse: incremental Server-Sent Events framing (text/event-stream), byte-fed.
 *
 * Feed any split of the stream (one byte at a time, a line cut across receive
 * buffers, a CRLF cut between its two bytes): the events handed out are the
 * same. Rules kept (the subset of the WHATWG event-stream format that LLM
 * servers use):
 *   - lines end with LF or CRLF;
 *   - "data:<value>" or "data: <value>" (one leading space dropped) appends
 *     value to the event's data; several data lines are joined with '\n';
 *   - a line starting with ':' is a comment (keep-alive pings) and is ignored;
 *     other fields (event:, id:, retry:) are ignored;
 *   - a blank line dispatches the event if it has data;
 *   - at end of stream (sse_finish), data lines that were complete (ended by a
 *     newline) but never followed by a blank line are dispatched; a line cut
 *     without its newline is a truncated event: FRAME_ERR.
 * Memory is bounded: a line or an event larger than max_event_bytes is
 * FRAME_ERR (not an out-of-memory).
 *
 * The framer knows nothing about time: the caller takes the arrival timestamp
 * before feeding a buffer and attributes to that buffer every event it
 * completes (see backend.c). ndjson.h shares the callback type and codes. */
#ifndef TM_SSE_H
#define TM_SSE_H

#include <stdbool.h>
#include <stddef.h>

/* Return codes of *_feed / *_finish. */
enum frame_rc {
  FRAME_OK = 0,       /* go on */
  FRAME_STOP = 1,     /* the callback returned 1 (stream complete); the rest of
                         the buffer was not consumed */
  FRAME_CB_FAIL = -1, /* the callback returned -1 (its own error is set) */
  FRAME_ERR = -2,     /* framing error: parser->err says what */
};

/* One complete event payload: data (SSE) or one line (NDJSON). payload is
 * NUL-terminated at payload[len] and valid only during the call. Returns 0 to
 * go on, 1 to stop (stream complete), -1 on failure. */
typedef int (*stream_event_fn)(void *ctx, const char *payload, size_t len);

#define FRAME_DEFAULT_MAX_EVENT_BYTES ((size_t)16 << 20)

struct sse_parser {
  char *line;        /* the current line, not yet ended by LF */
  size_t line_len, line_cap;
  char *data;        /* the current event's data (NUL-terminated) */
  size_t data_len, data_cap;
  bool has_data;     /* a data: line was seen since the last dispatch */
  size_t max_event_bytes;
  size_t offset;     /* bytes fed so far, for error messages */
  char err[160];
};

/* max_event_bytes 0 = FRAME_DEFAULT_MAX_EVENT_BYTES. */
void sse_init(struct sse_parser *p, size_t max_event_bytes);
void sse_free(struct sse_parser *p);
/* Forgets any partial line/event (keeps the buffers) for a new stream. */
void sse_reset(struct sse_parser *p);
int sse_feed(struct sse_parser *p, const char *buf, size_t n, stream_event_fn fn, void *ctx);
/* End of stream: dispatches complete pending data; FRAME_ERR on a cut line. */
int sse_finish(struct sse_parser *p, stream_event_fn fn, void *ctx);

#endif
