/* err: see err.h. */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tm_errf(struct tm_err *err, const char *fmt, ...) {
  if (!err) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int tm_err_prefix(struct tm_err *err, const char *fmt, ...) {
  if (!err) return -1;
  char prefix[128], old[sizeof err->msg - 130];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  size_t keep = strnlen(err->msg, sizeof old - 1);
  memcpy(old, err->msg, keep);
  old[keep] = 0;
  snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
  return -1;
}
