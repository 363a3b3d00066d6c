/* expect: a workload job's expected answer (its "expect" object) and the
 * check of a reply against it, owned here so every backend and every
 * reader judges answers one way (docs/workloads.md, "Expected answers").
 *
 * Kinds, one per expectation:
 *   {"equals": "yes"}        the whole answer, normalized, with leading and
 *                            trailing punctuation dropped ("**Yes.**" is yes)
 *   {"one_of": ["yes", "evet"]}  equals one of the strings
 *   {"contains": "paris"}    the normalized text occurs in the normalized answer
 *   {"regex": "^(yes|y)\\b"} POSIX extended, case-insensitive, searched in the
 *                            normalized answer (write it for folded text)
 *   {"json": {"path": "$.city", "equals": "İstanbul"}}  the answer parsed as
 *                            JSON (a fenced ``` block, or the first {...} or
 *                            [...] in it, tolerated), the value at the path
 *                            ($, .key, [N], ["key"]) equal to `equals`:
 *                            strings normalized, numbers within "tolerance"
 *   {"number": 0.4615, "tolerance": 0.001}  the answer's last number
 * Normalization is normalize.h's (compatibility forms, full case folding,
 * marks removed, whitespace collapsed); "exact": true on any kind compares
 * NFC strings as they are instead (and a case-sensitive regex).
 *
 * A verdict is "correct", "wrong" or "no_answer" (an empty reply: nothing
 * after the reasoning, or the budget spent before any answer). The caller
 * passes the answer text only, never the reasoning. */
#ifndef TM_WORKLOAD_EXPECT_H
#define TM_WORKLOAD_EXPECT_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

enum expect_kind { EXPECT_EQUALS, EXPECT_ONE_OF, EXPECT_CONTAINS, EXPECT_REGEX, EXPECT_JSON,
                   EXPECT_NUMBER };

struct expectation {
  enum expect_kind kind;
  bool exact;
  char *text;          /* equals, contains: as given; regex: the pattern */
  char **options;      /* one_of */
  size_t n_options;
  char *json_path;     /* json */
  json_t *json_equals; /* json: the expected value (owned) */
  double number;       /* number */
  double tolerance;    /* number, json numbers: |got - want| <= tolerance */
  regex_t re;          /* regex, compiled */
  bool re_compiled;
};

/* Parses an "expect" value. 0, or -1 with a one-line reason in err (no
 * file or line: the caller adds them). *e is zeroed first; free it with
 * expect_free either way. */
int expect_parse(const json_t *v, struct expectation *e, char *err, size_t errn);
void expect_free(struct expectation *e);
/* The kind's key ("equals", "one_of", ...). */
const char *expect_kind_name(enum expect_kind k);

enum answer_verdict { ANSWER_CORRECT, ANSWER_WRONG, ANSWER_NO_ANSWER };
const char *answer_verdict_name(enum answer_verdict v); /* "correct", "wrong", "no_answer" */

struct answer_check {
  enum answer_verdict verdict;
  char *answer;   /* what was compared: the normalized answer (or its JSON value, or number) */
  char *expected; /* the normalized expectation */
  char *reason;   /* why wrong, when it is not a plain mismatch ("not JSON"); NULL otherwise */
};

/* Judges `answer` (UTF-8; NULL or empty: no answer). 0, or -1 only when out
 * of memory. Invalid UTF-8 in the answer is a wrong answer with its reason. */
int expect_check(const struct expectation *e, const char *answer, struct answer_check *out);
void answer_check_free(struct answer_check *c);
/* The run record's "answer" object: verdict, kind, answer, expected, reason
 * (null when none). */
json_t *answer_check_json(const struct expectation *e, const struct answer_check *c);

#endif
