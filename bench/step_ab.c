/* step_ab: a step-interleaved A/B of the engine's decode, for changes worth
 * 1-3% on a machine whose bandwidth moves by 5-10% within minutes. Not a test:
 * a measurement tool for engine work (bench/RESULTS.md, docs/engine.md).
 *
 * One process decodes `reps` x N greedy steps; the global tm_exp_flags is set
 * to FLAGS on every other step and to 0 on the others (the parity swaps each
 * repetition, so depth and step order fall on both arms alike), and the step
 * times are summed per arm. Drift of the machine lands on both arms within
 * milliseconds, so their ratio resolves ~0.1% at 1 thread and ~1% at 2.
 *
 * The engine does not read tm_exp_flags: a scratch build gates the change
 * under test on it, defining `volatile int tm_exp_flags;` in one of its files
 * (that definition overrides the weak one below). Linked against an unchanged
 * build, the run is an A/A test: its ratio is the noise floor.
 *
 * Build (against a build dir's static libraries) and run:
 *   cc -O2 -Isrc bench/step_ab.c build/libtm_engine.a build/libtm_gguf.a \
 *      build/libtm_util.a -lpthread -lm -o /tmp/step_ab
 *   /tmp/step_ab MODEL.gguf THREADS FLAGS [REPS [STEPS [--copy]]]
 * --copy reads the weights from an anonymous copy (engine option hugepages):
 * on a VM whose page cache reads slowly, what the kernels can do. With
 * DEPTH=N in the environment each repetition first prefills N tokens
 * (untimed), so the steps attend over N + s positions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/clock.h"

__attribute__((weak)) volatile int tm_exp_flags;

static int arg_int(const char *s, int lo, int hi, const char *what) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "step_ab: %s must be an integer in %d..%d, got '%s'\n", what, lo, hi, s);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 7) {
    fprintf(stderr, "usage: step_ab MODEL.gguf THREADS FLAGS [REPS [STEPS [--copy]]]\n");
    return 2;
  }
  struct engine_options o;
  engine_options_init(&o);
  o.n_threads = arg_int(argv[2], 1, 1024, "THREADS");
  const int flags = arg_int(argv[3], 0, 1 << 30, "FLAGS");
  const int reps = argc > 4 ? arg_int(argv[4], 1, 1000, "REPS") : 5;
  const int steps = argc > 5 ? arg_int(argv[5], 2, 4096, "STEPS") : 128;
  if (argc > 6 && strcmp(argv[6], "--copy") != 0) {
    fprintf(stderr, "step_ab: unknown option '%s'\n", argv[6]);
    return 2;
  }
  o.hugepages = argc > 6;
  const char *depth_env = getenv("DEPTH");
  const int depth = depth_env ? arg_int(depth_env, 0, 1 << 20, "DEPTH") : 0;
  o.n_ctx = (uint32_t)(steps + depth);
  struct tm_err err = {{0}};
  struct engine *e = engine_load(argv[1], &o, &err);
  if (!e) {
    fprintf(stderr, "step_ab: %s\n", err.msg);
    return 2;
  }
  struct engine_info info;
  engine_get_info(e, &info);
  float *logits = malloc(sizeof(float) * info.n_vocab);
  if (!logits) return 1;
  double sum_on = 0, sum_off = 0;
  long n_on = 0, n_off = 0;
  /* rep -1: a warm-up, not counted */
  for (int r = -1; r < reps; r++) {
    engine_reset(e);
    int32_t tok = 1;
    if (depth > 0) {
      int32_t *pt = malloc(sizeof(int32_t) * (size_t)depth);
      if (!pt) return 1;
      for (int d = 0; d < depth; d++) pt[d] = 1 + (int32_t)((d * 7919u) % (info.n_vocab - 1));
      if (engine_prefill(e, pt, (uint32_t)depth, NULL, &err) != 0) {
        fprintf(stderr, "step_ab: prefill of the depth failed: %s\n", err.msg);
        return 1;
      }
      free(pt);
    }
    double on = 0, off = 0;
    long r_on = 0, r_off = 0;
    for (int s = 0; s < steps; s++) {
      const bool use = ((s + r) & 1) != 0;
      tm_exp_flags = use ? flags : 0;
      uint64_t t0 = tm_now_ns();
      if (engine_decode_greedy(e, tok, logits, &tok, &err) != 0) {
        fprintf(stderr, "step_ab: decode failed: %s\n", err.msg);
        return 1;
      }
      double dt = (double)(tm_now_ns() - t0);
      if (r < 0) continue;
      if (use) on += dt, r_on++;
      else off += dt, r_off++;
    }
    if (r < 0) continue;
    sum_on += on, n_on += r_on;
    sum_off += off, n_off += r_off;
    printf("rep %d: off %.3f ms/step, on %.3f ms/step, off/on %.4f\n", r, off / 1e6 / r_off,
           on / 1e6 / r_on, (off / r_off) / (on / r_on));
  }
  tm_exp_flags = 0;
  printf("%s, %d thread%s, flags %d: off %.3f ms/step, on %.3f ms/step, off/on %.4f "
         "(> 1: the change is faster)\n",
         argv[1], o.n_threads, o.n_threads == 1 ? "" : "s", flags, sum_off / 1e6 / n_off,
         sum_on / 1e6 / n_on, (sum_off / n_off) / (sum_on / n_on));
  free(logits);
  engine_free(e);
  return 0;
}
