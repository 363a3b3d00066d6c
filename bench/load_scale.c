/* load_scale: how many streams one tokmeter process holds, and what the
 * client adds to every arrival time (issue 32 part 6).
 *
 *   tokmeter-load-scale STREAMS [TOKENS [INTERVAL_MS]]
 *
 * A loopback SSE server runs in a child process (one epoll loop): it answers
 * every POST /v1/chat/completions with TOKENS events, one every INTERVAL_MS
 * per stream, the streams' events spread evenly over the interval (1 ms
 * buckets), each event's text the server's CLOCK_MONOTONIC time (ns) just
 * before its send(), then usage and [DONE]. The parent opens
 * STREAMS requests at once on one backend_pool (the load generator's
 * transport: one thread, libcurl's socket API on epoll) and, for every
 * chunk, takes the client's arrival stamp (taken in curl's write callback,
 * as every figure tokmeter prints) minus the server's send stamp: the
 * latency added between the server's send and tokmeter's clock (the kernel's
 * loopback and the client's own queueing), each stream's first 3 events left
 * out (they arrive while the other streams are still connecting). Printed: streams completed, the
 * added latency's p50, p99 and max, the client's CPU time. Same machine,
 * same clock: no offset to estimate. LOAD_SCALE_DUMP=FILE writes every
 * sample as "server_send_ns added_latency_ms", to see when the slow ones
 * happened (together: the client or the machine stalled; spread: queueing).
 *
 * LOAD_SCALE_HICCUPS=1 measures the machine's own stalls beside it (off by
 * default: its 5,000 wake-ups a second are work of their own): an idle thread of the
 * client sleeps 200 us at a time and records every wake-up later than 1 ms
 * (a hiccup: no vCPU ran it, so none ran the client either; on a VM, the
 * hypervisor's steal). Printed: their count and the longest, and the added
 * latency's p99 over the samples that arrived outside them (each stall
 * widened by 1 ms on either side): what the client adds, apart from what the
 * machine took. The raw figure is the target's.
 * LOAD_SCALE_SPIN=1 drives the pool without ever sleeping in epoll_wait (a
 * core spent on it): on a VM, a vCPU that sleeps is woken by the hypervisor,
 * which can take milliseconds; spinning shows what the client's code adds
 * without that wake-up. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/pool.h"
#include "bench/load.h"
#include "util/clock.h"

/* ------------------------------------------------------------- the server */

struct conn {
  int fd;
  char in[8192];
  size_t in_len;
  int streaming;  /* tokens sent so far + 1; 0: not streaming */
  int phase;      /* the millisecond of the interval its events leave at */
};

static int send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int chunk(int fd, const char *data) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "%zx\r\n%s\r\n", strlen(data), data);
  return send_all(fd, buf, (size_t)n);
}

static void serve(int lfd, int tokens, int interval_ms, int max_conns) {
  int ep = epoll_create1(0);
  struct conn *cs = calloc((size_t)max_conns + 1024, sizeof *cs);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  const size_t cap = (size_t)max_conns + 1024;
  /* 1 ms ticks; a stream's events leave at its own millisecond of the
   * interval, so the streams' events spread evenly over it (a steady event
   * rate, as many unsynchronised servers give, rather than one burst) */
  uint64_t next_tick = tm_now_ns() + 1000000u, tick = 0;
  int next_phase = 0;
  for (;;) {
    uint64_t now = tm_now_ns();
    int t = now >= next_tick ? 0 : (int)((next_tick - now) / 1000000u);
    struct epoll_event evs[512];
    int n = epoll_wait(ep, evs, 512, t);
    for (int k = 0; k < n; k++) {
      int fd = evs[k].data.fd;
      if (fd == lfd) {
        for (;;) {
          int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
          if (c < 0) break;
          if ((size_t)c >= cap) {
            close(c);
            continue;
          }
          int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          cs[c] = (struct conn){.fd = c};
          struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
        }
        continue;
      }
      struct conn *c = &cs[fd];
      ssize_t got = recv(fd, c->in + c->in_len, sizeof c->in - c->in_len - 1, 0);
      if (got <= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
        close(fd);
        c->fd = 0, c->streaming = 0;
        continue;
      }
      c->in_len += (size_t)got;
      c->in[c->in_len] = 0;
      char *end = strstr(c->in, "\r\n\r\n");
      if (!end) continue;
      char *cl = strcasestr(c->in, "Content-Length:");
      size_t body = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
      size_t need = (size_t)(end - c->in) + 4 + body;
      if (c->in_len < need) continue;
      if (!strncmp(c->in, "GET /v1/models", 14)) {
        static const char r[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Content-Length: 36\r\n\r\n{\"object\":\"list\",\"data\":[{\"id\":\"m\"}]}";
        send_all(fd, r, sizeof r - 1);
      } else {
        static const char h[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n";
        send_all(fd, h, sizeof h - 1);
        c->streaming = 1;
        c->phase = next_phase++ % interval_ms;
      }
      memmove(c->in, c->in + need, c->in_len - need);
      c->in_len -= need;
    }
    now = tm_now_ns();
    if (now < next_tick) continue;
    next_tick += 1000000u;
    const int bucket = (int)(tick++ % (uint64_t)interval_ms);
    for (size_t fd = 0; fd < cap; fd++) {
      struct conn *c = &cs[fd];
      if (!c->streaming || c->phase != bucket) continue;
      char data[256];
      if (c->streaming <= tokens) {
        snprintf(data, sizeof data,
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%llu \"}}]}\n\n",
                 (unsigned long long)tm_now_ns());
        chunk((int)fd, data);
        c->streaming++;
      } else {
        snprintf(data, sizeof data,
                 "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],"
                 "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
                 tokens, tokens + 4);
        chunk((int)fd, data);
        chunk((int)fd, "data: [DONE]\n\n");
        send_all((int)fd, "0\r\n\r\n", 5);
        c->streaming = 0;
      }
    }
  }
}

/* ------------------------------------------------------ the machine's stalls */

#define HICCUP_NS 1000000ull
#define MAX_HICCUPS 4096

struct hiccups {
  atomic_bool stop;
  bool realtime; /* the thread runs SCHED_FIFO */
  size_t n;
  uint64_t start[MAX_HICCUPS], end[MAX_HICCUPS]; /* CLOCK_MONOTONIC ns */
};

static void *hiccup_thread(void *arg) {
  struct hiccups *h = arg;
  /* Real-time priority where allowed (root, CAP_SYS_NICE): woken, it runs at
   * once, so a late wake-up is a machine that ran nothing of ours, not this
   * thread queued behind the client and the server. Otherwise it says so. */
  struct sched_param sp = {.sched_priority = 1};
  h->realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
  uint64_t prev = tm_now_ns();
  while (!atomic_load(&h->stop)) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    const uint64_t now = tm_now_ns();
    if (now - prev > HICCUP_NS + 200000 && h->n < MAX_HICCUPS) {
      h->start[h->n] = prev;
      h->end[h->n++] = now;
    }
    prev = now;
  }
  return NULL;
}

static bool in_hiccup(const struct hiccups *h, uint64_t t) {
  for (size_t i = 0; i < h->n; i++)
    if (t + HICCUP_NS >= h->start[i] && t <= h->end[i] + HICCUP_NS) return true;
  return false;
}

/* ------------------------------------------------------------- the client */

#define SKIP_FIRST 3

struct tally {
  double *lat_ms;
  uint64_t *arrival_ns; /* beside lat_ms: when each sample arrived */
  FILE *dump; /* LOAD_SCALE_DUMP: one "send_ns latency_ms" line per sample */
  size_t n, cap;
  int ok, failed;
  char first_error[400];
};

static void on_done(void *tag, struct run_result *r, void *ctx) {
  (void)tag;
  struct tally *t = ctx;
  if (r->error == RUN_OK) t->ok++;
  else if (t->failed++ == 0) snprintf(t->first_error, sizeof t->first_error, "%s", r->error_msg);
  /* each stream's first events are left out: they arrive while the client
   * is still opening the other streams' connections (a ramp, as load has) */
  for (size_t i = SKIP_FIRST; i < r->n_chunks; i++) {
    const char *text = r->text + r->chunks[i].text_off;
    if (text[0] != 't') continue;
    unsigned long long sent = strtoull(text + 1, NULL, 10);
    if (t->n == t->cap) {
      t->cap = t->cap ? 2 * t->cap : 4096;
      t->lat_ms = realloc(t->lat_ms, t->cap * sizeof *t->lat_ms);
      t->arrival_ns = realloc(t->arrival_ns, t->cap * sizeof *t->arrival_ns);
    }
    t->arrival_ns[t->n] = r->chunks[i].t_ns;
    t->lat_ms[t->n++] = ((double)r->chunks[i].t_ns - (double)sent) / 1e6;
    if (t->dump) fprintf(t->dump, "%llu %.4f\n", sent, t->lat_ms[t->n - 1]);
  }
  run_result_free(r);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s STREAMS [TOKENS [INTERVAL_MS]]\n", argv[0]);
    return 2;
  }
  const int streams = atoi(argv[1]);
  const int tokens = argc > 2 ? atoi(argv[2]) : 50;
  const int interval = argc > 3 ? atoi(argv[3]) : 100;
  if (streams < 1 || streams > 65536 || tokens < 2 || interval < 1) return 2;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max; /* the server's connections too */
  setrlimit(RLIMIT_NOFILE, &rl);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 65535) != 0 ||
      getsockname(lfd, (struct sockaddr *)&a, &al) != 0) {
    perror("listen");
    return 1;
  }
  pid_t child = fork();
  if (child == 0) {
    serve(lfd, tokens, interval, streams);
    _exit(0);
  }
  close(lfd);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
  struct backend_config bc = {.base_url = url, .api = API_OPENAI, .endpoint = ENDPOINT_CHAT,
                              .connect_timeout_s = 30};
  struct tm_err err = {{0}};
  struct backend *b = backend_new(&bc, &err);
  struct backend_pool *p = b ? backend_pool_new(b, (size_t)streams, &err) : NULL;
  if (!p) {
    fprintf(stderr, "load_scale: %s\n", err.msg);
    kill(child, SIGKILL);
    return 1;
  }
  struct run_result *rs = calloc((size_t)streams, sizeof *rs);
  struct backend_request req = {.prompt = "scale", .max_tokens = (uint32_t)tokens, .stream = true,
                                .idle_timeout_s = 30, .total_timeout_s = 600};
  struct tally t = {0};
  const char *dump = getenv("LOAD_SCALE_DUMP");
  if (dump && !(t.dump = fopen(dump, "w"))) {
    perror(dump);
    return 2;
  }
  static struct hiccups hic;
  pthread_t hic_thread;
  const bool hic_on = getenv("LOAD_SCALE_HICCUPS") && *getenv("LOAD_SCALE_HICCUPS") == '1';
  const bool hic_ok = hic_on && pthread_create(&hic_thread, NULL, hiccup_thread, &hic) == 0;
  const int wait_ms = getenv("LOAD_SCALE_SPIN") && *getenv("LOAD_SCALE_SPIN") == '1' ? 0 : 10;
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  const uint64_t t0 = tm_now_ns();
  for (int i = 0; i < streams; i++)
    if (backend_pool_start(p, &req, &rs[i], &rs[i]) != 0) on_done(&rs[i], &rs[i], &t);
  while (backend_pool_active(p)) backend_pool_drive(p, wait_ms, on_done, &t);
  const double wall = (double)(tm_now_ns() - t0) / 1e9;
  getrusage(RUSAGE_SELF, &r1);
  const double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                     (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                     (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
  if (hic_ok) {
    atomic_store(&hic.stop, true);
    pthread_join(hic_thread, NULL);
  }
  struct load_dist d;
  load_dist_of(t.lat_ms, t.n, &d);
  printf("streams %d ok %d failed %d tokens %zu wall %.1f s client_cpu %.2f s "
         "added_latency_ms p50 %.3f p99 %.3f max %.3f\n",
         streams, t.ok, t.failed, t.n, wall, cpu, d.p50, d.p99, d.max);
  if (hic_ok) {
    double longest = 0;
    for (size_t i = 0; i < hic.n; i++)
      longest = fmax(longest, (double)(hic.end[i] - hic.start[i]) / 1e6);
    size_t kept = 0;
    for (size_t i = 0; i < t.n; i++)
      if (!in_hiccup(&hic, t.arrival_ns[i])) t.lat_ms[kept++] = t.lat_ms[i];
    struct load_dist q;
    load_dist_of(t.lat_ms, kept, &q);
    printf("machine stalls over 1 ms (an idle %s thread's late wake-ups): %zu, longest %.1f ms; "
           "outside them (%zu of %zu samples): added_latency_ms p50 %.3f p99 %.3f max %.3f\n",
           hic.realtime ? "real-time" : "normal-priority (so also queued behind our work)",
           hic.n, longest, kept, t.n, q.p50, q.p99, q.max);
  } else if (hic_on) {
    printf("machine stalls: not measured (no thread)\n");
  }
  if (t.failed) printf("first failure: %s\n", t.first_error);
  backend_pool_free(p);
  backend_free(b);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  free(rs);
  free(t.lat_ms);
  free(t.arrival_ns);
  if (t.dump) fclose(t.dump);
  return t.failed ? 1 : 0;
}
