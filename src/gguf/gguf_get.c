/* gguf_get: lookups on a parsed GGUF file: the name index (hash), gguf_find_kv /
 * gguf_find_tensor, the typed getters, and the value-type table.
 *
 * Contracts: lookups are O(1) on average (vocab files have ~30 keys, models a few
 * hundred tensors, MoE models thousands). Getters convert only when the value is
 * represented exactly (a negative int is not a u64; a bool is not an integer) and
 * say why when they refuse. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_internal.h"

/* ------------------------------------------------------------ value types -- */

static const struct {
  const char *name;
  uint32_t size;
} vt_table[GGUF_VT_COUNT] = {
    [GGUF_VT_UINT8] = {"uint8", 1},     [GGUF_VT_INT8] = {"int8", 1},
    [GGUF_VT_UINT16] = {"uint16", 2},   [GGUF_VT_INT16] = {"int16", 2},
    [GGUF_VT_UINT32] = {"uint32", 4},   [GGUF_VT_INT32] = {"int32", 4},
    [GGUF_VT_FLOAT32] = {"float32", 4}, [GGUF_VT_BOOL] = {"bool", 1},
    [GGUF_VT_STRING] = {"string", 0},   [GGUF_VT_ARRAY] = {"array", 0},
    [GGUF_VT_UINT64] = {"uint64", 8},   [GGUF_VT_INT64] = {"int64", 8},
    [GGUF_VT_FLOAT64] = {"float64", 8},
};

const char *gguf_value_type_name(enum gguf_value_type t) {
  return (unsigned)t < GGUF_VT_COUNT ? vt_table[t].name : "unknown";
}

uint32_t gguf_value_type_size(uint32_t t) { return t < GGUF_VT_COUNT ? vt_table[t].size : 0; }

/* ------------------------------------------------------------- name index -- */

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int index_rehash(struct gguf_name_index *ni, uint64_t ncap) {
  struct gguf_name_slot *ns = calloc(ncap, sizeof *ns);
  if (!ns) return -1;
  for (uint64_t i = 0; i < ni->cap; i++) {
    if (!ni->slots[i].name) continue;
    uint64_t j = hash_name(ni->slots[i].name) & (ncap - 1);
    while (ns[j].name) j = (j + 1) & (ncap - 1);
    ns[j] = ni->slots[i];
  }
  free(ni->slots);
  ni->slots = ns;
  ni->cap = ncap;
  return 0;
}

int gguf_name_index_put(struct gguf_name_index *ni, const char *name, uint64_t idx,
                        uint64_t *prev) {
  if ((ni->n + 1) * 2 > ni->cap) { /* keep the load factor <= 1/2 */
    if (ni->cap > (UINT64_MAX / 2) / sizeof(struct gguf_name_slot)) return -1;
    if (index_rehash(ni, ni->cap ? ni->cap * 2 : 32)) return -1;
  }
  uint64_t j = hash_name(name) & (ni->cap - 1);
  for (; ni->slots[j].name; j = (j + 1) & (ni->cap - 1)) {
    if (strcmp(ni->slots[j].name, name) == 0) {
      if (prev) *prev = ni->slots[j].idx;
      return 1;
    }
  }
  ni->slots[j].name = name;
  ni->slots[j].idx = idx;
  ni->n++;
  return 0;
}

int64_t gguf_name_index_get(const struct gguf_name_index *ni, const char *name) {
  if (!ni->cap || !name) return -1;
  for (uint64_t j = hash_name(name) & (ni->cap - 1); ni->slots[j].name; j = (j + 1) & (ni->cap - 1))
    if (strcmp(ni->slots[j].name, name) == 0) return (int64_t)ni->slots[j].idx;
  return -1;
}

void gguf_name_index_free(struct gguf_name_index *ni) {
  free(ni->slots);
  ni->slots = NULL;
  ni->cap = ni->n = 0;
}

/* ---------------------------------------------------------------- lookups -- */

const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key) {
  if (!f) return NULL;
  int64_t i = gguf_name_index_get(&((const struct gguf_file_full *)f)->kv_index, key);
  return i < 0 ? NULL : &f->kv[i];
}

const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name) {
  if (!f) return NULL;
  int64_t i = gguf_name_index_get(&((const struct gguf_file_full *)f)->tensor_index, name);
  return i < 0 ? NULL : &f->tensors[i];
}

static const struct gguf_kv *need_kv(const struct gguf_file *f, const char *key,
                                     struct tm_err *err) {
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (!kv) tm_errf(err, "%s: key '%s' not found", f ? f->path : "(null)", key ? key : "(null)");
  return kv;
}

static int wrong_type(const struct gguf_file *f, const struct gguf_kv *kv, const char *want,
                      struct tm_err *err) {
  return tm_errf(err, "%s: key '%s' has type %s, expected %s (at byte %" PRIu64 ")", f->path,
                 kv->key, gguf_value_type_name(kv->type), want, kv->file_offset);
}

int gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t *out, struct tm_err *err) {
  const struct gguf_kv *kv = need_kv(f, key, err);
  if (!kv) return -1;
  if (!gguf_is_integer_type(kv->type)) return wrong_type(f, kv, "an integer", err);
  if (gguf_is_signed_type(kv->type) && kv->v.i64 < 0)
    return tm_errf(err, "%s: key '%s' is negative (%" PRId64 "), expected an unsigned value",
                   f->path, key, kv->v.i64);
  *out = kv->v.u64; /* same bits for a non-negative i64 */
  return 0;
}

int gguf_get_f64(const struct gguf_file *f, const char *key, double *out, struct tm_err *err) {
  const struct gguf_kv *kv = need_kv(f, key, err);
  if (!kv) return -1;
  if (kv->type == GGUF_VT_FLOAT32 || kv->type == GGUF_VT_FLOAT64)
    *out = kv->v.f64;
  else if (gguf_is_signed_type(kv->type))
    *out = (double)kv->v.i64;
  else if (gguf_is_integer_type(kv->type))
    *out = (double)kv->v.u64;
  else
    return wrong_type(f, kv, "a number", err);
  return 0;
}

int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out, struct tm_err *err) {
  const struct gguf_kv *kv = need_kv(f, key, err);
  if (!kv) return -1;
  if (kv->type != GGUF_VT_BOOL) return wrong_type(f, kv, "bool", err);
  *out = kv->v.u64 != 0;
  return 0;
}

int gguf_get_str(const struct gguf_file *f, const char *key, char *buf, size_t n,
                 struct tm_err *err) {
  const struct gguf_kv *kv = need_kv(f, key, err);
  if (!kv) return -1;
  if (kv->type != GGUF_VT_STRING) return wrong_type(f, kv, "string", err);
  if (n == 0) return tm_errf(err, "%s: key '%s': no room in a 0-byte buffer", f->path, key);
  if (memchr(kv->v.str.ptr, 0, kv->v.str.len))
    return tm_errf(err, "%s: key '%s' contains a NUL byte (at byte %" PRIu64 ")", f->path, key,
                   kv->file_offset);
  size_t len = kv->v.str.len < n - 1 ? (size_t)kv->v.str.len : n - 1;
  memcpy(buf, kv->v.str.ptr, len);
  buf[len] = 0;
  return 0;
}

int gguf_arr_get_u64(const struct gguf_kv *kv, uint64_t i, uint64_t *out) {
  if (!kv || kv->type != GGUF_VT_ARRAY || !gguf_is_integer_type(kv->v.arr.elem_type)) return -1;
  if (i >= kv->v.arr.count) return -1;
  uint32_t sz = gguf_value_type_size(kv->v.arr.elem_type);
  uint64_t raw = gguf_load_le(kv->v.arr.data + i * sz, sz);
  if (gguf_is_signed_type(kv->v.arr.elem_type)) {
    unsigned shift = 64 - 8 * sz; /* sign-extend from sz bytes */
    int64_t v = (int64_t)(raw << shift) >> shift;
    if (v < 0) return -1;
    raw = (uint64_t)v;
  }
  *out = raw;
  return 0;
}

/* The reader validated every length inside the array, so these walks only stop
 * at data_bytes; the bounds checks guard against a hand-made struct gguf_kv. */
int gguf_arr_next_str(const struct gguf_kv *kv, uint64_t *pos, struct gguf_str *out) {
  if (!kv || kv->type != GGUF_VT_ARRAY || kv->v.arr.elem_type != GGUF_VT_STRING || !pos) return -1;
  uint64_t p = *pos, end = kv->v.arr.data_bytes;
  if (p > end || end - p < 8) return -1;
  uint64_t len = gguf_load_le(kv->v.arr.data + p, 8);
  if (len > end - p - 8) return -1;
  out->ptr = (const char *)kv->v.arr.data + p + 8;
  out->len = len;
  *pos = p + 8 + len;
  return 0;
}

int gguf_arr_get_str(const struct gguf_kv *kv, uint64_t i, struct gguf_str *out) {
  if (!kv || kv->type != GGUF_VT_ARRAY || i >= kv->v.arr.count) return -1;
  uint64_t pos = 0;
  for (uint64_t k = 0; k <= i; k++)
    if (gguf_arr_next_str(kv, &pos, out)) return -1;
  return 0;
}
