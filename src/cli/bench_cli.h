/* bench_cli: `tokmeter bench`'s options, shared by its paths: cmd_bench.c
 * (parsing, --help, dispatch), cmd_bench_engine.c (the in-process path: the
 * embedded default or -m FILE, on tokmeter's own engine) and
 * cmd_bench_server.c (--url: a running server). */
#ifndef TM_BENCH_CLI_H
#define TM_BENCH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_LIST 16 /* = EB_MAX_LIST (bench/inproc.h) */

struct bench_opts {
  /* in-process */
  const char *gguf;            /* -m/--gguf: model file (with --url: the file the
                                  server serves, for ceilings) */
  uint32_t threads[BENCH_MAX_LIST];
  size_t n_threads;
  uint32_t prompt_tokens[BENCH_MAX_LIST];
  size_t n_prompt_tokens;      /* 0 = default */
  uint32_t max_tokens[BENCH_MAX_LIST];
  size_t n_max_tokens;         /* 0 = default */
  uint32_t depth[BENCH_MAX_LIST]; /* -d: context depth (in-process only) */
  size_t n_depth;              /* 0 = default (0) */
  bool reprobe, json;
  bool verbose;                /* -v: every reading and finding in full */
  bool repair;                 /* --repair: drop a cut last line of --out first */
  bool hugepages;              /* --hugepages: weights copied into huge pages */
  double cooldown_s;           /* --cooldown: pause before each configuration
                                  (in-process) or workload (--url) after the
                                  first; 0 = none */
  bool ttft_sweep;             /* --ttft-sweep: pp (in-process) or custom workloads
                                  (--url) at several prompt lengths, then the TTFT
                                  fit (cmd_bench_ttft.c) */

  /* server */
  const char *url;
  int api;                     /* enum api_family */
  int endpoint;                /* enum api_endpoint */
  const char *model;
  const char *api_key_env;     /* NULL = OPENAI_API_KEY when set */
  const char *workloads;       /* -w list; NULL = classify,extract,generate */
  const char *prompt_file;
  uint32_t reps;               /* 0 = default (server 3; in-process 5, the
                                  embedded default pair 3) */
  bool allow_cache, cold, list_models;
  const char *out;             /* results file (both paths); NULL =
                                  tokmeter-results.jsonl */
  double idle_timeout_s, timeout_s;
  double max_wait_s;           /* --max-wait: the invocation's budget; 0 = none */
  const char *command;         /* the command line, for the run identity */
};

int bench_server(const struct bench_opts *o);
/* The in-process path (no --url). o->n_threads may be 0 (= 1..online CPUs). */
int bench_inprocess(struct bench_opts *o);
/* --ttft-sweep: fills the sweep's defaults into o (prompt lengths 32..1024
 * doubling; in-process no tg runs, --url 16 generated tokens); 0 or exit 2. */
int bench_ttft_prepare(struct bench_opts *o);
/* After the sweep: reads the results file back, fits TTFT = fixed + L / rate
 * over the runs of the invocation just written (the file's last) and prints
 * the fit per configuration (stdout; stderr with --json). 0, or 1 when the
 * file cannot be read back. */
int bench_ttft_report(const struct bench_opts *o);

#endif
