/* svg: a small plotting layer that writes one chart as inline SVG (for the
 * HTML report, and for `whatif --html`). Two kinds of chart:
 *  - SVG_XY: line and/or scatter series on numeric axes (x linear or log10);
 *  - SVG_HBARS: horizontal bars, one per labelled item, coloured by group.
 * Both take reference lines (e.g. "100% of ceiling").
 *
 * What the markup promises (the browser test relies on it):
 *  - the root is <svg class="tm-plot" data-plot="ID" data-marks="N" ...>, where N
 *    is the count of data marks drawn;
 *  - the plotting area is one <rect class="tm-plot-area">; every mark lies
 *    inside it (the axis ranges are chosen to cover every point and line);
 *  - one data mark per data point: an element with class "tm-mark" (a
 *    circle, square, triangle or bar), carrying a <title> with its values;
 *    series flagged `derived` (medians, fits) draw their points with class
 *    "tm-derived" instead, so the marks of the records can be counted apart;
 *  - axis titles are <text class="tm-axis-label"> and always end with the unit
 *    in parentheses: "decode rate (tok/s)";
 *  - a legend (<g class="tm-legend">) names every series / group.
 * Non-finite points are skipped (a blank is not a zero) and not counted.
 * Colours: the Okabe-Ito palette (readable by colour-blind people), plus shape
 * per series so print and grey scale still tell series apart. */
#ifndef TM_SVG_H
#define TM_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "report/sbuf.h"
#include "util/err.h"

enum svg_kind { SVG_XY = 0, SVG_HBARS = 1 };
enum svg_shape { SVG_CIRCLE = 0, SVG_SQUARE, SVG_TRIANGLE, SVG_DIAMOND, SVG_NO_MARK };

struct svg_series {
  const char *name;          /* legend text (required) */
  const double *x, *y;       /* n points; drawn in the order given */
  size_t n;
  bool line;                 /* connect consecutive finite points */
  enum svg_shape shape;      /* SVG_NO_MARK: line only, no marks (and none counted) */
  bool derived;              /* medians / fits: class tm-derived, not tm-mark */
  bool dashed;
  int color;                 /* palette index; -1 = black */
  double width;              /* line width in px; 0 = 1.5 */
  bool no_legend;            /* leave out of the legend (a median line beside its runs) */
};

struct svg_refline {
  bool vertical;             /* x = value (true) or y = value (false) */
  double value;
  const char *label;         /* drawn beside the line, e.g. "100% of ceiling" */
};

struct svg_bar {
  const char *label;         /* category (drawn left of the bar) */
  double value;              /* bar length on the x axis; non-finite: skipped */
  int group;                 /* index into groups[] (colour + legend) */
};

struct svg_chart {
  enum svg_kind kind;
  const char *id;            /* data-plot attribute, unique in the page */
  const char *title;
  const char *x_label, *x_unit;   /* axis title "x_label (x_unit)"; unit required */
  const char *y_label, *y_unit;   /* SVG_XY only */
  bool x_log;                /* log10 x axis (values <= 0 are skipped) */
  bool y_zero;               /* include 0 in the y range (rates: true) */
  bool x_zero;               /* include 0 in the x range */
  bool x_integer;            /* x ticks at whole numbers only (threads, tokens) */
  int width, height;         /* px; 0 = 720 x 360 (bars: height grows with items) */
  const struct svg_series *series;
  size_t n_series;
  const struct svg_bar *bars;
  size_t n_bars;
  const char *const *groups; /* bar group names, for the legend */
  size_t n_groups;
  const struct svg_refline *refs;
  size_t n_refs;
};

/* Appends the chart's <svg> element to out. 0, or -1 with err on a chart that
 * cannot be drawn (missing id/labels/units, nothing to draw) or out of memory. */
int svg_render(const struct svg_chart *c, struct sbuf *out, struct tm_err *err);

/* Count of data marks svg_render draws for c (the value of data-marks). */
size_t svg_count_marks(const struct svg_chart *c);

/* The palette colour for index i ("#0072b2"...); i < 0 gives black. */
const char *svg_color(int i);

/* "Nice" axis ticks covering [lo, hi] (1-2-5 steps): up to max ticks into
 * ticks; returns the count, 0 when lo or hi is not finite or a tick would
 * overflow (values near DBL_MAX). Exposed for tests. */
size_t svg_nice_ticks(double lo, double hi, size_t max, double *ticks);
/* Tick label: 3 significant digits, k/M/G suffixes from 10,000 up ("25k", "1M"). */
char *svg_fmt_tick(double v, char *buf, size_t n);

#endif
