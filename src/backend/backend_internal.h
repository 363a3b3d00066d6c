/* backend_internal: what the backend module's files share (not a public API).
 *
 *   backend.c            struct backend, backend_run (libcurl multi loop: arrival
 *                        timestamps, framing, timeouts, Ctrl-C), run_result helpers
 *   transport.c          http_request: one plain (non-streamed) HTTP exchange
 *   sse.c / ndjson.c     incremental framing (see sse.h)
 *   dialect_openai.c     OpenAI-compatible chat/completions (+ llama.cpp timings,
 *                        vLLM/LM Studio extras)
 *   dialect_ollama.c     Ollama /api/chat, /api/generate
 *   dialect_llamacpp.c   llama.cpp native /completion
 *   backend_info.c       detection, server info, model listing, /tokenize */
#ifndef TM_BACKEND_INTERNAL_H
#define TM_BACKEND_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

enum framing {
  FRAMING_SSE = 0,  /* text/event-stream: "data: <payload>" events */
  FRAMING_NDJSON,   /* one JSON object per line */
};

/* One API's wire format. Every function is pure over its arguments (no I/O). */
struct dialect {
  const char *name;        /* "openai", "ollama", "llamacpp" */
  enum framing framing;    /* of the streamed response */
  /* The request: path (relative to the base URL, e.g. "/v1/chat/completions")
   * and a malloc'd JSON body. */
  int (*build)(enum api_endpoint ep, const struct backend_request *req, char *path,
               size_t path_n, char **body, struct tm_err *err);
  /* One event payload (SSE data field, or one NDJSON line) that arrived at t_ns.
   * Appends text chunks (run_result_add_chunk) and fills counters.
   * Returns 0 to go on, 1 when the stream says it is complete ([DONE],
   * "done": true, "stop": true), -1 on a failure (r->error and r->error_msg set:
   * RUN_ERR_MALFORMED for unparseable JSON, RUN_ERR_STREAM for an error event). */
  int (*on_event)(struct run_result *r, const char *payload, size_t len, uint64_t t_ns);
  /* A non-2xx response: sets r->error (RUN_ERR_HTTP, or RUN_ERR_CONTEXT_OVERFLOW
   * when the body says so) and a message that quotes the body's error text. */
  void (*on_http_error)(struct run_result *r, int status, const char *body, size_t len);
  /* The stream ended (connection closed or terminal event): returns 0, or -1
   * with RUN_ERR_NO_USAGE when the final counters never came. */
  int (*finish)(struct run_result *r);
};

extern const struct dialect dialect_openai;
extern const struct dialect dialect_ollama;
extern const struct dialect dialect_llamacpp;

const struct dialect *dialect_for(enum api_family f);

/* Appends a text piece (len > 0) as a chunk. Returns 0, -1 when out of memory. */
int run_result_add_chunk(struct run_result *r, uint64_t t_ns, enum chunk_field field,
                         const char *text, size_t len, uint32_t n_tokens);
/* Sets error kind and a printf message (truncated to one line). */
void run_result_fail(struct run_result *r, enum run_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------- transport */

struct http_response {
  int status;              /* 0 when there was no response */
  char *body;              /* malloc'd, NUL-terminated */
  size_t len;
  enum run_error error;    /* RUN_OK, or why there was no response */
};

/* One exchange on the backend's kept-alive connection: method "GET"/"POST",
 * path relative to the base URL, optional JSON body. Returns 0 when a response
 * (any status) arrived, -1 otherwise (err and resp->error set). */
int http_request(struct backend *b, const char *method, const char *path, const char *json_body,
                 double timeout_s, struct http_response *resp, struct tm_err *err);
void http_response_free(struct http_response *resp);

/* The base URL the backend was made with (no trailing slash). */
const char *backend_base_url(const struct backend *b);
enum api_endpoint backend_endpoint(const struct backend *b);


/* ------------------------------------------------ the connection (transport)
 * Owned by backend.c/transport.c; other files use the functions above. */
#include <curl/curl.h>

#include "backend/ndjson.h"
#include "backend/sse.h"

struct backend {
  char *base_url;                /* no trailing '/'; a path prefix is kept */
  enum api_family api;
  enum api_endpoint endpoint;
  const struct dialect *dialect;
  double connect_timeout_s;
  CURL *easy;                    /* one handle for every request of this backend */
  CURLM *multi;                  /* drives every transfer and owns the connection
                                    pool, so a connection opened by the warm-up
                                    (or a helper request) is reused by the runs */
  /* Request header lists. These are the only copies of the API key (in the
   * Authorization line); they are wiped before being freed. */
  struct curl_slist *hdr_json, *hdr_sse, *hdr_ndjson;
  struct sse_parser sse;         /* reused across runs (buffers only grow) */
  struct ndjson_parser ndjson;
  char errbuf[CURL_ERROR_SIZE];
};

/* Why transport_drive returned. */
enum drive_outcome {
  DRIVE_DONE = 0,     /* curl finished the transfer: ctl->result says how */
  DRIVE_TIMEOUT,      /* ctl->deadline_ns passed */
  DRIVE_IDLE,         /* no byte for ctl->idle_ns */
  DRIVE_INTERRUPTED,  /* backend_interrupt() */
  DRIVE_STOPPED,      /* ctl->stop_at_ns passed (grace after a terminal event) */
  DRIVE_FAILED,       /* curl_multi itself failed (b->errbuf says why) */
};

struct drive_ctl {
  uint64_t deadline_ns;          /* absolute; 0 = none */
  uint64_t idle_ns;              /* max gap; 0 = none */
  const uint64_t *last_byte_ns;  /* idle is measured from *last_byte_ns once it is
                                    non-zero (the callbacks update it) */
  const uint64_t *stop_at_ns;    /* when non-NULL and non-zero: end the transfer then */
  CURLcode result;               /* DRIVE_DONE: curl's result */
};

/* Resets b->easy and sets URL (base + path), method, body (borrowed: must live
 * until the transfer ends), headers and the connect timeout. Callbacks are set
 * by the caller afterwards. 0 / -1. */
/* transport_prepare on another easy handle of the backend (a stream of a
 * backend_pool), with its own error buffer. */
int transport_prepare_on(struct backend *b, CURL *easy, char *errbuf, const char *method,
                         const char *path, const char *body, struct curl_slist *headers,
                         struct tm_err *err);
int transport_prepare(struct backend *b, const char *method, const char *path,
                      const char *body, struct curl_slist *headers, struct tm_err *err);
/* Runs b->easy on b->multi in <= 50 ms poll slices until it ends or ctl stops it
 * (then the transfer is abandoned and its connection closed). */
enum drive_outcome transport_drive(struct backend *b, struct drive_ctl *ctl);
/* The run_error kind of a failed curl result. */
enum run_error transport_error_kind(CURLcode c);
/* The same, refined for the transfer that just ended on b (a curl timeout
 * while connecting is a connect or TLS failure, not a request timeout). */
enum run_error transport_failure_kind(struct backend *b, CURLcode c);
enum run_error transport_failure_kind_on(const struct backend *b, CURL *easy, const char *errbuf,
                                         CURLcode c);

/* ------------------------------------------------ one streamed request
 * backend_run's two halves, so that many requests can be in flight on one
 * multi handle (pool.c) with exactly backend_run's rules: the request is
 * built and its easy handle prepared (begin), the transfer driven by the
 * caller with the limits given, then the outcome turned into the run_result
 * (end). */
struct stream_io {            /* what one transfer in flight owns */
  CURL *easy;
  char errbuf[CURL_ERROR_SIZE];
  struct sse_parser sse;
  struct ndjson_parser ndjson;
};
struct stream_run;
/* NULL when the request failed before it was sent (out says why). */
struct stream_run *stream_run_begin(struct backend *b, CURL *easy, char *errbuf,
                                    struct sse_parser *sse, struct ndjson_parser *ndjson,
                                    const struct backend_request *req, struct run_result *out);
/* The limits transport_drive (or a pool) holds the transfer to. */
void stream_run_limits(struct stream_run *s, struct drive_ctl *ctl);
/* Fills the run_result from how the drive ended; frees s. */
void stream_run_end(struct stream_run *s, enum drive_outcome o, CURLcode result);
/* The API key of b (from its Authorization header), NULL when none. */
const char *transport_api_key(const struct backend *b);
/* tm_redact (util/redact.h) with b's key on msg (a buffer of cap bytes): the
 * key, any long fragment of it, URL passwords and key-looking words become
 * "[redacted]". Every server-provided string shown or recorded goes through
 * it (a server might echo a header back in an error body or a model name). */
void transport_scrub_secret(const struct backend *b, char *msg, size_t cap);

/* Tests: run with this dialect instead of dialect_for(api). */
void backend_set_dialect(struct backend *b, const struct dialect *d);

#endif
