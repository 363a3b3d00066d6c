/* test_quant_fixtures: this module's dequantizers and quantizers against what
 * llama.cpp's llama-quantize wrote (fixtures/gguf, see fixtures/README.md).
 *
 * For every quantized tensor of tiny-llama-{Q8_0,Q4_0,Q4_K_M}.gguf and
 * kq-llama-{Q4_K_M,Q6_K}.gguf, the same tensor of the matching -f16 file is the
 * original. Checks:
 *   1. dequantize(llama's blocks) vs the original: every element on its nearest
 *      level of its block as stored (quant_check.h: half a step of the block's own
 *      scale plus fp16 slack, or clamped at an end level), the dequantized values
 *      equal the levels the bytes encode (layout), and relative RMS within the
 *      type's bound;
 *   2. for Q8_0, Q4_0 and Q5_0 tensors: quantize(original as f32) with this
 *      module's quantizer gives bytes IDENTICAL to llama-quantize's (it runs the
 *      reference row quantizers when no imatrix is given). Counts of tensors and
 *      bytes compared are printed and pinned. */
#include <stdint.h>
#include <stdlib.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "quant_check.h"
#include "tm_test.h"

struct type_tally {
  int64_t tensors, elements, bad, deq_mismatch, clamped;
  double sum_err2, sum_x2, max_clamp_steps;
  int64_t bytes_tensors, bytes_compared, bytes_differ; /* byte-identity (Q8_0/Q4_0/Q5_0) */
};

static struct type_tally tally[GGML_TYPE_COUNT];

static int byte_exact_type(uint32_t t) {
  return t == GGML_TYPE_Q8_0 || t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q5_0;
}

/* Compares every quantized tensor of qpath with its original in f16path. */
static void compare_file(const char *qname, const char *f16name) {
  struct tm_err err = {{0}};
  struct gguf_file *qf = gguf_open(tm_fixture(qname), &err);
  CHECK_MSG(qf != NULL, "open %s: %s", qname, err.msg);
  struct gguf_file *of = gguf_open(tm_fixture(f16name), &err);
  CHECK_MSG(of != NULL, "open %s: %s", f16name, err.msg);
  if (!qf || !of) goto out;
  int n_quant = 0;
  for (uint64_t i = 0; i < qf->n_tensors; i++) {
    const struct gguf_tensor *qt = &qf->tensors[i];
    const struct ggml_type_info *ti = ggml_type_get(qt->type);
    CHECK_MSG(ti != NULL, "%s: %s has unknown type %u", qname, qt->name, qt->type);
    if (!ti || !ti->quantized) continue;
    n_quant++;
    CHECK_MSG(ti->has_ref, "%s: %s type %s has no reference", qname, qt->name, ti->name);
    const struct gguf_tensor *ot = gguf_find_tensor(of, qt->name);
    CHECK_MSG(ot != NULL, "%s: %s missing from %s", qname, qt->name, f16name);
    if (!ti->has_ref || !ot) continue;
    CHECK_EQ_U64(ot->n_elements, qt->n_elements);
    CHECK_EQ_U64(ot->ne[0], qt->ne[0]);
    if (ot->n_elements != qt->n_elements || !qt->data || !ot->data) continue;
    const int64_t n = (int64_t)qt->n_elements;
    float *orig = malloc((size_t)n * sizeof *orig), *deq = malloc((size_t)n * sizeof *deq);
    uint8_t *mine = malloc(qt->size_bytes);
    CHECK(orig && deq && mine);
    if (orig && deq && mine) {
      CHECK_EQ_INT(ggml_dequantize_ref(ot->type, ot->data, orig, n), 0);
      CHECK_EQ_INT(ggml_dequantize_ref(qt->type, qt->data, deq, n), 0);
      struct qstats st;
      memset(&st, 0, sizeof st);
      qcheck(qt->type, orig, qt->data, deq, n, 64 * 32 * 0x1p-24, &st);
      CHECK_MSG(st.n_bad == 0, "%s: %s (%s): %lld elements off their nearest level (first %lld)",
                qname, qt->name, ti->name, (long long)st.n_bad, (long long)st.first_bad);
      CHECK_MSG(st.n_deq_mismatch == 0, "%s: %s: %lld dequantized values differ from levels",
                qname, qt->name, (long long)st.n_deq_mismatch);
      struct type_tally *ty = &tally[qt->type];
      ty->tensors++;
      ty->elements += st.n;
      ty->bad += st.n_bad;
      ty->deq_mismatch += st.n_deq_mismatch;
      ty->clamped += st.n_clamped;
      ty->sum_err2 += st.sum_err2;
      ty->sum_x2 += st.sum_x2;
      if (st.max_clamp_steps > ty->max_clamp_steps) ty->max_clamp_steps = st.max_clamp_steps;
      const double rel = qstats_rel_rms(&st);
      CHECK_MSG(rel <= qbound_rel_rms(qt->type), "%s: %s (%s) rel RMS %.5f > %.4f", qname,
                qt->name, ti->name, rel, qbound_rel_rms(qt->type));
      CHECK_MSG(st.max_clamp_steps <= qbound_clamp_steps(qt->type),
                "%s: %s (%s) clamp error %.4f steps", qname, qt->name, ti->name,
                st.max_clamp_steps);

      if (byte_exact_type(qt->type)) {
        CHECK_EQ_INT(ggml_quantize_ref(qt->type, orig, mine, n), 0);
        int64_t differ = 0, first = -1;
        for (uint64_t b = 0; b < qt->size_bytes; b++) {
          if (mine[b] != ((const uint8_t *)qt->data)[b]) {
            if (first < 0) first = (int64_t)b;
            differ++;
          }
        }
        CHECK_MSG(differ == 0,
                  "%s: %s (%s): %lld of %llu bytes differ from llama-quantize, first at byte "
                  "%lld (block %lld)",
                  qname, qt->name, ti->name, (long long)differ,
                  (unsigned long long)qt->size_bytes, (long long)first,
                  (long long)(first / ti->type_size));
        ty->bytes_tensors++;
        ty->bytes_compared += (int64_t)qt->size_bytes;
        ty->bytes_differ += differ;
      }
    }
    free(orig);
    free(deq);
    free(mine);
  }
  CHECK_MSG(n_quant > 0, "%s: no quantized tensors", qname);
out:
  if (qf) gguf_close(qf);
  if (of) gguf_close(of);
}

static void test_tiny_llama(void) {
  compare_file("gguf/tiny-llama-Q8_0.gguf", "gguf/tiny-llama-f16.gguf");
  compare_file("gguf/tiny-llama-Q4_0.gguf", "gguf/tiny-llama-f16.gguf");
  compare_file("gguf/tiny-llama-Q4_K_M.gguf", "gguf/tiny-llama-f16.gguf");
}

static void test_kq_llama(void) {
  compare_file("gguf/kq-llama-Q4_K_M.gguf", "gguf/kq-llama-f16.gguf");
  compare_file("gguf/kq-llama-Q6_K.gguf", "gguf/kq-llama-f16.gguf");
}

static void test_summary(void) {
  for (uint32_t t = 0; t < GGML_TYPE_COUNT; t++) {
    const struct type_tally *ty = &tally[t];
    if (!ty->tensors) continue;
    fprintf(stderr,
            "  %-5s %3lld tensors %9lld elements: rel RMS %.5f (bound %.4f), clamped %lld "
            "(max %.3f steps), off-level %lld; bytes: %lld tensors, %lld bytes compared, %lld "
            "differ\n",
            ggml_type_get(t)->name, (long long)ty->tensors, (long long)ty->elements,
            sqrt(ty->sum_err2 / ty->sum_x2), qbound_rel_rms(t), (long long)ty->clamped,
            ty->max_clamp_steps, (long long)ty->bad, (long long)ty->bytes_tensors,
            (long long)ty->bytes_compared, (long long)ty->bytes_differ);
  }
  /* Which types the fixtures hold (README: Q4_K_M on 128-wide rows fell back to
   * Q5_0/Q8_0; kq-llama holds real Q4_K and Q6_K). Every one must have been seen. */
  CHECK(tally[GGML_TYPE_Q8_0].tensors > 0);
  CHECK(tally[GGML_TYPE_Q4_0].tensors > 0);
  CHECK(tally[GGML_TYPE_Q5_0].tensors > 0);
  CHECK(tally[GGML_TYPE_Q4_K].tensors > 0);
  CHECK(tally[GGML_TYPE_Q6_K].tensors > 0);
  /* Byte-identity coverage, pinned: Q4_0 = the 28 layer matrices of
   * tiny-llama-Q4_0; Q5_0 = the 24 of tiny-llama-Q4_K_M that fell back to it;
   * Q8_0 = all 29 of tiny-llama-Q8_0, the embedding of tiny-llama-Q4_0 and 5 of
   * tiny-llama-Q4_K_M. A fixture or reader change shows up here. */
  CHECK_EQ_INT(tally[GGML_TYPE_Q4_0].bytes_tensors, 28);
  CHECK_EQ_INT(tally[GGML_TYPE_Q4_0].bytes_compared, 442368);
  CHECK_EQ_INT(tally[GGML_TYPE_Q5_0].bytes_tensors, 24);
  CHECK_EQ_INT(tally[GGML_TYPE_Q5_0].bytes_compared, 461824);
  CHECK_EQ_INT(tally[GGML_TYPE_Q8_0].bytes_tensors, 35);
  CHECK_EQ_INT(tally[GGML_TYPE_Q8_0].bytes_compared, 14013440);
  CHECK_EQ_INT(tally[GGML_TYPE_Q4_K].tensors, 12);
  CHECK_EQ_INT(tally[GGML_TYPE_Q6_K].tensors, 18);
}

void tm_run_tests(void) {
  TM_RUN(test_tiny_llama);
  TM_RUN(test_kq_llama);
  TM_RUN(test_summary);
}
