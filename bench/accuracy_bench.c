/* accuracy_bench: how exactly tokmeter measures a server whose timing is
 * known (issue 3, part 7b; goal: 2 ms on TTFT, 2% on rates). Runs the paced
 * fake server (prefill a + b x n, token interval c) through the real client
 * path (backend_run -> run_metrics_compute) many times and prints the error
 * of client TTFT against a + b x n and of the client decode rate against 1/c:
 * median and worst. The server's own timers are exact by construction.
 *
 * Built with the tests (target tokmeter-accuracy-bench); run on a quiet
 * machine: build-test/tests/tokmeter-accuracy-bench [reps] */
#include <stdlib.h>

#include "accuracy.h"
#include "stats/stats.h"

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20;
  if (reps < 1 || reps > 10000) reps = 20;
  struct { enum fs_flavor flavor; const char *name; double a, b, c; uint32_t words, tokens; } cfg[] = {
      {FS_FLAVOR_LLAMACPP, "llamacpp", 30, 0.25, 8, 400, 100},
      {FS_FLAVOR_OPENAI, "openai", 20, 0.5, 20, 100, 60},
      {FS_FLAVOR_OLLAMA, "ollama", 10, 0.1, 5, 1000, 200},
  };
  printf("config                         n  TTFT err ms (median, worst)  decode err %% (median, worst)\n");
  int bad = 0;
  for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
    double *ttft = calloc((size_t)reps, sizeof *ttft), *dec = calloc((size_t)reps, sizeof *dec);
    double worst_t = 0, worst_d = 0;
    int n = 0;
    for (int i = 0; i < reps; i++) {
      struct accuracy_point p = {0};
      if (accuracy_measure(cfg[k].flavor, cfg[k].a, cfg[k].b, cfg[k].c, cfg[k].words,
                           cfg[k].tokens, &p) != 0 || !p.ok) {
        bad++;
        continue;
      }
      ttft[n] = fabs(p.ttft_ms - p.ttft_expected_ms);
      dec[n] = 100.0 * fabs(p.decode_client / p.decode_expected - 1.0);
      if (ttft[n] > worst_t) worst_t = ttft[n];
      if (dec[n] > worst_d) worst_d = dec[n];
      n++;
    }
    struct stats_summary st, sd;
    stats_describe(ttft, (size_t)n, &st);
    stats_describe(dec, (size_t)n, &sd);
    printf("%-8s a=%g b=%g c=%g n=%-5u %4d  %8.3f  %8.3f              %8.3f  %8.3f\n",
           cfg[k].name, cfg[k].a, cfg[k].b, cfg[k].c, cfg[k].words, n, st.median, worst_t,
           sd.median, worst_d);
    free(ttft);
    free(dec);
  }
  if (bad) printf("%d requests failed\n", bad);
  return bad ? 1 : 0;
}
