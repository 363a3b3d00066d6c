/* Real data against the plan and the ceiling: llama.cpp's llama-bench sweep of
 * the Qwen3-0.6B shape at Q8_0, Q4_0 and Q4_K_M (fixtures/llama-bench/
 * llama-bench-qwen3-0.6b-sweep.md; a model llama-quantize wrote).
 *  - The plan of preset qwen3-0.6b at each file type must hold exactly the
 *    bytes and parameters llama-bench reports (size in MiB to its 2 decimals,
 *    params in M to its 2 decimals): synth and ceiling see the same model
 *    llama.cpp does.
 *  - Each measured tg128 must lie below the decode ceiling computed at the
 *    bandwidth the fixtures README gives for that machine (28.6 GB/s at 1
 *    thread, 32.9 GB/s at 2) and above half of it: a ceiling under a real
 *    measurement, or far above it, would be a wrong formula. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/analysis.h"
#include "model/ceiling.h"
#include "model/plan.h"
#include "tm_test.h"

struct row {
  char type[16];
  double size_mib, params_m;
  int threads;
  char test[16];
  double tok_s;
};

static int read_rows(struct row *rows, int max) {
  FILE *f = fopen(tm_fixture("llama-bench/llama-bench-qwen3-0.6b-sweep.md"), "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    /* "| qwen3 0.6B Q8_0 | 604.15 MiB | 596.05 M | CPU | 1 | pp512 | 99.23 ± 2.83 |" */
    char *cell[8];
    int k = 0;
    char *save = NULL;
    for (char *c = strtok_r(line, "|", &save); c && k < 8; c = strtok_r(NULL, "|", &save))
      cell[k++] = c;
    struct row r;
    char quant[16];
    if (k < 7 || sscanf(cell[0], " qwen3 0.6B %15s", quant) != 1 ||
        sscanf(cell[1], "%lf MiB", &r.size_mib) != 1 || sscanf(cell[2], "%lf M", &r.params_m) != 1 ||
        sscanf(cell[4], "%d", &r.threads) != 1 || sscanf(cell[5], "%15s", r.test) != 1 ||
        sscanf(cell[6], "%lf", &r.tok_s) != 1)
      continue;
    /* "Q4_K - Medium" is llama.cpp's name for the Q4_K_M file type */
    snprintf(r.type, sizeof r.type, "%s", strcmp(quant, "Q4_K") == 0 ? "Q4_K_M" : quant);
    rows[n++] = r;
  }
  fclose(f);
  return n;
}

static void plan_matches_llama_bench(void) {
  struct row rows[32];
  int n = read_rows(rows, 32);
  CHECK_EQ_INT(n, 12);
  const struct model_preset *pre = model_preset_find("qwen3-0.6b");
  CHECK(pre != NULL);
  if (!pre || n <= 0) return;
  int checked_tg = 0;
  for (int i = 0; i < n; i++) {
    struct model_plan plan;
    struct model_desc d;
    struct model_cost c;
    struct tm_err err;
    int ft = model_ftype_from_name(rows[i].type);
    CHECK_MSG(ft >= 0, "file type %s", rows[i].type);
    if (ft < 0 || model_plan_make(&pre->shape, ft, &plan, &err) != 0) continue;
    struct model_analyze_options opt = {.kv_type = 1 /* F16 */};
    int ok = model_desc_from_plan(&plan, &d, &err) == 0;
    CHECK_MSG(ok, "%s", err.msg);
    if (ok) {
      CHECK(model_analyze(&d, &opt, &c, &err) == 0);
      CHECK_NEAR((double)c.bytes_total / 1048576.0, rows[i].size_mib, 0.005 + 1e-9);
      CHECK_NEAR((double)c.params_total / 1e6, rows[i].params_m, 0.005 + 1e-9);
      if (strcmp(rows[i].test, "tg128") == 0) {
        double bw = rows[i].threads == 1 ? 28.6e9 : 32.9e9;
        double mean_bytes = 0;
        for (int depth = 0; depth < 128; depth++)
          mean_bytes += model_decode_bytes_at_depth(&c, (uint64_t)depth) / 128.0;
        double ceiling = ceiling_tok_s(bw, mean_bytes);
        CHECK_MSG(rows[i].tok_s < ceiling && rows[i].tok_s > 0.5 * ceiling,
                  "%s tg128 at %d threads: measured %.2f, ceiling %.2f", rows[i].type,
                  rows[i].threads, rows[i].tok_s, ceiling);
        checked_tg++;
      }
      model_desc_free(&d);
    }
    model_plan_free(&plan);
  }
  CHECK_EQ_INT(checked_tg, 6);
}

void tm_run_tests(void) { TM_RUN(plan_matches_llama_bench); }
