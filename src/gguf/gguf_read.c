/* gguf_read: the GGUF parser (gguf_open / gguf_parse / gguf_close).
 *
 * Contracts (see gguf.h for the layout):
 * - The input is untrusted. Every read is bounds-checked against the buffer size
 *   before it happens; every count is bounded by what the remaining bytes could
 *   hold before anything is sized from it; every product and sum is checked for
 *   overflow. Any failure sets err to one line naming the source, the entry (kv i
 *   'key' / tensor i 'name'), the field, and the byte offset of that field.
 * - Parsing reads only the header (metadata and tensor infos). The data section is
 *   never touched: tensor data pointers are computed, not dereferenced, so opening
 *   a 100 GB file costs the pages of its header only.
 * - Accepted: versions 2 and 3 (v1, with 32-bit counts, is rejected by name),
 *   every value type, arrays of any non-array type including strings. Nested
 *   arrays (never written by llama.cpp) are rejected.
 * - Rejected besides truncation: duplicate keys or tensor names, unknown value or
 *   tensor types, bool values other than 0/1, n_dims outside 1..4, ne 0 or
 *   >= 2^63, element counts or byte sizes that overflow, rows that are not whole
 *   blocks, general.alignment that is not a u32 power of two, tensor offsets not
 *   aligned, tensor data past the end of the file, overlapping tensor data.
 * - A file without tensors may end right after its metadata (vocab files do):
 *   data_offset is still the padded header end, which may then exceed file_size. */
#include "gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf_internal.h"

/* Smallest possible encodings, used to bound counts by the bytes left:
 * kv = key length (8) + a 1-byte key + value type (4) + a 1-byte value;
 * tensor info = name length (8) + 1-byte name + n_dims (4) + one ne (8) +
 * type (4) + offset (8). */
#define KV_MIN_BYTES 14u
#define TENSOR_INFO_MIN_BYTES 33u

/* ------------------------------------------------------------- the cursor -- */

struct rd {
  const uint8_t *buf;
  uint64_t size;
  uint64_t pos;
  const char *src;   /* file name (or "<buffer>") for messages */
  struct tm_err *err;
  char ctx[200];     /* the entry being parsed: "kv 3 'general.name'", or "" */
};

/* Formats "<src>: <ctx>: <what> at byte <at>" into err; returns -1. */
static int rd_fail(struct rd *r, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int rd_fail(struct rd *r, uint64_t at, const char *fmt, ...) {
  char what[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (r->ctx[0])
    return tm_errf(r->err, "%s: %s: %s at byte %" PRIu64, r->src, r->ctx, what, at);
  return tm_errf(r->err, "%s: %s at byte %" PRIu64, r->src, what, at);
}

static int rd_need(struct rd *r, uint64_t n, const char *field) {
  if (r->size - r->pos < n)
    return rd_fail(r, r->pos, "truncated: %s needs %" PRIu64 " bytes, only %" PRIu64 " left",
                   field, n, r->size - r->pos);
  return 0;
}

static int rd_u32(struct rd *r, const char *field, uint32_t *out) {
  if (rd_need(r, 4, field)) return -1;
  *out = (uint32_t)gguf_load_le(r->buf + r->pos, 4);
  r->pos += 4;
  return 0;
}

static int rd_u64(struct rd *r, const char *field, uint64_t *out) {
  if (rd_need(r, 8, field)) return -1;
  *out = gguf_load_le(r->buf + r->pos, 8);
  r->pos += 8;
  return 0;
}

/* A length-prefixed string, pointing into the buffer. */
static int rd_str(struct rd *r, const char *field, struct gguf_str *out) {
  uint64_t at = r->pos, len;
  char lf[64];
  snprintf(lf, sizeof lf, "%s length", field);
  if (rd_u64(r, lf, &len)) return -1;
  if (len > r->size - r->pos)
    return rd_fail(r, at, "%s length %" PRIu64 " runs past the end of the file (%" PRIu64
                   " bytes left)", field, len, r->size - r->pos);
  out->ptr = (const char *)r->buf + r->pos;
  out->len = len;
  r->pos += len;
  return 0;
}

/* A key or tensor name: 1..GGUF_MAX_NAME_LEN bytes, no NUL; returns a malloc'd
 * NUL-terminated copy in *out. */
static int rd_name(struct rd *r, const char *field, char **out) {
  uint64_t at = r->pos;
  struct gguf_str s = {NULL, 0};
  if (rd_u64(r, field, &s.len)) return -1;
  r->pos = at;
  if (s.len == 0) return rd_fail(r, at, "%s length 0", field);
  if (s.len > GGUF_MAX_NAME_LEN)
    return rd_fail(r, at, "%s length %" PRIu64 " > %d", field, s.len, GGUF_MAX_NAME_LEN);
  if (rd_str(r, field, &s)) return -1;
  if (memchr(s.ptr, 0, s.len)) return rd_fail(r, at, "%s contains a NUL byte", field);
  char *p = malloc(s.len + 1);
  if (!p) return rd_fail(r, at, "out of memory copying the %s", field);
  memcpy(p, s.ptr, s.len);
  p[s.len] = 0;
  *out = p;
  return 0;
}

/* A name made printable and short, for error context. */
static void printable(char *dst, size_t n, const char *src) {
  size_t j = 0;
  for (size_t i = 0; src[i] && j + 4 < n; i++) {
    unsigned char c = (unsigned char)src[i];
    dst[j++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    if (i == 60 && src[i + 1]) {
      memcpy(dst + j, "...", 3);
      j += 3;
      break;
    }
  }
  dst[j] = 0;
}

/* Grows *arr (elements of `elem` bytes) so that index `need` fits. */
static int grow(void **arr, uint64_t *cap, uint64_t need, size_t elem) {
  if (need < *cap) return 0;
  uint64_t ncap = *cap ? *cap * 2 : 16;
  while (ncap <= need) ncap *= 2;
  if (ncap > SIZE_MAX / elem) return -1;
  void *p = realloc(*arr, (size_t)(ncap * elem));
  if (!p) return -1;
  memset((char *)p + *cap * elem, 0, (size_t)((ncap - *cap) * elem));
  *arr = p;
  *cap = ncap;
  return 0;
}

/* ------------------------------------------------------------------ values -- */

static int parse_scalar(struct rd *r, uint32_t type, struct gguf_kv *kv) {
  uint32_t sz = gguf_value_type_size(type);
  uint64_t at = r->pos;
  if (rd_need(r, sz, "value")) return -1;
  uint64_t raw = gguf_load_le(r->buf + r->pos, sz);
  r->pos += sz;
  switch (type) {
  case GGUF_VT_UINT8: case GGUF_VT_UINT16: case GGUF_VT_UINT32: case GGUF_VT_UINT64:
    kv->v.u64 = raw;
    break;
  case GGUF_VT_INT8: kv->v.i64 = (int8_t)raw; break;
  case GGUF_VT_INT16: kv->v.i64 = (int16_t)raw; break;
  case GGUF_VT_INT32: kv->v.i64 = (int32_t)raw; break;
  case GGUF_VT_INT64: kv->v.i64 = (int64_t)raw; break;
  case GGUF_VT_BOOL:
    if (raw > 1) return rd_fail(r, at, "bool value %" PRIu64 " (must be 0 or 1)", raw);
    kv->v.u64 = raw;
    break;
  case GGUF_VT_FLOAT32: {
    uint32_t bits = (uint32_t)raw;
    float x;
    memcpy(&x, &bits, 4);
    kv->v.f64 = x;
    break;
  }
  case GGUF_VT_FLOAT64: memcpy(&kv->v.f64, &raw, 8); break;
  default: return rd_fail(r, at, "internal: %u is not a scalar type", type);
  }
  return 0;
}

static int parse_array(struct rd *r, struct gguf_kv *kv) {
  uint64_t at = r->pos, count;
  uint32_t et;
  if (rd_u32(r, "array element type", &et)) return -1;
  if (et == GGUF_VT_ARRAY) return rd_fail(r, at, "nested arrays are not supported (array element type ARRAY)");
  if (et >= GGUF_VT_COUNT) return rd_fail(r, at, "unknown array element type %u", et);
  uint64_t count_at = r->pos;
  if (rd_u64(r, "array count", &count)) return -1;
  uint64_t left = r->size - r->pos, start = r->pos;
  if (et == GGUF_VT_STRING) {
    /* each string is at least its 8-byte length */
    if (count > left / 8)
      return rd_fail(r, count_at, "array count %" PRIu64 " of strings cannot fit in the %" PRIu64
                     " bytes left", count, left);
    for (uint64_t i = 0; i < count; i++) {
      uint64_t sat = r->pos, len;
      if (r->size - r->pos < 8)
        return rd_fail(r, sat, "truncated: array element %" PRIu64 " string length needs 8 bytes, "
                       "only %" PRIu64 " left", i, r->size - r->pos);
      len = gguf_load_le(r->buf + r->pos, 8);
      r->pos += 8;
      if (len > r->size - r->pos)
        return rd_fail(r, sat, "array element %" PRIu64 ": string length %" PRIu64 " runs past the "
                       "end of the file (%" PRIu64 " bytes left)", i, len, r->size - r->pos);
      r->pos += len;
    }
  } else {
    uint32_t esz = gguf_value_type_size(et);
    if (count > left / esz)
      return rd_fail(r, count_at, "array count %" PRIu64 " of %s (%u bytes each) cannot fit in the %"
                     PRIu64 " bytes left", count, gguf_value_type_name(et), esz, left);
    if (et == GGUF_VT_BOOL)
      for (uint64_t i = 0; i < count; i++)
        if (r->buf[r->pos + i] > 1)
          return rd_fail(r, r->pos + i, "array element %" PRIu64 ": bool value %u (must be 0 or 1)",
                         i, r->buf[r->pos + i]);
    r->pos += count * esz;
  }
  kv->v.arr.elem_type = (enum gguf_value_type)et;
  kv->v.arr.count = count;
  kv->v.arr.data = r->buf + start;
  kv->v.arr.data_bytes = r->pos - start;
  return 0;
}

static int parse_kv(struct rd *r, struct gguf_file_full *ff, uint64_t i) {
  struct gguf_file *f = &ff->pub;
  struct gguf_kv *kv = &f->kv[i];
  char shown[80];
  snprintf(r->ctx, sizeof r->ctx, "kv %" PRIu64, i);
  kv->file_offset = r->pos;
  if (rd_name(r, "key", &kv->key)) return -1;
  f->n_kv = i + 1; /* the key is owned now: gguf_close frees it */
  printable(shown, sizeof shown, kv->key);
  snprintf(r->ctx, sizeof r->ctx, "kv %" PRIu64 " '%s'", i, shown);
  uint64_t prev;
  int rc = gguf_name_index_put(&ff->kv_index, kv->key, i, &prev);
  if (rc < 0) return rd_fail(r, kv->file_offset, "out of memory indexing keys");
  if (rc > 0)
    return rd_fail(r, kv->file_offset, "duplicate key (first defined by kv %" PRIu64 " at byte %"
                   PRIu64 ")", prev, f->kv[prev].file_offset);
  uint64_t type_at = r->pos;
  uint32_t type;
  if (rd_u32(r, "value type", &type)) return -1;
  if (type >= GGUF_VT_COUNT) return rd_fail(r, type_at, "unknown value type %u", type);
  kv->type = (enum gguf_value_type)type;
  uint64_t value_at = r->pos;
  if (type == GGUF_VT_STRING) {
    if (rd_str(r, "string value", &kv->v.str)) return -1;
  } else if (type == GGUF_VT_ARRAY) {
    if (parse_array(r, kv)) return -1;
  } else if (parse_scalar(r, type, kv)) {
    return -1;
  }
  if (strcmp(kv->key, "general.alignment") == 0) {
    if (type != GGUF_VT_UINT32)
      return rd_fail(r, type_at, "general.alignment has type %s, must be uint32",
                     gguf_value_type_name(type));
    if (!gguf_is_pow2(kv->v.u64))
      return rd_fail(r, value_at, "general.alignment %" PRIu64 " is not a non-zero power of two",
                     kv->v.u64);
    f->alignment = (uint32_t)kv->v.u64;
  }
  return 0;
}

/* ----------------------------------------------------------------- tensors -- */

static int parse_tensor_info(struct rd *r, struct gguf_file_full *ff, uint64_t i) {
  struct gguf_file *f = &ff->pub;
  struct gguf_tensor *t = &f->tensors[i];
  char shown[80];
  uint64_t info_at = r->pos;
  snprintf(r->ctx, sizeof r->ctx, "tensor %" PRIu64, i);
  if (rd_name(r, "name", &t->name)) return -1;
  f->n_tensors = i + 1;
  printable(shown, sizeof shown, t->name);
  snprintf(r->ctx, sizeof r->ctx, "tensor %" PRIu64 " '%s'", i, shown);
  uint64_t prev;
  int rc = gguf_name_index_put(&ff->tensor_index, t->name, i, &prev);
  if (rc < 0) return rd_fail(r, info_at, "out of memory indexing tensor names");
  if (rc > 0) return rd_fail(r, info_at, "duplicate tensor name (first is tensor %" PRIu64 ")", prev);

  uint64_t at = r->pos;
  if (rd_u32(r, "n_dims", &t->n_dims)) return -1;
  if (t->n_dims == 0) return rd_fail(r, at, "n_dims 0 (must be 1..%d)", GGUF_MAX_DIMS);
  if (t->n_dims > GGUF_MAX_DIMS) return rd_fail(r, at, "n_dims %u > %d", t->n_dims, GGUF_MAX_DIMS);
  uint64_t n = 1;
  for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
  for (uint32_t d = 0; d < t->n_dims; d++) {
    at = r->pos;
    if (rd_u64(r, "ne", &t->ne[d])) return -1;
    if (t->ne[d] == 0) return rd_fail(r, at, "ne[%u] is 0", d);
    if (t->ne[d] > (uint64_t)INT64_MAX)
      return rd_fail(r, at, "ne[%u] %" PRIu64 " is negative as int64", d, t->ne[d]);
    if (n > (uint64_t)INT64_MAX / t->ne[d])
      return rd_fail(r, at, "element count overflows at ne[%u] %" PRIu64, d, t->ne[d]);
    n *= t->ne[d];
  }
  t->n_elements = n;

  at = r->pos;
  if (rd_u32(r, "type", &t->type)) return -1;
  const struct ggml_type_info *ti = ggml_type_get(t->type);
  if (!ti) return rd_fail(r, at, "unknown tensor type %u", t->type);
  if (ti->block_size == 0 || t->ne[0] % ti->block_size != 0)
    return rd_fail(r, at, "row length ne[0] %" PRIu64 " is not a multiple of the %s block size %u",
                   t->ne[0], ti->name, ti->block_size);
  uint64_t row_bytes;
  if (ggml_row_bytes(t->type, t->ne[0], &row_bytes) != 0)
    return rd_fail(r, at, "row size of %" PRIu64 " %s elements overflows", t->ne[0], ti->name);
  uint64_t rows = n / t->ne[0];
  if (row_bytes != 0 && rows > UINT64_MAX / row_bytes)
    return rd_fail(r, at, "data size (%" PRIu64 " rows of %" PRIu64 " bytes) overflows", rows,
                   row_bytes);
  t->size_bytes = row_bytes * rows;

  at = r->pos;
  if (rd_u64(r, "offset", &t->offset)) return -1;
  if (t->offset % f->alignment != 0)
    return rd_fail(r, at, "offset %" PRIu64 " is not a multiple of the alignment %u", t->offset,
                   f->alignment);
  return 0;
}

struct span {
  uint64_t offset, size, idx;
};

static int span_cmp(const void *a, const void *b) {
  const struct span *x = a, *y = b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* Data ranges: inside the file, and disjoint. info_at[i] is the byte offset of
 * tensor i's info, for messages. */
static int check_data(struct rd *r, struct gguf_file *f, const uint64_t *info_at) {
  uint64_t avail = f->file_size > f->data_offset ? f->file_size - f->data_offset : 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    struct gguf_tensor *t = &f->tensors[i];
    if (t->offset > avail || t->size_bytes > avail - t->offset) {
      char shown[80];
      printable(shown, sizeof shown, t->name);
      snprintf(r->ctx, sizeof r->ctx, "tensor %" PRIu64 " '%s'", i, shown);
      return rd_fail(r, info_at[i], "data [offset %" PRIu64 ", %" PRIu64 " bytes] runs past the end "
                     "of the file (%" PRIu64 " bytes, data section at %" PRIu64 ")", t->offset,
                     t->size_bytes, f->file_size, f->data_offset);
    }
    t->data = f->base + f->data_offset + t->offset;
  }
  if (f->n_tensors < 2) return 0;
  struct span *s = malloc(f->n_tensors * sizeof *s);
  if (!s) return tm_errf(r->err, "%s: out of memory checking tensor overlap", r->src);
  for (uint64_t i = 0; i < f->n_tensors; i++)
    s[i] = (struct span){f->tensors[i].offset, f->tensors[i].size_bytes, i};
  qsort(s, f->n_tensors, sizeof *s, span_cmp);
  for (uint64_t k = 1; k < f->n_tensors; k++) {
    if (s[k - 1].offset + s[k - 1].size > s[k].offset) {
      const struct gguf_tensor *a = &f->tensors[s[k - 1].idx], *b = &f->tensors[s[k].idx];
      char sa[80], sb[80];
      printable(sa, sizeof sa, a->name);
      printable(sb, sizeof sb, b->name);
      snprintf(r->ctx, sizeof r->ctx, "tensor %" PRIu64 " '%s'", s[k].idx, sb);
      int rc = rd_fail(r, info_at[s[k].idx], "data [offset %" PRIu64 ", %" PRIu64 " bytes] overlaps "
                       "tensor %" PRIu64 " '%s' [offset %" PRIu64 ", %" PRIu64 " bytes]", b->offset,
                       b->size_bytes, s[k - 1].idx, sa, a->offset, a->size_bytes);
      free(s);
      return rc;
    }
  }
  free(s);
  return 0;
}

/* ------------------------------------------------------------------ header -- */

static int parse_all(struct rd *r, struct gguf_file_full *ff) {
  struct gguf_file *f = &ff->pub;
  uint32_t magic;
  uint64_t n_tensors, n_kv;
  if (r->size == 0) return tm_errf(r->err, "%s: file is empty (0 bytes), not a GGUF file", r->src);
  if (rd_u32(r, "magic", &magic)) return -1;
  if (magic != GGUF_MAGIC)
    return rd_fail(r, 0, "bad magic 0x%08x (expected \"GGUF\"): not a GGUF file", magic);
  if (rd_u32(r, "version", &f->version)) return -1;
  if (f->version == 1)
    return rd_fail(r, 4, "version 1 is not supported (only GGUF versions 2 and 3; re-convert the model)");
  if (f->version != 2 && f->version != 3)
    return rd_fail(r, 4, "version %u is not supported (only GGUF versions 2 and 3)", f->version);
  if (rd_u64(r, "n_tensors", &n_tensors) || rd_u64(r, "n_kv", &n_kv)) return -1;
  uint64_t left = r->size - r->pos;
  if (n_kv > left / KV_MIN_BYTES)
    return rd_fail(r, 16, "n_kv %" PRIu64 " is impossible: the %" PRIu64 " bytes left hold at most %"
                   PRIu64 " key/value pairs", n_kv, left, left / KV_MIN_BYTES);
  if (n_tensors > (left - n_kv * KV_MIN_BYTES) / TENSOR_INFO_MIN_BYTES)
    return rd_fail(r, 8, "n_tensors %" PRIu64 " is impossible: the %" PRIu64 " bytes left after %"
                   PRIu64 " key/value pairs hold at most %" PRIu64 " tensor infos", n_tensors, left,
                   n_kv, (left - n_kv * KV_MIN_BYTES) / TENSOR_INFO_MIN_BYTES);

  /* Arrays grow as entries parse, so a lying count costs memory in proportion
   * to the bytes actually parsed, not to the count. */
  uint64_t cap = 0;
  for (uint64_t i = 0; i < n_kv; i++) {
    if (grow((void **)&f->kv, &cap, i, sizeof *f->kv))
      return rd_fail(r, r->pos, "out of memory at kv %" PRIu64, i);
    if (parse_kv(r, ff, i)) return -1;
  }
  f->n_kv = n_kv;
  r->ctx[0] = 0;

  cap = 0;
  uint64_t at_cap = 0, *info_at = NULL;
  int rc = 0;
  for (uint64_t i = 0; i < n_tensors && rc == 0; i++) {
    if (grow((void **)&f->tensors, &cap, i, sizeof *f->tensors) ||
        grow((void **)&info_at, &at_cap, i, sizeof *info_at)) {
      rc = rd_fail(r, r->pos, "out of memory at tensor %" PRIu64, i);
      break;
    }
    info_at[i] = r->pos;
    rc = parse_tensor_info(r, ff, i);
  }
  if (rc == 0) {
    f->n_tensors = n_tensors;
    r->ctx[0] = 0;
    f->data_offset = gguf_pad(r->pos, f->alignment); /* pos <= size: cannot overflow */
    rc = check_data(r, f, info_at);
  }
  free(info_at);
  return rc;
}

static struct gguf_file *parse_common(const void *buf, uint64_t size, const char *src, bool mapped,
                                      struct tm_err *err) {
  struct gguf_file_full *ff = calloc(1, sizeof *ff);
  if (!ff) {
    tm_errf(err, "%s: out of memory", src);
    if (mapped) munmap((void *)buf, size);
    return NULL;
  }
  struct gguf_file *f = &ff->pub;
  f->base = buf;
  f->file_size = size;
  f->mapped = mapped;
  f->alignment = GGUF_DEFAULT_ALIGNMENT;
  snprintf(f->path, sizeof f->path, "%s", src);
  struct rd r = {.buf = buf, .size = size, .src = src, .err = err};
  if (parse_all(&r, ff) != 0) {
    gguf_close(f);
    return NULL;
  }
  return f;
}

struct gguf_file *gguf_parse(const void *buf, size_t size, struct tm_err *err) {
  if (!buf && size) {
    tm_errf(err, "<buffer>: NULL buffer");
    return NULL;
  }
  return parse_common(buf ? buf : "", size, "<buffer>", false, err);
}

/* Maps the file at a 2 MiB-aligned address (a reservation, then MAP_FIXED
 * inside it, the slack returned): the file's bytes then line up with huge
 * page boundaries, which the engine's --hugepages copy needs. Falls back to a
 * plain mapping. MAP_FAILED on failure (errno set). */
static void *map_aligned(int fd, size_t size) {
  const size_t align = (size_t)2 << 20;
  if (size > SIZE_MAX - align) return mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  uint8_t *res = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  uint8_t *start = (uint8_t *)(((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1));
  void *base = mmap(start, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (base == MAP_FAILED) {
    int e = errno;
    munmap(res, size + align);
    errno = e;
    return MAP_FAILED;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t end_used = ((size_t)(start - res) + size + page - 1) / page * page;
  if (start > res) munmap(res, (size_t)(start - res));
  if (end_used < size + align) munmap(res + end_used, size + align - end_used);
  return base;
}

struct gguf_file *gguf_open(const char *path, struct tm_err *err) {
  /* O_NONBLOCK: opening a FIFO for reading blocks until a writer comes, so
   * without it `ceiling FIFO` would hang before fstat could refuse it. It does
   * not change how a regular file is read or mapped. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    tm_errf(err, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    tm_errf(err, "%s: not a regular file", path);
    close(fd);
    return NULL;
  }
  if (st.st_size == 0) {
    close(fd);
    tm_errf(err, "%s: file is empty (0 bytes), not a GGUF file", path);
    return NULL;
  }
  if ((uint64_t)st.st_size > SIZE_MAX) {
    close(fd);
    tm_errf(err, "%s: file too large to map (%lld bytes)", path, (long long)st.st_size);
    return NULL;
  }
  size_t size = (size_t)st.st_size;
  void *base = map_aligned(fd, size);
  int map_errno = errno;
  close(fd); /* the mapping keeps the file alive */
  if (base == MAP_FAILED) {
    tm_errf(err, "%s: mmap of %zu bytes failed: %s", path, size, strerror(map_errno));
    return NULL;
  }
  /* No readahead while parsing: a fault on a header page must not pull in the
   * data section behind it. Normal readahead is restored for the data users. */
  madvise(base, size, MADV_RANDOM);
  struct gguf_file *f = parse_common(base, size, path, true, err);
  if (f) madvise(base, size, MADV_NORMAL);
  return f;
}

void gguf_close(struct gguf_file *f) {
  if (!f) return;
  struct gguf_file_full *ff = (struct gguf_file_full *)f;
  for (uint64_t i = 0; i < f->n_kv; i++) free(f->kv[i].key);
  for (uint64_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
  free(f->kv);
  free(f->tensors);
  gguf_name_index_free(&ff->kv_index);
  gguf_name_index_free(&ff->tensor_index);
  if (f->mapped) munmap((void *)f->base, f->file_size);
  free(ff);
}
