/* Cache directory selection order and creation; atomic writes. */
#include <stdlib.h>
#include <sys/stat.h>

#include "tm_test.h"
#include "util/paths.h"

static void cache_dir_order(void) {
  char buf[1024];
  struct tm_err err;
  const char *saved = getenv("TOKMETER_CACHE_DIR");
  char keep[1024];
  snprintf(keep, sizeof keep, "%s", saved ? saved : "");

  setenv("TOKMETER_CACHE_DIR", tm_tmpfile("a/b/c"), 1);
  CHECK(tm_cache_dir(buf, sizeof buf, &err) == 0);
  CHECK_STR(buf, tm_tmpfile("a/b/c"));
  struct stat st;
  CHECK(stat(buf, &st) == 0 && S_ISDIR(st.st_mode));

  unsetenv("TOKMETER_CACHE_DIR");
  setenv("XDG_CACHE_HOME", tm_tmpfile("xdg"), 1);
  CHECK(tm_cache_dir(buf, sizeof buf, &err) == 0);
  char want[1100];
  snprintf(want, sizeof want, "%s/tokmeter", tm_tmpfile("xdg"));
  CHECK_STR(buf, want);

  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", tm_tmpfile("home"), 1);
  CHECK(tm_cache_dir(buf, sizeof buf, &err) == 0);
  snprintf(want, sizeof want, "%s/.cache/tokmeter", tm_tmpfile("home"));
  CHECK_STR(buf, want);

  setenv("TOKMETER_CACHE_DIR", keep, 1);
}

static void cache_dir_on_a_file_fails(void) {
  char buf[1024];
  struct tm_err err;
  const char *file = tm_tmpfile("plainfile");
  CHECK(tm_write_file_atomic(file, "x", 1, &err) == 0);
  CHECK(tm_mkdirs(file, &err) == -1);
  CHECK_CONTAINS(err.msg, "not a directory");
  (void)buf;
}

static void atomic_write(void) {
  struct tm_err err;
  const char *p = tm_tmpfile("atomic.txt");
  CHECK(tm_write_file_atomic(p, "hello", 5, &err) == 0);
  FILE *f = fopen(p, "rb");
  char got[16] = {0};
  CHECK(f && fread(got, 1, sizeof got, f) == 5);
  if (f) fclose(f);
  CHECK_STR(got, "hello");
  CHECK(tm_write_file_atomic("/nonexistent-dir/x", "a", 1, &err) == -1);
  CHECK_CONTAINS(err.msg, "cannot write");
}

void tm_run_tests(void) {
  TM_RUN(cache_dir_order);
  TM_RUN(cache_dir_on_a_file_fails);
  TM_RUN(atomic_write);
}
