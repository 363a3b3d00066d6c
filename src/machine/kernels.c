/* kernels: the timed loops of the probe and their run-time dispatch; see
 * kernels.h.
 *
 * Design notes that a reader would otherwise get wrong:
 * - Memory loops use several independent accumulators so the adds never limit
 *   the loads; the loads are what is measured.
 * - Compute loops keep 12 independent accumulator registers: an FMA has a
 *   latency of about 4 cycles and most cores issue 2 per cycle, so at least 8
 *   chains must be in flight to saturate both ports.
 * - acc = acc * mul + add with 0 < mul < 1 converges to add / (1 - mul): no
 *   overflow, no denormals (which would slow some cores by 100x).
 * - Integer dot products accumulate into 32-bit lanes; the values are small so
 *   the sums stay far from overflow (and SIMD integer adds wrap, never trap). */
#include "machine/kernels.h"

#include "util/amx.h"

#include <string.h>

/* 1 KiB first: the best found where the distance mattered (the Zen 5); a
 * quick probe (2 passes) times 1 and 2 KiB. See the read loops below. */
const size_t kern_read_pf_bytes[KERN_READ_PF_N] = {1024, 2048, 0};

/* ---------------------------------------------------------------- scalar --- */
/* The fallback everywhere; on aarch64 NEON is baseline, so these go unused. */

/* No software prefetch: pf_bytes is ignored (every pass times the same loop). */
__attribute__((unused)) static uint64_t read_scalar(const void *buf, size_t n_bytes,
                                                    size_t pf_bytes) {
  (void)pf_bytes;
  const uint64_t *p = buf;
  size_t n = n_bytes / 8;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i < n; i += 4) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  return a0 + a1 + a2 + a3;
}

__attribute__((unused)) static uint64_t copy_scalar(void *dst, const void *src, size_t n_bytes) {
  uint64_t *d = dst;
  const uint64_t *s = src;
  size_t n = n_bytes / 8;
  for (size_t i = 0; i < n; i += 4) {
    d[i] = s[i];
    d[i + 1] = s[i + 1];
    d[i + 2] = s[i + 2];
    d[i + 3] = s[i + 3];
  }
  return d[n - 1];
}

/* Two FLOPs (a multiply and an add) per accumulator per iteration; the build
 * has no FMA instruction in its baseline, and fmaf() would be a library call. */
__attribute__((unused)) static double fma_scalar(uint64_t iters, float mul, float add) {
  float a[8];
  for (int j = 0; j < 8; j++) a[j] = (float)j;
  for (uint64_t i = 0; i < iters; i++)
    for (int j = 0; j < 8; j++) a[j] = a[j] * mul + add;
  double s = 0;
  for (int j = 0; j < 8; j++) s += a[j];
  return s;
}

/* ---------------------------------------------------------------- x86-64 --- */
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#define TM_AVX512 __attribute__((target("avx512f")))
#define TM_AVX2 __attribute__((target("avx2")))
#define TM_AVX2FMA __attribute__((target("avx2,fma")))
#define TM_AVX512VNNI __attribute__((target("avx512f,avx512vnni")))
#define TM_AVXVNNI __attribute__((target("avx2,avxvnni")))
#define TM_AMXINT8 __attribute__((target("amx-tile,amx-int8")))

/* The read loops stream four quarters of the buffer at once, one 64-byte
 * line of each per turn, each with software prefetch pf_bytes ahead (none
 * when 0). The ceiling is what the memory gives a core that asks well, and
 * how to ask well depends on the core, so the probe times every pass with
 * the next distance of kern_read_pf_bytes and keeps the best pass. Patterns
 * measured (1 GiB on huge pages, variants interleaved, GB/s at 1 / 2
 * threads) on the team's Xeon (2026-11-30):
 *   two halves, two lines of each per turn, 1 KiB ahead (before): 19.0 / 36.5
 *   four quarters, one line of each per turn, 2 KiB ahead:        20.2 / 38.5
 *   the same with the quarters exactly 2^k lines apart:            17.7 / 34.4
 *   four quarters, two lines of each per turn:                     16.4 / 31.5
 *   a plain sequential loop, hardware prefetch only:               16.2 / 32.0
 * and on an AMD Zen 5 (2026-11-30, the four quarters, 64 MiB slices of the
 * variants in turn, against 2 KiB ahead): 1 KiB ahead 1.05-1.11 / 1.03-1.17,
 * none 1.02-1.09 / 1.00-1.13, 512 bytes 0.92-0.96 / 0.94-1.03, 3 KiB 0.97 /
 * 0.96; eight streams 0.92-1.02. Only 2 KiB was timed before, so on that
 * machine the ceiling read 3-17% low.
 * Streams a power of two apart read slowest (most likely they share DRAM
 * banks), so the quarters start probe_stream_lines apart: an odd multiple of
 * 8 lines (== 520 mod 1024), never a multiple of a large power of two. The engine's decode
 * kernels read 87-96% of the 2 KiB loop on their own (bench/decode_stream.c). */

/* Lines per stream for a slice of n lines (0: too small, one plain stream);
 * the 4 * q lines of the streams are followed by the slice's last lines. */
static inline size_t probe_stream_lines(size_t n) {
  size_t q = n / 4;
  return q < 1544 ? 0 : (q - 520) / 1024 * 1024 + 520;
}

/* One loop per distance (a constant, so pf == 0 issues no prefetch). */
TM_AVX512 static inline __attribute__((always_inline)) uint64_t read_avx512_pf(const void *buf,
                                                                              size_t n_bytes,
                                                                              const size_t pf) {
  const __m512i *p0 = buf;
  const size_t n = n_bytes / 64, q = probe_stream_lines(n);
  const __m512i *p1 = p0 + q, *p2 = p1 + q, *p3 = p2 + q;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < q; i++) {
    if (pf) {
      _mm_prefetch((const char *)(p0 + i) + pf, _MM_HINT_T0);
      _mm_prefetch((const char *)(p1 + i) + pf, _MM_HINT_T0);
      _mm_prefetch((const char *)(p2 + i) + pf, _MM_HINT_T0);
      _mm_prefetch((const char *)(p3 + i) + pf, _MM_HINT_T0);
    }
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p0 + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p1 + i));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p2 + i));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p3 + i));
  }
  for (size_t i = 4 * q; i < n; i++) a0 = _mm512_add_epi64(a0, _mm512_load_si512(p0 + i));
  a0 = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  /* Not _mm512_reduce_add_epi64: GCC implements it with signed scalar adds,
   * which overflow (undefined behaviour) on arbitrary data. */
  uint64_t w[8];
  _mm512_storeu_si512(w, a0);
  return w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
}

TM_AVX512 static uint64_t read_avx512(const void *buf, size_t n_bytes, size_t pf_bytes) {
  switch (pf_bytes) {
  case 0: return read_avx512_pf(buf, n_bytes, 0);
  case 1024: return read_avx512_pf(buf, n_bytes, 1024);
  default: return read_avx512_pf(buf, n_bytes, 2048);
  }
}

TM_AVX512 static uint64_t copy_avx512(void *dst, const void *src, size_t n_bytes) {
  __m512i *d = dst;
  const __m512i *s = src;
  size_t n = n_bytes / 64;
  for (size_t i = 0; i < n; i += 4) {
    __m512i x0 = _mm512_load_si512(s + i), x1 = _mm512_load_si512(s + i + 1);
    __m512i x2 = _mm512_load_si512(s + i + 2), x3 = _mm512_load_si512(s + i + 3);
    _mm512_store_si512(d + i, x0);
    _mm512_store_si512(d + i + 1, x1);
    _mm512_store_si512(d + i + 2, x2);
    _mm512_store_si512(d + i + 3, x3);
  }
  return ((const uint64_t *)dst)[n_bytes / 8 - 1];
}

TM_AVX2 static inline __attribute__((always_inline)) uint64_t read_avx2_pf(const void *buf,
                                                                         size_t n_bytes,
                                                                         const size_t pf) {
  /* The streams of read_avx512, each line as two 32-byte loads. */
  const __m256i *p0 = buf;
  const size_t n = n_bytes / 64, q = probe_stream_lines(n);
  const __m256i *p1 = p0 + 2 * q, *p2 = p1 + 2 * q, *p3 = p2 + 2 * q;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < 2 * q; i += 2) {
    if (pf) {
      _mm_prefetch((const char *)(p0 + i) + pf, _MM_HINT_T0);
      _mm_prefetch((const char *)(p1 + i) + pf, _MM_HINT_T0);
      _mm_prefetch((const char *)(p2 + i) + pf, _MM_HINT_T0);
      _mm_prefetch((const char *)(p3 + i) + pf, _MM_HINT_T0);
    }
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(p0 + i));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(p1 + i));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(p2 + i));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(p3 + i));
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(p0 + i + 1));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(p1 + i + 1));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(p2 + i + 1));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(p3 + i + 1));
  }
  for (size_t i = 8 * q; i < 2 * n; i++) a0 = _mm256_add_epi64(a0, _mm256_load_si256(p0 + i));
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t w[4];
  _mm256_storeu_si256((__m256i *)w, a0);
  return w[0] + w[1] + w[2] + w[3];
}

TM_AVX2 static uint64_t read_avx2(const void *buf, size_t n_bytes, size_t pf_bytes) {
  switch (pf_bytes) {
  case 0: return read_avx2_pf(buf, n_bytes, 0);
  case 1024: return read_avx2_pf(buf, n_bytes, 1024);
  default: return read_avx2_pf(buf, n_bytes, 2048);
  }
}

TM_AVX2 static uint64_t copy_avx2(void *dst, const void *src, size_t n_bytes) {
  __m256i *d = dst;
  const __m256i *s = src;
  size_t n = n_bytes / 32;
  for (size_t i = 0; i < n; i += 4) {
    __m256i x0 = _mm256_load_si256(s + i), x1 = _mm256_load_si256(s + i + 1);
    __m256i x2 = _mm256_load_si256(s + i + 2), x3 = _mm256_load_si256(s + i + 3);
    _mm256_store_si256(d + i, x0);
    _mm256_store_si256(d + i + 1, x1);
    _mm256_store_si256(d + i + 2, x2);
    _mm256_store_si256(d + i + 3, x3);
  }
  return ((const uint64_t *)dst)[n_bytes / 8 - 1];
}

/* 12 accumulators x 16 lanes x 2 FLOPs = 384 FLOPs per iteration. */
TM_AVX512 static double fma_avx512(uint64_t iters, float mul, float add) {
  __m512 m = _mm512_set1_ps(mul), c = _mm512_set1_ps(add);
  __m512 a[12];
  for (int j = 0; j < 12; j++) a[j] = _mm512_set1_ps((float)j);
  for (uint64_t i = 0; i < iters; i++) {
    a[0] = _mm512_fmadd_ps(a[0], m, c);
    a[1] = _mm512_fmadd_ps(a[1], m, c);
    a[2] = _mm512_fmadd_ps(a[2], m, c);
    a[3] = _mm512_fmadd_ps(a[3], m, c);
    a[4] = _mm512_fmadd_ps(a[4], m, c);
    a[5] = _mm512_fmadd_ps(a[5], m, c);
    a[6] = _mm512_fmadd_ps(a[6], m, c);
    a[7] = _mm512_fmadd_ps(a[7], m, c);
    a[8] = _mm512_fmadd_ps(a[8], m, c);
    a[9] = _mm512_fmadd_ps(a[9], m, c);
    a[10] = _mm512_fmadd_ps(a[10], m, c);
    a[11] = _mm512_fmadd_ps(a[11], m, c);
  }
  __m512 s = a[0];
  for (int j = 1; j < 12; j++) s = _mm512_add_ps(s, a[j]);
  return (double)_mm512_reduce_add_ps(s);
}

/* 12 accumulators x 8 lanes x 2 FLOPs = 192 FLOPs per iteration. */
TM_AVX2FMA static double fma_avx2(uint64_t iters, float mul, float add) {
  __m256 m = _mm256_set1_ps(mul), c = _mm256_set1_ps(add);
  __m256 a[12];
  for (int j = 0; j < 12; j++) a[j] = _mm256_set1_ps((float)j);
  for (uint64_t i = 0; i < iters; i++) {
    a[0] = _mm256_fmadd_ps(a[0], m, c);
    a[1] = _mm256_fmadd_ps(a[1], m, c);
    a[2] = _mm256_fmadd_ps(a[2], m, c);
    a[3] = _mm256_fmadd_ps(a[3], m, c);
    a[4] = _mm256_fmadd_ps(a[4], m, c);
    a[5] = _mm256_fmadd_ps(a[5], m, c);
    a[6] = _mm256_fmadd_ps(a[6], m, c);
    a[7] = _mm256_fmadd_ps(a[7], m, c);
    a[8] = _mm256_fmadd_ps(a[8], m, c);
    a[9] = _mm256_fmadd_ps(a[9], m, c);
    a[10] = _mm256_fmadd_ps(a[10], m, c);
    a[11] = _mm256_fmadd_ps(a[11], m, c);
  }
  __m256 s = a[0];
  for (int j = 1; j < 12; j++) s = _mm256_add_ps(s, a[j]);
  float w[8];
  _mm256_storeu_ps(w, s);
  double r = 0;
  for (int j = 0; j < 8; j++) r += w[j];
  return r;
}

/* vpdpbusd on a 512-bit register: 64 u8 x s8 multiply-adds = 128 ops;
 * 12 accumulators -> 1536 ops per iteration. */
TM_AVX512VNNI static int64_t dot_avx512vnni(uint64_t iters, int8_t seed) {
  __m512i u = _mm512_set1_epi8(1), s = _mm512_set1_epi8(seed);
  __m512i a[12];
  for (int j = 0; j < 12; j++) a[j] = _mm512_set1_epi32(j);
  for (uint64_t i = 0; i < iters; i++) {
    a[0] = _mm512_dpbusd_epi32(a[0], u, s);
    a[1] = _mm512_dpbusd_epi32(a[1], u, s);
    a[2] = _mm512_dpbusd_epi32(a[2], u, s);
    a[3] = _mm512_dpbusd_epi32(a[3], u, s);
    a[4] = _mm512_dpbusd_epi32(a[4], u, s);
    a[5] = _mm512_dpbusd_epi32(a[5], u, s);
    a[6] = _mm512_dpbusd_epi32(a[6], u, s);
    a[7] = _mm512_dpbusd_epi32(a[7], u, s);
    a[8] = _mm512_dpbusd_epi32(a[8], u, s);
    a[9] = _mm512_dpbusd_epi32(a[9], u, s);
    a[10] = _mm512_dpbusd_epi32(a[10], u, s);
    a[11] = _mm512_dpbusd_epi32(a[11], u, s);
  }
  int64_t r = 0;
  for (int j = 0; j < 12; j++) {
    int32_t w[16];
    _mm512_storeu_si512(w, a[j]);
    for (int k = 0; k < 16; k++) r += w[k];
  }
  return r;
}

/* AVX-VNNI (VEX-encoded) vpdpbusd on 256 bits: 32 multiply-adds = 64 ops;
 * 12 accumulators -> 768 ops per iteration. */
TM_AVXVNNI static int64_t dot_avxvnni(uint64_t iters, int8_t seed) {
  __m256i u = _mm256_set1_epi8(1), s = _mm256_set1_epi8(seed);
  __m256i a[12];
  for (int j = 0; j < 12; j++) a[j] = _mm256_set1_epi32(j);
  for (uint64_t i = 0; i < iters; i++) {
    a[0] = _mm256_dpbusd_avx_epi32(a[0], u, s);
    a[1] = _mm256_dpbusd_avx_epi32(a[1], u, s);
    a[2] = _mm256_dpbusd_avx_epi32(a[2], u, s);
    a[3] = _mm256_dpbusd_avx_epi32(a[3], u, s);
    a[4] = _mm256_dpbusd_avx_epi32(a[4], u, s);
    a[5] = _mm256_dpbusd_avx_epi32(a[5], u, s);
    a[6] = _mm256_dpbusd_avx_epi32(a[6], u, s);
    a[7] = _mm256_dpbusd_avx_epi32(a[7], u, s);
    a[8] = _mm256_dpbusd_avx_epi32(a[8], u, s);
    a[9] = _mm256_dpbusd_avx_epi32(a[9], u, s);
    a[10] = _mm256_dpbusd_avx_epi32(a[10], u, s);
    a[11] = _mm256_dpbusd_avx_epi32(a[11], u, s);
  }
  int64_t r = 0;
  for (int j = 0; j < 12; j++) {
    int32_t w[8];
    _mm256_storeu_si256((__m256i *)w, a[j]);
    for (int k = 0; k < 8; k++) r += w[k];
  }
  return r;
}

/* AMX int8: tdpbssd multiplies a 16 x 64 s8 tile by a 64 x 16 s8 tile
 * (stored as 16 rows of 16 x 4 bytes) into a 16 x 16 int32 tile: 16384
 * multiply-adds = 32768 ops. Four independent accumulator tiles keep the
 * unit busy (one product's latency is several times its issue interval);
 * four products per iteration -> 131072 ops. The A tiles' rows are 33 ones
 * and 31 minus ones, the B tiles all seed: each product adds 2 x seed to
 * every element, so the result is known (tested) and stays far from
 * int32's range for any iteration count a pass runs. */
struct amx_tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

TM_AMXINT8 static int64_t dot_amx_int8(uint64_t iters, int8_t seed) {
  struct amx_tilecfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  int8_t a[16 * 64], b[16 * 64];
  for (int i = 0; i < 16 * 64; i++) a[i] = (int8_t)(i % 64 < 33 ? 1 : -1), b[i] = seed;
  _tile_loadconfig(&cfg);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, b, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, a, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (uint64_t i = 0; i < iters; i++) {
    _tile_dpbssd(0, 4, 5);
    _tile_dpbssd(1, 4, 6);
    _tile_dpbssd(2, 7, 5);
    _tile_dpbssd(3, 7, 6);
  }
  int32_t c[4][16 * 16];
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  _tile_release();
  int64_t r = 0;
  for (int t = 0; t < 4; t++)
    for (int k = 0; k < 16 * 16; k++) r += c[t][k];
  return r;
}

/* AVX-VNNI is CPUID leaf 7 sub-leaf 1, EAX bit 4. Asked directly because not
 * every compiler's __builtin_cpu_supports knows the name; the caller has
 * already checked AVX2 (which implies the OS saves the YMM state). */
static int cpu_has_avx_vnni(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
  return (a >> 4) & 1;
}

void kernels_select(struct kernels *k) {
  memset(k, 0, sizeof *k);
  k->int8_path = "";
  k->int8_tile_path = "";
  __builtin_cpu_init();
  /* __builtin_cpu_supports checks the OS state (XGETBV) too, so a kernel that
   * does not save ZMM registers never gets AVX-512 code. */
  int avx512 = __builtin_cpu_supports("avx512f");
  int avx2 = __builtin_cpu_supports("avx2");
  int fma = __builtin_cpu_supports("fma");
  if (avx512) {
    k->read = read_avx512, k->copy = copy_avx512, k->mem_path = "avx512f";
    k->fma = fma_avx512, k->f32_path = "avx512f", k->f32_flops_per_iter = 12 * 16 * 2;
  } else if (avx2) {
    k->read = read_avx2, k->copy = copy_avx2, k->mem_path = "avx2";
  } else {
    k->read = read_scalar, k->copy = copy_scalar, k->mem_path = "scalar";
  }
  if (!avx512) {
    if (avx2 && fma)
      k->fma = fma_avx2, k->f32_path = "avx2+fma", k->f32_flops_per_iter = 12 * 8 * 2;
    else
      k->fma = fma_scalar, k->f32_path = "scalar", k->f32_flops_per_iter = 8 * 2;
  }
  if (avx512 && __builtin_cpu_supports("avx512vnni")) {
    k->dot = dot_avx512vnni, k->int8_path = "avx512_vnni", k->int8_ops_per_iter = 12 * 64 * 2;
  } else if (avx2 && cpu_has_avx_vnni()) {
    k->dot = dot_avxvnni, k->int8_path = "avx_vnni", k->int8_ops_per_iter = 12 * 32 * 2;
  }
  if (tm_amx_int8_usable())
    k->tile_dot = dot_amx_int8, k->int8_tile_path = "amx_int8",
    k->int8_tile_ops_per_iter = 4.0 * 16 * 16 * 64 * 2;
}

/* --------------------------------------------------------------- aarch64 --- */
#elif defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
/* GCC's arm_neon.h declares vdotq_s32 for functions with a target attribute;
 * clang before 16 declares it only when the whole build targets dotprod. When
 * neither holds the int8 path is left out (reported as absent, never faked). */
#if defined(__ARM_FEATURE_DOTPROD)
#define TM_HAVE_DOTPROD 1
#define TM_DOTPROD
#elif !defined(__clang__)
#define TM_HAVE_DOTPROD 1
#define TM_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#elif __clang_major__ >= 16
#define TM_HAVE_DOTPROD 1
#define TM_DOTPROD __attribute__((target("dotprod")))
#else
#define TM_HAVE_DOTPROD 0
#endif

/* No software prefetch (pf_bytes ignored): not measured on an ARM core yet. */
static uint64_t read_neon(const void *buf, size_t n_bytes, size_t pf_bytes) {
  (void)pf_bytes;
  const uint64_t *p = buf;
  size_t n = n_bytes / 8;
  uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 8) {
    a0 = vaddq_u64(a0, vld1q_u64(p + i));
    a1 = vaddq_u64(a1, vld1q_u64(p + i + 2));
    a2 = vaddq_u64(a2, vld1q_u64(p + i + 4));
    a3 = vaddq_u64(a3, vld1q_u64(p + i + 6));
  }
  a0 = vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3));
  return vgetq_lane_u64(a0, 0) + vgetq_lane_u64(a0, 1);
}

static uint64_t copy_neon(void *dst, const void *src, size_t n_bytes) {
  uint64_t *d = dst;
  const uint64_t *s = src;
  size_t n = n_bytes / 8;
  for (size_t i = 0; i < n; i += 8) {
    uint64x2_t x0 = vld1q_u64(s + i), x1 = vld1q_u64(s + i + 2);
    uint64x2_t x2 = vld1q_u64(s + i + 4), x3 = vld1q_u64(s + i + 6);
    vst1q_u64(d + i, x0);
    vst1q_u64(d + i + 2, x1);
    vst1q_u64(d + i + 4, x2);
    vst1q_u64(d + i + 6, x3);
  }
  return d[n - 1];
}

/* 12 accumulators x 4 lanes x 2 FLOPs = 96 FLOPs per iteration. */
static double fma_neon(uint64_t iters, float mul, float add) {
  float32x4_t m = vdupq_n_f32(mul), c = vdupq_n_f32(add);
  float32x4_t a[12];
  for (int j = 0; j < 12; j++) a[j] = vdupq_n_f32((float)j);
  for (uint64_t i = 0; i < iters; i++)
    for (int j = 0; j < 12; j++) a[j] = vfmaq_f32(c, a[j], m);
  double r = 0;
  for (int j = 0; j < 12; j++) r += vaddvq_f32(a[j]);
  return r;
}

#if TM_HAVE_DOTPROD
/* sdot: 16 s8 x s8 multiply-adds = 32 ops; 12 accumulators -> 384 ops. */
TM_DOTPROD static int64_t dot_neon(uint64_t iters, int8_t seed) {
  int8x16_t u = vdupq_n_s8(1), s = vdupq_n_s8(seed);
  int32x4_t a[12];
  for (int j = 0; j < 12; j++) a[j] = vdupq_n_s32(j);
  for (uint64_t i = 0; i < iters; i++)
    for (int j = 0; j < 12; j++) a[j] = vdotq_s32(a[j], u, s);
  int64_t r = 0;
  for (int j = 0; j < 12; j++) r += vaddvq_s32(a[j]);
  return r;
}
#endif

void kernels_select(struct kernels *k) {
  memset(k, 0, sizeof *k);
  k->read = read_neon, k->copy = copy_neon, k->mem_path = "neon";
  k->fma = fma_neon, k->f32_path = "neon", k->f32_flops_per_iter = 12 * 4 * 2;
  k->int8_path = "";
  k->int8_tile_path = "";
#if TM_HAVE_DOTPROD
  if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP)
    k->dot = dot_neon, k->int8_path = "dotprod", k->int8_ops_per_iter = 12 * 16 * 2;
#endif
}

/* ------------------------------------------------------------ elsewhere --- */
#else
void kernels_select(struct kernels *k) {
  memset(k, 0, sizeof *k);
  k->read = read_scalar, k->copy = copy_scalar, k->mem_path = "scalar";
  k->fma = fma_scalar, k->f32_path = "scalar", k->f32_flops_per_iter = 8 * 2;
  k->int8_path = "";
  k->int8_tile_path = "";
}
#endif
