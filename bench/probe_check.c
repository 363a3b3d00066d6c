/* probe_check: a plain, independent read-bandwidth loop to check
 * `tokmeter probe` against. Deliberately shares no code or method details with
 * src/machine/: plain C summing 64-bit words (whatever the compiler makes of it
 * at -O2, no intrinsics), fresh threads per pass, timed from before
 * pthread_create to after the last pthread_join.
 *
 * Mode "prefetch" (4th argument): each thread sums the two halves of its
 * slice at once and asks for the words 1 KiB ahead with __builtin_prefetch,
 * the textbook way to keep more misses in flight on one core. Since the
 * probe streams that way (its plain sequential loop left a sixth of one
 * core's bandwidth unused, and the engine's prefetching kernels outran it),
 * a check against sequential loops alone would call a right figure wrong.
 * Mode "quarters": four quarters of the slice at once, one 64-byte line of
 * each per turn, prefetch 2 KiB ahead, the quarters 64 bytes short of a
 * quarter apart (a power-of-two distance puts them on the same DRAM banks):
 * the pattern the probe reads with since 2026-11-30, written here anew.
 *
 * Usage: probe_check BUFFER_BYTES MAX_THREADS [PASSES [plain|prefetch|quarters]]
 * Prints one line per thread count: "threads <t> bytes_s <best>".
 * Build: cc -O2 -pthread bench/probe_check.c -o probe_check */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct slice {
  const uint64_t *p;
  size_t n;
  uint64_t sum;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Four accumulators: with one, a single thread is limited by the chain of
 * dependent adds (one per cycle, plus loop overhead), not by memory. */
static void *sum_slice(void *arg) {
  struct slice *s = arg;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 0;
  for (; i + 4 <= s->n; i += 4) {
    a0 += s->p[i];
    a1 += s->p[i + 1];
    a2 += s->p[i + 2];
    a3 += s->p[i + 3];
  }
  for (; i < s->n; i++) a0 += s->p[i];
  s->sum = a0 + a1 + a2 + a3;
  return NULL;
}

/* Two halves at once, each with a prefetch 1 KiB (128 words) ahead. */
static void *sum_slice_prefetch(void *arg) {
  struct slice *s = arg;
  size_t h = s->n / 2;
  const uint64_t *p = s->p, *q = s->p + h;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 0;
  for (; i + 8 <= h; i += 8) {
    __builtin_prefetch(p + i + 128);
    __builtin_prefetch(q + i + 128);
    for (int k = 0; k < 8; k += 2) {
      a0 += p[i + k];
      a1 += p[i + k + 1];
      a2 += q[i + k];
      a3 += q[i + k + 1];
    }
  }
  for (size_t j = i; j < h; j++) a0 += p[j];    /* the tails of both halves */
  for (size_t j = i; j < h; j++) a2 += q[j];
  for (size_t j = 2 * h; j < s->n; j++) a1 += s->p[j]; /* an odd last word */
  s->sum = a0 + a1 + a2 + a3;
  return NULL;
}

/* Four quarters at once, one line (8 words) of each per turn, prefetch 2 KiB
 * (256 words) ahead; the quarters start q = n/4 - 8 words apart. */
static void *sum_slice_quarters(void *arg) {
  struct slice *s = arg;
  size_t q = s->n / 4 > 64 ? (s->n / 4 - 8) / 8 * 8 : 0;
  const uint64_t *p0 = s->p, *p1 = p0 + q, *p2 = p1 + q, *p3 = p2 + q;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i < q; i += 8) {
    __builtin_prefetch(p0 + i + 256);
    __builtin_prefetch(p1 + i + 256);
    __builtin_prefetch(p2 + i + 256);
    __builtin_prefetch(p3 + i + 256);
    for (int k = 0; k < 8; k++) {
      a0 += p0[i + k];
      a1 += p1[i + k];
      a2 += p2[i + k];
      a3 += p3[i + k];
    }
  }
  for (size_t j = 4 * q; j < s->n; j++) a0 += s->p[j]; /* the slice's last words */
  s->sum = a0 + a1 + a2 + a3;
  return NULL;
}

static void *touch_slice(void *arg) {
  struct slice *s = arg;
  memset((void *)s->p, 1, s->n * sizeof(uint64_t));
  return NULL;
}

static void run(uint64_t *buf, size_t words, int threads, void *(*fn)(void *),
                struct slice *sl, pthread_t *th) {
  size_t per = words / (size_t)threads;
  for (int i = 0; i < threads; i++) {
    sl[i].p = buf + (size_t)i * per;
    sl[i].n = i == threads - 1 ? words - (size_t)i * per : per;
    pthread_create(&th[i], NULL, fn, &sl[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s BUFFER_BYTES MAX_THREADS [PASSES]\n", argv[0]);
    return 2;
  }
  size_t bytes = strtoull(argv[1], NULL, 10);
  int max_threads = atoi(argv[2]);
  int passes = argc > 3 ? atoi(argv[3]) : 5;
  const char *mode = argc > 4 ? argv[4] : "plain";
  void *(*sum_fn)(void *) = strcmp(mode, "prefetch") == 0   ? sum_slice_prefetch
                            : strcmp(mode, "quarters") == 0 ? sum_slice_quarters
                                                            : sum_slice;
  if (bytes < 8 * 1024 * 1024 || max_threads < 1 || passes < 1 ||
      (strcmp(mode, "plain") != 0 && strcmp(mode, "prefetch") != 0 &&
       strcmp(mode, "quarters") != 0)) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  size_t words = bytes / 8;
  /* Transparent huge pages, like the probe's buffer: both measure memory, not
   * the page walks of 4 KiB pages (which cost one core 20-35% here). */
  uint64_t *buf = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) buf = NULL;
  if (buf) madvise(buf, words * 8, MADV_HUGEPAGE);
  struct slice *sl = calloc((size_t)max_threads, sizeof *sl);
  pthread_t *th = calloc((size_t)max_threads, sizeof *th);
  if (!buf || !sl || !th) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  run(buf, words, max_threads, touch_slice, sl, th);
  volatile uint64_t sink = 0;
  for (int t = 1; t <= max_threads; t++) {
    double best = 0;
    for (int pass = 0; pass < passes; pass++) {
      double t0 = now_s();
      run(buf, words, t, sum_fn, sl, th);
      double dt = now_s() - t0;
      for (int i = 0; i < t; i++) sink += sl[i].sum;
      double bw = (double)(words * 8) / dt;
      if (bw > best) best = bw;
    }
    printf("threads %d bytes_s %.0f\n", t, best);
  }
  (void)sink;
  munmap(buf, words * 8), free(sl), free(th);
  return 0;
}
