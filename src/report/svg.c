/* svg: line / scatter / horizontal-bar charts as inline SVG (contract in
 * svg.h). Layout is computed in pixels from the chart's size: a title on top,
 * the y axis title rotated on the left, tick labels, the plot area, the x axis
 * title and the legend below. Text widths are estimated (no font metrics in a
 * C program): ~6.6 px per character at 12 px sans-serif, generous on purpose. */
#include "report/svg.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SVG_FONT "font-family=\"sans-serif\""
#define CHAR_W 6.6
#define MARK_R 3.5

static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                      "#e69f00", "#56b4e9", "#8c564b", "#7f7f00"};

const char *svg_color(int i) {
  if (i < 0) return "#000000";
  return palette[(size_t)i % (sizeof palette / sizeof palette[0])];
}

/* ------------------------------------------------------------ ticks, labels */

static double nice_step(double raw) {
  if (!(raw > 0) || !isfinite(raw)) return 1;
  double p = pow(10, floor(log10(raw)));
  double f = raw / p;
  double m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return m * p;
}

size_t svg_nice_ticks(double lo, double hi, size_t max, double *ticks) {
  if (max == 0 || !isfinite(lo) || !isfinite(hi)) return 0;
  if (hi < lo) {
    double t = lo;
    lo = hi;
    hi = t;
  }
  if (hi == lo) {
    double d = lo == 0 ? 1 : fabs(lo) * 0.1;
    lo -= d;
    hi += d;
  }
  if (!isfinite(hi - lo)) return 0; /* the span itself passes DBL_MAX */
  size_t want = max < 6 ? max : 6;
  double step = nice_step((hi - lo) / (double)(want > 1 ? want - 1 : 1));
  double start = floor(lo / step + 1e-9) * step;
  size_t n = 0;
  for (double t = start; n < max; t += step) {
    if (!isfinite(t)) return 0; /* a round tick past DBL_MAX */
    ticks[n++] = fabs(t) < step * 1e-9 ? 0 : t;
    if (t >= hi - step * 1e-9) break;
  }
  return n;
}

char *svg_fmt_tick(double v, char *buf, size_t n) {
  double a = fabs(v);
  if (a >= 1e9) snprintf(buf, n, "%.3gG", v / 1e9);
  else if (a >= 1e6) snprintf(buf, n, "%.3gM", v / 1e6);
  else if (a >= 1e4) snprintf(buf, n, "%.3gk", v / 1e3);
  else snprintf(buf, n, "%.4g", v);
  return buf;
}

/* ----------------------------------------------------------------- geometry */

struct axis {
  double lo, hi;       /* data range shown (log10 values when log) */
  bool log;
  double px0, px1;     /* pixel of lo and of hi */
  double ticks[32];
  size_t n_ticks;
};

static double axis_px(const struct axis *a, double v) {
  double t = a->log ? log10(v) : v;
  return a->px0 + (t - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

/* Range of the finite values (and positive, for a log axis). */
static void range_add(double v, bool log, double *lo, double *hi) {
  if (!isfinite(v) || (log && !(v > 0))) return;
  double t = log ? log10(v) : v;
  if (t < *lo) *lo = t;
  if (t > *hi) *hi = t;
}

/* 0, or -1 when the range has no finite ticks: values so near DBL_MAX that the
 * headroom above them or the next round tick overflows (the caller refuses the
 * chart). */
static int axis_setup(struct axis *a, double lo, double hi, bool log, bool zero) {
  a->log = log;
  if (!(lo <= hi)) lo = hi = log ? 0 : 0;
  if (log) {
    a->lo = floor(lo);
    a->hi = ceil(hi);
    if (a->hi == a->lo) a->hi = a->lo + 1;
    if (a->hi > DBL_MAX_10_EXP) return -1; /* the top tick, 10^hi, would be inf */
    a->n_ticks = 0;
    for (double e = a->lo; e <= a->hi + 1e-9 && a->n_ticks < 32; e += 1)
      a->ticks[a->n_ticks++] = pow(10, e);
    return 0;
  }
  if (zero) {
    if (lo > 0) lo = 0;
    if (hi < 0) hi = 0;
  }
  a->n_ticks = svg_nice_ticks(lo, hi, 32, a->ticks);
  if (a->n_ticks == 0) return -1;
  a->lo = a->ticks[0];
  a->hi = a->ticks[a->n_ticks - 1];
  if (a->hi <= a->lo) a->hi = a->lo + 1;
  return 0;
}

static int too_large(const struct svg_chart *c, const char *axis, double lo, double hi,
                     struct tm_err *err) {
  return tm_errf(err, "svg: chart %s: values from %g to %g are too large to draw on the %s axis",
                 c->id, lo, hi, axis);
}

static void put_axis_title(struct sbuf *o, const char *label, const char *unit) {
  sbuf_put_xml(o, label);
  sbuf_puts(o, " (");
  sbuf_put_xml(o, unit);
  sbuf_puts(o, ")");
}

static void put_num(struct sbuf *o, double v) {
  char b[32];
  if (fabs(v) >= 100 || v == floor(v)) snprintf(b, sizeof b, "%.0f", v);
  else snprintf(b, sizeof b, "%.3g", v);
  sbuf_puts(o, b);
}

/* One mark centred on (px, py). */
static void put_mark(struct sbuf *o, enum svg_shape shape, double px, double py,
                     const char *color, const char *cls) {
  const double r = MARK_R;
  switch (shape) {
  case SVG_SQUARE:
    sbuf_printf(o, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">",
                cls, px - r, py - r, 2 * r, 2 * r, color);
    break;
  case SVG_TRIANGLE:
    sbuf_printf(o, "<path class=\"%s\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\">", cls,
                px, py - r * 1.2, px + r * 1.1, py + r * 0.8, px - r * 1.1, py + r * 0.8, color);
    break;
  case SVG_DIAMOND:
    sbuf_printf(o, "<path class=\"%s\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.8\">",
                cls, px, py - r * 1.4, px + r * 1.4, py, px, py + r * 1.4, px - r * 1.4, py, color);
    break;
  default:
    sbuf_printf(o, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\">", cls, px,
                py, r, color);
  }
}

static const char *mark_close(enum svg_shape shape) {
  return shape == SVG_SQUARE ? "</rect>" : shape == SVG_CIRCLE ? "</circle>" : "</path>";
}

/* Legend below the plot: items flow left to right, wrapping at width. Returns
 * the height used. When draw is false only measures. */
struct legend_item {
  const char *name;
  const char *color;
  enum svg_shape shape;
  bool line, dashed;
};

static double legend(struct sbuf *o, const struct legend_item *it, size_t n, double x0,
                     double y0, double width, bool draw) {
  double x = x0, y = y0, row_h = 18;
  if (n == 0) return 0;
  if (draw) sbuf_puts(o, "<g class=\"tm-legend\">");
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(it[i].name);
    if (len > 90) len = 90;
    double w = 30 + CHAR_W * (double)len + 14;
    if (x > x0 && x + w > x0 + width) {
      x = x0;
      y += row_h;
    }
    if (draw) {
      double cy = y + row_h / 2;
      if (it[i].line)
        sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>",
                    x, cy, x + 22, cy, it[i].color,
                    it[i].dashed ? " stroke-dasharray=\"5 3\"" : "");
      if (it[i].shape != SVG_NO_MARK) {
        put_mark(o, it[i].shape, x + 11, cy, it[i].color, "tm-legend-mark");
        sbuf_puts(o, mark_close(it[i].shape));
      }
      sbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" " SVG_FONT ">", x + 28,
                  cy + 4);
      if (strlen(it[i].name) > 90) {
        char cut[91];
        memcpy(cut, it[i].name, 87);
        memcpy(cut + 87, "...", 4);
        sbuf_put_xml(o, cut);
      } else {
        sbuf_put_xml(o, it[i].name);
      }
      sbuf_puts(o, "</text>");
    }
    x += w;
  }
  if (draw) sbuf_puts(o, "</g>");
  return y + row_h - y0;
}

static bool has_text(const char *s) { return s && *s; }

static int check_common(const struct svg_chart *c, struct tm_err *err) {
  if (!has_text(c->id)) return tm_errf(err, "svg: chart without an id");
  if (!has_text(c->x_label) || !has_text(c->x_unit))
    return tm_errf(err, "svg: chart %s: x axis needs a label and a unit", c->id);
  if (c->kind == SVG_XY && (!has_text(c->y_label) || !has_text(c->y_unit)))
    return tm_errf(err, "svg: chart %s: y axis needs a label and a unit", c->id);
  return 0;
}

size_t svg_count_marks(const struct svg_chart *c) {
  size_t n = 0;
  if (c->kind == SVG_HBARS) {
    for (size_t i = 0; i < c->n_bars; i++)
      if (isfinite(c->bars[i].value)) n++;
    return n;
  }
  for (size_t s = 0; s < c->n_series; s++) {
    const struct svg_series *se = &c->series[s];
    if (se->shape == SVG_NO_MARK || se->derived) continue;
    for (size_t i = 0; i < se->n; i++)
      if (isfinite(se->x[i]) && isfinite(se->y[i]) && (!c->x_log || se->x[i] > 0)) n++;
  }
  return n;
}

static void put_open(struct sbuf *o, const struct svg_chart *c, double w, double h) {
  sbuf_printf(o, "<svg class=\"tm-plot\" data-plot=\"");
  sbuf_put_xml(o, c->id);
  sbuf_printf(o, "\" data-marks=\"%zu\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">",
              svg_count_marks(c), w, h, w, h);
  sbuf_puts(o, "<title>");
  sbuf_put_xml(o, has_text(c->title) ? c->title : c->id);
  sbuf_puts(o, "</title>");
  sbuf_printf(o, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>", w, h);
  if (has_text(c->title)) {
    sbuf_printf(o, "<text class=\"tm-title\" x=\"%.1f\" y=\"22\" font-size=\"15\" font-weight=\"bold\" " SVG_FONT ">", 12.0);
    sbuf_put_xml(o, c->title);
    sbuf_puts(o, "</text>");
  }
}

static void put_refline(struct sbuf *o, const struct svg_refline *r, const struct axis *ax,
                        const struct axis *ay, bool bars) {
  if (!isfinite(r->value)) return;
  if (r->vertical) {
    double x = axis_px(ax, r->value);
    double ytop = bars ? ay->px0 : ay->px1, ybot = bars ? ay->px1 : ay->px0;
    sbuf_printf(o, "<line class=\"tm-ref\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>",
                x, ytop, x, ybot);
    if (has_text(r->label)) {
      sbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#444444\" " SVG_FONT ">",
                  x - 4, ytop + 12);
      sbuf_put_xml(o, r->label);
      sbuf_puts(o, "</text>");
    }
  } else {
    double y = axis_px(ay, r->value);
    sbuf_printf(o, "<line class=\"tm-ref\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>",
                ax->px0, y, ax->px1, y);
    if (has_text(r->label)) {
      sbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#444444\" " SVG_FONT ">",
                  ax->px1 - 4, y - 4);
      sbuf_put_xml(o, r->label);
      sbuf_puts(o, "</text>");
    }
  }
}

/* x ticks, grid and title along the bottom of the plot area. */
static void put_x_axis(struct sbuf *o, const struct svg_chart *c, const struct axis *ax,
                       double top, double bottom) {
  char b[32];
  for (size_t i = 0; i < ax->n_ticks; i++) {
    double x = axis_px(ax, ax->ticks[i]);
    sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>", x,
                top, x, bottom);
    sbuf_printf(o, "<text class=\"tm-tick\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" " SVG_FONT ">%s</text>",
                x, bottom + 15, svg_fmt_tick(ax->ticks[i], b, sizeof b));
  }
  sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>",
              ax->px0, bottom, ax->px1, bottom);
  sbuf_printf(o, "<text class=\"tm-axis-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" " SVG_FONT ">",
              (ax->px0 + ax->px1) / 2, bottom + 34);
  put_axis_title(o, c->x_label, c->x_unit);
  if (c->x_log) sbuf_puts(o, ", log scale");
  sbuf_puts(o, "</text>");
}

/* ------------------------------------------------------------------ XY chart */

static int render_xy(const struct svg_chart *c, struct sbuf *o, struct tm_err *err) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  size_t drawable = 0;
  for (size_t s = 0; s < c->n_series; s++) {
    const struct svg_series *se = &c->series[s];
    if (!has_text(se->name)) return tm_errf(err, "svg: chart %s: series %zu has no name", c->id, s);
    for (size_t i = 0; i < se->n; i++) {
      if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (c->x_log && !(se->x[i] > 0))) continue;
      range_add(se->x[i], c->x_log, &xlo, &xhi);
      range_add(se->y[i], false, &ylo, &yhi);
      drawable++;
    }
  }
  if (drawable == 0) return tm_errf(err, "svg: chart %s: no finite point to draw", c->id);
  for (size_t r = 0; r < c->n_refs; r++) {
    if (c->refs[r].vertical) range_add(c->refs[r].value, c->x_log, &xlo, &xhi);
    else range_add(c->refs[r].value, false, &ylo, &yhi);
  }
  if (c->x_zero && !c->x_log) range_add(0, false, &xlo, &xhi);

  double w = c->width > 0 ? c->width : 720, h = c->height > 0 ? c->height : 360;
  double left = 78, right = 24, top = has_text(c->title) ? 40 : 16, bottom_axis = 46;
  struct legend_item items[64];
  size_t n_items = 0;
  for (size_t s = 0; s < c->n_series && n_items < 64; s++) {
    const struct svg_series *se = &c->series[s];
    if (se->no_legend) continue;
    items[n_items++] = (struct legend_item){se->name, svg_color(se->color), se->shape, se->line,
                                            se->dashed};
  }
  double legend_h = legend(NULL, items, n_items, left, 0, w - left - right, false);
  double total_h = h + legend_h + 6;

  struct axis ax, ay;
  if (axis_setup(&ax, xlo, xhi, c->x_log, c->x_zero) != 0)
    return too_large(c, "x", c->x_log ? pow(10, xlo) : xlo, c->x_log ? pow(10, xhi) : xhi, err);
  if (c->x_integer && !c->x_log) {
    /* keep whole-number ticks only (1, 2 threads: never "1.5 threads") */
    size_t k = 0;
    for (size_t i = 0; i < ax.n_ticks; i++)
      if (fabs(ax.ticks[i] - round(ax.ticks[i])) < 1e-9) ax.ticks[k++] = ax.ticks[i];
    ax.n_ticks = k;
  }
  /* headroom above the highest point so marks are not cut by the frame */
  if (axis_setup(&ay, ylo, yhi + (yhi - ylo) * 0.04, false, c->y_zero) != 0)
    return too_large(c, "y", ylo, yhi, err);
  double pl = left, pr = w - right, pt = top, pb = h - bottom_axis;
  ax.px0 = pl + 8;
  ax.px1 = pr - 8;
  ay.px0 = pb;
  ay.px1 = pt;

  put_open(o, c, w, total_h);
  sbuf_printf(o, "<rect class=\"tm-plot-area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" stroke=\"#bbbbbb\"/>",
              pl, pt, pr - pl, pb - pt);
  char b[32];
  for (size_t i = 0; i < ay.n_ticks; i++) {
    double y = axis_px(&ay, ay.ticks[i]);
    sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>", pl, y,
                pr, y);
    sbuf_printf(o, "<text class=\"tm-tick\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" " SVG_FONT ">%s</text>",
                pl - 6, y + 4, svg_fmt_tick(ay.ticks[i], b, sizeof b));
  }
  sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>", pl, pt,
              pl, pb);
  sbuf_printf(o, "<text class=\"tm-axis-label\" transform=\"translate(16 %.1f) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\" " SVG_FONT ">",
              (pt + pb) / 2);
  put_axis_title(o, c->y_label, c->y_unit);
  sbuf_puts(o, "</text>");
  put_x_axis(o, c, &ax, pt, pb);

  for (size_t r = 0; r < c->n_refs; r++) put_refline(o, &c->refs[r], &ax, &ay, false);

  /* derived series (medians, fits) first: the records' own marks are drawn
   * over them and never hidden by a summary */
  for (size_t k = 0; k < 2 * c->n_series; k++) {
    size_t s = k % c->n_series;
    const struct svg_series *se = &c->series[s];
    if (se->derived != (k < c->n_series)) continue;
    const char *color = svg_color(se->color);
    sbuf_printf(o, "<g class=\"tm-series\" data-series=\"%zu\">", s);
    if (se->line) {
      bool pen = false;
      sbuf_puts(o, "<path class=\"tm-line\" d=\"");
      for (size_t i = 0; i < se->n; i++) {
        if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (c->x_log && !(se->x[i] > 0))) continue;
        sbuf_printf(o, "%c%.1f %.1f", pen ? 'L' : 'M', axis_px(&ax, se->x[i]),
                    axis_px(&ay, se->y[i]));
        pen = true;
      }
      sbuf_printf(o, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>", color,
                  se->width > 0 ? se->width : 1.5,
                  se->dashed ? " stroke-dasharray=\"5 3\"" : "");
    }
    if (se->shape != SVG_NO_MARK) {
      const char *cls = se->derived ? "tm-derived" : "tm-mark";
      for (size_t i = 0; i < se->n; i++) {
        if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (c->x_log && !(se->x[i] > 0))) continue;
        put_mark(o, se->shape, axis_px(&ax, se->x[i]), axis_px(&ay, se->y[i]), color, cls);
        sbuf_puts(o, "<title>");
        sbuf_put_xml(o, se->name);
        sbuf_puts(o, ": ");
        put_num(o, se->x[i]);
        sbuf_puts(o, " ");
        sbuf_put_xml(o, c->x_unit);
        sbuf_puts(o, ", ");
        put_num(o, se->y[i]);
        sbuf_puts(o, " ");
        sbuf_put_xml(o, c->y_unit);
        sbuf_puts(o, "</title>");
        sbuf_puts(o, mark_close(se->shape));
      }
    }
    sbuf_puts(o, "</g>");
  }
  legend(o, items, n_items, left, h, w - left - right, true);
  sbuf_puts(o, "</svg>\n");
  return sbuf_ok(o) ? 0 : tm_errf(err, "svg: out of memory");
}

/* --------------------------------------------------------------- bar chart */

static int render_bars(const struct svg_chart *c, struct sbuf *o, struct tm_err *err) {
  double xlo = INFINITY, xhi = -INFINITY;
  size_t longest = 0, drawable = 0;
  for (size_t i = 0; i < c->n_bars; i++) {
    if (!has_text(c->bars[i].label)) return tm_errf(err, "svg: chart %s: bar %zu has no label", c->id, i);
    if (!isfinite(c->bars[i].value)) continue;
    range_add(c->bars[i].value, false, &xlo, &xhi);
    size_t len = strlen(c->bars[i].label);
    if (len > longest) longest = len;
    drawable++;
  }
  if (drawable == 0) return tm_errf(err, "svg: chart %s: no finite bar to draw", c->id);
  for (size_t r = 0; r < c->n_refs; r++)
    if (c->refs[r].vertical) range_add(c->refs[r].value, false, &xlo, &xhi);
  range_add(0, false, &xlo, &xhi); /* bars start at 0 */

  const size_t max_label = 60;
  if (longest > max_label) longest = max_label;
  double w = c->width > 0 ? c->width : 720, bar_h = 16, gap = 8;
  double left = 16 + CHAR_W * (double)longest, right = 56;
  if (left > w * 0.6) left = w * 0.6;
  double top = has_text(c->title) ? 40 : 16, bottom_axis = 46;
  double pt = top, pb = top + (double)drawable * (bar_h + gap) + gap;
  double h = pb + bottom_axis;
  struct legend_item items[16];
  size_t n_items = 0;
  for (size_t g = 0; g < c->n_groups && n_items < 16; g++)
    items[n_items++] = (struct legend_item){c->groups[g], svg_color((int)g), SVG_SQUARE, false, false};
  double legend_h = legend(NULL, items, n_items, left, 0, w - left - right, false);

  struct axis ax, ay = {0};
  if (axis_setup(&ax, xlo, xhi * 1.02, false, true) != 0) return too_large(c, "x", xlo, xhi, err);
  ax.px0 = left;
  ax.px1 = w - right;
  ay.px0 = pt;
  ay.px1 = pb;

  put_open(o, c, w, h + legend_h + 6);
  sbuf_printf(o, "<rect class=\"tm-plot-area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" stroke=\"#bbbbbb\"/>",
              ax.px0, pt, ax.px1 - ax.px0, pb - pt);
  put_x_axis(o, c, &ax, pt, pb);
  double y = pt + gap;
  char b[32];
  sbuf_puts(o, "<g class=\"tm-series\">");
  for (size_t i = 0; i < c->n_bars; i++) {
    const struct svg_bar *bar = &c->bars[i];
    if (!isfinite(bar->value)) continue;
    double x0 = axis_px(&ax, 0), x1 = axis_px(&ax, bar->value);
    double xa = x0 < x1 ? x0 : x1, bw = fabs(x1 - x0);
    if (bw < 1) bw = 1; /* a 0% bar still shows as a sliver */
    sbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" " SVG_FONT ">",
                ax.px0 - 6, y + bar_h - 4);
    if (strlen(bar->label) > max_label) {
      char cut[64];
      memcpy(cut, bar->label, max_label - 3);
      memcpy(cut + max_label - 3, "...", 4);
      sbuf_put_xml(o, cut);
    } else {
      sbuf_put_xml(o, bar->label);
    }
    sbuf_puts(o, "</text>");
    sbuf_printf(o, "<rect class=\"tm-mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                xa, y, bw, bar_h, svg_color(bar->group));
    sbuf_put_xml(o, bar->label);
    sbuf_puts(o, ": ");
    put_num(o, bar->value);
    sbuf_puts(o, " ");
    sbuf_put_xml(o, c->x_unit);
    sbuf_puts(o, "</title></rect>");
    if (fabs(bar->value) >= 10 && fabs(bar->value) < 1e4) snprintf(b, sizeof b, "%.0f", bar->value);
    else if (fabs(bar->value) < 10) snprintf(b, sizeof b, "%.2g", bar->value);
    else svg_fmt_tick(bar->value, b, sizeof b);
    sbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" " SVG_FONT ">%s%s</text>",
                x1 + 4, y + bar_h - 4, b, strcmp(c->x_unit, "%") == 0 ? "%" : "");
    y += bar_h + gap;
  }
  sbuf_puts(o, "</g>");
  for (size_t r = 0; r < c->n_refs; r++) put_refline(o, &c->refs[r], &ax, &ay, true);
  legend(o, items, n_items, left, h, w - left - right, true);
  sbuf_puts(o, "</svg>\n");
  return sbuf_ok(o) ? 0 : tm_errf(err, "svg: out of memory");
}

int svg_render(const struct svg_chart *c, struct sbuf *out, struct tm_err *err) {
  if (check_common(c, err) < 0) return -1;
  return c->kind == SVG_HBARS ? render_bars(c, out, err) : render_xy(c, out, err);
}
