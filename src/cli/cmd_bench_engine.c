/* cmd_bench_engine: `tokmeter bench` in-process (no --url): the flags handed
 * to the method in src/bench/inproc.h, its progress and warnings on stderr,
 * its result rendered (cmd_bench_engine_print.c), the exit code decided.
 * Exit codes: 0 ok; 1 probe / synthesis / engine / record failure; 2 bad
 * flag, a model file that cannot be read or run, lengths too large. */
#include <string.h>

#include "bench/inproc.h"
#include "bench/inproc_jobs.h"
#include "cli/bench_cli.h"
#include "cli/bench_engine_print.h"
#include "cli/cli.h"

static const char *const CMD = "bench";

_Static_assert(BENCH_MAX_LIST == EB_MAX_LIST, "bench's lists and the method's differ in size");

static void hook_progress(const char *msg, void *ctx) { cli_progress(msg, ctx); }
static void hook_progress_done(void *ctx) {
  (void)ctx;
  cli_progress_done();
}
static void hook_step(const char *msg, void *ctx) { cli_progress_step(msg, ctx); }
static void hook_warn(const char *msg, void *ctx) { cli_warn(ctx, "%s", msg); }

int bench_inprocess(struct bench_opts *o) {
  struct eb_opts eo = {.gguf = o->gguf, .n_threads = o->n_threads,
                       .n_prompt_tokens = o->n_prompt_tokens, .n_max_tokens = o->n_max_tokens,
                       .n_depth = o->n_depth, .reps = o->reps, .reprobe = o->reprobe,
                       .hugepages = o->hugepages, .cooldown_s = o->cooldown_s, .out = o->out,
                       .command = o->command ? o->command : "tokmeter bench"};
  memcpy(eo.threads, o->threads, sizeof eo.threads);
  memcpy(eo.prompt_tokens, o->prompt_tokens, sizeof eo.prompt_tokens);
  memcpy(eo.max_tokens, o->max_tokens, sizeof eo.max_tokens);
  memcpy(eo.depth, o->depth, sizeof eo.depth);
  struct eb_jobs jobs = {0};
  if (o->workloads) { /* cmd_bench checked: a .jsonl file, with -m */
    char err[600];
    uint32_t dflt = o->n_max_tokens ? o->max_tokens[0] : 128;
    if (eb_jobs_load(o->workloads, o->gguf, dflt, EB_JOB_MAX_PROMPT, &jobs, err, sizeof err) != 0)
      return cli_fail(CMD, TM_EXIT_USAGE, "%s", err);
    eo.jobs = jobs.v;
    eo.n_jobs = jobs.n;
    eo.workload_file = o->workloads;
    eo.vocab = jobs.vocab;
    eo.n_max_tokens = 0;
    if (jobs.any_expect)
      cli_note(CMD, "answers are not checked in process (the engine's tokens are not decoded "
                    "to text); the jobs' \"expect\" is for --url");
  }
  const struct eb_hooks hooks = {.progress = hook_progress, .progress_done = hook_progress_done,
                                 .step = hook_step,
                                 .warn = hook_warn, .ctx = (void *)CMD};
  struct eb_state st;
  eb_state_init(&st, &eo, &hooks);
  int rc = eb_run(&st);
  cli_progress_done();
  if (st.measured) {
    if (o->json) bench_engine_print_json(&st);
    else bench_engine_print(&st, o->verbose);
  }
  if (rc == EB_OK) {
  } else if (st.err_is_usage) {
    rc = cli_usage_error(CMD, "%s", st.err.msg);
  } else {
    rc = cli_fail(CMD, rc == EB_BAD_INPUT ? TM_EXIT_USAGE : TM_EXIT_RUNTIME, "%s", st.err.msg);
  }
  eb_state_free(&st);
  eb_jobs_free(&jobs);
  return rc;
}
