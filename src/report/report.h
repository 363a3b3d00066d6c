/* report: tokmeter's results files as tables and plots (`tokmeter report`).
 *
 * report_build flattens loaded results (analysis/results.h) into series
 * (analysis/series.h: one configuration x one metric, timed successful runs
 * only) and groups them into rows, one row per configuration; the writers
 * render those rows as a terminal table, markdown, CSV, or one self-contained
 * HTML page with inline SVG plots (report/svg.h).
 *
 * Every number column names which of docs/design.md's five quantities it is: CC
 * context (tokens), PF prefill rate, DC decode rate (one stream), AT aggregate
 * throughput, FX fixed costs (ms). A figure that is unknown is blank, never 0.
 * Cells hold the median over the timed runs ± the sample sd (sd only from 2
 * runs up); "% of ceiling" is 100 x median / the configuration's ceiling:
 * the mean of its runs' ceilings (series.h), whatever the order of the
 * files; a "*" marks a cell whose runs' ceilings spread by more than 5% or
 * come from different machines or models, and a note under the table says
 * which (series_ceiling_note).
 *
 * The HTML plots and what each mark is (docs/report.md):
 *  - decode rate over output length, one plot per configuration with a decode
 *    curve: one mark per segment of every timed run (rates.decode_by_segment /
 *    decode_by_segment) of at least RECORD_MIN_DECODE_TOKENS tokens (rule 5;
 *    older records hold shorter ones), the median per segment as a derived
 *    line;
 *  - time to first token against prompt length, one plot per TTFT group
 *    (analysis/ttft.h): one mark per point, the fitted line (derived);
 *  - prefill and decode against threads (in-process runs): one mark per timed
 *    run, the median per thread count as a line;
 *  - % of ceiling: one bar per configuration x rate with a ceiling, and the
 *    100% line;
 *  - aggregate throughput and one stream's decode against the load, and TTFT
 *    p50 / p99 against the load, one plot each per `tokmeter load`
 *    invocation (report_load.c: one mark per level record, the aggregate
 *    ceiling dashed where recorded, the knee as a line); with none, the page
 *    says so instead of drawing an empty plot. */
#ifndef TM_REPORT_H
#define TM_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/results.h"
#include "analysis/series.h"
#include "analysis/ttft.h"
#include "report/sbuf.h"
#include "util/err.h"

enum report_format { REPORT_TABLE = 0, REPORT_MARKDOWN, REPORT_CSV, REPORT_HTML };

/* "table" / "markdown" (or "md") / "csv" / "html" -> format; -1 when unknown. */
int report_format_parse(const char *s, enum report_format *out);

/* One configuration (a series key) and its metrics; NULL when not measured. */
struct report_row {
  const char *key;            /* the series key (borrowed from the series) */
  char group[400];            /* backend | target-or-model | type: the table's heading */
  char test[64];              /* "pp512", "tg128", "generate", "custom p100 n32" */
  int threads, depth;         /* in-process; -1 for server runs */
  int prompt_tokens;          /* CC: pp length / median processed prompt tokens; -1 */
  int gen_tokens;             /* tg length / max_tokens; -1 */
  const struct series *prefill;       /* PF prefill_tok_s */
  const struct series *decode;        /* DC decode_tok_s (headline) */
  const struct series *decode_client; /* DC decode_tok_s_client (server) */
  const struct series *ttft;          /* FX ttft_ms (server) or prefill_ms (in-process pp) */
  const struct series *cold_ttft;     /* FX cold_ttft_ms (server) */
  /* A workload file's job with an expect: its checked answers over the
   * timed successful runs (analysis/answers.h); checked false otherwise. */
  bool checked;
  uint32_t correct, wrong, no_answer;
};

struct report {
  const struct results *results;  /* borrowed */
  struct series_set set;
  struct report_row *rows;        /* in the order configurations first appear */
  size_t n_rows;
  struct ttft_groups ttft;        /* points for the TTFT plots (empty when none) */
  size_t n_timed_runs;            /* values behind the rows (all metrics' runs, counted once) */
};

/* 0, or -1 with err (out of memory). A results set with no timed run gives a
 * report with n_rows == 0 (the CLI says "no timed runs"). */
int report_build(const struct results *r, struct report *rep, struct tm_err *err);
void report_free(struct report *rep);

/* The `tokmeter load` level records in r (a report of load records alone
 * has no rows: its tables and plots are the levels). */
size_t report_load_levels(const struct results *r);

/* Writers: append to out; 0, or -1 with err (out of memory). */
int report_write_table(const struct report *rep, struct sbuf *out, struct tm_err *err);
int report_write_markdown(const struct report *rep, struct sbuf *out, struct tm_err *err);
int report_write_csv(const struct report *rep, struct sbuf *out, struct tm_err *err);
/* title: the page's <h1> (NULL: "tokmeter report"). */
int report_write_html(const struct report *rep, const char *title, struct sbuf *out,
                      struct tm_err *err);

/* Cell text helpers, shared by the writers (exposed for tests):
 * "61083 ± 3555" (median ± sample sd; sd left out when n < 2), "" when the
 * series is NULL or holds no value. */
void report_cell_figure(const struct series *s, char *buf, size_t n);
/* "87%" / "2.1%" (100 x median / ceiling), "87%*" when the ceiling is
 * uncertain (series_ceiling_note), "" when no ceiling. */
void report_cell_percent(const struct series *s, char *buf, size_t n);
/* The figure a cell shows; NAN when none. */
double report_series_median(const struct series *s);
double report_series_percent(const struct series *s);

#endif
