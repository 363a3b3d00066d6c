/* decode_stream: how close a decode kernel streams to the probe's read loop,
 * on its own. Not a test: a measurement tool for engine work
 * (bench/RESULTS.md, docs/engine.md).
 *
 * A 1 GiB matrix of one weight type (n = 1024 columns, random bytes with sane
 * block scales) on transparent huge pages is read by ops->gemm with ncols = 1
 * the way the engine's decode does it: each thread its half of the rows, in
 * chunks of the engine's decode chunk budget per call
 * (engine_auto_decode_chunk_bytes: 2 MiB on AMD CPUs, 256 KiB elsewhere;
 * CHUNK_KB in the environment overrides it). Before 2026-12-01 the calls
 * were always 256 KiB, which on the Zen 5 read 0.82-0.86 of the loop at 2
 * threads where the engine's 2 MiB calls read 0.92-0.95. The same bytes are then
 * read as the probe reads memory (machine_read_bw_of_at: four quarters, one
 * line of each per turn, its prefetch distances in turn; src/machine/), and
 * the ratio printed: what the kernel's
 * access pattern and arithmetic cost against the best read of the same
 * memory. Best of 4 passes each, at 1 and 2 threads, twice.
 *
 * Build (against a build dir's static libraries) and run:
 *   cc -O2 -march=native -Isrc bench/decode_stream.c build/libtm_engine.a \
 *      build/libtm_machine.a build/libtm_gguf.a build/libtm_util.a -ljansson \
 *      -lpthread -lm -o /tmp/decode_stream
 *   /tmp/decode_stream [TYPE [PATH]]   (GGML type id: 2 Q4_0 (default), 8 Q8_0,
 *   14 Q6_K; PATH a kernel path's name (scalar, avx2, avx512, avx512_vnni),
 *   by default the best for this CPU) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/kernels.h"
#include "engine/mm_layout.h"
#include "machine/probe.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const struct kernel_ops *ops;
static uint8_t *w;
static size_t rb;
static int64_t rows, n = 1024, chunk;
static int type, nth;
static const void *act;
static float *out;
static pthread_barrier_t bar;
static double best;

static void *run(void *arg) {
  const int t = (int)(intptr_t)arg;
  const int64_t r0 = rows * t / nth, r1 = rows * (t + 1) / nth;
  for (int pass = 0; pass < 4; pass++) {
    pthread_barrier_wait(&bar);
    double t0 = now_s();
    for (int64_t r = r0; r < r1; r += chunk)
      ops->gemm[type](n, w, rb, r, r + chunk < r1 ? r + chunk : r1, act, 0, 1, out, rows);
    pthread_barrier_wait(&bar);
    double dt = now_s() - t0;
    if (t == 0 && (pass == 0 || dt < best)) best = dt;
  }
  return NULL;
}

static double measure_kernel(int threads) {
  nth = threads;
  pthread_barrier_init(&bar, NULL, (unsigned)threads);
  pthread_t th[2];
  for (int t = 1; t < threads; t++) pthread_create(&th[t], NULL, run, (void *)(intptr_t)t);
  run((void *)0);
  for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
  pthread_barrier_destroy(&bar);
  return (double)rows * (double)rb / best / 1e9;
}

/* The probe's own measurement of the same bytes (its loop, its prefetch
 * distances in turn, its thread slices): best of 4 passes. */
static double measure_read(int threads) {
  struct tm_err err = {{0}};
  double bw = 0;
  if (machine_read_bw_of_at(w, (uint64_t)rows * rb, (uint32_t)threads, 4, &bw, &err) != 0) {
    fprintf(stderr, "decode_stream: %s\n", err.msg);
    exit(1);
  }
  return bw / 1e9;
}

int main(int argc, char **argv) {
  type = argc > 1 ? atoi(argv[1]) : GGML_TYPE_Q4_0;
  if (type != GGML_TYPE_Q4_0 && type != GGML_TYPE_Q8_0 && type != GGML_TYPE_Q6_K) {
    fprintf(stderr, "decode_stream: TYPE must be 2 (Q4_0), 8 (Q8_0) or 14 (Q6_K)\n");
    return 2;
  }
  ops = kernels_get(KERNEL_AUTO);
  if (argc > 2) {
    ops = NULL;
    for (int p = KERNEL_SCALAR; p < KERNEL_PATH_COUNT; p++)
      if (strcmp(argv[2], kernel_path_name((enum kernel_path)p)) == 0)
        ops = kernels_get((enum kernel_path)p);
    if (!ops) {
      fprintf(stderr, "decode_stream: no kernel path '%s' on this CPU and build\n", argv[2]);
      return 2;
    }
  }
  rb = type == GGML_TYPE_Q4_0 ? 576 : type == GGML_TYPE_Q8_0 ? 1088 : 840;
  rows = (int64_t)((1ull << 30) / rb);
  size_t chunk_bytes = engine_auto_decode_chunk_bytes();
  const char *ckb = getenv("CHUNK_KB");
  if (ckb && atol(ckb) > 0) chunk_bytes = (size_t)atol(ckb) * 1024;
  chunk = (int64_t)((chunk_bytes / rb + 15) / 16 * 16);
  size_t bytes = ((size_t)rows * rb + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  w = aligned_alloc(2u << 20, bytes);
  out = malloc(sizeof(float) * (size_t)rows);
  void *a = malloc(8192);
  if (!w || !out || !a) return 1;
  madvise(w, bytes, MADV_HUGEPAGE);
  uint64_t s = 1;
  for (size_t i = 0; i < bytes; i += 8) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    memcpy(w + i, &s, 8);
  }
  /* fp16 scales of moderate size (no infinities, NaNs or subnormals) */
  const size_t bb = type == GGML_TYPE_Q4_0 ? 18 : type == GGML_TYPE_Q8_0 ? 34 : 210;
  const size_t d_at = type == GGML_TYPE_Q6_K ? 208 : 0;
  for (size_t i = 0; i + bb <= (size_t)rows * rb; i += bb) w[i + d_at + 1] = 0x20;
  float x[1024];
  for (int i = 0; i < 1024; i++) x[i] = (float)((i * 37) % 17 - 8) / 8.0f;
  if (type == GGML_TYPE_Q6_K) ops->quantize_q8k(x, a, n);
  else ops->quantize_q8(x, a, n);
  act = a;
  printf("%s, type %d, %s kernels, %lld rows of %zu bytes in calls of %lld rows\n",
         "decode_stream", type, ops->name, (long long)rows, rb, (long long)chunk);
  for (int round = 0; round < 2; round++)
    for (int t = 1; t <= 2; t++) {
      double g = measure_kernel(t), r = measure_read(t);
      printf("%d thread(s): kernel %.1f GB/s, read loop %.1f GB/s, kernel / read %.3f\n", t, g, r,
             g / r);
    }
  return 0;
}
