/* input: a whole input file (or stdin) read into memory, for commands that
 * parse what another tool wrote (llama-bench output for `tokmeter import`).
 * Bytes as they are: no NUL is added and none is refused; the size is
 * bounded so a wrong file (a model, a device) is refused instead of filling
 * memory. */
#ifndef TM_INPUT_H
#define TM_INPUT_H

#include <stddef.h>

#include "util/err.h"

/* Reads path ("-" = stdin, which is not closed) to its end. The bytes,
 * malloc'd, not NUL-terminated, with *len their count; or NULL with err:
 * "cannot read PATH: <strerror>", "out of memory reading PATH", or, when the
 * input holds max_bytes bytes or more (max_bytes >= 1), "PATH is larger than
 * N MiB: not WHAT" (N = max_bytes / 2^20, WHAT = what, e.g. "llama-bench
 * output"). */
char *tm_read_input(const char *path, size_t max_bytes, const char *what, size_t *len,
                    struct tm_err *err);

#endif
