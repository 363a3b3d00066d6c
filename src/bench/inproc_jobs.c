/* inproc_jobs: contracts in inproc_jobs.h. */
#include "bench/inproc_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "workload/workload_file.h"

void eb_jobs_free(struct eb_jobs *j) {
  for (size_t i = 0; i < j->n; i++) {
    if (j->names) free(j->names[i]);
    if (j->ids) free(j->ids[i]);
  }
  free(j->names);
  free(j->ids);
  free(j->v);
  memset(j, 0, sizeof *j);
}

int eb_jobs_load(const char *workload_path, const char *gguf, uint32_t default_max_tokens,
                 uint32_t max_prompt, struct eb_jobs *out, char *err, size_t errn) {
  memset(out, 0, sizeof *out);
  struct workload_file wf = {0};
  if (workload_file_load(workload_path, &wf, err, errn) != 0) return -1;
  struct tm_err terr = {{0}};
  struct tokenizer *t = tokenizer_open(gguf, &terr);
  if (!t) {
    snprintf(err, errn, "a workload file in process needs the model's vocabulary: %s", terr.msg);
    workload_file_free(&wf);
    return -1;
  }
  snprintf(out->vocab, sizeof out->vocab, "%s", tokenizer_describe(t));
  int rc = -1;
  out->v = calloc(wf.n_jobs ? wf.n_jobs : 1, sizeof *out->v);
  out->names = calloc(wf.n_jobs ? wf.n_jobs : 1, sizeof *out->names);
  out->ids = calloc(wf.n_jobs ? wf.n_jobs : 1, sizeof *out->ids);
  if (!out->v || !out->names || !out->ids) {
    snprintf(err, errn, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < wf.n_jobs; i++) {
    const struct wl_job *jb = &wf.jobs[i];
    if (jb->n_images) {
      snprintf(err, errn, "%s:%d: job '%s' sends images: in process the engine reads text "
               "only (measure an image job over a server: --url)", wf.path, jb->line, jb->name);
      goto done;
    }
    out->n = i + 1; /* what eb_jobs_free frees (the arrays are zeroed) */
    char *text = wl_job_text(jb);
    out->names[i] = strdup(jb->name);
    if (!text || !out->names[i]) {
      free(text);
      snprintf(err, errn, "out of memory");
      goto done;
    }
    size_t n = 0;
    int e = tokenizer_encode(t, text, strlen(text), true, true, &out->ids[i], &n, &terr);
    free(text);
    if (e != 0) {
      snprintf(err, errn, "%s:%d: job '%s': %s", wf.path, jb->line, jb->name, terr.msg);
      goto done;
    }
    if (n == 0 || n > max_prompt) {
      snprintf(err, errn, "%s:%d: job '%s': its prompt is %zu tokens (%s); in process 1..%u",
               wf.path, jb->line, jb->name, n, out->vocab, max_prompt);
      goto done;
    }
    out->v[i] = (struct eb_job){.name = out->names[i], .ids = out->ids[i],
                                .n_ids = (uint32_t)n,
                                .max_tokens = jb->max_tokens > 0 ? (uint32_t)jb->max_tokens
                                                                 : default_max_tokens,
                                .reps = jb->repeat > 0 ? (uint32_t)jb->repeat : 0};
    out->any_expect |= jb->has_expect;
  }
  out->n = wf.n_jobs;
  rc = 0;
done:
  if (rc != 0) eb_jobs_free(out);
  tokenizer_free(t);
  workload_file_free(&wf);
  return rc;
}
