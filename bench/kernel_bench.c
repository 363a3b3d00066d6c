/* kernel_bench: decode (matrix-vector) bandwidth and prefill (gemm) throughput
 * of the engine kernels, per weight type and kernel path, at 1 and 2 threads,
 * on Qwen3-0.6B-shaped matrices. Not a test: a measurement (bench/RESULTS.md).
 *
 * Build (against a build dir's static libraries) and run:
 *   cc -O2 -Isrc bench/kernel_bench.c build-kernels/libtm_engine.a \
 *      build-kernels/libtm_gguf.a build-kernels/libtm_util.a -lpthread -lm -o /tmp/kernel_bench
 *   /tmp/kernel_bench 14.8 29.4     # probe read bandwidth at 1 and 2 threads, GB/s
 *   /tmp/kernel_bench 14.8 29.4 Q5_0,Q4_1   # only these weight types
 * (read_bandwidth_by_threads from `tokmeter probe --json`).
 *
 * Decode: a 1 GiB weight matrix on transparent huge pages (copies of one random n x 3072 / n x 1024
 * block, far larger than the caches, like a whole model's layers) is read
 * once per pass by gemm with ncols = 1; rows are split evenly over pthreads.
 * GB/s = weight bytes / best pass time; % = that over the probe's figure.
 * Prefill: ncols = 64 on one 3072 x 1024 matrix (cache-resident, so this is
 * the compute side); GOPS = 2 * rows * n * ncols / time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "engine/kernels.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct job {
  const struct kernel_ops *ops;
  uint32_t type;
  int64_t n, r0, r1, ncols;
  const uint8_t *w;
  size_t w_stride, a_stride;
  const void *a;
  float *out;
  int64_t out_stride;
};

static void *run_job(void *p) {
  struct job *j = p;
  j->ops->gemm[j->type](j->n, j->w, j->w_stride, j->r0, j->r1, j->a, j->a_stride, j->ncols,
                        j->out, j->out_stride);
  return NULL;
}

/* One gemm over rows [0, rows) split over nth threads; returns seconds. */
static double timed_gemm(struct job base, int64_t rows, int nth) {
  pthread_t th[8];
  struct job jobs[8];
  double t0 = now_s();
  for (int t = 0; t < nth; t++) {
    jobs[t] = base;
    jobs[t].r0 = rows * t / nth;
    jobs[t].r1 = rows * (t + 1) / nth;
    if (t > 0) pthread_create(&th[t], NULL, run_job, &jobs[t]);
  }
  run_job(&jobs[0]);
  for (int t = 1; t < nth; t++) pthread_join(th[t], NULL);
  return now_s() - t0;
}

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return ((int64_t)(*s >> 11) - (int64_t)(1ull << 52)) * (1.0f / (1ull << 52));
}

/* Activation rows for ncols columns in the type's format. */
static void *make_act(const struct kernel_ops *ops, uint32_t type, int64_t n, int64_t ncols,
                      size_t *stride) {
  enum act_format f = kernel_act_format(type);
  *stride = kernel_act_row_bytes(f, n);
  uint8_t *a = aligned_alloc(64, (*stride * ncols + 63) / 64 * 64);
  float *x = malloc(sizeof(float) * n);
  uint64_t s = 7;
  for (int64_t c = 0; c < ncols; c++) {
    for (int64_t i = 0; i < n; i++) x[i] = frand(&s);
    if (f == ACT_Q8) ops->quantize_q8(x, (struct act_q8 *)(a + c * *stride), n);
    else if (f == ACT_Q8K) ops->quantize_q8k(x, (struct act_q8k *)(a + c * *stride), n);
    else memcpy(a + c * *stride, x, sizeof(float) * n);
  }
  free(x);
  return a;
}

/* Whether name is one of list's comma-separated entries. */
static int type_listed(const char *list, const char *name) {
  size_t len = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t k = end ? (size_t)(end - p) : strlen(p);
    if (k == len && strncmp(p, name, len) == 0) return 1;
    p += k + (end != NULL);
  }
  return 0;
}

int main(int argc, char **argv) {
  double probe_bw[3] = {0, argc > 1 ? atof(argv[1]) * 1e9 : 0, argc > 2 ? atof(argv[2]) * 1e9 : 0};
  static const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K,
                                   GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_F16,
                                   GGML_TYPE_BF16, GGML_TYPE_Q5_0, GGML_TYPE_Q4_1,
                                   GGML_TYPE_Q5_1};
  if (argc > 3) { /* every listed name must be one of the types measured */
    char *list = strdup(argv[3]);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
      int known = 0;
      for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        known |= strcmp(tok, ggml_type_get(types[ti])->name) == 0;
      if (!known) {
        fprintf(stderr, "kernel_bench: unknown weight type '%s' (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, "
                        "F16, BF16, Q5_0, Q4_1, Q5_1)\n", tok);
        return 2;
      }
    }
    free(list);
  }
  static const enum kernel_path paths[] = {KERNEL_AVX2, KERNEL_AVX512, KERNEL_AVX512_VNNI};
  const size_t big = (size_t)1 << 30;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    uint32_t type = types[ti];
    const char *tname = ggml_type_get(type)->name;
    if (argc > 3 && !type_listed(argv[3], tname)) continue;
    for (int shape = 0; shape < 2; shape++) {
      int64_t n = shape == 0 ? 1024 : 3072, blk_rows = shape == 0 ? 3072 : 1024;
      uint64_t rb = 0;
      ggml_row_bytes(type, n, &rb);
      /* one random block of rows, quantized by the reference, then tiled */
      float *x = malloc(sizeof(float) * n);
      uint8_t *blk = malloc(rb * blk_rows);
      uint64_t s = 1;
      for (int64_t r = 0; r < blk_rows; r++) {
        for (int64_t i = 0; i < n; i++) x[i] = frand(&s) * 0.05f;
        ggml_quantize_ref(type, x, blk + r * rb, n);
      }
      int64_t rows = (int64_t)(big / rb);
      /* On transparent huge pages, as the engine's weights are (hugemap.c):
       * through 4 KiB pages one core's stream is held back by page walks. */
      size_t w_bytes = (rows * rb + (2u << 20) - 1) / (2u << 20) * (2u << 20);
      uint8_t *w = aligned_alloc(2u << 20, w_bytes);
      madvise(w, w_bytes, MADV_HUGEPAGE);
      for (int64_t r = 0; r < rows; r += blk_rows) {
        int64_t k = rows - r < blk_rows ? rows - r : blk_rows;
        memcpy(w + r * rb, blk, k * rb);
      }
      float *out = malloc(sizeof(float) * rows * 64 > sizeof(float) * 64 * 3072
                              ? sizeof(float) * rows
                              : sizeof(float) * 64 * 3072);
      for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
        const struct kernel_ops *ops = kernels_get(paths[pi]);
        if (!ops) continue;
        size_t as;
        void *a = make_act(ops, type, n, 64, &as);
        struct job j = {ops, type, n, 0, 0, 1, w, rb, as, a, out, rows};
        for (int nth = 1; nth <= 2; nth++) {
          double best = 1e9;
          for (int pass = 0; pass < 4; pass++) {
            double t = timed_gemm(j, rows, nth);
            if (t < best) best = t;
          }
          double gbs = (double)(rows * rb) / best / 1e9;
          /* prefill: 64 columns over the first blk_rows rows (cache-resident) */
          struct job jp = j;
          jp.ncols = 64;
          jp.out_stride = blk_rows;
          double bestp = 1e9;
          for (int pass = 0; pass < 3; pass++) {
            double t = timed_gemm(jp, blk_rows, nth);
            if (t < bestp) bestp = t;
          }
          double gops = 2.0 * blk_rows * n * 64 / bestp / 1e9;
          /* decode on the first blk_rows rows only, held in cache (2-6 MB: in L3
           * on a core with 1-2 MiB of L2, as the Zen 5's): the compute side */
          struct job jh = j;
          jh.out_stride = blk_rows;
          double besth = 1e9;
          for (int pass = 0; pass < 20; pass++) {
            double t = timed_gemm(jh, blk_rows, nth);
            if (t < besth) besth = t;
          }
          double hot = (double)(blk_rows * rb) / besth / 1e9;
          printf("%-5s %5lldx%-5lld %-12s %dT decode %6.2f GB/s", tname, (long long)blk_rows,
                 (long long)n, ops->name, nth, gbs);
          if (probe_bw[nth] > 0) printf(" (%5.1f%% of probe)", 100.0 * gbs * 1e9 / probe_bw[nth]);
          /* At 2 threads one cache-resident pass (~30 us) is shorter than
           * timed_gemm's thread start and join: that figure would time
           * those, so only one thread's is printed. */
          if (nth == 1) printf("  hot %6.2f GB/s", hot);
          else printf("  hot      -    ");
          printf("  prefill %7.1f GOPS\n", gops);
          fflush(stdout);
        }
        free(a);
      }
      free(out);
      free(w);
      free(blk);
      free(x);
    }
  }
  return 0;
}
