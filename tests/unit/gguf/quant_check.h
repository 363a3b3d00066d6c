/* quant_check.h: shared by test_quant_ref.c and test_quant_fixtures.c. Decodes
 * each element's level from the raw block bytes (an independent transcription of
 * llama.cpp's layouts, not a call into the code under test) and checks
 * dequantized values against the original data:
 *
 *   value = step * q - off, q an integer in [qmin, qmax] for the format.
 *
 * An element passes when |x - value| <= |step|/2 + slack, or when it was clamped
 * (q is the end level on the side x lies beyond). slack covers what the format
 * and the quantizers round: the legacy quantizers pick q with the float scale d
 * but store fp16(d) (and fp16(min)), so values move by up to (|q|+1)*|d - fp16(d)|
 * + |min - fp16(min)|; fp16 rounding is <= 2^-11 relative for normal halves and
 * <= 2^-25 absolute for subnormal ones. K-quants re-round with the stored scales,
 * so only float arithmetic (1e-6 relative) is allowed. */
#ifndef TM_TEST_QUANT_CHECK_H
#define TM_TEST_QUANT_CHECK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "util/fp16.h"

struct qlevel {
  float step, off;
  int q, qmin, qmax;
  double slack;
};

static inline uint16_t qc_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline float qc_h(const uint8_t *p) { return tm_fp16_to_fp32(qc_u16(p)); }
/* Bound on |v - fp16(v)| given the stored half h. */
static inline double qc_h_err(float h) { return fabs(h) * 0x1p-10 + 0x1p-24; }

static inline void qc_k4_scale_min(int j, const uint8_t *s, int *sc, int *m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

/* The level of element e of a run of blocks of the given type. Returns 0, or -1
 * for a type this checker does not know. */
static inline int qlevel_get(uint32_t type, const void *blocks, int64_t e, struct qlevel *lv) {
  const uint8_t *base = blocks;
  memset(lv, 0, sizeof *lv);
  switch (type) {
  case GGML_TYPE_Q8_0: {
    const uint8_t *b = base + (e / 32) * 34;
    const float d = qc_h(b);
    lv->step = d;
    lv->q = (int8_t)b[2 + e % 32];
    lv->qmin = -128, lv->qmax = 127;
    lv->slack = (fabs((double)lv->q) + 1) * qc_h_err(d);
    return 0;
  }
  case GGML_TYPE_Q4_0:
  case GGML_TYPE_Q4_1: {
    const int asym = type == GGML_TYPE_Q4_1;
    const uint8_t *b = base + (e / 32) * (asym ? 20 : 18);
    const uint8_t *qs = b + (asym ? 4 : 2);
    const int j = (int)(e % 32);
    const int nib = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
    const float d = qc_h(b);
    lv->step = d;
    if (asym) {
      const float m = qc_h(b + 2);
      lv->off = -m, lv->q = nib, lv->qmin = 0, lv->qmax = 15;
      lv->slack = 16 * qc_h_err(d) + qc_h_err(m);
    } else {
      lv->q = nib - 8, lv->qmin = -8, lv->qmax = 7;
      lv->slack = (fabs((double)lv->q) + 1) * qc_h_err(d);
    }
    return 0;
  }
  case GGML_TYPE_Q5_0:
  case GGML_TYPE_Q5_1: {
    const int asym = type == GGML_TYPE_Q5_1;
    const uint8_t *b = base + (e / 32) * (asym ? 24 : 22);
    const uint8_t *qh = b + (asym ? 4 : 2), *qs = qh + 4;
    const int j = (int)(e % 32);
    const uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
                       (uint32_t)qh[3] << 24;
    const int v = (j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4)) | (int)((h >> j) & 1) << 4;
    const float d = qc_h(b);
    lv->step = d;
    if (asym) {
      const float m = qc_h(b + 2);
      lv->off = -m, lv->q = v, lv->qmin = 0, lv->qmax = 31;
      lv->slack = 32 * qc_h_err(d) + qc_h_err(m);
    } else {
      lv->q = v - 16, lv->qmin = -16, lv->qmax = 15;
      lv->slack = (fabs((double)lv->q) + 1) * qc_h_err(d);
    }
    return 0;
  }
  case GGML_TYPE_Q4_K:
  case GGML_TYPE_Q5_K: {
    const int five = type == GGML_TYPE_Q5_K;
    const uint8_t *b = base + (e / 256) * (five ? 176 : 144);
    const int k = (int)(e % 256), sub = k / 32, chunk = k / 64, l = k % 32;
    const int hi_half = (k % 64) >= 32;
    const uint8_t *qs = b + 4 + 12 + (five ? 32 : 0);
    int v = hi_half ? (qs[32 * chunk + l] >> 4) : (qs[32 * chunk + l] & 15);
    if (five) v |= ((b[16 + l] >> (2 * chunk + hi_half)) & 1) << 4;
    int sc, m;
    qc_k4_scale_min(sub, b + 4, &sc, &m);
    lv->step = qc_h(b) * (float)sc;
    lv->off = qc_h(b + 2) * (float)m;
    lv->q = v, lv->qmin = 0, lv->qmax = five ? 31 : 15;
    return 0;
  }
  case GGML_TYPE_Q6_K: {
    const uint8_t *b = base + (e / 256) * 210;
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *scales = (const int8_t *)(b + 192);
    const int k = (int)(e % 256), half = k / 128, r = k % 128, quarter = r / 32, l = r % 32;
    const uint8_t lq = ql[64 * half + l + (quarter & 1) * 32];
    const int low = quarter < 2 ? (lq & 15) : (lq >> 4);
    const int high = (qh[32 * half + l] >> (2 * quarter)) & 3;
    lv->step = qc_h(b + 208) * (float)scales[k / 16];
    lv->q = (low | high << 4) - 32, lv->qmin = -32, lv->qmax = 31;
    return 0;
  }
  default:
    return -1;
  }
}

struct qstats {
  int64_t n, n_bad, n_clamped, n_zero_step, n_deq_mismatch, first_bad;
  double max_err, sum_err2, sum_x2;
  double max_clamp_steps; /* largest |x - value| / |step| among clamped elements */
};

/* Checks n elements: x the originals, blocks the quantized data, deq what the
 * code under test dequantized. zero_step_bound: the error allowed where the
 * stored step is 0 (a block or sub-block whose scale rounded to zero). */
static inline void qcheck(uint32_t type, const float *x, const void *blocks, const float *deq,
                          int64_t n, double zero_step_bound, struct qstats *st) {
  for (int64_t e = 0; e < n; e++) {
    struct qlevel lv;
    if (qlevel_get(type, blocks, e, &lv) != 0) {
      st->n_bad++;
      continue;
    }
    const double xv = x[e], dv = deq[e];
    const double err = fabs(xv - dv);
    const double fl = 1e-6 * (fabs(xv) + fabs(lv.off) + fabs((double)lv.step * lv.q));
    /* The dequantizer must produce the level the bytes encode. */
    const double level = (double)lv.step * lv.q - lv.off;
    if (fabs(level - dv) > 1e-6 * (fabs(level) + fabs(lv.off)) + 1e-30) st->n_deq_mismatch++;
    st->n++;
    st->sum_err2 += err * err;
    st->sum_x2 += xv * xv;
    if (err > st->max_err) st->max_err = err;
    int ok;
    if (lv.step == 0.0f) {
      st->n_zero_step++;
      /* one level left, -off: allow its own fp16 rounding */
      ok = err <= zero_step_bound + lv.slack + fl + qc_h_err(lv.off);
    } else {
      const double astep = fabs((double)lv.step);
      const double tol = lv.slack + fl;
      ok = err <= 0.5 * astep + tol;
      if (!ok) {
        const double u = (xv + lv.off) / lv.step; /* position in level units */
        const double tu = tol / astep;
        if ((lv.q == lv.qmax && u >= lv.qmax - 0.5 - tu) ||
            (lv.q == lv.qmin && u <= lv.qmin + 0.5 + tu)) {
          ok = 1;
          st->n_clamped++;
          if (err / astep > st->max_clamp_steps) st->max_clamp_steps = err / astep;
        }
      }
    }
    if (!ok && st->n_bad++ == 0) st->first_bad = e;
  }
}

static inline double qstats_rel_rms(const struct qstats *st) {
  return st->sum_x2 > 0 ? sqrt(st->sum_err2 / st->sum_x2) : sqrt(st->sum_err2);
}

/* Relative RMS error bound on normal(0, s) data, per type (derivation in
 * test_quant_ref.c's header comment; llama.cpp's quantizers meet it too). */
static inline double qbound_rel_rms(uint32_t t) {
  switch (t) {
  case GGML_TYPE_Q8_0: return 0.0065;
  case GGML_TYPE_Q4_0: return 0.105;
  case GGML_TYPE_Q5_0: return 0.053;
  case GGML_TYPE_Q4_1: return 0.095;
  case GGML_TYPE_Q5_1: return 0.047;
  case GGML_TYPE_Q4_K: return 0.090;
  case GGML_TYPE_Q5_K: return 0.045;
  case GGML_TYPE_Q6_K: return 0.022;
  default: return 0;
  }
}

/* Largest clamp error in steps the type's quantizer can produce: the legacy
 * symmetric types clamp x*id in (7.5, 8] (or (15.5, 16]) to the top level, one
 * step at most; the asymmetric ones cover [min, max] exactly. K-quants lose range
 * to 6-bit scale rounding (at worst (nmax)/(2*sc) steps for sub-scale sc >= 1);
 * their test only requires nearest-level placement. */
static inline double qbound_clamp_steps(uint32_t t) {
  switch (t) {
  case GGML_TYPE_Q8_0: case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: return 1.0 + 1e-3;
  case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: return 0.5 + 1e-3;
  default: return 1e9;
  }
}

#endif
