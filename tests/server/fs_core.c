/* fs_core: the fake server's lifecycle, connection loop and HTTP/1.1 plumbing.
 *
 * One thread per server. It polls the listening socket, the wake-up pipe and
 * every open connection (up to FS_MAX_CONNS: a client may keep one connection
 * alive from its warm-up and open another for a side request), and answers one
 * request at a time, to completion, before polling again (a single-slot server).
 * Requests: Content-Length bodies only (a chunked request body is refused with
 * 411); "Expect: 100-continue" is answered so libcurl never waits for it.
 * Responses keep the connection alive unless the client asked to close or the
 * handler decided to close. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fs_internal.h"

/* ------------------------------------------------------------------ buffers */

int fs_buf_add(struct fs_buf *b, const void *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

int fs_buf_printf(struct fs_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if (fs_buf_add(b, NULL, 0) != 0) return -1; /* make sure p exists */
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = b->cap;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

void fs_buf_free(struct fs_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* ------------------------------------------------------------ time and I/O */

uint64_t fs_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int fs_sleep_until(struct fakeserver *s, uint64_t deadline_ns) {
  const uint64_t slice_ns = 20000000u; /* how soon fs_stop is noticed */
  for (;;) {
    if (atomic_load(&s->stopping)) return -1;
    uint64_t now = fs_now_ns();
    if (now >= deadline_ns) return 0;
    uint64_t next = deadline_ns - now > slice_ns ? now + slice_ns : deadline_ns;
    struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
                          .tv_nsec = (long)(next % 1000000000u)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
}

int fs_send_all(struct fakeserver *s, int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    if (atomic_load(&s->stopping)) return -1;
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pf[2] = {{.fd = fd, .events = POLLOUT}, {.fd = s->wake[0], .events = POLLIN}};
      if (poll(pf, 2, -1) < 0 && errno != EINTR) return -1;
      if (pf[1].revents) return -1;
      continue;
    }
    return -1; /* EPIPE, ECONNRESET: the client went away */
  }
  return 0;
}

void fs_wait_silent(struct fakeserver *s, int fd) {
  char scratch[4096];
  for (;;) {
    struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};
    if (poll(pf, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pf[1].revents || atomic_load(&s->stopping)) return;
    if (pf[0].revents) {
      ssize_t k = recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
      if (k == 0) return; /* the client gave up */
      if (k < 0 && errno != EAGAIN && errno != EINTR) return;
    }
  }
}

const char *fs_status_text(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 411: return "Length Required";
  case 413: return "Payload Too Large";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  default: return "Status";
  }
}

static int head_into(struct fs_buf *b, int status, const char *content_type, const char *extra,
                     bool chunked, size_t content_length, bool close) {
  int rc = fs_buf_printf(b, "HTTP/1.1 %d %s\r\n", status, fs_status_text(status));
  if (content_type) rc |= fs_buf_printf(b, "Content-Type: %s\r\n", content_type);
  if (extra) rc |= fs_buf_printf(b, "%s", extra);
  if (chunked)
    rc |= fs_buf_printf(b, "Transfer-Encoding: chunked\r\n");
  else
    rc |= fs_buf_printf(b, "Content-Length: %zu\r\n", content_length);
  rc |= fs_buf_printf(b, "Connection: %s\r\n\r\n", close ? "close" : "keep-alive");
  return rc ? -1 : 0;
}

int fs_send_head(struct fakeserver *s, int fd, int status, const char *content_type,
                 const char *extra, bool chunked, size_t content_length, bool close) {
  struct fs_buf b = {0};
  int rc = head_into(&b, status, content_type, extra, chunked, content_length, close);
  if (rc == 0) rc = fs_send_all(s, fd, b.p, b.len);
  fs_buf_free(&b);
  return rc;
}

int fs_send_chunk(struct fakeserver *s, int fd, const char *data, size_t n, bool final) {
  struct fs_buf b = {0};
  int rc = 0;
  if (n > 0) {
    rc |= fs_buf_printf(&b, "%zx\r\n", n);
    rc |= fs_buf_add(&b, data, n);
    rc |= fs_buf_add(&b, "\r\n", 2);
  }
  if (final) rc |= fs_buf_add(&b, "0\r\n\r\n", 5);
  if (rc == 0 && b.len) rc = fs_send_all(s, fd, b.p, b.len);
  fs_buf_free(&b);
  return rc ? -1 : 0;
}

int fs_send_body(struct fakeserver *s, int fd, int status, const char *content_type,
                 const char *body, size_t n, bool close) {
  struct fs_buf b = {0};
  int rc = head_into(&b, status, content_type, NULL, false, n, close);
  if (rc == 0) rc = fs_buf_add(&b, body, n);
  if (rc == 0) rc = fs_send_all(s, fd, b.p, b.len);
  fs_buf_free(&b);
  return rc;
}

int fs_send_json(struct fakeserver *s, int fd, int status, json_t *obj, bool close) {
  char *text = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15));
  json_decref(obj);
  if (!text) return -1;
  int rc = fs_send_body(s, fd, status, "application/json; charset=utf-8", text, strlen(text),
                        close);
  free(text);
  return rc;
}

/* --------------------------------------------------------------- the log */

void fs_set_timing(struct fakeserver *s, const struct fs_timing *t) {
  pthread_mutex_lock(&s->mu);
  s->last_timing = *t;
  pthread_mutex_unlock(&s->mu);
}

static void log_request(struct fakeserver *s, const struct fs_request *req) {
  size_t n = strlen(req->method) + 1 + strlen(req->target) + 1;
  char *line = malloc(n);
  char *headers = strdup(req->headers);
  char *body = malloc(req->body_len + 1);
  if (line) snprintf(line, n, "%s %s", req->method, req->target);
  if (body) {
    memcpy(body, req->body, req->body_len);
    body[req->body_len] = '\0';
  }
  pthread_mutex_lock(&s->mu);
  s->n_requests++;
  free(s->last_line);
  free(s->last_headers);
  free(s->last_body);
  s->last_line = line;
  s->last_headers = headers;
  s->last_body = body;
  pthread_mutex_unlock(&s->mu);
}

int fs_requests(struct fakeserver *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->n_requests;
  pthread_mutex_unlock(&s->mu);
  return n;
}

/* The strings stay valid until the next request replaces them (see header). */
const char *fs_last_request_line(struct fakeserver *s) {
  pthread_mutex_lock(&s->mu);
  const char *p = s->last_line ? s->last_line : "";
  pthread_mutex_unlock(&s->mu);
  return p;
}
const char *fs_last_request_headers(struct fakeserver *s) {
  pthread_mutex_lock(&s->mu);
  const char *p = s->last_headers ? s->last_headers : "";
  pthread_mutex_unlock(&s->mu);
  return p;
}
const char *fs_last_request_body(struct fakeserver *s) {
  pthread_mutex_lock(&s->mu);
  const char *p = s->last_body ? s->last_body : "";
  pthread_mutex_unlock(&s->mu);
  return p;
}
struct fs_timing fs_last_timing(struct fakeserver *s) {
  pthread_mutex_lock(&s->mu);
  struct fs_timing t = s->last_timing;
  pthread_mutex_unlock(&s->mu);
  return t;
}

/* ------------------------------------------------------------ request parse */

static void request_free(struct fs_request *r) {
  free(r->target);
  free(r->headers);
  free(r->body);
  json_decref(r->json);
  memset(r, 0, sizeof *r);
}

/* Value of header `name` in the raw header block, copied into out; false when
 * absent. Case-insensitive name, surrounding blanks trimmed. */
static bool header_value(const char *headers, const char *name, char *out, size_t out_n) {
  size_t nl = strlen(name);
  for (const char *p = headers; p && *p;) {
    const char *eol = strstr(p, "\r\n");
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (len > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      const char *v = p + nl + 1, *e = p + len;
      while (v < e && (*v == ' ' || *v == '\t')) v++;
      while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
      size_t vn = (size_t)(e - v) < out_n - 1 ? (size_t)(e - v) : out_n - 1;
      memcpy(out, v, vn);
      out[vn] = '\0';
      return true;
    }
    p = eol ? eol + 2 : NULL;
  }
  return false;
}

/* Tries to take one complete request off the connection's buffer.
 * 1: *req filled and the bytes consumed; 0: need more bytes; -1: bad request
 * (status in *bad_status; the connection is answered and closed). */
static int parse_request(struct fakeserver *s, struct fs_conn *c, struct fs_request *req,
                         int *bad_status) {
  char *buf = c->in.p;
  if (!buf) return 0;
  char *end = strstr(buf, "\r\n\r\n");
  if (!end) {
    if (c->in.len > 65536) {
      *bad_status = 413;
      return -1;
    }
    return 0;
  }
  size_t head_len = (size_t)(end - buf) + 4;
  char *line_end = strstr(buf, "\r\n");
  char method[16] = "", target[2048] = "", version[16] = "";
  {
    char line[4200];
    size_t ln = (size_t)(line_end - buf);
    if (ln >= sizeof line) {
      *bad_status = 400;
      return -1;
    }
    memcpy(line, buf, ln);
    line[ln] = '\0';
    if (sscanf(line, "%15s %2047s %15s", method, target, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0) {
      *bad_status = 400;
      return -1;
    }
  }
  size_t hdr_n = (size_t)(end - (line_end + 2)) + 2; /* keep the last \r\n */
  if (line_end == end) hdr_n = 0;
  char *headers = malloc(hdr_n + 1);
  if (!headers) return -1;
  memcpy(headers, line_end + 2, hdr_n);
  headers[hdr_n] = '\0';

  char v[256];
  size_t body_len = 0;
  if (header_value(headers, "Transfer-Encoding", v, sizeof v)) {
    free(headers);
    *bad_status = 411;
    return -1;
  }
  if (header_value(headers, "Content-Length", v, sizeof v)) {
    char *e;
    unsigned long long n = strtoull(v, &e, 10);
    if (*e || n > FS_MAX_REQUEST_BYTES) {
      free(headers);
      *bad_status = n > FS_MAX_REQUEST_BYTES ? 413 : 400;
      return -1;
    }
    body_len = (size_t)n;
  }
  if (c->in.len < head_len + body_len) {
    if (!c->continued && header_value(headers, "Expect", v, sizeof v) &&
        strcasecmp(v, "100-continue") == 0) {
      static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
      fs_send_all(s, c->fd, cont, sizeof cont - 1);
      c->continued = true;
    }
    free(headers);
    return 0;
  }
  memset(req, 0, sizeof *req);
  req->t_read_ns = fs_now_ns();
  snprintf(req->method, sizeof req->method, "%s", method);
  req->target = strdup(target);
  req->headers = headers;
  req->body = malloc(body_len + 1);
  if (!req->target || !req->body) {
    request_free(req);
    return -1;
  }
  memcpy(req->body, buf + head_len, body_len);
  req->body[body_len] = '\0';
  req->body_len = body_len;
  if (body_len) req->json = json_loadb(req->body, body_len, 0, NULL);
  req->client_close = strcmp(version, "HTTP/1.0") == 0;
  if (header_value(headers, "Connection", v, sizeof v))
    req->client_close = strcasecmp(v, "close") == 0;
  /* consume */
  size_t used = head_len + body_len;
  memmove(c->in.p, c->in.p + used, c->in.len - used + 1);
  c->in.len -= used;
  c->continued = false;
  return 1;
}

/* ------------------------------------------------------------ the loop */

static void conn_close(struct fs_conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  fs_buf_free(&c->in);
  c->continued = false;
}

/* Answers every complete request buffered on c. false when c was closed. */
static bool serve_buffered(struct fakeserver *s, struct fs_conn *c) {
  for (;;) {
    struct fs_request req;
    int bad = 0;
    int pr = parse_request(s, c, &req, &bad);
    if (pr == 0) return true;
    if (pr < 0) {
      if (bad) {
        char body[128];
        int n = snprintf(body, sizeof body, "{\"error\":{\"code\":%d,\"message\":\"%s\"}}", bad,
                         fs_status_text(bad));
        fs_send_body(s, c->fd, bad, "application/json", body, (size_t)n, true);
      }
      conn_close(c);
      return false;
    }
    log_request(s, &req);
    int rc = s->cfg.mode == FS_REPLAY ? fs_replay_handle(s, c->fd, &req)
                                      : fs_paced_handle(s, c->fd, &req);
    bool close_it = rc != 0 || req.client_close;
    request_free(&req);
    if (close_it || atomic_load(&s->stopping)) {
      conn_close(c);
      return false;
    }
  }
}

static void accept_one(struct fakeserver *s) {
  int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  if (s->cfg.mode == FS_BREAK && s->cfg.break_stage == FS_BREAK_CLOSE_ON_ACCEPT) {
    /* Drain what already arrived so close() sends a FIN (an empty reply)
     * rather than a reset; a request landing in between still gets a reset. */
    char tmp[16384];
    while (recv(fd, tmp, sizeof tmp, MSG_DONTWAIT) > 0) {
    }
    close(fd);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* events go out at once */
  for (int i = 0; i < FS_MAX_CONNS; i++) {
    if (s->conns[i].fd < 0) {
      s->conns[i].fd = fd;
      return;
    }
  }
  close(fd); /* too many connections: the client sees a reset */
}

static void *server_main(void *arg) {
  struct fakeserver *s = arg;
  /* Pacing precision on a loaded machine: ask for a real-time priority so the
   * thread wakes at its deadlines even when busy threads compete. The thread
   * never spins (it sleeps or polls), so this cannot starve anything; without
   * the privilege the call fails and nothing changes. */
  struct sched_param sp = {.sched_priority = 1};
  pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
  while (!atomic_load(&s->stopping)) {
    struct pollfd pf[2 + FS_MAX_CONNS];
    int map[2 + FS_MAX_CONNS];
    int n = 0;
    pf[n++] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
    pf[n++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
    for (int i = 0; i < FS_MAX_CONNS; i++) {
      if (s->conns[i].fd >= 0) {
        map[n] = i;
        pf[n++] = (struct pollfd){.fd = s->conns[i].fd, .events = POLLIN};
      }
    }
    if (poll(pf, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pf[0].revents) break;
    for (int k = 2; k < n && !atomic_load(&s->stopping); k++) {
      if (!pf[k].revents) continue;
      struct fs_conn *c = &s->conns[map[k]];
      if (c->fd < 0) continue;
      bool closed = false;
      for (;;) {
        char tmp[16384];
        ssize_t got = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
        if (got > 0) {
          if (fs_buf_add(&c->in, tmp, (size_t)got) != 0) {
            closed = true;
            break;
          }
          if (c->in.len > FS_MAX_REQUEST_BYTES + 65536) {
            closed = true;
            break;
          }
          continue;
        }
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        closed = true; /* 0: the client closed; <0: reset */
        break;
      }
      /* Requests that arrived complete are answered even when the client
       * half-closed after sending them. */
      if (serve_buffered(s, c) && closed) conn_close(c);
      else if (closed && c->fd >= 0) conn_close(c);
    }
    if (pf[1].revents) accept_one(s);
  }
  return NULL;
}

/* ------------------------------------------------------------ lifecycle */

void fs_config_init(struct fs_config *c) {
  memset(c, 0, sizeof *c);
  c->mode = FS_PACED;
  c->flavor = FS_FLAVOR_LLAMACPP;
  c->time_scale = 1.0;
  c->a_ms = 20.0;
  c->b_ms = 0.5;
  c->c_ms = 10.0;
  c->break_stage = FS_BREAK_HTTP_500;
}

const char *fs_break_stage_name(enum fs_break_stage st) {
  static const char *const names[FS_BREAK_COUNT] = {
      [FS_BREAK_CLOSE_ON_ACCEPT] = "close-on-accept",
      [FS_BREAK_HALF_HEADERS] = "half-headers",
      [FS_BREAK_AFTER_HEADERS] = "after-headers",
      [FS_BREAK_MID_EVENT] = "mid-event",
      [FS_BREAK_AFTER_FIRST_TOKEN] = "after-first-token",
      [FS_BREAK_NO_DONE_NO_USAGE] = "no-done-no-usage",
      [FS_BREAK_STALL] = "stall",
      [FS_BREAK_STALL_BEFORE_HEADERS] = "stall-before-headers",
      [FS_BREAK_MALFORMED_JSON] = "malformed-json",
      [FS_BREAK_HTTP_500] = "http-500",
      [FS_BREAK_HTTP_404] = "http-404",
      [FS_BREAK_ERROR_EVENT] = "error-event",
      [FS_BREAK_CONTEXT_OVERFLOW] = "context-overflow",
      [FS_BREAK_GARBAGE] = "garbage",
  };
  return (unsigned)st < FS_BREAK_COUNT ? names[st] : "unknown";
}

int fs_break_stage_from_name(const char *name) {
  for (int i = 0; i < FS_BREAK_COUNT; i++)
    if (strcmp(name, fs_break_stage_name((enum fs_break_stage)i)) == 0) return i;
  return -1;
}

void fs_replay_next(struct fakeserver *s, const char *file) {
  char *copy = file ? strdup(file) : NULL;
  pthread_mutex_lock(&s->mu);
  free(s->replay_next);
  s->replay_next = copy;
  pthread_mutex_unlock(&s->mu);
}

static void server_free(struct fakeserver *s) {
  if (s->listen_fd >= 0) close(s->listen_fd);
  if (s->wake[0] >= 0) close(s->wake[0]);
  if (s->wake[1] >= 0) close(s->wake[1]);
  for (int i = 0; i < FS_MAX_CONNS; i++) conn_close(&s->conns[i]);
  fs_replay_free(s);
  fs_cache_free(s);
  free(s->fixtures_dir);
  free(s->replay_file);
  free(s->last_line);
  free(s->last_headers);
  free(s->last_body);
  free(s->replay_next);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

struct fakeserver *fs_start(const struct fs_config *cfg, int *port) {
  struct fakeserver *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cfg = *cfg;
  s->listen_fd = s->wake[0] = s->wake[1] = -1;
  for (int i = 0; i < FS_MAX_CONNS; i++) s->conns[i].fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  atomic_init(&s->stopping, 0);
  if (cfg->fixtures_dir && !(s->fixtures_dir = strdup(cfg->fixtures_dir))) goto fail;
  if (cfg->replay_file && !(s->replay_file = strdup(cfg->replay_file))) goto fail;
  s->cfg.fixtures_dir = s->fixtures_dir;
  s->cfg.replay_file = s->replay_file;
  if (s->cfg.time_scale < 0) s->cfg.time_scale = 0;
  if (s->cfg.mode == FS_REPLAY && fs_replay_load(s) != 0) goto fail;

  if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    perror("fakeserver: pipe");
    goto fail;
  }
  s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s->listen_fd < 0) {
    perror("fakeserver: socket");
    goto fail;
  }
  int one = 1;
  setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->listen_fd, 64) != 0 ||
      getsockname(s->listen_fd, (struct sockaddr *)&a, &alen) != 0) {
    perror("fakeserver: bind/listen");
    goto fail;
  }
  if (pthread_create(&s->thread, NULL, server_main, s) != 0) {
    fprintf(stderr, "fakeserver: cannot start the server thread\n");
    goto fail;
  }
  if (port) *port = ntohs(a.sin_port);
  return s;
fail:
  server_free(s);
  return NULL;
}

void fs_stop(struct fakeserver *s) {
  if (!s) return;
  atomic_store(&s->stopping, 1);
  char b = 1;
  ssize_t w = write(s->wake[1], &b, 1);
  (void)w;
  pthread_join(s->thread, NULL);
  server_free(s);
}
