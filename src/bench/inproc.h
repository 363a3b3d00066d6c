/* inproc: the in-process method of `tokmeter bench` (no --url), on
 * tokmeter's own engine, for one invocation: the probe (cached or taken),
 * the models (the main job's synthesized pair, or one -m file), the memory
 * check, the weights' placement (mapped, or copied when the main job's
 * pages read slowly), per configuration one warm-up and the timed
 * repetitions (engine_bench.h) bracketed by bandwidth readings, the
 * ceilings, the records (identity, runs, summaries, end) and the findings
 * (findings.h). inproc.c runs, inproc_bw.c reads memory, inproc_findings.c
 * draws the findings.
 *
 * Library code: nothing printed, no exit. Progress and warnings go to the
 * caller's hooks; a failure returns EB_RUNTIME or EB_BAD_INPUT with
 * s->err set (one line), EB_OK otherwise. The caller renders s (its rows,
 * models, findings) once eb_run returns. The records file is closed (its
 * end record written) before eb_run returns, whatever the outcome. */
#ifndef TM_BENCH_INPROC_H
#define TM_BENCH_INPROC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/engine_bench.h"
#include "bench/findings.h"
#include "bench/session.h"
#include "engine/engine.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "record/record.h"

#define EB_MAX_LIST 16

/* What to run. Lists (threads, prompt and generated lengths, depths) may be
 * empty: eb_run fills the defaults in (1..the probe's threads; pp512; tg128;
 * depth 0). gguf NULL: the main job (the embedded default pair). */
/* A text job run in process (a workload file's line, tokenized by the
 * model's own vocabulary): its prompt's tokens prefilled as pp<n_ids>, and
 * max_tokens decoded after that prompt as tg<max_tokens> at depth n_ids. */
struct eb_job {
  const char *name;
  const int32_t *ids;
  uint32_t n_ids;
  uint32_t max_tokens;
  uint32_t reps; /* 0: the invocation's */
};

struct eb_opts {
  const char *gguf;
  /* Text jobs (gguf given): they replace the -p/-n/-d grid; NULL/0: none. */
  const struct eb_job *jobs;
  size_t n_jobs;
  const char *workload_file; /* where they came from (the settings record) */
  const char *vocab;         /* the vocabulary that counted them (tokenizer_describe) */
  uint32_t threads[EB_MAX_LIST];
  size_t n_threads;
  uint32_t prompt_tokens[EB_MAX_LIST];
  size_t n_prompt_tokens;
  uint32_t max_tokens[EB_MAX_LIST];
  size_t n_max_tokens;
  uint32_t depth[EB_MAX_LIST];
  size_t n_depth;
  uint32_t reps;     /* 0: 3 for the main job, 5 for a file */
  bool reprobe;      /* take the probe again, whatever the cache holds */
  bool hugepages;    /* weights copied into huge pages */
  double cooldown_s; /* idle pause before each configuration after the first */
  const char *out;   /* results file; NULL = RECORD_DEFAULT_FILE */
  const char *command; /* the command line, for the run identity */
};

/* How eb_run talks while it runs: progress rewrites one status line,
 * progress_done ends it, step names each configuration as it begins (its
 * place in the plan, the time left), warn is a one-line warning. Any may be
 * NULL. */
struct eb_hooks {
  void (*progress)(const char *message, void *ctx);
  void (*step)(const char *message, void *ctx);
  void (*progress_done)(void *ctx);
  void (*warn)(const char *message, void *ctx);
  void *ctx;
};

enum { EB_OK = BENCH_OK, EB_RUNTIME = BENCH_RUNTIME, EB_BAD_INPUT = BENCH_BAD_INPUT };

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
  size_t job; /* 0 for the grid's rows; a text job's: 1 + its index in eb_opts.jobs */
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
  struct eb_opts *o;
  struct eb_hooks hooks;
  struct tm_err err;   /* the failure's one line (eb_run's return not EB_OK) */
  bool err_is_usage;   /* ... a flag's value, not the input file: the caller
                          adds its "--help" hint */
  bool main_job;
  bool measured;       /* every configuration ran and the findings are drawn:
                          the result is to be shown, even when eb_run then
                          failed on records that could not be written */
  struct machine_probe *probe;
  struct eb_model models[2];
  size_t n_models;
  struct eb_row *rows;
  size_t n_rows, cap_rows;
  struct bench_session session; /* the records (session.h) */
  uint64_t record_failures; /* records that could not be written (exit 1) */
  char identity[RECORD_ID_LEN + 1];
  uint32_t runs;
  uint32_t configs_started; /* configurations begun (--cooldown skips the first) */
  uint32_t configs_done, configs_total; /* the plan's place, for progress */
  uint64_t t_first_config_ns;
  json_t *summaries;  /* for --json */
  json_t *conclusions; /* the findings' long texts (--json "conclusions") */
  struct bench_findings findings;
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

/* Zeroes s and ties it to o and hooks (copied). */
void eb_state_init(struct eb_state *s, struct eb_opts *o, const struct eb_hooks *hooks);
/* Runs the whole invocation (above); EB_OK, EB_RUNTIME or EB_BAD_INPUT. */
int eb_run(struct eb_state *s);
/* Frees what eb_run left in s. */
void eb_state_free(struct eb_state *s);
/* The name the records and labels give a model's type: the file's
 * (general.file_type), else its tensors'. */
const char *eb_model_type_name(const struct eb_model *m);
/* The row of one configuration; NULL when it did not run. */
const struct eb_row *eb_find_row(const struct eb_state *s, size_t model, uint32_t threads,
                                 enum engine_bench_kind kind, uint32_t tokens, uint32_t depth);
/* A text job's row (prefill or decode) at that thread count; NULL when it
 * did not run. */
const struct eb_row *eb_find_job_row(const struct eb_state *s, size_t model, uint32_t threads,
                                     size_t job, enum engine_bench_kind kind);
/* The first nonzero of v[0..n); 0 when none. */
uint32_t eb_first_nonzero(const uint32_t *v, size_t n);
/* A decode row whose rate is blank by rule 5 (fewer than
 * METRICS_MIN_DECODE_TOKENS generated tokens): its ceiling stays. */
bool eb_blank_by_rule(const struct eb_row *r);

/* hooks, for inproc*.c */
void eb_progress(const struct eb_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void eb_progress_done(const struct eb_state *s);
void eb_warn(const struct eb_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- memory readings (inproc_bw.c) ---- */

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

/* The --json document (inproc_json.c): tokmeter, identity, records_file,
 * probe_quick, runs, models, summaries, conclusions, findings and the
 * bandwidth read before and after the runs; NULL when out of memory. */
json_t *eb_json(const struct eb_state *s);

/* ---- findings (inproc_findings.c) ---- */

/* Draws the findings from the rows and models into s->findings, the long
 * texts also into s->conclusions (for --json's "conclusions"). */
void eb_conclude(struct eb_state *s);
/* The largest steal share among the rows run at t threads; NAN when none is
 * known. */
double eb_steal_at(const struct eb_state *s, uint32_t t);

#endif
