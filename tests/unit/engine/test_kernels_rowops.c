/* test_kernels_rowops: attn_row, argmax and sumsq of every path this CPU runs
 * against the scalar reference (kernels_rowops.c), the scalar attn_row
 * against a plain float64 softmax attention, and attn_rows (query heads
 * sharing a KV head, in pairs through the AVX-512 pipeline) and attn_rows_cached
 * bit-identical to attn_row per row on every path. Outputs are NaN-filled first so
 * an element a kernel forgets to write fails. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_impl.h"
#include "engine/kernels.h"
#include "tm_test.h"
#include "util/fp16.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
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

static const enum kernel_path paths[] = {KERNEL_SCALAR, KERNEL_AVX2, KERNEL_AVX512,
                                         KERNEL_AVX512_VNNI, KERNEL_NEON};
#define N_PATHS (sizeof paths / sizeof paths[0])

/* One KV layout: n_pos positions of stride elements, the head at offset off. */
struct kv_case {
  int64_t hd, n_pos;
  size_t stride, off;
};

static void fill_kv(uint16_t *k, uint16_t *v, float *q, const struct kv_case *c, float qscale) {
  for (size_t i = 0; i < (size_t)c->n_pos * c->stride; i++) {
    k[i] = tm_fp32_to_fp16(rng_normal());
    v[i] = tm_fp32_to_fp16(rng_normal());
  }
  for (int64_t i = 0; i < c->hd; i++) q[i] = qscale * rng_normal();
}

/* softmax(q16 . k * scale) . v in double, q rounded to F16 as the kernel does. */
static void attn_f64(const float *q, const uint16_t *k, const uint16_t *v,
                     const struct kv_case *c, float scale, double *out) {
  double *s = malloc((size_t)c->n_pos * sizeof *s);
  double mx = -INFINITY, sum = 0;
  for (int64_t p = 0; p < c->n_pos; p++) {
    double d = 0;
    for (int64_t i = 0; i < c->hd; i++)
      d += (double)tm_fp16_to_fp32(tm_fp32_to_fp16(q[i])) *
           tm_fp16_to_fp32(k[(size_t)p * c->stride + c->off + (size_t)i]);
    s[p] = d * scale;
    if (s[p] > mx) mx = s[p];
  }
  for (int64_t p = 0; p < c->n_pos; p++) sum += (s[p] = exp(s[p] - mx));
  for (int64_t i = 0; i < c->hd; i++) {
    double o = 0;
    for (int64_t p = 0; p < c->n_pos; p++)
      o += s[p] * tm_fp16_to_fp32(v[(size_t)p * c->stride + c->off + (size_t)i]);
    out[i] = o / sum;
  }
  free(s);
}

static void test_attn_row(void) {
  const struct kv_case cases[] = {
      {128, 1, 1024, 0},   {128, 37, 1024, 384}, {64, 200, 256, 64},
      {80, 13, 160, 80},   {24, 5, 48, 24},      {256, 70, 512, 256},
      {128, 300, 128, 0},  {128, 16, 128, 0},   {128, 17, 256, 128},
      {64, 32, 64, 0},     {128, 48, 128, 0},
  };
  const struct kernel_ops *sc = kernels_get(KERNEL_SCALAR);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const struct kv_case *c = &cases[ci];
    size_t cells = (size_t)c->n_pos * c->stride;
    uint16_t *k = malloc(cells * 2), *v = malloc(cells * 2);
    float *q = malloc((size_t)c->hd * 4), *ref = malloc((size_t)c->hd * 4);
    float *out = malloc((size_t)c->hd * 4);
    double *exact = malloc((size_t)c->hd * 8);
    /* A sharp softmax (large q) exercises the rescaling branch often. */
    fill_kv(k, v, q, c, ci % 2 ? 3.0f : 0.5f);
    float scale = 1.0f / sqrtf((float)c->hd);
    for (int64_t i = 0; i < c->hd; i++) ref[i] = NAN;
    sc->attn_row(q, k + c->off, v + c->off, c->stride, c->n_pos, c->hd, scale, ref);
    attn_f64(q, k, v, c, scale, exact);
    /* The F16 accumulator rounds at every step: error grows like sqrt(n_pos)
     * half-ulps of values of size ~1. */
    double tol_exact = 2e-3 * sqrt((double)c->n_pos) + 1e-3;
    for (int64_t i = 0; i < c->hd; i++)
      CHECK_MSG(fabs(ref[i] - exact[i]) <= tol_exact, "case %zu i %lld: scalar %g vs f64 %g",
                ci, (long long)i, ref[i], exact[i]);
    for (size_t p = 0; p < N_PATHS; p++) {
      const struct kernel_ops *ops = kernels_get(paths[p]);
      if (!ops) continue;
      for (int64_t i = 0; i < c->hd; i++) out[i] = NAN;
      ops->attn_row(q, k + c->off, v + c->off, c->stride, c->n_pos, c->hd, scale, out);
      /* Only the dot product's summation order differs: a few f16 ulps after
       * the accumulator's roundings. */
      for (int64_t i = 0; i < c->hd; i++)
        CHECK_MSG(fabs(out[i] - ref[i]) <= 4e-3 * (1.0 + fabs(ref[i])),
                  "%s case %zu i %lld: %g vs scalar %g", ops->name, ci, (long long)i, out[i],
                  ref[i]);
    }
    free(k), free(v), free(q), free(ref), free(out), free(exact);
  }
}

static void test_attn_rows(void) {
  /* hd: fused (64, 128), not fused (80: no pair kernel, 256: too wide, 24);
   * n_pos across the 128-position chunks of the wide row and the 16-position
   * blocks of the pipeline (16, 17, 32, 48: one, a block and one, whole
   * blocks); nq odd and even. */
  const struct kv_case cases[] = {
      {128, 1, 1024, 0}, {128, 37, 1024, 384}, {64, 200, 256, 64}, {80, 13, 160, 80},
      {256, 70, 512, 256}, {24, 5, 48, 24}, {128, 300, 128, 0}, {128, 16, 128, 0},
      {128, 17, 256, 128}, {64, 32, 64, 0}, {128, 48, 128, 0},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const struct kv_case *c = &cases[ci];
    size_t cells = (size_t)c->n_pos * c->stride;
    uint16_t *k = malloc(cells * 2), *v = malloc(cells * 2);
    const int max_q = 5;
    const size_t qs = (size_t)c->hd + 3; /* a stride wider than a row */
    float *q = malloc(sizeof(float) * qs * max_q);
    float *one = malloc(sizeof(float) * qs * max_q), *many = malloc(sizeof(float) * qs * max_q);
    fill_kv(k, v, q, c, ci % 2 ? 3.0f : 0.5f);
    for (size_t i = 0; i < qs * max_q; i++) q[i] = (ci % 2 ? 3.0f : 0.5f) * rng_normal();
    float scale = 1.0f / sqrtf((float)c->hd);
    for (size_t p = 0; p < N_PATHS; p++) {
      const struct kernel_ops *ops = kernels_get(paths[p]);
      if (!ops) continue;
      for (int nq = 1; nq <= max_q; nq++) {
        for (size_t i = 0; i < qs * max_q; i++) one[i] = many[i] = NAN;
        for (int h = 0; h < nq; h++)
          ops->attn_row(q + h * qs, k + c->off, v + c->off, c->stride, c->n_pos, c->hd, scale,
                        one + h * qs);
        ops->attn_rows(q, qs, nq, k + c->off, v + c->off, c->stride, c->n_pos, c->hd, scale,
                       many, qs);
        int bad = 0;
        for (int h = 0; h < nq; h++)
          bad += memcmp(one + h * qs, many + h * qs, sizeof(float) * (size_t)c->hd) != 0;
        /* and nothing written between the rows or past the last */
        for (int h = 0; h < max_q; h++)
          for (size_t i = h < nq ? (size_t)c->hd : 0; i < qs; i++) bad += !isnan(many[h * qs + i]);
        CHECK_MSG(bad == 0, "%s case %zu nq %d: attn_rows differs from attn_row", ops->name, ci,
                  nq);
        /* the variant for rows in cache: the same bits */
        for (size_t i = 0; i < qs * max_q; i++) many[i] = NAN;
        ops->attn_rows_cached(q, qs, nq, k + c->off, v + c->off, c->stride, c->n_pos, c->hd,
                              scale, many, qs);
        bad = 0;
        for (int h = 0; h < nq; h++)
          bad += memcmp(one + h * qs, many + h * qs, sizeof(float) * (size_t)c->hd) != 0;
        for (int h = 0; h < max_q; h++)
          for (size_t i = h < nq ? (size_t)c->hd : 0; i < qs; i++) bad += !isnan(many[h * qs + i]);
        CHECK_MSG(bad == 0, "%s case %zu nq %d: attn_rows_cached differs from attn_row", ops->name,
                  ci, nq);
        /* the variant that prefetches another span on the way (here the V
         * rows, of any length, odd included): the same bits */
        if (ops->attn_rows_next) {
          for (size_t i = 0; i < qs * max_q; i++) many[i] = NAN;
          const size_t next_bytes = (size_t)c->n_pos * c->hd * 2 - (size_t)nq * 7;
          ops->attn_rows_next(q, qs, nq, k + c->off, v + c->off, c->stride, c->n_pos, c->hd,
                              scale, many, qs, v, next_bytes);
          bad = 0;
          for (int h = 0; h < nq; h++)
            bad += memcmp(one + h * qs, many + h * qs, sizeof(float) * (size_t)c->hd) != 0;
          for (int h = 0; h < max_q; h++)
            for (size_t i = h < nq ? (size_t)c->hd : 0; i < qs; i++)
              bad += !isnan(many[h * qs + i]);
          CHECK_MSG(bad == 0, "%s case %zu nq %d: attn_rows_next differs from attn_row",
                    ops->name, ci, nq);
        }
      }
    }
    free(k), free(v), free(q), free(one), free(many);
  }
}

static void test_argmax(void) {
  const int64_t sizes[] = {1, 2, 15, 16, 17, 31, 32, 33, 100, 151936};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    float *x = malloc((size_t)n * sizeof *x);
    for (int trial = 0; trial < 6; trial++) {
      for (int64_t i = 0; i < n; i++) x[i] = rng_normal();
      int64_t want = 0;
      if (trial == 1) { /* ties: the first of equal maxima wins */
        for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 7);
      } else if (trial == 2 && n > 3) { /* NaN never wins */
        x[n / 2] = NAN;
        x[n - 1] = NAN;
      } else if (trial == 3) { /* the maximum in the last element (tail) */
        x[n - 1] = 100.0f;
      } else if (trial == 4) { /* NaN first: index 0, as the scalar loop */
        x[0] = NAN;
      } else if (trial == 5) { /* all equal */
        for (int64_t i = 0; i < n; i++) x[i] = -2.5f;
      }
      for (int64_t i = 1; i < n; i++)
        if (x[i] > x[want]) want = i;
      for (size_t p = 0; p < N_PATHS; p++) {
        const struct kernel_ops *ops = kernels_get(paths[p]);
        if (!ops) continue;
        int64_t got = ops->argmax(x, n);
        CHECK_MSG(got == want, "%s n %lld trial %d: argmax %lld, want %lld", ops->name,
                  (long long)n, trial, (long long)got, (long long)want);
      }
    }
    free(x);
  }
}

/* The greedy pick from per-chunk candidates (argmax_of_chunks, what the
 * output head's job records) equals argmax over the whole row: ties across
 * chunk edges, NaN at a chunk's start, inside one, at index 0, the maximum
 * in the last chunk, chunks of 1 row and one chunk for everything. */
static void test_argmax_of_chunks(void) {
  const int64_t n = 1000;
  const int64_t chunk_rows[] = {1, 7, 32, 33, 250, 999, 1000, 4096};
  float *x = malloc((size_t)n * sizeof *x);
  struct argmax_slot *slots = malloc((size_t)n * sizeof *slots);
  for (int trial = 0; trial < 8; trial++) {
    for (int64_t i = 0; i < n; i++) x[i] = rng_normal();
    if (trial == 1) /* ties everywhere: the first maximum wins */
      for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 7);
    else if (trial == 2) /* NaN at many places, index 0 excepted */
      for (int64_t i = 1; i < n; i += 11) x[i] = NAN;
    else if (trial == 3) /* NaN at index 0: index 0 */
      x[0] = NAN;
    else if (trial == 4) /* the maximum last */
      x[n - 1] = 50.0f;
    else if (trial == 5) /* the same maximum at the start of two chunks */
      x[250] = x[500] = 60.0f;
    else if (trial == 6) /* NaN at the start of a chunk of 250 before the maximum */
      x[250] = NAN, x[300] = 70.0f;
    else if (trial == 7) /* all NaN but index 0 */
      for (int64_t i = 1; i < n; i++) x[i] = NAN;
    for (size_t p = 0; p < N_PATHS; p++) {
      const struct kernel_ops *ops = kernels_get(paths[p]);
      if (!ops) continue;
      const int64_t want = ops->argmax(x, n);
      for (size_t ci = 0; ci < sizeof chunk_rows / sizeof chunk_rows[0]; ci++) {
        int64_t cr = chunk_rows[ci], n_slots = 0;
        for (int64_t r0 = 0; r0 < n; r0 += cr, n_slots++) { /* as mm_chunk records them */
          int64_t r1 = r0 + cr < n ? r0 + cr : n;
          int64_t j = ops->argmax(x + r0, r1 - r0);
          slots[n_slots] = (struct argmax_slot){x[r0 + j], (int32_t)(r0 + j)};
        }
        int64_t got = argmax_of_chunks(ops, slots, n_slots, x, n);
        CHECK_MSG(got == want, "%s trial %d chunks of %lld: %lld, want %lld", ops->name, trial,
                  (long long)cr, (long long)got, (long long)want);
      }
      CHECK(argmax_of_chunks(ops, slots, 0, x, n) == want); /* no candidates */
    }
  }
  free(x);
  free(slots);
}

static void test_sumsq(void) {
  const int64_t sizes[] = {1, 7, 8, 9, 128, 1023, 1024, 4099};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    float *x = malloc((size_t)n * sizeof *x);
    double exact = 0;
    for (int64_t i = 0; i < n; i++) {
      x[i] = 10.0f * rng_normal();
      exact += (double)x[i] * x[i];
    }
    double ref = kernels_get(KERNEL_SCALAR)->sumsq(x, n);
    CHECK_MSG(fabs(ref - exact) <= 1e-12 * exact, "n %lld: %.17g vs %.17g", (long long)n, ref,
              exact);
    for (size_t p = 0; p < N_PATHS; p++) {
      const struct kernel_ops *ops = kernels_get(paths[p]);
      if (!ops) continue;
      double got = ops->sumsq(x, n);
      /* Same order on every path: the same bits. */
      CHECK_MSG(got == ref, "%s n %lld: %.17g vs scalar %.17g", ops->name, (long long)n, got,
                ref);
    }
    free(x);
  }
}

static void test_swiglu(void) {
  const int64_t sizes[] = {1, 7, 8, 15, 16, 17, 3072, 3079};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    float *g = malloc((size_t)n * 4), *u = malloc((size_t)n * 4), *ref = malloc((size_t)n * 4);
    float *out = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
      /* the usual range, and both tails (exp clamped, silu -> 0 or -> g) */
      g[i] = i % 5 == 4 ? 95.0f * (float)(2.0 * rng_u01() - 1.0) : 4.0f * rng_normal();
      u[i] = rng_normal();
    }
    if (n > 3) g[1] = -100.0f, g[2] = 100.0f, g[3] = 0.0f;
    memcpy(ref, g, (size_t)n * 4);
    kernels_get(KERNEL_SCALAR)->swiglu(ref, u, n);
    for (int64_t i = 0; i < n; i++) {
      double want = (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i];
      CHECK_MSG(fabs(ref[i] - want) <= 1e-6 * fabs(want) + 1e-30, "scalar i %lld: %g vs %g",
                (long long)i, ref[i], want);
    }
    for (size_t p = 0; p < N_PATHS; p++) {
      const struct kernel_ops *ops = kernels_get(paths[p]);
      if (!ops) continue;
      memcpy(out, g, (size_t)n * 4);
      ops->swiglu(out, u, n);
      for (int64_t i = 0; i < n; i++)
        CHECK_MSG(fabs(out[i] - ref[i]) <= 1e-6 * fabs(ref[i]) + 1e-30,
                  "%s n %lld i %lld (g %g): %.9g vs scalar %.9g", ops->name, (long long)n,
                  (long long)i, g[i], out[i], ref[i]);
    }
    free(g), free(u), free(ref), free(out);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_swiglu);
  TM_RUN(test_attn_row);
  TM_RUN(test_attn_rows);
  TM_RUN(test_argmax);
  TM_RUN(test_argmax_of_chunks);
  TM_RUN(test_sumsq);
}
