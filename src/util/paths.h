/* paths: the user's cache directory and small file helpers.
 * Cache directory: $TOKMETER_CACHE_DIR, else $XDG_CACHE_HOME/tokmeter, else
 * $HOME/.cache/tokmeter; created (with parents) when missing. */
#ifndef TM_PATHS_H
#define TM_PATHS_H

#include <stddef.h>

#include "util/err.h"

int tm_cache_dir(char *buf, size_t n, struct tm_err *err);
/* mkdir -p; existing directories are fine. */
int tm_mkdirs(const char *path, struct tm_err *err);
/* Writes the whole buffer to path atomically (temp file + rename). */
int tm_write_file_atomic(const char *path, const void *data, size_t len, struct tm_err *err);

#endif
