/* gguf_internal: facts shared by the GGUF reader and writer (not a public API).
 * Owns: the size of each fixed-width metadata value type, the limits the reader
 * enforces on names, and the padding rule. */
#ifndef TM_GGUF_INTERNAL_H
#define TM_GGUF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* Keys and tensor names longer than this are rejected by reader and writer: real
 * files use < 100 bytes (ggml itself caps tensor names at 63), and a bound keeps a
 * hostile length from turning into a huge allocation. */
#define GGUF_MAX_NAME_LEN 1024

/* Bytes of one value of a fixed-width type; 0 for STRING, ARRAY and unknown ids. */
uint32_t gguf_value_type_size(uint32_t t);

static inline bool gguf_is_integer_type(uint32_t t) {
  return t == GGUF_VT_UINT8 || t == GGUF_VT_INT8 || t == GGUF_VT_UINT16 || t == GGUF_VT_INT16 ||
         t == GGUF_VT_UINT32 || t == GGUF_VT_INT32 || t == GGUF_VT_UINT64 || t == GGUF_VT_INT64;
}

static inline bool gguf_is_signed_type(uint32_t t) {
  return t == GGUF_VT_INT8 || t == GGUF_VT_INT16 || t == GGUF_VT_INT32 || t == GGUF_VT_INT64;
}

static inline bool gguf_is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* x rounded up to a multiple of align (a power of two). The caller guarantees no
 * overflow (x <= UINT64_MAX - align). */
static inline uint64_t gguf_pad(uint64_t x, uint32_t align) {
  return (x + align - 1) & ~(uint64_t)(align - 1);
}

/* Little-endian loads from unaligned memory (the file's byte order, whatever the
 * host's). */
static inline uint64_t gguf_load_le(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}


/* ------------------------------------------------------------- name index --
 * Open-addressing hash from a NUL-terminated name to an entry index. Slots hold
 * the name pointer itself (each name is its own allocation, so it stays valid
 * when the entry array is reallocated). */
struct gguf_name_slot {
  const char *name; /* NULL = empty */
  uint64_t idx;
};

struct gguf_name_index {
  struct gguf_name_slot *slots;
  uint64_t cap; /* power of two, or 0 */
  uint64_t n;
};

/* Inserts name -> idx. Returns 0 when inserted, 1 when the name is already there
 * (*prev = its index, nothing changed), -1 when out of memory. */
int gguf_name_index_put(struct gguf_name_index *ni, const char *name, uint64_t idx,
                        uint64_t *prev);
/* Index of name, or -1 when absent. */
int64_t gguf_name_index_get(const struct gguf_name_index *ni, const char *name);
void gguf_name_index_free(struct gguf_name_index *ni);

/* The object gguf_open/gguf_parse return: the public struct first (so a
 * struct gguf_file * converts back), then the lookup indexes. */
struct gguf_file_full {
  struct gguf_file pub;
  struct gguf_name_index kv_index;
  struct gguf_name_index tensor_index;
};

#endif
