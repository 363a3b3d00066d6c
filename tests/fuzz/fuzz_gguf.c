/* fuzz_gguf: libFuzzer target for the GGUF reader (and, on inputs it accepts,
 * the getters, the lookups and the writer).
 *
 * Contract checked beyond "no crash, no sanitizer report": a rejected input has
 * a non-empty message; an accepted one is self-consistent (every key and tensor
 * is found by name, string arrays walk to exactly count elements, tensor data
 * lies inside the input, which ASan checks by touching its first and last byte),
 * and re-writing it with the writer gives a file the reader accepts with the
 * same counts. Built and run by run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rewrite(const struct gguf_file *f, size_t in_size) {
  /* the reader accepts names up to 1024 bytes; the writer keeps to llama.cpp's 63 */
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (strlen(f->tensors[i].name) > 63) return;
  struct gguf_writer *w = gguf_writer_new(f->alignment);
  if (!w) abort();
  for (uint64_t i = 0; i < f->n_kv; i++)
    if (gguf_w_copy_kv(w, &f->kv[i]) != 0) abort();
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    const struct gguf_tensor *t = &f->tensors[i];
    if (gguf_w_tensor(w, t->name, t->n_dims, t->ne, t->type) != (int)i) abort();
    if (gguf_w_tensor_bytes(w, (int)i) != t->size_bytes) abort();
  }
  /* The reader proved every tensor's data lies inside the input, so copying it
   * all costs at most the input size. */
  /* A huge general.alignment in a file without tensors pads the header of the
   * rewrite to that size: legal, but not worth memory here. */
  if (gguf_w_file_size(w) > (uint64_t)in_size * 2 + (1u << 20)) {
    gguf_writer_free(w);
    return;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  if (!out) abort();
  struct tm_err err;
  if (gguf_w_begin(w, out, &err) != 0) abort();
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (gguf_w_data(w, f->tensors[i].data, f->tensors[i].size_bytes, &err) != 0) abort();
  if (gguf_w_end(w, &err) != 0) abort();
  uint64_t want = gguf_w_file_size(w);
  fclose(out);
  gguf_writer_free(w);
  if (len != want) abort();
  struct gguf_file *g = gguf_parse(buf, len, &err);
  if (!g) {
    fprintf(stderr, "rewritten file rejected: %s\n", err.msg);
    abort();
  }
  /* the writer leaves out an explicit general.alignment of 32 (the default) */
  uint64_t want_kv = f->n_kv - (gguf_find_kv(f, "general.alignment") && f->alignment == 32);
  if (g->n_kv != want_kv || g->n_tensors != f->n_tensors || g->alignment != f->alignment) abort();
  gguf_close(g);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct tm_err err;
  err.msg[0] = 0;
  struct gguf_file *f = gguf_parse(data, size, &err);
  if (!f) {
    if (!err.msg[0]) abort();
    return 0;
  }
  volatile uint8_t sink = 0;
  for (uint64_t i = 0; i < f->n_kv; i++) {
    const struct gguf_kv *kv = &f->kv[i];
    if (gguf_find_kv(f, kv->key) != kv) abort();
    uint64_t u;
    double d;
    bool b;
    char s[16];
    gguf_get_u64(f, kv->key, &u, &err);
    gguf_get_f64(f, kv->key, &d, &err);
    gguf_get_bool(f, kv->key, &b, &err);
    gguf_get_str(f, kv->key, s, sizeof s, &err);
    if (kv->type == GGUF_VT_STRING && kv->v.str.len) sink ^= (uint8_t)kv->v.str.ptr[kv->v.str.len - 1];
    if (kv->type == GGUF_VT_ARRAY) {
      uint64_t n = kv->v.arr.count;
      gguf_arr_get_u64(kv, 0, &u);
      if (n) gguf_arr_get_u64(kv, n - 1, &u);
      if (kv->v.arr.data_bytes) sink ^= kv->v.arr.data[kv->v.arr.data_bytes - 1];
      if (kv->v.arr.elem_type == GGUF_VT_STRING) {
        uint64_t pos = 0, k = 0;
        struct gguf_str gs;
        while (gguf_arr_next_str(kv, &pos, &gs) == 0) {
          if (gs.len) sink ^= (uint8_t)gs.ptr[gs.len - 1];
          k++;
        }
        if (k != n || pos != kv->v.arr.data_bytes) abort();
      }
    }
  }
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    const struct gguf_tensor *t = &f->tensors[i];
    if (gguf_find_tensor(f, t->name) != t) abort();
    if (t->offset % f->alignment) abort();
    const uint8_t *p = t->data;
    sink ^= p[0];
    sink ^= p[t->size_bytes - 1];
  }
  (void)sink;
  rewrite(f, size);
  gguf_close(f);
  return 0;
}
