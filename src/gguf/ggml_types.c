/* ggml_types: the GGML type table and the reference quantize/dequantize
 * dispatch (see ggml_types.h). The per-type arithmetic lives in
 * quant_ref_legacy.c (32-element blocks) and quant_ref_k.c (K-quants).
 *
 * Table facts were checked against llama.cpp's ggml/include/ggml.h (ids),
 * ggml/src/ggml-common.h (block structs and their static_asserts) and gguf-py's
 * GGML_QUANT_SIZES. One known disagreement: gguf-py lists Q8_1 as 4 + 4 + 32 = 40
 * bytes, a leftover from when its d and s were floats; ggml's block_q8_1 holds
 * two fp16 and is 36 bytes, which is what ggml allocates, so 36 is used here.
 * (Q8_1 and Q8_K are activation formats ggml never writes to files.)
 *
 * Names are the enum spellings ("Q4_K", "IQ2_XXS", "BF16"), which is how
 * llama.cpp's tools and gguf-py print them; lookup ignores case, so ggml's own
 * lower-case type names ("q4_K", "bf16") resolve too. */
#include "gguf/ggml_types.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "gguf/quant_ref.h"
#include "util/fp16.h"

#define T(id_, name_, bs_, ts_, q_, ref_)                                                  \
  [id_] = {.name = name_, .block_size = bs_, .type_size = ts_, .quantized = q_, .has_ref = ref_}

/* Unlisted ids (4, 5, 31-33, 36-38) stay zeroed: name NULL means "not defined". */
static const struct ggml_type_info type_table[GGML_TYPE_COUNT] = {
    T(GGML_TYPE_F32, "F32", 1, 4, false, true),
    T(GGML_TYPE_F16, "F16", 1, 2, false, true),
    T(GGML_TYPE_Q4_0, "Q4_0", 32, 18, true, true),        /* fp16 d + 16 B nibbles */
    T(GGML_TYPE_Q4_1, "Q4_1", 32, 20, true, true),        /* d, m + 16 */
    T(GGML_TYPE_Q5_0, "Q5_0", 32, 22, true, true),        /* d + qh[4] + 16 */
    T(GGML_TYPE_Q5_1, "Q5_1", 32, 24, true, true),        /* d, m + qh[4] + 16 */
    T(GGML_TYPE_Q8_0, "Q8_0", 32, 34, true, true),        /* d + 32 */
    T(GGML_TYPE_Q8_1, "Q8_1", 32, 36, true, false),       /* d, s (fp16) + 32 */
    T(GGML_TYPE_Q2_K, "Q2_K", 256, 84, true, false),      /* 16 + 64 + d, dmin */
    T(GGML_TYPE_Q3_K, "Q3_K", 256, 110, true, false),     /* 32 + 64 + 12 + d */
    T(GGML_TYPE_Q4_K, "Q4_K", 256, 144, true, true),      /* d, dmin + 12 + 128 */
    T(GGML_TYPE_Q5_K, "Q5_K", 256, 176, true, true),      /* d, dmin + 12 + 32 + 128 */
    T(GGML_TYPE_Q6_K, "Q6_K", 256, 210, true, true),      /* 128 + 64 + 16 + d */
    T(GGML_TYPE_Q8_K, "Q8_K", 256, 292, true, false),     /* f32 d + 256 + 16 x i16 */
    T(GGML_TYPE_IQ2_XXS, "IQ2_XXS", 256, 66, true, false),/* d + 32 x u16 */
    T(GGML_TYPE_IQ2_XS, "IQ2_XS", 256, 74, true, false),  /* d + 32 x u16 + 8 */
    T(GGML_TYPE_IQ3_XXS, "IQ3_XXS", 256, 98, true, false),/* d + 96 */
    T(GGML_TYPE_IQ1_S, "IQ1_S", 256, 50, true, false),    /* d + 32 + 8 x u16 */
    T(GGML_TYPE_IQ4_NL, "IQ4_NL", 32, 18, true, false),   /* d + 16 */
    T(GGML_TYPE_IQ3_S, "IQ3_S", 256, 110, true, false),   /* d + 64 + 8 + 32 + 4 */
    T(GGML_TYPE_IQ2_S, "IQ2_S", 256, 82, true, false),    /* d + 64 + 8 + 8 */
    T(GGML_TYPE_IQ4_XS, "IQ4_XS", 256, 136, true, false), /* d + u16 + 4 + 128 */
    T(GGML_TYPE_I8, "I8", 1, 1, false, false),
    T(GGML_TYPE_I16, "I16", 1, 2, false, false),
    T(GGML_TYPE_I32, "I32", 1, 4, false, false),
    T(GGML_TYPE_I64, "I64", 1, 8, false, false),
    T(GGML_TYPE_F64, "F64", 1, 8, false, false),
    T(GGML_TYPE_IQ1_M, "IQ1_M", 256, 56, true, false),    /* 32 + 16 + 8, no d */
    T(GGML_TYPE_BF16, "BF16", 1, 2, false, true),
    T(GGML_TYPE_TQ1_0, "TQ1_0", 256, 54, true, false),    /* 48 + 4 + d */
    T(GGML_TYPE_TQ2_0, "TQ2_0", 256, 66, true, false),    /* 64 + d */
    T(GGML_TYPE_MXFP4, "MXFP4", 32, 17, true, false),     /* e8m0 + 16 */
    T(GGML_TYPE_NVFP4, "NVFP4", 64, 36, true, false),     /* 4 x ue4m3 + 32 */
    T(GGML_TYPE_Q1_0, "Q1_0", 128, 18, true, false),      /* d + 16 */
};

#undef T

const struct ggml_type_info *ggml_type_get(uint32_t type) {
  if (type >= GGML_TYPE_COUNT || type_table[type].name == NULL) return NULL;
  return &type_table[type];
}

int ggml_type_from_name(const char *name) {
  if (!name) return -1;
  for (int t = 0; t < GGML_TYPE_COUNT; t++)
    if (type_table[t].name && strcasecmp(type_table[t].name, name) == 0) return t;
  return -1;
}

int ggml_row_bytes(uint32_t type, uint64_t n, uint64_t *bytes) {
  const struct ggml_type_info *ti = ggml_type_get(type);
  if (!ti || n % ti->block_size != 0) return -1;
  const uint64_t blocks = n / ti->block_size;
  if (blocks > UINT64_MAX / ti->type_size) return -1;
  if (bytes) *bytes = blocks * ti->type_size;
  return 0;
}

/* ------------------------------------------------------------ dispatch -- */

/* Common checks: a reference exists, n is a whole number of blocks, and the
 * block buffer is 2-byte aligned (every block struct holds fp16 fields and has an
 * even size; GGUF data offsets are multiples of the file's alignment, >= 8). */
static const struct ggml_type_info *ref_check(uint32_t type, const void *blocks, int64_t n) {
  const struct ggml_type_info *ti = ggml_type_get(type);
  if (!ti || !ti->has_ref || n < 0 || (uint64_t)n % ti->block_size != 0) return NULL;
  if (ti->quantized && ((uintptr_t)blocks & 1u) != 0) return NULL;
  return ti;
}

int ggml_quantize_ref(uint32_t type, const float *x, void *y, int64_t n) {
  if (!ref_check(type, y, n)) return -1;
  uint8_t *out = y;
  switch (type) {
  case GGML_TYPE_F32:
    memmove(out, x, (size_t)n * sizeof(float));
    return 0;
  case GGML_TYPE_F16:
    for (int64_t i = 0; i < n; i++) {
      const uint16_t h = tm_fp32_to_fp16(x[i]);
      memcpy(out + 2 * i, &h, 2); /* memcpy: the buffer may be byte-aligned */
    }
    return 0;
  case GGML_TYPE_BF16:
    for (int64_t i = 0; i < n; i++) {
      const uint16_t h = tm_fp32_to_bf16(x[i]);
      memcpy(out + 2 * i, &h, 2);
    }
    return 0;
  case GGML_TYPE_Q4_0: quant_ref_q4_0(x, y, n); return 0;
  case GGML_TYPE_Q4_1: quant_ref_q4_1(x, y, n); return 0;
  case GGML_TYPE_Q5_0: quant_ref_q5_0(x, y, n); return 0;
  case GGML_TYPE_Q5_1: quant_ref_q5_1(x, y, n); return 0;
  case GGML_TYPE_Q8_0: quant_ref_q8_0(x, y, n); return 0;
  case GGML_TYPE_Q4_K: quant_ref_q4_k(x, y, n); return 0;
  case GGML_TYPE_Q5_K: quant_ref_q5_k(x, y, n); return 0;
  case GGML_TYPE_Q6_K: quant_ref_q6_k(x, y, n); return 0;
  default: return -1;
  }
}

int ggml_dequantize_ref(uint32_t type, const void *x, float *y, int64_t n) {
  if (!ref_check(type, x, n)) return -1;
  const uint8_t *in = x;
  switch (type) {
  case GGML_TYPE_F32:
    memmove(y, in, (size_t)n * sizeof(float));
    return 0;
  case GGML_TYPE_F16:
    for (int64_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, in + 2 * i, 2);
      y[i] = tm_fp16_to_fp32(h);
    }
    return 0;
  case GGML_TYPE_BF16:
    for (int64_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, in + 2 * i, 2);
      y[i] = tm_bf16_to_fp32(h);
    }
    return 0;
  case GGML_TYPE_Q4_0: dequant_ref_q4_0(x, y, n); return 0;
  case GGML_TYPE_Q4_1: dequant_ref_q4_1(x, y, n); return 0;
  case GGML_TYPE_Q5_0: dequant_ref_q5_0(x, y, n); return 0;
  case GGML_TYPE_Q5_1: dequant_ref_q5_1(x, y, n); return 0;
  case GGML_TYPE_Q8_0: dequant_ref_q8_0(x, y, n); return 0;
  case GGML_TYPE_Q4_K: dequant_ref_q4_k(x, y, n); return 0;
  case GGML_TYPE_Q5_K: dequant_ref_q5_k(x, y, n); return 0;
  case GGML_TYPE_Q6_K: dequant_ref_q6_k(x, y, n); return 0;
  default: return -1;
  }
}
