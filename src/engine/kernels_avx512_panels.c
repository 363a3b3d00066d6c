/* kernels_avx512_panels: the VNNI path's prefill kernels (ncols >= 2;
 * kernels_avx512.h says how the AVX-512 path is split): 16 weight rows
 * transposed once into a panel so that one vpdpbusd serves 16 rows x 4
 * weights of a broadcast activation column, for the 32-element block types
 * and for the K-quants. Called through the table entries of
 * kernels_avx512_q32.c and kernels_avx512_kquant.c. */
#include "engine/kernels_avx512.h"

#if defined(__x86_64__)
#include <stdalign.h>
#include <string.h>

#include "gguf/quant_ref.h"

/* ---- VNNI prefill (ncols >= 2), the 32-element types: 16-row panels ------ */

/* A panel is 16 weight rows of up to PANEL_KSEG blocks, transposed once into
 * 8 vectors per block whose i32 lane i holds 4 consecutive weights of row i
 * (unsigned as in the decode kernels), plus the 16 rows' dw. Each column's
 * activation bytes are then broadcast 4 at a time, so one vpdpbusd does 16
 * rows x 4 weights and a block costs 8 of them for 16 rows (no per row x
 * column scalar work); the panel is reused for every column. Per column and
 * block: acc += cvt(I) * (dw da) + o s, lanes = rows, o = dw off (Q4_0, Q5_0,
 * Q8_0) or the block's m (Q4_1, Q5_1). Partial sums of a long row live in out
 * between K segments. */
#define PANEL_KSEG 32

/* The block types a panel takes: bytes per block, where qs and qh (Q5's
 * fifth bits; -1: none) start, whether an fp16 m follows d, and the offset
 * of the unsigned weights (x = d (u + off), or x = d u + m). */
enum panel_kind { PANEL_Q4_0, PANEL_Q8_0, PANEL_Q5_0, PANEL_Q4_1, PANEL_Q5_1 };
#define PANEL_BB(k) ((k) == PANEL_Q4_0 ? 18 : (k) == PANEL_Q8_0 ? 34 : (k) == PANEL_Q5_0 ? 22 : (k) == PANEL_Q4_1 ? 20 : 24)
#define PANEL_QS(k) ((k) == PANEL_Q4_0 || (k) == PANEL_Q8_0 ? 2 : (k) == PANEL_Q5_0 ? 6 : (k) == PANEL_Q4_1 ? 4 : 8)
#define PANEL_QH(k) ((k) == PANEL_Q5_0 ? 2 : (k) == PANEL_Q5_1 ? 4 : -1)
#define PANEL_HAS_M(k) ((k) == PANEL_Q4_1 || (k) == PANEL_Q5_1)
#define PANEL_OFF(k) ((k) == PANEL_Q4_0 ? -8.0f : (k) == PANEL_Q8_0 ? -128.0f : (k) == PANEL_Q5_0 ? -16.0f : 0.0f)

/* pw[j][k]: lane i = row i's weights 4k..4k+3 (k < 4: low nibbles, elements
 * 4k..; k >= 4: high nibbles, elements 16 + 4 (k - 4)..), unsigned; pd[j]:
 * the rows' d; po[j]: what multiplies the activation block's s (off d, or m).
 * A Q5 fifth-bit nibble (4 bits of qh) becomes bit 4 of four bytes by one
 * 16-entry vpermd lookup. */
VNNI_INLINE void panel_build(const uint8_t *pbase, __m512i ridx, __mmask16 m, int64_t b0,
                             int kb, const enum panel_kind kind, __m512i (*pw)[8], __m512 *pd,
                             __m512 *po) {
  const __m512i m4 = _mm512_set1_epi8(15), sgn = _mm512_set1_epi8((char)0x80);
  const __m512i spread = _mm512_setr_epi32(
      0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010, 0x00101000,
      0x00101010, 0x10000000, 0x10000010, 0x10001000, 0x10001010, 0x10100000, 0x10100010,
      0x10101000, 0x10101010);
  const size_t bb = PANEL_BB(kind), qs = PANEL_QS(kind);
  for (int j = 0; j < kb; j++) {
    const uint8_t *bp = pbase + (size_t)(b0 + j) * bb;
    __m512i dv = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, ridx, bp, 1);
    pd[j] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dv));
    po[j] = PANEL_HAS_M(kind) ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dv, 16)))
                              : _mm512_mul_ps(pd[j], _mm512_set1_ps(PANEL_OFF(kind)));
    if (kind == PANEL_Q8_0) {
      for (int k = 0; k < 8; k++)
        pw[j][k] = _mm512_xor_si512(
            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, ridx, bp + qs + 4 * k, 1), sgn);
      continue;
    }
    for (int k = 0; k < 4; k++) {
      __m512i raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, ridx, bp + qs + 4 * k, 1);
      pw[j][k] = _mm512_and_si512(raw, m4);
      pw[j][k + 4] = _mm512_and_si512(_mm512_srli_epi32(raw, 4), m4);
    }
    if (PANEL_QH(kind) >= 0) {
      __m512i h = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, ridx, bp + PANEL_QH(kind), 1);
      for (int k = 0; k < 8; k++)
        pw[j][k] = _mm512_or_si512(
            pw[j][k], _mm512_permutexvar_epi32(_mm512_srli_epi32(h, 4 * k), spread));
    }
  }
}

VNNI_INLINE void panel_cols(__m512i (*pw)[8], const __m512 *pd, const __m512 *po, int kb,
                            const uint8_t *a, size_t as, int64_t b0, const int nc, float *o,
                            int64_t os, __mmask16 m, int first) {
  __m512 acc[4];
  for (int c = 0; c < nc; c++)
    acc[c] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, o + c * os);
  for (int j = 0; j < kb; j++) {
    const struct act_q8 *x[4];
    __m512i I[4];
    for (int c = 0; c < nc; c++) {
      x[c] = (const struct act_q8 *)(a + c * as) + b0 + j;
      I[c] = _mm512_setzero_si512();
    }
    for (int k = 0; k < 8; k++) {
      __m512i wk = pw[j][k];
      for (int c = 0; c < nc; c++) {
        int32_t q4b;
        memcpy(&q4b, x[c]->q + 4 * k, 4);
        I[c] = _mm512_dpbusd_epi32(I[c], wk, _mm512_set1_epi32(q4b));
      }
    }
    __m512 d = pd[j];
    for (int c = 0; c < nc; c++) {
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[c]), _mm512_mul_ps(d, _mm512_set1_ps(x[c]->d)), acc[c]);
      acc[c] = _mm512_fmadd_ps(po[j], _mm512_set1_ps(x[c]->s), acc[c]);
    }
  }
  for (int c = 0; c < nc; c++) _mm512_mask_storeu_ps(o + c * os, m, acc[c]);
}

/* The AVX-512 panel kernels' driver: 16-row panels of [r0, r1) (the last
 * one masked), each through PANEL_SEGMENTS (kernels_x86.h). BUILD and COLS
 * see p, m, pbase, s, kb and c. */
#define PANEL_DRIVE(nb, kseg, BUILD, COLS)                                                         \
  for (int64_t p = r0; p < r1; p += 16) {                                                          \
    const int64_t nr = r1 - p < 16 ? r1 - p : 16;                                                  \
    const __mmask16 m = (__mmask16)((1u << nr) - 1);                                               \
    const uint8_t *pbase = w + (size_t)p * w_stride;                                               \
    PANEL_SEGMENTS(nb, kseg, BUILD, COLS)                                                          \
  }

/* Lane i: row i's byte offset (the gathers' index vector). */
VNNI_INLINE __m512i panel_ridx(size_t w_stride) {
  return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32((int)w_stride));
}

VNNI_INLINE void panel_gemm(const enum panel_kind kind, int64_t n, const uint8_t *w,
                            size_t w_stride, int64_t r0, int64_t r1, const uint8_t *a, size_t as,
                            int64_t ncols, float *out, int64_t os) {
  const int64_t nb = n / 32;
  alignas(64) __m512i pw[PANEL_KSEG][8];
  alignas(64) __m512 pd[PANEL_KSEG], po[PANEL_KSEG];
  const __m512i ridx = panel_ridx(w_stride);
#define PANEL_COLS(nc) \
  panel_cols(pw, pd, po, kb, a + c * as, as, s, nc, out + c * os + p, os, m, s == 0)
  PANEL_DRIVE(nb, PANEL_KSEG, panel_build(pbase, ridx, m, s, kb, kind, pw, pd, po), PANEL_COLS)
#undef PANEL_COLS
}

/* One function per block type, the kind a constant inside it. */
#define DEFINE_PANEL_GEMM(name, kind)                                                              \
  VNNI void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,      \
                        const uint8_t *a, size_t as, int64_t ncols, float *out, int64_t os) {      \
    panel_gemm(kind, n, w, w_stride, r0, r1, a, as, ncols, out, os);                               \
  }
DEFINE_PANEL_GEMM(avx512_panel_gemm_q4_0, PANEL_Q4_0)
DEFINE_PANEL_GEMM(avx512_panel_gemm_q8_0, PANEL_Q8_0)
DEFINE_PANEL_GEMM(avx512_panel_gemm_q5_0, PANEL_Q5_0)
DEFINE_PANEL_GEMM(avx512_panel_gemm_q4_1, PANEL_Q4_1)
DEFINE_PANEL_GEMM(avx512_panel_gemm_q5_1, PANEL_Q5_1)

/* ---- VNNI prefill (ncols >= 2), Q4_K and Q5_K: 16-row panels ------------
 * The tiles (tile_q4_k_512 / tile_q5_k_512: 512-bit maddubs + madd per
 * 64-element chunk and column) reached 90-208 GOPS, a third of the Q4_0
 * panels'. Here, as for the 32-element types, 16 rows of a super-block are
 * transposed once: kp->w[sb][k] has row i's unsigned weights 4k..4k+3 of
 * sub-block sb in lane i (Q5_K's fifth bit of sub-block sb is bit sb of
 * qh[l], element l), kp->sc[sb] = d scale_sb and kp->mn[sb] = dmin min_sb per
 * row, and each column costs 8 vpdpbusd per sub-block for 16 rows:
 *   acc += da (sum_sb sc_sb I_sb - sum_sb mn_sb bsum_sb),
 * bsum_sb = the column's sum of sub-block sb's activations (two bsums).
 * Same terms as the tiles; the float summation order differs. */
#define KPANEL_KSEG 4 /* super-blocks per segment: 20 KiB of panel */

struct kpanel {
  __m512i w[64]; /* Q4_K, Q5_K: [8 sb + k] (32-element sub-blocks); Q6_K: [4 sb + k] (16) */
  __m512 sc[16], mn[16];
};

VNNI_INLINE void kpanel_build(const uint8_t *pbase, size_t bb, int five, __m512i ridx,
                              __mmask16 m, int64_t b0, int kb, struct kpanel *kp) {
  const __m512i m4 = _mm512_set1_epi8(15), bit0 = _mm512_set1_epi8(1);
  const __m512i z = _mm512_setzero_si512();
  for (int j = 0; j < kb; j++) {
    const uint8_t *bp = pbase + (size_t)(b0 + j) * bb;
    struct kpanel *p = &kp[j];
    const __m512i dd = _mm512_mask_i32gather_epi32(z, m, ridx, bp, 1);
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
    const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
    /* the 6-bit scales and mins of quant_k4_scale_min, one row per lane */
    const __m512i D0 = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 4, 1);
    const __m512i D1 = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 8, 1);
    const __m512i D2 = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 12, 1);
    for (int sb = 0; sb < 8; sb++) {
      tm_v16u sc, mn;
      KQ_SCALE_MIN(tm_v16u, D0, D1, D2, sb, sc, mn);
      p->sc[sb] = _mm512_mul_ps(_mm512_cvtepi32_ps((__m512i)sc), d);
      p->mn[sb] = _mm512_mul_ps(_mm512_cvtepi32_ps((__m512i)mn), dmin);
    }
    const uint8_t *qs = bp + (five ? 48 : 16);
    for (int g = 0; g < 4; g++)
      for (int k = 0; k < 8; k++) {
        const __m512i raw = _mm512_mask_i32gather_epi32(z, m, ridx, qs + 32 * g + 4 * k, 1);
        p->w[8 * (2 * g) + k] = _mm512_and_si512(raw, m4);
        p->w[8 * (2 * g + 1) + k] = _mm512_and_si512(_mm512_srli_epi32(raw, 4), m4);
      }
    if (five)
      for (int k = 0; k < 8; k++) {
        const __m512i h = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 16 + 4 * k, 1);
        for (int sb = 0; sb < 8; sb++)
          p->w[8 * sb + k] = _mm512_or_si512(
              p->w[8 * sb + k], _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, sb), bit0), 4));
      }
  }
}

/* The columns of a K-quant panel; q6: Q6_K's 16 sub-blocks of 16 (its
 * offset term is -32 sc_sb bsum_sb: kp->mn holds sc), else 8 of 32 (the
 * mins' term -mn_sb (bsums_2sb + bsums_2sb+1)). */
VNNI_INLINE void kpanel_cols(const struct kpanel *kp, int kb, const int q6, const uint8_t *a,
                             size_t as, int64_t b0, const int nc, float *o, int64_t os,
                             __mmask16 m, int first) {
  const int nsb = q6 ? 16 : 8, nk = q6 ? 4 : 8, sbw = q6 ? 16 : 32;
  const __m512 moff = _mm512_set1_ps(q6 ? -32.0f : -1.0f);
  __m512 acc[4];
  for (int c = 0; c < nc; c++)
    acc[c] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, o + c * os);
  for (int j = 0; j < kb; j++) {
    const struct kpanel *p = &kp[j];
    const struct act_q8k *x[4];
    __m512 t[4], mt[4];
    for (int c = 0; c < nc; c++) {
      x[c] = (const struct act_q8k *)(a + c * as) + b0 + j;
      t[c] = mt[c] = _mm512_setzero_ps();
    }
    for (int sb = 0; sb < nsb; sb++) {
      __m512i I[4];
      for (int c = 0; c < nc; c++) I[c] = _mm512_setzero_si512();
      for (int k = 0; k < nk; k++) {
        const __m512i wk = p->w[nk * sb + k];
        for (int c = 0; c < nc; c++) {
          int32_t q4b;
          memcpy(&q4b, x[c]->q + sbw * sb + 4 * k, 4);
          I[c] = _mm512_dpbusd_epi32(I[c], wk, _mm512_set1_epi32(q4b));
        }
      }
      for (int c = 0; c < nc; c++) {
        t[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[c]), p->sc[sb], t[c]);
        const float bs = q6 ? (float)x[c]->bsums[sb]
                            : (float)(x[c]->bsums[2 * sb] + x[c]->bsums[2 * sb + 1]);
        mt[c] = _mm512_fmadd_ps(p->mn[sb], _mm512_set1_ps(bs), mt[c]);
      }
    }
    for (int c = 0; c < nc; c++)
      acc[c] = _mm512_fmadd_ps(_mm512_fmadd_ps(mt[c], moff, t[c]), _mm512_set1_ps(x[c]->d), acc[c]);
  }
  for (int c = 0; c < nc; c++) _mm512_mask_storeu_ps(o + c * os, m, acc[c]);
}

/* Q6_K: 16 sub-blocks of 16, signed 8-bit scales, q = u - 32 (u 6-bit).
 * Element 128 h + 32 u + l (l < 32) is nibble u / 2 of ql[64 h + 32 (u & 1)
 * + l] with bits 2u, 2u + 1 of qh[32 h + l] above it; kp->sc[sb] = d
 * scale_sb (and kp->mn[sb] the same), and a column adds da (sum sc_sb I_sb
 * - 32 sum sc_sb bsum_sb). */
VNNI_INLINE void q6panel_build(const uint8_t *pbase, __m512i ridx, __mmask16 m, int64_t b0,
                               int kb, struct kpanel *kp) {
  const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
  const __m512i z = _mm512_setzero_si512();
  for (int j = 0; j < kb; j++) {
    const uint8_t *bp = pbase + (size_t)(b0 + j) * sizeof(struct block_q6_k);
    struct kpanel *p = &kp[j];
    /* d is the block's last two bytes: read as the high half of the dword
     * at 206, so no lane reads past the block */
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
        _mm512_srli_epi32(_mm512_mask_i32gather_epi32(z, m, ridx, bp + 206, 1), 16)));
    for (int g = 0; g < 4; g++) {
      const __m512i S = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 192 + 4 * g, 1);
      for (int b = 0; b < 4; b++)
        p->sc[4 * g + b] = p->mn[4 * g + b] = _mm512_mul_ps(
            _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(S, 24 - 8 * b), 24)), d);
    }
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 8; k++) {
        const __m512i H = _mm512_mask_i32gather_epi32(z, m, ridx, bp + 128 + 32 * h + 4 * k, 1);
        for (int half = 0; half < 2; half++) {
          const __m512i G =
              _mm512_mask_i32gather_epi32(z, m, ridx, bp + 64 * h + 32 * half + 4 * k, 1);
          for (int up = 0; up < 2; up++) {
            const int u = half + 2 * up; /* low nibbles: u = half; high: half + 2 */
            const __m512i nib = _mm512_and_si512(up ? _mm512_srli_epi32(G, 4) : G, m4);
            const __m512i hi2 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(H, 2 * u), m3), 4);
            p->w[4 * (8 * h + 2 * u + (k >> 2)) + (k & 3)] = _mm512_or_si512(nib, hi2);
          }
        }
      }
  }
}

/* kind: 0 Q4_K, 1 Q5_K, 2 Q6_K. */
VNNI_INLINE void kpanel_gemm(const int kind, int64_t n, const uint8_t *w, size_t w_stride,
                             int64_t r0, int64_t r1, const uint8_t *a, size_t as, int64_t ncols,
                             float *out, int64_t os) {
  const int64_t nb = n / QK_K;
  const size_t bb = kind == 1 ? sizeof(struct block_q5_k) : sizeof(struct block_q4_k);
  alignas(64) struct kpanel kp[KPANEL_KSEG];
  const __m512i ridx = panel_ridx(w_stride);
#define KPANEL_BUILD                                      \
  if (kind == 2) q6panel_build(pbase, ridx, m, s, kb, kp); \
  else kpanel_build(pbase, bb, kind == 1, ridx, m, s, kb, kp)
#define KPANEL_COLS(nc) \
  kpanel_cols(kp, kb, kind == 2, a + c * as, as, s, nc, out + c * os + p, os, m, s == 0)
  PANEL_DRIVE(nb, KPANEL_KSEG, KPANEL_BUILD, KPANEL_COLS)
#undef KPANEL_BUILD
#undef KPANEL_COLS
}

/* One function per K-quant, the kind a constant inside it. */
#define DEFINE_KPANEL_GEMM(name, kind)                                                             \
  VNNI void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,      \
                        const uint8_t *a, size_t as, int64_t ncols, float *out, int64_t os) {      \
    kpanel_gemm(kind, n, w, w_stride, r0, r1, a, as, ncols, out, os);                              \
  }
DEFINE_KPANEL_GEMM(avx512_kpanel_gemm_q4_k, 0)
DEFINE_KPANEL_GEMM(avx512_kpanel_gemm_q5_k, 1)
DEFINE_KPANEL_GEMM(avx512_kpanel_gemm_q6_k, 2)
#endif
