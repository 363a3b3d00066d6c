/* results_load: grouping by identity, files without end, bad lines, schema,
 * and the check of every record's fields against docs/records.md (invalid
 * values refused with file, line and field; tokmeter's own blanks accepted). */
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
  /* b continues invocation bb, whose identity line is in a */
  const char *b = write_file("b.jsonl",
      "{\"record\":\"run\",\"schema\":1,\"identity\":\"bb\",\"rate_tok_s\":20}\r\n");
  const char *paths[] = {a, b};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 2, &r, &err), 0);
  if (err.msg[0]) fprintf(stderr, "  message: %s\n", err.msg);
  CHECK_EQ_INT(r.n_inv, 2);
  CHECK_EQ_INT(r.n_lines, 8);
  CHECK_EQ_INT(r.n_lines_by_source[0], 7);
  CHECK_EQ_INT(r.n_lines_by_source[1], 1);
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
  CHECK_EQ_INT(r.inv[1].line, 4);
  CHECK_EQ_INT(r.inv[1].identity_line, 4);
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
  expect_error("notjson.jsonl", "{\"record\":\"identity\",\"id\":\"x\"}\n{oops\n", ":2: not JSON");
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

/* An in-process run shaped as tokmeter writes it (records_engine.c). */
#define ID_LINE "{\"record\":\"identity\",\"schema\":1,\"id\":\"e1\",\"backend\":\"engine\"}\n"
#define RUN_HEAD "{\"record\":\"run\",\"schema\":1,\"identity\":\"e1\",\"backend\":\"engine\","
#define RUN_TAIL "}\n"

/* The run line with these values (JSON text) for its checked fields; extra
 * is appended as more keys. */
static const char *engine_run(char *buf, size_t n, const char *test, const char *phase,
                              const char *threads, const char *depth, const char *ms,
                              const char *rate, const char *extra) {
  snprintf(buf, n,
           RUN_HEAD "\"target\":\"in-process\",\"model\":{\"name\":\"m\",\"file\":\"m.gguf\","
           "\"type\":\"Q8_0\",\"load_ms\":null},\"test\":%s,\"phase\":%s,\"threads\":%s,"
           "\"depth\":%s,\"index\":0,\"warmup\":false,\"ok\":true,\"tokens\":8,\"ms\":%s,"
           "\"rate_tok_s\":%s,\"ceiling\":null%s" RUN_TAIL,
           test, phase, threads, depth, ms, rate, extra);
  return buf;
}

static void invalid_engine_fields_are_refused(void) {
  struct {
    const char *test, *phase, *threads, *depth, *ms, *rate, *extra, *msg;
  } cases[] = {
      {"\"pp8\"", "\"prefill\"", "1", "0", "0.6", "-100", "", ":3: rate_tok_s -100 is not a positive rate"},
      {"\"pp8\"", "\"prefill\"", "1", "0", "0.6", "0", "", ":3: rate_tok_s 0 is not a positive rate"},
      {"\"pp8\"", "\"prefill\"", "1", "0", "0.6", "\"fast\"", "", ":3: rate_tok_s \"fast\" is not"},
      {"\"pp8\"", "\"prefill\"", "1", "0", "-1", "100", "", ":3: ms -1 is not a time > 0 ms"},
      /* an in-process test takes time: its rate is tokens / ms */
      {"\"pp8\"", "\"prefill\"", "1", "0", "0", "100", "", ":3: ms 0 is not a time > 0 ms"},
      /* absurd figures: their median and mean overflowed, and a column vanished */
      {"\"pp8\"", "\"prefill\"", "1", "0", "0.6", "1e308", "", ":3: rate_tok_s 1e+308 is not a positive rate"},
      {"\"pp8\"", "\"prefill\"", "1", "0", "0.6", "1e-300", "", ":3: rate_tok_s 1e-300 is not a positive rate"},
      {"\"pp8\"", "\"prefill\"", "1", "0", "1e300", "100", "", ":3: ms 1e+300 is not a time > 0 ms"},
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"decode_by_segment\":[{\"from\":1,\"to\":4,\"tok_s\":2e12}]",
       ":3: decode_by_segment[0].tok_s 2e+12 is not a positive rate"},
      {"\"pp8\"", "\"prefill\"", "\"x\"", "0", "0.6", "100", "", ":3: threads \"x\" is not a positive integer"},
      {"\"pp8\"", "\"prefill\"", "-5", "0", "0.6", "100", "", ":3: threads -5 is not a positive integer"},
      {"\"pp8\"", "\"prefill\"", "0", "0", "0.6", "100", "", ":3: threads 0 is not"},
      {"\"pp8\"", "\"prefill\"", "1e300", "0", "0.6", "100", "", ":3: threads 1e+300 is not a positive integer"},
      {"\"pp8\"", "\"prefill\"", "4000000000", "0", "0.6", "100", "", ":3: threads 4000000000 is out of range"},
      {"\"pp8\"", "\"prefill\"", "1", "-1", "0.6", "100", "", ":3: depth -1 is not a non-negative integer"},
      {"\"pp8\"", "\"prefill\"", "1", "2.5", "0.6", "100", "", ":3: depth 2.5 is not"},
      {"\"zz99\"", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: test \"zz99\" is not pp<N> or tg<N>"},
      {"\"\"", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: test \"\" is not pp<N> or tg<N>"},
      {"\"pp\"", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: test \"pp\" is not"},
      {"\"pp0\"", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: test \"pp0\" is not"},
      {"\"pp8x\"", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: test \"pp8x\" is not"},
      {"\"tg-4\"", "\"decode\"", "1", "0", "0.6", "100", "", ":3: test \"tg-4\" is not"},
      {"5", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: test 5 is not pp<N> or tg<N>"},
      {"\"pp8\"", "\"sideways\"", "1", "0", "0.6", "100", "", ":3: phase \"sideways\" does not match"},
      {"\"tg4\"", "\"prefill\"", "1", "0", "0.6", "100", "", ":3: phase \"prefill\" does not match test \"tg4\""},
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"decode_by_segment\":[{\"from\":0,\"to\":4,\"tok_s\":5}]",
       ":3: decode_by_segment[0].from 0 is not"},
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"decode_by_segment\":[{\"from\":3,\"to\":2,\"tok_s\":5}]",
       ":3: decode_by_segment[0]: to is before from"},
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"decode_by_segment\":[{\"from\":1,\"to\":4,\"tok_s\":-5}]",
       ":3: decode_by_segment[0].tok_s -5 is not a positive rate"},
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"warmup\":\"no\"", "not JSON"}, /* duplicate key */
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"cold\":1", ":3: cold 1 is not true or false"},
      {"\"tg4\"", "\"decode\"", "1", "0", "0.6", "100", ",\"percent_of_ceiling\":1,\"ceiling2\":{}", ""}, /* accepted */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char good[1024], badrun[1024], text[3072];
    engine_run(good, sizeof good, "\"pp8\"", "\"prefill\"", "1", "0", "0.6", "13000", "");
    engine_run(badrun, sizeof badrun, cases[i].test, cases[i].phase, cases[i].threads,
               cases[i].depth, cases[i].ms, cases[i].rate, cases[i].extra);
    snprintf(text, sizeof text, "%s%s%s", ID_LINE, good, badrun);
    if (!cases[i].msg[0]) {
      const char *p = write_file("ok.jsonl", text);
      struct results r;
      struct tm_err err = {0};
      CHECK_MSG(results_load(&p, 1, &r, &err) == 0, "case %zu: %s", i, err.msg);
      results_free(&r);
      continue;
    }
    char name[32];
    snprintf(name, sizeof name, "bad%zu.jsonl", i);
    expect_error(name, text, cases[i].msg);
  }
  /* missing required keys of an in-process run */
  expect_error("nothreads.jsonl",
               ID_LINE RUN_HEAD "\"test\":\"pp8\",\"depth\":0,\"ok\":true}\n",
               ":2: threads missing");
  expect_error("nodepth.jsonl",
               ID_LINE RUN_HEAD "\"test\":\"pp8\",\"threads\":1,\"ok\":true}\n",
               ":2: depth missing");
  expect_error("notest.jsonl",
               ID_LINE RUN_HEAD "\"threads\":1,\"depth\":0,\"ok\":true}\n",
               ":2: test missing");
  expect_error("schema_str.jsonl", "{\"record\":\"identity\",\"schema\":\"1\",\"id\":\"x\"}\n",
               ":1: schema \"1\" is not");
  expect_error("noid.jsonl", "{\"record\":\"identity\",\"schema\":1}\n",
               ":1: identity id missing is not a non-empty string");
}

static void invalid_server_fields_are_refused(void) {
#define SRV(fields)                                                                       \
  "{\"record\":\"identity\",\"schema\":1,\"id\":\"s1\",\"backend\":\"llamacpp\"}\n"           \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"s1\",\"backend\":\"llamacpp\","              \
  "\"workload\":\"classify\",\"warmup\":false,\"ok\":true," fields "}\n"
  expect_error("s1.jsonl", SRV("\"client\":{\"ttft_ms\":-1}"), ":2: client.ttft_ms -1 is not a time");
  expect_error("s2.jsonl", SRV("\"rates\":{\"prefill_tok_s\":{\"headline\":-3}}"),
               ":2: rates.prefill_tok_s.headline -3 is not a positive rate");
  expect_error("s3.jsonl", SRV("\"rates\":{\"decode_tok_s\":{\"client\":\"x\"}}"),
               ":2: rates.decode_tok_s.client \"x\" is not a positive rate");
  expect_error("s4.jsonl", SRV("\"tokens\":{\"processed\":-2}"),
               ":2: tokens.processed -2 is not a non-negative integer");
  expect_error("s5.jsonl", SRV("\"max_tokens\":0"), ":2: max_tokens 0 is not a positive integer");
  expect_error("s6.jsonl", SRV("\"cache\":{\"prefill_excluded\":\"yes\"}"),
               ":2: cache.prefill_excluded \"yes\" is not true or false");
  expect_error("s7.jsonl", SRV("\"ceiling\":{\"decode_ceiling_tok_s\":-1}"),
               ":2: ceiling.decode_ceiling_tok_s -1 is not a number >= 0");
  expect_error("s8.jsonl", SRV("\"model\":7"), ":2: model 7 is not a string");
  expect_error("s9.jsonl", SRV("\"ok\":1"), "not JSON"); /* duplicate key */
  /* a failed server run as tokmeter writes it: every figure null */
  const char *p = write_file("sok.jsonl",
      SRV("\"max_tokens\":null,\"tokens\":{\"prompt\":null,\"processed\":null,\"completion\":null},"
          "\"client\":{\"ttft_ms\":null,\"last_ms\":null,\"decode_span_ms\":null,\"headers_ms\":0.5,"
          "\"end_ms\":3.25,\"connect_ms\":null,\"tls_ms\":null},\"rates\":{\"prefill_tok_s\":{"
          "\"server\":null,\"client\":null,\"headline\":null,\"source\":null},\"decode_tok_s\":{"
          "\"server\":null,\"client\":null,\"headline\":null,\"source\":null},"
          "\"decode_by_segment\":[]},\"ceiling\":null,\"cache\":{\"prefill_excluded\":false}"));
  struct results r;
  struct tm_err err = {0};
  CHECK_MSG(results_load(&p, 1, &r, &err) == 0, "null server figures: %s", err.msg);
  results_free(&r);
#undef SRV
}

/* Blanks are null (docs/records.md): a rate tokmeter could not compute, a
 * 0 ms segment time, a ceiling it does not know, a warm-up's null index; and
 * the limits: 1e12 tok/s, 1e12 ms. */
static void blanks_and_limits_are_accepted(void) {
  char a[1024], b[1024], c[1024], text[4096];
  engine_run(a, sizeof a, "\"pp8\"", "\"prefill\"", "1", "0", "1e12", "1e12", "");
  engine_run(b, sizeof b, "\"tg1000000000\"", "\"decode\"", "1000000", "1000000000", "null", "0.001",
             ",\"decode_by_segment\":[{\"from\":1,\"to\":32,\"ms\":0,\"tok_s\":null}]");
  engine_run(c, sizeof c, "\"tg4\"", "null", "2", "0", "1", "4000",
             ",\"calibration\":false,\"decode_by_segment\":null,\"future_key\":[1,\"x\"]");
  snprintf(text, sizeof text, "%s%s%s%s{\"record\":\"summary\",\"schema\":1,\"identity\":\"e1\","
           "\"rate_tok_s\":{\"n\":0,\"median\":null}}\n{\"record\":\"end\",\"schema\":1,"
           "\"identity\":\"e1\",\"runs\":3,\"n_failed\":0}\n", ID_LINE, a, b, c);
  const char *p = write_file("blanks.jsonl", text);
  struct results r;
  struct tm_err err = {0};
  CHECK_MSG(results_load(&p, 1, &r, &err) == 0, "blanks: %s", err.msg);
  CHECK_EQ_INT(r.n_inv, 1);
  CHECK_EQ_INT(r.inv[0].n_runs, 3);
  CHECK_EQ_INT(r.inv[0].n_summaries, 1);
  results_free(&r);
}

static void orphan_lines_are_refused(void) {
  /* the identity line gone: the first line of the invocation is named */
  expect_error("orphan.jsonl",
               "\n{\"record\":\"run\",\"schema\":1,\"identity\":\"zz\",\"ok\":false}\n"
               "{\"record\":\"end\",\"schema\":1,\"identity\":\"zz\"}\n",
               "orphan.jsonl:2: identity zz names no identity line in this file");
  /* a run pointing to another invocation than the file's identity */
  expect_error("mismatch.jsonl",
               ID_LINE "{\"record\":\"run\",\"schema\":1,\"identity\":\"e2\",\"ok\":false}\n",
               ":2: identity e2 names no identity line");
  /* an identity renamed to an unknown kind leaves its runs orphaned */
  expect_error("unknown.jsonl",
               "{\"record\":\"zzz\",\"schema\":1,\"id\":\"e1\"}\n"
               "{\"record\":\"run\",\"schema\":1,\"identity\":\"e1\",\"ok\":false}\n",
               ":2: identity e1 names no identity line");
  expect_error("noident.jsonl", ID_LINE "{\"record\":\"run\",\"schema\":1,\"ok\":false}\n",
               ":2: run's identity missing is not an identity id");
  expect_error("identnum.jsonl", ID_LINE "{\"record\":\"end\",\"schema\":1,\"identity\":5}\n",
               ":2: end's identity 5 is not an identity id");
  /* several files: an identity in none of them */
  const char *a = write_file("fa.jsonl", ID_LINE);
  const char *b = write_file("fb.jsonl",
                             "{\"record\":\"summary\",\"schema\":1,\"identity\":\"q\"}\n");
  const char *paths[] = {a, b};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 2, &r, &err), -1);
  CHECK_CONTAINS(err.msg, "fb.jsonl:1: identity q names no identity line in the files given");
  CHECK_EQ_INT(r.n_inv, 0);
  results_free(&r);
}

void tm_run_tests(void) {
  TM_RUN(invalid_engine_fields_are_refused);
  TM_RUN(invalid_server_fields_are_refused);
  TM_RUN(blanks_and_limits_are_accepted);
  TM_RUN(orphan_lines_are_refused);
  TM_RUN(groups_by_identity_across_files);
  TM_RUN(bad_lines_are_errors_with_line_numbers);
  TM_RUN(empty_file_has_no_invocations);
}
