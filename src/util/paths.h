/* paths: the user's cache directory and small file helpers.
 * Cache directory: $TOKMETER_CACHE_DIR, else $XDG_CACHE_HOME/tokmeter, else
 * $HOME/.cache/tokmeter; created (with parents) when missing. */
#ifndef TM_PATHS_H
#define TM_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

int tm_cache_dir(char *buf, size_t n, struct tm_err *err);
/* mkdir -p; existing directories are fine. */
int tm_mkdirs(const char *path, struct tm_err *err);
/* The directory a new file at path would go into ("." for a bare name, "/"
 * for "/x"), whether it exists and is a directory: true, or false with dir
 * still filled (for the message). dir of n bytes. */
bool tm_parent_dir_exists(const char *path, char *dir, size_t n);
/* Writes the whole buffer to path atomically (temp file + rename). */
int tm_write_file_atomic(const char *path, const void *data, size_t len, struct tm_err *err);

#endif
