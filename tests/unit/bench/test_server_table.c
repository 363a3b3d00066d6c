/* Tests of the terminal table (src/bench/server_table.h): hand-made summaries in,
 * the printed figures, blanks, labels and footnotes checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/server_table.h"
#include "tm_test.h"

static void st(struct stats_summary *s, size_t n, double med, double sd, double mn, double mx) {
  *s = (struct stats_summary){n, med, med, sd, mn, mx};
}

static void blank_summary(struct bench_summary *s, const char *name) {
  memset(s, 0, sizeof *s);
  snprintf(s->workload, sizeof s->workload, "%s", name);
  struct stats_summary none = {0, NAN, NAN, NAN, NAN, NAN};
  s->prompt_tokens = s->prompt_processed = s->completion_tokens = s->reasoning_tokens = none;
  s->ttft_ms = s->ttft_gap_ms = none;
  s->prefill_server = s->prefill_client = s->prefill_headline = none;
  s->decode_server = s->decode_client = s->decode_headline = none;
  s->prefill_source = s->decode_source = "";
  s->cold_ttft_ms = s->cold_load_ms = NAN;
}

/* Three workloads: classify (decode blank, < 24 tokens), extract (client-only
 * prefill, a decode figure), generate (buffered, a cache hit, a failure, a
 * decode curve, a TTFT gap). */
static void make(struct bench_summary s[3]) {
  blank_summary(&s[0], "classify");
  s[0].n_runs = s[0].n_ok = 3;
  st(&s[0].prompt_tokens, 3, 52, 0, 52, 52);
  st(&s[0].completion_tokens, 3, 16, 0, 16, 16);
  st(&s[0].ttft_ms, 3, 184.3, 3.12, 181.0, 187.9);
  st(&s[0].prefill_headline, 3, 283.4, 5.24, 278.1, 290.2);
  s[0].prefill_source = "server";

  blank_summary(&s[1], "extract");
  s[1].n_runs = s[1].n_ok = 3;
  st(&s[1].prompt_tokens, 3, 1712, 0, 1712, 1712);
  st(&s[1].completion_tokens, 3, 60, 0, 60, 60);
  st(&s[1].ttft_ms, 3, 6230.4, 41.7, 6190.0, 6280.0);
  st(&s[1].prefill_headline, 3, 274.8, 1.83, 272.6, 276.6);
  s[1].prefill_source = "client";
  st(&s[1].decode_headline, 3, 29.51, 0.213, 29.3, 29.72);
  s[1].decode_source = "client";

  blank_summary(&s[2], "generate");
  s[2].n_runs = 4;
  s[2].n_ok = 3;
  s[2].n_failed = 1;
  s[2].failed_by_kind[RUN_ERR_HTTP] = 1;
  s[2].n_cache_hits = 1;
  s[2].n_buffered = 3;
  st(&s[2].prompt_tokens, 3, 54, 0, 54, 54);
  st(&s[2].completion_tokens, 3, 400, 0, 400, 400);
  st(&s[2].ttft_ms, 2, 184.0, 2.0, 182.6, 185.4);
  st(&s[2].ttft_gap_ms, 2, 32.0, 1.0, 31.3, 32.7);
  st(&s[2].prefill_headline, 2, 356.0, 4.0, 353.2, 358.8);
  s[2].prefill_source = "server";
  s[2].n_segments = 2;
  s[2].segments[0] = (struct decode_segment){1, 50, 36.6};
  s[2].segments[1] = (struct decode_segment){51, 400, 29.64};
  s[2].cold_ttft_ms = 2310.0;
}

/* The table as a string (malloc'd). */
static char *render(const struct bench_summary *s, size_t n, const struct record_ceiling *c) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  report_server_table(f, s, n, c, true);
  fclose(f);
  return buf;
}

/* The line of the table that starts with prefix (copied into line). */
static const char *line_of(const char *text, const char *prefix, char *line, size_t n) {
  for (const char *p = text; p && *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (strncmp(p, prefix, strlen(prefix)) == 0) {
      snprintf(line, n, "%.*s", (int)len, p);
      return line;
    }
    p = e ? e + 1 : NULL;
  }
  snprintf(line, n, "(no line starting with %s)", prefix);
  return line;
}

static void test_formatters(void) {
  char b[64];
  CHECK_STR(report_fmt_ms(18.44, b, sizeof b), "18.4");
  CHECK_STR(report_fmt_ms(184.4, b, sizeof b), "184");
  CHECK_STR(report_fmt_ms(NAN, b, sizeof b), "-");
  CHECK_STR(report_fmt_ms_sd(184.3, 3.12, b, sizeof b), "184 \xc2\xb1 3.1");
  CHECK_STR(report_fmt_ms_sd(184.3, NAN, b, sizeof b), "184");
  CHECK_STR(report_fmt_rate_sd(356.04, 4.26, b, sizeof b), "356 \xc2\xb1 4");
  CHECK_STR(report_fmt_rate_sd(29.51, 0.213, b, sizeof b), "29.5 \xc2\xb1 0.2");
  CHECK_STR(report_fmt_rate_sd(4.567, 0.0123, b, sizeof b), "4.57 \xc2\xb1 0.01");
  CHECK_STR(report_fmt_rate_sd(NAN, 1, b, sizeof b), "-");
  CHECK_STR(report_fmt_percent(33.7, b, sizeof b), "34%");
  CHECK_STR(report_fmt_percent(2.13, b, sizeof b), "2.1%");
  CHECK_STR(report_fmt_percent(NAN, b, sizeof b), "-");
}

static void test_table_without_ceiling(void) {
  struct bench_summary s[3];
  make(s);
  char *t = render(s, 3, NULL);
  CHECK(t != NULL);
  if (!t) return;
  char line[512];
  /* Header names the quantities. */
  CHECK_CONTAINS(t, "prefill rate (prompt tok/s)");
  CHECK_CONTAINS(t, "decode rate (generated tok/s, one stream)");
  CHECK_CONTAINS(t, "fixed costs (TTFT, ms)");
  CHECK(strstr(t, "% of ceiling") == NULL);

  /* classify: prefill from the server, decode blank by the 24-token rule. */
  line_of(t, "classify", line, sizeof line);
  CHECK_CONTAINS(line, " 52 ");
  CHECK_CONTAINS(line, "184 \xc2\xb1 3.1");
  CHECK_CONTAINS(line, "283 \xc2\xb1 5 [278-290] server");
  CHECK_CONTAINS(line, "- (a)");
  CHECK_CONTAINS(t, "(a) decode blank by rule: < 24 generated tokens");

  /* extract: client-only prefill is labelled a lower bound, with a footnote. */
  line_of(t, "extract", line, sizeof line);
  CHECK_CONTAINS(line, "1712");
  CHECK_CONTAINS(line, "6230 \xc2\xb1 41.7");
  CHECK_CONTAINS(line, "275 \xc2\xb1 2 [273-277] client, lower bound (b)");
  CHECK_CONTAINS(line, "29.5 \xc2\xb1 0.2 [29.3-29.7] client");
  CHECK_CONTAINS(t, "(b) client, lower bound: prompt tokens / client TTFT");

  /* generate: buffered -> decode blank with its own footnote. */
  line_of(t, "generate", line, sizeof line);
  CHECK_CONTAINS(line, "356 \xc2\xb1 4 [353-359] server");
  CHECK_CONTAINS(line, "- (c)");
  CHECK_CONTAINS(t, "(c) decode blank: buffered stream");

  /* Lines under the table. */
  CHECK_CONTAINS(t, "generate: decode curve (client, tok/s): tokens 1-50 36.6, tokens 51-400 29.6");
  CHECK_CONTAINS(t, "generate: server prompt time 152 ms, client TTFT 184 ms: 32.0 ms outside "
                    "the runtime");
  CHECK_CONTAINS(t, "generate: prompt cache hit in 1 of 3 runs: excluded from prefill and TTFT");
  CHECK_CONTAINS(t, "generate: buffered stream in 3 of 3 runs");
  CHECK_CONTAINS(t, "generate: 1 of 4 runs failed: http 1");
  CHECK_CONTAINS(t, "generate: cold request (first after a model load, not in the figures): "
                    "TTFT 2310 ms");
  CHECK(strstr(t, "classify: server prompt time") == NULL); /* no server timer there */
  CHECK(strstr(t, "(d)") == NULL);
  free(t);
}

static void test_table_with_ceiling(void) {
  struct bench_summary s[3];
  make(s);
  struct record_ceiling one = {.decode_ceiling_tok_s = 87.6, .prefill_ceiling_tok_s = 14200.0,
                               .read_bandwidth_bytes_s = 32.9e9};
  struct record_ceiling c[3] = {one, one, one};
  c[2].decode_ceiling_tok_s = 80.0; /* generate: deeper context, lower ceiling */
  char *t = render(s, 3, c);
  CHECK(t != NULL);
  if (!t) return;
  char line[512];
  CHECK_CONTAINS(t, "memory read 32.9 GB/s; per workload: classify prefill 14200 / decode 87.6 tok/s");
  CHECK_CONTAINS(t, "; generate prefill 14200 / decode 80.0 tok/s");
  CHECK_CONTAINS(t, "% of ceiling (prefill / decode)");
  line_of(t, "extract", line, sizeof line);
  CHECK_CONTAINS(line, "1.9% / 34%"); /* 274.8/14200, 29.51/87.6 */
  line_of(t, "classify", line, sizeof line);
  CHECK_CONTAINS(line, "2.0% / -");
  free(t);

  /* Above the ceiling: flagged with the likely causes. */
  s[1].decode_headline.median = 169.0;
  t = render(s, 3, c);
  CHECK_CONTAINS(t, "extract: decode at 193% of its ceiling: a mixture-of-experts model");
  free(t);
}

static void test_all_failed_and_cache_excluded(void) {
  struct bench_summary s[2];
  blank_summary(&s[0], "classify");
  s[0].n_runs = s[0].n_failed = 3;
  s[0].failed_by_kind[RUN_ERR_CONNECT] = 2;
  s[0].failed_by_kind[RUN_ERR_TIMEOUT] = 1;
  blank_summary(&s[1], "extract");
  s[1].n_runs = s[1].n_ok = s[1].n_cache_hits = 3;
  st(&s[1].completion_tokens, 3, 60, 0, 60, 60);
  st(&s[1].decode_headline, 3, 30.0, NAN, 30.0, 30.0);
  s[1].decode_headline.n = 1;
  char *t = render(s, 2, NULL);
  CHECK(t != NULL);
  if (!t) return;
  char line[512];
  line_of(t, "classify", line, sizeof line);
  CHECK(strstr(line, "(") == NULL); /* all failed: dashes, no footnote */
  CHECK_CONTAINS(t, "classify: 3 of 3 runs failed: connect 2, timeout 1");
  line_of(t, "extract", line, sizeof line);
  CHECK_CONTAINS(line, "- (a)");
  CHECK_CONTAINS(line, "30.0"); /* one run: no ± and no spread */
  CHECK(strstr(line, "\xc2\xb1") == NULL);
  CHECK_CONTAINS(t, "(a) prefill blank: every run hit the prompt cache");
  free(t);
}

void tm_run_tests(void) {
  TM_RUN(test_formatters);
  TM_RUN(test_table_without_ceiling);
  TM_RUN(test_table_with_ceiling);
  TM_RUN(test_all_failed_and_cache_excluded);
}
