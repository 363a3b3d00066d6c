/* workload_file: a JSONL file of the user's own jobs (`-w FILE.jsonl`,
 * docs/workloads.md), read and checked whole before anything runs.
 *
 * One job per line (blank lines skipped):
 *   name        string of 1 to 31 bytes, required, unique in the file (a run record's
 *               `workload`)
 *   prompt      string: the user's message    } exactly one of the two
 *   messages    [{"role", "content"}, ...]    } (role system/user/assistant)
 *   system      string, optional: a system message put first
 *   images      [string, ...], optional: paths (relative to the file's
 *               directory, read and typed now: PNG, JPEG, GIF or WebP) or
 *               http(s):// and data: URLs (passed to the server as they are)
 *   max_tokens  integer >= 1, optional (default: the command's -n)
 *   expect      object, optional: expect.h's expectation
 *   repeat      integer >= 1, optional: the job's timed runs (default -r)
 * Anything else on a line, a wrong type or a missing field refuses the
 * file with "FILE:LINE: what is wrong". */
#ifndef TM_WORKLOAD_WORKLOAD_FILE_H
#define TM_WORKLOAD_WORKLOAD_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workload/expect.h"

struct wl_message {
  char *role;    /* "system", "user", "assistant" */
  char *content;
};

struct wl_image {
  char *source;  /* as written in the file */
  char *path;    /* the file read (NULL for a URL) */
  char *url;     /* the URL as given (NULL for a file) */
  char mime[16]; /* a file's type from its first bytes: image/png, ... ("" for URLs) */
  uint64_t bytes; /* a file's size */
  uint32_t width, height; /* from a PNG, JPEG or GIF header (0: not known) */
};

struct wl_job {
  char *name;
  int line;                  /* its line in the file */
  struct wl_message *messages; /* the chat, system first where given */
  size_t n_messages;
  bool from_prompt;          /* messages came from "prompt" (one user turn) */
  struct wl_image *images;   /* attached to the last user message */
  size_t n_images;
  int64_t max_tokens;        /* 0: the command's default */
  int repeat;                /* 0: the command's default */
  bool has_expect;
  struct expectation expect;
};

struct workload_file {
  char *path;
  struct wl_job *jobs;
  size_t n_jobs;
};

/* True when arg names a workload file (ends in ".jsonl") rather than a
 * built-in workload. */
bool workload_is_file(const char *arg);

/* Reads and checks path. 0, or -1 with "FILE:LINE: what is wrong" (or
 * "FILE: ..." for the file as a whole) in err; wf is empty then. */
int workload_file_load(const char *path, struct workload_file *wf, char *err, size_t errn);
void workload_file_free(struct workload_file *wf);

/* A file image's bytes as a data URL ("data:image/png;base64,..."),
 * malloc'd; a URL image's URL as it is. NULL with a reason in err when the
 * file cannot be read now. */
char *wl_image_url(const struct wl_image *im, char *err, size_t errn);

/* The text of a job's messages together (what a server without chat
 * templates gets as its prompt, and what the text-only calibration of an
 * image job sends). malloc'd. */
char *wl_job_text(const struct wl_job *j);

#endif
