/* test_input: tm_read_input, a whole input into memory: the bytes as they
 * are (a NUL inside kept), an empty file, the size limit (an input that
 * fills max_bytes is refused, one byte less is read), and errors naming the
 * path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm_test.h"
#include "util/input.h"

static const char *write_bytes(const char *name, const char *data, size_t n) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  fwrite(data, 1, n, f);
  fclose(f);
  return path;
}

static void reads_the_bytes(void) {
  struct tm_err err = {{0}};
  size_t len = 99;
  const char *p = write_bytes("a.json", "[1,\0 2]", 7);
  char *buf = tm_read_input(p, 1 << 20, "test input", &len, &err);
  CHECK(buf != NULL);
  CHECK_EQ_INT(len, 7);
  CHECK(buf && memcmp(buf, "[1,\0 2]", 7) == 0);
  free(buf);
  p = write_bytes("empty.json", "", 0);
  buf = tm_read_input(p, 1 << 20, "test input", &len, &err);
  CHECK(buf != NULL);
  CHECK_EQ_INT(len, 0);
  free(buf);
}

static void bounded(void) {
  struct tm_err err = {{0}};
  size_t len = 0, max = 3u << 20; /* not a power of two: the bound is exact */
  char *big = calloc(1, max);
  CHECK(big != NULL);
  if (!big) return;
  const char *p = write_bytes("just-under.bin", big, max - 1);
  char *buf = tm_read_input(p, max, "test input", &len, &err);
  CHECK(buf != NULL);
  CHECK_EQ_INT(len, max - 1);
  free(buf);
  p = write_bytes("full.bin", big, max);
  buf = tm_read_input(p, max, "test input", &len, &err);
  CHECK(buf == NULL);
  char want[600];
  snprintf(want, sizeof want, "%s is larger than 3 MiB: not test input", p);
  CHECK_STR(err.msg, want);
  free(big);
}

static void errors_name_the_path(void) {
  struct tm_err err = {{0}};
  size_t len = 0;
  const char *missing = tm_tmpfile("missing.json");
  CHECK(tm_read_input(missing, 1 << 20, "x", &len, &err) == NULL);
  char want[600];
  snprintf(want, sizeof want, "cannot read %s: No such file or directory", missing);
  CHECK_STR(err.msg, want);
  const char *dir = tm_test_tmpdir();
  CHECK(tm_read_input(dir, 1 << 20, "x", &len, &err) == NULL);
  snprintf(want, sizeof want, "cannot read %s: Is a directory", dir);
  CHECK_STR(err.msg, want);
}

void tm_run_tests(void) {
  TM_RUN(reads_the_bytes);
  TM_RUN(bounded);
  TM_RUN(errors_name_the_path);
}
