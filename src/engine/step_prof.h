/* step_prof: an optional timeline of the engine's parallel work, for engine
 * measurement only (bench/step_timeline.c reads it). Private to the engine.
 *
 * It exists in a build compiled with -DTM_STEP_PROFILE (a scratch build of
 * the sources; bench/step_timeline.c says how). In every other build the
 * macros below expand to nothing and step_prof.c holds no code, so the
 * engine neither pays for it nor changes.
 *
 * What is recorded, each as (kind, thread, start, end, bytes): every matrix
 * chunk a thread computes (bytes: the weights it read), every attention item,
 * every stretch of idle work (warm.h), and, on the caller, every parallel
 * matrix job (bytes: the job's weights) and attention job from just before
 * it is published to just after it returns. Times are the CPU's time-stamp
 * counter on x86-64 (a few nanoseconds to read; converted with a rate the
 * reader measures), CLOCK_MONOTONIC elsewhere, into one buffer per thread
 * (no cache line shared between the threads). Recording is off until
 * step_prof_enable(true); events past a buffer's capacity are dropped and
 * counted. */
#ifndef TM_ENGINE_STEP_PROF_H
#define TM_ENGINE_STEP_PROF_H

#include <stdbool.h>
#include <stdint.h>

enum step_prof_kind {
  STEP_PROF_CHUNK = 1, /* a matrix chunk (a kernel call) */
  STEP_PROF_ATTN,      /* an attention item */
  STEP_PROF_IDLE,      /* idle work between jobs */
  STEP_PROF_MM_JOB,    /* the caller's whole matrix job */
  STEP_PROF_ATTN_JOB,  /* the caller's whole attention job */
  STEP_PROF_STEP       /* a whole decode step (recorded by the reader) */
};

struct step_prof_event {
  uint64_t t0, t1;
  uint64_t bytes;
  uint32_t ith;
  uint32_t kind;
};

#ifdef TM_STEP_PROFILE
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t step_prof_clock(void) { return __rdtsc(); }
#else
#include "util/clock.h"
static inline uint64_t step_prof_clock(void) { return tm_now_ns(); }
#endif
void step_prof_add(enum step_prof_kind kind, int ith, uint64_t t0, uint64_t bytes);
void step_prof_enable(bool on);
/* Events recorded so far, those dropped included; step_prof_copy copies up to
 * cap of the kept ones (thread by thread, each thread's in time order) and
 * returns how many. Call both while no job runs. */
long step_prof_count(void);
long step_prof_copy(struct step_prof_event *out, long cap);
void step_prof_clear(void);
#define STEP_PROF_BEGIN(var) const uint64_t var = step_prof_clock()
#define STEP_PROF_END(kind, ith, var, bytes) step_prof_add((kind), (ith), (var), (bytes))
#else
#define STEP_PROF_BEGIN(var) ((void)0)
#define STEP_PROF_END(kind, ith, var, bytes) ((void)0)
#endif

#endif
