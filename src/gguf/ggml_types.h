/* ggml_types: the GGML tensor type table (id, name, block size, bytes per block)
 * for every id ggml defines, and scalar reference quantize/dequantize for
 * F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K.
 *
 * The block layouts are bit-exact with what llama.cpp reads, and every
 * dequantizer matches llama.cpp's dequantize_row_*. Q8_0, Q4_0, Q4_1, Q5_0 and
 * Q5_1 quantization produce the same bytes as llama.cpp's reference quantizers
 * (what llama-quantize runs without an imatrix; checked against its output for
 * Q8_0/Q4_0/Q5_0 in tests/unit/gguf/test_quant_fixtures.c). The K-quant
 * quantizers (Q4_K, Q5_K, Q6_K) are this project's own: valid blocks, every
 * element on the nearest level of its sub-block as stored, but not llama.cpp's
 * choice of scales (see quant_ref_k.c). Plain scalar C, written to be fast enough
 * for `tokmeter synth` to quantize hundreds of MB; the engine's SIMD kernels are
 * checked against these. */
#ifndef TM_GGML_TYPES_H
#define TM_GGML_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ggml_type {
  GGML_TYPE_F32 = 0,
  GGML_TYPE_F16 = 1,
  GGML_TYPE_Q4_0 = 2,
  GGML_TYPE_Q4_1 = 3,
  /* 4, 5: removed from ggml (Q4_2, Q4_3) */
  GGML_TYPE_Q5_0 = 6,
  GGML_TYPE_Q5_1 = 7,
  GGML_TYPE_Q8_0 = 8,
  GGML_TYPE_Q8_1 = 9,
  GGML_TYPE_Q2_K = 10,
  GGML_TYPE_Q3_K = 11,
  GGML_TYPE_Q4_K = 12,
  GGML_TYPE_Q5_K = 13,
  GGML_TYPE_Q6_K = 14,
  GGML_TYPE_Q8_K = 15,
  GGML_TYPE_IQ2_XXS = 16,
  GGML_TYPE_IQ2_XS = 17,
  GGML_TYPE_IQ3_XXS = 18,
  GGML_TYPE_IQ1_S = 19,
  GGML_TYPE_IQ4_NL = 20,
  GGML_TYPE_IQ3_S = 21,
  GGML_TYPE_IQ2_S = 22,
  GGML_TYPE_IQ4_XS = 23,
  GGML_TYPE_I8 = 24,
  GGML_TYPE_I16 = 25,
  GGML_TYPE_I32 = 26,
  GGML_TYPE_I64 = 27,
  GGML_TYPE_F64 = 28,
  GGML_TYPE_IQ1_M = 29,
  GGML_TYPE_BF16 = 30,
  /* 31-33: removed (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) */
  GGML_TYPE_TQ1_0 = 34,
  GGML_TYPE_TQ2_0 = 35,
  /* 36-38: removed (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) */
  GGML_TYPE_MXFP4 = 39,
  GGML_TYPE_NVFP4 = 40,
  GGML_TYPE_Q1_0 = 41,
  GGML_TYPE_COUNT = 42,
};

#define QK_K 256

struct ggml_type_info {
  const char *name;    /* "Q4_0", "Q4_K", "BF16": the enum spelling (ggml's own
                          type_name is lower case; lookups ignore case) */
  uint32_t block_size; /* elements per block */
  uint32_t type_size;  /* bytes per block */
  bool quantized;
  bool has_ref;        /* reference quantize/dequantize implemented here */
};

/* The entry for a type id, or NULL for an id ggml does not define (removed or
 * out of range). Safe to call with any value read from a file. */
const struct ggml_type_info *ggml_type_get(uint32_t type);
/* Case-insensitive name -> id; -1 when unknown. */
int ggml_type_from_name(const char *name);
/* Bytes of n elements of this type. Returns -1 when the type is unknown, n is
 * not a multiple of the block size, or the result overflows; 0 otherwise. */
int ggml_row_bytes(uint32_t type, uint64_t n, uint64_t *bytes);

/* Reference conversions of n elements. Return 0, or -1 when the type has no
 * reference implementation (has_ref false), n is negative or not a multiple of
 * the block size, or the block buffer of a quantized type is not 2-byte aligned
 * (GGUF tensor data always is). Quantizer inputs must be finite: NaN or inf gives
 * unspecified (but memory-safe) blocks. F32/F16/BF16 buffers may have any
 * alignment. */
int ggml_quantize_ref(uint32_t type, const float *x, void *y, int64_t n);
int ggml_dequantize_ref(uint32_t type, const void *x, float *y, int64_t n);

#endif
