/* tm_test: main() for every unit test; see tm_test.h. */
#include "tm_test.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef TM_TEST_KERNELS
#include "engine/kernels.h"
#endif

int tm_test_checks;
int tm_test_failures;
static int tm_test_skips;
static char skip_reason[300];

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
  if (!base) base = "tests/fixtures";
  /* A missing fixtures directory is a setup error, not forty test failures
   * (and crashes where a test reads what it expected to load): say so once.
   * Missing files inside it stay the test's business (error-path tests). */
  static int checked;
  if (!checked) {
    checked = 1;
    if (access(base, R_OK | X_OK) != 0) {
      fprintf(stderr, "tm_test: the fixtures directory %s is missing (TOKMETER_FIXTURES, or "
                      "the repository's tests/fixtures)\n", base);
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

void tm_test_skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(skip_reason, sizeof skip_reason, fmt, ap);
  va_end(ap);
}

void tm_test_run_one(const char *name, void (*fn)(void)) {
  int before = tm_test_failures;
  skip_reason[0] = 0;
  fn();
  if (tm_test_failures != before) fprintf(stderr, "%-48s FAILED\n", name);
  else if (skip_reason[0]) {
    tm_test_skips++;
    fprintf(stderr, "%-48s skipped: %s\n", name, skip_reason);
  } else fprintf(stderr, "%-48s ok\n", name);
  skip_reason[0] = 0;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

int main(void) {
#ifdef TM_TEST_KERNELS
  const char *why = kernels_forced_unavailable();
  if (!kernels_forced_known()) {
    fprintf(stderr, "tm_test: %s\n", why);
    return 2;
  }
  if (why) {
    fprintf(stderr, "SKIPPED: %s\n", why);
    return TM_TEST_SKIPPED;
  }
  if (kernels_forced_name()) fprintf(stderr, "kernel set: TOKMETER_KERNELS=%s\n", kernels_forced_name());
#endif
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
  fprintf(stderr, "%d checks, %d failed", tm_test_checks, tm_test_failures);
  if (tm_test_skips) fprintf(stderr, ", %d test%s skipped", tm_test_skips, tm_test_skips == 1 ? "" : "s");
  fputc('\n', stderr);
  if (tm_test_checks == 0 && tm_test_skips && !tm_test_failures) {
    fprintf(stderr, "SKIPPED: nothing here could run on this machine\n");
    return TM_TEST_SKIPPED;
  }
  if (tm_test_checks == 0) {
    fprintf(stderr, "no checks ran: a test that asserts nothing is a defect\n");
    return 1;
  }
  return tm_test_failures ? 1 : 0;
}
