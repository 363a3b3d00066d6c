/* Unit tests of the SVG plotting layer (src/report/svg.c): ticks, one mark per
 * finite point, marks inside the plot area, labelled axes with units, legend,
 * escaping, and refusals (no unit, nothing to draw). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/sbuf.h"
#include "report/svg.h"
#include "tm_test.h"

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* The value of attribute name="..." after position p. */
static double attr(const char *p, const char *name) {
  char pat[32];
  snprintf(pat, sizeof pat, " %s=\"", name);
  const char *q = strstr(p, pat);
  return q ? atof(q + strlen(pat)) : NAN;
}

static void test_ticks(void) {
  double t[32];
  size_t n = svg_nice_ticks(0, 97, 32, t);
  CHECK(n >= 3 && n <= 8);
  CHECK_NEAR(t[0], 0, 1e-12);
  CHECK(t[n - 1] >= 97);
  for (size_t i = 1; i < n; i++) CHECK(t[i] > t[i - 1]);
  n = svg_nice_ticks(5, 5, 32, t); /* a single value still gets a range */
  CHECK(n >= 2 && t[0] <= 5 && t[n - 1] >= 5);
  char b[32];
  CHECK_STR(svg_fmt_tick(25000, b, sizeof b), "25k");
  CHECK_STR(svg_fmt_tick(1e6, b, sizeof b), "1M");
  CHECK_STR(svg_fmt_tick(0.5, b, sizeof b), "0.5");
  CHECK_STR(svg_fmt_tick(1000, b, sizeof b), "1000");
  CHECK_STR(svg_fmt_tick(0.1 + 0.2, b, sizeof b), "0.3");
}

static void test_xy_marks(void) {
  double x1[] = {1, 2, 3, 4}, y1[] = {10, 20, NAN, 40};
  double x2[] = {1, 4}, y2[] = {15, 35};
  struct svg_series s[] = {
      {.name = "runs <a&b>", .x = x1, .y = y1, .n = 4, .line = true, .shape = SVG_CIRCLE},
      {.name = "median", .x = x2, .y = y2, .n = 2, .line = true, .shape = SVG_DIAMOND,
       .derived = true, .color = -1},
  };
  struct svg_chart c = {.kind = SVG_XY, .id = "p1", .title = "T", .x_label = "threads",
                        .x_unit = "threads", .y_label = "decode rate", .y_unit = "tok/s",
                        .y_zero = true, .series = s, .n_series = 2};
  struct sbuf o;
  sbuf_init(&o);
  struct tm_err err = {{0}};
  CHECK_EQ_INT(svg_render(&c, &o, &err), 0);
  const char *svg = sbuf_str(&o);
  CHECK_EQ_INT(svg_count_marks(&c), 3);
  CHECK_EQ_INT(count(svg, "class=\"tm-mark\""), 3);     /* NAN skipped */
  CHECK_EQ_INT(count(svg, "class=\"tm-derived\""), 2);  /* medians apart */
  CHECK_CONTAINS(svg, "data-plot=\"p1\" data-marks=\"3\"");
  CHECK_CONTAINS(svg, ">decode rate (tok/s)</text>");
  CHECK_CONTAINS(svg, ">threads (threads)</text>");
  CHECK_CONTAINS(svg, "runs &lt;a&amp;b&gt;");
  CHECK(!strstr(svg, "<a&b>"));
  CHECK_EQ_INT(count(svg, "class=\"tm-plot-area\""), 1);
  CHECK_CONTAINS(svg, "class=\"tm-legend\"");
  /* every mark inside the plot area */
  const char *area = strstr(svg, "class=\"tm-plot-area\"");
  double ax = attr(area, "x"), ay = attr(area, "y"), aw = attr(area, "width"),
         ah = attr(area, "height");
  CHECK(aw > 100 && ah > 100);
  size_t checked = 0;
  for (const char *p = strstr(svg, "<circle class=\"tm-mark\""); p;
       p = strstr(p + 1, "<circle class=\"tm-mark\"")) {
    double cx = attr(p, "cx"), cy = attr(p, "cy");
    CHECK_MSG(cx >= ax && cx <= ax + aw && cy >= ay && cy <= ay + ah, "mark %.1f,%.1f outside", cx, cy);
    checked++;
  }
  CHECK_EQ_INT(checked, 3);
  /* the highest value sits above the lowest: y grows upwards */
  const char *m1 = strstr(svg, "<circle class=\"tm-mark\"");
  const char *m3 = strstr(strstr(m1 + 1, "<circle class=\"tm-mark\"") + 1, "<circle class=\"tm-mark\"");
  CHECK(attr(m3, "cy") < attr(m1, "cy"));
  sbuf_free(&o);
}

static void test_log_axis(void) {
  double x[] = {0, 100, 1e4, 1e6}, y[] = {1, 2, 3, 4};
  struct svg_series s = {.name = "sweep", .x = x, .y = y, .n = 4, .line = true, .shape = SVG_SQUARE};
  struct svg_chart c = {.kind = SVG_XY, .id = "log", .x_label = "generation rate", .x_unit = "tok/s",
                        .y_label = "time", .y_unit = "s", .x_log = true, .series = &s, .n_series = 1};
  struct sbuf o;
  sbuf_init(&o);
  CHECK_EQ_INT(svg_render(&c, &o, NULL), 0);
  CHECK_EQ_INT(count(sbuf_str(&o), "class=\"tm-mark\""), 3); /* x = 0 has no place on a log axis */
  CHECK_CONTAINS(sbuf_str(&o), ">1M</text>");
  CHECK_CONTAINS(sbuf_str(&o), "log scale");
  sbuf_free(&o);
}

static void test_bars(void) {
  struct svg_bar bars[] = {{"PF a", 40, 0}, {"DC b", 87.5, 1}, {"DC c", NAN, 1}, {"DC d", 120, 1}};
  const char *groups[] = {"prefill", "decode"};
  struct svg_refline ref = {.vertical = true, .value = 100, .label = "100% of ceiling"};
  struct svg_chart c = {.kind = SVG_HBARS, .id = "bars", .x_label = "share of ceiling", .x_unit = "%",
                        .bars = bars, .n_bars = 4, .groups = groups, .n_groups = 2, .refs = &ref,
                        .n_refs = 1};
  struct sbuf o;
  sbuf_init(&o);
  CHECK_EQ_INT(svg_render(&c, &o, NULL), 0);
  const char *svg = sbuf_str(&o);
  CHECK_EQ_INT(count(svg, "class=\"tm-mark\""), 3);
  CHECK_CONTAINS(svg, "data-marks=\"3\"");
  CHECK_CONTAINS(svg, "100% of ceiling");
  CHECK_CONTAINS(svg, ">88%</text>");
  CHECK_CONTAINS(svg, ">share of ceiling (%)</text>");
  CHECK_EQ_INT(count(svg, "class=\"tm-ref\""), 1);
  CHECK_CONTAINS(svg, ">decode</text>");
  /* the 120% bar is longer than the 40% one */
  const char *b1 = strstr(svg, "<rect class=\"tm-mark\"");
  const char *b3 = strstr(strstr(b1 + 1, "<rect class=\"tm-mark\"") + 1, "<rect class=\"tm-mark\"");
  CHECK(attr(b3, "width") > 2.9 * attr(b1, "width"));
  sbuf_free(&o);
}

static void test_refusals(void) {
  double x[] = {NAN}, y[] = {1};
  struct svg_series s = {.name = "s", .x = x, .y = y, .n = 1, .shape = SVG_CIRCLE};
  struct svg_chart c = {.kind = SVG_XY, .id = "r", .x_label = "x", .x_unit = "tokens",
                        .y_label = "y", .y_unit = "ms", .series = &s, .n_series = 1};
  struct sbuf o;
  sbuf_init(&o);
  struct tm_err err = {{0}};
  CHECK_EQ_INT(svg_render(&c, &o, &err), -1);
  CHECK_CONTAINS(err.msg, "no finite point");
  c.y_unit = NULL;
  CHECK_EQ_INT(svg_render(&c, &o, &err), -1);
  CHECK_CONTAINS(err.msg, "unit");
  c.y_unit = "ms";
  c.id = "";
  CHECK_EQ_INT(svg_render(&c, &o, &err), -1);
  CHECK_CONTAINS(err.msg, "id");
  sbuf_free(&o);
}

/* A finite value near DBL_MAX: the headroom above it (x 1.02 for bars, + 4%
 * of the range for y) or the next round tick overflows to infinity. The chart
 * is refused with a message; it used to index ticks[-1] (n_ticks 0, found by
 * the clang static analyzer) or draw at "nan" coordinates. A large value that
 * still fits is drawn with finite coordinates. */
static void test_huge_values(void) {
  struct sbuf o;
  struct tm_err err = {{0}};
  const double huge[] = {1.79e308, 1.6e308};
  for (size_t k = 0; k < 2; k++) {
    struct svg_bar bars[] = {{"a", 1, 0}, {"b", huge[k], 0}};
    struct svg_chart c = {.kind = SVG_HBARS, .id = "big", .x_label = "rate", .x_unit = "tok/s",
                          .bars = bars, .n_bars = 2};
    sbuf_init(&o);
    CHECK_EQ_INT(svg_render(&c, &o, &err), -1);
    CHECK_CONTAINS(err.msg, "too large");
    sbuf_free(&o);
    double x[] = {1, 2}, y[] = {0, huge[k]};
    struct svg_series s = {.name = "s", .x = x, .y = y, .n = 2, .shape = SVG_CIRCLE};
    struct svg_chart xy = {.kind = SVG_XY, .id = "bigxy", .x_label = "x", .x_unit = "threads",
                           .y_label = "y", .y_unit = "tok/s", .series = &s, .n_series = 1};
    sbuf_init(&o);
    err.msg[0] = 0;
    CHECK_EQ_INT(svg_render(&xy, &o, &err), -1);
    CHECK_CONTAINS(err.msg, "too large");
    sbuf_free(&o);
  }
  double lx[] = {1, 1.5e308}, ly[] = {1, 2}; /* 10^309, the log axis' top tick, is inf */
  struct svg_series ls = {.name = "s", .x = lx, .y = ly, .n = 2, .shape = SVG_CIRCLE};
  struct svg_chart lc = {.kind = SVG_XY, .id = "biglog", .x_label = "x", .x_unit = "tok/s",
                         .y_label = "y", .y_unit = "s", .x_log = true, .series = &ls,
                         .n_series = 1};
  sbuf_init(&o);
  err.msg[0] = 0;
  CHECK_EQ_INT(svg_render(&lc, &o, &err), -1);
  CHECK_CONTAINS(err.msg, "x axis");
  sbuf_free(&o);
  double t[32];
  CHECK_EQ_INT(svg_nice_ticks(0, 1.6e308, 32, t), 0);
  CHECK_EQ_INT(svg_nice_ticks(-1e308, 1e308, 32, t), 0);
  struct svg_bar bars[] = {{"a", 1, 0}, {"b", 1e300, 0}};
  struct svg_chart c = {.kind = SVG_HBARS, .id = "large", .x_label = "rate", .x_unit = "tok/s",
                        .bars = bars, .n_bars = 2};
  sbuf_init(&o);
  CHECK_EQ_INT(svg_render(&c, &o, &err), 0);
  CHECK(!strstr(sbuf_str(&o), "nan") && !strstr(sbuf_str(&o), "inf"));
  sbuf_free(&o);
}

static void test_sbuf_escapes(void) {
  struct sbuf b;
  sbuf_init(&b);
  sbuf_put_csv(&b, "a,\"b\"");
  sbuf_puts(&b, "|");
  sbuf_put_csv(&b, "plain");
  sbuf_puts(&b, "|");
  sbuf_put_md(&b, "x | y\nz");
  CHECK_STR(sbuf_str(&b), "\"a,\"\"b\"\"\"|plain|x \\| y z");
  for (int i = 0; i < 1000; i++) sbuf_printf(&b, "%0300d", i); /* growth past small buffers */
  CHECK(sbuf_ok(&b));
  CHECK_EQ_INT(b.len, strlen(sbuf_str(&b)));
  sbuf_free(&b);
}

void tm_run_tests(void) {
  TM_RUN(test_ticks);
  TM_RUN(test_xy_marks);
  TM_RUN(test_log_axis);
  TM_RUN(test_bars);
  TM_RUN(test_refusals);
  TM_RUN(test_huge_values);
  TM_RUN(test_sbuf_escapes);
}
