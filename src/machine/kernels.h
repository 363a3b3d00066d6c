/* kernels (machine-internal): the loops the probe times, and the one place that
 * chooses among them for this CPU at run time.
 *
 * The build is generic x86-64 (no -march=native), so each SIMD loop is compiled
 * with a target attribute and chosen by kernels_select() from what the CPU (and
 * the OS, for AVX state) supports: AVX-512 or AVX2 on x86-64, NEON on aarch64,
 * a scalar loop everywhere else. Every loop returns a value derived from all the
 * data it touched so the compiler cannot drop the work; callers store it in a
 * volatile sink.
 *
 * Not for use outside src/machine/. */
#ifndef TM_MACHINE_KERNELS_H
#define TM_MACHINE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Sums (or xors) every 64-bit word of buf[0..n_bytes). buf is 64-byte aligned and
 * n_bytes a multiple of 256. pf_bytes: how far ahead of its loads the loop
 * issues software prefetches, one of kern_read_pf_bytes (0: none, the
 * hardware prefetchers only); loops without software prefetch ignore it. */
typedef uint64_t (*kern_read_fn)(const void *buf, size_t n_bytes, size_t pf_bytes);

/* The prefetch distances a read measurement cycles through, one per pass
 * (pass i uses kern_read_pf_bytes[i % KERN_READ_PF_N]); the best pass is the
 * figure. Which distance reads fastest depends on the core (kernels.c). */
#define KERN_READ_PF_N 3
extern const size_t kern_read_pf_bytes[KERN_READ_PF_N];
/* Copies src to dst (n_bytes, both 64-byte aligned, a multiple of 256) with
 * ordinary (write-allocate) stores; returns a word of dst. */
typedef uint64_t (*kern_copy_fn)(void *dst, const void *src, size_t n_bytes);
/* Runs iters rounds of independent multiply-adds on register accumulators;
 * returns a value derived from all accumulators. */
typedef double (*kern_fma_fn)(uint64_t iters, float mul, float add);
typedef int64_t (*kern_dot_fn)(uint64_t iters, int8_t seed);

struct kernels {
  kern_read_fn read;
  kern_copy_fn copy;
  const char *mem_path;       /* "avx512f", "avx2", "neon", "scalar" */
  kern_fma_fn fma;
  const char *f32_path;       /* "avx512f", "avx2+fma", "neon", "scalar" */
  double f32_flops_per_iter;  /* FLOPs one thread does per fma iteration */
  kern_dot_fn dot;            /* NULL when the CPU has no int8 dot product */
  const char *int8_path;      /* "avx512_vnni", "avx_vnni", "dotprod", "" */
  double int8_ops_per_iter;   /* 2 ops per multiply-add */
  /* Matrix tiles (Intel AMX int8: tdpbssd on 16 x 64-byte tiles), a unit
   * apart from the vector registers: NULL unless the CPU has AMX-TILE and
   * AMX-INT8, the OS saves the tile state, and Linux granted this process
   * the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked once here). Each
   * call configures the tiles of its own thread and releases them. */
  kern_dot_fn tile_dot;
  const char *int8_tile_path; /* "amx_int8", "" */
  double int8_tile_ops_per_iter;
};

/* Fills k with the best loops this CPU runs. Cheap; call once per probe. */
void kernels_select(struct kernels *k);

#endif
