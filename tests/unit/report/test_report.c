/* Unit tests of the report writers (src/report/): hand-written records with
 * known values -> rows, cells (median ± sd, % of ceiling), table / markdown
 * column heads naming the quantity, CSV figures, and the HTML page: one mark
 * per data point in every plot, warm-ups / failed / cache-hit runs left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/results.h"
#include "report/report.h"
#include "report/report_internal.h"
#include "tm_test.h"

/* Engine: pp16 and pp32 at 1 thread (3 timed runs each, one warm-up), tg64 at
 * 1 thread (3 runs, 2 segments each) and at 2 threads (2 runs + one failed).
 * Server: classify (2 runs), generate (2 runs, 3 segments each; one more run
 * a cache hit whose prefill is excluded). */
static const char *const records =
    "{\"record\":\"identity\",\"schema\":1,\"id\":\"e1\",\"backend\":\"engine\",\"target\":\"in-process\",\"model\":{\"name\":null,\"file\":\"m.gguf\",\"type\":\"Q4_0\"},\"machine\":{\"cpu\":\"CPU X\",\"cores\":2},\"thermal_before\":{\"readable\":false}}\n"
#define ENG(test, ph, t, w, idx, ok, tok, ms, rate, ceil, seg)                                  \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"e1\",\"backend\":\"engine\",\"target\":\"in-process\",\"model\":{\"name\":\"m.gguf\",\"file\":\"m.gguf\",\"type\":\"Q4_0\"},\"test\":\"" test \
  "\",\"phase\":\"" ph "\",\"threads\":" #t ",\"depth\":0,\"index\":" #idx ",\"warmup\":" #w    \
  ",\"ok\":" #ok ",\"tokens\":" #tok ",\"ms\":" #ms ",\"rate_tok_s\":" #rate                       \
  ",\"ceiling\":{\"ceiling_tok_s\":" #ceil "},\"decode_by_segment\":" seg "}\n"
    ENG("pp16", "prefill", 1, true, null, true, 16, 0.5, 32000, 32000, "null")
    ENG("pp16", "prefill", 1, false, 0, true, 16, 1.0, 16000, 32000, "null")
    ENG("pp16", "prefill", 1, false, 1, true, 16, 2.0, 8000, 32000, "null")
    ENG("pp16", "prefill", 1, false, 2, true, 16, 4.0, 4000, 32000, "null")
    ENG("pp32", "prefill", 1, false, 0, true, 32, 2.0, 16000, 32000, "null")
    ENG("pp32", "prefill", 1, false, 1, true, 32, 4.0, 8000, 32000, "null")
    ENG("pp32", "prefill", 1, false, 2, true, 32, 8.0, 4000, 32000, "null")
    ENG("tg64", "decode", 1, true, null, true, 64, 603.8, 106, 200, "[{\"from\":1,\"to\":32,\"tok_s\":1},{\"from\":33,\"to\":64,\"tok_s\":1}]")
    ENG("tg64", "decode", 1, false, 0, true, 64, 640.0, 100, 200, "[{\"from\":1,\"to\":32,\"tok_s\":104},{\"from\":33,\"to\":64,\"tok_s\":96}]")
    ENG("tg64", "decode", 1, false, 1, true, 64, 581.8, 110, 200, "[{\"from\":1,\"to\":32,\"tok_s\":114},{\"from\":33,\"to\":64,\"tok_s\":106}]")
    ENG("tg64", "decode", 1, false, 2, true, 64, 533.3, 120, 200, "[{\"from\":1,\"to\":32,\"tok_s\":124},{\"from\":33,\"to\":64,\"tok_s\":116}]")
    ENG("tg64", "decode", 2, false, 0, true, 64, 426.7, 150, 400, "[{\"from\":1,\"to\":32,\"tok_s\":155},{\"from\":33,\"to\":64,\"tok_s\":145}]")
    ENG("tg64", "decode", 2, false, 1, false, 64, 376.5, 170, 400, "[{\"from\":1,\"to\":32,\"tok_s\":175},{\"from\":33,\"to\":64,\"tok_s\":165}]")
    ENG("tg64", "decode", 2, false, 2, true, 64, 376.5, 170, 400, "[{\"from\":1,\"to\":32,\"tok_s\":175},{\"from\":33,\"to\":64,\"tok_s\":165}]")
    "{\"record\":\"end\",\"schema\":1,\"identity\":\"e1\",\"runs\":12,\"n_failed\":1,\"thermal_after\":{\"readable\":false}}\n"
    "{\"record\":\"identity\",\"schema\":1,\"id\":\"s1\",\"backend\":\"llamacpp\",\"target\":\"http://127.0.0.1:8080\",\"model\":{\"name\":\"q\",\"type\":null}}\n"
#define SRV(wl, w, cal, ttft, proc, pf, dc, excl, seg)                                           \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"s1\",\"workload\":\"" wl "\",\"warmup\":" #w \
  ",\"cold\":false,\"calibration\":" #cal ",\"backend\":\"llamacpp\",\"target\":\"http://127.0.0.1:8080\",\"model\":\"q\",\"max_tokens\":400,\"ok\":true," \
  "\"tokens\":{\"prompt\":" #proc ",\"processed\":" #proc "},\"client\":{\"ttft_ms\":" #ttft "}," \
  "\"rates\":{\"prefill_tok_s\":{\"headline\":" #pf "},\"decode_tok_s\":{\"headline\":" #dc      \
  ",\"client\":" #dc "},\"decode_by_segment\":" seg "},\"cache\":{\"prefill_excluded\":" #excl "}}\n"
    SRV("classify", false, true, 5, 20, 4000, null, false, "[]")
    SRV("classify", true, false, 50, 50, 1000, null, false, "[]")
    SRV("classify", false, false, 10, 50, 5000, null, false, "[]")
    SRV("classify", false, false, 12, 50, 4000, null, false, "[]")
    SRV("generate", false, false, 20, 100, 5000, 30, false, "[{\"from\":1,\"to\":50,\"tok_s\":31},{\"from\":51,\"to\":200,\"tok_s\":30},{\"from\":201,\"to\":400,\"tok_s\":29}]")
    SRV("generate", false, false, 22, 100, 4545, 32, false, "[{\"from\":1,\"to\":50,\"tok_s\":33},{\"from\":51,\"to\":200,\"tok_s\":32},{\"from\":201,\"to\":400,\"tok_s\":31}]")
    SRV("generate", false, false, 2, 100, null, 31, true, "[]");

/* One timed in-process tg run of the given length and curve (rate 50). */
#define ENG_O(test, tok, ms, seg) /* ms: tok at 50 tok/s */                                     \
  "{\"record\":\"run\",\"schema\":1,\"identity\":\"o1\",\"backend\":\"engine\",\"target\":\"in-process\",\"model\":{\"name\":\"m.gguf\"},\"test\":\"" test \
  "\",\"phase\":\"decode\",\"threads\":1,\"depth\":0,\"index\":0,\"warmup\":false,\"ok\":true,\"tokens\":" #tok \
  ",\"ms\":" #ms ",\"rate_tok_s\":50,\"ceiling\":null,\"decode_by_segment\":" seg "}\n"

static const char *write_records(void) {
  const char *path = tm_tmpfile("r.jsonl");
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(records, f);
    fclose(f);
  }
  return path;
}

static const struct report_row *row_of(const struct report *rep, const char *test, int threads) {
  for (size_t i = 0; i < rep->n_rows; i++)
    if (!strcmp(rep->rows[i].test, test) && rep->rows[i].threads == threads) return &rep->rows[i];
  return NULL;
}

/* Marks of class cls inside the plot with this id ("" count when absent: -1). */
static long marks_in(const char *html, const char *id, const char *cls) {
  char pat[96];
  snprintf(pat, sizeof pat, "data-plot=\"%s\"", id);
  const char *p = strstr(html, pat);
  if (!p) return -1;
  const char *end = strstr(p, "</svg>");
  char cpat[64];
  snprintf(cpat, sizeof cpat, "class=\"%s\"", cls);
  long n = 0;
  for (const char *q = strstr(p, cpat); q && q < end; q = strstr(q + 1, cpat)) n++;
  return n;
}

static int load(struct results *r, struct report *rep) {
  const char *path = write_records();
  struct tm_err err = {{0}};
  const char *paths[] = {path};
  if (results_load(paths, 1, r, &err) < 0) {
    CHECK_MSG(0, "results_load: %s", err.msg);
    return -1;
  }
  if (report_build(r, rep, &err) < 0) {
    CHECK_MSG(0, "report_build: %s", err.msg);
    results_free(r);
    return -1;
  }
  return 0;
}

static void test_rows_and_cells(void) {
  struct results r;
  struct report rep;
  if (load(&r, &rep)) return;
  CHECK_EQ_INT(rep.n_rows, 6); /* pp16 t1, pp32 t1, tg64 t1, tg64 t2, classify, generate */
  const struct report_row *pp16 = row_of(&rep, "pp16", 1), *tg1 = row_of(&rep, "tg64", 1);
  const struct report_row *tg2 = row_of(&rep, "tg64", 2), *gen = row_of(&rep, "generate", -1);
  CHECK(pp16 && tg1 && tg2 && gen);
  if (!pp16 || !tg1 || !tg2 || !gen) goto out;
  char b[96];
  report_cell_figure(pp16->prefill, b, sizeof b); /* 16000, 8000, 4000: warm-up left out */
  CHECK_STR(b, "8000 \xc2\xb1 6110");
  report_cell_percent(pp16->prefill, b, sizeof b);
  CHECK_STR(b, "25%");
  report_cell_figure(pp16->ttft, b, sizeof b); /* in-process: the pp test's ms */
  CHECK_STR(b, "2.00 \xc2\xb1 1.53");
  report_cell_figure(tg1->decode, b, sizeof b);
  CHECK_STR(b, "110 \xc2\xb1 10");
  report_cell_percent(tg1->decode, b, sizeof b);
  CHECK_STR(b, "55%");
  CHECK_EQ_INT(tg2->decode->n, 2); /* the failed run is not a measurement */
  report_cell_figure(gen->prefill, b, sizeof b); /* the cache hit's prefill is excluded */
  CHECK_EQ_INT(gen->prefill->n, 2);
  CHECK_EQ_INT(gen->decode->n, 3);
  report_cell_percent(gen->decode, b, sizeof b);
  CHECK_STR(b, ""); /* no ceiling: blank, not 0 */
  report_cell_figure(NULL, b, sizeof b);
  CHECK_STR(b, "");
out:
  report_free(&rep);
  results_free(&r);
}

static void test_text_writers(void) {
  struct results r;
  struct report rep;
  if (load(&r, &rep)) return;
  struct sbuf t, md, csv;
  sbuf_init(&t);
  sbuf_init(&md);
  sbuf_init(&csv);
  CHECK_EQ_INT(report_write_table(&rep, &t, NULL), 0);
  CHECK_EQ_INT(report_write_markdown(&rep, &md, NULL), 0);
  CHECK_EQ_INT(report_write_csv(&rep, &csv, NULL), 0);
  const char *heads[] = {"CC prompt (tok)", "PF prefill (tok/s)", "DC decode (tok/s)", "FX TTFT (ms)",
                         "PF % of ceiling", "DC % of ceiling"};
  for (size_t i = 0; i < 6; i++) {
    CHECK_CONTAINS(sbuf_str(&t), heads[i]);
    CHECK_CONTAINS(sbuf_str(&md), heads[i]);
  }
  CHECK_CONTAINS(sbuf_str(&t), "engine | m.gguf | Q4_0\n");
  CHECK_CONTAINS(sbuf_str(&t), "llamacpp | http://127.0.0.1:8080 | q\n");
  CHECK_CONTAINS(sbuf_str(&md), "### engine \\| m.gguf \\| Q4\\_0\n\n| test |");
  CHECK_CONTAINS(sbuf_str(&md), "| pp16 | 1 | 0 | 16 | 3 | 8000 \xc2\xb1 6110 | 25% |");
  /* the table lines up: every row of a group as wide as its header */
  const char *h = strstr(sbuf_str(&t), "  test");
  CHECK(h != NULL);
  CHECK_CONTAINS(sbuf_str(&csv), "configuration,backend,target,model,type,test,threads,depth,");
  CHECK_CONTAINS(sbuf_str(&csv), ",tg64,1,0,,64,decode_tok_s,DC,tok/s,3,110,110,10,100,120,200,55,");
  CHECK_CONTAINS(sbuf_str(&csv), ",classify,,,50,400,ttft_ms,FX,ms,2,11,11,");
  /* a header line + one line per series */
  size_t lines = 0;
  for (const char *p = sbuf_str(&csv); *p; p++) lines += *p == '\n';
  CHECK_EQ_INT(lines, 1 + rep.set.n);
  sbuf_free(&t);
  sbuf_free(&md);
  sbuf_free(&csv);
  report_free(&rep);
  results_free(&r);
}

static void test_html_plots(void) {
  struct results r;
  struct report rep;
  if (load(&r, &rep)) return;
  struct sbuf h;
  sbuf_init(&h);
  struct tm_err err = {{0}};
  CHECK_EQ_INT(report_write_html(&rep, "T <1>", &h, &err), 0);
  const char *html = sbuf_str(&h);
  CHECK_CONTAINS(html, "<title>T &lt;1&gt;</title>");
  /* decode curves: engine tg64 t1 (3 runs x 2), tg64 t2 (2 x 2), server generate (2 x 3) */
  CHECK_EQ_INT(marks_in(html, "decode-curve-1", "tm-mark"), 6);
  CHECK_EQ_INT(marks_in(html, "decode-curve-2", "tm-mark"), 4);
  CHECK_EQ_INT(marks_in(html, "decode-curve-3", "tm-mark"), 6);
  CHECK_EQ_INT(marks_in(html, "decode-curve-1", "tm-derived"), 2); /* median per segment */
  CHECK_EQ_INT(marks_in(html, "decode-curve-4", "tm-mark"), -1);
  /* TTFT: engine t1 d0 (pp16 + pp32: 6 runs), server (classify 2 + generate 2) */
  CHECK_EQ_INT(marks_in(html, "ttft-1", "tm-mark"), 6);
  CHECK_EQ_INT(marks_in(html, "ttft-2", "tm-mark"), 4);
  CHECK_EQ_INT(marks_in(html, "threads-prefill", "tm-mark"), 6);
  CHECK_EQ_INT(marks_in(html, "threads-decode", "tm-mark"), 5);
  CHECK_EQ_INT(marks_in(html, "ceiling", "tm-mark"), 4);
  CHECK_CONTAINS(html, "100% of ceiling");
  CHECK_CONTAINS(html, "No load records here");
  CHECK_CONTAINS(html, "FX time to first token (ms)</text>");
  CHECK_CONTAINS(html, "DC decode rate (tok/s)</text>");
  /* self-contained: no script, no external reference */
  CHECK(!strstr(html, "<script"));
  CHECK(!strstr(html, "src="));
  CHECK(!strstr(html, "href="));
  CHECK(!strstr(html, "url("));
  sbuf_free(&h);
  report_free(&rep);
  results_free(&r);
}

/* A hand-made decode series of n values (no ceiling) for the cell tests. */
static struct series decode_series(double *v, size_t n) {
  struct series s;
  memset(&s, 0, sizeof s);
  snprintf(s.key, sizeof s.key, "engine | m | tg16 | t1 | d0");
  s.metric = METRIC_DECODE_TOK_S;
  snprintf(s.quantity, sizeof s.quantity, "DC");
  snprintf(s.unit, sizeof s.unit, "tok/s");
  s.values = v;
  s.n = n;
  return s;
}

/* "% of ceiling" is held against the mean of the runs' ceilings, and marked
 * when they spread by more than 5% (series.h); the marked cells are listed
 * under the table in every format. */
/* Rule 5 on the plots: segments of fewer than 24 tokens (records written
 * before the rule: an in-process tg16 cut in 8-token halves, a server's
 * 51-60) give no mark; a run left with none gives no plot. */
static void test_short_segments_not_drawn(void) {
  static const char *const text =
      "{\"record\":\"identity\",\"schema\":1,\"id\":\"o1\",\"backend\":\"engine\"}\n"
      ENG_O("tg16", 16, 320, "[{\"from\":1,\"to\":8,\"tok_s\":50},{\"from\":9,\"to\":16,\"tok_s\":48}]")
      ENG_O("tg60", 60, 1200, "[{\"from\":1,\"to\":50,\"tok_s\":50},{\"from\":51,\"to\":60,\"tok_s\":90}]");
  const char *path = tm_tmpfile("old.jsonl");
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
  struct results r;
  struct report rep;
  struct tm_err err = {{0}};
  const char *paths[] = {path};
  if (results_load(paths, 1, &r, &err) < 0 || report_build(&r, &rep, &err) < 0) {
    CHECK_MSG(0, "%s", err.msg);
    return;
  }
  struct sbuf h;
  sbuf_init(&h);
  CHECK_EQ_INT(report_write_html(&rep, "old", &h, &err), 0);
  /* tg60: the 1-50 mark only; tg16: no plot */
  CHECK_EQ_INT(marks_in(sbuf_str(&h), "decode-curve-1", "tm-mark"), 1);
  CHECK_EQ_INT(marks_in(sbuf_str(&h), "decode-curve-2", "tm-mark"), -1);
  CHECK_CONTAINS(sbuf_str(&h), "Decode rate over output length: engine | m.gguf | tg60");
  sbuf_free(&h);
  report_free(&rep);
  results_free(&r);
}

static void test_ceiling_marker(void) {
  static double v[] = {45, 40, 50};
  struct series s = decode_series(v, 3);
  s.ceiling = 112.5;
  s.ceiling_n = 3;
  s.ceiling_min = s.ceiling_max = 112.5;
  char b[96];
  report_cell_percent(&s, b, sizeof b);
  CHECK_STR(b, "40%");
  s.ceiling_min = 100;
  s.ceiling_max = 125;
  report_cell_percent(&s, b, sizeof b);
  CHECK_STR(b, "40%*");
  s.ceiling_max = 104.9; /* within 5%: no mark */
  report_cell_percent(&s, b, sizeof b);
  CHECK_STR(b, "40%");
  s.ceiling_machines_differ = true;
  report_cell_percent(&s, b, sizeof b);
  CHECK_STR(b, "40%*");
  struct report_row row = {.key = s.key, .threads = 1, .depth = 0, .decode = &s};
  struct report rep = {.rows = &row, .n_rows = 1};
  struct sbuf t, md, h;
  sbuf_init(&t);
  sbuf_init(&md);
  sbuf_init(&h);
  CHECK_EQ_INT(report_ceiling_notes(&rep, &t, REPORT_TABLE), 1);
  CHECK_EQ_INT(report_ceiling_notes(&rep, &md, REPORT_MARKDOWN), 1);
  CHECK_EQ_INT(report_ceiling_notes(&rep, &h, REPORT_HTML), 1);
  CHECK_CONTAINS(sbuf_str(&t), "  engine | m | tg16 | t1 | d0, DC: the runs come from different machines\n");
  CHECK_CONTAINS(sbuf_str(&md), "- engine \\| m \\| tg16 \\| t1 \\| d0, DC: the runs come from");
  CHECK_CONTAINS(sbuf_str(&h), "<li>engine | m | tg16 | t1 | d0, DC: the runs come from different "
                               "machines</li>");
  sbuf_free(&t);
  sbuf_free(&md);
  sbuf_free(&h);
}

/* Markdown: what it (or HTML inside it) would interpret is escaped. */
static void test_markdown_escape(void) {
  struct sbuf o;
  sbuf_init(&o);
  sbuf_put_md(&o, "<b>a_b*c*</b> [x](y) `z` ~s~ &amp; |\nx\\");
  CHECK_STR(sbuf_str(&o), "\\<b\\>a\\_b\\*c\\*\\</b\\> \\[x\\](y) \\`z\\` \\~s\\~ \\&amp; \\| x\\\\");
  sbuf_free(&o);
}

/* The terminal table: a record's string with a newline or an escape
 * sequence (a model named so) stays on its line and cannot drive the
 * terminal. */
static void test_table_control_chars(void) {
  struct sbuf o;
  sbuf_init(&o);
  sbuf_put_line(&o, "a\nb\x1b[31mc\x7f\td");
  CHECK_STR(sbuf_str(&o), "a?b?[31mc??d");
  sbuf_free(&o);
  static double v[] = {45, 40, 50};
  struct series s = decode_series(v, 3);
  struct report_row row = {.key = s.key, .threads = 1, .depth = 0, .decode = &s};
  snprintf(row.group, sizeof row.group, "engine | m\n\x1b]0;title\x07 | Q4_0");
  snprintf(row.test, sizeof row.test, "tg\n16");
  struct report rep = {.rows = &row, .n_rows = 1};
  struct sbuf t;
  sbuf_init(&t);
  CHECK_EQ_INT(report_write_table(&rep, &t, NULL), 0);
  const char *out = sbuf_str(&t);
  CHECK(strchr(out, 0x1b) == NULL && strchr(out, 0x07) == NULL);
  CHECK_CONTAINS(out, "engine | m??]0;title? | Q4_0\n");
  CHECK_CONTAINS(out, "tg?16");
  sbuf_free(&t);
}

static void test_formats(void) {
  enum report_format f;
  CHECK_EQ_INT(report_format_parse("md", &f), 0);
  CHECK_EQ_INT(f, REPORT_MARKDOWN);
  CHECK_EQ_INT(report_format_parse("html", &f), 0);
  CHECK_EQ_INT(f, REPORT_HTML);
  CHECK_EQ_INT(report_format_parse("pdf", &f), -1);
}

void tm_run_tests(void) {
  TM_RUN(test_table_control_chars);
  TM_RUN(test_rows_and_cells);
  TM_RUN(test_text_writers);
  TM_RUN(test_html_plots);
  TM_RUN(test_short_segments_not_drawn);
  TM_RUN(test_ceiling_marker);
  TM_RUN(test_markdown_escape);
  TM_RUN(test_formats);
}
