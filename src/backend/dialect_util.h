/* dialect_util: what the three dialects (and backend_info) share.
 *
 *   - Typed reads of JSON fields that fail cleanly on the wrong type. A server's
 *     JSON is untrusted: a field of an unexpected type ends the run with
 *     RUN_ERR_MALFORMED and a message naming the field, never a crash and never
 *     a silently wrong value. JSON null counts as "absent" (vLLM sends
 *     "usage": null on every chunk but the last; llama.cpp "content": null).
 *   - Parsing one event payload into an object (RUN_ERR_MALFORMED otherwise).
 *   - llama.cpp's `timings` object (OpenAI endpoints and native /completion).
 *   - The HTTP error body parser shared by every dialect (OpenAI/llama.cpp
 *     {"error":{"message","type","code"}}, vLLM {"object":"error","message"},
 *     Ollama {"error":"..."}, FastAPI {"detail":...}, or plain text).
 *
 * Counters are stored only when the server reports them as non-negative
 * numbers; otherwise the run_result keeps its -1 / NAN ("not reported"). */
#ifndef TM_DIALECT_UTIL_H
#define TM_DIALECT_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* A reader over one event: the first wrong-typed field fails the run and every
 * later read is a no-op (so callers check rd.failed once at the end). */
struct du_reader {
  struct run_result *r;
  bool failed;
};

/* String field: NULL when absent/null; on a wrong type fails the reader.
 * *len (optional) receives the byte length (strings may hold NUL bytes). */
const char *du_str(struct du_reader *rd, json_t *obj, const char *key, const char *path,
                   size_t *len);
/* Object field: NULL when absent/null; wrong type fails. */
json_t *du_obj(struct du_reader *rd, json_t *obj, const char *key, const char *path);
/* Array field: NULL when absent/null; wrong type fails. */
json_t *du_arr(struct du_reader *rd, json_t *obj, const char *key, const char *path);
/* Boolean field: false when absent/null; wrong type fails. */
bool du_bool(struct du_reader *rd, json_t *obj, const char *key, const char *path);
/* Integer counter: stores into *out when present as a number >= 0 (an integral
 * real such as 12.0 is accepted); absent/null leave *out alone; a non-number
 * fails; an impossible value (negative, fractional, past 2^62) fails a
 * "usage.*" count (a lying server: the run says which) and leaves any other
 * alone. Returns true when stored. */
bool du_count(struct du_reader *rd, json_t *obj, const char *key, const char *path,
              int64_t *out);
/* Real-valued field (ms, s, tok/s): stores when a finite number. */
bool du_real(struct du_reader *rd, json_t *obj, const char *key, const char *path,
             double *out);

/* Copies a string field into a fixed buffer (truncated, NUL-terminated) when
 * present and non-empty. */
void du_copy(struct du_reader *rd, json_t *obj, const char *key, const char *path, char *dst,
             size_t dst_n);

/* Parses one event payload. Returns the object (caller json_decref's), NULL for
 * an empty/whitespace-only payload (*empty = true: nothing to do), or NULL with
 * RUN_ERR_MALFORMED set. */
json_t *du_parse_event(struct run_result *r, const char *payload, size_t len, bool *empty);

/* True when the payload, trimmed, equals word (e.g. "[DONE]"). */
bool du_payload_is(const char *payload, size_t len, const char *word);

/* llama.cpp `timings` into the timings_* / draft_* fields. */
void du_read_timings(struct du_reader *rd, json_t *timings);

/* Appends a text piece as a chunk when non-empty; out of memory fails the run
 * (RUN_ERR_OTHER). Returns 0 / -1. */
int du_add_text(struct run_result *r, uint64_t t_ns, enum chunk_field field, const char *text,
                size_t len, uint32_t n_tokens);

/* The error text of an error value: {"message": ...} objects, plain strings,
 * FastAPI "detail" (string or list of {"msg"}). Writes a one-line, trimmed,
 * control-character-free copy into dst; type/code into the optional buffers.
 * Returns true when something was found. */
bool du_error_text(json_t *root, char *dst, size_t dst_n, char *type, size_t type_n, char *code,
                   size_t code_n);

/* The shared on_http_error: RUN_ERR_CONTEXT_OVERFLOW when the body says the
 * prompt does not fit (llama.cpp type "exceed_context_size_error", OpenAI code
 * "context_length_exceeded", or a message that mentions the context), else
 * RUN_ERR_HTTP; message "HTTP <status>: <server's text>". */
void du_http_error(struct run_result *r, int status, const char *body, size_t len);

/* Copies src (len bytes) into dst as one line: control characters become
 * spaces, runs of spaces collapse, ends trimmed, truncated to dst_n - 1. */
void du_one_line(char *dst, size_t dst_n, const char *src, size_t len);

/* The prompt of a completion endpoint: the history's contents, then the
 * prompt, a blank line apart (malloc'd; NULL when out of memory). */
char *du_flat_prompt(const struct backend_request *req);
/* A text-only endpoint's "prompt" (du_flat_prompt) set in o: 0 (*bad set
 * when it could not be), or -1 with err when the request has images (the
 * endpoint takes text only; which_chat says what to use instead). */
int du_set_text_prompt(json_t *o, const struct backend_request *req, const char *which_chat,
                       int *bad, struct tm_err *err);
/* The base64 of a data URL ("data:TYPE;base64,DATA" -> DATA), NULL for any
 * other URL. */
const char *du_data_url_base64(const char *url);

#endif
