/* fuzz_records: libFuzzer target for the results-file readers, in process, as
 * `report`, `compare`, `decide` and `import` run them on untrusted files.
 *
 * The input's first byte picks a path:
 *  - even: the rest is a results file (JSON Lines): results_load, then on
 *    inputs it accepts series_extract, compare of the file with itself,
 *    decide's choice of rates, and report_build with every writer (table,
 *    markdown, CSV, HTML);
 *  - odd: the rest is llama-bench output (JSON or JSONL): import_llamabench,
 *    and on success its records written to a results file and read back.
 * Contract beyond "no crash, no sanitizer report": a refusal carries a
 * message; a file the reader accepts compares with itself as "not
 * distinguishable" (or too few runs) on every row; what import writes, the
 * results reader accepts. Built and run by run_fuzz_records.sh. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "analysis/decide.h"
#include "analysis/results.h"
#include "analysis/series.h"
#include "import/import_llamabench.h"
#include "record/record.h"
#include "report/report.h"
#include "report/sbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

/* The input as a file (the readers take paths); NULL on an I/O error. */
static const char *as_file(const uint8_t *data, size_t size) {
  if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz_records_%d.jsonl", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  if (size && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return NULL;
  }
  fclose(f);
  return path;
}

static void read_results(const char *p) {
  struct results r;
  struct tm_err err = {{0}};
  if (results_load(&p, 1, &r, &err) != 0) {
    if (!err.msg[0]) abort(); /* a refusal says why */
    return;
  }
  struct series_set set;
  if (series_extract(&r, &set, &err) == 0) {
    struct compare_opts co;
    compare_opts_default(&co);
    co.resamples = 200; /* bootstrap kept cheap */
    struct compare_result cr;
    if (compare_series(&set, &set, &co, &cr, &err) == 0) {
      for (size_t i = 0; i < cr.n; i++)
        if (cr.rows[i].verdict == COMPARE_FASTER || cr.rows[i].verdict == COMPARE_SLOWER)
          abort(); /* a series against itself */
      compare_result_free(&cr);
    }
    double pf = NAN, dc = NAN;
    char wp[320], wd[320];
    (void)decide_rates_from_series(&set, NULL, 512, 128, true, true, &pf, &dc, wp, wd,
                                   sizeof wp, &err);
    series_set_free(&set);
  }
  struct report rep;
  if (report_build(&r, &rep, &err) == 0) {
    struct sbuf b;
    sbuf_init(&b);
    (void)report_write_table(&rep, &b, &err);
    (void)report_write_markdown(&rep, &b, &err);
    (void)report_write_csv(&rep, &b, &err);
    (void)report_write_html(&rep, NULL, &b, &err);
    sbuf_free(&b);
    report_free(&rep);
  }
  results_free(&r);
}

static void import_and_read(const uint8_t *data, size_t size) {
  struct import_opts o = {.source = "fuzz.json", .bandwidth_bytes_s = NAN,
                          .compute_ops_s = NAN};
  struct import_out out;
  struct tm_err err = {{0}};
  if (import_llamabench((const char *)data, size, &o, &out, &err) != 0) {
    if (!err.msg[0]) abort();
    return;
  }
  /* what import writes, the results reader must accept */
  if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz_records_%d.jsonl", (int)getpid());
  unlink(path);
  struct record_file *rf = record_open(path, &err);
  if (!rf) abort();
  for (size_t i = 0; i < out.n_lines; i++) {
    if (record_write(rf, json_incref(out.lines[i]), &err) != 0) abort();
  }
  record_close(rf);
  if (out.n_lines) {
    struct results r;
    const char *p = path;
    if (results_load(&p, 1, &r, &err) != 0) {
      fprintf(stderr, "import's records refused: %s\n", err.msg);
      abort();
    }
    results_free(&r);
  }
  import_out_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1) {
    import_and_read(data + 1, size - 1);
  } else {
    const char *p = as_file(data + 1, size - 1);
    if (p) read_results(p);
  }
  return 0;
}
