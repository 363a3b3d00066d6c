/* test_synth: synthesized files read back with the GGUF reader: metadata keys
 * and values, tensor list == plan, data layout, determinism (seed, threads),
 * value statistics per tensor, errors, --vocab-from, the cache helper; and the
 * generator itself (rng.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "synth/synth.h"
#include "synth/synth_internal.h"
#include "tm_test.h"
#include "util/fp16.h"
#include "util/rng.h"

static int write_model(const char *preset, int ftype, uint64_t seed, unsigned threads,
                       const char *path, struct synth_result *res) {
  struct synth_options opt;
  synth_options_init(&opt);
  opt.shape = model_preset_find(preset)->shape;
  opt.ftype = ftype;
  opt.seed = seed;
  opt.n_threads = threads;
  struct tm_err err;
  int rc = synth_write(&opt, path, NULL, NULL, res, &err);
  CHECK_MSG(rc == 0, "%s %s: %s", preset, model_ftype_name(ftype), rc ? err.msg : "");
  return rc;
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)len + 1);
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *n = (size_t)len;
  return buf;
}

static bool same_file(const char *a, const char *b) {
  size_t na, nb;
  unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
  bool same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

static uint64_t u64_key(const struct gguf_file *f, const char *key) {
  uint64_t v = 0;
  struct tm_err err;
  CHECK_MSG(gguf_get_u64(f, key, &v, &err) == 0, "key %s: %s", key, err.msg);
  return v;
}

/* Reads the file back and checks it against the options and the plan. */
static void check_file(const char *preset, int ftype, const char *path,
                       const struct synth_result *res) {
  const struct model_shape *s = &model_preset_find(preset)->shape;
  struct tm_err err;
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s: %s", path, f ? "" : err.msg);
  if (!f) return;
  char buf[64], key[128];
  CHECK(gguf_get_str(f, "general.architecture", buf, sizeof buf, &err) == 0);
  CHECK_STR(buf, s->arch);
  CHECK(gguf_get_str(f, "tokenizer.ggml.model", buf, sizeof buf, &err) == 0);
  CHECK_STR(buf, "none");
  CHECK(gguf_find_kv(f, "general.name") != NULL);
  CHECK_EQ_U64(u64_key(f, "general.file_type"), (uint64_t)ftype);
  CHECK_EQ_U64(u64_key(f, "general.quantization_version"), 2);
#define KEY(suffix) (snprintf(key, sizeof key, "%s.%s", s->arch, suffix), key)
  CHECK_EQ_U64(u64_key(f, KEY("block_count")), s->n_layer);
  CHECK_EQ_U64(u64_key(f, KEY("embedding_length")), s->n_embd);
  CHECK_EQ_U64(u64_key(f, KEY("feed_forward_length")), s->n_ff);
  CHECK_EQ_U64(u64_key(f, KEY("attention.head_count")), s->n_head);
  CHECK_EQ_U64(u64_key(f, KEY("attention.head_count_kv")), s->n_head_kv);
  CHECK_EQ_U64(u64_key(f, KEY("attention.key_length")), s->head_dim);
  CHECK_EQ_U64(u64_key(f, KEY("attention.value_length")), s->head_dim);
  CHECK_EQ_U64(u64_key(f, KEY("context_length")), s->n_ctx_train);
  CHECK_EQ_U64(u64_key(f, KEY("vocab_size")), s->n_vocab);
  double d = 0;
  CHECK(gguf_get_f64(f, KEY("rope.freq_base"), &d, &err) == 0);
  CHECK_NEAR(d, s->rope_base, 1e-3 * s->rope_base);
  CHECK(gguf_get_f64(f, KEY("attention.layer_norm_rms_epsilon"), &d, &err) == 0);
  CHECK_NEAR(d, s->rms_eps, 1e-3 * s->rms_eps);
  if (s->n_expert) {
    CHECK_EQ_U64(u64_key(f, KEY("expert_count")), s->n_expert);
    CHECK_EQ_U64(u64_key(f, KEY("expert_used_count")), s->n_expert_used);
    CHECK_EQ_U64(u64_key(f, KEY("expert_feed_forward_length")), s->n_ff_exp);
  }
#undef KEY
  struct model_plan plan;
  CHECK(model_plan_make(s, ftype, &plan, &err) == 0);
  CHECK_EQ_U64(f->n_tensors, plan.n_tensors);
  uint64_t data = 0, prev_end = 0;
  for (size_t i = 0; i < plan.n_tensors && i < f->n_tensors; i++) {
    const struct gguf_tensor *t = &f->tensors[i];
    const struct plan_tensor *p = &plan.tensors[i];
    CHECK_STR(t->name, p->name);
    CHECK_EQ_INT(t->type, p->type);
    CHECK_EQ_INT(t->n_dims, p->n_dims);
    for (int k = 0; k < 4; k++) CHECK_EQ_U64(t->ne[k], p->ne[k]);
    CHECK(t->offset % 32 == 0);
    CHECK(t->offset >= prev_end);
    prev_end = t->offset + t->size_bytes;
    data += t->size_bytes;
  }
  CHECK_EQ_U64(data, model_plan_data_bytes(&plan));
  CHECK(f->data_offset + prev_end <= f->file_size);
  CHECK(f->file_size - (f->data_offset + prev_end) < 32);
  if (res) {
    CHECK_EQ_U64(res->file_bytes, f->file_size);
    CHECK_EQ_U64(res->data_bytes, data);
    CHECK_EQ_U64(res->n_tensors, plan.n_tensors);
  }

  /* values: every tensor dequantized, mean ~ intended, std ~ intended */
  for (size_t i = 0; i < plan.n_tensors && i < f->n_tensors; i++) {
    const struct gguf_tensor *t = &f->tensors[i];
    float *x = malloc(t->n_elements * sizeof *x);
    if (!x) continue;
    int rc = 0;
    if (t->type == GGML_TYPE_F32)
      memcpy(x, t->data, t->n_elements * 4);
    else if (t->type == GGML_TYPE_F16)
      for (uint64_t k = 0; k < t->n_elements; k++) x[k] = tm_fp16_to_fp32(((const uint16_t *)t->data)[k]);
    else if (t->type == GGML_TYPE_BF16)
      for (uint64_t k = 0; k < t->n_elements; k++) x[k] = tm_bf16_to_fp32(((const uint16_t *)t->data)[k]);
    else
      rc = ggml_dequantize_ref(t->type, t->data, x, (int64_t)t->n_elements);
    CHECK_MSG(rc == 0, "dequantize %s", t->name);
    double sum = 0, ss = 0, mn = 1e30, mx = -1e30;
    int nan = 0;
    for (uint64_t k = 0; k < t->n_elements; k++) {
      if (!isfinite(x[k])) nan++;
      sum += x[k];
      mn = x[k] < mn ? x[k] : mn;
      mx = x[k] > mx ? x[k] : mx;
    }
    double mean = sum / (double)t->n_elements;
    for (uint64_t k = 0; k < t->n_elements; k++) ss += (x[k] - mean) * (x[k] - mean);
    double sd = sqrt(ss / (double)t->n_elements);
    float want_mean, want_std;
    synth_tensor_init(s, &plan.tensors[i], &want_mean, &want_std);
    double n = (double)t->n_elements;
    CHECK_MSG(nan == 0, "%s: %d non-finite values", t->name, nan);
    CHECK_MSG(mx > mn, "%s is constant", t->name);
    CHECK_MSG(fabs(mean - want_mean) < 5 * want_std / sqrt(n) + 0.02 * want_std,
              "%s: mean %g, intended %g", t->name, mean, want_mean);
    /* quantization adds noise (Q4_0 ~ +10% std); a sample std of n values
     * wanders by ~1/sqrt(2n) (16-element Q/K norms: 18%) */
    double tol = 0.2 + 4.0 / sqrt(2 * n);
    CHECK_MSG(sd > (1 - tol) * want_std && sd < (1 + tol) * want_std,
              "%s: std %g, intended %g", t->name, sd, want_std);
    free(x);
  }
  model_plan_free(&plan);
  gguf_close(f);
}

static void test_roundtrip(void) {
  static const struct {
    const char *preset;
    int ftype;
  } cases[] = {
      {"tiny", MODEL_FTYPE_Q8_0},       {"tiny", MODEL_FTYPE_Q4_0},
      {"tiny", MODEL_FTYPE_F16},        {"tiny", MODEL_FTYPE_BF16},
      {"tiny", MODEL_FTYPE_Q4_K_M},     {"tiny-moe", MODEL_FTYPE_Q8_0},
      {"tiny-moe", MODEL_FTYPE_Q5_K_S}, {"tiny-moe", MODEL_FTYPE_F32},
      {"tiny-llama", MODEL_FTYPE_Q4_1}, {"tiny-llama", MODEL_FTYPE_Q6_K},
      {"tiny-qwen2", MODEL_FTYPE_Q5_0}, {"tiny-qwen2", MODEL_FTYPE_Q8_0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "rt-%s-%s.gguf", cases[i].preset, model_ftype_name(cases[i].ftype));
    const char *path = tm_tmpfile(name);
    struct synth_result res;
    if (write_model(cases[i].preset, cases[i].ftype, 1, 2, path, &res) == 0)
      check_file(cases[i].preset, cases[i].ftype, path, &res);
  }
}

static void test_deterministic(void) {
  char a[1024], b[1024], c[1024], d[1024];
  snprintf(a, sizeof a, "%s", tm_tmpfile("det-a.gguf"));
  snprintf(b, sizeof b, "%s", tm_tmpfile("det-b.gguf"));
  snprintf(c, sizeof c, "%s", tm_tmpfile("det-c.gguf"));
  snprintf(d, sizeof d, "%s", tm_tmpfile("det-d.gguf"));
  write_model("tiny-moe", MODEL_FTYPE_Q4_0, 7, 1, a, NULL);
  write_model("tiny-moe", MODEL_FTYPE_Q4_0, 7, 3, b, NULL);
  write_model("tiny-moe", MODEL_FTYPE_Q4_0, 8, 2, c, NULL);
  write_model("tiny-moe", MODEL_FTYPE_Q4_0, 7, 2, d, NULL);
  CHECK_MSG(same_file(a, b), "1 vs 3 threads differ");
  CHECK_MSG(same_file(a, d), "same seed twice differs");
  CHECK_MSG(!same_file(a, c), "seeds 7 and 8 gave the same file");
  /* the K-quant path (synth_quant_fast.c: Q4_K, Q5_K, Q6_K tensors) as well */
  snprintf(a, sizeof a, "%s", tm_tmpfile("det-kq-a.gguf"));
  snprintf(b, sizeof b, "%s", tm_tmpfile("det-kq-b.gguf"));
  write_model("tiny-moe", MODEL_FTYPE_Q4_K_M, 7, 1, a, NULL);
  write_model("tiny-moe", MODEL_FTYPE_Q4_K_M, 7, 3, b, NULL);
  CHECK_MSG(same_file(a, b), "Q4_K_M: 1 vs 3 threads differ");
  /* chunk seeds differ across tensors and chunks */
  CHECK(synth_chunk_seed(1, 0, 0) != synth_chunk_seed(1, 0, 1));
  CHECK(synth_chunk_seed(1, 0, 1) != synth_chunk_seed(1, 1, 0));
  CHECK(synth_chunk_seed(1, 2, 3) != synth_chunk_seed(2, 2, 3));
}

/* A tensor larger than one chunk (tiny's embedding is 512x64 = 32k, so use a
 * wider vocabulary) must still be identical across thread counts. */
static void test_multi_chunk(void) {
  struct synth_options opt;
  synth_options_init(&opt);
  opt.shape = model_preset_find("tiny")->shape;
  opt.shape.n_vocab = 40000; /* 2.56M elements: 3 chunks */
  opt.ftype = MODEL_FTYPE_Q8_0;
  struct tm_err err;
  char a[1024], b[1024];
  snprintf(a, sizeof a, "%s", tm_tmpfile("mc-a.gguf"));
  snprintf(b, sizeof b, "%s", tm_tmpfile("mc-b.gguf"));
  opt.n_threads = 1;
  CHECK(synth_write(&opt, a, NULL, NULL, NULL, &err) == 0);
  opt.n_threads = 4;
  CHECK(synth_write(&opt, b, NULL, NULL, NULL, &err) == 0);
  CHECK(same_file(a, b));
}

static void on_progress(uint64_t done, uint64_t total, void *ctx) {
  uint64_t *last = ctx;
  CHECK(done > last[0] && done <= total);
  last[0] = done;
  last[1] = total;
}

static void test_progress_and_errors(void) {
  struct synth_options opt;
  synth_options_init(&opt);
  opt.shape = model_preset_find("tiny")->shape;
  opt.ftype = MODEL_FTYPE_Q4_0;
  struct tm_err err;
  struct synth_result res;
  const char *path = tm_tmpfile("err.gguf");
  uint64_t last[2] = {0, 0};
  CHECK(synth_write(&opt, path, on_progress, last, &res, &err) == 0);
  CHECK(last[0] == last[1] && last[1] == res.data_bytes);
  /* exists without force */
  CHECK(synth_write(&opt, path, NULL, NULL, &res, &err) != 0);
  CHECK_EQ_INT(res.err_kind, SYNTH_ERR_INPUT);
  CHECK_CONTAINS(err.msg, "already exists");
  opt.force = true;
  CHECK(synth_write(&opt, path, NULL, NULL, &res, &err) == 0);
  /* a row length Q4_0 cannot hold */
  opt.shape.n_embd = 48;
  opt.shape.head_dim = 12;
  const char *p2 = tm_tmpfile("bad48.gguf");
  CHECK(synth_write(&opt, p2, NULL, NULL, &res, &err) != 0);
  CHECK_EQ_INT(res.err_kind, SYNTH_ERR_INPUT);
  CHECK_CONTAINS(err.msg, "block size");
  struct stat st;
  CHECK(stat(p2, &st) != 0);
  /* a directory that does not exist: the user's path (input), said before
   * any work, no temp file left */
  opt.shape = model_preset_find("tiny")->shape;
  CHECK(synth_write(&opt, "/nonexistent-dir/x.gguf", NULL, NULL, &res, &err) != 0);
  CHECK_EQ_INT(res.err_kind, SYNTH_ERR_INPUT);
  CHECK_CONTAINS(err.msg, "no directory /nonexistent-dir");
  /* inconsistent shape */
  opt.shape.n_head_kv = 3;
  CHECK(synth_write(&opt, tm_tmpfile("bad-kv.gguf"), NULL, NULL, &res, &err) != 0);
  CHECK_EQ_INT(res.err_kind, SYNTH_ERR_INPUT);
}

static void test_vocab_from(void) {
  struct synth_options opt;
  synth_options_init(&opt);
  opt.shape = model_preset_find("tiny")->shape;
  opt.ftype = MODEL_FTYPE_Q8_0;
  opt.vocab_from = tm_fixture("gguf/ggml-vocab-llama-spm.gguf");
  struct tm_err err;
  struct synth_result res;
  const char *path = tm_tmpfile("vocab.gguf");
  int rc = synth_write(&opt, path, NULL, NULL, &res, &err);
  CHECK_MSG(rc == 0, "%s", rc ? err.msg : "");
  struct gguf_file *src = gguf_open(opt.vocab_from, &err);
  struct gguf_file *f = rc == 0 ? gguf_open(path, &err) : NULL;
  CHECK(src && f);
  if (src && f) {
    const struct gguf_kv *tok = gguf_find_kv(src, "tokenizer.ggml.tokens");
    CHECK(tok != NULL);
    uint64_t n_vocab = tok ? tok->v.arr.count : 0;
    CHECK_EQ_U64(res.n_vocab, n_vocab);
    CHECK_EQ_U64(gguf_find_tensor(f, "token_embd.weight")->ne[1], n_vocab);
    CHECK_EQ_U64(u64_key(f, "qwen3.vocab_size"), n_vocab);
    for (uint64_t i = 0; i < src->n_kv; i++) {
      const struct gguf_kv *a = &src->kv[i];
      if (strncmp(a->key, "tokenizer.", 10) != 0) continue;
      const struct gguf_kv *b = gguf_find_kv(f, a->key);
      CHECK_MSG(b != NULL, "%s not copied", a->key);
      if (b) CHECK_EQ_INT(b->type, a->type);
      if (b && a->type == GGUF_VT_ARRAY) {
        CHECK_EQ_U64(b->v.arr.count, a->v.arr.count);
        CHECK(b->v.arr.data_bytes == a->v.arr.data_bytes &&
              memcmp(b->v.arr.data, a->v.arr.data, a->v.arr.data_bytes) == 0);
      }
    }
  }
  gguf_close(src);
  gguf_close(f);
  /* a GGUF without tokenizer keys */
  const char *plain = tm_tmpfile("plain-for-vocab.gguf");
  opt.vocab_from = NULL;
  CHECK(synth_write(&opt, plain, NULL, NULL, NULL, &err) == 0);
  opt.vocab_from = plain;
  CHECK(synth_write(&opt, tm_tmpfile("v2.gguf"), NULL, NULL, &res, &err) != 0);
  CHECK_EQ_INT(res.err_kind, SYNTH_ERR_INPUT);
  CHECK_CONTAINS(err.msg, "tokenizer");
  opt.vocab_from = "/nonexistent.gguf";
  CHECK(synth_write(&opt, tm_tmpfile("v3.gguf"), NULL, NULL, &res, &err) != 0);
  CHECK_EQ_INT(res.err_kind, SYNTH_ERR_INPUT);
}

static void test_cache(void) {
  char path[1024], path2[1024];
  bool written = false;
  struct tm_err err;
  int rc = synth_cached("tiny", MODEL_FTYPE_Q4_0, 1, 2, NULL, NULL, path, sizeof path, &written, &err);
  CHECK_MSG(rc == 0, "%s", rc ? err.msg : "");
  CHECK(written);
  CHECK_CONTAINS(path, "synth-tiny-Q4_0-s1.gguf");
  CHECK_CONTAINS(path, getenv("TOKMETER_CACHE_DIR"));
  struct stat st1, st2;
  CHECK(stat(path, &st1) == 0);
  CHECK(synth_cached("tiny", MODEL_FTYPE_Q4_0, 1, 2, NULL, NULL, path2, sizeof path2, &written, &err) == 0);
  CHECK(!written);
  CHECK_STR(path, path2);
  CHECK(stat(path, &st2) == 0 && st1.st_ino == st2.st_ino);
  CHECK(synth_cached("no-such", MODEL_FTYPE_Q4_0, 1, 2, NULL, NULL, path, sizeof path, &written, &err) != 0);
}

static void test_rng(void) {
  struct tm_rng a, b;
  tm_rng_seed(&a, 42);
  tm_rng_seed(&b, 42);
  for (int i = 0; i < 100; i++) CHECK(tm_rng_next(&a) == tm_rng_next(&b));
  tm_rng_seed(&b, 43);
  CHECK(tm_rng_next(&a) != tm_rng_next(&b));
  CHECK_NEAR(tm_normal_quantile(0.975), 1.959963984540054, 1e-12);
  CHECK_NEAR(tm_normal_quantile(1e-6), -4.753424308822899, 1e-9);
  CHECK_NEAR(tm_normal_quantile(0.5), 0.0, 1e-15);
  const float *t = tm_normal_table();
  double mean = 0, var = 0;
  for (int i = 0; i < 65536; i++) mean += t[i];
  for (int i = 0; i < 65536; i++) var += t[i] * (double)t[i];
  CHECK_NEAR(mean / 65536, 0.0, 1e-9);
  CHECK_NEAR(var / 65536, 1.0, 1e-3);
  int unsorted = 0;
  for (int i = 1; i < 65536; i++) unsorted += !(t[i] > t[i - 1]);
  CHECK_EQ_INT(unsorted, 0);
  size_t n = 1 << 20;
  float *x = malloc(n * sizeof *x);
  tm_rng_fill_normal(&a, x, n - 3, 2.0f, 0.5f); /* odd length: the tail path */
  double s = 0, ss = 0;
  for (size_t i = 0; i < n - 3; i++) s += x[i];
  double m = s / (double)(n - 3);
  for (size_t i = 0; i < n - 3; i++) ss += (x[i] - m) * (x[i] - m);
  CHECK_NEAR(m, 2.0, 0.005);
  CHECK_NEAR(sqrt(ss / (double)(n - 3)), 0.5, 0.005);
  free(x);
}

/* The fast Q6_K: valid blocks (read back by the reference dequantizer) within
 * the format's error: half a step of each sub-block's scale. */
static void test_q6_k_fast(void) {
  enum { N = 256 * 64 };
  static float x[N], y[N];
  static uint8_t q[N / 256 * 210];
  struct tm_rng r;
  tm_rng_seed(&r, 5);
  tm_rng_fill_normal(&r, x, N, 0.0f, 0.03f);
  x[7] = 0.5f;   /* an outlier in one sub-block */
  for (int i = 256; i < 512; i++) x[i] = 0; /* an all-zero block */
  synth_quantize_q6_k_fast(x, q, N);
  CHECK(ggml_dequantize_ref(GGML_TYPE_Q6_K, q, y, N) == 0);
  double worst = 0;
  for (int b = 0; b < N / 16; b++) {
    double amax = 0, err = 0;
    for (int i = 0; i < 16; i++) {
      amax = fmax(amax, fabs(x[16 * b + i]));
      err = fmax(err, fabs(x[16 * b + i] - y[16 * b + i]));
    }
    /* step = amax/32; + the 8-bit scale's rounding (<= 1/2 of 1/128 of the max scale) */
    double bound = amax / 32 * 0.5 + 0.5 / 32 * 0.004 * 32 + 1e-6;
    if (err / (bound > 0 ? bound : 1) > worst) worst = err / bound;
  }
  CHECK_MSG(worst <= 1.0, "Q6_K fast error %.3g x the bound", worst);
  for (int i = 256; i < 512; i++) CHECK(y[i] == 0);
  CHECK_NEAR(y[7], 0.5, 0.5 / 64);
}

void tm_run_tests(void) {
  TM_RUN(test_q6_k_fast);
  TM_RUN(test_roundtrip);
  TM_RUN(test_deterministic);
  TM_RUN(test_multi_chunk);
  TM_RUN(test_progress_and_errors);
  TM_RUN(test_vocab_from);
  TM_RUN(test_cache);
  TM_RUN(test_rng);
}
