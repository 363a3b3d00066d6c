/* kernels_avx2_kquant: the AVX2 path's kernels for the K-quants (Q4_K,
 * Q5_K, Q6_K; kernels_avx2.h says how the path is split): the per-super-block
 * tiles, the four-stream decode kernels (one column), the 8-row prefill
 * panels of super-blocks, and their table entries. */
#include "engine/kernels_avx2.h"

#if defined(__x86_64__)
#include <string.h>

#include "gguf/quant_ref.h"

/* ---- K-quants ----------------------------------------------------------- */

/* Q4_K/Q5_K 12-byte scales -> sc[0..7] in bytes 0..7, m[0..7] in bytes 8..15
 * (the same unpacking as quant_k4_scale_min, four sub-blocks at a time). */
AVX2_INLINE void k4_unpack_scales(const uint8_t *s, uint8_t out[16]) {
  uint32_t u[4];
  memcpy(u, s, 12);
  const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
  u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
  uint32_t mins_lo = u[1] & m6;
  u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
  u[2] = mins_lo;
  u[0] &= m6;
  memcpy(out, u, 16);
}

/* Q4_K, and Q5_K (FIVE; its qh bytes: element l of sub-block k takes bit k
 * of qh[l] as bit 4), which ran on the scalar kernels until 2026-11-30.
 * WB: the block type (block_q4_k or block_q5_k: d, dmin, scales, [qh,] qs). */
#define DEFINE_TILE_QK45(name, WB, FIVE)                                                        \
  AVX2_INLINE void name(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as, const int nc, \
                        float *o, int64_t os) {                                                 \
    const WB *w = (const WB *)wr;                                                               \
    const int64_t nb = n / QK_K;                                                                \
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);                         \
    __m256 acc[4], accm[4];                                                                     \
    for (int c = 0; c < nc; c++) acc[c] = accm[c] = _mm256_setzero_ps();                        \
    for (int64_t b = 0; b < nb; b++) {                                                          \
      PREFETCH_W(&w[b], sizeof w[b]);                                                           \
      uint8_t sm[16];                                                                           \
      k4_unpack_scales(w[b].scales, sm);                                                        \
      float d = h2f(w[b].d), dmin = h2f(w[b].dmin);                                             \
      __m128i mins8 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(sm + 8)));            \
      __m256i mins =                                                                            \
          _mm256_set_m128i(_mm_unpackhi_epi16(mins8, mins8), _mm_unpacklo_epi16(mins8, mins8));  \
      __m256i q[8];                                                                             \
      for (int j = 0; j < 4; j++) {                                                             \
        __m256i raw = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * j));                 \
        q[2 * j] = _mm256_and_si256(raw, m4);                                                   \
        q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);                         \
      }                                                                                         \
      if (FIVE) QK5_HIGH_BITS(w[b], q, one);                                                    \
      QK45_COLUMNS                                                                              \
    }                                                                                           \
    for (int c = 0; c < nc; c++) o[c * os] = hsum_ps(acc[c]) - hsum_ps(accm[c]);                \
  }

/* q[k] |= bit k of each qh byte, moved to bit 4 (a 16-bit shift of at most 7
 * keeps each byte's bit 0 its own). Only expanded for block_q5_k. */
#define QK5_HIGH_BITS(blk, q, one)                                                              \
  do {                                                                                          \
    const __m256i qh = _mm256_loadu_si256((const __m256i *)((const struct block_q5_k *)&(blk))->qh); \
    for (int k = 0; k < 8; k++)                                                                 \
      (q)[k] = _mm256_or_si256(                                                                 \
          (q)[k], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, k), (one)), 4));     \
  } while (0)

#define QK45_COLUMNS                                                                            \
  for (int c = 0; c < nc; c++) {                                                                \
    const struct act_q8k *x = (const struct act_q8k *)(a + c * as) + b;                         \
    __m256i sumi = _mm256_setzero_si256();                                                      \
    for (int j = 0; j < 8; j++) {                                                               \
      __m256i p = _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i *)(x->q + 32 * j))); \
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16(sm[j])));            \
    }                                                                                           \
    __m256i pm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums), mins);        \
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * x->d), acc[c]);       \
    accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pm), _mm256_set1_ps(dmin * x->d), accm[c]);    \
  }

DEFINE_TILE_QK45(tile_q4_k, struct block_q4_k, 0)
DEFINE_TILE_QK45(tile_q5_k, struct block_q5_k, 1)


/* Q6_K's sixteen 8-bit scales, widened to 16 bits, one pair per madd: a
 * vector whose low 128 bits hold scale 2k and whose high 128 bits hold scale
 * 2k + 1, each repeated, is one vpshufb of the block's scales widened and
 * copied to both lanes (half = scales 0-7 or 8-15), with these byte masks
 * (k mod 4): building it from two scalar loads and broadcasts cost four
 * instructions a product and held the kernel compute-bound. */
#define Q6_PAIR_MASK(k)                                                                  \
  _mm256_setr_epi8(4 * (k), 4 * (k) + 1, 4 * (k), 4 * (k) + 1, 4 * (k), 4 * (k) + 1,          \
                   4 * (k), 4 * (k) + 1, 4 * (k), 4 * (k) + 1, 4 * (k), 4 * (k) + 1,          \
                   4 * (k), 4 * (k) + 1, 4 * (k), 4 * (k) + 1, 4 * (k) + 2, 4 * (k) + 3,      \
                   4 * (k) + 2, 4 * (k) + 3, 4 * (k) + 2, 4 * (k) + 3, 4 * (k) + 2,           \
                   4 * (k) + 3, 4 * (k) + 2, 4 * (k) + 3, 4 * (k) + 2, 4 * (k) + 3,           \
                   4 * (k) + 2, 4 * (k) + 3, 4 * (k) + 2, 4 * (k) + 3)

AVX2_INLINE void tile_q6_k(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                           const int nc, float *o, int64_t os) {
  const struct block_q6_k *w = (const struct block_q6_k *)wr;
  const int64_t nb = n / QK_K;
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  __m256 acc[4];
  for (int c = 0; c < nc; c++) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    PREFETCH_W(&w[b], sizeof w[b]);
    float d = h2f(w[b].d);
    __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
    __m256i q[8], scv[8];
    for (int h = 0; h < 2; h++) {
      __m256i ql0 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h));
      __m256i ql1 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h + 32));
      __m256i qh = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * h));
      q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
    }
    const __m256i sc_half[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                                _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    scv[0] = _mm256_shuffle_epi8(sc_half[0], Q6_PAIR_MASK(0));
    scv[1] = _mm256_shuffle_epi8(sc_half[0], Q6_PAIR_MASK(1));
    scv[2] = _mm256_shuffle_epi8(sc_half[0], Q6_PAIR_MASK(2));
    scv[3] = _mm256_shuffle_epi8(sc_half[0], Q6_PAIR_MASK(3));
    scv[4] = _mm256_shuffle_epi8(sc_half[1], Q6_PAIR_MASK(0));
    scv[5] = _mm256_shuffle_epi8(sc_half[1], Q6_PAIR_MASK(1));
    scv[6] = _mm256_shuffle_epi8(sc_half[1], Q6_PAIR_MASK(2));
    scv[7] = _mm256_shuffle_epi8(sc_half[1], Q6_PAIR_MASK(3));
    for (int c = 0; c < nc; c++) {
      const struct act_q8k *x = (const struct act_q8k *)(a + c * as) + b;
      __m256i sumi = _mm256_setzero_si256();
      for (int k = 0; k < 8; k++) {
        __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(x->q + 32 * k)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scv[k]));
      }
      __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums), sc16);
      sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 5));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * x->d), acc[c]);
    }
  }
  for (int c = 0; c < nc; c++) o[c * os] = hsum_ps(acc[c]);
}

/* ---- decode (ncols = 1) Q6_K, Q4_K, Q5_K: four row streams ---------------
 * Q6_K: kernels_avx2.h's DEFINE_GEMV4_AVX2 with one block as BLOCK; Q4_K and
 * Q5_K: their own driver (DEFINE_GEMV4_KM, below), which shares the scaling
 * of a block across the four rows. */
AVX2_INLINE void q6_k_row_block(const struct block_q6_k *wb, const struct act_q8k *x,
                                __m256 *acc) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)wb->scales));
  const __m256i pair_mask[4] = {Q6_PAIR_MASK(0), Q6_PAIR_MASK(1), Q6_PAIR_MASK(2),
                                Q6_PAIR_MASK(3)};
  const __m256i sc_half[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                              _mm256_permute2x128_si256(sc16, sc16, 0x11)};
  __m256i sumi = _mm256_setzero_si256();
  for (int h = 0; h < 2; h++) {
    const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(wb->ql + 64 * h));
    const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(wb->ql + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(wb->qh + 32 * h));
    const __m256i q[4] = {
        _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
        _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                        _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30))};
    for (int j = 0; j < 4; j++) {
      const int k = 4 * h + j;
      const __m256i scv = _mm256_shuffle_epi8(sc_half[h], pair_mask[j]);
      const __m256i p =
          _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i *)(x->q + 32 * k)));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scv));
    }
  }
  const __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums), sc16);
  sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 5));
  *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(h2f(wb->d) * x->d), *acc);
}

DEFINE_GEMV4_AVX2(gemv_q6_k_avx2, struct block_q6_k, struct act_q8k, QK_K, q6_k_row_block)


/* Q4_K and Q5_K decode: the tile kernels, given one column, unpacked the
 * scales through memory and broadcast each from a byte, and read 55-62% of
 * the probe's loop (bench/kernel_bench.c, forced AVX2 on the team's Xeon).
 * Here the twelve scale bytes are unpacked in one register, each sub-block's
 * scale is one vpshufb of them, and four rows go together (DEFINE_GEMV4_KM).
 * FIVE: Q5_K's fifth bits (QK5_HIGH_BITS). */
AVX2_INLINE __m256i qk45_scales16(const uint8_t *scales) {
  uint32_t u2;
  memcpy(&u2, scales + 8, 4);
  const __m128i v = _mm_insert_epi32(_mm_loadl_epi64((const __m128i *)scales), (int)u2, 2);
  const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));   /* u0 u2 u1 u2 */
  const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));   /* u0 u0 u1 u1 */
  const __m128i lo = _mm_and_si128(a, _mm_set1_epi8(0x3f));
  const __m128i t = _mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4));
  const __m128i hi = _mm_or_si128(
      _mm_and_si128(t, _mm_set1_epi8(0x0f)),
      _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(b, 6), _mm_set1_epi8(0x03)), 4));
  /* 16-bit lanes: scales 0-7, mins 0-7 (k4_unpack_scales' order) */
  return _mm256_cvtepu8_epi16(_mm_blend_epi32(lo, hi, 0xA));
}

/* A block's integer part: sum over sub-blocks of scale x (q . a), in eight
 * i32 lanes; *s16 gets qk45_scales16 of its scales. */
#define DEFINE_QK45_SUMI(name, WB, FIVE)                                                        \
  AVX2_INLINE __m256i name(const WB *wb, const struct act_q8k *x, __m256i *s16) {               \
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);                         \
    *s16 = qk45_scales16(wb->scales);                                                           \
    const __m256i sc2 = _mm256_permute2x128_si256(*s16, *s16, 0x00);                            \
    __m256i q[8];                                                                               \
    for (int j = 0; j < 4; j++) {                                                               \
      const __m256i raw = _mm256_loadu_si256((const __m256i *)(wb->qs + 32 * j));               \
      q[2 * j] = _mm256_and_si256(raw, m4);                                                     \
      q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);                           \
    }                                                                                           \
    if (FIVE) QK5_HIGH_BITS(*wb, q, one);                                                       \
    __m256i sumi = _mm256_setzero_si256();                                                      \
    for (int k = 0; k < 8; k++) {                                                               \
      const __m256i sv = _mm256_shuffle_epi8(                                                   \
          sc2, _mm256_set1_epi16((short)((2 * k) | ((2 * k + 1) << 8))));                       \
      const __m256i p =                                                                         \
          _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(x->q + 32 * k)));     \
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sv));                                  \
    }                                                                                           \
    return sumi;                                                                                \
  }
DEFINE_QK45_SUMI(q4_k_sumi, struct block_q4_k, 0)
DEFINE_QK45_SUMI(q5_k_sumi, struct block_q5_k, 1)

/* After the integer sums, what scales them and the mins' term was ~13
 * operations a row (three scalar fp16 conversions and broadcasts among
 * them); four rows share it here, as kernels_avx512_kquant.c's DEFINE_KM_BLOCKS
 * does: their d and dmin one cvtph (times da), two rows' mins per madd
 * against the block's bsums summed in pairs. Row s: acc[s] (8 lanes) +=
 * cvt(sumi_s) d_s da; accm[s / 2] lanes 4 (s % 2)..+3 += cvt(madd(mins_s,
 * bs8)) dmin_s da; its value sum(acc[s]) - sum(its four accm lanes). The
 * one-row path does the same per lane (a row's value does not depend on
 * where it falls). */
AVX2_INLINE float hsum4_ps(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}
AVX2_INLINE __m256 qk45_dv(uint64_t d4, uint64_t dmin4, float da) {
  return _mm256_mul_ps(_mm256_cvtph_ps(_mm_set_epi64x((long long)dmin4, (long long)d4)),
                       _mm256_set1_ps(da));
}
AVX2_INLINE __m256i qk45_bs8(const struct act_q8k *x) {
  const __m256i p = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums),
                                      _mm256_set1_epi16(1));
  return _mm256_broadcastsi128_si256(
      _mm_packs_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1)));
}

#define DEFINE_QK45_BLOCKS(four, one, WB, SUMI)                                                 \
  AVX2_INLINE void four(const uint8_t *wa, size_t qs, int64_t k, const struct act_q8k *x,       \
                        __m256 *acc4, __m256 *accm2) {                                          \
    __m256i s16[4], sumi[4];                                                                    \
    uint64_t d4 = 0, dmin4 = 0;                                                                 \
    for (int s = 0; s < 4; s++) {                                                               \
      const WB *wb = (const WB *)(wa + s * qs) + k;                                             \
      PREFETCH_W(wb, sizeof(WB));                                                               \
      sumi[s] = SUMI(wb, x, &s16[s]);                                                           \
      d4 |= (uint64_t)wb->d << (16 * s);                                                        \
      dmin4 |= (uint64_t)wb->dmin << (16 * s);                                                  \
    }                                                                                           \
    const __m256 dv = qk45_dv(d4, dmin4, x->d);                                                 \
    for (int s = 0; s < 4; s++)                                                                 \
      acc4[s] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[s]),                                    \
                                _mm256_permutevar8x32_ps(dv, _mm256_set1_epi32(s)), acc4[s]);   \
    const __m256i bs8 = qk45_bs8(x);                                                            \
    for (int h = 0; h < 2; h++) {                                                               \
      const __m256i mins = _mm256_permute2x128_si256(s16[2 * h], s16[2 * h + 1], 0x31);         \
      const __m256 dm = _mm256_permutevar8x32_ps(                                               \
          dv, _mm256_setr_epi32(4 + 2 * h, 4 + 2 * h, 4 + 2 * h, 4 + 2 * h, 5 + 2 * h, 5 + 2 * h, \
                                5 + 2 * h, 5 + 2 * h));                                         \
      accm2[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(mins, bs8)), dm, accm2[h]); \
    }                                                                                           \
  }                                                                                             \
  AVX2_INLINE void one(const WB *wb, const struct act_q8k *x, __m256 *acc, __m128 *accm) {      \
    PREFETCH_W(wb, sizeof(WB));                                                                 \
    __m256i s16;                                                                                \
    const __m256i sumi = SUMI(wb, x, &s16);                                                     \
    const __m256 dv = qk45_dv(wb->d, wb->dmin, x->d);                                           \
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi),                                            \
                           _mm256_permutevar8x32_ps(dv, _mm256_setzero_si256()), *acc);         \
    const __m128i p = _mm_madd_epi16(_mm256_extracti128_si256(s16, 1),                          \
                                     _mm256_castsi256_si128(qk45_bs8(x)));                      \
    *accm = _mm_fmadd_ps(_mm_cvtepi32_ps(p),                                                    \
                         _mm256_castps256_ps128(_mm256_permutevar8x32_ps(dv, _mm256_set1_epi32(4))), \
                         *accm);                                                                \
  }
DEFINE_QK45_BLOCKS(q4_k_four, q4_k_one, struct block_q4_k, q4_k_sumi)
DEFINE_QK45_BLOCKS(q5_k_four, q5_k_one, struct block_q5_k, q5_k_sumi)

#define DEFINE_GEMV4_KM(name, WBLOCK, FOUR, ONE)                                                \
  AVX2 static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,  \
                        const struct act_q8k *x, float *out) {                                \
    const int64_t nb = n / QK_K, q = (r1 - r0) / 4;                                           \
    const size_t qs = (size_t)q * w_stride;                                                   \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES); \
    for (int64_t i = 0; i < q; i++) {                                                         \
      const uint8_t *wa = w + (size_t)(r0 + i) * w_stride;                                    \
      __m256 a[4], m[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};                         \
      for (int s = 0; s < 4; s++) a[s] = _mm256_setzero_ps();                                 \
      for (int64_t k = 0; k < nb; k++) FOUR(wa, qs, k, x + k, a, m);                           \
      for (int s = 0; s < 4; s++) {                                                           \
        const __m128 ms = (s & 1) ? _mm256_extractf128_ps(m[s / 2], 1)                        \
                                  : _mm256_castps256_ps128(m[s / 2]);                         \
        out[r0 + s * q + i] = hsum_ps(a[s]) - hsum4_ps(ms);                                   \
      }                                                                                       \
    }                                                                                         \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                               \
      const WBLOCK *wr = (const WBLOCK *)(w + (size_t)r * w_stride);                          \
      __m256 a = _mm256_setzero_ps();                                                         \
      __m128 m = _mm_setzero_ps();                                                            \
      for (int64_t k = 0; k < nb; k++) ONE(wr + k, x + k, &a, &m);                            \
      out[r] = hsum_ps(a) - hsum4_ps(m);                                                      \
    }                                                                                         \
  }

DEFINE_GEMV4_KM(gemv_q4_k_avx2, struct block_q4_k, q4_k_four, q4_k_one)
DEFINE_GEMV4_KM(gemv_q5_k_avx2, struct block_q5_k, q5_k_four, q5_k_one)

DEFINE_X86_GEMM(AVX2, gemm_q4_k, tile_q4_k)
DEFINE_X86_GEMM(AVX2, gemm_q5_k, tile_q5_k)
DEFINE_X86_GEMM(AVX2, gemm_q6_k, tile_q6_k)

/* ---- prefill (ncols >= 2), Q4_K, Q5_K, Q6_K: 8-row panels of super-blocks
 * The tiles spend per sub-block of 32 and column a maddubs, a madd with the
 * scales and an add (about 8 multiply-adds an operation); here 8 rows of a
 * super-block are transposed once (kernels_avx512_panels.c's kpanel_build on 8
 * lanes: sc = d scale, mn = dmin min per row lane; Q6_K: 16 sub-blocks of
 * 16, mn = sc), and a sub-block costs per column its maddubs (8 rows x 4
 * weights each), their i16 sums folded into one madd as far as 16 bits
 * hold them (4 groups for u <= 31, 2 for Q6_K's u <= 63; Q4_K could take
 * 8, but 4 measured 15% faster), a convert and an FMA with
 * the row scales: about 14 multiply-adds an operation. Per column and
 * super-block: acc += da (sum sc_sb I_sb + moff sum mn_sb bsum_sb), moff =
 * -1 (mins) or -32 (Q6_K's offset). */
#define AKPANEL_KSEG 4
struct akpanel {
  __m256i w[64]; /* [nk sb + k]: Q4_K / Q5_K nk = 8 (sub-blocks of 32), Q6_K nk = 4 */
  __m256 sc[16], mn[16];
};

AVX2_INLINE void akpanel_build(const uint8_t *pbase, __m256i ridx, __m256i lanes, int64_t b0,
                               int kb, const int kind, struct akpanel *kp) {
  const __m256i z = _mm256_setzero_si256(), m4 = _mm256_set1_epi8(15);
  for (int j = 0; j < kb; j++) {
    struct akpanel *p = &kp[j];
    if (kind == 2) { /* Q6_K */
      const uint8_t *bp = pbase + (size_t)(b0 + j) * sizeof(struct block_q6_k);
      const __m256 d = apanel_f16_lo(
          _mm256_srli_epi32(_mm256_mask_i32gather_epi32(z, (const int *)(bp + 206), ridx, lanes, 1), 16));
      for (int g = 0; g < 4; g++) {
        const __m256i S = _mm256_mask_i32gather_epi32(z, (const int *)(bp + 192 + 4 * g), ridx, lanes, 1);
        for (int b = 0; b < 4; b++)
          p->sc[4 * g + b] = p->mn[4 * g + b] = _mm256_mul_ps(
              _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(S, 24 - 8 * b), 24)), d);
      }
      const __m256i m3 = _mm256_set1_epi8(3);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 8; k++) {
          const __m256i H =
              _mm256_mask_i32gather_epi32(z, (const int *)(bp + 128 + 32 * h + 4 * k), ridx, lanes, 1);
          for (int half = 0; half < 2; half++) {
            const __m256i G = _mm256_mask_i32gather_epi32(
                z, (const int *)(bp + 64 * h + 32 * half + 4 * k), ridx, lanes, 1);
            for (int up = 0; up < 2; up++) {
              const int u = half + 2 * up;
              const __m256i nib = _mm256_and_si256(up ? _mm256_srli_epi32(G, 4) : G, m4);
              const __m256i hi2 =
                  _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(H, 2 * u), m3), 4);
              p->w[4 * (8 * h + 2 * u + (k >> 2)) + (k & 3)] = _mm256_or_si256(nib, hi2);
            }
          }
        }
      continue;
    }
    const int five = kind == 1;
    const uint8_t *bp =
        pbase + (size_t)(b0 + j) * (five ? sizeof(struct block_q5_k) : sizeof(struct block_q4_k));
    const __m256i dd = _mm256_mask_i32gather_epi32(z, (const int *)bp, ridx, lanes, 1);
    const __m256 d = apanel_f16_lo(dd), dmin = apanel_f16_lo(_mm256_srli_epi32(dd, 16));
    const __m256i D0 = _mm256_mask_i32gather_epi32(z, (const int *)(bp + 4), ridx, lanes, 1);
    const __m256i D1 = _mm256_mask_i32gather_epi32(z, (const int *)(bp + 8), ridx, lanes, 1);
    const __m256i D2 = _mm256_mask_i32gather_epi32(z, (const int *)(bp + 12), ridx, lanes, 1);
    for (int sb = 0; sb < 8; sb++) {
      tm_v8u sc, mn;
      KQ_SCALE_MIN(tm_v8u, D0, D1, D2, sb, sc, mn);
      p->sc[sb] = _mm256_mul_ps(_mm256_cvtepi32_ps((__m256i)sc), d);
      p->mn[sb] = _mm256_mul_ps(_mm256_cvtepi32_ps((__m256i)mn), dmin);
    }
    const uint8_t *qs = bp + (five ? 48 : 16);
    for (int g = 0; g < 4; g++)
      for (int k = 0; k < 8; k++) {
        const __m256i raw =
            _mm256_mask_i32gather_epi32(z, (const int *)(qs + 32 * g + 4 * k), ridx, lanes, 1);
        p->w[8 * (2 * g) + k] = _mm256_and_si256(raw, m4);
        p->w[8 * (2 * g + 1) + k] = _mm256_and_si256(_mm256_srli_epi32(raw, 4), m4);
      }
    if (five) {
      const __m256i bit0 = _mm256_set1_epi8(1);
      for (int k = 0; k < 8; k++) {
        const __m256i h =
            _mm256_mask_i32gather_epi32(z, (const int *)(bp + 16 + 4 * k), ridx, lanes, 1);
        for (int sb = 0; sb < 8; sb++)
          p->w[8 * sb + k] = _mm256_or_si256(
              p->w[8 * sb + k],
              _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, sb), bit0), 4));
      }
    }
  }
}

AVX2_INLINE void akpanel_cols(const struct akpanel *kp, int kb, const int kind, const uint8_t *a,
                              size_t as, int64_t b0, const int nc, float *o, int64_t os,
                              __m256i lanes, int first) {
  const int q6 = kind == 2, nsb = q6 ? 16 : 8, nk = q6 ? 4 : 8, sbw = q6 ? 16 : 32;
  const int fold = q6 ? 2 : 4; /* i16-safe groups per madd */
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256 moff = _mm256_set1_ps(q6 ? -32.0f : -1.0f);
  __m256 acc[4];
  for (int c = 0; c < nc; c++)
    acc[c] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(o + c * os, lanes);
  for (int j = 0; j < kb; j++) {
    const struct akpanel *p = &kp[j];
    const struct act_q8k *x[4];
    __m256 t[4], mt[4];
    for (int c = 0; c < nc; c++) {
      x[c] = (const struct act_q8k *)(a + c * as) + b0 + j;
      t[c] = mt[c] = _mm256_setzero_ps();
    }
    for (int sb = 0; sb < nsb; sb++) {
      __m256i I[4];
      for (int c = 0; c < nc; c++) I[c] = _mm256_setzero_si256();
      for (int k0 = 0; k0 < nk; k0 += fold) {
        __m256i s16[4];
        for (int c = 0; c < nc; c++) s16[c] = _mm256_setzero_si256();
        for (int k = k0; k < k0 + fold && k < nk; k++) {
          const __m256i wk = p->w[nk * sb + k];
          for (int c = 0; c < nc; c++) {
            int32_t q4b;
            memcpy(&q4b, x[c]->q + sbw * sb + 4 * k, 4);
            s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(wk, _mm256_set1_epi32(q4b)));
          }
        }
        for (int c = 0; c < nc; c++) I[c] = _mm256_add_epi32(I[c], _mm256_madd_epi16(s16[c], ones));
      }
      for (int c = 0; c < nc; c++) {
        t[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[c]), p->sc[sb], t[c]);
        const float bs = q6 ? (float)x[c]->bsums[sb]
                            : (float)(x[c]->bsums[2 * sb] + x[c]->bsums[2 * sb + 1]);
        mt[c] = _mm256_fmadd_ps(p->mn[sb], _mm256_set1_ps(bs), mt[c]);
      }
    }
    for (int c = 0; c < nc; c++)
      acc[c] = _mm256_fmadd_ps(_mm256_fmadd_ps(mt[c], moff, t[c]), _mm256_set1_ps(x[c]->d), acc[c]);
  }
  for (int c = 0; c < nc; c++) _mm256_maskstore_ps(o + c * os, lanes, acc[c]);
}

/* kind: 0 Q4_K, 1 Q5_K, 2 Q6_K. */
AVX2_INLINE void akpanel_gemm(const int kind, int64_t n, const uint8_t *w, size_t w_stride,
                              int64_t r0, int64_t r1, const uint8_t *a, size_t as, int64_t ncols,
                              float *out, int64_t os) {
  struct akpanel kp[AKPANEL_KSEG];
#define AK_COLS(nc) \
  akpanel_cols(kp, kb, kind, a + c * as, as, s, nc, out + c * os + p, os, lanes, s == 0)
  APANEL_DRIVE(n / QK_K, AKPANEL_KSEG, akpanel_build(pbase, ridx, lanes, s, kb, kind, kp), AK_COLS)
#undef AK_COLS
}

/* The entries, as kernels_avx2_q32.c's: the decode kernel for one column,
 * the panels for min_cols columns or more (strides within the gathers'
 * 32-bit reach), the tiles otherwise. min_cols: Q6_K's panels pay for their
 * build from 6 columns (/tmp harness, 3072 x 1024 from cache, GOPS at 2 / 4
 * / 8 columns: tiles 76 / 98 / 98, panels 52 / 83 / 113); Q4_K's and Q5_K's
 * are as fast or faster from 2. */
#define DEFINE_AVX2_K_FAST(name, gemv, kind, min_cols, tiles)                                 \
  AVX2 static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,    \
                        const void *a, size_t a_stride, int64_t ncols, float *out,            \
                        int64_t out_stride) {                                                 \
    if (ncols == 1)                                                                           \
      gemv(n, w, w_stride, r0, r1, a, out);                                                   \
    else if (ncols >= (min_cols) && w_stride <= (size_t)(INT32_MAX / 8))                      \
      akpanel_gemm(kind, n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);        \
    else                                                                                      \
      tiles(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                     \
  }
DEFINE_AVX2_K_FAST(gemm_q4_k_fast, gemv_q4_k_avx2, 0, 2, gemm_q4_k)
DEFINE_AVX2_K_FAST(gemm_q5_k_fast, gemv_q5_k_avx2, 1, 2, gemm_q5_k)
DEFINE_AVX2_K_FAST(gemm_q6_k_fast, gemv_q6_k_avx2, 2, 6, gemm_q6_k)

void kernels_fill_avx2_kquant(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_fast;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_fast;
}
#endif
