/* clock: CLOCK_MONOTONIC in integer nanoseconds, the only clock for durations. */
#ifndef TM_CLOCK_H
#define TM_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t tm_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
