/* cmd_report: `tokmeter report RESULTS.jsonl...`: results files as a terminal
 * table (default), markdown, CSV, or one self-contained HTML page with plots
 * (src/report/). Flags: --format, -o FILE, --html FILE, --title TEXT.
 * Exit: 0 written; 2 bad flags, unreadable / corrupt files, a file with no
 * record, or no timed run at all; 1 an output file could not be written. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analysis/results.h"
#include "cli/cli.h"
#include "report/report.h"
#include "report/sbuf.h"

#define CMD "report"

static void usage(FILE *f) {
  fprintf(f,
          "usage: tokmeter report [options] RESULTS.jsonl...\n"
          "Reads tokmeter results files (JSON Lines, '-' = stdin; several files are read\n"
          "in order and grouped by invocation) and writes one row per configuration:\n"
          "prefill (PF), decode (DC) and time to first token (FX), each as the median\n"
          "+- sample sd over the timed runs, with the share of the ceiling. Columns name\n"
          "their quantity: CC context (tokens), PF prefill rate (prompt tok/s), DC decode\n"
          "rate (generated tok/s, one stream), AT aggregate throughput, FX fixed costs\n"
          "(ms). Details: docs/report.md.\n"
          "\n"
          "options:\n"
          "  --format F     table | markdown | csv | html (default: table). csv is one line\n"
          "                 per configuration x metric with n, median, mean, sd, min, max,\n"
          "                 ceiling (tok/s) and %% of ceiling\n"
          "  -o, --output FILE\n"
          "                 write the --format output to FILE (default: stdout)\n"
          "  --html FILE    also write the HTML report to FILE (default: none): one\n"
          "                 self-contained page (no script, no network) with the tables and\n"
          "                 SVG plots: decode rate over output length, time to first token\n"
          "                 against prompt length with its fit, prefill and decode against\n"
          "                 threads, %% of ceiling\n"
          "  --title TEXT   the HTML page's title (default: \"tokmeter report\")\n"
          "  -h, --help     this text\n"
          "\n"
          "exit: 0 written; 1 an output file could not be written; 2 bad flags, unreadable\n"
          "or corrupt file, a file with no record, or no timed run.\n");
}

/* Writes the whole buffer to path; -1 with errno text in msg. */
static int write_file(const char *path, const struct sbuf *b, char *msg, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    snprintf(msg, n, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  size_t len = b->len;
  bool ok = fwrite(sbuf_str(b), 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok) {
    snprintf(msg, n, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* True when some invocation's first line came from path. */
static bool has_records_from(const struct results *r, const char *path) {
  for (size_t i = 0; i < r->n_inv; i++)
    if (r->inv[i].source && !strcmp(r->inv[i].source, path)) return true;
  return false;
}

static int render(const struct report *rep, enum report_format fmt, const char *title,
                  struct sbuf *out, struct tm_err *err) {
  switch (fmt) {
  case REPORT_MARKDOWN: return report_write_markdown(rep, out, err);
  case REPORT_CSV: return report_write_csv(rep, out, err);
  case REPORT_HTML: return report_write_html(rep, title, out, err);
  default: return report_write_table(rep, out, err);
  }
}

int cmd_report(int argc, char **argv) {
  enum { OPT_FORMAT = 256, OPT_HTML, OPT_TITLE };
  static const struct option opts[] = {
      {"format", required_argument, 0, OPT_FORMAT}, {"output", required_argument, 0, 'o'},
      {"html", required_argument, 0, OPT_HTML},     {"title", required_argument, 0, OPT_TITLE},
      {"help", no_argument, 0, 'h'},                {0, 0, 0, 0}};
  enum report_format fmt = REPORT_TABLE;
  const char *out_path = NULL, *html_path = NULL, *title = NULL;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_FORMAT:
      if (report_format_parse(optarg, &fmt) < 0)
        return cli_usage_error(CMD, "--format %s: expected table, markdown, csv or html", optarg);
      break;
    case 'o': out_path = optarg; break;
    case OPT_HTML: html_path = optarg; break;
    case OPT_TITLE: title = optarg; break;
    case 'h': usage(stdout); return TM_EXIT_OK;
    case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
    default: return cli_bad_option(CMD, argv[optind - 1], opts);
    }
  }
  if (optind >= argc) return cli_usage_error(CMD, "no results file given");
  const char *const *paths = (const char *const *)&argv[optind];
  size_t n_paths = (size_t)(argc - optind);

  struct results r;
  struct tm_err err = {{0}};
  if (results_load(paths, n_paths, &r, &err) < 0) {
    results_free(&r);
    return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
  }
  if (r.torn_note[0]) cli_warn(CMD, "%s", r.torn_note);
  for (size_t i = 0; i < n_paths; i++) {
    if (has_records_from(&r, paths[i])) continue;
    /* its lines may all belong to an invocation begun in an earlier file:
     * only a file that holds no record at all is empty */
    bool empty = r.n_lines_by_source[i] == 0;
    if (empty) {
      results_free(&r);
      return cli_fail(CMD, TM_EXIT_USAGE, "no records in %s", paths[i]);
    }
  }
  struct report rep;
  if (report_build(&r, &rep, &err) < 0) {
    results_free(&r);
    return cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
  }
  int rc = TM_EXIT_OK;
  if (rep.n_rows == 0 && !report_load_levels(&r)) {
    rc = cli_fail(CMD, TM_EXIT_USAGE, "no timed runs in %s%s (only warm-ups, calibration, "
                  "failed runs or identity lines)", paths[0], n_paths > 1 ? " and the others" : "");
    goto done;
  }
  char msg[600];
  if (html_path) {
    struct sbuf html;
    sbuf_init(&html);
    if (report_write_html(&rep, title, &html, &err) < 0) {
      sbuf_free(&html);
      rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
      goto done;
    }
    int w = write_file(html_path, &html, msg, sizeof msg);
    sbuf_free(&html);
    if (w < 0) {
      rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", msg);
      goto done;
    }
  }
  struct sbuf out;
  sbuf_init(&out);
  if (render(&rep, fmt, title, &out, &err) < 0) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
  } else if (out_path) {
    if (write_file(out_path, &out, msg, sizeof msg) < 0) rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", msg);
  } else {
    fwrite(sbuf_str(&out), 1, out.len, stdout);
    if (fflush(stdout) != 0) rc = cli_fail(CMD, TM_EXIT_RUNTIME, "cannot write to stdout");
  }
  sbuf_free(&out);
  if (rc == TM_EXIT_OK && html_path) fprintf(stderr, "report: %s\n", html_path);
done:
  report_free(&rep);
  results_free(&r);
  return rc;
}
