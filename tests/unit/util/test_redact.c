/* Tests of the one scrub (util/redact.h): the key whole and in fragments (a
 * message cut in the middle of the key), URL passwords, the generic patterns,
 * and bytes that are not UTF-8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm_test.h"
#include "util/redact.h"

static const char KEY[] = "sk-test-SECRET-0123456789abcdef";

static void test_whole_key(void) {
  char m[256];
  snprintf(m, sizeof m, "Invalid key Bearer-less %s, try again", KEY);
  tm_redact(m, sizeof m, KEY);
  CHECK(strstr(m, "SECRET") == NULL);
  CHECK_STR(m, "Invalid key Bearer-less [redacted], try again");
  /* a short key: only whole */
  snprintf(m, sizeof m, "abc and abcd");
  tm_redact(m, sizeof m, "abcd");
  CHECK_STR(m, "abc and [redacted]");
}

static void test_fragment_at_cut(void) {
  /* A message cut after 22 characters of the key (the truncation of an error
   * body): the prefix must go. */
  char m[256];
  snprintf(m, sizeof m, "HTTP 401: xxxx token %.22s", KEY);
  tm_redact(m, sizeof m, KEY);
  CHECK(strstr(m, "SECRET") == NULL && strstr(m, "0123") == NULL);
  CHECK_STR(m, "HTTP 401: xxxx token [redacted]");
  /* a short prefix at the very end of the text */
  snprintf(m, sizeof m, "token sk-t");
  tm_redact(m, sizeof m, KEY);
  CHECK_STR(m, "token [redacted]");
  /* a fragment from the middle (the text cut at its start) */
  snprintf(m, sizeof m, "%s tail", KEY + 9);
  tm_redact(m, sizeof m, KEY);
  CHECK_STR(m, "[redacted] tail");
  /* ordinary words that share a few characters with the key stay */
  snprintf(m, sizeof m, "test the SECRET sauce");
  tm_redact(m, sizeof m, KEY);
  CHECK_STR(m, "test the SECRET sauce");
}

static void test_userinfo_and_generic(void) {
  char m[256];
  snprintf(m, sizeof m, "tokmeter bench --url http://alice:hunter2pass@host:8080/x -r 3");
  tm_redact(m, sizeof m, NULL);
  CHECK_STR(m, "tokmeter bench --url http://host:8080/x -r 3");
  snprintf(m, sizeof m, "sent Authorization: Bearer abc.def, got 403; key=zz");
  tm_redact(m, sizeof m, NULL);
  CHECK_STR(m, "sent Authorization: Bearer [redacted], got 403; key=[redacted]");
}

static void test_utf8(void) {
  CHECK(tm_utf8_valid("h\xc3\xa9llo", 6));
  CHECK(!tm_utf8_valid("h\xff", 2));
  CHECK(!tm_utf8_valid("\xc0\xaf", 2));     /* overlong */
  CHECK(!tm_utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
  char m[32] = "a\xff" "b\xc3";
  tm_redact(m, sizeof m, NULL);
  CHECK_STR(m, "a?b?");
  /* the result is cut to the buffer at a character boundary */
  char small[6];
  snprintf(small, sizeof small, "ab\xc3\xa9z");
  tm_redact(small, 4, NULL);
  CHECK_STR(small, "ab");
}

void tm_run_tests(void) {
  TM_RUN(test_whole_key);
  TM_RUN(test_fragment_at_cut);
  TM_RUN(test_userinfo_and_generic);
  TM_RUN(test_utf8);
}
