/* kernels_avx2_q32: the AVX2 path's kernels for the 32-element block types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0; kernels_avx2.h says how the path is split):
 * the per-block tiles, the four-stream decode kernels (one column), the
 * 8-row prefill panels, and their table entries. */
#include "engine/kernels_avx2.h"

#if defined(__x86_64__)
#include <string.h>

#include "gguf/quant_ref.h"

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

/* A pair unpacked (q4_pair_unpack), then applied to one column's repacked
 * pair (q4_pair_col): q4_0_lane_pair is the two, and the few-column kernel
 * below unpacks once for several columns with each column's operations
 * unchanged (same bits). */
struct q4_pair_w {
  __m256i lo, hi;
  __m256 dw;
};
AVX2_INLINE struct q4_pair_w q4_pair_unpack(const uint8_t *blk) {
  const __m256i m4 = _mm256_set1_epi8(15);
  const __m256i v = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blk + 20)),
                                     _mm_loadu_si128((const __m128i *)(blk + 2)));
  struct q4_pair_w u;
  u.lo = _mm256_and_si256(v, m4);
  u.hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  /* the two fp16 scales, each on four lanes */
  uint16_t d0, d1;
  memcpy(&d0, blk, 2);
  memcpy(&d1, blk + 18, 2);
  const __m128i dd = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)(d0 | (uint32_t)d1 << 16)),
                                      _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3));
  u.dw = _mm256_cvtph_ps(dd);
  return u;
}
AVX2_INLINE __m256 q4_pair_col(const struct q4_pair_w *u, const struct q4_pair_act *p, __m256 acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  /* each i16 sum is at most 2 x 2 x 15 x 127 = 7620: no saturation */
  const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(u->lo, p->lo),
                                       _mm256_maddubs_epi16(u->hi, p->hi));
  const __m256i I = _mm256_madd_epi16(p16, ones);
  const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I), p->da, p->ns);
  return _mm256_fmadd_ps(t, u->dw, acc);
}
AVX2_INLINE __m256 q4_0_lane_pair(const uint8_t *blk, const struct q4_pair_act *p, __m256 acc) {
  const struct q4_pair_w u = q4_pair_unpack(blk);
  return q4_pair_col(&u, p, acc);
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

/* ---- Q4_0, a few columns (a batched decode step) ------------------------
 * Each pair of blocks of a row unpacked once (q4_pair_unpack) for up to
 * Q4_FEW_COLS columns (q4_pair_col each: the decode's operations, pairs in
 * order, hsum_ps at the row's end), so each column's outputs have the bits
 * of its decode (kernels.h gemm_few). One row at a time: the 16 vector
 * registers hold the columns' accumulators, the unpacked pair and the
 * constants. Columns in groups evened out (12 = 6 + 6), each group's
 * activations repacked into Q4_FEW_SLOTS pairs on the stack (64 KiB; wide
 * rows take fewer columns per group). Rows whose width is not a multiple
 * of 64 go to gemm_q4_0_fast once per column, as the decode would. */
#define Q4_FEW_COLS 8
#define Q4_FEW_SLOTS 512
AVX2_INLINE void few_q4_0_rows(const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,
                               int64_t np, const struct q4_pair_act *pa, const int nc, float *out,
                               int64_t os) {
  for (int64_t r = r0; r < r1; r++) {
    const uint8_t *wr = w + (size_t)r * w_stride;
    __m256 acc[Q4_FEW_COLS];
    for (int c = 0; c < nc; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t k = 0; k < np; k++) {
      _mm_prefetch((const char *)wr + 36 * k + KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT);
      const struct q4_pair_w u = q4_pair_unpack(wr + 36 * k);
      for (int c = 0; c < nc; c++) acc[c] = q4_pair_col(&u, pa + c * np + k, acc[c]);
    }
    for (int c = 0; c < nc; c++) out[c * os + r] = hsum_ps(acc[c]);
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

/* ---- decode (ncols = 1) Q8_0: four row streams ---------------------------
 * kernels_avx2.h's DEFINE_GEMV4_AVX2 with one Q8_0 block as BLOCK. */
AVX2_INLINE void q8_0_row_block(const struct block_q8_0 *wb, const struct act_q8 *x,
                                __m256 *acc) {
  const __m256i wq = _mm256_loadu_si256((const __m256i *)wb->qs);
  const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x->q), wq);
  const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(dot_u8s8(_mm256_sign_epi8(wq, wq), sy)),
                                 _mm256_set1_ps(x->d));
  *acc = _mm256_fmadd_ps(t, _mm256_set1_ps(h2f(wb->d)), *acc);
}

DEFINE_GEMV4_AVX2(gemv_q8_0_avx2, struct block_q8_0, struct act_q8, 32, q8_0_row_block)

DEFINE_X86_GEMM(AVX2, gemm_q8_0, tile_q8_0)
DEFINE_X86_GEMM(AVX2, gemm_q4_0, tile_q4_0)
DEFINE_X86_GEMM(AVX2, gemm_q4_1, tile_q4_1)
DEFINE_X86_GEMM(AVX2, gemm_q5_0, tile_q5_0)
DEFINE_X86_GEMM(AVX2, gemm_q5_1, tile_q5_1)

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

/* The entries: the decode kernel for one column (DECODE_OK: rows it
 * takes), the panels for min_cols columns or more (strides within the
 * gathers' 32-bit reach), the tiles otherwise. min_cols: where a panel's
 * build pays for itself (/tmp harness, 3072 x 1024 from cache, GOPS at 2 /
 * 4 / 8 columns: Q8_0 tiles 76 / 81 / 81, panels 54 / 78 / 98; the 4- and
 * 5-bit types' panels are as fast or faster from 2 columns; Q6_K's, in
 * kernels_avx2_kquant.c, from 6). */
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

AVX2 static void few_q4_0_avx2(int64_t n, const void *wv, size_t w_stride, int64_t r0, int64_t r1,
                               const void *av, size_t a_stride, int64_t ncols, float *out,
                               int64_t os) {
  const int64_t np = n / 64;
  const uint8_t *w = wv, *a = av;
  if (n % 64 != 0 || np > Q4_PAIRS_MAX) {
    for (int64_t c = 0; c < ncols; c++)
      gemm_q4_0_fast(n, w, w_stride, r0, r1, a + (size_t)c * a_stride, a_stride, 1, out + c * os, os);
    return;
  }
  struct q4_pair_act pa[Q4_FEW_SLOTS];
  const int64_t cap = Q4_FEW_SLOTS / np < Q4_FEW_COLS ? Q4_FEW_SLOTS / np : Q4_FEW_COLS;
  const int64_t groups = (ncols + cap - 1) / cap;
  for (int64_t g = 0; g < groups; g++) {
    const int64_t c0 = ncols * g / groups, c1 = ncols * (g + 1) / groups;
    for (int64_t c = c0; c < c1; c++)
      q4_pair_repack((const struct act_q8 *)(a + (size_t)c * a_stride), n / 32, -8.0f,
                     pa + (c - c0) * np);
    float *o = out + c0 * os;
    switch (c1 - c0) {
    case 1: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 1, o, os); break;
    case 2: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 2, o, os); break;
    case 3: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 3, o, os); break;
    case 4: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 4, o, os); break;
    case 5: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 5, o, os); break;
    case 6: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 6, o, os); break;
    case 7: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 7, o, os); break;
    default: few_q4_0_rows(w, w_stride, r0, r1, np, pa, 8, o, os); break;
    }
  }
}

void kernels_fill_avx2_q32(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_fast;
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_fast;
  ops->gemm_few[GGML_TYPE_Q4_0] = few_q4_0_avx2;
  ops->gemm[GGML_TYPE_Q4_1] = gemm_q4_1_fast;
  ops->gemm[GGML_TYPE_Q5_0] = gemm_q5_0_fast;
  ops->gemm[GGML_TYPE_Q5_1] = gemm_q5_1_fast;
}
#endif
