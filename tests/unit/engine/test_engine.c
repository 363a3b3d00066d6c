/* test_engine: the embedded engine on llama.cpp's tiny fixture models (every
 * architecture: llama, qwen2, qwen3, qwen3moe; F16, Q8_0, Q4_0, Q5_0, Q4_K,
 * Q6_K weights): batched prefill equals token-by-token decode, all-logits
 * prefill equals decode at every position, 1 and 2 threads are bit-identical,
 * the SIMD path agrees with the scalar one, reset works, and every error the
 * API promises (architecture, missing tensor, wrong shape, overflow, bad id). */
#include <stdlib.h>

#include "engine/engine.h"
#include "gguf/gguf.h"
#include "tm_test.h"

static const char *const k_models[] = {
    "gguf/tiny-llama-f16.gguf",    "gguf/tiny-llama-Q8_0.gguf",  "gguf/tiny-llama-Q4_0.gguf",
    "gguf/tiny-llama-Q4_K_M.gguf", "gguf/kq-llama-Q4_K_M.gguf",  "gguf/kq-llama-Q6_K.gguf",
    "gguf/tiny-qwen2-Q8_0.gguf",   "gguf/tiny-qwen3-Q8_0.gguf",  "gguf/tiny-qwen3moe-f16.gguf",
    "gguf/tiny-qwen3moe-Q8_0.gguf"};
#define N_MODELS (sizeof k_models / sizeof k_models[0])

/* The llama.cpp fixtures' 16-token prompt (SentencePiece ids, valid in every vocab). */
static const int32_t k_prompt[16] = {1,   450,  11473, 29892, 3763,  338, 263, 1243,
                                     310, 278, 2043,  29889, 319,  2107, 300, 1737};

static struct engine *load(const char *rel, enum kernel_path kp, int threads) {
  struct engine_options o;
  engine_options_init(&o);
  o.kernels = kp;
  o.n_threads = threads;
  o.n_ctx = 64;
  struct tm_err err = {{0}};
  struct engine *e = engine_load(tm_fixture(rel), &o, &err);
  CHECK_MSG(e != NULL, "load %s: %s", rel, err.msg);
  return e;
}

static uint32_t vocab(const struct engine *e) {
  struct engine_info in;
  engine_get_info(e, &in);
  return in.n_vocab;
}

/* Largest |a - b| relative to the spread (max - min) of a. */
static double rel_err(const float *a, const float *b, uint32_t n) {
  float lo = a[0], hi = a[0];
  double d = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
    double x = fabs((double)a[i] - b[i]);
    d = x > d || isnan(x) ? x : d;
  }
  return d / (hi - lo);
}

/* Prefill of the whole prompt (last logits and all logits) vs decode one token
 * at a time. Differences come only from the gemm kernels' batched vs single
 * column paths, so the tolerance is tight. */
static void test_prefill_equals_decode(void) {
  for (size_t mi = 0; mi < N_MODELS; mi++) {
    struct engine *e = load(k_models[mi], KERNEL_SCALAR, 1);
    if (!e) continue;
    uint32_t nv = vocab(e);
    float *dec = malloc(sizeof(float) * nv * 16);
    float *all = malloc(sizeof(float) * nv * 16);
    float *last = malloc(sizeof(float) * nv);
    struct tm_err err;
    for (int t = 0; t < 16; t++) CHECK(engine_decode(e, k_prompt[t], dec + (size_t)t * nv, &err) == 0);
    CHECK_EQ_INT(engine_n_past(e), 16);
    engine_reset(e);
    CHECK_EQ_INT(engine_n_past(e), 0);
    CHECK(engine_prefill(e, k_prompt, 16, last, &err) == 0);
    CHECK_EQ_INT(engine_n_past(e), 16);
    engine_reset(e);
    CHECK(engine_prefill_all_logits(e, k_prompt, 16, all, &err) == 0);
    double worst = rel_err(dec + 15 * (size_t)nv, last, nv);
    CHECK_MSG(worst < 1e-3, "%s: prefill vs decode, last token: rel err %g", k_models[mi], worst);
    CHECK_EQ_INT(engine_argmax(last, nv), engine_argmax(dec + 15 * (size_t)nv, nv));
    for (int t = 0; t < 16; t++) {
      const float *a = dec + (size_t)t * nv, *b = all + (size_t)t * nv;
      double r = rel_err(a, b, nv);
      CHECK_MSG(r < 1e-3, "%s: all-logits vs decode at position %d: rel err %g", k_models[mi],
                t, r);
      CHECK_MSG(engine_argmax(a, nv) == engine_argmax(b, nv), "%s: argmax differs at %d",
                k_models[mi], t);
    }
    free(dec);
    free(all);
    free(last);
    engine_free(e);
  }
}

/* Greedy decode: the next token engine_decode_greedy picks (mostly inside
 * the output head's job) is engine_argmax of the logits it returns, at 1 and
 * 3 threads, on every path this CPU runs (different chunks per path). */
static void test_decode_greedy(void) {
  const enum kernel_path kp[] = {KERNEL_SCALAR, KERNEL_AUTO};
  for (size_t mi = 0; mi < N_MODELS; mi++)
    for (size_t pi = 0; pi < 2; pi++)
      for (int nt = 1; nt <= 3; nt += 2) {
        struct engine *e = load(k_models[mi], kp[pi], nt);
        if (!e) continue;
        uint32_t nv = vocab(e);
        float *l = malloc(sizeof(float) * nv);
        struct tm_err err;
        int32_t tok = k_prompt[0], steps_ok = 0;
        for (int t = 0; t < 12; t++) {
          int32_t next = -1;
          if (engine_decode_greedy(e, tok, l, &next, &err) != 0) break;
          steps_ok += next == engine_argmax(l, nv);
          tok = next;
        }
        CHECK_MSG(steps_ok == 12, "%s, path %d, %d threads: %d of 12 steps agree",
                  k_models[mi], (int)kp[pi], nt, steps_ok);
        CHECK(engine_decode_greedy(e, tok, l, NULL, &err) == -1);
        free(l);
        engine_free(e);
      }
}

/* A prompt longer than max_batch runs in several batches: same logits. */
static void test_prefill_split_batches(void) {
  struct engine_options o;
  engine_options_init(&o);
  o.kernels = KERNEL_SCALAR;
  o.n_threads = 2;
  o.n_ctx = 64;
  o.max_batch = 5;
  struct tm_err err;
  struct engine *a = engine_load(tm_fixture("gguf/tiny-qwen3moe-Q8_0.gguf"), &o, &err);
  struct engine *b = load("gguf/tiny-qwen3moe-Q8_0.gguf", KERNEL_SCALAR, 2);
  CHECK(a && b);
  if (!a || !b) return;
  uint32_t nv = vocab(a);
  float *la = malloc(sizeof(float) * nv * 16), *lb = malloc(sizeof(float) * nv * 16);
  CHECK(engine_prefill_all_logits(a, k_prompt, 16, la, &err) == 0);
  CHECK(engine_prefill_all_logits(b, k_prompt, 16, lb, &err) == 0);
  for (int t = 0; t < 16; t++)
    CHECK_MSG(rel_err(lb + (size_t)t * nv, la + (size_t)t * nv, nv) < 1e-3, "position %d", t);
  free(la);
  free(lb);
  engine_free(a);
  engine_free(b);
}

/* 1 and 2 threads: the same chunks, the same summation order: identical bits. */
static void test_threads_identical(void) {
  const char *models[] = {"gguf/tiny-llama-Q4_0.gguf", "gguf/tiny-qwen3moe-Q8_0.gguf",
                          "gguf/kq-llama-Q4_K_M.gguf"};
  for (int mi = 0; mi < 3; mi++) {
    struct engine *e1 = load(models[mi], KERNEL_AUTO, 1), *e2 = load(models[mi], KERNEL_AUTO, 2);
    if (!e1 || !e2) {
      engine_free(e1);
      engine_free(e2);
      continue;
    }
    uint32_t nv = vocab(e1);
    float *a = malloc(sizeof(float) * nv), *b = malloc(sizeof(float) * nv);
    struct tm_err err;
    CHECK(engine_prefill(e1, k_prompt, 12, a, &err) == 0);
    CHECK(engine_prefill(e2, k_prompt, 12, b, &err) == 0);
    CHECK_MSG(memcmp(a, b, sizeof(float) * nv) == 0, "%s: prefill differs 1 vs 2 threads",
              models[mi]);
    for (int t = 12; t < 16; t++) {
      CHECK(engine_decode(e1, k_prompt[t], a, &err) == 0);
      CHECK(engine_decode(e2, k_prompt[t], b, &err) == 0);
      CHECK_MSG(memcmp(a, b, sizeof(float) * nv) == 0, "%s: decode %d differs 1 vs 2 threads",
                models[mi], t);
    }
    /* set_threads rebuilds the pool; results stay the same. */
    CHECK(engine_set_threads(e1, 2, &err) == 0);
    struct engine_info in;
    engine_get_info(e1, &in);
    CHECK_EQ_INT(in.n_threads, 2);
    engine_reset(e1);
    engine_reset(e2);
    CHECK(engine_prefill(e1, k_prompt, 16, a, &err) == 0);
    CHECK(engine_prefill(e2, k_prompt, 16, b, &err) == 0);
    CHECK(memcmp(a, b, sizeof(float) * nv) == 0);
    free(a);
    free(b);
    engine_free(e1);
    engine_free(e2);
  }
}

/* Decode chunks of any size, at any thread count, give the same logits and
 * the same greedy tokens (mm_layout.h: a row's result never depends on its
 * chunk; the output head's per-chunk argmax candidates follow the chunks):
 * 1 byte (the 16-row minimum) at 3 threads; 64 MiB, more than any of
 * these matrices, at 1 and 3 threads (one chunk per matrix, or one per
 * thread); 2 MiB at 2; each against the default at 1 thread. */
static void test_decode_chunks_identical(void) {
  const char *models[] = {"gguf/tiny-llama-Q4_0.gguf", "gguf/tiny-qwen3moe-Q8_0.gguf",
                          "gguf/kq-llama-Q6_K.gguf"};
  const struct {
    size_t bytes;
    int threads;
  } cfg[] = {{1, 3}, {64u << 20, 1}, {64u << 20, 3}, {2u << 20, 2}};
  for (int mi = 0; mi < 3; mi++) {
    struct engine *ref = load(models[mi], KERNEL_AUTO, 1);
    if (!ref) continue;
    struct engine_info in;
    engine_get_info(ref, &in);
    CHECK_EQ_INT((long long)in.decode_chunk_bytes, (long long)engine_auto_decode_chunk_bytes());
    uint32_t nv = in.n_vocab;
    float *a = malloc(sizeof(float) * nv), *b = malloc(sizeof(float) * nv);
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
      struct engine_options o;
      engine_options_init(&o);
      o.n_threads = cfg[c].threads;
      o.n_ctx = 64;
      o.decode_chunk_bytes = cfg[c].bytes;
      struct tm_err err = {{0}};
      struct engine *e = engine_load(tm_fixture(models[mi]), &o, &err);
      CHECK_MSG(e != NULL, "load %s: %s", models[mi], err.msg);
      if (!e) continue;
      engine_get_info(e, &in);
      CHECK_EQ_INT((long long)in.decode_chunk_bytes, (long long)cfg[c].bytes);
      engine_reset(ref);
      int32_t tok = k_prompt[0]; /* then the greedy continuation */
      for (int t = 0; t < 12; t++) {
        int32_t na = -1, nb = -2;
        CHECK(engine_decode_greedy(ref, tok, a, &na, &err) == 0);
        CHECK(engine_decode_greedy(e, tok, b, &nb, &err) == 0);
        CHECK_MSG(memcmp(a, b, sizeof(float) * nv) == 0,
                  "%s: step %d differs with %zu-byte chunks at %d threads", models[mi], t,
                  cfg[c].bytes, cfg[c].threads);
        CHECK_EQ_INT(na, nb);
        tok = na;
      }
      engine_free(e);
    }
    free(a);
    free(b);
    engine_free(ref);
  }
}

/* The best path (SIMD when the CPU has it) against the scalar reference. */
static void test_auto_vs_scalar(void) {
  for (size_t mi = 0; mi < N_MODELS; mi++) {
    struct engine *s = load(k_models[mi], KERNEL_SCALAR, 1), *a = load(k_models[mi], KERNEL_AUTO, 2);
    if (s && a) {
      uint32_t nv = vocab(s);
      float *ls = malloc(sizeof(float) * nv), *la = malloc(sizeof(float) * nv);
      struct tm_err err;
      CHECK(engine_prefill(s, k_prompt, 16, ls, &err) == 0);
      CHECK(engine_prefill(a, k_prompt, 16, la, &err) == 0);
      double r = rel_err(ls, la, nv);
      if (getenv("TM_ENGINE_VERBOSE")) fprintf(stderr, "%s: auto vs scalar %g\n", k_models[mi], r);
      CHECK_MSG(r < 1e-2, "%s: auto vs scalar rel err %g", k_models[mi], r);
      free(ls);
      free(la);
    }
    engine_free(s);
    engine_free(a);
  }
}

static void test_reset_and_info(void) {
  struct engine *e = load("gguf/tiny-qwen3moe-Q8_0.gguf", KERNEL_AUTO, 2);
  if (!e) return;
  struct engine_info in;
  engine_get_info(e, &in);
  CHECK_STR(in.arch, "qwen3moe");
  CHECK_EQ_INT(in.n_layer, 2);
  CHECK_EQ_INT(in.n_embd, 128);
  CHECK_EQ_INT(in.n_head, 4);
  CHECK_EQ_INT(in.n_head_kv, 2);
  CHECK_EQ_INT(in.head_dim, 32);
  CHECK_EQ_INT(in.n_expert, 8);
  CHECK_EQ_INT(in.n_expert_used, 2);
  CHECK_EQ_INT(in.n_ff, 64);
  CHECK_EQ_INT(in.n_vocab, 32000);
  CHECK_EQ_INT(in.n_ctx, 64);
  CHECK_EQ_U64(in.kv_bytes, 2ull * 2 * 64 * 2 * 32 * 2);
  CHECK_EQ_U64(in.file_bytes, 5611264);
  CHECK(in.load_ms > 0.0);
  CHECK(in.kernel_path && in.best_cpu_path);

  uint32_t nv = in.n_vocab;
  float *a = malloc(sizeof(float) * nv), *b = malloc(sizeof(float) * nv);
  struct tm_err err;
  CHECK(engine_prefill(e, k_prompt, 8, NULL, &err) == 0); /* logits optional */
  CHECK(engine_decode(e, k_prompt[8], a, &err) == 0);
  engine_reset(e);
  CHECK_EQ_INT(engine_n_past(e), 0);
  CHECK(engine_prefill(e, k_prompt, 8, NULL, &err) == 0);
  CHECK(engine_decode(e, k_prompt[8], b, &err) == 0);
  CHECK(memcmp(a, b, sizeof(float) * nv) == 0);
  CHECK_EQ_INT(engine_n_past(e), 9);
  free(a);
  free(b);
  engine_free(e);
}

static void test_runtime_errors(void) {
  struct engine *e = load("gguf/tiny-llama-Q8_0.gguf", KERNEL_AUTO, 1);
  if (!e) return;
  uint32_t nv = vocab(e);
  float *l = malloc(sizeof(float) * nv);
  struct tm_err err = {{0}};
  CHECK(engine_decode(e, (int32_t)nv, l, &err) == -1);
  CHECK_CONTAINS(err.msg, "out of range");
  CHECK(engine_decode(e, -1, l, &err) == -1);
  CHECK_EQ_INT(engine_n_past(e), 0); /* a failed call changes nothing */
  int32_t toks[64] = {0};
  CHECK(engine_prefill(e, toks, 64, l, &err) == 0);
  CHECK(engine_decode(e, 1, l, &err) == -1);
  CHECK_CONTAINS(err.msg, "context overflow");
  CHECK_EQ_INT(engine_n_past(e), 64);
  engine_reset(e);
  CHECK(engine_prefill(e, toks, 65, l, &err) == -1);
  CHECK_CONTAINS(err.msg, "context overflow");
  CHECK(engine_prefill(e, toks, 0, l, &err) == -1);
  free(l);
  engine_free(e);
}

/* ------------------------------------------------- bad files (written) -- */

/* A llama-like file: hparams for 1 layer, n_embd 32, 2 heads; tensors as listed;
 * with f32_key, one more float key <arch>.<f32_key> = f32_val. */
struct tspec {
  const char *name;
  uint32_t n_dims;
  uint64_t ne[2];
  uint32_t type; /* 0 = F32 */
};

static const char *write_model_kv(const char *fname, const char *arch, const struct tspec *ts,
                                  int n, const char *f32_key, float f32_val) {
  struct gguf_writer *w = gguf_writer_new(0);
  CHECK(w != NULL);
  if (!w) return NULL;
  char key[64];
  gguf_w_str(w, "general.architecture", arch);
#define KEY(s) (snprintf(key, sizeof key, "%s." s, arch), key)
  gguf_w_u32(w, KEY("block_count"), 1);
  gguf_w_u32(w, KEY("embedding_length"), 32);
  gguf_w_u32(w, KEY("attention.head_count"), 2);
  gguf_w_u32(w, KEY("feed_forward_length"), 64);
  gguf_w_u32(w, KEY("context_length"), 128);
  if (f32_key) gguf_w_f32(w, (snprintf(key, sizeof key, "%s.%s", arch, f32_key), key), f32_val);
#undef KEY
  for (int i = 0; i < n; i++) CHECK(gguf_w_tensor(w, ts[i].name, ts[i].n_dims, ts[i].ne, ts[i].type) == i);
  const char *path = tm_tmpfile(fname);
  FILE *f = fopen(path, "wb");
  struct tm_err err;
  CHECK(f && gguf_w_begin(w, f, &err) == 0);
  for (int i = 0; i < n; i++) {
    size_t nb = (size_t)gguf_w_tensor_bytes(w, i);
    void *z = calloc(1, nb);
    CHECK(gguf_w_data(w, z, nb, &err) == 0);
    free(z);
  }
  CHECK(gguf_w_end(w, &err) == 0);
  fclose(f);
  gguf_writer_free(w);
  return path;
}

static const char *write_model(const char *fname, const char *arch, const struct tspec *ts,
                               int n) {
  return write_model_kv(fname, arch, ts, n, NULL, 0.0f);
}

static void expect_load_error(const char *path, const char *needle) {
  struct tm_err err = {{0}};
  struct engine *e = engine_load(path, NULL, &err);
  CHECK(e == NULL);
  CHECK_CONTAINS(err.msg, needle);
  engine_free(e);
}

static void test_load_errors(void) {
  const struct tspec base[] = {{"token_embd.weight", 2, {32, 10}, 0},
                               {"output_norm.weight", 1, {32, 1}, 0},
                               {"blk.0.attn_norm.weight", 1, {32, 1}, 0}};
  expect_load_error(write_model("g.gguf", "gemma3", base, 1),
                    "architecture 'gemma3' is not supported by the embedded engine (llama, "
                    "qwen2, qwen3, qwen3moe); tokmeter ceiling still works on it");
  expect_load_error(write_model("m.gguf", "llama", base, 3), "'blk.0.attn_q.weight' is missing");
  const struct tspec bad[] = {{"token_embd.weight", 2, {32, 10}, 0},
                              {"output_norm.weight", 1, {32, 1}, 0},
                              {"blk.0.attn_norm.weight", 1, {16, 1}, 0}};
  expect_load_error(write_model("s.gguf", "llama", bad, 3),
                    "'blk.0.attn_norm.weight' has shape [16], expected [32]");
  const struct tspec emb[] = {{"token_embd.weight", 2, {16, 10}, 0}};
  expect_load_error(write_model("e.gguf", "qwen3", emb, 1), "token_embd.weight");
  expect_load_error(tm_fixture("gguf/ggml-vocab-qwen2.gguf"), "missing");

  /* A whole 1-layer F32 llama loads and runs (the F32 gemm path); the same
   * file with attn_q in IQ4_NL names the tensor and type it cannot run. */
  struct tspec full[] = {{"token_embd.weight", 2, {32, 10}, 0},
                         {"output_norm.weight", 1, {32, 1}, 0},
                         {"blk.0.attn_norm.weight", 1, {32, 1}, 0},
                         {"blk.0.attn_q.weight", 2, {32, 32}, 0},
                         {"blk.0.attn_k.weight", 2, {32, 32}, 0},
                         {"blk.0.attn_v.weight", 2, {32, 32}, 0},
                         {"blk.0.attn_output.weight", 2, {32, 32}, 0},
                         {"blk.0.ffn_norm.weight", 1, {32, 1}, 0},
                         {"blk.0.ffn_gate.weight", 2, {32, 64}, 0},
                         {"blk.0.ffn_up.weight", 2, {32, 64}, 0},
                         {"blk.0.ffn_down.weight", 2, {64, 32}, 0}};
  struct tm_err err = {{0}};
  struct engine *e = engine_load(write_model("ok.gguf", "llama", full, 11), NULL, &err);
  CHECK_MSG(e != NULL, "%s", err.msg);
  if (e) {
    float l[10];
    CHECK(engine_decode(e, 3, l, &err) == 0);
    for (int i = 0; i < 10; i++) CHECK_NEAR(l[i], 0.0, 0.0); /* zero weights */
    struct engine_info in;
    engine_get_info(e, &in);
    CHECK_EQ_INT(in.n_ctx, 128); /* clamped to context_length */
    CHECK_EQ_INT(in.head_dim, 16);
    engine_free(e);
  }
  full[3].type = GGML_TYPE_IQ4_NL;
  expect_load_error(write_model("iq.gguf", "llama", full, 11),
                    "'blk.0.attn_q.weight' has type IQ4_NL");
  expect_load_error(tm_tmpfile("does-not-exist.gguf"), "does-not-exist.gguf");
  /* Hyperparameters that would run and give NaN logits are refused. */
  full[3].type = 0;
  expect_load_error(write_model_kv("r.gguf", "llama", full, 11, "rope.freq_base", NAN),
                    "llama.rope.freq_base is nan");
  expect_load_error(write_model_kv("r0.gguf", "llama", full, 11, "rope.freq_base", 0.0f),
                    "must be a finite number above 1");
  expect_load_error(
      write_model_kv("n.gguf", "llama", full, 11, "attention.layer_norm_rms_epsilon", -1e-6f),
      "llama.attention.layer_norm_rms_epsilon is -1e-06");
  expect_load_error(
      write_model_kv("nn.gguf", "llama", full, 11, "attention.layer_norm_rms_epsilon", NAN),
      "must be in (0, 1)");
  e = engine_load(write_model_kv("ok2.gguf", "llama", full, 11, "rope.freq_base", 1e6f), NULL,
                  &err);
  CHECK_MSG(e != NULL, "%s", err.msg);
  engine_free(e);
}

void tm_run_tests(void) {
  TM_RUN(test_prefill_equals_decode);
  TM_RUN(test_decode_greedy);
  TM_RUN(test_prefill_split_batches);
  TM_RUN(test_threads_identical);
  TM_RUN(test_decode_chunks_identical);
  TM_RUN(test_auto_vs_scalar);
  TM_RUN(test_reset_and_info);
  TM_RUN(test_runtime_errors);
  TM_RUN(test_load_errors);
}
