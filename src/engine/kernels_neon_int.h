/* kernels_neon_int.h (private to kernels_neon.c, which includes it twice):
 * the NEON integer gemm kernels, written once and instantiated as the sdot
 * variant (NEON_DOTPROD 1, names suffixed _dp, compiled for
 * armv8.2-a+dotprod) and the fallback (NEON_DOTPROD 0, suffix _base, baseline
 * ARMv8-A). No include guard on purpose. The includer defines NEON_SFX,
 * NEON_DOTPROD and NEON_ATTR.
 *
 * Block dots are exact int32, as the scalar reference's:
 *  - Q4_0 / Q5_0 weights are made signed (nibble - 8, 5-bit - 16) before the
 *    dot, so no float offset term is needed; Q4_1 / Q5_1 stay unsigned
 *    (0..15 / 0..31) and add m_w s_a per block, as the scalar does.
 *  - Q4_K / Q5_K: unsigned sub-block dots times the 6-bit scale, minus the
 *    mins times the activation's bsums (pairs of 16-sums per 32-sub-block).
 *  - Q6_K: weights made signed (q - 32), so the dot needs no bsums term.
 * The fallback sums int8 x int8 products in int16 lanes before widening:
 * "small" dots put four products in a lane (weights |w| <= 32, activations
 * |a| <= 127: 4 x 32 x 127 = 16256 fits), Q8_0 (|w| <= 128) two (2 x 128 x
 * 127 = 32512 fits; the quantizers never produce -128 activations). */

#define NEON_CAT2(a, b) a##b
#define NEON_CAT(a, b) NEON_CAT2(a, b)
#define NF(name) NEON_CAT(name, NEON_SFX)
#define NEON_INLINE NEON_ATTR __attribute__((always_inline)) static inline

/* acc + dot of 16 int8 pairs, into 4 int32 lanes (which lane holds which
 * partial sum differs between the variants; only the lane total matters). */
NEON_INLINE int32x4_t NF(dot16)(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if NEON_DOTPROD
  return vdotq_s32(acc, a, b);
#else
  int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
  p = vmlal_high_s8(p, a, b);
  return vpadalq_s16(acc, p);
#endif
}

/* acc + dot of 32 pairs with |w| <= 32 (see the header comment). */
NEON_INLINE int32x4_t NF(dot32s)(int32x4_t acc, int8x16_t w0, int8x16_t w1, const int8_t *a) {
  int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
#if NEON_DOTPROD
  return vdotq_s32(vdotq_s32(acc, w0, a0), w1, a1);
#else
  int16x8_t p = vmull_s8(vget_low_s8(w0), vget_low_s8(a0));
  p = vmlal_high_s8(p, w0, a0);
  p = vmlal_s8(p, vget_low_s8(w1), vget_low_s8(a1));
  p = vmlal_high_s8(p, w1, a1);
  return vpadalq_s16(acc, p);
#endif
}

/* 32 bits (little-endian u32 at qh) -> two vectors of bytes, byte i = 0x10
 * where bit i is set: the fifth bit of Q5_0 / Q5_1 weights. */
NEON_INLINE void NF(q5_high)(const uint8_t *qh, uint8x16_t *h0, uint8x16_t *h1) {
  uint32_t bits;
  memcpy(&bits, qh, 4);
  static const uint8_t idx0[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint8_t idx1[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  uint8x16_t v = vreinterpretq_u8_u32(vdupq_n_u32(bits));
  uint8x16_t m = vld1q_u8(bit), x10 = vdupq_n_u8(0x10);
  *h0 = vandq_u8(vtstq_u8(vqtbl1q_u8(v, vld1q_u8(idx0)), m), x10);
  *h1 = vandq_u8(vtstq_u8(vqtbl1q_u8(v, vld1q_u8(idx1)), m), x10);
}

/* ---- 32-element blocks -------------------------------------------------- */

NEON_INLINE void NF(unpack_q4_0)(const struct block_q4_0 *b, int8x16_t *w0, int8x16_t *w1) {
  uint8x16_t raw = vld1q_u8(b->qs);
  int8x16_t off = vdupq_n_s8(8);
  *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15))), off);
  *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), off);
}
NEON_INLINE void NF(unpack_q4_1)(const struct block_q4_1 *b, int8x16_t *w0, int8x16_t *w1) {
  uint8x16_t raw = vld1q_u8(b->qs);
  *w0 = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15)));
  *w1 = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
}
NEON_INLINE void NF(unpack_q5_0)(const struct block_q5_0 *b, int8x16_t *w0, int8x16_t *w1) {
  uint8x16_t raw = vld1q_u8(b->qs), h0, h1;
  NF(q5_high)(b->qh, &h0, &h1);
  int8x16_t off = vdupq_n_s8(16);
  *w0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(raw, vdupq_n_u8(15)), h0)), off);
  *w1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(raw, 4), h1)), off);
}
NEON_INLINE void NF(unpack_q5_1)(const struct block_q5_1 *b, int8x16_t *w0, int8x16_t *w1) {
  uint8x16_t raw = vld1q_u8(b->qs), h0, h1;
  NF(q5_high)(b->qh, &h0, &h1);
  *w0 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(raw, vdupq_n_u8(15)), h0));
  *w1 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(raw, 4), h1));
}

/* One weight block against nc columns: acc[c] += float(int dot lanes) *
 * (d_w d_a); corr[c] += m_w s_a for the offset types. Even and odd blocks
 * go to separate accumulator sets so one-column decode is not bound by the
 * FMA latency chain. */
#define NEON_BLOCK32_TILE(tname, WBLOCK, UNPACK, HAS_M)                                     \
  NEON_INLINE void NF(tname##_step)(const WBLOCK *wb, const uint8_t *a, size_t as, int64_t b, \
                                   const int nc, float32x4_t *acc, float *corr) {           \
    int8x16_t w0, w1;                                                                       \
    NF(UNPACK)(wb, &w0, &w1);                                                                \
    float dw = neon_h2f(wb->d);                                                      \
    float mw = HAS_M ? neon_h2f(((const uint16_t *)wb)[1]) : 0.0f;                   \
    for (int c = 0; c < nc; c++) {                                                          \
      const struct act_q8 *x = (const struct act_q8 *)(a + c * as) + b;                     \
      int32x4_t p = NF(dot32s)(vdupq_n_s32(0), w0, w1, x->q);                                \
      acc[c] = vfmaq_n_f32(acc[c], vcvtq_f32_s32(p), dw * x->d);                            \
      if (HAS_M) corr[c] += mw * x->s;                                                      \
    }                                                                                       \
  }                                                                                         \
  NEON_INLINE void NF(tname)(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,      \
                            const int nc, float *o, int64_t os) {                           \
    const WBLOCK *w = (const WBLOCK *)wr;                                                   \
    const int64_t nb = n / 32;                                                              \
    float32x4_t acc0[4], acc1[4];                                                           \
    float corr[4] = {0};                                                                    \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = vdupq_n_f32(0.0f);                     \
    int64_t b = 0;                                                                          \
    for (; b + 1 < nb; b += 2) {                                                            \
      NF(tname##_step)(&w[b], a, as, b, nc, acc0, corr);                                     \
      NF(tname##_step)(&w[b + 1], a, as, b + 1, nc, acc1, corr);                             \
    }                                                                                       \
    if (b < nb) NF(tname##_step)(&w[b], a, as, b, nc, acc0, corr);                           \
    for (int c = 0; c < nc; c++) o[c * os] = vaddvq_f32(vaddq_f32(acc0[c], acc1[c])) + corr[c]; \
  }

NEON_BLOCK32_TILE(tile_q4_0, struct block_q4_0, unpack_q4_0, 0)
NEON_BLOCK32_TILE(tile_q4_1, struct block_q4_1, unpack_q4_1, 1)
NEON_BLOCK32_TILE(tile_q5_0, struct block_q5_0, unpack_q5_0, 0)
NEON_BLOCK32_TILE(tile_q5_1, struct block_q5_1, unpack_q5_1, 1)

/* Q8_0: signed weights up to |128|, so the fallback widens every two
 * products (see the header comment). */
NEON_INLINE void NF(tile_q8_0_step)(const struct block_q8_0 *wb, const uint8_t *a, size_t as,
                                   int64_t b, const int nc, float32x4_t *acc) {
  int8x16_t w0 = vld1q_s8(wb->qs), w1 = vld1q_s8(wb->qs + 16);
  float dw = neon_h2f(wb->d);
  for (int c = 0; c < nc; c++) {
    const struct act_q8 *x = (const struct act_q8 *)(a + c * as) + b;
    int32x4_t p = NF(dot16)(vdupq_n_s32(0), w0, vld1q_s8(x->q));
    p = NF(dot16)(p, w1, vld1q_s8(x->q + 16));
    acc[c] = vfmaq_n_f32(acc[c], vcvtq_f32_s32(p), dw * x->d);
  }
}

NEON_INLINE void NF(tile_q8_0)(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                              const int nc, float *o, int64_t os) {
  const struct block_q8_0 *w = (const struct block_q8_0 *)wr;
  const int64_t nb = n / 32;
  float32x4_t acc0[4], acc1[4];
  for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = vdupq_n_f32(0.0f);
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    NF(tile_q8_0_step)(&w[b], a, as, b, nc, acc0);
    NF(tile_q8_0_step)(&w[b + 1], a, as, b + 1, nc, acc1);
  }
  if (b < nb) NF(tile_q8_0_step)(&w[b], a, as, b, nc, acc0);
  for (int c = 0; c < nc; c++) o[c * os] = vaddvq_f32(vaddq_f32(acc0[c], acc1[c]));
}

/* ---- K-quants ----------------------------------------------------------- */

/* Q4_K / Q5_K (qh NULL for Q4_K): sub-block j of 32 is the low (j even) or
 * high (j odd) nibbles of qs[32 (j/2) ..], plus bit j of qh[l] as 0x10. The
 * weights of a block are unpacked once and used for every column. */
NEON_INLINE void NF(tile_k45)(int64_t n, const uint8_t *wr, size_t block_bytes, int has_qh,
                             const uint8_t *a, size_t as, const int nc, float *o, int64_t os) {
  const int64_t nb = n / QK_K;
  const uint8x16_t m4 = vdupq_n_u8(15), x10 = vdupq_n_u8(0x10);
  float sum[4] = {0};
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t *blk = wr + (size_t)b * block_bytes;
    /* both layouts start d, dmin, scales[12]; Q5_K then qh[32], then qs */
    const struct block_q4_k *hdr = (const struct block_q4_k *)blk;
    const uint8_t *qh = has_qh ? ((const struct block_q5_k *)blk)->qh : NULL;
    const uint8_t *qs = has_qh ? ((const struct block_q5_k *)blk)->qs : hdr->qs;
    float d = neon_h2f(hdr->d), dmin = neon_h2f(hdr->dmin);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) quant_k4_scale_min(j, hdr->scales, &sc[j], &mn[j]);
    int16x8_t mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
    int8x16_t q[8][2];
    uint8x16_t h[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
    if (qh) {
      h[0] = vld1q_u8(qh);
      h[1] = vld1q_u8(qh + 16);
    }
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 2; k++) {
        uint8x16_t raw = vld1q_u8(qs + 32 * j + 16 * k);
        uint8x16_t lo = vandq_u8(raw, m4), hi = vshrq_n_u8(raw, 4);
        if (qh) {
          lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h[k], vdupq_n_u8((uint8_t)(1u << (2 * j)))), x10));
          hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h[k], vdupq_n_u8((uint8_t)(2u << (2 * j)))), x10));
        }
        q[2 * j][k] = vreinterpretq_s8_u8(lo);
        q[2 * j + 1][k] = vreinterpretq_s8_u8(hi);
      }
    for (int c = 0; c < nc; c++) {
      const struct act_q8k *x = (const struct act_q8k *)(a + c * as) + b;
      int32x4_t sumi = vdupq_n_s32(0);
      for (int j = 0; j < 8; j++)
        sumi = vmlaq_n_s32(sumi, NF(dot32s)(vdupq_n_s32(0), q[j][0], q[j][1], x->q + 32 * j),
                           sc[j]);
      /* sub-block sums: pairwise adds of the 16-sums (|2 x 16 x 127| fits i16) */
      int16x8_t bs = vpaddq_s16(vld1q_s16(x->bsums), vld1q_s16(x->bsums + 8));
      int32x4_t pm = vmull_s16(vget_low_s16(bs), vget_low_s16(mins));
      pm = vmlal_high_s16(pm, bs, mins);
      sum[c] += d * x->d * (float)vaddvq_s32(sumi) - dmin * x->d * (float)vaddvq_s32(pm);
    }
  }
  for (int c = 0; c < nc; c++) o[c * os] = sum[c];
}

NEON_INLINE void NF(tile_q4_k)(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                              const int nc, float *o, int64_t os) {
  NF(tile_k45)(n, wr, sizeof(struct block_q4_k), 0, a, as, nc, o, os);
}
NEON_INLINE void NF(tile_q5_k)(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                              const int nc, float *o, int64_t os) {
  NF(tile_k45)(n, wr, sizeof(struct block_q5_k), 1, a, as, nc, o, os);
}

/* Q6_K: for each half h, 16-element chunk k (l = 16k .. 16k+15), the four
 * quarters (ql low / ql+32 low / ql high / ql+32 high nibbles with qh bit
 * pairs 0-1 / 2-3 / 4-5 / 6-7) are the 16-groups 8h + k + {0, 2, 4, 6}. */
NEON_INLINE void NF(tile_q6_k)(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as,
                              const int nc, float *o, int64_t os) {
  const struct block_q6_k *w = (const struct block_q6_k *)wr;
  const int64_t nb = n / QK_K;
  const uint8x16_t m4 = vdupq_n_u8(15), m30 = vdupq_n_u8(0x30);
  const int8x16_t off = vdupq_n_s8(32);
  float sum[4] = {0};
  for (int64_t b = 0; b < nb; b++) {
    int8x16_t q[16]; /* q[g]: 16-group g, signed (q - 32) */
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 2; k++) {
        uint8x16_t la = vld1q_u8(w[b].ql + 64 * h + 16 * k);
        uint8x16_t lb = vld1q_u8(w[b].ql + 64 * h + 32 + 16 * k);
        uint8x16_t hb = vld1q_u8(w[b].qh + 32 * h + 16 * k);
        uint8x16_t q1 = vorrq_u8(vandq_u8(la, m4), vandq_u8(vshlq_n_u8(hb, 4), m30));
        uint8x16_t q2 = vorrq_u8(vandq_u8(lb, m4), vandq_u8(vshlq_n_u8(hb, 2), m30));
        uint8x16_t q3 = vorrq_u8(vshrq_n_u8(la, 4), vandq_u8(hb, m30));
        uint8x16_t q4 = vorrq_u8(vshrq_n_u8(lb, 4), vandq_u8(vshrq_n_u8(hb, 2), m30));
        q[8 * h + k] = vsubq_s8(vreinterpretq_s8_u8(q1), off);
        q[8 * h + k + 2] = vsubq_s8(vreinterpretq_s8_u8(q2), off);
        q[8 * h + k + 4] = vsubq_s8(vreinterpretq_s8_u8(q3), off);
        q[8 * h + k + 6] = vsubq_s8(vreinterpretq_s8_u8(q4), off);
      }
    float d = neon_h2f(w[b].d);
    for (int c = 0; c < nc; c++) {
      const struct act_q8k *x = (const struct act_q8k *)(a + c * as) + b;
      int32x4_t sumi = vdupq_n_s32(0);
      for (int g = 0; g < 16; g++)
        sumi = vmlaq_n_s32(sumi, NF(dot16)(vdupq_n_s32(0), q[g], vld1q_s8(x->q + 16 * g)),
                           w[b].scales[g]);
      sum[c] += d * x->d * (float)vaddvq_s32(sumi);
    }
  }
  for (int c = 0; c < nc; c++) o[c * os] = sum[c];
}

DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q4_0), NF(tile_q4_0))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q4_1), NF(tile_q4_1))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q5_0), NF(tile_q5_0))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q5_1), NF(tile_q5_1))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q8_0), NF(tile_q8_0))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q4_k), NF(tile_q4_k))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q5_k), NF(tile_q5_k))
DEFINE_NEON_GEMM(NEON_ATTR, NF(gemm_q6_k), NF(tile_q6_k))

static void NF(fill_int)(struct kernel_ops *ops) {
  ops->gemm[GGML_TYPE_Q4_0] = NF(gemm_q4_0);
  ops->gemm[GGML_TYPE_Q4_1] = NF(gemm_q4_1);
  ops->gemm[GGML_TYPE_Q5_0] = NF(gemm_q5_0);
  ops->gemm[GGML_TYPE_Q5_1] = NF(gemm_q5_1);
  ops->gemm[GGML_TYPE_Q8_0] = NF(gemm_q8_0);
  ops->gemm[GGML_TYPE_Q4_K] = NF(gemm_q4_k);
  ops->gemm[GGML_TYPE_Q5_K] = NF(gemm_q5_k);
  ops->gemm[GGML_TYPE_Q6_K] = NF(gemm_q6_k);
}

#undef NEON_INLINE
#undef NF
