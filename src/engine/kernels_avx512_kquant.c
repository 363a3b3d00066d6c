/* kernels_avx512_kquant: the AVX-512 path's K-quant kernels (Q4_K, Q5_K,
 * Q6_K; kernels_avx512.h says how the path is split): decode by four-stream
 * kernels, the 512-bit prompt tiles (the VNNI path's fallback), and the table
 * entries of both AVX-512 paths for these types. */
#include "engine/kernels_avx512.h"

#if defined(__x86_64__)
#include <stdalign.h>
#include <string.h>

#include "gguf/quant_ref.h"

/* ---- K-quants, 512-bit maddubs ------------------------------------------ */

/* Same unpacking as kernels_avx2_kquant.c's (sc in bytes 0..7, m in 8..15). */
AVX512_INLINE void k4_scales(const uint8_t *s, uint8_t out[16]) {
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

AVX512_INLINE __m512i join256(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

AVX512_INLINE void tile_q4_k_512(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                                 const int nc, float *o, int64_t os) {
  const struct block_q4_k *w = (const struct block_q4_k *)wr;
  const int64_t nb = n / QK_K;
  const __m256i m4 = _mm256_set1_epi8(15);
  __m256 acc[4], accm[4];
  for (int c = 0; c < nc; c++) acc[c] = accm[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    PREFETCH_W(&w[b], sizeof w[b]);
    uint8_t sm[16];
    k4_scales(w[b].scales, sm);
    float d = _cvtsh_ss(w[b].d), dmin = _cvtsh_ss(w[b].dmin);
    __m128i mins8 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(sm + 8)));
    __m256i mins = _mm256_set_m128i(_mm_unpackhi_epi16(mins8, mins8), _mm_unpacklo_epi16(mins8, mins8));
    __m512i q[4], scv[4];
    for (int j = 0; j < 4; j++) {
      __m256i raw = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * j));
      q[j] = join256(_mm256_and_si256(raw, m4), _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
      scv[j] = join256(_mm256_set1_epi16(sm[2 * j]), _mm256_set1_epi16(sm[2 * j + 1]));
    }
    for (int c = 0; c < nc; c++) {
      const struct act_q8k *x = (const struct act_q8k *)(a + c * as) + b;
      __m512i sumi = _mm512_setzero_si512();
      for (int j = 0; j < 4; j++) {
        __m512i p = _mm512_maddubs_epi16(q[j], _mm512_loadu_si512(x->q + 64 * j));
        sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, scv[j]));
      }
      __m256i s256 = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
      __m256i pm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums), mins);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s256), _mm256_set1_ps(d * x->d), acc[c]);
      accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pm), _mm256_set1_ps(dmin * x->d), accm[c]);
    }
  }
  for (int c = 0; c < nc; c++) o[c * os] = hsum256(acc[c]) - hsum256(accm[c]);
}

AVX512_INLINE void tile_q6_k_512(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                                 const int nc, float *o, int64_t os) {
  const struct block_q6_k *w = (const struct block_q6_k *)wr;
  const int64_t nb = n / QK_K;
  const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  /* i16 lane l of a 64-byte product belongs to 16-group l / 8 of the chunk */
  const __m512i idx = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,
                                       1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m256 acc[4];
  for (int c = 0; c < nc; c++) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    PREFETCH_W(&w[b], sizeof w[b]);
    float d = _cvtsh_ss(w[b].d);
    __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
    __m512i sc512 = _mm512_castsi256_si512(sc16);
    __m512i q[4], scv[4];
    for (int h = 0; h < 2; h++) {
      __m512i ql = _mm512_loadu_si512(w[b].ql + 64 * h);
      __m256i qh = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * h));
      __m512i qha = join256(_mm256_slli_epi16(qh, 4), _mm256_slli_epi16(qh, 2));
      __m512i qhb = join256(qh, _mm256_srli_epi16(qh, 2));
      q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(qha, m30));
      q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                     _mm512_and_si512(qhb, m30));
    }
    for (int k = 0; k < 4; k++)
      scv[k] = _mm512_permutexvar_epi16(_mm512_add_epi16(idx, _mm512_set1_epi16((short)(4 * k))), sc512);
    for (int c = 0; c < nc; c++) {
      const struct act_q8k *x = (const struct act_q8k *)(a + c * as) + b;
      __m512i sumi = _mm512_setzero_si512();
      for (int k = 0; k < 4; k++) {
        __m512i p = _mm512_maddubs_epi16(q[k], _mm512_loadu_si512(x->q + 64 * k));
        sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, scv[k]));
      }
      __m256i s256 = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
      __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums), sc16);
      s256 = _mm256_sub_epi32(s256, _mm256_slli_epi32(off, 5));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s256), _mm256_set1_ps(d * x->d), acc[c]);
    }
  }
  for (int c = 0; c < nc; c++) o[c * os] = hsum256(acc[c]);
}

/* Decode (ncols = 1) Q6_K: the same per-block operations as tile_q6_k_512
 * with nc = 1 (same bits), rows in four interleaved streams: this is the
 * output head's kernel. Q6_MATH is one block's arithmetic on its loaded
 * parts (ql as two 64-byte halves, qh, the 16 scales, d); Q6_ACCUM(sumi, p,
 * s) adds the i16 products p times the sub-block scales s to sumi: madd +
 * add on AVX-512, one vpdpwssd with VNNI (the same exact int32 sums). */
/* Q6_MATH in two parts, so a few-column product (few_q6_k_vnni) unpacks a
 * block once for all its columns: Q6_UNPACK fills a struct q6_unpacked (the
 * 6-bit values of half h against activation bytes 128h .. 128h + 127, their
 * sub-block scales as i16 pairs, the 16 scales, the block scale), Q6_COL
 * applies it to one column's activation block. */
struct q6_unpacked {
  __m512i q[2][2], s[2][2];
  __m256i sc16;
  float dsc;
};
#define Q6_UNPACK(u, ql0, ql1, qh, scales, dh)                                                \
  do {                                                                                        \
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);                    \
    const __m512i idx = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,       \
                                         1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);      \
    (u).dsc = _cvtsh_ss(dh);                                                                  \
    (u).sc16 = _mm256_cvtepi8_epi16(scales);                                                  \
    const __m512i sc512 = _mm512_castsi256_si512((u).sc16);                                   \
    for (int h = 0; h < 2; h++) {                                                             \
      const __m512i ql = h ? (ql1) : (ql0);                                                   \
      const __m256i qhh = h ? _mm512_extracti64x4_epi64((qh), 1) : _mm512_castsi512_si256(qh); \
      __m512i qha = join256(_mm256_slli_epi16(qhh, 4), _mm256_slli_epi16(qhh, 2));            \
      __m512i qhb = join256(qhh, _mm256_srli_epi16(qhh, 2));                                  \
      (u).q[h][0] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(qha, m30));    \
      (u).q[h][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),           \
                                    _mm512_and_si512(qhb, m30));                              \
      (u).s[h][0] = _mm512_permutexvar_epi16(                                                 \
          _mm512_add_epi16(idx, _mm512_set1_epi16((short)(8 * h))), sc512);                   \
      (u).s[h][1] = _mm512_permutexvar_epi16(                                                 \
          _mm512_add_epi16(idx, _mm512_set1_epi16((short)(8 * h + 4))), sc512);               \
    }                                                                                         \
  } while (0)
#define Q6_COL(Q6_ACCUM, u, x, acc)                                                           \
  do {                                                                                        \
    __m512i sumi = _mm512_setzero_si512();                                                    \
    for (int h = 0; h < 2; h++) {                                                             \
      sumi = Q6_ACCUM(sumi, _mm512_maddubs_epi16((u).q[h][0], _mm512_loadu_si512((x)->q + 128 * h)), \
                      (u).s[h][0]);                                                           \
      sumi = Q6_ACCUM(sumi,                                                                   \
                      _mm512_maddubs_epi16((u).q[h][1], _mm512_loadu_si512((x)->q + 128 * h + 64)), \
                      (u).s[h][1]);                                                           \
    }                                                                                         \
    __m256i s256 =                                                                            \
        _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));   \
    __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x)->bsums), (u).sc16); \
    s256 = _mm256_sub_epi32(s256, _mm256_slli_epi32(off, 5));                                 \
    *(acc) = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s256), _mm256_set1_ps((u).dsc * (x)->d), *(acc)); \
  } while (0)
#define Q6_MATH(Q6_ACCUM, ql0, ql1, qh, scales, dh, x, acc)                                      \
  do {                                                                                        \
    struct q6_unpacked u_;                                                                    \
    Q6_UNPACK(u_, ql0, ql1, qh, scales, dh);                                                  \
    Q6_COL(Q6_ACCUM, u_, x, acc);                                                             \
  } while (0)

#define Q6_MADD_ADD(sumi, p, s) _mm512_add_epi32((sumi), _mm512_madd_epi16((p), (s)))
#define Q6_DPWSSD(sumi, p, s) _mm512_dpwssd_epi32((sumi), (p), (s))

/* A load the compiler keeps in place: the four streams' loads must reach
 * the memory system in the order written (see DEFINE_GEMV_Q6_K), and GCC
 * otherwise regroups them by consumer. */
#define Q6_LOAD(dst, ptr)                                                                     \
  do {                                                                                        \
    (dst) = _mm512_loadu_si512(ptr);                                                          \
    __asm__ volatile("" : "+v"(dst));                                                         \
  } while (0)

#define DEFINE_Q6_BLOCKS(INLINE_ATTR, one, four, ACCUM)                                         \
  INLINE_ATTR void one(const struct block_q6_k *wb, const struct act_q8k *x, __m256 *acc) {     \
    PREFETCH_W(wb, sizeof *wb);                                                                \
    Q6_MATH(ACCUM, _mm512_loadu_si512(wb->ql), _mm512_loadu_si512(wb->ql + 64),               \
            _mm512_loadu_si512(wb->qh), _mm_loadu_si128((const __m128i *)wb->scales), wb->d,  \
            x, acc);                                                                           \
  }                                                                                            \
  /* Block k of four rows: their loads go round the four streams one 64-byte                   \
   * part at a time (ql's halves, qh, then scales and d), each with its                        \
   * prefetch, instead of one row's whole 210-byte block after another: the                   \
   * same bytes, and 5-9% more of the probe's read rate from DRAM                              \
   * (bench/decode_stream.c: 0.85-0.89 -> 0.93-0.94 of it). */                                 \
  INLINE_ATTR void four(const struct block_q6_k *wa, const struct block_q6_k *wb,               \
                        const struct block_q6_k *wc, const struct block_q6_k *wd,               \
                        const struct act_q8k *x, __m256 *a, __m256 *b, __m256 *c, __m256 *d) {  \
    const struct block_q6_k *w4[4] = {wa, wb, wc, wd};                                         \
    __m512i l0[4], l1[4], hh[4];                                                               \
    for (int s = 0; s < 4; s++) {                                                              \
      _mm_prefetch((const char *)w4[s] + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);               \
      Q6_LOAD(l0[s], w4[s]->ql);                                                               \
    }                                                                                          \
    for (int s = 0; s < 4; s++) {                                                              \
      _mm_prefetch((const char *)w4[s] + KERNEL_PREFETCH_BYTES + 64, KERNEL_PF_HINT);          \
      Q6_LOAD(l1[s], w4[s]->ql + 64);                                                          \
    }                                                                                          \
    for (int s = 0; s < 4; s++) {                                                              \
      _mm_prefetch((const char *)w4[s] + KERNEL_PREFETCH_BYTES + 128, KERNEL_PF_HINT);         \
      Q6_LOAD(hh[s], w4[s]->qh);                                                               \
    }                                                                                          \
    for (int s = 0; s < 4; s++)                                                                \
      _mm_prefetch((const char *)w4[s] + KERNEL_PREFETCH_BYTES + 192, KERNEL_PF_HINT);         \
    __m256 *acc4[4] = {a, b, c, d};                                                            \
    for (int s = 0; s < 4; s++)                                                                \
      Q6_MATH(ACCUM, l0[s], l1[s], hh[s], _mm_loadu_si128((const __m128i *)w4[s]->scales),     \
              w4[s]->d, x, acc4[s]);                                                           \
  }

DEFINE_Q6_BLOCKS(AVX512_INLINE, q6_block, q6_four, Q6_MADD_ADD)
DEFINE_Q6_BLOCKS(VNNI_INLINE, q6_block_vnni, q6_four_vnni, Q6_DPWSSD)

/* ---- Q4_K decode (ncols = 1): four row streams ---------------------------
 * The tile kernel above, given one column, spent ~110 instructions a 144-byte
 * block (the scales unpacked through memory into bytes, each pair of scales
 * broadcast from a byte, each 32-byte chunk joined into a vector) and read
 * 50-53% of the probe's loop from DRAM (bench/kernel_bench.c). Here: the
 * twelve scale bytes are unpacked in one 128-bit register (q4k_scales16),
 * each product's pair of scales is one vpermw of them, and each 32-byte
 * chunk of nibbles is loaded into both halves of a vector and shifted per
 * half (low nibbles: sub-block 2j, high: 2j + 1); four rows go together,
 * their loads round the four streams one chunk at a time (as Q6_K's). The
 * arithmetic is the tile kernel's for one column, in the same order: the
 * same bits. */

/* The block's 8 sub-block scales (16-bit lanes 0-7) and 8 mins (lanes 8-15)
 * from its 12 packed bytes: sc_k = s[k] & 63 and m_k = s[k + 4] & 63 for
 * k < 4; for k >= 4 the low four bits come from s[k + 4] (scale: low
 * nibble, min: high nibble) and the top two from bits 6-7 of s[k - 4]
 * (scale) and s[k] (min). In dwords u0, u1, u2 of the bytes: scales 0-3 =
 * u0 & 0x3f.., mins 0-3 = u1 & 0x3f.., scales 4-7 = (u2 & 0x0f..) |
 * ((u0 >> 6) & 0x03..) << 4, mins 4-7 = ((u2 >> 4) & 0x0f..) |
 * ((u1 >> 6) & 0x03..) << 4. */
AVX512_INLINE __m256i q4k_scales16(const uint8_t *scales) {
  const __m128i v = _mm_maskz_loadu_epi8(0x0fff, scales);            /* u0 u1 u2 0 */
  const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));   /* u0 u2 u1 u2 */
  const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));   /* u0 u0 u1 u1 */
  const __m128i lo = _mm_and_si128(a, _mm_set1_epi8(0x3f));           /* dwords 0, 2 */
  const __m128i t = _mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4));   /* u0 u2 u1 u2>>4 */
  const __m128i hi = _mm_or_si128(
      _mm_and_si128(t, _mm_set1_epi8(0x0f)),
      _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(b, 6), _mm_set1_epi8(0x03)), 4));
  /* bytes: scales 0-3, scales 4-7, mins 0-3, mins 4-7 */
  return _mm256_cvtepu8_epi16(_mm_blend_epi32(lo, hi, 0xA));
}

/* One block's math: nib[j] = the 32 bytes of nibbles j (in both halves of a
 * vector), sm = q4k_scales16 of its scales. FIVE: Q5_K, whose fifth bits
 * are qh5 (its 32 qh bytes in both halves): element l of sub-block k takes
 * bit k of qh[l]. */
/* The integer part of Q4K_MATH_ANY: sumi += the block's sum over its
 * sub-blocks of scale x (q . a), in sixteen i32 lanes. */
#define Q4K_SUMI_ANY(FIVE, qh5, Q4K_ACCUM, nib, sm, x, sumi)                                   \
  do {                                                                                        \
    const __m512i m4 = _mm512_set1_epi8(15), one = _mm512_set1_epi8(1);                       \
    const __m512i sh = _mm512_setr_epi64(0, 0, 0, 0, 0x0004000400040004ll,                    \
                                         0x0004000400040004ll, 0x0004000400040004ll,          \
                                         0x0004000400040004ll);                               \
    const __m512i s512 = _mm512_castsi256_si512(sm);                                          \
    for (int j = 0; j < 4; j++) {                                                             \
      __m512i q = _mm512_and_si512(_mm512_srlv_epi16((nib)[j], sh), m4);                     \
      if (FIVE) {                                                                             \
        const __m512i hs = _mm512_add_epi16(                                                  \
            _mm512_srli_epi16(sh, 2), _mm512_set1_epi16((short)(2 * j)));                     \
        q = _mm512_or_si512(                                                                  \
            q, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16((qh5), hs), one), 4));    \
      }                                                                                       \
      const __m512i scv = _mm512_permutexvar_epi16(                                           \
          _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * j)),                               \
                             _mm256_set1_epi16((short)(2 * j + 1)), 1),                       \
          s512);                                                                              \
      (sumi) = Q4K_ACCUM((sumi), _mm512_maddubs_epi16(q, _mm512_loadu_si512((x)->q + 64 * j)), \
                         scv);                                                                \
    }                                                                                         \
  } while (0)

#define Q4K_MATH_ANY(FIVE, qh5, Q4K_ACCUM, nib, sm, dh, dminh, x, acc, accm)                   \
  do {                                                                                        \
    __m512i sumi = _mm512_setzero_si512();                                                    \
    Q4K_SUMI_ANY(FIVE, qh5, Q4K_ACCUM, nib, sm, x, sumi);                                     \
    const __m256i s256 =                                                                      \
        _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));   \
    const __m256i mins = _mm256_permutexvar_epi16(                                            \
        _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), (sm));  \
    const __m256i pm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x)->bsums), mins); \
    *(acc) = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s256),                                        \
                             _mm256_set1_ps(_cvtsh_ss(dh) * (x)->d), *(acc));                 \
    *(accm) = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pm),                                         \
                              _mm256_set1_ps(_cvtsh_ss(dminh) * (x)->d), *(accm));            \
  } while (0)

/* A 32-byte chunk into both halves of a vector, kept in place (Q6_LOAD). */
#define Q4K_LOAD(dst, ptr)                                                                    \
  do {                                                                                        \
    (dst) = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ptr)));               \
    __asm__ volatile("" : "+v"(dst));                                                         \
  } while (0)

/* ---- Q4_K / Q5_K decode: the four rows' scales and mins at once ----------
 * After a block's integer sum (Q4K_SUMI_ANY) the tile's math spent ~15
 * vector operations a row: two 256-bit reductions, the mins' permute, madd,
 * two converts, two FMAs and two fp16 scales broadcast from scalar code;
 * with the min term removed altogether the kernel read 8-10% more from DRAM
 * (bench/RESULTS.md), so this part, not the loads, bounded it. Here the four
 * rows of a group share it: their d and dmin are one cvtph of two qwords
 * (times da), their mins one 512-bit vector (lanes 8s..8s+7: row s) against
 * the block's bsums summed in pairs (bs8, i16: at most 2 x 16 x 127), so
 *   acc[s] (16 lanes)            += cvt(sumi_s) * (d_s da)
 *   accm   (lanes 4s..4s+3: row s) += cvt(madd(mins_s, bs8)) * (dmin_s da)
 * and row s is sum(acc[s]) - sum(its four accm lanes). The one-row path
 * (rows past the last group of four) does the same lane by lane, so a row's
 * value does not depend on where it falls in [r0, r1). The summation order
 * differs from the tiles' (prefill); the kernel tests compare both with the
 * scalar reference. FIVE: Q5_K (qh5: the 32 qh bytes in both halves). */
AVX512_INLINE float km_hsum4(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

/* d (lanes 0-3) and dmin (4-7) of up to four blocks, times da. */
AVX512_INLINE __m512 km_scales(uint64_t d4, uint64_t dmin4, float da) {
  return _mm512_castps256_ps512(_mm256_mul_ps(
      _mm256_cvtph_ps(_mm_set_epi64x((long long)dmin4, (long long)d4)), _mm256_set1_ps(da)));
}

/* The block's bsums summed in pairs, as eight i16 (in every 128-bit lane). */
AVX512_INLINE __m512i km_bs8(const struct act_q8k *x) {
  const __m256i p = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums),
                                      _mm256_set1_epi16(1));
  return _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(p));
}

/* Row s of a group of four (at out[s * q]): its lanes' sum less its four
 * mins lanes (4s..4s+3 of accm). */
AVX512_INLINE void km_store4(const __m512 acc[4], __m512 accm, float *out, int64_t q) {
  alignas(64) float m16[16];
  _mm512_store_ps(m16, accm);
  for (int s = 0; s < 4; s++)
    out[s * q] = _mm512_reduce_add_ps(acc[s]) - km_hsum4(_mm_load_ps(m16 + 4 * s));
}

/* The mins' term of four rows' blocks: sm01 / sm23 as q4k_scales16x4 gives
 * them (row s's mins in its 16-bit lanes 8-15), dv from km_scales; lanes
 * 4s..4s+3 of the result belong to row s. */
AVX512_INLINE __m512 km_mins4(__m512i sm01, __m512i sm23, __m512 dv, const struct act_q8k *x,
                              __m512 accm) {
  const __m512i midx = _mm512_setr_epi32(
      0x00090008, 0x000b000a, 0x000d000c, 0x000f000e, 0x00190018, 0x001b001a, 0x001d001c,
      0x001f001e, 0x00290028, 0x002b002a, 0x002d002c, 0x002f002e, 0x00390038, 0x003b003a,
      0x003d003c, 0x003f003e);
  const __m512i M = _mm512_permutex2var_epi16(sm01, midx, sm23);
  const __m512 dm =
      _mm512_permutexvar_ps(_mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7), dv);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(M, km_bs8(x))), dm, accm);
}

/* The same term for one row (sm from q4k_scales16): the same integers and
 * float steps as its four lanes in km_mins4. */
AVX512_INLINE __m128 km_mins1(__m256i sm, __m512 dv, const struct act_q8k *x, __m128 accm) {
  const __m128i P =
      _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), _mm512_castsi512_si128(km_bs8(x)));
  return _mm_fmadd_ps(_mm_cvtepi32_ps(P),
                      _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_set1_epi32(4), dv)),
                      accm);
}

#define DEFINE_KM_BLOCKS(INLINE_ATTR, one, four, WB, FIVE, ACCUM)                                 \
  INLINE_ATTR void four(const WB *const w4[4], const struct act_q8k *x, __m512 *acc4,             \
                        __m512 *accm) {                                                           \
    __m512i nib[4][4], qh5[4];                                                                    \
    if (FIVE)                                                                                     \
      for (int s = 0; s < 4; s++) {                                                               \
        _mm_prefetch((const char *)w4[s] + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);                \
        Q4K_LOAD(qh5[s], (const uint8_t *)w4[s] + 16);                                            \
      }                                                                                           \
    for (int j = 0; j < 4; j++)                                                                   \
      for (int s = 0; s < 4; s++) {                                                               \
        if (FIVE ? j < 2 : j < 3)                                                                 \
          _mm_prefetch((const char *)w4[s] + KERNEL_PREFETCH_BYTES + (FIVE ? 64 * (j + 1) : 48 * j), \
                       KERNEL_PF_HINT);                                                           \
        Q4K_LOAD(nib[s][j], w4[s]->qs + 32 * j);                                                  \
      }                                                                                           \
    uint64_t d4 = 0, dmin4 = 0;                                                                   \
    __m256i sm[4];                                                                                \
    for (int s = 0; s < 4; s++) {                                                                 \
      d4 |= (uint64_t)w4[s]->d << (16 * s);                                                       \
      dmin4 |= (uint64_t)w4[s]->dmin << (16 * s);                                                 \
      sm[s] = q4k_scales16(w4[s]->scales);                                                        \
    }                                                                                             \
    const __m512 dv = km_scales(d4, dmin4, x->d);                                                 \
    for (int s = 0; s < 4; s++) {                                                                 \
      __m512i sumi = _mm512_setzero_si512();                                                      \
      Q4K_SUMI_ANY(FIVE, qh5[s], ACCUM, nib[s], sm[s], x, sumi);                                  \
      acc4[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi),                                         \
                                _mm512_permutexvar_ps(_mm512_set1_epi32(s), dv), acc4[s]);        \
    }                                                                                             \
    const __m512i midx = _mm512_setr_epi32(                                                       \
        0x00090008, 0x000b000a, 0x000d000c, 0x000f000e, 0x00190018, 0x001b001a, 0x001d001c,       \
        0x001f001e, 0x00290028, 0x002b002a, 0x002d002c, 0x002f002e, 0x00390038, 0x003b003a,       \
        0x003d003c, 0x003f003e);                                                                  \
    const __m512i M = _mm512_permutex2var_epi16(                                                  \
        _mm512_inserti64x4(_mm512_castsi256_si512(sm[0]), sm[1], 1), midx,                        \
        _mm512_inserti64x4(_mm512_castsi256_si512(sm[2]), sm[3], 1));                             \
    const __m512 dm = _mm512_permutexvar_ps(                                                      \
        _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7), dv);                   \
    *accm = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(M, km_bs8(x))), dm, *accm);      \
  }                                                                                               \
  INLINE_ATTR void one(const WB *wb, const struct act_q8k *x, __m512 *acc, __m128 *accm) {        \
    PREFETCH_W(wb, sizeof *wb);                                                                   \
    __m512i nib[4], qh5 = _mm512_setzero_si512();                                                 \
    for (int j = 0; j < 4; j++)                                                                   \
      nib[j] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(wb->qs + 32 * j)));    \
    if (FIVE)                                                                                     \
      qh5 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const uint8_t *)wb + 16))); \
    const __m256i sm = q4k_scales16(wb->scales);                                                  \
    const __m512 dv = km_scales(wb->d, wb->dmin, x->d);                                           \
    __m512i sumi = _mm512_setzero_si512();                                                        \
    Q4K_SUMI_ANY(FIVE, qh5, ACCUM, nib, sm, x, sumi);                                             \
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi),                                              \
                           _mm512_permutexvar_ps(_mm512_setzero_si512(), dv), *acc);              \
    const __m128i P = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1),                             \
                                     _mm512_castsi512_si128(km_bs8(x)));                          \
    *accm = _mm_fmadd_ps(_mm_cvtepi32_ps(P),                                                      \
                         _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_set1_epi32(4), dv)), \
                         *accm);                                                                  \
  }

DEFINE_KM_BLOCKS(AVX512_INLINE, q4k_one, q4k_four, struct block_q4_k, 0, Q6_MADD_ADD)
DEFINE_KM_BLOCKS(VNNI_INLINE, q4k_one_vnni, q4k_four_vnni, struct block_q4_k, 0, Q6_DPWSSD)
DEFINE_KM_BLOCKS(AVX512_INLINE, q5k_one, q5k_four, struct block_q5_k, 1, Q6_MADD_ADD)
DEFINE_KM_BLOCKS(VNNI_INLINE, q5k_one_vnni, q5k_four_vnni, struct block_q5_k, 1, Q6_DPWSSD)

/* Rows in four streams for a K-quant with mins (WB: block_q4_k or
 * block_q5_k), ONE / FOUR from DEFINE_KM_BLOCKS. */
#define DEFINE_GEMV_KM(ATTR, name, WB, ONE, FOUR)                                                 \
  ATTR static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,   \
                        const struct act_q8k *x, float *out) {                                  \
    const int64_t nb = n / QK_K, q = (r1 - r0) / 4;                                             \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, (size_t)q * w_stride, q > 0 ? 4 : 0,       \
                          KERNEL_PREFETCH_BYTES);                                               \
    for (int64_t i = 0; i < q; i++) {                                                           \
      const WB *w4[4];                                                                          \
      for (int s = 0; s < 4; s++) w4[s] = (const WB *)(w + (size_t)(r0 + s * q + i) * w_stride); \
      __m512 acc[4], accm = _mm512_setzero_ps();                                                \
      for (int s = 0; s < 4; s++) acc[s] = _mm512_setzero_ps();                                 \
      for (int64_t k = 0; k < nb; k++) {                                                        \
        const WB *b4[4] = {w4[0] + k, w4[1] + k, w4[2] + k, w4[3] + k};                         \
        FOUR(b4, &x[k], acc, &accm);                                                            \
      }                                                                                         \
      km_store4(acc, accm, out + r0 + i, q);                                                    \
    }                                                                                           \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                                 \
      const WB *wr = (const WB *)(w + (size_t)r * w_stride);                                    \
      __m512 acc = _mm512_setzero_ps();                                                         \
      __m128 accm = _mm_setzero_ps();                                                           \
      for (int64_t k = 0; k < nb; k++) ONE(&wr[k], &x[k], &acc, &accm);                         \
      out[r] = _mm512_reduce_add_ps(acc) - km_hsum4(accm);                                      \
    }                                                                                           \
  }

DEFINE_GEMV_KM(AVX512, gemv_q4_k_512, struct block_q4_k, q4k_one, q4k_four)
DEFINE_GEMV_KM(AVX512, gemv_q5_k_512, struct block_q5_k, q5k_one, q5k_four)
DEFINE_GEMV_KM(VNNI, gemv_q4_k_vnni, struct block_q4_k, q4k_one_vnni, q4k_four_vnni)
DEFINE_GEMV_KM(VNNI, gemv_q5_k_vnni, struct block_q5_k, q5k_one_vnni, q5k_four_vnni)

/* ---- Q4_K decode on VNNI: the sub-blocks' sums in lanes, one scale step ---
 * (AMD CPUs: kernels_fill_kquant_lanes. It has more shuffles than the kernel
 * above, which Intel cores run on one port; it was measured on a Zen 5 only,
 * so Intel CPUs keep the kernel they were measured with.)
 * The kernel above spends, per row and block, four permutes building scale
 * vectors, four maddubs and four dpwssd, and a dozen operations unpacking
 * the row's scales: from cache it read 28-33 GB/s, below one core's DRAM
 * stream (38-41) on a Zen 5. Here, per row and block:
 *   - the 128 nibble bytes are two 64-byte loads; V & 15 and (V >> 4) & 15
 *     give four vectors of 64 weights, sub-blocks (0 | 2), (1 | 3), (4 | 6),
 *     (5 | 7) (a low nibble of bytes 32j..32j+31 is sub-block 2j, a high
 *     one 2j + 1), against the activations repacked once per call to the
 *     same places (struct q4kt_act);
 *   - four vpdpbusd give each sub-block's products summed in eight lanes;
 *     a transposing tree of adds (q8_tree1 / q8_tree2's shape: six unpacks,
 *     three adds) leaves each sub-block in two lanes;
 *   - one vpdpwssd multiplies them by the sub-block scales (placed in those
 *     lanes by one masked permute; each lane's sum, at most 16 x 15 x 127 =
 *     30480, fits the instruction's 16 bits);
 * and the four rows' scales and mins are unpacked together, one row per
 * 128-bit lane (q4k_scales16x4). About two thirds of the operations: from
 * cache 37-45 GB/s, from DRAM 35-39 (bench/RESULTS.md). The mins' part and
 * the float accumulation are the kernel's above. A row computed alone (the
 * range's last rows) goes through the same integer and float steps, so its
 * bits do not depend on its range (tests/unit/engine/test_kernels.c). */
struct q4kt_act {
  __m512i xl[2], xh[2]; /* against (V_h & 15) and (V_h >> 4) & 15, V_h = qs[64h..64h+63] */
};
#define Q4KT_MAX_BLOCKS 128 /* n <= 32768: 32 KiB of repacked activations */

/* xl[h] = sub-blocks 4h and 4h + 2 of the block's 256 values, xh[h] = 4h + 1
 * and 4h + 3 (32 bytes each, at 32 k). */
AVX512_INLINE void q4kt_repack(const struct act_q8k *x, int64_t nb, struct q4kt_act *o) {
  for (int64_t k = 0; k < nb; k++)
    for (int h = 0; h < 2; h++) {
      const int8_t *q = x[k].q + 128 * h;
      o[k].xl[h] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q)),
          _mm256_loadu_si256((const __m256i *)(q + 64)), 1);
      o[k].xh[h] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(q + 32))),
          _mm256_loadu_si256((const __m256i *)(q + 96)), 1);
    }
}

/* q4k_scales16 of four blocks at once, one per 128-bit lane (the same
 * integers): rows 0 and 1 in lo (16-bit lanes 0-15 and 16-31), 2 and 3 in hi. */
AVX512_INLINE void q4k_scales16x4(const uint8_t *const sc[4], __m512i *lo, __m512i *hi) {
  __m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(0x0fff, sc[0]));
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(0x0fff, sc[1]), 1);
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(0x0fff, sc[2]), 2);
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(0x0fff, sc[3]), 3);
  const __m512i a = _mm512_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));
  const __m512i b = _mm512_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));
  const __m512i lo6 = _mm512_and_si512(a, _mm512_set1_epi8(0x3f));
  const __m512i t =
      _mm512_srlv_epi32(a, _mm512_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4));
  const __m512i hi6 = _mm512_or_si512(
      _mm512_and_si512(t, _mm512_set1_epi8(0x0f)),
      _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(b, 6), _mm512_set1_epi8(0x03)), 4));
  const __m512i bytes = _mm512_mask_blend_epi32(0xAAAA, lo6, hi6);
  *lo = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(bytes));
  *hi = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(bytes, 1));
}

/* The tree leaves, in each 128-bit chunk c, the sums of chunk c of the four
 * dot vectors: sub-blocks (0, 1, 4, 5) in chunks 0 and 1, (2, 3, 6, 7) in 2
 * and 3. Each i32 lane's scale index in sm (16-bit lanes 0-7), for a masked
 * permute into the lane's low half (the high half zero). */
#define Q4KT_SCALE_IDX _mm512_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5, 2, 3, 6, 7, 2, 3, 6, 7)

/* The block's sum over sub-blocks of scale x (q . a) in sixteen i32 lanes;
 * scv from Q4KT_SCALE_IDX. */
VNNI_INLINE __m512i q4kt_sumi(const struct block_q4_k *b, const struct q4kt_act *a, __m512i scv) {
  const __m512i m4 = _mm512_set1_epi8(15), z = _mm512_setzero_si512();
  __m512i v0 = _mm512_loadu_si512(b->qs), v1 = _mm512_loadu_si512(b->qs + 64);
  __asm__ volatile("" : "+v"(v0), "+v"(v1)); /* both loads first, as written */
  const __m512i p0 = _mm512_dpbusd_epi32(z, _mm512_and_si512(v0, m4), a->xl[0]);
  const __m512i p1 = _mm512_dpbusd_epi32(z, _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4), a->xh[0]);
  const __m512i p2 = _mm512_dpbusd_epi32(z, _mm512_and_si512(v1, m4), a->xl[1]);
  const __m512i p3 = _mm512_dpbusd_epi32(z, _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4), a->xh[1]);
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(p2, p3), _mm512_unpackhi_epi32(p2, p3));
  const __m512i r = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  return _mm512_dpwssd_epi32(z, r, scv);
}


/* Q5_K: as Q4_K, each weight's fifth bit (bit k of qh[l] for element l of
 * sub-block k) added in as 16 to its nibble: one byte test of qh against the
 * vector's two sub-blocks' bits and one masked or. Weights reach 31, so a
 * lane's sum (16 x 31 x 127 at most) no longer fits 16 bits: the scales go
 * in by vpmulld instead of vpdpwssd. */
VNNI_INLINE __m512i q5kt_sumi(const struct block_q5_k *b, const struct q4kt_act *a, __m512i scv) {
  const __m512i m4 = _mm512_set1_epi8(15), z = _mm512_setzero_si512(), f = _mm512_set1_epi8(16);
  __m512i v0 = _mm512_loadu_si512(b->qs), v1 = _mm512_loadu_si512(b->qs + 64);
  __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b->qh));
  __asm__ volatile("" : "+v"(v0), "+v"(v1), "+v"(qh));
  /* the fifth bits of sub-blocks (lo half | hi half): 0 | 2, 1 | 3, 4 | 6, 5 | 7 */
  const __m512i b02 = _mm512_inserti64x4(_mm512_set1_epi8(0x01), _mm256_set1_epi8(0x04), 1);
  const __m512i b13 = _mm512_inserti64x4(_mm512_set1_epi8(0x02), _mm256_set1_epi8(0x08), 1);
  const __m512i b46 = _mm512_inserti64x4(_mm512_set1_epi8(0x10), _mm256_set1_epi8(0x40), 1);
  const __m512i b57 = _mm512_inserti64x4(_mm512_set1_epi8(0x20), _mm256_set1_epi8((char)0x80), 1);
  __m512i q0 = _mm512_and_si512(v0, m4), q1 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
  __m512i q2 = _mm512_and_si512(v1, m4), q3 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
  q0 = _mm512_mask_add_epi8(q0, _mm512_test_epi8_mask(qh, b02), q0, f);
  q1 = _mm512_mask_add_epi8(q1, _mm512_test_epi8_mask(qh, b13), q1, f);
  q2 = _mm512_mask_add_epi8(q2, _mm512_test_epi8_mask(qh, b46), q2, f);
  q3 = _mm512_mask_add_epi8(q3, _mm512_test_epi8_mask(qh, b57), q3, f);
  const __m512i p0 = _mm512_dpbusd_epi32(z, q0, a->xl[0]);
  const __m512i p1 = _mm512_dpbusd_epi32(z, q1, a->xh[0]);
  const __m512i p2 = _mm512_dpbusd_epi32(z, q2, a->xl[1]);
  const __m512i p3 = _mm512_dpbusd_epi32(z, q3, a->xh[1]);
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(p2, p3), _mm512_unpackhi_epi32(p2, p3));
  const __m512i r = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  return _mm512_mullo_epi32(r, scv);
}

/* Four row streams (the last rows one at a time, the same steps per row) of
 * a K-quant with 6-bit scales and mins, SUMI its block sum. */
#define DEFINE_KT_GEMV(name, WB, SUMI, FALLBACK)                                                   \
  VNNI static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,      \
                        const struct act_q8k *x, float *out) {                                     \
    const int64_t nb = n / QK_K, q = (r1 - r0) / 4;                                                \
    if (nb > Q4KT_MAX_BLOCKS) {                                                                    \
      FALLBACK(n, w, w_stride, r0, r1, x, out);                                                    \
      return;                                                                                      \
    }                                                                                              \
    alignas(64) struct q4kt_act xa[Q4KT_MAX_BLOCKS];                                               \
    q4kt_repack(x, nb, xa);                                                                        \
    const __m512i sidx = Q4KT_SCALE_IDX, sidx1 = _mm512_add_epi32(sidx, _mm512_set1_epi32(16));    \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, (size_t)q * w_stride, q > 0 ? 4 : 0,          \
                          KERNEL_PREFETCH_BYTES);                                                  \
    for (int64_t i = 0; i < q; i++) {                                                              \
      const WB *w4[4];                                                                             \
      for (int s = 0; s < 4; s++) w4[s] = (const WB *)(w + (size_t)(r0 + s * q + i) * w_stride);   \
      __m512 acc[4], accm = _mm512_setzero_ps();                                                   \
      for (int s = 0; s < 4; s++) acc[s] = _mm512_setzero_ps();                                    \
      for (int64_t k = 0; k < nb; k++) {                                                           \
        uint64_t d4 = 0, dmin4 = 0;                                                                \
        const uint8_t *sc[4];                                                                      \
        for (int s = 0; s < 4; s++) {                                                              \
          PREFETCH_W(w4[s] + k, sizeof(WB));                                                       \
          d4 |= (uint64_t)w4[s][k].d << (16 * s);                                                  \
          dmin4 |= (uint64_t)w4[s][k].dmin << (16 * s);                                            \
          sc[s] = w4[s][k].scales;                                                                 \
        }                                                                                          \
        __m512i sm01, sm23;                                                                        \
        q4k_scales16x4(sc, &sm01, &sm23);                                                          \
        const __m512 dv = km_scales(d4, dmin4, x[k].d);                                            \
        for (int s = 0; s < 4; s++) {                                                              \
          const __m512i scv = _mm512_maskz_permutexvar_epi16(                                      \
              0x55555555, (s & 1) ? sidx1 : sidx, s < 2 ? sm01 : sm23);                            \
          acc[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(SUMI(w4[s] + k, &xa[k], scv)),               \
                                   _mm512_permutexvar_ps(_mm512_set1_epi32(s), dv), acc[s]);       \
        }                                                                                          \
        accm = km_mins4(sm01, sm23, dv, &x[k], accm);                                              \
      }                                                                                            \
      km_store4(acc, accm, out + r0 + i, q);                                                       \
    }                                                                                              \
    /* The last rows one at a time, with the same steps per row. */                                \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                                    \
      const WB *wr = (const WB *)(w + (size_t)r * w_stride);                                       \
      __m512 acc = _mm512_setzero_ps();                                                            \
      __m128 accm = _mm_setzero_ps();                                                              \
      for (int64_t k = 0; k < nb; k++) {                                                           \
        PREFETCH_W(wr + k, sizeof *wr);                                                            \
        const __m256i sm = q4k_scales16(wr[k].scales);                                             \
        const __m512i scv =                                                                        \
            _mm512_maskz_permutexvar_epi16(0x55555555, sidx, _mm512_castsi256_si512(sm));          \
        const __m512 dv = km_scales(wr[k].d, wr[k].dmin, x[k].d);                                  \
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(SUMI(wr + k, &xa[k], scv)),                       \
                              _mm512_permutexvar_ps(_mm512_setzero_si512(), dv), acc);             \
        accm = km_mins1(sm, dv, &x[k], accm);                                                      \
      }                                                                                            \
      out[r] = _mm512_reduce_add_ps(acc) - km_hsum4(accm);                                         \
    }                                                                                              \
  }
DEFINE_KT_GEMV(gemv_q4_k_lanes, struct block_q4_k, q4kt_sumi, gemv_q4_k_vnni)
DEFINE_KT_GEMV(gemv_q5_k_lanes, struct block_q5_k, q5kt_sumi, gemv_q5_k_vnni)
#undef DEFINE_KT_GEMV

/* ---- Q5_K prompts (AVX-512 path) ------------------------------------------ */

/* Prompts: a row's block against nc <= 4 activation columns, its nibbles and
 * fifth bits unpacked once (the Q4_K tile's shape). */
AVX512_INLINE void tile_q5_k_512(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                                 const int nc, float *o, int64_t os) {
  const struct block_q5_k *w = (const struct block_q5_k *)wr;
  const int64_t nb = n / QK_K;
  __m256 acc[4], accm[4];
  for (int c = 0; c < nc; c++) acc[c] = accm[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    PREFETCH_W(&w[b], sizeof w[b]);
    __m512i nib[4];
    for (int j = 0; j < 4; j++)
      nib[j] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * j)));
    const __m512i qh5 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)w[b].qh));
    const __m256i sm = q4k_scales16(w[b].scales);
    for (int c = 0; c < nc; c++)
      Q4K_MATH_ANY(1, qh5, Q6_MADD_ADD, nib, sm, w[b].d, w[b].dmin,
                   (const struct act_q8k *)(a + c * as) + b, &acc[c], &accm[c]);
  }
  for (int c = 0; c < nc; c++) o[c * os] = hsum256(acc[c]) - hsum256(accm[c]);
}

/* Rows in four interleaved streams; BLOCK / FOUR: q6_block / q6_four or the
 * VNNI pair. A row's sum is the same whichever stream it is in. */
#define DEFINE_GEMV_Q6_K(ATTR, name, BLOCK, FOUR)                                               \
  ATTR static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,   \
                        const struct act_q8k *x, float *out) {                                  \
    const int64_t nb = n / QK_K, q = (r1 - r0) / 4;                                             \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, (size_t)q * w_stride, q > 0 ? 4 : 0,       \
                          KERNEL_PREFETCH_BYTES);                                               \
    for (int64_t i = 0; i < q; i++) {                                                           \
      const struct block_q6_k *w0 = (const struct block_q6_k *)(w + (size_t)(r0 + i) * w_stride); \
      const struct block_q6_k *w1 = (const struct block_q6_k *)((const uint8_t *)w0 + (size_t)q * w_stride); \
      const struct block_q6_k *w2 = (const struct block_q6_k *)((const uint8_t *)w1 + (size_t)q * w_stride); \
      const struct block_q6_k *w3 = (const struct block_q6_k *)((const uint8_t *)w2 + (size_t)q * w_stride); \
      __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();                                  \
      __m256 c = _mm256_setzero_ps(), d = _mm256_setzero_ps();                                  \
      for (int64_t k = 0; k < nb; k++) FOUR(&w0[k], &w1[k], &w2[k], &w3[k], &x[k], &a, &b, &c, &d); \
      out[r0 + i] = hsum256(a);                                                                 \
      out[r0 + q + i] = hsum256(b);                                                             \
      out[r0 + 2 * q + i] = hsum256(c);                                                         \
      out[r0 + 3 * q + i] = hsum256(d);                                                         \
    }                                                                                           \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                                 \
      const struct block_q6_k *wr = (const struct block_q6_k *)(w + (size_t)r * w_stride);      \
      __m256 a = _mm256_setzero_ps();                                                           \
      for (int64_t k = 0; k < nb; k++) BLOCK(&wr[k], &x[k], &a);                                \
      out[r] = hsum256(a);                                                                      \
    }                                                                                           \
  }

DEFINE_GEMV_Q6_K(AVX512, gemv_q6_k_512, q6_block, q6_four)
DEFINE_GEMV_Q6_K(VNNI, gemv_q6_k_vnni, q6_block_vnni, q6_four_vnni)

/* ---- Q6_K, a few columns (a batched decode step: the output head) -------
 * Each block unpacked once (Q6_UNPACK) for up to Q6_FEW_COLS columns
 * (Q6_COL each), one row at a time: a column's operations on a row are the
 * decode's (Q6_MATH with vpdpwssd, blocks in order, hsum256), so its outputs
 * have the bits of its decode (kernels.h gemm_few). Groups of columns are
 * evened out (12 = 6 + 6). */
#define Q6_FEW_COLS 8
VNNI_INLINE void few_q6_k_rows(const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,
                               int64_t nb, const uint8_t *a, size_t as, const int nc, float *out,
                               int64_t os) {
  for (int64_t r = r0; r < r1; r++) {
    const struct block_q6_k *wr = (const struct block_q6_k *)(w + (size_t)r * w_stride);
    __m256 acc[Q6_FEW_COLS];
    for (int c = 0; c < nc; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t k = 0; k < nb; k++) {
      PREFETCH_W(&wr[k], sizeof wr[k]);
      struct q6_unpacked u;
      Q6_UNPACK(u, _mm512_loadu_si512(wr[k].ql), _mm512_loadu_si512(wr[k].ql + 64),
                _mm512_loadu_si512(wr[k].qh), _mm_loadu_si128((const __m128i *)wr[k].scales),
                wr[k].d);
      for (int c = 0; c < nc; c++)
        Q6_COL(Q6_DPWSSD, u, (const struct act_q8k *)(a + (size_t)c * as) + k, &acc[c]);
    }
    for (int c = 0; c < nc; c++) out[c * os + r] = hsum256(acc[c]);
  }
}
VNNI static void few_q6_k_vnni(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,
                               const void *a, size_t as, int64_t ncols, float *out, int64_t os) {
  const int64_t nb = n / QK_K;
  const int64_t groups = (ncols + Q6_FEW_COLS - 1) / Q6_FEW_COLS;
  for (int64_t g = 0; g < groups; g++) {
    const int64_t c0 = ncols * g / groups, c1 = ncols * (g + 1) / groups;
    const uint8_t *ag = (const uint8_t *)a + (size_t)c0 * as;
    float *o = out + c0 * os;
    switch (c1 - c0) {
    case 1: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 1, o, os); break;
    case 2: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 2, o, os); break;
    case 3: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 3, o, os); break;
    case 4: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 4, o, os); break;
    case 5: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 5, o, os); break;
    case 6: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 6, o, os); break;
    case 7: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 7, o, os); break;
    default: few_q6_k_rows(w, w_stride, r0, r1, nb, ag, as, 8, o, os); break;
    }
  }
}

DEFINE_X86_GEMM(AVX512, gemm_q4_k_512, tile_q4_k_512)
DEFINE_X86_GEMM(AVX512, gemm_q5_k_512, tile_q5_k_512)
DEFINE_X86_GEMM(AVX512, gemm_q6_k_512, tile_q6_k_512)

/* K-quants on the AVX512 path: the decode kernels above for one column; for
 * prompts the AVX2 path's entries (its 8-row panels: 163-170 / 302-323 GOPS
 * for Q4_K at 1 / 2 threads on the team's Xeon against 89-96 / 171-190 for
 * the 512-bit tiles, bench/RESULTS.md), taken from the table this path
 * starts from (kernels_fill_avx512; tables are filled once). */
static gemm_fn k_prefill_avx2[3]; /* Q4_K, Q5_K, Q6_K */
#define DEFINE_K_FAST(ATTR, name, gemv, slot)                                                  \
  ATTR static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,     \
                        const void *a, size_t a_stride, int64_t ncols, float *out,             \
                        int64_t out_stride) {                                                  \
    if (ncols == 1)                                                                            \
      gemv(n, w, w_stride, r0, r1, a, out);                                                    \
    else                                                                                       \
      k_prefill_avx2[slot](n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);       \
  }

DEFINE_K_FAST(AVX512, gemm_q4_k_512_fast, gemv_q4_k_512, 0)
DEFINE_K_FAST(AVX512, gemm_q5_k_512_fast, gemv_q5_k_512, 1)
DEFINE_K_FAST(AVX512, gemm_q6_k_512_fast, gemv_q6_k_512, 2)

/* K-quants: n is a multiple of QK_K (the types require it), any width decodes. */
DEFINE_VNNI_FAST(gemm_q4_k_vnni_fast, gemv_q4_k_vnni, 1, avx512_kpanel_gemm_q4_k, 2, gemm_q4_k_512)
DEFINE_VNNI_FAST(gemm_q5_k_vnni_fast, gemv_q5_k_vnni, 1, avx512_kpanel_gemm_q5_k, 2, gemm_q5_k_512)
DEFINE_VNNI_FAST(gemm_q4_k_lanes_fast, gemv_q4_k_lanes, 1, avx512_kpanel_gemm_q4_k, 2, gemm_q4_k_512)
DEFINE_VNNI_FAST(gemm_q5_k_lanes_fast, gemv_q5_k_lanes, 1, avx512_kpanel_gemm_q5_k, 2, gemm_q5_k_512)
DEFINE_VNNI_FAST(gemm_q6_k_vnni_fast, gemv_q6_k_vnni, 1, avx512_kpanel_gemm_q6_k, 6, gemm_q6_k_512)

void kernels_fill_avx512_kquant(struct kernel_ops *ops) {
  k_prefill_avx2[0] = ops->gemm[GGML_TYPE_Q4_K];
  k_prefill_avx2[1] = ops->gemm[GGML_TYPE_Q5_K];
  k_prefill_avx2[2] = ops->gemm[GGML_TYPE_Q6_K];
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_512_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_512_fast;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_512_fast;
}

void kernels_fill_avx512_kquant_vnni(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_vnni_fast;
  ops->gemm_few[GGML_TYPE_Q6_K] = few_q6_k_vnni;
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_vnni_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_vnni_fast;
}

void kernels_fill_kquant_lanes(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_lanes_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_lanes_fast;
}
#endif
