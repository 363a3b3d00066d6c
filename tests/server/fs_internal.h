/* fs_internal: what the fake server's files share (test code, not an API).
 *
 *   fs_core.c    lifecycle (fs_start/fs_stop), the accept/poll loop over up to
 *                FS_MAX_CONNS kept-alive connections, HTTP/1.1 request parsing,
 *                response writing (Content-Length and chunked), stoppable
 *                sleeps and sends, the request log.
 *   fs_paced.c   FS_PACED / FS_BUFFERED synthetic servers in four flavors, and
 *                FS_BREAK (which breaks a paced generation at one stage).
 *   fs_info.c    the flavors' non-generation endpoints (/props, /tokenize,
 *                /v1/models, /api/version, /api/tags, /api/v0/models ...).
 *   fs_replay.c  FS_REPLAY of recorded llama-server exchanges.
 *
 * Every send goes through fs_send_all (MSG_NOSIGNAL, non-blocking + poll on the
 * wake-up pipe) and every wait through fs_sleep_until / fs_wait_silent, so
 * fs_stop returns promptly whatever the server thread is doing. */
#ifndef TM_FS_INTERNAL_H
#define TM_FS_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fakeserver.h"

#define FS_MAX_CONNS 128
#define FS_MAX_REQUEST_BYTES (8u << 20) /* headers + body: larger is refused */
#define FS_CACHE_PROMPTS 64             /* prompts remembered for prompt_cache */

/* A growable byte buffer (always NUL-terminated when p != NULL). */
struct fs_buf {
  char *p;
  size_t len, cap;
};
int fs_buf_add(struct fs_buf *b, const void *data, size_t n); /* 0 / -1 (OOM) */
int fs_buf_printf(struct fs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fs_buf_free(struct fs_buf *b);

struct fs_conn {
  int fd;            /* -1 = free slot */
  struct fs_buf in;  /* bytes received and not yet consumed */
  bool continued;    /* "100 Continue" already sent for the pending request */
};

/* One parsed request. Strings are owned by the request (fs_request_free). */
struct fs_request {
  char method[16];
  char *target;        /* path + query, as sent */
  char *headers;       /* the raw header lines after the request line */
  char *body;          /* NUL-terminated copy of the body ("" when none) */
  size_t body_len;
  json_t *json;        /* the body parsed as JSON, NULL when not JSON */
  bool client_close;   /* "Connection: close" */
  uint64_t t_read_ns;  /* CLOCK_MONOTONIC when the last body byte was read */
};

/* One recorded exchange (FS_REPLAY). */
struct fs_exchange {
  char *name;        /* basename of the file */
  const char *method, *path; /* into root */
  json_t *root;      /* the whole file */
  json_t *req_body;  /* root.request.body (may be null) */
  int status;
  bool stream;       /* Content-Type text/event-stream: chunked, paced lines */
};

/* Remembered prompt for prompt_cache: its words (split copy). */
struct fs_prompt {
  char **words;
  uint32_t n;
};

struct fakeserver {
  struct fs_config cfg;       /* fixtures_dir / replay_file point into own copies */
  char *fixtures_dir, *replay_file;
  int listen_fd;
  int wake[2];                /* fs_stop writes wake[1]; every poll watches wake[0] */
  atomic_int stopping;
  pthread_t thread;
  struct fs_conn conns[FS_MAX_CONNS];

  pthread_mutex_t mu;         /* guards the request log and timing below */
  int n_requests;
  char *last_line, *last_headers, *last_body;
  struct fs_timing last_timing;
  char *replay_next;          /* fs_replay_next: one-shot choice (under mu) */

  /* Server-thread only. */
  struct fs_prompt cache[FS_CACHE_PROMPTS];
  uint32_t n_cache, cache_next;
  uint64_t seq;               /* response ids */
  uint32_t n_generations;     /* generation requests set up (cfg.heat) */
  uint32_t rate_limited;      /* generation requests answered 429 (cfg.rate_limit) */
  struct fs_exchange *ex;     /* FS_REPLAY */
  size_t n_ex;
};

uint64_t fs_now_ns(void);
/* Sleeps until the CLOCK_MONOTONIC deadline (absolute), in slices so fs_stop is
 * noticed within ~20 ms. 0 at the deadline, -1 when the server is stopping. */
int fs_sleep_until(struct fakeserver *s, uint64_t deadline_ns);
/* Writes all bytes (one send() call when the socket buffer has room, which is
 * always the case for an event on loopback). 0, or -1 when the peer is gone or
 * the server is stopping. */
int fs_send_all(struct fakeserver *s, int fd, const void *data, size_t n);
/* Silence until the peer closes or the server stops (stall stages). */
void fs_wait_silent(struct fakeserver *s, int fd);

/* Response head. chunked: Transfer-Encoding: chunked; else Content-Length:
 * content_length. extra: more header lines, each ending in \r\n (may be NULL). */
int fs_send_head(struct fakeserver *s, int fd, int status, const char *content_type,
                 const char *extra, bool chunked, size_t content_length, bool close);
/* One HTTP chunk holding data (one send); final appends the terminating chunk. */
int fs_send_chunk(struct fakeserver *s, int fd, const char *data, size_t n, bool final);
/* A whole response with a Content-Length body. */
int fs_send_body(struct fakeserver *s, int fd, int status, const char *content_type,
                 const char *body, size_t n, bool close);
int fs_send_json(struct fakeserver *s, int fd, int status, json_t *obj, bool close);
const char *fs_status_text(int status);

void fs_set_timing(struct fakeserver *s, const struct fs_timing *t);

/* Handlers: return 0 to keep the connection, 1 to close it after the response,
 * -1 when the connection broke (closed by the caller). */
int fs_paced_handle(struct fakeserver *s, int fd, const struct fs_request *req);
int fs_replay_load(struct fakeserver *s);
void fs_replay_free(struct fakeserver *s);
int fs_replay_handle(struct fakeserver *s, int fd, const struct fs_request *req);
void fs_cache_free(struct fakeserver *s);
/* Info endpoints of the configured flavor (fs_info.c): -2 when path is not one. */
int fs_info_handle(struct fakeserver *s, int fd, const struct fs_request *req, const char *path);
/* From fs_paced.c: whitespace-separated words; the last user message of a chat
 * body; the model name a flavor reports by default. */
uint32_t fs_count_words(const char *text);
const char *fs_prompt_text_chat(json_t *body);
const char *fs_default_model(enum fs_flavor f);

#endif
