/* kernels_neon: the aarch64 NEON path (KERNEL_NEON; aarch64 builds only).
 * NEON is baseline on aarch64, so everything here runs on any ARMv8-A core
 * except the sdot integer kernels, which kernels.c installs only when
 * getauxval(AT_HWCAP) reports HWCAP_ASIMDDP (see kernels_neon.h).
 *
 * Specialised here: gemm F32, F16, BF16 (4-wide FMA, four accumulators per
 * column, scalar tails), Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K
 * (kernels_neon_int.h, two variants); quantize_q8, quantize_q8k (the
 * scalar's bytes: same float products, vcvtn rounds half to even like
 * nearbyintf); dot_f16_f32, axpy_f16, f32_to_f16, scale_f16, mad_f16.
 * Scalar on this path: get_row.
 *
 * f16 conversions use the hardware (fcvt / fcvtl / fcvtn, round to nearest
 * even under Linux's default FPCR, subnormals kept), which gives
 * tm_fp32_to_fp16 / tm_fp16_to_fp32's bits for every non-NaN value.
 * scale_f16 is one multiply then one rounding to f16, the scalar's
 * operations exactly; mad_f16 is one fused multiply-add then one rounding to
 * f16, as the x86 paths do (the scalar's y + a*v is contracted to the same
 * fmadd by GCC on aarch64). */
#include "engine/kernels_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "gguf/quant_ref.h"

#define NEON_BASE_INLINE __attribute__((always_inline)) static inline

/* Plain static inline (not always_inline): the dotprod functions inline
 * them, and a build with a wider -march must still compile. */
static inline float neon_h2f(uint16_t h) {
  __fp16 x;
  memcpy(&x, &h, 2);
  return (float)x;
}
static inline float neon_bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t neon_f2h(float f) {
  __fp16 x = (__fp16)f;
  uint16_t h;
  memcpy(&h, &x, 2);
  return h;
}

/* ---- integer kernels: the two variants ---------------------------------- */

#define NEON_SFX _dp
#define NEON_DOTPROD 1
#if defined(__ARM_FEATURE_DOTPROD)
#define NEON_ATTR /* the build already targets dotprod */
#else
#define NEON_ATTR __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
#include "engine/kernels_neon_int.h"
#undef NEON_SFX
#undef NEON_DOTPROD
#undef NEON_ATTR

#define NEON_SFX _base
#define NEON_DOTPROD 0
#define NEON_ATTR
#include "engine/kernels_neon_int.h"
#undef NEON_SFX
#undef NEON_DOTPROD
#undef NEON_ATTR

/* ---- float weights ------------------------------------------------------ */

#define LOAD4_F32(p) vld1q_f32(p)
#define LOAD4_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))
#define LOAD4_BF16(p) vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))
#define SW_F32(v) (v)
#define SW_F16(v) neon_h2f(v)
#define SW_BF16(v) neon_bf2f(v)

/* Four accumulators per column: FMA latency x two pipes needs about eight
 * independent chains for one-column decode; nc = 4 columns x 4 still fits
 * the 32 vector registers with the weights and one activation load. */
#define NEON_FLOAT_TILE(fn, LOAD4, WTYPE, SCALAR_W)                                         \
  NEON_BASE_INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,       \
                           const int nc, float *o, int64_t os) {                            \
    const WTYPE *w = (const WTYPE *)wr;                                                     \
    float32x4_t acc[4][4];                                                                  \
    for (int c = 0; c < nc; c++)                                                            \
      for (int k = 0; k < 4; k++) acc[c][k] = vdupq_n_f32(0.0f);                            \
    int64_t i = 0;                                                                          \
    for (; i + 16 <= n; i += 16) {                                                          \
      float32x4_t w0 = LOAD4(w + i), w1 = LOAD4(w + i + 4);                                 \
      float32x4_t w2 = LOAD4(w + i + 8), w3 = LOAD4(w + i + 12);                            \
      for (int c = 0; c < nc; c++) {                                                        \
        const float *x = (const float *)(a + c * as) + i;                                   \
        acc[c][0] = vfmaq_f32(acc[c][0], w0, vld1q_f32(x));                                 \
        acc[c][1] = vfmaq_f32(acc[c][1], w1, vld1q_f32(x + 4));                             \
        acc[c][2] = vfmaq_f32(acc[c][2], w2, vld1q_f32(x + 8));                             \
        acc[c][3] = vfmaq_f32(acc[c][3], w3, vld1q_f32(x + 12));                            \
      }                                                                                     \
    }                                                                                       \
    for (; i + 4 <= n; i += 4) {                                                            \
      float32x4_t w0 = LOAD4(w + i);                                                        \
      for (int c = 0; c < nc; c++)                                                          \
        acc[c][0] = vfmaq_f32(acc[c][0], w0, vld1q_f32((const float *)(a + c * as) + i));   \
    }                                                                                       \
    for (int c = 0; c < nc; c++) {                                                          \
      const float *x = (const float *)(a + c * as);                                         \
      float s = vaddvq_f32(vaddq_f32(vaddq_f32(acc[c][0], acc[c][1]),                       \
                                     vaddq_f32(acc[c][2], acc[c][3])));                     \
      for (int64_t j = i; j < n; j++) s += SCALAR_W(w[j]) * x[j];                           \
      o[c * os] = s;                                                                        \
    }                                                                                       \
  }

NEON_FLOAT_TILE(tile_f32, LOAD4_F32, float, SW_F32)
NEON_FLOAT_TILE(tile_f16, LOAD4_F16, uint16_t, SW_F16)
NEON_FLOAT_TILE(tile_bf16, LOAD4_BF16, uint16_t, SW_BF16)

DEFINE_NEON_GEMM(, gemm_f32, tile_f32)
DEFINE_NEON_GEMM(, gemm_f16, tile_f16)
DEFINE_NEON_GEMM(, gemm_bf16, tile_bf16)

/* ---- activation quantizers (the scalar's bytes; see kernels_scalar.c) ---- */

static void neon_quantize_q8(const float *x, struct act_q8 *y, int64_t n) {
  const int32x4_t lim = vdupq_n_s32(127), nlim = vdupq_n_s32(-127);
  for (int64_t b = 0; b < n / 32; b++) {
    const float *xb = x + b * 32;
    float32x4_t v[8], amaxv = vdupq_n_f32(0.0f);
    for (int i = 0; i < 8; i++) {
      v[i] = vld1q_f32(xb + 4 * i);
      amaxv = vmaxq_f32(amaxv, vabsq_f32(v[i]));
    }
    float amax = vmaxvq_f32(amaxv);
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32x4_t sumv = vdupq_n_s32(0);
    int16x8_t h[4];
    for (int i = 0; i < 8; i += 2) {
      int32x4_t q0 = vcvtnq_s32_f32(vmulq_n_f32(v[i], id));
      int32x4_t q1 = vcvtnq_s32_f32(vmulq_n_f32(v[i + 1], id));
      q0 = vminq_s32(vmaxq_s32(q0, nlim), lim);
      q1 = vminq_s32(vmaxq_s32(q1, nlim), lim);
      sumv = vaddq_s32(sumv, vaddq_s32(q0, q1));
      h[i / 2] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
    }
    vst1q_s8(y[b].q, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
    vst1q_s8(y[b].q + 16, vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])));
    y[b].d = neon_h2f(neon_f2h(amax / 127.0f));
    y[b].s = y[b].d * (float)vaddvq_s32(sumv);
  }
}

static void neon_quantize_q8k(const float *x, struct act_q8k *y, int64_t n) {
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float *xb = x + b * QK_K;
    float32x4_t amaxv = vdupq_n_f32(0.0f);
    for (int i = 0; i < QK_K; i += 4) amaxv = vmaxq_f32(amaxv, vabsq_f32(vld1q_f32(xb + i)));
    float amax = vmaxvq_f32(amaxv);
    if (amax == 0.0f) {
      memset(y[b].q, 0, sizeof y[b].q);
      memset(y[b].bsums, 0, sizeof y[b].bsums);
      y[b].d = 0.0f;
      continue;
    }
    /* the signed extreme: the first element reaching amax, as the scalar */
    float max = 0.0f;
    for (int i = 0; i < QK_K; i++)
      if (fabsf(xb[i]) == amax) {
        max = xb[i];
        break;
      }
    float iscale = -127.0f / max;
    const int32x4_t lim = vdupq_n_s32(127);
    for (int g = 0; g < 16; g++) {
      int32x4_t q[4];
      for (int k = 0; k < 4; k++)
        q[k] = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xb + 16 * g + 4 * k), iscale)), lim);
      int16x8_t h0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
      int16x8_t h1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
      int8x16_t q8 = vcombine_s8(vqmovn_s16(h0), vqmovn_s16(h1));
      vst1q_s8(y[b].q + 16 * g, q8);
      y[b].bsums[g] = vaddlvq_s8(q8);
    }
    y[b].d = 1.0f / iscale;
  }
}

/* ---- attention helpers over the F16 KV cache ---------------------------- */

static float neon_dot_f16_f32(const uint16_t *k, const float *q, int64_t n) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float16x8_t h0 = vreinterpretq_f16_u16(vld1q_u16(k + i));
    float16x8_t h1 = vreinterpretq_f16_u16(vld1q_u16(k + i + 8));
    a0 = vfmaq_f32(a0, vcvt_f32_f16(vget_low_f16(h0)), vld1q_f32(q + i));
    a1 = vfmaq_f32(a1, vcvt_high_f32_f16(h0), vld1q_f32(q + i + 4));
    a2 = vfmaq_f32(a2, vcvt_f32_f16(vget_low_f16(h1)), vld1q_f32(q + i + 8));
    a3 = vfmaq_f32(a3, vcvt_high_f32_f16(h1), vld1q_f32(q + i + 12));
  }
  for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, LOAD4_F16(k + i), vld1q_f32(q + i));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; i < n; i++) s += neon_h2f(k[i]) * q[i];
  return s;
}

static void neon_axpy_f16(float *y, float a, const uint16_t *v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(v + i));
    vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vcvt_f32_f16(vget_low_f16(h)), a));
    vst1q_f32(y + i + 4, vfmaq_n_f32(vld1q_f32(y + i + 4), vcvt_high_f32_f16(h), a));
  }
  for (; i < n; i++) y[i] = fmaf(a, neon_h2f(v[i]), y[i]);
}

static void neon_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(x + i)), vld1q_f32(x + i + 4));
    vst1q_u16(y + i, vreinterpretq_u16_f16(h));
  }
  for (; i < n; i++) y[i] = neon_f2h(x[i]);
}

static void neon_scale_f16(uint16_t *y, float a, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(y + i));
    float32x4_t lo = vmulq_n_f32(vcvt_f32_f16(vget_low_f16(h)), a);
    float32x4_t hi = vmulq_n_f32(vcvt_high_f32_f16(h), a);
    vst1q_u16(y + i, vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(lo), hi)));
  }
  for (; i < n; i++) y[i] = neon_f2h(neon_h2f(y[i]) * a);
}

static void neon_mad_f16(uint16_t *y, float a, const uint16_t *v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float16x8_t hy = vreinterpretq_f16_u16(vld1q_u16(y + i));
    float16x8_t hv = vreinterpretq_f16_u16(vld1q_u16(v + i));
    float32x4_t lo = vfmaq_n_f32(vcvt_f32_f16(vget_low_f16(hy)), vcvt_f32_f16(vget_low_f16(hv)), a);
    float32x4_t hi = vfmaq_n_f32(vcvt_high_f32_f16(hy), vcvt_high_f32_f16(hv), a);
    vst1q_u16(y + i, vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(lo), hi)));
  }
  for (; i < n; i++) y[i] = neon_f2h(fmaf(a, neon_h2f(v[i]), neon_h2f(y[i])));
}

void kernels_fill_neon(struct kernel_ops *ops, bool dotprod) {
  ops->path = KERNEL_NEON;
  ops->name = "neon";
  ops->gemm[GGML_TYPE_F32] = gemm_f32;
  ops->gemm[GGML_TYPE_F16] = gemm_f16;
  ops->gemm[GGML_TYPE_BF16] = gemm_bf16;
  if (dotprod) fill_int_dp(ops);
  else fill_int_base(ops);
  ops->quantize_q8 = neon_quantize_q8;
  ops->quantize_q8k = neon_quantize_q8k;
  ops->dot_f16_f32 = neon_dot_f16_f32;
  ops->axpy_f16 = neon_axpy_f16;
  ops->f32_to_f16 = neon_f32_to_f16;
  ops->scale_f16 = neon_scale_f16;
  ops->mad_f16 = neon_mad_f16;
}
#endif
