/* threadpool: N-1 worker pthreads plus the caller (thread 0), see threadpool.h.
 *
 * Hand-off: the caller publishes (fn, ctx), then bumps a generation counter;
 * workers wait for the generation to change, run fn, and bump a done counter
 * the caller spins on. Each shared atomic sits on its own cache line so the
 * spinning readers of one do not steal the line of the other.
 *
 * Waiting: a worker first spins (with a pause hint) for up to TP_SPIN_NS after
 * its last job, because a forward pass issues hundreds of runs per token a few
 * microseconds apart and a futex wake costs tens of microseconds. Past that it
 * sleeps on a condition variable, so an idle engine burns no CPU.
 *
 * Lost-wake-up proof (Dekker with seq_cst): a worker going to sleep increments
 * n_sleeping under the mutex, then re-reads gen; the caller bumps gen, then
 * reads n_sleeping and broadcasts (under the mutex) when it is non-zero. One of
 * the two sees the other's write, so a sleeper always wakes for a new job. */
#include "engine/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/step_prof.h"
#include "util/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TP_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define TP_PAUSE() __asm__ __volatile__("yield")
#else
#define TP_PAUSE() ((void)0)
#endif

/* How long a worker spins after a job before sleeping: long enough to span
 * the gaps inside a forward pass and between decode steps of a benchmark,
 * short enough that an idle engine is asleep within a few milliseconds. */
#define TP_SPIN_NS 2000000ull

struct tpool_worker {
  alignas(64) struct tpool *pool;
  int ith;
  atomic_uint seen; /* the generation this worker last took (its own line) */
  pthread_t thread;
};

struct tpool {
  alignas(64) atomic_uint gen;     /* bumped once per tpool_run */
  alignas(64) atomic_int done;     /* workers finished with the current job */
  alignas(64) atomic_int n_sleeping;
  atomic_bool stop;
  tpool_fn fn;                     /* the current job: written before gen */
  void *ctx;
  tpool_idle_fn idle;              /* its idle work, or NULL */
  void *idle_ctx;
  uintptr_t idle_arg;
  int n_threads;
  int n_started;                   /* workers actually created */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct tpool_worker *workers;    /* n_threads - 1 */
};

static void *worker_main(void *arg) {
  struct tpool_worker *w = arg;
  struct tpool *p = w->pool;
  /* Not a load of gen: a worker that starts late must still run the jobs
   * published since tpool_new (gen starts at 0). */
  unsigned seen = 0;
  for (;;) {
    /* Spin, then sleep, until the generation moves or the pool stops. */
    uint64_t spin_start = tm_now_ns();
    unsigned g;
    int iter = 0;
    while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&p->stop, memory_order_acquire)) {
      TP_PAUSE();
      if (++iter < 64) continue;
      iter = 0;
      /* Give the core away if anyone else wants it: with more threads than
       * cores, a pure spin would starve the thread everybody waits for. */
      sched_yield();
      if (tm_now_ns() - spin_start < TP_SPIN_NS) continue;
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->n_sleeping, 1);
      while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->cv, &p->mu);
      atomic_fetch_sub(&p->n_sleeping, 1);
      pthread_mutex_unlock(&p->mu);
      spin_start = tm_now_ns();
    }
    if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
    seen = g;
    atomic_store_explicit(&w->seen, g, memory_order_relaxed);
    /* Copied before done is bumped: after that the caller may publish the
     * next job over these fields while this thread is still idle. */
    tpool_idle_fn idle = p->idle;
    void *idle_ctx = p->idle_ctx;
    uintptr_t idle_arg = p->idle_arg;
    p->fn(p->ctx, w->ith, p->n_threads);
    atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel);
    if (idle) {
      STEP_PROF_BEGIN(prof_t0);
      idle(idle_ctx, idle_arg, p, w->ith, p->n_threads);
      STEP_PROF_END(STEP_PROF_IDLE, w->ith, prof_t0, 0);
    }
  }
}

struct tpool *tpool_new(int n_threads, struct tm_err *err) {
  if (n_threads < 1 || n_threads > 1024) {
    tm_errf(err, "thread count %d out of range (1..1024)", n_threads);
    return NULL;
  }
  struct tpool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
  if (!p) {
    tm_errf(err, "out of memory creating the thread pool");
    return NULL;
  }
  memset(p, 0, sizeof *p);
  atomic_init(&p->gen, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->n_sleeping, 0);
  atomic_init(&p->stop, false);
  p->n_threads = n_threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (n_threads > 1) {
    size_t bytes = ((size_t)n_threads - 1) * sizeof *p->workers; /* a multiple of 64 */
    p->workers = aligned_alloc(64, bytes);
    if (p->workers) memset(p->workers, 0, bytes);
    if (!p->workers) {
      tpool_free(p);
      tm_errf(err, "out of memory creating the thread pool");
      return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
      struct tpool_worker *w = &p->workers[i - 1];
      w->pool = p;
      w->ith = i;
      atomic_init(&w->seen, 0);
      int rc = pthread_create(&w->thread, NULL, worker_main, w);
      if (rc != 0) {
        tpool_free(p);
        tm_errf(err, "cannot start worker thread %d of %d: %s", i, n_threads, strerror(rc));
        return NULL;
      }
      p->n_started++;
    }
  }
  return p;
}

void tpool_free(struct tpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, true);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_started; i++) pthread_join(p->workers[i].thread, NULL);
  free(p->workers);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

int tpool_threads(const struct tpool *p) { return p->n_threads; }

bool tpool_idle_over(struct tpool *p, int ith) {
  if (ith == 0)
    return atomic_load_explicit(&p->done, memory_order_acquire) >= p->n_threads - 1;
  return atomic_load_explicit(&p->gen, memory_order_acquire) !=
             atomic_load_explicit(&p->workers[ith - 1].seen, memory_order_relaxed) ||
         atomic_load_explicit(&p->stop, memory_order_acquire);
}

void tpool_run(struct tpool *p, tpool_fn fn, void *ctx) {
  tpool_run_idle(p, fn, ctx, NULL, NULL, 0);
}

void tpool_run_idle(struct tpool *p, tpool_fn fn, void *ctx, tpool_idle_fn idle,
                    void *idle_ctx, uintptr_t arg) {
  if (p->n_threads == 1) {
    fn(ctx, 0, 1);
    return;
  }
  p->fn = fn;
  p->ctx = ctx;
  p->idle = idle;
  p->idle_ctx = idle_ctx;
  p->idle_arg = arg;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  atomic_fetch_add(&p->gen, 1); /* seq_cst: ordered before the n_sleeping read */
  if (atomic_load(&p->n_sleeping) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  fn(ctx, 0, p->n_threads);
  if (idle) {
    STEP_PROF_BEGIN(prof_t0);
    idle(idle_ctx, arg, p, 0, p->n_threads);
    STEP_PROF_END(STEP_PROF_IDLE, 0, prof_t0, 0);
  }
  int want = p->n_threads - 1;
  int iter = 0;
  while (atomic_load_explicit(&p->done, memory_order_acquire) < want) {
    TP_PAUSE();
    /* More threads than cores: let the worker we wait for run. */
    if (++iter >= 64) {
      iter = 0;
      sched_yield();
    }
  }
}
