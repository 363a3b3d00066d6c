/* tm_test: main() for every unit test; see tm_test.h. */
#include "tm_test.h"

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

int tm_test_checks;
int tm_test_failures;

static char tmpdir[256];

const char *tm_test_tmpdir(void) { return tmpdir; }

const char *tm_fixture(const char *relative) {
  static char slots[8][1024];
  static int next;
  char *p = slots[next++ % 8];
  const char *base = getenv("TOKMETER_FIXTURES");
#ifdef TOKMETER_FIXTURES_DIR
  if (!base) base = TOKMETER_FIXTURES_DIR;
#endif
  if (!base) base = "../shared/fixtures";
  /* A missing fixtures directory is a setup error, not forty test failures
   * (and crashes where a test reads what it expected to load): say so once.
   * Missing files inside it stay the test's business (error-path tests). */
  static int checked;
  if (!checked) {
    checked = 1;
    if (access(base, R_OK | X_OK) != 0) {
      fprintf(stderr, "tm_test: the fixtures directory %s is missing (TOKMETER_FIXTURES, or "
                      "../shared/fixtures next to the repository)\n", base);
      exit(2);
    }
  }
  snprintf(p, 1024, "%s/%s", base, relative);
  return p;
}

const char *tm_tmpfile(const char *name) {
  static char slots[8][1024];
  static int next;
  char *p = slots[next++ % 8];
  snprintf(p, 1024, "%s/%s", tmpdir, name);
  return p;
}

void tm_test_run_one(const char *name, void (*fn)(void)) {
  int before = tm_test_failures;
  fn();
  fprintf(stderr, "%-48s %s\n", name, tm_test_failures == before ? "ok" : "FAILED");
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/tokmeter-test-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 2;
  }
  char cache[300];
  snprintf(cache, sizeof cache, "%s/cache", tmpdir);
  setenv("TOKMETER_CACHE_DIR", cache, 1);
  tm_run_tests();
  nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  fprintf(stderr, "%d checks, %d failed\n", tm_test_checks, tm_test_failures);
  if (tm_test_checks == 0) {
    fprintf(stderr, "no checks ran: a test that asserts nothing is a defect\n");
    return 1;
  }
  return tm_test_failures ? 1 : 0;
}
