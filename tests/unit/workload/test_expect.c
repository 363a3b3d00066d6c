/* test_expect: answer normalization and every kind of expectation, with the
 * traps the checks exist for: İ (full case folding alone leaves i plus a
 * combining dot), ß, fullwidth digits, combining marks, zero-width and
 * no-break spaces, fenced JSON, numbers with separators and signs; and the
 * refusal of bad "expect" values with a reason. */
#include <stdlib.h>
#include <string.h>

#include "tm_test.h"
#include "workload/expect.h"
#include "workload/normalize.h"

static void check_norm(const char *in, const char *want) {
  char *got = answer_normalize(in);
  CHECK_MSG(got && !strcmp(got, want), "normalize(\"%s\") = \"%s\", want \"%s\"", in,
            got ? got : "(null)", want);
  free(got);
}

static void test_normalize(void) {
  check_norm("İstanbul", "istanbul");
  check_norm("ISTANBUL", "istanbul");
  check_norm("istanbul", "istanbul");
  check_norm("Straße", "strasse");
  check_norm("STRASSE", "strasse");
  check_norm("１２３４", "1234");        /* fullwidth digits */
  check_norm("Ｐａｎｅｌ", "panel");     /* fullwidth letters */
  check_norm("café", "cafe");             /* precomposed é */
  check_norm("cafe\xcc\x81", "cafe");     /* e + combining acute */
  check_norm("  yes \t\n no  ", "yes no");
  check_norm("a\xc2\xa0" "b", "a b");     /* no-break space */
  check_norm("zero\xe2\x80\x8bwidth", "zerowidth");
  check_norm("ﬁne", "fine");              /* ligature */
  check_norm("x\xe2\x88\x92" "2", "x-2"); /* minus sign lumped */
  check_norm("", "");
  char *bad = answer_normalize("\xff\xfe");
  CHECK(bad == NULL);
  free(bad);
  char *w = answer_normalize_word("  **Yes.**  ");
  CHECK_STR(w, "yes");
  free(w);
  w = answer_normalize_word("\"Evet!\"");
  CHECK_STR(w, "evet");
  free(w);
  w = answer_normalize_word("...");
  CHECK_STR(w, "");
  free(w);
  /* exact: NFC only, as it is */
  char *n = answer_nfc("Cafe\xcc\x81 ");
  CHECK_STR(n, "Caf\xc3\xa9 ");
  free(n);
}

/* Parses spec, checks answer, expects verdict v (and, when given, the
 * normalized answer shown). */
static void check_one(const char *spec, const char *answer, enum answer_verdict v,
                      const char *shown) {
  json_error_t je;
  json_t *j = json_loads(spec, 0, &je);
  CHECK_MSG(j != NULL, "bad test spec %s", spec);
  struct expectation e;
  char err[256] = "";
  int rc = expect_parse(j, &e, err, sizeof err);
  CHECK_MSG(rc == 0, "expect_parse(%s): %s", spec, err);
  if (rc == 0) {
    struct answer_check c;
    CHECK_EQ_INT(expect_check(&e, answer, &c), 0);
    CHECK_MSG(c.verdict == v, "%s on \"%s\": %s (answer \"%s\", expected \"%s\", reason %s), want %s",
              spec, answer ? answer : "(null)", answer_verdict_name(c.verdict),
              c.answer ? c.answer : "(null)", c.expected ? c.expected : "(null)",
              c.reason ? c.reason : "-", answer_verdict_name(v));
    if (shown) CHECK_MSG(c.answer && !strcmp(c.answer, shown), "shown \"%s\", want \"%s\"",
                         c.answer ? c.answer : "(null)", shown);
    json_t *rec = answer_check_json(&e, &c);
    CHECK(rec && !strcmp(json_string_value(json_object_get(rec, "verdict")),
                         answer_verdict_name(v)));
    json_decref(rec);
    answer_check_free(&c);
  }
  expect_free(&e);
  json_decref(j);
}

static void test_equals_and_one_of(void) {
  check_one("{\"equals\": \"yes\"}", "Yes.", ANSWER_CORRECT, "yes");
  check_one("{\"equals\": \"yes\"}", "**YES**", ANSWER_CORRECT, "yes");
  check_one("{\"equals\": \"yes\"}", "No.", ANSWER_WRONG, "no");
  check_one("{\"equals\": \"yes\"}", "yes, it is a panel", ANSWER_WRONG, NULL);
  check_one("{\"equals\": \"İstanbul\"}", "ISTANBUL", ANSWER_CORRECT, "istanbul");
  check_one("{\"equals\": \"istanbul\"}", "İstanbul", ANSWER_CORRECT, NULL);
  check_one("{\"equals\": \"Straße\"}", "STRASSE", ANSWER_CORRECT, NULL);
  check_one("{\"equals\": \"42\"}", "４２", ANSWER_CORRECT, "42");
  check_one("{\"equals\": \"yes\"}", "", ANSWER_NO_ANSWER, NULL);
  check_one("{\"equals\": \"yes\"}", NULL, ANSWER_NO_ANSWER, NULL);
  check_one("{\"equals\": \"yes\"}", " \n\t ", ANSWER_NO_ANSWER, NULL);
  check_one("{\"equals\": \"yes\"}", "\xff", ANSWER_WRONG, NULL);
  check_one("{\"equals\": \"İstanbul\", \"exact\": true}", "Istanbul", ANSWER_WRONG, NULL);
  check_one("{\"equals\": \"Café\", \"exact\": true}", "Cafe\xcc\x81", ANSWER_CORRECT, NULL);
  check_one("{\"one_of\": [\"yes\", \"evet\"]}", "Evet.", ANSWER_CORRECT, "evet");
  check_one("{\"one_of\": [\"yes\", \"evet\"]}", "hayır", ANSWER_WRONG, NULL);
}

static void test_contains_and_regex(void) {
  check_one("{\"contains\": \"electricity meter\"}", "It is an ELECTRICITY  meter, clearly.",
            ANSWER_CORRECT, NULL);
  check_one("{\"contains\": \"gas\"}", "an electricity meter", ANSWER_WRONG, NULL);
  check_one("{\"contains\": \"istanbul\"}", "The city is İstanbul.", ANSWER_CORRECT, NULL);
  check_one("{\"regex\": \"^(yes|y)\\\\b\"}", "Yes, it is.", ANSWER_CORRECT, NULL);
  check_one("{\"regex\": \"^(yes|y)\\\\b\"}", "No", ANSWER_WRONG, NULL);
  check_one("{\"regex\": \"^Yes\", \"exact\": true}", "yes", ANSWER_WRONG, NULL);
}

static void test_number(void) {
  check_one("{\"number\": 0.4615, \"tolerance\": 0.001}", "6/13 is about 0.4615.", ANSWER_CORRECT,
            "0.4615");
  check_one("{\"number\": 0.4615, \"tolerance\": 0.001}", "0.47", ANSWER_WRONG, NULL);
  check_one("{\"number\": 1234}", "The total is 1,234 apples.", ANSWER_CORRECT, "1234");
  check_one("{\"number\": -3}", "x = \xe2\x88\x92" "3", ANSWER_CORRECT, "-3");
  check_one("{\"number\": 17}", "Step 1: 4 + 5 = 9. Step 2: 9 + 8 = 17", ANSWER_CORRECT, "17");
  check_one("{\"number\": 12}", "１２", ANSWER_CORRECT, NULL);
  check_one("{\"number\": 2.5e3}", "2.5e3", ANSWER_CORRECT, "2500");
  check_one("{\"number\": 5}", "five", ANSWER_WRONG, NULL);
  check_one("{\"number\": 5}", "", ANSWER_NO_ANSWER, NULL);
}

static void test_json(void) {
  const char *city = "{\"json\": {\"path\": \"$.city\", \"equals\": \"İstanbul\"}}";
  check_one(city, "{\"city\": \"ISTANBUL\"}", ANSWER_CORRECT, "istanbul");
  check_one(city, "Here it is:\n```json\n{\"city\": \"istanbul\", \"n\": 1}\n```\nDone.",
            ANSWER_CORRECT, NULL);
  check_one(city, "Sure! {\"city\": \"Ankara\"} is my answer", ANSWER_WRONG, "ankara");
  check_one(city, "{\"town\": \"İstanbul\"}", ANSWER_WRONG, NULL);
  check_one(city, "İstanbul", ANSWER_WRONG, NULL); /* not JSON */
  check_one("{\"json\": {\"path\": \"$.items[1].qty\", \"equals\": 3}}",
            "{\"items\": [{\"qty\": 1}, {\"qty\": 3}]}", ANSWER_CORRECT, NULL);
  check_one("{\"json\": {\"path\": \"$[\\\"meter type\\\"]\", \"equals\": \"electricity\"}}",
            "{\"meter type\": \"Electricity\"}", ANSWER_CORRECT, NULL);
  check_one("{\"json\": {\"path\": \"$.v\", \"equals\": 0.5}, \"tolerance\": 0.01}",
            "{\"v\": 0.505}", ANSWER_CORRECT, NULL);
  check_one("{\"json\": {\"path\": \"$.v\", \"equals\": 0.5}}", "{\"v\": 0.505}", ANSWER_WRONG,
            NULL);
  check_one("{\"json\": {\"path\": \"$.ok\", \"equals\": true}}", "{\"ok\": true}", ANSWER_CORRECT,
            NULL);
  check_one("{\"json\": {\"path\": \"$.ok\", \"equals\": true}}", "{\"ok\": \"true\"}",
            ANSWER_WRONG, NULL);
}

static void check_refused(const char *spec, const char *needle) {
  json_t *j = json_loads(spec, JSON_DECODE_ANY, NULL);
  CHECK_MSG(j != NULL, "bad test spec %s", spec);
  struct expectation e;
  char err[256] = "";
  CHECK_MSG(expect_parse(j, &e, err, sizeof err) == -1, "%s was accepted", spec);
  CHECK_MSG(strstr(err, needle) != NULL, "%s: \"%s\" does not say \"%s\"", spec, err, needle);
  CHECK(strchr(err, '\n') == NULL);
  expect_free(&e);
  json_decref(j);
}

static void test_bad_expectations(void) {
  check_refused("\"yes\"", "must be an object");
  check_refused("{}", "no kind");
  check_refused("{\"equals\": \"a\", \"contains\": \"b\"}", "one kind");
  check_refused("{\"equal\": \"a\"}", "unknown key \"equal\"");
  check_refused("{\"equals\": 3}", "\"equals\" must be a string");
  check_refused("{\"equals\": \"\"}", "must not be empty");
  check_refused("{\"one_of\": []}", "non-empty array");
  check_refused("{\"one_of\": [\"a\", 2]}", "strings only");
  check_refused("{\"regex\": \"(\"}", "does not compile");
  check_refused("{\"number\": \"5\"}", "\"number\" must be a number");
  check_refused("{\"number\": 5, \"tolerance\": -1}", "tolerance");
  check_refused("{\"equals\": \"a\", \"tolerance\": 1}", "goes with");
  check_refused("{\"equals\": \"a\", \"exact\": 1}", "true or false");
  check_refused("{\"json\": {\"path\": \"city\", \"equals\": 1}}", "is not $");
  check_refused("{\"json\": {\"path\": \"$.a[x]\", \"equals\": 1}}", "is not $");
  check_refused("{\"json\": {\"path\": \"$.a\"}}", "\"json\" must be");
}

void tm_run_tests(void) {
  TM_RUN(test_normalize);
  TM_RUN(test_equals_and_one_of);
  TM_RUN(test_contains_and_regex);
  TM_RUN(test_number);
  TM_RUN(test_json);
  TM_RUN(test_bad_expectations);
}
