/* test_whatif_html: the `whatif --html` page (src/report/whatif_html.c): one
 * plot with a mark per rate of each phase drawn, the read phase only when
 * something is read, the floor as a reference line, the job in a sentence;
 * and the file written whole, or an error naming the path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/whatif_html.h"
#include "tm_test.h"

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* 10 items over 4 streams, 2000 tokens read at 4000 tok/s and 1000 written
 * per item, a 30 s test per item and a 10 min review: the floor is 1.5 + 90 +
 * 600 = 691.5 s, the steps 690 s. */
static struct whatif_step steps[2];
static struct whatif_job job_with_steps(void) {
  struct tm_err err;
  CHECK(whatif_parse_step("test=30/item", &steps[0], &err) == 0);
  CHECK(whatif_parse_step("review=10m", &steps[1], &err) == 0);
  struct whatif_job j = {.gen_tokens = 1000, .read_tokens = 2000, .items = 10,
                         .concurrency = 4, .prefill_tok_s = 4000, .steps = steps, .n_steps = 2};
  return j;
}

static size_t eval_rates(const struct whatif_job *j, const double *rates, size_t n,
                         struct whatif_row *rows) {
  struct tm_err err;
  for (size_t i = 0; i < n; i++) CHECK(whatif_eval(j, rates[i], NAN, &rows[i], &err) == 0);
  return n;
}

static void renders_one_plot(void) {
  struct whatif_job j = job_with_steps();
  const double rates[] = {100, 1000, 10000};
  struct whatif_row rows[3];
  size_t n = eval_rates(&j, rates, 3, rows);
  struct sbuf b;
  sbuf_init(&b);
  struct tm_err err = {{0}};
  CHECK_EQ_INT(whatif_html_render(&j, rows, n, &b, &err), 0);
  const char *s = sbuf_str(&b);
  CHECK(strncmp(s, "<!DOCTYPE html>\n", 16) == 0);
  CHECK_CONTAINS(s, "</body></html>\n");
  CHECK_EQ_INT(count(s, "<svg"), 1);
  CHECK_CONTAINS(s, "data-plot=\"whatif-time\"");
  CHECK_EQ_INT(count(s, "class=\"tm-series\""), 4); /* end-to-end, generate, steps, read */
  CHECK_EQ_INT(count(s, "class=\"tm-mark\""), 12);  /* 4 series x 3 rates */
  CHECK_CONTAINS(s, "floor: infinitely fast generation");
  CHECK_CONTAINS(s, "10 items, 1000 tokens written and 2000 read per item, 4 stream(s); "
                    "fixed steps total 11m 30s; floor 11m 32s.");
  sbuf_free(&b);

  /* nothing read: no read series */
  struct whatif_job g = {.gen_tokens = 100, .items = 1, .concurrency = 1, .prefill_tok_s = NAN};
  n = eval_rates(&g, rates, 2, rows);
  sbuf_init(&b);
  CHECK_EQ_INT(whatif_html_render(&g, rows, n, &b, &err), 0);
  CHECK_EQ_INT(count(sbuf_str(&b), "class=\"tm-series\""), 3);
  CHECK(strstr(sbuf_str(&b), "read (prefill)") == NULL);
  sbuf_free(&b);
}

static void writes_the_file_or_names_it(void) {
  struct whatif_job j = job_with_steps();
  const double rates[] = {50};
  struct whatif_row rows[1];
  size_t n = eval_rates(&j, rates, 1, rows);
  struct tm_err err = {{0}};
  const char *path = tm_tmpfile("w.html");
  CHECK_EQ_INT(whatif_html_write(path, &j, rows, n, &err), 0);
  struct sbuf b;
  sbuf_init(&b);
  CHECK_EQ_INT(whatif_html_render(&j, rows, n, &b, &err), 0);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  if (f) {
    char *got = calloc(1, b.len + 2);
    size_t len = got ? fread(got, 1, b.len + 1, f) : 0;
    fclose(f);
    CHECK_EQ_INT(len, b.len); /* the page, whole, and nothing else */
    CHECK(got && strcmp(got, sbuf_str(&b)) == 0);
    free(got);
  }
  sbuf_free(&b);

  char bad[512];
  snprintf(bad, sizeof bad, "%s/no-such-dir/w.html", tm_test_tmpdir());
  CHECK_EQ_INT(whatif_html_write(bad, &j, rows, n, &err), -1);
  char want[600];
  snprintf(want, sizeof want, "cannot write %s", bad);
  CHECK_STR(err.msg, want);
}

void tm_run_tests(void) {
  TM_RUN(renders_one_plot);
  TM_RUN(writes_the_file_or_names_it);
}
