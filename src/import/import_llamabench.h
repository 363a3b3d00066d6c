/* import_llamabench: llama.cpp's `llama-bench -o json` / `-o jsonl` output ->
 * tokmeter records in the in-process format (docs/records.md, "In-process
 * runs"; "Imported llama-bench runs" lists what differs), so runs made
 * elsewhere (a phone, another machine) join the same reports, comparisons and
 * TTFT fits as `tokmeter bench` runs.
 *
 * One input (one llama-bench invocation) becomes one tokmeter invocation:
 *   identity   backend "llama-bench", target "in-process", the machine as
 *              llama-bench describes it (cpu_info, gpu_info, backends: NOT this
 *              machine), runtime {build_commit, build_number}, settings;
 *   run        one per sample (samples_ns[i]): test "pp<L>" / "tg<N>", phase,
 *              threads, depth, tokens, ms, rate_tok_s = tokens / ms (the
 *              same figure as samples_ts, from the unrounded time), ceiling;
 *              llama-bench's own warm-up is not in its samples, so none is
 *              flagged; index 0..n-1;
 *   summary    one per test entry: figures over the samples, plus llama-bench's
 *              own avg_ts / stddev_ts as `reported`;
 *   end        runs, n_failed 0.
 * Combined tests (n_prompt > 0 and n_gen > 0, "pp512+tg128") blend prefill and
 * decode in one rate, which is neither of docs/design.md's quantities: they are
 * skipped and counted (n_skipped_combined).
 *
 * Ceilings (when a model cost is given: the GGUF the runs used): decode =
 * bandwidth / bytes read per token averaged over depths d..d+N-1; prefill =
 * compute / FLOPs per prompt token at depth d + L/2 (the int8 path for a
 * quantized model where the probe has one). Bandwidth and compute are the
 * given figures, or the probe's at the run's thread count. A probe is never
 * used for runs on another backend than the CPU (a GPU's bandwidth is not
 * this CPU's); a warning says so.
 *
 * Untrusted input: every field is type-checked; errors name the entry
 * (JSON: array index; JSONL: line) and the field, or the byte offset of a
 * JSON syntax error. Library code: nothing printed. */
#ifndef TM_IMPORT_LLAMABENCH_H
#define TM_IMPORT_LLAMABENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "machine/probe.h"
#include "model/analysis.h"
#include "util/err.h"

#define IMPORT_MAX_WARNINGS 8

struct import_opts {
  const char *source;          /* the input's path (recorded in settings), may be NULL */
  const char *command;         /* the command line for the identity; NULL -> null */
  /* Ceilings; cost NULL = none. */
  const struct model_cost *cost;
  const char *model_file;      /* the GGUF the cost is from (recorded) */
  double bandwidth_bytes_s;    /* given for every thread count; NAN = probe's */
  double compute_ops_s;        /* given; NAN = probe's */
  const struct machine_probe *probe; /* NULL when none */
  /* The runs were made on this machine (--this-machine): the probe is theirs
   * whatever their cpu_info says. Otherwise a run whose cpu_info names
   * another CPU than the probe's is not held against the probe. */
  bool this_machine;
};

struct import_out {
  void **lines;                /* json_t *: identity, runs, summaries, end (owned) */
  size_t n_lines;
  char format[8];              /* "json" or "jsonl" */
  size_t n_tests;              /* test entries imported */
  size_t n_runs;               /* samples = run lines */
  size_t n_skipped_combined;   /* pp+tg entries skipped */
  size_t n_warnings;
  char warnings[IMPORT_MAX_WARNINGS][256];
  /* where the ceilings' figures came from: some decode (prefill) ceiling
   * rests on the given bandwidth (compute) / on the probe's */
  bool decode_given, decode_probe, prefill_given, prefill_probe;
};

/* Parses text (len bytes; need not be NUL-terminated) and builds the records.
 * 0 with out filled (n_tests may be 0: no entries, or only skipped ones; the
 * caller says "no records in FILE"); -1 with err on bad input or no memory
 * (out is left empty). */
int import_llamabench(const char *text, size_t len, const struct import_opts *o,
                      struct import_out *out, struct tm_err *err);
void import_out_free(struct import_out *out);

/* "qwen3 0.6B Q4_K - Medium" -> arch "qwen3", type "Q4_K_M" (llama.cpp's
 * file-type description turned back into its short name); either "" when the
 * text does not say. */
void import_parse_model_type(const char *model_type, char *arch, size_t arch_n, char *type,
                             size_t type_n);

#endif
