/* inproc_bw: the memory readings behind the in-process bench's
 * decode ceilings (inproc.h declares them): the probe's read loop on a
 * buffer of the probe's size, held for the run when memory allows, and on the
 * model's weights in place; before the runs (a cached probe's figures are
 * hours old), between a decode's repetitions (inproc.c's on_rep)
 * and after the runs. On this project's VM the bandwidth moved 5-13% within
 * minutes, and the memory holding the weights read up to 30% slower or
 * faster than the buffer: a ceiling rests on readings made around the runs
 * it judges. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/inproc.h"
#include "machine/probe.h"


/* MemAvailable from /proc/meminfo in bytes; 0 when unreadable. */
uint64_t eb_mem_available_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

/* The thread counts the bandwidth is read at: 1..the run's largest. */
static uint32_t bw_threads(const struct eb_state *s) {
  uint32_t t = eb_max_of(s->o->threads, s->o->n_threads);
  if (t > PROBE_MAX_THREADS) t = PROBE_MAX_THREADS;
  if (t > s->probe->max_threads) t = s->probe->max_threads;
  return t;
}

/* The buffer of a fresh bandwidth reading: the probe's size, capped at a
 * quarter of the memory free now (a cached probe's size was fitted to the
 * memory free back then). */
static uint64_t fresh_buffer_bytes(const struct eb_state *s) {
  uint64_t bytes = s->probe->buffer_bytes ? s->probe->buffer_bytes : 1ull << 30;
  struct tm_err err = {{0}};
  struct machine_info now;
  if (machine_info_read(&now, &err) == 0 && now.memory_available_bytes &&
      bytes > now.memory_available_bytes / 4)
    bytes = now.memory_available_bytes / 4;
  return bytes;
}

/* bw[t] for t = t_lo..t_hi with the probe's read loop (best of 5, 2 with a
 * quick probe) on the run's reading buffer: opened at the first reading, and
 * held to the end when the memory available leaves room for it plus twice
 * the models' files (their page cache, and a copy the main job may make);
 * else each reading maps and first-touches its own (on this project's VM
 * that costs seconds of system time per GiB). 0, or -1 (bw untouched). */
static int read_bw(struct eb_state *s, uint32_t t_lo, uint32_t t_hi, double *bw) {
  struct tm_err err = {{0}};
  int passes = s->probe->quick ? 2 : 5;
  uint64_t bytes = fresh_buffer_bytes(s);
  if (!s->bw_buf_tried) {
    s->bw_buf_tried = true;
    uint64_t files = 0;
    for (size_t i = 0; i < s->n_models; i++) files += s->models[i].file_bytes;
    uint64_t avail = eb_mem_available_bytes();
    if (avail && avail >= bytes + 2 * files &&
        machine_bw_buffer_open(&s->bw_buf, bytes, bw_threads(s), &err) != 0)
      memset(&s->bw_buf, 0, sizeof s->bw_buf);
  }
  struct machine_bw_buffer own = s->bw_buf;
  if (!own.base && machine_bw_buffer_open(&own, bytes, t_hi, &err) != 0) return -1;
  double got[PROBE_MAX_THREADS + 1] = {0};
  int rc = t_lo == t_hi
               ? machine_read_bw_of_at(own.base, own.bytes, t_hi, passes, &got[t_hi], &err)
               : machine_read_bw_of(own.base, own.bytes, t_hi, passes, got, &err);
  if (own.base != s->bw_buf.base) machine_bw_buffer_close(&own);
  if (rc != 0) return -1;
  for (uint32_t t = t_lo; t <= t_hi; t++) bw[t] = got[t];
  return 0;
}

/* The probe's loop over the model's weights in place at exactly t threads
 * (best of 5, 2 with a quick probe), at most as many bytes as the buffer's
 * reading (the weights' first ones: the speed of their pages, not of every
 * page of a large file); NAN when it cannot be measured. Weights that fit
 * in the caches read at the caches' speed, as their decode does. */
double eb_read_weights_bw_at(const struct eb_state *s, const struct eb_model *m, uint32_t t) {
  if (t < 1 || t > PROBE_MAX_THREADS || !m->info.weights || m->info.weights_bytes == 0)
    return NAN;
  eb_progress(s, "reading the weights in place (this decode's ceiling)");
  uint64_t bytes = fresh_buffer_bytes(s);
  if (bytes > m->info.weights_bytes) bytes = m->info.weights_bytes;
  struct tm_err err = {{0}};
  double bw = NAN;
  if (machine_read_bw_of_at(m->info.weights, bytes, t, s->probe->quick ? 2 : 5, &bw, &err) != 0)
    return NAN;
  return bw > 0 ? bw : NAN;
}

/* The read bandwidth at exactly t threads now (read_bw); NAN when it cannot
 * be measured (then the ceiling falls back to the figure read before the
 * runs, or the probe's). */
double eb_read_bw_at(struct eb_state *s, uint32_t t) {
  if (t < 1 || t > PROBE_MAX_THREADS || t > s->probe->max_threads) return NAN;
  char msg[120];
  snprintf(msg, sizeof msg, "reading memory at %u thread%s (this decode's ceiling)", t,
           t == 1 ? "" : "s");
  eb_progress(s, "%s", msg);
  double bw[PROBE_MAX_THREADS + 1] = {0};
  return read_bw(s, t, t, bw) == 0 && bw[t] > 0 ? bw[t] : NAN;
}

/* The weights' own read bandwidth, in place, at 1..the largest thread count
 * of the run: whether the pages holding them are as fast as the probe's
 * buffer (on a VM some host memory is slower; a decode cannot outrun its
 * pages). Best of 3 reads of the whole file per thread count. Best effort: a
 * failure leaves it unmeasured. */
void eb_measure_weights_bw(struct eb_state *s, size_t mi) {
  struct eb_model *m = &s->models[mi];
  uint32_t t = eb_max_of(s->o->threads, s->o->n_threads);
  if (t > PROBE_MAX_THREADS) t = PROBE_MAX_THREADS;
  struct tm_err err = {{0}};
  /* The reference first, in the same minute (a failure: the probe's). */
  eb_progress(s, "reading memory (the reference for the weights' pages)");
  double ref[PROBE_MAX_THREADS + 1] = {0};
  const bool have_ref = t && read_bw(s, 1, t, ref) == 0;
  for (uint32_t i = 0; i <= PROBE_MAX_THREADS; i++)
    m->weights_ref_bw[i] = have_ref && i >= 1 && i <= t && ref[i] > 0
                               ? ref[i]
                               : s->probe->read_bw_bytes_s[i];
  eb_progress(s, "reading the weights in place");
  m->weights_bw_threads = 0;
  if (t && machine_read_bw_of(m->info.weights, m->info.weights_bytes, t, 3, m->weights_read_bw,
                              &err) == 0)
    m->weights_bw_threads = t;
  eb_progress_done(s);
}

void eb_measure_cache_fit(struct eb_state *s, size_t mi) {
  struct eb_model *m = &s->models[mi];
  m->fit_bw_threads = 0;
  m->fits_caches = false;
  const uint64_t huge = 2ull << 20;
  /* A quick probe's buffer is itself cache-sized: nothing to compare. */
  if (s->probe->quick || !s->probe->buffer_bytes ||
      m->info.weights_bytes > s->probe->buffer_bytes / 4)
    return;
  uint32_t t = bw_threads(s);
  uint64_t bytes = (m->info.weights_bytes + huge - 1) / huge * huge;
  struct tm_err err = {{0}};
  eb_progress(s, "reading a buffer of the weights' size (do they fit in the caches?)");
  /* best of 10: a buffer this small reads in milliseconds, and on a VM the
   * caches are shared with other guests (a 6 MiB buffer read 60-101 GB/s
   * at one thread from pass to pass, 2026-12-01) */
  if (t && machine_read_bw_fresh(bytes, t, 10, m->fit_read_bw, &err) == 0) {
    m->fit_bw_threads = t;
    bool fits = true;
    for (uint32_t i = 1; i <= t; i++) /* against the buffer read beside the weights */
      fits &= m->weights_ref_bw[i] > 0 && m->fit_read_bw[i] >= EB_CACHE_FIT * m->weights_ref_bw[i];
    m->fits_caches = fits;
  }
  eb_progress_done(s);
}

/* Before the first run, when the probe came from the cache and decode is
 * measured: this project's VM moved by 5-13% within minutes, so a figure
 * cached an hour ago is no reference. The new figures replace the cached
 * ones in s->probe, so the slow-pages rule (and a decode ceiling whose own
 * reading failed) uses them; the cached ones are kept for the table's
 * machine line. Best effort: a failure keeps the cached figures. */
void eb_measure_bw_now(struct eb_state *s) {
  if (!s->probe_cached || eb_max_of(s->o->max_tokens, s->o->n_max_tokens) == 0) return;
  uint32_t t = bw_threads(s);
  double bw[PROBE_MAX_THREADS + 1] = {0};
  eb_progress(s, "reading memory (the decode ceiling's bandwidth, before the runs)");
  if (t && read_bw(s, 1, t, bw) == 0) {
    for (uint32_t i = 1; i <= t; i++) {
      s->bw_cached[i] = s->probe->read_bw_bytes_s[i];
      s->probe->read_bw_bytes_s[i] = bw[i];
    }
    s->bw_now_threads = t;
  }
  eb_progress_done(s);
}

/* After the last run, when decode was measured: the probe's read bandwidth
 * again, on the run's reading buffer (read_bw) at the run's thread counts:
 * how far the machine moved over the whole run (each decode ceiling has
 * its own readings around it, run_config). Best effort: a failure leaves
 * it unmeasured. */
void eb_measure_bw_after(struct eb_state *s) {
  if (eb_max_of(s->o->max_tokens, s->o->n_max_tokens) == 0) return;
  uint32_t t = bw_threads(s);
  eb_progress(s, "reading memory again (the ceiling's bandwidth, after the runs)");
  if (t && read_bw(s, 1, t, s->bw_after) == 0) s->bw_after_threads = t;
  eb_progress_done(s);
}

