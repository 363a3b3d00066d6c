/* kernels: the engine's inner loops, one table per instruction-set path, chosen
 * at run time from CPUID (x86) or the build and AT_HWCAP (ARM: NEON, with
 * sdot when the CPU has dotprod). Every path computes the same
 * functions as the scalar reference (kernels_scalar.c) within rounding; tests
 * compare each SIMD kernel with it on odd sizes, with outputs pre-filled with NaN.
 *
 * Weights are GGUF rows as stored (any type with has_gemm below). Activations
 * are quantized per row to the format the weight type consumes:
 *   F32, F16, BF16           -> f32 activations as they are
 *   Q4_0, Q4_1, Q5_0, Q5_1,
 *   Q8_0                      -> struct act_q8 (blocks of 32: scale, scaled sum, int8)
 *   Q4_K, Q5_K, Q6_K          -> struct act_q8k (blocks of 256: scale, int8,
 *                                sums of each 16)
 * so integer dot products (VNNI vpdpbusd, AVX2 maddubs, NEON sdot) do the work.
 * These activation formats are tokmeter's own (never written to a file). */
#ifndef TM_KERNELS_H
#define TM_KERNELS_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/ggml_types.h"

enum kernel_path {
  KERNEL_AUTO = 0,     /* the best this CPU and build support */
  KERNEL_SCALAR,
  KERNEL_AVX2,         /* AVX2 + FMA + F16C */
  KERNEL_AVX512,       /* AVX-512 F/BW/VL (+ the AVX2 paths where narrower) */
  KERNEL_AVX512_VNNI,  /* AVX-512 + VNNI integer dot products */
  KERNEL_NEON,         /* aarch64 NEON (+ dotprod when the CPU has it) */
  KERNEL_PATH_COUNT
};
const char *kernel_path_name(enum kernel_path p); /* "scalar", "avx2", ... */

/* Activation blocks (tokmeter's own layout). */
struct act_q8 {
  float d;        /* scale: x ~= d * q */
  float s;        /* d * sum(q): for weight types with an offset (Q4_1, Q5_1) */
  int8_t q[32];
};
struct act_q8k {
  float d;
  int8_t q[256];
  int16_t bsums[16]; /* sum of each 16 consecutive q: for K-quant mins */
};

/* The activation format a weight type consumes. */
enum act_format { ACT_F32 = 0, ACT_Q8, ACT_Q8K };
enum act_format kernel_act_format(uint32_t weight_type);
/* Bytes of one activation row of n elements in that format (n a multiple of
 * 32 for ACT_Q8, of 256 for ACT_Q8K). */
size_t kernel_act_row_bytes(enum act_format f, int64_t n);

/* out[c * out_stride + r] = dot(W row r, activation row c) for r in [r0, r1),
 * c in [0, ncols). W rows are w_stride bytes apart, activation rows a_stride
 * bytes apart (already in the weight type's activation format), n elements
 * per row. ncols = 1 is decode (matrix-vector: each weight byte read once);
 * ncols > 1 is prefill (the kernel tiles activation columns so each weight
 * block loaded is used for several columns). Threads split [r0, r1). */
/* The batch from which a gemm call runs on matrix tiles where the table has
 * them (a tile product holds 16 columns; columns past the last multiple of
 * 16 stay on the vector kernels). */
#define KERNEL_TILES_MIN_COLS 16

typedef void (*gemm_fn)(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,
                        const void *a, size_t a_stride, int64_t ncols, float *out,
                        int64_t out_stride);

/* A decode chunk (ncols = 1) two threads share: its owner takes the four
 * row streams' rows i = 0, 1, ... (stream s's row i is r0 + s * q + i, q =
 * (r1 - r0) / 4) from the front, a thread with nothing left of its own
 * takes them from the back, both by compare-and-swap on one word, so each
 * row is computed once, by the same arithmetic whoever takes it (results do
 * not depend on who did). span = front << 32 | back; set to q before
 * either starts (gemv_share_init). The rows past 4 q are the owner's. */
struct gemv_share {
  alignas(64) _Atomic uint64_t span;
};
static inline void gemv_share_init(struct gemv_share *sh, int64_t r0, int64_t r1) {
  atomic_init(&sh->span, (uint64_t)((r1 - r0) / 4));
}
/* owner: computes rows r0 + 4q .. r1, then takes rows from the front until
 * none are left; otherwise takes the back half of what is left, computes
 * it, and returns the rows it computed (0: too little left to share). */
typedef int64_t (*gemv_share_fn)(int64_t n, const void *w, size_t w_stride, int64_t r0,
                                 int64_t r1, const void *a, float *out, struct gemv_share *sh,
                                 bool owner);

struct kernel_ops {
  enum kernel_path path;
  const char *name;
  gemm_fn gemm[GGML_TYPE_COUNT];   /* NULL: weight type not supported */
  /* "amx_int8" when the Q4_0 and Q8_0 entries run prefill batches of
   * KERNEL_TILES_MIN_COLS columns and more on matrix tiles (kernels_amx.h);
   * NULL otherwise. */
  const char *prefill_tiles;
  /* Shared decode chunks: NULL where the path has none for the type; only
   * for rows whose length n is a multiple of 256 and at most
   * gemv_share_max_n (forward.c checks). */
  gemv_share_fn gemv_share[GGML_TYPE_COUNT];
  int64_t gemv_share_max_n;
  /* A product of a few columns (a batched decode step: forward.c uses it
   * below MM_SMALL_BATCH_COLS columns) that unpacks each weight block once
   * for all of them, gemm's contract for any ncols >= 1, with a promise:
   * column c's outputs have the bits of this table's gemm on column c alone
   * (ncols = 1). NULL where the path has none for the type (forward.c then
   * runs gemm once per column). */
  gemm_fn gemm_few[GGML_TYPE_COUNT];
  void (*quantize_q8)(const float *x, struct act_q8 *y, int64_t n);
  void (*quantize_q8k)(const float *x, struct act_q8k *y, int64_t n);
  /* Attention over an F16 KV cache and small f32 helpers. */
  float (*dot_f16_f32)(const uint16_t *k, const float *q, int64_t n);
  void (*axpy_f16)(float *y, float a, const uint16_t *v, int64_t n); /* y += a*v */
  void (*f32_to_f16)(const float *x, uint16_t *y, int64_t n);
  /* An F16 accumulator, as llama.cpp's CPU flash attention keeps V x softmax:
   * y = f16(f32(y) * a) and y = f16(f32(y) + a * f32(v)), rounding to nearest
   * even at every step (so the engine's logits stay comparable with
   * llama.cpp's to the rounding). */
  void (*scale_f16)(uint16_t *y, float a, int64_t n);
  void (*mad_f16)(uint16_t *y, float a, const uint16_t *v, int64_t n);
  /* Attention of one query row q (hd f32 values) over n_pos cached
   * positions: k and v point at position 0 of this head, kv_stride elements
   * apart; out (hd) = softmax(q.k * scale) . v computed as llama.cpp's CPU
   * flash attention does for an F16 cache (Q rounded to F16, online softmax,
   * the V sum kept in F16): see kernels_rowops.c. hd <= 1024. */
  void (*attn_row)(const float *q, const uint16_t *k, const uint16_t *v, size_t kv_stride,
                   int64_t n_pos, int64_t hd, float scale, float *out);
  /* attn_row for nq query rows that share one KV head (grouped-query
   * attention): row h at q + h * q_stride, its result at out + h *
   * out_stride. Each row's result is bit-identical to attn_row's; a path
   * may fuse rows so each cache row is read and converted once. */
  void (*attn_rows)(const float *q, size_t q_stride, int nq, const uint16_t *k,
                    const uint16_t *v, size_t kv_stride, int64_t n_pos, int64_t hd, float scale,
                    float *out, size_t out_stride);
  /* attn_rows that meanwhile prefetches into L1 the first next_bytes at
   * next (the cache rows the caller attends to next: the next KV head's K
   * rows), at most 64 KiB of them, over this call's last positions (all of
   * its positions when the span is longer), so the misses of the two
   * streams overlap and the prefetched rows are still cached when used.
   * Results are attn_rows' bits. NULL on paths without it (the caller then
   * uses attn_rows). */
  void (*attn_rows_next)(const float *q, size_t q_stride, int nq, const uint16_t *k,
                         const uint16_t *v, size_t kv_stride, int64_t n_pos, int64_t hd,
                         float scale, float *out, size_t out_stride, const void *next,
                         size_t next_bytes);
  /* attn_rows for K and V rows already in cache (a prompt's tokens reading
   * the same head one after the other): bit-identical results, an order of
   * work that is faster from cache and slower from DRAM. */
  void (*attn_rows_cached)(const float *q, size_t q_stride, int nq, const uint16_t *k,
                           const uint16_t *v, size_t kv_stride, int64_t n_pos, int64_t hd,
                           float scale, float *out, size_t out_stride);
  /* Index of the first largest of x[0..n), n >= 1 (NaN never wins). */
  int64_t (*argmax)(const float *x, int64_t n);
  /* Sum of x[i]^2 in double, in the same order on every path (RMSNorm). */
  double (*sumsq)(const float *x, int64_t n);
  /* g[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u (SwiGLU). SIMD paths
   * use a polynomial exp within 2 ulp of expf's. */
  void (*swiglu)(float *g, const float *u, int64_t n);
  /* Row i of an embedding table (any type with a dequantizer) into f32. */
  int (*get_row)(uint32_t type, const void *row, float *out, int64_t n);
};

/* The table for a path; NULL when this build or CPU cannot run it, or when
 * TOKMETER_KERNELS leaves it out. With KERNEL_AUTO, the best available (NULL
 * when TOKMETER_KERNELS names a set this CPU or build cannot run: never a
 * narrower one in its place). */
const struct kernel_ops *kernels_get(enum kernel_path p);
/* TOKMETER_KERNELS, for tests and A/B measurements: the widest kernel set the
 * engine may use. scalar, avx2, avx512 and neon are those paths; vnni is
 * the AVX-512 VNNI table without the VBMI decode kernels and the AMX
 * prefill tiles, vbmi adds the VBMI kernels (and needs VBMI), amx adds the
 * tiles (and needs them). Unset or empty: everything this CPU and build run.
 * kernels_forced_name: its value, NULL when unset. kernels_forced_unavailable:
 * NULL when unset or runnable here, else one line saying why not (an unknown
 * name, or what this CPU or build lacks). */
const char *kernels_forced_name(void);
const char *kernels_forced_unavailable(void);
/* False when TOKMETER_KERNELS is set to a name that is no kernel set (a
 * usage error, where an unavailable set is this machine's limit). */
bool kernels_forced_known(void);
/* The best path the CPU offers, whether or not this build contains it (for
 * the "your build leaves speed on the table" warning). */
enum kernel_path kernels_best_for_cpu(void);
/* Whether gemm[type] exists on every path (the engine's supported types). */
bool kernels_supports(uint32_t weight_type);

#endif
