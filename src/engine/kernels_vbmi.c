/* kernels_vbmi: the Q4_0 and Q8_0 decode kernels (matrix-vector, ncols = 1)
 * for CPUs with AVX-512 VNNI and VBMI (Ice Lake and later Xeons, Zen 4 and
 * later). The Q8_0 one (second half of the file) needs no VBMI instruction;
 * it was measured on a Zen 5 EPYC only, so it is chosen on AMD CPUs (as the
 * 2 MiB decode chunks are, engine.c), and the Intel CPUs keep the VNNI
 * kernel they were measured with.
 *
 * Why a second Q4_0 decode kernel: the VNNI one (kernels_avx512_q32.c) unpacks
 * two 18-byte blocks per 512-bit vector with inserts and a shift, then spends
 * a convert and two FMAs on those two blocks; from cache it barely outran one
 * core's DRAM stream, so compute and memory did not overlap. Here an octet of
 * eight blocks (144 bytes) becomes ONE integer vector, two 32-bit lanes per
 * block, so the convert and the two FMAs are paid once per 8 blocks:
 *
 *   A = nibble bytes 0-7 of each block, B = bytes 8-15 (8 bytes per block
 *   side by side: lanes 2b, 2b+1 hold block b);
 *   A & 15 -> weights 0-7, A >> 4 -> 16-23, B & 15 -> 8-15, B >> 4 -> 24-31,
 *   each against activations repacked to the same places (struct vnni_oct),
 *   four vpdpbusd into one accumulator.
 *
 * The gathers are single-source byte permutes (vpermb, one per cycle here)
 * from four unaligned 64-byte windows of the octet (at 0, 8, 72 and 80:
 * blocks 0-3 and 4-7 each sit at the same offsets within their windows, so
 * one index vector serves all of them); a two-source vpermt2b or vpermt2w
 * costs two cycles of the same port, and the previous version of this kernel
 * (one vector per 4 blocks, five two-source permutes per octet) was bound by
 * them: 29-31 GB/s per core from L2 against 36-41 now (bench/RESULTS.md).
 *
 * The Q4_0 offset (weights are nibble - 8) is folded in per lane: lane value
 * = I_l * d_a + ns_l with ns_l = -8 * s_a / 2 (s_a = d_a sum(q_a), split over
 * the block's two lanes), times the weight block's scale; the two lanes of a
 * block add up to the block's exact dot product times the two scales.
 * Integer parts are exact; only the float summation order differs from the
 * other paths (tests compare with the scalar reference within rounding). */
#include "engine/kernels_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#define VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define VBMI_INLINE                                                                         \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx2,fma,f16c"),    \
                 always_inline)) static inline

/* Prefetch distance of the weight stream, as kernels_x86.h's. KERNEL_NO_PF
 * (kernels_x86.h) turns these prefetches off too. */
#ifndef VBMI_PF_BYTES
#define VBMI_PF_BYTES 2048
#endif
#ifdef KERNEL_NO_PF
#define VBMI_PREFETCH(p) ((void)(p))
#else
#define VBMI_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#endif

struct vnni_oct {
  __m512i al, ah, bl, bh; /* activations against A & 15, A >> 4, B & 15, B >> 4 */
  __m512 da, ns;          /* lane l: block l / 2's d_a and -8 s_a / 2 */
};
#define VBMI_MAX_OCTS 64 /* n <= 16384 (24 KiB of repacked activations) */

/* x: nb activation blocks (nb a multiple of 8) -> nb / 8 octets. A block's
 * 32 values are 4 qwords (q 0-7, 8-15, 16-23, 24-31); octet vector al takes
 * qword 0 of each of the 8 blocks, bl qword 1, ah qword 2, bh qword 3. */
VBMI_INLINE void oct_repack(const struct act_q8 *x, int64_t nb, struct vnni_oct *oc) {
  const __m512i q01 = _mm512_setr_epi64(0, 4, 8, 12, 1, 5, 9, 13);
  const __m512i q23 = _mm512_setr_epi64(2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  for (int64_t o = 0; o < nb / 8; o++) {
    const struct act_q8 *b = x + 8 * o;
    __m512i z[4]; /* blocks 2k and 2k + 1 */
    for (int k = 0; k < 4; k++)
      z[k] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b[2 * k].q)),
          _mm256_loadu_si256((const __m256i *)b[2 * k + 1].q), 1);
    /* [qword 0 of blocks 0-3 | qword 1 of blocks 0-3], then blocks 4-7 */
    const __m512i t0 = _mm512_permutex2var_epi64(z[0], q01, z[1]);
    const __m512i t1 = _mm512_permutex2var_epi64(z[2], q01, z[3]);
    const __m512i u0 = _mm512_permutex2var_epi64(z[0], q23, z[1]);
    const __m512i u1 = _mm512_permutex2var_epi64(z[2], q23, z[3]);
    oc[o].al = _mm512_shuffle_i64x2(t0, t1, 0x44);
    oc[o].bl = _mm512_shuffle_i64x2(t0, t1, 0xEE);
    oc[o].ah = _mm512_shuffle_i64x2(u0, u1, 0x44);
    oc[o].bh = _mm512_shuffle_i64x2(u0, u1, 0xEE);
    const __m256 d8 = _mm256_setr_ps(b[0].d, b[1].d, b[2].d, b[3].d, b[4].d, b[5].d, b[6].d, b[7].d);
    const __m256 s8 = _mm256_mul_ps(
        _mm256_setr_ps(b[0].s, b[1].s, b[2].s, b[3].s, b[4].s, b[5].s, b[6].s, b[7].s),
        _mm256_set1_ps(-8.0f * 0.5f));
    oc[o].da = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(d8));
    oc[o].ns = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(s8));
  }
}

/* One row's octet, unpacked from its four windows (the 64 bytes at 0, 8, 72
 * and 80 of the octet's 144: blocks 0-3 sit at the same offsets in the
 * first two as blocks 4-7 in the last two, so one index vector serves all;
 * the last window ends at byte 143): u[0..3] = A & 15, A >> 4, B & 15,
 * B >> 4 (against oc's al, ah, bl, bh), *dw the lanes' weight scales. */
struct oct_w {
  __m512i u[4];
  __m512 dw;
};
VBMI_INLINE struct oct_w oct_unpack(__m512i w0, __m512i w8, __m512i w72, __m512i w80) {
  /* Byte 8c + j of each 32-byte half <- window byte 18c + 2 + j (c = 0..3). */
  const __m512i idx = _mm512_set_epi8(
      63, 62, 61, 60, 59, 58, 57, 56, 45, 44, 43, 42, 41, 40, 39, 38,
      27, 26, 25, 24, 23, 22, 21, 20, 9, 8, 7, 6, 5, 4, 3, 2,
      63, 62, 61, 60, 59, 58, 57, 56, 45, 44, 43, 42, 41, 40, 39, 38,
      27, 26, 25, 24, 23, 22, 21, 20, 9, 8, 7, 6, 5, 4, 3, 2);
  const __mmask64 upper = 0xFFFFFFFF00000000ull;
  /* The scales: fp16 word l of each 8-word half <- window bytes 18 (l / 2)
   * and 18 (l / 2) + 1 (the block of lane l). */
  const __m512i sidx = _mm512_set_epi8(
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      55, 54, 55, 54, 37, 36, 37, 36, 19, 18, 19, 18, 1, 0, 1, 0,
      55, 54, 55, 54, 37, 36, 37, 36, 19, 18, 19, 18, 1, 0, 1, 0);
  const __mmask64 s_upper = 0x00000000FFFF0000ull;
  const __m512i m4 = _mm512_set1_epi8(15);
  const __m512i A = _mm512_mask_permutexvar_epi8(_mm512_permutexvar_epi8(idx, w0), upper, idx, w72);
  const __m512i B = _mm512_mask_permutexvar_epi8(_mm512_permutexvar_epi8(idx, w8), upper, idx, w80);
  const __m512i S =
      _mm512_mask_permutexvar_epi8(_mm512_permutexvar_epi8(sidx, w0), s_upper, sidx, w72);
  struct oct_w o;
  o.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(S));
  o.u[0] = _mm512_and_si512(A, m4);
  o.u[1] = _mm512_and_si512(_mm512_srli_epi16(A, 4), m4);
  o.u[2] = _mm512_and_si512(B, m4);
  o.u[3] = _mm512_and_si512(_mm512_srli_epi16(B, 4), m4);
  return o;
}

/* acc += an unpacked octet against one activation column's octet oc,
 * lane-wise: the same operations whichever caller (one column or several),
 * so every column's sum has the bits of its single decode. */
VBMI_INLINE __m512 oct_col(const struct oct_w *o, const struct vnni_oct *oc, __m512 acc) {
  __m512i I = _mm512_dpbusd_epi32(_mm512_setzero_si512(), o->u[0], oc->al);
  I = _mm512_dpbusd_epi32(I, o->u[1], oc->ah);
  I = _mm512_dpbusd_epi32(I, o->u[2], oc->bl);
  I = _mm512_dpbusd_epi32(I, o->u[3], oc->bh);
  const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), oc->da, oc->ns);
  return _mm512_fmadd_ps(t, o->dw, acc);
}

/* acc += one row's octet (windows w0 .. w80) against oc. */
VBMI_INLINE __m512 oct_dot(__m512i w0, __m512i w8, __m512i w72, __m512i w80,
                           const struct vnni_oct *oc, __m512 acc) {
  const struct oct_w o = oct_unpack(w0, w8, w72, w80);
  return oct_col(&o, oc, acc);
}

VBMI_INLINE __m512 oct_dot_at(const uint8_t *g, const struct vnni_oct *oc, __m512 acc) {
  for (int pf = 0; pf < 144; pf += 64) VBMI_PREFETCH((const char *)g + VBMI_PF_BYTES + pf);
  return oct_dot(_mm512_loadu_si512(g), _mm512_loadu_si512(g + 8), _mm512_loadu_si512(g + 72),
                 _mm512_loadu_si512(g + 80), oc, acc);
}

/* The lane sums of four vectors at once (a transposing tree: 11 shuffles
 * and adds instead of four separate reductions of ~8 each). */
VBMI_INLINE __m256 hi256(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
VBMI_INLINE void reduce4(__m512 a, __m512 b, __m512 c, __m512 d, float *s4) {
  __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), hi256(a));
  __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), hi256(b));
  __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), hi256(c));
  __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), hi256(d));
  __m256 ab = _mm256_hadd_ps(a8, b8), cd = _mm256_hadd_ps(c8, d8);
  __m256 abcd = _mm256_hadd_ps(ab, cd); /* [a b c d | a b c d] partial sums */
  _mm_storeu_ps(s4, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}

/* One row's sum by reduce4's tree, as the four-stream loops sum theirs: a
 * row's sum never depends on where it falls in [r0, r1) (chunking is free
 * to change). */
VBMI_INLINE float row_sum(__m512 a) {
  const __m512 z = _mm512_setzero_ps();
  float s4[4];
  reduce4(a, z, z, z, s4);
  return s4[0];
}

/* One octet of each of the four streams (g[s]: the octet's 144 bytes in
 * stream s) into acc[s].
 *
 * The loads (and the prefetches VBMI_PF_BYTES ahead) go round the
 * four streams one window at a time, in address order within each,
 * instead of one stream's whole octet after another: the same bytes,
 * and 1-3% more decode from DRAM (bench/RESULTS.md: a read loop that
 * steps 64-72 bytes per stream per turn streams 8-10% faster than one
 * stepping 128-144). VBMI_LOAD pins each load in that place: GCC
 * otherwise folds them into the permutes, one stream's after
 * another, and on a Zen 5 EPYC rows of 2048 and 3072 values (the
 * attention output and FFN down matrices) then streamed at half the
 * probe's rate from DRAM: 18.0 -> 36.1 GB/s pinned at n = 3072, 31.6
 * -> 34.0 at n = 1024 (fourteenth session, bench/RESULTS.md). */
VBMI_INLINE void q4_0_step4(const uint8_t *const g[4], const struct vnni_oct *oc, __m512 acc[4]) {
  __m512i w0[4], w8[4], w72[4], w80[4];
#define VBMI_PF(g, off) VBMI_PREFETCH((const char *)(g) + VBMI_PF_BYTES + (off))
#define VBMI_LOAD(dst, ptr)                  \
  do {                                       \
    (dst) = _mm512_loadu_si512(ptr);         \
    __asm__ volatile("" : "+v"(dst));        \
  } while (0)
  for (int s = 0; s < 4; s++) {
    VBMI_PF(g[s], 0);
    VBMI_LOAD(w0[s], g[s]);
  }
  for (int s = 0; s < 4; s++) VBMI_LOAD(w8[s], g[s] + 8);
  for (int s = 0; s < 4; s++) {
    VBMI_PF(g[s], 72);
    VBMI_LOAD(w72[s], g[s] + 72);
  }
  for (int s = 0; s < 4; s++) {
    VBMI_PF(g[s], 136);
    VBMI_LOAD(w80[s], g[s] + 80);
  }
#undef VBMI_LOAD
#undef VBMI_PF
  for (int s = 0; s < 4; s++) acc[s] = oct_dot(w0[s], w8[s], w72[s], w80[s], oc, acc[s]);
}

/* Rows of each stream the owner of a shared chunk takes at a time: 16 x 4
 * rows of 1024 Q4_0 values are 36 KiB, a microsecond or so of streaming, so
 * one compare-and-swap per group costs nothing measurable. */
#define SHARE_GROUP 16u

/* The frame of both octet kernels: rows in four interleaved streams (r,
 * r + q, r + 2q, r + 3q), each stream's octets in order (STEP4 takes one
 * octet of all four), then the rows left over one by one (DOT_AT, one
 * octet of one row, summed by the same tree). OCT_T is the repacked
 * activation type, REPACK fills it, OCT_BYTES is an octet's bytes in a row. */
#define DEFINE_OCT_GEMV(name, OCT_T, REPACK, STEP4, DOT_AT, OCT_BYTES)                      \
  /* Rows i0 .. i1 of the four streams of rows r0 .. r0 + 4q. */                            \
  VBMI static inline void name##_streams(int64_t no, const uint8_t *w, size_t w_stride,     \
                                         int64_t r0, int64_t q, int64_t i0, int64_t i1,     \
                                         const OCT_T *oc, float *out) {                     \
    for (int64_t i = i0; i < i1; i++) {                                                     \
      const uint8_t *row0 = w + (size_t)(r0 + i) * w_stride;                                \
      __m512 acc[4];                                                                        \
      for (int s = 0; s < 4; s++) acc[s] = _mm512_setzero_ps();                             \
      for (int64_t o = 0; o < no; o++) {                                                    \
        const uint8_t *g[4];                                                                \
        for (int s = 0; s < 4; s++) g[s] = row0 + (size_t)s * q * w_stride + (OCT_BYTES) * o; \
        STEP4(g, oc + o, acc);                                                              \
      }                                                                                     \
      float s4[4];                                                                          \
      reduce4(acc[0], acc[1], acc[2], acc[3], s4);                                          \
      for (int s = 0; s < 4; s++) out[r0 + s * q + i] = s4[s];                              \
    }                                                                                       \
  }                                                                                         \
  /* The rows past the four streams, one by one. */                                        \
  VBMI static inline void name##_rest(int64_t no, const uint8_t *w, size_t w_stride,        \
                                      int64_t r, int64_t r1, const OCT_T *oc, float *out) { \
    for (; r < r1; r++) {                                                                   \
      const uint8_t *wr = w + (size_t)r * w_stride;                                         \
      __m512 a = _mm512_setzero_ps();                                                       \
      for (int64_t o = 0; o < no; o++) a = DOT_AT(wr + (OCT_BYTES) * o, oc + o, a);         \
      out[r] = row_sum(a);                                                                  \
    }                                                                                       \
  }                                                                                         \
  VBMI static void name(int64_t n, const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1, \
                        const struct act_q8 *x, float *out) {                               \
    const int64_t no = n / 256;                                                             \
    alignas(64) OCT_T oc[VBMI_MAX_OCTS];                                                    \
    REPACK(x, n / 32, oc);                                                                  \
    const int64_t q = (r1 - r0) / 4;                                                        \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, (size_t)q * w_stride, q > 0 ? 4 : 0,   \
                          VBMI_PF_BYTES);                                                   \
    name##_streams(no, w, w_stride, r0, q, 0, q, oc, out);                                  \
    name##_rest(no, w, w_stride, r0 + 4 * q, r1, oc, out);                                  \
  }                                                                                         \
  /* A shared chunk (struct gemv_share, kernels.h): the owner takes          \
   * SHARE_GROUP rows of each stream at a time from the front, a helper the \
   * back half of what is left. */                                                          \
  VBMI static int64_t name##_share(int64_t n, const void *wv, size_t w_stride, int64_t r0,  \
                                   int64_t r1, const void *xv, float *out,                  \
                                   struct gemv_share *sh, bool owner) {                     \
    const uint8_t *w = wv;                                                                  \
    const int64_t no = n / 256;                                                             \
    alignas(64) OCT_T oc[VBMI_MAX_OCTS];                                                    \
    REPACK((const struct act_q8 *)xv, n / 32, oc);                                          \
    const int64_t q = (r1 - r0) / 4;                                                        \
    uint64_t span = atomic_load_explicit(&sh->span, memory_order_acquire);                  \
    if (!owner) {                                                                           \
      for (;;) {                                                                            \
        const uint32_t f = (uint32_t)(span >> 32), b = (uint32_t)span;                      \
        if (f >= b || b - f < 2 * SHARE_GROUP) return 0;                                    \
        const uint32_t nb = b - (b - f) / 2;                                                \
        if (atomic_compare_exchange_weak_explicit(&sh->span, &span,                         \
                                                  (uint64_t)f << 32 | nb,                   \
                                                  memory_order_acq_rel,                     \
                                                  memory_order_acquire)) {                  \
          PREFETCH_STREAM_HEADS(w + (size_t)(r0 + nb) * w_stride, (size_t)q * w_stride, 4,  \
                                VBMI_PF_BYTES);                                             \
          name##_streams(no, w, w_stride, r0, q, nb, b, oc, out);                           \
          return 4 * (int64_t)(b - nb);                                                     \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
    name##_rest(no, w, w_stride, r0 + 4 * q, r1, oc, out);                                  \
    PREFETCH_STREAM_HEADS(w + (size_t)r0 * w_stride, (size_t)q * w_stride, q > 0 ? 4 : 0,   \
                          VBMI_PF_BYTES);                                                   \
    int64_t done = r1 - r0 - 4 * q;                                                         \
    for (;;) {                                                                              \
      const uint32_t f = (uint32_t)(span >> 32), b = (uint32_t)span;                        \
      if (f >= b) return done;                                                              \
      const uint32_t nf = f + SHARE_GROUP < b ? f + SHARE_GROUP : b;                        \
      if (!atomic_compare_exchange_weak_explicit(&sh->span, &span, (uint64_t)nf << 32 | b,  \
                                                 memory_order_acq_rel,                      \
                                                 memory_order_acquire))                     \
        continue;                                                                           \
      name##_streams(no, w, w_stride, r0, q, f, nf, oc, out);                               \
      done += 4 * (int64_t)(nf - f);                                                        \
      span = atomic_load_explicit(&sh->span, memory_order_acquire);                         \
    }                                                                                       \
  }

DEFINE_OCT_GEMV(gemv_q4_0_vbmi, struct vnni_oct, oct_repack, q4_0_step4, oct_dot_at, 144)

/* Decode rows whose block count is a multiple of 8 (every layer of the
 * common shapes: n = 1024, 2048, 3072, ...) take the octet kernel `gemv`;
 * anything else (prefill, odd widths) `other`, the VNNI path's function it
 * replaces (set by kernels_fill_vbmi). */
#define DEFINE_VBMI_GEMM(name, gemv, other)                                                 \
  static gemm_fn other;                                                                     \
  VBMI static void name(int64_t n, const void *w, size_t w_stride, int64_t r0, int64_t r1,  \
                        const void *a, size_t a_stride, int64_t ncols, float *out,          \
                        int64_t out_stride) {                                               \
    if (ncols == 1 && n % 256 == 0 && n / 256 <= VBMI_MAX_OCTS) {                           \
      gemv(n, w, w_stride, r0, r1, a, out);                                                 \
      return;                                                                               \
    }                                                                                       \
    other(n, w, w_stride, r0, r1, a, a_stride, ncols, out, out_stride);                     \
  }
DEFINE_VBMI_GEMM(gemm_q4_0_vbmi, gemv_q4_0_vbmi, q4_0_other)

/* ---- Q8_0 decode: the convert and the two FMAs once per 8 blocks ---------
 * The VNNI Q8_0 kernel (kernels_avx512_q32.c) pays, per pair of blocks, a
 * vpdpbusd and then a convert, two FMAs, a scale conversion and a permute:
 * ~20 instructions per 68 bytes, 54 GB/s per core from L2 on a Zen 5 EPYC,
 * little above one core's DRAM stream there (41 GB/s). Here four pairs
 * (an octet, 272 bytes) each give their vpdpbusd vector (8 lanes per
 * block), and a transposing tree of adds brings the four to ONE vector of
 * 2 lanes per block, so the convert, the FMAs and the scales are paid once
 * per octet:
 *   level 1, pairs (0, 1) and (2, 3): 128-bit chunks [X.c0 X.c2 Y.c0 Y.c2]
 *     + [X.c1 X.c3 Y.c1 Y.c3] = one chunk (4 lanes) per block, blocks 0-3
 *     and 4-7;
 *   level 2: unpacklo_epi64 + unpackhi_epi64 of the two = chunk c holds
 *     block c in lanes 4c, 4c+1 and block c + 4 in lanes 4c+2, 4c+3.
 * Weights go in unsigned (w ^ 0x80 = w + 128) against the activations'
 * int8, and the offset -128 s_a is folded in per lane (ns = -128 s_a / 2,
 * each block's two lanes), as the VNNI kernel does per pair. The eight fp16
 * scales (words 0, 17, ..., 119 of the octet) come out in lane order from
 * two two-source word permutes over the octet's first 256 bytes. Integer
 * parts are exact; only the float summation order differs from the other
 * paths. */
struct q8_oct {
  __m512i q[4];    /* pair k: [block 2k's 32 int8 | block 2k+1's] */
  __m512 da, ns;   /* per lane, in the tree's block order */
};

/* Lane l of the tree's result holds block oct_block(l). */
static inline int oct_block(int l) { return l / 4 + 4 * ((l % 4) / 2); }

VBMI_INLINE void q8_oct_repack(const struct act_q8 *x, int64_t nb, struct q8_oct *oc) {
  for (int64_t o = 0; o < nb / 8; o++) {
    const struct act_q8 *b = x + 8 * o;
    for (int k = 0; k < 4; k++)
      oc[o].q[k] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b[2 * k].q)),
          _mm256_loadu_si256((const __m256i *)b[2 * k + 1].q), 1);
    alignas(64) float da[16], ns[16];
    for (int l = 0; l < 16; l++) {
      da[l] = b[oct_block(l)].d;
      ns[l] = b[oct_block(l)].s * (-128.0f * 0.5f);
    }
    oc[o].da = _mm512_load_ps(da);
    oc[o].ns = _mm512_load_ps(ns);
  }
}

/* One pair's vpdpbusd vector: 8 lanes per block. */
VBMI_INLINE __m512i q8_pair_ints(__m256i lo, __m256i hi, __m512i q) {
  const __m512i sgn = _mm512_set1_epi8((char)0x80);
  return _mm512_dpbusd_epi32(
      _mm512_setzero_si512(),
      _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), sgn), q);
}
/* The tree's level 1 (two pairs -> 4 lanes per block) and level 2. */
VBMI_INLINE __m512i q8_tree1(__m512i x, __m512i y) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, 0x88), _mm512_shuffle_i32x4(x, y, 0xDD));
}
VBMI_INLINE __m512i q8_tree2(__m512i z1, __m512i z2) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(z1, z2), _mm512_unpackhi_epi64(z1, z2));
}

/* The octet's integer dot products, 2 lanes per block (the tree above). */
VBMI_INLINE __m512i q8_oct_ints(__m256i lo[4], __m256i hi[4], const struct q8_oct *oc) {
  __m512i X[4];
  for (int k = 0; k < 4; k++) X[k] = q8_pair_ints(lo[k], hi[k], oc->q[k]);
  return q8_tree2(q8_tree1(X[0], X[1]), q8_tree1(X[2], X[3]));
}

/* The octet's eight scales as floats in the tree's lane order, from its
 * first 256 bytes (s0-s3 at words 0, 17, 34, 51 of bytes 0-127; s4-s7 at
 * words 4, 21, 38, 55 of bytes 128-255). */
VBMI_INLINE __m512 q8_oct_scales(const uint8_t *g) {
  const __m512i i03 = _mm512_set_epi16(
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 51, 51, 0, 0, 34, 34, 0, 0, 17, 17, 0, 0, 0, 0);
  const __m512i i47 = _mm512_set_epi16(
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      55, 55, 0, 0, 38, 38, 0, 0, 21, 21, 0, 0, 4, 4, 0, 0);
  const __m512i a = _mm512_permutex2var_epi16(_mm512_loadu_si512(g), i03, _mm512_loadu_si512(g + 64));
  const __m512i b =
      _mm512_permutex2var_epi16(_mm512_loadu_si512(g + 128), i47, _mm512_loadu_si512(g + 192));
  const __m512i s = _mm512_mask_blend_epi16(0xCCCC, a, b);
  return _mm512_cvtph_ps(_mm512_castsi512_si256(s));
}

VBMI_INLINE __m512 q8_oct_dot(const uint8_t *g, const struct q8_oct *oc, __m512 acc) {
  __m256i lo[4], hi[4];
  for (int k = 0; k < 4; k++) {
    lo[k] = _mm256_loadu_si256((const __m256i *)(g + 68 * k + 2));
    hi[k] = _mm256_loadu_si256((const __m256i *)(g + 68 * k + 36));
  }
  const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q8_oct_ints(lo, hi, oc)), oc->da, oc->ns);
  return _mm512_fmadd_ps(t, q8_oct_scales(g), acc);
}

VBMI_INLINE __m512 q8_oct_dot_at(const uint8_t *g, const struct q8_oct *oc, __m512 acc) {
  for (int pf = 0; pf < 320; pf += 64) VBMI_PREFETCH((const char *)g + VBMI_PF_BYTES + pf);
  return q8_oct_dot(g, oc, acc);
}

/* One octet of each of the four streams (g[s]: the octet's 272 bytes in
 * stream s) into acc[s].
 *
 * As the Q4_0 kernel's step: the first touches go round the four
 * streams one pair (68 bytes) at a time, in address order within
 * each, every load pinned in its place (the scale windows after them
 * hit L1), and a prefetch per stream and cache line, VBMI_PF_BYTES
 * ahead. Unpinned, GCC ordered them stream after stream and the
 * kernel read 19-28 GB/s from DRAM at 1 thread (pinned 37-38,
 * as the VNNI kernel). The prefetches step 64 bytes, not the
 * pairs' 68, so that no line of the octet is skipped. */
VBMI_INLINE void q8_0_step4(const uint8_t *const g[4], const struct q8_oct *oc, __m512 acc[4]) {
  __m512i X[4][2], z[4][2];
#define VBMI_PF(g, off) VBMI_PREFETCH((const char *)(g) + VBMI_PF_BYTES + (off))
#define VBMI_LOAD256(dst, ptr)                          \
  do {                                                  \
    (dst) = _mm256_loadu_si256((const __m256i *)(ptr)); \
    __asm__ volatile("" : "+v"(dst));                   \
  } while (0)
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {
    __m256i lo[4], hi[4];
    for (int s = 0; s < 4; s++) {
      VBMI_PF(g[s], 64 * k);
      VBMI_LOAD256(lo[s], g[s] + 68 * k + 2);
      VBMI_LOAD256(hi[s], g[s] + 68 * k + 36);
    }
    for (int s = 0; s < 4; s++) X[s][k & 1] = q8_pair_ints(lo[s], hi[s], oc->q[k]);
    if (k & 1)
      for (int s = 0; s < 4; s++) z[s][k >> 1] = q8_tree1(X[s][0], X[s][1]);
  }
  for (int s = 0; s < 4; s++) VBMI_PF(g[s], 256);
#undef VBMI_LOAD256
#undef VBMI_PF
  for (int s = 0; s < 4; s++) {
    const __m512 t =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(q8_tree2(z[s][0], z[s][1])), oc->da, oc->ns);
    acc[s] = _mm512_fmadd_ps(t, q8_oct_scales(g[s]), acc[s]);
  }
}

DEFINE_OCT_GEMV(gemv_q8_0_vbmi, struct q8_oct, q8_oct_repack, q8_0_step4, q8_oct_dot_at, 272)
#undef DEFINE_OCT_GEMV

DEFINE_VBMI_GEMM(gemm_q8_0_vbmi, gemv_q8_0_vbmi, q8_0_other)
#undef DEFINE_VBMI_GEMM

/* ---- A few columns (a batched decode step, an expert's few tokens) -------
 * B activation columns against the same rows: each weight octet is loaded
 * and unpacked once (oct_unpack, q8_unpack) and applied to up to FEW_COLS
 * columns (oct_col, q8_col), where the decode kernel run once per column
 * unpacked it B times and was compute bound from L2 (bench/RESULTS.md,
 * 2026-12-02). Two rows at a time, so each column's repacked activations
 * loaded for one octet serve both. A column's operations on its row are
 * exactly the decode kernel's (the same unpack, the same per-octet column
 * step, in octet order, summed by the same tree), so every output has the
 * bits of that column's decode: batching changes no logit on this path
 * (tests: test_kernels.c test_few_columns_are_decodes).
 *
 * Columns go in groups of at most FEW_COLS (two rows' 16 accumulators and
 * unpacked octets take 26 of the 32 vector registers), evened out (15 = 8
 * + 7, 12 = 6 + 6), each group's columns repacked into FEW_SLOTS octets on
 * the stack (60 KiB; wide rows take fewer columns per group). Groups of 6
 * had been 30% slower at 8 columns (two unpacks: 4 + 4): bench/few_cols.c,
 * Xeon, Q4_0 n = 1024 from DRAM, 84.0 -> 64.5 ms a pass, 0.060 -> 0.051 ms
 * from L2. */
#define FEW_COLS 8
#define FEW_SLOTS 160

/* The Q8_0 octet (272 bytes at g) unpacked: the four pairs as unsigned
 * bytes (w ^ 0x80) and the eight scales in the tree's lane order. */
struct q8_w {
  __m512i v[4];
  __m512 dw;
};
VBMI_INLINE struct q8_w q8_unpack(const uint8_t *g) {
  const __m512i sgn = _mm512_set1_epi8((char)0x80);
  struct q8_w o;
  for (int k = 0; k < 4; k++)
    o.v[k] = _mm512_xor_si512(
        _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 68 * k + 2))),
            _mm256_loadu_si256((const __m256i *)(g + 68 * k + 36)), 1),
        sgn);
  o.dw = q8_oct_scales(g);
  return o;
}
/* acc += an unpacked Q8_0 octet against one column's octet: q8_oct_dot's
 * integers (exact, whatever the order) and its float operations. */
VBMI_INLINE __m512 q8_col(const struct q8_w *o, const struct q8_oct *oc, __m512 acc) {
  __m512i X[4];
  for (int k = 0; k < 4; k++) X[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), o->v[k], oc->q[k]);
  const __m512i I = q8_tree2(q8_tree1(X[0], X[1]), q8_tree1(X[2], X[3]));
  const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), oc->da, oc->ns);
  return _mm512_fmadd_ps(t, o->dw, acc);
}
VBMI_INLINE struct oct_w q4_unpack(const uint8_t *g) {
  return oct_unpack(_mm512_loadu_si512(g), _mm512_loadu_si512(g + 8), _mm512_loadu_si512(g + 72),
                    _mm512_loadu_si512(g + 80));
}

/* name##_rows: rows [r0, r1) against nc (a constant where inlined) columns
 * whose octets are oc[c * no + o]; name: the gemm_fn (ncols >= 1; rows whose
 * block count is not a multiple of 8, or too long, go to SINGLE once per
 * column, as the decode would). */
#define DEFINE_FEW(name, OCT_T, W_T, UNPACK, COL, REPACK, OCT_BYTES, SINGLE)                      \
  VBMI_INLINE void name##_rows(const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1,        \
                               int64_t no, const OCT_T *oc, const int nc, float *out,             \
                               int64_t os) {                                                      \
    int64_t r = r0;                                                                               \
    for (; r + 2 <= r1; r += 2) {                                                                 \
      const uint8_t *wa = w + (size_t)r * w_stride, *wb = wa + w_stride;                          \
      __m512 a[FEW_COLS], b[FEW_COLS];                                                            \
      for (int c = 0; c < nc; c++) a[c] = b[c] = _mm512_setzero_ps();                             \
      for (int64_t o = 0; o < no; o++) {                                                          \
        const uint8_t *ga = wa + (OCT_BYTES) * o, *gb = wb + (OCT_BYTES) * o;                     \
        for (int pf = 0; pf < (OCT_BYTES); pf += 64) {                                            \
          VBMI_PREFETCH(ga + VBMI_PF_BYTES + pf);                                                 \
          VBMI_PREFETCH(gb + VBMI_PF_BYTES + pf);                                                 \
        }                                                                                         \
        const W_T ua = UNPACK(ga), ub = UNPACK(gb);                                               \
        for (int c = 0; c < nc; c++) {                                                            \
          a[c] = COL(&ua, oc + c * no + o, a[c]);                                                 \
          b[c] = COL(&ub, oc + c * no + o, b[c]);                                                 \
        }                                                                                         \
      }                                                                                           \
      for (int c = 0; c < nc; c++) {                                                              \
        float s4[4];                                                                              \
        reduce4(a[c], b[c], _mm512_setzero_ps(), _mm512_setzero_ps(), s4);                        \
        out[c * os + r] = s4[0];                                                                  \
        out[c * os + r + 1] = s4[1];                                                              \
      }                                                                                           \
    }                                                                                             \
    if (r < r1) {                                                                                 \
      const uint8_t *wr = w + (size_t)r * w_stride;                                               \
      __m512 a[FEW_COLS];                                                                         \
      for (int c = 0; c < nc; c++) a[c] = _mm512_setzero_ps();                                    \
      for (int64_t o = 0; o < no; o++) {                                                          \
        const W_T u = UNPACK(wr + (OCT_BYTES) * o);                                               \
        for (int c = 0; c < nc; c++) a[c] = COL(&u, oc + c * no + o, a[c]);                       \
      }                                                                                           \
      for (int c = 0; c < nc; c++) out[c * os + r] = row_sum(a[c]);                                                            \
    }                                                                                             \
  }                                                                                               \
  VBMI static void name(int64_t n, const void *wv, size_t w_stride, int64_t r0, int64_t r1,       \
                        const void *av, size_t a_stride, int64_t ncols, float *out, int64_t os) { \
    const int64_t no = n / 256;                                                                   \
    const uint8_t *w = wv, *a = av;                                                               \
    if (n % 256 != 0 || no > VBMI_MAX_OCTS) {                                                     \
      for (int64_t c = 0; c < ncols; c++)                                                         \
        SINGLE(n, w, w_stride, r0, r1, a + (size_t)c * a_stride, a_stride, 1, out + c * os, os);  \
      return;                                                                                     \
    }                                                                                             \
    alignas(64) OCT_T oc[FEW_SLOTS];                                                              \
    const int64_t cap = FEW_SLOTS / no < FEW_COLS ? FEW_SLOTS / no : FEW_COLS;                    \
    const int64_t groups = (ncols + cap - 1) / cap;                                               \
    for (int64_t g = 0; g < groups; g++) {                                                        \
      const int64_t c0 = ncols * g / groups, c1 = ncols * (g + 1) / groups;                       \
      for (int64_t c = c0; c < c1; c++)                                                           \
        REPACK((const struct act_q8 *)(a + (size_t)c * a_stride), n / 32, oc + (c - c0) * no);    \
      float *o = out + c0 * os;                                                                   \
      switch (c1 - c0) {                                                                          \
      case 1: name##_rows(w, w_stride, r0, r1, no, oc, 1, o, os); break;                          \
      case 2: name##_rows(w, w_stride, r0, r1, no, oc, 2, o, os); break;                          \
      case 3: name##_rows(w, w_stride, r0, r1, no, oc, 3, o, os); break;                          \
      case 4: name##_rows(w, w_stride, r0, r1, no, oc, 4, o, os); break;                          \
      case 5: name##_rows(w, w_stride, r0, r1, no, oc, 5, o, os); break;                          \
      case 6: name##_rows(w, w_stride, r0, r1, no, oc, 6, o, os); break;                          \
      case 7: name##_rows(w, w_stride, r0, r1, no, oc, 7, o, os); break;                          \
      default: name##_rows(w, w_stride, r0, r1, no, oc, 8, o, os); break;                         \
      }                                                                                           \
    }                                                                                             \
  }

DEFINE_FEW(few_q4_0_vbmi, struct vnni_oct, struct oct_w, q4_unpack, oct_col, oct_repack, 144,
           gemm_q4_0_vbmi)
DEFINE_FEW(few_q8_0_vbmi, struct q8_oct, struct q8_w, q8_unpack, q8_col, q8_oct_repack, 272,
           gemm_q8_0_vbmi)
#undef DEFINE_FEW

void kernels_fill_vbmi(struct kernel_ops *ops, bool amd) {
  q4_0_other = ops->gemm[GGML_TYPE_Q4_0];
  ops->gemm[GGML_TYPE_Q4_0] = gemm_q4_0_vbmi;
  ops->gemv_share[GGML_TYPE_Q4_0] = gemv_q4_0_vbmi_share;
  ops->gemv_share_max_n = 256 * VBMI_MAX_OCTS;
  ops->gemm_few[GGML_TYPE_Q4_0] = few_q4_0_vbmi;
  if (amd) {
    ops->gemm_few[GGML_TYPE_Q8_0] = few_q8_0_vbmi;
    q8_0_other = ops->gemm[GGML_TYPE_Q8_0];
    ops->gemm[GGML_TYPE_Q8_0] = gemm_q8_0_vbmi;
    ops->gemv_share[GGML_TYPE_Q8_0] = gemv_q8_0_vbmi_share;
  }
}
#endif
