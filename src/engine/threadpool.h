/* threadpool: N-1 worker pthreads plus the caller, for the engine's parallel
 * loops. tpool_run(fn, ctx) runs fn(ctx, ith, nth) on every thread (the caller
 * is thread 0) and returns when all have finished; work inside is handed out by
 * the caller's own atomic chunk counters. Between runs of one forward pass the
 * workers spin briefly (a pass issues hundreds of runs per token), then sleep
 * on a futex/condvar: an idle engine burns no CPU. No OpenMP.
 *
 * Idle work (tpool_run_idle): a thread that finished its share of a job
 * would only spin until the job ends (the caller) or the next job starts (a
 * worker); it may do useful work meanwhile that changes no result, such as
 * prefetching the next job's data, polling tpool_idle_over to stop. */
#ifndef TM_THREADPOOL_H
#define TM_THREADPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

struct tpool;
typedef void (*tpool_fn)(void *ctx, int ith, int nth);
/* Idle work of thread ith after its share of a job: arg is the value given
 * to tpool_run_idle for that job. It must change no state another thread
 * reads, and return soon after tpool_idle_over(p, ith) becomes true. */
typedef void (*tpool_idle_fn)(void *ctx, uintptr_t arg, struct tpool *p, int ith, int nth);

struct tpool *tpool_new(int n_threads, struct tm_err *err);
void tpool_free(struct tpool *p);
int tpool_threads(const struct tpool *p);
/* Runs fn on all threads; returns when every thread returned from fn. */
void tpool_run(struct tpool *p, tpool_fn fn, void *ctx);
/* tpool_run, and each thread then runs idle(idle_ctx, arg, ...) while it
 * would wait (never with one thread: nobody waits). idle_ctx must stay valid
 * until the next tpool_run* returns; idle may still be running on a worker
 * after this call returns, until the next job starts. */
void tpool_run_idle(struct tpool *p, tpool_fn fn, void *ctx, tpool_idle_fn idle,
                    void *idle_ctx, uintptr_t arg);
/* For idle work: true once thread ith has something else to do (a worker: a
 * new job was published or the pool is stopping; the caller, ith 0: every
 * worker finished its share). */
bool tpool_idle_over(struct tpool *p, int ith);

#endif
