/* pool: see pool.h. */
#include "backend/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "util/clock.h"

struct slot {
  struct stream_io io;
  struct stream_run *run;   /* NULL: free */
  struct run_result *out;
  void *tag;
  struct drive_ctl ctl;
  size_t pos;               /* busy: its index in backend_pool.active */
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
  /* the event loop: libcurl's sockets in one epoll set (CURLMOPT_SOCKETFUNCTION),
   * its timer as a deadline (CURLMOPT_TIMERFUNCTION): the cost of a wake-up
   * is the sockets that are ready, not the streams that are open */
  int epfd;
  uint64_t curl_deadline_ns;  /* 0: no timer */
  uint64_t next_limits_ns;    /* the idle/total limits are checked every 2 ms */
};

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp) {
  (void)e;
  (void)socketp;
  struct backend_pool *p = userp;
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
    return 0;
  }
  struct epoll_event ev = {.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) |
                                     ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
                           .data.fd = fd};
  if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT)
    epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
  return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp) {
  (void)m;
  struct backend_pool *p = userp;
  p->curl_deadline_ns = timeout_ms < 0 ? 0 : tm_now_ns() + (uint64_t)timeout_ms * 1000000u;
  return 0;
}

/* Room for every stream's connection: the soft limit raised to the hard
 * one when needed. 0, or -1 with err naming both. */
static int enough_descriptors(size_t streams, struct tm_err *err) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  const rlim_t want = (rlim_t)streams + 64;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
      return tm_errf(err, "%zu streams need %llu file descriptors; this process may open %llu "
                          "(ulimit -n)", streams, (unsigned long long)want,
                     (unsigned long long)rl.rlim_max);
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
      return tm_errf(err, "%zu streams need %llu file descriptors: %s", streams,
                     (unsigned long long)want, strerror(errno));
  }
  return 0;
}

struct backend_pool *backend_pool_new(struct backend *b, size_t max_streams, struct tm_err *err) {
  if (!b || max_streams == 0 || max_streams > 65536) {
    tm_errf(err, "a pool holds 1 to 65536 streams");
    return NULL;
  }
  if (enough_descriptors(max_streams, err) != 0) return NULL;
  struct backend_pool *p = calloc(1, sizeof *p);
  if (!p) goto oom;
  p->epfd = -1;
  p->b = b;
  p->cap = max_streams;
  p->slots = calloc(max_streams, sizeof *p->slots);
  p->free_list = malloc(max_streams * sizeof *p->free_list);
  p->active = malloc(max_streams * sizeof *p->active);
  p->multi = curl_multi_init();
  p->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (!p->slots || !p->free_list || !p->active || !p->multi || p->epfd < 0) goto oom;
  /* every slot keeps its own connection alive: as many as slots */
  curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, (long)max_streams);
  curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, p);
  curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(p->multi, CURLMOPT_TIMERDATA, p);
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
  if (p->epfd >= 0) close(p->epfd);
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
  s->pos = p->n_active;
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
  if (k < p->n_active) p->slots[p->active[k]].pos = k;
  p->free_list[p->n_free++] = i;
  if (done) done(tag, out, ctx);
}

static size_t active_index(const struct backend_pool *p, const struct slot *s) {
  const size_t i = (size_t)(s - p->slots);
  if (i >= p->cap || !s->run || s->pos >= p->n_active || p->active[s->pos] != i) return (size_t)-1;
  return s->pos;
}

int backend_pool_drive(struct backend_pool *p, int wait_ms, backend_pool_done_fn done, void *ctx) {
  int ended = 0;
  uint64_t now = tm_now_ns();
  int t = wait_ms > 0 ? wait_ms : 0;
  if (p->curl_deadline_ns) {
    const uint64_t left = p->curl_deadline_ns > now ? (p->curl_deadline_ns - now) / 1000000u : 0;
    if (left < (uint64_t)t) t = (int)left;
  }
  struct epoll_event evs[256];
  int n = epoll_wait(p->epfd, evs, 256, t);
  bool failed = n < 0 && errno != EINTR;
  int running = 0;
  for (int k = 0; !failed && k < n; k++) {
    int mask = ((evs[k].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
               ((evs[k].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
               ((evs[k].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
    failed = curl_multi_socket_action(p->multi, evs[k].data.fd, mask, &running) != CURLM_OK;
  }
  now = tm_now_ns();
  if (!failed && p->curl_deadline_ns && now >= p->curl_deadline_ns) {
    p->curl_deadline_ns = 0;
    failed = curl_multi_socket_action(p->multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK;
  }
  if (failed) {
    while (p->n_active) {
      struct slot *s = &p->slots[p->active[0]];
      snprintf(s->io.errbuf, sizeof s->io.errbuf, "the transfer loop (epoll, curl_multi) failed");
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
  /* The limits backend_run's loop holds one transfer to, for each (every
   * 2 ms at most: the walk is over every stream in flight). */
  const bool interrupted = backend_interrupted();
  if (!interrupted && now < p->next_limits_ns) return ended;
  p->next_limits_ns = now + 2000000u;
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
