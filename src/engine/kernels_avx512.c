/* kernels_avx512: the AVX-512 paths (x86-64 only; per-function target
 * attributes, chosen at run time by kernels.c).
 *
 * KERNEL_AVX512 (F/BW/VL) specialises: gemm F32, F16 (16-wide FMA, masked
 * tails), Q4_K and Q6_K (512-bit maddubs/madd: one 64-element chunk per
 * instruction). Everything else is the AVX2 path's function (the table is a
 * copy of the AVX2 one), including the quantizers and f16 helpers.
 *
 * KERNEL_AVX512_VNNI adds vpdpbusd (u8 x s8 -> i32, no i16 intermediate)
 * for the 32-element block types: gemm Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (256-bit
 * VL form, one block per instruction). Q4_0/Q5_0 weights go in unsigned
 * (0..15 / 0..31) and the -8 / -16 offset is applied per block in float as
 * -8 d_w s_a, s_a = d_a sum(q_a) (the act_q8 s field). Q8_0 weights are
 * signed, so the dot is dpbusd(|w|, sign(a, w)). K-quants keep the AVX512
 * entries (their 6-bit sub-block scales need the i16 madd step anyway).
 * BF16, Q5_K on these paths: the AVX2 / scalar functions. */
#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>
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

DEFINE_X86_GEMM(AVX512, gemm_f32_512, tile_f32_512)
DEFINE_X86_GEMM(AVX512, gemm_f16_512, tile_f16_512)
DEFINE_X86_GEMM(AVX512, gemm_q4_k_512, tile_q4_k_512)
DEFINE_X86_GEMM(AVX512, gemm_q6_k_512, tile_q6_k_512)

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

/* As kernels_avx2.c's BLOCK_TILE with one vpdpbusd per block and column:
 * two accumulator sets (even/odd blocks) keep a one-column decode from
 * waiting on the FMA chain; corr[c] holds the per-block offset terms. */
#define VNNI_BLOCK_TILE(fn, WBLOCK, UNPACK, OFFSET_MUL, HAS_M)                                   \
  VNNI_INLINE void fn##_step(const WBLOCK *wb, const uint8_t *a, size_t as, int64_t b,         \
                            const int nc, __m256 *acc, float *corr) {                          \
    PREFETCH_W(wb, 1);                                                                      \
    __m256i wq = UNPACK(wb);                                                                \
    float dw = _cvtsh_ss(wb->d);                                                                \
    float cm = HAS_M ? _cvtsh_ss(((const uint16_t *)wb)[1]) : OFFSET_MUL * dw;                  \
    for (int c = 0; c < nc; c++) {                                                          \
      const struct act_q8 *x = (const struct act_q8 *)(a + c * as) + b;                     \
      __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wq, _mm256_loadu_si256((const __m256i *)x->q));                                                                    \
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x->d), acc[c]);   \
      corr[c] += cm * x->s;                                                                 \
    }                                                                                       \
  }                                                                                         \
  VNNI_INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as, const int nc,   \
                      float *o, int64_t os) {                                               \
    const WBLOCK *w = (const WBLOCK *)wr;                                                   \
    const int64_t nb = n / 32;                                                              \
    __m256 acc0[4], acc1[4];                                                                \
    float corr[4] = {0};                                                                   \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();                   \
    int64_t b = 0;                                                                          \
    for (; b + 1 < nb; b += 2) {                                                            \
      fn##_step(&w[b], a, as, b, nc, acc0, corr);                                           \
      fn##_step(&w[b + 1], a, as, b + 1, nc, acc1, corr);                                   \
    }                                                                                       \
    if (b < nb) fn##_step(&w[b], a, as, b, nc, acc0, corr);                                 \
    for (int c = 0; c < nc; c++) o[c * os] = hsum256(_mm256_add_ps(acc0[c], acc1[c])) + corr[c]; \
  }

VNNI_BLOCK_TILE(tile_q4_0_vnni, struct block_q4_0, vq4_0, -8.0f, 0)
VNNI_BLOCK_TILE(tile_q4_1_vnni, struct block_q4_1, vq4_1, 0.0f, 1)
VNNI_BLOCK_TILE(tile_q5_0_vnni, struct block_q5_0, vq5_0, -16.0f, 0)
VNNI_BLOCK_TILE(tile_q5_1_vnni, struct block_q5_1, vq5_1, 0.0f, 1)

VNNI_INLINE void tile_q8_0_vnni_step(const struct block_q8_0 *wb, const uint8_t *a, size_t as,
                                int64_t b, const int nc, __m256 *acc) {
  PREFETCH_W(wb, 1);
  __m256i wq = _mm256_loadu_si256((const __m256i *)wb->qs);
  __m256i ax = _mm256_abs_epi8(wq);
  float dw = _cvtsh_ss(wb->d);
  for (int c = 0; c < nc; c++) {
    const struct act_q8 *x = (const struct act_q8 *)(a + c * as) + b;
    __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x->q), wq);
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy)), _mm256_set1_ps(dw * x->d), acc[c]);
  }
}

VNNI_INLINE void tile_q8_0_vnni(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                           const int nc, float *o, int64_t os) {
  const struct block_q8_0 *w = (const struct block_q8_0 *)wr;
  const int64_t nb = n / 32;
  __m256 acc0[4], acc1[4];
  for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    tile_q8_0_vnni_step(&w[b], a, as, b, nc, acc0);
    tile_q8_0_vnni_step(&w[b + 1], a, as, b + 1, nc, acc1);
  }
  if (b < nb) tile_q8_0_vnni_step(&w[b], a, as, b, nc, acc0);
  for (int c = 0; c < nc; c++) o[c * os] = hsum256(_mm256_add_ps(acc0[c], acc1[c]));
}

DEFINE_X86_GEMM(VNNI, gemm_q4_0_vnni, tile_q4_0_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q4_1_vnni, tile_q4_1_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q5_0_vnni, tile_q5_0_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q5_1_vnni, tile_q5_1_vnni)
DEFINE_X86_GEMM(VNNI, gemm_q8_0_vnni, tile_q8_0_vnni)

void kernels_fill_avx512(struct kernel_ops *ops) {
  ops->path = KERNEL_AVX512;
  ops->name = "avx512";
  ops->gemm[GGML_TYPE_F32] = gemm_f32_512;
  ops->gemm[GGML_TYPE_F16] = gemm_f16_512;
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k_512;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k_512;
}

void kernels_fill_avx512_vnni(struct kernel_ops *ops) {
  ops->path = KERNEL_AVX512_VNNI;
  ops->name = "avx512_vnni";
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_vnni;
  ops->gemm[GGML_TYPE_Q4_1] = gemm_q4_1_vnni;
  ops->gemm[GGML_TYPE_Q5_0] = gemm_q5_0_vnni;
  ops->gemm[GGML_TYPE_Q5_1] = gemm_q5_1_vnni;
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_vnni;
}
#endif
