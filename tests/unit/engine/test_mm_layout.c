/* test_mm_layout: the work split of a parallel matrix job (mm_layout.h).
 * For jobs of one to sixteen matrices of assorted shapes on 1 to 8 threads
 * and several chunk budgets: the regions run in order and cover every row of
 * every matrix exactly once; each region holds 1/nr of the job's bytes to
 * within 16 rows of one matrix; its chunks tile its rows in order, none above
 * the budget (or 16 rows); mm_job_chunks counts them all. Two shapes that the
 * earlier split (whole chunks per region) handled badly are pinned: a
 * matrix of three budget-sized chunks (Qwen3-30B-A3B's output projection)
 * and a Q/K/V job, whose threads now read equal bytes; and one thread keeps
 * the decode chunks the four-stream kernels were tuned with (Qwen3-0.6B
 * Q4_0 k: 352 + 352 + 320 rows at a 256 KiB budget). */
#include <stdlib.h>

#include "engine/mm_layout.h"
#include "tm_test.h"

#define MAX_ITEMS 16

struct job_shape {
  struct mat w[MAX_ITEMS];
  struct mm_item it[MAX_ITEMS];
  int n;
};

static void shape_init(struct job_shape *j, int n, const int64_t *rows, const size_t *row_bytes,
                       int64_t ncols) {
  memset(j, 0, sizeof *j);
  j->n = n;
  for (int i = 0; i < n; i++) {
    j->w[i].rows = rows[i];
    j->w[i].row_bytes = row_bytes[i];
    j->it[i] = (struct mm_item){.w = &j->w[i], .ncols = ncols};
  }
}

static uint64_t region_bytes(const struct job_shape *j, const struct mm_bound *b, int k) {
  uint64_t bytes = 0;
  for (int i = 0; i < j->n; i++) {
    int64_t r0, r1;
    if (mm_region_rows(j->it, b, k, i, &r0, &r1)) bytes += (uint64_t)(r1 - r0) * j->w[i].row_bytes;
  }
  return bytes;
}

/* Every property of the layout of one job on nth threads; returns the
 * number of failed checks (so a sweep can stop printing). */
static int check_layout(const struct job_shape *j, int nth, size_t budget) {
  const int before = tm_test_failures;
  const int nr = mm_regions(nth);
  struct mm_bound b[MM_MAX_REGIONS + 1];
  mm_bounds(j->it, j->n, nr, b);
  CHECK(b[0].item == 0 && b[0].row == 0);
  CHECK(b[nr].item == j->n && b[nr].row == 0);
  uint64_t total = 0;
  size_t max_rb = 0;
  for (int i = 0; i < j->n; i++) {
    total += (uint64_t)j->w[i].rows * j->w[i].row_bytes;
    if (j->w[i].row_bytes > max_rb) max_rb = j->w[i].row_bytes;
  }
  /* rows covered once, regions in order: the next uncovered row of each item */
  int64_t next[MAX_ITEMS] = {0};
  int64_t all_chunks = 0;
  for (int k = 0; k < nr; k++) {
    CHECK(b[k].item < b[k + 1].item || (b[k].item == b[k + 1].item && b[k].row <= b[k + 1].row));
    const uint64_t bytes = region_bytes(j, b, k), share = total / (uint64_t)nr;
    const uint64_t slack = 16 * (uint64_t)max_rb * 2 + (uint64_t)nr;
    CHECK(bytes + slack >= share && bytes <= share + slack);
    int64_t chunks = 0;
    for (int i = 0; i < j->n; i++) {
      int64_t r0, r1;
      if (!mm_region_rows(j->it, b, k, i, &r0, &r1)) continue;
      CHECK_EQ_INT(r0, next[i]);
      const int64_t cr = mm_chunk_rows(&j->w[i], r1 - r0, j->it[i].ncols, budget);
      CHECK(cr >= 16 && cr % 16 == 0);
      const size_t cap = j->it[i].ncols == 1 ? budget : MM_CHUNK_BYTES;
      CHECK((uint64_t)cr * j->w[i].row_bytes <= cap + 15 * j->w[i].row_bytes || cr == 16);
      chunks += (r1 - r0 + cr - 1) / cr;
      next[i] = r1;
    }
    CHECK_EQ_INT(chunks, mm_region_chunks(j->it, j->n, b, k, budget));
    all_chunks += chunks;
  }
  for (int i = 0; i < j->n; i++) CHECK_EQ_INT(next[i], j->w[i].rows);
  CHECK_EQ_INT(all_chunks, mm_job_chunks(j->it, j->n, nth, budget));
  return tm_test_failures - before;
}

static void test_sweep(void) {
  srand(7);
  const size_t budgets[] = {262144, 2097152, 65536};
  int failed_jobs = 0;
  for (int trial = 0; trial < 400 && failed_jobs < 3; trial++) {
    int64_t rows[MAX_ITEMS];
    size_t rb[MAX_ITEMS];
    const int n = 1 + rand() % MAX_ITEMS;
    for (int i = 0; i < n; i++) {
      rows[i] = 1 + rand() % 6000;
      rb[i] = (size_t)(18 * (1 + rand() % 200));
    }
    struct job_shape j;
    shape_init(&j, n, rows, rb, trial % 5 == 0 ? 7 : 1);
    const int nth = 1 + trial % 8;
    if (check_layout(&j, nth, budgets[trial % 3]) != 0) {
      failed_jobs++;
      fprintf(stderr, "  (trial %d: %d items, %d threads)\n", trial, n, nth);
    }
  }
}

/* Qwen3-30B-A3B Q4_0 output projection: 2048 rows of 2304 bytes, 2 MiB
 * chunks. Whole-chunk regions gave one thread 2 of its 3 chunks. */
static void test_three_chunk_matrix_split_evenly(void) {
  struct job_shape j;
  shape_init(&j, 1, (int64_t[]){2048}, (size_t[]){2304}, 1);
  struct mm_bound b[3];
  mm_bounds(j.it, 1, 2, b);
  CHECK_EQ_INT(b[1].item, 0);
  CHECK_EQ_INT(b[1].row, 1024);
  CHECK(check_layout(&j, 2, 2097152) == 0);
}

/* Qwen3-0.6B Q8_0 Q/K/V: q 2048 rows, k and v 1024, 1088 bytes a row. Each
 * thread reads 2048 rows' worth: q alone, then k and v. */
static void test_qkv_job_split_by_bytes(void) {
  struct job_shape j;
  shape_init(&j, 3, (int64_t[]){2048, 1024, 1024}, (size_t[]){1088, 1088, 1088}, 1);
  struct mm_bound b[3];
  mm_bounds(j.it, 3, 2, b);
  CHECK_EQ_INT(b[1].item, 1);
  CHECK_EQ_INT(b[1].row, 0);
  CHECK_EQ_INT(region_bytes(&j, b, 0), region_bytes(&j, b, 1));
  CHECK(check_layout(&j, 2, 2097152) == 0);
}

/* One thread: the whole job is region 0, and a matrix's decode chunks are
 * the evened ones (1024 rows of 576 bytes at 256 KiB: 352, 352, 320). */
static void test_one_thread_keeps_even_chunks(void) {
  struct job_shape j;
  shape_init(&j, 1, (int64_t[]){1024}, (size_t[]){576}, 1);
  CHECK_EQ_INT(mm_chunk_rows(&j.w[0], 1024, 1, 262144), 352);
  CHECK_EQ_INT(mm_job_chunks(j.it, 1, 1, 262144), 3);
  CHECK(check_layout(&j, 1, 262144) == 0);
}

/* More threads than rows to share: some regions are empty, none overlap. */
static void test_tiny_job_many_threads(void) {
  struct job_shape j;
  shape_init(&j, 2, (int64_t[]){16, 8}, (size_t[]){34, 34}, 1);
  CHECK(check_layout(&j, 8, 262144) == 0);
  CHECK_EQ_INT(mm_job_chunks(j.it, 2, 8, 262144), 2);
}

void tm_run_tests(void) {
  TM_RUN(test_sweep);
  TM_RUN(test_three_chunk_matrix_split_evenly);
  TM_RUN(test_qkv_job_split_by_bytes);
  TM_RUN(test_one_thread_keeps_even_chunks);
  TM_RUN(test_tiny_job_many_threads);
}
