/* expect: see expect.h. */
#include "workload/expect.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/normalize.h"

static const char *const kind_names[] = {"equals", "one_of", "contains", "regex", "json", "number"};
#define N_KINDS (sizeof kind_names / sizeof kind_names[0])

const char *expect_kind_name(enum expect_kind k) {
  return (size_t)k < N_KINDS ? kind_names[k] : "?";
}

const char *answer_verdict_name(enum answer_verdict v) {
  return v == ANSWER_CORRECT ? "correct" : v == ANSWER_WRONG ? "wrong" : "no_answer";
}

void expect_free(struct expectation *e) {
  free(e->text);
  for (size_t i = 0; i < e->n_options; i++) free(e->options[i]);
  free(e->options);
  free(e->json_path);
  json_decref(e->json_equals);
  if (e->re_compiled) regfree(&e->re);
  memset(e, 0, sizeof *e);
}

static int fail(char *err, size_t n, const char *msg, const char *arg) {
  snprintf(err, n, msg, arg);
  return -1;
}

/* A JSON path: $ then .key, ["key"] or [N] steps. */
static bool path_valid(const char *p) {
  if (p[0] != '$') return false;
  p++;
  while (*p) {
    if (*p == '.') {
      size_t k = strcspn(p + 1, ".[");
      if (k == 0) return false;
      p += 1 + k;
    } else if (*p == '[') {
      const char *close = strchr(p, ']');
      if (!close || close == p + 1) return false;
      if (p[1] == '"' || p[1] == '\'') {
        if (close - p < 3 || close[-1] != p[1]) return false;
      } else {
        for (const char *d = p + 1; d < close; d++)
          if (!isdigit((unsigned char)*d)) return false;
      }
      p = close + 1;
    } else {
      return false;
    }
  }
  return true;
}

static int parse_tolerance(const json_t *v, struct expectation *e, char *err, size_t n) {
  const json_t *t = json_object_get(v, "tolerance");
  if (!t) return 0;
  if (!json_is_number(t) || !(json_number_value(t) >= 0) || !isfinite(json_number_value(t)))
    return fail(err, n, "expect: \"tolerance\" must be a number >= 0%s", "");
  e->tolerance = json_number_value(t);
  return 0;
}

int expect_parse(const json_t *v, struct expectation *e, char *err, size_t n) {
  memset(e, 0, sizeof *e);
  if (!json_is_object(v))
    return fail(err, n, "expect: must be an object such as {\"equals\": \"yes\"}%s", "");
  int found = -1;
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)v, key, val) {
    int k = -1;
    for (size_t i = 0; i < N_KINDS; i++)
      if (!strcmp(key, kind_names[i])) k = (int)i;
    if (k >= 0) {
      if (found >= 0) return fail(err, n, "expect: one kind per expectation (\"%s\" and another)", key);
      found = k;
    } else if (strcmp(key, "exact") && strcmp(key, "tolerance")) {
      return fail(err, n,
                  "expect: unknown key \"%s\" (equals, one_of, contains, regex, json, number, "
                  "exact, tolerance)",
                  key);
    }
  }
  if (found < 0)
    return fail(err, n, "expect: no kind (equals, one_of, contains, regex, json or number)%s", "");
  e->kind = (enum expect_kind)found;
  const json_t *ex = json_object_get(v, "exact");
  if (ex) {
    if (!json_is_boolean(ex)) return fail(err, n, "expect: \"exact\" must be true or false%s", "");
    e->exact = json_is_true(ex);
  }
  if (json_object_get(v, "tolerance") && e->kind != EXPECT_NUMBER && e->kind != EXPECT_JSON)
    return fail(err, n, "expect: \"tolerance\" goes with \"number\" or \"json\", not \"%s\"",
                kind_names[found]);
  const json_t *x = json_object_get(v, kind_names[found]);
  switch (e->kind) {
  case EXPECT_EQUALS:
  case EXPECT_CONTAINS:
  case EXPECT_REGEX:
    if (!json_is_string(x)) return fail(err, n, "expect: \"%s\" must be a string", kind_names[found]);
    if (e->kind != EXPECT_REGEX && json_string_length(x) == 0)
      return fail(err, n, "expect: \"%s\" must not be empty", kind_names[found]);
    e->text = strdup(json_string_value(x));
    if (!e->text) return fail(err, n, "out of memory%s", "");
    if (e->kind == EXPECT_REGEX) {
      int flags = REG_EXTENDED | REG_NOSUB | (e->exact ? 0 : REG_ICASE);
      int rc = regcomp(&e->re, e->text, flags);
      if (rc != 0) {
        char msg[128];
        regerror(rc, &e->re, msg, sizeof msg);
        return fail(err, n, "expect: \"regex\" does not compile: %s", msg);
      }
      e->re_compiled = true;
    }
    return 0;
  case EXPECT_ONE_OF: {
    if (!json_is_array(x) || json_array_size(x) == 0)
      return fail(err, n, "expect: \"one_of\" must be a non-empty array of strings%s", "");
    e->options = calloc(json_array_size(x), sizeof *e->options);
    if (!e->options) return fail(err, n, "out of memory%s", "");
    size_t i;
    json_t *o;
    json_array_foreach(x, i, o) {
      if (!json_is_string(o) || json_string_length(o) == 0)
        return fail(err, n, "expect: \"one_of\" must hold non-empty strings only%s", "");
      e->options[i] = strdup(json_string_value(o));
      e->n_options = i + 1;
      if (!e->options[i]) return fail(err, n, "out of memory%s", "");
    }
    return 0;
  }
  case EXPECT_NUMBER:
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
      return fail(err, n, "expect: \"number\" must be a number%s", "");
    e->number = json_number_value(x);
    return parse_tolerance(v, e, err, n);
  case EXPECT_JSON: {
    const json_t *p = json_object_get(x, "path"), *q = json_object_get(x, "equals");
    if (!json_is_object(x) || !json_is_string(p) || !q || json_object_size(x) != 2)
      return fail(err, n, "expect: \"json\" must be {\"path\": \"$.key\", \"equals\": value}%s", "");
    if (!path_valid(json_string_value(p)))
      return fail(err, n, "expect: json path \"%s\" is not $ followed by .key, [N] or [\"key\"]",
                  json_string_value(p));
    e->json_path = strdup(json_string_value(p));
    e->json_equals = json_deep_copy(q);
    if (!e->json_path || !e->json_equals) return fail(err, n, "out of memory%s", "");
    return parse_tolerance(v, e, err, n);
  }
  }
  return fail(err, n, "expect: unknown kind%s", "");
}

/* ---- checks ------------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* The strings a comparison sees: normalized, or NFC as they are. */
static char *norm_word(const struct expectation *e, const char *s) {
  return e->exact ? answer_nfc(s) : answer_normalize_word(s);
}
static char *norm_text(const struct expectation *e, const char *s) {
  return e->exact ? answer_nfc(s) : answer_normalize(s);
}

/* The last number in s (ASCII after normalization): an optional sign,
 * digits with optional thousands commas, an optional fraction and exponent.
 * False if there is none. */
static bool last_number(const char *s, double *out) {
  bool found = false;
  for (const char *p = s; *p;) {
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) {
      p++;
      continue;
    }
    const char *start = p;
    if (start > s && (start[-1] == '-' || start[-1] == '+')) start--;
    char buf[128];
    size_t k = 0;
    const char *q = start;
    if (*q == '-' || *q == '+') buf[k++] = *q++;
    bool seen_dot = false;
    while (*q && k < sizeof buf - 8) {
      if (isdigit((unsigned char)*q)) buf[k++] = *q++;
      else if (*q == ',' && isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2]) &&
               isdigit((unsigned char)q[3]) && !isdigit((unsigned char)q[4]) && !seen_dot)
        q++; /* a thousands separator */
      else if (*q == '.' && !seen_dot && isdigit((unsigned char)q[1])) {
        seen_dot = true;
        buf[k++] = *q++;
      } else
        break;
    }
    if ((*q == 'e' || *q == 'E') &&
        (isdigit((unsigned char)q[1]) || ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
      buf[k++] = *q++;
      if (*q == '-' || *q == '+') buf[k++] = *q++;
      while (isdigit((unsigned char)*q) && k < sizeof buf - 1) buf[k++] = *q++;
    }
    buf[k] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf && isfinite(v)) {
      *out = v;
      found = true;
    }
    p = q > p ? q : p + 1;
  }
  return found;
}

static bool within(double got, double want, double tol) {
  if (tol > 0) return fabs(got - want) <= tol;
  return fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
}

/* The shortest form of v that reads back the same: plain decimals for
 * magnitudes people write that way (2500, not 2.5e+03), %g otherwise. */
static char *format_number(double v) {
  char buf[64];
  if (v == 0 || (fabs(v) >= 1e-6 && fabs(v) < 1e15))
    for (int d = 0; d <= 17; d++) {
      snprintf(buf, sizeof buf, "%.*f", d, v);
      if (strtod(buf, NULL) == v) return strdup(buf);
    }
  snprintf(buf, sizeof buf, "%.17g", v);
  for (int p = 1; p <= 17; p++) {
    char t[64];
    snprintf(t, sizeof t, "%.*g", p, v);
    if (strtod(t, NULL) == v) {
      memcpy(buf, t, strlen(t) + 1);
      break;
    }
  }
  return strdup(buf);
}

/* The JSON document in an answer: a fenced block's content, the whole
 * text, or the span from the first { or [ to the last } or ]. */
static json_t *answer_json(const char *a) {
  const char *f = strstr(a, "```");
  if (f) {
    const char *body = strchr(f + 3, '\n');
    const char *close = body ? strstr(body + 1, "```") : NULL;
    if (body && close) {
      char *in = strndup(body + 1, (size_t)(close - body - 1));
      json_t *j = in ? json_loads(in, JSON_DECODE_ANY, NULL) : NULL;
      free(in);
      if (j) return j;
    }
  }
  json_t *j = json_loads(a, JSON_DECODE_ANY, NULL);
  if (j) return j;
  const char *o = strpbrk(a, "{[");
  if (!o) return NULL;
  const char *c = NULL;
  for (const char *p = a; *p; p++)
    if (*p == '}' || *p == ']') c = p;
  if (!c || c < o) return NULL;
  char *in = strndup(o, (size_t)(c - o + 1));
  j = in ? json_loads(in, JSON_DECODE_ANY, NULL) : NULL;
  free(in);
  return j;
}

/* The value at path p (path_valid) in j, borrowed; NULL if absent. */
static json_t *json_at(json_t *j, const char *p) {
  p++; /* $ */
  while (j && *p) {
    if (*p == '.') {
      size_t k = strcspn(p + 1, ".[");
      char key[256];
      if (k >= sizeof key) return NULL;
      memcpy(key, p + 1, k);
      key[k] = '\0';
      j = json_is_object(j) ? json_object_get(j, key) : NULL;
      p += 1 + k;
    } else { /* [ */
      const char *close = strchr(p, ']');
      if (p[1] == '"' || p[1] == '\'') {
        char *key = strndup(p + 2, (size_t)(close - p - 3));
        j = key && json_is_object(j) ? json_object_get(j, key) : NULL;
        free(key);
      } else {
        size_t i = strtoul(p + 1, NULL, 10);
        j = json_is_array(j) ? json_array_get(j, i) : NULL;
      }
      p = close + 1;
    }
  }
  return j;
}

static char *json_text(const json_t *v) {
  if (json_is_string(v)) return strdup(json_string_value(v));
  return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static int check_json(const struct expectation *e, const char *raw, struct answer_check *out) {
  json_t *doc = answer_json(raw);
  if (!doc) {
    out->verdict = ANSWER_WRONG;
    out->reason = strdup("the answer is not JSON");
    out->answer = norm_text(e, raw);
    out->expected = json_text(e->json_equals);
    return 0;
  }
  const json_t *got = json_at(doc, e->json_path);
  const json_t *want = e->json_equals;
  int rc = 0;
  if (!got) {
    out->verdict = ANSWER_WRONG;
    char buf[300];
    snprintf(buf, sizeof buf, "no %s in the answer's JSON", e->json_path);
    out->reason = strdup(buf);
    out->answer = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
    out->expected = json_text(want);
  } else if (json_is_number(want)) {
    double g = NAN;
    if (json_is_number(got)) g = json_number_value(got);
    else if (json_is_string(got)) {
      char *ns = answer_normalize(json_string_value(got));
      if (ns && !last_number(ns, &g)) g = NAN;
      free(ns);
    }
    out->verdict = isfinite(g) && within(g, json_number_value(want), e->tolerance) ? ANSWER_CORRECT
                                                                                    : ANSWER_WRONG;
    out->answer = json_text(got);
    out->expected = format_number(json_number_value(want));
  } else if (json_is_string(want)) {
    char *gt = json_text(got);
    out->answer = gt ? norm_word(e, gt) : NULL;
    free(gt);
    out->expected = norm_word(e, json_string_value(want));
    if (!out->expected) rc = -1;
    out->verdict = out->answer && out->expected && !strcmp(out->answer, out->expected)
                       ? ANSWER_CORRECT
                       : ANSWER_WRONG;
  } else {
    out->verdict = json_equal(got, want) ? ANSWER_CORRECT : ANSWER_WRONG;
    out->answer = json_text(got);
    out->expected = json_text(want);
  }
  json_decref(doc);
  return rc;
}

int expect_check(const struct expectation *e, const char *answer, struct answer_check *out) {
  memset(out, 0, sizeof *out);
  char *probe = answer ? answer_normalize(answer) : NULL;
  if (answer && !probe) {
    out->verdict = ANSWER_WRONG;
    out->reason = strdup("the answer is not valid UTF-8");
    return 0;
  }
  const bool empty = !probe || !probe[0];
  free(probe);
  if (empty) {
    out->verdict = ANSWER_NO_ANSWER;
    switch (e->kind) {
    case EXPECT_NUMBER: out->expected = format_number(e->number); break;
    case EXPECT_JSON: out->expected = json_text(e->json_equals); break;
    case EXPECT_ONE_OF: out->expected = norm_word(e, e->options[0]); break;
    default: out->expected = e->kind == EXPECT_REGEX ? dup_or_null(e->text) : norm_word(e, e->text);
    }
    return 0;
  }
  switch (e->kind) {
  case EXPECT_EQUALS:
    out->answer = norm_word(e, answer);
    out->expected = norm_word(e, e->text);
    if (!out->answer || !out->expected) return -1;
    out->verdict = strcmp(out->answer, out->expected) ? ANSWER_WRONG : ANSWER_CORRECT;
    return 0;
  case EXPECT_ONE_OF: {
    out->answer = norm_word(e, answer);
    if (!out->answer) return -1;
    out->verdict = ANSWER_WRONG;
    size_t len = 0;
    for (size_t i = 0; i < e->n_options; i++) {
      char *o = norm_word(e, e->options[i]);
      if (!o) return -1;
      if (!strcmp(o, out->answer)) out->verdict = ANSWER_CORRECT;
      len += strlen(o) + 3;
      free(o);
    }
    /* the expectation shown: the normalized options joined by " | " */
    out->expected = malloc(len + 1);
    if (!out->expected) return -1;
    out->expected[0] = '\0';
    for (size_t i = 0; i < e->n_options; i++) {
      char *o = norm_word(e, e->options[i]);
      if (!o) return -1;
      if (i) strcat(out->expected, " | ");
      strcat(out->expected, o);
      free(o);
    }
    return 0;
  }
  case EXPECT_CONTAINS:
    out->answer = norm_text(e, answer);
    out->expected = norm_text(e, e->text);
    if (!out->answer || !out->expected) return -1;
    out->verdict = strstr(out->answer, out->expected) ? ANSWER_CORRECT : ANSWER_WRONG;
    return 0;
  case EXPECT_REGEX:
    out->answer = norm_text(e, answer);
    out->expected = strdup(e->text);
    if (!out->answer || !out->expected) return -1;
    out->verdict = regexec(&e->re, out->answer, 0, NULL, 0) == 0 ? ANSWER_CORRECT : ANSWER_WRONG;
    return 0;
  case EXPECT_NUMBER: {
    char *a = answer_normalize(answer);
    if (!a) return -1;
    double g;
    out->expected = format_number(e->number);
    if (!last_number(a, &g)) {
      out->verdict = ANSWER_WRONG;
      out->reason = strdup("no number in the answer");
      out->answer = a;
      return 0;
    }
    free(a);
    out->answer = format_number(g);
    out->verdict = within(g, e->number, e->tolerance) ? ANSWER_CORRECT : ANSWER_WRONG;
    return 0;
  }
  case EXPECT_JSON:
    return check_json(e, answer, out);
  }
  return -1;
}

void answer_check_free(struct answer_check *c) {
  free(c->answer);
  free(c->expected);
  free(c->reason);
  memset(c, 0, sizeof *c);
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

json_t *answer_check_json(const struct expectation *e, const struct answer_check *c) {
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "verdict", json_string(answer_verdict_name(c->verdict)));
  json_object_set_new(o, "kind", json_string(expect_kind_name(e->kind)));
  json_object_set_new(o, "exact", json_boolean(e->exact));
  json_object_set_new(o, "answer", str_or_null(c->answer));
  json_object_set_new(o, "expected", str_or_null(c->expected));
  json_object_set_new(o, "reason", str_or_null(c->reason));
  return o;
}
