/* test_threadpool: every thread runs each job exactly once with its own index,
 * runs are ordered (a run sees the previous run's writes), idle workers
 * sleep: after a burst of runs their CPU time stops growing within ~50 ms,
 * and idle work (tpool_run_idle) runs once per thread and job with that
 * job's argument, ends when the thread has work again, and never runs on a
 * one-thread pool. */
#include <dirent.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/threadpool.h"
#include "tm_test.h"

struct count_ctx {
  atomic_int calls;
  atomic_int mask;
  int step;
  int seen_step[8];
};

static void count_fn(void *ctx, int ith, int nth) {
  struct count_ctx *c = ctx;
  atomic_fetch_add(&c->calls, 1);
  atomic_fetch_or(&c->mask, 1 << ith);
  c->seen_step[ith] = c->step; /* the caller's write before tpool_run */
  (void)nth;
}

static void test_runs_every_thread(void) {
  for (int n = 1; n <= 4; n++) {
    struct tm_err err;
    struct tpool *p = tpool_new(n, &err);
    CHECK(p != NULL);
    if (!p) continue;
    CHECK_EQ_INT(tpool_threads(p), n);
    struct count_ctx c;
    atomic_init(&c.calls, 0);
    atomic_init(&c.mask, 0);
    int bad = 0;
    for (int r = 0; r < 3000; r++) {
      c.step = r;
      tpool_run(p, count_fn, &c);
      for (int i = 0; i < n; i++) bad += c.seen_step[i] != r;
      if (r % 1000 == 999) usleep(5000); /* let workers fall asleep, then wake them */
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(atomic_load(&c.calls), 3000 * n);
    CHECK_EQ_INT(atomic_load(&c.mask), (1 << n) - 1);
    tpool_free(p);
  }
  struct tm_err err;
  CHECK(tpool_new(0, &err) == NULL);
}

/* Sum of utime + stime (clock ticks) of every thread but the caller. */
static long long other_threads_cpu(int *n_threads, int *n_running) {
  DIR *d = opendir("/proc/self/task");
  long long sum = 0;
  *n_threads = 0;
  *n_running = 0;
  if (!d) return -1;
  struct dirent *de;
  pid_t self = gettid();
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || atoi(de->d_name) == self) continue;
    char path[300], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *p = strrchr(buf, ')'); /* fields after the command name */
    if (!p) continue;
    char state;
    unsigned long long utime, stime;
    if (sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &utime,
               &stime) != 3)
      continue;
    (*n_threads)++;
    *n_running += state == 'R';
    sum += (long long)(utime + stime);
  }
  closedir(d);
  return sum;
}

static void spin_fn(void *ctx, int ith, int nth) {
  volatile double x = 0;
  for (int i = 0; i < 2000; i++) x += i;
  (void)ctx, (void)ith, (void)nth;
}

static void test_idle_workers_sleep(void) {
  struct tm_err err;
  struct tpool *p = tpool_new(3, &err);
  CHECK(p != NULL);
  if (!p) return;
  for (int r = 0; r < 2000; r++) tpool_run(p, spin_fn, NULL);
  usleep(50000); /* the spin window is 2 ms */
  int n, running;
  long long before = other_threads_cpu(&n, &running);
  CHECK(n >= 2); /* our two workers (ASan may add its own threads) */
  CHECK_EQ_INT(running, 0);
  usleep(300000);
  long long after = other_threads_cpu(&n, &running);
  CHECK_MSG(after - before <= 1, "idle workers used %lld ticks in 300 ms", after - before);
  /* And they still wake up for work. */
  struct count_ctx c;
  atomic_init(&c.calls, 0);
  atomic_init(&c.mask, 0);
  c.step = 7;
  tpool_run(p, count_fn, &c);
  CHECK_EQ_INT(atomic_load(&c.calls), 3);
  tpool_free(p);
}

struct idle_ctx {
  atomic_int job_done;   /* shares of the current job finished */
  atomic_int calls[4];   /* idle calls per thread */
  atomic_int bad_arg;    /* an idle call with another job's argument */
  atomic_int early;      /* the caller's idle ended before every share was done */
  atomic_int stuck;      /* an idle loop that never saw tpool_idle_over */
  uintptr_t last_arg[4]; /* per thread, written by that thread only */
  int nth;
};

static void share_fn(void *ctx, int ith, int nth) {
  struct idle_ctx *c = ctx;
  if (ith == 0) usleep(20); /* the caller finishes last now and then */
  atomic_fetch_add(&c->job_done, 1);
  (void)nth;
}

static void idle_fn(void *ctx, uintptr_t arg, struct tpool *p, int ith, int nth) {
  struct idle_ctx *c = ctx;
  atomic_fetch_add(&c->calls[ith], 1);
  /* Arguments count up from 1, one per job: a thread sees each in turn. */
  if (arg != c->last_arg[ith] + 1) atomic_fetch_add(&c->bad_arg, 1);
  c->last_arg[ith] = arg;
  long spins = 0;
  while (!tpool_idle_over(p, ith))
    if (++spins > 2000000000L) {
      atomic_fetch_add(&c->stuck, 1);
      return;
    }
  if (ith == 0 && atomic_load(&c->job_done) != nth) atomic_fetch_add(&c->early, 1);
}

static void test_idle_work(void) {
  for (int n = 1; n <= 3; n++) {
    struct tm_err err;
    struct tpool *p = tpool_new(n, &err);
    CHECK(p != NULL);
    if (!p) continue;
    struct idle_ctx c = {.nth = n};
    atomic_init(&c.job_done, 0);
    atomic_init(&c.bad_arg, 0);
    atomic_init(&c.early, 0);
    atomic_init(&c.stuck, 0);
    for (int i = 0; i < 4; i++) atomic_init(&c.calls[i], 0), c.last_arg[i] = 0;
    const int jobs = 500;
    for (int r = 0; r < jobs; r++) {
      atomic_store(&c.job_done, 0);
      tpool_run_idle(p, share_fn, &c, idle_fn, &c, (uintptr_t)r + 1);
    }
    tpool_free(p); /* the workers' last idle ends on stop */
    for (int i = 0; i < n; i++)
      CHECK_MSG(atomic_load(&c.calls[i]) == (n == 1 ? 0 : jobs), "%d threads: thread %d idled %d times",
                n, i, atomic_load(&c.calls[i]));
    CHECK_EQ_INT(atomic_load(&c.bad_arg), 0);
    CHECK_EQ_INT(atomic_load(&c.early), 0);
    CHECK_EQ_INT(atomic_load(&c.stuck), 0);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_runs_every_thread);
  TM_RUN(test_idle_workers_sleep);
  TM_RUN(test_idle_work);
}
