/* workloads: the server bench's list of workloads (runner.h struct
 * workload) from what the user asked: named ones (-w classify,extract),
 * a custom one (-p N and/or -n M, or a prompt file's text), and one per
 * prompt length for the TTFT sweep, or a workload file's jobs (one each).
 * Pure: errors are the user's (a usage error, one line). */
#ifndef TM_BENCH_WORKLOADS_H
#define TM_BENCH_WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/runner.h"
#include "util/err.h"

struct workload_request {
  const char *names;             /* -w LIST; NULL: all three unless a custom one */
  const uint32_t *prompt_tokens; /* -p (the sweep: its lengths) */
  size_t n_prompt_tokens;
  const uint32_t *max_tokens;    /* -n */
  size_t n_max_tokens;
  const char *prompt_text;       /* a prompt file's text; NULL: none */
  bool ttft_sweep;
  /* -w FILE.jsonl, read (workload_file_load): one workload per job, its
   * max_tokens or else -n or 256; not with names, -p, a prompt file or
   * the sweep. Borrowed: it must outlive the workloads. */
  const struct workload_file *file;
};
/* The TTFT sweep's most lengths. */
#define WORKLOADS_MAX_SWEEP 8
/* A workload file job's output budget when neither it nor -n gives one. */
#define WORKLOADS_JOB_MAX_TOKENS 256

/* Fills out[0..*n) (at most RUNNER_MAX_WORKLOADS); 0, or -1 with err. A
 * custom workload's prompt defaults to 50 tokens when only -n is given, its
 * output to 128 when only -p or a prompt file is. */
int workloads_from_request(const struct workload_request *r, struct workload *out, size_t *n,
                           struct tm_err *err);

#endif
