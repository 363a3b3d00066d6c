/* summary: a workload's runs folded into figures (see summary.h).
 *
 * Which runs enter which figure:
 *   counters (failures by kind, cache hits, buffered, mismatches, budget):
 *       every timed run (failures) / every ok run (verdicts);
 *   token counts, decode figures, the decode curve: every ok run (a blank,
 *       NAN, decode rate is skipped by stats, so rule 5 and rule 6 hold);
 *   prompt processed, TTFT, prefill figures, the TTFT gap: ok runs that are
 *       not CACHE_HIT, unless allow_cache (a cached prefill is not a prefill);
 *   the cold run: never in the figures; its TTFT and load time apart, and it
 *       is not counted in n_runs (the runner passes it separately). */
#include "bench/summary.h"

#include "bench/drift.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one figure reads from a run; NAN = blank. */
typedef double (*field_fn)(const struct run_metrics *m);

static double f_prompt_tokens(const struct run_metrics *m) {
  return m->prompt_tokens >= 0 ? (double)m->prompt_tokens : NAN;
}
static double f_prompt_processed(const struct run_metrics *m) {
  return m->prompt_processed >= 0 ? (double)m->prompt_processed : NAN;
}
static double f_completion_tokens(const struct run_metrics *m) {
  return m->completion_tokens >= 0 ? (double)m->completion_tokens : NAN;
}
static double f_reasoning_tokens(const struct run_metrics *m) {
  return m->reasoning_tokens >= 0 ? (double)m->reasoning_tokens : NAN;
}
static double f_ttft(const struct run_metrics *m) { return m->ttft_ms; }
static double f_prefill_server(const struct run_metrics *m) { return m->prefill_server; }
static double f_prefill_client(const struct run_metrics *m) { return m->prefill_client; }
static double f_decode_server(const struct run_metrics *m) { return m->decode_server; }
static double f_decode_client(const struct run_metrics *m) { return m->decode_client; }
static double f_ttft_gap(const struct run_metrics *m) { return m->ttft_gap_ms; }
static double f_server_prompt(const struct run_metrics *m) { return m->server_prompt_ms; }

static bool used_for_prefill(const struct run_metrics *m, bool allow_cache) {
  return m->ok && (allow_cache || !m->prefill_excluded);
}

/* The values of f over the runs selected by prefill_only (see the header
 * comment), in run order, into buf (room for n); returns how many. */
static size_t collect(const struct run_metrics *runs, size_t n, double *buf, field_fn f,
                      bool prefill_only, bool allow_cache) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!runs[i].ok) continue;
    if (prefill_only && !used_for_prefill(&runs[i], allow_cache)) continue;
    buf[k++] = f(&runs[i]);
  }
  return k;
}

static void describe(const struct run_metrics *runs, size_t n, double *buf, field_fn f,
                     bool prefill_only, bool allow_cache, struct stats_summary *out) {
  stats_describe(buf, collect(runs, n, buf, f, prefill_only, allow_cache), out);
}

/* Rule 11 over the same values, in run order. */
static bool drift_of(const struct run_metrics *runs, size_t n, double *buf, field_fn f,
                     bool prefill_only, bool allow_cache, struct stats_drift *out) {
  return bench_drift_test(buf, collect(runs, n, buf, f, prefill_only, allow_cache), out);
}

/* One source for a headline, never a blend: the server's figure when every
 * run used has it; else the client's when every run used has that (the
 * server's figures stay apart, in their own statistic); else the source more
 * runs have (server on a tie), over those runs only (its n says how many).
 * "" when no run has either. */
static const char *source_of(const struct run_metrics *runs, size_t n, bool prefill,
                             bool allow_cache) {
  size_t n_used = 0, n_server = 0, n_client = 0;
  for (size_t i = 0; i < n; i++) {
    if (!runs[i].ok) continue;
    if (prefill && !used_for_prefill(&runs[i], allow_cache)) continue;
    double sv = prefill ? runs[i].prefill_server : runs[i].decode_server;
    double cv = prefill ? runs[i].prefill_client : runs[i].decode_client;
    if (!isfinite(sv) && !isfinite(cv)) continue;
    n_used++;
    if (isfinite(sv)) n_server++;
    if (isfinite(cv)) n_client++;
  }
  if (!n_used) return "";
  if (n_server == n_used) return "server";
  if (n_client == n_used) return "client";
  return n_server >= n_client ? "server" : "client";
}

/* The decode curve: per distinct (from, to) segment, ordered by from, the
 * median of the runs that have it. Runs of one workload share bounds; a run
 * that generated fewer tokens has a shorter last segment, kept apart. */
static void summarize_segments(const struct run_metrics *runs, size_t n, double *buf,
                               struct bench_summary *out) {
  for (size_t i = 0; i < n; i++) {
    if (!runs[i].ok) continue;
    for (size_t s = 0; s < runs[i].n_segments && s < METRICS_MAX_SEGMENTS; s++) {
      const struct decode_segment *seg = &runs[i].segments[s];
      size_t j = 0;
      while (j < out->n_segments &&
             !(out->segments[j].from == seg->from && out->segments[j].to == seg->to))
        j++;
      if (j < out->n_segments || out->n_segments == METRICS_MAX_SEGMENTS) continue;
      /* insert keeping (from, to) order */
      size_t pos = out->n_segments;
      while (pos > 0 && (out->segments[pos - 1].from > seg->from ||
                         (out->segments[pos - 1].from == seg->from &&
                          out->segments[pos - 1].to > seg->to))) {
        out->segments[pos] = out->segments[pos - 1];
        pos--;
      }
      out->segments[pos].from = seg->from;
      out->segments[pos].to = seg->to;
      out->n_segments++;
    }
  }
  for (size_t j = 0; j < out->n_segments; j++) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (!runs[i].ok) continue;
      for (size_t s = 0; s < runs[i].n_segments && s < METRICS_MAX_SEGMENTS; s++)
        if (runs[i].segments[s].from == out->segments[j].from &&
            runs[i].segments[s].to == out->segments[j].to)
          buf[k++] = runs[i].segments[s].tok_s;
    }
    struct stats_summary st;
    stats_describe(buf, k, &st);
    out->segments[j].tok_s = st.median;
  }
}

static void empty_summary(struct stats_summary *s) {
  stats_describe(NULL, 0, s);
}

void bench_summarize(const char *workload, const struct run_metrics *runs, size_t n,
                     const struct run_metrics *cold, bool allow_cache,
                     struct bench_summary *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->workload, sizeof out->workload, "%s", workload ? workload : "");
  out->allow_cache = allow_cache;
  out->prefill_source = out->decode_source = "";
  out->cold_ttft_ms = out->cold_load_ms = NAN;
  if (!runs) n = 0;
  out->n_runs = (uint32_t)n;

  for (size_t i = 0; i < n; i++) {
    const struct run_metrics *m = &runs[i];
    if (!m->ok) {
      out->n_failed++;
      unsigned kind = (unsigned)m->error;
      /* a failed run without a kind (or a kind out of range) is still a failure */
      if (kind == RUN_OK || kind >= RUN_ERR_COUNT) kind = RUN_ERR_OTHER;
      out->failed_by_kind[kind]++;
      continue;
    }
    out->n_ok++;
    if (m->cache == CACHE_HIT) out->n_cache_hits++;
    if (m->stream == STREAM_BUFFERED) out->n_buffered++;
    if (m->count_mismatch) out->n_count_mismatch++;
    if (m->reasoning_ate_budget) out->n_reasoning_ate_budget++;
  }

  /* Every figure takes at most n values, and a segment at most one per run. */
  double *buf = n ? malloc(n * sizeof *buf) : NULL;
  struct {
    struct stats_summary *dst;
    field_fn f;
    bool prefill_only;
  } figs[] = {
      {&out->prompt_tokens, f_prompt_tokens, false},
      {&out->prompt_processed, f_prompt_processed, true},
      {&out->completion_tokens, f_completion_tokens, false},
      {&out->reasoning_tokens, f_reasoning_tokens, false},
      {&out->ttft_ms, f_ttft, true},
      {&out->prefill_server, f_prefill_server, true},
      {&out->prefill_client, f_prefill_client, true},

      {&out->decode_server, f_decode_server, false},
      {&out->decode_client, f_decode_client, false},
      {&out->ttft_gap_ms, f_ttft_gap, true},
      {&out->server_prompt_ms, f_server_prompt, true},
  };
  for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
    if (buf)
      describe(runs, n, buf, figs[i].f, figs[i].prefill_only, allow_cache, figs[i].dst);
    else
      empty_summary(figs[i].dst); /* no runs, or no memory: n 0, NAN figures */
  }
  if (buf) summarize_segments(runs, n, buf, out);

  /* Headlines: one source each (source_of), its own figure copied. */
  out->prefill_source = source_of(runs, n, true, allow_cache);
  out->decode_source = source_of(runs, n, false, allow_cache);
  const bool prefill_server = strcmp(out->prefill_source, "server") == 0;
  const bool decode_server = strcmp(out->decode_source, "server") == 0;
  out->prefill_headline = prefill_server ? out->prefill_server : out->prefill_client;
  out->decode_headline = decode_server ? out->decode_server : out->decode_client;
  /* Rule 11 on the headlines' own series, in run order. */
  if (buf) {
    out->prefill_drift_tested =
        drift_of(runs, n, buf, prefill_server ? f_prefill_server : f_prefill_client, true,
                 allow_cache, &out->prefill_drift);
    out->decode_drift_tested =
        drift_of(runs, n, buf, decode_server ? f_decode_server : f_decode_client, false,
                 allow_cache, &out->decode_drift);
  }
  free(buf);

  if (cold && cold->ok) {
    out->cold_ttft_ms = cold->ttft_ms;
    out->cold_load_ms = cold->server_load_ms;
  }
}
