/* kernels_scalar: the reference implementation of every kernel in kernels.h,
 * plain portable C. Every SIMD path is tested against these functions, and
 * the scalar path is what a build without SIMD runs.
 *
 * Quantized weights use the integer-dot formulation the SIMD paths use, so a
 * SIMD kernel differs from this one only in the float summation order:
 *   Q4_0: sum_b d_w d_a sum_i (q_w_i - 8) q_a_i          (Q5_0: - 16)
 *   Q8_0: sum_b d_w d_a sum_i q_w_i q_a_i
 *   Q4_1/Q5_1: sum_b d_w d_a sum_i q_w_i q_a_i + m_w s_a  (s_a = d_a sum q_a)
 *   Q4_K/Q5_K: d d_a sum_j sc_j dot_j - dmin d_a sum_j m_j (bsums of sub-block j)
 *   Q6_K: d d_a sum_k sc_k (dot_k(q_w unsigned, q_a) - 32 bsums_k)
 * Block layouts are the gguf module's (gguf/quant_ref.h), bit-exact with
 * llama.cpp. */
#include <math.h>
#include <string.h>

#include "engine/kernels_internal.h"
#include "gguf/quant_ref.h"
#include "util/fp16.h"

/* ---- activation quantizers ---------------------------------------------- */

/* Activation quantizers follow what llama.cpp's CPU backend does, so the
 * engine's logits are comparable with llama.cpp's to the rounding (issue 4
 * asks for 0.15 nats on quantized files, and random-weight models magnify any
 * rounding difference):
 *   act_q8  (llama.cpp block_q8_0 / q8_1): q = nearest-even(x * 127 / amax),
 *           the scale kept as fp16(amax / 127) and used in that precision.
 *   act_q8k (block_q8_K): max = the signed value of largest magnitude,
 *           iscale = -127 / max, q = min(127, nearest-even(iscale * x)),
 *           d = 1 / iscale (f32; may be negative, the q flip with it).
 * nearbyintf under the default rounding mode is round-half-even, what the SIMD
 * paths' cvtps does and what llama.cpp's nearest_int does, so every path gives
 * the same bytes. */
static float quantize_block_q8(const float *x, int8_t *q, int len, int32_t *sum_out) {
  float amax = 0.0f;
  for (int i = 0; i < len; i++) {
    float v = fabsf(x[i]);
    if (v > amax) amax = v;
  }
  float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  int32_t sum = 0;
  for (int i = 0; i < len; i++) {
    float v = nearbyintf(x[i] * id);
    if (v > 127.0f) v = 127.0f;
    if (v < -127.0f) v = -127.0f;
    q[i] = (int8_t)v;
    sum += q[i];
  }
  *sum_out = sum;
  return tm_fp16_to_fp32(tm_fp32_to_fp16(amax / 127.0f));
}

static float quantize_block_q8k(const float *x, int8_t *q, int len) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < len; i++) {
    float v = fabsf(x[i]);
    if (v > amax) {
      amax = v;
      max = x[i];
    }
  }
  if (amax == 0.0f) {
    memset(q, 0, (size_t)len);
    return 0.0f;
  }
  float iscale = -127.0f / max;
  for (int i = 0; i < len; i++) {
    float v = nearbyintf(iscale * x[i]);
    q[i] = (int8_t)(v > 127.0f ? 127.0f : v);
  }
  return 1.0f / iscale;
}

void kernels_scalar_quantize_q8(const float *x, struct act_q8 *y, int64_t n) {
  for (int64_t b = 0; b < n / 32; b++) {
    int32_t sum;
    y[b].d = quantize_block_q8(x + b * 32, y[b].q, 32, &sum);
    y[b].s = y[b].d * (float)sum;
  }
}

void kernels_scalar_quantize_q8k(const float *x, struct act_q8k *y, int64_t n) {
  for (int64_t b = 0; b < n / QK_K; b++) {
    y[b].d = quantize_block_q8k(x + b * QK_K, y[b].q, QK_K);
    for (int g = 0; g < 16; g++) {
      int s = 0;
      for (int i = 0; i < 16; i++) s += y[b].q[g * 16 + i];
      y[b].bsums[g] = (int16_t)s;
    }
  }
}

/* ---- row dot products: one weight row against one activation row -------- */

static float dot_f32(int64_t n, const void *wv, const void *av) {
  const float *w = wv, *a = av;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i++) sum += w[i] * a[i];
  return sum;
}

static float dot_f16(int64_t n, const void *wv, const void *av) {
  const uint16_t *w = wv;
  const float *a = av;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i++) sum += tm_fp16_to_fp32(w[i]) * a[i];
  return sum;
}

static float dot_bf16(int64_t n, const void *wv, const void *av) {
  const uint16_t *w = wv;
  const float *a = av;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i++) sum += tm_bf16_to_fp32(w[i]) * a[i];
  return sum;
}

static float dot_q4_0(int64_t n, const void *wv, const void *av) {
  const struct block_q4_0 *w = wv;
  const struct act_q8 *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    int32_t sumi = 0;
    for (int j = 0; j < 16; j++) {
      sumi += ((w[b].qs[j] & 15) - 8) * a[b].q[j];
      sumi += ((w[b].qs[j] >> 4) - 8) * a[b].q[j + 16];
    }
    sum += (float)sumi * (tm_fp16_to_fp32(w[b].d) * a[b].d);
  }
  return sum;
}

static float dot_q4_1(int64_t n, const void *wv, const void *av) {
  const struct block_q4_1 *w = wv;
  const struct act_q8 *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    int32_t sumi = 0;
    for (int j = 0; j < 16; j++) {
      sumi += (w[b].qs[j] & 15) * a[b].q[j];
      sumi += (w[b].qs[j] >> 4) * a[b].q[j + 16];
    }
    sum += (float)sumi * (tm_fp16_to_fp32(w[b].d) * a[b].d) + tm_fp16_to_fp32(w[b].m) * a[b].s;
  }
  return sum;
}

static inline uint32_t load_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float dot_q5_0(int64_t n, const void *wv, const void *av) {
  const struct block_q5_0 *w = wv;
  const struct act_q8 *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    uint32_t qh = load_u32le(w[b].qh);
    int32_t sumi = 0;
    for (int j = 0; j < 16; j++) {
      int lo = (w[b].qs[j] & 15) | (int)((qh >> j) & 1) << 4;
      int hi = (w[b].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
      sumi += (lo - 16) * a[b].q[j] + (hi - 16) * a[b].q[j + 16];
    }
    sum += (float)sumi * (tm_fp16_to_fp32(w[b].d) * a[b].d);
  }
  return sum;
}

static float dot_q5_1(int64_t n, const void *wv, const void *av) {
  const struct block_q5_1 *w = wv;
  const struct act_q8 *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    uint32_t qh = load_u32le(w[b].qh);
    int32_t sumi = 0;
    for (int j = 0; j < 16; j++) {
      int lo = (w[b].qs[j] & 15) | (int)((qh >> j) & 1) << 4;
      int hi = (w[b].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
      sumi += lo * a[b].q[j] + hi * a[b].q[j + 16];
    }
    sum += (float)sumi * (tm_fp16_to_fp32(w[b].d) * a[b].d) + tm_fp16_to_fp32(w[b].m) * a[b].s;
  }
  return sum;
}

static float dot_q8_0(int64_t n, const void *wv, const void *av) {
  const struct block_q8_0 *w = wv;
  const struct act_q8 *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    int32_t sumi = 0;
    for (int j = 0; j < 32; j++) sumi += w[b].qs[j] * a[b].q[j];
    sum += (float)sumi * (tm_fp16_to_fp32(w[b].d) * a[b].d);
  }
  return sum;
}

/* Q4_K and Q5_K share the scale/min arithmetic; qh is NULL for Q4_K. */
static float dot_k45_block(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                           float d, float dmin, const struct act_q8k *a) {
  int32_t sum_sc = 0, sum_min = 0;
  for (int j = 0; j < 8; j++) {
    uint8_t sc, m;
    quant_k4_scale_min(j, scales, &sc, &m);
    const uint8_t *q = qs + 32 * (j / 2);
    int shift = (j & 1) ? 4 : 0;
    int32_t dot = 0;
    for (int l = 0; l < 32; l++) {
      int v = (q[l] >> shift) & 15;
      if (qh) v |= ((qh[l] >> j) & 1) << 4;
      dot += v * a->q[32 * j + l];
    }
    sum_sc += sc * dot;
    sum_min += m * (a->bsums[2 * j] + a->bsums[2 * j + 1]);
  }
  return d * a->d * (float)sum_sc - dmin * a->d * (float)sum_min;
}

static float dot_q4_k(int64_t n, const void *wv, const void *av) {
  const struct block_q4_k *w = wv;
  const struct act_q8k *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / QK_K; b++)
    sum += dot_k45_block(w[b].scales, w[b].qs, NULL, tm_fp16_to_fp32(w[b].d),
                         tm_fp16_to_fp32(w[b].dmin), &a[b]);
  return sum;
}

static float dot_q5_k(int64_t n, const void *wv, const void *av) {
  const struct block_q5_k *w = wv;
  const struct act_q8k *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / QK_K; b++)
    sum += dot_k45_block(w[b].scales, w[b].qs, w[b].qh, tm_fp16_to_fp32(w[b].d),
                         tm_fp16_to_fp32(w[b].dmin), &a[b]);
  return sum;
}

static float dot_q6_k(int64_t n, const void *wv, const void *av) {
  const struct block_q6_k *w = wv;
  const struct act_q8k *a = av;
  float sum = 0.0f;
  for (int64_t b = 0; b < n / QK_K; b++) {
    int32_t dots[16] = {0};
    for (int h = 0; h < 2; h++) {
      const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
      const int8_t *q = a[b].q + 128 * h;
      for (int l = 0; l < 32; l++) {
        int q1 = (ql[l] & 15) | ((qh[l] >> 0) & 3) << 4;
        int q2 = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4;
        int q3 = (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4;
        int q4 = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4;
        /* element e belongs to 16-group e / 16 */
        dots[8 * h + (l) / 16] += q1 * q[l];
        dots[8 * h + (l + 32) / 16] += q2 * q[l + 32];
        dots[8 * h + (l + 64) / 16] += q3 * q[l + 64];
        dots[8 * h + (l + 96) / 16] += q4 * q[l + 96];
      }
    }
    int32_t sumi = 0;
    for (int k = 0; k < 16; k++) sumi += w[b].scales[k] * (dots[k] - 32 * a[b].bsums[k]);
    sum += tm_fp16_to_fp32(w[b].d) * a[b].d * (float)sumi;
  }
  return sum;
}

/* ---- gemm drivers ------------------------------------------------------- */

#define DEFINE_GEMM(name, dotfn)                                                         \
  static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,    \
                   const void *a, size_t a_stride, int64_t ncols, float *out,            \
                   int64_t out_stride) {                                                 \
    for (int64_t r = r0; r < r1; r++) {                                                  \
      const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_stride;                     \
      for (int64_t c = 0; c < ncols; c++)                                                \
        out[c * out_stride + r] = dotfn(n, wr, (const uint8_t *)a + (size_t)c * a_stride); \
    }                                                                                    \
  }

DEFINE_GEMM(gemm_f32, dot_f32)
DEFINE_GEMM(gemm_f16, dot_f16)
DEFINE_GEMM(gemm_bf16, dot_bf16)
DEFINE_GEMM(gemm_q4_0, dot_q4_0)
DEFINE_GEMM(gemm_q4_1, dot_q4_1)
DEFINE_GEMM(gemm_q5_0, dot_q5_0)
DEFINE_GEMM(gemm_q5_1, dot_q5_1)
DEFINE_GEMM(gemm_q8_0, dot_q8_0)
DEFINE_GEMM(gemm_q4_k, dot_q4_k)
DEFINE_GEMM(gemm_q5_k, dot_q5_k)
DEFINE_GEMM(gemm_q6_k, dot_q6_k)

/* ---- f16 helpers and get_row -------------------------------------------- */

static float scalar_dot_f16_f32(const uint16_t *k, const float *q, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i++) sum += tm_fp16_to_fp32(k[i]) * q[i];
  return sum;
}

static void scalar_axpy_f16(float *y, float a, const uint16_t *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] += a * tm_fp16_to_fp32(v[i]);
}

static void scalar_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = tm_fp32_to_fp16(x[i]);
}

static void scalar_scale_f16(uint16_t *y, float a, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = tm_fp32_to_fp16(tm_fp16_to_fp32(y[i]) * a);
}

static void scalar_mad_f16(uint16_t *y, float a, const uint16_t *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = tm_fp32_to_fp16(tm_fp16_to_fp32(y[i]) + a * tm_fp16_to_fp32(v[i]));
}

/* Any type with a reference dequantizer; -1 for others or a bad n. */
static int scalar_get_row(uint32_t type, const void *row, float *out, int64_t n) {
  if (type == GGML_TYPE_F32) {
    if (n < 0) return -1;
    memcpy(out, row, (size_t)n * sizeof(float));
    return 0;
  }
  return ggml_dequantize_ref(type, row, out, n);
}

void kernels_fill_scalar(struct kernel_ops *ops) {
  memset(ops, 0, sizeof *ops);
  ops->path = KERNEL_SCALAR;
  ops->name = "scalar";
  ops->gemm[GGML_TYPE_F32] = gemm_f32;
  ops->gemm[GGML_TYPE_F16] = gemm_f16;
  ops->gemm[GGML_TYPE_BF16] = gemm_bf16;
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0;
  ops->gemm[GGML_TYPE_Q4_1] = gemm_q4_1;
  ops->gemm[GGML_TYPE_Q5_0] = gemm_q5_0;
  ops->gemm[GGML_TYPE_Q5_1] = gemm_q5_1;
  ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0;
  ops->gemm[GGML_TYPE_Q4_K] = gemm_q4_k;
  ops->gemm[GGML_TYPE_Q5_K] = gemm_q5_k;
  ops->gemm[GGML_TYPE_Q6_K] = gemm_q6_k;
  ops->quantize_q8 = kernels_scalar_quantize_q8;
  ops->quantize_q8k = kernels_scalar_quantize_q8k;
  ops->dot_f16_f32 = scalar_dot_f16_f32;
  ops->axpy_f16 = scalar_axpy_f16;
  ops->f32_to_f16 = scalar_f32_to_f16;
  ops->scale_f16 = scalar_scale_f16;
  ops->mad_f16 = scalar_mad_f16;
  ops->get_row = scalar_get_row;
  kernels_fill_rowops(ops);
}
