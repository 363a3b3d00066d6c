/* decode_stream: how close a decode kernel streams to the probe's read loop,
 * on its own. Not a test: a measurement tool for engine work
 * (bench/RESULTS.md, docs/engine.md).
 *
 * A 1 GiB matrix of one weight type (n = 1024 columns, random bytes with sane
 * block scales) on transparent huge pages is read by ops->gemm with ncols = 1
 * the way the engine's decode does it: each thread its half of the rows, in
 * chunks of MM_DECODE_CHUNK_BYTES (256 KiB) per call. The same bytes are then
 * read by the probe's loop (four quarters, one line of each per turn, 2 KiB
 * ahead; src/machine/kernels.c), and the ratio printed: what the kernel's
 * access pattern and arithmetic cost against the best read of the same
 * memory. Best of 4 passes each, at 1 and 2 threads, twice.
 *
 * Build (against a build dir's static libraries) and run:
 *   cc -O2 -march=native -Isrc bench/decode_stream.c build/libtm_engine.a \
 *      build/libtm_gguf.a build/libtm_util.a -lpthread -lm -o /tmp/decode_stream
 *   /tmp/decode_stream [TYPE [PATH]]   (GGML type id: 2 Q4_0 (default), 8 Q8_0,
 *   14 Q6_K; PATH a kernel path's name (scalar, avx2, avx512, avx512_vnni),
 *   by default the best for this CPU) */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "engine/kernels.h"
#include "engine/mm_layout.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const struct kernel_ops *ops;
static uint8_t *w;
static size_t rb;
static int64_t rows, n = 1024, chunk;
static int type, nth, mode; /* mode 0: gemv, 1: read loop */
static const void *act;
static float *out;
static pthread_barrier_t bar;
static double best;
static volatile uint64_t sink;

static uint64_t read_quarters(const uint8_t *b, size_t bytes) {
  const __m512i *p0 = (const __m512i *)b;
  size_t nl = bytes / 64, q = nl / 4;
  q = q < 1544 ? 0 : (q - 520) / 1024 * 1024 + 520;
  const __m512i *p1 = p0 + q, *p2 = p1 + q, *p3 = p2 + q;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < q; i++) {
    _mm_prefetch((const char *)(p0 + i) + 2048, _MM_HINT_T0);
    _mm_prefetch((const char *)(p1 + i) + 2048, _MM_HINT_T0);
    _mm_prefetch((const char *)(p2 + i) + 2048, _MM_HINT_T0);
    _mm_prefetch((const char *)(p3 + i) + 2048, _MM_HINT_T0);
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p0 + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p1 + i));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p2 + i));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p3 + i));
  }
  for (size_t i = 4 * q; i < nl; i++) a0 = _mm512_add_epi64(a0, _mm512_load_si512(p0 + i));
  uint64_t v[8];
  _mm512_storeu_si512(v, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static void *run(void *arg) {
  const int t = (int)(intptr_t)arg;
  const int64_t r0 = rows * t / nth, r1 = rows * (t + 1) / nth;
  for (int pass = 0; pass < 4; pass++) {
    pthread_barrier_wait(&bar);
    double t0 = now_s();
    if (mode == 0) {
      for (int64_t r = r0; r < r1; r += chunk)
        ops->gemm[type](n, w, rb, r, r + chunk < r1 ? r + chunk : r1, act, 0, 1, out, rows);
    } else {
      /* whole lines inside [r0, r1) of the rows */
      size_t b0 = ((size_t)r0 * rb + 63) / 64 * 64, b1 = (size_t)r1 * rb / 64 * 64;
      sink += read_quarters(w + b0, b1 - b0);
    }
    pthread_barrier_wait(&bar);
    double dt = now_s() - t0;
    if (t == 0 && (pass == 0 || dt < best)) best = dt;
  }
  return NULL;
}

static double measure(int m, int threads) {
  mode = m, nth = threads;
  pthread_barrier_init(&bar, NULL, (unsigned)threads);
  pthread_t th[2];
  for (int t = 1; t < threads; t++) pthread_create(&th[t], NULL, run, (void *)(intptr_t)t);
  run((void *)0);
  for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
  pthread_barrier_destroy(&bar);
  return (double)rows * (double)rb / best / 1e9;
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
  chunk = (int64_t)((MM_DECODE_CHUNK_BYTES / rb + 15) / 16 * 16);
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
      double g = measure(0, t), r = measure(1, t);
      printf("%d thread(s): kernel %.1f GB/s, read loop %.1f GB/s, kernel / read %.3f\n", t, g, r,
             g / r);
    }
  return 0;
}
