/* test_plan: the plan of a fixture's shape at its file type must equal what
 * llama.cpp wrote (tensor names, dims, types, order, data bytes), for every
 * GGUF fixture written or quantized by llama.cpp; plus the rules on shapes the
 * fixtures do not cover (8 experts, use_more_bits on 28 layers, fallbacks). */
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "model/plan.h"
#include "tm_test.h"

/* Reads the shape back from a llama.cpp file's metadata. */
static int shape_from_file(const struct gguf_file *f, struct model_shape *s) {
  struct tm_err err;
  char key[128];
  uint64_t v;
  double d;
  memset(s, 0, sizeof *s);
  if (gguf_get_str(f, "general.architecture", s->arch, sizeof s->arch, &err) != 0) return -1;
#define U(field, suffix)                                                                \
  do {                                                                                  \
    snprintf(key, sizeof key, "%s.%s", s->arch, suffix);                                \
    if (gguf_get_u64(f, key, &v, NULL) == 0) s->field = (uint32_t)v;                    \
  } while (0)
  U(n_layer, "block_count");
  U(n_embd, "embedding_length");
  U(n_head, "attention.head_count");
  U(n_head_kv, "attention.head_count_kv");
  U(head_dim, "attention.key_length");
  U(n_ff, "feed_forward_length");
  U(n_expert, "expert_count");
  U(n_expert_used, "expert_used_count");
  U(n_ff_exp, "expert_feed_forward_length");
  U(n_ctx_train, "context_length");
#undef U
  if (!s->head_dim && s->n_head) s->head_dim = s->n_embd / s->n_head;
  snprintf(key, sizeof key, "%s.rope.freq_base", s->arch);
  s->rope_base = gguf_get_f64(f, key, &d, NULL) == 0 ? (float)d : 10000.0f;
  snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", s->arch);
  s->rms_eps = gguf_get_f64(f, key, &d, NULL) == 0 ? (float)d : 1e-6f;
  const struct gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
  if (!te) return -1;
  s->n_vocab = (uint32_t)te->ne[1];
  s->tied = gguf_find_tensor(f, "output.weight") == NULL;
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const struct plan_tensor *)a)->name, ((const struct plan_tensor *)b)->name);
}

/* Compares the plan with the file; ordered: whether the order must match too
 * (llama-quantize's output is in loader order; the Python writer's is not). */
static void check_fixture(const char *file, bool ordered) {
  struct tm_err err;
  struct gguf_file *f = gguf_open(tm_fixture(file), &err);
  CHECK_MSG(f != NULL, "%s: %s", file, f ? "" : err.msg);
  if (!f) return;
  struct model_shape s;
  uint64_t ftype = 0;
  CHECK_MSG(shape_from_file(f, &s) == 0, "%s: shape", file);
  CHECK(gguf_get_u64(f, "general.file_type", &ftype, &err) == 0);
  struct model_plan plan;
  int rc = model_plan_make(&s, (int)ftype, &plan, &err);
  CHECK_MSG(rc == 0, "%s: plan: %s", file, rc ? err.msg : "");
  if (rc) {
    gguf_close(f);
    return;
  }
  CHECK_EQ_U64(plan.n_tensors, f->n_tensors);
  /* as a set: sort a copy of both by name */
  struct plan_tensor *ft = calloc(f->n_tensors, sizeof *ft);
  struct plan_tensor *pt = calloc(plan.n_tensors, sizeof *pt);
  uint64_t file_bytes = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    snprintf(ft[i].name, sizeof ft[i].name, "%s", f->tensors[i].name);
    ft[i].n_dims = f->tensors[i].n_dims;
    memcpy(ft[i].ne, f->tensors[i].ne, sizeof ft[i].ne);
    ft[i].type = f->tensors[i].type;
    file_bytes += f->tensors[i].size_bytes;
    if (ordered && i < plan.n_tensors)
      CHECK_MSG(strcmp(plan.tensors[i].name, f->tensors[i].name) == 0,
                "%s: tensor %llu is %s in the file, %s in the plan", file, (unsigned long long)i,
                f->tensors[i].name, plan.tensors[i].name);
  }
  memcpy(pt, plan.tensors, plan.n_tensors * sizeof *pt);
  qsort(ft, f->n_tensors, sizeof *ft, cmp_name);
  qsort(pt, plan.n_tensors, sizeof *pt, cmp_name);
  size_t n = plan.n_tensors < f->n_tensors ? plan.n_tensors : f->n_tensors;
  for (size_t i = 0; i < n; i++) {
    CHECK_MSG(strcmp(pt[i].name, ft[i].name) == 0, "%s: name %s vs %s", file, pt[i].name,
              ft[i].name);
    CHECK_MSG(pt[i].n_dims == ft[i].n_dims, "%s: %s n_dims %u vs %u", file, pt[i].name,
              pt[i].n_dims, ft[i].n_dims);
    for (int d = 0; d < 4; d++)
      CHECK_MSG(pt[i].ne[d] == ft[i].ne[d], "%s: %s ne[%d] %llu vs %llu", file, pt[i].name, d,
                (unsigned long long)pt[i].ne[d], (unsigned long long)ft[i].ne[d]);
    CHECK_MSG(pt[i].type == ft[i].type, "%s: %s type %u (plan) vs %u (llama.cpp)", file,
              pt[i].name, pt[i].type, ft[i].type);
  }
  CHECK_EQ_U64(model_plan_data_bytes(&plan), file_bytes);
  free(ft);
  free(pt);
  model_plan_free(&plan);
  gguf_close(f);
}

static void test_fixtures_llama(void) {
  check_fixture("gguf/tiny-llama-f16.gguf", false);
  check_fixture("gguf/tiny-llama-Q8_0.gguf", true);
  check_fixture("gguf/tiny-llama-Q4_0.gguf", true);
  check_fixture("gguf/tiny-llama-Q4_K_M.gguf", true);
  check_fixture("gguf/kq-llama-f16.gguf", false);
  check_fixture("gguf/kq-llama-Q4_K_M.gguf", true);
  check_fixture("gguf/kq-llama-Q6_K.gguf", true);
}

static void test_fixtures_qwen(void) {
  check_fixture("gguf/tiny-qwen2-Q8_0.gguf", true);
  check_fixture("gguf/tiny-qwen3-Q8_0.gguf", true);
  check_fixture("gguf/tiny-qwen3moe-f16.gguf", false);
  check_fixture("gguf/tiny-qwen3moe-Q8_0.gguf", true);
}

static const struct plan_tensor *find(const struct model_plan *p, const char *name) {
  for (size_t i = 0; i < p->n_tensors; i++)
    if (strcmp(p->tensors[i].name, name) == 0) return &p->tensors[i];
  return NULL;
}

static uint32_t type_of(const struct model_plan *p, const char *name) {
  const struct plan_tensor *t = find(p, name);
  return t ? t->type : 9999;
}

/* The Qwen3-0.6B shape: what the fixtures README says llama-quantize chose, and
 * use_more_bits on 28 layers (n/8 = 3, 7n/8 = 24: layers 0-2, 5, 8, ..., 23,
 * 24-27). */
static void test_qwen3_06b(void) {
  const struct model_preset *pr = model_preset_find("qwen3-0.6b");
  CHECK(pr != NULL);
  if (!pr) return;
  struct model_plan p;
  struct tm_err err;
  CHECK(model_plan_make(&pr->shape, MODEL_FTYPE_Q4_0, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "token_embd.weight"), GGML_TYPE_Q6_K);
  CHECK_EQ_INT(type_of(&p, "blk.0.attn_q.weight"), GGML_TYPE_Q4_0);
  CHECK_EQ_INT(type_of(&p, "blk.27.ffn_down.weight"), GGML_TYPE_Q4_0);
  CHECK_EQ_INT(type_of(&p, "blk.3.attn_q_norm.weight"), GGML_TYPE_F32);
  CHECK(find(&p, "output.weight") == NULL);
  /* order: numeric layers (blk.2 before blk.10), names within a layer */
  CHECK_STR(p.tensors[0].name, "output_norm.weight");
  CHECK_STR(p.tensors[1].name, "token_embd.weight");
  CHECK_STR(p.tensors[2].name, "blk.0.attn_k.weight");
  model_plan_free(&p);

  CHECK(model_plan_make(&pr->shape, MODEL_FTYPE_Q8_0, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "token_embd.weight"), GGML_TYPE_Q8_0);
  model_plan_free(&p);

  CHECK(model_plan_make(&pr->shape, MODEL_FTYPE_Q4_K_M, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "token_embd.weight"), GGML_TYPE_Q6_K);
  static const int more[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
  for (int l = 0; l < 28; l++) {
    int m = 0;
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) m |= more[k] == l;
    char name[64];
    snprintf(name, sizeof name, "blk.%d.attn_v.weight", l);
    CHECK_MSG(type_of(&p, name) == (uint32_t)(m ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K), "%s", name);
    snprintf(name, sizeof name, "blk.%d.ffn_down.weight", l);
    CHECK_MSG(type_of(&p, name) == (uint32_t)(m ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K), "%s", name);
    snprintf(name, sizeof name, "blk.%d.attn_q.weight", l);
    CHECK_EQ_INT(type_of(&p, name), GGML_TYPE_Q4_K);
  }
  model_plan_free(&p);

  CHECK(model_plan_make(&pr->shape, MODEL_FTYPE_Q4_K_S, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "blk.3.attn_v.weight"), GGML_TYPE_Q5_K);
  CHECK_EQ_INT(type_of(&p, "blk.4.attn_v.weight"), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(type_of(&p, "blk.2.ffn_down.weight"), GGML_TYPE_Q5_K);
  CHECK_EQ_INT(type_of(&p, "blk.3.ffn_down.weight"), GGML_TYPE_Q4_K);
  model_plan_free(&p);

  CHECK(model_plan_make(&pr->shape, MODEL_FTYPE_F16, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "token_embd.weight"), GGML_TYPE_F16);
  CHECK_EQ_INT(type_of(&p, "blk.0.attn_norm.weight"), GGML_TYPE_F32);
  model_plan_free(&p);
}

/* 8 experts: attn_k and attn_v in Q8_0, attn_output Q5_K for Q4_K_M; router F32;
 * expert tensors 3-D; untied output in Q6_K, token_embd in the default type. */
static void test_moe8_untied(void) {
  struct model_shape s = {"qwen3moe", 4, 256, 4, 2, 64, 768, 1000, 8, 2, 256, false,
                          1e6f, 1e-6f, 4096};
  struct model_plan p;
  struct tm_err err;
  CHECK(model_plan_make(&s, MODEL_FTYPE_Q4_K_M, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "blk.1.attn_v.weight"), GGML_TYPE_Q8_0);
  CHECK_EQ_INT(type_of(&p, "blk.1.attn_k.weight"), GGML_TYPE_Q8_0);
  CHECK_EQ_INT(type_of(&p, "blk.1.attn_output.weight"), GGML_TYPE_Q5_K);
  CHECK_EQ_INT(type_of(&p, "blk.1.ffn_gate_inp.weight"), GGML_TYPE_F32);
  CHECK_EQ_INT(type_of(&p, "blk.3.ffn_down_exps.weight"), GGML_TYPE_Q6_K);
  CHECK_EQ_INT(type_of(&p, "blk.1.ffn_down_exps.weight"), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(type_of(&p, "output.weight"), GGML_TYPE_Q6_K);
  CHECK_EQ_INT(type_of(&p, "token_embd.weight"), GGML_TYPE_Q4_K);
  const struct plan_tensor *e = find(&p, "blk.0.ffn_gate_exps.weight");
  CHECK(e && e->n_dims == 3 && e->ne[0] == 256 && e->ne[1] == 256 && e->ne[2] == 8);
  e = find(&p, "blk.0.ffn_down_exps.weight");
  CHECK(e && e->n_dims == 3 && e->ne[0] == 256 && e->ne[1] == 256 && e->ne[2] == 8);
  model_plan_free(&p);
}

/* Row lengths that a type's block does not divide: K-quants fall back (to F16
 * when even 32 does not divide), 32-block types have no fallback -> error. */
static void test_fallbacks(void) {
  struct model_shape s = {"llama", 2, 48, 4, 2, 12, 96, 100, 0, 0, 0, true, 1e4f, 1e-5f, 4096};
  struct model_plan p;
  struct tm_err err;
  CHECK(model_plan_make(&s, MODEL_FTYPE_Q4_0, &p, &err) != 0);
  CHECK_CONTAINS(err.msg, "not a multiple");
  /* the output head goes to Q8_0, which 48 does not divide: llama.cpp stops too */
  CHECK(model_plan_make(&s, MODEL_FTYPE_Q4_K_M, &p, &err) != 0);
  CHECK_CONTAINS(err.msg, "token_embd.weight");
  CHECK(model_plan_make(&s, MODEL_FTYPE_F16, &p, &err) == 0);
  model_plan_free(&p);
  s.n_embd = 64; s.head_dim = 16; /* 64: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0 */
  s.n_ff = 80; /* ffn_down rows of 80: Q4_K -> Q5_0, which 80 does not divide -> F16 */
  CHECK(model_plan_make(&s, MODEL_FTYPE_Q4_K_M, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "blk.0.ffn_down.weight"), GGML_TYPE_F16);
  CHECK_EQ_INT(type_of(&p, "blk.1.ffn_down.weight"), GGML_TYPE_F16);
  CHECK_EQ_INT(type_of(&p, "blk.0.ffn_up.weight"), GGML_TYPE_Q5_0);
  model_plan_free(&p);
  s.n_ff = 96;
  CHECK(model_plan_make(&s, MODEL_FTYPE_Q5_K_S, &p, &err) == 0);
  CHECK_EQ_INT(type_of(&p, "blk.0.attn_q.weight"), GGML_TYPE_Q5_1);
  CHECK_EQ_INT(type_of(&p, "token_embd.weight"), GGML_TYPE_Q8_0);
  model_plan_free(&p);
  CHECK(model_plan_make(&s, 99, &p, &err) != 0);
}

/* An odd head dimension is refused before any plan: synth wrote 64 / 3 heads
 * as head_dim 21, which neither llama.cpp nor the engine runs (RoPE pairs). */
static void test_odd_head_refused(void) {
  struct model_shape s = {"llama", 2, 64, 3, 3, 21, 128, 256, 0, 0, 0, true, 1e4f, 1e-5f, 4096};
  struct model_plan p;
  struct tm_err err = {{0}};
  CHECK(model_shape_validate(&s, &err) != 0);
  CHECK_CONTAINS(err.msg, "head dimension 21 (3 heads, n_embd 64) must be even");
  CHECK(model_plan_make(&s, MODEL_FTYPE_Q8_0, &p, &err) != 0); /* not a row-length error */
  CHECK_CONTAINS(err.msg, "must be even");
  s.head_dim = 22;
  CHECK(model_shape_validate(&s, &err) == 0);
}

static void test_ftype_names(void) {
  CHECK_EQ_INT(model_ftype_from_name("q4_k_m"), MODEL_FTYPE_Q4_K_M);
  CHECK_EQ_INT(model_ftype_from_name("BF16"), MODEL_FTYPE_BF16);
  CHECK_EQ_INT(model_ftype_from_name("Q3_K"), -1);
  CHECK_STR(model_ftype_name(MODEL_FTYPE_Q6_K), "Q6_K");
  CHECK(model_ftype_name(5) == NULL);
  CHECK_CONTAINS(model_ftype_names(), "Q5_K_M");
}

void tm_run_tests(void) {
  TM_RUN(test_fixtures_llama);
  TM_RUN(test_fixtures_qwen);
  TM_RUN(test_qwen3_06b);
  TM_RUN(test_moe8_untied);
  TM_RUN(test_fallbacks);
  TM_RUN(test_odd_head_refused);
  TM_RUN(test_ftype_names);
}
