/* whatif_html: the `tokmeter whatif --html` page; see whatif_html.h. */
#include "report/whatif_html.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/svg.h"
#include "util/units.h"

int whatif_html_render(const struct whatif_job *job, const struct whatif_row *rows, size_t n,
                       struct sbuf *out, struct tm_err *err) {
  double *x = malloc(n * sizeof *x), *tot = malloc(n * sizeof *tot),
         *gen = malloc(n * sizeof *gen), *fix = malloc(n * sizeof *fix),
         *rd = malloc(n * sizeof *rd);
  int rc = 0;
  if (!x || !tot || !gen || !fix || !rd) {
    rc = tm_errf(err, "out of memory");
    goto done;
  }
  bool any_read = false;
  for (size_t i = 0; i < n; i++) {
    x[i] = rows[i].rate_tok_s;
    tot[i] = rows[i].total_s;
    gen[i] = rows[i].generate_s;
    fix[i] = rows[i].item_steps_s + rows[i].job_steps_s;
    rd[i] = rows[i].read_s;
    any_read |= rows[i].read_s > 0;
  }
  struct svg_series ser[4] = {
      {.name = "end-to-end", .x = x, .y = tot, .n = n, .line = true, .shape = SVG_CIRCLE,
       .color = 0},
      {.name = "generate (decode)", .x = x, .y = gen, .n = n, .line = true, .shape = SVG_SQUARE,
       .color = 1},
      {.name = "fixed steps", .x = x, .y = fix, .n = n, .line = true, .shape = SVG_TRIANGLE,
       .color = 2, .dashed = true},
      {.name = "read (prefill)", .x = x, .y = rd, .n = n, .line = true, .shape = SVG_DIAMOND,
       .color = 3},
  };
  double limit = whatif_limit_s(job);
  struct svg_refline ref = {.vertical = false, .value = limit,
                            .label = "floor: infinitely fast generation"};
  struct svg_chart ch = {.kind = SVG_XY, .id = "whatif-time",
                         .title = "Job time against generation rate",
                         .x_label = "generation rate, one stream", .x_unit = "tok/s",
                         .y_label = "time", .y_unit = "s", .x_log = n > 1, .y_zero = true,
                         .series = ser, .n_series = any_read ? 4 : 3, .refs = &ref,
                         .n_refs = 1};
  sbuf_puts(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tokmeter whatif"
                 "</title><style>body{font-family:sans-serif;margin:2em}</style></head><body>\n"
                 "<h1>tokmeter whatif</h1>\n<p>");
  char d[32], e[32];
  sbuf_printf(out, "%.0f items, %.0f tokens written and %.0f read per item, %.0f stream(s); "
                   "fixed steps total %s; floor %s.",
              job->items, job->gen_tokens, job->read_tokens, job->concurrency,
              tm_fmt_duration(rows[0].item_steps_s + rows[0].job_steps_s, d, sizeof d),
              tm_fmt_duration(limit, e, sizeof e));
  sbuf_puts(out, "</p>\n");
  struct tm_err perr;
  if (svg_render(&ch, out, &perr) != 0) {
    rc = tm_errf(err, "plot: %s", perr.msg);
    goto done;
  }
  sbuf_puts(out, "\n</body></html>\n");
  if (!sbuf_ok(out)) rc = tm_errf(err, "out of memory");
done:
  free(x), free(tot), free(gen), free(fix), free(rd);
  return rc;
}

int whatif_html_write(const char *path, const struct whatif_job *job,
                      const struct whatif_row *rows, size_t n, struct tm_err *err) {
  struct sbuf b;
  sbuf_init(&b);
  int rc = whatif_html_render(job, rows, n, &b, err);
  if (rc == 0) {
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(sbuf_str(&b), f) != EOF;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) rc = tm_errf(err, "cannot write %s", path);
  }
  sbuf_free(&b);
  return rc;
}
