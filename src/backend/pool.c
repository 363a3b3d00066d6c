/* pool: see pool.h. */
#include "backend/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "util/clock.h"

struct slot {
  struct stream_io io;
  struct stream_run *run;   /* NULL: free */
  struct run_result *out;
  void *tag;
  struct drive_ctl ctl;
};

struct backend_pool {
  struct backend *b;
  CURLM *multi;
  struct slot *slots;
  size_t cap;
  size_t *free_list;        /* indices of free slots */
  size_t n_free;
  size_t *active;           /* indices of busy slots, in no order */
  size_t n_active;
};

struct backend_pool *backend_pool_new(struct backend *b, size_t max_streams, struct tm_err *err) {
  if (!b || max_streams == 0 || max_streams > 65536) {
    tm_errf(err, "a pool holds 1 to 65536 streams");
    return NULL;
  }
  struct backend_pool *p = calloc(1, sizeof *p);
  if (!p) goto oom;
  p->b = b;
  p->cap = max_streams;
  p->slots = calloc(max_streams, sizeof *p->slots);
  p->free_list = malloc(max_streams * sizeof *p->free_list);
  p->active = malloc(max_streams * sizeof *p->active);
  p->multi = curl_multi_init();
  if (!p->slots || !p->free_list || !p->active || !p->multi) goto oom;
  /* every slot keeps its own connection alive: as many as slots */
  curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, (long)max_streams);
  for (size_t i = 0; i < max_streams; i++) p->free_list[i] = max_streams - 1 - i;
  p->n_free = max_streams;
  return p;
oom:
  backend_pool_free(p);
  tm_errf(err, "out of memory for a pool of %zu streams", max_streams);
  return NULL;
}

void backend_pool_free(struct backend_pool *p) {
  if (!p) return;
  for (size_t i = 0; p->slots && i < p->cap; i++) {
    struct slot *s = &p->slots[i];
    if (s->run) {
      curl_multi_remove_handle(p->multi, s->io.easy);
      stream_run_end(s->run, DRIVE_INTERRUPTED, CURLE_OK);
      run_result_free(s->out);
    }
    if (s->io.easy) {
      curl_easy_cleanup(s->io.easy);
      sse_free(&s->io.sse);
      ndjson_free(&s->io.ndjson);
    }
  }
  if (p->multi) curl_multi_cleanup(p->multi);
  free(p->slots);
  free(p->free_list);
  free(p->active);
  free(p);
}

size_t backend_pool_active(const struct backend_pool *p) { return p ? p->n_active : 0; }
size_t backend_pool_capacity(const struct backend_pool *p) { return p ? p->cap : 0; }

int backend_pool_start(struct backend_pool *p, const struct backend_request *req,
                       struct run_result *out, void *tag) {
  if (!p->n_free) {
    run_result_init(out);
    run_result_fail(out, RUN_ERR_OTHER, "no free stream (%zu in flight)", p->n_active);
    return -1;
  }
  size_t i = p->free_list[p->n_free - 1];
  struct slot *s = &p->slots[i];
  if (!s->io.easy) {
    s->io.easy = curl_easy_init();
    if (!s->io.easy) {
      run_result_init(out);
      run_result_fail(out, RUN_ERR_OTHER, "out of memory for a stream");
      return -1;
    }
    sse_init(&s->io.sse, 0);
    ndjson_init(&s->io.ndjson, 0);
  }
  s->run = stream_run_begin(p->b, s->io.easy, s->io.errbuf, &s->io.sse, &s->io.ndjson, req, out);
  if (!s->run) return -1;
  curl_easy_setopt(s->io.easy, CURLOPT_PRIVATE, (void *)s);
  stream_run_limits(s->run, &s->ctl);
  if (curl_multi_add_handle(p->multi, s->io.easy) != CURLM_OK) {
    stream_run_end(s->run, DRIVE_FAILED, CURLE_OK);
    s->run = NULL;
    snprintf(out->error_msg, sizeof out->error_msg, "curl_multi_add_handle failed");
    return -1;
  }
  s->out = out;
  s->tag = tag;
  p->n_free--;
  p->active[p->n_active++] = i;
  return 0;
}

/* The slot's request ended: its result filled, the slot freed, the caller told. */
static void finish(struct backend_pool *p, size_t k, enum drive_outcome o, CURLcode result,
                   backend_pool_done_fn done, void *ctx) {
  size_t i = p->active[k];
  struct slot *s = &p->slots[i];
  /* removing an unfinished transfer closes its connection; a finished one
   * stays in the multi's pool for the slot's next request */
  curl_multi_remove_handle(p->multi, s->io.easy);
  stream_run_end(s->run, o, result);
  s->run = NULL;
  struct run_result *out = s->out;
  void *tag = s->tag;
  s->out = NULL;
  p->active[k] = p->active[--p->n_active];
  p->free_list[p->n_free++] = i;
  if (done) done(tag, out, ctx);
}

static size_t active_index(const struct backend_pool *p, const struct slot *s) {
  const size_t i = (size_t)(s - p->slots);
  for (size_t k = 0; k < p->n_active; k++)
    if (p->active[k] == i) return k;
  return (size_t)-1;
}

int backend_pool_drive(struct backend_pool *p, int wait_ms, backend_pool_done_fn done, void *ctx) {
  int ended = 0;
  if (wait_ms > 0 && curl_multi_poll(p->multi, NULL, 0, wait_ms, NULL) != CURLM_OK) wait_ms = -1;
  int running = 0;
  const bool failed = wait_ms < 0 || curl_multi_perform(p->multi, &running) != CURLM_OK;
  if (failed) {
    while (p->n_active) {
      struct slot *s = &p->slots[p->active[0]];
      snprintf(s->io.errbuf, sizeof s->io.errbuf, "the transfer loop (curl_multi) failed");
      finish(p, 0, DRIVE_FAILED, CURLE_OK, done, ctx);
      ended++;
    }
    return -1;
  }
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(p->multi, &left)) != NULL) {
    if (m->msg != CURLMSG_DONE) continue;
    struct slot *s = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
    const CURLcode result = m->data.result;
    size_t k = s ? active_index(p, s) : (size_t)-1;
    if (k == (size_t)-1) continue;
    finish(p, k, DRIVE_DONE, result, done, ctx);
    ended++;
  }
  /* The limits backend_run's loop holds one transfer to, for each. */
  const uint64_t now = tm_now_ns();
  const bool interrupted = backend_interrupted();
  for (size_t k = 0; k < p->n_active;) {
    const struct drive_ctl *c = &p->slots[p->active[k]].ctl;
    enum drive_outcome o = DRIVE_DONE;
    if (interrupted) o = DRIVE_INTERRUPTED;
    else if (c->stop_at_ns && *c->stop_at_ns && now >= *c->stop_at_ns) o = DRIVE_STOPPED;
    else if (c->deadline_ns && now >= c->deadline_ns) o = DRIVE_TIMEOUT;
    else if (c->idle_ns && c->last_byte_ns && *c->last_byte_ns &&
             now >= *c->last_byte_ns + c->idle_ns)
      o = DRIVE_IDLE;
    if (o == DRIVE_DONE) {
      k++;
      continue;
    }
    finish(p, k, o, CURLE_OK, done, ctx); /* slot k now holds another: not advanced */
    ended++;
  }
  return ended;
}
