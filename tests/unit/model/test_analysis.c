/* test_analysis: model_desc + model_analyze against values computed by hand
 * (dense untied/tied, MoE, sliding window, hybrid, 0-KV-head and MTP layers),
 * the GGUF metadata path (a file written here with the keys of other
 * architectures), the real fixtures, and a synth plan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "model/analysis.h"
#include "model/plan.h"
#include "tm_test.h"

static void add(struct model_desc *d, const char *name, uint64_t a, uint64_t b, uint64_t c,
                uint32_t type) {
  uint64_t ne[4] = {a, b ? b : 1, c ? c : 1, 1};
  uint32_t nd = c ? 3 : b ? 2 : 1;
  CHECK(model_desc_add_tensor(d, name, nd, ne, type, NULL) == 0);
}

/* Dense: 2 layers, n_embd 64, 4 heads, 2 KV heads, head_dim 16, n_ff 128, vocab
 * 100; the embedding in Q8_0, the head in F16, everything else F32. */
static void make_dense(struct model_desc *d, bool tied) {
  CHECK(model_desc_init(d, 2, NULL) == 0);
  strcpy(d->arch, "llama");
  d->n_embd = 64;
  d->n_vocab = 100;
  d->key_length = d->value_length = 16;
  d->context_length = 4096;
  for (int il = 0; il < 2; il++) {
    d->n_head[il] = 4;
    d->n_head_kv[il] = 2;
  }
  add(d, "token_embd.weight", 64, 100, 0, GGML_TYPE_Q8_0);
  if (!tied) add(d, "output.weight", 64, 100, 0, GGML_TYPE_F16);
  add(d, "output_norm.weight", 64, 0, 0, GGML_TYPE_F32);
  char name[64];
  for (int il = 0; il < 2; il++) {
    static const struct { const char *n; uint64_t a, b; } w[] = {
        {"attn_q", 64, 64}, {"attn_k", 64, 32}, {"attn_v", 64, 32}, {"attn_output", 64, 64},
        {"ffn_up", 64, 128}, {"ffn_down", 128, 64}, {"attn_norm", 64, 0}};
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
      snprintf(name, sizeof name, "blk.%d.%s.weight", il, w[k].n);
      add(d, name, w[k].a, w[k].b, 0, GGML_TYPE_F32);
    }
  }
}

/* Per layer, F32: q 4096 + k 2048 + v 2048 + o 4096 + up 8192 + down 8192 + norm 64. */
#define LAYER_PARAMS (4096 + 2048 + 2048 + 4096 + 8192 + 8192 + 64)
#define LAYER_BYTES (4 * LAYER_PARAMS)

static void test_dense_untied(void) {
  struct model_desc d;
  make_dense(&d, false);
  struct model_analyze_options o = {GGML_TYPE_F16};
  struct model_cost c;
  struct tm_err err = {{0}};
  CHECK(model_analyze(&d, &o, &c, &err) == 0);
  CHECK(!c.tied);
  CHECK_EQ_U64(c.params_total, 6400 + 6400 + 64 + 2 * LAYER_PARAMS);
  CHECK_EQ_U64(c.bytes_total, 6800 + 12800 + 256 + 2 * LAYER_BYTES);
  /* Embedding: one Q8_0 row of 64 = 2 blocks x 34 bytes; head in full. */
  CHECK_NEAR(c.weight_bytes_per_token, 68 + 12800 + 256 + 2 * LAYER_BYTES, 1e-9);
  CHECK_NEAR(model_decode_bytes_at_depth(&c, 0), 68 + 12800 + 256 + 2 * LAYER_BYTES, 1e-9);
  CHECK_NEAR(c.params_active, (double)c.params_total, 1e-9);
  CHECK_EQ_U64(c.params_output, 6400);
  CHECK_NEAR(c.params_layers_active, 64 + 2 * LAYER_PARAMS, 1e-9);
  /* KV: 2 layers x 2 KV heads x (16 + 16) x 2 bytes (F16). */
  CHECK_NEAR(c.kv_bytes_per_token, 256, 1e-9);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 1000), 256000, 1e-6);
  CHECK_NEAR(model_decode_bytes_at_depth(&c, 1000), c.weight_bytes_per_token + 256000, 1e-6);
  CHECK_EQ_INT(c.n_attn_layers, 2);
  /* FLOPs: 2 x layer params + 2 x head + attention 2 x 4 heads x 32 x depth per layer. */
  double base = 2.0 * (64 + 2 * LAYER_PARAMS);
  CHECK_NEAR(model_decode_flops_at_depth(&c, 0), base + 2 * 6400, 1e-6);
  CHECK_NEAR(model_decode_flops_at_depth(&c, 100), base + 2 * 6400 + 2 * 2 * 4 * 32 * 100.0, 1e-6);
  /* Prefill of 512: head amortised, average depth 256. */
  CHECK_NEAR(model_prefill_flops_per_token(&c, 512), base + 2 * 6400 / 512.0 + 2 * 2 * 4 * 32 * 256.0,
             1e-6);
  /* Q8_0 cache: 34/32 bytes per element. */
  o.kv_type = GGML_TYPE_Q8_0;
  CHECK(model_analyze(&d, &o, &c, &err) == 0);
  CHECK_NEAR(c.kv_bytes_per_token, 2 * 2 * 32 * 34.0 / 32, 1e-9);
  o.kv_type = GGML_TYPE_F32;
  CHECK(model_analyze(&d, &o, &c, &err) == 0);
  CHECK_NEAR(c.kv_bytes_per_token, 512, 1e-9);
  /* Types histogram: F32 x 15 first. */
  CHECK_EQ_INT(c.n_types, 3);
  CHECK_EQ_INT(c.types[0].type, GGML_TYPE_F32);
  CHECK_EQ_INT(c.types[0].count, 15);
  model_desc_free(&d);
}

static void test_dense_tied(void) {
  struct model_desc d;
  make_dense(&d, true);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  CHECK(c.tied);
  /* The embedding is the head: read in full once (its input row is inside). */
  CHECK_NEAR(c.weight_bytes_per_token, 6800 + 256 + 2 * LAYER_BYTES, 1e-9);
  CHECK_NEAR(c.weight_bytes_per_token, (double)c.bytes_total, 1e-9);
  CHECK_EQ_U64(c.params_output, 6400);
  CHECK_NEAR(c.params_active, 6400 + 64 + 2 * LAYER_PARAMS, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 256, 1e-9); /* default options: F16 */
  model_desc_free(&d);
}

static void test_moe(void) {
  struct model_desc d;
  CHECK(model_desc_init(&d, 1, NULL) == 0);
  strcpy(d.arch, "qwen3moe");
  d.n_embd = 64;
  d.n_expert = 8;
  d.n_expert_used = 2;
  d.key_length = d.value_length = 16;
  d.n_head[0] = 4;
  d.n_head_kv[0] = 2;
  add(&d, "token_embd.weight", 64, 100, 0, GGML_TYPE_F32);
  add(&d, "output.weight", 64, 100, 0, GGML_TYPE_F32);
  add(&d, "blk.0.ffn_gate_inp.weight", 64, 8, 0, GGML_TYPE_F32);
  add(&d, "blk.0.ffn_up_exps.weight", 64, 32, 8, GGML_TYPE_F32);
  add(&d, "blk.0.ffn_down_exps.weight", 32, 64, 8, GGML_TYPE_F32);
  add(&d, "blk.0.ffn_up_shexp.weight", 64, 32, 0, GGML_TYPE_F32);
  add(&d, "blk.0.ffn_gate_exps.bias", 32, 8, 0, GGML_TYPE_F32); /* gpt-oss style 2-D */
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  CHECK(c.moe);
  CHECK_EQ_U64(c.params_total, 6400 + 6400 + 512 + 16384 + 16384 + 2048 + 256);
  double exps = 16384 + 16384 + 256;
  CHECK_NEAR(c.params_active, 6400 + 6400 + 512 + 2048 + exps / 4, 1e-9);
  CHECK_NEAR(c.weight_bytes_per_token, 4.0 * (64 + 6400 + 512 + 2048 + exps / 4), 1e-9);
  CHECK_NEAR(c.params_layers_active, 512 + 2048 + exps / 4, 1e-9);
  model_desc_free(&d);
}

static void test_sliding_window(void) {
  struct model_desc d;
  CHECK(model_desc_init(&d, 4, NULL) == 0);
  strcpy(d.arch, "gemma3");
  d.key_length = d.value_length = 8;
  d.sliding_window = 100;
  for (int il = 0; il < 4; il++) {
    d.n_head[il] = 2;
    d.n_head_kv[il] = 1;
    d.layer_kind[il] = il < 3 ? MODEL_LAYER_ATTN_SWA : MODEL_LAYER_ATTN;
  }
  add(&d, "blk.0.attn_q.weight", 32, 16, 0, GGML_TYPE_F32);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  /* One layer: 1 x 16 x 2 = 32 bytes per token. */
  CHECK_NEAR(c.kv_bytes_per_token_full, 32, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token_swa, 96, 1e-9);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 50), 50 * 128.0, 1e-9);
  CHECK_NEAR(model_kv_bytes_at_depth(&c, 1000), 1000 * 32.0 + 100 * 96.0, 1e-9);
  CHECK_EQ_INT(c.n_swa_layers, 3);
  /* Attention FLOPs: windowed layers stop at 100. */
  CHECK_NEAR(model_decode_flops_at_depth(&c, 1000) - model_decode_flops_at_depth(&c, 0),
             2.0 * 2 * 16 * (1000 + 3 * 100), 1e-6);
  /* Prefill of 400 past the window: mean of min(t,100) = 100 - 100^2/800. */
  CHECK_NEAR(model_prefill_flops_per_token(&c, 400) - 2.0 * 512,
             64.0 * 200 + 3 * 64.0 * (100 - 12.5), 1e-6);
  /* Context that fits: 100000 bytes free: the window (12800) fits, then 32/token. */
  bool capped;
  uint64_t fit = model_context_fits(&c, 100000 + (double)c.bytes_total, 0, &capped);
  CHECK_EQ_U64(fit, (uint64_t)((100000 - 9600) / 32.0));
  CHECK(!capped);
  fit = model_context_fits(&c, 6400 + (double)c.bytes_total, 0, &capped);
  CHECK_EQ_U64(fit, 50);
  model_desc_free(&d);
}

static void test_hybrid_and_empty_layers(void) {
  struct model_desc d;
  CHECK(model_desc_init(&d, 6, NULL) == 0);
  strcpy(d.arch, "qwen3next");
  d.key_length = d.value_length = 8;
  d.recurrent_state_bytes = 1000;
  d.context_length = 5000;
  for (int il = 0; il < 6; il++) {
    d.n_head[il] = 2;
    d.n_head_kv[il] = 1;
  }
  d.layer_kind[0] = d.layer_kind[1] = d.layer_kind[2] = MODEL_LAYER_RECURRENT;
  d.n_head_kv[3] = 0;               /* attention layer with 0 KV heads: no attention */
  d.layer_kind[5] = MODEL_LAYER_MTP; /* not run in decode */
  add(&d, "blk.0.ssm_in.weight", 32, 16, 0, GGML_TYPE_F32);
  add(&d, "blk.5.attn_q.weight", 32, 16, 0, GGML_TYPE_F32);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, NULL) == 0);
  CHECK_EQ_INT(c.n_recurrent_layers, 3);
  CHECK_EQ_INT(c.n_attn_layers, 1);
  CHECK_EQ_INT(c.n_none_layers, 1);
  CHECK_EQ_INT(c.n_mtp_layers, 1);
  CHECK_NEAR(c.state_bytes, 3000, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 32, 1e-9);
  /* The MTP tensor is in the file but not in the bytes per token. */
  CHECK_EQ_U64(c.bytes_total, 4096);
  CHECK_NEAR(c.weight_bytes_per_token, 2048, 1e-9);
  CHECK_NEAR(model_decode_bytes_at_depth(&c, 10), 2048 + 3000 + 320, 1e-9);
  /* Fits: capped at the context length. */
  bool capped = false;
  CHECK_EQ_U64(model_context_fits(&c, 1e9, 0, &capped), 5000);
  CHECK(capped);
  CHECK_EQ_U64(model_context_fits(&c, 4096 + 3000 + 100 * 32, 0, &capped), 100);
  CHECK_EQ_U64(model_context_fits(&c, 4096, 0, &capped), 0);
  model_desc_free(&d);
}

/* ---------------------------------------------- metadata of other archs -- */

static const char *write_gguf(const char *fname, void (*meta)(struct gguf_writer *),
                              const char *const *names, const uint64_t (*shapes)[3],
                              const uint32_t *types, int n) {
  struct gguf_writer *w = gguf_writer_new(32);
  CHECK(w != NULL);
  meta(w);
  for (int i = 0; i < n; i++) {
    uint32_t nd = shapes[i][2] > 1 ? 3 : shapes[i][1] > 1 ? 2 : 1;
    CHECK(gguf_w_tensor(w, names[i], nd, shapes[i], types[i]) >= 0);
  }
  const char *path = tm_tmpfile(fname);
  FILE *fp = fopen(path, "wb");
  CHECK(fp != NULL);
  struct tm_err err;
  CHECK(gguf_w_begin(w, fp, &err) == 0);
  for (int i = 0; i < n; i++) {
    uint64_t b = gguf_w_tensor_bytes(w, i);
    void *z = calloc(1, b ? b : 1);
    CHECK(gguf_w_data(w, z, b, &err) == 0);
    free(z);
  }
  CHECK(gguf_w_end(w, &err) == 0);
  fclose(fp);
  gguf_writer_free(w);
  return path;
}

static void meta_gemma3(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "gemma3");
  gguf_w_u32(w, "gemma3.block_count", 12);
  gguf_w_u32(w, "gemma3.embedding_length", 64);
  gguf_w_u32(w, "gemma3.attention.head_count", 4);
  /* no head_count_kv, no key_length: defaults n_head and n_embd / n_head */
  gguf_w_u32(w, "gemma3.attention.sliding_window", 512);
  gguf_w_u32(w, "gemma3.context_length", 8192);
}

static void test_gguf_gemma3_defaults(void) {
  /* Every one of the 12 blocks holds a tensor (block_count must match them). */
  static const char *const names[] = {
      "token_embd.weight", "blk.0.attn_q.weight", "blk.1.attn_norm.weight",
      "blk.2.attn_norm.weight", "blk.3.attn_norm.weight", "blk.4.attn_norm.weight",
      "blk.5.attn_norm.weight", "blk.6.attn_norm.weight", "blk.7.attn_norm.weight",
      "blk.8.attn_norm.weight", "blk.9.attn_norm.weight", "blk.10.attn_norm.weight",
      "blk.11.attn_norm.weight"};
  static const uint64_t shapes[][3] = {{64, 256, 1}, {64, 64, 1}, {64, 1, 1}, {64, 1, 1},
                                       {64, 1, 1},   {64, 1, 1},  {64, 1, 1}, {64, 1, 1},
                                       {64, 1, 1},   {64, 1, 1},  {64, 1, 1}, {64, 1, 1},
                                       {64, 1, 1}};
  static const uint32_t types[] = {GGML_TYPE_Q8_0, GGML_TYPE_F16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const char *path = write_gguf("g3.gguf", meta_gemma3, names, shapes, types, 13);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return;
  struct model_desc d;
  CHECK_MSG(model_desc_from_gguf(f, &d, &err) == 0, "%s", err.msg);
  CHECK_STR(d.arch, "gemma3");
  CHECK_EQ_INT(d.key_length, 16);
  CHECK_EQ_INT(d.n_head_kv[0], 4);
  CHECK(d.n_assumptions >= 2);
  /* gemma3: 5 of every 6 layers windowed. */
  int swa = 0;
  for (uint32_t il = 0; il < d.n_layer; il++) swa += d.layer_kind[il] == MODEL_LAYER_ATTN_SWA;
  CHECK_EQ_INT(swa, 10);
  CHECK_EQ_INT(d.layer_kind[5], MODEL_LAYER_ATTN);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, &err) == 0);
  /* Per layer 4 x 32 x 2 = 256 bytes: 2 full, 10 windowed. */
  CHECK_NEAR(c.kv_bytes_per_token_full, 512, 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token_swa, 2560, 1e-9);
  /* Tied: embedding read in full; 11 F32 norms of 64. */
  CHECK_NEAR(c.weight_bytes_per_token, 256 * 68 + 64 * 64 * 2 + 11 * 64 * 4, 1e-9);
  model_desc_free(&d);
  gguf_close(f);
}

static void meta_hybrid(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "jamba");
  gguf_w_u32(w, "jamba.block_count", 4);
  gguf_w_u32(w, "jamba.embedding_length", 64);
  gguf_w_u32(w, "jamba.attention.head_count", 4);
  uint32_t kv[4] = {0, 2, 0, 0};
  gguf_w_arr(w, "jamba.attention.head_count_kv", GGUF_VT_UINT32, kv, 4);
  gguf_w_u32(w, "jamba.attention.key_length", 16);
  gguf_w_u32(w, "jamba.attention.value_length", 16);
  gguf_w_u32(w, "jamba.ssm.conv_kernel", 4);
  gguf_w_u32(w, "jamba.ssm.inner_size", 128);
  gguf_w_u32(w, "jamba.ssm.state_size", 16);
  gguf_w_u32(w, "jamba.nextn_predict_layers", 1);
}

static void test_gguf_hybrid(void) {
  static const char *const names[] = {"token_embd.weight", "output.weight",
                                      "blk.0.attn_norm.weight", "blk.1.attn_norm.weight",
                                      "blk.2.attn_norm.weight", "blk.3.attn_q.weight"};
  static const uint64_t shapes[][3] = {{64, 10, 1}, {64, 10, 1}, {64, 1, 1},
                                       {64, 1, 1},  {64, 1, 1},  {64, 64, 1}};
  static const uint32_t types[] = {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32,
                                   GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32};
  const char *path = write_gguf("hy.gguf", meta_hybrid, names, shapes, types, 6);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return;
  struct model_desc d;
  CHECK_MSG(model_desc_from_gguf(f, &d, &err) == 0, "%s", err.msg);
  CHECK_EQ_INT(d.layer_kind[0], MODEL_LAYER_RECURRENT);
  CHECK_EQ_INT(d.layer_kind[1], MODEL_LAYER_ATTN);
  CHECK_EQ_INT(d.layer_kind[2], MODEL_LAYER_RECURRENT);
  CHECK_EQ_INT(d.layer_kind[3], MODEL_LAYER_MTP);
  /* Mamba-1 state (no groups): 4 x (3 x 128 + 16 x 128). */
  CHECK_EQ_U64(d.recurrent_state_bytes, 4 * (3 * 128 + 16 * 128));
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, &err) == 0);
  CHECK_NEAR(c.state_bytes, 2.0 * 4 * (3 * 128 + 16 * 128), 1e-9);
  CHECK_NEAR(c.kv_bytes_per_token, 2 * 32 * 2, 1e-9);
  /* Untied: one F32 embedding row + head + 3 norms; the MTP block's tensor not read. */
  CHECK_NEAR(c.weight_bytes_per_token, 256 + 2560 + 3 * 256, 1e-9);
  model_desc_free(&d);
  gguf_close(f);
}

/* An architecture this reader has no head count for: the keys absent, the
 * tensors present. Its attention layers stay attention layers of unknown KV
 * (they were read as "none": KV 0 B, the context unbounded, no line under
 * "assumed"), and every default applied is listed. */
static void meta_no_heads(struct gguf_writer *w) {
  gguf_w_str(w, "general.architecture", "gpt2x");
  gguf_w_u32(w, "gpt2x.block_count", 3);
  gguf_w_u32(w, "gpt2x.embedding_length", 64);
}

static void test_gguf_heads_unknown(void) {
  static const char *const names[] = {"token_embd.weight", "blk.0.attn_k.weight",
                                      "blk.1.attn_qkv.weight", "blk.2.ffn_up.weight"};
  static const uint64_t shapes[][3] = {{64, 10, 1}, {64, 32, 1}, {64, 192, 1}, {64, 128, 1}};
  static const uint32_t types[] = {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32};
  const char *path = write_gguf("nh.gguf", meta_no_heads, names, shapes, types, 4);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return;
  struct model_desc d;
  CHECK_MSG(model_desc_from_gguf(f, &d, &err) == 0, "%s", err.msg);
  CHECK(d.heads_unknown);
  bool said_heads = false, said_ctx = false;
  for (size_t i = 0; i < d.n_assumptions; i++) {
    said_heads |= strstr(d.assumptions[i], "gpt2x.attention.head_count absent") != NULL &&
                  strstr(d.assumptions[i], "2 layers") != NULL;
    said_ctx |= strstr(d.assumptions[i], "gpt2x.context_length absent") != NULL;
  }
  CHECK_MSG(said_heads && said_ctx, "assumptions: %zu, first: %s", d.n_assumptions,
            d.n_assumptions ? d.assumptions[0] : "(none)");
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, &err) == 0);
  CHECK(c.kv_unknown);
  CHECK_EQ_INT(c.n_attn_layers, 2); /* attn_k and the fused attn_qkv */
  CHECK_EQ_INT(c.n_none_layers, 1); /* the block without attention tensors */
  CHECK_EQ_U64(c.context_length, 0);
  model_desc_free(&d);
  gguf_close(f);
}

static void test_vocab_only_rejected(void) {
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(tm_fixture("gguf/ggml-vocab-qwen2.gguf"), &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return;
  struct model_desc d;
  CHECK(model_desc_from_gguf(f, &d, &err) == -1);
  CHECK_CONTAINS(err.msg, "no tensors");
  gguf_close(f);
}

/* ---------------------------------------------- metadata that is refused -- */

/* A key present with a bad type, sign, range or length was read as absent,
 * truncated to 32 bits or clamped, and the figures built on it were silently
 * wrong. The base file below is valid (2 blocks, 4 experts of which 2 used);
 * each case replaces one key (a hand-made struct gguf_kv, written as is) and
 * the description must be refused with an error naming it. */
static const struct gguf_kv *g_case; /* the key meta_case writes in place of the base one */

static void meta_case(struct gguf_writer *w) {
  static const struct { const char *key; uint32_t v; } base[] = {
      {"llama.block_count", 2},          {"llama.embedding_length", 64},
      {"llama.attention.head_count", 4}, {"llama.attention.head_count_kv", 2},
      {"llama.attention.key_length", 16}, {"llama.attention.value_length", 16},
      {"llama.context_length", 4096},    {"llama.expert_count", 4},
      {"llama.expert_used_count", 2},
  };
  bool arch = g_case && strcmp(g_case->key, "general.architecture") == 0;
  if (!arch) gguf_w_str(w, "general.architecture", "llama");
  for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
    if (!g_case || strcmp(g_case->key, base[i].key) != 0) gguf_w_u32(w, base[i].key, base[i].v);
  if (g_case) CHECK_MSG(gguf_w_copy_kv(w, g_case) == 0, "%s", gguf_writer_error(w));
}

#define KV_U(k, t, x) {.key = (char *)(k), .type = (t), .v.u64 = (x)}
#define KV_I(k, t, x) {.key = (char *)(k), .type = (t), .v.i64 = (x)}
#define KV_S(k, s, n) {.key = (char *)(k), .type = GGUF_VT_STRING, .v.str = {(s), (n)}}
#define KV_A(k, t, a, n)                                                                       \
  {.key = (char *)(k), .type = GGUF_VT_ARRAY,                                                  \
   .v.arr = {(t), (n), (const uint8_t *)(a), (n) * sizeof(a)[0]}}

static void test_gguf_bad_metadata(void) {
  static const char *const names[] = {"token_embd.weight", "blk.0.attn_k.weight",
                                      "blk.0.ffn_up_exps.weight", "blk.1.attn_k.weight"};
  static const uint64_t shapes[][3] = {{64, 10, 1}, {64, 32, 1}, {64, 16, 4}, {64, 32, 1}};
  static const uint32_t types[] = {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32};
  static const uint32_t kv3[] = {2, 2, 2};
  static const int32_t neg[] = {-4, -4};
  static const float f4[] = {4.0f, 4.0f};
  static const struct {
    struct gguf_kv kv;
    const char *want; /* in the error */
  } cases[] = {
      /* 2: 32-bit wrap and truncation */
      {KV_U("llama.attention.key_length", GGUF_VT_UINT32, 0xffffffffu),
       "'llama.attention.key_length' = 4294967295 is out of range"},
      {KV_U("llama.attention.key_length", GGUF_VT_UINT64, (1ull << 32) + 32),
       "'llama.attention.key_length' = 4294967328 is out of range"},
      {KV_U("llama.attention.value_length", GGUF_VT_UINT64, (1ull << 32) + 16),
       "'llama.attention.value_length' = 4294967312 is out of range"},
      {KV_U("llama.expert_count", GGUF_VT_UINT64, (1ull << 32) + 4),
       "'llama.expert_count' = 4294967300 is out of range"},
      {KV_U("llama.expert_count", GGUF_VT_UINT32, 0xffffffffu),
       "holds 4 experts but llama.expert_count is 4294967295"},
      /* 3: block_count against the blk.N tensors */
      {KV_U("llama.block_count", GGUF_VT_UINT32, 3),
       "llama.block_count is 3 but no tensor belongs to block 2"},
      {KV_U("llama.block_count", GGUF_VT_UINT32, 65536),
       "llama.block_count is 65536 but no tensor belongs to block 2"},
      {KV_U("llama.block_count", GGUF_VT_UINT32, 1), "is past llama.block_count 1"},
      /* 4: present but invalid */
      {KV_I("llama.context_length", GGUF_VT_INT32, -1), "'llama.context_length' is negative"},
      {KV_I("llama.block_count", GGUF_VT_INT32, -1), "'llama.block_count' is negative"},
      {KV_U("llama.embedding_length", GGUF_VT_BOOL, 1),
       "'llama.embedding_length' has type bool"},
      {KV_U("llama.expert_count", GGUF_VT_UINT32, 0), "llama.expert_count is 0"},
      {KV_U("llama.expert_used_count", GGUF_VT_UINT32, 5),
       "'llama.expert_used_count' = 5 is out of range"},
      {KV_U("llama.nextn_predict_layers", GGUF_VT_UINT32, 5),
       "'llama.nextn_predict_layers' = 5: the multi-token-prediction blocks must be fewer"},
      {KV_U("llama.nextn_predict_layers", GGUF_VT_UINT32, 2), "nextn_predict_layers' = 2"},
      {KV_A("llama.attention.head_count_kv", GGUF_VT_UINT32, kv3, 3),
       "'llama.attention.head_count_kv' has 3 entries, more than llama.block_count 2"},
      {KV_A("llama.attention.head_count", GGUF_VT_INT32, neg, 2),
       "'llama.attention.head_count': element 0 of the int32 array"},
      {KV_A("llama.attention.head_count", GGUF_VT_FLOAT32, f4, 2),
       "'llama.attention.head_count': element 0 of the float32 array"},
      {KV_S("general.architecture", "lla\0ma", 6), "has byte 0x00 at position 3"},
      /* 5: architecture names are printable ASCII */
      {KV_S("general.architecture", "llama\xff", 6), "has byte 0xff at position 5"},
      {KV_S("general.architecture", "ll\na", 4), "has byte 0x0a at position 2"},
      {KV_U("general.architecture", GGUF_VT_UINT32, 5),
       "'general.architecture' has type uint32, expected string"},
  };
  struct tm_err err = {{0}};
  struct model_desc d;
  g_case = NULL; /* the base file is valid */
  const char *path = write_gguf("base.gguf", meta_case, names, shapes, types, 4);
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f && model_desc_from_gguf(f, &d, &err) == 0, "base: %s", err.msg);
  if (f) {
    CHECK_EQ_INT(d.n_expert_used, 2);
    model_desc_free(&d);
  }
  gguf_close(f);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    g_case = &cases[i].kv;
    path = write_gguf("case.gguf", meta_case, names, shapes, types, 4);
    err.msg[0] = 0;
    f = gguf_open(path, &err);
    CHECK_MSG(f != NULL, "case %zu: %s", i, err.msg);
    if (!f) continue;
    int rc = model_desc_from_gguf(f, &d, &err);
    CHECK_MSG(rc == -1, "case %zu (%s): accepted", i, cases[i].want);
    if (rc == 0) model_desc_free(&d);
    CHECK_MSG(strstr(err.msg, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
              cases[i].want);
    gguf_close(f);
  }
  g_case = NULL;
}

/* key_length + value_length was summed in 32 bits: 2 x (2^32 - 1) wrapped to
 * 2^32 - 2 and the KV came out 2^32 times too small. */
static void test_kv_lengths_do_not_wrap(void) {
  struct model_desc d;
  CHECK(model_desc_init(&d, 1, NULL) == 0);
  strcpy(d.arch, "llama");
  d.n_head[0] = 2;
  d.n_head_kv[0] = 1;
  d.key_length = d.value_length = 0xffffffffu;
  add(&d, "blk.0.attn_k.weight", 64, 32, 0, GGML_TYPE_F32);
  struct model_cost c;
  struct tm_err err = {{0}};
  CHECK(model_analyze(&d, NULL, &c, &err) == 0);
  CHECK_NEAR(c.kv_bytes_per_token, 2.0 * 0xffffffffu * 2, 1.0); /* 1 KV head, F16 */
  model_desc_free(&d);
}

/* ------------------------------------------------------------- fixtures -- */

/* moe: the bytes per token are checked by the caller (expert fraction). */
static void check_fixture(const char *rel, const char *arch, uint32_t kv_bytes, bool moe,
                          const char *assumed) {
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(tm_fixture(rel), &err);
  CHECK_MSG(f != NULL, "%s: %s", rel, err.msg);
  if (!f) return;
  /* Independent sums from the reader's tensor table. */
  uint64_t elems = 0, bytes = 0, emb_row = 0;
  bool tied = gguf_find_tensor(f, "output.weight") == NULL;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    elems += f->tensors[i].n_elements;
    bytes += f->tensors[i].size_bytes;
  }
  const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
  CHECK(emb != NULL);
  if (emb) emb_row = emb->size_bytes / emb->ne[1];
  double expect = tied ? (double)bytes : (double)(bytes - emb->size_bytes + emb_row);
  struct model_desc d;
  CHECK_MSG(model_desc_from_gguf(f, &d, &err) == 0, "%s: %s", rel, err.msg);
  struct model_cost c;
  CHECK_MSG(model_analyze(&d, NULL, &c, &err) == 0, "%s: %s", rel, err.msg);
  CHECK_STR(c.arch, arch);
  CHECK_EQ_U64(c.params_total, elems);
  CHECK_EQ_U64(c.bytes_total, bytes);
  if (!moe) CHECK_NEAR(c.weight_bytes_per_token, expect, 1e-6);
  CHECK_NEAR(c.kv_bytes_per_token, kv_bytes, 1e-9);
  /* These files carry every key but the one named by `assumed`. */
  CHECK_MSG(c.n_assumptions == (assumed ? 1u : 0u), "%s: assumptions: %s", rel,
            c.n_assumptions ? c.assumptions[0] : "(none)");
  if (assumed && c.n_assumptions) CHECK_CONTAINS(c.assumptions[0], assumed);
  model_desc_free(&d);
  gguf_close(f);
}

static void test_fixtures_dense(void) {
  /* tiny-llama: 4 layers x 2 KV heads x (32 + 32) x 2 bytes = 1024. */
  check_fixture("gguf/tiny-llama-Q4_0.gguf", "llama", 1024, false, NULL);
  check_fixture("gguf/tiny-llama-Q4_K_M.gguf", "llama", 1024, false, NULL);
  check_fixture("gguf/tiny-llama-f16.gguf", "llama", 1024, false, NULL);
  /* kq-llama: 2 x 2 x 128 x 2 = 1024. */
  check_fixture("gguf/kq-llama-Q4_K_M.gguf", "llama", 1024, false, NULL);
  /* tiny-qwen3: 4 x 2 x 32 x 2 = 512. */
  check_fixture("gguf/tiny-qwen3-Q8_0.gguf", "qwen3", 512, false, NULL);
  check_fixture("gguf/tiny-qwen2-Q8_0.gguf", "qwen2", 512, false,
                "key_length absent"); /* the qwen2 writer omits it */
}

static void test_fixture_moe(void) {
  check_fixture("gguf/tiny-qwen3moe-Q8_0.gguf", "qwen3moe", 512, true, NULL);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(tm_fixture("gguf/tiny-qwen3moe-Q8_0.gguf"), &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return;
  uint64_t elems = 0, exps = 0, bytes = 0, exps_bytes = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    elems += f->tensors[i].n_elements;
    bytes += f->tensors[i].size_bytes;
    if (strstr(f->tensors[i].name, "_exps")) {
      exps += f->tensors[i].n_elements;
      exps_bytes += f->tensors[i].size_bytes;
    }
  }
  /* 2 layers x 3 tensors x 128 x 64 x 8 experts. */
  CHECK_EQ_U64(exps, 2ull * 3 * 128 * 64 * 8);
  struct model_desc d;
  CHECK(model_desc_from_gguf(f, &d, &err) == 0);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, &err) == 0);
  CHECK(c.moe);
  CHECK_NEAR(c.params_active, (double)(elems - exps) + exps * 2.0 / 8.0, 1e-6);
  CHECK(c.params_active < (double)c.params_total);
  CHECK_NEAR(c.weight_bytes_per_token, (double)(bytes - exps_bytes) + exps_bytes / 4.0, 1e-6);
  model_desc_free(&d);
  gguf_close(f);
}

static void test_plan_preset(void) {
  const struct model_preset *p = model_preset_find("qwen3-30b-a3b");
  CHECK(p != NULL);
  if (!p) return;
  struct model_plan plan;
  struct tm_err err = {{0}};
  if (model_plan_make(&p->shape, MODEL_FTYPE_Q4_K_M, &plan, &err) != 0) {
    CHECK_MSG(0, "model_plan_make: %s", err.msg);
    return;
  }
  struct model_desc d;
  CHECK(model_desc_from_plan(&plan, &d, &err) == 0);
  struct model_cost c;
  CHECK(model_analyze(&d, NULL, &c, &err) == 0);
  /* Qwen3-30B-A3B: 30.5B parameters, 3.3B active. */
  CHECK_MSG(c.params_total > 30.0e9 && c.params_total < 31.0e9, "total %" PRIu64,
            c.params_total);
  CHECK_MSG(c.params_active > 3.0e9 && c.params_active < 3.6e9, "active %.0f", c.params_active);
  CHECK_EQ_U64(c.bytes_total, model_plan_data_bytes(&plan));
  CHECK(c.weight_bytes_per_token < 0.2 * (double)c.bytes_total);
  /* KV: 48 layers x 4 KV heads x 256 x 2 bytes = 98304 bytes per token. */
  CHECK_NEAR(c.kv_bytes_per_token, 98304, 1e-9);
  model_desc_free(&d);
  model_plan_free(&plan);
}

void tm_run_tests(void) {
  TM_RUN(test_dense_untied);
  TM_RUN(test_dense_tied);
  TM_RUN(test_moe);
  TM_RUN(test_sliding_window);
  TM_RUN(test_hybrid_and_empty_layers);
  TM_RUN(test_gguf_gemma3_defaults);
  TM_RUN(test_gguf_hybrid);
  TM_RUN(test_gguf_heads_unknown);
  TM_RUN(test_vocab_only_rejected);
  TM_RUN(test_gguf_bad_metadata);
  TM_RUN(test_kv_lengths_do_not_wrap);
  TM_RUN(test_fixtures_dense);
  TM_RUN(test_fixture_moe);
  TM_RUN(test_plan_preset);
}
