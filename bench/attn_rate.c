/* attn_rate: the decode attention kernel (ops->attn_rows, two query rows per
 * KV head as in Qwen3) on its own, from DRAM or from cache, in ns per
 * (KV head, cached position) per thread. Not a test: a measurement tool for
 * engine work (bench/RESULTS.md, docs/engine.md).
 *
 * HEADS heads of N_POS cached positions (head size 128, F16, each head's K
 * and V rows contiguous and on 2 MiB pages, as in the engine's cache) are
 * split over THREADS threads; each pass runs every head once, the best of 5
 * passes counts. With HEADS x N_POS x 512 bytes well beyond the caches the
 * rows come from DRAM; with HEADS = THREADS and a small N_POS they stay in L1
 * and L2 and the figure is the arithmetic alone. A core reads ~17 GB/s on
 * the team's VM: 30 ns per (head, position), the rate to compare with.
 *
 * Build (against a build dir's static libraries) and run:
 *   cc -O2 -Isrc bench/attn_rate.c build/libtm_engine.a build/libtm_gguf.a \
 *      build/libtm_util.a -lpthread -lm -o /tmp/attn_rate
 *   /tmp/attn_rate N_POS HEADS THREADS [PATH]
 *     e.g. 4096 224 2 (DRAM), 1024 2 2 (cache); PATH one of the kernel paths'
 *     names (scalar, avx2, avx512, ...), by default the best for this CPU. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/kernels.h"
#include "util/clock.h"
#include "util/fp16.h"

#define HD 128
#define MAX_THREADS 64

static int n_pos, n_heads, n_threads;
static uint16_t *kc, *vc;
static const struct kernel_ops *ops;
static pthread_barrier_t barrier;
static double best_ns[MAX_THREADS];

static void *run(void *arg) {
  long id = (long)arg;
  _Alignas(64) float q[2 * HD], out[2 * HD];
  for (int i = 0; i < 2 * HD; i++) q[i] = (float)((i * 37 % 101) - 50) / 25.0f;
  double best = 1e300;
  for (int pass = 0; pass < 5; pass++) {
    pthread_barrier_wait(&barrier);
    uint64_t t0 = tm_now_ns();
    for (int h = (int)id; h < n_heads; h += n_threads) {
      size_t off = (size_t)h * n_pos * HD;
      ops->attn_rows(q, HD, 2, kc + off, vc + off, HD, n_pos, HD, 0.088f, out, HD);
    }
    double ns = (double)(tm_now_ns() - t0);
    if (ns < best) best = ns;
  }
  best_ns[id] = best;
  return NULL;
}

static uint16_t *cache_alloc(size_t elems) {
  const size_t huge = (size_t)1 << 21;
  size_t bytes = (elems * sizeof(uint16_t) + huge - 1) & ~(huge - 1);
  uint16_t *p = aligned_alloc(huge, bytes);
  if (!p) {
    fprintf(stderr, "attn_rate: out of memory\n");
    exit(2);
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: attn_rate N_POS HEADS THREADS [PATH]\n");
    return 2;
  }
  n_pos = atoi(argv[1]), n_heads = atoi(argv[2]), n_threads = atoi(argv[3]);
  if (n_pos < 1 || n_heads < 1 || n_threads < 1 || n_threads > MAX_THREADS ||
      n_heads < n_threads) {
    fprintf(stderr, "attn_rate: need N_POS >= 1, THREADS in 1..%d, HEADS >= THREADS\n",
            MAX_THREADS);
    return 2;
  }
  ops = kernels_get(kernels_best_for_cpu());
  if (argc == 5) {
    ops = NULL;
    for (int p = KERNEL_SCALAR; p < KERNEL_PATH_COUNT; p++)
      if (strcmp(argv[4], kernel_path_name((enum kernel_path)p)) == 0)
        ops = kernels_get((enum kernel_path)p);
    if (!ops) {
      fprintf(stderr, "attn_rate: no kernel path '%s' in this build or on this CPU\n", argv[4]);
      return 2;
    }
  }
  size_t n = (size_t)n_heads * n_pos * HD;
  kc = cache_alloc(n), vc = cache_alloc(n);
  for (size_t i = 0; i < n; i++) {
    kc[i] = tm_fp32_to_fp16((float)((i * 7919) % 2001) / 1000.0f - 1.0f);
    vc[i] = tm_fp32_to_fp16((float)((i * 104729) % 2001) / 2000.0f - 0.5f);
  }
  pthread_barrier_init(&barrier, NULL, (unsigned)n_threads);
  pthread_t th[MAX_THREADS];
  for (long i = 0; i < n_threads; i++) pthread_create(&th[i], NULL, run, (void *)i);
  for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
  double worst = 0;
  for (int i = 0; i < n_threads; i++)
    if (best_ns[i] > worst) worst = best_ns[i];
  double per_thread = (double)n_heads / n_threads * n_pos;
  printf("%s: %d positions x %d heads, %d thread(s): %.1f ns per (head, position) per thread, "
         "K+V read at %.1f GB/s\n",
         kernel_path_name(ops->path), n_pos, n_heads, n_threads, worst / per_thread,
         4.0 * (double)n / worst);
  return 0;
}
