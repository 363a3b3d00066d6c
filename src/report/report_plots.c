/* report_plots: the plots of the HTML report, built from the records and the
 * series (which plots, and what one mark is: report.h and docs/report.md).
 * Each section draws one <figure> per plot through svg.h, or says in a
 * paragraph why the records give nothing to draw: an empty plot is never
 * shown, and nothing is invented. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/keys.h"
#include "report/report_internal.h"
#include "report/svg.h"
#include "stats/stats.h"

/* ----------------------------------------------------- a little allocation */

/* Every array a section builds is registered here and freed at once, so the
 * error paths stay one line each. */
struct pool {
  void **p;
  size_t n, cap;
  int oom;
};

static void *pool_alloc(struct pool *pl, size_t count, size_t size) {
  if (pl->oom) return NULL;
  if (count == 0) count = 1;
  if (pl->n == pl->cap) {
    size_t cap = pl->cap ? pl->cap * 2 : 32;
    void **np = realloc(pl->p, cap * sizeof *np);
    if (!np) {
      pl->oom = 1;
      return NULL;
    }
    pl->p = np;
    pl->cap = cap;
  }
  void *q = calloc(count, size);
  if (!q) {
    pl->oom = 1;
    return NULL;
  }
  pl->p[pl->n++] = q;
  return q;
}

static void pool_free(struct pool *pl) {
  for (size_t i = 0; i < pl->n; i++) free(pl->p[i]);
  free(pl->p);
  memset(pl, 0, sizeof *pl);
}

/* A figure as people read it: whole numbers from 100 up, 3 significant digits below. */
static void fmt_fig(double v, char *buf, size_t n) {
  if (!isfinite(v)) snprintf(buf, n, "?");
  else if (fabs(v) >= 100) snprintf(buf, n, "%.0f", v);
  else snprintf(buf, n, "%.3g", v);
}

static double median_of(const double *v, size_t n) { return stats_percentile(v, n, 50); }

static int figure(struct sbuf *o, const struct svg_chart *c, const char *caption,
                  struct tm_err *err) {
  sbuf_puts(o, "<figure class=\"tm-figure\">\n");
  if (svg_render(c, o, err) < 0) return -1;
  if (caption && *caption) {
    sbuf_puts(o, "<figcaption>");
    sbuf_put_xml(o, caption);
    sbuf_puts(o, "</figcaption>\n");
  }
  sbuf_puts(o, "</figure>\n");
  return 0;
}

static bool timed_ok(json_t *run) {
  return !json_is_true(json_object_get(run, "warmup")) &&
         !json_is_true(json_object_get(run, "calibration")) &&
         !json_is_true(json_object_get(run, "cold")) &&
         json_is_true(json_object_get(run, "ok"));
}

/* ------------------------------------------------ decode over output length */

struct curve_run {
  double *x, *y;
  size_t n;
  long long index;
};
struct curve_group {
  char label[320];
  struct curve_run *runs;
  size_t n_runs, cap;
};

/* The plot a run's curve belongs to: the configuration, as the table names it. */
static void curve_label(const struct results_invocation *inv, json_t *run, char *buf, size_t n) {
  const char *test = record_str(run, RK_TEST);
  const char *backend = record_str(run, RK_BACKEND);
  if (!backend && inv->identity) backend = record_str(inv->identity, RK_BACKEND);
  if (test) {
    const char *model = record_str(run, RK_MODEL_NAME);
    if (!model) model = record_str(run, RK_MODEL_FILE);
    const char *type = record_str(run, RK_MODEL_TYPE);
    snprintf(buf, n, "%s | %s%s%s | %s | t%lld | d%lld", backend ? backend : "engine",
             model ? model : "?", type && (!model || !strstr(model, type)) ? " | " : "",
             type && (!model || !strstr(model, type)) ? type : "", test,
             record_int(run, RK_THREADS, -1), record_int(run, RK_DEPTH, -1));
  } else {
    const char *target = record_str(run, RK_TARGET);
    const char *model = record_str(run, RK_MODEL);
    const char *workload = record_str(run, RK_WORKLOAD);
    snprintf(buf, n, "%s | %s | %s | %s | p%lld n%lld", backend ? backend : "?",
             target ? target : "?", model ? model : "?", workload ? workload : "?",
             record_int(run, RK_TOKENS_PROCESSED, -1), record_int(run, RK_MAX_TOKENS, -1));
    /* standard workloads vary their prompt a little from run to run: one plot each */
    if (workload && (!strcmp(workload, "classify") || !strcmp(workload, "extract") ||
                     !strcmp(workload, "generate")))
      snprintf(buf, n, "%s | %s | %s | %s", backend ? backend : "?", target ? target : "?",
               model ? model : "?", workload);
  }
}

/* Rule 5 on the curve: a segment of fewer than RECORD_MIN_DECODE_TOKENS
 * tokens gives no mark. Records written since hold none; older ones (8-token
 * halves of an in-process tg16, a server's 51-60) do. */
static bool segment_long_enough(json_t *seg) {
  double from = record_num(seg, RK_SEGMENT_FROM), to = record_num(seg, RK_SEGMENT_TO);
  return to - from + 1 >= RECORD_MIN_DECODE_TOKENS;
}

static size_t curve_points(json_t *segs) {
  size_t n = 0;
  for (size_t k = 0; k < json_array_size(segs); k++)
    n += segment_long_enough(json_array_get(segs, k));
  return n;
}

static int section_decode_curves(const struct report *rep, struct sbuf *o, struct pool *pl,
                                 struct tm_err *err) {
  const struct results *r = rep->results;
  struct curve_group *groups = NULL;
  size_t n_groups = 0, cap_groups = 0;
  for (size_t i = 0; i < r->n_inv; i++) {
    const struct results_invocation *inv = &r->inv[i];
    for (size_t j = 0; j < inv->n_runs; j++) {
      json_t *run = inv->runs[j];
      if (!timed_ok(run)) continue;
      json_t *seg = record_get(run, record_str(run, RK_TEST) ? RK_DECODE_BY_SEGMENT
                                                             : RK_RATES_DECODE_BY_SEGMENT);
      if (!json_is_array(seg) || curve_points(seg) == 0) continue;
      char label[320];
      curve_label(inv, run, label, sizeof label);
      struct curve_group *g = NULL;
      for (size_t k = 0; k < n_groups; k++)
        if (!strcmp(groups[k].label, label)) g = &groups[k];
      if (!g) {
        if (n_groups == cap_groups) {
          size_t cap = cap_groups ? cap_groups * 2 : 8;
          struct curve_group *ng = pool_alloc(pl, cap, sizeof *ng);
          if (!ng) return tm_errf(err, "report: out of memory");
          if (n_groups) memcpy(ng, groups, n_groups * sizeof *ng);
          groups = ng;
          cap_groups = cap;
        }
        g = &groups[n_groups++];
        memset(g, 0, sizeof *g);
        snprintf(g->label, sizeof g->label, "%s", label);
      }
      if (g->n_runs == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        struct curve_run *nr = pool_alloc(pl, cap, sizeof *nr);
        if (!nr) return tm_errf(err, "report: out of memory");
        if (g->n_runs) memcpy(nr, g->runs, g->n_runs * sizeof *nr);
        g->runs = nr;
        g->cap = cap;
      }
      struct curve_run *cr = &g->runs[g->n_runs++];
      size_t ns = json_array_size(seg);
      cr->x = pool_alloc(pl, ns, sizeof(double));
      cr->y = pool_alloc(pl, ns, sizeof(double));
      if (!cr->x || !cr->y) return tm_errf(err, "report: out of memory");
      cr->index = record_int(run, RK_INDEX, (long long)g->n_runs - 1);
      for (size_t k = 0; k < ns; k++) {
        json_t *s = json_array_get(seg, k);
        if (!segment_long_enough(s)) continue;
        double from = record_num(s, RK_SEGMENT_FROM), to = record_num(s, RK_SEGMENT_TO);
        /* x = the segment's middle output token: a segment is a span, its
         * rate belongs to the middle of it */
        cr->x[cr->n] = (from + to) / 2;
        cr->y[cr->n] = record_num(s, RK_SEGMENT_TOK_S);
        cr->n++;
      }
    }
  }
  sbuf_puts(o, "<h3 id=\"plot-decode-curve\">DC decode rate over output length</h3>\n");
  if (n_groups == 0) {
    sbuf_puts(o, "<p class=\"tm-none\">No decode curve in these records: in-process tg runs and "
                 "server runs of at least 24 generated tokens carry one "
                 "(<code>decode_by_segment</code>).</p>\n");
    return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
  }
  for (size_t gi = 0; gi < n_groups; gi++) {
    struct curve_group *g = &groups[gi];
    struct svg_series *ser = pool_alloc(pl, g->n_runs + 1, sizeof *ser);
    char **names = pool_alloc(pl, g->n_runs, sizeof *names);
    /* the median per segment position over the runs that have it */
    size_t max_pts = 0;
    for (size_t k = 0; k < g->n_runs; k++) max_pts += g->runs[k].n;
    double *mx = pool_alloc(pl, max_pts, sizeof(double)), *my = pool_alloc(pl, max_pts, sizeof(double));
    double *tmp = pool_alloc(pl, g->n_runs, sizeof(double));
    if (!ser || !names || !mx || !my || !tmp) return tm_errf(err, "report: out of memory");
    size_t nm = 0;
    for (size_t k = 0; k < g->n_runs; k++) {
      for (size_t p = 0; p < g->runs[k].n; p++) {
        double x = g->runs[k].x[p];
        bool seen = false;
        for (size_t q = 0; q < nm; q++) seen = seen || mx[q] == x;
        if (seen || !isfinite(x)) continue;
        size_t nt = 0;
        for (size_t k2 = 0; k2 < g->n_runs; k2++)
          for (size_t p2 = 0; p2 < g->runs[k2].n; p2++)
            if (g->runs[k2].x[p2] == x) tmp[nt++] = g->runs[k2].y[p2];
        mx[nm] = x;
        my[nm] = median_of(tmp, nt);
        nm++;
      }
    }
    /* sort the median points by x for the line (insertion sort: a few points) */
    for (size_t a = 1; a < nm; a++)
      for (size_t b = a; b > 0 && mx[b - 1] > mx[b]; b--) {
        double t = mx[b]; mx[b] = mx[b - 1]; mx[b - 1] = t;
        t = my[b]; my[b] = my[b - 1]; my[b - 1] = t;
      }
    for (size_t k = 0; k < g->n_runs; k++) {
      names[k] = pool_alloc(pl, 32, 1);
      if (!names[k]) return tm_errf(err, "report: out of memory");
      snprintf(names[k], 32, "run %lld", g->runs[k].index + 1);
      ser[k] = (struct svg_series){.name = names[k], .x = g->runs[k].x, .y = g->runs[k].y,
                                   .n = g->runs[k].n, .line = true, .shape = SVG_CIRCLE,
                                   .color = (int)k, .width = 1.2};
    }
    ser[g->n_runs] = (struct svg_series){.name = "median of the runs", .x = mx, .y = my, .n = nm,
                                         .line = true, .shape = SVG_DIAMOND, .derived = true,
                                         .color = -1, .width = 2.5};
    char id[48], title[400];
    snprintf(id, sizeof id, "decode-curve-%zu", gi + 1);
    snprintf(title, sizeof title, "Decode rate over output length: %s", g->label);
    struct svg_chart c = {.kind = SVG_XY, .id = id, .title = title,
                          .x_label = "output token position (middle of segment)",
                          .x_unit = "tokens", .y_label = "DC decode rate", .y_unit = "tok/s",
                          .y_zero = true, .x_zero = true, .series = ser,
                          .n_series = g->n_runs + 1};
    if (figure(o, &c, "One mark per segment of each timed run (the records' decode_by_segment); "
                      "black diamonds: the median over the runs.", err) < 0)
      return -1;
  }
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}

/* ---------------------------------------------- TTFT against prompt length */

static int section_ttft(const struct report *rep, struct sbuf *o, struct pool *pl,
                        struct tm_err *err) {
  sbuf_puts(o, "<h3 id=\"plot-ttft\">FX time to first token against prompt length</h3>\n");
  size_t drawn = 0;
  for (size_t gi = 0; gi < rep->ttft.n; gi++) {
    const struct ttft_group *g = &rep->ttft.g[gi];
    if (g->n == 0) continue;
    struct ttft_fit fit;
    struct tm_err ferr = {{0}};
    bool have_fit = ttft_fit_points(g->len, g->ttft_ms, g->n, &fit, &ferr) == 0;
    struct svg_series ser[2];
    size_t ns = 0;
    ser[ns++] = (struct svg_series){.name = "timed runs", .x = g->len, .y = g->ttft_ms,
                                    .n = g->n, .shape = SVG_CIRCLE, .color = 0};
    char fit_name[160], caption[600];
    double *fx = pool_alloc(pl, 2, sizeof(double)), *fy = pool_alloc(pl, 2, sizeof(double));
    if (!fx || !fy) return tm_errf(err, "report: out of memory");
    if (have_fit) {
      fx[0] = 0;
      fx[1] = fit.max_len;
      fy[0] = ttft_predict_ms(&fit, 0, NULL);
      fy[1] = ttft_predict_ms(&fit, fit.max_len, NULL);
      char rate[32], se_rate[32];
      fmt_fig(fit.prefill_tok_s, rate, sizeof rate);
      fmt_fig(fit.se_prefill_tok_s, se_rate, sizeof se_rate);
      snprintf(fit_name, sizeof fit_name, "fit: %.3g ms + L / %s tok/s", fit.fixed_ms, rate);
      ser[ns++] = (struct svg_series){.name = fit_name, .x = fx, .y = fy, .n = 2, .line = true,
                                      .shape = SVG_NO_MARK, .derived = true, .dashed = true,
                                      .color = 1, .width = 2};
      double share = ttft_fixed_share(&fit, fit.min_len);
      char tail[200];
      if (fit.fixed_ms < 0)
        snprintf(tail, sizeof tail, "the fixed cost fits below zero: TTFT grows faster than a "
                                    "line over these lengths (attention over long prompts), or "
                                    "the points are noise; no fixed share is read from it.");
      else if (isfinite(share))
        snprintf(tail, sizeof tail, "at %.0f tokens %.0f%% of the wait is fixed cost.",
                 fit.min_len, 100 * share);
      else
        snprintf(tail, sizeof tail, "the fixed share is unknown.");
      snprintf(caption, sizeof caption,
               "One mark per timed run. Least-squares fit over %zu runs at %zu lengths: fixed "
               "cost %.3g \xc2\xb1 %.2g ms (FX), prefill %s \xc2\xb1 %s tok/s (PF), "
               "r\xc2\xb2 %.3f; %s",
               fit.n_points, fit.n_lengths, fit.fixed_ms, fit.se_fixed_ms, rate, se_rate, fit.r2,
               tail);
    } else {
      snprintf(caption, sizeof caption, "One mark per timed run. No fit: %s", ferr.msg);
    }
    char id[48], title[400];
    snprintf(id, sizeof id, "ttft-%zu", ++drawn);
    snprintf(title, sizeof title, "Time to first token: %s", g->key);
    struct svg_chart c = {.kind = SVG_XY, .id = id, .title = title,
                          .x_label = "prompt length", .x_unit = "tokens",
                          .y_label = "FX time to first token", .y_unit = "ms", .y_zero = true,
                          .x_zero = true, .series = ser, .n_series = ns};
    if (figure(o, &c, caption, err) < 0) return -1;
  }
  if (drawn == 0)
    sbuf_puts(o, "<p class=\"tm-none\">No time-to-first-token points in these records (server "
                 "runs, or in-process pp tests).</p>\n");
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}

/* ---------------------------------------------------- rates against threads */

static int section_threads(const struct report *rep, struct sbuf *o, struct pool *pl,
                           enum record_metric metric, struct tm_err *err) {
  bool prefill = metric == METRIC_PREFILL_TOK_S;
  sbuf_printf(o, "<h3 id=\"plot-threads-%s\">%s against threads</h3>\n",
              prefill ? "prefill" : "decode", prefill ? "PF prefill rate" : "DC decode rate");
  const struct series_set *set = &rep->set;
  /* groups: the configuration without its thread count */
  char (*labels)[320] = pool_alloc(pl, set->n, sizeof *labels);
  size_t *gof = pool_alloc(pl, set->n, sizeof(size_t));
  if (!labels || !gof) return tm_errf(err, "report: out of memory");
  size_t n_groups = 0, n_points = 0;
  for (size_t i = 0; i < set->n; i++) {
    const struct series *s = &set->s[i];
    gof[i] = (size_t)-1;
    if (s->metric != metric || s->threads < 0 || s->n == 0) continue;
    char label[320];
    bool type_in_model = s->type[0] && strstr(s->model, s->type);
    snprintf(label, sizeof label, "%s d%d, %s%s%s", s->test, s->depth, s->model,
             s->type[0] && !type_in_model ? " " : "", type_in_model ? "" : s->type);
    size_t g = 0;
    while (g < n_groups && strcmp(labels[g], label)) g++;
    if (g == n_groups) snprintf(labels[n_groups++], 320, "%s", label);
    gof[i] = g;
    n_points += s->n;
  }
  if (n_groups == 0) {
    sbuf_printf(o, "<p class=\"tm-none\">No in-process %s runs in these records (threads are an "
                   "in-process setting).</p>\n", prefill ? "prefill (pp)" : "decode (tg)");
    return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
  }
  struct svg_series *ser = pool_alloc(pl, 2 * n_groups, sizeof *ser);
  if (!ser) return tm_errf(err, "report: out of memory");
  for (size_t g = 0; g < n_groups; g++) {
    double *x = pool_alloc(pl, n_points, sizeof(double)), *y = pool_alloc(pl, n_points, sizeof(double));
    double *mx = pool_alloc(pl, set->n, sizeof(double)), *my = pool_alloc(pl, set->n, sizeof(double));
    if (!x || !y || !mx || !my) return tm_errf(err, "report: out of memory");
    size_t n = 0, nm = 0;
    for (size_t i = 0; i < set->n; i++) {
      if (gof[i] != g) continue;
      const struct series *s = &set->s[i];
      for (size_t k = 0; k < s->n; k++) {
        x[n] = s->threads;
        y[n++] = s->values[k];
      }
      mx[nm] = s->threads;
      my[nm++] = median_of(s->values, s->n);
    }
    for (size_t a = 1; a < nm; a++)
      for (size_t b = a; b > 0 && mx[b - 1] > mx[b]; b--) {
        double t = mx[b]; mx[b] = mx[b - 1]; mx[b - 1] = t;
        t = my[b]; my[b] = my[b - 1]; my[b - 1] = t;
      }
    enum svg_shape shapes[] = {SVG_CIRCLE, SVG_SQUARE, SVG_TRIANGLE, SVG_DIAMOND};
    ser[2 * g] = (struct svg_series){.name = labels[g], .x = x, .y = y, .n = n,
                                     .shape = shapes[g % 4], .color = (int)g};
    ser[2 * g + 1] = (struct svg_series){.name = labels[g], .x = mx, .y = my, .n = nm,
                                         .line = true, .shape = SVG_NO_MARK, .derived = true,
                                         .color = (int)g, .width = 1.5, .no_legend = true};
  }
  struct svg_chart c = {.kind = SVG_XY, .id = prefill ? "threads-prefill" : "threads-decode",
                        .title = prefill ? "Prefill rate against threads"
                                         : "Decode rate against threads",
                        .x_label = "engine threads", .x_unit = "threads",
                        .y_label = prefill ? "PF prefill rate" : "DC decode rate",
                        .y_unit = "tok/s", .y_zero = true, .x_integer = true, .series = ser,
                        .n_series = 2 * n_groups};
  if (figure(o, &c, "One mark per timed run; the line joins the medians at each thread count.",
             err) < 0)
    return -1;
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}

/* -------------------------------------------------------- % of the ceiling */

static int section_ceiling(const struct report *rep, struct sbuf *o, struct pool *pl,
                           struct tm_err *err) {
  sbuf_puts(o, "<h3 id=\"plot-ceiling\">Measured rate as a share of its ceiling</h3>\n");
  const struct series_set *set = &rep->set;
  struct svg_bar *bars = pool_alloc(pl, set->n, sizeof *bars);
  char (*labels)[360] = pool_alloc(pl, set->n, sizeof *labels);
  if (!bars || !labels) return tm_errf(err, "report: out of memory");
  size_t nb = 0;
  for (size_t i = 0; i < set->n; i++) {
    const struct series *s = &set->s[i];
    bool pf = s->metric == METRIC_PREFILL_TOK_S, dc = s->metric == METRIC_DECODE_TOK_S;
    double p = report_series_percent(s);
    if ((!pf && !dc) || !isfinite(p)) continue;
    char note[8];
    snprintf(labels[nb], 360, "%s %s%s", pf ? "PF" : "DC", s->key,
             series_ceiling_note(s, note, sizeof note) ? " *" : "");
    bars[nb] = (struct svg_bar){.label = labels[nb], .value = p, .group = pf ? 0 : 1};
    nb++;
  }
  if (nb == 0) {
    sbuf_puts(o, "<p class=\"tm-none\">No ceiling in these records: a ceiling needs the model "
                 "file (<code>--gguf</code>) and the machine's measured bandwidth and compute "
                 "rate.</p>\n");
    return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
  }
  static const char *const groups[] = {"PF prefill: % of the compute ceiling",
                                       "DC decode: % of the memory-bandwidth ceiling"};
  struct svg_refline ref = {.vertical = true, .value = 100, .label = "100% of ceiling"};
  struct svg_chart c = {.kind = SVG_HBARS, .id = "ceiling", .title = "Share of the ceiling",
                        .x_label = "median rate as a share of its ceiling", .x_unit = "%",
                        .bars = bars, .n_bars = nb, .groups = groups, .n_groups = 2,
                        .refs = &ref, .n_refs = 1, .width = 900};
  if (figure(o, &c, "One bar per configuration and rate: 100 x median / the mean of the runs' "
                    "ceilings; * = those ceilings spread by more than 5% or come from different "
                    "machines or models (listed under the results). Above 100% is not a "
                    "measurement to share: a mixture-of-experts model, a cached prompt, "
                    "speculative decoding or a buffered stream.", err) < 0)
    return -1;
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}

int report_plots_html(const struct report *rep, struct sbuf *o, struct tm_err *err) {
  struct pool pl = {0};
  int rc = section_decode_curves(rep, o, &pl, err);
  if (!rc) rc = section_ttft(rep, o, &pl, err);
  if (!rc) rc = section_threads(rep, o, &pl, METRIC_PREFILL_TOK_S, err);
  if (!rc) rc = section_threads(rep, o, &pl, METRIC_DECODE_TOK_S, err);
  if (!rc) rc = section_ceiling(rep, o, &pl, err);
  if (!rc) rc = report_load_html(rep->results, o, err);
  if (!rc && pl.oom) rc = tm_errf(err, "report: out of memory");
  pool_free(&pl);
  return rc;
}
