/* few_cols: the few-column products of a batched decode step (kernels.h
 * gemm_few) against the decode kernel run once per column, one thread, for
 * 1 .. 15 columns, on a matrix from L2 (rows x n small enough to stay there)
 * and one from DRAM (512 MiB, larger than any cache). Not a test: a
 * measurement (bench/RESULTS.md).
 *
 *   cc -O2 -Isrc bench/few_cols.c build/libtm_engine.a build/libtm_gguf.a \
 *      build/libtm_util.a -lpthread -lm -o /tmp/few_cols
 *   /tmp/few_cols [TYPE [N]]       (default Q4_0, n = 1024)
 *
 * Prints, per column count B: ms per pass of the per-column decode and of
 * gemm_few (best of several passes), their ratio, gemm_few's integer rate
 * (GOPS = 2 x rows x n x B / time, the figure the ceiling's compute side
 * holds a batched step against) and the table's gemm on all B columns at
 * once (its tiles or panels: what Q6_K ran before gemm_few). TOKMETER_KERNELS
 * picks the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "engine/kernels.h"
#include "gguf/ggml_types.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static float rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0) - 0.5);
}

struct mat {
  uint8_t *w;
  int64_t rows;
  size_t stride;
};

/* rows x n weights of `type`: one random 1024-row block repeated. */
static int mat_make(struct mat *m, uint32_t type, int64_t n, int64_t rows) {
  uint64_t rb = 0;
  if (ggml_row_bytes(type, (uint64_t)n, &rb) != 0) return -1;
  m->rows = rows;
  m->stride = (size_t)rb;
  size_t bytes = m->stride * (size_t)rows;
  m->w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m->w == MAP_FAILED) return -1;
  madvise(m->w, bytes, MADV_HUGEPAGE);
  float *x = malloc(sizeof(float) * (size_t)n);
  const int64_t block = rows < 1024 ? rows : 1024;
  for (int64_t r = 0; r < block; r++) {
    for (int64_t i = 0; i < n; i++) x[i] = rnd() * 0.1f;
    if (ggml_quantize_ref(type, x, m->w + (size_t)r * m->stride, n) != 0) return -1;
  }
  for (int64_t r = block; r < rows; r += block) {
    const int64_t k = rows - r < block ? rows - r : block;
    memcpy(m->w + (size_t)r * m->stride, m->w, (size_t)k * m->stride);
  }
  free(x);
  return 0;
}

/* One pass over rows [0, rows) in chunks of 128 KiB, as forward.c cuts a
 * job (the per-column variant runs each column over a chunk before the
 * next chunk, so the chunk stays in L2). */
static double pass(const struct kernel_ops *ops, uint32_t type, const struct mat *m, int64_t n,
                   const uint8_t *a, size_t as, int64_t cols, float *out, int few) {
  int64_t cr = (int64_t)(131072 / m->stride + 15) / 16 * 16;
  double t0 = now_s();
  for (int64_t r0 = 0; r0 < m->rows; r0 += cr) {
    int64_t r1 = r0 + cr < m->rows ? r0 + cr : m->rows;
    if (few == 2)
      ops->gemm[type](n, m->w, m->stride, r0, r1, a, as, cols, out, m->rows);
    else if (few)
      ops->gemm_few[type](n, m->w, m->stride, r0, r1, a, as, cols, out, m->rows);
    else
      for (int64_t c = 0; c < cols; c++)
        ops->gemm[type](n, m->w, m->stride, r0, r1, a + (size_t)c * as, as, 1, out + c * m->rows,
                        m->rows);
  }
  return now_s() - t0;
}

int main(int argc, char **argv) {
  const char *tname = argc > 1 ? argv[1] : "Q4_0";
  const int64_t n = argc > 2 ? atoll(argv[2]) : 1024;
  uint32_t type = GGML_TYPE_COUNT;
  for (uint32_t t = 0; t < GGML_TYPE_COUNT; t++)
    if (ggml_type_get(t) && ggml_type_get(t)->name && strcmp(ggml_type_get(t)->name, tname) == 0)
      type = t;
  const struct kernel_ops *ops = kernels_get(KERNEL_AUTO);
  if (type == GGML_TYPE_COUNT || !ops || !ops->gemm[type] || kernel_act_format(type) == ACT_F32) {
    fprintf(stderr, "few_cols: no quantized type %s on this table\n", tname);
    return 2;
  }
  if (!ops->gemm_few[type]) {
    fprintf(stderr, "few_cols: table %s has no few-column kernel for %s\n", ops->name, tname);
    return 2;
  }
  const enum act_format fmt = kernel_act_format(type);
  const size_t as = kernel_act_row_bytes(fmt, n);
  uint8_t *a = aligned_alloc(64, (as * 16 + 63) / 64 * 64);
  float *x = malloc(sizeof(float) * (size_t)n);
  for (int c = 0; c < 16; c++) {
    for (int64_t i = 0; i < n; i++) x[i] = rnd();
    if (fmt == ACT_Q8)
      ops->quantize_q8(x, (struct act_q8 *)(a + (size_t)c * as), n);
    else
      ops->quantize_q8k(x, (struct act_q8k *)(a + (size_t)c * as), n);
  }
  printf("table %s, %s, n %lld, one thread; ms per pass (best), per-column decode vs few\n",
         ops->name, tname, (long long)n);
  const struct {
    const char *name;
    size_t bytes;
    int passes;
  } where[] = {{"L2", 512 * 1024, 200}, {"DRAM", 512u << 20, 3}};
  for (int k = 0; k < 2; k++) {
    struct mat m;
    uint64_t rb = 0;
    ggml_row_bytes(type, (uint64_t)n, &rb);
    if (mat_make(&m, type, n, (int64_t)(where[k].bytes / rb)) != 0) return 1;
    float *out = malloc(sizeof(float) * (size_t)m.rows * 16);
    printf("%s: %lld rows, %.1f MiB\n   B  decode ms    few ms  ratio   few GOPS   gemm ms\n", where[k].name,
           (long long)m.rows, m.stride * m.rows / 1048576.0);
    for (int64_t cols = 1; cols <= 15; cols++) {
      double best[3] = {1e9, 1e9, 1e9};
      for (int p = 0; p < where[k].passes; p++)
        for (int few = 0; few < 3; few++) {
          double t = pass(ops, type, &m, n, a, as, cols, out, few);
          if (t < best[few]) best[few] = t;
        }
      printf("  %2lld  %9.3f %9.3f  %5.2f  %9.1f %9.3f\n", (long long)cols, best[0] * 1e3,
             best[1] * 1e3, best[0] / best[1], 2.0 * m.rows * n * cols / best[1] * 1e-9,
             best[2] * 1e3);
    }
    free(out);
    munmap(m.w, m.stride * m.rows);
  }
  free(a);
  free(x);
  return 0;
}
