/* inproc_findings: the in-process bench's findings (findings.h), drawn from
 * its rows and models once every configuration ran: how each phase scaled
 * with cores and why, where decode stands against its ceiling (the practical
 * range, model/ceiling.h), pages slower than fresh memory, weights held in
 * the caches, bandwidth that moved during a configuration, drift (rule 11),
 * steal, other processes, rates above the ceiling, and what fewer bytes per
 * token bought. Each finding has a code, figures, a brief for the terminal
 * and the sentence (--verbose, --json "conclusions"). Rule 5: no finding
 * uses a decode rate blank for too few tokens. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/drift.h"
#include "bench/inproc.h"
#include "engine/kernels.h"
#include "machine/probe.h"
#include "model/ceiling.h"

/* The memory readings between a decode's repetitions further apart than
 * this make its percentage of the ceiling a guess (a warning); from 5%,
 * beyond the pass-to-pass noise of best-of-5 reads, they are said (info). */
#define BANDWIDTH_MOVED_NOTE 0.05
#define BANDWIDTH_MOVED_WARN 0.20

/* A new finding about model mi (SIZE_MAX: none) and row r (NULL: none);
 * NULL when out of memory (every setter takes NULL). */
static struct bench_finding *finding(struct eb_state *s, const char *code,
                                     enum bench_severity sev, size_t mi, const struct eb_row *r) {
  struct bench_finding *f = bench_findings_add(&s->findings, code, sev);
  if (!f) return NULL;
  if (r) mi = r->model;
  if (mi < s->n_models)
    snprintf(f->config.model, sizeof f->config.model, "%s", s->models[mi].short_label);
  if (r) {
    engine_bench_test_name(&r->cfg, f->config.test, sizeof f->config.test);
    f->config.threads = r->threads;
    f->config.depth = r->cfg.depth;
  }
  return f;
}

/* The sentence of f, also kept in s->conclusions (--json). */
static void say(struct eb_state *s, struct bench_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct eb_state *s, struct bench_finding *f, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (f) snprintf(f->text, sizeof f->text, "%s", buf);
  if (s->conclusions) json_array_append_new(s->conclusions, json_string(buf));
}

static const char *plural(uint32_t n) { return n == 1 ? "" : "s"; }

/* What a conclusion says in place of a decode rate blank by rule 5. */
static const char *no_rate_text(uint32_t n, char *buf, size_t cap) {
  snprintf(buf, cap, "decode has no rate (tg%u: fewer than %d generated tokens)", n,
           METRICS_MIN_DECODE_TOKENS);
  return buf;
}

/* " at depth D" when nonzero, so two conclusions about one test name
 * different configurations. */
static const char *depth_note(const struct eb_row *r, char *buf, size_t n) {
  if (r->cfg.depth) snprintf(buf, n, " at depth %u", r->cfg.depth);
  else buf[0] = 0;
  return buf;
}

/* "Q4_0 tg128 t2" (" d1024" when deep): a row's name in a brief. */
static const char *row_name(const struct eb_state *s, const struct eb_row *r, char *buf,
                            size_t n) {
  char test[32];
  engine_bench_test_name(&r->cfg, test, sizeof test);
  if (r->cfg.depth)
    snprintf(buf, n, "%s %s t%u d%u", s->models[r->model].short_label, test, r->threads,
             r->cfg.depth);
  else
    snprintf(buf, n, "%s %s t%u", s->models[r->model].short_label, test, r->threads);
  return buf;
}

double eb_steal_at(const struct eb_state *s, uint32_t t) {
  double worst = NAN;
  for (size_t i = 0; i < s->n_rows; i++)
    if (s->rows[i].threads == t && s->rows[i].steal_share >= 0 &&
        !(s->rows[i].steal_share <= worst))
      worst = s->rows[i].steal_share;
  return worst;
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

/* The largest share by which bw[t] reads below ref[t] (0 when none does). */
static double worst_slow(const double *ref, const double *bw, uint32_t n) {
  double worst = 0;
  for (uint32_t t = 1; t <= n; t++)
    if (ref[t] > 0 && bw[t] > 0 && 1 - bw[t] / ref[t] > worst) worst = 1 - bw[t] / ref[t];
  return worst;
}

/* The findings, from the first -p, -n and -d. */
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


void eb_conclude(struct eb_state *s) {
  const struct eb_opts *o = s->o;
  /* First, since every conclusion below reads rates that other processes
   * may have slowed: the threads shared the cores with them. */
  for (size_t ti = 0; ti < o->n_threads; ti++) {
    const uint32_t t = o->threads[ti];
    const double busy = other_cpus_at(s, t);
    if (!(busy >= PROBE_BUSY_WARN_CPUS)) continue;
    struct bench_finding *f = finding(s, "other_processes", BENCH_PROBLEM, SIZE_MAX, NULL);
    if (f) f->config.threads = t;
    bench_finding_figure(f, "other_cpus_busy", busy);
    bench_finding_figure(f, "threads", t);
    bench_finding_brief(f, "other processes kept %.1f CPUs busy during the %u-thread runs: "
                        "rates low", busy, t);
    say(s, f,
             "Other processes kept %.1f of this machine's %ld CPUs busy while the runs at %u "
             "thread%s ran: the threads shared the cores with them, so those rates are lower "
             "for it, and what the conclusions below say of memory, pages or scaling may be "
             "that load instead. Measure on a quiet machine.",
             busy, sysconf(_SC_NPROCESSORS_ONLN), t, t == 1 ? "" : "s");
  }
  uint32_t p = eb_first_nonzero(o->prompt_tokens, o->n_prompt_tokens);
  uint32_t n = eb_first_nonzero(o->max_tokens, o->n_max_tokens);
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
      struct bench_finding *f = finding(s, "weights_fit_caches", BENCH_INFO, mi, NULL);
      bench_finding_figure(f, "weights_bytes", (double)m->info.weights_bytes);
      bench_finding_figure(f, "same_size_read_bandwidth_bytes_s",
                           m->fit_read_bw[m->fit_bw_threads]);
      bench_finding_figure(f, "reference_read_bandwidth_bytes_s",
                           m->weights_ref_bw[m->fit_bw_threads]);
      if (f) f->importance = 1;
      bench_finding_brief(f, "%s: weights (%.1f MiB) fit in the caches: decode's ceiling is "
                          "theirs", name, (double)m->info.weights_bytes / (1024.0 * 1024.0));
      say(s, f,
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
      struct bench_finding *f = finding(s, "pages_slow_copied", BENCH_INFO, mi, NULL);
      const double worst = worst_slow(m->mapped_ref_bw, m->mapped_read_bw, m->mapped_bw_threads);
      bench_finding_figure(f, "mapped_slower_fraction", worst);
      bench_finding_figure(f, "threads", m->mapped_bw_threads);
      if (f) f->importance = 1;
      bench_finding_brief(f, "%s: mapped pages read %.0f%% below fresh memory: ran from a copy",
                          name, 100 * worst);
      say(s, f,
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
      struct bench_finding *f = finding(s, very_slow ? "pages_slow" : "pages_copy_slower",
                                        very_slow ? BENCH_WARNING : BENCH_INFO, mi, NULL);
      const double worst = worst_slow(m->weights_ref_bw, m->weights_read_bw, m->weights_bw_threads);
      bench_finding_figure(f, "slower_fraction", worst);
      bench_finding_brief(f, "%s: mapped pages %.0f%% below fresh memory, a copy slower: ran "
                          "mapped", name, 100 * worst);
      say(s, f,
               "%s: its memory-mapped weights, read in place, were %s than the probe's buffer%s, but "
               "an anonymous copy of them read slower still over the thread counts together "
               "(%s, against the mapping's %s), so the main job ran it memory-mapped (on a VM the "
               "host places anonymous memory too).",
               name, slow,
               very_slow ? " (on a VM, where the host placed these pages), so decode falls "
                           "short of the ceiling by about that much whatever the kernels do"
                         : "",
               copy, mapped);
    } else if (very_slow) {
      struct bench_finding *f = finding(s, "pages_slow", BENCH_WARNING, mi, NULL);
      const double worst = worst_slow(m->weights_ref_bw, m->weights_read_bw, m->weights_bw_threads);
      bench_finding_figure(f, "slower_fraction", worst);
      bench_finding_brief(f, "%s: weights' pages read %.0f%% below fresh memory: decode short by "
                          "that%s", name, 100 * worst,
                          m->info.hugepages || m->copy_bw_threads ? "" : " (--hugepages?)");
      say(s, f,
               "%s: its weights, read in place, were %s than the probe's buffer: the memory holding "
               "them is slower (on a VM, where the host placed these pages), so decode falls "
               "short of the ceiling by that much whatever the kernels do.%s",
               name, slow,
               m->info.hugepages || m->copy_bw_threads
                   ? ""
                   : " --hugepages reads them instead from an anonymous copy made at load, "
                     "fresh memory as the probe's buffer is.");
    }
    const struct eb_row *pp0 = p ? eb_find_row(s, mi, t0, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *pp1 = p ? eb_find_row(s, mi, t1, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *tg0 = n ? eb_find_row(s, mi, t0, ENGINE_BENCH_TG, n, d) : NULL;
    const struct eb_row *tg1 = n ? eb_find_row(s, mi, t1, ENGINE_BENCH_TG, n, d) : NULL;
    char no_rate[96];
    no_rate_text(n, no_rate, sizeof no_rate);
    if (t1 != t0 && pp0 && tg0 && (eb_blank_by_rule(tg0) || eb_blank_by_rule(tg1))) {
      struct bench_finding *f = finding(s, "thread_scaling", BENCH_INFO, mi, NULL);
      bench_finding_figure(f, "threads_from", t0);
      bench_finding_figure(f, "threads_to", t1);
      bench_finding_figure(f, "prefill_speedup", ratio(pp0, pp1));
      bench_finding_brief(f, "%s: %u to %u threads: prefill %.2fx; decode has no rate", name, t0,
                          t1, ratio(pp0, pp1));
      say(s, f, "%s: from %u to %u threads prefill %.2fx; %s.", name, t0, t1,
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
      struct bench_finding *f = finding(s, "thread_scaling", BENCH_INFO, mi, NULL);
      bench_finding_figure(f, "threads_from", t0);
      bench_finding_figure(f, "threads_to", t1);
      bench_finding_figure(f, "prefill_speedup", rp);
      bench_finding_figure(f, "decode_speedup", rd);
      bench_finding_figure(f, "read_bandwidth_speedup", rbw);
      bench_finding_figure(f, "decode_percent_of_ceiling", tg1->percent);
      if (f) f->importance = -2;
      bench_finding_brief(f, "%s: %u to %u threads: prefill %.2fx, decode %.2fx (%s %.2fx)", name,
                          t0, t1, rp, rd, m->fits_caches ? "cache rate" : "bandwidth", rbw);
      say(s, f,
               "%s: from %u to %u threads prefill %.2fx, decode %.2fx (%s %.2fx); "
               "decode at %.0f%% of its %s: %s.",
               name, t0, t1, rp, rd, m->fits_caches ? "cache read rate" : "read bandwidth", rbw,
               tg1->percent, dec_ceiling, why);
    }
    /* Where decode stands at the most threads: below the practical range
     * (model/ceiling.h, 75-85% of the ceiling) is what a reader acts on. */
    if (pp1 && tg1 && eb_blank_by_rule(tg1)) {
      struct bench_finding *f = finding(s, "prefill_share", BENCH_INFO, mi, pp1);
      bench_finding_figure(f, "prefill_percent_of_ceiling", pp1->percent);
      bench_finding_brief(f, "%s at %u thread%s: prefill at %.0f%% of its ceiling; decode has no "
                          "rate", name, t1, plural(t1), pp1->percent);
      say(s, f, "%s at %u thread%s: prefill at %.0f%% of the compute ceiling; %s.", name, t1,
               t1 == 1 ? "" : "s", pp1->percent, no_rate);
    } else if (tg1 && isfinite(tg1->percent)) {
      const bool below = tg1->percent < 100 * CEILING_PRACTICAL_LO;
      struct bench_finding *f = finding(s, below ? "decode_below_practical" : "decode_near_ceiling",
                                        below ? BENCH_WARNING : BENCH_INFO, mi, tg1);
      bench_finding_figure(f, "decode_tok_s", tg1->tok_s.median);
      bench_finding_figure(f, "decode_ceiling_tok_s", tg1->ceiling_tok_s);
      bench_finding_figure(f, "decode_percent_of_ceiling", tg1->percent);
      bench_finding_figure(f, "prefill_percent_of_ceiling", pp1 ? pp1->percent : NAN);
      if (f && !below) f->importance = -3; /* the table shows it */
      if (below)
        bench_finding_brief(f, "%s at %u thread%s: decode at %.0f%% of its %s, below 75-85%% "
                            "practical", name, t1, plural(t1), tg1->percent, dec_ceiling);
      else
        bench_finding_brief(f, "%s at %u thread%s: decode at %.0f%% of its %s", name, t1,
                            plural(t1), tg1->percent, dec_ceiling);
      if (pp1)
        say(s, f, "%s at %u thread%s: prefill at %.0f%% of the compute ceiling, decode at "
                  "%.0f%% of the %s.", name, t1, t1 == 1 ? "" : "s", pp1->percent,
            tg1->percent, dec_ceiling);
      else
        say(s, f, "%s at %u thread%s: decode at %.0f%% of the %s.", name, t1, plural(t1),
            tg1->percent, dec_ceiling);
    }
  }
  /* The bandwidth moved between a decode configuration's repetitions by
   * more than 5% (beyond the pass-to-pass noise of best-of-5 reads): each
   * repetition is held against the readings beside it, but within one the
   * memory may have moved as much. (A quick probe's small buffer sits in the
   * caches: no figure to compare.) */
  for (size_t i = 0; i < (s->probe->quick ? 0 : s->n_rows); i++) {
    const struct eb_row *r = &s->rows[i];
    if (!(r->bw_lo > 0 && r->bw_hi > 0) || r->bw_hi / r->bw_lo - 1 <= BANDWIDTH_MOVED_NOTE) continue;
    char test[32], what[64], dnote[32];
    /* a rate blank by rule 5 has no percentage: its ceiling is what moved */
    if (isfinite(r->percent)) snprintf(what, sizeof what, "its %.0f%% of the ceiling", r->percent);
    else snprintf(what, sizeof what, "its ceiling");
    char rn[96];
    /* a spread beyond BANDWIDTH_MOVED_WARN makes the percentage a guess */
    const double spread = r->bw_hi / r->bw_lo - 1;
    struct bench_finding *f = finding(s, "bandwidth_moved",
                                      spread > BANDWIDTH_MOVED_WARN ? BENCH_WARNING : BENCH_INFO,
                                      SIZE_MAX, r);
    if (f) f->importance = -1;
    bench_finding_figure(f, "read_bandwidth_lowest_bytes_s", r->bw_lo);
    bench_finding_figure(f, "read_bandwidth_highest_bytes_s", r->bw_hi);
    bench_finding_figure(f, "percent_of_ceiling", r->percent);
    bench_finding_brief(f, "%s: %s read %.1f-%.1f GB/s between reps, %% uncertain by %.0f%%",
                        row_name(s, r, rn, sizeof rn),
                        s->models[r->model].fits_caches ? "caches" : "memory", r->bw_lo / 1e9,
                        r->bw_hi / 1e9,
                        100.0 * spread);
    say(s, f,
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
    char rn[96];
    struct bench_finding *f = finding(s, "drift", BENCH_WARNING, SIZE_MAX, r);
    bench_finding_figure(f, "change_fraction", r->drift.change);
    bench_finding_figure(f, "read_bandwidth_first_bytes_s", r->bw_first);
    bench_finding_figure(f, "read_bandwidth_last_bytes_s", r->bw_last);
    bench_finding_brief(f, "%s: later reps %.0f%% slower than the first (drift; --cooldown?)",
                        row_name(s, r, rn, sizeof rn), -100.0 * r->drift.change);
    say(s, f, "%s %s%s at %u thread%s: %s%s; %s.", s->models[r->model].short_label,
             engine_bench_test_name(&r->cfg, test, sizeof test), depth_note(r, dnote, sizeof dnote),
             r->threads, r->threads == 1 ? "" : "s", note, mem, BENCH_DRIFT_ADVICE);
  }
  /* Steal time: the host ran other guests on this VM's CPUs meanwhile. */
  for (size_t ti = 0; ti < s->o->n_threads; ti++) {
    char note[400];
    const uint32_t t = s->o->threads[ti];
    const double steal = eb_steal_at(s, t);
    if (machine_steal_warning(t, steal, note, sizeof note)) {
      struct bench_finding *f = finding(s, "steal", BENCH_WARNING, SIZE_MAX, NULL);
      if (f) f->config.threads = t;
      bench_finding_figure(f, "cpu_steal_share", steal);
      bench_finding_brief(f, "steal: the host took %.1f%% of the CPU time of the %u-thread runs",
                          100 * steal, t);
      say(s, f, "%s", note);
    }
  }
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct eb_row *r = &s->rows[i];
    char test[32], dnote[32], why[400];
    if (!(r->percent > 100)) continue;
    char rn[96];
    struct bench_finding *f = finding(s, "above_ceiling", BENCH_WARNING, SIZE_MAX, r);
    bench_finding_figure(f, "tok_s", r->tok_s.median);
    bench_finding_figure(f, "ceiling_tok_s", r->ceiling_tok_s);
    bench_finding_figure(f, "percent_of_ceiling", r->percent);
    bench_finding_brief(f, "%s: %.0f%% of its ceiling: %s", row_name(s, r, rn, sizeof rn),
                        r->percent,
                        r->cfg.kind == ENGINE_BENCH_PP ? "the probe's compute is low"
                        : r->bw_lo > 0 && r->bw_hi > 0 && r->percent / 100 - 1 <= r->bw_hi / r->bw_lo - 1
                            ? "within the readings' spread"
                            : "its bandwidth figure is low");
    say(s, f, "%s %s%s at %u thread%s: %.0f%% of the ceiling: %s.",
               s->models[r->model].short_label, engine_bench_test_name(&r->cfg, test, sizeof test),
               depth_note(r, dnote, sizeof dnote), r->threads, r->threads == 1 ? "" : "s",
               r->percent, above_ceiling_why(s, r, why, sizeof why));
  }
  if (s->n_models == 2) {
    const struct eb_model *a = &s->models[0], *b = &s->models[1];
    double ba = a->cost.weight_bytes_per_token, bb = b->cost.weight_bytes_per_token;
    const struct eb_row *pa = p ? eb_find_row(s, 0, t1, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *pb = p ? eb_find_row(s, 1, t1, ENGINE_BENCH_PP, p, d) : NULL;
    const struct eb_row *ta = n ? eb_find_row(s, 0, t1, ENGINE_BENCH_TG, n, d) : NULL;
    const struct eb_row *tb = n ? eb_find_row(s, 1, t1, ENGINE_BENCH_TG, n, d) : NULL;
    double rd = ratio(tb, ta), rp = ratio(pb, pa);
    /* Each phase's change only where both models have its rate: a decode
     * blank by rule 5 (or a phase not run, -p 0 / -n 0) says so instead. */
    char dec[128], pre[48];
    if (isfinite(rd)) snprintf(dec, sizeof dec, "decode %+.0f%%", 100.0 * (rd - 1));
    else if (eb_blank_by_rule(ta) || eb_blank_by_rule(tb)) no_rate_text(n, dec, sizeof dec);
    else snprintf(dec, sizeof dec, "decode not measured");
    if (isfinite(rp)) snprintf(pre, sizeof pre, "prefill %+.0f%%", 100.0 * (rp - 1));
    else snprintf(pre, sizeof pre, "prefill not measured");
    if (ba > 0 && bb > 0) {
      struct bench_finding *f = finding(s, "fewer_bytes", BENCH_INFO, SIZE_MAX, NULL);
      if (f) f->config.threads = t1, f->importance = 2;
      bench_finding_figure(f, "bytes_fewer_fraction", 1 - ba / bb);
      bench_finding_figure(f, "decode_change_fraction", rd - 1);
      bench_finding_figure(f, "prefill_change_fraction", rp - 1);
      bench_finding_figure(f, "decode_change_from_bytes_fraction", bb / ba - 1);
      if (isfinite(rd) && isfinite(rp))
        bench_finding_brief(f, "%s: %.0f%% fewer bytes/token than %s: decode %+.0f%%, prefill "
                            "%+.0f%% (t%u)", a->short_label, 100.0 * (1 - ba / bb),
                            b->short_label, 100.0 * (rd - 1), 100.0 * (rp - 1), t1);
      else
        bench_finding_brief(f, "%s: %.0f%% fewer bytes/token than %s: %s", a->short_label,
                            100.0 * (1 - ba / bb), b->short_label, dec);
      say(s, f,
               "%s reads %.0f%% fewer bytes per token than %s: %s, %s "
               "(at %u thread%s; bytes alone would give decode %+.0f%%).",
               a->short_label, 100.0 * (1 - ba / bb), b->short_label, dec, pre, t1,
               t1 == 1 ? "" : "s", 100.0 * (bb / ba - 1));
    }
    /* The two decodes ran minutes apart: when the machine's bandwidth moved
     * between them, the raw ratio mixes the bytes with the machine, and the
     * shares of each one's own ceiling are the comparison that holds. */
    if (ba > 0 && bb > 0 && ta && tb && ta->bw > 0 && tb->bw > 0 &&
        isfinite(ta->percent) && isfinite(tb->percent) && fabs(ta->bw / tb->bw - 1) > 0.10) {
      struct bench_finding *f = finding(s, "bandwidth_differed", BENCH_INFO, SIZE_MAX, NULL);
      if (f) f->config.threads = t1;
      bench_finding_figure(f, "first_read_bandwidth_bytes_s", ta->bw);
      bench_finding_figure(f, "second_read_bandwidth_bytes_s", tb->bw);
      bench_finding_figure(f, "first_percent_of_ceiling", ta->percent);
      bench_finding_figure(f, "second_percent_of_ceiling", tb->percent);
      bench_finding_brief(f, "%s, %s decoded at %.1f, %.1f GB/s: compare %% of ceiling (%.0f%%, "
                          "%.0f%%)", a->short_label, b->short_label, ta->bw / 1e9, tb->bw / 1e9,
                          ta->percent, tb->percent);
      say(s, f,
               "%s's and %s's decodes at %u thread%s ran while memory read %.1f and %.1f GB/s: "
               "part of that difference is the machine's; against their own ceilings they "
               "reached %.0f%% and %.0f%%.",
               a->short_label, b->short_label, t1, t1 == 1 ? "" : "s", ta->bw / 1e9,
               tb->bw / 1e9, ta->percent, tb->percent);
    }
  }
  /* Kernels narrower than the CPU's best (TOKMETER_KERNELS, or a build or
   * OS without them): every rate is below what the CPU allows. */
  for (size_t mi = 0; mi < s->n_models; mi++) {
    const struct eb_model *m = &s->models[mi];
    if (strcmp(m->kernel_path, m->best_path) == 0 ||
        (mi > 0 && strcmp(m->kernel_path, s->models[mi - 1].kernel_path) == 0))
      continue;
    struct bench_finding *f = finding(s, "kernels_narrower", BENCH_WARNING, mi, NULL);
    if (f) f->importance = 1;
    bench_finding_brief(f, "%s ran %s kernels, narrower than this CPU's %s: rates below its best",
                        m->short_label, m->kernel_path, m->best_path);
    say(s, f, "%s: the engine ran %s kernels, narrower than this CPU's %s%s: its rates are below "
              "what the CPU allows.", m->short_label, m->kernel_path, m->best_path,
        kernels_forced_name() ? " (TOKMETER_KERNELS)" : "");
  }
}

