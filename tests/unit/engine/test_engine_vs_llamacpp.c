/* test_engine_vs_llamacpp: issue 4's acceptance test. For every fixture
 * gguf/NAME.llama-cpp-reference.json (architectures llama, qwen2, qwen3,
 * qwen3moe; weight types F16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K) the ENGINE is fed
 * the same tokens as llama.cpp (teacher forcing: the prompt prefilled, then
 * one engine_decode per generated token) and, at each of the 16 steps:
 *   - its argmax equals llama.cpp's top token wherever llama.cpp's top1 - top2
 *     margin is > 0.1 nats;
 *   - each of llama.cpp's top-5 log-probabilities is matched within 0.05 nats
 *     (files whose matrices are all F16) or 0.15 nats (quantized files).
 * The largest error per file goes to stderr, next to the float64 reference's
 * (pure, and with llama.cpp's roundings emulated) so a failure can be placed:
 * engine and reference agreeing with each other but not with llama.cpp points
 * at rounding noise; the engine alone far off points at the engine.
 * Runs the AUTO kernel path (what tokmeter runs) with 1 thread. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "ref_forward.c"
#include "tm_test.h"

#define MARGIN_NATS 0.1
#define TOL_FLOAT 0.05
#define TOL_QUANT 0.15

/* Step logits as log-probs (n_gen x V doubles) from the engine. */
static int engine_steps(const char *path, const struct ref_fixture *fx, double *lp, uint32_t V,
                        const char **kpath, struct tm_err *err) {
  struct engine_options o;
  engine_options_init(&o);
  o.n_threads = 1;
  o.n_ctx = 64;
  struct engine *e = engine_load(path, &o, err);
  if (!e) return -1;
  struct engine_info info;
  engine_get_info(e, &info);
  *kpath = info.kernel_path;
  int rc = -1;
  float *lg = malloc((size_t)V * sizeof *lg);
  if (!lg || info.n_vocab != V) {
    tm_errf(err, "out of memory or vocabulary %u != %u", info.n_vocab, V);
    goto done;
  }
  if (engine_prefill(e, fx->prompt, (uint32_t)fx->n_prompt, lg, err) != 0) goto done;
  for (int s = 0; s < fx->n_gen; s++) {
    if (s > 0 && engine_decode(e, fx->gen[s - 1], lg, err) != 0) goto done;
    for (uint32_t i = 0; i < V; i++) lp[(size_t)s * V + i] = lg[i];
    ref_log_softmax(lp + (size_t)s * V, V);
  }
  rc = 0;
done:
  free(lg);
  engine_free(e);
  return rc;
}

/* The reference's step log-probs (for the diagnosis line). */
static int reference_steps(const char *path, const struct ref_fixture *fx, bool rounding,
                           double *lp, uint32_t V) {
  struct tm_err err;
  struct ref_model *m = ref_model_load(path, &err);
  if (!m) return -1;
  ref_set_llamacpp_rounding(m, rounding);
  int32_t toks[128];
  int n = ref_fixture_tokens(fx, toks), rc = -1;
  double *all = malloc((size_t)n * V * sizeof *all);
  if (all && ref_logits(m, toks, n, all, &err) == 0) {
    const int first = fx->n_prompt - 1;
    memcpy(lp, all + (size_t)first * V, (size_t)(n - first) * V * sizeof *lp);
    for (int s = 0; s < n - first; s++) ref_log_softmax(lp + (size_t)s * V, V);
    rc = 0;
  }
  free(all);
  ref_model_free(m);
  return rc;
}

static void check_fixture(const char *json_name) {
  char rel[512];
  snprintf(rel, sizeof rel, "gguf/%s", json_name);
  struct ref_fixture *fx = malloc(sizeof *fx);
  struct tm_err err;
  CHECK(fx != NULL);
  if (!fx) return;
  int rc = ref_fixture_load(tm_fixture(rel), fx, &err);
  CHECK_MSG(rc == 0, "%s", rc ? err.msg : "");
  if (rc) {
    free(fx);
    return;
  }
  snprintf(rel, sizeof rel, "gguf/%s", fx->model);
  char path[1024];
  snprintf(path, sizeof path, "%s", tm_fixture(rel));
  /* the weight kind decides the tolerance: ask the reference loader */
  struct ref_model *m = ref_model_load(path, &err);
  CHECK_MSG(m != NULL, "%s: %s", fx->model, m ? "" : err.msg);
  if (!m) {
    free(fx);
    return;
  }
  const bool fl = ref_all_float(m);
  const uint32_t V = ref_n_vocab(m);
  ref_model_free(m);
  const double tol = fl ? TOL_FLOAT : TOL_QUANT;
  double *lp = malloc((size_t)fx->n_gen * V * sizeof *lp);
  const char *kpath = "?";
  CHECK(lp != NULL);
  rc = lp ? engine_steps(path, fx, lp, V, &kpath, &err) : -1;
  CHECK_MSG(rc == 0, "%s: engine: %s", fx->model, rc ? err.msg : "");
  if (rc == 0) {
    struct ref_cmp c, cr = {0}, ce = {0};
    ref_compare_fixture(fx, lp, V, fx->n_gen, MARGIN_NATS, &c);
    /* diagnosis: the reference, pure and with llama.cpp's roundings */
    int have_ref = reference_steps(path, fx, false, lp, V) == 0;
    if (have_ref) ref_compare_fixture(fx, lp, V, fx->n_gen, MARGIN_NATS, &cr);
    int have_emu = reference_steps(path, fx, true, lp, V) == 0;
    if (have_emu) ref_compare_fixture(fx, lp, V, fx->n_gen, MARGIN_NATS, &ce);
    fprintf(stderr,
            "engine(%s) vs llama.cpp %-26s max |dlogprob| %.4f (step %d id %d; tol %.2f), "
            "top-1 mismatches %d of %d clear steps | float64 reference %.4f, with llama.cpp "
            "roundings %.4f\n",
            kpath, fx->model, c.max_err, c.max_err_step, c.max_err_id, tol, c.n_top_mismatch,
            c.n_clear, have_ref ? cr.max_err : NAN, have_emu ? ce.max_err : NAN);
    CHECK_MSG(c.max_err <= tol, "%s: engine top-5 log-prob error %.4f > %.2f at step %d id %d",
              fx->model, c.max_err, tol, c.max_err_step, c.max_err_id);
    CHECK_MSG(c.n_top_mismatch == 0, "%s: engine argmax differs from llama.cpp at %d of %d clear "
              "steps (first: step %d)", fx->model, c.n_top_mismatch, c.n_clear,
              c.first_mismatch_step);
  }
  free(lp);
  free(fx);
}

static void test_every_fixture(void) {
  char names[32][128];
  int n = ref_fixture_list(tm_fixture("gguf"), names, 32);
  CHECK_MSG(n >= 11, "expected >= 11 reference fixtures, found %d", n);
  for (int i = 0; i < n; i++) check_fixture(names[i]);
}

void tm_run_tests(void) { TM_RUN(test_every_fixture); }
