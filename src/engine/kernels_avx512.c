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
 * BF16 on these paths: the AVX2 / scalar functions.
 *
 * This file holds the float weights, the attention helpers, the quantizers
 * and the two fill functions; the K-quants, the 32-element types and the
 * prefill panels have a file each (kernels_avx512.h lists them). */
#include "engine/kernels_avx512.h"

#if defined(__x86_64__)
#include <stdalign.h>
#include <string.h>

#include "gguf/quant_ref.h"

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

DEFINE_X86_GEMM(AVX512, gemm_f32_512, tile_f32_512)
DEFINE_X86_GEMM(AVX512, gemm_f16_512, tile_f16_512)

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
  ops->path = KERNEL_AVX512;
  ops->name = "avx512";
  ops->gemm[GGML_TYPE_F32] = gemm_f32_512;
  ops->gemm[GGML_TYPE_F16] = gemm_f16_512;
  kernels_fill_avx512_kquant(ops);
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
  kernels_fill_avx512_q32_vnni(ops);
  kernels_fill_avx512_kquant_vnni(ops);
}
#endif
