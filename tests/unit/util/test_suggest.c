/* test_suggest: edit distances (swaps of neighbours count one) and the
 * typo rule: near words get a suggestion, far or short ones none. */
#include <stdint.h>
#include <string.h>

#include "tm_test.h"
#include "util/suggest.h"

static const char *const COMMANDS[] = {"bench", "load", "report", "compare", "whatif",
                                       "decide", "import", "ceiling", "probe", "synth"};
#define N_COMMANDS (sizeof COMMANDS / sizeof *COMMANDS)

static void test_distance(void) {
  CHECK(tm_edit_distance("bench", "bench") == 0);
  CHECK(tm_edit_distance("bnech", "bench") == 1);  /* a swap */
  CHECK(tm_edit_distance("benh", "bench") == 1);   /* a deletion */
  CHECK(tm_edit_distance("benchh", "bench") == 1); /* an insertion */
  CHECK(tm_edit_distance("banch", "bench") == 1);  /* a substitution */
  CHECK(tm_edit_distance("", "abc") == 3);
  CHECK(tm_edit_distance("kitten", "sitting") == 3);
  char long_word[80];
  memset(long_word, 'a', sizeof long_word - 1);
  long_word[sizeof long_word - 1] = '\0';
  CHECK(tm_edit_distance(long_word, "a") == SIZE_MAX);
}

static void test_suggest(void) {
  const char *s = tm_suggest("bnech", COMMANDS, N_COMMANDS);
  CHECK_MSG(s && !strcmp(s, "bench"), "bnech -> %s", s ? s : "(none)");
  s = tm_suggest("reprot", COMMANDS, N_COMMANDS);
  CHECK(s && !strcmp(s, "report"));
  s = tm_suggest("celing", COMMANDS, N_COMMANDS);
  CHECK(s && !strcmp(s, "ceiling"));
  CHECK(tm_suggest("xyzzy", COMMANDS, N_COMMANDS) == NULL);
  CHECK(tm_suggest("ld", COMMANDS, N_COMMANDS) == NULL); /* 2 of 2: not a typo */
  CHECK(tm_suggest("", COMMANDS, N_COMMANDS) == NULL);
}

void tm_run_tests(void) {
  TM_RUN(test_distance);
  TM_RUN(test_suggest);
}
