/* report_model: results -> series -> rows (one per configuration), and the
 * cell formatting every writer shares (contract in report.h). */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/answers.h"
#include "report/report_internal.h"
#include "stats/stats.h"

int report_format_parse(const char *s, enum report_format *out) {
  if (!s) return -1;
  if (!strcmp(s, "table")) *out = REPORT_TABLE;
  else if (!strcmp(s, "markdown") || !strcmp(s, "md")) *out = REPORT_MARKDOWN;
  else if (!strcmp(s, "csv")) *out = REPORT_CSV;
  else if (!strcmp(s, "html")) *out = REPORT_HTML;
  else return -1;
  return 0;
}

double report_series_median(const struct series *s) {
  if (!s || s->n == 0) return NAN;
  struct stats_summary st;
  stats_describe(s->values, s->n, &st);
  return st.median;
}

double report_series_percent(const struct series *s) {
  double m = report_series_median(s);
  if (!s || !isfinite(m) || !(s->ceiling > 0)) return NAN;
  return 100.0 * m / s->ceiling;
}

/* Decimals for a figure: 3 significant digits up to 100, whole numbers above
 * (a rate of 61083 tok/s does not need decimals; 4.52 ms does). */
static int decimals_for(double v) {
  double a = fabs(v);
  return a >= 100 ? 0 : a >= 10 ? 1 : 2;
}

void report_cell_figure(const struct series *s, char *buf, size_t n) {
  if (n) buf[0] = 0;
  if (!s || s->n == 0) return;
  struct stats_summary st;
  stats_describe(s->values, s->n, &st);
  if (!isfinite(st.median)) return;
  int d = decimals_for(st.median);
  if (st.n >= 2 && isfinite(st.sd))
    snprintf(buf, n, "%.*f \xc2\xb1 %.*f", d, st.median, d, st.sd);
  else
    snprintf(buf, n, "%.*f", d, st.median);
}

void report_cell_percent(const struct series *s, char *buf, size_t n) {
  if (n) buf[0] = 0;
  double p = report_series_percent(s);
  if (!isfinite(p)) return;
  char note[8];
  snprintf(buf, n, "%.*f%%%s", p >= 10 ? 0 : 1, p,
           series_ceiling_note(s, note, sizeof note) ? "*" : "");
}

int report_ceiling_notes(const struct report *rep, struct sbuf *o, enum report_format f) {
  int n = 0;
  char note[300];
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct series *both[] = {rep->rows[i].prefill, rep->rows[i].decode};
    for (size_t k = 0; k < 2; k++) {
      if (!isfinite(report_series_percent(both[k])) ||
          !series_ceiling_note(both[k], note, sizeof note))
        continue;
      if (n++ == 0) {
        const char *head = "% of ceiling is held against the mean of the runs' ceilings; "
                           "uncertain where marked *:";
        if (f == REPORT_HTML) sbuf_printf(o, "<p class=\"tm-ceiling-notes\">%s</p>\n<ul>\n", head);
        else if (f == REPORT_MARKDOWN) sbuf_puts(o, "% of ceiling is held against the mean of "
                                                   "the runs' ceilings; uncertain where marked "
                                                   "\\*:\n\n");
        else sbuf_printf(o, "%s\n", head);
      }
      const char *q = both[k]->quantity;
      if (f == REPORT_HTML) {
        sbuf_puts(o, "<li>");
        sbuf_put_xml(o, both[k]->key);
        sbuf_printf(o, ", %s: ", q);
        sbuf_put_xml(o, note);
        sbuf_puts(o, "</li>\n");
      } else if (f == REPORT_MARKDOWN) {
        sbuf_puts(o, "- ");
        sbuf_put_md(o, both[k]->key);
        sbuf_printf(o, ", %s: ", q);
        sbuf_put_md(o, note);
        sbuf_puts(o, "\n");
      } else {
        sbuf_printf(o, "  %s, %s: %s\n", both[k]->key, q, note);
      }
    }
  }
  if (n && f == REPORT_HTML) sbuf_puts(o, "</ul>\n");
  else if (n) sbuf_puts(o, "\n");
  return n;
}

/* The heading a row sits under: what was measured, without the per-row parts
 * (test, threads, depth). */
static void row_group(const struct series *s, char *buf, size_t n) {
  bool inprocess = s->threads >= 0 || !strcmp(s->target, "in-process");
  bool type_in_model = s->type[0] && strstr(s->model, s->type);
  if (inprocess)
    snprintf(buf, n, "%s | %s%s%s", s->backend, s->model, s->type[0] && !type_in_model ? " | " : "",
             type_in_model ? "" : s->type);
  else
    snprintf(buf, n, "%s | %s | %s%s%s", s->backend, s->target, s->model,
             s->type[0] && !type_in_model ? " | " : "", type_in_model ? "" : s->type);
}

static struct report_row *find_row(struct report *rep, const char *key) {
  for (size_t i = 0; i < rep->n_rows; i++)
    if (!strcmp(rep->rows[i].key, key)) return &rep->rows[i];
  return NULL;
}

int report_build(const struct results *r, struct report *rep, struct tm_err *err) {
  memset(rep, 0, sizeof *rep);
  rep->results = r;
  if (series_extract(r, &rep->set, err) < 0) return -1;
  if (rep->set.n) {
    rep->rows = calloc(rep->set.n, sizeof *rep->rows);
    if (!rep->rows) {
      report_free(rep);
      return tm_errf(err, "report: out of memory");
    }
  }
  for (size_t i = 0; i < rep->set.n; i++) {
    const struct series *s = &rep->set.s[i];
    if (s->n == 0) continue;
    struct report_row *row = find_row(rep, s->key);
    if (!row) {
      row = &rep->rows[rep->n_rows++];
      row->key = s->key;
      row_group(s, row->group, sizeof row->group);
      const char *custom = strstr(s->key, s->test);
      /* a custom / sweep workload's key ends in "| p100 n32": keep that part */
      const char *tail = custom ? strstr(custom, " | p") : NULL;
      if (s->threads < 0 && tail)
        snprintf(row->test, sizeof row->test, "%s %s", s->test, tail + 3);
      else
        snprintf(row->test, sizeof row->test, "%s", s->test);
      row->threads = s->threads;
      row->depth = s->depth;
      row->prompt_tokens = s->prompt_tokens;
      row->gen_tokens = s->gen_tokens;
    }
    if (s->prompt_tokens >= 0 && row->prompt_tokens < 0) row->prompt_tokens = s->prompt_tokens;
    if (s->gen_tokens >= 0 && row->gen_tokens < 0) row->gen_tokens = s->gen_tokens;
    switch (s->metric) {
    case METRIC_PREFILL_TOK_S: row->prefill = s; break;
    case METRIC_DECODE_TOK_S: row->decode = s; break;
    case METRIC_DECODE_TOK_S_CLIENT: row->decode_client = s; break;
    case METRIC_TTFT_MS:
    case METRIC_PREFILL_MS: row->ttft = s; break;
    case METRIC_COLD_TTFT_MS: row->cold_ttft = s; break;
    default: break;
    }
  }
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct report_row *row = &rep->rows[i];
    /* a run gives one value to each of its metrics: count it once, by the
     * metric that holds the most values */
    size_t n = 0;
    const struct series *all[] = {row->prefill, row->decode, row->decode_client, row->ttft};
    for (size_t k = 0; k < 4; k++)
      if (all[k] && all[k]->n > n) n = all[k]->n;
    rep->n_timed_runs += n;
  }
  struct answer_tallies tallies = {0};
  if (answer_tallies_of(r, &tallies) != 0) {
    report_free(rep);
    return tm_errf(err, "report: out of memory");
  }
  for (size_t i = 0; i < rep->n_rows; i++) {
    struct report_row *row = &rep->rows[i];
    const struct answer_tally *t = answer_tally_find(&tallies, row->key);
    if (!t) continue;
    row->checked = true;
    row->correct = t->correct;
    row->wrong = t->wrong;
    row->no_answer = t->no_answer;
  }
  answer_tallies_free(&tallies);
  if (ttft_points_from_results(r, &rep->ttft, err) < 0) {
    report_free(rep);
    return -1;
  }
  return 0;
}

void report_free(struct report *rep) {
  if (!rep) return;
  series_set_free(&rep->set);
  free(rep->rows);
  ttft_groups_free(&rep->ttft);
  memset(rep, 0, sizeof *rep);
}
