/* cmd_bench_engine_print: the in-process path's output: the machine, per model
 * a table (every rate with its ceiling at the same thread count and the
 * percentage), the decode curve, and conclusions computed from the numbers
 * (how each phase scaled with cores and why; what fewer bytes per token
 * bought). --json prints the same as one document. Rule 5: a decode of fewer
 * than METRICS_MIN_DECODE_TOKENS tokens has no rate (engine_bench.h): its
 * cell and percentage are blank with the server table's footnote, its
 * ceiling stays, and no conclusion uses a rate it does not have. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/drift.h"
#include "bench/records_engine.h"
#include "bench/inproc.h"
#include "cli/bench_cli.h"
#include "cli/bench_engine_print.h"
#include "cli/cli.h"
#include "engine/engine.h"
#include "gguf/ggml_types.h"
#include "model/ceiling.h"
#include "util/units.h"

static const char *const CMD = "bench";

/* "122.4 ± 3.1": the median and the sample sd (docs/design.md rule 1; `tokmeter
 * report` shows the same median), sd blank with one repetition. */
static const char *rate_pm(const struct stats_summary *t, char *buf, size_t n) {
  if (!t->n) snprintf(buf, n, "-");
  else if (isfinite(t->sd)) snprintf(buf, n, "%.1f +- %.1f", t->median, t->sd);
  else snprintf(buf, n, "%.1f", t->median);
  return buf;
}

/* The footnote of a rate blank by rule 5 (the server table's words). */
#define NOTE_MARK "(a)"
static void print_few_tokens_note(void) { printf(NOTE_MARK " " METRICS_FEW_TOKENS_NOTE "\n"); }

static const char *pct(double p, char *buf, size_t n) {
  if (isfinite(p)) snprintf(buf, n, "%.0f%%", p);
  else snprintf(buf, n, "-");
  return buf;
}

static const char *ceil_str(double c, char *buf, size_t n) {
  if (isfinite(c) && c > 0) snprintf(buf, n, "%.0f", c);
  else snprintf(buf, n, "-");
  return buf;
}

static void print_machine(const struct eb_state *s, bool cached) {
  const struct machine_probe *p = s->probe;
  char a[32], b[32];
  printf("machine: %s, %u cores, %s memory\n", p->info.cpu_model, p->info.cpus,
         tm_fmt_bytes((double)p->info.memory_bytes, a, sizeof a));
  printf("flags:  ");
  for (uint32_t i = 0; i < p->info.n_flags; i++) printf(" %s", p->info.flags[i]);
  printf("\ntemperatures: %s\n", p->thermal.readable ? "readable (see tokmeter probe)"
                                                       : "not readable on this machine");
  printf("memory read:");
  for (uint32_t t = 1; t <= p->max_threads; t++)
    printf(" %s (%u thread%s)%s", tm_fmt_bandwidth(p->read_bw_bytes_s[t], a, sizeof a), t,
           t == 1 ? "" : "s", t < p->max_threads ? "," : "");
  if (s->bw_now_threads) {
    printf("\n             read now, before the runs (the cached probe's:");
    for (uint32_t t = 1; t <= s->bw_now_threads; t++)
      printf("%s %s", t > 1 ? "," : "", tm_fmt_bandwidth(s->bw_cached[t], a, sizeof a));
    printf(")");
    if (s->bw_now_threads < p->max_threads)
      printf("; %u+ threads: cached", s->bw_now_threads + 1);
  }
  printf("\ncompute (best): f32 %s", tm_fmt_ops(probe_best_f32(p, NULL), "FLOPS", a, sizeof a));
  if (probe_best_int8(p, NULL) > 0)
    printf(", int8 dot %s (%s)", tm_fmt_ops(probe_best_int8(p, NULL), "OPS", b, sizeof b),
           p->int8_path);
  /* A prefill ceiling uses the path the engine's kernels run on (docs/design.md):
   * the tiles where the engine has kernels for them (Q4_0 and Q8_0 batches),
   * the vector path otherwise; either way the reader learns what the tiles
   * offer. */
  if (probe_best_int8_tile(p, NULL) > 0) {
    tm_fmt_ops(probe_best_int8_tile(p, NULL), "OPS", b, sizeof b);
    if (engine_default_prefill_tiles())
      printf("\n                int8 tiles %s (%s): the engine's Q4_0 and Q8_0 prefill runs on "
             "them (batches of %d tokens and more), and those prefill ceilings use their rate",
             b, p->int8_tile_path, ENGINE_TILES_MIN_BATCH);
    else
      printf("\n                int8 tiles %s (%s): the engine has no kernels for them here, "
             "so its prefill ceilings use the %s rate",
             b, p->int8_tile_path, p->int8_path[0] ? p->int8_path : "f32");
  }
  printf("\nprobe: %s%s, %s\n", cached ? "cached from " : "measured ", p->measured_at,
         p->quick ? "QUICK (test mode: figures are not memory bandwidth)" : "full");
  char warn[400];
  if (probe_busy_warning(p, warn, sizeof warn)) cli_warn(CMD, "%s", warn);
}

static void print_curve(const struct eb_row *r) {
  if (!r || r->n_segments < 2) return;
  printf("         decode curve at %u thread%s (tok/s):", r->threads, r->threads == 1 ? "" : "s");
  for (size_t i = 0; i < r->n_segments; i++)
    printf(" %u-%u %.1f%s", r->seg[i].from, r->seg[i].to, r->seg[i].tok_s,
           i + 1 < r->n_segments ? "," : "");
  printf("\n");
}

/* The engine's resident memory after the model's runs, against the bound the
 * engine keeps (engine.h, engine_memory). */
static void print_memory(const struct eb_model *m) {
  if (!m->have_mem) return;
  const struct engine_memory *mem = &m->mem;
  char a[32], b[32], c[32], d[32], e[32], f[32];
  tm_fmt_bytes((double)mem->limit, f, sizeof f);
  if (mem->total < 0) {
    printf("memory: the engine's resident pages are not readable here (mincore); buffers "
           "%s; bound file + KV cache + 10%% = %s\n",
           tm_fmt_bytes((double)mem->buffers, a, sizeof a), f);
    return;
  }
  /* A cache smaller than its last page is resident in whole pages: say so
   * rather than print "40 KiB of 38 KiB". */
  const bool kv_whole_pages = mem->kv_resident > (int64_t)mem->kv_bytes;
  printf("memory: %s resident after the runs (weights %s %s, KV cache %s %s %s, buffers %s): "
         "%s the bound, file + KV cache + 10%% (%s)\n",
         tm_fmt_bytes((double)mem->total, a, sizeof a),
         tm_fmt_bytes((double)mem->weights_resident, b, sizeof b),
         m->info.hugepages ? "copied" : "memory-mapped",
         tm_fmt_bytes((double)mem->kv_resident, c, sizeof c),
         kv_whole_pages ? "in whole pages for" : "of",
         tm_fmt_bytes((double)mem->kv_bytes, d, sizeof d),
         tm_fmt_bytes((double)mem->buffers, e, sizeof e),
         (uint64_t)mem->total <= mem->limit ? "within" : "ABOVE", f);
}

/* label, then per thread count 1..n "38.6 GB/s (1 thread, probe's buffer
 * 35.7)", or with ratio "(1 thread, 1.8x the probe's buffer)"; no newline. */
static void print_readings(const char *label, const double *bw, const double *ref, uint32_t n,
                           bool ratio) {
  char a[32];
  printf("%s", label);
  for (uint32_t t = 1; t <= n; t++) {
    printf(" %s (%u thread%s, ", tm_fmt_bandwidth(bw[t], a, sizeof a), t, t == 1 ? "" : "s");
    if (ratio) printf("%.1fx the probe's buffer)", bw[t] / ref[t]);
    else printf("probe's buffer %.1f)", ref[t] / 1e9);
    if (t < n) printf(",");
  }
}

static void print_model_head(const struct eb_state *s, size_t mi) {
  const struct eb_model *m = &s->models[mi];
  char a[32], b[32], type[96];
  if (m->file_type[0] && strcmp(m->file_type, m->type) != 0)
    snprintf(type, sizeof type, "%s, most bytes in %s", m->file_type, m->type);
  else
    snprintf(type, sizeof type, "%s", m->type);
  printf("\nmodel: %s (%s %s, %s file, %s read per token at depth 0)\n", m->label, m->arch,
         type, tm_fmt_bytes((double)m->file_bytes, a, sizeof a),
         tm_fmt_bytes_si(m->cost.weight_bytes_per_token + m->cost.state_bytes, b, sizeof b));
  char pages[64] = "";
  if (m->info.huge_share >= 0) /* a copy's too: the kernel may give fewer */
    snprintf(pages, sizeof pages, ", %.0f%% through 2 MiB pages", 100.0 * m->info.huge_share);
  char chunk[32];
  tm_fmt_bytes((double)m->info.decode_chunk_bytes, chunk, sizeof chunk);
  printf("loaded in %.0f ms (map%s + first touch of every page; not in any rate); kernels: %s "
         "(decode chunks of %s); weights: %s%s\n",
         m->info.load_ms, m->info.hugepages ? " + copy" : "", m->kernel_path, chunk,
         m->copied             ? "copied into huge pages (their mapped pages read slowly, below)"
         : m->info.hugepages  ? "copied into huge pages (--hugepages)"
         : m->copy_bw_threads ? "memory-mapped (a copy read slower still, below)"
                              : "memory-mapped",
         pages);
  if (m->info.max_batch < m->info.max_batch_asked)
    printf("prefill in batches of %u tokens, not %u: the buffers of larger ones would break the "
           "engine's memory bound (file + KV cache + 10%%)\n",
           m->info.max_batch, m->info.max_batch_asked);
  print_memory(m);
  if (m->copied) {
    print_readings("mapped pages read in place (the probe's loop over this file's pages):",
                   m->mapped_read_bw, m->mapped_ref_bw, m->mapped_bw_threads, false);
    printf("\n  more than 5%% below fresh memory, so the main job runs this model from an "
           "anonymous copy, as --hugepages does\n");
  }
  if (m->copy_bw_threads) {
    print_readings("an anonymous copy of them read in place:", m->copy_read_bw, m->copy_ref_bw,
                   m->copy_bw_threads, false);
    printf("\n  slower than the mapping, so the main job runs this model memory-mapped after "
           "all\n");
  }
  if (m->weights_bw_threads) {
    print_readings(m->info.hugepages ? "weights read in place (the probe's loop over the copy):"
                                     : "weights read in place (the probe's loop over this "
                                       "file's pages):",
                   m->weights_read_bw, m->weights_ref_bw, m->weights_bw_threads, false);
    printf("\n");
  }
  if (m->fits_caches) {
    print_readings("the weights fit in the caches: a fresh buffer of their size read",
                   m->fit_read_bw, m->weights_ref_bw, m->fit_bw_threads, true);
    printf("\n  so decode reads them from the caches, and its ceiling below is the caches' read "
           "rate, not memory's\n");
  }
}

/* A prefill row and a decode row as one line's cells: rate +- sd, ceiling,
 * %; either row may be NULL (blank cells). True when the decode's rate is
 * blank by rule 5 (its footnote is due). */
struct pair_cells {
  char x1[48], x2[16], x3[8], y1[48], y2[16], y3[8];
};
static bool fill_pair_cells(const struct eb_row *pp, const struct eb_row *tg,
                            struct pair_cells *c) {
  memset(c, 0, sizeof *c);
  if (pp) {
    rate_pm(&pp->tok_s, c->x1, sizeof c->x1);
    ceil_str(pp->ceiling_tok_s, c->x2, sizeof c->x2);
    pct(pp->percent, c->x3, sizeof c->x3);
  }
  if (!tg) return false;
  if (eb_blank_by_rule(tg)) snprintf(c->y1, sizeof c->y1, "- " NOTE_MARK);
  else rate_pm(&tg->tok_s, c->y1, sizeof c->y1);
  ceil_str(tg->ceiling_tok_s, c->y2, sizeof c->y2);
  pct(tg->percent, c->y3, sizeof c->y3);
  return eb_blank_by_rule(tg);
}

/* Prefill and decode side by side, one row per thread count, for one -p,
 * one -n and one -d: rate +- sd, ceiling, % (the screen's table, and -v's). */
static void print_pair_table(const struct eb_state *s, size_t mi, uint32_t p, uint32_t n,
                             uint32_t d) {
  const struct eb_opts *o = s->o;
  char h1[32] = "", h2[32] = "";
  if (p) snprintf(h1, sizeof h1, "pp%u tok/s", p);
  if (n) snprintf(h2, sizeof h2, "tg%u tok/s", n);
  printf("threads  %-16s %8s %5s    %-16s %8s %5s\n", h1, "ceiling", "%", h2, "ceiling", "%");
  bool few = false;
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    const uint32_t t = o->threads[ti];
    const struct eb_row *pp = p ? eb_find_row(s, mi, t, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *tg = n ? eb_find_row(s, mi, t, ENGINE_BENCH_TG, n, d) : NULL;
    struct pair_cells c;
    few |= fill_pair_cells(pp, tg, &c);
    printf("%7u  %-16s %8s %5s    %-16s %8s %5s\n", t, c.x1, c.x2, c.x3, c.y1, c.y2, c.y3);
  }
  if (few) print_few_tokens_note();
}
/* One row per thread count, prefill and decode side by side: for one -p, one
 * -n and one -d (the main job, and the usual -m run). */
static void print_side_by_side(const struct eb_state *s, size_t mi, uint32_t p, uint32_t n,
                               uint32_t d) {
  const struct eb_opts *o = s->o;
  if (d) printf("context depth: %u tokens before each run (untimed)\n", d);
  print_pair_table(s, mi, p, n, d);
  if (n && o->n_threads) print_curve(eb_find_row(s, mi, o->threads[o->n_threads - 1],
                                              ENGINE_BENCH_TG, n, d));
  bool any = false;
  for (size_t ti = 0; n && ti < o->n_threads; ti++) {
    const struct eb_row *tg = eb_find_row(s, mi, o->threads[ti], ENGINE_BENCH_TG, n, d);
    if (!tg || !(tg->bw_lo > 0)) continue;
    printf("%s %u thread%s %.1f-%.1f",
           any                          ? ","
           : s->models[mi].fits_caches ? "         read (the caches) between the decode's "
                                         "repetitions (GB/s, lowest-highest):"
                                       : "         memory read between the decode's "
                                         "repetitions (GB/s, lowest-highest):",
           tg->threads, tg->threads == 1 ? "" : "s", tg->bw_lo / 1e9, tg->bw_hi / 1e9);
    any = true;
  }
  if (any) printf("\n");
  printf("(prefill ceiling: %s compute at that thread count / FLOPs per prompt token; decode "
         "ceiling: memory read bandwidth at that thread count, read on either side of each "
         "repetition (the faster of the probe's buffer and the weights in place), / bytes read "
         "per token%s)\n",
         s->models[mi].tiles  ? "int8 tile (batches of 16 tokens and more; int8 below)"
         : s->models[mi].int8 ? "int8"
                              : "f32",
         s->models[mi].fits_caches ? "; this model's weights fit in the caches, so that "
                                     "reading is the caches' read rate"
                                   : "");
}

/* A workload file's jobs: per job and thread count, its prompt's prefill
 * and the decode after it, each beside its ceiling. */
static void print_jobs(const struct eb_state *s, size_t mi) {
  const struct eb_opts *o = s->o;
  size_t w = 3;
  for (size_t j = 0; j < o->n_jobs; j++) {
    size_t l = strlen(o->jobs[j].name);
    w = l > w ? l : w;
  }
  printf("%-*s  prompt  threads  %-16s %8s %5s    %-16s %8s %5s\n", (int)w, "job",
         "prefill tok/s", "ceiling", "%", "decode tok/s", "ceiling", "%");
  bool few = false;
  for (size_t j = 0; j < o->n_jobs; j++) {
    for (size_t ti = 0; ti < o->n_threads; ti++) {
      const uint32_t t = o->threads[ti];
      const struct eb_row *pp = eb_find_job_row(s, mi, t, j, ENGINE_BENCH_PP);
      const struct eb_row *tg = eb_find_job_row(s, mi, t, j, ENGINE_BENCH_TG);
      struct pair_cells c;
      few |= fill_pair_cells(pp, tg, &c);
      printf("%-*s  %6u  %7u  %-16s %8s %5s    %-16s %8s %5s\n", (int)w,
             ti ? "" : o->jobs[j].name, o->jobs[j].n_ids, t, c.x1, c.x2, c.x3, c.y1, c.y2, c.y3);
    }
  }
  if (few) print_few_tokens_note();
  printf("(prompt: the job's text in tokens of the model's own vocabulary, %s, as llama.cpp "
         "counts it; decode: the job's max_tokens after that prompt)\n",
         o->vocab ? o->vocab : "?");
}

/* One row per configuration: for lists of -p / -n / -d. */
static void print_rows(const struct eb_state *s, size_t mi) {
  printf("threads  test      depth  %-22s %12s %6s\n", "rate (tok/s)", "ceiling", "%");
  bool few = false; /* a decode cell blank by rule 5: its footnote follows */
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    if (r->model != mi) continue;
    char test[32], a[48], b[16], c[8];
    if (eb_blank_by_rule(r)) snprintf(a, sizeof a, "- " NOTE_MARK);
    else rate_pm(&r->tok_s, a, sizeof a);
    few |= eb_blank_by_rule(r);
    printf("%7u  %-8s %6u  %-22s %12s %6s\n", r->threads,
           engine_bench_test_name(&r->cfg, test, sizeof test), r->cfg.depth, a,
           ceil_str(r->ceiling_tok_s, b, sizeof b), pct(r->percent, c, sizeof c));
  }
  if (few) print_few_tokens_note();
}

/* The second reading of the ceiling's bandwidth, beside the probe's. */
static void print_bw_after(const struct eb_state *s) {
  if (!s->bw_after_threads) return;
  printf("\nmemory read after the runs (the probe's loop, the run's own buffer): ");
  for (uint32_t t = 1; t <= s->bw_after_threads; t++) {
    char a[32];
    double probe_bw = s->probe->read_bw_bytes_s[t];
    printf("%s%s (%u thread%s", t > 1 ? ", " : "",
           tm_fmt_bandwidth(s->bw_after[t], a, sizeof a), t, t == 1 ? "" : "s");
    if (probe_bw > 0)
      printf(", %+.0f%% vs %s", 100.0 * (s->bw_after[t] / probe_bw - 1),
             t <= s->bw_now_threads ? "before" : "the probe");
    printf(")");
  }
  printf("\n");
}

/* The findings on the screen: at most this many, the most important first. */
#define SCREEN_FINDINGS 5

/* The machine in two lines: what it is, and what the probe measured. */
static void print_machine_short(const struct eb_state *s) {
  const struct machine_probe *p = s->probe;
  char a[32], b[32];
  printf("machine: %s, %u cores, %s, kernels %s\n", p->info.cpu_model, p->info.cpus,
         tm_fmt_bytes((double)p->info.memory_bytes, a, sizeof a),
         s->n_models ? s->models[0].kernel_path : "?");
  const uint32_t tn = p->max_threads < 4 ? p->max_threads : 4;
  printf("probe: memory");
  for (uint32_t t = 1; t <= tn; t++) printf("%s %.1f", t > 1 ? "," : "", p->read_bw_bytes_s[t] / 1e9);
  if (tn > 1) printf(" GB/s at 1..%u threads%s", tn, p->max_threads > tn ? " (more: -v)" : "");
  else printf(" GB/s at 1 thread");
  if (probe_best_int8_tile(p, NULL) > 0 && s->n_models && s->models[0].tiles)
    printf(", int8 tiles %s", tm_fmt_ops(probe_best_int8_tile(p, NULL), "OPS", b, sizeof b));
  else if (probe_best_int8(p, NULL) > 0)
    printf(", int8 %s", tm_fmt_ops(probe_best_int8(p, NULL), "OPS", b, sizeof b));
  else
    printf(", f32 %s", tm_fmt_ops(probe_best_f32(p, NULL), "FLOPS", b, sizeof b));
  printf("; %s %.10s%s\n", s->probe_cached ? "cached" : "measured", p->measured_at,
         p->quick ? " QUICK" : "");
  char warn[400];
  if (probe_busy_warning(p, warn, sizeof warn)) cli_warn(CMD, "%s", warn);
}

/* One model's compact table: prefill and decode side by side per thread
 * count (one -p, one -n, one -d), else one row per configuration. */
static void print_model_short(const struct eb_state *s, size_t mi, bool side) {
  const struct eb_opts *o = s->o;
  const struct eb_model *m = &s->models[mi];
  char a[32], b[32];
  printf("\n%s%s%s (%s file, %s read per token)\n", strstr(m->label, m->short_label) ? "" : m->short_label,
         strstr(m->label, m->short_label) ? "" : ": ", m->label,
         tm_fmt_bytes((double)m->file_bytes, a, sizeof a),
         tm_fmt_bytes_si(m->cost.weight_bytes_per_token + m->cost.state_bytes, b, sizeof b));
  if (o->n_jobs) {
    print_jobs(s, mi);
    return;
  }
  if (!side) {
    print_rows(s, mi);
    return;
  }
  print_pair_table(s, mi, eb_first_nonzero(o->prompt_tokens, o->n_prompt_tokens),
                   eb_first_nonzero(o->max_tokens, o->n_max_tokens), o->depth[0]);
}

/* The findings' briefs, most important first, at most SCREEN_FINDINGS. */
static void print_findings_short(const struct eb_state *s) {
  const struct bench_findings *l = &s->findings;
  if (!l->n) return;
  size_t *order = malloc(l->n * sizeof *order);
  if (!order) return;
  bench_findings_order(l, order);
  printf("\n");
  const size_t shown = l->n < SCREEN_FINDINGS ? l->n : SCREEN_FINDINGS;
  for (size_t i = 0; i < shown; i++) {
    const struct bench_finding *f = &l->v[order[i]];
    printf("%-7s %s\n", bench_severity_name(f->severity), f->brief);
  }
  if (l->n > shown)
    printf("(%zu more findings, and every reading: -v, --json, tokmeter report)\n",
           l->n - shown);
  free(order);
}

void bench_engine_print(struct eb_state *s, bool verbose) {
  const struct eb_opts *o = s->o;
  size_t n_p = 0, n_n = 0;
  for (size_t i = 0; i < o->n_prompt_tokens; i++) n_p += o->prompt_tokens[i] != 0;
  for (size_t i = 0; i < o->n_max_tokens; i++) n_n += o->max_tokens[i] != 0;
  const bool side = n_p <= 1 && n_n <= 1 && o->n_depth == 1;
  const char *out = o->out ? o->out : RECORD_DEFAULT_FILE;
  printf("tokmeter %s - tokens per second is two numbers\n", TOKMETER_VERSION);
  if (!verbose) {
    print_machine_short(s);
    for (size_t mi = 0; mi < s->n_models; mi++) print_model_short(s, mi, side);
    print_findings_short(s);
    printf("\nrecords: %s (%u timed runs, median +- sd of %u)\n", out, s->runs, s->reps);
    cli_print_report_hint(out);
    return;
  }
  print_machine(s, s->probe_cached);
  printf("method: in-process (tokmeter's engine), one discarded warm-up then %u timed "
         "repetition%s per configuration; %s; greedy decode ignoring "
         "end-of-sequence; rates are median +- sd, %% of ceiling = median / the ceiling\n",
         s->reps, s->reps == 1 ? "" : "s",
         o->n_jobs ? "the workload file's prompts" : "random prompt tokens");
  for (size_t mi = 0; mi < s->n_models; mi++) {
    print_model_head(s, mi);
    if (o->n_jobs)
      print_jobs(s, mi);
    else if (side)
      print_side_by_side(s, mi, eb_first_nonzero(o->prompt_tokens, o->n_prompt_tokens),
                         eb_first_nonzero(o->max_tokens, o->n_max_tokens), o->depth[0]);
    else
      print_rows(s, mi);
  }
  print_bw_after(s);
  if (s->findings.n) printf("\n");
  for (size_t i = 0; i < s->findings.n; i++)
    printf("%s\n", s->findings.v[i].text);
  printf("\nrecords: %s (%u timed runs)\n", out, s->runs);
  cli_print_report_hint(out);
}

void bench_engine_print_json(struct eb_state *s) {
  json_t *root = eb_json(s);
  char *txt = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
  if (txt) printf("%s\n", txt);
  free(txt);
  json_decref(root);
}
