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
#include "cli/bench_engine.h"
#include "cli/cli.h"
#include "engine/engine.h"
#include "gguf/ggml_types.h"
#include "model/ceiling.h"
#include "util/units.h"

static const char *const CMD = "bench";

static const struct eb_row *find_row(const struct eb_state *s, size_t model, uint32_t threads,
                                     enum engine_bench_kind kind, uint32_t tokens,
                                     uint32_t depth) {
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    if (r->model == model && r->threads == threads && r->cfg.kind == kind &&
        r->cfg.tokens == tokens && r->cfg.depth == depth)
      return r;
  }
  return NULL;
}

static uint32_t first_nonzero(const uint32_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (v[i]) return v[i];
  return 0;
}

/* "122.4 ± 3.1": the median and the sample sd (docs/design.md rule 1; `tokmeter
 * report` shows the same median), sd blank with one repetition. */
static const char *rate_pm(const struct stats_summary *t, char *buf, size_t n) {
  if (!t->n) snprintf(buf, n, "-");
  else if (isfinite(t->sd)) snprintf(buf, n, "%.1f +- %.1f", t->median, t->sd);
  else snprintf(buf, n, "%.1f", t->median);
  return buf;
}

/* A decode row whose rate is blank by rule 5 (engine_bench.h): too few
 * generated tokens. Its ceiling is still shown; rate and percentage are not,
 * and nothing concluded after the table uses them. */
static bool blank_by_rule(const struct eb_row *r) {
  return r && r->cfg.kind == ENGINE_BENCH_TG && r->cfg.tokens < METRICS_MIN_DECODE_TOKENS;
}

/* What a conclusion says in place of a decode rate blank by rule 5. */
static const char *no_rate_text(uint32_t n, char *buf, size_t cap) {
  snprintf(buf, cap, "decode has no rate (tg%u: fewer than %d generated tokens)", n,
           METRICS_MIN_DECODE_TOKENS);
  return buf;
}

/* The footnote of a rate blank by rule 5 (the server table's words). */
#define NOTE_MARK "(a)"
static void print_few_tokens_note(void) { printf(NOTE_MARK " " METRICS_FEW_TOKENS_NOTE "\n"); }

/* The table's rate cell: "122.4 +- 3.1 tok/s", "- (a)" when blank by rule 5
 * (the footnote is printed under the table), "-" when there is none. */
static const char *rate_cell(const struct eb_row *r, char *buf, size_t n) {
  if (blank_by_rule(r)) snprintf(buf, n, "- " NOTE_MARK);
  else if (!r->tok_s.n) snprintf(buf, n, "-");
  else {
    rate_pm(&r->tok_s, buf, n);
    strncat(buf, " tok/s", n - strlen(buf) - 1);
  }
  return buf;
}

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

/* The decode curve of one configuration, named by its thread count (the
 * table prints the most threads' only). */
/* " at depth D" when the run asked for more than one depth or a nonzero one,
 * so two conclusions about one test name different configurations. */
static const char *depth_note(const struct eb_row *r, char *buf, size_t n) {
  if (r->cfg.depth) snprintf(buf, n, " at depth %u", r->cfg.depth);
  else buf[0] = 0;
  return buf;
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
    printf("mapped pages read in place (the probe's loop over this file's pages):");
    for (uint32_t t = 1; t <= m->mapped_bw_threads; t++)
      printf(" %s (%u thread%s, probe's buffer %.1f)%s",
             tm_fmt_bandwidth(m->mapped_read_bw[t], a, sizeof a), t, t == 1 ? "" : "s",
             m->mapped_ref_bw[t] / 1e9, t < m->mapped_bw_threads ? "," : "");
    printf("\n  more than 5%% below fresh memory, so the main job runs this model from an "
           "anonymous copy, as --hugepages does\n");
  }
  if (m->copy_bw_threads) {
    printf("an anonymous copy of them read in place:");
    for (uint32_t t = 1; t <= m->copy_bw_threads; t++)
      printf(" %s (%u thread%s, probe's buffer %.1f)%s",
             tm_fmt_bandwidth(m->copy_read_bw[t], a, sizeof a), t, t == 1 ? "" : "s",
             m->copy_ref_bw[t] / 1e9, t < m->copy_bw_threads ? "," : "");
    printf("\n  slower than the mapping, so the main job runs this model memory-mapped after "
           "all\n");
  }
  if (m->weights_bw_threads) {
    printf("weights read in place (the probe's loop over %s):",
           m->info.hugepages ? "the copy" : "this file's pages");
    for (uint32_t t = 1; t <= m->weights_bw_threads; t++)
      printf(" %s (%u thread%s, probe's buffer %.1f)%s",
             tm_fmt_bandwidth(m->weights_read_bw[t], a, sizeof a), t, t == 1 ? "" : "s",
             m->weights_ref_bw[t] / 1e9, t < m->weights_bw_threads ? "," : "");
    printf("\n");
  }
  if (m->fits_caches) {
    printf("the weights fit in the caches: a fresh buffer of their size read");
    for (uint32_t t = 1; t <= m->fit_bw_threads; t++)
      printf(" %s (%u thread%s, %.1fx the probe's buffer)%s",
             tm_fmt_bandwidth(m->fit_read_bw[t], a, sizeof a), t, t == 1 ? "" : "s",
             m->fit_read_bw[t] / m->weights_ref_bw[t], t < m->fit_bw_threads ? "," : "");
    printf("\n  so decode reads them from the caches, and its ceiling below is the caches' read "
           "rate, not memory's\n");
  }
}

/* One row per thread count, prefill and decode side by side: for one -p, one
 * -n and one -d (the main job, and the usual -m run). */
static void print_side_by_side(const struct eb_state *s, size_t mi, uint32_t p, uint32_t n,
                               uint32_t d) {
  const struct bench_opts *o = s->o;
  char h1[32] = "", h2[32] = "";
  if (p) snprintf(h1, sizeof h1, "prefill pp%u", p);
  if (n) snprintf(h2, sizeof h2, "decode tg%u", n);
  if (d) printf("context depth: %u tokens before each run (untimed)\n", d);
  printf("threads  %-20s %9s %6s    %-20s %9s %6s\n", h1, "ceiling", "%", h2, "ceiling", "%");
  bool few = false; /* a decode cell blank by rule 5: its footnote follows */
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    uint32_t t = o->threads[ti];
    const struct eb_row *pp = p ? find_row(s, mi, t, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *tg = n ? find_row(s, mi, t, ENGINE_BENCH_TG, n, d) : NULL;
    char a[48] = "", b[16] = "", c[8] = "", x[48] = "", y[16] = "", z[8] = "";
    if (pp) {
      rate_cell(pp, a, sizeof a);
      ceil_str(pp->ceiling_tok_s, b, sizeof b);
      pct(pp->percent, c, sizeof c);
    }
    if (tg) {
      rate_cell(tg, x, sizeof x);
      ceil_str(tg->ceiling_tok_s, y, sizeof y);
      pct(tg->percent, z, sizeof z);
      few |= blank_by_rule(tg);
    }
    printf("%7u  %-20s %9s %6s    %-20s %9s %6s\n", t, a, b, c, x, y, z);
  }
  if (n && o->n_threads) print_curve(find_row(s, mi, o->threads[o->n_threads - 1],
                                              ENGINE_BENCH_TG, n, d));
  bool any = false;
  for (size_t ti = 0; n && ti < o->n_threads; ti++) {
    const struct eb_row *tg = find_row(s, mi, o->threads[ti], ENGINE_BENCH_TG, n, d);
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
  if (few) print_few_tokens_note();
}

/* One row per configuration: for lists of -p / -n / -d. */
static void print_rows(const struct eb_state *s, size_t mi) {
  printf("threads  test      depth  %-22s %12s %6s\n", "rate (tok/s)", "ceiling", "%");
  bool few = false; /* a decode cell blank by rule 5: its footnote follows */
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    if (r->model != mi) continue;
    char test[32], a[48], b[16], c[8];
    if (blank_by_rule(r)) snprintf(a, sizeof a, "- " NOTE_MARK);
    else rate_pm(&r->tok_s, a, sizeof a);
    few |= blank_by_rule(r);
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

/* The largest steal share among the rows run at t threads; NAN when none
 * is known. */
static double steal_at(const struct eb_state *s, uint32_t t) {
  double worst = NAN;
  for (size_t i = 0; i < s->n_rows; i++)
    if (s->rows[i].threads == t && s->rows[i].steal_share >= 0 &&
        !(s->rows[i].steal_share <= worst))
      worst = s->rows[i].steal_share;
  return worst;
}

/* Steal time per thread count, when the host took any (a quiet host or bare
 * metal reads 0 and the line is left out). */
static void print_steal(const struct eb_state *s) {
  bool any = false;
  for (size_t i = 0; i < s->n_rows; i++) any |= s->rows[i].steal_share >= 0.0005;
  if (!any) return;
  printf("\nsteal while the runs ran (the share of this VM's busy CPU time the host gave to "
         "other work; the largest of any configuration): ");
  const struct bench_opts *o = s->o;
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    double v = steal_at(s, o->threads[ti]);
    char fig[32] = "unknown";
    if (!isnan(v)) snprintf(fig, sizeof fig, "%.1f%%", 100.0 * v);
    printf("%s%s at %u thread%s", ti ? ", " : "", fig, o->threads[ti],
           o->threads[ti] == 1 ? "" : "s");
  }
  printf("\n");
}

static void conclude(struct eb_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void conclude(struct eb_state *s, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  json_array_append_new(s->conclusions, json_string(buf));
}

/* The read bandwidth a decode row's ceiling rests on: its own readings
 * between its repetitions, else the figure read before the runs (or the
 * probe's). */
static double row_bw(const struct eb_state *s, const struct eb_row *r) {
  return r->bw > 0 ? r->bw : s->probe->read_bw_bytes_s[r->threads];
}

static double ratio(const struct eb_row *a, const struct eb_row *b) {
  if (!a || !b || !a->tok_s.n || !b->tok_s.n || !(a->tok_s.median > 0)) return NAN;
  return b->tok_s.median / a->tok_s.median;
}

/* "32% slower at 1 thread (11.8 GB/s), 29% slower at 2 threads (23.1 GB/s)":
 * the thread counts at which bw[t] reads more than frac below the probe's
 * buffer (eb_pages_below); beyond four of them, the range ("19-32% slower at
 * 40 of 64 thread counts").
 * Returns whether there was any. */
static bool slow_pages_list(const double *ref, const double *bw, uint32_t n, double frac,
                            char *out, size_t cap) {
  uint32_t n_slow = 0;
  double lo = 100, hi = 0;
  for (uint32_t t = 1; t <= n; t++) {
    double probe_bw = ref[t];
    if (!eb_pages_below(probe_bw, bw[t], frac)) continue;
    double pct = 100.0 * (1.0 - bw[t] / probe_bw);
    lo = pct < lo ? pct : lo;
    hi = pct > hi ? pct : hi;
    n_slow++;
  }
  out[0] = '\0';
  if (n_slow > 4) {
    snprintf(out, cap, "%.0f-%.0f%% slower at %u of %u thread counts", lo, hi, n_slow, n);
    return true;
  }
  size_t len = 0;
  for (uint32_t t = 1; t <= n && len < cap; t++) {
    double probe_bw = ref[t];
    if (!eb_pages_below(probe_bw, bw[t], frac)) continue;
    int w = snprintf(out + len, cap - len, "%s%.0f%% slower at %u thread%s (%.1f GB/s)",
                     len ? ", " : "", 100.0 * (1.0 - bw[t] / probe_bw), t, t == 1 ? "" : "s",
                     bw[t] / 1e9);
    if (w > 0) len += (size_t)w;
  }
  return n_slow > 0;
}

/* "16.8 GB/s at 1 thread, 33.6 GB/s at 2 threads" (beyond four, the first
 * and the last). */
static void bw_list(const double *bw, uint32_t n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  if (n > 4) {
    snprintf(out, cap, "%.1f GB/s at 1 thread to %.1f GB/s at %u", bw[1] / 1e9, bw[n] / 1e9, n);
    return;
  }
  for (uint32_t t = 1; t <= n && len < cap; t++) {
    int w = snprintf(out + len, cap - len, "%s%.1f GB/s at %u thread%s", len ? ", " : "",
                     bw[t] / 1e9, t, t == 1 ? "" : "s");
    if (w > 0) len += (size_t)w;
  }
}

/* The conclusions, from the first -p, -n and -d. */
/* The most CPUs other processes kept busy during the rows run at t threads;
 * NAN when none is known. */
static double other_cpus_at(const struct eb_state *s, uint32_t t) {
  double worst = NAN;
  for (size_t i = 0; i < s->n_rows; i++)
    if (s->rows[i].threads == t && s->rows[i].other_cpus >= 0 &&
        !(s->rows[i].other_cpus <= worst))
      worst = s->rows[i].other_cpus;
  return worst;
}

/* Why an in-process rate reads above its ceiling, and what that says. In
 * process there is no cached prompt, buffered stream or speculative
 * decoding, and the engine sizes a mixture of experts by its active
 * experts: what is left is the ceiling's figure. A decode's rests on the
 * memory readings beside its repetitions, which move on a VM: a rate above
 * them by less than their spread is that movement (seen: 102% with readings
 * 8% apart, 2026-12-01). */
static const char *above_ceiling_why(const struct eb_state *s, const struct eb_row *r,
                                     char *buf, size_t n) {
  const double over = r->percent / 100 - 1;
  if (r->cfg.kind == ENGINE_BENCH_PP) {
    snprintf(buf, n,
             "above the probe's compute rate at that thread count, so that figure is low here "
             "(other work while probing? --reprobe on a quiet machine)");
  } else if (r->bw_lo > 0 && r->bw_hi > 0 && over <= r->bw_hi / r->bw_lo - 1) {
    snprintf(buf, n,
             "above the memory readings beside its repetitions by %.0f%%, within their %.0f%% "
             "spread: the memory read faster while it ran than in the readings, so the "
             "percentage is uncertain by that much; the rate is measured, the ceiling moved",
             100 * over, 100 * (r->bw_hi / r->bw_lo - 1));
  } else if (r->bw_lo > 0) {
    snprintf(buf, n,
             "above the memory readings beside its repetitions (%.1f-%.1f GB/s), so the "
             "probe's loop read slower than the engine here: part of the weights read from "
             "the caches, or memory that moved within a repetition; the ceiling is low, not "
             "the rate high",
             r->bw_lo / 1e9, r->bw_hi / 1e9);
  } else {
    snprintf(buf, n, "above the %s's bandwidth, so that figure is low here (other work while "
                     "probing? --reprobe on a quiet machine)",
             s->probe_cached ? "cached probe" : "probe");
  }
  return buf;
}

void bench_engine_conclude(struct eb_state *s) {
  const struct bench_opts *o = s->o;
  /* First, since every conclusion below reads rates that other processes
   * may have slowed: the threads shared the cores with them. */
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    const uint32_t t = o->threads[ti];
    const double busy = other_cpus_at(s, t);
    if (!(busy >= PROBE_BUSY_WARN_CPUS)) continue;
    conclude(s,
             "Other processes kept %.1f of this machine's %ld CPUs busy while the runs at %u "
             "thread%s ran: the threads shared the cores with them, so those rates are lower "
             "for it, and what the conclusions below say of memory, pages or scaling may be "
             "that load instead. Measure on a quiet machine.",
             busy, sysconf(_SC_NPROCESSORS_ONLN), t, t == 1 ? "" : "s");
  }
  uint32_t p = first_nonzero(o->prompt_tokens, o->n_prompt_tokens);
  uint32_t n = first_nonzero(o->max_tokens, o->n_max_tokens);
  uint32_t d = o->depth[0];
  if (!o->n_threads) return;
  /* The scaling from the fewest threads to the most, whatever the order of
   * -t; the figures at the most threads are the headline ones. */
  uint32_t t0 = o->threads[0], t1 = o->threads[0];
  for (size_t ti = 1; ti < o->n_threads; ti++) {
    if (o->threads[ti] < t0) t0 = o->threads[ti];
    if (o->threads[ti] > t1) t1 = o->threads[ti];
  }
  for (size_t mi = 0; mi < s->n_models; mi++) {
    const char *name = s->models[mi].short_label;
    /* Pages slower than the probe's buffer: the ceiling is out of reach by
     * that much, whatever the kernels do (EB_PAGES_SLOW, EB_PAGES_COPY). */
    const struct eb_model *m = &s->models[mi];
    /* Weights that fit in the caches are read from them: the memory's speed
     * (its pages', the bandwidth's scaling) is not what their decode meets. */
    const char *dec_ceiling = m->fits_caches ? "cache ceiling" : "memory ceiling";
    if (m->fits_caches) {
      char fit[160] = "";
      size_t at = 0;
      for (uint32_t t = 1; t <= m->fit_bw_threads && at < sizeof fit; t++)
        at += (size_t)snprintf(fit + at, sizeof fit - at, "%s%.1fx%s at %u thread%s",
                               t > 1 ? ", " : "", m->fit_read_bw[t] / m->weights_ref_bw[t],
                               t == 1 ? " as fast as the probe's buffer" : "", t,
                               t == 1 ? "" : "s");
      conclude(s,
               "%s: its weights (%.1f MiB) fit in this CPU's caches: a buffer of their size read "
               "%s, so decode reads them from the caches and its ceiling is the caches' read "
               "rate, not memory's. What it shows is the kernels' speed on cached data; a "
               "model larger than the caches meets memory instead.",
               name, (double)m->info.weights_bytes / (1024.0 * 1024.0), fit);
    }
    char slow[320], copy[320];
    if (m->fits_caches) {
      /* no page conclusions: see above */
    } else if (m->copied &&
        slow_pages_list(m->mapped_ref_bw, m->mapped_read_bw, m->mapped_bw_threads, EB_PAGES_COPY, slow,
                        sizeof slow)) {
      bw_list(m->weights_read_bw, m->weights_bw_threads, copy, sizeof copy);
      conclude(s,
               "%s: its memory-mapped weights, read in place, were %s than the probe's buffer (on a "
               "VM, where the host placed these pages), so the main job ran it from an "
               "anonymous copy, which read %s. Memory-mapped, its decode would fall short of "
               "the ceiling by about that much (tokmeter bench -m FILE measures a file as "
               "mapped).",
               name, slow, copy);
    }
    /* One conclusion per model about its pages: with a copy tried and slower
     * still, the one that says both. */
    const bool very_slow = !m->fits_caches &&
                           slow_pages_list(m->weights_ref_bw, m->weights_read_bw, m->weights_bw_threads,
                                           EB_PAGES_SLOW, slow, sizeof slow);
    if (!m->fits_caches && m->copy_bw_threads &&
        (very_slow || slow_pages_list(m->weights_ref_bw, m->weights_read_bw, m->weights_bw_threads,
                                      EB_PAGES_COPY, slow, sizeof slow))) {
      /* The copy is dropped on the sum over the thread counts (copy_if_pages_slow):
       * both sides' figures, so a thread count where the copy was faster shows. */
      char mapped[320];
      bw_list(m->copy_read_bw, m->copy_bw_threads, copy, sizeof copy);
      bw_list(m->weights_read_bw, m->weights_bw_threads, mapped, sizeof mapped);
      conclude(s,
               "%s: its memory-mapped weights, read in place, were %s than the probe's buffer%s, but "
               "an anonymous copy of them read slower still over the thread counts together "
               "(%s, against the mapping's %s), so the main job ran it memory-mapped (on a VM the "
               "host places anonymous memory too).",
               name, slow,
               very_slow ? " (on a VM, where the host placed these pages), so decode falls "
                           "short of the ceiling by about that much whatever the kernels do"
                         : "",
               copy, mapped);
    } else if (very_slow)
      conclude(s,
               "%s: its weights, read in place, were %s than the probe's buffer: the memory holding "
               "them is slower (on a VM, where the host placed these pages), so decode falls "
               "short of the ceiling by that much whatever the kernels do.%s",
               name, slow,
               m->info.hugepages || m->copy_bw_threads
                   ? ""
                   : " --hugepages reads them instead from an anonymous copy made at load, "
                     "fresh memory as the probe's buffer is.");
    const struct eb_row *pp0 = p ? find_row(s, mi, t0, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *pp1 = p ? find_row(s, mi, t1, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *tg0 = n ? find_row(s, mi, t0, ENGINE_BENCH_TG, n, d) : NULL;
    const struct eb_row *tg1 = n ? find_row(s, mi, t1, ENGINE_BENCH_TG, n, d) : NULL;
    char no_rate[96];
    no_rate_text(n, no_rate, sizeof no_rate);
    if (t1 != t0 && pp0 && tg0 && (blank_by_rule(tg0) || blank_by_rule(tg1))) {
      conclude(s, "%s: from %u to %u threads prefill %.2fx; %s.", name, t0, t1,
               ratio(pp0, pp1), no_rate);
    } else if (t1 != t0 && pp0 && tg0) {
      double rp = ratio(pp0, pp1), rd = ratio(tg0, tg1);
      double rbw = row_bw(s, tg1) / row_bw(s, tg0);
      double cores = (double)t1 / t0;
      const char *why;
      char above[400];
      if (tg1->percent > 100)
        why = above_ceiling_why(s, tg1, above, sizeof above);
      else if (m->fits_caches)
        why = "its weights fit in the caches, so memory does not hold it; the kernels and the "
              "caches' read rate do";
      else if (rd < 1)
        why = "more threads made it slower: the machine is busy, or the hand-off between "
              "threads costs more than it saves";
      /* "Meeting memory" only near the ceiling (the practical range of
       * well-tuned runtimes starts at 75%); below it, say what the scaling
       * shows instead of claiming memory is the limit. */
      else if (tg1->percent >= 75)
        why = "it is meeting memory";
      /* "Follows the bandwidth" only when decode scaled as the read
       * bandwidth did, within 15% either way. */
      else if (rd >= 0.85 * rbw && rd <= 1.15 * rbw)
        why = "it follows the bandwidth, but below the practical range (75-85% of the "
              "ceiling): the kernels leave memory time unused";
      else if (rd > 1.15 * rbw)
        why = "it outruns the bandwidth's scaling, so memory did not hold it at the fewer "
              "threads: the kernels did, and they leave memory time unused";
      else if (rd >= 0.85 * cores)
        why = "it still scales with cores: the kernels, not memory, hold it";
      else
        why = "neither cores nor bandwidth explain it: overheads hold it";
      conclude(s,
               "%s: from %u to %u threads prefill %.2fx, decode %.2fx (%s %.2fx); "
               "decode at %.0f%% of its %s: %s.",
               name, t0, t1, rp, rd, m->fits_caches ? "cache read rate" : "read bandwidth", rbw,
               tg1->percent, dec_ceiling, why);
    }
    if (pp1 && tg1 && blank_by_rule(tg1))
      conclude(s, "%s at %u thread%s: prefill at %.0f%% of the compute ceiling; %s.", name, t1,
               t1 == 1 ? "" : "s", pp1->percent, no_rate);
    else if (pp1 && tg1)
      conclude(s, "%s at %u thread%s: prefill at %.0f%% of the compute ceiling, decode at "
               "%.0f%% of the %s.", name, t1, t1 == 1 ? "" : "s", pp1->percent,
               tg1->percent, dec_ceiling);
  }
  /* The bandwidth moved between a decode configuration's repetitions by
   * more than 5% (beyond the pass-to-pass noise of best-of-5 reads): each
   * repetition is held against the readings beside it, but within one the
   * memory may have moved as much. (A quick probe's small buffer sits in the
   * caches: no figure to compare.) */
  for (size_t i = 0; i < (s->probe->quick ? 0 : s->n_rows); i++) {
    const struct eb_row *r = &s->rows[i];
    if (!(r->bw_lo > 0 && r->bw_hi > 0) || r->bw_hi / r->bw_lo - 1 <= 0.05) continue;
    char test[32], what[64], dnote[32];
    /* a rate blank by rule 5 has no percentage: its ceiling is what moved */
    if (isfinite(r->percent)) snprintf(what, sizeof what, "its %.0f%% of the ceiling", r->percent);
    else snprintf(what, sizeof what, "its ceiling");
    conclude(s,
             "%s %s%s at %u thread%s: %s %.1f-%.1f GB/s between its repetitions "
             "(%.0f%% apart): the machine's bandwidth moved while it ran; each repetition is "
             "held against the readings on either side of it, and %s is uncertain by up to "
             "about that much.",
             s->models[r->model].short_label, engine_bench_test_name(&r->cfg, test, sizeof test),
             depth_note(r, dnote, sizeof dnote), r->threads, r->threads == 1 ? "" : "s",
             s->models[r->model].fits_caches ? "read from the caches at" : "memory read",
             r->bw_lo / 1e9, r->bw_hi / 1e9,
             100.0 * (r->bw_hi / r->bw_lo - 1), what);
  }
  /* Rule 11: a configuration whose later repetitions ran slower than its
   * first beyond the noise. For a decode, the memory readings between its
   * repetitions tell whether the machine's memory fell with it. */
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    char note[320], test[32], dnote[32], mem[200] = "";
    if (!r->drift_tested || !*bench_drift_note(&r->drift, "repetition", note, sizeof note))
      continue;
    if (r->bw_first > 0 && r->bw_last > 0) {
      const double fell = r->bw_last / r->bw_first - 1;
      snprintf(mem, sizeof mem,
               fell <= r->drift.change / 2
                   ? " (the memory readings between them fell too, from %.1f to %.1f GB/s: "
                     "the machine slowed, not the engine alone)"
                   : " (the memory readings between them went from %.1f to %.1f GB/s: not "
                     "the memory)",
               r->bw_first / 1e9, r->bw_last / 1e9);
    }
    conclude(s, "%s %s%s at %u thread%s: %s%s; %s.", s->models[r->model].short_label,
             engine_bench_test_name(&r->cfg, test, sizeof test), depth_note(r, dnote, sizeof dnote),
             r->threads, r->threads == 1 ? "" : "s", note, mem, BENCH_DRIFT_ADVICE);
  }
  /* Steal time: the host ran other guests on this VM's CPUs meanwhile. */
  for (size_t ti = 0; ti < s->o->n_threads; ti++) {
    char note[400];
    if (machine_steal_warning(s->o->threads[ti], steal_at(s, s->o->threads[ti]), note,
                              sizeof note))
      conclude(s, "%s", note);
  }
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    char test[32], dnote[32], why[400];
    if (r->percent > 100)
      conclude(s, "%s %s%s at %u thread%s: %.0f%% of the ceiling: %s.",
               s->models[r->model].short_label, engine_bench_test_name(&r->cfg, test, sizeof test),
               depth_note(r, dnote, sizeof dnote), r->threads, r->threads == 1 ? "" : "s",
               r->percent, above_ceiling_why(s, r, why, sizeof why));
  }
  if (s->n_models == 2) {
    const struct eb_model *a = &s->models[0], *b = &s->models[1];
    double ba = a->cost.weight_bytes_per_token, bb = b->cost.weight_bytes_per_token;
    const struct eb_row *pa = p ? find_row(s, 0, t1, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *pb = p ? find_row(s, 1, t1, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *ta = n ? find_row(s, 0, t1, ENGINE_BENCH_TG, n, d) : NULL;
    const struct eb_row *tb = n ? find_row(s, 1, t1, ENGINE_BENCH_TG, n, d) : NULL;
    double rd = ratio(tb, ta), rp = ratio(pb, pa);
    /* Each phase's change only where both models have its rate: a decode
     * blank by rule 5 (or a phase not run, -p 0 / -n 0) says so instead. */
    char dec[128], pre[48];
    if (isfinite(rd)) snprintf(dec, sizeof dec, "decode %+.0f%%", 100.0 * (rd - 1));
    else if (blank_by_rule(ta) || blank_by_rule(tb)) no_rate_text(n, dec, sizeof dec);
    else snprintf(dec, sizeof dec, "decode not measured");
    if (isfinite(rp)) snprintf(pre, sizeof pre, "prefill %+.0f%%", 100.0 * (rp - 1));
    else snprintf(pre, sizeof pre, "prefill not measured");
    if (ba > 0 && bb > 0)
      conclude(s,
               "%s reads %.0f%% fewer bytes per token than %s: %s, %s "
               "(at %u thread%s; bytes alone would give decode %+.0f%%).",
               a->short_label, 100.0 * (1 - ba / bb), b->short_label, dec, pre, t1,
               t1 == 1 ? "" : "s", 100.0 * (bb / ba - 1));
    /* The two decodes ran minutes apart: when the machine's bandwidth moved
     * between them, the raw ratio mixes the bytes with the machine, and the
     * shares of each one's own ceiling are the comparison that holds. */
    if (ba > 0 && bb > 0 && ta && tb && ta->bw > 0 && tb->bw > 0 &&
        isfinite(ta->percent) && isfinite(tb->percent) && fabs(ta->bw / tb->bw - 1) > 0.10)
      conclude(s,
               "%s's and %s's decodes at %u thread%s ran while memory read %.1f and %.1f GB/s: "
               "part of that difference is the machine's; against their own ceilings they "
               "reached %.0f%% and %.0f%%.",
               a->short_label, b->short_label, t1, t1 == 1 ? "" : "s", ta->bw / 1e9,
               tb->bw / 1e9, ta->percent, tb->percent);
  }
}

void bench_engine_print(struct eb_state *s, bool probe_cached) {
  const struct bench_opts *o = s->o;
  printf("tokmeter %s - tokens per second is two numbers\n", TOKMETER_VERSION);
  print_machine(s, probe_cached);
  printf("method: in-process (tokmeter's engine), one discarded warm-up then %u timed "
         "repetition%s per configuration; random prompt tokens; greedy decode ignoring "
         "end-of-sequence; rates are median +- sd, %% of ceiling = median / the ceiling\n", s->reps, s->reps == 1 ? "" : "s");
  size_t n_p = 0, n_n = 0;
  for (size_t i = 0; i < o->n_prompt_tokens; i++) n_p += o->prompt_tokens[i] != 0;
  for (size_t i = 0; i < o->n_max_tokens; i++) n_n += o->max_tokens[i] != 0;
  bool side = n_p <= 1 && n_n <= 1 && o->n_depth == 1;
  for (size_t mi = 0; mi < s->n_models; mi++) {
    print_model_head(s, mi);
    if (side)
      print_side_by_side(s, mi, first_nonzero(o->prompt_tokens, o->n_prompt_tokens),
                         first_nonzero(o->max_tokens, o->n_max_tokens), o->depth[0]);
    else
      print_rows(s, mi);
  }
  print_bw_after(s);
  print_steal(s);
  if (json_array_size(s->conclusions)) printf("\n");
  for (size_t i = 0; i < json_array_size(s->conclusions); i++)
    printf("%s\n", json_string_value(json_array_get(s->conclusions, i)));
  printf("\nrecords: %s (%u timed runs)\n", o->out ? o->out : RECORD_DEFAULT_FILE, s->runs);
  cli_print_report_hint(o->out ? o->out : RECORD_DEFAULT_FILE);
}

/* obj[key] = [{threads, bytes_s}] for bw[1..n] (an empty list when n = 0);
 * nothing when obj is NULL (out of memory). */
static void set_bw_by_threads(json_t *obj, const char *key, const double *bw, uint32_t n) {
  if (!obj) return;
  json_t *list = json_array();
  for (uint32_t t = 1; t <= n; t++)
    json_array_append_new(list, json_pack("{s:i, s:f}", "threads", (int)t, "bytes_s", bw[t]));
  json_object_set_new(obj, key, list);
}

void bench_engine_print_json(struct eb_state *s) {
  json_t *models = json_array();
  for (size_t i = 0; i < s->n_models; i++) {
    const struct eb_model *m = &s->models[i];
    json_t *mo =
        json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:f, s:s, s:s, s:s}", "model", m->label,
                  "file", m->path, "arch", m->arch, "type", m->type, "file_bytes",
                  (json_int_t)m->file_bytes, "bytes_per_token",
                  m->cost.weight_bytes_per_token + m->cost.state_bytes, "load_ms",
                  m->info.load_ms, "kernel_path", m->kernel_path, "best_cpu_path", m->best_path,
                  "prefill_compute_path", m->tiles ? "int8_tile" : m->int8 ? "int8" : "f32");
    /* general.file_type's name ("Q4_K_M"), null when the file has none */
    if (mo)
      json_object_set_new(mo, "file_type",
                          m->file_type[0] ? json_string(m->file_type) : json_null());
    if (mo)
      json_object_set_new(mo, "decode_chunk_bytes",
                          json_integer((json_int_t)m->info.decode_chunk_bytes));
    /* share of the weights read through 2 MiB pages; null when unknown */
    if (mo) json_object_set_new(mo, "huge_page_share", m->info.huge_share >= 0
                                                          ? json_real(m->info.huge_share)
                                                          : json_null());
    /* the engine's resident memory after the model's runs (engine_memory) */
    if (mo && m->have_mem) {
      const struct engine_memory *mem = &m->mem;
      json_t *jm = json_object();
      json_object_set_new(jm, "weights_resident_bytes",
                          mem->weights_resident >= 0 ? json_integer(mem->weights_resident)
                                                     : json_null());
      json_object_set_new(jm, "kv_resident_bytes", mem->kv_resident >= 0
                                                       ? json_integer(mem->kv_resident)
                                                       : json_null());
      json_object_set_new(jm, "kv_bytes", json_integer((json_int_t)mem->kv_bytes));
      json_object_set_new(jm, "buffer_bytes", json_integer((json_int_t)mem->buffers));
      json_object_set_new(jm, "resident_bytes",
                          mem->total >= 0 ? json_integer(mem->total) : json_null());
      json_object_set_new(jm, "limit_bytes", json_integer((json_int_t)mem->limit));
      json_object_set_new(jm, "within_limit", mem->total >= 0
                                                  ? json_boolean((uint64_t)mem->total <=
                                                                 mem->limit)
                                                  : json_null());
      json_object_set_new(mo, "memory", jm);
    }
    /* the probe's read loop over the weights as run, per thread count */
    set_bw_by_threads(mo, "weights_read_bandwidth_by_threads", m->weights_read_bw,
                      m->weights_bw_threads);
    /* ... and the probe's buffer read just before, the pages' reference */
    set_bw_by_threads(mo, "reference_read_bandwidth_by_threads", m->weights_ref_bw,
                      m->weights_bw_threads);
    if (mo) json_object_set_new(mo, "weights", json_string(m->info.hugepages ? "copied"
                                                                              : "mapped"));
    /* the prefill batch the engine ran, and the one asked (the memory bound) */
    if (mo) json_object_set_new(mo, "prefill_batch", json_integer(m->info.max_batch));
    if (mo) json_object_set_new(mo, "prefill_batch_asked", json_integer(m->info.max_batch_asked));
    /* whether the weights fit in the caches, and the reading that decided it */
    if (mo) json_object_set_new(mo, "fits_in_caches",
                                m->fit_bw_threads ? json_boolean(m->fits_caches) : json_null());
    set_bw_by_threads(mo, "same_size_read_bandwidth_by_threads", m->fit_read_bw,
                      m->fit_bw_threads);
    /* the main job's copy: what the mapped pages read */
    if (m->copied)
      set_bw_by_threads(mo, "mapped_weights_read_bandwidth_by_threads", m->mapped_read_bw,
                        m->mapped_bw_threads);
    if (m->copied)
      set_bw_by_threads(mo, "mapped_reference_read_bandwidth_by_threads", m->mapped_ref_bw,
                        m->mapped_bw_threads);
    /* ... or the copy it made and dropped, which read slower than the mapping */
    if (m->copy_bw_threads)
      set_bw_by_threads(mo, "copy_weights_read_bandwidth_by_threads", m->copy_read_bw,
                        m->copy_bw_threads);
    if (m->copy_bw_threads)
      set_bw_by_threads(mo, "copy_reference_read_bandwidth_by_threads", m->copy_ref_bw,
                        m->copy_bw_threads);
    json_array_append_new(models, mo);
  }
  json_t *root = json_pack("{s:s, s:s, s:s, s:b, s:i, s:o, s:O, s:O}", "tokmeter",
                           TOKMETER_VERSION, "identity", s->identity, "records_file",
                           s->o->out ? s->o->out : RECORD_DEFAULT_FILE, "probe_quick",
                           s->probe->quick, "runs", (int)s->runs, "models", models, "summaries",
                           s->summaries, "conclusions", s->conclusions);
  /* with a cached probe: its read loop before the runs (the decode ceilings'
   * bandwidth) and what the cache said, per thread count */
  if (s->bw_now_threads) {
    set_bw_by_threads(root, "read_bandwidth_before_by_threads", s->probe->read_bw_bytes_s,
                      s->bw_now_threads);
    set_bw_by_threads(root, "read_bandwidth_cached_by_threads", s->bw_cached,
                      s->bw_now_threads);
  }
  /* the probe's read loop again after the runs, per thread count */
  set_bw_by_threads(root, "read_bandwidth_after_by_threads", s->bw_after, s->bw_after_threads);
  char warn[400];
  if (root && probe_busy_warning(s->probe, warn, sizeof warn))
    json_object_set_new(root, "probe_busy_warning", json_string(warn));
  char *txt = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
  if (txt) printf("%s\n", txt);
  free(txt);
  json_decref(root);
}
