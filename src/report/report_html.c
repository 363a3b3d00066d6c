/* report_html: the self-contained HTML page (report.h): inline CSS, inline
 * SVG, no script, no external file, font or network reference, so the file
 * can be mailed or opened offline and shows the same everywhere. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "record/keys.h"
#include "report/report_internal.h"

#ifndef TOKMETER_VERSION
#define TOKMETER_VERSION "0"
#endif

static const char *const page_style =
    "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff;"
    "padding:0 16px}"
    "h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ccc}"
    "h3{margin-top:24px}table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}"
    "figure{margin:12px 0 24px}figcaption{font-size:13px;color:#444;max-width:900px}"
    "p.tm-none{color:#555;font-style:italic}.sub{color:#555;margin-top:0}"
    "code{background:#f3f3f3;padding:0 3px}dt{font-weight:bold;float:left;width:3em}"
    "dd{margin-left:3.5em;margin-bottom:2px}";

static void td(struct sbuf *o, const char *text, bool num) {
  sbuf_puts(o, num ? "<td class=\"num\">" : "<td>");
  sbuf_put_xml(o, text ? text : "");
  sbuf_puts(o, "</td>");
}

static void thermal_text(json_t *t, char *buf, size_t n) {
  if (!t || json_is_null(t)) snprintf(buf, n, "not recorded");
  else if (!json_is_true(json_object_get(t, "readable"))) snprintf(buf, n, "not readable");
  else {
    json_t *temps = json_object_get(t, "temps");
    double hottest = NAN;
    for (size_t i = 0; json_is_array(temps) && i < json_array_size(temps); i++) {
      double c = record_num(json_array_get(temps, i), RK_TEMP_CELSIUS);
      if (isfinite(c) && !(c <= hottest)) hottest = c;
    }
    if (isfinite(hottest)) snprintf(buf, n, "hottest %.0f \xc2\xb0" "C", hottest);
    else snprintf(buf, n, "readable, no temperature");
  }
}

/* One line per invocation: when, what, where, how many runs, thermal state. */
static void invocations(const struct report *rep, struct sbuf *o) {
  const struct results *r = rep->results;
  sbuf_puts(o, "<h2 id=\"invocations\">Invocations</h2>\n<table><tr><th>time (UTC)</th>"
               "<th>file</th><th>backend</th><th>target</th><th>model</th><th>machine</th>"
               "<th class=\"num\">timed runs</th><th class=\"num\">failed</th>"
               "<th>thermal before / after</th><th>command</th></tr>\n");
  for (size_t i = 0; i < r->n_inv; i++) {
    const struct results_invocation *inv = &r->inv[i];
    json_t *id = inv->identity;
    char machine[256] = "", runs[32] = "", failed[32] = "", th[128], before[48], after[48];
    const char *cpu = record_str(id, RK_MACHINE_CPU);
    long long cores = record_int(id, RK_MACHINE_CORES, -1);
    if (cpu && cores > 0) snprintf(machine, sizeof machine, "%s, %lld cores", cpu, cores);
    else if (cpu) snprintf(machine, sizeof machine, "%s", cpu);
    long long nr = record_int(inv->end, RK_RUNS, -1), nf = record_int(inv->end, RK_N_FAILED, -1);
    if (nr >= 0) snprintf(runs, sizeof runs, "%lld", nr);
    if (nf >= 0) snprintf(failed, sizeof failed, "%lld", nf);
    thermal_text(json_object_get(id, "thermal_before"), before, sizeof before);
    if (inv->end) thermal_text(json_object_get(inv->end, "thermal_after"), after, sizeof after);
    else snprintf(after, sizeof after, "no end line (the invocation stopped early)");
    snprintf(th, sizeof th, "%s / %s", id ? before : "no identity line", after);
    const char *model = record_str(id, RK_MODEL_NAME);
    if (!model) model = record_str(id, RK_MODEL_FILE);
    sbuf_puts(o, "<tr>");
    td(o, record_str(id, RK_TIME), false);
    td(o, inv->source, false);
    td(o, record_str(id, RK_BACKEND), false);
    td(o, record_str(id, RK_TARGET), false);
    td(o, model, false);
    td(o, machine, false);
    td(o, runs, true);
    td(o, failed, true);
    td(o, th, false);
    td(o, record_str(id, RK_COMMAND), false);
    sbuf_puts(o, "</tr>\n");
  }
  sbuf_puts(o, "</table>\n");
}

/* Each invocation's findings as its end record carries them (docs/records.md
 * "Findings"): the same list the terminal showed, every one here, the most
 * severe first. Nothing when no invocation has any (records before findings
 * existed, or a run that stopped early). */
static void findings(const struct report *rep, struct sbuf *o) {
  const struct results *r = rep->results;
  static const char *const order[] = {"problem", "warning", "info"};
  bool any = false;
  for (size_t i = 0; i < r->n_inv; i++) {
    json_t *list = record_get(r->inv[i].end, RK_FINDINGS);
    if (!json_array_size(list)) continue;
    if (!any) sbuf_puts(o, "<h2 id=\"findings\">Findings</h2>\n");
    any = true;
    sbuf_puts(o, "<h3>");
    sbuf_put_xml(o, record_str(r->inv[i].identity, RK_TIME) ? record_str(r->inv[i].identity,
                                                                         RK_TIME)
                                                            : r->inv[i].source);
    sbuf_puts(o, ": <code>");
    sbuf_put_xml(o, record_str(r->inv[i].identity, RK_COMMAND) ? record_str(r->inv[i].identity,
                                                                            RK_COMMAND)
                                                               : "");
    sbuf_puts(o, "</code></h3>\n<table><tr><th>severity</th><th>code</th><th>finding</th></tr>\n");
    for (size_t k = 0; k < sizeof order / sizeof *order; k++)
      for (size_t j = 0; j < json_array_size(list); j++) {
        json_t *f = json_array_get(list, j);
        const char *sev = record_str(f, RK_FINDING_SEVERITY);
        if (!sev || strcmp(sev, order[k])) continue;
        sbuf_puts(o, "<tr>");
        td(o, sev, false);
        td(o, record_str(f, RK_FINDING_CODE), false);
        td(o, record_str(f, RK_FINDING_TEXT), false);
        sbuf_puts(o, "</tr>\n");
      }
    sbuf_puts(o, "</table>\n");
  }
}

static void result_tables(const struct report *rep, struct sbuf *o) {
  size_t idx[REPORT_MAX_COLUMNS], nc = report_columns_used(rep, idx);
  char b[REPORT_CELL];
  const char *group = NULL;
  sbuf_puts(o, "<h2 id=\"results\">Results</h2>\n");
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct report_row *row = &rep->rows[i];
    if (!group || strcmp(group, row->group)) {
      if (group) sbuf_puts(o, "</table>\n");
      group = row->group;
      sbuf_puts(o, "<h3>");
      sbuf_put_xml(o, group);
      sbuf_puts(o, "</h3>\n<table class=\"tm-results\"><tr>");
      for (size_t k = 0; k < nc; k++) {
        sbuf_puts(o, report_column_right(idx[k]) ? "<th class=\"num\">" : "<th>");
        sbuf_put_xml(o, report_column_head(idx[k]));
        sbuf_puts(o, "</th>");
      }
      sbuf_puts(o, "</tr>\n");
    }
    sbuf_puts(o, "<tr>");
    for (size_t k = 0; k < nc; k++) {
      report_column_cell(idx[k], row, b, sizeof b);
      td(o, b, report_column_right(idx[k]));
    }
    sbuf_puts(o, "</tr>\n");
  }
  if (group) sbuf_puts(o, "</table>\n");
  report_ceiling_notes(rep, o, REPORT_HTML);
  sbuf_puts(o, "<p>Cells: median \xc2\xb1 sample sd over the timed runs (warm-ups, calibration "
               "and failed runs excluded); % of ceiling = 100 \xc3\x97 median / the mean of the "
               "runs' ceilings; blank = not measured or blank by rule (a decode rate needs 24 "
               "generated tokens).</p>\n");
}

int report_write_html(const struct report *rep, const char *title, struct sbuf *o,
                      struct tm_err *err) {
  if (!title) title = "tokmeter report";
  sbuf_puts(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
  sbuf_put_xml(o, title);
  sbuf_printf(o, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", page_style);
  sbuf_put_xml(o, title);
  sbuf_puts(o, "</h1>\n<p class=\"sub\">");
  sbuf_printf(o, "%zu timed runs in %zu configurations from ", rep->n_timed_runs, rep->n_rows);
  for (size_t i = 0; i < rep->results->n_sources; i++) {
    if (i) sbuf_puts(o, ", ");
    sbuf_puts(o, "<code>");
    sbuf_put_xml(o, rep->results->sources[i]);
    sbuf_puts(o, "</code>");
  }
  sbuf_puts(o, "; written by tokmeter " TOKMETER_VERSION ".</p>\n");
  sbuf_puts(o, "<p>Tokens per second is not one number. Each figure below is one of five "
               "quantities, never blended:</p>\n<dl class=\"tm-quantities\">"
               "<dt>CC</dt><dd>context capacity (tokens): a size, not a speed</dd>"
               "<dt>PF</dt><dd>prefill rate (prompt tok/s): how fast the prompt is read; sets "
               "the time to first token</dd>"
               "<dt>DC</dt><dd>decode rate (generated tok/s, one stream): how fast one answer "
               "is written; a curve over output length</dd>"
               "<dt>AT</dt><dd>aggregate throughput (tok/s over concurrent streams): "
               "<code>tokmeter load</code>'s levels, plotted below</dd>"
               "<dt>FX</dt><dd>fixed costs (ms): load, warm-up, request overhead, round "
               "trip</dd></dl>\n");
  result_tables(rep, o);
  sbuf_puts(o, "<h2 id=\"plots\">Plots</h2>\n");
  if (report_plots_html(rep, o, err) < 0) return -1;
  findings(rep, o);
  invocations(rep, o);
  sbuf_puts(o, "</body>\n</html>\n");
  return sbuf_ok(o) ? 0 : tm_errf(err, "report: out of memory");
}
