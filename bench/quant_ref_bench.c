/* quant_ref_bench: throughput of the reference quantizers/dequantizers
 * (src/gguf/quant_ref_*.c), which `tokmeter synth` uses to write whole models.
 * Build (after building tm_gguf/tm_util in <build>):
 *   cc -O2 -std=gnu11 -Isrc bench/quant_ref_bench.c <build>/libtm_gguf.a \
 *      <build>/libtm_util.a -lm -o /tmp/quant_ref_bench && /tmp/quant_ref_bench [M elements]
 * Prints, per type, million elements per second for quantize and dequantize on one
 * thread (normal(0, 0.02) data). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gguf/ggml_types.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  const int64_t n = (argc > 1 ? atoll(argv[1]) : 16) * 1024 * 1024;
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  void *q = malloc((size_t)n * 4);
  if (!x || !y || !q) return 1;
  uint64_t s = 88172645463325252ull;
  for (int64_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const double u1 = ((double)(s >> 11) + 0.5) * 0x1p-53;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const double u2 = ((double)(s >> 11) + 0.5) * 0x1p-53;
    x[i] = (float)(0.02 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
  }
  const uint32_t types[] = {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0,
                            GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q4_K,
                            GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
  printf("%-5s %12s %12s   (%lld elements, 1 thread)\n", "type", "quant Me/s", "dequant Me/s",
         (long long)n);
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    double t0 = now_s();
    if (ggml_quantize_ref(types[k], x, q, n) != 0) return 1;
    double t1 = now_s();
    if (ggml_dequantize_ref(types[k], q, y, n) != 0) return 1;
    double t2 = now_s();
    printf("%-5s %12.1f %12.1f\n", ggml_type_get(types[k])->name, n / (t1 - t0) / 1e6,
           n / (t2 - t1) / 1e6);
  }
  free(x), free(y), free(q);
  return 0;
}
