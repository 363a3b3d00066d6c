/* mm_layout: how a parallel matrix job is cut into chunks and per-thread
 * regions (forward.c mm_run), shared with warm.c, which must know where each
 * thread will start reading the next job's weights. Private to the engine.
 *
 * A job's matrices are laid end to end; thread k's region is the k-th of nr
 * equal shares of their bytes (mm_bounds), cut into chunks of about the
 * byte budget (mm_chunk_rows) where it meets each matrix. */
#ifndef TM_ENGINE_MM_LAYOUT_H
#define TM_ENGINE_MM_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine_impl.h"
#include "engine/model.h"

/* Weight bytes per chunk (rounded to a multiple of 16 rows): big enough that
 * the decode kernels' row streams (2 or 4 per chunk, starting at its halves
 * or quarters) run long between restarts and a thread changes chunk rarely,
 * small enough to balance the threads on the smallest matrices. Prefill's
 * budget is MM_CHUNK_BYTES; decode's is the engine's decode_chunk_bytes
 * (engine.c: MM_DECODE_CHUNK_BYTES, or MM_DECODE_CHUNK_BYTES_LARGE on CPUs
 * whose cores stream faster through long chunks). A row's result never
 * depends on its chunk, so the layout may depend on the CPU and the thread
 * count without changing a logit.
 * -DMM_CHUNK_BYTES / -DMM_DECODE_CHUNK_BYTES(_LARGE) for experiments.
 * Measured, Qwen3-0.6B shape, weights through 2 MiB pages, interleaved runs
 * on the team's Xeon:
 *   2026-11-29 (2-stream Q4_0 kernel): 32 KiB 36.6 / 69.7 tok/s tg128 at 1 / 2
 *   threads, 128 KiB 40.1 / 76.8, 256 KiB 40.4 / 75.6, 512 KiB 75.7 at 2;
 *   pp512 at 2 threads 398 / 396 / 370 (32 / 128 / 256 KiB).
 *   Later the same day (4-stream Q4_0 kernel, idle warming): Q4_0 tg128 at 2
 *   threads 64 KiB 69.1, 128 KiB 74.5, 256 KiB 76.8, 512 KiB 75.8; Q8_0 128
 *   KiB 24.1 / 45.9, 256 KiB 24.5 / 47.1; Q4_0 pp512 at 2 threads 128 KiB
 *   368-380, 256 KiB 359-363. Hence 256 KiB for decode, 128 for prefill.
 *   2026-11-30 (thirteenth session), bench/decode_stream.c: one core's Q4_0
 *   kernel read 0.93 of the probe's loop in calls of 416 rows (240 KiB),
 *   0.89-0.90 in 832 and 0.86 in 1664: longer calls were slower there.
 * On a Zen 5 EPYC (fourteenth session, bench/step_ab.c, off/on step-time
 * ratios against 256 KiB, weights copied): Q4_0 1 thread 512 KiB 1.054,
 * 1 MiB 1.067, 2 MiB 1.089; 2 threads 1 MiB 1.035-1.075, 2 MiB 0.815 (the
 * 1.2-1.8 MB layer matrices became one chunk each, one thread idle); Q8_0
 * 1 MiB 1.107 / 1.086 at 1 / 2 threads, 2 MiB 1.142 / 1.105. Hence the
 * larger budget there (the regions, not the chunk count, give every thread
 * its share of a matrix). */
#ifndef MM_CHUNK_BYTES
#define MM_CHUNK_BYTES 131072
#endif
#ifndef MM_DECODE_CHUNK_BYTES
#define MM_DECODE_CHUNK_BYTES 262144
#endif
#ifndef MM_DECODE_CHUNK_BYTES_LARGE
#define MM_DECODE_CHUNK_BYTES_LARGE 2097152
#endif

/* At most this many regions (threads beyond it only take leftovers). */
#define MM_MAX_REGIONS 64

/* Regions of a job on nth threads: one per thread, up to MM_MAX_REGIONS. */
static inline int mm_regions(int nth) { return nth < MM_MAX_REGIONS ? nth : MM_MAX_REGIONS; }

/* Where region k of a job begins: item `item`, row `row` (item n, row 0:
 * the end of the job). */
struct mm_bound {
  int item;
  int64_t row;
};

static inline uint64_t mm_item_bytes(const struct mm_item *it) {
  return (uint64_t)it->w->rows * it->w->row_bytes;
}

/* The region bounds b[0..nr] of a job of items[0..n): region k covers the
 * items' rows from b[k] up to b[k + 1], laid end to end: the weight bytes
 * from total * k / nr on, the cut moved to the nearest multiple of 16 rows
 * of the item it falls in. So every thread streams one contiguous run of
 * the job's weights, of an equal share of its bytes whatever the matrices'
 * sizes (regions of whole chunks had given one thread two of a matrix's
 * three 2 MiB chunks: a Qwen3-30B-A3B output projection's threads ended
 * 28 us apart). */
static inline void mm_bounds(const struct mm_item *items, int n, int nr, struct mm_bound *b) {
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += mm_item_bytes(&items[i]);
  b[0] = (struct mm_bound){0, 0};
  for (int k = 1; k <= nr; k++) {
    const uint64_t t = total * (uint64_t)k / (uint64_t)nr; /* < 2^64: files < 2^57 bytes */
    uint64_t cum = 0;
    int i = 0;
    while (i < n && cum + mm_item_bytes(&items[i]) <= t) cum += mm_item_bytes(&items[i++]);
    struct mm_bound x = {n, 0};
    if (i < n) {
      int64_t row = (int64_t)((t - cum) / items[i].w->row_bytes);
      row = (row + 8) / 16 * 16;
      x = row >= items[i].w->rows ? (struct mm_bound){i + 1, 0} : (struct mm_bound){i, row};
      if (x.item == n) x.row = 0;
    }
    const struct mm_bound p = b[k - 1]; /* monotonic, even for tiny items */
    if (x.item < p.item || (x.item == p.item && x.row < p.row)) x = p;
    b[k] = x;
  }
}

/* Rows [*r0, *r1) of item i inside region k (bounds b); false if none. */
static inline bool mm_region_rows(const struct mm_item *items, const struct mm_bound *b, int k,
                                  int i, int64_t *r0, int64_t *r1) {
  if (i < b[k].item || i > b[k + 1].item) return false;
  *r0 = i == b[k].item ? b[k].row : 0;
  *r1 = i == b[k + 1].item ? b[k + 1].row : items[i].w->rows;
  return *r0 < *r1;
}

/* Rows per chunk of a run of `rows` rows of w in a job of ncols activation
 * columns, decode_bytes the decode budget (prefill's is MM_CHUNK_BYTES).
 * Decode (ncols = 1) evens the chunks out: the same number of chunks as the
 * budget gives, each as close to rows / chunks as multiples of 16 allow, so
 * no run ends in a sliver whose four row streams run only a few rows each
 * (Qwen3-0.6B Q4_0: k and v were 464 + 464 + 96 rows, now 352 + 352 + 320).
 * bench/step_ab.c, off/on: Q4_0 1 thread 1.0145, 1.0083 (A/A 0.9996), 2
 * threads 1.0041, 1.0035, 1.0032; Q8_0 2 threads 1.0000, 1.0034, 1 thread
 * 0.9990. */
static inline int64_t mm_chunk_rows(const struct mat *w, int64_t rows, int64_t ncols,
                                    size_t decode_bytes) {
  size_t bytes = ncols == 1 ? decode_bytes : MM_CHUNK_BYTES;
  int64_t r = (int64_t)(bytes / (w->row_bytes ? w->row_bytes : 1));
  r = (r + 15) / 16 * 16;
  if (r < 16) r = 16;
  if (ncols == 1 && rows > 0) {
    const int64_t nc = (rows + r - 1) / r;
    r = ((rows + nc - 1) / nc + 15) / 16 * 16; /* <= r: the same chunk count */
  }
  return r;
}

/* Below this many columns, a product runs the table's few-column kernel
 * (kernels.h gemm_few: each weight block unpacked once for all columns,
 * each column with its decode's bits) where it has one, else, for a
 * 32-element type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), the decode kernel once
 * per column over each chunk (forward.c mm_chunk) instead of the prefill
 * panels, whose build costs more than it saves there. bench/few_cols.c,
 * 2026-12-03, Xeon (AMX, VBMI), one thread, 512 MiB from DRAM, ms per pass
 * at 2 / 4 / 8 / 15 columns, per-column decode vs gemm_few: Q4_0 44.3 /
 * 39.6, 74.8 / 48.7, 134.0 / 84.0, 230.4 / 129.1; Q6_K 49.6 / 39.1, 86.6 /
 * 54.8, 162.8 / 74.2, 290.0 / 133.2 (its panels 40.1, 54.2, 113.9, 143.2:
 * faster from L2, slower from DRAM, where a step's head is read). Before
 * gemm_few: Measured 2026-12-02, AMD Zen 4 (EPYC,
 * AVX-512 VNNI), one thread, a 512 MiB 1024-column matrix from DRAM, ms per
 * column, per-column decode kernel over 128 KiB chunks vs the panels:
 * Q4_0 2: 24.1 / 106.5, 4: 22.1 / 53.3, 8: 19.8 / 29.1, 12: 18.9 / 21.8,
 * 16: 20.2 / 17.7; Q8_0 2: 27.9 / 96.7, 8: 13.1 / 25.1, 16: 12.6 / 14.1,
 * 32: 11.6 / 8.9. The K-quant panels are already fast there (Q6_K 2 columns:
 * 15.8 ms vs 31.9 per column). */
#define MM_SMALL_BATCH_COLS 16
static inline bool mm_small_batch_type(uint32_t t) {
  return t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_0 ||
         t == GGML_TYPE_Q5_1 || t == GGML_TYPE_Q8_0;
}

/* Chunks of region k (bounds b) in a job of items[0..n). */
static inline int64_t mm_region_chunks(const struct mm_item *items, int n,
                                       const struct mm_bound *b, int k, size_t decode_bytes) {
  int64_t count = 0;
  for (int i = b[k].item; i < n && i <= b[k + 1].item; i++) {
    int64_t r0, r1;
    if (!mm_region_rows(items, b, k, i, &r0, &r1)) continue;
    const int64_t cr = mm_chunk_rows(items[i].w, r1 - r0, items[i].ncols, decode_bytes);
    count += (r1 - r0 + cr - 1) / cr;
  }
  return count;
}

/* All the chunks of a job of items[0..n) on nth threads. */
static inline int64_t mm_job_chunks(const struct mm_item *items, int n, int nth,
                                    size_t decode_bytes) {
  const int nr = mm_regions(nth);
  struct mm_bound b[MM_MAX_REGIONS + 1];
  mm_bounds(items, n, nr, b);
  int64_t count = 0;
  for (int k = 0; k < nr; k++) count += mm_region_chunks(items, n, b, k, decode_bytes);
  return count;
}

#endif
