/* fs_replay: FS_REPLAY, recorded llama-server exchanges played back on time.
 *
 * Every *.json in cfg.fixtures_dir is loaded at fs_start (format in
 * tests/fixtures/README.md). A request is answered by, in order of precedence:
 *   1. the exchange named by fs_replay_next (one request only);
 *   2. cfg.replay_file, for every request;
 *   3. the best method+path match: recorded body equal to the request body,
 *      else same "stream" flag, else status 200, ties to the shortest file name
 *      (so a streamed chat request gets llama-server-chat-stream.json and a
 *      non-streamed one llama-server-chat-nonstream.json);
 *   4. nothing matches: 404 with llama.cpp's "File Not Found" body.
 * The recorded status and headers are sent, except the framing headers
 * (Transfer-Encoding, Content-Length, Connection), which this server writes
 * itself: event streams go out chunked, each recorded line at t_ms x time_scale
 * after the request was read (a blank "\n" line that ends an event travels in
 * the same chunk as the line before it, as llama.cpp writes them in one
 * write); other bodies (the concatenated lines) go out with Content-Length at
 * the last line's t_ms. The connection is kept alive unless the client asks
 * to close. A replay paced at time_scale > 0 (other than 1) also scales the
 * runtime's own timers it carries (llama.cpp `timings`: *_ms and *_per_token_ms
 * x time_scale, *_per_second / time_scale), so that they stay consistent with
 * the times the client sees, as a real server's are (tokmeter fails a run
 * whose server timers exceed the client's waits). time_scale 0 keeps them as
 * recorded. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fs_internal.h"

static int cmp_names(const void *a, const void *b) {
  return strcmp(((const struct fs_exchange *)a)->name, ((const struct fs_exchange *)b)->name);
}

int fs_replay_load(struct fakeserver *s) {
  const char *dir = s->cfg.fixtures_dir;
  if (!dir) {
    fprintf(stderr, "fakeserver: FS_REPLAY needs fixtures_dir\n");
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "fakeserver: cannot open %s\n", dir);
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    json_t *reqo = root ? json_object_get(root, "request") : NULL;
    const char *method = json_string_value(json_object_get(reqo, "method"));
    const char *rpath = json_string_value(json_object_get(reqo, "path"));
    json_t *lines = json_object_get(root, "lines");
    if (!root || !method || !rpath || !json_is_array(lines)) {
      fprintf(stderr, "fakeserver: %s: not an exchange (%s)\n", path, root ? "fields" : jerr.text);
      json_decref(root);
      rc = -1;
      break;
    }
    struct fs_exchange *ex = realloc(s->ex, (s->n_ex + 1) * sizeof *ex);
    if (!ex) {
      json_decref(root);
      rc = -1;
      break;
    }
    s->ex = ex;
    struct fs_exchange *x = &s->ex[s->n_ex];
    memset(x, 0, sizeof *x);
    x->name = strdup(e->d_name);
    if (!x->name) {
      json_decref(root);
      rc = -1;
      break;
    }
    s->n_ex++;
    x->root = root;
    x->method = method;
    x->path = rpath;
    x->req_body = json_object_get(reqo, "body");
    x->status = (int)json_integer_value(json_object_get(root, "status"));
    if (x->status == 0) x->status = 200;
    const char *ct = json_string_value(json_object_get(json_object_get(root, "headers"),
                                                       "Content-Type"));
    x->stream = ct && strstr(ct, "text/event-stream") != NULL;
  }
  closedir(d);
  if (rc == 0 && s->n_ex == 0) {
    fprintf(stderr, "fakeserver: no *.json exchange in %s\n", dir);
    rc = -1;
  }
  if (rc == 0) qsort(s->ex, s->n_ex, sizeof *s->ex, cmp_names);
  if (rc == 0 && s->cfg.replay_file) {
    bool found = false;
    for (size_t i = 0; i < s->n_ex; i++) found |= strcmp(s->ex[i].name, s->cfg.replay_file) == 0;
    if (!found) {
      fprintf(stderr, "fakeserver: no exchange %s in %s\n", s->cfg.replay_file, dir);
      rc = -1;
    }
  }
  return rc;
}

void fs_replay_free(struct fakeserver *s) {
  for (size_t i = 0; i < s->n_ex; i++) {
    free(s->ex[i].name);
    json_decref(s->ex[i].root);
  }
  free(s->ex);
  s->ex = NULL;
  s->n_ex = 0;
}

static struct fs_exchange *by_name(struct fakeserver *s, const char *name) {
  for (size_t i = 0; i < s->n_ex; i++)
    if (strcmp(s->ex[i].name, name) == 0) return &s->ex[i];
  return NULL;
}

static struct fs_exchange *choose(struct fakeserver *s, const struct fs_request *req) {
  char *next = NULL;
  pthread_mutex_lock(&s->mu);
  next = s->replay_next;
  s->replay_next = NULL;
  pthread_mutex_unlock(&s->mu);
  if (next) {
    struct fs_exchange *x = by_name(s, next);
    free(next);
    if (x) return x;
  }
  if (s->cfg.replay_file) return by_name(s, s->cfg.replay_file);

  char path[2048];
  snprintf(path, sizeof path, "%s", req->target);
  char *q = strchr(path, '?');
  if (q) *q = '\0';
  bool req_stream = json_is_true(json_object_get(req->json, "stream"));
  struct fs_exchange *best = NULL;
  long best_score = -1;
  for (size_t i = 0; i < s->n_ex; i++) {
    struct fs_exchange *x = &s->ex[i];
    if (strcasecmp(x->method, req->method) != 0 || strcmp(x->path, path) != 0) continue;
    long score = 0;
    if (req->json && x->req_body && json_equal(req->json, x->req_body)) score += 100000;
    if (json_is_true(json_object_get(x->req_body, "stream")) == req_stream) score += 10000;
    if (x->status == 200) score += 1000;
    score += 500 - (long)strlen(x->name);
    if (score > best_score) {
      best_score = score;
      best = x;
    }
  }
  return best;
}

/* Appends text to b, with the llama.cpp `timings` object of its JSON (a
 * "data: {...}" SSE line or a bare JSON body) scaled by `scale` (see the
 * header). Lines without timings, or that do not parse, go out as recorded. */
static int add_scaled(struct fs_buf *b, const char *text, double scale) {
  size_t len = text ? strlen(text) : 0;
  if (!text || !(scale > 0) || scale == 1 || !strstr(text, "\"timings\""))
    return fs_buf_add(b, text ? text : "", len);
  size_t pre = strncmp(text, "data: ", 6) == 0 ? 6 : 0;
  size_t end = len;
  while (end > pre && (text[end - 1] == '\n' || text[end - 1] == '\r')) end--;
  json_t *root = json_loadb(text + pre, end - pre, 0, NULL);
  json_t *t = root ? json_object_get(root, "timings") : NULL;
  if (!json_is_object(t)) {
    json_decref(root);
    return fs_buf_add(b, text, len);
  }
  const char *key;
  json_t *val;
  json_object_foreach(t, key, val) {
    if (!json_is_number(val)) continue;
    size_t kl = strlen(key);
    double v = json_number_value(val);
    if ((kl > 3 && strcmp(key + kl - 3, "_ms") == 0) ||
        (kl > 13 && strcmp(key + kl - 13, "_per_token_ms") == 0))
      json_object_set_new(t, key, json_real(v * scale));
    else if (kl > 11 && strcmp(key + kl - 11, "_per_second") == 0)
      json_object_set_new(t, key, json_real(v / scale));
  }
  char *js = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  if (!js) return -1;
  int rc = fs_buf_add(b, text, pre);
  if (rc == 0) rc = fs_buf_add(b, js, strlen(js));
  if (rc == 0) rc = fs_buf_add(b, text + end, len - end);
  free(js);
  return rc;
}

static int send_stream(struct fakeserver *s, int fd, const struct fs_request *req,
                       json_t *lines, uint64_t base_ns, double scale) {
  size_t n = json_array_size(lines);
  size_t i = 0;
  while (i < n) {
    json_t *li = json_array_get(lines, i);
    const char *text = json_string_value(json_object_get(li, "line"));
    double t_ms = json_number_value(json_object_get(li, "t_ms"));
    struct fs_buf chunk = {0};
    if (add_scaled(&chunk, text, scale) != 0) {
      fs_buf_free(&chunk);
      return -1;
    }
    i++;
    while (i < n) { /* the blank line that ends this event */
      const char *nx = json_string_value(json_object_get(json_array_get(lines, i), "line"));
      if (!nx || strcmp(nx, "\n") != 0 || strcmp(chunk.p, "\n") == 0) break;
      if (fs_buf_add(&chunk, "\n", 1) != 0) {
        fs_buf_free(&chunk);
        return -1;
      }
      i++;
    }
    uint64_t deadline = base_ns + (uint64_t)(t_ms * scale * 1e6);
    int rc = fs_sleep_until(s, deadline);
    if (rc == 0) rc = fs_send_chunk(s, fd, chunk.p, chunk.len, i == n);
    fs_buf_free(&chunk);
    if (rc != 0) return -1;
  }
  if (n == 0 && fs_send_chunk(s, fd, NULL, 0, true) != 0) return -1;
  return req->client_close ? 1 : 0;
}

int fs_replay_handle(struct fakeserver *s, int fd, const struct fs_request *req) {
  struct fs_exchange *x = choose(s, req);
  if (!x) {
    json_t *e = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", "File Not Found", "type",
                          "not_found_error", "code", 404);
    return fs_send_json(s, fd, 404, e, req->client_close) == 0 ? (req->client_close ? 1 : 0)
                                                               : -1;
  }
  /* Recorded headers minus the framing ones. */
  struct fs_buf extra = {0};
  const char *ctype = NULL;
  const char *key;
  json_t *val;
  json_object_foreach(json_object_get(x->root, "headers"), key, val) {
    if (strcasecmp(key, "Transfer-Encoding") == 0 || strcasecmp(key, "Content-Length") == 0 ||
        strcasecmp(key, "Connection") == 0)
      continue;
    if (strcasecmp(key, "Content-Type") == 0) {
      ctype = json_string_value(val);
      continue;
    }
    if (json_is_string(val) && fs_buf_printf(&extra, "%s: %s\r\n", key, json_string_value(val))) {
      fs_buf_free(&extra);
      return -1;
    }
  }
  json_t *lines = json_object_get(x->root, "lines");
  uint64_t base = req->t_read_ns;
  double scale = s->cfg.time_scale;
  int rc;
  if (x->stream) {
    rc = fs_send_head(s, fd, x->status, ctype, extra.p, true, 0, req->client_close);
    if (rc == 0) rc = send_stream(s, fd, req, lines, base, scale);
  } else {
    struct fs_buf body = {0};
    double last_ms = 0;
    size_t n = json_array_size(lines);
    rc = fs_buf_add(&body, NULL, 0);
    for (size_t i = 0; i < n && rc == 0; i++) {
      json_t *li = json_array_get(lines, i);
      const char *t = json_string_value(json_object_get(li, "line"));
      if (t) rc = add_scaled(&body, t, scale);
      double t_ms = json_number_value(json_object_get(li, "t_ms"));
      if (t_ms > last_ms) last_ms = t_ms;
    }
    if (rc == 0) rc = fs_sleep_until(s, base + (uint64_t)(last_ms * scale * 1e6));
    struct fs_buf all = {0};
    if (rc == 0) {
      rc = fs_buf_printf(&all, "HTTP/1.1 %d %s\r\n", x->status, fs_status_text(x->status));
      if (ctype) rc |= fs_buf_printf(&all, "Content-Type: %s\r\n", ctype);
      if (extra.p) rc |= fs_buf_add(&all, extra.p, extra.len);
      rc |= fs_buf_printf(&all, "Content-Length: %zu\r\nConnection: %s\r\n\r\n", body.len,
                          req->client_close ? "close" : "keep-alive");
      rc |= fs_buf_add(&all, body.p, body.len);
      if (rc == 0) rc = fs_send_all(s, fd, all.p, all.len);
    }
    fs_buf_free(&all);
    fs_buf_free(&body);
    if (rc == 0) rc = req->client_close ? 1 : 0;
  }
  fs_buf_free(&extra);
  return rc;
}
