/* results: reading tokmeter JSON Lines results files (docs/records.md) back
 * into memory, grouped by invocation, for report / compare / decide.
 *
 * Contract:
 *  - Every non-blank line must be a JSON object with a string "record"; a line
 *    that is not is an error naming the file and line number (bad input, the
 *    CLI exits 2). Unknown record kinds are skipped (new kinds may be added
 *    without a schema bump). A "schema" above RECORD_READ_MAX_SCHEMA is an
 *    error (keys may have changed meaning), and so is one that is not a
 *    positive integer.
 *  - Every identity, run, summary and end line is checked against
 *    docs/records.md's types for what the analysis reads; a line that fails
 *    is an error "FILE:LINE: <field> <value> is not <what>" (one line):
 *    numbers finite and not absurd (sums and means must stay finite);
 *    rates (rate_tok_s, rates.*_tok_s.*, segment tok_s) 1e-6 to 1e12 or
 *    null; times (client.*_ms, segment ms) >= 0 and <= 1e12 ms or null, an
 *    in-process run's ms > 0 (its rate is tokens / ms); ceiling parts >= 0
 *    and <= 1e30 or null; counts non-negative integers
 *    or null; in-process runs (a "test" key, or backend "engine" /
 *    "llama-bench"): test "pp<N>" / "tg<N>" (N >= 1), phase matching it when
 *    present, threads a positive integer, depth a non-negative integer (both
 *    required); warmup / ok / cold / calibration booleans when present.
 *    Every line tokmeter writes passes (its blanks are null).
 *  - Then every run's figures are checked against each other
 *    (results_agree.h: rate x time = tokens, the processed count, the
 *    headline's source); a run that contradicts itself is an error
 *    "FILE:LINE: <rate key> R tok/s x <time key> T ms is X tokens, but
 *    <count> is N: ..." naming the keys.
 *  - Lines are grouped by identity id ("id" of the identity line, "identity"
 *    of the others), in the order their identity first appears across the
 *    files given. Every run/summary/end must carry a non-empty identity id,
 *    and that id must have an identity line in one of the files given (in
 *    any of them: a file may continue an invocation begun in an earlier
 *    file); otherwise results_load fails naming the first such line. So on
 *    success every invocation has identity != NULL.
 *  - An invocation without an "end" line (it died) is kept: end stays NULL.
 *  - Values are jansson objects owned by the struct results; borrow them
 *    (json_t *) until results_free. A file with no record at all is not an
 *    error here (n_inv == 0): the caller says "no records in X".
 */
#ifndef TM_RESULTS_H
#define TM_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

#define RESULTS_READ_MAX_SCHEMA 1

struct results_invocation {
  char id[64];          /* identity id ("" when the lines carry none) */
  const char *source;   /* path of the file its first line came from (owned by results) */
  size_t line;          /* 1-based line number of that first line in source */
  const char *identity_source; /* file and line of the identity line */
  size_t identity_line;
  json_t *identity;     /* the identity line, or NULL */
  json_t **runs;        /* "run" lines in file order */
  size_t n_runs;
  json_t **summaries;   /* "summary" lines in file order */
  size_t n_summaries;
  json_t *end;          /* the "end" line, or NULL (the invocation died) */
  json_t **loads;       /* "load" lines (tokmeter load: one per level), in file order */
  size_t n_loads;
  json_t **requests;    /* the "load" objects of "request" lines (one sample each,
                           record/load_record.h; checked), in file order */
  size_t n_requests;
};

struct results {
  struct results_invocation *inv;
  size_t n_inv;
  size_t n_lines;       /* records read (all kinds, skipped ones included) */
  char **sources;       /* the paths given, copied */
  size_t n_sources;
  size_t *n_lines_by_source; /* records read from sources[i] (all kinds): a file
                              * whose lines all joined an invocation of an
                              * earlier file is not empty */
  /* A file whose LAST line was cut (no newline, not a whole record: a full
   * disk, a killed writer) after at least one whole record: that line is
   * skipped and every record before it read (a file of one broken line is
   * corrupt, not cut); this says which ("FILE:LINE: ..."), for the caller to warn. ""
   * when no file was cut. A broken line anywhere else is still an error. */
  char torn_note[600];
};

/* Reads every file in order ("-" = stdin). 0, or -1 with err ("FILE:LINE:
 * problem"); out is left empty (results_free-able) on failure. A cut last
 * line is skipped (out->torn_note says so), not an error. */
int results_load(const char *const *paths, size_t n_paths, struct results *out,
                 struct tm_err *err);
void results_free(struct results *r);

/* Small accessors NULL-safe along the path: "model.type", "rate_tok_s.median".
 * json_path returns the value or NULL; json_path_num returns NAN when absent,
 * null or not a number; json_path_str returns NULL when absent or not a
 * string; json_path_int returns def when absent or not an integer. */
json_t *json_path(json_t *obj, const char *dotted);
double json_path_num(json_t *obj, const char *dotted);
const char *json_path_str(json_t *obj, const char *dotted);
long long json_path_int(json_t *obj, const char *dotted, long long def);

#endif
