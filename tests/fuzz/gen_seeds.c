/* gen_seeds: writes a few small valid GGUF files (every value type, string
 * arrays, several tensor types, default and custom alignment) into a directory,
 * as the seed corpus for fuzz_gguf. Usage: gen_seeds DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"

static int write_seed(const char *dir, const char *name, uint32_t alignment, int n_tensors,
                      int with_arrays) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct gguf_writer *w = gguf_writer_new(alignment);
  if (!w) return -1;
  gguf_w_str(w, "general.architecture", "llama");
  gguf_w_u32(w, "llama.block_count", 2);
  gguf_w_i32(w, "i32", -5);
  gguf_w_u64(w, "u64", 1234567890123ull);
  gguf_w_f32(w, "llama.rope.freq_base", 10000.0f);
  gguf_w_bool(w, "tokenizer.ggml.add_bos_token", true);
  if (with_arrays) {
    const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b c"};
    float scores[] = {0, 0, 0, -1.5f, -2.5f};
    int32_t types[] = {2, 3, 3, 1, 1};
    uint8_t u8s[] = {1, 2, 3};
    double f64s[] = {1.0, -2.0};
    int64_t i64s[] = {-1, 1};
    uint16_t u16s[] = {7};
    bool bools[] = {true, false};
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, 5);
    gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, scores, 5);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, types, 5);
    gguf_w_arr(w, "u8s", GGUF_VT_UINT8, u8s, 3);
    gguf_w_arr(w, "f64s", GGUF_VT_FLOAT64, f64s, 2);
    gguf_w_arr(w, "i64s", GGUF_VT_INT64, i64s, 2);
    gguf_w_arr(w, "u16s", GGUF_VT_UINT16, u16s, 1);
    gguf_w_arr(w, "bools", GGUF_VT_BOOL, bools, 2);
  }
  static const struct { const char *name; uint32_t n_dims; uint64_t ne[4]; uint32_t type; } t[] = {
      {"token_embd.weight", 2, {32, 4, 1, 1}, GGML_TYPE_Q8_0},
      {"output_norm.weight", 1, {32, 1, 1, 1}, GGML_TYPE_F32},
      {"blk.0.attn_q.weight", 2, {256, 1, 1, 1}, GGML_TYPE_Q4_K},
      {"blk.0.ffn_up_exps.weight", 3, {32, 2, 2, 1}, GGML_TYPE_F16},
  };
  for (int i = 0; i < n_tensors && i < 4; i++) gguf_w_tensor(w, t[i].name, t[i].n_dims, t[i].ne, t[i].type);
  FILE *out = fopen(path, "wb");
  struct tm_err err;
  int rc = out ? gguf_w_begin(w, out, &err) : -1;
  for (int i = 0; rc == 0 && i < n_tensors && i < 4; i++) {
    uint64_t n = gguf_w_tensor_bytes(w, i);
    unsigned char *buf = calloc(1, n);
    if (!buf) return -1;
    for (uint64_t k = 0; k < n; k++) buf[k] = (unsigned char)(k * 13 + i);
    rc = gguf_w_data(w, buf, n, &err);
    free(buf);
  }
  if (rc == 0) rc = gguf_w_end(w, &err);
  if (out) fclose(out);
  gguf_writer_free(w);
  if (rc) {
    fprintf(stderr, "gen_seeds: %s: %s\n", name, err.msg);
    return rc;
  }
  /* a seed the reader rejects would make a poor corpus: check it */
  struct gguf_file *f = gguf_open(path, &err);
  if (!f || f->n_tensors != (uint64_t)n_tensors || f->n_kv < 6) {
    fprintf(stderr, "gen_seeds: %s: not read back: %s\n", name, f ? "wrong counts" : err.msg);
    gguf_close(f);
    return -1;
  }
  gguf_close(f);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_seeds DIR\n");
    return 2;
  }
  int rc = 0;
  rc |= write_seed(argv[1], "seed-full", 32, 4, 1);
  rc |= write_seed(argv[1], "seed-align64", 64, 3, 1);
  rc |= write_seed(argv[1], "seed-meta-only", 32, 0, 1);
  rc |= write_seed(argv[1], "seed-one-tensor", 16, 1, 0);
  return rc ? 1 : 0;
}
