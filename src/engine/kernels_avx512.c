/* kernels_avx512: the AVX-512 paths (x86-64 only; per-function target
 * attributes, chosen at run time by kernels.c).
 *
 * KERNEL_AVX512 (F/BW/VL) specialises: gemm F32, F16 (16-wide FMA, masked
 * tails), Q4_K, Q5_K and Q6_K (decode by four-stream kernels with 512-bit
 * maddubs/madd, gemv_q{4,5,6}_k_512; prompts through the AVX2 path's 8-row
 * panels, faster than the 512-bit tiles, which remain as the VNNI path's
 * fallback);
 * the attention helpers dot_f16_f32, scale_f16, mad_f16 (16
 * wide, masked tails; scale/mad give the AVX2 path's bits). Everything else
 * is the AVX2 path's function (the table is a copy of the AVX2 one),
 * including the quantizers.
 *
 * KERNEL_AVX512_VNNI adds vpdpbusd (u8 x s8 -> i32, no i16 intermediate)
 * for the 32-element block types: gemm Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (256-bit
 * VL form, one block per instruction). Q4_0/Q5_0 weights go in unsigned
 * (0..15 / 0..31) and the -8 / -16 offset is applied per block in float as
 * -8 d_w s_a, s_a = d_a sum(q_a) (the act_q8 s field). Q8_0 weights are
 * signed, so the dot is dpbusd(|w|, sign(a, w)). Every one of these types
 * has two faster kernels in front of its tiles (gemm_<type>_vnni_fast):
 * decode (ncols = 1) does two blocks per 512-bit vpdpbusd against an
 * activation row repacked once per call, and prefill (ncols > 1) transposes
 * 16-row weight panels once so one vpdpbusd serves 16 rows x 4 weights for a
 * broadcast activation column (see those sections); the tiles remain for
 * rows wider than the decode buffer or strides beyond the gathers' reach.
 * The K-quants' decode kernels: Q6_K is the AVX512 one with the madd and its
 * add fused into vpdpwssd, and so are Q4_K and Q5_K's, except on AMD CPUs,
 * where they sum each sub-block in lanes with vpdpbusd and apply the scales
 * once per block (gemv_q{4,5}_k_lanes, see that section; measured on a Zen 5
 * only); their prefill takes 16-row panels of super-blocks
 * (kpanel_gemm: per sub-block, 8 or 4 vpdpbusd for 16 rows, the sub-block
 * scale applied in float per row lane).
 * BF16 on these paths: the AVX2 / scalar functions. */
#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "gguf/quant_ref.h"

#define T512 "avx512f,avx512bw,avx512vl,avx2,fma,f16c"
#define AVX512 __attribute__((target(T512)))
#define AVX512_INLINE __attribute__((target(T512), always_inline)) static inline
#define VNNI __attribute__((target(T512 ",avx512vnni")))
#define VNNI_INLINE __attribute__((target(T512 ",avx512vnni"), always_inline)) static inline

AVX512_INLINE float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* ---- float weights (16 wide, masked tail) -------------------------------- */

#define LOAD16_F32(p, m) _mm512_maskz_loadu_ps(m, p)
#define LOAD16_F16(p, m) _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p))

#define FLOAT_TILE16(fn, LOAD16, WTYPE)                                                      \
  AVX512_INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,          \
                        const int nc, float *o, int64_t os) {                               \
    const WTYPE *w = (const WTYPE *)wr;                                                     \
    __m512 acc0[4], acc1[4];                                                                \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm512_setzero_ps();                   \
    int64_t i = 0;                                                                          \
    for (; i + 32 <= n; i += 32) {                                                          \
      PREFETCH_W(w + i, 32 * sizeof(WTYPE));                                                \
      __m512 w0 = LOAD16(w + i, 0xFFFF), w1 = LOAD16(w + i + 16, 0xFFFF);                   \
      for (int c = 0; c < nc; c++) {                                                        \
        const float *x = (const float *)(a + c * as);                                       \
        acc0[c] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + i), acc0[c]);                     \
        acc1[c] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i + 16), acc1[c]);                \
      }                                                                                     \
    }                                                                                       \
    for (; i < n; i += 16) {                                                                \
      __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);     \
      __m512 w0 = LOAD16(w + i, m);                                                         \
      for (int c = 0; c < nc; c++)                                                          \
        acc0[c] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, (const float *)(a + c * as) + i), \
                                  acc0[c]);                                                 \
    }                                                                                       \
    for (int c = 0; c < nc; c++) o[c * os] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[c], acc1[c])); \
  }

FLOAT_TILE16(tile_f32_512, LOAD16_F32, float)
FLOAT_TILE16(tile_f16_512, LOAD16_F16, uint16_t)

/* ---- attention helpers, 16 wide with masked tails ------------------------ */

/* Same per-element operations as kernels_avx2.c's (one fused multiply-add,
 * conversions rounding to nearest even), so scale_f16 / mad_f16 give the
 * same bits as the AVX2 path; dot_f16_f32 only sums in a different order. */
AVX512 static float avx512_dot_f16_f32(const uint16_t *k, const float *q, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_fmadd_ps(LOAD16_F16(k + i, 0xFFFF), _mm512_loadu_ps(q + i), a0);
    a1 = _mm512_fmadd_ps(LOAD16_F16(k + i + 16, 0xFFFF), _mm512_loadu_ps(q + i + 16), a1);
  }
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    a0 = _mm512_fmadd_ps(LOAD16_F16(k + i, m), _mm512_maskz_loadu_ps(m, q + i), a0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

AVX512 static void avx512_scale_f16(uint16_t *y, float a, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(y + i, m,
                             _mm512_cvtps_ph(_mm512_mul_ps(LOAD16_F16(y + i, m), va),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

AVX512 static void avx512_mad_f16(uint16_t *y, float a, const uint16_t *v, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(
        y + i, m,
        _mm512_cvtps_ph(_mm512_fmadd_ps(LOAD16_F16(v + i, m), va, LOAD16_F16(y + i, m)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

/* ---- K-quants, 512-bit maddubs ------------------------------------------ */

/* Same unpacking as kernels_avx2.c's (sc in bytes 0..7, m in 8..15). */
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
#define Q6_MATH(Q6_ACCUM, ql0, ql1, qh, scales, dh, x, acc)                                      \
  do {                                                                                        \
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);                    \
    const __m512i idx = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,       \
                                         1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);      \
    const float dsc = _cvtsh_ss(dh);                                                          \
    const __m256i sc16 = _mm256_cvtepi8_epi16(scales);                                        \
    const __m512i sc512 = _mm512_castsi256_si512(sc16);                                       \
    __m512i sumi = _mm512_setzero_si512();                                                    \
    for (int h = 0; h < 2; h++) {                                                             \
      const __m512i ql = h ? (ql1) : (ql0);                                                   \
      const __m256i qhh = h ? _mm512_extracti64x4_epi64((qh), 1) : _mm512_castsi512_si256(qh); \
      __m512i qha = join256(_mm256_slli_epi16(qhh, 4), _mm256_slli_epi16(qhh, 2));            \
      __m512i qhb = join256(qhh, _mm256_srli_epi16(qhh, 2));                                  \
      __m512i q0 = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(qha, m30));     \
      __m512i q1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),            \
                                   _mm512_and_si512(qhb, m30));                               \
      __m512i s0 = _mm512_permutexvar_epi16(                                                  \
          _mm512_add_epi16(idx, _mm512_set1_epi16((short)(8 * h))), sc512);                   \
      __m512i s1 = _mm512_permutexvar_epi16(                                                  \
          _mm512_add_epi16(idx, _mm512_set1_epi16((short)(8 * h + 4))), sc512);               \
      sumi = Q6_ACCUM(sumi, _mm512_maddubs_epi16(q0, _mm512_loadu_si512((x)->q + 128 * h)), s0); \
      sumi = Q6_ACCUM(sumi, _mm512_maddubs_epi16(q1, _mm512_loadu_si512((x)->q + 128 * h + 64)), \
                      s1);                                                                    \
    }                                                                                         \
    __m256i s256 =                                                                            \
        _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));   \
    __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x)->bsums), sc16);   \
    s256 = _mm256_sub_epi32(s256, _mm256_slli_epi32(off, 5));                                 \
    *(acc) = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s256), _mm256_set1_ps(dsc * (x)->d), *(acc));   \
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

DEFINE_X86_GEMM(AVX512, gemm_f32_512, tile_f32_512)
DEFINE_X86_GEMM(AVX512, gemm_f16_512, tile_f16_512)
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
  VNNI static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,      \
                        const uint8_t *a, size_t as, int64_t ncols, float *out, int64_t os) {      \
    panel_gemm(kind, n, w, w_stride, r0, r1, a, as, ncols, out, os);                               \
  }
DEFINE_PANEL_GEMM(panel_gemm_q4_0, PANEL_Q4_0)
DEFINE_PANEL_GEMM(panel_gemm_q8_0, PANEL_Q8_0)
DEFINE_PANEL_GEMM(panel_gemm_q5_0, PANEL_Q5_0)
DEFINE_PANEL_GEMM(panel_gemm_q4_1, PANEL_Q4_1)
DEFINE_PANEL_GEMM(panel_gemm_q5_1, PANEL_Q5_1)

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
  VNNI static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,      \
                        const uint8_t *a, size_t as, int64_t ncols, float *out, int64_t os) {      \
    kpanel_gemm(kind, n, w, w_stride, r0, r1, a, as, ncols, out, os);                              \
  }
DEFINE_KPANEL_GEMM(kpanel_gemm_q4_k, 0)
DEFINE_KPANEL_GEMM(kpanel_gemm_q5_k, 1)
DEFINE_KPANEL_GEMM(kpanel_gemm_q6_k, 2)


/* The table entries: decode and prefill kernels above where they apply, the
 * tile kernels otherwise (rows wider than the decode buffer, or a w_stride
 * too large for 32-bit gather offsets). DECODE_OK: the decode kernel takes
 * rows of n elements; min_cols: the columns from which a panel's build pays
 * (Q6_K's panels, GOPS at 2 / 4 / 8 columns from cache: 70 / 122 / 177
 * against the tiles' 102 / 131 / 132; every other type's panels are as fast
 * or faster from 2). */
#define DEFINE_VNNI_FAST(name, gemv, DECODE_OK, panels, min_cols, tiles)                       \
  VNNI static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,     \
                        const void *a, size_t a_stride, int64_t ncols, float *out,             \
                        int64_t out_stride) {                                                  \
    if (ncols == 1 && (DECODE_OK)) {                                                           \
      gemv(n, w, w_stride, r0, r1, a, out);                                                    \
      return;                                                                                  \
    }                                                                                          \
    if (ncols >= (min_cols) && w_stride <= (size_t)(INT32_MAX / 16)) {                        \
      panels(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                     \
      return;                                                                                  \
    }                                                                                          \
    tiles(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                        \
  }

#define PAIRS_OK ((n / 32 + 1) / 2 <= VNNI_DECODE_MAX_PAIRS)
DEFINE_VNNI_FAST(gemm_q4_0_vnni_fast, gemv_q4_0_vnni, PAIRS_OK, panel_gemm_q4_0, 2, gemm_q4_0_vnni)
DEFINE_VNNI_FAST(gemm_q8_0_vnni_fast, gemv_q8_0_vnni, PAIRS_OK, panel_gemm_q8_0, 2, gemm_q8_0_vnni)
DEFINE_VNNI_FAST(gemm_q5_0_vnni_fast, gemv_q5_0_vnni, PAIRS_OK, panel_gemm_q5_0, 2, gemm_q5_0_vnni)
DEFINE_VNNI_FAST(gemm_q4_1_vnni_fast, gemv_q4_1_vnni, PAIRS_OK, panel_gemm_q4_1, 2, gemm_q4_1_vnni)
DEFINE_VNNI_FAST(gemm_q5_1_vnni_fast, gemv_q5_1_vnni, PAIRS_OK, panel_gemm_q5_1, 2, gemm_q5_1_vnni)
/* K-quants: n is a multiple of QK_K (the types require it), any width decodes. */
DEFINE_VNNI_FAST(gemm_q4_k_vnni_fast, gemv_q4_k_vnni, 1, kpanel_gemm_q4_k, 2, gemm_q4_k_512)
DEFINE_VNNI_FAST(gemm_q5_k_vnni_fast, gemv_q5_k_vnni, 1, kpanel_gemm_q5_k, 2, gemm_q5_k_512)
DEFINE_VNNI_FAST(gemm_q4_k_lanes_fast, gemv_q4_k_lanes, 1, kpanel_gemm_q4_k, 2, gemm_q4_k_512)
DEFINE_VNNI_FAST(gemm_q5_k_lanes_fast, gemv_q5_k_lanes, 1, kpanel_gemm_q5_k, 2, gemm_q5_k_512)
DEFINE_VNNI_FAST(gemm_q6_k_vnni_fast, gemv_q6_k_vnni, 1, kpanel_gemm_q6_k, 6, gemm_q6_k_512)
#undef PAIRS_OK

/* ---- activation quantizers (the scalar ones' bytes, see kernels_scalar.c) --
 * A decode step quantizes every matrix input on the caller while the other
 * threads wait (113 calls per Qwen3-0.6B token: 1.2% of a 2-thread step with
 * the AVX2 quantizers, whose scalar fp16 calls and 8-wide blocks cost ~45
 * cycles per block). Here a block is two vectors, the fp16 round trip of the
 * scale one F16C instruction each way. cvtps rounds half to even under the
 * default rounding mode, as nearbyintf does. */
AVX512_INLINE float f16_round(float x) {
  return _cvtsh_ss(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

AVX512 static void avx512_quantize_q8(const float *x, struct act_q8 *y, int64_t n) {
  const __m512i hi = _mm512_set1_epi32(127), lo = _mm512_set1_epi32(-127);
  for (int64_t b = 0; b < n / 32; b++) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
    const float amax =
        _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, id));
    __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, id));
    q0 = _mm512_max_epi32(_mm512_min_epi32(q0, hi), lo);
    q1 = _mm512_max_epi32(_mm512_min_epi32(q1, hi), lo);
    _mm_storeu_si128((__m128i *)y[b].q, _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(y[b].q + 16), _mm512_cvtepi32_epi8(q1));
    const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    y[b].d = f16_round(amax / 127.0f);
    y[b].s = y[b].d * (float)sum;
  }
}

AVX512 static void avx512_quantize_q8k(const float *x, struct act_q8k *y, int64_t n) {
  const __m512i hi = _mm512_set1_epi32(127);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float *xb = x + QK_K * b;
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < QK_K; i += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    /* The signed value of largest magnitude, the first one in order. */
    float max = 0.0f;
    const __m512 va = _mm512_set1_ps(amax);
    for (int i = 0; i < QK_K; i += 16) {
      const __m512 v = _mm512_loadu_ps(xb + i);
      __mmask16 k = _mm512_cmp_ps_mask(_mm512_abs_ps(v), va, _CMP_EQ_OQ);
      if (k) {
        max = xb[i + __builtin_ctz(k)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    for (int g = 0; g < 16; g++) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + 16 * g), vs));
      q = _mm512_min_epi32(q, hi);
      _mm_storeu_si128((__m128i *)(y[b].q + 16 * g), _mm512_cvtepi32_epi8(q));
      y[b].bsums[g] = (int16_t)_mm512_reduce_add_epi32(q);
    }
    y[b].d = 1.0f / iscale;
  }
}

void kernels_fill_avx512(struct kernel_ops *ops) {
  k_prefill_avx2[0] = ops->gemm[GGML_TYPE_Q4_K];
  k_prefill_avx2[1] = ops->gemm[GGML_TYPE_Q5_K];
  k_prefill_avx2[2] = ops->gemm[GGML_TYPE_Q6_K];
  ops->path = KERNEL_AVX512;
  ops->name = "avx512";
  ops->gemm[GGML_TYPE_F32] = gemm_f32_512;
  ops->gemm[GGML_TYPE_F16] = gemm_f16_512;
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_512_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_512_fast;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_512_fast;
  ops->dot_f16_f32 = avx512_dot_f16_f32;
  ops->scale_f16 = avx512_scale_f16;
  ops->mad_f16 = avx512_mad_f16;
  ops->quantize_q8 = avx512_quantize_q8;
  ops->quantize_q8k = avx512_quantize_q8k;
  kernels_fill_rowops(ops);
}

void kernels_fill_avx512_vnni(struct kernel_ops *ops) {
  ops->path = KERNEL_AVX512_VNNI;
  ops->name = "avx512_vnni";
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_vnni_fast;
  ops->gemm[GGML_TYPE_Q4_1] = gemm_q4_1_vnni_fast;
  ops->gemm[GGML_TYPE_Q5_0] = gemm_q5_0_vnni_fast;
  ops->gemm[GGML_TYPE_Q5_1] = gemm_q5_1_vnni_fast;
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_vnni_fast;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_vnni_fast;
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_vnni_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_vnni_fast;
}

void kernels_fill_kquant_lanes(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_lanes_fast;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k_lanes_fast;
}
#endif
