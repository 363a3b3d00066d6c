/* kernels_avx512_q32: the VNNI path's kernels for the 32-element block types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0; kernels_avx512.h says how the AVX-512 path
 * is split): tiles with one vpdpbusd per block, decode kernels with two
 * blocks per 512-bit vpdpbusd, and their table entries (prefill through
 * kernels_avx512_panels.c). */
#include "engine/kernels_avx512.h"

#if defined(__x86_64__)
#include <stdalign.h>
#include <string.h>

#include "gguf/quant_ref.h"

/* ---- VNNI: 32-element blocks -------------------------------------------- */

/* Weight block -> 32 unsigned bytes in activation order (low nibbles are
 * elements 0..15, high nibbles 16..31; Q5's fifth bit from the qh mask). */
VNNI_INLINE __m256i nibbles(const uint8_t *qs) {
  __m128i raw = _mm_loadu_si128((const __m128i *)qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
}
VNNI_INLINE __m256i fifth_bit(const uint8_t *qh) {
  uint32_t bits;
  memcpy(&bits, qh, 4);
  return _mm256_maskz_mov_epi8((__mmask32)bits, _mm256_set1_epi8(0x10));
}
VNNI_INLINE __m256i vq4_0(const struct block_q4_0 *b) { return nibbles(b->qs); }
VNNI_INLINE __m256i vq4_1(const struct block_q4_1 *b) { return nibbles(b->qs); }
VNNI_INLINE __m256i vq5_0(const struct block_q5_0 *b) { return _mm256_or_si256(nibbles(b->qs), fifth_bit(b->qh)); }
VNNI_INLINE __m256i vq5_1(const struct block_q5_1 *b) { return _mm256_or_si256(nibbles(b->qs), fifth_bit(b->qh)); }

/* kernels_x86.h's DEFINE_BLOCK_TILE with one vpdpbusd per block and column. */
#define VNNI_DOT(wq, xq) _mm256_dpbusd_epi32(_mm256_setzero_si256(), wq, xq)
#define VNNI_BLOCK_TILE(fn, WBLOCK, UNPACK, OFFSET_MUL, HAS_M) \
  DEFINE_BLOCK_TILE(VNNI_INLINE, fn, WBLOCK, UNPACK, OFFSET_MUL, HAS_M, VNNI_DOT, _cvtsh_ss, \
                    hsum256)

VNNI_BLOCK_TILE(tile_q4_0_vnni, struct block_q4_0, vq4_0, -8.0f, 0)
VNNI_BLOCK_TILE(tile_q4_1_vnni, struct block_q4_1, vq4_1, 0.0f, 1)
VNNI_BLOCK_TILE(tile_q5_0_vnni, struct block_q5_0, vq5_0, -16.0f, 0)
VNNI_BLOCK_TILE(tile_q5_1_vnni, struct block_q5_1, vq5_1, 0.0f, 1)

DEFINE_Q8_0_TILE(VNNI_INLINE, tile_q8_0_vnni, _mm256_abs_epi8, VNNI_DOT, _cvtsh_ss, hsum256)

DEFINE_X86_GEMM(VNNI, gemm_q4_0_vnni, tile_q4_0_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q4_1_vnni, tile_q4_1_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q5_0_vnni, tile_q5_0_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q5_1_vnni, tile_q5_1_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q8_0_vnni, tile_q8_0_vnni)


/* ---- VNNI decode (ncols = 1), Q4_0 and Q8_0: two blocks per vpdpbusd ----- */

/* The activation row is repacked once per call (the call's rows all reuse it)
 * into pairs of blocks laid out as the weights unpack: 64 int8 lanes
 * [a0[0:16] a1[0:16] a0[16:32] a1[16:32]] (Q4_0: low nibbles of both blocks,
 * then high nibbles) or [a0 a1] (Q8_0), with per-i32-lane floats da (the
 * block's activation scale) and ns (the block's offset term spread over its
 * 8 lanes: off * s / 8). Per weight pair and lane:
 *   acc += dw * (da * I + ns),   I = vpdpbusd(u8 weights, int8 activations),
 * where the weights go in unsigned (Q4_0: 0..15, offset -8; Q8_0: w ^ 0x80 =
 * w + 128, offset -128), so each block adds dw (da dot(u, q) + off s) =
 * dw da dot(w, q) exactly as the scalar kernel's terms (summation order
 * differs). An odd last block is a pair with a zero second block. */
struct vnni_pair {
  __m512i q;
  __m512 da, ns;
};
#define VNNI_DECODE_MAX_PAIRS 256 /* n <= 16384 on the fast path (48 KiB stack) */

VNNI_INLINE void vnni_repack(const struct act_q8 *x, int64_t nb, int q4, float off,
                             struct vnni_pair *pa) {
  const __m512i lane_blk = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i lane_blk8 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  for (int64_t p = 0; p < (nb + 1) / 2; p++) {
    const struct act_q8 *x0 = x + 2 * p;
    int two = 2 * p + 1 < nb;
    __m256i a0 = _mm256_loadu_si256((const __m256i *)x0->q);
    __m256i a1 = two ? _mm256_loadu_si256((const __m256i *)x0[1].q) : _mm256_setzero_si256();
    __m512i q;
    if (q4) {
      __m256i lo = _mm256_permute2x128_si256(a0, a1, 0x20), hi = _mm256_permute2x128_si256(a0, a1, 0x31);
      q = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    } else {
      q = _mm512_inserti64x4(_mm512_castsi256_si512(a0), a1, 1);
    }
    __m128 d2 = _mm_setr_ps(x0->d, two ? x0[1].d : 0.0f, 0, 0);
    __m128 s2 = _mm_mul_ps(_mm_setr_ps(x0->s, two ? x0[1].s : 0.0f, 0, 0), _mm_set1_ps(off * 0.125f));
    __m512i idx = q4 ? lane_blk : lane_blk8;
    pa[p].q = q;
    pa[p].da = _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(d2));
    pa[p].ns = _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(s2));
  }
}

/* One group of four Q4_0 pairs (8 blocks, 144 bytes at g) of a row: their 8
 * fp16 scales (words 0, 9, .., 63 of the group's first 128 bytes) converted
 * with one permute and one cvtph. */
VNNI_INLINE void q4_group(const uint8_t *g, const struct vnni_pair *pp, __m512 *acc0,
                          __m512 *acc1) {
  const __m512i m4 = _mm512_set1_epi8(15);
  const __m512i didx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i d8idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0, 0, 63, 54, 45, 36, 27, 18, 9, 0);
  PREFETCH_W(g, 144);
  __m512i h = _mm512_permutex2var_epi16(_mm512_loadu_si512(g), d8idx, _mm512_loadu_si512(g + 64));
  __m512 d8 = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm512_castsi512_si128(h)));
  for (int j = 0; j < 4; j++) {
    const uint8_t *base = g + 36 * j;
    __m256i v = _mm256_loadu2_m128i((const __m128i *)(base + 20), (const __m128i *)(base + 2));
    __m512i wq = _mm512_and_si512(
        _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), m4);
    __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, pp[j].q);
    __m512 dw = _mm512_permutexvar_ps(_mm512_add_epi32(didx, _mm512_set1_epi32(2 * j)), d8);
    __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), pp[j].da, pp[j].ns);
    if (j & 1) *acc1 = _mm512_fmadd_ps(t, dw, *acc1);
    else *acc0 = _mm512_fmadd_ps(t, dw, *acc0);
  }
}

/* The pairs from p on (fewer than four) and an odd last block, then the sum. */
VNNI_INLINE float q4_finish(const uint8_t *wr, int64_t p, int64_t np, int64_t nb,
                            const struct vnni_pair *pa, __m512 acc0, __m512 acc1) {
  const __m512i m4 = _mm512_set1_epi8(15);
  const __m512i didx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  for (; p < np; p++) {
    const uint8_t *base = wr + 36 * p;
    PREFETCH_W(base, 1);
    __m256i v = _mm256_loadu2_m128i((const __m128i *)(base + 20), (const __m128i *)(base + 2));
    __m512i wq = _mm512_and_si512(
        _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), m4);
    __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, pa[p].q);
    uint16_t d0, d1;
    memcpy(&d0, base, 2);
    memcpy(&d1, base + 18, 2);
    __m512 dw = _mm512_permutexvar_ps(
        didx, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)(d0 | (uint32_t)d1 << 16)))));
    __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), pa[p].da, pa[p].ns);
    if (p & 1) acc1 = _mm512_fmadd_ps(t, dw, acc1);
    else acc0 = _mm512_fmadd_ps(t, dw, acc0);
  }
  if (nb & 1) {
    const uint8_t *base = wr + 36 * p;
    __m256i v = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(base + 2)));
    __m512i wq = _mm512_and_si512(
        _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), m4);
    __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, pa[p].q);
    uint16_t d0;
    memcpy(&d0, base, 2);
    __m512 dw = _mm512_permutexvar_ps(didx, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)d0))));
    __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), pa[p].da, pa[p].ns);
    acc0 = _mm512_fmadd_ps(t, dw, acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

/* Rows go in two interleaved streams (rows r and r + half of the range), so
 * a thread has two sequential weight streams in flight: on 4 KiB pages the
 * hardware prefetcher restarts at every page, and two streams keep more
 * misses outstanding. Each row's operations are the same either way (same
 * bits whatever the range). */
VNNI static void gemv_q4_0_vnni(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0,
                                int64_t r1, const struct act_q8 *x, float *out) {
  const int64_t nb = n / 32, np = nb / 2, ng = np / 4;
  alignas(64) struct vnni_pair pa[VNNI_DECODE_MAX_PAIRS];
  vnni_repack(x, nb, 1, -8.0f, pa);
#ifdef KERNEL_ONE_STREAM
  const int64_t half = 0;
#else
  const int64_t half = (r1 - r0) / 2;
#endif
  for (int64_t i = 0; i < half; i++) {
    const uint8_t *wa = w + (size_t)(r0 + i) * w_stride, *wb = w + (size_t)(r0 + half + i) * w_stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    for (int64_t gi = 0; gi < ng; gi++) {
      q4_group(wa + 144 * gi, pa + 4 * gi, &a0, &a1);
      q4_group(wb + 144 * gi, pa + 4 * gi, &b0, &b1);
    }
    out[r0 + i] = q4_finish(wa, 4 * ng, np, nb, pa, a0, a1);
    out[r0 + half + i] = q4_finish(wb, 4 * ng, np, nb, pa, b0, b1);
  }
  for (int64_t r = r0 + 2 * half; r < r1; r++) {
    const uint8_t *wr = w + (size_t)r * w_stride;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t gi = 0; gi < ng; gi++) q4_group(wr + 144 * gi, pa + 4 * gi, &acc0, &acc1);
    out[r] = q4_finish(wr, 4 * ng, np, nb, pa, acc0, acc1);
  }
}

/* Pair p of a Q8_0 row (two 34-byte blocks at base); one = 0 for an odd
 * last block alone (its missing second half becomes 0x80 ^ 0x80 = 0). */
VNNI_INLINE void q8_pair(const uint8_t *base, const struct vnni_pair *pp, int two, __m512 *acc) {
  const __m512i sgn = _mm512_set1_epi8((char)0x80);
  const __m512i didx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  __m256i hi = two ? _mm256_loadu_si256((const __m256i *)(base + 36)) : _mm256_set1_epi8((char)0x80);
  __m512i v = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(base + 2))), hi, 1);
  __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(v, sgn), pp->q);
  uint16_t d0, d1 = 0;
  memcpy(&d0, base, 2);
  if (two) memcpy(&d1, base + 34, 2);
  __m512 dw = _mm512_permutexvar_ps(
      didx, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)(d0 | (uint32_t)d1 << 16)))));
  __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), pp->da, pp->ns);
  *acc = _mm512_fmadd_ps(t, dw, *acc);
}

/* One Q8_0 row's dot product: the pairs into two accumulators. */
VNNI_INLINE void q8_row_pairs(const uint8_t *wr, const struct vnni_pair *pa, int64_t p,
                              __m512 a[2]) {
  PREFETCH_W(wr + 68 * p, 65);
  q8_pair(wr + 68 * p, &pa[p], 1, &a[p & 1]);
}

/* Four interleaved row streams (r, r + q, r + 2q, r + 3q): more misses in
 * flight per core than two (bench/RESULTS.md, 2026-11-29). */
VNNI static void gemv_q8_0_vnni(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0,
                                int64_t r1, const struct act_q8 *x, float *out) {
  const int64_t nb = n / 32, np = nb / 2;
  alignas(64) struct vnni_pair pa[VNNI_DECODE_MAX_PAIRS];
  vnni_repack(x, nb, 0, -128.0f, pa);
#ifdef KERNEL_ONE_STREAM
  const int64_t q = 0;
#else
  const int64_t q = (r1 - r0) / 4;
#endif
  const size_t qs = (size_t)q * w_stride;
  PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES);
  for (int64_t i = 0; i < q; i++) {
    const uint8_t *w0 = w + (size_t)(r0 + i) * w_stride;
    __m512 a[4][2];
    for (int s = 0; s < 4; s++) a[s][0] = a[s][1] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p < np; p++)
      for (int s = 0; s < 4; s++) q8_row_pairs(w0 + s * qs, pa, p, a[s]);
    if (nb & 1)
      for (int s = 0; s < 4; s++) q8_pair(w0 + s * qs + 68 * p, &pa[p], 0, &a[s][0]);
    for (int s = 0; s < 4; s++)
      out[r0 + s * q + i] = _mm512_reduce_add_ps(_mm512_add_ps(a[s][0], a[s][1]));
  }
  for (int64_t r = r0 + 4 * q; r < r1; r++) {
    const uint8_t *wr = w + (size_t)r * w_stride;
    __m512 a[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t p = 0;
    for (; p < np; p++) q8_row_pairs(wr, pa, p, a);
    if (nb & 1) q8_pair(wr + 68 * p, &pa[p], 0, &a[0]);
    out[r] = _mm512_reduce_add_ps(_mm512_add_ps(a[0], a[1]));
  }
}

/* ---- VNNI decode (ncols = 1), Q5_0, Q4_1, Q5_1: two blocks per vpdpbusd --
 * The tile kernels spent about nine vector operations per block on these
 * types (a 256-bit vpdpbusd each, the fifth bits by a masked move and an or,
 * the offset term in scalar code) and decoded at 12-13 GB/s per core from
 * cache or DRAM alike: compute-bound (bench/RESULTS.md). Here a pair of
 * blocks is one 512-bit vpdpbusd against the Q8_0 activation layout
 * (vnni_repack, q4 = 0: [a0 | a1]), the pair's weights unpacked as
 * [b0 q0-15 | b0 q16-31 | b1 q0-15 | b1 q16-31], i.e. each block's 16 nibble
 * bytes in two 128-bit lanes, the second shifted right by 4. In that order
 * the fifth bits of a Q5 pair are exactly the 64-bit mask qh0 | qh1 << 32
 * (element j's bit is bit j of its block's u32), added as 16 under the mask.
 * Per lane (a block spans 8 lanes):
 *   Q5_0:        acc += dw (da I + ns),  ns = -16 s / 8
 *   Q4_1, Q5_1:  acc += dw da I + mw ns, ns = s / 8   (x = d q + m)
 * with I = vpdpbusd(u8 weights, s8 activations), s = d_a sum(q_a), so a
 * block adds the scalar kernel's terms (summation order differs). An odd
 * last block is a pair with a zero second block (its activations are zero
 * in the repack, so nothing of it counts). BB, QS, QH: the block's bytes and
 * the offsets of its qs and qh (QH < 0: no fifth bits); HAS_M: an fp16 m
 * follows d. */
#define DEFINE_GEMV_LEGACY(name, BB, QS, QH, HAS_M, OFF)                                          \
  VNNI_INLINE void name##_pair(const uint8_t *base, const struct vnni_pair *pp, int two,          \
                               __m512 *acc) {                                                     \
    const __m512i m4 = _mm512_set1_epi8(15);                                                      \
    const __m512i shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);                              \
    const __m128i q0 = _mm_loadu_si128((const __m128i *)(base + (QS)));                           \
    const __m256i qq = two ? _mm256_loadu2_m128i((const __m128i *)(base + (BB) + (QS)),            \
                                                (const __m128i *)(base + (QS)))                     \
                          : _mm256_zextsi128_si256(q0);                                          \
    const __m512i t2 = _mm512_castsi256_si512(qq);                                                \
    __m512i wq = _mm512_and_si512(_mm512_srlv_epi64(_mm512_shuffle_i64x2(t2, t2, 0x50), shift), m4); \
    if ((QH) >= 0) {                                                                              \
      uint32_t h0, h1 = 0;                                                                        \
      memcpy(&h0, base + (QH), 4);                                                                \
      if (two) memcpy(&h1, base + (BB) + (QH), 4);                                                \
      wq = _mm512_mask_add_epi8(wq, (__mmask64)(h0 | (uint64_t)h1 << 32), wq,                     \
                                _mm512_set1_epi8(16));                                            \
    }                                                                                             \
    const __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, pp->q);                    \
    if (HAS_M) {                                                                                  \
      const __m512i di = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);       \
      uint32_t dm0, dm1 = 0;                                                                      \
      memcpy(&dm0, base, 4);                                                                      \
      if (two) memcpy(&dm1, base + (BB), 4);                                                      \
      const __m512 dm = _mm512_castps128_ps512(                                                   \
          _mm_cvtph_ps(_mm_cvtsi64_si128((long long)(dm0 | (uint64_t)dm1 << 32))));               \
      const __m512 dw = _mm512_permutexvar_ps(di, dm);                                           \
      const __m512 mw = _mm512_permutexvar_ps(_mm512_add_epi32(di, _mm512_set1_epi32(1)), dm);   \
      *acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(I), pp->da), dw, *acc);            \
      *acc = _mm512_fmadd_ps(pp->ns, mw, *acc);                                                   \
    } else {                                                                                      \
      const __m512i di = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);       \
      uint16_t d0, d1 = 0;                                                                        \
      memcpy(&d0, base, 2);                                                                       \
      if (two) memcpy(&d1, base + (BB), 2);                                                       \
      const __m512 dw = _mm512_permutexvar_ps(                                                    \
          di, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)(d0 | (uint32_t)d1 << 16))))); \
      const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), pp->da, pp->ns);                   \
      *acc = _mm512_fmadd_ps(t, dw, *acc);                                                        \
    }                                                                                             \
  }                                                                                               \
  /* Four interleaved row streams, as gemv_q8_0_vnni's. */                                        \
  VNNI static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,     \
                        const struct act_q8 *x, float *out) {                                     \
    const int64_t nb = n / 32, np = nb / 2;                                                       \
    alignas(64) struct vnni_pair pa[VNNI_DECODE_MAX_PAIRS];                                       \
    vnni_repack(x, nb, 0, (OFF), pa);                                                             \
    const int64_t q = (r1 - r0) / 4;                                                              \
    const size_t qs = (size_t)q * w_stride;                                                       \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, qs, q > 0 ? 4 : 0, KERNEL_PREFETCH_BYTES);   \
    for (int64_t i = 0; i < q; i++) {                                                             \
      const uint8_t *w0 = w + (size_t)(r0 + i) * w_stride;                                        \
      __m512 a[4][2];                                                                             \
      for (int s = 0; s < 4; s++) a[s][0] = a[s][1] = _mm512_setzero_ps();                        \
      int64_t p = 0;                                                                              \
      for (; p < np; p++)                                                                         \
        for (int s = 0; s < 4; s++) {                                                             \
          PREFETCH_W(w0 + s * qs + 2 * (BB) * p, 1);                                              \
          name##_pair(w0 + s * qs + 2 * (BB) * p, &pa[p], 1, &a[s][p & 1]);                       \
        }                                                                                         \
      if (nb & 1)                                                                                 \
        for (int s = 0; s < 4; s++) name##_pair(w0 + s * qs + 2 * (BB) * p, &pa[p], 0, &a[s][0]); \
      for (int s = 0; s < 4; s++)                                                                 \
        out[r0 + s * q + i] = _mm512_reduce_add_ps(_mm512_add_ps(a[s][0], a[s][1]));              \
    }                                                                                             \
    for (int64_t r = r0 + 4 * q; r < r1; r++) {                                                   \
      const uint8_t *wr = w + (size_t)r * w_stride;                                               \
      __m512 a[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};                                   \
      int64_t p = 0;                                                                              \
      for (; p < np; p++) {                                                                       \
        PREFETCH_W(wr + 2 * (BB) * p, 1);                                                         \
        name##_pair(wr + 2 * (BB) * p, &pa[p], 1, &a[p & 1]);                                     \
      }                                                                                           \
      if (nb & 1) name##_pair(wr + 2 * (BB) * p, &pa[p], 0, &a[0]);                               \
      out[r] = _mm512_reduce_add_ps(_mm512_add_ps(a[0], a[1]));                                   \
    }                                                                                             \
  }

DEFINE_GEMV_LEGACY(gemv_q5_0_vnni, 22, 6, 2, 0, -16.0f)
DEFINE_GEMV_LEGACY(gemv_q4_1_vnni, 20, 4, -1, 1, 1.0f)
DEFINE_GEMV_LEGACY(gemv_q5_1_vnni, 24, 8, 4, 1, 1.0f)

#define PAIRS_OK ((n / 32 + 1) / 2 <= VNNI_DECODE_MAX_PAIRS)
DEFINE_VNNI_FAST(gemm_q4_0_vnni_fast, gemv_q4_0_vnni, PAIRS_OK, avx512_panel_gemm_q4_0, 2, gemm_q4_0_vnni)
DEFINE_VNNI_FAST(gemm_q8_0_vnni_fast, gemv_q8_0_vnni, PAIRS_OK, avx512_panel_gemm_q8_0, 2, gemm_q8_0_vnni)
DEFINE_VNNI_FAST(gemm_q5_0_vnni_fast, gemv_q5_0_vnni, PAIRS_OK, avx512_panel_gemm_q5_0, 2, gemm_q5_0_vnni)
DEFINE_VNNI_FAST(gemm_q4_1_vnni_fast, gemv_q4_1_vnni, PAIRS_OK, avx512_panel_gemm_q4_1, 2, gemm_q4_1_vnni)
DEFINE_VNNI_FAST(gemm_q5_1_vnni_fast, gemv_q5_1_vnni, PAIRS_OK, avx512_panel_gemm_q5_1, 2, gemm_q5_1_vnni)
#undef PAIRS_OK

void kernels_fill_avx512_q32_vnni(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_vnni_fast;
  ops->gemm[GGML_TYPE_Q4_1] = gemm_q4_1_vnni_fast;
  ops->gemm[GGML_TYPE_Q5_0] = gemm_q5_0_vnni_fast;
  ops->gemm[GGML_TYPE_Q5_1] = gemm_q5_1_vnni_fast;
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_vnni_fast;
  /* the AVX2 path's few-column kernels give the bits of its decode, not
   * of these (kernels_vbmi.c sets this path's own) */
  const uint32_t q32[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                          GGML_TYPE_Q8_0};
  for (size_t i = 0; i < sizeof q32 / sizeof q32[0]; i++) ops->gemm_few[q32[i]] = NULL;
}
#endif
