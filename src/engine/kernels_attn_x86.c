/* kernels_attn_x86: the decode and prefill attention of the AVX2 and
 * AVX-512 paths over the F16 KV cache: one or two query rows per sweep over a
 * KV head's rows, as a software pipeline of blocks (scores, softmax factors,
 * F16 accumulation). The arithmetic, and the order of every operation that
 * decides a result's bits, is the scalar reference's (kernels_rowops.c's
 * header comment); only the dot products' summation order and the
 * exponentials (a polynomial within 2 ulp of expf) differ. */
#include <math.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#include "engine/kernels_rowops.h"

#if defined(__x86_64__)

/* The cache rows come from DRAM after the weights streamed through the
 * caches: fetch them ATTN_PF_AHEAD positions ahead into L1 (measured:
 * attention 5% of a 1-thread tg128 step without; 16 and 32 positions no
 * faster than 8 on tg512; in the pipeline, 2 to 8 ahead and an extra
 * prefetch into L2 16 to 64 ahead all within the noise, 2026-11-29). */
#ifndef ATTN_PF_AHEAD
#define ATTN_PF_AHEAD 8
#endif

/* ---- AVX2 attention: the block pipeline of attn_pipe (AVX-512, below) on
 * 8 lanes. The accumulators live in L1 (16 ymm registers would hold one
 * 128-value row and nothing else); rows go in pairs so each K and V row is
 * converted once for both. A row's result does not depend on its pairing.
 * Measured (bench/attn_rate.c, avx2 path on the team's Xeon, 2 threads):
 * the one-pass loop it replaced took 94 ns per (KV head, position) from
 * DRAM at 1024 positions and 57 ns from cache. */
#define ATTN_BLK8 8 /* = the lanes of attn8_softmax_factors */

RO_AVX2 static inline void attn8_prefetch(const uint16_t *row, int64_t hd, bool ok) {
  if (!ok) return;
  for (int64_t b = 0; b < hd * 2; b += 64) _mm_prefetch((const char *)row + b, _MM_HINT_T0);
}

RO_AVX2 static inline float attn8_dot(const uint16_t *kp, const float *q, int64_t hd) {
  __m256 d0 = _mm256_setzero_ps(), d1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= hd; i += 16) {
    d0 = _mm256_fmadd_ps(ro_f16x8(kp + i), _mm256_load_ps(q + i), d0);
    d1 = _mm256_fmadd_ps(ro_f16x8(kp + i + 8), _mm256_load_ps(q + i + 8), d1);
  }
  if (i < hd) d0 = _mm256_fmadd_ps(ro_f16x8(kp + i), _mm256_load_ps(q + i), d0);
  return ro_hsum8(_mm256_add_ps(d0, d1));
}

RO_AVX2 static inline void attn8_dot2(const uint16_t *kp, const float *qa, const float *qb,
                                      int64_t hd, float *da, float *db) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 16 <= hd; i += 16) {
    const __m256 k0 = ro_f16x8(kp + i), k1 = ro_f16x8(kp + i + 8);
    a0 = _mm256_fmadd_ps(k0, _mm256_load_ps(qa + i), a0);
    a1 = _mm256_fmadd_ps(k1, _mm256_load_ps(qa + i + 8), a1);
    b0 = _mm256_fmadd_ps(k0, _mm256_load_ps(qb + i), b0);
    b1 = _mm256_fmadd_ps(k1, _mm256_load_ps(qb + i + 8), b1);
  }
  if (i < hd) {
    const __m256 k0 = ro_f16x8(kp + i);
    a0 = _mm256_fmadd_ps(k0, _mm256_load_ps(qa + i), a0);
    b0 = _mm256_fmadd_ps(k0, _mm256_load_ps(qb + i), b0);
  }
  *da = ro_hsum8(_mm256_add_ps(a0, a1));
  *db = ro_hsum8(_mm256_add_ps(b0, b1));
}

/* lane j <- lane j - lanes (1, 2 or 4), the first lanes from fill */
RO_AVX2 static inline __m256 attn8_shift_up(__m256 x, int lanes, __m256 fill) {
  switch (lanes) {
  case 1: {
    const __m256i idx = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(x, idx), fill, 0x01);
  }
  case 2: {
    const __m256i idx = _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(x, idx), fill, 0x03);
  }
  default: {
    const __m256i idx = _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(x, idx), fill, 0x0f);
  }
  }
}

/* attn_softmax_factors16 on 8 lanes, np <= 8. */
RO_AVX2 static inline void attn8_softmax_factors(const float *s, int64_t np, float *M, float *S,
                                                 float *ms, float *vs) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY), one = _mm256_set1_ps(1.0f);
  alignas(32) float in[8], e_ms[8], e_vs[8], last[8];
  for (int j = 0; j < 8; j++) in[j] = j < np ? s[j] : -INFINITY;
  const __m256 x = _mm256_load_ps(in);
  __m256 incl = x; /* max_ps returns its 2nd operand on NaN: NaN lanes skipped */
  incl = _mm256_max_ps(incl, attn8_shift_up(incl, 1, ninf));
  incl = _mm256_max_ps(incl, attn8_shift_up(incl, 2, ninf));
  incl = _mm256_max_ps(incl, attn8_shift_up(incl, 4, ninf));
  const __m256 prev = _mm256_max_ps(attn8_shift_up(incl, 1, ninf), _mm256_set1_ps(*M));
  const __m256 fresh = _mm256_cmp_ps(x, prev, _CMP_GT_OQ); /* padding: -inf > prev is false */
  const __m256 arg = _mm256_blendv_ps(_mm256_sub_ps(x, prev), _mm256_sub_ps(prev, x), fresh);
  __m256 e = _mm256_and_ps(ro_exp8(arg), _mm256_cmp_ps(arg, _mm256_set1_ps(EXP_LO), _CMP_NLT_UQ));
  e = _mm256_blendv_ps(e, arg, _mm256_cmp_ps(arg, arg, _CMP_UNORD_Q));
  _mm256_store_ps(e_ms, _mm256_blendv_ps(one, e, fresh));
  _mm256_store_ps(e_vs, _mm256_blendv_ps(e, one, fresh));
  _mm256_store_ps(last, incl);
  if (last[np - 1] > *M) *M = last[np - 1];
  float sum = *S;
  for (int64_t j = 0; j < np; j++) {
    ms[j] = e_ms[j];
    vs[j] = e_vs[j];
    sum = sum * ms[j] + vs[j];
  }
  *S = sum;
}

/* One block of the AVX2 pipeline: accumulate np V rows at v into acc0/acc1
 * (hd values each, in L1) and score the np_next K rows at k_next. */
RO_AVX2 static inline __attribute__((always_inline)) void
attn8_block(int nr, int64_t hd, float *acc0, float *acc1, const uint16_t *v, int64_t v_left,
            const uint16_t *k_next, int64_t k_left, size_t kv_stride, int64_t np, int64_t np_next,
            const float *ms0, const float *vs0, const float *ms1, const float *vs1,
            const float *q0, const float *q1, float scale, float *s0, float *s1) {
  for (int64_t j = 0; j < np; j++) {
    if (j < np_next) {
      const uint16_t *kp = k_next + (size_t)j * kv_stride;
      attn8_prefetch(kp + ATTN_PF_AHEAD * kv_stride, hd, j + ATTN_PF_AHEAD < k_left);
      if (nr == 2) {
        float d0, d1;
        attn8_dot2(kp, q0, q1, hd, &d0, &d1);
        s0[j] = d0 * scale;
        s1[j] = d1 * scale;
      } else {
        s0[j] = attn8_dot(kp, q0, hd) * scale;
      }
    }
    const uint16_t *vp = v + (size_t)j * kv_stride;
    attn8_prefetch(vp + ATTN_PF_AHEAD * kv_stride, hd, j + ATTN_PF_AHEAD < v_left);
    if (ms0[j] != 1.0f) { /* a new maximum: rescale (x 1 is the identity) */
      const __m256 m = _mm256_set1_ps(ms0[j]);
      for (int64_t i = 0; i < hd; i += 8)
        _mm256_store_ps(acc0 + i, ro_round16x8(_mm256_mul_ps(_mm256_load_ps(acc0 + i), m)));
    }
    if (nr == 2 && ms1[j] != 1.0f) {
      const __m256 m = _mm256_set1_ps(ms1[j]);
      for (int64_t i = 0; i < hd; i += 8)
        _mm256_store_ps(acc1 + i, ro_round16x8(_mm256_mul_ps(_mm256_load_ps(acc1 + i), m)));
    }
    const __m256 w0 = _mm256_set1_ps(vs0[j]), w1 = _mm256_set1_ps(nr == 2 ? vs1[j] : 0.0f);
    for (int64_t i = 0; i < hd; i += 8) {
      const __m256 x = ro_f16x8(vp + i);
      _mm256_store_ps(acc0 + i, ro_round16x8(_mm256_fmadd_ps(x, w0, _mm256_load_ps(acc0 + i))));
      if (nr == 2)
        _mm256_store_ps(acc1 + i, ro_round16x8(_mm256_fmadd_ps(x, w1, _mm256_load_ps(acc1 + i))));
    }
  }
}

/* nr (1 or 2) rows over n_pos >= 1 positions; hd a multiple of 8. */
RO_AVX2 static inline __attribute__((always_inline)) void
attn8_pipe(int nr, int64_t hd, const float *q32a, const float *q32b, const uint16_t *k,
           const uint16_t *v, size_t kv_stride, int64_t n_pos, float scale, float *outa,
           float *outb) {
  alignas(32) float q0[ROWOPS_MAX_HD], q1[ROWOPS_MAX_HD];
  alignas(32) float acc0[ROWOPS_MAX_HD], acc1[ROWOPS_MAX_HD];
  float s[2][2][ATTN_BLK8]; /* [block parity][row][position] */
  float ms0[ATTN_BLK8], vs0[ATTN_BLK8], ms1[ATTN_BLK8], vs1[ATTN_BLK8];
  for (int64_t i = 0; i < hd; i += 8) {
    _mm256_store_ps(q0 + i, ro_round16x8(_mm256_loadu_ps(q32a + i)));
    _mm256_store_ps(acc0 + i, _mm256_setzero_ps());
    if (nr == 2) {
      _mm256_store_ps(q1 + i, ro_round16x8(_mm256_loadu_ps(q32b + i)));
      _mm256_store_ps(acc1 + i, _mm256_setzero_ps());
    }
  }
  float M0 = -INFINITY, S0 = 0.0f, M1 = -INFINITY, S1 = 0.0f;
  const int64_t np_first = n_pos < ATTN_BLK8 ? n_pos : ATTN_BLK8;
  for (int64_t j = 0; j < np_first; j++) {
    const uint16_t *kp = k + (size_t)j * kv_stride;
    attn8_prefetch(kp + ATTN_PF_AHEAD * kv_stride, hd, j + ATTN_PF_AHEAD < n_pos);
    if (nr == 2) {
      float d0, d1;
      attn8_dot2(kp, q0, q1, hd, &d0, &d1);
      s[0][0][j] = d0 * scale;
      s[0][1][j] = d1 * scale;
    } else {
      s[0][0][j] = attn8_dot(kp, q0, hd) * scale;
    }
  }
  int cur = 0;
  for (int64_t p0 = 0; p0 < n_pos; p0 += ATTN_BLK8, cur ^= 1) {
    const int64_t np = n_pos - p0 < ATTN_BLK8 ? n_pos - p0 : ATTN_BLK8;
    const int64_t rest = n_pos - p0 - np;
    const int64_t np_next = rest < ATTN_BLK8 ? rest : ATTN_BLK8;
    attn8_softmax_factors(s[cur][0], np, &M0, &S0, ms0, vs0);
    if (nr == 2) attn8_softmax_factors(s[cur][1], np, &M1, &S1, ms1, vs1);
    const uint16_t *k_next = np_next ? k + (size_t)(p0 + np) * kv_stride : k;
    attn8_block(nr, hd, acc0, acc1, v + (size_t)p0 * kv_stride, n_pos - p0, k_next, rest,
                kv_stride, np, np_next, ms0, vs0, ms1, vs1, q0, q1, scale, s[cur ^ 1][0],
                s[cur ^ 1][1]);
  }
  const __m256 inv0 = _mm256_set1_ps(1.0f / S0), inv1 = _mm256_set1_ps(1.0f / S1);
  for (int64_t i = 0; i < hd; i += 8) {
    _mm256_storeu_ps(outa + i, _mm256_mul_ps(_mm256_load_ps(acc0 + i), inv0));
    if (nr == 2) _mm256_storeu_ps(outb + i, _mm256_mul_ps(_mm256_load_ps(acc1 + i), inv1));
  }
}

RO_AVX2 static void avx2_attn_row(const float *q32, const uint16_t *k, const uint16_t *v,
                                  size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                                  float *out) {
  if (hd % 8 != 0) {
    kernels_scalar_attn_row(q32, k, v, kv_stride, n_pos, hd, scale, out);
    return;
  }
  if (hd == 128)
    attn8_pipe(1, 128, q32, q32, k, v, kv_stride, n_pos, scale, out, out);
  else
    attn8_pipe(1, hd, q32, q32, k, v, kv_stride, n_pos, scale, out, out);
}

/* attn_rows on AVX2: rows in pairs through the pipeline, an odd last row alone. */
RO_AVX2 static void avx2_attn_rows(const float *q, size_t q_stride, int nq, const uint16_t *k,
                                   const uint16_t *v, size_t kv_stride, int64_t n_pos, int64_t hd,
                                   float scale, float *out, size_t out_stride) {
  int h = 0;
  if (hd % 8 == 0)
    for (; h + 2 <= nq; h += 2) {
      const float *qa = q + (size_t)h * q_stride, *qb = qa + q_stride;
      float *oa = out + (size_t)h * out_stride, *ob = oa + out_stride;
      if (hd == 128)
        attn8_pipe(2, 128, qa, qb, k, v, kv_stride, n_pos, scale, oa, ob);
      else
        attn8_pipe(2, hd, qa, qb, k, v, kv_stride, n_pos, scale, oa, ob);
    }
  for (; h < nq; h++)
    avx2_attn_row(q + (size_t)h * q_stride, k, v, kv_stride, n_pos, hd, scale,
                  out + (size_t)h * out_stride);
}

/* The AVX-512 attention row in three passes over chunks of ATTN_CHUNK
 * positions, so the long dependency chain of the one-pass loop (dot ->
 * horizontal sum -> compare -> expf -> rescale -> accumulate, ~190 cycles per
 * position measured) is cut: (1) every score of the chunk, positions
 * independent of each other; (2) the online-softmax factors ms, vs and the
 * running sum S, a short scalar loop; (3) the F16 accumulator, whose only
 * chain is fma -> round to F16 per position, kept in registers. The values
 * and their order are exactly those of the one-pass loop. */
#define ATTN_CHUNK 128

RO_AVX512 static inline void attn_prefetch(const uint16_t *row, int64_t hd, bool ok) {
  if (!ok) return;
  for (int64_t b = 0; b < hd * 2; b += 64) _mm_prefetch((const char *)row + b, _MM_HINT_T0);
}

/* A position's dot product as 16 partial sums (two chains over the head,
 * added); attn_dot16 sums its lanes. */
RO_AVX512 static inline __m512 attn_dot16v(const uint16_t *kp, const float *q, int64_t hd) {
  __m512 d0 = _mm512_setzero_ps(), d1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= hd; i += 32) {
    d0 = _mm512_fmadd_ps(ro_f16x16(kp + i), _mm512_load_ps(q + i), d0);
    d1 = _mm512_fmadd_ps(ro_f16x16(kp + i + 16), _mm512_load_ps(q + i + 16), d1);
  }
  if (i < hd) d0 = _mm512_fmadd_ps(ro_f16x16(kp + i), _mm512_load_ps(q + i), d0);
  return _mm512_add_ps(d0, d1);
}

RO_AVX512 static inline float attn_dot16(const uint16_t *kp, const float *q, int64_t hd) {
  return _mm512_reduce_add_ps(attn_dot16v(kp, q, hd));
}

/* Pass 2 of a chunk of np scores: the online-softmax factors (ms rescales
 * the accumulator at a new maximum, vs weighs the position) and the running
 * max M and sum S. */
static inline void attn_softmax_factors(const float *s, int64_t np, float *M, float *S,
                                        float *ms, float *vs) {
  float m = *M, sum = *S;
  for (int64_t j = 0; j < np; j++) {
    if (s[j] > m) {
      ms[j] = expf(m - s[j]);
      vs[j] = 1.0f;
      m = s[j];
      /* expf(-inf) = 0 for the first position; ms = 1 exactly would be
       * skipped as the identity it is. */
    } else {
      ms[j] = 1.0f;
      vs[j] = expf(s[j] - m);
    }
    sum = sum * ms[j] + vs[j];
  }
  *M = m;
  *S = sum;
}

/* Pass 3 for nv vectors of 16 (nv a constant at the call sites, so the
 * accumulator stays in registers). */
RO_AVX512 static inline __attribute__((always_inline)) void
attn_accumulate(float *acc, int nv, const uint16_t *v, size_t kv_stride, int64_t np,
                const float *ms, const float *vs) {
  __m512 a[ROWOPS_MAX_HD / 16];
  for (int i = 0; i < nv; i++) a[i] = _mm512_load_ps(acc + 16 * i);
  for (int64_t j = 0; j < np; j++) {
    const uint16_t *vp = v + (size_t)j * kv_stride;
    attn_prefetch(vp + ATTN_PF_AHEAD * kv_stride, 16 * nv, j + ATTN_PF_AHEAD < np);
    if (ms[j] != 1.0f) { /* a new maximum: rescale (x 1 is the identity) */
      const __m512 vms = _mm512_set1_ps(ms[j]);
      for (int i = 0; i < nv; i++) a[i] = ro_round16x16(_mm512_mul_ps(a[i], vms));
    }
    const __m512 vvs = _mm512_set1_ps(vs[j]);
    for (int i = 0; i < nv; i++)
      a[i] = ro_round16x16(_mm512_fmadd_ps(ro_f16x16(vp + 16 * i), vvs, a[i]));
  }
  for (int i = 0; i < nv; i++) _mm512_store_ps(acc + 16 * i, a[i]);
}

RO_AVX512 static void avx512_attn_row_wide(const float *q32, const uint16_t *k, const uint16_t *v,
                                      size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                                      float *out) {
  if (hd % 16 != 0) {
    avx2_attn_row(q32, k, v, kv_stride, n_pos, hd, scale, out);
    return;
  }
  alignas(64) float q[ROWOPS_MAX_HD];
  alignas(64) float acc[ROWOPS_MAX_HD];
  float s[ATTN_CHUNK], ms[ATTN_CHUNK], vs[ATTN_CHUNK];
  for (int64_t i = 0; i < hd; i += 16) {
    _mm512_store_ps(q + i, ro_round16x16(_mm512_loadu_ps(q32 + i)));
    _mm512_store_ps(acc + i, _mm512_setzero_ps());
  }
  float M = -INFINITY, S = 0.0f;
  for (int64_t p0 = 0; p0 < n_pos; p0 += ATTN_CHUNK) {
    const int64_t np = n_pos - p0 < ATTN_CHUNK ? n_pos - p0 : ATTN_CHUNK;
    for (int64_t j = 0; j < np; j++) {
      attn_prefetch(k + (size_t)(p0 + j + ATTN_PF_AHEAD) * kv_stride, hd, p0 + j + ATTN_PF_AHEAD < n_pos);
      s[j] = attn_dot16(k + (size_t)(p0 + j) * kv_stride, q, hd) * scale;
    }
    attn_softmax_factors(s, np, &M, &S, ms, vs);
    const uint16_t *vc = v + (size_t)p0 * kv_stride;
    switch (hd / 16) {
    case 4: attn_accumulate(acc, 4, vc, kv_stride, np, ms, vs); break;
    case 8: attn_accumulate(acc, 8, vc, kv_stride, np, ms, vs); break;
    case 16: attn_accumulate(acc, 16, vc, kv_stride, np, ms, vs); break;
    default: attn_accumulate(acc, (int)(hd / 16), vc, kv_stride, np, ms, vs); break;
    }
  }
  const __m512 inv = _mm512_set1_ps(1.0f / S);
  for (int64_t i = 0; i < hd; i += 16)
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_load_ps(acc + i), inv));
}

/* Query rows that share a KV head (grouped-query attention), one or two per
 * sweep over the cache, as a software pipeline over blocks of ATTN_BLK
 * positions. The three passes of a block (scores, softmax factors, F16
 * accumulation) depend on each other, but block b+1's scores do not depend
 * on block b's accumulation: one loop does both, so the out-of-order core
 * overlaps the scoring pass's K misses (memory-bound: 256 bytes per position
 * and a short dot product) with the accumulation's arithmetic (compute-bound:
 * an fma and an F16 round trip per 16 values). Run one after the other, the
 * two passes took the sum of their times: 66-83 ns per (KV head, position)
 * at 2 threads from DRAM against 28 ns from L1 and 30 ns for the 512 bytes at
 * a core's 17 GB/s (bench/RESULTS.md, 2026-11-29).
 *
 * Two rows per sweep: each K and V row is converted from F16 once for both,
 * and their accumulator chains (fma -> round to F16, a latency chain per
 * position) interleave. A row's operations and their order do not depend on
 * whether it runs alone or paired, so results are bit-identical whatever the
 * pairing (tests/unit/engine/test_kernels_rowops.c checks attn_rows against
 * attn_row, and both against the scalar path). Measured after the change:
 * 38-42 ns per (KV head, position) from DRAM at 2 threads, huge pages. */
#define ATTN_BLK 16 /* = the lanes of attn_softmax_factors16 */

/* Two rows' dot products with one K row, as 16 partial sums each
 * (attn_reduce16 sums 16 positions' at once); attn_dot16x2 sums the lanes. */
RO_AVX512 static inline void attn_dot16x2v(const uint16_t *kp, const float *qa, const float *qb,
                                           int64_t hd, __m512 *da, __m512 *db) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 32 <= hd; i += 32) {
    const __m512 k0 = ro_f16x16(kp + i), k1 = ro_f16x16(kp + i + 16);
    a0 = _mm512_fmadd_ps(k0, _mm512_load_ps(qa + i), a0);
    a1 = _mm512_fmadd_ps(k1, _mm512_load_ps(qa + i + 16), a1);
    b0 = _mm512_fmadd_ps(k0, _mm512_load_ps(qb + i), b0);
    b1 = _mm512_fmadd_ps(k1, _mm512_load_ps(qb + i + 16), b1);
  }
  if (i < hd) {
    const __m512 k0 = ro_f16x16(kp + i);
    a0 = _mm512_fmadd_ps(k0, _mm512_load_ps(qa + i), a0);
    b0 = _mm512_fmadd_ps(k0, _mm512_load_ps(qb + i), b0);
  }
  *da = _mm512_add_ps(a0, a1);
  *db = _mm512_add_ps(b0, b1);
}

RO_AVX512 static inline void attn_dot16x2(const uint16_t *kp, const float *qa, const float *qb,
                                          int64_t hd, float *da, float *db) {
  __m512 va, vb;
  attn_dot16x2v(kp, qa, qb, hd, &va, &vb);
  *da = _mm512_reduce_add_ps(va);
  *db = _mm512_reduce_add_ps(vb);
}



/* The lane sums of 16 vectors at once, for K/V rows already in cache: a
 * transposed tree of 30 shuffles and 15 adds instead of ~8 operations per
 * vector. Its additions are those of _mm512_reduce_add_ps, in the same tree
 * (lanes i and i+8, then i and i+4, i and i+2, i and i+1), so every sum is
 * bit-identical to the per-position one (tests/unit/engine/
 * test_kernels_rowops.c). P holds position j's vector at slot attn_slot[j],
 * so that lane j of the result is position j's sum. From DRAM it is slower
 * (the tree is a burst at the block's end the core cannot overlap with the
 * loads): decode keeps the per-position sums. */
static const uint8_t attn_slot[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

RO_AVX512 static inline __m512 attn_reduce16(const float *P) {
  __m512 t[8], u[4], w[2];
  for (int i = 0; i < 8; i++) { /* lanes i + i+8, for slots 2i and 2i+1 */
    const __m512 a = _mm512_load_ps(P + 32 * i), b = _mm512_load_ps(P + 32 * i + 16);
    t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
  for (int i = 0; i < 4; i++) /* i + i+4: one slot per 128-bit quarter */
    u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; i++) /* i + i+2 */
    w[i] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                         _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
  /* i + i+1 */
  return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

/* A block's np scores from the partial sums in P (the slots of positions
 * np..15 zeroed first): s[j] = sum * scale, as attn_score_rows computes it. */
RO_AVX512 static inline void attn_scores_finish(float *P, int64_t np, float scale, float *s) {
  for (int64_t j = np; j < ATTN_BLK; j++)
    _mm512_store_ps(P + 16 * attn_slot[j], _mm512_setzero_ps());
  alignas(64) float sum[16];
  _mm512_store_ps(sum, attn_reduce16(P));
  for (int64_t j = 0; j < np; j++) s[j] = sum[j] * scale;
}

/* Pass 2 of the pipeline for np <= 16 scores on 16 lanes: the factors of
 * attn_softmax_factors, each lane's running maximum before it from a prefix
 * maximum (NaN scores never become the maximum, as in the scalar loop), the
 * exponentials from ro_exp16 (within 2 ulp of expf's; exp(-inf) and
 * arguments below EXP_LO give 0, NaN stays NaN) and the running sum S in
 * position order. */
RO_AVX512 static inline __m512 attn_shift_up(__m512 x, int lanes, __m512 fill) {
  /* lane j <- lane j - lanes, the first `lanes` lanes from fill */
  const __m512i xi = _mm512_castps_si512(x), fi = _mm512_castps_si512(fill);
  switch (lanes) {
  case 1: return _mm512_castsi512_ps(_mm512_alignr_epi32(xi, fi, 15));
  case 2: return _mm512_castsi512_ps(_mm512_alignr_epi32(xi, fi, 14));
  case 4: return _mm512_castsi512_ps(_mm512_alignr_epi32(xi, fi, 12));
  default: return _mm512_castsi512_ps(_mm512_alignr_epi32(xi, fi, 8));
  }
}

RO_AVX512 static inline void attn_softmax_factors16(const float *s, int64_t np, float *M, float *S,
                                                    float *ms, float *vs) {
  const __mmask16 live = (__mmask16)((1u << np) - 1);
  const __m512 ninf = _mm512_set1_ps(-INFINITY), one = _mm512_set1_ps(1.0f);
  const __m512 x = _mm512_mask_loadu_ps(ninf, live, s);
  /* lane j: max(x_0..x_j), NaN lanes skipped (max_ps returns its 2nd operand on NaN) */
  __m512 incl = x;
  incl = _mm512_max_ps(incl, attn_shift_up(incl, 1, ninf));
  incl = _mm512_max_ps(incl, attn_shift_up(incl, 2, ninf));
  incl = _mm512_max_ps(incl, attn_shift_up(incl, 4, ninf));
  incl = _mm512_max_ps(incl, attn_shift_up(incl, 8, ninf));
  const __m512 prev = _mm512_max_ps(attn_shift_up(incl, 1, ninf), _mm512_set1_ps(*M));
  const __mmask16 fresh = _mm512_mask_cmp_ps_mask(live, x, prev, _CMP_GT_OQ);
  /* new maximum: ms = exp(prev - x), vs = 1; else ms = 1, vs = exp(x - prev) */
  const __m512 arg = _mm512_mask_sub_ps(_mm512_sub_ps(x, prev), fresh, prev, x);
  const __mmask16 in_range = _mm512_cmp_ps_mask(arg, _mm512_set1_ps(EXP_LO), _CMP_NLT_UQ);
  __m512 e = _mm512_maskz_mov_ps(in_range, ro_exp16(arg));
  e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(arg, arg, _CMP_UNORD_Q), arg);
  _mm512_storeu_ps(ms, _mm512_mask_mov_ps(one, fresh, e));
  _mm512_storeu_ps(vs, _mm512_mask_mov_ps(e, fresh, one));
  alignas(64) float last[16];
  _mm512_store_ps(last, incl);
  if (last[np - 1] > *M) *M = last[np - 1];
  float sum = *S;
  for (int64_t j = 0; j < np; j++) sum = sum * ms[j] + vs[j];
  *S = sum;
}
/* The score of position j of the block at k, for nr (1 or 2) rows; k_left
 * is the number of cache rows from k on (the prefetch stays inside them).
 * With tree, its partial sums into P0/P1 instead (attn_reduce16). */
RO_AVX512 static inline __attribute__((always_inline)) void
attn_score_rows(int nr, bool tree, int64_t hd, const uint16_t *k, int64_t k_left,
                size_t kv_stride, int64_t j, const float *q0, const float *q1, float scale,
                float *s0, float *s1, float *P0, float *P1) {
  const uint16_t *kp = k + (size_t)j * kv_stride;
  attn_prefetch(kp + ATTN_PF_AHEAD * kv_stride, hd, j + ATTN_PF_AHEAD < k_left);
  if (tree) { /* partial sums, added across lanes by attn_scores_finish */
    if (nr == 2) {
      __m512 d0, d1;
      attn_dot16x2v(kp, q0, q1, hd, &d0, &d1);
      _mm512_store_ps(P0 + 16 * attn_slot[j], d0);
      _mm512_store_ps(P1 + 16 * attn_slot[j], d1);
    } else {
      _mm512_store_ps(P0 + 16 * attn_slot[j], attn_dot16v(kp, q0, hd));
    }
  } else if (nr == 2) {
    float d0, d1;
    attn_dot16x2(kp, q0, q1, hd, &d0, &d1);
    s0[j] = d0 * scale;
    s1[j] = d1 * scale;
  } else {
    s0[j] = attn_dot16(kp, q0, hd) * scale;
  }
}

/* A span the pipeline prefetches into L1 beside its own rows (attn_rows_next):
 * from position `from` on, `per` lines per position while `lines` remain. */
struct attn_side {
  const char *p;
  int64_t lines;
  int64_t per;
  int64_t from;
};

/* How much of the next item's K rows attn_rows_next prefetches: its first
 * 64 KiB (256 positions of a 128-wide head), over this item's last
 * positions, 4 lines (one row) a position. A deep context's whole next
 * head spread over the item (1 MiB at 4000 positions) was evicted from L2
 * by the item's own 2 MiB before it was used: read twice, tg64 at depth 4000
 * ran at 61% of its ceiling (2026-12-01). Within 256 positions it is the
 * whole head, spread over the whole item, as before. */
#define ATTN_NEXT_MAX_BYTES (64u << 10)
#define ATTN_NEXT_LINES_PER_POS 4

/* One block: accumulate the np V rows at v (factors ms/vs per row) into the
 * nr accumulators acc0/acc1 (nv vectors of 16 each, in registers for the
 * block) and, in the same loop, score the np_next K rows at k_next into
 * s0/s1 (with tree, their partial sums into P0/P1). np_next <= np (only the
 * last block is short). */
RO_AVX512 static inline __attribute__((always_inline)) void
attn_pipe_block(int nr, bool tree, int nv, float *acc0, float *acc1, const uint16_t *v,
                int64_t v_left,
                const uint16_t *k_next, int64_t k_left, size_t kv_stride, int64_t np,
                int64_t np_next, const float *ms0, const float *vs0, const float *ms1,
                const float *vs1, const float *q0, const float *q1, float scale, float *s0,
                float *s1, float *P0, float *P1, struct attn_side *side) {
  __m512 a[8], b[8]; /* nv <= 8 (hd <= 128) */
  const char *sp = side ? side->p : NULL;
  int64_t s_left = side ? side->lines : 0;
  const int64_t s_per = side ? side->per : 0;
  for (int i = 0; i < nv; i++) a[i] = _mm512_load_ps(acc0 + 16 * i);
  if (nr == 2)
    for (int i = 0; i < nv; i++) b[i] = _mm512_load_ps(acc1 + 16 * i);
  for (int64_t j = 0; j < np; j++) {
    for (int64_t t = 0; t < s_per && s_left > 0; t++, s_left--, sp += 64)
      _mm_prefetch(sp, _MM_HINT_T0);
    if (j < np_next)
      attn_score_rows(nr, tree, 16 * nv, k_next, k_left, kv_stride, j, q0, q1, scale, s0, s1,
                      P0, P1);
    const uint16_t *vp = v + (size_t)j * kv_stride;
    attn_prefetch(vp + ATTN_PF_AHEAD * kv_stride, 16 * nv, j + ATTN_PF_AHEAD < v_left);
    if (ms0[j] != 1.0f) { /* a new maximum: rescale (x 1 is the identity) */
      const __m512 m = _mm512_set1_ps(ms0[j]);
      for (int i = 0; i < nv; i++) a[i] = ro_round16x16(_mm512_mul_ps(a[i], m));
    }
    if (nr == 2 && ms1[j] != 1.0f) {
      const __m512 m = _mm512_set1_ps(ms1[j]);
      for (int i = 0; i < nv; i++) b[i] = ro_round16x16(_mm512_mul_ps(b[i], m));
    }
    const __m512 w0 = _mm512_set1_ps(vs0[j]), w1 = _mm512_set1_ps(nr == 2 ? vs1[j] : 0.0f);
    for (int i = 0; i < nv; i++) {
      const __m512 x = ro_f16x16(vp + 16 * i);
      a[i] = ro_round16x16(_mm512_fmadd_ps(x, w0, a[i]));
      if (nr == 2) b[i] = ro_round16x16(_mm512_fmadd_ps(x, w1, b[i]));
    }
  }
  for (int i = 0; i < nv; i++) _mm512_store_ps(acc0 + 16 * i, a[i]);
  if (nr == 2)
    for (int i = 0; i < nv; i++) _mm512_store_ps(acc1 + 16 * i, b[i]);
  if (side) side->p = sp, side->lines = s_left;
}

/* nr (1 or 2) rows q32a/q32b over n_pos >= 1 positions; hd = 16 * nv <= 128;
 * tree: the scores' lane sums per block (attn_reduce16), same results;
 * side: a span to prefetch on the way, or NULL. */
RO_AVX512 static inline __attribute__((always_inline)) void
attn_pipe(int nr, bool tree, int nv, const float *q32a, const float *q32b, const uint16_t *k,
          const uint16_t *v, size_t kv_stride, int64_t n_pos, float scale, float *outa,
          float *outb, struct attn_side *side) {
  const int64_t hd = 16 * nv;
  alignas(64) float q0[128], q1[128], acc0[128], acc1[128];
  float s[2][2][ATTN_BLK]; /* [block parity][row][position] */
  float ms0[ATTN_BLK], vs0[ATTN_BLK], ms1[ATTN_BLK], vs1[ATTN_BLK];
  alignas(64) float P0[tree ? 16 * ATTN_BLK : 16], P1[tree ? 16 * ATTN_BLK : 16];
  for (int64_t i = 0; i < hd; i += 16) {
    _mm512_store_ps(q0 + i, ro_round16x16(_mm512_loadu_ps(q32a + i)));
    _mm512_store_ps(acc0 + i, _mm512_setzero_ps());
    if (nr == 2) {
      _mm512_store_ps(q1 + i, ro_round16x16(_mm512_loadu_ps(q32b + i)));
      _mm512_store_ps(acc1 + i, _mm512_setzero_ps());
    }
  }
  float M0 = -INFINITY, S0 = 0.0f, M1 = -INFINITY, S1 = 0.0f;
  const int64_t np_first = n_pos < ATTN_BLK ? n_pos : ATTN_BLK;
  for (int64_t j = 0; j < np_first; j++)
    attn_score_rows(nr, tree, hd, k, n_pos, kv_stride, j, q0, q1, scale, s[0][0], s[0][1], P0,
                    P1);
  if (tree) {
    attn_scores_finish(P0, np_first, scale, s[0][0]);
    if (nr == 2) attn_scores_finish(P1, np_first, scale, s[0][1]);
  }
  int cur = 0;
  for (int64_t p0 = 0; p0 < n_pos; p0 += ATTN_BLK, cur ^= 1) {
    const int64_t np = n_pos - p0 < ATTN_BLK ? n_pos - p0 : ATTN_BLK;
    const int64_t rest = n_pos - p0 - np; /* positions after this block */
    const int64_t np_next = rest < ATTN_BLK ? rest : ATTN_BLK;
    attn_softmax_factors16(s[cur][0], np, &M0, &S0, ms0, vs0);
    if (nr == 2) attn_softmax_factors16(s[cur][1], np, &M1, &S1, ms1, vs1);
    const uint16_t *k_next = np_next ? k + (size_t)(p0 + np) * kv_stride : k;
    attn_pipe_block(nr, tree, nv, acc0, acc1, v + (size_t)p0 * kv_stride, n_pos - p0, k_next,
                    rest, kv_stride, np, np_next, ms0, vs0, ms1, vs1, q0, q1, scale,
                    s[cur ^ 1][0], s[cur ^ 1][1], P0, P1,
                    side && p0 + ATTN_BLK > side->from ? side : NULL);
    if (tree && np_next) {
      attn_scores_finish(P0, np_next, scale, s[cur ^ 1][0]);
      if (nr == 2) attn_scores_finish(P1, np_next, scale, s[cur ^ 1][1]);
    }
  }
  const __m512 inv0 = _mm512_set1_ps(1.0f / S0), inv1 = _mm512_set1_ps(1.0f / S1);
  for (int64_t i = 0; i < hd; i += 16) {
    _mm512_storeu_ps(outa + i, _mm512_mul_ps(_mm512_load_ps(acc0 + i), inv0));
    if (nr == 2) _mm512_storeu_ps(outb + i, _mm512_mul_ps(_mm512_load_ps(acc1 + i), inv1));
  }
}

/* attn_pipe with nr, tree and nv constants for the common head sizes (the
 * accumulators and the unrolled vector loops then stay in registers). */
#define ATTN_PIPE_NV(nr, tree, qa, qb, oa, ob)                                               \
  do {                                                                                      \
    if (hd == 128)                                                                          \
      attn_pipe(nr, tree, 8, qa, qb, k, v, kv_stride, n_pos, scale, oa, ob, side);          \
    else if (hd == 64)                                                                      \
      attn_pipe(nr, tree, 4, qa, qb, k, v, kv_stride, n_pos, scale, oa, ob, side);          \
    else                                                                                    \
      attn_pipe(nr, tree, (int)(hd / 16), qa, qb, k, v, kv_stride, n_pos, scale, oa, ob,    \
                side);                                                                      \
  } while (0)

RO_AVX512 static void attn_pipe_rows(int nr, bool tree, const float *q32a, const float *q32b,
                                     const uint16_t *k, const uint16_t *v, size_t kv_stride,
                                     int64_t n_pos, int64_t hd, float scale, float *outa,
                                     float *outb, struct attn_side *side) {
  if (nr == 2 && tree) ATTN_PIPE_NV(2, true, q32a, q32b, outa, outb);
  else if (nr == 2) ATTN_PIPE_NV(2, false, q32a, q32b, outa, outb);
  else if (tree) ATTN_PIPE_NV(1, true, q32a, q32a, outa, outa);
  else ATTN_PIPE_NV(1, false, q32a, q32a, outa, outa);
}
#undef ATTN_PIPE_NV

#define ATTN_PIPE_OK(hd) ((hd) % 16 == 0 && (hd) <= 128)

RO_AVX512 static void avx512_attn_row(const float *q32, const uint16_t *k, const uint16_t *v,
                                      size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                                      float *out) {
  if (ATTN_PIPE_OK(hd))
    attn_pipe_rows(1, false, q32, q32, k, v, kv_stride, n_pos, hd, scale, out, out, NULL);
  else
    avx512_attn_row_wide(q32, k, v, kv_stride, n_pos, hd, scale, out);
}

/* attn_rows on AVX-512: rows in pairs through the pipeline where hd allows
 * (a multiple of 16, at most 128: two rows' accumulators in registers), an
 * odd last row alone; wider heads one row at a time. tree: the lane sums of
 * the scores per block (attn_rows_cached), bit-identical results. */
RO_AVX512 static inline __attribute__((always_inline)) void
avx512_attn_rows_any(bool tree, const float *q, size_t q_stride, int nq, const uint16_t *k,
                     const uint16_t *v, size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                     float *out, size_t out_stride, const void *next, size_t next_bytes) {
  int h = 0;
  if (ATTN_PIPE_OK(hd)) {
    /* the side span goes with the first pipeline pass: at most
     * ATTN_NEXT_MAX_BYTES of it, over the pass's last positions, at least
     * ATTN_NEXT_LINES_PER_POS lines a position (more when the pass is
     * shorter than the span) */
    if (next_bytes > ATTN_NEXT_MAX_BYTES) next_bytes = ATTN_NEXT_MAX_BYTES;
    struct attn_side side = {next, next ? (int64_t)((next_bytes + 63) / 64) : 0, 0, 0};
    side.per = (side.lines + n_pos - 1) / n_pos;
    if (side.per < ATTN_NEXT_LINES_PER_POS) side.per = ATTN_NEXT_LINES_PER_POS;
    side.from = n_pos - (side.lines + side.per - 1) / side.per;
    if (side.from < 0) side.from = 0;
    struct attn_side *sp = side.lines > 0 ? &side : NULL;
    for (; h + 2 <= nq; h += 2, sp = NULL)
      attn_pipe_rows(2, tree, q + (size_t)h * q_stride, q + (size_t)(h + 1) * q_stride, k, v,
                     kv_stride, n_pos, hd, scale, out + (size_t)h * out_stride,
                     out + (size_t)(h + 1) * out_stride, sp);
    if (h < nq)
      attn_pipe_rows(1, tree, q + (size_t)h * q_stride, NULL, k, v, kv_stride, n_pos, hd, scale,
                     out + (size_t)h * out_stride, NULL, sp);
    return;
  }
  for (; h < nq; h++)
    avx512_attn_row_wide(q + (size_t)h * q_stride, k, v, kv_stride, n_pos, hd, scale,
                         out + (size_t)h * out_stride);
}

RO_AVX512 static void avx512_attn_rows(const float *q, size_t q_stride, int nq, const uint16_t *k,
                                       const uint16_t *v, size_t kv_stride, int64_t n_pos,
                                       int64_t hd, float scale, float *out, size_t out_stride) {
  avx512_attn_rows_any(false, q, q_stride, nq, k, v, kv_stride, n_pos, hd, scale, out,
                       out_stride, NULL, 0);
}

RO_AVX512 static void avx512_attn_rows_next(const float *q, size_t q_stride, int nq,
                                            const uint16_t *k, const uint16_t *v,
                                            size_t kv_stride, int64_t n_pos, int64_t hd,
                                            float scale, float *out, size_t out_stride,
                                            const void *next, size_t next_bytes) {
  avx512_attn_rows_any(false, q, q_stride, nq, k, v, kv_stride, n_pos, hd, scale, out,
                       out_stride, next, next_bytes);
}

RO_AVX512 static void avx512_attn_rows_cached(const float *q, size_t q_stride, int nq,
                                              const uint16_t *k, const uint16_t *v,
                                              size_t kv_stride, int64_t n_pos, int64_t hd,
                                              float scale, float *out, size_t out_stride) {
  avx512_attn_rows_any(true, q, q_stride, nq, k, v, kv_stride, n_pos, hd, scale, out, out_stride,
                       NULL, 0);
}

void kernels_fill_attn_x86(struct kernel_ops *ops) {
  switch (ops->path) {
  case KERNEL_AVX2:
    ops->attn_row = avx2_attn_row;
    ops->attn_rows = avx2_attn_rows;
    break;
  case KERNEL_AVX512:
  case KERNEL_AVX512_VNNI:
    ops->attn_row = avx512_attn_row;
    ops->attn_rows = avx512_attn_rows;
    ops->attn_rows_cached = avx512_attn_rows_cached;
    ops->attn_rows_next = avx512_attn_rows_next;
    break;
  default: break;
  }
}
#endif
