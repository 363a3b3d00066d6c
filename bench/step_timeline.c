/* step_timeline: where the time of a decode step goes, from a timeline of
 * every matrix chunk, attention item and idle stretch on every thread (the
 * engine's step_prof.h). Not a test: a measurement tool for engine work
 * (bench/RESULTS.md, docs/engine.md).
 *
 * It decodes REPS x STEPS greedy steps (after one warm-up repetition) and
 * prints, per step on average:
 *   - each thread's time in matrix chunks (with the weights it read and its
 *     rate while in them), in attention items and in idle work;
 *   - how long N, ..., 1 or 0 of the N threads were inside a matrix chunk,
 *     and the rate of the weights read meanwhile (each chunk's bytes spread
 *     evenly over its duration): with the probe's reading beside it, this
 *     splits the distance to the ceiling into "streaming slower than the
 *     probe" and "not streaming";
 *   - the weight bytes the matrix chunks read per step;
 *   - the step split into the caller's matrix jobs, its attention jobs and
 *     the rest (the serial steps between them: norms, activation
 *     quantization, residual adds, the greedy pick);
 *   - per thread, the share of the matrix jobs in which its last chunk ended
 *     last (the thread the others waited for);
 *   - per kind of matrix job (told apart by its weight bytes): count, mean
 *     time, the gap between the first and the last thread's last chunk end,
 *     how long after the publication the latest thread started its first
 *     chunk, and how long after the last chunk ended the caller went on.
 *
 * The engine records nothing unless compiled with -DTM_STEP_PROFILE, so this
 * tool is built from the sources (the test build makes it as
 * build-test/tests/tokmeter-step-timeline, and tests/cli/test_step_timeline.sh
 * runs it on a fixture model), or by hand:
 *   cc -O3 -DNDEBUG -D_GNU_SOURCE -DTM_STEP_PROFILE -Isrc bench/step_timeline.c \
 *      src/engine/[a-z]*.c src/gguf/[a-z]*.c src/util/[a-z]*.c -lpthread -lm \
 *      -o /tmp/step_timeline
 *   /tmp/step_timeline MODEL.gguf [THREADS [REPS [STEPS [--copy]]]]
 * (defaults 2 threads (at most 8), 2 x 128 steps; --copy: the weights from an anonymous
 * copy, engine option hugepages). Recording costs a few nanoseconds per
 * event, ~2,000 events a step: well under 1% of a step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/step_prof.h"
#include "util/clock.h"

#ifndef TM_STEP_PROFILE
#error "build with -DTM_STEP_PROFILE (see the comment at the top)"
#endif

#define MAX_THREADS 8 /* as step_prof.c records */
#define MAX_JOB_KINDS 16

static int arg_int(const char *s, int lo, int hi, const char *what) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "step_timeline: %s must be an integer in %d..%d, got '%s'\n", what, lo, hi,
            s);
    exit(2);
  }
  return (int)v;
}

static int by_start(const void *a, const void *b) {
  const struct step_prof_event *x = a, *y = b;
  return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

struct edge {
  uint64_t t;
  double rate; /* bytes per clock tick, + at a chunk's start, - at its end */
  int d;       /* +1 start, -1 end */
};
static int by_time(const void *a, const void *b) {
  const struct edge *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->d - y->d; /* ends first: touching chunks do not overlap */
}

struct job_kind {
  uint64_t bytes;
  long n;
  double ticks, gap, late_start, tail;
};

int main(int argc, char **argv) {
  if (argc < 2 || argc > 6) {
    fprintf(stderr, "usage: step_timeline MODEL.gguf [THREADS [REPS [STEPS [--copy]]]]\n");
    return 2;
  }
  struct engine_options o;
  engine_options_init(&o);
  o.n_threads = argc > 2 ? arg_int(argv[2], 1, MAX_THREADS, "THREADS") : 2;
  const int reps = argc > 3 ? arg_int(argv[3], 1, 100, "REPS") : 2;
  const int steps = argc > 4 ? arg_int(argv[4], 2, 4096, "STEPS") : 128;
  if (argc > 5 && strcmp(argv[5], "--copy") != 0) {
    fprintf(stderr, "step_timeline: unknown option '%s'\n", argv[5]);
    return 2;
  }
  o.hugepages = argc > 5;
  o.n_ctx = (uint32_t)steps;
  struct tm_err err = {{0}};
  struct engine *e = engine_load(argv[1], &o, &err);
  if (!e) {
    fprintf(stderr, "step_timeline: %s\n", err.msg);
    return 2;
  }
  struct engine_info info;
  engine_get_info(e, &info);
  float *logits = malloc(sizeof(float) * info.n_vocab);
  if (!logits) return 1;

  uint64_t ns0 = 0, c0 = 0;
  for (int r = -1; r < reps; r++) { /* r = -1: the warm-up, not recorded */
    engine_reset(e);
    int32_t tok = 1;
    if (r == 0) {
      step_prof_clear();
      step_prof_enable(true);
      ns0 = tm_now_ns();
      c0 = step_prof_clock();
    }
    for (int s = 0; s < steps; s++) {
      STEP_PROF_BEGIN(t0);
      if (engine_decode_greedy(e, tok, logits, &tok, &err) != 0) {
        fprintf(stderr, "step_timeline: decode failed: %s\n", err.msg);
        return 1;
      }
      STEP_PROF_END(STEP_PROF_STEP, 0, t0, 0);
    }
  }
  step_prof_enable(false);
  const double ticks_per_ns = (double)(step_prof_clock() - c0) / (double)(tm_now_ns() - ns0);
  const long recorded = step_prof_count();
  struct step_prof_event *ev = malloc(sizeof *ev * (size_t)(recorded ? recorded : 1));
  struct edge *edges = malloc(sizeof *edges * (size_t)(2 * recorded + 1));
  if (!ev || !edges) return 1;
  const long n = step_prof_copy(ev, recorded), dropped = recorded - n;
  qsort(ev, (size_t)n, sizeof *ev, by_start);
  const int nth = o.n_threads;
  const double ns = 1.0 / ticks_per_ns; /* ns per tick */

  double step_ticks = 0, in_kind[MAX_THREADS][4] = {{0}}, bytes[MAX_THREADS] = {0};
  long n_steps = 0, n_edges = 0;
  for (long i = 0; i < n; i++) {
    const struct step_prof_event *v = &ev[i];
    double d = (double)(v->t1 - v->t0);
    if (v->kind == STEP_PROF_STEP) step_ticks += d, n_steps++;
    if (v->ith >= (uint32_t)nth || v->kind > STEP_PROF_IDLE) continue;
    in_kind[v->ith][v->kind] += d;
    if (v->kind == STEP_PROF_CHUNK) {
      bytes[v->ith] += (double)v->bytes;
      double rate = d > 0 ? (double)v->bytes / d : 0;
      edges[n_edges++] = (struct edge){v->t0, rate, +1};
      edges[n_edges++] = (struct edge){v->t1, rate, -1};
    }
  }
  if (n_steps == 0) {
    fprintf(stderr, "step_timeline: no steps recorded\n");
    return 1;
  }
  const double per_step = 1.0 / (double)n_steps;
  const double step_ms = step_ticks * per_step * ns / 1e6;
  printf("%s, %d thread%s, %ld steps recorded (%ld events, %ld dropped), %.3f ms a step "
         "(%.1f tok/s)\n",
         argv[1], nth, nth == 1 ? "" : "s", n_steps, n, dropped, step_ms, 1e3 / step_ms);
  const char *kind_name[4] = {"", "matrix chunks", "attention", "idle work"};
  for (int t = 0; t < nth; t++)
    for (int k = STEP_PROF_CHUNK; k <= STEP_PROF_IDLE; k++) {
      printf("  thread %d %-13s %7.3f ms (%4.1f%%)", t, kind_name[k],
             in_kind[t][k] * per_step * ns / 1e6, 100 * in_kind[t][k] / step_ticks);
      if (k == STEP_PROF_CHUNK && in_kind[t][k] > 0)
        printf(", %.1f MB, %.1f GB/s while in them", bytes[t] * per_step / 1e6,
               bytes[t] / (in_kind[t][k] * ns));
      printf("\n");
    }

  /* Sweep the chunk edges: time and bytes with 0, 1, 2 threads streaming. */
  qsort(edges, (size_t)n_edges, sizeof *edges, by_time);
  double t_in[MAX_THREADS + 1] = {0}, b_in[MAX_THREADS + 1] = {0}, rate = 0;
  int active = 0;
  for (long i = 0; i + 1 < n_edges; i++) {
    active += edges[i].d;
    rate += edges[i].d * edges[i].rate;
    double dt = (double)(edges[i + 1].t - edges[i].t);
    if (active >= 0 && active <= MAX_THREADS) t_in[active] += dt, b_in[active] += rate * dt;
  }
  /* Time outside any chunk within the steps: the step total minus the rest. */
  t_in[0] = step_ticks;
  for (int k = 1; k <= nth; k++) t_in[0] -= t_in[k];
  for (int k = nth; k >= 0; k--) {
    printf("  %d thread%s in a matrix chunk: %7.3f ms (%4.1f%%)", k, k == 1 ? " " : "s",
           t_in[k] * per_step * ns / 1e6, 100 * t_in[k] / step_ticks);
    if (k > 0 && t_in[k] > 0) printf(", weights read at %.1f GB/s", b_in[k] / (t_in[k] * ns));
    printf("\n");
  }

  /* Matrix jobs by their weight bytes: chunks inside each job's interval. */
  struct job_kind kinds[MAX_JOB_KINDS];
  int n_kinds = 0;
  long first_chunk = 0; /* ev is sorted by start: chunks of later jobs start later */
  long ended_last[MAX_THREADS] = {0}, n_jobs_all = 0;
  double job_ticks[2] = {0, 0}; /* the caller's matrix jobs, attention jobs */
  for (long i = 0; i < n; i++) {
    if (ev[i].kind == STEP_PROF_MM_JOB) job_ticks[0] += (double)(ev[i].t1 - ev[i].t0);
    if (ev[i].kind == STEP_PROF_ATTN_JOB) job_ticks[1] += (double)(ev[i].t1 - ev[i].t0);
  }
  for (long i = 0; i < n; i++) {
    const struct step_prof_event *j = &ev[i];
    if (j->kind != STEP_PROF_MM_JOB) continue;
    uint64_t end[MAX_THREADS] = {0}, start[MAX_THREADS] = {0};
    while (first_chunk < n && ev[first_chunk].t0 < j->t0) first_chunk++;
    for (long c = first_chunk; c < n && ev[c].t0 < j->t1; c++) {
      const struct step_prof_event *v = &ev[c];
      if (v->kind != STEP_PROF_CHUNK || v->ith >= (uint32_t)nth) continue;
      if (!start[v->ith] || v->t0 < start[v->ith]) start[v->ith] = v->t0;
      if (v->t1 > end[v->ith]) end[v->ith] = v->t1;
    }
    uint64_t last_end = 0, first_end = UINT64_MAX, last_start = 0;
    int seen = 0;
    for (int t = 0; t < nth; t++) {
      if (!end[t]) continue;
      seen++;
      if (end[t] > last_end) last_end = end[t];
      if (end[t] < first_end) first_end = end[t];
      if (start[t] > last_start) last_start = start[t];
    }
    if (!seen) continue;
    if (seen == nth) {
      int last = 0;
      for (int t = 1; t < nth; t++)
        if (end[t] > end[last]) last = t;
      ended_last[last]++;
      n_jobs_all++;
    }
    int k = 0;
    while (k < n_kinds && kinds[k].bytes != j->bytes) k++;
    if (k == n_kinds) {
      if (n_kinds == MAX_JOB_KINDS) continue;
      kinds[n_kinds++] = (struct job_kind){.bytes = j->bytes};
    }
    struct job_kind *jk = &kinds[k];
    jk->n++;
    jk->ticks += (double)(j->t1 - j->t0);
    jk->gap += seen == nth ? (double)(last_end - first_end) : 0;
    jk->late_start += (double)(last_start - j->t0);
    jk->tail += j->t1 > last_end ? (double)(j->t1 - last_end) : 0;
  }
  const double to_ms = per_step * ns / 1e6;
  printf("  the step: matrix jobs %.3f ms, attention jobs %.3f ms, the rest %.3f ms\n",
         job_ticks[0] * to_ms, job_ticks[1] * to_ms,
         (step_ticks - job_ticks[0] - job_ticks[1]) * to_ms);
  if (nth > 1 && n_jobs_all > 0) {
    printf("  matrix jobs whose last chunk ended on thread:");
    for (int t = 0; t < nth; t++)
      printf(" %d %.0f%%%s", t, 100.0 * (double)ended_last[t] / (double)n_jobs_all,
             t + 1 < nth ? "," : "\n");
  }
  double all_bytes = 0;
  for (int t = 0; t < nth; t++) all_bytes += bytes[t];
  printf("  weights read per step in matrix chunks: %.0f bytes\n", all_bytes * per_step);
  printf("  matrix jobs (by weight bytes): per step, mean us, threads' last chunks ended us "
         "apart, later thread's first chunk began us after publication, caller went on us "
         "after the last chunk\n");
  for (int k = 0; k < n_kinds; k++) {
    const struct job_kind *jk = &kinds[k];
    const double c = ns / 1e3 / (double)jk->n;
    printf("    %10.2f MB: %6.1f, %8.1f, %6.1f, %5.2f, %5.2f\n", (double)jk->bytes / 1e6,
           (double)jk->n * per_step, jk->ticks * c, jk->gap * c, jk->late_start * c,
           jk->tail * c);
  }
  free(edges);
  free(ev);
  free(logits);
  engine_free(e);
  return 0;
}
