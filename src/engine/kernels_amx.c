/* kernels_amx: prefill of Q4_0 and Q8_0 weights on Intel AMX int8 tiles, in
 * front of the VNNI path's entries for those types (kernels_fill_amx, called
 * by kernels.c when the CPU has AMX-TILE and AMX-INT8, the OS saves the tile
 * state and Linux lent this process the tile data).
 *
 * The arithmetic is the VNNI panels' (kernels_avx512_panels.c): per 32-weight
 * block, an exact int32 dot product of the weights (signed: Q8_0's bytes,
 * Q4_0's nibbles - 8) with the activation column's int8 block, then acc +=
 * float(I) x (dw x da) in float. Only who computes the integer dots differs:
 * one tdpbssd makes 16 columns x 16 rows x 32 weights of them, where a
 * vpdpbusd makes 16 x 4. The per-block float scaling stays on the vector
 * units and, with the tile store between, is what bounds the kernel.
 *
 * Layout per 16-row panel and K segment of AMX_KSEG blocks (built once, then
 * used by every group of 16 activation columns):
 *   pw[j]: the B tile of block j, 8 rows of 64 bytes; row k, bytes 4m..4m+3
 *          = weights 4k..4k+3 of panel row m (tdpbssd's B layout), signed;
 *   pd[j]: the 16 rows' fp32 scales of block j.
 * The A tile is 16 activation columns' int8 blocks, read in place (stride =
 * the activation row stride); C (16 x 16 int32) is stored to memory and row
 * n (column n of the batch, lanes = panel rows) scaled into acc[n]. Columns
 * past the last multiple of 16 go to the VNNI entry this one replaced. */
#include "engine/kernels_amx.h"

#include "util/amx.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#define AMX_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,amx-tile,amx-int8"
#define AMX __attribute__((target(AMX_TARGET)))
#define AMX_INLINE __attribute__((target(AMX_TARGET), always_inline)) static inline

#define AMX_KSEG 32 /* blocks per K segment: 16 KiB of B tiles + 2 KiB of scales */

enum amx_kind { AMX_Q4_0, AMX_Q8_0 };

/* Tiles: 0, 1, 6, 7 = C (16 x 64 bytes), 2, 3 = A (16 x 32), 4, 5 = B (8 x 64). */
struct amx_tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

AMX_INLINE void amx_configure(void) {
  struct amx_tilecfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 2; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  for (int t = 6; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  for (int t = 2; t < 4; t++) cfg.rows[t] = 16, cfg.colsb[t] = 32;
  for (int t = 4; t < 6; t++) cfg.rows[t] = 8, cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);
}

/* Blocks [b0, b0 + kb) of panel rows p .. p + nr - 1 (nr <= 16; missing
 * rows are zero weights with scale 0) into pw / pd. */
AMX_INLINE void amx_panel_build(enum amx_kind kind, const uint8_t *w, size_t w_stride, int64_t p,
                                int nr, int64_t b0, int kb, __m512i (*pw)[8], float (*pd)[16]) {
  const size_t bb = kind == AMX_Q8_0 ? 34 : 18;
  const __mmask16 m = (__mmask16)((1u << nr) - 1);
  const __m512i ridx = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w_stride));
  const __m512i z = _mm512_setzero_si512(), m4 = _mm512_set1_epi8(15), eight = _mm512_set1_epi8(8);
  const uint8_t *base = w + (size_t)p * w_stride;
  for (int j = 0; j < kb; j++) {
    const uint8_t *bp = base + (size_t)(b0 + j) * bb;
    const __m512i dv = _mm512_mask_i32gather_epi32(z, m, ridx, bp, 1);
    _mm512_store_ps(pd[j], _mm512_maskz_mov_ps(m, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dv))));
    if (kind == AMX_Q8_0) {
      for (int k = 0; k < 8; k++)
        pw[j][k] = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 2 + 4 * k, 1);
      continue;
    }
    /* Q4_0: byte i of qs holds element i (low nibble) and 16 + i (high). */
    for (int k = 0; k < 4; k++) {
      const __m512i raw = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 2 + 4 * k, 1);
      /* rows past nr gather zeros: 0 - 8 would be a weight; their scale is 0
       * and their outputs are never stored, so it does not matter. */
      pw[j][k] = _mm512_sub_epi8(_mm512_and_si512(raw, m4), eight);
      pw[j][k + 4] = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi32(raw, 4), m4), eight);
    }
  }
}

/* acc[n] += float(C row n) x (pd x da of column n), C at cb (16 x 16 int32),
 * column n's activation block at x + n * as. */
AMX_INLINE void amx_scale_rows(const int32_t *cb, const uint8_t *x, size_t as, __m512 dw,
                               __m512 *acc) {
  for (int n = 0; n < 16; n++) {
    float da;
    memcpy(&da, x + (size_t)n * as + offsetof(struct act_q8, d), sizeof da);
    const __m512 ci = _mm512_cvtepi32_ps(_mm512_load_si512(cb + 16 * n));
    acc[n] = _mm512_fmadd_ps(ci, _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc[n]);
  }
}

/* One 16-column group against a built panel: blocks b0 .. b0 + kb - 1 in
 * pairs, software-pipelined in three stages so that nothing waits for the
 * tile unit, which runs its loads, products and stores in order, nor for a
 * tile store to reach memory: pair i's products are issued, then pair
 * i - 2's stored results scaled, then pair i - 1's results stored.
 *   tile sets: pair i on C 0, 1 (i even) or C 6, 7 (i odd); A 2, 3 and B 4,
 *   5 reloaded for each pair; stored results in cb[i % 2][0 .. 1].
 * Measured in isolation (tile loads, zero, product and store of one 16 x 16
 * x 32 block, 2026-12-01, this Xeon): 9.3 ns a block, 31 cycles. */
#define AMX_ISSUE(c0, c1, j)                                                                   \
  do {                                                                                         \
    _tile_loadd(2, x + (size_t)(j) * bs + qoff, (long)as);                                    \
    _tile_loadd(4, pw[j], 64);                                                                 \
    _tile_loadd(3, x + (size_t)((j) + 1) * bs + qoff, (long)as);                              \
    _tile_loadd(5, pw[(j) + 1], 64);                                                           \
    _tile_zero(c0);                                                                            \
    _tile_zero(c1);                                                                            \
    _tile_dpbssd(c0, 2, 4);                                                                    \
    _tile_dpbssd(c1, 3, 5);                                                                    \
  } while (0)
#define AMX_STORE(c0, c1, set)                                                                 \
  do {                                                                                         \
    _tile_stored(c0, cb[set][0], 64);                                                          \
    _tile_stored(c1, cb[set][1], 64);                                                          \
  } while (0)
#define AMX_SCALE(set, j)                                                                      \
  do {                                                                                         \
    amx_scale_rows(cb[set][0], x + (size_t)(j) * bs, as, _mm512_load_ps(pd[j]), acc);         \
    amx_scale_rows(cb[set][1], x + (size_t)((j) + 1) * bs, as, _mm512_load_ps(pd[(j) + 1]),   \
                   acc);                                                                       \
  } while (0)

AMX_INLINE void amx_group(const __m512i (*pw)[8], const float (*pd)[16], int kb, const uint8_t *ab,
                          size_t as, int64_t b0, float *o, int64_t os, __mmask16 m, bool first) {
  alignas(64) int32_t cb[2][2][256];
  __m512 acc[16];
  for (int n = 0; n < 16; n++)
    acc[n] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, o + (size_t)n * os);
  const size_t qoff = offsetof(struct act_q8, q), bs = sizeof(struct act_q8);
  const uint8_t *x = ab + (size_t)b0 * bs;
  const int pairs = kb / 2;
  if (pairs == 1) {
    AMX_ISSUE(0, 1, 0);
    AMX_STORE(0, 1, 0);
    AMX_SCALE(0, 0);
  } else if (pairs > 1) {
    AMX_ISSUE(0, 1, 0);
    AMX_ISSUE(6, 7, 2);
    AMX_STORE(0, 1, 0);
    int i = 2; /* the next pair to issue */
    /* Each pair's scaling comes before the next tile store in program
     * order: vector loads younger than a tile store wait for it. */
    for (; i + 1 < pairs; i += 2) {
      AMX_ISSUE(0, 1, 2 * i);     /* pair i (even) */
      AMX_SCALE(0, 2 * i - 4);    /* pair i - 2 */
      AMX_STORE(6, 7, 1);         /* pair i - 1 */
      AMX_ISSUE(6, 7, 2 * i + 2); /* pair i + 1 (odd) */
      AMX_SCALE(1, 2 * i - 2);    /* pair i - 1 */
      AMX_STORE(0, 1, 0);         /* pair i */
    }
    if (i < pairs) { /* pair i, even */
      AMX_ISSUE(0, 1, 2 * i);
      AMX_SCALE(0, 2 * i - 4);
      AMX_STORE(6, 7, 1);
      AMX_SCALE(1, 2 * i - 2);
      AMX_STORE(0, 1, 0);
      AMX_SCALE(0, 2 * i);
    } else { /* pair i - 2 stored in set 0, pair i - 1 (odd) issued */
      AMX_SCALE(0, 2 * i - 4);
      AMX_STORE(6, 7, 1);
      AMX_SCALE(1, 2 * i - 2);
    }
  }
  const int j = 2 * pairs;
  if (j < kb) {
    _tile_loadd(2, x + (size_t)j * bs + qoff, (long)as);
    _tile_loadd(4, pw[j], 64);
    _tile_zero(0);
    _tile_dpbssd(0, 2, 4);
    _tile_stored(0, cb[0][0], 64);
    amx_scale_rows(cb[0][0], x + (size_t)j * bs, as, _mm512_load_ps(pd[j]), acc);
  }
  for (int n = 0; n < 16; n++) _mm512_mask_storeu_ps(o + (size_t)n * os, m, acc[n]);
}

/* gemm_fn's contract for columns [0, ncols16), ncols16 a positive multiple
 * of 16. */
AMX_INLINE void amx_gemm(enum amx_kind kind, int64_t n, const uint8_t *w, size_t w_stride,
                         int64_t r0, int64_t r1, const uint8_t *a, size_t as, int64_t ncols16,
                         float *out, int64_t os) {
  alignas(64) __m512i pw[AMX_KSEG][8];
  alignas(64) float pd[AMX_KSEG][16];
  const int64_t nb = n / 32;
  amx_configure();
  for (int64_t p = r0; p < r1; p += 16) {
    const int nr = (int)(r1 - p < 16 ? r1 - p : 16);
    const __mmask16 m = (__mmask16)((1u << nr) - 1);
    for (int64_t s = 0; s < nb; s += AMX_KSEG) {
      const int kb = (int)(nb - s < AMX_KSEG ? nb - s : AMX_KSEG);
      amx_panel_build(kind, w, w_stride, p, nr, s, kb, pw, pd);
      for (int64_t c = 0; c < ncols16; c += 16)
        amx_group((const __m512i(*)[8])pw, (const float(*)[16])pd, kb, a + (size_t)c * as, as, s,
                  out + c * os + p, os, m, s == 0);
    }
  }
  _tile_release();
}

/* The VNNI entries these go in front of (set once, by kernels_fill_amx). */
static gemm_fn amx_prev_q4_0, amx_prev_q8_0;

#define DEFINE_AMX_ENTRY(name, kind, prev)                                                     \
  AMX static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,     \
                       const void *a, size_t a_stride, int64_t ncols, float *out,             \
                       int64_t out_stride) {                                                  \
    const int64_t c16 = ncols < AMX_MIN_COLS ? 0 : ncols / 16 * 16;                           \
    if (c16 == 0 || w_stride > (size_t)(INT32_MAX / 16)) {                                    \
      prev(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                      \
      return;                                                                                 \
    }                                                                                         \
    amx_gemm(kind, n, w, w_stride, r0, r1, a, a_stride, c16, out, out_stride);                \
    if (ncols > c16)                                                                          \
      prev(n, w, w_stride, r0, r1, (const uint8_t *)a + (size_t)c16 * a_stride, a_stride,     \
           ncols - c16, out + c16 * out_stride, out_stride);                                  \
  }
DEFINE_AMX_ENTRY(gemm_q4_0_amx, AMX_Q4_0, amx_prev_q4_0)
DEFINE_AMX_ENTRY(gemm_q8_0_amx, AMX_Q8_0, amx_prev_q8_0)

bool kernels_amx_usable(void) {
  /* The kernels' scaling is AVX-512 (every AMX CPU has it; a VM may hide it). */
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
    return false;
  return tm_amx_int8_usable();
}

void kernels_fill_amx(struct kernel_ops *ops) {
  amx_prev_q4_0 = ops->gemm[GGML_TYPE_Q4_0];
  amx_prev_q8_0 = ops->gemm[GGML_TYPE_Q8_0];
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_amx;
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_amx;
  ops->prefill_tiles = "amx_int8";
}
#endif
