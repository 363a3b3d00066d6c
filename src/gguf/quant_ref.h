/* quant_ref.h (private to src/gguf/): block layouts of the quantized GGML types
 * this module implements, and the per-type reference row functions that
 * ggml_quantize_ref / ggml_dequantize_ref (ggml_types.c) dispatch to.
 *
 * Layouts are byte-for-byte what llama.cpp reads (all little-endian; fp16 fields
 * stored as raw IEEE half bits). Every struct has a _Static_assert on its size so
 * a padding surprise fails the build, not a model load.
 *
 * Row functions take n elements (a multiple of the block size, checked by the
 * caller) and never fail. Inputs to the quantizers must be finite: NaN or inf
 * gives unspecified block contents.
 *
 * Exactness (see the .c files for the arithmetic):
 *  - Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 quantizers reproduce llama.cpp's
 *    quantize_row_*_ref bytes (the path llama-quantize takes without an imatrix).
 *  - Q4_K, Q5_K, Q6_K quantizers are this project's own (min/max start, a
 *    least-squares refit, then a final nearest-level pass with the stored fp16
 *    scales); they give valid blocks of bounded error, not llama.cpp's bytes.
 *  - All dequantizers match llama.cpp's dequantize_row_* bit for bit. */
#ifndef TM_GGUF_QUANT_REF_H
#define TM_GGUF_QUANT_REF_H

#include <stdint.h>

#include "gguf/ggml_types.h"

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define K_SCALE_SIZE 12

/* x = d * (q - 8); q is 4 bits: element j in the low nibble of qs[j], element
 * j+16 in the high nibble (j < 16). */
struct block_q4_0 {
  uint16_t d;             /* fp16 */
  uint8_t qs[QK4_0 / 2];
};
_Static_assert(sizeof(struct block_q4_0) == 18, "block_q4_0 size");

/* x = d * q + m; nibble order as Q4_0. */
struct block_q4_1 {
  uint16_t d;             /* fp16 */
  uint16_t m;             /* fp16 */
  uint8_t qs[QK4_1 / 2];
};
_Static_assert(sizeof(struct block_q4_1) == 20, "block_q4_1 size");

/* x = d * (q - 16); q = low 4 bits (nibbles as Q4_0) | bit 4 from qh: element j's
 * high bit is bit j of the little-endian u32 qh (j in 0..31). */
struct block_q5_0 {
  uint16_t d;             /* fp16 */
  uint8_t qh[4];
  uint8_t qs[QK5_0 / 2];
};
_Static_assert(sizeof(struct block_q5_0) == 22, "block_q5_0 size");

/* x = d * q + m; bits as Q5_0. */
struct block_q5_1 {
  uint16_t d;             /* fp16 */
  uint16_t m;             /* fp16 */
  uint8_t qh[4];
  uint8_t qs[QK5_1 / 2];
};
_Static_assert(sizeof(struct block_q5_1) == 24, "block_q5_1 size");

/* x = d * q, q signed 8-bit. */
struct block_q8_0 {
  uint16_t d;             /* fp16 */
  int8_t qs[QK8_0];
};
_Static_assert(sizeof(struct block_q8_0) == 34, "block_q8_0 size");

/* 256 elements in 8 sub-blocks of 32. Sub-block j: x = d*sc_j*q - dmin*m_j with
 * 6-bit sc_j, m_j packed in scales[12]:
 *   j < 4:  sc = scales[j] & 63,  m = scales[j+4] & 63
 *   j >= 4: sc = (scales[j+4] & 15) | (scales[j-4] >> 6) << 4
 *           m  = (scales[j+4] >> 4) | (scales[j]   >> 6) << 4
 * qs: for each 64-element chunk c (0..3), 32 bytes; byte l holds element 64c+l in
 * the low nibble and 64c+32+l in the high nibble. */
struct block_q4_k {
  uint16_t d;             /* fp16, super-scale of the sub-block scales */
  uint16_t dmin;          /* fp16, super-scale of the sub-block mins */
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
_Static_assert(sizeof(struct block_q4_k) == 144, "block_q4_k size");

/* As Q4_K with a fifth bit: element 64c+l takes bit 2c of qh[l], element
 * 64c+32+l takes bit 2c+1 of qh[l] (l in 0..31). */
struct block_q5_k {
  uint16_t d;             /* fp16 */
  uint16_t dmin;          /* fp16 */
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
_Static_assert(sizeof(struct block_q5_k) == 176, "block_q5_k size");

/* 256 elements in 16 sub-blocks of 16: x = d * scales[e/16] * (q - 32), q 6-bit.
 * For each 128-element half h (0..1), with ql += 64h, qh += 32h, l in 0..31:
 *   element 128h + l      : low nibble of ql[l]      | ((qh[l] >> 0) & 3) << 4
 *   element 128h + l + 32 : low nibble of ql[l + 32] | ((qh[l] >> 2) & 3) << 4
 *   element 128h + l + 64 : high nibble of ql[l]     | ((qh[l] >> 4) & 3) << 4
 *   element 128h + l + 96 : high nibble of ql[l + 32]| ((qh[l] >> 6) & 3) << 4 */
struct block_q6_k {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;             /* fp16 */
};
_Static_assert(sizeof(struct block_q6_k) == 210, "block_q6_k size");

/* Unpacks sub-block j's 6-bit scale and min from a Q4_K/Q5_K scales array. */
static inline void quant_k4_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

void quant_ref_q4_0(const float *x, struct block_q4_0 *y, int64_t n);
void quant_ref_q4_1(const float *x, struct block_q4_1 *y, int64_t n);
void quant_ref_q5_0(const float *x, struct block_q5_0 *y, int64_t n);
void quant_ref_q5_1(const float *x, struct block_q5_1 *y, int64_t n);
void quant_ref_q8_0(const float *x, struct block_q8_0 *y, int64_t n);
void dequant_ref_q4_0(const struct block_q4_0 *x, float *y, int64_t n);
void dequant_ref_q4_1(const struct block_q4_1 *x, float *y, int64_t n);
void dequant_ref_q5_0(const struct block_q5_0 *x, float *y, int64_t n);
void dequant_ref_q5_1(const struct block_q5_1 *x, float *y, int64_t n);
void dequant_ref_q8_0(const struct block_q8_0 *x, float *y, int64_t n);

void quant_ref_q4_k(const float *x, struct block_q4_k *y, int64_t n);
void quant_ref_q5_k(const float *x, struct block_q5_k *y, int64_t n);
void quant_ref_q6_k(const float *x, struct block_q6_k *y, int64_t n);
void dequant_ref_q4_k(const struct block_q4_k *x, float *y, int64_t n);
void dequant_ref_q5_k(const struct block_q5_k *x, float *y, int64_t n);
void dequant_ref_q6_k(const struct block_q6_k *x, float *y, int64_t n);

#endif
