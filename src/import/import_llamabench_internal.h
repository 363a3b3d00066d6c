/* import_llamabench_internal: what the llama-bench importer's files share
 * (private to src/import/import_llamabench*.c; the contracts for callers are
 * in import_llamabench.h).
 *
 * The importer in three files, one job each:
 *   import_llamabench.c          the entry: one import from input text to
 *                                output lines, in order; the output's lines,
 *                                warnings and freeing; the check of a results
 *                                file before records are appended to it;
 *   import_llamabench_parse.c    reading llama-bench's output: JSON or JSONL
 *                                into test entries, every field type-checked,
 *                                and its model_type description;
 *   import_llamabench_records.c  building tokmeter records from checked
 *                                entries: identity, runs, summaries, end, and
 *                                the ceilings on them. */
#ifndef TM_IMPORT_LLAMABENCH_INTERNAL_H
#define TM_IMPORT_LLAMABENCH_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "import/import_llamabench.h"
#include "record/record.h"
#include "util/err.h"

/* One test entry, checked. */
struct lb_entry {
  json_t *obj;              /* borrowed from the parsed input */
  char where[64];           /* "entry 3" / "line 4", for messages */
  const char *model_type, *model_filename, *test_time, *cpu_info, *gpu_info, *backends;
  long long n_prompt, n_gen, n_depth, n_threads;
  size_t n_samples;
  double *ns;               /* n_samples, malloc'd */
  bool avg_only;            /* no samples_ns: one run at avg_ns */
};

/* ---- the output (import_llamabench.c) ---- */

/* Adds a warning to out (at most IMPORT_MAX_WARNINGS; a sentence already
 * there is not added twice). */
void import_lb_warn(struct import_out *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends line to out's lines (taking it); -1 when line is NULL or on no
 * memory (line freed). */
int import_lb_push(struct import_out *out, json_t *line);

/* ---- reading (import_llamabench_parse.c) ---- */

/* The input as a list of objects (borrowed from *root, which the caller
 * frees); format "json" or "jsonl"; for JSONL, *line_of the line of each
 * (malloc'd). 0, or -1 with err. */
int import_lb_parse_input(const char *text, size_t len, json_t **root, json_t **items,
                          char *format, size_t **line_of, struct tm_err *err);
/* Checks one entry o into *e (e->where set by the caller; e->ns malloc'd,
 * the caller frees it, also on failure). 0, or -1 with err. */
int import_lb_check_entry(json_t *o, struct lb_entry *e, struct tm_err *err);

/* ---- building (import_llamabench_records.c) ---- */

/* The identity line of the n entries es; writes a new record id to id. NULL
 * with err on failure. */
json_t *import_lb_identity_build(const struct import_opts *o, const struct lb_entry *es,
                                 size_t n, const char *format, char id[RECORD_ID_LEN + 1],
                                 struct tm_err *err);
/* The run lines of one entry (pushed to out) and its summary (*summary, not
 * pushed). 0, or -1 on no memory. */
int import_lb_build_entry(const struct import_opts *o, const char *id, const struct lb_entry *e,
                          struct import_out *out, json_t **summary);
/* The end line; NULL on no memory. */
json_t *import_lb_end_build(const char *id, size_t runs);

#endif
