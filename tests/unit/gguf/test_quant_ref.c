/* test_quant_ref: reference quantize/dequantize round trips for every type with
 * a reference (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K):
 * per-element level checks (quant_check.h) and RMS bounds on normal data, edge
 * cases, idempotence, hand-computed blocks, and fp16/bf16 special values.
 *
 * RMS bounds: a uniform quantizer with step D has RMS error D/sqrt(12) =
 * 0.289 D. For 32 standard normals E[max |x|] ~ 2.35 (the max of 64 normals) and
 * E[range] ~ 4.1; for 16, E[max |x|] ~ 2.04. So the expected relative RMS is
 *   Q8_0 0.289*2.35/127 = 0.0053      Q4_0 0.289*2.35/8 = 0.085 (+ clamp at +8)
 *   Q5_0 0.289*2.35/16  = 0.042       Q4_1 0.289*4.1/15 = 0.079
 *   Q5_1 0.289*4.1/31   = 0.038       Q4_K ~ Q4_1, Q5_K ~ Q5_1 (least squares
 *   Q6_K 0.289*2.04/32  = 0.018       gains a little, 6-bit scales lose a little)
 * and each bound below is that estimate plus 15-25% (sampling 64K values moves
 * these by < 1%). Measured (this code, 2 cores, see the test's stderr): Q8_0
 * 0.0054, Q4_0 0.086, Q4_1 0.078, Q5_0 0.043, Q5_1 0.038, Q4_K 0.072, Q5_K 0.036,
 * Q6_K 0.017.
 *
 * Tiny data: a K-quant super-block whose scale/63 is below fp16's smallest
 * subnormal (2^-24) stores d = 0 and dequantizes to ~0, as llama.cpp's would: the
 * format cannot hold weights that small. The tiny case checks only that nothing
 * is amplified there. */
#include <stdint.h>
#include <stdlib.h>

#include "gguf/ggml_types.h"
#include "gguf/quant_ref.h"
#include "quant_check.h"
#include "tm_test.h"

/* ------------------------------------------------------------- helpers -- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double rng_unit(void) { return ((double)(rng_next() >> 11) + 0.5) * 0x1p-53; }

static float rng_normal(void) { /* Box-Muller */
  return (float)(sqrt(-2.0 * log(rng_unit())) * cos(6.283185307179586 * rng_unit()));
}

static const uint32_t quant_types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
                                       GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q4_K,
                                       GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
#define N_QTYPES (sizeof quant_types / sizeof quant_types[0])

/* Round trip of n values; fills st and returns the bytes (caller frees). */
static uint8_t *round_trip(uint32_t t, const float *x, int64_t n, float *deq, struct qstats *st) {
  uint64_t bytes = 0;
  CHECK_EQ_INT(ggml_row_bytes(t, (uint64_t)n, &bytes), 0);
  uint8_t *q = malloc(bytes ? bytes : 1);
  CHECK(q != NULL);
  if (!q) return NULL;
  memset(q, 0xA5, bytes); /* garbage first: every byte must be written */
  for (int64_t i = 0; i < n; i++) deq[i] = NAN;
  CHECK_EQ_INT(ggml_quantize_ref(t, x, q, n), 0);
  CHECK_EQ_INT(ggml_dequantize_ref(t, q, deq, n), 0);
  memset(st, 0, sizeof *st);
  /* zero step: only when the scale underflows fp16; then every |x| < 2^-24 * qmax-ish */
  qcheck(t, x, q, deq, n, 64 * 32 * 0x1p-24, st);
  return q;
}

static void expect_valid(uint32_t t, const char *what, const struct qstats *st) {
  const char *name = ggml_type_get(t)->name;
  CHECK_MSG(st->n_bad == 0, "%s %s: %lld elements off their nearest level (first %lld)", name,
            what, (long long)st->n_bad, (long long)st->first_bad);
  CHECK_MSG(st->n_deq_mismatch == 0, "%s %s: %lld dequantized values differ from the level",
            name, what, (long long)st->n_deq_mismatch);
  CHECK_MSG(st->max_clamp_steps <= qbound_clamp_steps(t), "%s %s: clamp error %.4f steps", name,
            what, st->max_clamp_steps);
}

/* -------------------------------------------------------------- tests -- */

#define NR (64 * 1024)

static void test_normal_data(void) {
  float *x = malloc(NR * sizeof *x), *deq = malloc(NR * sizeof *deq);
  CHECK(x && deq);
  if (!x || !deq) goto out;
  for (int i = 0; i < NR; i++) x[i] = rng_normal();
  for (size_t k = 0; k < N_QTYPES; k++) {
    const uint32_t t = quant_types[k];
    struct qstats st;
    free(round_trip(t, x, NR, deq, &st));
    expect_valid(t, "normal", &st);
    const double rel = qstats_rel_rms(&st);
    fprintf(stderr, "  %-5s normal(0,1): rel RMS %.5f (bound %.4f), max |err| %.4f, clamped %lld\n",
            ggml_type_get(t)->name, rel, qbound_rel_rms(t), st.max_err, (long long)st.n_clamped);
    CHECK_MSG(rel <= qbound_rel_rms(t), "%s rel RMS %.5f > %.4f", ggml_type_get(t)->name, rel,
              qbound_rel_rms(t));
    /* The bound is not vacuous: it is within 2x of what the format achieves. */
    CHECK_MSG(rel >= qbound_rel_rms(t) / 2.5, "%s rel RMS %.5f suspiciously small",
              ggml_type_get(t)->name, rel);
  }
out:
  free(x);
  free(deq);
}

static void fill_edge(int which, float *x, int n) {
  for (int i = 0; i < n; i++) {
    switch (which) {
    case 0: x[i] = 0.0f; break;                                  /* all zeros */
    case 1: x[i] = 0.37f; break;                                 /* constant > 0 */
    case 2: x[i] = -1.25f; break;                                /* constant < 0 */
    case 3: x[i] = 0.01f * rng_normal(); break;                  /* outlier below */
    case 4: x[i] = 1e-3f * rng_normal(); break;                  /* small, fp16 normal d */
    case 5: x[i] = 1e-6f * rng_normal(); break;                  /* fp16-subnormal d */
    case 6: x[i] = -fabsf(rng_normal()); break;                  /* negative only */
    case 7: x[i] = fabsf(rng_normal()) + 3.0f; break;            /* positive, offset */
    case 8: x[i] = (i % 2 ? 1.0f : -1.0f) * (float)(i % 17); break; /* integers */
    }
  }
  if (which == 3) x[100] = 1000.0f, x[300] = -500.0f;
}

static const char *edge_name[] = {"zeros", "const+", "const-", "outlier", "small",
                                  "tiny", "negative", "offset", "integers"};

static void test_edge_cases(void) {
  enum { N = 1024 };
  static float x[N], deq[N];
  for (int which = 0; which < 9; which++) {
    fill_edge(which, x, N);
    for (size_t k = 0; k < N_QTYPES; k++) {
      const uint32_t t = quant_types[k];
      const char *name = ggml_type_get(t)->name;
      struct qstats st;
      free(round_trip(t, x, N, deq, &st));
      expect_valid(t, edge_name[which], &st);
      int finite = 1;
      for (int i = 0; i < N; i++) finite &= isfinite(deq[i]);
      CHECK_MSG(finite, "%s %s: non-finite output", name, edge_name[which]);
      if (which == 0) {
        int zero = 1;
        for (int i = 0; i < N; i++) zero &= deq[i] == 0.0f;
        CHECK_MSG(zero, "%s: zeros do not come back as zeros", name);
      }
      if (which == 1 || which == 2) { /* a constant comes back to fp16 precision */
        CHECK_MSG(st.max_err <= fabsf(x[0]) * 0x1p-9, "%s %s: max err %g", name,
                  edge_name[which], st.max_err);
      }
      if (which == 3) { /* the outliers themselves stay accurate */
        CHECK_MSG(fabsf(deq[100] - 1000.0f) <= 1000.0f * 0x1p-8, "%s outlier 1000 -> %g", name,
                  deq[100]);
        CHECK_MSG(fabsf(deq[300] + 500.0f) <= 500.0f * 0x1p-7 + 0.5f, "%s outlier -500 -> %g",
                  name, deq[300]);
      }
      if (which == 4 || which == 6 || which == 7) {
        /* Scale-free: the relative RMS bound holds here too (loosely for the
         * asymmetric "offset" data, whose spread is small against the mean). */
        const double rel = qstats_rel_rms(&st);
        CHECK_MSG(rel <= qbound_rel_rms(t) * 1.2, "%s %s: rel RMS %.4f", name, edge_name[which], rel);
      }
      if (which == 5) { /* tiny: scales are fp16 subnormals or 0; the per-element
                           * check above holds the legacy types to their fp16
                           * slack; here: nothing may be amplified */
        float amax = 0;
        for (int i = 0; i < N; i++) amax = fmaxf(amax, fabsf(x[i]));
        const int k_quant = t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K || t == GGML_TYPE_Q6_K;
        /* K-quants whose super-scale underflows keep one level per sub-block
         * (its mean): never worse than all zeros in RMS, within the range in max. */
        CHECK_MSG(st.max_err <= (k_quant ? 2 : 1) * amax, "%s tiny: max err %g, max |x| %g",
                  name, st.max_err, amax);
        CHECK_MSG(qstats_rel_rms(&st) <= 1.0, "%s tiny: rel RMS %g > 1", name,
                  qstats_rel_rms(&st));
      }
    }
  }
}

/* Re-quantizing dequantized data gives the same bytes where the quantizer's
 * scale choice is a fixed point: Q8_0 (the max maps to +-127 exactly), Q4_0 and
 * Q5_0 (the max maps to -8 / -16 exactly), and the float formats. */
static void test_idempotence(void) {
  enum { N = 4096 };
  static float x[N], deq[N], deq2[N];
  const uint32_t types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_F16,
                            GGML_TYPE_BF16, GGML_TYPE_F32};
  for (int i = 0; i < N; i++) x[i] = rng_normal() * 0.3f;
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    const uint32_t t = types[k];
    uint64_t bytes;
    ggml_row_bytes(t, N, &bytes);
    uint8_t *a = malloc(bytes), *b = malloc(bytes);
    CHECK(a && b);
    if (a && b) {
      ggml_quantize_ref(t, x, a, N);
      ggml_dequantize_ref(t, a, deq, N);
      ggml_quantize_ref(t, deq, b, N);
      ggml_dequantize_ref(t, b, deq2, N);
      CHECK_MSG(memcmp(a, b, bytes) == 0, "%s: quantize(dequantize(q)) != q",
                ggml_type_get(t)->name);
      CHECK_MSG(memcmp(deq, deq2, sizeof deq) == 0, "%s: values moved",
                ggml_type_get(t)->name);
    }
    free(a);
    free(b);
  }
  /* The others: a second round trip moves no value by more than one step's
   * float noise (their scales are refit, so bytes may differ). */
  const uint32_t loose[] = {GGML_TYPE_Q4_1, GGML_TYPE_Q5_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                            GGML_TYPE_Q6_K};
  for (size_t k = 0; k < sizeof loose / sizeof loose[0]; k++) {
    const uint32_t t = loose[k];
    struct qstats st1, st2;
    free(round_trip(t, x, N, deq, &st1));
    free(round_trip(t, deq, N, deq2, &st2));
    expect_valid(t, "second round", &st2);
    CHECK_MSG(qstats_rel_rms(&st2) <= qstats_rel_rms(&st1), "%s: second round error %.4f > first %.4f",
              ggml_type_get(t)->name, qstats_rel_rms(&st2), qstats_rel_rms(&st1));
  }
}

static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Hand-computed blocks pin the arithmetic and the nibble order. */
static void test_known_blocks(void) {
  float x[32];
  for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
  struct block_q8_0 b8;
  quant_ref_q8_0(x, &b8, 32);
  /* d = 16/127, id = 127/16 = 7.9375: -16 -> -127, 1 -> roundf(7.9375) = 8,
   * 2 -> roundf(15.875) = 16, 15 -> roundf(119.0625) = 119. */
  CHECK_EQ_INT(b8.d, tm_fp32_to_fp16(16.0f / 127.0f));
  CHECK_EQ_INT(b8.qs[0], -127);
  CHECK_EQ_INT(b8.qs[17], 8);
  CHECK_EQ_INT(b8.qs[18], 16);
  CHECK_EQ_INT(b8.qs[31], 119);
  CHECK_EQ_INT(b8.qs[16], 0);

  struct block_q4_0 b4;
  quant_ref_q4_0(x, &b4, 32);
  /* max = -16 (first of largest magnitude), d = 2, id = 0.5:
   * q = min(15, (int)(x/2 + 8.5)): -16 -> 0, -15 -> 1, -3 -> 7 (half up),
   * 0 -> 8, 1 -> 9, 15 -> 16 -> clamped 15. Element j low nibble of qs[j],
   * element j+16 high nibble. */
  CHECK_EQ_INT(b4.d, tm_fp32_to_fp16(2.0f));
  CHECK_EQ_INT(b4.qs[0], 0x80);        /* x0=-16 -> 0, x16=0 -> 8 */
  CHECK_EQ_INT(b4.qs[1], 0x91);        /* x1=-15 -> 1, x17=1 -> 9 */
  CHECK_EQ_INT(b4.qs[13] & 15, 7);     /* x13=-3 -> 7 */
  CHECK_EQ_INT(b4.qs[15] >> 4, 15);    /* x31=15 -> 15 (clamped) */
  float y[32];
  dequant_ref_q4_0(&b4, y, 32);
  CHECK_NEAR(y[0], -16.0, 0);
  CHECK_NEAR(y[31], 14.0, 0); /* the clamp: 15 becomes 7*2 */

  /* Q5_0: d = -16/-16 = 1, id = 1: q = (int)(x + 16.5): -16 -> 0, 15 -> 31; the
   * 5th bit of element j is bit j of qh. */
  struct block_q5_0 b5;
  quant_ref_q5_0(x, &b5, 32);
  CHECK_EQ_INT(b5.d, tm_fp32_to_fp16(1.0f));
  CHECK_EQ_INT(load_le32(b5.qh), 0xFFFF0000u); /* elements 16..31 have q >= 16 */
  CHECK_EQ_INT(b5.qs[0], 0x00);
  CHECK_EQ_INT(b5.qs[15], 0xFF); /* x15=-1 -> 15, x31=15 -> 31 = 0x1F */

  /* Q4_1: min -16, max 15, d = 31/15, q = (int)((x+16)*id + 0.5). */
  struct block_q4_1 b41;
  quant_ref_q4_1(x, &b41, 32);
  CHECK_EQ_INT(b41.m, tm_fp32_to_fp16(-16.0f));
  CHECK_EQ_INT(b41.qs[0] & 15, 0);
  CHECK_EQ_INT(b41.qs[15] >> 4, 15);

  /* Q5_K by hand: d = 1, dmin = 0.5, sub-block j scale j+1, min 2j (j < 4) and
   * 40 + j / 50 + j (j >= 4, exercising the packed high bits); element e holds
   * q = e % 32. value = d*sc*q - dmin*m. */
  struct block_q5_k k5;
  memset(&k5, 0, sizeof k5);
  k5.d = tm_fp32_to_fp16(1.0f);
  k5.dmin = tm_fp32_to_fp16(0.5f);
  int sc[8], mn[8];
  for (int j = 0; j < 8; j++) {
    sc[j] = j < 4 ? j + 1 : 40 + j;
    mn[j] = j < 4 ? 2 * j : 50 + j;
  }
  for (int j = 0; j < 4; j++) {
    k5.scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
    k5.scales[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
    k5.scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  for (int e = 0; e < 256; e++) {
    const int q = e % 32, c = e / 64, l = e % 32, hi = (e % 64) >= 32;
    k5.qs[32 * c + l] |= (uint8_t)((q & 15) << (hi ? 4 : 0));
    k5.qh[l] |= (uint8_t)((q >> 4) << (2 * c + hi));
  }
  float yk[256];
  CHECK_EQ_INT(ggml_dequantize_ref(GGML_TYPE_Q5_K, &k5, yk, 256), 0);
  int bad = 0;
  for (int e = 0; e < 256; e++) {
    const float want = (float)sc[e / 32] * (float)(e % 32) - 0.5f * (float)mn[e / 32];
    bad += yk[e] != want;
  }
  CHECK_EQ_INT(bad, 0);
}

/* ------------------------------------------------------ fp16 and bf16 -- */

static uint16_t f16_of(float f) {
  uint16_t h;
  ggml_quantize_ref(GGML_TYPE_F16, &f, &h, 1);
  return h;
}

static uint16_t bf16_of(float f) {
  uint16_t h;
  ggml_quantize_ref(GGML_TYPE_BF16, &f, &h, 1);
  return h;
}

static float f16_back(uint16_t h) {
  float f;
  ggml_dequantize_ref(GGML_TYPE_F16, &h, &f, 1);
  return f;
}

static void test_f16_special_values(void) {
  CHECK_EQ_INT(f16_of(0.0f), 0x0000);
  CHECK_EQ_INT(f16_of(-0.0f), 0x8000);
  CHECK_EQ_INT(f16_of(1.0f), 0x3C00);
  CHECK_EQ_INT(f16_of(-2.0f), 0xC000);
  CHECK_EQ_INT(f16_of(65504.0f), 0x7BFF);       /* largest finite */
  CHECK_EQ_INT(f16_of(65519.0f), 0x7BFF);       /* below the halfway point */
  CHECK_EQ_INT(f16_of(65520.0f), 0x7C00);       /* tie -> even -> inf */
  CHECK_EQ_INT(f16_of(INFINITY), 0x7C00);
  CHECK_EQ_INT(f16_of(-INFINITY), 0xFC00);
  const uint16_t hn = f16_of(NAN);
  CHECK_MSG((hn & 0x7C00) == 0x7C00 && (hn & 0x03FF) != 0, "NaN -> 0x%04x", hn);
  CHECK(isnan(f16_back(0x7E00)));
  CHECK(isinf(f16_back(0x7C00)) && f16_back(0x7C00) > 0);
  /* Ties to even in the normal range: 1 + 2^-11 is halfway between 1 and
   * 1 + 2^-10 -> 1 (even); 1 + 3*2^-11 is halfway between 1 + 2^-10 (odd) and
   * 1 + 2^-9 -> 1 + 2^-9. */
  CHECK_EQ_INT(f16_of(1.0f + 0x1p-11f), 0x3C00);
  CHECK_EQ_INT(f16_of(1.0f + 3 * 0x1p-11f), 0x3C02);
  CHECK_EQ_INT(f16_of(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01); /* just above the tie */
  /* Subnormals: smallest 2^-24 = 0x0001; 2^-25 is a tie with 0 -> 0; 3*2^-25 is a
   * tie between 1 and 2 ulps -> 2; the largest subnormal 1023*2^-24 = 0x03FF. */
  CHECK_EQ_INT(f16_of(0x1p-24f), 0x0001);
  CHECK_EQ_INT(f16_of(0x1p-25f), 0x0000);
  CHECK_EQ_INT(f16_of(3 * 0x1p-25f), 0x0002);
  CHECK_EQ_INT(f16_of(1023 * 0x1p-24f), 0x03FF);
  CHECK_EQ_INT(f16_of(0x1p-14f), 0x0400); /* smallest normal */
  CHECK_EQ_INT(f16_of(1e-10f), 0x0000);   /* underflow */
  CHECK_NEAR(f16_back(0x0001), 0x1p-24, 0);
  CHECK_NEAR(f16_back(0x03FF), 1023 * 0x1p-24, 0);
  CHECK_NEAR(f16_back(0x7BFF), 65504.0, 0);
  /* Every finite half survives half -> float -> half exactly. */
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7C00) == 0x7C00) continue;
    bad += f16_of(f16_back((uint16_t)h)) != h;
  }
  CHECK_EQ_INT(bad, 0);
}

static void test_bf16_special_values(void) {
  CHECK_EQ_INT(bf16_of(1.0f), 0x3F80);
  CHECK_EQ_INT(bf16_of(-0.0f), 0x8000);
  CHECK_EQ_INT(bf16_of(INFINITY), 0x7F80);
  CHECK_EQ_INT(bf16_of(-INFINITY), 0xFF80);
  const uint16_t n = bf16_of(NAN);
  CHECK_MSG((n & 0x7F80) == 0x7F80 && (n & 0x7F) != 0, "NaN -> 0x%04x", n);
  /* A signalling NaN pattern stays NaN (quieted), never becomes inf. */
  uint32_t snan_bits = 0x7F800001u;
  float snan;
  memcpy(&snan, &snan_bits, 4);
  const uint16_t s = bf16_of(snan);
  CHECK_MSG((s & 0x7F80) == 0x7F80 && (s & 0x7F) != 0, "sNaN -> 0x%04x", s);
  /* Ties to even: 1 + 2^-8 -> 1; 1 + 3*2^-8 -> 1 + 2^-6 (0x3F82). */
  CHECK_EQ_INT(bf16_of(1.0f + 0x1p-8f), 0x3F80);
  CHECK_EQ_INT(bf16_of(1.0f + 3 * 0x1p-8f), 0x3F82);
  CHECK_EQ_INT(bf16_of(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  /* Largest finite float rounds up to inf (tie-free, above halfway). */
  CHECK_EQ_INT(bf16_of(3.4028235e38f), 0x7F80);
  /* f32 subnormals keep their top bits. */
  CHECK_EQ_INT(bf16_of(0x1p-133f), 0x0001);
  float back;
  uint16_t h = 0x0001;
  ggml_dequantize_ref(GGML_TYPE_BF16, &h, &back, 1);
  CHECK_NEAR(back, 0x1p-133, 0);
  h = 0xC0A0; /* -5 */
  ggml_dequantize_ref(GGML_TYPE_BF16, &h, &back, 1);
  CHECK_NEAR(back, -5.0, 0);
}

static void test_float_round_trip_bounds(void) {
  enum { N = 4096 };
  static float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = rng_normal() * 10.0f;
  uint16_t h[N];
  double worst16 = 0, worstbf = 0;
  ggml_quantize_ref(GGML_TYPE_F16, x, h, N);
  ggml_dequantize_ref(GGML_TYPE_F16, h, y, N);
  for (int i = 0; i < N; i++) {
    const double r = fabs((double)y[i] - x[i]) / fabs(x[i]);
    if (fabs(x[i]) >= 0x1p-14 && r > worst16) worst16 = r;
  }
  ggml_quantize_ref(GGML_TYPE_BF16, x, h, N);
  ggml_dequantize_ref(GGML_TYPE_BF16, h, y, N);
  for (int i = 0; i < N; i++) {
    const double r = fabs((double)y[i] - x[i]) / fabs(x[i]);
    if (r > worstbf) worstbf = r;
  }
  CHECK_MSG(worst16 <= 0x1p-11, "f16 relative error %g > 2^-11", worst16);
  CHECK_MSG(worstbf <= 0x1p-8, "bf16 relative error %g > 2^-8", worstbf);
  ggml_quantize_ref(GGML_TYPE_F32, x, y, N);
  CHECK(memcmp(x, y, sizeof x) == 0);
}

void tm_run_tests(void) {
  TM_RUN(test_normal_data);
  TM_RUN(test_edge_cases);
  TM_RUN(test_idempotence);
  TM_RUN(test_known_blocks);
  TM_RUN(test_f16_special_values);
  TM_RUN(test_bf16_special_values);
  TM_RUN(test_float_round_trip_bounds);
}
