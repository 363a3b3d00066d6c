/* gguf_write: the streaming GGUF writer (version 3).
 *
 * Contracts:
 * - Metadata and tensor infos are collected in memory (small); tensor data is
 *   streamed by the caller through gguf_w_data, never held here.
 * - Layout matches what llama.cpp writes and reads: header, kvs in the order
 *   added, tensor infos in the order added, zero padding to the alignment, then
 *   each tensor's bytes followed by zero padding to the alignment (the last one
 *   too). Offsets are relative to the data section and aligned.
 * - general.alignment is written (as u32, first) only when the alignment is not
 *   the default 32; adding that key by hand is accepted only when it agrees.
 * - Every gguf_w_* call validates its input (unique key/name, 1..1024 bytes, a
 *   known type, whole blocks, no overflow; tensor names <= 63 bytes, as llama.cpp
 *   requires) and on failure returns -1 and leaves
 *   the writer unchanged; gguf_writer_error says why. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "gguf/gguf_internal.h"

#define GGUF_WRITER_MAX_TENSOR_NAME 63

struct w_kv {
  char *key;
  uint8_t *bytes; /* serialized: key string, value type, value */
  size_t n_bytes;
};

struct w_tensor {
  char *name;
  uint32_t n_dims;
  uint64_t ne[GGUF_MAX_DIMS];
  uint32_t type;
  uint64_t offset; /* in the data section */
  uint64_t size_bytes;
};

struct gguf_writer {
  uint32_t alignment;
  struct w_kv *kv;
  size_t n_kv, cap_kv;
  struct w_tensor *t;
  size_t n_t, cap_t;
  uint64_t data_bytes; /* padded size of the data section so far */
  /* streaming state */
  FILE *out;
  size_t cur;          /* tensor being written */
  uint64_t cur_done;   /* its bytes written so far */
  char err[256];
};

static int w_fail(struct gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int w_fail(struct gguf_writer *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  return -1;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n);
static int add_kv(struct gguf_writer *w, const char *key, uint32_t type, const void *payload,
                  size_t n);

struct gguf_writer *gguf_writer_new(uint32_t alignment) {
  if (alignment == 0) alignment = GGUF_DEFAULT_ALIGNMENT;
  if (!gguf_is_pow2(alignment)) return NULL;
  struct gguf_writer *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->alignment = alignment;
  if (alignment != GGUF_DEFAULT_ALIGNMENT) {
    uint8_t v[4];
    put_le(v, alignment, 4);
    if (add_kv(w, "general.alignment", GGUF_VT_UINT32, v, 4)) {
      gguf_writer_free(w);
      return NULL;
    }
  }
  return w;
}

void gguf_writer_free(struct gguf_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n_kv; i++) {
    free(w->kv[i].key);
    free(w->kv[i].bytes);
  }
  for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
  free(w->kv);
  free(w->t);
  free(w);
}

const char *gguf_writer_error(const struct gguf_writer *w) { return w ? w->err : "no writer"; }

/* ------------------------------------------------------------- metadata -- */

static int check_name(struct gguf_writer *w, const char *what, const char *name) {
  if (!name) return w_fail(w, "%s is NULL", what);
  size_t len = strlen(name);
  if (len == 0) return w_fail(w, "%s is empty", what);
  if (len > GGUF_MAX_NAME_LEN)
    return w_fail(w, "%s '%.40s...' is %zu bytes (max %d)", what, name, len, GGUF_MAX_NAME_LEN);
  return 0;
}

/* Little-endian bytes of v, n <= 8 of them (built in a local array first: GCC's
 * vectorizer otherwise warns about a loop it cannot bound). */
static void put_le(uint8_t *p, uint64_t v, unsigned n) {
  uint8_t b[8];
  for (unsigned i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  memcpy(p, b, n < 8 ? n : 8);
}

/* Adds key with a value already serialized as (type, payload of n bytes). */
static int add_kv(struct gguf_writer *w, const char *key, uint32_t type, const void *payload,
                  size_t n) {
  if (check_name(w, "key", key)) return -1;
  if (w->out) return w_fail(w, "key '%s': metadata must be added before gguf_w_begin", key);
  for (size_t i = 0; i < w->n_kv; i++)
    if (strcmp(w->kv[i].key, key) == 0) return w_fail(w, "duplicate key '%s'", key);
  size_t klen = strlen(key);
  if (n > SIZE_MAX - 12 - klen) return w_fail(w, "key '%s': value too large", key);
  if (w->n_kv == w->cap_kv) {
    size_t ncap = w->cap_kv ? w->cap_kv * 2 : 16;
    struct w_kv *p = realloc(w->kv, ncap * sizeof *p);
    if (!p) return w_fail(w, "out of memory");
    w->kv = p;
    w->cap_kv = ncap;
  }
  struct w_kv e = {.key = strdup(key), .n_bytes = 12 + klen + n};
  e.bytes = malloc(e.n_bytes);
  if (!e.key || !e.bytes) {
    free(e.key);
    free(e.bytes);
    return w_fail(w, "out of memory");
  }
  put_le(e.bytes, klen, 8);
  memcpy(e.bytes + 8, key, klen);
  put_le(e.bytes + 8 + klen, type, 4);
  if (n) memcpy(e.bytes + 12 + klen, payload, n);
  w->kv[w->n_kv++] = e;
  return 0;
}

static int add_scalar(struct gguf_writer *w, const char *key, uint32_t type, uint64_t bits) {
  uint8_t p[8];
  uint32_t sz = gguf_value_type_size(type);
  if (key && strcmp(key, "general.alignment") == 0) {
    /* the writer owns this key: it follows the alignment given to gguf_writer_new */
    if (type != GGUF_VT_UINT32) return w_fail(w, "general.alignment must be uint32");
    if (bits != w->alignment)
      return w_fail(w, "general.alignment %" PRIu64 " disagrees with the writer's alignment %u "
                    "(set it in gguf_writer_new)", bits, w->alignment);
    if (w->alignment == GGUF_DEFAULT_ALIGNMENT) return 0; /* default: not written */
    for (size_t i = 0; i < w->n_kv; i++)
      if (strcmp(w->kv[i].key, key) == 0) return 0;     /* already written by _new */
  }
  put_le(p, bits, sz);
  return add_kv(w, key, type, p, sz);
}

int gguf_w_u32(struct gguf_writer *w, const char *key, uint32_t v) {
  return add_scalar(w, key, GGUF_VT_UINT32, v);
}
int gguf_w_i32(struct gguf_writer *w, const char *key, int32_t v) {
  return add_scalar(w, key, GGUF_VT_INT32, (uint32_t)v);
}
int gguf_w_u64(struct gguf_writer *w, const char *key, uint64_t v) {
  return add_scalar(w, key, GGUF_VT_UINT64, v);
}
int gguf_w_f32(struct gguf_writer *w, const char *key, float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  return add_scalar(w, key, GGUF_VT_FLOAT32, bits);
}
int gguf_w_bool(struct gguf_writer *w, const char *key, bool v) {
  return add_scalar(w, key, GGUF_VT_BOOL, v ? 1 : 0);
}

static int add_str_value(struct gguf_writer *w, const char *key, const char *v, uint64_t len) {
  if (len > SIZE_MAX - 8) return w_fail(w, "key '%s': string too long", key ? key : "");
  uint8_t *p = malloc(8 + (size_t)len);
  if (!p) return w_fail(w, "out of memory");
  put_le(p, len, 8);
  if (len) memcpy(p + 8, v, (size_t)len);
  int rc = add_kv(w, key, GGUF_VT_STRING, p, 8 + (size_t)len);
  free(p);
  return rc;
}

int gguf_w_str(struct gguf_writer *w, const char *key, const char *v) {
  if (!v) return w_fail(w, "key '%s': NULL string", key ? key : "");
  return add_str_value(w, key, v, strlen(v));
}

/* An array value whose element bytes are already in file form. */
static int add_arr_raw(struct gguf_writer *w, const char *key, uint32_t elem_type, uint64_t count,
                       const void *data, uint64_t data_bytes) {
  if (data_bytes > SIZE_MAX - 12) return w_fail(w, "key '%s': array too large", key ? key : "");
  uint8_t *p = malloc(12 + (size_t)data_bytes);
  if (!p) return w_fail(w, "out of memory");
  put_le(p, elem_type, 4);
  put_le(p + 4, count, 8);
  if (data_bytes) memcpy(p + 12, data, (size_t)data_bytes);
  int rc = add_kv(w, key, GGUF_VT_ARRAY, p, 12 + (size_t)data_bytes);
  free(p);
  return rc;
}

int gguf_w_arr(struct gguf_writer *w, const char *key, enum gguf_value_type elem_type,
               const void *data, uint64_t count) {
  uint32_t esz = gguf_value_type_size(elem_type);
  if (esz == 0)
    return w_fail(w, "key '%s': gguf_w_arr takes fixed-size elements, not %s", key ? key : "",
                  gguf_value_type_name(elem_type));
  if (count > SIZE_MAX / esz) return w_fail(w, "key '%s': array too large", key ? key : "");
  if (count && !data) return w_fail(w, "key '%s': NULL array data", key ? key : "");
  if (elem_type == GGUF_VT_BOOL)
    for (uint64_t i = 0; i < count; i++)
      if (((const uint8_t *)data)[i] > 1)
        return w_fail(w, "key '%s': bool element %" PRIu64 " is not 0/1", key ? key : "", i);
  /* Host values -> little-endian file bytes. */
  uint8_t *buf = malloc(count * esz + 1);
  if (!buf) return w_fail(w, "out of memory");
  for (uint64_t i = 0; i < count; i++) {
    const uint8_t *src = (const uint8_t *)data + i * esz;
    uint64_t v = 0;
    if (esz == 1) v = src[0];
    else if (esz == 2) { uint16_t x; memcpy(&x, src, 2); v = x; }
    else if (esz == 4) { uint32_t x; memcpy(&x, src, 4); v = x; }
    else { memcpy(&v, src, 8); }
    put_le(buf + i * esz, v, esz);
  }
  int rc = add_arr_raw(w, key, elem_type, count, buf, count * esz);
  free(buf);
  return rc;
}

int gguf_w_arr_str(struct gguf_writer *w, const char *key, const char *const *v, uint64_t count) {
  if (count && !v) return w_fail(w, "key '%s': NULL string array", key ? key : "");
  uint64_t total = 0;
  for (uint64_t i = 0; i < count; i++) {
    if (!v[i]) return w_fail(w, "key '%s': string %" PRIu64 " is NULL", key ? key : "", i);
    size_t len = strlen(v[i]);
    if (total > SIZE_MAX - 8 - len) return w_fail(w, "key '%s': array too large", key ? key : "");
    total += 8 + len;
  }
  uint8_t *buf = malloc((size_t)total + 1), *p = buf;
  if (!buf) return w_fail(w, "out of memory");
  for (uint64_t i = 0; i < count; i++) {
    size_t len = strlen(v[i]);
    put_le(p, len, 8);
    memcpy(p + 8, v[i], len);
    p += 8 + len;
  }
  int rc = add_arr_raw(w, key, GGUF_VT_STRING, count, buf, total);
  free(buf);
  return rc;
}

int gguf_w_copy_kv(struct gguf_writer *w, const struct gguf_kv *kv) {
  if (!kv) return w_fail(w, "NULL kv");
  switch (kv->type) {
  case GGUF_VT_UINT8: case GGUF_VT_UINT16: case GGUF_VT_UINT32: case GGUF_VT_UINT64:
  case GGUF_VT_BOOL:
    return add_scalar(w, kv->key, kv->type, kv->v.u64);
  case GGUF_VT_INT8: case GGUF_VT_INT16: case GGUF_VT_INT32: case GGUF_VT_INT64:
    return add_scalar(w, kv->key, kv->type, (uint64_t)kv->v.i64); /* put_le truncates */
  case GGUF_VT_FLOAT32: {
    float x = (float)kv->v.f64; /* exact: it was read from a float32 */
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return add_scalar(w, kv->key, kv->type, bits);
  }
  case GGUF_VT_FLOAT64: {
    uint64_t bits;
    memcpy(&bits, &kv->v.f64, 8);
    return add_scalar(w, kv->key, kv->type, bits);
  }
  case GGUF_VT_STRING:
    return add_str_value(w, kv->key, kv->v.str.ptr, kv->v.str.len);
  case GGUF_VT_ARRAY:
    /* the element bytes are already in file form (strings with their lengths) */
    if (kv->v.arr.elem_type == GGUF_VT_ARRAY || (unsigned)kv->v.arr.elem_type >= GGUF_VT_COUNT)
      return w_fail(w, "key '%s': bad array element type", kv->key);
    return add_arr_raw(w, kv->key, kv->v.arr.elem_type, kv->v.arr.count, kv->v.arr.data,
                       kv->v.arr.data_bytes);
  default:
    return w_fail(w, "key '%s': unknown value type %u", kv->key ? kv->key : "", (unsigned)kv->type);
  }
}

/* --------------------------------------------------------------- tensors -- */

int gguf_w_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                  uint32_t type) {
  if (check_name(w, "tensor name", name)) return -1;
  /* llama.cpp refuses tensor names of GGML_MAX_NAME (64) bytes or more */
  if (strlen(name) > GGUF_WRITER_MAX_TENSOR_NAME)
    return w_fail(w, "tensor name '%.40s...' is %zu bytes (llama.cpp reads at most %d)", name,
                  strlen(name), GGUF_WRITER_MAX_TENSOR_NAME);
  if (w->out) return w_fail(w, "tensor '%s': tensors must be added before gguf_w_begin", name);
  if (w->n_t >= INT32_MAX) return w_fail(w, "too many tensors");
  for (size_t i = 0; i < w->n_t; i++)
    if (strcmp(w->t[i].name, name) == 0) return w_fail(w, "duplicate tensor name '%s'", name);
  if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
    return w_fail(w, "tensor '%s': n_dims %u (must be 1..%d)", name, n_dims, GGUF_MAX_DIMS);
  const struct ggml_type_info *ti = ggml_type_get(type);
  if (!ti) return w_fail(w, "tensor '%s': unknown type %u", name, type);
  struct w_tensor t = {.n_dims = n_dims, .type = type, .ne = {1, 1, 1, 1}};
  uint64_t n = 1;
  for (uint32_t d = 0; d < n_dims; d++) {
    if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX)
      return w_fail(w, "tensor '%s': ne[%u] %" PRIu64 " out of range", name, d, ne[d]);
    if (n > (uint64_t)INT64_MAX / ne[d])
      return w_fail(w, "tensor '%s': element count overflows", name);
    n *= ne[d];
    t.ne[d] = ne[d];
  }
  uint64_t row;
  if (ggml_row_bytes(type, ne[0], &row) != 0)
    return w_fail(w, "tensor '%s': row length %" PRIu64 " is not a multiple of the %s block size %u",
                  name, ne[0], ti->name, ti->block_size);
  uint64_t rows = n / ne[0];
  if (row && rows > UINT64_MAX / row) return w_fail(w, "tensor '%s': size overflows", name);
  t.size_bytes = row * rows;
  if (t.size_bytes > UINT64_MAX - w->alignment ||
      w->data_bytes > UINT64_MAX - gguf_pad(t.size_bytes, w->alignment))
    return w_fail(w, "tensor '%s': data section size overflows", name);
  if (w->n_t == w->cap_t) {
    size_t ncap = w->cap_t ? w->cap_t * 2 : 16;
    struct w_tensor *p = realloc(w->t, ncap * sizeof *p);
    if (!p) return w_fail(w, "out of memory");
    w->t = p;
    w->cap_t = ncap;
  }
  t.name = strdup(name);
  if (!t.name) return w_fail(w, "out of memory");
  t.offset = w->data_bytes;
  w->data_bytes += gguf_pad(t.size_bytes, w->alignment);
  w->t[w->n_t] = t;
  return (int)w->n_t++;
}

uint64_t gguf_w_tensor_bytes(const struct gguf_writer *w, int index) {
  if (!w || index < 0 || (size_t)index >= w->n_t) return 0;
  return w->t[index].size_bytes;
}

static uint64_t header_bytes(const struct gguf_writer *w) {
  uint64_t n = 24;
  for (size_t i = 0; i < w->n_kv; i++) n += w->kv[i].n_bytes;
  for (size_t i = 0; i < w->n_t; i++) n += 8 + strlen(w->t[i].name) + 4 + 8 * w->t[i].n_dims + 4 + 8;
  return n;
}

uint64_t gguf_w_file_size(const struct gguf_writer *w) {
  if (!w) return 0;
  return gguf_pad(header_bytes(w), w->alignment) + w->data_bytes;
}

/* -------------------------------------------------------------- streaming -- */

static int put(struct gguf_writer *w, const void *p, size_t n, struct tm_err *err) {
  if (n && fwrite(p, 1, n, w->out) != n) {
    w_fail(w, "write failed");
    return tm_errf(err, "gguf writer: write of %zu bytes failed", n);
  }
  return 0;
}

static int put_zeros(struct gguf_writer *w, uint64_t n, struct tm_err *err) {
  static const uint8_t zeros[256];
  while (n) {
    size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
    if (put(w, zeros, k, err)) return -1;
    n -= k;
  }
  return 0;
}

int gguf_w_begin(struct gguf_writer *w, FILE *out, struct tm_err *err) {
  if (!w || !out) return tm_errf(err, "gguf writer: NULL writer or stream");
  if (w->out) return tm_errf(err, "gguf writer: gguf_w_begin called twice");
  w->out = out;
  uint8_t h[24];
  put_le(h, GGUF_MAGIC, 4);
  put_le(h + 4, 3, 4);
  put_le(h + 8, w->n_t, 8);
  put_le(h + 16, w->n_kv, 8);
  if (put(w, h, sizeof h, err)) return -1;
  for (size_t i = 0; i < w->n_kv; i++)
    if (put(w, w->kv[i].bytes, w->kv[i].n_bytes, err)) return -1;
  for (size_t i = 0; i < w->n_t; i++) {
    const struct w_tensor *t = &w->t[i];
    uint8_t b[8];
    size_t len = strlen(t->name);
    put_le(b, len, 8);
    if (put(w, b, 8, err) || put(w, t->name, len, err)) return -1;
    put_le(b, t->n_dims, 4);
    if (put(w, b, 4, err)) return -1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
      put_le(b, t->ne[d], 8);
      if (put(w, b, 8, err)) return -1;
    }
    put_le(b, t->type, 4);
    if (put(w, b, 4, err)) return -1;
    put_le(b, t->offset, 8);
    if (put(w, b, 8, err)) return -1;
  }
  uint64_t hb = header_bytes(w);
  return put_zeros(w, gguf_pad(hb, w->alignment) - hb, err);
}

int gguf_w_data(struct gguf_writer *w, const void *data, size_t len, struct tm_err *err) {
  if (!w || !w->out) return tm_errf(err, "gguf writer: gguf_w_data before gguf_w_begin");
  if (w->cur >= w->n_t)
    return tm_errf(err, "gguf writer: %zu bytes of data after the last tensor", len);
  struct w_tensor *t = &w->t[w->cur];
  if (len > t->size_bytes - w->cur_done)
    return tm_errf(err, "gguf writer: tensor '%s': %zu bytes given, only %" PRIu64 " of its %" PRIu64
                   " bytes remain", t->name, len, t->size_bytes - w->cur_done, t->size_bytes);
  if (put(w, data, len, err)) return -1;
  w->cur_done += len;
  if (w->cur_done == t->size_bytes) {
    if (put_zeros(w, gguf_pad(t->size_bytes, w->alignment) - t->size_bytes, err)) return -1;
    w->cur++;
    w->cur_done = 0;
  }
  return 0;
}

int gguf_w_end(struct gguf_writer *w, struct tm_err *err) {
  if (!w || !w->out) return tm_errf(err, "gguf writer: gguf_w_end before gguf_w_begin");
  if (w->cur < w->n_t)
    return tm_errf(err, "gguf writer: tensor %zu '%s' has %" PRIu64 " of %" PRIu64
                   " bytes written; %zu tensors incomplete", w->cur, w->t[w->cur].name, w->cur_done,
                   w->t[w->cur].size_bytes, w->n_t - w->cur);
  if (fflush(w->out) != 0 || ferror(w->out))
    return tm_errf(err, "gguf writer: write error on flush");
  return 0;
}
