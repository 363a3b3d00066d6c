/* gguf: reading and writing GGUF files (versions 2 and 3).
 *
 * Layout (all little-endian):
 *   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv        (v1 used u32s)
 *   n_kv x { string key | u32 value_type | value }
 *       string = u64 length + bytes (no NUL); array = u32 elem_type + u64 count + elems
 *   n_tensors x { string name | u32 n_dims | n_dims x u64 ne | u32 ggml_type | u64 offset }
 *   padding to general.alignment (default 32)
 *   tensor data; each tensor at data_offset + offset, offsets aligned
 *
 * The reader treats the file as untrusted: every count and size is checked for
 * overflow and against the file size before use, and every failure names the
 * field and its byte offset. The file is memory-mapped read-only; parsing touches
 * only the header pages, never the data section; tensor data is handed out as
 * pointers into the map, never copied. */
#ifndef TM_GGUF_H
#define TM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

#define GGUF_MAGIC 0x46554747u /* "GGUF" little-endian */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

enum gguf_value_type {
  GGUF_VT_UINT8 = 0,
  GGUF_VT_INT8 = 1,
  GGUF_VT_UINT16 = 2,
  GGUF_VT_INT16 = 3,
  GGUF_VT_UINT32 = 4,
  GGUF_VT_INT32 = 5,
  GGUF_VT_FLOAT32 = 6,
  GGUF_VT_BOOL = 7,
  GGUF_VT_STRING = 8,
  GGUF_VT_ARRAY = 9,
  GGUF_VT_UINT64 = 10,
  GGUF_VT_INT64 = 11,
  GGUF_VT_FLOAT64 = 12,
  GGUF_VT_COUNT = 13,
};

const char *gguf_value_type_name(enum gguf_value_type t);

/* A string inside the mapped file: not NUL-terminated. */
struct gguf_str {
  const char *ptr;
  uint64_t len;
};

struct gguf_kv {
  char *key;                 /* owned, NUL-terminated copy */
  enum gguf_value_type type;
  uint64_t file_offset;      /* byte offset of the key's length field */
  union {
    uint64_t u64;            /* UINT8/16/32/64 and BOOL (0/1) */
    int64_t i64;             /* INT8/16/32/64 */
    double f64;              /* FLOAT32/FLOAT64 */
    struct gguf_str str;     /* STRING */
    struct {
      enum gguf_value_type elem_type;
      uint64_t count;
      const uint8_t *data;   /* first element, inside the map */
      uint64_t data_bytes;   /* total bytes of the elements (strings: with lengths) */
    } arr;                   /* ARRAY (nested arrays are rejected) */
  } v;
};

struct gguf_tensor {
  char *name;                /* owned, NUL-terminated copy */
  uint32_t n_dims;
  uint64_t ne[GGUF_MAX_DIMS];/* ne[0] = row length; unused dims are 1 */
  uint32_t type;             /* enum ggml_type */
  uint64_t offset;           /* relative to the data section */
  uint64_t size_bytes;       /* from the type table */
  uint64_t n_elements;
  const void *data;          /* inside the map or the caller's buffer; never read by the parser */
};

struct gguf_file {
  uint32_t version;
  uint64_t n_kv;
  struct gguf_kv *kv;
  uint64_t n_tensors;
  struct gguf_tensor *tensors;
  uint32_t alignment;
  uint64_t data_offset;      /* absolute file offset of the data section (the padded header
                                end; may exceed file_size in a file without tensors) */
  uint64_t file_size;
  const uint8_t *base;       /* the mapped file (or the caller's buffer) */
  bool mapped;
  char path[1024];
};

/* Opens and parses a file (mmap, read-only). Anything but a regular file (a FIFO,
 * a device, a directory) is refused at once, "not a regular file", without
 * blocking. Keys and tensor names are limited
 * to 1024 bytes; nested arrays are rejected. On failure returns NULL with err set, e.g.
 * "model.gguf: tensor 12 'blk.0.ffn_up.weight': data [offset 4096, 8 MiB] runs
 * past the end of the file (6 MiB) at byte 2311". */
struct gguf_file *gguf_open(const char *path, struct tm_err *err);
/* Parses a buffer that holds a whole file (tests, fuzzing). The buffer must
 * outlive the result. */
struct gguf_file *gguf_parse(const void *buf, size_t size, struct tm_err *err);
void gguf_close(struct gguf_file *f);

const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key);
const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/* Typed getters: return 0 and set *out when the key exists with a compatible type
 * (any integer type for get_u64/i64 when the value fits; any float or integer for
 * get_f64), -1 otherwise (err says missing or wrong type). */
int gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t *out, struct tm_err *err);
int gguf_get_f64(const struct gguf_file *f, const char *key, double *out, struct tm_err *err);
int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out, struct tm_err *err);
/* Copies a STRING value into buf (NUL-terminated, truncated to n-1). A value
 * with a NUL byte inside is refused: as a C string it would read as another,
 * shorter value. */
int gguf_get_str(const struct gguf_file *f, const char *key, char *buf, size_t n,
                 struct tm_err *err);
/* Element i of an integer array as u64 (per-layer arrays like head_count_kv).
 * -1 when kv is not an integer array, i is out of range, or the value is negative. */
int gguf_arr_get_u64(const struct gguf_kv *kv, uint64_t i, uint64_t *out);
/* Walks a STRING array: *pos starts at 0 (a byte position inside the array, not
 * an index); each call sets *out to the next element (pointing into the map) and
 * returns 0, or -1 at the end or when kv is not a string array. O(1) per call. */
int gguf_arr_next_str(const struct gguf_kv *kv, uint64_t *pos, struct gguf_str *out);
/* Element i of a STRING array (walks from the start: O(i); use gguf_arr_next_str
 * to visit a whole vocabulary). -1 when out of range or not a string array. */
int gguf_arr_get_str(const struct gguf_kv *kv, uint64_t i, struct gguf_str *out);

/* ------------------------------------------------------------------ writer --
 * Streaming writer: add metadata and tensor infos, then write the header, then
 * each tensor's bytes in the order added. Nothing of the tensor data is held in
 * memory. Keys and tensor names must be unique (checked). */
struct gguf_writer;

/* alignment: a power of two, or 0 for the default 32. NULL on a bad alignment or
 * out of memory. */
struct gguf_writer *gguf_writer_new(uint32_t alignment);
void gguf_writer_free(struct gguf_writer *w);
/* The reason the last gguf_w_* call returned -1 (duplicate key, bad shape...). */
const char *gguf_writer_error(const struct gguf_writer *w);

int gguf_w_u32(struct gguf_writer *w, const char *key, uint32_t v);
int gguf_w_i32(struct gguf_writer *w, const char *key, int32_t v);
int gguf_w_u64(struct gguf_writer *w, const char *key, uint64_t v);
int gguf_w_f32(struct gguf_writer *w, const char *key, float v);
int gguf_w_bool(struct gguf_writer *w, const char *key, bool v);
int gguf_w_str(struct gguf_writer *w, const char *key, const char *v);
/* An array of fixed-size elements (not STRING/ARRAY): count elements at data. */
int gguf_w_arr(struct gguf_writer *w, const char *key, enum gguf_value_type elem_type,
               const void *data, uint64_t count);
int gguf_w_arr_str(struct gguf_writer *w, const char *key, const char *const *v,
                   uint64_t count);
/* Copies a key/value read from another file (any type, arrays of strings
 * included), e.g. a tokenizer for synth --vocab-from. */
int gguf_w_copy_kv(struct gguf_writer *w, const struct gguf_kv *kv);

/* Adds a tensor info; returns its index, or -1 on a bad shape/type/duplicate. */
int gguf_w_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                  uint32_t type);
uint64_t gguf_w_tensor_bytes(const struct gguf_writer *w, int index);
/* Total bytes the file will have once every tensor is written. */
uint64_t gguf_w_file_size(const struct gguf_writer *w);

/* Writes the header (version 3) and the padding before the data section. */
int gguf_w_begin(struct gguf_writer *w, FILE *out, struct tm_err *err);
/* Writes tensor `index`'s bytes (exactly gguf_w_tensor_bytes) plus padding.
 * Tensors must be written in index order; may be called in several pieces
 * (len < the tensor's size) as long as the pieces add up. */
int gguf_w_data(struct gguf_writer *w, const void *data, size_t len, struct tm_err *err);
/* Checks that every tensor was written in full. */
int gguf_w_end(struct gguf_writer *w, struct tm_err *err);

#endif
