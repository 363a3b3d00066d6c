/* pool (machine-internal): a fixed set of pthreads that run one job at a time
 * and start it together, for timing memory and compute loops.
 *
 * Contract: pool_run(pool, active, fn, arg) releases every worker through one
 * start barrier; workers 0..active-1 run fn(arg, index, active), the others
 * idle; it returns the span from the earliest start to the latest finish in
 * nanoseconds (CLOCK_MONOTONIC), i.e. the wall time of the slowest thread
 * counted from the moment all were released. Not for use outside src/machine/. */
#ifndef TM_MACHINE_POOL_H
#define TM_MACHINE_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

typedef void (*pool_job_fn)(void *arg, uint32_t index, uint32_t active);

/* Per-thread timestamps, each on its own cache line so that writing them does
 * not bounce a shared line between the cores being measured. */
struct pool_slot {
  uint64_t start_ns;
  uint64_t end_ns;
  char pad[48];
};

struct pool_worker {
  struct probe_pool *pool;
  uint32_t index;
};

struct probe_pool {
  uint32_t n;
  uint32_t started;          /* threads actually created */
  pthread_t *threads;
  struct pool_worker *workers;
  struct pool_slot *slots;
  pthread_barrier_t start;   /* n workers + the caller */
  pthread_barrier_t end;
  pthread_mutex_t gate_mutex; /* workers wait at the gate until all exist */
  pthread_cond_t gate_cond;
  bool gate_open;
  pool_job_fn fn;            /* written by the caller before `start` */
  void *arg;
  uint32_t active;
  bool quit;
};

int pool_init(struct probe_pool *pool, uint32_t n, struct tm_err *err);
uint64_t pool_run(struct probe_pool *pool, uint32_t active, pool_job_fn fn, void *arg);
void pool_free(struct probe_pool *pool);

#endif
