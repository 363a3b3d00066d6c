/* mm_layout: how a parallel matrix job is cut into chunks and per-thread
 * regions (forward.c mm_run), shared with warm.c, which must know where each
 * thread will start reading the next job's weights. Private to the engine.
 *
 * A job's matrices are laid end to end in one chunk index space [0, total);
 * chunk_rows depends on the matrix only. Thread k of nr regions starts at
 * chunk total * k / nr and owns the chunks up to total * (k + 1) / nr. */
#ifndef TM_ENGINE_MM_LAYOUT_H
#define TM_ENGINE_MM_LAYOUT_H

#include <stdint.h>

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
 * larger budget there, and at least one chunk per thread per matrix. */
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

/* Rows per chunk of w in a job of ncols activation columns on nth threads,
 * decode_bytes the decode budget. Decode (ncols = 1) cuts every matrix into
 * at least nth chunks (a job of one matrix keeps every thread streaming),
 * then evens the chunks out: the same number of chunks as
 * the byte budget gives, each as close to rows / chunks as multiples of 16
 * allow, so no matrix ends in a sliver whose four row streams run only a
 * few rows each (Qwen3-0.6B Q4_0: k and v were 464 + 464 + 96 rows, now
 * 352 + 352 + 320). bench/step_ab.c, off/on: Q4_0 1 thread 1.0145, 1.0083
 * (A/A 0.9996), 2 threads 1.0041, 1.0035, 1.0032; Q8_0 2 threads 1.0000,
 * 1.0034, 1 thread 0.9990. */
static inline int64_t mm_chunk_rows(const struct mat *w, int64_t ncols, size_t decode_bytes,
                                    int nth) {
  size_t bytes = ncols == 1 ? decode_bytes : MM_CHUNK_BYTES;
  int64_t r = (int64_t)(bytes / (w->row_bytes ? w->row_bytes : 1));
  r = (r + 15) / 16 * 16;
  if (r < 16) r = 16;
  if (ncols == 1 && nth > 1 && w->rows > 0) {
    const int64_t per_thread = ((w->rows + nth - 1) / nth + 15) / 16 * 16;
    if (r > per_thread) r = per_thread;
  }
  if (ncols == 1 && w->rows > 0) {
    const int64_t nc = (w->rows + r - 1) / r;
    const int64_t even = ((w->rows + nc - 1) / nc + 15) / 16 * 16;
    if ((w->rows + even - 1) / even == nc) r = even; /* same chunk count */
  }
  return r;
}

static inline int64_t mm_chunks(const struct mat *w, int64_t ncols, size_t decode_bytes,
                                int nth) {
  int64_t cr = mm_chunk_rows(w, ncols, decode_bytes, nth);
  return (w->rows + cr - 1) / cr;
}

/* Regions of a job of total chunks on nth threads. */
static inline int mm_regions(int64_t total, int nth) {
  int nr = nth < MM_MAX_REGIONS ? nth : MM_MAX_REGIONS;
  if (nr > total) nr = (int)(total > 0 ? total : 1);
  return nr;
}

#endif
