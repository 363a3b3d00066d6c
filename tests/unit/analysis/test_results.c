/* results_load: grouping by identity, files without end, bad lines, schema. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/results.h"
#include "tm_test.h"

static const char *write_file(const char *name, const char *text) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return path;
}

static void groups_by_identity_across_files(void) {
  const char *a = write_file("a.jsonl",
      "{\"record\":\"identity\",\"schema\":1,\"id\":\"aa\",\"backend\":\"engine\"}\n"
      "{\"record\":\"run\",\"schema\":1,\"identity\":\"aa\",\"rate_tok_s\":10.5}\n"
      "\n"
      "{\"record\":\"identity\",\"schema\":1,\"id\":\"bb\"}\n"
      "{\"record\":\"run\",\"schema\":1,\"identity\":\"aa\",\"rate_tok_s\":11}\n"
      "{\"record\":\"summary\",\"schema\":1,\"identity\":\"aa\",\"rate_tok_s\":{\"median\":10.75}}\n"
      "{\"record\":\"end\",\"schema\":1,\"identity\":\"aa\"}\n"
      "{\"record\":\"future-kind\",\"schema\":1,\"identity\":\"aa\"}\n");
  const char *b = write_file("b.jsonl",
      "{\"record\":\"run\",\"schema\":1,\"identity\":\"bb\",\"rate_tok_s\":20}\r\n"
      "{\"record\":\"run\",\"schema\":1,\"identity\":\"cc\"}\n");
  const char *paths[] = {a, b};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 2, &r, &err), 0);
  CHECK_EQ_INT(r.n_inv, 3);
  CHECK_EQ_INT(r.n_lines, 9);
  CHECK_STR(r.inv[0].id, "aa");
  CHECK_EQ_INT(r.inv[0].n_runs, 2);
  CHECK_EQ_INT(r.inv[0].n_summaries, 1);
  CHECK(r.inv[0].end != NULL);
  CHECK_NEAR(json_path_num(r.inv[0].runs[1], "rate_tok_s"), 11.0, 0);
  CHECK_NEAR(json_path_num(r.inv[0].summaries[0], "rate_tok_s.median"), 10.75, 0);
  CHECK_STR(json_path_str(r.inv[0].identity, "backend"), "engine");
  CHECK_STR(r.inv[1].id, "bb");
  CHECK(r.inv[1].identity != NULL);
  CHECK(r.inv[1].end == NULL); /* died: kept */
  CHECK_EQ_INT(r.inv[1].n_runs, 1);
  CHECK_STR(r.inv[2].id, "cc");
  CHECK(r.inv[2].identity == NULL);
  CHECK_STR(r.inv[2].source, b);
  CHECK(isnan(json_path_num(r.inv[0].runs[0], "missing.key")));
  CHECK(json_path_str(r.inv[0].runs[0], "rate_tok_s") == NULL);
  CHECK_EQ_INT(json_path_int(r.inv[0].runs[0], "nope", -7), -7);
  results_free(&r);
}

static void expect_error(const char *name, const char *text, const char *needle) {
  const char *p = write_file(name, text);
  const char *paths[] = {p};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 1, &r, &err), -1);
  CHECK(strstr(err.msg, needle) != NULL);
  if (!strstr(err.msg, needle)) fprintf(stderr, "  message: %s\n", err.msg);
  CHECK_EQ_INT(r.n_inv, 0);
  results_free(&r);
}

static void bad_lines_are_errors_with_line_numbers(void) {
  expect_error("notjson.jsonl", "{\"record\":\"run\"}\n{oops\n", ":2: not JSON");
  expect_error("array.jsonl", "[1,2]\n", ":1: not a tokmeter record");
  expect_error("norecord.jsonl", "{\"x\":1}\n", ":1: not a tokmeter record");
  expect_error("schema.jsonl", "{\"record\":\"run\",\"schema\":9}\n", "schema 9");
  expect_error("dupid.jsonl",
               "{\"record\":\"identity\",\"id\":\"x\"}\n{\"record\":\"identity\",\"id\":\"x\"}\n",
               ":2: identity x appears twice");
  const char *paths[] = {"/nonexistent/dir/r.jsonl"};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 1, &r, &err), -1);
  CHECK(strstr(err.msg, "cannot open") != NULL);
}

static void empty_file_has_no_invocations(void) {
  const char *p = write_file("empty.jsonl", "\n  \n");
  const char *paths[] = {p};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 1, &r, &err), 0);
  CHECK_EQ_INT(r.n_inv, 0);
  CHECK_EQ_INT(r.n_lines, 0);
  results_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(groups_by_identity_across_files);
  TM_RUN(bad_lines_are_errors_with_line_numbers);
  TM_RUN(empty_file_has_no_invocations);
}
