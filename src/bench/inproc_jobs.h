/* inproc_jobs: a workload file's jobs made ready for the in-process bench
 * (inproc.h struct eb_job): each job's text (its messages together, as a
 * completion endpoint gets them: workload_file.h wl_job_text) encoded by the
 * model file's own vocabulary (tokenizer.h) the way a llama.cpp server
 * counts a prompt: its beginning-of-sequence rule applied and special tokens
 * typed in the text read as tokens. So pp<N> is the job's prompt at
 * llama.cpp's token count, and tg<M> decodes after it.
 *
 * Refused with one line (EB_BAD_INPUT): a model without a vocabulary, a job
 * with images (the engine reads text only), a prompt beyond max_prompt
 * tokens. Answers are not checked in process (a random-weight model writes
 * nonsense): the caller says so when a job has "expect". */
#ifndef TM_BENCH_INPROC_JOBS_H
#define TM_BENCH_INPROC_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/inproc.h"

/* The longest prompt a job may have in process (tokens). */
#define EB_JOB_MAX_PROMPT 32768

struct eb_jobs {
  struct eb_job *v;
  size_t n;
  char **names;     /* owned copies */
  int32_t **ids;    /* owned */
  bool any_expect;  /* some job has "expect" (not checked here) */
  char vocab[64];   /* tokenizer_describe */
};

/* 0, or -1 with err (one line, "FILE:LINE: ..." where a job is at fault).
 * default_max_tokens: for jobs without max_tokens (a job's repeat, when
 * given, is its eb_job.reps; 0 leaves the invocation's); max_prompt: the
 * most tokens a job's prompt may have. */
int eb_jobs_load(const char *workload_path, const char *gguf, uint32_t default_max_tokens,
                 uint32_t max_prompt, struct eb_jobs *out, char *err, size_t errn);
void eb_jobs_free(struct eb_jobs *j);

#endif
