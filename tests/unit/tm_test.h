/* tm_test: the unit-test harness. Each test file defines tm_run_tests(), which
 * calls TM_RUN(fn) for each test function. main() (tm_test.c) makes a fresh
 * temporary directory, points TOKMETER_CACHE_DIR at it, runs the tests, prints one
 * line per failed check and a summary, and exits non-zero when any check failed.
 * Checks never abort: a test keeps going so one run shows every failure.
 * Tests of the engine (built with TM_TEST_KERNELS) run on the kernel set
 * TOKMETER_KERNELS names: the whole binary is SKIPPED when this CPU cannot
 * run it (src/engine/kernels.h). */
#ifndef TM_TEST_H
#define TM_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int tm_test_checks;
extern int tm_test_failures;

void tm_run_tests(void);
void tm_test_run_one(const char *name, void (*fn)(void));
/* A fresh directory unique to this test process (removed at exit). */
const char *tm_test_tmpdir(void);
/* Path of a file in tests/fixtures, in a static buffer rotated over 8 slots. */
const char *tm_fixture(const char *relative);
/* Path of a new file name inside tm_test_tmpdir(), rotated over 8 slots. */
const char *tm_tmpfile(const char *name);

#define TM_RUN(fn) tm_test_run_one(#fn, fn)

/* Ends the running test function as skipped, with the reason (printed in place
 * of "ok"): for a path this CPU, OS or kernel set cannot run, never a silent
 * return. A test binary that skipped something and checked nothing exits 77,
 * which CTest reports as SKIPPED (SKIP_RETURN_CODE). */
void tm_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define TM_SKIP(...)                                                           \
  do {                                                                         \
    tm_test_skip(__VA_ARGS__);                                                 \
    return;                                                                    \
  } while (0)
/* The exit code of a test that could check nothing on this machine. */
#define TM_TEST_SKIPPED 77

#define TM_FAIL_(...)                                                          \
  do {                                                                         \
    tm_test_failures++;                                                        \
    fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                      \
    fprintf(stderr, __VA_ARGS__);                                              \
    fputc('\n', stderr);                                                       \
  } while (0)

#define CHECK(cond)                                                            \
  do {                                                                         \
    tm_test_checks++;                                                          \
    if (!(cond)) TM_FAIL_("%s", #cond);                                        \
  } while (0)

#define CHECK_MSG(cond, ...)                                                   \
  do {                                                                         \
    tm_test_checks++;                                                          \
    if (!(cond)) TM_FAIL_(__VA_ARGS__);                                        \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    tm_test_checks++;                                                          \
    if (a_ != b_) TM_FAIL_("%s == %s (%lld vs %lld)", #a, #b, a_, b_);         \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                     \
  do {                                                                         \
    uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                           \
    tm_test_checks++;                                                          \
    if (a_ != b_)                                                              \
      TM_FAIL_("%s == %s (%" PRIu64 " vs %" PRIu64 ")", #a, #b, a_, b_);       \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                  \
  do {                                                                         \
    double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);             \
    tm_test_checks++;                                                          \
    if (!(fabs(a_ - b_) <= t_))                                                \
      TM_FAIL_("%s ~= %s (%.9g vs %.9g, tol %.3g)", #a, #b, a_, b_, t_);       \
  } while (0)

#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    const char *a_ = (a), *b_ = (b);                                           \
    tm_test_checks++;                                                          \
    if (!a_ || !b_ || strcmp(a_, b_) != 0)                                     \
      TM_FAIL_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_ ? a_ : "(null)",      \
               b_ ? b_ : "(null)");                                            \
  } while (0)

/* The message contains the substring. */
#define CHECK_CONTAINS(hay, needle)                                            \
  do {                                                                         \
    const char *h_ = (hay), *n_ = (needle);                                    \
    tm_test_checks++;                                                          \
    if (!h_ || !strstr(h_, n_))                                                \
      TM_FAIL_("\"%s\" should contain \"%s\"", h_ ? h_ : "(null)", n_);        \
  } while (0)

#endif
