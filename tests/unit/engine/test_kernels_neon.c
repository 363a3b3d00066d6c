/* test_kernels_neon: the aarch64 NEON path (kernels_neon.c), beyond what
 * test_kernels checks for every path (which covers the variant this CPU
 * selects against scalar on the fixture-style rows).
 *
 *  - Both integer variants, sdot (when the CPU has dotprod) and the
 *    widening-multiply fallback (always: it runs on every aarch64 core),
 *    against the scalar gemm on weight rows of RANDOM BYTES (every nibble,
 *    high-bit and scale pattern, Q8_0 weights of -128) and activations at
 *    the extremes (+-127), odd n, odd row ranges, ncols 1..9, strides wider
 *    than needed, outputs prefilled with NaN. Integer block dots are exact on
 *    both sides, so the tolerance is float rounding: 1e-5 x (sum |w_i a_i| +
 *    sum |m_w s_a| for the offset types).
 *  - Quantizers give the scalar's bytes on ties (x * id exactly k + 0.5),
 *    zero blocks and blocks whose extreme appears with both signs.
 *  - f16 helpers on every length 1..40 (every tail): f32_to_f16 and
 *    scale_f16 bit-exact with the scalar, mad_f16 bit-exact with one fused
 *    multiply-add rounded once to f16.
 *  - The engine on the NEON path: selected by AUTO (info says "neon"),
 *    prefill == token-by-token decode, 1 and 2 threads bit-identical, and
 *    agreement with the scalar engine, on llama.cpp's fixture models.
 * On other architectures it checks only that NEON is not offered. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/kernels_neon.h"
#include "tm_test.h"
#include "util/fp16.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint32_t rng_u32(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}
static float rng_uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)((rng_u32() >> 8) * (1.0 / 16777216.0));
}

static bool cpu_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

static const uint32_t int_types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
                                     GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K,
                                     GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
#define N_INT (sizeof int_types / sizeof int_types[0])

/* Offsets of the fp16 fields of each block: d, and the second one (m or
 * dmin) or -1. */
static void fp16_fields(uint32_t type, int *d_off, int *m_off) {
  *m_off = -1;
  *d_off = 0;
  switch (type) {
  case GGML_TYPE_Q4_1:
  case GGML_TYPE_Q5_1:
  case GGML_TYPE_Q4_K:
  case GGML_TYPE_Q5_K: *m_off = 2; break;
  case GGML_TYPE_Q6_K: *d_off = 208; break;
  default: break;
  }
}

/* Random-byte weight rows with sane scales, their dequantized floats, and
 * activations (random q with many +-127) in the type's format. */
struct rcase {
  uint32_t type;
  int64_t n, rows, r0, r1, ncols, out_stride;
  size_t w_stride, a_stride;
  uint8_t *w, *a;
  float *wf;
  double *mag; /* per (column, row): sum |w_i a_i| (+ sum |m s| for Q4_1/Q5_1) */
};

static float act_value(const struct rcase *rc, int64_t c, int64_t i) {
  const uint8_t *arow = rc->a + (size_t)c * rc->a_stride;
  if (kernel_act_format(rc->type) == ACT_Q8) {
    const struct act_q8 *b = (const struct act_q8 *)arow + i / 32;
    return b->d * b->q[i % 32];
  }
  const struct act_q8k *b = (const struct act_q8k *)arow + i / QK_K;
  return b->d * b->q[i % QK_K];
}

static int rcase_make(struct rcase *rc, uint32_t type, int64_t nblocks, int64_t ncols) {
  memset(rc, 0, sizeof *rc);
  const struct ggml_type_info *ti = ggml_type_get(type);
  rc->type = type;
  rc->n = (int64_t)ti->block_size * nblocks;
  rc->rows = 29;
  rc->r0 = 5;
  rc->r1 = 26;
  rc->ncols = ncols;
  rc->out_stride = rc->rows + 3;
  rc->w_stride = (size_t)ti->type_size * (size_t)nblocks + 6; /* rows not packed */
  enum act_format f = kernel_act_format(type);
  size_t unit = f == ACT_Q8 ? sizeof(struct act_q8) : sizeof(struct act_q8k);
  rc->a_stride = kernel_act_row_bytes(f, rc->n) + unit;
  rc->w = malloc(rc->w_stride * (size_t)rc->rows);
  rc->a = calloc((size_t)ncols, rc->a_stride);
  rc->wf = malloc(sizeof(float) * (size_t)(rc->n * rc->rows));
  rc->mag = calloc((size_t)(ncols * rc->rows), sizeof(double));
  if (!rc->w || !rc->a || !rc->wf || !rc->mag) return -1;
  int d_off, m_off;
  fp16_fields(type, &d_off, &m_off);
  for (int64_t r = 0; r < rc->rows; r++) {
    uint8_t *row = rc->w + (size_t)r * rc->w_stride;
    for (size_t i = 0; i < rc->w_stride; i++) row[i] = (uint8_t)rng_u32();
    for (int64_t b = 0; b < nblocks; b++) {
      uint8_t *blk = row + (size_t)b * ti->type_size;
      uint16_t d = tm_fp32_to_fp16(rng_uniform(-0.02f, 0.02f));
      memcpy(blk + d_off, &d, 2);
      if (m_off >= 0) {
        uint16_t m = tm_fp32_to_fp16(rng_uniform(-0.05f, 0.05f));
        memcpy(blk + m_off, &m, 2);
      }
      if (type == GGML_TYPE_Q8_0 && b == 0) memset(blk + 2, 0x80, 32); /* -128 weights */
    }
    if (ggml_dequantize_ref(type, row, rc->wf + r * rc->n, rc->n) != 0) return -1;
  }
  for (int64_t c = 0; c < ncols; c++) {
    uint8_t *arow = rc->a + (size_t)c * rc->a_stride;
    if (f == ACT_Q8) {
      struct act_q8 *y = (struct act_q8 *)arow;
      for (int64_t b = 0; b < rc->n / 32; b++) {
        int sum = 0;
        y[b].d = rng_uniform(0.001f, 0.1f);
        for (int i = 0; i < 32; i++) {
          int q = (int)(rng_u32() % 255) - 127;
          if (rng_u32() % 3 == 0) q = q < 0 ? -127 : 127;
          y[b].q[i] = (int8_t)q;
          sum += q;
        }
        y[b].s = y[b].d * (float)sum;
      }
    } else {
      struct act_q8k *y = (struct act_q8k *)arow;
      for (int64_t b = 0; b < rc->n / QK_K; b++) {
        y[b].d = rng_uniform(-0.1f, 0.1f);
        for (int g = 0; g < 16; g++) {
          int sum = 0;
          for (int i = 0; i < 16; i++) {
            int q = (int)(rng_u32() % 255) - 127;
            if (rng_u32() % 3 == 0) q = q < 0 ? -127 : 127;
            y[b].q[16 * g + i] = (int8_t)q;
            sum += q;
          }
          y[b].bsums[g] = (int16_t)sum;
        }
      }
    }
    for (int64_t r = 0; r < rc->rows; r++) {
      double m = 0.0;
      for (int64_t i = 0; i < rc->n; i++) m += fabs((double)rc->wf[r * rc->n + i] * act_value(rc, c, i));
      if (type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1) {
        const uint8_t *row = rc->w + (size_t)r * rc->w_stride;
        for (int64_t b = 0; b < rc->n / 32; b++) {
          uint16_t mh;
          memcpy(&mh, row + (size_t)b * ti->type_size + 2, 2);
          m += fabs((double)tm_fp16_to_fp32(mh) * ((const struct act_q8 *)arow)[b].s);
        }
      }
      rc->mag[c * rc->rows + r] = m;
    }
  }
  return 0;
}

static void rcase_free(struct rcase *rc) {
  free(rc->w);
  free(rc->a);
  free(rc->wf);
  free(rc->mag);
}

static float *rcase_run(gemm_fn fn, const struct rcase *rc) {
  size_t cells = (size_t)(rc->out_stride * rc->ncols);
  float *out = malloc(cells * sizeof(float));
  if (!out) return NULL;
  for (size_t i = 0; i < cells; i++) out[i] = NAN;
  fn(rc->n, rc->w, rc->w_stride, rc->r0, rc->r1, rc->a, rc->a_stride, rc->ncols, out,
     rc->out_stride);
  return out;
}

/* Both integer variants vs scalar, random bytes, extreme activations. */
static void test_int_variants_vs_scalar(void) {
  struct kernel_ops sc, base, dp;
  kernels_fill_scalar(&sc);
  base = sc;
  kernels_fill_neon(&base, false);
  dp = sc;
  bool has_dp = cpu_dotprod();
  if (has_dp) kernels_fill_neon(&dp, true);
  fprintf(stderr, "  (dotprod %s: testing the %s)\n", has_dp ? "present" : "absent",
          has_dp ? "sdot and fallback kernels" : "fallback kernels only");
  const struct kernel_ops *variants[2] = {&base, has_dp ? &dp : NULL};
  static const int64_t ncols_list[] = {1, 2, 3, 4, 5, 7, 9};
  for (size_t t = 0; t < N_INT; t++)
    for (size_t k = 0; k < sizeof ncols_list / sizeof ncols_list[0]; k++) {
      struct rcase rc;
      int64_t nblocks = ggml_type_get(int_types[t])->block_size == 32 ? 9 + 2 * (int64_t)k : 3;
      if (rcase_make(&rc, int_types[t], nblocks, ncols_list[k]) != 0) {
        CHECK_MSG(0, "rcase_make %s", ggml_type_get(int_types[t])->name);
        rcase_free(&rc);
        continue;
      }
      float *ref = rcase_run(sc.gemm[rc.type], &rc);
      for (int v = 0; v < 2; v++) {
        if (!variants[v]) continue;
        const char *vname = v ? "sdot" : "fallback";
        CHECK(variants[v]->gemm[rc.type] != sc.gemm[rc.type]); /* specialised */
        float *out = rcase_run(variants[v]->gemm[rc.type], &rc);
        if (!ref || !out) {
          CHECK(0);
          free(out);
          continue;
        }
        int bad = 0;
        for (int64_t c = 0; c < rc.ncols; c++)
          for (int64_t r = 0; r < rc.out_stride; r++) {
            float g = out[c * rc.out_stride + r], e = ref[c * rc.out_stride + r];
            bool inside = r >= rc.r0 && r < rc.r1;
            bool ok = inside ? fabs((double)g - e) <= 1e-5 * rc.mag[c * rc.rows + r] + 1e-30
                             : isnan(g);
            if (!ok && !bad)
              CHECK_MSG(0, "%s %s ncols %lld r %lld c %lld: %.9g vs scalar %.9g", vname,
                        ggml_type_get(rc.type)->name, (long long)rc.ncols, (long long)r,
                        (long long)c, g, e);
            bad += !ok;
          }
        CHECK_EQ_INT(bad, 0);
        free(out);
      }
      free(ref);
      rcase_free(&rc);
    }
}

/* Quantizer bytes on ties, zero blocks, both-signed extremes. */
static void test_quantize_edges(void) {
  enum { N = 256 * 3 };
  static float x[N];
  static struct act_q8 a8[N / 32], b8[N / 32];
  static struct act_q8k ak[N / 256], bk[N / 256];
  for (int i = 0; i < N; i++) x[i] = rng_uniform(-3.0f, 3.0f);
  /* block 0: amax 127, so id = 1 and every k + 0.5 is a tie */
  for (int i = 0; i < 32; i++) x[i] = (float)(i - 16) + 0.5f;
  x[31] = 127.0f;
  for (int i = 32; i < 64; i++) x[i] = 0.0f;                 /* zero block */
  for (int i = 256; i < 512; i++) x[i] = 0.0f;               /* zero K block */
  x[520] = 2.5f;                                             /* both signs reach amax: */
  x[530] = -2.5f;                                            /* the first one wins */
  for (int i = 512; i < 768; i++) if (i != 520 && i != 530) x[i] = rng_uniform(-2.0f, 2.0f);
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR), *ne = kernels_get(KERNEL_NEON);
  CHECK(ne != NULL);
  if (!ne) return;
  for (int len = 32; len <= N; len += 32 * 5) {
    memset(b8, 0x5A, sizeof b8);
    sc->quantize_q8(x, a8, len);
    ne->quantize_q8(x, b8, len);
    CHECK_MSG(memcmp(a8, b8, sizeof(struct act_q8) * (size_t)(len / 32)) == 0,
              "quantize_q8 bytes, n %d", len);
  }
  memset(bk, 0x5A, sizeof bk);
  sc->quantize_q8k(x, ak, N);
  ne->quantize_q8k(x, bk, N);
  CHECK(memcmp(ak, bk, sizeof ak) == 0);
  CHECK(bk[1].d == 0.0f && bk[1].bsums[3] == 0);
  CHECK(bk[2].d < 0.0f); /* max = +2.5 came first: d = 1 / (-127 / 2.5) */
}

/* f16 helpers on every tail length. */
static void test_f16_tails(void) {
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR), *ne = kernels_get(KERNEL_NEON);
  CHECK(ne != NULL);
  if (!ne) return;
  enum { M = 40 };
  float x[M], yf[M], yr[M];
  uint16_t h[M], v[M], y1[M], y2[M];
  int bad = 0;
  for (int len = 1; len <= M; len++) {
    for (int i = 0; i < M; i++) {
      float s = i % 4 == 0 ? 1e-6f : i % 9 == 0 ? 6e4f : 1.0f; /* subnormal, near overflow */
      x[i] = rng_uniform(-2.0f, 2.0f) * s;
      v[i] = tm_fp32_to_fp16(rng_uniform(-2.0f, 2.0f));
      h[i] = tm_fp32_to_fp16(rng_uniform(-4.0f, 4.0f));
      yf[i] = yr[i] = rng_uniform(-1.0f, 1.0f);
    }
    memset(y1, 0, sizeof y1);
    ne->f32_to_f16(x, y1, len);
    for (int i = 0; i < len; i++) bad += y1[i] != tm_fp32_to_fp16(x[i]);
    for (int i = len; i < M; i++) bad += y1[i] != 0; /* nothing past n */
    memcpy(y1, h, sizeof h);
    memcpy(y2, h, sizeof h);
    sc->scale_f16(y1, 0.3f, len);
    ne->scale_f16(y2, 0.3f, len);
    bad += memcmp(y1, y2, sizeof y1) != 0;
    memcpy(y2, h, sizeof h);
    ne->mad_f16(y2, -0.7f, v, len);
    for (int i = 0; i < M; i++) {
      uint16_t want = i < len ? tm_fp32_to_fp16(fmaf(-0.7f, tm_fp16_to_fp32(v[i]),
                                                     tm_fp16_to_fp32(h[i])))
                              : h[i];
      bad += y2[i] != want;
    }
    double exact = 0.0, mag = 0.0;
    for (int i = 0; i < len; i++) {
      exact += (double)tm_fp16_to_fp32(h[i]) * x[i];
      mag += fabs((double)tm_fp16_to_fp32(h[i]) * x[i]);
    }
    bad += !(fabs(ne->dot_f16_f32(h, x, len) - exact) <= 1e-6 * mag + 1e-30);
    ne->axpy_f16(yf, 0.9f, v, len);
    for (int i = 0; i < M; i++) {
      float want = i < len ? fmaf(0.9f, tm_fp16_to_fp32(v[i]), yr[i]) : yr[i];
      bad += yf[i] != want;
    }
  }
  CHECK_EQ_INT(bad, 0);
}

/* ------------------------------------------------ the engine on NEON -- */

static const char *const k_models[] = {
    "gguf/tiny-llama-f16.gguf",    "gguf/tiny-llama-Q8_0.gguf", "gguf/tiny-llama-Q4_0.gguf",
    "gguf/tiny-llama-Q4_K_M.gguf", "gguf/kq-llama-Q4_K_M.gguf", "gguf/kq-llama-Q6_K.gguf",
    "gguf/tiny-qwen2-Q8_0.gguf",   "gguf/tiny-qwen3-Q8_0.gguf", "gguf/tiny-qwen3moe-f16.gguf",
    "gguf/tiny-qwen3moe-Q8_0.gguf", "gguf/kq-llama-f16.gguf"};
#define N_MODELS (sizeof k_models / sizeof k_models[0])
static const int32_t k_prompt[16] = {1,   450,  11473, 29892, 3763,  338, 263, 1243,
                                     310, 278, 2043,  29889, 319,  2107, 300, 1737};

static struct engine *load(const char *rel, enum kernel_path kp, int threads) {
  struct engine_options o;
  engine_options_init(&o);
  o.kernels = kp;
  o.n_threads = threads;
  o.n_ctx = 32;
  struct tm_err err = {{0}};
  struct engine *e = engine_load(tm_fixture(rel), &o, &err);
  CHECK_MSG(e != NULL, "load %s: %s", rel, err.msg);
  return e;
}

/* Largest |a - b| over the spread of a. */
static double rel_err(const float *a, const float *b, uint32_t n) {
  float lo = a[0], hi = a[0];
  double d = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
    double x = fabs((double)a[i] - b[i]);
    d = x > d || isnan(x) ? x : d;
  }
  return d / (hi - lo);
}

static void test_engine_selects_neon(void) {
  const struct kernel_ops *autop = kernels_get(KERNEL_AUTO);
  CHECK(autop != NULL && autop->path == KERNEL_NEON);
  CHECK_EQ_INT(kernels_best_for_cpu(), KERNEL_NEON);
  /* the table holds the variant the CPU can run */
  struct kernel_ops want;
  kernels_fill_scalar(&want);
  kernels_fill_neon(&want, cpu_dotprod());
  if (autop) CHECK(autop->gemm[GGML_TYPE_Q8_0] == want.gemm[GGML_TYPE_Q8_0]);
  struct engine *e = load("gguf/tiny-llama-Q4_0.gguf", KERNEL_AUTO, 1);
  if (!e) return;
  struct engine_info in;
  engine_get_info(e, &in);
  CHECK_STR(in.kernel_path, "neon");
  CHECK_STR(in.best_cpu_path, "neon");
  fprintf(stderr, "  (engine kernel path: %s, %s)\n", in.kernel_path,
          cpu_dotprod() ? "sdot integer kernels" : "fallback integer kernels");
  engine_free(e);
}

/* NEON engine: prefill == decode, 1 vs 2 threads identical, vs scalar. */
static void test_engine_on_neon(void) {
  for (size_t mi = 0; mi < N_MODELS; mi++) {
    struct engine *e1 = load(k_models[mi], KERNEL_NEON, 1);
    struct engine *e2 = load(k_models[mi], KERNEL_NEON, 2);
    struct engine *s = load(k_models[mi], KERNEL_SCALAR, 1);
    if (e1 && e2 && s) {
      struct engine_info in;
      engine_get_info(e1, &in);
      uint32_t nv = in.n_vocab;
      float *dec = malloc(sizeof(float) * nv), *pre = malloc(sizeof(float) * nv);
      float *two = malloc(sizeof(float) * nv), *ref = malloc(sizeof(float) * nv);
      struct tm_err err;
      CHECK(dec && pre && two && ref);
      if (dec && pre && two && ref) {
        for (int t = 0; t < 16; t++) CHECK(engine_decode(e1, k_prompt[t], dec, &err) == 0);
        CHECK(engine_prefill(e2, k_prompt, 16, two, &err) == 0);
        engine_reset(e1);
        CHECK(engine_prefill(e1, k_prompt, 16, pre, &err) == 0);
        CHECK(engine_prefill(s, k_prompt, 16, ref, &err) == 0);
        double pd = rel_err(dec, pre, nv), sr = rel_err(ref, pre, nv);
        CHECK_MSG(pd < 1e-3, "%s: NEON prefill vs decode rel err %g", k_models[mi], pd);
        CHECK_EQ_INT(engine_argmax(pre, nv), engine_argmax(dec, nv));
        CHECK_MSG(memcmp(pre, two, sizeof(float) * nv) == 0, "%s: NEON 1 vs 2 threads differ",
                  k_models[mi]);
        CHECK_MSG(sr < 1e-2, "%s: NEON vs scalar engine rel err %g", k_models[mi], sr);
        if (getenv("TM_ENGINE_VERBOSE"))
          fprintf(stderr, "  %s: prefill/decode %.2g, vs scalar %.2g\n", k_models[mi], pd, sr);
      }
      free(dec);
      free(pre);
      free(two);
      free(ref);
    }
    engine_free(e1);
    engine_free(e2);
    engine_free(s);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_int_variants_vs_scalar);
  TM_RUN(test_quantize_edges);
  TM_RUN(test_f16_tails);
  TM_RUN(test_engine_selects_neon);
  TM_RUN(test_engine_on_neon);
}

#else /* not aarch64 */

static void test_neon_absent(void) {
  CHECK(kernels_get(KERNEL_NEON) == NULL);
  CHECK_STR(kernel_path_name(KERNEL_NEON), "neon");
  const struct kernel_ops *autop = kernels_get(KERNEL_AUTO);
  CHECK(autop != NULL && autop->path != KERNEL_NEON);
}

void tm_run_tests(void) { TM_RUN(test_neon_absent); }
#endif
