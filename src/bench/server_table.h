/* server_table: the terminal table of a server benchmark, one row per workload,
 * naming which of docs/design.md's five quantities each column is (prefill rate,
 * decode rate of one stream, fixed costs as TTFT).
 *
 * Row: workload | prompt tokens (median, server-reported) | TTFT ms (median ±
 * sd) | prefill tok/s (headline median ± sd [min-max], source: "server" or
 * "client, lower bound") | decode tok/s (same; "-" when blank by rule, with a
 * lettered footnote saying why) | % of the ceiling (prefill / decode, only
 * when a ceiling is given). Below the table, per workload: the decode curve,
 * the client/server TTFT gap, the cold request, verdicts (cache hits excluded,
 * buffered streams, count mismatches, reasoning that ate the budget, failures
 * by kind), a flag above 100% of the ceiling; then the footnotes used.
 *
 * Numbers: rates with 3 significant digits (tm_fmt_rate), an sd with as many
 * decimals as its median; ms with 1 decimal below 100, whole above.
 * Writes to a FILE * (stdout in the CLI; a memory stream in tests); never
 * fails (a write error is the stream's to report). */
#ifndef TM_BENCH_SERVER_TABLE_H
#define TM_BENCH_SERVER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/summary.h"
#include "record/record.h"

/* ceilings: NULL = no model file given (no % column), else n entries, one per
 * summary (the decode ceiling depends on the workload's context depth).
 * details: the lines under the table per workload (curve, timers' gap,
 * verdicts); without them, the rows and footnotes only (the verdicts are
 * findings, server_findings.h, shown by the caller). */
void report_server_table(FILE *out, const struct bench_summary *s, size_t n,
                         const struct record_ceiling *ceilings, bool details);

/* Cell formatters, exposed for tests and for the CLI's other lines. Each
 * writes into buf (n bytes) and returns buf; NAN -> "-". */
char *report_fmt_ms(double ms, char *buf, size_t n);            /* "18.4", "184" */
char *report_fmt_ms_sd(double median, double sd, char *buf, size_t n);  /* "184 ± 3.1" */
char *report_fmt_rate_sd(double median, double sd, char *buf, size_t n); /* "356 ± 4" */
char *report_fmt_percent(double pct, char *buf, size_t n);      /* "34%", "2.1%" */

#endif
