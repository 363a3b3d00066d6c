/* server_table: the terminal table of a server benchmark. Contract in server_table.h. */
#include "bench/server_table.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "bench/drift.h"
#include "util/units.h"

#define PM "\xc2\xb1" /* ± */

/* ------------------------------------------------------------ numbers --- */

char *report_fmt_ms(double ms, char *buf, size_t n) {
  if (!isfinite(ms)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%.*f", fabs(ms) < 100 ? 1 : 0, ms);
  return buf;
}

char *report_fmt_ms_sd(double median, double sd, char *buf, size_t n) {
  char a[32], b[32];
  if (!isfinite(median)) snprintf(buf, n, "-");
  else if (!isfinite(sd)) snprintf(buf, n, "%s", report_fmt_ms(median, a, sizeof a));
  else snprintf(buf, n, "%s " PM " %s", report_fmt_ms(median, a, sizeof a),
                report_fmt_ms(sd, b, sizeof b));
  return buf;
}

/* Decimals tm_fmt_rate gives a rate of this size (3 significant digits). */
static int rate_decimals(double v) { return v >= 100 ? 0 : v >= 10 ? 1 : 2; }

static char *fmt_rate(double v, char *buf, size_t n) {
  if (!isfinite(v)) snprintf(buf, n, "-");
  else tm_fmt_rate(v, buf, n);
  return buf;
}

char *report_fmt_rate_sd(double median, double sd, char *buf, size_t n) {
  char a[32];
  if (!isfinite(median)) snprintf(buf, n, "-");
  else if (!isfinite(sd)) snprintf(buf, n, "%s", fmt_rate(median, a, sizeof a));
  else snprintf(buf, n, "%s " PM " %.*f", fmt_rate(median, a, sizeof a), rate_decimals(median), sd);
  return buf;
}

char *report_fmt_percent(double pct, char *buf, size_t n) {
  if (!isfinite(pct)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%.*f%%", fabs(pct) < 10 ? 1 : 0, pct);
  return buf;
}

/* Median or NAN when the figure has no value. */
static double med(const struct stats_summary *s) { return s->n ? s->median : NAN; }
static double sdv(const struct stats_summary *s) { return s->n > 1 ? s->sd : NAN; }

/* "356 ± 4 [351-360]": a rate figure with its spread. */
static void rate_cell(const struct stats_summary *s, char *buf, size_t n) {
  char a[64], lo[32], hi[32];
  report_fmt_rate_sd(med(s), sdv(s), a, sizeof a);
  if (s->n > 1)
    snprintf(buf, n, "%s [%s-%s]", a, fmt_rate(s->min, lo, sizeof lo), fmt_rate(s->max, hi, sizeof hi));
  else
    snprintf(buf, n, "%s", a);
}

/* Prints s left-aligned in `width` display columns (UTF-8 aware: ± is one
 * column but two bytes); a longer cell still gets two spaces after it, so
 * columns never run together. */
static void cell(FILE *out, const char *s, int width) {
  int cols = 0;
  for (const char *p = s; *p; p++)
    if (((unsigned char)*p & 0xc0) != 0x80) cols++;
  fputs(s, out);
  if (cols > width - 2) width = cols + 2;
  for (; cols < width; cols++) fputc(' ', out);
}

/* ----------------------------------------------------------- footnotes --- */

enum note {
  NOTE_FEW_TOKENS,   /* decode blank: fewer than the minimum generated tokens */
  NOTE_BUFFERED,     /* decode blank: buffered stream */
  NOTE_NO_DECODE,    /* decode blank: no run gave a figure */
  NOTE_CLIENT_BOUND, /* prefill from the client only: a lower bound */
  NOTE_CACHED_OUT,   /* prefill blank: every run hit the prompt cache */
  NOTE_COUNT
};

static const char *const note_text[NOTE_COUNT] = {
    [NOTE_FEW_TOKENS] = METRICS_FEW_TOKENS_NOTE, /* the in-process table's words too */
    [NOTE_BUFFERED] = "decode blank: buffered stream (the server or a proxy sent many tokens "
                      "per chunk), inter-token figures withheld",
    [NOTE_NO_DECODE] = "decode blank: no run reported a decode figure",
    [NOTE_CLIENT_BOUND] = "client, lower bound: prompt tokens / client TTFT, which includes "
                          "network, queueing and the first decode step; the server's prompt "
                          "time was missing (or contradicted) in some or all runs",
    [NOTE_CACHED_OUT] = "prefill blank: every run hit the prompt cache (excluded; "
                        "--allow-cache keeps them, labelled)",
};

struct notes {
  bool used[NOTE_COUNT];
  char letter[NOTE_COUNT];
  char next;
  int w_workload; /* the workload column: W_WORKLOAD, or wider for long names */
};

/* The footnote mark for note k, assigning letters in order of first use. */
static const char *mark(struct notes *nt, enum note k, char *buf, size_t n) {
  if (!nt->used[k]) {
    nt->used[k] = true;
    nt->letter[k] = nt->next++;
  }
  snprintf(buf, n, " (%c)", nt->letter[k]);
  return buf;
}

/* ----------------------------------------------------------- the rows --- */

#define W_WORKLOAD 10
#define W_PROMPT 8
#define W_TTFT 16
#define W_PREFILL 44
#define W_DECODE 32

static void row(FILE *out, const struct bench_summary *s, const struct record_ceiling *c,
                struct notes *nt) {
  char buf[320], tmp[192], m[8];

  cell(out, s->workload[0] ? s->workload : "?", nt->w_workload);
  /* Prompt tokens: the server's count (rule 3), median. */
  if (s->prompt_tokens.n) snprintf(buf, sizeof buf, "%.0f", s->prompt_tokens.median);
  else snprintf(buf, sizeof buf, "-");
  cell(out, buf, W_PROMPT);

  report_fmt_ms_sd(med(&s->ttft_ms), sdv(&s->ttft_ms), buf, sizeof buf);
  cell(out, buf, W_TTFT);

  /* Prefill: headline figure, its source; the client-only figure is a bound. */
  if (s->prefill_headline.n) {
    rate_cell(&s->prefill_headline, tmp, sizeof tmp);
    const char *src = s->prefill_source ? s->prefill_source : "";
    if (strcmp(src, "client") == 0)
      snprintf(buf, sizeof buf, "%s client, lower bound%s", tmp,
               mark(nt, NOTE_CLIENT_BOUND, m, sizeof m));
    else if (*src)
      snprintf(buf, sizeof buf, "%s %s", tmp, src);
    else
      snprintf(buf, sizeof buf, "%s", tmp);
  } else if (s->n_ok && s->n_cache_hits >= s->n_ok && !s->allow_cache) {
    snprintf(buf, sizeof buf, "-%s", mark(nt, NOTE_CACHED_OUT, m, sizeof m));
  } else {
    snprintf(buf, sizeof buf, "-");
  }
  cell(out, buf, W_PREFILL);

  /* Decode: blank by rule gets a footnote saying which rule. */
  if (s->decode_headline.n) {
    rate_cell(&s->decode_headline, tmp, sizeof tmp);
    const char *src = s->decode_source ? s->decode_source : "";
    snprintf(buf, sizeof buf, "%s%s%s", tmp, *src ? " " : "", src);
  } else if (!s->n_ok) {
    snprintf(buf, sizeof buf, "-");
  } else if (s->n_buffered) {
    snprintf(buf, sizeof buf, "-%s", mark(nt, NOTE_BUFFERED, m, sizeof m));
  } else if (s->completion_tokens.n && s->completion_tokens.median < METRICS_MIN_DECODE_TOKENS) {
    snprintf(buf, sizeof buf, "-%s", mark(nt, NOTE_FEW_TOKENS, m, sizeof m));
  } else {
    snprintf(buf, sizeof buf, "-%s", mark(nt, NOTE_NO_DECODE, m, sizeof m));
  }

  if (c) {
    cell(out, buf, W_DECODE);
    char p1[32], p2[32];
    snprintf(buf, sizeof buf, "%s / %s",
             report_fmt_percent(record_percent_of(med(&s->prefill_headline),
                                                  c->prefill_ceiling_tok_s), p1, sizeof p1),
             report_fmt_percent(record_percent_of(med(&s->decode_headline),
                                                  c->decode_ceiling_tok_s), p2, sizeof p2));
  }
  fputs(buf, out);
  fputc('\n', out);
}

/* Lines under the table for one workload: curve, gap, cold, verdicts. */
static void details(FILE *out, const struct bench_summary *s, const struct record_ceiling *c) {
  const char *w = s->workload[0] ? s->workload : "?";
  char a[32], b[32], d[32];

  if (s->n_segments) {
    fprintf(out, "  %s: decode curve (client, tok/s):", w);
    for (size_t i = 0; i < s->n_segments && i < METRICS_MAX_SEGMENTS; i++)
      fprintf(out, "%s tokens %u-%u %s", i ? "," : "", s->segments[i].from, s->segments[i].to,
              fmt_rate(s->segments[i].tok_s, a, sizeof a));
    fputc('\n', out);
  }

  /* Rule 7: both timers, and their gap (each a median over the runs: the gap
   * is the median of per-run gaps, not the difference of the two medians). */
  if (s->ttft_gap_ms.n && s->ttft_ms.n) {
    double gap = s->ttft_gap_ms.median, ttft = s->ttft_ms.median;
    double server = s->server_prompt_ms.n ? s->server_prompt_ms.median : ttft - gap;
    fprintf(out, "  %s: server prompt time %s ms, client TTFT %s ms: %s ms outside the runtime "
                 "(network, queueing, first decode step)\n",
            w, report_fmt_ms(server, a, sizeof a), report_fmt_ms(ttft, b, sizeof b),
            report_fmt_ms(gap, d, sizeof d));
  }

  /* A headline is one source (summary.h); when the runs did not all carry the
   * same one, say which was used and give the other apart. */
  for (int ph = 0; ph < 2; ph++) {
    const struct stats_summary *sv = ph ? &s->decode_server : &s->prefill_server;
    const struct stats_summary *cv = ph ? &s->decode_client : &s->prefill_client;
    const char *src = ph ? s->decode_source : s->prefill_source;
    if (!sv->n || !cv->n || sv->n == cv->n || !src || !*src) continue;
    bool server = strcmp(src, "server") == 0;
    fprintf(out, "  %s: %s: the server's timer came in %u runs, the client's figure in %u: "
                 "the headline is the %s's over its %u (sources are never mixed); the %s's "
                 "median is %s tok/s\n",
            w, ph ? "decode" : "prefill", (unsigned)sv->n, (unsigned)cv->n,
            server ? "server" : "client", (unsigned)(server ? sv->n : cv->n),
            server ? "client" : "server", fmt_rate(server ? cv->median : sv->median, a, sizeof a));
  }

  /* Rule 11: the later runs slower than the first beyond the noise. */
  for (int ph = 0; ph < 2; ph++) {
    const struct stats_drift *dr = ph ? &s->decode_drift : &s->prefill_drift;
    if (!(ph ? s->decode_drift_tested : s->prefill_drift_tested)) continue;
    char note[320];
    if (*bench_drift_note(dr, "run", note, sizeof note))
      fprintf(out, "  %s: %s %s; %s\n", w, ph ? "decode" : "prefill", note, BENCH_DRIFT_ADVICE);
  }

  if (isfinite(s->cold_ttft_ms) || isfinite(s->cold_load_ms)) {
    fprintf(out, "  %s: cold request (first after a model load, not in the figures): TTFT %s ms",
            w, report_fmt_ms(s->cold_ttft_ms, a, sizeof a));
    if (isfinite(s->cold_load_ms)) fprintf(out, ", load %s ms", report_fmt_ms(s->cold_load_ms, b, sizeof b));
    fputc('\n', out);
  }

  if (s->n_cache_hits) {
    if (s->allow_cache)
      fprintf(out, "  %s: prompt cache hit in %u of %u runs: KEPT in the prefill figures "
                   "(--allow-cache), they are not a prefill measurement\n",
              w, s->n_cache_hits, s->n_ok);
    else
      fprintf(out, "  %s: prompt cache hit in %u of %u runs: excluded from prefill and TTFT\n", w,
              s->n_cache_hits, s->n_ok);
  }
  if (s->n_buffered)
    fprintf(out, "  %s: buffered stream in %u of %u runs: not token-by-token, inter-token "
                 "figures withheld\n", w, s->n_buffered, s->n_ok);
  if (s->n_count_mismatch)
    fprintf(out, "  %s: server token count differs from the chunks received in %u of %u runs "
                 "(the server's count is used)\n", w, s->n_count_mismatch, s->n_ok);
  if (s->n_reasoning_ate_budget)
    fprintf(out, "  %s: reasoning ate the budget in %u of %u runs (median %s reasoning tokens)\n",
            w, s->n_reasoning_ate_budget, s->n_ok,
            s->reasoning_tokens.n ? (snprintf(a, sizeof a, "%.0f", s->reasoning_tokens.median), a)
                                  : "-");
  if (s->n_failed) {
    fprintf(out, "  %s: %u of %u runs failed:", w, s->n_failed, s->n_runs);
    bool first = true;
    for (int k = 1; k < RUN_ERR_COUNT; k++) {
      if (!s->failed_by_kind[k]) continue;
      fprintf(out, "%s %s %u", first ? "" : ",", run_error_name((enum run_error)k),
              s->failed_by_kind[k]);
      first = false;
    }
    fputc('\n', out);
  }

  if (c) {
    double pd = record_percent_of(med(&s->decode_headline), c->decode_ceiling_tok_s);
    double pp = record_percent_of(med(&s->prefill_headline), c->prefill_ceiling_tok_s);
    if (pd > 100)
      fprintf(out, "  %s: decode at %s of its ceiling: a mixture-of-experts model read as dense, "
                   "speculative decoding or a buffered stream, not a measurement to share\n",
              w, report_fmt_percent(pd, a, sizeof a));
    if (pp > 100)
      fprintf(out, "  %s: prefill at %s of its ceiling: a cached prompt or a wrong compute "
                   "figure, not a measurement to share\n",
              w, report_fmt_percent(pp, a, sizeof a));
  }
}

void report_server_table(FILE *out, const struct bench_summary *s, size_t n,
                         const struct record_ceiling *c, bool with_details) {
  struct notes nt = {.next = 'a', .w_workload = W_WORKLOAD};
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(s[i].workload) + 2 > nt.w_workload) nt.w_workload = (int)strlen(s[i].workload) + 2;
  uint32_t runs = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i].n_runs > runs) runs = s[i].n_runs;

  fprintf(out, "prefill rate (prompt tok/s) | decode rate (generated tok/s, one stream) | "
               "fixed costs (TTFT, ms)\n");
  fprintf(out, "median " PM " sd over up to %u timed runs per workload, [min-max]\n", runs);
  if (c) {
    /* One ceiling per workload: the decode ceiling depends on the context
     * depth (the KV cache read grows with it), the prefill one on the prompt. */
    char bw[32];
    fprintf(out, "ceilings from the model file and memory read %s; per workload:",
            isfinite(c[0].read_bandwidth_bytes_s)
                ? tm_fmt_bandwidth(c[0].read_bandwidth_bytes_s, bw, sizeof bw) : "-");
    for (size_t i = 0; i < n; i++) {
      char a[32], b[32];
      fprintf(out, "%s %s prefill %s / decode %s tok/s", i ? ";" : "", s[i].workload,
              fmt_rate(c[i].prefill_ceiling_tok_s, a, sizeof a),
              fmt_rate(c[i].decode_ceiling_tok_s, b, sizeof b));
    }
    fputc('\n', out);
  }
  cell(out, "workload", nt.w_workload);
  cell(out, "prompt", W_PROMPT);
  cell(out, "TTFT ms", W_TTFT);
  cell(out, "prefill tok/s", W_PREFILL);
  if (c) {
    cell(out, "decode tok/s", W_DECODE);
    fputs("% of ceiling (prefill / decode)", out);
  } else {
    fputs("decode tok/s", out);
  }
  fputc('\n', out);

  for (size_t i = 0; i < n; i++) row(out, &s[i], c ? &c[i] : NULL, &nt);
  for (size_t i = 0; with_details && i < n; i++) details(out, &s[i], c ? &c[i] : NULL);

  /* Footnotes in letter order (letters were given in order of first use). */
  for (char l = 'a'; l < nt.next; l++)
    for (int k = 0; k < NOTE_COUNT; k++)
      if (nt.used[k] && nt.letter[k] == l) fprintf(out, "(%c) %s\n", l, note_text[k]);
}
