/* test_kernels: every kernel of every path this CPU runs, against the scalar
 * reference (kernels_scalar.c) and the scalar reference against float64 math.
 *
 * Sizes are deliberately odd: n an odd multiple of the block size (odd n for
 * float weights, so SIMD tails run), a row range [r0, r1) not starting at 0,
 * ncols 1, 3, 5, 8, 13 (decode, and tiles with remainders), out_stride and
 * a_stride larger than needed. Outputs start as NaN: every cell in range must
 * come out finite and every cell outside must still be NaN.
 *
 * Tolerances:
 *  - SIMD vs scalar: integer block dots are exact on every path, only the
 *    float summation order differs, so 1e-5 x sum|terms| (terms w_i a_i).
 *  - scalar vs float64 dot(dequantized W row, UNquantized activation): the
 *    activation quantizer moves each a_i by at most d_b / 2 (d_b = amax_b/127
 *    of its block), so |error| <= sum_b d_b/2 sum_{i in b} |w_i|, plus float
 *    rounding (1e-5 x sum|terms|). Float weights: rounding only. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"
#include "engine/kernels_amx.h"
#include "engine/kernels_internal.h"
#include "kernel_set.h"
#include "tm_test.h"
#include "util/fp16.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rng_u01(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static float rng_normal(void) {
  double u = rng_u01(), v = rng_u01();
  return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static const uint32_t gemm_types[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q8_0,
    GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_1,
    GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
#define N_TYPES (sizeof gemm_types / sizeof gemm_types[0])
static const enum kernel_path paths[] = {KERNEL_SCALAR, KERNEL_AVX2, KERNEL_AVX512,
                                         KERNEL_AVX512_VNNI, KERNEL_NEON};
#define N_PATHS (sizeof paths / sizeof paths[0])

/* n for a type: an odd multiple of its block size (odd for float types). */
static int64_t odd_n(uint32_t type, int mult) {
  uint32_t bs = ggml_type_get(type)->block_size;
  return bs == 1 ? 32 * mult + 7 : (int64_t)bs * mult;
}

static void quantize_act(const struct kernel_ops *ops, enum act_format f, const float *x,
                         void *y, int64_t n) {
  if (f == ACT_Q8) ops->quantize_q8(x, y, n);
  else if (f == ACT_Q8K) ops->quantize_q8k(x, y, n);
  else memcpy(y, x, (size_t)n * sizeof(float));
}

/* Per-element activation error bound and the block scale behind it. */
/* How far the quantized activation a_i can be from the true x_i: half a step,
 * plus (act_q8) the fp16 rounding of the kept scale times |q| <= 127 (the q
 * come from the unrounded scale, as in llama.cpp). act_q8k's d may be
 * negative (its sign follows the block's extreme value). */
static double act_half_step(enum act_format f, const void *arow, int64_t i) {
  if (f == ACT_Q8) {
    double d = ((const struct act_q8 *)arow)[i / 32].d;
    return d * 0.5 * (1.0 + 1.0 / 1024) + 127.0 * d / 2048.0;
  }
  if (f == ACT_Q8K) return fabs(((const struct act_q8k *)arow)[i / QK_K].d) * 0.5;
  return 0.0;
}

struct gemm_case {
  uint32_t type;
  int64_t n, rows, r0, r1, ncols, out_stride;
  size_t w_stride, a_stride;
  uint8_t *w;     /* rows x w_stride */
  float *wf;      /* dequantized weights, rows x n */
  float *x;       /* unquantized activations, ncols x n */
  uint8_t *a;     /* quantized activations (scalar quantizer), ncols x a_stride */
};

static int case_make_rows(struct gemm_case *gc, uint32_t type, int mult, int64_t ncols,
                          int64_t rows, int64_t r0, int64_t r1) {
  memset(gc, 0, sizeof *gc);
  gc->type = type;
  gc->n = odd_n(type, mult);
  gc->rows = rows;
  gc->r0 = r0;
  gc->r1 = r1;
  gc->ncols = ncols;
  gc->out_stride = gc->rows + 5;
  uint64_t rb = 0;
  if (ggml_row_bytes(type, (uint64_t)gc->n, &rb) != 0) return -1;
  gc->w_stride = (size_t)rb;
  enum act_format f = kernel_act_format(type);
  size_t ab = kernel_act_row_bytes(f, gc->n);
  size_t unit = f == ACT_Q8 ? sizeof(struct act_q8) : f == ACT_Q8K ? sizeof(struct act_q8k) : 4;
  gc->a_stride = ab + unit;
  gc->w = malloc(gc->w_stride * (size_t)gc->rows);
  gc->wf = malloc(sizeof(float) * (size_t)(gc->n * gc->rows));
  gc->x = malloc(sizeof(float) * (size_t)(gc->n * ncols));
  gc->a = calloc((size_t)ncols, gc->a_stride);
  float *tmp = malloc(sizeof(float) * (size_t)gc->n);
  if (!gc->w || !gc->wf || !gc->x || !gc->a || !tmp) {
    free(tmp);
    return -1;
  }
  for (int64_t r = 0; r < gc->rows; r++) {
    for (int64_t i = 0; i < gc->n; i++) tmp[i] = rng_normal() * 0.05f;
    if (ggml_quantize_ref(type, tmp, gc->w + r * gc->w_stride, gc->n) != 0 ||
        ggml_dequantize_ref(type, gc->w + r * gc->w_stride, gc->wf + r * gc->n, gc->n) != 0) {
      free(tmp);
      return -1;
    }
  }
  free(tmp);
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  for (int64_t c = 0; c < ncols; c++) {
    for (int64_t i = 0; i < gc->n; i++) gc->x[c * gc->n + i] = rng_normal();
    quantize_act(sc, f, gc->x + c * gc->n, gc->a + c * gc->a_stride, gc->n);
  }
  return 0;
}

static void case_free(struct gemm_case *gc) {
  free(gc->w);
  free(gc->wf);
  free(gc->x);
  free(gc->a);
}

static int case_make(struct gemm_case *gc, uint32_t type, int mult, int64_t ncols) {
  return case_make_rows(gc, type, mult, ncols, 37, 3, 34);
}

static float *run_gemm(const struct kernel_ops *ops, const struct gemm_case *gc) {
  size_t cells = (size_t)(gc->out_stride * gc->ncols);
  float *out = malloc(cells * sizeof(float));
  if (!out) return NULL;
  for (size_t i = 0; i < cells; i++) out[i] = NAN;
  ops->gemm[gc->type](gc->n, gc->w, gc->w_stride, gc->r0, gc->r1, gc->a, gc->a_stride,
                      gc->ncols, out, gc->out_stride);
  return out;
}

/* Checks NaN-untouched outside [r0, r1) and finite inside; returns the count
 * of bad cells. */
static int check_cells(const struct gemm_case *gc, const float *out, const char *what) {
  int bad = 0;
  for (int64_t c = 0; c < gc->ncols; c++)
    for (int64_t r = 0; r < gc->out_stride; r++) {
      float v = out[c * gc->out_stride + r];
      bool inside = r >= gc->r0 && r < gc->r1;
      if (inside ? !isfinite(v) : !isnan(v)) bad++;
    }
  CHECK_MSG(bad == 0, "%s type %s ncols %lld: %d cells wrong (NaN/finite)", what,
            ggml_type_get(gc->type)->name, (long long)gc->ncols, bad);
  return bad;
}

static double sum_abs_terms(const struct gemm_case *gc, int64_t r, int64_t c) {
  double s = 0.0;
  for (int64_t i = 0; i < gc->n; i++)
    s += fabs((double)gc->wf[r * gc->n + i] * gc->x[c * gc->n + i]);
  return s;
}

/* Scalar gemm vs float64 dot of the dequantized row with the unquantized
 * activation, within the activation-quantization bound. */
static void test_scalar_vs_float64(void) {
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  CHECK(sc != NULL);
  if (!sc) return;
  for (size_t t = 0; t < N_TYPES; t++) {
    struct gemm_case gc;
    if (case_make(&gc, gemm_types[t], 5, 3) != 0) {
      CHECK_MSG(0, "case_make %s", ggml_type_get(gemm_types[t])->name);
      continue;
    }
    float *out = run_gemm(sc, &gc);
    CHECK(out != NULL);
    if (out) {
      check_cells(&gc, out, "scalar");
      enum act_format f = kernel_act_format(gc.type);
      int worst_ok = 1;
      for (int64_t c = 0; c < gc.ncols; c++)
        for (int64_t r = gc.r0; r < gc.r1; r++) {
          double exact = 0.0, bound = 0.0;
          const uint8_t *arow = gc.a + c * gc.a_stride;
          for (int64_t i = 0; i < gc.n; i++) {
            double wv = gc.wf[r * gc.n + i];
            exact += wv * gc.x[c * gc.n + i];
            bound += fabs(wv) * act_half_step(f, arow, i);
          }
          bound = bound * (1.0 + 1e-6) + 1e-5 * sum_abs_terms(&gc, r, c) + 1e-30;
          double got = out[c * gc.out_stride + r];
          if (!(fabs(got - exact) <= bound)) {
            if (worst_ok)
              CHECK_MSG(0, "scalar %s r %lld c %lld: %.9g vs exact %.9g (bound %.3g)",
                        ggml_type_get(gc.type)->name, (long long)r, (long long)c, got, exact,
                        bound);
            worst_ok = 0;
          }
        }
      CHECK(worst_ok);
      /* The bound is not vacuous: quantized activations do move the result. */
      if (f != ACT_F32) {
        double exact = 0.0, bound = 0.0, sabs = sum_abs_terms(&gc, gc.r0, 0);
        for (int64_t i = 0; i < gc.n; i++) {
          exact += (double)gc.wf[gc.r0 * gc.n + i] * gc.x[i];
          bound += fabs(gc.wf[gc.r0 * gc.n + i]) * act_half_step(f, gc.a, i);
        }
        CHECK_MSG(bound < 0.05 * sabs, "%s bound %.3g vs sum|terms| %.3g",
                  ggml_type_get(gc.type)->name, bound, sabs);
      }
    }
    free(out);
    case_free(&gc);
  }
}

/* out (a path's gemm) against ref (the scalar gemm's) on gc, within 1e-5 of
 * each cell's sum of |terms|; cells outside [r0, r1) must stay NaN. */
static void check_vs_scalar(const struct gemm_case *gc, const float *out, const float *ref,
                            const char *path, const char *data) {
  if (check_cells(gc, out, path) != 0) return;
  int bad = 0;
  for (int64_t c = 0; c < gc->ncols; c++)
    for (int64_t r = gc->r0; r < gc->r1; r++) {
      double tol = 1e-5 * sum_abs_terms(gc, r, c) + 1e-30;
      double g = out[c * gc->out_stride + r], e = ref[c * gc->out_stride + r];
      if (!(fabs(g - e) <= tol)) {
        if (!bad)
          CHECK_MSG(0, "%s %s (%s data) ncols %lld r %lld c %lld: %.9g vs scalar %.9g (tol %.3g)",
                    path, ggml_type_get(gc->type)->name, data, (long long)gc->ncols,
                    (long long)r, (long long)c, g, e, tol);
        bad++;
      }
    }
  CHECK(bad == 0);
}

/* Every path's gemm vs the scalar gemm, ncols 1, 3, 5, 8, 13. */
static void test_paths_vs_scalar(void) {
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  /* (ncols, blocks per row): odd widths, and widths of whole 8-block groups
   * for the decode kernels that need them (kernels_vbmi.c: n % 256 == 0). */
  static const struct {
    int64_t ncols;
    int mult;
  } shapes[] = {{1, 7}, {3, 3}, {5, 7}, {8, 3}, {13, 7}, {1, 8}, {1, 16}, {1, 40}, {2, 8}, {3, 40}};
  int paths_run = 0;
  for (size_t p = 1; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    paths_run++;
    CHECK_STR(ops->name, kernel_path_name(paths[p]));
    CHECK_EQ_INT(ops->path, paths[p]);
    for (size_t t = 0; t < N_TYPES; t++)
      for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        struct gemm_case gc;
        if (case_make(&gc, gemm_types[t], shapes[k].mult, shapes[k].ncols) != 0) {
          CHECK_MSG(0, "case_make");
          continue;
        }
        CHECK(ops->gemm[gc.type] != NULL);
        float *ref = run_gemm(sc, &gc);
        float *out = ops->gemm[gc.type] ? run_gemm(ops, &gc) : NULL;
        if (ref && out) check_vs_scalar(&gc, out, ref, ops->name, "random");
        free(ref);
        free(out);
        case_free(&gc);
      }
  }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && kset_allows("avx2")) CHECK(paths_run >= 1);
#endif
  if (paths_run == 0) TM_SKIP("no SIMD table: %s", kset_why_not("avx2"));
}

/* A decode row's value does not depend on the range it is computed in: the
 * engine cuts matrices into chunks by thread count and CPU, and promises the
 * same logits whatever the cut. Decode kernels take rows in groups (four row
 * streams) and finish the range one row at a time, so every row computed in
 * one call over [r0, r1) must have the bits it has alone ([r, r + 1)). */
/* One kernel table's decode of `type` rows, alone and in one range. */
static void check_rows_independent(const struct kernel_ops *ops, const char *name, uint32_t type,
                                   int mult) {
  struct gemm_case gc;
  if (case_make(&gc, type, mult, 1) != 0) {
    CHECK_MSG(0, "case_make");
    return;
  }
  float *full = run_gemm(ops, &gc);
  float *one = malloc(sizeof(float) * (size_t)gc.out_stride);
  int differ = 0;
  for (int64_t r = gc.r0; full && one && r < gc.r1; r++) {
    ops->gemm[gc.type](gc.n, gc.w, gc.w_stride, r, r + 1, gc.a, gc.a_stride, 1, one,
                       gc.out_stride);
    if (memcmp(&one[r], &full[r], sizeof(float)) != 0) differ++;
  }
  CHECK_MSG(full && one && differ == 0, "%s %s n %lld: %d of %lld rows differ alone from in one range",
            name, ggml_type_get(gc.type)->name, (long long)gc.n, differ,
            (long long)(gc.r1 - gc.r0));
  free(full);
  free(one);
  case_free(&gc);
}

static void test_decode_rows_independent_of_range(void) {
  static const int mults[] = {7, 8, 16};
  for (size_t p = 0; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    for (size_t t = 0; t < N_TYPES; t++)
      for (size_t k = 0; k < sizeof mults / sizeof mults[0]; k++)
        check_rows_independent(ops, ops->name, gemm_types[t], mults[k]);
  }
}

/* The VNNI path's Q4_K and Q5_K decode has two kernels, chosen by vendor
 * (kernels.c): both are tested on whatever CPU runs the tests, against the
 * scalar gemm and for range independence. */
static void test_vnni_kquant_variants(void) {
#if defined(__x86_64__)
  const struct kernel_ops *base = kernels_get(KERNEL_AVX512);
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  if (!base || !kernels_get(KERNEL_AVX512_VNNI)) TM_SKIP("no AVX-512 VNNI table: %s", kset_why_not("vnni"));
  struct kernel_ops variant[2];
  variant[0] = *base;
  kernels_fill_avx512_vnni(&variant[0]);
  variant[1] = variant[0];
  kernels_fill_kquant_lanes(&variant[1]);
  CHECK(variant[0].gemm[GGML_TYPE_Q4_K] != variant[1].gemm[GGML_TYPE_Q4_K]);
  CHECK(variant[0].gemm[GGML_TYPE_Q5_K] != variant[1].gemm[GGML_TYPE_Q5_K]);
  const char *names[2] = {"avx512_vnni (madd)", "avx512_vnni (lanes)"};
  const uint32_t types[2] = {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K};
  static const int mults[] = {1, 7, 8, 16};
  for (int v = 0; v < 2; v++)
    for (int t = 0; t < 2; t++)
      for (size_t k = 0; k < sizeof mults / sizeof mults[0]; k++) {
        struct gemm_case gc;
        if (case_make(&gc, types[t], mults[k], 1) != 0) {
          CHECK_MSG(0, "case_make");
          continue;
        }
        float *ref = run_gemm(sc, &gc);
        float *out = run_gemm(&variant[v], &gc);
        if (ref && out) {
          check_cells(&gc, out, names[v]);
          check_vs_scalar(&gc, out, ref, names[v], "random");
        }
        free(ref);
        free(out);
        case_free(&gc);
        check_rows_independent(&variant[v], names[v], types[t], mults[k]);
      }
#else
  TM_SKIP("the VNNI kernels are x86 code");
#endif
}

/* The integer kernels' worst case for 16-bit intermediates: every weight at
 * its largest unsigned (or signed) value against activations all +127 or
 * all -127 (the AVX2 paths add maddubs pairs in i16; a wrap there is off by
 * 65536 units, far beyond the tolerance). Blocks are all-ones bytes with
 * their fp16 scale fields set to 2^-7 (Q8_0: weights +127 instead of -1). */
static void test_saturation_extremes(void) {
  static const uint32_t qtypes[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q4_1,
                                    GGML_TYPE_Q5_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
  static const int64_t ncols_list[] = {1, 4, 8}; /* decode, and prompts below and above min_cols */
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  const uint16_t h = 0x2000; /* fp16 2^-7 */
  int cases = 0;
  for (size_t t = 0; t < sizeof qtypes / sizeof qtypes[0]; t++)
    for (size_t k = 0; k < sizeof ncols_list / sizeof ncols_list[0]; k++) {
      struct gemm_case gc;
      if (case_make(&gc, qtypes[t], 8, ncols_list[k]) != 0) {
        CHECK_MSG(0, "case_make");
        continue;
      }
      const uint32_t type = gc.type;
      const struct ggml_type_info *ti = ggml_type_get(type);
      const int64_t nb = gc.n / ti->block_size;
      for (int64_t r = 0; r < gc.rows; r++) {
        uint8_t *row = gc.w + (size_t)r * gc.w_stride;
        memset(row, type == GGML_TYPE_Q8_0 ? 0x7f : 0xff, gc.w_stride);
        for (int64_t b = 0; b < nb; b++) {
          uint8_t *blk = row + (size_t)b * ti->type_size;
          const size_t d_at = type == GGML_TYPE_Q6_K ? 208 : 0;
          memcpy(blk + d_at, &h, 2);
          /* m (Q4_1, Q5_1) or dmin (Q4_K, Q5_K) */
          if (type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1 || type == GGML_TYPE_Q4_K ||
              type == GGML_TYPE_Q5_K)
            memcpy(blk + 2, &h, 2);
        }
        CHECK(ggml_dequantize_ref(type, row, gc.wf + r * gc.n, gc.n) == 0);
      }
      enum act_format f = kernel_act_format(type);
      for (int64_t c = 0; c < gc.ncols; c++) {
        for (int64_t i = 0; i < gc.n; i++) gc.x[c * gc.n + i] = (c & 1) ? -1.0f : 1.0f;
        quantize_act(sc, f, gc.x + c * gc.n, gc.a + c * gc.a_stride, gc.n);
      }
      float *ref = run_gemm(sc, &gc);
      for (size_t p = 1; p < N_PATHS; p++) {
        const struct kernel_ops *ops = kernels_get(paths[p]);
        if (!ops) continue;
        float *out = run_gemm(ops, &gc);
        if (ref && out) {
          check_vs_scalar(&gc, out, ref, ops->name, "extremes");
          cases++;
        }
        free(out);
      }
      free(ref);
      case_free(&gc);
    }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && kset_allows("avx2")) CHECK(cases > 0);
#endif
  if (cases == 0) TM_SKIP("no SIMD table to hold against the scalar one: %s", kset_why_not("avx2"));
}

/* Quantizer bounds, and every path's quantizers give the scalar's bytes. */
static void test_quantize(void) {
  const int64_t n = 256 * 3;
  float *x = malloc(sizeof(float) * n);
  struct act_q8 *q8 = malloc(sizeof(struct act_q8) * (n / 32));
  struct act_q8 *q8b = malloc(sizeof(struct act_q8) * (n / 32));
  struct act_q8k *qk = malloc(sizeof(struct act_q8k) * (n / 256));
  struct act_q8k *qkb = malloc(sizeof(struct act_q8k) * (n / 256));
  CHECK(x && q8 && q8b && qk && qkb);
  if (!x || !q8 || !q8b || !qk || !qkb) goto done;
  for (int64_t i = 0; i < n; i++) x[i] = rng_normal() * (i < 256 ? 100.0f : 1.0f);
  for (int64_t i = 64; i < 96; i++) x[i] = 0.0f; /* an all-zero block: d = 0 */
  x[300] = 1e-3f * x[300];
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  sc->quantize_q8(x, q8, n);
  sc->quantize_q8k(x, qk, n);
  int bad = 0;
  for (int64_t b = 0; b < n / 32; b++) {
    float amax = 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
    /* llama.cpp's rounding: q from 127/amax, the scale kept in fp16 */
    float d_true = amax / 127.0f;
    if (q8[b].d != tm_fp16_to_fp32(tm_fp32_to_fp16(d_true))) bad++;
    for (int i = 0; i < 32; i++) {
      double err = fabs((double)x[b * 32 + i] - (double)q8[b].d * q8[b].q[i]);
      double bound = d_true * 0.5 * (1 + 1e-6) + 127.0 * fabs((double)q8[b].d - d_true);
      if (!(err <= bound)) bad++;
      if (q8[b].q[i] < -127) bad++;
      sum += q8[b].q[i];
    }
    if (q8[b].s != q8[b].d * (float)sum) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(q8[2].d == 0.0f && q8[2].q[5] == 0 && q8[2].s == 0.0f);
  bad = 0;
  for (int64_t b = 0; b < n / 256; b++) {
    float amax = 0.0f;
    for (int i = 0; i < 256; i++) amax = fmaxf(amax, fabsf(x[b * 256 + i]));
    /* llama.cpp's q8_K: d = 1 / (-127 / max), max the signed extreme */
    float max = 0.0f;
    for (int i = 0; i < 256; i++)
      if (fabsf(x[b * 256 + i]) == amax) {
        max = x[b * 256 + i];
        break;
      }
    if (qk[b].d != 1.0f / (-127.0f / max)) bad++;
    for (int g = 0; g < 16; g++) {
      int s = 0;
      for (int i = 0; i < 16; i++) s += qk[b].q[g * 16 + i];
      if (qk[b].bsums[g] != s) bad++;
    }
    for (int i = 0; i < 256; i++) {
      double err = fabs((double)x[b * 256 + i] - (double)qk[b].d * qk[b].q[i]);
      if (!(err <= fabs(qk[b].d) * 0.5 * (1 + 1e-6))) bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  for (size_t p = 1; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    memset(q8b, 0x55, sizeof(struct act_q8) * (n / 32));
    memset(qkb, 0x55, sizeof(struct act_q8k) * (n / 256));
    ops->quantize_q8(x, q8b, n);
    ops->quantize_q8k(x, qkb, n);
    CHECK_MSG(memcmp(q8, q8b, sizeof(struct act_q8) * (n / 32)) == 0, "%s quantize_q8 bytes",
              ops->name);
    CHECK_MSG(memcmp(qk, qkb, sizeof(struct act_q8k) * (n / 256)) == 0, "%s quantize_q8k bytes",
              ops->name);
  }
done:
  free(x);
  free(q8);
  free(q8b);
  free(qk);
  free(qkb);
}

/* f16 helpers on every path: conversion exact vs tm_fp32_to_fp16, dot and
 * axpy vs float64 within rounding. n odd to exercise tails. */
static void test_f16_helpers(void) {
  const int64_t n = 203;
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
  float *y0 = malloc(sizeof(float) * n);
  uint16_t *h = malloc(2 * n), *h2 = malloc(2 * n);
  CHECK(x && y && y0 && h && h2);
  if (!x || !y || !y0 || !h || !h2) goto done;
  for (int64_t i = 0; i < n; i++) {
    float scale = (i % 5 == 0) ? 1e-6f : (i % 7 == 0) ? 3e4f : 1.0f; /* subnormal, large */
    x[i] = rng_normal() * scale;
    y0[i] = rng_normal();
    h[i] = tm_fp32_to_fp16(x[i]);
  }
  x[1] = 1e6f; /* overflows to inf in f16 */
  h[1] = tm_fp32_to_fp16(x[1]);
  for (size_t p = 0; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    memset(h2, 0, 2 * n);
    ops->f32_to_f16(x, h2, n);
    CHECK_MSG(memcmp(h, h2, 2 * n) == 0, "%s f32_to_f16", ops->name);
    uint16_t hk[203];
    for (int64_t i = 0; i < n; i++) hk[i] = tm_fp32_to_fp16(y0[i]);
    double exact = 0.0, sabs = 0.0;
    for (int64_t i = 0; i < n; i++) {
      exact += (double)tm_fp16_to_fp32(hk[i]) * x[i];
      sabs += fabs((double)tm_fp16_to_fp32(hk[i]) * x[i]);
    }
    float d = ops->dot_f16_f32(hk, x, n);
    CHECK_NEAR(d, exact, 1e-5 * sabs);
    memcpy(y, y0, sizeof(float) * n);
    float a = 0.37f;
    ops->axpy_f16(y, a, hk, n);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      double e = y0[i] + (double)a * tm_fp16_to_fp32(hk[i]);
      double tol = 2.4e-7 * (fabs(y0[i]) + fabs(a * tm_fp16_to_fp32(hk[i]))) + 1e-30;
      if (!(fabs(y[i] - e) <= tol)) bad++;
    }
    CHECK_MSG(bad == 0, "%s axpy_f16: %d bad", ops->name, bad);
  }
done:
  free(x);
  free(y);
  free(y0);
  free(h);
  free(h2);
}

/* get_row is the reference dequantizer, bit for bit, on every path. */
/* The F16 accumulator helpers (flash-attention style): each step rounds to
 * f16; every path within one f16 ulp of the exact f64 step, and y == 0 scaled
 * stays 0. */
static void test_f16_accumulator(void) {
  enum { N = 77 };
  uint16_t y0[N], v[N], y[N];
  for (int i = 0; i < N; i++) {
    y0[i] = tm_fp32_to_fp16((float)rng_normal() * 3.0f);
    v[i] = tm_fp32_to_fp16((float)rng_normal());
  }
  for (size_t p = 0; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    CHECK(ops->scale_f16 && ops->mad_f16);
    if (!ops->scale_f16 || !ops->mad_f16) continue;
    int bad = 0;
    memcpy(y, y0, sizeof y);
    ops->mad_f16(y, 0.37f, v, N);
    for (int i = 0; i < N; i++) {
      double want = (double)tm_fp16_to_fp32(y0[i]) + 0.37 * tm_fp16_to_fp32(v[i]);
      double ulp = fabs(want) * (1.0 / 1024) + 6e-8;
      if (!(fabs(tm_fp16_to_fp32(y[i]) - want) <= ulp)) bad++;
    }
    memcpy(y, y0, sizeof y);
    ops->scale_f16(y, 0.25f, N);
    for (int i = 0; i < N; i++) /* a power of two: exact */
      if (tm_fp16_to_fp32(y[i]) != tm_fp16_to_fp32(y0[i]) * 0.25f) bad++;
    memset(y, 0, sizeof y);
    ops->scale_f16(y, 0.0f, N);
    for (int i = 0; i < N; i++) bad += y[i] != 0;
    CHECK_MSG(bad == 0, "%s: %d f16 accumulator cells off", ops->name, bad);
  }
}

static void test_get_row(void) {
  for (size_t t = 0; t < N_TYPES; t++) {
    uint32_t type = gemm_types[t];
    int64_t n = odd_n(type, 3);
    uint64_t rb = 0;
    CHECK(ggml_row_bytes(type, (uint64_t)n, &rb) == 0);
    float *x = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    float *got = malloc(sizeof(float) * n);
    void *row = malloc(rb);
    CHECK(x && ref && got && row);
    if (x && ref && got && row) {
      for (int64_t i = 0; i < n; i++) x[i] = rng_normal();
      CHECK(ggml_quantize_ref(type, x, row, n) == 0);
      CHECK(ggml_dequantize_ref(type, row, ref, n) == 0);
      for (size_t p = 0; p < N_PATHS; p++) {
        const struct kernel_ops *ops = kernels_get(paths[p]);
        if (!ops) continue;
        memset(got, 0, sizeof(float) * n);
        CHECK_EQ_INT(ops->get_row(type, row, got, n), 0);
        CHECK_MSG(memcmp(ref, got, sizeof(float) * n) == 0, "%s get_row %s", ops->name,
                  ggml_type_get(type)->name);
      }
    }
    free(x);
    free(ref);
    free(got);
    free(row);
  }
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  float o[256];
  uint8_t blk[256] = {0};
  CHECK_EQ_INT(sc->get_row(GGML_TYPE_Q2_K, blk, o, 256), -1); /* no dequantizer */
}


/* A shared decode chunk (gemv_share, kernels.h): whoever computes which rows,
 * every row in [r0, r1) comes out once, with the bits the plain kernel gives
 * it, and nothing outside is written: the owner alone; helpers first (each
 * takes the back half of what is left, until too little is left), then the
 * owner; and an owner and a helper on two threads, many times over. */
struct share_run {
  const struct kernel_ops *ops;
  const struct gemm_case *gc;
  float *out;
  struct gemv_share *sh;
  bool owner;
  int64_t rows; /* computed by this side */
};
static void *share_side(void *arg) {
  struct share_run *s = arg;
  const struct gemm_case *gc = s->gc;
  for (;;) {
    int64_t r = s->ops->gemv_share[gc->type](gc->n, gc->w, gc->w_stride, gc->r0, gc->r1, gc->a,
                                              s->out, s->sh, s->owner);
    s->rows += r;
    if (s->owner || r == 0) return NULL;
  }
}
static int share_differs(const struct gemm_case *gc, const float *out, const float *ref) {
  int bad = 0;
  for (int64_t r = 0; r < gc->out_stride; r++)
    if (memcmp(&out[r], &ref[r], sizeof(float)) != 0 && !(isnan(out[r]) && isnan(ref[r]))) bad++;
  return bad;
}
static void test_gemv_share(void) {
  int tested = 0;
  for (size_t p = 0; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    for (size_t t = 0; t < N_TYPES; t++) {
      const uint32_t type = gemm_types[t];
      if (!ops->gemv_share[type]) continue;
      static const int mults[] = {8, 16, 40};
      for (size_t k = 0; k < sizeof mults / sizeof mults[0]; k++) {
        struct gemm_case gc;
        /* 993 rows from row 5: q = 248 rows a stream and one row left over */
        if (case_make_rows(&gc, type, mults[k], 1, 1000, 5, 998) != 0) {
          CHECK_MSG(0, "case_make_rows");
          continue;
        }
        if (gc.n > ops->gemv_share_max_n) {
          case_free(&gc);
          continue;
        }
        tested++;
        float *ref = run_gemm(ops, &gc);
        float *out = malloc(sizeof(float) * (size_t)gc.out_stride);
        struct gemv_share *sh = aligned_alloc(64, 64);
        if (!ref || !out || !sh) {
          CHECK_MSG(0, "out of memory");
          free(ref), free(out), free(sh);
          case_free(&gc);
          continue;
        }
        const char *tn = ggml_type_get(type)->name;
        /* the owner alone */
        for (int64_t i = 0; i < gc.out_stride; i++) out[i] = NAN;
        gemv_share_init(sh, gc.r0, gc.r1);
        struct share_run own = {ops, &gc, out, sh, true, 0};
        share_side(&own);
        CHECK_MSG(own.rows == gc.r1 - gc.r0 && share_differs(&gc, out, ref) == 0,
                  "%s %s n %lld owner alone: %lld rows, %d cells differ", ops->name, tn,
                  (long long)gc.n, (long long)own.rows, share_differs(&gc, out, ref));
        /* helpers first, then the owner */
        for (int64_t i = 0; i < gc.out_stride; i++) out[i] = NAN;
        gemv_share_init(sh, gc.r0, gc.r1);
        struct share_run help = {ops, &gc, out, sh, false, 0};
        share_side(&help);
        own.rows = 0;
        share_side(&own);
        CHECK_MSG(help.rows > 0 && help.rows % 4 == 0, "%s %s: the helper took %lld rows",
                  ops->name, tn, (long long)help.rows);
        CHECK_MSG(help.rows + own.rows == gc.r1 - gc.r0 && share_differs(&gc, out, ref) == 0,
                  "%s %s n %lld helper then owner: %lld + %lld rows, %d cells differ", ops->name,
                  tn, (long long)gc.n, (long long)help.rows, (long long)own.rows,
                  share_differs(&gc, out, ref));
        /* both at once on two threads */
        int bad_runs = 0, helped = 0;
        for (int rep = 0; rep < 200; rep++) {
          for (int64_t i = 0; i < gc.out_stride; i++) out[i] = NAN;
          gemv_share_init(sh, gc.r0, gc.r1);
          struct share_run a = {ops, &gc, out, sh, true, 0}, b = {ops, &gc, out, sh, false, 0};
          pthread_t th;
          if (pthread_create(&th, NULL, share_side, &b) != 0) {
            bad_runs++;
            break;
          }
          share_side(&a);
          pthread_join(th, NULL);
          helped += b.rows > 0;
          if (a.rows + b.rows != gc.r1 - gc.r0 || share_differs(&gc, out, ref) != 0) bad_runs++;
        }
        CHECK_MSG(bad_runs == 0, "%s %s n %lld: %d of 200 two-thread runs wrong", ops->name, tn,
                  (long long)gc.n, bad_runs);
        (void)helped; /* how often the helper got rows depends on scheduling */
        free(ref), free(out), free(sh);
        case_free(&gc);
      }
    }
  }
#if defined(__x86_64__)
  /* the VBMI path shares Q4_0 chunks on any CPU with AVX-512 VBMI */
  if (__builtin_cpu_supports("avx512vbmi") && kset_allows("vbmi") && kernels_get(KERNEL_AVX512_VNNI))
    CHECK(tested > 0);
#endif
  if (tested == 0) TM_SKIP("no table here shares decode chunks (the VBMI kernels: %s)",
                           kset_why_not("vbmi"));
}

/* The Q4_0 and Q8_0 prefill on AMX tiles (kernels_amx.c), where this CPU and
 * OS have them: batches of 16 columns and more, with a tail of columns past
 * the last 16 (the VNNI entry's), panels cut short by the range's ends, and
 * rows of more blocks than one K segment (32), against the scalar gemm, NaN
 * outside the range. Also: the table says it (prefill_tiles), and
 * TOKMETER_NO_AMX is not set in the test environment. */
static void test_amx_prefill(void) {
#if defined(__x86_64__)
  const struct kernel_ops *vnni = kernels_get(KERNEL_AVX512_VNNI);
  if (!vnni || !kernels_amx_usable() || !kset_allows("amx")) {
    /* a table without the tiles must not say it has them */
    if (vnni) CHECK(vnni->prefill_tiles == NULL);
    TM_SKIP("no AMX int8 tiles: %s", kset_why_not("amx"));
  }
  CHECK_STR(vnni->prefill_tiles, "amx_int8");
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  static const struct {
    int64_t ncols, rows, r0, r1;
    int mult;
  } shapes[] = {{16, 37, 3, 34, 7},  {17, 37, 0, 37, 1},  {35, 40, 5, 40, 33},
                {48, 16, 0, 16, 40}, {16, 70, 17, 69, 64}, {31, 21, 2, 3, 3}};
  const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0};
  for (size_t t = 0; t < 2; t++)
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
      struct gemm_case gc;
      if (case_make_rows(&gc, types[t], shapes[k].mult, shapes[k].ncols, shapes[k].rows,
                         shapes[k].r0, shapes[k].r1) != 0) {
        CHECK_MSG(0, "case_make");
        continue;
      }
      float *ref = run_gemm(sc, &gc);
      float *out = run_gemm(vnni, &gc);
      if (ref && out) check_vs_scalar(&gc, out, ref, "amx_int8", "random");
      free(ref);
      free(out);
      case_free(&gc);
    }
#endif
}

/* The few-column products (kernels.h gemm_few: a batched decode step): each
 * column's outputs have exactly the bits of the table's decode of that
 * column alone, for 2 .. 15 columns (groups of up to eight, evened out), rows
 * of 8-block multiples (the fast path) and of other widths (the fallback),
 * rows so wide that a group holds fewer columns (40 and 64 octets), odd row
 * counts (the two-row loop's last row) and a range not starting at 0; and
 * within the scalar tolerance, NaN outside the range. Also: where this CPU
 * has AVX-512 VBMI and the set allows it, the VNNI table has the Q4_0 one. */
static void test_few_columns_are_decodes(void) {
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  static const struct {
    int64_t ncols, rows, r0, r1;
    int mult;
  } shapes[] = {{2, 37, 3, 34, 8},   {3, 37, 3, 34, 32},  {7, 21, 0, 21, 16},
                {8, 40, 5, 38, 24},  {13, 37, 3, 34, 8},  {15, 9, 1, 8, 32},
                {5, 37, 3, 34, 7},   {9, 20, 2, 19, 320}, {13, 6, 0, 5, 512},
                {4, 3, 2, 3, 8}};
  int tables_with = 0;
  for (size_t p = 0; p < N_PATHS; p++) {
    const struct kernel_ops *ops = kernels_get(paths[p]);
    if (!ops) continue;
    for (size_t t = 0; t < N_TYPES; t++) {
      const uint32_t type = gemm_types[t];
      if (!ops->gemm_few[type]) continue;
      tables_with++;
      for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        struct gemm_case gc;
        if (case_make_rows(&gc, type, shapes[k].mult, shapes[k].ncols, shapes[k].rows,
                           shapes[k].r0, shapes[k].r1) != 0) {
          CHECK_MSG(0, "case_make");
          continue;
        }
        const size_t cells = (size_t)(gc.out_stride * gc.ncols);
        float *few = malloc(cells * sizeof(float)), *one = malloc(cells * sizeof(float));
        float *ref = run_gemm(sc, &gc);
        if (few && one && ref) {
          for (size_t i = 0; i < cells; i++) few[i] = one[i] = NAN;
          ops->gemm_few[type](gc.n, gc.w, gc.w_stride, gc.r0, gc.r1, gc.a, gc.a_stride, gc.ncols,
                              few, gc.out_stride);
          for (int64_t c = 0; c < gc.ncols; c++)
            ops->gemm[type](gc.n, gc.w, gc.w_stride, gc.r0, gc.r1, gc.a + (size_t)c * gc.a_stride,
                            gc.a_stride, 1, one + c * gc.out_stride, gc.out_stride);
          check_vs_scalar(&gc, few, ref, ops->name, "few columns");
          int differ = 0;
          for (int64_t c = 0; c < gc.ncols; c++)
            for (int64_t r = gc.r0; r < gc.r1; r++)
              differ += memcmp(&few[c * gc.out_stride + r], &one[c * gc.out_stride + r],
                               sizeof(float)) != 0;
          CHECK_MSG(differ == 0, "%s %s n %lld ncols %lld: %d outputs differ from the columns' decodes",
                    ops->name, ggml_type_get(type)->name, (long long)gc.n, (long long)gc.ncols,
                    differ);
        } else {
          CHECK_MSG(0, "out of memory");
        }
        free(few);
        free(one);
        free(ref);
        case_free(&gc);
      }
    }
  }
#if defined(__x86_64__)
  const struct kernel_ops *vnni = kernels_get(KERNEL_AVX512_VNNI);
  if (vnni && __builtin_cpu_supports("avx512vbmi") && kset_allows("vbmi"))
    CHECK(vnni->gemm_few[GGML_TYPE_Q4_0] != NULL);
#endif
  if (tables_with == 0) TM_SKIP("no table has a few-column kernel: %s", kset_why_not("vbmi"));
}

static void test_dispatch(void) {
  CHECK_STR(kernel_path_name(KERNEL_SCALAR), "scalar");
  CHECK_STR(kernel_path_name(KERNEL_AVX512_VNNI), "avx512_vnni");
  const struct kernel_ops *autop = kernels_get(KERNEL_AUTO);
  CHECK(autop != NULL);
  CHECK(kernels_get(KERNEL_SCALAR) != NULL);
  CHECK(kernels_get(KERNEL_PATH_COUNT) == NULL);
#if defined(__x86_64__)
  CHECK(kernels_get(KERNEL_NEON) == NULL);
  enum kernel_path best = kernels_best_for_cpu();
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    CHECK_EQ_INT(best, KERNEL_AVX512_VNNI);
  else if (__builtin_cpu_supports("avx2"))
    CHECK(best == KERNEL_AVX2 || best == KERNEL_AVX512);
  /* x86 builds contain every x86 path: AUTO is the best the CPU offers, or
   * the set under test (TOKMETER_KERNELS, which tm_test checked it runs). */
  const char *f = kernels_forced_name();
  enum kernel_path want = best;
  if (f && kset_rank(f) >= 0) {
    static const enum kernel_path of_set[] = {KERNEL_SCALAR, KERNEL_AVX2, KERNEL_AVX512,
                                              KERNEL_AVX512_VNNI, KERNEL_AVX512_VNNI,
                                              KERNEL_AVX512_VNNI};
    want = of_set[kset_rank(f)];
    /* nothing wider than the set is handed out */
    for (enum kernel_path p = want + 1; p <= KERNEL_AVX512_VNNI; p++) CHECK(kernels_get(p) == NULL);
  }
  if (autop) CHECK_EQ_INT(autop->path, want);
  if (autop && kset_allows("avx2") && __builtin_cpu_supports("avx2")) CHECK(autop->path != KERNEL_SCALAR);
#endif
  for (size_t t = 0; t < N_TYPES; t++) CHECK(kernels_supports(gemm_types[t]));
  CHECK(!kernels_supports(GGML_TYPE_Q2_K));
  CHECK(!kernels_supports(GGML_TYPE_COUNT));
  CHECK(!kernels_supports(4));
  CHECK_EQ_INT(kernel_act_format(GGML_TYPE_Q4_0), ACT_Q8);
  CHECK_EQ_INT(kernel_act_format(GGML_TYPE_Q6_K), ACT_Q8K);
  CHECK_EQ_INT(kernel_act_format(GGML_TYPE_BF16), ACT_F32);
  CHECK_EQ_U64(kernel_act_row_bytes(ACT_Q8, 1024), 32 * sizeof(struct act_q8));
  CHECK_EQ_U64(kernel_act_row_bytes(ACT_Q8K, 1024), 4 * sizeof(struct act_q8k));
  CHECK_EQ_U64(kernel_act_row_bytes(ACT_F32, 10), 40);
}

void tm_run_tests(void) {
  TM_RUN(test_dispatch);
  TM_RUN(test_quantize);
  TM_RUN(test_f16_helpers);
  TM_RUN(test_f16_accumulator);
  TM_RUN(test_get_row);
  TM_RUN(test_scalar_vs_float64);
  TM_RUN(test_paths_vs_scalar);
  TM_RUN(test_amx_prefill);
  TM_RUN(test_decode_rows_independent_of_range);
  TM_RUN(test_gemv_share);
  TM_RUN(test_few_columns_are_decodes);
  TM_RUN(test_vnni_kquant_variants);
  TM_RUN(test_saturation_extremes);
}
