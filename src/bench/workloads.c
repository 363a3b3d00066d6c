/* workloads: see workloads.h. */
#include "bench/workloads.h"

#include <stdio.h>
#include <string.h>

#include "util/units.h"

#define CUSTOM_PROMPT_TOKENS 50
#define CUSTOM_MAX_TOKENS 128

static struct workload *next(struct workload *out, size_t *n, struct tm_err *err) {
  if (*n == RUNNER_MAX_WORKLOADS) {
    tm_errf(err, "at most %d workloads", RUNNER_MAX_WORKLOADS);
    return NULL;
  }
  struct workload *w = &out[(*n)++];
  memset(w, 0, sizeof *w);
  return w;
}

int workloads_from_request(const struct workload_request *r, struct workload *out, size_t *n,
                           struct tm_err *err) {
  *n = 0;
  if (r->file) {
    if (r->names || r->n_prompt_tokens || r->prompt_text || r->ttft_sweep)
      return tm_errf(err, "a workload file (-w FILE.jsonl) goes alone: not with other workloads, "
                          "-p, --prompt-file or --ttft-sweep");
    if (r->n_max_tokens > 1) return tm_errf(err, "with --url, -n takes one value");
    if (r->file->n_jobs > RUNNER_MAX_WORKLOADS)
      return tm_errf(err, "%s: %zu jobs; at most %d per invocation", r->file->path,
                     r->file->n_jobs, RUNNER_MAX_WORKLOADS);
    for (size_t i = 0; i < r->file->n_jobs; i++) {
      const struct wl_job *j = &r->file->jobs[i];
      struct workload *w = next(out, n, err);
      if (!w) return -1;
      snprintf(w->name, sizeof w->name, "%s", j->name);
      w->prompt_tokens = 0; /* the job's text, not sized */
      w->max_tokens = j->max_tokens          ? (uint32_t)j->max_tokens
                      : r->n_max_tokens      ? r->max_tokens[0]
                                             : WORKLOADS_JOB_MAX_TOKENS;
      w->prompt_text = j->messages[j->n_messages - 1].content;
      w->job = j;
    }
    return 0;
  }
  if (r->ttft_sweep && r->n_prompt_tokens > WORKLOADS_MAX_SWEEP)
    return tm_errf(err, "--ttft-sweep: at most %d lengths", WORKLOADS_MAX_SWEEP);
  const bool custom = r->n_prompt_tokens || r->n_max_tokens || r->prompt_text;
  if ((r->n_prompt_tokens > 1 && !r->ttft_sweep) || r->n_max_tokens > 1)
    return tm_errf(err, "with --url, -p and -n take one value each");
  const char *list = r->names ? r->names : custom ? "" : workload_names();
  if (r->names && tm_list_check(r->names, "--workload", err) != 0) return -1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    struct workload *w = next(out, n, err);
    if (!w) return -1;
    if (workload_by_name(t, w) != 0)
      return tm_errf(err, "--workload: unknown workload '%s' (known: %s)", t, workload_names());
    for (size_t i = 0; i + 1 < *n; i++)
      if (strcmp(out[i].name, t) == 0) return tm_errf(err, "--workload: '%s' given twice", t);
  }
  const uint32_t max_tokens = r->n_max_tokens ? r->max_tokens[0] : CUSTOM_MAX_TOKENS;
  /* --ttft-sweep: one custom workload per prompt length (the fit's points). */
  for (size_t i = 0; r->ttft_sweep && i + 1 < r->n_prompt_tokens; i++) {
    struct workload *w = next(out, n, err);
    if (!w) return -1;
    snprintf(w->name, sizeof w->name, "custom");
    w->prompt_tokens = r->prompt_tokens[i];
    w->max_tokens = max_tokens;
  }
  if (custom) {
    struct workload *w = next(out, n, err);
    if (!w) return -1;
    snprintf(w->name, sizeof w->name, "%s", r->prompt_text ? "prompt-file" : "custom");
    w->prompt_tokens = r->n_prompt_tokens ? r->prompt_tokens[r->n_prompt_tokens - 1]
                                          : CUSTOM_PROMPT_TOKENS;
    w->max_tokens = max_tokens;
    w->prompt_text = r->prompt_text;
  }
  if (*n == 0) return tm_errf(err, "--workload: no workload given");
  return 0;
}
