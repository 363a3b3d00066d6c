/* report_internal: what the report writers share inside src/report/ (not a
 * contract for other modules). */
#ifndef TM_REPORT_INTERNAL_H
#define TM_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "report/report.h"
#include "report/sbuf.h"

#define REPORT_MAX_COLUMNS 16
#define REPORT_CELL 96

/* The table columns that hold at least one value, as indices into the column
 * list; returns the count. */
size_t report_columns_used(const struct report *rep, size_t *idx);
const char *report_column_head(size_t col);  /* "PF prefill (tok/s)" */
bool report_column_right(size_t col);        /* numbers: align right */
void report_column_cell(size_t col, const struct report_row *row, char *buf, size_t n);
/* The legend of the five quantities and how cells are computed, as text. */
extern const char *const report_legend_text;

/* After a table: one line per "% of ceiling" cell marked "*" (its series'
 * series_ceiling_note), under a sentence saying the percentage is held
 * against the mean of the runs' ceilings; nothing when no cell is marked.
 * f: REPORT_TABLE (plain text), REPORT_MARKDOWN or REPORT_HTML. Returns how
 * many notes were written. */
int report_ceiling_notes(const struct report *rep, struct sbuf *o, enum report_format f);

/* The plot sections of the HTML page: each appends its <h3>, figures (or a
 * paragraph saying why there is none) to out. 0 or -1 with err. */
int report_plots_html(const struct report *rep, struct sbuf *out, struct tm_err *err);

/* report_load.c: `tokmeter load` levels. The count of level records; the
 * levels as text tables (appended after the runs' table); the HTML section
 * (aggregate and one stream against load, TTFT against load), or the line
 * saying there are none. */
int report_load_text(const struct results *r, struct sbuf *o);
int report_load_html(const struct results *r, struct sbuf *o, struct tm_err *err);

#endif
