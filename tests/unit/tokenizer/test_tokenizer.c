/* test_tokenizer: token ids against llama.cpp's own (llama-tokenize, kept in
 * tests/fixtures/tokenizer/llama-tokenize-reference.json) for both fixture
 * vocabularies, with and without special-token parsing, on texts written to
 * catch what a tokenizer gets wrong: contractions, digits, Turkish dotted and
 * dotless i, German ß, emoji sequences, code, runs of spaces and line
 * breaks, CJK, combining marks, fullwidth forms, typed special tokens; and
 * the refusals (no vocabulary, invalid UTF-8). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tm_test.h"
#include "tokenizer/tokenizer.h"

static json_t *reference(void) {
  json_error_t je;
  json_t *r = json_load_file(tm_fixture("tokenizer/llama-tokenize-reference.json"), 0, &je);
  CHECK_MSG(r != NULL, "reference: %s", je.text);
  return r;
}

static void print_ids(const char *what, const int32_t *v, size_t n) {
  fprintf(stderr, "    %s (%zu):", what, n);
  for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", v[i]);
  fprintf(stderr, "\n");
}

static void check_vocab(const char *key, const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "gguf/%s", file);
  struct tm_err err = {{0}};
  struct tokenizer *t = tokenizer_open(tm_fixture(path), &err);
  CHECK_MSG(t != NULL, "%s: %s", file, err.msg);
  if (!t) return;
  json_t *r = reference();
  if (!r) {
    tokenizer_free(t);
    return;
  }
  size_t i, n_cases = 0, n_match = 0;
  json_t *c;
  json_array_foreach(json_object_get(r, "cases"), i, c) {
    const char *text = json_string_value(json_object_get(c, "text"));
    size_t len = json_string_length(json_object_get(c, "text"));
    for (int special = 0; special < 2; special++) {
      char k[64];
      snprintf(k, sizeof k, "%s%s", key, special ? " parse_special" : "");
      json_t *want = json_object_get(c, k);
      CHECK_MSG(json_is_array(want), "case %zu: no '%s'", i, k);
      int32_t *ids = NULL;
      size_t n = 0;
      int rc = tokenizer_encode(t, text, len, true, special, &ids, &n, &err);
      CHECK_MSG(rc == 0, "encode: %s", err.msg);
      bool same = rc == 0 && n == json_array_size(want);
      for (size_t j = 0; same && j < n; j++)
        same = ids[j] == json_integer_value(json_array_get(want, j));
      n_cases++;
      n_match += same;
      if (!same) {
        fprintf(stderr, "  %s, %s: \"%s\"\n", file, special ? "parse_special" : "text", text);
        print_ids("tokmeter", ids, n);
        int32_t w[256];
        size_t nw = json_array_size(want) < 256 ? json_array_size(want) : 256;
        for (size_t j = 0; j < nw; j++) w[j] = (int32_t)json_integer_value(json_array_get(want, j));
        print_ids("llama.cpp", w, nw);
      }
      free(ids);
    }
  }
  CHECK_MSG(n_cases >= 60 && n_match == n_cases, "%s: %zu of %zu texts give llama.cpp's ids",
            file, n_match, n_cases);
  json_decref(r);
  tokenizer_free(t);
}

static void test_qwen2_bpe(void) { check_vocab("qwen2", "ggml-vocab-qwen2.gguf"); }
static void test_llama_spm(void) { check_vocab("llama-spm", "ggml-vocab-llama-spm.gguf"); }

/* The same vocabulary inside a model file (what `synth --vocab-from` copies
 * and the in-process bench reads). */
static void test_model_file_vocab(void) {
  struct tm_err err = {{0}};
  struct tokenizer *t = tokenizer_open(tm_fixture("gguf/tiny-qwen3-Q8_0.gguf"), &err);
  CHECK_MSG(t != NULL, "%s", err.msg);
  if (!t) return;
  CHECK(tokenizer_n_vocab(t) == 151936);
  CHECK(!strcmp(tokenizer_describe(t), "gpt2 (qwen2)"));
  int32_t *ids = NULL;
  size_t n = 0;
  CHECK(tokenizer_encode(t, "Hello world", 11, true, false, &ids, &n, &err) == 0);
  CHECK(n == 2 && ids[0] == 9707 && ids[1] == 1879); /* no BOS for qwen2 */
  free(ids);
  tokenizer_free(t);
}

static void test_refusals(void) {
  struct tm_err err = {{0}};
  struct tokenizer *t = tokenizer_open(tm_fixture("gguf/ggml-vocab-llama-spm.gguf"), &err);
  CHECK(t != NULL);
  if (t) {
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(tokenizer_encode(t, "ok \xff bad", 8, true, false, &ids, &n, &err) == -1);
    CHECK_MSG(strstr(err.msg, "UTF-8") != NULL, "%s", err.msg);
    CHECK(ids == NULL && n == 0);
    tokenizer_free(t);
  }
  /* a GGUF written without a vocabulary: the message says how to get one */
  struct gguf_writer *w = gguf_writer_new(32);
  CHECK(gguf_w_str(w, "general.architecture", "llama") == 0);
  CHECK(gguf_w_str(w, "tokenizer.ggml.model", "none") == 0);
  const char *path = tm_tmpfile("novocab.gguf");
  FILE *f = fopen(path, "wb");
  CHECK(f && gguf_w_begin(w, f, &err) == 0 && gguf_w_end(w, &err) == 0);
  if (f) fclose(f);
  gguf_writer_free(w);
  t = tokenizer_open(path, &err);
  CHECK(t == NULL);
  CHECK_MSG(strstr(err.msg, "no vocabulary") && strstr(err.msg, "--vocab-from"), "%s", err.msg);
  tokenizer_free(t);
}

void tm_run_tests(void) {
  TM_RUN(test_qwen2_bpe);
  TM_RUN(test_llama_spm);
  TM_RUN(test_model_file_vocab);
  TM_RUN(test_refusals);
}
