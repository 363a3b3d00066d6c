/* cmd_import: `tokmeter import FILE...`, llama.cpp's llama-bench output
 * (-o json or -o jsonl) -> tokmeter records (src/import/import_llamabench.h)
 * appended to a results file, so runs made elsewhere join `report`,
 * `compare` and the TTFT fit. With -m FILE.gguf the runs get ceilings: the
 * bandwidth / compute given, else this machine's cached probe (never a fresh
 * probe: importing must stay instant; `tokmeter probe` makes one).
 *
 * The results file is checked first (record_check_writable: a GGUF or a
 * text file given as -o is refused), then every input is parsed before
 * anything is written: a corrupt file (exit 2) leaves the results file
 * untouched. Exit codes: 0 ok; 1 the results file cannot be written; 2 bad
 * flag, a results file that is not one, unreadable / corrupt / empty input,
 * model file that cannot be analysed. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_llamabench.h"
#include "import/import_probe.h"
#include "cli/cli.h"
#include "gguf/ggml_types.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "record/record.h"
#include "util/input.h"
#include "util/units.h"

static const char *const CMD = "import";
#define MAX_INPUT_BYTES (256u << 20) /* llama-bench output is kilobytes */

/* A reference; what becomes what, the ceilings and the errors are in
 * docs/import.md. */
static void usage(void) {
  printf("Usage: tokmeter import [options] FILE...\n"
         "Appends llama.cpp's llama-bench output (-o json or -o jsonl; '-' = stdin) to\n"
         "a results file as tokmeter records, one invocation per FILE, so 'report' and\n"
         "'compare' treat the runs like 'tokmeter bench' ones.\n"
         "\n"
         "Options:\n"
         "  -o, --out FILE        results file to append to; '-' = stdout, the table\n"
         "                        then on stderr (default: tokmeter-results.jsonl)\n"
         "  -m, --gguf FILE       the model file the runs used: adds ceilings\n"
         "                        (default: none, ceilings blank)\n"
         "      --bandwidth RATE  read bandwidth of the machine the runs were made on,\n"
         "                        e.g. 28.6GB/s (default: this machine's cached probe)\n"
         "      --compute RATE    compute rate for the prefill ceilings, e.g. 1.2TOPS\n"
         "                        (default: this machine's cached probe)\n"
         "      --no-probe        never use the cached probe (default: use it for CPU\n"
         "                        runs of this machine's CPU when a figure is not given)\n"
         "      --this-machine    the runs were made here: use the probe whatever\n"
         "                        their cpu_info says\n"
         "  -h, --help            show this help and exit\n"
         "Exit codes: 0 ok, 1 the results file cannot be written, 2 bad usage or input.\n"
         "Details: docs/import.md\n");
}

/* The summaries of one import as a table (quantity named per row). */
static void print_table(FILE *o, const char *path, const struct import_out *im,
                        const char *dest) {
  fprintf(o, "%s: llama-bench %s, %zu test%s, %zu run%s -> %s\n", path, im->format, im->n_tests,
          im->n_tests == 1 ? "" : "s", im->n_runs, im->n_runs == 1 ? "" : "s", dest);
  fprintf(o, "  %-28s %-8s %7s %6s %-3s %13s %14s %7s\n", "model", "test", "threads", "depth",
          "", "median tok/s", "ceiling tok/s", "% ceil");
  for (size_t i = 0; i < im->n_lines; i++) {
    json_t *s = im->lines[i];
    if (strcmp(json_string_value(json_object_get(s, "record")), "summary")) continue;
    json_t *m = json_object_get(s, "model");
    const char *phase = json_string_value(json_object_get(s, "phase"));
    double med = json_number_value(json_object_get(json_object_get(s, "rate_tok_s"), "median"));
    json_t *c = json_object_get(s, "ceiling");
    double ceil = c && json_is_object(c) ? json_number_value(json_object_get(c, "ceiling_tok_s"))
                                         : NAN;
    json_t *pc = json_object_get(s, "percent_of_ceiling");
    char a[32], b[32] = "", p[16] = "";
    tm_fmt_rate(med, a, sizeof a);
    if (isfinite(ceil) && ceil > 0) tm_fmt_rate(ceil, b, sizeof b);
    if (pc && json_is_number(pc)) snprintf(p, sizeof p, "%.0f%%", json_number_value(pc));
    const char *name = json_string_value(json_object_get(m, "name"));
    fprintf(o, "  %-28.28s %-8s %7lld %6lld %-3s %13s %14s %7s\n", name ? name : "-",
            json_string_value(json_object_get(s, "test")),
            (long long)json_integer_value(json_object_get(s, "threads")),
            (long long)json_integer_value(json_object_get(s, "depth")),
            phase && !strcmp(phase, "prefill") ? "PF" : "DC", a, b, p);
  }
  fprintf(o, "  PF = prefill rate (prompt tok/s), DC = decode rate (generated tok/s, one "
             "stream); ceiling blank = not known\n");
}

/* Where the ceilings' figures came from, each named: a given figure and the
 * probe can both be in one import (--bandwidth without --compute). */
static void print_sources(FILE *o, const struct import_out *ims, size_t n, double bw,
                          double compute, const struct machine_probe *probe) {
  bool dg = false, dp = false, pg = false, pp = false;
  for (size_t i = 0; i < n; i++) {
    dg |= ims[i].decode_given;
    dp |= ims[i].decode_probe;
    pg |= ims[i].prefill_given;
    pp |= ims[i].prefill_probe;
  }
  if (!dg && !dp && !pg && !pp) return;
  char b[32];
  const char *sep = "";
  fprintf(o, "ceilings: ");
  if (dg) fprintf(o, "decode from --bandwidth %s", tm_fmt_bandwidth(bw, b, sizeof b));
  if (dp) fprintf(o, "decode from the cached probe's read bandwidth at each run's thread count");
  if (dg || dp) sep = "; ";
  if (pg) fprintf(o, "%sprefill from --compute %s", sep, tm_fmt_ops(compute, "OPS", b, sizeof b));
  if (pp) fprintf(o, "%sprefill from the cached probe's compute rate at each run's thread count",
                  sep);
  if (dp || pp)
    fprintf(o, " (the probe of this machine, %s: right only if the runs were made here)",
            probe->info.cpu_model);
  fprintf(o, "\n");
}

int cmd_import(int argc, char **argv) {
  static const struct option opts[] = {
      {"out", required_argument, NULL, 'o'},      {"gguf", required_argument, NULL, 'm'},
      {"bandwidth", required_argument, NULL, 'B'}, {"compute", required_argument, NULL, 'C'},
      {"no-probe", no_argument, NULL, 'P'},        {"help", no_argument, NULL, 'h'},
      {"this-machine", no_argument, NULL, 'T'},
      {NULL, 0, NULL, 0}};
  const char *out_path = RECORD_DEFAULT_FILE, *gguf = NULL;
  double bw = NAN, compute = NAN;
  bool no_probe = false, this_machine = false;
  struct tm_err err = {{0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:m:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out_path = optarg; break;
    case 'm': gguf = optarg; break;
    case 'B':
      if (tm_parse_bandwidth(optarg, &bw, &err) != 0 || !(bw > 0))
        return cli_usage_error(CMD, "--bandwidth: %s", err.msg[0] ? err.msg : "must be > 0");
      break;
    case 'C':
      if (tm_parse_ops_rate(optarg, &compute, &err) != 0 || !(compute > 0))
        return cli_usage_error(CMD, "--compute: %s", err.msg[0] ? err.msg : "must be > 0");
      break;
    case 'P': no_probe = true; break;
    case 'T': this_machine = true; break;
    case 'h': usage(); return TM_EXIT_OK;
    case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
    default: return cli_bad_option(CMD, argv[optind - 1], opts);
    }
  }
  size_t n_in = (size_t)(argc - optind);
  if (n_in == 0) return cli_usage_error(CMD, "no input file (llama-bench -o json / -o jsonl output)");
  /* The results file first: a GGUF or a text file given as -o by mistake is
   * refused before anything is read or probed (one line, exit 2). */
  if (strcmp(out_path, "-") && record_check_writable(out_path, &err) != 0)
    return cli_fail(CMD, TM_EXIT_USAGE, "-o: %s", err.msg);
  if (!gguf && (isfinite(bw) || isfinite(compute)))
    cli_warn(CMD, "--bandwidth / --compute without -m FILE.gguf: no ceilings (bytes and FLOPs "
                  "per token come from the model file)");

  static struct model_cost cost;
  static struct machine_probe probe;
  struct import_opts io = {.command = NULL, .bandwidth_bytes_s = bw, .compute_ops_s = compute,
                           .this_machine = this_machine};
  char command[2048] = "tokmeter";
  for (int i = 0; i < argc; i++) {
    size_t len = strlen(command);
    snprintf(command + len, sizeof command - len, " %s", argv[i]);
  }
  io.command = command;
  if (gguf) {
    if (model_cost_from_file(gguf, GGML_TYPE_F16, &cost, NULL, &err) != 0)
      return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
    io.cost = &cost;
    io.model_file = gguf;
    if (!no_probe && (!isfinite(bw) || !isfinite(compute))) {
      struct tm_err why;
      if (import_cached_probe(&probe, &why) == 0) io.probe = &probe;
      else cli_warn(CMD, "%s", why.msg);
    }
  }

  /* Parse everything first: a bad file must not leave half an import. */
  struct import_out *ims = calloc(n_in, sizeof *ims);
  if (!ims) return cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
  int rc = TM_EXIT_OK;
  size_t done = 0;
  for (; done < n_in && rc == TM_EXIT_OK; done++) {
    const char *path = argv[optind + (int)done];
    size_t len = 0;
    char *text = tm_read_input(path, MAX_INPUT_BYTES, "llama-bench output", &len, &err);
    if (!text) {
      rc = cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
      break;
    }
    io.source = path;
    if (import_llamabench(text, len, &io, &ims[done], &err) != 0) {
      rc = cli_fail(CMD, TM_EXIT_USAGE, "%s: %s", path, err.msg);
    } else if (ims[done].n_tests == 0) {
      rc = ims[done].n_skipped_combined
               ? cli_fail(CMD, TM_EXIT_USAGE, "no pp or tg tests in %s (only combined pp+tg)", path)
               : cli_fail(CMD, TM_EXIT_USAGE, "no records in %s", path);
    }
    free(text);
  }
  if (rc == TM_EXIT_OK) {
    bool to_stdout = !strcmp(out_path, "-");
    struct record_file *rf = to_stdout ? NULL : record_open(out_path, &err);
    if (!to_stdout && !rf) rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
    for (size_t i = 0; i < n_in && rc == TM_EXIT_OK; i++) {
      for (size_t k = 0; k < ims[i].n_lines && rc == TM_EXIT_OK; k++) {
        if (to_stdout) {
          char *line = record_dump(ims[i].lines[k]);
          if (!line) rc = cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
          else printf("%s\n", line);
          free(line);
        } else if (record_write(rf, json_incref(ims[i].lines[k]), &err) != 0) {
          rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s: %s", out_path, err.msg);
        }
      }
      for (size_t w = 0; w < ims[i].n_warnings; w++)
        cli_warn(CMD, "%s: %s", argv[optind + (int)i], ims[i].warnings[w]);
      if (rc == TM_EXIT_OK)
        print_table(to_stdout ? stderr : stdout, argv[optind + (int)i], &ims[i],
                    to_stdout ? "stdout" : out_path);
    }
    if (rc == TM_EXIT_OK) print_sources(to_stdout ? stderr : stdout, ims, n_in, bw, compute, &probe);
    record_close(rf);
  }
  for (size_t i = 0; i < n_in; i++) import_out_free(&ims[i]);
  free(ims);
  return rc;
}
