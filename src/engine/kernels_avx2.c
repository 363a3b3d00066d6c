/* kernels_avx2: the AVX2 + FMA + F16C path (x86-64 only). Every function
 * carries its own target attribute, so this file builds in a generic x86-64
 * build and only runs when kernels.c's dispatch says the CPU can.
 *
 * Specialised here: gemm F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
 * Q5_K, Q6_K, with four-stream decode (one column) kernels for every quantized
 * type but the one-column-wide odd shapes (rows of an odd number of blocks),
 * and 8-row prefill panels for Q4_0, Q5_0, Q4_1, Q5_1, Q8_0 (apanel_gemm) and
 * the K-quants (akpanel_gemm);
 * quantize_q8, quantize_q8k; dot_f16_f32, axpy_f16, f32_to_f16.
 * Scalar on this path (table entry = the scalar function): get_row.
 *
 * Integer dots use maddubs (u8 x s8 -> pairs of i16) then madd (-> i32):
 *  - Q8_0 weights are signed: maddubs(|w|, sign(a, w)). No i16 saturation:
 *    |w|, |a| <= 127 (the quantizers clamp to -127), 2 * 127 * 127 < 32767.
 *  - Q4_0/Q5_0 weights go in unsigned (0..15 / 0..31); the -8 / -16 offset is
 *    applied per block in float as -8 d_w s_a (s_a = d_a sum q_a).
 *  - Q4_K: per 32-sub-block maddubs, then madd with the 6-bit scale.
 *  - Q6_K: 6-bit unsigned q; the -32 offset is -32 sum_k sc_k bsums_k. */
#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "gguf/quant_ref.h"
#include "util/fp16.h"
#include <math.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

AVX2_INLINE float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

AVX2_INLINE int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

AVX2_INLINE float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* u8 x s8 dot of 32 bytes into 8 i32 lanes. */
AVX2_INLINE __m256i dot_u8s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* 32 bits -> 32 bytes, byte i = 0x10 where bit i is set (the Q5 fifth bit). */
AVX2_INLINE __m256i bits_to_0x10(const uint8_t *qh4) {
  uint32_t bits;
  memcpy(&bits, qh4, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                         0x0101010101010101, 0x0000000000000000);
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
  v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* ---- float weights ------------------------------------------------------ */

#define FLOAT_TILE(fn, LOAD8, WTYPE, SCALAR_W)                                               \
  AVX2_INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as, const int nc, \
                      float *o, int64_t os) {                                               \
    const WTYPE *w = (const WTYPE *)wr;                                                     \
    __m256 acc0[4], acc1[4];                                                                \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();                   \
    int64_t i = 0;                                                                          \
    for (; i + 16 <= n; i += 16) {                                                          \
      PREFETCH_W(w + i, 1);                                                                 \
      __m256 w0 = LOAD8(w + i), w1 = LOAD8(w + i + 8);                                      \
      for (int c = 0; c < nc; c++) {                                                        \
        const float *x = (const float *)(a + c * as);                                       \
        acc0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), acc0[c]);                     \
        acc1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), acc1[c]);                 \
      }                                                                                     \
    }                                                                                       \
    for (; i + 8 <= n; i += 8) {                                                            \
      __m256 w0 = LOAD8(w + i);                                                             \
      for (int c = 0; c < nc; c++)                                                          \
        acc0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps((const float *)(a + c * as) + i),     \
                                  acc0[c]);                                                 \
    }                                                                                       \
    for (int c = 0; c < nc; c++) {                                                          \
      const float *x = (const float *)(a + c * as);                                         \
      float s = hsum_ps(_mm256_add_ps(acc0[c], acc1[c]));                                   \
      for (int64_t j = i; j < n; j++) s += SCALAR_W(w[j]) * x[j];                           \
      o[c * os] = s;                                                                        \
    }                                                                                       \
  }

#define LOAD_F32(p) _mm256_loadu_ps(p)
#define LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOAD_BF16(p)                                                                        \
  _mm256_castsi256_ps(                                                                      \
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define SW_F32(v) (v)
#define SW_F16(v) h2f(v)
AVX2_INLINE float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
#define SW_BF16(v) bf2f(v)

FLOAT_TILE(tile_f32, LOAD_F32, float, SW_F32)
FLOAT_TILE(tile_f16, LOAD_F16, uint16_t, SW_F16)
FLOAT_TILE(tile_bf16, LOAD_BF16, uint16_t, SW_BF16)

/* ---- 32-element blocks -------------------------------------------------- */

/* The per-block tiles of the 32-element types: kernels_x86.h's
 * DEFINE_BLOCK_TILE with maddubs + madd as the block's dot product. */
#define AVX2_DOT(wq, xq) dot_u8s8(wq, xq)
#define BLOCK_TILE(fn, WBLOCK, UNPACK, OFFSET_MUL, HAS_M) \
  DEFINE_BLOCK_TILE(AVX2_INLINE, fn, WBLOCK, UNPACK, OFFSET_MUL, HAS_M, AVX2_DOT, h2f, hsum_ps)

AVX2_INLINE __m256i unpack_q4_0(const struct block_q4_0 *b) {
  __m128i raw = _mm_loadu_si128((const __m128i *)b->qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
}
AVX2_INLINE __m256i unpack_q4_1(const struct block_q4_1 *b) {
  __m128i raw = _mm_loadu_si128((const __m128i *)b->qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
}
AVX2_INLINE __m256i unpack_q5_0(const struct block_q5_0 *b) {
  __m128i raw = _mm_loadu_si128((const __m128i *)b->qs);
  __m256i lo = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
  return _mm256_or_si256(lo, bits_to_0x10(b->qh));
}
AVX2_INLINE __m256i unpack_q5_1(const struct block_q5_1 *b) {
  __m128i raw = _mm_loadu_si128((const __m128i *)b->qs);
  __m256i lo = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
  return _mm256_or_si256(lo, bits_to_0x10(b->qh));
}

BLOCK_TILE(tile_q4_0, struct block_q4_0, unpack_q4_0, -8.0f, 0)
BLOCK_TILE(tile_q4_1, struct block_q4_1, unpack_q4_1, 0.0f, 1)
BLOCK_TILE(tile_q5_0, struct block_q5_0, unpack_q5_0, -16.0f, 0)
BLOCK_TILE(tile_q5_1, struct block_q5_1, unpack_q5_1, 0.0f, 1)

/* Q8_0 (|w| taken as sign(w, w)). */
#define AVX2_ABS8(v) _mm256_sign_epi8(v, v)
DEFINE_Q8_0_TILE(AVX2_INLINE, tile_q8_0, AVX2_ABS8, AVX2_DOT, h2f, hsum_ps)

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

/* ---- decode (ncols = 1) Q4_0: four row streams ---------------------------
 * The tile kernel above, given one column, reads one row after another and
 * spends scalar work per block on the scales and the offset; from DRAM it
 * read 0.55-0.58 of the probe's loop (bench/decode_stream.c q4_0 avx2).
 * Here four rows (r, r + q, r + 2q, r + 3q) go together, so each block's
 * activation loads and broadcasts serve four rows, and the Q4_0 offset is
 * folded per lane: lane value = I * d_a + ns with ns = -8 s_a / 8 (the eight
 * lanes of a block add up to -8 s_a), times the weight block's scale; one
 * accumulator per row, summed across lanes at the row's end. A row's result
 * is the same wherever it falls in [r0, r1). */
/* Two consecutive blocks of one row (36 bytes at blk) in one vector: lanes
 * 0-3 block k, 4-7 block k + 1. p (the activations of the pair, repacked
 * once per call): lo = [q 0-15 of k | of k + 1], hi = [q 16-31 of k | of
 * k + 1], da and ns per lane (ns = -8 s_a / 4: four lanes per block). */
struct q4_pair_act {
  __m256i lo, hi;
  __m256 da, ns;
};

AVX2_INLINE __m256 q4_0_lane_pair(const uint8_t *blk, const struct q4_pair_act *p, __m256 acc) {
  const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
  const __m256i v = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blk + 20)),
                                     _mm_loadu_si128((const __m128i *)(blk + 2)));
  const __m256i lo = _mm256_and_si256(v, m4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  /* each i16 sum is at most 2 x 2 x 15 x 127 = 7620: no saturation */
  const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, p->lo),
                                       _mm256_maddubs_epi16(hi, p->hi));
  const __m256i I = _mm256_madd_epi16(p16, ones);
  /* the two fp16 scales, each on four lanes */
  uint16_t d0, d1;
  memcpy(&d0, blk, 2);
  memcpy(&d1, blk + 18, 2);
  const __m128i dd = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)(d0 | (uint32_t)d1 << 16)),
                                      _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3));
  const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I), p->da, p->ns);
  return _mm256_fmadd_ps(t, _mm256_cvtph_ps(dd), acc);
}

#define Q4_PAIRS_MAX 256 /* n <= 16384 */

/* x (nb blocks, nb even) -> nb / 2 pairs; ns = off s / 4 (Q4_0: off = -8). */
AVX2_INLINE void q4_pair_repack(const struct act_q8 *x, int64_t nb, float off,
                                struct q4_pair_act *pa) {
  for (int64_t k = 0; k + 1 < nb; k += 2) {
    const __m256i q0 = _mm256_loadu_si256((const __m256i *)x[k].q);
    const __m256i q1 = _mm256_loadu_si256((const __m256i *)x[k + 1].q);
    struct q4_pair_act *p = &pa[k / 2];
    p->lo = _mm256_permute2x128_si256(q0, q1, 0x20);
    p->hi = _mm256_permute2x128_si256(q0, q1, 0x31);
    p->da = _mm256_set_m128(_mm_set1_ps(x[k + 1].d), _mm_set1_ps(x[k].d));
    const float o4 = off * 0.25f;
    p->ns = _mm256_set_m128(_mm_set1_ps(o4 * x[k + 1].s), _mm_set1_ps(o4 * x[k].s));
  }
}

AVX2 static void gemv_q4_0_avx2(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0,
                                int64_t r1, const struct act_q8 *x, float *out) {
  const int64_t nb = n / 32, np = nb / 2, q = (r1 - r0) / 4;
  const size_t qs = (size_t)q * w_stride;
  struct q4_pair_act pa[Q4_PAIRS_MAX];
  q4_pair_repack(x, nb, -8.0f, pa);
  PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES);
  for (int64_t i = 0; i < q; i++) {
    const uint8_t *wa = w + (size_t)(r0 + i) * w_stride;
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
    __m256 c = _mm256_setzero_ps(), d = _mm256_setzero_ps();
    for (int64_t k = 0; k < np; k++) {
      const uint8_t *ba = wa + 36 * k;
      /* one prefetch per stream per pair: a line every ~1.8 pairs, and the
       * next pair's bytes are at most one line further */
      _mm_prefetch((const char *)ba + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);
      _mm_prefetch((const char *)ba + qs + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);
      _mm_prefetch((const char *)ba + 2 * qs + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);
      _mm_prefetch((const char *)ba + 3 * qs + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);
      a = q4_0_lane_pair(ba, &pa[k], a);
      b = q4_0_lane_pair(ba + qs, &pa[k], b);
      c = q4_0_lane_pair(ba + 2 * qs, &pa[k], c);
      d = q4_0_lane_pair(ba + 3 * qs, &pa[k], d);
    }
    out[r0 + i] = hsum_ps(a);
    out[r0 + q + i] = hsum_ps(b);
    out[r0 + 2 * q + i] = hsum_ps(c);
    out[r0 + 3 * q + i] = hsum_ps(d);
  }
  for (int64_t r = r0 + 4 * q; r < r1; r++) {
    const uint8_t *wr = w + (size_t)r * w_stride;
    __m256 a = _mm256_setzero_ps();
    for (int64_t k = 0; k < np; k++) {
      _mm_prefetch((const char *)wr + 36 * k + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);
      a = q4_0_lane_pair(wr + 36 * k, &pa[k], a);
    }
    out[r] = hsum_ps(a);
  }
}

/* ---- decode (ncols = 1) Q5_0, Q4_1, Q5_1: four row streams ---------------
 * Q4_0's shape for the other 32-element types (they were the tiles, at
 * 0.45-0.60 of the probe from DRAM: bench/RESULTS.md). A pair's nibbles go
 * as Q4_0's (lo = [b0 q0-15 | b1 q0-15], hi = [b0 q16-31 | b1 q16-31]); a Q5
 * pair's fifth bits, the 64-bit qh0 | qh1 << 32 broadcast, become 0x10 in
 * each byte by a byte shuffle (lo takes bytes 0, 1 of each qh, hi bytes 2,
 * 3), an and with the byte's bit and a compare. i16 sums stay below
 * 2 x 2 x 31 x 127 = 15748: no saturation. Per lane (4 lanes a block):
 *   Q5_0:        acc += dw (da I + ns),  ns = -16 s / 4
 *   Q4_1, Q5_1:  acc += dw da I + mw ns, ns = s / 4   (x = d q + m)
 * BB, QS, QH, HAS_M, OFF as kernels_avx512_q32.c's DEFINE_GEMV_LEGACY. */
AVX2_INLINE __m256i fifth_bits_0x10(__m256i bcast, __m256i byte_idx) {
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
  const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(bcast, byte_idx), bit);
  return _mm256_and_si256(_mm256_cmpeq_epi8(b, bit), _mm256_set1_epi8(0x10));
}

#define DEFINE_GEMV_LEGACY_AVX2(name, BB, QS, QH, HAS_M, OFF)                                     \
  AVX2_INLINE __m256 name##_pair(const uint8_t *blk, const struct q4_pair_act *p, __m256 *acc) {  \
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);                         \
    const __m256i v = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blk + (BB) + (QS))),     \
                                       _mm_loadu_si128((const __m128i *)(blk + (QS))));            \
    __m256i lo = _mm256_and_si256(v, m4);                                                         \
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);                                   \
    if ((QH) >= 0) {                                                                              \
      uint32_t h0, h1;                                                                            \
      memcpy(&h0, blk + (QH), 4);                                                                 \
      memcpy(&h1, blk + (BB) + (QH), 4);                                                          \
      const __m256i hb = _mm256_set1_epi64x((long long)(h0 | (uint64_t)h1 << 32));              \
      const __m256i idx_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,    \
                                              4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5);   \
      const __m256i idx_hi = _mm256_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,    \
                                              6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);   \
      lo = _mm256_or_si256(lo, fifth_bits_0x10(hb, idx_lo));                                      \
      hi = _mm256_or_si256(hi, fifth_bits_0x10(hb, idx_hi));                                      \
    }                                                                                             \
    const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, p->lo),                         \
                                         _mm256_maddubs_epi16(hi, p->hi));                        \
    const __m256 fI = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));                           \
    if (HAS_M) {                                                                                  \
      uint32_t dm0, dm1;                                                                          \
      memcpy(&dm0, blk, 4);                                                                       \
      memcpy(&dm1, blk + (BB), 4);                                                                \
      const __m128i dm = _mm_cvtsi64_si128((long long)(dm0 | (uint64_t)dm1 << 32));               \
      const __m256 dw = _mm256_cvtph_ps(_mm_shuffle_epi8(                                          \
          dm, _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 4, 5, 4, 5, 4, 5, 4, 5)));                    \
      const __m256 mw = _mm256_cvtph_ps(_mm_shuffle_epi8(                                          \
          dm, _mm_setr_epi8(2, 3, 2, 3, 2, 3, 2, 3, 6, 7, 6, 7, 6, 7, 6, 7)));                    \
      *acc = _mm256_fmadd_ps(_mm256_mul_ps(fI, p->da), dw, *acc);                                 \
      return _mm256_fmadd_ps(p->ns, mw, *acc);                                                    \
    }                                                                                             \
    uint16_t d0, d1;                                                                              \
    memcpy(&d0, blk, 2);                                                                          \
    memcpy(&d1, blk + (BB), 2);                                                                   \
    const __m128i dd = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)(d0 | (uint32_t)d1 << 16)),        \
                                        _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3)); \
    return _mm256_fmadd_ps(_mm256_fmadd_ps(fI, p->da, p->ns), _mm256_cvtph_ps(dd), *acc);          \
  }                                                                                               \
  AVX2 static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,     \
                        const struct act_q8 *x, float *out) {                                     \
    const int64_t nb = n / 32, np = nb / 2, q = (r1 - r0) / 4;                                    \
    const size_t qs = (size_t)q * w_stride;                                                       \
    struct q4_pair_act pa[Q4_PAIRS_MAX];                                                          \
    q4_pair_repack(x, nb, (OFF), pa);                                                             \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES);   \
    for (int64_t i = 0; i < q; i++) {                                                             \
      const uint8_t *wa = w + (size_t)(r0 + i) * w_stride;                                        \
      __m256 acc[4];                                                                              \
      for (int s = 0; s < 4; s++) acc[s] = _mm256_setzero_ps();                                   \
      for (int64_t k = 0; k < np; k++)                                                            \
        for (int s = 0; s < 4; s++) {                                                             \
          const uint8_t *ba = wa + s * qs + 2 * (BB) * k;                                         \
          _mm_prefetch((const char *)ba + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);                 \
          acc[s] = name##_pair(ba, &pa[k], &acc[s]);                                              \
        }                                                                                         \
      for (int s = 0; s < 4; s++) out[r0 + s * q + i] = hsum_ps(acc[s]);                          \
    }                                                                                             \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                                   \
      const uint8_t *wr = w + (size_t)r * w_stride;                                               \
      __m256 a = _mm256_setzero_ps();                                                             \
      for (int64_t k = 0; k < np; k++) {                                                          \
        _mm_prefetch((const char *)wr + 2 * (BB) * k + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);    \
        a = name##_pair(wr + 2 * (BB) * k, &pa[k], &a);                                           \
      }                                                                                           \
      out[r] = hsum_ps(a);                                                                        \
    }                                                                                             \
  }

DEFINE_GEMV_LEGACY_AVX2(gemv_q5_0_avx2, 22, 6, 2, 0, -16.0f)
DEFINE_GEMV_LEGACY_AVX2(gemv_q4_1_avx2, 20, 4, -1, 1, 1.0f)
DEFINE_GEMV_LEGACY_AVX2(gemv_q5_1_avx2, 24, 8, 4, 1, 1.0f)

/* ---- decode (ncols = 1) Q8_0 and Q6_K: four row streams -------------------
 * The same four-stream shape for two more types (the Q4_0 comment above says
 * why): BLOCK(w, x, acc) adds one weight block's dot with its activation
 * block to the row's accumulator, the same arithmetic whichever stream. */
AVX2_INLINE void q8_0_row_block(const struct block_q8_0 *wb, const struct act_q8 *x,
                                __m256 *acc) {
  const __m256i wq = _mm256_loadu_si256((const __m256i *)wb->qs);
  const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x->q), wq);
  const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(dot_u8s8(_mm256_sign_epi8(wq, wq), sy)),
                                 _mm256_set1_ps(x->d));
  *acc = _mm256_fmadd_ps(t, _mm256_set1_ps(h2f(wb->d)), *acc);
}

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

#define DEFINE_GEMV4_AVX2(name, WBLOCK, XBLOCK, QK, BLOCK)                                     \
  AVX2 static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,  \
                        const XBLOCK *x, float *out) {                                        \
    const int64_t nb = n / (QK), q = (r1 - r0) / 4;                                           \
    const size_t qs = (size_t)q * w_stride;                                                   \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES); \
    for (int64_t i = 0; i < q; i++) {                                                         \
      const uint8_t *wa = w + (size_t)(r0 + i) * w_stride;                                    \
      __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),           \
                     _mm256_setzero_ps()};                                                    \
      for (int64_t k = 0; k < nb; k++) {                                                      \
        for (int s = 0; s < 4; s++)                                                           \
          PREFETCH_W(wa + s * qs + k * sizeof(WBLOCK), sizeof(WBLOCK));                       \
        for (int s = 0; s < 4; s++)                                                           \
          BLOCK((const WBLOCK *)(wa + s * qs) + k, x + k, &a[s]);                             \
      }                                                                                       \
      for (int s = 0; s < 4; s++) out[r0 + s * q + i] = hsum_ps(a[s]);                        \
    }                                                                                         \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                               \
      const WBLOCK *wr = (const WBLOCK *)(w + (size_t)r * w_stride);                          \
      __m256 a = _mm256_setzero_ps();                                                         \
      for (int64_t k = 0; k < nb; k++) {                                                      \
        PREFETCH_W(wr + k, sizeof(WBLOCK));                                                   \
        BLOCK(wr + k, x + k, &a);                                                             \
      }                                                                                       \
      out[r] = hsum_ps(a);                                                                    \
    }                                                                                         \
  }

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

DEFINE_GEMV4_AVX2(gemv_q8_0_avx2, struct block_q8_0, struct act_q8, 32, q8_0_row_block)
DEFINE_GEMV4_AVX2(gemv_q6_k_avx2, struct block_q6_k, struct act_q8k, QK_K, q6_k_row_block)

DEFINE_X86_GEMM(AVX2, gemm_f32, tile_f32)
DEFINE_X86_GEMM(AVX2, gemm_f16, tile_f16)
DEFINE_X86_GEMM(AVX2, gemm_bf16, tile_bf16)
DEFINE_X86_GEMM(AVX2, gemm_q8_0, tile_q8_0)
DEFINE_X86_GEMM(AVX2, gemm_q4_0, tile_q4_0)
DEFINE_X86_GEMM(AVX2, gemm_q4_1, tile_q4_1)
DEFINE_X86_GEMM(AVX2, gemm_q5_0, tile_q5_0)
DEFINE_X86_GEMM(AVX2, gemm_q5_1, tile_q5_1)
DEFINE_X86_GEMM(AVX2, gemm_q4_k, tile_q4_k)
DEFINE_X86_GEMM(AVX2, gemm_q5_k, tile_q5_k)
DEFINE_X86_GEMM(AVX2, gemm_q6_k, tile_q6_k)

/* ---- prefill (ncols >= 2), Q4_0, Q5_0, Q4_1, Q5_1: 8-row panels ----------
 * The tiles above spend per block and column a maddubs, a madd, a convert,
 * an FMA, a scalar scale product and its broadcast, and a scalar offset
 * term: ~7 operations for 32 multiply-adds. Here, as the VNNI path's panels
 * do with vpdpbusd, 8 rows of up to APANEL_KSEG blocks are transposed once
 * (gathers: lane i = row i's 4 unsigned weights 4k..4k+3, k < 4 low
 * nibbles, k >= 4 high nibbles, Q5's fifth bits as bit 4), and each column's
 * activations are broadcast 4 bytes at a time: one maddubs serves 8 rows x
 * 4 weights, its i16 pair sums added up in i16 over 4 groups (Q5: at most
 * 8 x 31 x 127 = 31496; Q4 could take 8, but 4 measured 5-17% faster: fewer
 * registers live) before one madd, so a block costs ~13 operations per
 * column for 8 rows. Per column and
 * block: acc += cvt(I) (dw da) + o s, o = dw off or the block's m, lanes =
 * rows; partial sums of a long row live in out between K segments. Q8_0's
 * weights are signed: its panel keeps them and their magnitudes, each group
 * is maddubs(|w|, sign(a, w)) (pairs up to 2 x 127 x 127: a madd per group),
 * ~35 operations a block and column for 8 rows against the tile's ~56. */
#define APANEL_KSEG 32
enum apanel_kind { AP_Q4_0, AP_Q5_0, AP_Q4_1, AP_Q5_1, AP_Q8_0 };
#define AP_BB(k) \
  ((k) == AP_Q4_0 ? 18 : (k) == AP_Q5_0 ? 22 : (k) == AP_Q4_1 ? 20 : (k) == AP_Q5_1 ? 24 : 34)
#define AP_QS(k) ((k) == AP_Q4_0 || (k) == AP_Q8_0 ? 2 : (k) == AP_Q5_0 ? 6 : (k) == AP_Q4_1 ? 4 : 8)
#define AP_QH(k) ((k) == AP_Q5_0 ? 2 : (k) == AP_Q5_1 ? 4 : -1)
#define AP_HAS_M(k) ((k) == AP_Q4_1 || (k) == AP_Q5_1)
#define AP_OFF(k) ((k) == AP_Q4_0 ? -8.0f : (k) == AP_Q5_0 ? -16.0f : 0.0f)

/* The low 16 bits of each of 8 dwords, as fp16, to floats. */
AVX2_INLINE __m256 apanel_f16_lo(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                        0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i p = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0x08);
  return _mm256_cvtph_ps(_mm256_castsi256_si128(p));
}

AVX2_INLINE void apanel_build(const uint8_t *pbase, __m256i ridx, __m256i lanes, int64_t b0,
                              int kb, const enum apanel_kind kind, __m256i (*pw)[16], __m256 *pd,
                              __m256 *po) {
  const __m256i m4 = _mm256_set1_epi8(15), z = _mm256_setzero_si256();
  const __m256i lo4 = _mm256_set1_epi32(15), spread = _mm256_set1_epi32(0x00204081);
  const __m256i bit0 = _mm256_set1_epi32(0x01010101);
  for (int j = 0; j < kb; j++) {
    const int *bp = (const int *)(pbase + (size_t)(b0 + j) * AP_BB(kind));
    const __m256i dv = _mm256_mask_i32gather_epi32(z, bp, ridx, lanes, 1);
    pd[j] = apanel_f16_lo(dv);
    po[j] = AP_HAS_M(kind) ? apanel_f16_lo(_mm256_srli_epi32(dv, 16))
                           : _mm256_mul_ps(pd[j], _mm256_set1_ps(AP_OFF(kind)));
    if (kind == AP_Q8_0) {
      for (int k = 0; k < 8; k++) {
        pw[j][k] = _mm256_mask_i32gather_epi32(
            z, (const int *)((const uint8_t *)bp + AP_QS(kind) + 4 * k), ridx, lanes, 1);
        pw[j][k + 8] = _mm256_abs_epi8(pw[j][k]);
      }
      continue;
    }
    for (int k = 0; k < 4; k++) {
      const __m256i raw = _mm256_mask_i32gather_epi32(
          z, (const int *)((const uint8_t *)bp + AP_QS(kind) + 4 * k), ridx, lanes, 1);
      pw[j][k] = _mm256_and_si256(raw, m4);
      pw[j][k + 4] = _mm256_and_si256(_mm256_srli_epi32(raw, 4), m4);
    }
    if (AP_QH(kind) >= 0) {
      const __m256i h = _mm256_mask_i32gather_epi32(
          z, (const int *)((const uint8_t *)bp + AP_QH(kind)), ridx, lanes, 1);
      /* bits 4k..4k+3 of qh to bit 0 of four bytes: the 4-bit value times
       * 1 + 2^7 + 2^14 + 2^21 puts bit i at 8i (copies 7 apart: no carries) */
      for (int k = 0; k < 8; k++) {
        const __m256i nib = _mm256_and_si256(_mm256_srli_epi32(h, 4 * k), lo4);
        pw[j][k] = _mm256_or_si256(
            pw[j][k], _mm256_slli_epi32(_mm256_and_si256(_mm256_mullo_epi32(nib, spread), bit0), 4));
      }
    }
  }
}

AVX2_INLINE void apanel_cols(__m256i (*pw)[16], const __m256 *pd, const __m256 *po, int kb,
                             const enum apanel_kind kind, const uint8_t *a, size_t as, int64_t b0,
                             const int nc, float *o, int64_t os, __m256i lanes, int first) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int fold = 4; /* groups summed in i16 before a madd */
  __m256 acc[4];
  for (int c = 0; c < nc; c++)
    acc[c] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(o + c * os, lanes);
  for (int j = 0; j < kb; j++) {
    const struct act_q8 *x[4];
    __m256i I[4];
    for (int c = 0; c < nc; c++) {
      x[c] = (const struct act_q8 *)(a + c * as) + b0 + j;
      I[c] = _mm256_setzero_si256();
    }
    if (kind == AP_Q8_0) {
      for (int k = 0; k < 8; k++) {
        const __m256i ws = pw[j][k], wa = pw[j][k + 8];
        for (int c = 0; c < nc; c++) {
          int32_t q4b;
          memcpy(&q4b, x[c]->q + 4 * k, 4);
          const __m256i p =
              _mm256_maddubs_epi16(wa, _mm256_sign_epi8(_mm256_set1_epi32(q4b), ws));
          I[c] = _mm256_add_epi32(I[c], _mm256_madd_epi16(p, ones));
        }
      }
    }
    for (int k0 = 0; kind != AP_Q8_0 && k0 < 8; k0 += fold) {
      __m256i s16[4];
      for (int c = 0; c < nc; c++) s16[c] = _mm256_setzero_si256();
      for (int k = k0; k < k0 + fold; k++) {
        const __m256i wk = pw[j][k];
        for (int c = 0; c < nc; c++) {
          int32_t q4b;
          memcpy(&q4b, x[c]->q + 4 * k, 4);
          s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(wk, _mm256_set1_epi32(q4b)));
        }
      }
      for (int c = 0; c < nc; c++) I[c] = _mm256_add_epi32(I[c], _mm256_madd_epi16(s16[c], ones));
    }
    for (int c = 0; c < nc; c++) {
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[c]), _mm256_mul_ps(pd[j], _mm256_set1_ps(x[c]->d)),
                               acc[c]);
      if (kind != AP_Q8_0) acc[c] = _mm256_fmadd_ps(po[j], _mm256_set1_ps(x[c]->s), acc[c]);
    }
  }
  for (int c = 0; c < nc; c++) _mm256_maskstore_ps(o + c * os, lanes, acc[c]);
}

/* The AVX2 panel kernels' driver: 8-row panels of [r0, r1) (lanes: the
 * rows present), each through PANEL_SEGMENTS. BUILD and COLS see ridx, p,
 * lanes, pbase, s, kb and c. */
#define APANEL_DRIVE(nb, kseg, BUILD, COLS)                                                     \
  const __m256i lane_no = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);                             \
  const __m256i ridx = _mm256_mullo_epi32(lane_no, _mm256_set1_epi32((int)w_stride));            \
  for (int64_t p = r0; p < r1; p += 8) {                                                         \
    const int nr = (int)(r1 - p < 8 ? r1 - p : 8);                                               \
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane_no);                    \
    const uint8_t *pbase = w + (size_t)p * w_stride;                                             \
    PANEL_SEGMENTS(nb, kseg, BUILD, COLS)                                                        \
  }

AVX2_INLINE void apanel_gemm(const enum apanel_kind kind, int64_t n, const uint8_t *w,
                             size_t w_stride, int64_t r0, int64_t r1, const uint8_t *a, size_t as,
                             int64_t ncols, float *out, int64_t os) {
  __m256i pw[APANEL_KSEG][16]; /* Q8_0: the signed weights (k < 8) and their magnitudes */
  __m256 pd[APANEL_KSEG], po[APANEL_KSEG];
#define AP_COLS(nc) \
  apanel_cols(pw, pd, po, kb, kind, a + c * as, as, s, nc, out + c * os + p, os, lanes, s == 0)
  APANEL_DRIVE(n / 32, APANEL_KSEG, apanel_build(pbase, ridx, lanes, s, kb, kind, pw, pd, po),
               AP_COLS)
#undef AP_COLS
}

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

/* The entries: the decode kernel for one column (DECODE_OK: rows it
 * takes), the panels for min_cols columns or more (strides within the
 * gathers' 32-bit reach), the tiles otherwise. min_cols: where a panel's
 * build pays for itself (/tmp harness, 3072 x 1024 from cache, GOPS at 2 /
 * 4 / 8 columns: Q8_0 tiles 76 / 81 / 81, panels 54 / 78 / 98; Q6_K tiles
 * 76 / 98 / 98, panels 52 / 83 / 113; the 4- and 5-bit types' panels are as
 * fast or faster from 2 columns). */
#define DEFINE_AVX2_LEGACY_FAST(name, gemv, DECODE_OK, kind, min_cols, tiles)                 \
  AVX2 static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,    \
                        const void *a, size_t a_stride, int64_t ncols, float *out,            \
                        int64_t out_stride) {                                                 \
    if (ncols == 1 && (DECODE_OK))                                                            \
      gemv(n, w, w_stride, r0, r1, a, out);                                                   \
    else if (ncols >= (min_cols) && w_stride <= (size_t)(INT32_MAX / 8))                      \
      apanel_gemm(kind, n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);         \
    else                                                                                      \
      tiles(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                     \
  }
#define PAIRS_OK (n % 64 == 0 && n / 64 <= Q4_PAIRS_MAX)
DEFINE_AVX2_LEGACY_FAST(gemm_q4_0_fast, gemv_q4_0_avx2, PAIRS_OK, AP_Q4_0, 2, gemm_q4_0)
DEFINE_AVX2_LEGACY_FAST(gemm_q5_0_fast, gemv_q5_0_avx2, PAIRS_OK, AP_Q5_0, 2, gemm_q5_0)
DEFINE_AVX2_LEGACY_FAST(gemm_q4_1_fast, gemv_q4_1_avx2, PAIRS_OK, AP_Q4_1, 2, gemm_q4_1)
DEFINE_AVX2_LEGACY_FAST(gemm_q5_1_fast, gemv_q5_1_avx2, PAIRS_OK, AP_Q5_1, 2, gemm_q5_1)
DEFINE_AVX2_LEGACY_FAST(gemm_q8_0_fast, gemv_q8_0_avx2, n % 32 == 0, AP_Q8_0, 6, gemm_q8_0)
#undef PAIRS_OK



/* ---- activation quantizers (same bytes as the scalar ones) -------------- */

/* Quantizes 32 floats with inverse scale id into q; returns the 4 i32 vectors'
 * sum as a vector of 8 partial sums (callers reduce). */
AVX2_INLINE __m256i quant32(const float *x, int8_t *q, float id, __m256i *sum16_lo,
                            __m256i *sum16_hi) {
  const __m256 vid = _mm256_set1_ps(id), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
  __m256i v[4];
  for (int k = 0; k < 4; k++) {
    __m256 f = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v[k] = _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(f, hi), lo));
  }
  __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i *)q, p);
  *sum16_lo = _mm256_add_epi32(v[0], v[1]);
  *sum16_hi = _mm256_add_epi32(v[2], v[3]);
  return _mm256_add_epi32(*sum16_lo, *sum16_hi);
}

AVX2_INLINE float amax_ps(const float *x, int len) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < len; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* Same rounding as kernels_scalar.c's quantizers (llama.cpp's): see there. */
AVX2 static void avx2_quantize_q8(const float *x, struct act_q8 *y, int64_t n) {
  for (int64_t b = 0; b < n / 32; b++) {
    float amax = amax_ps(x + 32 * b, 32);
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    __m256i l, h;
    int32_t sum = hsum_epi32(quant32(x + 32 * b, y[b].q, id, &l, &h));
    y[b].d = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    y[b].s = y[b].d * (float)sum;
  }
}

AVX2 static void avx2_quantize_q8k(const float *x, struct act_q8k *y, int64_t n) {
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float *xb = x + QK_K * b;
    float amax = amax_ps(xb, QK_K);
    if (amax == 0.0f) {
      memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    /* The signed value of largest magnitude, the first one in order. */
    float max = 0.0f;
    for (int i = 0; i < QK_K; i++)
      if (fabsf(xb[i]) == amax) {
        max = xb[i];
        break;
      }
    float iscale = -127.0f / max;
    for (int j = 0; j < 8; j++) {
      __m256i l, h;
      quant32(xb + 32 * j, y[b].q + 32 * j, iscale, &l, &h);
      y[b].bsums[2 * j] = (int16_t)hsum_epi32(l);
      y[b].bsums[2 * j + 1] = (int16_t)hsum_epi32(h);
    }
    y[b].d = 1.0f / iscale;
  }
}

/* ---- f16 helpers -------------------------------------------------------- */

AVX2 static float avx2_dot_f16_f32(const uint16_t *k, const float *q, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(LOAD_F16(k + i), _mm256_loadu_ps(q + i), a0);
    a1 = _mm256_fmadd_ps(LOAD_F16(k + i + 8), _mm256_loadu_ps(q + i + 8), a1);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(LOAD_F16(k + i), _mm256_loadu_ps(q + i), a0);
  float s = hsum_ps(_mm256_add_ps(a0, a1));
  for (; i < n; i++) s += h2f(k[i]) * q[i];
  return s;
}

AVX2 static void avx2_axpy_f16(float *y, float a, const uint16_t *v, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, LOAD_F16(v + i), _mm256_loadu_ps(y + i)));
  for (; i < n; i++) y[i] += a * h2f(v[i]);
}

AVX2 static void avx2_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

/* y = f16(f32(y) * a): F16C conversions, rounding to nearest even. The f32
 * multiply-add is fused here and in scalar_mad_f16's compiled form may not
 * be; the test allows one f16 ulp. */
AVX2 static void avx2_scale_f16(uint16_t *y, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i),
                     _mm256_cvtps_ph(_mm256_mul_ps(LOAD_F16(y + i), va), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(h2f(y[i]) * a, _MM_FROUND_TO_NEAREST_INT);
}

AVX2 static void avx2_mad_f16(uint16_t *y, float a, const uint16_t *v, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i),
                     _mm256_cvtps_ph(_mm256_fmadd_ps(LOAD_F16(v + i), va, LOAD_F16(y + i)),
                                     _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(h2f(y[i]) + a * h2f(v[i]), _MM_FROUND_TO_NEAREST_INT);
}

void kernels_fill_avx2(struct kernel_ops *ops) {
  ops->path = KERNEL_AVX2;
  ops->name = "avx2";
  ops->gemm[GGML_TYPE_F32] = gemm_f32;
  ops->gemm[GGML_TYPE_F16] = gemm_f16;
  ops->gemm[GGML_TYPE_BF16] = gemm_bf16;
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_fast;
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_fast;
  ops->gemm[GGML_TYPE_Q4_1] = gemm_q4_1_fast;
  ops->gemm[GGML_TYPE_Q5_0] = gemm_q5_0_fast;
  ops->gemm[GGML_TYPE_Q5_1] = gemm_q5_1_fast;
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_fast;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_fast;
  ops->quantize_q8 = avx2_quantize_q8;
  ops->quantize_q8k = avx2_quantize_q8k;
  ops->dot_f16_f32 = avx2_dot_f16_f32;
  ops->axpy_f16 = avx2_axpy_f16;
  ops->f32_to_f16 = avx2_f32_to_f16;
  ops->scale_f16 = avx2_scale_f16;
  ops->mad_f16 = avx2_mad_f16;
  kernels_fill_rowops(ops);
}
#endif
