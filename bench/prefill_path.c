/* prefill_path: the engine's pp512 rate on one kernel path, which may be
 * slower than the one the CPU would get (e.g. AVX2 code on an AVX-512
 * machine): what a path's prefill kernels do on this core. Not a test: a
 * measurement tool (bench/RESULTS.md). Weights are copied into huge pages;
 * the rate is the best of 3 timed prefills after one warm-up.
 *
 * Build (against a build dir's static libraries) and run:
 *   cc -O2 -Isrc bench/prefill_path.c build/libtm_engine.a build/libtm_gguf.a \
 *      build/libtm_util.a -lpthread -lm -o /tmp/prefill_path
 *   /tmp/prefill_path MODEL.gguf THREADS PATH     # PATH: scalar, avx2, avx512, ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/kernels.h"
#include "util/clock.h"

#define PROMPT 512

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: prefill_path MODEL.gguf THREADS PATH\n");
    return 2;
  }
  struct engine_options o;
  engine_options_init(&o);
  char *end;
  long th = strtol(argv[2], &end, 10);
  o.n_threads = *argv[2] && *end == '\0' && th >= 1 && th <= 1024 ? (int)th : 0;
  if (o.n_threads < 1) {
    fprintf(stderr, "prefill_path: THREADS must be an integer in 1..1024, got '%s'\n", argv[2]);
    return 2;
  }
  int found = 0;
  for (int p = 1; p < KERNEL_PATH_COUNT; p++)
    if (strcmp(argv[3], kernel_path_name((enum kernel_path)p)) == 0) {
      o.kernels = (enum kernel_path)p;
      found = 1;
    }
  if (!found || !kernels_get(o.kernels)) {
    fprintf(stderr, "prefill_path: no kernel path '%s' on this CPU and build\n", argv[3]);
    return 2;
  }
  o.n_ctx = PROMPT;
  o.hugepages = 1;
  struct tm_err err = {{0}};
  struct engine *e = engine_load(argv[1], &o, &err);
  if (!e) {
    fprintf(stderr, "prefill_path: %s\n", err.msg);
    return 2;
  }
  struct engine_info info;
  engine_get_info(e, &info);
  float *logits = malloc(sizeof(float) * info.n_vocab);
  if (!logits) return 1;
  int32_t tok[PROMPT];
  for (int i = 0; i < PROMPT; i++) tok[i] = (int32_t)((i * 7919u) % (info.n_vocab - 1) + 1);
  double best = 1e30;
  for (int r = 0; r < 4; r++) { /* r = 0: the warm-up */
    engine_reset(e);
    uint64_t t0 = tm_now_ns();
    if (engine_prefill(e, tok, PROMPT, logits, &err) != 0) {
      fprintf(stderr, "prefill_path: prefill failed: %s\n", err.msg);
      return 1;
    }
    double dt = (double)(tm_now_ns() - t0) * 1e-9;
    if (r > 0 && dt < best) best = dt;
  }
  printf("%s, %d thread%s, %s: pp%d %.1f tok/s\n", argv[1], o.n_threads,
         o.n_threads == 1 ? "" : "s", argv[3], PROMPT, PROMPT / best);
  free(logits);
  engine_free(e);
  return 0;
}
