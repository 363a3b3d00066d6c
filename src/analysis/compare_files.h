/* compare_files: `tokmeter compare A B` from the two paths to the judged rows:
 * each file read into series (series_file.h), the sides paired and judged
 * (compare_series), and the inputs that leave nothing to compare refused.
 * Library code: nothing is printed. */
#ifndef TM_COMPARE_FILES_H
#define TM_COMPARE_FILES_H

#include <stdbool.h>

#include "analysis/compare.h"
#include "analysis/results.h"
#include "analysis/series.h"
#include "util/err.h"

/* Both sides and their comparison; cr's rows borrow from sa and sb, which
 * borrow from ra and rb. */
struct compare_files {
  struct results ra, rb;
  struct series_set sa, sb;
  struct compare_result cr;
};

/* Reads a, then b (either may be "-", stdin), and compares them with o.
 * 0 with cf filled and cf->cr.n >= 1 (compare_files_free after). -1 with err
 * and nothing held: *out_of_memory set when memory ran out, else the inputs'
 * fault: a file series_file_load refuses, one with no timed successful run
 * ("no timed successful runs in PATH"), or no configuration on both sides
 * ("nothing to compare: no configuration of A matches one of B ..."). */
int compare_files_load(const char *a, const char *b, const struct compare_opts *o,
                       struct compare_files *cf, bool *out_of_memory, struct tm_err *err);
void compare_files_free(struct compare_files *cf);

#endif
