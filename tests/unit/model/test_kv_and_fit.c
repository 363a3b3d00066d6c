/* test_kv_and_fit: KV bytes and attention FLOPs when key and value heads
 * differ in length, layers marked windowed in a file without a window, and
 * the context that fits in memory with an overhead and near the trained
 * context length. Hand-made descriptions; every figure worked out in the
 * comments from docs/design.md "The ceiling":
 *   KV per layer per token = n_head_kv x (key_length + value_length) x elem
 *   attention FLOPs per token per unit of depth = 2 x n_head x (k + v). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "model/analysis.h"
#include "tm_test.h"

static void add_f32(struct model_desc *d, const char *name, uint64_t a, uint64_t b) {
  uint64_t ne[4] = {a, b, 1, 1};
  CHECK(model_desc_add_tensor(d, name, 2, ne, GGML_TYPE_F32, NULL) == 0);
}

/* One layer, 4 query heads, 2 KV heads, keys of 192 and values of 128 (the
 * lengths differ in multi-head latent attention files, e.g. DeepSeek's
 * 192 / 128). F16 cache: 2 x (192 + 128) x 2 = 1280 bytes per token;
 * attention 2 x 4 x 320 = 2560 FLOPs per token per token of depth. */
static void key_and_value_lengths_differ(void) {
  struct model_desc d;
  CHECK(model_desc_init(&d, 1, NULL) == 0);
  strcpy(d.arch, "deepseek2");
  d.key_length = 192;
  d.value_length = 128;
  d.n_head[0] = 4;
  d.n_head_kv[0] = 2;
  add_f32(&d, "blk.0.attn_q.weight", 64, 64);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  CHECK_NEAR(c.kv_bytes_per_token, 1280, 1e-9);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 1000), 1280000, 1e-6);
  CHECK_NEAR(model_decode_flops_at_depth(&c, 100) - model_decode_flops_at_depth(&c, 0),
             256000, 1e-6);
  /* F32 cache: twice the bytes */
  struct model_analyze_options o = {GGML_TYPE_F32};
  CHECK(model_analyze(&d, &o, &c, NULL) == 0);
  CHECK_NEAR(c.kv_bytes_per_token, 2560, 1e-9);
  model_desc_free(&d);
}

/* Two layers marked windowed, one full, but no window size: nothing caps
 * them, so all three grow with depth like full attention. Per layer
 * 1 x (8 + 8) x 2 = 32 bytes per token. */
static void windowed_without_a_window_is_full(void) {
  struct model_desc d;
  CHECK(model_desc_init(&d, 3, NULL) == 0);
  strcpy(d.arch, "gemma2");
  d.key_length = d.value_length = 8;
  for (int il = 0; il < 3; il++) {
    d.n_head[il] = 2;
    d.n_head_kv[il] = 1;
    d.layer_kind[il] = il < 2 ? MODEL_LAYER_ATTN_SWA : MODEL_LAYER_ATTN;
  }
  add_f32(&d, "blk.0.attn_q.weight", 16, 16);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  CHECK_EQ_INT(c.n_swa_layers, 0);
  CHECK_EQ_INT(c.n_attn_layers, 3);
  CHECK_NEAR(c.kv_bytes_per_token_full, 96, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token_swa, 0, 0);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 5000), 96 * 5000.0, 1e-6);
  /* FLOPs: 3 layers x 2 x 2 heads x 16 = 192 per token of depth */
  CHECK_NEAR(model_decode_flops_at_depth(&c, 5000) - model_decode_flops_at_depth(&c, 0),
             192 * 5000.0, 1e-6);
  model_desc_free(&d);
}

/* One full-attention layer, 2 KV heads of 16 + 16: 128 bytes per token of
 * context (F16). Weights: one F32 tensor of 32 x 32 = 4096 bytes. */
static void make_small(struct model_desc *d, uint64_t context_length) {
  CHECK(model_desc_init(d, 1, NULL) == 0);
  strcpy(d->arch, "llama");
  d->key_length = d->value_length = 16;
  d->n_head[0] = 4;
  d->n_head_kv[0] = 2;
  d->context_length = context_length;
  add_f32(d, "blk.0.attn_q.weight", 32, 32);
}

static void context_fit_with_overhead(void) {
  struct model_desc d;
  make_small(&d, 0);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  CHECK_EQ_U64(c.bytes_total, 4096);
  bool capped = true;
  /* 4096 weights + 1000 overhead + 50 x 128 of KV: exactly 50 tokens */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 1000 + 6400, 1000, &capped), 50);
  CHECK(!capped);
  /* the overhead is taken away, never added: 1000 more of it, 1000 / 128 =
   * 7.8 fewer tokens: 42 */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 1000 + 6400, 2000, &capped), 42);
  /* an overhead that eats what the weights left: nothing fits */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 1000, 1000, &capped), 0);
  /* no known context length and no cap: the memory decides */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 128 * 1e6, 0, &capped), 1000000);
  CHECK(!capped);
  model_desc_free(&d);
}

static void context_fit_near_the_trained_length(void) {
  struct model_desc d;
  make_small(&d, 100);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  bool capped = false;
  /* memory for 101 tokens: the model was trained for 100 */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 101 * 128, 0, &capped), 100);
  CHECK(capped);
  /* memory for 100: exactly the trained length, not capped by it */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 100 * 128, 0, &capped), 100);
  CHECK(!capped);
  /* memory for 99 */
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 99 * 128, 0, &capped), 99);
  CHECK(!capped);
  model_desc_free(&d);
}

void tm_run_tests(void) {
  TM_RUN(key_and_value_lengths_differ);
  TM_RUN(windowed_without_a_window_is_full);
  TM_RUN(context_fit_with_overhead);
  TM_RUN(context_fit_near_the_trained_length);
}
