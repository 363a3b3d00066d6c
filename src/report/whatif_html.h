/* whatif_html: the page `tokmeter whatif --html FILE` writes: one line saying
 * what the job is, and one inline SVG plot (report/svg.h) of the time of each
 * phase against the generation rate (log x axis when there are several rates),
 * with the Amdahl floor (analysis/whatif.h, whatif_limit_s) as a line.
 *
 * Series, in order: end-to-end, generate (decode), fixed steps (dashed), and
 * read (prefill) only when some rate reads anything. Library code: nothing is
 * printed; errors are one line in err. */
#ifndef TM_WHATIF_HTML_H
#define TM_WHATIF_HTML_H

#include <stddef.h>

#include "analysis/whatif.h"
#include "report/sbuf.h"
#include "util/err.h"

/* Appends the whole page for rows[0..n) (n >= 1, each from whatif_eval on
 * job) to out. 0, or -1 with err ("out of memory", "plot: ..."). */
int whatif_html_render(const struct whatif_job *job, const struct whatif_row *rows, size_t n,
                       struct sbuf *out, struct tm_err *err);
/* Renders the page and writes it to path (created or truncated; nothing is
 * created when rendering fails). 0, or -1 with err: the render's message, or
 * "cannot write PATH". */
int whatif_html_write(const char *path, const struct whatif_job *job,
                      const struct whatif_row *rows, size_t n, struct tm_err *err);

#endif
