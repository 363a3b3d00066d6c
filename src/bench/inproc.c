/* inproc: `tokmeter bench` in-process (no --url), on tokmeter's own
 * engine, the way llama-bench measures: pp<L> (a batched forward pass over L
 * random tokens) and tg<N> (N greedy decode steps, end-of-sequence ignored),
 * at context depth d, per thread count; one discarded warm-up and r timed
 * repetitions per configuration (src/bench/engine_bench.h has the method).
 *
 * Every rate is held against its ceiling at the SAME thread count: decode =
 * the probe's read bandwidth at t threads / bytes read per token at the run's
 * depths; prefill = the probe's compute at t threads (int8 path for a
 * quantized model where the CPU has it, else f32) / FLOPs per prompt token.
 *
 * With no -m: the main job. The embedded default pair (a Qwen3-0.6B shape in
 * Q4_0 and Q8_0, synthesized once into the cache), pp512 and tg128 at 1..N
 * threads, 3 timed repetitions, then conclusions computed from the numbers
 * (scaling with cores; what fewer bytes per token bought). -r/-p/-n/-d/-t
 * override those defaults (tests use `-r 1 -p 32 -n 16`).
 *
 * Records: identity, one run line per repetition (warm-ups flagged), one
 * summary per configuration, end (records_engine.h, docs/records.md).
 * Outcome (inproc.h): EB_OK; EB_RUNTIME for a probe / synthesis / engine
 * failure; EB_BAD_INPUT for a bad value, a model file that cannot be read or
 * run (architecture, type), lengths too large. */
#include <errno.h>
#include <stdarg.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/engine_bench.h"
#include "bench/records_bench.h"
#include "bench/records_engine.h"
#include "bench/inproc.h"
#include "engine/engine.h"
#include "engine/kernels.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "model/ceiling.h"
#include "model/plan.h"
#include "model/shape.h"
#include "record/record.h"
#include "synth/synth.h"
#include "util/clock.h"
#include "util/units.h"

static const char *const DEFAULT_PRESET = "qwen3-0.6b";
#define MAIN_JOB_REPS 3
#define FILE_REPS 5
#define BENCH_SEED 0x746f6b6d65746572ull

/* ------------------------------------------------------------ helpers --- */

/* ---------------------------------------------------------- the hooks --- */

void eb_progress(const struct eb_state *s, const char *fmt, ...) {
  if (!s->hooks.progress) return;
  char msg[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  s->hooks.progress(msg, s->hooks.ctx);
}

void eb_progress_done(const struct eb_state *s) {
  if (s->hooks.progress_done) s->hooks.progress_done(s->hooks.ctx);
}

void eb_warn(const struct eb_state *s, const char *fmt, ...) {
  if (!s->hooks.warn) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  s->hooks.warn(msg, s->hooks.ctx);
}

/* s->err from the format; returns code (EB_RUNTIME or EB_BAD_INPUT). */
static int eb_fail(struct eb_state *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int eb_fail(struct eb_state *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err.msg, sizeof s->err.msg, fmt, ap);
  va_end(ap);
  return code;
}

/* A bad flag value: EB_BAD_INPUT with err_is_usage (the caller's hint). */
#define eb_usage(s, ...) ((s)->err_is_usage = true, eb_fail((s), EB_BAD_INPUT, __VA_ARGS__))

struct synth_ctx {
  const struct eb_state *s;
  const char *name;
};

static void synth_progress(uint64_t done, uint64_t total, void *ctx) {
  const struct synth_ctx *c = ctx;
  char a[32], b[32];
  eb_progress(c->s, "synthesizing %s: %.0f%% (%s of %s)", c->name,
              total ? 100.0 * (double)done / (double)total : 0.0,
              tm_fmt_bytes((double)done, a, 32), tm_fmt_bytes((double)total, b, 32));
}

static void probe_progress(const char *msg, void *ctx) { eb_progress(ctx, "%s", msg); }

/* KV capacity the runs need: the deepest context plus the longest run. */
static uint32_t ctx_needed(const struct eb_opts *o) {
  if (o->n_jobs) {
    uint32_t most = 0;
    for (size_t j = 0; j < o->n_jobs; j++) {
      uint32_t need = o->jobs[j].n_ids + o->jobs[j].max_tokens;
      most = need > most ? need : most;
    }
    return most;
  }
  uint32_t p = eb_max_of(o->prompt_tokens, o->n_prompt_tokens);
  uint32_t n = eb_max_of(o->max_tokens, o->n_max_tokens);
  return eb_max_of(o->depth, o->n_depth) + (p > n ? p : n);
}

/* The name the records, the labels and the conclusions give a model's type:
 * the file's (general.file_type), else its tensors' (`tokmeter ceiling` and
 * the server records name it the same way). */
const char *eb_model_type_name(const struct eb_model *m) {
  return m->file_type[0] ? m->file_type : m->type;
}

/* Analyses a GGUF file; 0 or an exit code (2: unreadable or unusable). */
static int analyse_file(struct eb_state *s, const char *path, struct eb_model *m) {
  struct tm_err err = {{0}};
  struct model_file_facts facts;
  if (model_cost_from_file(path, GGML_TYPE_F16, &m->cost, &facts, &err) != 0)
    return eb_fail(s, EB_BAD_INPUT, "%s", err.msg);
  /* The file's type as llama-quantize named it (a Q4_K_M file holds most
   * of its bytes in Q4_K but a small one may in its Q6_K embeddings). */
  snprintf(m->file_type, sizeof m->file_type, "%s", facts.file_type);
  m->file_bytes = facts.file_bytes;
  snprintf(m->path, sizeof m->path, "%s", path);
  snprintf(m->arch, sizeof m->arch, "%s", m->cost.arch);
  /* The tensors' type: the one holding the most bytes (norms are F32). */
  snprintf(m->type, sizeof m->type, "%s", model_most_bytes_type(&m->cost));
  return 0;
}

/* The share of a model's tensor bytes in the types whose prefill the engine
 * runs on int8 tiles where it has them (kernels_amx.c: Q4_0, Q8_0). */
static double tile_bytes_share(const struct model_cost *c) {
  uint64_t b = 0;
  for (size_t i = 0; i < c->n_types; i++)
    if (c->types[i].type == GGML_TYPE_Q4_0 || c->types[i].type == GGML_TYPE_Q8_0)
      b += c->types[i].bytes;
  return c->bytes_total ? (double)b / (double)c->bytes_total : 0;
}

/* m->tiles from the engine's kernels (m->info, once loaded), the model's
 * types and the probe; again whenever one of them is set. */
static void set_tiles(const struct eb_state *s, struct eb_model *m) {
  m->tiles = m->int8 && m->info.prefill_tiles && probe_best_int8_tile(s->probe, NULL) > 0 &&
             tile_bytes_share(&m->cost) > 0.5;
}

/* Whether a prefill configuration's ceiling is the int8 tiles' rate: the
 * engine runs its batches there. */
bool eb_prefill_on_tiles(const struct eb_model *m, uint32_t prompt_tokens) {
  return m->tiles && prompt_tokens >= m->info.prefill_tiles_min_batch;
}

/* Fills the ceiling part of a record input for one configuration. bw_now:
 * the read bandwidth at t threads just read for this decode configuration,
 * or NAN (then the probe's figure, or the reading before the runs). */
static void ceiling_of(const struct eb_state *s, const struct eb_model *m, uint32_t t,
                       const struct engine_bench_config *cfg, double bw_now,
                       struct record_engine_in *in) {
  const struct machine_probe *p = s->probe;
  const struct ceiling_rates rates = {
      .read_bw_bytes_s = bw_now > 0 ? bw_now : p->read_bw_bytes_s[t],
      .f32_flops = p->f32_flops[t], .int8_ops = p->int8_ops[t],
      .int8_tile_ops = p->int8_tile_ops[t],
      .tiles = m->info.prefill_tiles && tile_bytes_share(&m->cost) > 0.5,
      .tiles_min_batch = m->info.prefill_tiles_min_batch};
  const bool decode = cfg->kind == ENGINE_BENCH_TG;
  const struct ceiling_workload w = {.prompt_tokens = decode ? 0 : cfg->tokens,
                                     .depth = cfg->depth, .gen_tokens = decode ? cfg->tokens : 0};
  struct ceiling_result c;
  ceiling_of_workload(&m->cost, &rates, &w, &c);
  in->read_bandwidth_bytes_s = c.read_bw_bytes_s;
  in->bytes_per_token = c.bytes_per_token;
  in->compute_ops_s = c.compute_ops_s;
  in->flops_per_token = c.flops_per_token;
  in->compute_path = c.compute_path;
  in->ceiling_tok_s = decode ? c.decode_tok_s : c.prefill_tok_s;
}

/* ------------------------------------------------------------ running --- */

struct rep_ctx {
  struct eb_state *s;
  struct record_engine_in *in;
  const struct eb_model *m;
  uint32_t t;
  const char *model_short;
  int write_failed;
  char write_err[512];
  /* Decode: the read bandwidth at t threads right after the warm-up ([0])
   * and right after each timed repetition ([i + 1]), NAN where a reading
   * failed; NULL for prefill. Each reading is the faster of two, both with
   * the probe's loop: the run's buffer (buf_readings) and the model's own
   * weights in place (wts_readings). Repetition i's ceiling rests on the
   * readings on either side of it; bw_sum / bw_n is the mean of those
   * brackets over the timed repetitions (the summary's ceiling). */
  double *bw_readings, *buf_readings, *wts_readings;
  double bw_sum;
  uint32_t bw_n;
};

/* The bandwidth around one repetition: the mean of the readings before and
 * after it, or the one that exists; NAN when neither does. */
static double bracket_bw(double before, double after) {
  if (before > 0 && after > 0) return 0.5 * (before + after);
  if (before > 0) return before;
  return after > 0 ? after : NAN;
}


/* The faster of two readings, either of which may be NAN. */
static double faster_of(double a, double b) {
  if (!(a > 0)) return b > 0 ? b : NAN;
  return b > a ? b : a;
}

/* "[3/8, about 2 min left]": the configuration's place in the plan and, once
 * one has finished, the time left at the pace so far. */
static const char *plan_place(const struct eb_state *s, char *buf, size_t n) {
  const uint32_t at = s->configs_started ? s->configs_started : 1;
  if (s->configs_done == 0 || s->configs_total <= s->configs_done) {
    snprintf(buf, n, "[%u/%u]", at, s->configs_total);
    return buf;
  }
  const double per = (double)(tm_now_ns() - s->t_first_config_ns) / 1e9 / s->configs_done;
  const double left = per * (s->configs_total - s->configs_done);
  if (left < 90) snprintf(buf, n, "[%u/%u, about %.0f s left]", at, s->configs_total, left);
  else snprintf(buf, n, "[%u/%u, about %.0f min left]", at, s->configs_total, left / 60);
  return buf;
}

static void on_rep(const struct engine_bench_config *cfg, uint32_t index, uint32_t total,
                   const struct engine_bench_rep *rep, void *ctx) {
  struct rep_ctx *rc = ctx;
  uint32_t warmups = cfg->warmups ? cfg->warmups : 1;
  int timed_index = rep->warmup ? -1 : (int)(index - warmups);
  if (rc->bw_readings) {
    /* Between repetitions, not inside one: the machine's bandwidth moves
     * (5-15% within minutes on this project's VM), so each repetition is
     * held against the memory as it was on either side of it. The weights
     * are read too: on a VM the host places memory, and the buffer's pages
     * were seen to read 25-30% slower than the weights' while a Q8_0
     * decode streamed at 112% of the buffer's figure (2026-11-30, Zen 5
     * EPYC); a ceiling must be at least what the decode's own memory
     * gives. */
    const size_t at = rep->warmup ? 0 : (size_t)timed_index + 1;
    rc->buf_readings[at] = eb_read_bw_at(rc->s, rc->t);
    rc->wts_readings[at] = eb_read_weights_bw_at(rc->s, rc->m, rc->t);
    double now = faster_of(rc->buf_readings[at], rc->wts_readings[at]);
    if (rep->warmup) {
      rc->bw_readings[0] = now;
      ceiling_of(rc->s, rc->m, rc->t, cfg, now, rc->in);
    } else {
      rc->bw_readings[timed_index + 1] = now;
      ceiling_of(rc->s, rc->m, rc->t, cfg, bracket_bw(rc->bw_readings[timed_index], now),
                 rc->in);
      if (rc->in->read_bandwidth_bytes_s > 0) {
        rc->bw_sum += rc->in->read_bandwidth_bytes_s;
        rc->bw_n++;
      }
    }
  }
  if (bench_session_write(&rc->s->session,
                          record_engine_run_build(rc->in, cfg, (int)rc->t, timed_index, rep)) != 0 &&
      !rc->write_failed) {
    rc->write_failed = 1;
    snprintf(rc->write_err, sizeof rc->write_err, "%s", rc->s->session.last_error);
  }
  if (!rep->warmup) rc->s->runs++;
  char msg[200], test[32], fig[64];
  /* a decode too short for a rate (rule 5) shows its time instead */
  if (isfinite(rep->tok_s)) snprintf(fig, sizeof fig, "%.1f tok/s", rep->tok_s);
  else snprintf(fig, sizeof fig, "%.1f ms (no rate below %d tokens)", rep->ms,
                METRICS_MIN_DECODE_TOKENS);
  char place[64], which[32];
  if (rep->warmup) snprintf(which, sizeof which, "warm-up");
  else snprintf(which, sizeof which, "rep %d/%u", timed_index + 1, cfg->reps);
  snprintf(msg, sizeof msg, "%s %s %s d=%u, %u thread%s: %s: %s%s",
           plan_place(rc->s, place, sizeof place), rc->model_short,
           engine_bench_test_name(cfg, test, sizeof test), cfg->depth, rc->t,
           rc->t == 1 ? "" : "s", which, fig,
           cfg->depth > 0 && index + 1 < total ? "; filling the context for the next" : "");
  eb_progress(rc->s, "%s", msg);
}

static int add_row(struct eb_state *s, const struct eb_row *r) {
  if (s->n_rows == s->cap_rows) {
    size_t cap = s->cap_rows ? 2 * s->cap_rows : 16;
    struct eb_row *n = realloc(s->rows, cap * sizeof *n);
    if (!n) return -1;
    s->rows = n;
    s->cap_rows = cap;
  }
  s->rows[s->n_rows++] = *r;
  return 0;
}


/* One configuration: run, record, keep the row. 0 or an exit code.
 * A decode configuration reads the memory at its thread count after the
 * warm-up and after every timed repetition (on_rep): each repetition's
 * ceiling rests on the readings on either side of it, the summary's on the
 * mean of those. One reading before the warm-up put the machine's drift
 * over the whole configuration into its percentage (this project's VM moved
 * 5-13% within minutes). */
static int run_config(struct eb_state *s, struct engine *e, size_t mi, uint32_t t,
                      const struct engine_bench_config *cfg, size_t job) {
  struct eb_model *m = &s->models[mi];
  struct record_engine_in in = {.identity = s->identity, .model_file = m->path,
                                .model_label = m->label, .arch = m->arch, .type = eb_model_type_name(m),
                                .kernel_path = m->kernel_path,
                                .decode_chunk_bytes = m->info.decode_chunk_bytes,
                                .load_ms = m->info.load_ms,
                                .weights = m->info.hugepages ? "copied" : "mapped",
                                .cpu_steal_share = NAN,
                                .other_cpus_busy = NAN,
                                .read_bandwidth_after_bytes_s = NAN,
                                .weights_fit_in_caches = !m->fit_bw_threads ? 0
                                                         : m->fits_caches   ? 1
                                                                            : -1};
  const bool decode = cfg->kind == ENGINE_BENCH_TG;
  ceiling_of(s, m, t, cfg, NAN, &in);
  struct rep_ctx rc = {.s = s, .in = &in, .m = m, .t = t, .model_short = m->short_label};
  const size_t n_readings = (size_t)cfg->reps + 1;
  if (decode) {
    rc.bw_readings = malloc(3 * n_readings * sizeof *rc.bw_readings);
    if (!rc.bw_readings) return eb_fail(s, EB_RUNTIME, "out of memory");
    for (size_t i = 0; i < 3 * n_readings; i++) rc.bw_readings[i] = NAN;
    rc.buf_readings = rc.bw_readings + n_readings;
    rc.wts_readings = rc.bw_readings + 2 * n_readings;
  }
  struct engine_bench_result res;
  struct tm_err err = {{0}};
  /* Steal time around the runs: on a VM, the hypervisor running other
   * guests on this machine's CPUs slows every rate measured meanwhile, and
   * at several threads a step waits for the one descheduled. */
  struct machine_cpu_ticks ticks;
  machine_cpu_ticks_now(&ticks);
  if (cfg->depth > 0) { /* filling a deep context takes long: say what runs */
    char msg[200], test[32];
    snprintf(msg, sizeof msg, "%s %s d=%u, %u thread%s: filling %u tokens of context (untimed)",
             m->short_label, engine_bench_test_name(cfg, test, sizeof test), cfg->depth, t,
             t == 1 ? "" : "s", cfg->depth);
    eb_progress(s, "%s", msg);
  }
  int rc_run = engine_bench_run(e, cfg, on_rep, &rc, &res, &err);
  in.cpu_steal_share = machine_steal_since(&ticks);
  /* Other processes: threads that compete with them for the cores lose
   * time no ceiling counts (an audit's busy loops made a decode read 2% of
   * its ceiling, and bench blamed the pages). */
  in.other_cpus_busy = machine_other_cpus_since(&ticks);
  if (rc_run != 0) {
    free(rc.bw_readings);
    engine_bench_result_free(&res);
    eb_progress_done(s);
    return eb_fail(s, EB_RUNTIME, "%s: %s", m->path, err.msg);
  }
  double bw_lo = NAN, bw_hi = NAN;
  if (decode) {
    ceiling_of(s, m, t, cfg, rc.bw_n ? rc.bw_sum / rc.bw_n : NAN, &in);
    double last = rc.bw_readings[n_readings - 1];
    in.read_bandwidth_after_bytes_s = last > 0 ? last : NAN;
    in.bw_readings = rc.bw_readings;
    in.buffer_bw_readings = rc.buf_readings;
    in.weights_bw_readings = rc.wts_readings;
    in.n_bw_readings = n_readings;
    for (size_t i = 0; i < n_readings; i++) {
      double v = rc.bw_readings[i];
      if (!(v > 0)) continue;
      if (!(v >= bw_lo)) bw_lo = v;
      if (!(v <= bw_hi)) bw_hi = v;
    }
  }
  if (rc.write_failed) eb_warn(s, "cannot write a record: %s", rc.write_err);
  json_t *sum = record_engine_summary_build(&in, &res);
  if (sum && s->summaries) json_array_append(s->summaries, sum);
  if (bench_session_write(&s->session, sum) != 0)
    eb_warn(s, "cannot write a record: %s", s->session.last_error);
  struct eb_row row = {.model = mi, .job = job, .threads = t, .cfg = *cfg, .tok_s = res.tok_s,
                       .ceiling_tok_s = in.ceiling_tok_s,
                       .percent = record_percent_of(res.tok_s.median, in.ceiling_tok_s),
                       .steal_share = in.cpu_steal_share, .other_cpus = in.other_cpus_busy,
                       .n_segments = res.n_segments,
                       .bw = rc.bw_n ? in.read_bandwidth_bytes_s : NAN,
                       .bw_lo = bw_lo, .bw_hi = bw_hi,
                       .bw_first = decode && rc.bw_readings[0] > 0 ? rc.bw_readings[0] : NAN,
                       .bw_last = decode && rc.bw_readings[n_readings - 1] > 0
                                      ? rc.bw_readings[n_readings - 1]
                                      : NAN,
                       .drift = res.drift, .drift_tested = res.drift_tested};
  free(rc.bw_readings);
  memcpy(row.seg, res.seg, sizeof row.seg);
  engine_bench_result_free(&res);
  if (add_row(s, &row) != 0) return eb_fail(s, EB_RUNTIME, "out of memory");
  return 0;
}

/* --cooldown: before every configuration but the invocation's first, a
 * pause with the machine idle (rule 11: a machine that heats up under load
 * slows the configurations that come later). */
static void cooldown(struct eb_state *s) {
  if (s->configs_started++ == 0 || !(s->o->cooldown_s > 0)) return;
  char msg[96];
  snprintf(msg, sizeof msg, "cooling down for %g s (--cooldown)", s->o->cooldown_s);
  eb_progress(s, "%s", msg);
  struct timespec ts = {.tv_sec = (time_t)s->o->cooldown_s,
                        .tv_nsec = (long)((s->o->cooldown_s - floor(s->o->cooldown_s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The progress line's step: the plan's place, the model, the job (if
 * any), the test, depth and threads. */
static void announce(struct eb_state *s, size_t mi, const struct engine_bench_config *cfg,
                     uint32_t t) {
  if (!s->hooks.step) return;
  char place[64], test[32], msg[240];
  snprintf(msg, sizeof msg, "%s %s%s%s %s d=%u, %u thread%s", plan_place(s, place, sizeof place),
           s->models[mi].short_label, cfg->workload ? " " : "",
           cfg->workload ? cfg->workload : "", engine_bench_test_name(cfg, test, sizeof test),
           cfg->depth, t, t == 1 ? "" : "s");
  s->hooks.step(msg, s->hooks.ctx);
}

/* The text jobs, threads outermost: per job its prefill (the prompt's
 * tokens), then its decode after that prompt. */
static int run_jobs(struct eb_state *s, struct engine *e, size_t mi) {
  const struct eb_opts *o = s->o;
  uint32_t max_batch = 512;
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    struct tm_err err;
    if (engine_set_threads(e, (int)o->threads[ti], &err) != 0)
      return eb_fail(s, EB_RUNTIME, "cannot use %u threads: %s", o->threads[ti], err.msg);
    for (size_t j = 0; j < o->n_jobs; j++) {
      const struct eb_job *jb = &o->jobs[j];
      for (int kind = 0; kind < 2; kind++) {
        struct engine_bench_config cfg = {
            .kind = kind == 0 ? ENGINE_BENCH_PP : ENGINE_BENCH_TG,
            .tokens = kind == 0 ? jb->n_ids : jb->max_tokens,
            .depth = kind == 0 ? 0 : jb->n_ids, .reps = jb->reps ? jb->reps : s->reps,
            .warmups = 1, .max_batch = max_batch, .seed = BENCH_SEED + 7919u * j + (uint64_t)kind,
            .text_ids = jb->ids, .workload = jb->name};
        if (cfg.tokens == 0) continue;
        cooldown(s);
        if (s->configs_started == 1) s->t_first_config_ns = tm_now_ns();
        announce(s, mi, &cfg, o->threads[ti]);
        int rc = run_config(s, e, mi, o->threads[ti], &cfg, j + 1);
        if (rc) return rc;
        s->configs_done++;
      }
    }
  }
  eb_progress_done(s);
  return 0;
}

/* Every configuration of one model, threads outermost (the pool is rebuilt
 * once per thread count): the grid of -p/-n/-d, or the text jobs. */
static int run_model(struct eb_state *s, struct engine *e, size_t mi) {
  const struct eb_opts *o = s->o;
  if (o->n_jobs) return run_jobs(s, e, mi);
  uint32_t max_batch = eb_max_of(o->prompt_tokens, o->n_prompt_tokens);
  if (max_batch > 512 || max_batch == 0) max_batch = 512;
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    struct tm_err err;
    if (engine_set_threads(e, (int)o->threads[ti], &err) != 0)
      return eb_fail(s, EB_RUNTIME, "cannot use %u threads: %s", o->threads[ti],
                      err.msg);
    for (size_t di = 0; di < o->n_depth; di++) {
      for (int kind = 0; kind < 2; kind++) {
        const uint32_t *len = kind == 0 ? o->prompt_tokens : o->max_tokens;
        size_t n_len = kind == 0 ? o->n_prompt_tokens : o->n_max_tokens;
        for (size_t li = 0; li < n_len; li++) {
          if (len[li] == 0) continue; /* -p 0 / -n 0: that test is skipped */
          struct engine_bench_config cfg = {
              .kind = kind == 0 ? ENGINE_BENCH_PP : ENGINE_BENCH_TG, .tokens = len[li],
              .depth = o->depth[di], .reps = s->reps, .warmups = 1, .max_batch = max_batch,
              .seed = BENCH_SEED + 7919u * li + 104729u * di + (uint64_t)kind};
          cooldown(s);
          if (s->configs_started == 1) s->t_first_config_ns = tm_now_ns();
          announce(s, mi, &cfg, o->threads[ti]);
          int rc = run_config(s, e, mi, o->threads[ti], &cfg, 0);
          if (rc) return rc;
          s->configs_done++;
        }
      }
    }
  }
  eb_progress_done(s);
  return 0;
}

/* Loads a model into the engine; exit code 2 for -m files (the file cannot be
 * run), 1 for the synthesized defaults (a bug, not the user's input). */
static struct engine *load_engine(struct eb_state *s, size_t mi, int fail_code, bool hugepages,
                                  int *rc) {
  struct eb_model *m = &s->models[mi];
  struct engine_options eo;
  engine_options_init(&eo);
  eo.n_threads = (int)s->o->threads[0];
  eo.hugepages = hugepages;
  eo.n_ctx = ctx_needed(s->o);
  uint32_t p = eb_max_of(s->o->prompt_tokens, s->o->n_prompt_tokens);
  eo.max_batch = p > 0 && p < 512 ? p : 512;
  struct tm_err err = {{0}};
  char msg[1200];
  snprintf(msg, sizeof msg, "loading %s", m->path);
  eb_progress(s, "%s", msg);
  struct engine *e = engine_load(m->path, &eo, &err);
  eb_progress_done(s);
  if (!e) {
    /* the engine's message may already start with the path */
    *rc = strstr(err.msg, m->path) ? eb_fail(s, fail_code, "%s", err.msg)
                                   : eb_fail(s, fail_code, "%s: %s", m->path, err.msg);
    return NULL;
  }
  engine_get_info(e, &m->info);
  snprintf(m->kernel_path, sizeof m->kernel_path, "%s",
           m->info.kernel_path ? m->info.kernel_path : "?");
  snprintf(m->best_path, sizeof m->best_path, "%s",
           m->info.best_cpu_path ? m->info.best_cpu_path : "?");
  set_tiles(s, m);
  if (m->info.n_ctx < eo.n_ctx) {
    *rc = eb_usage(s, "depth + tokens = %u exceeds what %s can hold (%u tokens)",
                          eo.n_ctx, m->path, m->info.n_ctx);
    engine_free(e);
    return NULL;
  }
  *rc = 0;
  return e;
}

/* The main job runs tokmeter's own synthesized models to show what this
 * machine can do; the ceiling is the probe's, read from fresh memory. When
 * the file's mapped pages read more than 5% below that (on this VM the
 * page cache was seen at half the speed of fresh anonymous memory, where the
 * host placed it), the model is loaded again from an anonymous copy, as
 * --hugepages does, so decode is held against a ceiling its memory can
 * reach; the mapped figures are kept and reported (and when the copy reads
 * slower still, the mapping is loaded again and used). -m files are measured as
 * mapped, as a runtime would run them (a conclusion then suggests
 * --hugepages). On success *e is the engine to run (NULL and an exit code
 * on failure). */
static int copy_if_pages_slow(struct eb_state *s, size_t mi, struct engine **e) {
  struct eb_model *m = &s->models[mi];
  bool slow = false;
  for (uint32_t t = 1; t <= m->weights_bw_threads; t++)
    slow |= eb_pages_below(m->weights_ref_bw[t], m->weights_read_bw[t], EB_PAGES_COPY);
  /* weights read from the caches: their pages' speed is not what decode sees */
  if (!slow || m->info.hugepages || m->fits_caches) return 0;
  /* The copy is anonymous memory on top of the mapping while it is made:
   * only with room for it and the KV cache (the page cache is reclaimable). */
  uint64_t avail = eb_mem_available_bytes();
  double need = 1.1 * (double)(m->file_bytes + m->info.kv_bytes);
  if (avail && (double)avail < need) {
    char a[32], b[32];
    eb_warn(s, "%s: its mapped pages read slower than fresh memory, but %s available is "
             "less than a copy needs (%s); decode is measured on the mapped pages", m->path,
             tm_fmt_bytes((double)avail, a, sizeof a), tm_fmt_bytes(need, b, sizeof b));
    return 0;
  }
  memcpy(m->mapped_read_bw, m->weights_read_bw, sizeof m->mapped_read_bw);
  memcpy(m->mapped_ref_bw, m->weights_ref_bw, sizeof m->mapped_ref_bw);
  m->mapped_bw_threads = m->weights_bw_threads;
  engine_free(*e);
  int rc = 0;
  *e = load_engine(s, mi, EB_RUNTIME, true, &rc);
  if (!*e) return rc;
  m->copied = m->info.hugepages;
  if (!m->copied) /* the copy failed: mapped again, and reported as such */
    eb_warn(s, "%s: its mapped pages read slower than fresh memory and copying them "
             "failed; decode is measured on the mapped pages", m->path);
  eb_measure_weights_bw(s, mi);
  /* The copy has to read faster than what it replaces: on this project's VM
   * a fresh copy once read 9-14% slower than the mapping it was made for
   * (anonymous memory is placed by the host too). Then the mapping is used
   * after all, and both figures are reported. Each side is held against
   * the buffer read beside it (the machine moves between the two). */
  double sum_copy = 0, sum_mapped = 0;
  uint32_t tn = m->weights_bw_threads < m->mapped_bw_threads ? m->weights_bw_threads
                                                             : m->mapped_bw_threads;
  for (uint32_t t = 1; t <= tn; t++) {
    if (!(m->weights_ref_bw[t] > 0 && m->mapped_ref_bw[t] > 0)) continue;
    sum_copy += m->weights_read_bw[t] / m->weights_ref_bw[t];
    sum_mapped += m->mapped_read_bw[t] / m->mapped_ref_bw[t];
  }
  if (m->copied && tn && sum_copy < sum_mapped) {
    memcpy(m->copy_read_bw, m->weights_read_bw, sizeof m->copy_read_bw);
    memcpy(m->copy_ref_bw, m->weights_ref_bw, sizeof m->copy_ref_bw);
    m->copy_bw_threads = m->weights_bw_threads;
    engine_free(*e);
    *e = load_engine(s, mi, EB_RUNTIME, false, &rc);
    if (!*e) return rc;
    m->copied = false;
    memcpy(m->weights_read_bw, m->mapped_read_bw, sizeof m->weights_read_bw);
    memcpy(m->weights_ref_bw, m->mapped_ref_bw, sizeof m->weights_ref_bw);
    m->weights_bw_threads = m->mapped_bw_threads;
  }
  return 0;
}


/* --------------------------------------------------------------- main --- */

static int check_memory(const struct eb_state *s, const struct model_cost *costs,
                        const uint64_t *bytes, size_t n) {
  uint64_t avail = eb_mem_available_bytes();
  if (!avail) return 0;
  double kv = 0, biggest = 0, sum = 0;
  for (size_t i = 0; i < n; i++) {
    double k = costs[i].kv_bytes_per_token * ctx_needed(s->o);
    if (k > kv) kv = k;
    if ((double)bytes[i] > biggest) biggest = (double)bytes[i];
    sum += (double)bytes[i];
  }
  char a[32], b[32];
  if (biggest + kv > (double)avail)
    return eb_fail((struct eb_state *)s, EB_RUNTIME,
                    "not enough memory: %s available, the model and its KV cache need %s",
                    tm_fmt_bytes((double)avail, a, sizeof a),
                    tm_fmt_bytes(biggest + kv, b, sizeof b));
  if (sum + kv > (double)avail)
    eb_warn(s,
             "%s available, less than both models and a KV cache (%s): the second model "
             "will evict the first from the page cache; warm-ups absorb the re-reads",
             tm_fmt_bytes((double)avail, a, sizeof a), tm_fmt_bytes(sum + kv, b, sizeof b));
  return 0;
}

/* The default pair's costs from their plans, before anything is written. */
static int default_costs(struct model_cost *costs, uint64_t *bytes) {
  const int types[] = {MODEL_FTYPE_Q4_0, MODEL_FTYPE_Q8_0};
  struct tm_err err;
  for (size_t i = 0; i < 2; i++) {
    if (model_cost_from_preset(DEFAULT_PRESET, model_ftype_name(types[i]), GGML_TYPE_F16,
                               &costs[i], NULL, 0, &err) != 0)
      return -1;
    bytes[i] = costs[i].bytes_total; /* the tensors' data: the file less its header */
  }
  return 0;
}

static json_t *settings_json(const struct eb_state *s) {
  const struct eb_opts *o = s->o;
  json_t *st = json_object(), *t = json_array(), *p = json_array(), *n = json_array(),
         *d = json_array(), *ms = json_array();
  for (size_t i = 0; i < o->n_threads; i++) json_array_append_new(t, json_integer(o->threads[i]));
  for (size_t i = 0; i < o->n_prompt_tokens; i++)
    json_array_append_new(p, json_integer(o->prompt_tokens[i]));
  for (size_t i = 0; i < o->n_max_tokens; i++)
    json_array_append_new(n, json_integer(o->max_tokens[i]));
  for (size_t i = 0; i < o->n_depth; i++) json_array_append_new(d, json_integer(o->depth[i]));
  for (size_t i = 0; i < s->n_models; i++) json_array_append_new(ms, json_string(s->models[i].path));
  json_object_set_new(st, "threads", t);
  json_object_set_new(st, "prompt_tokens", p);
  json_object_set_new(st, "gen_tokens", n);
  json_object_set_new(st, "depth", d);
  json_object_set_new(st, "reps", json_integer(s->reps));
  json_object_set_new(st, "hugepages", json_boolean(s->o->hugepages));
  json_object_set_new(st, "cooldown_s", json_real(s->o->cooldown_s));
  json_object_set_new(st, "warmups", json_integer(1));
  json_object_set_new(st, "ignore_eos", json_true());
  json_object_set_new(st, "models", ms);
  json_object_set_new(st, "probe_quick", json_boolean(s->probe->quick));
  if (o->n_jobs) { /* the jobs replace the grid: their own lengths */
    json_t *jobs = json_array();
    json_array_clear(p);
    json_array_clear(n);
    for (size_t j = 0; j < o->n_jobs; j++) {
      json_array_append_new(p, json_integer(o->jobs[j].n_ids));
      json_array_append_new(n, json_integer(o->jobs[j].max_tokens));
      json_array_append_new(jobs, json_pack("{s:s, s:i, s:i, s:i}", "name", o->jobs[j].name,
                                            "prompt_tokens", (json_int_t)o->jobs[j].n_ids,
                                            "gen_tokens", (json_int_t)o->jobs[j].max_tokens,
                                            "reps", (json_int_t)(o->jobs[j].reps ? o->jobs[j].reps
                                                                                 : s->reps)));
    }
    json_array_clear(d);
    json_object_set_new(st, "workloads", jobs);
    json_object_set_new(st, "workload_file", json_string(o->workload_file ? o->workload_file : ""));
    json_object_set_new(st, "vocabulary", json_string(o->vocab ? o->vocab : ""));
  }
  return st;
}

static int open_records(struct eb_state *s) {
  struct tm_err err = {{0}};
  struct machine_thermal th;
  machine_thermal_read(&th);
  json_t *settings = settings_json(s);
  struct record_model model = {.file = s->n_models == 1 ? s->models[0].path : NULL,
                               .arch = s->models[0].arch,
                               .type = s->n_models == 1 ? eb_model_type_name(&s->models[0]) : NULL,
                               .bytes_per_token = s->n_models == 1
                                                      ? s->models[0].cost.weight_bytes_per_token +
                                                            s->models[0].cost.state_bytes
                                                      : NAN};
  struct record_identity_in in = {.tokmeter_version = TOKMETER_VERSION, .settings = settings,
                                  .machine = &s->probe->info, .thermal_before = &th,
                                  .model = &model, .backend = "engine", .target = "in-process",
                                  .command = s->o->command};
  int rc = bench_session_open(&s->session, s->o->out, &in, &err);
  json_decref(settings);
  if (rc == -1) return eb_fail(s, EB_RUNTIME, "%s", err.msg);
  if (rc != 0) return eb_fail(s, EB_RUNTIME, "cannot write the identity record: %s", err.msg);
  snprintf(s->identity, sizeof s->identity, "%s", s->session.identity);
  return 0;
}

/* The end record, with the findings when they were drawn. */
static void close_records(struct eb_state *s) {
  if (!s->session.file) return;
  bench_session_end(&s->session, s->runs, NULL, false, s->steal_share,
                    s->measured ? &s->findings : NULL);
  s->record_failures = s->session.write_failures;
}

/* Synthesizes (once, cached) the default pair; 0 or an exit code. */
static int default_models(struct eb_state *s) {
  const int types[] = {MODEL_FTYPE_Q4_0, MODEL_FTYPE_Q8_0};
  for (size_t i = 0; i < 2; i++) {
    struct tm_err err = {{0}};
    char path[1024];
    bool written = false;
    struct synth_ctx sc = {.s = s, .name = model_ftype_name(types[i])};
    if (synth_cached(DEFAULT_PRESET, types[i], SYNTH_DEFAULT_SEED, 0, synth_progress, &sc, path, sizeof path, &written,
                     &err) != 0) {
      eb_progress_done(s);
      return eb_fail(s, EB_RUNTIME, "cannot synthesize the default model: %s", err.msg);
    }
    eb_progress_done(s);
    struct eb_model *m = &s->models[i];
    int rc = analyse_file(s, path, m);
    if (rc) return EB_RUNTIME; /* our own file: not the user's input */
    snprintf(m->label, sizeof m->label, "%s shape, synthetic, %s", DEFAULT_PRESET,
             model_ftype_name(types[i]));
    snprintf(m->short_label, sizeof m->short_label, "%s", model_ftype_name(types[i]));
    s->n_models++;
  }
  return 0;
}

static int get_probe(struct eb_state *s, bool *cached) {
  struct tm_err err = {{0}};
  *cached = !s->o->reprobe && probe_load_cached(s->probe, &err) == 1 &&
            s->probe->quick == probe_quick_from_env() && probe_covers_machine(s->probe);
  /* a cache taken while other work ran is taken again on a quiet machine */
  char retake[400] = "";
  if (*cached && probe_retake_busy(s->probe, retake, sizeof retake)) *cached = false;
  if (*cached) return 0;
  if (retake[0]) eb_warn(s, "%s", retake);
  memset(&err, 0, sizeof err);
  eb_progress(s, "probing this machine (memory bandwidth, compute; once, then cached)");
  if (probe_get(s->probe, s->o->reprobe || retake[0], probe_progress, s, &err) != 0) {
    eb_progress_done(s);
    return eb_fail(s, EB_RUNTIME, "probe failed: %s", err.msg);
  }
  eb_progress_done(s);
  if (err.msg[0]) eb_warn(s, "%s", err.msg); /* e.g. a corrupt cache was replaced */
  return 0;
}

void eb_state_init(struct eb_state *s, struct eb_opts *o, const struct eb_hooks *hooks) {
  memset(s, 0, sizeof *s);
  s->o = o;
  if (hooks) s->hooks = *hooks;
  s->steal_share = NAN;
  s->main_job = !o->gguf;
}

void eb_state_free(struct eb_state *s) {
  close_records(s);
  machine_bw_buffer_close(&s->bw_buf);
  free(s->probe);
  s->probe = NULL;
  json_decref(s->summaries);
  json_decref(s->conclusions);
  s->summaries = s->conclusions = NULL;
  bench_findings_free(&s->findings);
  free(s->rows);
  s->rows = NULL;
}

int eb_run(struct eb_state *s) {
  struct eb_opts *o = s->o;
  const bool main_job = s->main_job;
  bool threads_default = o->n_threads == 0;
  s->reps = o->reps ? o->reps : main_job ? MAIN_JOB_REPS : FILE_REPS;
  if (!o->n_prompt_tokens) o->prompt_tokens[o->n_prompt_tokens++] = 512;
  if (!o->n_max_tokens) o->max_tokens[o->n_max_tokens++] = 128;
  if (!o->n_depth) o->depth[o->n_depth++] = 0;
  if (eb_max_of(o->prompt_tokens, o->n_prompt_tokens) == 0 &&
      eb_max_of(o->max_tokens, o->n_max_tokens) == 0)
    return eb_usage(s, "-p 0 and -n 0: nothing to measure");
  if (threads_default) o->threads[o->n_threads++] = 1; /* to load; 1..N once probed */
  /* Before the model loads with threads[0] workers: the probe's range (1..its
   * CPUs) is checked once it is read, but 999 threads must not start first. */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (size_t i = 0; online > 0 && i < o->n_threads; i++)
    if (o->threads[i] > (uint32_t)online)
      return eb_usage(s, "--threads %u: this machine has %ld online CPUs", o->threads[i],
                             online);

  int rc = 0;
  struct engine *e = NULL;
  bool cached = false;
  s->probe = calloc(1, sizeof *s->probe);
  s->summaries = json_array();
  s->conclusions = json_array();
  if (!s->probe || !s->summaries || !s->conclusions) {
    rc = eb_fail(s, EB_RUNTIME, "out of memory");
    goto out;
  }

  if (!main_job) {
    /* The file first: a bad model is the user's input (exit 2) and fails
     * before seconds are spent probing. */
    struct eb_model *m = &s->models[0];
    if ((rc = analyse_file(s, o->gguf, m))) goto out;
    snprintf(m->label, sizeof m->label, "%s", o->gguf);
    /* named as `tokmeter ceiling` names the type: general.file_type, else
     * the tensor type holding the most bytes */
    snprintf(m->short_label, sizeof m->short_label, "%s", eb_model_type_name(m));
    s->n_models = 1;
    if ((rc = check_memory(s, &m->cost, &m->file_bytes, 1))) goto out;
    e = load_engine(s, 0, EB_BAD_INPUT, o->hugepages, &rc);
    if (!e) goto out;
  } else {
    struct model_cost costs[2];
    uint64_t bytes[2];
    if (default_costs(costs, bytes) == 0 && (rc = check_memory(s, costs, bytes, 2))) goto out;
    if ((rc = get_probe(s, &cached))) goto out;
    if ((rc = default_models(s))) goto out;
  }
  if (!main_job && (rc = get_probe(s, &cached))) goto out;

  if (threads_default) {
    o->n_threads = 0;
    uint32_t n = s->probe->max_threads;
    if (online > 0 && (uint32_t)online < n) n = (uint32_t)online;
    for (uint32_t t = 1; t <= n && t <= EB_MAX_LIST; t++) o->threads[o->n_threads++] = t;
  }
  for (size_t i = 0; i < o->n_threads; i++)
    if (o->threads[i] > s->probe->max_threads) {
      rc = eb_usage(s, "--threads %u: the probe measured 1..%u threads", o->threads[i],
                           s->probe->max_threads);
      goto out;
    }
  for (size_t i = 0; i < s->n_models; i++)
    s->models[i].int8 = ceiling_use_int8(s->models[i].cost.quantized_bytes_fraction,
                                         probe_best_int8(s->probe, NULL));
  for (size_t i = 0; i < s->n_models; i++) set_tiles(s, &s->models[i]);

  s->probe_cached = cached;
  eb_measure_bw_now(s);

  char command[2048] = "tokmeter bench";
  if (!o->command) o->command = command;
  if ((rc = open_records(s))) goto out;

  size_t n_tests = 0;
  for (size_t i = 0; i < o->n_prompt_tokens; i++) n_tests += o->prompt_tokens[i] != 0;
  for (size_t i = 0; i < o->n_max_tokens; i++) n_tests += o->max_tokens[i] != 0;
  s->configs_total = (uint32_t)(s->n_models * o->n_threads * o->n_depth * n_tests);
  if (o->n_jobs) {
    n_tests = 0;
    for (size_t j = 0; j < o->n_jobs; j++) n_tests += 1 + (o->jobs[j].max_tokens != 0);
    s->configs_total = (uint32_t)(s->n_models * o->n_threads * n_tests);
  }
  machine_cpu_ticks_now(&s->ticks_start);
  for (size_t mi = 0; mi < s->n_models; mi++) {
    if (!e) {
      e = load_engine(s, mi, main_job ? EB_RUNTIME : EB_BAD_INPUT, o->hugepages, &rc);
      if (!e) goto out;
    }
    eb_measure_weights_bw(s, mi);
    eb_measure_cache_fit(s, mi);
    if (main_job && (rc = copy_if_pages_slow(s, mi, &e))) goto out;
    struct eb_model *m = &s->models[mi];
    if (strcmp(m->kernel_path, m->best_path) != 0 &&
        (mi == 0 || strcmp(m->kernel_path, s->models[mi - 1].kernel_path) != 0)) {
      if (kernels_forced_name())
        eb_warn(s, "TOKMETER_KERNELS=%s: the engine runs %s kernels, narrower than this CPU's "
                 "%s: rates are below what the CPU allows", kernels_forced_name(),
                 m->kernel_path, m->best_path);
      else
        eb_warn(s, "this CPU offers faster kernels (%s) than the engine runs (%s): rates are "
                 "below what the CPU allows", m->best_path, m->kernel_path);
    }
    rc = run_model(s, e, mi);
    engine_memory(e, &m->mem);
    m->have_mem = true;
    engine_free(e);
    e = NULL;
    if (rc) goto out;
  }
  s->steal_share = machine_steal_since(&s->ticks_start);
  eb_measure_bw_after(s);
  eb_conclude(s);
  s->measured = true;
  rc = EB_OK;
out:
  if (e) engine_free(e);
  close_records(s);
  /* Records that could not be written: the results were not safely kept. */
  if (rc == EB_OK && s->record_failures)
    rc = eb_fail(s, EB_RUNTIME, "%llu records could not be written to the results file",
                  (unsigned long long)s->record_failures);
  return rc;
}

/* -------------------------------------------------- reading the rows --- */

const struct eb_row *eb_find_job_row(const struct eb_state *s, size_t model, uint32_t threads,
                                     size_t job, enum engine_bench_kind kind) {
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    if (r->model == model && r->threads == threads && r->job == job + 1 && r->cfg.kind == kind)
      return r;
  }
  return NULL;
}

const struct eb_row *eb_find_row(const struct eb_state *s, size_t model, uint32_t threads,
                                 enum engine_bench_kind kind, uint32_t tokens, uint32_t depth) {
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    if (r->model == model && r->job == 0 && r->threads == threads && r->cfg.kind == kind &&
        r->cfg.tokens == tokens && r->cfg.depth == depth)
      return r;
  }
  return NULL;
}

uint32_t eb_first_nonzero(const uint32_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (v[i]) return v[i];
  return 0;
}

bool eb_blank_by_rule(const struct eb_row *r) {
  return r && r->cfg.kind == ENGINE_BENCH_TG && r->cfg.tokens < METRICS_MIN_DECODE_TOKENS;
}
