/* test_layer_layouts: which layers attend, which keep a recurrent state and
 * how big it is, read from the metadata of architectures the other tests do
 * not cover: a periodic hybrid (full_attention_interval), a parallel hybrid
 * (SSM state beside every layer's KV), Mamba-2 groups, RWKV, a short-conv
 * model, a per-layer sliding-window pattern shorter than block_count, and the
 * window patterns llama.cpp hard-codes (llama4, gemma3n).
 *
 * Each file is written here with tiny tensors. The expected layouts are
 * llama.cpp's rules (the facts docs/design.md "The ceiling" builds on):
 *  - full_attention_interval N: layer il is recurrent when (il + 1) % N != 0
 *    (llama.cpp qwen3next / qwen35);
 *  - set_swa_pattern(P): layer il is windowed when il % P < P - 1
 *    (llama_hparams::set_swa_pattern); gemma3n P = 5; llama4 P = 4 with a
 *    window of 8192, unless attention.sliding_window is present and 0, which
 *    turns chunked attention off (llama.cpp's llama4 loader);
 *  - recurrent state per layer, F32 (llama_hparams n_embd_r + n_embd_s):
 *    Mamba: (conv_kernel - 1) x (inner + 2 x groups x state) + state x inner;
 *    RWKV: n_embd x token_shift_count (default 2) + n_embd x wkv.head_size;
 *    short conv: n_embd x (l_cache - 1).
 * Every byte count below is worked out from those rules in the comment above
 * its check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "model/analysis.h"
#include "tm_test.h"

/* Writes a GGUF with the metadata meta() adds and n_layer blocks, each with
 * an F32 attn_norm of 64 (so every block holds a tensor), plus an F32
 * token_embd and output of 64 x 10. Returns the analysed cost in *c and the
 * description in *d (caller frees d); 0 on success. */
static int analyse(const char *fname, void (*meta)(struct gguf_writer *), uint32_t n_layer,
                   struct model_desc *d, struct model_cost *c) {
  struct gguf_writer *w = gguf_writer_new(32);
  CHECK(w != NULL);
  if (!w) return -1;
  meta(w);
  const uint64_t emb[2] = {64, 10}, norm[1] = {64};
  CHECK(gguf_w_tensor(w, "token_embd.weight", 2, emb, GGML_TYPE_F32) >= 0);
  CHECK(gguf_w_tensor(w, "output.weight", 2, emb, GGML_TYPE_F32) >= 0);
  char name[64];
  for (uint32_t il = 0; il < n_layer; il++) {
    snprintf(name, sizeof name, "blk.%u.attn_norm.weight", il);
    CHECK(gguf_w_tensor(w, name, 1, norm, GGML_TYPE_F32) >= 0);
  }
  const char *path = tm_tmpfile(fname);
  FILE *fp = fopen(path, "wb");
  CHECK(fp != NULL);
  struct tm_err err = {{0}};
  int rc = fp ? gguf_w_begin(w, fp, &err) : -1;
  static const float zeros[640];
  for (uint32_t i = 0; rc == 0 && i < n_layer + 2; i++)
    rc = gguf_w_data(w, zeros, (size_t)gguf_w_tensor_bytes(w, (int)i), &err);
  if (rc == 0) rc = gguf_w_end(w, &err);
  CHECK_MSG(rc == 0, "%s: %s", fname, err.msg);
  if (fp) fclose(fp);
  gguf_writer_free(w);
  if (rc) return -1;
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s: %s", fname, err.msg);
  if (!f) return -1;
  rc = model_desc_from_gguf(f, d, &err);
  CHECK_MSG(rc == 0, "%s: %s", fname, err.msg);
  gguf_close(f);
  if (rc) return -1;
  rc = model_analyze(d, NULL, c, &err); /* F16 cache: 2 bytes per element */
  CHECK_MSG(rc == 0, "%s: %s", fname, err.msg);
  if (rc) model_desc_free(d);
  return rc;
}

/* Weights read per token in every file here: one F32 row of the embedding
 * (256 bytes), the F32 head in full (2560), and n_layer norms of 256. */
static double weights(uint32_t n_layer) { return 256.0 + 2560.0 + 256.0 * n_layer; }

static bool any_assumption(const struct model_cost *c, const char *needle) {
  for (size_t i = 0; i < c->n_assumptions; i++)
    if (strstr(c->assumptions[i], needle)) return true;
  return false;
}

/* Shared attention keys: 4 query heads, 2 KV heads of 16 + 16. One attention
 * layer then holds 2 x (16 + 16) x 2 bytes (F16) = 128 bytes per token. */
static void attn_keys(struct gguf_writer *w, const char *arch) {
  char k[96];
  snprintf(k, sizeof k, "%s.embedding_length", arch);
  gguf_w_u32(w, k, 64);
  snprintf(k, sizeof k, "%s.attention.head_count", arch);
  gguf_w_u32(w, k, 4);
  snprintf(k, sizeof k, "%s.attention.head_count_kv", arch);
  gguf_w_u32(w, k, 2);
  snprintf(k, sizeof k, "%s.attention.key_length", arch);
  gguf_w_u32(w, k, 16);
  snprintf(k, sizeof k, "%s.attention.value_length", arch);
  gguf_w_u32(w, k, 16);
}

/* ---------------------------------------------------- periodic hybrid -- */

static void meta_interval(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "qwen3next");
  gguf_w_u32(w, "qwen3next.block_count", 6);
  attn_keys(w, "qwen3next");
  gguf_w_u32(w, "qwen3next.full_attention_interval", 4);
  gguf_w_u32(w, "qwen3next.ssm.conv_kernel", 4);
  gguf_w_u32(w, "qwen3next.ssm.state_size", 16);
  gguf_w_u32(w, "qwen3next.ssm.inner_size", 128);
  gguf_w_u32(w, "qwen3next.ssm.group_count", 2);
}

static void periodic_hybrid(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("interval.gguf", meta_interval, 6, &d, &c) != 0) return;
  /* (il + 1) % 4 != 0: layers 0, 1, 2, 4, 5 recurrent; layer 3 attends. */
  static const uint8_t want[6] = {MODEL_LAYER_RECURRENT, MODEL_LAYER_RECURRENT,
                                  MODEL_LAYER_RECURRENT, MODEL_LAYER_ATTN,
                                  MODEL_LAYER_RECURRENT, MODEL_LAYER_RECURRENT};
  for (int il = 0; il < 6; il++) CHECK_MSG(d.layer_kind[il] == want[il], "layer %d", il);
  CHECK_EQ_INT(c.n_recurrent_layers, 5);
  CHECK_EQ_INT(c.n_attn_layers, 1);
  /* Mamba-2 state with 2 groups: conv 3 x (128 + 2 x 2 x 16) = 576, SSM
   * 16 x 128 = 2048; 2624 F32 values = 10496 bytes per layer, 5 layers. */
  CHECK_EQ_U64(d.recurrent_state_bytes, 10496);
  CHECK_NEAR(c.state_bytes, 5 * 10496.0, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 128, 1e-9);
  CHECK_NEAR(model_decode_bytes_at_depth(&c, 1000), weights(6) + 52480 + 128000, 1e-6);
  model_desc_free(&d);
}

/* ---------------------------------------------------- parallel hybrid -- */

static void meta_parallel(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "falcon-h1");
  gguf_w_u32(w, "falcon-h1.block_count", 2);
  attn_keys(w, "falcon-h1");
  gguf_w_u32(w, "falcon-h1.ssm.conv_kernel", 4);
  gguf_w_u32(w, "falcon-h1.ssm.state_size", 16);
  /* no inner_size: the documented default 2 x n_embd = 128; no group_count */
}

static void parallel_hybrid(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("parallel.gguf", meta_parallel, 2, &d, &c) != 0) return;
  CHECK_EQ_INT(c.n_attn_layers, 2);
  CHECK_EQ_INT(c.n_recurrent_layers, 0);
  CHECK_EQ_INT(d.n_state_layers_extra, 2);
  /* state per layer: conv 3 x 128 = 384, SSM 16 x 128 = 2048: 2432 x 4 =
   * 9728 bytes, kept beside the KV cache by both layers. */
  CHECK_EQ_U64(d.recurrent_state_bytes, 9728);
  CHECK_NEAR(c.state_bytes, 2 * 9728.0, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 256, 1e-9);
  CHECK_NEAR(model_decode_bytes_at_depth(&c, 100), weights(2) + 19456 + 25600, 1e-6);
  CHECK(any_assumption(&c, "ssm.inner_size absent"));
  CHECK(any_assumption(&c, "parallel hybrid"));
  model_desc_free(&d);
}

/* --------------------------------------------------------------- RWKV -- */

static void meta_rwkv(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "rwkv6");
  gguf_w_u32(w, "rwkv6.block_count", 2);
  gguf_w_u32(w, "rwkv6.embedding_length", 64);
  gguf_w_u32(w, "rwkv6.wkv.head_size", 16);
}

static void meta_rwkv_one_shift(struct gguf_writer *w) {
  meta_rwkv(w);
  gguf_w_u32(w, "rwkv6.token_shift_count", 1);
}

static void rwkv(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("rwkv.gguf", meta_rwkv, 2, &d, &c) != 0) return;
  CHECK_EQ_INT(c.n_recurrent_layers, 2);
  CHECK_EQ_INT(c.n_attn_layers, 0);
  /* 64 x 16 + 2 shifts x 64 = 1152 F32 values = 4608 bytes per layer. */
  CHECK_EQ_U64(d.recurrent_state_bytes, 4608);
  CHECK_NEAR(c.state_bytes, 9216, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 0, 0);
  /* constant in depth: nothing grows */
  CHECK_NEAR(model_decode_bytes_at_depth(&c, 100000), weights(2) + 9216, 1e-6);
  model_desc_free(&d);
  if (analyse("rwkv1.gguf", meta_rwkv_one_shift, 2, &d, &c) != 0) return;
  /* one shift: 64 x 16 + 64 = 1088 values = 4352 bytes */
  CHECK_EQ_U64(d.recurrent_state_bytes, 4352);
  model_desc_free(&d);
}

/* ---------------------------------------------------------- short conv -- */

static void meta_shortconv(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "lfm2");
  gguf_w_u32(w, "lfm2.block_count", 4);
  gguf_w_u32(w, "lfm2.embedding_length", 64);
  gguf_w_u32(w, "lfm2.attention.head_count", 4);
  const uint32_t kv[4] = {0, 0, 2, 0};
  gguf_w_arr(w, "lfm2.attention.head_count_kv", GGUF_VT_UINT32, kv, 4);
  gguf_w_u32(w, "lfm2.attention.key_length", 16);
  gguf_w_u32(w, "lfm2.attention.value_length", 16);
  gguf_w_u32(w, "lfm2.shortconv.l_cache", 3);
}

static void short_conv(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("lfm2.gguf", meta_shortconv, 4, &d, &c) != 0) return;
  CHECK_EQ_INT(d.layer_kind[2], MODEL_LAYER_ATTN);
  CHECK_EQ_INT(c.n_recurrent_layers, 3);
  /* 64 x (3 - 1) = 128 F32 values = 512 bytes per conv layer, 3 of them. */
  CHECK_EQ_U64(d.recurrent_state_bytes, 512);
  CHECK_NEAR(c.state_bytes, 1536, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 128, 1e-9);
  model_desc_free(&d);
}

/* --------------------------------------------------- window patterns -- */

static void meta_pattern_short(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "testarch");
  gguf_w_u32(w, "testarch.block_count", 4);
  attn_keys(w, "testarch");
  gguf_w_u32(w, "testarch.attention.sliding_window", 128);
  const uint8_t flags[2] = {1, 0};
  gguf_w_arr(w, "testarch.attention.sliding_window_pattern", GGUF_VT_BOOL, flags, 2);
}

static void pattern_array_repeats_its_last_flag(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("pattern.gguf", meta_pattern_short, 4, &d, &c) != 0) return;
  /* {true, false} for 4 layers: layer 0 windowed, 1..3 take the last flag. */
  CHECK_EQ_INT(d.layer_kind[0], MODEL_LAYER_ATTN_SWA);
  for (int il = 1; il < 4; il++) CHECK_MSG(d.layer_kind[il] == MODEL_LAYER_ATTN, "layer %d", il);
  CHECK_NEAR(c.kv_bytes_per_token_full, 384, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token_swa, 128, 1e-9);
  /* depth 1000: 3 full layers x 128 x 1000 + the windowed one at 128 tokens */
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 1000), 384000 + 128 * 128, 1e-6);
  model_desc_free(&d);
}

static void meta_llama4(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "llama4");
  gguf_w_u32(w, "llama4.block_count", 4);
  attn_keys(w, "llama4");
}

static void meta_llama4_no_chunks(struct gguf_writer *w) {
  meta_llama4(w);
  gguf_w_u32(w, "llama4.attention.sliding_window", 0);
}

static void llama4_chunks(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("llama4.gguf", meta_llama4, 4, &d, &c) != 0) return;
  /* no window key: llama.cpp's 8192-token chunks on 3 of every 4 layers */
  CHECK_EQ_INT(c.sliding_window, 8192);
  CHECK_EQ_INT(c.n_swa_layers, 3);
  CHECK_EQ_INT(d.layer_kind[3], MODEL_LAYER_ATTN);
  CHECK(any_assumption(&c, "llama4 chunked attention"));
  /* depth 10000: the full layer 128 x 10000, the chunked ones 3 x 128 x 8192 */
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 10000), 1280000 + 3 * 128 * 8192.0, 1e-6);
  model_desc_free(&d);
  /* sliding_window present and 0: llama.cpp turns chunked attention off,
   * every layer attends to the whole context */
  if (analyse("llama4_full.gguf", meta_llama4_no_chunks, 4, &d, &c) != 0) return;
  CHECK_EQ_INT(c.sliding_window, 0);
  CHECK_EQ_INT(c.n_swa_layers, 0);
  CHECK_EQ_INT(c.n_attn_layers, 4);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 10000), 512 * 10000.0, 1e-6);
  model_desc_free(&d);
}

static void meta_gemma3n(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "gemma3n");
  gguf_w_u32(w, "gemma3n.block_count", 10);
  attn_keys(w, "gemma3n");
  gguf_w_u32(w, "gemma3n.attention.sliding_window", 512);
}

static void gemma3n_period_five(void) {
  struct model_desc d;
  struct model_cost c;
  if (analyse("gemma3n.gguf", meta_gemma3n, 10, &d, &c) != 0) return;
  /* il % 5 < 4: layers 4 and 9 attend to everything, the other 8 windowed */
  for (int il = 0; il < 10; il++)
    CHECK_MSG(d.layer_kind[il] == (il % 5 == 4 ? MODEL_LAYER_ATTN : MODEL_LAYER_ATTN_SWA),
              "layer %d: kind %d", il, d.layer_kind[il]);
  CHECK_EQ_INT(c.n_swa_layers, 8);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 2000), 2 * 128 * 2000.0 + 8 * 128 * 512.0, 1e-6);
  model_desc_free(&d);
}

void tm_run_tests(void) {
  TM_RUN(periodic_hybrid);
  TM_RUN(parallel_hybrid);
  TM_RUN(rwkv);
  TM_RUN(short_conv);
  TM_RUN(pattern_array_repeats_its_last_flag);
  TM_RUN(llama4_chunks);
  TM_RUN(gemma3n_period_five);
}
