/* kernels_vbmi: the Q4_0 decode kernel (matrix-vector, ncols = 1) for CPUs
 * with AVX-512 VNNI and VBMI (Ice Lake and later Xeons, Zen 4 and later).
 *
 * Why a second Q4_0 decode kernel: the VNNI one (kernels_avx512.c) unpacks
 * two 18-byte blocks per 512-bit vector with a 128-bit insert, a 256-bit
 * insert and a shift, then spends a convert and two FMAs on those two
 * blocks: ~9 port-0/5 operations per 36 bytes. From cache it reads ~17 GB/s
 * on one core of the team's Xeon, barely above the ~14.5 GB/s one core gets
 * from DRAM, so compute and memory do not overlap and decode stays near 75%
 * of the bandwidth (bench/kernel_bench.c). Here one vpermt2b gathers the 16
 * nibble bytes of four blocks into one vector (their offsets 2 + 18 b are
 * not 16-byte aligned, which is what the inserts paid for), the low and
 * high nibbles become two vectors against activations repacked to match,
 * and two vpdpbusd accumulate into ONE integer vector: four blocks per
 * convert and per pair of FMAs, ~10 operations per 72 bytes.
 *
 * Layout of a unit of four blocks A..D (72 bytes):
 *   lo = nibbles & 15       -> weights [A0..15 | B0..15 | C0..15 | D0..15]
 *   hi = (nibbles >> 4) & 15 -> weights [A16..31 | B16..31 | ...]
 *   qlo, qhi: the activations at the same positions (struct vnni_quad);
 *   int32 lane l (0..15) sums 8 products of block l / 4.
 * The Q4_0 offset (weights are nibble - 8) is folded in as in the VNNI kernel:
 * lane value = I_l * d_a + ns_l with ns_l = -8 * s_a / 4 (s_a = d_a sum(q_a)),
 * times the weight block's scale; the four lanes of a block add up to the
 * block's exact dot product times the two scales. Integer parts are exact;
 * only the float summation order differs from the other paths (tests compare
 * with the scalar reference within rounding). */
#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#define VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define VBMI_INLINE                                                                         \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx2,fma,f16c"),    \
                 always_inline)) static inline

/* Prefetch distance of the weight stream, as kernels_x86.h's. */
#ifndef VBMI_PF_BYTES
#define VBMI_PF_BYTES 2048
#endif

struct vnni_quad {
  __m512i qlo, qhi;
  __m512 da, ns;
};
#define VBMI_MAX_QUADS 128 /* n <= 16384 (32 KiB of repacked activations) */

/* x: nb activation blocks (nb a multiple of 4) -> nb / 4 quads. */
VBMI_INLINE void quad_repack(const struct act_q8 *x, int64_t nb, struct vnni_quad *qd) {
  /* lane l of da / ns takes block l / 4 */
  const __m512i lane_blk = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int64_t u = 0; u < nb / 4; u++) {
    const struct act_q8 *b = x + 4 * u;
    __m256i q0 = _mm256_loadu_si256((const __m256i *)b[0].q);
    __m256i q1 = _mm256_loadu_si256((const __m256i *)b[1].q);
    __m256i q2 = _mm256_loadu_si256((const __m256i *)b[2].q);
    __m256i q3 = _mm256_loadu_si256((const __m256i *)b[3].q);
    /* [A lo | B lo] and [A hi | B hi] as 256-bit halves, then C, D */
    __m256i ab_lo = _mm256_permute2x128_si256(q0, q1, 0x20), ab_hi = _mm256_permute2x128_si256(q0, q1, 0x31);
    __m256i cd_lo = _mm256_permute2x128_si256(q2, q3, 0x20), cd_hi = _mm256_permute2x128_si256(q2, q3, 0x31);
    qd[u].qlo = _mm512_inserti64x4(_mm512_castsi256_si512(ab_lo), cd_lo, 1);
    qd[u].qhi = _mm512_inserti64x4(_mm512_castsi256_si512(ab_hi), cd_hi, 1);
    __m128 d4 = _mm_setr_ps(b[0].d, b[1].d, b[2].d, b[3].d);
    __m128 s4 = _mm_mul_ps(_mm_setr_ps(b[0].s, b[1].s, b[2].s, b[3].s), _mm_set1_ps(-8.0f * 0.25f));
    qd[u].da = _mm512_permutexvar_ps(lane_blk, _mm512_castps128_ps512(d4));
    qd[u].ns = _mm512_permutexvar_ps(lane_blk, _mm512_castps128_ps512(s4));
  }
}

/* One unit: nib (its 4 x 16 nibble bytes gathered), dw (the 4 weight scales
 * spread over the lanes). */
VBMI_INLINE __m512 quad_dot(__m512i nib, const struct vnni_quad *qd, __m512 dw, __m512 acc) {
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512i lo = _mm512_and_si512(nib, m4);
  __m512i hi = _mm512_and_si512(_mm512_srli_epi16(nib, 4), m4);
  __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, qd->qlo);
  I = _mm512_dpbusd_epi32(I, hi, qd->qhi);
  __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), qd->da, qd->ns);
  return _mm512_fmadd_ps(t, dw, acc);
}

/* Eight blocks (144 bytes at g, two units) of a row against qd[0..1]. */
VBMI_INLINE void q4_octet(const uint8_t *g, const struct vnni_quad *qd, __m512 *acc0,
                          __m512 *acc1) {
  /* vpermt2b indices: unit 0 takes bytes 2 + 18 b + j of [g, g + 128); unit 1
   * bytes 72 + 2 + 18 b + j, i.e. 10 + 18 b + j of [g + 64, g + 192). */
  const __m512i idx0 = _mm512_set_epi8(
      71, 70, 69, 68, 67, 66, 65, 64, 63, 62, 61, 60, 59, 58, 57, 56,
      53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38,
      35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20,
      17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2);
  const __m512i idx1 = _mm512_add_epi8(idx0, _mm512_set1_epi8(8));
  /* the 8 fp16 scales: words 0, 9, .., 63 of [g, g + 128) */
  const __m512i sidx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0, 0, 63, 54, 45, 36, 27, 18, 9, 0);
  const __m512i lanes0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i lanes1 = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
  for (int pf = 0; pf < 144; pf += 64) _mm_prefetch((const char *)g + VBMI_PF_BYTES + pf, _MM_HINT_T0);
  __m512i L0 = _mm512_loadu_si512(g);
  __m512i L1 = _mm512_loadu_si512(g + 64);
  __m512i L2 = _mm512_maskz_loadu_epi8(0xFFFF, g + 128); /* bytes 128..143 only */
  __m512 d8 = _mm512_castps256_ps512(
      _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi16(L0, sidx, L1))));
  *acc0 = quad_dot(_mm512_permutex2var_epi8(L0, idx0, L1), &qd[0],
                   _mm512_permutexvar_ps(lanes0, d8), *acc0);
  *acc1 = quad_dot(_mm512_permutex2var_epi8(L1, idx1, L2), &qd[1],
                   _mm512_permutexvar_ps(lanes1, d8), *acc1);
}

/* The lane sums of four vectors at once (a transposing tree: 11 shuffles
 * and adds instead of four separate reductions of ~8 each). */
VBMI_INLINE __m256 hi256(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
VBMI_INLINE void reduce4(__m512 a, __m512 b, __m512 c, __m512 d, float *s4) {
  __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), hi256(a));
  __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), hi256(b));
  __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), hi256(c));
  __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), hi256(d));
  __m256 ab = _mm256_hadd_ps(a8, b8), cd = _mm256_hadd_ps(c8, d8);
  __m256 abcd = _mm256_hadd_ps(ab, cd); /* [a b c d | a b c d] partial sums */
  _mm_storeu_ps(s4, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}

/* Rows in four interleaved streams (r, r + q, r + 2q, r + 3q). */
VBMI static void gemv_q4_0_vbmi(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0,
                                int64_t r1, const struct act_q8 *x, float *out) {
  const int64_t nb = n / 32, no = nb / 8;
  alignas(64) struct vnni_quad qd[VBMI_MAX_QUADS];
  quad_repack(x, nb, qd);
  const int64_t q = (r1 - r0) / 4;
  PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, (size_t)q * w_stride, q > 0 ? 4 : 0,
                        VBMI_PF_BYTES);
  for (int64_t i = 0; i < q; i++) {
    const uint8_t *wa = w + (size_t)(r0 + i) * w_stride, *wb = wa + (size_t)q * w_stride;
    const uint8_t *wc = wb + (size_t)q * w_stride, *wd = wc + (size_t)q * w_stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
    __m512 d0 = _mm512_setzero_ps(), d1 = _mm512_setzero_ps();
    for (int64_t o = 0; o < no; o++) {
      q4_octet(wa + 144 * o, qd + 2 * o, &a0, &a1);
      q4_octet(wb + 144 * o, qd + 2 * o, &b0, &b1);
      q4_octet(wc + 144 * o, qd + 2 * o, &c0, &c1);
      q4_octet(wd + 144 * o, qd + 2 * o, &d0, &d1);
    }
    float s4[4];
    reduce4(_mm512_add_ps(a0, a1), _mm512_add_ps(b0, b1), _mm512_add_ps(c0, c1),
            _mm512_add_ps(d0, d1), s4);
    out[r0 + i] = s4[0];
    out[r0 + q + i] = s4[1];
    out[r0 + 2 * q + i] = s4[2];
    out[r0 + 3 * q + i] = s4[3];
  }
  for (int64_t r = r0 + 4 * q; r < r1; r++) {
    const uint8_t *wr = w + (size_t)r * w_stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int64_t o = 0; o < no; o++) q4_octet(wr + 144 * o, qd + 2 * o, &a0, &a1);
    /* the same reduction tree as above: a row's sum never depends on
     * where the row falls in [r0, r1) (chunking is free to change) */
    const __m512 z = _mm512_setzero_ps();
    float s4[4];
    reduce4(_mm512_add_ps(a0, a1), z, z, z, s4);
    out[r] = s4[0];
  }
}

/* Decode rows whose block count is a multiple of 8 (every layer of the
 * common shapes: n = 1024, 2048, 3072, ...) take the kernel above; anything
 * else (prefill, odd widths) the VNNI path's function it replaces. */
static gemm_fn q4_0_other;

VBMI static void gemm_q4_0_vbmi(int64_t n, const void *w, size_t w_stride, int64_t r0,
                                int64_t r1, const void *a, size_t a_stride, int64_t ncols,
                                float *out, int64_t out_stride) {
  if (ncols == 1 && n % 256 == 0 && n / 128 <= VBMI_MAX_QUADS) {
    gemv_q4_0_vbmi(n, w, w_stride, r0, r1, a, out);
    return;
  }
  q4_0_other(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);
}

void kernels_fill_vbmi(struct kernel_ops *ops) {
  q4_0_other = ops->gemm[GGML_TYPE_Q4_0];
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_vbmi;
}
#endif
