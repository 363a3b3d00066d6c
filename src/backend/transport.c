/* transport: the libcurl loop shared by every request of a backend, and
 * http_request (one plain, non-streamed exchange).
 *
 * Every transfer runs the backend's single easy handle on its multi handle, so
 * the connection pool is the multi's and a connection opened by any request
 * (the warm-up, /props, /tokenize) is reused by the next. The loop polls in
 * slices of at most 50 ms: that bounds how late a Ctrl-C, an idle timeout or a
 * total timeout is noticed, and costs nothing in accuracy, because arrival
 * times are taken inside curl's callbacks, which run as soon as poll reports
 * the socket readable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend_internal.h"
#include "util/clock.h"
#include "util/redact.h"

#define POLL_SLICE_MS 50
#define HTTP_MAX_BODY_BYTES ((size_t)64 << 20)

int transport_prepare(struct backend *b, const char *method, const char *path,
                      const char *body, struct curl_slist *headers, struct tm_err *err) {
  return transport_prepare_on(b, b->easy, b->errbuf, method, path, body, headers, err);
}

int transport_prepare_on(struct backend *b, CURL *e, char *errbuf, const char *method,
                         const char *path, const char *body, struct curl_slist *headers,
                         struct tm_err *err) {
  /* reset keeps live connections, DNS and TLS session caches (curl docs) */
  curl_easy_reset(e);
  size_t ul = strlen(b->base_url), pl = path ? strlen(path) : 0;
  char *url = malloc(ul + pl + 2);
  if (!url) return tm_errf(err, "out of memory for a URL");
  memcpy(url, b->base_url, ul);
  size_t k = ul;
  if (pl && path[0] != '/') url[k++] = '/';
  if (pl) memcpy(url + k, path, pl);
  url[k + pl] = 0;
  CURLcode rc = curl_easy_setopt(e, CURLOPT_URL, url); /* curl copies it */
  free(url);
  if (rc != CURLE_OK) return tm_errf(err, "bad URL: %s", curl_easy_strerror(rc));
  errbuf[0] = 0;
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for DNS timeouts */
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   (long)((b->connect_timeout_s > 0 ? b->connect_timeout_s : 10.0) * 1000.0));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  /* Proxies come from the usual environment variables (libcurl's default),
   * but a server on this machine is never reached through one: a proxy in
   * the path would add its own buffering and latency to every figure. The
   * user's NO_PROXY list is kept and loopback is added to it. */
  const char *np = getenv("NO_PROXY");
  if (!np || !*np) np = getenv("no_proxy");
  char noproxy[1024];
  snprintf(noproxy, sizeof noproxy, "localhost,127.0.0.1,::1%s%s", np && *np ? "," : "",
           np && *np ? np : "");
  curl_easy_setopt(e, CURLOPT_NOPROXY, np && !strcmp(np, "*") ? "*" : noproxy);
  if (!method || strcmp(method, "GET") == 0) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    const char *bd = body ? body : "";
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(bd));
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, bd);
    if (strcmp(method, "POST") != 0) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  }
  return 0;
}

enum drive_outcome transport_drive(struct backend *b, struct drive_ctl *ctl) {
  ctl->result = CURLE_OK;
  if (curl_multi_add_handle(b->multi, b->easy) != CURLM_OK) {
    snprintf(b->errbuf, sizeof b->errbuf, "curl_multi_add_handle failed");
    return DRIVE_FAILED;
  }
  enum drive_outcome out;
  for (;;) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(b->multi, &running);
    if (mc != CURLM_OK) {
      snprintf(b->errbuf, sizeof b->errbuf, "curl_multi_perform: %s", curl_multi_strerror(mc));
      out = DRIVE_FAILED;
      break;
    }
    bool done = false;
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(b->multi, &left)) != NULL) {
      if (m->msg == CURLMSG_DONE && m->easy_handle == b->easy) {
        ctl->result = m->data.result;
        done = true;
      }
    }
    if (done) {
      out = DRIVE_DONE;
      break;
    }
    uint64_t now = tm_now_ns();
    if (backend_interrupted()) {
      out = DRIVE_INTERRUPTED;
      break;
    }
    if (ctl->stop_at_ns && *ctl->stop_at_ns && now >= *ctl->stop_at_ns) {
      out = DRIVE_STOPPED;
      break;
    }
    if (ctl->deadline_ns && now >= ctl->deadline_ns) {
      out = DRIVE_TIMEOUT;
      break;
    }
    if (ctl->idle_ns && ctl->last_byte_ns && *ctl->last_byte_ns &&
        now >= *ctl->last_byte_ns + ctl->idle_ns) {
      out = DRIVE_IDLE;
      break;
    }
    int wait_ms = POLL_SLICE_MS;
    if (ctl->deadline_ns) {
      uint64_t left_ms = (ctl->deadline_ns - now) / 1000000u + 1;
      if (left_ms < (uint64_t)wait_ms) wait_ms = (int)left_ms;
    }
    mc = curl_multi_poll(b->multi, NULL, 0, wait_ms, NULL);
    if (mc != CURLM_OK) {
      snprintf(b->errbuf, sizeof b->errbuf, "curl_multi_poll: %s", curl_multi_strerror(mc));
      out = DRIVE_FAILED;
      break;
    }
  }
  /* Removing an unfinished transfer closes its connection (it is mid-response
   * and cannot be reused); a finished one goes back to the pool. */
  curl_multi_remove_handle(b->multi, b->easy);
  return out;
}

enum run_error transport_error_kind(CURLcode c) {
  switch (c) {
  case CURLE_OK: return RUN_OK;
  case CURLE_COULDNT_CONNECT: return RUN_ERR_CONNECT;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY: return RUN_ERR_DNS;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_ENGINE_INITFAILED:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_SHUTDOWN_FAILED:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_CLIENTCERT:
  case CURLE_USE_SSL_FAILED: return RUN_ERR_TLS;
  case CURLE_OPERATION_TIMEDOUT: return RUN_ERR_TIMEOUT;
  default: return RUN_ERR_OTHER;
  }
}

enum run_error transport_failure_kind(struct backend *b, CURLcode c) {
  return transport_failure_kind_on(b, b->easy, b->errbuf, c);
}

enum run_error transport_failure_kind_on(const struct backend *b, CURL *easy, const char *errbuf,
                                         CURLcode c) {
  if (c != CURLE_OPERATION_TIMEDOUT) return transport_error_kind(c);
  /* We set no CURLOPT_TIMEOUT (our loop enforces the idle and total limits),
   * so curl times out only while connecting: before the TCP connection (a
   * connect failure) or during the TLS handshake (typically https:// to a
   * plain-HTTP port that waits for a request line). */
  curl_off_t t_connect = 0, t_app = 0;
  curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &t_connect);
  curl_easy_getinfo(easy, CURLINFO_APPCONNECT_TIME_T, &t_app);
  /* curl 7.88 may leave CONNECT_TIME at 0 when the TLS filter on top failed,
   * so its own message ("SSL connection timeout") names the phase too */
  bool https = strncasecmp(b->base_url, "https://", 8) == 0;
  if (https && t_app == 0 &&
      (t_connect > 0 || strstr(errbuf, "SSL") || strstr(errbuf, "TLS")))
    return RUN_ERR_TLS;
  if (t_connect == 0) return RUN_ERR_CONNECT;
  return RUN_ERR_TIMEOUT;
}

const char *transport_api_key(const struct backend *b) {
  static const char prefix[] = "Authorization: Bearer ";
  const char *key = NULL;
  for (const struct curl_slist *h = b ? b->hdr_json : NULL; h; h = h->next)
    if (strncmp(h->data, prefix, sizeof prefix - 1) == 0) key = h->data + sizeof prefix - 1;
  return key && *key ? key : NULL;
}

void transport_scrub_secret(const struct backend *b, char *msg, size_t cap) {
  tm_redact(msg, cap, transport_api_key(b));
}

/* ------------------------------------------------------------ http_request */

struct body_buf {
  char *data;
  size_t len, cap;
  bool too_big;
  uint64_t last_byte_ns;
};

static size_t on_http_body(char *p, size_t sz, size_t nm, void *ud) {
  struct body_buf *bb = ud;
  size_t n = sz * nm;
  bb->last_byte_ns = tm_now_ns();
  if (bb->len + n > HTTP_MAX_BODY_BYTES) {
    bb->too_big = true;
    return 0; /* aborts the transfer */
  }
  if (bb->len + n + 1 > bb->cap) {
    size_t c = bb->cap ? bb->cap : 4096;
    while (c < bb->len + n + 1) c *= 2;
    char *nd = realloc(bb->data, c);
    if (!nd) {
      bb->too_big = true;
      return 0;
    }
    bb->data = nd;
    bb->cap = c;
  }
  memcpy(bb->data + bb->len, p, n);
  bb->len += n;
  bb->data[bb->len] = 0;
  return n;
}

static size_t on_http_header(char *p, size_t sz, size_t nm, void *ud) {
  ((struct body_buf *)ud)->last_byte_ns = tm_now_ns();
  return sz * nm;
}

int http_request(struct backend *b, const char *method, const char *path, const char *json_body,
                 double timeout_s, struct http_response *resp, struct tm_err *err) {
  memset(resp, 0, sizeof *resp);
  if (!method) method = "GET";
  if (!path) path = "";
  if (backend_interrupted()) {
    resp->error = RUN_ERR_INTERRUPTED;
    return tm_errf(err, "interrupted");
  }
  if (transport_prepare(b, method, path, json_body, b->hdr_json, err) != 0) {
    resp->error = RUN_ERR_OTHER;
    return -1;
  }
  struct body_buf bb = {0};
  curl_easy_setopt(b->easy, CURLOPT_WRITEFUNCTION, on_http_body);
  curl_easy_setopt(b->easy, CURLOPT_WRITEDATA, &bb);
  curl_easy_setopt(b->easy, CURLOPT_HEADERFUNCTION, on_http_header);
  curl_easy_setopt(b->easy, CURLOPT_HEADERDATA, &bb);
  if (timeout_s <= 0) timeout_s = 30;
  struct drive_ctl ctl = {0};
  ctl.deadline_ns = tm_now_ns() + (uint64_t)(timeout_s * 1e9);
  enum drive_outcome o = transport_drive(b, &ctl);
  long code = 0;
  curl_easy_getinfo(b->easy, CURLINFO_RESPONSE_CODE, &code);
  int rc = 0;
  if (o == DRIVE_INTERRUPTED) {
    resp->error = RUN_ERR_INTERRUPTED;
    rc = tm_errf(err, "%s %s: interrupted", method, path);
  } else if (o == DRIVE_TIMEOUT) {
    resp->error = RUN_ERR_TIMEOUT;
    rc = tm_errf(err, "%s %s: no complete answer within %.1f s", method, path, timeout_s);
  } else if (o != DRIVE_DONE) {
    resp->error = RUN_ERR_OTHER;
    rc = tm_errf(err, "%s %s: %s", method, path, b->errbuf);
  } else if (bb.too_big) {
    resp->error = RUN_ERR_OTHER;
    rc = tm_errf(err, "%s %s: response larger than %zu bytes", method, path,
                 (size_t)HTTP_MAX_BODY_BYTES);
  } else if (ctl.result != CURLE_OK) {
    resp->error = transport_failure_kind(b, ctl.result);
    rc = tm_errf(err, "%s %s: %s", method, path,
                 b->errbuf[0] ? b->errbuf : curl_easy_strerror(ctl.result));
  }
  if (rc != 0) {
    free(bb.data);
    if (err) transport_scrub_secret(b, err->msg, sizeof err->msg);
    return -1;
  }
  /* A body that quotes the key (an error echoing the Authorization header, a
   * model name) is scrubbed whole, before anything parses or cuts it. */
  const char *key = transport_api_key(b);
  if (key && bb.data && memmem(bb.data, bb.len, key, strlen(key))) {
    size_t n = 0;
    char *clean = tm_redact_dup(bb.data, bb.len, key, &n);
    free(bb.data);
    if (!clean) {
      resp->error = RUN_ERR_OTHER;
      return tm_errf(err, "out of memory");
    }
    bb.data = clean;
    bb.len = n;
  }
  resp->status = (int)code;
  if (!bb.data) {
    bb.data = malloc(1);
    if (!bb.data) {
      resp->error = RUN_ERR_OTHER;
      return tm_errf(err, "out of memory");
    }
    bb.data[0] = 0;
  }
  resp->body = bb.data;
  resp->len = bb.len;
  resp->error = RUN_OK;
  return 0;
}

void http_response_free(struct http_response *resp) {
  if (!resp) return;
  free(resp->body);
  resp->body = NULL;
  resp->len = 0;
}
