/* probe: runs the measurements of probe.h (read and copy bandwidth, f32 and
 * int8 compute at 1..N threads), and the per-machine cache. The loops are in
 * kernels.c, the threads in pool.c, identity in info.c, JSON in probe_json.c.
 *
 * Why the method is what it is:
 * - The buffer is far larger than the last-level cache, or the figure would be
 *   cache bandwidth; the cap keeps the probe from pushing a loaded machine into
 *   swap (4 x LLC of a 480 MiB L3 is 1.9 GiB).
 * - Pages are first touched by the pool's threads, each writing its own slice,
 *   so on a NUMA machine each slice lives near the thread that touched it. The
 *   touch is done once with all N threads; runs with fewer threads read slices
 *   that straddle several touch slices (which matters only on NUMA machines).
 * - A pass is timed from the common start barrier to the last thread's finish,
 *   so a straggler counts (a decode step waits for its slowest thread too).
 * - Best of several passes: noise (other processes, page-table walks on the
 *   first pass) only ever makes a pass slower.
 * - The read passes take turns at the read loop's software prefetch
 *   distances (kernels.h): the best distance differs from core to core by
 *   3-17%, and one fixed distance made the ceiling that much too low on a
 *   core that wanted another. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "machine/kernels.h"
#include "machine/pool.h"
#include "machine/probe.h"
#include "util/clock.h"
#include "util/paths.h"
#include "util/units.h"

#include <jansson.h>

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

struct probe_plan {
  uint64_t buffer_bytes;
  int read_passes;
  int copy_passes;
  int compute_passes;
  uint64_t compute_target_ns; /* length of one compute pass */
};

/* ----------------------------------------------------------- best-of --- */

static double best_of(const double *v, uint32_t n, uint32_t *threads) {
  double best = 0;
  uint32_t at = 0;
  for (uint32_t t = 1; t <= n && t <= PROBE_MAX_THREADS; t++)
    if (v[t] > best) best = v[t], at = t;
  if (threads) *threads = at;
  return best;
}

double probe_best_read_bw(const struct machine_probe *p, uint32_t *threads) {
  return best_of(p->read_bw_bytes_s, p->max_threads, threads);
}
double probe_best_f32(const struct machine_probe *p, uint32_t *threads) {
  return best_of(p->f32_flops, p->max_threads, threads);
}
double probe_best_int8(const struct machine_probe *p, uint32_t *threads) {
  return best_of(p->int8_ops, p->max_threads, threads);
}

double probe_best_int8_tile(const struct machine_probe *p, uint32_t *threads) {
  return best_of(p->int8_tile_ops, p->max_threads, threads);
}

bool probe_quick_from_env(void) {
  const char *v = getenv("TOKMETER_PROBE_QUICK");
  return v && *v && strcmp(v, "0") != 0;
}

/* ------------------------------------------------------------- memory --- */

enum mem_op { MEM_TOUCH, MEM_READ, MEM_COPY };

struct mem_job {
  const struct kernels *k;
  uint8_t *buf;
  uint64_t bytes;
  enum mem_op op;
  uint64_t *sinks; /* one per thread, 8 words apart (own cache line) */
  size_t pf_bytes;  /* MEM_READ: the read loop's prefetch distance */
};

/* Thread index's share of `total` bytes split among `active` threads, in whole
 * 256-byte units (what the kernels require); the last thread takes the rest. */
static void slice_of(uint64_t total, uint32_t index, uint32_t active, uint64_t *off,
                     uint64_t *len) {
  uint64_t units = total / 256, per = units / active;
  *off = (uint64_t)index * per * 256;
  *len = (index + 1 == active ? units - (uint64_t)index * per : per) * 256;
}

static void mem_job_run(void *arg, uint32_t index, uint32_t active) {
  struct mem_job *j = arg;
  uint64_t off, len;
  if (j->op == MEM_COPY) {
    /* The first half is copied onto the second half: each thread its slice. */
    uint64_t half = j->bytes / 2 / 256 * 256;
    slice_of(half, index, active, &off, &len);
    if (len) j->sinks[index * 8] += j->k->copy(j->buf + half + off, j->buf + off, len);
    return;
  }
  slice_of(j->bytes, index, active, &off, &len);
  if (!len) return;
  if (j->op == MEM_TOUCH)
    memset(j->buf + off, (int)(0x11u * (index % 15 + 1)), len);
  else
    j->sinks[index * 8] += j->k->read(j->buf + off, len, j->pf_bytes);
}

/* bw[t] for t = 1..max_threads: best of `passes` reads of job's buffer, the
 * passes cycling through the read loop's prefetch distances. */
static void read_bw_passes(struct probe_pool *pool, struct mem_job *job, uint32_t min_threads,
                           uint32_t max_threads, int passes, double *bw) {
  job->op = MEM_READ;
  for (uint32_t t = min_threads; t <= max_threads; t++) {
    double best = 0;
    for (int pass = 0; pass < (passes > 0 ? passes : 1); pass++) {
      job->pf_bytes = kern_read_pf_bytes[pass % KERN_READ_PF_N];
      uint64_t ns = pool_run(pool, t, mem_job_run, job);
      double v = ns ? (double)job->bytes * 1e9 / (double)ns : 0;
      if (v > best) best = v;
    }
    bw[t] = best;
  }
}

/* bw[t] for t = min_threads..max_threads: the probe's read loop over buf. */
static int read_of_range(const void *buf, uint64_t bytes, uint32_t min_threads,
                         uint32_t max_threads, int passes, double *bw, struct tm_err *err) {
  if (max_threads < 1 || max_threads > PROBE_MAX_THREADS || min_threads < 1 ||
      min_threads > max_threads)
    return tm_errf(err, "read bandwidth: %u threads (1..%d)", max_threads, PROBE_MAX_THREADS);
  /* The read loops use aligned loads of whole 256-byte units. */
  uintptr_t a = ((uintptr_t)buf + 255) / 256 * 256;
  uint64_t skip = a - (uintptr_t)buf;
  if (!buf || bytes <= skip || (bytes - skip) / 256 < max_threads)
    return tm_errf(err, "read bandwidth: nothing to read");
  uint64_t n = (bytes - skip) / 256 * 256;
  struct kernels k;
  kernels_select(&k);
  struct probe_pool pool;
  if (pool_init(&pool, max_threads, err) != 0) return -1;
  uint64_t *sinks = calloc((size_t)max_threads * 8, sizeof *sinks);
  if (!sinks) {
    pool_free(&pool);
    return tm_errf(err, "read bandwidth: out of memory");
  }
  /* mem_job's buffer is not const because the probe also writes its own;
   * MEM_READ only reads. */
  struct mem_job job = {&k, (uint8_t *)a, n, MEM_READ, sinks, 0};
  read_bw_passes(&pool, &job, min_threads, max_threads, passes, bw);
  volatile uint64_t fold = 0;
  for (uint32_t i = 0; i < max_threads; i++) fold ^= sinks[i * 8];
  (void)fold;
  free(sinks);
  pool_free(&pool);
  return 0;
}

int machine_read_bw_of(const void *buf, uint64_t bytes, uint32_t max_threads, int passes,
                       double *bw, struct tm_err *err) {
  return read_of_range(buf, bytes, 1, max_threads, passes, bw, err);
}

int machine_read_bw_of_at(const void *buf, uint64_t bytes, uint32_t threads, int passes,
                          double *bw_out, struct tm_err *err) {
  double bw[PROBE_MAX_THREADS + 1] = {0};
  if (threads < 1 || threads > PROBE_MAX_THREADS)
    return tm_errf(err, "read bandwidth: %u threads (1..%d)", threads, PROBE_MAX_THREADS);
  if (read_of_range(buf, bytes, threads, threads, passes, bw, err) != 0) return -1;
  *bw_out = bw[threads];
  return 0;
}

int machine_bw_buffer_open(struct machine_bw_buffer *b, uint64_t bytes, uint32_t touch_threads,
                           struct tm_err *err) {
  b->base = NULL;
  b->bytes = 0;
  if (touch_threads < 1 || touch_threads > PROBE_MAX_THREADS)
    return tm_errf(err, "read bandwidth: %u threads (1..%d)", touch_threads, PROBE_MAX_THREADS);
  bytes = bytes / (2 * MiB) * (2 * MiB);
  if (bytes < 2 * MiB) return tm_errf(err, "read bandwidth: a buffer under 2 MiB");
  void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED)
    return tm_errf(err, "read bandwidth: cannot map a %llu-byte buffer",
                   (unsigned long long)bytes);
#ifdef MADV_HUGEPAGE
  madvise(buf, bytes, MADV_HUGEPAGE); /* as the probe's buffer */
#endif
  struct kernels k;
  kernels_select(&k);
  struct probe_pool pool;
  if (pool_init(&pool, touch_threads, err) != 0) {
    munmap(buf, bytes);
    return -1;
  }
  struct mem_job job = {&k, buf, bytes, MEM_TOUCH, NULL, 0};
  pool_run(&pool, touch_threads, mem_job_run, &job);
  pool_free(&pool);
  b->base = buf;
  b->bytes = bytes;
  return 0;
}

void machine_bw_buffer_close(struct machine_bw_buffer *b) {
  if (b->base) munmap(b->base, b->bytes);
  b->base = NULL;
  b->bytes = 0;
}

int machine_read_bw_fresh(uint64_t bytes, uint32_t max_threads, int passes, double *bw,
                          struct tm_err *err) {
  struct machine_bw_buffer b;
  if (machine_bw_buffer_open(&b, bytes, max_threads, err) != 0) return -1;
  int rc = machine_read_bw_of(b.base, b.bytes, max_threads, passes, bw, err);
  machine_bw_buffer_close(&b);
  return rc;
}

static uint64_t plan_buffer_bytes(const struct machine_info *info, bool quick) {
  if (quick) return 32 * MiB;
  uint64_t want = 4 * info->llc_bytes;
  if (want < GiB) want = GiB;
  uint64_t avail = info->memory_available_bytes ? info->memory_available_bytes
                                                : info->memory_bytes;
  uint64_t cap = avail / 4;
  if (cap && want > cap) want = cap;
  want = want / (2 * MiB) * (2 * MiB);
  return want < 64 * MiB ? 64 * MiB : want;
}

static void report(probe_progress_fn progress, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(probe_progress_fn progress, void *ctx, const char *fmt, ...) {
  if (!progress) return;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  progress(msg, ctx);
}

static int measure_memory(struct machine_probe *p, struct probe_pool *pool,
                          const struct kernels *k, const struct probe_plan *plan,
                          probe_progress_fn progress, void *ctx, struct tm_err *err) {
  uint64_t bytes = plan->buffer_bytes;
  void *buf = MAP_FAILED;
  /* Memory may be tighter than MemAvailable said: halve until it maps. */
  while (bytes >= 16 * MiB) {
    buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf != MAP_FAILED) break;
    bytes /= 2;
  }
  if (buf == MAP_FAILED)
    return tm_errf(err, "probe: cannot map a %llu-byte buffer", (unsigned long long)plan->buffer_bytes);
  p->buffer_bytes = bytes;
#ifdef MADV_HUGEPAGE
  /* Huge pages where the kernel offers them: with 4 KiB pages one core's
   * stream is held back by page walks (measured here: 10-12 GB/s on 4 KiB
   * pages vs 14-15 on 2 MiB pages at 1 thread), and the ceiling is what the
   * memory allows, not what a page size allows. */
  p->hugepages = madvise(buf, bytes, MADV_HUGEPAGE) == 0;
#endif

  uint64_t *sinks = calloc((size_t)pool->n * 8, sizeof *sinks);
  if (!sinks) {
    munmap(buf, bytes);
    return tm_errf(err, "probe: out of memory");
  }
  char size_text[32];
  tm_fmt_bytes((double)bytes, size_text, sizeof size_text);
  struct mem_job job = {k, buf, bytes, MEM_TOUCH, sinks, 0};

  report(progress, ctx, "first touch of %s with %u threads", size_text, pool->n);
  pool_run(pool, pool->n, mem_job_run, &job);

  for (uint32_t t = 1; t <= pool->n; t++) {
    double best = 0;
    job.op = MEM_READ;
    for (int pass = 0; pass < plan->read_passes; pass++) {
      job.pf_bytes = kern_read_pf_bytes[pass % KERN_READ_PF_N];
      report(progress, ctx, "read bandwidth: %s, %u thread%s, pass %d/%d", size_text, t,
             t == 1 ? "" : "s", pass + 1, plan->read_passes);
      uint64_t ns = pool_run(pool, t, mem_job_run, &job);
      double bw = (double)(bytes / 256 * 256) * 1e9 / (double)ns;
      if (bw > best) best = bw;
    }
    p->read_bw_bytes_s[t] = best;
  }
  for (uint32_t t = 1; t <= pool->n; t++) {
    double best = 0;
    job.op = MEM_COPY;
    uint64_t moved = bytes / 2 / 256 * 256 * 2; /* read + written */
    for (int pass = 0; pass < plan->copy_passes; pass++) {
      report(progress, ctx, "copy bandwidth: %u thread%s, pass %d/%d", t, t == 1 ? "" : "s",
             pass + 1, plan->copy_passes);
      uint64_t ns = pool_run(pool, t, mem_job_run, &job);
      double bw = (double)moved * 1e9 / (double)ns;
      if (bw > best) best = bw;
    }
    p->copy_bw_bytes_s[t] = best;
  }

  /* Fold the sinks into a volatile so the loads are observably used. */
  volatile uint64_t fold = 0;
  for (uint32_t i = 0; i < pool->n; i++) fold ^= sinks[i * 8];
  (void)fold;
  free(sinks);
  munmap(buf, bytes);
  return 0;
}

/* ------------------------------------------------------------ compute --- */

enum compute_path { PATH_F32, PATH_INT8, PATH_INT8_TILE, PATH_COUNT };

struct compute_job {
  const struct kernels *k;
  enum compute_path path;
  uint64_t iters;
  float mul, add;
  int8_t seed;
  double *sinks; /* one per thread, 8 apart */
};

static void compute_job_run(void *arg, uint32_t index, uint32_t active) {
  struct compute_job *j = arg;
  if (j->path == PATH_INT8_TILE)
    j->sinks[index * 8] += (double)j->k->tile_dot(j->iters, j->seed);
  else if (j->path == PATH_INT8)
    j->sinks[index * 8] += (double)j->k->dot(j->iters, j->seed);
  else
    j->sinks[index * 8] += j->k->fma(j->iters, j->mul, j->add);
}

/* Iterations that take about target_ns on one thread: doubled until a run is
 * long enough to time, then scaled. */
static uint64_t calibrate(struct compute_job *j, uint64_t target_ns) {
  uint64_t iters = 1024, ns = 0;
  for (;;) {
    j->iters = iters;
    uint64_t t0 = tm_now_ns();
    compute_job_run(j, 0, 1);
    ns = tm_now_ns() - t0;
    if (ns >= 2000000 || iters >= (1ull << 40)) break;
    iters *= 2;
  }
  double scaled = (double)iters * (double)target_ns / (double)(ns ? ns : 1);
  return scaled < 1024 ? 1024 : (uint64_t)scaled;
}

static int measure_compute(struct machine_probe *p, struct probe_pool *pool,
                           const struct kernels *k, const struct probe_plan *plan,
                           probe_progress_fn progress, void *ctx, struct tm_err *err) {
  double *sinks = calloc((size_t)pool->n * 8, sizeof *sinks);
  if (!sinks) return tm_errf(err, "probe: out of memory");
  /* Read through volatiles so the compiler cannot fold the loops' arithmetic. */
  volatile float mul = 0.9999f, add = 0.001f;
  volatile int8_t seed = 1;
  for (int path = 0; path < PATH_COUNT; path++) {
    if ((path == PATH_INT8 && !k->dot) || (path == PATH_INT8_TILE && !k->tile_dot)) continue;
    const char *what = path == PATH_F32 ? "f32" : path == PATH_INT8 ? "int8" : "int8 tile";
    const char *via = path == PATH_F32    ? k->f32_path
                      : path == PATH_INT8 ? k->int8_path
                                          : k->int8_tile_path;
    double per_iter = path == PATH_F32    ? k->f32_flops_per_iter
                      : path == PATH_INT8 ? k->int8_ops_per_iter
                                          : k->int8_tile_ops_per_iter;
    double *out = path == PATH_F32 ? p->f32_flops : path == PATH_INT8 ? p->int8_ops : p->int8_tile_ops;
    struct compute_job job = {k, (enum compute_path)path, 0, mul, add, seed, sinks};
    report(progress, ctx, "%s compute: calibrating", what);
    job.iters = calibrate(&job, plan->compute_target_ns);
    for (uint32_t t = 1; t <= pool->n; t++) {
      double best = 0;
      for (int pass = 0; pass < plan->compute_passes; pass++) {
        report(progress, ctx, "%s compute (%s): %u thread%s, pass %d/%d", what, via, t,
               t == 1 ? "" : "s", pass + 1, plan->compute_passes);
        uint64_t ns = pool_run(pool, t, compute_job_run, &job);
        double rate = (double)t * (double)job.iters * per_iter * 1e9 / (double)ns;
        if (rate > best) best = rate;
      }
      out[t] = best;
    }
  }
  volatile double fold = 0;
  for (uint32_t i = 0; i < pool->n; i++) fold += sinks[i * 8];
  (void)fold;
  free(sinks);
  return 0;
}

/* -------------------------------------------------------------- run --- */

int probe_run_opts(struct machine_probe *p, const struct probe_options *opts,
                   probe_progress_fn progress, void *ctx, struct tm_err *err) {
  memset(p, 0, sizeof *p);
  if (machine_info_read(&p->info, err) != 0) return -1;
  uint32_t n = opts->max_threads ? opts->max_threads : machine_default_threads(&p->info);
  if (n > PROBE_MAX_THREADS)
    return tm_errf(err, "probe: %u threads asked, at most %d supported", n, PROBE_MAX_THREADS);
  p->max_threads = n;
  p->quick = opts->quick;

  struct kernels k;
  kernels_select(&k);
  snprintf(p->mem_path, sizeof p->mem_path, "%s", k.mem_path);
  snprintf(p->read_loop, sizeof p->read_loop, "%s", PROBE_READ_LOOP);
  snprintf(p->f32_path, sizeof p->f32_path, "%s", k.f32_path);
  snprintf(p->int8_path, sizeof p->int8_path, "%s", k.int8_path);
  snprintf(p->int8_tile_path, sizeof p->int8_tile_path, "%s", k.int8_tile_path);
  p->tiles_probed = true;

  struct probe_plan plan;
  plan.buffer_bytes = plan_buffer_bytes(&p->info, opts->quick);
  if (opts->quick) {
    plan.read_passes = 2, plan.copy_passes = 1, plan.compute_passes = 1;
    plan.compute_target_ns = 10000000;
  } else {
    /* Compute passes shrink on many-core machines so 1..N stays within
     * seconds: 150 ms each up to 8 threads, never under 30 ms. */
    plan.read_passes = 5, plan.copy_passes = 3, plan.compute_passes = 3;
    uint64_t t = 1200000000ull / n;
    plan.compute_target_ns = t > 150000000 ? 150000000 : t < 30000000 ? 30000000 : t;
  }

  /* Other load lowers every figure; measure it around the run so the result
   * can say so (quick mode: skip, its figures are not measurements anyway). */
  p->busy_cpus_before = opts->quick ? -1 : machine_busy_cpus(250);

  struct probe_pool pool;
  if (pool_init(&pool, n, err) != 0) return -1;
  int rc = measure_memory(p, &pool, &k, &plan, progress, ctx, err);
  if (rc == 0) rc = measure_compute(p, &pool, &k, &plan, progress, ctx, err);
  pool_free(&pool);
  if (rc != 0) return -1;
  p->busy_cpus_after = opts->quick ? -1 : machine_busy_cpus(250);

  machine_thermal_read(&p->thermal);
  time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(p->measured_at, sizeof p->measured_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return 0;
}

bool probe_busy_warning(const struct machine_probe *p, char *buf, size_t n) {
  double worst = p->busy_cpus_before > p->busy_cpus_after ? p->busy_cpus_before
                                                          : p->busy_cpus_after;
  if (worst <= PROBE_BUSY_WARN_CPUS) return false;
  snprintf(buf, n,
           "other processes kept %.1f of %u CPUs busy around the probe (%s): its figures, and "
           "every ceiling from them, may be low; re-run 'tokmeter probe' on a quiet machine",
           worst, p->info.cpus, p->measured_at);
  return true;
}

bool probe_retake_busy(const struct machine_probe *p, char *buf, size_t n) {
  char warn[400];
  if (!probe_busy_warning(p, warn, sizeof warn)) return false; /* no reading needed */
  return probe_retake_busy_at(p, machine_busy_cpus(250), buf, n);
}

bool probe_retake_busy_at(const struct machine_probe *p, double now, char *buf, size_t n) {
  char warn[400];
  if (!probe_busy_warning(p, warn, sizeof warn)) return false;
  if (now < 0 || now > PROBE_BUSY_WARN_CPUS) return false;
  const double then = p->busy_cpus_before > p->busy_cpus_after ? p->busy_cpus_before
                                                                : p->busy_cpus_after;
  snprintf(buf, n,
           "the cached probe (%s) was measured while other processes kept %.1f of %u CPUs "
           "busy; they keep %.1f busy now, so this machine is measured again",
           p->measured_at, then, p->info.cpus, now);
  return true;
}

int probe_run(struct machine_probe *p, uint32_t max_threads, probe_progress_fn progress,
              void *ctx, struct tm_err *err) {
  struct probe_options o = {max_threads, probe_quick_from_env()};
  return probe_run_opts(p, &o, progress, ctx, err);
}

/* ------------------------------------------------------------ cache --- */

int probe_cache_path(const struct machine_info *info, char *buf, size_t n, struct tm_err *err) {
  char dir[4096];
  if (tm_cache_dir(dir, sizeof dir, err) != 0) return -1;
  char key[256];
  snprintf(key, sizeof key, "%s|%u|%llu", info->cpu_model, info->cpus,
           (unsigned long long)info->memory_bytes);
  uint64_t h = 1469598103934665603ull; /* FNV-1a, 64-bit */
  for (const char *c = key; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  int len = snprintf(buf, n, "%s/probe-%016llx.json", dir, (unsigned long long)h);
  if (len < 0 || (size_t)len >= n) return tm_errf(err, "probe cache path too long");
  return 0;
}

int probe_save_cached(const struct machine_probe *p, struct tm_err *err) {
  char path[4200];
  if (probe_cache_path(&p->info, path, sizeof path, err) != 0) return -1;
  json_t *j = probe_to_json(p);
  if (!j) return tm_errf(err, "probe: cannot build JSON (out of memory)");
  char *text = json_dumps(j, JSON_INDENT(2));
  json_decref(j);
  if (!text) return tm_errf(err, "probe: cannot serialize JSON (out of memory)");
  size_t len = strlen(text);
  int rc = tm_write_file_atomic(path, text, len, err);
  free(text);
  return rc;
}

int probe_load_cached(struct machine_probe *p, struct tm_err *err) {
  struct machine_info now;
  if (machine_info_read(&now, err) != 0) return -1;
  char path[4200];
  struct tm_err perr = {{0}};
  /* No cache directory (not creatable, say) is no cache: probe_get measures
   * and says once, when saving, why nothing was stored. */
  if (probe_cache_path(&now, path, sizeof path, &perr) != 0) return 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  fclose(f);
  json_error_t jerr;
  json_t *j = json_load_file(path, 0, &jerr);
  if (!j)
    return tm_errf(err, "corrupt probe cache %s (line %d: %s)", path, jerr.line, jerr.text);
  int rc = probe_from_json(p, j, err);
  json_decref(j);
  if (rc != 0) return tm_err_prefix(err, "corrupt probe cache %s", path);
  if (p->info.cpus != now.cpus || strcmp(p->info.cpu_model, now.cpu_model) != 0)
    return tm_errf(err, "probe cache %s describes another machine (%s, %u CPUs)", path,
                   p->info.cpu_model, p->info.cpus);
  /* `probe -t 64` on 2 CPUs was once accepted and cached: 50 threads
   * contending for 2 CPUs are not a figure of this machine. */
  if (p->max_threads > now.cpus)
    return tm_errf(err, "probe cache %s measured 1..%u threads, more than this machine's %u "
                   "CPUs", path, p->max_threads, now.cpus);
  if (strcmp(p->read_loop, PROBE_READ_LOOP) != 0)
    return tm_errf(err, "probe cache %s was measured with an older read loop (%s): its "
                   "bandwidth is not comparable", path,
                   p->read_loop[0] ? p->read_loop : "prefetch 2 KiB ahead only");
  if (!p->tiles_probed && machine_has_flag(&now, "amx_int8"))
    return tm_errf(err, "probe cache %s predates the int8 tile (AMX) measurement this CPU "
                   "needs", path);
  return 1;
}

bool probe_covers_machine(const struct machine_probe *p) {
  return p->max_threads >= machine_default_threads(&p->info);
}

bool probe_replaces_cached(const struct machine_probe *p, const struct machine_probe *cached) {
  /* A full measurement beats a quick one whatever its threads (a non-quick
   * caller never uses a quick cache); among equals, more threads win. */
  if (p->quick != cached->quick) return !p->quick;
  return p->max_threads >= cached->max_threads;
}

int probe_get(struct machine_probe *p, bool rerun, probe_progress_fn progress, void *ctx,
              struct tm_err *err) {
  if (err) err->msg[0] = 0;
  bool quick = probe_quick_from_env();
  /* err->msg's size: each reason is cut to 240 bytes so both fit. */
  char note[sizeof err->msg] = "";
  if (!rerun) {
    struct tm_err lerr = {{0}};
    int r = probe_load_cached(p, &lerr);
    /* A quick result is fine for quick callers, never for real ceilings. */
    if (r == 1 && (quick || !p->quick) && probe_covers_machine(p) &&
        !probe_retake_busy(p, note, sizeof note))
      return 0;
    if (r == 1 && !probe_covers_machine(p))
      snprintf(note, sizeof note, "the cached probe measured 1..%u threads of this machine's %u: "
               "measured again", p->max_threads, machine_default_threads(&p->info));
    if (r < 0) snprintf(note, sizeof note, "ignored %.240s", lerr.msg);
  }
  struct probe_options o = {0, quick};
  if (probe_run_opts(p, &o, progress, ctx, err) != 0) return -1;
  struct tm_err serr = {{0}};
  if (probe_save_cached(p, &serr) != 0) {
    size_t used = strlen(note);
    snprintf(note + used, sizeof note - used, "%snot saved: %.240s", used ? "; " : "", serr.msg);
  }
  if (err) snprintf(err->msg, sizeof err->msg, "%s", note);
  return 0;
}
