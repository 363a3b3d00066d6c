/* report_text: the terminal table, markdown and CSV writers (report.h).
 * Table and markdown share one column list: rows are grouped under a heading
 * naming what was measured (backend | model or target | type), and a column
 * that is blank in every row is left out (a server-only report has no
 * threads column). CSV is long-form for machines: one line per configuration
 * x metric, with every figure (n, median, mean, sd, min, max, ceiling) and
 * the metric's quantity in its own column. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report.h"
#include "report/report_internal.h"
#include "stats/stats.h"

/* ------------------------------------------------------------- the columns */

typedef void (*cell_fn)(const struct report_row *row, char *buf, size_t n);

static void c_test(const struct report_row *r, char *b, size_t n) { snprintf(b, n, "%s", r->test); }
static void c_int(int v, char *b, size_t n) {
  if (v >= 0) snprintf(b, n, "%d", v);
  else if (n) b[0] = 0;
}
static void c_threads(const struct report_row *r, char *b, size_t n) { c_int(r->threads, b, n); }
static void c_depth(const struct report_row *r, char *b, size_t n) { c_int(r->depth, b, n); }
static void c_prompt(const struct report_row *r, char *b, size_t n) { c_int(r->prompt_tokens, b, n); }
static void c_n(const struct report_row *r, char *b, size_t n) {
  size_t m = 0;
  const struct series *all[] = {r->prefill, r->decode, r->decode_client, r->ttft};
  for (size_t k = 0; k < 4; k++)
    if (all[k] && all[k]->n > m) m = all[k]->n;
  if (m) snprintf(b, n, "%zu", m);
  else if (n) b[0] = 0;
}
static void c_pf(const struct report_row *r, char *b, size_t n) { report_cell_figure(r->prefill, b, n); }
static void c_pf_pct(const struct report_row *r, char *b, size_t n) { report_cell_percent(r->prefill, b, n); }
static void c_dc(const struct report_row *r, char *b, size_t n) { report_cell_figure(r->decode, b, n); }
static void c_dc_pct(const struct report_row *r, char *b, size_t n) { report_cell_percent(r->decode, b, n); }
static void c_dc_client(const struct report_row *r, char *b, size_t n) {
  report_cell_figure(r->decode_client, b, n);
}
static void c_ttft(const struct report_row *r, char *b, size_t n) { report_cell_figure(r->ttft, b, n); }
static void c_cold(const struct report_row *r, char *b, size_t n) { report_cell_figure(r->cold_ttft, b, n); }
/* "3/5 correct, 1 wrong, 1 no answer": the counts, never a bare percentage */
static void c_answers(const struct report_row *r, char *b, size_t n) {
  if (!r->checked) {
    b[0] = '\0';
    return;
  }
  uint32_t all = r->correct + r->wrong + r->no_answer;
  int k = snprintf(b, n, "%u/%u correct", r->correct, all);
  if (r->wrong && k > 0 && (size_t)k < n) k += snprintf(b + k, n - (size_t)k, ", %u wrong", r->wrong);
  if (r->no_answer && k > 0 && (size_t)k < n)
    snprintf(b + k, n - (size_t)k, ", %u no answer", r->no_answer);
}

struct column {
  const char *head;  /* quantity tag first: which of the five the numbers are */
  bool right;        /* numbers align right */
  cell_fn cell;
};

static const struct column columns[] = {
    {"test", false, c_test},
    {"threads", true, c_threads},
    {"CC depth (tok)", true, c_depth},
    {"CC prompt (tok)", true, c_prompt},
    {"runs", true, c_n},
    {"PF prefill (tok/s)", true, c_pf},
    {"PF % of ceiling", true, c_pf_pct},
    {"DC decode (tok/s)", true, c_dc},
    {"DC % of ceiling", true, c_dc_pct},
    {"DC client (tok/s)", true, c_dc_client},
    {"FX TTFT (ms)", true, c_ttft},
    {"FX cold TTFT (ms)", true, c_cold},
    {"answers", false, c_answers},
};
#define N_COLUMNS (sizeof columns / sizeof columns[0])
#define CELL REPORT_CELL
_Static_assert(N_COLUMNS <= REPORT_MAX_COLUMNS, "column list larger than REPORT_MAX_COLUMNS");

const char *report_column_head(size_t col) { return columns[col].head; }
bool report_column_right(size_t col) { return columns[col].right; }
void report_column_cell(size_t col, const struct report_row *row, char *buf, size_t n) {
  columns[col].cell(row, buf, n);
}
size_t report_columns_used(const struct report *rep, size_t *idx) {
  size_t n = 0;
  char b[CELL];
  for (size_t c = 0; c < N_COLUMNS; c++) {
    for (size_t i = 0; i < rep->n_rows; i++) {
      columns[c].cell(&rep->rows[i], b, sizeof b);
      if (b[0]) {
        idx[n++] = c;
        break;
      }
    }
  }
  return n;
}

/* Display width of UTF-8 text: code points (the table holds no wide glyphs). */
static size_t text_width(const char *s) {
  size_t w = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xc0) != 0x80) w++;
  return w;
}

static void pad(struct sbuf *o, size_t n) {
  for (size_t i = 0; i < n; i++) sbuf_putn(o, " ", 1);
}

const char *const report_legend_text =
    "CC context (tokens), PF prefill rate (prompt tok/s), DC decode rate (generated tok/s, one "
    "stream), FX fixed costs (ms; TTFT in-process: the pp test's time); AT aggregate throughput: the "
    "load tables (tokmeter load). DC client: the client's own decode rate beside the server's.\n"
    "Cells: median \xc2\xb1 sample sd over the timed runs (warm-ups, calibration and failed runs "
    "excluded); % of ceiling = 100 x median / the mean of the runs' ceilings; blank = not measured or blank by rule.\n";

/* ------------------------------------------------------------------ writers */

int report_write_table(const struct report *rep, struct sbuf *o, struct tm_err *err) {
  size_t idx[N_COLUMNS], nc = report_columns_used(rep, idx);
  size_t width[N_COLUMNS];
  char b[CELL];
  for (size_t k = 0; k < nc; k++) {
    width[k] = text_width(columns[idx[k]].head);
    for (size_t i = 0; i < rep->n_rows; i++) {
      columns[idx[k]].cell(&rep->rows[i], b, sizeof b);
      size_t w = text_width(b);
      if (w > width[k]) width[k] = w;
    }
  }
  const char *group = NULL;
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct report_row *row = &rep->rows[i];
    if (!group || strcmp(group, row->group)) {
      group = row->group;
      if (i) sbuf_puts(o, "\n");
      sbuf_put_line(o, group);
      sbuf_puts(o, "\n ");
      for (size_t k = 0; k < nc; k++) {
        const char *h = columns[idx[k]].head;
        sbuf_puts(o, " ");
        if (columns[idx[k]].right) pad(o, width[k] - text_width(h));
        sbuf_puts(o, h);
        if (!columns[idx[k]].right && k + 1 < nc) pad(o, width[k] - text_width(h));
      }
      sbuf_puts(o, "\n");
    }
    sbuf_puts(o, " ");
    for (size_t k = 0; k < nc; k++) {
      columns[idx[k]].cell(row, b, sizeof b);
      sbuf_puts(o, " ");
      if (columns[idx[k]].right) pad(o, width[k] - text_width(b));
      sbuf_put_line(o, b);
      if (!columns[idx[k]].right && k + 1 < nc) pad(o, width[k] - text_width(b));
    }
    sbuf_puts(o, "\n");
  }
  if (rep->n_rows) {
    sbuf_puts(o, "\n");
    report_ceiling_notes(rep, o, REPORT_TABLE);
    sbuf_puts(o, report_legend_text);
    bool checked = false;
    for (size_t i = 0; i < rep->n_rows; i++) checked |= rep->rows[i].checked;
    if (checked)
      sbuf_puts(o, "answers: a workload file's checked answers, correct of the timed successful "
                   "runs (docs/workloads.md); compare tests two configurations' counts.\n");
  }
  report_load_text(rep->results, o);
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}

int report_write_markdown(const struct report *rep, struct sbuf *o, struct tm_err *err) {
  size_t idx[N_COLUMNS], nc = report_columns_used(rep, idx);
  char b[CELL];
  const char *group = NULL;
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct report_row *row = &rep->rows[i];
    if (!group || strcmp(group, row->group)) {
      group = row->group;
      sbuf_puts(o, i ? "\n### " : "### ");
      sbuf_put_md(o, group);
      sbuf_puts(o, "\n\n|");
      for (size_t k = 0; k < nc; k++) {
        sbuf_puts(o, " ");
        sbuf_put_md(o, columns[idx[k]].head);
        sbuf_puts(o, " |");
      }
      sbuf_puts(o, "\n|");
      for (size_t k = 0; k < nc; k++) sbuf_puts(o, columns[idx[k]].right ? " ---: |" : " --- |");
      sbuf_puts(o, "\n");
    }
    sbuf_puts(o, "|");
    for (size_t k = 0; k < nc; k++) {
      columns[idx[k]].cell(row, b, sizeof b);
      sbuf_puts(o, " ");
      sbuf_put_md(o, b);
      sbuf_puts(o, " |");
    }
    sbuf_puts(o, "\n");
  }
  sbuf_puts(o, "\n");
  report_ceiling_notes(rep, o, REPORT_MARKDOWN);
  /* markdown joins lines of a paragraph: keep the two sentences apart */
  sbuf_puts(o, "CC context (tokens), PF prefill rate (prompt tok/s), DC decode rate (generated "
               "tok/s, one stream), FX fixed costs (ms); AT aggregate throughput: "
               "tokmeter load's records (the table and the HTML page).\n\n"
               "Cells: median \xc2\xb1 sample sd over the timed runs (warm-ups, calibration and "
               "failed runs excluded); % of ceiling = 100 x median / the mean of the runs' ceilings; blank = not "
               "measured or blank by rule.\n");
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}

static void csv_num(struct sbuf *o, double v) {
  sbuf_puts(o, ",");
  if (isfinite(v)) sbuf_printf(o, "%.10g", v);
}

static void csv_int(struct sbuf *o, int v) {
  sbuf_puts(o, ",");
  if (v >= 0) sbuf_printf(o, "%d", v);
}

int report_write_csv(const struct report *rep, struct sbuf *o, struct tm_err *err) {
  sbuf_puts(o, "configuration,backend,target,model,type,test,threads,depth,prompt_tokens,"
               "gen_tokens,metric,quantity,unit,n,median,mean,sd,min,max,ceiling_tok_s,"
               "percent_of_ceiling,source,ceiling_min_tok_s,ceiling_max_tok_s,ceiling_note\n");
  for (size_t i = 0; i < rep->set.n; i++) {
    const struct series *s = &rep->set.s[i];
    struct stats_summary st;
    stats_describe(s->values, s->n, &st);
    sbuf_put_csv(o, s->key);
    const char *text[] = {s->backend, s->target, s->model, s->type, s->test};
    for (size_t k = 0; k < 5; k++) {
      sbuf_puts(o, ",");
      sbuf_put_csv(o, text[k]);
    }
    csv_int(o, s->threads);
    csv_int(o, s->depth);
    csv_int(o, s->prompt_tokens);
    csv_int(o, s->gen_tokens);
    const char *text2[] = {record_metric_name(s->metric), s->quantity, s->unit};
    for (size_t k = 0; k < 3; k++) {
      sbuf_puts(o, ",");
      sbuf_put_csv(o, text2[k]);
    }
    sbuf_printf(o, ",%zu", st.n);
    csv_num(o, st.median);
    csv_num(o, st.mean);
    csv_num(o, st.sd);
    csv_num(o, st.min);
    csv_num(o, st.max);
    csv_num(o, s->ceiling);
    csv_num(o, report_series_percent(s));
    sbuf_puts(o, ",");
    sbuf_put_csv(o, s->source ? s->source : "");
    csv_num(o, s->ceiling_min);
    csv_num(o, s->ceiling_max);
    char note[300];
    series_ceiling_note(s, note, sizeof note);
    sbuf_puts(o, ",");
    sbuf_put_csv(o, note);
    sbuf_puts(o, "\n");
  }
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}
