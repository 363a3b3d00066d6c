/* pool: see pool.h. The barriers also order memory: everything the caller wrote
 * before the start barrier is visible to the workers, and every slot a worker
 * wrote before the end barrier is visible to the caller. */
#include "machine/pool.h"

#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

static void *pool_main(void *p) {
  struct pool_worker *w = p;
  struct probe_pool *pool = w->pool;
  /* Wait at the gate until every thread exists (or creation failed): only then
   * is it safe to enter barriers sized for n + 1 parties. */
  pthread_mutex_lock(&pool->gate_mutex);
  while (!pool->gate_open && !pool->quit) pthread_cond_wait(&pool->gate_cond, &pool->gate_mutex);
  bool quit = pool->quit;
  pthread_mutex_unlock(&pool->gate_mutex);
  if (quit) return NULL;
  for (;;) {
    pthread_barrier_wait(&pool->start);
    if (pool->quit) break;
    if (w->index < pool->active) {
      struct pool_slot *s = &pool->slots[w->index];
      s->start_ns = tm_now_ns();
      pool->fn(pool->arg, w->index, pool->active);
      s->end_ns = tm_now_ns();
    }
    pthread_barrier_wait(&pool->end);
  }
  return NULL;
}

int pool_init(struct probe_pool *pool, uint32_t n, struct tm_err *err) {
  memset(pool, 0, sizeof *pool);
  if (n == 0) return tm_errf(err, "thread pool: zero threads");
  pool->n = n;
  pool->threads = calloc(n, sizeof *pool->threads);
  pool->workers = calloc(n, sizeof *pool->workers);
  pool->slots = aligned_alloc(64, (size_t)n * sizeof *pool->slots);
  if (!pool->threads || !pool->workers || !pool->slots) {
    free(pool->threads), free(pool->workers), free(pool->slots);
    memset(pool, 0, sizeof *pool);
    return tm_errf(err, "thread pool: out of memory for %u threads", n);
  }
  memset(pool->slots, 0, (size_t)n * sizeof *pool->slots);
  pthread_barrier_init(&pool->start, NULL, n + 1);
  pthread_barrier_init(&pool->end, NULL, n + 1);
  pthread_mutex_init(&pool->gate_mutex, NULL);
  pthread_cond_init(&pool->gate_cond, NULL);
  int rc = 0;
  uint32_t i = 0;
  for (; i < n; i++) {
    pool->workers[i] = (struct pool_worker){pool, i};
    rc = pthread_create(&pool->threads[i], NULL, pool_main, &pool->workers[i]);
    if (rc != 0) break;
  }
  pool->started = i;
  pthread_mutex_lock(&pool->gate_mutex);
  if (rc != 0) pool->quit = true;
  else pool->gate_open = true;
  pthread_cond_broadcast(&pool->gate_cond);
  pthread_mutex_unlock(&pool->gate_mutex);
  if (rc != 0) {
    pool_free(pool);
    return tm_errf(err, "thread pool: cannot start thread %u of %u: %s", i + 1, n, strerror(rc));
  }
  return 0;
}

uint64_t pool_run(struct probe_pool *pool, uint32_t active, pool_job_fn fn, void *arg) {
  if (active > pool->n) active = pool->n;
  pool->fn = fn;
  pool->arg = arg;
  pool->active = active;
  pthread_barrier_wait(&pool->start);
  pthread_barrier_wait(&pool->end);
  uint64_t first = UINT64_MAX, last = 0;
  for (uint32_t i = 0; i < active; i++) {
    if (pool->slots[i].start_ns < first) first = pool->slots[i].start_ns;
    if (pool->slots[i].end_ns > last) last = pool->slots[i].end_ns;
  }
  return last > first ? last - first : 1;
}

void pool_free(struct probe_pool *pool) {
  if (!pool->threads) return;
  /* A race-free shutdown: quit is written before the barrier that releases
   * the workers, and each worker reads it right after that barrier. When
   * thread creation failed, the workers left at the gate and never entered a
   * barrier. */
  if (pool->gate_open) {
    pool->quit = true;
    pthread_barrier_wait(&pool->start);
  }
  for (uint32_t i = 0; i < pool->started; i++) pthread_join(pool->threads[i], NULL);
  pthread_barrier_destroy(&pool->start);
  pthread_barrier_destroy(&pool->end);
  pthread_mutex_destroy(&pool->gate_mutex);
  pthread_cond_destroy(&pool->gate_cond);
  free(pool->threads), free(pool->workers), free(pool->slots);
  memset(pool, 0, sizeof *pool);
}
