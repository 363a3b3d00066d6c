/* gguf_test_builder: a byte builder for hand-made GGUF files in tests (valid
 * ones and deliberately corrupt ones), so no test spells a file in hex.
 * Header-only (static functions): each test file includes it. Allocation
 * failure aborts: a test has no better option. */
#ifndef TM_GGUF_TEST_BUILDER_H
#define TM_GGUF_TEST_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bb {
  uint8_t *p;
  size_t n, cap;
};

static void bb_raw(struct bb *b, const void *src, size_t n) __attribute__((unused));
static void bb_raw(struct bb *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->n + n) ncap *= 2;
    uint8_t *p = realloc(b->p, ncap);
    if (!p) abort();
    b->p = p;
    b->cap = ncap;
  }
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void bb_le(struct bb *b, uint64_t v, unsigned n) __attribute__((unused));
static void bb_le(struct bb *b, uint64_t v, unsigned n) {
  uint8_t t[8];
  for (unsigned i = 0; i < n; i++) t[i] = (uint8_t)(v >> (8 * i));
  bb_raw(b, t, n);
}

#define BB_UNUSED __attribute__((unused))
static BB_UNUSED void bb_u8(struct bb *b, uint8_t v) { bb_le(b, v, 1); }
static BB_UNUSED void bb_u32(struct bb *b, uint32_t v) { bb_le(b, v, 4); }
static BB_UNUSED void bb_u64(struct bb *b, uint64_t v) { bb_le(b, v, 8); }
static BB_UNUSED void bb_f32(struct bb *b, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  bb_u32(b, u);
}
static BB_UNUSED void bb_f64(struct bb *b, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  bb_u64(b, u);
}
/* GGUF string: u64 length + bytes */
static BB_UNUSED void bb_str(struct bb *b, const char *s) {
  bb_u64(b, strlen(s));
  bb_raw(b, s, strlen(s));
}
/* "GGUF" | version | n_tensors | n_kv */
static BB_UNUSED void bb_header(struct bb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  bb_u32(b, 0x46554747u);
  bb_u32(b, version);
  bb_u64(b, n_tensors);
  bb_u64(b, n_kv);
}
/* key + value type; the caller appends the value */
static BB_UNUSED void bb_key(struct bb *b, const char *key, uint32_t type) {
  bb_str(b, key);
  bb_u32(b, type);
}
static BB_UNUSED void bb_kv_u32(struct bb *b, const char *key, uint32_t v) {
  bb_key(b, key, 4);
  bb_u32(b, v);
}
static BB_UNUSED void bb_kv_str(struct bb *b, const char *key, const char *v) {
  bb_key(b, key, 8);
  bb_str(b, v);
}
/* Tensor info; returns the byte offset of the info. */
static BB_UNUSED size_t bb_tensor(struct bb *b, const char *name, uint32_t n_dims,
                                  const uint64_t *ne, uint32_t type, uint64_t offset) {
  size_t at = b->n;
  bb_str(b, name);
  bb_u32(b, n_dims);
  for (uint32_t d = 0; d < n_dims; d++) bb_u64(b, ne[d]);
  bb_u32(b, type);
  bb_u64(b, offset);
  return at;
}
/* Zero bytes up to a multiple of align. */
static BB_UNUSED void bb_pad(struct bb *b, size_t align) {
  while (b->n % align) bb_u8(b, 0);
}
static BB_UNUSED void bb_fill(struct bb *b, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++) bb_u8(b, v);
}
static BB_UNUSED void bb_free(struct bb *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}
static BB_UNUSED int bb_write_file(const struct bb *b, const char *path) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  size_t w = b->n ? fwrite(b->p, 1, b->n, fp) : 0;
  int rc = fclose(fp);
  return (w == b->n && rc == 0) ? 0 : -1;
}

#endif
