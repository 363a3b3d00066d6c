/* results_load: grouping by identity, files without end, bad lines, schema,
 * and the check of every record's fields against docs/records.md (invalid
 * values refused with file, line and field; tokmeter's own blanks accepted). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A cut LAST line (issue 31 part 4): skipped and said; the records before it
 * read. A broken line elsewhere, a file of only a broken line, and a last
 * line whose JSON is wrong (not merely short) stay errors. */
static void a_cut_last_line_is_skipped(void) {
  const char *p = write_file("cut.jsonl", "{\"record\":\"identity\",\"id\":\"x\"}\n"
                                          "{\"record\":\"run\",\"iden");
  const char *paths[] = {p};
  struct results r;
  struct tm_err err = {0};
  CHECK_EQ_INT(results_load(paths, 1, &r, &err), 0);
  CHECK_EQ_INT(r.n_inv, 1);
  CHECK(strstr(r.torn_note, "cut.jsonl:2: the last line is cut (21 bytes, no newline") != NULL);
  results_free(&r);
  expect_error("cutonly.jsonl", "{\"record\":\"iden", ":1: not JSON");
  expect_error("cutwrong.jsonl", "{\"record\":\"identity\",\"id\":\"x\"}\n{oops}", ":2: not JSON");
  /* a whole file: no note */
  p = write_file("whole.jsonl", "{\"record\":\"identity\",\"id\":\"x\"}\n");
  paths[0] = p;
  CHECK_EQ_INT(results_load(paths, 1, &r, &err), 0);
  CHECK_STR(r.torn_note, "");
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
 * is appended as more keys. "tokens" is the N of a "pp<N>" / "tg<N>" test
 * (8 for any other test), as tokmeter writes it. */
static const char *engine_run(char *buf, size_t n, const char *test, const char *phase,
                              const char *threads, const char *depth, const char *ms,
                              const char *rate, const char *extra) {
  long long tokens = 8;
  if (!strncmp(test, "\"pp", 3) || !strncmp(test, "\"tg", 3)) {
    char *end;
    long long v = strtoll(test + 3, &end, 10);
    if (end != test + 3 && *end == '"' && v > 0) tokens = v;
  }
  snprintf(buf, n,
           RUN_HEAD "\"target\":\"in-process\",\"model\":{\"name\":\"m\",\"file\":\"m.gguf\","
           "\"type\":\"Q8_0\",\"load_ms\":null},\"test\":%s,\"phase\":%s,\"threads\":%s,"
           "\"depth\":%s,\"index\":0,\"warmup\":false,\"ok\":true,\"tokens\":%lld,\"ms\":%s,"
           "\"rate_tok_s\":%s,\"ceiling\":null%s" RUN_TAIL,
           test, phase, threads, depth, tokens, ms, rate, extra);
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
      {"\"tg4\"", "\"decode\"", "1", "0", "0.32", "12500", ",\"percent_of_ceiling\":1,\"ceiling2\":{}", ""}, /* accepted */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char good[1024], badrun[1024], text[3072];
    engine_run(good, sizeof good, "\"pp8\"", "\"prefill\"", "1", "0", "0.64", "12500", "");
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
 * the limits: 1e12 tok/s, 1e12 ms (each beside a null: together they would
 * contradict the token count). */
static void blanks_and_limits_are_accepted(void) {
  char a[1024], b[1024], c[1024], d[1024], text[5120];
  engine_run(a, sizeof a, "\"pp8\"", "\"prefill\"", "1", "0", "null", "1e12", "");
  engine_run(b, sizeof b, "\"tg1000000000\"", "\"decode\"", "1000000", "1000000000", "null", "0.001",
             ",\"decode_by_segment\":[{\"from\":1,\"to\":32,\"ms\":0,\"tok_s\":null}]");
  engine_run(c, sizeof c, "\"tg4\"", "null", "2", "0", "1", "4000",
             ",\"calibration\":false,\"decode_by_segment\":null,\"future_key\":[1,\"x\"]");
  engine_run(d, sizeof d, "\"pp8\"", "\"prefill\"", "1", "0", "1e12", "null", "");
  snprintf(text, sizeof text, "%s%s%s%s%s{\"record\":\"summary\",\"schema\":1,\"identity\":\"e1\","
           "\"rate_tok_s\":{\"n\":0,\"median\":null}}\n{\"record\":\"end\",\"schema\":1,"
           "\"identity\":\"e1\",\"runs\":4,\"n_failed\":0}\n", ID_LINE, a, b, c, d);
  const char *p = write_file("blanks.jsonl", text);
  struct results r;
  struct tm_err err = {0};
  CHECK_MSG(results_load(&p, 1, &r, &err) == 0, "blanks: %s", err.msg);
  CHECK_EQ_INT(r.n_inv, 1);
  CHECK_EQ_INT(r.n_inv ? r.inv[0].n_runs : 0, 4);
  CHECK_EQ_INT(r.n_inv ? r.inv[0].n_summaries : 0, 1);
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

/* ------------------------------------------- figures against each other --- */

/* A server run's figures (JSON text); NULL takes the honest llama.cpp-like
 * default: 46 prompt tokens, 14 cached, 32 processed in 80 ms (400 tok/s)
 * and a 100 ms TTFT (320 tok/s); 400 generated, 399 after the first in
 * 9975 ms (40 tok/s, server and client). */
struct srv_fig {
  const char *prompt, *cached, *processed, *completion, *prompt_n, *predicted_n;
  const char *prompt_ms, *predicted_ms, *ttft_ms, *span_ms;
  const char *pf_server, *pf_client, *pf_headline, *pf_source;
  const char *dc_server, *dc_client, *dc_headline, *dc_source;
  const char *chunks, *chunk_tokens, *lmstudio;
};

#define OR(x, d) ((x) ? (x) : (d))

static const char *server_run(char *buf, size_t n, const struct srv_fig *f) {
  snprintf(buf, n,
           "{\"record\":\"run\",\"schema\":1,\"identity\":\"s1\",\"backend\":\"openai\","
           "\"workload\":\"generate\",\"warmup\":false,\"ok\":true,\"max_tokens\":400,"
           "\"tokens\":{\"prompt\":%s,\"cached\":%s,\"processed\":%s,\"completion\":%s,"
           "\"client_chunks\":%s},"
           "\"client\":{\"ttft_ms\":%s,\"last_ms\":10075,\"decode_span_ms\":%s,"
           "\"chunk_tokens\":%s},"
           "\"server\":{\"prompt_ms\":%s,\"predicted_ms\":%s,\"cache_n\":14,\"prompt_n\":%s,"
           "\"predicted_n\":%s,\"lmstudio\":%s},"
           "\"rates\":{\"prefill_tok_s\":{\"server\":%s,\"client\":%s,\"headline\":%s,"
           "\"source\":%s},\"decode_tok_s\":{\"server\":%s,\"client\":%s,\"headline\":%s,"
           "\"source\":%s},\"decode_by_segment\":[{\"from\":1,\"to\":50,\"tok_s\":44}]}}\n",
           OR(f->prompt, "46"), OR(f->cached, "14"), OR(f->processed, "32"),
           OR(f->completion, "400"), OR(f->chunks, "400"), OR(f->ttft_ms, "100"),
           OR(f->span_ms, "9975"), OR(f->chunk_tokens, "null"), OR(f->prompt_ms, "80"),
           OR(f->predicted_ms, "9975"), OR(f->prompt_n, "32"), OR(f->predicted_n, "400"),
           OR(f->lmstudio, "null"), OR(f->pf_server, "400"), OR(f->pf_client, "320"),
           OR(f->pf_headline, "400"), OR(f->pf_source, "\"server\""), OR(f->dc_server, "40"),
           OR(f->dc_client, "40"), OR(f->dc_headline, "40"), OR(f->dc_source, "\"server\""));
  return buf;
}

/* Loads ID + run; msg "" = must load, else the error must hold msg. */
static void server_case(const char *name, const struct srv_fig *f, const char *msg) {
  char run[2048], text[2560];
  server_run(run, sizeof run, f);
  snprintf(text, sizeof text,
           "{\"record\":\"identity\",\"schema\":1,\"id\":\"s1\",\"backend\":\"openai\"}\n%s", run);
  if (msg[0]) {
    expect_error(name, text, msg);
    return;
  }
  const char *p = write_file(name, text);
  struct results r;
  struct tm_err err = {0};
  CHECK_MSG(results_load(&p, 1, &r, &err) == 0, "%s: %s", name, err.msg);
  results_free(&r);
}

static void server_figures_must_agree(void) {
  /* honest: llama.cpp, Ollama (no predicted_n: completion / eval time), LM
   * Studio (its own decode figure, not checked), an OpenAI server without
   * timers, the client's count when the server gave none, and figures
   * rounded by hand within 2% */
  server_case("agree_llamacpp.jsonl", &(struct srv_fig){0}, "");
  server_case("agree_ollama.jsonl",
              &(struct srv_fig){.prompt_n = "null", .predicted_n = "null", .processed = "32",
                                .dc_server = "40.1", .dc_headline = "40.1"},
              "");
  server_case("agree_lmstudio.jsonl",
              &(struct srv_fig){.prompt_n = "null", .predicted_n = "null",
                                .lmstudio = "{\"tok_s\":55}", .dc_server = "55",
                                .dc_headline = "55"},
              "");
  server_case("agree_openai.jsonl",
              &(struct srv_fig){.prompt_ms = "null", .predicted_ms = "null", .prompt_n = "null",
                                .predicted_n = "null", .pf_server = "null",
                                .pf_headline = "320", .pf_source = "\"client\"",
                                .dc_server = "null", .dc_source = "\"client\""},
              "");
  server_case("agree_client_count.jsonl",
              &(struct srv_fig){.completion = "null", .chunks = "200",
                                .chunk_tokens = "[2,0,2]", .span_ms = "100",
                                .dc_client = "40", .dc_server = "null",
                                .dc_source = "\"client\""},
              "");
  server_case("agree_rounded.jsonl",
              &(struct srv_fig){.pf_server = "393", .pf_headline = "393", .dc_client = "40.7"},
              "");
  /* contradictions: each names its keys */
  server_case("pf_server.jsonl", &(struct srv_fig){.pf_server = "500", .pf_headline = "500"},
              ":2: rates.prefill_tok_s.server 500 tok/s x server.prompt_ms 80 ms is 40 tokens, "
              "but tokens.processed is 32");
  server_case("pf_server_3pc.jsonl", &(struct srv_fig){.pf_server = "412", .pf_headline = "412"},
              ":2: rates.prefill_tok_s.server 412 tok/s x server.prompt_ms 80 ms");
  server_case("pf_client.jsonl", &(struct srv_fig){.pf_client = "640"},
              ":2: rates.prefill_tok_s.client 640 tok/s x client.ttft_ms 100 ms is 64 tokens, "
              "but tokens.processed is 32");
  server_case("prompt_ms.jsonl", &(struct srv_fig){.prompt_ms = "40"},
              ":2: rates.prefill_tok_s.server 400 tok/s x server.prompt_ms 40 ms is 16 tokens");
  server_case("processed_n.jsonl", &(struct srv_fig){.processed = "64"},
              ":2: tokens.processed 64 is not server.prompt_n 32");
  server_case("processed.jsonl",
              &(struct srv_fig){.prompt_n = "null", .processed = "46"},
              ":2: tokens.processed 46 is not tokens.prompt 46 - tokens.cached 14");
  server_case("dc_server.jsonl", &(struct srv_fig){.dc_server = "80", .dc_headline = "80"},
              ":2: rates.decode_tok_s.server 80 tok/s x server.predicted_ms 9975 ms is 798 "
              "tokens, but server.predicted_n - 1 is 399");
  server_case("dc_ollama.jsonl",
              &(struct srv_fig){.prompt_n = "null", .predicted_n = "null", .completion = "200",
                                .chunks = "200"},
              ":2: rates.decode_tok_s.server 40 tok/s x server.predicted_ms 9975 ms is 399 "
              "tokens, but tokens.completion is 200");
  server_case("dc_client.jsonl", &(struct srv_fig){.dc_client = "20"},
              ":2: rates.decode_tok_s.client 20 tok/s x client.decode_span_ms 9975 ms is 199.5 "
              "tokens, but tokens.completion - 1 is 399");
  server_case("dc_client_count.jsonl",
              &(struct srv_fig){.completion = "null", .chunks = "200", .span_ms = "100",
                                .dc_client = "40", .dc_server = "null",
                                .dc_source = "\"client\""},
              ":2: rates.decode_tok_s.client 40 tok/s x client.decode_span_ms 100 ms is 4 tokens, "
              "but the client's generated count - 1 is 199");
  server_case("headline.jsonl", &(struct srv_fig){.pf_headline = "1000"},
              ":2: rates.prefill_tok_s.headline 1000 is not rates.prefill_tok_s.server 400");
  server_case("headline_source.jsonl",
              &(struct srv_fig){.dc_server = "null", .dc_headline = "90"},
              ":2: rates.decode_tok_s.headline 90 names source \"server\", but "
              "rates.decode_tok_s.server is null");
}

static void engine_figures_must_agree(void) {
  char run[1024], text[2560];
  struct {
    const char *name, *test, *ms, *rate, *extra, *msg;
  } cases[] = {
      /* honest, with the microsecond rounding tokmeter writes */
      {"e_ok.jsonl", "\"pp32\"", "2518.948", "12.7037168733", "", ""},
      {"e_seg_ok.jsonl", "\"tg32\"", "6879.074", "4.65178874364",
       ",\"decode_by_segment\":[{\"from\":1,\"to\":16,\"ms\":3297.038,\"tok_s\":4.85284085697},"
       "{\"from\":17,\"to\":32,\"ms\":3582.036,\"tok_s\":4.46673299292}]", ""},
      {"e_rate.jsonl", "\"pp32\"", "2518.948", "13.2", "",
       ":3: rate_tok_s 13.2 tok/s x ms 2518.95 ms is 33.2501 tokens, but tokens is 32: the "
       "figures contradict each other (more than 2% apart)"},
      {"e_ms.jsonl", "\"tg32\"", "3000", "4.65178874364", "",
       ":3: rate_tok_s 4.65179 tok/s x ms 3000 ms is 13.9554 tokens, but tokens is 32"},
      {"e_seg.jsonl", "\"tg32\"", "6879.074", "4.65178874364",
       ",\"decode_by_segment\":[{\"from\":1,\"to\":16,\"ms\":3297.038,\"tok_s\":4.85284085697},"
       "{\"from\":17,\"to\":32,\"ms\":3582.036,\"tok_s\":9}]",
       ":3: decode_by_segment[1].tok_s 9 tok/s x decode_by_segment[1].ms 3582.04 ms is 32.2383 "
       "tokens, but decode_by_segment[1] to - from + 1 is 16"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char good[1024];
    engine_run(good, sizeof good, "\"pp8\"", "\"prefill\"", "1", "0", "0.64", "12500", "");
    engine_run(run, sizeof run, cases[i].test, "null", "1", "0", cases[i].ms, cases[i].rate,
               cases[i].extra);
    snprintf(text, sizeof text, "%s%s%s", ID_LINE, good, run);
    if (cases[i].msg[0]) {
      expect_error(cases[i].name, text, cases[i].msg);
      continue;
    }
    const char *p = write_file(cases[i].name, text);
    struct results r;
    struct tm_err err = {0};
    CHECK_MSG(results_load(&p, 1, &r, &err) == 0, "%s: %s", cases[i].name, err.msg);
    results_free(&r);
  }
  /* tokens that are not the test's N (the rate agrees with the wrong count) */
  expect_error("e_tokens_n.jsonl",
               ID_LINE RUN_HEAD "\"test\":\"pp16\",\"threads\":1,\"depth\":0,\"tokens\":32,"
               "\"ms\":100,\"rate_tok_s\":320}\n",
               ":2: tokens 32 is not the 16 tokens test \"pp16\" names");
}

void tm_run_tests(void) {
  TM_RUN(server_figures_must_agree);
  TM_RUN(engine_figures_must_agree);
  TM_RUN(a_cut_last_line_is_skipped);
  TM_RUN(invalid_engine_fields_are_refused);
  TM_RUN(invalid_server_fields_are_refused);
  TM_RUN(blanks_and_limits_are_accepted);
  TM_RUN(orphan_lines_are_refused);
  TM_RUN(groups_by_identity_across_files);
  TM_RUN(bad_lines_are_errors_with_line_numbers);
  TM_RUN(empty_file_has_no_invocations);
}
