/* step_prof: see step_prof.h. Only a -DTM_STEP_PROFILE build has code here. */
#include "engine/step_prof.h"

#ifdef TM_STEP_PROFILE
#include <stdatomic.h>

/* 4 Mi events: ~128 MiB, some 1,700 decode steps of a 28-layer model. */
#define STEP_PROF_CAP (1L << 22)

static struct step_prof_event events[STEP_PROF_CAP];
static atomic_long n_events;
static atomic_bool enabled;

void step_prof_add(enum step_prof_kind kind, int ith, uint64_t t0, uint64_t bytes) {
  if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return;
  const uint64_t t1 = step_prof_clock();
  long i = atomic_fetch_add_explicit(&n_events, 1, memory_order_relaxed);
  if (i < STEP_PROF_CAP)
    events[i] = (struct step_prof_event){t0, t1, bytes, (uint32_t)ith, (uint32_t)kind};
}

void step_prof_enable(bool on) { atomic_store(&enabled, on); }

const struct step_prof_event *step_prof_events(long *n, long *dropped) {
  long got = atomic_load(&n_events);
  *n = got < STEP_PROF_CAP ? got : STEP_PROF_CAP;
  *dropped = got - *n;
  return events;
}

void step_prof_clear(void) { atomic_store(&n_events, 0); }
#else
typedef int step_prof_unused; /* ISO C: a translation unit is not empty */
#endif
