/* kernels_x86.h (private to src/engine/kernels_avx*.c): the shared shape of
 * the x86 gemm drivers.
 *
 * A SIMD gemm is built from one "tile" function per type: one weight row
 * against nc <= KERNEL_COL_TILE activation columns, writing nc outputs. The
 * driver walks rows in groups of ROW_GROUP (their bytes stay in L1/L2) and,
 * inside a group, column tiles outermost, so each weight block is unpacked
 * once per tile and used for nc columns (prefill), while ncols = 1 (decode)
 * degenerates to one sequential pass over the rows: each weight byte is read
 * once, in address order, which the hardware prefetcher streams. */
#ifndef TM_ENGINE_KERNELS_X86_H
#define TM_ENGINE_KERNELS_X86_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernels_internal.h"

#define ROW_GROUP 16

/* Software prefetch distance of the weight stream. Measured on the team's
 * Xeon (KVM, bench/kernel_bench.c): decode Q4_0 went from 2.1 GB/s with the
 * hardware prefetcher alone to 3.3 (512 B ahead) and 4.8 GB/s (2048 B) under
 * the same load; 4096 was no better. The kernels prefetch every cache line
 * of a weight block this far ahead (harmless extra uops when hot).
 * KERNEL_PREFETCH_BYTES, KERNEL_PF_HINT and KERNEL_NO_PF can be set with -D
 * for experiments (bench/kernel_bench.c); after the VNNI decode rewrite,
 * 1024 / 4096 / 8192 bytes and the T1 / NTA hints were within the noise of
 * 2048 / T0 (NTA and no prefetch clearly worse), so the default stays.
 * KERNEL_ONE_STREAM turns off the decode kernels' interleaved row streams
 * (kernels_avx512_q32.c) for comparison: two streams were worth +30-40% cold
 * decode bandwidth on 4 KiB pages; four beat two once the weights were on
 * 2 MiB pages (docs/engine.md). */
#ifndef KERNEL_PREFETCH_BYTES
#define KERNEL_PREFETCH_BYTES 2048
#endif
#ifndef KERNEL_PF_HINT
#define KERNEL_PF_HINT _MM_HINT_T0
#endif
#ifdef KERNEL_NO_PF
#define PREFETCH_W(p, bytes) ((void)0)
#else
#define PREFETCH_W(p, bytes)                                                               \
  do {                                                                                      \
    for (int pf_ = 0; pf_ < (int)(bytes); pf_ += 64)                                        \
      _mm_prefetch((const char *)(p) + KERNEL_PREFETCH_BYTES + pf_, KERNEL_PF_HINT);        \
  } while (0)
#endif

/* The first `ahead` bytes of each of a decode kernel's n_streams row streams
 * (stream s starts at w0 + s * stream_bytes), prefetched when the kernel
 * starts on a chunk. The loops prefetch `ahead` bytes past where they read,
 * so without this every stream of every chunk began with that many bytes of
 * demand misses, several hundred per chunk of 256 KiB. Step-interleaved A/Bs
 * (bench/step_ab.c, 2026-11-29, Qwen3-0.6B shape, tg128): Q4_0 +0.5-1.3% at 2
 * threads and +1.1% at 1; Q8_0 +0.5-1.0% at 2 and +0.3-0.5% at 1. Twice the
 * distance was no better. */
#ifdef KERNEL_NO_PF
#define PREFETCH_STREAM_HEADS(w0, stream_bytes, n_streams, ahead) ((void)0)
#else
#define PREFETCH_STREAM_HEADS(w0, stream_bytes, n_streams, ahead)                         \
  do {                                                                                      \
    for (int s_ = 0; s_ < (n_streams); s_++)                                                \
      for (int pf_ = 0; pf_ < (int)(ahead); pf_ += 64)                                      \
        _mm_prefetch((const char *)(w0) + (size_t)s_ * (stream_bytes) + pf_, KERNEL_PF_HINT); \
  } while (0)
#endif

/* The x86 paths' column-tiled gemm driver (kernels_internal.h). */
#define DEFINE_X86_GEMM(ATTR, name, tile) DEFINE_TILED_GEMM(ATTR, name, tile, ROW_GROUP)

/* The 6-bit scale and min of sub-block sb (0..7) of Q4_K / Q5_K blocks, one
 * block per 32-bit lane (the panel builders), from the lanes' scale bytes
 * 0-3 (d0), 4-7 (d1) and 8-11 (d2) (quant_k4_scale_min's layout). VU: a GCC
 * vector of uint32_t as wide as the lanes (the intrinsic vectors cast to
 * it), so one text serves the AVX2 and AVX-512 panels. */
typedef uint32_t tm_v8u __attribute__((vector_size(32)));
typedef uint32_t tm_v16u __attribute__((vector_size(64)));
#define KQ_SCALE_MIN(VU, d0, d1, d2, sb, sc, mn)                                            \
  do {                                                                                      \
    const VU d0_ = (VU)(d0), d1_ = (VU)(d1), d2_ = (VU)(d2);                                \
    if ((sb) < 4) {                                                                         \
      (sc) = (d0_ >> (8 * (sb))) & 63;                                                      \
      (mn) = (d1_ >> (8 * (sb))) & 63;                                                      \
    } else {                                                                                \
      const int s8_ = 8 * ((sb) - 4);                                                       \
      (sc) = ((d2_ >> s8_) & 15) | (((d0_ >> (s8_ + 6)) & 3) << 4);                         \
      (mn) = ((d2_ >> (s8_ + 4)) & 15) | (((d1_ >> (s8_ + 6)) & 3) << 4);                   \
    }                                                                                       \
  } while (0)

/* The panel kernels' inner loops (AVX2 and AVX-512 drivers): K segments of
 * kseg blocks of one row panel, each built once (BUILD) and then applied to
 * the columns four at a time and to the rest (nc a constant in each
 * COLS(nc), so the column loops unroll). BUILD and COLS see s, kb and c. */
#define PANEL_SEGMENTS(nb, kseg, BUILD, COLS)                                               \
  for (int64_t s = 0; s < (nb); s += (kseg)) {                                              \
    const int kb = (int)((nb) - s < (kseg) ? (nb) - s : (kseg));                            \
    BUILD;                                                                                  \
    int64_t c = 0;                                                                          \
    for (; c + 4 <= ncols; c += 4) COLS(4);                                                 \
    switch (ncols - c) {                                                                    \
    case 1: COLS(1); break;                                                                 \
    case 2: COLS(2); break;                                                                 \
    case 3: COLS(3); break;                                                                 \
    default: break;                                                                         \
    }                                                                                       \
  }


/* A tile over the blocks of a 32-element type (Q4_0, Q4_1, Q5_0, Q5_1): one
 * weight row against nc <= 4 activation columns (struct act_q8). Two
 * accumulator sets (even / odd blocks) so the FMA latency chain does not
 * bound a one-column decode; corr[c] collects the per-block float offsets
 * (OFFSET_MUL * d, or the block's m when HAS_M). Per path: INLINE its
 * function attributes, DOT(wq, xq) the block's unsigned x signed byte dot
 * product as 8 i32 lanes, H2F an fp16 scale to float, HSUM an __m256's lane
 * sum. Defines fn##_step and fn(n, wr, a, as, nc, o, os). */
#define DEFINE_BLOCK_TILE(INLINE, fn, WBLOCK, UNPACK, OFFSET_MUL, HAS_M, DOT, H2F, HSUM)     \
  INLINE void fn##_step(const WBLOCK *wb, const uint8_t *a, size_t as, int64_t b,             \
                        const int nc, __m256 *acc, float *corr) {                              \
    PREFETCH_W(wb, 1);                                                                      \
    __m256i wq = UNPACK(wb);                                                                \
    float dw = H2F(wb->d);                                                                  \
    float cm = HAS_M ? H2F(((const uint16_t *)wb)[1]) : OFFSET_MUL * dw;                    \
    for (int c = 0; c < nc; c++) {                                                          \
      const struct act_q8 *x = (const struct act_q8 *)(a + c * as) + b;                     \
      __m256i p = DOT(wq, _mm256_loadu_si256((const __m256i *)x->q));                       \
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x->d), acc[c]);   \
      corr[c] += cm * x->s;                                                                 \
    }                                                                                       \
  }                                                                                         \
  INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as, const int nc,    \
                 float *o, int64_t os) {                                                    \
    const WBLOCK *w = (const WBLOCK *)wr;                                                   \
    const int64_t nb = n / 32;                                                              \
    __m256 acc0[4], acc1[4];                                                                \
    float corr[4] = {0};                                                                    \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();                   \
    int64_t b = 0;                                                                          \
    for (; b + 1 < nb; b += 2) {                                                            \
      fn##_step(&w[b], a, as, b, nc, acc0, corr);                                           \
      fn##_step(&w[b + 1], a, as, b + 1, nc, acc1, corr);                                   \
    }                                                                                       \
    if (b < nb) fn##_step(&w[b], a, as, b, nc, acc0, corr);                                 \
    for (int c = 0; c < nc; c++) o[c * os] = HSUM(_mm256_add_ps(acc0[c], acc1[c])) + corr[c]; \
  }


/* DEFINE_BLOCK_TILE's loop for Q8_0, whose weights are signed: each block is
 * DOT(ABS(w), sign(x, w)), with no offset term. */
#define DEFINE_Q8_0_TILE(INLINE, fn, ABS, DOT, H2F, HSUM)                                   \
  INLINE void fn##_step(const struct block_q8_0 *wb, const uint8_t *a, size_t as, int64_t b, \
                        const int nc, __m256 *acc) {                                         \
    PREFETCH_W(wb, 1);                                                                      \
    __m256i wq = _mm256_loadu_si256((const __m256i *)wb->qs);                               \
    __m256i ax = ABS(wq);                                                                   \
    float dw = H2F(wb->d);                                                                  \
    for (int c = 0; c < nc; c++) {                                                          \
      const struct act_q8 *x = (const struct act_q8 *)(a + c * as) + b;                     \
      __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x->q), wq);         \
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(ax, sy)), _mm256_set1_ps(dw * x->d),  \
                               acc[c]);                                                     \
    }                                                                                       \
  }                                                                                         \
  INLINE void fn(int64_t n, const uint8_t *wr, const uint8_t *a, size_t as, const int nc,    \
                 float *o, int64_t os) {                                                    \
    const struct block_q8_0 *w = (const struct block_q8_0 *)wr;                             \
    const int64_t nb = n / 32;                                                              \
    __m256 acc0[4], acc1[4];                                                                \
    for (int c = 0; c < nc; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();                   \
    int64_t b = 0;                                                                          \
    for (; b + 1 < nb; b += 2) {                                                            \
      fn##_step(&w[b], a, as, b, nc, acc0);                                                 \
      fn##_step(&w[b + 1], a, as, b + 1, nc, acc1);                                         \
    }                                                                                       \
    if (b < nb) fn##_step(&w[b], a, as, b, nc, acc0);                                       \
    for (int c = 0; c < nc; c++) o[c * os] = HSUM(_mm256_add_ps(acc0[c], acc1[c]));         \
  }

#endif
