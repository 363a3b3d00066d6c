/* step_prof: see step_prof.h. Only a -DTM_STEP_PROFILE build has code here. */
#include "engine/step_prof.h"

#ifdef TM_STEP_PROFILE
#include <stdatomic.h>
#include <string.h>

/* One buffer per thread index, each with its own count on its own cache
 * line: a shared counter would move a cache line between the cores at every
 * event (measured: it added ~0.6 us to every hand-off it was meant to time).
 * 1 Mi events a thread (32 MiB, untouched until used): some 1,000 decode
 * steps of a 28-layer model. Threads past STEP_PROF_THREADS are not recorded. */
#define STEP_PROF_THREADS 8
#define STEP_PROF_CAP (1L << 20)

static struct step_prof_event events[STEP_PROF_THREADS][STEP_PROF_CAP];
static struct {
  _Alignas(64) long n;
} counts[STEP_PROF_THREADS];
static atomic_bool enabled;

void step_prof_add(enum step_prof_kind kind, int ith, uint64_t t0, uint64_t bytes) {
  if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return;
  const uint64_t t1 = step_prof_clock();
  if (ith < 0 || ith >= STEP_PROF_THREADS) return;
  long i = counts[ith].n++; /* only thread ith writes its buffer */
  if (i < STEP_PROF_CAP)
    events[ith][i] = (struct step_prof_event){t0, t1, bytes, (uint32_t)ith, (uint32_t)kind};
}

/* Enabling and disabling happen while the pool is between jobs (the reader
 * decodes on the caller's thread), so the counts are not being written. */
void step_prof_enable(bool on) { atomic_store(&enabled, on); }

long step_prof_count(void) {
  long n = 0;
  for (int t = 0; t < STEP_PROF_THREADS; t++) n += counts[t].n;
  return n;
}

long step_prof_copy(struct step_prof_event *out, long cap) {
  long n = 0;
  for (int t = 0; t < STEP_PROF_THREADS; t++) {
    long k = counts[t].n < STEP_PROF_CAP ? counts[t].n : STEP_PROF_CAP;
    if (k > cap - n) k = cap - n;
    memcpy(out + n, events[t], sizeof *out * (size_t)k);
    n += k;
  }
  return n;
}

void step_prof_clear(void) {
  for (int t = 0; t < STEP_PROF_THREADS; t++) counts[t].n = 0;
}
#else
typedef int step_prof_unused; /* ISO C: a translation unit is not empty */
#endif
