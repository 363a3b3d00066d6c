/* test_quant_fast: synth's one-pass K-quant quantizers (synth_quant_fast.c).
 *
 * For normal rows and edge cases (zeros, constants, outliers, negative-only,
 * positive-only, tiny and large magnitudes, sub-blocks of very different
 * ranges) the blocks must be VALID (the reference dequantizer reads them; the
 * header fields are finite, Q4_K/Q5_K super-scales non-negative) and every
 * element must sit on its nearest level under the STORED scales:
 *
 *   |x - y| <= |step|/2 + slack, slack = 1e-6 * (|x| + |off| + nmax * |step|)
 *
 * with step/off decoded here from the raw bytes (an independent transcription
 * of the layouts in src/gguf/quant_ref.h, not a call into the code under test)
 * and y from ggml_dequantize_ref. No clamped-end exception: the quantizers round
 * scales up so the stored range covers each sub-block (a Q6_K sub-scale capped at
 * +127 leaves its end <= 0.26 step past the end level: still inside the bound).
 * Slack: float arithmetic only (a few ulps of the magnitudes involved).
 *
 * RMS on normal data: a min/max quantizer's step is range/nmax and its error is
 * uniform over +-step/2, so RMS = step/sqrt(12) per sub-block; ours may exceed
 * that by the upward rounding of the scales (at most one super-scale unit, d <=
 * max step/63, relative cost ~1/63 .. 1/40 on normal data) and by the offset's
 * round-up. The check allows 10% over that ideal, and 15% over the gguf
 * reference quantizer (least-squares fit) on the same data. */
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "synth/synth_internal.h"
#include "tm_test.h"
#include "util/fp16.h"
#include "util/rng.h"

enum { NB_MAX = 64, N_MAX = 256 * NB_MAX };

struct kq {
  const char *name;
  uint32_t type;
  size_t block_bytes;
  int nmax;     /* levels 0..nmax (Q6_K: stored q - 32, -32..31) */
  int sub;      /* elements per sub-block */
  void (*fast)(const float *, uint8_t *, uint64_t);
};

static const struct kq KQ[] = {
    {"Q4_K", GGML_TYPE_Q4_K, 144, 15, 32, synth_quantize_q4_k_fast},
    {"Q5_K", GGML_TYPE_Q5_K, 176, 31, 32, synth_quantize_q5_k_fast},
    {"Q6_K", GGML_TYPE_Q6_K, 210, 63, 16, synth_quantize_q6_k_fast},
};

static uint16_t u16le(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Sub-block j's stored step and offset (y = step * q - off) of one block. */
static void decode_sub(const struct kq *k, const uint8_t *blk, int j, double *step, double *off) {
  if (k->type == GGML_TYPE_Q6_K) {
    const double d = tm_fp16_to_fp32(u16le(blk + 208));
    const int sc = (int8_t)blk[192 + j];
    *step = (double)(float)(d * sc); /* the dequantizer rounds d * sc to float */
    *off = 0;
    return;
  }
  const uint8_t *s = blk + 4;
  int sc, m;
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
  *step = (double)(float)(tm_fp16_to_fp32(u16le(blk)) * (float)sc);
  *off = (double)(float)(tm_fp16_to_fp32(u16le(blk + 2)) * (float)m);
}

/* Quantizes x[0..n) with k, checks validity and the per-element bound; returns
 * the relative RMS error (0 for all-zero x) and the ideal min/max RMS in *ideal. */
static double check_rows(const struct kq *k, const char *label, const float *x, int n,
                         double *ideal) {
  static uint8_t q[NB_MAX * 210 + 1], q2[NB_MAX * 210 + 1]; /* + a guard byte */
  static float y[N_MAX];
  const int nb = n / 256;
  memset(q, 0xA5, sizeof q);
  memset(q2, 0x5A, sizeof q2);
  k->fast(x, q, (uint64_t)n);
  k->fast(x, q2, (uint64_t)n);
  CHECK_MSG(memcmp(q, q2, (size_t)nb * k->block_bytes) == 0, "%s %s: two runs differ", k->name,
            label);
  CHECK_MSG(q[nb * k->block_bytes] == 0xA5, "%s %s: wrote past %d blocks", k->name, label, nb);
  CHECK_MSG(ggml_dequantize_ref(k->type, q, y, n) == 0, "%s %s: dequantize", k->name, label);

  int bad = 0, worst_i = -1;
  double worst = 0, se = 0, sx = 0, ideal_se = 0;
  for (int b = 0; b < nb; b++) {
    const uint8_t *blk = q + (size_t)b * k->block_bytes;
    if (k->type == GGML_TYPE_Q6_K) {
      const float d = tm_fp16_to_fp32(u16le(blk + 208));
      CHECK_MSG(isfinite(d), "%s %s block %d: d not finite", k->name, label, b);
    } else {
      const float d = tm_fp16_to_fp32(u16le(blk)), dmin = tm_fp16_to_fp32(u16le(blk + 2));
      CHECK_MSG(isfinite(d) && isfinite(dmin) && !signbit(d) && !signbit(dmin),
                "%s %s block %d: d %g dmin %g", k->name, label, b, d, dmin);
    }
    for (int j = 0; j < 256 / k->sub; j++) {
      double step, off;
      decode_sub(k, blk, j, &step, &off);
      double lo = 1e30, hi = -1e30;
      for (int i = 0; i < k->sub; i++) {
        const int e = 256 * b + k->sub * j + i;
        const double err = fabs((double)x[e] - (double)y[e]);
        const double bound = 0.5 * fabs(step) +
                             1e-6 * (fabs((double)x[e]) + fabs(off) + k->nmax * fabs(step)) + 1e-30;
        if (!(err <= bound)) bad++;
        if (err / bound > worst) {
          worst = err / bound;
          worst_i = e;
        }
        se += err * err;
        sx += (double)x[e] * x[e];
        lo = fmin(lo, x[e]);
        hi = fmax(hi, x[e]);
      }
      /* the min/max quantizer within the format: Q4_K/Q5_K cannot add an
       * offset, so their range starts at min(lo, 0); Q6_K's levels -32..31 are
       * centred on 0, so its step covers the larger side (either orientation) */
      const double ideal_step =
          k->type == GGML_TYPE_Q6_K
              ? fmin(fmax(-lo / 32, hi / 31), fmax(hi / 32, -lo / 31))
              : (hi - fmin(lo, 0.0)) / k->nmax;
      ideal_se += k->sub * ideal_step * ideal_step / 12.0;
    }
  }
  CHECK_MSG(bad == 0, "%s %s: %d elements off their nearest level (worst %.3g x bound at %d: x %g y %g)",
            k->name, label, bad, worst, worst_i, worst_i >= 0 ? x[worst_i] : 0.0,
            worst_i >= 0 ? y[worst_i] : 0.0);
  *ideal = sx > 0 ? sqrt(ideal_se / sx) : 0;
  return sx > 0 ? sqrt(se / sx) : 0;
}

static void fill_normal(float *x, int n, uint64_t seed, float mean, float std) {
  struct tm_rng r;
  tm_rng_seed(&r, seed);
  tm_rng_fill_normal(&r, x, (size_t)n, mean, std);
}

/* Normal rows: per-element bound, RMS against the min/max ideal, the reference
 * quantizer, and an absolute ceiling per type (measured: Q4_K 0.080, Q5_K 0.039,
 * Q6_K 0.019; reference 0.072 / 0.036 / 0.017). */
static void test_normal_rows(void) {
  static float x[N_MAX], y[N_MAX];
  static uint8_t q[NB_MAX * 210];
  static const double ceiling[] = {0.085, 0.042, 0.021};
  for (size_t t = 0; t < sizeof KQ / sizeof KQ[0]; t++) {
    const struct kq *k = &KQ[t];
    fill_normal(x, N_MAX, 11 + t, 0.0f, 0.02f);
    double ideal;
    const double rms = check_rows(k, "normal", x, N_MAX, &ideal);
    CHECK_MSG(rms <= 1.10 * ideal, "%s: RMS %.4f > 1.1 x the min/max ideal %.4f", k->name, rms,
              ideal);
    CHECK_MSG(rms >= 0.5 * ideal, "%s: RMS %.4f implausibly below the ideal %.4f", k->name, rms,
              ideal);
    CHECK_MSG(rms <= ceiling[t], "%s: RMS %.4f > %.3f", k->name, rms, ceiling[t]);
    CHECK(ggml_quantize_ref(k->type, x, q, N_MAX) == 0);
    CHECK(ggml_dequantize_ref(k->type, q, y, N_MAX) == 0);
    double se = 0, sx = 0;
    for (int i = 0; i < N_MAX; i++) {
      se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
      sx += (double)x[i] * x[i];
    }
    const double ref = sqrt(se / sx);
    CHECK_MSG(rms <= 1.15 * ref, "%s: RMS %.4f > 1.15 x the reference's %.4f", k->name, rms, ref);
    /* a mean offset (all-positive sub-blocks) and a second scale */
    fill_normal(x, N_MAX, 21 + t, 0.05f, 0.01f);
    check_rows(k, "normal(0.05, 0.01)", x, N_MAX, &ideal);
    fill_normal(x, N_MAX, 31 + t, -3.0f, 1.0f);
    const double rms2 = check_rows(k, "normal(-3, 1)", x, N_MAX, &ideal);
    CHECK_MSG(rms2 <= 1.10 * ideal, "%s normal(-3, 1): RMS %.4f > 1.1 x ideal %.4f", k->name,
              rms2, ideal);
  }
}

/* Edge cases, one 256-element block (or a few) each. */
static void test_edge_cases(void) {
  static float x[N_MAX];
  double ideal;
  for (size_t t = 0; t < sizeof KQ / sizeof KQ[0]; t++) {
    const struct kq *k = &KQ[t];
    static uint8_t q[NB_MAX * 210];
    static float y[N_MAX];

    memset(x, 0, sizeof x); /* zeros: exact zeros back */
    check_rows(k, "zeros", x, 512, &ideal);
    k->fast(x, q, 512);
    CHECK(ggml_dequantize_ref(k->type, q, y, 512) == 0);
    int nz = 0;
    for (int i = 0; i < 512; i++) nz += y[i] != 0.0f;
    CHECK_MSG(nz == 0, "%s: %d zeros came back non-zero", k->name, nz);

    static const float consts[] = {0.7f, -0.7f, 1e-3f, -1e-3f, 3e-7f, -3e-7f};
    for (size_t c = 0; c < sizeof consts / sizeof consts[0]; c++) {
      for (int i = 0; i < 256; i++) x[i] = consts[c];
      char label[48];
      snprintf(label, sizeof label, "constant %g", consts[c]);
      check_rows(k, label, x, 256, &ideal);
    }

    fill_normal(x, 1024, 41 + t, 0.0f, 0.02f); /* outliers */
    x[3] = 5.0f;
    x[300] = -7.0f;
    x[600] = 0.9f;
    x[1023] = -0.3f;
    check_rows(k, "outliers", x, 1024, &ideal);

    fill_normal(x, 1024, 51 + t, 0.0f, 0.02f); /* negative-only and positive-only */
    for (int i = 0; i < 512; i++) x[i] = -fabsf(x[i]) - 1e-4f;
    for (int i = 512; i < 1024; i++) x[i] = fabsf(x[i]) + 1e-4f;
    check_rows(k, "one-signed", x, 1024, &ideal);

    /* sub-blocks whose ranges differ by 10^4: the small ones get sub-scale 1..2 */
    fill_normal(x, 1024, 61 + t, 0.0f, 1.0f);
    for (int i = 0; i < 1024; i++)
      if ((i / 16) % 3 != 0) x[i] *= 1e-4f;
    check_rows(k, "mixed ranges", x, 1024, &ideal);

    /* narrow sub-blocks far below 0: the offset (a multiple of dmin) must reach
     * each minimum, and the step is much finer than dmin */
    fill_normal(x, 512, 111 + t, 0.0f, 0.002f);
    for (int i = 0; i < 512; i++) x[i] += -0.3f - 0.0731f * (float)(i / 32);
    check_rows(k, "narrow negative", x, 512, &ideal);

    /* tiny (fp16 super-scales go subnormal) and large magnitudes */
    fill_normal(x, 512, 71 + t, 0.0f, 1e-6f);
    check_rows(k, "tiny", x, 512, &ideal);
    fill_normal(x, 512, 81 + t, 0.0f, 1e-9f);
    check_rows(k, "tinier", x, 512, &ideal);
    fill_normal(x, 512, 91 + t, 100.0f, 3000.0f);
    check_rows(k, "large", x, 512, &ideal);

    /* Q6_K's asymmetric levels: an opposite extreme of (nearly) equal magnitude */
    fill_normal(x, 256, 101 + t, 0.0f, 0.01f);
    for (int j = 0; j < 16; j++) {
      x[16 * j] = j % 2 ? 1.0f : -1.0f;
      x[16 * j + 5] = j % 2 ? -0.999f : 0.999f;
    }
    check_rows(k, "opposite extremes", x, 256, &ideal);
  }
}

/* The same floats give the same bytes whatever the buffer: a row quantized
 * whole equals the row quantized block by block (the pipeline's chunks cut rows
 * at arbitrary block boundaries). */
static void test_deterministic(void) {
  static float x[N_MAX];
  static uint8_t a[NB_MAX * 210], b[NB_MAX * 210 + 1];
  fill_normal(x, N_MAX, 3, 0.0f, 0.02f);
  for (size_t t = 0; t < sizeof KQ / sizeof KQ[0]; t++) {
    const struct kq *k = &KQ[t];
    k->fast(x, a, N_MAX);
    for (int blk = 0; blk < NB_MAX; blk++)
      k->fast(x + 256 * blk, b + 1 + (size_t)blk * k->block_bytes, 256); /* odd address */
    CHECK_MSG(memcmp(a, b + 1, NB_MAX * k->block_bytes) == 0, "%s: blockwise != whole row",
              k->name);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_normal_rows);
  TM_RUN(test_edge_cases);
  TM_RUN(test_deterministic);
}
