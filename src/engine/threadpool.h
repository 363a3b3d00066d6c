/* threadpool: N-1 worker pthreads plus the caller, for the engine's parallel
 * loops. tpool_run(fn, ctx) runs fn(ctx, ith, nth) on every thread (the caller
 * is thread 0) and returns when all have finished; work inside is handed out by
 * the caller's own atomic chunk counters. Between runs of one forward pass the
 * workers spin briefly (a pass issues hundreds of runs per token), then sleep
 * on a futex/condvar: an idle engine burns no CPU. No OpenMP. */
#ifndef TM_THREADPOOL_H
#define TM_THREADPOOL_H

#include <stdint.h>

#include "util/err.h"

struct tpool;
typedef void (*tpool_fn)(void *ctx, int ith, int nth);

struct tpool *tpool_new(int n_threads, struct tm_err *err);
void tpool_free(struct tpool *p);
int tpool_threads(const struct tpool *p);
/* Runs fn on all threads; returns when every thread returned from fn. */
void tpool_run(struct tpool *p, tpool_fn fn, void *ctx);

#endif
