/* series_file: one results file read and flattened into series (results.h,
 * then series.h), for the commands that take a file per side: `compare A B`
 * and `decide --results FILE`. What makes a file unusable is said once here,
 * the same way for both. */
#ifndef TM_SERIES_FILE_H
#define TM_SERIES_FILE_H

#include <stdbool.h>

#include "analysis/results.h"
#include "analysis/series.h"
#include "util/err.h"

/* Reads path ("-" = stdin) into r and flattens it into set; the series borrow
 * from r, so free set before r. 0; or -1 with err and both left empty
 * (nothing held; freeing them is harmless): the file's problem (results_load's "PATH:LINE: ...", or
 * "no records in PATH" for a file without any record), or, with
 * *out_of_memory set, no memory. A file whose records hold no timed
 * successful run loads (set->n 0): each command words that itself. */
int series_file_load(const char *path, struct results *r, struct series_set *set,
                     bool *out_of_memory, struct tm_err *err);

#endif
