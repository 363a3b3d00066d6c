/* textfile: see textfile.h. */
#include "util/textfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/redact.h"

char *tm_read_text_file(const char *path, size_t max_bytes, struct tm_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    tm_errf(err, "%s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(max_bytes + 1);
  size_t n = buf ? fread(buf, 1, max_bytes + 1, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad || n > max_bytes || n == 0) {
    char limit[32];
    snprintf(limit, sizeof limit, "larger than %zu MiB", max_bytes >> 20);
    tm_errf(err, "%s: %s", path,
            !buf ? "out of memory" : bad ? "read error" : n == 0 ? "empty file" : limit);
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (strlen(buf) != n) {
    tm_errf(err, "%s: contains a NUL byte (not text)", path);
    free(buf);
    return NULL;
  }
  if (!tm_utf8_valid(buf, n)) {
    tm_errf(err, "%s: not UTF-8 text", path);
    free(buf);
    return NULL;
  }
  return buf;
}
