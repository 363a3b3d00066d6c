/* backend: struct backend's life cycle, backend_run (one streamed request:
 * arrival timestamps, framing, dialect, timeouts, Ctrl-C, fault mapping) and the
 * run_result helpers.
 *
 * Timing contract (docs/design.md, Definitions):
 *   t_start_ns    just before the transfer is handed to curl;
 *   t_send_ns     curl's PREREQ callback: a connection is ready (connected,
 *                 TLS done, or reused) and the request is about to be written.
 *                 So a kept-alive connection gives t_send - t_start of a few
 *                 microseconds, and a fresh one's connect/TLS time is reported
 *                 apart in connect_ns / tls_ns;
 *   t_headers_ns  arrival of the blank line that ends the final header block;
 *   chunk t_ns    taken FIRST in the write callback, before the bytes are
 *                 touched; every event the buffer completes gets that time.
 * A non-2xx status is known in the header callback: the body is then collected
 * (bounded) for the dialect's on_http_error instead of being framed. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backend/backend_internal.h"
#include "util/clock.h"
#include "util/redact.h"

#define ERROR_BODY_MAX_BYTES ((size_t)1 << 20)
/* After the terminal event ([DONE], "done": true) the server normally ends the
 * response at once; if it keeps it open, stop waiting after this. */
#define COMPLETE_GRACE_NS 1000000000ull

/* ------------------------------------------------------------- names */

static const char *const family_names[] = {"auto", "openai", "ollama", "llamacpp"};

const char *api_family_name(enum api_family f) {
  if ((unsigned)f < sizeof family_names / sizeof family_names[0]) return family_names[f];
  return "unknown";
}

int api_family_from_name(const char *s) {
  if (!s) return -1;
  for (unsigned i = 0; i < sizeof family_names / sizeof family_names[0]; i++)
    if (strcasecmp(s, family_names[i]) == 0) return (int)i;
  return -1;
}

static const char *const error_names[RUN_ERR_COUNT] = {
    [RUN_OK] = "ok",
    [RUN_ERR_CONNECT] = "connect",
    [RUN_ERR_DNS] = "dns",
    [RUN_ERR_TLS] = "tls",
    [RUN_ERR_HTTP] = "http",
    [RUN_ERR_CONTEXT_OVERFLOW] = "context-overflow",
    [RUN_ERR_STREAM] = "stream-error",
    [RUN_ERR_MALFORMED] = "malformed",
    [RUN_ERR_NO_USAGE] = "no-usage",
    [RUN_ERR_IDLE_TIMEOUT] = "idle-timeout",
    [RUN_ERR_TIMEOUT] = "timeout",
    [RUN_ERR_INTERRUPTED] = "interrupted",
    [RUN_ERR_OTHER] = "other",
    [RUN_ERR_INCOMPLETE] = "incomplete",
    [RUN_ERR_INCONSISTENT] = "inconsistent",
};

static const char *const check_names[RUN_CHECK_COUNT] = {
#define RUN_CHECK_NAME(e, name) [e] = name,
    RUN_CHECKS(RUN_CHECK_NAME)
#undef RUN_CHECK_NAME
};

const char *run_check_name(enum run_check c) {
  return (unsigned)c < RUN_CHECK_COUNT ? check_names[c] : "";
}

const char *run_error_name(enum run_error e) {
  if ((unsigned)e < RUN_ERR_COUNT && error_names[e]) return error_names[e];
  return "unknown";
}

/* ------------------------------------------------------------- run_result */

void run_result_init(struct run_result *r) {
  memset(r, 0, sizeof *r);
  r->prompt_tokens = r->cached_tokens = r->completion_tokens = r->reasoning_tokens = -1;
  r->timings_cache_n = r->timings_prompt_n = r->timings_predicted_n = -1;
  r->draft_n = r->draft_n_accepted = -1;
  r->timings_prompt_ms = r->timings_predicted_ms = NAN;
  r->ollama_load_ms = r->ollama_prompt_eval_ms = r->ollama_eval_ms = r->ollama_total_ms = NAN;
  r->lmstudio_ttft_s = r->lmstudio_tok_s = r->lmstudio_generation_s = NAN;
  r->retry_after_s = NAN;
}

void run_result_free(struct run_result *r) {
  if (!r) return;
  free(r->chunks);
  free(r->text);
  r->chunks = NULL;
  r->text = NULL;
  r->n_chunks = 0;
  r->text_len = 0;
}

/* Capacities are not stored in run_result (a public struct): they are derived
 * from the sizes, growing by doubling, so a size that reaches a power of two
 * (times the base) is when the next append reallocates. */
static size_t cap_for(size_t n, size_t base) {
  size_t c = base;
  while (c < n) c *= 2;
  return c;
}

int run_result_add_chunk(struct run_result *r, uint64_t t_ns, enum chunk_field field,
                         const char *text, size_t len, uint32_t n_tokens) {
  if (len == 0) return 0;
  if (len > UINT32_MAX - 1 || r->text_len + len + 1 > UINT32_MAX) return -1;
  size_t old_tcap = r->text ? cap_for(r->text_len + 1, 256) : 0;
  size_t need = r->text_len + len + 1;
  if (need > old_tcap) {
    size_t c = cap_for(need, 256);
    char *nt = realloc(r->text, c);
    if (!nt) return -1;
    r->text = nt;
  }
  size_t old_ccap = r->chunks ? cap_for(r->n_chunks, 64) : 0;
  if (r->n_chunks + 1 > old_ccap) {
    size_t c = cap_for(r->n_chunks + 1, 64);
    struct run_chunk *nc = realloc(r->chunks, c * sizeof *nc);
    if (!nc) return -1;
    r->chunks = nc;
  }
  struct run_chunk *ch = &r->chunks[r->n_chunks++];
  ch->t_ns = t_ns;
  ch->field = (uint8_t)field;
  ch->n_tokens = n_tokens;
  ch->text_off = (uint32_t)r->text_len;
  ch->text_len = (uint32_t)len;
  memcpy(r->text + r->text_len, text, len);
  r->text_len += len;
  r->text[r->text_len] = 0;
  return 0;
}

void run_result_fail(struct run_result *r, enum run_error e, const char *fmt, ...) {
  r->error = e;
  r->check = RUN_CHECK_NONE; /* the caller names the rule after, when one was broken */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->error_msg, sizeof r->error_msg, fmt, ap);
  va_end(ap);
  for (char *p = r->error_msg; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
}

/* ------------------------------------------------------------- interrupt */

static volatile sig_atomic_t g_interrupted;

void backend_interrupt(void) { g_interrupted = 1; }
bool backend_interrupted(void) { return g_interrupted != 0; }
void backend_interrupt_clear(void) { g_interrupted = 0; }

/* ------------------------------------------------------------- backend */

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc;
static void curl_init_once(void) { g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* A header list: the fixed lines plus the Authorization line when a key is set. */
static struct curl_slist *make_headers(const char *accept, const char *api_key) {
  struct curl_slist *h = NULL, *t;
  const char *lines[] = {"Content-Type: application/json", accept,
                         "Expect:" /* no 100-continue round trip before the body */};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    t = curl_slist_append(h, lines[i]);
    if (!t) goto fail;
    h = t;
  }
  if (api_key && *api_key) {
    size_t n = strlen(api_key) + sizeof "Authorization: Bearer ";
    char *line = malloc(n);
    if (!line) goto fail;
    snprintf(line, n, "Authorization: Bearer %s", api_key);
    t = curl_slist_append(h, line);
    explicit_bzero(line, n);
    free(line);
    if (!t) goto fail;
    h = t;
  }
  return h;
fail:
  curl_slist_free_all(h);
  return NULL;
}

static void free_headers(struct curl_slist *h) {
  for (struct curl_slist *p = h; p; p = p->next) explicit_bzero(p->data, strlen(p->data));
  curl_slist_free_all(h);
}

int backend_url_check(const char *u, size_t *len_out, struct tm_err *err) {
  if (!u || !*u) return tm_errf(err, "no server URL given");
  size_t skip = 0;
  if (strncasecmp(u, "http://", 7) == 0) skip = 7;
  else if (strncasecmp(u, "https://", 8) == 0) skip = 8;
  if (!skip) return tm_errf(err, "server URL \"%.200s\" must start with http:// or https://", u);
  size_t len = strlen(u);
  while (len > skip && u[len - 1] == '/') len--;
  if (len == skip || u[skip] == '/')
    return tm_errf(err, "server URL \"%.200s\" has no host", u);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)u[i] <= ' ')
      return tm_errf(err, "server URL \"%.200s\" contains a space or control character at "
                     "byte %zu", u, i);
  /* host[:port] up to the first '/', after any user@ */
  const char *a = u + skip, *end = memchr(a, '/', len - skip);
  if (!end) end = u + len;
  for (const char *at = a; at < end; at++)
    if (*at == '@') a = at + 1;
  const char *port = NULL;
  if (a < end && *a == '[') {
    const char *rb = memchr(a, ']', (size_t)(end - a));
    if (!rb) return tm_errf(err, "server URL \"%.200s\": '[' without ']' in the host", u);
    if (rb + 1 < end && rb[1] != ':')
      return tm_errf(err, "server URL \"%.200s\": junk after the bracketed host", u);
    if (rb + 1 < end) port = rb + 2;
  } else {
    for (const char *c = end; c > a; c--)
      if (c[-1] == ':') {
        port = c;
        break;
      }
    if (port == a + 1 || a == end) return tm_errf(err, "server URL \"%.200s\" has no host", u);
  }
  if (port) {
    unsigned long v = 0;
    const char *c = port;
    for (; c < end && *c >= '0' && *c <= '9' && v <= 65535; c++) v = v * 10 + (unsigned)(*c - '0');
    if (c == port || c != end || v < 1 || v > 65535)
      return tm_errf(err, "server URL \"%.200s\": the port must be 1..65535", u);
  }
  if (len_out) *len_out = len;
  return 0;
}

struct backend *backend_new(const struct backend_config *cfg, struct tm_err *err) {
  size_t len = 0;
  if (backend_url_check(cfg ? cfg->base_url : NULL, &len, err) != 0) return NULL;
  const char *u = cfg->base_url;
  pthread_once(&g_curl_once, curl_init_once);
  if (g_curl_init_rc != CURLE_OK) {
    tm_errf(err, "libcurl initialisation failed: %s", curl_easy_strerror(g_curl_init_rc));
    return NULL;
  }

  struct backend *b = calloc(1, sizeof *b);
  if (!b) {
    tm_errf(err, "out of memory");
    return NULL;
  }
  b->base_url = strndup(u, len);
  b->endpoint = cfg->endpoint;
  b->connect_timeout_s = cfg->connect_timeout_s > 0 ? cfg->connect_timeout_s : 10.0;
  b->easy = curl_easy_init();
  b->multi = curl_multi_init();
  b->hdr_json = make_headers("Accept: application/json", cfg->api_key);
  b->hdr_sse = make_headers("Accept: text/event-stream", cfg->api_key);
  b->hdr_ndjson = make_headers("Accept: application/x-ndjson", cfg->api_key);
  sse_init(&b->sse, 0);
  ndjson_init(&b->ndjson, 0);
  if (!b->base_url || !b->easy || !b->multi || !b->hdr_json || !b->hdr_sse || !b->hdr_ndjson) {
    tm_errf(err, "out of memory setting up the HTTP client");
    backend_free(b);
    return NULL;
  }

  enum api_family api = cfg->api;
  if (api == API_AUTO) {
    if (backend_detect(b->base_url, cfg->api_key, &api, err) != 0) {
      backend_free(b);
      return NULL;
    }
  }
  b->api = api;
  b->dialect = dialect_for(api);
  if (!b->dialect) {
    tm_errf(err, "no dialect for API family %s", api_family_name(api));
    backend_free(b);
    return NULL;
  }
  return b;
}

void backend_free(struct backend *b) {
  if (!b) return;
  if (b->multi && b->easy) curl_multi_remove_handle(b->multi, b->easy);
  if (b->easy) curl_easy_cleanup(b->easy);
  if (b->multi) curl_multi_cleanup(b->multi);
  free_headers(b->hdr_json);
  free_headers(b->hdr_sse);
  free_headers(b->hdr_ndjson);
  sse_free(&b->sse);
  ndjson_free(&b->ndjson);
  free(b->base_url);
  free(b);
}

enum api_family backend_api(const struct backend *b) { return b->api; }
const char *backend_base_url(const struct backend *b) { return b->base_url; }
enum api_endpoint backend_endpoint(const struct backend *b) { return b->endpoint; }
void backend_set_dialect(struct backend *b, const struct dialect *d) { b->dialect = d; }

/* ------------------------------------------------------------- backend_run */

struct run_ctx {
  struct backend *b;
  CURL *easy;             /* the transfer's handle, and what it owns */
  char *errbuf;
  struct sse_parser *sse;
  struct ndjson_parser *ndjson;
  char path[512];         /* the request's, for messages */
  char *body;             /* its JSON body (curl reads it until the end) */
  double idle_s, total_s;
  struct run_result *r;
  const struct dialect *d;
  uint64_t t_now;         /* arrival of the buffer being framed */
  uint64_t t_send;        /* PREREQ callback */
  uint64_t last_byte_ns;  /* for the idle timeout; 0 until the request is sent */
  uint64_t stop_at_ns;    /* complete: grace deadline */
  bool http_error;        /* non-2xx: collect the body */
  char *err_body;
  size_t err_len, err_cap;
  bool complete;          /* the dialect saw the terminal event */
  bool aborted;           /* we aborted the transfer; r->error is set */
  char encoding[24];      /* the response's Content-Encoding (never asked for:
                             tokmeter sends no Accept-Encoding); "" = none */
};

static int on_prereq(void *ud, char *ip, char *local_ip, int port, int local_port) {
  struct run_ctx *c = ud;
  c->t_send = tm_now_ns();
  c->last_byte_ns = c->t_send;
  return CURL_PREREQFUNC_OK;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud) {
  uint64_t t = tm_now_ns();
  struct run_ctx *c = ud;
  size_t n = sz * nm;
  c->last_byte_ns = t;
  static const char ce[] = "content-encoding:";
  if (n > sizeof ce - 1 && strncasecmp(p, ce, sizeof ce - 1) == 0) {
    size_t i = sizeof ce - 1, k = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    while (i < n && k + 1 < sizeof c->encoding && p[i] != '\r' && p[i] != '\n' &&
           (unsigned char)p[i] >= 0x20)
      c->encoding[k++] = p[i++];
    c->encoding[k] = 0;
    if (strcasecmp(c->encoding, "identity") == 0) c->encoding[0] = 0;
  }
  static const char ra[] = "retry-after:";
  if (n > sizeof ra - 1 && strncasecmp(p, ra, sizeof ra - 1) == 0) {
    /* delta-seconds, or an HTTP date (RFC 9110 10.2.3) */
    char v[64];
    size_t i = sizeof ra - 1, k = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    while (i < n && k + 1 < sizeof v && p[i] != '\r' && p[i] != '\n') v[k++] = p[i++];
    v[k] = 0;
    char *end = NULL;
    long long secs = strtoll(v, &end, 10);
    if (k && end && *end == 0 && secs >= 0) {
      c->r->retry_after_s = (double)secs;
    } else if (k) {
      time_t at = curl_getdate(v, NULL);
      if (at != (time_t)-1) {
        double d = difftime(at, time(NULL));
        c->r->retry_after_s = d > 0 ? d : 0;
      }
    }
  }
  if ((n == 2 && p[0] == '\r' && p[1] == '\n') || (n == 1 && p[0] == '\n')) {
    long code = 0;
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 100 && code < 200) return n; /* interim block; the real one follows */
    if (c->r->t_headers_ns) return n;        /* chunked trailers end with one too */
    c->r->t_headers_ns = t;
    c->r->http_status = (int)code;
    c->http_error = code < 200 || code >= 300;
  }
  return n;
}

static int on_event(void *ud, const char *payload, size_t len) {
  struct run_ctx *c = ud;
  c->r->n_events++;
  /* An event that quotes the key (an error event, a model name) is parsed
   * from a scrubbed copy, so no field filled from it holds the key. */
  const char *key = transport_api_key(c->b);
  char *clean = NULL;
  size_t clean_len = 0;
  if (key && memmem(payload, len, key, strlen(key)) &&
      (clean = tm_redact_dup(payload, len, key, &clean_len)) != NULL) {
    payload = clean;
    len = clean_len;
  }
  int rc = c->d->on_event(c->r, payload, len, c->t_now);
  free(clean);
  if (rc < 0 && c->r->error == RUN_OK)
    run_result_fail(c->r, RUN_ERR_MALFORMED, "the %s dialect rejected event %u", c->d->name,
                    c->r->n_events);
  return rc;
}

static int frame_feed(struct run_ctx *c, const char *p, size_t n) {
  if (c->d->framing == FRAMING_NDJSON) return ndjson_feed(c->ndjson, p, n, on_event, c);
  return sse_feed(c->sse, p, n, on_event, c);
}

static int frame_finish(struct run_ctx *c) {
  if (c->d->framing == FRAMING_NDJSON) return ndjson_finish(c->ndjson, on_event, c);
  return sse_finish(c->sse, on_event, c);
}

static const char *frame_err(struct run_ctx *c) {
  return c->d->framing == FRAMING_NDJSON ? c->ndjson->err : c->sse->err;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud) {
  uint64_t t = tm_now_ns(); /* first: the arrival time of these bytes */
  struct run_ctx *c = ud;
  size_t n = sz * nm;
  c->last_byte_ns = t;
  if (!c->http_error && c->encoding[0] && !c->aborted) {
    /* gzip, deflate, br...: bytes no SSE or NDJSON framer can read */
    run_result_fail(c->r, RUN_ERR_MALFORMED,
                    "the server sent its answer %s-encoded (Content-Encoding: %s), which was not "
                    "asked for: its tokens cannot be read", c->encoding, c->encoding);
    c->aborted = true;
    return 0;
  }
  if (c->http_error) {
    size_t take = n;
    if (c->err_len + take > ERROR_BODY_MAX_BYTES) take = ERROR_BODY_MAX_BYTES - c->err_len;
    if (take && c->err_len + take + 1 > c->err_cap) {
      size_t cap = c->err_cap ? c->err_cap : 1024;
      while (cap < c->err_len + take + 1) cap *= 2;
      char *nb = realloc(c->err_body, cap);
      if (!nb) return n; /* keep what we have */
      c->err_body = nb;
      c->err_cap = cap;
    }
    if (take) {
      memcpy(c->err_body + c->err_len, p, take);
      c->err_len += take;
      c->err_body[c->err_len] = 0;
    }
    return n;
  }
  if (c->complete) return n; /* after the terminal event: drain */
  c->t_now = t;
  int rc = frame_feed(c, p, n);
  switch (rc) {
  case FRAME_OK: return n;
  case FRAME_STOP:
    c->complete = true;
    c->stop_at_ns = t + COMPLETE_GRACE_NS;
    return n;
  case FRAME_ERR:
    run_result_fail(c->r, RUN_ERR_MALFORMED, "%s", frame_err(c));
    c->aborted = true;
    return 0;
  default: /* FRAME_CB_FAIL: the dialect set the error */
    c->aborted = true;
    return 0;
  }
}

/* The response body ended (normally, or cut when `cut`, curl saying why in
 * `cut_detail`): flush the framer and decide whether the run is complete.
 * A run is complete only with its terminal event, as the dialect defines it
 * ([DONE], "done": true, "stop": true: c->complete) or a finish_reason (an
 * OpenAI-compatible server that omits [DONE] still said it finished). Without
 * one the answer may be cut anywhere (a server sending usage in every chunk,
 * vLLM's continuous_usage_stats, has counters that look final): RUN_ERR_INCOMPLETE,
 * with the transport's reason when the connection was cut. A complete stream
 * without its final counters is the dialect's RUN_ERR_NO_USAGE. */
static void end_of_stream(struct run_ctx *c, bool cut, const char *cut_detail) {
  struct run_result *r = c->r;
  char why[200];
  if (cut)
    snprintf(why, sizeof why, "the connection closed mid-stream%s%s", cut_detail ? ": " : "",
             cut_detail ? cut_detail : "");
  else
    snprintf(why, sizeof why, "the server ended the response");
  if (!c->complete) {
    int rc = frame_finish(c);
    if (rc == FRAME_ERR) {
      run_result_fail(r, RUN_ERR_MALFORMED, "%s%s", frame_err(c),
                      cut ? " (connection closed mid-stream)" : "");
      return;
    }
    if (rc == FRAME_CB_FAIL) return;
    if (rc == FRAME_STOP) c->complete = true;
  }
  if (r->error == RUN_OK && !c->complete && !r->finish_reason[0]) {
    run_result_fail(r, RUN_ERR_INCOMPLETE,
                    "the stream stopped after %u events, before its terminal event (%s): %s; "
                    "the answer may be cut anywhere",
                    r->n_events,
                    c->d->framing == FRAMING_NDJSON ? "\"done\": true"
                    : strcmp(c->d->name, "llamacpp") == 0 ? "\"stop\": true"
                                                    : "finish_reason or [DONE]",
                    why);
    return;
  }
  if (c->d->finish(r) != 0 && r->error == RUN_OK)
    run_result_fail(r, RUN_ERR_NO_USAGE, "the stream ended without the final counters%s",
                    cut ? " (connection closed mid-stream)" : "");
  else if (cut && r->error == RUN_ERR_NO_USAGE && !strstr(r->error_msg, "mid-stream")) {
    /* keep the transport's reason beside the dialect's */
    size_t l = strlen(r->error_msg);
    snprintf(r->error_msg + l, sizeof r->error_msg - l, " (%s)", why);
  }
}

static void fill_timing(struct run_ctx *c) {
  struct run_result *r = c->r;
  CURL *e = c->easy;
  long nconn = 0;
  curl_off_t t_lookup = 0, t_connect = 0, t_app = 0, t_pre = 0;
  curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &nconn);
  curl_easy_getinfo(e, CURLINFO_NAMELOOKUP_TIME_T, &t_lookup);
  curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &t_connect);
  curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &t_app);
  curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &t_pre);
  if (c->t_send) r->t_send_ns = c->t_send;
  else if (t_pre > 0) r->t_send_ns = r->t_start_ns + (uint64_t)t_pre * 1000u;
  r->connection_reused = r->t_send_ns && nconn == 0;
  if (nconn > 0) {
    if (t_connect > t_lookup) r->connect_ns = (uint64_t)(t_connect - t_lookup) * 1000u;
    if (t_app > t_connect) r->tls_ns = (uint64_t)(t_app - t_connect) * 1000u;
  }
  if (!r->http_status) {
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    r->http_status = (int)code;
  }
}

static void describe_curl_failure(struct run_ctx *c, CURLcode res) {
  struct run_result *r = c->r;
  const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(res);
  enum run_error kind = transport_failure_kind_on(c->b, c->easy, c->errbuf, res);
  if (res == CURLE_OPERATION_TIMEDOUT && kind != RUN_ERR_TIMEOUT) {
    run_result_fail(r, kind, "%s with %s did not complete within %.1f s: %s",
                    kind == RUN_ERR_TLS ? "TLS handshake (is it a plain http:// server?)"
                                        : "TCP connect",
                    c->b->base_url, c->b->connect_timeout_s, detail);
    return;
  }
  switch (kind) {
  case RUN_ERR_CONNECT:
    run_result_fail(r, kind, "cannot connect to %s: %s", c->b->base_url, detail);
    break;
  case RUN_ERR_DNS: run_result_fail(r, kind, "host name not resolved: %s", detail); break;
  case RUN_ERR_TLS: run_result_fail(r, kind, "TLS failure with %s: %s", c->b->base_url, detail); break;
  case RUN_ERR_TIMEOUT: run_result_fail(r, kind, "timed out: %s", detail); break;
  default:
    if (res == CURLE_GOT_NOTHING)
      run_result_fail(r, RUN_ERR_OTHER, "the server closed the connection without answering");
    else if (res == CURLE_WEIRD_SERVER_REPLY || res == CURLE_UNSUPPORTED_PROTOCOL)
      run_result_fail(r, RUN_ERR_OTHER, "the server's reply is not valid HTTP: %s", detail);
    else
      run_result_fail(r, RUN_ERR_OTHER, "%s", detail);
  }
}

struct stream_run *stream_run_begin(struct backend *b, CURL *easy, char *errbuf,
                                    struct sse_parser *sse, struct ndjson_parser *ndjson,
                                    const struct backend_request *req, struct run_result *out) {
  run_result_init(out);
  const struct dialect *d = b->dialect;
  struct run_ctx *c = calloc(1, sizeof *c);
  if (!c) {
    run_result_fail(out, RUN_ERR_OTHER, "out of memory for a request");
    return NULL;
  }
  *c = (struct run_ctx){.b = b, .easy = easy, .errbuf = errbuf, .sse = sse, .ndjson = ndjson,
                        .r = out, .d = d};
  struct tm_err e = {{0}};
  if (d->build(b->endpoint, req, c->path, sizeof c->path, &c->body, &e) != 0) {
    run_result_fail(out, RUN_ERR_OTHER, "building the request: %s", e.msg);
    free(c);
    return NULL;
  }
  if (backend_interrupted()) {
    free(c->body);
    free(c);
    run_result_fail(out, RUN_ERR_INTERRUPTED, "interrupted before the request was sent");
    return NULL;
  }
  sse_reset(sse);
  ndjson_reset(ndjson);
  struct curl_slist *hdr = d->framing == FRAMING_NDJSON ? b->hdr_ndjson : b->hdr_sse;
  if (transport_prepare_on(b, easy, errbuf, "POST", c->path, c->body, hdr, &e) != 0) {
    free(c->body);
    free(c);
    run_result_fail(out, RUN_ERR_OTHER, "%s", e.msg);
    return NULL;
  }
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, c);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, c);
  curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(easy, CURLOPT_PREREQDATA, c);
  c->idle_s = req->idle_timeout_s > 0 ? req->idle_timeout_s : 60.0;
  c->total_s = req->total_timeout_s > 0 ? req->total_timeout_s : 600.0;
  out->t_start_ns = tm_now_ns();
  return (struct stream_run *)c;
}

void stream_run_limits(struct stream_run *s, struct drive_ctl *ctl) {
  struct run_ctx *c = (struct run_ctx *)s;
  memset(ctl, 0, sizeof *ctl);
  ctl->idle_ns = (uint64_t)(c->idle_s * 1e9);
  ctl->last_byte_ns = &c->last_byte_ns;
  ctl->stop_at_ns = &c->stop_at_ns;
  ctl->deadline_ns = c->r->t_start_ns + (uint64_t)(c->total_s * 1e9);
}

void stream_run_end(struct stream_run *s, enum drive_outcome o, CURLcode result) {
  struct run_ctx *cp = (struct run_ctx *)s;
  struct run_ctx c = *cp; /* the body below reads c. */
  struct backend *b = c.b;
  struct run_result *out = c.r;
  const struct dialect *d = c.d;
  const char *path = c.path;
  const double idle_s = c.idle_s, total_s = c.total_s;
  struct { CURLcode result; } ctl = {result};
  out->t_end_ns = tm_now_ns();
  fill_timing(&c);
  if (c.aborted) {
    /* r->error already set by the framer or the dialect */
  } else if (c.complete && o != DRIVE_DONE && o != DRIVE_FAILED) {
    /* the terminal event came; the server just did not end the response */
    end_of_stream(&c, false, NULL);
  } else {
    switch (o) {
    case DRIVE_INTERRUPTED:
      run_result_fail(out, RUN_ERR_INTERRUPTED, "interrupted after %u events", out->n_events);
      break;
    case DRIVE_TIMEOUT:
      run_result_fail(out, RUN_ERR_TIMEOUT,
                      "no complete answer within %.1f s (total timeout; %u events received)",
                      total_s, out->n_events);
      break;
    case DRIVE_IDLE:
      run_result_fail(out, RUN_ERR_IDLE_TIMEOUT,
                      "the server sent nothing for %.1f s (idle timeout; %s, %u events received)",
                      idle_s, out->t_headers_ns ? "after the headers" : "no response headers",
                      out->n_events);
      break;
    case DRIVE_FAILED: run_result_fail(out, RUN_ERR_OTHER, "%s", c.errbuf); break;
    case DRIVE_STOPPED: end_of_stream(&c, false, NULL); break;
    case DRIVE_DONE:
      if (c.http_error) {
        /* the body is scrubbed whole before the dialect quotes (and cuts) it */
        const char *key = transport_api_key(b);
        char *clean = NULL;
        size_t clean_len = 0;
        if (key && c.err_body && memmem(c.err_body, c.err_len, key, strlen(key)))
          clean = tm_redact_dup(c.err_body, c.err_len, key, &clean_len);
        if (clean)
          d->on_http_error(out, out->http_status, clean, clean_len);
        else
          d->on_http_error(out, out->http_status, c.err_body ? c.err_body : "",
                           c.err_body ? c.err_len : 0);
        free(clean);
        if (out->error == RUN_OK)
          run_result_fail(out, RUN_ERR_HTTP, "HTTP %d", out->http_status);
        /* name the request: "POST /v1/chat/completions: HTTP 404 ..." */
        char named[sizeof out->error_msg];
        /* the precisions bound the line (the message's end gives way) */
        snprintf(named, sizeof named, "POST %.60s: %.300s", path, out->error_msg);
        if (isfinite(out->retry_after_s)) {
          size_t l = strlen(named);
          snprintf(named + l, sizeof named - l, " (Retry-After: %.0f s)", out->retry_after_s);
        }
        snprintf(out->error_msg, sizeof out->error_msg, "%s", named);
      } else if (ctl.result == CURLE_OK) {
        end_of_stream(&c, false, NULL);
      } else if (out->t_headers_ns &&
                 (ctl.result == CURLE_PARTIAL_FILE || ctl.result == CURLE_RECV_ERROR)) {
        /* the connection closed mid-stream: the framer and dialect decide what
         * is missing (a cut event, the final counters) */
        end_of_stream(&c, true,
                      c.errbuf[0] ? c.errbuf : curl_easy_strerror(ctl.result));
      } else if (c.complete) {
        end_of_stream(&c, false, NULL);
      } else {
        describe_curl_failure(&c, ctl.result);
      }
      break;
    }
  }
  /* out->t_end_ns: when the data ended, not the end of a grace wait */
  if (c.complete && o == DRIVE_STOPPED && c.stop_at_ns)
    out->t_end_ns = c.stop_at_ns - COMPLETE_GRACE_NS;
  free(c.body);
  free(c.err_body);
  free(cp);
  /* Every string the server provided, scrubbed (the key may have been cut
   * to a fragment by a copy into these fixed buffers). */
  transport_scrub_secret(b, out->error_msg, sizeof out->error_msg);
  transport_scrub_secret(b, out->server_model, sizeof out->server_model);
  transport_scrub_secret(b, out->system_fingerprint, sizeof out->system_fingerprint);
  transport_scrub_secret(b, out->finish_reason, sizeof out->finish_reason);
}

int backend_run(struct backend *b, const struct backend_request *req, struct run_result *out) {
  struct stream_run *s = stream_run_begin(b, b->easy, b->errbuf, &b->sse, &b->ndjson, req, out);
  if (!s) return -1;
  struct drive_ctl ctl;
  stream_run_limits(s, &ctl);
  enum drive_outcome o = transport_drive(b, &ctl);
  stream_run_end(s, o, ctl.result);
  return out->error == RUN_OK ? 0 : -1;
}
