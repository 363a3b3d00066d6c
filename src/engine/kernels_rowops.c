/* kernels_rowops: the per-row operations of the forward pass that are not
 * matrix products, one function per path: attention of one query row over
 * the F16 KV cache (attn_row), the greedy pick (argmax) and RMSNorm's sum of
 * squares (sumsq) and the SwiGLU gate (swiglu). kernels_fill_rowops(ops) sets
 * them from ops->path.
 *
 * Why fused: a decode step at context depth D calls the attention body
 * n_layer x n_head x D times; through the per-position helpers (dot_f16_f32,
 * scale_f16, mad_f16: one indirect call each, the accumulator converted
 * to and from F16 in memory every time) that cost 8-15% of a one-thread
 * decode step at depth 32-64 on the team's Xeon (perf, 2026-11-29), time that
 * does not shrink with memory bandwidth. Here the F16 accumulator lives in
 * f32 registers/L1 holding values that are exactly F16 (rounded to nearest
 * even after every step with a convert round trip), which is the same
 * arithmetic as storing F16: results are those of the per-position helpers,
 * bit for bit on the same path.
 *
 * attn_row's arithmetic is llama.cpp's CPU flash attention for an F16 cache:
 *   q rounded to F16; for each position p in order:
 *     s = dot(k_p, q) * scale
 *     if s > M: ms = expf(M_old - s), acc = f16(acc * ms), vs = 1, M = s
 *     else:     ms = 1, vs = expf(s - M)
 *     acc = f16(acc + vs * v_p)       (one fused multiply-add, then rounding)
 *     S = S * ms + vs
 *   out = f32(acc) / S
 * The scalar path is the reference: SIMD paths (kernels_attn_x86.c) differ in
 * the summation order of the dot product, and the AVX2 and AVX-512 pipelines
 * (attn8_pipe; attn_pipe for heads of up to 128 values) take the
 * exponentials from a polynomial within 2 ulp of expf (exp(-inf) = 0; below
 * EXP_LO, 0 where expf would give a value under 1e-38). */
#include <math.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#include "engine/kernels_rowops.h"
#include "util/fp16.h"

/* ---- scalar (the reference) ---------------------------------------------- */

void kernels_scalar_attn_row(const float *q32, const uint16_t *k, const uint16_t *v,
                             size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                             float *out) {
  float q[ROWOPS_MAX_HD];
  float acc[ROWOPS_MAX_HD]; /* always holds F16 values */
  for (int64_t i = 0; i < hd; i++) {
    q[i] = tm_fp16_to_fp32(tm_fp32_to_fp16(q32[i]));
    acc[i] = 0.0f;
  }
  float M = -INFINITY, S = 0.0f;
  for (int64_t p = 0; p < n_pos; p++) {
    const uint16_t *kp = k + (size_t)p * kv_stride, *vp = v + (size_t)p * kv_stride;
    float dot = 0.0f;
    for (int64_t i = 0; i < hd; i++) dot += tm_fp16_to_fp32(kp[i]) * q[i];
    float s = dot * scale, ms = 1.0f, vs = 1.0f;
    if (s > M) {
      float m_old = M;
      M = s;
      ms = expf(m_old - M);
      for (int64_t i = 0; i < hd; i++) acc[i] = tm_fp16_to_fp32(tm_fp32_to_fp16(acc[i] * ms));
    } else {
      vs = expf(s - M);
    }
    for (int64_t i = 0; i < hd; i++)
      acc[i] = tm_fp16_to_fp32(tm_fp32_to_fp16(fmaf(tm_fp16_to_fp32(vp[i]), vs, acc[i])));
    S = S * ms + vs;
  }
  float inv = 1.0f / S;
  for (int64_t i = 0; i < hd; i++) out[i] = acc[i] * inv;
}

static int64_t scalar_argmax(const float *x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

/* Eight partial sums in double (the order every path uses, so all paths give
 * the same bits): element i goes to sum i % 8, the eight are added pairwise. */
static double scalar_sumsq(const float *x, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) s[j] += (double)x[i + j] * x[i + j];
  for (int j = 0; i < n; i++, j++) s[j] += (double)x[i] * x[i];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

static void scalar_swiglu(float *g, const float *u, int64_t n) {
  for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

#if defined(__x86_64__)
/* The end of a SIMD argmax: the lane with the largest value (among equals
 * the smallest index), then the scalar tail x[i..n). */
static int64_t argmax_finish(const float *bv, const int32_t *bi, int lanes, const float *x,
                             int64_t i, int64_t n) {
  int64_t b = bi[0];
  float m = bv[0];
  for (int j = 1; j < lanes; j++)
    if (bv[j] > m || (bv[j] == m && bi[j] < b)) {
      m = bv[j];
      b = bi[j];
    }
  for (; i < n; i++)
    if (x[i] > m) {
      m = x[i];
      b = i;
    }
  return b;
}

/* First index of the maximum: per-lane running maxima with their indices
 * (strictly greater wins, so each lane keeps its first), then the lane with
 * the largest value and, among equals, the smallest index. NaN never wins
 * (every comparison with it is false) and a NaN at index 0 keeps index 0, as
 * in the scalar loop. */
RO_AVX2 static int64_t avx2_argmax(const float *x, int64_t n) {
  if (n < 16) return scalar_argmax(x, n);
  __m256 best = _mm256_loadu_ps(x);
  __m256i besti = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i idx = besti;
  const __m256i step = _mm256_set1_epi32(8);
  int64_t i = 8;
  for (; i + 8 <= n; i += 8) {
    idx = _mm256_add_epi32(idx, step);
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 gt = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
    best = _mm256_blendv_ps(best, v, gt);
    besti = _mm256_blendv_epi8(besti, idx, _mm256_castps_si256(gt));
  }
  alignas(32) float bv[8];
  alignas(32) int32_t bi[8];
  _mm256_store_ps(bv, best);
  _mm256_store_si256((__m256i *)bi, besti);
  return argmax_finish(bv, bi, 8, x, i, n);
}

RO_AVX2 static double avx2_sumsq(const float *x, int64_t n) {
  /* lanes 0..3 hold sums j = 0..3, lanes of s1 sums 4..7: the scalar order. */
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    __m256d b = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    s0 = _mm256_add_pd(s0, _mm256_mul_pd(a, a));
    s1 = _mm256_add_pd(s1, _mm256_mul_pd(b, b));
  }
  alignas(32) double s[8];
  _mm256_store_pd(s, s0);
  _mm256_store_pd(s + 4, s1);
  for (int j = 0; i < n; i++, j++) s[j] += (double)x[i] * x[i];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

RO_AVX2 static void avx2_swiglu(float *g, const float *u, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(g + i);
    __m256 d = _mm256_add_ps(one, ro_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x)));
    _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, d), _mm256_loadu_ps(u + i)));
  }
  scalar_swiglu(g + i, u + i, n - i);
}

RO_AVX512 static int64_t avx512_argmax(const float *x, int64_t n) {
  if (n < 32) return scalar_argmax(x, n);
  __m512 best = _mm512_loadu_ps(x);
  __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i besti = idx;
  const __m512i step = _mm512_set1_epi32(16);
  int64_t i = 16;
  for (; i + 16 <= n; i += 16) {
    idx = _mm512_add_epi32(idx, step);
    __m512 v = _mm512_loadu_ps(x + i);
    __mmask16 gt = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
    best = _mm512_mask_mov_ps(best, gt, v);
    besti = _mm512_mask_mov_epi32(besti, gt, idx);
  }
  alignas(64) float bv[16];
  alignas(64) int32_t bi[16];
  _mm512_store_ps(bv, best);
  _mm512_store_si512(bi, besti);
  return argmax_finish(bv, bi, 16, x, i, n);
}

RO_AVX512 static void avx512_swiglu(float *g, const float *u, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(m, g + i);
    __m512 d = _mm512_add_ps(one, ro_exp16(_mm512_sub_ps(_mm512_setzero_ps(), x)));
    _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(_mm512_div_ps(x, d), _mm512_maskz_loadu_ps(m, u + i)));
  }
}

#endif /* __x86_64__ */

/* attn_rows one row at a time, for the paths without a fused version. */
#define DEFINE_ATTN_ROWS_LOOP(name, row)                                                     \
  static void name(const float *q, size_t q_stride, int nq, const uint16_t *k,               \
                   const uint16_t *v, size_t kv_stride, int64_t n_pos, int64_t hd,           \
                   float scale, float *out, size_t out_stride) {                              \
    for (int h = 0; h < nq; h++)                                                             \
      row(q + (size_t)h * q_stride, k, v, kv_stride, n_pos, hd, scale,                       \
          out + (size_t)h * out_stride);                                                     \
  }
DEFINE_ATTN_ROWS_LOOP(scalar_attn_rows, kernels_scalar_attn_row)

void kernels_fill_rowops(struct kernel_ops *ops) {
  ops->attn_row = kernels_scalar_attn_row;
  ops->attn_rows = scalar_attn_rows;
  ops->attn_rows_cached = NULL; /* = attn_rows, set at the end */
  ops->attn_rows_next = NULL;
  ops->argmax = scalar_argmax;
  ops->sumsq = scalar_sumsq;
  ops->swiglu = scalar_swiglu;
#if defined(__x86_64__)
  switch (ops->path) {
  case KERNEL_AVX2:
    ops->argmax = avx2_argmax;
    ops->sumsq = avx2_sumsq;
    ops->swiglu = avx2_swiglu;
    break;
  case KERNEL_AVX512:
  case KERNEL_AVX512_VNNI:
    ops->argmax = avx512_argmax;
    ops->sumsq = avx2_sumsq;
    ops->swiglu = avx512_swiglu;
    break;
  default: break;
  }
  kernels_fill_attn_x86(ops);
#endif
  if (!ops->attn_rows_cached) ops->attn_rows_cached = ops->attn_rows;
}
