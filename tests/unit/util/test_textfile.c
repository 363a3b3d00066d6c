/* Tests for src/util/textfile.c: a prompt file read as text, and each kind
 * of file that is not: missing, empty, too large, with a NUL, not UTF-8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tm_test.h"
#include "util/textfile.h"

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

static void test_text_and_refusals(void) {
  char path[] = "/tmp/tm_textfile_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  struct tm_err err = {{0}};
  write_file(path, "h\xc3\xa9llo\n", 7);
  char *t = tm_read_text_file(path, 1024, &err);
  CHECK(t && strcmp(t, "h\xc3\xa9llo\n") == 0);
  free(t);
  write_file(path, "", 0);
  CHECK(tm_read_text_file(path, 1024, &err) == NULL);
  CHECK(strstr(err.msg, "empty file") != NULL);
  write_file(path, "a\0b", 3);
  CHECK(tm_read_text_file(path, 1024, &err) == NULL);
  CHECK(strstr(err.msg, "NUL byte") != NULL);
  write_file(path, "\xff\xfe", 2);
  CHECK(tm_read_text_file(path, 1024, &err) == NULL);
  CHECK(strstr(err.msg, "not UTF-8") != NULL);
  write_file(path, "abcdef", 6);
  CHECK(tm_read_text_file(path, 5, &err) == NULL);
  CHECK(strstr(err.msg, "larger than") != NULL);
  unlink(path);
  CHECK(tm_read_text_file(path, 1024, &err) == NULL);
  CHECK(strstr(err.msg, path) != NULL);
}

void tm_run_tests(void) { TM_RUN(test_text_and_refusals); }
