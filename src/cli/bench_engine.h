/* bench_engine: private to the in-process path of `tokmeter bench`
 * (cmd_bench_engine.c runs and records, cmd_bench_engine_print.c prints the
 * table and the conclusions). The state of one invocation. */
#ifndef TM_CLI_BENCH_ENGINE_H
#define TM_CLI_BENCH_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/engine_bench.h"
#include "cli/bench_cli.h"
#include "engine/engine.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "record/record.h"

struct eb_model {
  char label[160];
  char short_label[32]; /* "Q4_0": what tells the default pair apart */
  char path[1024];
  char type[32];      /* the tensor type holding the most bytes (--json models[].type) */
  char file_type[32]; /* general.file_type's name as `tokmeter ceiling --type` spells it
                         ("Q4_K_M"); "" when the file has none or an unknown one */
  char arch[64];
  uint64_t file_bytes;
  struct model_cost cost;
  bool int8;            /* prefill ceiling on the int8 path */
  /* ... on the int8 tiles (AMX): the engine's kernels run this model's
   * prefill there (most of its bytes Q4_0 / Q8_0, batches of at least
   * info.prefill_tiles_min_batch tokens) and the probe measured them */
  bool tiles;
  struct engine_info info;
  char kernel_path[32], best_path[32];
  /* The probe's read loop over this model's mapped weights (machine_read_bw_of),
   * index = threads, up to weights_bw_threads; 0 when not measured. */
  double weights_read_bw[PROBE_MAX_THREADS + 1];
  uint32_t weights_bw_threads;
  /* The probe's buffer read just before those weights, at the same thread
   * counts (the reference the pages are held against: the machine's
   * bandwidth moves within minutes, and the probe's figure may be older
   * than a model's turn: a second model's pages once read "38% slower"
   * when the whole machine had slowed, 2026-12-01). Where it could not be
   * read, the probe's figure. */
  double weights_ref_bw[PROBE_MAX_THREADS + 1];
  /* The main job only: the mapped weights read more than 5% below the
   * probe's buffer (EB_PAGES_COPY), so the model was loaded again from an
   * anonymous copy (engine option hugepages) and weights_read_bw is the
   * copy's; the mapped pages' figures are kept here. */
  bool copied;
  double mapped_read_bw[PROBE_MAX_THREADS + 1], mapped_ref_bw[PROBE_MAX_THREADS + 1];
  uint32_t mapped_bw_threads;
  /* The main job only: such a copy was made but read slower than the
   * mapping (summed over the thread counts), so the model was loaded mapped
   * again and weights_read_bw is the mapping's; the copy's figures are kept
   * here (copy_bw_threads = 0 when no copy was dropped). */
  double copy_read_bw[PROBE_MAX_THREADS + 1], copy_ref_bw[PROBE_MAX_THREADS + 1];
  uint32_t copy_bw_threads;
  /* A fresh anonymous buffer of the weights' size, read with the probe's
   * loop (eb_measure_cache_fit), index = threads up to fit_bw_threads; 0
   * when not measured (a quick probe, whose own buffer sits in the caches,
   * or weights above a quarter of the probe's buffer). fits_caches: it read
   * at least EB_CACHE_FIT times the probe's buffer at every thread count, so
   * data of this size is read from the CPU's caches, the weights included,
   * and the decode's ceiling is the caches' read rate, not memory's. */
  double fit_read_bw[PROBE_MAX_THREADS + 1];
  uint32_t fit_bw_threads;
  bool fits_caches;
  /* What the engine held after the model's last run (the KV cache at its
   * deepest), against file + KV cache + 10%; have_mem false until measured. */
  struct engine_memory mem;
  bool have_mem;
};

/* Pages reading more than `frac` below the probe's buffer (the best of 3
 * reads of the weights against the best of 5 of a fresh buffer).
 * EB_PAGES_SLOW: slower memory, beyond pass-to-pass noise: a conclusion says
 * decode falls short by that much, for any run. EB_PAGES_COPY: the main job,
 * which runs its own synthesized models to show what the machine can do,
 * runs such a model from an anonymous copy (pages 8% slower than the
 * buffer held a Q8_0 decode at 84% of the ceiling in a run where the copied
 * Q4_0 reached 87-89%, 2026-11-30). */
#define EB_PAGES_SLOW 0.10
#define EB_PAGES_COPY 0.05
static inline bool eb_pages_below(double probe_bw, double own, double frac) {
  return probe_bw > 0 && own > 0 && own < (1.0 - frac) * probe_bw;
}

/* A buffer of the weights' size reading this many times faster than the
 * probe's buffer (a GiB or more, sized to exceed the caches) is held in the
 * caches. The memory alone moved the two apart by up to 1.43x on this
 * project's VM (a page cache read 25-30% slower than fresh memory); a 19 MiB
 * model read 1.8-2.0x there (2026-12-01, Zen 5 EPYC). */
#define EB_CACHE_FIT 1.5

/* One configuration's outcome (a row of the table, a summary line). */
struct eb_row {
  size_t model;
  uint32_t threads;
  struct engine_bench_config cfg;
  struct stats_summary tok_s;
  double ceiling_tok_s, percent;
  double steal_share; /* record_engine_in.cpu_steal_share: 0..1, NAN unknown */
  double other_cpus;  /* record_engine_in.other_cpus_busy; NAN unknown */
  /* Decode: the read bandwidth the ceiling rests on (the mean over the timed
   * repetitions of the readings on either side of each), and the lowest and
   * highest of the readings between the repetitions; NAN when none was read
   * (then the ceiling used the figure read before the runs, or the probe's). */
  double bw, bw_lo, bw_hi;
  /* Decode: the first and the last of those readings (after the warm-up,
   * after the last repetition); NAN when not read. */
  double bw_first, bw_last;
  /* Rule 11 over the repetitions' rates in run order (engine_bench_result). */
  struct stats_drift drift;
  bool drift_tested;
  size_t n_segments;
  struct engine_bench_segment seg[ENGINE_BENCH_MAX_SEGMENTS];
};

struct eb_state {
  struct bench_opts *o;
  struct machine_probe *probe;
  struct eb_model models[2];
  size_t n_models;
  struct eb_row *rows;
  size_t n_rows, cap_rows;
  struct record_file *rec;
  uint64_t record_failures; /* records that could not be written (exit 1) */
  char identity[RECORD_ID_LEN + 1];
  uint32_t runs;
  uint32_t configs_started; /* configurations begun (--cooldown skips the first) */
  json_t *summaries;  /* for --json */
  json_t *conclusions;
  uint32_t reps;
  /* The probe's read measurement again after the last run (a fresh buffer of
   * the probe's size), index = threads up to bw_after_threads; 0 when not
   * measured: how far the machine's bandwidth moved while the runs ran. */
  double bw_after[PROBE_MAX_THREADS + 1];
  uint32_t bw_after_threads;
  bool probe_cached; /* the probe came from the cache, not this run */
  /* With a cached probe, its read measurement again before the first run,
   * at threads 1..bw_now_threads (0: not measured): those figures replace
   * the cached ones in probe->read_bw_bytes_s, so the slow-pages rule (and a
   * decode ceiling whose own reading failed) rests on a reading of this run;
   * bw_cached keeps what the cache said. */
  double bw_cached[PROBE_MAX_THREADS + 1];
  uint32_t bw_now_threads;
  /* The buffer the bandwidth readings read (fresh_buffer_bytes, first
   * touched once), held from the first reading to the end when memory has
   * room beside the models; bw_buf_tried: the first reading decided. */
  struct machine_bw_buffer bw_buf;
  bool bw_buf_tried;
  /* Steal over all the models' runs (the end record's cpu_steal_share):
   * ticks at the first run, the share after the last; NAN when unknown. */
  struct machine_cpu_ticks ticks_start;
  double steal_share;
};

/* The largest of v[0..n), 0 when n is 0. */
static inline uint32_t eb_max_of(const uint32_t *v, size_t n) {
  uint32_t m = 0;
  for (size_t i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
  return m;
}

/* ---- memory readings (cmd_bench_engine_bw.c) ---- */

/* MemAvailable from /proc/meminfo in bytes; 0 when unreadable. */
uint64_t eb_mem_available_bytes(void);
/* The read bandwidth at exactly t threads now, on the run's buffer; NAN when
 * it cannot be measured (the ceiling then falls back to the figure read
 * before the runs, or the probe's). */
double eb_read_bw_at(struct eb_state *s, uint32_t t);
/* True when a prefill of prompt_tokens tokens of model m runs on the int8
 * tiles (m->tiles and a batch the tile kernels take): its ceiling is theirs. */
bool eb_prefill_on_tiles(const struct eb_model *m, uint32_t prompt_tokens);
/* The probe's loop over model m's weights in place at exactly t threads;
 * NAN when it cannot be measured. */
double eb_read_weights_bw_at(const struct eb_state *s, const struct eb_model *m, uint32_t t);
/* Model mi's weights read in place at 1..the run's largest thread count
 * (its weights_read_bw, weights_bw_threads), each beside a reading of the
 * probe's buffer (weights_ref_bw). */
void eb_measure_weights_bw(struct eb_state *s, size_t mi);
/* Whether model mi's weights fit in the caches: a fresh buffer of their size
 * read at 1..the run's largest thread count against the probe's buffer (its
 * fit_read_bw, fit_bw_threads, fits_caches; best effort). */
void eb_measure_cache_fit(struct eb_state *s, size_t mi);
/* Before the first run (a cached probe only) and after the last: the
 * buffer's read bandwidth at 1..the run's largest thread count (bw_now /
 * bw_after in s; best effort). */
void eb_measure_bw_now(struct eb_state *s);
void eb_measure_bw_after(struct eb_state *s);

/* Prints the machine, per model its table, and (main job) the conclusions,
 * which are also appended to s->conclusions as strings for --json. */
void bench_engine_print(struct eb_state *s, bool probe_cached);
/* The --json document: models, summaries, conclusions. */
void bench_engine_print_json(struct eb_state *s);
/* Computes the conclusions into s->conclusions (strings). */
void bench_engine_conclude(struct eb_state *s);

#endif
