/* report_load: `tokmeter load` records in the report (see report_internal.h):
 * per invocation, the levels as a table (terminal) and, on the HTML page,
 * aggregate output tok/s and one stream's decode rate against the load (with
 * the aggregate ceiling where the records carry it, and the knee), and TTFT
 * p50 / p99 against the load. One mark per level record; nothing derived. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/load_view.h"
#include "report/report_internal.h"
#include "report/svg.h"

static double num(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static double dist(json_t *o, const char *k, const char *q) {
  json_t *d = json_object_get(o, k);
  return json_is_object(d) ? num(d, q) : NAN;
}

/* The level's load: concurrency, or requests/s in open loop. */
static double load_of(json_t *l, bool *closed) {
  json_t *c = json_object_get(l, "concurrency");
  *closed = json_is_integer(c);
  return *closed ? (double)json_integer_value(c) : num(l, "request_rate");
}

static void cell(char *buf, size_t n, double v, const char *fmt) {
  if (isfinite(v)) snprintf(buf, n, fmt, v);
  else snprintf(buf, n, "-");
}

size_t report_load_levels(const struct results *r) {
  size_t n = 0;
  for (size_t i = 0; r && i < r->n_inv; i++) n += r->inv[i].n_loads;
  return n;
}

int report_load_text(const struct results *r, struct sbuf *o) {
  struct load_views vs;
  struct tm_err err = {{0}};
  if (load_views_build(r, &vs, &err) != 0) {
    sbuf_printf(o, "\nload: %s\n", err.msg);
    return 0;
  }
  for (size_t i = 0; i < vs.n; i++) {
    const struct load_view *v = &vs.v[i];
    sbuf_puts(o, "\nload: ");
    sbuf_put_line(o, v->title);
    if (v->shards > 1 && !v->n_levels) {
      sbuf_puts(o, "  not merged: ");
      sbuf_put_line(o, v->refused);
      sbuf_puts(o, "\n");
      continue;
    }
    if (v->shards > 1)
      sbuf_printf(o, " (%zu levels, each merged from %u shards over their common window)\n",
                  v->n_levels, v->shards);
    else
      sbuf_printf(o, " (invocation %.8s, %zu levels)\n", v->inv ? v->inv->id : "?", v->n_levels);
    sbuf_printf(o, "  %-12s %7s %6s %12s %12s %12s %11s %11s %8s\n", "level", "ok", "failed",
                "AT out tok/s", "AT in tok/s", "DC p50 tok/s", "TTFT p50 ms", "TTFT p99 ms",
                "% ceil");
    for (size_t k = 0; k < v->n_levels; k++) {
      json_t *l = v->levels[k].record;
      bool closed;
      const double load = load_of(l, &closed);
      char name[32], a[24], b[24], c[24], d[24], e[24], f[24];
      if (closed) snprintf(name, sizeof name, "c=%.0f", load);
      else snprintf(name, sizeof name, "rate=%g/s", load);
      cell(a, sizeof a, num(l, "aggregate_output_tok_s"), "%.1f");
      cell(b, sizeof b, num(l, "aggregate_prompt_tok_s"), "%.1f");
      cell(c, sizeof c, dist(l, "per_stream_decode_tok_s", "p50"), "%.1f");
      cell(d, sizeof d, dist(l, "ttft_ms", "p50"), "%.1f");
      cell(e, sizeof e, dist(l, "ttft_ms", "p99"), "%.1f");
      cell(f, sizeof f, num(l, "percent_of_ceiling"), "%.0f%%");
      sbuf_printf(o, "  %-12s %7lld %6lld %12s %12s %12s %11s %11s %8s%s\n", name,
                  (long long)num(l, "requests_ok"), (long long)num(l, "requests_failed"), a, b, c,
                  d, e, f, (long)k == v->knee ? "  knee" : "");
    }
    if (v->refused[0]) {
      sbuf_puts(o, "  ");
      sbuf_put_line(o, v->refused);
      sbuf_puts(o, "\n");
    }
  }
  if (vs.n)
    sbuf_puts(o, "AT out/in: every stream's generated / prompt tokens together over the measured "
                 "window; DC: one stream's decode; % ceil: AT out / the aggregate decode ceiling "
                 "(load -m).\n");
  load_views_free(&vs);
  return 0;
}

int report_load_html(const struct results *r, struct sbuf *o, struct tm_err *err) {
  sbuf_puts(o, "<h3 id=\"plot-aggregate\">AT aggregate throughput against load</h3>\n");
  if (!report_load_levels(r)) {
    sbuf_puts(o, "<p class=\"tm-none\">No load records here (<code>tokmeter load</code> writes "
                 "them), so there is no aggregate-throughput plot. Every rate above is one "
                 "stream.</p>\n");
    return 0;
  }
  struct load_views vs;
  if (load_views_build(r, &vs, err) != 0) return -1;
  for (size_t i = 0; i < vs.n; i++) {
    const struct load_view *v = &vs.v[i];
    const size_t n = v->n_levels;
    if (!n) {
      sbuf_puts(o, "<p class=\"tm-none\">");
      sbuf_put_xml(o, v->title);
      sbuf_puts(o, ": not merged: ");
      sbuf_put_xml(o, v->refused);
      sbuf_puts(o, "</p>\n");
      continue;
    }
    double *x = calloc(n, sizeof *x), *agg = calloc(n, sizeof *agg), *per = calloc(n, sizeof *per),
           *ceil = calloc(n, sizeof *ceil), *t50 = calloc(n, sizeof *t50),
           *t99 = calloc(n, sizeof *t99);
    if (!x || !agg || !per || !ceil || !t50 || !t99) {
      free(x), free(agg), free(per), free(ceil), free(t50), free(t99);
      load_views_free(&vs);
      return tm_errf(err, "report: out of memory");
    }
    bool closed = true, any_ceiling = false;
    /* in load order, so the lines join neighbours (a capacity search runs
     * its probes out of order) */
    size_t *order = calloc(n, sizeof *order);
    for (size_t k = 0; order && k < n; k++) order[k] = k;
    for (size_t a = 1; order && a < n; a++)
      for (size_t b = a; b > 0; b--) {
        bool c1, c2;
        if (load_of(v->levels[order[b - 1]].record, &c1) <= load_of(v->levels[order[b]].record, &c2)) break;
        size_t t = order[b];
        order[b] = order[b - 1];
        order[b - 1] = t;
      }
    for (size_t k = 0; k < n; k++) {
      json_t *l = v->levels[order ? order[k] : k].record;
      x[k] = load_of(l, &closed);
      agg[k] = num(l, "aggregate_output_tok_s");
      per[k] = dist(l, "per_stream_decode_tok_s", "p50");
      ceil[k] = num(l, "aggregate_decode_ceiling_tok_s");
      any_ceiling |= isfinite(ceil[k]);
      t50[k] = dist(l, "ttft_ms", "p50");
      t99[k] = dist(l, "ttft_ms", "p99");
    }
    /* in process the prompts are not timed (no TTFT): the latency that
     * grows with the batch is the decode step's, the inter-token gap */
    bool any_ttft = false;
    for (size_t k = 0; k < n; k++) any_ttft |= isfinite(t50[k]) || isfinite(t99[k]);
    const bool steps = !any_ttft;
    if (steps)
      for (size_t k = 0; k < n; k++) {
        json_t *l = v->levels[order ? order[k] : k].record;
        t50[k] = dist(l, "itl_ms", "p50");
        t99[k] = dist(l, "itl_ms", "p99");
      }
    free(order);
    /* the ceiling's memory/compute corner (the batch_turn finding) */
    double corner = NAN;
    json_t *fs = v->inv && v->inv->end ? json_object_get(v->inv->end, "findings") : NULL;
    for (size_t k = 0; json_is_array(fs) && k < json_array_size(fs); k++) {
      json_t *f = json_array_get(fs, k);
      const char *code = json_string_value(json_object_get(f, "code"));
      const double b = json_path_num(f, "figures.batch");
      if (code && !strcmp(code, "batch_turn") && b > 0) corner = b;
    }
    if (!(corner >= x[0] && corner <= x[n - 1])) corner = NAN; /* off the plot */
    char id1[48], id2[48], title[300], title2[300];
    snprintf(id1, sizeof id1, "load-%zu-throughput", i);
    snprintf(id2, sizeof id2, "load-%zu-ttft", i);
    /* the plot's title: the target and the shard count (the run id is in the table) */
    char who[220];
    const char *target = v->inv ? json_string_value(json_object_get(v->inv->identity, "target")) : NULL;
    if (v->shards > 1) snprintf(who, sizeof who, "%.180s (%u shards)", target ? target : "?", v->shards);
    else snprintf(who, sizeof who, "%.200s", v->title);
    snprintf(title, sizeof title, "%s: aggregate and one stream", who);
    snprintf(title2, sizeof title2, steps ? "%s: time per decode step" : "%s: time to first token",
             who);
    const struct svg_series s1[] = {
        {.name = "AT aggregate output (tok/s)", .x = x, .y = agg, .n = n, .line = true,
         .shape = SVG_CIRCLE, .color = 0},
        {.name = "DC one stream, p50 (tok/s)", .x = x, .y = per, .n = n, .line = true,
         .shape = SVG_SQUARE, .color = 1},
        {.name = "aggregate decode ceiling (tok/s)", .x = x, .y = ceil, .n = n, .line = true,
         .shape = SVG_NO_MARK, .dashed = true, .color = -1}};
    bool knee_closed;
    const double knee = v->knee >= 0 ? load_of(v->levels[v->knee].record, &knee_closed) : NAN;
    struct svg_refline refs[2];
    size_t n_refs = 0;
    if (isfinite(knee)) refs[n_refs++] = (struct svg_refline){.vertical = true, .value = knee,
                                                              .label = "knee"};
    if (isfinite(corner) && any_ceiling)
      refs[n_refs++] = (struct svg_refline){.vertical = true, .value = corner,
                                            .label = "ceiling: compute bound"};
    const struct svg_chart c1 = {.kind = SVG_XY, .id = id1, .title = title,
                                 .x_label = closed ? "concurrency" : "request rate",
                                 .x_unit = closed ? "streams" : "req/s",
                                 .y_label = "rate", .y_unit = "tok/s", .y_zero = true,
                                 .x_integer = closed, .series = s1, .n_series = any_ceiling ? 3 : 2,
                                 .refs = n_refs ? refs : NULL, .n_refs = n_refs};
    const struct svg_series s2[] = {
        {.name = steps ? "step p50 (ms)" : "TTFT p50 (ms)", .x = x, .y = t50, .n = n,
         .line = true, .shape = SVG_CIRCLE, .color = 0},
        {.name = steps ? "step p99 (ms)" : "TTFT p99 (ms)", .x = x, .y = t99, .n = n,
         .line = true, .shape = SVG_TRIANGLE, .color = 2}};
    const struct svg_chart c2 = {.kind = SVG_XY, .id = id2, .title = title2,
                                 .x_label = closed ? "concurrency" : "request rate",
                                 .x_unit = closed ? "streams" : "req/s",
                                 .y_label = steps ? "time per decode step" : "time to first token",
                                 .y_unit = "ms", .y_zero = true,
                                 .x_integer = closed, .series = s2, .n_series = 2};
    int rc = 0;
    sbuf_puts(o, "<figure class=\"tm-figure\">\n");
    rc = svg_render(&c1, o, err);
    sbuf_puts(o, "<figcaption>One mark per level: every stream's generated tokens that arrived "
                 "inside the measured window, per second (AT), and one stream's decode rate "
                 "(DC, the median request); the dashed line is the aggregate decode ceiling "
                 "(load -m, and always in process) where recorded, with the batch where it "
                 "turns compute bound; the knee is where more load stops buying "
                 "throughput.</figcaption>\n</figure>\n<figure class=\"tm-figure\">\n");
    if (!rc) rc = svg_render(&c2, o, err);
    if (steps)
      sbuf_puts(o, "<figcaption>In process: the time of one decode step of all the level's "
                   "streams (p50, p99 of the gaps between a stream's tokens); the prompts are "
                   "prefilled first and not timed.</figcaption>\n</figure>\n");
    else
      sbuf_puts(o, "<figcaption>Time to first token of the level's requests (p50, p99), cache "
                   "hits left out: past the knee it is queueing.</figcaption>\n</figure>\n");
    free(x), free(agg), free(per), free(ceil), free(t50), free(t99);
    if (v->refused[0]) {
      sbuf_puts(o, "<p class=\"tm-none\">");
      sbuf_put_xml(o, v->refused);
      sbuf_puts(o, "</p>\n");
    }
    if (rc) {
      load_views_free(&vs);
      return -1;
    }
  }
  load_views_free(&vs);
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}
