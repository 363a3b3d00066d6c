/* Tests for tm_clean_control (src/util/redact.c): control bytes become '?',
 * UTF-8 and printable ASCII stay. */
#include <string.h>

#include "tm_test.h"
#include "util/redact.h"

static void test_clean(void) {
  char s[] = "ok \x1b[31mred\x1b[0m\r\n\a\x7f caf\xc3\xa9 \xe2\x9c\x93";
  tm_clean_control(s);
  CHECK_STR(s, "ok ?[31mred?[0m???? caf\xc3\xa9 \xe2\x9c\x93");
  char e[] = "";
  tm_clean_control(e);
  CHECK_STR(e, "");
  tm_clean_control(NULL); /* harmless */
}

void tm_run_tests(void) { TM_RUN(test_clean); }
