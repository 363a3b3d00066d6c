/* input: a whole file or stdin into memory; see input.h. */
#include "util/input.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tm_read_input(const char *path, size_t max_bytes, const char *what, size_t *len,
                    struct tm_err *err) {
  *len = 0;
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) {
    tm_errf(err, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  /* The buffer doubles from 64 KiB up to max_bytes; an input that fills
   * max_bytes is refused. */
  size_t cap = max_bytes < (1u << 16) ? max_bytes : (1u << 16), n = 0;
  bool refused = false;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n == cap) {
      if (cap >= max_bytes) {
        tm_errf(err, "%s is larger than %zu MiB: not %s", path, max_bytes >> 20, what);
        refused = true;
        free(buf);
        buf = NULL;
        break;
      }
      size_t next = cap > max_bytes / 2 ? max_bytes : cap * 2;
      char *g = realloc(buf, next);
      if (!g) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = g;
      cap = next;
    }
  }
  if (!buf && !refused) tm_errf(err, "out of memory reading %s", path);
  if (buf && ferror(f)) {
    tm_errf(err, "cannot read %s: %s", path, strerror(errno));
    free(buf);
    buf = NULL;
  }
  if (f != stdin) fclose(f);
  *len = buf ? n : 0;
  return buf;
}
